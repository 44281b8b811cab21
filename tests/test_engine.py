"""Hand-computed worlds: every flowtime below is worked out on paper."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import closed_world

from geosim import GeoModel, load_scenario
from geosim.engine import ID_MAX, SchedulingError, Table, in_sorted
from geosim.errors import GeosimError
from geosim.schedulers import Scheduler
from geosim.workload import Workload


def make_workload(arrival, work, raw=None, edges=()):
    """Jobs of one task each unless ``edges`` joins tasks (then one job holds them all)."""
    n = len(work)
    if edges:
        task_ptr = [0, n]
        arrival = arrival[:1]
    else:
        task_ptr = list(range(n + 1))
    raw = raw or [[] for _ in range(n)]
    raw_ptr = np.cumsum([0] + [len(r) for r in raw])
    return Workload(
        arrival=np.asarray(arrival, float), weight=np.ones(len(arrival)),
        task_ptr=np.asarray(task_ptr), task_work=np.asarray(work, float),
        task_type=np.zeros(n, dtype=np.int32), type_names=("t",),
        edge_src=np.array([e[0] for e in edges], dtype=np.int64),
        edge_dst=np.array([e[1] for e in edges], dtype=np.int64),
        edge_size=np.array([e[2] for e in edges], dtype=float),
        raw_ptr=raw_ptr, raw_cluster=np.array([c for r in raw for c, _ in r], dtype=np.int64),
        raw_size=np.array([s for r in raw for _, s in r], dtype=float))


class PinTo(Scheduler):
    """Test policy: every ready task, in id order, on a fixed cluster (whole slots)."""

    name = "pin"

    def __init__(self, cluster: int = 0, share: float = 1.0):
        self.cluster, self.share = cluster, share

    def decide(self, view, actions):
        spare = view.free_units(self.share)[self.cluster]
        for job in view.alive_jobs:
            for task in view.ready_tasks(int(job)):
                if spare <= 0:
                    return
                actions.launch(int(task), self.cluster, self.share)
                spare -= 1


def two_cluster_scenario(link_bw=2.0, vm_bandwidth=1000.0, slots=4):
    tier = {"slots": slots, "power_mean": 10.0, "power_rsd": 0.0, "gate_ratio": 1.0,
            "outage_probability": 0.0}
    return load_scenario({
        "run": {"seed": 1},
        "topology": {"generator": "barabasi_albert", "n_clusters": 2, "m": 1},
        "tiers": {"large": tier, "medium": tier, "small": tier},
        "clusters": {"vm_bandwidth": vm_bandwidth, "power_redraw_interval": 0.0},
        "availability": {"enabled": False}, "outages": {"enabled": False},
        "links": {"bandwidth_mean": link_bw, "bandwidth_rsd": 0.0, "redraw_interval": 0.0},
        "workload": {"kind": "single", "n_jobs": 1},
    })


def test_fifo_hand_computed_flowtimes():
    # Two slots of power 1. Job 0 (work 3) starts at 0 and ends at 3. Job 1 arrives at 0.5,
    # is seen at the boundary 1, ends at 3: flowtime 2.5. Job 2 arrives at 1.2; both slots
    # are busy until 3, so it starts at 3 and ends at 7: flowtime 5.8.
    scenario = load_scenario(closed_world(slots=2))
    wl = make_workload([0.0, 0.5, 1.2], [3.0, 2.0, 4.0])
    result = GeoModel(scenario, "fifo", workload=wl).run()
    np.testing.assert_allclose(result.jobs["completion"], [3.0, 3.0, 7.0])
    np.testing.assert_allclose(result.jobs["flowtime"], [3.0, 2.5, 5.8])
    assert result.summary["copies_launched"] == 3


def test_completion_is_interpolated_inside_the_slot():
    scenario = load_scenario(closed_world(slots=1))
    wl = make_workload([0.0], [2.5])
    result = GeoModel(scenario, "fifo", workload=wl).run()
    assert result.jobs["completion"][0] == pytest.approx(2.5)


def test_remote_input_rate_is_the_transfer_bottleneck():
    # Power 10 MIPS, work 100 MI: 10 s of processing. 50 MB read over a 2 MB/s link: 25 s.
    wl = make_workload([0.0], [100.0], raw=[[(1, 50.0)]])
    result = GeoModel(two_cluster_scenario(), PinTo(0), workload=wl).run()
    assert result.jobs["completion"][0] == pytest.approx(25.0)
    assert result.summary["wan_mb"] == pytest.approx(50.0)
    # Local input: processing bound, 10 s.
    wl = make_workload([0.0], [100.0], raw=[[(0, 50.0)]])
    result = GeoModel(two_cluster_scenario(), PinTo(0), workload=wl).run()
    assert result.jobs["completion"][0] == pytest.approx(10.0)
    assert result.summary["wan_mb"] == 0.0


def with_transfer(scenario, mode):
    return scenario.with_overrides({"links.transfer": mode})


@pytest.mark.parametrize(("mode", "completion"), [("fetch", 35.0), ("stream", 50.0)])
def test_fetched_inputs_free_the_link_when_they_have_arrived(mode, completion):
    # One task (10 s of processing) reads 20 MB and 50 MB from cluster 1 over a 2 MB/s link,
    # 1 MB/s each. Fetch: the 20 MB input has arrived at 20 s; the other then gets the whole
    # link for its last 30 MB: 35 s. Stream: both inputs advance in lockstep with the copy
    # at the slower one's 1/50 per second: 50 s.
    wl = make_workload([0.0], [100.0], raw=[[(1, 20.0), (1, 50.0)]])
    result = GeoModel(with_transfer(two_cluster_scenario(), mode), PinTo(0), workload=wl).run()
    assert result.jobs["completion"][0] == pytest.approx(completion)
    assert result.summary["wan_mb"] == pytest.approx(70.0)


@pytest.mark.parametrize(("mode", "completion"), [("fetch", 18.0), ("stream", 20.0)])
def test_an_unreachable_source_stalls_only_what_has_not_arrived(mode, completion):
    # 10 s of processing, 10 MB from cluster 1 at 2 MB/s; cluster 1 is unreachable over
    # [2, 12). Fetch: 4 MB have arrived by 2 s, so processing goes on to 40% (at 4 s) and
    # waits; from 12 s the rest arrives by 15 s, ahead of processing, which ends at 18 s.
    # Stream: 20% done at 2 s, stalled until 12 s, 8 s more: 20 s.
    wl = make_workload([0.0], [100.0], raw=[[(1, 10.0)]])
    model = GeoModel(with_transfer(two_cluster_scenario(), mode), PinTo(0), workload=wl)
    while not model.done:
        model.engine.set_reachable([True, not 2.0 <= model.engine.time < 12.0])
        model.step()
    assert model.engine.job_done[0] == pytest.approx(completion)


def test_concurrent_transfers_share_the_link_and_the_gates():
    # Two transfers over one 2 MB/s link: 1 MB/s each, 50 s.
    wl = make_workload([0.0, 0.0], [100.0, 100.0], raw=[[(1, 50.0)], [(1, 50.0)]])
    result = GeoModel(two_cluster_scenario(), PinTo(0), workload=wl).run()
    np.testing.assert_allclose(result.jobs["completion"], [50.0, 50.0])
    # Gates of 1.0 x 2 slots x 0.25 MB/s = 0.5 MB/s: 0.25 MB/s each, 200 s.
    scenario = two_cluster_scenario(vm_bandwidth=0.25, slots=2)
    result = GeoModel(scenario, PinTo(0), workload=wl).run()
    np.testing.assert_allclose(result.jobs["completion"], [200.0, 200.0])


def test_intermediate_data_is_read_where_the_parent_ran():
    # Task 0 (local input) on cluster 1: 10 s. Task 1 reads 20 MB of task 0's output; run on
    # cluster 0 it transfers at 2 MB/s -> 10 s, released at the boundary 10: ends at 20.
    class Split(Scheduler):
        name = "split"

        def decide(self, view, actions):
            for job in view.alive_jobs:
                for task in view.ready_tasks(int(job)):
                    actions.launch(int(task), 1 if task == 0 else 0)

    wl = make_workload([0.0], [100.0, 50.0], raw=[[(1, 10.0)], []], edges=[(0, 1, 20.0)])
    result = GeoModel(two_cluster_scenario(), Split(), workload=wl).run()
    np.testing.assert_allclose(result.tasks["completion"], [10.0, 20.0])
    np.testing.assert_array_equal(result.tasks["cluster"], [1, 0])


def test_multitasking_shares_divide_the_slot():
    # Two copies at share 1/2 on the one slot each run at half speed: work 2 ends at 4.
    scenario = load_scenario(closed_world(slots=1))
    wl = make_workload([0.0, 0.0], [2.0, 2.0])
    result = GeoModel(scenario, PinTo(0, share=0.5), workload=wl).run()
    np.testing.assert_allclose(result.jobs["completion"], [4.0, 4.0])
    np.testing.assert_allclose(result.copies["slot_seconds"], [2.0, 2.0])


def test_first_copy_wins_and_siblings_are_killed_at_that_instant():
    # Slots of power 1; two copies of one task (work 5), the second launched at t=2 with
    # share 1: the first wins at 5, the second is killed at 5 having done 3 units (wasted).
    class TwoCopies(Scheduler):
        name = "two"

        def decide(self, view, actions):
            if view.time == 0:
                actions.launch(0, 0)
            elif view.time == 2:
                actions.launch(0, 0)

    scenario = load_scenario(closed_world(slots=2))
    result = GeoModel(scenario, TwoCopies(), workload=make_workload([0.0], [5.0])).run()
    copies = result.copies
    assert list(copies["outcome"]) == ["won", "lost"]
    np.testing.assert_allclose(copies["end"], [5.0, 5.0])
    np.testing.assert_allclose(copies["wasted"], [0.0, 3.0])
    executed, demanded, wasted = result.summary["executed_work"], 5.0, 3.0
    assert executed == pytest.approx(demanded + wasted)


def test_checkpoint_brings_copies_to_the_leader_and_survives_a_kill():
    # Two copies of a task (work 10) on slots of power 1, the second started at 4. At 6 the
    # job is checkpointed (leader at 6, laggard at 2 -> both 6, 2 units wasted), the leader is
    # killed; the survivor ends at 6 + 4 = 10.
    class Checkpointer(Scheduler):
        name = "ckpt"

        def decide(self, view, actions):
            if view.time == 0:
                self.first = actions.launch(0, 0)
            elif view.time == 4:
                actions.launch(0, 0)
            elif view.time == 6:
                actions.checkpoint(0)
                actions.kill(self.first)

    scenario = load_scenario(closed_world(slots=2))
    result = GeoModel(scenario, Checkpointer(), workload=make_workload([0.0], [10.0])).run()
    assert result.jobs["completion"][0] == pytest.approx(10.0)
    assert result.tasks["checkpoints"][0] == 1
    np.testing.assert_allclose(result.copies["wasted"], [0.0, 2.0])
    s = result.summary
    assert s["executed_work"] == pytest.approx(s["demanded_work"] + s["wasted_work"])


def test_engine_rejects_impossible_operations():
    scenario = load_scenario(closed_world(slots=1))

    class Greedy(Scheduler):
        name = "greedy"

        def decide(self, view, actions):
            actions.launch(0, 0)
            actions.launch(0, 0)   # the only slot is taken

    with pytest.raises(SchedulingError, match="0 free slots"):
        GeoModel(scenario, Greedy(), workload=make_workload([0.0], [5.0])).run()


def test_outage_kills_copies_and_the_task_restarts():
    # Cluster 0 fails at every 60 s trial (p = 1) and stays down a Gamma time. A copy of
    # work 40 started at 30 is killed at 60 (outcome 'failed'); the task runs again after
    # the outage and, needing 40 s of the next 60, completes.
    tier = {"slots": 2, "power_mean": 1.0, "power_rsd": 0.0, "outage_probability": 1.0}
    scenario = load_scenario({
        "topology": {"generator": "single"}, "tiers": {"small": tier},
        "clusters": {"power_redraw_interval": 0.0}, "availability": {"enabled": False},
        "outages": {"trial_interval": 60.0, "duration_shape": 1.0, "duration_scale": 5.0},
        "workload": {"kind": "single", "n_jobs": 1}})

    class Once(Scheduler):
        name = "once"

        def decide(self, view, actions):
            for job in view.alive_jobs:
                for task in view.ready_tasks(int(job)):
                    if view.reachable[0] and view.time >= 30:
                        actions.launch(int(task), 0)

    result = GeoModel(scenario, Once(), workload=make_workload([0.0], [40.0])).run()
    copies = result.copies
    assert copies["outcome"].iloc[0] == "failed"
    assert copies["end"].iloc[0] == pytest.approx(60.0)
    assert copies["outcome"].iloc[-1] == "won"
    assert result.jobs["finished"].all()


def test_a_run_that_cannot_finish_stops_with_a_clear_error(monkeypatch):
    import geosim.guards
    from geosim import GeosimError

    class Idle(Scheduler):
        name = "idle"

        def decide(self, view, actions):
            pass

    monkeypatch.setattr(geosim.guards, "STALL_SECONDS", 500.0)
    scenario = load_scenario(closed_world(slots=1))
    with pytest.raises(GeosimError, match="no task completed in 500 simulated seconds"):
        GeoModel(scenario, Idle(), workload=make_workload([0.0], [5.0])).run()


class MoveThenPin(PinTo):
    """Test policy: moves every announced job's raw input to its cluster, then pins there."""

    name = "move-then-pin"
    places_data = True

    def place_data(self, view, actions):
        for job in view.announced:
            raws, where, _ = view.raw_inputs(int(job))
            away = where != self.cluster
            actions.move_data(raws[away], np.full(int(away.sum()), self.cluster))


