"""A map of non-negative int64 keys to int64 values in two arrays, for compiled code.

Open addressing with linear probing: ``keys[p]`` is -1 where position ``p`` is free,
the capacity is a power of two and is kept at least twice the entries, so a lookup reads
one or two positions. Entries are only added, and all are dropped at once
(:func:`clear`). It stores what would otherwise be a sparse ``rows × columns`` array
indexed by ``row * columns + column``: memory in proportion to the entries used.
"""

from __future__ import annotations

import numpy as np

from geosim.jit import njit

#: Fibonacci hashing's multiplier (2^64 / golden ratio).
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def empty(capacity: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """A map with room for ``capacity / 2`` entries (``capacity`` rounded up to 2^k)."""
    size = 1 << max(4, int(capacity - 1).bit_length())
    return np.full(size, -1, dtype=np.int64), np.empty(size, dtype=np.int64)


def clear(keys: np.ndarray) -> None:
    """Drop every entry."""
    keys.fill(-1)


def reserve(keys: np.ndarray, values: np.ndarray, n: int,
            more: int) -> tuple[np.ndarray, np.ndarray]:
    """The map, grown if ``n`` entries and ``more`` new ones would fill half of it."""
    if 2 * (n + more) <= keys.size:
        return keys, values
    new_keys, new_values = empty(2 * (n + more))
    _rehash(keys, values, new_keys, new_values)
    return new_keys, new_values


@njit(cache=True, inline="always")
def position(keys, key):  # pragma: no cover - compiled
    """Where ``key`` is in the map, or the free position where it would go."""
    mask = keys.size - 1
    p = np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(32)) & mask
    while keys[p] != -1 and keys[p] != key:
        p = (p + 1) & mask
    return p


@njit(cache=True)
def _rehash(keys, values, new_keys, new_values):  # pragma: no cover - compiled
    """Put every entry of one map into another (empty) one."""
    for p in range(keys.size):
        if keys[p] != -1:
            q = position(new_keys, keys[p])
            new_keys[q] = keys[p]
            new_values[q] = values[p]
