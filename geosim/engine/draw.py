"""An exact replica of NumPy's ``Generator.choice(pop, k, replace=False)``, in parts.

Whole-slot copies go to free slots drawn without replacement in each cluster, exactly as
``rng.choice(free, k, replace=False)`` would draw them, cluster after cluster. The
bounded integer draws that NumPy makes are listed first (:func:`whole_slot_plan`), made
in one call of ``Generator.integers`` by the caller, and turned into slots here
(:func:`whole_slot_assign`), so a launch of many copies costs one call into the
generator and the stream stays the one NumPy's ``choice`` would consume.
"""

from __future__ import annotations

import numpy as np

from geosim.jit import njit


@njit(cache=True)
def whole_slot_plan(clusters, slot_ptr, slot_used, whole):  # pragma: no cover - compiled
    """Free slots for whole-slot copies on ``clusters``, and the draws choosing among them.

    Per cluster asked for (ascending): its copies (positions in ``clusters``, in order)
    and its free slots (spare share at least ``whole``, offsets in the cluster). Where
    there are more free slots than copies, ``Generator.choice(free, k, replace=False)``
    picks them: ``highs`` lists the upper bounds of its bounded integer draws, cluster
    after cluster (see :func:`choice`).

    Returns:
        The clusters, where each one's copies start in ``where``, ``where``, the free
        offsets and where each cluster's start; then ``(-1, 0, 0, highs)``, or at the
        first cluster with too few free slots ``(cluster, free slots, copies asked, -)``.
    """
    n_clusters = slot_ptr.size - 1
    count = np.zeros(n_clusters + 1, dtype=np.int64)
    for c in clusters:
        count[c + 1] += 1
    n_uniq = 0
    total = 0
    for c in range(n_clusters):
        if count[c + 1]:
            n_uniq += 1
            total += slot_ptr[c + 1] - slot_ptr[c]
        count[c + 1] += count[c]
    where = np.empty(clusters.size, dtype=np.int64)
    fill = count[:-1].copy()
    for i in range(clusters.size):
        where[fill[clusters[i]]] = i
        fill[clusters[i]] += 1
    uniq = np.empty(n_uniq, dtype=np.int64)
    at = np.empty(n_uniq + 1, dtype=np.int64)
    free = np.empty(total, dtype=np.int64)
    free_ptr = np.empty(n_uniq + 1, dtype=np.int64)
    n_high = 0
    g = 0
    n = 0
    for c in range(n_clusters):
        k = count[c + 1] - count[c]
        if k == 0:
            continue
        uniq[g], at[g], free_ptr[g] = c, count[c], n
        lo = slot_ptr[c]
        for s in range(lo, slot_ptr[c + 1]):
            if 1.0 - slot_used[s] >= whole:
                free[n] = s - lo
                n += 1
        pop = n - free_ptr[g]
        if pop < k:
            return uniq, at, where, free, free_ptr, c, pop, k, np.empty(0, np.int64)
        if pop > k:
            n_high += n_draws(pop, k)
        g += 1
    at[n_uniq], free_ptr[n_uniq] = clusters.size, n
    highs = np.empty(n_high, dtype=np.int64)
    h = 0
    for g in range(n_uniq):
        k = at[g + 1] - at[g]
        pop = free_ptr[g + 1] - free_ptr[g]
        if pop == k:
            continue
        if pop > 10000 and k > pop // 50:
            for i in range(pop - 1, max(pop - k, 1) - 1, -1):
                highs[h] = i
                h += 1
        else:
            for j in range(pop - k, pop):
                highs[h] = j
                h += 1
            for i in range(k - 1, 0, -1):
                highs[h] = i
                h += 1
    return uniq, at, where, free, free_ptr, -1, 0, 0, highs


@njit(cache=True)
def n_draws(pop, k):  # pragma: no cover - compiled
    """Bounded integer draws ``Generator.choice(pop, k, replace=False)`` makes."""
    if pop > 10000 and k > pop // 50:
        return pop - max(pop - k, 1)
    return k + k - 1


@njit(cache=True)
def whole_slot_assign(uniq, at, where, free, free_ptr, slot_ptr,
                       draws):  # pragma: no cover - compiled
    """The slot of each copy from :func:`whole_slot_plan` and the draws it asked for."""
    out = np.empty(where.size, dtype=np.int64)
    d = 0
    for g in range(uniq.size):
        lo = slot_ptr[uniq[g]]
        k = at[g + 1] - at[g]
        got = free[free_ptr[g]:free_ptr[g + 1]]
        if got.size == k:
            for q in range(k):
                out[where[at[g] + q]] = lo + got[q]
            continue
        n = n_draws(got.size, k)
        pick = choice(got.size, k, draws[d:d + n])
        d += n
        for q in range(k):
            out[where[at[g] + q]] = lo + got[pick[q]]
    return out


@njit(cache=True)
def choice(pop, k, draws):  # pragma: no cover - compiled
    """``Generator.choice(pop, k, replace=False)`` given its bounded integer draws.

    NumPy's algorithm: a partial Fisher-Yates shuffle of ``arange(pop)`` for a large
    sample of a large population, else Floyd's sampling followed by a shuffle. Draw
    ``i`` is uniform on ``[0, highs[i]]`` (:func:`whole_slot_plan`), as
    ``Generator.integers(0, highs + 1)`` makes it.
    """
    idx = np.empty(k, dtype=np.int64)
    d = 0
    if pop > 10000 and k > pop // 50:
        perm = np.arange(pop)
        for i in range(pop - 1, max(pop - k, 1) - 1, -1):
            j = draws[d]
            d += 1
            perm[i], perm[j] = perm[j], perm[i]
        idx[:] = perm[pop - k:]
        return idx
    seen = np.zeros(pop, dtype=np.bool_)
    for j in range(pop - k, pop):
        val = draws[d]
        d += 1
        if seen[val]:
            val = j
        seen[val] = True
        idx[j - pop + k] = val
    for i in range(k - 1, 0, -1):
        j = draws[d]
        d += 1
        idx[i], idx[j] = idx[j], idx[i]
    return idx
