"""Progress reports (geosim.reports): heartbeats, outages, WAN delay, cost, oracle mode."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import uniform_world

from geosim import GeoModel, load_scenario, make_scheduler
from geosim.errors import GeosimError
from geosim.reports import ReportBoard, check_monitoring
from geosim.testing import WORLDS, check_world
from geosim.workload import Workload

SPEED = 100.0     # MIPS of every slot of the hand-built worlds


def _workload(works: list[float], raw_cluster: list[int] | None = None) -> Workload:
    """One job arriving at 0 with independent tasks of one type (one stage).

    With ``raw_cluster`` each task has one raw input of 1 MB on that cluster, so
    locality placement runs it there and it reads nothing over the WAN.
    """
    n = len(works)
    empty = np.zeros(0, dtype=np.int64)
    raws = {"raw_ptr": np.zeros(n + 1, dtype=np.int64), "raw_cluster": empty,
            "raw_size": np.zeros(0)}
    if raw_cluster is not None:
        raws = {"raw_ptr": np.arange(n + 1, dtype=np.int64),
                "raw_cluster": np.asarray(raw_cluster, dtype=np.int64),
                "raw_size": np.ones(n)}
    return Workload(arrival=np.zeros(1), weight=np.ones(1), task_ptr=np.array([0, n]),
                    task_work=np.asarray(works, dtype=float),
                    task_type=np.zeros(n, dtype=np.int32), type_names=("t",),
                    edge_src=empty, edge_dst=empty, edge_size=np.zeros(0), **raws)


def _model(spec: str, works: list[float], raw_cluster: list[int] | None = None,
           slots: int = 4) -> tuple[GeoModel, object]:
    """Three clusters of ``slots`` slots at 100 MIPS, no outages (reachability set by hand).

    Hops: 0-1 and 0-2 one link, 1-2 two.
    """
    world = uniform_world(slots, 3, power_redraw_interval=0.0)
    model = GeoModel(load_scenario(world), scheduler=spec, workload=_workload(works, raw_cluster))
    return model, model.policy.redundancy


def _step_to(model: GeoModel, t: float) -> None:
    """Step until the next decision is at time ``t``."""
    while model.engine.time < t - 1e-9:
        model.step()


def _reach(model: GeoModel, cluster: int, on: bool) -> None:
    """Make ``cluster`` reachable or not from now on."""
    reachable = model.engine.reachable.copy()
    reachable[cluster] = on
    model.engine.set_reachable(reachable)


def _seen(part, copy: int) -> tuple[float, float]:
    progress, at = part.reports.reported(np.array([copy]))
    return float(progress[0]), float(at[0])


# ---------------------------------------------------------------------- the model
@pytest.mark.parametrize("down", ["sender", "master"])
def test_a_report_from_or_to_an_unreachable_cluster_does_not_arrive(down):
    # One 50 s task (5000 MI at 100 MIPS) on cluster 0, heartbeats every 2 s from its
    # start at 0 to master cluster 1. The copy's cluster (or the master) is cut off
    # from t = 5 to t = 11: the heartbeats of 6, 8 and 10 are lost and the manager
    # keeps the report of t = 4; the heartbeat of 12, once it is back, brings the
    # progress of t = 12. (The engine kills the copies of a cluster an outage hits;
    # here reachability is set by hand so that the copy lives on.)
    model, part = _model("late[monitoring=reports,report_interval=2,report_to=1]", [5000.0])
    model.step()
    copy = int(model.view.live_copies[0])
    assert model.view.copy_info()["cluster"][0] == 0
    cut = 0 if down == "sender" else 1
    _step_to(model, 5.0)                        # decisions up to t = 4 taken
    assert _seen(part, copy) == pytest.approx((4 * SPEED / 5000.0, 4.0))
    _reach(model, cut, False)
    for t in range(6, 13):
        _step_to(model, t)
        assert _seen(part, copy) == pytest.approx((0.08, 4.0))         # stale, kept
    assert model.view.copy_info([copy])["progress"][0] == pytest.approx(0.24)
    lost = part.reports.lost
    assert lost == 3
    _reach(model, cut, True)
    _step_to(model, 13.0)
    assert _seen(part, copy) == pytest.approx((12 * SPEED / 5000.0, 12.0))
    assert part.reports.lost == lost and part.reports.delivered == 3


def test_reports_arrive_at_the_interval_from_the_copy_start():
    model, part = _model("late[monitoring=reports,report_interval=3]", [5000.0])
    model.step()
    copy = int(model.view.live_copies[0])
    for t in range(1, 14):
        _step_to(model, t + 1)                 # the decision at t has been taken
        last = 3.0 * (t // 3)
        assert _seen(part, copy) == pytest.approx((last * SPEED / 5000.0, last))


def test_a_remote_report_arrives_later_than_a_local_one():
    # Master cluster 1; task 0 runs there (local), task 1 on cluster 2, two hops away.
    # At 2 s per hop the remote heartbeat sent at 3 arrives at 7, the one of 6 at 10.
    spec = "late[monitoring=reports,report_interval=3,report_delay=2.0,report_to=1]"
    model, part = _model(spec, [5000.0, 5000.0], raw_cluster=[1, 2])
    model.step()
    info = model.view.copy_info()
    local, remote = (int(info["copy"][info["cluster"] == c][0]) for c in (1, 2))
    assert model.view.hops[2, 1] == 2
    expect_remote = {3: 0.0, 4: 0.0, 6: 0.0, 7: 3.0, 9: 3.0, 10: 6.0, 12: 6.0, 13: 9.0}
    for t in range(3, 14):
        _step_to(model, t + 1)
        assert _seen(part, local)[1] == 3.0 * (t // 3)
        if t in expect_remote:
            assert _seen(part, remote)[1] == expect_remote[t]
    assert _seen(part, remote)[0] == pytest.approx(9 * SPEED / 5000.0)


def test_a_report_in_flight_to_a_master_that_goes_down_is_lost():
    spec = "late[monitoring=reports,report_interval=3,report_delay=2.0,report_to=1]"
    model, part = _model(spec, [5000.0, 5000.0], raw_cluster=[1, 2])
    model.step()
    remote = int(model.view.copy_info()["copy"][model.view.copy_info()["cluster"] == 2][0])
    _step_to(model, 4.0)                       # the heartbeat of 3 is in flight until 7
    _reach(model, 1, False)
    _step_to(model, 8.0)
    _reach(model, 1, True)
    _step_to(model, 9.0)
    assert _seen(part, remote)[1] == 0.0       # the report of 3 was lost at 7


def test_the_home_master_holds_most_of_the_jobs_raw_input():
    model, part = _model("late[monitoring=reports]", [100.0, 100.0, 100.0],
                         raw_cluster=[2, 1, 2])
    model.step()
    assert part.reports.masters(model.view, np.array([0]))[0] == 2


def test_monitoring_cost_takes_its_share_of_every_copy():
    model, part = _model("late[monitoring=reports,monitoring_cost=0.25]", [5000.0, 5000.0])
    model.step()
    info = model.view.copy_info()
    assert np.allclose(info["share"], 0.75)
    assert np.allclose(info["progress"], 0.75 * SPEED / 5000.0)      # a quarter slower
    assert (model.view.free_slots().sum()) == 3 * 4 - 2               # the rest stays held


def test_spark_counts_a_success_when_its_completion_report_arrives():
    # Task 0 (10 s) finishes while the master is cut off (t = 5..20): Spark's rule
    # learns of it at 20, and its duration runs to that arrival.
    model, part = _model("spark+speculation[monitoring=reports,report_to=0]",
                         [1000.0, 5000.0, 5000.0])
    _step_to(model, 5.0)
    _reach(model, 0, False)
    _step_to(model, 20.0)
    assert model.view.task_state[0] == 3 and part.n_done.sum() == 0
    _reach(model, 0, True)
    _step_to(model, 21.0)
    assert part.n_done.sum() == 1 and part.duration[0] == pytest.approx(20.0)


# ---------------------------------------------------------------------- oracle mode
def _geo_without_outages() -> dict:
    world = WORLDS["geo"]()
    world["outages"] = {"enabled": False}
    world["workload"]["n_jobs"] = 6
    return world


@pytest.mark.parametrize("name", ["mantri", "late"])
def test_reports_every_slot_without_outages_or_delay_are_the_oracle(name):
    # A heartbeat every slot from the copy's start, never lost, never late: the rule
    # sees exactly what the oracle shows it, so the runs are identical.
    world = _geo_without_outages()
    spec = f"{name}[interval=1]" if name == "mantri" else name
    oracle = GeoModel(load_scenario(world), scheduler=spec).run()
    params = "monitoring=reports,report_interval=1"
    spec = f"{name}[interval=1,{params}]" if name == "mantri" else f"{name}[{params}]"
    reports = GeoModel(load_scenario(world), scheduler=spec).run()
    for table in ("jobs", "tasks", "copies"):
        pd.testing.assert_frame_equal(getattr(oracle, table), getattr(reports, table))


def test_oracle_is_the_default_and_keeps_no_board():
    for name in ("mantri", "late", "flutter+mantri", "flutter+late", "spark+speculation"):
        policy = make_scheduler(name)
        assert policy.get_params()["monitoring"] == "oracle"
    model, part = _model("late", [100.0])
    model.step()
    assert part.reports is None


def test_monitoring_parameters_are_validated():
    with pytest.raises(GeosimError, match="monitoring must be one of"):
        make_scheduler("mantri", {"monitoring": "sometimes"})
    with pytest.raises(ValueError, match="report_interval needs monitoring='reports'"):
        check_monitoring("oracle", report_interval=3.0)
    for bad in ({"report_interval": 0}, {"report_interval": float("inf")},
                {"report_delay": -1.0}, {"report_to": "far"}, {"report_to": -2},
                {"report_to": True}, {"monitoring_cost": 1.0}, {"monitoring_cost": "x"}):
        key = next(iter(bad))
        for name in ("mantri", "late"):
            with pytest.raises(GeosimError, match=f"{name}: {key}"):
                make_scheduler(name, {"monitoring": "reports", **bad})
    with pytest.raises(GeosimError, match="mantri: report_delay needs"):
        make_scheduler("mantri", {"report_delay": 1.0})
    with pytest.raises(GeosimError, match="unknown parameter 'report_interval'"):
        make_scheduler("spark+speculation", {"monitoring": "reports", "report_interval": 3})
    with pytest.raises(GeosimError, match="report_to = 7 is not a cluster"):
        _model("late[monitoring=reports,report_to=7]", [100.0])


def test_an_empty_board_reports_a_copy_at_its_launch():
    model, part = _model("late[monitoring=reports,report_interval=5]", [5000.0])
    model.step()
    copy = int(model.view.live_copies[0])
    assert _seen(part, copy) == (0.0, 0.0)
    assert isinstance(part.reports, ReportBoard) and part.reports.sent == 0


# ---------------------------------------------------------------------- whole runs
@pytest.mark.parametrize("name", ["mantri", "late", "flutter+mantri", "flutter+late",
                                  "spark+speculation"])
def test_speculation_with_reports_finishes_in_the_geo_world(name):
    # Every process on (availability, outages, WAN), invariants checked at every step.
    params = {"monitoring": "reports", "report_delay": 0.5, "monitoring_cost": 0.05}
    if name != "spark+speculation":
        params["report_interval"] = 5.0
    cls = type(make_scheduler(name))
    check_world(cls, params, "geo")
