"""How transfers share the WAN (``links.sharing``): hand-solved max-min cases and worlds."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from conftest import benchmark_module
from test_engine import MoveThenPin, PinTo, make_workload, two_cluster_scenario

from geosim import GeoModel, load_scenario
from geosim.engine import core
from geosim.engine.sharing import empty_memory, equal_shares, maxmin_shares
from geosim.engine.transfers import account_kernel
from geosim.invariants import InvariantError

NONE = np.empty(0, dtype=np.int64)


def solve(paths, cap, active=None, demand=None, rule="maxmin", moves=0, pair=None,
          memory=None, remember=False):
    """Bandwidths of transfers crossing ``paths`` (the last ``moves`` of them as moves).

    ``pair``: each transfer's route key for max-min's classes (default: none).
    ``memory``: max-min's memory of an allocation before (default: none); with
    ``remember``, the new memory is returned too.
    """
    n = len(paths)
    active = np.ones(n, dtype=bool) if active is None else np.asarray(active)
    demand = np.empty(0) if demand is None else np.asarray(demand, float)
    lists = [np.asarray(p, dtype=np.int64) for p in paths]
    flows, move_lists = lists[:n - moves], lists[n - moves:]

    def layout(group):
        starts = np.cumsum([0] + [p.size for p in group[:-1]]).astype(np.int64) if group \
            else NONE
        return (np.concatenate(group) if group else NONE), starts
    res, starts = layout(flows)
    move_res, move_starts = layout(move_lists)
    cap = np.asarray(cap, float)
    bw = np.empty(n)
    if rule == "maxmin":
        local = np.full(cap.size, -1, dtype=np.int64)
        pair = NONE if pair is None else np.asarray(pair, dtype=np.int64)
        memory = empty_memory(cap.size) if memory is None else memory
        memory = maxmin_shares(len(flows), res, starts, move_res, move_starts, cap, active,
                               demand, bw, local, pair, memory)
        assert (local == -1).all()          # the scratch is left as found
        if remember:
            return bw, memory
    else:
        users = np.bincount(np.concatenate(lists), minlength=cap.size)
        equal_shares(len(flows), res, starts, move_res, move_starts, users, cap, active, bw)
    return bw


def test_a_shared_bottleneck_is_split_evenly():
    assert solve([[0], [0, 1], [0, 2]], [30.0, 100.0, 100.0]).tolist() == [10.0, 10.0, 10.0]


def test_parking_lot():
    # A long flow crosses three links (1, 2, 1 MB/s), one short flow on each: the first
    # and last links are shared by two (0.5 each); the long flow's 0.5 leaves 1.5 on the
    # middle link to its short flow.
    bw = solve([[0, 1, 2], [0], [1], [2]], [1.0, 2.0, 1.0])
    np.testing.assert_allclose(bw, [0.5, 0.5, 1.5, 0.5], rtol=1e-15)


def test_bandwidth_a_flow_cannot_use_goes_to_the_others():
    # A crosses a 10 and a 2 MB/s link, B the 10 MB/s link only. Max-min: A is held to 2
    # by its second link, B takes the 8 left. Equal sharing gives B 10 / 2 and loses 3.
    paths, cap = [[0, 1], [0]], [10.0, 2.0]
    assert solve(paths, cap).tolist() == [2.0, 8.0]
    assert solve(paths, cap, rule="equal").tolist() == [2.0, 5.0]


def test_an_inactive_transfer_takes_nothing():
    paths, cap = [[0], [0]], [4.0]
    assert solve(paths, cap, active=[False, True]).tolist() == [0.0, 4.0]
    assert solve(paths, cap, active=[False, True], rule="equal").tolist() == [0.0, 2.0]


def test_a_transfer_that_asks_less_leaves_the_rest():
    bw = solve([[0], [0], [0, 1]], [10.0, 3.0], demand=[1.0, np.inf, np.inf])
    np.testing.assert_allclose(bw, [1.0, 6.0, 3.0], rtol=1e-15)


def test_moves_and_flows_share_one_allocation():
    # The second and third transfers are raw-input moves: the same answer as flows.
    paths, cap = [[0, 1, 2], [0], [1], [2]], [1.0, 2.0, 1.0]
    np.testing.assert_array_equal(solve(paths, cap, moves=2), solve(paths, cap))


@pytest.mark.parametrize("seed", range(10))
def test_equal_sharing_is_the_smallest_share_on_each_path(seed):
    # Against its definition: capacity over users (inactive transfers included) on every
    # resource, the path's minimum, 0 for an inactive transfer; moves after flows.
    rng = np.random.default_rng(seed)
    n_res, n = 12, int(rng.integers(1, 30))
    paths = [rng.choice(n_res, size=int(rng.integers(1, 5)), replace=False) for _ in range(n)]
    cap, active = rng.uniform(1.0, 50.0, n_res), rng.random(n) < 0.8
    moves = int(rng.integers(0, n + 1))
    users = np.bincount(np.concatenate(paths), minlength=n_res)
    share = cap / np.maximum(users, 1)
    want = np.array([share[p].min() for p in paths]) * active
    got = solve(paths, cap, active=active, rule="equal", moves=moves)
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("seed", range(5))
def test_traffic_is_accounted_alike_by_sweep_and_by_transfers(seed):
    # The counters are flushed by a sweep when the world is small next to its transfers,
    # else transfer by transfer: the same sums, and the scratch left zeroed.
    rng = np.random.default_rng(seed)
    n_flow, n_res = 40, 30
    src, dst = rng.integers(0, 8, n_flow), rng.integers(0, 8, n_flow)
    hops = [rng.choice(n_res, size=int(rng.integers(1, 4)), replace=False)
            for _ in range(n_flow)]
    res = np.concatenate(hops).astype(np.int64)
    starts = np.cumsum([0] + [h.size for h in hops[:-1]]).astype(np.int64)
    moved = rng.uniform(0.0, 5.0, n_flow) * (rng.random(n_flow) < 0.9)
    results = []
    for n_clusters, n_counted in ((8, n_res), (400, 4 * res.size)):   # sweep, follow
        traffic = tuple(np.zeros(n) for n in (n_clusters,) * 4 + (n_res - 4,))
        scratch = (np.zeros(n_clusters), np.zeros(n_clusters), np.zeros(n_counted))
        total = account_kernel(src, dst, moved, res, starts, 2.0, traffic, *scratch)
        assert not any(a.any() for a in scratch)
        results.append((total, [a[:8].tolist() for a in traffic[:4]], traffic[4].tolist()))
    assert results[0] == results[1]
    assert results[0][1][2] == np.bincount(src, weights=moved, minlength=8).tolist()


def random_paths(rng, n_res, n, longest):
    """``n`` paths over distinct resources among ``n_res``, of 1 to ``longest`` each."""
    return [rng.choice(n_res, size=int(rng.integers(1, min(n_res, longest) + 1)),
                       replace=False) for _ in range(n)]


@pytest.mark.parametrize("seed", range(40))
def test_random_allocations_are_max_min_fair(seed):
    # Max-min fairness is unique and equivalent to: every transfer crosses a full resource
    # on which it gets the most, or gets its demand. Check it, and feasibility, exactly.
    rng = np.random.default_rng(seed)
    n_res, n = int(rng.integers(1, 12)), int(rng.integers(1, 40))
    paths = random_paths(rng, n_res, n, 4)
    cap = rng.uniform(0.5, 20.0, n_res).round(2)
    active = rng.random(n) < 0.85
    demand = np.where(rng.random(n) < 0.3, rng.uniform(0.1, 5.0, n), np.inf)
    bw = solve(paths, cap, active, demand)
    load = np.zeros(n_res)
    top = np.zeros(n_res)
    for j, p in enumerate(paths):
        load[p] += bw[j]
        top[p] = np.maximum(top[p], bw[j])
    assert (load <= cap * (1 + 1e-12)).all()
    assert (bw[~active] == 0.0).all()
    assert (bw <= demand * (1 + 1e-12)).all()
    for j in np.flatnonzero(active):
        p = paths[j]
        held = (load[p] >= cap[p] * (1 - 1e-12)) & (bw[j] >= top[p] * (1 - 1e-12))
        assert held.any() or bw[j] >= demand[j] * (1 - 1e-12), j


@pytest.mark.parametrize("seed", range(30))
def test_transfers_of_one_route_filled_as_a_class_get_the_same_rates_bit_for_bit(seed):
    # Many transfers on few routes (flows and moves), some inactive, capacities that are
    # not round: filling each route's transfers as one class must give every transfer
    # exactly the rate it gets filled one by one, and a class's transfers one rate.
    rng = np.random.default_rng(seed)
    n_res, n_routes = int(rng.integers(2, 30)), int(rng.integers(1, 12))
    routes = random_paths(rng, n_res, n_routes, 6)
    n = int(rng.integers(1, 200))
    route = rng.integers(0, n_routes, n)
    moves = int(rng.integers(0, n + 1))
    paths = [routes[r] for r in route]
    cap = rng.uniform(0.1, 50.0, n_res) * np.pi
    active = rng.random(n) < 0.9
    one_by_one = solve(paths, cap, active, moves=moves)
    grouped = solve(paths, cap, active, moves=moves, pair=route)
    assert grouped.tobytes() == one_by_one.tobytes()
    for r in range(n_routes):
        on = (route == r) & active
        assert np.unique(grouped[on]).size <= 1


def test_groups_are_filled_apart_and_an_untouched_one_keeps_its_rates():
    # Routes 0 and 1 share resource 1; route 2 is alone on resources 3 and 4.
    routes = {0: [0, 1], 1: [1, 2], 2: [3, 4]}
    cap = np.array([3.0, 10.0, 4.0, 6.0, 9.0])
    pair = [0, 0, 1, 2, 2]
    bw, memory = solve([routes[p] for p in pair], cap, pair=pair, remember=True)
    assert bw.tolist() == [1.5, 1.5, 4.0, 3.0, 3.0]
    # The memory holds each route's transfers and rate; mark route 2's rate.
    mult, rate = memory[2], memory[3]
    assert mult[:3].tolist() == [2, 1, 2] and rate.tolist() == [1.5, 4.0, 3.0]
    rate[2] = 7.0
    # One more transfer on route 1 touches routes 0 and 1's group only: route 2's rate is
    # taken from the memory (the mark shows it), the others' are filled anew.
    pair = [0, 0, 1, 1, 2, 2]
    bw, memory = solve([routes[p] for p in pair], cap, pair=pair, memory=memory,
                       remember=True)
    assert bw.tolist() == [1.5, 1.5, 2.0, 2.0, 7.0, 7.0]
    # A bandwidth sample changing resource 4 touches route 2's group: filled anew.
    cap = cap.copy()
    cap[4] = 5.0
    bw, memory = solve([routes[p] for p in pair], cap, pair=pair, memory=memory,
                       remember=True)
    assert bw.tolist() == [1.5, 1.5, 2.0, 2.0, 2.5, 2.5]
    # Route 0 ends: resource 1, which route 1 shares, frees capacity for it.
    memory[3][:] = -1.0
    bw = solve([routes[p] for p in pair[2:]], cap, pair=pair[2:], memory=memory)
    assert bw.tolist() == [2.0, 2.0, -1.0, -1.0]      # route 1 is held by resource 2


@pytest.mark.parametrize("seed", range(40))
def test_an_allocation_from_its_memory_equals_a_whole_one_bit_for_bit(seed):
    # Transfers start and end, sources become unreachable and reachable again, link
    # bandwidths are sampled anew: at every change the allocation that fills only the
    # groups the change touched must equal a whole allocation to the last bit.
    rng = np.random.default_rng(seed)
    n_res, n_routes = int(rng.integers(4, 40)), int(rng.integers(2, 25))
    routes = random_paths(rng, n_res, n_routes, 4)
    cap = (rng.uniform(0.1, 50.0, n_res) * np.pi).round(int(rng.integers(0, 3)))
    cap[cap == 0.0] = 1.0
    route = list(rng.integers(0, n_routes, int(rng.integers(0, 30))))
    active = list(rng.random(len(route)) < 0.9)
    memory = None
    for _ in range(25):
        change = rng.integers(0, 4)
        if change == 0 or not route:
            k = int(rng.integers(1, 6))
            route += list(rng.integers(0, n_routes, k))
            active += [True] * k
        elif change == 1:
            drop = rng.random(len(route)) < 0.3
            route = [r for r, d in zip(route, drop, strict=True) if not d]
            active = [a for a, d in zip(active, drop, strict=True) if not d]
        elif change == 2:
            flip = rng.random(len(route)) < 0.2
            active = [a != f for a, f in zip(active, flip, strict=True)]
        else:
            cap = cap.copy()
            cap[rng.integers(0, n_res)] *= rng.choice([0.5, 2.0])
        paths = [routes[r] for r in route]
        whole = solve(paths, cap, active, pair=route)
        bw, memory = solve(paths, cap, active, pair=route, memory=memory, remember=True)
        assert bw.tobytes() == whole.tobytes()


@pytest.mark.parametrize("seed", range(20))
def test_no_transfer_gets_less_under_max_min_than_under_equal_sharing(seed):
    # Each transfer's max-min rate is at least the smallest of capacity over users on its
    # resources (the level at which progressive filling can first freeze it), and equal
    # sharing gives it at most that. So where a scheduler is slower under max-min, the
    # cause is in what it decided, not in a transfer's rate at the same instant.
    rng = np.random.default_rng(100 + seed)
    n_res, n = int(rng.integers(1, 12)), int(rng.integers(1, 40))
    paths = random_paths(rng, n_res, n, 4)
    cap = rng.uniform(0.5, 20.0, n_res).round(2)
    active = rng.random(n) < 0.85
    maxmin = solve(paths, cap, active)
    equal = solve(paths, cap, active, rule="equal")
    assert (maxmin >= equal * (1 - 1e-12)).all()


def path_world(tmp_path, sharing="maxmin", transfer="fetch"):
    """Clusters 0 - 1 - 2 in a line, 2 MB/s links, gates that never limit."""
    graph = nx.path_graph(3)
    for node in graph:
        graph.nodes[node].update(x=float(node), y=0.0)
    for u, v in graph.edges:
        graph.edges[u, v]["length"] = 1.0
    nx.write_graphml(graph, tmp_path / "line.graphml")
    tier = {"slots": 4, "power_mean": 10.0, "power_rsd": 0.0, "gate_ratio": 1.0,
            "outage_probability": 0.0}
    return load_scenario({
        "run": {"seed": 1},
        "topology": {"generator": "file", "file": str(tmp_path / "line.graphml")},
        "tiers": {"large": tier, "medium": tier, "small": tier},
        "clusters": {"vm_bandwidth": 1000.0, "power_redraw_interval": 0.0},
        "availability": {"enabled": False}, "outages": {"enabled": False},
        "links": {"bandwidth_mean": 2.0, "bandwidth_rsd": 0.0, "redraw_interval": 0.0,
                  "sharing": sharing, "transfer": transfer},
        "workload": {"kind": "single", "n_jobs": 1},
    })


@pytest.mark.parametrize(("sharing", "completion"), [("equal", 20.0), ("maxmin", 10.0)])
def test_a_transfer_from_an_unreachable_cluster_leaves_the_link_to_the_others(
        tmp_path, sharing, completion):
    # Job 0 reads 20 MB from cluster 1, job 1 20 MB from cluster 2 (unreachable until
    # 100 s), both on cluster 0: both cross link 1-0. Equal sharing counts the stalled
    # transfer, so job 0 gets 1 MB/s (20 s); max-min gives it the whole 2 MB/s (10 s).
    wl = make_workload([0.0, 0.0], [10.0, 10.0], raw=[[(1, 20.0)], [(2, 20.0)]])
    model = GeoModel(path_world(tmp_path, sharing), PinTo(0), workload=wl,
                     check_invariants=True)
    while not model.done:
        model.engine.set_reachable([True, True, model.engine.time >= 100.0])
        model.step()
    assert model.engine.job_done[0] == pytest.approx(completion)
    assert model.engine.job_done[1] == pytest.approx(110.0)


def test_the_equal_active_rule_of_the_mechanisms_benchmark_leaves_out_stalled_transfers(
        tmp_path, monkeypatch):
    # benchmarks/sharing_mechanisms.py's "equal-active" rule replaces the engine's
    # allocation: equal shares among the active transfers only. In the case above it
    # gives job 0 the whole link, as max-min does (it runs with the engine's contract).
    bench = benchmark_module("sharing_mechanisms", monkeypatch)
    monkeypatch.setattr(core, "allocate", bench.allocate_equal_active)
    monkeypatch.setattr(core.Engine, "compiled_subspans", False)
    wl = make_workload([0.0, 0.0], [10.0, 10.0], raw=[[(1, 20.0)], [(2, 20.0)]])
    model = GeoModel(path_world(tmp_path, "equal"), PinTo(0), workload=wl)
    while not model.done:
        model.engine.set_reachable([True, True, model.engine.time >= 100.0])
        model.step()
    assert model.engine.job_done[0] == pytest.approx(10.0)
    assert model.engine.job_done[1] == pytest.approx(110.0)


@pytest.mark.parametrize(("sharing", "completion"), [("equal", 20.0), ("maxmin", 17.5)])
def test_a_streamed_input_uses_no_more_than_processing_needs(sharing, completion):
    # Stream mode over one 2 MB/s link. Job 0 processes for 10 s and streams 5 MB: it can
    # use 0.5 MB/s. Job 1 (0.1 s of processing) reads 30 MB. Equal: 1 MB/s each, so job 1
    # has 10 MB at 10 s and needs 10 s more at 2 MB/s: 20 s. Max-min: job 1 gets 1.5 MB/s,
    # 15 MB at 10 s, then 7.5 s: 17.5 s. Job 0 ends at 10 s either way.
    wl = make_workload([0.0, 0.0], [100.0, 1.0], raw=[[(1, 5.0)], [(1, 30.0)]])
    scenario = two_cluster_scenario().with_overrides(
        {"links.transfer": "stream", "links.sharing": sharing})
    result = GeoModel(scenario, PinTo(0), workload=wl, check_invariants=True).run()
    np.testing.assert_allclose(result.jobs["completion"], [10.0, completion])


def test_max_min_sharing_is_the_default():
    assert two_cluster_scenario()["links"]["sharing"] == "maxmin"


def test_the_invariants_catch_an_allocation_that_is_not_max_min(tmp_path, monkeypatch):
    # Planted: the engine allocates by equal shares while the world asks for max-min.
    import geosim.engine.core as core
    real = core.allocate
    monkeypatch.setattr(core, "allocate",
                        lambda flows, src, dst, cap, reach, maxmin, demand, local, memory:
                        real(flows, src, dst, cap, reach, False, demand, local, memory))
    wl = make_workload([0.0, 0.0], [10.0, 10.0], raw=[[(1, 20.0)], [(2, 20.0)]])
    model = GeoModel(path_world(tmp_path), PinTo(0), workload=wl, check_invariants=True)
    model.engine.set_reachable([True, True, False])
    with pytest.raises(InvariantError, match="'sharing'.*flow 0 got 1 MB/s"):
        model.step()


@pytest.mark.parametrize(("timing", "completion"), [("event", 32.65), ("slot", 33.0)])
def test_event_timing_frees_a_share_at_the_instant_an_input_arrives(timing, completion):
    # 15.3 MB and 50 MB from cluster 1 over one 2 MB/s link, 1 MB/s each. The first has
    # arrived at 15.3 s; the other then has 34.7 MB left at 2 MB/s: 32.65 s. Slotted, the
    # freed share waits for the boundary at 16 s: 16 MB by then, 17 s more, 33 s.
    wl = make_workload([0.0], [100.0], raw=[[(1, 15.3), (1, 50.0)]])
    scenario = two_cluster_scenario().with_overrides({"run.timing": timing})
    result = GeoModel(scenario, PinTo(0), workload=wl, check_invariants=True).run()
    assert result.jobs["completion"][0] == pytest.approx(completion, rel=1e-12)


def test_event_timing_runs_a_move_and_a_copy_on_one_link_exactly():
    # Job 0 reads 30 MB from cluster 1 while job 1's 10.5 MB (announced at 0) moves over
    # the same 2 MB/s link: 1 MB/s each until the move ends at 10.5 s, then 2 MB/s for
    # job 0's last 19.5 MB: done at 20.25 s. Job 1 then arrives at 100 with local input.
    wl = make_workload([0.0, 100.0], [100.0, 100.0], raw=[[(1, 30.0)], [(1, 10.5)]])
    scenario = two_cluster_scenario().with_overrides(
        {"workload.data_lag": 100.0, "run.timing": "event"})
    model = GeoModel(scenario, MoveThenPin(0), workload=wl, check_invariants=True)
    result = model.run()
    np.testing.assert_allclose(result.jobs["completion"], [20.25, 110.0], rtol=1e-12)
    assert model.engine.raw_cluster.tolist() == [1, 0]

