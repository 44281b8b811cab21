"""One sample of the time series: geosim's recorder against Mesa's DataCollector.

Both sample the clusters of full-size ``pingan-medium`` (100 clusters, 12 356 slots) at
the same boundary, side by side in one process: the recorder with the model's reporters
(eight per cluster, five per link, vectorised over :mod:`geosim.state`), Mesa's
collector with the same eight quantities as per-agent attributes of the
:class:`~geosim.agents.ClusterAgent`s (its agent-type reporters). Prints the minimum and
median of several rounds, in µs per sample. Usage::

    python benchmarks/bench_recorder.py [--rounds 7]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import mesa

import geosim
from geosim.agents import ClusterAgent

ROOT = Path(__file__).resolve().parents[1]
ATTRIBUTES = ("reachable", "n_slots", "available_slots", "busy", "copies", "queue",
              "egress_rate", "ingress_rate")


def _per_sample(collect, model, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        collect(model)
    return (time.perf_counter() - start) / n * 1e6


def main(rounds: int) -> None:
    scenario = geosim.load_scenario(ROOT / "scenarios" / "pingan-medium.toml",
                                    {"workload.n_jobs": 100})
    model = geosim.GeoModel(scenario, "fair")
    while model.view.time < 1500:
        model.step()
    mesa_dc = mesa.DataCollector(agenttype_reporters={
        ClusterAgent: {a: a for a in ATTRIBUTES}})
    ours, theirs = [], []
    for _ in range(rounds):
        ours.append(_per_sample(model.recorder.collect, model, 50))
        theirs.append(_per_sample(mesa_dc.collect, model, 5))
    for name, t in (("geosim Recorder (clusters and links)", ours),
                    ("mesa DataCollector (clusters only)", theirs)):
        print(f"{name:40s} min {min(t):9.0f} µs   median {statistics.median(t):9.0f} µs")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(int(args[args.index("--rounds") + 1]) if "--rounds" in args else 7)
