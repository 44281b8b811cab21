"""The performance modeler: exact composition of rate distributions, and learning."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import geo_world
from scipy import stats

from geosim import GeoModel, load_scenario
from geosim.modeler import (
    PairTable,
    PerformanceModel,
    _positions,
    expected_max,
    expected_min,
    levels,
    normal_atoms,
    pair_rows,
)
from geosim.monitor import Monitor, Priors


def _enumerate(atoms: np.ndarray, op) -> list[float]:
    present = [row for row in atoms if np.isfinite(row[0])]
    return [op(c) for c in itertools.product(*present)]


def test_expected_min_and_max_match_enumeration():
    rng = np.random.default_rng(0)
    k = 4
    atoms = np.sort(rng.uniform(0, 10, (30, 3, k)), axis=2)
    atoms[::3, 2] = np.inf                       # an absent variable
    mean, q = expected_min(atoms, quantiles=True)
    for i in range(atoms.shape[0]):
        values = _enumerate(atoms[i], min)
        assert mean[i] == pytest.approx(np.mean(values), rel=1e-12)
        assert q[i] == pytest.approx(np.quantile(values, levels(k), method="inverted_cdf"))
    top = np.where(np.isinf(atoms), -np.inf, atoms)
    mx = expected_max(top)
    for i in range(atoms.shape[0]):
        assert mx[i] == pytest.approx(np.mean(_enumerate(top[i], max)), rel=1e-12)


def test_positions_of_sorted_keys_are_those_of_searchsorted():
    # The refresh maps its previous pairs into the current ones by one merge.
    rng = np.random.default_rng(7)
    for _ in range(300):
        keys = np.unique(rng.integers(0, 400, rng.integers(0, 200)))
        sub = np.sort(rng.integers(0, 420, rng.integers(0, 60)))
        np.testing.assert_array_equal(_positions(keys, sub), np.searchsorted(keys, sub))


def test_expected_max_closed_form():
    """One atom of 1000 among ten: E[max of c copies] = 1000 (1 - 0.9^c)."""
    atoms = np.array([0.0] * 9 + [1000.0])
    for c in range(1, 6):
        got = expected_max(np.broadcast_to(atoms, (1, c, 10)).copy())[0]
        assert got == pytest.approx(1000 * (1 - 0.9 ** c))


def test_normal_atoms_are_truncated_normal_quantiles():
    atoms = normal_atoms(np.array([0.0, 0.3]), 8)
    assert np.all(atoms[0] == 1.0)
    want = stats.truncnorm.ppf(levels(8), -1 / 0.3, np.inf, loc=1, scale=0.3)
    assert atoms[1] == pytest.approx(want)
    assert np.all(np.diff(atoms[1]) > 0)


def _priors(n: int) -> Priors:
    return Priors(speed_mean=np.full(n, 100.0), speed_rsd=np.full(n, 0.3),
                  bandwidth_mean=20.0, bandwidth_rsd=0.3, outage_rate=np.full(n, 1e-3))


def test_cold_start_is_the_prior_then_samples_take_over():
    mon = Monitor(n_clusters=2, n_types=2, window=500, priors=_priors(2))
    model = PerformanceModel(mon, gate=np.array([50.0, 10.0]), dt=1.0, atoms=16,
                             min_samples=5, refresh=0.0)
    model.refresh(0.0)
    assert model.speed_mean[0, 0] == pytest.approx(100 * normal_atoms(0.3, 16).mean())
    # the nominal pair bandwidth is capped by the smaller gate
    assert model.bandwidth_mean[0, 1] == pytest.approx(10 * normal_atoms(0.3, 16).mean())
    rng = np.random.default_rng(1)
    truth = stats.norm(250.0, 40.0)
    speeds = truth.rvs(size=400, random_state=rng)
    mon.record_copies(np.zeros(400, dtype=np.int64), np.zeros(400, dtype=np.int64), speeds)
    bw = rng.gamma(4.0, 0.5, size=400)
    mon.record_transfers(np.zeros(400, dtype=np.int64), np.ones(400, dtype=np.int64), bw)
    model.refresh(1.0)
    # type 0 from its own samples, type 1 from the cluster's pooled samples
    assert model.speed[0, 0] == pytest.approx(truth.ppf(levels(16)), rel=0.05)
    assert model.speed[0, 1] == pytest.approx(model.speed[0, 0])
    assert model.speed_mean[1, 0] == pytest.approx(100 * normal_atoms(0.3, 16).mean())
    gamma = stats.gamma(4.0, scale=0.5)
    assert model.bandwidth[1] == pytest.approx(gamma.ppf(levels(16)), rel=0.1, abs=0.05)
    # an unobserved pair into the same destination uses the transfers into it
    assert model.pair_atoms(np.array([1]), np.array([1]))[0] == pytest.approx(model.bandwidth[1])


def test_outage_probability_converges_to_the_observed_rate():
    n = 3
    mon = Monitor(n_clusters=n, n_types=1, priors=_priors(n))
    model = PerformanceModel(mon, gate=np.full(n, 10.0), dt=2.0, prior_seconds=600.0)
    rng = np.random.default_rng(2)
    rate = np.array([1e-4, 2e-3, 2e-2])
    for _ in range(200_000):
        mon.record_reachability(np.ones(n, dtype=bool), rng.random(n) < rate, 1.0)
    model.refresh(0.0)
    assert model.outage_probability == pytest.approx(-np.expm1(-rate * 2.0), rel=0.15)


def test_learned_speed_converges_to_the_world_s_true_speed():
    """VMs of constant power (RSD 0), no availability: every copy sees its cluster's power."""
    world = geo_world(n_clusters=4, n_jobs=40, rate=0.2, scheduler="fifo")
    world["availability"] = {"enabled": False}
    world["outages"] = {"enabled": False}
    world["tiers"] = {name: {**world["tiers"].get(name, {}), "power_rsd": 0.0}
                      for name in ("large", "medium", "small")}
    model = GeoModel(load_scenario(world))
    model.run()
    pm = PerformanceModel(model.monitor, model.world.gate, dt=1.0, min_samples=5)
    pm.refresh(0.0)
    _, counts = model.monitor.speed_table()
    seen = counts >= 5
    assert seen.sum() >= 4
    power = np.add.reduceat(model.world.power.mean, model.world.slot_ptr[:-1]) / \
        model.world.slots
    for c, t in zip(*np.nonzero(seen), strict=True):
        assert pm.speed[c, t] == pytest.approx(np.full(pm.k, power[c]), rel=1e-9)
    # clusters never used keep the nominal prior, not another cluster's speed
    for c in np.flatnonzero(counts.sum(axis=1) == 0):
        assert pm.speed_mean[c, 0] == pytest.approx(
            model.monitor.priors.speed_mean[c] * normal_atoms(
                model.monitor.priors.speed_rsd[c], pm.k).mean())


def test_a_pair_index_lists_the_rows_a_search_finds():
    # Ties in the gates pick the source's prior row; own keys override the fallbacks.
    rng = np.random.default_rng(0)
    n = 37
    keys = np.sort(rng.choice(n * n, 200, replace=False)).astype(np.int64)
    fallback = np.where(rng.random(n) < 0.5, rng.integers(0, 200, n), -1).astype(np.int64)
    table = PairTable(keys, fallback, rng.random(n).round(1), 200 + n,
                      rng.random(200 + 2 * n))
    every = np.arange(n * n, dtype=np.int64)
    indexed = table.indexed()
    assert indexed.index.size == n * n
    np.testing.assert_array_equal(indexed.index, pair_rows(table, every // n, every % n))
    np.testing.assert_array_equal(pair_rows(indexed, every // n, every % n), indexed.index)
