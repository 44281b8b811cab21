"""One decision-point rule for every event-driven scheduler (``Scheduler.at_event``).

A boundary is a decision point after an arrival, a task completion or a copy lost to an
outage, and when the reachable clusters change: an outage's end is one even when nothing
else happens at that boundary. Each scheduler is reset on a real world, then shown a run
of made-up boundaries through its real view (reachability and event counts replaced, no
job alive, so it stops right after deciding whether to act).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import flows_world, geo_world, uniform_world

from geosim import GeoModel, load_scenario, make_scheduler, registered

#: The event-driven schedulers, and those that decide by the same rule among others.
EVENT_DRIVEN = sorted(name for name, cls in registered().items() if cls.event_driven)
USERS = sorted(set(EVENT_DRIVEN) | {"pingan", "flowflex"})


class Boundary:
    """A real view seen at a made-up boundary: given reachability and event counts."""

    def __init__(self, view, reachable: np.ndarray, arrivals: int = 0, completions: int = 0,
                 failures: int = 0):
        self._view = view
        self.reachable = reachable
        self.reach_version = id(reachable)    # another array: maybe another set
        self.arrivals, self.completions, self.failures = arrivals, completions, failures
        self.alive_jobs = np.empty(0, dtype=np.int64)
        self.n_ready = 0

    @property
    def total_slots(self) -> int:
        return int(np.asarray(self._view.cluster_slots)[self.reachable].sum())

    def __getattr__(self, name: str):
        return getattr(self._view, name)


def _seen(name: str) -> list[bool]:
    """What the scheduler's rule said at: an arrival, an outage's start (a copy lost), the
    outage's end alone, and a quiet boundary."""
    world = flows_world(scheduler=name) if name == "flowflex" else geo_world(scheduler=name)
    scenario = load_scenario(world)
    policy = make_scheduler(name, scenario["scheduler"]["params"])
    model = GeoModel(scenario, policy)
    said: list[bool] = []

    def spy(view) -> bool:
        said.append(type(policy).at_event(policy, view))
        return said[-1]

    policy.at_event = spy
    up = np.ones(model.view.n_clusters, dtype=bool)
    down = up.copy()
    down[0] = False
    for boundary in (Boundary(model.view, up, arrivals=1), Boundary(model.view, down, failures=1),
                     Boundary(model.view, up.copy()), Boundary(model.view, up.copy())):
        policy.decide(boundary, None)
    return said


def test_every_event_driven_scheduler_is_checked():
    assert {"fifo", "srpt", "fair", "srpt+r", "srptms+c", "sca"} <= set(EVENT_DRIVEN)


@pytest.mark.parametrize("name", USERS)
def test_an_outage_ending_alone_is_a_decision_point(name):
    assert _seen(name) == [True, True, True, False]


def test_a_change_of_reachable_clusters_with_the_same_slots_is_a_decision_point():
    world = uniform_world(2)
    policy = make_scheduler("srpt", {})
    model = GeoModel(load_scenario(world), policy)
    n = model.view.n_clusters
    first, second = np.ones(n, dtype=bool), np.ones(n, dtype=bool)
    first[0], second[1] = False, False
    assert Boundary(model.view, first).total_slots == Boundary(model.view, second).total_slots
    assert policy.at_event(Boundary(model.view, first))
    assert not policy.at_event(Boundary(model.view, first.copy()))
    assert policy.at_event(Boundary(model.view, second))     # one down, another back
    assert policy.reach_changed
    assert not policy.at_event(Boundary(model.view, second.copy()))
    assert not policy.reach_changed
