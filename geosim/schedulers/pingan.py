"""PingAn: insuring task copies across clusters (003 §4.1, Algorithm 1)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from geosim.modeler import (
    ESTIMATES,
    LEARN_FROM,
    PerformanceModel,
    _pairwise_sum,
    expected_max,
    expected_min,
)
from geosim.params import Field
from geosim.schedulers.base import Scheduler, register
from geosim.view import READY, RUNNING, Actions, SchedulerView

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
    floor: np.ndarray     # (T,) rate floor opt / (1 + ε)


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

    Expected rates come from :class:`~geosim.modeler.PerformanceModel`, which by default
    (``learn_from="winners"``, as 003 §3.1) learns from completed copies only. With
    ``estimate="mean-rate"`` (003 §3.2, eq. 6) a copy's rate is ``E[r(c)]`` and its time
    ``1 / E[r(c)]``; with ``"mean-time"`` every rate above, in scores, floors, gate
    demands, ``e`` and the resource-saving rule, is ``1 / E[T(c)]`` instead, ``T(c)`` the
    time of the task with its ``c`` copies (the mean of ``1 / rate``, not ``1`` over the
    mean rate). ``learn_from="all"`` also feeds the model with the copies that ended
    without winning: each one's progress over its running time, as last seen at a slot
    boundary (:meth:`~geosim.modeler.PerformanceModel.observe_ended`).

    Two documented simplifications: the transfer part of a copy's rate is the bottleneck
    ``min_s V^T_{s,m} / size_s`` over the distinct clusters ``s`` holding its inputs
    (``size_s`` the largest input from ``s``), which is how the engine runs parallel
    downloads (the paper averages bandwidths over input locations, undefined when some
    input is local); and exact expectations are computed for the ``candidates`` clusters
    with the highest upper bound ``min(E[V^P], E[V^T])`` (harmonic means with
    ``"mean-time"``) among reachable clusters and among clusters with a free slot (all
    clusters when ``2 · candidates >= n_clusters``). Copies of one task are independent draws, as in
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
        estimate: ``"mean-rate"`` (003 §3.2: time ``1 / E[rate]``) or ``"mean-time"``
            (``E[1 / rate]``); one of :data:`~geosim.modeler.ESTIMATES`.
        learn_from: ``"winners"`` (003: finished copies report) or ``"all"`` (killed and
            failed copies too); one of :data:`~geosim.modeler.LEARN_FROM`.
    """

    name = "pingan"
    description = "insurance: ε-fraction sharing, efficient-first then reliability-aware copies"
    params = {
        "epsilon": Field(0.6, "float", lo=0, hi=1, lo_open=True, hi_open=True,
                         doc="admitted fraction of the jobs; rate floor 1/(1+ε)"),
        "principle": Field("eff-reli", "str", doc="selection rule of rounds 1 and 2: "
                           f"{', '.join(PRINCIPLES)} (any case)"),
        "allocation": Field("efa", "str", doc="efa: every job's round 1 first; jga: each job "
                            "insured fully in turn (any case)"),
        "candidates": Field(8, "int", lo=1, hi=math.inf, doc="clusters per task whose rates are "
                            "computed exactly, per criterion"),
        "atoms": Field(16, "int", lo=2, hi=math.inf, doc="atoms per distribution of the model"),
        "min_samples": Field(5, "int", lo=1, hi=math.inf, doc="samples a distribution needs "
                             "before it replaces its fallback"),
        "prior_seconds": Field(600.0, "float", lo=0, hi=math.inf, doc="weight of the nominal "
                               "outage rate, in seconds of observation"),
        "refresh": Field(30.0, "float", lo=0, hi=math.inf, doc="seconds between refreshes of "
                         "the performance model"),
        "backfill": Field(False, "bool", doc="give slots the admitted jobs leave idle to the "
                          "other jobs (not in 003)"),
        "estimate": Field("mean-rate", "str", choices=ESTIMATES, doc="time of a copy: "
                          "1 / E[rate] or E[1 / rate]"),
        "learn_from": Field("winners", "str", choices=LEARN_FROM, doc="copies the model "
                            "learns from: winners, or all that ended"),
    }

    def __init__(self, epsilon: float = 0.6, principle: str = "eff-reli",
                 allocation: str = "efa", candidates: int = 8, atoms: int = 16,
                 min_samples: int = 5, prior_seconds: float = 600.0, refresh: float = 30.0,
                 backfill: bool = False, estimate: str = "mean-rate",
                 learn_from: str = "winners"):
        self.validate_params(epsilon=epsilon, principle=principle, allocation=allocation,
                             candidates=candidates, atoms=atoms, min_samples=min_samples,
                             prior_seconds=prior_seconds, refresh=refresh, backfill=backfill,
                             estimate=estimate, learn_from=learn_from)
        # Choices in any case (003 writes Eff-Reli), which a declaration's exact choices
        # do not express.
        for key, value, allowed in (("principle", principle, PRINCIPLES),
                                    ("allocation", allocation, ALLOCATIONS)):
            if value.lower() not in allowed:
                raise ValueError(f"{key} must be one of {', '.join(allowed)}, in any case "
                                 f"(got {value!r})")
        self.epsilon, self.principle, self.allocation = epsilon, principle, allocation
        self.candidates, self.atoms, self.min_samples = candidates, atoms, min_samples
        self.prior_seconds, self.refresh, self.backfill = prior_seconds, refresh, backfill
        self.estimate, self.learn_from = estimate, learn_from

    def reset(self, view: SchedulerView, rng: np.random.Generator) -> None:
        """Start a fresh performance model and empty gate reservations."""
        super().reset(view, rng)
        self.model = PerformanceModel(view.monitor, np.asarray(view.gate), view.dt,
                                      self.atoms, self.min_samples, self.prior_seconds,
                                      self.refresh, self.estimate, self.learn_from)
        self._mean_time = self.estimate == "mean-time"
        # learn_from = "all": the live copies at the last decision and their progress.
        self._seen = (np.empty(0, dtype=np.int64), np.empty(0), -np.inf)
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
        if self.learn_from == "all":
            self._observe_ended(view)
        refreshed = self.model.refresh(view.time)
        reach_changed = not np.array_equal(view.reachable, self._reachable)
        if view.n_ready == 0 or not (view.arrivals or view.completions or view.failures
                                     or reach_changed or refreshed):
            return
        self._reachable = view.reachable.copy()
        self._release(view)
        free = view.free_slots()
        n_free = int(free.sum())
        if n_free == 0:         # nothing can launch, backfill included
            return
        jobs, budget, rest = self._admit(view)
        # Ready tasks of the admitted jobs in job order, each job's first ``budget``.
        tasks, pos = _pick(jobs, budget, np.asarray(view.job_task_ptr, dtype=np.int64),
                           view.task_state, n_free)
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
        jobs = np.asarray(view.alive_jobs, dtype=np.int64)
        unprocessed = _unprocessed(jobs, np.asarray(view.job_task_ptr, dtype=np.int64),
                                   view.task_state, view.task_data)
        jobs = jobs[np.lexsort((jobs, unprocessed))]
        n_alive = jobs.size
        cut = math.ceil(self.epsilon * n_alive - 1e-9)
        jobs, rest = jobs[:cut], jobs[cut:]
        promise = math.ceil(view.total_slots / (self.epsilon * n_alive) - 1e-9)
        budget = promise - view.running_copies(jobs)     # live copies of each job
        keep = budget > 0
        return jobs[keep], budget[keep], rest

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

    def _observe_ended(self, view: SchedulerView) -> None:
        """Report the copies that ended without winning since the last decision.

        A copy's observed rate is its progress at the last decision it was live at, over
        the time it had run by then: exact times, at the cost of its last slot (a copy
        that ended within the slot it started in is not observed). A winner ends with
        progress 1 and is learned from by the monitor.
        """
        live = np.asarray(view.live_copies, dtype=np.int64)
        ids, progress, at = self._seen
        if ids.size:
            ended = _not_live(ids, live)
            if ended.any():
                info = view.copy_info(ids[ended])
                ran = at - info["start"]
                keep = (info["progress"] < 1.0) & (ran > 0)
                if keep.any():
                    tasks = info["task"][keep]
                    g_ptr, g_src, g_size = view.input_group_ptr(tasks)
                    rate = (progress[ended][keep] - info["base"][keep]) / ran[keep]
                    self.model.observe_ended(info["cluster"][keep], view.task_type[tasks],
                                             view.task_work[tasks], rate, g_ptr, g_src,
                                             g_size)
        self._seen = (live.copy(), view.copy_info(live)["progress"].copy(), view.time)

    # ------------------------------------------------------------------ estimates
    def _evaluate(self, view: SchedulerView, tasks: np.ndarray,
                  free: np.ndarray) -> _Candidates:
        """Expected rates of one copy of each task on its candidate clusters (``free``: slots)."""
        model, n = self.model, view.n_clusters
        # Input groups (as ``view.input_groups``): per task, per source cluster, the size
        # of its largest non-empty input there, sorted by task then source.
        g_ptr, g_src, g_size = view.input_group_ptr(tasks)
        types, work = view.task_type[tasks], view.task_work[tasks]
        reach = np.asarray(view.reachable)
        fits = free > 0
        m = self.candidates
        if 2 * m >= n:
            cand = np.broadcast_to(np.arange(n), (tasks.size, n)).copy()
        else:
            # Negated upper bounds over reachable clusters and over clusters with a slot:
            # of E[V] with mean rates, of 1 / E[T] with mean times (E[max] >= max E).
            speed_b, bw_b = ((model.speed_hmean, model.bandwidth_hmean) if self._mean_time
                             else (model.speed_mean, model.bandwidth_mean))
            neg_reach, neg_fits = _neg_bounds(speed_b, bw_b, types,
                                              work, g_ptr, g_src, g_size, reach, fits)
            cand = _top(neg_reach, m)
            if _any_unfit(cand, fits, reach):
                cand = np.concatenate([cand, _top(neg_fits, m)], axis=1)

        k = model.k
        rate = np.full(cand.shape, -np.inf)
        atoms = np.zeros(cand.shape + (k,))
        counts, rows_ptr, rows_all = _by_groups(g_ptr)
        for b in range(counts.size):
            rows = rows_all[rows_ptr[b]:rows_ptr[b + 1]]
            a = _rate_atoms(rows, cand, types, work, g_ptr, g_src, g_size, model.speed,
                            model.bandwidth, n, counts[b])
            mean, q = expected_min(a, quantiles=True)
            if self._mean_time:
                mean = model.copy_rate(a)
            rate[rows] = mean.reshape(rows.size, cand.shape[1])
            atoms[rows] = q.reshape(rows.size, cand.shape[1], k)
        # A copy pulls each remote input at its expected rate times the input's size.
        opt, din, dout = _flows(rate, cand, reach, g_ptr, g_src, g_size,
                                np.asarray(view.gate, dtype=float))
        has = np.flatnonzero(g_ptr[1:] > g_ptr[:-1])     # tasks with remote-capable inputs
        return _Candidates(cand, rate, atoms, opt, din, g_ptr, g_src, dout, has,
                           opt / (1.0 + self.epsilon))

    def _pro(self, fail: np.ndarray, rate: np.ndarray) -> np.ndarray:
        """Trouble-exemption probability ``(1 - fail)^(1 / (rate dt))`` (003 §3.2)."""
        slots = _slots(rate, self.model.dt)     # 1 / (rate dt), 0 where rate <= 0
        with np.errstate(divide="ignore", invalid="ignore"):
            pro = np.exp(np.log1p(-fail) * slots)
        return _zero_unless_positive(pro, rate)

    # ------------------------------------------------------------------ the rounds
    def _first_round(self, ev: _Candidates, rows: np.ndarray, job_pos: np.ndarray,
                     st: _State, plan: list) -> tuple[np.ndarray, np.ndarray]:
        """Round 1: at most one copy per task, by the first principle."""
        eff = ev.rate[rows]
        if self._first == "eff":
            score = eff
        else:
            score = self._pro(self.model.outage_probability[ev.cand[rows]], eff)
        pos, cols = self._round(ev, rows, job_pos, _order(score), ev.floor, st, plan)
        self.copies_by_round[0] += pos.size
        return rows[pos], cols

    def _insure(self, ev: _Candidates, rows: np.ndarray,
                job_pos: np.ndarray, st: _State, plan: list) -> None:
        """Rounds 1, 2, 3… of Algorithm 1 for the waiting tasks ``rows`` (in job order)."""
        rows1, col1 = self._first_round(ev, rows, job_pos, st, plan)
        if rows1.size == 0:
            return
        p = self.model.outage_probability
        floor = ev.floor
        c1 = ev.cand[rows1, col1]
        rate1 = ev.rate[rows1, col1]
        pro1 = self._pro(p[c1], rate1)
        order = np.lexsort((pro1, job_pos[rows1]))
        rows1, col1, c1, pro1, rate1 = (rows1[order], col1[order], c1[order], pro1[order],
                                        rate1[order])
        pairs = _pairs(ev.atoms, rows1, col1)
        r2 = (self.model.task_rate(pairs) if self._mean_time else expected_max(pairs)).reshape(
            rows1.size, ev.cand.shape[1])
        if self._second == "eff":
            score, base = r2, rate1
        else:
            score, base = self._pro(_pair_fail(p, ev.cand, rows1, c1), r2), pro1
        gain, order = _gain_order(score, base)
        pos, col2 = self._round(ev, rows1, job_pos, order, floor, st, plan, usable=gain)
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
        c = have.shape[1] + 1
        need = (c + 1) / c * before
        # E[max(Y, V)] <= E[Y] + E[(V - y)^+] for any y below every value of Y: only the
        # candidates passing this bound need the exact expectation.
        if self._mean_time:
            ti, ci, stacked = _saving_candidates_time(ev.atoms, rows, have, before, need)
        else:
            ti, ci, stacked = _saving_candidates(ev.atoms, rows, have, before, need)
        rc = np.full((rows.size, ev.cand.shape[1]), -np.inf)
        if ti.size:
            rc[ti, ci] = self.model.task_rate(stacked) if self._mean_time else \
                expected_max(stacked)
        gain, order = _gain_order(rc, need)
        if not gain.any():
            empty = np.empty(0, dtype=np.int64)
            return empty, empty, np.empty(0)
        pos, cols = self._round(ev, rows, job_pos, order, floor, st, plan, usable=gain)
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
        held = _hold(rows, cols, np.asarray(ids, dtype=np.int64), ev.cand, ev.din, ev.g_ptr,
                     ev.g_src, ev.dout, *self._held_in, *self._held_out)
        self._held_in, self._held_out = held[:3], held[3:]

    def _release(self, view: SchedulerView) -> None:
        """Return the gate bandwidth reserved by copies that have ended."""
        if self._held_in[0].size == 0:
            return
        kept = _unhold(np.asarray(view.live_copies), *self._held_in, *self._held_out,
                       self._res_in, self._res_out)
        if kept is not None:
            self._held_in, self._held_out = kept[:3], kept[3:]


