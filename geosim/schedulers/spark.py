"""Spark's default scheduling: delay scheduling and speculative execution.

- :class:`DelayScheduling` is Spark's locality placement (Zaharia et al., "Delay
  Scheduling", EuroSys 2010, §4; ``TaskSetManager.getAllowedLocalityLevel`` and
  ``spark.locality.wait`` = 3 s).
- :class:`SparkSpeculation` is Spark's speculative execution
  (``TaskSetManager.checkSpeculatableTasks`` and ``checkAndSubmitSpeculatableTask``,
  Spark 3.0–3.5; ``spark.speculation.interval`` = 100 ms, ``.quantile`` = 0.75,
  ``.multiplier`` = 1.5, ``.minTaskRuntime`` = 100 ms).

A Spark TaskSet is one stage of one job. Here a **stage** is the tasks of one job with the
same task type (``view.task_type``): a Montage workflow's tasks of one type are the
instances of one program, the nearest analogue of the tasks of one stage.
"""

from __future__ import annotations

from math import inf

import numpy as np

from geosim.modeler import PerformanceModel
from geosim.params import Field
from geosim.reports import MONITORING_PARAMS, Monitored
from geosim.schedulers.compose import PlaceFn, Placement, Redundancy
from geosim.schedulers.placement import locality_cluster
from geosim.view import DONE, Actions, SchedulerView, concat_ranges, first_of_runs


def stage_ids(view: SchedulerView) -> tuple[np.ndarray, np.ndarray]:
    """Stage of every task (one per job and task type) and the number of tasks per stage."""
    key = view.task_job.astype(np.int64) * (int(view.task_type.max(initial=0)) + 1) \
        + view.task_type
    _, stage, size = np.unique(key, return_inverse=True, return_counts=True)
    return stage.astype(np.int64), size.astype(np.int64)


class DelayScheduling(Placement):
    """Spark's delay scheduling (EuroSys 2010 §4; Spark ``TaskSetManager``).

    Two locality levels: a copy is *local* at a cluster holding some of its task's input
    (the largest part first, as locality placement tries them), *any* elsewhere. Each
    stage (see the module) keeps its current level and the time it last launched a copy
    at that level (``getAllowedLocalityLevel``):

    - a copy takes a local free slot whenever there is one;
    - otherwise it may take a non-local slot only while the stage's level is *any*. The
      level moves from *local* to *any* once ``locality_wait`` seconds have passed since
      the stage's last launch (the timer then advances by ``locality_wait``, as Spark's
      ``lastLaunchTime += localityWaits(level)``); the non-local slot is the nearest free
      one, as locality placement's fallback;
    - every launch sets the stage's level to the locality of that launch and restarts
      its timer (``currentLocalityIndex = getLocalityIndex(taskLocality)``): a local
      launch brings the stage back to *local*. Spark 3.1 and later reset the timer only
      when no offer was declined for locality (SPARK-18886); this is the earlier rule.
    - A task without input has no preference and goes to the cluster with the most free
      slots, counting as a local launch (Spark's ``NO_PREF`` tasks are reported
      ``PROCESS_LOCAL``). A task whose input clusters are all unreachable may go anywhere
      at once (Spark skips a level with no live executor, SPARK-4939).

    Spark's timer starts when the TaskSet is submitted; here it starts the first time a
    stage's tasks are offered slots, which differs only when none were free for them.
    Spark makes offers continuously; here they are made at slot boundaries, so a wait
    ends at the first boundary at least ``locality_wait`` after the last launch.

    Args:
        locality_wait: Seconds a stage waits for a local slot (``spark.locality.wait``).
    """

    name = "delay"
    params = {"locality_wait": Field(3.0, "float", lo=0, hi=inf, doc="seconds a stage waits "
                                     "for a local slot (spark.locality.wait)")}

    def __init__(self, locality_wait: float = 3.0):
        self.validate_params(locality_wait=locality_wait)
        self.locality_wait = locality_wait

    def prepare(self, view: SchedulerView, rng: np.random.Generator,
              model: PerformanceModel) -> None:
        """Empty the per-stage locality levels and timers."""
        super().prepare(view, rng, model)
        self.stage, size = stage_ids(view)
        self.level = np.zeros(size.size, dtype=np.int8)        # 0 local, 1 any
        self.last = np.full(size.size, np.nan)                  # last launch (or timer start)

    def place(self, view: SchedulerView, tasks: np.ndarray, free: np.ndarray) -> np.ndarray:
        """Each copy at its data if a slot is free there, else non-local once allowed."""
        out = np.full(tasks.size, -1, dtype=np.int64)
        if tasks.size == 0:
            return out
        now, wait = view.time, float(self.locality_wait)
        stages = self.stage[tasks]
        fresh = np.isnan(self.last[stages])
        self.last[stages[fresh]] = now
        home_of, reach = view.task_home, view.reachable
        for i, task in enumerate(tasks):
            if not free.any():
                break
            s, home = stages[i], int(home_of[task])
            if home < 0:
                c = int(np.argmax(free))
                local = True
            else:
                c = self._local(view, int(task), home, free)
                local = c >= 0
                if not local:
                    if self.level[s] == 0 and now - self.last[s] >= wait - 1e-9:
                        self.level[s], self.last[s] = 1, self.last[s] + wait
                    if self.level[s] == 1 or not self._reachable_input(view, int(task), reach):
                        c = locality_cluster(view, int(task), free)
            if c < 0:
                continue
            out[i] = c
            free[c] -= 1
            self.level[s], self.last[s] = (0 if local else 1), now
        return out

    @staticmethod
    def _local(view: SchedulerView, task: int, home: int, free: np.ndarray) -> int:
        """A free cluster holding some of the task's input (largest first), or -1."""
        if free[home] > 0:
            return home
        src, size = view.task_inputs(task)
        for c in src[np.argsort(-size, kind="stable")]:
            if free[c] > 0:
                return int(c)
        return -1

    @staticmethod
    def _reachable_input(view: SchedulerView, task: int, reach: np.ndarray) -> bool:
        src, _ = view.task_inputs(task)
        return bool(reach[src].any()) if src.size else False


