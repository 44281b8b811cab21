"""PingAn's candidate clusters and the expected rate of one copy on each.

The row cache (:class:`RowCache`) keeps, between refreshes of the performance model, the
merged atoms of each (task, cluster) copy rate, its candidates and upper bounds; the
compiled kernels here fill it and read rates, flows and quantile atoms from it.
"""

from __future__ import annotations

import numba
import numpy as np

from geosim import keymap, threads
from geosim.distributions import (
    merge_row,
    numpy_exp,
    pairwise_sum,
    row_mean,
    row_quantiles,
    survival_steps,
    thresholds,
)
from geosim.jit import njit, objmode, prange
from geosim.modeler import PairTable, PerformanceModel, pair_row, source_rows
from geosim.schedulers.pingan.kernels import _max, _min, _most_groups
from geosim.schedulers.pingan.reservations import _takeable
from geosim.schedulers.pingan.seeded import _patch_candidates, _seeded_top
from geosim.threads import map_rows, part_bounds, wide_rows

#: Memory for the kept upper bounds (one per task and cluster): about 32 000 tasks' on
#: 1 000 clusters, 3 200 on 10 000.
BOUND_CACHE_BYTES = 256 * 2**20


def _top(score: np.ndarray, m: int) -> np.ndarray:
    """Columns of the ``m`` lowest values of each row, in ``argpartition``'s order.

    Among values tied at the ``m``-th, the columns are those ``argpartition``'s
    introselect keeps (``benchmarks/pingan_candidates.py`` counts such rows). Their order
    matters too: the rounds order each task's candidates by a stable sort of their rates
    (:func:`~geosim.schedulers.pingan.kernels._order`), so equal rates keep it. From
    :data:`~geosim.threads.ROWS_WIDE_FROM` values on, the rows are split among the threads
    (:func:`~geosim.threads.map_rows`): each row's columns, and their order, are those
    of the call over all rows.
    """
    def top(part: np.ndarray) -> np.ndarray:
        return np.argpartition(part, m - 1, axis=1)[:, :m]

    return map_rows(top, score) if wide_rows(score.size) else top(score)


#: Memory for the mean bandwidths from the sources one search reads (:func:`_source_values`):
#: 3 200 sources of 10 000 clusters.
SOURCE_VALUES_BYTES = 256 * 2**20

#: The log of reachability changes kept for seeded candidates, in clusters of the world:
#: beyond it, every stored candidate is searched again (:meth:`_RowCache._log_changes`).
LOG_CLUSTERS = 8

#: How PingAn chooses among clusters tied at the last candidate's bound (``ties``).
TIES = ("numpy", "seeded")


def top_columns(score: np.ndarray, m: int, row_task: np.ndarray,
                key: np.uint64 | None) -> np.ndarray:
    """:func:`_top` (``key`` None) or :func:`_seeded_top` with the stream ``key``."""
    if key is None:
        return _top(score, m)
    return _seeded_top(np.ascontiguousarray(score), m, row_task, key)


