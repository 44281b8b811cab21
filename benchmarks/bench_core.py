"""Core performance figures, printed as JSON.

(a) the redundancy paper's world (002 §6): 100 machines, 20 000 Pareto jobs, SRPT, λ = 2;
(b) ``pingan-medium`` (003 §6.1, 100 clusters, 2000 Montage workflows) with Fair;
(c) the 002 world as in (a) with SRPT+R (002 Alg. 1), which checkpoints and reallocates
    at almost every slot;
(d) ``pingan-medium`` with PingAn (003 Alg. 1, ε = 0.6), with the share of time spent in
    the scheduler;
(e) ``cloning-google`` (000 §VI: 12 000 machines, 6064 MapReduce jobs, about 160 000
    tasks) with SRPTMS+C (ε = 0.6, r = 3), the whole §VI run.

Each case runs in a fresh process so its peak memory is its own. Usage:

    python benchmarks/bench_core.py [a] [b] [c] [d] [e]   # default: all five
"""

from __future__ import annotations

import json
import multiprocessing as mp
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "a": ("redundancy-gamma.toml", "srpt", {"workload.arrival_rate": 2.0,
                                            "workload.n_jobs": 20_000}),
    "b": ("pingan-medium.toml", "fair", {}),
    "c": ("redundancy-gamma.toml", "srpt+r", {"workload.arrival_rate": 2.0,
                                              "workload.n_jobs": 20_000}),
    "d": ("pingan-medium.toml", "pingan[epsilon=0.6]", {}),
    "e": ("cloning-google.toml", "srptms+c", {}),
}


#: Cases run without arguments.
DEFAULT = ["a", "b", "c", "d", "e"]


def _run(case: str, queue: mp.Queue) -> None:
    import geosim

    scenario, scheduler, overrides = CASES[case]
    start = time.perf_counter()
    model = geosim.GeoModel(geosim.load_scenario(ROOT / "scenarios" / scenario, overrides),
                            scheduler)
    setup = time.perf_counter() - start
    result = model.run()
    wall = time.perf_counter() - start
    s = result.summary
    queue.put({
        "case": case, "scenario": scenario, "scheduler": scheduler, "overrides": overrides,
        "wall_seconds": round(wall, 2), "setup_seconds": round(setup, 2),
        "scheduler_share": round(s["scheduler_seconds"] / wall, 3),
        "steps": s["steps"], "jobs": s["jobs_done"], "tasks": s["tasks"],
        "copies": s["copies_launched"],
        "tasks_per_wall_second": round(s["tasks"] / wall, 1),
        "simulated_seconds_per_wall_second": round(s["simulated_seconds"] / wall, 1),
        "mean_flowtime": round(s["mean_flowtime"], 3),
        "peak_memory_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    })


def main(cases: list[str]) -> None:
    ctx = mp.get_context("spawn")
    for case in cases or DEFAULT:
        queue = ctx.Queue()
        proc = ctx.Process(target=_run, args=(case, queue))
        proc.start()
        figures = queue.get()
        proc.join()
        print(json.dumps(figures), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
