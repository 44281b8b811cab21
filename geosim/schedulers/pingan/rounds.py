"""PingAn's rounds of insurance (003 §4.1, Algorithm 1) as compiled kernels.

Round 1 (efficiency-first or reliability-first), round 2 (a second copy where it raises
the score) and the resource-saving rounds (a ``c``-th copy only if it saves time and
slots). With mean rates, :func:`_insure_rates` runs them all in one compiled call.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from geosim.distributions import (
    merge_row,
    numpy_exp,
    pairwise_sum,
)
from geosim.jit import njit
from geosim.schedulers.pingan.candidates import _fill_quantiles
from geosim.schedulers.pingan.kernels import (
    _gain_order,
    _log1p_neg,
    _max,
    _neg_means,
    _order,
    _slots_of,
    _stable_order,
    _tiled,
)
from geosim.schedulers.pingan.reservations import _serve_into, _takeable


def _saving_candidates_time(atoms: np.ndarray, rows: np.ndarray, have: np.ndarray,
                            before: np.ndarray, need: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_saving_candidates` for mean times: ``before`` and ``need`` are ``1 / E[T]``.

    With ``T_Y`` the time of the held copies and ``y`` a value no ``T_Y`` exceeds (the
    smallest of their largest time atoms), ``min(T_Y, T_V) >= T_Y - (y - T_V)^+``, so
    ``E[T(c)] >= 1 / before - E[(y - T_V)^+]``: only candidates whose rate bound, the
    reciprocal (widened by 1e-9 against rounding), beats ``need`` are passed on (all of
    them when the bound is not positive).

    Returns:
        As :func:`_saving_candidates`.
    """
    k = atoms.shape[2]
    held = atoms[rows[:, None], have]                        # (n, h, K)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = 1.0 / held[:, :, 0].max(axis=1)                  # 1 / the largest slowest rate
        saved = np.maximum(y[:, None, None] - 1.0 / atoms[rows], 0.0).sum(axis=2) / k
        low = 1.0 / before[:, None] - saved                  # lower bound of E[T(c)]
        passes = ~(low > 0) | ((1.0 + 1e-9) / low > need[:, None])     # slack: rounding
    ti, ci = np.nonzero(passes)
    stacked = np.concatenate([held[ti], atoms[rows[ti], ci][:, None, :]], axis=1)
    return ti, ci, stacked


@njit(cache=True)
def _pairs(atoms, rows, col):  # pragma: no cover - compiled
    """Atoms of (first copy, copy on candidate j) per task and candidate: ``(N * M, 2, K)``."""
    m, k = atoms.shape[1], atoms.shape[2]
    out = np.empty((rows.size * m, 2, k))
    for x in range(rows.size):
        for j in range(m):
            for q in range(k):
                out[x * m + j, 0, q] = atoms[rows[x], col[x], q]
                out[x * m + j, 1, q] = atoms[rows[x], j, q]
    return out


@njit(cache=True)
def _saving_candidates(atoms, rows, have, before, need):  # pragma: no cover - compiled
    """Candidates whose bound on ``E[r(c)]`` beats ``need``, and their atoms with the held.

    The bound is ``before + mean((V - y)^+)`` with ``y`` the largest first atom of the
    held copies, the mean summed as NumPy sums the atoms (pairwise) and divided by K.

    Returns:
        Task positions and candidates passing (row-major), and ``(n, c, K)`` atoms of the
        held copies followed by the candidate.
    """
    n, m, k = rows.size, atoms.shape[1], atoms.shape[2]
    h = have.shape[1]
    ti = np.empty(n * m, dtype=np.int64)
    ci = np.empty(n * m, dtype=np.int64)
    buf = np.empty(k)
    count = 0
    for x in range(n):
        i = rows[x]
        y = _held_first(atoms, i, have, x)
        for j in range(m):
            if _saving_bound(atoms, i, j, y, before[x], buf) > need[x]:
                ti[count], ci[count] = x, j
                count += 1
    stacked = np.empty((count, h + 1, k))
    for e in range(count):
        i = rows[ti[e]]
        for z in range(h):
            for q in range(k):
                stacked[e, z, q] = atoms[i, have[ti[e], z], q]
        for q in range(k):
            stacked[e, h, q] = atoms[i, ci[e], q]
    return ti[:count], ci[:count], stacked


