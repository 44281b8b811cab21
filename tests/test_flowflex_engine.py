"""Flows of MapReduce jobs in the engine: caps, the flows workload, FlowFlex and its rivals."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from geosim import GeoModel, load_scenario
from geosim.errors import GeosimError
from geosim.experiment import compare
from geosim.flowcost import METRICS, flow_bounds, flow_costs
from geosim.flowflex import Flow, Job, Metric, fair_schedule, fifo_schedule, plan
from geosim.inputs import world_and_workload
from geosim.workload import concat, flow_instance, flow_workload

SCENARIO = "scenarios/flowflex.toml"
#: A small 004 experiment on a fast clock: 3-4 flows of 2-6 jobs, 10 s per time unit.
SMALL = {"workload.flow_count": [3, 4], "workload.flow_jobs": [2, 6],
         "workload.flow_time_unit": 10.0, "workload.flow_brick": 2.0, "run.dt": 2.0}


def _small(**more) -> object:
    return load_scenario(SCENARIO, {**SMALL, **more})


def _two_flows():
    a = Flow(jobs=(Job(6.0, 3), Job(4.0, 2), Job(2.0, 1)), edges=((0, 2), (1, 2)), weight=2.0,
             deadline=5.0, sla_times=(3.0, 6.0), sla_heights=(1.0, 4.0))
    b = Flow(jobs=(Job(10.0, 5),), weight=1.0)
    return a, b


def test_flow_workload_round_trips_through_the_planner_instance():
    a, b = _two_flows()
    wl = flow_workload([a, b], [0.0, 30.0], time_unit=10.0, brick=4.0)
    wl.validate(1)
    # 60 s of work on cap 3 -> max(3, 15) bricks of 4 s; 40 s on cap 2 -> 10; 20 s -> 5.
    assert np.diff(wl.task_ptr).tolist() == [15 + 10 + 5, 25]
    np.testing.assert_allclose(wl.task_work[:15], 4.0)
    assert wl.deadline[0] == 50.0 and np.isinf(wl.deadline[1])
    np.testing.assert_allclose(wl.sla_time, [30.0, 60.0])
    back = flow_instance(wl, slots=5, time_unit=10.0)
    f0, f1 = back.flows
    assert [j.size for j in f0.jobs] == pytest.approx([6.0, 4.0, 2.0])
    assert [j.cap for j in f0.jobs] == [3, 2, 1] and f0.edges == a.edges
    assert f0.deadline == 5.0 and f0.sla_times == (3.0, 6.0) and f0.weight == 2.0
    assert f1.release == 3.0 and f1.deadline is None and f1.jobs[0].size == pytest.approx(10.0)


def test_a_stage_never_runs_more_bricks_than_its_cap():
    a, b = _two_flows()
    wl = flow_workload([a, b], [0.0, 0.0], time_unit=10.0, brick=2.0)
    world = load_scenario(SCENARIO, {"run.dt": 1.0})
    result = GeoModel(world, scheduler="fifo", workload=wl).run()
    copies, tasks = result.copies, result.tasks
    stage = wl.task_stage[copies["task"]]
    key = copies["job"].to_numpy() * 100 + stage
    cap = wl.task_cap[copies["task"]]
    for k in np.unique(key):
        mine = key == k
        s, e = copies["start"].to_numpy()[mine], copies["end"].to_numpy()[mine]
        at = np.unique(s)
        running = ((s[None, :] <= at[:, None]) & (e[None, :] > at[:, None])).sum(axis=1)
        assert running.max() == cap[mine][0]
    # The last job of flow 0 waits for both of its predecessors.
    done = tasks["completion"].to_numpy()
    start = tasks["start"].to_numpy()
    t0 = wl.task_ptr[0]
    last = t0 + np.flatnonzero(wl.task_stage[t0:wl.task_ptr[1]] == 2)
    assert start[last].min() >= done[t0:last[0]].max()


def _with(**change):
    a, b = _two_flows()
    return dataclasses.replace(flow_workload([a, b], [0.0, 0.0], brick=2.0), **change)


@pytest.mark.parametrize("change, match", [
    ({"task_cap": [3, 9, 3, 2, 2, 1, 5, 5, 5, 5, 5]}, "a cap is per stage"),
    ({"edge_src": [0], "edge_dst": [5], "edge_size": [0.0]}, "leads into a capped stage"),
    ({"deadline": [np.nan, 1.0]}, "invalid deadline"),
    ({"sla_ptr": [0, 2, 1]}, "sla_ptr must run"),
    ({"sla_height": [1.0, -1.0]}, "SLA step 1"),
])
def test_bad_caps_and_service_levels_are_one_line_errors(change, match):
    with pytest.raises(GeosimError, match=match):
        _with(**change).validate(1)


def test_slicing_and_joining_carry_caps_deadlines_and_slas():
    a, b = _two_flows()
    wl = flow_workload([a, b], [0.0, 5.0], time_unit=1.0, brick=1.0)
    first = wl.subset(1)
    assert first.sla_time.size == 2 and first.deadline.tolist() == [5.0]
    swapped = wl.take_jobs(np.array([1, 0]))
    assert swapped.sla_ptr.tolist() == [0, 0, 2] and np.isinf(swapped.deadline[0])
    np.testing.assert_array_equal(swapped.task_cap[:10], 5)
    both = concat([wl, swapped], sort_by_arrival=True)
    both.validate(1)
    assert both.sla_ptr.tolist() == [0, 2, 4, 4, 4]      # a, a, b, b by arrival
    assert both.task_cap.sum() == 2 * wl.task_cap.sum()


def test_fifo_is_004s_fifo_and_flowflex_executes_its_plan():
    """With bricks no longer than a slot the engine's costs approach the continuous ones."""
    metric = Metric("weighted_completion")
    gap, fifo_gap = {}, {}
    for dt in (4.0, 1.0):
        world = _small(**{"run.dt": dt, "workload.flow_brick": dt})
        model = GeoModel(world, scheduler="flowflex")
        done = model.run().jobs["completion"].to_numpy() / 10.0
        instance = flow_instance(model.workload, 25, time_unit=10.0)
        assert len(model.policy.plans) == 1            # a batch: one plan at t = 0
        planned = plan(instance, metric).cost
        gap[dt] = metric.evaluate(instance, done) / planned - 1
        # At t = 0 the scheduler plans exactly the workload's flows (in seconds).
        assert model.policy.plans[0].cost == pytest.approx(
            plan(flow_instance(model.workload, 25), metric).cost)
        fifo = GeoModel(world, scheduler="fifo").run().jobs["completion"].to_numpy() / 10.0
        exact = metric.evaluate(instance, fifo_schedule(instance).flow_completion)
        fifo_gap[dt] = abs(metric.evaluate(instance, fifo) / exact - 1)
    assert 0 <= gap[1.0] < gap[4.0] and gap[1.0] < 0.01
    assert fifo_gap[1.0] < fifo_gap[4.0] and fifo_gap[1.0] < 0.01


