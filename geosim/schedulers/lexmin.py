"""Lexicographic min-max assignment of rows to columns with capacities, exactly.

:func:`lexmin_assign` assigns rows (tasks) to columns (clusters) with at most ``cap[m]``
rows on column ``m`` so that the most rows are placed and, among such assignments, the
sorted (descending) vector of placed costs is lexicographically minimal; ties are broken
by a fixed rule. It is Flutter's placement problem (INFOCOM 2016, §III), a
lexicographical min-max integer program with a totally unimodular constraint matrix,
solved here combinatorially: a maximum flow for the number placeable
(:func:`max_placed`), then min-cost-flow steps on the network source -> row -> column ->
sink, level by level (:func:`_lexmin_kernel`, compiled). :func:`assign_masked` is the
compiled entry for costs already masked (Flutter's compiled stage loop calls it).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import maximum_flow

from geosim.jit import njit
from geosim.sortedkeys import heap_pop, heap_push


def lexmin_assign(cost: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Assign rows to columns, lexicographically minimising the sorted costs, exactly.

    Among assignments of rows (tasks) to columns (clusters) with at most ``cap[m]`` rows
    on column ``m`` and finite cost, those placing the most rows (``k``) are kept; among
    them, the ones whose placed costs, sorted in descending order, are lexicographically
    smallest are optimal. Of the optimal assignments the one returned is the
    lexicographically smallest vector of columns, rows read in their order and a row left
    out counting as larger than any column: ties go to the earlier rows first, each to
    the lowest-numbered column it can take.

    Method. (1) If every row can take its cheapest column (the rows with the smallest
    minima, when not all fit; earlier rows first among equal minima), that is optimal,
    since every entry of the sorted vector is then as small as it can be, and it is the
    assignment the tie rule picks (each row at its lowest-numbered cheapest column, the
    earliest rows placed). (2) Otherwise each row keeps only the columns whose strictly
    cheaper columns hold fewer than ``k`` slots in all: in an optimum every strictly
    cheaper column of a placed row is full, so no optimum is lost. Of the columns tied
    at a row's highest cost kept, only the lowest-numbered ones holding ``k`` slots are
    kept: the other ``k - 1`` rows leave one of their slots free, and moving the row
    there keeps every cost and lowers its column, so the assignment the tie rule picks
    never uses the others (a world whose unobserved pairs share one bandwidth ties
    hundreds of columns there). (3)
    :func:`_lexmin_kernel` then works on the flow network source -> row -> column ->
    sink (capacities 1, 1 and ``cap``), with a flow of value ``k`` (an assignment); see
    there for why the result is exact.

    Args:
        cost: Shape ``(rows, columns)``; ``inf`` where a row may not go.
        cap: Slots per column (integers >= 0).

    Returns:
        The column of each row, ``-1`` for a row left out.
    """
    cost = np.asarray(cost, dtype=float)
    n = cost.shape[0]
    cap = np.asarray(cap, dtype=np.int64)
    c, complete, placeable = mask_costs(cost, cap)
    if not placeable:
        return np.full(n, -1, dtype=np.int64)
    k = int(min(n, cap[cap > 0].sum())) if complete else max_placed(np.isfinite(c), cap)
    got = assign_masked(c, cap, k)
    if got.size != n:  # pragma: no cover - an internal invariant broke
        raise RuntimeError("Flutter's lexicographic assignment failed")
    return got


@njit(cache=True)
def mask_costs(cost, cap):  # pragma: no cover - compiled
    """Costs with ``inf`` where a row may not go, and two flags.

    The flags: whether every column with slots is open to every row, and whether any row
    can be placed at all.
    """
    n, m = cost.shape
    c = np.empty((n, m))
    complete, placeable = True, False
    for r in range(n):
        for j in range(m):
            if cap[j] > 0 and np.isfinite(cost[r, j]):
                c[r, j] = cost[r, j]
                placeable = True
            else:
                c[r, j] = np.inf
                complete = complete and cap[j] <= 0
    return c, complete, placeable


