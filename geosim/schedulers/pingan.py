"""PingAn: insuring task copies across clusters (003 §4.1, Algorithm 1)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit, objmode

from geosim.distributions import (
    expected_min,
    merge_row,
    pairwise_sum,
    row_mean,
    row_quantiles,
    survival_steps,
    thresholds,
)
from geosim.modeler import ESTIMATES, LEARN_FROM, PerformanceModel
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
    atoms: np.ndarray     # (T, M, K) quantile atoms of that copy's rate (see ``filled``)
    opt: np.ndarray       # (T,) best E[r(1)] over reachable clusters
    din: np.ndarray       # (T, M) expected ingress throughput a copy there reserves
    g_ptr: np.ndarray     # input groups (distinct source clusters) of task i: g_ptr[i]:g_ptr[i+1]
    g_src: np.ndarray     # (G,) source cluster of each group
    dout: np.ndarray      # (G, M) expected egress throughput reserved at the source
    floor: np.ndarray     # (T,) rate floor opt / (1 + ε)
    # With mean rates, a task's ``atoms`` are filled in when first needed (only tasks
    # given a copy in round 1 need them, on the candidates a round may take):
    # whether each task's are (all, with mean times), and the arguments ``slots`` to
    # ``thresholds`` of :func:`_fill_quantiles` that fill them in.
    filled: np.ndarray
    source: tuple


class _Plan:
    """The copies a step plans, in the order its rounds make them.

    Args:
        capacity: The most copies the step can make (its free slots).

    Attributes:
        rows: Task index (in the step's tasks) of each copy.
        cols: Candidate index of each copy.
        n: Copies so far (one entry).
    """

    def __init__(self, capacity: int):
        self.rows = np.empty(capacity, dtype=np.int64)
        self.cols = np.empty(capacity, dtype=np.int64)
        self.n = np.zeros(1, dtype=np.int64)


#: Empty arguments of compiled kernels (no scores, values, indices or quantile source).
_NO_SCORE = np.empty((0, 0))
_NO_VALUES = np.empty(0)
_NO_INDEX = np.empty(0, dtype=np.int64)
_NO_SOURCE = (_NO_INDEX, _NO_INDEX, _NO_INDEX, np.empty((0, 0), dtype=np.int64),
              np.empty((0, 0), dtype=np.int64), _NO_VALUES, _NO_VALUES, _NO_VALUES)


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
        # group, (copy, source, egress MB/s); the first ``_n_held`` entries of each.
        self._held = _held_arrays(64, 256)
        self._n_held = np.zeros(2, dtype=np.int64)
        self._reachable = view.reachable.copy()
        self._total_slots = view.total_slots
        self._gate_mb = np.asarray(view.gate, dtype=float)
        self._rows = _RowCache(view.task_state.size, view.n_clusters, self.candidates)
        self._reach_epoch = 0
        self._logs_version = -1
        #: Copies made by round 1, round 2 and rounds >= 3, over the run.
        self.copies_by_round = np.zeros(3, dtype=np.int64)

    # ------------------------------------------------------------------ the step
    def decide(self, view: SchedulerView, actions: Actions) -> None:
        """Draw up and launch this slot's insurance plan."""
        if self.learn_from == "all":
            self._observe_ended(view)
        refreshed = self.model.refresh(view.time)
        reach = view.reachable
        reach_changed = not np.array_equal(reach, self._reachable)
        if view.n_ready == 0 or not (view.arrivals or view.completions or view.failures
                                     or reach_changed or refreshed):
            return
        if reach_changed:
            self._reachable = reach.copy()
            self._total_slots = view.total_slots
            self._reach_epoch += 1
        self._release(view)
        free = view.free_slots()
        n_free = int(free.sum())
        if n_free == 0:         # nothing can launch, backfill included
            return
        # Ready tasks of the admitted jobs in job order, each job's first ``budget``.
        budget, rest, tasks, pos = self._admit(view, n_free)
        state = _State(free, budget, self._res_in, self._res_out, self._gate)
        if tasks.size:
            ev = self._evaluate(view, tasks, free)
            plan = _Plan(n_free)
            if self.allocation.lower() == "efa":
                self._insure(ev, np.arange(tasks.size), pos, state, plan)
            else:
                for j in np.unique(pos):
                    self._insure(ev, np.flatnonzero(pos == j), pos, state, plan)
            self._launch(actions, tasks, ev, plan)
        if self.backfill and rest.size and free.sum() > 0:
            self._backfill(view, actions, rest, state)

    def _admit(self, view: SchedulerView, n_free: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The slots each admitted job may still take, and the jobs not admitted.

        Jobs are admitted in priority order; those with no slot left are dropped.

        Returns:
            Those two, then the ready tasks the step considers: each admitted job's first
            ``budget``, in job order, ``n_free`` in all (:func:`_pick`), and the position
            of each one's job among the admitted (the budget's index).
        """
        alive = np.asarray(view.alive_jobs, dtype=np.int64)
        n_alive = alive.size
        cut = math.ceil(self.epsilon * n_alive - 1e-9)
        promise = math.ceil(self._total_slots / (self.epsilon * n_alive) - 1e-9)
        return _admit_pick(alive, view.running_copies(alive),
                           np.asarray(view.job_task_ptr, dtype=np.int64), view.task_state,
                           view.task_data, cut, promise, n_free)

    def _backfill(self, view: SchedulerView, actions: Actions, jobs: np.ndarray,
                  st: _State) -> None:
        """Round 1 for the jobs outside the admitted fraction, on the slots left over."""
        tasks, pos = view.ready_in_order(jobs)
        tasks, pos = tasks[: int(st.free.sum())], pos[: int(st.free.sum())]
        if tasks.size == 0:
            return
        ev = self._evaluate(view, tasks, st.free)
        st.budget = np.full(jobs.size, tasks.size)
        plan = _Plan(int(st.free.sum()))
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
        reach = np.asarray(view.reachable)
        task_type, task_work = view.task_type, view.task_work
        m = self.candidates
        # Candidates: all clusters, or those with the ``m`` lowest negated upper bounds over
        # reachable clusters, then (if one of these has no free slot) over clusters with
        # a slot: of E[V] with mean rates, of 1 / E[T] with mean times (E[max] >= max E).
        if not self._mean_time:
            # Entries of the tasks kept between refreshes, with their candidates (those
            # among the reachable clusters kept too).
            slots, cand = self._rows.lookup(model.version, self._reach_epoch, tasks, g_ptr,
                                            g_src, g_size, task_type, task_work,
                                            model.speed_mean, model.bandwidth_mean, reach,
                                            free, 2 * m < n)
        if 2 * m >= n:
            cand = np.broadcast_to(np.arange(n), (tasks.size, n)).copy()
        elif self._mean_time:
            speed_b, bw_b = model.speed_hmean, model.bandwidth_hmean
            every = np.arange(tasks.size)
            cand = _top(_neg_bounds(speed_b, bw_b, every, tasks, task_type, task_work, g_ptr,
                                    g_src, g_size, reach), m)
            if _any_unfit(cand, free, reach):
                cand = np.concatenate([cand, _top(_neg_bounds(
                    speed_b, bw_b, every, tasks, task_type, task_work, g_ptr, g_src, g_size,
                    free > 0), m)], axis=1)
        if self._mean_time:
            types, work = task_type[tasks], task_work[tasks]
            k = model.k
            rate = np.full(cand.shape, -np.inf)
            atoms = np.zeros(cand.shape + (k,))
            counts, rows_ptr, rows_all = _by_groups(g_ptr)
            for b in range(counts.size):
                rows = rows_all[rows_ptr[b]:rows_ptr[b + 1]]
                a = _rate_atoms(rows, cand, types, work, g_ptr, g_src, g_size, model.speed,
                                model.bandwidth, n, counts[b])
                q = expected_min(a, quantiles=True)[1]
                rate[rows] = model.copy_rate(a).reshape(rows.size, cand.shape[1])
                atoms[rows] = q.reshape(rows.size, cand.shape[1], k)
            # A copy pulls each remote input at its expected rate times the input's size.
            opt, din, dout = _flows(rate, cand, reach, g_ptr, g_src, g_size, self._gate_mb)
            return _Candidates(cand, rate, atoms, opt, din, g_ptr, g_src, dout,
                               opt / (1.0 + self.epsilon), np.ones(tasks.size, dtype=np.bool_),
                               _NO_SOURCE)
        # expected_min of each group count's rows (the rows kept between refreshes), and
        # the flows as above.
        rate, opt, din, dout, floor, source = self._rows.rates(
            model, slots, tasks, cand, task_type, task_work, g_ptr, g_src, g_size, reach,
            self._gate_mb, 1.0 + self.epsilon)
        return _Candidates(cand, rate, np.empty(cand.shape + (model.k,)), opt, din, g_ptr,
                           g_src, dout, floor, np.zeros(tasks.size, dtype=np.bool_), source)

    def _logs(self) -> tuple[np.ndarray, np.ndarray]:
        """``log1p(-p)`` per cluster and ``log1p(-p_a p_b)`` per pair of clusters.

        ``p`` are the per-slot failure probabilities of the model's current version. The
        trouble-exemption probability of a copy (003 §3.2) is ``(1 - fail)^e``, ``e``
        its expected slots, computed as ``exp(log1p(-fail) e)`` with ``fail`` one
        cluster's ``p`` or, for two copies on different clusters, the product of theirs.
        """
        if self._logs_version != self.model.version:
            p = self.model.outage_probability
            with np.errstate(divide="ignore", invalid="ignore"):
                self._log1 = np.log1p(-p)
                self._log2 = np.log1p(-(p[:, None] * p[None, :]))
            self._logs_version = self.model.version
        return self._log1, self._log2

    # ------------------------------------------------------------------ the rounds
    def _first_round(self, ev: _Candidates, rows: np.ndarray, job_pos: np.ndarray,
                     st: _State, plan: _Plan) -> tuple[np.ndarray, np.ndarray]:
        """Round 1: at most one copy per task, by the first principle.

        Returns:
            The tasks given a copy (in the order of ``rows``) and the candidate of each.
        """
        pro = _NO_SCORE
        if self._first != "eff":
            pro = np.exp(_keep_exponents(rows, ev.cand, ev.rate, self._logs()[0],
                                         self.model.dt))
        return _round_one(rows, pro, ev.rate, ev.floor, ev.cand, ev.din, ev.g_ptr, ev.g_src,
                          ev.dout, job_pos, st.budget, st.free, st.res_in, st.res_out,
                          st.gate, plan.rows, plan.cols, plan.n, self.copies_by_round)

    def _insure(self, ev: _Candidates, rows: np.ndarray,
                job_pos: np.ndarray, st: _State, plan: _Plan) -> None:
        """Rounds 1, 2, 3… of Algorithm 1 for the waiting tasks ``rows`` (in job order).

        Round 1 (:meth:`_first_round`). Round 2: the tasks given a copy, in job order and
        by ascending trouble-exemption probability ``pro1``, each get at most a second
        copy: by ``E[r(2)]`` (``eff``), or by the ``pro`` of both copies (``reli``), only
        where it beats the first copy's. Rounds 3 and later (:func:`_saving_serve`):
        the tasks copied in the previous round, while any copy is made. With mean rates
        the kernels below run in one compiled call (:func:`_insure_rates`); with mean
        times, ``E[r(c)]`` comes from the model between them.
        """
        log1, log2 = self._logs()
        k, m = ev.atoms.shape[2], ev.cand.shape[1]
        if not self._mean_time:     # the same steps, in one compiled call
            _insure_rates(rows, self._first != "eff", self._second != "eff", ev.rate,
                          ev.floor, ev.cand, ev.din, ev.g_ptr, ev.g_src, ev.dout, job_pos,
                          st.budget, st.free, st.res_in, st.res_out, st.gate, plan.rows,
                          plan.cols, plan.n, self.copies_by_round, ev.atoms, ev.filled,
                          *ev.source, log1, log2, self.model.dt, survival_steps(1, k))
            return
        rows1, col1 = self._first_round(ev, rows, job_pos, st, plan)
        if rows1.size == 0:
            return
        # pro1's exponents, and their exp.
        ex, v, ptr, xs, js = _second_prep(
            rows1, col1, ev.cand, ev.rate, ev.floor, ev.atoms, ev.filled, *ev.source, log1,
            self.model.dt, survival_steps(2, k), False, job_pos, st.budget, ev.din,
            ev.g_src, ev.dout, st.free, st.res_in, st.res_out, st.gate)
        np.exp(ex, out=ex)
        r2 = self.model.task_rate(_pairs(ev.atoms, rows1, col1)).reshape(rows1.size, m)
        reli = self._second != "eff"
        rows1, col1, rate1, pro1, r2, ex2 = _second_order(
            rows1, col1, ex, v, ptr, xs, js, r2, False, ev.cand, ev.rate, job_pos, log1, log2,
            self.model.dt, reli, 2 * k)
        if reli:
            np.exp(ex2, out=ex2)
        rows_c, have, speed = _second_serve(
            rows1, col1, rate1, pro1, r2, ex2, reli, ev.rate, ev.floor, ev.cand, ev.din,
            ev.g_ptr, ev.g_src, ev.dout, job_pos, st.budget, st.free, st.res_in, st.res_out,
            st.gate, plan.rows, plan.cols, plan.n, self.copies_by_round)
        # Resource-saving rounds (003 §4.1): the c-th copy only if it saves time and
        # slots. E[max(Y, V)] <= E[Y] + E[(V - y)^+] for any y below every value of Y:
        # only the candidates passing this bound need the exact expectation (with mean
        # rates, only those a round may take, :func:`_saving_rows`).
        while rows_c.size:
            c = have.shape[1] + 1
            need = (c + 1) / c * speed
            ti, ci, stacked = _saving_candidates_time(ev.atoms, rows_c, have, speed, need)
            given = self.model.task_rate(stacked) if ti.size else np.empty(0)
            rows_c, have, speed = _saving_serve(
                rows_c, have, need, ti, ci, _NO_VALUES, _NO_VALUES, _NO_INDEX, given, False,
                c * k, ev.rate, ev.floor, ev.cand, ev.din, ev.g_ptr, ev.g_src, ev.dout,
                job_pos, st.budget, st.free, st.res_in, st.res_out, st.gate, plan.rows,
                plan.cols, plan.n, self.copies_by_round)

    # ------------------------------------------------------------------ bookkeeping
    def _launch(self, actions: Actions, tasks: np.ndarray, ev: _Candidates,
                plan: _Plan) -> None:
        """Launch the planned copies and record the gate bandwidth each reserves."""
        n = int(plan.n[0])
        if n == 0:
            return
        rows, cols = plan.rows[:n], plan.cols[:n]
        ids = np.asarray(actions.launch_many(*_targets(rows, cols, tasks, ev.cand)),
                         dtype=np.int64)
        args = (rows, cols, ids, ev.cand, ev.din, ev.g_ptr, ev.g_src, ev.dout)
        need_in, need_out = _hold(*args, *self._held, self._n_held)
        if need_in > self._held[0].size or need_out > self._held[3].size:
            grown = _held_arrays(max(need_in, 2 * self._held[0].size),
                                 max(need_out, 2 * self._held[3].size))
            for old, new in zip(self._held, grown, strict=True):
                new[: old.size] = old
            self._held = grown
            _hold(*args, *self._held, self._n_held)

    def _release(self, view: SchedulerView) -> None:
        """Return the gate bandwidth reserved by copies that have ended."""
        if self._n_held[0] == 0:
            return
        _unhold(np.asarray(view.live_copies), *self._held, self._n_held, self._res_in,
                self._res_out)


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


class _RowCache:
    """The merged atoms of one copy's rate per (task, cluster), for one version of the model.

    Between two refreshes of the performance model, a ready task evaluated again on a
    cluster has the same rate atoms, so the same merged atoms, survivals and expected
    rate (:func:`~geosim.modeler.expected_min`); only its quantile atoms depend on its
    row in the step's search (the row's offset), and they are searched again from the
    stored atoms. The same holds of the upper bounds of its rate on every cluster, and of
    its candidates among the reachable clusters (the ``m`` best bounds, :func:`_top`),
    these kept while reachability does not change.
    A task's entry holds its input groups too and serves only while they are the same.
    Everything is dropped when the model's version changes.

    Args:
        n_tasks: Tasks of the workload.
        n_clusters: Clusters of the world.
        m: Candidates per task among the reachable clusters.
    """

    def __init__(self, n_tasks: int, n_clusters: int, m: int):
        self.version = -1
        self.reach_epoch = -1
        self.task_slot = np.full(n_tasks, -1, dtype=np.int64)
        self.n_slots = self.n_groups = self.n_atoms = 0
        self.slot_task = np.empty(0, dtype=np.int64)              # per slot: its task
        self.start = np.empty((0, n_clusters), dtype=np.int64)   # per slot and cluster
        self.length = np.empty((0, n_clusters), dtype=np.int64)
        self.mean = np.empty((0, n_clusters))
        self.cand = np.empty((0, m), dtype=np.int64)              # per slot: candidates
        self.cand_ok = np.empty(0, dtype=np.bool_)
        self.bound = np.empty((0, n_clusters))                    # per slot: upper bounds
        self.bound_ok = np.empty(0, dtype=np.bool_)
        self.g_lo = np.empty(0, dtype=np.int64)                   # per slot: its groups
        self.g_hi = np.empty(0, dtype=np.int64)
        self.g_src = np.empty(0, dtype=np.int64)
        self.g_size = np.empty(0)
        self.v = np.empty(0)                                      # merged atoms
        self.surv = np.empty(0)                                   # their survivals

    def reset(self, version: int) -> None:
        """Drop every entry; the model is now at ``version``."""
        self.version = version
        self.task_slot[self.slot_task[: self.n_slots]] = -1
        self.n_slots = self.n_groups = self.n_atoms = 0

    def reserve(self, slots: int, groups: int, atoms: int) -> None:
        """Make room for ``slots`` more tasks, ``groups`` input groups and ``atoms`` atoms."""
        need = self.n_slots + slots
        if need > self.start.shape[0]:
            size = max(need, 2 * self.start.shape[0], 64)
            self.start = _grown(self.start, size)
            self.length = _grown(self.length, size)
            self.mean = _grown(self.mean, size)
            self.g_lo = _grown(self.g_lo, size)
            self.g_hi = _grown(self.g_hi, size)
            self.cand = _grown(self.cand, size)
            self.cand_ok = _grown(self.cand_ok, size)
            self.bound = _grown(self.bound, size)
            self.bound_ok = _grown(self.bound_ok, size)
            self.slot_task = _grown(self.slot_task, size)
        need = self.n_groups + groups
        if need > self.g_src.size:
            size = max(need, 2 * self.g_src.size, 1024)
            self.g_src = _grown(self.g_src, size)
            self.g_size = _grown(self.g_size, size)
        need = self.n_atoms + atoms
        if need > self.v.size:
            size = max(need, 2 * self.v.size, 1 << 16)
            self.v = _grown(self.v, size)
            self.surv = _grown(self.surv, size)

    def lookup(self, version: int, reach_epoch: int, tasks: np.ndarray, g_ptr: np.ndarray,
               g_src: np.ndarray, g_size: np.ndarray, task_type: np.ndarray,
               task_work: np.ndarray, speed_b: np.ndarray, bw_b: np.ndarray,
               reach: np.ndarray, free: np.ndarray, find: bool
               ) -> tuple[np.ndarray, np.ndarray]:
        """Each task's entry (a new one where it has none), and its candidates.

        With ``find``, the candidates of :meth:`PingAn._evaluate` (mean rates): the ``m``
        best upper bounds (``speed_b``, ``bw_b``: mean speeds and bandwidths) among the
        reachable clusters, kept in the entry, followed where some such candidate has no
        free slot by the ``m`` best among the clusters with one (:func:`_find_candidates`).

        Args:
            version: The model's version.
            reach_epoch: Changes whenever reachability does.
            tasks: The step's tasks.
            g_ptr: Input groups of each task (as
                :meth:`~geosim.view.SchedulerView.input_group_ptr`).
            g_src: Source cluster of each group.
            g_size: Size of each group.
            task_type: Type of every task.
            task_work: Mean work of every task.
            speed_b: Mean speed per cluster and type.
            bw_b: Mean bandwidth per cluster pair.
            reach: Whether each cluster is reachable.
            free: Free slots per cluster.
            find: Whether to find the candidates.

        Returns:
            The entries and the candidates (not meaningful without ``find``).
        """
        if self.version != version:
            self.reset(version)
        if self.reach_epoch != reach_epoch:
            self.reach_epoch = reach_epoch
            self.cand_ok[: self.n_slots] = False
        self.reserve(tasks.size, g_ptr[-1], 0)
        slots, self.n_slots, self.n_groups, cand = _find_candidates(
            tasks, g_ptr, g_src, g_size, self.task_slot, self.slot_task, self.n_slots,
            self.start, self.g_lo, self.g_hi, self.g_src, self.g_size, self.n_groups,
            self.cand, self.cand_ok, self.bound, self.bound_ok, task_type, task_work, speed_b,
            bw_b, reach, free, find)
        return slots, cand

    def rates(self, model: PerformanceModel, slots: np.ndarray, tasks: np.ndarray,
              cand: np.ndarray, task_type: np.ndarray, task_work: np.ndarray,
              g_ptr: np.ndarray, g_src: np.ndarray, g_size: np.ndarray, reach: np.ndarray,
              gate: np.ndarray, denom: float) -> tuple[np.ndarray, ...]:
        """``E[r(1)]`` of one copy of each task on each candidate, its flows and floors.

        The rates are :func:`~geosim.modeler.expected_min` (with quantiles) of the atoms
        of ``V^P / work`` and of each ``V^T_s / size_s``, one call per number of input
        groups with the tasks in order, as :meth:`PingAn._evaluate` with mean rates
        defines them; the flows are :func:`_flows`'; the floors ``opt / denom``.
        ``slots`` are the tasks' entries (:meth:`lookup`, this step).

        Returns:
            The rates ``(T, M)`` (``-inf`` where unreachable), ``opt``, ``din``, ``dout``,
            the floors, and the arguments ``slots`` to ``thresholds`` of
            :func:`_fill_quantiles`, which finds the quantile atoms of given tasks.
        """
        k = model.k
        top = _most_groups(g_ptr)
        self.reserve(0, 0, cand.size * k * (1 + top))
        rate, rank, opt, din, dout, floor, self.n_atoms = _cache_rates(
            slots, tasks, cand, task_type, task_work, g_ptr, g_src, g_size, model.speed,
            model.bandwidth, survival_steps(1 + top, k), self.start, self.length, self.mean,
            self.g_lo, self.g_hi, self.v, self.surv, self.n_atoms, k, top, reach, gate, denom)
        return rate, opt, din, dout, floor, (slots, rank, g_ptr, self.start, self.length,
                                             self.v, self.surv, thresholds(k))


def _grown(a: np.ndarray, size: int) -> np.ndarray:
    """``a`` with its first axis grown to ``size`` (the new part uninitialised)."""
    out = np.empty((size,) + a.shape[1:], dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


# ---------------------------------------------------------------------- compiled kernels
# Each kernel does in one pass what a chain of small NumPy calls did, with the same
# floating-point operations in the same order (results are bit-identical): elementwise
# arithmetic, exact minima and maxima, and sums in NumPy's own order
# (``geosim.distributions.pairwise_sum``).


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
def _neg_bounds(speed_mean, bw_mean, rows, tasks, task_type, task_work, g_ptr, g_src, g_size,
                mask):  # pragma: no cover - compiled
    """Negated upper bound ``min(E[V^P] / work, min_s E[V^T_s] / size_s)`` per cluster.

    Returns:
        Per task of ``rows`` (positions in ``tasks``) and cluster, the bound negated where
        ``mask`` holds (the cluster is reachable, or has a free slot), ``+inf`` elsewhere.
    """
    n = speed_mean.shape[0]
    neg = np.empty((rows.size, n))
    for x in range(rows.size):
        i = rows[x]
        t = tasks[i]
        for c in range(n):
            b = _bound(speed_mean, bw_mean, c, task_type[t], task_work[t], g_ptr[i],
                       g_ptr[i + 1], g_src, g_size)
            neg[x, c] = -b if mask[c] else np.inf
    return neg


@njit(cache=True)
def _bound(speed_mean, bw_mean, c, task_type, work, lo, hi, g_src,
           g_size):  # pragma: no cover - compiled
    """``min(E[V^P] / work, min_s E[V^T_s] / size_s)`` of a task (groups ``lo:hi``) on ``c``."""
    b = speed_mean[c, task_type] / work
    for g in range(lo, hi):
        tr = np.inf if g_src[g] == c else bw_mean[g_src[g], c] / g_size[g]
        b = _min(b, tr)
    return b


@njit(cache=True)
def _any_unfit(cand, free, reach):  # pragma: no cover - compiled
    """Whether some reachable candidate has no free slot."""
    for i in range(cand.shape[0]):
        for j in range(cand.shape[1]):
            if reach[cand[i, j]] and not free[cand[i, j]] > 0:
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
                din[i, j] = buf[0] + pairwise_sum(buf[1:], hi - lo - 1, hi - lo - 1)
            din[i, j] = _min(din[i, j], gate[c])
    return opt, din, dout


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
        y = _held_first(atoms, i, have, x)
        for j in range(m):
            if _saving_bound(atoms, i, j, y, before[x], buf) > need[x]:
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
          out_copy, out_src, out_amount, n_held):  # pragma: no cover - compiled
    """Append the reservations of the launched remote copies (``din > 0``) to the held ones.

    The held ingress (copy, cluster, MB/s) and egress (copy, source, MB/s) entries are
    the first ``n_held[0]`` and ``n_held[1]`` of their arrays; nothing is appended unless
    all the new ones fit.

    Returns:
        The ingress and egress entries held with the new ones.
    """
    a, b = n_held[0], n_held[1]
    n_in, n_out = a, b
    for x in range(rows.size):
        if din[rows[x], cols[x]] > 0:
            n_in += 1
            n_out += g_ptr[rows[x] + 1] - g_ptr[rows[x]]
    if n_in > in_copy.size or n_out > out_copy.size:
        return n_in, n_out
    for x in range(rows.size):
        i, j = rows[x], cols[x]
        if not din[i, j] > 0:
            continue
        in_copy[a], in_dst[a], in_need[a] = ids[x], cand[i, j], din[i, j]
        a += 1
        for g in range(g_ptr[i], g_ptr[i + 1]):
            out_copy[b], out_src[b], out_amount[b] = ids[x], g_src[g], dout[g, j]
            b += 1
    n_held[0], n_held[1] = a, b
    return n_in, n_out


def _held_arrays(n_in: int, n_out: int) -> tuple[np.ndarray, ...]:
    """Empty reservation arrays (see :func:`_hold`) for ``n_in`` and ``n_out`` entries."""
    return (np.empty(n_in, dtype=np.int64), np.empty(n_in, dtype=np.int64), np.empty(n_in),
            np.empty(n_out, dtype=np.int64), np.empty(n_out, dtype=np.int64),
            np.empty(n_out))


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
    """Give back to ``res`` what ended copies held (in order); keep the others' in place.

    Returns:
        How many entries are kept (first, in their order).
    """
    w = 0
    for x in range(copy.size):
        if ended[x]:
            res[where[x]] -= amount[x]
        else:
            copy[w], where[w], amount[w] = copy[x], where[x], amount[x]
            w += 1
    return w


@njit(cache=True)
def _unhold(live, in_copy, in_dst, in_need, out_copy, out_src, out_amount, n_held, res_in,
            res_out):  # pragma: no cover - compiled
    """Subtract the reservations of ended copies (not in ``live``, ascending) in order.

    The held entries (see :func:`_hold`) that remain are kept in place, ``n_held`` updated.
    """
    n_in, n_out = n_held[0], n_held[1]
    ended = _not_live(in_copy[:n_in], live)
    any_ended = False
    for x in range(n_in):
        any_ended = any_ended or ended[x]
    if not any_ended:
        return
    n_held[0] = _keep_held(in_copy[:n_in], in_dst[:n_in], in_need[:n_in], ended, res_in)
    # Every copy holding egress also holds ingress: it has ended if it is not live.
    n_held[1] = _keep_held(out_copy[:n_out], out_src[:n_out], out_amount[:n_out],
                           _not_live(out_copy[:n_out], live), res_out)
    if n_held[0] == 0:      # clear rounding residue
        res_in[:] = 0.0
        res_out[:] = 0.0


@njit(cache=True)
def _can_take(i, col, cand, din, g_ptr, g_src, dout, free, res_in, res_out,
              gate):  # pragma: no cover - compiled
    """Whether candidate ``col`` of task ``i`` has a free slot and gates to carry the copy.

    The checks of :func:`_serve`. A step's rounds only take slots and gate bandwidth, so
    a candidate failing them now fails them for the rest of the step.
    """
    c = cand[i, col]
    if free[c] <= 0 or res_in[c] + din[i, col] > gate[c]:
        return False
    for g in range(g_ptr[i], g_ptr[i + 1]):
        if res_out[g_src[g]] + dout[g, col] > gate[g_src[g]]:
            return False
    return True


@njit(cache=True)
def _takeable(i, col, tk):  # pragma: no cover - compiled
    """Whether task ``i``'s job is within its promise and :func:`_can_take` holds.

    ``tk`` is ``(job_pos, budget, cand, din, g_ptr, g_src, dout, free, res_in, res_out,
    gate)``.
    """
    job_pos, budget, cand, din, g_ptr, g_src, dout, free, res_in, res_out, gate = tk
    return budget[job_pos[i]] > 0 and _can_take(i, col, cand, din, g_ptr, g_src, dout, free,
                                                res_in, res_out, gate)


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
            if not _can_take(i, col, cand, din, g_ptr, g_src, dout, free, res_in, res_out,
                             gate):
                continue
            c = cand[i, col]
            free[c] -= 1
            budget[job] -= 1
            res_in[c] += din[i, col]
            for g in range(lo, hi):
                res_out[g_src[g]] += dout[g, col]
            pos[n_out], cols[n_out] = n, col
            n_out += 1
            break
    return pos[:n_out], cols[:n_out]


@njit(cache=True)
def _cache_slots(tasks, g_ptr, g_src, g_size, task_slot, slot_task, n_slots, start, g_lo, g_hi,
                 c_src, c_size, n_groups, c_cand, cand_ok,
                 bound_ok):  # pragma: no cover - compiled
    """The entries of :meth:`_RowCache.lookup`.

    A task without an entry, or whose entry holds other input groups, gets a new one
    (nothing stored, its groups copied).

    Returns:
        Each task's entry, the entries and groups now in use, the stored candidates
        (``-1`` where none), and the tasks without.
    """
    n_tasks, m = tasks.size, c_cand.shape[1]
    slots = np.empty(n_tasks, dtype=np.int64)
    cand = np.full((n_tasks, m), -1, dtype=np.int64)
    miss = np.empty(n_tasks, dtype=np.int64)
    n_miss = 0
    for x in range(n_tasks):
        t = tasks[x]
        lo, hi = g_ptr[x], g_ptr[x + 1]
        s = task_slot[t]
        if s >= 0:
            same = g_hi[s] - g_lo[s] == hi - lo
            for h in range(hi - lo):
                if not same:
                    break
                same = (c_src[g_lo[s] + h] == g_src[lo + h]
                        and c_size[g_lo[s] + h] == g_size[lo + h])
            if not same:
                s = -1
        if s < 0:
            s = n_slots
            n_slots += 1
            task_slot[t], slot_task[s] = s, t
            start[s, :] = -1
            cand_ok[s] = bound_ok[s] = False
            g_lo[s] = n_groups
            for g in range(lo, hi):
                c_src[n_groups], c_size[n_groups] = g_src[g], g_size[g]
                n_groups += 1
            g_hi[s] = n_groups
        slots[x] = s
        if cand_ok[s]:
            for j in range(m):
                cand[x, j] = c_cand[s, j]
        else:
            miss[n_miss] = x
            n_miss += 1
    return slots, n_slots, n_groups, cand, miss[:n_miss]


@njit(cache=True)
def _find_candidates(tasks, g_ptr, g_src, g_size, task_slot, slot_task, n_slots, start, g_lo,
                     g_hi, c_src, c_size, n_groups, c_cand, cand_ok, c_bound, bound_ok,
                     task_type, task_work, speed_b, bw_b, reach, free,
                     find):  # pragma: no cover - compiled
    """The entries and candidates of :meth:`_RowCache.lookup`.

    Candidates are the columns of :func:`_top` (:func:`_argtop`) of :func:`_neg_bounds`
    over the reachable clusters, for tasks without them stored, then, where some
    reachable candidate has no free slot (:func:`_any_unfit`), those over the clusters
    with a free slot, for all tasks. The bounds are kept in the entries (``c_bound``,
    where ``bound_ok``).

    Returns:
        The entries, the entries and groups now in use, and the candidates.
    """
    slots, n_slots, n_groups, cand, miss = _cache_slots(tasks, g_ptr, g_src, g_size,
                                                        task_slot, slot_task, n_slots, start,
                                                        g_lo, g_hi, c_src, c_size, n_groups,
                                                        c_cand, cand_ok, bound_ok)
    if not find:
        return slots, n_slots, n_groups, cand
    m = c_cand.shape[1]
    if miss.size:
        top = _argtop(_kept_bounds(miss, slots, tasks, task_type, task_work, g_ptr, g_src,
                                   g_size, speed_b, bw_b, c_bound, bound_ok, reach), m)
        _store_candidates(top, miss, slots, cand, c_cand, cand_ok)
    if not _any_unfit(cand, free, reach):
        return slots, n_slots, n_groups, cand
    fits = np.empty(free.size, dtype=np.bool_)
    for c in range(free.size):
        fits[c] = free[c] > 0
    more = _argtop(_kept_bounds(np.arange(tasks.size), slots, tasks, task_type, task_work,
                                g_ptr, g_src, g_size, speed_b, bw_b, c_bound, bound_ok,
                                fits), m)
    both = np.empty((tasks.size, 2 * m), dtype=np.int64)
    both[:, :m] = cand
    both[:, m:] = more
    return slots, n_slots, n_groups, both


@njit(cache=True)
def _kept_bounds(rows, slots, tasks, task_type, task_work, g_ptr, g_src, g_size, speed_b, bw_b,
                 c_bound, bound_ok, mask):  # pragma: no cover - compiled
    """:func:`_neg_bounds` of tasks ``rows``, each bound computed once per entry and kept."""
    n = speed_b.shape[0]
    neg = np.empty((rows.size, n))
    for x in range(rows.size):
        i = rows[x]
        s = slots[i]
        if not bound_ok[s]:
            t = tasks[i]
            for c in range(n):
                c_bound[s, c] = _bound(speed_b, bw_b, c, task_type[t], task_work[t], g_ptr[i],
                                       g_ptr[i + 1], g_src, g_size)
            bound_ok[s] = True
        for c in range(n):
            neg[x, c] = -c_bound[s, c] if mask[c] else np.inf
    return neg


@njit(cache=True)
def _argtop(score, m):  # pragma: no cover - compiled
    """:func:`_top` of ``score`` (NumPy's ``argpartition``, in object mode), contiguous."""
    with objmode(out="int64[:, ::1]"):
        out = np.ascontiguousarray(_top(score, m), dtype=np.int64)
    return out


@njit(cache=True)
def _store_candidates(top, miss, slots, cand, c_cand, cand_ok):  # pragma: no cover - compiled
    """Put the candidates ``top`` of tasks ``miss`` in ``cand`` and in their entries."""
    for e in range(miss.size):
        x = miss[e]
        s = slots[x]
        for j in range(top.shape[1]):
            cand[x, j] = c_cand[s, j] = top[e, j]
        cand_ok[s] = True


@njit(cache=True, error_model="numpy")
def _cache_rows(slots, tasks, cand, task_type, task_work, g_ptr, g_src, g_size, speed,
                bandwidth, step, start, length, v, log_surv,
                n_atoms):  # pragma: no cover - compiled
    """Merge the atoms of each (task, candidate) of :meth:`_RowCache.rates` not yet stored.

    A row is merged (:func:`~geosim.distributions.merge_row`) from the atoms of
    :func:`_rate_atoms`; a task without input groups stores its ``K`` atoms as they are.

    Returns:
        The atoms now in use, and the (entry, cluster) of each newly stored row, whose
        survivals and mean are still to be computed.
    """
    n_tasks, m = cand.shape
    n, k = speed.shape[0], speed.shape[2]
    r_max = step.size // k
    vals = np.empty(r_max * k)
    use = np.empty(r_max, dtype=np.bool_)
    head = np.empty(r_max, dtype=np.int64)
    end = np.empty(r_max, dtype=np.int64)
    cur = np.empty(r_max)
    heap = np.empty(r_max, dtype=np.int64)
    fresh = np.empty((n_tasks * m, 2), dtype=np.int64)
    n_fresh = 0
    for x in range(n_tasks):
        t = tasks[x]
        s = slots[x]
        lo, hi = g_ptr[x], g_ptr[x + 1]
        r = 1 + hi - lo
        for j in range(m):
            c = cand[x, j]
            if start[s, c] >= 0:
                continue
            for q in range(k):
                vals[q] = speed[c, task_type[t], q] / task_work[t]
            for h in range(r - 1):
                src = g_src[lo + h]
                for q in range(k):
                    vals[(1 + h) * k + q] = (np.inf if src == c
                                             else bandwidth[src * n + c, q] / g_size[lo + h])
            start[s, c] = n_atoms
            if r == 1:
                for q in range(k):
                    v[n_atoms + q] = vals[q]
                    log_surv[n_atoms + q] = 0.0
                n_atoms += k
            else:
                n_atoms = merge_row(vals, step, r, k, v, log_surv, n_atoms, use, head, end,
                                     cur, heap)
            length[s, c] = n_atoms - start[s, c]
            fresh[n_fresh, 0], fresh[n_fresh, 1] = s, c
            n_fresh += 1
    return n_atoms, fresh[:n_fresh]


@njit(cache=True)
def _cache_means(slots, cand, g_ptr, g_src, g_size, fresh, start, length, mean, g_lo, g_hi,
                 v, surv, k, top, reach, gate, denom):  # pragma: no cover - compiled
    """The rates of :meth:`_RowCache.rates` from the stored rows, their flows and floors.

    The newly stored rows get their mean first (:func:`~geosim.distributions.row_mean`; a task
    without input groups: the mean of its ``k`` atoms, as ``numpy.mean``).

    Returns:
        The rates, each task's rank among the step's tasks with as many input groups
        (its row for candidate ``j`` in their :func:`~geosim.modeler.expected_min` call
        is ``rank * M + j``), and :func:`_flows`' ``opt``, ``din`` and ``dout``, and
        the floors ``opt / denom``.
    """
    n_tasks, m = cand.shape
    terms = np.zeros((1 + top) * k)
    for f in range(fresh.shape[0]):
        s, c = fresh[f, 0], fresh[f, 1]
        lo = start[s, c]
        hi = lo + length[s, c]
        r = 1 + g_hi[s] - g_lo[s]
        if r == 1:
            mean[s, c] = (0.0 + pairwise_sum(v[lo:hi], k, k)) / k
        else:
            mean[s, c] = row_mean(v, surv, lo, hi, r * k, terms)
    rate = np.empty((n_tasks, m))
    rank = np.empty(n_tasks, dtype=np.int64)
    seen = np.zeros(top + 1, dtype=np.int64)
    for x in range(n_tasks):
        groups = g_ptr[x + 1] - g_ptr[x]
        rank[x] = seen[groups]
        seen[groups] += 1
        for j in range(m):
            rate[x, j] = mean[slots[x], cand[x, j]]
    opt, din, dout = _flows(rate, cand, reach, g_ptr, g_src, g_size, gate)
    return rate, rank, opt, din, dout, opt / denom


@njit(cache=True)
def _fill_quantiles(rows, filled, atoms, cand, rate, floor, slots, rank, g_ptr, start, length,
                    v, surv, thresholds, held, take, tk):  # pragma: no cover - compiled
    """Fill in the quantile atoms of tasks ``rows`` not yet ``filled``.

    Only candidates a round may take are filled in, and each task's copy held so far
    (``held``, per task of ``rows``): not those whose rate is below the task's floor, nor
    (with ``take``) those that cannot be taken now (:func:`_takeable` with ``tk``); no
    round takes them, and none reads their atoms. The rows are those of
    :meth:`_RowCache.rates`;
    each row's quantiles are searched (:func:`~geosim.distributions.row_quantiles`) at its
    offset ``2 (rank * M + j)`` in its :func:`~geosim.modeler.expected_min` call; a task
    without input groups has the atoms of its processing rate.
    """
    m, k = cand.shape[1], thresholds.size
    for e in range(rows.size):
        x = rows[e]
        if filled[x]:
            continue
        filled[x] = True
        s = slots[x]
        plain = g_ptr[x + 1] == g_ptr[x]
        for j in range(m):
            if j != held[e] and (not rate[x, j] >= floor[x]
                                 or (take and not _takeable(x, j, tk))):
                continue
            c = cand[x, j]
            lo = start[s, c]
            if plain:
                for q in range(k):
                    atoms[x, j, q] = v[lo + q]
            else:
                row_quantiles(v, surv, lo, lo + length[s, c], thresholds,
                               2.0 * (rank[x] * m + j), atoms[x, j])


@njit(cache=True)
def _max_row(atoms, i, cols, h, step, v, log_surv, w, vals, use, head, end, cur,
             heap):  # pragma: no cover - compiled
    """Merge the atoms of ``max`` of copies ``cols[:h]`` of task ``i``.

    As :func:`~geosim.modeler.expected_max` does: the row of
    :func:`~geosim.modeler.expected_min` of the negated atoms in reverse order, stored
    from ``w`` on. Returns the position after it.
    """
    k = atoms.shape[2]
    for z in range(h):
        for q in range(k):
            vals[z * k + q] = -atoms[i, cols[z], k - 1 - q]
    return merge_row(vals, step, h, k, v, log_surv, w, use, head, end, cur, heap)


@njit(cache=True)
def _pair_rows(atoms, rows, col, rate, floor, step, take,
               tk):  # pragma: no cover - compiled
    """Merged atoms of the two-copy rows of round 2, for candidates round 2 may take.

    Row ``(x, j)`` is ``max`` of task ``rows[x]``'s first copy (candidate ``col[x]``) and
    a copy on candidate ``j``, as :func:`~geosim.modeler.expected_max` merges it. Left out
    are candidates no round takes: whose rate is below the task's floor, that cannot be
    taken now (:func:`_takeable`; ``take`` is whether to check, ``tk`` what to check).

    Returns:
        Atoms, log-survivals and row starts as :func:`~geosim.distributions.merged_atoms`,
        and the ``x`` and ``j`` of each row.
    """
    n1, m, k = rows.size, atoms.shape[1], atoms.shape[2]
    v = np.empty(n1 * m * 2 * k)
    log_surv = np.empty(n1 * m * 2 * k)
    ptr = np.empty(n1 * m + 1, dtype=np.int64)
    xs = np.empty(n1 * m, dtype=np.int64)
    js = np.empty(n1 * m, dtype=np.int64)
    vals = np.empty(2 * k)
    use = np.empty(2, dtype=np.bool_)
    head = np.empty(2, dtype=np.int64)
    end = np.empty(2, dtype=np.int64)
    cur = np.empty(2)
    heap = np.empty(2, dtype=np.int64)
    cols = np.empty(2, dtype=np.int64)
    n_rows = 0
    w = 0
    for x in range(n1):
        i = rows[x]
        cols[0] = col[x]
        for j in range(m):
            if not rate[i, j] >= floor[i] or (take and not _takeable(i, j, tk)):
                continue
            cols[1] = j
            ptr[n_rows], xs[n_rows], js[n_rows] = w, x, j
            n_rows += 1
            w = _max_row(atoms, i, cols, 2, step, v, log_surv, w, vals, use, head, end, cur,
                         heap)
    ptr[n_rows] = w
    return v[:w], log_surv[:w], ptr[:n_rows + 1], xs[:n_rows], js[:n_rows]


@njit(cache=True)
def _saving_bound(atoms, i, j, y, before, buf):  # pragma: no cover - compiled
    """The bound of :func:`_saving_candidates` on ``E[r(c)]`` of candidate ``j`` of task ``i``.

    ``before + mean((V - y)^+)``, the mean summed as NumPy sums the atoms and divided by K.
    """
    k = atoms.shape[2]
    for q in range(k):
        buf[q] = _max(atoms[i, j, q] - y, 0.0)
    return before + (0.0 + pairwise_sum(buf, k, k)) / k


@njit(cache=True)
def _held_first(atoms, i, have, x):  # pragma: no cover - compiled
    """The largest first atom of task ``i``'s held copies ``have[x]``."""
    y = atoms[i, have[x, 0], 0]
    for z in range(1, have.shape[1]):
        y = _max(y, atoms[i, have[x, z], 0])
    return y


@njit(cache=True)
def _saving_rows(atoms, rows, have, before, need, rate, floor, step, take,
                 tk):  # pragma: no cover - compiled
    """The candidates of :func:`_saving_candidates` a round may take, merged.

    Row ``e`` is ``max`` of the held copies and candidate ``ci[e]`` of task
    ``rows[ti[e]]``, merged as :func:`~geosim.modeler.expected_max` merges it. Left out
    are candidates no round takes, as in :func:`_pair_rows`.

    Returns:
        ``ti`` and ``ci``, then atoms, log-survivals and row starts as
        :func:`~geosim.distributions.merged_atoms`.
    """
    n, m, k = rows.size, atoms.shape[1], atoms.shape[2]
    h = have.shape[1]
    ti = np.empty(n * m, dtype=np.int64)
    ci = np.empty(n * m, dtype=np.int64)
    buf = np.empty(k)
    v = np.empty(n * m * (h + 1) * k)
    log_surv = np.empty(n * m * (h + 1) * k)
    ptr = np.empty(n * m + 1, dtype=np.int64)
    vals = np.empty((h + 1) * k)
    use = np.empty(h + 1, dtype=np.bool_)
    head = np.empty(h + 1, dtype=np.int64)
    end = np.empty(h + 1, dtype=np.int64)
    cur = np.empty(h + 1)
    heap = np.empty(h + 1, dtype=np.int64)
    cols = np.empty(h + 1, dtype=np.int64)
    count = 0
    w = 0
    for x in range(n):
        i = rows[x]
        y = _held_first(atoms, i, have, x)
        for z in range(h):
            cols[z] = have[x, z]
        for j in range(m):
            if not rate[i, j] >= floor[i] or (take and not _takeable(i, j, tk)):
                continue
            if not _saving_bound(atoms, i, j, y, before[x], buf) > need[x]:
                continue
            cols[h] = j
            ti[count], ci[count], ptr[count] = x, j, w
            count += 1
            w = _max_row(atoms, i, cols, h + 1, step, v, log_surv, w, vals, use, head, end,
                         cur, heap)
    ptr[count] = w
    return ti[:count], ci[:count], v[:w], log_surv[:w], ptr[:count + 1]


@njit(cache=True)
def _neg_means(v, surv, ptr, m, xs, js, out):  # pragma: no cover - compiled
    """Write ``-mean`` of each merged row to ``out[xs, js]`` (its expected maximum)."""
    terms = np.zeros(m)
    for e in range(xs.size):
        out[xs[e], js[e]] = -row_mean(v, surv, ptr[e], ptr[e + 1], m, terms)
    return out


@njit(cache=True)
def _admit_pick(alive, live, task_ptr, state, data, cut, promise,
                limit):  # pragma: no cover - compiled
    """The admission of :meth:`PingAn._admit` and the tasks :func:`_pick` takes from it.

    Jobs are sorted by unprocessed data (:func:`_unprocessed`), then id (as
    ``numpy.lexsort``); the first ``cut`` are admitted, each with ``promise`` less its
    live copies (``live``, aligned with ``alive``), and those left with a positive budget
    are kept.

    Returns:
        The kept jobs' budgets (a fresh array), the jobs not admitted, and :func:`_pick`'s
        tasks and job positions.
    """
    unprocessed = _unprocessed(alive, task_ptr, state, data)
    by_id = np.argsort(alive, kind="mergesort")
    order = by_id[_stable_order(unprocessed[by_id])]
    cut = min(max(cut, 0), alive.size)
    jobs = np.empty(cut, dtype=np.int64)
    budget = np.empty(cut, dtype=np.int64)
    n = 0
    for x in range(cut):
        b = promise - live[order[x]]
        if b > 0:
            jobs[n], budget[n] = alive[order[x]], b
            n += 1
    rest = alive[order[cut:]]
    tasks, pos = _pick(jobs[:n], budget[:n], task_ptr, state, limit)
    return budget[:n].copy(), rest, tasks, pos


@njit(cache=True)
def _stable_order(key):  # pragma: no cover - compiled
    """``numpy.argsort(key, kind="stable")`` of floats (NaN last): a merge sort."""
    n = key.size
    idx = np.arange(n)
    tmp = np.empty(n, dtype=np.int64)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            a, b, w = lo, mid, lo
            while a < mid and b < hi:
                if _before(key[idx[b]], key[idx[a]]):
                    tmp[w] = idx[b]
                    b += 1
                else:
                    tmp[w] = idx[a]
                    a += 1
                w += 1
            while a < mid:
                tmp[w] = idx[a]
                a += 1
                w += 1
            while b < hi:
                tmp[w] = idx[b]
                b += 1
                w += 1
        idx, tmp = tmp, idx
        width *= 2
    return idx


@njit(cache=True)
def _serve_into(rows, order, usable, floor, rate, cand, din, g_ptr, g_src, dout, job_pos,
                budget, free, res_in, res_out, gate, plan_rows, plan_cols,
                plan_n):  # pragma: no cover - compiled
    """:func:`_serve`, appending each copy to the plan as (task index, candidate).

    Returns:
        As :func:`_serve`.
    """
    pos, cols = _serve(rows, order, usable, floor, rate, cand, din, g_ptr, g_src, dout,
                       job_pos, budget, free, res_in, res_out, gate)
    at = plan_n[0]
    for e in range(pos.size):
        plan_rows[at + e], plan_cols[at + e] = rows[pos[e]], cols[e]
    plan_n[0] = at + pos.size
    return pos, cols


@njit(cache=True)
def _slots_of(rate, dt):  # pragma: no cover - compiled
    """Expected slots ``1 / (rate dt)`` of a copy where ``rate > 0``, else 0 (:func:`_slots`)."""
    return 1.0 / (rate * dt) if rate > 0 else 0.0


@njit(cache=True, error_model="numpy")
def _keep_exponents(rows, cand, rate, log1, dt):  # pragma: no cover - compiled
    """``log1p(-p) e`` of one copy of each task ``rows`` on each candidate (``e`` its slots).

    Its ``exp`` is the copy's trouble-exemption probability where its rate is positive.
    """
    n, m = rows.size, cand.shape[1]
    out = np.empty((n, m))
    for x in range(n):
        for j in range(m):
            out[x, j] = log1[cand[rows[x], j]] * _slots_of(rate[rows[x], j], dt)
    return out


@njit(cache=True)
def _round_one(rows, pro, rate, floor, cand, din, g_ptr, g_src, dout, job_pos, budget, free,
               res_in, res_out, gate, plan_rows, plan_cols, plan_n,
               by_round):  # pragma: no cover - compiled
    """Round 1 of :meth:`PingAn._insure`: each task's candidates by descending score.

    The score is the copy's rate (``eff``), or its trouble-exemption probability
    (``reli``: ``pro`` holds ``exp`` of :func:`_keep_exponents`; 0 where the rate is not
    positive). Tasks are served by :func:`_serve`.

    Returns:
        The tasks given a copy (in the order of ``rows``) and the candidate of each.
    """
    n, m = rows.size, cand.shape[1]
    score = np.empty((n, m))
    for x in range(n):
        for j in range(m):
            r = rate[rows[x], j]
            if pro.shape[0] == 0:
                score[x, j] = r
            else:
                score[x, j] = pro[x, j] if r > 0 else 0.0
    usable = np.ones((n, m), dtype=np.bool_)
    pos, cols = _serve_into(rows, _order(score), usable, floor, rate, cand, din, g_ptr,
                            g_src, dout, job_pos, budget, free, res_in, res_out, gate,
                            plan_rows, plan_cols, plan_n)
    by_round[0] += pos.size
    return rows[pos], cols


@njit(cache=True, error_model="numpy")
def _second_prep(rows1, col1, cand, rate, floor, atoms, filled, slots, rank, g_ptr, start,
                 length, v_c, surv_c, thresholds, log1, dt, step, merge, job_pos, budget, din,
                 g_src, dout, free, res_in, res_out, gate):  # pragma: no cover - compiled
    """What round 2 needs before its ``exp``: quantile atoms, merged pairs, pro1's exponents.

    Fills in the atoms of tasks ``rows1`` (:func:`_fill_quantiles`); with ``merge`` (mean
    rates), merges the pairs of :func:`_pair_rows`. The arguments from ``job_pos`` on are
    what :func:`_takeable` checks.

    Returns:
        The pairs' log-survivals followed by ``log1p(-p) e`` of each task's first copy
        (:func:`_keep_exponents`), then the pairs' atoms, row starts, ``x`` and ``j``.
    """
    tk = (job_pos, budget, cand, din, g_ptr, g_src, dout, free, res_in, res_out, gate)
    _fill_quantiles(rows1, filled, atoms, cand, rate, floor, slots, rank, g_ptr, start, length,
                    v_c, surv_c, thresholds, col1, merge, tk)
    n1 = rows1.size
    if merge:
        v, log_surv, ptr, xs, js = _pair_rows(atoms, rows1, col1, rate, floor, step, True, tk)
    else:
        v, log_surv = np.empty(0), np.empty(0)
        ptr, xs, js = np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.int64), \
            np.empty(0, dtype=np.int64)
    w = log_surv.size
    ex = np.empty(w + n1)
    ex[:w] = log_surv
    for x in range(n1):
        i, j = rows1[x], col1[x]
        ex[w + x] = log1[cand[i, j]] * _slots_of(rate[i, j], dt)
    return ex, v, ptr, xs, js


