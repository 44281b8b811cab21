"""LATE: Longest Approximate Time to End speculation (OSDI 2008, §4).

Zaharia et al., "Improving MapReduce Performance in Heterogeneous Environments", OSDI
2008. When a slot is free and no task waits for it, LATE backs up the running task that
will finish farthest in the future, provided it is slow and the backup does not go to a
slow node, with a cap on the backups running at once.
"""

from __future__ import annotations

from math import inf

import numpy as np

from geosim.params import Field
from geosim.reports import MONITORING_PARAMS, Monitored
from geosim.schedulers.compose import PlaceFn, Redundancy
from geosim.view import Actions, SchedulerView, first_of_runs

_EPS = 1e-9


def grouped_quantile(keys: np.ndarray, values: np.ndarray, q: float) -> np.ndarray:
    """The ``q``-quantile of ``values`` within each group of equal ``keys``, per element.

    Linear interpolation between order statistics, as ``numpy.quantile``.
    """
    order = np.lexsort((values, keys))
    k, v = keys[order], values[order]
    heads = np.flatnonzero(first_of_runs(k))
    size = np.diff(np.r_[heads, k.size])
    at = q * (size - 1)
    lo = np.floor(at).astype(np.int64)
    hi = np.minimum(lo + 1, size - 1)
    a, b = v[heads + lo], v[heads + hi]
    with np.errstate(invalid="ignore"):
        per_group = np.where(b > a, a + (at - lo) * (b - a), a)
    out = np.empty(values.size)
    out[order] = np.repeat(per_group, size)
    return out


