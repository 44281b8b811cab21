"""Sorted int64 key indexes that grow in place, and arrays read in sorted order.

The index is the first ``n`` entries of two arrays with room to spare; new keys are
merged in with one compiled pass (:func:`insert_sorted`) instead of a NumPy insert per
batch. The monitor's pair rings and the table of routes of large worlds use it.

:func:`next_in_order` reads an array in the order of a stable sort a few entries at a
time, for searches that stop long before the end (Mantri's lazy argmin): a scan per few
entries instead of a sort of them all, or a scan per entry.
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


@njit(cache=True, inline="always")
def _before(values, x, y):  # pragma: no cover - compiled
    """Whether entry ``x`` comes before ``y`` in a stable sort of ``values`` (NaN last)."""
    a, b = values[x], values[y]
    if a != a:
        return b != b and x < y
    return b != b or a < b or (a == b and x < y)


@njit(cache=True)
def next_in_order(values, mask, last, buf):  # pragma: no cover - compiled
    """The next entries of ``mask`` after entry ``last`` in a stable sort of ``values``.

    The order is NumPy's stable ``argsort`` (by value, NaN last, ties by position);
    ``last = -1`` starts from the first. ``buf`` gets up to its size of them, in order,
    by one scan of ``values``.

    Returns:
        How many entries were put in ``buf``.
    """
    size = buf.size
    have = 0
    for x in range(values.size):
        if not mask[x] or (last >= 0 and not _before(values, last, x)):
            continue
        if have == size and not _before(values, x, buf[have - 1]):
            continue
        i = have if have < size else size - 1
        while i > 0 and _before(values, x, buf[i - 1]):
            if i < size:
                buf[i] = buf[i - 1]
            i -= 1
        buf[i] = x
        if have < size:
            have += 1
    return have
