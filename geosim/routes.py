"""Routes between clusters, computed for the pairs a run uses.

A route is the shortest path of the topology from one cluster to another: fewest hops
(breadth-first search) or shortest by the edges' ``length`` (Dijkstra). Routes and
their ties are exactly those of networkx's ``all_pairs_shortest_path`` and
``all_pairs_dijkstra_path``: the search from a source runs in the same order (the
graph's adjacency order; Dijkstra's heap breaks equal distances by push order and a
path changes only for a strictly shorter one), and its shortest-path tree, a
predecessor per cluster, holds every route from that source.

:class:`Routes` computes a source's tree the first time it is asked for (a compiled
search over a CSR adjacency) and keeps the trees of recent sources within a memory
budget, forgetting the least recently used ones beyond it. From the trees it serves hop
counts (``hops[s, d]`` is the length of route ``s → d``: under Dijkstra routing it need
not equal ``hops[d, s]``), whole hop rows, and the transfer resources of each route
used, kept in a table of pairs (also within a budget). Memory therefore grows with the
clusters and the pairs in use, not with the square of the clusters.

Resource ids: ``2e`` / ``2e+1`` for link ``e`` in its ``u → v`` / ``v → u`` direction
(links sorted by ``(u, v)`` with ``u < v``), ``2L + c`` for cluster ``c``'s egress gate
and ``2L + n + c`` for its ingress gate (``L`` links, ``n`` clusters). A route's
resources are its directed links from source to destination, then the source's egress
gate, then the destination's ingress gate.
"""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np

from geosim.jit import njit, prange
from geosim.sortedkeys import insert_sorted
from geosim.threads import wide

__all__ = ["FULL_ROWS", "PAIR_BYTES", "ROUTE_CACHE_BYTES", "ROUTE_ENTRY_BYTES", "TREE_CACHE_BYTES",
           "HopCounts", "RouteView", "Routes", "adjacency_bytes", "tree_bytes"]

#: Default memory budget of the cached shortest-path trees (bytes): every source's tree
#: up to about 11 000 clusters (8 B per cluster and source), so that a scheduler that
#: reads the hop rows of every cluster's data does not compute trees again and again
#: (at 10 000 clusters a 64 MiB budget held 800 trees, and recomputing evicted ones
#: took two thirds of a Fair run). The pool grows as trees are built.
TREE_CACHE_BYTES = 2**30
#: Default memory budget of the table of materialised routes (bytes).
ROUTE_CACHE_BYTES = 64 * 2**20
#: Bytes per resource entry of a materialised route, and per pair on top of them (its
#: key, id and offset).
ROUTE_ENTRY_BYTES = 8
PAIR_BYTES = 24
#: Worlds of at most this many clusters add every route of a source to the table at once
#: (a few new sources rather than many new pairs per step).
FULL_ROWS = 512
#: Bytes per arc (a link in one direction) and per cluster of the CSR adjacency (with
#: the cluster's slot in the tree cache).
ARC_BYTES = 20
NODE_BYTES = 16


#: Epochs of the route tables: each table, and each emptying of one, takes the next.
_EPOCHS = itertools.count()


def tree_bytes(n_clusters: int) -> int:
    """Bytes of one cached shortest-path tree (arc to the parent and depth, per cluster)."""
    return 8 * n_clusters


def adjacency_bytes(n_clusters: int, n_links: int) -> int:
    """Bytes of the CSR adjacency of a topology."""
    return NODE_BYTES * (n_clusters + 1) + ARC_BYTES * 2 * n_links


