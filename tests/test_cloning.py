"""Dolly's cloning, Spark's delay scheduling and Spark's speculation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import geo_world

from geosim import GeoModel, load_scenario, make_scheduler
from geosim.schedulers.dolly import clone_count, straggle_probability
from geosim.schedulers.spark import DelayScheduling, speculatable, speculation_threshold

# -- Dolly -------------------------------------------------------------------------------


def test_clone_count_follows_the_job_straggling_probability():
    # 1 - (1 - p^c)^n <= eps, smallest c
    assert clone_count(np.full(10, 0.1), 0.05, 5) == 3      # 0.651, 0.0956, 0.00995
    assert clone_count(np.full(1, 0.1), 0.05, 5) == 2       # 0.1, 0.01
    assert clone_count(np.full(1, 0.02), 0.05, 5) == 1      # already below eps
    assert clone_count(np.full(10, 0.5), 0.05, 3) == 3      # capped
    # one task type riskier than the other: 0.307, 0.0901, 0.0271
    assert clone_count(np.array([0.3, 0.01]), 0.05, 5) == 3
    # exactly at the target counts as reaching it
    p = 1 - (1 - 0.05) ** (1 / 4)
    assert clone_count(np.full(4, math.sqrt(p)), 0.05, 5) == 2


def test_straggle_probability_from_speed_atoms():
    # cluster 0: 3 slots at 10 MIPS; cluster 1: 1 slot at 2 MIPS; median speed 10
    speed = np.array([[[10.0] * 4], [[2.0] * 4]])
    assert straggle_probability(speed, np.array([3, 1]), 1.5) == pytest.approx([0.25])
    assert straggle_probability(speed, np.array([3, 1]), 6.0) == pytest.approx([0.0])
    assert straggle_probability(speed, np.array([3, 0]), 1.5) == pytest.approx([0.0])


class BudgetChecked(GeoModel):
    """Checks after every slot that Dolly's live clones stay within its budget."""

    most = 0

    def step(self):
        super().step()
        live = self.engine.task_live
        extra = int(np.maximum(live - 1, 0).sum())
        cap = math.floor(self.policy.redundancy.budget * self.view.total_slots + 1e-9)
        assert extra <= cap, f"{extra} clones live, budget {cap}"
        BudgetChecked.most = max(BudgetChecked.most, extra)


@pytest.mark.parametrize("delay", [0.0, 3.0])
def test_dolly_never_exceeds_its_budget(delay):
    BudgetChecked.most = 0
    params = {"budget": 0.5, "small_tasks": 60, "max_clones": 3, "delay": delay}
    scenario = load_scenario(geo_world(n_jobs=16, params=params))
    sched = make_scheduler("dolly", params)
    result = BudgetChecked(scenario, sched).run()
    dolly = sched.redundancy
    assert result.jobs["finished"].all()
    assert dolly.cloned_jobs >= 1 and BudgetChecked.most > 0     # the check had clones to see
    assert dolly.reserved >= 0


def test_dolly_clones_small_jobs_only():
    params = {"budget": 0.5, "small_tasks": 60, "delay": 0.0}
    scenario = load_scenario(geo_world(n_jobs=12, params=params))
    sched = make_scheduler("dolly", params)
    result = GeoModel(scenario, sched).run()
    dolly = sched.redundancy
    sizes = result.jobs["tasks"].to_numpy()
    assert (dolly.copies[sizes > 60] == 1).all()
    cloned = np.flatnonzero(dolly.copies > 1)
    assert cloned.size and (sizes[cloned] <= 60).all()
    # tasks of uncloned jobs never run two copies at once
    copies = result.copies.copy()
    copies["job"] = result.tasks["job"].to_numpy()[copies["task"].to_numpy()]
    first = copies.groupby("task")["start"].transform("min") == copies["start"]
    starts = copies[first].groupby(["job", "task"]).size()
    per_job = starts.groupby(level="job").max()
    assert (per_job[sizes[per_job.index] > 60] == 1).all()
    assert (per_job[cloned] > 1).any()


def test_dolly_parameters_are_validated():
    for bad in ({"budget": 0}, {"straggle_target": 1.5}, {"max_clones": 0},
                {"small_tasks": 2.5}, {"straggler_ratio": 0.5}, {"admission": "lifo"},
                {"delay": -1}):
        with pytest.raises(Exception, match=next(iter(bad))):
            make_scheduler("dolly", bad)


# -- Spark speculation -------------------------------------------------------------------


def test_speculation_threshold_needs_the_quantile_of_the_stage():
    n_tasks = np.array([4, 4, 10, 10, 1])
    n_done = np.array([2, 3, 6, 7, 1])
    thr = speculation_threshold(n_done, n_tasks, np.full(5, 10.0), 0.75, 1.5, 0.1)
    # floor(0.75 * 4) = 3, floor(0.75 * 10) = 7; a one-task stage never speculates
    assert thr.tolist() == [np.inf, 15.0, np.inf, 15.0, np.inf]
    # the minimum runtime bounds a tiny median from below
    assert speculation_threshold(np.array([3]), np.array([4]), np.array([0.02]),
                                 0.75, 1.5, 0.1).tolist() == [0.1]
    # at least one success even when quantile * n rounds to 0
    assert speculation_threshold(np.array([0, 1]), np.array([2, 2]), np.array([5.0, 5.0]),
                                 0.2, 1.5, 0.1).tolist() == [np.inf, 7.5]


