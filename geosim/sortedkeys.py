"""Sorted int64 key indexes that grow in place.

The index is the first ``n`` entries of two arrays with room to spare; new keys are
merged in with one compiled pass (:func:`insert_sorted`) instead of a NumPy insert per
batch. The monitor's pair rings and the table of routes of large worlds use it.
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
