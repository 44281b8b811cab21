"""Stage barriers (MapReduce's map -> reduce) and per-copy work draws in the engine."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import closed_world

from geosim import GeoModel, load_scenario
from geosim.workload import Workload


def _jobs(works: list[list[float]], stages: list[list[int]], cv: float = 0.0,
          arrival: list[float] | None = None, weight: list[float] | None = None,
          stage_edges: list[tuple[int, int, int]] = ()) -> Workload:
    """Jobs with the given task works, stages and (job, src, dst) stage edges, no data."""
    n = len(works)
    flat = [w for job in works for w in job]
    return Workload(
        arrival=np.asarray(arrival or [0.0] * n), weight=np.asarray(weight or [1.0] * n),
        task_ptr=np.r_[0, np.cumsum([len(j) for j in works])], task_work=np.asarray(flat),
        task_type=np.zeros(len(flat)), type_names=("map",), edge_src=np.empty(0),
        edge_dst=np.empty(0), edge_size=np.empty(0), raw_ptr=np.zeros(len(flat) + 1),
        raw_cluster=np.empty(0), raw_size=np.empty(0),
        task_stage=np.asarray([s for job in stages for s in job]),
        task_cv=np.full(len(flat), cv),
        stage_edge_job=np.asarray([e[0] for e in stage_edges], dtype=np.int64),
        stage_edge_src=np.asarray([e[1] for e in stage_edges], dtype=np.int64),
        stage_edge_dst=np.asarray([e[2] for e in stage_edges], dtype=np.int64))


def _model(wl: Workload, slots: int, scheduler: str = "fifo", seed: int = 1,
           variability: str = "pareto") -> GeoModel:
    world = closed_world(slots=slots, n_jobs=wl.n_jobs, scheduler=scheduler, seed=seed)
    world["workload"]["copy_variability"] = variability
    return GeoModel(load_scenario(world), workload=wl)


def test_reduce_waits_for_every_map_of_its_job():
    wl = _jobs([[10.0, 20.0, 30.0, 5.0, 5.0]], [[0, 0, 0, 1, 1]])
    result = _model(wl, slots=5).run()
    tasks = result.tasks
    np.testing.assert_allclose(tasks["completion"][:3], [10.0, 20.0, 30.0])
    # The barrier falls at 30; the reduce tasks start at that boundary and run 5 s.
    np.testing.assert_allclose(tasks["start"][3:], [30.0, 30.0])
    np.testing.assert_allclose(tasks["completion"][3:], [35.0, 35.0])
    assert result.jobs["flowtime"][0] == pytest.approx(35.0)


def test_barriers_are_per_job_and_per_stage():
    # Job 0: three stages; job 1 (no barrier between its own stages and job 0's).
    wl = _jobs([[4.0, 2.0, 3.0, 1.0], [6.0, 2.0]], [[0, 0, 1, 2], [0, 1]])
    result = _model(wl, slots=10).run()
    done = result.tasks["completion"].to_numpy()
    np.testing.assert_allclose(done, [4.0, 2.0, 7.0, 8.0, 6.0, 8.0])


def test_stage_edges_make_a_dag_of_stages():
    # Job 0: stage 0 (two tasks of 10 s) feeds stages 1 (30 s) and 2 (5 s), which run side
    # by side. Job 1: a diamond 0 -> {1, 2} -> 3. Job 2 has no stage edges: a chain.
    wl = _jobs([[10.0, 10.0, 30.0, 5.0], [10.0, 20.0, 5.0, 1.0], [4.0, 4.0, 2.0]],
               [[0, 0, 1, 2], [0, 1, 2, 3], [0, 1, 2]],
               stage_edges=[(0, 0, 1), (0, 0, 2), (1, 0, 1), (1, 0, 2), (1, 1, 3), (1, 2, 3)])
    wl.validate(1)
    result = _model(wl, slots=20).run()
    done = result.tasks["completion"].to_numpy()
    np.testing.assert_allclose(done[:4], [10.0, 10.0, 40.0, 15.0])
    np.testing.assert_allclose(done[4:8], [10.0, 30.0, 15.0, 31.0])
    np.testing.assert_allclose(done[8:], [4.0, 8.0, 10.0])


@pytest.mark.parametrize("edges, match", [
    ([(0, 1, 1)], "0 <= src < dst < 3"), ([(0, 0, 3)], "0 <= src < dst < 3"),
    ([(1, 0, 1)], "names job 1, which does not exist"),
    ([(0, 0, 1), (0, 0, 1)], "duplicate stage edge 0 -> 1"),
])
def test_bad_stage_edges_are_one_line_errors(edges, match):
    from geosim.errors import GeosimError
    with pytest.raises(GeosimError, match=match):
        _jobs([[1.0, 1.0, 1.0]], [[0, 1, 2]], stage_edges=edges).validate(1)


def test_slicing_and_joining_carry_stage_edges():
    from geosim.workload import concat
    wl = _jobs([[1.0, 1.0], [1.0, 1.0, 1.0]], [[0, 1], [0, 1, 2]], arrival=[0.0, 1.0],
               stage_edges=[(1, 0, 2), (1, 1, 2)])
    first = wl.subset(1)
    assert first.stage_edge_job.size == 0
    swapped = wl.take_jobs(np.array([1, 0]))
    np.testing.assert_array_equal(swapped.stage_edge_job, [0, 0])
    np.testing.assert_array_equal(swapped.stage_edge_dst, [2, 2])
    both = concat([wl, wl.take_jobs(np.array([1]))], sort_by_arrival=True)
    both.validate(1)
    np.testing.assert_array_equal(np.sort(both.stage_edge_job), [1, 1, 2, 2])


def test_a_staged_job_costs_memory_linear_in_tasks():
    wl = _jobs([[1.0] * 2000 + [1.0] * 500], [[0] * 2000 + [1] * 500])
    model = _model(wl, slots=3000)
    assert model.engine.in_src.size == 0
    model.run()
    start = model.engine.task_start
    assert start[:2000].max() == 0.0 and start[2000:].min() == 1.0


def test_each_copy_draws_its_own_work_and_the_draw_is_common_to_schedulers():
    wl = _jobs([[50.0] * 20, [40.0] * 10], [[0] * 20, [0] * 10], cv=0.5)
    runs = {}
    for name in ("fifo", "srptms+c", "sca"):
        model = _model(wl, slots=100, scheduler=name)
        model.run()
        cols = model.engine.copies.cols
        n = model.engine.copies.n
        runs[name] = (cols["task"][:n], cols["factor"][:n], model)
    tasks, factor, fifo = runs["fifo"]
    assert np.unique(tasks).size == tasks.size          # FIFO: one copy per task
    assert np.unique(factor).size == factor.size        # every copy its own draw
    first = dict(zip(tasks.tolist(), factor.tolist(), strict=True))
    for name in ("srptms+c", "sca"):
        t, f, _ = runs[name]
        assert t.size > tasks.size                      # spare machines: clones
        seen: dict[int, int] = {}
        for task, fac in zip(t.tolist(), f.tolist(), strict=True):
            k = seen.get(task, 0)
            seen[task] = k + 1
            if k == 0:
                assert fac == first[task]               # copy 0 draws the same work
    # A lone copy on an idle unit-speed machine runs work * factor seconds.
    e = fifo.engine
    c = e.copies.cols
    n = e.copies.n
    np.testing.assert_allclose(c["end"][:n] - c["start"][:n],
                               e.task_work[c["task"][:n]] * c["factor"][:n], rtol=1e-9)


def test_copy_draws_change_with_the_seed_and_none_means_exact_work():
    wl = _jobs([[10.0] * 5], [[0] * 5], cv=0.5)
    a, b = _model(wl, 5, seed=1), _model(wl, 5, seed=2)
    a.run()
    b.run()
    assert not np.array_equal(a.engine.copies.cols["factor"][:5],
                              b.engine.copies.cols["factor"][:5])
    c = _model(wl, 5, variability="none")
    c.run()
    np.testing.assert_array_equal(c.engine.copies.cols["factor"][:5], 1.0)
    np.testing.assert_allclose(c.engine.task_done, 10.0)


def test_work_balance_holds_with_clones():
    wl = _jobs([[30.0] * 8, [20.0] * 4 + [10.0] * 2], [[0] * 8, [0] * 4 + [1] * 2], cv=1.0)
    model = _model(wl, slots=40, scheduler="srptms+c")
    result = model.run()
    executed, demanded, wasted = model.engine.work_balance()
    assert executed == pytest.approx(demanded + wasted)
    assert result.summary["copies_launched"] > wl.n_tasks


def test_weighted_mean_flowtime_by_hand():
    # Two slots, no variability: flowtimes 10 and 20 with weights 1 and 3.
    wl = _jobs([[10.0], [20.0]], [[0], [0]], weight=[1.0, 3.0])
    result = _model(wl, slots=2).run()
    np.testing.assert_allclose(result.jobs["flowtime"], [10.0, 20.0])
    assert result.summary["mean_flowtime"] == pytest.approx(15.0)
    assert result.summary["weighted_mean_flowtime"] == pytest.approx((10 + 3 * 20) / 4)


def test_compare_reports_the_weighted_mean_per_replication():
    import pandas as pd

    from geosim.experiment.stats import _weighted_mean
    jobs = pd.DataFrame({"seed": [1, 1, 2, 2], "flowtime": [10.0, 20.0, 30.0, 50.0],
                         "weight": [1.0, 3.0, 1.0, 1.0], "finished": [True] * 4})
    runs = pd.DataFrame({"seed": [1, 2]})
    assert _weighted_mean(jobs, runs) == pytest.approx(((10 + 60) / 4 + 40.0) / 2)


def test_srptms_never_preempts():
    from conftest import mapreduce_world
    # Loaded enough that jobs wait for machines, light enough that some get clones.
    result = GeoModel(load_scenario(mapreduce_world(scheduler="srptms+c", slots=10,
                                                    rate=0.08, n_jobs=40))).run()
    outcome = result.copies["outcome"].value_counts()
    assert outcome.get("killed", 0) == 0 and outcome.get("lost", 0) > 0


@pytest.mark.parametrize("sharing_set, started", [("unscheduled", 5), ("ready", 9)])
def test_srptms_sharing_set_holds_a_share_for_reduce_tasks_waiting(sharing_set, started):
    # Job 0 (t = 0): one map task of 100 s, then a reduce task. Job 1 (t = 1): ten map tasks.
    # With epsilon = 1 the jobs of psi share the 10 machines equally. As Algorithm 2 prints
    # psi ("jobs which have unscheduled tasks"), job 0, whose reduce task waits for its map,
    # deserves 5, runs 1 and keeps 4 idle: job 1 gets 5. With only ready jobs sharing, job 1
    # deserves all 10 and takes the 9 free.
    wl = _jobs([[100.0, 10.0], [50.0] * 10], [[0, 1], [0] * 10], arrival=[0.0, 1.0])
    world = closed_world(slots=10, n_jobs=2, scheduler="srptms+c", seed=1)
    world["scheduler"]["params"] = {"epsilon": 1.0, "r": 0.0, "max_copies": 1,
                                    "sharing_set": sharing_set}
    result = GeoModel(load_scenario(world), workload=wl).run()
    copies = result.copies
    job1 = copies[copies["task"] >= 2]
    assert int((job1["start"] == 1.0).sum()) == started
    assert int((copies[copies["task"] == 0]["start"] == 0.0).sum()) == 1