def test_speculatable_is_strictly_slower_with_one_copy():
    runtime = np.array([14.99, 15.0, 15.01, 20.0, 20.0])
    copies = np.array([1, 1, 1, 2, 1])
    thr = np.array([15.0, 15.0, 15.0, 15.0, np.inf])
    assert speculatable(runtime, copies, thr).tolist() == [False, False, True, False, False]


def _one_cluster_job(tmp_path, runtimes, scheduler, params=None):
    """One job of independent tasks of one type on one 8-slot cluster: runtime = duration."""
    tasks = [{"name": f"map_{i}", "id": f"T{i}", "category": "map", "parents": [],
              "children": [], "inputFiles": [], "outputFiles": [], "runtimeInSeconds": rt}
             for i, rt in enumerate(runtimes)]
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"name": "job", "schemaVersion": "1.5", "workflow": {
        "specification": {"tasks": tasks, "files": []}, "execution": {"tasks": []}}}))
    scenario = load_scenario({
        "run": {"seed": 1, "dt": 1.0},
        "scheduler": {"name": scheduler, "params": params or {}},
        "topology": {"generator": "single"},
        "tiers": {"small": {"slots": 8, "power_mean": 200.0, "power_rsd": 0.0}},
        "clusters": {"power_redraw_interval": 0.0},
        "availability": {"enabled": False}, "outages": {"enabled": False},
        "workload": {"kind": "wfformat", "files": [str(path)], "n_jobs": 1,
                     "arrival_rate": 0.1}})
    result = GeoModel(scenario, make_scheduler(scheduler, params)).run()
    assert result.jobs["finished"].all()
    return result


@pytest.mark.parametrize(("runtimes", "params", "speculated_at"), [
    # three 10 s tasks done -> median 10, threshold 15: runtime 16 > 15 at start + 16
    ([10, 10, 10, 100], {}, 16.0),
    # quantile 1: 3 of 4 done is just below it
    ([10, 10, 10, 100], {"quantile": 1.0}, None),
    # 17 s task still runs at start + 16 (16 > 15) ...
    ([10, 10, 10, 17], {}, 16.0),
    # ... but not past 1.7 x 10 = 17 before it ends
    ([10, 10, 10, 17], {"multiplier": 1.7}, None),
    # a 15 s task ends at exactly 1.5 x the median: never strictly beyond
    ([10, 10, 10, 15], {}, None),
])
def test_spark_speculation_in_a_run(tmp_path, runtimes, params, speculated_at):
    result = _one_cluster_job(tmp_path, runtimes, "spark+speculation", params)
    copies = result.copies
    start = copies["start"].min()
    slow = copies[copies["task"] == len(runtimes) - 1]
    if speculated_at is None:
        assert len(copies) == len(runtimes)
    else:
        assert len(copies) == len(runtimes) + 1 and len(slow) == 2
        assert slow["start"].max() - start == pytest.approx(speculated_at)
        assert set(slow["outcome"]) == {"won", "lost"}


# -- Spark delay scheduling --------------------------------------------------------------


def _ready_model():
    model = GeoModel(load_scenario(geo_world(n_jobs=3, rate=1.0)))
    model.step()
    view = model.view
    state = np.asarray(view.task_state)
    tasks = np.flatnonzero((state >= 1) & (state <= 2) & (np.asarray(view.task_home) >= 0))
    return model, view, int(tasks[0])


def _remote_cluster(view, task: int) -> int:
    """A reachable cluster holding none of ``task``'s input."""
    src, _ = view.task_inputs(task)
    return int(np.flatnonzero(~np.isin(np.arange(view.n_clusters), src)
                              & np.asarray(view.reachable))[0])


def test_delay_scheduling_waits_locality_wait_then_relaxes():
    model, view, task = _ready_model()
    part = DelayScheduling(locality_wait=3.0)
    part.prepare(view, np.random.default_rng(0), None)
    other = _remote_cluster(view, task)
    home = int(view.task_home[task])

    def offer(cluster):
        free = np.zeros(view.n_clusters, dtype=np.int64)
        free[cluster] = 1
        return int(part.place(view, np.array([task]), free)[0])

    t0 = view.time
    seen = []
    while view.time < t0 + 3.0 - 1e-9:
        seen.append(offer(other))             # only a non-local slot: the stage waits
        model.step()
    assert seen == [-1] * len(seen) and len(seen) == 3
    assert offer(other) == other              # 3 s without a local launch: relaxed
    assert offer(other) == other              # the level stays "any" after a remote launch
    assert offer(home) == home                # a local launch resets the level ...
    assert offer(other) == -1                 # ... so the stage waits again
    with pytest.raises(ValueError, match="locality_wait"):
        DelayScheduling(locality_wait=-1)


def test_delay_scheduling_with_zero_wait_is_locality_placement():
    model, view, task = _ready_model()
    part = DelayScheduling(locality_wait=0.0)
    part.prepare(view, np.random.default_rng(0), None)
    other = _remote_cluster(view, task)
    free = np.zeros(view.n_clusters, dtype=np.int64)
    free[other] = 1
    assert part.place(view, np.array([task]), free).tolist() == [other]
