"""Event timing's compiled sub-span loop ending completions itself."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from test_engine import PinTo, make_workload
from test_queueing import availability_phases

from geosim import GeoModel, load_scenario
from geosim.engine import core, subspans
from geosim.engine.step import change_that_matters
from geosim.engine.tables import COPY_SPEC, INPUT_SPEC, CopyCols, InputCols
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
    codes = _recorded(monkeypatch, 0)          # why the loop returned
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


def _recorded(monkeypatch, field: int) -> list:
    """Item ``field`` of every return of the compiled loop, as the engine calls it."""
    seen = []

    def recording(*args):
        out = subspans.run_subspans(*args)
        seen.append(out[field])
        return out
    monkeypatch.setattr(core, "run_subspans", recording)
    return seen


def _assert_same_tables(a, b):
    for name in ("jobs", "tasks", "copies", "clusters", "links"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)


@pytest.mark.parametrize("scheduler", ["pingan", "fair"])
def test_changes_that_cannot_matter_leave_the_tables_as_they_were(monkeypatch, scheduler):
    # In fetch mode a slot's availability moves only its own copy's processing. A phase
    # change of a copy that could neither finish nor catch up with the data it has
    # received before the next event, even at the highest level, stays inside a sub-span
    # (its progress is the span's time-average rate times the span). The tables are those
    # of ending a sub-span at every busy slot's change (the highest level not known), up
    # to rounding, in fewer sub-spans.
    spans = _recorded(monkeypatch, 3)          # sub-spans run
    world = event_maxmin(geo_world(n_jobs=12, scheduler=scheduler))
    world["availability"] = {"available_scale": 2.0, "unavailable_scale": 1.0}
    tables, counts = [], []
    for known in (True, False):
        spans.clear()
        model = GeoModel(load_scenario(world))
        assert model.world.availability.max_level < math.inf
        if not known:
            model.world.availability.max_level = math.inf
        tables.append(model.run())
        counts.append(sum(spans))
    for name in ("jobs", "tasks", "copies"):
        a, b = getattr(tables[0], name), getattr(tables[1], name)
        assert a.shape == b.shape
        for col in a.columns:
            if pd.api.types.is_float_dtype(a[col]):
                np.testing.assert_allclose(a[col], b[col], rtol=1e-9, atol=1e-9)
            else:
                assert a[col].equals(b[col]), (name, col)
    assert counts[0] < 0.6 * counts[1]


def test_a_copy_waiting_for_its_data_is_exact_through_its_slot_s_phases():
    # One copy (work 100 at power 10: 10 s at the mean availability) reads 30 MB over a
    # 2 MB/s link, so its processing keeps catching up with the data (a fraction t / 15 of
    # it by t) and is then held to the data's pace, while its slot's availability changes
    # every second or so. The completion is computed here from the slot's phases alone:
    # progress grows at 0.1 times the level, never beyond the data received.
    world = {
        "run": {"seed": 4, "timing": "event"},
        "topology": {"generator": "barabasi_albert", "n_clusters": 2, "m": 1},
        "tiers": {tier: {"slots": 1, "power_mean": 10.0, "power_rsd": 0.0, "gate_ratio": 1.0,
                         "outage_probability": 0.0} for tier in ("large", "medium", "small")},
        "clusters": {"vm_bandwidth": 1000.0, "power_redraw_interval": 0.0},
        "availability": {"available_scale": 2.0, "unavailable_scale": 1.0},
        "outages": {"enabled": False},
        "links": {"bandwidth_mean": 2.0, "bandwidth_rsd": 0.0, "redraw_interval": 0.0},
        "workload": {"kind": "single", "n_jobs": 1},
    }
    wl = make_workload([0.0], [160.0], raw=[[(1, 30.0)]])
    result = GeoModel(load_scenario(world), PinTo(0), workload=wl).run()
    slot = int(result.copies["slot"][0])
    starts, levels = availability_phases(world, 60.0, slot=slot)
    cuts = np.union1d(starts, [15.0])           # the data is all in at 15 s
    t, progress = 0.0, 0.0
    for end in cuts[1:]:
        level = levels[np.searchsorted(starts, t, side="right") - 1]
        speed, data_pace = level / 16, (1 / 15 if t < 15.0 else 0.0)
        data = min(t / 15, 1.0)
        if progress + speed * (end - t) >= 1.0 and t >= 15.0:
            t += (1.0 - progress) / speed
            break
        caught = t + (data - progress) / (speed - data_pace) if speed > data_pace else np.inf
        if caught < end:        # held to the data's pace from then on
            progress = min(data + data_pace * (end - t), 1.0)
        else:
            progress += speed * (end - t)
        t = end
    assert 15.0 < t < 60.0
    assert result.jobs["completion"][0] == pytest.approx(t, rel=1e-9)


def test_a_change_matters_where_processing_could_reach_its_data_or_its_end():
    # Three copies at power 10 on tasks of work 100, levels at most 1.5: at most 0.15 of
    # the work a second. Copy 0 has processed 0.5 of data of which 0.52 is in, copy 1 0.2
    # of 0.9, copy 2 0.95 with every input in. Within 0.2 s only copy 0 can reach a limit
    # (its data); within 0.4 s copy 2 can too (its end); within 10 s all three can.
    def table(spec, record, n, **values):
        cols = {k: np.full(n, fill, dtype=dt) for k, (dt, fill) in spec.items()}
        for k, v in values.items():
            cols[k][:] = v
        return tuple(record(**cols))
    copies = table(COPY_SPEC, CopyCols, 3, task=[0, 1, 2], slot=[0, 1, 2], share=1.0,
                   progress=[0.5, 0.2, 0.95])
    inputs = table(INPUT_SPEC, InputCols, 2, copy=[0, 1], received=[0.52, 0.9])
    two, none = np.arange(2), np.empty(0, dtype=np.int64)
    flows = (two, two, two, two, two, two, two, none, none)   # Flows: input j of copy j
    ids = np.arange(3)
    change = np.array([5.0, 3.0, 7.0])

    def soon(within):
        return change_that_matters(ids, copies, inputs, flows, np.full(3, 100.0),
                                   np.full(3, 10.0), change, 1.5, within)
    assert soon(0.2) == 5.0
    assert soon(0.01) == np.inf
    assert soon(10.0) == 3.0
    assert soon(0.4) == 5.0
    change[0] = 9.0
    assert soon(0.4) == 7.0
