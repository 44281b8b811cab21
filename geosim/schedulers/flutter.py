"""Flutter: stage-wise task placement that minimises finish estimates lexicographically.

Hu, Li and Luo, "Flutter: Scheduling tasks closer to data across geo-distributed
datacenters", INFOCOM 2016. Flutter places the tasks of a stage so that the stage
finishes as early as possible: the slowest task first (min-max), then the next slowest,
and so on (a lexicographical min-max integer program, §III). Its constraint matrix is
totally unimodular, so the integer program is solved through linear programs (§IV).
:func:`~geosim.schedulers.lexmin.lexmin_assign` solves it exactly, combinatorially
(max-flow and min-cost-flow steps, compiled); :class:`Flutter` builds the finish estimates.
"""

from __future__ import annotations

import numpy as np

from geosim.jit import njit
from geosim.modeler import pair_row, source_rows
from geosim.params import Field
from geosim.schedulers.compose import Placement
from geosim.schedulers.lexmin import assign_masked, cheapest_fit, lexmin_assign
from geosim.view import WAITING, SchedulerView, first_of_runs

#: Compute-time estimates of a task's finish time at a cluster.
COMPUTES = ("uniform", "observed")

#: How many of its fastest destinations are kept per source for the pruned search.
FASTEST = 16


