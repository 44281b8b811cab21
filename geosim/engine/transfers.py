"""Transfers: copies' inputs, the flows that fetch them, raw-input moves and traffic.

Each transfer of a remote input crosses resources (each directed WAN link of its route,
the source's egress gate, the destination's ingress gate) that it shares with the other
transfers as ``links.sharing`` says (:mod:`geosim.engine.sharing`). Raw-input moves
(before their job arrives) share the same resources.
"""

from __future__ import annotations

import numba
import numpy as np

from geosim.engine.base import EPS, SchedulingError
from geosim.engine.records import Flows, Graph, Traffic
from geosim.engine.tables import CopyCols, InputCols
from geosim.jit import njit, prange
from geosim.routes import Routes
from geosim.threads import part_bounds, wide


class RawMoves:
    """Raw inputs on their way to another cluster before their job arrives.

    Attributes:
        raw, src, dst: Each move's raw input and its clusters.
        got: The fraction of each that has arrived.
        moved_mb: MB of raw input that reached its new cluster.
        done: Moves completed.
        abandoned: Moves still running when their job arrived.
    """

    def __init__(self):
        self.raw = np.empty(0, dtype=np.int64)
        self.src = np.empty(0, dtype=np.int64)
        self.dst = np.empty(0, dtype=np.int64)
        self.got = np.empty(0)
        self.moved_mb = 0.0
        self.done = 0
        self.abandoned = 0

    def start(self, raws: np.ndarray, clusters: np.ndarray,
              owners: tuple[np.ndarray, np.ndarray], jobs: tuple[int, int],
              raw_cluster: np.ndarray, n_clusters: int) -> bool:
        """Check and start moves of ``raws`` to ``clusters``; whether any started.

        Args:
            raws: Raw inputs to move.
            clusters: The cluster each goes to.
            owners: The task of every raw input, and the job of every task.
            jobs: The first job not arrived and the first not announced: a raw input
                moves only between its job's announcement and its arrival.
            raw_cluster: The cluster holding every raw input.
            n_clusters: Clusters of the world.

        Raises:
            SchedulingError: A raw input of a job not announced or already arrived,
                already moving, or moved to the cluster holding it or to no cluster.
        """
        raws = np.atleast_1d(np.asarray(raws, dtype=np.int64))
        clusters = np.atleast_1d(np.asarray(clusters, dtype=np.int64))
        if raws.shape != clusters.shape:
            raise SchedulingError(f"{raws.size} raw inputs but {clusters.size} clusters")
        if raws.size == 0:
            return False
        raw_task, task_job = owners
        if raws.min() < 0 or raws.max() >= raw_task.size:
            raise SchedulingError(f"raw inputs {raws.tolist()} outside 0..{raw_task.size - 1}")
        job = task_job[raw_task[raws]]
        bad = (job < jobs[0]) | (job >= jobs[1])
        if bad.any():
            raise SchedulingError(f"raw input {int(raws[bad][0])} belongs to job "
                                  f"{int(job[bad][0])}, which has arrived or is not announced")
        if np.unique(raws).size < raws.size or np.isin(raws, self.raw).any():
            raise SchedulingError("a raw input is moved twice at once")
        src = raw_cluster[raws]
        if (clusters < 0).any() or (clusters >= n_clusters).any() or (clusters == src).any():
            raise SchedulingError(f"cannot move raw inputs {raws.tolist()} from clusters "
                                  f"{src.tolist()} to {clusters.tolist()}")
        self.add(raws, src, clusters)
        return True

    def add(self, raws: np.ndarray, src: np.ndarray, dst: np.ndarray) -> None:
        """Start moves (already checked) of ``raws`` from ``src`` to ``dst``."""
        self.raw = np.concatenate([self.raw, raws])
        self.src = np.concatenate([self.src, src])
        self.dst = np.concatenate([self.dst, dst])
        self.got = np.concatenate([self.got, np.zeros(raws.size)])

    def drop(self, mask: np.ndarray) -> None:
        """Forget the moves of ``mask``."""
        keep = ~mask
        self.raw, self.src = self.raw[keep], self.src[keep]
        self.dst, self.got = self.dst[keep], self.got[keep]

    def advance(self, bw: np.ndarray, raw_size: np.ndarray,
                dt: float) -> tuple[np.ndarray, np.ndarray]:
        """Run the moves through ``dt`` seconds at bandwidths ``bw`` (MB/s).

        Returns:
            MB each move carried, and which moves have completed.
        """
        size = raw_size[self.raw]
        with np.errstate(divide="ignore", invalid="ignore"):
            got = np.where(size > 0, np.minimum(self.got + bw * dt / size, 1.0), 1.0)
        got[got >= 1.0 - EPS] = 1.0
        moved = (got - self.got) * size
        self.got = got
        done = got >= 1.0
        if done.any():
            self.moved_mb += float(size[done].sum())
            self.done += int(done.sum())
        return moved, done