@njit(cache=True)
def cheapest_fit(best, low, cap, k):  # pragma: no cover - compiled
    """Step (1) of :func:`lexmin_assign`: the ``k`` cheapest rows at their cheapest columns.

    Args:
        best: Each row's cheapest column (the first among equals).
        low: Each row's cost there.
        cap: Slots per column.
        k: Rows to place.

    Returns:
        The column of each row (``-1`` for a row left out) and whether that fits in
        ``cap``; when it does not, step (2) is needed.
    """
    out = np.full(best.size, -1, dtype=np.int64)
    chosen = np.argsort(low, kind="mergesort")[:k]
    load = np.zeros(cap.size, dtype=np.int64)
    fits = True
    for r in chosen:
        load[best[r]] += 1
        fits = fits and load[best[r]] <= cap[best[r]]
    if fits:
        for r in chosen:
            out[r] = best[r]
    return out, fits


@njit(cache=True)
def _limit(row, cap, k):  # pragma: no cover - compiled
    """The cost at which a row's columns, cheapest first, first hold ``k`` slots.

    ``inf`` if its finite columns hold fewer. Found level by level (one pass over the
    row per distinct cost, a few in practice), by a stable sort after 16 levels.
    """
    before, limit = 0, -np.inf
    for _ in range(16):
        level = np.inf
        for v in row:
            if limit < v < level:
                level = v
        if level == np.inf:
            return np.inf
        limit = level
        for j in range(row.size):
            if row[j] == limit:
                before += cap[j]
        if before >= k:
            return limit
    before = 0
    for j in np.argsort(row, kind="mergesort"):
        if row[j] == np.inf:
            break
        before += cap[j]
        if before >= k:
            return row[j]
    return np.inf


@njit(cache=True)
def assign_masked(c, cap, k):  # pragma: no cover - compiled
    """Steps (1) to (3) of :func:`lexmin_assign` on the masked costs ``c``."""
    n, m = c.shape
    # (1) everyone at their cheapest column (the first among equals)
    best = np.zeros(n, dtype=np.int64)
    low = np.empty(n)
    for r in range(n):
        for j in range(1, m):
            if c[r, j] < c[r, best[r]]:
                best[r] = j
        low[r] = c[r, best[r]]
    out, fits = cheapest_fit(best, low, cap, k)
    if fits:
        return out
    # (2) candidate columns: those up to the first whose cheaper columns hold k slots, and
    # of the columns tied at that cost, the lowest-numbered ones holding k slots
    rptr = np.zeros(n + 1, dtype=np.int64)
    keep = np.zeros((n, m), dtype=np.bool_)
    for r in range(n):
        limit, room = _limit(c[r], cap, k), 0
        for j in range(m):
            v = c[r, j]
            if np.isfinite(v) and (v < limit or (v == limit and room < k)):
                keep[r, j] = True
                rptr[r + 1] += 1
                if v == limit:
                    room += cap[j]
        rptr[r + 1] += rptr[r]
    cols = np.empty(rptr[n], dtype=np.int64)
    vals = np.empty(rptr[n])
    for r in range(n):
        i = rptr[r]
        for j in range(m):
            if keep[r, j]:
                cols[i], vals[i] = j, c[r, j]
                i += 1
    lev = np.searchsorted(np.unique(vals), vals).astype(np.int64)
    return _lexmin_kernel(rptr, cols, lev, np.argsort(lev, kind="mergesort"),
                          np.minimum(cap, n), k)


def max_placed(allowed: np.ndarray, cap: np.ndarray) -> int:
    """Largest number of rows placeable (a bipartite b-matching, by maximum flow)."""
    n, m = allowed.shape
    usable = cap > 0
    if np.all(allowed[:, usable]):
        return int(min(n, cap[usable].sum()))
    rows, cols = np.nonzero(allowed)
    s, t = n + m, n + m + 1
    src = np.concatenate([np.full(n, s), rows, n + np.arange(m)])
    dst = np.concatenate([np.arange(n), n + cols, np.full(m, t)])
    w = np.concatenate([np.ones(n + rows.size, dtype=np.int32),
                        np.minimum(cap, n).astype(np.int32)])
    graph = sparse.csr_matrix((w, (src, dst)), shape=(n + m + 2, n + m + 2))
    return int(maximum_flow(graph, s, t).flow_value)


# The network of :func:`_lexmin_kernel`. Nodes: rows ``0..n-1``, columns ``n..n+m-1``,
# source ``s = n+m``, sink ``t = n+m+1`` and, for the rerouting of one level, a super
# source ``S = n+m+2`` and super sink ``T = n+m+3``. Arcs, in this order: ``s -> r``
# (n), the candidate edges ``r -> c`` (e, by row then column), ``c -> t`` (m), ``S -> r``
# (n) and ``c -> T`` (m); the last two have capacity 0 outside a level's rerouting.
# A frozen arc keeps its flow: it is in no residual graph.

