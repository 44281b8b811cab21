"""PingAn's policy: admission, the rounds of insurance and the launch of copies (003 §4.1)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from geosim.distributions import (
    expected_min,
    survival_steps,
)
from geosim.keyed import stream_key
from geosim.modeler import ESTIMATES, LEARN_FROM, PerformanceModel
from geosim.params import Field
from geosim.schedulers.base import Scheduler
from geosim.schedulers.pingan.admission import _admit_pick
from geosim.schedulers.pingan.candidates import (
    TIES,
    _any_unfit,
    _by_groups,
    _flows,
    _neg_bounds,
    _rate_atoms,
    _RowCache,
    top_columns,
)
from geosim.schedulers.pingan.reservations import _held_arrays, _hold, _not_live, _targets, _unhold
from geosim.schedulers.pingan.rounds import (
    _insure_rates,
    _keep_exponents,
    _pairs,
    _round_one,
    _saving_candidates_time,
    _saving_serve,
    _second_order,
    _second_prep,
    _second_serve,
)
from geosim.schedulers.registry import register
from geosim.view import Actions, SchedulerView

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


_NO_SOURCE = (np.empty((0, 0), dtype=np.int64), _NO_INDEX, _NO_INDEX, _NO_INDEX, _NO_INDEX,
              _NO_VALUES, _NO_VALUES, _NO_VALUES)


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
    clusters when ``2 · candidates >= n_clusters``); among clusters tied at the last
    candidate's bound, NumPy's ``argpartition`` chooses (``ties = "numpy"``: its choice,
    and the candidates' order, can depend on the CPU's vector instructions) or a uniform
    draw from the run's seed does (``"seeded"``, the same on every machine). Copies of
    one task are independent draws, as in the paper. PingAn does not checkpoint: a copy
    lost to an outage restarts from zero.

    Args:
        epsilon: ε in (0, 1): the admitted fraction of jobs and, unless ``floor`` is
            given, the rate floor 1/(1+ε).
        floor: The rate floor as its own parameter, a fraction in (0, 1] of a task's best
            expected rate (a copy slower than that is not made); None: 1/(1+ε), as 003
            prints it. Separates the floor's effect from the admitted fraction's.
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
        ties: ``"numpy"`` or ``"seeded"``, how clusters tied at the last candidate's
            bound are chosen; one of :data:`~geosim.schedulers.pingan.candidates.TIES`.
    """

    name = "pingan"
    description = "insurance: ε-fraction sharing, efficient-first then reliability-aware copies"
    params = {
        "epsilon": Field(0.6, "float", lo=0, hi=1, lo_open=True, hi_open=True,
                         doc="admitted fraction of the jobs; rate floor 1/(1+ε)"),
        "floor": Field(None, "float", lo=0, hi=1, lo_open=True, optional=True,
                       doc="rate floor, a fraction of a task's best expected rate; unset: "
                       "1/(1+ε) as 003 prints it"),
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
        "ties": Field("numpy", "str", choices=TIES, doc="clusters tied at the last "
                      "candidate's bound: numpy (argpartition's choice, which depends on the "
                      "CPU's vector instructions) or seeded (uniform from the run's seed, the same "
                      "on every machine)"),
    }

    def __init__(self, epsilon: float = 0.6, principle: str = "eff-reli",
                 allocation: str = "efa", candidates: int = 8, atoms: int = 16,
                 min_samples: int = 5, prior_seconds: float = 600.0, refresh: float = 30.0,
                 backfill: bool = False, estimate: str = "mean-rate",
                 learn_from: str = "winners", floor: float | None = None,
                 ties: str = "numpy"):
        self.validate_params(epsilon=epsilon, principle=principle, allocation=allocation,
                             candidates=candidates, atoms=atoms, min_samples=min_samples,
                             prior_seconds=prior_seconds, refresh=refresh, backfill=backfill,
                             estimate=estimate, learn_from=learn_from, floor=floor,
                             ties=ties)
        # Choices in any case (003 writes Eff-Reli), which a declaration's exact choices
        # do not express.
        for key, value, allowed in (("principle", principle, PRINCIPLES),
                                    ("allocation", allocation, ALLOCATIONS)):
            if value.lower() not in allowed:
                raise ValueError(f"{key} must be one of {', '.join(allowed)}, in any case "
                                 f"(got {value!r})")
        self.epsilon, self.principle, self.allocation = epsilon, principle, allocation
        self.floor = floor
        # Rates are floored at opt / this.
        self._floor_denom = 1.0 + epsilon if floor is None else 1.0 / floor
        self.candidates, self.atoms, self.min_samples = candidates, atoms, min_samples
        self.prior_seconds, self.refresh, self.backfill = prior_seconds, refresh, backfill
        self.estimate, self.learn_from, self.ties = estimate, learn_from, ties

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
        self._total_slots = view.total_slots
        self._gate_mb = np.asarray(view.gate, dtype=float)
        self._rows = _RowCache(view.task_state.size, view.n_clusters, self.candidates)
        # The stream of the seeded choice among tied candidates (drawn only then, so that
        # the default's draws are unchanged).
        self._tie_key = np.uint64(stream_key(rng)) if self.ties == "seeded" else None
        self._reach_epoch = 0         # bumped when the reachable set differs from ...
        self._cand_reach = np.array(view.reachable, dtype=bool)  # ... the candidates' one
        self._cand_version = view.reach_version
        self._logs_version = -1
        #: Copies made by round 1, round 2 and rounds >= 3, over the run.
        self.copies_by_round = np.zeros(3, dtype=np.int64)

    # ------------------------------------------------------------------ the step
    def decide(self, view: SchedulerView, actions: Actions) -> None:
        """Draw up and launch this slot's insurance plan."""
        if self.learn_from == "all":
            self._observe_ended(view)
        refreshed = self.model.refresh(view.time)
        # The decision points of every event-driven policy, and the model's refresh.
        event = self.at_event(view)
        if view.n_ready == 0 or not (event or refreshed):
            return
        if view.reach_version != self._cand_version:
            # Candidates and the slot count follow the reachable set; candidates are
            # renewed when it is not the one they were found for (a set that changed and
            # changed back keeps them).
            self._cand_version = view.reach_version
            if not np.array_equal(view.reachable, self._cand_reach):
                self._cand_reach = np.array(view.reachable, dtype=bool)
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
                                            model.speed_mean, model.bandwidth_mean_pairs, reach,
                                            free, 2 * m < n, self._tie_key)
        if 2 * m >= n:
            cand = np.broadcast_to(np.arange(n), (tasks.size, n)).copy()
        elif self._mean_time:
            speed_b, bw_b = model.speed_hmean, model.bandwidth_hmean_pairs
            every = np.arange(tasks.size)
            cand = top_columns(_neg_bounds(speed_b, bw_b, every, tasks, task_type, task_work,
                                           g_ptr, g_src, g_size, reach), m, tasks, self._tie_key)
            if _any_unfit(cand, free, reach):
                cand = np.concatenate([cand, top_columns(_neg_bounds(
                    speed_b, bw_b, every, tasks, task_type, task_work, g_ptr, g_src, g_size,
                    free > 0), m, tasks, self._tie_key)], axis=1)
        if self._mean_time:
            types, work = task_type[tasks], task_work[tasks]
            k = model.k
            rate = np.full(cand.shape, -np.inf)
            atoms = np.zeros(cand.shape + (k,))
            counts, rows_ptr, rows_all = _by_groups(g_ptr)
            for b in range(counts.size):
                rows = rows_all[rows_ptr[b]:rows_ptr[b + 1]]
                a = _rate_atoms(rows, cand, types, work, g_ptr, g_src, g_size, model.speed,
                                model.bandwidth_pairs, counts[b])
                q = expected_min(a, quantiles=True)[1]
                rate[rows] = model.copy_rate(a).reshape(rows.size, cand.shape[1])
                atoms[rows] = q.reshape(rows.size, cand.shape[1], k)
            # A copy pulls each remote input at its expected rate times the input's size.
            opt, din, dout = _flows(rate, cand, reach, g_ptr, g_src, g_size, self._gate_mb)
            return _Candidates(cand, rate, atoms, opt, din, g_ptr, g_src, dout,
                               opt / self._floor_denom, np.ones(tasks.size, dtype=np.bool_),
                               _NO_SOURCE)
        # expected_min of each group count's rows (the rows kept between refreshes), and
        # the flows as above.
        rate, opt, din, dout, floor, source = self._rows.rates(
            model, slots, tasks, cand, task_type, task_work, g_ptr, g_src, g_size, reach,
            self._gate_mb, self._floor_denom)
        return _Candidates(cand, rate, np.empty(cand.shape + (model.k,)), opt, din, g_ptr,
                           g_src, dout, floor, np.zeros(tasks.size, dtype=np.bool_), source)

    def _logs(self) -> tuple[np.ndarray, np.ndarray]:
        """``log1p(-p)`` and ``p`` per cluster.

        ``p`` are the per-slot failure probabilities of the model's current version. The
        trouble-exemption probability of a copy (003 §3.2) is ``(1 - fail)^e``, ``e``
        its expected slots, computed as ``exp(log1p(-fail) e)`` with ``fail`` one
        cluster's ``p`` or, for two copies on different clusters, the product of theirs
        (its ``log1p`` computed by the rounds for the pairs they weigh).
        """
        if self._logs_version != self.model.version:
            self._fail = np.ascontiguousarray(self.model.outage_probability, dtype=float)
            with np.errstate(divide="ignore", invalid="ignore"):
                self._log1 = np.log1p(-self._fail)
            self._logs_version = self.model.version
        return self._log1, self._fail

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
        log1, fail = self._logs()
        k, m = ev.atoms.shape[2], ev.cand.shape[1]
        if not self._mean_time:     # the same steps, in one compiled call
            # The records go as plain tuples (fields in the records' order): a named tuple
            # argument is typed field by field at every call, a plain one at C speed.
            offer = (ev.rate, ev.floor, ev.cand, ev.din, ev.g_ptr, ev.g_src, ev.dout, ev.atoms,
                     ev.filled)                                      # CandidateArrays
            use = (job_pos, st.budget, st.free, st.res_in, st.res_out, st.gate)   # Resources
            planned = (plan.rows, plan.cols, plan.n, self.copies_by_round)       # PlanArrays
            _insure_rates(rows, self._first != "eff", self._second != "eff", offer, use,
                          planned, tuple(ev.source), log1, fail, self.model.dt,
                          survival_steps(1, k))
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
            rows1, col1, ex, v, ptr, xs, js, r2, False, ev.cand, ev.rate, job_pos, log1, fail,
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
