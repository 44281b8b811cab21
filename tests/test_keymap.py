"""The int64 map of :mod:`geosim.keymap`, against a dict."""

from __future__ import annotations

import numpy as np
from numba import njit

from geosim import keymap


@njit
def _find_or_add(keys, values, new):
    """Each key's value, a key met first getting its position in ``new``."""
    out = np.empty(new.size, dtype=np.int64)
    for i in range(new.size):
        p = keymap.position(keys, new[i])
        if keys[p] != new[i]:
            keys[p], values[p] = new[i], i
        out[i] = values[p]
    return out


def _expected(new: np.ndarray) -> list[int]:
    first: dict[int, int] = {}
    return [first.setdefault(int(k), i) for i, k in enumerate(new)]


def test_keys_find_what_was_added_as_a_dict_does():
    rng = np.random.default_rng(3)
    new = rng.integers(0, 50_000, 20_000)           # many repeated keys
    keys, values = keymap.reserve(*keymap.empty(), 0, new.size)
    assert _find_or_add(keys, values, new).tolist() == _expected(new)
    assert np.count_nonzero(keys != -1) == np.unique(new).size
    assert 2 * np.unique(new).size <= keys.size


def test_a_grown_map_keeps_every_entry_and_a_cleared_one_none():
    rng = np.random.default_rng(4)
    first, second = rng.integers(0, 10**12, 600), rng.integers(0, 10**12, 5000)
    keys, values = keymap.empty(16)
    keys, values = keymap.reserve(keys, values, 0, first.size)
    _find_or_add(keys, values, first)
    small = keys.size
    keys, values = keymap.reserve(keys, values, first.size, second.size)
    assert keys.size > small
    both = np.concatenate([first, second])
    got = _find_or_add(keys, values, both)
    assert got.tolist() == _expected(both)          # the first 600 kept their values
    keymap.clear(keys)
    assert _find_or_add(keys, values, second[:10]).tolist() == list(range(10))