_BIG = 1 << 60


@njit(cache=True)
def _residual(a, u, tail, head, up, flow, frozen):  # pragma: no cover - compiled
    """The node reached from ``u`` over arc ``a`` in the residual graph, and the step's sign.

    The node is -1 if the arc is not in the residual graph from ``u``; the sign is +1
    along the arc, -1 against it.
    """
    if frozen[a]:
        return -1, 0
    if tail[a] == u:
        if flow[a] < up[a]:
            return head[a], 1
        return -1, 0
    if flow[a] > 0:
        return tail[a], -1
    return -1, 0


@njit(cache=True)
def _send(src, dst, via, tail, head, flow):  # pragma: no cover - compiled
    """Send one unit along the residual path to ``dst`` whose arcs ``via`` records."""
    v = dst
    while v != src:
        a = via[v]
        if head[a] == v:
            flow[a] += 1
            v = tail[a]
        else:
            flow[a] -= 1
            v = head[a]


@njit(cache=True)
def _shortest_path(src, dst, ptr, inc, tail, head, up, flow, frozen, cost, pi, dist, via, hd,
                   hv):  # pragma: no cover - compiled
    """Dijkstra on reduced costs ``cost + pi[u] - pi[v]`` (>= 0), stopping at ``dst``.

    Returns the distance to ``dst`` (``_BIG`` if unreachable); ``via`` records the arc
    reaching each node on the shortest-path tree.
    """
    dist[:] = _BIG
    dist[src] = 0
    size = heap_push(hd, hv, 0, 0, src)
    while size > 0:
        d, u, size = heap_pop(hd, hv, size)
        if d > dist[u]:
            continue
        if u == dst:
            break
        for i in range(ptr[u], ptr[u + 1]):
            a = inc[i]
            v, sign = _residual(a, u, tail, head, up, flow, frozen)
            if v < 0:
                continue
            nd = d + sign * cost[a] + pi[u] - pi[v]
            if nd < dist[v]:
                dist[v] = nd
                via[v] = a
                size = heap_push(hd, hv, size, nd, v)
    return dist[dst]


@njit(cache=True)
def _search(root, dst, backward, ptr, inc, tail, head, up, flow, frozen, via, seen, stamp,
            queue):  # pragma: no cover - compiled
    """Breadth-first search of the residual graph from ``root`` (towards it if ``backward``).

    Marks the nodes found with ``stamp`` in ``seen`` and records in ``via`` the arc by
    which each was found; stops early once ``dst`` is found (``-1``: never).
    """
    seen[root] = stamp
    queue[0] = root
    qh, qt = 0, 1
    while qh < qt:
        w = queue[qh]
        qh += 1
        for i in range(ptr[w], ptr[w + 1]):
            a = inc[i]
            if frozen[a]:
                continue
            if backward:
                if head[a] == w and flow[a] < up[a]:
                    v = tail[a]
                elif tail[a] == w and flow[a] > 0:
                    v = head[a]
                else:
                    continue
            else:
                v, sign = _residual(a, w, tail, head, up, flow, frozen)
                if v < 0:
                    continue
            if seen[v] != stamp:
                seen[v] = stamp
                via[v] = a
                if v == dst:
                    return
                queue[qt] = v
                qt += 1


@njit(cache=True)
def _fix_rows(n, rptr, e0, flow, frozen):  # pragma: no cover - compiled
    """Freeze what conservation at the rows already decides on every flow of the face."""
    for r in range(n):
        lo, hi = e0 + rptr[r], e0 + rptr[r + 1]
        done = frozen[r] and flow[r] == 0
        for a in range(lo, hi):
            done = done or (frozen[a] and flow[a] == 1)
        if done:
            frozen[r] = True
            frozen[lo:hi] = True


@njit(cache=True)
def _settled(n, rptr, lev, e0, flow, frozen, cheapest):  # pragma: no cover - compiled
    """Whether the flow is optimal on the face by the argument of (1); if so, cut the face.

    The face is then frozen down to its optimal flows: rows only at their cheapest level
    on the face, rows whose cheapest level is below the largest placed level placed,
    those above it left out.
    """
    theta = -1
    for r in range(n):
        low, used = _BIG, -1
        if not (frozen[r] and flow[r] == 0):
            for j in range(rptr[r], rptr[r + 1]):
                a = e0 + j
                if flow[a] == 1:
                    used = lev[j]
                if lev[j] < low and not (frozen[a] and flow[a] == 0):
                    low = lev[j]
        if used >= 0 and used != low:
            return False
        cheapest[r] = low
        theta = max(theta, used)
    for r in range(n):
        if flow[r] == 0 and cheapest[r] < theta:
            return False
    for r in range(n):
        for j in range(rptr[r], rptr[r + 1]):
            if lev[j] > cheapest[r]:
                frozen[e0 + j] = True                 # flow 0 there
        if cheapest[r] != theta:
            frozen[r] = True                          # placed below theta, out above
    return True