@njit(cache=True)
def _max_row(atoms, i, cols, h, step, v, log_surv, w, vals, use, head, end, cur,
             heap):  # pragma: no cover - compiled
    """Merge the atoms of ``max`` of copies ``cols[:h]`` of task ``i``.

    As :func:`~geosim.modeler.expected_max` does: the row of
    :func:`~geosim.modeler.expected_min` of the negated atoms in reverse order, stored
    from ``w`` on. Returns the position after it.
    """
    k = atoms.shape[2]
    for z in range(h):
        for q in range(k):
            vals[z * k + q] = -atoms[i, cols[z], k - 1 - q]
    return merge_row(vals, step, h, k, v, log_surv, w, use, head, end, cur, heap)


@njit(cache=True)
def _pair_rows(atoms, rows, col, rate, floor, step, take,
               tk):  # pragma: no cover - compiled
    """Merged atoms of the two-copy rows of round 2, for candidates round 2 may take.

    Row ``(x, j)`` is ``max`` of task ``rows[x]``'s first copy (candidate ``col[x]``) and
    a copy on candidate ``j``, as :func:`~geosim.modeler.expected_max` merges it. Left out
    are candidates no round takes: whose rate is below the task's floor, that cannot be
    taken now (:func:`_takeable`; ``take`` is whether to check, ``tk`` what to check).

    Returns:
        Atoms, log-survivals and row starts as :func:`~geosim.distributions.merged_atoms`,
        and the ``x`` and ``j`` of each row.
    """
    n1, m, k = rows.size, atoms.shape[1], atoms.shape[2]
    v = np.empty(n1 * m * 2 * k)
    log_surv = np.empty(n1 * m * 2 * k)
    ptr = np.empty(n1 * m + 1, dtype=np.int64)
    xs = np.empty(n1 * m, dtype=np.int64)
    js = np.empty(n1 * m, dtype=np.int64)
    vals = np.empty(2 * k)
    use = np.empty(2, dtype=np.bool_)
    head = np.empty(2, dtype=np.int64)
    end = np.empty(2, dtype=np.int64)
    cur = np.empty(2)
    heap = np.empty(2, dtype=np.int64)
    cols = np.empty(2, dtype=np.int64)
    n_rows = 0
    w = 0
    for x in range(n1):
        i = rows[x]
        cols[0] = col[x]
        for j in range(m):
            if not rate[i, j] >= floor[i] or (take and not _takeable(i, j, tk)):
                continue
            cols[1] = j
            ptr[n_rows], xs[n_rows], js[n_rows] = w, x, j
            n_rows += 1
            w = _max_row(atoms, i, cols, 2, step, v, log_surv, w, vals, use, head, end, cur,
                         heap)
    ptr[n_rows] = w
    return v[:w], log_surv[:w], ptr[:n_rows + 1], xs[:n_rows], js[:n_rows]


@njit(cache=True)
def _saving_bound(atoms, i, j, y, before, buf):  # pragma: no cover - compiled
    """The bound of :func:`_saving_candidates` on ``E[r(c)]`` of candidate ``j`` of task ``i``.

    ``before + mean((V - y)^+)``, the mean summed as NumPy sums the atoms and divided by K.
    """
    k = atoms.shape[2]
    for q in range(k):
        buf[q] = _max(atoms[i, j, q] - y, 0.0)
    return before + (0.0 + pairwise_sum(buf, k, k)) / k


@njit(cache=True)
def _held_first(atoms, i, have, x):  # pragma: no cover - compiled
    """The largest first atom of task ``i``'s held copies ``have[x]``."""
    y = atoms[i, have[x, 0], 0]
    for z in range(1, have.shape[1]):
        y = _max(y, atoms[i, have[x, z], 0])
    return y


