"""Iridium: network-aware task placement for geo-distributed analytics.

Pu et al., "Low Latency Geo-distributed Data Analytics", SIGCOMM 2015, §3 (task
placement). A reduce stage reads data spread over sites; Iridium chooses the fraction
``r_i`` of the stage's tasks at each site so that the slowest upload or download of the
shuffle is as short as possible, a linear program (:func:`reduce_fractions`).
"""

from __future__ import annotations

import numpy as np

from geosim.jit import njit
from geosim.modeler import PairTable
from geosim.params import Field
from geosim.schedulers.compose import Placement
from geosim.schedulers.placement import locality_clusters
from geosim.view import Actions, SchedulerView, first_of_runs


class Iridium(Placement):
    """Iridium's task placement (SIGCOMM 2015, §3), one job's ready tasks at a time.

    The ready tasks handed to :meth:`place` come grouped by job, in job priority order;
    each job's are placed in turn on the slots the earlier jobs left.

    - **Map (input) tasks**, whose input sits in one cluster (or which have none), run at
      their data: locality placement
      (:func:`~geosim.schedulers.placement.locality_clusters`).
    - **Reduce tasks**, which read inputs from more than one cluster, form the job's
      reduce stage. With ``I_i`` the stage's input MB at cluster ``i``, ``S = Σ I_i``
      and ``U_i``, ``D_i`` the egress and ingress gate bandwidths (``view.gate``), the
      fractions ``r_i`` of its tasks minimise ``T`` subject to
      ``I_i (1 − r_i) / U_i ≤ T`` (upload), ``r_i (S − I_i) / D_i ≤ T`` (download),
      ``Σ r_i = 1``, ``r_i ≥ 0`` (:func:`reduce_fractions`). The sites are the reachable
      clusters with a free slot; a cluster holding data without a free slot only
      uploads, a constant the program cannot change, so it is left out. Free slots
      bound the fractions, ``r_i ≤ free_i / N`` (``N`` the tasks placed: the stage's
      tasks, or the free slots if fewer), so the program itself respects capacity and
      needs no spill-over. Fractions become whole tasks by largest remainder, never
      beyond a site's free slots (:func:`round_counts`); which tasks go to site ``i``
      maximises the input the tasks find locally (an assignment problem, solved
      exactly), and tasks left without a slot wait.

    **Data placement** (§4, ``data_placement=True``; off by default, as in 003's
    comparison). A job's raw input exists ``workload.data_lag`` seconds before the job
    arrives (Iridium's query lag: datasets are generated before the recurring queries
    that read them, §4.3 predicts those queries; here the announced job is the query).
    At the boundary its input appears, Iridium moves parts of it between sites so that
    the job's shuffle will be shorter (:func:`plan_moves`): map tasks run at their data,
    so the intermediate data at a site is proportional to the raw input there and the
    shuffle time is :func:`shuffle_time` of the raw input (the constant of
    proportionality does not change which placement is best). The heuristic is §4.1's:
    repeatedly move a chunk of data (``chunk``, a fraction of the job's input, Iridium's
    δ increments) out of a site to the site that shortens the shuffle most, while the
    shuffle gets shorter and the move can finish before the job arrives at the observed
    bandwidth of the pair (behind the data already leaving that site). Among the jobs
    announced together, moves are taken in order of their value, the reduction of the
    shuffle time per MB moved (§4.2). The moves are WAN transfers in the engine, sharing
    links and gates with running copies; one still running when its job arrives is
    abandoned.

    Simplifications. Iridium's model treats a stage's intermediate data as divisible
    among its tasks (every reduce task reads an equal share from every site, as in an
    all-to-all shuffle); here a task reads its own inputs, so the program places the
    stage's volume and the assignment then moves as little as it can. Data placement
    tries every site holding the job's data as the source of the next move, not only
    the bottleneck site §4.1 names: a move shortens the shuffle only if it relieves a
    bottleneck, and this way no tie between bottleneck sites needs breaking. A job's
    data is planned once, when it appears (later jobs do not re-plan moves under way).
    Iridium's WAN budget (§5) is not modelled.

    Args:
        data_placement: Move raw input before jobs arrive (needs ``workload.data_lag``).
        chunk: Data moved per step of the heuristic, as a fraction of the job's raw
            input (whole raw inputs are moved, the smallest first, until the chunk is
            reached), in ``(0, 1]``.
    """

    name = "iridium"
    params = {
        "data_placement": Field(False, "bool", doc="move raw input before jobs arrive"),
        "chunk": Field(0.05, "float", lo=0, hi=1, lo_open=True, doc="data moved per step of "
                       "the heuristic, a fraction of the job's raw input"),
    }

    def __init__(self, data_placement: bool = False, chunk: float = 0.05):
        self.validate_params(data_placement=data_placement, chunk=chunk)
        self.data_placement, self.chunk = data_placement, chunk

    @property
    def places_data(self) -> bool:  # type: ignore[override]
        """Whether raw input is moved before jobs arrive."""
        return self.data_placement

    def place_data(self, view: SchedulerView, actions: Actions, jobs: np.ndarray) -> None:
        """Plan the announced jobs' moves with :func:`plan_moves` and start them."""
        if not self.data_placement or jobs.size == 0:
            return
        moving = view.moves()
        leaving = np.bincount(moving["src"], weights=moving["left"], minlength=view.n_clusters)
        inputs = [view.raw_inputs(int(j)) for j in jobs]
        raws, dsts = plan_moves(inputs, view.job_arrival[jobs] - view.time,
                                np.asarray(view.gate, dtype=float), self.model.bandwidth_mean_pairs,
                                view.reachable, leaving, self.chunk)
        if raws.size:
            actions.move_data(raws, dsts)

    def place(self, view: SchedulerView, tasks: np.ndarray, free: np.ndarray) -> np.ndarray:
        """Map tasks at their data, each job's reduce tasks by :func:`reduce_fractions`."""
        tasks = np.asarray(tasks, dtype=np.int64)
        out = np.full(tasks.size, -1, dtype=np.int64)
        if tasks.size == 0:
            return out
        n = view.n_clusters
        pos, src, size = view.inputs_of(tasks)
        ptr = np.searchsorted(pos, np.arange(tasks.size + 1))
        reduce = _sites_held(ptr, src, size, n) >= 2
        gate = np.asarray(view.gate, dtype=float)
        starts = np.flatnonzero(first_of_runs(view.task_job[tasks]))
        ends = np.append(starts[1:], tasks.size)
        for lo, hi in zip(starts, ends, strict=True):
            if not free.any():
                break
            maps = lo + np.flatnonzero(~reduce[lo:hi])
            out[maps] = locality_clusters(view, tasks[maps], free)
            red = lo + np.flatnonzero(reduce[lo:hi])
            if red.size and free.any():
                got = place_reduce(_dense_rows(red, ptr, src, size, n), gate, free)
                out[red] = got
                np.subtract.at(free, got[got >= 0], 1)
        return out


