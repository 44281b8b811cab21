"""Gate reservations of PingAn's copies (003 eq. 10–11) and the serving of tasks.

A copy reserves the expected throughput of its remote inputs at its cluster's ingress
gate and at each source's egress gate while it is live; a task is served by the first of
its candidates (in a round's order) with a free slot, a job promise left and gate
bandwidth for it.
"""

from __future__ import annotations

import numpy as np

from geosim.jit import njit


@njit(cache=True)
def _hold(rows, cols, ids, cand, din, g_ptr, g_src, dout, in_copy, in_dst, in_need,
          out_copy, out_src, out_amount, n_held):  # pragma: no cover - compiled
    """Append the reservations of the launched remote copies (``din > 0``) to the held ones.

    The held ingress (copy, cluster, MB/s) and egress (copy, source, MB/s) entries are
    the first ``n_held[0]`` and ``n_held[1]`` of their arrays; nothing is appended unless
    all the new ones fit.

    Returns:
        The ingress and egress entries held with the new ones.
    """
    a, b = n_held[0], n_held[1]
    n_in, n_out = a, b
    for x in range(rows.size):
        if din[rows[x], cols[x]] > 0:
            n_in += 1
            n_out += g_ptr[rows[x] + 1] - g_ptr[rows[x]]
    if n_in > in_copy.size or n_out > out_copy.size:
        return n_in, n_out
    for x in range(rows.size):
        i, j = rows[x], cols[x]
        if not din[i, j] > 0:
            continue
        in_copy[a], in_dst[a], in_need[a] = ids[x], cand[i, j], din[i, j]
        a += 1
        for g in range(g_ptr[i], g_ptr[i + 1]):
            out_copy[b], out_src[b], out_amount[b] = ids[x], g_src[g], dout[g, j]
            b += 1
    n_held[0], n_held[1] = a, b
    return n_in, n_out


def _held_arrays(n_in: int, n_out: int) -> tuple[np.ndarray, ...]:
    """Empty reservation arrays (see :func:`_hold`) for ``n_in`` and ``n_out`` entries."""
    return (np.empty(n_in, dtype=np.int64), np.empty(n_in, dtype=np.int64), np.empty(n_in),
            np.empty(n_out, dtype=np.int64), np.empty(n_out, dtype=np.int64),
            np.empty(n_out))


@njit(cache=True)
def _not_live(copies, live):  # pragma: no cover - compiled
    """Whether each of ``copies`` is missing from ``live`` (ascending).

    ``copies`` mostly ascend too (ids grow and removal keeps order): a merge walk, with a
    binary search wherever they do not.
    """
    out = np.empty(copies.size, dtype=np.bool_)
    at = 0
    for x in range(copies.size):
        if x > 0 and copies[x] < copies[x - 1]:
            at = np.searchsorted(live, copies[x])
        while at < live.size and live[at] < copies[x]:
            at += 1
        out[x] = not (at < live.size and live[at] == copies[x])
    return out


@njit(cache=True)
def _keep_held(copy, where, amount, ended, res):  # pragma: no cover - compiled
    """Give back to ``res`` what ended copies held (in order); keep the others' in place.

    Returns:
        How many entries are kept (first, in their order).
    """
    w = 0
    for x in range(copy.size):
        if ended[x]:
            res[where[x]] -= amount[x]
        else:
            copy[w], where[w], amount[w] = copy[x], where[x], amount[x]
            w += 1
    return w


@njit(cache=True)
def _unhold(live, in_copy, in_dst, in_need, out_copy, out_src, out_amount, n_held, res_in,
            res_out):  # pragma: no cover - compiled
    """Subtract the reservations of ended copies (not in ``live``, ascending) in order.

    The held entries (see :func:`_hold`) that remain are kept in place, ``n_held`` updated.
    """
    n_in, n_out = n_held[0], n_held[1]
    ended = _not_live(in_copy[:n_in], live)
    any_ended = False
    for x in range(n_in):
        any_ended = any_ended or ended[x]
    if not any_ended:
        return
    n_held[0] = _keep_held(in_copy[:n_in], in_dst[:n_in], in_need[:n_in], ended, res_in)
    # Every copy holding egress also holds ingress: it has ended if it is not live.
    n_held[1] = _keep_held(out_copy[:n_out], out_src[:n_out], out_amount[:n_out],
                           _not_live(out_copy[:n_out], live), res_out)
    if n_held[0] == 0:      # clear rounding residue
        res_in[:] = 0.0
        res_out[:] = 0.0


