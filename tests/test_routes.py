"""Routes on demand: the same routes, hops and ties as networkx's all-pairs searches."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from geosim.engine.transfers import flow_structure
from geosim.model import GeoModel
from geosim.routes import HopCounts, Routes, RouteView, tree_bytes
from geosim.scenario import load_scenario
from geosim.testing import geo_world
from geosim.topology import barabasi_albert_topology


def reference(graph: nx.Graph, weight: str | None):
    """networkx's paths, their hop matrix and the resources of every route."""
    n = graph.number_of_nodes()
    paths = dict(nx.all_pairs_dijkstra_path(graph, weight=weight)) if weight else \
        dict(nx.all_pairs_shortest_path(graph))
    edges = sorted((min(u, v), max(u, v)) for u, v in graph.edges())
    edge_id = {e: i for i, e in enumerate(edges)}
    hops = np.zeros((n, n), dtype=np.int64)
    res = {}
    for s in range(n):
        for d in range(n):
            path = paths[s][d]
            hops[s, d] = len(path) - 1
            ids = [2 * edge_id[(min(a, b), max(a, b))] + (a > b)
                   for a, b in zip(path[:-1], path[1:], strict=True)]
            res[s, d] = ids + [2 * len(edges) + s, 2 * len(edges) + n + d] if s != d else []
    return paths, hops, res


def shuffled(graph: nx.Graph, seed: int) -> nx.Graph:
    """The same graph with its edges added in a random order (another adjacency order)."""
    rng = np.random.default_rng(seed)
    out = nx.Graph()
    out.add_nodes_from(graph.nodes(data=True))
    edges = list(graph.edges(data=True))
    for i in rng.permutation(len(edges)):
        u, v, data = edges[i]
        out.add_edge(*((v, u) if rng.random() < 0.5 else (u, v)), **data)
    return out


def with_lengths(graph: nx.Graph, lengths) -> nx.Graph:
    graph = graph.copy()
    for (u, v), length in zip(graph.edges(), lengths, strict=False):
        graph.edges[u, v]["length"] = length
    return graph


def _graphs():
    rng = np.random.default_rng(7)
    for n, m, seed in [(60, 1, 1), (70, 2, 2), (50, 3, 3)]:
        ba = barabasi_albert_topology(n, m, seed=seed)
        yield f"ba{n}-{m}", ba
        yield f"ba{n}-{m}-equal", with_lengths(ba, [1.0] * ba.number_of_edges())
        yield f"ba{n}-{m}-ints", with_lengths(ba, rng.integers(1, 3, ba.number_of_edges())
                                              .tolist())
        yield f"ba{n}-{m}-shuffled", shuffled(ba, seed)
    grid = nx.convert_node_labels_to_integers(nx.grid_2d_graph(6, 7))
    yield "grid", grid                                          # no lengths: each counts 1
    yield "grid-equal", with_lengths(grid, [2.5] * grid.number_of_edges())
    yield "grid-shuffled", shuffled(with_lengths(grid, [1.0] * grid.number_of_edges()), 5)
    yield "grid-halves", with_lengths(grid, rng.choice([0.5, 1.0], grid.number_of_edges())
                                      .tolist())


GRAPHS = dict(_graphs())


