"""SRPTMS+C: SRPT-based machine sharing plus cloning (000 §V, Algorithm 2 and its procedure).

Xu and Lau, "Task-cloning algorithms in a MapReduce cluster with competitive performance
bounds". At the start of every slot the jobs with unscheduled tasks share the ``M``
machines: ranked by ``w_i / U_i(l)``, the highest-priority jobs whose weights make up an
``epsilon`` fraction of the total weight each deserve ``g_i(l)`` machines in proportion
to their weights; a job gets the machines it deserves beyond those it already runs on
(no preemption), and when it gets more machines than it has unscheduled tasks its tasks
are cloned.

The printed pseudo-code has three slips; geosim follows the text and the proof of
Theorem 2 (each also in ``docs/model.md``):

1. The third case of ``g_i`` prints ``(W_i(l) - (1 - eps) W_i) M / (eps W(l))``; the
   total weight ``W(l)`` is meant, since only then ``sum_i g_i = M`` (eq. 31 of the
   proof) and the boundary job gets the part of the ``eps`` fraction left to it.
2. The task-scheduling procedure's two conditions are swapped against the text
   (§V-B): with ``x`` machines and ``c`` unscheduled tasks of the current phase, when
   ``x > c`` every unscheduled task gets ``floor(x / c)`` copies ("the scheduler spawns
   the same number of clones for all the unscheduled tasks"), and when ``x <= c``, ``x``
   tasks chosen uniformly at random get one copy each ("clones are not made in this
   case"). The printed version would give ``floor(x/c) <= 1`` copies when ``c >= x``.
3. Line 15 subtracts the procedure's return value (the machines left over) from the
   free machines ``M(l)``; the machines the job used are meant.

Choices where the paper is silent (also in ``docs/model.md``):

- ``U_i(l)`` (eq. 4) sums ``E_t + r sigma_t`` over the job's unscheduled tasks (not yet
  running or done), with ``E_t`` the task's mean work and ``sigma_t = task_cv * E_t``;
  on MapReduce jobs, whose phases share ``E`` and ``sigma``, this is eq. 4 exactly.
- The jobs that share (``psi^s(l)``, whose weights make ``W(l)``) are, by default, as
  Algorithm 2 line 1 prints them: "the set of jobs which have unscheduled tasks at
  current time slot" (``sharing_set="unscheduled"``). A job whose only unscheduled
  tasks are reduce tasks waiting for its map phase is one of them: it holds its share,
  and since it has no task that can start ("the scheduler begins to schedule reduce
  tasks after all the map tasks completed", §V-B) that share stays idle this slot.
  ``sharing_set="ready"`` keeps only the jobs with an unscheduled task that can start
  now, so no share is held idle (not in 000).
- Fractional ``g_i`` are rounded by largest remainder (ties to the higher priority), so
  the integers still sum to ``M``.
- Machines are the slots of every reachable cluster, one pool (000 has one cluster);
  new copies go to free slots drawn uniformly at random.
- It decides at slot boundaries where something changed (an arrival, a completion, a
  failure or a change of ``M``); otherwise the last decision stands, since nothing it
  depends on moved.
"""

from __future__ import annotations

from math import inf

import numpy as np

from geosim.jit import njit
from geosim.params import Field
from geosim.schedulers.base import Scheduler
from geosim.schedulers.registry import register
from geosim.view import Actions, SchedulerView, rank_in_runs

#: The multiplier ``r`` of a task's standard deviation in its effective workload.
R_FIELD = Field(3.0, "float", lo=0, hi=inf, doc="multiplier of a task's standard deviation "
                "in its effective workload")


def effective_work(view: SchedulerView, tasks: np.ndarray, r: float) -> np.ndarray:
    """``E_t + r sigma_t`` of each task (000 eq. 2 and 4, per task)."""
    work = view.task_work[tasks]
    return work * (1.0 + r * view.task_cv[tasks])


