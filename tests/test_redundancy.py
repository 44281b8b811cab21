"""The redundancy policies of paper 002: allocations, known answers, checkpoint rules."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import closed_world, geo_world

import geosim
from geosim import GeoModel, GeosimError, load_scenario, make_scheduler
from geosim.schedulers.fair_r import FairR, fair_r_allocation
from geosim.schedulers.laps import LAPS, LAPSR, laps_r_allocation
from geosim.schedulers.srpt_r import SRPTR, srpt_r_machines

REDUNDANCY = "scenarios/redundancy-gamma.toml"


# ---------------------------------------------------------------- allocation formulas
def test_srpt_r_machines_follow_algorithm_1():
    # n < M: job 1 gets M - (n-1) floor(M/n), the others floor(M/n).
    assert srpt_r_machines(3, 10).tolist() == [4, 3, 3]
    assert srpt_r_machines(1, 7).tolist() == [7]
    # n >= M: the M smallest get one machine each.
    assert srpt_r_machines(5, 3).tolist() == [1, 1, 1, 0, 0]
    for n in range(1, 40):
        assert srpt_r_machines(n, 25).sum() == 25


def test_fair_r_allocation_follows_algorithm_2():
    # n = kM + l >= M: the kM latest get one machine at 1/k, the l oldest wait.
    counts, share = fair_r_allocation(11, 4)           # k = 2, l = 3
    assert counts.tolist() == [0, 0, 0] + [1] * 8 and share == pytest.approx(0.5)
    # n < M: the latest gets the remainder.
    counts, share = fair_r_allocation(3, 10)
    assert counts.tolist() == [3, 3, 4] and share == 1.0
    for n in range(1, 60):
        counts, share = fair_r_allocation(n, 7)
        assert counts.sum() * share == pytest.approx(7)     # every machine is used


def test_laps_r_allocation_follows_algorithm_3():
    # beta n = 8 = 2 M + 0 with M = 4: jobs n-8 .. n-1 one machine, job n M - 0, share 1/3.
    counts, share = laps_r_allocation(10, 4, 0.8)
    assert counts.tolist() == [0, 1, 1, 1, 1, 1, 1, 1, 1, 4] and share == pytest.approx(1 / 3)
    # beta n = 2.5 = 0 M + 2 + 0.5: jobs n-2, n-1 get floor(M/3), job n the rest.
    counts, share = laps_r_allocation(5, 10, 0.5)
    assert counts.tolist() == [0, 0, 3, 3, 4] and share == 1.0
    # beta n < 1: only the latest arrival runs, on every machine.
    counts, _ = laps_r_allocation(3, 6, 0.2)
    assert counts.tolist() == [0, 0, 6]
    for n in range(1, 80):
        for beta in (0.2, 0.5, 0.8, 0.99):
            counts, share = laps_r_allocation(n, 6, beta)
            assert counts.sum() * share == pytest.approx(6)         # every machine is used
            assert (counts > 0).sum() == min(n, int(np.floor(beta * n + 1e-9)) + 1)
            assert counts[-1] > 0 and np.all(np.diff((counts > 0).astype(int)) >= 0)


def test_bad_parameters_are_one_line_errors():
    with pytest.raises(GeosimError, match="beta must be < 1"):
        make_scheduler("laps+r", {"beta": 1.0})
    with pytest.raises(GeosimError, match="beta must be > 0"):
        make_scheduler("laps", {"beta": 0})
    with pytest.raises(GeosimError, match="reassign must be one of"):
        make_scheduler("srpt+r", {"reassign": "sometimes"})
    with pytest.raises(GeosimError, match="max_copies must be >= 1"):
        make_scheduler("fair+r", {"max_copies": 0})
    with pytest.raises(GeosimError, match="unexpected keyword"):
        make_scheduler("laps", {"max_copies": 2})          # LAPS never makes copies


def test_max_copies_caps_each_task():
    world = closed_world(slots=12, rate=0.1, n_jobs=150, availability=True,
                         work={"distribution": "pareto", "scale": 5.0, "shape": 2.0})
    scenario = load_scenario(world)
    policy = WatchedSRPTR(max_copies=2)
    GeoModel(scenario, policy).run()
    per_task = [np.bincount(info["task"]).max(initial=0) for *_, info in policy.log]
    assert max(per_task) == 2
    uncapped = WatchedSRPTR()
    GeoModel(scenario, uncapped).run()
    assert max(np.bincount(info["task"]).max(initial=0) for *_, info in uncapped.log) > 2


# ---------------------------------------------------------------- known answers
def test_without_service_variability_srpt_r_equals_srpt():
    # Identical machines at constant speed: extra copies progress exactly like the first
    # one, so with n < M they buy nothing (002 Remark 4).
    world = closed_world(slots=20, rate=0.15, n_jobs=400,
                         work={"distribution": "pareto", "scale": 5.0, "shape": 2.0})
    srpt = geosim.run(world, scheduler="srpt")
    srpt_r = geosim.run(world, scheduler="srpt+r")
    assert srpt_r.summary["copies_launched"] > 3 * srpt.summary["copies_launched"]
    np.testing.assert_allclose(srpt_r.jobs["flowtime"], srpt.jobs["flowtime"], rtol=1e-12)


def test_on_one_machine_srpt_r_is_preemptive_srpt():
    world = closed_world(slots=1, rate=0.08, n_jobs=500,
                         work={"distribution": "exponential", "mean": 10.0})
    a = geosim.run(world, scheduler="srpt").jobs["flowtime"]
    b = geosim.run(world, scheduler="srpt+r").jobs["flowtime"]
    np.testing.assert_allclose(a, b, rtol=1e-12)


def test_redundancy_beats_no_redundancy_under_service_variability():
    # 002 §6 world at lambda = 1: the paper reports ~25% lower mean flowtime and 85% vs 75%
    # of jobs within 40 time units. Redundancy must win by a clear margin.
    scenario = load_scenario(REDUNDANCY, {"workload.n_jobs": 3000})
    srpt = geosim.run(scenario, scheduler="srpt").jobs["flowtime"]
    srpt_r = geosim.run(scenario, scheduler="srpt+r").jobs["flowtime"]
    assert srpt_r.mean() < 0.85 * srpt.mean()
    assert (srpt_r <= 40).mean() > (srpt <= 40).mean() + 0.08
    laps = geosim.run(scenario, scheduler=make_scheduler("laps", {"beta": 0.5})).jobs
    laps_r = geosim.run(scenario, scheduler=make_scheduler("laps+r", {"beta": 0.5})).jobs
    assert laps_r["flowtime"].mean() < 0.9 * laps["flowtime"].mean()


# ---------------------------------------------------------------- invariants per decision
class _Watched:
    """Mixin checking a pool policy's allocation right after each decision."""

    def decide(self, view, actions):
        super().decide(view, actions)
        e = view._e
        assert np.all(e.slot_used <= 1 + 1e-9), "a machine's shares sum above 1"
        info = view.copy_info()
        pairs = info["task"] * (e.world.n_slots + 1) + info["slot"]
        assert np.unique(pairs).size == pairs.size, "two copies of a task on one machine"
        self.log.append((view.alive_jobs.size, view.total_slots, info))

    def reset(self, view, rng):
        super().reset(view, rng)
        self.log = []


