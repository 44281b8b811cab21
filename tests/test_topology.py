import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from geosim.errors import GeosimError
from geosim.topology import (
    TIERS,
    assign_tiers,
    barabasi_albert_topology,
    check_topology,
    read_topology,
    write_topology,
)

TOPOLOGIES = Path(__file__).resolve().parents[1] / "topologies"

SMALL_XY = {
    0: (120, 860),
    1: (410, 770),
    2: (300, 420),
    3: (650, 880),
    4: (720, 360),
    5: (150, 130),
    6: (880, 610),
    7: (530, 90),
}
SMALL_EDGES = {
    (0, 1): 1000.0,
    (0, 2): 622.0,
    (1, 2): 622.0,
    (1, 3): 155.0,
    (0, 3): 100.0,
    (2, 4): 1000.0,
    (1, 4): 155.0,
    (2, 5): 100.0,
    (0, 5): 45.0,
    (4, 6): 622.0,
    (1, 6): 155.0,
    (5, 7): 100.0,
    (4, 7): 45.0,
}


def edge_set(graph):
    return {tuple(sorted(e)) for e in graph.edges}


def write_text(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def brite(nodes, edges, node_count=None, edge_count=None):
    """A BRITE file from node lines and edge lines (each a string)."""
    lines = [
        f"Topology: ( {len(nodes)} Nodes, {len(edges)} Edges )",
        "Model (2 - RTBarabasiAlbert):  3 10 100 1  2  1 10.0 1024.0 ",
        "",
        f"Nodes: ( {len(nodes) if node_count is None else node_count} )",
        *nodes,
        "",
        "",
        f"Edges: ( {len(edges) if edge_count is None else edge_count} )",
        *edges,
    ]
    return "\n".join(lines) + "\n"


TRIANGLE_NODES = [  # lines 5-7 of a file made by brite(); its first edge is on line 11
    "0\t0\t0\t2\t2\t-1\tRT_NODE",
    "1\t3\t4\t2\t2\t-1\tRT_NODE",
    "2\t6\t0\t2\t2\t-1\tRT_NODE",
]


# --- generator ---------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "m"), [(100, 2), (50, 3), (10, 1), (3, 2)])
def test_ba_sizes_and_connected(n, m):
    graph = barabasi_albert_topology(n, m, seed=7)
    assert list(graph.nodes) == list(range(n))
    assert graph.number_of_edges() == m * (n - m)
    assert nx.is_connected(graph)
    assert nx.number_of_selfloops(graph) == 0
    assert all(graph.degree(v) >= m for v in range(m + 1, n))  # each newcomer adds m links


def test_ba_positions_and_lengths():
    graph = barabasi_albert_topology(60, 2, plane_size=500.0, seed=3)
    for _, data in graph.nodes(data=True):
        assert 0.0 <= data["x"] < 500.0 and 0.0 <= data["y"] < 500.0
        assert type(data["x"]) is float
    for u, v, data in graph.edges(data=True):
        a, b = graph.nodes[u], graph.nodes[v]
        assert data["length"] == pytest.approx(math.hypot(a["x"] - b["x"], a["y"] - b["y"]))


def test_ba_degrees_are_heavy_tailed():
    graph = barabasi_albert_topology(1000, 2, seed=11)
    degrees = np.array([d for _, d in graph.degree()])
    assert degrees.mean() == pytest.approx(2 * 2 * 998 / 1000)
    assert degrees.max() >= 8 * degrees.mean()
    # Most clusters are poorly connected: the median is at most the mean.
    assert np.median(degrees) <= degrees.mean()


def test_ba_same_seed_identical():
    a = barabasi_albert_topology(80, 2, seed=2024)
    b = barabasi_albert_topology(80, 2, seed=2024)
    assert list(a.edges(data=True)) == list(b.edges(data=True))
    assert list(a.nodes(data=True)) == list(b.nodes(data=True))
    c = barabasi_albert_topology(80, 2, seed=np.random.default_rng(2024))
    assert list(a.nodes(data=True)) == list(c.nodes(data=True))
    assert edge_set(a) == edge_set(c)


def test_ba_different_seed_differs():
    a = barabasi_albert_topology(80, 2, seed=1)
    b = barabasi_albert_topology(80, 2, seed=2)
    assert edge_set(a) != edge_set(b)
    assert a.nodes[0]["x"] != b.nodes[0]["x"]


def test_ba_generator_seed_is_advanced():
    rng = np.random.default_rng(5)
    a = barabasi_albert_topology(30, 2, seed=rng)
    b = barabasi_albert_topology(30, 2, seed=rng)
    assert a.nodes[0]["x"] != b.nodes[0]["x"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_clusters": 2, "m": 2},
        {"n_clusters": 5, "m": 0},
        {"n_clusters": 5.0, "m": 2},
        {"n_clusters": 5, "m": 2, "plane_size": 0.0},
        {"n_clusters": 5, "m": 2, "plane_size": math.inf},
        {"n_clusters": 5, "m": 2, "seed": -1},
        {"n_clusters": 5, "m": 2, "seed": "abc"},
    ],
)
def test_ba_bad_arguments(kwargs):
    with pytest.raises(GeosimError):
        barabasi_albert_topology(**kwargs)