def flow_structure(live: np.ndarray, copies: tuple, inputs: tuple, move_src: np.ndarray,
                   move_dst: np.ndarray, routes: Routes, done: float) -> Flows:
    """The :class:`~geosim.engine.records.Flows` of the live copies and the raw-input moves.

    Lists the flows once (:func:`list_flows`), finds the routes of their ``(src, dst)``
    pairs in the routes' table (:func:`route_rows`) and lays out the resources each flow
    and move crosses (:func:`flow_resources`). Pairs whose routes are not in the table
    yet are added to it, and only their rows are looked up again (all of them when the
    table was emptied to stay in its budget: it is then refilled, and allowed over it
    for the pairs of these flows).

    Args:
        live: Live copies.
        copies: The copies table's records (see :mod:`geosim.engine.records`).
        inputs: The inputs table's records.
        move_src: Source cluster of each raw-input move.
        move_dst: Destination cluster of each raw-input move.
        routes: The world's routes.
        done: Received fraction from which an input counts as arrived.
    """
    if wide(live.size):
        idx, pos, src, dst = list_flows_wide(live, copies, inputs, done,
                                             numba.get_num_threads())
    else:
        idx, pos, src, dst = list_flows(live, copies, inputs, done)
    rows = np.full(idx.size + move_src.size, -1, dtype=np.int64)
    clear = True
    while True:
        keys, ids, dense, ptr, route_res, epoch = routes.pair_table()
        missing = route_rows(idx, src, dst, move_src, move_dst, inputs, keys, ids, dense,
                             epoch, routes.n_clusters, rows)
        if missing.size == 0:
            layout = (flow_resources_wide(pos, rows, idx.size, ptr, route_res,
                                          numba.get_num_threads()) if wide(idx.size)
                      else flow_resources(pos, rows, idx.size, ptr, route_res))
            return Flows(idx, pos, src, dst, *layout)
        routes.add_pairs(missing, clear)
        if routes.pair_table()[-1] != epoch:      # emptied: the rows found mean nothing
            rows[:] = -1
        clear = False


# ---------------------------------------------------------------------- compiled kernels
@njit(cache=True)
def list_flows(live, copies, inputs, done):  # pragma: no cover - compiled
    """Remote inputs of ``live`` copies still being fetched, copy by copy.

    ``copies`` and ``inputs`` are the tables' records (as plain tuples, see
    :mod:`geosim.engine.records`); ``done`` is the received fraction from which an input
    counts as arrived.

    Returns:
        Each flow's input row, the position of its copy in ``live``, its source and its
        destination cluster.
    """
    total = _input_bound(0, live.size, live, copies)
    idx, pos = np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int64)
    src, dst = np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int64)
    n_flow = _fill_flows(0, live.size, 0, live, copies, inputs, done, idx, pos, src, dst)
    return idx[:n_flow], pos[:n_flow], src[:n_flow], dst[:n_flow]


@njit(cache=True)
def _input_bound(lo, hi, live, copies):  # pragma: no cover - compiled
    """Inputs of the live copies ``lo:hi``: a bound on their flows."""
    copies = CopyCols(*copies)
    total = 0
    for p in range(lo, hi):
        c = live[p]
        total += max(copies.in_hi[c] - copies.in_lo[c], 0)
    return total


