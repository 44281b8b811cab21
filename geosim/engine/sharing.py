"""How transfers share the WAN: each transfer's bandwidth in a span (``links.sharing``).

A transfer (a copy's remote input, or a raw-input move) crosses resources: each directed
WAN link of its route, its source's egress gate and its destination's ingress gate. A
transfer is *active* while its clusters are reachable (a copy's input: its source; a
move: both ends); an inactive one gets bandwidth 0.

- ``"equal"``: every transfer gets an equal share (capacity over the number of transfers
  on it, inactive ones included) of every resource it crosses, and its bandwidth is the
  smallest of those shares. Bandwidth a transfer cannot use because another resource
  holds it back is not passed on.
- ``"maxmin"`` (the default): the max-min fair allocation over the active transfers
  (progressive filling, the bottleneck fairness of flow-level network models such as
  SimGrid's): every active transfer has a resource that is saturated and on which no
  transfer gets more than it, or it gets all it asks (``demand``). No transfer can gain
  without taking from one whose bandwidth is smaller or equal. Inactive transfers take
  nothing.
  Simplification: a streamed input (``links.transfer = "stream"``) asks at most its
  copy's processing rate times its size; when another input of the same copy holds the
  copy back, the transfer uses less than it was given, and the difference is not passed
  on within the span.

Both rules are computed for every span over all the transfers of that span, in one
compiled pass.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from geosim.engine.base import fmin
from geosim.engine.records import Flows

#: The sharing rules, the scenario's ``links.sharing``.
SHARING_RULES = ("equal", "maxmin")

#: Relative tolerance within which two resources' fair levels count as one bottleneck.
LEVEL_RTOL = 1e-12


@njit(cache=True)
def transfer_hops(n_flow, res, starts, move_res, move_starts):  # pragma: no cover - compiled
    """The resources of every transfer, flows then moves, in one layout.

    Transfer ``j`` crosses ``hops[bound[j]:bound[j + 1]]``. (Loops index these directly:
    a helper returning a transfer's array would cost reference counting per call.)
    """
    n_move = move_starts.size
    bound = np.empty(n_flow + n_move + 1, dtype=np.int64)
    for j in range(n_flow):
        bound[j] = starts[j]
    for m in range(n_move):
        bound[n_flow + m] = res.size + move_starts[m]
    bound[n_flow + n_move] = res.size + move_res.size
    return np.concatenate((res, move_res)), bound


@njit(cache=True)
def active_transfers(flow_src, move_src, move_dst, reachable):  # pragma: no cover - compiled
    """Whether each transfer (flows, then moves) is active: its clusters are reachable."""
    n_flow, n_move = flow_src.size, move_src.size
    active = np.empty(n_flow + n_move, dtype=np.bool_)
    for j in range(n_flow):
        active[j] = reachable[flow_src[j]]
    for m in range(n_move):
        active[n_flow + m] = reachable[move_src[m]] and reachable[move_dst[m]]
    return active


@njit(cache=True)
def equal_shares(n_flow, res, starts, move_res, move_starts, users, cap, active,
                 bw):  # pragma: no cover - compiled
    """``"equal"`` sharing into ``bw``: the smallest of ``cap / users`` on each path.

    Each resource's share is divided once rather than once per hop (a resource carries
    many transfers; the divisions were a quarter of the time), and each transfer's
    resources are read in place, flows' from ``res``, moves' from ``move_res``.
    """
    share = np.empty(cap.size)
    for r in range(cap.size):
        share[r] = cap[r] / users[r] if users[r] > 0 else np.inf
    for j in range(n_flow):
        hi = starts[j + 1] if j + 1 < n_flow else res.size
        bw[j] = _path_min(share, res, starts[j], hi) if active[j] else 0.0
    n_move = move_starts.size
    for m in range(n_move):
        hi = move_starts[m + 1] if m + 1 < n_move else move_res.size
        bw[n_flow + m] = (_path_min(share, move_res, move_starts[m], hi)
                          if active[n_flow + m] else 0.0)


@njit(cache=True, inline="always")
def _path_min(share, hops, lo, hi):  # pragma: no cover - compiled
    """The smallest ``share`` over ``hops[lo:hi]`` (a transfer's resources)."""
    b = share[hops[lo]]
    for h in range(lo + 1, hi):
        b = fmin(b, share[hops[h]])
    return b


@njit(cache=True)
def maxmin_shares(n_flow, res, starts, move_res, move_starts, cap, active, demand, bw,
                  local):  # pragma: no cover - compiled
    """``"maxmin"`` sharing into ``bw``, by progressive filling.

    All unfrozen transfers rise together. The next level is the smallest of every
    resource's fair level (capacity left over its unfrozen transfers) and the smallest
    unmet demand (``demand``: per transfer, empty for none); the transfers held there
    freeze at it: those whose demand it is, or else every unfrozen transfer on a resource
    whose fair level is within :data:`LEVEL_RTOL` of it (resources in ascending order).
    Each level is computed from the capacity left, not accumulated, so rates are exact
    to rounding.

    Only the resources some active transfer crosses are worked on, numbered in the order
    first met through ``local`` (per resource of the world: -1, as it is left), so that
    the cost follows the transfers, not the size of the world: scratch of the size of
    the world, made per call, cost more than the filling on 10 000 clusters. Each level
    scans only the resources that still carry unfrozen transfers.
    """
    n = active.size
    hops, bound = transfer_hops(n_flow, res, starts, move_res, move_starts)
    used = np.empty(hops.size, dtype=np.int64)      # the world's id of each resource used
    at = np.empty(hops.size, dtype=np.int64)        # each hop's resource, numbered anew
    n_used = 0
    remaining = 0
    for j in range(n):
        bw[j] = 0.0
        if active[j]:
            remaining += 1
            for h in range(bound[j], bound[j + 1]):
                r = hops[h]
                if local[r] < 0:
                    local[r] = n_used
                    used[n_used] = r
                    n_used += 1
                at[h] = local[r]
    if remaining == 0:
        return                          # (no resource was numbered)
    count = np.zeros(n_used, dtype=np.int64)
    for j in range(n):
        if active[j]:
            for h in range(bound[j], bound[j + 1]):
                count[at[h]] += 1
    # The active transfers on each resource (CSR).
    ptr = np.zeros(n_used + 1, dtype=np.int64)
    for u in range(n_used):
        ptr[u + 1] = ptr[u] + count[u]
    members = np.empty(ptr[n_used], dtype=np.int64)
    fill = ptr[:n_used].copy()
    for j in range(n):
        if active[j]:
            for h in range(bound[j], bound[j + 1]):
                members[fill[at[h]]] = j
                fill[at[h]] += 1
    left = np.empty(n_used)             # capacity not yet given to frozen transfers
    for u in range(n_used):
        left[u] = cap[used[u]]
    frozen = ~active
    order = np.argsort(demand) if demand.size else np.empty(0, dtype=np.int64)
    d = 0
    bottleneck = np.empty(n_used, dtype=np.int64)
    # The resources still carrying unfrozen transfers, dropped as they empty, so that a
    # level costs the resources left rather than all those used (a resource never
    # regains transfers).
    open_res = np.arange(n_used)
    n_open = n_used
    while remaining:
        level = np.inf
        k = 0
        for i in range(n_open):
            u = open_res[i]
            if count[u] > 0:
                open_res[k] = u
                k += 1
                level = min(level, max(left[u], 0.0) / count[u])
        n_open = k
        while d < order.size and frozen[order[d]]:
            d += 1
        if d < order.size and demand[order[d]] <= level:
            level = demand[order[d]]
            while d < order.size and (frozen[order[d]] or demand[order[d]] <= level):
                j = order[d]
                if not frozen[j]:
                    # Freeze j at its demand (written out: a helper taking these arrays
                    # cost reference counting per transfer).
                    bw[j] = demand[j]
                    frozen[j] = True
                    for h in range(bound[j], bound[j + 1]):
                        left[at[h]] -= bw[j]
                        count[at[h]] -= 1
                    remaining -= 1
                d += 1
            continue
        n_b = 0
        limit = level * (1.0 + LEVEL_RTOL)
        for i in range(n_open):
            u = open_res[i]
            if max(left[u], 0.0) / count[u] <= limit:
                bottleneck[n_b] = used[u]       # by the world's id: ascending below
                n_b += 1
        bottleneck[:n_b].sort()
        for b in range(n_b):
            u = local[bottleneck[b]]
            for q in range(ptr[u], ptr[u + 1]):
                j = members[q]
                if not frozen[j]:
                    bw[j] = level           # freeze j at the level, as above
                    frozen[j] = True
                    for h in range(bound[j], bound[j + 1]):
                        left[at[h]] -= level
                        count[at[h]] -= 1
                    remaining -= 1
    for u in range(n_used):
        local[used[u]] = -1


@njit(cache=True)
def allocate(flows, move_src, move_dst, cap, reachable, maxmin, demand,
             local):  # pragma: no cover - compiled
    """Bandwidth (MB/s) of every transfer of a span: the flows', then the moves'.

    Args:
        flows: The span's :class:`~geosim.engine.records.Flows`, as a plain tuple.
        move_src: Source cluster of each raw-input move.
        move_dst: Destination cluster of each raw-input move.
        cap: Capacity of every resource (MB/s).
        reachable: Whether each cluster is reachable.
        maxmin: ``"maxmin"`` sharing (else ``"equal"``).
        demand: The most each transfer can use (``"maxmin"`` only; empty: no limit).
        local: -1 per resource (``"maxmin"``'s scratch, left as found).

    Returns:
        The bandwidths, and whether each transfer is active.
    """
    f = Flows(*flows)
    active = active_transfers(f.src, move_src, move_dst, reachable)
    bw = np.empty(active.size)
    n_flow = f.src.size
    if maxmin:
        maxmin_shares(n_flow, f.res, f.starts, f.move_res, f.move_starts, cap, active, demand,
                      bw, local)
    else:
        users = np.zeros(cap.size, dtype=np.int64)
        for h in range(f.res.size):
            users[f.res[h]] += 1
        for h in range(f.move_res.size):
            users[f.move_res[h]] += 1
        equal_shares(n_flow, f.res, f.starts, f.move_res, f.move_starts, users, cap, active,
                     bw)
    return bw, active

