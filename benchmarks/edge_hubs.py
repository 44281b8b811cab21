"""Why the WAN of a large Barabási–Albert world is the bottleneck: its hub links.

``scenarios/edge-10k.toml`` keeps pingan-medium's offered load per slot, yet its mean
flowtime is far above pingan-medium's. This script isolates the cause. For each world
size N (the edge scenario with ``topology.n_clusters = N`` and the arrival rate scaled
to keep the load per slot, λ = 0.07 · N / 100), it runs Fair (or ``--scheduler``) on
the same jobs and world (the same seed) four ways:

- ``shipped``: as the scenario defines it;
- ``all links x10``: every link and gate ten times wider (``links.bandwidth_scale``);
- ``busiest 1% x10``: only the 1% of links that carried the most MB in the shipped run
  ten times wider (their mean, spread and current bandwidth scaled before the run);
- ``random 1% x10``: as many links drawn at random, the control.

It prints, per size, the MB the WAN moved, the link MB per WAN MB (the mean number of
links a moved MB crossed), the share of the link MB that the busiest 1% of links
carried, the largest degree of the graph, and each variant's mean flowtime with its
paired change against ``shipped`` (job by job, batch-means 95% interval). If the
busiest 1% recover what widening every link recovers and the random 1% do not, the
hub links are the bottleneck. Usage:

    python benchmarks/edge_hubs.py [--clusters 100 1000 10000] [--jobs 2000] [--seed 1]
        [--scheduler fair]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from geosim import GeoModel, load_scenario
from geosim.experiment.stats import paired_change

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "edge-10k.toml"
#: Widened links' bandwidth factor, and the share of links widened.
FACTOR, SHARE = 10.0, 0.01


def _model(clusters: int, jobs: int, seed: int, scale: float = 1.0,
           scheduler: str = "fair") -> GeoModel:
    scenario = load_scenario(SCENARIO, {
        "topology.n_clusters": clusters, "workload.n_jobs": jobs,
        "workload.arrival_rate": 0.07 * clusters / 100, "links.bandwidth_scale": scale})
    return GeoModel(scenario, scheduler, seed)


def _widen(model: GeoModel, links: np.ndarray) -> None:
    """Make ``links`` FACTOR times wider for the whole run (their redraws included)."""
    bw = model.world.link_bw
    bw.mean[links] *= FACTOR
    bw.sd[links] *= FACTOR
    level = bw.level.copy()             # a new array: the world's capacities are remade
    level[links] *= FACTOR
    bw.level = level


def _flowtimes(model: GeoModel) -> np.ndarray:
    jobs = model.run().jobs.sort_values(["arrival", "job"], kind="stable")
    return jobs["flowtime"].to_numpy()


def size(clusters: int, jobs: int, seed: int, scheduler: str = "fair") -> None:
    """Print the rows of one world size."""
    shipped = _model(clusters, jobs, seed, scheduler=scheduler)
    base = _flowtimes(shipped)
    link_mb = np.asarray(shipped.engine.traffic.link).reshape(-1, 2).sum(axis=1)
    wan_mb = float(shipped.engine.wan_mb)
    k = max(1, round(SHARE * link_mb.size))
    busiest = np.argsort(-link_mb, kind="stable")[:k]
    degree = max(d for _, d in shipped.world.graph.degree())
    print(f"{scheduler}, {clusters} clusters (λ = {0.07 * clusters / 100:g}/s, {jobs} jobs, "
          f"seed {seed}): "
          f"WAN {wan_mb / 1e6:.2f} TB moved, {link_mb.sum() / wan_mb:.2f} link MB per WAN MB, "
          f"busiest 1% of {link_mb.size} links carried {link_mb[busiest].sum() / link_mb.sum():.1%}"
          f" of the link MB; largest degree {degree}")
    print(f"  shipped: mean flowtime {base.mean():.1f} s")
    rng = np.random.default_rng(seed)
    variants = {"all links x10": (FACTOR, None), "busiest 1% x10": (1.0, busiest),
                "random 1% x10": (1.0, rng.choice(link_mb.size, k, replace=False))}
    for label, (scale, links) in variants.items():
        model = _model(clusters, jobs, seed, scale, scheduler)
        if links is not None:
            _widen(model, links)
        flow = _flowtimes(model)
        diff, half = paired_change(flow, base)
        print(f"  {label}: mean flowtime {flow.mean():.1f} s, {100 * diff:+.1f}% "
              f"[{100 * (diff - half):+.1f}, {100 * (diff + half):+.1f}] against shipped")


def main() -> None:
    """Parse the arguments and print each size's rows."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clusters", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scheduler", default="fair")
    args = parser.parse_args()
    for clusters in args.clusters:
        size(clusters, args.jobs, args.seed, args.scheduler)


if __name__ == "__main__":
    main()