# --- tiers -------------------------------------------------------------------------------


def test_tiers_default_100():
    graph = barabasi_albert_topology(100, 2, seed=2024)
    tier = assign_tiers(graph)
    assert tier.shape == (100,)
    assert np.bincount(tier, minlength=3).tolist() == [5, 20, 75]
    degree = np.array([graph.degree(v) for v in range(100)])
    assert degree[tier == 0].min() >= degree[tier == 1].max()
    assert degree[tier == 1].min() >= degree[tier == 2].max()
    assert [graph.nodes[v]["tier"] for v in range(100)] == [TIERS[t] for t in tier]


@pytest.mark.parametrize(
    ("n", "counts"),
    [(1, [0, 0, 1]), (2, [0, 1, 1]), (10, [1, 2, 7]), (20, [1, 4, 15]), (1000, [50, 200, 750])],
)
def test_tier_counts_round_cumulative_shares(n, counts):
    graph = nx.path_graph(n)
    tier = assign_tiers(graph)
    assert np.bincount(tier, minlength=3).tolist() == counts


def test_single_cluster_is_small():
    graph = nx.Graph()
    graph.add_node(0)
    assert assign_tiers(graph).tolist() == [2]
    assert graph.nodes[0]["tier"] == "small"


def test_tier_ties_broken_by_node_id():
    graph = nx.cycle_graph(20)  # every degree is 2
    tier = assign_tiers(graph)
    assert tier.tolist() == [0] + [1] * 4 + [2] * 15


def test_tier_custom_shares():
    graph = nx.star_graph(5)  # hub 0 has degree 5
    assert assign_tiers(graph, (1 / 3, 1 / 3, 1 / 3)).tolist() == [0, 0, 1, 1, 2, 2]
    assert assign_tiers(graph, (0, 0, 1)).tolist() == [2] * 6
    assert assign_tiers(graph, [1.0, 0.0, 0.0]).tolist() == [0] * 6


@pytest.mark.parametrize(
    "shares",
    [
        (0.5, 0.5),
        (0.2, 0.3, 0.4, 0.1),
        (0.5, 0.6, -0.1),
        (0.2, 0.2, 0.2),
        ("a", 0.5, 0.5),
        (math.nan, 0.5, 0.5),
    ],
)
def test_tier_bad_shares(shares):
    with pytest.raises(GeosimError, match="shares"):
        assign_tiers(nx.path_graph(4), shares)


def test_tiers_need_nodes_0_to_n_minus_1():
    with pytest.raises(GeosimError, match="0..n-1"):
        assign_tiers(nx.relabel_nodes(nx.path_graph(3), {0: "a"}))


# --- files -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["world.graphml", "world.brite", "WORLD.GraphML", "World.BRITE"])
def test_round_trip(tmp_path, name):
    graph = barabasi_albert_topology(40, 2, seed=9)
    for k, (u, v) in enumerate(list(graph.edges)[:10]):
        graph.edges[u, v]["bandwidth"] = 100.0 + k
    path = tmp_path / name
    write_topology(graph, path)
    back = read_topology(path)
    assert list(back.nodes) == list(graph.nodes)
    assert edge_set(back) == edge_set(graph)
    for v, data in graph.nodes(data=True):
        assert back.nodes[v]["x"] == data["x"] and back.nodes[v]["y"] == data["y"]
        assert back.nodes[v]["name"] == str(v)
    for u, v, data in graph.edges(data=True):
        assert back.edges[u, v]["length"] == data["length"]
        assert back.edges[u, v].get("bandwidth") == data.get("bandwidth")


def test_round_trip_of_shipped_brite_through_graphml(tmp_path):
    small = read_topology(TOPOLOGIES / "small.brite")
    write_topology(small, tmp_path / "small.graphml")
    again = read_topology(tmp_path / "small.graphml")
    assert nx.utils.graphs_equal(nx.Graph(small.edges(data=True)), nx.Graph(again.edges(data=True)))


