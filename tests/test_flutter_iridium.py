"""Flutter's exact lexicographic placement and Iridium's shuffle program."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import geo_world
from scipy.optimize import linprog

from geosim import GeoModel, load_scenario, make_scheduler
from geosim.modeler import PerformanceModel
from geosim.schedulers.base import Scheduler
from geosim.schedulers.flutter import Flutter, lexmin_assign
from geosim.schedulers.iridium import (
    Iridium,
    plan_moves,
    reduce_fractions,
    round_counts,
    shuffle_time,
)

ROOT = Path(__file__).resolve().parents[1]


def brute_force(cost: np.ndarray, cap: np.ndarray) -> tuple[int, tuple]:
    """Most rows placed, then the lexicographically smallest descending cost vector."""
    n, m = cost.shape
    best_k, best = -1, ()
    for choice in itertools.product(range(-1, m), repeat=n):
        ch = np.array(choice)
        rows = np.flatnonzero(ch >= 0)
        if np.any(np.bincount(ch[rows], minlength=m) > cap):
            continue
        c = cost[rows, ch[rows]]
        if not np.all(np.isfinite(c)):
            continue
        vec = tuple(sorted(c, reverse=True))
        if rows.size > best_k or (rows.size == best_k and vec < best):
            best_k, best = rows.size, vec
    return best_k, best


def placed_vector(cost: np.ndarray, got: np.ndarray) -> tuple[int, tuple]:
    rows = np.flatnonzero(got >= 0)
    return rows.size, tuple(sorted(cost[rows, got[rows]], reverse=True))


@pytest.mark.parametrize("ties", [False, True])
def test_lexmin_assign_matches_brute_force(ties):
    rng = np.random.default_rng(7 + ties)
    for _ in range(150):
        n, m = rng.integers(1, 6), rng.integers(1, 5)
        # integer costs in a small range make ties, the hard case for greedy methods
        cost = rng.integers(1, 5, (n, m)).astype(float) if ties else rng.random((n, m))
        cost[rng.random((n, m)) < 0.15] = np.inf
        cap = rng.integers(0, 3, m)
        got = lexmin_assign(cost, cap)
        rows = np.flatnonzero(got >= 0)
        assert np.all(np.bincount(got[rows], minlength=m) <= cap)
        assert placed_vector(cost, got) == brute_force(cost, cap), (cost, cap, got)


def test_lexmin_assign_on_a_stage_that_stopped_an_lp_solver_short():
    # A 76-task stage of pingan-medium (seed 2) on which HiGHS's dual simplex without
    # presolve once ended with status "unknown"; every task has a slot.
    data = np.load(ROOT / "tests" / "data" / "flutter_stage_highs_unknown.npz")
    cost = np.full(tuple(data["shape"]), np.inf)
    cost[data["rows"], data["cols"]] = data["cost"]
    got = lexmin_assign(cost, data["cap"])
    assert np.all(got >= 0)
    assert np.all(np.bincount(got, minlength=cost.shape[1]) <= data["cap"])
    assert np.all(np.isfinite(cost[np.arange(got.size), got]))


def test_lexmin_assign_tie_case_by_hand():
    # Task a costs 5 at x and at z; task b costs 3 at y and 1 at x; one slot each.
    # Both assignments put a at 5; (a->z, b->x) leaves b at 1 instead of 3.
    inf = np.inf
    cost = np.array([[5.0, inf, 5.0], [1.0, 3.0, inf]])
    assert lexmin_assign(cost, np.array([1, 1, 1])).tolist() == [2, 0]
    # one slot in all: the task with the smaller finish estimate gets it
    assert lexmin_assign(np.array([[4.0], [2.0]]), np.array([1])).tolist() == [-1, 0]


def test_flutter_validates_compute():
    with pytest.raises(ValueError, match="compute must be one of"):
        Flutter(compute="fast")
    assert make_scheduler("flutter", {"compute": "observed"}).get_params() == {
        "order": "fifo", "compute": "observed"}


class _Idle(Scheduler):
    """Places nothing, so ready tasks pile up for the parts under test."""

    name = "idle"

    def decide(self, view, actions):
        pass


def _ready_model(n_jobs: int = 3, steps: int = 30) -> GeoModel:
    model = GeoModel(load_scenario(geo_world(n_jobs=n_jobs, rate=0.5)), _Idle())
    for _ in range(steps):
        model.step()
    return model


def _model(view) -> PerformanceModel:
    return PerformanceModel(view.monitor, np.asarray(view.gate), view.dt)


def test_flutter_on_a_tiny_world_follows_its_estimates():
    model = _ready_model()
    view = model.view
    tasks, _ = view.ready_in_order(view.alive_jobs[:1])
    tasks = tasks[np.isin(np.arange(tasks.size), view.inputs_of(tasks)[0])][:4]
    assert tasks.size >= 2
    part = Flutter(compute="observed")
    part.prepare(view, np.random.default_rng(0), _model(view))
    est = part.finish_estimates(view, tasks)
    # the estimate of the first task at a cluster holding none of its input, by hand
    pos, src, size = view.inputs_of(tasks[:1])
    away = next(c for c in range(view.n_clusters) if c not in src)
    mdl = part.model
    by_hand = (max(size / mdl.bandwidth_mean[src, away])
               + view.task_work[tasks[0]] / mdl.speed_mean[away, view.task_type[tasks[0]]])
    assert est[0, away] == pytest.approx(by_hand)
    # two free slots on two clusters: the placement is the brute-force optimum
    free = np.zeros(view.n_clusters, dtype=np.int64)
    free[[0, away]] = [1, 2]
    got = part.place(view, tasks, free.copy())
    cost = est.copy()
    cost[:, free == 0] = np.inf
    assert placed_vector(cost, got) == brute_force(cost[:, free > 0], free[free > 0])
    assert np.bincount(got[got >= 0], minlength=view.n_clusters).tolist() == free.tolist()


def test_iridium_program_matches_the_hand_solution():
    # Site A: 100 MB, uplink 10, downlink 20; site B: 300 MB, uplink 30, downlink 5.
    # S = 400. With r_A = a, r_B = 1 - a:
    #   upload A   100 (1 - a) / 10 = 10 - 10a     download A  a * 300 / 20 = 15a
    #   upload B   300 a / 30       = 10a          download B  (1 - a) 100 / 5 = 20 - 20a
    # For a in [0, 1], 15a >= 10a and 20 - 20a >= 10 - 10a, so T = max(15a, 20 - 20a),
    # smallest where 15a = 20 - 20a: a = 4/7, T = 60/7.
    r, t = reduce_fractions(np.array([100.0, 300.0]), np.array([10.0, 30.0]),
                            np.array([20.0, 5.0]))
    assert r == pytest.approx([4 / 7, 3 / 7])
    assert t == pytest.approx(60 / 7)
    # With room for only 2 of 7 tasks at A (r_A <= 2/7), B's download binds less: T is
    # max(10 - 10a, 20 - 20a) at a = 2/7, i.e. 20 - 40/7 = 100/7.
    r, t = reduce_fractions(np.array([100.0, 300.0]), np.array([10.0, 30.0]),
                            np.array([20.0, 5.0]), cap=np.array([2 / 7, 1.0]))
    assert r == pytest.approx([2 / 7, 5 / 7])
    assert t == pytest.approx(100 / 7)


def _iridium_lp(data, up, down, cap, total, t_fixed=None):
    """Iridium's program by HiGHS: minimise T, or at a fixed T the WAN volume."""
    s = data.size
    eye = np.eye(s)
    a_ub = np.vstack([np.column_stack([-eye * (data / up)[:, None], -np.ones(s)]),
                      np.column_stack([eye * ((total - data) / down)[:, None], -np.ones(s)])])
    b_ub = np.concatenate([-data / up, np.zeros(s)])
    obj = np.append(np.zeros(s), 1.0) if t_fixed is None else np.append(total - data, 0.0)
    t_bounds = (0.0, None) if t_fixed is None else (t_fixed, t_fixed)
    res = linprog(obj, A_ub=a_ub, b_ub=b_ub, A_eq=np.append(np.ones(s), 0.0)[None, :],
                  b_eq=[1.0], bounds=[(0.0, h) for h in cap] + [t_bounds], method="highs")
    assert res.status == 0
    return res


