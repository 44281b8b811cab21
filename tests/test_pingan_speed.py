"""PingAn's compiled kernels against the NumPy expressions they replace, bit for bit.

The kernels of the :mod:`geosim.schedulers.pingan` package repeat NumPy's floating-point
operations in NumPy's order (pairwise sums, ``reduceat``, stable sorts), so a run's results
do not depend on which of the two computes them. These tests pin that on random inputs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from geosim import load_scenario, make_scheduler, run
from geosim.distributions import pairwise_sum
from geosim.schedulers.pingan import candidates
from geosim.schedulers.pingan.candidates import _flows
from geosim.schedulers.pingan.kernels import _gain_order, _log1p_neg, _order
from geosim.schedulers.pingan.rounds import _saving_candidates
from geosim.view import _group_inputs


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 16, 100, 128, 129, 300, 1027])
def test_pairwise_sum_is_numpys(n):
    rng = np.random.default_rng(n)
    for _ in range(20):
        x = rng.random(n) * 10.0 ** rng.uniform(-8, 8, n)
        assert 0.0 + pairwise_sum(x, n, n) == np.sum(x)


@pytest.mark.parametrize("k", [2, 10, 16, 33])
def test_saving_candidates_match_numpy(k):
    rng = np.random.default_rng(k)
    for _ in range(200):
        t, m = int(rng.integers(1, 20)), int(rng.integers(2, 17))
        atoms = np.sort(rng.random((t, m, k)) * 10.0 ** rng.uniform(-3, 3), axis=2)
        rows = rng.choice(t, int(rng.integers(1, t + 1)), replace=False)
        h = int(rng.integers(1, min(m, 5)))
        have = np.array([rng.choice(m, h, replace=False) for _ in rows])
        before = atoms[rows, have[:, 0]].mean(axis=1) * rng.uniform(0.5, 1.5, rows.size)
        need = (h + 2) / (h + 1) * before
        held = atoms[rows[:, None], have]
        floor_y = held[:, :, 0].max(axis=1)
        bound = before[:, None] + np.maximum(atoms[rows] - floor_y[:, None, None],
                                             0.0).mean(axis=2)
        ti, ci = np.nonzero(bound > need[:, None])
        stacked = np.concatenate([held[ti], atoms[rows[ti], ci][:, None, :]], axis=1)
        got = _saving_candidates(atoms, rows, have, before, need)
        for want, mine in zip((ti, ci, stacked), got, strict=True):
            np.testing.assert_array_equal(mine, want)


def test_flows_match_numpy():
    rng = np.random.default_rng(0)
    n = 100
    for _ in range(300):
        t, m = int(rng.integers(1, 30)), int(rng.integers(1, 17))
        cand = np.array([rng.choice(n, m, replace=False) for _ in range(t)])
        ng = rng.integers(0, 40, t) * (rng.random(t) < 0.7)
        g_ptr = np.concatenate([[0], np.cumsum(ng)]).astype(np.int64)
        g_task = np.repeat(np.arange(t), ng)
        g_src = np.concatenate([np.empty(0, np.int64)] + [np.sort(rng.choice(n, x, replace=False))
                                                          for x in ng]).astype(np.int64)
        g_size = rng.random(g_src.size) * 10.0 ** rng.uniform(-2, 4, g_src.size)
        rate = rng.random((t, m)) * 10.0 ** rng.uniform(-5, 2, (t, m))
        rate[rng.random((t, m)) < 0.1] = -np.inf
        reach = rng.random(n) < 0.9
        gate = rng.random(n) * 10.0 ** rng.uniform(0, 3, n)
        has = np.flatnonzero(np.diff(g_ptr) > 0)
        masked = np.where(reach[cand], rate, -np.inf)
        flow = np.maximum(masked, 0.0)[g_task] * g_size[:, None]
        flow[g_src[:, None] == cand[g_task]] = 0.0
        din = np.zeros(cand.shape)
        if has.size:
            din[has] = np.add.reduceat(flow, g_ptr[has])
        opt, din_k, dout_k = _flows(rate, cand, reach, g_ptr, g_src, g_size, gate)
        np.testing.assert_array_equal(rate, masked)
        np.testing.assert_array_equal(opt, masked.max(axis=1))
        np.testing.assert_array_equal(din_k, np.minimum(din, gate[cand]))
        np.testing.assert_array_equal(dout_k, np.minimum(flow, gate[g_src][:, None]))


def test_orders_are_numpys_stable_argsort():
    rng = np.random.default_rng(1)
    values = [0.0, -0.0, 0.5, 1.0, 2.0, np.inf, -np.inf]
    for _ in range(500):
        s = rng.choice(values, size=(int(rng.integers(1, 9)), int(rng.integers(1, 17))))
        np.testing.assert_array_equal(_order(s), np.argsort(-s, axis=1, kind="stable"))
        base = rng.choice([0.0, 0.5, 1.0], size=s.shape[0])
        gain, order = _gain_order(s, base)
        want = s > base[:, None]
        np.testing.assert_array_equal(gain, want)
        np.testing.assert_array_equal(
            order, np.argsort(-np.where(want, s, -np.inf), axis=1, kind="stable"))


def test_group_inputs_match_the_sorted_grouping():
    rng = np.random.default_rng(2)
    n = 12
    for _ in range(300):
        t = int(rng.integers(1, 15))
        per = rng.integers(0, 9, t)
        owner = np.repeat(np.arange(t), per)
        src = rng.integers(0, n, owner.size)
        size = np.where(rng.random(owner.size) < 0.2, 0.0, rng.random(owner.size))
        keep = size > 0
        key = owner[keep] * n + src[keep]
        order = np.argsort(key, kind="stable")
        key = key[order]
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if key.size else key
        g_size = (np.maximum.reduceat(size[keep][order], starts) if starts.size
                  else np.empty(0))
        g_ptr, g_src, got_size = _group_inputs(owner, src, size, t, n)
        np.testing.assert_array_equal(g_ptr, np.searchsorted(key[starts] // n,
                                                             np.arange(t + 1)))
        np.testing.assert_array_equal(g_src, key[starts] % n)
        np.testing.assert_array_equal(got_size, g_size)


@pytest.mark.parametrize("n", [1, 7, 100, 1027])
def test_pair_logs_match_the_matrix(n):
    # round 2 computes log1p(-p_a p_b) for the pairs it weighs, where it once took them from
    # an n x n matrix: the values must be the matrix's, bit for bit
    rng = np.random.default_rng(n)
    p = rng.random(n) * 10.0 ** rng.uniform(-12, 0, n)
    p[rng.random(n) < 0.2] = 0.0
    p[0] = 1.0
    with np.errstate(divide="ignore"):
        matrix = np.log1p(-(p[:, None] * p[None, :]))
    for shape in [(1, 1), (3, 8), (40, 16), (257, 9)]:
        a, b = rng.integers(0, n, shape), rng.integers(0, n, shape)
        pairs = p[a] * p[b]
        _log1p_neg(pairs)
        np.testing.assert_array_equal(pairs, matrix[a, b])


def _edge_pingan(monkeypatch, fresh: bool = False, bound_bytes: int | None = None):
    """PingAn on 60 Barabási–Albert clusters (at most 16 candidates a task): its tables,
    and the most (task, cluster) rows and tasks its row cache held at once."""
    scenario = load_scenario(Path(__file__).parents[1] / "scenarios" / "pingan-medium.toml",
                             overrides={"topology.generator": "barabasi_albert",
                                        "topology.n_clusters": 60, "workload.n_jobs": 40})
    lookup, rates = candidates._RowCache.lookup, candidates._RowCache.rates
    held = [0, 0]

    def fresh_lookup(self, version, *args, **kwargs):
        if fresh:                   # drop every stored row at every lookup
            self.reset(version)
        return lookup(self, version, *args, **kwargs)

    def counted_rates(self, *args, **kwargs):
        out = rates(self, *args, **kwargs)
        held[0], held[1] = max(held[0], self.n_rows), max(held[1], self.n_slots)
        return out

    monkeypatch.setattr(candidates._RowCache, "lookup", fresh_lookup)
    if bound_bytes is not None:
        monkeypatch.setattr(candidates, "BOUND_CACHE_BYTES", bound_bytes)
    monkeypatch.setattr(candidates._RowCache, "rates", counted_rates)
    result = run(scenario, make_scheduler("pingan", {"epsilon": 0.6}), seed=2)
    monkeypatch.undo()
    return result, held


def test_stored_rows_are_the_rows_computed_afresh(monkeypatch):
    """Rows found again in the row cache give the tables of rows merged anew each time,
    as do bounds computed anew past the bounds' budget (64 tasks' here), and the cache
    holds a row per (task, candidate) met, not per (task, cluster)."""
    kept, (rows, tasks) = _edge_pingan(monkeypatch)
    fresh, _ = _edge_pingan(monkeypatch, fresh=True)
    small, _ = _edge_pingan(monkeypatch, bound_bytes=0)
    for name in ("jobs", "tasks", "copies"):
        pd.testing.assert_frame_equal(getattr(kept, name), getattr(fresh, name))
        pd.testing.assert_frame_equal(getattr(kept, name), getattr(small, name))
    assert tasks > 10
    assert tasks * 8 <= rows <= tasks * 30
