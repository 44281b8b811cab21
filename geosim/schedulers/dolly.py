"""Dolly: cloning small jobs within a budget (Ananthanarayanan et al., NSDI 2013).

"Effective Straggler Mitigation: Attack of the Clones": §3 (task-level cloning, the
number of clones from the job's straggling probability, the cloning budget) and §4
(delay assignment of downstream clones). See :class:`Dolly`.
"""

from __future__ import annotations

import math

import numpy as np

from geosim.modeler import PerformanceModel
from geosim.params import Field
from geosim.schedulers.compose import PlaceFn, Redundancy
from geosim.view import RUNNING, Actions, SchedulerView, concat_ranges, first_of_runs

#: Orders in which jobs arriving at one slot boundary are admitted to the budget.
ADMISSIONS = ("smallest", "arrival")


def straggle_probability(speed: np.ndarray, weight: np.ndarray, ratio: float) -> np.ndarray:
    """Probability that one copy of a task straggles, per task type.

    A copy straggles when it takes more than ``ratio`` times the median duration of a
    copy of its task. A copy's duration is the task's work over the speed it sees, the
    speed drawn from the atoms of a cluster chosen in proportion to ``weight`` (its
    reachable slots). As the duration falls with speed, the event is ``V < median(V) /
    ratio``.

    Args:
        speed: Speed atoms, shape ``(clusters, types, K)`` (``PerformanceModel.speed``).
        weight: Weight of each cluster (0: excluded); at least one positive.
        ratio: Straggling threshold as a multiple of the median duration (>= 1).

    Returns:
        ``p`` per task type.
    """
    n, types, k = speed.shape
    vals = speed.transpose(1, 0, 2).reshape(types, n * k)
    w = np.repeat(np.asarray(weight, dtype=float), k)
    order = np.argsort(vals, axis=1, kind="stable")
    v = np.take_along_axis(vals, order, axis=1)
    cum = np.cumsum(w[order], axis=1)
    total = cum[:, -1]
    median = v[np.arange(types), np.argmax(cum >= 0.5 * total[:, None] - 1e-12, axis=1)]
    slow = vals < median[:, None] / ratio
    return (slow * w).sum(axis=1) / total


def clone_count(p: np.ndarray, target: float, max_clones: int) -> int:
    """Copies per task of a job: the smallest ``c`` with ``1 - Π(1 - p_i^c) <= target``.

    With equal ``p_i = p`` over ``n`` tasks this is Dolly's ``1 - (1 - p^c)^n <= ε``
    (NSDI 2013 §3): the job straggles if any task has all its ``c`` copies straggle.

    Args:
        p: Straggling probability of one copy of each of the job's tasks.
        target: Acceptable probability ``ε`` that the job straggles.
        max_clones: Cap on ``c``, returned when no smaller ``c`` reaches the target.
    """
    p = np.clip(np.asarray(p, dtype=float), 0.0, 1.0 - 1e-12)
    c = np.arange(1, max_clones + 1)
    survive = np.exp(np.log1p(-np.power(p[None, :], c[:, None])).sum(axis=1))
    ok = np.flatnonzero(1.0 - survive <= target + 1e-12)
    return int(c[ok[0]]) if ok.size else int(max_clones)