def test_flow_fair_shares_among_ready_jobs():
    world = _small(**{"run.dt": 1.0, "workload.flow_brick": 1.0})
    model = GeoModel(world, scheduler="flow-fair")
    done = model.run().jobs["completion"].to_numpy() / 10.0
    instance = flow_instance(model.workload, 25, time_unit=10.0)
    metric = Metric("completion")
    exact = metric.evaluate(instance, fair_schedule(instance).flow_completion)
    assert metric.evaluate(instance, done) == pytest.approx(exact, rel=0.05)


def test_online_flows_replan_at_every_arrival():
    world = _small(**{"workload.flow_batch": False, "workload.n_jobs": 5,
                      "workload.arrival_rate": 0.02})
    model = GeoModel(world, scheduler="flowflex[objective=minimax,kind=stretch]")
    result = model.run()
    assert result.jobs["finished"].all()
    assert len(model.policy.plans) == np.unique(model.workload.arrival).size == 5


def test_jobs_table_and_summary_carry_service_levels_and_costs():
    model = GeoModel(_small(), scheduler="fifo")
    result = model.run()
    jobs = result.jobs
    wl = model.workload
    np.testing.assert_array_equal(jobs["deadline"], wl.deadline)
    first = wl.sla_ptr[:-1]
    np.testing.assert_array_equal(jobs["sla_time_1"], wl.sla_time[first])
    tardy = (jobs["completion"] > jobs["deadline"]) * jobs["weight"]
    assert result.summary["flow minisum weighted_number_of_tardy"] == tardy.sum()
    late = np.maximum(0.0, jobs["completion"] - jobs["deadline"]) / 10.0
    assert result.summary["flow minimax tardiness"] == pytest.approx(late.max())
    assert flow_costs(jobs, 10.0) == {k[5:]: v for k, v in result.summary.items()
                                      if k.startswith("flow ")}


