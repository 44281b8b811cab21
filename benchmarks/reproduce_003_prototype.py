"""Reproduce PingAn's prototype evaluation (003 §5, Fig. 2-3) on ``prototype-003``.

PingAn (ε = 0.6), Spark (fair sharing, delay scheduling) and speculative Spark run on the
same worlds and jobs (common random numbers), one replication per seed. Printed: the mean
flowtime per scheduler with its 95% interval over the seeds, PingAn's and Spark's paired
change of the mean against speculative Spark (job by job, 95% interval by batch means),
PingAn's paired change against Spark, and the share of jobs done within 200 s, each beside
003's published figure.

Runs are saved under ``results/reproduce-003-prototype/`` and an interrupted run resumes.
About 10 minutes on 2 cores with the default 10 seeds.

    python benchmarks/reproduce_003_prototype.py [--seeds 10] [--jobs 88] [--sharing equal|maxmin]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from summary_tables import add_sharing_option, saved_jobs, sharing_override

import geosim
from geosim.experiment import paired_difference

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "prototype-003.toml"
PINGAN, SPARK, SPECULATIVE = "pingan[epsilon=0.6]", "spark", "spark+speculation"
#: 003 §5: share of jobs within 200 s (Fig. 3a), and PingAn's cut of the mean flowtime
#: against speculative Spark (Fig. 2). The paper prints no mean flowtimes.
PAPER_WITHIN_200 = {PINGAN: 0.724, SPECULATIVE: 0.656, SPARK: 0.459}
PAPER_CUT_VS_SPECULATIVE = -0.396


def pct(x: float) -> str:
    return f"{100 * x:+.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="replications (seeds 1..N)")
    parser.add_argument("--jobs", type=int, default=88, help="jobs per run (003: 88)")
    parser.add_argument("--jobs-parallel", type=int, default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "reproduce-003-prototype")
    add_sharing_option(parser)
    args = parser.parse_args()
    overrides = {"workload.n_jobs": args.jobs, **sharing_override(args.sharing)}
    seeds = list(range(1, args.seeds + 1))
    start = time.perf_counter()
    cmp = geosim.compare(SCENARIO, [SPARK, SPECULATIVE, PINGAN], seeds=seeds,
                         jobs_parallel=args.jobs_parallel, baseline=SPECULATIVE,
                         within=(200,), out=args.out,
                         overrides=overrides, progress=True,
                         restart=True)
    wall = time.perf_counter() - start
    summary = cmp.summary.set_index("label")

    print(f"\n003 §5 prototype: {args.jobs} jobs x {len(seeds)} seeds, {wall:.0f} s wall\n")
    print("| scheduler | mean flowtime (s) | ±95% | within 200 s | 003: within 200 s |")
    print("|---|---|---|---|---|")
    for label in (SPARK, SPECULATIVE, PINGAN):
        row = summary.loc[label]
        print(f"| {label} | {row['mean_flowtime']:.1f} | {row['ci95']:.1f} | "
              f"{100 * row['within_200']:.1f}% | {100 * PAPER_WITHIN_200[label]:.1f}% |")

    print("\nPaired change of the mean flowtime (job by job, 95% interval by batch means):\n")
    print("| change | geosim | 95% interval | 003 |")
    print("|---|---|---|---|")
    pairs = [(PINGAN, SPECULATIVE, pct(PAPER_CUT_VS_SPECULATIVE)),
             (SPARK, SPECULATIVE, "not printed (fewer jobs within 200 s)"),
             (PINGAN, SPARK, "not printed (abstract: up to -40%)")]
    for label, reference, paper in pairs:
        diff, half = paired_difference(saved_jobs(cmp.out, label, seeds),
                                       saved_jobs(cmp.out, reference, seeds))
        print(f"| {label} vs {reference} | {pct(diff)} | [{pct(diff - half)}, "
              f"{pct(diff + half)}] | {paper} |")
        print(f"  {geosim.experiment.verdict(label, reference, diff, half)}")


if __name__ == "__main__":
    main()
