"""Mantri's restart and duplicate rules over a chunk of candidates, compiled (OSDI 2010 §5.1).

:func:`decide` applies them on ``t_new`` rows given in full; :func:`decide_lazy` computes
only the rows a rule looks at (:func:`~geosim.schedulers.mantri_rows.lazy_argmin`), with
the same result. :class:`~geosim.schedulers.mantri.Mantri` calls one or the other for
each chunk of candidates.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from geosim.jit import njit
from geosim.modeler import PairTable
from geosim.schedulers.mantri_rows import _HOLD, lazy_argmin, source_inverses

__all__ = ["bound_tables", "decide", "decide_lazy"]


def bound_tables(speed: np.ndarray, bandwidth: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tables :func:`~geosim.schedulers.mantri_rows.lazy_argmin` reads its bounds from.

    Returns:
        ``mean(1 / atom)`` per (cluster, type) of ``speed`` and per row of ``bandwidth``,
        and per type the clusters in increasing order of the first (a stable sort).
    """
    with np.errstate(divide="ignore"):
        speed_inv = np.mean(1.0 / speed, axis=2)
        order = np.ascontiguousarray(np.argsort(speed_inv, axis=0, kind="stable").T)
        return speed_inv, np.mean(1.0 / bandwidth, axis=1), order.astype(np.int64)


@njit(cache=True)
def _argmin_in(values, mask):  # pragma: no cover - compiled
    """``np.argmin`` of ``values`` over ``mask`` (first minimum, first NaN), -1 if empty."""
    best = -1
    low = 0.0
    for x in range(values.size):
        if mask[x]:
            val = values[x]
            if val != val:
                return x
            if best < 0 or val < low:
                best, low = x, val
    return best


@njit(cache=True)
def decide(means, atoms, n_atoms, t_rem, c, restartable, pool_lo, pool_hi, pool_cluster, taken,
           free, margin, delta, factor):  # pragma: no cover - compiled
    """Mantri's rules for a chunk of candidates, in order (the loop of Mantri's ``act``).

    ``free`` and ``taken`` (the fresh copies of the pool used) are updated in place.
    Candidate ``j`` may restart on a cluster with room or on one of its job's untaken
    fresh copies ``pool_lo[j]:pool_hi[j]`` (an empty range unless restartable), else
    duplicate on a cluster with room; ``factor < 0`` is ``(c+1)/c``. The rules are
    :func:`_apply_rules`', on ``t_new`` rows given in full (``means``, ``atoms``; only the
    first ``n_atoms[j]`` atoms of candidate ``j`` count, equally likely).

    Returns:
        Per candidate: 0 (nothing), 1 (duplicate) or 2 (restart); the cluster; the pool
        entry whose slot it takes, or -1 for an idle slot.
    """
    what, where, took, _ = _apply_rules(False, means, atoms, n_atoms, _no_rows(), _no_memo(),
                                        t_rem, c, restartable, pool_lo, pool_hi, pool_cluster,
                                        taken, free, margin, delta, factor)
    return what, where, took


class _Rows(NamedTuple):
    """What :func:`lazy_argmin` computes ``t_new`` rows from (:func:`t_new_rows`' inputs)."""

    speed: np.ndarray       # speed atoms per cluster and type
    bw: PairTable           # bandwidth atoms per cluster pair
    dense: np.ndarray       # the same, a row per pair src * n + dst (empty: none)
    types: np.ndarray       # type of each candidate's task
    work: np.ndarray        # work of each candidate's task
    g_ptr: np.ndarray       # input groups of candidate j: g_ptr[j]:g_ptr[j + 1]
    g_src: np.ndarray       # source cluster of each group
    g_size: np.ndarray      # size of each group
    step: np.ndarray        # log-survival steps of the merge
    lo: np.ndarray          # quantile search bounds (quantile_bounds)
    hi: np.ndarray
    steps_r: np.ndarray     # the general path's steps (survival_steps of (R, K))
    thresholds: np.ndarray  # and its quantile levels (thresholds(K))
    speed_inv: np.ndarray   # mean of 1 / speed atom per cluster and type
    order: np.ndarray       # per type, the clusters by increasing speed_inv
    src_inv: np.ndarray     # mean of 1 / bandwidth atom per pair, a row per source
    src_slot: np.ndarray    # each cluster's row in src_inv (-1: not a source)