@njit(cache=True)
def _can_take(i, col, cand, din, g_ptr, g_src, dout, free, res_in, res_out,
              gate):  # pragma: no cover - compiled
    """Whether candidate ``col`` of task ``i`` has a free slot and gates to carry the copy.

    The checks of :func:`_serve`. A step's rounds only take slots and gate bandwidth, so
    a candidate failing them now fails them for the rest of the step.
    """
    c = cand[i, col]
    if free[c] <= 0 or res_in[c] + din[i, col] > gate[c]:
        return False
    for g in range(g_ptr[i], g_ptr[i + 1]):
        if res_out[g_src[g]] + dout[g, col] > gate[g_src[g]]:
            return False
    return True


@njit(cache=True)
def _takeable(i, col, tk):  # pragma: no cover - compiled
    """Whether task ``i``'s job is within its promise and :func:`_can_take` holds.

    ``tk`` is ``(job_pos, budget, cand, din, g_ptr, g_src, dout, free, res_in, res_out,
    gate)``.
    """
    job_pos, budget, cand, din, g_ptr, g_src, dout, free, res_in, res_out, gate = tk
    return budget[job_pos[i]] > 0 and _can_take(i, col, cand, din, g_ptr, g_src, dout, free,
                                                res_in, res_out, gate)


@njit(cache=True)
def _serve(rows, order, usable, floor, rate, cand, din, g_ptr, g_src, dout, job_pos,
           budget, free, res_in, res_out, gate):  # pragma: no cover - compiled
    """The sequential rule of :meth:`PingAn._round`, consuming ``budget``, ``free`` and gates.

    Returns:
        Positions in ``rows`` of the tasks served and the candidate each took.
    """
    pos = np.empty(rows.size, dtype=np.int64)
    cols = np.empty(rows.size, dtype=np.int64)
    n_out = 0
    for n in range(rows.size):
        i = rows[n]
        job = job_pos[i]
        if budget[job] <= 0:
            continue
        lo, hi = g_ptr[i], g_ptr[i + 1]
        for j in range(order.shape[1]):
            col = order[n, j]
            if not usable[n, col] or not rate[i, col] >= floor[i]:
                continue
            if not _can_take(i, col, cand, din, g_ptr, g_src, dout, free, res_in, res_out,
                             gate):
                continue
            c = cand[i, col]
            free[c] -= 1
            budget[job] -= 1
            res_in[c] += din[i, col]
            for g in range(lo, hi):
                res_out[g_src[g]] += dout[g, col]
            pos[n_out], cols[n_out] = n, col
            n_out += 1
            break
    return pos[:n_out], cols[:n_out]


@njit(cache=True)
def _serve_into(rows, order, usable, floor, rate, cand, din, g_ptr, g_src, dout, job_pos,
                budget, free, res_in, res_out, gate, plan_rows, plan_cols,
                plan_n):  # pragma: no cover - compiled
    """:func:`_serve`, appending each copy to the plan as (task index, candidate).

    Returns:
        As :func:`_serve`.
    """
    pos, cols = _serve(rows, order, usable, floor, rate, cand, din, g_ptr, g_src, dout,
                       job_pos, budget, free, res_in, res_out, gate)
    at = plan_n[0]
    for e in range(pos.size):
        plan_rows[at + e], plan_cols[at + e] = rows[pos[e]], cols[e]
    plan_n[0] = at + pos.size
    return pos, cols


@njit(cache=True)
def _targets(rows, cols, tasks, cand):  # pragma: no cover - compiled
    """The task and cluster of each planned copy."""
    t = np.empty(rows.size, dtype=np.int64)
    c = np.empty(rows.size, dtype=np.int64)
    for e in range(rows.size):
        t[e], c[e] = tasks[rows[e]], cand[rows[e], cols[e]]
    return t, c