@njit(cache=True)
def _sites_held(ptr, src, size, n):  # pragma: no cover - compiled
    """Per task ``i`` (inputs ``ptr[i]:ptr[i + 1]``), the clusters holding some of its input."""
    count = np.zeros(ptr.size - 1, dtype=np.int64)
    seen = np.full(n, -1, dtype=np.int64)
    for i in range(ptr.size - 1):
        for e in range(ptr[i], ptr[i + 1]):
            if size[e] > 0 and seen[src[e]] != i:
                seen[src[e]] = i
                count[i] += 1
    return count


@njit(cache=True)
def _dense_rows(rows, ptr, src, size, n):  # pragma: no cover - compiled
    """Input MB of tasks ``rows`` at each of ``n`` clusters, added in input order."""
    data = np.zeros((rows.size, n))
    for k in range(rows.size):
        for e in range(ptr[rows[k]], ptr[rows[k] + 1]):
            data[k, src[e]] += size[e]
    return data


def reduce_fractions(data: np.ndarray, up: np.ndarray, down: np.ndarray,
                     cap: np.ndarray | None = None,
                     total: float | None = None) -> tuple[np.ndarray, float]:
    """Iridium's task-placement program (SIGCOMM 2015, §3.1), solved exactly in closed form.

    The program: minimise ``T`` over fractions ``r`` with ``I_i (1 − r_i) / U_i ≤ T``
    (upload), ``r_i (S − I_i) / D_i ≤ T`` (download), ``Σ r_i = 1`` and
    ``0 ≤ r_i ≤ h_i`` (``h_i = min(cap_i, 1)``). For a given ``T`` the constraints bound
    each fraction to ``lo_i(T) = max(0, 1 − T a_i) ≤ r_i ≤ min(h_i, T c_i) = hi_i(T)``
    with ``a_i = U_i / I_i`` and ``c_i = D_i / (S − I_i)`` (no bound where ``I_i = 0``,
    resp. ``S = I_i``), so ``T`` is feasible exactly when every interval is non-empty and
    ``Σ lo ≤ 1 ≤ Σ hi``. Each condition holds from a threshold on, and the optimum is the
    largest threshold:

    - ``Σ lo(T) ≤ 1``: ``Σ lo`` is convex and piecewise linear, each piece below it, so
      ``T ≥ (k − 1) / A_k`` for every ``k`` (``A_k`` the sum of the ``k`` smallest
      ``a_i``), with equality on the piece in force at the optimum;
    - ``Σ hi(T) ≥ 1``: ``Σ hi`` is concave and piecewise linear, each piece above it, so
      ``T ≥ (1 − H_j) / C_j`` for each piece ``j`` (the sites whose cap binds first,
      ordered by ``h_i / c_i``: ``H_j`` their caps, ``C_j`` the other sites' slopes);
    - non-empty intervals: ``T ≥ (1 − h_i) / a_i`` and
      ``T ≥ I_i (S − I_i) / (U_i (S − I_i) + D_i I_i)``.

    The optimal fractions are not unique in general. Among them this returns the ones
    that send the least data over the WAN (``Σ r_i (S − I_i)`` minimal): every ``r_i``
    starts at ``lo_i(T)`` and the rest of the unit goes to the sites holding the most
    data first, each up to ``hi_i(T)`` (exact for a sum constraint over a box).

    Args:
        data: Input MB of the stage at each site, ``I_i``.
        up: Upload (egress) bandwidth of each site, ``U_i`` (MB/s).
        down: Download (ingress) bandwidth of each site, ``D_i`` (MB/s).
        cap: Optional upper bound on each ``r_i`` (free slots over tasks placed); the
            bounds must sum to at least 1.
        total: The stage's input ``S`` (MB); by default ``sum(data)``. Larger when some
            input sits outside the sites: every site downloads its share of it too.

    Returns:
        The fractions ``r`` and the shuffle time ``T`` (s) they achieve.
    """
    data = np.ascontiguousarray(data, dtype=float)
    total = float(data.sum()) if total is None else float(total)
    h = np.ones(data.size) if cap is None else np.clip(np.asarray(cap, dtype=float), 0, 1)
    r, t = _fractions(data, np.ascontiguousarray(up, dtype=float),
                      np.ascontiguousarray(down, dtype=float), h, total)
    return r, t


