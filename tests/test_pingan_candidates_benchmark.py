"""``benchmarks/pingan_candidates.py`` counts ties and scan depths without moving the run.

Its figures say why an exact pruned search cannot keep PingAn's decisions; they rest on
the probe leaving the candidates as they are and counting a tie only where one exists.
"""

from __future__ import annotations

import numpy as np
from conftest import benchmark_module

from geosim import GeoModel, load_scenario
from geosim.schedulers.pingan import candidates


def test_a_row_without_a_tie_at_the_mth_value_has_one_candidate_set(monkeypatch):
    bench = benchmark_module("pingan_candidates", monkeypatch)
    probe = bench.Probe()
    score = np.array([[3.0, 1.0, 2.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    out = probe.top(score, 2)
    assert np.array_equal(out, candidates._top(score, 2))
    assert sorted(out[0]) == [1, 3]
    assert (probe.rows, probe.tied) == (2, 1)        # only the second row ties
    assert probe.differ <= probe.tied


def test_the_probed_run_is_the_run_and_its_counts_are_consistent(monkeypatch):
    bench = benchmark_module("pingan_candidates", monkeypatch)
    overrides = {"workload.n_jobs": 25}
    probe, mean = bench.measure(bench.ROOT / "scenarios" / "pingan-medium.toml", overrides)
    plain = GeoModel(load_scenario(bench.ROOT / "scenarios" / "pingan-medium.toml",
                                   overrides), scheduler="pingan").run()
    assert mean == plain.summary["mean_flowtime"]
    assert candidates._top is bench._TOP                 # the hooks are taken off
    assert probe.rows > 0
    assert 0 <= probe.differ <= probe.tied <= probe.rows
    depth = np.array(probe.depth)
    assert depth.size and ((depth[:, :2] >= 0) & (depth[:, :2] <= 1)).all()
    assert "rows searched" in probe.report()


def test_the_tie_rules_rank_by_score_then_by_index_or_a_seeded_rank(monkeypatch):
    bench = benchmark_module("pingan_candidates", monkeypatch)
    score = np.array([[0.0, 0.0, 0.0, 1.0, -1.0]])
    lowest = bench.Probe(ties="lowest").top(score, 3)
    assert lowest.tolist() == [[4, 0, 1]]            # the best, then ties by index
    first = bench.Probe(seed=5, ties="random")
    picks = first.top(score, 3)
    assert picks[0, 0] == 4 and set(picks[0, 1:]) < {0, 1, 2}
    tied = [0, 1, 2]
    want = sorted(tied, key=lambda c: first.rank[c])[:2]
    assert picks[0, 1:].tolist() == want
    assert np.array_equal(bench.Probe(seed=5, ties="random").top(score, 3), picks)