def epsilon_shares(weights: np.ndarray, epsilon: float, machines: int) -> np.ndarray:
    """Machines each job deserves under ``epsilon``-fraction weighted sharing (000 eq. 5).

    Args:
        weights: Job weights in decreasing order of priority.
        epsilon: The fraction in ``(0, 1]`` of the total weight that shares the machines.
        machines: ``M``.

    Returns:
        ``g_i`` (fractional), summing to ``M`` when there is any weight. ``W_i`` is the
        weight of job ``i`` and every job of lower priority; a job entirely within the
        top ``epsilon W`` gets ``w_i M / (epsilon W)``, the job the boundary cuts gets
        ``(W_i - (1 - epsilon) W) M / (epsilon W)``, the others 0.
    """
    w = np.asarray(weights, dtype=np.float64)
    total = w.sum()
    if total <= 0:
        return np.zeros(w.size)
    suffix = np.cumsum(w[::-1])[::-1]          # W_i
    floor = (1.0 - epsilon) * total
    scale = machines / (epsilon * total)
    g = np.where(suffix - w >= floor, w * scale, np.maximum(suffix - floor, 0.0) * scale)
    return np.where(suffix < floor, 0.0, g)


def round_shares(g: np.ndarray, machines: int) -> np.ndarray:
    """Round shares to integers summing to ``machines`` (largest remainder, priority ties)."""
    base = np.floor(g + 1e-9).astype(np.int64)
    left = int(machines - base.sum())
    if left > 0 and g.size:
        frac = g - base
        order = np.lexsort((np.arange(g.size), -frac))
        base[order[:left]] += 1
    return base


