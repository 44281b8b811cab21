"""Mantri's ``t_new`` rows (OSDI 2010 §5.1): a (task, cluster) row's variables, quantiles.

A row ``(task, m)`` holds the processing-rate atoms of the task's type on ``m`` over its
work and, per remote input group, the pair's bandwidth atoms (read from the performance
model's :class:`~geosim.modeler.PairTable`) over the group's size. :func:`t_new_rows`
settles rows by the fast merge of
:func:`~geosim.distributions.row_min_quantiles` and lists those it cannot;
:func:`exact_atoms` lays out those for the general path; :func:`lazy_argmin` finds a
candidate's best cluster computing as few rows as it can.

The observed estimator (``estimator = "observed"``, Mantri §5.5 as 000 §VI-A uses it)
lives here too: :func:`observed_t_rem` and :func:`noisy_progress` turn a copy's last
progress report into ``t_rem``, and :class:`PhaseLog` keeps the run times of the copies
of each phase that completed, the atoms of ``t_new``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from geosim.distributions import merged_atoms, numpy_exp, row_min_quantiles, row_quantiles
from geosim.jit import njit
from geosim.modeler import pair_row, source_rows
from geosim.sortedkeys import heap_pop, heap_push
from geosim.variability import keyed_uniforms

__all__ = ["CopyReports", "PhaseLog", "clean_rows", "exact_atoms", "exact_quantiles",
           "lazy_argmin", "mean_of", "noisy_progress", "observed_t_rem", "row_vals",
           "source_inverses", "t_new_rows"]


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


@njit(cache=True, inline="always")
def _atoms_of(bw, dense):  # pragma: no cover - compiled
    """The array holding the pairs' bandwidth atoms: ``dense`` if not empty, else ``bw``'s.

    A pair's row in it is :func:`_row_of`. Kernels take the array once, before their
    loops, rather than from a helper returning it for each pair.
    """
    return dense if dense.size else bw.values


@njit(cache=True, inline="always")
def _row_of(bw, dense, src, dst, n):  # pragma: no cover - compiled
    """The row of pair ``src -> dst`` in :func:`_atoms_of`'s array."""
    return src * n + dst if dense.size else pair_row(bw, src, dst)


@njit(cache=True, error_model="numpy", inline="always")
def row_vals(speed, bw, dense, t, w, g_lo, g_hi, g_src, g_size, m, vals):  # pragma: no cover
    """The variables of row ``(task, m)`` as :func:`t_new_rows` lays them out; their count.

    ``t`` and ``w`` are the task's type and work, ``g_lo:g_hi`` its input groups; the
    bandwidth atoms are read from ``dense`` (row ``src * n + dst``,
    :meth:`~geosim.modeler.PerformanceModel.dense_bandwidth`) when it is not empty, else
    from the pair table ``bw``.
    """
    k = speed.shape[2]
    for a in range(k):
        vals[0, a] = speed[m, t, a] / w
    nv = 1
    atoms = _atoms_of(bw, dense)
    for g in range(g_lo, g_hi):
        if g_src[g] != m:       # a local input is an absent variable: left out
            size = g_size[g]
            row = _row_of(bw, dense, g_src[g], m, speed.shape[0])
            for a in range(k):
                vals[nv, a] = atoms[row, a] / size
            nv += 1
    return nv


@njit(cache=True, error_model="numpy")
def exact_quantiles(speed, bw, types, work, j, m, g_ptr, g_src, g_size, steps_r, thresholds,
                    offset, q):  # pragma: no cover - compiled
    """Quantiles of row ``(j, m)`` by the general path, as in a call over all rows.

    The row's :func:`exact_atoms` (``R = steps_r.size / K`` variables), merged and searched
    at the row's ``offset`` (twice its index ``j · n + m`` in that call), ``exp`` NumPy's:
    what :func:`~geosim.distributions.exact_min` gives the row there. ``q`` gets the
    ``K`` quantiles.
    """
    k = speed.shape[2]
    r = steps_r.size // k
    rows = np.full(1, j, dtype=np.int64)
    atoms = exact_atoms(speed, bw, types, work, rows, np.full(1, m, dtype=np.int64), g_ptr,
                        g_src, g_size, r)
    v, log_surv, ptr = merged_atoms(atoms.reshape(1, r * k), steps_r, r, k)
    numpy_exp(log_surv)
    row_quantiles(v, log_surv, ptr[0], ptr[1], thresholds, offset, q)


#: Below 1 by far more than the rounding of a row's mean (``(K + 8)`` units in the last
#: place, ``K <= 128``): :func:`lazy_argmin`'s bounds are at most the means they bound.
_SHRINK = 1.0 - 1e-9
#: Bounds :func:`lazy_argmin` holds before it computes the row of the smallest of them
#: out of order (the walk's threshold has not reached it yet): the heap stays this
#: small where the inputs' transfers, not the processing, bound every row.
_HOLD = 16


