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

Both rules are computed in one compiled pass whenever the transfers, the reachable
clusters or the links' bandwidths change. Max-min fills each group of transfers linked
through common resources on its own, and only the groups such a change touched: the
others keep their rates from the allocation before (:func:`maxmin_shares`).
"""

from __future__ import annotations

import numpy as np

from geosim.engine.base import fmin
from geosim.engine.records import Flows
from geosim.jit import njit

#: The sharing rules, the scenario's ``links.sharing``.
SHARING_RULES = ("equal", "maxmin")

#: Relative tolerance within which two resources' fair levels count as one bottleneck.
LEVEL_RTOL = 1e-12


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
def maxmin_shares(n_flow, res, starts, move_res, move_starts, cap, active, demand, bw, local,
                  pair, memory):  # pragma: no cover - compiled
    """``"maxmin"`` sharing into ``bw``, by progressive filling; returns the new ``memory``.

    All unfrozen transfers rise together. The next level is the smallest of every
    resource's fair level (capacity left over its unfrozen transfers) and the smallest
    unmet demand (``demand``: per transfer, empty for none); the transfers held there
    freeze at it: those whose demand it is, or else every unfrozen transfer on a resource
    whose fair level is within :data:`LEVEL_RTOL` of it (resources in ascending order).
    Each level is computed from the capacity left, not accumulated, so rates are exact
    to rounding.

    Transfers that share no resource, directly or through other transfers, do not
    affect each other's rates: each such *group* (a connected component of transfers
    and resources) is filled on its own, and fair levels within :data:`LEVEL_RTOL` of
    each other count as one bottleneck only within a group. A group's rates thus depend
    on its own transfers and capacities alone, so one that no change touched keeps the
    rates it had, to the last bit (``memory``).

    Transfers of one route (equal ``pair`` keys, at least 0; ``pair`` empty: none)
    cross the same resources, so without demands they rise and freeze together: they
    are filled as one *class*, whose freezing takes its level from each of its
    resources once per transfer, as transfer by transfer. Within a level every such
    subtraction is of the level itself, so the order does not matter and the rates are
    the same bit for bit; the work follows the routes in use rather than the transfers
    (a busy pair carries many inputs at once).

    ``memory`` (:func:`empty_memory`) holds the previous allocation's classes (by pair
    key: transfers and rate) and each resource's number of transfers and capacity when
    it was last in use; the memory returned is this allocation's. Without demands, a
    group is filled only if a change touched it: one of its classes is new or has gained
    or lost transfers (a transfer started or ended, or its source became reachable or
    not), or one of its resources has another capacity (a bandwidth sample) or number of
    transfers (a class that crossed it is gone). The other groups keep their classes'
    rates. With demands (streamed inputs, which follow their copies' speed) every group
    is filled.

    Only the resources some active transfer crosses are worked on, numbered in the order
    first met through ``local`` (per resource of the world: -1, as it is left), so that
    the cost follows the transfers, not the size of the world: scratch of the size of
    the world, made per call, cost more than the filling on 10 000 clusters.
    """
    klass, first, mult, n_cls, slot_key, slot_class = _classes(
        active, pair if demand.size == 0 else pair[:0])
    for j in range(active.size):
        bw[j] = 0.0
    count_seen, cap_seen = memory[4], memory[5]
    rate = np.full(n_cls, np.nan)       # kept from the memory (else NaN), or filled
    out = (slot_key, slot_class, mult, rate, count_seen, cap_seen)
    if n_cls == 0:
        return out
    used, at, cb, n_used = _class_resources(first, n_cls, n_flow, res, starts, move_res,
                                            move_starts, local)
    count, ptr, members = _members(at, cb, mult, n_cls, n_used)
    dirty = _changes(memory, pair, first, mult, n_cls, used, n_used, count, cap, rate)
    new = np.isnan(rate)                # classes not kept from the memory
    if new.any() or dirty.any():
        group = _groups(at, cb, n_cls, n_used)
        redo = np.zeros(n_used, dtype=np.bool_)     # per group (its root): filled anew
        for c in range(n_cls):
            if new[c]:
                redo[group[at[cb[c]]]] = True
        for u in range(n_used):
            if dirty[u]:
                redo[group[u]] = True
        order = np.argsort(demand) if demand.size else np.empty(0, dtype=np.int64)
        _fill(group, redo, order, demand, klass, cap, used, local, at, cb, mult, count, ptr,
              members, rate)
    for j in range(active.size):
        if klass[j] >= 0:
            bw[j] = rate[klass[j]]
    for u in range(n_used):
        local[used[u]] = -1
    return out


@njit(cache=True)
def _fill(group, redo, order, demand, klass, cap, used, local, at, cb, mult, count, ptr,
          members, rate):  # pragma: no cover - compiled
    """Progressive filling into ``rate`` of the groups to fill anew (``redo[group]``).

    The groups are filled together, but a bottleneck's level freezes only the resources
    of its own group within :data:`LEVEL_RTOL` of it, so each group's rates are those it
    would get alone. Each resource's fair level is kept and worked out anew only when a
    transfer on it freezes, and a level scans only the resources that still carry
    unfrozen transfers.
    """
    n_used, n_cls = group.size, cb.size - 1
    left = np.empty(n_used)             # capacity not yet given to frozen transfers
    key = np.empty(n_used)              # fair level of the open resource at each position
    open_res = np.empty(n_used, dtype=np.int64)     # resources carrying unfrozen transfers
    at_pos = np.empty(n_used, dtype=np.int64)       # each resource's position among them
    n_open = 0
    for u in range(n_used):
        if redo[group[u]]:
            open_res[n_open], at_pos[u] = u, n_open
            left[u] = cap[used[u]]
            key[n_open] = max(left[u], 0.0) / count[u]
            n_open += 1
    frozen = np.empty(n_cls, dtype=np.bool_)        # the kept groups' classes: as frozen
    n_left = 0
    for c in range(n_cls):
        frozen[c] = not redo[group[at[cb[c]]]]
        n_left += not frozen[c]
    n_closed = 0
    d = 0
    bottleneck = np.empty(n_open, dtype=np.int64)
    touched = np.zeros(n_used, dtype=np.bool_)
    changed = np.empty(n_used, dtype=np.int64)
    while n_left:
        level, lowest = np.inf, -1
        for i in range(n_open):
            if key[i] < level:
                level, lowest = key[i], i
        n_changed = 0
        while d < order.size and (klass[order[d]] < 0 or frozen[klass[order[d]]]):
            d += 1
        if d < order.size and demand[order[d]] <= level:
            # Freeze the transfers whose demand is the level (one transfer a class).
            level = demand[order[d]]
            while d < order.size and (klass[order[d]] < 0 or frozen[klass[order[d]]]
                                      or demand[order[d]] <= level):
                c = klass[order[d]]
                if c >= 0 and not frozen[c]:
                    rate[c], frozen[c] = demand[order[d]], True
                    n_left -= 1
                    for h in range(cb[c], cb[c + 1]):
                        a = at[h]
                        left[a] -= rate[c]
                        count[a] -= 1
                        if not touched[a]:
                            touched[a] = True
                            changed[n_changed] = a
                            n_changed += 1
                d += 1
        else:
            n_b = 0
            limit = level * (1.0 + LEVEL_RTOL)
            g = group[open_res[lowest]]
            for i in range(n_open):
                u = open_res[i]
                if key[i] <= limit and count[u] > 0 and group[u] == g:
                    bottleneck[n_b] = used[u]       # by the world's id: ascending
                    n_b += 1
            bottleneck[:n_b].sort()
            for b in range(n_b):
                u = local[bottleneck[b]]
                for q in range(ptr[u], ptr[u + 1]):
                    c = members[q]
                    if frozen[c]:
                        continue
                    rate[c], frozen[c] = level, True
                    n_left -= 1
                    m = mult[c]
                    for h in range(cb[c], cb[c + 1]):
                        a = at[h]
                        x = left[a]
                        for _ in range(m):      # once per transfer, as one by one
                            x -= level
                        left[a] = x
                        count[a] -= m
                        if not touched[a]:
                            touched[a] = True
                            changed[n_changed] = a
                            n_changed += 1
        for i in range(n_changed):
            a = changed[i]
            touched[a] = False
            if count[a] > 0:
                key[at_pos[a]] = max(left[a], 0.0) / count[a]
            else:
                key[at_pos[a]] = np.inf
                n_closed += 1
        if 4 * n_closed > n_open:       # drop the closed resources from the scans
            k = 0
            for i in range(n_open):
                u = open_res[i]
                if count[u] > 0:
                    open_res[k], key[k], at_pos[u] = u, key[i], k
                    k += 1
            n_open, n_closed = k, 0


@njit(cache=True)
def _groups(at, cb, n_cls, n_used):  # pragma: no cover - compiled
    """Each resource's group (connected component of classes and resources), by its root.

    Union-find over the classes' hops; a group is named by one of its resources (the
    lowest-numbered).
    """
    parent = np.arange(n_used)
    for c in range(n_cls):
        a = _root(parent, at[cb[c]])
        for h in range(cb[c] + 1, cb[c + 1]):
            b = _root(parent, at[h])
            if a != b:
                a, b = min(a, b), max(a, b)
                parent[b] = a
    for u in range(n_used):             # roots are lower: each parent is final first
        parent[u] = parent[parent[u]]
    return parent


@njit(cache=True, inline="always")
def _root(parent, u):  # pragma: no cover - compiled
    """The root of ``u``'s set, halving the path on the way."""
    while parent[u] != u:
        parent[u] = parent[parent[u]]
        u = parent[u]
    return u


