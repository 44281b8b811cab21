"""World size against route memory: build time and peak memory of large topologies.

``world:N`` builds the world of ``pingan-medium`` on an N-cluster Barabási–Albert
topology (the topology is drawn first, outside the clock; the memory guard is bypassed,
so a checkout that would refuse the world can still be measured where the machine holds
it); ``trees:N`` times the shortest-path trees of 200 sources spread over that world's
clusters (the world built outside the clock; its routing by link length, a Dijkstra tree
per source); ``fair:N`` runs 300 jobs of the same scenario with Fair, seed 1. Each run is a fresh
process (its peak memory is its own), and each case runs ``--repeat`` times: the table
gives the minimum and median wall time and the largest peak memory. With ``--against
DIR`` each run is followed by the same run of the geosim in checkout ``DIR``. Usage:

    python benchmarks/bench_routes.py [--repeat 3] [--against DIR] world:100 fair:1000 ...
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "pingan-medium.toml"
DEFAULT = ["world:100", "world:1000", "world:3000", "world:10000", "trees:1000",
           "trees:10000", "fair:100", "fair:1000"]
#: Sources whose trees ``trees:N`` times.
TREE_SOURCES = 200


def _overrides(n: int) -> dict:
    return {"topology.generator": "barabasi_albert", "topology.n_clusters": n}


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _one(case: str) -> dict:
    """Run ``case`` in this process and return its figures."""
    kind, n = case.split(":")
    n = int(n)
    import geosim
    from geosim.scenario import load_scenario
    from geosim.world import build_graph, build_world, spawn_streams

    if kind == "world":
        scenario = load_scenario(SCENARIO, _overrides(n))
        streams = spawn_streams(scenario["run"]["seed"])
        graph = build_graph(scenario, streams["topology"])
        before = _peak_mib()
        start = time.perf_counter()
        world = build_world(scenario, streams, graph)
        wall = time.perf_counter() - start
        return {"case": case, "clusters": world.n_clusters, "wall_seconds": round(wall, 3),
                "peak_mib_before": round(before, 1), "peak_mib": round(_peak_mib(), 1)}
    if kind == "trees":
        import numpy as np
        world = build_world(scenario := load_scenario(SCENARIO, _overrides(n)),
                            streams := spawn_streams(scenario["run"]["seed"]),
                            build_graph(scenario, streams["topology"]))
        sources = np.linspace(0, n - 1, TREE_SOURCES).astype(np.int64)
        world.routes.hops(sources[:1], 0)                   # the kernels loaded
        start = time.perf_counter()
        for s in sources[1:]:                               # one tree per call, as first read
            world.routes.hops(s, 0)
        wall = time.perf_counter() - start
        return {"case": case, "clusters": n, "wall_seconds": round(wall, 3),
                "trees": TREE_SOURCES - 1, "peak_mib": round(_peak_mib(), 1)}
    geosim.run(SCENARIO, scheduler="fair", seed=1,      # load every module and kernel
               overrides={**_overrides(20), "workload.n_jobs": 2})
    start = time.perf_counter()
    result = geosim.run(SCENARIO, scheduler="fair", seed=1,
                        overrides={**_overrides(n), "workload.n_jobs": 300})
    wall = time.perf_counter() - start
    return {"case": case, "clusters": n, "wall_seconds": round(wall, 3),
            "mean_flowtime": round(float(result.summary["mean_flowtime"]), 6),
            "peak_mib": round(_peak_mib(), 1)}


def _run_in(checkout: Path, case: str) -> dict:
    """The figures of ``case`` run by the geosim of ``checkout`` (a fresh process)."""
    env = {**os.environ, "PYTHONPATH": str(checkout.resolve())}
    proc = subprocess.run([sys.executable, __file__, "--one", case], env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return {"case": case, "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.splitlines()[-1])


def _option(argv: list[str], name: str, default: str | None) -> tuple[str | None, list[str]]:
    if name not in argv:
        return default, argv
    at = argv.index(name)
    return argv[at + 1], argv[:at] + argv[at + 2:]


def _cell(runs: list[dict]) -> str:
    good = [r for r in runs if "error" not in r]
    if not good:
        return f"{'failed: ' + runs[0]['error'][:40]:>36}"
    walls = [r["wall_seconds"] for r in good]
    return (f"{min(walls):>10.3f}{statistics.median(walls):>10.3f}"
            f"{max(r['peak_mib'] for r in good):>10.0f}      ")


def main(argv: list[str]) -> None:
    one, argv = _option(argv, "--one", None)
    if one is not None:
        print(json.dumps(_one(one)))
        return
    repeat, argv = _option(argv, "--repeat", "3")
    against, argv = _option(argv, "--against", None)
    rows = []
    for case in argv or DEFAULT:
        ours, theirs = [], []
        for _ in range(int(repeat)):
            ours.append(_run_in(ROOT, case))
            print(json.dumps(ours[-1]), flush=True)
            if against:
                theirs.append(_run_in(Path(against), case))
                print(json.dumps({"against": against, **theirs[-1]}), flush=True)
        rows.append((case, ours, theirs))
    head = f"{'min s':>10}{'median s':>10}{'peak MiB':>10}      "
    print(f"\n{'case':<14}{head}" + (f"against: {head}" if against else ""))
    for case, ours, theirs in rows:
        print(f"{case:<14}{_cell(ours)}" + (f"         {_cell(theirs)}" if theirs else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