class Routes:
    """Shortest routes of a topology, computed per source on first use and cached.

    Args:
        graph: The topology (nodes ``0..n-1``).
        weight: Edge attribute to minimise (``"length"``: Dijkstra, a missing value
            counting 1) or None for fewest hops (breadth-first search).
        tree_budget: Bytes the cached trees may take (at least one tree is kept).
        route_budget: Bytes the table of materialised routes may take before it is
            emptied (the routes of one request are always kept).

    Attributes:
        n_clusters: Clusters of the topology.
        link_u, link_v: End clusters of every link (``link_u < link_v``), sorted.
        weighted: Whether routes minimise ``weight`` (Dijkstra) rather than hops.
        trees_built: Shortest-path trees computed so far (a source's tree is computed
            again after it was evicted).
    """

    def __init__(self, graph: nx.Graph, weight: str | None = None,
                 tree_budget: int = TREE_CACHE_BYTES, route_budget: int = ROUTE_CACHE_BYTES):
        n = graph.number_of_nodes()
        if set(graph.nodes) != set(range(n)):
            raise ValueError("the topology's nodes must be 0..n-1")
        self.n_clusters = n
        self.weighted = weight is not None
        self._build_adjacency(graph, weight)
        self._capacity = max(1, min(n, int(tree_budget) // max(tree_bytes(n), 1)))
        self._route_budget = int(route_budget)
        self.trees_built = 0
        # Tree pool: row ``slot`` holds the tree of source ``_owner[slot]``.
        self._via = np.empty((0, n), dtype=np.int32)
        self._depth = np.empty((0, n), dtype=np.int32)
        self._owner = np.empty(0, dtype=np.int64)
        self._used = np.empty(0, dtype=np.int64)
        self._slot = np.full(n, -1, dtype=np.int64)
        self._tick = 0
        self._all_hops = np.empty((0, n), dtype=np.int64)
        self._clear_pairs()

    def _build_adjacency(self, graph: nx.Graph, weight: str | None) -> None:
        """CSR adjacency in the graph's adjacency order, with each arc's resource id."""
        n = self.n_clusters
        edges = sorted((min(u, v), max(u, v)) for u, v in graph.edges())
        self.link_u = np.array([e[0] for e in edges], dtype=np.int64)
        self.link_v = np.array([e[1] for e in edges], dtype=np.int64)
        tail, head, wt = [], [], []
        for v in range(n):
            for w, data in graph.adj[v].items():
                tail.append(v)
                head.append(w)
                if weight is not None:
                    wt.append(float(data.get(weight, 1)))
        tail_a = np.array(tail, dtype=np.int32)
        head_a = np.array(head, dtype=np.int32)
        lo, hi = np.minimum(tail_a, head_a), np.maximum(tail_a, head_a)
        edge = np.searchsorted(self.link_u * n + self.link_v, lo.astype(np.int64) * n + hi)
        self._ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(tail_a, minlength=n), out=self._ptr[1:])
        self._tail, self._head = tail_a, head_a
        self._arc_res = (2 * edge + (tail_a > head_a)).astype(np.int32)
        self._wt = np.array(wt, dtype=np.float64)

    @property
    def n_links(self) -> int:
        """Number of links."""
        return len(self.link_u)

    @property
    def nbytes(self) -> int:
        """Bytes held now: the adjacency, the cached trees and the route table."""
        return int(sum(a.nbytes for a in (self._ptr, self._tail, self._head, self._arc_res,
                                          self._wt, self._via, self._depth, self._owner,
                                          self._used, self._slot, self._keys, self._ids,
                                          self._dense, self._rptr, self._rres,
                                          self._all_hops)))

    # ------------------------------------------------------------------ trees
    def _trees(self, sources: np.ndarray) -> np.ndarray:
        """Slots of the trees of unique ``sources`` (at most the capacity), built if new."""
        self._tick += 1
        slots = self._slot[sources]
        have = slots >= 0
        self._used[slots[have]] = self._tick
        missing = sources[~have]
        if missing.size == 0:
            return slots
        free = np.flatnonzero(self._owner < 0)
        if free.size < missing.size:
            self._grow(missing.size - free.size)
            free = np.flatnonzero(self._owner < 0)
        if free.size < missing.size:            # evict the least recently used
            old = np.flatnonzero((self._owner >= 0) & (self._used < self._tick))
            old = old[np.argsort(self._used[old], kind="stable")[: missing.size - free.size]]
            self._slot[self._owner[old]] = -1
            self._owner[old] = -1
            free = np.sort(np.concatenate([free, old]))
        take = free[: missing.size]
        self._owner[take] = missing
        self._slot[missing] = take
        self._used[take] = self._tick
        kernel = trees_kernel_wide if missing.size > 1 and wide(
            missing.size * self.n_clusters) else trees_kernel
        kernel(self._ptr, self._head, self._wt, self.weighted, missing, take, self._via,
               self._depth)
        self.trees_built += int(missing.size)
        slots[~have] = take
        return slots

    def _grow(self, need: int) -> None:
        """Add at least ``need`` slots to the pool, up to its capacity."""
        rows = self._owner.size
        new = min(self._capacity, max(rows + need, 2 * rows, 4))
        if new <= rows:
            return
        n = self.n_clusters
        # In place: the allocator extends a large pool where it lies instead of copying
        # every tree at each doubling (no view of the pool outlives a call).
        self._via.resize((new, n), refcheck=False)
        self._depth.resize((new, n), refcheck=False)
        self._owner = np.concatenate([self._owner, np.full(new - rows, -1, dtype=np.int64)])
        self._used = np.concatenate([self._used, np.zeros(new - rows, dtype=np.int64)])

    def _chunks(self, sources: np.ndarray) -> list[np.ndarray]:
        """Unique ``sources`` split into groups whose trees fit the pool at once."""
        uniq = np.unique(sources)
        return [uniq[i:i + self._capacity] for i in range(0, uniq.size, self._capacity)]

    def _index(self, clusters) -> np.ndarray:
        """``clusters`` as int64, negative ones counted from the end; IndexError if out of range."""
        arr = np.asarray(clusters)
        if arr.dtype.kind not in "iu":
            if arr.size == 0:
                arr = arr.astype(np.int64)
            else:
                raise IndexError("cluster indices must be integers")
        arr = arr.astype(np.int64, copy=False)
        n = self.n_clusters
        if arr.size and (arr.min() < -n or arr.max() >= n):
            raise IndexError(f"cluster index out of range for {n} clusters")
        return np.where(arr < 0, arr + n, arr)

    # ------------------------------------------------------------------ hop counts
    def hops(self, src, dst) -> np.ndarray:
        """Hop count of the route from each ``src`` to each ``dst`` (NumPy broadcasting).

        Args:
            src: Source cluster(s).
            dst: Destination cluster(s).

        Returns:
            int64 array of the broadcast shape (0-d for two scalars).
        """
        s, d = np.broadcast_arrays(self._index(src), self._index(dst))
        s, d = s.ravel(), d.ravel()
        out = np.empty(s.size, dtype=np.int64)
        if s.size:
            slots = self._slot[s]
            if slots.min() >= 0:
                self._tick += 1
                self._used[slots] = self._tick
                out[:] = self._depth[slots, d]
            else:
                for chunk in self._chunks(s):
                    self._trees(chunk)
                    pick = np.isin(s, chunk)
                    out[pick] = self._depth[self._slot[s[pick]], d[pick]]
        shape = np.broadcast_shapes(np.shape(src), np.shape(dst))
        return out.reshape(shape)

    def hop_row(self, src: int) -> np.ndarray:
        """Hop counts of the routes from ``src`` to every cluster (int64, a fresh array)."""
        slot = self._trees(self._index([src]))[0]
        return self._depth[slot].astype(np.int64)

    def kept_hop_rows(self, sources) -> tuple[np.ndarray, np.ndarray]:
        """The cached trees' hop rows of distinct ``sources``, without copying them.

        At most :attr:`tree_capacity` sources. Row ``rows[i]`` of ``depth`` (int32,
        read-only) is :meth:`hop_row` of ``sources[i]``; ``depth`` is valid until the
        next call that builds a tree (this one, :meth:`hop_rows`, a route lookup).
        """
        sources = self._index(sources).ravel()
        if sources.size > self._capacity or np.unique(sources).size < sources.size:
            raise ValueError("kept_hop_rows takes distinct sources within the capacity")
        rows = np.empty_like(sources)
        if sources.size:
            order = np.argsort(sources)         # built in the order hop_rows builds them
            rows[order] = self._trees(sources[order])
        depth = self._depth.view()
        depth.flags.writeable = False
        return rows, depth

    @property
    def tree_capacity(self) -> int:
        """Trees the cache holds at most (its budget over a tree's bytes)."""
        return self._capacity

    def hop_rows(self, sources) -> np.ndarray:
        """Hop rows of ``sources``: row ``i`` is :meth:`hop_row` of ``sources[i]``."""
        sources = self._index(sources).ravel()
        slots = self._slot[sources]
        if sources.size and slots.min() >= 0:      # every tree at hand
            self._tick += 1
            self._used[slots] = self._tick
            return self._depth[slots].astype(np.int64)
        out = np.empty((sources.size, self.n_clusters), dtype=np.int64)
        for chunk in self._chunks(sources):
            self._trees(chunk)
            pick = np.flatnonzero(np.isin(sources, chunk))
            out[pick] = self._depth[self._slot[sources[pick]]]
        return out

    def all_hops(self) -> np.ndarray | None:
        """Every hop count, ``[src, dst]``, in a world of at most :data:`FULL_ROWS` clusters.

        Made on first use and kept (``n²`` integers, 2 MiB at most); None in a larger
        world, whose rows are read with :meth:`hop_rows`. Read-only.
        """
        n = self.n_clusters
        if n > FULL_ROWS:
            return None
        if self._all_hops.shape[0] != n:
            hops = self.hop_rows(np.arange(n))
            hops.flags.writeable = False
            self._all_hops = hops
        return self._all_hops

    def path(self, src: int, dst: int) -> list[int]:
        """Clusters of the route from ``src`` to ``dst``, both ends included."""
        src, dst = (int(x) for x in self._index([src, dst]))
        slot = self._trees(np.array([src]))[0]
        nodes = [dst]
        while nodes[-1] != src:
            nodes.append(int(self._tail[self._via[slot, nodes[-1]]]))
        return nodes[::-1]

    # ------------------------------------------------------------------ route table
    def _clear_pairs(self) -> None:
        self._keys = np.empty(0, dtype=np.int64)   # pair keys s*n+d, the first _n_pairs
        self._ids = np.empty(0, dtype=np.int64)    # sorted; their rows in the table
        self._rptr = np.zeros(16, dtype=np.int64)  # row p: _rres[_rptr[p]:_rptr[p+1]]
        self._rres = np.empty(64, dtype=np.int64)
        self._n_pairs = 0
        self._table = None
        self._epoch = next(_EPOCHS)     # rows given out before a clearing mean nothing now
        # up to FULL_ROWS clusters, also the row of every pair key (-1: none): O(1) lookups
        n = self.n_clusters
        self._dense = np.full(n * n if n <= FULL_ROWS else 0, -1, dtype=np.int64)

    def pair_table(self) -> tuple:
        """The table of routes: keys, rows, dense index, offsets, resources and epoch.

        The pair ``src * n + dst`` of ``keys[k]`` has row ``ids[k]``, whose resources are
        ``res[ptr[row]:ptr[row + 1]]``. In a world of at most :data:`FULL_ROWS` clusters,
        ``dense[key]`` is that row (-1 for a pair without one); in a larger world
        ``dense`` is empty. The arrays are valid until :meth:`add_pairs` is next called;
        a row stays the same pair's until the table is emptied to stay in its budget,
        which gives it a new epoch (unique among all tables), so a caller may keep rows
        with the epoch they belong to.
        """
        if self._table is None:
            n_pairs = self._n_pairs
            self._table = (self._keys[:n_pairs], self._ids[:n_pairs], self._dense,
                           self._rptr[: n_pairs + 1],
                           self._rres[: self._rptr[n_pairs]], self._epoch)
        return self._table

    def route_table(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows of the pairs ``keys`` (``src * n + dst``) in the table of routes.

        Routes not yet in the table are computed and added first.

        Returns:
            The row of each key, and the table: the resources of row ``p`` are
            ``res[ptr[p]:ptr[p+1]]`` (valid until :meth:`add_pairs` is next called).
        """
        keys = np.asarray(keys, dtype=np.int64)
        if self._dense.size:
            rows = self._dense[keys]
            if keys.size and rows.min() < 0:
                self.add_pairs(keys)
                rows = self._dense[keys]
            return rows, *self.pair_table()[3:5]
        table_keys = self.pair_table()[0]
        pos = np.searchsorted(table_keys, keys)
        if keys.size and (not table_keys.size or not np.array_equal(
                table_keys.take(pos, mode="clip"), keys)):
            self.add_pairs(keys)
            pos = np.searchsorted(self.pair_table()[0], keys)
        _, ids, _, ptr, res, _ = self.pair_table()
        return ids[pos] if keys.size else np.empty(0, dtype=np.int64), ptr, res

    def route(self, src: int, dst: int) -> np.ndarray:
        """Resource ids of the route from ``src`` to ``dst`` (a fresh array)."""
        src, dst = (int(x) for x in self._index([src, dst]))
        rows, ptr, res = self.route_table(np.array([src * self.n_clusters + dst]))
        return res[ptr[rows[0]]:ptr[rows[0] + 1]].copy()

    def add_pairs(self, keys: np.ndarray, clear: bool = True) -> None:
        """Add the routes of the pairs ``keys`` (``src * n + dst``) missing from the table.

        In a world of at most :data:`FULL_ROWS` clusters, every route from the sources of
        ``keys`` is added at once. A table that would grow past its budget is emptied
        first (unless ``clear`` is false: a caller whose own pairs did not fit goes
        over the budget for them), and then holds the routes of ``keys`` alone.
        """
        n = self.n_clusters
        keys = np.unique(np.asarray(keys, dtype=np.int64))
        if n <= FULL_ROWS:
            sources = np.unique(keys // n)
            keys = (sources[:, None] * n + np.arange(n)).ravel()
        new = keys
        table_keys = self._keys[:self._n_pairs]
        if table_keys.size:
            pos = np.minimum(np.searchsorted(table_keys, keys), table_keys.size - 1)
            new = keys[table_keys[pos] != keys]
        if new.size == 0:
            return
        counts, res = self._compute(new)
        grown = (int(self._rptr[self._n_pairs]) + res.size) * ROUTE_ENTRY_BYTES \
            + (self._n_pairs + new.size) * PAIR_BYTES
        if clear and grown > self._route_budget and self._n_pairs:
            self._clear_pairs()
            if new.size < keys.size:
                new = keys
                counts, res = self._compute(new)
        self._append(new, counts, res)

    def _compute(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Resource counts and resources of the routes of sorted ``keys``."""
        n = self.n_clusters
        src, dst = keys // n, keys % n
        if self._slot[src].min() >= 0:             # every tree at hand
            self._tick += 1
            self._used[self._slot[src]] = self._tick
            return routes_kernel(src, dst, self._slot, self._via, self._depth, self._tail,
                                 self._arc_res, self.n_links, n)
        counts, res = [], []
        for chunk in self._chunks(src):
            self._trees(chunk)
            lo, hi = np.searchsorted(src, chunk[0]), np.searchsorted(src, chunk[-1], "right")
            c, r = routes_kernel(src[lo:hi], dst[lo:hi], self._slot, self._via, self._depth,
                                 self._tail, self._arc_res, self.n_links, n)
            counts.append(c)
            res.append(r)
        return np.concatenate(counts), np.concatenate(res)

    def _append(self, keys: np.ndarray, counts: np.ndarray, res: np.ndarray) -> None:
        """Add rows for sorted new ``keys``, with ``counts`` resources each in ``res``."""
        p, e = self._n_pairs, int(self._rptr[self._n_pairs])
        if p + keys.size + 1 > self._rptr.size:
            self._rptr = np.concatenate([self._rptr[:p + 1], np.empty(
                max(p + keys.size + 1, 2 * self._rptr.size) - p - 1, np.int64)])
        if e + res.size > self._rres.size:
            self._rres = np.concatenate([self._rres[:e], np.empty(
                max(e + res.size, 2 * self._rres.size) - e, np.int64)])
        self._rptr[p + 1:p + 1 + keys.size] = e + np.cumsum(counts)
        self._rres[e:e + res.size] = res
        self._keys, self._ids, self._n_pairs = insert_sorted(self._keys, self._ids, p, keys, p)
        if self._dense.size:
            self._dense[keys] = np.arange(p, p + keys.size)
        self._table = None


class HopCounts:
    """Read-only hop counts, indexed like the ``n × n`` matrix they stand for.

    ``hops[a, b]`` takes scalars, arrays (NumPy broadcasting) or slices; ``hops[a]``
    is row ``a`` (``hops[a, :]``). Every result is a fresh array (or a NumPy integer).
    Rows are computed on demand (a world of at most :data:`FULL_ROWS` clusters keeps them
    all once :meth:`Routes.all_hops` made them); ``np.asarray(hops)`` gives the whole
    matrix (``n²`` integers), which suits small worlds only.
    """

    __slots__ = ("_routes",)

    def __init__(self, routes: Routes):
        object.__setattr__(self, "_routes", routes)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("hop counts are read-only")

    @property
    def shape(self) -> tuple[int, int]:
        """``(n, n)``."""
        return (self._routes.n_clusters, self._routes.n_clusters)

    ndim = 2
    dtype = np.dtype(np.int64)

    def __len__(self) -> int:
        return self._routes.n_clusters

    def _axis(self, key) -> tuple[np.ndarray | int, bool]:
        """An index along one axis: the clusters it names, and whether it is a slice."""
        if isinstance(key, slice):
            return np.arange(self._routes.n_clusters)[key], True
        if key is Ellipsis:
            return np.arange(self._routes.n_clusters), True
        return key, False

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key, slice(None))
        if len(key) == 1:
            key = (key[0], slice(None))
        if len(key) != 2:
            raise IndexError("hop counts take at most two indices")
        a, a_slice = self._axis(key[0])
        b, b_slice = self._axis(key[1])
        if a_slice and not b_slice:
            b = np.asarray(b)
            a = a.reshape(a.shape + (1,) * b.ndim)
        elif b_slice:
            a = np.asarray(a)
            a = a.reshape(a.shape + (1,))
        out = self._routes.hops(a, b)
        return out[()] if out.ndim == 0 else out

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        every = self._routes.all_hops()
        out = every.copy() if every is not None else \
            self._routes.hop_rows(np.arange(self._routes.n_clusters))
        return out if dtype is None else out.astype(dtype)


class RouteView:
    """What a scheduler may read of the routes: hop counts, hop rows and paths.

    Every result is a fresh array or list (but :meth:`all_hops` and
    :meth:`kept_hop_rows`, read-only); the routes cannot be changed through it.
    """

    __slots__ = ("_routes",)

    def __init__(self, routes: Routes):
        object.__setattr__(self, "_routes", routes)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("the routes are read-only")

    @property
    def n_clusters(self) -> int:
        """Clusters of the topology."""
        return self._routes.n_clusters

    def all_hops(self) -> np.ndarray | None:
        """Every hop count ``[src, dst]`` (read-only, kept), up to :data:`FULL_ROWS` clusters.

        None in a larger world: read its rows with :meth:`hop_rows`.
        """
        return self._routes.all_hops()

    def hops(self, src, dst) -> np.ndarray:
        """Hop count of the route from each ``src`` to each ``dst`` (broadcast)."""
        return self._routes.hops(src, dst)

    def hop_row(self, src: int) -> np.ndarray:
        """Hop counts of the routes from ``src`` to every cluster."""
        return self._routes.hop_row(src)

    def hop_rows(self, sources) -> np.ndarray:
        """Hop rows of ``sources`` (one row per entry, ``n`` columns)."""
        return self._routes.hop_rows(sources)

    def kept_hop_rows(self, sources) -> tuple[np.ndarray, np.ndarray]:
        """Hop rows of distinct ``sources`` read in place (:meth:`Routes.kept_hop_rows`)."""
        return self._routes.kept_hop_rows(sources)

    @property
    def tree_capacity(self) -> int:
        """Sources whose hop rows :meth:`kept_hop_rows` reads at once, at most."""
        return self._routes.tree_capacity

    def path(self, src: int, dst: int) -> list[int]:
        """Clusters of the route from ``src`` to ``dst``, both ends included."""
        return self._routes.path(src, dst)


# ---------------------------------------------------------------------- compiled kernels
@njit(cache=True)
def _bfs(ptr, head, src, via, depth):  # pragma: no cover - compiled
    """Breadth-first tree from ``src``: a cluster's parent is the first to discover it."""
    n = ptr.size - 1
    for v in range(n):
        via[v] = -1
        depth[v] = -1
    queue = np.empty(n, dtype=np.int64)
    queue[0] = src
    depth[src] = 0
    first, last = 0, 1
    while first < last:
        v = queue[first]
        first += 1
        for a in range(ptr[v], ptr[v + 1]):
            w = head[a]
            if depth[w] < 0:
                depth[w] = depth[v] + 1
                via[w] = a
                queue[last] = w
                last += 1


@njit(cache=True)
def _dijkstra(ptr, head, wt, src, via, depth):  # pragma: no cover - compiled
    """Dijkstra tree from ``src``, in networkx's order: ties by push order, strict updates.

    networkx pushes a node again at each strict improvement and skips the stale entries
    as they come out; a stale entry has a larger distance than the node's live one, so it
    only comes out after the node is done. An indexed heap holding each node once, moved
    up with its improved distance and the number of its push, pops the nodes in the same
    order from at most ``n`` entries. The heap's distances and push numbers are kept in
    heap order, so that a sift compares neighbouring entries (1.3 times as fast as a heap
    of every push on 1 000 and 10 000 clusters).
    """
    n = ptr.size - 1
    best = np.empty(n)
    pos = np.full(n, -1, dtype=np.int64)       # place in the heap; -1 unseen, -2 done
    key = np.empty(n)                          # the heap: distance, push number, node
    tie = np.empty(n, dtype=np.int64)
    node = np.empty(n, dtype=np.int64)
    for v in range(n):
        via[v] = -1
        depth[v] = -1
    key[0], tie[0], node[0], pos[src], best[src], depth[src] = 0.0, 0, src, 0, 0.0, 0
    size, pushed = 1, 1
    while size > 0:
        v, dist = node[0], key[0]
        pos[v] = -2
        size -= 1
        if size > 0:                            # the last entry sifts down from the root
            kx, tx, x = key[size], tie[size], node[size]
            i = 0
            while 2 * i + 1 < size:
                c = 2 * i + 1
                if c + 1 < size and (key[c + 1] < key[c]
                                     or (key[c + 1] == key[c] and tie[c + 1] < tie[c])):
                    c += 1
                if not (key[c] < kx or (key[c] == kx and tie[c] < tx)):
                    break
                key[i], tie[i], node[i] = key[c], tie[c], node[c]
                pos[node[i]] = i
                i = c
            key[i], tie[i], node[i], pos[x] = kx, tx, x, i
        for a in range(ptr[v], ptr[v + 1]):
            u = head[a]
            i = pos[u]
            if i == -2:
                continue
            d = dist + wt[a]
            if i == -1 or d < best[u]:
                best[u], via[u], depth[u] = d, a, depth[v] + 1
                if i == -1:                     # a push; else the entry moves up
                    i = size
                    size += 1
                while i > 0:
                    up = (i - 1) // 2
                    if not (d < key[up] or (d == key[up] and pushed < tie[up])):
                        break
                    key[i], tie[i], node[i] = key[up], tie[up], node[up]
                    pos[node[i]] = i
                    i = up
                key[i], tie[i], node[i], pos[u] = d, pushed, u, i
                pushed += 1


@njit(cache=True)
def _tree(ptr, head, wt, weighted, src, via, depth):  # pragma: no cover - compiled
    """The tree of ``src`` into ``via`` (arc to the parent) and ``depth``."""
    if weighted:
        _dijkstra(ptr, head, wt, src, via, depth)
    else:
        _bfs(ptr, head, src, via, depth)


@njit(cache=True)
def trees_kernel(ptr, head, wt, weighted, sources, slots, via,
                 depth):  # pragma: no cover - compiled
    """Trees of ``sources`` into rows ``slots`` of ``via`` (arc to the parent) and ``depth``."""
    for i in range(sources.size):
        _tree(ptr, head, wt, weighted, sources[i], via[slots[i]], depth[slots[i]])


@njit(cache=True, parallel=True)
def trees_kernel_wide(ptr, head, wt, weighted, sources, slots, via,
                      depth):  # pragma: no cover - compiled
    """:func:`trees_kernel` with the sources shared among the threads (:mod:`geosim.threads`)."""
    for i in prange(sources.size):
        _tree(ptr, head, wt, weighted, sources[i], via[slots[i]], depth[slots[i]])


@njit(cache=True)
def routes_kernel(src, dst, slot, via, depth, tail, arc_res, n_links,
                  n):  # pragma: no cover - compiled
    """Resources of the routes ``src[j] → dst[j]`` from their sources' cached trees.

    Returns:
        The number of resources of each route, and the resources one route after another.
    """
    counts = np.zeros(src.size, dtype=np.int64)
    for j in range(src.size):
        if src[j] != dst[j]:
            counts[j] = depth[slot[src[j]], dst[j]] + 2
    res = np.empty(counts.sum(), dtype=np.int64)
    at = 0
    for j in range(src.size):
        if counts[j] == 0:
            continue
        s, d = src[j], dst[j]
        row = slot[s]
        hops = counts[j] - 2
        v = d
        for h in range(hops - 1, -1, -1):
            a = via[row, v]
            res[at + h] = arc_res[a]
            v = tail[a]
        res[at + hops] = 2 * n_links + s
        res[at + hops + 1] = 2 * n_links + n + d
        at += counts[j]
    return counts, res
