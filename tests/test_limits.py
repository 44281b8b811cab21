"""Size, pace and budget limits: runs the machine cannot hold or that cannot finish."""

from __future__ import annotations

import re

import networkx as nx
import numpy as np
import pytest

import geosim.guards
from geosim import GeosimError, footprint, routes
from geosim.cli import main
from geosim.engine import COPY_SPEC, Table
from geosim.guards import Budget
from geosim.inputs import world_and_workload
from geosim.model import GeoModel
from geosim.scenario import load_scenario
from geosim.schedulers import Scheduler
from geosim.topology import write_topology
from geosim.world import build_graph, spawn_streams

MEDIUM = "scenarios/pingan-medium.toml"
QUICK = "scenarios/quickstart.toml"


def _estimate(path, overrides=None):
    scenario = load_scenario(path, overrides or {})
    graph = build_graph(scenario, spawn_streams(scenario["run"]["seed"])["topology"])
    return scenario, footprint.estimate(scenario, graph)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("tiers.medium.slots", 2**63 - 1, "must be <= 1000000"),
    ("topology.n_clusters", 100_001, "must be <= 10000"),
    ("workload.n_jobs", 10**9, "must be <= 100000000"),
    ("workload.flow_sla_steps", 2**40, "must be <= 1000"),
    ("workload.flow_weights", 2**40, "must be <= 2147483647"),
    ("links.bandwidth_mean", 1e300, "must be <= 1e+15"),
    ("workload.arrival_rate", 10**400, "must be a finite number"),
    ("workload.large_max_tasks", 2**31, "must be <= 1000000"),
])
def test_counts_have_upper_bounds(key, value, message):
    with pytest.raises(GeosimError, match=re.escape(f"{key}: {message}")):
        load_scenario(MEDIUM, {key: value})