@pytest.mark.parametrize(("lag", "completion", "moved", "abandoned"),
                         [(30.0, 40.0, 50.0, 0), (10.0, 55.0, 0.0, 1), (0.0, 55.0, 0.0, 0)])
def test_raw_input_moved_before_arrival(lag, completion, moved, abandoned):
    # The job arrives at 30 and reads 50 MB stored on cluster 1; it runs on cluster 0
    # (10 s of processing). With 30 s of lag the 50 MB cross the 2 MB/s link by 25 s and
    # the input is local: done at 40. With 10 s only 20 MB have crossed at arrival: the
    # move is abandoned and the copy reads all 50 MB remotely (25 s): done at 55, having
    # moved 70 MB over the WAN. Without lag nothing is announced.
    wl = make_workload([30.0], [100.0], raw=[[(1, 50.0)]])
    scenario = two_cluster_scenario().with_overrides({"workload.data_lag": lag})
    result = GeoModel(scenario, MoveThenPin(0), workload=wl).run()
    assert result.jobs["completion"][0] == pytest.approx(completion)
    assert result.summary["data_moved_mb"] == pytest.approx(moved)
    assert result.summary["data_moves_abandoned"] == abandoned
    assert result.summary["wan_mb"] == pytest.approx({30.0: 50.0, 10.0: 70.0, 0.0: 50.0}[lag])