@njit(cache=True, error_model="numpy")
def source_inverses(bw, dense, bw_inv, g_src, n):  # pragma: no cover - compiled
    """``bw_inv`` of every pair from each input group's source, a row per distinct source.

    Returns:
        The rows (``(sources, n)``: ``bw_inv`` of pair ``src -> dst`` at ``[slot, dst]``)
        and each cluster's slot among them (-1: not a source).
    """
    slot = np.full(n, -1, dtype=np.int64)
    count = 0
    for s in g_src:
        if slot[s] < 0:
            slot[s] = count
            count += 1
    out = np.empty((count, n))
    rows = np.empty(n, dtype=np.int64)
    for s in range(n):
        if slot[s] < 0:
            continue
        if dense.size:
            for x in range(n):
                out[slot[s], x] = bw_inv[s * n + x]
        else:
            source_rows(bw, s, rows)
            for x in range(n):
                out[slot[s], x] = bw_inv[rows[x]]
    return out, slot


@njit(cache=True, error_model="numpy")
def lazy_argmin(mask, j, speed, bw, dense, types, work, g_ptr, g_src, g_size, step, lo, hi,
                 steps_r, thresholds, speed_inv, order, src_inv, src_slot, vals, q, use, head,
                 cur, heap_key, heap_id, mean_for, mean, atoms):  # pragma: no cover - compiled
    """The first cluster of least ``E[t_new]`` over ``mask``, computing as few rows as it can.

    It is what :func:`~geosim.schedulers.mantri_rules.decide` picks from every row.
    Every row's mean has a lower bound: ``t_new`` atom ``a`` is ``1 / q[K-1-a]`` and the
    minimum's quantile ``q[c]`` is at most atom ``c`` of each of its variables (the
    merge passes that atom only after the variable alone has cut the survival below
    the quantile's level), so the mean is at least ``mean_a max_x 1 / vals[x, a]``, and
    so at least ``max_x mean_a 1 / vals[x, a]``: ``w · speed_inv[x, t]`` for processing,
    ``size · bw_inv[row]`` for an input group (``mean(1 / atom)`` per speed and per pair
    row, :func:`~geosim.schedulers.mantri_rules.bound_tables`; ``src_inv`` holds the
    latter for the call's sources, :func:`source_inverses`). The bound is that times
    :data:`_SHRINK`, below any rounding of the two sides.

    The search walks the clusters by increasing processing bound (``order[t]``, the
    clusters by ``speed_inv[:, t]``): no cluster not yet walked has a bound below the
    next one's processing bound, the walk's threshold. The walked clusters of ``mask``
    wait in a heap by bound; a row is computed for the smallest when it is at most the
    threshold (or :data:`_HOLD` of them wait), and a cluster whose bound exceeds the
    best mean found is dropped, for no row of it can be smaller or tie it. The search
    ends when the threshold and every bound waiting exceed the best mean. Every mean and
    bound is in ``[0, inf]`` (no NaN), so the first minimum is the same as over all rows,
    whichever rows were computed.

    A row is settled by the fast merge of :func:`row_min_quantiles` (with ``step``,
    ``lo``, ``hi``) or, where its quantile tests fall between the bounds, by the general
    path (:func:`exact_quantiles` with ``steps_r``, ``thresholds`` and the row's offset
    in :func:`t_new_rows`' call over the chunk's ``n`` clusters): the values
    :meth:`Mantri._t_new` gives it.

    Rows are memoised across calls for the same candidate: ``mean_for[x] == j`` when
    ``mean[x]`` and ``atoms[x]`` hold row ``(j, x)``. ``heap_key`` and ``heap_id`` are
    work space of :data:`_HOLD` + 1 entries.

    Returns:
        The cluster, or -1 if ``mask`` is empty.
    """
    n = mask.size
    k = speed.shape[2]
    t, w, g_lo, g_hi = types[j], work[j], g_ptr[j], g_ptr[j + 1]
    walk = order[t]
    size, i = 0, 0
    best = -1
    best_val = 0.0
    while True:
        tau = w * speed_inv[walk[i], t] * _SHRINK if i < n else np.inf
        if best >= 0 and tau > best_val and (size == 0 or heap_key[0] > best_val):
            return best
        if size and (heap_key[0] <= tau or size >= _HOLD or i == n):
            b, pick, size = heap_pop(heap_key, heap_id, size)
            if best >= 0 and b > best_val:
                continue
            if mean_for[pick] != j:
                nv = row_vals(speed, bw, dense, t, w, g_lo, g_hi, g_src, g_size, pick, vals)
                if not row_min_quantiles(vals, nv, k, step, lo, hi, q, use, head, cur, True):
                    exact_quantiles(speed, bw, types, work, j, pick, g_ptr, g_src, g_size,
                                    steps_r, thresholds, 2.0 * float(j * n + pick), q)
                for a in range(k):
                    atoms[pick, a] = 1.0 / q[k - 1 - a]
                mean[pick] = mean_of(atoms[pick], k)
                mean_for[pick] = j
            v = mean[pick]
            if best < 0 or v < best_val or (v == best_val and pick < best):
                best, best_val = pick, v
            continue
        if i == n:
            return best
        x = walk[i]
        i += 1
        if not mask[x]:
            continue
        b = w * speed_inv[x, t]
        for g in range(g_lo, g_hi):
            if g_src[g] != x:
                v = g_size[g] * src_inv[src_slot[g_src[g]], x]
                if v > b:
                    b = v
        b *= _SHRINK
        if best < 0 or b <= best_val:
            size = heap_push(heap_key, heap_id, size, b, x)


