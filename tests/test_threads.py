"""The wide kernels give the numbers of the serial ones, bit for bit, in any number of parts."""

import copy

import networkx as nx
import numba
import numpy as np
import pandas as pd
import pytest

import geosim.threads as threads
from geosim import processes
from geosim.engine.step import apply, apply_wide, finish_kernel, rates, rates_wide
from geosim.engine.tables import CopyCols, InputCols
from geosim.engine.transfers import (
    flow_resources,
    flow_resources_wide,
    list_flows,
    list_flows_wide,
)
from geosim.model import GeoModel
from geosim.modeler import PairTable
from geosim.processes import KeyedRenewal
from geosim.routes import Routes, trees_kernel, trees_kernel_wide
from geosim.scenario import load_scenario
from geosim.schedulers.pingan import candidates
from geosim.testing import geo_world

PARTS = (1, 2, 3, 7)


def test_part_bounds_cover_the_range_in_order():
    for n in (0, 1, 5, 16, 1001):
        for parts in PARTS:
            b = threads.part_bounds(n, parts)
            assert b[0] == 0 and b[-1] == n and b.size == parts + 1
            assert np.diff(b).min() >= 0 and np.diff(b).max() - np.diff(b).min() <= 1


def test_wide_needs_many_elements_and_threads(monkeypatch):
    assert not threads.wide(threads.WIDE_FROM - 1)
    monkeypatch.setattr(threads, "WIDE_FROM", 10)
    assert not threads.wide(9)
    assert threads.wide(10) == (numba.get_num_threads() > 1)
    assert not threads.wide_rows(threads.ROWS_WIDE_FROM - 1)
    monkeypatch.setattr(threads, "ROWS_WIDE_FROM", 10)
    assert not threads.wide_rows(9)
    assert threads.wide_rows(10) == (numba.get_num_threads() > 1)


def _busy_model(**links):
    """A geo world stepped until many copies read remote inputs."""
    world = geo_world(n_clusters=12, n_jobs=30, rate=0.5, scheduler="fair")
    world["links"] = links
    model = GeoModel(load_scenario(world))
    engine = model.engine
    while not (engine.live.size > 60 and engine._flow_structure().idx.size > 40):
        assert not model.done
        model.step()
    return model


@pytest.mark.parametrize("transfer", ["fetch", "stream"])
def test_rates_and_progress_in_parts(transfer):
    e = _busy_model(transfer=transfer).engine
    rng = np.random.default_rng(1)
    flows = e._flow_structure()
    fetch = transfer == "fetch"
    avail = rng.uniform(0.1, 1.0, e.live.size)
    bw = rng.uniform(0.0, 5.0, flows.idx.size)
    bw[::7] = 0.0
    args = (e.live, e.copies.kernel_arg, e.inputs.kernel_arg, e.task_work,
            e.world.power.level, avail, fetch, True, tuple(flows), bw)
    want = rates(e.live, CopyCols(*args[1]), InputCols(*args[2]), *args[3:8], flows, bw)
    span = (e.time, 2.0, 2.0 * (1 + 1e-9), 1 + 1e-9)
    elapsed, win, *_ = finish_kernel(e.live, e.copies.cols["task"], want.left, span[0],
                                     span[1], span[2], *e._scratch())
    tables = (e.copies.kernel_arg, e.inputs.kernel_arg)
    base = copy.deepcopy(tables)
    moved, arrived = apply(e.live, elapsed, want, win, fetch, True, flows, CopyCols(*base[0]),
                           InputCols(*base[1]), span[3])
    for parts in PARTS:
        got = rates_wide(*args, parts)
        for name, a, b in zip(want._fields, want, got, strict=True):
            if fetch or name != "fetch_left":           # (left unset when inputs stream)
                np.testing.assert_array_equal(a, b)
        mine = copy.deepcopy(tables)
        m2, a2 = apply_wide(e.live, elapsed, got, win, fetch, True, tuple(flows), *mine,
                            span[3], parts)
        np.testing.assert_array_equal(moved, m2)
        assert arrived == a2
        for a, b in zip(base, mine, strict=True):
            for x, y in zip(a, b, strict=True):
                np.testing.assert_array_equal(x, y)


