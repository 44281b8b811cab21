"""Comparisons of schedulers: common random numbers, statistics, resuming, CLI, Dask."""

from __future__ import annotations

import json
import math
import shutil
import sys
import tomllib

import numpy as np
import pandas as pd
import pytest
from conftest import closed_world, geo_world
from scipy import stats

import geosim
from geosim import GeosimError, load_result, load_scenario
from geosim import experiment as ex
from geosim.cli import main
from geosim.experiment import runner
from geosim.results import TABLES, code_fingerprint

SCHEDULERS = ["fifo", "srpt", "fair[multitasking=true]"]


def small(**kw):
    args = {"slots": 4, "rate": 0.3, "n_jobs": 80, "availability": True, **kw}
    return closed_world(**args)


TIMINGS = ["wall_seconds", "scheduler_seconds"]   # measured, so not reproducible


def without_wall(runs: pd.DataFrame) -> pd.DataFrame:
    return runs.drop(columns=TIMINGS, errors="ignore")


def saved_files(out) -> dict[str, bytes]:
    """Every file of a comparison directory (path -> bytes), measured times left out."""
    files = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        if path.name == "summary.json":
            summary = json.loads(path.read_text())
            data = json.dumps({k: v for k, v in summary.items() if k not in TIMINGS}).encode()
        elif path.name == "runs.csv":
            data = without_wall(pd.read_csv(path)).to_csv(index=False).encode()
        else:
            data = path.read_bytes()
        files[path.relative_to(out).as_posix()] = data
    return files


