"""The :class:`Workload` container, its checks, and helpers shared by the generators.

A :class:`Workload` holds every job of a run in arrival order as a struct of arrays, so the
engine never loops over tasks in Python. Task ids are global (``0..n_tasks-1``); the tasks of
job ``j`` are ``task_ptr[j]:task_ptr[j+1]``, listed in a topological order of the job's DAG, and
every edge goes from an earlier to a later task of the same job. The generators sort edges by
child, then parent (a convenience, not part of the contract).

Units
    Data in MB (1 MB = 10**6 bytes, :data:`BYTES_PER_MB`), compute work in MI (million
    instructions: a VM of power P MIPS runs ``w`` MI in ``w / P`` seconds at full speed), time in
    seconds. Arrays of a :class:`Workload` are read-only views; copy them before changing them.

Also here: :func:`poisson_arrivals` (cumulative exponential inter-arrival times),
:func:`concat` (join workloads, re-indexing tasks and merging type names) and
:func:`empty_workload`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NoReturn

import numpy as np

from geosim.errors import GeosimError

__all__ = [
    "BYTES_PER_MB",
    "REFERENCE_MIPS",
    "Workload",
    "concat",
    "empty_workload",
    "poisson_arrivals",
]

BYTES_PER_MB = 1e6
"""Bytes in one MB (decimal, as network and storage figures are quoted)."""

REFERENCE_MIPS = 200.0
"""Default VM power (MIPS) on which measured runtimes are taken to have been obtained."""

_DTYPES: dict[str, type] = {
    "arrival": np.float64,
    "weight": np.float64,
    "task_ptr": np.int64,
    "task_work": np.float64,
    "task_type": np.int32,
    "edge_src": np.int64,
    "edge_dst": np.int64,
    "edge_size": np.float64,
    "raw_ptr": np.int64,
    "raw_cluster": np.int64,
    "raw_size": np.float64,
    "task_stage": np.int32,
    "task_cv": np.float64,
    "stage_edge_job": np.int64,
    "stage_edge_src": np.int32,
    "stage_edge_dst": np.int32,
    "task_cap": np.int32,
    "deadline": np.float64,
    "sla_ptr": np.int64,
    "sla_time": np.float64,
    "sla_height": np.float64,
}
# per-task fields that default to all zeros
_DEFAULT_ZEROS = ("task_stage", "task_cv", "task_cap")
# fields that default to empty
_DEFAULT_EMPTY = ("stage_edge_job", "stage_edge_src", "stage_edge_dst", "sla_time", "sla_height")


def readonly(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a``."""
    view = a.view()
    view.setflags(write=False)
    return view


#: Raises the validation error with a message.
_Fail = Callable[[str], NoReturn]


def _more(count: int) -> str:
    return f" (and {count - 1} more)" if count > 1 else ""


