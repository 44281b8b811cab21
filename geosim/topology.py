"""The world's topology: clusters are nodes, WAN links are edges.

A topology is a simple undirected :class:`networkx.Graph` whose nodes are the integers
``0..n-1``. Every node has float attributes ``x`` and ``y`` (position in a plane, km) and
every edge a float attribute ``length`` (km; the Euclidean distance unless a file says
otherwise), so that latency can follow distance. Edges read from a file may also carry
``bandwidth`` (float, in the file's own unit). Bandwidths, latencies and cluster
parameters are defined by other modules.

This module generates topologies (heavy-tailed Barabási–Albert, BRITE's router-level
default), tiers clusters by degree, and reads and writes GraphML and BRITE files.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from numbers import Integral, Real
from pathlib import Path
from xml.etree.ElementTree import ParseError

import networkx as nx
import numpy as np

from geosim.errors import GeosimError

__all__ = [
    "TIERS",
    "assign_tiers",
    "barabasi_albert_topology",
    "check_topology",
    "read_topology",
    "write_topology",
]

TIERS: tuple[str, ...] = ("large", "medium", "small")
"""Tier names, indexed by the tier numbers that :func:`assign_tiers` returns."""

_FORMATS = (".graphml", ".brite")
_LIGHT_KM_PER_MS = 299.792458  # used only for the informational BRITE delay column
_BRITE_HEADER = re.compile(r"[A-Za-z][A-Za-z_ ]*[:(]")  # "Nodes:", "Model (2 - ...):", ...
_BRITE_COUNT = re.compile(r"\(\s*(\d+)\s*\)")

# A parsed file before it becomes a graph: nodes as (name, x, y) in file order, edges as
# (u, v, length or None, bandwidth or None) with u, v indices into the node list.
_Nodes = list[tuple[str, float, float]]
_Edges = list[tuple[int, int, float | None, float | None]]


#: Most clusters of a topology (generated or read): the monitor's statistics per pair of
#: clusters grow as the square.
MAX_CLUSTERS = 10_000
#: Largest topology file read (bytes).
MAX_FILE_BYTES = 64 * 2**20

def barabasi_albert_topology(
    n_clusters: int,
    m: int = 2,
    *,
    plane_size: float = 10_000.0,
    seed: int | np.random.Generator | None = None,
) -> nx.Graph:
    """Generate a heavy-tailed Barabási–Albert topology with clusters placed in a plane.

    Links come from :func:`networkx.barabasi_albert_graph` (each new cluster attaches to
    ``m`` existing ones, preferring well-connected ones), so the graph is connected and has
    ``m * (n_clusters - m)`` edges. Positions are uniform in a square plane.

    Args:
        n_clusters: Number of clusters (nodes); must exceed ``m``.
        m: Links added per new cluster, at least 1 (BRITE's router-level default is 2).
        plane_size: Side of the square plane, in km.
        seed: An int, a :class:`numpy.random.Generator` (which is advanced), or None for
            fresh entropy. The same int seed gives an identical graph and positions.

    Returns:
        A graph with nodes ``0..n_clusters-1``, node attributes ``x`` and ``y`` (km) and
        edge attribute ``length`` (km, Euclidean).

    Raises:
        GeosimError: If the arguments are out of range or the seed is invalid.
    """
    if not (_is_int(n_clusters) and _is_int(m)) or not n_clusters > m >= 1:
        raise GeosimError(
            "Barabási–Albert topology needs integers n_clusters > m >= 1, "
            f"got n_clusters={n_clusters!r}, m={m!r}"
        )
    if not (_is_real(plane_size) and math.isfinite(plane_size) and plane_size > 0):
        raise GeosimError(f"plane_size must be a positive number, got {plane_size!r}")
    rng = _generator(seed)
    n = int(n_clusters)
    links = nx.barabasi_albert_graph(n, int(m), seed=int(rng.integers(2**32)))
    positions = rng.uniform(0.0, float(plane_size), size=(n, 2))

    graph = nx.Graph()
    for v in range(n):
        graph.add_node(v, x=float(positions[v, 0]), y=float(positions[v, 1]))
    for u, v in sorted(tuple(sorted(edge)) for edge in links.edges()):
        graph.add_edge(u, v, length=_distance(graph, u, v))
    return graph


def assign_tiers(graph: nx.Graph, shares: Sequence[float] = (0.05, 0.20, 0.75)) -> np.ndarray:
    """Tier clusters by degree: the best connected are large, then medium, then small.

    Clusters are sorted by degree decreasing, ties broken by node id ascending. The first
    ``bounds[0]`` are large, the next up to ``bounds[1]`` medium, the rest small, where
    ``bounds = round(cumsum(shares) * n)`` rounding halves up. With the default shares,
    ``n = 100`` gives 5/20/75 clusters and ``n = 1`` a single small cluster.

    Args:
        graph: A topology with nodes ``0..n-1``. Its node attribute ``tier`` is set to the
            tier name (see :data:`TIERS`).
        shares: Fractions of large, medium and small clusters: three non-negative numbers
            summing to 1.

    Returns:
        Integer array ``tier`` with ``tier[node]`` in 0 (large), 1 (medium), 2 (small).

    Raises:
        GeosimError: If ``shares`` is invalid or the nodes are not ``0..n-1``.
    """
    fractions = _check_shares(shares)
    n = graph.number_of_nodes()
    if set(graph.nodes) != set(range(n)):
        raise GeosimError("assign_tiers needs a topology whose nodes are 0..n-1")
    degree = np.array([graph.degree(v) for v in range(n)], dtype=np.int64)
    order = np.lexsort((np.arange(n), -degree))  # by degree decreasing, then id ascending
    bounds = np.minimum(np.floor(np.cumsum(fractions) * n + 0.5).astype(np.int64), n)
    bounds[-1] = n
    tier = np.empty(n, dtype=np.int64)
    tier[order] = np.searchsorted(bounds, np.arange(n), side="right")
    nx.set_node_attributes(graph, {v: TIERS[t] for v, t in enumerate(tier)}, "tier")
    return tier


def read_topology(path: str | os.PathLike) -> nx.Graph:
    """Read a topology from a GraphML or BRITE file, chosen by suffix (case-insensitive).

    Nodes are relabelled ``0..n-1`` in file order; the file's own id is kept as the string
    node attribute ``name``. Nodes get float ``x`` and ``y`` (0.0 if absent), edges get
    float ``length`` (Euclidean distance if absent) and, when the file gives a positive
    one, float ``bandwidth`` as written in the file (BRITE writes -1 for "not given", so a
    bandwidth of 0 or less counts as absent). Self-loops are dropped and duplicate edges
    merged, keeping the first one's attributes. In a BRITE file only the ``Nodes:`` and
    ``Edges:`` sections are read; other sections are skipped.

    Args:
        path: A ``.graphml`` or ``.brite`` file.

    Returns:
        A simple undirected graph that passed :func:`check_topology`.

    Raises:
        GeosimError: With ``source=str(path)`` and a one-line message, if the file is
            missing or unreadable, has an unknown suffix, is malformed (naming the line for
            BRITE), is empty or is disconnected.
    """
    source = str(path)
    file = Path(path)
    suffix = _format_of(file, source)
    if not file.is_file():
        reason = "not a regular file" if file.exists() else "topology file not found"
        raise GeosimError(reason, source=source)
    if file.stat().st_size > MAX_FILE_BYTES:
        raise GeosimError(f"larger than {MAX_FILE_BYTES:,} bytes", source=source)
    try:
        if suffix == ".graphml":
            nodes, edges = _parse_graphml(file, source)
        else:
            nodes, edges = _parse_brite(file.read_text(encoding="utf-8"), source)
    except OSError as exc:
        raise GeosimError(f"cannot read file: {exc.strerror or exc}", source=source) from exc
    except UnicodeDecodeError as exc:
        raise GeosimError(f"not a UTF-8 text file: {exc.reason}", source=source) from exc

    if len(nodes) > MAX_CLUSTERS:
        raise GeosimError(f"{len(nodes)} clusters, more than the {MAX_CLUSTERS} geosim "
                          "handles", source=source)
    graph = nx.Graph()
    for i, (name, x, y) in enumerate(nodes):
        graph.add_node(i, name=name, x=x, y=y)
    for u, v, length, bandwidth in edges:
        if u == v or graph.has_edge(u, v):
            continue
        graph.add_edge(u, v, length=_distance(graph, u, v) if length is None else length)
        if bandwidth is not None:
            graph.edges[u, v]["bandwidth"] = bandwidth
    check_topology(graph, source)
    return graph


def write_topology(graph: nx.Graph, path: str | os.PathLike) -> None:
    """Write a topology as GraphML or BRITE, chosen by suffix (case-insensitive).

    Writes node ``x``, ``y`` (0.0 if absent) and edge ``length`` (Euclidean if absent) and
    ``bandwidth`` (when present); other attributes are not written. Self-loops are skipped.
    GraphML node ids are ``str(node)``; BRITE node ids are positions ``0..n-1`` in node
    order. Reading the file back with :func:`read_topology` gives the same nodes (for a
    graph with nodes ``0..n-1``), edges, ``x``, ``y``, ``length`` and ``bandwidth``.

    Args:
        graph: The topology to write.
        path: Destination ``.graphml`` or ``.brite`` file (overwritten).

    Raises:
        GeosimError: If the suffix is unknown, an attribute is not a number, or the file
            cannot be written.
    """
    source = str(path)
    file = Path(path)
    suffix = _format_of(file, source)
    export = _export_graph(graph, source)
    try:
        if suffix == ".graphml":
            nx.write_graphml(export, file)
        else:
            file.write_text(_brite_text(export), encoding="utf-8")
    except OSError as exc:
        raise GeosimError(f"cannot write file: {exc.strerror or exc}", source=source) from exc


def check_topology(graph: nx.Graph, source: str = "topology") -> None:
    """Check that a topology has at least one cluster and is connected.

    Args:
        graph: The topology.
        source: Where the topology came from, used as the error's source.

    Raises:
        GeosimError: If the graph has no nodes, or is disconnected (the message gives the
            number of components and a node outside the first node's component).
    """
    if graph.number_of_nodes() == 0:
        raise GeosimError("topology has no clusters (empty graph)", source=source)
    undirected = graph.to_undirected(as_view=True) if graph.is_directed() else graph
    count = nx.number_connected_components(undirected)
    if count > 1:
        first = next(iter(undirected.nodes))
        reached = nx.node_connected_component(undirected, first)
        other = next(v for v in undirected.nodes if v not in reached)
        raise GeosimError(
            f"topology is disconnected: {count} components, e.g. "
            f"{_describe(graph, other)} is not reachable from {_describe(graph, first)}",
            source=source,
        )


# --- helpers -------------------------------------------------------------------------


def _is_int(value: object) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def _is_real(value: object) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _generator(seed: int | np.random.Generator | None) -> np.random.Generator:
    if isinstance(seed, bool):
        raise GeosimError(f"invalid seed {seed!r}")
    try:
        return np.random.default_rng(seed)
    except (TypeError, ValueError) as exc:
        raise GeosimError(f"invalid seed {seed!r}: {_one_line(exc)}") from exc


def _distance(graph: nx.Graph, u: object, v: object) -> float:
    a, b = graph.nodes[u], graph.nodes[v]
    return math.hypot(a["x"] - b["x"], a["y"] - b["y"])


def _check_shares(shares: Sequence[float]) -> np.ndarray:
    try:
        fractions = np.asarray(shares, dtype=float)
    except (TypeError, ValueError) as exc:
        raise GeosimError(f"tier shares must be 3 numbers, got {shares!r}") from exc
    if fractions.shape != (3,):
        raise GeosimError(f"tier shares must be 3 numbers (large, medium, small), got {shares!r}")
    if not np.all(np.isfinite(fractions)) or np.any(fractions < 0):
        raise GeosimError(f"tier shares must be non-negative numbers, got {shares!r}")
    if not math.isclose(float(fractions.sum()), 1.0, abs_tol=1e-9):
        raise GeosimError(f"tier shares must sum to 1, got {shares!r}")
    return fractions


def _format_of(file: Path, source: str) -> str:
    suffix = file.suffix.lower()
    if suffix not in _FORMATS:
        raise GeosimError(
            f"unknown topology format {file.suffix or '(no suffix)'!r}: "
            "expected .graphml or .brite",
            source=source,
        )
    return suffix


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _describe(graph: nx.Graph, node: object) -> str:
    name = graph.nodes[node].get("name")
    if name is None or str(name) == str(node):
        return f"node {node!r}"
    return f"node {node!r} (name {str(name)!r})"


def _number(value: object, what: str, source: str) -> float:
    """Convert a file value to a finite float, or raise a GeosimError naming ``what``."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise GeosimError(f"{what} is not a number: {value!r}", source=source) from None
    if not math.isfinite(number):
        raise GeosimError(f"{what} is not finite: {value!r}", source=source)
    return number


def _length(value: object, what: str, source: str) -> float | None:
    if value is None:
        return None
    length = _number(value, what, source)
    if length < 0:
        raise GeosimError(f"{what} is negative: {value!r}", source=source)
    return length


def _bandwidth(value: object, what: str, source: str) -> float | None:
    if value is None:
        return None
    bandwidth = _number(value, what, source)
    return bandwidth if bandwidth > 0 else None


def _parse_graphml(file: Path, source: str) -> tuple[_Nodes, _Edges]:
    try:
        raw = nx.read_graphml(file)
    except (ParseError, nx.NetworkXError, ValueError, KeyError, TypeError) as exc:
        raise GeosimError(f"malformed GraphML: {_one_line(exc)}", source=source) from exc
    index: dict[object, int] = {}
    nodes: _Nodes = []
    for node, data in raw.nodes(data=True):
        index[node] = len(nodes)
        where = f"node {str(node)!r}"
        x = _number(data.get("x", 0.0), f"{where}: x", source)
        y = _number(data.get("y", 0.0), f"{where}: y", source)
        nodes.append((str(node), x, y))
    edges: _Edges = []
    for u, v, data in raw.edges(data=True):
        where = f"edge {str(u)!r}-{str(v)!r}"
        length = _length(data.get("length"), f"{where}: length", source)
        bandwidth = _bandwidth(data.get("bandwidth"), f"{where}: bandwidth", source)
        edges.append((index[u], index[v], length, bandwidth))
    return nodes, edges


def _parse_brite(text: str, source: str) -> tuple[_Nodes, _Edges]:
    """Parse BRITE output into nodes and edges.

    Reads ``Nodes: ( N )`` then ``id x y ...`` lines and ``Edges: ( E )`` then
    ``id from to length delay bandwidth ...`` lines; other lines and sections are skipped.
    """
    index: dict[int, int] = {}
    nodes: _Nodes = []
    edges: _Edges = []
    section: str | None = None  # "nodes", "edges" or None (model info, other sections)
    declared: int | None = None
    header_line = 0
    rows = 0
    found_nodes = False

    def close_section() -> None:
        if section is not None and declared is not None and rows != declared:
            raise GeosimError(
                f"line {header_line}: section declares {declared} {section} but {rows} follow",
                source=source,
            )

    def malformed(lineno: int, what: str, line: str) -> GeosimError:
        shown = line if len(line) <= 60 else line[:57] + "..."
        return GeosimError(f"line {lineno}: malformed {what} {shown!r}", source=source)

    for lineno, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.strip()
        if not line:
            continue
        if _BRITE_HEADER.match(line):
            close_section()
            word = line.split(":")[0].split("(")[0].strip().lower()
            section = word if word in ("nodes", "edges") else None
            count = _BRITE_COUNT.search(line)
            declared = int(count.group(1)) if count and section else None
            header_line, rows = lineno, 0
            found_nodes = found_nodes or section == "nodes"
            continue
        if section is None:
            continue
        rows += 1
        fields = line.split()
        if section == "nodes":
            expected = "node line (expected 'id x y indegree outdegree ASid type')"
            try:
                node_id, x, y = int(fields[0]), float(fields[1]), float(fields[2])
            except (IndexError, ValueError):
                raise malformed(lineno, expected, line) from None
            if not (math.isfinite(x) and math.isfinite(y)):
                raise malformed(lineno, expected, line)
            if node_id in index:
                raise GeosimError(f"line {lineno}: duplicate node id {node_id}", source=source)
            index[node_id] = len(nodes)
            nodes.append((str(node_id), x, y))
        else:
            expected = "edge line (expected 'id from to length delay bandwidth ...')"
            try:
                ends = int(fields[1]), int(fields[2])
            except (IndexError, ValueError):
                raise malformed(lineno, expected, line) from None
            for end in ends:
                if end not in index:
                    raise GeosimError(
                        f"line {lineno}: edge refers to unknown node {end}", source=source
                    )
            what = f"line {lineno}: edge"
            length = _length(fields[3] if len(fields) > 3 else None, f"{what} length", source)
            bandwidth = _bandwidth(
                fields[5] if len(fields) > 5 else None, f"{what} bandwidth", source
            )
            edges.append((index[ends[0]], index[ends[1]], length, bandwidth))
    close_section()
    if not found_nodes:
        raise GeosimError("no 'Nodes:' section: not a BRITE file", source=source)
    return nodes, edges


def _export_graph(graph: nx.Graph, source: str) -> nx.Graph:
    """Copy ``graph`` keeping only what the files store, as floats."""
    export = nx.Graph()
    for node, data in graph.nodes(data=True):
        where = f"node {node!r}"
        export.add_node(
            node,
            x=_number(data.get("x", 0.0), f"{where}: x", source),
            y=_number(data.get("y", 0.0), f"{where}: y", source),
        )
    for u, v, data in graph.edges(data=True):
        if u == v or export.has_edge(u, v):
            continue
        where = f"edge {u!r}-{v!r}"
        length = _length(data.get("length"), f"{where}: length", source)
        export.add_edge(u, v, length=_distance(export, u, v) if length is None else length)
        if data.get("bandwidth") is not None:
            export.edges[u, v]["bandwidth"] = _number(
                data["bandwidth"], f"{where}: bandwidth", source
            )
    return export


def _brite_text(graph: nx.Graph) -> str:
    """Format ``graph`` as BRITE output, in the layout of BRITE's own (Java) exporter.

    The delay column holds ``length`` divided by the speed of light, in ms (geosim ignores
    it when reading); a missing bandwidth is written as -1, BRITE's "not given".
    """
    n, e = graph.number_of_nodes(), graph.number_of_edges()
    index = {node: i for i, node in enumerate(graph.nodes)}
    lines = [
        f"Topology: ( {n} Nodes, {e} Edges )",
        "Model (7 - Imported): written by geosim.topology",
        "",
        f"Nodes: ( {n} )",
    ]
    for node, data in graph.nodes(data=True):
        degree = graph.degree(node)
        fields = [index[node], data["x"], data["y"], degree, degree, -1]
        lines.append("\t".join(map(repr, fields)) + "\tRT_NODE")
    lines += ["", "", f"Edges: ( {e} )"]
    for k, (u, v, data) in enumerate(graph.edges(data=True)):
        length = data["length"]
        bandwidth = data.get("bandwidth", -1.0)
        fields = [k, index[u], index[v], length, length / _LIGHT_KM_PER_MS, bandwidth, -1, -1]
        lines.append("\t".join(map(repr, fields)) + "\tE_RT\tU")
    return "\n".join(lines) + "\n"