@njit(cache=True)
def _fill_flows(lo, hi, at, live, copies, inputs, done, idx, pos, src,
                dst):  # pragma: no cover - compiled
    """Write the flows of the live copies ``lo:hi`` from position ``at``; how many."""
    copies, inputs = CopyCols(*copies), InputCols(*inputs)
    in_lo, in_hi, cluster = copies.in_lo, copies.in_hi, copies.cluster
    i_src, i_size, i_received = inputs.src, inputs.size, inputs.received
    n_flow = at
    for p in range(lo, hi):
        c = live[p]
        d = cluster[c]
        for i in range(in_lo[c], in_hi[c]):
            s = i_src[i]
            if s != d and i_size[i] > 0 and i_received[i] < done:
                idx[n_flow], pos[n_flow], src[n_flow], dst[n_flow] = i, p, s, d
                n_flow += 1
    return n_flow - at


@njit(cache=True, parallel=True)
def list_flows_wide(live, copies, inputs, done, parts):  # pragma: no cover - compiled
    """:func:`list_flows` with the copies split into ``parts`` among the threads.

    Each part writes its flows from its copies' bound on, and the parts are then moved
    together.
    """
    bounds = part_bounds(live.size, parts)
    start = np.zeros(parts + 1, dtype=np.int64)
    for k in prange(parts):
        start[k + 1] = _input_bound(bounds[k], bounds[k + 1], live, copies)
    for k in range(parts):
        start[k + 1] += start[k]
    total = start[parts]
    idx, pos = np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int64)
    src, dst = np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int64)
    found = np.empty(parts, dtype=np.int64)
    for k in prange(parts):
        found[k] = _fill_flows(bounds[k], bounds[k + 1], start[k], live, copies, inputs, done,
                               idx, pos, src, dst)
    n_flow = found[0]
    for k in range(1, parts):
        for j in range(start[k], start[k] + found[k]):      # to the left: in order
            idx[n_flow], pos[n_flow], src[n_flow], dst[n_flow] = idx[j], pos[j], src[j], dst[j]
            n_flow += 1
    return idx[:n_flow], pos[:n_flow], src[:n_flow], dst[:n_flow]


@njit(cache=True)
def flow_kernel(live, copies, inputs, move_src, move_dst, keys, ids, dense, ptr, route_res,
                epoch, n_clusters, done):  # pragma: no cover - compiled
    """The arrays of :class:`~geosim.engine.records.Flows`, and the pairs without a route.

    Lists the flows (:func:`list_flows`), finds the row of each flow's and each move's
    pair ``src * n + dst`` in the route table (``keys`` sorted, row ``ids[k]``, or
    ``dense[key]`` when ``dense`` is not empty; route ``p``'s resources are
    ``route_res[ptr[p]:ptr[p+1]]``) and lays out the resources
    (:func:`flow_resources`). A flow's row is kept with its input (``route``, valid in
    the table's ``epoch``), so that it is looked up once. When some pairs are not in
    the table, the flows come back empty with those pairs' keys (repeats included), to
    be added before a second pass.
    """
    idx, pos, src, dst = list_flows(live, copies, inputs, done)
    rows = np.full(idx.size + move_src.size, -1, dtype=np.int64)
    missing = route_rows(idx, src, dst, move_src, move_dst, inputs, keys, ids, dense, epoch,
                         n_clusters, rows)
    n_flow = idx.size
    if missing.size:
        rows = rows[:0]
        idx, pos, src, dst = idx[:0], pos[:0], src[:0], dst[:0]
        n_flow = 0
    res, starts, group, move_res, move_starts = flow_resources(pos, rows, n_flow, ptr,
                                                                route_res)
    return idx, pos, src, dst, res, starts, group, move_res, move_starts, missing