@dataclass(frozen=True, eq=False)
class Workload:
    """All jobs of a run, in arrival order, as flat arrays.

    Task ids are global ``0..n_tasks-1``; the tasks of job j are ``task_ptr[j]:task_ptr[j+1]``,
    listed in a topological order of that job's DAG. Arrays are coerced to the dtypes below and
    stored as read-only views. Equality is identity (arrays do not compare as values).

    Stages: within a job, ``task_stage`` starts at 0 and never decreases or skips a value along
    the task order (0, 0, 0, 1, 1, 2, ...). A task of stage s > 0 becomes ready only once every
    task of stage s - 1 of its job has finished: a barrier that carries no data and costs memory
    linear in tasks (a map stage of m tasks and a reduce stage of r tasks need no m x r edges).
    DAG edges may coexist with stages but never go from a later stage to an earlier one. A
    workload whose stages are all 0 has no barriers.

    Stage edges make a job's stages a DAG instead of a chain (a flow of MapReduce jobs, 004):
    stage ``stage_edge_dst[k]`` of job ``stage_edge_job[k]`` waits for every task of its
    stage ``stage_edge_src[k]`` (``src < dst``). A job with stage edges follows them instead
    of the chain, and its stages without an incoming stage edge start at its arrival.

    Malleability caps (004): ``task_cap`` limits how many tasks of a (job, stage) group are in
    progress (ready or running) at once; the others wait, in task order, until one of the
    group finishes. A stage of equal "brick" tasks with cap ``δ`` is a malleable job that runs
    on up to ``δ`` slots. A capped stage has no task-level edges into it.

    Service levels: a job may carry a ``deadline`` and SLA steps (a cost ``sla_height[k]``
    once it completes after ``sla_time[k]``), data for the cost metrics of 004 (a flow of
    MapReduce jobs is one geosim job). They never change how the engine runs.

    Attributes:
        arrival: float64[n_jobs], non-decreasing arrival times, seconds.
        weight: float64[n_jobs], job weights (default 1.0).
        task_ptr: int64[n_jobs + 1], task range of each job.
        task_work: float64[n_tasks], compute work, MI, > 0.
        task_type: int32[n_tasks], index into ``type_names``.
        type_names: Names of the task types.
        edge_src: int64[n_edges], global task id of the parent.
        edge_dst: int64[n_edges], global task id of the child (same job, later in order).
        edge_size: float64[n_edges], MB the child reads from the parent's output (>= 0).
        raw_ptr: int64[n_tasks + 1]; raw inputs of task t are ``raw_ptr[t]:raw_ptr[t+1]``.
        raw_cluster: int64[n_raw], cluster index where that raw input is stored.
        raw_size: float64[n_raw], MB.
        task_stage: int32[n_tasks], stage of each task within its job (default all 0).
        task_cv: float64[n_tasks], coefficient of variation (sd / mean) of the work of each copy
            of the task, finite and >= 0 (default all 0: every copy runs ``task_work``).
            ``task_work`` is the mean work of one copy; each copy draws its own work around it.
        stage_edge_job: int64[n_stage_edges], the job of each stage edge (default: none).
        stage_edge_src: int32[n_stage_edges], the stage that must finish first.
        stage_edge_dst: int32[n_stage_edges], the stage that waits for it.
        task_cap: int32[n_tasks], the most tasks of the task's (job, stage) group in progress
            at once, the same for the whole group (default all 0: no cap).
        deadline: float64[n_jobs], deadline of each job, seconds from time 0 (default all
            ``inf``: none).
        sla_ptr: int64[n_jobs + 1]; SLA steps of job j are ``sla_ptr[j]:sla_ptr[j+1]``
            (default: none).
        sla_time: float64[n_sla], time of each SLA step, seconds from time 0.
        sla_height: float64[n_sla], cost of missing that step (>= 0).
        copy_bounds: ``(low, high)`` work (MI) between which every copy's own draw lies,
            the law of the copy's work truncated to it (default ``(0, inf)``: no bounds).
    """

    arrival: np.ndarray
    weight: np.ndarray
    task_ptr: np.ndarray
    task_work: np.ndarray
    task_type: np.ndarray
    type_names: tuple[str, ...]
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_size: np.ndarray
    raw_ptr: np.ndarray
    raw_cluster: np.ndarray
    raw_size: np.ndarray
    task_stage: np.ndarray | None = None
    task_cv: np.ndarray | None = None
    stage_edge_job: np.ndarray | None = None
    stage_edge_src: np.ndarray | None = None
    stage_edge_dst: np.ndarray | None = None
    task_cap: np.ndarray | None = None
    deadline: np.ndarray | None = None
    sla_ptr: np.ndarray | None = None
    sla_time: np.ndarray | None = None
    sla_height: np.ndarray | None = None
    copy_bounds: tuple[float, float] = (0.0, math.inf)

    def __post_init__(self) -> None:
        for name, dtype in _DTYPES.items():
            value = getattr(self, name)
            if value is None and name in _DEFAULT_ZEROS:
                value = np.zeros(self.task_work.shape[0], dtype=dtype)  # coerced already
            elif value is None and name in _DEFAULT_EMPTY:
                value = np.zeros(0, dtype=dtype)
            elif value is None and name == "deadline":
                value = np.full(self.arrival.shape[0], np.inf)
            elif value is None and name == "sla_ptr":
                value = np.zeros(self.arrival.shape[0] + 1, dtype=dtype)
            try:
                a = np.asarray(value)
            except (TypeError, ValueError) as exc:
                raise GeosimError(f"Workload.{name} is not an array: {exc}",
                                  source="workload") from None
            if a.ndim != 1:
                raise GeosimError(f"Workload.{name} must be one-dimensional, got shape {a.shape}",
                                  source="workload")
            if a.dtype != dtype:
                if a.dtype.kind not in "biuf":
                    raise GeosimError(f"Workload.{name} must be numeric, got dtype {a.dtype}",
                                      source="workload")
                if np.issubdtype(dtype, np.integer) and a.dtype.kind == "f":
                    bad = ~np.isfinite(a) | (a != np.trunc(a))
                    if bad.any():
                        i = int(np.flatnonzero(bad)[0])
                        raise GeosimError(f"Workload.{name}[{i}] = {a[i]!r} is not an integer",
                                          source="workload")
                a = a.astype(dtype)
            object.__setattr__(self, name, readonly(a))
        object.__setattr__(self, "type_names", tuple(str(t) for t in self.type_names))
        object.__setattr__(self, "copy_bounds", tuple(float(b) for b in self.copy_bounds))

    # ----------------------------------------------------------------------------- properties
    @cached_property
    def n_jobs(self) -> int:
        """Number of jobs (read at every step: computed once)."""
        return int(self.arrival.shape[0])

    @cached_property
    def n_tasks(self) -> int:
        """Number of tasks over all jobs."""
        return int(self.task_work.shape[0])

    @property
    def n_edges(self) -> int:
        """Number of DAG edges over all jobs."""
        return int(self.edge_src.shape[0])

    @property
    def n_raw(self) -> int:
        """Number of raw inputs over all tasks."""
        return int(self.raw_size.shape[0])

    @cached_property
    def n_stages(self) -> np.ndarray:
        """int64[n_jobs]: the number of stages of each job (its last task's stage + 1)."""
        last = self.task_ptr[1:] - 1
        return readonly(self.task_stage[last].astype(np.int64) + 1)

    @cached_property
    def job_of_task(self) -> np.ndarray:
        """int64[n_tasks]: the job each task belongs to."""
        counts = np.diff(self.task_ptr)
        return readonly(np.repeat(np.arange(self.n_jobs, dtype=np.int64), counts))

    @cached_property
    def raw_task(self) -> np.ndarray:
        """int64[n_raw]: the task each raw input belongs to."""
        counts = np.diff(self.raw_ptr)
        return readonly(np.repeat(np.arange(self.n_tasks, dtype=np.int64), counts))

    @cached_property
    def task_data(self) -> np.ndarray:
        """float64[n_tasks]: MB each task reads, raw inputs plus in-edges."""
        n = self.n_tasks
        data = np.bincount(self.raw_task, weights=self.raw_size, minlength=n)
        data += np.bincount(self.edge_dst, weights=self.edge_size, minlength=n)
        return readonly(data.astype(np.float64))

    # ----------------------------------------------------------------------------- checks
    def validate(self, n_clusters: int, source: str = "workload") -> None:
        """Check the workload's consistency against a topology of ``n_clusters`` clusters.

        Args:
            n_clusters: Number of clusters; raw inputs must lie in ``[0, n_clusters)``.
            source: Where the workload came from, used as the error's source.

        Raises:
            GeosimError: With a one-line message naming the first problem found.
        """

        def fail(message: str) -> NoReturn:
            raise GeosimError(message, source=source)

        nj, nt, ne, nr = self.n_jobs, self.n_tasks, self.n_edges, self.n_raw
        if int(n_clusters) != n_clusters or n_clusters < 0:
            fail(f"number of clusters must be a non-negative integer, got {n_clusters!r}")
        n_clusters = int(n_clusters)
        lengths = {
            "weight": (self.weight.shape[0], nj, "n_jobs"),
            "task_ptr": (self.task_ptr.shape[0], nj + 1, "n_jobs + 1"),
            "task_type": (self.task_type.shape[0], nt, "n_tasks"),
            "task_stage": (self.task_stage.shape[0], nt, "n_tasks"),
            "task_cv": (self.task_cv.shape[0], nt, "n_tasks"),
            "raw_ptr": (self.raw_ptr.shape[0], nt + 1, "n_tasks + 1"),
            "edge_dst": (self.edge_dst.shape[0], ne, "len(edge_src)"),
            "edge_size": (self.edge_size.shape[0], ne, "len(edge_src)"),
            "raw_cluster": (self.raw_cluster.shape[0], nr, "len(raw_size)"),
            "stage_edge_src": (self.stage_edge_src.shape[0], self.stage_edge_job.shape[0],
                               "len(stage_edge_job)"),
            "stage_edge_dst": (self.stage_edge_dst.shape[0], self.stage_edge_job.shape[0],
                               "len(stage_edge_job)"),
            "task_cap": (self.task_cap.shape[0], nt, "n_tasks"),
            "deadline": (self.deadline.shape[0], nj, "n_jobs"),
            "sla_ptr": (self.sla_ptr.shape[0], nj + 1, "n_jobs + 1"),
            "sla_height": (self.sla_height.shape[0], self.sla_time.shape[0], "len(sla_time)"),
        }
        for name, (got, want, what) in lengths.items():
            if got != want:
                fail(f"{name} has length {got}, expected {what} = {want}")

        self._check_pointers(fail)
        self._check_jobs(fail)
        job = self.job_of_task      # the pointers are sound
        self._check_tasks(fail, job)
        self._check_edges(fail, job)
        self._check_stages(fail, job)
        self._check_caps(fail, job)
        self._check_service_levels(fail)
        self._check_raw_inputs(fail, job, n_clusters)

    def _check_pointers(self, fail: _Fail) -> None:
        """Task and raw-input pointer arrays run from 0 to their end without gaps."""
        nt, nr = self.n_tasks, self.n_raw
        if self.task_ptr[0] != 0 or self.task_ptr[-1] != nt:
            fail(f"task_ptr must run from 0 to n_tasks = {nt}, "
                 f"got {self.task_ptr[0]}..{self.task_ptr[-1]}")
        counts = np.diff(self.task_ptr)
        if (counts <= 0).any():
            j, k = int(np.flatnonzero(counts <= 0)[0]), int((counts <= 0).sum())
            fail(f"bad task_ptr: job {j} has {counts[j]} tasks{_more(k)}")
        if self.raw_ptr[0] != 0 or self.raw_ptr[-1] != nr:
            fail(f"raw_ptr must run from 0 to n_raw = {nr}, "
                 f"got {self.raw_ptr[0]}..{self.raw_ptr[-1]}")
        rcounts = np.diff(self.raw_ptr)
        if (rcounts < 0).any():
            t = int(np.flatnonzero(rcounts < 0)[0])
            fail(f"bad raw_ptr: decreases at task {t}")

    def _check_jobs(self, fail: _Fail) -> None:
        """Arrival times are finite, non-negative and non-decreasing; weights are positive."""
        bad = ~np.isfinite(self.arrival) | (self.arrival < 0)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            fail(f"job {j} has invalid arrival time {self.arrival[j]!r}{_more(int(bad.sum()))}")
        dec = np.diff(self.arrival) < 0
        if dec.any():
            j = int(np.flatnonzero(dec)[0]) + 1
            fail(f"arrivals decrease: job {j} arrives at {self.arrival[j]:g} s, "
                 f"before job {j - 1} at {self.arrival[j - 1]:g} s{_more(int(dec.sum()))}")
        bad = ~np.isfinite(self.weight) | (self.weight <= 0)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            fail(f"job {j} has non-positive weight {self.weight[j]!r}{_more(int(bad.sum()))}")

    def _check_tasks(self, fail: _Fail, job: np.ndarray) -> None:
        """Every task has positive work, a known type and a valid work variability."""
        job = self.job_of_task
        bad = ~np.isfinite(self.task_work) | (self.task_work <= 0)
        if bad.any():
            t = int(np.flatnonzero(bad)[0])
            fail(f"task {t} (job {job[t]}) has non-positive work {self.task_work[t]!r} MI"
                 f"{_more(int(bad.sum()))}")
        bad = (self.task_type < 0) | (self.task_type >= len(self.type_names))
        if bad.any():
            t = int(np.flatnonzero(bad)[0])
            fail(f"task {t} (job {job[t]}) has type {self.task_type[t]}, but there are "
                 f"{len(self.type_names)} type names{_more(int(bad.sum()))}")
        bad = ~np.isfinite(self.task_cv) | (self.task_cv < 0)
        if bad.any():
            t = int(np.flatnonzero(bad)[0])
            fail(f"task {t} (job {job[t]}) has invalid work coefficient of variation "
                 f"{self.task_cv[t]!r} (must be finite and >= 0){_more(int(bad.sum()))}")
        low, high = self.copy_bounds
        if not 0.0 <= low < high:
            fail(f"copy_bounds must be 0 <= low < high, got {self.copy_bounds!r}")
        bad = (self.task_cv > 0) & ((self.task_work < low) | (self.task_work > high))
        if (low > 0 or high < math.inf) and bad.any():
            t = int(np.flatnonzero(bad)[0])
            fail(f"task {t} (job {job[t]}) has work {self.task_work[t]!r} MI outside "
                 f"copy_bounds {self.copy_bounds!r}{_more(int(bad.sum()))}")

    def _check_edges(self, fail: _Fail, job: np.ndarray) -> None:
        """Edges join two tasks of one job, go forward, have sizes and are not repeated."""
        nt, ne = self.n_tasks, self.n_edges
        src, dst = self.edge_src, self.edge_dst
        src, dst = self.edge_src, self.edge_dst
        bad = (src < 0) | (src >= nt) | (dst < 0) | (dst >= nt)
        if bad.any():
            e = int(np.flatnonzero(bad)[0])
            fail(f"edge {e} ({src[e]} -> {dst[e]}) refers to a task outside 0..{nt - 1}"
                 f"{_more(int(bad.sum()))}")
        bad = job[src] != job[dst]
        if bad.any():
            e = int(np.flatnonzero(bad)[0])
            fail(f"edge {e} crosses jobs: task {src[e]} (job {job[src[e]]}) -> "
                 f"task {dst[e]} (job {job[dst[e]]}){_more(int(bad.sum()))}")
        bad = src >= dst
        if bad.any():
            e = int(np.flatnonzero(bad)[0])
            fail(f"edge {e} ({src[e]} -> {dst[e]}, job {job[src[e]]}) does not go forward in "
                 f"the job's task order{_more(int(bad.sum()))}")
        bad = ~np.isfinite(self.edge_size) | (self.edge_size < 0)
        if bad.any():
            e = int(np.flatnonzero(bad)[0])
            fail(f"edge {e} ({src[e]} -> {dst[e]}) has negative size {self.edge_size[e]!r} MB"
                 f"{_more(int(bad.sum()))}")
        if ne:
            key = src * nt + dst
            uniq, first, cnt = np.unique(key, return_index=True, return_counts=True)
            if (cnt > 1).any():
                e = int(first[np.flatnonzero(cnt > 1)[0]])
                fail(f"duplicate edge {src[e]} -> {dst[e]} (job {job[src[e]]})")

    def _check_stages(self, fail: _Fail, job: np.ndarray) -> None:
        """Stages start at 0, grow without gaps, and stage edges stay within their jobs."""
        nj, nt = self.n_jobs, self.n_tasks
        src, dst = self.edge_src, self.edge_dst
        stage = self.task_stage
        bad = stage[src] > stage[dst]
        if bad.any():
            e = int(np.flatnonzero(bad)[0])
            fail(f"edge {e} ({src[e]} -> {dst[e]}, job {job[src[e]]}) goes from stage "
                 f"{stage[src[e]]} back to stage {stage[dst[e]]}{_more(int(bad.sum()))}")
        if nt:
            first = self.task_ptr[:-1]
            bad = stage[first] != 0
            if bad.any():
                j = int(np.flatnonzero(bad)[0])
                t = int(first[j])
                fail(f"task {t} (job {j}) has stage {stage[t]}, but the first task of a job "
                     f"must have stage 0{_more(int(bad.sum()))}")
            step = np.diff(stage.astype(np.int64))
            bad = (job[1:] == job[:-1]) & ((step < 0) | (step > 1))
            if bad.any():
                t = int(np.flatnonzero(bad)[0]) + 1
                fail(f"task {t} (job {job[t]}) has stage {stage[t]} after stage {stage[t - 1]}: "
                     "a job's stages must be non-decreasing without gaps"
                     f"{_more(int(bad.sum()))}")
        sj, ss, sd = self.stage_edge_job, self.stage_edge_src, self.stage_edge_dst
        if sj.size:
            bad = (sj < 0) | (sj >= nj)
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                fail(f"stage edge {k} names job {sj[k]}, which does not exist "
                     f"(jobs: 0..{nj - 1}){_more(int(bad.sum()))}")
            n_st = self.n_stages[sj]
            bad = (ss < 0) | (ss >= sd) | (sd >= n_st)
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                fail(f"stage edge {k} of job {sj[k]} goes from stage {ss[k]} to stage {sd[k]}; "
                     f"it needs 0 <= src < dst < {n_st[k]} (the job's stages)"
                     f"{_more(int(bad.sum()))}")
            key = (sj * int(n_st.max()) + ss) * int(n_st.max()) + sd
            uniq, cnt = np.unique(key, return_counts=True)
            if (cnt > 1).any():
                k = int(np.flatnonzero(key == uniq[cnt > 1][0])[0])
                fail(f"duplicate stage edge {ss[k]} -> {sd[k]} (job {sj[k]})")

    def _check_caps(self, fail: _Fail, job: np.ndarray) -> None:
        """Caps are non-negative, one per stage, and no task edge leads into a capped stage."""
        nt, stage = self.n_tasks, self.task_stage
        src, dst = self.edge_src, self.edge_dst
        cap = self.task_cap
        if nt:
            bad = cap < 0
            if bad.any():
                t = int(np.flatnonzero(bad)[0])
                fail(f"task {t} (job {job[t]}) has negative cap {cap[t]}{_more(int(bad.sum()))}")
            same = (job[1:] == job[:-1]) & (stage[1:] == stage[:-1])
            bad = same & (cap[1:] != cap[:-1])
            if bad.any():
                t = int(np.flatnonzero(bad)[0]) + 1
                fail(f"task {t} (job {job[t]}, stage {stage[t]}) has cap {cap[t]} but task "
                     f"{t - 1} of the same stage has cap {cap[t - 1]}: a cap is per stage")
            bad = cap[dst] > 0
            if bad.any():
                e = int(np.flatnonzero(bad)[0])
                fail(f"edge {e} ({src[e]} -> {dst[e]}, job {job[dst[e]]}) leads into a capped "
                     "stage; a capped stage waits for whole stages only")

    def _check_service_levels(self, fail: _Fail) -> None:
        """Deadlines and SLA steps are valid."""
        bad = np.isnan(self.deadline) | (self.deadline < 0)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            fail(f"job {j} has invalid deadline {self.deadline[j]!r}{_more(int(bad.sum()))}")
        ns = self.sla_time.shape[0]
        if self.sla_ptr[0] != 0 or self.sla_ptr[-1] != ns or (np.diff(self.sla_ptr) < 0).any():
            fail(f"sla_ptr must run from 0 to len(sla_time) = {ns} without decreasing")
        bad = ~np.isfinite(self.sla_time) | (self.sla_time < 0) | \
            ~np.isfinite(self.sla_height) | (self.sla_height < 0)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            fail(f"SLA step {k} has time {self.sla_time[k]!r} and height "
                 f"{self.sla_height[k]!r} (both must be finite and >= 0)")

    def _check_raw_inputs(self, fail: _Fail, job: np.ndarray, n_clusters: int) -> None:
        """Raw inputs have sizes and lie on existing clusters."""
        rtask = self.raw_task
        bad = ~np.isfinite(self.raw_size) | (self.raw_size < 0)
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            fail(f"raw input {r} of task {rtask[r]} has negative size {self.raw_size[r]!r} MB"
                 f"{_more(int(bad.sum()))}")
        bad = (self.raw_cluster < 0) | (self.raw_cluster >= n_clusters)
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            t = int(rtask[r])
            valid = f"0..{n_clusters - 1}" if n_clusters else "none"
            fail(f"raw input {r} of task {t} (job {job[t]}) is stored on cluster "
                 f"{self.raw_cluster[r]}, which does not exist (clusters: {valid})"
                 f"{_more(int(bad.sum()))}")

    # ----------------------------------------------------------------------------- slicing
    def subset(self, n_jobs: int) -> Workload:
        """Keep the first ``n_jobs`` jobs, arrays sliced (task ids of a prefix are unchanged).

        Args:
            n_jobs: How many jobs to keep, ``0 <= n_jobs <= self.n_jobs``.

        Returns:
            A new workload with the same type names.

        Raises:
            GeosimError: If ``n_jobs`` is out of range.
        """
        if int(n_jobs) != n_jobs or not 0 <= n_jobs <= self.n_jobs:
            raise GeosimError(f"cannot take the first {n_jobs!r} jobs of a workload with "
                              f"{self.n_jobs} jobs", source="workload")
        n_jobs = int(n_jobs)
        nt = int(self.task_ptr[n_jobs])
        nr = int(self.raw_ptr[nt])
        keep = self.edge_dst < nt  # edges never cross jobs
        skeep = self.stage_edge_job < n_jobs
        ns = int(self.sla_ptr[n_jobs])
        return Workload(
            arrival=self.arrival[:n_jobs],
            weight=self.weight[:n_jobs],
            task_ptr=self.task_ptr[: n_jobs + 1],
            task_work=self.task_work[:nt],
            task_type=self.task_type[:nt],
            task_stage=self.task_stage[:nt],
            task_cv=self.task_cv[:nt],
            copy_bounds=self.copy_bounds,
            type_names=self.type_names,
            edge_src=self.edge_src[keep],
            edge_dst=self.edge_dst[keep],
            edge_size=self.edge_size[keep],
            raw_ptr=self.raw_ptr[: nt + 1],
            raw_cluster=self.raw_cluster[:nr],
            raw_size=self.raw_size[:nr],
            stage_edge_job=self.stage_edge_job[skeep],
            stage_edge_src=self.stage_edge_src[skeep],
            stage_edge_dst=self.stage_edge_dst[skeep],
            task_cap=self.task_cap[:nt],
            deadline=self.deadline[:n_jobs],
            sla_ptr=self.sla_ptr[: n_jobs + 1],
            sla_time=self.sla_time[:ns],
            sla_height=self.sla_height[:ns],
        )

    def take_jobs(self, order: np.ndarray) -> Workload:
        """Select jobs ``order[0], order[1], ...`` (a permutation or selection), re-indexed.

        Args:
            order: int array of distinct job indices.

        Returns:
            A new workload whose job i is this workload's job ``order[i]``; tasks keep their
            order within a job, edges and raw inputs follow their tasks.
        """
        order = np.asarray(order, dtype=np.int64)
        counts = np.diff(self.task_ptr)[order]
        new_ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        nt = int(new_ptr[-1])
        old_ids = np.repeat(self.task_ptr[order] - new_ptr[:-1], counts) + np.arange(nt)
        new_of_old = np.full(self.n_tasks, -1, dtype=np.int64)
        new_of_old[old_ids] = np.arange(nt)
        new_job_of_old_job = np.full(self.n_jobs, -1, dtype=np.int64)
        new_job_of_old_job[order] = np.arange(order.shape[0])
        ejob = new_job_of_old_job[self.job_of_task[self.edge_dst]] if self.n_edges else \
            np.zeros(0, dtype=np.int64)
        keep = np.flatnonzero(ejob >= 0)
        eorder = keep[np.argsort(ejob[keep], kind="stable")]
        rcounts = np.diff(self.raw_ptr)[old_ids]
        new_raw_ptr = np.concatenate(([0], np.cumsum(rcounts))).astype(np.int64)
        nr = int(new_raw_ptr[-1])
        old_raw = np.repeat(self.raw_ptr[old_ids] - new_raw_ptr[:-1], rcounts) + np.arange(nr)
        sjob = new_job_of_old_job[self.stage_edge_job]
        skeep = np.flatnonzero(sjob >= 0)
        sorder = skeep[np.argsort(sjob[skeep], kind="stable")]
        scounts = np.diff(self.sla_ptr)[order]
        new_sla_ptr = np.concatenate(([0], np.cumsum(scounts))).astype(np.int64)
        old_sla = np.repeat(self.sla_ptr[order] - new_sla_ptr[:-1], scounts) + \
            np.arange(int(new_sla_ptr[-1]))
        return Workload(
            arrival=self.arrival[order],
            weight=self.weight[order],
            task_ptr=new_ptr,
            task_work=self.task_work[old_ids],
            task_type=self.task_type[old_ids],
            task_stage=self.task_stage[old_ids],
            task_cv=self.task_cv[old_ids],
            copy_bounds=self.copy_bounds,
            type_names=self.type_names,
            edge_src=new_of_old[self.edge_src[eorder]],
            edge_dst=new_of_old[self.edge_dst[eorder]],
            edge_size=self.edge_size[eorder],
            raw_ptr=new_raw_ptr,
            raw_cluster=self.raw_cluster[old_raw],
            raw_size=self.raw_size[old_raw],
            stage_edge_job=sjob[sorder],
            stage_edge_src=self.stage_edge_src[sorder],
            stage_edge_dst=self.stage_edge_dst[sorder],
            task_cap=self.task_cap[old_ids],
            deadline=self.deadline[order],
            sla_ptr=new_sla_ptr,
            sla_time=self.sla_time[old_sla],
            sla_height=self.sla_height[old_sla],
        )


