"""Constants, the scheduling error and array helpers shared by the engine's modules."""

from __future__ import annotations

import numpy as np

from geosim.jit import njit

# Task states.
WAITING, READY, RUNNING, DONE = 0, 1, 2, 3
# Copy outcomes.
ALIVE, WON, LOST, KILLED, FAILED = 0, 1, 2, 3, 4
OUTCOMES = ("alive", "won", "lost", "killed", "failed")

#: Tolerance of shares, fractions and instants.
EPS = 1e-9
#: Event timing with transfers: the shortest span, relative to the clock. Transfer events
#: closer than this run as one span, so that a span never divides the rounding of a
#: received fraction by next to nothing.
TIME_RESOLUTION = 1e-9
#: How a copy's inputs and its processing combine over time (see :mod:`geosim.engine`).
TRANSFER_MODES = ("fetch", "stream")
#: Empty arrays standing for an absent one in a kernel's arguments.
NO_INT = np.empty(0, dtype=np.int64)
NO_FLOAT = np.empty(0)


class SchedulingError(RuntimeError):
    """A scheduler asked for something the engine cannot do (a bug in the policy)."""


def in_sorted(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Whether each element of ``a`` is in ``b``, an ascending array: ``np.isin(a, b)``.

    One binary search per element, where ``np.isin`` sorts both arrays (the live list, the
    usual ``b``, is kept ascending).
    """
    if b.size == 0:
        return np.zeros(np.shape(a), dtype=bool)
    return b[np.minimum(np.searchsorted(b, a), b.size - 1)] == a


def concat_ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Return the concatenation of ``arange(lo[i], hi[i])`` for every i."""
    return _concat_ranges(np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64))


@njit(cache=True)
def _concat_ranges(lo, hi):  # pragma: no cover - compiled
    total = 0
    for i in range(lo.size):
        total += max(hi[i] - lo[i], 0)
    out = np.empty(total, dtype=np.int64)
    j = 0
    for i in range(lo.size):
        for v in range(lo[i], hi[i]):
            out[j] = v
            j += 1
    return out


def first_of_runs(keys: np.ndarray) -> np.ndarray:
    """Mask of the elements of a sorted array that start a run of equal values."""
    first = np.empty(keys.size, dtype=bool)
    if keys.size:
        first[0] = True
        np.not_equal(keys[1:], keys[:-1], out=first[1:])
    return first


def rank_in_runs(keys: np.ndarray) -> np.ndarray:
    """Position of each element of a sorted array within its run of equal values."""
    idx = np.arange(keys.size)
    starts = np.where(first_of_runs(keys), idx, 0)
    return idx - np.maximum.accumulate(starts) if keys.size else idx


def pointers(keys: np.ndarray, n: int) -> np.ndarray:
    """CSR pointers of ``keys`` in ``0..n-1``: key ``k``'s run is ``ptr[k]:ptr[k+1]``."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return ptr


@njit(cache=True)
def fmin(a, b):  # pragma: no cover - compiled
    """``np.minimum`` of two floats (NaN propagates)."""
    return a if a <= b or a != a else b


@njit(cache=True)
def fmax(a, b):  # pragma: no cover - compiled
    """``np.maximum`` of two floats (NaN propagates)."""
    return a if a >= b or a != a else b


@njit(cache=True)
def sorted_unique(a):  # pragma: no cover - compiled
    """``np.unique`` of an int64 array."""
    if a.size < 2:
        return a.copy()
    a = np.sort(a)
    n = 1
    for i in range(1, a.size):
        if a[i] != a[n - 1]:
            a[n] = a[i]
            n += 1
    return a[:n]