def test_a_move_shares_the_link_with_running_copies():
    # Job 0 (arrives at 0) reads 50 MB from cluster 1 while job 1's 50 MB, announced at 0
    # (lag 100), moves over the same 2 MB/s link: 1 MB/s each, both done at 50.
    wl = make_workload([0.0, 100.0], [100.0, 100.0], raw=[[(1, 50.0)], [(1, 50.0)]])
    scenario = two_cluster_scenario().with_overrides({"workload.data_lag": 100.0})
    model = GeoModel(scenario, MoveThenPin(0), workload=wl)
    result = model.run()
    np.testing.assert_allclose(result.jobs["completion"], [50.0, 110.0])
    assert model.engine.raw_cluster.tolist() == [1, 0]
    assert result.summary["wan_mb"] == pytest.approx(100.0)


def test_engine_rejects_impossible_moves():
    wl = make_workload([0.0, 50.0, 500.0], [10.0] * 3, raw=[[(1, 5.0)]] * 3)
    scenario = two_cluster_scenario().with_overrides({"workload.data_lag": 100.0})
    model = GeoModel(scenario, PinTo(0), workload=wl)
    e = model.engine
    e.arrive(0.0)
    assert e.announce(0.0).tolist() == [1]
    with pytest.raises(SchedulingError, match="has arrived"):
        e.start_moves(np.array([0]), np.array([0]))      # job 0 has arrived
    with pytest.raises(SchedulingError, match="not announced"):
        e.start_moves(np.array([2]), np.array([0]))      # job 2's data does not exist yet
    with pytest.raises(SchedulingError, match="cannot move"):
        e.start_moves(np.array([1]), np.array([1]))      # already there
    e.start_moves(np.array([1]), np.array([0]))
    with pytest.raises(SchedulingError, match="twice"):
        e.start_moves(np.array([1]), np.array([0]))


