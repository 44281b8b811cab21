"""MapReduce jobs: a map stage followed by a reduce stage behind a stage barrier.

Each job of :func:`mapreduce_jobs` is ``m`` map tasks (stage 0, type ``"map"``) followed by
``r`` reduce tasks (stage 1, type ``"reduce"``); a job with ``r = 0`` is map-only. A reduce
task becomes ready only once every map task of its job has finished (the stage barrier of
:class:`~geosim.workload.Workload`), so a job holds ``m + r`` tasks and no ``m x r`` edges.
Jobs have no edges and no raw inputs.

As in 000 §III, the tasks of one phase are statistically identical: every task of a job's map
phase has the same mean work (the phase mean, drawn per job) and the same coefficient of
variation (``map_cv``), and each copy of a task draws its own work around that mean (the
engine's business). Work is in seconds on a machine of power 1 times ``work_scale``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from geosim.errors import GeosimError
from geosim.workload.core import Workload, check_positive, check_range, poisson_arrivals

__all__ = ["MAPREDUCE_TYPES", "mapreduce_jobs"]

MAPREDUCE_TYPES: tuple[str, ...] = ("map", "reduce")
"""Task type names of :func:`mapreduce_jobs` (the index is ``task_type`` and the stage)."""


def _range(value: Any, name: str, *, integer: bool, minimum: float,
           positive: bool = False) -> tuple[Any, Any]:
    """Parse a scalar, ``[v]`` or ``[lo, hi]`` range with ``minimum <= lo <= hi``."""
    if not np.isscalar(value):
        try:
            seq = tuple(value)
        except TypeError:
            raise GeosimError(f"{name} must be a number or a (low, high) pair, "
                              f"got {value!r}") from None
        if len(seq) not in (1, 2):
            raise GeosimError(f"{name} must be a number or a (low, high) pair, got {value!r}")
        value = seq if len(seq) == 2 else seq[0]
    lo, hi = check_range(value, name, integer=integer, minimum=minimum)
    if positive and lo <= 0:
        raise GeosimError(f"{name} must be > 0, got {value!r}")
    return lo, hi


def two_stage_workload(arrival: np.ndarray, weight: np.ndarray, m: np.ndarray, r: np.ndarray,
                       map_work: np.ndarray, reduce_work: np.ndarray,
                       map_cv: float | np.ndarray, reduce_cv: float | np.ndarray,
                       copy_bounds: tuple[float, float] = (0.0, math.inf)) -> Workload:
    """Build a map-then-reduce workload from per-job counts and phase mean work.

    Args:
        arrival: float64[n_jobs] arrival times.
        weight: float64[n_jobs] job weights.
        m: int[n_jobs] map tasks per job (>= 1).
        r: int[n_jobs] reduce tasks per job (>= 0).
        map_work: float64[n_jobs] mean work of each map task of the job.
        reduce_work: float64[n_jobs] mean work of each reduce task of the job.
        map_cv: Coefficient of variation of a map copy's work (one, or one per job).
        reduce_cv: Coefficient of variation of a reduce copy's work (one, or one per job).
        copy_bounds: Bounds of every copy's work (``Workload.copy_bounds``; default none).

    Returns:
        The workload, type names :data:`MAPREDUCE_TYPES`, stage = type, no edges, no raw input.
    """
    m = np.asarray(m, dtype=np.int64)
    total = m + np.asarray(r, dtype=np.int64)
    task_ptr = np.concatenate(([0], np.cumsum(total))).astype(np.int64)
    nt = int(task_ptr[-1])
    job = np.repeat(np.arange(total.shape[0], dtype=np.int64), total)
    is_reduce = np.arange(nt, dtype=np.int64) - task_ptr[:-1][job] >= m[job]  # maps first
    i0 = np.zeros(0, dtype=np.int64)
    return Workload(arrival=arrival, weight=weight, task_ptr=task_ptr,
                    task_work=np.where(is_reduce, reduce_work[job], map_work[job]),
                    task_type=is_reduce.astype(np.int32), type_names=MAPREDUCE_TYPES,
                    edge_src=i0, edge_dst=i0, edge_size=np.zeros(0),
                    raw_ptr=np.zeros(nt + 1, dtype=np.int64), raw_cluster=i0,
                    raw_size=np.zeros(0), task_stage=is_reduce.astype(np.int32),
                    task_cv=np.where(is_reduce, np.broadcast_to(reduce_cv, m.shape)[job],
                                     np.broadcast_to(map_cv, m.shape)[job]),
                    copy_bounds=copy_bounds)


def mapreduce_jobs(n_jobs: int, arrival_rate: float, rng: np.random.Generator, *,
                   map_tasks: int | tuple[int, int] = (1, 50),
                   reduce_tasks: int | tuple[int, int] = (0, 10),
                   map_mean: float | tuple[float, float] = (10.0, 100.0),
                   map_cv: float = 0.5,
                   reduce_mean: float | tuple[float, float] = (10.0, 100.0),
                   reduce_cv: float = 0.5,
                   weight: int | tuple[int, int] = (1, 1),
                   work_scale: float = 1.0, start: float = 0.0) -> Workload:
    """A Poisson stream of MapReduce jobs: a map stage, then a reduce stage (see module doc).

    Per job, drawn from ``rng`` in this order (each as one vector over the jobs): arrivals,
    map task counts, reduce task counts, map phase means, reduce phase means, weights.
    Counts and weights are uniform integers, means uniform floats, each on its inclusive
    range (a scalar fixes the value).

    Args:
        n_jobs: Number of jobs.
        arrival_rate: Poisson arrival rate, jobs per second.
        rng: Random generator.
        map_tasks: Range of map tasks per job (>= 1).
        reduce_tasks: Range of reduce tasks per job (>= 0; 0 = map-only job).
        map_mean: Range of a job's mean map task duration, seconds on a machine of power 1
            (> 0).
        map_cv: Coefficient of variation of a map copy's work (>= 0).
        reduce_mean: Range of a job's mean reduce task duration (> 0).
        reduce_cv: Coefficient of variation of a reduce copy's work (>= 0).
        weight: Range of job weights, integers (>= 1).
        work_scale: Work of one second of duration (1 on machines of power 1; the MIPS of the
            reference machine on MIPS-rated worlds).
        start: Time origin of the arrivals.

    Returns:
        The workload, type names :data:`MAPREDUCE_TYPES`.

    Raises:
        GeosimError: On an invalid parameter.
    """
    m_lo, m_hi = _range(map_tasks, "map_tasks", integer=True, minimum=1)
    r_lo, r_hi = _range(reduce_tasks, "reduce_tasks", integer=True, minimum=0)
    mm_lo, mm_hi = _range(map_mean, "map_mean", integer=False, minimum=0, positive=True)
    rm_lo, rm_hi = _range(reduce_mean, "reduce_mean", integer=False, minimum=0, positive=True)
    w_lo, w_hi = _range(weight, "weight", integer=True, minimum=1)
    map_cv = check_positive(map_cv, "map_cv", allow_zero=True)
    reduce_cv = check_positive(reduce_cv, "reduce_cv", allow_zero=True)
    scale = check_positive(work_scale, "work_scale")

    arrival = poisson_arrivals(n_jobs, arrival_rate, rng, start)
    nj = arrival.shape[0]
    m = rng.integers(m_lo, m_hi + 1, nj)
    r = rng.integers(r_lo, r_hi + 1, nj)
    map_work = rng.uniform(mm_lo, mm_hi, nj) * scale
    reduce_work = rng.uniform(rm_lo, rm_hi, nj) * scale
    w = rng.integers(w_lo, w_hi + 1, nj).astype(np.float64)
    return two_stage_workload(arrival, w, m, r, map_work, reduce_work, map_cv, reduce_cv)