@njit(cache=True)
def _saving_rows(atoms, rows, have, before, need, rate, floor, step, take,
                 tk):  # pragma: no cover - compiled
    """The candidates of :func:`_saving_candidates` a round may take, merged.

    Row ``e`` is ``max`` of the held copies and candidate ``ci[e]`` of task
    ``rows[ti[e]]``, merged as :func:`~geosim.modeler.expected_max` merges it. Left out
    are candidates no round takes, as in :func:`_pair_rows`.

    Returns:
        ``ti`` and ``ci``, then atoms, log-survivals and row starts as
        :func:`~geosim.distributions.merged_atoms`.
    """
    n, m, k = rows.size, atoms.shape[1], atoms.shape[2]
    h = have.shape[1]
    ti = np.empty(n * m, dtype=np.int64)
    ci = np.empty(n * m, dtype=np.int64)
    buf = np.empty(k)
    v = np.empty(n * m * (h + 1) * k)
    log_surv = np.empty(n * m * (h + 1) * k)
    ptr = np.empty(n * m + 1, dtype=np.int64)
    vals = np.empty((h + 1) * k)
    use = np.empty(h + 1, dtype=np.bool_)
    head = np.empty(h + 1, dtype=np.int64)
    end = np.empty(h + 1, dtype=np.int64)
    cur = np.empty(h + 1)
    heap = np.empty(h + 1, dtype=np.int64)
    cols = np.empty(h + 1, dtype=np.int64)
    count = 0
    w = 0
    for x in range(n):
        i = rows[x]
        y = _held_first(atoms, i, have, x)
        for z in range(h):
            cols[z] = have[x, z]
        for j in range(m):
            if not rate[i, j] >= floor[i] or (take and not _takeable(i, j, tk)):
                continue
            if not _saving_bound(atoms, i, j, y, before[x], buf) > need[x]:
                continue
            cols[h] = j
            ti[count], ci[count], ptr[count] = x, j, w
            count += 1
            w = _max_row(atoms, i, cols, h + 1, step, v, log_surv, w, vals, use, head, end,
                         cur, heap)
    ptr[count] = w
    return ti[:count], ci[:count], v[:w], log_surv[:w], ptr[:count + 1]


@njit(cache=True, error_model="numpy")
def _keep_exponents(rows, cand, rate, log1, dt):  # pragma: no cover - compiled
    """``log1p(-p) e`` of one copy of each task ``rows`` on each candidate (``e`` its slots).

    Its ``exp`` is the copy's trouble-exemption probability where its rate is positive.
    """
    n, m = rows.size, cand.shape[1]
    out = np.empty((n, m))
    for x in range(n):
        for j in range(m):
            out[x, j] = log1[cand[rows[x], j]] * _slots_of(rate[rows[x], j], dt)
    return out


@njit(cache=True)
def _round_one(rows, pro, rate, floor, cand, din, g_ptr, g_src, dout, job_pos, budget, free,
               res_in, res_out, gate, plan_rows, plan_cols, plan_n,
               by_round):  # pragma: no cover - compiled
    """Round 1 of :meth:`PingAn._insure`: each task's candidates by descending score.

    The score is the copy's rate (``eff``), or its trouble-exemption probability
    (``reli``: ``pro`` holds ``exp`` of :func:`_keep_exponents`; 0 where the rate is not
    positive). Tasks are served by :func:`_serve`.

    Returns:
        The tasks given a copy (in the order of ``rows``) and the candidate of each.
    """
    n, m = rows.size, cand.shape[1]
    score = np.empty((n, m))
    for x in range(n):
        for j in range(m):
            r = rate[rows[x], j]
            if pro.shape[0] == 0:
                score[x, j] = r
            else:
                score[x, j] = pro[x, j] if r > 0 else 0.0
    usable = np.ones((n, m), dtype=np.bool_)
    pos, cols = _serve_into(rows, _order(score), usable, floor, rate, cand, din, g_ptr,
                            g_src, dout, job_pos, budget, free, res_in, res_out, gate,
                            plan_rows, plan_cols, plan_n)
    by_round[0] += pos.size
    return rows[pos], cols


