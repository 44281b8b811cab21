"""The sorted key index grown in place, against NumPy's insert."""

import numpy as np

from geosim.sortedkeys import insert_sorted


def test_batches_merge_as_numpy_inserts_them_ids_in_key_order():
    rng = np.random.default_rng(7)
    keys, ids, n = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), 0
    ref_keys, ref_ids = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    sizes = []
    for size in [1, 3, 0, 70, 5, 200, 2]:       # empty, one, and batches past the room left
        batch = np.unique(rng.integers(0, 10_000, size))
        new = batch[~np.isin(batch, ref_keys)]
        at = np.searchsorted(ref_keys, new)
        ref_keys = np.insert(ref_keys, at, new)
        ref_ids = np.insert(ref_ids, at, np.arange(n, n + new.size))
        keys, ids, n = insert_sorted(keys, ids, n, new, n)
        sizes.append(keys.size)
        np.testing.assert_array_equal(keys[:n], ref_keys)
        np.testing.assert_array_equal(ids[:n], ref_ids)
    assert sizes[0] == 64 and sizes[-1] >= n and len(set(sizes)) > 2     # grown by doubling


def test_keys_below_above_and_between_the_index():
    keys = np.array([10, 20, 30, 0, 0], dtype=np.int64)    # room for two more
    ids = np.array([0, 1, 2, -1, -1], dtype=np.int64)
    out_keys, out_ids, n = insert_sorted(keys, ids, 3, np.array([5, 25], dtype=np.int64), 3)
    assert out_keys is keys and n == 5                      # merged where it lay
    assert out_keys.tolist() == [5, 10, 20, 25, 30] and out_ids.tolist() == [3, 0, 1, 4, 2]
    out_keys, out_ids, n = insert_sorted(out_keys, out_ids, 5, np.array([40], dtype=np.int64), 5)
    assert out_keys is not keys and out_keys[:n].tolist() == [5, 10, 20, 25, 30, 40]
    assert out_ids[:n].tolist() == [3, 0, 1, 4, 2, 5]
