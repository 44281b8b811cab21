"""Mantri's ``t_new`` rows (OSDI 2010 §5.1): a (task, cluster) row's variables, quantiles.

A row ``(task, m)`` holds the processing-rate atoms of the task's type on ``m`` over its
work and, per remote input group, the pair's bandwidth atoms (read from the performance
model's :class:`~geosim.modeler.PairTable`) over the group's size. :func:`t_new_rows`
settles rows by the fast merge of
:func:`~geosim.distributions.row_min_quantiles` and lists those it cannot;
:func:`exact_atoms` lays out those for the general path; :func:`lazy_argmin` finds a
candidate's best cluster computing as few rows as it can.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from geosim.distributions import row_min_quantiles
from geosim.modeler import pair_row

__all__ = ["clean_rows", "exact_atoms", "lazy_argmin", "mean_of", "row_vals", "t_new_rows"]


@njit(cache=True, error_model="numpy")
def exact_atoms(speed, bw, types, work, pos, dst, g_ptr, g_src, g_size,
                 r):  # pragma: no cover - compiled
    """The variables of rows ``(pos[i], dst[i])`` as :func:`t_new_rows` lays them out.

    Shape ``(rows, r, K)``: the processing-rate atoms first, then one row per remote
    input group in the group's place (``1 + g - g_ptr[task]``), ``+inf`` elsewhere (a
    local input, or a task with fewer groups), for :func:`~geosim.distributions.exact_min`.
    """
    k = speed.shape[2]
    atoms = np.full((pos.size, r, k), np.inf)
    for i in range(pos.size):
        j, m = pos[i], dst[i]
        for a in range(k):
            atoms[i, 0, a] = speed[m, types[j], a] / work[j]
        for g in range(g_ptr[j], g_ptr[j + 1]):
            if g_src[g] != m:
                row = pair_row(bw, g_src[g], m)
                for a in range(k):
                    atoms[i, 1 + g - g_ptr[j], a] = bw.values[row, a] / g_size[g]
    return atoms


@njit(cache=True, error_model="numpy")
def t_new_rows(speed, bw, types, work, g_ptr, g_src, g_size, need, step, lo, hi,
                t_new, clean):  # pragma: no cover - compiled
    """``t_new`` atoms of each (task, cluster in ``need``) row, as ``1 / quantile``.

    Row ``(j, m)`` holds the processing-rate atoms ``speed[m, types[j]] / work[j]`` and,
    per input group ``g`` of task ``j``, the transfer-rate atoms of pair ``src_g -> m``
    in the :class:`~geosim.modeler.PairTable` ``bw``, over ``size_g`` (absent when the
    input is local). Its quantiles
    are settled by :func:`~geosim.distributions.row_min_quantiles`. ``clean`` promises that
    every atom of ``speed`` and ``bw`` is finite and ``>= 0`` and each row ascends:
    when its task's work and input sizes are positive and finite, a row's atoms then
    ascend too (a division by such a number keeps the order and makes no NaN or ``-inf``;
    an overflow makes a tail of ``+inf``).

    Returns:
        The rows (``j · n + m``) it could not settle, to be solved exactly.
    """
    n_tasks = types.size
    n = need.size
    k = speed.shape[2]
    r = 1
    for j in range(n_tasks):
        r = max(r, 1 + g_ptr[j + 1] - g_ptr[j])
    vals = np.empty((r, k))
    q = np.empty(k)
    use = np.empty(r, dtype=np.int64)
    head = np.empty(r, dtype=np.int64)
    cur = np.empty(r)
    redo = np.empty(n_tasks * n, dtype=np.int64)
    n_redo = 0
    for j in range(n_tasks):
        sorted_ = clean and np.isfinite(work[j]) and work[j] > 0
        for g in range(g_ptr[j], g_ptr[j + 1]):
            sorted_ = sorted_ and np.isfinite(g_size[g]) and g_size[g] > 0
        for m in range(n):
            if not need[m]:
                continue
            for a in range(k):
                vals[0, a] = speed[m, types[j], a] / work[j]
            nv = 1
            for g in range(g_ptr[j], g_ptr[j + 1]):
                if g_src[g] != m:       # a local input is an absent variable: left out
                    row = pair_row(bw, g_src[g], m)
                    for a in range(k):
                        vals[nv, a] = bw.values[row, a] / g_size[g]
                    nv += 1
            if row_min_quantiles(vals, nv, k, step, lo, hi, q, use, head, cur, sorted_):
                for a in range(k):
                    t_new[j, m, a] = 1.0 / q[k - 1 - a]
            else:
                redo[n_redo] = j * n + m
                n_redo += 1
    return redo[:n_redo]


@njit(cache=True)
def clean_rows(a):  # pragma: no cover - compiled
    """Whether every entry of ``a`` is finite, each row ascends and starts at ``>= 0``."""
    n, k = a.shape
    for i in range(n):
        if not a[i, 0] >= 0:
            return False
        for j in range(k):
            if not np.isfinite(a[i, j]):
                return False
            if j > 0 and not a[i, j] >= a[i, j - 1]:
                return False
    return True


@njit(cache=True)
def mean_of(x, k):  # pragma: no cover - compiled
    """``np.mean`` of ``x[:k]`` (``k <= 128``) as NumPy rounds it along a contiguous row.

    NumPy's pairwise sum of fewer than 8 values adds them in order; of 8 to 128 values it
    keeps eight running sums (values ``i``, ``i + 8``, ...), combines them pairwise and
    adds the values left over, in order.
    """
    if k < 8:
        res = -0.0
        for i in range(k):
            res += x[i]
        return res / k
    r0, r1, r2, r3 = x[0], x[1], x[2], x[3]
    r4, r5, r6, r7 = x[4], x[5], x[6], x[7]
    stop = k - k % 8
    for i in range(8, stop, 8):
        r0 += x[i]
        r1 += x[i + 1]
        r2 += x[i + 2]
        r3 += x[i + 3]
        r4 += x[i + 4]
        r5 += x[i + 5]
        r6 += x[i + 6]
        r7 += x[i + 7]
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(stop, k):
        res += x[i]
    return res / k


@njit(cache=True, error_model="numpy", inline="always")
def row_vals(speed, bw, t, w, g_lo, g_hi, g_src, g_size, m, vals):  # pragma: no cover
    """The variables of row ``(task, m)`` as :func:`t_new_rows` lays them out; their count.

    ``t`` and ``w`` are the task's type and work, ``g_lo:g_hi`` its input groups.
    """
    k = speed.shape[2]
    for a in range(k):
        vals[0, a] = speed[m, t, a] / w
    nv = 1
    for g in range(g_lo, g_hi):
        if g_src[g] != m:       # a local input is an absent variable: left out
            row = pair_row(bw, g_src[g], m)
            size = g_size[g]
            for a in range(k):
                vals[nv, a] = bw.values[row, a] / size
            nv += 1
    return nv


@njit(cache=True, error_model="numpy")
def lazy_argmin(mask, j, speed, bw, types, work, g_ptr, g_src, g_size, step, lo, hi,
                 vals, q, use, head, cur, low, term, bound, has_bound, mean, has_mean, atoms,
                 visited):  # pragma: no cover - compiled
    """``_argmin_in(means[j], mask)`` of :func:`_decide`, computing as few rows as it can.

    Every row's mean has a lower bound: ``t_new`` atom ``a`` is ``1 / q[K-1-a]`` and the
    minimum's quantile ``q[c]`` is at most atom ``c`` of each of its variables (the
    merge passes that atom only after the variable alone has cut the survival below
    the quantile's level), so ``1 / min_x vals[x, K-1-a]`` is at most the atom; the
    bound's atoms are summed in the mean's order, and rounding is monotone. Rows are
    taken by increasing bound; once the smallest bound left exceeds the best mean
    found, no row left can be smaller or tie it. Every mean and bound is in
    ``[0, inf]`` (no NaN), so the first minimum is the same as over all rows.

    Rows are memoised across calls for the same candidate (``has_bound``, ``has_mean``;
    ``atoms`` holds the computed rows' ``t_new``).

    Returns:
        The cluster, -1 if ``mask`` is empty, or -2 if a row needs the general path.
    """
    n = mask.size
    k = speed.shape[2]
    t, w, g_lo, g_hi = types[j], work[j], g_ptr[j], g_ptr[j + 1]
    for x in range(n):
        visited[x] = False
        if mask[x] and not has_bound[x]:
            # The least atom of each rank over the row's variables (row_vals' values).
            for a in range(k):
                low[a] = speed[x, t, a] / w
            for g in range(g_lo, g_hi):
                h = g_src[g]
                if h != x:
                    row = pair_row(bw, h, x)
                    size = g_size[g]
                    for a in range(k):
                        v = bw.values[row, a] / size
                        if v < low[a]:
                            low[a] = v
            for a in range(k):
                term[a] = 1.0 / low[k - 1 - a]
            bound[x] = mean_of(term, k)
            has_bound[x] = True
    best = -1
    best_val = 0.0
    while True:
        pick = -1
        least = 0.0
        for x in range(n):
            if mask[x] and not visited[x] and (pick < 0 or bound[x] < least):
                pick, least = x, bound[x]
        if pick < 0 or (best >= 0 and least > best_val):
            return best
        visited[pick] = True
        if not has_mean[pick]:
            nv = row_vals(speed, bw, t, w, g_lo, g_hi, g_src, g_size, pick, vals)
            if not row_min_quantiles(vals, nv, k, step, lo, hi, q, use, head, cur, True):
                return -2
            for a in range(k):
                atoms[pick, a] = 1.0 / q[k - 1 - a]
            mean[pick] = mean_of(atoms[pick], k)
            has_mean[pick] = True
        v = mean[pick]
        if best < 0 or v < best_val or (v == best_val and pick < best):
            best, best_val = pick, v