@njit(cache=True, error_model="numpy")
def _second_prep(rows1, col1, cand, rate, floor, atoms, filled, cand_rows, rank, g_ptr, start,
                 length, v_c, surv_c, thresholds, log1, dt, step, merge, job_pos, budget, din,
                 g_src, dout, free, res_in, res_out, gate):  # pragma: no cover - compiled
    """What round 2 needs before its ``exp``: quantile atoms, merged pairs, pro1's exponents.

    Fills in the atoms of tasks ``rows1`` (:func:`_fill_quantiles`); with ``merge`` (mean
    rates), merges the pairs of :func:`_pair_rows`. The arguments from ``job_pos`` on are
    what :func:`_takeable` checks.

    Returns:
        The pairs' log-survivals followed by ``log1p(-p) e`` of each task's first copy
        (:func:`_keep_exponents`), then the pairs' atoms, row starts, ``x`` and ``j``.
    """
    tk = (job_pos, budget, cand, din, g_ptr, g_src, dout, free, res_in, res_out, gate)
    _fill_quantiles(rows1, filled, atoms, cand, rate, floor, cand_rows, rank, g_ptr, start,
                    length, v_c, surv_c, thresholds, col1, merge, tk)
    n1 = rows1.size
    if merge:
        v, log_surv, ptr, xs, js = _pair_rows(atoms, rows1, col1, rate, floor, step, True, tk)
    else:
        v, log_surv = np.empty(0), np.empty(0)
        ptr, xs, js = np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.int64), \
            np.empty(0, dtype=np.int64)
    w = log_surv.size
    ex = np.empty(w + n1)
    ex[:w] = log_surv
    for x in range(n1):
        i, j = rows1[x], col1[x]
        ex[w + x] = log1[cand[i, j]] * _slots_of(rate[i, j], dt)
    return ex, v, ptr, xs, js


@njit(cache=True, error_model="numpy")
def _second_order(rows1, col1, ex, v, ptr, xs, js, given, merged, cand, rate, job_pos, log1,
                  fail, dt, reli, m_atoms):  # pragma: no cover - compiled
    """Round 2's tasks in order, their first copy's rate and pro, and ``E[r(2)]``.

    ``ex`` is ``exp`` of :func:`_second_prep`'s output: the pairs' survivals, then each
    first copy's trouble-exemption probability (0 where its rate is not positive).
    ``E[r(2)]`` is the pairs' expected maxima if ``merged`` (``-inf`` for pairs not
    merged), else ``given`` (mean times). Tasks are ordered by job position, then ascending
    ``pro1`` (``numpy.lexsort``). With ``reli``, also ``log1p(-fail) e`` of each pair:
    ``fail`` the per-slot failure probability of the two copies (``p`` of one cluster,
    the product on two), ``e`` the slots at ``E[r(2)]``. ``fail`` is ``p`` per cluster
    and ``log1`` its ``log1p(-p)``; the pairs' ``log1p(-p_a p_b)`` are computed for the
    pairs at hand (NumPy's, :func:`_log1p_neg`), not for every pair of clusters.

    Returns:
        ``rows1``, ``col1``, the rates and pro of the first copies, ``E[r(2)]``, all in
        that order, and the exponents (empty without ``reli``).
    """
    n1, m = rows1.size, cand.shape[1]
    w = ex.size - n1
    pro1 = np.empty(n1)
    first = np.empty(n1)
    for x in range(n1):
        first[x] = rate[rows1[x], col1[x]]
        pro1[x] = ex[w + x] if first[x] > 0 else 0.0
    if merged:
        r2 = np.full((n1, m), -np.inf)
        _neg_means(v, ex[:w], ptr, m_atoms, xs, js, r2)
    else:
        r2 = given
    jp = np.empty(n1, dtype=np.int64)
    for x in range(n1):
        jp[x] = job_pos[rows1[x]]
    by_pro = _stable_order(pro1)
    order = by_pro[np.argsort(jp[by_pro], kind="mergesort")]
    rows_s, col_s = rows1[order], col1[order]
    rate_s, pro_s = first[order], pro1[order]
    r2_s = np.empty((n1, m))
    for x in range(n1):
        for j in range(m):
            r2_s[x, j] = r2[order[x], j]
    ex2 = np.empty((n1 if reli else 0, m))
    if reli:
        for x in range(n1):
            c1 = cand[rows_s[x], col_s[x]]
            for j in range(m):
                ex2[x, j] = fail[c1] * fail[cand[rows_s[x], j]]
        _log1p_neg(ex2)
        for x in range(n1):
            c1 = cand[rows_s[x], col_s[x]]
            for j in range(m):
                keep = log1[c1] if cand[rows_s[x], j] == c1 else ex2[x, j]
                ex2[x, j] = keep * _slots_of(r2_s[x, j], dt)
    return rows_s, col_s, rate_s, pro_s, r2_s, ex2


