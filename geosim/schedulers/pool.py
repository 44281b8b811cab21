"""Redundant execution on a pool of machines, checkpointed at arrivals and departures.

The policies of paper 002 (SRPT+R, Fair+R, LAPS+R(β) and their no-redundancy twins)
share one mechanism (002 §3, §4.1, §5.1, §5.3): at every arrival to or departure from
the system, every alive job is checkpointed, so each task's copies continue from its
most advanced copy, and each served job ``j`` is given ``r_j`` machines at a resource
share ``x`` on each. A :class:`PoolPolicy` only says how many machines each job gets
(:meth:`PoolPolicy.allocate`); :func:`apply_allocation` turns that into kills, share
changes and launches.

How the paper's single-work jobs carry over to geosim:

- **Machines** are the slots of every reachable cluster, one pool of ``M`` machines
  (on the geo-distributed worlds too: placement ignores where data lives).
- **Decision points** are job arrivals, task completions (a job's departure when it
  has one task; in a DAG a finished task leaves the system and may free its children),
  copies lost to outages, and changes of ``M`` as clusters become (un)reachable.
  Checkpoints happen only there (Assumption 1).
- **Jobs with several runnable tasks** spread their ``r_j`` machines over their ready
  and running tasks: one copy each while machines last (running tasks first, then by
  task id), the rest as extra copies round-robin in the same order. A single-task job
  gets exactly ``r_j`` copies, as in the paper.
- **Which machines.** New copies go to free machines drawn uniformly at random (a free
  share-``x`` unit of a machine, when multitasking), never two copies of one task on one
  machine. With ``reassign="keep"`` a job keeps the machines it already runs on and
  only the missing copies are drawn; with ``reassign="random"`` every copy is placed
  afresh on random machines at every decision, the most literal reading of "assigns its
  redundant executions to r_j(t) machines which are uniformly chosen at random"
  (Algorithms 1-3). Both are exact for the paper's analysis (machines are exchangeable
  and copies are identical after a checkpoint); they differ when a machine's service
  has memory, as the gamma available/unavailable periods of 002 §6 do. Under
  multitasking, when a task gets copies on several machines (LAPS+R's latest job when
  ``z >= 1``), the other copies keep at most ``1/x - 1`` units of any machine, so that
  task finds a free unit on every machine it needs; the surplus moves.
"""

from __future__ import annotations

from math import inf

import numpy as np

from geosim.params import Field
from geosim.schedulers.base import Scheduler
from geosim.view import READY, RUNNING, Actions, SchedulerView, rank_in_runs

REASSIGN = ("keep", "random")


def split_machines(n: int, machines: int, first: int = 0) -> np.ndarray:
    """Split ``machines`` among ``n`` jobs: ``floor(M/n)`` each, the remainder to one job.

    This is the ``n < M`` branch of 002 Algorithms 1 and 2: job ``first`` gets
    ``M - (n - 1) * floor(M / n)`` machines, every other job ``floor(M / n)``.
    """
    each = machines // n
    out = np.full(n, each, dtype=np.int64)
    out[first] = machines - (n - 1) * each
    return out


class PoolPolicy(Scheduler):
    """Base of the 002 policies: checkpoint at events, then give jobs machines.

    Subclasses implement :meth:`allocate`.

    Args:
        reassign: ``"keep"`` (copies stay on their machines across decisions) or
            ``"random"`` (every copy is re-placed on random machines at every decision).
        max_copies: Cap on the copies of one task (None: the paper's allocation, uncapped;
            1: no redundancy, as the twins without redundancy use). Machines a job is
            given beyond its tasks' caps stay idle.
    """

    event_driven = True     # decisions at arrivals, departures and changes of the pool
    params = {
        "reassign": Field("keep", "str", choices=REASSIGN, doc="keep: copies stay on their "
                          "machines; random: every copy re-placed at every decision"),
        "max_copies": Field(None, "int", lo=1, hi=inf, optional=True,
                            doc="cap on the copies of one task (none: uncapped)"),
    }

    def __init__(self, reassign: str = "keep", max_copies: int | None = None):
        self.validate_params(reassign=reassign, max_copies=max_copies)
        self.reassign, self.max_copies = reassign, max_copies

    def reset(self, view: SchedulerView, rng: np.random.Generator) -> None:
        """Prepare per-run state."""
        super().reset(view, rng)
        self._want = np.zeros(view.task_job.size, dtype=np.int64)

    def allocate(self, view: SchedulerView, jobs: np.ndarray,
                 machines: int) -> tuple[np.ndarray, np.ndarray, float]:
        """Decide the allocation at a decision point.

        Args:
            view: The scheduler's view (jobs are already checkpointed).
            jobs: Alive jobs, in arrival order.
            machines: ``M``, the number of machines in the pool.

        Returns:
            Served jobs, the number of machines of each, and the share ``x`` of a
            machine every served copy gets (the same for all, as in 002 §5).
        """
        raise NotImplementedError

    def decide(self, view: SchedulerView, actions: Actions) -> None:
        """At an arrival, departure, failure or change of the pool: checkpoint, reallocate."""
        jobs = view.alive_jobs
        event = self.at_event(view)
        pool = view.total_slots
        if jobs.size == 0 or not event:
            return
        jobs = jobs[np.lexsort((jobs, view.job_arrival[jobs]))]
        actions.checkpoint(jobs)
        if pool == 0:
            return
        served, machines, share = self.allocate(view, jobs, pool)
        keep = machines > 0
        apply_allocation(view, actions, self.rng, served[keep], machines[keep], share,
                         reassign=self.reassign, max_copies=self.max_copies, want=self._want)