def test_shipped_small_brite():
    graph = read_topology(TOPOLOGIES / "small.brite")
    assert graph.number_of_nodes() == 8
    assert graph.number_of_edges() == 13
    for v, (x, y) in SMALL_XY.items():
        assert (graph.nodes[v]["x"], graph.nodes[v]["y"]) == (x, y)
        assert graph.nodes[v]["name"] == str(v)
    assert edge_set(graph) == set(SMALL_EDGES)
    for (u, v), bandwidth in SMALL_EDGES.items():
        (xu, yu), (xv, yv) = SMALL_XY[u], SMALL_XY[v]
        assert graph.edges[u, v]["length"] == pytest.approx(math.hypot(xu - xv, yu - yv))
        assert graph.edges[u, v]["bandwidth"] == bandwidth
    assert graph.edges[2, 4]["length"] == pytest.approx(math.sqrt(180_000))
    assert dict(graph.degree()) == {0: 4, 1: 5, 2: 4, 3: 2, 4: 4, 5: 3, 6: 2, 7: 2}
    # n=8: bounds round(0.4)=0, round(2.0)=2 -> no large, medium = node 1 (deg 5), node 0.
    assert assign_tiers(graph).tolist() == [1, 1, 2, 2, 2, 2, 2, 2]


def test_shipped_default_100():
    graph = read_topology(TOPOLOGIES / "default-100.graphml")
    assert list(graph.nodes) == list(range(100))
    assert graph.number_of_edges() == 196
    assert nx.is_connected(graph)
    degrees = [d for _, d in graph.degree()]
    assert max(degrees) >= 5 * np.mean(degrees)
    for _, data in graph.nodes(data=True):
        assert 0.0 <= data["x"] < 10_000.0 and 0.0 <= data["y"] < 10_000.0
    assert np.bincount(assign_tiers(graph)).tolist() == [5, 20, 75]


def test_brite_without_length_or_bandwidth_and_c_plus_plus_layout(tmp_path):
    # BRITE's C++ exporter writes "Nodes: (3)" and "Edges: (2):", space separated.
    text = (
        "Topology: ( 3 Nodes, 2 Edges )\nModel ( 2 ): 3 10 100 1 2 1 10 1024\n\n"
        "Nodes: (3)\n7 0.00 0.00 1 1 -1 RT_NODE \n8 3.00 4.00 2 2 -1 RT_NODE \n"
        "9 6.00 0.00 1 1 -1 RT_NODE \n\nEdges: (2):\n0 8 7\n1 8 9 5.00 0.02 -1 -1 -1 E_RT U\n"
    )
    graph = read_topology(write_text(tmp_path, "cpp.brite", text))
    assert [graph.nodes[v]["name"] for v in graph] == ["7", "8", "9"]
    assert graph.edges[0, 1]["length"] == pytest.approx(5.0)  # Euclidean, no column
    assert graph.edges[1, 2]["length"] == 5.0
    assert "bandwidth" not in graph.edges[0, 1]
    assert "bandwidth" not in graph.edges[1, 2]  # -1 means not given


def test_self_loops_dropped_and_duplicates_merged(tmp_path):
    edges = [
        "0\t0\t1\t5.0\t0.1\t10.0\t-1\t-1\tE_RT\tU",
        "1\t1\t1\t0.0\t0.1\t10.0\t-1\t-1\tE_RT\tU",
        "2\t1\t0\t9.0\t0.1\t99.0\t-1\t-1\tE_RT\tU",
        "3\t1\t2\t5.0\t0.1\t20.0\t-1\t-1\tE_RT\tU",
    ]
    graph = read_topology(write_text(tmp_path, "dup.brite", brite(TRIANGLE_NODES, edges)))
    assert edge_set(graph) == {(0, 1), (1, 2)}
    assert graph.edges[0, 1] == {"length": 5.0, "bandwidth": 10.0}  # first one kept


def test_graphml_names_defaults_and_multigraph(tmp_path):
    text = """<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="x" for="node" attr.name="x" attr.type="double"/>
  <key id="bw" for="edge" attr.name="bandwidth" attr.type="double"/>
  <graph edgedefault="directed">
    <node id="paris"><data key="x">3.0</data></node>
    <node id="london"/>
    <node id="rome"/>
    <edge source="paris" target="london"><data key="bw">40</data></edge>
    <edge source="london" target="paris"><data key="bw">70</data></edge>
    <edge source="rome" target="rome"/>
    <edge source="rome" target="london"/>
  </graph>
</graphml>
"""
    graph = read_topology(write_text(tmp_path, "cities.graphml", text))
    assert not graph.is_directed() and not graph.is_multigraph()
    assert [graph.nodes[v]["name"] for v in graph] == ["paris", "london", "rome"]
    assert graph.nodes[0]["x"] == 3.0 and graph.nodes[0]["y"] == 0.0
    assert graph.nodes[1]["x"] == 0.0
    assert edge_set(graph) == {(0, 1), (1, 2)}
    assert graph.edges[0, 1] == {"length": 3.0, "bandwidth": 40.0}
    assert graph.edges[1, 2] == {"length": 0.0}