@njit(cache=True, error_model="numpy")
def _second_order(rows1, col1, ex, v, ptr, xs, js, given, merged, cand, rate, job_pos, log1,
                  log2, dt, reli, m_atoms):  # pragma: no cover - compiled
    """Round 2's tasks in order, their first copy's rate and pro, and ``E[r(2)]``.

    ``ex`` is ``exp`` of :func:`_second_prep`'s output: the pairs' survivals, then each
    first copy's trouble-exemption probability (0 where its rate is not positive).
    ``E[r(2)]`` is the pairs' expected maxima if ``merged`` (``-inf`` for pairs not
    merged), else ``given`` (mean times). Tasks are ordered by job position, then ascending
    ``pro1`` (``numpy.lexsort``). With ``reli``, also ``log1p(-fail) e`` of each pair:
    ``fail`` the per-slot failure probability of the two copies (``p`` of one cluster,
    the product on two), ``e`` the slots at ``E[r(2)]``.

    Returns:
        ``rows1``, ``col1``, the rates and pro of the first copies, ``E[r(2)]``, all in
        that order, and the exponents (empty without ``reli``).
    """
    n1, m = rows1.size, cand.shape[1]
    w = ex.size - n1
    pro1 = np.empty(n1)
    first = np.empty(n1)
    for x in range(n1):
        first[x] = rate[rows1[x], col1[x]]
        pro1[x] = ex[w + x] if first[x] > 0 else 0.0
    if merged:
        r2 = np.full((n1, m), -np.inf)
        _neg_means(v, ex[:w], ptr, m_atoms, xs, js, r2)
    else:
        r2 = given
    jp = np.empty(n1, dtype=np.int64)
    for x in range(n1):
        jp[x] = job_pos[rows1[x]]
    by_pro = _stable_order(pro1)
    order = by_pro[np.argsort(jp[by_pro], kind="mergesort")]
    rows_s, col_s = rows1[order], col1[order]
    rate_s, pro_s = first[order], pro1[order]
    r2_s = np.empty((n1, m))
    for x in range(n1):
        for j in range(m):
            r2_s[x, j] = r2[order[x], j]
    ex2 = np.empty((n1 if reli else 0, m))
    if reli:
        for x in range(n1):
            c1 = cand[rows_s[x], col_s[x]]
            for j in range(m):
                c = cand[rows_s[x], j]
                keep = log1[c1] if c == c1 else log2[c1, c]
                ex2[x, j] = keep * _slots_of(r2_s[x, j], dt)
    return rows_s, col_s, rate_s, pro_s, r2_s, ex2