class WatchedFairR(_Watched, FairR):
    pass


class WatchedLAPSR(_Watched, LAPSR):
    pass


class WatchedLAPS(_Watched, LAPS):
    pass


class WatchedSRPTR(_Watched, SRPTR):
    pass


@pytest.mark.parametrize("reassign", ["keep", "random"])
def test_fair_r_shares_follow_algorithm_2_at_every_step(reassign):
    # Heavy load on 4 machines, so n(t) crosses M often and machines multitask.
    world = closed_world(slots=4, rate=0.5, n_jobs=300, availability=True,
                         work={"distribution": "exponential", "mean": 10.0})
    policy = WatchedFairR(reassign=reassign)
    GeoModel(load_scenario(world), policy).run()
    multitasked = 0
    for n, m, info in policy.log:
        k = n // m
        expected_share = 1.0 / k if n >= m else 1.0
        assert np.allclose(info["share"], expected_share)
        assert info["copy"].size == (k * m if n >= m else m)
        if n >= m:
            assert np.unique(info["job"]).size == k * m       # the l oldest wait
            multitasked += k > 1
        else:
            assert np.unique(info["job"]).size == n
    assert multitasked > 10


def test_laps_r_serves_only_the_latest_beta_fraction():
    # Heavy enough that beta n(t) exceeds M at times (z >= 1: multitasking).
    world = closed_world(slots=3, rate=0.5, n_jobs=200, availability=True,
                         work={"distribution": "exponential", "mean": 10.0})
    scenario = load_scenario(world)
    for cls in (WatchedLAPSR, WatchedLAPS):
        policy = cls(beta=0.5)
        model = GeoModel(scenario, policy)
        model.run()
        for n, m, info in policy.log:
            served = min(int(np.floor(0.5 * n + 1e-9)), n - 1) + 1
            assert np.unique(info["job"]).size == served
            counts, share = laps_r_allocation(n, m, 0.5)
            expected = counts.sum() if cls is WatchedLAPSR else (counts > 0).sum()
            assert info["copy"].size == expected and np.allclose(info["share"], share)
        assert any(np.any(info["share"] < 1) for *_, info in policy.log), "never multitasked"
        if cls is WatchedLAPS:
            assert model.engine.task_copies.max() >= 1
            assert max(np.bincount(info["task"]).max(initial=0) for *_, info in policy.log) == 1