@njit(cache=True)
def _lexmin_kernel(rptr, cols, lev, order, cap, k):  # pragma: no cover - compiled
    """Step (3) of :func:`lexmin_assign`: the optimal assignment its tie rule picks.

    ``rptr`` delimits each row's candidate edges (columns ``cols``, ascending per row) and
    ``lev`` ranks their costs (equal costs, equal ranks, from 0); ``order`` sorts the
    edges by rank; ``k`` is the maximum number of rows placeable. Returns the column of
    each row (``-1`` left out), or an empty array if an invariant broke.

    Why exact. Comparing sorted cost vectors of equal length ``k`` lexicographically is
    comparing the vectors of counts of rows at each cost level, highest level first.
    Assignments are the integral flows of value ``k``; a *face* is the set of those that
    agree with the current flow ``x`` on the frozen arcs (an arc's flow is fixed at its
    value). The face starts as all of them and, level by level from the top, is cut down
    to the flows whose counts at the levels done so far are lexicographically minimal,
    so that at the end it is exactly the set of optimal assignments:

    - A level that ``x`` does not use (on unfrozen edges) has minimum count 0 on the
      face: its unfrozen edges are frozen at 0.
    - At the highest level ``T`` that ``x`` uses, a min-cost flow problem on the face
      (cost 1 on unfrozen edges at level ``T``, 0 elsewhere) is solved by successive
      shortest paths: the flow on those edges is removed, and each row and column it
      leaves unbalanced is rejoined along a shortest residual path (Dijkstra with
      potentials ``pi``); all costs are >= 0 at the start, so the result has minimum
      cost. The potentials then satisfy complementary slackness with ``x``, so they are
      optimal duals, and by LP duality (the network matrix is totally unimodular) a flow
      of the face is optimal for this level iff every arc of nonzero reduced cost keeps
      the bound ``x`` has it at: those arcs are frozen, which leaves exactly the optimal
      flows. (If every path had length 0, ``pi`` is 0 and only level ``T`` is frozen.)
    - Before solving a level, :func:`_settled` checks the argument of (1) on the face:
      if every placed row is at its cheapest level on the face and no unplaced row is
      cheaper than a placed one, no flow of the face has smaller counts, and the optimal
      ones are exactly those keeping every row at its cheapest level with the same rows
      below and above the largest placed level: the face is frozen down to them.

    Frozen arcs never appear in a residual graph, and arcs that flow conservation at a
    row already decides are frozen too (:func:`_fix_rows`); neither changes the face.

    Tie rule. The face now holds exactly the optimal assignments. Row by row in order,
    each row is moved to the lowest-numbered column it can take on the face (placing it
    if it is out): a flow of the face using edge ``r -> c`` exists iff the residual graph
    has a cycle through it (the difference of two flows decomposes into residual
    cycles), found by one backward search from ``r``; the cycle is applied and the row's
    arcs frozen. This greedy gives the lexicographically smallest vector of columns.
    """
    net = _network(rptr, cols, cap)
    n, m, e = rptr.size - 1, cap.size, cols.size
    nv, na = n + m + 4, net.tail.size
    fail = np.empty(0, dtype=np.int64)
    flow = np.zeros(na, dtype=np.int64)
    frozen = np.zeros(na, dtype=np.bool_)
    work = _Scratch(np.empty(nv, dtype=np.int64), np.empty(nv, dtype=np.int64),
                    np.zeros(nv, dtype=np.int64), np.empty(nv, dtype=np.int64),
                    np.empty(2 * na + 2, dtype=np.int64), np.empty(2 * na + 2, dtype=np.int64))
    stamp = _first_flow(net, rptr, cols, order, cap, k, flow, frozen, work)
    if stamp < 0 or not _minimise_levels(net, rptr, lev, order, _level_ptr(lev, e), flow,
                                         frozen, work):
        return fail
    _tie_rule(net, rptr, flow, frozen, work, stamp)
    out = np.full(n, -1, dtype=np.int64)
    for r in range(n):
        for j in range(rptr[r], rptr[r + 1]):
            if flow[n + j] == 1:
                out[r] = cols[j]
    return out