@njit(cache=True)
def _second_serve(rows1, col1, rate1, pro1, r2, pro2, reli, rate, floor, cand, din, g_ptr,
                  g_src, dout, job_pos, budget, free, res_in, res_out, gate, plan_rows,
                  plan_cols, plan_n, by_round):  # pragma: no cover - compiled
    """Round 2 of :meth:`PingAn._insure`, from :func:`_second_order`'s output.

    A second copy is usable where its score beats the first copy's: ``E[r(2)]`` against
    the first copy's rate (``eff``), or the pro of both copies (``pro2``: ``exp`` of the
    exponents; 0 where ``E[r(2)]`` is not positive) against ``pro1`` (``reli``).
    Candidates are tried by descending score (:func:`_gain_order`, :func:`_serve`).

    Returns:
        The tasks copied, their two candidates, and ``E[r(2)]`` of each.
    """
    n1, m = rows1.size, cand.shape[1]
    if reli:
        score = np.empty((n1, m))
        for x in range(n1):
            for j in range(m):
                score[x, j] = pro2[x, j] if r2[x, j] > 0 else 0.0
        gain, order = _gain_order(score, pro1)
    else:
        gain, order = _gain_order(r2, rate1)
    pos, col2 = _serve_into(rows1, order, gain, floor, rate, cand, din, g_ptr, g_src, dout,
                            job_pos, budget, free, res_in, res_out, gate, plan_rows, plan_cols,
                            plan_n)
    by_round[1] += pos.size
    have = np.empty((pos.size, 2), dtype=np.int64)
    speed = np.empty(pos.size)
    for e in range(pos.size):
        have[e, 0], have[e, 1] = col1[pos[e]], col2[e]
        speed[e] = r2[pos[e], col2[e]]
    return rows1[pos], have, speed


@njit(cache=True)
def _saving_prep(atoms, rows, have, before, rate, floor, step, job_pos, budget, cand, din,
                 g_ptr, g_src, dout, free, res_in, res_out,
                 gate):  # pragma: no cover - compiled
    """What a resource-saving round needs before its ``exp`` (mean rates).

    ``need = (c + 1) / c * before`` (``c`` the copy to add), and the candidates of
    :func:`_saving_rows` merged (the arguments from ``job_pos`` on are what
    :func:`_takeable` checks).

    Returns:
        ``need``, ``ti``, ``ci``, the atoms, log-survivals and row starts.
    """
    c = have.shape[1] + 1
    factor = (c + 1) / c
    need = np.empty(before.size)
    for x in range(before.size):
        need[x] = factor * before[x]
    tk = (job_pos, budget, cand, din, g_ptr, g_src, dout, free, res_in, res_out, gate)
    ti, ci, v, log_surv, ptr = _saving_rows(atoms, rows, have, before, need, rate, floor, step,
                                            True, tk)
    return need, ti, ci, v, log_surv, ptr


