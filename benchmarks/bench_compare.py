"""Wall time of ``geosim compare``: 4 schedulers × 10 replications of redundancy-gamma.

Prints JSON: the comparison's wall time, the sum of its runs' own wall times, and their
ratio (the number of cores kept busy on average). Usage:

    python benchmarks/bench_compare.py [--jobs-parallel K] [--reps N]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import geosim

ROOT = Path(__file__).resolve().parents[1]
SCHEDULERS = ["srpt", "srpt+r", "fair+r", "laps+r[beta=0.8]"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs-parallel", type=int, default=os.cpu_count())
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        cmp = geosim.compare(ROOT / "scenarios" / "redundancy-gamma.toml", SCHEDULERS,
                             reps=args.reps, jobs_parallel=args.jobs_parallel,
                             out=Path(tmp) / "cmp")
        wall = time.perf_counter() - start
    busy = float(cmp.runs["wall_seconds"].sum())
    print(json.dumps({
        "schedulers": SCHEDULERS, "reps": args.reps, "jobs_parallel": args.jobs_parallel,
        "cpus": os.cpu_count(), "runs": len(cmp.runs), "wall_seconds": round(wall, 1),
        "sum_of_run_seconds": round(busy, 1), "cores_busy": round(busy / wall, 2),
        "mean_flowtime": dict(zip(cmp.summary["label"],
                                  cmp.summary["mean_flowtime"].round(2), strict=True)),
    }))


if __name__ == "__main__":
    main()
