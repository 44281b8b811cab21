"""The public checks of the scheduler contract (``geosim.testing``) catch broken schedulers.

A correct scheduler passing every check is tested on the README's example
(``tests/test_readme_scheduler.py``); here each broken scheduler fails the check meant
for it, with a message naming the scheduler and the check.
"""

from __future__ import annotations

import numpy as np
import pytest

from geosim import GeosimError
from geosim.schedulers import Scheduler
from geosim.schedulers.fifo import FIFO
from geosim.testing import WORLDS, check_scheduler, scheduler_checks


class Idle(Scheduler):
    """Never launches anything."""

    name = "idle"

    def decide(self, view, actions):
        pass


class Forgetful(FIFO):
    """Takes a parameter but does not store it."""

    name = "forgetful"

    def __init__(self, depth: int = 1):
        pass


class Renamed(FIFO):
    """Stores its parameter under another name."""

    name = "renamed"

    def __init__(self, depth: int = 1):
        self.depth = depth * 2


class Unseeded(Scheduler):
    """Draws clusters from a random stream that is not the run's."""

    name = "unseeded"

    def decide(self, view, actions):
        free = view.free_slots()
        for task in view.ready_in_order(view.alive_jobs)[0]:
            open_clusters = np.flatnonzero(free > 0)
            if open_clusters.size == 0:
                break
            cluster = np.random.default_rng().choice(open_clusters)
            actions.launch(task, cluster)
            free[cluster] -= 1


def test_the_checks_are_named_and_cover_every_world():
    assert list(scheduler_checks(FIFO)) == ["params", *WORLDS, "same seed"]
    assert set(WORLDS) == {"flows", "closed", "mapreduce", "geo", "geo-event"}


def test_a_scheduler_that_never_finishes_fails_its_first_world_quickly():
    with pytest.raises(AssertionError, match=r"^Idle in the flows world: .*run\.max_steps: "
                                             r"stopped after 1001 steps .* 0 of \d+ jobs done"):
        check_scheduler(Idle)


@pytest.mark.parametrize(("cls", "message"), [
    (Forgetful, "Forgetful, params: every __init__ parameter must be stored as an attribute"),
    (Renamed, r"Renamed, params: depth=3 was given but get_params\(\) says 6"),
])
def test_parameters_not_stored_as_given_fail_the_params_check(cls, message):
    with pytest.raises(AssertionError, match=message):
        scheduler_checks(cls, {"depth": 3})["params"]()


def test_a_scheduler_that_ignores_the_run_seed_fails_the_same_seed_check():
    checks = scheduler_checks(Unseeded)
    checks["flows"]()          # it does run correctly...
    with pytest.raises(AssertionError, match="Unseeded, same seed: the .* tables differ"):
        checks["same seed"]()  # ...but not reproducibly


def test_a_scheduler_is_named_by_class_or_registered_name():
    assert scheduler_checks("fifo").keys() == scheduler_checks(FIFO).keys()
    scheduler_checks("fifo")["params"]()
    with pytest.raises(GeosimError, match="unknown scheduler 'no-such'"):
        scheduler_checks("no-such")
    with pytest.raises(TypeError, match="not a geosim Scheduler subclass"):
        scheduler_checks(dict)
