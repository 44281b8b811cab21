"""What a scheduler sees (:class:`SchedulerView`) and what it may do (:class:`Actions`).

The view is read-only and holds no hidden truth (``docs/model.md``, "What schedulers
know"): static facts (topology, slots, gates, task work, data sizes and input
locations, DAGs), the current state (reachability, free slots, running copies and,
for policies that monitor progress, their progress), and the statistics the
:class:`~geosim.monitor.Monitor` learned from completed copies. Future speeds, the
outage schedule and true bandwidths are never exposed.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from geosim.engine import (
    DONE,
    READY,
    RUNNING,
    WAITING,
    Engine,
    concat_ranges,
    first_of_runs,
    in_sorted,
    rank_in_runs,
)
from geosim.jit import njit
from geosim.monitor import Monitor, MonitorView
from geosim.routes import HopCounts, RouteView
from geosim.state import reachable_slots

__all__ = ["DONE", "READY", "RUNNING", "WAITING", "Actions", "Boundary", "SchedulerView",
           "concat_ranges", "first_of_runs", "in_sorted", "rank_in_runs"]


def _ro(arr: np.ndarray) -> np.ndarray:
    view = arr.view()
    view.flags.writeable = False
    return view


class Boundary:
    """What happened since the scheduler last decided; written by the model, read through the view.

    Under slot timing the scheduler decides at every boundary, so the counts are those of
    the last slot; under event timing, of every step since its last decision.

    Attributes:
        arrivals: Jobs that arrived since the last decision.
        completions: Tasks completed since the last decision.
        failures: Copies lost to outages since the last decision.
        alive_jobs: Ids of the alive jobs, in arrival order.
        announced: Jobs whose raw input came into existence at this boundary.
    """

    __slots__ = ("alive_jobs", "announced", "arrivals", "completions", "failures")

    def __init__(self) -> None:
        self.arrivals = self.completions = self.failures = 0
        self.alive_jobs = np.empty(0, dtype=np.int64)
        self.announced = np.empty(0, dtype=np.int64)


class SchedulerView:
    """Read-only window on the simulation for scheduling policies.

    Nothing a scheduler reads through the view can change the run: its attributes cannot
    be assigned, the arrays it hands out are read-only views or fresh copies, and
    :attr:`monitor` offers the observed statistics without their writers. The model
    writes what happened at a boundary into a :class:`Boundary` that the view only
    reads. Only :class:`Actions` changes the run.

    Args:
        engine: The run's engine.
        monitor: The run's observed statistics.
        boundary: What happened at the current boundary (kept up to date by the model).
    """

    def __setattr__(self, name: str, value: object) -> None:
        if getattr(self, "_sealed", False):
            raise AttributeError(f"the scheduler view is read-only (cannot set {name!r})")
        object.__setattr__(self, name, value)

    def __init__(self, engine: Engine, monitor: Monitor, boundary: Boundary | None = None):
        self._e = engine
        self._now = Boundary() if boundary is None else boundary
        #: The observed statistics (read-only: no ``record_*`` writers).
        self.monitor = MonitorView(monitor)
        world, wl = engine.world, engine.wl
        self.n_clusters = world.n_clusters
        self.graph: nx.Graph = nx.freeze(world.graph.copy())
        self.cluster_slots = _ro(world.slots)
        self.cluster_tier = _ro(world.tier)
        self.gate = _ro(world.gate)
        #: Hop counts of the routes, indexed like an ``n × n`` matrix: ``hops[s, d]`` is
        #: the length in links of the route ``s → d`` (scalars or arrays; computed on
        #: demand, see :class:`~geosim.routes.HopCounts`).
        self.hops = HopCounts(world.routes)
        #: The routes: hop counts, hop rows of sources and paths.
        self.routes = RouteView(world.routes)
        self.slot_ptr = _ro(world.slot_ptr)
        self.slot_cluster = _ro(world.slot_cluster)
        self.job_arrival = _ro(wl.arrival)
        self.job_weight = _ro(wl.weight)
        self.job_task_ptr = _ro(wl.task_ptr)
        self.task_work = _ro(wl.task_work)
        self.task_data = _ro(wl.task_data)
        self.task_type = _ro(wl.task_type)
        #: Stage of each task in its job (a stage waits for the previous one to finish).
        self.task_stage = _ro(wl.task_stage)
        #: Coefficient of variation of each copy's work around ``task_work`` (its mean).
        self.task_cv = _ro(wl.task_cv)
        #: Family of the copies' work around their task's mean (:mod:`geosim.variability`).
        self.copy_variability = engine.variability
        #: Most tasks of each task's stage in progress at once (0: no cap; 004's ``δ``).
        self.task_cap = _ro(wl.task_cap)
        #: Deadline of each job (``inf``: none) and its SLA steps: those of job j are
        #: ``sla_time[sla_ptr[j]:sla_ptr[j+1]]`` with costs ``sla_height[...]``.
        self.job_deadline = _ro(wl.deadline)
        self.sla_ptr, self.sla_time = _ro(wl.sla_ptr), _ro(wl.sla_time)
        self.sla_height = _ro(wl.sla_height)
        #: Stage edges: stage ``stage_edge_dst[k]`` of job ``stage_edge_job[k]`` waits for
        #: its stage ``stage_edge_src[k]`` (a job without stage edges is a chain of stages).
        self.stage_edge_job = _ro(wl.stage_edge_job)
        self.stage_edge_src, self.stage_edge_dst = _ro(wl.stage_edge_src), _ro(wl.stage_edge_dst)
        self.task_job = _ro(engine.task_job)
        self.data_lag = engine.data_lag
        self._sealed = True

    @property
    def arrivals(self) -> int:
        """Jobs that arrived since the scheduler last decided (at this slot boundary)."""
        return self._now.arrivals

    @property
    def completions(self) -> int:
        """Tasks completed since the scheduler last decided (in the last slot)."""
        return self._now.completions

    @property
    def failures(self) -> int:
        """Copies lost to outages since the scheduler last decided (at this boundary)."""
        return self._now.failures

    @property
    def alive_jobs(self) -> np.ndarray:
        """Ids of the alive jobs, in arrival order."""
        return _ro(self._now.alive_jobs)

    @property
    def announced(self) -> np.ndarray:
        """Jobs whose raw input came into existence at this boundary.

        That is ``workload.data_lag`` before they arrive; set only for a scheduler that
        places data.
        """
        return _ro(self._now.announced)

    @property
    def time(self) -> float:
        """Current time (s), a slot boundary."""
        return self._e.time

    @property
    def dt(self) -> float:
        """Slot length (s)."""
        return self._e.dt

    @property
    def reachable(self) -> np.ndarray:
        """Whether each cluster is reachable now."""
        return _ro(self._e.reachable)

    @property
    def reach_version(self) -> int:
        """How many times :attr:`reachable` has changed: equal versions, equal sets."""
        return self._e.reach_version

    @property
    def total_slots(self) -> int:
        """Slots of reachable clusters (:func:`geosim.state.reachable_slots`)."""
        return reachable_slots(self._e)

    def free_slots(self) -> np.ndarray:
        """Whole free slots per cluster (0 for unreachable clusters); a fresh array."""
        return self._e.free_slots()

    def free_units(self, share: float) -> np.ndarray:
        """How many copies of slot share ``share`` fit per cluster (0 if unreachable)."""
        return np.add.reduceat(self.slot_units(share), self._e.world.slot_ptr[:-1])

    def slot_units(self, share: float) -> np.ndarray:
        """How many more copies of slot share ``share`` fit on each slot (0 if unreachable)."""
        fits = np.floor((1.0 - self._e.slot_used + 1e-9) / share).astype(np.int64)
        return np.where(self._e.reachable[self._e.world.slot_cluster], fits, 0)

    @property
    def n_ready(self) -> int:
        """Tasks ready and without a live copy, over all jobs."""
        return self._e.n_ready

    @property
    def task_state(self) -> np.ndarray:
        """State of every task: 0 waiting, 1 ready, 2 running, 3 done."""
        return _ro(self._e.task_state)

    @property
    def task_home(self) -> np.ndarray:
        """Cluster holding the largest part of each ready task's input (-1: none)."""
        return _ro(self._e.task_home)

    @property
    def task_live(self) -> np.ndarray:
        """Live copies per task."""
        return _ro(self._e.task_live)

    @property
    def task_saved(self) -> np.ndarray:
        """Checkpointed progress (fraction) per task."""
        return _ro(self._e.task_saved)

    def ready_tasks(self, job: int) -> np.ndarray:
        """Tasks of ``job`` that are ready and have no live copy."""
        lo, hi = self.job_task_ptr[job], self.job_task_ptr[job + 1]
        return lo + np.flatnonzero(self._e.task_state[lo:hi] == READY)

    def tasks_of(self, jobs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """All tasks of ``jobs``, grouped by job in the given order.

        Returns:
            Task ids, and for each the position of its job in ``jobs``.
        """
        jobs = np.asarray(jobs, dtype=np.int64)
        lo, hi = self.job_task_ptr[jobs], self.job_task_ptr[jobs + 1]
        return concat_ranges(lo, hi), np.repeat(np.arange(jobs.size), hi - lo)

    def ready_in_order(self, jobs: np.ndarray, limits: np.ndarray | None = None,
                       budget: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Ready tasks without a live copy, grouped by job in the order of ``jobs``.

        Args:
            jobs: Job ids.
            limits: Optionally, at most ``limits[i]`` tasks of job ``jobs[i]``.
            budget: Optionally, at most this many tasks in all (the first in order).

        Returns:
            Task ids, and for each the position of its job in ``jobs``.
        """
        jobs = np.asarray(jobs, dtype=np.int64)
        limits = _NO_LIMITS if limits is None else np.asarray(limits, dtype=np.float64)
        return _ready_of(jobs, self.job_task_ptr, self._e.task_state, limits,
                         np.iinfo(np.int64).max if budget is None else int(budget))

    def runnable_counts(self, jobs: np.ndarray) -> np.ndarray:
        """Number of ready or running tasks of each job."""
        jobs = np.asarray(jobs, dtype=np.int64)
        return self._e.job_left[jobs] - self._e.job_waiting[jobs]

    def stage_groups(self, jobs: np.ndarray, work: bool = False) -> dict[str, np.ndarray]:
        """The stages of ``jobs``, one entry per (job, stage), grouped by job in that order.

        In a flow of MapReduce jobs (004) each stage is one malleable job. On a workload
        with stages the engine keeps the counts, so this costs time in the number of
        stages, not tasks.

        Args:
            jobs: Job ids.
            work: Also return ``work_left`` (time in the number of their tasks).

        Returns:
            ``job``, ``stage``; ``lo``/``hi``, the stage's task range; ``cap`` (0: none);
            ``open``, whether every stage it waits for is done; ``left``, its unfinished
            tasks; ``ready``, tasks ready and without a live copy; ``running``, tasks with
            a live copy; with ``work``, ``work_left``: the work of its unfinished tasks
            less checkpoints.
        """
        e = self._e
        jobs = np.asarray(jobs, dtype=np.int64)
        if e.staged:
            gid = concat_ranges(e.job_groups[jobs], e.job_groups[jobs + 1])
            job = np.repeat(jobs, e.job_groups[jobs + 1] - e.job_groups[jobs])
            lo, hi = e.group_ptr[gid], e.group_ptr[gid + 1]
            out = {"open": e.group_waiting[gid] == 0, "left": e.group_left[gid],
                   "ready": e.group_ready[gid], "running": e.group_running[gid]}
        else:
            job, lo, hi = jobs, self.job_task_ptr[jobs], self.job_task_ptr[jobs + 1]
            tasks, pos = self.tasks_of(jobs)
            state = e.task_state[tasks]
            out = {"open": np.ones(jobs.size, dtype=bool), "left": e.job_left[jobs],
                   "ready": np.bincount(pos[state == READY], minlength=jobs.size),
                   "running": np.bincount(pos[state == RUNNING], minlength=jobs.size)}
        out.update(job=job, stage=self.task_stage[lo].astype(np.int64), lo=lo, hi=hi,
                   cap=self.task_cap[lo].astype(np.int64))
        if work:
            tasks = concat_ranges(lo, hi)
            index = np.repeat(np.arange(lo.size), hi - lo)
            tasks, index = tasks[e.task_state[tasks] != DONE], index[e.task_state[tasks] != DONE]
            left = self.task_work[tasks] * (1.0 - e.task_saved[tasks])
            out["work_left"] = np.bincount(index, weights=left, minlength=lo.size)
        return out

    def running_copies(self, jobs: np.ndarray) -> np.ndarray:
        """Live copies (machines in use) of each job of ``jobs``."""
        return self._e.job_live[np.asarray(jobs, dtype=np.int64)]

    def free_slot_ids(self) -> np.ndarray:
        """Ids of the whole free slots of reachable clusters, ascending."""
        return np.flatnonzero(self.slot_units(1.0) > 0)

    def task_inputs(self, task: int) -> tuple[np.ndarray, np.ndarray]:
        """Clusters and sizes (MB) of the inputs of a ready or running task."""
        if self._e.task_state[task] not in (READY, RUNNING, DONE):
            raise ValueError(f"task {task} is not ready: its inputs are not placed yet")
        return self._e.task_inputs(task)

    def inputs_of(self, tasks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Inputs of ready or running tasks, grouped by task in the order of ``tasks``.

        Returns:
            For every input: the position of its task in ``tasks``, the cluster holding it,
            and its size (MB).
        """
        tasks = np.asarray(tasks, dtype=np.int64)
        if np.any(self._e.task_state[tasks] == WAITING):
            raise ValueError("some tasks are not ready: their inputs are not placed yet")
        return self._e.inputs_of(tasks)

    def input_groups(self, tasks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Inputs of ready or running tasks grouped by source cluster.

        A copy fetches its inputs from each source in parallel, so what bounds its
        transfer from a source is the largest input there (empty inputs are left out).

        Returns:
            Per group, sorted by task position then source: the position of its task in
            ``tasks``, the source cluster, and the size (MB) of its largest input there.
        """
        ptr, src, size = self.input_group_ptr(tasks)
        return np.repeat(np.arange(ptr.size - 1), np.diff(ptr)), src, size

    def input_group_ptr(self, tasks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`input_groups` with each task's groups as a range: ``ptr[i]:ptr[i + 1]``.

        Returns:
            The ``len(tasks) + 1`` group offsets, and per group the source and the size.
        """
        owner, src, size = self.inputs_of(tasks)
        return _group_inputs(owner, src, size, len(np.atleast_1d(tasks)), self.n_clusters)

    def raw_inputs(self, job: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Raw inputs of an announced or alive job: their ids, current clusters and MB."""
        e, wl = self._e, self._e.wl
        if job >= e.next_announced and job >= e.next_job:
            raise ValueError(f"job {job} is not announced: its raw input does not exist yet")
        lo, hi = wl.raw_ptr[wl.task_ptr[job]], wl.raw_ptr[wl.task_ptr[job + 1]]
        raws = np.arange(lo, hi, dtype=np.int64)
        return raws, e.raw_cluster[lo:hi].copy(), _ro(wl.raw_size[lo:hi])

    def moves(self) -> dict[str, np.ndarray]:
        """Raw-input moves in flight: raw id, source, destination and MB still to send."""
        e = self._e
        left = (1.0 - e.move_got) * e.wl.raw_size[e.move_raw]
        return {"raw": e.move_raw.copy(), "src": e.move_src.copy(), "dst": e.move_dst.copy(),
                "left": left}

    def remaining_work(self, jobs: np.ndarray) -> np.ndarray:
        """Work (MI) each job still needs, net of checkpoints and live progress."""
        return self._e.remaining_work(np.asarray(jobs, dtype=np.int64))

    @property
    def live_copies(self) -> np.ndarray:
        """Ids of the copies running now, in ascending order."""
        return _ro(self._e.live)

    def copy_info(self, copies: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Task, job, cluster, slot, share, start time and progress of copies.

        Live copies by default. Progress (the fraction of its task done) is what a
        progress-monitoring policy (Mantri, LATE) sees; ``base`` is the progress the copy
        started from (its task's checkpoint).
        """
        e = self._e
        ids = e.live if copies is None else np.asarray(copies, dtype=np.int64)
        cols = e.copies.cols
        task = cols["task"][ids]
        return {"copy": ids.copy(), "task": task, "job": e.task_job[task],
                "cluster": cols["cluster"][ids], "slot": cols["slot"][ids],
                "share": cols["share"][ids], "start": cols["start"][ids],
                "progress": cols["progress"][ids], "base": cols["base"][ids]}


class Actions:
    """The operations a scheduler may request.

    They are applied at once, so the view reflects them (free slots fall as copies launch).

    Args:
        engine: The run's engine.
    """

    def __init__(self, engine: Engine):
        self._e = engine
        self.launched = 0
        self.killed = 0

    def launch(self, task: int, cluster: int, share: float = 1.0, slot: int | None = None) -> int:
        """Start a copy of ``task`` on ``cluster`` (a free slot, or ``slot``); return its id."""
        self.launched += 1
        return self._e.launch(int(task), int(cluster), share, slot)

    def launch_many(self, tasks: np.ndarray, clusters: np.ndarray, share: float = 1.0,
                    slots: np.ndarray | None = None) -> np.ndarray:
        """Start one copy of each ``tasks[i]`` on ``clusters[i]``; return the copy ids.

        A task may appear several times (redundant copies). ``slots`` optionally names
        the slot of each copy; by default free slots are drawn at random in each cluster.
        """
        self.launched += len(tasks)
        return self._e.launch_many(tasks, clusters, share, slots)

    def kill(self, copies: int | np.ndarray) -> None:
        """Kill live copies; work since their task's last checkpoint is wasted."""
        n = np.size(copies)
        self._e.kill(copies)
        self.killed += n

    def checkpoint(self, jobs: int | np.ndarray) -> None:
        """Bring all copies of ``jobs`` to their task's most advanced copy (002 §3)."""
        self._e.checkpoint_jobs(np.atleast_1d(np.asarray(jobs, dtype=np.int64)))

    def preempt(self, copies: int | np.ndarray) -> None:
        """Checkpoint the copies' jobs, then kill the copies: no work is lost."""
        copies = np.atleast_1d(np.asarray(copies, dtype=np.int64))
        self._e.checkpoint_jobs(np.unique(self._e.task_job[self._e.copies.cols["task"][copies]]))
        self.kill(copies)

    def move_data(self, raws: np.ndarray, clusters: np.ndarray) -> None:
        """Move raw inputs of announced jobs to ``clusters`` before the jobs arrive.

        Each move is a WAN transfer sharing links and gates with the copies' inputs; one
        still running when its job arrives is abandoned (the input stays where it was).
        """
        self._e.start_moves(raws, clusters)

    def set_share(self, copies: int | np.ndarray, share: float) -> None:
        """Set live copies' share of their slots (multitasking, 002 §5)."""
        self._e.set_share(copies, share)


_NO_LIMITS = np.empty(0)


@njit(cache=True)
def _ready_of(jobs, ptr, state, limits, budget):  # pragma: no cover - compiled
    """:meth:`SchedulerView.ready_in_order`; ``limits`` empty: no cap per job.

    Tasks past the budget are not listed.
    """
    total = 0
    for k in range(jobs.size):
        total += ptr[jobs[k] + 1] - ptr[jobs[k]]
    size = min(total, budget)
    tasks = np.empty(size, dtype=np.int64)
    pos = np.empty(size, dtype=np.int64)
    n = 0
    for k in range(jobs.size):
        cap = limits[k] if limits.size else np.inf
        taken = 0
        for t in range(ptr[jobs[k]], ptr[jobs[k] + 1]):
            if taken >= cap or n >= size:
                break
            if state[t] == READY:
                tasks[n], pos[n] = t, k
                n += 1
                taken += 1
        if n >= size:
            break
    return tasks[:n], pos[:n]


@njit(cache=True)
def _group_inputs(owner, src, size, n_tasks, n):  # pragma: no cover - compiled
    """The groups of :meth:`SchedulerView.input_group_ptr` (``owner`` ascends) in one pass.

    A task's sources are listed as first met, then put in ascending order: the work
    follows the task's inputs, not the clusters of the world.
    """
    g_ptr = np.zeros(n_tasks + 1, dtype=np.int64)
    g_src = np.empty(src.size, dtype=np.int64)
    g_size = np.empty(src.size)
    seen = np.zeros(n, dtype=np.bool_)
    best = np.empty(n)
    count = 0
    x = 0
    for i in range(n_tasks):
        g_ptr[i] = count
        lo = count
        while x < owner.size and owner[x] == i:
            if size[x] > 0:
                c = src[x]
                if seen[c]:
                    best[c] = max(best[c], size[x])
                else:
                    best[c] = size[x]
                    seen[c] = True
                    g_src[count] = c
                    count += 1
            x += 1
        g_src[lo:count].sort()              # sources in ascending order
        for k in range(lo, count):
            c = g_src[k]
            g_size[k] = best[c]
            seen[c] = False
    g_ptr[n_tasks] = count
    return g_ptr, g_src[:count], g_size[:count]