class _Network(NamedTuple):
    """The network of :func:`_lexmin_kernel` (see the notes above :data:`_BIG`).

    Attributes:
        tail: Tail node of each arc.
        head: Head node of each arc.
        up: Capacity of each arc.
        ptr: Arcs incident to node ``v``: ``inc[ptr[v]:ptr[v + 1]]``.
        inc: Incident arcs, node by node.
    """

    tail: np.ndarray
    head: np.ndarray
    up: np.ndarray
    ptr: np.ndarray
    inc: np.ndarray


class _Scratch(NamedTuple):
    """Work arrays of the searches.

    Attributes:
        dist: Distance of each node (Dijkstra).
        via: Arc by which each node was reached.
        seen: Stamp of the last search that found each node.
        queue: Breadth-first queue.
        hd: Keys of the binary heap.
        hv: Values of the binary heap.
    """

    dist: np.ndarray
    via: np.ndarray
    seen: np.ndarray
    queue: np.ndarray
    hd: np.ndarray
    hv: np.ndarray


@njit(cache=True)
def _network(rptr, cols, cap):  # pragma: no cover - compiled
    """The arcs of :func:`_lexmin_kernel`'s network and each node's incident arcs.

    The capacities of ``S -> r`` and ``c -> T`` are 0 (set during a level's rerouting).
    """
    n = rptr.size - 1
    m = cap.size
    e = cols.size
    s, t, ss, tt = n + m, n + m + 1, n + m + 2, n + m + 3
    nv = n + m + 4
    e0, c0, x0, y0 = n, n + e, n + e + m, n + e + m + n
    na = y0 + m
    tail = np.empty(na, dtype=np.int64)
    head = np.empty(na, dtype=np.int64)
    up = np.zeros(na, dtype=np.int64)
    for r in range(n):
        tail[r], head[r], up[r] = s, r, 1
        tail[x0 + r], head[x0 + r] = ss, r
        for j in range(rptr[r], rptr[r + 1]):
            tail[e0 + j], head[e0 + j], up[e0 + j] = r, n + cols[j], 1
    for c in range(m):
        tail[c0 + c], head[c0 + c], up[c0 + c] = n + c, t, cap[c]
        tail[y0 + c], head[y0 + c] = n + c, tt
    ptr = np.zeros(nv + 1, dtype=np.int64)
    for a in range(na):
        ptr[tail[a] + 1] += 1
        ptr[head[a] + 1] += 1
    for v in range(nv):
        ptr[v + 1] += ptr[v]
    inc = np.empty(2 * na, dtype=np.int64)
    fill = ptr[:-1].copy()
    for a in range(na):
        inc[fill[tail[a]]] = a
        fill[tail[a]] += 1
        inc[fill[head[a]]] = a
        fill[head[a]] += 1
    return _Network(tail, head, up, ptr, inc)


@njit(cache=True)
def _level_ptr(lev, e):  # pragma: no cover - compiled
    """Where each cost level's edges start in the sorted order ``order`` of ``e`` edges.

    Level ``L`` is ``order[lptr[L]:lptr[L + 1]]``.
    """
    n_lev = 0
    for j in range(e):
        n_lev = max(n_lev, lev[j] + 1)
    lptr = np.zeros(n_lev + 1, dtype=np.int64)
    for j in range(e):
        lptr[lev[j] + 1] += 1
    for level in range(n_lev):
        lptr[level + 1] += lptr[level]
    return lptr


@njit(cache=True)
def _first_flow(net, rptr, cols, order, cap, k, flow, frozen,
                work):  # pragma: no cover - compiled
    """A first flow of value ``k``: cheapest edges first, then augmenting paths.

    Returns:
        The searches' stamp so far, or -1 if no flow of value ``k`` was found.
    """
    n, m, e = rptr.size - 1, cap.size, cols.size
    s, t = n + m, n + m + 1
    e0, c0 = n, n + e
    tail, head, up, ptr, inc = net
    stamp = 0
    placed = 0
    for idx in range(e):
        j = order[idx]
        r, c = tail[e0 + j], cols[j]
        if flow[r] == 0 and flow[c0 + c] < cap[c]:
            flow[r] = flow[e0 + j] = 1
            flow[c0 + c] += 1
            placed += 1
    while placed < k:
        stamp += 1
        _search(s, t, False, ptr, inc, tail, head, up, flow, frozen, work.via, work.seen,
                stamp, work.queue)
        if work.seen[t] != stamp:
            return -1
        _send(s, t, work.via, tail, head, flow)
        placed += 1
    return stamp


