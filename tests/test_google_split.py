"""The "split" Google-like law: copies within Table II's bounds, its mean, and Mantri's shares."""

from __future__ import annotations

import numpy as np
import pytest

import geosim
from geosim import GeoModel, load_scenario
from geosim.errors import GeosimError
from geosim.variability import copy_factors, truncated_factor_mean
from geosim.workload import google_jobs
from geosim.workload.google import split_law, task_duration_mean

D_MIN, D_MAX, D_MEAN = 12.8, 22919.3, 1179.7          # 000 Table II
CLONING = "scenarios/cloning-google.toml"


@pytest.mark.parametrize("family", ["pareto", "lognormal", "gamma"])
def test_truncated_factor_mean_and_draws_against_monte_carlo(family):
    rng = np.random.default_rng(7)
    n = 400_000
    cv = np.full(n, 0.4)
    lo, hi = np.full(n, 0.9), np.full(n, 1.6)
    f = copy_factors(family, cv, rng.random(n), lo, hi)
    assert f.min() >= 0.9 and f.max() <= 1.6
    exact = truncated_factor_mean(family, 0.4, 0.9, 1.6)
    assert f.mean() == pytest.approx(float(exact), abs=4 * f.std() / np.sqrt(n))
    # The truncated draw is the untruncated law conditioned on the bounds.
    free = copy_factors(family, cv, rng.random(n))
    inside = free[(free >= 0.9) & (free <= 1.6)]
    assert inside.mean() == pytest.approx(float(exact), abs=4 * inside.std() / np.sqrt(
        inside.size))
    # Without bounds the mean is 1, and infinite bounds change no draw.
    assert float(truncated_factor_mean(family, 0.4, 0.0, np.inf)) == pytest.approx(1.0)
    u = rng.random(1000)
    np.testing.assert_array_equal(copy_factors(family, cv[:1000], u),
                                  copy_factors(family, cv[:1000], u, np.zeros(1000),
                                               np.full(1000, np.inf)))


def test_split_law_fits_table_ii_mean_over_copies():
    law = split_law(D_MIN, D_MAX, D_MEAN)
    assert 0.05 < law.long_share < 0.15
    # (The law is solved on each part's quadrature; the mixture's own differs by its kink.)
    assert task_duration_mean(law.quantile, D_MIN, D_MAX, (0.1, 0.5), "pareto") == \
        pytest.approx(D_MEAN, rel=1e-5)
    # Two million phases, one copy each, drawn as the engine draws them.
    rng = np.random.default_rng(2026)
    e = law.quantile(rng.random(2_000_000))
    cv = rng.uniform(0.1, 0.5, e.size)
    d = e * copy_factors("pareto", cv, rng.random(e.size), D_MIN / e, D_MAX / e)
    assert d.min() >= D_MIN and d.max() <= D_MAX
    assert d.max() > 0.99 * D_MAX and d.min() < 1.01 * D_MIN
    assert d.mean() == pytest.approx(D_MEAN, abs=4 * d.std() / np.sqrt(d.size))
    # Short phases below the split, long ones above, in the solved proportion.
    assert np.mean(e > law.split) == pytest.approx(law.long_share, abs=0.002)


def test_google_jobs_split_bounds_every_copy_and_keeps_the_rest():
    split = google_jobs(3000, 0.17, np.random.default_rng(5))
    old = google_jobs(3000, 0.17, np.random.default_rng(5), duration_law="pareto")
    assert split.copy_bounds == (D_MIN, D_MAX) and old.copy_bounds == (0.0, np.inf)
    # Same arrivals, task counts, stages, weights and CVs; only the phase means differ.
    for name in ("arrival", "task_ptr", "task_stage", "weight", "task_cv"):
        np.testing.assert_array_equal(getattr(split, name), getattr(old, name))
    assert split.task_work.min() >= D_MIN and split.task_work.max() <= D_MAX
    with pytest.raises(GeosimError, match="duration_split must lie strictly between"):
        google_jobs(5, 1.0, np.random.default_rng(0), duration_split=30000.0)
    with pytest.raises(GeosimError, match="no share of long phases gives"):
        google_jobs(5, 1.0, np.random.default_rng(0), duration_mean=21000.0)


def test_engine_draws_every_copy_within_the_bounds():
    s = load_scenario(CLONING, overrides={"workload.n_jobs": 150,
                                          "scheduler.name": "srptms+c"})
    model = GeoModel(s)
    model.run()
    e = model.engine
    n = e.copies.n
    work = e.task_work[e.copies.cols["task"][:n]] * e.copies.cols["factor"][:n]
    assert n > e.task_work.size                    # clones drew their own work too
    assert work.min() >= D_MIN * (1 - 1e-12) and work.max() <= D_MAX * (1 + 1e-12)


def test_scenario_rejects_a_bad_duration_law():
    with pytest.raises(GeosimError, match="duration_law"):
        load_scenario(CLONING, overrides={"workload.duration_law": "lognormal"})
    with pytest.raises(GeosimError, match="workload.duration_split: must lie strictly"):
        load_scenario(CLONING, overrides={"workload.duration_split": 50000.0})
    # The split point means nothing to the pareto law.
    load_scenario(CLONING, overrides={"workload.duration_split": 50000.0,
                                      "workload.duration_law": "pareto"})


def test_mantri_shares_on_the_calibrated_law():
    # The law's two shapes were chosen (benchmarks/calibrate_000.py, 6064 jobs x 2 seeds)
    # so that 000's Mantri finishes about 44% of jobs within 100 s and 86% within 1000 s.
    # At 1500 jobs and one seed the shares are noisier; they stay within 4 points.
    result = geosim.run(CLONING, scheduler="mantri[duplicate_factor=2.0,max_restarts=0,"
                        "estimator=observed,check=free]", overrides={"workload.n_jobs": 1500})
    ft = result.jobs["flowtime"].to_numpy()
    assert np.mean(ft <= 100) == pytest.approx(0.44, abs=0.04)
    assert np.mean(ft <= 1000) == pytest.approx(0.86, abs=0.04)
