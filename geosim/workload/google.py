"""Google-trace-like MapReduce jobs, synthesised from 000's published trace statistics.

000 §VI drives its simulations with the Google cluster-usage trace (Reiss, Wilkes and
Hellerstein, 2011), whose statistics it gives in Table II: 6064 jobs over 35 032 s, 26.31
tasks per job on average, task durations between 12.8 s and 22 919.3 s with mean 1179.7 s,
and a priority of 0-11 per job, used as the job weight. The trace itself is not available
here, so :func:`google_jobs` draws jobs whose laws match those figures exactly in
expectation; everything beyond Table II is a documented choice, and the two shapes of the
default duration law are fitted to 000's Mantri (Figs. 4-5).

Arrivals
    Poisson with rate ``arrival_rate``; Table II gives 6064 / 35 032 s = 0.1731 jobs/s.

Tasks per job (:func:`google_task_counts`)
    A bounded discrete power law ``P(n) ∝ n**-(a + 1)`` on ``n = 1..max_tasks``: heavy-tailed
    as cluster job sizes are, with most jobs small. ``max_tasks`` defaults to 5000 (a choice:
    large Google jobs run thousands of tasks, and 000 does not give the largest). The
    exponent is solved numerically (:func:`task_count_exponent`, Brent's method) so that the
    mean is exactly ``mean_tasks``: with the defaults ``a = 0.6403`` (4 significant digits),
    45.94% of jobs have one task, the median is 2 tasks and the standard deviation is about
    188 tasks.

Phases
    A job of ``n`` tasks has ``r = floor(reduce_fraction * n)`` reduce tasks (stage 1) after
    ``m = n - r`` map tasks (stage 0), as in :mod:`~geosim.workload.mapreduce`; the reduce
    stage waits for the whole map stage (000 §V-B: reduce tasks are scheduled "after all the
    map tasks completed"). ``reduce_fraction`` defaults to 0.2 (a choice: the paper does not
    split its tasks by phase); jobs of fewer than 5 tasks are map-only.

Task durations (``duration_law``)
    ``"split"`` (default): Table II's minimum, maximum and mean are statistics of task
    durations, so every copy's duration lies in ``[duration_min, duration_max]`` (the
    workload's ``copy_bounds``: the engine draws each copy from its law truncated to
    them) and the mean over tasks of one copy's duration is ``duration_mean``. A phase's
    mean ``E`` is short (bounded Pareto on ``[duration_min, duration_split]`` of shape
    ``short_shape``) or, with probability ``q``, long (on ``[duration_split,
    duration_max]``, shape ``long_shape``); ``q`` is solved so that the mean holds with the
    truncation (:func:`split_law`). The two shapes (0.275 and -1.0) are calibrated so that
    000's Mantri finishes 44% of jobs within 100 s and 86% within 1000 s (000 Figs. 4-5;
    ``benchmarks/calibrate_000.py``), a fit on the baseline alone. ``"pareto"`` (the law
    before): each phase's mean ``E`` from a bounded Pareto on ``[duration_min,
    duration_max]`` whose shape is solved (:func:`bounded_pareto_shape`) so that its mean
    is ``duration_mean``: with Table II's figures ``shape = 0.2942`` (4 significant
    digits); copies are unbounded. Under both, every task of the phase gets
    ``task_work = E`` (work in seconds on a machine of power 1, times ``work_scale``) and
    the phase's coefficient of variation, drawn uniformly
    from ``task_cv`` (default 0.1-0.5, mean 0.3: 000 §VI-B finds that "the variation of
    task duration within each job phase for this particular job trace is small"; a range
    rather than one value, because with one CV for every task ``r`` scales every job's
    effective workload alike and cannot change SRPTMS+C's order); each copy draws its own
    work around ``E``. Since ``E`` is drawn independently of the task counts, the expected
    mean over tasks equals the mean over phases.

Weights
    ``weight = priority + 1`` (000 treats the priority as the weight; +1 keeps weights
    positive), with the priority drawn from ``priority_probs``. The default
    :data:`GOOGLE_PRIORITY_PROBS` is a choice, because the trace is not available: most mass
    on the low "free" and batch priorities (0-2 and 4), a production band at 9, and little
    elsewhere; its mean weight is 4.12.

Sampling error
    The task-count law is heavy-tailed, so sample means converge slowly: over 20 000 jobs
    the mean task count has a standard error of about 5%, and the mean duration over tasks
    (dominated by a few large jobs) about 14%. Over 2 million draws of each law the errors
    are below 0.5%.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from geosim.errors import GeosimError
from geosim.workload.core import Workload, check_count, check_positive, poisson_arrivals
from geosim.workload.mapreduce import two_stage_workload

__all__ = [
    "GOOGLE_PRIORITY_PROBS",
    "bounded_pareto",
    "bounded_pareto_mean",
    "bounded_pareto_shape",
    "google_jobs",
    "google_task_counts",
    "task_count_exponent",
    "task_count_pmf",
]

GOOGLE_PRIORITY_PROBS: tuple[float, ...] = (0.30, 0.15, 0.10, 0.02, 0.20, 0.02, 0.02, 0.02,
                                            0.02, 0.12, 0.02, 0.01)
"""Default probabilities of priorities 0..11 (a choice: the trace is not available)."""

_EXPONENT_BRACKET = (-20.0, 20.0)


def task_count_pmf(exponent: float, max_tasks: int) -> np.ndarray:
    """Probabilities of ``n = 1..max_tasks`` tasks under ``P(n) ∝ n**-(exponent + 1)``.

    Args:
        exponent: The power law's ``a``.
        max_tasks: Largest task count.

    Returns:
        float64[max_tasks]; entry ``i`` is ``P(n = i + 1)``.
    """
    logw = -(exponent + 1.0) * np.log(np.arange(1, max_tasks + 1, dtype=np.float64))
    w = np.exp(logw - logw.max())
    return w / w.sum()


def _pmf_mean(exponent: float, max_tasks: int) -> float:
    p = task_count_pmf(exponent, max_tasks)
    return float(p @ np.arange(1, max_tasks + 1, dtype=np.float64))


def task_count_exponent(mean_tasks: float, max_tasks: int) -> float:
    """The exponent ``a`` of ``P(n) ∝ n**-(a + 1)`` on ``1..max_tasks`` whose mean is given.

    Args:
        mean_tasks: Mean task count, ``1 < mean_tasks < max_tasks``.
        max_tasks: Largest task count.

    Returns:
        ``a`` (the mean decreases in ``a``, so it is unique).

    Raises:
        GeosimError: If no exponent in [-20, 20] gives that mean.
    """
    max_tasks = check_count(max_tasks, "max_tasks")
    mean_tasks = check_positive(mean_tasks, "mean_tasks")
    if not 1.0 < mean_tasks < max_tasks:
        raise GeosimError(f"mean_tasks must lie strictly between 1 and max_tasks = {max_tasks}, "
                          f"got {mean_tasks!r}")
    lo, hi = _EXPONENT_BRACKET
    f_lo = _pmf_mean(lo, max_tasks) - mean_tasks
    f_hi = _pmf_mean(hi, max_tasks) - mean_tasks
    if f_lo < 0 or f_hi > 0:
        raise GeosimError(f"no power-law exponent in [{lo:g}, {hi:g}] gives mean_tasks = "
                          f"{mean_tasks!r} with max_tasks = {max_tasks}")
    from scipy.optimize import brentq  # on first use: scipy.optimize takes long to import

    return float(brentq(lambda a: _pmf_mean(a, max_tasks) - mean_tasks, lo, hi, xtol=1e-14,
                        rtol=1e-14))


def google_task_counts(n_jobs: int, rng: np.random.Generator, *, mean_tasks: float = 26.31,
                       max_tasks: int = 5000) -> np.ndarray:
    """Task counts from the bounded power law fitted to ``mean_tasks`` (one uniform per job).

    Args:
        n_jobs: Number of jobs.
        rng: Random generator.
        mean_tasks: Mean task count.
        max_tasks: Largest task count.

    Returns:
        int64[n_jobs], each in ``1..max_tasks``.
    """
    n_jobs = check_count(n_jobs, "n_jobs")
    return _draw_counts(_count_cdf(mean_tasks, max_tasks), n_jobs, rng)


def _count_cdf(mean_tasks: float, max_tasks: int) -> np.ndarray:
    max_tasks = check_count(max_tasks, "max_tasks")
    cdf = np.cumsum(task_count_pmf(task_count_exponent(mean_tasks, max_tasks), max_tasks))
    return cdf / cdf[-1]


def _draw_counts(cdf: np.ndarray, n_jobs: int, rng: np.random.Generator) -> np.ndarray:
    n = np.searchsorted(cdf, rng.random(n_jobs), side="right") + 1
    return np.minimum(n, cdf.shape[0]).astype(np.int64)


def _log_moment(beta: float, log_low: float, span: float) -> float:
    """Logarithm of the integral of x**(beta - 1) over [low, high]; span = log(high / low)."""
    x = beta * span
    if abs(x) < 1e-12:
        return math.log(span) + beta * log_low
    if x > 700:                                   # expm1 would overflow: log(e^x - 1) directly
        return beta * log_low + x + math.log1p(-math.exp(-x)) - math.log(beta)
    return beta * log_low + math.log(math.expm1(x) / beta)


def bounded_pareto_mean(low: float, high: float, shape: float) -> float:
    """Mean of the bounded Pareto on ``[low, high]`` with density ``∝ x**-(shape + 1)``."""
    ll, span = math.log(low), math.log(high / low)
    return math.exp(_log_moment(1.0 - shape, ll, span) - _log_moment(-shape, ll, span))


def _check_durations(low: float, high: float, mean: float) -> tuple[float, float, float]:
    """Positive ``duration_min < duration_mean < duration_max``, as floats."""
    low = check_positive(low, "duration_min")
    high = check_positive(high, "duration_max")
    mean = check_positive(mean, "duration_mean")
    if not low < mean < high:
        raise GeosimError(f"need duration_min < duration_mean < duration_max, got "
                          f"{low:g}, {mean:g}, {high:g}")
    return low, high, mean


def bounded_pareto_shape(low: float, high: float, mean: float) -> float:
    """The shape of the bounded Pareto on ``[low, high]`` whose mean is ``mean``.

    Args:
        low: Lower bound (> 0).
        high: Upper bound (> low).
        mean: Target mean, ``low < mean < high``.

    Returns:
        The shape (the mean decreases in it, so it is unique; it may be <= 0 when the mean
        is above the log-uniform mean ``(high - low) / log(high / low)``).

    Raises:
        GeosimError: If the bounds or mean are out of order, or no shape in [-20, 20] fits.
    """
    low, high, mean = _check_durations(low, high, mean)
    lo, hi = _EXPONENT_BRACKET
    if not bounded_pareto_mean(low, high, hi) < mean < bounded_pareto_mean(low, high, lo):
        raise GeosimError(f"no bounded Pareto shape in [{lo:g}, {hi:g}] has mean {mean:g} on "
                          f"[{low:g}, {high:g}]")
    from scipy.optimize import brentq  # on first use: scipy.optimize takes long to import

    return float(brentq(lambda s: bounded_pareto_mean(low, high, s) - mean, lo, hi,
                        xtol=1e-14, rtol=1e-14))


def bounded_pareto(n: int, rng: np.random.Generator, low: float, high: float,
                   shape: float) -> np.ndarray:
    """Draw ``n`` values of a bounded Pareto by inversion (one uniform each).

    Args:
        n: Number of values.
        rng: Random generator.
        low: Lower bound (> 0).
        high: Upper bound (> low).
        shape: Shape; density ``∝ x**-(shape + 1)`` on ``[low, high]``.

    Returns:
        float64[n], each in ``[low, high]``.
    """
    n = check_count(n, "sample size")
    return bounded_pareto_quantile(rng.random(n), low, high, shape)


def bounded_pareto_quantile(u: np.ndarray, low: float, high: float,
                            shape: float) -> np.ndarray:
    """Quantiles of the bounded Pareto on ``[low, high]`` at ``u`` in [0, 1]."""
    u = np.asarray(u, dtype=np.float64)
    span = math.log(high / low)
    if abs(shape * span) < 1e-12:  # log-uniform
        x = low * np.exp(u * span)
    else:
        # F(x) = (1 - (low/x)**shape) / (1 - (low/high)**shape), inverted in log space
        x = low * np.exp(-np.log1p(u * math.expm1(-shape * span)) / shape)
    return np.clip(x, low, high)


#: Laws of task durations: ``"split"`` (task durations within Table II's bounds, fitted to
#: the means and to 000's Mantri) and ``"pareto"`` (Table II's figures as phase means).
DURATION_LAWS = ("split", "pareto")
#: Default boundary (s) between short and long phases of the ``"split"`` law.
SPLIT_AT = 1000.0
#: Default shapes of the ``"split"`` law's short and long phases (see the module doc).
SHORT_SHAPE = 0.275
LONG_SHAPE = -1.0
_QUAD_U = (np.arange(4096) + 0.5) / 4096           # midpoints in quantile space
_QUAD_CV = np.polynomial.legendre.leggauss(16)


@dataclasses.dataclass(frozen=True)
class SplitLaw:
    """Phase means of the ``"split"`` law (BP: a bounded Pareto).

    Short ``BP(low, split, short)`` with probability ``1 - long_share``, long
    ``BP(split, high, long)`` otherwise.
    """

    low: float
    split: float
    high: float
    short: float
    long: float
    long_share: float

    def quantile(self, u: np.ndarray) -> np.ndarray:
        """Phase means at uniforms ``u`` (one per phase; short phases take the low ``u``)."""
        u = np.asarray(u, dtype=np.float64)
        cut = 1.0 - self.long_share
        short = bounded_pareto_quantile(np.minimum(u / max(cut, 1e-300), 1.0), self.low,
                                        self.split, self.short)
        long = bounded_pareto_quantile(np.clip((u - cut) / max(self.long_share, 1e-300),
                                               0.0, 1.0), self.split, self.high, self.long)
        return np.where(u < cut, short, long)


def task_duration_mean(quantile, low: float, high: float, cv: tuple[float, float],
                       family: str) -> float:
    """Mean duration of one copy of a task whose phase mean follows ``quantile``.

    Each copy draws ``E * factor``, the factor (family, CV uniform on ``cv``) truncated to
    ``[low / E, high / E]``; the mean ``E[E m(E)]`` is taken by midpoints in quantile
    space (4096) and Gauss-Legendre over the CV (16 nodes).
    """
    # Here, not at the top: it loads SciPy and Numba, which most workloads never need.
    from geosim.variability import truncated_factor_mean

    e = quantile(_QUAD_U)
    nodes, weights = _QUAD_CV
    cvs = (cv[0] + cv[1]) / 2 + (cv[1] - cv[0]) / 2 * nodes
    m = truncated_factor_mean(family, cvs[:, None], low / e[None, :], high / e[None, :])
    return float(np.mean(e * ((weights / 2) @ m)))


def split_law(low: float, high: float, mean: float, *, split: float = SPLIT_AT,
              short: float = SHORT_SHAPE, long: float = LONG_SHAPE,
              cv: tuple[float, float] = (0.1, 0.5), family: str = "pareto") -> SplitLaw:
    """The ``"split"`` law whose copies' mean duration is ``mean`` (solves the long share).

    The mean over tasks of one copy's duration is linear in the long share, so it is
    solved in closed form from the two components' means (:func:`task_duration_mean`).

    Raises:
        GeosimError: If ``split`` is not inside ``(low, high)`` or no long share in [0, 1]
            gives the mean.
    """
    if not low < split < high:
        raise GeosimError(f"duration_split must lie strictly between duration_min = {low:g} "
                          f"and duration_max = {high:g}, got {split!r}")
    parts = [task_duration_mean(lambda u, a=a, b=b, k=k: bounded_pareto_quantile(u, a, b, k),
                                low, high, cv, family)
             for a, b, k in ((low, split, short), (split, high, long))]
    share = (mean - parts[0]) / (parts[1] - parts[0])
    if not 0.0 <= share <= 1.0:
        raise GeosimError(f"no share of long phases gives duration_mean = {mean:g}: short "
                          f"phases average {parts[0]:.1f} s and long ones {parts[1]:.1f} s")
    return SplitLaw(low, split, high, short, long, share)


def _check_probs(priority_probs: Any) -> np.ndarray:
    try:
        p = np.asarray(priority_probs, dtype=np.float64)
    except (TypeError, ValueError):
        p = np.zeros(0)
    if p.shape != (12,) or not np.all(np.isfinite(p)) or (p < 0).any() or \
            abs(p.sum() - 1.0) > 1e-6:
        raise GeosimError("priority_probs must be 12 non-negative probabilities (priorities "
                          f"0..11) summing to 1, got {priority_probs!r}")
    return p / p.sum()


def google_jobs(n_jobs: int, arrival_rate: float, rng: np.random.Generator, *,
                mean_tasks: float = 26.31, max_tasks: int = 5000,
                duration_min: float = 12.8, duration_max: float = 22919.3,
                duration_mean: float = 1179.7,
                task_cv: float | tuple[float, float] = (0.1, 0.5),
                reduce_fraction: float = 0.2,
                priority_probs: Sequence[float] = GOOGLE_PRIORITY_PROBS,
                work_scale: float = 1.0, start: float = 0.0, duration_law: str = "split",
                duration_split: float = SPLIT_AT, short_shape: float = SHORT_SHAPE,
                long_shape: float = LONG_SHAPE, copy_family: str = "pareto") -> Workload:
    """A Poisson stream of Google-trace-like MapReduce jobs (000 Table II; see module doc).

    Drawn from ``rng`` in this order, each as one vector over the jobs: arrivals, task
    counts, map phase mean durations, reduce phase mean durations (drawn for every job, used
    by those with reduce tasks), priorities, then (for a ``task_cv`` range) the map and
    reduce phases' coefficients of variation.

    Args:
        n_jobs: Number of jobs (Table II: 6064).
        arrival_rate: Poisson arrival rate, jobs per second (Table II: 6064 / 35032 s).
        rng: Random generator.
        mean_tasks: Mean tasks per job (Table II: 26.31).
        max_tasks: Largest task count of a job.
        duration_min: Smallest mean task duration, seconds (Table II: 12.8).
        duration_max: Largest mean task duration, seconds (Table II: 22 919.3).
        duration_mean: Mean task duration, seconds (Table II: 1179.7).
        task_cv: Coefficient of variation of each copy's work around its task's mean: one
            value, or a ``(low, high)`` range drawn uniformly per phase of each job.
        reduce_fraction: Share of a job's tasks in its reduce stage, ``[0, 1)``, rounded down.
        priority_probs: Probabilities of priorities 0..11; weight = priority + 1.
        work_scale: Work of one second of duration (1 on machines of power 1).
        start: Time origin of the arrivals.
        duration_law: ``"split"`` (default): every copy's duration lies in
            ``[duration_min, duration_max]`` and their mean is ``duration_mean``; phase
            means short or long (:class:`SplitLaw`). ``"pareto"``: phase means from the
            bounded Pareto of Table II's three figures, copies unbounded.
        duration_split: ``"split"``: boundary between short and long phase means (s).
        short_shape: ``"split"``: bounded Pareto shape of the short phase means.
        long_shape: ``"split"``: bounded Pareto shape of the long phase means.
        copy_family: The engine's per-copy family (``workload.copy_variability``), which
            the ``"split"`` law's mean depends on through the truncation.

    Returns:
        The workload, type names ``("map", "reduce")``, no edges and no raw input.

    Raises:
        GeosimError: On an invalid parameter.
    """
    cdf = _count_cdf(mean_tasks, max_tasks)
    cv_lo, cv_hi = _cv_range(task_cv)
    low, high, mean = _check_durations(duration_min, duration_max, duration_mean)
    if duration_law == "pareto":
        shape = bounded_pareto_shape(low, high, mean)

        def quantile(u):
            return bounded_pareto_quantile(u, low, high, shape)
    elif duration_law == "split":
        quantile = split_law(low, high, mean, split=duration_split, short=short_shape,
                             long=long_shape, cv=(cv_lo, cv_hi), family=copy_family).quantile
    else:
        raise GeosimError(f"duration_law must be one of {DURATION_LAWS}, got {duration_law!r}")
    fraction = check_positive(reduce_fraction, "reduce_fraction", allow_zero=True)
    if fraction >= 1.0:
        raise GeosimError(f"reduce_fraction must be in [0, 1), got {reduce_fraction!r}")
    probs = _check_probs(priority_probs)
    scale = check_positive(work_scale, "work_scale")

    arrival = poisson_arrivals(n_jobs, arrival_rate, rng, start)
    nj = arrival.shape[0]
    n = _draw_counts(cdf, nj, rng)
    map_work = quantile(rng.random(nj)) * scale
    reduce_work = quantile(rng.random(nj)) * scale
    priority = rng.choice(12, size=nj, p=probs)
    r = np.floor(fraction * n + 1e-9).astype(np.int64)  # 0.29 * 100 is 28.999...
    if cv_lo == cv_hi:
        map_cv = reduce_cv = cv_lo
    else:
        map_cv, reduce_cv = rng.uniform(cv_lo, cv_hi, size=(2, nj))
    bounds = (low * scale, high * scale) if duration_law == "split" else (0.0, math.inf)
    return two_stage_workload(arrival, priority + 1.0, n - r, r, map_work, reduce_work,
                              map_cv, reduce_cv, copy_bounds=bounds)


def _cv_range(task_cv: float | Sequence[float]) -> tuple[float, float]:
    """A ``task_cv`` value or ``[low, high]`` range as a checked pair."""
    values = list(task_cv) if isinstance(task_cv, list | tuple | np.ndarray) else [task_cv]
    if len(values) not in (1, 2):
        raise GeosimError(f"task_cv must be a number or a [low, high] pair, got {task_cv!r}")
    lo, hi = (check_positive(v, "task_cv", allow_zero=True) for v in (values[0], values[-1]))
    if lo > hi:
        raise GeosimError(f"task_cv low must not exceed high, got {task_cv!r}")
    return lo, hi