def test_compare_reports_costs_and_bounds_that_no_schedule_beats():
    comparison = compare(_small(), ["flowflex", "flow-fair", "fifo"], seeds=[1, 2],
                         jobs_parallel=1)
    flows = comparison.flows
    assert set(flows["metric"]) == set(METRICS) and len(flows) == 3 * 2 * len(METRICS)
    assert (flows["cost"] >= flows["bound"] - 1e-6 * (1 + flows["bound"].abs())).all()
    assert np.allclose(flows["ratio"], (flows["cost"] + 1) / (flows["bound"] + 1))
    text = comparison.format()
    assert "minisum weighted_completion_time" in text and "(mean/worst)" in text
    _, workload = world_and_workload(_small(), seed=2)
    bounds = flow_bounds(workload, 25, 10.0)
    mine = flows[(flows["seed"] == 2) & (flows["label"] == "fifo")]
    assert dict(zip(mine["metric"], mine["bound"], strict=True)) == pytest.approx(bounds)


def test_flow_generator_keys_are_checked():
    with pytest.raises(GeosimError, match="narrow"):
        GeoModel(_small(**{"workload.flow_narrow_cap": [30, 40]}))
    with pytest.raises(GeosimError, match="flowflex: kind must be one of"):
        GeoModel(_small(), scheduler="flowflex[kind=custom]")


def test_caps_change_nothing_without_them():
    a, b = _two_flows()
    wl = flow_workload([a, b], [0.0, 0.0], time_unit=10.0, brick=2.0)
    free = dataclasses.replace(wl, task_cap=np.zeros(wl.n_tasks))
    world = load_scenario(SCENARIO, {"run.dt": 1.0})
    capped = GeoModel(world, scheduler="fifo", workload=wl).run().copies
    uncapped = GeoModel(world, scheduler="fifo", workload=free).run().copies
    assert capped["start"].max() > uncapped["start"].max()


def test_stage_counts_match_the_tasks_under_preemption():
    from conftest import mapreduce_world

    from geosim.view import READY, RUNNING
    model = GeoModel(load_scenario(mapreduce_world(scheduler="srpt", n_jobs=12)))
    decide, checked = model.policy.decide, []

    def check(view, actions):
        decide(view, actions)
        g = view.stage_groups(view.alive_jobs)
        for k in range(g["lo"].size):
            state = view.task_state[g["lo"][k]:g["hi"][k]]
            assert g["ready"][k] == (state == READY).sum()
            assert g["running"][k] == (state == RUNNING).sum()
            assert g["left"][k] == (state != 3).sum()
        checked.append(g["lo"].size)

    model.policy.decide = check
    result = model.run()
    assert sum(checked) > 100 and (result.copies["outcome"] == "killed").any()
