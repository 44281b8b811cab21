"""Time against activity: the same jobs on 100 and on 1 000 clusters.

The edge target compares the same 300 ``pingan-medium`` jobs on a Barabási–Albert world
of 100 and of 1 000 clusters (keyed slot streams, no time series: ``bench_core.py``'s
``e100-KEY`` and ``e1000-KEY`` cases). The jobs are the same, but the simulation is not:
on the larger graph routes are longer and cross busier hubs, so transfers take longer,
copies live longer and schedulers that react to the network launch more. This script
counts that activity next to the time, so that "cost follows the activity" can be read
off: for each scheduler and size it runs the model step by step and prints

- the wall time of the run (model built and run; min / median of ``--repeat`` runs,
  the two sizes alternating);
- model steps, live copies summed over the steps (copy-steps), transfers summed over
  the steps (transfer-steps) and the resources those transfers cross summed over the
  steps (transfer-resource-steps: a transfer crossing 5 links and gates counts 5);
- the ratios of 1 000 over 100 clusters, and the time per copy-step and per
  transfer-resource-step.

Counting costs a few array reads per step, the same at both sizes. Usage:

    python benchmarks/edge_activity.py [--repeat 3] [--jobs 300] [SCHEDULER ...]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

from bench_core import CASES, ROOT, SCALE_SCHEDULERS

from geosim import GeoModel, load_scenario

#: ``bench_core.py``'s ``e100-KEY`` / ``e1000-KEY`` cases: scenario and settings.
SCENARIO = ROOT / "scenarios" / CASES["e100-fair"][0]
EDGE = CASES["e100-fair"][2]
COUNTS = ("steps", "copy-steps", "transfer-steps", "transfer-resource-steps")


def run(scheduler: str, clusters: int, jobs: int) -> tuple[float, dict[str, int]]:
    """One run: its wall time (build included) and its activity counts."""
    settings = {**EDGE, "topology.n_clusters": clusters}
    GeoModel(load_scenario(SCENARIO, {**settings, "workload.n_jobs": 1}),
             scheduler)                                            # modules loaded
    gc.collect()                                # its garbage: not the timed run's
    start = time.perf_counter()
    model = GeoModel(load_scenario(SCENARIO, {**settings, "workload.n_jobs": jobs}),
                     scheduler)
    counts = dict.fromkeys(COUNTS, 0)
    while model.running:
        model.step()
        engine = model.engine
        counts["steps"] += 1
        counts["copy-steps"] += engine.live.size
        flows = engine.flows
        if flows is not None:
            counts["transfer-steps"] += flows.idx.size
            counts["transfer-resource-steps"] += flows.res.size
    return time.perf_counter() - start, counts


def main() -> None:
    """Run each scheduler at both sizes and print its rows."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("schedulers", nargs="*", default=list(SCALE_SCHEDULERS.values()))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=300)
    args = parser.parse_args()
    print("| scheduler | clusters | wall s (min / median) | " + " | ".join(COUNTS)
          + " | s per M copy-steps | s per M transfer-resource-steps |")
    print("|---" * (5 + len(COUNTS)) + "|")
    for scheduler in args.schedulers:
        walls: dict[int, list[float]] = {100: [], 1000: []}
        counts: dict[int, dict[str, int]] = {}
        for _ in range(args.repeat):
            for clusters in walls:
                wall, counts[clusters] = run(scheduler, clusters, args.jobs)
                walls[clusters].append(wall)
        for clusters, times in walls.items():
            c, best = counts[clusters], min(times)
            print(f"| {scheduler} | {clusters} | {best:.2f} / {statistics.median(times):.2f} | "
                  + " | ".join(f"{c[k]:,}" for k in COUNTS)
                  + f" | {best / c['copy-steps'] * 1e6:.2f}"
                  f" | {best / max(c['transfer-resource-steps'], 1) * 1e6:.3f} |")
        ratio = [counts[1000][k] / max(counts[100][k], 1) for k in COUNTS]
        time_ratio = min(walls[1000]) / min(walls[100])
        print(f"| {scheduler} | 1 000 / 100 | {time_ratio:.2f}× / "
              f"{statistics.median(walls[1000]) / statistics.median(walls[100]):.2f}× | "
              + " | ".join(f"{r:.2f}×" for r in ratio) + " | | |")


if __name__ == "__main__":
    main()
