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
def maxmin_shares(n_flow, res, starts, move_res, move_starts, cap, active, demand,
                  bw):  # pragma: no cover - compiled
    """``"maxmin"`` sharing into ``bw``, by progressive filling.

    All unfrozen transfers rise together. The next level is the smallest of every
    resource's fair level (capacity left over its unfrozen transfers) and the smallest
    unmet demand (``demand``: per transfer, empty for none); the transfers held there
    freeze at it: those whose demand it is, or else every unfrozen transfer on a resource
    whose fair level is within :data:`LEVEL_RTOL` of it. Each level is computed from
    the capacity left, not accumulated, so rates are exact to rounding.
    """
    n, n_res = active.size, cap.size
    hops, bound = transfer_hops(n_flow, res, starts, move_res, move_starts)
    count = np.zeros(n_res, dtype=np.int64)
    remaining = 0
    for j in range(n):
        bw[j] = 0.0
        if active[j]:
            remaining += 1
            for h in range(bound[j], bound[j + 1]):
                count[hops[h]] += 1
    if remaining == 0:
        return
    # The active transfers on each resource (CSR), and the resources used.
    ptr = np.zeros(n_res + 1, dtype=np.int64)
    n_used = 0
    for r in range(n_res):
        ptr[r + 1] = ptr[r] + count[r]
        if count[r]:
            n_used += 1
    used = np.empty(n_used, dtype=np.int64)
    u = 0
    for r in range(n_res):
        if count[r]:
            used[u] = r
            u += 1
    members = np.empty(ptr[n_res], dtype=np.int64)
    fill = ptr[:n_res].copy()
    for j in range(n):
        if active[j]:
            for h in range(bound[j], bound[j + 1]):
                members[fill[hops[h]]] = j
                fill[hops[h]] += 1
    left = cap.copy()                   # capacity not yet given to frozen transfers
    frozen = ~active
    order = np.argsort(demand) if demand.size else np.empty(0, dtype=np.int64)
    d = 0
    bottleneck = np.empty(n_used, dtype=np.int64)
    while remaining:
        level = np.inf
        for r in used:
            if count[r] > 0:
                level = min(level, max(left[r], 0.0) / count[r])
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
                        left[hops[h]] -= bw[j]
                        count[hops[h]] -= 1
                    remaining -= 1
                d += 1
            continue
        n_b = 0
        limit = level * (1.0 + LEVEL_RTOL)
        for r in used:
            if count[r] > 0 and max(left[r], 0.0) / count[r] <= limit:
                bottleneck[n_b] = r
                n_b += 1
        for b in range(n_b):
            r = bottleneck[b]
            for q in range(ptr[r], ptr[r + 1]):
                j = members[q]
                if not frozen[j]:
                    bw[j] = level           # freeze j at the level, as above
                    frozen[j] = True
                    for h in range(bound[j], bound[j + 1]):
                        left[hops[h]] -= level
                        count[hops[h]] -= 1
                    remaining -= 1


@njit(cache=True)
def allocate(flows, move_src, move_dst, cap, reachable, maxmin,
             demand):  # pragma: no cover - compiled
    """Bandwidth (MB/s) of every transfer of a span: the flows', then the moves'.

    Args:
        flows: The span's :class:`~geosim.engine.records.Flows`, as a plain tuple.
        move_src: Source cluster of each raw-input move.
        move_dst: Destination cluster of each raw-input move.
        cap: Capacity of every resource (MB/s).
        reachable: Whether each cluster is reachable.
        maxmin: ``"maxmin"`` sharing (else ``"equal"``).
        demand: The most each transfer can use (``"maxmin"`` only; empty: no limit).

    Returns:
        The bandwidths, and whether each transfer is active.
    """
    f = Flows(*flows)
    active = active_transfers(f.src, move_src, move_dst, reachable)
    bw = np.empty(active.size)
    n_flow = f.src.size
    if maxmin:
        maxmin_shares(n_flow, f.res, f.starts, f.move_res, f.move_starts, cap, active, demand,
                      bw)
    else:
        equal_shares(n_flow, f.res, f.starts, f.move_res, f.move_starts, f.users, cap, active,
                     bw)
    return bw, active

