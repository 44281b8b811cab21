"""The engine's read API: the state of clusters, links and jobs now, and the run's columns.

Everything outside the engine that reports on a run (the agents' properties, the
recorder behind the time series, the dashboard) reads it through these functions, so
the rules that turn engine arrays into observable quantities live once: which clusters
count as degraded, what a cluster's queue is, how far a job has come. Each function is
vectorised over the entities; none loops over tasks in Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from geosim.engine import READY, concat_ranges

if TYPE_CHECKING:
    from geosim.engine import Engine
    from geosim.world import World

#: Cluster states: unreachable (an outage), degraded (fewer than half of its slots in
#: their available phase) and available.
CLUSTER_STATES = ("available", "degraded", "unreachable")


def cluster_state_codes(reachable: np.ndarray, available_slots: np.ndarray,
                        slots: np.ndarray) -> np.ndarray:
    """Index into :data:`CLUSTER_STATES` of each cluster (the one rule for all readers).

    Args:
        reachable: Whether each cluster is reachable.
        available_slots: Slots of each cluster in their available phase.
        slots: Slots of each cluster.
    """
    return np.where(~np.asarray(reachable, dtype=bool), 2,
                    np.where(2 * np.asarray(available_slots) < np.asarray(slots), 1, 0))


def reachable(engine: Engine) -> np.ndarray:
    """Whether each cluster is reachable now (a read-only view)."""
    view = engine.reachable.view()
    view.flags.writeable = False
    return view


def cluster_states(engine: Engine) -> np.ndarray:
    """Index into :data:`CLUSTER_STATES` of each cluster now."""
    return cluster_state_codes(engine.reachable, available_slots(engine.world),
                               engine.world.slots)


def available_slots(world: World) -> np.ndarray:
    """Slots of each cluster in their available phase now (all, without availability)."""
    if world.availability is None:
        return world.slots.copy()
    return np.add.reduceat(world.availability.on.astype(np.int64), world.slot_ptr[:-1])


def busy_slots(engine: Engine) -> np.ndarray:
    """Slot shares in use per cluster (busy slots, counting fractional shares)."""
    return np.add.reduceat(engine.slot_used, engine.world.slot_ptr[:-1])


def total_busy_slots(engine: Engine) -> float:
    """Slot shares in use over all clusters (the sum of :func:`busy_slots`).

    Summed over the live copies' shares, so that its cost follows the copies running, not
    the slots of the world (it is read at every step); it equals the sum over slots up
    to rounding.
    """
    return float(np.add.reduce(engine.copies.cols["share"][engine.live]))


def running_copies(engine: Engine) -> np.ndarray:
    """Live copies per cluster."""
    return np.add.reduceat(engine.slot_copies, engine.world.slot_ptr[:-1])


def reachable_slots(engine: Engine) -> int:
    """Slots of reachable clusters now, in any availability phase.

    The pool schedulers divide (``SchedulerView.total_slots``): a slot in an
    unavailable phase still runs copies, only slower. :func:`usable_slots` counts only
    the slots in their available phase.
    """
    return int(engine.world.slots[engine.reachable].sum())


def usable_slots(engine: Engine) -> int:
    """Slots that are reachable and in their available phase now.

    Equal to :func:`reachable_slots` in a world without availability periods.
    """
    world = engine.world
    up = engine.reachable[world.slot_cluster]
    if world.availability is not None:
        up = up & world.availability.on
    return int(np.count_nonzero(up))


def queues(engine: Engine) -> np.ndarray:
    """Ready tasks without a live copy per cluster holding most of their input.

    Tasks whose input lies nowhere in particular (no home) are not counted.
    """
    ready = np.flatnonzero(engine.task_state == READY)
    homes = engine.task_home[ready]
    return np.bincount(homes[homes >= 0], minlength=engine.world.n_clusters)


def gate_rates(engine: Engine) -> tuple[np.ndarray, np.ndarray]:
    """Egress and ingress traffic of each cluster's gate over the last slot (MB/s)."""
    return engine.gate_out.copy(), engine.gate_in.copy()


def gate_traffic_mb(engine: Engine) -> tuple[np.ndarray, np.ndarray]:
    """MB out and in through each cluster's gate since the last sample (fresh arrays)."""
    return engine.egress_mb.copy(), engine.ingress_mb.copy()


def link_traffic_mb(engine: Engine) -> tuple[np.ndarray, np.ndarray]:
    """MB sent over each WAN link since the last sample, ``(u→v, v→u)`` (fresh arrays)."""
    return engine.link_mb[0::2].copy(), engine.link_mb[1::2].copy()


def link_bandwidth(world: World) -> np.ndarray:
    """Bandwidth of each WAN link now, in each direction (MB/s)."""
    return world.link_bw.level.copy() if world.link_bw is not None else np.empty(0)