def assert_same_files(a, b) -> None:
    """The comparison directories ``a`` and ``b`` hold the same files, byte for byte."""
    mine, theirs = saved_files(a), saved_files(b)
    assert sorted(mine) == sorted(theirs)
    assert [name for name in mine if mine[name] != theirs[name]] == []
    assert any(name.endswith("/copies.parquet") for name in mine)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One comparison of three schedulers over three seeds, saved to a directory."""
    out = tmp_path_factory.mktemp("cmp") / "ref"
    comparison = geosim.compare(small(), SCHEDULERS, reps=3, jobs_parallel=1, out=out,
                                baseline="fifo")
    return out, comparison


# ---------------------------------------------------------------------------- specs
def test_spec_parser():
    specs = ex.parse_specs("fifo, laps+r[beta=0.6],srpt+r[reassign=random,beta=0.5],"
                           "fair[ multitasking = true ], x[w=[1,2],s=\"true\"], y[]")
    assert [s.name for s in specs] == ["fifo", "laps+r", "srpt+r", "fair", "x", "y"]
    assert specs[1].params == {"beta": 0.6}
    assert specs[2].params == {"reassign": "random", "beta": 0.5}
    assert specs[3].params == {"multitasking": True}
    assert specs[4].params == {"w": [1, 2], "s": "true"}
    assert [s.label for s in specs] == [
        "fifo", "laps+r[beta=0.6]", "srpt+r[beta=0.5,reassign=random]",
        "fair[multitasking=true]", 'x[s="true",w=[1, 2]]', "y"]
    # a label parses back to the same spec
    for spec in specs:
        assert ex.parse_spec(spec.label) == spec


@pytest.mark.parametrize(("text", "message"), [
    ("fair[multitasking=true", "unbalanced"),
    ("fair]", "unbalanced"),
    ("fair[multitasking]", "expected KEY=VALUE"),
    ("fair[a=1,a=2]", "repeated parameter 'a'"),
    ("fair[=1]", "bad or repeated parameter"),
    ("[a=1]", "bad scheduler spec"),
    ("", "bad scheduler spec"),
])
def test_spec_parser_rejects(text, message):
    with pytest.raises(GeosimError, match=message):
        ex.parse_specs(text)


def test_specs_are_validated_up_front():
    specs = ex.coerce_specs(["fifo", ("fair", {"multitasking": True}), "srpt[preemptive=false]"])
    assert [s.label for s in specs] == ["fifo", "fair[multitasking=true]",
                                        "srpt[preemptive=false]"]
    assert [s.label for s in ex.coerce_specs("fifo,fair")] == ["fifo", "fair"]
    with pytest.raises(GeosimError, match="unknown scheduler 'nope'"):
        ex.coerce_specs(["fifo", "nope"])
    with pytest.raises(GeosimError, match="multitasking must be true or false"):
        ex.coerce_specs(["fair[multitasking=3]"])
    with pytest.raises(GeosimError, match="unexpected keyword argument 'beta'"):
        ex.coerce_specs(["srpt[beta=1]"])
    with pytest.raises(GeosimError, match="'fair\\[multitasking=true\\]' is listed twice"):
        ex.coerce_specs(["fair[multitasking=true]", ("fair", {"multitasking": True})])
    with pytest.raises(GeosimError, match="no scheduler"):
        ex.coerce_specs([])


def test_seeds_and_thresholds():
    scenario = load_scenario(small(seed=7))
    assert ex.resolve_seeds(scenario, None, None) == [7]
    assert ex.resolve_seeds(scenario, None, 3) == [7, 8, 9]
    assert ex.resolve_seeds(scenario, "4, 2", None) == [4, 2]
    assert ex.resolve_seeds(scenario, [4, 2], 2) == [4, 2]
    for seeds, reps, message in [("1,x", None, "whole numbers"), ([1, -1], None, ">= 0"),
                                 ("1,1", None, "distinct"), ("1,2", 3, "2 seeds given"),
                                 (None, 0, ">= 1")]:
        with pytest.raises(GeosimError, match=message):
            ex.resolve_seeds(scenario, seeds, reps)
    assert ex.check_within("40, 200,800") == (40.0, 200.0, 800.0)
    for bad in ("40,-1", "x", [0], []):
        with pytest.raises(GeosimError, match="within"):
            ex.check_within(bad)
    assert ex.safe_name("laps+r[beta=0.6]") == "laps+r_beta=0.6"
    assert ex.safe_name('x[s="a b/c"]') == "x_s=_a_b_c"


# ---------------------------------------------------------------------------- runs
def test_common_random_numbers(reference):
    out, comparison = reference
    manifest = json.loads((out / "compare.json").read_text())
    assert manifest["seeds"] == [1, 2, 3]
    assert [s["label"] for s in manifest["schedulers"]] == SCHEDULERS
    for seed in (1, 2, 3):
        jobs = [load_result(out / "runs" / s["dir"] / f"seed-{seed}").jobs
                for s in manifest["schedulers"]]
        for other in jobs[1:]:
            pd.testing.assert_series_equal(other["arrival"], jobs[0]["arrival"])
            pd.testing.assert_series_equal(other["work"], jobs[0]["work"])
        assert not np.array_equal(jobs[0]["flowtime"], jobs[1]["flowtime"])
    first = load_result(out / "runs" / "fifo" / "seed-1").jobs
    second = load_result(out / "runs" / "fifo" / "seed-2").jobs
    assert not np.array_equal(first["arrival"], second["arrival"])
    # each run's saved scenario names its scheduler and seed, so `geosim run` reproduces it
    run = load_result(out / "runs" / "fair_multitasking=true" / "seed-2")
    assert run.meta["scheduler"] == "fair" and run.meta["params"] == {"multitasking": True}
    again = geosim.run(tomllib.loads(run.scenario_toml))
    np.testing.assert_array_equal(again.jobs["flowtime"], run.jobs["flowtime"])
    assert len(comparison.runs) == 9
    assert list(comparison.runs[["label", "seed"]].itertuples(index=False, name=None)) == \
        [(label, seed) for label in SCHEDULERS for seed in (1, 2, 3)]


def test_same_tables_whatever_the_workers(reference, tmp_path):
    ref_dir, comparison = reference
    parallel = geosim.compare(small(), SCHEDULERS, reps=3, jobs_parallel=2, baseline="fifo",
                              out=tmp_path / "two")
    pd.testing.assert_frame_equal(without_wall(parallel.runs), without_wall(comparison.runs))
    pd.testing.assert_frame_equal(parallel.per_job, comparison.per_job)
    pd.testing.assert_frame_equal(parallel.summary, comparison.summary)
    # every saved run (tables, summary, metadata, scenario) and table, byte for byte
    assert_same_files(tmp_path / "two", ref_dir)
    assert parallel.out == tmp_path / "two"
    assert geosim.compare(small(n_jobs=10), ["fifo"], jobs_parallel=1).out is None


def test_reduction_ratio_by_hand(reference):
    out, comparison = reference
    means = {}
    for label, folder in zip(SCHEDULERS, ["fifo", "srpt", "fair_multitasking=true"],
                             strict=True):
        flows = np.array([load_result(out / "runs" / folder / f"seed-{s}").jobs["flowtime"]
                          for s in (1, 2, 3)])
        means[label] = flows.mean(axis=0)
    per_job = comparison.per_job
    for label in SCHEDULERS:
        mine = per_job[per_job["label"] == label]
        np.testing.assert_allclose(mine["flowtime"], means[label], rtol=1e-12)
        ratio = (means["fifo"] - means[label]) / means["fifo"]
        np.testing.assert_allclose(mine["reduction"], ratio, rtol=1e-12, atol=1e-15)
        row = comparison.summary.set_index("label").loc[label]
        assert row["reduction_mean"] == pytest.approx(ratio.mean())
        assert row["reduction_median"] == pytest.approx(np.median(ratio))
        assert row["slower"] == pytest.approx(np.mean(ratio < 0))
    base = per_job[per_job["label"] == "fifo"]["reduction"]
    assert (base == 0).all()
    assert comparison.summary.set_index("label").loc["srpt", "reduction_mean"] != 0


def test_summary_statistics(reference):
    _, comparison = reference
    runs, summary = comparison.runs, comparison.summary.set_index("label")
    for label in SCHEDULERS:
        rep_means = runs.loc[runs["label"] == label, "mean_flowtime"].to_numpy()
        row = summary.loc[label]
        assert row["runs"] == 3 and row["jobs"] == 240 and row["unfinished"] == 0
        assert row["mean_flowtime"] == pytest.approx(rep_means.mean())
        half = stats.t.ppf(0.975, 2) * rep_means.std(ddof=1) / math.sqrt(3)
        assert row["ci95"] == pytest.approx(half)
        mine = runs[runs["label"] == label]
        assert row["copies_per_task"] == pytest.approx(mine["copies_launched"].sum()
                                                       / mine["tasks"].sum())
        assert row["wasted_slot_seconds"] == pytest.approx(mine["wasted_slot_seconds"].mean())
    assert summary.loc["fifo", "copies_per_task"] == 1.0
    assert list(comparison.summary.columns[-8:]) == [
        "within_800", "copies_per_task", "wasted_slot_seconds", "reduction_mean",
        "reduction_median", "slower", "paired_diff", "paired_ci95"]
    text = comparison.format()
    assert text.splitlines()[0].split()[:4] == ["scheduler", "runs", "unfinished", "mean"]
    assert "fair[multitasking=true]" in text and "<=200s" in text


def test_pooled_percentiles_within_and_batch_means(tmp_path):
    comparison = geosim.compare(small(), ["srpt"], within=[10, 25.5], jobs_parallel=1,
                                out=tmp_path / "one")
    jobs = load_result(tmp_path / "one" / "runs" / "srpt" / "seed-1").jobs
    row = comparison.summary.iloc[0]
    flow = jobs.sort_values("arrival")["flowtime"].to_numpy()
    batches = [b.mean() for b in np.array_split(flow, 10)]
    half = stats.t.ppf(0.975, 9) * np.std(batches, ddof=1) / math.sqrt(10)
    assert row["ci95"] == pytest.approx(half)
    assert row["mean_flowtime"] == pytest.approx(flow.mean())
    assert row["p95_flowtime"] == pytest.approx(np.percentile(flow, 95))
    assert row["within_10"] == pytest.approx(np.mean(flow <= 10))
    assert row["within_25.5"] == pytest.approx(np.mean(flow <= 25.5))
    assert "reduction_mean" not in comparison.summary
    assert comparison.per_job["reduction"].isna().all()


def test_unfinished_jobs_are_counted_not_averaged():
    comparison = geosim.compare(small(), ["fifo", "srpt"], reps=2, jobs_parallel=1,
                                overrides={"run.horizon": 150.0}, baseline="fifo")
    runs = comparison.runs
    summary = comparison.summary.set_index("label")
    for label in ("fifo", "srpt"):
        mine = runs[runs["label"] == label]
        unfinished = int((mine["jobs"] - mine["jobs_done"]).sum())
        assert unfinished > 0 and summary.loc[label, "unfinished"] == unfinished
        assert summary.loc[label, "mean_flowtime"] == pytest.approx(mine["mean_flowtime"].mean())
    per_job = comparison.per_job
    assert per_job["flowtime"].isna().any() and per_job["flowtime"].notna().any()
    assert per_job.loc[per_job["flowtime"].isna(), "reduction"].isna().all()


# ---------------------------------------------------------------------------- directory
def _count_runs(monkeypatch):
    calls = []
    real = ex.simulate

    def counting(scenario, spec, seed):
        calls.append((spec.label, seed))
        return real(scenario, spec, seed)

    monkeypatch.setattr(runner, "simulate", counting)
    return calls


def test_resume_recomputes_only_missing_runs(tmp_path, reference, monkeypatch):
    ref_dir, ref = reference
    out = tmp_path / "cmp"
    shutil.copytree(ref_dir, out)
    shutil.rmtree(out / "runs" / "srpt" / "seed-2")
    stamps = {p: p.stat().st_mtime_ns for p in out.glob("runs/*/seed-*/*")}
    assert len(stamps) == 8 * (len(TABLES) + 3)   # the tables, summary, meta, scenario
    calls = _count_runs(monkeypatch)
    again = geosim.compare(small(), SCHEDULERS, reps=3, jobs_parallel=1, out=out,
                           baseline="fifo")
    assert calls == [("srpt", 2)]
    for path, stamp in stamps.items():
        assert path.stat().st_mtime_ns == stamp
    pd.testing.assert_frame_equal(without_wall(again.runs), without_wall(ref.runs))
    pd.testing.assert_frame_equal(again.per_job, ref.per_job)
    cols = [c for c in ref.summary if c not in TIMINGS]
    pd.testing.assert_frame_equal(again.summary[cols], ref.summary[cols])
    assert pd.read_csv(out / "summary.csv")["label"].tolist() == SCHEDULERS
    # more seeds and another scheduler: only the new runs
    calls.clear()
    more = geosim.compare(small(), ["srpt", "fifo", "srpt[preemptive=false]"], seeds=[2, 4],
                          jobs_parallel=1, out=out)
    assert sorted(calls) == [("fifo", 4), ("srpt", 4), ("srpt[preemptive=false]", 2),
                             ("srpt[preemptive=false]", 4)]
    manifest = json.loads((out / "compare.json").read_text())
    assert manifest["seeds"] == [1, 2, 3, 4]
    assert [s["label"] for s in manifest["schedulers"]] == SCHEDULERS + ["srpt[preemptive=false]"]
    assert more.summary["label"].tolist() == ["srpt", "fifo", "srpt[preemptive=false]"]
    srpt2 = more.runs[(more.runs["label"] == "srpt") & (more.runs["seed"] == 2)]
    assert srpt2["mean_flowtime"].item() == \
        ref.runs[(ref.runs["label"] == "srpt") & (ref.runs["seed"] == 2)]["mean_flowtime"].item()


def test_interrupted_comparison_resumes(tmp_path, monkeypatch):
    out = tmp_path / "cmp"
    real = ex.simulate
    calls = []

    def interrupted(scenario, spec, seed):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append((spec.label, seed))
        return real(scenario, spec, seed)

    monkeypatch.setattr(runner, "simulate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        geosim.compare(small(n_jobs=30), ["fifo", "srpt"], reps=2, jobs_parallel=1, out=out)
    assert sorted(p.parent.name for p in out.glob("runs/*/seed-*/summary.json")) == \
        ["seed-1", "seed-2"]
    monkeypatch.setattr(runner, "simulate", real)
    calls2 = _count_runs(monkeypatch)
    done = geosim.compare(small(n_jobs=30), ["fifo", "srpt"], reps=2, jobs_parallel=1, out=out)
    assert calls2 == [("srpt", 1), ("srpt", 2)]
    fresh = geosim.compare(small(n_jobs=30), ["fifo", "srpt"], reps=2, jobs_parallel=1)
    pd.testing.assert_frame_equal(done.per_job, fresh.per_job)


def test_refuses_foreign_or_different_directories(tmp_path):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(GeosimError, match="neither empty nor a geosim comparison"):
        geosim.compare(small(n_jobs=10), ["fifo"], out=foreign, jobs_parallel=1)
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]
    out = tmp_path / "cmp"
    geosim.compare(small(n_jobs=10), ["fifo"], out=out, jobs_parallel=1)
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    with pytest.raises(GeosimError, match=r"different scenario \(workload.n_jobs: 12 here, "
                                          r"10 there\)"):
        geosim.compare(small(n_jobs=12), ["fifo"], out=out, jobs_parallel=1)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    # the seed and the scenario's own scheduler do not make a different scenario
    geosim.compare(small(n_jobs=10, seed=5, scheduler="srpt"), ["fifo"], out=out,
                   jobs_parallel=1)
    assert json.loads((out / "compare.json").read_text())["seeds"] == [1, 5]
    # nor does a key the stored scenario lacks (written before the key existed) if the
    # scenario has its default; another value does
    manifest = json.loads((out / "compare.json").read_text())
    assert "data_lag = 0.0\n" in manifest["scenario"]
    manifest["scenario"] = manifest["scenario"].replace("data_lag = 0.0\n", "")
    (out / "compare.json").write_text(json.dumps(manifest))
    geosim.compare(small(n_jobs=10), ["fifo"], out=out, jobs_parallel=1)
    lagged = small(n_jobs=10)
    lagged["workload"]["data_lag"] = 5.0
    with pytest.raises(GeosimError, match=r"workload.data_lag: 5.0 here, 0.0 there"):
        geosim.compare(lagged, ["fifo"], out=out, jobs_parallel=1)


def test_refuses_a_directory_written_by_other_code(tmp_path, scenario_file, capsys):
    out = tmp_path / "cmp"
    argv = ["compare", str(scenario_file), "--schedulers", "fifo,srpt", "--out", str(out),
            "--jobs-parallel", "2", "--no-progress"]
    assert main(argv) == 0
    code = code_fingerprint()
    manifest = json.loads((out / ex.MANIFEST).read_text())
    assert manifest["code"] == code and manifest["geosim"] == geosim.__version__
    # every run records the code that made it, in the worker processes too
    metas = [json.loads(p.read_text()) for p in out.glob("runs/*/seed-*/meta.json")]
    assert len(metas) == 2 and all(m["code"] == code for m in metas)
    assert main(argv) == 0   # the same code resumes
    capsys.readouterr()
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    for stored, writer in (("0123456789ab", r"\(code 0123456789ab\)"),
                           (None, r"\(before code fingerprints were recorded\)")):
        if stored is None:
            del manifest["code"]
        else:
            manifest["code"] = stored
        (out / ex.MANIFEST).write_text(json.dumps(manifest))
        stamps[out / ex.MANIFEST] = (out / ex.MANIFEST).stat().st_mtime_ns
        with pytest.raises(GeosimError, match=rf"holds runs written by geosim "
                           rf"{geosim.__version__} {writer}, this is geosim "
                           rf"{geosim.__version__} \(code {code}\); results of different code "
                           r"cannot be mixed: use another output directory \(or --restart "
                           r"to replace it\)$"):
            geosim.compare(small(n_jobs=30), ["fifo", "srpt"], out=out, jobs_parallel=1)
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"geosim: error: {out}: holds runs ")
        assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == stamps
    # --restart replaces the stale comparison: fresh manifest, runs of this code only
    (out / "runs" / "stray").mkdir()
    assert main([*argv, "--restart"]) == 0
    fresh = json.loads((out / ex.MANIFEST).read_text())
    assert fresh["code"] == code and not (out / "runs" / "stray").exists()
    assert all(json.loads(p.read_text())["code"] == code
               for p in out.glob("runs/*/seed-*/meta.json"))


def test_worker_errors_name_scheduler_and_seed(tmp_path, monkeypatch):
    bad = small(n_jobs=5)
    bad["workload"]["input_cluster"] = 7   # valid key, but only one cluster exists
    with pytest.raises(GeosimError, match=r"(fifo|srpt), seed [12]: .*input on cluster 7"):
        geosim.compare(bad, ["fifo", "srpt"], reps=2, jobs_parallel=2, out=tmp_path / "bad")
    assert not list((tmp_path / "bad").glob("runs/*/seed-*"))
    real = ex.simulate

    def stall(scenario, spec, seed):
        if spec.name == "srpt":
            raise GeosimError("no task completed", source="<dict>")
        return real(scenario, spec, seed)

    monkeypatch.setattr(runner, "simulate", stall)
    out = tmp_path / "stall"
    with pytest.raises(GeosimError, match="^srpt, seed 1: <dict>: no task completed$"):
        geosim.compare(small(n_jobs=10), ["fifo", "srpt"], reps=2, jobs_parallel=1, out=out)
    assert sorted(p.name for p in (out / "runs" / "fifo").iterdir()) == ["seed-1", "seed-2"]


# ---------------------------------------------------------------------------- CLI
@pytest.fixture
def scenario_file(tmp_path):
    data = small(n_jobs=30)
    data["run"]["name"] = "tiny"
    path = tmp_path / "tiny.toml"
    path.write_text(load_scenario(data).to_toml())
    return path


def test_cli_prints_and_writes(tmp_path, scenario_file, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(["compare", str(scenario_file), "--schedulers", "fifo,srpt[preemptive=false]",
                 "--reps", "2", "--baseline", "fifo", "--within", "20,60", "--jobs-parallel", "1",
                 "--format", "csv", "--no-progress"])
    assert code == 0
    printed = capsys.readouterr().out
    out = tmp_path / "results" / "compare-tiny"
    assert f"results written to {out.relative_to(tmp_path)}/" in printed
    for label in ("srpt[preemptive=false]", "<=20s", "<=60s", "reduction mean", "slower"):
        assert label in printed
    summary = pd.read_csv(out / "summary.csv")
    assert summary["label"].tolist() == ["fifo", "srpt[preemptive=false]"]
    assert (summary["runs"] == 2).all()
    assert len(pd.read_csv(out / "runs.csv")) == 4
    assert len(pd.read_csv(out / "per_job.csv")) == 60
    assert (out / "runs" / "srpt_preemptive=false" / "seed-2" / "jobs.csv").is_file()


BAD_COMPARES = [
    (["--schedulers", "fifo,nope"], "unknown scheduler 'nope'"),
    (["--schedulers", "fair[multitasking=3]"], "multitasking must be true or false"),
    (["--schedulers", "fifo,fifo"], "'fifo' is listed twice"),
    (["--schedulers", "fifo[x"], "unbalanced"),
    (["--schedulers", "fifo", "--seeds", "1,x"], "seeds: must be whole numbers"),
    (["--schedulers", "fifo", "--seeds", "1,2", "--reps", "3"], "2 seeds given but reps = 3"),
    (["--schedulers", "fifo", "--baseline", "srpt"], "'srpt' is not among the schedulers"),
    (["--schedulers", "fifo", "--within", "40,0"], "within: thresholds must be positive"),
    (["--schedulers", "fifo", "--jobs-parallel", "0"], "jobs-parallel: must be"),
    (["--schedulers", "fifo", "--set", "workload.n_jobs=0"], "workload.n_jobs: must be >= 1"),
]


@pytest.mark.parametrize(("argv", "message"), BAD_COMPARES, ids=[m for _, m in BAD_COMPARES])
def test_cli_bad_input_one_line_nothing_written(tmp_path, scenario_file, capsys, argv, message):
    out = tmp_path / "never"
    assert main(["compare", str(scenario_file), "--out", str(out), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("geosim: error: ") and message in err[0]
    assert not out.exists()


def test_cli_dask_missing(tmp_path, scenario_file, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    out = tmp_path / "never"
    assert main(["compare", str(scenario_file), "--schedulers", "fifo", "--out", str(out),
                 "--dask", "tcp://127.0.0.1:8786"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'geosim[dask]'" in err[0]
    assert not out.exists()


# ---------------------------------------------------------------------------- Dask
def test_dask_cluster_gives_the_same_tables(tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    world = geo_world(n_clusters=6, n_jobs=6)
    specs = ["fifo", "fair[multitasking=true]"]
    local = geosim.compare(world, specs, reps=2, jobs_parallel=1, baseline="fifo",
                           out=tmp_path / "one")
    geosim.compare(world, specs, reps=2, jobs_parallel=2, baseline="fifo", out=tmp_path / "two")
    assert_same_files(tmp_path / "two", tmp_path / "one")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        remote = geosim.compare(world, specs, reps=2, dask=client, out=tmp_path / "d",
                                baseline="fifo")
        assert_same_files(tmp_path / "d", tmp_path / "one")
        calls = _count_runs(monkeypatch)
        by_address = geosim.compare(world, specs, seeds=[3, 4, 5], out=tmp_path / "d",
                                    dask=cluster.scheduler_address, baseline="fifo")
        assert calls == []   # the seed-5 runs went to the cluster, the others were loaded
        # workers that run other code (here: this process claims other code) are refused
        monkeypatch.setattr(runner, "code_fingerprint", lambda: "0123456789ab")
        with pytest.raises(GeosimError, match=r"^dask: fifo, seed 3: the Dask worker runs "
                                              r"different code \(geosim .*, code [0-9a-f]{12}\) "
                                              r"than this process \(code 0123456789ab\)"):
            geosim.compare(world, ["fifo"], out=tmp_path / "other", dask=client)
        assert not list((tmp_path / "other").glob("runs/*/*"))
    assert remote.runs["seed"].unique().tolist() == [3, 4]   # geo_world's run.seed is 3
    for other in (remote, by_address):
        runs = other.runs[other.runs["seed"] < 5].reset_index(drop=True)
        pd.testing.assert_frame_equal(without_wall(runs), without_wall(local.runs))
    pd.testing.assert_frame_equal(remote.per_job, local.per_job)
    pd.testing.assert_frame_equal(remote.summary, local.summary)
    assert len(list((tmp_path / "d").glob("runs/*/seed-*/summary.json"))) == 6


def test_cli_compares_several_scenarios_each_into_its_directory(tmp_path, capsys):
    paths = []
    for name, rate in (("light", 0.02), ("busy", 0.2)):
        data = small(n_jobs=20)
        data["run"]["name"] = name
        data["workload"]["arrival_rate"] = rate
        paths.append(tmp_path / f"{name}.toml")
        paths[-1].write_text(load_scenario(data).to_toml())
    out = tmp_path / "cmp"
    code = main(["compare", *map(str, paths), "--schedulers", "fifo,srpt", "--jobs-parallel",
                 "1", "--out", str(out), "--baseline", "fifo", "--no-progress"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "== light (" in printed and "== busy (" in printed
    light = pd.read_csv(out / "light" / "summary.csv")
    busy = pd.read_csv(out / "busy" / "summary.csv")
    assert light["label"].tolist() == busy["label"].tolist() == ["fifo", "srpt"]
    assert (light["runs"] == 1).all() and (busy["runs"] == 1).all()
    for name, rate in (("light", 0.02), ("busy", 0.2)):
        manifest = json.loads((out / name / "compare.json").read_text())
        assert "arrival_rate = " + repr(rate) in manifest["scenario"]


def test_cli_several_scenarios_need_distinct_names(tmp_path, scenario_file, capsys):
    out = tmp_path / "never"
    assert main(["compare", str(scenario_file), str(scenario_file), "--schedulers", "fifo",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "share run.name 'tiny'" in err[0]
    assert not out.exists()


def test_paired_difference_uses_the_pairing():
    # Two schedulers on the same jobs: the paired interval of the change of the mean is
    # far narrower than the unpaired interval of the baseline's mean, and the change is
    # exactly the difference of the means when every job finished.
    comparison = geosim.compare(small(), ["fifo", "srpt"], seeds=[1, 2], jobs_parallel=1,
                                baseline="fifo")
    s = comparison.summary.set_index("label")
    fifo, srpt = s.loc["fifo"], s.loc["srpt"]
    assert fifo["paired_diff"] == 0.0
    assert srpt["paired_diff"] == pytest.approx(
        (srpt["mean_flowtime"] - fifo["mean_flowtime"]) / fifo["mean_flowtime"], rel=1e-9)
    assert 0 < srpt["paired_ci95"] < fifo["ci95"] / fifo["mean_flowtime"] / 2
    lines = comparison.format().splitlines()
    assert sum(line.startswith("srpt vs fifo: ") for line in lines) == 1
    assert ex.verdict("a", "b", 0.01, 0.02).endswith(": undecided (the interval contains 0)")
    assert ex.verdict("a", "b", 0.05, 0.02) == "a vs b: +5.0% [+3.0, +7.0]: slower"
    assert ex.verdict("a", "b", -0.05, 0.02).endswith(": faster")


def test_compare_reports_each_run_on_a_log(tmp_path, scenario_file, capsys):
    """Not on a terminal, compare prints one line per finished run instead of a bar."""
    argv = ["compare", str(scenario_file), "--schedulers", "fifo,srpt", "--reps", "2",
            "--out", str(tmp_path / "cmp"), "--jobs-parallel", "1"]
    assert main(argv) == 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0] == "compare: 0 of 4 runs saved, 4 to run"
    assert [line.split(" (")[0] for line in lines[1:]] == [
        f"compare: {k}/4 runs done" for k in range(1, 5)]
    assert main([*argv, "--no-progress"]) == 0 and capsys.readouterr().err == ""


def test_paired_interval_covers_a_known_difference():
    # Synthetic pairs with a known change of the mean (+5%) and noise correlated along
    # each run (AR(1), as jobs that share a busy period are): the batch-means interval
    # holds the true change in about 95% of replications; without batching it would not.
    rng = np.random.default_rng(7)
    mu, change, seeds, n, phi = 100.0, 0.05, 4, 2000, 0.8

    def one() -> tuple[float, float]:
        frames, refs = [], []
        for seed in range(seeds):
            ref = rng.exponential(mu, n)
            shock = rng.normal(0.0, mu * np.sqrt(1 - phi ** 2), n)
            noise = np.empty(n)
            noise[0] = rng.normal(0.0, mu)
            for k in range(1, n):
                noise[k] = phi * noise[k - 1] + shock[k]
            base = {"seed": seed, "job": np.arange(n), "finished": True, "weight": 1.0}
            refs.append(pd.DataFrame({**base, "flowtime": ref}))
            frames.append(pd.DataFrame({**base, "flowtime": ref + change * mu + noise}))
        return ex.paired_difference(pd.concat(frames), pd.concat(refs))

    runs = [one() for _ in range(200)]
    covered = np.mean([abs(diff - change) <= half for diff, half in runs])
    assert 0.90 <= covered <= 0.99
    assert np.mean([diff for diff, _ in runs]) == pytest.approx(change, abs=0.005)