@njit(cache=True)
def _minimise_levels(net, rptr, lev, order, lptr, flow, frozen,
                     work):  # pragma: no cover - compiled
    """Cut the face down level by level, from the top (see :func:`_lexmin_kernel`).

    Returns:
        False if a rerouting found no path (an invariant broke).
    """
    n = rptr.size - 1
    tail, head, up, ptr, inc = net
    na, nv = tail.size, work.dist.size
    m = nv - n - 4
    e0 = n
    ss, tt = n + m + 2, n + m + 3
    x0 = na - m - n
    y0 = na - m
    cost = np.zeros(na, dtype=np.int64)
    pi = np.zeros(nv, dtype=np.int64)
    cheapest = np.empty(n, dtype=np.int64)
    level = lptr.size - 1
    while True:
        top = level - 1
        while top >= 0:
            used = False
            for idx in range(lptr[top], lptr[top + 1]):
                a = e0 + order[idx]
                if flow[a] == 1 and not frozen[a]:
                    used = True
                    break
            if used:
                break
            for idx in range(lptr[top], lptr[top + 1]):
                frozen[e0 + order[idx]] = True        # unused: flow 0
            top -= 1
        if top < 0:
            return True
        level = top
        if _settled(n, rptr, lev, e0, flow, frozen, cheapest):
            _fix_rows(n, rptr, e0, flow, frozen)
            return True
        # minimise the number of rows at level ``top`` on the face
        moved = 0
        for idx in range(lptr[top], lptr[top + 1]):
            a = e0 + order[idx]
            if frozen[a]:
                continue
            cost[a] = 1
            if flow[a] == 1:
                flow[a] = 0
                up[x0 + tail[a]] += 1
                up[y0 + head[a] - n] += 1
                moved += 1
        pi[:] = 0
        shifted = False
        for _ in range(moved):
            d = _shortest_path(ss, tt, ptr, inc, tail, head, up, flow, frozen, cost, pi,
                               work.dist, work.via, work.hd, work.hv)
            if d >= _BIG:
                return False
            if d > 0:
                shifted = True
                for v in range(nv):
                    pi[v] += min(work.dist[v], d)
            _send(ss, tt, work.via, tail, head, flow)
        up[x0:] = 0
        flow[x0:] = 0
        if shifted:
            for a in range(x0):                       # complementary slackness
                if not frozen[a] and cost[a] + pi[tail[a]] - pi[head[a]] != 0:
                    frozen[a] = True
            _fix_rows(n, rptr, e0, flow, frozen)
        else:                                         # the minimum is 0
            for idx in range(lptr[top], lptr[top + 1]):
                frozen[e0 + order[idx]] = True
        for idx in range(lptr[top], lptr[top + 1]):
            cost[e0 + order[idx]] = 0


@njit(cache=True)
def _tie_rule(net, rptr, flow, frozen, work, stamp):  # pragma: no cover - compiled
    """The tie rule on the face of optimal assignments (see :func:`_lexmin_kernel`).

    Row by row, each row moves to the lowest-numbered column it can take on the face.
    """
    n = rptr.size - 1
    tail, head, up, ptr, inc = net
    m = work.dist.size - n - 4
    e0 = n
    seen, via = work.seen, work.via
    for r in range(n):
        lo, hi = e0 + rptr[r], e0 + rptr[r + 1]
        now = m
        for a in range(lo, hi):
            if flow[a] == 1:
                now = head[a] - n
        want = False
        if not (frozen[r] and flow[r] == 0):
            for a in range(lo, hi):
                if not frozen[a] and flow[a] == 0 and head[a] - n < now:
                    want = True
                    break
        if want:
            stamp += 1
            _search(r, -1, True, ptr, inc, tail, head, up, flow, frozen, via, seen, stamp,
                    work.queue)
            for a in range(lo, hi):
                v = head[a]
                if not frozen[a] and flow[a] == 0 and v - n < now and seen[v] == stamp:
                    flow[a] = 1                       # and back to r along ``via``,
                    _send(r, v, via, head, tail, flow)  # found against the arcs
                    break
        frozen[r] = True
        frozen[lo:hi] = True