def job_progress(engine: Engine, jobs: np.ndarray) -> np.ndarray:
    """Fraction of each job's work done: finished tasks, checkpoints and live progress."""
    jobs = np.asarray(jobs, dtype=np.int64)
    lo, hi = engine.wl.task_ptr[jobs], engine.wl.task_ptr[jobs + 1]
    total = np.bincount(np.repeat(np.arange(jobs.size), hi - lo),
                        weights=engine.task_work[concat_ranges(lo, hi)], minlength=jobs.size)
    left = engine.remaining_work(jobs)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, 1.0 - left / total, (engine.job_left[jobs] == 0) * 1.0)


def job_flowtimes(engine: Engine, jobs: np.ndarray) -> np.ndarray:
    """Flowtime (s) of each job: completion minus arrival; NaN while unfinished."""
    jobs = np.asarray(jobs, dtype=np.int64)
    return engine.job_done[jobs] - engine.wl.arrival[jobs]


def finished_flowtimes(engine: Engine) -> tuple[np.ndarray, np.ndarray]:
    """Completion times and flowtimes (s) of the jobs finished so far, by job index.

    Jobs arrive in index order, so only the jobs that arrived are read.
    """
    arrived = np.arange(int(engine.next_job))
    completion = engine.job_done[arrived]
    done = arrived[~np.isnan(completion)]
    return engine.job_done[done], job_flowtimes(engine, done)


def tasks_left(engine: Engine, jobs: np.ndarray) -> np.ndarray:
    """Tasks of each job not yet completed (a fresh array)."""
    return engine.job_left[np.asarray(jobs, dtype=np.int64)]


def tasks_done(engine: Engine, jobs: np.ndarray) -> np.ndarray:
    """Finished tasks of each job."""
    jobs = np.asarray(jobs, dtype=np.int64)
    ptr = engine.wl.task_ptr
    return (ptr[jobs + 1] - ptr[jobs]) - tasks_left(engine, jobs)


def job_copies(engine: Engine, jobs: np.ndarray) -> np.ndarray:
    """Live copies of each job's tasks (a fresh array)."""
    return engine.job_live[np.asarray(jobs, dtype=np.int64)]


def task_states(engine: Engine, tasks: np.ndarray) -> np.ndarray:
    """State of tasks: 0 waiting, 1 ready, 2 running, 3 done (a fresh array)."""
    return engine.task_state[np.asarray(tasks, dtype=np.int64)].copy()


def job_columns(engine: Engine) -> dict[str, np.ndarray]:
    """Per job: completion time (NaN: unfinished) and checkpoints taken."""
    return {"completion": engine.job_done, "checkpoints": engine.job_checkpoints}


def task_columns(engine: Engine) -> dict[str, np.ndarray]:
    """Per task: job, ready, start and completion times, winning cluster, copies, checkpoints."""
    e = engine
    return {"job": e.task_job, "ready": e.task_ready, "start": e.task_start,
            "completion": e.task_done, "cluster": e.task_cluster, "copies": e.task_copies,
            "checkpoints": e.task_checkpoints}


def copy_columns(engine: Engine) -> dict[str, np.ndarray]:
    """Per copy launched so far: the copies table's columns (views, not copies).

    ``task``, ``cluster``, ``slot``, ``start``, ``end``, ``outcome`` (codes of
    :data:`geosim.engine.OUTCOMES`), ``share``, ``executed`` and ``wasted`` (MI) and
    ``share_time`` (slot-seconds).
    """
    n, cols = engine.copies.n, engine.copies.cols
    return {k: cols[k][:n] for k in ("task", "cluster", "slot", "start", "end", "outcome",
                                     "share", "executed", "wasted", "share_time")}


def totals(engine: Engine) -> dict[str, float]:
    """Run-wide figures now: simulated time, jobs arrived, WAN and data-move traffic."""
    e = engine
    return {"time": float(e.time), "jobs_arrived": int(e.next_job), "wan_mb": float(e.wan_mb),
            "moved_mb": float(e.moved_mb), "moves_abandoned": int(e.moves_abandoned)}


def work_balance(engine: Engine) -> dict[str, float]:
    """Work (MI) executed by every copy, demanded by finished tasks, and wasted."""
    executed, demanded, wasted = engine.work_balance()
    return {"executed_work": executed, "demanded_work": demanded, "wasted_work": wasted}


__all__ = ["CLUSTER_STATES", "available_slots", "busy_slots", "cluster_state_codes",
           "cluster_states", "copy_columns", "finished_flowtimes", "gate_rates",
           "gate_traffic_mb", "job_columns", "job_copies", "job_flowtimes", "job_progress",
           "link_bandwidth", "link_traffic_mb", "queues", "reachable", "reachable_slots",
           "running_copies", "task_columns", "task_states", "tasks_done", "tasks_left",
           "total_busy_slots", "totals", "usable_slots", "work_balance"]