@njit(cache=True)
def _grant(xi, ready, free, cap):  # pragma: no cover - compiled
    """Machines each job takes, in priority order (Algorithm 2 lines 7-19)."""
    used = np.zeros(xi.size, dtype=np.int64)
    for i in range(xi.size):
        if free <= 0:
            break
        if xi[i] <= 0 or ready[i] <= 0:
            continue
        x = min(xi[i], free)
        u = x if x <= ready[i] else ready[i] * min(x // ready[i], cap)
        used[i] = u
        free -= u
    return used


def grant_machines(xi: np.ndarray, ready: np.ndarray, free: int,
                   max_copies: int | None = None) -> np.ndarray:
    """Machines each job uses, in priority order, under Algorithm 2 and the procedure.

    Job ``i`` is offered ``x = min(xi_i, M(l))`` machines (none if ``xi_i <= 0``: no
    preemption); with ``c`` unscheduled ready tasks it uses ``x`` if ``x <= c`` and
    ``c floor(x / c)`` otherwise, at most ``c * max_copies`` (the rest stays free for the
    next job).
    """
    cap = np.iinfo(np.int64).max if max_copies is None else int(max_copies)
    return _grant(np.asarray(xi, dtype=np.int64), np.asarray(ready, dtype=np.int64),
                  int(free), cap)


def procedure(tasks: np.ndarray, pos: np.ndarray, used: np.ndarray,
              rng: np.random.Generator) -> np.ndarray:
    """The task-scheduling procedure for every job at once (corrected as in the module doc).

    Args:
        tasks: The unscheduled ready tasks of the current phase of each job, grouped by
            job (``pos`` ascending).
        pos: Each task's job position.
        used: Machines each job uses (from :func:`grant_machines`).
        rng: Stream for the random choice of tasks.

    Returns:
        The task of every new copy (a task repeated once per copy).
    """
    count = np.bincount(pos, minlength=used.size)
    key = rng.random(tasks.size)
    order = np.lexsort((key, pos))
    tasks, pos = tasks[order], pos[order]
    rank = rank_in_runs(pos)
    x, c = used[pos], count[pos]
    copies = np.where(x > c, x // np.maximum(c, 1), (rank < x).astype(np.int64))
    return np.repeat(tasks, copies)


#: The jobs that share the machines (``psi^s(l)``): with any unscheduled task (Algorithm 2
#: line 1), or with an unscheduled task that can start now.
SHARING_SETS = ("unscheduled", "ready")


@njit(cache=True)
def _phase_stats(lo, hi, state, stage, eff):  # pragma: no cover - compiled
    """Per job: effective unscheduled work, its lowest unscheduled stage, ready tasks there."""
    n = lo.size
    u = np.zeros(n)
    low = np.full(n, np.iinfo(np.int64).max)
    ready = np.zeros(n, dtype=np.int64)
    for j in range(n):
        for t in range(lo[j], hi[j]):
            s = state[t]
            if s == 0 or s == 1:              # WAITING or READY: unscheduled
                u[j] += eff[t]
                if stage[t] < low[j]:
                    low[j] = stage[t]
        for t in range(lo[j], hi[j]):
            if state[t] == 1 and stage[t] == low[j]:
                ready[j] += 1
    return u, low, ready


@njit(cache=True)
def _phase_tasks(lo, hi, state, stage, low, pos):  # pragma: no cover - compiled
    """Ready tasks of the lowest unscheduled stage of the jobs ``pos``, grouped by job."""
    total = 0
    for i in range(pos.size):
        j = pos[i]
        for t in range(lo[j], hi[j]):
            if state[t] == 1 and stage[t] == low[j]:
                total += 1
    tasks = np.empty(total, dtype=np.int64)
    which = np.empty(total, dtype=np.int64)
    k = 0
    for i in range(pos.size):
        j = pos[i]
        for t in range(lo[j], hi[j]):
            if state[t] == 1 and stage[t] == low[j]:
                tasks[k] = t
                which[k] = i
                k += 1
    return tasks, which


class Phases:
    """The unscheduled tasks of alive jobs, per job (one pass over their task ranges).

    Attributes:
        work: Effective unscheduled work ``U_i`` (:func:`effective_work` summed).
        ready: Unscheduled ready tasks in the job's current phase: the lowest stage that
            still has unscheduled tasks (the map phase until every map task is scheduled).
        unscheduled: Whether the job has any unscheduled task (waiting or ready).
    """

    def __init__(self, view: SchedulerView, jobs: np.ndarray, eff: np.ndarray):
        self._view = view
        self._lo = np.asarray(view.job_task_ptr[jobs], dtype=np.int64)
        self._hi = np.asarray(view.job_task_ptr[jobs + 1], dtype=np.int64)
        self.work, self._low, self.ready = _phase_stats(
            self._lo, self._hi, view.task_state, view.task_stage, eff)
        self.unscheduled = self._low < np.iinfo(np.int64).max

    def tasks(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Ready tasks of the current phase of jobs ``pos`` (positions), grouped in that order.

        Returns:
            Task ids and, for each, the index in ``pos`` of its job.
        """
        return _phase_tasks(self._lo, self._hi, self._view.task_state, self._view.task_stage,
                            self._low, np.asarray(pos, dtype=np.int64))


def launch_on_random_slots(view: SchedulerView, actions: Actions, rng: np.random.Generator,
                           tasks: np.ndarray) -> None:
    """Start one copy per entry of ``tasks`` on free slots drawn uniformly at random."""
    if tasks.size == 0:
        return
    free = view.free_slot_ids()
    slots = rng.choice(free, size=tasks.size, replace=False) if tasks.size < free.size \
        else free[:tasks.size]
    actions.launch_many(tasks, view.slot_cluster[slots], slots=slots)


@register
class SRPTMSC(Scheduler):
    """SRPTMS+C (000 Algorithm 2): ``epsilon``-fraction weighted sharing by ``w/U``, cloning.

    Every slot where something changed: the jobs with an unscheduled task (``psi``, as
    Algorithm 2 prints it; ``sharing_set="ready"``: only those with one that can start
    now) are ranked by ``w_i / U_i(l)``; each deserves ``g_i`` machines (:func:`epsilon_shares`,
    rounded to integers summing to ``M``); with ``sigma_i`` machines already running its
    copies it is offered ``xi_i = g_i - sigma_i`` more (none when ``xi_i <= 0``: no
    preemption), capped by the free machines left; the procedure clones its
    unscheduled tasks evenly when it has more machines than tasks, and otherwise picks
    tasks at random. See the module docstring for the three corrections to the printed
    pseudo-code and the choices where 000 is silent.

    With ``epsilon = 1`` every job gets its weighted fair share ``w_i M / W``, whatever
    ``r``; as ``epsilon`` falls the sharing approaches weighted SRPT on ``U``.

    As written, a job alone in ``psi`` deserves every machine, and its unscheduled tasks
    are cloned onto all free machines, which it then holds (no preemption) until its
    copies end: on ``cloning-google`` (300 jobs, seed 1) the first job, four tasks of mean
    work 20 600 s, ran 3 000 copies of each and held all 12 000 machines for 18 000 s.
    ``max_copies`` (not in 000) caps the copies the procedure makes of one task.

    Args:
        epsilon: Fraction of the total weight that shares the machines, in ``(0, 1]``.
        r: Multiplier of a task's standard deviation in its effective workload (>= 0).
        max_copies: Most copies the procedure makes of one task; ``None`` (default) is
            000 as written, without a cap.
        sharing_set: ``"unscheduled"`` (default, Algorithm 2 line 1: "the set of jobs
            which have unscheduled tasks"): a job whose reduce tasks wait for its map
            phase holds a share it cannot use; ``"ready"``: only jobs with an unscheduled
            task that can start now share (not in 000).
    """

    event_driven = True
    name = "srptms+c"
    description = "000's SRPTMS+C: epsilon-fraction weighted sharing by w/U, cloning spare machines"
    params = {
        "epsilon": Field(0.6, "float", lo=0, hi=1, lo_open=True, doc="fraction of the total "
                         "weight that shares the machines"),
        "r": R_FIELD,
        "max_copies": Field(None, "int", lo=1, hi=inf, optional=True, doc="most copies the "
                            "procedure makes of one task (none: 000 as written)"),
        "sharing_set": Field("unscheduled", "str", choices=SHARING_SETS, doc="jobs that "
                             "share: with any unscheduled task (000) or with a ready one"),
    }

    def __init__(self, epsilon: float = 0.6, r: float = 3.0, max_copies: int | None = None,
                 sharing_set: str = "unscheduled"):
        self.validate_params(epsilon=epsilon, r=r, max_copies=max_copies,
                             sharing_set=sharing_set)
        self.epsilon, self.r, self.max_copies = float(epsilon), float(r), max_copies
        self.sharing_set = sharing_set

    def reset(self, view: SchedulerView, rng: np.random.Generator) -> None:
        """Compute every task's effective work once."""
        super().reset(view, rng)
        self._eff = effective_work(view, np.arange(view.task_work.size), self.r)

    def decide(self, view: SchedulerView, actions: Actions) -> None:
        """Share the machines among the highest-priority jobs; clone where machines are spare."""
        jobs = view.alive_jobs
        if not self.at_event(view) or jobs.size == 0 or view.n_ready == 0:
            return
        pool = view.total_slots
        if pool == 0:
            return
        phases = Phases(view, jobs, self._eff)
        share = phases.unscheduled if self.sharing_set == "unscheduled" else phases.ready > 0
        idx = np.flatnonzero(share)                           # psi^s(l)
        w = view.job_weight[jobs[idx]]
        order = idx[np.lexsort((jobs[idx], -w / phases.work[idx]))]  # w/U decreasing
        g = round_shares(epsilon_shares(view.job_weight[jobs[order]], self.epsilon, pool), pool)
        xi = g - view.running_copies(jobs[order])
        free = int(view.free_slots().sum())
        used = grant_machines(xi, phases.ready[order], free, self.max_copies)
        served = np.flatnonzero(used)
        if served.size == 0:
            return
        tasks, which = phases.tasks(order[served])
        new = procedure(tasks, which, used[served], self.rng)
        launch_on_random_slots(view, actions, self.rng, new)
