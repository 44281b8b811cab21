"""Flutter's exact lexicographic placement and Iridium's shuffle program."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import geo_world
from scipy.optimize import linear_sum_assignment, linprog

from geosim import GeoModel, load_scenario, make_scheduler
from geosim.modeler import PairTable, PerformanceModel
from geosim.schedulers.base import Scheduler
from geosim.schedulers.flutter import Flutter, _cheapest_by_bounds, _place_stages, lexmin_assign
from geosim.schedulers.iridium import (
    Iridium,
    place_reduce,
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


def _stage_instance(rng: np.random.Generator) -> dict:
    """A random call of Flutter's stage loop, small values so that ties are common."""
    m = int(rng.choice([2, 4, 7, 30]))
    n_tasks = int(rng.integers(1, 9))
    jobs = np.sort(rng.integers(0, 3, n_tasks)).astype(np.int64)
    counts = rng.choice([0, 1, 1, 2, 3, 5], n_tasks)
    pos = np.repeat(np.arange(n_tasks), counts).astype(np.int64)
    bw = rng.choice([0.0, 1.0, 2.0, 2.0, 4.0, 8.0], (m, m))
    if rng.random() < 0.1:
        bw[rng.integers(m), rng.integers(m)] = np.nan
    if rng.random() < 0.1:
        bw[rng.integers(m), rng.integers(m)] = np.inf
    size = rng.choice([0.0, 1.0, 2.0, 3.0, 8.0], pos.size)
    speed = np.repeat(rng.choice([0.5, 1.0, 2.0], (2, 1)), m, axis=1)
    return {"jobs": jobs, "pos": pos, "src": rng.integers(0, m, pos.size).astype(np.int64),
            "size": size, "bw": bw, "speed": speed,
            "types": rng.integers(0, 2, n_tasks).astype(np.int64),
            "work": rng.choice([0.0, 1.0, 4.0], n_tasks),
            "free": rng.choice([0, 0, 1, 1, 2], m).astype(np.int64)}


def _pair_table(bw: np.ndarray) -> PairTable:
    """Every pair with a row of its own, in ``src * n + dst`` order."""
    m = bw.shape[0]
    return PairTable(np.arange(m * m, dtype=np.int64), np.full(m, -1, dtype=np.int64),
                     np.ones(m), m * m, np.concatenate([bw.ravel(), np.ones(m)]))