class Flutter(Placement):
    """Flutter's placement (INFOCOM 2016, §III–IV), one stage at a time.

    A stage is the ready tasks of one job handed to :meth:`place` together (tasks come
    grouped by job, in job priority order); stages are solved one after another, each on
    the free slots the earlier ones left. A task's finish estimate at cluster ``m`` is

    ``transfer + compute``: ``transfer = max_s size_s / B[s, m]`` over its remote inputs
    (all fetched in parallel; ``B`` the observed mean bandwidth
    ``model.bandwidth_mean``; inputs already at ``m`` cost nothing), and ``compute`` the
    task's work over a processing speed.

    The tasks are assigned to clusters with free slots (at most ``free[m]`` tasks to
    ``m``) so that the sorted (descending) vector of finish estimates is
    lexicographically minimal (:func:`lexmin_assign`). When the stage has more tasks
    than free slots, the number of tasks placed is maximised first; the optimisation
    then decides which tasks get slots, and the others wait (``-1``).

    Flutter's objective is driven by where the data is (transfer times), and 003 §6.2
    describes Flutter and Iridium as unaware of cluster heterogeneity. ``compute = "uniform"``
    (default) therefore divides the work by one speed for every cluster: the mean over
    clusters of the observed mean speed of the task's type (``model.speed_mean``).
    ``compute = "observed"`` uses each cluster's own observed mean speed instead, a
    heterogeneity-aware variant.

    Simplifications: finish estimates ignore queueing of transfers on shared links and
    gates (as Flutter's do) and outages; a running task handed to :meth:`place` (a
    speculative copy) is treated like a ready one.

    Args:
        compute: ``uniform`` or ``observed`` (see :data:`COMPUTES`).
    """

    name = "flutter"
    params = {"compute": Field("uniform", "str", choices=COMPUTES, doc="compute-time "
                               "estimate: one speed for every cluster, or each cluster's")}

    def __init__(self, compute: str = "uniform"):
        self.validate_params(compute=compute)
        self.compute = compute

    def place(self, view: SchedulerView, tasks: np.ndarray, free: np.ndarray) -> np.ndarray:
        """Place each job's tasks (a stage) by :func:`lexmin_assign`, job by job.

        The stages are solved in one compiled loop (:func:`_place_stages`) on the inputs
        of all the tasks, fetched at once. A stage it hands back (one whose costs shut
        some row out of a column with slots, so that the number placeable needs a
        maximum flow) is solved here, as are all of them when :meth:`finish_estimates`
        is overridden, ``free`` is not of integers, or a task is not ready.
        """
        tasks = np.asarray(tasks, dtype=np.int64)
        out = np.full(tasks.size, -1, dtype=np.int64)
        if tasks.size == 0:
            return out
        jobs = np.asarray(view.task_job[tasks], dtype=np.int64)
        if (type(self).finish_estimates is not Flutter.finish_estimates
                or free.dtype != np.int64 or (view.task_state[tasks] == WAITING).any()):
            starts = np.flatnonzero(first_of_runs(jobs))
            ends = np.append(starts[1:], tasks.size)
            for lo, hi in zip(starts, ends, strict=True):
                if not free.any():
                    break
                self._place_stage(view, tasks, lo, hi, free, out)
            return out
        pos, src, size = view.inputs_of(tasks)
        pos, src = np.asarray(pos, dtype=np.int64), np.asarray(src, dtype=np.int64)
        size = np.asarray(size, dtype=float)
        bandwidth = self.model.bandwidth_mean_pairs
        dense = self.model.mean_rows(src)
        speed = self._speeds()
        work = np.asarray(view.task_work[tasks], dtype=float)
        types = np.asarray(view.task_type[tasks], dtype=np.int64)
        top, n_top = self._fastest_lists(bandwidth)
        at = 0
        while at < tasks.size:
            lo, hi, status = _place_stages(jobs, at, pos, src, size, bandwidth, dense, speed,
                                           types, work, free, out, self.compute == "uniform",
                                           top, n_top)
            if status == 2:  # pragma: no cover - an internal invariant broke
                raise RuntimeError("Flutter's lexicographic assignment failed")
            if status == 1:
                self._place_stage(view, tasks, lo, hi, free, out)
            at = hi
        return out

    def _fastest_lists(self, bandwidth) -> tuple[np.ndarray, np.ndarray]:
        """Each source's fastest destinations (:func:`_fastest_to`), kept per refresh.

        Filled when a stage first reads a source (``-1``: not yet); new with every new
        table of mean bandwidths.
        """
        if getattr(self, "_lists_of", None) is not bandwidth.values:
            n = bandwidth.fallback.size
            self._lists = (np.empty((n, FASTEST), dtype=np.int64), np.full(n, -1, dtype=np.int64))
            self._lists_of = bandwidth.values
        return self._lists

    def _speeds(self) -> np.ndarray:
        """The speed each compute estimate divides by, ``(types, clusters)``.

        For ``uniform`` each type's mean over clusters, rounded as
        :meth:`finish_estimates` rounds it (a row's pairwise sum), repeated over the
        clusters; kept until the performance model changes.
        """
        model = self.model
        kept = getattr(self, "_speed_key", None)
        if (kept is None or kept[0] is not model or kept[1] != model.version
                or kept[2] is not model.speed_mean or kept[3] != self.compute):
            speed = np.asarray(model.speed_mean, dtype=float)
            if self.compute == "uniform":
                mean = speed[:, np.arange(speed.shape[1])].T.mean(axis=1, keepdims=True)
                speed = np.repeat(mean, speed.shape[0], axis=1)
            self._speed = np.ascontiguousarray(speed.T if self.compute != "uniform" else speed)
            self._speed_key = (model, model.version, model.speed_mean, self.compute)
        return self._speed

    def _place_stage(self, view: SchedulerView, tasks: np.ndarray, lo: int, hi: int,
                     free: np.ndarray, out: np.ndarray) -> None:
        """Place the stage ``tasks[lo:hi]`` by :func:`lexmin_assign` (into ``out``, ``free``)."""
        cost = self.finish_estimates(view, tasks[lo:hi])
        cost[:, free <= 0] = np.inf
        got = lexmin_assign(cost, free)
        out[lo:hi] = got
        free -= np.bincount(got[got >= 0], minlength=free.size).astype(free.dtype)

    def finish_estimates(self, view: SchedulerView, tasks: np.ndarray) -> np.ndarray:
        """Finish estimate (s) of each task at each cluster, shape ``(tasks, clusters)``."""
        n = view.n_clusters
        pos, src, size = view.inputs_of(tasks)
        transfer = _transfer(np.asarray(pos, dtype=np.int64), np.asarray(src, dtype=np.int64),
                             np.asarray(size, dtype=float),
                             self.model.bandwidth_mean_pairs, tasks.size)
        speed = self.model.speed_mean[:, view.task_type[tasks]].T   # (tasks, n)
        if self.compute == "uniform":
            speed = np.repeat(speed.mean(axis=1, keepdims=True), n, axis=1)
        with np.errstate(divide="ignore"):
            compute = np.where(speed > 0, view.task_work[tasks][:, None] / speed, np.inf)
        return transfer + compute


