"""The compiled loop of 002's model (:mod:`geosim.poolsim`) against the general step."""

from __future__ import annotations

import unittest.mock

import numpy as np
import pandas as pd
import pytest
from conftest import closed_world

import geosim


def pool_world(n_jobs: int, rate: float, availability: bool, slots: int = 20,
               seed: int = 1) -> dict:
    """002's world, smaller: Pareto work, ``slots`` machines, event timing."""
    world = closed_world(slots=slots, rate=rate, n_jobs=n_jobs, seed=seed,
                         availability=availability,
                         work={"distribution": "pareto", "scale": 2.0, "shape": 2.0})
    world["run"]["timing"] = "event"
    world["run"]["record_interval"] = 5.0
    return world


def both(world: dict, scheduler: str) -> tuple[geosim.Result, geosim.Result]:
    scenario = geosim.load_scenario(world)
    out = []
    for compiled in (True, False):
        model = geosim.GeoModel(scenario, scheduler)
        model.compiled = compiled
        out.append(model.run())
    return out[0], out[1]


def assert_same(a: pd.DataFrame, b: pd.DataFrame, drop: tuple[str, ...] = ()) -> None:
    a, b = a.drop(columns=list(drop)), b.drop(columns=list(drop))
    assert a.shape == b.shape and list(a.columns) == list(b.columns)
    for col in a.columns:
        x, y = a[col].to_numpy(), b[col].to_numpy()
        if x.dtype.kind in "fiub":
            np.testing.assert_allclose(x.astype(float), y.astype(float), rtol=1e-9, atol=1e-7,
                                       err_msg=col)
        else:
            assert (x == y).all(), col


# On 4 machines at load 0.9 there are more jobs than machines about half the time: Fair+R
# and LAPS+R then multitask (share 1/k); otherwise jobs run redundant copies.
@pytest.mark.parametrize("scheduler", [
    "srpt+r", "srpt+r[reassign=random]", "fair+r[reassign=random]",
    "laps+r[beta=0.5,reassign=random]", "srpt+r[max_copies=1,reassign=random]"])
def test_same_tables_as_the_general_step_on_identical_machines(scheduler):
    # Machines are identical and always available, so which machines a copy gets does not
    # matter: every time, count and amount of work is the general step's.
    fast, slow = both(pool_world(300, 0.9, availability=False, slots=4), scheduler)
    assert_same(fast.jobs, slow.jobs)
    assert_same(fast.tasks, slow.tasks, drop=("cluster",))
    assert_same(fast.copies, slow.copies, drop=("slot", "cluster"))
    assert_same(fast.clusters, slow.clusters)


@pytest.mark.parametrize("scheduler", ["fair+r", "laps+r[beta=0.8]", "fair+r[max_copies=2]"])
def test_same_jobs_when_copies_share_machines(scheduler):
    # Multitasking with reassign = "keep": which copies stay depends on which of them
    # share a machine, so copy counts follow the draws; job times do not.
    fast, slow = both(pool_world(300, 0.9, availability=False, slots=4), scheduler)
    assert_same(fast.jobs.drop(columns="checkpoints"), slow.jobs.drop(columns="checkpoints"))


def test_same_model_under_availability_periods():
    # Machines now differ (available or not, at their own levels): the two loops draw
    # different machines, so runs differ job by job, but over the same jobs and world
    # their means agree within the spread of the paired per-seed differences.
    diffs = []
    for seed in (1, 2, 3, 4):
        fast, slow = both(pool_world(400, 1.0, availability=True, seed=seed),
                          "srpt+r[max_copies=1,reassign=random]")
        diffs.append(fast.jobs["flowtime"].mean() / slow.jobs["flowtime"].mean() - 1)
    assert abs(np.mean(diffs)) < 3 * np.std(diffs, ddof=1) / 2 + 0.01


