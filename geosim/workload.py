"""Workloads: jobs arriving over time, each a DAG of tasks, held as flat NumPy arrays.

A :class:`Workload` holds every job of a run in arrival order as a struct of arrays, so the
engine never loops over tasks in Python. Task ids are global (``0..n_tasks-1``); the tasks of
job ``j`` are ``task_ptr[j]:task_ptr[j+1]``, listed in a topological order of the job's DAG, and
every edge goes from an earlier to a later task of the same job. The generators below sort edges
by child, then parent (a convenience, not part of the contract).

Units
    Data in MB (1 MB = 10**6 bytes, :data:`BYTES_PER_MB`), compute work in MI (million
    instructions: a VM of power P MIPS runs ``w`` MI in ``w / P`` seconds at full speed), time in
    seconds. Arrays of a :class:`Workload` are read-only views; copy them before changing them.

Generators
    Every generator takes a :class:`numpy.random.Generator` and draws everything from it, in a
    fixed order, so the same seed gives identical arrays.

    * :func:`poisson_arrivals` -- cumulative exponential inter-arrival times.
    * :func:`single_work_jobs` -- the redundancy paper's jobs (002 §6): one task per job, its work
      drawn from a :class:`WorkDistribution` (there Pareto with b=20, alpha=2, mean 40), in units
      where a machine of power 1 runs one unit per second.
    * :func:`montage_jobs` -- PingAn's workload (003 §6.1): Montage workflows whose task counts
      follow the Facebook job-size mix; model below.
    * :func:`read_wfformat` / :func:`wfformat_jobs` -- real workflow instances in WfCommons'
      WfFormat (schema 1.5, and the older 1.0-1.4 layouts), one job or a Poisson stream of them.
    * :func:`concat` -- join workloads (re-indexing tasks, merging type names).

Montage model (:func:`montage_jobs`)
    Structure: the Pegasus Montage DAG (Bharathi et al., "Characterization of scientific
    workflows", WORKS 2008, and its WorkflowGenerator ``Montage.java``; file lists as in
    pegasus-isi/montage-workflow-v3)::

        mProjectPP  x n   (one per input image; reads its raw image)
        mDiffFit    x d   (one per overlapping pair; reads both projected images + area maps)
        mConcatFit  x 1   (all fits)         -> mBgModel x 1
        mBackground x n   (its projected image + the background model)
        mImgtbl     x 1   (all corrected images)
        mAdd        x 1   (all corrected images + area maps, and the image table)
        mShrink     x 1   -> mJPEG x 1

    so a job has ``T = 2n + d + 6`` tasks. Images lie row by row on a near-square grid
    (``ceil(sqrt(n))`` columns) and only grid neighbours overlap (8-neighbourhood, as tiles of a
    survey such as 2MASS do). The ``d`` overlap pairs are a spanning tree of the grid (every row
    chained left to right, rows joined through the first column: ``n - 1`` pairs, so the mosaic
    is connected) plus ``d - (n - 1)`` further neighbour pairs drawn at random. Given ``T``, the
    job draws an overlap ratio ``rho ~ U(overlap_ratio)`` (default 2.5-3.5; the Pegasus 2MASS
    workflows have about 3 mDiffFit per mProjectPP), sets ``n = round((T - 6) / (2 + rho))`` and
    moves ``n`` up until ``n - 1 <= d = T - 6 - 2n <= (neighbour pairs of the grid)`` (small
    grids have fewer than ``rho * n`` neighbour pairs, so their ratio ends lower).

    Truncation: the full structure exists for ``T = 11`` (n=2, d=1), 14, 15 and every
    ``T >= 17``; for ``T = 12, 13, 16`` no (n, d) fits the grid (two images overlap once, three
    at most three times, four need at least three pairs). Jobs without a full structure skip
    background rectification, which Montage allows (mProjExec -> mImgtbl -> mAdd, as in
    Montage's own tutorial): ``n = T - 4`` mProjectPP -> mImgtbl -> mAdd ->
    mShrink -> mJPEG for ``6 <= T <= 16``, and for ``T <= 5`` a single image through the first
    ``T`` stages of that chain (``T = 1`` is a lone mProjectPP; ``T = 5`` the whole one-image
    chain). With the default mix about 8% of jobs are truncated.

    Job size: ``T`` is drawn from ``size_mix``, triples ``(probability, min_tasks, max_tasks)``,
    uniformly within the chosen class. Default: the Facebook Hadoop mix of 003 §6.1, 89% 1-150,
    8% 151-500, 3% 501-2000 tasks. The paper gives no upper bound for "large"; 2000 keeps the
    largest jobs (about 400 images, a 1.4 GB mosaic) within what Montage runs as one workflow and
    the mean near 131 tasks per job. Change it with ``size_mix``.

    Reference figures (WorkflowGenerator, fitted for a 1-degree 2MASS mosaic of 50 images;
    runtimes in seconds on its reference machine; degree**2 = n / 50)::

        task         runtime                  output read by children
        mProjectPP   13.59                    projected image + area map, 2 x 4.162 MB
        mDiffFit     10.59                    fit table 274 B (the difference image stays local)
        mConcatFit   0.08 * d                 fits table 210 B * d
        mBgModel     0.13 * d                 corrections table 53 B * n
        mBackground  10.74                    corrected image + area map (= projected size)
        mImgtbl      0.37 * n                 image table 352 B * n
        mAdd         30.11 * n / 50           mosaic 173.47 MB * n / 50 (+ area map, not read)
        mShrink      12.21 * n / 50           shrunken mosaic = mosaic / 24.99
        mJPEG        jpeg bytes / 549291 B/s  jpeg = shrunken / 4 (no child)

    Raw input: one 2MASS image of 4.222 MB per mProjectPP. mImgtbl reads the corrected (or, in
    truncated jobs, projected) images without their area maps; mAdd reads both. Deviation from
    the generator: it scales the mosaic with the degree and mShrink's runtime with the degree;
    here both scale with the mosaic's area (``n / 50``), since the mosaic covers the images and
    mShrink streams all of it. Small shared files (region header, catalogue tables) are
    replicated everywhere and not modelled.

    Variability: every task's work is multiplied by a gamma factor of mean 1 and coefficient of
    variation ``work_cv`` (default 0.2; the generator's fitted runtimes vary by under 3% on a
    dedicated machine, task work on shared VMs more -- VM-speed noise itself is the cluster
    model's business); image, fit-table and mosaic sizes likewise with ``size_cv`` (default 0.05;
    2MASS tiles have a fixed pixel grid, so image sizes barely vary).

    Work in MI: ``work = runtime * reference_mips``, i.e. the reference runtimes are taken as
    runtimes on a VM of ``reference_mips`` (default 200 MIPS, mid-range of PingAn's Table 2 VM
    power, 68-355 MIPS). An mProjectPP then runs in 8-40 s across that range; the per-job
    aggregators (mConcatFit, mBgModel, mAdd, mShrink) grow with the job.

    Input placement: each job picks ``k ~ U{sites_per_job}`` (default 1-4) distinct clusters from
    ``input_clusters``, drawn without replacement with weights ``input_probs`` (uniform if
    omitted), and stores each of its raw images on one of those k, uniformly at random. 003 §6.1
    says raw input is "randomly dispersed to the edges as well as some medium-scale clusters";
    the caller passes those clusters as ``input_clusters``.
"""

