"""Mantri: resource-aware restarts and duplicates of outliers (OSDI 2010, §5.1, §5.2, §5.5).

Ananthanarayanan et al., "Reining in the Outliers in Map-Reduce Clusters using Mantri",
OSDI 2010. At every check Mantri compares, for each running task, the time its copies
still need (``t_rem``, from their progress) with the time a new copy would take
(``t_new``, from the performance model or the phase's completed copies), and restarts or
duplicates the task only when that is likely to finish it sooner without costing more
slot time.
"""

from __future__ import annotations

import numpy as np

from geosim.distributions import exact_min, quantile_bounds, survival_steps, thresholds
from geosim.jit import njit
from geosim.params import Field
from geosim.reports import MONITORING_PARAMS, Monitored
from geosim.schedulers.compose import PlaceFn, Redundancy
from geosim.schedulers.mantri_rows import (
    CopyReports,
    PhaseLog,
    clean_rows,
    exact_atoms,
    noisy_progress,
    observed_t_rem,
    t_new_rows,
)
from geosim.schedulers.mantri_rules import bound_tables, decide, decide_lazy
from geosim.variability import copy_factors
from geosim.view import READY, Actions, SchedulerView, concat_ranges, first_of_runs, in_sorted

_EPS = 1e-9
#: Candidate tasks whose ``t_new`` distributions are computed in one batch.
_CHUNK = 32
#: Candidate tasks (largest ``t_rem`` first) evaluated exactly per check, by default.
_MAX_EVAL = 64
#: Where ``t_new`` comes from (the ``estimator`` parameter).
ESTIMATORS = ("model", "observed")
#: When the rules run (the ``check`` parameter).
CHECKS = ("interval", "free")


def remaining_time(elapsed: np.ndarray, progress: np.ndarray, base: np.ndarray) -> np.ndarray:
    """``t_rem`` of copies from their progress reports: ``elapsed · (1 − p) / (p − base)``.

    A copy that has made no progress yet has ``t_rem = inf``.
    """
    gain = progress - base
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(gain > _EPS, elapsed * (1.0 - progress) / np.maximum(gain, _EPS),
                        np.inf)


def duplicate_rule(t_rem: np.ndarray, t_new: np.ndarray, copies: np.ndarray,
                   delta: float, factor: float | None = None) -> np.ndarray:
    """Mantri's duplicate test (§5.1): ``P(t_rem > t_new · (c+1)/c) > δ``.

    A duplicate pays off in slot time when ``c`` copies running ``t_rem`` more cost more
    than ``c + 1`` copies running ``t_new``. 000 §VI-A states the test with a fixed
    factor, ``P(t_rem > 2 t_new) > δ`` (the same for a task's first duplicate).

    Args:
        t_rem: Remaining time of each task (its fastest live copy), shape ``(N,)``.
        t_new: Equally likely atoms of a new copy's completion time, shape ``(N, K)``.
        copies: Live copies ``c >= 1`` of each task, shape ``(N,)``.
        delta: The probability threshold δ.
        factor: A fixed factor instead of ``(c+1)/c`` (2 for 000's statement).

    Returns:
        Whether each task gets a duplicate.
    """
    t_rem = np.asarray(t_rem, dtype=float)
    c = np.asarray(copies, dtype=float)
    factor = (c + 1.0) / c if factor is None else np.full(c.shape, float(factor))
    p = np.mean(np.asarray(t_new) * factor[:, None] < t_rem[:, None], axis=1)
    return p > delta


def restart_rule(t_rem: np.ndarray, mean_new: np.ndarray, margin: float) -> np.ndarray:
    """Mantri's kill-and-restart test (§5.1): ``t_rem > E[t_new] + Δ``."""
    return np.asarray(t_rem) > np.asarray(mean_new) + margin