@njit(cache=True)
def route_rows(idx, src, dst, move_src, move_dst, inputs, keys, ids, dense, epoch, n_clusters,
               rows):  # pragma: no cover - compiled
    """Fill each ``rows[j] < 0`` with the row of transfer ``j``'s pair in the route table.

    Transfers are the flows (input rows ``idx``, clusters ``src`` and ``dst``), then the
    moves. A flow's row is kept with its input (``route``, valid in the table's
    ``epoch``), so that it is looked up once. The table is ``keys`` sorted with rows
    ``ids``, or ``dense[key]`` when ``dense`` is not empty (key ``src * n + dst``).

    Returns:
        The keys of the pairs not in the table (repeats included); their rows stay -1.
    """
    route, route_epoch = InputCols(*inputs).route, InputCols(*inputs).route_epoch
    n_flow = idx.size
    n_missing = 0
    for j in range(rows.size):
        if rows[j] >= 0:
            continue
        if j < n_flow:
            if route_epoch[idx[j]] == epoch:
                rows[j] = route[idx[j]]
                continue
            key = src[j] * n_clusters + dst[j]
        else:
            key = move_src[j - n_flow] * n_clusters + move_dst[j - n_flow]
        if dense.size:
            row = dense[key]
        else:
            k = np.searchsorted(keys, key)
            row = ids[k] if k < keys.size and keys[k] == key else -1
        if row >= 0:
            rows[j] = row
            if j < n_flow:
                route[idx[j]], route_epoch[idx[j]] = row, epoch
        else:
            n_missing += 1
    missing = np.empty(n_missing, dtype=np.int64)
    m = 0
    for j in range(rows.size):
        if rows[j] < 0:
            missing[m] = (src[j] * n_clusters + dst[j] if j < n_flow else
                          move_src[j - n_flow] * n_clusters + move_dst[j - n_flow])
            m += 1
    return missing


@njit(cache=True)
def flow_resources(pos, rows, n_flow, ptr, route_res):  # pragma: no cover - compiled
    """Resources crossed by the flows and the moves, from their rows of the route table.

    ``rows`` holds the row of each flow's route, then of each move's; route ``p``'s
    resources are ``route_res[ptr[p]:ptr[p+1]]``.

    Returns:
        ``res``, ``starts``, ``group``, ``move_res`` and ``move_starts`` of
        :class:`~geosim.engine.records.Flows`.
    """
    res = np.empty(_hop_count(0, n_flow, rows, ptr), dtype=np.int64)
    starts = np.empty(n_flow, dtype=np.int64)
    _fill_hops(0, n_flow, 0, rows, ptr, route_res, res, starts, 0)
    group = np.empty(_group_count(0, n_flow, pos), dtype=np.int64)
    _fill_groups(0, n_flow, 0, pos, group)
    return (res, starts, group, *_move_hops(rows, n_flow, ptr, route_res))


@njit(cache=True, parallel=True)
def flow_resources_wide(pos, rows, n_flow, ptr, route_res, parts):  # pragma: no cover
    """:func:`flow_resources` with the flows split into ``parts`` among the threads."""
    bounds = part_bounds(n_flow, parts)
    hops = np.zeros(parts + 1, dtype=np.int64)
    groups = np.zeros(parts + 1, dtype=np.int64)
    for k in prange(parts):
        hops[k + 1] = _hop_count(bounds[k], bounds[k + 1], rows, ptr)
        groups[k + 1] = _group_count(bounds[k], bounds[k + 1], pos)
    for k in range(parts):
        hops[k + 1] += hops[k]
        groups[k + 1] += groups[k]
    res = np.empty(hops[parts], dtype=np.int64)
    starts = np.empty(n_flow, dtype=np.int64)
    group = np.empty(groups[parts], dtype=np.int64)
    for k in prange(parts):
        _fill_hops(bounds[k], bounds[k + 1], hops[k], rows, ptr, route_res, res, starts, 0)
        _fill_groups(bounds[k], bounds[k + 1], groups[k], pos, group)
    move_res, move_starts = _move_hops(rows, n_flow, ptr, route_res)
    return res, starts, group, move_res, move_starts


@njit(cache=True)
def _hop_count(lo, hi, rows, ptr):  # pragma: no cover - compiled
    """Resources of the routes of rows ``rows[lo:hi]`` together."""
    n_hop = 0
    for j in range(lo, hi):
        n_hop += ptr[rows[j] + 1] - ptr[rows[j]]
    return n_hop