@pytest.mark.parametrize("pop,k", [(2, 1), (5, 4), (50, 3), (200, 199), (9_999, 300),
                                   (20_000, 10), (20_000, 1_000)])
def test_free_slots_are_drawn_as_generator_choice_draws_them(pop, k):
    # The whole-slot placement reproduces Generator.choice(free, k, replace=False) from one
    # vectorised draw of its bounded integers: the same picks, the stream left the same.
    from geosim.engine.draw import whole_slot_assign, whole_slot_plan
    for seed in range(3):
        ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
        used = np.zeros(pop + 3)
        used[[0, 2]] = 1.0                      # two slots taken, one past the cluster
        ptr = np.array([0, pop + 2, pop + 3])
        free = np.flatnonzero(used[:pop + 2] <= 1e-9)
        want = free[theirs.choice(free.size, k, replace=False)]
        clusters = np.zeros(k, dtype=np.int64)
        plan = whole_slot_plan(clusters, ptr, used, 1.0 - 1e-9)
        bad, _, _, highs = plan[-4:]
        assert bad == -1
        got = whole_slot_assign(*plan[:-4], ptr, ours.integers(0, highs + 1))
        np.testing.assert_array_equal(got, want)
        assert ours.bit_generator.state == theirs.bit_generator.state


def test_launches_spread_over_clusters_keep_each_clusters_order():
    # Copies asking for different clusters, interleaved: each cluster's copies take its
    # free slots in their order, clusters in ascending order (the draws' order).
    from geosim.engine.draw import whole_slot_assign, whole_slot_plan
    ptr = np.array([0, 4, 9, 12])
    used = np.zeros(12)
    used[[1, 5, 6]] = 1.0
    clusters = np.array([2, 0, 2, 1, 0], dtype=np.int64)
    plan = whole_slot_plan(clusters, ptr, used, 1.0 - 1e-9)
    assert plan[5] == -1
    ours, theirs = np.random.default_rng(7), np.random.default_rng(7)
    got = whole_slot_assign(*plan[:-4], ptr, ours.integers(0, plan[-1] + 1))
    want = np.empty(5, dtype=np.int64)
    want[[1, 4]] = np.array([0, 2, 3])[theirs.choice(3, 2, replace=False)]
    want[[3]] = 4 + np.array([0, 3, 4])[theirs.choice(3, 1, replace=False)]
    want[[0, 2]] = 9 + theirs.choice(3, 2, replace=False)
    np.testing.assert_array_equal(got, want)
    short = whole_slot_plan(np.full(4, 1, dtype=np.int64), ptr, used, 1.0 - 1e-9)
    assert tuple(short[5:8]) == (1, 3, 4)      # cluster 1 has 3 free slots, 4 asked


