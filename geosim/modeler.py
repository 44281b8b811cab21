"""PingAn's performance modeler (003 §3.2, Fig. 1b) and the algebra of rate distributions.

:class:`PerformanceModel` turns what the :class:`~geosim.monitor.Monitor` saw of completed
copies into distributions a scheduler can plan with:

- processing speed ``V^P`` per cluster and task type (the paper models one distribution
  per RDD operation), from the speeds completed copies saw;
- transfer bandwidth ``V^T`` per cluster pair, captured at the download end;
- the probability ``p_m`` that cluster ``m`` becomes unreachable in a time slot, from the
  outages the resource managers saw.

Every distribution is held as ``K`` equally likely atoms, its quantiles at levels
``(i + 1/2) / K``, refreshed periodically ("PM regularly collects the execution
information", 003 §3.1). A key with fewer than ``min_samples`` recent samples falls back
to a coarser estimate: a type without samples uses its cluster's samples of every type; a
pair without samples uses the recent transfers into its destination, else all recent
transfers; and what has no samples at all uses the nominal prior (the scenario's tier
parameters, :class:`~geosim.monitor.Priors`): a normal with the nominal mean and RSD,
truncated at 0. Pooling matters for pairs: most of the ``n²`` pairs are never observed,
and the nominal link bandwidth ignores the sharing of links and gates that real transfers
see, so a prior-only pair would look far better than any observed one.

The outage rate is the gamma–Poisson posterior mean: observed onsets plus
``prior_seconds`` of nominal behaviour, over observed reachable time plus
``prior_seconds``.

Rates of a task copy are compositions of these independent discrete variables (003
§3.2): a copy's rate is ``min(V^P / work, min_s V^T_s / size_s)`` and a task with copies
``1..c`` runs at ``max`` of theirs. :func:`expected_min` and :func:`expected_max` compute
the expectations of such compositions exactly from the atoms.

Two choices of the paper are options (:data:`ESTIMATES`, :data:`LEARN_FROM`):

- ``estimate``: 003 plans with the expected rate ``r(c) = E[max_i V_i]`` and takes the
  execution time as ``datasize / r(c)`` (§3.2, eq. 6), the default ``"mean-rate"``. By
  Jensen's inequality ``1 / E[V] <= E[1 / V]``: the time is underestimated, the more the
  more the rate varies. ``"mean-time"`` plans with the rate ``1 / E[T]`` instead, ``T``
  the time of the task (per unit of it): ``E[1 / min_s X_s] = E[max_s 1 / X_s]`` for one
  copy, exact over the resources' atoms (:func:`expected_time_min`), and
  ``E[min_i 1 / V_i]`` over the copies' quantile atoms (:func:`expected_time_max`).
- ``learn_from``: 003's PM hears from finished tasks only (§3.1, Fig. 1b): the default
  ``"winners"``. ``"all"`` also learns from copies that ended without winning (killed
  siblings, copies lost to outages): their progress over their running time is a rate
  observation, credited to the resource the model expects to bound the copy
  (:meth:`PerformanceModel.observe_ended`). Such samples are kept in the model's own
  rings, next to the monitor's, so the run's monitor is not changed.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit
from scipy import stats

from geosim.monitor import Monitor

#: How expected times are estimated: ``datasize / E[rate]`` (003 §3.2) or ``E[datasize / rate]``.
ESTIMATES = ("mean-rate", "mean-time")
#: Which copies the model learns from: the winners (003 §3.1) or every copy that ran.
LEARN_FROM = ("winners", "all")


def levels(k: int) -> np.ndarray:
    """Quantile levels ``(i + 1/2) / k`` of ``k`` equally likely atoms."""
    return (np.arange(k) + 0.5) / k


def normal_atoms(rsd: np.ndarray | float, k: int) -> np.ndarray:
    """Atoms of a normal of mean 1 and standard deviation ``rsd``, truncated at 0.

    Returns:
        Shape ``rsd.shape + (k,)``, ascending along the last axis.
    """
    rsd = np.asarray(rsd, dtype=float)[..., None]
    q = levels(k)
    safe = np.where(rsd > 0, rsd, 1.0)
    atoms = stats.truncnorm.ppf(q, -1.0 / safe, np.inf, loc=1.0, scale=safe)
    return np.where(rsd > 0, atoms, 1.0)


def _sample_atoms(samples: np.ndarray, k: int) -> np.ndarray:
    """Quantile atoms of sample rows (NaN = no sample; at least one per row), last axis.

    Linear interpolation between order statistics, as ``numpy.nanquantile``, vectorised.
    """
    shape = samples.shape
    rows = np.sort(samples.reshape(-1, shape[-1]), axis=1)        # NaN sort last
    count = np.sum(~np.isnan(rows), axis=1)
    pos = levels(k)[None, :] * (count[:, None] - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, count[:, None] - 1)
    a, b = np.take_along_axis(rows, lo, axis=1), np.take_along_axis(rows, hi, axis=1)
    return (a + (pos - lo) * (b - a)).reshape(shape[:-1] + (k,))


def expected_min(atoms: np.ndarray, quantiles: bool = False
                 ) -> tuple[np.ndarray, np.ndarray | None]:
    """Expectation of the minimum of independent discrete variables, exactly.

    Args:
        atoms: Shape ``(N, R, K)``: ``N`` problems of ``R`` variables, each ``K`` equally
            likely values in ascending order; a variable whose values are all ``+inf`` is
            absent.
        quantiles: Also return ``K`` quantile atoms of each minimum.

    Returns:
        ``E[min]`` per problem, and the minimum's atoms (shape ``(N, K)``) or None.
    """
    n, r, k = atoms.shape
    if r == 1:
        return atoms[:, 0].mean(axis=1), (atoms[:, 0].copy() if quantiles else None)
    mean, q = _exact_min(atoms, 2.0 * np.arange(n, dtype=float), quantiles)
    return mean, (q if quantiles else None)


def _exact_min(atoms: np.ndarray, offsets: np.ndarray, quantiles: bool
               ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`expected_min` of ``(N, R, K)`` atoms (``R > 1``), rows at given search offsets.

    ``offsets[i]`` is ``2 i`` for the row ``i`` of one :func:`expected_min` call; a subset of
    that call's rows, given with their own offsets, gets the same results as in the call.
    """
    n, r, k = atoms.shape
    m = r * k
    v, log_surv, ptr = _merged_atoms(np.ascontiguousarray(atoms.reshape(n, m)),
                                     _survival_steps(r, k), r, k)
    surv = np.exp(log_surv)
    # The CDF rises along each row; quantile i is its first atom at level >= (i + 1/2) / K.
    return _min_moments(v, surv, ptr, m, thresholds(k), quantiles, offsets)