@njit(cache=True)
def _fill_hops(lo, hi, h, rows, ptr, route_res, res, starts,
               first):  # pragma: no cover - compiled
    """Lay out the resources of transfers ``lo:hi`` from ``res[h]`` (``starts[j - first]``)."""
    for j in range(lo, hi):
        starts[j - first] = h
        for q in range(ptr[rows[j]], ptr[rows[j] + 1]):
            res[h] = route_res[q]
            h += 1


@njit(cache=True)
def _group_count(lo, hi, pos):  # pragma: no cover - compiled
    """Flows among ``lo:hi`` that start a copy's run (``pos`` changes there)."""
    n_group = 0
    for j in range(lo, hi):
        if j == 0 or pos[j] != pos[j - 1]:
            n_group += 1
    return n_group


@njit(cache=True)
def _fill_groups(lo, hi, g, pos, group):  # pragma: no cover - compiled
    """Write the runs' starts among flows ``lo:hi`` from ``group[g]``."""
    for j in range(lo, hi):
        if j == 0 or pos[j] != pos[j - 1]:
            group[g] = j
            g += 1


@njit(cache=True)
def _move_hops(rows, n_flow, ptr, route_res):  # pragma: no cover - compiled
    """``move_res`` and ``move_starts``: the moves' resources (rows after ``n_flow``)."""
    move_res = np.empty(_hop_count(n_flow, rows.size, rows, ptr), dtype=np.int64)
    move_starts = np.empty(rows.size - n_flow, dtype=np.int64)
    _fill_hops(n_flow, rows.size, 0, rows, ptr, route_res, move_res, move_starts, n_flow)
    return move_res, move_starts


@njit(cache=True)
def account_kernel(src, dst, moved, res, starts, dt, traffic, out, into,
                   per_res):  # pragma: no cover - compiled
    """Add MB moved to the :class:`~geosim.engine.records.Traffic` counters.

    The gates count MB per second of ``dt``. Sums run in the order of the transfers, as
    ``np.bincount`` adds its weights: per cluster and per resource into the zeroed
    scratch ``out``, ``into`` and ``per_res``, whose touched entries are then added to the
    counters and zeroed again, so a call costs at most the transfers and their hops, not
    the size of the world. (An entry whose sum is zero adds nothing, as adding ``+0.0``
    would.)

    Returns:
        The MB moved in all, summed in the order of the transfers.
    """
    traffic = Traffic(*traffic)
    gate_out, gate_in, link_mb = traffic.gate_out, traffic.gate_in, traffic.link
    egress, ingress = traffic.egress, traffic.ingress
    total = 0.0
    for j in range(moved.size):
        total += moved[j]
        out[src[j]] += moved[j]
        into[dst[j]] += moved[j]
        end = starts[j + 1] if j + 1 < starts.size else res.size
        for h in range(starts[j], end):
            per_res[res[h]] += moved[j]
    # The touched entries are found through the transfers (each source, then destination),
    # or by a sweep of the counters when that is shorter (a small world with many
    # transfers). The loops are written out: with a helper per entry that writes the
    # arrays it is passed, this kernel took 2.3 times as long (reference counting per call).
    sweep = 2 * moved.size > out.size
    for i in range(out.size if sweep else 2 * moved.size):
        c = i if sweep else (src[i >> 1] if i & 1 == 0 else dst[i >> 1])
        if out[c] != 0.0:
            gate_out[c] += out[c] / dt
            egress[c] += out[c]
            out[c] = 0.0
        if into[c] != 0.0:
            gate_in[c] += into[c] / dt
            ingress[c] += into[c]
            into[c] = 0.0
    sweep = res.size > per_res.size
    for i in range(per_res.size if sweep else res.size):
        d = i if sweep else res[i]
        if per_res[d] != 0.0:
            if d < link_mb.size:
                link_mb[d] += per_res[d]
            per_res[d] = 0.0
    return total