def test_exact_against_the_phases_on_one_machine():
    # One machine under SRPT+R is preemptive SRPT at the machine's speed: replayed here
    # event by event from the availability phases alone.
    from test_queueing import availability_phases
    world = pool_world(150, 0.04, availability=True, slots=1)
    world["workload"]["work"] = {"distribution": "exponential", "mean": 5.0}
    model = geosim.GeoModel(geosim.load_scenario(world), "srpt+r")
    assert not model.why_not_compiled()
    jobs = model.run().jobs
    starts, levels = availability_phases(world, jobs["completion"].max() + 1)
    arrival, left = jobs["arrival"].to_numpy(), jobs["work"].to_numpy().copy()
    done = np.full(arrival.size, np.nan)
    t, k, nxt = 0.0, 0, 0
    while np.isnan(done).any():
        alive = np.flatnonzero((arrival <= t) & np.isnan(done))
        while starts[k + 1] <= t:
            k += 1
        stop = min(starts[k + 1], arrival[nxt] if nxt < arrival.size else np.inf)
        if alive.size:
            j = alive[np.argmin(left[alive])]
            if t + left[j] / levels[k] <= stop:
                t, left[j], done[j] = t + left[j] / levels[k], 0.0, t + left[j] / levels[k]
                continue
            left[j] -= levels[k] * (stop - t)
        t = stop
        while nxt < arrival.size and arrival[nxt] <= t:
            nxt += 1
    np.testing.assert_allclose(jobs["completion"], done, rtol=1e-9, atol=1e-7)


def test_exact_against_the_phases_of_several_machines():
    # A job alone in the pool runs a copy on every machine (SRPT+R, 002 Alg. 1) and ends
    # when the first reaches its work: each machine's availability changes move its own
    # copy, and the job's end is the earliest of the copies' ends at their phases. Jobs
    # that overlap another are checkpointed at its arrival or end and are left out.
    from test_queueing import availability_phases
    machines = 3
    world = pool_world(120, 0.01, availability=True, slots=machines)
    world["workload"]["work"] = {"distribution": "exponential", "mean": 5.0}
    jobs = geosim.run(world, scheduler="srpt+r").jobs
    arrival, end = jobs["arrival"].to_numpy(), jobs["completion"].to_numpy()
    alone = np.ones(arrival.size, dtype=bool)
    alone[:-1] &= end[:-1] <= arrival[1:]
    alone[1:] &= end[:-1] <= arrival[1:]
    assert alone.sum() >= 100
    expected = np.full(arrival.size, np.inf)
    for slot in range(machines):
        starts, levels = availability_phases(world, end.max() + 1, slot)
        done = np.concatenate([[0.0], np.cumsum(levels[:-1] * np.diff(starts))])
        for j in np.flatnonzero(alone):
            k = np.searchsorted(starts, arrival[j], side="right") - 1
            target = done[k] + levels[k] * (arrival[j] - starts[k]) + jobs["work"][j]
            k = np.searchsorted(done, target, side="left") - 1
            expected[j] = min(expected[j], starts[k] + (target - done[k]) / levels[k])
    np.testing.assert_allclose(end[alone], expected[alone], rtol=1e-9, atol=1e-7)


def test_reproducible_and_used_only_where_it_applies():
    world = pool_world(200, 1.5, availability=True)
    a = geosim.run(world, scheduler="srpt+r[reassign=random]")
    b = geosim.run(world, scheduler="srpt+r[reassign=random]")
    assert a.copies.equals(b.copies) and a.jobs.equals(b.jobs)
    scenario = geosim.load_scenario(world)
    assert "pool policies" in geosim.GeoModel(scenario, "srpt").why_not_compiled()
    slotted = geosim.load_scenario(dict(world, run={**world["run"], "timing": "slot"}))
    assert "timing" in geosim.GeoModel(slotted, "srpt+r").why_not_compiled()


def test_the_copies_table_keeps_what_the_results_read():
    # A copy's progress, base and rate live with the copy; the engine's table keeps the
    # columns of the results, with exactly the rows used, and the copies table is complete.
    model = geosim.GeoModel(geosim.load_scenario(pool_world(200, 1.5, availability=True)),
                            "srpt+r")
    result = model.run()
    table = model.engine.copies
    assert set(table.cols) == {"task", "slot", "cluster", "share", "start", "end",
                               "executed", "wasted", "share_time", "outcome"}
    assert table.capacity == table.n == len(result.copies)
    assert result.copies["end"].notna().all() and (result.copies["start"] >= 0).all()
    s = result.summary
    assert s["executed_work"] == pytest.approx(s["demanded_work"] + s["wasted_work"])