def test_estimate_counts_close_to_the_built_run():
    scenario, fp = _estimate(MEDIUM)
    world, workload = world_and_workload(scenario)
    assert fp.clusters == world.n_clusters
    assert fp.slots == pytest.approx(world.n_slots, rel=0.1)
    n = world.n_clusters
    every = np.arange(n * n)
    _, _, res = world.routes.route_table(every[every // n != every % n])
    assert fp.route_entries == pytest.approx(res.size, rel=0.1)
    assert fp.tasks == pytest.approx(workload.n_tasks, rel=0.1)


def test_a_run_too_big_for_the_memory_limit_is_refused_naming_its_key():
    with pytest.raises(GeosimError, match=r"workload.n_jobs: the run would need about "
                       r"1\d\.\d\d GiB .* more than run.max_memory_gb = 8; most of it comes "
                       r"from workload.n_jobs = 40000"):
        GeoModel(load_scenario(MEDIUM, {"workload.n_jobs": 40000}))
    scenario, fp = _estimate(MEDIUM, {"workload.n_jobs": 40000, "run.max_memory_gb": 16})
    footprint.check_memory(fp, scenario)                      # raised limit: accepted
    one_slot = {f"tiers.{t}.slots": 1 for t in ("large", "medium", "small")}
    scenario, fp = _estimate(QUICK, {"topology.n_clusters": 3000, "run.max_memory_gb": 0.4,
                                     "run.record_interval": 0, **one_slot})
    with pytest.raises(GeosimError, match="most of it comes from topology.n_clusters = 3000"):
        footprint.check_memory(fp, scenario)


def test_routes_of_a_chain_topology_are_estimated_and_bounded_by_the_cache(tmp_path):
    for n in (100, 1000):
        write_topology(nx.path_graph(n), tmp_path / f"chain{n}.graphml")
        (tmp_path / f"chain{n}.toml").write_text(
            f'[topology]\ngenerator = "file"\nfile = "chain{n}.graphml"\n'
            '[workload]\nn_jobs = 1\n[run]\nmax_memory_gb = 3\n')
    # 100 clusters: every route fits the cache, and the estimate counts them all.
    scenario, fp = _estimate(tmp_path / "chain100.toml")
    exact = sum(abs(s - d) + 2 for s in range(100) for d in range(100) if s != d)
    assert fp.route_entries == pytest.approx(exact, rel=0.05)
    # 1000 clusters: 335 million entries in all, but only what the cache holds is charged.
    scenario, fp = _estimate(tmp_path / "chain1000.toml")
    per_pair = (1000 / 3 + 2) * routes.ROUTE_ENTRY_BYTES + routes.PAIR_BYTES
    assert fp.route_entries == pytest.approx(
        routes.ROUTE_CACHE_BYTES / per_pair * (1000 / 3 + 2), rel=0.05)
    assert fp.terms["topology.file"] < routes.ROUTE_CACHE_BYTES + routes.TREE_CACHE_BYTES \
        + 2**25
    model = GeoModel(scenario)                              # not refused: it fits in 3 GiB
    assert model.world.routes.hops(0, 999) == 999


@pytest.mark.parametrize(("overrides", "key"), [
    ({"workload.reference_mips": 1e12}, "workload.reference_mips"),
    ({"links.bandwidth_mean": 1e-300}, "links.bandwidth_mean"),
    ({f"tiers.{t}.gate_ratio": 1e-300 for t in ("large", "medium", "small")},
     r"tiers.\*.gate_ratio"),
    ({"run.dt": 1e-6}, "run.dt"),
])
def test_a_run_that_could_never_finish_is_refused_before_it_starts(overrides, key):
    scenario = load_scenario(MEDIUM, {"workload.n_jobs": 5, **overrides})
    with pytest.raises(GeosimError, match=f"{key}: a task alone would take about"):
        GeoModel(scenario)


def test_growth_beyond_the_budget_stops_with_the_limit_named():
    table = Table(COPY_SPEC, capacity=16, name="copies",
                   budget=Budget(64 * 121, "my.toml"))
    table.append(64)
    with pytest.raises(GeosimError, match=r"my.toml: run.max_memory_gb: the run's copies "
                       r"table \(128 rows\) would take"):
        table.append(1)


class Idle(Scheduler):
    name = "idle-for-limits"

    def decide(self, view, actions):
        pass


def test_stall_is_counted_in_steps_too(monkeypatch):
    scenario = load_scenario(QUICK, {"workload.n_jobs": 2, "run.dt": 0.001})
    model = GeoModel(scenario, Idle())
    monkeypatch.setattr(geosim.guards, "STALL_STEPS", 40)
    with pytest.raises(GeosimError, match="no task completed in 1e.06 simulated seconds or "
                       "40 steps .* run.dt = 0.001"):
        model.run()
    assert model.steps_run == 41 and model.engine.time < model.workload.arrival[0] + 1


@pytest.mark.parametrize("path", [QUICK, "scenarios/redundancy-gamma.toml"])
def test_step_and_wall_budgets_stop_a_run(path, tmp_path, capsys):
    over = {"workload.n_jobs": 50}
    if "redundancy" in path:                   # the compiled event loop checks them too
        over.update({"run.timing": "event", "scheduler.name": "srpt+r"})
    with pytest.raises(GeosimError, match=r"run.max_steps: stopped after \d+ steps \(limit "
                       r"5\) at simulated time .* of 50 jobs done"):
        GeoModel(load_scenario(path, {**over, "run.max_steps": 5})).run()
    with pytest.raises(GeosimError, match="run.max_wall_seconds: stopped after"):
        GeoModel(load_scenario(path, {**over, "run.max_wall_seconds": 1e-9})).run()
    out = tmp_path / "out"
    assert main(["run", path, "--out", str(out), "--set", "run.max_steps=3",
                 "--set", "workload.n_jobs=50"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "run.max_steps: stopped after" in err[0]
    assert not out.exists()


def test_validate_prints_the_estimate_the_readme_shows(capsys):
    assert main(["validate", QUICK]) == 0
    printed = capsys.readouterr().out
    readme = open("README.md").read()
    assert f"$ geosim validate {QUICK}\n{printed}```" in readme
    assert "estimate: memory 0.42 GiB" in printed


def test_work_scheduler_defaults_and_parameters_are_checked_whatever_the_run():
    with pytest.raises(GeosimError, match="workload.work: pareto parameter 'shape' must be"):
        load_scenario(MEDIUM, {"workload.work": {"distribution": "pareto", "scale": 1.0,
                                                 "shape": float("nan")}})
    # Scenario validation checks shapes; the names are resolved where schedulers are built.
    unknown = load_scenario(MEDIUM, {"scheduler.defaults": {"nosuch": {}}})
    with pytest.raises(GeosimError, match="scheduler.defaults.nosuch: unknown scheduler"):
        GeoModel(unknown.with_overrides({"workload.n_jobs": 1}))
    for spec in ("spark+speculation[interval=inf]", "dolly[straggler_ratio=nan]"):
        with pytest.raises(GeosimError, match="must be finite"):
            GeoModel(load_scenario(QUICK, {"workload.n_jobs": 1}), spec)


def test_workflow_and_topology_files_are_bounded(tmp_path, monkeypatch):
    import geosim.topology
    import geosim.workload.wfformat as wf
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(GeosimError, match="deep.json: not valid WfFormat: nested too deeply"):
        wf.workflow_size(deep)
    monkeypatch.setattr(wf, "MAX_FILE_BYTES", 10)
    with pytest.raises(GeosimError, match="larger than 10 bytes"):
        wf.read_wfformat(deep)
    write_topology(nx.path_graph(30), tmp_path / "t.graphml")
    monkeypatch.setattr(geosim.topology, "MAX_CLUSTERS", 20)
    with pytest.raises(GeosimError, match="30 clusters, more than the 20"):
        geosim.topology.read_topology(tmp_path / "t.graphml")
    monkeypatch.setattr(geosim.topology, "MAX_FILE_BYTES", 10)
    with pytest.raises(GeosimError, match="larger than 10 bytes"):
        geosim.topology.read_topology(tmp_path / "t.graphml")


def test_a_sampling_interval_far_below_the_slot_neither_spins_nor_overflows():
    scenario = load_scenario(QUICK, {"workload.n_jobs": 3, "run.record_interval": 1e-6})
    model = GeoModel(scenario)
    result = model.run()                      # at most one sample per slot, at once
    assert result.jobs["finished"].all()
    assert result.clusters["time"].nunique() <= model.engine.time / model.dt + 2
    event = {"workload.n_jobs": 20000, "run.timing": "event", "scheduler.name": "srpt+r",
             "run.record_interval": 1e-6}
    with pytest.raises(GeosimError, match=r"run.record_interval: the run would need about "
                       r"\d+\.\d\d GiB .* most of it comes from run.record_interval = "
                       r"1e-06: raise run.record_interval or run.max_memory_gb"):
        GeoModel(load_scenario("scenarios/redundancy-gamma.toml", event))


def test_a_world_of_10000_clusters_is_charged_its_route_cache_not_every_route():
    scenario, fp = _estimate(QUICK, {"topology.n_clusters": 10_000})
    assert fp.route_entries < routes.ROUTE_CACHE_BYTES / routes.ROUTE_ENTRY_BYTES
    assert 0 < fp.terms["topology.n_clusters"] \
        < routes.ROUTE_CACHE_BYTES + routes.TREE_CACHE_BYTES + 2**28
    # The monitor keeps samples of the pairs in use only: charged with the tasks, at most
    # a few pairs per task, far fewer than the 10^8 ordered pairs.
    pairs = fp.tasks * footprint.MONITOR_PAIRS_PER_TASK
    assert fp.terms["workload.n_jobs"] == pytest.approx(
        fp.tasks * footprint.TASK_BYTES + fp.jobs * footprint.JOB_BYTES
        + pairs * footprint.MONITOR_PAIR_BYTES)


@pytest.mark.parametrize("span", [5_100.0, 21_000.0])
def test_the_slots_blocks_of_draws_are_charged_at_the_width_the_run_reaches(span):
    # pingan-medium's 12 356 slots, shared slot streams: the rings of availability draws
    # widen as the slots' phase counts drift apart (4 blocks by 5 100 s, 8 by 21 000 s).
    scenario = load_scenario(MEDIUM)
    world, _ = world_and_workload(scenario)
    avail = world.availability
    avail.advance(span)
    width = max(seq.width for seq in avail._seq)
    charged = footprint.ring_bytes(scenario, world.n_slots, span)
    assert charged == 2 * width * avail._seq[0].k * 2 * 8
    keyed = load_scenario(MEDIUM, {"clusters.slot_streams": "keyed"})
    assert footprint.ring_bytes(keyed, world.n_slots, span) == 0


def test_the_estimate_a_run_keeps_charges_its_expected_length():
    # Once built, a run's estimate charges the time series and the rings over the
    # simulated seconds the world and jobs give, not over the arrivals alone.
    scenario = load_scenario(MEDIUM, {"workload.n_jobs": 300})
    model = GeoModel(scenario)
    span, _ = footprint.simulated_span(scenario, model.world, model.workload)
    assert span > footprint.arrival_span(scenario, model.workload) + 500
    assert model.footprint.terms["run.record_interval"] == footprint.series_bytes(
        scenario, model.world.n_clusters, model.world.n_links, span) > 0
    assert model.footprint.terms["tiers.*.slots"] == pytest.approx(model.footprint.slots * (
        footprint.SLOT_STATE_BYTES + footprint.ring_bytes(scenario, model.footprint.slots,
                                                          span)))
    quiet = GeoModel(load_scenario(MEDIUM, {"workload.n_jobs": 300, "run.record_interval": 0}))
    assert quiet.footprint.terms["run.record_interval"] == 0


def test_generated_workflows_are_charged_their_generator():
    recipe = {"workload.kind": "wfformat", "workload.recipe": "blast", "workload.n_jobs": 2,
              "workload.recipe_tasks": 40}
    _, fp = _estimate(QUICK, recipe)
    _, plain = _estimate(QUICK, {"workload.n_jobs": 2})
    assert fp.terms["workload.recipe"] == footprint.RECIPE_BYTES
    assert "workload.recipe" not in plain.terms