@njit(cache=True)
def _changes(memory, pair, first, mult, n_cls, used, n_used, count, cap,
             rate):  # pragma: no cover - compiled
    """What changed since the allocation ``memory`` holds; the memory's counts updated.

    A class whose pair had as many transfers then takes its rate from the memory into
    ``rate`` (the others' stay NaN).

    Returns:
        Per resource in use, whether its capacity or its number of transfers changed (a
        class that crossed it is gone, if no class on it is new or has other transfers).
        The memory's capacity and count of each is then set to the current one.
    """
    slot_key, slot_class, m_mult, m_rate, count_seen, cap_seen = memory
    if slot_key.size and pair.size:
        for c in range(n_cls):
            p = pair[first[c]]
            s = _find(slot_key, p)
            if slot_key[s] == p and m_mult[slot_class[s]] == mult[c]:
                rate[c] = m_rate[slot_class[s]]
    dirty = np.empty(n_used, dtype=np.bool_)
    for u in range(n_used):
        r = used[u]
        dirty[u] = count[u] != count_seen[r] or cap[r] != cap_seen[r]
        count_seen[r], cap_seen[r] = count[u], cap[r]
    return dirty


def empty_memory(n_res: int) -> tuple:
    """The max-min memory before a first allocation, for a world of ``n_res`` resources.

    :func:`maxmin_shares`'s memory: the open-addressing table of the classes' pair keys
    (keys, classes), each class's transfers and rate, and each resource's transfers and
    capacity when it was last in use.
    """
    no_int = np.empty(0, dtype=np.int64)
    return (no_int, no_int, no_int, np.empty(0), np.zeros(n_res, dtype=np.int64),
            np.full(n_res, np.nan))