def task_targets(view: SchedulerView, jobs: np.ndarray, machines: np.ndarray,
                 max_copies: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Spread each job's machines over its runnable tasks.

    Running tasks come first, then ready ones by id; each gets one copy while machines
    last, and the remaining machines go round-robin as extra copies, up to
    ``max_copies`` per task.

    Returns:
        Runnable tasks of ``jobs`` and the number of copies each should have.
    """
    tasks, pos = view.tasks_of(jobs)
    state = view.task_state[tasks]
    runnable = (state == READY) | (state == RUNNING)
    tasks, pos = tasks[runnable], pos[runnable]
    order = np.lexsort((tasks, state[runnable] != RUNNING, pos))
    tasks, pos = tasks[order], pos[order]
    count = np.bincount(pos, minlength=jobs.size)
    rank = np.arange(tasks.size) - (np.cumsum(count) - count)[pos]
    r, n = machines[pos], count[pos]
    target = np.where(r >= n, r // np.maximum(n, 1) + (rank < r % np.maximum(n, 1)), rank < r)
    target = target.astype(np.int64)
    if max_copies is not None:
        np.minimum(target, max_copies, out=target)
    return tasks, target


def apply_allocation(view: SchedulerView, actions: Actions, rng: np.random.Generator,
                     jobs: np.ndarray, machines: np.ndarray, share: float, *,
                     reassign: str = "keep", max_copies: int | None = None,
                     want: np.ndarray | None = None) -> None:
    """Make the running copies match an allocation (jobs must be checkpointed first).

    Copies of tasks beyond their target are killed (no work is lost: they sit at their
    task's checkpoint), as are copies on machines holding more than ``1/x`` of them;
    the survivors get share ``x``; missing copies are launched on free machines drawn
    uniformly at random, never two copies of a task on one machine.

    Args:
        view: The scheduler's view.
        actions: Where the changes go.
        rng: The scheduler's random stream.
        jobs: Served jobs.
        machines: Machines of each served job.
        share: Share ``x`` of a machine of every served copy.
        reassign: ``"keep"`` or ``"random"`` (see the module documentation).
        max_copies: Cap on the copies of one task (None: no cap).
        want: Optional scratch array of zeros, one per task (returned zeroed).
    """
    want = np.zeros(view.task_job.size, dtype=np.int64) if want is None else want
    tasks, target = task_targets(view, jobs, np.asarray(machines, dtype=np.int64), max_copies)
    want[tasks] = target
    info = view.copy_info()
    copy, task, slot = info["copy"], info["task"], info["slot"]
    if reassign == "random":
        kill = np.ones(copy.size, dtype=bool)
    else:
        kill = _rank_within(task, copy) >= want[task]
        per_machine = int(np.floor(1.0 / share + 1e-9))
        if share < 1.0 and (target > 1).any():
            # A task with copies on several machines (LAPS+R's latest job when z >= 1)
            # needs a free unit on machines it is not on yet: other copies keep at most
            # 1/x - 1 units of a machine, so every machine has one left for it.
            single = ~kill & (want[task] == 1)
            kill[single] = _rank_within(slot[single], copy[single]) >= per_machine - 1
        kept = ~kill
        kill[kept] = _rank_within(slot[kept], copy[kept]) >= per_machine
    if kill.any():
        actions.kill(copy[kill])
    kept = ~kill
    resize = kept & (np.abs(info["share"] - share) > 1e-12)
    if resize.any():
        actions.set_share(copy[resize], share)
    have = np.bincount(task[kept], minlength=want.size)[tasks] if kept.any() else \
        np.zeros(tasks.size, dtype=np.int64)
    missing = target - have
    want[tasks] = 0
    if not (missing > 0).any():
        return
    new_tasks, new_slots = _place(view, rng, tasks, missing, have, share,
                                  task[kept], slot[kept])
    if new_tasks.size:
        actions.launch_many(new_tasks, view.slot_cluster[new_slots], share, new_slots)


def _rank_within(group: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Rank of each element within its group, by ascending ``key``."""
    if group.size == 0:
        return np.empty(0, dtype=np.int64)
    order = np.lexsort((key, group))
    rank = np.empty(group.size, dtype=np.int64)
    rank[order] = rank_in_runs(group[order])
    return rank


def _place(view: SchedulerView, rng: np.random.Generator, tasks: np.ndarray,
           missing: np.ndarray, have: np.ndarray, share: float, live_task: np.ndarray,
           live_slot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Draw machines for the missing copies uniformly at random among free units."""
    units = view.slot_units(share)
    need = missing > 0
    tasks, missing, have = tasks[need], missing[need], have[need]
    whole = share >= 1.0 - 1e-12
    # Whole-machine copies cannot meet a copy of their task on a free machine; with
    # multitasking, tasks that need several copies or already run get distinct machines.
    spread = np.zeros(tasks.size, dtype=bool) if whole else (missing > 1) | (have > 0)
    out_t, out_s = [], []
    for task, count in zip(tasks[spread], missing[spread], strict=True):
        free = units > 0
        free[live_slot[live_task == task]] = False
        cand = np.flatnonzero(free)
        pick = rng.choice(cand, size=min(int(count), cand.size), replace=False)
        units[pick] -= 1
        out_t.append(np.full(pick.size, task))
        out_s.append(pick)
    single = np.repeat(tasks[~spread], missing[~spread])
    pool = np.repeat(np.arange(units.size), units)
    pick = rng.choice(pool, size=min(single.size, pool.size), replace=False)
    out_t.append(single[:pick.size])
    out_s.append(pick)
    return np.concatenate(out_t).astype(np.int64), np.concatenate(out_s).astype(np.int64)
