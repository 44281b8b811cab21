"""The scripts that judge a change made for speed say what their tables say.

``benchmarks/reference_hashes.py`` tells whether a change left every table as it was: its
digest must move with any bit of any table and stay put otherwise, and its comparison
must find a checkout equal to itself. ``benchmarks/goals.py`` sets each figure beside its
limit.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import benchmark_module

import geosim

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def small_result():
    return geosim.run(ROOT / "scenarios" / "quickstart.toml", scheduler="fifo",
                      overrides={"workload.n_jobs": 8})


def test_a_tables_digest_moves_with_one_bit_of_any_table(monkeypatch, small_result):
    hashes = benchmark_module("reference_hashes", monkeypatch)
    before = hashes.tables_digest(small_result)
    assert hashes.tables_digest(small_result) == before
    for name in ("jobs", "copies", "links"):
        table = getattr(small_result, name)
        column = table.select_dtypes("float").columns[0]
        saved = table[column].copy()
        table.loc[table.index[-1], column] = np.nextafter(saved.iloc[-1], np.inf)
        assert hashes.tables_digest(small_result) != before, name
        table[column] = saved
        assert hashes.tables_digest(small_result) == before


def test_reference_runs_of_a_checkout_against_itself_are_the_same(monkeypatch, capsys):
    hashes = benchmark_module("reference_hashes", monkeypatch)
    monkeypatch.setattr("sys.argv", ["reference_hashes.py", "--against", str(ROOT),
                                     "quickstart-fair"])
    assert hashes.main() == 0
    out = capsys.readouterr().out
    assert "| quickstart-fair |" in out and "| yes |" in out
    assert "1 of 1 reference runs give the same tables." in out


def test_every_reference_case_names_a_scenario_and_a_registered_scheduler(monkeypatch):
    hashes = benchmark_module("reference_hashes", monkeypatch)
    for scenario, scheduler, overrides in hashes.CASES.values():
        loaded = geosim.load_scenario(ROOT / "scenarios" / scenario, overrides)
        assert loaded is not None
        if scheduler is not None:
            assert scheduler.split("[")[0] in geosim.registered()


def test_a_goal_is_met_by_its_median(monkeypatch):
    goals = benchmark_module("goals", monkeypatch)
    assert goals.verdict([0.9, 1.0, 1.1], 1.0) == "met"
    assert goals.verdict([0.9, 1.1, 1.2], 1.0) == "by the minimum only"
    assert goals.verdict([1.1, 1.2, 1.3], 1.0) == "not met"


def test_an_unknown_goal_is_refused(monkeypatch, capsys):
    goals = benchmark_module("goals", monkeypatch)
    monkeypatch.setattr("sys.argv", ["goals.py", "fastest"])
    with pytest.raises(SystemExit) as stop:
        goals.main()
    assert stop.value.code == 2
    assert "unknown goals ['fastest']" in capsys.readouterr().err
