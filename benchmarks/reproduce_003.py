"""Reproduce PingAn's evaluation (003 §6.2–6.4) on the ``pingan-*`` scenarios.

Three studies, each on the same worlds and workloads for every scheduler (common random
numbers):

- ``load``: PingAn (ε 0.8 / 0.6 / 0.2, as §6.2 sets it) against FIFO, Fair and SRPT with
  locality placement, and PingAn with backfill, at light, medium and heavy load;
- ``ablation``: the insurance principles (Eff-Reli, Reli-Eff, Eff-Eff, Reli-Reli) and the
  allocations (EFA, JGA) at ε = 0.6, λ = 0.07 (§6.3);
- ``epsilon``: ε ∈ {0.2, 0.4, 0.6, 0.8} at λ ∈ {0.02, 0.05, 0.07, 0.11, 0.15} (§6.4).

Runs are saved under ``results/reproduce-003/`` and an interrupted study resumes. Prints
the tables of ``docs/results.md`` as Markdown.

    python benchmarks/reproduce_003.py [--jobs 2000] [--study load ablation epsilon]
        [--sharing equal|maxmin]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
from summary_tables import add_sharing_option, markdown, sharing_override

import geosim

ROOT = Path(__file__).resolve().parents[1]
LOADS = {"light": (0.02, 0.8), "medium": (0.07, 0.6), "heavy": (0.15, 0.2)}
BASELINES = ["fifo", "fair", "srpt"]


def studies(which: list[str]) -> list[tuple[str, str, float, list[str]]]:
    """(study, scenario, λ, scheduler specs) of every comparison to run."""
    out = []
    if "load" in which:
        for load, (lam, eps) in LOADS.items():
            out.append(("load", f"pingan-{load}", lam, BASELINES + [
                f"pingan[epsilon={eps}]", f"pingan[epsilon={eps},backfill=true]"]))
    if "ablation" in which:
        out.append(("ablation", "pingan-medium", 0.07, [
            f"pingan[epsilon=0.6,principle={p}]"
            for p in ("eff-reli", "reli-eff", "eff-eff", "reli-reli")]
            + ["pingan[epsilon=0.6,allocation=jga]"]))
    if "epsilon" in which:
        for lam in (0.02, 0.05, 0.07, 0.11, 0.15):
            out.append(("epsilon", "pingan-medium", lam,
                        [f"pingan[epsilon={e}]" for e in (0.2, 0.4, 0.6, 0.8)]))
    return out


def run_all(which: list[str], n_jobs: int, jobs_parallel: int | None, seed: int,
            out: Path, sharing: str | None = None) -> pd.DataFrame:
    rows = []
    for study, scenario, lam, specs in studies(which):
        overrides = {"workload.arrival_rate": lam, "workload.n_jobs": n_jobs,
                     **sharing_override(sharing)}
        start = time.perf_counter()
        cmp = geosim.compare(ROOT / "scenarios" / f"{scenario}.toml", specs, seeds=[seed],
                             jobs_parallel=jobs_parallel, within=(100, 200, 800),
                             out=out / f"{study}-{lam:g}", overrides=overrides,
                             progress=True)
        print(f"{study} λ = {lam:g}: {len(specs)} runs in {time.perf_counter() - start:.0f} s",
              flush=True)
        summary = cmp.summary.copy()
        summary.insert(0, "lambda", lam)
        summary.insert(0, "study", study)
        rows.append(summary)
    return pd.concat(rows, ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2000, help="jobs per run (paper: 2000)")
    parser.add_argument("--study", nargs="+", default=["load", "ablation", "epsilon"],
                        choices=["load", "ablation", "epsilon"])
    parser.add_argument("--jobs-parallel", type=int, default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "reproduce-003")
    add_sharing_option(parser)
    args = parser.parse_args()
    table = run_all(args.study, args.jobs, args.jobs_parallel, args.seed, args.out,
                    args.sharing)
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / f"tables-{'-'.join(args.study)}.csv", index=False)
    print(markdown(table, ["study", "lambda", "label", "mean_flowtime", "p50_flowtime",
                           "p99_flowtime", "within_100", "within_200", "within_800",
                           "copies_per_task"]))


if __name__ == "__main__":
    main()
