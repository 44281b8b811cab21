"""Regenerate topologies/default-100.graphml, the default world.

100 clusters, heavy-tailed Barabási–Albert with m=2 (BRITE's router-level default),
placed uniformly in a 10,000 km square, seed 2024. Run from anywhere:

    .venv/bin/python topologies/generate_default.py
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "default-100.graphml"
N_CLUSTERS = 100
M = 2
SEED = 2024


def main() -> None:
    sys.path.insert(0, str(HERE.parent))  # works without installing geosim
    from geosim.topology import assign_tiers, barabasi_albert_topology, write_topology

    graph = barabasi_albert_topology(N_CLUSTERS, M, seed=SEED)
    write_topology(graph, OUTPUT)
    tiers = assign_tiers(graph)
    degrees = sorted((d for _, d in graph.degree()), reverse=True)
    print(
        f"wrote {OUTPUT.name}: {graph.number_of_nodes()} clusters, "
        f"{graph.number_of_edges()} links, degrees {degrees[0]}..{degrees[-1]}, "
        f"tiers large/medium/small = {[int((tiers == t).sum()) for t in range(3)]}"
    )


if __name__ == "__main__":
    main()