def empty_workload() -> Workload:
    """Return a workload with no jobs."""
    f, i = np.zeros(0), np.zeros(0, dtype=np.int64)
    return Workload(arrival=f, weight=f, task_ptr=np.zeros(1, dtype=np.int64), task_work=f,
                    task_type=np.zeros(0, dtype=np.int32), type_names=(), edge_src=i,
                    edge_dst=i, edge_size=f, raw_ptr=np.zeros(1, dtype=np.int64),
                    raw_cluster=i, raw_size=f, task_stage=np.zeros(0, dtype=np.int32),
                    task_cv=f)


def concat(workloads: Sequence[Workload], *, sort_by_arrival: bool = False) -> Workload:
    """Join workloads job list after job list, re-indexing tasks and merging type names.

    Args:
        workloads: The workloads, in order.
        sort_by_arrival: Reorder the joined jobs by arrival time (stable). Without it the
            arrivals must already be non-decreasing across the joined workloads.

    Returns:
        One workload. Type names are the union in order of first appearance.

    Raises:
        GeosimError: If arrivals decrease and ``sort_by_arrival`` is false.
    """
    workloads = list(workloads)
    if not workloads:
        return empty_workload()
    names: list[str] = []
    index: dict[str, int] = {}
    for w in workloads:
        for name in w.type_names:
            if name not in index:
                index[name] = len(names)
                names.append(name)
    toff = np.cumsum([0] + [w.n_tasks for w in workloads])
    joff = np.cumsum([0] + [w.n_jobs for w in workloads])
    roff = np.cumsum([0] + [w.n_raw for w in workloads])
    soff = np.cumsum([0] + [w.sla_time.shape[0] for w in workloads])

    def cat(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
        return np.concatenate(arrays).astype(dtype, copy=False) if arrays else \
            np.zeros(0, dtype=dtype)

    task_type = []
    for w in workloads:
        remap = np.array([index[n] for n in w.type_names], dtype=np.int32)
        task_type.append(remap[w.task_type] if w.n_tasks else np.zeros(0, dtype=np.int32))
    out = Workload(
        arrival=cat([w.arrival for w in workloads], np.float64),
        weight=cat([w.weight for w in workloads], np.float64),
        task_ptr=cat([w.task_ptr[:-1] + o for w, o in zip(workloads, toff[:-1], strict=True)]
                     + [np.array([toff[-1]])], np.int64),
        task_work=cat([w.task_work for w in workloads], np.float64),
        task_type=cat(task_type, np.int32),
        task_stage=cat([w.task_stage for w in workloads], np.int32),
        task_cv=cat([w.task_cv for w in workloads], np.float64),
        copy_bounds=(min(w.copy_bounds[0] for w in workloads),
                     max(w.copy_bounds[1] for w in workloads)),
        type_names=tuple(names),
        edge_src=cat([w.edge_src + o for w, o in zip(workloads, toff[:-1], strict=True)], np.int64),
        edge_dst=cat([w.edge_dst + o for w, o in zip(workloads, toff[:-1], strict=True)], np.int64),
        edge_size=cat([w.edge_size for w in workloads], np.float64),
        raw_ptr=cat([w.raw_ptr[:-1] + o for w, o in zip(workloads, roff[:-1], strict=True)]
                    + [np.array([roff[-1]])], np.int64),
        raw_cluster=cat([w.raw_cluster for w in workloads], np.int64),
        raw_size=cat([w.raw_size for w in workloads], np.float64),
        stage_edge_job=cat([w.stage_edge_job + o for w, o in zip(workloads, joff[:-1],
                                                                  strict=True)], np.int64),
        stage_edge_src=cat([w.stage_edge_src for w in workloads], np.int32),
        stage_edge_dst=cat([w.stage_edge_dst for w in workloads], np.int32),
        task_cap=cat([w.task_cap for w in workloads], np.int32),
        deadline=cat([w.deadline for w in workloads], np.float64),
        sla_ptr=cat([w.sla_ptr[:-1] + o for w, o in zip(workloads, soff[:-1], strict=True)]
                    + [np.array([soff[-1]])], np.int64),
        sla_time=cat([w.sla_time for w in workloads], np.float64),
        sla_height=cat([w.sla_height for w in workloads], np.float64),
    )
    dec = np.diff(out.arrival) < 0
    if dec.any():
        if not sort_by_arrival:
            j = int(np.flatnonzero(dec)[0]) + 1
            raise GeosimError(f"concatenated arrivals decrease at job {j} "
                              f"({out.arrival[j]:g} s after {out.arrival[j - 1]:g} s); "
                              "pass sort_by_arrival=True to interleave", source="workload")
        out = out.take_jobs(np.argsort(out.arrival, kind="stable"))
    return out


# =================================================================================== helpers
def check_count(value: Any, name: str) -> int:
    """``value`` as a non-negative integer; a :class:`GeosimError` naming ``name`` if not."""
    ok = isinstance(value, int | float | np.integer | np.floating) and \
        not isinstance(value, bool) and math.isfinite(value) and int(value) == value and value >= 0
    if not ok:
        raise GeosimError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def check_positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """``value`` as a positive (or, with ``allow_zero``, non-negative) finite number."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise GeosimError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise GeosimError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return v


def check_range(value: Any, name: str, *, integer: bool, minimum: float) -> tuple[Any, Any]:
    """Parse a (lo, hi) range from a scalar or a pair, with minimum <= lo <= hi."""
    lo, hi = (value, value) if np.isscalar(value) else tuple(value)
    for v in (lo, hi):
        ok = isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)
        if not ok or not math.isfinite(v) or (integer and int(v) != v):
            raise GeosimError(f"{name} must be {'integers' if integer else 'numbers'}, "
                              f"got {value!r}")
    if not minimum <= lo <= hi:
        raise GeosimError(f"{name} must satisfy {minimum:g} <= low <= high, got {value!r}")
    return (int(lo), int(hi)) if integer else (float(lo), float(hi))


def gamma_noise(rng: np.random.Generator, cv: float, size: int) -> np.ndarray:
    """Gamma factors of mean 1 and coefficient of variation ``cv`` (ones if cv == 0)."""
    if cv == 0:
        return np.ones(size)
    shape = 1.0 / (cv * cv)
    return rng.gamma(shape, 1.0 / shape, size)


def input_sites(input_clusters: Any, input_probs: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """The input sites as integer cluster indices, and their probabilities (None: uniform)."""
    clusters = np.asarray(input_clusters)
    if clusters.ndim != 1 or clusters.size == 0:
        raise GeosimError("input_clusters must be a non-empty list of cluster indices")
    if clusters.dtype.kind not in "iu":
        if clusters.dtype.kind != "f" or not np.all(clusters == np.trunc(clusters)):
            raise GeosimError(f"input_clusters must be integers, got {input_clusters!r}")
    clusters = clusters.astype(np.int64)
    if (clusters < 0).any():
        raise GeosimError(f"input_clusters must be >= 0, got cluster {clusters.min()}")
    if input_probs is None:
        return clusters, None
    probs = np.asarray(input_probs, dtype=np.float64)
    if probs.shape != clusters.shape:
        raise GeosimError(f"input_probs has {probs.size} entries for {clusters.size} "
                          "input_clusters")
    if not np.all(np.isfinite(probs)) or (probs < 0).any() or probs.sum() <= 0:
        raise GeosimError("input_probs must be non-negative with a positive sum")
    return clusters, probs / probs.sum()


def place_inputs(rng: np.random.Generator, clusters: np.ndarray, probs: np.ndarray | None,
                  k: int, n_items: int) -> np.ndarray:
    """Pick k distinct sites (weighted, without replacement); put each item on one of them."""
    sites = rng.choice(clusters, size=k, replace=False, p=probs)
    return sites[rng.integers(0, k, size=n_items)]


# =================================================================================== arrivals
def poisson_arrivals(n_jobs: int, rate: float, rng: np.random.Generator,
                     start: float = 0.0) -> np.ndarray:
    """Arrival times of a Poisson process: cumulative exponential inter-arrival times.

    Args:
        n_jobs: Number of arrivals.
        rate: Arrival rate, jobs per second (> 0).
        rng: Random generator.
        start: Time origin; the first arrival is ``start`` plus one inter-arrival time.

    Returns:
        float64[n_jobs], non-decreasing.
    """
    n_jobs = check_count(n_jobs, "n_jobs")
    rate = check_positive(rate, "arrival rate")
    start = check_positive(start, "arrival start", allow_zero=True)
    return start + np.cumsum(rng.exponential(1.0 / rate, n_jobs))
