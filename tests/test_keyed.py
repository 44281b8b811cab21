"""Keyed draws and the keyed availability process: their laws, and reads that change nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import keyed_availability as keyed
from numba import njit
from scipy import stats

from geosim.keyed import gamma, stream_key, uniform
from geosim.model import GeoModel
from geosim.processes import AlternatingRenewal, KeyedRenewal, gamma_draw, uniform_draw
from geosim.scenario import load_scenario
from geosim.testing import closed_world

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "pingan-medium.toml"
KEY = np.uint64(0x1234_5678_9ABC_DEF0)


@njit
def uniforms(key, entities, index, attempt):
    out = np.empty(entities.size)
    for i in range(entities.size):
        out[i] = uniform(key, entities[i], index, attempt)
    return out


@njit
def gammas(key, entities, index, shape, scale):
    out = np.empty(entities.size)
    for i in range(entities.size):
        out[i] = gamma(key, entities[i], index, shape, scale)
    return out




def test_uniforms_are_uniform_on_the_open_interval_and_depend_on_every_coordinate():
    e = np.arange(100_000, dtype=np.int64)
    u = uniforms(KEY, e, 0, 0)
    assert 0.0 < u.min() and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    others = [uniforms(KEY, e + 1, 0, 0), uniforms(KEY, e, 1, 0), uniforms(KEY, e, 0, 1),
              uniforms(KEY + np.uint64(1), e, 0, 0)]
    for v in others:
        assert abs(np.corrcoef(u, v)[0, 1]) < 0.02
        assert np.mean(u == v) < 1e-4
    assert uniform(KEY, 7, 3, 2) == uniforms(KEY, np.array([7]), 3, 2)[0]


@pytest.mark.parametrize("shape, scale", [(0.19, 39.92), (0.34, 94.35), (1.0, 1.0),
                                          (2.0, 15.0), (7.5, 0.1)])
def test_gamma_follows_its_law(shape, scale):
    g = gammas(KEY, np.arange(50_000, dtype=np.int64), 3, shape, scale)
    assert g.min() > 0
    assert stats.kstest(g, "gamma", args=(shape, 0, scale)).pvalue > 1e-3
    assert g.mean() == pytest.approx(shape * scale, rel=0.03)


def test_stream_key_comes_from_the_generator():
    assert stream_key(np.random.default_rng(4)) == stream_key(np.random.default_rng(4))
    assert stream_key(np.random.default_rng(4)) != stream_key(np.random.default_rng(5))


def test_same_law_as_the_block_drawn_process():
    # Phase lengths of both processes over the same horizon: one law, other draws.
    blocks = AlternatingRenewal(300, gamma_draw(0.34, 94.35), gamma_draw(0.19, 39.92),
                                uniform_draw(2.0, 3.0), uniform_draw(0.0, 0.3),
                                np.random.default_rng(1))
    a = blocks.advance(5_000.0, 0.0)
    b = keyed(seed=1, n=300).advance(5_000.0, 0.0)
    assert stats.ks_2samp(a, b).pvalue > 1e-3
    assert not np.array_equal(a, b)


def test_what_is_read_and_when_does_not_change_an_entity():
    # One process read every second for all entities, another for a few entities at
    # irregular times: every entity's average over a span and its phases are the same.
    rng = np.random.default_rng(9)
    every, some = keyed(seed=3, n=60), keyed(seed=3, n=60)
    for t in range(200):
        every.advance_mean(t + 1.0, float(t), np.arange(60))
        if rng.random() < 0.2:
            some.advance_mean(t + 1.0, float(t), rng.choice(60, 5))
        else:
            some.advance(t + 1.0)
    want = np.arange(0, 60, 7)
    np.testing.assert_array_equal(every.advance_mean(260.0, 200.0, want),
                                  some.advance_mean(260.0, 200.0, want))
    np.testing.assert_array_equal(every.on, some.on)
    np.testing.assert_array_equal(every.level, some.level)
    np.testing.assert_array_equal(every.count, some.count)


def test_averages_are_exact_integrals_of_the_phase_changes():
    proc, log = keyed(seed=2, n=20), keyed(seed=2, n=20)
    avg = proc.advance_mean(300.0, 100.0, np.arange(20))
    level0 = log.level.copy()                   # the first phase's levels, at time 0
    e, t, new = log.changes(300.0)
    for j in range(20):
        times = np.concatenate(([0.0], t[e == j], [300.0]))
        levels = np.concatenate(([level0[j]], new[e == j]))
        lo, hi = np.clip(times[:-1], 100.0, 300.0), np.clip(times[1:], 100.0, 300.0)
        assert avg[j] == pytest.approx(np.sum(levels * (hi - lo)) / 200.0, rel=1e-12)
    assert np.all(np.diff(t) >= 0)


def test_an_entity_asked_twice_in_one_span_gets_one_average():
    proc = keyed(seed=4, n=5)
    out = proc.advance_mean(80.0, 0.0, np.array([3, 1, 3, 3]))
    assert out[0] == out[2] == out[3]
    assert out[0] == keyed(seed=4, n=5).advance_mean(80.0, 0.0, np.array([3]))[0]


def test_entities_known_distinct_get_the_same_averages():
    rng = np.random.default_rng(8)
    plain, known = keyed(seed=5, n=300), keyed(seed=5, n=300)
    for t in range(0, 400, 7):
        want = rng.permutation(300)[:120]
        np.testing.assert_array_equal(plain.advance_mean(t + 7.0, float(t), want),
                                      known.advance_mean(t + 7.0, float(t), want, True))
    np.testing.assert_array_equal(plain.count, known.count)


def test_current_reads_only_the_entities_asked():
    proc = keyed(seed=6, n=1000)
    level, change = proc.current(np.array([5, 9]), 500.0)
    assert np.all(change > 500.0) and np.all(level >= 0)
    assert proc.count[:, 5].sum() > 2 and proc.count[:, 9].sum() > 2
    assert int((proc.count.sum(axis=0) > 0).sum()) == 2     # no other entity has moved


def run_tables(overrides, scheduler="fair"):
    scenario = load_scenario(SCENARIO, {
        "workload.n_jobs": 30, "clusters.slot_streams": "keyed", **overrides})
    result = GeoModel(scenario, scheduler, check_invariants=True).run()
    return result.jobs, result.copies


@pytest.mark.parametrize("timing, scheduler", [("slot", "fair"), ("event", "pingan")])
def test_a_run_is_the_same_whatever_the_samples_read(timing, scheduler):
    # The recorder reads every slot at each sample; without samples only busy slots move.
    jobs, copies = run_tables({"run.timing": timing}, scheduler)
    jobs2, copies2 = run_tables({"run.timing": timing, "run.record_interval": 1e6},
                                scheduler)
    assert jobs.equals(jobs2) and copies.equals(copies2)
    assert jobs["finished"].all()


def test_the_pool_loop_reads_keyed_periods_as_changes():
    # 002's world runs event-timed on the compiled pool loop, which consumes the
    # availability process as a list of changes: keyed streams give a complete run whose
    # jobs do not depend on the samples taken.
    base = {"workload.n_jobs": 300, "clusters.slot_streams": "keyed"}
    path = SCENARIO.parent / "redundancy-gamma.toml"
    a = GeoModel(load_scenario(path, base), "srpt+r").run()
    b = GeoModel(load_scenario(path, {**base, "run.record_interval": 0.0}), "srpt+r").run()
    assert a.jobs["finished"].all() and a.jobs.equals(b.jobs)
    assert len(a.clusters) > 0 and len(b.clusters) == 0


def test_slots_holding_several_copies_are_not_asked_as_distinct(monkeypatch):
    # Multitasking Fair puts several copies on a slot; while one does, the engine must not
    # tell the process that the slots it asks are distinct. The run is the one whose
    # process is never told so.
    world = closed_world(slots=3, rate=0.3, n_jobs=60, availability=True,
                         scheduler="fair", params={"multitasking": True})

    def run_tables():
        scenario = load_scenario(world, {"clusters.slot_streams": "keyed"})
        result = GeoModel(scenario, check_invariants=True).run()
        return result.jobs, result.copies

    want = run_tables()
    shared = []
    advance_mean = KeyedRenewal.advance_mean

    def never_told(self, t_end, t_start, entities, distinct=False):
        shared.append(np.unique(entities).size < len(entities))
        assert not (distinct and shared[-1])
        return advance_mean(self, t_end, t_start, entities)

    monkeypatch.setattr(KeyedRenewal, "advance_mean", never_told)
    jobs, copies = run_tables()
    assert any(shared) and not all(shared)
    assert jobs.equals(want[0]) and copies.equals(want[1])