@njit(cache=True)
def _saving_serve(rows, have, need, ti, ci, v, surv, ptr, given, merged, m_atoms, rate, floor,
                  cand, din, g_ptr, g_src, dout, job_pos, budget, free, res_in, res_out, gate,
                  plan_rows, plan_cols, plan_n, by_round):  # pragma: no cover - compiled
    """One resource-saving round (003 §4.1): the c-th copy only if it saves time and slots.

    ``E[r(c)]`` of the candidates ``(ti, ci)`` is the expected maximum of their merged
    rows if ``merged``, else ``given`` (mean times); the others cannot be taken. A
    candidate is usable where ``E[r(c)] > need``; tasks are served by :func:`_serve`,
    candidates by descending ``E[r(c)]``.

    Returns:
        The tasks copied, their candidates so far, and ``E[r(c)]`` of each; nothing when
        no candidate is usable.
    """
    n, m = rows.size, cand.shape[1]
    rc = np.full((n, m), -np.inf)
    if merged:
        _neg_means(v, surv, ptr, m_atoms, ti, ci, rc)
    else:
        for e in range(ti.size):
            rc[ti[e], ci[e]] = given[e]
    gain, order = _gain_order(rc, need)
    h = have.shape[1]
    any_gain = False
    for x in range(n):
        for j in range(m):
            any_gain = any_gain or gain[x, j]
    if not any_gain:
        return rows[:0], np.empty((0, h + 1), dtype=np.int64), np.empty(0)
    pos, cols = _serve_into(rows, order, gain, floor, rate, cand, din, g_ptr, g_src, dout,
                            job_pos, budget, free, res_in, res_out, gate, plan_rows,
                            plan_cols, plan_n)
    by_round[2] += pos.size
    out = np.empty((pos.size, h + 1), dtype=np.int64)
    speed = np.empty(pos.size)
    for e in range(pos.size):
        for z in range(h):
            out[e, z] = have[pos[e], z]
        out[e, h] = cols[e]
        speed[e] = rc[pos[e], cols[e]]
    return rows[pos], out, speed


class CandidateArrays(NamedTuple):
    """A step's tasks and their candidates as the rounds read them (see ``_Candidates``)."""

    rate: np.ndarray      # (T, M) E[r(1)] of one copy on each candidate (-inf: unreachable)
    floor: np.ndarray     # (T,) rate floor of each task
    cand: np.ndarray      # (T, M) candidate clusters
    din: np.ndarray       # (T, M) ingress throughput a copy there reserves
    g_ptr: np.ndarray     # input groups of task i: g_ptr[i]:g_ptr[i + 1]
    g_src: np.ndarray     # source cluster of each group
    dout: np.ndarray      # (G, M) egress throughput reserved at each group's source
    atoms: np.ndarray     # (T, M, K) quantile atoms of one copy's rate, where ``filled``
    filled: np.ndarray    # (T,) whether each task's atoms are filled in


class Resources(NamedTuple):
    """What a step's rounds consume (updated in place), and each task's job."""

    job_pos: np.ndarray   # position of each task's job among the admitted
    budget: np.ndarray    # slots each admitted job may still take
    free: np.ndarray      # free slots per cluster
    res_in: np.ndarray    # ingress gate bandwidth reserved per cluster
    res_out: np.ndarray   # egress gate bandwidth reserved per cluster
    gate: np.ndarray      # gate bandwidth per cluster (slightly widened)


class PlanArrays(NamedTuple):
    """The copies a step plans (appended in place) and the count per round."""

    rows: np.ndarray      # task index of each copy
    cols: np.ndarray      # candidate index of each copy
    n: np.ndarray         # copies so far (one entry)
    by_round: np.ndarray  # copies made by round 1, round 2 and rounds >= 3


