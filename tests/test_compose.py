"""The composition contract: a job order, a placement and a redundancy rule."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import geo_world

from geosim import GeoModel, load_scenario, make_scheduler
from geosim.schedulers.compose import Composite, Locality, Redundancy


def _composite(redundancy=None, **attrs):
    attrs = {"name": "test-composite", "redundancy_cls": redundancy or Redundancy, **attrs}
    return type("TestComposite", (Composite,), attrs)


def test_locality_fifo_composite_equals_fifo():
    scenario = load_scenario(geo_world(n_jobs=10))
    a = GeoModel(scenario, _composite()()).run()
    b = GeoModel(scenario, make_scheduler("fifo")).run()
    pd.testing.assert_frame_equal(a.copies, b.copies)


def test_parameters_are_routed_to_parts_and_unknown_ones_rejected():
    class Cloner(Redundancy):
        name = "cloner"

        def __init__(self, copies: int = 2):
            if copies < 1:
                raise ValueError(f"copies must be >= 1, got {copies}")
            self.copies = copies

        def clones(self, view, tasks, pos, jobs):
            return np.full(tasks.size, self.copies)

    cls = _composite(Cloner)
    sched = cls(copies=3, order="fair")
    assert sched.get_params() == {"order": "fair", "copies": 3}
    with pytest.raises(ValueError, match="unknown parameter 'bogus'"):
        cls(bogus=1)
    with pytest.raises(ValueError, match="order must be"):
        cls(order="lifo")
    with pytest.raises(ValueError, match="copies must be"):
        cls(copies=0)
    # clones: every first launch starts three copies (slots permitting)
    result = GeoModel(load_scenario(geo_world(n_jobs=4, rate=0.01)), cls(copies=3)).run()
    first = result.copies.groupby("task")["start"].transform("min") == result.copies["start"]
    per_task = result.copies[first].groupby("task").size()
    assert per_task.max() == 3 and per_task.median() == 3


def test_locality_placement_respects_free_slots():
    scenario = load_scenario(geo_world(n_jobs=2))
    model = GeoModel(scenario, _composite()())
    model.step()
    view = model.view
    free = np.zeros(view.n_clusters, dtype=np.int64)
    free[2] = 1
    tasks = np.arange(3)
    out = Locality().place(view, tasks, free)
    assert out.tolist() == [2, -1, -1] and free.sum() == 0
