"""The world's stochastic processes: distributions, and independence from step grouping."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import keyed_availability
from scipy import stats

from geosim.processes import (
    AlternatingRenewal,
    KeyedNormal,
    PeriodicNormal,
    constant_draw,
    gamma_draw,
    geometric_trials_draw,
    uniform_draw,
)


def availability(seed=0, n=400, factor=1.0):
    return AlternatingRenewal(n, gamma_draw(0.34, 94.35), gamma_draw(0.19, 39.92),
                              uniform_draw(2.0, 3.0, factor), uniform_draw(0.0, 0.3, factor),
                              np.random.default_rng(seed))


@pytest.mark.parametrize("make", [availability, keyed_availability], ids=["blocks", "keyed"])
def test_long_run_available_fraction_and_mean_rate(make):
    # Renewal-reward: fraction of time available = E[AP] / (E[AP] + E[UP]).
    mean_on, mean_off = 0.34 * 94.35, 0.19 * 39.92
    mean_rate = (mean_on * 2.5 + mean_off * 0.15) / (mean_on + mean_off)
    proc = make(factor=1 / mean_rate)
    horizon = 20_000.0
    avg = proc.advance(horizon, 0.0)
    assert avg.mean() == pytest.approx(1.0, rel=0.03)
    phases = proc.count[0] + proc.count[1]
    assert phases.mean() == pytest.approx(2 * horizon / (mean_on + mean_off), rel=0.05)


def test_time_average_is_exact_for_any_step_grouping():
    # Integrating in 1 s slots or in one jump gives the same trajectory and the same integral.
    fine, coarse = availability(seed=5, n=50), availability(seed=5, n=50)
    total = np.zeros(50)
    for t in range(300):
        total += fine.advance(t + 1.0, float(t))
    np.testing.assert_allclose(total / 300, coarse.advance(300.0, 0.0), rtol=1e-12)
    np.testing.assert_array_equal(fine.on, coarse.on)
    np.testing.assert_array_equal(fine.next_change, coarse.next_change)


def test_geometric_outage_onsets():
    p = np.array([0.0, 0.1, 0.5, 1.0])
    proc = AlternatingRenewal(4, geometric_trials_draw(p, 60.0), gamma_draw(2.0, 15.0),
                              constant_draw(1.0), constant_draw(0.0), np.random.default_rng(1))
    assert np.isinf(proc.next_change[0])
    assert proc.next_change[3] == 60.0
    draws = geometric_trials_draw(np.full(1, 0.1), 60.0)(np.random.default_rng(2), 1, 50_000)
    assert np.all(draws % 60.0 == 0)
    assert draws.mean() == pytest.approx(600.0, rel=0.03)   # 60 s / p


def test_periodic_normal_catches_up_every_skipped_period():
    a = PeriodicNormal(np.full(30, 10.0), np.full(30, 0.5), 10.0, np.random.default_rng(3))
    b = PeriodicNormal(np.full(30, 10.0), np.full(30, 0.5), 10.0, np.random.default_rng(3))
    for t in range(0, 101, 1):
        a.advance(float(t))
    assert b.advance(100.0)
    np.testing.assert_array_equal(a.level, b.level)
    assert np.all(a.level > 0)


@pytest.mark.parametrize("make", [PeriodicNormal, KeyedNormal], ids=["shared", "keyed"])
def test_truncated_normal_moments(make):
    proc = make(np.full(200_000, 100.0), np.full(200_000, 0.25), 0.0, np.random.default_rng(4))
    assert proc.level.mean() == pytest.approx(100.0, rel=0.01)
    assert proc.level.std() == pytest.approx(25.0, rel=0.02)
    assert not proc.advance(1e6)
    wide = make(np.full(50_000, 1.0), np.full(50_000, 1.5), 0.0, np.random.default_rng(5))
    assert wide.level.min() > 1e-3                        # truncated above 1e-3 × mean
    assert stats.kstest(wide.level, stats.truncnorm(
        (1e-3 - 1.0) / 1.5, np.inf, loc=1.0, scale=1.5).cdf).pvalue > 1e-3


def test_keyed_normal_draws_a_period_only_for_the_entities_read():
    # An entity's level in a period is the same whether it was read in the periods before
    # or not; entities not read keep an older period's level.
    every = KeyedNormal(np.full(40, 10.0), np.full(40, 0.5), 10.0, np.random.default_rng(3))
    some = KeyedNormal(np.full(40, 10.0), np.full(40, 0.5), 10.0, np.random.default_rng(3))
    first = some.level.copy()
    for t in range(10, 101, 10):
        assert every.advance(float(t)) and some.advance(float(t))
        every.sync(np.arange(40))
    some.sync(np.array([3, 17]))
    np.testing.assert_array_equal(some.level[[3, 17]], every.level[[3, 17]])
    untouched = np.setdiff1d(np.arange(40), [3, 17])
    np.testing.assert_array_equal(some.level[untouched], first[untouched])
    assert not np.array_equal(every.level, first)


def test_averages_of_some_entities_are_those_of_all_bit_for_bit():
    # advance_mean moves every entity (the same realisation) and averages only those asked;
    # their averages are advance()'s to the last bit, whatever steps and jumps come between.
    every, some = availability(seed=9, n=300), availability(seed=9, n=300)
    rng = np.random.default_rng(4)
    t = 0.0
    for step in range(400):
        span = float(rng.choice([0.5, 1.0, 1.0, 7.0, 120.0]))
        if step % 50 == 49:                     # a jump without averages
            every.advance(t + span)
            some.advance(t + span)
        else:
            asked = np.sort(rng.choice(300, int(rng.integers(0, 300)), replace=False))
            want = every.advance(t + span, t)[asked]
            got = some.advance_mean(t + span, t, asked.astype(np.int64))
            np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))
        t += span
        np.testing.assert_array_equal(every.next_change, some.next_change)
        np.testing.assert_array_equal(every.level, some.level)
    np.testing.assert_array_equal(every.count, some.count)


def test_the_blocked_scan_for_changes_due_is_the_full_scan_bit_for_bit():
    # The scan skips blocks of entities whose earliest change is after the span; a
    # process whose every block is scanned (each block's earliest unknown, -inf) makes
    # the same changes, in the same order, the same draws and averages, over spans of
    # every length (sub-second sub-spans with a few changes due, slots with many, jumps
    # with every entity due), with a last block shorter than the others.
    n = 1000
    blocked, flat = availability(seed=3, n=n), availability(seed=3, n=n)
    assert blocked._soon.size == 1 + -(-n // 64)
    rng = np.random.default_rng(8)
    t = 0.0
    for _ in range(600):
        flat._soon[1:] = -np.inf
        span = float(rng.choice([1e-3, 0.02, 0.02, 0.3, 1.0, 40.0]))
        asked = np.sort(rng.choice(n, 50, replace=False)).astype(np.int64)
        a = blocked.advance_mean(t + span, t, asked)
        b = flat.advance_mean(t + span, t, asked)
        np.testing.assert_array_equal(a.view(np.int64), b.view(np.int64))
        t += span
        assert blocked.next_change_time == flat.next_change_time
        np.testing.assert_array_equal(blocked.next_change, flat.next_change)
    np.testing.assert_array_equal(blocked.count, flat.count)
    ents, times, levels = blocked.changes(t + 100.0)
    flat._soon[1:] = -np.inf
    np.testing.assert_array_equal(np.concatenate(flat.changes(t + 100.0)),
                                  np.concatenate([ents, times, levels]))
    clean = blocked._soon[1:] > -np.inf       # a clean block holds its earliest change
    minima = np.minimum.reduceat(blocked.next_change, np.arange(0, n, 64))
    np.testing.assert_array_equal(blocked._soon[1:][clean], minima[clean])


def test_a_widened_ring_keeps_every_item_where_the_stream_put_it():
    # Entities read at counters far apart, so the ring widens (2 -> 4 -> 8 -> 16) while
    # blocks are still in use; every item read is the one read from a ring wide enough
    # never to widen, which draws the same blocks in the same calls.
    from geosim.processes import _BlockSequence

    n, k, blocks = 6, 4, 24
    draws = (gamma_draw(0.5, 2.0), uniform_draw(1.0, 2.0))
    seq = _BlockSequence(np.random.default_rng(7), n, draws, block_len=k)
    ref = _BlockSequence(np.random.default_rng(7), n, draws, block_len=k)
    ref.width, ref.ring = 32, np.empty((32, n, k, len(draws)))
    rng = np.random.default_rng(0)
    counters = np.zeros(n, dtype=np.int64)
    widths = set()
    while counters.max() < blocks * k - 1:
        e = rng.integers(n)
        ahead = counters[e] + rng.integers(1, 3 + 4 * e)     # the last entities run ahead
        counters[e] = min(ahead, blocks * k - 1)
        low = int(counters.min())
        np.testing.assert_array_equal(seq.take(np.arange(n), counters, low),
                                      ref.take(np.arange(n), counters, low))
        widths.add(seq.width)
    assert ref.width == 32 and max(widths) >= 8