from __future__ import annotations

import heapq
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from geosim.errors import GeosimError

__all__ = [
    "BYTES_PER_MB",
    "FACEBOOK_SIZE_MIX",
    "MONTAGE_TYPES",
    "REFERENCE_MIPS",
    "WorkDistribution",
    "Workload",
    "concat",
    "empty_workload",
    "montage_jobs",
    "montage_task_counts",
    "poisson_arrivals",
    "read_wfformat",
    "single_work_jobs",
    "wfformat_jobs",
]

BYTES_PER_MB = 1e6
"""Bytes in one MB (decimal, as network and storage figures are quoted)."""

REFERENCE_MIPS = 200.0
"""Default VM power (MIPS) on which measured runtimes are taken to have been obtained."""

FACEBOOK_SIZE_MIX: tuple[tuple[float, int, int], ...] = ((0.89, 1, 150), (0.08, 151, 500),
                                                         (0.03, 501, 2000))
"""Facebook job-size mix (003 §6.1): (probability, min tasks, max tasks) per class."""

MONTAGE_TYPES: tuple[str, ...] = ("mProjectPP", "mDiffFit", "mConcatFit", "mBgModel",
                                  "mBackground", "mImgtbl", "mAdd", "mShrink", "mJPEG")
"""Task type names of :func:`montage_jobs`, in pipeline order (the index is ``task_type``)."""

_PROJ, _DIFF, _CONCAT, _BGMODEL, _BACKGROUND, _IMGTBL, _ADD, _SHRINK, _JPEG = range(9)

# Reference figures (WorkflowGenerator Montage.java, 1-degree 2MASS mosaic of 50 images).
_MONTAGE_REF_IMAGES = 50.0
_RAW_IMAGE_MB = 4_222_080 / BYTES_PER_MB
_PROJECTED_IMAGE_MB = 4_162_432 / BYTES_PER_MB  # one of the two files (image, area map)
_FIT_MB = 273.74 / BYTES_PER_MB
_FITS_TBL_MB_PER_DIFF = 209.953 / BYTES_PER_MB
_CORRECTIONS_MB_PER_IMAGE = 53.1778 / BYTES_PER_MB
_IMGTBL_MB_PER_IMAGE = 352.24 / BYTES_PER_MB
_MOSAIC_MB_PER_IMAGE = 173_465_280 / BYTES_PER_MB / _MONTAGE_REF_IMAGES
_SHRINK_FACTOR = 24.99
_JPEG_FRACTION = 0.25
_JPEG_RATE_MB_S = 549_291.0 / BYTES_PER_MB
_RT_PROJ, _RT_DIFF, _RT_BACKGROUND = 13.59, 10.59, 10.74
_RT_CONCAT_PER_DIFF, _RT_BGMODEL_PER_DIFF, _RT_IMGTBL_PER_IMAGE = 0.08, 0.13, 0.37
_RT_ADD_PER_IMAGE = 30.11 / _MONTAGE_REF_IMAGES
_RT_SHRINK_PER_IMAGE = 12.21 / _MONTAGE_REF_IMAGES

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
}


