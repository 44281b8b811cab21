"""Per-copy work variability: every copy of a task draws its own work (000 §III).

In 000's model a task's workload is random with a known mean ``E`` and standard
deviation ``sigma``, and "once a cloning copy is made ... the workload for this clone is
drawn independently from the estimated distribution" (000 §VI): that is why cloning
pays. geosim keeps ``task_work`` as the mean and gives each copy a factor of mean 1 and
coefficient of variation ``task_cv``; the copy runs ``task_work * factor`` (its progress
rate is divided by the factor).

The factor of copy ``k`` (0 for the first copy of a task, 1 for the next, ...) of task
``t`` comes from a counter-based stream keyed by ``(run key, t, k)``, not from a
sequential generator: the k-th copy of a task draws the same work under every
scheduler, whatever the order copies are launched in (common random numbers). A
scheduler sees ``task_work`` and ``task_cv`` (the distribution), never a copy's draw.

Families (scenario key ``workload.copy_variability``), each of mean 1 and CV ``c``:

- ``"pareto"`` (default, 000 §III-A's example of a heavy-tailed duration): shape
  ``alpha = 1 + sqrt(1 + 1/c**2)`` (> 2, so the variance is finite) and scale
  ``(alpha - 1) / alpha``; with r copies the expected minimum is the mean divided by
  000's speedup ``s(r) = (r alpha - 1) / (r (alpha - 1))``;
- ``"lognormal"``: ``sigma**2 = log(1 + c**2)``, ``mu = -sigma**2 / 2``;
- ``"gamma"``: shape ``1 / c**2``, scale ``c**2``;
- ``"none"``: every factor is 1, whatever ``task_cv`` says.

Bounds: a workload may bound every copy's work (``Workload.copy_bounds``, e.g. the
smallest and largest task duration of a trace). A copy of a task of mean work ``E`` then
draws its factor from the family truncated to ``[low / E, high / E]``, by inversion of
the same uniform (``u -> F(lo) + u (F(hi) - F(lo))``), so common random numbers hold; its
mean is :func:`truncated_factor_mean`, slightly off 1 for tasks near the bounds.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from geosim.jit import njit
from geosim.keyed import GOLDEN, M1, M2, mix64, unit

#: The families of :func:`copy_factors`.
FAMILIES = ("pareto", "lognormal", "gamma", "none")


@njit(cache=True)
def _keyed_uniforms(key, task, index):  # pragma: no cover - compiled
    out = np.empty(task.size)
    for i in range(task.size):
        z = key ^ (np.uint64(task[i]) * GOLDEN)
        z = (z ^ (z >> np.uint64(31))) * M1
        z = z ^ (np.uint64(index[i]) * M2)
        out[i] = unit(mix64(z + GOLDEN))
    return out


def keyed_uniforms(key: int, task: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Uniforms in (0, 1), one per ``(task[i], index[i])``, a pure function of the key.

    Args:
        key: The run's key (from its seed).
        task: Task ids.
        index: Copy index of each (0 for a task's first copy).
    """
    return _keyed_uniforms(np.uint64(key), np.asarray(task, dtype=np.int64),
                           np.asarray(index, dtype=np.int64))


def pareto_shape(cv: np.ndarray | float) -> np.ndarray:
    """Shape of the mean-1 Pareto with coefficient of variation ``cv`` (> 0)."""
    cv = np.asarray(cv, dtype=np.float64)
    return 1.0 + np.sqrt(1.0 + 1.0 / cv ** 2)