def test_iridium_closed_form_is_the_program_optimum_with_least_wan_volume():
    rng = np.random.default_rng(5)
    for case in range(400):
        n = int(rng.integers(1, 8))
        data = rng.random(n) * 100 * (rng.random(n) < 0.7)
        data[int(rng.integers(n))] += 1.0
        up, down = rng.uniform(1, 20, n), rng.uniform(1, 20, n)
        total = data.sum() * (1.0 if case % 3 else rng.uniform(1.0, 1.5))
        free = rng.integers(1, 6, n)
        tasks = int(rng.integers(1, free.sum() + 1))
        cap = np.minimum(free / tasks, 1.0) if case % 2 else np.ones(n)
        r, t = reduce_fractions(data, up, down, cap, total)
        best = _iridium_lp(data, up, down, cap, total)
        assert t == pytest.approx(best.fun, rel=1e-9, abs=1e-12)
        tol = 1e-9 * max(t, 1.0)
        assert r.sum() == pytest.approx(1.0) and np.all(r >= -1e-12)
        assert np.all(r <= cap + 1e-12)
        assert np.all(data * (1 - r) / up <= t + tol)
        assert np.all(r * (total - data) / down <= t + tol)
        least = _iridium_lp(data, up, down, cap, total, t_fixed=t * (1 + 1e-12) + 1e-15)
        assert r @ (total - data) == pytest.approx(least.fun, rel=1e-7, abs=1e-9)


