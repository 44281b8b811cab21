"""PingAn at heavy load: admitted fraction, rate floor and backfill, separated.

In 003, ε sets both the fraction of jobs PingAn admits and the rate floor 1/(1+ε) under
which a copy is not made; ``backfill`` (an extension) gives idle slots to the jobs not
admitted. This script runs the 2 × 2 × 2 factorial on ``scenarios/pingan-heavy.toml`` (or
``--scenario``, e.g. ``scenarios/pingan-calibrated-heavy.toml``):
ε ∈ {0.2 (003's heavy-load value), 0.6}, the floor of ε = 0.2 or of ε = 0.6 (``floor``
unset when it is ε's own), backfill off or on, with Flutter+Mantri as the reference, all
on the same worlds and jobs (common random numbers). Printed: each variant's mean,
p99 and share within 800 s with its paired change against 003's setting and against
Flutter+Mantri, then each factor's paired effect at every setting of the other two.

Runs are saved under ``--out`` (default ``results/pingan-heavy-causes/``) and an
interrupted run resumes.

    python benchmarks/pingan_heavy_causes.py [--scenario FILE] [--jobs 2000] [--seeds 5]
        [--jobs-parallel K] [--dask ADDRESS] [--out DIR]
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

from summary_tables import interval, saved_jobs

import geosim
from geosim.experiment import paired_difference

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "pingan-heavy.toml"
REFERENCE = "flutter+mantri"
EPSILONS = (0.2, 0.6)
#: The floor of each ε, 1/(1+ε), as a value of ``floor``.
FLOORS = {eps: 1.0 / (1.0 + eps) for eps in EPSILONS}


def spec(eps: float, floor_of: float, backfill: bool) -> str:
    """PingAn's spec: ε, the floor of ``floor_of`` (unset when it is ε's own), backfill."""
    params = {"backfill": "true" if backfill else "false", "epsilon": repr(eps)}
    if floor_of != eps:
        params["floor"] = repr(FLOORS[floor_of])
    return "pingan[" + ",".join(f"{k}={v}" for k, v in sorted(params.items())) + "]"


def name(eps: float, floor_of: float, backfill: bool) -> str:
    """A short name: ε, whose floor, backfill."""
    return f"ε {eps}, floor of ε {floor_of}, backfill {'on' if backfill else 'off'}"


def change(out: Path, seeds: list[int], label: str, reference: str) -> str:
    """The paired change of the mean flowtime and its verdict word."""
    return interval(*paired_difference(saved_jobs(out, label, seeds),
                                       saved_jobs(out, reference, seeds)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", type=Path, default=SCENARIO, help="heavy-load scenario")
    parser.add_argument("--jobs", type=int, default=2000, help="jobs per run (003: 2000)")
    parser.add_argument("--seeds", type=int, default=5, help="replications (seeds 1..N)")
    parser.add_argument("--jobs-parallel", type=int, default=None)
    parser.add_argument("--dask", default=None, help="address of a Dask scheduler")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "pingan-heavy-causes")
    args = parser.parse_args()
    seeds = list(range(1, args.seeds + 1))
    grid = list(itertools.product(EPSILONS, EPSILONS, (False, True)))
    specs = {cell: spec(*cell) for cell in grid}
    start = time.perf_counter()
    cmp = geosim.compare(args.scenario, [*specs.values(), REFERENCE], seeds=seeds,
                         jobs_parallel=args.jobs_parallel, dask=args.dask, within=(800,),
                         out=args.out, overrides={"workload.n_jobs": args.jobs}, progress=True)
    wall = time.perf_counter() - start
    summary = cmp.summary.set_index("label")
    paper = specs[(0.2, 0.2, False)]

    print(f"\nPingAn at heavy load on {args.scenario.name}: {args.jobs} jobs x {len(seeds)} "
          f"seeds, {wall:.0f} s wall\n")
    print("| variant | mean (s) | p99 (s) | ≤800 s | vs 003's setting (paired) "
          "| vs Flutter+Mantri (paired) |")
    print("|---|---|---|---|---|---|")
    for cell in grid:
        row = summary.loc[specs[cell]]
        vs_paper = "" if specs[cell] == paper else change(cmp.out, seeds, specs[cell], paper)
        print(f"| {name(*cell)} | {row['mean_flowtime']:.1f} | {row['p99_flowtime']:.0f} | "
              f"{100 * row['within_800']:.1f}% | {vs_paper} | "
              f"{change(cmp.out, seeds, specs[cell], REFERENCE)} |")
    row = summary.loc[REFERENCE]
    print(f"| Flutter+Mantri | {row['mean_flowtime']:.1f} | {row['p99_flowtime']:.0f} | "
          f"{100 * row['within_800']:.1f}% | | |")

    print("\nEach factor's paired effect (second level against first), the others held:\n")
    print("| factor | held | effect |")
    print("|---|---|---|")
    factors = (("ε 0.2 → 0.6", 0), ("floor of ε 0.2 → of ε 0.6", 1), ("backfill off → on", 2))
    levels = ((0.2, 0.6), (0.2, 0.6), (False, True))
    for label, axis in factors:
        for cell in grid:
            if cell[axis] != levels[axis][0]:
                continue
            other = list(cell)
            other[axis] = levels[axis][1]
            held = ", ".join(part for i, part in enumerate(name(*cell).split(", "))
                             if i != axis)
            print(f"| {label} | {held} | "
                  f"{change(cmp.out, seeds, specs[tuple(other)], specs[cell])} |")


if __name__ == "__main__":
    main()