class _Memo(NamedTuple):
    """Work arrays of :func:`lazy_argmin` and the rows it memoises for one candidate."""

    vals: np.ndarray        # a row's variables
    q: np.ndarray           # the quantiles of their minimum
    use: np.ndarray         # merge state (row_min_quantiles)
    head: np.ndarray
    cur: np.ndarray
    heap_key: np.ndarray    # the bounds waiting, a heap
    heap_id: np.ndarray
    mean_for: np.ndarray    # the candidate whose row mean[x], atoms[x] hold (-1: none)
    mean: np.ndarray        # each row's mean and t_new atoms
    atoms: np.ndarray


@njit(cache=True)
def _no_rows():  # pragma: no cover - compiled
    """An empty :class:`_Rows` (the rules on rows given in full)."""
    f1, i1 = np.empty(0), np.empty(0, dtype=np.int64)
    bw = PairTable(i1, i1, f1, 0, np.empty((0, 0)), i1)
    return _Rows(np.empty((0, 0, 0)), bw, np.empty((0, 0)), i1, f1, i1, i1, f1, f1, i1, i1, f1,
                 f1, np.empty((0, 0)), np.empty((0, 0), dtype=np.int64), np.empty((0, 0)), i1)


@njit(cache=True)
def _memo(n, k, r):  # pragma: no cover - compiled
    """A :class:`_Memo` for ``n`` clusters, ``k`` atoms and rows of at most ``r`` variables."""
    return _Memo(np.empty((r, k)), np.empty(k), np.empty(r, dtype=np.int64),
                 np.empty(r, dtype=np.int64), np.empty(r), np.empty(_HOLD + 1),
                 np.empty(_HOLD + 1, dtype=np.int64), np.full(n, -1, dtype=np.int64),
                 np.empty(n), np.empty((n, k)))


@njit(cache=True)
def _no_memo():  # pragma: no cover - compiled
    """An empty :class:`_Memo` (the rules on rows given in full)."""
    return _memo(0, 0, 0)


@njit(cache=True, error_model="numpy")
def _best_in(lazy, j, mask, means, rows, memo):  # pragma: no cover - compiled
    """The cluster of least ``E[t_new]`` over ``mask`` for candidate ``j`` (first minimum).

    From the full rows (``means``), or computing rows as needed (``lazy``,
    :func:`lazy_argmin`). Returns -1 if ``mask`` is empty.
    """
    if not lazy:
        return _argmin_in(means[j], mask)
    return lazy_argmin(mask, j, rows.speed, rows.bw, rows.dense, rows.types, rows.work, rows.g_ptr,
                        rows.g_src, rows.g_size, rows.step, rows.lo, rows.hi, rows.steps_r,
                        rows.thresholds, rows.speed_inv, rows.order, rows.src_inv, rows.src_slot,
                        memo.vals, memo.q, memo.use, memo.head, memo.cur, memo.heap_key,
                        memo.heap_id, memo.mean_for, memo.mean, memo.atoms)


