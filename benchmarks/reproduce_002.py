"""Reproduce the numerical studies of 002 §6 on ``scenarios/redundancy-gamma.toml``.

The paper simulates 100 machines for 100 000 time units, so each arrival rate λ runs
``λ × 100 000`` jobs under event timing, 002's model exactly (one replication, as the
paper reports; the confidence intervals are batch means). Runs are saved under
``results/reproduce-002/`` and an interrupted run resumes where it stopped. Prints the
tables of ``docs/results.md`` as Markdown.

    python benchmarks/reproduce_002.py [--horizon 100000] [--jobs-parallel 2] [--seed 1]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
from summary_tables import markdown

import geosim

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "redundancy-gamma.toml"

#: (experiment, λ, schedulers): Fig. 5/6 (redundancy vs none at λ = 1), Fig. 7 (λ sweep),
#: Fig. 8 (β at λ = 2.5), and the two readings of "machines chosen at random". The
#: no-redundancy twins are 002's: one copy per job, machines re-drawn at every decision.
TWINS = {"srpt": "srpt+r[max_copies=1,reassign=random]",
         "fair": "fair+r[max_copies=1,reassign=random]",
         "laps0.2": "laps[beta=0.2,reassign=random]", "laps0.8": "laps[beta=0.8,reassign=random]"}
EXPERIMENTS = [
    ("benefit", 1.0, [TWINS["srpt"], "srpt+r", TWINS["laps0.2"], "laps+r[beta=0.2]",
                      TWINS["fair"], "fair+r", TWINS["laps0.8"], "laps+r[beta=0.8]",
                      "srpt+r[reassign=random]"]),
    ("lambda", 1.5, ["srpt+r", "fair+r", "laps+r[beta=0.8]"]),
    ("lambda", 2.0, ["srpt+r", "fair+r", "laps+r[beta=0.8]"]),
    ("lambda", 2.5, ["srpt+r", "fair+r", "laps+r[beta=0.2]", "laps+r[beta=0.4]",
                     "laps+r[beta=0.6]", "laps+r[beta=0.8]"]),
]
#: Time units simulated at λ = 2.5 (the paper: 100 000). Near saturation LAPS+R moves up
#: to M copies to every new arrival: about 160 copies per job, 16 GB of copies table for
#: the paper's length, so that λ runs 100 000 jobs.
HORIZON_2_5 = 40_000.0


def run_all(horizon: float, jobs_parallel: int, seed: int, out: Path) -> pd.DataFrame:
    rows = []
    for _, lam, schedulers in EXPERIMENTS:
        # 002's model decides at arrivals and departures: event timing (exact).
        length = min(horizon, HORIZON_2_5) if lam == 2.5 else horizon
        overrides = {"workload.arrival_rate": lam, "workload.n_jobs": int(lam * length),
                     "run.timing": "event"}
        start = time.perf_counter()
        cmp = geosim.compare(SCENARIO, schedulers, seeds=[seed], jobs_parallel=jobs_parallel,
                             out=out / f"lambda-{lam:g}", within=(40, 200),
                             overrides=overrides, progress=True)
        print(f"λ = {lam:g}: {len(schedulers)} runs in {time.perf_counter() - start:.0f} s",
              flush=True)
        summary = cmp.summary.copy()
        summary.insert(0, "lambda", lam)
        rows.append(summary)
    return pd.concat(rows, ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=float, default=100_000.0)
    parser.add_argument("--jobs-parallel", type=int, default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "reproduce-002")
    args = parser.parse_args()
    table = run_all(args.horizon, args.jobs_parallel, args.seed, args.out)
    table.to_csv(args.out / "tables.csv", index=False)
    print(markdown(table, ["lambda", "label", "mean_flowtime", "ci95", "p50_flowtime",
                           "p99_flowtime", "within_40", "within_200", "copies_per_task"]))


if __name__ == "__main__":
    main()
