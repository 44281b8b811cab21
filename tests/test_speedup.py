"""The speedup function g(r, t) of redundant copies (002 §3) and s(r) of 000 §III-A."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import integrate
from scipy.stats import ks_2samp

from geosim.scenario import load_scenario
from geosim.speedup import (
    _expected_max,
    duration_speedup,
    estimate_g,
    pareto_speedup,
    peak_rate,
    service_increments,
    service_process,
    speedup_table,
)
from geosim.world import build_world, spawn_streams

GAMMA = "scenarios/redundancy-gamma.toml"
RS = np.arange(1, 9)

# 002 §6: AP Gamma(0.34, 94.35) at U[2, 3], UP Gamma(0.19, 39.92) at U[0, 0.3], mean rate 1.
MEAN_AP, MEAN_UP = 0.34 * 94.35, 0.19 * 39.92
P_ON = MEAN_AP / (MEAN_AP + MEAN_UP)
FACTOR = 1.0 / (P_ON * 2.5 + (1 - P_ON) * 0.15)


@pytest.fixture(scope="module")
def gamma():
    return load_scenario(GAMMA)


@pytest.fixture(scope="module")
def estimates(gamma):
    return {t: estimate_g(gamma, RS, t, samples=20000, seed=0) for t in (1.0, 10.0, 40.0)}


def test_subset_estimator_is_the_mean_over_every_subset():
    # Per window, "subsets" is the mean of the max over all C(n, r) subsets of r machines.
    x = np.random.default_rng(0).exponential(1.0, (3, 7))
    x[2] = 4.0                                                     # a constant row is exact
    rs = np.arange(1, 8)
    got = _expected_max(x, rs, "subsets")
    brute = [[np.mean([row[list(c)].max() for c in itertools.combinations(range(7), r)])
              for r in rs] for row in x]
    np.testing.assert_allclose(got, brute, rtol=1e-12)
    assert np.all(got[2] == 4.0)
    np.testing.assert_array_equal(_expected_max(x, rs, "first"), np.maximum.accumulate(x, 1))


# --- 000 §III-A: Pareto durations -----------------------------------------------------------


def test_pareto_closed_form():
    assert pareto_speedup(1, 2.0) == 1.0
    assert pareto_speedup(2, 2.0) == pytest.approx(1.5)           # (4 − 1) / (2 · 1)
    np.testing.assert_allclose(pareto_speedup(np.array([1, 2, 4]), 3.0), [1.0, 1.25, 11 / 8])
    assert isinstance(pareto_speedup(3, 2.5), float)
    # Concave and increasing in r (000 §III-A), below r, approaching α / (α − 1).
    s = pareto_speedup(np.arange(1, 50), 1.5)
    assert np.all(np.diff(s) > 0) and np.all(np.diff(s, 2) < 0)
    assert s[-1] < 3.0 and np.all(s <= np.arange(1, 50))


@pytest.mark.parametrize("alpha", [3.0, 5.0])
@pytest.mark.parametrize("estimator", ["subsets", "first"])
def test_duration_speedup_matches_pareto(alpha, estimator):
    # α > 2: T_1 and every min of r copies (Pareto(μ, rα)) have finite variance, so the
    # sample means obey the CLT and the delta-method standard error is meaningful. With
    # α = 2 (the scenario's job sizes) Var[T_1] is infinite and the error bar would be
    # meaningless. 200k rows give a relative error of about 0.1%; 5 standard errors
    # leave a false-alarm rate below 1e-5 per check.
    mu, rs = 20.0, np.arange(1, 5)

    def sampler(rng, size):
        return mu * (rng.pareto(alpha, size) + 1.0)

    est = duration_speedup(rs, sampler, samples=200_000, seed=11, estimator=estimator)
    exact = pareto_speedup(rs, alpha)
    assert np.all(est.stderr < 0.01 * exact)
    assert np.all(np.abs(est.speedup - exact) <= 5 * est.stderr + 1e-12)
    # E[T_r] = rαμ / (rα − 1): the minimum of r copies is Pareto(μ, rα).
    mean_min = rs * alpha * mu / (rs * alpha - 1)
    np.testing.assert_allclose(est.mean_duration, mean_min, rtol=0.01)
    frame = est.to_frame()
    assert list(frame.columns) == ["r", "mean_duration", "speedup", "stderr"]


def test_duration_speedup_from_array():
    rng = np.random.default_rng(5)
    x = 20.0 * (rng.pareto(3.0, (100_000, 6)) + 1.0)
    est = duration_speedup([1, 2, 6], x)
    assert est.speedup[0] == pytest.approx(1.0, abs=1e-12)     # subsets: r = 1 is E[T]/E[T]
    assert est.stderr[0] == pytest.approx(0.0, abs=1e-12)
    exact = pareto_speedup(np.array([1, 2, 6]), 3.0)
    assert np.all(np.abs(est.speedup - exact) <= 5 * est.stderr + 1e-12)
    # Exponential durations: the min of r is exponential with mean E[T]/r, so s(r) = r.
    e = rng.exponential(3.0, (50_000, 4))
    est = duration_speedup(np.arange(1, 5), e)
    assert np.all(np.abs(est.speedup - np.arange(1, 5)) <= 5 * est.stderr + 1e-12)


# --- 002 §3: g(r, t) on the 002 §6 machine model --------------------------------------------


def test_service_process_of_scenario(gamma):
    proc = service_process(gamma)
    assert proc.factor == pytest.approx(FACTOR)
    assert proc.mean_rate == pytest.approx(1.0)
    assert peak_rate(gamma) == pytest.approx(3.0 * FACTOR)          # Δ ≈ 1.463
    assert peak_rate(GAMMA) == peak_rate(gamma)
    assert service_process(load_scenario(GAMMA, {"availability.enabled": False})) is None


@pytest.mark.parametrize("t", [1.0, 10.0, 40.0])
def test_g_of_one_copy_is_t(estimates, t):
    # 002 Lemma 2: g(1, t) = E[S(0, t]] = t for a unit-mean-rate stationary process.
    est = estimates[t]
    assert est.r[0] == 1
    assert 0 < est.stderr[0] < 0.005 * t
    assert abs(est.g[0] - t) <= 4 * est.stderr[0]


@pytest.mark.parametrize("t", [1.0, 10.0, 40.0])
def test_lemmas_1_and_2(estimates, t):
    est = estimates[t]
    delta = peak_rate(GAMMA)
    # Lemma 1: concave in r. The subset estimator is concave for every sample, so this
    # holds up to rounding; it is also non-decreasing.
    assert np.all(np.diff(est.g, 2) <= 1e-12 * t)
    assert np.all(np.diff(est.g) > 0)
    # Lemma 2: g ≤ Δ t surely; g(r) ≤ r ĝ(1) holds for every sample, and ĝ(1) = t up to noise.
    assert np.all(est.g <= delta * t * (1 + 1e-12))
    assert np.all(est.g <= est.r * est.g[0] * (1 + 1e-12))
    assert np.all(est.g <= est.bound + 4 * est.stderr[0] * est.r)
    # Redundancy helps: with 8 copies the mean rate is well above 1 but below Δ.
    assert 1.3 < est.speedup[-1] < delta


def test_first_copies_estimator(gamma):
    # "first" (max over a window's first r machines) is unbiased too, non-decreasing for
    # every sample, and concave up to noise: with 20k windows, r ≤ 8 and these t, no
    # violation occurred over 40 seeds, so this fixed seed asserts it exactly.
    for t in (1.0, 10.0, 40.0):
        first = estimate_g(gamma, RS, t, samples=20000, seed=2, estimator="first")
        subsets = estimate_g(gamma, RS, t, samples=20000, seed=2)
        assert np.all(np.diff(first.g) >= 0)
        assert np.all(np.diff(first.g, 2) <= 0)
        se = np.hypot(first.stderr, subsets.stderr)
        assert np.all(np.abs(first.g - subsets.g) <= 4 * se)
        # Averaging over every subset of the window cuts the variance.
        assert np.all(subsets.stderr <= first.stderr * (1 + 1e-9))


def test_short_window_speedup_is_expected_max_rate(gamma):
    # As t → 0, S(0, t]/t is the rate at time 0, so g(r, t)/t → E[max of r stationary
    # rates] = ∫ (1 − F^r) with F = p·U[2, 3] + (1 − p)·U[0, 0.3], scaled by the factor.
    # A phase changes inside (0, t] with probability 2t / E[cycle] ≈ 5e-5 at t = 1e-3.
    def cdf(x):
        y = x / FACTOR
        return P_ON * np.clip(y - 2.0, 0, 1) + (1 - P_ON) * np.clip(y / 0.3, 0, 1)

    delta = 3.0 * FACTOR
    t = 1e-3
    est = estimate_g(gamma, RS, t, samples=20000, seed=3)
    for r, s, se in zip(est.r, est.speedup, est.stderr / t, strict=True):
        exact, _ = integrate.quad(lambda x, r=r: 1 - cdf(x) ** r, 0, delta,
                                  points=[0.3 * FACTOR, 2 * FACTOR], limit=200)
        assert abs(s - exact) <= 4 * se + 1e-3 * exact


def test_increments_match_geosim_slots():
    # The sampler reproduces geosim's own slot process (world.availability), both from a
    # fresh AP at time 0 (burn_in=0) and far into the run (stationary start).
    t, n = 10.0, 20000
    scen = load_scenario(GAMMA, {"tiers.small.slots": n})
    av = build_world(scen, spawn_streams(7)).availability
    fresh = av.advance(t, 0.0) * t
    av.advance(2000.0)
    late = av.advance(2000.0 + t, 2000.0) * t
    ours_fresh = service_increments(scen, t, 1, n, seed=3, burn_in=0.0)[:, 0]
    ours_stationary = service_increments(scen, t, 1, n, seed=3)[:, 0]
    assert ks_2samp(fresh, ours_fresh).pvalue > 1e-3
    assert ks_2samp(late, ours_stationary).pvalue > 1e-3
    # ... and the two regimes differ detectably: a fresh slot starts in an AP.
    assert ks_2samp(fresh, ours_stationary).pvalue < 1e-10
    assert ours_fresh.mean() > t


def test_increments_shape_bounds_and_speed(gamma):
    import time

    start = time.perf_counter()
    x = service_increments(gamma, 100.0, 10, 10_000, seed=1)       # 100k machine-windows
    elapsed = time.perf_counter() - start
    assert x.shape == (10_000, 10)
    assert np.all(x >= 0) and np.all(x <= peak_rate(gamma) * 100.0 * (1 + 1e-12))
    assert x.mean() == pytest.approx(100.0, rel=0.01)
    assert elapsed < 2.0


def test_constant_rate_integrates_to_t():
    # Rate 1 in every phase: the phase bookkeeping must add up to exactly the window.
    scen = load_scenario(GAMMA, {"availability.available_rate": 1.0,
                                 "availability.unavailable_rate": 1.0})
    for burn_in in (None, 0.0, 123.4):
        x = service_increments(scen, 75.0, 4, 500, seed=0, burn_in=burn_in)
        np.testing.assert_allclose(x, 75.0, rtol=1e-12)


def test_deterministic_process_gives_t_for_every_r():
    scen = load_scenario(GAMMA, {"availability.enabled": False})
    for estimator in ("subsets", "first"):
        est = estimate_g(scen, RS, 7.5, samples=100, estimator=estimator)
        np.testing.assert_array_equal(est.g, np.full(len(RS), 7.5))
        np.testing.assert_array_equal(est.stderr, np.zeros(len(RS)))
        assert est.peak_rate == 1.0
    assert np.all(service_increments(scen, 3.0, 2, 5) == 3.0)


def test_seeds(gamma):
    a = estimate_g(gamma, [1, 2, 4], 10.0, samples=2000, seed=42)
    b = estimate_g(gamma, [1, 2, 4], 10.0, samples=2000, seed=42)
    c = estimate_g(gamma, [1, 2, 4], 10.0, samples=2000, seed=43)
    np.testing.assert_array_equal(a.g, b.g)
    np.testing.assert_array_equal(a.stderr, b.stderr)
    assert np.all(a.g != c.g)
    x = service_increments(gamma, 5.0, 3, 100, seed=1, burn_in=50.0)
    np.testing.assert_array_equal(x, service_increments(gamma, 5.0, 3, 100, seed=1, burn_in=50.0))


def test_speedup_table(gamma):
    frame = speedup_table(gamma, [1, 2, 4], [1.0, 10.0], samples=2000, seed=0)
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["r", "t", "g", "stderr", "speedup", "bound"]
    assert frame[["t", "r"]].values.tolist() == [[1, 1], [1, 2], [1, 4], [10, 1], [10, 2], [10, 4]]
    np.testing.assert_allclose(frame["speedup"], frame["g"] / frame["t"])
    assert frame.attrs["peak_rate"] == pytest.approx(3.0 * FACTOR)
    single = estimate_g(gamma, [1, 2, 4], 10.0, samples=2000, seed=0)
    np.testing.assert_array_equal(frame["g"].to_numpy()[3:], single.g)


@pytest.mark.parametrize(("call", "match"), [
    (lambda s: estimate_g(s, 2, 0.0), "t must be > 0, got 0.0"),
    (lambda s: estimate_g(s, 2, -1), "t must be > 0, got -1"),
    (lambda s: estimate_g(s, 2, float("nan")), "t must be finite"),
    (lambda s: estimate_g(s, 2, "10"), "t must be a real number"),
    (lambda s: estimate_g(s, 0, 1.0), "r must be an integer >= 1.*0"),
    (lambda s: estimate_g(s, [1, 2.5], 1.0), r"r must be an integer >= 1.*2\.5"),
    (lambda s: estimate_g(s, [], 1.0), "r must be"),
    (lambda s: estimate_g(s, True, 1.0), "r must be"),
    (lambda s: estimate_g(s, 2, 1.0, samples=1), "samples must be an integer >= 2, got 1"),
    (lambda s: estimate_g(s, 2, 1.0, samples=10.0), "samples must be an integer"),
    (lambda s: estimate_g(s, 2, 1.0, estimator="mean"), "estimator must be one of"),
    (lambda s: service_increments(s, 1.0, 0, 10), "n_machines must be an integer >= 1, got 0"),
    (lambda s: service_increments(s, 1.0, 2, 0), "n_windows must be an integer >= 1, got 0"),
    (lambda s: service_increments(s, 1.0, 2, 2, burn_in=-5), "burn_in must be finite and >= 0"),
    (lambda s: speedup_table(s, [1], []), "ts must be a non-empty"),
    (lambda s: speedup_table(s, [1], [1.0, 0.0], samples=10), "t must be > 0, got 0.0"),
])
def test_bad_arguments(gamma, call, match):
    with pytest.raises(ValueError, match=match):
        call(gamma)


def test_bad_speedup_arguments():
    with pytest.raises(ValueError, match="alpha must be > 1.*1.0"):
        pareto_speedup(2, 1.0)
    with pytest.raises(ValueError, match="alpha must be > 1.*0.5"):
        pareto_speedup(2, 0.5)
    with pytest.raises(ValueError, match=r"r must be ≥ 1, got 0\.5"):
        pareto_speedup(0.5, 2.0)
    with pytest.raises(ValueError, match="r must be"):
        duration_speedup(0, np.ones((10, 2)))
    with pytest.raises(ValueError, match="durations must have shape"):
        duration_speedup(3, np.ones((10, 2)))
    with pytest.raises(ValueError, match="durations must have shape"):
        duration_speedup(1, np.ones((1, 2)))
    with pytest.raises(ValueError, match="sampler returned shape"):
        duration_speedup(2, lambda rng, size: rng.random(5), samples=10)
    with pytest.raises(ValueError, match="samples must be an integer >= 2, got 1"):
        duration_speedup(2, lambda rng, size: rng.random(size), samples=1)
    with pytest.raises(ValueError, match="durations must be finite"):
        duration_speedup(1, np.full((3, 1), np.inf))