# --- errors ------------------------------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(GeosimError, match="not found") as info:
        read_topology(tmp_path / "nowhere.graphml")
    assert "nowhere.graphml" in str(info.value)
    assert info.value.source == str(tmp_path / "nowhere.graphml")


def test_unknown_suffix(tmp_path):
    path = write_text(tmp_path, "world.txt", "hello\n")
    with pytest.raises(GeosimError, match="unknown topology format") as info:
        read_topology(path)
    assert "world.txt" in str(info.value)
    with pytest.raises(GeosimError, match="unknown topology format"):
        write_topology(nx.path_graph(2), tmp_path / "out.gml")


def test_malformed_brite_line(tmp_path):
    nodes = [*TRIANGLE_NODES[:2], "2\tsix\t0\t2\t2\t-1\tRT_NODE"]
    path = write_text(tmp_path, "bad.brite", brite(nodes, []))
    with pytest.raises(GeosimError, match="line 7: malformed node line") as info:
        read_topology(path)
    assert "bad.brite" in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("nodes", "edges", "counts", "message"),
    [
        (TRIANGLE_NODES, ["0\t0"], (None, None), "line 11: malformed edge line"),
        (TRIANGLE_NODES, ["0\t0\t5\t1.0"], (None, None), "line 11: edge refers to unknown node 5"),
        (TRIANGLE_NODES, ["0\t0\t1\tfar"], (None, None), "line 11: edge length is not a number"),
        (TRIANGLE_NODES, ["0\t0\t1\t-2.0"], (None, None), "line 11: edge length is negative"),
        (TRIANGLE_NODES, ["0\t0\t1\t1\t1\tinf"], (None, None), "bandwidth is not finite"),
        ([*TRIANGLE_NODES, "1\t0\t0"], [], (None, None), "line 8: duplicate node id 1"),
        (TRIANGLE_NODES, [], (4, None), "line 4: section declares 4 nodes but 3 follow"),
        (TRIANGLE_NODES, ["0 0 1", "1 1 2"], (None, 3), "declares 3 edges but 2 follow"),
        ([], [], (None, None), "no clusters"),
        (TRIANGLE_NODES, ["0\t0\t1"], (None, None), "disconnected: 2 components"),
    ],
)
def test_bad_brite_content(tmp_path, nodes, edges, counts, message):
    path = write_text(tmp_path, "case.brite", brite(nodes, edges, *counts))
    with pytest.raises(GeosimError, match=message) as info:
        read_topology(path)
    assert str(info.value).startswith(str(path) + ": ")


def test_not_a_brite_file(tmp_path):
    with pytest.raises(GeosimError, match="no 'Nodes:' section"):
        read_topology(write_text(tmp_path, "x.brite", "just some text\n"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("this is not xml", "malformed GraphML"),
        ("<?xml version='1.0'?><foo/>", "malformed GraphML"),
        (
            '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
            '<key id="l" for="edge" attr.name="length" attr.type="string"/>'
            '<graph edgedefault="undirected"><node id="a"/><node id="b"/>'
            '<edge source="a" target="b"><data key="l">far</data></edge></graph></graphml>',
            "edge 'a'-'b': length is not a number",
        ),
    ],
)
def test_bad_graphml(tmp_path, text, message):
    path = write_text(tmp_path, "bad.graphml", text)
    with pytest.raises(GeosimError, match=message) as info:
        read_topology(path)
    assert "bad.graphml" in str(info.value)


def test_disconnected_graphml(tmp_path):
    graph = nx.Graph()
    graph.add_edges_from([(0, 1), (2, 3), (4, 5)])
    path = tmp_path / "islands.graphml"
    write_topology(graph, path)
    with pytest.raises(GeosimError, match="3 components, e.g. node 2") as info:
        read_topology(path)
    assert "islands.graphml" in str(info.value)


def test_check_topology():
    check_topology(nx.path_graph(3))
    check_topology(nx.empty_graph(1))
    with pytest.raises(GeosimError, match="no clusters") as info:
        check_topology(nx.Graph(), source="scenario.toml")
    assert info.value.source == "scenario.toml"
    graph = nx.Graph([(0, 1), (2, 3)])
    graph.nodes[2]["name"] = "tokyo"
    with pytest.raises(GeosimError, match=r"2 components, e.g. node 2 \(name 'tokyo'\)"):
        check_topology(graph)


def test_write_to_missing_directory(tmp_path):
    with pytest.raises(GeosimError, match="cannot write") as info:
        write_topology(nx.path_graph(2), tmp_path / "no" / "such" / "dir.brite")
    assert "dir.brite" in str(info.value)
