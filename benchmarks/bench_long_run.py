"""A long run stays flat: memory of one run of 10⁶ jobs against the tables it keeps.

002's world (100 machines with availability periods, Pareto jobs, λ = 2), event-timed,
SRPT+R, ``--jobs`` jobs (default 10⁶) in one process. The parent samples the child's
resident memory (``VmRSS``) every 0.2 s; the child reports, after the run, the bytes of
what a run must keep: the engine's tables (jobs, tasks, copies, inputs), the recorded
time series and the result tables built from them. Memory after warm-up (the first
sample once the run has started) should grow by about those tables and nothing more: a
leak or a per-event allocation would show as growth beyond them.

Usage::

    python benchmarks/bench_long_run.py [--jobs 1000000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import gc, json, sys, time
import numpy as np
import geosim
from geosim.model import GeoModel
jobs = int(sys.argv[1])
scenario = geosim.load_scenario("scenarios/redundancy-gamma.toml", {
    "workload.n_jobs": jobs, "workload.arrival_rate": 2.0, "run.timing": "event",
    "run.max_memory_gb": 20})
model = GeoModel(scenario, "srpt+r", 1)
build_result = model.result

def marked_result():                       # the simulation is over: tables built next
    print(json.dumps({"simulated": time.time()}), flush=True)
    return build_result()

model.result = marked_result
print("start", flush=True)
start = time.perf_counter()
result = model.run()
wall = time.perf_counter() - start
def nbytes(obj):
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if isinstance(obj, dict):
        return sum(nbytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(nbytes(v) for v in obj)
    return 0
engine = model.engine
kept = {
    "engine arrays": sum(nbytes(v) for v in vars(engine).values()),  # before the run too
    "engine tables": sum(nbytes(t.cols) for t in vars(engine).values() if hasattr(t, "cols")),
    "recorded samples": sum(nbytes(s) for s in model.cluster_records),
    "result tables": sum(int(getattr(result, t).memory_usage(deep=True).sum())
                         for t in ("jobs", "tasks", "copies", "clusters", "links")),
}
print(json.dumps({"wall": wall, "copies": int(len(result.copies)),
                  "mean": float(result.summary["mean_flowtime"]), **kept}), flush=True)
"""


def rss_mib(pid: int) -> float | None:
    """Resident memory of ``pid`` in MiB, None once it has ended."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    args = parser.parse_args()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(args.jobs)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "start"
    samples: list[tuple[float, float]] = []
    t0 = time.time()
    while proc.poll() is None:
        rss = rss_mib(proc.pid)
        if rss is not None:
            samples.append((time.time(), rss))
        time.sleep(0.2)
        if samples and len(samples) % 50 == 0:
            print(f"  {samples[-1][0] - t0:7.1f} s  {samples[-1][1]:8.1f} MiB", flush=True)
    lines = proc.stdout.read().strip().splitlines()
    simulated = json.loads(lines[0])["simulated"]
    report = json.loads(lines[-1])
    warm = samples[0][1]
    before_tables = max(r for t, r in samples if t <= simulated)
    peak = max(r for _, r in samples)
    mib = 2**20
    print(f"{args.jobs} jobs, {report['copies']} copies, mean flowtime "
          f"{report['mean']:.2f} s, run {report['wall']:.1f} s")
    for key in ("engine arrays", "engine tables", "recorded samples", "result tables"):
        print(f"  {key:<18} {report[key] / mib:8.0f} MiB")
    # While the simulation goes on, only the engine's growing tables (copies, inputs) and
    # the samples may grow; the engine's per-job and per-task arrays exist before.
    during = before_tables - warm
    kept = (report["engine tables"] + report["recorded samples"]) / mib
    print(f"RSS after warm-up {warm:.0f} MiB; at the end of the simulation "
          f"{before_tables:.0f} MiB (+{during:.0f} MiB, against {kept:.0f} MiB of growing "
          f"tables and samples: {during - kept:+.0f} MiB beyond them); peak with the result "
          f"tables {peak:.0f} MiB")


if __name__ == "__main__":
    main()
