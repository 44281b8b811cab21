"""Event timing's compiled sub-span loop ending completions itself."""

from __future__ import annotations

import pandas as pd
import pytest

from geosim import GeoModel, load_scenario
from geosim.engine import core, subspans
from geosim.testing import event_maxmin, geo_world


@pytest.mark.parametrize("scheduler", ["pingan", "flutter+mantri"])
def test_completions_ended_in_the_loop_give_the_tables_of_handing_back(monkeypatch,
                                                                      scheduler):
    # A scheduler that decides at slot boundaries lets the loop end completions and run
    # on; handing back at each one instead (as for an event-driven scheduler) must give
    # the same tables bit for bit. Short availability phases make the loop hand back for
    # draws after it has ended completions, whose winners must still be observed.
    real = core.Engine._compiled_subspans
    calls, allow = [], [True]

    def recording(self, stop, pending, through):
        code = real(self, stop, pending, through and allow[0])
        calls.append((code, sum(w.size for w in self.completed)))
        return code
    monkeypatch.setattr(core.Engine, "_compiled_subspans", recording)
    world = event_maxmin(geo_world(n_jobs=12, scheduler=scheduler))
    world["availability"] = {"available_scale": 2.0, "unavailable_scale": 1.0}
    tables, returns = [], []
    for allow[0] in (True, False):
        calls.clear()
        tables.append(GeoModel(load_scenario(world)).run())
        returns.append(list(calls))
    ended = [code for code, n in returns[0] if n and code != subspans.COMPLETED]
    assert subspans.NEED_BLOCK in ended and subspans.REACHED in ended
    assert len(returns[0]) < len(returns[1])       # fewer returns to Python
    _assert_same_tables(*tables)
    assert tables[0].summary["wan_mb"] == tables[1].summary["wan_mb"]


@pytest.mark.parametrize(("transfer", "sharing"), [("fetch", "maxmin"), ("fetch", "equal"),
                                                  ("stream", "equal"), ("stream", "maxmin")])
def test_the_loop_gives_the_python_path_s_tables(monkeypatch, transfer, sharing):
    # The loop reuses the rates it found a sub-span's end with when the sub-span's mean
    # availability is the level at its start, ends completions itself, and hands back to
    # Python for routes not yet in the table and for availability draws; the Python path
    # computes every sub-span anew and hands back at each completion.
    codes = []

    def recording(*args):
        out = subspans.run_subspans(*args)
        codes.append(out[0])
        return out
    monkeypatch.setattr(core, "run_subspans", recording)
    world = event_maxmin(geo_world(n_jobs=6, scheduler="pingan"))
    world["links"].update({"transfer": transfer, "sharing": sharing})
    world["availability"] = {"available_scale": 2.0, "unavailable_scale": 1.0}
    tables = []
    for compiled in (True, False):
        model = GeoModel(load_scenario(world))
        model.engine.compiled_subspans = compiled
        tables.append(model.run())
    assert {subspans.NEED_ROUTES, subspans.NEED_BLOCK, subspans.COMPLETED} <= set(codes)
    _assert_same_tables(*tables)


def _assert_same_tables(a, b):
    for name in ("jobs", "tasks", "copies", "clusters", "links"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)