@njit(cache=True)
def _second_serve(rows1, col1, rate1, pro1, r2, pro2, reli, rate, floor, cand, din, g_ptr,
                  g_src, dout, job_pos, budget, free, res_in, res_out, gate, plan_rows,
                  plan_cols, plan_n, by_round):  # pragma: no cover - compiled
    """Round 2 of :meth:`PingAn._insure`, from :func:`_second_order`'s output.

    A second copy is usable where its score beats the first copy's: ``E[r(2)]`` against
    the first copy's rate (``eff``), or the pro of both copies (``pro2``: ``exp`` of the
    exponents; 0 where ``E[r(2)]`` is not positive) against ``pro1`` (``reli``).
    Candidates are tried by descending score (:func:`_gain_order`, :func:`_serve`).

    Returns:
        The tasks copied, their two candidates, and ``E[r(2)]`` of each.
    """
    n1, m = rows1.size, cand.shape[1]
    if reli:
        score = np.empty((n1, m))
        for x in range(n1):
            for j in range(m):
                score[x, j] = pro2[x, j] if r2[x, j] > 0 else 0.0
        gain, order = _gain_order(score, pro1)
    else:
        gain, order = _gain_order(r2, rate1)
    pos, col2 = _serve_into(rows1, order, gain, floor, rate, cand, din, g_ptr, g_src, dout,
                            job_pos, budget, free, res_in, res_out, gate, plan_rows, plan_cols,
                            plan_n)
    by_round[1] += pos.size
    have = np.empty((pos.size, 2), dtype=np.int64)
    speed = np.empty(pos.size)
    for e in range(pos.size):
        have[e, 0], have[e, 1] = col1[pos[e]], col2[e]
        speed[e] = r2[pos[e], col2[e]]
    return rows1[pos], have, speed