@functools.lru_cache(maxsize=64)
def thresholds(k: int) -> np.ndarray:
    """Levels ``(i + 1/2) / k - 1e-9`` the quantiles of a minimum are searched at (read-only)."""
    out = levels(k) - 1e-9
    out.flags.writeable = False
    return out


@njit(cache=True)
def _log_step(acc, val, step):  # pragma: no cover - compiled
    """Add an atom's log-survival step; an absent (infinite) atom adds 0.0."""
    return acc + (step if np.isfinite(val) else 0.0)


@njit(cache=True)
def _merged_atoms(vals, step, r, k):  # pragma: no cover - compiled
    """Each row's atoms in ascending order and the log-survival after each, row by row.

    A row holds ``r`` variables of ``k`` ascending atoms; they are merged, ties taken
    from the earlier variable (what a stable sort of the row gives). Absent atoms
    (``±inf``) count as the row's largest finite atom and do not lower the survival.
    Each row is merged by :func:`_merge_row`.

    Returns:
        The stored atoms and log-survivals of all rows, concatenated, and where each
        row's start (``n + 1`` entries).
    """
    n, m = vals.shape
    v = np.empty(n * m)
    log_surv = np.empty(n * m)
    out = np.empty(n + 1, dtype=np.int64)
    use = np.empty(r, dtype=np.bool_)
    head = np.empty(r, dtype=np.int64)
    end = np.empty(r, dtype=np.int64)
    cur = np.empty(r)
    heap = np.empty(r, dtype=np.int64)
    w = 0
    for i in range(n):
        out[i] = w
        w = _merge_row(vals[i], step, r, k, v, log_surv, w, use, head, end, cur, heap)
    out[n] = w
    return v[:w], log_surv[:w], out