def test_flow_listing_and_layout_in_parts():
    e = _busy_model().engine
    args = (e.live, e.copies.kernel_arg, e.inputs.kernel_arg, 1.0 - 1e-9)
    want = list_flows(*args)
    assert want[0].size > 40
    rng = np.random.default_rng(2)
    ptr = np.concatenate([[0], np.cumsum(rng.integers(2, 7, 9))])
    route_res = rng.integers(0, 50, ptr[-1])
    rows = rng.integers(0, 9, want[0].size + 4)          # four moves after the flows
    layout = flow_resources(want[1], rows, want[0].size, ptr, route_res)
    for parts in PARTS:
        for a, b in zip(want, list_flows_wide(*args, parts), strict=True):
            np.testing.assert_array_equal(a, b)
        wide = flow_resources_wide(want[1], rows, want[0].size, ptr, route_res, parts)
        for a, b in zip(layout, wide, strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("distinct", [False, True])
def test_keyed_means_in_parts(distinct):
    # With repeats, in any order; or each entity asked once (``distinct``).
    def process():
        return KeyedRenewal(500, (0.34, 9.4), (0.19, 4.0), (2.0, 3.0), (0.0, 0.3), 1.0,
                            np.random.default_rng(4))
    rng = np.random.default_rng(5)
    spans = [(t, t + rng.uniform(0.01, 30.0)) for t in np.cumsum(rng.uniform(0, 20, 12))]
    wants = [rng.permutation(500)[:300] if distinct else rng.integers(0, 500, 700)
             for _ in spans]
    serial = process()
    expected = [serial.advance_mean(t1, t0, w) for (t0, t1), w in zip(spans, wants,
                                                                       strict=True)]
    for parts in PARTS:
        proc = process()
        for (t0, t1), w, exp in zip(spans, wants, expected, strict=True):
            out = np.empty(w.size)
            proc.epoch += 1
            processes._keyed_mean_wide(*proc._state(), proc._stamp, proc._acc, proc.epoch,
                                       t1, t0, w, out, distinct, parts)
            np.testing.assert_array_equal(out, exp)
        np.testing.assert_array_equal(proc.count, serial.count)


@pytest.mark.parametrize("weight", [None, "length"])
def test_trees_in_parts(weight):
    graph = nx.barabasi_albert_graph(300, 2, seed=3)
    rng = np.random.default_rng(3)
    for u, v in graph.edges:
        graph.edges[u, v]["length"] = float(rng.integers(1, 5))
    routes = Routes(graph, weight)
    sources = rng.choice(300, 40, replace=False)
    slots = np.arange(40)
    shape = (40, 300)
    via, depth = np.empty(shape, np.int32), np.empty(shape, np.int32)
    trees_kernel(routes._ptr, routes._head, routes._wt, routes.weighted, sources, slots, via,
                 depth)
    via2, depth2 = np.empty(shape, np.int32), np.empty(shape, np.int32)
    trees_kernel_wide(routes._ptr, routes._head, routes._wt, routes.weighted, sources, slots,
                      via2, depth2)
    np.testing.assert_array_equal(via, via2)
    np.testing.assert_array_equal(depth, depth2)


def test_map_rows_gives_the_call_over_all_rows():
    # Ties everywhere: argpartition's choice among them is the whole call's in every part.
    a = np.random.default_rng(4).integers(0, 5, size=(23, 300)).astype(float)

    def top(x):
        return np.argpartition(x, 7, axis=1)[:, :8]

    for parts in PARTS + (40,):
        np.testing.assert_array_equal(threads.map_rows(top, a, parts), top(a))


def _bound_inputs(rng, n=61, n_tasks=9, kept=6):
    """Inputs of PingAn's kept bounds: tasks with 0–3 input groups, some entries kept."""
    n_groups = rng.integers(0, 4, n_tasks)
    g_ptr = np.concatenate(([0], np.cumsum(n_groups))).astype(np.int64)
    g_src = rng.integers(0, n, g_ptr[-1]).astype(np.int64)
    g_size = rng.choice([50.0, 100.0, 400.0], g_ptr[-1])
    keys = np.sort(rng.choice(n * n, 300, replace=False)).astype(np.int64)
    fallback = np.where(rng.random(n) < 0.5, rng.integers(0, 300, n), -1).astype(np.int64)
    bw = PairTable(keys, fallback, rng.random(n).round(1), 300 + n,
                   rng.choice([1.0, 2.0, 5.0], 300 + 2 * n))
    speed = rng.choice([0.5, 1.0, 2.0], (n, 3))
    tasks = rng.permutation(40)[:n_tasks].astype(np.int64)
    slots = rng.permutation(n_tasks).astype(np.int64)          # entries kept below ``kept``
    return (np.arange(n_tasks, dtype=np.int64), slots, tasks,
            rng.integers(0, 3, 40).astype(np.int64), rng.choice([10.0, 30.0], 40), g_ptr,
            g_src, g_size, speed, bw, np.zeros((kept, n)), rng.random(n_tasks) < 0.3,
            rng.random(n) < 0.8)


def test_pingan_bounds_in_parts():
    rng = np.random.default_rng(5)
    for _ in range(5):
        args = _bound_inputs(rng)
        serial = copy.deepcopy(args)
        want = candidates._kept_bounds(*serial, 1, 0)
        for parts in PARTS:
            run = copy.deepcopy(args)
            got = candidates._kept_bounds(*run, parts, 0)
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(run[10], serial[10])    # the kept bounds
            np.testing.assert_array_equal(run[11], serial[11])    # which are kept


def test_pingan_kept_bounds_are_the_bounds():
    """Kept or computed from each source's row read once, the bounds of ``_neg_bounds``."""
    rng = np.random.default_rng(6)
    for _ in range(5):
        (rows, slots, tasks, types, work, g_ptr, g_src, g_size, speed, bw, kept, ok,
         mask) = _bound_inputs(rng)
        ok[:] = False                           # nothing kept yet: every bound computed
        first = candidates._kept_bounds(rows, slots, tasks, types, work, g_ptr, g_src,
                                        g_size, speed, bw, kept, ok, mask, 1, 0)
        again = candidates._kept_bounds(rows, slots, tasks, types, work, g_ptr, g_src,
                                        g_size, speed, bw, kept, ok, mask, 1, 0)
        want = candidates._neg_bounds(speed, bw, rows, tasks, types, work, g_ptr, g_src,
                                      g_size, mask)
        np.testing.assert_array_equal(first, want)
        np.testing.assert_array_equal(again, want)


def _tables(world, monkeypatch, wide_from, rows_wide_from):
    monkeypatch.setattr(threads, "WIDE_FROM", wide_from)
    monkeypatch.setattr(threads, "ROWS_WIDE_FROM", rows_wide_from)
    result = GeoModel(load_scenario(world)).run()
    return [pd.util.hash_pandas_object(getattr(result, name)).sum()
            for name in ("jobs", "tasks", "copies")]


@pytest.mark.skipif(numba.get_num_threads() < 2, reason="one thread: no wide kernel runs")
@pytest.mark.parametrize("variant", ["fetch", "stream", "keyed", "pingan"])
def test_a_run_with_every_kernel_wide_gives_the_same_tables(variant, monkeypatch):
    world = geo_world(n_clusters=10, n_jobs=10, rate=0.2, scheduler="fair")
    if variant == "pingan":       # enough clusters for a search of 8 candidates
        world = geo_world(n_clusters=24, n_jobs=10, rate=0.2, scheduler="pingan")
    if variant == "stream":
        world["links"] = {"transfer": "stream"}
    if variant == "keyed":
        world["clusters"] = {"slot_streams": "keyed"}
        world["run"]["record_interval"] = 0.0
    serial = _tables(world, monkeypatch, threads.WIDE_FROM, threads.ROWS_WIDE_FROM)
    assert _tables(world, monkeypatch, 0, 0) == serial