@njit(cache=True)
def _fractions(data, up, down, h, total):  # pragma: no cover - compiled
    """The closed form of :func:`reduce_fractions`: (fractions, shuffle time)."""
    s = data.size
    a = np.full(s, np.inf)
    c = np.full(s, np.inf)
    has = data > 0
    gets = (total - data) > 1e-12 * max(total, 1.0)
    t = 0.0
    for i in range(s):
        rest = total - data[i]
        if has[i]:
            a[i] = up[i] / data[i]
            t = max(t, (1.0 - h[i]) / a[i])                  # lo_i <= h_i
        if gets[i]:
            c[i] = down[i] / rest
        if has[i] and gets[i]:                               # lo_i <= T c_i
            t = max(t, data[i] * rest / (up[i] * rest + down[i] * data[i]))
    # sum of lo(T) <= 1, over the sites holding data (a_i finite), by increasing a_i
    sa = np.sort(a[np.isfinite(a)])
    acc = 0.0
    for k in range(sa.size):
        acc += sa[k]
        t = max(t, k / acc)
    # sum of hi(T) >= 1: sites without a download bound give h_i from T = 0 on
    bound = np.flatnonzero(np.isfinite(c))
    order = bound[np.argsort(h[bound] / c[bound], kind="mergesort")]
    h_j = 0.0
    for i in range(s):
        if not np.isfinite(c[i]):
            h_j += h[i]
    suffix = np.zeros(order.size + 1)                        # slopes of unsaturated sites
    for j in range(order.size - 1, -1, -1):
        suffix[j] = suffix[j + 1] + c[order[j]]
    for j in range(order.size):
        if suffix[j] > 0:
            t = max(t, (1.0 - h_j) / suffix[j])
        h_j += h[order[j]]
    r = np.empty(s)
    hi = np.empty(s)
    left = 1.0
    for i in range(s):
        hi[i] = min(h[i], t * c[i]) if gets[i] else h[i]
        r[i] = min(max(0.0, 1.0 - t * a[i]), hi[i]) if has[i] else 0.0
        left -= r[i]
    # the rest of the unit to the sites holding the most data, each up to hi (the others
    # after them by index: a stable sort of all sites by decreasing data)
    held = np.flatnonzero(has)
    for i in np.concatenate((held[np.argsort(-data[held], kind="mergesort")],
                             np.flatnonzero(~has))):
        if left <= 0:
            break
        add = min(hi[i] - r[i], left)
        r[i] += add
        left -= add
    return r / r.sum(), t


