"""003's prototype (§5): the Spark applications generator and the prototype-003 scenario."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import geosim
from geosim.errors import GeosimError
from geosim.model import GeoModel
from geosim.scenario import load_scenario
from geosim.workload import (
    SPARK_APPS,
    TABLE1_INPUT_MB,
    SparkCosts,
    Workload,
    poisson_arrivals,
    spark_app_draws,
    spark_app_jobs,
)

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "prototype-003.toml"
CLUSTERS = np.arange(10)


def jobs(n: int, seed: int, **kwargs) -> Workload:
    return spark_app_jobs(n, 0.01, np.random.default_rng(seed), input_clusters=CLUSTERS,
                          **kwargs)


def draws(n: int, seed: int, **kwargs) -> tuple[np.ndarray, np.ndarray]:
    """The applications and classes ``jobs(n, seed)`` drew (arrivals are drawn first)."""
    rng = np.random.default_rng(seed)
    poisson_arrivals(n, 0.01, rng)
    return spark_app_draws(n, rng, **kwargs)


def job_input(w: Workload) -> np.ndarray:
    raw = np.bincount(w.raw_task, weights=w.raw_size, minlength=w.n_tasks)
    return np.add.reduceat(raw, w.task_ptr[:-1])


def app_of(w: Workload) -> list[str]:
    return [w.type_names[t].split(".")[0] for t in w.task_type[w.task_ptr[:-1]]]


def test_the_88_jobs_hold_table_1s_mix_exactly():
    app, cls = spark_app_draws(88, np.random.default_rng(1))
    assert np.bincount(app).tolist() == [30, 29, 29]      # equal shares, largest remainder
    assert np.bincount(cls).tolist() == [41, 35, 12]      # 46.6% / 39.8% / 13.6%
    app, cls = spark_app_draws(40_000, np.random.default_rng(2), exact_mix=False)
    assert np.allclose(np.bincount(cls) / 40_000, [0.46, 0.40, 0.14], atol=0.01)
    assert np.allclose(np.bincount(app) / 40_000, [1 / 3] * 3, atol=0.01)


def test_inputs_lie_in_table_1s_range_of_their_application_and_class():
    w = jobs(88, 4)
    app, cls = draws(88, 4)
    assert app_of(w) == [SPARK_APPS[a] for a in app]
    size = job_input(w)
    ranges = np.asarray(TABLE1_INPUT_MB)[app, cls]
    assert ((size >= ranges[:, 0]) & (size <= ranges[:, 1])).all()
    assert set(np.unique(w.raw_cluster)) <= set(CLUSTERS)


@pytest.mark.parametrize("app", SPARK_APPS)
def test_stages_tasks_and_precedence_of_each_application(app):
    c = SparkCosts()
    k = 4
    w = jobs(60, 7, ml_iterations=k, pagerank_iterations=k, work_cv=0.0,
             reference_mips=1.0)
    j = app_of(w).index(app)
    lo, hi = int(w.task_ptr[j]), int(w.task_ptr[j + 1])
    total = job_input(w)[j]
    p = math.ceil(total / 128.0)
    stage = w.task_stage[lo:hi]
    n_stages = {"wordcount": 2, "ml": k, "pagerank": k + 3}[app]
    assert np.bincount(stage).tolist() == [p] * n_stages      # p tasks in every stage
    names = [w.type_names[t] for t in w.task_type[lo:hi]]
    per_stage = [sorted(set(names[s * p:(s + 1) * p])) for s in range(n_stages)]
    assert all(len(t) == 1 for t in per_stage)                 # one type per stage
    assert len({t[0] for t in per_stage}) == n_stages          # a TaskSet per stage
    # raw input: one HDFS block per first-stage task
    blocks = w.raw_size[w.raw_ptr[lo]:w.raw_ptr[hi]]
    assert np.diff(w.raw_ptr[lo:hi + 1]).tolist() == [1] * p + [0] * (hi - lo - p)
    assert (blocks <= 128.0 + 1e-9).all() and math.isclose(blocks.sum(), total)
    # edges: only from stage s to stage s + 1 of the same job
    mine = (w.edge_dst >= lo) & (w.edge_dst < hi)
    src, dst, size = w.edge_src[mine] - lo, w.edge_dst[mine] - lo, w.edge_size[mine]
    assert ((src >= 0) & (stage[dst] == stage[src] + 1)).all()
    per_pair = np.bincount(stage[src], minlength=n_stages - 1)
    if app == "ml":       # task i of an iteration reads the cached partition i
        assert per_pair.tolist() == [p] * (k - 1)
        assert (src % p == dst % p).all() and np.allclose(size, blocks[src % p] * c.ml_cache)
        assert np.allclose(w.task_work[lo:lo + p], c.ml_load * blocks)
    else:                 # all-to-all shuffles
        assert per_pair.tolist() == [p * p] * (n_stages - 1)
    if app == "wordcount":
        assert math.isclose(size.sum(), c.wordcount_shuffle * total)
        assert np.allclose(w.task_work[lo:lo + p], c.wordcount_map * blocks)
    if app == "pagerank":
        out = np.bincount(stage[src], weights=size, minlength=n_stages - 1)
        links = total                                     # distinct, groupByKey, then
        expect = [total, total] + [(1 + c.pagerank_contrib) * links] * (k - 1) \
            + [c.pagerank_contrib * links]                # contributions (+ cached links)
        assert np.allclose(out, expect)
        assert np.allclose(w.task_work[hi - p:hi], c.pagerank_ranks * c.pagerank_contrib
                           * total / p)
    w.validate(10)


def test_the_generator_draws_only_from_its_generator():
    a, b = jobs(30, 11), jobs(30, 11)
    assert all(np.array_equal(getattr(a, f), getattr(b, f)) for f in (
        "arrival", "task_work", "edge_size", "raw_cluster", "raw_size", "task_stage"))
    assert not np.array_equal(a.task_work, jobs(30, 12).task_work)


def test_bad_parameters_are_refused():
    with pytest.raises(GeosimError, match="app_weights"):
        jobs(5, 1, app_weights=(1, -1, 1))
    with pytest.raises(GeosimError, match="block_mb"):
        jobs(5, 1, block_mb=0)
    with pytest.raises(GeosimError, match="workload.spark_size_mix: must be three"):
        load_scenario(SCENARIO, overrides={"workload.spark_size_mix": [0.5, 0.5]})


def test_the_prototype_scenario_follows_003_section_5():
    s = load_scenario(SCENARIO)
    model = GeoModel(s, "spark")
    world, wl = model.world, model.workload
    assert world.n_clusters == 10 and sorted(world.slots.tolist()) == [4] * 6 + [8] * 4
    assert wl.n_jobs == 88 and s["workload"]["arrival_rate"] == pytest.approx(3 / 300)
    assert set(world.input_clusters.tolist()) == set(range(10))
    assert GeoModel(s, "pingan").policy.epsilon == 0.6


def test_a_small_run_of_the_three_schedulers_finishes_every_job():
    cmp = geosim.compare(SCENARIO, ["spark", "spark+speculation", "pingan[epsilon=0.6]"],
                         seeds=[3], jobs_parallel=1, baseline="spark+speculation",
                         within=(200,), overrides={"workload.n_jobs": 6,
                                                   "workload.spark_ml_iterations": 3,
                                                   "workload.spark_pagerank_iterations": 3})
    assert (cmp.runs["jobs_done"] == 6).all()
    assert cmp.summary["unfinished"].eq(0).all()


def test_the_memory_estimate_counts_spark_tasks_and_shuffle_edges():
    from geosim import footprint

    scenario = load_scenario(SCENARIO)
    model = GeoModel(scenario, "spark")
    est = model.footprint
    built = model.workload.n_tasks + model.engine.out_dst.size * (
        footprint.EDGE_BYTES / footprint.TASK_BYTES)
    assert 0.75 * built <= est.tasks <= 1.5 * built
    expected = footprint.estimate(scenario, model.world.graph)      # before the jobs exist
    assert 0.75 * built <= expected.tasks <= 1.5 * built
    bigger = footprint.estimate(scenario.with_overrides({"workload.n_jobs": 880}),
                                model.world.graph)
    assert bigger.tasks == pytest.approx(10 * expected.tasks)
