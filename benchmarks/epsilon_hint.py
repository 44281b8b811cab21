"""003's hint on ε (§6.4, Fig. 7) with paired intervals: the best ε per arrival rate.

PingAn admits the first ε fraction of jobs (by unprocessed data) and makes no copy
slower than 1/(1 + ε) of a task's best rate. 003 reports the best ε for the mean
flowtime at λ = 0.02, 0.05, 0.07, 0.11, 0.15 as 0.8, 0.6, 0.6, 0.4, 0.2. This script runs
PingAn at every ε of ``--epsilons`` on the same worlds and jobs (common random numbers)
at every λ of ``--rates``, on ``--scenario`` with only the arrival rate and the number of
jobs overridden, and prints per λ each ε's mean flowtime, the ε with the lowest mean,
its paired change against every other ε, and the ε it ties with (a 95% interval that
covers 0). Runs are saved under ``--out`` and an interrupted run resumes.

    python benchmarks/epsilon_hint.py [--scenario FILE] [--jobs 600] [--seeds 3]
        [--rates 0.02,0.05,...] [--epsilons 0.2,0.4,...] [--jobs-parallel K]
        [--dask ADDRESS] [--out DIR]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from summary_tables import interval, run_script, saved_jobs

import geosim
from geosim.errors import GeosimError
from geosim.experiment import paired_difference

ROOT = Path(__file__).resolve().parents[1]
#: 003's best ε for the mean flowtime at each λ (§6.4).
PAPER = {0.02: 0.8, 0.05: 0.6, 0.07: 0.6, 0.11: 0.4, 0.15: 0.2}


def numbers(text: str, option: str) -> list[float]:
    """A comma-separated list of numbers, or a one-line error naming the option."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise GeosimError(f"expected numbers separated by commas, got {text!r}",
                          source=option) from None
    if not values or any(v <= 0 for v in values):
        raise GeosimError(f"expected positive numbers, got {text!r}", source=option)
    return values


def spec(eps: float) -> str:
    """PingAn at ε."""
    return f"pingan[epsilon={eps!r}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", type=Path, default=ROOT / "scenarios" / "pingan-medium.toml")
    parser.add_argument("--jobs", type=int, default=600, help="jobs per run")
    parser.add_argument("--seeds", type=int, default=3, help="replications (seeds 1..N)")
    parser.add_argument("--rates", default="0.02,0.05,0.07,0.11,0.15")
    parser.add_argument("--epsilons", default="0.2,0.4,0.6,0.8")
    parser.add_argument("--jobs-parallel", type=int, default=None)
    parser.add_argument("--dask", default=None, help="address of a Dask scheduler")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "epsilon-hint")
    args = parser.parse_args()
    rates = numbers(args.rates, "--rates")
    epsilons = numbers(args.epsilons, "--epsilons")
    seeds = list(range(1, args.seeds + 1))
    specs = [spec(e) for e in epsilons]
    start = time.perf_counter()
    rows = []
    for lam in rates:
        cmp = geosim.compare(args.scenario, specs, seeds=seeds, jobs_parallel=args.jobs_parallel,
                             dask=args.dask, out=args.out / f"lambda-{lam:g}", progress=True,
                             overrides={"workload.arrival_rate": lam, "workload.n_jobs": args.jobs})
        means = cmp.summary.set_index("label")["mean_flowtime"]
        jobs = {e: saved_jobs(cmp.out, spec(e), seeds) for e in epsilons}
        best = min(epsilons, key=lambda e: means[spec(e)])
        against = {e: paired_difference(jobs[best], jobs[e]) for e in epsilons if e != best}
        ties = [e for e, (diff, half) in against.items() if abs(diff) <= half]
        rows.append((lam, means, best, against, ties))
    wall = time.perf_counter() - start

    print(f"\nε hint on {args.scenario.name}: {args.jobs} jobs x {len(seeds)} seeds, "
          f"{len(rates) * len(epsilons) * len(seeds)} runs, {wall:.0f} s wall\n")
    head = " | ".join(f"ε = {e:g}" for e in epsilons)
    print(f"| λ | {head} | lowest mean | it against the others (paired) | tied with it "
          "| 003's best |")
    print("|---|" + "---|" * len(epsilons) + "---|---|---|---|")
    for lam, means, best, against, ties in rows:
        cells = " | ".join(f"**{means[spec(e)]:.1f}**" if e == best else f"{means[spec(e)]:.1f}"
                           for e in epsilons)
        versus = "; ".join(f"vs {e:g}: {interval(*against[e])}" for e in against)
        tied = ", ".join(f"{e:g}" for e in ties) or "none"
        paper = f"{PAPER[lam]:g}" if lam in PAPER else ""
        print(f"| {lam:g} | {cells} | {best:g} | {versus} | {tied} | {paper} |")


if __name__ == "__main__":
    run_script(main, "epsilon_hint")
