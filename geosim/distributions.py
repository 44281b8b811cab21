"""Algebra of independent discrete distributions, each held as ``K`` equally likely atoms.

A distribution is ``K`` values in ascending order, its quantiles at levels
``(i + 1/2) / K`` (:func:`levels`). The functions here build such atoms (of a truncated
normal, :func:`normal_atoms`; of samples, :func:`sample_atoms`) and compose independent
variables exactly: :func:`expected_min` and :func:`expected_max` give the expectation of
the minimum or maximum of several variables, and optionally ``K`` quantile atoms of it;
:func:`expected_time_min` and :func:`expected_time_max` the expectation of its reciprocal.

The exact minimum merges the variables' atoms into one ascending row and tracks the
survival function along it. The compiled kernels that do so are public for schedulers
that keep merged rows between steps (PingAn's row cache, Mantri's estimates):
:func:`merged_atoms` and :func:`merge_row` merge rows, :func:`survival_steps` gives the
log-survival steps they use, :func:`row_mean` and :func:`row_quantiles` read a merged
row, :func:`row_min_quantiles` merges and reads in one pass, :func:`exact_min` is
:func:`expected_min` for rows at given search offsets, and :func:`pairwise_sum` sums as
NumPy does (so compiled code reproduces NumPy's results bit for bit).
"""

from __future__ import annotations

import functools

import numpy as np

from geosim.jit import njit, objmode


def levels(k: int) -> np.ndarray:
    """Quantile levels ``(i + 1/2) / k`` of ``k`` equally likely atoms."""
    return (np.arange(k) + 0.5) / k


def normal_atoms(rsd: np.ndarray | float, k: int) -> np.ndarray:
    """Atoms of a normal of mean 1 and standard deviation ``rsd``, truncated at 0.

    Returns:
        Shape ``rsd.shape + (k,)``, ascending along the last axis.
    """
    from scipy import stats  # on first use: SciPy's statistics take long to import

    rsd = np.asarray(rsd, dtype=float)[..., None]
    q = levels(k)
    safe = np.where(rsd > 0, rsd, 1.0)
    atoms = stats.truncnorm.ppf(q, -1.0 / safe, np.inf, loc=1.0, scale=safe)
    return np.where(rsd > 0, atoms, 1.0)


def sample_atoms(samples: np.ndarray, k: int) -> np.ndarray:
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
    mean, q = exact_min(atoms, 2.0 * np.arange(n, dtype=float), quantiles)
    return mean, (q if quantiles else None)