@njit(cache=True, inline="always")
def _find(slot_key, key):  # pragma: no cover - compiled
    """The slot of ``key`` in an open-addressing table of keys, or the free one it takes.

    The table's size is a power of two and it is never full; free slots hold -1.
    """
    mask = slot_key.size - 1
    h = key * 0x9E3779B1
    s = (h ^ (h >> 29)) & mask
    while slot_key[s] >= 0 and slot_key[s] != key:
        s = (s + 1) & mask
    return s


@njit(cache=True)
def _classes(active, pair):  # pragma: no cover - compiled
    """The classes of the active transfers: one per ``pair`` key, or one each (empty).

    Returns:
        Each transfer's class (-1: inactive), each class's first transfer and its number
        of transfers, the number of classes, numbered in the order first met, and the
        open-addressing table of the pair keys (keys, classes; empty without keys).
    """
    n = active.size
    klass = np.empty(n, dtype=np.int64)
    first = np.empty(n, dtype=np.int64)
    mult = np.zeros(n, dtype=np.int64)
    size = 16                           # open addressing, at most half full
    while size < 2 * n:
        size *= 2
    slot_key = np.full(size if pair.size else 0, -1, dtype=np.int64)
    slot_class = np.empty(slot_key.size, dtype=np.int64)
    n_cls = 0
    for j in range(n):
        if not active[j]:
            klass[j] = -1
            continue
        c = n_cls
        if pair.size:
            s = _find(slot_key, pair[j])
            if slot_key[s] >= 0:
                c = slot_class[s]
            else:
                slot_key[s], slot_class[s] = pair[j], c
        if c == n_cls:
            first[c] = j
            n_cls += 1
        klass[j] = c
        mult[c] += 1
    return klass, first, mult, n_cls, slot_key, slot_class