def round_counts(r: np.ndarray, n: int, cap: np.ndarray) -> np.ndarray:
    """Whole tasks per site from fractions: largest remainder, at most ``cap`` per site.

    Each site first gets ``floor(r_i n)`` tasks (at most ``cap_i``); the tasks left go
    one each to the sites with room, largest remainder first (ties to the lower index),
    in as many rounds as it takes.

    Args:
        r: Fractions summing to 1.
        n: Tasks to place (at most ``cap.sum()``).
        cap: Free slots per site.
    """
    return _round_counts(np.ascontiguousarray(r, dtype=float), int(n),
                         np.ascontiguousarray(cap, dtype=np.int64))


@njit(cache=True)
def _round_counts(r, n, cap):  # pragma: no cover - compiled
    """:func:`round_counts`, compiled."""
    want = r * n
    counts = np.minimum(np.floor(want + 1e-9).astype(np.int64), cap)
    rest = want - counts
    short = n - counts.sum()
    while short > 0:
        room = np.flatnonzero(counts < cap)
        order = room[np.argsort(-rest[room], kind="mergesort")][:short]
        for i in order:
            counts[i] += 1
            rest[i] -= 1.0
        short = n - counts.sum()
    return counts


@njit(cache=True)
def _reduce_slots(share, gate, free, n, total):  # pragma: no cover - compiled
    """The site of each of ``n`` slots: :func:`place_reduce`'s fractions, rounded."""
    sites = np.flatnonzero(free > 0)
    g = gate[sites]
    h = np.minimum(np.maximum(free[sites] / n, 0.0), 1.0)
    r, _ = _fractions(share[sites], g, g, h, total)
    return np.repeat(sites, _round_counts(r, n, free[sites]))