def test_launch_rejects_clusters_and_slots_that_do_not_fit():
    model = GeoModel(load_scenario(closed_world(slots=2)), PinTo(0),
                     workload=make_workload([0.0, 0.0], [5.0, 5.0]))
    e = model.engine
    e.arrive(0.0)
    with pytest.raises(IndexError, match="cluster 3"):
        e.launch_many(np.array([0]), np.array([3]))
    with pytest.raises(SchedulingError, match="1 copies but 2 clusters"):
        e.launch_many(np.array([0]), np.array([0, 0]))
    with pytest.raises(SchedulingError, match="cannot take share"):
        e.launch_many(np.array([0, 1]), np.array([0, 0]), slots=np.array([1, 1]))
    assert e.copies.n == 0 and not e.slot_used.any()
    ids = e.launch_many(np.array([0, 1]), np.array([0, 0]))
    assert sorted(e.copies.cols["slot"][ids].tolist()) == [0, 1]
    assert e.live.tolist() == ids.tolist() and e.n_ready == 0


def test_a_table_grown_in_place_keeps_its_rows_and_refuses_rows_beyond_its_ids():
    table = Table({"task": (np.int32, -1), "end": (np.float64, np.nan)}, capacity=4,
                   name="copies", max_rows=10)
    rows = table.append(3)
    table.cols["task"][rows] = [7, 8, 9]
    table.cols["end"][rows] = [1.5, 2.5, 3.5]
    table.resize_in_place(9)
    assert table.capacity == 9 and table.cols["task"].dtype == np.int32
    assert table.cols["task"][:3].tolist() == [7, 8, 9]
    assert table.cols["end"][:3].tolist() == [1.5, 2.5, 3.5]
    table.resize_in_place(2)                     # never below the rows in use
    assert table.capacity == 3
    with pytest.raises(GeosimError, match="copies table would exceed 10 rows"):
        table.resize_in_place(11)
    table.append(7)
    with pytest.raises(GeosimError, match="32-bit"):
        table.append(1)