def test_round_counts_respects_free_slots():
    assert round_counts(np.array([4 / 7, 3 / 7]), 7, np.array([10, 10])).tolist() == [4, 3]
    assert round_counts(np.array([0.5, 0.3, 0.2]), 4, np.array([5, 5, 5])).tolist() == [2, 1, 1]
    # largest remainders would give site 0 a third task; it has two slots
    assert round_counts(np.array([0.62, 0.38]), 4, np.array([2, 9])).tolist() == [2, 2]
    rng = np.random.default_rng(3)
    for _ in range(200):
        cap = rng.integers(0, 5, 6)
        n = int(rng.integers(0, cap.sum() + 1))
        r = rng.random(6)
        counts = round_counts(r / r.sum(), n, cap)
        assert counts.sum() == n and np.all(counts <= cap)


def test_iridium_places_within_free_slots_and_map_tasks_at_their_data():
    model = _ready_model(n_jobs=4)
    view = model.view
    tasks, _ = view.ready_in_order(view.alive_jobs)
    part = Iridium()
    part.prepare(view, np.random.default_rng(0), _model(view))
    free = np.zeros(view.n_clusters, dtype=np.int64)
    free[view.task_home[tasks[0]]] = 1
    free[np.flatnonzero(view.reachable)[:2]] += 2
    before = free.copy()
    got = part.place(view, tasks, free)
    placed = got[got >= 0]
    assert np.all(np.bincount(placed, minlength=view.n_clusters) <= before)
    assert placed.size == min(tasks.size, before.sum())
    assert np.array_equal(free, before - np.bincount(placed, minlength=view.n_clusters))
    pos, src, _ = view.inputs_of(tasks[:1])
    if np.unique(src).size == 1:        # a map task: at its data
        assert got[0] == view.task_home[tasks[0]]


def test_shuffle_time_closed_form_matches_the_program():
    assert shuffle_time([100.0, 300.0], [10.0, 30.0], [20.0, 5.0]) == pytest.approx(60 / 7)
    assert shuffle_time([0.0, 80.0, 0.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]) == 0.0
    rng = np.random.default_rng(11)
    rows = []
    for _ in range(200):
        n = int(rng.integers(1, 7))
        data = rng.random(n) * 100 * (rng.random(n) < 0.7)
        data[0] += 1.0
        up, down = rng.uniform(1, 20, n), rng.uniform(1, 20, n)
        assert shuffle_time(data, up, down) == pytest.approx(
            _iridium_lp(data, up, down, np.ones(n), data.sum()).fun, rel=1e-9, abs=1e-12)
        if n == 6:
            rows.append((data, up, down))
    data, up, down = (np.array(x) for x in zip(*rows, strict=True))
    # one problem per row, as plan_moves evaluates its candidates
    assert shuffle_time(data[:, :], up[0], down[0]) == pytest.approx(
        [reduce_fractions(d, up[0], down[0])[1] for d in data], rel=1e-9)