@njit(cache=True)
def _saving_prep(atoms, rows, have, before, rate, floor, step, job_pos, budget, cand, din,
                 g_ptr, g_src, dout, free, res_in, res_out,
                 gate):  # pragma: no cover - compiled
    """What a resource-saving round needs before its ``exp`` (mean rates).

    ``need = (c + 1) / c * before`` (``c`` the copy to add), and the candidates of
    :func:`_saving_rows` merged (the arguments from ``job_pos`` on are what
    :func:`_takeable` checks).

    Returns:
        ``need``, ``ti``, ``ci``, the atoms, log-survivals and row starts.
    """
    c = have.shape[1] + 1
    factor = (c + 1) / c
    need = np.empty(before.size)
    for x in range(before.size):
        need[x] = factor * before[x]
    tk = (job_pos, budget, cand, din, g_ptr, g_src, dout, free, res_in, res_out, gate)
    ti, ci, v, log_surv, ptr = _saving_rows(atoms, rows, have, before, need, rate, floor, step,
                                            True, tk)
    return need, ti, ci, v, log_surv, ptr


@njit(cache=True)
def _saving_serve(rows, have, need, ti, ci, v, surv, ptr, given, merged, m_atoms, rate, floor,
                  cand, din, g_ptr, g_src, dout, job_pos, budget, free, res_in, res_out, gate,
                  plan_rows, plan_cols, plan_n, by_round):  # pragma: no cover - compiled
    """One resource-saving round (003 §4.1): the c-th copy only if it saves time and slots.

    ``E[r(c)]`` of the candidates ``(ti, ci)`` is the expected maximum of their merged
    rows if ``merged``, else ``given`` (mean times); the others cannot be taken. A
    candidate is usable where ``E[r(c)] > need``; tasks are served by :func:`_serve`,
    candidates by descending ``E[r(c)]``.

    Returns:
        The tasks copied, their candidates so far, and ``E[r(c)]`` of each; nothing when
        no candidate is usable.
    """
    n, m = rows.size, cand.shape[1]
    rc = np.full((n, m), -np.inf)
    if merged:
        _neg_means(v, surv, ptr, m_atoms, ti, ci, rc)
    else:
        for e in range(ti.size):
            rc[ti[e], ci[e]] = given[e]
    gain, order = _gain_order(rc, need)
    h = have.shape[1]
    any_gain = False
    for x in range(n):
        for j in range(m):
            any_gain = any_gain or gain[x, j]
    if not any_gain:
        return rows[:0], np.empty((0, h + 1), dtype=np.int64), np.empty(0)
    pos, cols = _serve_into(rows, order, gain, floor, rate, cand, din, g_ptr, g_src, dout,
                            job_pos, budget, free, res_in, res_out, gate, plan_rows,
                            plan_cols, plan_n)
    by_round[2] += pos.size
    out = np.empty((pos.size, h + 1), dtype=np.int64)
    speed = np.empty(pos.size)
    for e in range(pos.size):
        for z in range(h):
            out[e, z] = have[pos[e], z]
        out[e, h] = cols[e]
        speed[e] = rc[pos[e], cols[e]]
    return rows[pos], out, speed