def test_a_run_keeps_its_copy_ids_in_32_bits():
    model = GeoModel(load_scenario(closed_world(n_jobs=50)), "fifo")
    result = model.run()
    assert model.engine.copies.max_rows == ID_MAX
    for column in ("copy", "task", "job", "cluster", "slot"):
        assert result.copies[column].dtype == np.int32
    assert (result.copies["job"].to_numpy()
            == result.tasks["job"].to_numpy()[result.copies["task"]]).all()


def test_a_table_near_its_row_limit_grows_to_the_limit_and_no_further():
    table = Table({"task": (np.int32, -1)}, capacity=8, name="copies", max_rows=12)
    table.append(9)                          # doubling would ask for 16 rows
    assert table.capacity == 12 and table.cols["task"][:9].tolist() == [-1] * 9
    table.append(3)
    with pytest.raises(GeosimError, match="would exceed 12 rows"):
        table.append(1)


def test_the_clock_reachability_and_traffic_are_set_through_the_engine():
    # 10 MB at cluster 1 read from cluster 0 over a 2 MB/s link.
    model = GeoModel(two_cluster_scenario(), PinTo(0),
                     workload=make_workload([0.0], [100.0], raw=[[(1, 10.0)]]))
    e = model.engine
    on = np.array([True, False])
    e.set_reachable(on)
    on[1] = True                                    # the engine keeps its own copy
    assert e.reachable.tolist() == [True, False] and e.free_slots().tolist() == [4, 0]
    e.arrive(0.0)
    with pytest.raises(SchedulingError, match="cluster 1 is unreachable"):
        e.launch(0, 1)
    e.set_reachable([True, True])
    e.launch(0, 0)
    e.advance()
    sent = min(10.0, 2.0 * e.dt)
    assert e.egress_mb.tolist() == pytest.approx([0.0, sent])
    assert e.ingress_mb.tolist() == pytest.approx([sent, 0.0]) and e.link_mb.sum() > 0
    e.reset_traffic()
    assert not (e.egress_mb.any() or e.ingress_mb.any() or e.link_mb.any())
    e.jump_to(7.5)
    assert e.time == 7.5