def _pareto(cv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Shape and scale of the mean-1 Pareto with coefficient of variation ``cv``."""
    alpha = pareto_shape(cv)
    return alpha, (alpha - 1.0) / alpha


def factor_cdf(family: str, cv: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``P(factor <= x)`` of the mean-1 factor of CV ``cv > 0`` (families but ``"none"``)."""
    cv, x = np.broadcast_arrays(np.asarray(cv, dtype=np.float64),
                                np.asarray(x, dtype=np.float64))
    if family == "pareto":
        alpha, scale = _pareto(cv)
        with np.errstate(divide="ignore"):
            return np.where(x <= scale, 0.0, 1.0 - (scale / np.maximum(x, scale)) ** alpha)
    if family == "lognormal":
        s2 = np.log1p(cv ** 2)
        with np.errstate(divide="ignore"):
            return special.ndtr((np.log(x) + s2 / 2.0) / np.sqrt(s2))
    k = 1.0 / cv ** 2
    return special.gammainc(k, k * x)


def truncated_factor_mean(family: str, cv: np.ndarray, lo: np.ndarray,
                          hi: np.ndarray) -> np.ndarray:
    """Mean of the mean-1 factor of CV ``cv`` truncated to ``[lo, hi]`` (closed forms).

    Pareto: the bounded Pareto mean; lognormal and gamma: their partial first moments
    over the mass in ``[lo, hi]``. ``cv = 0`` gives 1 (clipped into the bounds).
    """
    cv, lo, hi = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (cv, lo, hi)))
    out = np.array(np.clip(np.ones(cv.shape), lo, hi), dtype=np.float64)
    var = cv > 0
    if family == "none" or not var.any():
        return out
    c, a, b = cv[var], lo[var], hi[var]
    mass = factor_cdf(family, c, b) - factor_cdf(family, c, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        if family == "pareto":
            alpha, scale = _pareto(c)
            a = np.maximum(a, scale)
            # E[X; a < X < b] for the Pareto of shape alpha and scale s is
            # alpha s^alpha (a^(1-alpha) - b^(1-alpha)) / (alpha - 1).
            part = alpha * scale ** alpha * (a ** (1.0 - alpha) - b ** (1.0 - alpha)) \
                / (alpha - 1.0)
        elif family == "lognormal":
            s = np.sqrt(np.log1p(c ** 2))
            part = special.ndtr((np.log(b) - s ** 2 / 2.0) / s) - \
                special.ndtr((np.log(a) - s ** 2 / 2.0) / s)
        else:
            k = 1.0 / c ** 2
            part = special.gammainc(k + 1.0, k * b) - special.gammainc(k + 1.0, k * a)
        out[var] = part / mass
    return out


def copy_factors(family: str, cv: np.ndarray, u: np.ndarray, lo: np.ndarray | None = None,
                 hi: np.ndarray | None = None) -> np.ndarray:
    """Inverse-CDF draws of mean-1 factors with coefficients of variation ``cv``.

    Args:
        family: One of :data:`FAMILIES`.
        cv: Coefficient of variation per draw (>= 0; 0 gives exactly 1).
        u: Uniforms in (0, 1), one per draw.
        lo: Smallest factor of each draw, or None (no bounds); with ``hi``, the family is
            truncated to ``[lo, hi]`` (each interval must hold some of its mass).
        hi: Largest factor of each draw, or None.

    Raises:
        ValueError: Unknown family.
    """
    if family not in FAMILIES:
        raise ValueError(f"copy variability {family!r} not in {FAMILIES}")
    cv = np.asarray(cv, dtype=np.float64)
    out = np.ones(cv.shape)
    var = cv > 0
    if family == "none" or not var.any():
        return out if lo is None else np.clip(out, lo, hi)
    c, q = cv[var], np.asarray(u, dtype=np.float64)[var]
    if lo is not None:
        out = np.clip(out, lo, hi)
        f_lo = factor_cdf(family, c, np.asarray(lo, dtype=np.float64)[var])
        f_hi = factor_cdf(family, c, np.asarray(hi, dtype=np.float64)[var])
        q = f_lo + q * (f_hi - f_lo)
    if family == "pareto":
        alpha, scale = _pareto(c)
        out[var] = scale * (1.0 - q) ** (-1.0 / alpha)
    elif family == "lognormal":
        s2 = np.log1p(c ** 2)
        out[var] = np.exp(-s2 / 2.0 + np.sqrt(s2) * special.ndtri(q))
    else:
        k = 1.0 / c ** 2
        out[var] = special.gammaincinv(k, q) / k
    if lo is not None:          # (rounding may step just outside)
        out[var] = np.clip(out[var], np.asarray(lo)[var], np.asarray(hi)[var])
    return out


def expected_min_factor(family: str, cv: np.ndarray | float, copies: np.ndarray | int,
                        ) -> np.ndarray:
    """``E[min]`` of ``copies`` independent factors (mean 1, CV ``cv``): ``1 / s(copies)``.

    For ``"pareto"`` it is 000 §III-A's closed form ``c (alpha - 1) / (c alpha - 1)``; for
    the other families a midpoint rule over ``E[min] = int_0^1 Q(u) c (1 - u)^(c-1) du``
    on 4096 points (``Q`` the quantile function).

    Args:
        family: One of :data:`FAMILIES`.
        cv: Coefficients of variation (broadcast against ``copies``).
        copies: Numbers of copies (>= 1).
    """
    cv, c = np.broadcast_arrays(np.asarray(cv, dtype=np.float64),
                                np.asarray(copies, dtype=np.float64))
    out = np.ones(cv.shape)
    var = cv > 0
    if family == "none" or not var.any():
        return out
    cv_v, c_v = cv[var], c[var]
    if family == "pareto":
        alpha = pareto_shape(cv_v)
        out[var] = c_v * (alpha - 1.0) / (c_v * alpha - 1.0)
        return out
    u = (np.arange(4096) + 0.5) / 4096
    q = copy_factors(family, np.repeat(cv_v[:, None], u.size, axis=1),
                     np.broadcast_to(u, (cv_v.size, u.size)))
    weight = c_v[:, None] * (1.0 - u[None, :]) ** (c_v[:, None] - 1.0)
    out[var] = (q * weight).mean(axis=1)
    return out