def _inputs(sites_mb: dict[int, list[float]]):
    where = np.concatenate([np.full(len(v), k) for k, v in sites_mb.items()])
    size = np.concatenate([np.asarray(v, dtype=float) for v in sites_mb.values()])
    return np.arange(size.size), where.astype(np.int64), size


def test_plan_moves_shortens_the_shuffle_within_the_lag():
    # Site 0 holds 100 MB behind a 2 MB/s gate, site 1 holds 100 MB behind 20 MB/s and
    # site 2 is empty, also at 20 MB/s: the shuffle waits on site 0's uplink (5 s).
    gate = np.array([2.0, 20.0, 20.0])
    raws, where, size = _inputs({0: [10.0] * 10, 1: [10.0] * 10})
    before = shuffle_time(np.bincount(where, weights=size, minlength=3), gate, gate)
    bandwidth = np.full((3, 3), 2.0)
    for time_left, budget in ((25.0, 50.0), (1000.0, 100.0)):
        leaving = np.zeros(3)
        moved, dst = plan_moves([(raws, where, size)], np.array([time_left]), gate, bandwidth,
                                np.ones(3, dtype=bool), leaving, chunk=0.05)
        assert moved.size and np.all(where[moved] == 0)     # only out of the slow site
        assert np.all(dst != 0)
        mb = size[moved].sum()
        assert mb <= budget + 1e-9 and leaving[0] == pytest.approx(mb)
        after = where.copy()
        after[moved] = dst
        assert shuffle_time(np.bincount(after, weights=size, minlength=3), gate, gate) < before
    # no time before the job arrives, or an unreachable source: nothing moves
    for time_left, reachable in ((1.0, np.ones(3, dtype=bool)), (1000.0, np.array([0, 1, 1]))):
        moved, _ = plan_moves([(raws, where, size)], np.array([time_left]), gate, bandwidth,
                              reachable.astype(bool), np.zeros(3), chunk=0.05)
        assert moved.size == 0


def test_iridium_data_placement_moves_raw_input_before_arrival():
    world = geo_world(n_jobs=10, scheduler="iridium", params={"data_placement": True})
    world["workload"]["data_lag"] = 120.0
    model = GeoModel(load_scenario(world), "iridium[data_placement=true]")
    result = model.run()
    assert result.jobs["finished"].all()
    assert result.summary["data_moved_mb"] > 0
    assert model.engine.raw_cluster.tolist() != model.workload.raw_cluster.tolist()
    # Without lag there is nothing to place: the run is plain Iridium's.
    world["workload"]["data_lag"] = 0.0
    plain = GeoModel(load_scenario(world), "iridium").run()
    placing = GeoModel(load_scenario(world), "iridium[data_placement=true]").run()
    pd.testing.assert_frame_equal(plain.jobs, placing.jobs)
    assert placing.summary["data_moved_mb"] == 0.0


@pytest.mark.parametrize("scheduler", ["flutter+mantri", "iridium[data_placement=true]",
                                       "pingan[epsilon=0.6]"])
def test_pair_tables_give_the_same_runs_with_or_without_a_pair_index(scheduler, monkeypatch):
    # Up to 512 clusters the modeler's pair tables list every pair's row, and a small
    # world's compiled readers take every pair's atoms and mean densely; a larger world
    # searches the pairs with their own rows. All give the same decisions, here on one
    # small world with the index and the dense copies turned off.
    world = geo_world(n_jobs=25, scheduler=scheduler.split("[")[0])
    world["workload"]["data_lag"] = 120.0
    indexed = GeoModel(load_scenario(world), scheduler)
    first = indexed.run()
    assert indexed.policy.model.bandwidth_pairs.index.size > 0
    assert indexed.policy.model.dense_bandwidth().size > 0
    monkeypatch.setattr("geosim.modeler.DENSE_PAIRS_CLUSTERS", 0)
    monkeypatch.setattr("geosim.modeler.DENSE_PAIRS_BYTES", 0)
    searched = GeoModel(load_scenario(world), scheduler)
    second = searched.run()
    assert searched.policy.model.bandwidth_pairs.index.size == 0
    assert searched.policy.model.mean_rows(np.arange(3)).size == 0
    assert first.summary["copies_launched"] > 25
    for name in ("jobs", "tasks", "copies"):
        pd.testing.assert_frame_equal(getattr(first, name), getattr(second, name))
