"""Montage workflows: PingAn's workload (003 §6.1).

:func:`montage_jobs` generates a Poisson stream of Montage workflows whose task counts
follow the Facebook job-size mix (:func:`montage_task_counts`).

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

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from geosim.errors import GeosimError
from geosim.workload.core import (
    BYTES_PER_MB,
    REFERENCE_MIPS,
    Workload,
    check_count,
    check_positive,
    check_range,
    gamma_noise,
    input_sites,
    place_inputs,
    poisson_arrivals,
    readonly,
)

__all__ = ["FACEBOOK_SIZE_MIX", "MONTAGE_TYPES", "montage_jobs", "montage_task_counts"]

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
    return readonly(t), readonly(e)


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
    n_jobs = check_count(n_jobs, "n_jobs")
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
    clusters, probs = input_sites(input_clusters, input_probs)
    usable = int(np.count_nonzero(probs)) if probs is not None else clusters.shape[0]
    k_lo, k_hi = check_range(sites_per_job, "sites_per_job", integer=True, minimum=1)
    r_lo, r_hi = check_range(overlap_ratio, "overlap_ratio", integer=False, minimum=1.0)
    work_cv = check_positive(work_cv, "work_cv", allow_zero=True)
    size_cv = check_positive(size_cv, "size_cv", allow_zero=True)
    mips = check_positive(reference_mips, "reference_mips")
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
        raw_cl.append(place_inputs(rng, clusters, probs, int(k_sites[j]), n))
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
    mosaic = _MOSAIC_MB_PER_IMAGE * job_n * gamma_noise(rng, size_cv, nj)
    mosaic_t = np.repeat(mosaic, T)
    out = np.zeros(nt)
    out[is_proj] = 2.0 * _PROJECTED_IMAGE_MB * gamma_noise(rng, size_cv, int(is_proj.sum()))
    is_diff = ttype == _DIFF
    out[is_diff] = _FIT_MB * gamma_noise(rng, size_cv, int(is_diff.sum()))
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
    work = runtime * mips * gamma_noise(rng, work_cv, nt)

    raw_ptr = np.concatenate(([0], np.cumsum(is_proj))).astype(np.int64)
    raw_cluster = np.concatenate(raw_cl) if nj else np.zeros(0, dtype=np.int64)
    raw_size = _RAW_IMAGE_MB * gamma_noise(rng, size_cv, raw_cluster.shape[0])
    return Workload(arrival=arrival, weight=np.ones(nj), task_ptr=task_ptr, task_work=work,
                    task_type=ttype, type_names=MONTAGE_TYPES, edge_src=src, edge_dst=dst,
                    edge_size=edge_size, raw_ptr=raw_ptr, raw_cluster=raw_cluster,
                    raw_size=raw_size)
