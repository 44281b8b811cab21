"""PingAn's seeded choice among tied candidates (``ties = "seeded"``), kept up to date.

A task's clusters are ordered by bound, then by a keyed draw per (task, cluster) from the
run's seed, then by index; each cluster's place depends on no other cluster, so stored
candidates can follow a change of reachability (:func:`_patch_candidates`).
"""

from __future__ import annotations

import numpy as np

from geosim.jit import njit
from geosim.keyed import uniform


@njit(cache=True, inline="always")
def _before(key, t, v, c, w, d):  # pragma: no cover - compiled
    """Whether column ``c`` (value ``v``) comes before ``d`` (``w``) in task ``t``'s row.

    By value (NaN last), then by draw ``(t, column)`` of ``key``, then by column.
    """
    if (v != v) != (w != w):
        return w != w
    if v == v and v != w:
        return v < w
    u, x = uniform(key, t, c, 0), uniform(key, t, d, 0)
    return u < x if u != x else c < d


@njit(cache=True)
def _seeded_top(score, m, row_task, key):  # pragma: no cover - compiled
    """Columns of the ``m`` lowest values of each row, ties chosen by the run's seed.

    Row ``i`` is task ``row_task[i]``'s; its columns are ordered by value (NaN last), then
    by a uniform draw per (task, column) from the stream ``key``
    (:func:`geosim.keyed.uniform`), then by column: among clusters tied at the ``m``-th
    value, a subset uniform at random, the same on every machine (unlike ``argpartition``,
    whose choice among ties depends on the CPU's vector instructions). The columns are
    returned in that order. A draw is made only where two values tie. Rows with fewer
    than ``m`` columns end in ``-1``.
    """
    n_rows, n = score.shape
    out = np.full((n_rows, m), -1, dtype=np.int64)
    vals = np.empty(m)
    for i in range(n_rows):
        t = row_task[i]
        size = 0
        for c in range(n):
            v = score[i, c]
            if size == m and not _before(key, t, v, c, vals[m - 1], out[i, m - 1]):
                continue
            at = size if size < m else m - 1
            while at > 0 and _before(key, t, v, c, vals[at - 1], out[i, at - 1]):
                vals[at], out[i, at] = vals[at - 1], out[i, at - 1]
                at -= 1
            vals[at], out[i, at] = v, c
            size = min(size + 1, m)
    return out


@njit(cache=True)
def _patch_candidates(entries, slot_task, cand, cand_ok, cand_epoch, epoch, log, log_ptr,
                      bound, bound_ok, reach, key):  # pragma: no cover - compiled
    """Bring the stored seeded candidates of ``entries`` to the reachability ``reach``.

    Entry ``s``'s candidates are for the reachability of epoch ``cand_epoch[s]``; the
    clusters whose reachability changed from epoch ``e`` to ``e + 1`` are
    ``log[log_ptr[e]:log_ptr[e + 1]]``, and ``reach`` is that of ``epoch``. Only those
    clusters changed value (a bound, or ``+inf`` where unreachable, as PingAn's
    candidate search masks them). :func:`_seeded_top` orders a row's clusters by value,
    draw and index, each cluster's place independent of the others', so an entry none of whose
    candidates changed has as its new candidates the ``m`` first of its candidates and
    the changed clusters: every other cluster kept its value and came after the last
    candidate (a cluster that changed and changed back is taken as changed, which changes
    nothing). An entry with a changed candidate, or without kept bounds, is marked to be
    searched again (``cand_ok`` False); the others are at ``epoch`` afterwards.
    """
    m = cand.shape[1]
    mark = np.zeros(reach.size, dtype=np.bool_)
    up = np.empty(reach.size, dtype=np.int64)
    down = np.empty(reach.size, dtype=np.int64)
    vals = np.empty(m)
    for s in entries:
        if s < 0 or not cand_ok[s] or cand_epoch[s] >= epoch:
            continue
        if s >= bound.shape[0] or not bound_ok[s]:
            cand_ok[s] = False
            continue
        # The distinct clusters changed since the entry's epoch, split by where they are now.
        n_up = n_down = 0
        for i in range(log_ptr[cand_epoch[s]], log_ptr[epoch]):
            d = log[i]
            if mark[d]:
                continue
            mark[d] = True
            if reach[d]:
                up[n_up] = d
                n_up += 1
            else:
                down[n_down] = d
                n_down += 1
        hit = False
        for j in range(m):
            if cand[s, j] < 0 or mark[cand[s, j]]:
                hit = True
        if hit:
            cand_ok[s] = False
        else:
            t = slot_task[s]
            for j in range(m):
                vals[j] = -bound[s, cand[s, j]] if reach[cand[s, j]] else np.inf
            for i in range(n_up):
                _insert(key, t, -bound[s, up[i]], up[i], vals, cand[s])
            # One that became unreachable (+inf) can come before a last candidate only if
            # that one's value is +inf or NaN too.
            if not vals[m - 1] < np.inf:
                for i in range(n_down):
                    _insert(key, t, np.inf, down[i], vals, cand[s])
            cand_epoch[s] = epoch
        for i in range(n_up):
            mark[up[i]] = False
        for i in range(n_down):
            mark[down[i]] = False


@njit(cache=True, inline="always")
def _insert(key, t, v, c, vals, row):  # pragma: no cover - compiled
    """Put column ``c`` (value ``v``) in task ``t``'s top ``row`` if it comes before its last.

    ``vals`` holds the values of ``row``'s columns; both stay in :func:`_before`'s order.
    """
    m = row.size
    if not _before(key, t, v, c, vals[m - 1], row[m - 1]):
        return
    at = m - 1
    while at > 0 and _before(key, t, v, c, vals[at - 1], row[at - 1]):
        vals[at], row[at] = vals[at - 1], row[at - 1]
        at -= 1
    vals[at], row[at] = v, c