class QuantileSource(NamedTuple):
    """Where :func:`_fill_quantiles` reads a task's quantile atoms (the row cache)."""

    rows: np.ndarray      # the stored row of each task and candidate
    rank: np.ndarray
    g_ptr: np.ndarray
    start: np.ndarray
    length: np.ndarray
    v: np.ndarray
    surv: np.ndarray
    thresholds: np.ndarray


@njit(cache=True)
def _insure_rates(rows, first_reli, second_reli, offer, use, plan, source, log1, fail, dt,
                  step_k):  # pragma: no cover - compiled
    """:meth:`PingAn._insure` with mean rates: the rounds' kernels in one call.

    Args:
        rows: The tasks (indices into ``offer``) the rounds consider, in order.
        first_reli: Whether round 1 scores by reliability (else by efficiency).
        second_reli: Whether round 2 does.
        offer: The candidates (:class:`CandidateArrays`).
        use: What the rounds consume (:class:`Resources`), updated in place.
        plan: Where the copies go (:class:`PlanArrays`), appended in place.
        source: The candidates' quantile source (:class:`QuantileSource`).
        log1: ``log1p(-p)`` per cluster.
        fail: ``p`` per cluster, the per-slot failure probability.
        dt: Time slot (s).
        step_k: Log-survival steps of one variable
            (:func:`~geosim.distributions.survival_steps` of ``(1, K)``).

    Each ``exp`` is NumPy's (:func:`numpy_exp`).
    """
    rate, floor, cand, din, g_ptr, g_src, dout, atoms, filled = offer
    job_pos, budget, free, res_in, res_out, gate = use
    plan_rows, plan_cols, plan_n, by_round = plan
    cand_rows, rank, g_ptr_s, start, length, v_c, surv_c, thresholds = source
    k = step_k.size
    m = cand.shape[1]
    pro = np.empty((0, 0))
    if first_reli:
        pro = _keep_exponents(rows, cand, rate, log1, dt)
        numpy_exp(pro)
    rows1, col1 = _round_one(rows, pro, rate, floor, cand, din, g_ptr, g_src, dout, job_pos,
                             budget, free, res_in, res_out, gate, plan_rows, plan_cols, plan_n,
                             by_round)
    if rows1.size == 0:
        return
    ex, v, ptr, xs, js = _second_prep(rows1, col1, cand, rate, floor, atoms, filled,
                                      cand_rows, rank, g_ptr_s, start, length, v_c, surv_c,
                                      thresholds, log1, dt, _tiled(step_k, 2), True, job_pos,
                                      budget, din, g_src, dout, free, res_in, res_out, gate)
    numpy_exp(ex)
    rows1, col1, rate1, pro1, r2, ex2 = _second_order(
        rows1, col1, ex, v, ptr, xs, js, np.empty((0, m)), True, cand, rate, job_pos, log1,
        fail, dt, second_reli, 2 * k)
    if second_reli:
        numpy_exp(ex2)
    rows_c, have, speed = _second_serve(rows1, col1, rate1, pro1, r2, ex2, second_reli, rate,
                                        floor, cand, din, g_ptr, g_src, dout, job_pos, budget,
                                        free, res_in, res_out, gate, plan_rows, plan_cols,
                                        plan_n, by_round)
    while rows_c.size:
        c = have.shape[1] + 1
        need, ti, ci, v, ex, ptr = _saving_prep(atoms, rows_c, have, speed, rate, floor,
                                                _tiled(step_k, c), job_pos, budget, cand, din,
                                                g_ptr, g_src, dout, free, res_in, res_out, gate)
        numpy_exp(ex)
        rows_c, have, speed = _saving_serve(rows_c, have, need, ti, ci, v, ex, ptr,
                                            np.empty(0), True, c * k, rate, floor, cand, din,
                                            g_ptr, g_src, dout, job_pos, budget, free, res_in,
                                            res_out, gate, plan_rows, plan_cols, plan_n,
                                            by_round)
