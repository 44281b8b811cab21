"""Sorted int64 key indexes that grow in place, and a binary min-heap in arrays.

The index is the first ``n`` entries of two arrays with room to spare; new keys are
merged in with one compiled pass (:func:`insert_sorted`) instead of a NumPy insert per
batch. The monitor's pair rings and the table of routes of large worlds use it.
:func:`heap_push` and :func:`heap_pop` keep ``(key, id)`` pairs in two arrays for
compiled searches (Flutter's min-cost-flow steps, Mantri's lazy argmin).
"""

from __future__ import annotations

import numpy as np

from geosim.jit import njit


@njit(cache=True)
def insert_sorted(keys, ids, n, new, first):  # pragma: no cover - compiled
    """Merge ``new`` into the index ``keys[:n]`` (ids ``ids[:n]``), ids ``first`` onward.

    ``new`` ascends and holds no key of the index; its keys get ids ``first``,
    ``first + 1``, ... in key order. The arrays are grown (doubling) when full.

    Returns:
        The index's keys and ids (the same arrays unless grown) and its new size.
    """
    if n + new.size > keys.size:
        size = max(2 * keys.size, n + new.size, 64)
        grown_keys = np.empty(size, dtype=np.int64)
        grown_ids = np.empty(size, dtype=np.int64)
        grown_keys[:n] = keys[:n]
        grown_ids[:n] = ids[:n]
        keys, ids = grown_keys, grown_ids
    a, w = n - 1, n + new.size - 1       # from the end, so that nothing is overwritten
    for b in range(new.size - 1, -1, -1):
        while a >= 0 and keys[a] > new[b]:
            keys[w], ids[w] = keys[a], ids[a]
            a -= 1
            w -= 1
        keys[w], ids[w] = new[b], first + b
        w -= 1
    return keys, ids, n + new.size


@njit(cache=True)
def heap_push(hd, hv, size, d, v):  # pragma: no cover - compiled
    """Push ``(d, v)`` on the binary min-heap ``hd, hv`` of ``size`` items; new size."""
    i = size
    while i > 0:
        p = (i - 1) >> 1
        if hd[p] <= d:
            break
        hd[i], hv[i] = hd[p], hv[p]
        i = p
    hd[i], hv[i] = d, v
    return size + 1


@njit(cache=True)
def heap_pop(hd, hv, size):  # pragma: no cover - compiled
    """Pop the smallest item of the heap; ``(d, v, new size)``."""
    d0, v0 = hd[0], hv[0]
    size -= 1
    d, v = hd[size], hv[size]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and hd[c + 1] < hd[c]:
            c += 1
        if hd[c] >= d:
            break
        hd[i], hv[i] = hd[c], hv[c]
        i = c
    if size > 0:
        hd[i], hv[i] = d, v
    return d0, v0, size
