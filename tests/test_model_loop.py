"""The model's one loop: when the next decision is due, for every timing mode, and the
world and workload built without a model."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import closed_world

from geosim import GeoModel, load_scenario
from geosim.inputs import build_inputs, world_and_workload
from geosim.model import Stop


def _world(timing: str, **kw) -> dict:
    world = closed_world(slots=2, rate=0.05, n_jobs=6, **kw)
    world["run"]["timing"] = timing
    world["run"]["dt"] = 1.0
    world["run"]["record_interval"] = 1000.0
    return world


def test_idle_the_next_decision_is_the_next_arrival():
    for timing in ("slot", "event"):
        model = GeoModel(load_scenario(_world(timing)), "srpt")
        first = float(model.workload.arrival[0])
        assert model._idle
        stop = model._next_decision(idle=True)
        want = first if timing == "event" else np.ceil(first)
        assert stop == Stop("idle", want)
        model.step()            # jumps there, the job arrives, the scheduler decides
        assert 0 in model.jobs or model.jobs_done == 1
        assert model.engine.time > first - 1e-9


def test_with_jobs_alive_the_next_decision_depends_on_the_timing():
    slotted = GeoModel(load_scenario(_world("slot")), "fair")    # decides every slot
    slotted.step()
    assert slotted._next_decision() == Stop("slots", 1)
    evented = GeoModel(load_scenario(_world("event")), "srpt")
    evented.compiled = False
    evented.step()
    stop = evented._next_decision()
    assert stop.kind == "span"
    e = evented.engine
    assert stop.value == pytest.approx(min(e.time_to_completion(),
                                           evented.workload.arrival[e.next_job] - e.time))
    t = e.time
    evented._advance(stop)
    assert e.time == pytest.approx(t + stop.value)


def test_a_quiet_span_runs_several_slots_at_once():
    # An event-driven scheduler on constant rates: one step runs from the first arrival's
    # boundary up to the slot in which its copy can finish, in one engine call; the next
    # runs that slot.
    model = GeoModel(load_scenario(_world("slot")), "srpt")
    boundary = np.ceil(model.workload.arrival[0])
    work = model.workload.task_work[0]                   # power 1: seconds
    model.step()
    e = model.engine
    assert model.steps_run == 1 and model.jobs_done == 0
    assert e.time == np.floor(boundary + work) and e.time - boundary > 1
    assert model._next_decision() == Stop("slots", 1)
    model.step()
    assert model.jobs_done == 1 and e.time == np.ceil(boundary + work)


def test_world_and_workload_without_a_model_are_the_models():
    scenario = load_scenario(_world("slot"))
    for seed in (1, 7):
        world, workload = world_and_workload(scenario, seed)
        model = GeoModel(scenario, "fifo", seed=seed)
        np.testing.assert_array_equal(workload.arrival, model.workload.arrival)
        np.testing.assert_array_equal(workload.task_work, model.workload.task_work)
        np.testing.assert_array_equal(world.slots, model.world.slots)
    inputs = build_inputs(scenario)
    assert inputs.footprint.clusters == inputs.world.n_clusters
    assert not np.array_equal(world_and_workload(scenario, 1)[1].arrival,
                              world_and_workload(scenario, 2)[1].arrival)