@njit(cache=True)
def inputs_kernel(tasks, graph, task_cluster):  # pragma: no cover - compiled
    """Inputs of ``tasks`` (raw data, then parents' outputs), grouped by task in order.

    ``graph`` is the :class:`~geosim.engine.records.Graph`; a parent's output is where
    the parent ran (``task_cluster``).
    """
    graph = Graph(*graph)
    raw_ptr, in_ptr = graph.raw_ptr, graph.in_ptr
    total = 0
    for t in tasks:
        total += raw_ptr[t + 1] - raw_ptr[t] + in_ptr[t + 1] - in_ptr[t]
    owner = np.empty(total, dtype=np.int64)
    src = np.empty(total, dtype=np.int64)
    size = np.empty(total)
    j = 0
    for i in range(tasks.size):
        t = tasks[i]
        for r in range(raw_ptr[t], raw_ptr[t + 1]):
            owner[j], src[j], size[j] = i, graph.raw_cluster[r], graph.raw_size[r]
            j += 1
        for e in range(in_ptr[t], in_ptr[t + 1]):
            owner[j], src[j], size[j] = i, task_cluster[graph.in_src[e]], graph.in_size[e]
            j += 1
    return owner, src, size


@njit(cache=True)
def count_inputs(tasks, graph):  # pragma: no cover - compiled
    """Number of inputs (raw, then parents' outputs) of ``tasks`` together."""
    graph = Graph(*graph)
    raw_ptr, in_ptr = graph.raw_ptr, graph.in_ptr
    total = 0
    for t in tasks:
        total += raw_ptr[t + 1] - raw_ptr[t] + in_ptr[t + 1] - in_ptr[t]
    return total


@njit(cache=True)
def fill_inputs(tasks, ids, saved, row, graph, task_cluster, inputs,
                copies):  # pragma: no cover - compiled
    """Write the inputs of new copies ``ids`` of ``tasks`` from row ``row`` of the inputs.

    In the order of :func:`inputs_kernel`; each input has received its copy's ``saved``
    fraction; each copy's inputs are rows ``in_lo:in_hi`` (``copies``, ``inputs``: the
    tables' records).
    """
    graph, inputs, copies = Graph(*graph), InputCols(*inputs), CopyCols(*copies)
    i_copy, i_src, i_size, i_received = inputs.copy, inputs.src, inputs.size, inputs.received
    j = row
    for i in range(tasks.size):
        t, c, got = tasks[i], ids[i], saved[i]
        copies.in_lo[c] = j
        for r in range(graph.raw_ptr[t], graph.raw_ptr[t + 1]):
            i_copy[j], i_src[j], i_size[j] = c, graph.raw_cluster[r], graph.raw_size[r]
            i_received[j] = got
            j += 1
        for e in range(graph.in_ptr[t], graph.in_ptr[t + 1]):
            i_copy[j], i_src[j], i_size[j] = c, task_cluster[graph.in_src[e]], graph.in_size[e]
            i_received[j] = got
            j += 1
        copies.in_hi[c] = j


@njit(cache=True)
def homes_kernel(owner, src, size, n_clusters, home):  # pragma: no cover - compiled
    """Cluster of the largest summed input of each owner (ties: lowest id) into ``home``.

    ``owner`` is grouped; sizes add up in their order, as ``np.bincount`` adds weights.
    """
    total = np.zeros(n_clusters)
    seen = np.zeros(n_clusters, dtype=np.bool_)
    lo = 0
    while lo < owner.size:
        hi = lo
        while hi < owner.size and owner[hi] == owner[lo]:
            c = src[hi]
            if seen[c]:
                total[c] += size[hi]
            else:
                seen[c] = True
                total[c] = 0.0 + size[hi]
            hi += 1
        best = -1
        for j in range(lo, hi):
            c = src[j]
            if best < 0 or total[c] > total[best] or (total[c] == total[best] and c < best):
                best = c
        home[owner[lo]] = best
        for j in range(lo, hi):
            seen[src[j]] = False
        lo = hi


def new_traffic(n_clusters: int, n_links: int) -> Traffic:
    """Zeroed traffic counters of a world of ``n_clusters`` and ``n_links``."""
    return Traffic(np.zeros(n_clusters), np.zeros(n_clusters), np.zeros(n_clusters),
                   np.zeros(n_clusters), np.zeros(2 * n_links))