def _lists(m: int, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Empty lists of each source's fastest destinations, ``depth`` of them."""
    return np.empty((m, depth), dtype=np.int64), np.full(m, -1, dtype=np.int64)


def _run_stages(case: dict, depth: int, dense: bool) -> tuple[np.ndarray, np.ndarray]:
    """Flutter's stage loop on ``case``, the stages it hands back placed as Python does.

    ``depth`` 0 turns the pruned search off: every row is then computed whole.
    """
    jobs, pos, src, size = case["jobs"], case["pos"], case["src"], case["size"]
    table, free = _pair_table(case["bw"]), case["free"].copy()
    out = np.full(jobs.size, -1, dtype=np.int64)
    rows = case["bw"].ravel().copy() if dense else np.empty(0)
    top, n_top = _lists(free.size, max(depth, 1))
    at = 0
    while at < jobs.size:
        lo, hi, status = _place_stages(jobs, at, pos, src, size, table, rows, case["speed"],
                                       case["types"], case["work"], free, out, depth > 0,
                                       top, n_top)
        assert status in (0, 1)
        if status == 1:
            cost = np.zeros((hi - lo, free.size))
            for i in np.flatnonzero((pos >= lo) & (pos < hi)):
                with np.errstate(divide="ignore", invalid="ignore"):
                    b = case["bw"][src[i]]
                    v = np.where(b > 0, size[i] / b, np.inf)
                v[src[i]] = 0.0
                cost[pos[i] - lo] = np.maximum(cost[pos[i] - lo], v)
            cost += case["work"][lo:hi, None] / case["speed"][case["types"][lo:hi]]
            cost[:, free <= 0] = np.inf
            got = lexmin_assign(cost, free)
            out[lo:hi] = got
            free -= np.bincount(got[got >= 0], minlength=free.size)
        at = hi
    return out, free


@pytest.mark.parametrize("dense", [True, False])
def test_flutter_pruned_search_changes_no_placement(dense):
    """The search over each source's fastest destinations places as the whole rows do.

    Random stages with ties, zero, infinite and NaN bandwidths, inputs of size 0, tasks
    without inputs, several inputs at one cluster and clusters without free slots, the
    lists 1, 2 or 16 deep; depth 0 (the search off) computes every row whole.
    """
    rng = np.random.default_rng(7)
    settled = 0
    for _ in range(1500):
        case = _stage_instance(rng)
        depth = int(rng.choice([1, 2, 16]))
        got, free = _run_stages(case, depth, dense)
        want, want_free = _run_stages(case, 0, dense)
        assert got.tolist() == want.tolist()
        assert free.tolist() == want_free.tolist()
        bw = case["bw"]
        n = int(np.count_nonzero(case["jobs"] == case["jobs"][0]))
        best, _ = _cheapest_by_bounds(0, n, 0, case["pos"], case["src"], case["size"],
                                      _pair_table(bw), bw.ravel().copy() if dense else
                                      np.empty(0), case["speed"], case["types"], case["work"],
                                      case["free"], *_lists(bw.shape[0], depth),
                                      np.empty(bw.shape[0]),
                                      np.empty(bw.shape[0], dtype=np.int64))
        settled += best.size > 0
    assert settled > 1000                             # most stages need no whole matrix


def test_flutter_pruned_search_by_hand():
    """Three clusters, cluster 1 the fastest destination from everywhere."""
    bw = np.array([[0.0, 8.0, 2.0], [4.0, 0.0, 2.0], [1.0, 8.0, 0.0]])
    table, speed = _pair_table(bw), np.ones((1, 3))
    free = np.ones(3, dtype=np.int64)
    scratch = (np.empty(3), np.empty(3, dtype=np.int64))

    def search(pos, src, size, depth=16, free=free):
        pos = np.asarray(pos, dtype=np.int64)
        n = int(pos.max()) + 1
        return _cheapest_by_bounds(0, n, 0, pos, np.asarray(src, dtype=np.int64),
                                   np.asarray(size, dtype=float), table, np.empty(0), speed,
                                   np.zeros(n, dtype=np.int64), np.full(n, 3.0), free,
                                   *_lists(3, depth), *scratch)

    # one input at cluster 2: it stays there (3 s of compute, nothing to move)
    assert [x.tolist() for x in search([0], [2], [4.0])] == [[2], [3.0]]
    # 8 MB at cluster 0 and 8 MB at cluster 2: cluster 1 receives both at 8 MB/s (1 s),
    # cluster 0 would wait 8 s for cluster 2's, cluster 2 4 s for cluster 0's
    assert [x.tolist() for x in search([0, 0], [0, 2], [8.0, 8.0])] == [[1], [4.0]]
    # cluster 1 full: the next fastest is cluster 2 itself (4 s), whatever the depth
    full = np.array([1, 0, 1], dtype=np.int64)
    for depth in (1, 16):
        got = search([0, 0], [0, 2], [8.0, 8.0], depth=depth, free=full)
        assert [x.tolist() for x in got] == [[2], [7.0]]
    # an input of size 0 costs nothing anywhere: every cluster ties, cluster 0 is first
    assert [x.tolist() for x in search([0], [2], [0.0])] == [[0], [3.0]]


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


def _place_reduce_by_numpy(data, gate, free):
    """:func:`place_reduce` as NumPy calls: sites, their shares, fractions, counts, assignment."""
    sites = np.flatnonzero(free > 0)
    n = int(min(data.shape[0], free[sites].sum()))
    out = np.full(data.shape[0], -1, dtype=np.int64)
    if n == 0:
        return out
    share = data[:, sites].sum(axis=0)
    r, _ = reduce_fractions(share, gate[sites], gate[sites], free[sites] / n, data.sum())
    want = r * n
    counts = np.minimum(np.floor(want + 1e-9).astype(np.int64), free[sites])
    rest = want - counts
    while n - counts.sum() > 0:
        room = np.flatnonzero(counts < free[sites])
        order = room[np.argsort(-rest[room], kind="stable")][:n - counts.sum()]
        counts[order] += 1
        rest[order] -= 1.0
    slot_site = np.repeat(sites, counts)
    rows, cols = linear_sum_assignment(-data[:, slot_site])
    out[rows] = slot_site[cols]
    return out


def test_place_reduce_places_as_the_numpy_composition():
    # The compiled sites, shares, fractions and counts give the NumPy steps' placement
    # exactly: ties in data, gates and free slots, one site, stages wider than the room,
    # 1 000 clusters.
    rng = np.random.default_rng(11)
    for case in range(600):
        n = int(rng.choice([2, 3, 7, 40, 1000]))
        rows = int(rng.integers(1, 30))
        data = np.zeros((rows, n))
        held = rng.choice(n, size=min(n, int(rng.integers(1, 6))), replace=False)
        for i in range(rows):
            at = rng.choice(held, size=int(rng.integers(1, held.size + 1)))
            np.add.at(data[i], at, rng.choice([1.0, 2.5, 64.0]) if case % 2
                      else rng.random(at.size) * 100)
        gate = rng.choice([5.0, 20.0, 125.0], n) if case % 3 else rng.uniform(1, 200, n)
        free = rng.integers(0, 4, n) * (rng.random(n) < (0.02 if case % 5 == 0 else 0.6))
        if case % 7 == 0:
            free[:] = 0
            free[int(rng.integers(n))] = int(rng.integers(1, 40))
        want = _place_reduce_by_numpy(data, gate, free)
        assert place_reduce(data, gate, free).tolist() == want.tolist(), case


def test_round_counts_breaks_equal_remainders_by_index():
    assert round_counts(np.full(4, 0.25), 2, np.full(4, 3)).tolist() == [1, 1, 0, 0]
    # site 1 is full after the floors: the next remainders in index order take the rest
    assert round_counts(np.array([0.3, 0.4, 0.3]), 3, np.array([2, 1, 2])).tolist() == [1, 1, 1]


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
