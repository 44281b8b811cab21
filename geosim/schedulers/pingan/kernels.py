"""Small compiled helpers shared by PingAn's kernels: orders, exact minima, ``exp``.

Each kernel does in one pass what a chain of small NumPy calls did, with the same
floating-point operations in the same order (results are bit-identical): elementwise
arithmetic, exact minima and maxima, and sums in NumPy's own order
(:func:`geosim.distributions.pairwise_sum`).
"""

from __future__ import annotations

import numpy as np

from geosim.distributions import (
    row_mean,
)
from geosim.jit import njit, objmode


@njit(cache=True)
def _min(a, b):  # pragma: no cover - compiled
    """``numpy.minimum`` of two floats (NaN wins)."""
    return a if (a < b or a != a) else b


@njit(cache=True)
def _max(a, b):  # pragma: no cover - compiled
    """``numpy.maximum`` of two floats (NaN wins)."""
    return a if (a > b or a != a) else b


@njit(cache=True)
def _before(a, b):  # pragma: no cover - compiled
    """Whether ``a`` sorts strictly before ``b`` in NumPy's order (NaN last)."""
    return a < b or (b != b and a == a)


@njit(cache=True)
def _order(score):  # pragma: no cover - compiled
    """``numpy.argsort(-score, axis=1, kind="stable")``: columns by descending score."""
    n, m = score.shape
    order = np.empty((n, m), dtype=np.int64)
    for i in range(n):
        for j in range(m):
            key = -score[i, j]
            at = j
            while at > 0 and _before(key, -score[i, order[i, at - 1]]):
                order[i, at] = order[i, at - 1]
                at -= 1
            order[i, at] = j
    return order


@njit(cache=True)
def _gain_order(score, base):  # pragma: no cover - compiled
    """Candidates whose score beats the task's ``base``, and columns by descending score.

    Returns:
        ``gain = score > base[:, None]`` and the stable order of
        ``where(gain, score, -inf)``, descending.
    """
    n, m = score.shape
    gain = np.empty((n, m), dtype=np.bool_)
    masked = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            gain[i, j] = score[i, j] > base[i]
            masked[i, j] = score[i, j] if gain[i, j] else -np.inf
    return gain, _order(masked)


@njit(cache=True)
def _neg_means(v, surv, ptr, m, xs, js, out):  # pragma: no cover - compiled
    """Write ``-mean`` of each merged row to ``out[xs, js]`` (its expected maximum)."""
    terms = np.zeros(m)
    for e in range(xs.size):
        out[xs[e], js[e]] = -row_mean(v, surv, ptr[e], ptr[e + 1], m, terms)
    return out


@njit(cache=True)
def _stable_order(key):  # pragma: no cover - compiled
    """``numpy.argsort(key, kind="stable")`` of floats (NaN last): a merge sort."""
    n = key.size
    idx = np.arange(n)
    tmp = np.empty(n, dtype=np.int64)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            a, b, w = lo, mid, lo
            while a < mid and b < hi:
                if _before(key[idx[b]], key[idx[a]]):
                    tmp[w] = idx[b]
                    b += 1
                else:
                    tmp[w] = idx[a]
                    a += 1
                w += 1
            while a < mid:
                tmp[w] = idx[a]
                a += 1
                w += 1
            while b < hi:
                tmp[w] = idx[b]
                b += 1
                w += 1
        idx, tmp = tmp, idx
        width *= 2
    return idx


@njit(cache=True)
def _slots_of(rate, dt):  # pragma: no cover - compiled
    """Expected slots ``1 / (rate dt)`` of a copy where ``rate > 0``, else 0 (:func:`_slots`)."""
    return 1.0 / (rate * dt) if rate > 0 else 0.0


@njit(cache=True)
def _most_groups(g_ptr):  # pragma: no cover - compiled
    """The most input groups of a task (0 for none)."""
    top = 0
    for i in range(g_ptr.size - 1):
        top = max(top, g_ptr[i + 1] - g_ptr[i])
    return top


def _numpy_log1p_neg(x: np.ndarray) -> None:
    """``numpy.log1p(-x)`` of ``x`` in place; ``log1p(-1)`` is ``-inf`` without a warning."""
    with np.errstate(divide="ignore", invalid="ignore"):
        np.negative(x, out=x)
        np.log1p(x, out=x)


@njit(cache=True)
def _log1p_neg(x):  # pragma: no cover - compiled
    """:func:`_numpy_log1p_neg` of ``x`` (NumPy's own, in object mode)."""
    with objmode():
        _numpy_log1p_neg(x)


@njit(cache=True)
def _tiled(step_k, r):  # pragma: no cover - compiled
    """``step_k`` repeated ``r`` times (:func:`~geosim.distributions.survival_steps` of ``r``)."""
    k = step_k.size
    out = np.empty(r * k)
    for o in range(r * k):
        out[o] = step_k[o % k]
    return out