def exact_min(atoms: np.ndarray, offsets: np.ndarray, quantiles: bool
               ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`expected_min` of ``(N, R, K)`` atoms (``R > 1``), rows at given search offsets.

    ``offsets[i]`` is ``2 i`` for the row ``i`` of one :func:`expected_min` call; a subset of
    that call's rows, given with their own offsets, gets the same results as in the call.
    """
    n, r, k = atoms.shape
    m = r * k
    v, log_surv, ptr = merged_atoms(np.ascontiguousarray(atoms.reshape(n, m)),
                                     survival_steps(r, k), r, k)
    surv = np.exp(log_surv)
    # The CDF rises along each row; quantile i is its first atom at level >= (i + 1/2) / K.
    return _min_moments(v, surv, ptr, m, thresholds(k), quantiles, offsets)


@njit(cache=True)
def numpy_exp(x):  # pragma: no cover - compiled
    """``numpy.exp`` of ``x`` in place, NumPy's own (in object mode) from compiled code.

    Compiled code calling it gets the values a NumPy expression gets, bit for bit
    (Numba's ``exp`` may round differently).
    """
    with objmode():
        np.exp(x, out=x)


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
def merged_atoms(vals, step, r, k):  # pragma: no cover - compiled
    """Each row's atoms in ascending order and the log-survival after each, row by row.

    A row holds ``r`` variables of ``k`` ascending atoms; they are merged, ties taken
    from the earlier variable (what a stable sort of the row gives). Absent atoms
    (``±inf``) count as the row's largest finite atom and do not lower the survival.
    Each row is merged by :func:`merge_row`.

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
        w = merge_row(vals[i], step, r, k, v, log_surv, w, use, head, end, cur, heap)
    out[n] = w
    return v[:w], log_surv[:w], out


@njit(cache=True)
def merge_row(vals, step, r, k, v, log_surv, w, use, head, end, cur,
               heap):  # pragma: no cover - compiled
    """Merge one row of :func:`merged_atoms` into ``v`` and ``log_surv`` from ``w`` on.

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
    """The scan of :func:`merge_row` for two ascending variables, held in registers."""
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
    """The scan of :func:`merge_row` for three ascending variables, held in registers."""
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
def pairwise_sum(a, n, p):  # pragma: no cover - compiled
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
    """Mean and quantile atoms of each row's minimum from :func:`merged_atoms`.

    The mean is :func:`row_mean`, the quantiles :func:`row_quantiles` at the row's
    offset ``offsets[i]`` (``2i`` in row ``i``, as one search over all rows sees it).
    """
    n = ptr.size - 1
    k = thresholds.size
    mean = np.empty(n)
    q = np.empty((n if quantiles else 0, k))
    terms = np.zeros(m)
    for i in range(n):
        mean[i] = row_mean(v, surv, ptr[i], ptr[i + 1], m, terms)
        if quantiles:
            row_quantiles(v, surv, ptr[i], ptr[i + 1], thresholds, offsets[i], q[i])
    return mean, q


@njit(cache=True)
def row_mean(v, surv, lo, hi, m, terms):  # pragma: no cover - compiled
    """Mean of one row's minimum: ``v_0 + sum_j (v_j - v_{j-1}) S_{j-1}``.

    The row is ``v[lo:hi]`` with survivals ``surv[lo:hi]``, out of ``m`` atoms in all;
    the sum runs over all ``m`` in NumPy's order (atoms a row does not store add
    nothing). ``terms`` is work space of ``m`` zeros, left as zeros.
    """
    p = hi - lo
    terms[0] = 0.0
    for j in range(1, p):
        terms[j] = (v[lo + j] - v[lo + j - 1]) * surv[lo + j - 1]
    total = _block_sum(terms, 0, m, p) if m <= 128 else pairwise_sum(terms, m, p)
    mean = v[lo] + (0.0 + total)
    for j in range(p):
        terms[j] = 0.0
    return mean


@njit(cache=True)
def row_quantiles(v, surv, lo, hi, thresholds, offset, q):  # pragma: no cover - compiled
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
    exactly (:func:`row_min_quantiles` reports it).

    Returns:
        ``lo`` and ``hi``, shape ``(K,)``.
    """
    thresholds = levels(k) - 1e-9
    # The test compares 1 - S with the level; rounding (one unit in the last place at the
    # largest offset, a few units at 1 for exp and 1 - S) moves each side by less than
    # ``err``, so it can go either way only where |S - S*| < err, S* = 1 - level. In log
    # terms that is within err / (S* - err) of log S*: each level's own survival, as the
    # test at a low level lies far from the smallest survival 1 - level of the last.
    err = 8.0 * (float(np.spacing(2.0 * n_rows + 2.0)) + 1e-15)
    survival = 1.0 - thresholds
    slack = err / (survival - err)
    mid = np.log(survival)
    return mid - slack, mid + slack


@njit(cache=True)
def row_min_quantiles(vals, nv, k, step, lo, hi, q, use, head, cur,
                       sorted_):  # pragma: no cover - compiled
    """Quantile atoms of the minimum of one row's variables, as :func:`expected_min` gives.

    ``vals[:nv]`` are the row's variables (``K`` atoms each, ascending; ``±inf``/NaN for
    absent ones), ``step`` the log-survival steps of ranks ``0..K-1``, ``lo``/``hi`` from
    :func:`quantile_bounds`; ``use``, ``head`` and ``cur`` are work space of ``nv``
    entries. ``sorted_`` promises that each variable's atoms do not decrease and that
    none is NaN or ``-inf`` (only a tail of ``+inf`` may end a variable): the check for
    :func:`merged_atoms`' full merge then reads a variable's first and last atoms only.
    The atoms are merged in :func:`merged_atoms`' order (a scan of the heads picks what
    its heap does: the least ``(value, variable)``) and the log-survival accumulated
    alike; each quantile is settled against the bounds as the merge passes it, and the
    merge stops once all are settled.

    Returns:
        Whether the row was settled (``q`` then holds its ``K`` quantiles). False when
        :func:`merged_atoms` would merge the row in full (no variable present, or a
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
def survival_steps(r: int, k: int) -> np.ndarray:
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