@njit(cache=True)
def _transfer(pos, src, size, bw, n_tasks):  # pragma: no cover - compiled
    """Transfer estimates ``(tasks, clusters)``: the slowest remote input of each task.

    Input ``i`` of the task at position ``pos[i]`` takes ``size[i]`` over the mean
    bandwidth of pair ``src[i] -> c`` (in the :class:`~geosim.modeler.PairTable` ``bw``)
    to reach cluster ``c`` (``inf`` without bandwidth, 0 at its own cluster).
    """
    n = bw.fallback.size
    out = np.zeros((n_tasks, n))
    rows = np.empty(n, dtype=np.int64)
    for i in range(pos.size):
        p, h = pos[i], src[i]
        source_rows(bw, h, rows)
        for c in range(n):
            if c == h:
                v = 0.0
            else:
                b = bw.values[rows[c]]
                v = size[i] / b if b > 0 else np.inf
            if v > out[p, c] or v != v:               # as np.maximum, NaN included
                out[p, c] = v
    return out


@njit(cache=True)
def _pair_mean(bw, dense, src, dst):  # pragma: no cover - compiled
    """The mean bandwidth of pair ``src -> dst`` as :func:`_place_stages` reads it."""
    if dense.size:
        return dense[src * bw.fallback.size + dst]
    return bw.values[pair_row(bw, src, dst)]


@njit(cache=True)
def _source_means(bw, dense, s, scratch, rows):  # pragma: no cover - compiled
    """The mean bandwidth from ``s`` to every cluster, as one row.

    A row of ``dense`` when it is not empty, else gathered from the pair table ``bw``
    into ``scratch`` (through ``rows``, work space of ``n``).
    """
    m = bw.fallback.size
    if dense.size:
        return dense[s * m:(s + 1) * m]
    source_rows(bw, s, rows)
    for c in range(m):
        scratch[c] = bw.values[rows[c]]
    return scratch


@njit(cache=True)
def _fastest_to(bw, dense, s, top, scratch, rows):  # pragma: no cover - compiled
    """Fill ``top[s]`` with the clusters ``s`` sends to fastest; return how many.

    The clusters ``c != s`` whose mean bandwidth from ``s`` is positive, the
    ``top.shape[1]`` fastest of them by decreasing bandwidth. Fewer means that every other
    cluster has none (its transfers from ``s`` never end).
    """
    m, k = bw.fallback.size, top.shape[1]
    row = _source_means(bw, dense, s, scratch, rows)
    count = 0
    for c in range(m):
        v = row[c]
        if c == s or not v > 0 or (count == k and not v > row[top[s, k - 1]]):
            continue
        if count < k:
            count += 1
        p = count - 1
        while p > 0 and row[top[s, p - 1]] < v:
            top[s, p] = top[s, p - 1]
            p -= 1
        top[s, p] = c
    return count


@njit(cache=True, error_model="numpy")
def _add_input(h, size, bw, dense, scratch, rows, transfer):  # pragma: no cover - compiled
    """Raise a task's transfer estimates ``transfer`` (one per cluster) by one input.

    The input, ``size`` MB at cluster ``h``, takes ``size / B[h, c]`` to reach ``c``
    (``inf`` without bandwidth, 0 at ``h``).
    """
    m = transfer.size
    row = _source_means(bw, dense, h, scratch, rows)
    for c in range(m):
        if c == h:
            v = 0.0
        else:
            b = row[c]
            v = size / b if b > 0 else np.inf
        if v > transfer[c] or v != v:                 # as np.maximum, NaN included
            transfer[c] = v


@njit(cache=True, error_model="numpy")
def _exact_transfer(start, end, src, size, bw, dense, c):  # pragma: no cover - compiled
    """A task's transfer estimate at cluster ``c``, computed as :func:`_place_stages` does."""
    transfer = 0.0
    for e in range(start, end):
        if src[e] == c:
            v = 0.0
        else:
            b = _pair_mean(bw, dense, src[e], c)
            v = size[e] / b if b > 0 else np.inf
        if v > transfer or v != v:                    # as np.maximum, NaN included
            transfer = v
    return transfer