def speculation_threshold(n_done: np.ndarray, n_tasks: np.ndarray, median: np.ndarray,
                          quantile: float, multiplier: float,
                          min_runtime: float) -> np.ndarray:
    """Runtime a stage's running tasks must exceed to be speculated (``inf``: none).

    Spark's ``checkSpeculatableTasks``: a stage of more than one task speculates once
    ``n_done >= max(floor(quantile * n_tasks), 1)`` of its tasks succeeded, at
    ``max(multiplier * median, min_runtime)``, ``median`` the median duration of its
    successful tasks.

    Args:
        n_done: Successful tasks per stage.
        n_tasks: Tasks per stage.
        median: Median duration (s) of each stage's successful tasks (any value where
            none succeeded).
        quantile: ``spark.speculation.quantile``.
        multiplier: ``spark.speculation.multiplier``.
        min_runtime: ``spark.speculation.minTaskRuntime`` (s).
    """
    need = np.maximum(np.floor(quantile * n_tasks + 1e-9), 1)
    ok = (n_tasks > 1) & (n_done >= need)
    with np.errstate(invalid="ignore"):
        thr = np.maximum(multiplier * median, min_runtime)
    return np.where(ok, thr, np.inf)


def speculatable(runtime: np.ndarray, copies: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """Which running tasks get a speculative copy (``checkAndSubmitSpeculatableTask``).

    Args:
        runtime: Seconds each task's running copy has run.
        copies: Live copies of each task (Spark: ``copiesRunning(index) == 1``).
        threshold: Its stage's threshold from :func:`speculation_threshold`.
    """
    return (copies == 1) & (runtime > threshold)


class SparkSpeculation(Monitored, Redundancy):
    """Spark's speculative execution (``TaskSetManager.checkSpeculatableTasks``, Spark ≤ 3.5).

    Every ``interval`` seconds (at every slot boundary when ``interval`` is below the
    slot), in every stage of more than one task (see the module) where at least
    ``max(floor(quantile × n), 1)`` of its ``n`` tasks have succeeded, each running task
    with exactly one live copy whose copy has run longer than
    ``max(multiplier × median, min_runtime)`` (strictly), ``median`` the median duration
    of the stage's successful tasks (the mean of the two middle ones for an even count,
    Spark's ``MedianHeap``), gets one speculative copy. A task therefore never has more
    than one speculative copy at a time; if its original copy is lost, the survivor
    may be speculated again, as in Spark.

    The copy is placed through the placement rule on a cluster other than the running
    copy's if one is allowed, else on its cluster (Spark only avoids the same host; a
    copy here always gets another slot). A task that finds no slot stays speculatable
    and is retried at the next check, as Spark's pending speculatable tasks wait for an
    offer. The first copy to finish wins and the other is killed.

    A successful task's duration is that of its winning copy: from the copy's start to
    the slot boundary at which the task is seen done (the completion instant within the
    slot is not part of the view), so durations, like runtimes, are measured at slot
    boundaries.

    Args:
        interval: Seconds between checks (``spark.speculation.interval``).
        quantile: Fraction of a stage's tasks that must have succeeded.
        multiplier: How many times slower than the median a task must be.
        min_runtime: Minimum runtime (s) before a task is speculated
            (``spark.speculation.minTaskRuntime``).
        monitoring: ``"oracle"`` learns a success at the boundary its task is seen done;
            ``"reports"`` when its completion report (Spark's status update) reaches the
            job's master cluster (:mod:`geosim.reports`): it travels ``report_delay``
            per WAN hop and waits while the master is unreachable, and the duration
            runs to its arrival (Spark's driver stamps the finish time). Spark's rule
            reads no progress, so there is no heartbeat period.
        report_delay: Seconds a report travels per WAN hop (``"reports"``; default 0).
        report_to: Master cluster: ``"home"`` (default; the job's largest raw-input
            cluster) or a cluster id (``"reports"``).
        monitoring_cost: Fraction of its slot share each copy gives to its monitoring,
            in [0, 1) (``"reports"``; default 0).
    """

    name = "speculation"
    heartbeats = False
    params = {
        "interval": Field(0.1, "float", lo=0, hi=inf, doc="seconds between checks "
                          "(spark.speculation.interval)"),
        "quantile": Field(0.75, "float", lo=0, hi=1, doc="fraction of a stage's tasks that "
                          "must have succeeded"),
        "multiplier": Field(1.5, "float", lo=0, hi=inf, lo_open=True, doc="how many times "
                            "slower than the median a task must be"),
        "min_runtime": Field(0.1, "float", lo=0, hi=inf, doc="seconds a task runs before it "
                             "may be speculated"),
        **{k: f for k, f in MONITORING_PARAMS.items() if k != "report_interval"},  # no heartbeats
    }

    def __init__(self, interval: float = 0.1, quantile: float = 0.75,
                 multiplier: float = 1.5, min_runtime: float = 0.1,
                 monitoring: str = "oracle", report_delay: float | None = None,
                 report_to: str | int | None = None, monitoring_cost: float | None = None):
        self.validate_params(interval=interval, quantile=quantile, multiplier=multiplier,
                             min_runtime=min_runtime, monitoring=monitoring,
                             report_delay=report_delay, report_to=report_to,
                             monitoring_cost=monitoring_cost)
        self.interval, self.quantile = interval, quantile
        self.multiplier, self.min_runtime = multiplier, min_runtime
        # Rules across fields (report settings need monitoring='reports'), and report_to:
        # geosim.reports.check_monitoring.
        self._init_monitoring(monitoring, None, report_delay, report_to, monitoring_cost)

    def prepare(self, view: SchedulerView, rng: np.random.Generator,
              model: PerformanceModel) -> None:
        """Empty the record of successful durations."""
        super().prepare(view, rng, model)
        self.stage, self.stage_size = stage_ids(view)
        n_tasks = self.stage.size
        self.duration = np.full(n_tasks, np.nan)        # winning copy's duration, once done
        self.n_done = np.zeros(self.stage_size.size, dtype=np.int64)
        self._by_stage = np.argsort(self.stage, kind="stable")
        self._stage_ptr = np.concatenate([[0], np.cumsum(self.stage_size)])
        self._median = np.full(self.stage_size.size, np.nan)
        self._median_n = np.zeros(self.stage_size.size, dtype=np.int64)
        self._prev_copy = np.empty(0, dtype=np.int64)   # live copies at the last decision
        self._prev_task = np.empty(0, dtype=np.int64)
        self._prev_start = np.empty(0)
        self._need = np.maximum(np.floor(self.quantile * self.stage_size + 1e-9), 1)
        self._next = -np.inf
        self.speculated = 0
        # Completion reports in flight: task, its winner's start, master, arrival time.
        self._q_task = np.empty(0, dtype=np.int64)
        self._q_start = np.empty(0)
        self._q_master = np.empty(0, dtype=np.int64)
        self._q_due = np.empty(0)

    def _record_successes(self, view: SchedulerView) -> None:
        """Durations of the winning copies of tasks done since the last decision."""
        if self._prev_copy.size == 0:
            return
        task = self._prev_task
        new = (view.task_state[task] == DONE) & np.isnan(self.duration[task])
        if not new.any():
            return
        copy, task, start = self._prev_copy[new], task[new], self._prev_start[new]
        info = view.copy_info(copy)
        order = np.lexsort((-info["progress"], task))          # per task, the winner first
        first = order[first_of_runs(task[order])]
        won_task = task[first]
        if self.reports is not None:
            self._send_completions(view, won_task, start[first], info["cluster"][first])
            return
        self.duration[won_task] = view.time - start[first]
        np.add.at(self.n_done, self.stage[won_task], 1)

    def _send_completions(self, view: SchedulerView, tasks: np.ndarray, start: np.ndarray,
                          cluster: np.ndarray) -> None:
        """Queue the completion reports of ``tasks`` (sent now from their winners' clusters).

        Their duration is -1 (sent, unknown to the manager) until the report arrives
        (:meth:`_deliver_completions`), so a task is reported once and counts only then.
        """
        master, travel = self.reports.delays(view, cluster, view.task_job[tasks])
        self.duration[tasks] = -1.0           # sent, not yet known to the manager
        self._q_task = np.r_[self._q_task, tasks]
        self._q_start = np.r_[self._q_start, start]
        self._q_master = np.r_[self._q_master, master]
        self._q_due = np.r_[self._q_due, view.time + travel]

    def _deliver_completions(self, view: SchedulerView) -> None:
        """Count the successes whose report reached a reachable master by now."""
        if self._q_task.size == 0:
            return
        ok = (self._q_due <= view.time + 1e-9) & np.asarray(view.reachable)[self._q_master]
        if not ok.any():
            return
        tasks = self._q_task[ok]
        self.duration[tasks] = view.time - self._q_start[ok]
        np.add.at(self.n_done, self.stage[tasks], 1)
        keep = ~ok
        self._q_task, self._q_start = self._q_task[keep], self._q_start[keep]
        self._q_master, self._q_due = self._q_master[keep], self._q_due[keep]

    def _medians(self, stages: np.ndarray) -> np.ndarray:
        """Median successful duration of each of ``stages`` (sorted, a success each)."""
        stale = stages[self._median_n[stages] != self.n_done[stages]]
        if stale.size:
            tasks = self._by_stage[concat_ranges(self._stage_ptr[stale],
                                                 self._stage_ptr[stale + 1])]
            tasks = tasks[self.duration[tasks] >= 0]
            st, dur = self.stage[tasks], self.duration[tasks]
            order = np.lexsort((dur, st))
            st, dur = st[order], dur[order]
            starts = np.flatnonzero(first_of_runs(st))
            counts = np.diff(np.append(starts, st.size))
            med = 0.5 * (dur[starts + (counts - 1) // 2] + dur[starts + counts // 2])
            self._median[st[starts]] = med
            self._median_n[st[starts]] = counts
        return self._median[stages]

    def speculate(self, view: SchedulerView, actions: Actions, place: PlaceFn,
                  free: np.ndarray) -> None:
        """Record finished tasks, then speculate the stages' slow tasks."""
        self._record_successes(view)
        if self.reports is not None:
            self._deliver_completions(view)
        info = view.copy_info()
        copy, task, start, cluster = info["copy"], info["task"], info["start"], info["cluster"]
        now = view.time
        launched: list[np.ndarray] = []
        if now >= self._next - 1e-9 and copy.size:
            self._next = now + float(self.interval)
            launched = self._speculate(view, actions, place, free, task, start, cluster)
        self._prev_copy, self._prev_task, self._prev_start = copy, task, start
        if launched:
            ids = np.concatenate(launched)
            extra = view.copy_info(ids)
            self._prev_copy = np.concatenate([copy, ids])
            self._prev_task = np.concatenate([task, extra["task"]])
            self._prev_start = np.concatenate([start, extra["start"]])

    def _speculate(self, view: SchedulerView, actions: Actions, place: PlaceFn,
                   free: np.ndarray, task: np.ndarray, start: np.ndarray,
                   cluster: np.ndarray) -> list[np.ndarray]:
        stage = self.stage[task]
        ready = (self.stage_size[stage] > 1) & (self.n_done[stage] >= self._need[stage])
        if not ready.any():
            return []
        stages = np.unique(stage[ready])
        thr_s = speculation_threshold(self.n_done[stages], self.stage_size[stages],
                                      self._medians(stages), self.quantile,
                                      self.multiplier, self.min_runtime)
        thr = np.full(task.size, np.inf)
        thr[ready] = thr_s[np.searchsorted(stages, stage[ready])]
        pick = np.flatnonzero(speculatable(view.time - start, view.task_live[task], thr))
        launched = []
        for i in pick[np.argsort(start[pick], kind="stable")]:     # longest-running first
            if not free.any():
                break
            t, own = task[i : i + 1], int(cluster[i])
            held, free[own] = free[own], 0
            c = place(t)
            free[own] += held
            if c[0] < 0 and held > 0:
                c = place(t)
            if c[0] >= 0:
                launched.append(actions.launch_many(t, c))
                self.speculated += 1
        return launched