@njit(cache=True, error_model="numpy")
def _apply_rules(lazy, means, atoms, n_atoms, rows, memo, t_rem, c, restartable, pool_lo,
                 pool_hi, pool_cluster, taken, free, margin, delta, factor):  # pragma: no cover
    """Mantri's restart and duplicate rules for a chunk of candidates, in order.

    The loop of :func:`decide` (``means`` and ``atoms``: every ``t_new`` row) and of
    :func:`decide_lazy` (``lazy``: rows computed from ``rows`` where a rule needs them,
    memoised per candidate in ``memo``). Candidate ``j`` has ``n_atoms[j]`` equally likely
    atoms (the first of its rows). Candidate ``j`` restarts on the best cluster with
    room or holding one of its job's untaken fresh copies if that beats ``t_rem`` by
    ``margin``; else it is duplicated on the best cluster with room if a new copy (times
    ``(c+1)/c``, or ``factor``) beats ``t_rem`` with probability above ``delta``. The
    slot taken is an idle one if the cluster has one, else the fresh copy's.

    Returns:
        Per candidate: 0 (nothing), 1 (duplicate) or 2 (restart); the cluster; the pool
        entry whose slot it takes, or -1; and ``E[t_new]`` at the chosen cluster.
    """
    m = t_rem.size
    what = np.zeros(m, dtype=np.int64)
    where = np.full(m, -1, dtype=np.int64)
    took = np.full(m, -1, dtype=np.int64)
    best_mean = np.zeros(m)
    room = free > 0             # kept as free changes; wide: room and a candidate's pool
    wide = room.copy()
    n_room = int(room.sum())
    for j in range(m):
        mine = False
        for e in range(pool_lo[j], pool_hi[j]):
            if not taken[e]:
                mine = True
        restart = False
        best = -1
        if mine or (restartable[j] and n_room > 0):
            for e in range(pool_lo[j], pool_hi[j]):
                if not taken[e]:
                    wide[pool_cluster[e]] = True
            best = _best_in(lazy, j, wide, means, rows, memo)
            for e in range(pool_lo[j], pool_hi[j]):
                wide[pool_cluster[e]] = room[pool_cluster[e]]
            restart = t_rem[j] > (memo.mean[best] if lazy else means[j, best]) + margin
        if not restart:
            best = _best_in(lazy, j, room, means, rows, memo)
            if best < 0:
                continue
            f = (c[j] + 1.0) / c[j] if factor < 0 else factor
            k = n_atoms[j]
            hits = 0
            for a in range(k):
                if (memo.atoms[best, a] if lazy else atoms[j, best, a]) * f < t_rem[j]:
                    hits += 1
            if not hits / k > delta:
                continue
        what[j] = 2 if restart else 1
        where[j] = best
        best_mean[j] = memo.mean[best] if lazy else means[j, best]
        if free[best] > 0:
            free[best] -= 1
            if free[best] == 0:
                room[best] = wide[best] = False
                n_room -= 1
        else:
            for e in range(pool_lo[j], pool_hi[j]):
                if not taken[e] and pool_cluster[e] == best:
                    taken[e] = True
                    took[j] = e
                    break
    return what, where, took, best_mean


@njit(cache=True, error_model="numpy")
def decide_lazy(speed, bw, dense, types, work, g_ptr, g_src, g_size, step, lo, hi, steps_r,
                thresholds, speed_inv, bw_inv, order, t_rem, c, restartable, pool_lo, pool_hi,
                pool_cluster, taken, free, margin, delta, factor):  # pragma: no cover
    """:func:`decide` on ``t_new`` rows computed only where a rule needs them.

    The arguments are :func:`t_new_rows`' (the chunk's tasks, their work and input
    groups, with every atom finite and ``>= 0``, each row ascending, every work and size
    finite and ``> 0``), the general path's steps and levels and the lazy bounds' tables
    (:class:`_Rows`, :func:`bound_tables`), then
    :func:`decide`'s; ``free`` and ``taken`` are updated in place. The argmins go
    through :func:`lazy_argmin`.

    Returns:
        :func:`decide`'s three arrays and ``E[t_new]`` at each chosen cluster.
    """
    src_inv, src_slot = source_inverses(bw, dense, bw_inv, g_src, free.size)
    rows = _Rows(speed, bw, dense, types, work, g_ptr, g_src, g_size, step, lo, hi, steps_r,
                 thresholds, speed_inv, order, src_inv, src_slot)
    k = speed.shape[2]
    n_atoms = np.full(t_rem.size, k, dtype=np.int64)
    return _apply_rules(True, np.empty((0, 0)), np.empty((0, 0, 0)), n_atoms, rows,
                        _memo(free.size, k, steps_r.size // k), t_rem, c, restartable,
                        pool_lo, pool_hi, pool_cluster, taken, free, margin, delta, factor)
