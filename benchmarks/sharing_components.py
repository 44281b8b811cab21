"""How the WAN's active transfers split into independent groups under max-min sharing.

Two active transfers are in one group (a connected component) when they cross a common
link or gate, directly or through other transfers. Max-min allocations of different
groups do not affect each other, so an allocation recomputed only for the group a change
touches would save the work of the other groups. This script measures how much that
could be: it runs ``scenarios/pingan-medium.toml`` under ``links.sharing = "maxmin"``
(on the shipped 100-cluster topology, or on a Barabási–Albert world of N clusters) and,
every ``--every`` steps, counts the groups of the step's active transfers, the share of
them in the largest group, and the share a recomputation of the touched group alone
would skip if a change fell on each group in proportion to its transfers
(``1 - sum(share_g ** 2)``). Prints one line per world and scheduler.

    python benchmarks/sharing_components.py [--clusters 100 1000] [--jobs 300]
        [--schedulers fair 'pingan[epsilon=0.6]'] [--every 50]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from geosim import GeoModel, load_scenario

ROOT = Path(__file__).resolve().parents[1]


def groups(model: GeoModel) -> tuple[int, int, int, float] | None:
    """Active transfers, their groups, the largest group's size and the share skipped.

    None when the step has no active transfer.
    """
    e = model.engine
    flows = e.flows
    if flows is None or flows.idx.size == 0:
        return None
    n = flows.idx.size
    active = e.flow_active[:n]
    if not active.any():
        return None
    owner = np.repeat(np.arange(n), np.diff(np.append(flows.starts, flows.res.size)))
    keep = active[owner]
    crosses = csr_matrix((np.ones(int(keep.sum())), (owner[keep], flows.res[keep])),
                         shape=(n, model.world.resource_capacity().size))
    _, label = connected_components(crosses @ crosses.T, directed=False)
    sizes = np.bincount(label[active])
    share = sizes / sizes.sum()
    return (int(active.sum()), int(np.count_nonzero(sizes)), int(sizes.max()),
            float(1.0 - np.sum(share ** 2)))


def measure(clusters: int, scheduler: str, jobs: int, every: int) -> str:
    overrides = {"workload.n_jobs": jobs, "links.sharing": "maxmin"}
    if clusters != 100:
        overrides.update({"topology.generator": "barabasi_albert",
                          "topology.n_clusters": clusters})
    model = GeoModel(load_scenario(ROOT / "scenarios" / "pingan-medium.toml", overrides),
                     scheduler=scheduler)
    seen = []
    while model.running:
        model.step()
        if model.steps_run % every == 0 and (g := groups(model)) is not None:
            seen.append(g)
    s = np.array(seen, dtype=float)
    world = "shipped topology" if clusters == 100 else "Barabási–Albert"
    return (f"{clusters} clusters ({world}), {scheduler}: {len(s)} samples, "
            f"{s[:, 0].mean():.0f} active transfers, {s[:, 1].mean():.1f} groups, "
            f"largest {100 * (s[:, 2] / s[:, 0]).mean():.1f}% of the transfers, "
            f"{100 * s[:, 3].mean():.1f}% skipped by a recomputation of the touched group "
            "(means)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--schedulers", nargs="+", default=["fair", "pingan[epsilon=0.6]"])
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--every", type=int, default=50)
    args = parser.parse_args()
    for clusters in args.clusters:
        for scheduler in args.schedulers:
            print(measure(clusters, scheduler, args.jobs, args.every), flush=True)


if __name__ == "__main__":
    main()