class Mantri(Monitored, Redundancy):
    """Mantri's restarts and duplicates (OSDI 2010, §5.1) with network-aware placement (§5.2).

    Every ``interval`` seconds (a progress report of every copy, Mantri's period Δ),
    for each running task:

    - ``t_rem`` of a copy is ``elapsed · (1 − p) / (p − base)`` from its progress ``p``
      (``base``: where it started), ``inf`` while it has made none; no wrap-up time is
      added (tasks write no output here). A task's ``t_rem`` is its fastest copy's.
    - ``t_new`` on cluster ``m`` (§5.5) is the time of a fresh copy there, from the
      performance model's observed distributions: the copy's rate is
      ``min(V^P_m / work, min_s V^T_{s,m} / size_s)``, the processing speed atoms of the
      task's type on ``m`` and the bandwidth atoms of each pair from the clusters ``s``
      holding its inputs (``size_s`` the largest input there; inputs move in parallel,
      local ones are free), independent, combined exactly as in PingAn's modeler
      (:func:`~geosim.modeler.expected_min`); ``t_new = 1 / rate`` atom by atom, so
      ``E[t_new]`` is the mean of the inverted atoms, not the inverse of the mean rate.
    - The new copy goes to the reachable cluster with a free slot that minimises
      ``E[t_new]`` (§5.2's network-aware placement: the transfer of its inputs plus its
      compute).

    Mantri's rules (§5.1, in this order), tasks taken by decreasing ``t_rem`` (at most
    ``max_candidates`` evaluated exactly per check), at most one action per task per check:

    1. While the task's job has tasks waiting for a slot (ready without a copy, or
       placed at this very boundary), **kill and restart** the task (all its copies, one
       new copy) when ``t_rem > E[t_new] + Δ``, at most ``max_restarts`` times per task.
       Mantri gives a slot to the restart before the waiting task: the restart may take
       the slot of a copy its job placed at this boundary (which did nothing yet; that
       task waits again), or an idle slot.
    2. Otherwise **duplicate** it on an idle slot when ``P(t_rem > t_new · (c+1)/c) > δ``
       (``c`` its live copies): the duplicate lowers the expected slot time the task
       holds. The same rule applies at the end of a job's phase (no task waiting).

    A copy Mantri launched is judged by the model, ``t_rem = min(progress estimate,
    E[t_new] − age)``, until it outlives its expected time; without this every new copy
    still fetching its inputs looks slow, and a task drew a copy per report. A task is
    judged once its newest copy has run one report period. The first copy to finish
    wins; Mantri does not checkpoint, so a restarted task starts from its saved
    progress (zero).

    **The observed estimator** (``estimator = "observed"``; Mantri §5.5 as 000 §VI-A
    states it: "Mantri estimates the remaining time to finish, t_rem, for each task and
    predicts the required execution time of a relaunched copy of the task, t_new").
    000 gives neither δ nor how the two are estimated; what follows is a
    reconstruction from Mantri §5.5:

    - *Reports.* Every ``interval`` seconds from its start (at the first boundary at or
      after ``start + k · interval``) each running copy reports its progress; Mantri
      keeps the last report (with ``monitoring = "reports"``, the last heartbeat the
      board delivered instead). The reported progress is ``p̂ = p · exp(σZ − σ²/2)``,
      clipped to ``(0, 1]``, ``σ = progress_noise``, ``Z`` a standard normal keyed by
      (copy, report index) under a key drawn from the scheduler's stream at prepare.
    - ``t_rem`` of a copy (:func:`~geosim.schedulers.mantri_rows.observed_t_rem`) is
      ``(1 − p̂) / rate − (now − report time)``, floored at 0, with ``rate = p̂ /
      (report time − start)``: the report's prediction less the time since. A task is
      judged only once every live copy has reported (a copy younger than one period is
      too young to judge); its ``t_rem`` is its fastest copy's (and a copy Mantri
      launched is still capped by its expected end, as above).
    - ``t_new``'s equally likely atoms are the run times (end − start) of the copies of
      the task's phase (same job, same ``task_stage``) that completed (won; killed
      copies are not observations), each scaled by the task's work over the work that
      copy did (``task_work · (1 − base)``) and by the model's mean speed of the
      copy's cluster over the candidate cluster's (exactly 1 on the copy's own
      cluster; elsewhere only as good as the model's speeds). A copy's end is the
      boundary at which Mantri sees it done (at most one slot late). Only the most
      recent K completions of each phase are kept (K = the model's atom count, 16 by
      default), so a check's cost stays bounded. A task whose phase has fewer than
      ``min_samples`` completions is not judged (``t_new`` is unknown).
    - The rules are unchanged: duplicate when ``P(t_rem > f · t_new) > δ`` over these
      atoms, restart when ``t_rem > E[t_new] + Δ`` (the atoms' mean); the new copy goes
      to the cluster of least ``E[t_new]`` with room.

    **The check instant** (``check``): ``"interval"`` runs the rules every ``interval``
    seconds (Mantri's report period); ``"free"`` (000: "once a machine becomes
    available") runs them at a decision when a slot was freed since the previous one
    (a copy live after the previous decision has ended: won, lost, killed or failed; or
    a cluster became reachable again), whatever the clock; the reports are still taken
    every ``interval``.

    Args:
        interval: Seconds between progress reports (Δ). The paper leaves the period to
            the job manager; at 1 s (every slot of the PingAn scenarios) copies a few
            seconds old pass the duplicate test and Mantri floods the WAN with copies
            (docs/model.md gives the measurements), so the default is 10 s.
        delta: δ of the duplicate test, in [0, 1).
        restart_margin: Δ of the restart test in seconds; ``None`` uses ``interval``,
            the paper's choice.
        max_restarts: Restarts per task (γ).
        duplicate_factor: ``None`` for Mantri's ``(c+1)/c``; a fixed factor otherwise.
            000 §VI-A's Mantri is ``duplicate_factor=2.0, max_restarts=0``: a copy when
            ``P(t_rem > 2 t_new) > δ``, no restarts.
        estimator: ``"model"`` (default: ``t_rem`` from exact progress, ``t_new`` from
            the performance model and the work factor's known distribution) or
            ``"observed"`` (above).
        check: ``"interval"`` (default) or ``"free"`` (above).
        progress_noise: σ of the reported progress's noise (``"observed"`` only; 0).
        min_samples: Completed copies a phase needs before its tasks are judged
            (``"observed"`` only; default 1).
        max_candidates: Candidates (tasks that pass a cheap lower bound of the rules)
            evaluated exactly per check, largest ``t_rem`` first; None evaluates all.
            The counts :attr:`n_checks`, :attr:`n_capped` and :attr:`n_dropped` say how
            often it bound.
        monitoring: ``"oracle"`` reads every copy's true progress at every slot
            (today's free reports); ``"reports"`` reads the last progress report each
            copy's heartbeat delivered to its job's master cluster
            (:mod:`geosim.reports`): ``t_rem`` is computed from the report's progress
            and the time it was measured. The period Δ of the rules stays ``interval``.
        report_interval: Seconds between a copy's heartbeats (``"reports"``; default 3).
        report_delay: Seconds a report travels per WAN hop (``"reports"``; default 0).
        report_to: Master cluster: ``"home"`` (default; the job's largest raw-input
            cluster) or a cluster id (``"reports"``).
        monitoring_cost: Fraction of its slot share each copy gives to its monitoring,
            in [0, 1) (``"reports"``; default 0).

    Raises:
        ValueError: A parameter out of its range, ``progress_noise > 0`` or
            ``min_samples`` given with ``estimator = "model"``, or a report setting
            without ``monitoring = "reports"``.

    On a world whose copies draw their own work (``task_cv > 0``, :mod:`geosim.variability`),
    ``t_new`` also carries that variability: each atom of the speed/bandwidth model is
    multiplied by the K quantile atoms of the task's work factor and the K·K products
    are reduced to K equal-weight atoms by block means (the mean is kept).
    """

    name = "mantri"
    params = {
        "interval": Field(10.0, "float", lo=0, hi=np.inf, lo_open=True, doc="Δ: seconds "
                          "between progress reports"),
        "delta": Field(0.25, "float", lo=0, hi=1, hi_open=True, doc="δ of the duplicate test"),
        "restart_margin": Field(None, "float", lo=0, hi=np.inf, optional=True, doc="Δ of the "
                                "restart test in seconds (none: interval)"),
        "max_restarts": Field(3, "int", lo=0, hi=np.inf, doc="γ: restarts per task"),
        "duplicate_factor": Field(None, "float", lo=1, hi=np.inf, optional=True,
                                  doc="fixed factor of the duplicate test (none: (c+1)/c)"),
        "estimator": Field("model", "str", choices=ESTIMATORS, doc="model: t_rem from true "
                           "progress, t_new from the performance model; observed: both from "
                           "progress reports and the phase's completed copies"),
        "check": Field("interval", "str", choices=CHECKS, doc="interval: rules every interval "
                       "s; free: at a decision after a slot was freed"),
        "progress_noise": Field(0.0, "float", lo=0, hi=np.inf, doc="σ of the reported "
                                "progress's log-normal noise (observed)"),
        "min_samples": Field(None, "int", lo=1, hi=np.inf, optional=True, doc="completed "
                             "copies a phase needs before its tasks are judged (observed; "
                             "default 1)"),
        "max_candidates": Field(_MAX_EVAL, "int", lo=1, hi=np.inf, optional=True,
                                doc="candidates evaluated per check, largest t_rem first "
                                    "(none: all)"),
        **MONITORING_PARAMS,
    }

    def __init__(self, interval: float = 10.0, delta: float = 0.25,
                 restart_margin: float | None = None, max_restarts: int = 3,
                 duplicate_factor: float | None = None, estimator: str = "model",
                 check: str = "interval", progress_noise: float = 0.0,
                 min_samples: int | None = None, max_candidates: int | None = _MAX_EVAL,
                 monitoring: str = "oracle",
                 report_interval: float | None = None, report_delay: float | None = None,
                 report_to: str | int | None = None, monitoring_cost: float | None = None):
        self.validate_params(interval=interval, delta=delta, restart_margin=restart_margin,
                             max_restarts=max_restarts, duplicate_factor=duplicate_factor,
                             estimator=estimator, check=check, progress_noise=progress_noise,
                             min_samples=min_samples, max_candidates=max_candidates,
                             monitoring=monitoring, report_interval=report_interval,
                             report_delay=report_delay, report_to=report_to,
                             monitoring_cost=monitoring_cost)
        if estimator == "model" and progress_noise > 0:
            raise ValueError("progress_noise needs estimator='observed' (the model estimator "
                             "reads exact progress)")
        if estimator == "model" and min_samples is not None:
            raise ValueError("min_samples needs estimator='observed' (the model estimator "
                             "needs no completed copies)")
        self.interval, self.delta, self.restart_margin = interval, delta, restart_margin
        self.max_restarts = max_restarts
        self.duplicate_factor = duplicate_factor
        self.estimator, self.check = estimator, check
        self.progress_noise, self.min_samples = progress_noise, min_samples
        self.max_candidates = max_candidates
        # Rules across fields (report settings need monitoring='reports'), and report_to:
        # geosim.reports.check_monitoring.
        self._init_monitoring(monitoring, report_interval, report_delay, report_to,
                              monitoring_cost)

    def prepare(self, view, rng, model) -> None:
        """Clear the restart counts and the report clock."""
        super().prepare(view, rng, model)
        self._restarts = np.zeros(len(view.task_work), dtype=np.int64)
        self._next = -np.inf
        # Copies Mantri launched, ascending, and when the model expected each to end.
        self._mine = np.empty(0, dtype=np.int64)
        self._due = np.empty(0)
        self._margin = float(self.interval if self.restart_margin is None
                             else self.restart_margin)
        #: Duplicates and restarts made over the run.
        self.n_duplicates = 0
        self.n_restarts = 0
        self._clean_key: tuple[int, int] | None = None   # model version _clean is for
        self._clean = False
        self._tables_key: tuple[int, int, bool] | None = None  # ... and _tables
        self._tables = (np.empty((0, 0)), np.empty(0), np.empty((0, 0), dtype=np.int64))
        self._fastest_key: tuple[int, int] | None = None   # ... and _fastest
        self._fastest = np.empty((0, 0))
        self._bounds_memo: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        #: Checks that evaluated the rules; those with more candidates than
        #: ``max_candidates``, and the candidates the cap left out over the run.
        self.n_checks = self.n_capped = self.n_dropped = 0
        # The live copies after the last decision and the reachable clusters then
        # (estimator 'observed' or check 'free').
        self._tracking = self.estimator == "observed" or self.check == "free"
        self._live_seen = np.empty(0, dtype=np.int64)
        self._reach_seen: np.ndarray | None = None
        if self.estimator == "observed":
            self._phases = PhaseLog(view.task_job, view.task_stage, self.model.k)
            # The copies' own reports, unless the board (monitoring='reports') gives them.
            self._own = CopyReports(self.interval) if self.reports is None else None
            self._key = int(rng.integers(2**63))       # the noise's stream

    # ------------------------------------------------------------------ the report
    def speculate(self, view: SchedulerView, actions: Actions, place: PlaceFn,
                  free: np.ndarray) -> None:
        """At a check (``check``), restart or duplicate the tasks Mantri's rules pick."""
        now = view.time
        # The live copies now, read once for the copies' own reports and the rules.
        own = self.estimator == "observed" and self._own is not None
        info = view.copy_info() if own else None
        freed = self._observe(view, now, info) if self._tracking else False
        if self.check == "free":
            run = freed
        else:
            run = now >= self._next - _EPS
            if run:
                self._next = now + self.interval
        if run:
            self._check(view, actions, free, now,
                        view.copy_info() if info is None else info)
        if self._tracking:          # the live copies after this decision's own actions
            self._live_seen = np.array(view.live_copies)

    def _observe(self, view: SchedulerView, now: float, info: dict | None) -> bool:
        """Take the reports due and log the completed copies; whether a slot was freed.

        ``info`` is :meth:`SchedulerView.copy_info` now (None without own reports).

        A slot was freed since the last decision when a copy live after it has ended
        (won, lost or killed) or a cluster became reachable again.
        """
        seen = self._live_seen
        ended = seen[~in_sorted(seen, view.live_copies)]
        reach = np.array(view.reachable, dtype=bool)
        back = self._reach_seen is not None and bool(np.any(reach & ~self._reach_seen))
        self._reach_seen = reach
        if self.estimator == "observed":
            if ended.size:
                done = view.copy_info(ended)
                won = done["progress"] >= 1.0          # the winner's progress is set to 1
                t = done["task"][won]
                self._phases.record(t, now - done["start"][won],
                                    view.task_work[t] * (1.0 - done["base"][won]),
                                    done["cluster"][won], view.task_type[t])
            if self._own is not None:
                self._own.update(info["copy"], info["start"], info["progress"], now)
        return ended.size > 0 or back

    def _check(self, view: SchedulerView, actions: Actions, free: np.ndarray, now: float,
               info: dict) -> None:
        """Mantri's rules at one check on the live copies ``info``: restart or duplicate."""
        if info["copy"].size == 0:
            return
        # Copies placed at this boundary as their task's only copy: a slot Mantri may
        # give to a restart or a duplicate of the same job instead (they did nothing yet).
        fresh = np.flatnonzero((info["start"] >= now - _EPS)
                               & (view.task_live[info["task"]] == 1))
        if not free.any() and fresh.size == 0:
            return          # no slot for the job managers to hand out
        est = self._estimates(view, info, now)
        if est is None:
            return
        tasks, t_rem, c, rows, cnt = est
        model = self.model
        types = view.task_type[tasks]
        work = view.task_work[tasks] * (1.0 - view.task_saved[tasks])
        jobs = view.task_job[tasks]
        fresh_jobs = info["job"][fresh]
        waiting = self._waiting(view, jobs) | np.isin(jobs, fresh_jobs)
        room_any = free > 0
        room_any[info["cluster"][fresh]] = True
        if self.estimator == "observed":
            atoms, _, means = self._phases.atoms(tasks, work, types, model.speed_mean,
                                                 np.flatnonzero(room_any))
            lb_room, mean_room = atoms.min(axis=(1, 2)), means.min(axis=1)
        else:
            with np.errstate(divide="ignore"):
                lb_room = work / _masked_max(self._fastest_atoms(), room_any)[types]
                mean_room = work / _masked_max(model.speed_mean, room_any)[types]
            if view.copy_variability != "none":     # (otherwise every factor is exactly 1)
                lb_room = lb_room * self._factor_atoms(view, tasks)[:, 0]
        restartable = waiting & (self._restarts[tasks] < self.max_restarts)
        restartable &= np.isin(jobs, fresh_jobs) | bool(free.any())
        dup = (c + 1.0) / c if self.duplicate_factor is None else self.duplicate_factor
        cand = (restartable & (t_rem > mean_room + self._margin)) | (
            bool(free.any()) & (t_rem / dup > lb_room))
        idx = np.flatnonzero(cand)
        self.n_checks += 1
        cap = self.max_candidates
        if cap is not None and idx.size > cap:
            self.n_capped += 1
            self.n_dropped += int(idx.size - cap)
        if idx.size == 0:
            return
        idx = idx[np.lexsort((tasks[idx], -t_rem[idx]))][:cap]
        offset = np.concatenate(([0], np.cumsum(cnt)[:-1]))
        # The pool of fresh copies a restart may take the slot of: rows of info by job,
        # each job's in copy order; taken[] marks the ones used.
        order = fresh[np.argsort(info["copy"][fresh], kind="stable")]
        pool_rows = order[np.argsort(info["job"][order], kind="stable")]
        pool_jobs = info["job"][pool_rows]
        pool_cluster = np.ascontiguousarray(info["cluster"][pool_rows], dtype=np.int64)
        taken = np.zeros(pool_rows.size, dtype=np.bool_)
        pool_lo = np.searchsorted(pool_jobs, jobs, side="left")
        pool_hi = np.where(restartable, np.searchsorted(pool_jobs, jobs, side="right"), pool_lo)
        factor = -1.0 if self.duplicate_factor is None else float(self.duplicate_factor)
        # Per chunk, in decision order: expected ends of the new copies, whether each
        # takes a preempted copy's slot, plain launches (task, cluster), swaps (task,
        # cluster, slot of the preempted copy), preempted copies and restarted copies.
        due: list[np.ndarray] = []
        kind: list[np.ndarray] = []
        plain_task: list[np.ndarray] = []
        plain_cluster: list[np.ndarray] = []
        swaps: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        preempted: list[np.ndarray] = []
        restarted: list[np.ndarray] = []
        for lo in range(0, idx.size, _CHUNK):
            if not free.any() and taken.all():
                break
            chunk = idx[lo: lo + _CHUNK]
            what, where, took, best_mean = self._decide_chunk(
                view, tasks[chunk], work[chunk], t_rem[chunk], c[chunk], restartable[chunk],
                pool_lo[chunk], pool_hi[chunk], pool_cluster, taken, free, factor)
            acts = np.flatnonzero(what)
            if acts.size == 0:
                continue
            i, best, r = chunk[acts], where[acts], took[acts]
            task = tasks[i].astype(np.int64)
            due.append(now + best_mean[acts])
            swap = r >= 0
            kind.append(swap)
            plain_task.append(task[~swap])
            plain_cluster.append(best[~swap])
            if swap.any():
                prow = pool_rows[r[swap]]
                preempted.append(info["copy"][prow].astype(np.int64))
                swaps.append((task[swap], best[swap], info["slot"][prow].astype(np.int64)))
            restart = what[acts] == 2
            ri = i[restart]
            if ri.size:
                restarted.append(info["copy"][rows[concat_ranges(offset[ri],
                                                                 offset[ri] + cnt[ri])]])
                self._restarts[task[restart]] += 1      # each task once per report
            self.n_restarts += int(ri.size)
            self.n_duplicates += int(acts.size - ri.size)
        # Preempted fresh copies first, their slots to the new copies; the restarted
        # copies last, so no new copy lands on the slot it is meant to leave.
        if preempted:
            actions.kill(np.concatenate(preempted))
        ids = []
        if swaps:
            t, cl, sl = (np.concatenate(parts) for parts in zip(*swaps, strict=True))
            ids.append(actions.launch_many(t, cl, slots=sl))
        if plain_task and sum(t.size for t in plain_task):
            ids.append(actions.launch_many(np.concatenate(plain_task),
                                           np.concatenate(plain_cluster)))
        if ids:
            # due[] is in decision order; swaps and plain launches were split from it.
            is_swap = np.concatenate(kind)
            ends = np.concatenate(due)
            self._remember(view, np.concatenate(ids),
                           np.concatenate([ends[is_swap], ends[~is_swap]]))
        if restarted:
            actions.kill(np.concatenate(restarted))

    def _decide_chunk(self, view: SchedulerView, tasks: np.ndarray, work: np.ndarray,
                      t_rem: np.ndarray, c: np.ndarray, restartable: np.ndarray,
                      pool_lo: np.ndarray, pool_hi: np.ndarray, pool_cluster: np.ndarray,
                      taken: np.ndarray, free: np.ndarray, factor: float
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Mantri's rules for a chunk of candidates, ``free`` and ``taken`` too.

        The rules are :mod:`~geosim.schedulers.mantri_rules`' (:func:`decide`).

        ``t_new`` is needed only where a rule looks: the mean of every cluster a candidate
        may pick (for the argmin) and the atoms of the one it picks. When every row is
        known to ascend with finite atoms, :func:`decide_lazy` computes a cheap lower
        bound of each such mean and the exact row (by the fast path or the general one,
        as :meth:`_t_new` would) only where the bound does not already rule the cluster
        out; the result is the same, bit for bit. Otherwise every row the chunk can use
        is computed first, as :meth:`_t_new` does.

        Returns:
            Per candidate: 0, 1 or 2 (nothing, duplicate, restart); the cluster; the pool
            entry whose slot it takes (-1: an idle slot); and ``E[t_new]`` there.
        """
        model, n = self.model, view.n_clusters
        k = model.k
        if self.estimator == "observed":
            atoms, n_atoms, means = self._phases.atoms(tasks, work, view.task_type[tasks],
                                                       model.speed_mean)
            what, where, took = decide(means, atoms, n_atoms, t_rem, c, restartable, pool_lo,
                                       pool_hi, pool_cluster, taken, free, self._margin,
                                       self.delta, factor)
            return what, where, took, means[np.arange(tasks.size), where]
        g_ptr, g_src, g_size = view.input_group_ptr(tasks)
        lazy = (k <= 128 and g_src.size > 0 and self._clean_model()
                and (view.copy_variability == "none" or not np.any(view.task_cv[tasks] > 0))
                and bool(np.all(np.isfinite(work) & (work > 0)))
                and bool(np.all(np.isfinite(g_size) & (g_size > 0))))
        if lazy:
            lo, hi = self._bounds(k, tasks.size * n)
            r = 1 + int(np.diff(g_ptr).max())
            dense = model.dense_bandwidth()
            what, where, took, best_mean = decide_lazy(
                model.speed, model.bandwidth_pairs, dense,
                view.task_type[tasks].astype(np.int64),
                work.astype(float), g_ptr.astype(np.int64), g_src.astype(np.int64),
                g_size.astype(float), survival_steps(1, k), lo, hi, survival_steps(r, k),
                thresholds(k), *self._bound_tables(dense), t_rem, c, restartable, pool_lo,
                pool_hi, pool_cluster, taken, free, self._margin, self.delta, factor)
            return what, where, took, best_mean
        # Only clusters with room now (or a fresh copy to take) can be picked.
        need = free > 0
        need[pool_cluster[~taken]] = True
        atoms = self._t_new(view, tasks, work, need)   # (m, n, K) ascending
        means = atoms.mean(axis=2)
        what, where, took = decide(means, atoms, np.full(tasks.size, k, dtype=np.int64), t_rem,
                                   c, restartable, pool_lo, pool_hi, pool_cluster, taken, free,
                                   self._margin, self.delta, factor)
        return what, where, took, means[np.arange(tasks.size), where]

    def _bounds(self, k: int, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
        """:func:`~geosim.modeler.quantile_bounds`, kept per ``(k, n_rows)``."""
        key = (k, n_rows)
        got = self._bounds_memo.get(key)
        if got is None:
            got = self._bounds_memo[key] = quantile_bounds(k, n_rows)
        return got

    def _remember(self, view: SchedulerView, copies: np.ndarray, due: np.ndarray) -> None:
        """Record new copies and their expected ends; forget copies no longer live."""
        mine, ends = np.concatenate((self._mine, copies)), np.concatenate((self._due, due))
        if mine.size > 2 * max(view.live_copies.size, 64):
            keep = in_sorted(mine, view.live_copies)
            mine, ends = mine[keep], ends[keep]
        order = np.argsort(mine, kind="stable")
        self._mine, self._due = mine[order], ends[order]

    # ------------------------------------------------------------------ estimates
    def _estimates(self, view: SchedulerView, info: dict, now: float):
        """Per running task: ``t_rem``, live copies, and its copies' rows in ``info``.

        Returns None when no task can be judged yet; otherwise the judged tasks, their
        ``t_rem`` and copy counts, the rows of ``info`` sorted by task, and the rows per
        judged task.
        """
        task = info["task"]
        elapsed = now - info["start"]
        if self.estimator == "observed":
            rem, reported = self._observed_rem(info, now)
        elif self.reports is None:
            rem = remaining_time(elapsed, info["progress"], info["base"])
        else:            # the last report: its progress and the time it was measured
            progress, seen = self.progress_seen(view, info)
            rem = remaining_time(seen - info["start"], progress, info["base"])
        if self._mine.size:
            at = np.minimum(np.searchsorted(self._mine, info["copy"]), self._mine.size - 1)
            due = np.where(self._mine[at] == info["copy"], self._due[at], -np.inf)
            young = due > now
            rem[young] = np.minimum(rem[young], due[young] - now)
        pos = np.lexsort((info["start"], task))      # by task, newest copy last
        keys = task[pos]
        first = np.flatnonzero(first_of_runs(keys))
        cnt = np.diff(np.append(first, keys.size))
        t_rem = np.minimum.reduceat(rem[pos], first)
        if self.estimator == "observed":
            # Every live copy has reported, and the phase has completed copies enough.
            judged = np.minimum.reduceat(reported[pos].astype(np.int8), first) > 0
            judged &= self._phases.samples(keys[first]) >= (self.min_samples or 1)
        else:
            newest = pos[first + cnt - 1]
            period = max(self.interval, view.dt) - _EPS
            judged = elapsed[newest] >= period
        if not judged.any():
            return None
        sel = np.flatnonzero(judged)
        rows = concat_ranges(first[sel], first[sel] + cnt[sel])
        return keys[first[sel]], t_rem[sel], cnt[sel].astype(float), pos[rows], cnt[sel]

    def _observed_rem(self, info: dict, now: float) -> tuple[np.ndarray, np.ndarray]:
        """``t_rem`` of the copies of ``info`` from their last (noisy) reports; which have one.

        The reports are the copies' own (:class:`~geosim.schedulers.mantri_rows.CopyReports`)
        or, with ``monitoring = "reports"``, the heartbeats the board delivered (report
        ``k`` of a copy: ``k = floor((time − start) / report_interval)``).
        """
        copies, start = info["copy"], info["start"]
        if self.reports is None:
            progress, at, index = self._own.last(copies)
        else:
            progress, at = self.reports.reported(copies)
            index = np.floor((at - start) / float(self.reports.interval) + _EPS
                             ).astype(np.int64)
        progress = noisy_progress(progress, self.progress_noise, self._key, copies, index)
        return observed_t_rem(progress, at, start, now, info["base"]), index >= 1

    def _waiting(self, view: SchedulerView, jobs: np.ndarray) -> np.ndarray:
        """Whether each job (of ``jobs``) has ready tasks waiting for a slot."""
        if view.n_ready == 0:
            return np.zeros(jobs.size, dtype=bool)
        uniq, inv = np.unique(jobs, return_inverse=True)
        tasks, where = view.tasks_of(uniq)
        ready = view.task_state[tasks] == READY
        has = np.bincount(where[ready], minlength=uniq.size) > 0
        return has[inv]

    def _t_new(self, view: SchedulerView, tasks: np.ndarray, work: np.ndarray,
               need: np.ndarray | None = None) -> np.ndarray:
        """Atoms of a new copy's completion time on every cluster, shape ``(m, n, K)``.

        The copy's rate is the minimum of its processing rate and the transfer rate of
        each input group (one per source cluster, its largest input), all independent.
        Its quantile atoms are :func:`~geosim.modeler.expected_min`'s for the ``(m·n, R, K)``
        problem of the tasks' rows (``R`` one more than the most input groups of a task),
        computed row by row (:func:`t_new_rows`). Clusters outside ``need`` (if given)
        are left at 0.
        """
        model, n = self.model, view.n_clusters
        k = model.k
        types = view.task_type[tasks]
        g_task, g_src, g_size = view.input_groups(tasks)
        per_task = np.bincount(g_task, minlength=tasks.size)
        r = 1 + int(per_task.max(initial=0))
        if r == 1:
            with np.errstate(divide="ignore"):
                q = model.speed[:, types, :].transpose(1, 0, 2) / work[:, None, None]
                t_new = 1.0 / q[:, :, ::-1]
        else:
            if need is None:
                need = np.ones(n, dtype=np.bool_)
            lo, hi = quantile_bounds(k, tasks.size * n)
            t_new = np.zeros((tasks.size, n, k))
            redo = t_new_rows(model.speed, model.bandwidth_pairs, types.astype(np.int64),
                               work.astype(float), np.r_[0, np.cumsum(per_task)],
                               g_src.astype(np.int64), g_size.astype(float),
                               need.astype(np.bool_), survival_steps(1, k), lo, hi, t_new,
                               self._clean_model())
            if redo.size:
                self._t_new_exact(view, tasks, work, redo, r, t_new)
        if view.copy_variability == "none" or not np.any(view.task_cv[tasks] > 0):
            return t_new
        f = self._factor_atoms(view, tasks)                        # (n tasks, K)
        prod = np.sort((t_new[:, :, :, None] * f[:, None, None, :]).reshape(
            tasks.size, n, k * k), axis=2)
        return prod.reshape(tasks.size, n, k, k).mean(axis=3)

    def _bound_tables(self, dense: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`bound_tables` of the model's speeds and bandwidths, kept per version.

        The bandwidth rows are ``dense``'s if it is not empty, else the pair table's.
        """
        model = self.model
        key = (id(model), model.version, dense.size > 0)
        if self._tables_key != key:
            self._tables_key = key
            self._tables = bound_tables(
                model.speed, dense if dense.size else model.bandwidth_pairs.values)
        return self._tables

    def _fastest_atoms(self) -> np.ndarray:
        """The fastest speed atom of each cluster and type, kept per model version.

        In a clean model (:meth:`_clean_model`, whose rows ascend) that is each row's last.
        """
        model = self.model
        key = (id(model), model.version)
        if self._fastest_key != key:
            self._fastest_key = key
            self._fastest = (np.ascontiguousarray(model.speed[:, :, -1]) if self._clean_model()
                             else model.speed.max(axis=2))
        return self._fastest

    def _clean_model(self) -> bool:
        """Whether every speed and bandwidth atom is finite and >= 0 and each row ascends."""
        model = self.model
        key = (id(model), model.version)
        if self._clean_key != key:
            self._clean_key = key
            self._clean = bool(all(clean_rows(a.reshape(-1, a.shape[-1]))
                                   for a in (model.speed, model.bandwidth_pairs.values)))
        return self._clean

    def _t_new_exact(self, view: SchedulerView, tasks: np.ndarray, work: np.ndarray,
                     redo: np.ndarray, r: int, t_new: np.ndarray) -> None:
        """Fill rows ``redo`` (``task · n + cluster``) of ``t_new`` by the general path.

        The rows' ``(R, K)`` problems are laid out as in one call over all rows and
        solved with their offsets in that call, so each gets the same atoms.
        """
        model, n = self.model, view.n_clusters
        pos, dst = redo // n, redo % n
        g_task, g_src, g_size = view.input_groups(tasks)
        per_task = np.bincount(g_task, minlength=tasks.size)
        atoms = exact_atoms(model.speed, model.bandwidth_pairs,
                             view.task_type[tasks].astype(np.int64), work.astype(float), pos,
                             dst, np.r_[0, np.cumsum(per_task)].astype(np.int64),
                             g_src.astype(np.int64), g_size.astype(float), r)
        _, q = exact_min(atoms, 2.0 * redo.astype(float), True)
        with np.errstate(divide="ignore"):
            t_new[pos, dst] = 1.0 / q[:, ::-1]

    def _factor_atoms(self, view: SchedulerView, tasks: np.ndarray) -> np.ndarray:
        """K equal-weight quantile atoms of each task's work factor, ascending."""
        k = self.model.k
        u = np.broadcast_to((np.arange(k) + 0.5) / k, (tasks.size, k))
        cv = np.repeat(np.asarray(view.task_cv[tasks], dtype=float)[:, None], k, axis=1)
        return copy_factors(view.copy_variability, cv, u)


@njit(cache=True)
def _masked_max(values: np.ndarray, mask: np.ndarray) -> np.ndarray:  # pragma: no cover
    """Maximum over the clusters in ``mask`` of ``values`` (n, types); 0 if none.

    As ``values[mask].max(axis=0)``: NaN where any value is, the first of equal values.
    """
    out = np.zeros(values.shape[1])
    first = True
    for c in range(values.shape[0]):
        if not mask[c]:
            continue
        for t in range(values.shape[1]):
            v = values[c, t]
            if first or (out[t] == out[t] and (v > out[t] or v != v)):
                out[t] = v
        first = False
    return out