@njit(cache=True)
def _targets(rows, cols, tasks, cand):  # pragma: no cover - compiled
    """The task and cluster of each planned copy."""
    t = np.empty(rows.size, dtype=np.int64)
    c = np.empty(rows.size, dtype=np.int64)
    for e in range(rows.size):
        t[e], c[e] = tasks[rows[e]], cand[rows[e], cols[e]]
    return t, c


@njit(cache=True)
def _most_groups(g_ptr):  # pragma: no cover - compiled
    """The most input groups of a task (0 for none)."""
    top = 0
    for i in range(g_ptr.size - 1):
        top = max(top, g_ptr[i + 1] - g_ptr[i])
    return top


@njit(cache=True)
def _exp(x):  # pragma: no cover - compiled
    """``numpy.exp`` of ``x`` in place (NumPy's own, in object mode)."""
    with objmode():
        np.exp(x, out=x)


@njit(cache=True)
def _insure_rates(rows, first_reli, second_reli, rate, floor, cand, din, g_ptr, g_src, dout,
                  job_pos, budget, free, res_in, res_out, gate, plan_rows, plan_cols, plan_n,
                  by_round, atoms, filled, slots, rank, g_ptr_s, start, length, v_c, surv_c,
                  thresholds, log1, log2, dt, step_k):  # pragma: no cover - compiled
    """:meth:`PingAn._insure` with mean rates: the rounds' kernels in one call.

    Each ``exp`` is NumPy's (:func:`_exp`). ``slots`` to ``thresholds`` are the
    candidates' quantile source (:meth:`_RowCache.rates`), ``step_k`` the log-survival
    steps of one variable (:func:`~geosim.distributions.survival_steps` of ``(1, K)``).
    """
    k = step_k.size
    m = cand.shape[1]
    pro = np.empty((0, 0))
    if first_reli:
        pro = _keep_exponents(rows, cand, rate, log1, dt)
        _exp(pro)
    rows1, col1 = _round_one(rows, pro, rate, floor, cand, din, g_ptr, g_src, dout, job_pos,
                             budget, free, res_in, res_out, gate, plan_rows, plan_cols, plan_n,
                             by_round)
    if rows1.size == 0:
        return
    ex, v, ptr, xs, js = _second_prep(rows1, col1, cand, rate, floor, atoms, filled, slots,
                                      rank, g_ptr_s, start, length, v_c, surv_c, thresholds,
                                      log1, dt, _tiled(step_k, 2), True, job_pos, budget, din,
                                      g_src, dout, free, res_in, res_out, gate)
    _exp(ex)
    rows1, col1, rate1, pro1, r2, ex2 = _second_order(
        rows1, col1, ex, v, ptr, xs, js, np.empty((0, m)), True, cand, rate, job_pos, log1,
        log2, dt, second_reli, 2 * k)
    if second_reli:
        _exp(ex2)
    rows_c, have, speed = _second_serve(rows1, col1, rate1, pro1, r2, ex2, second_reli, rate,
                                        floor, cand, din, g_ptr, g_src, dout, job_pos, budget,
                                        free, res_in, res_out, gate, plan_rows, plan_cols,
                                        plan_n, by_round)
    while rows_c.size:
        c = have.shape[1] + 1
        need, ti, ci, v, ex, ptr = _saving_prep(atoms, rows_c, have, speed, rate, floor,
                                                _tiled(step_k, c), job_pos, budget, cand, din,
                                                g_ptr, g_src, dout, free, res_in, res_out, gate)
        _exp(ex)
        rows_c, have, speed = _saving_serve(rows_c, have, need, ti, ci, v, ex, ptr,
                                            np.empty(0), True, c * k, rate, floor, cand, din,
                                            g_ptr, g_src, dout, job_pos, budget, free, res_in,
                                            res_out, gate, plan_rows, plan_cols, plan_n,
                                            by_round)