def test_checkpoints_happen_only_at_arrivals_and_departures():
    # Assumption 1 of 002: count the checkpoints and compare with the decision points.
    world = closed_world(slots=10, rate=0.3, n_jobs=300, availability=True,
                         work={"distribution": "pareto", "scale": 5.0, "shape": 2.0})
    scenario = load_scenario(world)
    model = GeoModel(scenario, "srpt+r")
    events = 0
    while not model.done:
        before = model.engine.job_checkpoints.sum()
        completions = model.view.completions      # what the scheduler sees in this step
        arrived = model.engine.next_job
        model.step()
        if model.engine.job_checkpoints.sum() > before:
            assert model.engine.next_job > arrived or completions > 0
            events += 1
    result = geosim.run(scenario, scheduler="srpt+r")
    assert events > 100
    assert result.jobs["checkpoints"].sum() > 0
    assert result.tasks["checkpoints"].sum() == result.jobs["checkpoints"].sum()
    assert geosim.run(scenario, scheduler="fifo").jobs["checkpoints"].sum() == 0


@pytest.mark.parametrize("spec", ["laps+r[beta=0.8]", "fair+r", "srpt+r[reassign=random]"])
def test_dag_jobs_on_a_crowded_geo_world(spec):
    # Montage DAGs on a handful of slots, so jobs outnumber machines and the multitasking
    # branches run with several runnable tasks per job, outages and WAN transfers.
    from test_conformance import Checked

    world = geo_world(n_clusters=6, n_jobs=10, rate=0.05)
    world["tiers"] = {"large": {"slots": [2, 3]}, "medium": {"slots": [1, 2]},
                      "small": {"slots": [1, 2]}}
    scenario = load_scenario(world)
    model = Checked(scenario, spec)
    result = model.run()
    assert result.jobs["finished"].all()
    s = result.summary
    assert s["executed_work"] == pytest.approx(s["demanded_work"] + s["wasted_work"], rel=1e-9)
    assert (result.copies["share"] < 1).any() or spec.startswith("srpt")