@njit(cache=True, error_model="numpy")
def _cheapest_by_bounds(lo, hi, i, pos, src, size, bw, dense, speed, types, work, free, top,
                        n_top, scratch, rows):  # pragma: no cover - compiled
    """Each task's cheapest column of a stage, found without reading every cluster.

    With one compute time for every cluster (``uniform``), a task's estimate at cluster
    ``c`` is ``compute + max_s size_s / B[s, c]`` over the clusters ``s`` holding its
    inputs (``size_s`` the largest there; 0 at ``c = s``). Every source's clusters
    ``top[s]`` (:func:`_fastest_to`) are read in order of decreasing bandwidth, depth by
    depth, as in Fagin's threshold algorithm: a cluster not yet read at depth ``d`` has
    from every source at most the bandwidth of that source's ``d``-th cluster, so its
    estimate is at least ``compute + max_s size_s / B[s, top[s, d]]`` (IEEE division and
    addition are monotone, so the bound holds as computed). The clusters holding the
    inputs, which pay nothing for them, are read first. The search stops once the
    cheapest cluster read, with a free slot, is strictly below the bound: every other
    cluster is dearer, so it is the first cheapest, as :func:`assign_masked` finds it on
    the whole row.

    A task without inputs, whose search would read about as many clusters as there are
    (many sources), whose inputs' sizes give no bound (negative, infinite or NaN), or
    whose search goes deeper than ``top`` has its whole row read (:func:`_whole_row`).

    Returns:
        Each task's cheapest column and its cost, or empty arrays when a task has no
        finite cost anywhere or its compute time is infinite (the stage's masking then
        decides, in :func:`_place_stages`).
    """
    n, m, k = hi - lo, free.size, top.shape[1]
    best = np.empty(n, dtype=np.int64)
    low = np.empty(n)
    none = (np.empty(0, dtype=np.int64), np.empty(0))
    sources = np.empty(0, dtype=np.int64)
    largest = np.empty(0)
    for r in range(n):
        start = i
        while i < pos.size and pos[i] == lo + r:
            i += 1
        sp = speed[types[lo + r], 0]
        compute = work[lo + r] / sp if sp > 0 else np.inf
        if not np.isfinite(compute):
            return none
        if sources.size < i - start:
            sources, largest = np.empty(i - start, dtype=np.int64), np.empty(i - start)
        n_src, bounded = 0, True
        for a in range(start, i):
            bounded = bounded and 0.0 <= size[a] < np.inf     # else no bound from size
            at = 0
            while at < n_src and sources[at] != src[a]:
                at += 1
            if at == n_src:
                sources[at], largest[at] = src[a], size[a]
                n_src += 1
            largest[at] = max(largest[at], size[a])
        if n_src == 0 or not bounded or n_src * (k + 1) >= m:     # nothing to search by
            found, lowest = _whole_row(start, i, src, size, bw, dense, compute, free,
                                       scratch, rows)
        else:
            found, lowest = _search(start, i, src, size, bw, dense, compute, free, top,
                                    n_top, sources[:n_src], largest[:n_src], scratch, rows)
        if found < 0:
            return none
        best[r], low[r] = found, lowest
    return best, low


@njit(cache=True, error_model="numpy")
def _search(start, end, src, size, bw, dense, compute, free, top, n_top, sources, largest,
            scratch, rows):  # pragma: no cover - compiled
    """:func:`_cheapest_by_bounds`' search for one task (inputs ``start:end``).

    ``sources`` are the clusters holding its inputs, ``largest`` the largest input at
    each. Returns the first cheapest cluster with a free slot and its cost (-1: none).
    """
    k = top.shape[1]
    found, lowest = -1, np.inf
    for a in range(sources.size):
        h = sources[a]
        if n_top[h] < 0:
            n_top[h] = _fastest_to(bw, dense, h, top, scratch, rows)
        if free[h] > 0:
            cost = _exact_transfer(start, end, src, size, bw, dense, h) + compute
            if np.isfinite(cost) and (cost < lowest or (cost == lowest and h < found)):
                found, lowest = h, cost
    for d in range(k + 1):
        bound, deep = 0.0, False
        for a in range(sources.size):
            h = sources[a]
            if d < n_top[h]:
                bound = max(bound, largest[a] / _pair_mean(bw, dense, h, top[h, d]))
            elif n_top[h] < k:                        # the rest never receive from h
                bound = np.inf
            else:
                deep = True                           # deeper than kept: no bound from h
        if deep and bound < np.inf:
            return _whole_row(start, end, src, size, bw, dense, compute, free, scratch, rows)
        if bound == np.inf or (found >= 0 and lowest < bound + compute):
            return found, lowest                      # (-1: no finite cluster unread)
        for a in range(sources.size):
            h = sources[a]
            if d >= n_top[h]:
                continue
            c = top[h, d]
            if free[c] > 0:
                cost = _exact_transfer(start, end, src, size, bw, dense, c) + compute
                if np.isfinite(cost) and (cost < lowest or (cost == lowest and c < found)):
                    found, lowest = c, cost
    return found, lowest                              # (not reached: depth k is deep)