@njit(cache=True)
def _tiled(step_k, r):  # pragma: no cover - compiled
    """``step_k`` repeated ``r`` times (:func:`~geosim.distributions.survival_steps` of ``r``)."""
    k = step_k.size
    out = np.empty(r * k)
    for o in range(r * k):
        out[o] = step_k[o % k]
    return out


@njit(cache=True)
def _cache_rates(slots, tasks, cand, task_type, task_work, g_ptr, g_src, g_size, speed,
                 bandwidth, step, start, length, mean, g_lo, g_hi, v, surv, n_atoms, k, top,
                 reach, gate, denom):  # pragma: no cover - compiled
    """:meth:`_RowCache.rates` in one call: :func:`_cache_rows`, ``exp``, :func:`_cache_means`.

    The new rows' log-survivals are written to ``surv`` and replaced by their ``exp``
    (NumPy's, :func:`_exp`).

    Returns:
        :func:`_cache_means`' results, then the atoms now in use.
    """
    new_atoms, fresh = _cache_rows(slots, tasks, cand, task_type, task_work, g_ptr, g_src,
                                   g_size, speed, bandwidth, step, start, length, v, surv,
                                   n_atoms)
    _exp(surv[n_atoms:new_atoms])
    rate, rank, opt, din, dout, floor = _cache_means(slots, cand, g_ptr, g_src, g_size, fresh,
                                                     start, length, mean, g_lo, g_hi, v, surv,
                                                     k, top, reach, gate, denom)
    return rate, rank, opt, din, dout, floor, new_atoms