def place_reduce(data: np.ndarray, gate: np.ndarray, free: np.ndarray) -> np.ndarray:
    """Place a reduce stage: fractions by :func:`reduce_fractions`, then tasks to sites.

    Args:
        data: Input MB of each task at each cluster, shape ``(tasks, clusters)``.
        gate: Gate bandwidth per cluster (MB/s), egress and ingress alike.
        free: Free slots per cluster (not modified).

    Returns:
        The cluster of each task, ``-1`` for a task left waiting.
    """
    # On first use: scipy.optimize takes long to import, and the other composites that
    # import this module never call it.
    from scipy.optimize import linear_sum_assignment

    free = np.asarray(free, dtype=np.int64)
    n = int(min(data.shape[0], free[free > 0].sum()))
    out = np.full(data.shape[0], -1, dtype=np.int64)
    if n == 0:
        return out
    slot_site = _reduce_slots(data.sum(axis=0), gate, free, n, data.sum())
    rows, cols = linear_sum_assignment(-data[:, slot_site])
    out[rows] = slot_site[cols]
    return out


def shuffle_time(data: np.ndarray, up: np.ndarray, down: np.ndarray) -> np.ndarray:
    """Optimal value ``T`` of :func:`reduce_fractions` without caps, in closed form.

    For a given ``T`` the program's constraints bound each fraction to
    ``max(0, 1 − T U_i / I_i) ≤ r_i ≤ min(1, T D_i / (S − I_i))``, so ``T`` is feasible
    exactly when every interval is non-empty and ``Σ lower ≤ 1 ≤ Σ upper``; each of the
    three conditions holds from a threshold on, and ``T`` is the largest threshold:

    - ``Σ_i max(0, 1 − T a_i) ≤ 1`` with ``a_i = U_i / I_i``: ``T ≥ (k − 1) / A_k`` for
      every ``k``, ``A_k`` the sum of the ``k`` smallest ``a_i`` (equality at the root);
    - ``Σ_i min(1, T c_i) ≥ 1`` with ``c_i = D_i / (S − I_i)``: ``T ≥ 1 / Σ c_i``;
    - non-empty intervals: ``T ≥ I_i (S − I_i) / (U_i (S − I_i) + D_i I_i)``.

    Args:
        data: MB at each site, ``I``; any leading shape (one problem per row).
        up: Upload bandwidth per site, ``U`` (MB/s).
        down: Download bandwidth per site, ``D`` (MB/s).

    Returns:
        The shortest shuffle time (s) per row.
    """
    data = np.asarray(data, dtype=float)
    up, down = np.asarray(up, dtype=float), np.asarray(down, dtype=float)
    total = data.sum(axis=-1, keepdims=True)
    rest = total - data
    has, gets = data > 0, rest > 1e-12 * np.maximum(total, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.sort(np.where(has, up / data, np.inf), axis=-1)
        k = np.arange(data.shape[-1])            # k − 1 for the k smallest
        bound = k / np.cumsum(a, axis=-1)
        t_up = np.max(np.where(np.isfinite(a), bound, 0.0), axis=-1)
        c = np.where(gets, down / rest, np.inf).sum(axis=-1)
        t_down = np.where(np.isfinite(c) & (c > 0), 1.0 / c, 0.0)
        pair = np.where(has & gets, data * rest / (up * rest + down * data), 0.0)
    return np.maximum(np.maximum(t_up, t_down), pair.max(axis=-1))


def plan_moves(inputs: list[tuple[np.ndarray, np.ndarray, np.ndarray]], time_left: np.ndarray,
               gate: np.ndarray, bandwidth: np.ndarray | PairTable, reachable: np.ndarray,
               leaving: np.ndarray, chunk: float) -> tuple[np.ndarray, np.ndarray]:
    """Iridium's data-placement heuristic (SIGCOMM 2015, §4.1–4.2) for announced jobs.

    Args:
        inputs: Per job: raw input ids, their clusters and sizes (MB).
        time_left: Seconds until each job arrives.
        gate: Upload and download bandwidth of each site (MB/s).
        bandwidth: Estimated bandwidth between sites, ``[src, dst]`` (MB/s), or the
            :class:`~geosim.modeler.PairTable` of it (read a source's row at a time).
        reachable: Sites that can send or receive now.
        leaving: MB already leaving each site (moves under way); updated in place.
        chunk: Data per move, as a fraction of the job's raw input.

    Returns:
        The raw inputs to move and their destinations.
    """
    n = gate.size
    jobs = []
    for raws, where, size in inputs:
        data = np.bincount(where, weights=size, minlength=n).astype(float)
        order = np.lexsort((raws, size))          # smallest first: chunks take these
        jobs.append({"raws": raws[order], "where": where[order],
                     "size": size[order], "free": size[order] > 0, "data": data,
                     "step": chunk * data.sum(), "time": shuffle_time(data, gate, gate)})
    out_raw, out_dst = [], []
    while True:
        best = None
        for j, job in enumerate(jobs):
            move = _best_move(job, float(time_left[j]), gate, bandwidth, reachable, leaving)
            if move is not None and (best is None or move[0] > best[0]):
                best = (*move, j)
        if best is None:
            break
        _, take, dst, new_time, j = best
        job = jobs[j]
        src = int(job["where"][take[0]])
        mb = float(job["size"][take].sum())
        job["data"][src] -= mb
        job["data"][dst] += mb
        job["free"][take] = False
        job["time"] = new_time
        leaving[src] += mb
        out_raw.append(job["raws"][take])
        out_dst.append(np.full(take.size, dst, dtype=np.int64))
    if not out_raw:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return np.concatenate(out_raw), np.concatenate(out_dst)


def _best_move(job: dict, time_left: float, gate: np.ndarray, bandwidth: np.ndarray | PairTable,
               reachable: np.ndarray, leaving: np.ndarray) -> tuple | None:
    """The move of one chunk that shortens the job's shuffle most per MB, if any."""
    if job["time"] <= 0.0:
        return None
    n = gate.size
    cands = []
    for src in np.flatnonzero(np.bincount(job["where"][job["free"]], minlength=n)):
        if not reachable[src]:
            continue
        idx = np.flatnonzero(job["free"] & (job["where"] == src))
        cum = np.cumsum(job["size"][idx])
        take = idx[: int(np.searchsorted(cum, job["step"] - 1e-9)) + 1]
        mb = float(job["size"][take].sum())
        with np.errstate(divide="ignore"):
            row = bandwidth.row(src) if isinstance(bandwidth, PairTable) else bandwidth[src]
            fits = (leaving[src] + mb) / row <= time_left
        dsts = np.flatnonzero(fits & reachable & (np.arange(n) != src))
        if dsts.size:
            cands.append((take, mb, src, dsts))
    if not cands:
        return None
    rows = np.repeat(job["data"][None, :], sum(c[3].size for c in cands), axis=0)
    i = 0
    for _, mb, src, dsts in cands:
        block = np.arange(i, i + dsts.size)
        rows[block, src] -= mb
        rows[block, dsts] += mb
        i += dsts.size
    times = shuffle_time(rows, gate, gate)
    mbs = np.concatenate([np.full(c[3].size, c[1]) for c in cands])
    value = (job["time"] - times) / mbs
    b = int(np.argmax(value))
    if times[b] >= job["time"] * (1.0 - 1e-9):
        return None
    offsets = np.cumsum([0] + [c[3].size for c in cands])
    c = int(np.searchsorted(offsets, b, side="right")) - 1
    take, _, _, dsts = cands[c]
    return float(value[b]), take, int(dsts[b - offsets[c]]), float(times[b])