def test_a_pool_outcome_brings_the_job_counters_in_line_with_the_tasks():
    # A loop that ran tasks and copies itself (here: the general step of another engine)
    # leaves the task arrays; the engine derives the jobs' counters from them.
    wl = make_workload([0.0, 0.0, 1.0], [5.0, 50.0, 500.0])
    ran = GeoModel(load_scenario(closed_world(slots=2)), PinTo(0), workload=wl)
    for _ in range(8):
        ran.step()
    a = ran.engine
    b = GeoModel(load_scenario(closed_world(slots=2)), PinTo(0), workload=wl).engine
    for field in ("state", "done", "live", "copies", "saved", "cluster"):
        getattr(b.tasks, field)[:] = getattr(a.tasks, field)
    b.copies.resize(a.copies.capacity)
    b.apply_pool_outcome(a.live, a.copies.n, a.next_job, a.time)
    assert np.any(a.task_state == 3) and a.live.size     # some done, some running
    assert b.copies.n == a.copies.n and b.live.tolist() == a.live.tolist()
    assert b.time == a.time and b.next_job == a.next_job == 3 and b.n_ready == a.n_ready
    np.testing.assert_array_equal(b.job_done, a.job_done)
    np.testing.assert_array_equal(b.job_left, a.job_left)
    np.testing.assert_array_equal(b.job_live, a.job_live)


def test_taking_slots_is_all_or_nothing():
    # Shares are added in place, in order; a launch that would overfill a slot (or names a
    # slot outside its cluster) leaves every used share exactly as it was.
    from geosim.engine.launch import take_slots
    ptr = np.array([0, 2, 4])
    used = np.array([0.1, 0.3, 0.0, 0.7])
    before = used.copy()
    assert take_slots(np.array([1, 1]), np.array([0, 0]), 0.3, ptr, used, 1.0)
    assert used[1] == (0.3 + 0.3) + 0.3 and used[0] == 0.1
    kept = used.copy()
    assert not take_slots(np.array([0, 3, 3]), np.array([0, 1, 1]), 0.2, ptr, used, 1.0)
    assert used.tobytes() == kept.tobytes()                 # 0.7 + 0.2 + 0.2 > 1: undone
    assert not take_slots(np.array([2]), np.array([0]), 0.1, ptr, used, 1.0)  # other cluster
    assert used.tobytes() == kept.tobytes() and not np.array_equal(used, before)


def test_a_share_that_does_not_fit_changes_nothing():
    scenario = load_scenario(closed_world(slots=1))
    model = GeoModel(scenario, "fifo", workload=make_workload([0.0, 0.0], [5.0, 5.0]))
    model.step()
    e = model.engine
    copy = int(e.live[0])
    before = e.slot_used.copy()
    for share in (2.0, 0.0):
        with pytest.raises(SchedulingError):
            e.set_share(np.array([copy, copy]), share)
        assert e.slot_used.tobytes() == before.tobytes()
    e.set_share(copy, 0.5)
    assert e.slot_used[e.copies.cols["slot"][copy]] == 0.5


@pytest.mark.parametrize("seed", range(20))
def test_in_sorted_is_isin_on_an_ascending_array(seed):
    rng = np.random.default_rng(seed)
    b = np.unique(rng.integers(0, 50, size=rng.integers(0, 30)))
    a = rng.integers(-5, 55, size=rng.integers(0, 40))
    np.testing.assert_array_equal(in_sorted(a, b), np.isin(a, b))
    assert in_sorted(a, b).dtype == bool
