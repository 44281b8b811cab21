"""Stages and per-copy variability of a Workload; the MapReduce and Google-trace generators."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import tiny_workload

from geosim.errors import GeosimError
from geosim.scenario import load_scenario
from geosim.workload import (
    GOOGLE_PRIORITY_PROBS,
    MAPREDUCE_TYPES,
    Workload,
    bounded_pareto,
    bounded_pareto_mean,
    bounded_pareto_shape,
    build_workload,
    concat,
    empty_workload,
    google_jobs,
    google_task_counts,
    mapreduce_jobs,
    montage_jobs,
    task_count_exponent,
    task_count_pmf,
)
from geosim.world import build_world, spawn_streams

ROOT = Path(__file__).resolve().parents[1]
ARRAYS = ("arrival", "weight", "task_ptr", "task_work", "task_type", "edge_src", "edge_dst",
          "edge_size", "raw_ptr", "raw_cluster", "raw_size", "task_stage", "task_cv")
# 000 Table II
MEAN_TASKS, D_MIN, D_MAX, D_MEAN = 26.31, 12.8, 22919.3, 1179.7


def same(a: Workload, b: Workload) -> bool:
    return a.type_names == b.type_names and all(
        np.array_equal(getattr(a, k), getattr(b, k)) for k in ARRAYS)




@pytest.fixture(scope="module")
def mr() -> Workload:
    return mapreduce_jobs(300, 0.1, np.random.default_rng(3), map_tasks=(1, 20),
                          reduce_tasks=(0, 6), map_cv=0.4, reduce_cv=0.8, weight=(1, 5))


@pytest.fixture(scope="module")
def google() -> Workload:
    return google_jobs(20_000, 0.1731, np.random.default_rng(11), duration_law="pareto")


# ------------------------------------------------------------------------------- the new fields
def test_stage_and_cv_default_to_zeros():
    w = tiny_workload()
    assert w.task_stage.dtype == np.int32 and w.task_cv.dtype == np.float64
    np.testing.assert_array_equal(w.task_stage, [0, 0, 0])
    np.testing.assert_array_equal(w.task_cv, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(w.n_stages, [1, 1])
    with pytest.raises(ValueError):
        w.task_stage[0] = 1
    with pytest.raises(ValueError):
        w.task_cv[0] = 1.0
    positional = Workload(*(getattr(w, k) for k in (
        "arrival", "weight", "task_ptr", "task_work", "task_type", "type_names", "edge_src",
        "edge_dst", "edge_size", "raw_ptr", "raw_cluster", "raw_size")))
    assert same(positional, w)
    e = empty_workload()
    assert e.task_stage.shape == (0,) and e.task_cv.shape == (0,) and e.n_stages.shape == (0,)
    e.validate(0)


def test_stage_and_cv_are_coerced_and_checked():
    w = tiny_workload(task_stage=[0.0, 1.0, 0.0], task_cv=[0, 1, 2])
    assert w.task_stage.dtype == np.int32 and w.task_cv.dtype == np.float64
    w.validate(3)
    np.testing.assert_array_equal(w.n_stages, [2, 1])
    with pytest.raises(GeosimError, match=r"task_stage\[1\] = .*0.5.* is not an integer"):
        tiny_workload(task_stage=[0, 0.5, 0])


@pytest.mark.parametrize(("changes", "match"), [
    ({"task_stage": [0, 0]}, "task_stage has length 2, expected n_tasks = 3"),
    ({"task_cv": [0.1]}, "task_cv has length 1, expected n_tasks = 3"),
    ({"task_cv": [0.1, -0.2, 0.0]}, r"task 1 \(job 0\) has invalid work coefficient of var"),
    ({"task_cv": [0.1, 0.0, np.nan]}, r"task 2 \(job 1\) has invalid work coefficient of var"),
    ({"task_cv": [np.inf, 0.0, 0.0]}, "must be finite and >= 0"),
    ({"task_stage": [1, 1, 0]}, r"task 0 \(job 0\) has stage 1, but the first task of a job"),
    ({"task_stage": [0, 0, 1]}, r"task 2 \(job 1\) has stage 1, but the first task"),
    ({"task_stage": [0, 2, 0]}, r"task 1 \(job 0\) has stage 2 after stage 0: a job's stages"),
    ({"task_stage": [1, 0, 0]}, r"edge 0 \(0 -> 1, job 0\) goes from stage 1 back to stage 0"),
    ({"task_stage": [-1, 0, 0]}, "has stage -1, but the first task"),
])
def test_stage_and_cv_validation(changes, match):
    with pytest.raises(GeosimError, match=match):
        tiny_workload(**changes).validate(3)


def test_stages_must_not_decrease_within_a_job():
    w = Workload(arrival=[0.0], weight=[1.0], task_ptr=[0, 4], task_work=np.ones(4),
                 task_type=np.zeros(4), type_names=("t",), edge_src=[], edge_dst=[],
                 edge_size=[], raw_ptr=np.zeros(5), raw_cluster=[], raw_size=[],
                 task_stage=[0, 1, 1, 0])
    with pytest.raises(GeosimError, match=r"task 3 \(job 0\) has stage 0 after stage 1"):
        w.validate(1)
    # edges may coexist with stages when they go forward in stage
    ok = Workload(arrival=[0.0], weight=[1.0], task_ptr=[0, 4], task_work=np.ones(4),
                  task_type=np.zeros(4), type_names=("t",), edge_src=[0, 1, 2],
                  edge_dst=[1, 3, 3], edge_size=[1.0, 1.0, 1.0], raw_ptr=np.zeros(5),
                  raw_cluster=[], raw_size=[], task_stage=[0, 0, 1, 2])
    ok.validate(1)
    np.testing.assert_array_equal(ok.n_stages, [3])


def test_subset_take_jobs_and_concat_carry_stage_and_cv(mr):
    nt = mr.task_ptr[40]
    s = mr.subset(40)
    np.testing.assert_array_equal(s.task_stage, mr.task_stage[:nt])
    np.testing.assert_array_equal(s.task_cv, mr.task_cv[:nt])

    order = np.random.default_rng(0).permutation(mr.n_jobs)
    t = mr.take_jobs(order)  # arrivals out of order: not a valid run, but a valid selection
    for i in (0, 1, 17, mr.n_jobs - 1):
        j = order[i]
        old = slice(mr.task_ptr[j], mr.task_ptr[j + 1])
        new = slice(t.task_ptr[i], t.task_ptr[i + 1])
        np.testing.assert_array_equal(t.task_stage[new], mr.task_stage[old])
        np.testing.assert_array_equal(t.task_cv[new], mr.task_cv[old])
    assert same(t.take_jobs(np.argsort(order)), mr)

    m = montage_jobs(10, 1.0, np.random.default_rng(1), input_clusters=[0],
                     start=float(mr.arrival[-1]))
    c = concat([mr, m])
    c.validate(1)
    assert c.type_names == MAPREDUCE_TYPES + m.type_names
    np.testing.assert_array_equal(c.task_stage[: mr.n_tasks], mr.task_stage)
    np.testing.assert_array_equal(c.task_cv[: mr.n_tasks], mr.task_cv)
    assert (c.task_stage[mr.n_tasks:] == 0).all() and (c.task_cv[mr.n_tasks:] == 0).all()
    mixed = concat([mr.subset(30), m.subset(3), mr.subset(5)], sort_by_arrival=True)
    mixed.validate(1)
    assert mixed.task_stage.sum() == 2 * mr.subset(5).task_stage.sum() + \
        mr.subset(30).task_stage.sum() - mr.subset(5).task_stage.sum()


# ------------------------------------------------------------------------------- MapReduce
def test_mapreduce_job_shapes(mr):
    mr.validate(1)
    assert mr.type_names == ("map", "reduce") and mr.n_edges == 0 and mr.n_raw == 0
    assert (mr.raw_ptr == 0).all()
    np.testing.assert_array_equal(mr.task_stage, mr.task_type)
    n_map = np.bincount(mr.job_of_task, weights=mr.task_stage == 0, minlength=mr.n_jobs)
    n_red = np.bincount(mr.job_of_task, weights=mr.task_stage == 1, minlength=mr.n_jobs)
    assert n_map.min() >= 1 and n_map.max() <= 20 and n_red.min() == 0 and n_red.max() == 6
    assert set(np.unique(n_map)) == set(range(1, 21))  # uniform over the whole range
    np.testing.assert_array_equal(mr.n_stages, 1 + (n_red > 0))
    for j in range(mr.n_jobs):
        lo, hi = mr.task_ptr[j], mr.task_ptr[j + 1]
        stage, work = mr.task_stage[lo:hi], mr.task_work[lo:hi]
        assert (np.diff(stage) >= 0).all()                     # maps first
        for phase in (0, 1):                                    # one mean per phase
            assert np.unique(work[stage == phase]).size <= 1
    assert (mr.task_work >= 10.0).all() and (mr.task_work <= 100.0).all()
    np.testing.assert_array_equal(mr.task_cv, np.where(mr.task_stage == 1, 0.8, 0.4))
    assert set(np.unique(mr.weight)) == {1.0, 2.0, 3.0, 4.0, 5.0}


def test_mapreduce_scalars_and_work_scale():
    w = mapreduce_jobs(50, 1.0, np.random.default_rng(5), map_tasks=3, reduce_tasks=0,
                       map_mean=[20.0], work_scale=200.0, map_cv=0.0)
    w.validate(1)
    assert (np.diff(w.task_ptr) == 3).all() and (w.task_stage == 0).all()
    np.testing.assert_allclose(w.task_work, 4000.0)
    assert (w.task_cv == 0).all() and (w.weight == 1).all()


def test_mapreduce_same_seed_same_arrays(mr):
    kw = {"map_tasks": (1, 20), "reduce_tasks": (0, 6), "map_cv": 0.4, "reduce_cv": 0.8,
          "weight": (1, 5)}
    again = mapreduce_jobs(300, 0.1, np.random.default_rng(3), **kw)
    assert same(again, mr)
    other = mapreduce_jobs(300, 0.1, np.random.default_rng(4), **kw)
    assert not np.array_equal(other.arrival, mr.arrival)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"map_tasks": 0}, "map_tasks must satisfy 1 <= low <= high"),
    ({"map_tasks": (1, 2, 3)}, "map_tasks must be a number or a"),
    ({"reduce_tasks": (-1, 2)}, "reduce_tasks must satisfy 0 <= low"),
    ({"reduce_tasks": (1.5, 2)}, "reduce_tasks must be integers"),
    ({"map_mean": 0.0}, "map_mean must be > 0"),
    ({"reduce_mean": (50.0, 10.0)}, "reduce_mean must satisfy"),
    ({"map_cv": -0.1}, "map_cv must be >= 0"),
    ({"reduce_cv": float("nan")}, "reduce_cv must be >= 0"),
    ({"weight": 0}, "weight must satisfy 1 <= low"),
    ({"work_scale": 0.0}, "work_scale must be > 0"),
])
def test_mapreduce_rejects_bad_parameters(kwargs, match):
    with pytest.raises(GeosimError, match=match):
        mapreduce_jobs(5, 1.0, np.random.default_rng(0), **kwargs)


def test_stage_barrier_memory_is_linear_in_tasks():
    w = mapreduce_jobs(1, 1.0, np.random.default_rng(0), map_tasks=2000, reduce_tasks=500)
    w.validate(1)
    assert w.n_tasks == 2500 and w.n_edges == 0
    np.testing.assert_array_equal(np.bincount(w.task_stage), [2000, 500])
    nbytes = sum(getattr(w, k).nbytes for k in ARRAYS)
    assert nbytes < 64 * w.n_tasks             # no m x r = 10**6 edges


# ------------------------------------------------------------------------------- Google trace
def test_task_count_law_is_fitted_to_the_mean():
    a = task_count_exponent(MEAN_TASKS, 5000)
    assert round(a, 4) == 0.6403
    p = task_count_pmf(a, 5000)
    assert p @ np.arange(1, 5001) == pytest.approx(MEAN_TASKS, rel=1e-10)
    assert (np.diff(p) < 0).all()                                   # decreasing, heavy tail
    assert task_count_exponent(5.0, 100) > task_count_exponent(10.0, 100)
    with pytest.raises(GeosimError, match="mean_tasks must lie strictly between 1 and"):
        task_count_exponent(6000.0, 5000)


def test_duration_law_is_fitted_to_the_mean():
    shape = bounded_pareto_shape(D_MIN, D_MAX, D_MEAN)
    assert round(shape, 4) == 0.2942
    assert bounded_pareto_mean(D_MIN, D_MAX, shape) == pytest.approx(D_MEAN, rel=1e-10)
    # the log-uniform and shape-1 limits are continuous
    for s in (0.0, 1.0):
        assert bounded_pareto_mean(D_MIN, D_MAX, s) == pytest.approx(
            bounded_pareto_mean(D_MIN, D_MAX, s + 1e-7), rel=1e-5)
    assert bounded_pareto_shape(1.0, 10.0, 8.0) < 0      # mean above the log-uniform one
    with pytest.raises(GeosimError, match="duration_min < duration_mean < duration_max"):
        bounded_pareto_shape(D_MIN, D_MAX, 30000.0)


def test_google_laws_over_large_samples():
    rng = np.random.default_rng(2024)
    n = google_task_counts(2_000_000, rng)
    assert n.min() == 1 and n.max() <= 5000
    assert n.mean() == pytest.approx(MEAN_TASKS, rel=0.03)          # standard error 0.5%
    shape = bounded_pareto_shape(D_MIN, D_MAX, D_MEAN)
    d = bounded_pareto(2_000_000, rng, D_MIN, D_MAX, shape)
    assert d.min() >= D_MIN and d.max() <= D_MAX
    assert d.mean() == pytest.approx(D_MEAN, rel=0.01)               # standard error 0.2%
    u = bounded_pareto(100_000, rng, 1.0, np.e, 0.0)                 # log-uniform
    assert np.log(u).mean() == pytest.approx(0.5, abs=0.01)


def test_google_jobs_match_table_ii(google):
    w = google
    w.validate(1)
    counts = np.diff(w.task_ptr)
    # every duration in Table II's range, each phase one mean, cv in the default range
    assert w.task_work.min() >= D_MIN and w.task_work.max() <= D_MAX
    assert w.task_cv.min() >= 0.1 and w.task_cv.max() <= 0.5
    # Heavy tails: over 20 000 jobs the sample means have standard errors of about 5%
    # (tasks per job) and 14% (duration over tasks), so a 3% band would pass or fail by the
    # seed's luck (test_google_laws_over_large_samples checks the laws to 3% and 1% over 2
    # million draws). Here each mean is checked against its own estimated standard error
    # (the duration's with a wider margin: a few huge jobs make its estimate optimistic).
    se_n = counts.std() / np.sqrt(w.n_jobs)
    assert abs(counts.mean() - MEAN_TASKS) < 4 * se_n
    d = w.task_work
    job = w.job_of_task
    resid = np.bincount(job, weights=d - d.mean(), minlength=w.n_jobs)  # per-job sums
    se_d = np.sqrt((resid ** 2).sum()) / w.n_tasks
    assert abs(d.mean() - D_MEAN) < 6 * se_d
    # mean over tasks = mean over phases (durations independent of task counts)
    first = w.task_ptr[:-1]
    phase_means = np.concatenate([d[first], d[w.task_ptr[1:] - 1][w.n_stages == 2]])
    assert phase_means.mean() == pytest.approx(D_MEAN, rel=0.08)        # se 1.6%
    assert abs(np.corrcoef(counts, d[first])[0, 1]) < 0.03
    # phases, weights, arrivals
    r = np.bincount(job, weights=w.task_stage, minlength=w.n_jobs).astype(np.int64)
    np.testing.assert_array_equal(r, np.floor(0.2 * counts + 1e-9))
    np.testing.assert_array_equal(w.n_stages, np.where(counts >= 5, 2, 1))
    freq = np.bincount(w.weight.astype(np.int64) - 1, minlength=12) / w.n_jobs
    np.testing.assert_allclose(freq, GOOGLE_PRIORITY_PROBS, atol=0.015)
    assert np.diff(w.arrival).mean() == pytest.approx(35032 / 6064, rel=0.03)


def test_google_jobs_same_seed_and_parameters(google):
    assert same(google_jobs(20_000, 0.1731, np.random.default_rng(11), duration_law="pareto"),
                google)
    w = google_jobs(500, 0.2, np.random.default_rng(1), reduce_fraction=0.0, task_cv=0.0,
                    priority_probs=[0] * 9 + [1, 0, 0], max_tasks=200, mean_tasks=10.0)
    w.validate(1)
    assert (w.task_stage == 0).all() and (w.task_cv == 0).all() and (w.weight == 10).all()
    assert np.diff(w.task_ptr).max() <= 200


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"mean_tasks": 1.0}, "mean_tasks must lie strictly between 1 and max_tasks"),
    ({"mean_tasks": 30.0, "max_tasks": 20}, "mean_tasks must lie strictly between"),
    ({"duration_mean": 5.0}, "duration_min < duration_mean < duration_max"),
    ({"duration_min": -1.0}, "duration_min must be > 0"),
    ({"reduce_fraction": 1.0}, r"reduce_fraction must be in \[0, 1\)"),
    ({"task_cv": -1.0}, "task_cv must be >= 0"),
    ({"priority_probs": [0.5, 0.5]}, "priority_probs must be 12 non-negative"),
    ({"priority_probs": [0.1] * 12}, "priority_probs must be 12 non-negative"),
])
def test_google_jobs_reject_bad_parameters(kwargs, match):
    with pytest.raises(GeosimError, match=match):
        google_jobs(5, 1.0, np.random.default_rng(0), **kwargs)


# ------------------------------------------------------------------------------- scenarios
def _built(scenario) -> Workload:
    streams = spawn_streams(scenario["run"]["seed"])
    world = build_world(scenario, streams)
    return build_workload(scenario, world, streams["workload"])


def test_scenario_kinds_mapreduce_and_google():
    base = {"topology": {"generator": "single"}, "tiers": {"small": {"slots": 8}}}
    s = load_scenario({**base, "workload": {"kind": "mapreduce", "n_jobs": 40,
                                            "map_tasks": [2, 4], "reduce_tasks": 3,
                                            "map_mean": 5.0, "weight": [1, 3]}})
    w = _built(s)
    w.validate(1)
    assert w.n_jobs == 40 and (w.n_stages == 2).all() and (w.task_cv == 0.5).all()
    assert set(np.unique(np.bincount(w.job_of_task, weights=w.task_stage))) == {3.0}
    assert (w.task_work[w.task_stage == 0] == 5.0).all()
    g = _built(load_scenario({**base, "workload": {"kind": "google", "n_jobs": 50}}))
    same_again = google_jobs(50, 0.07, spawn_streams(1)["workload"])
    assert same(g, same_again)


def test_shipped_cloning_google_scenario():
    s = load_scenario(ROOT / "scenarios" / "cloning-google.toml")
    assert s.get("workload.kind") == "google" and s.get("workload.n_jobs") == 6064
    assert s.get("workload.arrival_rate") == pytest.approx(6064 / 35032, abs=1e-4)
    assert s.get("tiers.small.slots") == 12000 and s.get("scheduler.name") == "fair"
    assert s.get("workload.copy_variability") == "pareto"


@pytest.mark.parametrize(("changes", "match"), [
    ({"duration_mean": 5.0}, "workload.duration_mean: must lie strictly between"),
    ({"duration_min": 30000.0}, "workload.duration_max: must exceed workload.duration_min"),
    ({"mean_tasks": 6000.0}, "workload.mean_tasks: must be below workload.max_tasks"),
    ({"priority_probs": [1.0]}, "workload.priority_probs: must be 12 non-negative"),
    ({"priority_probs": [0.5] + [0.05] * 10 + [-0.0001]}, "workload.priority_probs"),
    ({"reduce_fraction": 1.0}, "workload.reduce_fraction: must be < 1"),
    ({"reduce_tasks": -1}, "workload.reduce_tasks: must be >= 0"),
    ({"map_mean": [0.0, 5.0]}, "workload.map_mean: must be > 0"),
    ({"weight": 0}, "workload.weight: must be >= 1"),
    ({"copy_variability": "weibull"}, "workload.copy_variability: must be one of"),
    ({"kind": "trace"}, "workload.kind: must be one of"),
])
def test_scenario_rejects_bad_workload_keys(changes, match):
    with pytest.raises(GeosimError, match=match):
        load_scenario({"workload": changes})


def test_google_cv_is_drawn_per_phase_and_shared_within_it():
    from geosim.workload import google_jobs
    w = google_jobs(400, 0.17, np.random.default_rng(3))
    assert w.task_cv.min() >= 0.1 and w.task_cv.max() <= 0.5
    key = w.job_of_task * 2 + w.task_stage
    for k in np.unique(key)[:200]:
        assert np.unique(w.task_cv[key == k]).size == 1
    assert np.unique(w.task_cv).size > 100
    fixed = google_jobs(50, 0.17, np.random.default_rng(3), task_cv=0.3, duration_law="pareto")
    np.testing.assert_array_equal(fixed.task_cv, 0.3)
    # The other arrays do not depend on how the CV is drawn (it is drawn last). (Under the
    # "split" law the phase means do, through the share of long phases that keeps the
    # copies' mean.)
    ranged = google_jobs(50, 0.17, np.random.default_rng(3), duration_law="pareto")
    np.testing.assert_array_equal(fixed.task_work, ranged.task_work)
    np.testing.assert_array_equal(fixed.weight, ranged.weight)