class _RowCache:
    """The merged atoms of one copy's rate per (task, cluster), for one version of the model.

    Between two refreshes of the performance model, a ready task evaluated again on a
    cluster has the same rate atoms, so the same merged atoms, survivals and expected
    rate (:func:`~geosim.modeler.expected_min`); only its quantile atoms depend on its
    row in the step's search (the row's offset), and they are searched again from the
    stored atoms. The same holds of the upper bounds of its rate on every cluster (kept
    for as many tasks as :data:`BOUND_CACHE_BYTES` holds, the others' computed anew when
    read), and of its candidates among the reachable clusters (the ``m`` best bounds,
    :func:`_top`), these kept while reachability does not change (with seeded ties,
    brought to the new reachability by :func:`_patch_candidates` instead).
    A task's entry holds its input groups too and serves only while they are the same.
    Everything is dropped when the model's version changes.

    The merged atoms are stored per (entry, cluster) pair met, found through a map of
    ``entry * n_clusters + cluster`` (:mod:`geosim.keymap`): a task has rows on its
    candidates only, so their memory follows the candidates, not the world's clusters.

    Args:
        n_tasks: Tasks of the workload.
        n_clusters: Clusters of the world.
        m: Candidates per task among the reachable clusters.
    """

    def __init__(self, n_tasks: int, n_clusters: int, m: int):
        self.version = -1
        self.reach_epoch = -1
        self.task_slot = np.full(n_tasks, -1, dtype=np.int64)
        self.n_slots = self.n_groups = self.n_atoms = 0
        self.slot_task = np.empty(0, dtype=np.int64)              # per slot: its task
        self.n_clusters = n_clusters
        self.rows = keymap.empty()              # (slot * n_clusters + cluster) -> row
        self.n_rows = 0
        self.start = np.empty(0, dtype=np.int64)                  # per row: its atoms
        self.length = np.empty(0, dtype=np.int64)
        self.mean = np.empty(0)
        self.cand = np.empty((0, m), dtype=np.int64)              # per slot: candidates
        self.cand_ok = np.empty(0, dtype=np.bool_)
        # With seeded ties: each entry's reachability epoch, the clusters that changed
        # from one epoch to the next (a log since the last reset) and the reachability now.
        self.cand_epoch = np.empty(0, dtype=np.int64)
        self.epoch = 0
        self.log = np.empty(0, dtype=np.int64)
        self.log_ptr = np.zeros(1, dtype=np.int64)
        self.reach_seen = np.empty(0, dtype=np.bool_)
        self.bound = np.empty((0, n_clusters))                    # per slot: upper bounds
        self.bound_rows = max(64, BOUND_CACHE_BYTES // (8 * max(n_clusters, 1)))
        self.bound_ok = np.empty(0, dtype=np.bool_)
        self.g_lo = np.empty(0, dtype=np.int64)                   # per slot: its groups
        self.g_hi = np.empty(0, dtype=np.int64)
        self.g_src = np.empty(0, dtype=np.int64)
        self.g_size = np.empty(0)
        self.v = np.empty(0)                                      # merged atoms
        self.surv = np.empty(0)                                   # their survivals

    def reset(self, version: int) -> None:
        """Drop every entry; the model is now at ``version``."""
        self.version = version
        self.epoch = 0
        self.task_slot[self.slot_task[: self.n_slots]] = -1
        self.n_slots = self.n_groups = self.n_atoms = self.n_rows = 0
        keymap.clear(self.rows[0])

    def reserve(self, slots: int, groups: int, atoms: int, rows: int = 0) -> None:
        """Make room for ``slots`` tasks, ``groups`` groups, ``atoms`` atoms, ``rows`` rows.

        Each is a number of new ones (input groups; atoms of merged rows; stored rows of
        a task on a cluster).
        """
        need = self.n_slots + slots
        if need > self.g_lo.shape[0]:
            size = max(need, 2 * self.g_lo.shape[0], 64)
            self.g_lo = _grown(self.g_lo, size)
            self.g_hi = _grown(self.g_hi, size)
            self.cand = _grown(self.cand, size)
            self.cand_ok = _grown(self.cand_ok, size)
            self.cand_epoch = _grown(self.cand_epoch, size)
            if self.bound.shape[0] < self.bound_rows:
                # Its whole budget at once: rows never written are not resident, and the
                # rows written are not copied at each doubling (on 10 000 clusters, half
                # a GB of copies).
                self.bound = _grown(self.bound, self.bound_rows)
            self.bound_ok = _grown(self.bound_ok, size)
            self.slot_task = _grown(self.slot_task, size)
        need = self.n_groups + groups
        if need > self.g_src.size:
            size = max(need, 2 * self.g_src.size, 1024)
            self.g_src = _grown(self.g_src, size)
            self.g_size = _grown(self.g_size, size)
        need = self.n_rows + rows
        if need > self.start.size:
            size = max(need, 2 * self.start.size, 1024)
            self.start = _grown(self.start, size)
            self.length = _grown(self.length, size)
            self.mean = _grown(self.mean, size)
        self.rows = keymap.reserve(*self.rows, self.n_rows, rows)
        need = self.n_atoms + atoms
        if need > self.v.size:
            size = max(need, 2 * self.v.size, 1 << 16)
            self.v = _grown(self.v, size)
            self.surv = _grown(self.surv, size)

    def lookup(self, version: int, reach_epoch: int, tasks: np.ndarray, g_ptr: np.ndarray,
               g_src: np.ndarray, g_size: np.ndarray, task_type: np.ndarray,
               task_work: np.ndarray, speed_b: np.ndarray, bw_b: PairTable,
               reach: np.ndarray, free: np.ndarray, find: bool, key: np.uint64 | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """Each task's entry (a new one where it has none), and its candidates.

        With ``find``, the candidates of :meth:`PingAn._evaluate` (mean rates): the ``m``
        best upper bounds (``speed_b``, ``bw_b``: mean speeds and bandwidths) among the
        reachable clusters, kept in the entry, followed where some such candidate has no
        free slot by the ``m`` best among the clusters with one (:func:`_find_candidates`).

        Args:
            version: The model's version.
            reach_epoch: Changes whenever reachability does.
            tasks: The step's tasks.
            g_ptr: Input groups of each task (as
                :meth:`~geosim.view.SchedulerView.input_group_ptr`).
            g_src: Source cluster of each group.
            g_size: Size of each group.
            task_type: Type of every task.
            task_work: Mean work of every task.
            speed_b: Mean speed per cluster and type.
            bw_b: Mean bandwidth per cluster pair (a :class:`~geosim.modeler.PairTable`).
            reach: Whether each cluster is reachable.
            free: Free slots per cluster.
            find: Whether to find the candidates.
            key: None: the ``m`` best as :func:`_top` chooses them; else the stream key
                of :func:`_seeded_top`'s choice.

        Returns:
            The entries and the candidates (not meaningful without ``find``).
        """
        if self.version != version:
            self.reset(version)
        if self.reach_epoch != reach_epoch:
            self.reach_epoch = reach_epoch
            if key is None or self.reach_seen.shape != reach.shape:
                self.cand_ok[: self.n_slots] = False
            else:
                self._log_changes(np.flatnonzero(reach != self.reach_seen))
            if key is not None:
                self.reach_seen = np.array(reach, dtype=np.bool_)
        self.reserve(tasks.size, g_ptr[-1], 0)
        if key is not None:
            # The seeded order of a cluster does not depend on the others: a task's stored
            # candidates follow the clusters whose reachability changed since they were found.
            _patch_candidates(self.task_slot[tasks], self.slot_task, self.cand, self.cand_ok,
                              self.cand_epoch, self.epoch, self.log, self.log_ptr, self.bound,
                              self.bound_ok, reach, key)
        # Bounds of many tasks on many clusters are computed on every thread.
        parts = numba.get_num_threads() if wide_rows(tasks.size * self.n_clusters) else 1
        slots, self.n_slots, self.n_groups, cand = _find_candidates(
            tasks, g_ptr, g_src, g_size, self.task_slot, self.slot_task, self.n_slots,
            self.g_lo, self.g_hi, self.g_src, self.g_size, self.n_groups,
            self.cand, self.cand_ok, self.bound, self.bound_ok, task_type, task_work, speed_b,
            bw_b, reach, free, find, parts, threads.ROWS_WIDE_FROM, key is not None,
            np.uint64(0) if key is None else key)
        self.cand_epoch[slots] = self.epoch      # every entry looked up is now at this epoch
        return slots, cand

    def _log_changes(self, changed: np.ndarray) -> None:
        """Log the clusters whose reachability changed: a new epoch (seeded ties).

        Past :data:`LOG_CLUSTERS` times the clusters, every entry is to be searched again
        and the log starts anew.
        """
        at = self.log_ptr[self.epoch]
        if at + changed.size > LOG_CLUSTERS * self.n_clusters:
            self.cand_ok[: self.n_slots] = False
            self.epoch = at = 0
        if at + changed.size > self.log.size:
            self.log = _grown(self.log, max(2 * self.log.size, at + changed.size, 1024))
        if self.epoch + 2 > self.log_ptr.size:
            self.log_ptr = _grown(self.log_ptr, 2 * self.log_ptr.size)
        self.log[at: at + changed.size] = changed
        self.epoch += 1
        self.log_ptr[self.epoch] = at + changed.size

    def rates(self, model: PerformanceModel, slots: np.ndarray, tasks: np.ndarray,
              cand: np.ndarray, task_type: np.ndarray, task_work: np.ndarray,
              g_ptr: np.ndarray, g_src: np.ndarray, g_size: np.ndarray, reach: np.ndarray,
              gate: np.ndarray, denom: float) -> tuple[np.ndarray, ...]:
        """``E[r(1)]`` of one copy of each task on each candidate, its flows and floors.

        The rates are :func:`~geosim.modeler.expected_min` (with quantiles) of the atoms
        of ``V^P / work`` and of each ``V^T_s / size_s``, one call per number of input
        groups with the tasks in order, as :meth:`PingAn._evaluate` with mean rates
        defines them; the flows are :func:`_flows`'; the floors ``opt / denom``.
        ``slots`` are the tasks' entries (:meth:`lookup`, this step).

        Returns:
            The rates ``(T, M)`` (``-inf`` where unreachable), ``opt``, ``din``, ``dout``,
            the floors, and the arguments ``rows`` to ``thresholds`` of
            :func:`_fill_quantiles`, which finds the quantile atoms of given tasks
            (``rows``: the row of each task and candidate).
        """
        k = model.k
        top = _most_groups(g_ptr)
        self.reserve(0, 0, cand.size * k * (1 + top), cand.size)
        rows, rate, rank, opt, din, dout, floor, self.n_rows, self.n_atoms = _cache_rates(
            slots, tasks, cand, task_type, task_work, g_ptr, g_src, g_size, model.speed,
            model.bandwidth_pairs, survival_steps(1 + top, k), self.rows[0], self.rows[1],
            self.n_rows, self.n_clusters, self.start, self.length, self.mean, self.g_lo,
            self.g_hi, self.v, self.surv, self.n_atoms, k, top, reach, gate, denom)
        return rate, opt, din, dout, floor, (rows, rank, g_ptr, self.start, self.length,
                                             self.v, self.surv, thresholds(k))


def _grown(a: np.ndarray, size: int) -> np.ndarray:
    """``a`` with its first axis grown to ``size`` (the new part uninitialised)."""
    out = np.empty((size,) + a.shape[1:], dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@njit(cache=True, error_model="numpy")
def _neg_bounds(speed_mean, bw_mean, rows, tasks, task_type, task_work, g_ptr, g_src, g_size,
                mask):  # pragma: no cover - compiled
    """Negated upper bound ``min(E[V^P] / work, min_s E[V^T_s] / size_s)`` per cluster.

    Returns:
        Per task of ``rows`` (positions in ``tasks``) and cluster, the bound negated where
        ``mask`` holds (the cluster is reachable, or has a free slot), ``+inf`` elsewhere.
    """
    n = speed_mean.shape[0]
    neg = np.empty((rows.size, n))
    no_sources, no_values = np.empty(0, dtype=np.int64), np.empty((0, 0))
    for x in range(rows.size):
        i = rows[x]
        t = tasks[i]
        _bounds(speed_mean, bw_mean, task_type[t], task_work[t], g_ptr[i], g_ptr[i + 1],
                g_src, g_size, neg[x], no_sources, no_values)
        for c in range(n):
            neg[x, c] = -neg[x, c] if mask[c] else np.inf
    return neg


@njit(cache=True)
def _bounds(speed_mean, bw_mean, task_type, work, lo, hi, g_src, g_size, out, at,
            src_bw):  # pragma: no cover - compiled
    """``min(E[V^P] / work, min_s E[V^T_s] / size_s)`` of a task on every cluster ``c``.

    The bound on ``c`` goes to ``out[c]``; the task's groups are ``lo:hi``. Each cluster's
    minimum is taken over the groups in their order; a group's pairs (one source to every
    cluster) are read from ``src_bw[at[src]]`` (:func:`_source_values`) where ``at[src]``
    is not -1 (``at`` may be empty), else in a row whose rows one merge finds
    (:func:`source_rows`).
    """
    n = out.size
    for c in range(n):
        out[c] = speed_mean[c, task_type] / work
    rows = np.empty(0, dtype=np.int64)
    for g in range(lo, hi):
        src, size = g_src[g], g_size[g]
        if at.size and at[src] >= 0:
            values = src_bw[at[src]]
            for c in range(n):
                tr = np.inf if src == c else values[c] / size
                out[c] = _min(out[c], tr)
            continue
        if rows.size == 0:
            rows = np.empty(n, dtype=np.int64)
        source_rows(bw_mean, src, rows)
        for c in range(n):
            tr = np.inf if src == c else bw_mean.values[rows[c]] / size
            out[c] = _min(out[c], tr)


@njit(cache=True)
def _any_unfit(cand, free, reach):  # pragma: no cover - compiled
    """Whether some reachable candidate has no free slot."""
    for i in range(cand.shape[0]):
        for j in range(cand.shape[1]):
            if reach[cand[i, j]] and not free[cand[i, j]] > 0:
                return True
    return False


@njit(cache=True)
def _by_groups(g_ptr):  # pragma: no cover - compiled
    """Tasks by number of input groups: the counts ascending, and each count's tasks.

    Returns:
        Distinct counts, where each count's tasks start, and the tasks (ascending within).
    """
    n = g_ptr.size - 1
    top = 0
    for i in range(n):
        top = max(top, g_ptr[i + 1] - g_ptr[i])
    per = np.zeros(top + 1, dtype=np.int64)
    for i in range(n):
        per[g_ptr[i + 1] - g_ptr[i]] += 1
    counts = np.flatnonzero(per)
    ptr = np.zeros(counts.size + 1, dtype=np.int64)
    at = np.zeros(top + 1, dtype=np.int64)
    for b in range(counts.size):
        at[counts[b]] = ptr[b]
        ptr[b + 1] = ptr[b] + per[counts[b]]
    rows = np.empty(n, dtype=np.int64)
    for i in range(n):
        r = g_ptr[i + 1] - g_ptr[i]
        rows[at[r]] = i
        at[r] += 1
    return counts, ptr, rows


@njit(cache=True, error_model="numpy")
def _rate_atoms(rows, cand, types, work, g_ptr, g_src, g_size, speed, bandwidth,
                r):  # pragma: no cover - compiled
    """Atoms of ``V^P / work`` and of each ``V^T_s / size_s`` for every (task, candidate).

    ``rows`` are tasks with ``r`` input groups each; a group on the candidate itself is
    absent (``+inf``). Shape ``(rows.size * M, 1 + r, K)``.
    """
    m, k = cand.shape[1], speed.shape[2]
    a = np.empty((rows.size * m, 1 + r, k))
    for x in range(rows.size):
        i = rows[x]
        for j in range(m):
            c = cand[i, j]
            row = x * m + j
            for q in range(k):
                a[row, 0, q] = speed[c, types[i], q] / work[i]
            for h in range(r):
                g = g_ptr[i] + h
                s = g_src[g]
                p = pair_row(bandwidth, s, c)
                for q in range(k):
                    a[row, 1 + h, q] = (np.inf if s == c
                                        else bandwidth.values[p, q] / g_size[g])
    return a


@njit(cache=True)
def _flows(rate, cand, reach, g_ptr, g_src, g_size, gate):  # pragma: no cover - compiled
    """Mask unreachable candidates' rates (in place); the optimum and gate demands.

    A copy pulls each remote input group at its rate times the group's size, capped at
    the source's gate (``dout``); ``din`` is the sum over the task's groups as
    ``numpy.add.reduceat`` adds them (the first, plus the rest in pairwise order), capped
    at the candidate's gate.

    Returns:
        ``opt`` (best rate per task), ``din`` (T, M) and ``dout`` (G, M).
    """
    n_tasks, m = cand.shape
    opt = np.empty(n_tasks)
    din = np.zeros((n_tasks, m))
    dout = np.empty((g_src.size, m))
    buf = np.empty(max(g_ptr[n_tasks] - g_ptr[0], 1))
    for i in range(n_tasks):
        best = -np.inf
        for j in range(m):
            if not reach[cand[i, j]]:
                rate[i, j] = -np.inf
            best = rate[i, j] if j == 0 else _max(best, rate[i, j])
        opt[i] = best
        lo, hi = g_ptr[i], g_ptr[i + 1]
        for j in range(m):
            c = cand[i, j]
            pull = _max(rate[i, j], 0.0)
            for g in range(lo, hi):
                f = 0.0 if g_src[g] == c else pull * g_size[g]
                buf[g - lo] = f
                dout[g, j] = _min(f, gate[g_src[g]])
            if hi > lo:
                din[i, j] = buf[0] + pairwise_sum(buf[1:], hi - lo - 1, hi - lo - 1)
            din[i, j] = _min(din[i, j], gate[c])
    return opt, din, dout


@njit(cache=True)
def _cache_slots(tasks, g_ptr, g_src, g_size, task_slot, slot_task, n_slots, g_lo, g_hi,
                 c_src, c_size, n_groups, c_cand, cand_ok,
                 bound_ok):  # pragma: no cover - compiled
    """The entries of :meth:`_RowCache.lookup`.

    A task without an entry, or whose entry holds other input groups, gets a new one
    (nothing stored, its groups copied).

    Returns:
        Each task's entry, the entries and groups now in use, the stored candidates
        (``-1`` where none), and the tasks without.
    """
    n_tasks, m = tasks.size, c_cand.shape[1]
    slots = np.empty(n_tasks, dtype=np.int64)
    cand = np.full((n_tasks, m), -1, dtype=np.int64)
    miss = np.empty(n_tasks, dtype=np.int64)
    n_miss = 0
    for x in range(n_tasks):
        t = tasks[x]
        lo, hi = g_ptr[x], g_ptr[x + 1]
        s = task_slot[t]
        if s >= 0:
            same = g_hi[s] - g_lo[s] == hi - lo
            for h in range(hi - lo):
                if not same:
                    break
                same = (c_src[g_lo[s] + h] == g_src[lo + h]
                        and c_size[g_lo[s] + h] == g_size[lo + h])
            if not same:
                s = -1
        if s < 0:
            s = n_slots
            n_slots += 1
            task_slot[t], slot_task[s] = s, t
            cand_ok[s] = bound_ok[s] = False
            g_lo[s] = n_groups
            for g in range(lo, hi):
                c_src[n_groups], c_size[n_groups] = g_src[g], g_size[g]
                n_groups += 1
            g_hi[s] = n_groups
        slots[x] = s
        if cand_ok[s]:
            for j in range(m):
                cand[x, j] = c_cand[s, j]
        else:
            miss[n_miss] = x
            n_miss += 1
    return slots, n_slots, n_groups, cand, miss[:n_miss]


@njit(cache=True)
def _find_candidates(tasks, g_ptr, g_src, g_size, task_slot, slot_task, n_slots, g_lo,
                     g_hi, c_src, c_size, n_groups, c_cand, cand_ok, c_bound, bound_ok,
                     task_type, task_work, speed_b, bw_b, reach, free, find, parts,
                     wide_from, seeded, key):  # pragma: no cover - compiled
    """The entries and candidates of :meth:`_RowCache.lookup`.

    Candidates are the columns of :func:`_top` (:func:`_argtop`; with ``seeded``,
    :func:`_seeded_top` with stream ``key``) of :func:`_neg_bounds`
    over the reachable clusters, for tasks without them stored, then, where some
    reachable candidate has no free slot (:func:`_any_unfit`), those over the clusters
    with a free slot, for all tasks. The bounds are kept in the entries (``c_bound``,
    where ``bound_ok``), and computed in ``parts`` parts (:func:`_kept_bounds`).

    Returns:
        The entries, the entries and groups now in use, and the candidates.
    """
    slots, n_slots, n_groups, cand, miss = _cache_slots(tasks, g_ptr, g_src, g_size,
                                                        task_slot, slot_task, n_slots, g_lo,
                                                        g_hi, c_src, c_size, n_groups,
                                                        c_cand, cand_ok, bound_ok)
    if not find:
        return slots, n_slots, n_groups, cand
    m = c_cand.shape[1]
    if miss.size:
        top = _choose_top(_kept_bounds(miss, slots, tasks, task_type, task_work, g_ptr, g_src,
                                       g_size, speed_b, bw_b, c_bound, bound_ok, reach, parts,
                                       wide_from), m, tasks[miss], seeded, key)
        _store_candidates(top, miss, slots, cand, c_cand, cand_ok)
    if not _any_unfit(cand, free, reach):
        return slots, n_slots, n_groups, cand
    fits = np.empty(free.size, dtype=np.bool_)
    for c in range(free.size):
        fits[c] = free[c] > 0
    more = _choose_top(_kept_bounds(np.arange(tasks.size), slots, tasks, task_type, task_work,
                                    g_ptr, g_src, g_size, speed_b, bw_b, c_bound, bound_ok,
                                    fits, parts, wide_from), m, tasks, seeded, key)
    both = np.empty((tasks.size, 2 * m), dtype=np.int64)
    both[:, :m] = cand
    both[:, m:] = more
    return slots, n_slots, n_groups, both


@njit(cache=True)
def _kept_bounds(rows, slots, tasks, task_type, task_work, g_ptr, g_src, g_size, speed_b, bw_b,
                 c_bound, bound_ok, mask, parts, wide_from):  # pragma: no cover - compiled
    """:func:`_neg_bounds` of tasks ``rows``, each bound computed once per entry and kept.

    Entries past the rows of ``c_bound`` (its memory budget) have theirs computed anew.
    From ``wide_from`` bounds on, the rows are split into ``parts`` parts, one per thread
    (:func:`_kept_bounds_wide`); each row is computed as in one part (a task's entry is
    its own: no two rows write the same entry).
    """
    n = speed_b.shape[0]
    neg = np.empty((rows.size, n))
    at, src_bw = _source_values(rows, slots, g_ptr, g_src, bw_b, c_bound.shape[0], bound_ok)
    if parts > 1 and rows.size > 1 and rows.size * n >= wide_from:
        _kept_bounds_wide(rows, slots, tasks, task_type, task_work, g_ptr, g_src, g_size,
                          speed_b, bw_b, at, src_bw, c_bound, bound_ok, mask, neg, parts)
    else:
        _kept_range(0, rows.size, rows, slots, tasks, task_type, task_work, g_ptr, g_src,
                    g_size, speed_b, bw_b, at, src_bw, c_bound, bound_ok, mask, neg)
    return neg


@njit(cache=True)
def _source_values(rows, slots, g_ptr, g_src, bw_b, kept_rows,
                   bound_ok):  # pragma: no cover - compiled
    """The mean bandwidth from each source read by the bounds to compute, to every cluster.

    The tasks of ``rows`` whose bounds are not kept read their groups' sources; tasks of
    one call share them (on ``edge-10k``, about 100 groups from 17 sources a call), and
    each source's row (one merge of :func:`source_rows`, one gather) is read once, for
    at most :data:`SOURCE_VALUES_BYTES`.

    Returns:
        Each cluster's row in the table (-1: not read, or beyond the budget) and the
        table, ``[row, dst]``.
    """
    n = bw_b.fallback.size
    at = np.full(n, -1, dtype=np.int64)
    cap = max(1, SOURCE_VALUES_BYTES // (8 * n))
    count = 0
    for x in range(rows.size):
        i = rows[x]
        s = slots[i]
        if s < kept_rows and bound_ok[s]:
            continue
        for g in range(g_ptr[i], g_ptr[i + 1]):
            if at[g_src[g]] < 0 and count < cap:
                at[g_src[g]] = count
                count += 1
    table = np.empty((count, n))
    where = np.empty(n, dtype=np.int64)
    for src in range(n):
        if at[src] >= 0:
            source_rows(bw_b, src, where)
            for c in range(n):
                table[at[src], c] = bw_b.values[where[c]]
    return at, table


@njit(cache=True, parallel=True)
def _kept_bounds_wide(rows, slots, tasks, task_type, task_work, g_ptr, g_src, g_size, speed_b,
                      bw_b, at, src_bw, c_bound, bound_ok, mask, neg,
                      parts):  # pragma: no cover - compiled
    """:func:`_kept_range` over ``parts`` parts of ``rows``, in parallel (:mod:`geosim.threads`)."""
    b = part_bounds(rows.size, parts)
    for k in prange(parts):
        _kept_range(b[k], b[k + 1], rows, slots, tasks, task_type, task_work, g_ptr, g_src,
                    g_size, speed_b, bw_b, at, src_bw, c_bound, bound_ok, mask, neg)


@njit(cache=True)
def _kept_range(lo, hi, rows, slots, tasks, task_type, task_work, g_ptr, g_src, g_size, speed_b,
                bw_b, at, src_bw, c_bound, bound_ok, mask, neg):  # pragma: no cover - compiled
    """Rows ``lo:hi`` of :func:`_kept_bounds` into ``neg`` (sources' rows ``at``, ``src_bw``)."""
    n = speed_b.shape[0]
    spare = np.empty(n)
    for x in range(lo, hi):
        i = rows[x]
        s = slots[i]
        kept = s < c_bound.shape[0]
        row = c_bound[s, :n] if kept else spare
        if not (kept and bound_ok[s]):
            t = tasks[i]
            _bounds(speed_b, bw_b, task_type[t], task_work[t], g_ptr[i], g_ptr[i + 1], g_src,
                    g_size, row, at, src_bw)
            bound_ok[s] = kept
        for c in range(n):
            neg[x, c] = -row[c] if mask[c] else np.inf


@njit(cache=True)
def _argtop(score, m):  # pragma: no cover - compiled
    """:func:`_top` of ``score`` (NumPy's ``argpartition``, in object mode), contiguous."""
    with objmode(out="int64[:, ::1]"):
        out = np.ascontiguousarray(_top(score, m), dtype=np.int64)
    return out


@njit(cache=True)
def _choose_top(score, m, row_task, seeded, key):  # pragma: no cover - compiled
    """:func:`_seeded_top` with stream ``key`` if ``seeded``, else :func:`_argtop`."""
    if seeded:
        return _seeded_top(score, m, row_task, key)
    return _argtop(score, m)


@njit(cache=True)
def _store_candidates(top, miss, slots, cand, c_cand, cand_ok):  # pragma: no cover - compiled
    """Put the candidates ``top`` of tasks ``miss`` in ``cand`` and in their entries."""
    for e in range(miss.size):
        x = miss[e]
        s = slots[x]
        for j in range(top.shape[1]):
            cand[x, j] = c_cand[s, j] = top[e, j]
        cand_ok[s] = True


@njit(cache=True, error_model="numpy")
def _cache_rows(slots, tasks, cand, task_type, task_work, g_ptr, g_src, g_size, speed,
                bandwidth, step, map_keys, map_rows, n_rows, n_clusters, start, length, v,
                log_surv, n_atoms):  # pragma: no cover - compiled
    """Merge the atoms of each (task, candidate) of :meth:`_RowCache.rates` not yet stored.

    A row is merged (:func:`~geosim.distributions.merge_row`) from the atoms of
    :func:`_rate_atoms`; a task without input groups stores its ``K`` atoms as they are.
    The row of (entry ``s``, cluster ``c``) is found in the map (``map_keys``,
    ``map_rows``: :mod:`geosim.keymap`) at key ``s * n_clusters + c``; a new one is
    added there.

    Returns:
        The row of each task and candidate, the rows and atoms now in use, and the
        (row, entry) of each newly stored row, whose survivals and mean are still to be
        computed.
    """
    n_tasks, m = cand.shape
    k = speed.shape[2]
    rows = np.empty((n_tasks, m), dtype=np.int64)
    r_max = step.size // k
    vals = np.empty(r_max * k)
    use = np.empty(r_max, dtype=np.bool_)
    head = np.empty(r_max, dtype=np.int64)
    end = np.empty(r_max, dtype=np.int64)
    cur = np.empty(r_max)
    heap = np.empty(r_max, dtype=np.int64)
    fresh = np.empty((n_tasks * m, 2), dtype=np.int64)
    n_fresh = 0
    for x in range(n_tasks):
        t = tasks[x]
        s = slots[x]
        lo, hi = g_ptr[x], g_ptr[x + 1]
        r = 1 + hi - lo
        for j in range(m):
            c = cand[x, j]
            key = s * n_clusters + c
            p = keymap.position(map_keys, key)
            if map_keys[p] == key:
                rows[x, j] = map_rows[p]
                continue
            e = n_rows
            n_rows += 1
            map_keys[p], map_rows[p] = key, e
            rows[x, j] = e
            for q in range(k):
                vals[q] = speed[c, task_type[t], q] / task_work[t]
            for h in range(r - 1):
                src = g_src[lo + h]
                p = pair_row(bandwidth, src, c)
                for q in range(k):
                    vals[(1 + h) * k + q] = (np.inf if src == c
                                             else bandwidth.values[p, q] / g_size[lo + h])
            start[e] = n_atoms
            if r == 1:
                for q in range(k):
                    v[n_atoms + q] = vals[q]
                    log_surv[n_atoms + q] = 0.0
                n_atoms += k
            else:
                n_atoms = merge_row(vals, step, r, k, v, log_surv, n_atoms, use, head, end,
                                     cur, heap)
            length[e] = n_atoms - start[e]
            fresh[n_fresh, 0], fresh[n_fresh, 1] = e, s
            n_fresh += 1
    return rows, n_rows, n_atoms, fresh[:n_fresh]


@njit(cache=True)
def _cache_means(rows, cand, g_ptr, g_src, g_size, fresh, start, length, mean, g_lo, g_hi,
                 v, surv, k, top, reach, gate, denom):  # pragma: no cover - compiled
    """The rates of :meth:`_RowCache.rates` from the stored rows, their flows and floors.

    The newly stored rows (``fresh``: row, entry) get their mean first
    (:func:`~geosim.distributions.row_mean`; a task without input groups: the mean of its
    ``k`` atoms, as ``numpy.mean``).

    Returns:
        The rates, each task's rank among the step's tasks with as many input groups
        (its row for candidate ``j`` in their :func:`~geosim.modeler.expected_min` call
        is ``rank * M + j``), and :func:`_flows`' ``opt``, ``din`` and ``dout``, and
        the floors ``opt / denom``.
    """
    n_tasks, m = cand.shape
    terms = np.zeros((1 + top) * k)
    for f in range(fresh.shape[0]):
        e, s = fresh[f, 0], fresh[f, 1]
        lo = start[e]
        hi = lo + length[e]
        r = 1 + g_hi[s] - g_lo[s]
        if r == 1:
            mean[e] = (0.0 + pairwise_sum(v[lo:hi], k, k)) / k
        else:
            mean[e] = row_mean(v, surv, lo, hi, r * k, terms)
    rate = np.empty((n_tasks, m))
    rank = np.empty(n_tasks, dtype=np.int64)
    seen = np.zeros(top + 1, dtype=np.int64)
    for x in range(n_tasks):
        groups = g_ptr[x + 1] - g_ptr[x]
        rank[x] = seen[groups]
        seen[groups] += 1
        for j in range(m):
            rate[x, j] = mean[rows[x, j]]
    opt, din, dout = _flows(rate, cand, reach, g_ptr, g_src, g_size, gate)
    return rate, rank, opt, din, dout, opt / denom


@njit(cache=True)
def _fill_quantiles(rows, filled, atoms, cand, rate, floor, cand_rows, rank, g_ptr, start,
                    length, v, surv, thresholds, held, take, tk):  # pragma: no cover - compiled
    """Fill in the quantile atoms of tasks ``rows`` not yet ``filled``.

    Only candidates a round may take are filled in, and each task's copy held so far
    (``held``, per task of ``rows``): not those whose rate is below the task's floor, nor
    (with ``take``) those that cannot be taken now (:func:`_takeable` with ``tk``); no
    round takes them, and none reads their atoms. The rows are those of
    :meth:`_RowCache.rates` (``cand_rows``: the stored row of each task and candidate);
    each row's quantiles are searched (:func:`~geosim.distributions.row_quantiles`) at its
    offset ``2 (rank * M + j)`` in its :func:`~geosim.modeler.expected_min` call; a task
    without input groups has the atoms of its processing rate.
    """
    m, k = cand.shape[1], thresholds.size
    for e in range(rows.size):
        x = rows[e]
        if filled[x]:
            continue
        filled[x] = True
        plain = g_ptr[x + 1] == g_ptr[x]
        for j in range(m):
            if j != held[e] and (not rate[x, j] >= floor[x]
                                 or (take and not _takeable(x, j, tk))):
                continue
            row = cand_rows[x, j]
            lo = start[row]
            if plain:
                for q in range(k):
                    atoms[x, j, q] = v[lo + q]
            else:
                row_quantiles(v, surv, lo, lo + length[row], thresholds,
                               2.0 * (rank[x] * m + j), atoms[x, j])


@njit(cache=True)
def _cache_rates(slots, tasks, cand, task_type, task_work, g_ptr, g_src, g_size, speed,
                 bandwidth, step, map_keys, map_rows, n_rows, n_clusters, start, length, mean,
                 g_lo, g_hi, v, surv, n_atoms, k, top, reach, gate,
                 denom):  # pragma: no cover - compiled
    """:meth:`_RowCache.rates` in one call: :func:`_cache_rows`, ``exp``, :func:`_cache_means`.

    The new rows' log-survivals are written to ``surv`` and replaced by their ``exp``
    (NumPy's, :func:`numpy_exp`).

    Returns:
        The row of each task and candidate, :func:`_cache_means`' results, then the rows
        and atoms now in use.
    """
    rows, n_rows, new_atoms, fresh = _cache_rows(slots, tasks, cand, task_type, task_work,
                                                 g_ptr, g_src, g_size, speed, bandwidth, step,
                                                 map_keys, map_rows, n_rows, n_clusters, start,
                                                 length, v, surv, n_atoms)
    numpy_exp(surv[n_atoms:new_atoms])
    rate, rank, opt, din, dout, floor = _cache_means(rows, cand, g_ptr, g_src, g_size, fresh,
                                                     start, length, mean, g_lo, g_hi, v, surv,
                                                     k, top, reach, gate, denom)
    return rows, rate, rank, opt, din, dout, floor, n_rows, new_atoms