@pytest.mark.parametrize("weight", [None, "length"])
@pytest.mark.parametrize("name", list(GRAPHS))
def test_routes_are_networkx_routes_for_every_pair(name, weight):
    graph = GRAPHS[name]
    n = graph.number_of_nodes()
    paths, hops, res = reference(graph, weight)
    every = np.arange(n)
    big = Routes(graph, weight)
    for s in every:                                    # every pair, within the default budget
        for d in every:
            assert big.path(s, d) == paths[s][d]
            assert big.route(s, d).tolist() == res[s, d]
    # Budgets of three trees and a few routes: trees and routes are evicted and rebuilt, and
    # a pair asked again (in a random order, repeats and all) gets the same route.
    routes = Routes(graph, weight, tree_budget=3 * tree_bytes(n), route_budget=4096)
    assert np.array_equal(routes.hops(every[:, None], every[None, :]), hops)
    for key in np.random.default_rng(0).integers(0, n * n, 6 * n):
        s, d = divmod(int(key), n)
        assert routes.path(s, d) == paths[s][d]
        assert routes.route(s, d).tolist() == res[s, d]
    assert routes.trees_built > n                      # sources came back after eviction
    dense = 8 * n * n                                  # the pair index of a small world
    assert routes.nbytes < 3 * tree_bytes(n) + 4096 + dense + 64 * (n + graph.number_of_edges())
    # A batch of pairs: one row of the table per key, duplicates and all.
    keys = np.random.default_rng(1).integers(0, n * n, 500)
    rows, ptr, table = big.route_table(keys)
    for key, row in zip(keys, rows, strict=True):
        assert table[ptr[row]:ptr[row + 1]].tolist() == res[divmod(int(key), n)]
    assert np.array_equal(big.hop_rows([5, 3, 5]), hops[[5, 3, 5]])
    # Rows read in place: the pool's rows of the sources, read-only; with a pool of three
    # trees, three sources at once, and not more.
    rows, depth = routes.kept_hop_rows([7, 2, 4])
    assert np.array_equal(depth[rows], hops[[7, 2, 4]]) and not depth.flags.writeable
    assert routes.tree_capacity == 3
    with pytest.raises(ValueError, match="distinct"):
        routes.kept_hop_rows([1, 2, 3, 4])
    with pytest.raises(ValueError, match="distinct"):
        routes.kept_hop_rows([1, 1])


@pytest.mark.parametrize("budget", [2**20, 2048])
def test_the_route_table_of_a_large_world_keeps_its_keys_sorted(monkeypatch, budget):
    # Beyond FULL_ROWS clusters the table holds only the pairs asked, in sorted keys that
    # grow in place; batches in a random order (repeats included) find their own routes,
    # also when a small budget empties the table between batches.
    monkeypatch.setattr("geosim.routes.FULL_ROWS", 16)
    graph = GRAPHS["ba70-2"]
    n = graph.number_of_nodes()
    _, _, res = reference(graph, "length")
    routes = Routes(graph, "length", route_budget=budget)
    rng = np.random.default_rng(3)
    for size in (1, 5, 40, 300, 2, 600):
        keys = rng.integers(0, n * n, size)
        rows, ptr, table = routes.route_table(keys)
        for key, row in zip(keys, rows, strict=True):
            assert table[ptr[row]:ptr[row + 1]].tolist() == res[divmod(int(key), n)]
        table_keys, ids = routes.pair_table()[:2]
        assert np.all(np.diff(table_keys) > 0) and np.isin(keys, table_keys).all()
        assert sorted(ids.tolist()) == list(range(ids.size))
    assert routes.pair_table()[2].size == 0                 # no dense index


def test_dijkstra_hop_counts_follow_the_direction_of_the_route():
    # Two routes of length 2.0 between 0 and 3: 0-2-4-3 (3 hops) and 0-1-3 (2 hops). From
    # 0 the three-hop one reaches 3 first, from 3 the two-hop one reaches 0 first; an
    # equal length later does not replace a path.
    graph = nx.Graph()
    for u, v, length in [(0, 1, 1.5), (0, 2, 0.5), (1, 3, 0.5), (2, 4, 0.5), (4, 3, 1.0)]:
        graph.add_edge(u, v, length=length)
    paths = dict(nx.all_pairs_dijkstra_path(graph, weight="length"))
    routes = Routes(graph, "length")
    assert routes.path(0, 3) == paths[0][3] == [0, 2, 4, 3]
    assert routes.path(3, 0) == paths[3][0] == [3, 1, 0]
    assert routes.hops(0, 3) == 3 and routes.hops(3, 0) == 2
    assert Routes(graph, None).hops(0, 3) == Routes(graph, None).hops(3, 0) == 2