@njit(cache=True)
def _class_resources(first, n_cls, n_flow, res, starts, move_res, move_starts,
                     local):  # pragma: no cover - compiled
    """The resources of each class (of its first transfer), numbered through ``local``.

    Returns:
        The world's id of each resource used (``used[:n_used]``), each hop's resource as
        numbered (``at``; class ``c``'s hops are ``at[cb[c]:cb[c + 1]]``), ``cb`` and
        ``n_used``.
    """
    cb = np.empty(n_cls + 1, dtype=np.int64)
    n_hop = 0
    for c in range(n_cls):
        cb[c] = n_hop
        lo, hi = _hop_range(first[c], n_flow, starts, move_starts, res.size, move_res.size)
        n_hop += hi - lo
    cb[n_cls] = n_hop
    used = np.empty(n_hop, dtype=np.int64)
    at = np.empty(n_hop, dtype=np.int64)
    n_used = 0
    for c in range(n_cls):
        j = first[c]
        lo, hi = _hop_range(j, n_flow, starts, move_starts, res.size, move_res.size)
        for h in range(lo, hi):
            r = res[h] if j < n_flow else move_res[h]     # (no array chosen: refcounts)
            if local[r] < 0:
                local[r] = n_used
                used[n_used] = r
                n_used += 1
            at[cb[c] + h - lo] = local[r]
    return used, at, cb, n_used


@njit(cache=True, inline="always")
def _hop_range(j, n_flow, starts, move_starts, n_res, n_move_res):  # pragma: no cover
    """Where transfer ``j``'s resources are: ``res[lo:hi]``, or ``move_res`` for a move."""
    if j < n_flow:
        return starts[j], (starts[j + 1] if j + 1 < n_flow else n_res)
    m = j - n_flow
    return move_starts[m], (move_starts[m + 1] if m + 1 < move_starts.size else n_move_res)


@njit(cache=True)
def _members(at, cb, mult, n_cls, n_used):  # pragma: no cover - compiled
    """Unfrozen transfers on each resource (``count``) and its classes (CSR ``ptr``)."""
    count = np.zeros(n_used, dtype=np.int64)
    ptr = np.zeros(n_used + 1, dtype=np.int64)
    for c in range(n_cls):
        for h in range(cb[c], cb[c + 1]):
            count[at[h]] += mult[c]
            ptr[at[h] + 1] += 1
    for u in range(n_used):
        ptr[u + 1] += ptr[u]
    members = np.empty(ptr[n_used], dtype=np.int64)
    fill = ptr[:n_used].copy()
    for c in range(n_cls):
        for h in range(cb[c], cb[c + 1]):
            members[fill[at[h]]] = c
            fill[at[h]] += 1
    return count, ptr, members


@njit(cache=True)
def allocate(flows, move_src, move_dst, cap, reachable, maxmin, demand, local,
             memory):  # pragma: no cover - compiled
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
        memory: The previous max-min allocation (:func:`maxmin_shares`).

    Returns:
        The bandwidths, whether each transfer is active, and the memory of this
        allocation (``memory`` as it was under ``"equal"``).
    """
    f = Flows(*flows)
    active = active_transfers(f.src, move_src, move_dst, reachable)
    bw = np.empty(active.size)
    n_flow = f.src.size
    if maxmin:
        n = reachable.size              # a pair's key: src * n + dst, flows' then moves'
        pair = np.empty(active.size, dtype=np.int64)
        for j in range(n_flow):
            pair[j] = f.src[j] * n + f.dst[j]
        for m in range(move_src.size):
            pair[n_flow + m] = move_src[m] * n + move_dst[m]
        memory = maxmin_shares(n_flow, f.res, f.starts, f.move_res, f.move_starts, cap,
                               active, demand, bw, local, pair, memory)
    else:
        users = np.zeros(cap.size, dtype=np.int64)
        for h in range(f.res.size):
            users[f.res[h]] += 1
        for h in range(f.move_res.size):
            users[f.move_res[h]] += 1
        equal_shares(n_flow, f.res, f.starts, f.move_res, f.move_starts, users, cap, active,
                     bw)
    return bw, active, memory