class LATE(Monitored, Redundancy):
    """LATE's speculative execution (OSDI 2008, §4), one backup per task.

    At every slot boundary with a free slot left after the primary placement (in Hadoop,
    a node asking for work when no task waits for it):

    - a copy's **progress rate** is ``(progress − base) / elapsed`` and a task's is its
      fastest copy's; its **estimated time left** is ``(1 − progress) / rate``;
    - **SlowTaskThreshold**: a task is a candidate only when its rate is below the
      ``slow_task_threshold`` quantile of the rates of the running tasks of its job and
      task type (Hadoop compares a job's maps with its maps and its reduces with its
      reduces; here a Montage operation is a phase), it has one live copy, was never
      backed up (at most one backup per task, ever) and its copy has run at least
      ``min_runtime`` seconds;
    - candidates are backed up **longest estimated time left first**, one per free slot;
    - **SpeculativeCap**: live backups never exceed ``speculative_cap`` of the slots of
      the reachable clusters (rounded down);
    - **SlowNodeThreshold**: a node is a cluster here. A cluster's score is the mean
      processing speed (MIPS: progress × work / elapsed) its running copies show, or,
      with none running, the monitor's observed mean speed of the cluster (over task
      types); clusters scoring below the ``slow_node_threshold`` quantile of the reachable
      clusters' scores get no backup.

    Backups are placed by the composite's placement rule (``place``) with the slow
    clusters' free slots hidden from it. The first copy to finish wins and the other is
    killed; LATE does not checkpoint.

    Args:
        speculative_cap: Fraction of the reachable slots backups may hold, in (0, 1].
        slow_node_threshold: Quantile of cluster scores below which a cluster is slow,
            in [0, 1].
        slow_task_threshold: Quantile of progress rates below which a task may be backed
            up, in (0, 1].
        min_runtime: Seconds a task must have run before it may be backed up. Hadoop's
            LATE uses 60 s for tasks of minutes; the PingAn scenarios' copies run about
            16 s at the median, so the default is 10 s: ten progress reports, enough to
            measure a rate.
        monitoring: ``"oracle"`` reads every copy's true progress at every slot
            (today's free reports); ``"reports"`` reads the last progress report each
            copy's heartbeat delivered to its job's master cluster
            (:mod:`geosim.reports`): progress rates and cluster scores come from the
            report's progress and the time it was measured; ``min_runtime`` is still
            counted from the launch, which the manager knows.
        report_interval: Seconds between a copy's heartbeats (``"reports"``; default 3).
        report_delay: Seconds a report travels per WAN hop (``"reports"``; default 0).
        report_to: Master cluster: ``"home"`` (default; the job's largest raw-input
            cluster) or a cluster id (``"reports"``).
        monitoring_cost: Fraction of its slot share each copy gives to its monitoring,
            in [0, 1) (``"reports"``; default 0).
    """

    name = "late"
    params = {
        "speculative_cap": Field(0.1, "float", lo=0, hi=1, lo_open=True, doc="fraction of "
                                 "the reachable slots backups may hold"),
        "slow_node_threshold": Field(0.25, "float", lo=0, hi=1, doc="quantile of cluster "
                                     "scores below which a cluster is slow"),
        "slow_task_threshold": Field(0.25, "float", lo=0, hi=1, lo_open=True, doc="quantile "
                                     "of progress rates below which a task may be backed up"),
        "min_runtime": Field(10.0, "float", lo=0, hi=inf, doc="seconds a task must have run "
                             "before it may be backed up"),
        **MONITORING_PARAMS,
    }

    def __init__(self, speculative_cap: float = 0.1, slow_node_threshold: float = 0.25,
                 slow_task_threshold: float = 0.25, min_runtime: float = 10.0,
                 monitoring: str = "oracle", report_interval: float | None = None,
                 report_delay: float | None = None, report_to: str | int | None = None,
                 monitoring_cost: float | None = None):
        self.validate_params(speculative_cap=speculative_cap,
                             slow_node_threshold=slow_node_threshold,
                             slow_task_threshold=slow_task_threshold, min_runtime=min_runtime,
                             monitoring=monitoring, report_interval=report_interval,
                             report_delay=report_delay, report_to=report_to,
                             monitoring_cost=monitoring_cost)
        self.speculative_cap, self.slow_node_threshold = speculative_cap, slow_node_threshold
        self.slow_task_threshold, self.min_runtime = slow_task_threshold, min_runtime
        # Rules across fields (report settings need monitoring='reports'), and report_to:
        # geosim.reports.check_monitoring.
        self._init_monitoring(monitoring, report_interval, report_delay, report_to,
                              monitoring_cost)

    def prepare(self, view, rng, model) -> None:
        """Forget the backups."""
        super().prepare(view, rng, model)
        self._backed = np.zeros(len(view.task_work), dtype=bool)
        self._spec = np.empty(0, dtype=np.int64)     # backups launched, ascending ids
        #: Backups launched over the run.
        self.n_backups = 0

    def speculate(self, view: SchedulerView, actions: Actions, place: PlaceFn,
                  free: np.ndarray) -> None:
        """Back up the slow tasks with the longest time left, within the cap."""
        if not free.any():
            return
        live = view.live_copies
        if live.size == 0:
            return
        if self._spec.size:
            at = np.minimum(np.searchsorted(live, self._spec), live.size - 1)
            self._spec = self._spec[live[at] == self._spec]
        budget = int(np.floor(self.speculative_cap * view.total_slots + _EPS)) - self._spec.size
        if budget <= 0:
            return
        info = view.copy_info()
        now = view.time
        elapsed = now - info["start"]
        progress, seen = self.progress_seen(view, info)
        measured = elapsed if self.reports is None else seen - info["start"]
        gain = progress - info["base"]
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = np.where(measured > _EPS, gain / measured, 0.0)
        # Per task: its fastest copy's rate and progress, its copies, its oldest start.
        order = np.lexsort((-rate, info["task"]))
        keys = info["task"][order]
        heads = np.flatnonzero(first_of_runs(keys))
        cnt = np.diff(np.r_[heads, keys.size])
        tasks, lead = keys[heads], order[heads]
        t_rate, t_prog = rate[lead], progress[lead]
        group = view.task_job[tasks] * (int(view.task_type.max()) + 1) + view.task_type[tasks]
        threshold = grouped_quantile(group, t_rate, self.slow_task_threshold)
        cand = ((cnt == 1) & ~self._backed[tasks] & (elapsed[lead] >= self.min_runtime - _EPS)
                & (t_rate < threshold))
        idx = np.flatnonzero(cand)
        if idx.size == 0:
            return
        with np.errstate(divide="ignore"):
            left = np.where(t_rate[idx] > 0, (1.0 - t_prog[idx]) / t_rate[idx], np.inf)
        idx = idx[np.lexsort((tasks[idx], -left))]
        slow = self._slow_clusters(view, info, measured, gain)
        hidden = free[slow].copy()
        free[slow] = 0
        try:
            n = min(budget, int(free.sum()), idx.size)
            if n == 0:
                return
            chosen = tasks[idx[:n]]
            clusters = place(chosen)
        finally:
            free[slow] = hidden
        ok = clusters >= 0
        if ok.any():
            ids = actions.launch_many(chosen[ok], clusters[ok])
            self._backed[chosen[ok]] = True
            self._spec = np.sort(np.r_[self._spec, ids])
            self.n_backups += int(ok.sum())

    def _slow_clusters(self, view: SchedulerView, info: dict, elapsed: np.ndarray,
                       gain: np.ndarray) -> np.ndarray:
        """Clusters scoring below the SlowNodeThreshold quantile of reachable clusters.

        ``elapsed`` and ``gain`` are each copy's running time and progress made, as of
        what the rule knows of it (its last report under ``"reports"``).
        """
        n = view.n_clusters
        seen = elapsed > _EPS
        speed = gain[seen] * view.task_work[info["task"][seen]] / elapsed[seen]
        where = info["cluster"][seen]
        total = np.bincount(where, weights=speed, minlength=n)
        count = np.bincount(where, minlength=n)
        prior = self.model.speed_mean.mean(axis=1)
        score = np.where(count > 0, total / np.maximum(count, 1), prior)
        reach = np.asarray(view.reachable)
        if not reach.any():
            return np.zeros(n, dtype=bool)
        cut = np.quantile(score[reach], self.slow_node_threshold)
        return reach & (score < cut)