def test_hop_counts_index_like_the_matrix():
    graph = GRAPHS["ba70-2"]
    n = graph.number_of_nodes()
    _, dense, _ = reference(graph, "length")
    hops = HopCounts(Routes(graph, "length", tree_budget=4 * tree_bytes(n)))
    a, b = np.array([3, 0, 69, 3]), np.array([1, 1, 2, 5])
    keys = [(2, 5), (a, b), (a[:, None], b[None, :]), (4, b), (a, 7), (-1, 0), (a, -2),
            (slice(None), b), (a, slice(None)), (slice(3, 10, 2), 4), (5,), 6, a, [1, 2],
            (slice(None), slice(None)), (slice(2, 5), slice(None, None, -7)), ([1, 2], 3),
            (np.int32(4), np.int64(9)), (np.empty(0, dtype=np.int64), 3)]
    for key in keys:
        got, want = hops[key], dense[key]
        assert np.shape(got) == np.shape(want) and np.array_equal(got, want), key
        assert np.asarray(got).dtype == np.int64
    assert isinstance(hops[2, 5], np.integer)
    assert hops.shape == (n, n) and len(hops) == n
    assert np.array_equal(np.asarray(hops), dense)
    row = hops[3]
    row[:] = -1                                    # a fresh array: the routes are unchanged
    assert np.array_equal(hops[3], dense[3])
    for bad in [(n, 0), (0, -n - 1), (0.5, 1)]:
        with pytest.raises(IndexError):
            hops[bad]
    with pytest.raises(AttributeError):
        hops.foo = 1


def test_the_schedulers_view_reads_hops_and_rows_but_cannot_change_them():
    model = GeoModel(load_scenario(geo_world(n_jobs=2)))
    view, world = model.view, model.world
    _, dense, _ = reference(world.graph, "length")
    assert isinstance(view.hops, HopCounts) and isinstance(view.routes, RouteView)
    assert np.array_equal(view.hops[:, :], dense)
    assert np.array_equal(view.routes.hop_rows([1, 0]), dense[[1, 0]])
    rows, depth = view.routes.kept_hop_rows([1, 0])
    assert np.array_equal(depth[rows], dense[[1, 0]])
    with pytest.raises(ValueError):
        depth[rows[0], 0] = 5
    assert np.array_equal(view.routes.hop_row(2), dense[2])
    assert view.routes.hops(0, 1) == dense[0, 1]
    with pytest.raises(AttributeError):
        view.routes._routes = None


@pytest.mark.parametrize("full_rows", [512, 2])
@pytest.mark.parametrize("budget", [None, 256])
def test_the_flows_cross_the_resources_of_their_routes(budget, full_rows, monkeypatch):
    # Each input keeps the row of its route with the table's epoch: a table emptied to
    # stay in its budget (every step at 256 bytes) takes a new epoch, and the rows kept
    # before are looked up again. With full_rows 2 the table holds sorted keys only.
    monkeypatch.setattr("geosim.routes.FULL_ROWS", full_rows)
    config = geo_world(n_jobs=12)
    model = GeoModel(load_scenario(config))
    engine = model.engine
    if budget is not None:          # a table too small for one step's pairs: still served
        model.world.routes = Routes(model.world.graph, "length", route_budget=budget)
    _, _, res = reference(model.world.graph, "length")
    seen = 0
    for _ in range(40):
        model.step()
        if engine.live.size == 0:
            continue
        flows = flow_structure(engine.live, engine.copies.kernel_arg, engine.inputs.kernel_arg,
                               engine.moves.src, engine.moves.dst, model.world.routes, 0.999)
        ends = np.r_[flows.starts[1:], flows.res.size]
        for j in range(flows.src.size):
            got = flows.res[flows.starts[j]:ends[j]].tolist()
            assert got == res[int(flows.src[j]), int(flows.dst[j])]
            seen += 1
        epoch = model.world.routes.pair_table()[-1]
        assert np.all(engine.inputs.cols["route_epoch"][flows.idx] == epoch)
    assert seen > 0


@pytest.mark.parametrize("trees", [1, 3])
def test_placement_reads_hop_rows_from_a_cache_that_evicts(trees, monkeypatch):
    # Above FULL_ROWS clusters, locality placement reads its homes' hop rows in the cache
    # of trees (kept_hop_rows); a cache of one or three trees evicts them as homes come
    # and go, and the run is the one a cache holding every tree gives.
    monkeypatch.setattr("geosim.routes.FULL_ROWS", 2)
    config = geo_world(n_clusters=30, n_jobs=20, rate=0.2, scheduler="fair")
    whole = GeoModel(load_scenario(config)).run().copies
    built = []

    def small_cache(graph, weight):
        routes = Routes(graph, weight, tree_budget=trees * tree_bytes(30))
        built.append(routes)
        return routes

    monkeypatch.setattr("geosim.world.Routes", small_cache)
    pd.testing.assert_frame_equal(GeoModel(load_scenario(config)).run().copies, whole)
    assert built[0].tree_capacity == trees
    assert built[0].trees_built > 30                # trees evicted and built again
