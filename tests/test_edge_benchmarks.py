"""The edge benchmarks' interventions and counts do what their tables say.

``benchmarks/edge_hubs.py`` widens chosen links of a built world; its verdict (the hub
links are the bottleneck) rests on the widening reaching the engine's capacities for the
whole run and touching nothing else. ``benchmarks/edge_activity.py`` counts a run's
activity step by step.
"""

from __future__ import annotations

import numpy as np
from conftest import benchmark_module

from geosim import GeoModel, load_scenario


def test_widened_links_are_wider_in_the_engine_and_stay_so_after_redraws(monkeypatch):
    hubs = benchmark_module("edge_hubs", monkeypatch)
    model = hubs._model(30, 4, seed=3)
    world = model.world
    before = world.resource_capacity().copy()
    mean = world.link_bw.mean.copy()
    links = np.array([0, 5, 7])
    hubs._widen(model, links)
    after = world.resource_capacity()
    n = world.n_links
    wide = np.zeros(2 * n, dtype=bool)
    wide[2 * links] = wide[2 * links + 1] = True
    assert np.allclose(after[:2 * n][wide], hubs.FACTOR * before[:2 * n][wide])
    assert np.array_equal(after[:2 * n][~wide], before[:2 * n][~wide])
    assert np.array_equal(after[2 * n:], before[2 * n:])          # gates untouched
    period = world.link_bw.period
    assert period > 0
    world.link_bw.advance(5 * period)                            # redrawn: still wide
    assert np.allclose(world.link_bw.mean[links], hubs.FACTOR * mean[links])
    others = np.setdiff1d(np.arange(n), links)
    assert np.array_equal(world.link_bw.mean[others], mean[others])


def test_activity_counts_follow_the_engine_step_by_step(monkeypatch):
    activity = benchmark_module("edge_activity", monkeypatch)
    wall, counts = activity.run("fifo", 30, 3)
    assert wall > 0
    scenario = load_scenario(activity.SCENARIO, {**activity.EDGE, "topology.n_clusters": 30,
                                                 "workload.n_jobs": 3})
    model = GeoModel(scenario, "fifo")
    steps = copies = 0
    while model.running:
        model.step()
        steps += 1
        copies += model.engine.live.size
    assert counts["steps"] == steps == model.result().summary["steps"]
    assert counts["copy-steps"] == copies > 0
    assert counts["transfer-resource-steps"] >= 3 * counts["transfer-steps"] > 0


def test_subspan_benchmark_reads_the_loops_arguments_by_name(monkeypatch):
    # bench_subspans.py captures the compiled loop's arguments and reads them by name: a
    # parameter added to the loop must not leave it unpacking the wrong values.
    bench = benchmark_module("bench_subspans", monkeypatch)
    figures, captured = bench.run_and_capture(8, "fair", 3, {})
    assert figures["loop calls"] >= 3 and figures["sub-spans"] >= figures["loop calls"] - 1
    args = bench.loop_arguments(captured)
    assert set(bench.KERNEL_INPUTS) <= set(args)
    assert args["live"].size and args["avail"][2].size > 0