@njit(cache=True, error_model="numpy")
def _whole_row(start, end, src, size, bw, dense, compute, free, scratch,
               rows):  # pragma: no cover - compiled
    """A task's first cheapest cluster with a free slot, from its whole row (-1: none)."""
    transfer = np.zeros(free.size)
    for e in range(start, end):
        _add_input(src[e], size[e], bw, dense, scratch, rows, transfer)
    found, lowest = -1, np.inf
    for c in range(free.size):
        cost = transfer[c] + compute
        if free[c] > 0 and np.isfinite(cost) and cost < lowest:
            found, lowest = c, cost
    return found, lowest


@njit(cache=True, error_model="numpy")
def _place_stages(jobs, at, pos, src, size, bw, dense, speed, types, work, free,
                  out, uniform, top, n_top):  # pragma: no cover - compiled
    """:meth:`Flutter.place` from task ``at`` on: each stage's costs, then its assignment.

    A stage is a run of tasks of one job (``jobs``); the inputs of the task at position
    ``p`` are the entries of ``pos == p`` (``pos`` ascends) in ``src`` and ``size``;
    ``speed[type, cluster]`` is the speed its compute estimate divides the work by. The
    mean bandwidths of an input's source to every cluster are read as one row, of
    ``dense`` (pair ``src * n + dst``, :meth:`~geosim.modeler.PerformanceModel.mean_rows`)
    when it is not empty, else gathered from the pair table ``bw`` (:func:`source_rows`). A
    stage's costs are :meth:`Flutter.finish_estimates`' (:func:`_transfer` plus the
    compute time), masked as :func:`~geosim.schedulers.lexmin.mask_costs` masks them,
    and placed by :func:`~geosim.schedulers.lexmin.assign_masked` as
    :func:`lexmin_assign` places them; ``free`` and ``out`` are updated as
    :meth:`Flutter.place` does. When ``uniform``, each stage is first tried by
    :func:`_cheapest_by_bounds` (each source's fastest destinations in ``top``, ``n_top``
    of them, ``-1`` not yet listed): if it settles every task and they fit at their
    cheapest clusters (step (1) of :func:`lexmin_assign`), the whole rows are not built.

    Returns:
        The stage where it stopped (``lo``, ``hi``) and why: 0 when done or out of slots
        (``hi`` is then the number of tasks), 1 at a stage whose number placeable needs a
        maximum flow (:func:`~geosim.schedulers.lexmin.max_placed`), for the caller to
        place, 2 if the assignment failed.
    """
    n_tasks = jobs.size
    m = free.size
    scratch = np.empty(m)
    rows = np.empty(m, dtype=np.int64)
    i = np.searchsorted(pos, at)
    lo = at
    while lo < n_tasks:
        hi = lo + 1
        while hi < n_tasks and jobs[hi] == jobs[lo]:
            hi += 1
        open_ = False
        for j in range(m):
            open_ = open_ or free[j] != 0
        if not open_:
            return lo, n_tasks, 0
        n = hi - lo
        best, low = rows[:0], scratch[:0]
        if uniform:
            best, low = _cheapest_by_bounds(lo, hi, i, pos, src, size, bw, dense, speed, types,
                                            work, free, top, n_top, scratch, rows)
        if best.size:
            k = 0
            for j in range(m):
                if free[j] > 0:
                    k += free[j]
            got, fits = cheapest_fit(best, low, free, min(n, k))
            if fits:
                while i < pos.size and pos[i] < hi:
                    i += 1
                for r in range(n):
                    out[lo + r] = got[r]
                    if got[r] >= 0:
                        free[got[r]] -= 1
                lo = hi
                continue
        transfer = np.zeros((n, m))
        while i < pos.size and pos[i] < hi:
            _add_input(src[i], size[i], bw, dense, scratch, rows, transfer[pos[i] - lo])
            i += 1
        cost = np.empty((n, m))
        complete, placeable = True, False
        for r in range(n):
            t, w = types[lo + r], work[lo + r]
            for j in range(m):
                sp = speed[t, j]
                v = transfer[r, j] + (w / sp if sp > 0 else np.inf)
                if free[j] > 0 and np.isfinite(v):
                    cost[r, j] = v
                    placeable = True
                else:
                    cost[r, j] = np.inf
                    complete = complete and free[j] <= 0
        if placeable:
            if not complete:
                return lo, hi, 1
            k = 0
            for j in range(m):
                if free[j] > 0:
                    k += free[j]
            got = assign_masked(cost, free, min(n, k))
            if got.size != n:
                return lo, hi, 2
            for r in range(n):
                out[lo + r] = got[r]
                if got[r] >= 0:
                    free[got[r]] -= 1
        lo = hi                                       # (every row left out otherwise)
    return lo, n_tasks, 0