def test_the_loop_takes_plain_values_and_returns_an_outcome():
    # The loop runs from a PoolSetup and the guards alone, and what it returns is what the
    # model applies: its time, steps, jobs done and samples.
    import ast
    from pathlib import Path

    from geosim import poolsim
    from geosim.series import CLUSTER_SERIES
    tree = ast.parse(Path(poolsim.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {"geosim.model", "geosim.agents", "geosim"} & imported

    scenario = geosim.load_scenario(pool_world(120, 1.5, availability=True))
    model = geosim.GeoModel(scenario, "fair+r")
    seen = {}
    real_run = poolsim.run

    def spy(setup, guards, stall_seconds):
        out = real_run(setup, guards, stall_seconds)
        seen["setup"], seen["out"] = setup, out
        return out

    poolsim_run, poolsim.run = poolsim.run, spy
    try:
        result = model.run()
    finally:
        poolsim.run = poolsim_run
    setup, out = seen["setup"], seen["out"]
    assert isinstance(setup, poolsim.PoolSetup) and isinstance(out, poolsim.PoolOutcome)
    assert out.jobs_done == model.jobs_done == 120 and out.stalled == 0
    assert out.steps == model.steps_run == result.summary["steps"] > 120
    assert out.time == model.engine.time and out.next_job == 120
    assert list(out.samples) == list(CLUSTER_SERIES)
    assert len(out.samples["time"]) == len(result.clusters)
    assert out.next_record > out.last_record == result.clusters["time"].max()


def test_both_loops_record_the_columns_of_the_one_schema():
    from geosim.series import CLUSTER_SERIES
    fast, slow = both(pool_world(60, 0.9, availability=True, slots=4), "srpt+r")
    for result in (fast, slow):
        cols = [c for c in result.clusters.columns if c not in ("tier", "state")]
        assert cols == list(CLUSTER_SERIES)
        assert [str(t) for t in result.clusters[cols].dtypes] == \
            [np.dtype(t).name for t in CLUSTER_SERIES.values()]


def test_the_copies_table_grows_to_the_projected_size_within_the_budget():
    # Full after 100 of 1 000 jobs with 800 copies: 8 000 copies are projected, with a
    # sixteenth to spare; a budget that cannot hold them gets an eighth more instead.
    from geosim.engine.tables import COPY_SPEC, Table
    from geosim.guards import Budget

    table = Table(COPY_SPEC, capacity=800, name="copies")
    table.set_rows(800)
    assert table.grown(100, 1000) == 8000 + 500
    assert table.grown(1000, 1000) == 900         # every job in: no projection
    assert table.grown(950, 1000) == 900          # the projection is below an eighth more
    row = sum(np.dtype(dt).itemsize for dt, _ in COPY_SPEC.values())
    table.budget = Budget(row * 8499)
    assert table.grown(100, 1000) == 900
    table.budget = Budget(row * 8500)
    assert table.grown(100, 1000) == 8500


def test_a_long_pool_run_grows_its_copies_table_once():
    # 20 000 jobs whose copies outgrow the first table (4 per job) grow it once, to the
    # size the first fill projects, and end with exactly the rows used.
    from geosim.engine.tables import Table

    sizes = []
    grown = Table.grown

    def spy(table, done, total):
        sizes.append(grown(table, done, total))
        return sizes[-1]

    world = pool_world(20_000, 2.0, availability=True)
    model = geosim.GeoModel(geosim.load_scenario(world), "srpt+r")
    with unittest.mock.patch.object(Table, "grown", spy):
        result = model.run()
    assert len(sizes) == 1 and sizes[0] >= len(result.copies) > 80_000
    assert model.engine.copies.capacity == len(result.copies)