# ---------------------------------------------------------------------- observed estimator
_EPS = 1e-9


def observed_t_rem(progress: np.ndarray | float, report_time: np.ndarray | float,
                   start: np.ndarray | float, now: float,
                   base: np.ndarray | float = 0.0) -> np.ndarray:
    """``t_rem`` of copies from their last progress report (Mantri §5.5, 000 §VI-A).

    The copy's rate is estimated from the report alone, ``rate = (p̂ − base) /
    (report_time − start)``, and ``t_rem = (1 − p̂) / rate − (now − report_time)``,
    floored at 0: the time the report predicted, less the time gone since it was taken.
    ``base`` is the progress the copy started from (0: Mantri does not checkpoint).

    Args:
        progress: Reported progress ``p̂`` of each copy (fraction of its task).
        report_time: When each report was taken (s).
        start: When each copy started (s).
        now: The current time (s).
        base: Progress each copy started from.

    Returns:
        ``t_rem`` per copy; ``inf`` for a report showing no progress or taken at the
        copy's start (no report).
    """
    p = np.asarray(progress, dtype=float)
    at = np.asarray(report_time, dtype=float)
    gain = p - np.asarray(base, dtype=float)
    span = at - np.asarray(start, dtype=float)
    ok = (gain > _EPS) & (span > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rem = span * (1.0 - p) / np.where(ok, gain, 1.0) - (now - at)
    return np.where(ok, np.maximum(rem, 0.0), np.inf)


def noisy_progress(progress: np.ndarray, sigma: float, key: int, copies: np.ndarray,
                   index: np.ndarray) -> np.ndarray:
    """Reported progress with multiplicative measurement noise: ``p · exp(σZ − σ²/2)``.

    ``Z`` is a standard normal keyed by ``(copy, report index)``
    (:func:`~geosim.variability.keyed_uniforms` under ``key``, through ``ndtri``), so a
    report's draw does not depend on anything else in the run. The factor has mean 1;
    the result is clipped to ``(0, 1]`` (a true progress of 0 stays 0).

    Args:
        progress: True progress at each report.
        sigma: σ (0: the progress as measured, a copy of it).
        key: The stream's key.
        copies: Copy id of each report.
        index: Report index of each (1 for a copy's first report).
    """
    p = np.asarray(progress, dtype=float)
    if sigma == 0 or p.size == 0:
        return p.copy()
    z = ndtri(keyed_uniforms(key, copies, index))
    noisy = p * np.exp(sigma * z - 0.5 * sigma * sigma)
    return np.where(p > 0, np.clip(noisy, np.finfo(float).tiny, 1.0), p)


class CopyReports:
    """Each copy's last progress report, taken every ``interval`` seconds from its start.

    Report ``k = 1, 2, …`` of a copy is taken at the first boundary at or after
    ``start + k · interval`` (:meth:`update` must be called at every boundary): its true
    progress then, stamped with that time (noise is added when it is read,
    :func:`noisy_progress`). Arrays are indexed by copy id.

    Args:
        interval: Seconds between a copy's reports.
    """

    def __init__(self, interval: float):
        self.interval = float(interval)
        self.progress = np.zeros(0)
        self.at = np.zeros(0)
        self.index = np.zeros(0, dtype=np.int64)

    def update(self, copies: np.ndarray, start: np.ndarray, progress: np.ndarray,
               now: float) -> None:
        """Take the reports due at ``now`` of the live ``copies`` (their start, progress)."""
        if copies.size == 0:
            return
        need = int(copies.max()) + 1
        if need > self.progress.size:
            pad = max(need, 2 * self.progress.size, 256) - self.progress.size
            self.progress = np.r_[self.progress, np.zeros(pad)]
            self.at = np.r_[self.at, np.zeros(pad)]
            self.index = np.r_[self.index, np.zeros(pad, dtype=np.int64)]
        beats = np.floor((now - start) / self.interval + _EPS).astype(np.int64)
        due = beats > self.index[copies]
        ids = copies[due]
        self.progress[ids] = progress[due]
        self.at[ids] = now
        self.index[ids] = beats[due]

    def last(self, copies: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Progress, time and index (0: none yet) of each copy's last report."""
        return self.progress[copies], self.at[copies], self.index[copies]


class PhaseLog:
    """Run times of the copies of each phase that completed: the atoms of ``t_new``.

    A phase is a job's stage (the tasks of one job with the same ``task_stage``). A copy
    that completed (it won its task; a killed copy is not one) leaves its run time per
    unit of the work it did, ``(end − start) / (task_work · (1 − base))``, its cluster
    and its task's type. The phase keeps the ``k`` most recent (a ring), so the cost of
    a ``t_new`` stays bounded.

    Args:
        task_job: Job of each task.
        task_stage: Stage of each task in its job.
        k: Atoms kept per phase.
    """

    def __init__(self, task_job: np.ndarray, task_stage: np.ndarray, k: int):
        job = np.asarray(task_job, dtype=np.int64)
        stage = np.asarray(task_stage, dtype=np.int64)
        key = job * (int(stage.max(initial=0)) + 1) + stage
        _, phase = np.unique(key, return_inverse=True)
        self.phase = phase.astype(np.int64).ravel()
        n = int(self.phase.max(initial=-1)) + 1
        self.k = int(k)
        self.per_work = np.full((n, self.k), np.inf)
        self.cluster = np.zeros((n, self.k), dtype=np.int64)
        self.type = np.zeros((n, self.k), dtype=np.int64)
        self.count = np.zeros(n, dtype=np.int64)

    def record(self, tasks: np.ndarray, run_time: np.ndarray, work: np.ndarray,
               clusters: np.ndarray, types: np.ndarray) -> None:
        """Add completed copies, in order: their tasks, run times (s), work done, where."""
        if tasks.size:
            with np.errstate(divide="ignore"):
                per_work = np.asarray(run_time, dtype=float) / np.asarray(work, dtype=float)
            _ring_put(self.per_work, self.cluster, self.type, self.count,
                      self.phase[np.asarray(tasks, dtype=np.int64)], per_work,
                      np.asarray(clusters, dtype=np.int64), np.asarray(types, dtype=np.int64))

    def samples(self, tasks: np.ndarray) -> np.ndarray:
        """Completed copies of each task's phase (all of them, not only those kept)."""
        return self.count[self.phase[tasks]]

    def atoms(self, tasks: np.ndarray, work: np.ndarray, types: np.ndarray,
              speed_mean: np.ndarray, clusters: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Equally likely atoms of a new copy's time, on each of ``clusters`` (default all).

        Atom ``a`` of task ``j`` on cluster ``m`` is the kept run time per unit of work
        times ``work[j]``, times ``speed_mean[src, type_a] / speed_mean[m, types[j]]``
        (the model's mean speeds of the observation's cluster and type over the
        candidate's; exactly 1 on the observation's cluster for the same type).

        Returns:
            The atoms ``(m, clusters, k)`` (only the first ``n_atoms[j]`` of task ``j``
            count; the others are ``inf``), ``n_atoms`` and the means ``(m, clusters)``.
        """
        ph = self.phase[tasks]
        n_atoms = np.minimum(self.count[ph], self.k)
        base = self.per_work[ph] * np.asarray(work, dtype=float)[:, None]      # (m, k)
        dst = speed_mean[:, types].T                                           # (m, n)
        if clusters is not None:
            dst = dst[:, clusters]
        src = speed_mean[self.cluster[ph], self.type[ph]]                      # (m, k)
        with np.errstate(divide="ignore", invalid="ignore"):
            atoms = base[:, None, :] * (src[:, None, :] / dst[:, :, None])
        valid = (np.arange(self.k) < n_atoms[:, None])[:, None, :]
        atoms = np.where(valid & ~np.isnan(atoms), atoms, np.inf)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(valid, atoms, 0.0).sum(axis=2) / n_atoms[:, None]
        return atoms, n_atoms, means


@njit(cache=True)
def _ring_put(per_work, cluster, type_, count, phase, value, where,
              kind):  # pragma: no cover - compiled
    """Write samples into the rings of their phases, in order (the oldest is overwritten)."""
    k = per_work.shape[1]
    for i in range(phase.size):
        p = phase[i]
        slot = count[p] % k
        per_work[p, slot] = value[i]
        cluster[p, slot] = where[i]
        type_[p, slot] = kind[i]
        count[p] += 1
