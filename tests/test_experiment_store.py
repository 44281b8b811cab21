"""The comparison store read back: loading, the per-job reductions and the baseline."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from conftest import closed_world

import geosim
from geosim import GeosimError
from geosim.experiment import (
    MANIFEST,
    comparison_baseline,
    load_comparison,
    reductions,
    run_path,
)
from viz.data import as_comparison
from viz.data import load_comparison as load_for_figures

#: Two labels of the same scheduler: every job has the same flowtime under both.
TWINS = ["srpt", "srpt[preemptive=true]", "fifo"]


def tiny(**kw):
    return closed_world(**{"slots": 2, "rate": 0.3, "n_jobs": 20, **kw})


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    """A comparison of :data:`TWINS` against the second twin, saved to a directory."""
    out = tmp_path_factory.mktemp("store") / "twins"
    comparison = geosim.compare(tiny(), TWINS, reps=2, jobs_parallel=1, out=out,
                                baseline="srpt[preemptive=true]")
    return out, comparison


# ---------------------------------------------------------------------------- reductions
def test_reductions_against_the_baseline_job_by_job():
    per_job = pd.DataFrame({"label": ["a", "a", "a", "b", "b", "b"],
                            "job": [0, 1, 2, 2, 1, 0],
                            "flowtime": [10.0, 20.0, math.nan, 5.0, 30.0, 10.0]})
    ratio = reductions(per_job, "a")
    np.testing.assert_array_equal(ratio[:3], [0.0, 0.0, math.nan])
    # b's rows are matched to a's by job, not by position
    np.testing.assert_allclose(ratio[3:], [math.nan, (20 - 30) / 20, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(reductions(per_job, "nobody")).all()
        zero = per_job.assign(flowtime=[0.0, 1.0, 1.0, 1.0, 1.0, 1.0])
        assert np.isnan(reductions(zero, "a")[0])   # 0 / 0, silently


def test_the_per_job_table_holds_the_reductions(twins):
    _, comparison = twins
    per_job = comparison.per_job
    np.testing.assert_array_equal(per_job["reduction"].to_numpy(),
                                  reductions(per_job, "srpt[preemptive=true]"))


# ---------------------------------------------------------------------------- baseline
def test_compare_records_the_baseline_of_its_tables(tmp_path, twins):
    out, _ = twins
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["baseline"] == "srpt[preemptive=true]"
    assert list(manifest)[-1] == "baseline"
    # the same directory without a baseline, then with another: the manifest follows
    again = tmp_path / "again"
    geosim.compare(tiny(), TWINS[1:], reps=2, jobs_parallel=1, out=again)
    assert json.loads((again / MANIFEST).read_text())["baseline"] is None
    assert load_comparison(again).baseline is None
    geosim.compare(tiny(), TWINS[1:], reps=2, jobs_parallel=1, out=again, baseline="fifo")
    assert json.loads((again / MANIFEST).read_text())["baseline"] == "fifo"
    assert load_comparison(again).baseline == "fifo"


def test_the_recorded_baseline_tells_identical_schedulers_apart(twins):
    out, comparison = twins
    per_job = comparison.per_job
    # both twins have all-zero reductions: only the record names the right one
    for label in TWINS[:2]:
        assert (per_job.loc[per_job["label"] == label, "reduction"] == 0).all()
    assert load_comparison(out).baseline == "srpt[preemptive=true]"
    assert load_for_figures(out).baseline() == "srpt[preemptive=true]"
    assert as_comparison(comparison).baseline() == "srpt[preemptive=true]"
    # a compare.json written before the baseline was recorded: the first all-zero label
    assert comparison_baseline({}, per_job, TWINS) == "srpt"


def test_comparison_baseline_rules():
    per_job = pd.DataFrame({"label": ["a", "a", "b", "b"], "job": [0, 1, 0, 1],
                            "flowtime": [2.0, 4.0, 2.0, 2.0]})
    per_job["reduction"] = reductions(per_job, "b")
    labels = ["a", "b"]
    assert comparison_baseline({"baseline": "a"}, per_job, labels) == "a"
    assert comparison_baseline({"baseline": None}, per_job, labels) is None
    assert comparison_baseline({"baseline": "gone"}, per_job, labels) is None
    # without the key: the first label whose known reductions are all 0
    assert comparison_baseline({}, per_job, labels) == "b"
    assert comparison_baseline({}, per_job.assign(reduction=math.nan), labels) is None
    assert comparison_baseline({}, per_job.drop(columns="reduction"), labels) is None
    assert comparison_baseline({}, None, labels) is None


def test_an_older_manifest_is_read_by_the_rule(tmp_path, twins):
    out, _ = twins
    old = tmp_path / "old"
    old.mkdir()
    manifest = json.loads((out / MANIFEST).read_text())
    del manifest["baseline"]
    (old / MANIFEST).write_text(json.dumps(manifest, indent=2))
    for name in ("summary.csv", "runs.csv", "per_job.parquet"):
        (old / name).write_bytes((out / name).read_bytes())
    assert load_comparison(old).baseline == "srpt"
    assert load_for_figures(old).baseline() == "srpt"


# ---------------------------------------------------------------------------- loading
def test_load_comparison_reads_the_tables_back(twins):
    out, comparison = twins
    saved = load_comparison(out)
    assert saved.path == out
    assert saved.labels == TWINS and saved.seeds == [1, 2]
    pd.testing.assert_frame_equal(saved.per_job, comparison.per_job)
    pd.testing.assert_frame_equal(saved.summary, pd.read_csv(out / "summary.csv"))
    for label in TWINS:
        path = run_path(out, saved.manifest, label, 2)
        assert path is not None and (path / "summary.json").is_file()
    assert run_path(out, saved.manifest, "lifo", 1) is None
    figures = load_for_figures(out)
    assert figures.labels == saved.labels and figures.seeds == saved.seeds
    assert figures.run_dir("fifo", 1) == run_path(out, saved.manifest, "fifo", 1)


def test_load_comparison_keeps_only_what_the_tables_hold(tmp_path, twins):
    out, _ = twins
    partial = tmp_path / "partial"
    partial.mkdir()
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["seeds"].append(9)
    (partial / MANIFEST).write_text(json.dumps(manifest))
    summary = pd.read_csv(out / "summary.csv")
    summary[summary["label"] != "fifo"].to_csv(partial / "summary.csv", index=False)
    (partial / "runs.csv").write_bytes((out / "runs.csv").read_bytes())
    pd.read_parquet(out / "per_job.parquet").to_csv(partial / "per_job.csv", index=False)
    saved = load_comparison(partial)
    assert saved.labels == TWINS[:2] and saved.seeds == [1, 2]
    assert saved.baseline == "srpt[preemptive=true]"


def test_load_comparison_errors(tmp_path, twins):
    out, _ = twins
    with pytest.raises(GeosimError, match=r"not a geosim comparison directory \(no "
                                          r"compare.json\)"):
        load_comparison(tmp_path)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / MANIFEST).write_text("{")
    with pytest.raises(GeosimError, match=r"unreadable compare.json"):
        load_comparison(bad)
    (bad / MANIFEST).write_text((out / MANIFEST).read_text())
    with pytest.raises(GeosimError, match=r"incomplete comparison directory: no summary.csv"):
        load_comparison(bad)
    for name in ("summary.csv", "runs.csv"):
        (bad / name).write_bytes((out / name).read_bytes())
    with pytest.raises(GeosimError, match=r"no per_job.parquet or per_job.csv"):
        load_comparison(bad)