def _readonly(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.setflags(write=False)
    return view


def _more(count: int) -> str:
    return f" (and {count - 1} more)" if count > 1 else ""


@dataclass(frozen=True, eq=False)
class Workload:
    """All jobs of a run, in arrival order, as flat arrays.

    Task ids are global ``0..n_tasks-1``; the tasks of job j are ``task_ptr[j]:task_ptr[j+1]``,
    listed in a topological order of that job's DAG. Arrays are coerced to the dtypes below and
    stored as read-only views. Equality is identity (arrays do not compare as values).

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

    def __post_init__(self) -> None:
        for name, dtype in _DTYPES.items():
            try:
                a = np.asarray(getattr(self, name))
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
            object.__setattr__(self, name, _readonly(a))
        object.__setattr__(self, "type_names", tuple(str(t) for t in self.type_names))

    # ----------------------------------------------------------------------------- properties
    @property
    def n_jobs(self) -> int:
        """Number of jobs."""
        return int(self.arrival.shape[0])

    @property
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
    def job_of_task(self) -> np.ndarray:
        """int64[n_tasks]: the job each task belongs to."""
        counts = np.diff(self.task_ptr)
        return _readonly(np.repeat(np.arange(self.n_jobs, dtype=np.int64), counts))

    @cached_property
    def raw_task(self) -> np.ndarray:
        """int64[n_raw]: the task each raw input belongs to."""
        counts = np.diff(self.raw_ptr)
        return _readonly(np.repeat(np.arange(self.n_tasks, dtype=np.int64), counts))

    @cached_property
    def task_data(self) -> np.ndarray:
        """float64[n_tasks]: MB each task reads, raw inputs plus in-edges."""
        n = self.n_tasks
        data = np.bincount(self.raw_task, weights=self.raw_size, minlength=n)
        data += np.bincount(self.edge_dst, weights=self.edge_size, minlength=n)
        return _readonly(data.astype(np.float64))

    # ----------------------------------------------------------------------------- checks
    def validate(self, n_clusters: int, source: str = "workload") -> None:
        """Check the workload's consistency against a topology of ``n_clusters`` clusters.

        Args:
            n_clusters: Number of clusters; raw inputs must lie in ``[0, n_clusters)``.
            source: Where the workload came from, used as the error's source.

        Raises:
            GeosimError: With a one-line message naming the first problem found.
        """

        def fail(message: str) -> None:
            raise GeosimError(message, source=source)

        nj, nt, ne, nr = self.n_jobs, self.n_tasks, self.n_edges, self.n_raw
        if int(n_clusters) != n_clusters or n_clusters < 0:
            fail(f"number of clusters must be a non-negative integer, got {n_clusters!r}")
        n_clusters = int(n_clusters)
        lengths = {
            "weight": (self.weight.shape[0], nj, "n_jobs"),
            "task_ptr": (self.task_ptr.shape[0], nj + 1, "n_jobs + 1"),
            "task_type": (self.task_type.shape[0], nt, "n_tasks"),
            "raw_ptr": (self.raw_ptr.shape[0], nt + 1, "n_tasks + 1"),
            "edge_dst": (self.edge_dst.shape[0], ne, "len(edge_src)"),
            "edge_size": (self.edge_size.shape[0], ne, "len(edge_src)"),
            "raw_cluster": (self.raw_cluster.shape[0], nr, "len(raw_size)"),
        }
        for name, (got, want, what) in lengths.items():
            if got != want:
                fail(f"{name} has length {got}, expected {what} = {want}")

        # pointer arrays
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

        # jobs
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

        # tasks
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

        # edges
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

        # raw inputs
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
        return Workload(
            arrival=self.arrival[:n_jobs],
            weight=self.weight[:n_jobs],
            task_ptr=self.task_ptr[: n_jobs + 1],
            task_work=self.task_work[:nt],
            task_type=self.task_type[:nt],
            type_names=self.type_names,
            edge_src=self.edge_src[keep],
            edge_dst=self.edge_dst[keep],
            edge_size=self.edge_size[keep],
            raw_ptr=self.raw_ptr[: nt + 1],
            raw_cluster=self.raw_cluster[:nr],
            raw_size=self.raw_size[:nr],
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
        return Workload(
            arrival=self.arrival[order],
            weight=self.weight[order],
            task_ptr=new_ptr,
            task_work=self.task_work[old_ids],
            task_type=self.task_type[old_ids],
            type_names=self.type_names,
            edge_src=new_of_old[self.edge_src[eorder]],
            edge_dst=new_of_old[self.edge_dst[eorder]],
            edge_size=self.edge_size[eorder],
            raw_ptr=new_raw_ptr,
            raw_cluster=self.raw_cluster[old_raw],
            raw_size=self.raw_size[old_raw],
        )


def empty_workload() -> Workload:
    """Return a workload with no jobs."""
    f, i = np.zeros(0), np.zeros(0, dtype=np.int64)
    return Workload(arrival=f, weight=f, task_ptr=np.zeros(1, dtype=np.int64), task_work=f,
                    task_type=np.zeros(0, dtype=np.int32), type_names=(), edge_src=i,
                    edge_dst=i, edge_size=f, raw_ptr=np.zeros(1, dtype=np.int64),
                    raw_cluster=i, raw_size=f)


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
    roff = np.cumsum([0] + [w.n_raw for w in workloads])

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
        type_names=tuple(names),
        edge_src=cat([w.edge_src + o for w, o in zip(workloads, toff[:-1], strict=True)], np.int64),
        edge_dst=cat([w.edge_dst + o for w, o in zip(workloads, toff[:-1], strict=True)], np.int64),
        edge_size=cat([w.edge_size for w in workloads], np.float64),
        raw_ptr=cat([w.raw_ptr[:-1] + o for w, o in zip(workloads, roff[:-1], strict=True)]
                    + [np.array([roff[-1]])], np.int64),
        raw_cluster=cat([w.raw_cluster for w in workloads], np.int64),
        raw_size=cat([w.raw_size for w in workloads], np.float64),
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
def _check_count(value: Any, name: str) -> int:
    ok = isinstance(value, int | float | np.integer | np.floating) and \
        not isinstance(value, bool) and math.isfinite(value) and int(value) == value and value >= 0
    if not ok:
        raise GeosimError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def _check_positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise GeosimError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise GeosimError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return v


def _check_range(value: Any, name: str, *, integer: bool, minimum: float) -> tuple[Any, Any]:
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


def _gamma_noise(rng: np.random.Generator, cv: float, size: int) -> np.ndarray:
    """Gamma factors of mean 1 and coefficient of variation ``cv`` (ones if cv == 0)."""
    if cv == 0:
        return np.ones(size)
    shape = 1.0 / (cv * cv)
    return rng.gamma(shape, 1.0 / shape, size)


def _input_sites(input_clusters: Any, input_probs: Any) -> tuple[np.ndarray, np.ndarray | None]:
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


def _place_inputs(rng: np.random.Generator, clusters: np.ndarray, probs: np.ndarray | None,
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
    n_jobs = _check_count(n_jobs, "n_jobs")
    rate = _check_positive(rate, "arrival rate")
    start = _check_positive(start, "arrival start", allow_zero=True)
    return start + np.cumsum(rng.exponential(1.0 / rate, n_jobs))


# =================================================================================== single work
_DIST_PARAMS: dict[str, tuple[str, ...]] = {
    "pareto": ("scale", "shape"),
    "exponential": ("mean",),
    "deterministic": ("value",),
    "uniform": ("low", "high"),
}


@dataclass(frozen=True)
class WorkDistribution:
    """A distribution of job work (positive values).

    Kinds and parameters:
        ``pareto``: ``scale`` b > 0, ``shape`` alpha > 0; support [b, inf),
        P(X > x) = (b/x)**alpha, mean alpha*b/(alpha-1) (infinite if alpha <= 1).
        ``exponential``: ``mean`` > 0.
        ``deterministic``: ``value`` > 0.
        ``uniform``: ``low`` > 0, ``high`` >= low.

    Attributes:
        kind: One of the kinds above.
        params: Parameter name -> value.

    Raises:
        GeosimError: On an unknown kind or a missing, unknown or out-of-range parameter.
    """

    kind: str
    params: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in _DIST_PARAMS:
            raise GeosimError(f"unknown work distribution {self.kind!r} "
                              f"(choose from {', '.join(_DIST_PARAMS)})")
        wanted = _DIST_PARAMS[self.kind]
        given = dict(self.params)
        for name in given:
            if name not in wanted:
                raise GeosimError(f"{self.kind} distribution has no parameter {name!r} "
                                  f"(parameters: {', '.join(wanted)})")
        clean: dict[str, float] = {}
        for name in wanted:
            if name not in given:
                raise GeosimError(f"{self.kind} distribution needs parameter {name!r}")
            clean[name] = _check_positive(given[name], f"{self.kind} parameter {name!r}")
        if self.kind == "uniform" and clean["high"] < clean["low"]:
            raise GeosimError(f"uniform parameter 'high' ({clean['high']:g}) must be >= "
                              f"'low' ({clean['low']:g})")
        object.__setattr__(self, "params", clean)

    @classmethod
    def pareto(cls, scale: float, shape: float) -> WorkDistribution:
        """Pareto with support [scale, inf) and tail index ``shape``."""
        return cls("pareto", {"scale": scale, "shape": shape})

    @classmethod
    def exponential(cls, mean: float) -> WorkDistribution:
        """Exponential with the given mean."""
        return cls("exponential", {"mean": mean})

    @classmethod
    def deterministic(cls, value: float) -> WorkDistribution:
        """Return ``value`` every time."""
        return cls("deterministic", {"value": value})

    @classmethod
    def uniform(cls, low: float, high: float) -> WorkDistribution:
        """Uniform on [low, high]."""
        return cls("uniform", {"low": low, "high": high})

    @property
    def mean(self) -> float:
        """The distribution's mean (``inf`` for a Pareto with shape <= 1)."""
        p = self.params
        if self.kind == "pareto":
            a = p["shape"]
            return math.inf if a <= 1 else a * p["scale"] / (a - 1)
        if self.kind == "exponential":
            return p["mean"]
        if self.kind == "deterministic":
            return p["value"]
        return 0.5 * (p["low"] + p["high"])

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n`` values.

        Args:
            n: Number of values.
            rng: Random generator.

        Returns:
            float64[n], all > 0.
        """
        n = _check_count(n, "sample size")
        p = self.params
        if self.kind == "pareto":
            # numpy's pareto is the Lomax (Pareto II) law; shift and scale to Pareto I.
            return p["scale"] * (1.0 + rng.pareto(p["shape"], n))
        if self.kind == "exponential":
            return rng.exponential(p["mean"], n)
        if self.kind == "deterministic":
            return np.full(n, p["value"])
        return rng.uniform(p["low"], p["high"], n)


def single_work_jobs(n_jobs: int, arrival_rate: float, work: WorkDistribution,
                     rng: np.random.Generator, input_cluster: int | None = None, *,
                     start: float = 0.0) -> Workload:
    """Generate the redundancy paper's jobs (002 §6): one task per job, Poisson arrivals.

    The caller chooses units so that a machine of power 1 runs one unit of work per second.

    Args:
        n_jobs: Number of jobs.
        arrival_rate: Poisson arrival rate, jobs per second.
        work: Distribution of each job's work.
        rng: Random generator (arrivals are drawn first, then work).
        input_cluster: If given, each task has one raw input of size = its work (MB) stored
            there; otherwise no raw input.
        start: Time origin of the arrivals.

    Returns:
        A workload with type names ``("job",)`` and no edges.
    """
    arrival = poisson_arrivals(n_jobs, arrival_rate, rng, start)
    n = arrival.shape[0]
    w = work.sample(n, rng)
    i0 = np.zeros(0, dtype=np.int64)
    if input_cluster is None:
        raw_ptr, raw_cluster, raw_size = np.zeros(n + 1, dtype=np.int64), i0, np.zeros(0)
    else:
        c = _check_count(input_cluster, "input_cluster")
        raw_ptr = np.arange(n + 1, dtype=np.int64)
        raw_cluster, raw_size = np.full(n, c, dtype=np.int64), w.copy()
    return Workload(arrival=arrival, weight=np.ones(n), task_ptr=np.arange(n + 1),
                    task_work=w, task_type=np.zeros(n, dtype=np.int32), type_names=("job",),
                    edge_src=i0, edge_dst=i0, edge_size=np.zeros(0), raw_ptr=raw_ptr,
                    raw_cluster=raw_cluster, raw_size=raw_size)


# =================================================================================== Montage
@lru_cache(maxsize=4096)
def _grid_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Overlap candidates of n images laid row by row on a ceil(sqrt(n))-column grid.

    Returns:
        ``(tree, extra)``: int64[n-1, 2] pairs of a spanning tree (rows chained left to right,
        rows joined through the first column) and int64[m, 2] the other 8-neighbour pairs.
    """
    cols = math.ceil(math.sqrt(n))
    i = np.arange(n)
    col = i % cols
    tree, extra = [], []
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        j = i + dr * cols + dc
        ok = (col + dc >= 0) & (col + dc < cols) & (j < n)
        pairs = np.stack([i[ok], j[ok]], axis=1)
        if (dr, dc) == (0, 1):
            tree.append(pairs)
        elif (dr, dc) == (1, 0):
            first = pairs[:, 0] % cols == 0
            tree.append(pairs[first])
            extra.append(pairs[~first])
        else:
            extra.append(pairs)
    t = np.concatenate(tree).astype(np.int64).reshape(-1, 2)
    e = np.concatenate(extra).astype(np.int64).reshape(-1, 2)
    return _readonly(t), _readonly(e)


def _montage_shape(T: int, rho: float) -> tuple[int, int] | None:
    """(n images, d overlap pairs) of a full-structure job of T tasks, None if there is none.

    None happens only for T < 11 and T = 12, 13, 16 (see the module docstring).
    """
    r = T - 6
    if r < 5:
        return None
    n = min(max(round(r / (2.0 + rho)), 2), (r + 1) // 3)
    while r - 2 * n >= n - 1:
        tree, extra = _grid_pairs(n)
        if r - 2 * n <= tree.shape[0] + extra.shape[0]:
            return n, r - 2 * n
        n += 1
    return None


def _full_job(n: int, d: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Local types, edge sources and edge destinations of a full Montage job."""
    tree, extra = _grid_pairs(n)
    k = d - tree.shape[0]
    pairs = np.concatenate([tree, extra[rng.choice(extra.shape[0], size=k, replace=False)]]) \
        if k > 0 else tree
    types = np.repeat(np.arange(9, dtype=np.int32), [n, d, 1, 1, n, 1, 1, 1, 1])
    proj = np.arange(n)
    diff = n + np.arange(d)
    concat_, bgmodel = n + d, n + d + 1
    bg = n + d + 2 + np.arange(n)
    imgtbl = 2 * n + d + 2
    add, shrink, jpeg = imgtbl + 1, imgtbl + 2, imgtbl + 3
    src = np.concatenate([pairs[:, 0], pairs[:, 1], diff, [concat_], np.full(n, bgmodel), proj,
                          bg, bg, [imgtbl, add, shrink]])
    dst = np.concatenate([diff, diff, np.full(d, concat_), [bgmodel], bg, bg,
                          np.full(n, imgtbl), np.full(n, add), [add, shrink, jpeg]])
    return types, src, dst


def _nobg_job(T: int) -> tuple[np.ndarray, ...]:
    """Local types and edges of a truncated job (no background rectification)."""
    n = max(T - 4, 1)
    tail = [_IMGTBL, _ADD, _SHRINK, _JPEG][: T - n]
    types = np.array([_PROJ] * n + tail, dtype=np.int32)
    proj = np.arange(n)
    imgtbl, add, shrink, jpeg = n, n + 1, n + 2, n + 3
    src: list[np.ndarray] = []
    dst: list[np.ndarray] = []
    if T > imgtbl:
        src.append(proj)
        dst.append(np.full(n, imgtbl))
    if T > add:
        src += [proj, np.array([imgtbl])]
        dst += [np.full(n, add), np.array([add])]
    if T > shrink:
        src.append(np.array([add]))
        dst.append(np.array([shrink]))
    if T > jpeg:
        src.append(np.array([shrink]))
        dst.append(np.array([jpeg]))
    e = np.zeros(0, dtype=np.int64)
    return (types, np.concatenate(src) if src else e, np.concatenate(dst) if dst else e)


def _check_size_mix(size_mix: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    try:
        rows = [tuple(r) for r in size_mix]
        ok = len(rows) > 0 and all(len(r) == 3 for r in rows)
    except TypeError:
        ok = False
    if not ok:
        raise GeosimError(f"size_mix must be a list of (probability, min_tasks, max_tasks), "
                          f"got {size_mix!r}")
    p = np.array([r[0] for r in rows], dtype=np.float64)
    lo = np.array([r[1] for r in rows], dtype=np.float64)
    hi = np.array([r[2] for r in rows], dtype=np.float64)
    if not np.all(np.isfinite(p)) or (p < 0).any() or abs(p.sum() - 1.0) > 1e-6:
        raise GeosimError(f"size_mix probabilities must be >= 0 and sum to 1, got {p.tolist()}")
    if (lo != np.trunc(lo)).any() or (hi != np.trunc(hi)).any() or (lo < 1).any() or \
            (hi < lo).any():
        raise GeosimError("size_mix task bounds must be integers with 1 <= min_tasks <= "
                          f"max_tasks, got {[r[1:] for r in rows]}")
    return p / p.sum(), lo.astype(np.int64), hi.astype(np.int64)


def montage_task_counts(n_jobs: int, rng: np.random.Generator,
                        size_mix: Sequence[tuple[float, int, int]] = FACEBOOK_SIZE_MIX
                        ) -> np.ndarray:
    """Task counts drawn from a job-size mix: a class by probability, then uniform within it.

    Args:
        n_jobs: Number of jobs.
        rng: Random generator.
        size_mix: ``(probability, min_tasks, max_tasks)`` per class.

    Returns:
        int64[n_jobs] task counts.
    """
    n_jobs = _check_count(n_jobs, "n_jobs")
    p, lo, hi = _check_size_mix(size_mix)
    cls = rng.choice(p.shape[0], size=n_jobs, p=p)
    return rng.integers(lo[cls], hi[cls] + 1).astype(np.int64)


def montage_jobs(n_jobs: int, arrival_rate: float, rng: np.random.Generator, *,
                 input_clusters: np.ndarray, input_probs: np.ndarray | None = None,
                 size_mix: Sequence[tuple[float, int, int]] = FACEBOOK_SIZE_MIX,
                 sites_per_job: int | tuple[int, int] = (1, 4),
                 overlap_ratio: float | tuple[float, float] = (2.5, 3.5),
                 work_cv: float = 0.2, size_cv: float = 0.05,
                 reference_mips: float = REFERENCE_MIPS, start: float = 0.0) -> Workload:
    """PingAn's workload (003 §6.1): a Poisson stream of Montage workflows.

    See the module docstring for the structure, sizes, work and placement model.

    Args:
        n_jobs: Number of jobs.
        arrival_rate: Poisson arrival rate, jobs per second (003: 0.02-0.15).
        rng: Random generator.
        input_clusters: Clusters that may store raw images.
        input_probs: Weights of ``input_clusters`` (uniform if None).
        size_mix: ``(probability, min_tasks, max_tasks)`` per job-size class; the task count is
            uniform within a class.
        sites_per_job: Range (inclusive) of how many distinct input clusters a job's images are
            scattered over (capped at the number of usable clusters).
        overlap_ratio: Range of the target mDiffFit / mProjectPP ratio, drawn per job.
        work_cv: Coefficient of variation of per-task work (gamma, mean 1 factor).
        size_cv: Coefficient of variation of image, fit and mosaic sizes.
        reference_mips: MIPS of the VM the reference runtimes are taken to be measured on.
        start: Time origin of the arrivals.

    Returns:
        The workload, with type names :data:`MONTAGE_TYPES`.

    Raises:
        GeosimError: On an invalid parameter.
    """
    clusters, probs = _input_sites(input_clusters, input_probs)
    usable = int(np.count_nonzero(probs)) if probs is not None else clusters.shape[0]
    k_lo, k_hi = _check_range(sites_per_job, "sites_per_job", integer=True, minimum=1)
    r_lo, r_hi = _check_range(overlap_ratio, "overlap_ratio", integer=False, minimum=1.0)
    work_cv = _check_positive(work_cv, "work_cv", allow_zero=True)
    size_cv = _check_positive(size_cv, "size_cv", allow_zero=True)
    mips = _check_positive(reference_mips, "reference_mips")
    _check_size_mix(size_mix)

    arrival = poisson_arrivals(n_jobs, arrival_rate, rng, start)
    nj = arrival.shape[0]
    T = montage_task_counts(nj, rng, size_mix)
    rho = rng.uniform(r_lo, r_hi, nj)
    k_sites = np.minimum(rng.integers(k_lo, k_hi + 1, nj), usable)

    types_l: list[np.ndarray] = []
    src_l: list[np.ndarray] = []
    dst_l: list[np.ndarray] = []
    raw_cl: list[np.ndarray] = []
    job_n = np.empty(nj, dtype=np.int64)
    job_d = np.zeros(nj, dtype=np.int64)
    offset = 0
    for j in range(nj):
        t = int(T[j])
        shape = _montage_shape(t, float(rho[j]))
        if shape is not None:
            n, d = shape
            types, src, dst = _full_job(n, d, rng)
            job_d[j] = d
        else:
            types, src, dst = _nobg_job(t)
            n = int(np.count_nonzero(types == _PROJ))
        job_n[j] = n
        types_l.append(types)
        src_l.append(src + offset)
        dst_l.append(dst + offset)
        raw_cl.append(_place_inputs(rng, clusters, probs, int(k_sites[j]), n))
        offset += t

    nt = offset
    task_ptr = np.concatenate(([0], np.cumsum(T))).astype(np.int64)
    ttype = np.concatenate(types_l) if nj else np.zeros(0, dtype=np.int32)
    src = np.concatenate(src_l).astype(np.int64) if nj else np.zeros(0, dtype=np.int64)
    dst = np.concatenate(dst_l).astype(np.int64) if nj else np.zeros(0, dtype=np.int64)
    order = np.lexsort((src, dst))
    src, dst = src[order], dst[order]
    n_t = np.repeat(job_n, T).astype(np.float64)
    d_t = np.repeat(job_d, T).astype(np.float64)

    # data each task's children read
    is_proj = ttype == _PROJ
    mosaic = _MOSAIC_MB_PER_IMAGE * job_n * _gamma_noise(rng, size_cv, nj)
    mosaic_t = np.repeat(mosaic, T)
    out = np.zeros(nt)
    out[is_proj] = 2.0 * _PROJECTED_IMAGE_MB * _gamma_noise(rng, size_cv, int(is_proj.sum()))
    is_diff = ttype == _DIFF
    out[is_diff] = _FIT_MB * _gamma_noise(rng, size_cv, int(is_diff.sum()))
    out += np.select(
        [ttype == _CONCAT, ttype == _BGMODEL, ttype == _IMGTBL, ttype == _ADD,
         ttype == _SHRINK, ttype == _JPEG],
        [_FITS_TBL_MB_PER_DIFF * d_t, _CORRECTIONS_MB_PER_IMAGE * n_t, _IMGTBL_MB_PER_IMAGE * n_t,
         mosaic_t, mosaic_t / _SHRINK_FACTOR, mosaic_t / _SHRINK_FACTOR * _JPEG_FRACTION], 0.0)
    corrected = (ttype[src] == _PROJ) & (ttype[dst] == _BACKGROUND)
    out[dst[corrected]] = out[src[corrected]]  # mBackground keeps the image's size
    edge_size = out[src]
    image_only = (ttype[dst] == _IMGTBL) & ((ttype[src] == _PROJ) | (ttype[src] == _BACKGROUND))
    edge_size[image_only] *= 0.5  # mImgtbl reads the image, not its area map

    runtime = np.select(
        [is_proj, is_diff, ttype == _CONCAT, ttype == _BGMODEL, ttype == _BACKGROUND,
         ttype == _IMGTBL, ttype == _ADD, ttype == _SHRINK, ttype == _JPEG],
        [_RT_PROJ, _RT_DIFF, _RT_CONCAT_PER_DIFF * d_t, _RT_BGMODEL_PER_DIFF * d_t,
         _RT_BACKGROUND, _RT_IMGTBL_PER_IMAGE * n_t, _RT_ADD_PER_IMAGE * n_t,
         _RT_SHRINK_PER_IMAGE * n_t, out / _JPEG_RATE_MB_S], 0.0)
    work = runtime * mips * _gamma_noise(rng, work_cv, nt)

    raw_ptr = np.concatenate(([0], np.cumsum(is_proj))).astype(np.int64)
    raw_cluster = np.concatenate(raw_cl) if nj else np.zeros(0, dtype=np.int64)
    raw_size = _RAW_IMAGE_MB * _gamma_noise(rng, size_cv, raw_cluster.shape[0])
    return Workload(arrival=arrival, weight=np.ones(nj), task_ptr=task_ptr, task_work=work,
                    task_type=ttype, type_names=MONTAGE_TYPES, edge_src=src, edge_dst=dst,
                    edge_size=edge_size, raw_ptr=raw_ptr, raw_cluster=raw_cluster,
                    raw_size=raw_size)


# =================================================================================== WfFormat
@dataclass(frozen=True)
class _WfTemplate:
    """One parsed WfFormat workflow, tasks in topological order (runtimes in seconds)."""

    runtime: np.ndarray
    task_type: np.ndarray
    type_names: tuple[str, ...]
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_size: np.ndarray
    raw_ptr: np.ndarray
    raw_size: np.ndarray
    raw_file: np.ndarray  # index of the distinct raw file of each raw input
    n_raw_files: int


_ID_SUFFIX = re.compile(r"[_-](?:ID)?\d+$")


def _task_type_name(name: str, category: Any) -> str:
    if isinstance(category, str) and category:
        return category
    return _ID_SUFFIX.sub("", name) or name


@dataclass
class _WfTask:
    key: str
    type_name: str
    runtime: Any
    parents: list[str]
    children: list[str]
    inputs: list[str]
    outputs: list[str]


def _wf_list(obj: Any, what: str) -> list[Any]:
    if obj is None:
        return []
    if not isinstance(obj, list):
        raise ValueError(f"{what} must be a list")
    return obj


def _wf_tasks_v15(wf: dict[str, Any]) -> tuple[list[_WfTask], dict[str, Any]]:
    spec = wf["specification"]
    sizes = {str(f["id"]): f["sizeInBytes"] for f in _wf_list(spec.get("files"), "files")}
    runtimes: dict[str, Any] = {}
    execution = wf.get("execution") or {}
    for t in _wf_list(execution.get("tasks"), "execution.tasks"):
        runtimes[str(t["id"])] = t.get("runtimeInSeconds")
    tasks = []
    for t in _wf_list(spec["tasks"], "specification.tasks"):
        key = str(t["id"])
        name = str(t.get("name", key))
        rt = runtimes.get(key, t.get("runtimeInSeconds"))
        tasks.append(_WfTask(key, _task_type_name(name, t.get("category")), rt,
                             [str(p) for p in _wf_list(t.get("parents"), "parents")],
                             [str(c) for c in _wf_list(t.get("children"), "children")],
                             [str(f) for f in _wf_list(t.get("inputFiles"), "inputFiles")],
                             [str(f) for f in _wf_list(t.get("outputFiles"), "outputFiles")]))
    return tasks, sizes


def _wf_tasks_old(wf: dict[str, Any]) -> tuple[list[_WfTask], dict[str, Any], dict[str, str]]:
    raw_tasks = wf.get("tasks", wf.get("jobs"))
    sizes: dict[str, Any] = {}
    tasks = []
    alias: dict[str, str] = {}
    for t in _wf_list(raw_tasks, "workflow.tasks"):
        name = str(t["name"])
        key = str(t.get("id", name))
        alias.setdefault(key, key)
        alias.setdefault(name, key)
        inputs, outputs = [], []
        for f in _wf_list(t.get("files"), "files"):
            fid = str(f.get("id", f.get("name")))
            if "path" in f and "id" not in f:
                fid = str(f["path"]) + fid
            size = f.get("sizeInBytes", f.get("size"))
            if fid in sizes and sizes[fid] != size:
                size = max(sizes[fid], size)
            sizes[fid] = size
            link = str(f.get("link", "")).lower()
            if link == "input":
                inputs.append(fid)
            elif link == "output":
                outputs.append(fid)
            else:
                raise ValueError(f"file {fid!r} of task {key!r} has link {f.get('link')!r}, "
                                 "expected 'input' or 'output'")
        rt = t.get("runtimeInSeconds", t.get("runtime"))
        tasks.append(_WfTask(key, _task_type_name(name, t.get("category")), rt,
                             [str(p) for p in _wf_list(t.get("parents"), "parents")],
                             [str(c) for c in _wf_list(t.get("children"), "children")],
                             inputs, outputs))
    return tasks, sizes, alias


def _parse_wfformat(path: str | Path, min_runtime: float) -> _WfTemplate:
    src = str(path)

    def fail(message: str) -> GeosimError:
        return GeosimError(message.replace("\n", " "), source=src)

    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, UnicodeDecodeError) as exc:
        raise fail(f"cannot read WfFormat file: {exc}") from None
    except json.JSONDecodeError as exc:
        raise fail(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    try:
        if not isinstance(doc, dict) or not isinstance(doc.get("workflow"), dict):
            raise ValueError("no 'workflow' object")
        wf = doc["workflow"]
        if "specification" in wf:
            tasks, sizes = _wf_tasks_v15(wf)
            alias = {t.key: t.key for t in tasks}
        elif "tasks" in wf or "jobs" in wf:
            tasks, sizes, alias = _wf_tasks_old(wf)
        else:
            raise ValueError("'workflow' has neither 'specification' (schema 1.5) nor 'tasks'")
    except KeyError as exc:
        raise fail(f"malformed WfFormat: missing field {exc}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise fail(f"malformed WfFormat: {exc}") from None

    if not tasks:
        raise fail("workflow has no tasks")
    index: dict[str, int] = {}
    for i, t in enumerate(tasks):
        if t.key in index:
            raise fail(f"duplicate task id {t.key!r}")
        index[t.key] = i
    for name, key in alias.items():
        index.setdefault(name, index[key])

    # file sizes (MB) and producers
    size_mb: dict[str, float] = {}
    for fid, size in sizes.items():
        ok = isinstance(size, int | float) and not isinstance(size, bool) and \
            math.isfinite(size) and size >= 0
        if not ok:
            raise fail(f"file {fid!r} has invalid size {size!r}")
        size_mb[fid] = float(size) / BYTES_PER_MB
    writer: dict[str, int] = {}
    for i, t in enumerate(tasks):
        for f in t.outputs:
            if f not in size_mb:
                raise fail(f"task {t.key!r} writes unknown file {f!r}")
            writer.setdefault(f, i)

    # dependencies: declared parents and children, plus data flow from producers
    deps: set[tuple[int, int]] = set()
    for i, t in enumerate(tasks):
        for p in t.parents:
            if p not in index:
                raise fail(f"task {t.key!r} has unknown parent {p!r}")
            deps.add((index[p], i))
        for c in t.children:
            if c not in index:
                raise fail(f"task {t.key!r} has unknown child {c!r}")
            deps.add((i, index[c]))
        for f in t.inputs:
            if f not in size_mb:
                raise fail(f"task {t.key!r} reads unknown file {f!r}")
            w = writer.get(f)
            if w is not None and w != i:
                deps.add((w, i))
    self_loops = [tasks[a].key for a, b in deps if a == b]
    if self_loops:
        raise fail(f"task {self_loops[0]!r} depends on itself")

    # topological order (Kahn), ties broken by file order
    nt = len(tasks)
    children: list[list[int]] = [[] for _ in range(nt)]
    indeg = [0] * nt
    for a, b in deps:
        children[a].append(b)
        indeg[b] += 1
    heap = [i for i in range(nt) if indeg[i] == 0]
    heapq.heapify(heap)
    topo: list[int] = []
    while heap:
        i = heapq.heappop(heap)
        topo.append(i)
        for c in children[i]:
            indeg[c] -= 1
            if indeg[c] == 0:
                heapq.heappush(heap, c)
    if len(topo) < nt:
        stuck = [tasks[i].key for i in range(nt) if indeg[i] > 0]
        more = f" (and {len(stuck) - 5} more)" if len(stuck) > 5 else ""
        raise fail(f"dependency cycle among tasks {', '.join(map(repr, stuck[:5]))}{more}")
    pos = np.empty(nt, dtype=np.int64)
    pos[topo] = np.arange(nt)

    # runtimes and types
    runtime = np.empty(nt)
    type_index: dict[str, int] = {}
    ttype = np.empty(nt, dtype=np.int32)
    for i, t in enumerate(tasks):
        rt = t.runtime
        ok = isinstance(rt, int | float) and not isinstance(rt, bool) and math.isfinite(rt) \
            and rt >= 0
        if not ok:
            raise fail(f"task {t.key!r} has no valid runtime (got {rt!r})")
        runtime[pos[i]] = max(float(rt), min_runtime)
        ttype[pos[i]] = type_index.setdefault(t.type_name, len(type_index))

    # edges (sizes: files the child reads that the parent writes) and raw inputs
    outputs = [set(t.outputs) for t in tasks]
    edges = sorted((int(pos[a]), int(pos[b]),
                    sum(size_mb[f] for f in set(tasks[b].inputs) if f in outputs[a]))
                   for a, b in deps)
    raw_lists: list[list[tuple[float, int]]] = [[] for _ in range(nt)]
    raw_index: dict[str, int] = {}
    for i, t in enumerate(tasks):
        for f in dict.fromkeys(t.inputs):
            if f not in writer:
                raw_lists[pos[i]].append((size_mb[f], raw_index.setdefault(f, len(raw_index))))
    counts = [len(r) for r in raw_lists]
    flat = [x for r in raw_lists for x in r]
    return _WfTemplate(
        runtime=runtime,
        task_type=ttype,
        type_names=tuple(type_index),
        edge_src=np.array([e[0] for e in edges], dtype=np.int64),
        edge_dst=np.array([e[1] for e in edges], dtype=np.int64),
        edge_size=np.array([e[2] for e in edges], dtype=np.float64),
        raw_ptr=np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
        raw_size=np.array([x[0] for x in flat], dtype=np.float64),
        raw_file=np.array([x[1] for x in flat], dtype=np.int64),
        n_raw_files=len(raw_index),
    )


def read_wfformat(path: str | Path, *, arrival: float = 0.0, input_cluster: int = 0,
                  reference_mips: float = REFERENCE_MIPS, min_runtime: float = 1e-3) -> Workload:
    """One job from a WfCommons WfFormat instance (JSON).

    Supports schema 1.5 (``workflow.specification.tasks`` with ``id``, ``name``, ``parents``,
    ``children``, ``inputFiles``, ``outputFiles``; ``workflow.specification.files`` with ``id``,
    ``sizeInBytes``; ``workflow.execution.tasks`` with ``id``, ``runtimeInSeconds``) and the older
    layout of 1.0-1.4 (``workflow.tasks`` or ``workflow.jobs`` with ``name``/``id``,
    ``parents``/``children`` by name or id, ``runtime``/``runtimeInSeconds``, and ``files`` with
    ``link`` input/output and ``size``/``sizeInBytes`` in bytes).

    Dependencies are the declared parents and children plus data flow (a task reading a file
    another task writes depends on it). An edge's size is the total size of the files the child
    reads that the parent writes (0 for a pure control dependency). A file read but written by no
    task is a raw input of each task reading it, stored on ``input_cluster``. A task's type is its
    ``category`` if present, else its name without a trailing ``_ID0000012``/``_12`` suffix.

    Args:
        path: The JSON file.
        arrival: Arrival time of the job.
        input_cluster: Cluster holding the raw inputs.
        reference_mips: Work = runtime x reference_mips (the runtimes are taken as measured on a
            VM of that power).
        min_runtime: Runtimes below this (traces record 0 s for very short tasks) are raised to
            it, since work must be positive.

    Returns:
        A one-job workload, tasks in a topological order (file order where free).

    Raises:
        GeosimError: With ``source=path`` for an unreadable or malformed file, a missing
            parent, an unknown file, a missing runtime or a dependency cycle.
    """
    mips = _check_positive(reference_mips, "reference_mips")
    min_runtime = _check_positive(min_runtime, "min_runtime")
    c = _check_count(input_cluster, "input_cluster")
    tpl = _parse_wfformat(path, min_runtime)
    return _template_job(tpl, np.full(tpl.n_raw_files, c, dtype=np.int64), float(arrival), mips)


def _template_job(tpl: _WfTemplate, file_cluster: np.ndarray, arrival: float,
                  mips: float) -> Workload:
    nt = tpl.runtime.shape[0]
    return Workload(arrival=np.array([arrival]), weight=np.ones(1),
                    task_ptr=np.array([0, nt]), task_work=tpl.runtime * mips,
                    task_type=tpl.task_type, type_names=tpl.type_names, edge_src=tpl.edge_src,
                    edge_dst=tpl.edge_dst, edge_size=tpl.edge_size, raw_ptr=tpl.raw_ptr,
                    raw_cluster=file_cluster[tpl.raw_file], raw_size=tpl.raw_size)


def wfformat_jobs(paths: Sequence[str | Path], n_jobs: int, arrival_rate: float,
                  rng: np.random.Generator, *, input_clusters: np.ndarray,
                  input_probs: np.ndarray | None = None,
                  sites_per_job: int | tuple[int, int] = (1, 4),
                  reference_mips: float = REFERENCE_MIPS, min_runtime: float = 1e-3,
                  start: float = 0.0) -> Workload:
    """Replay real workflows as a Poisson stream: job j is instance ``paths[j % len(paths)]``.

    Each instance is read once (see :func:`read_wfformat`). Raw inputs are placed as in
    :func:`montage_jobs`: each job picks ``k ~ U{sites_per_job}`` distinct clusters from
    ``input_clusters`` (weighted by ``input_probs``) and stores each distinct raw file of the
    job on one of them (a file read by several tasks is in one place).

    Args:
        paths: WfFormat JSON files.
        n_jobs: Number of jobs.
        arrival_rate: Poisson arrival rate, jobs per second.
        rng: Random generator.
        input_clusters: Clusters that may store raw inputs.
        input_probs: Weights of ``input_clusters`` (uniform if None).
        sites_per_job: Range (inclusive) of distinct input clusters per job.
        reference_mips: Work = runtime x reference_mips.
        min_runtime: Minimum runtime, seconds.
        start: Time origin of the arrivals.

    Returns:
        The workload; type names are the union over the instances.
    """
    paths = list(paths)
    if not paths:
        raise GeosimError("wfformat_jobs needs at least one WfFormat file")
    clusters, probs = _input_sites(input_clusters, input_probs)
    usable = int(np.count_nonzero(probs)) if probs is not None else clusters.shape[0]
    k_lo, k_hi = _check_range(sites_per_job, "sites_per_job", integer=True, minimum=1)
    mips = _check_positive(reference_mips, "reference_mips")
    min_runtime = _check_positive(min_runtime, "min_runtime")
    templates = [_parse_wfformat(p, min_runtime) for p in paths]

    name_index: dict[str, int] = {}
    remaps = []
    for tpl in templates:
        for nm in tpl.type_names:
            name_index.setdefault(nm, len(name_index))
        remaps.append(np.array([name_index[nm] for nm in tpl.type_names], dtype=np.int32))

    arrival = poisson_arrivals(n_jobs, arrival_rate, rng, start)
    nj = arrival.shape[0]
    k_sites = np.minimum(rng.integers(k_lo, k_hi + 1, nj), usable)
    which = np.arange(nj) % len(templates)
    sizes = np.array([t.runtime.shape[0] for t in templates], dtype=np.int64)
    task_ptr = np.concatenate(([0], np.cumsum(sizes[which]))).astype(np.int64)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in
                                          ("work", "type", "src", "dst", "esize", "rcount",
                                           "rcl", "rsize")}
    for j in range(nj):
        tpl = templates[which[j]]
        off = task_ptr[j]
        file_cluster = _place_inputs(rng, clusters, probs, int(k_sites[j]), tpl.n_raw_files)
        parts["work"].append(tpl.runtime * mips)
        parts["type"].append(remaps[which[j]][tpl.task_type])
        parts["src"].append(tpl.edge_src + off)
        parts["dst"].append(tpl.edge_dst + off)
        parts["esize"].append(tpl.edge_size)
        parts["rcount"].append(np.diff(tpl.raw_ptr))
        parts["rcl"].append(file_cluster[tpl.raw_file])
        parts["rsize"].append(tpl.raw_size)

    def cat(key: str, dtype: type) -> np.ndarray:
        return np.concatenate(parts[key]).astype(dtype) if nj else np.zeros(0, dtype=dtype)

    return Workload(arrival=arrival, weight=np.ones(nj), task_ptr=task_ptr,
                    task_work=cat("work", np.float64), task_type=cat("type", np.int32),
                    type_names=tuple(name_index), edge_src=cat("src", np.int64),
                    edge_dst=cat("dst", np.int64), edge_size=cat("esize", np.float64),
                    raw_ptr=np.concatenate(([0], np.cumsum(cat("rcount", np.int64)))),
                    raw_cluster=cat("rcl", np.int64), raw_size=cat("rsize", np.float64))