class Dolly(Redundancy):
    """Dolly's budgeted cloning of small jobs (NSDI 2013, §3 and §4).

    **Admission at submission.** When a job arrives, if it is small (at most
    ``small_tasks`` tasks) it gets ``c`` copies per task, ``c`` the smallest value with
    ``1 - Π_i(1 - p_i^c) <= straggle_target`` (:func:`clone_count`; the paper's
    ``1 - (1 - p^c)^n <= ε`` with one ``p``), capped at ``max_clones``. The job is cloned
    only if its ``(c - 1) × n`` extra copies fit the budget: the extra copies reserved by
    the cloned jobs still alive never exceed ``budget`` × the reachable slots at the
    admission. Jobs arriving at the same slot boundary are admitted smallest first
    (``admission = "smallest"``, the paper's preference for small jobs) or in arrival
    order (``"arrival"``). A job that does not fit is never cloned; its reservation is
    released when it finishes. Reserving ``(c - 1) × n`` is exact for the paper's jobs,
    whose small jobs run all their tasks at once; a DAG job here never holds more.

    **Straggling probability.** ``p_i`` is the probability that one copy of task ``i``
    takes more than ``straggler_ratio`` × the median copy duration of its type (the
    Mantri/Dolly notion of a straggler relative to the median task), from the learned
    speed distributions of its task type (``self.model.speed``) over the reachable
    clusters weighted by their slots (:func:`straggle_probability`). Transfers and
    outages are not part of ``p``.

    **Cloning.** Every task of a cloned job starts with ``c`` copies when it becomes
    ready, placed by the placement rule in the job's priority. The extra copies live at
    any moment never exceed ``floor(budget × reachable slots)``: clones beyond it are
    not launched, and when outages shrink the reachable slots below what live clones
    need, the youngest clones are killed. A task whose copies are all lost starts again
    with ``c`` copies.

    **Delay assignment (§4).** In Dolly the clones of a downstream task wait up to ``ω``
    for an exclusive copy of an upstream output (each upstream clone writes one) before
    reading a contended copy. Here the first copy of a task to finish wins and its
    siblings are killed at once, so only one copy of every output exists, and the
    contention that matters is the WAN: copies reading that output from another
    cluster share its egress gate and the links, while a copy at the output's cluster
    reads it locally. With ``delay = ω > 0`` the extra copies of a task with input are
    launched with its first copy only as far as the cluster holding most of its input
    has free slots for them (after the copies placed before them at this boundary); the
    others wait up to ``ω`` seconds for a free slot there, then take the placement
    rule's choice (a contended remote read) if a slot is free, else are dropped. A
    waiting clone is also dropped when its task finishes. The count of local free slots
    ignores copies the placement rule moves there from other clusters in the same
    boundary, so a clone launched with its job may rarely land remotely. ``delay = 0``
    launches every clone at once (the paper's "contention cloning"). The paper derives
    ω from a model of its intermediate-data contention; here it is a fixed parameter.
    Raw input also exists once here, so the rule applies to every task with input.

    Args:
        budget: β, the fraction of the reachable slots extra copies may use.
        straggle_target: ε, the acceptable probability that a cloned job straggles.
        max_clones: Cap on the copies per task.
        small_tasks: Largest task count of a job that may be cloned. The default, 150,
            is the small class of the Facebook job mix of 003 §6.1, the setting Dolly is
            compared in; Dolly's own trace analysis puts most jobs below 10 tasks.
        straggler_ratio: A copy straggles beyond this multiple of the median duration.
        admission: ``smallest`` or ``arrival`` (see above).
        delay: ω, seconds a clone waits for a slot at its input's cluster.
    """

    name = "dolly"
    params = {
        "budget": Field(0.05, "float", lo=0, hi=1, lo_open=True, doc="β: fraction of the "
                        "reachable slots extra copies may use"),
        "straggle_target": Field(0.05, "float", lo=0, hi=1, lo_open=True, doc="ε: acceptable "
                                 "probability that a cloned job straggles"),
        "max_clones": Field(3, "int", lo=1, hi=math.inf, doc="cap on the copies per task"),
        "small_tasks": Field(150, "int", lo=1, hi=math.inf, doc="largest task count of a job "
                             "that may be cloned"),
        "straggler_ratio": Field(1.5, "float", lo=1, hi=math.inf, doc="a copy straggles "
                                 "beyond this multiple of the median duration"),
        "admission": Field("smallest", "str", choices=ADMISSIONS, doc="order of the jobs "
                           "admitted at one boundary: smallest first or by arrival"),
        "delay": Field(3.0, "float", lo=0, hi=math.inf, doc="ω: seconds a clone waits for a "
                       "slot at its input's cluster"),
    }

    def __init__(self, budget: float = 0.05, straggle_target: float = 0.05,
                 max_clones: int = 3, small_tasks: int = 150, straggler_ratio: float = 1.5,
                 admission: str = "smallest", delay: float = 3.0):
        self.validate_params(budget=budget, straggle_target=straggle_target,
                             max_clones=max_clones, small_tasks=small_tasks,
                             straggler_ratio=straggler_ratio, admission=admission, delay=delay)
        self.budget, self.straggle_target, self.max_clones = budget, straggle_target, max_clones
        self.small_tasks, self.straggler_ratio = small_tasks, straggler_ratio
        self.admission, self.delay = admission, delay

    def prepare(self, view: SchedulerView, rng: np.random.Generator,
              model: PerformanceModel) -> None:
        """Clear admissions, reservations and waiting clones."""
        super().prepare(view, rng, model)
        n_jobs = len(view.job_arrival)
        self.n_tasks = np.diff(np.asarray(view.job_task_ptr)).astype(np.int64)
        self.copies = np.ones(n_jobs, dtype=np.int64)     # c of each job (1: not cloned)
        self._seen = np.zeros(n_jobs, dtype=bool)
        self._active = np.empty(0, dtype=np.int64)        # cloned jobs still alive
        self.reserved = 0
        n_t = len(view.task_work)
        self._want = np.zeros(n_t, dtype=np.int64)        # copies a waiting clone completes
        self._since = np.full(n_t, np.nan)                # when its clones began to wait
        self._pending = np.empty(0, dtype=np.int64)
        self.cloned_jobs = 0

    # -- budget --------------------------------------------------------------------------

    def capacity(self, view: SchedulerView) -> int:
        """Extra copies the budget allows now: ``floor(β × reachable slots)``."""
        return int(math.floor(self.budget * view.total_slots + 1e-9))

    def _active_tasks(self, view: SchedulerView) -> np.ndarray:
        ptr = view.job_task_ptr
        return concat_ranges(np.asarray(ptr)[self._active], np.asarray(ptr)[self._active + 1])

    def live_clones(self, view: SchedulerView) -> int:
        """Extra copies (beyond one per task) of the cloned jobs, live now."""
        if self._active.size == 0:
            return 0
        live = view.task_live[self._active_tasks(view)]
        return int(np.maximum(live - 1, 0).sum())

    def _admit(self, view: SchedulerView) -> None:
        """Release finished jobs' reservations and admit the jobs that just arrived."""
        alive = view.alive_jobs
        if self._active.size:
            gone = ~np.isin(self._active, alive)
            if gone.any():
                done = self._active[gone]
                self.reserved -= int(((self.copies[done] - 1) * self.n_tasks[done]).sum())
                self._active = self._active[~gone]
        new = alive[~self._seen[alive]]
        if new.size == 0:
            return
        self._seen[new] = True
        small = new[self.n_tasks[new] <= self.small_tasks]
        if small.size == 0 or view.total_slots == 0:
            return
        keys = (small, view.job_arrival[small])
        if self.admission == "smallest":
            keys = keys + (self.n_tasks[small],)
        small = small[np.lexsort(keys)]
        weight = np.where(view.reachable, view.cluster_slots, 0)
        p_type = straggle_probability(self.model.speed, weight, self.straggler_ratio)
        cap = self.capacity(view)
        ptr = np.asarray(view.job_task_ptr)
        admitted = []
        for job in small:
            p = p_type[view.task_type[ptr[job]:ptr[job + 1]]]
            c = clone_count(p, self.straggle_target, self.max_clones)
            need = (c - 1) * int(self.n_tasks[job])
            if c > 1 and self.reserved + need <= cap:
                self.copies[job] = c
                self.reserved += need
                admitted.append(job)
        if admitted:
            self._active = np.concatenate([self._active, np.asarray(admitted, dtype=np.int64)])
            self.cloned_jobs += len(admitted)

    # -- the Redundancy contract ---------------------------------------------------------

    def clones(self, view: SchedulerView, tasks: np.ndarray, pos: np.ndarray,
               jobs: np.ndarray) -> np.ndarray:
        """``c`` copies for the ready tasks of cloned jobs (budget and delay permitting)."""
        self._admit(view)
        out = np.ones(tasks.size, dtype=np.int64)
        if self._active.size == 0 or tasks.size == 0:
            return out
        want = self.copies[jobs][pos]
        idx = np.flatnonzero(want > 1)
        if idx.size == 0:
            return out
        extra = want[idx] - 1
        if self.delay > 0:
            extra = self._local_room(view, tasks, idx, extra)
        room = max(self.capacity(view) - self.live_clones(view), 0)
        extra = np.minimum(extra, np.maximum(room - (np.cumsum(extra) - extra), 0))
        out[idx] += extra
        if self.delay > 0:
            wait = idx[out[idx] < want[idx]]
            if wait.size:
                t = tasks[wait]
                self._want[t], self._since[t] = want[wait], view.time
                self._pending = np.union1d(self._pending, t)
        return out

    def _local_room(self, view: SchedulerView, tasks: np.ndarray, idx: np.ndarray,
                    extra: np.ndarray) -> np.ndarray:
        """Clones of ``tasks[idx]`` that fit now on the cluster holding most of their input.

        The copies placed before them at this boundary (every earlier task's first copy
        and launched clones, each counted at its task's home) take those slots first.
        """
        home = view.task_home[tasks]
        free = view.free_slots()
        order = np.argsort(home, kind="stable")
        before = np.empty(tasks.size, dtype=np.int64)
        h = home[order]
        start = np.maximum.accumulate(np.where(first_of_runs(h), np.arange(h.size), 0))
        before[order] = np.arange(h.size) - start
        used = np.zeros(view.n_clusters, dtype=np.int64)
        out = extra.copy()
        for j, i in enumerate(idx):
            c = home[i]
            if c < 0:
                continue
            fit = max(int(free[c] - before[i] - 1 - used[c]), 0)
            out[j] = min(int(extra[j]), fit)
            used[c] += out[j]
        return out

    def act(self, view: SchedulerView, actions: Actions, place: PlaceFn,
            free: np.ndarray) -> None:
        """Keep live clones within the budget and launch the clones that waited."""
        self._admit(view)
        cap = self.capacity(view)
        over = self.live_clones(view) - cap
        if over > 0:
            self._kill_youngest(view, actions, over)
        if self._pending.size:
            self._launch_waiting(view, actions, place, free, cap)

    def _kill_youngest(self, view: SchedulerView, actions: Actions, n: int) -> None:
        info = view.copy_info()
        mine = np.isin(info["job"], self._active)
        copy, task, start = info["copy"][mine], info["task"][mine], info["start"][mine]
        order = np.lexsort((copy, start, task))
        extra = order[~first_of_runs(task[order])]        # all but each task's oldest copy
        extra = extra[np.lexsort((-copy[extra], -start[extra]))][:n]
        actions.kill(copy[extra])

    def _launch_waiting(self, view: SchedulerView, actions: Actions, place: PlaceFn,
                        free: np.ndarray, cap: int) -> None:
        t = self._pending
        live = view.task_live[t]
        keep = (view.task_state[t] == RUNNING) & (live < self._want[t])
        self._want[t[~keep]] = 0
        self._pending = t = t[keep]
        room = cap - self.live_clones(view)
        now, done = view.time, np.zeros(t.size, dtype=bool)
        for j, task in enumerate(t):
            if room <= 0 or not free.any():
                break
            missing = min(int(self._want[task] - view.task_live[task]), room)
            home = int(view.task_home[task])
            if home >= 0 and free[home] > 0:
                n = min(missing, int(free[home]))
                free[home] -= n
                actions.launch_many(np.full(n, task), np.full(n, home))
            elif home < 0 or now - self._since[task] >= self.delay - 1e-9:
                c = place(np.full(missing, task))
                ok = c >= 0
                n = int(ok.sum())
                if n:
                    actions.launch_many(np.full(n, task), c[ok])
                if now - self._since[task] >= self.delay - 1e-9:
                    done[j] = True
            else:
                continue
            room -= n
            if view.task_live[task] >= self._want[task]:
                done[j] = True
        self._want[t[done]] = 0
        self._pending = t[~done]