@dataclass
class _State:
    """What a step's rounds consume: free slots, job promises and gate bandwidth."""

    free: np.ndarray
    budget: np.ndarray
    res_in: np.ndarray
    res_out: np.ndarray
    gate: np.ndarray


def _saving_candidates_time(atoms: np.ndarray, rows: np.ndarray, have: np.ndarray,
                            before: np.ndarray, need: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_saving_candidates` for mean times: ``before`` and ``need`` are ``1 / E[T]``.

    With ``T_Y`` the time of the held copies and ``y`` a value no ``T_Y`` exceeds (the
    smallest of their largest time atoms), ``min(T_Y, T_V) >= T_Y - (y - T_V)^+``, so
    ``E[T(c)] >= 1 / before - E[(y - T_V)^+]``: only candidates whose rate bound, the
    reciprocal (widened by 1e-9 against rounding), beats ``need`` are passed on (all of
    them when the bound is not positive).

    Returns:
        As :func:`_saving_candidates`.
    """
    k = atoms.shape[2]
    held = atoms[rows[:, None], have]                        # (n, h, K)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = 1.0 / held[:, :, 0].max(axis=1)                  # 1 / the largest slowest rate
        saved = np.maximum(y[:, None, None] - 1.0 / atoms[rows], 0.0).sum(axis=2) / k
        low = 1.0 / before[:, None] - saved                  # lower bound of E[T(c)]
        passes = ~(low > 0) | ((1.0 + 1e-9) / low > need[:, None])     # slack: rounding
    ti, ci = np.nonzero(passes)
    stacked = np.concatenate([held[ti], atoms[rows[ti], ci][:, None, :]], axis=1)
    return ti, ci, stacked


def _top(score: np.ndarray, m: int) -> np.ndarray:
    """Columns of the ``m`` lowest values of each row (any order)."""
    return np.argpartition(score, m - 1, axis=1)[:, :m]


# ---------------------------------------------------------------------- compiled kernels
# Each kernel does in one pass what a chain of small NumPy calls did, with the same
# floating-point operations in the same order (results are bit-identical): elementwise
# arithmetic, exact minima and maxima, and sums in NumPy's own order
# (``geosim.modeler._pairwise_sum``).


@njit(cache=True)
def _pick(jobs, budget, task_ptr, state, limit):  # pragma: no cover - compiled
    """Ready tasks of ``jobs`` in job order, at most ``budget[j]`` of job ``j``, ``limit`` in all.

    Returns:
        Task ids and the position in ``jobs`` of each one's job.
    """
    tasks = np.empty(max(limit, 0), dtype=np.int64)
    pos = np.empty(max(limit, 0), dtype=np.int64)
    n = 0
    for j in range(jobs.size):
        if n >= limit:
            break
        taken = 0
        for t in range(task_ptr[jobs[j]], task_ptr[jobs[j] + 1]):
            if n >= limit or taken >= budget[j]:
                break
            if state[t] == READY:
                tasks[n], pos[n] = t, j
                n += 1
                taken += 1
    return tasks[:n], pos[:n]


@njit(cache=True)
def _unprocessed(jobs, task_ptr, state, data):  # pragma: no cover - compiled
    """Input MB of each job's ready and running tasks, summed in task order from 0."""
    out = np.zeros(jobs.size)
    for j in range(jobs.size):
        acc = 0.0
        for t in range(task_ptr[jobs[j]], task_ptr[jobs[j] + 1]):
            if state[t] == READY or state[t] == RUNNING:
                acc += data[t]
        out[j] = acc
    return out


@njit(cache=True)
def _min(a, b):  # pragma: no cover - compiled
    """``numpy.minimum`` of two floats (NaN wins)."""
    return a if (a < b or a != a) else b


@njit(cache=True)
def _max(a, b):  # pragma: no cover - compiled
    """``numpy.maximum`` of two floats (NaN wins)."""
    return a if (a > b or a != a) else b


@njit(cache=True, error_model="numpy")
def _neg_bounds(speed_mean, bw_mean, types, work, g_ptr, g_src, g_size, reach,
                fits):  # pragma: no cover - compiled
    """Negated upper bound ``min(E[V^P] / work, min_s E[V^T_s] / size_s)`` per cluster.

    Returns:
        The bound negated where the cluster is reachable (``+inf`` elsewhere), and where
        it has a free slot.
    """
    n_tasks, n = types.size, speed_mean.shape[0]
    neg_reach = np.empty((n_tasks, n))
    neg_fits = np.empty((n_tasks, n))
    for i in range(n_tasks):
        for c in range(n):
            b = speed_mean[c, types[i]] / work[i]
            for g in range(g_ptr[i], g_ptr[i + 1]):
                tr = np.inf if g_src[g] == c else bw_mean[g_src[g], c] / g_size[g]
                b = _min(b, tr)
            neg_reach[i, c] = -b if reach[c] else np.inf
            neg_fits[i, c] = -b if fits[c] else np.inf
    return neg_reach, neg_fits


@njit(cache=True)
def _any_unfit(cand, fits, reach):  # pragma: no cover - compiled
    """Whether some reachable candidate has no free slot."""
    for i in range(cand.shape[0]):
        for j in range(cand.shape[1]):
            if reach[cand[i, j]] and not fits[cand[i, j]]:
                return True
    return False


@njit(cache=True)
def _by_groups(g_ptr):  # pragma: no cover - compiled
    """Tasks by number of input groups: the counts ascending, and each count's tasks.

    Returns:
        Distinct counts, where each count's tasks start, and the tasks (ascending within).
    """
    n = g_ptr.size - 1
    top = 0
    for i in range(n):
        top = max(top, g_ptr[i + 1] - g_ptr[i])
    per = np.zeros(top + 1, dtype=np.int64)
    for i in range(n):
        per[g_ptr[i + 1] - g_ptr[i]] += 1
    counts = np.flatnonzero(per)
    ptr = np.zeros(counts.size + 1, dtype=np.int64)
    at = np.zeros(top + 1, dtype=np.int64)
    for b in range(counts.size):
        at[counts[b]] = ptr[b]
        ptr[b + 1] = ptr[b] + per[counts[b]]
    rows = np.empty(n, dtype=np.int64)
    for i in range(n):
        r = g_ptr[i + 1] - g_ptr[i]
        rows[at[r]] = i
        at[r] += 1
    return counts, ptr, rows


@njit(cache=True, error_model="numpy")
def _rate_atoms(rows, cand, types, work, g_ptr, g_src, g_size, speed, bandwidth, n,
                r):  # pragma: no cover - compiled
    """Atoms of ``V^P / work`` and of each ``V^T_s / size_s`` for every (task, candidate).

    ``rows`` are tasks with ``r`` input groups each; a group on the candidate itself is
    absent (``+inf``). Shape ``(rows.size * M, 1 + r, K)``.
    """
    m, k = cand.shape[1], speed.shape[2]
    a = np.empty((rows.size * m, 1 + r, k))
    for x in range(rows.size):
        i = rows[x]
        for j in range(m):
            c = cand[i, j]
            row = x * m + j
            for q in range(k):
                a[row, 0, q] = speed[c, types[i], q] / work[i]
            for h in range(r):
                g = g_ptr[i] + h
                s = g_src[g]
                for q in range(k):
                    a[row, 1 + h, q] = (np.inf if s == c
                                        else bandwidth[s * n + c, q] / g_size[g])
    return a


@njit(cache=True)
def _flows(rate, cand, reach, g_ptr, g_src, g_size, gate):  # pragma: no cover - compiled
    """Mask unreachable candidates' rates (in place); the optimum and gate demands.

    A copy pulls each remote input group at its rate times the group's size, capped at
    the source's gate (``dout``); ``din`` is the sum over the task's groups as
    ``numpy.add.reduceat`` adds them (the first, plus the rest in pairwise order), capped
    at the candidate's gate.

    Returns:
        ``opt`` (best rate per task), ``din`` (T, M) and ``dout`` (G, M).
    """
    n_tasks, m = cand.shape
    opt = np.empty(n_tasks)
    din = np.zeros((n_tasks, m))
    dout = np.empty((g_src.size, m))
    buf = np.empty(max(g_ptr[n_tasks] - g_ptr[0], 1))
    for i in range(n_tasks):
        best = -np.inf
        for j in range(m):
            if not reach[cand[i, j]]:
                rate[i, j] = -np.inf
            best = rate[i, j] if j == 0 else _max(best, rate[i, j])
        opt[i] = best
        lo, hi = g_ptr[i], g_ptr[i + 1]
        for j in range(m):
            c = cand[i, j]
            pull = _max(rate[i, j], 0.0)
            for g in range(lo, hi):
                f = 0.0 if g_src[g] == c else pull * g_size[g]
                buf[g - lo] = f
                dout[g, j] = _min(f, gate[g_src[g]])
            if hi > lo:
                din[i, j] = buf[0] + _pairwise_sum(buf[1:], hi - lo - 1, hi - lo - 1)
            din[i, j] = _min(din[i, j], gate[c])
    return opt, din, dout


@njit(cache=True, error_model="numpy")
def _slots(rate, dt):  # pragma: no cover - compiled
    """Expected slots ``1 / (rate dt)`` of a copy where ``rate > 0``, else 0."""
    out = np.zeros(rate.shape)
    flat, res = rate.ravel(), out.ravel()
    for x in range(flat.size):
        if flat[x] > 0:
            res[x] = 1.0 / (flat[x] * dt)
    return out


@njit(cache=True)
def _zero_unless_positive(pro, rate):  # pragma: no cover - compiled
    """``pro`` where ``rate > 0``, else 0 (in place)."""
    flat, res = rate.ravel(), pro.ravel()
    for x in range(flat.size):
        if not flat[x] > 0:
            res[x] = 0.0
    return pro


@njit(cache=True)
def _before(a, b):  # pragma: no cover - compiled
    """Whether ``a`` sorts strictly before ``b`` in NumPy's order (NaN last)."""
    return a < b or (b != b and a == a)


@njit(cache=True)
def _order(score):  # pragma: no cover - compiled
    """``numpy.argsort(-score, axis=1, kind="stable")``: columns by descending score."""
    n, m = score.shape
    order = np.empty((n, m), dtype=np.int64)
    for i in range(n):
        for j in range(m):
            key = -score[i, j]
            at = j
            while at > 0 and _before(key, -score[i, order[i, at - 1]]):
                order[i, at] = order[i, at - 1]
                at -= 1
            order[i, at] = j
    return order


@njit(cache=True)
def _gain_order(score, base):  # pragma: no cover - compiled
    """Candidates whose score beats the task's ``base``, and columns by descending score.

    Returns:
        ``gain = score > base[:, None]`` and the stable order of
        ``where(gain, score, -inf)``, descending.
    """
    n, m = score.shape
    gain = np.empty((n, m), dtype=np.bool_)
    masked = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            gain[i, j] = score[i, j] > base[i]
            masked[i, j] = score[i, j] if gain[i, j] else -np.inf
    return gain, _order(masked)


@njit(cache=True)
def _pairs(atoms, rows, col):  # pragma: no cover - compiled
    """Atoms of (first copy, copy on candidate j) per task and candidate: ``(N * M, 2, K)``."""
    m, k = atoms.shape[1], atoms.shape[2]
    out = np.empty((rows.size * m, 2, k))
    for x in range(rows.size):
        for j in range(m):
            for q in range(k):
                out[x * m + j, 0, q] = atoms[rows[x], col[x], q]
                out[x * m + j, 1, q] = atoms[rows[x], j, q]
    return out


@njit(cache=True)
def _pair_fail(p, cand, rows, c1):  # pragma: no cover - compiled
    """Per-slot failure probability of two copies: ``p[c1]`` on one cluster, else the product."""
    m = cand.shape[1]
    fail = np.empty((rows.size, m))
    for x in range(rows.size):
        for j in range(m):
            c = cand[rows[x], j]
            fail[x, j] = p[c1[x]] if c == c1[x] else p[c1[x]] * p[c]
    return fail


@njit(cache=True)
def _saving_candidates(atoms, rows, have, before, need):  # pragma: no cover - compiled
    """Candidates whose bound on ``E[r(c)]`` beats ``need``, and their atoms with the held.

    The bound is ``before + mean((V - y)^+)`` with ``y`` the largest first atom of the
    held copies, the mean summed as NumPy sums the atoms (pairwise) and divided by K.

    Returns:
        Task positions and candidates passing (row-major), and ``(n, c, K)`` atoms of the
        held copies followed by the candidate.
    """
    n, m, k = rows.size, atoms.shape[1], atoms.shape[2]
    h = have.shape[1]
    ti = np.empty(n * m, dtype=np.int64)
    ci = np.empty(n * m, dtype=np.int64)
    buf = np.empty(k)
    count = 0
    for x in range(n):
        i = rows[x]
        y = atoms[i, have[x, 0], 0]
        for z in range(1, h):
            y = _max(y, atoms[i, have[x, z], 0])
        for j in range(m):
            for q in range(k):
                buf[q] = _max(atoms[i, j, q] - y, 0.0)
            bound = before[x] + (0.0 + _pairwise_sum(buf, k, k)) / k
            if bound > need[x]:
                ti[count], ci[count] = x, j
                count += 1
    stacked = np.empty((count, h + 1, k))
    for e in range(count):
        i = rows[ti[e]]
        for z in range(h):
            for q in range(k):
                stacked[e, z, q] = atoms[i, have[ti[e], z], q]
        for q in range(k):
            stacked[e, h, q] = atoms[i, ci[e], q]
    return ti[:count], ci[:count], stacked


@njit(cache=True)
def _hold(rows, cols, ids, cand, din, g_ptr, g_src, dout, in_copy, in_dst, in_need,
          out_copy, out_src, out_amount):  # pragma: no cover - compiled
    """Append the reservations of the launched remote copies (``din > 0``) to the held ones.

    Returns:
        The held ingress (copy, cluster, MB/s) and egress (copy, source, MB/s) arrays.
    """
    n_in, n_out = 0, 0
    for x in range(rows.size):
        if din[rows[x], cols[x]] > 0:
            n_in += 1
            n_out += g_ptr[rows[x] + 1] - g_ptr[rows[x]]
    a, b = in_copy.size, out_copy.size
    new_copy = np.empty(a + n_in, dtype=np.int64)
    new_dst = np.empty(a + n_in, dtype=np.int64)
    new_need = np.empty(a + n_in)
    new_copy[:a], new_dst[:a], new_need[:a] = in_copy, in_dst, in_need
    new_ocopy = np.empty(b + n_out, dtype=np.int64)
    new_src = np.empty(b + n_out, dtype=np.int64)
    new_amount = np.empty(b + n_out)
    new_ocopy[:b], new_src[:b], new_amount[:b] = out_copy, out_src, out_amount
    for x in range(rows.size):
        i, j = rows[x], cols[x]
        if not din[i, j] > 0:
            continue
        new_copy[a], new_dst[a], new_need[a] = ids[x], cand[i, j], din[i, j]
        a += 1
        for g in range(g_ptr[i], g_ptr[i + 1]):
            new_ocopy[b], new_src[b], new_amount[b] = ids[x], g_src[g], dout[g, j]
            b += 1
    return new_copy, new_dst, new_need, new_ocopy, new_src, new_amount


@njit(cache=True)
def _not_live(copies, live):  # pragma: no cover - compiled
    """Whether each of ``copies`` is missing from ``live`` (ascending).

    ``copies`` mostly ascend too (ids grow and removal keeps order): a merge walk, with a
    binary search wherever they do not.
    """
    out = np.empty(copies.size, dtype=np.bool_)
    at = 0
    for x in range(copies.size):
        if x > 0 and copies[x] < copies[x - 1]:
            at = np.searchsorted(live, copies[x])
        while at < live.size and live[at] < copies[x]:
            at += 1
        out[x] = not (at < live.size and live[at] == copies[x])
    return out


@njit(cache=True)
def _keep_held(copy, where, amount, ended, res):  # pragma: no cover - compiled
    """Give back to ``res`` what ended copies held; return the other holds' arrays."""
    keep = 0
    for x in range(copy.size):
        if ended[x]:
            res[where[x]] -= amount[x]
        else:
            keep += 1
    new_copy = np.empty(keep, dtype=np.int64)
    new_where = np.empty(keep, dtype=np.int64)
    new_amount = np.empty(keep)
    w = 0
    for x in range(copy.size):
        if not ended[x]:
            new_copy[w], new_where[w], new_amount[w] = copy[x], where[x], amount[x]
            w += 1
    return new_copy, new_where, new_amount


@njit(cache=True)
def _unhold(live, in_copy, in_dst, in_need, out_copy, out_src, out_amount, res_in,
            res_out):  # pragma: no cover - compiled
    """Subtract the reservations of ended copies (not in ``live``, ascending) in order.

    Returns:
        The held arrays that remain, as in :func:`_hold`, or None if no copy has ended.
    """
    ended = _not_live(in_copy, live)
    any_ended = False
    for x in range(in_copy.size):
        any_ended = any_ended or ended[x]
    if not any_ended:
        return None
    new_copy, new_dst, new_need = _keep_held(in_copy, in_dst, in_need, ended, res_in)
    # Every copy holding egress also holds ingress: it has ended if it is not live.
    new_ocopy, new_src, new_amount = _keep_held(out_copy, out_src, out_amount,
                                                _not_live(out_copy, live), res_out)
    if new_copy.size == 0:      # clear rounding residue
        res_in[:] = 0.0
        res_out[:] = 0.0
    return new_copy, new_dst, new_need, new_ocopy, new_src, new_amount


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