@njit(cache=True)
def _merge_row(vals, step, r, k, v, log_surv, w, use, head, end, cur,
               heap):  # pragma: no cover - compiled
    """Merge one row of :func:`_merged_atoms` into ``v`` and ``log_surv`` from ``w`` on.

    ``vals`` holds the row's ``r`` variables of ``k`` atoms each, ``step`` the log-survival
    step of each of its atoms; ``use``, ``head``, ``end``, ``cur`` and ``heap`` are work
    space of ``r`` entries.

    Two parts of a row need not be stored. A variable with no finite atom (absent) only
    repeats the row's largest atom after every other atom below it, leaving the
    survival as it is: such variables are left out when the row's other variables
    ascend. And once the survival is 0 no later atom adds to the mean or moves a
    quantile, so the row stops there. Rows where neither holds are merged in full.

    Returns:
        The position after the row's last stored atom.
    """
    top = -np.inf
    n_use = 0
    ascending = True
    for x in range(r):
        seen = False        # a finite atom
        gap = False         # a non-finite atom, after which only the largest may come
        prev = -np.inf
        for j in range(x * k, (x + 1) * k):
            val = vals[j]
            if np.isfinite(val):
                if gap or val < prev:
                    ascending = False
                seen = True
                prev = val
                if val > top:
                    top = val
            else:
                gap = True
        use[x] = seen
        if seen:
            n_use += 1
    acc = 0.0
    if n_use == 0 or not ascending:
        # The general rule: the smallest head, the earliest variable on ties.
        for x in range(r):
            head[x] = x * k
            end[x] = (x + 1) * k
        for _ in range(r * k):
            best = -1
            best_key = 0.0
            for y in range(r):
                if head[y] < end[y]:
                    val = vals[head[y]]
                    key = val if np.isfinite(val) else top
                    if best < 0 or key < best_key:
                        best, best_key = y, key
            o = head[best]
            head[best] += 1
            v[w] = best_key
            acc = _log_step(acc, vals[o], step[o])
            log_surv[w] = acc
            w += 1
        return w
    p = 0
    for x in range(r):
        if use[x]:
            head[p] = x * k
            end[p] = (x + 1) * k
            p += 1
    for y in range(p):
        val = vals[head[y]]
        cur[y] = val if np.isfinite(val) else top
    if p == 2:
        return _merge_two(vals, step, k, v, log_surv, w, head, end, cur, top)
    if p == 3:
        return _merge_three(vals, step, k, v, log_surv, w, head, end, cur, top)
    if p <= 8:
        # Ascending variables, few: the least (head, variable) by a scan. Every key is
        # finite (an absent atom counts as ``top``), so an exhausted variable's +inf is
        # never taken while another remains.
        for _ in range(p * k):
            y = 0
            key = cur[0]
            for z in range(1, p):
                if cur[z] < key:
                    y, key = z, cur[z]
            o = head[y]
            v[w] = key
            acc = _log_step(acc, vals[o], step[o])
            log_surv[w] = acc
            w += 1
            if acc == -np.inf:
                break       # survival 0: no later atom changes the mean or a quantile
            o += 1
            head[y] = o
            if o < end[y]:
                val = vals[o]
                cur[y] = val if np.isfinite(val) else top
            else:
                cur[y] = np.inf
        return w
    # Ascending variables, many: the same order from a heap on (head, variable).
    for y in range(p):
        heap[y] = y
    for y in range(p // 2 - 1, -1, -1):
        _sift(heap, cur, y, p)
    size = p
    for _ in range(p * k):
        y = heap[0]
        o = head[y]
        v[w] = cur[y]
        acc = _log_step(acc, vals[o], step[o])
        log_surv[w] = acc
        w += 1
        if acc == -np.inf:
            break
        head[y] += 1
        if head[y] < end[y]:
            val = vals[head[y]]
            cur[y] = val if np.isfinite(val) else top
        else:
            size -= 1
            heap[0] = heap[size]
        _sift(heap, cur, 0, size)
    return w


@njit(cache=True)
def _next_key(vals, o, e, top):  # pragma: no cover - compiled
    """The key of a variable's atom ``o`` (``top`` if absent), +inf past its end ``e``."""
    if o < e:
        val = vals[o]
        return val if np.isfinite(val) else top
    return np.inf


@njit(cache=True)
def _merge_two(vals, step, k, v, log_surv, w, head, end, cur, top):  # pragma: no cover
    """The scan of :func:`_merge_row` for two ascending variables, held in registers."""
    h0, h1, e0, e1, c0, c1 = head[0], head[1], end[0], end[1], cur[0], cur[1]
    acc = 0.0
    for _ in range(2 * k):
        if c1 < c0:
            o, key = h1, c1
            h1 += 1
            c1 = _next_key(vals, h1, e1, top)
        else:
            o, key = h0, c0
            h0 += 1
            c0 = _next_key(vals, h0, e0, top)
        v[w] = key
        acc = _log_step(acc, vals[o], step[o])
        log_surv[w] = acc
        w += 1
        if acc == -np.inf:
            break
    return w


@njit(cache=True)
def _merge_three(vals, step, k, v, log_surv, w, head, end, cur,
                 top):  # pragma: no cover - compiled
    """The scan of :func:`_merge_row` for three ascending variables, held in registers."""
    h0, h1, h2, e0, e1, e2 = head[0], head[1], head[2], end[0], end[1], end[2]
    c0, c1, c2 = cur[0], cur[1], cur[2]
    acc = 0.0
    for _ in range(3 * k):
        if c1 < c0:
            if c2 < c1:
                o, key = h2, c2
                h2 += 1
                c2 = _next_key(vals, h2, e2, top)
            else:
                o, key = h1, c1
                h1 += 1
                c1 = _next_key(vals, h1, e1, top)
        elif c2 < c0:
            o, key = h2, c2
            h2 += 1
            c2 = _next_key(vals, h2, e2, top)
        else:
            o, key = h0, c0
            h0 += 1
            c0 = _next_key(vals, h0, e0, top)
        v[w] = key
        acc = _log_step(acc, vals[o], step[o])
        log_surv[w] = acc
        w += 1
        if acc == -np.inf:
            break
    return w


@njit(cache=True)
def _sift(heap, key, at, size):  # pragma: no cover - compiled
    """Restore the min-heap on ``(key[y], y)`` below position ``at`` of ``heap[:size]``."""
    while True:
        low = at
        for child in (2 * at + 1, 2 * at + 2):
            if child < size:
                a, b = heap[child], heap[low]
                if key[a] < key[b] or (key[a] == key[b] and a < b):
                    low = child
        if low == at:
            return
        heap[at], heap[low] = heap[low], heap[at]
        at = low


@njit(cache=True)
def _block_sum(a, lo, n, p):  # pragma: no cover - compiled
    """NumPy's sum of ``a[lo:lo+n]`` (``n <= 128``): eight running sums, then the rest.

    Entries from ``p`` on are +0 and are not read (adding them changes no sum).
    """
    if n < 8:
        res = 0.0
        for i in range(lo, min(lo + n, p)):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    stop = n - n % 8
    i = 8
    while i < stop and lo + i < p:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(lo + stop, min(lo + n, p)):
        res += a[i]
    return res


@njit(cache=True)
def _pairwise_sum(a, n, p):  # pragma: no cover - compiled
    """Sum of ``a[:n]`` in NumPy's pairwise order (the rounding of ``np.sum``).

    Blocks of more than 128 values are halved (the first half a multiple of 8) and the
    halves' sums added; the recursion runs on an explicit stack. Entries from ``p`` on
    are +0: a block made of them sums to +0 and is not visited.
    """
    if n <= 128:
        return _block_sum(a, 0, n, p)
    f_lo = np.empty(64, dtype=np.int64)
    f_n = np.empty(64, dtype=np.int64)
    f_stage = np.empty(64, dtype=np.int64)
    f_left = np.empty(64)
    f_lo[0], f_n[0], f_stage[0] = 0, n, 0
    depth = 1
    value = 0.0
    returned = False
    while depth > 0:
        f = depth - 1
        if returned:
            if f_stage[f] == 1:
                f_left[f] = value
                f_stage[f] = 2
                half = f_n[f] // 2
                half -= half % 8
                f_lo[depth], f_n[depth], f_stage[depth] = f_lo[f] + half, f_n[f] - half, 0
                depth += 1
                returned = False
            else:
                value = f_left[f] + value
                depth -= 1
            continue
        if f_lo[f] >= p:
            value = 0.0
            depth -= 1
            returned = True
            continue
        if f_n[f] <= 128:
            value = _block_sum(a, f_lo[f], f_n[f], p)
            depth -= 1
            returned = True
            continue
        half = f_n[f] // 2
        half -= half % 8
        f_stage[f] = 1
        f_lo[depth], f_n[depth], f_stage[depth] = f_lo[f], half, 0
        depth += 1
    return value


@njit(cache=True)
def _min_moments(v, surv, ptr, m, thresholds, quantiles, offsets):  # pragma: no cover
    """Mean and quantile atoms of each row's minimum from :func:`_merged_atoms`.

    The mean is :func:`_row_mean`, the quantiles :func:`_row_quantiles` at the row's
    offset ``offsets[i]`` (``2i`` in row ``i``, as one search over all rows sees it).
    """
    n = ptr.size - 1
    k = thresholds.size
    mean = np.empty(n)
    q = np.empty((n if quantiles else 0, k))
    terms = np.zeros(m)
    for i in range(n):
        mean[i] = _row_mean(v, surv, ptr[i], ptr[i + 1], m, terms)
        if quantiles:
            _row_quantiles(v, surv, ptr[i], ptr[i + 1], thresholds, offsets[i], q[i])
    return mean, q


@njit(cache=True)
def _row_mean(v, surv, lo, hi, m, terms):  # pragma: no cover - compiled
    """Mean of one row's minimum: ``v_0 + sum_j (v_j - v_{j-1}) S_{j-1}``.

    The row is ``v[lo:hi]`` with survivals ``surv[lo:hi]``, out of ``m`` atoms in all;
    the sum runs over all ``m`` in NumPy's order (atoms a row does not store add
    nothing). ``terms`` is work space of ``m`` zeros, left as zeros.
    """
    p = hi - lo
    terms[0] = 0.0
    for j in range(1, p):
        terms[j] = (v[lo + j] - v[lo + j - 1]) * surv[lo + j - 1]
    total = _block_sum(terms, 0, m, p) if m <= 128 else _pairwise_sum(terms, m, p)
    mean = v[lo] + (0.0 + total)
    for j in range(p):
        terms[j] = 0.0
    return mean


@njit(cache=True)
def _row_quantiles(v, surv, lo, hi, thresholds, offset, q):  # pragma: no cover - compiled
    """Quantile atoms of one row's minimum (``v[lo:hi]``, survivals ``surv[lo:hi]``) in ``q``.

    Quantile ``c`` is the first atom whose CDF ``1 - S`` (offset by ``offset``) reaches
    ``thresholds[c]`` (offset alike), else the row's last atom.
    """
    p = hi - lo
    j = 0
    for c in range(thresholds.size):
        level = thresholds[c] + offset
        while j < p and not (1.0 - surv[lo + j]) + offset >= level:
            j += 1
        q[c] = v[lo + j] if j < p else v[hi - 1]


def quantile_bounds(k: int, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Log-survival bounds that settle :func:`expected_min`'s quantile test without ``exp``.

    In a call of ``n_rows`` rows, quantile ``c`` of a row is its first atom whose CDF
    ``1 - exp(log S)`` reaches level ``(c + 1/2) / K - 1e-9`` (both offset by twice the row
    index). Whatever the rounding of ``exp`` and of the offsets, the test holds when
    ``log S < lo[c]`` and fails when ``log S > hi[c]``; between the two it must be made
    exactly (:func:`_row_min_quantiles` reports it).

    Returns:
        ``lo`` and ``hi``, shape ``(K,)``.
    """
    thresholds = levels(k) - 1e-9
    # Rounding of the offset sums (one unit in the last place at the largest offset) and
    # of exp and 1 - S (a few units at 1), relative to the smallest survival 1 - level.
    slack = 8.0 * (float(np.spacing(2.0 * n_rows + 2.0)) + 1e-15) / float(1.0 - thresholds[-1])
    mid = np.log(1.0 - thresholds)
    return mid - slack, mid + slack


@njit(cache=True)
def _row_min_quantiles(vals, nv, k, step, lo, hi, q, use, head, cur,
                       sorted_):  # pragma: no cover - compiled
    """Quantile atoms of the minimum of one row's variables, as :func:`expected_min` gives.

    ``vals[:nv]`` are the row's variables (``K`` atoms each, ascending; ``±inf``/NaN for
    absent ones), ``step`` the log-survival steps of ranks ``0..K-1``, ``lo``/``hi`` from
    :func:`quantile_bounds`; ``use``, ``head`` and ``cur`` are work space of ``nv``
    entries. ``sorted_`` promises that each variable's atoms do not decrease and that
    none is NaN or ``-inf`` (only a tail of ``+inf`` may end a variable): the check for
    :func:`_merged_atoms`' full merge then reads a variable's first and last atoms only.
    The atoms are merged in :func:`_merged_atoms`' order (a scan of the heads picks what
    its heap does: the least ``(value, variable)``) and the log-survival accumulated
    alike; each quantile is settled against the bounds as the merge passes it, and the
    merge stops once all are settled.

    Returns:
        Whether the row was settled (``q`` then holds its ``K`` quantiles). False when
        :func:`_merged_atoms` would merge the row in full (no variable present, or a
        variable not ascending) or a quantile test falls between the bounds; the caller
        then takes the row through :func:`expected_min`'s own path.
    """
    top = -np.inf
    n_use = 0
    if sorted_:
        for x in range(nv):
            if np.isfinite(vals[x, 0]):
                use[n_use] = x
                n_use += 1
                if not np.isfinite(vals[x, k - 1]):
                    sorted_ = False         # a tail of +inf: find its last finite atom
                    break
                if vals[x, k - 1] > top:
                    top = vals[x, k - 1]
    if not sorted_:
        top = -np.inf
        n_use = 0
    for x in range(0 if not sorted_ else nv, nv):
        seen = False
        gap = False
        prev = -np.inf
        for j in range(k):
            val = vals[x, j]
            if np.isfinite(val):
                if gap or val < prev:
                    return False
                seen = True
                prev = val
            else:
                gap = True
        if seen:
            use[n_use] = x
            n_use += 1
            if prev > top:
                top = prev
    if n_use == 0:
        return False
    for y in range(n_use):
        head[y] = 0
        val = vals[use[y], 0]
        cur[y] = val if np.isfinite(val) else top
    acc = 0.0
    c = 0
    last = 0.0
    live = n_use
    for _ in range(n_use * k):
        best = 0
        best_key = cur[0]
        for y in range(1, live):
            if cur[y] < best_key:
                best, best_key = y, cur[y]
        x = use[best]
        o = head[best]
        acc = _log_step(acc, vals[x, o], step[o])
        last = best_key
        while c < k:
            if acc < lo[c]:
                q[c] = best_key
                c += 1
            elif acc > hi[c]:
                break
            else:
                return False
        if c == k:
            return True
        if acc == -np.inf:
            break
        o += 1
        if o < k:
            head[best] = o
            val = vals[x, o]
            cur[best] = val if np.isfinite(val) else top
        else:
            # Exhausted: drop it, keeping the order of the others (ties go to the earlier).
            for y in range(best, live - 1):
                use[y], head[y], cur[y] = use[y + 1], head[y + 1], cur[y + 1]
            live -= 1
    while c < k:
        q[c] = last
        c += 1
    return True


@functools.lru_cache(maxsize=64)
def _survival_steps(r: int, k: int) -> np.ndarray:
    """Log-factor by which passing the j-th smallest atom of a variable cuts its survival.

    ``log((K-j-1)/(K-j))`` for ``j = 0..K-1``, repeated for ``r`` variables (read-only).
    """
    rank = np.tile(np.arange(k, dtype=float), r)
    with np.errstate(divide="ignore"):
        step = np.log(k - rank - 1.0) - np.log(k - rank)
    step.flags.writeable = False
    return step


def expected_max(atoms: np.ndarray) -> np.ndarray:
    """Expectation of the maximum of independent discrete variables (``-inf``: absent).

    Args:
        atoms: Shape ``(N, R, K)``, ascending along the last axis.
    """
    return -expected_min(-atoms[..., ::-1])[0]


def _reciprocal(atoms: np.ndarray, absent: float, at_zero: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """Atoms of ``1 / X`` (ascending) of rate atoms (ascending, ``±inf`` absent).

    Returns:
        The time atoms (``absent`` for absent variables, ``at_zero`` for rate atoms
        ``<= 0``) and whether each variable has a rate atom ``<= 0``, shape ``(N, R)``.
    """
    present = np.isfinite(atoms)
    zero = present & (atoms <= 0.0)
    times = np.full(atoms.shape, absent)
    np.divide(1.0, atoms, out=times, where=present & ~zero)
    times[zero] = at_zero
    return np.ascontiguousarray(times[..., ::-1]), zero.any(axis=2)


def expected_time_min(atoms: np.ndarray) -> np.ndarray:
    """``E[1 / min_r X_r]``: the expected time (per unit) of a copy whose rate is a minimum.

    ``1 / min_r X_r = max_r 1 / X_r``, computed exactly over the atoms like
    :func:`expected_max`.

    Args:
        atoms: Shape ``(N, R, K)``: rate atoms, ascending; a variable whose atoms are all
            ``+inf`` is absent (it bounds nothing), as in :func:`expected_min`.

    Returns:
        ``E[1 / min]`` per problem; ``inf`` where a present variable has a rate atom
        ``<= 0`` (the time is then infinite with positive probability).
    """
    times, zero = _reciprocal(atoms, -np.inf, 0.0)
    out = expected_max(times)
    out[zero.any(axis=1)] = np.inf
    return out


def expected_time_max(atoms: np.ndarray) -> np.ndarray:
    """``E[1 / max_r X_r]``: the expected time (per unit) of a task run by several copies.

    ``1 / max_r X_r = min_r 1 / X_r``, computed exactly over the atoms like
    :func:`expected_min`.

    Args:
        atoms: Shape ``(N, R, K)``: rate atoms, ascending; a variable whose atoms are all
            ``-inf`` is absent, as in :func:`expected_max`.

    Returns:
        ``E[1 / max]`` per problem; ``inf`` where every present variable has a rate atom
        ``<= 0`` (then no copy finishes with positive probability).
    """
    # A rate atom of 0 is an infinite time. expected_min takes an infinite atom as the
    # row's largest finite one, which leaves the minimum unchanged as long as some
    # variable of the row is finite throughout; rows where none is are set apart.
    times, zero = _reciprocal(atoms, np.inf, np.inf)
    out = expected_min(times)[0]
    present = np.isfinite(atoms).any(axis=2)
    out[np.all(zero | ~present, axis=1) & present.any(axis=1)] = np.inf
    return out


class PerformanceModel:
    """Distributions of speed, bandwidth and unreachability learned from observations.

    Args:
        monitor: The run's observations (with its :class:`~geosim.monitor.Priors`).
        gate: Gate bandwidth per cluster (MB/s); caps the nominal bandwidth of a pair.
        dt: Time slot (s), the unit of the outage probability.
        atoms: Atoms ``K`` per distribution.
        min_samples: Samples a key needs before its own observations replace the fallback.
        prior_seconds: Weight of the nominal outage rate, in seconds of observation.
        refresh: Seconds between refreshes of the distributions.
        estimate: ``"mean-rate"`` (003 §3.2: plan with ``E[rate]``, time ``1 / E[rate]``)
            or ``"mean-time"`` (plan with ``1 / E[time]``); see :meth:`copy_rate`.
        learn_from: ``"winners"`` (003: completed copies only) or ``"all"`` (also the
            copies reported to :meth:`observe_ended`).

    Attributes:
        speed_mean: ``E[V^P]`` per cluster and type (MIPS).
        bandwidth_mean: ``E[V^T]`` per cluster pair (MB/s).
        speed_hmean: Harmonic mean ``1 / E[1 / V^P]`` per cluster and type (MIPS).
        bandwidth_hmean: Harmonic mean ``1 / E[1 / V^T]`` per cluster pair (MB/s).
    """

    def __init__(self, monitor: Monitor, gate: np.ndarray, dt: float, atoms: int = 16,
                 min_samples: int = 5, prior_seconds: float = 600.0, refresh: float = 30.0,
                 estimate: str = "mean-rate", learn_from: str = "winners"):
        if monitor.priors is None:
            raise ValueError("the monitor has no priors for the performance model")
        if estimate not in ESTIMATES:
            raise ValueError(f"estimate must be one of {', '.join(ESTIMATES)}, got {estimate!r}")
        if learn_from not in LEARN_FROM:
            raise ValueError(f"learn_from must be one of {', '.join(LEARN_FROM)}, "
                             f"got {learn_from!r}")
        self.estimate, self.learn_from = estimate, learn_from
        # Rate observations of copies that ended without winning (learn_from = "all").
        self._ended = (Monitor(monitor.n_clusters, monitor.n_types, monitor.window)
                       if learn_from == "all" else None)
        self.monitor, self.dt, self.k = monitor, dt, atoms
        self.min_samples, self.prior_seconds, self.refresh_interval = (
            min_samples, prior_seconds, refresh)
        pri = monitor.priors
        n, types = monitor.n_clusters, monitor.n_types
        self._speed_prior = pri.speed_mean[:, None] * normal_atoms(pri.speed_rsd, atoms)
        pair_mean = np.minimum(pri.bandwidth_mean, np.minimum.outer(gate, gate))
        self._bw_prior = pair_mean.reshape(-1, 1) * normal_atoms(pri.bandwidth_rsd, atoms)
        self.speed = np.repeat(self._speed_prior[:, None, :], types, axis=1)
        self.bandwidth = self._bw_prior.copy()
        self._speed_seen = np.zeros((n, types), dtype=np.int64)
        self._bw_seen = np.zeros(n * n, dtype=np.int64)
        # What the last bandwidth refresh built on: sample counts of the pooled rows, the
        # pooled atoms, each destination's fallback (see _refresh_bandwidth), the atoms
        # and their means.
        self._into_seen = np.zeros(n + 1, dtype=np.int64)
        self._pooled = np.zeros((n + 1, atoms))
        self._fallback = np.zeros(n, dtype=np.int64)
        self._next = -np.inf
        self.version = 0
        self.speed_mean = self.speed.mean(axis=2)
        self._bw_mean = self.bandwidth.mean(axis=1)
        self._bw_prior_mean = self._bw_mean.copy()
        self._bw_atoms = self.bandwidth
        self.bandwidth_mean = self._bw_mean.reshape(n, n)
        self._hmeans: tuple[np.ndarray, np.ndarray] | None = None
        self.outage_probability = self._outage_probability()

    def refresh(self, now: float) -> bool:
        """Bring the distributions up to date if ``refresh`` seconds have passed.

        Returns:
            Whether anything was recomputed.
        """
        if now < self._next:
            return False
        self._next = now + self.refresh_interval
        self._refresh_speed()
        self._refresh_bandwidth()
        self._hmeans = None
        self.outage_probability = self._outage_probability()
        self.version += 1
        return True

    @property
    def speed_hmean(self) -> np.ndarray:
        """Harmonic mean ``1 / E[1 / V^P]`` per cluster and type (see :meth:`_harmonic_means`)."""
        return self._harmonic_means()[0]

    @property
    def bandwidth_hmean(self) -> np.ndarray:
        """Harmonic mean ``1 / E[1 / V^T]`` per cluster pair (see :meth:`_harmonic_means`)."""
        return self._harmonic_means()[1]

    def _harmonic_means(self) -> tuple[np.ndarray, np.ndarray]:
        """``1 / E[1 / V]`` of every speed and bandwidth distribution (0 if an atom is 0).

        Computed when first asked for after a refresh (only ``mean-time`` planning uses
        them) and kept until the next one.
        """
        if self._hmeans is None:
            with np.errstate(divide="ignore"):
                self._hmeans = (1.0 / np.mean(1.0 / self.speed, axis=2),
                                (1.0 / np.mean(1.0 / self.bandwidth, axis=1)).reshape(
                                    self.bandwidth_mean.shape))
        return self._hmeans

    def _tables(self, mine: tuple[np.ndarray, np.ndarray], theirs: tuple | None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Samples, sample counts (to detect change) and samples in use, of one kind.

        ``mine`` is a table of the monitor, ``theirs`` the same table of the ended copies
        (None when learning from winners): with it, each key's samples are the recent
        ``window`` of each source side by side.
        """
        samples, counts = mine
        window = self.monitor.window
        if theirs is None:
            return samples, counts, np.minimum(counts, window)
        more, more_counts = theirs
        return (np.concatenate([samples, more], axis=-1), counts + more_counts,
                np.minimum(counts, window) + np.minimum(more_counts, window))

    def _refresh_speed(self) -> None:
        samples, counts, used = self._tables(
            self.monitor.speed_table(),
            None if self._ended is None else self._ended.speed_table())
        changed = np.flatnonzero(np.any(counts != self._speed_seen, axis=1))
        if changed.size == 0:
            return
        self._speed_seen[changed] = counts[changed]
        n = used[changed]
        atoms = np.repeat(self._speed_prior[changed][:, None, :], n.shape[1], axis=1)
        pooled = n.sum(axis=1) >= self.min_samples
        if pooled.any():
            flat = samples[changed[pooled]].reshape(int(pooled.sum()), -1)
            atoms[pooled] = _sample_atoms(flat, self.k)[:, None, :]
        own = n >= self.min_samples
        if own.any():
            atoms[own] = _sample_atoms(samples[changed][own], self.k)
        self.speed[changed] = atoms
        self.speed_mean[changed] = atoms.mean(axis=2)

    def _refresh_bandwidth(self) -> None:
        ended = self._ended
        samples, counts, used = self._tables(
            self.monitor.bandwidth_table(), None if ended is None else ended.bandwidth_table())
        if np.array_equal(counts, self._bw_seen):
            return
        changed = counts != self._bw_seen
        self._bw_seen = counts.copy()
        n = self.monitor.n_clusters
        # Fallback of a pair without its own samples: transfers into its destination
        # (kind 2), else all transfers (1), else the nominal prior (0).
        into, into_counts, into_used = self._tables(
            self.monitor.bandwidth_into_table(),
            None if ended is None else ended.bandwidth_into_table())
        enough = into_used >= self.min_samples
        # A row's atoms depend on its own samples only (_sample_atoms works row by row),
        # and samples change only with their counts: rows are redone where those did,
        # the others kept from the refresh that made them.
        redo = enough & (into_counts != self._into_seen)
        self._into_seen = into_counts.copy()
        if redo.any():
            self._pooled[redo] = _sample_atoms(into[redo], self.k)
        kind = np.where(enough[:n], 2, 1 if enough[n] else 0)
        moved = (kind != self._fallback) | ((kind == 2) & redo[:n]) | ((kind == 1) & redo[n])
        self._fallback = kind
        own = used >= self.min_samples
        rows = np.flatnonzero(changed | (~own & np.tile(moved, n)))     # pair p: dst p % n
        if rows.size == 0:
            return
        atoms, mean = self._bw_atoms.copy(), self._bw_mean.copy()
        # Means row by row, as over all rows: a fallback row has its source row's mean.
        _fill_fallback(atoms, mean, rows[~own[rows]], kind, self._pooled,
                       self._pooled.mean(axis=1), self._bw_prior, self._bw_prior_mean)
        mine = rows[own[rows]]
        if mine.size:
            atoms[mine] = _sample_atoms(samples[mine], self.k)
            mean[mine] = atoms[mine].mean(axis=1)
        self._bw_atoms, self._bw_mean = atoms, mean
        self.bandwidth, self.bandwidth_mean = atoms, mean.reshape(n, n)

    def _outage_probability(self) -> np.ndarray:
        mon, tau = self.monitor, self.prior_seconds
        rate = (mon.outage_onsets + mon.priors.outage_rate * tau) / (mon.reachable_time + tau)
        return -np.expm1(-rate * self.dt)

    def pair_atoms(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Bandwidth atoms (MB/s) from ``src[i]`` to ``dst[i]``; shape ``src.shape + (K,)``."""
        return self.bandwidth[np.asarray(src) * self.monitor.n_clusters + np.asarray(dst)]

    # ------------------------------------------------------------------ planning rates
    def copy_rate(self, atoms: np.ndarray) -> np.ndarray:
        """The rate a scheduler plans with for a copy whose rate is ``min_r X_r``.

        ``"mean-rate"``: ``E[min_r X_r]`` (003's ``r(1)``); ``"mean-time"``:
        ``1 / E[1 / min_r X_r]``, the reciprocal of the expected time (0 when it is
        infinite). Either way the expected time is taken as ``1 / rate``.

        Args:
            atoms: Shape ``(N, R, K)`` as for :func:`expected_min`.
        """
        if self.estimate == "mean-rate":
            return expected_min(atoms)[0]
        with np.errstate(divide="ignore"):
            return 1.0 / expected_time_min(atoms)

    def task_rate(self, atoms: np.ndarray) -> np.ndarray:
        """The rate a scheduler plans with for a task run by copies of rates ``X_r``.

        ``"mean-rate"``: ``E[max_r X_r]`` (003's ``r(c)``); ``"mean-time"``:
        ``1 / E[1 / max_r X_r]``.

        Args:
            atoms: Shape ``(N, R, K)`` as for :func:`expected_max`.
        """
        if self.estimate == "mean-rate":
            return expected_max(atoms)
        with np.errstate(divide="ignore"):
            return 1.0 / expected_time_max(atoms)

    # ------------------------------------------------------------------ ended copies
    def observe_ended(self, cluster: np.ndarray, task_type: np.ndarray, work: np.ndarray,
                      rate: np.ndarray, g_ptr: np.ndarray, g_src: np.ndarray,
                      g_size: np.ndarray) -> None:
        """Learn from copies that ended without winning (only with ``learn_from="all"``).

        A copy's observed rate ``rho`` (the fraction of its task done per second of its
        running time) is ``min(V^P / work, min_s V^T_s / size_s)`` as the copy saw them:
        one observation of whichever bound the copy. It is credited to the bound the
        model expects to be the tightest, ``E[V^P] / work`` or ``E[V^T_{s,m}] / size_s``
        over the copy's remote input groups, as ``rho * work`` (a speed sample, MIPS) or
        ``rho * size_s`` (a bandwidth sample of the pair ``s -> m``, MB/s). The samples
        take effect at the next refresh. Where the model's guess of the bottleneck is
        wrong the sample is a lower bound of the other resource, not a draw of it.

        Args:
            cluster: Cluster of each copy.
            task_type: Type of each copy's task.
            work: Mean work (MI) of each copy's task.
            rate: Observed rate of each copy (1/s); non-finite or negative ones are ignored.
            g_ptr: Input groups of copy ``i``: ``g_ptr[i]:g_ptr[i + 1]`` (as
                :meth:`~geosim.view.SchedulerView.input_group_ptr` of their tasks).
            g_src: Source cluster of each group.
            g_size: Size (MB) of the largest input of each group.
        """
        if self._ended is None or len(cluster) == 0:
            return
        cluster = np.asarray(cluster, dtype=np.int64)
        task_type = np.asarray(task_type, dtype=np.int64)
        work, rate = np.asarray(work, dtype=float), np.asarray(rate, dtype=float)
        g_ptr = np.asarray(g_ptr, dtype=np.int64)
        g_src, g_size = np.asarray(g_src, dtype=np.int64), np.asarray(g_size, dtype=float)
        ok = np.isfinite(rate) & (rate >= 0)
        group = _bottleneck(cluster, task_type, work, g_ptr, g_src, g_size, self.speed_mean,
                            self.bandwidth_mean)
        proc = np.flatnonzero(ok & (group < 0))
        self._ended.record_copies(cluster[proc], task_type[proc], rate[proc] * work[proc])
        tr = np.flatnonzero(ok & (group >= 0))
        g = group[tr]
        self._ended.record_transfers(g_src[g], cluster[tr], rate[tr] * g_size[g])


@njit(cache=True, error_model="numpy")
def _bottleneck(cluster, task_type, work, g_ptr, g_src, g_size, speed_mean,
                bw_mean):  # pragma: no cover - compiled
    """Per copy, the input group whose expected rate bounds it, or -1 for processing.

    Processing bounds at ``speed_mean / work``; a remote group (source not the copy's
    cluster) at ``bw_mean[source, cluster] / size``; ties go to processing, then to the
    earlier group.
    """
    out = np.full(cluster.size, -1, dtype=np.int64)
    for i in range(cluster.size):
        c = cluster[i]
        best = speed_mean[c, task_type[i]] / work[i]
        for g in range(g_ptr[i], g_ptr[i + 1]):
            if g_src[g] != c:
                r = bw_mean[g_src[g], c] / g_size[g]
                if r < best:
                    best = r
                    out[i] = g
    return out


@njit(cache=True)
def _fill_fallback(atoms, mean, rows, kind, pooled, pooled_mean, prior,
                   prior_mean):  # pragma: no cover - compiled
    """Give pairs ``rows`` (``src * n + dst``) the atoms and mean of their fallback.

    The fallback of destination ``dst`` is its pooled row (``kind`` 2), the pooled row of
    all transfers (1, the last), or the pair's prior (0).
    """
    n, k = kind.size, atoms.shape[1]
    for e in range(rows.size):
        p = rows[e]
        how = kind[p % n]
        if how == 0:
            for q in range(k):
                atoms[p, q] = prior[p, q]
            mean[p] = prior_mean[p]
        else:
            row = p % n if how == 2 else n
            for q in range(k):
                atoms[p, q] = pooled[row, q]
            mean[p] = pooled_mean[row]
