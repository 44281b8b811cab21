"""PingAn: insuring task copies across clusters (003 §4.1, Algorithm 1)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from geosim.modeler import PerformanceModel, expected_max, expected_min
from geosim.schedulers.base import Scheduler, register
from geosim.view import (
    READY,
    RUNNING,
    Actions,
    SchedulerView,
    concat_ranges,
    rank_in_runs,
)

#: Insurance principles of rounds 1 and 2 (003 §6.3).
PRINCIPLES = ("eff-reli", "reli-eff", "eff-eff", "reli-reli")
#: Allocation of insurance among jobs (003 §4.1): efficient-first or job-greedy.
ALLOCATIONS = ("efa", "jga")


@dataclass
class _Candidates:
    """Per ready task: candidate clusters, the rate of one copy there, and input groups."""

    cand: np.ndarray      # (T, M) cluster ids
    rate: np.ndarray      # (T, M) E[r(1)] of one copy there (-inf: unreachable)
    atoms: np.ndarray     # (T, M, K) atoms of that copy's rate
    opt: np.ndarray       # (T,) best E[r(1)] over reachable clusters
    din: np.ndarray       # (T, M) expected ingress throughput a copy there reserves
    g_ptr: np.ndarray     # input groups (distinct source clusters) of task i: g_ptr[i]:g_ptr[i+1]
    g_src: np.ndarray     # (G,) source cluster of each group
    dout: np.ndarray      # (G, M) expected egress throughput reserved at the source
    has: np.ndarray       # tasks with at least one input group, ascending


@register
class PingAn(Scheduler):
    """PingAn's insurance algorithm (003 §4.1, Algorithm 1), run at every slot boundary.

    Jobs are sorted by the unprocessed data of their current stage (the input MB of
    their ready and running tasks), ascending; the first ``ceil(εN)`` of the ``N`` alive
    jobs are admitted, each promised ``h = ceil(M / (εN))`` of the ``M`` reachable slots;
    no job ever holds more than ``h`` slots. Waiting tasks of admitted jobs are then
    insured in rounds:

    1. **Efficiency-first** (``eff``): in job order, each waiting task gets at most one
       copy, on the cluster with the best expected rate ``E[r(1)] = E[min(V^P, V^T)]``
       among those with a free slot whose gates can carry its inputs (003 eq. 10–11:
       the expected transfer throughput of the copy's remote inputs, ``E[r(1)]`` times
       their size, must fit the spare ingress gate of the cluster and the spare egress
       gate of every source; a demand above a whole gate is capped at the gate, so an
       idle gate admits any copy), provided the rate is at
       least ``1/(1+ε)`` of the task's global optimum (its best rate over all reachable
       clusters, as if it ran alone). Otherwise the task waits. If no task got a copy,
       the step ends.
    2. **Reliability-aware** (``reli``): the tasks insured in round 1, in job order and
       by ascending trouble-exemption probability ``pro = (1 - p_m)^e`` (``e`` the
       expected execution time in slots), each get a second copy on the cluster that
       raises ``pro`` the most: another cluster multiplies the per-slot failure
       probabilities, the same cluster does not; ``e = 1 / E[r(2)]``. Same gate and
       rate-floor rules; a copy that does not raise ``pro`` is not made.
    3. **Resource-saving** (rounds 3 and later, while any copy is made): a task copied
       in the previous round gets its ``c``-th copy on the cluster with the best
       ``E[r(c)]`` only if ``E^{c-1}[e] > (c+1)/c · E^c[e]``.

    ``principle`` sets the cluster-selection rule of rounds 1 and 2 (003 §6.3:
    ``eff-reli`` is PingAn; ``reli-eff``, ``eff-eff`` and ``reli-reli`` are its
    ablations). Task order inside a round is that of Algorithm 1 whatever the
    principle. ``allocation`` is ``efa`` (all jobs' round 1 before anyone's round 2) or
    ``jga`` (each job's rounds 1, 2, 3… before the next job's).

    Expected rates come from :class:`~geosim.modeler.PerformanceModel`, which learns
    from completed copies only. Two documented simplifications: the transfer part of a
    copy's rate is the bottleneck ``min_s V^T_{s,m} / size_s`` over the distinct clusters
    ``s`` holding its inputs (``size_s`` the largest input from ``s``), which is how the
    engine runs parallel downloads (the paper averages bandwidths over input
    locations, undefined when some input is local); and exact expectations are computed
    for the ``candidates`` clusters with the highest upper bound ``min(E[V^P], E[V^T])``
    among reachable clusters and among clusters with a free slot (all clusters when
    ``2 · candidates >= n_clusters``). Copies of one task are independent draws, as in
    the paper. PingAn does not checkpoint: a copy lost to an outage restarts from zero.

    Args:
        epsilon: ε in (0, 1): the admitted fraction of jobs and the rate floor 1/(1+ε).
        principle: Selection rule of rounds 1 and 2, one of :data:`PRINCIPLES`.
        allocation: ``efa`` or ``jga``.
        candidates: Clusters per task whose rates are computed exactly, per criterion.
        atoms: Atoms per distribution in the performance model.
        min_samples: Samples a distribution needs before it replaces its fallback.
        prior_seconds: Weight of the nominal outage rate, in seconds of observation.
        refresh: Seconds between refreshes of the performance model.
        backfill: An extension, not in 003: give slots the admitted jobs leave idle to the
            other jobs' waiting tasks (round 1 only, in priority order), making the
            ε-admission work-conserving.
    """

    name = "pingan"
    description = "insurance: ε-fraction sharing, efficient-first then reliability-aware copies"

    def __init__(self, epsilon: float = 0.6, principle: str = "eff-reli",
                 allocation: str = "efa", candidates: int = 8, atoms: int = 16,
                 min_samples: int = 5, prior_seconds: float = 600.0, refresh: float = 30.0,
                 backfill: bool = False):
        if not isinstance(backfill, bool):
            raise ValueError(f"backfill must be true or false, got {backfill!r}")
        if not isinstance(epsilon, int | float) or not 0.0 < epsilon < 1.0:
            raise ValueError(f"epsilon must be in (0, 1), got {epsilon!r}")
        if str(principle).lower() not in PRINCIPLES:
            raise ValueError(f"principle must be one of {', '.join(PRINCIPLES)}, "
                             f"got {principle!r}")
        if str(allocation).lower() not in ALLOCATIONS:
            raise ValueError(f"allocation must be efa or jga, got {allocation!r}")
        for key, value, low in (("candidates", candidates, 1), ("atoms", atoms, 2),
                                ("min_samples", min_samples, 1)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"{key} must be an integer >= {low}, got {value!r}")
        for key, value in (("prior_seconds", prior_seconds), ("refresh", refresh)):
            if not isinstance(value, int | float) or value < 0:
                raise ValueError(f"{key} must be a number >= 0, got {value!r}")
        self.epsilon, self.principle, self.allocation = epsilon, principle, allocation
        self.candidates, self.atoms, self.min_samples = candidates, atoms, min_samples
        self.prior_seconds, self.refresh, self.backfill = prior_seconds, refresh, backfill

    def reset(self, view: SchedulerView, rng: np.random.Generator) -> None:
        """Start a fresh performance model and empty gate reservations."""
        super().reset(view, rng)
        self.model = PerformanceModel(view.monitor, np.asarray(view.gate), view.dt,
                                      self.atoms, self.min_samples, self.prior_seconds,
                                      self.refresh)
        self._first, self._second = self.principle.lower().split("-")
        self._gate = np.asarray(view.gate, dtype=float) * (1 + 1e-9)
        self._res_in = np.zeros(view.n_clusters)
        self._res_out = np.zeros(view.n_clusters)
        # Reservations of live copies: (copy, cluster, ingress MB/s) and, per input
        # group, (copy, source, egress MB/s).
        empty_i, empty_f = np.empty(0, dtype=np.int64), np.empty(0)
        self._held_in = (empty_i, empty_i, empty_f)
        self._held_out = (empty_i, empty_i, empty_f)
        self._reachable = view.reachable.copy()
        #: Copies made by round 1, round 2 and rounds >= 3, over the run.
        self.copies_by_round = np.zeros(3, dtype=np.int64)

    # ------------------------------------------------------------------ the step
    def decide(self, view: SchedulerView, actions: Actions) -> None:
        """Draw up and launch this slot's insurance plan."""
        refreshed = self.model.refresh(view.time)
        reach_changed = not np.array_equal(view.reachable, self._reachable)
        if view.n_ready == 0 or not (view.arrivals or view.completions or view.failures
                                     or reach_changed or refreshed):
            return
        self._reachable = view.reachable.copy()
        self._release(view)
        jobs, budget, rest = self._admit(view)
        free = view.free_slots()
        tasks, pos = view.ready_in_order(jobs)
        keep = rank_in_runs(pos) < budget[pos]
        tasks, pos = tasks[keep][: int(free.sum())], pos[keep][: int(free.sum())]
        state = _State(free, budget.copy(), self._res_in, self._res_out, self._gate)
        if tasks.size:
            ev = self._evaluate(view, tasks, free)
            plan: list = []     # (task indices, candidate indices) per round
            if self.allocation.lower() == "efa":
                self._insure(ev, np.arange(tasks.size), pos, state, plan)
            else:
                for j in np.unique(pos):
                    self._insure(ev, np.flatnonzero(pos == j), pos, state, plan)
            self._launch(actions, tasks, ev, plan)
        if self.backfill and rest.size and free.sum() > 0:
            self._backfill(view, actions, rest, state)

    def _admit(self, view: SchedulerView) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Admitted jobs in priority order, the slots each may still take, the other jobs."""
        jobs = view.alive_jobs
        tasks, pos = view.tasks_of(jobs)
        state = view.task_state[tasks]
        current = (state == READY) | (state == RUNNING)
        unprocessed = np.bincount(pos[current], weights=view.task_data[tasks[current]],
                                  minlength=jobs.size)
        jobs = jobs[np.lexsort((jobs, unprocessed))]
        n_alive = jobs.size
        cut = math.ceil(self.epsilon * n_alive - 1e-9)
        jobs, rest = jobs[:cut], jobs[cut:]
        promise = math.ceil(view.total_slots / (self.epsilon * n_alive) - 1e-9)
        held = np.bincount(view.copy_info()["job"], minlength=len(view.job_arrival))[jobs]
        budget = promise - held
        return jobs[budget > 0], budget[budget > 0], rest

    def _backfill(self, view: SchedulerView, actions: Actions, jobs: np.ndarray,
                  st: _State) -> None:
        """Round 1 for the jobs outside the admitted fraction, on the slots left over."""
        tasks, pos = view.ready_in_order(jobs)
        tasks, pos = tasks[: int(st.free.sum())], pos[: int(st.free.sum())]
        if tasks.size == 0:
            return
        ev = self._evaluate(view, tasks, st.free)
        st.budget = np.full(jobs.size, tasks.size)
        plan: list = []
        self._first_round(ev, np.arange(tasks.size), pos, st, plan)
        self._launch(actions, tasks, ev, plan)

    # ------------------------------------------------------------------ estimates
    def _evaluate(self, view: SchedulerView, tasks: np.ndarray,
                  free: np.ndarray) -> _Candidates:
        """Expected rates of one copy of each task on its candidate clusters (``free``: slots)."""
        model, n = self.model, view.n_clusters
        g_task, g_src, g_size = view.input_groups(tasks)
        g_ptr = np.searchsorted(g_task, np.arange(tasks.size + 1))
        has = np.flatnonzero(np.diff(g_ptr) > 0)        # tasks with remote-capable inputs
        types, work = view.task_type[tasks], view.task_work[tasks]

        bound = model.speed_mean[:, types].T / work[:, None]
        if g_task.size:
            trans = model.bandwidth_mean[g_src] / g_size[:, None]
            trans[np.arange(g_task.size), g_src] = np.inf
            bound[has] = np.minimum(bound[has], np.minimum.reduceat(trans, g_ptr[has]))
        reach = view.reachable
        m = self.candidates
        if 2 * m >= n:
            cand = np.broadcast_to(np.arange(n), (tasks.size, n)).copy()
        else:
            fits = free > 0
            cand = _top(np.where(reach, bound, -np.inf), m)
            if not np.all(fits[cand] | ~reach[cand]):
                cand = np.concatenate([cand, _top(np.where(fits, bound, -np.inf), m)], axis=1)

        k = model.k
        rate = np.full(cand.shape, -np.inf)
        atoms = np.zeros(cand.shape + (k,))
        n_groups = np.diff(g_ptr)
        for r in np.unique(n_groups):
            rows = np.flatnonzero(n_groups == r)
            cb = cand[rows]
            a = np.full(cb.shape + (1 + r, k), np.inf)
            a[:, :, 0, :] = model.speed[cb, types[rows][:, None]] / work[rows][:, None, None]
            if r:
                gi = g_ptr[rows][:, None] + np.arange(r)
                s = g_src[gi]
                bw = model.bandwidth[s[:, None, :] * n + cb[:, :, None]]
                bw = bw / g_size[gi][:, None, :, None]
                a[:, :, 1:, :] = np.where((s[:, None, :] == cb[:, :, None])[..., None],
                                          np.inf, bw)
            mean, q = expected_min(a.reshape(-1, 1 + r, k), quantiles=True)
            rate[rows] = mean.reshape(cb.shape)
            atoms[rows] = q.reshape(cb.shape + (k,))
        rate = np.where(reach[cand], rate, -np.inf)
        opt = rate.max(axis=1)

        # A copy pulls each remote input at its expected rate times the input's size.
        flow = np.maximum(rate, 0.0)[g_task] * g_size[:, None]
        flow[g_src[:, None] == cand[g_task]] = 0.0
        gate = np.asarray(view.gate, dtype=float)
        dout = np.minimum(flow, gate[g_src][:, None])
        din = np.zeros(cand.shape)
        if has.size:
            din[has] = np.add.reduceat(flow, g_ptr[has])
        din = np.minimum(din, gate[cand])
        return _Candidates(cand, rate, atoms, opt, din, g_ptr, g_src, dout, has)

    def _pro(self, fail: np.ndarray, rate: np.ndarray) -> np.ndarray:
        """Trouble-exemption probability ``(1 - fail)^(1 / (rate dt))`` (003 §3.2)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            slots = np.where(rate > 0, 1.0 / (rate * self.model.dt), np.inf)
            return np.where(rate > 0, np.exp(np.log1p(-fail) * slots), 0.0)

    # ------------------------------------------------------------------ the rounds
    def _first_round(self, ev: _Candidates, rows: np.ndarray, job_pos: np.ndarray,
                     st: _State, plan: list) -> tuple[np.ndarray, np.ndarray]:
        """Round 1: at most one copy per task, by the first principle."""
        eff = ev.rate[rows]
        if self._first == "eff":
            score = eff
        else:
            score = self._pro(self.model.outage_probability[ev.cand[rows]], eff)
        pos, cols = self._round(ev, rows, job_pos, np.argsort(-score, axis=1, kind="stable"),
                                ev.opt / (1.0 + self.epsilon), st, plan)
        self.copies_by_round[0] += pos.size
        return rows[pos], cols

    def _insure(self, ev: _Candidates, rows: np.ndarray,
                job_pos: np.ndarray, st: _State, plan: list) -> None:
        """Rounds 1, 2, 3… of Algorithm 1 for the waiting tasks ``rows`` (in job order)."""
        rows1, col1 = self._first_round(ev, rows, job_pos, st, plan)
        if rows1.size == 0:
            return
        p = self.model.outage_probability
        floor = ev.opt / (1.0 + self.epsilon)
        c1 = ev.cand[rows1, col1]
        pro1 = self._pro(p[c1], ev.rate[rows1, col1])
        order = np.lexsort((pro1, job_pos[rows1]))
        rows1, col1, c1, pro1 = rows1[order], col1[order], c1[order], pro1[order]
        m, k = ev.cand.shape[1], ev.atoms.shape[2]
        pair = np.stack([np.broadcast_to(ev.atoms[rows1, col1][:, None], (rows1.size, m, k)),
                         ev.atoms[rows1]], axis=2)
        r2 = expected_max(pair.reshape(-1, 2, k)).reshape(rows1.size, m)
        cand = ev.cand[rows1]
        fail = np.where(cand == c1[:, None], p[c1][:, None], p[c1][:, None] * p[cand])
        pro2 = self._pro(fail, r2)
        if self._second == "eff":
            score, gain = r2, r2 > ev.rate[rows1, col1][:, None]
        else:
            score, gain = pro2, pro2 > pro1[:, None]
        score = np.where(gain, score, -np.inf)
        pos, col2 = self._round(ev, rows1, job_pos, np.argsort(-score, axis=1, kind="stable"),
                                floor, st, plan, usable=gain)
        self.copies_by_round[1] += pos.size
        # Tasks copied in the last round, the candidates they hold, and E[r(c)].
        rows_c = rows1[pos]
        have = np.stack([col1[pos], col2], axis=1)
        speed = r2[pos, col2]
        while rows_c.size:
            pos, col, speed = self._saving_round(ev, rows_c, have, speed, job_pos, floor, st,
                                                 plan)
            self.copies_by_round[2] += pos.size
            rows_c, have = rows_c[pos], np.column_stack([have[pos], col])

    def _saving_round(self, ev: _Candidates, rows: np.ndarray, have: np.ndarray,
                      before: np.ndarray, job_pos: np.ndarray, floor: np.ndarray,
                      st: _State, plan: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One resource-saving round (003 §4.1): the c-th copy only if it saves time and slots.

        Args:
            ev: The step's candidates.
            rows: Tasks copied in the previous round.
            have: Candidate indices of each task's ``c - 1`` copies.
            before: ``E[r(c-1)]`` of each task.
            job_pos: Job position of every task.
            floor: Rate floor of every task.
            st: Resources left this step.
            plan: Where the copies are appended.

        Returns:
            Positions in ``rows`` of the tasks copied, their new candidates and ``E[r(c)]``.
        """
        m = ev.cand.shape[1]
        c = have.shape[1] + 1
        held = ev.atoms[rows[:, None], have]                          # (N, c-1, K)
        need = (c + 1) / c * before
        # E[max(Y, V)] <= E[Y] + E[(V - y)^+] for any y below every value of Y: only the
        # candidates passing this bound need the exact expectation.
        floor_y = held[:, :, 0].max(axis=1)
        bound = before[:, None] + np.maximum(ev.atoms[rows] - floor_y[:, None, None],
                                             0.0).mean(axis=2)
        ti, ci = np.nonzero(bound > need[:, None])
        rc = np.full((rows.size, m), -np.inf)
        if ti.size:
            stacked = np.concatenate([held[ti], ev.atoms[rows[ti], ci][:, None, :]], axis=1)
            rc[ti, ci] = expected_max(stacked)
        gain = rc > need[:, None]
        if not gain.any():
            empty = np.empty(0, dtype=np.int64)
            return empty, empty, np.empty(0)
        pos, cols = self._round(ev, rows, job_pos,
                                np.argsort(-np.where(gain, rc, -np.inf), axis=1, kind="stable"),
                                floor, st, plan, usable=gain)
        return pos, cols, rc[pos, cols]

    def _round(self, ev: _Candidates, rows: np.ndarray, job_pos: np.ndarray,
               order: np.ndarray, floor: np.ndarray, st: _State, plan: list,
               usable: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Give each task of ``rows`` at most one copy, trying candidates in ``order``.

        Tasks are served one after another: a task takes its first candidate that is
        usable, whose own rate meets the task's floor, whose cluster has a free slot,
        whose gates can carry the copy's inputs, and only while its job is within its
        promise. The resources it takes are gone for the tasks after it.

        Returns:
            Positions in ``rows`` of the tasks that got a copy, and the candidate of each;
            the copies are also appended to ``plan`` as (task indices, candidates).
        """
        if rows.size == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        if usable is None:
            usable = np.ones(order.shape, dtype=bool)
        pos, cols = _serve(rows, order, usable, floor, ev.rate, ev.cand, ev.din, ev.g_ptr,
                           ev.g_src, ev.dout, job_pos, st.budget, st.free, st.res_in,
                           st.res_out, st.gate)
        plan.append((rows[pos], cols))
        return pos, cols

    # ------------------------------------------------------------------ bookkeeping
    def _launch(self, actions: Actions, tasks: np.ndarray, ev: _Candidates,
                plan: list[tuple[np.ndarray, np.ndarray]]) -> None:
        """Launch the planned copies and record the gate bandwidth each reserves."""
        if not plan:
            return
        rows = np.concatenate([r for r, _ in plan])
        cols = np.concatenate([c for _, c in plan])
        if rows.size == 0:
            return
        ids = actions.launch_many(tasks[rows], ev.cand[rows, cols])
        remote = ev.din[rows, cols] > 0
        rows, cols, ids = rows[remote], cols[remote], ids[remote]
        count = ev.g_ptr[rows + 1] - ev.g_ptr[rows]
        g = concat_ranges(ev.g_ptr[rows], ev.g_ptr[rows + 1])
        self._held_in = tuple(np.concatenate([old, new]) for old, new in zip(
            self._held_in, (ids, ev.cand[rows, cols], ev.din[rows, cols]), strict=True))
        self._held_out = tuple(np.concatenate([old, new]) for old, new in zip(
            self._held_out, (np.repeat(ids, count), ev.g_src[g],
                             ev.dout[g, np.repeat(cols, count)]), strict=True))

    def _release(self, view: SchedulerView) -> None:
        """Return the gate bandwidth reserved by copies that have ended."""
        copy, dst, need = self._held_in
        if copy.size == 0:
            return
        live = view.live_copies        # ascending: ids grow and removal keeps order
        at = np.minimum(np.searchsorted(live, copy), max(live.size - 1, 0))
        ended = (live[at] != copy) if live.size else np.ones(copy.size, dtype=bool)
        if not ended.any():
            return
        np.subtract.at(self._res_in, dst[ended], need[ended])
        self._held_in = tuple(a[~ended] for a in self._held_in)
        out_copy, src, amount = self._held_out
        # Every copy holding egress also holds ingress: it has ended if it is not live.
        at = np.minimum(np.searchsorted(live, out_copy), max(live.size - 1, 0))
        gone = (live[at] != out_copy) if live.size else np.ones(out_copy.size, dtype=bool)
        np.subtract.at(self._res_out, src[gone], amount[gone])
        self._held_out = tuple(a[~gone] for a in self._held_out)
        if self._held_in[0].size == 0:      # clear rounding residue
            self._res_in[:] = 0.0
            self._res_out[:] = 0.0


@dataclass
class _State:
    """What a step's rounds consume: free slots, job promises and gate bandwidth."""

    free: np.ndarray
    budget: np.ndarray
    res_in: np.ndarray
    res_out: np.ndarray
    gate: np.ndarray


def _top(score: np.ndarray, m: int) -> np.ndarray:
    """Columns of the ``m`` highest scores of each row (any order)."""
    return np.argpartition(-score, m - 1, axis=1)[:, :m]


@njit(cache=True)
def _serve(rows, order, usable, floor, rate, cand, din, g_ptr, g_src, dout, job_pos,
           budget, free, res_in, res_out, gate):  # pragma: no cover - compiled
    """The sequential rule of :meth:`PingAn._round`, consuming ``budget``, ``free`` and gates.

    Returns:
        Positions in ``rows`` of the tasks served and the candidate each took.
    """
    pos = np.empty(rows.size, dtype=np.int64)
    cols = np.empty(rows.size, dtype=np.int64)
    n_out = 0
    for n in range(rows.size):
        i = rows[n]
        job = job_pos[i]
        if budget[job] <= 0:
            continue
        lo, hi = g_ptr[i], g_ptr[i + 1]
        for j in range(order.shape[1]):
            col = order[n, j]
            if not usable[n, col] or not rate[i, col] >= floor[i]:
                continue
            c = cand[i, col]
            if free[c] <= 0 or res_in[c] + din[i, col] > gate[c]:
                continue
            fits = True
            for g in range(lo, hi):
                if res_out[g_src[g]] + dout[g, col] > gate[g_src[g]]:
                    fits = False
                    break
            if not fits:
                continue
            free[c] -= 1
            budget[job] -= 1
            res_in[c] += din[i, col]
            for g in range(lo, hi):
                res_out[g_src[g]] += dout[g, col]
            pos[n_out], cols[n_out] = n, col
            n_out += 1
            break
    return pos[:n_out], cols[:n_out]
