"""The geosim command as a user runs it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from geosim.cli import main
from geosim.errors import GeosimError
from geosim.results import load_result

ROOT = Path(__file__).resolve().parents[1]
QUICK = str(ROOT / "scenarios" / "quickstart.toml")


def test_run_writes_tables_and_prints_summary(tmp_path, capsys):
    out = tmp_path / "res"
    code = main(["run", QUICK, "--scheduler", "srpt", "--seed", "4", "--out", str(out),
                 "--set", "workload.n_jobs=8", "--set", "topology.n_clusters=10"])
    assert code == 0
    printed = capsys.readouterr().out
    for label in ("jobs done", "flowtime mean", "p50 / p95 / p99", "slot utilisation",
                  "WAN traffic", "copies launched / killed", "wasted slot-seconds", "wall time"):
        assert label in printed
    assert "8 / 8" in printed
    result = load_result(out)
    assert len(result.jobs) == 8 and result.jobs["finished"].all()
    meta = json.loads((out / "meta.json").read_text())
    assert meta["scheduler"] == "srpt" and meta["seed"] == 4
    assert "n_jobs = 8" in (out / "scenario.toml").read_text()


def test_run_takes_a_scheduler_spec_with_parameters(tmp_path, capsys):
    out = tmp_path / "laps"
    redundancy = str(ROOT / "scenarios" / "redundancy-gamma.toml")
    assert main(["run", redundancy, "--scheduler", "laps+r[beta=0.6,reassign=random]",
                 "--out", str(out), "--set", "workload.n_jobs=40"]) == 0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["scheduler"] == "laps+r"
    assert meta["params"] == {"beta": 0.6, "reassign": "random", "max_copies": None}
    capsys.readouterr()
    assert main(["run", redundancy, "--scheduler", "laps+r[beta=2]", "--out",
                 str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("geosim: error:") and "beta must be < 1 (got 2)" in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "bad").exists()


def test_csv_format(tmp_path):
    out = tmp_path / "csv"
    assert main(["run", QUICK, "--out", str(out), "--format", "csv",
                 "--set", "workload.n_jobs=3", "--set", "topology.n_clusters=6"]) == 0
    assert len(pd.read_csv(out / "jobs.csv")) == 3


def test_validate_and_schedulers(capsys):
    assert main(["validate", QUICK]) == 0
    assert "ok (20 clusters" in capsys.readouterr().out
    assert main(["schedulers"]) == 0
    listed = capsys.readouterr().out
    for name in ("fifo", "fair", "srpt"):
        assert any(line.startswith(name + " ") for line in listed.splitlines())


BAD_RUNS = [
    (["run", "missing.toml"], "missing.toml: scenario file not found"),
    (["run", QUICK, "--scheduler", "nope"], "scheduler.name: unknown scheduler 'nope'"),
    (["run", QUICK, "--set", "workload.arrival_rate=-1"], "workload.arrival_rate: must be > 0"),
    (["run", QUICK, "--set", "outages.enabled"], "expected KEY=VALUE"),
    (["validate", QUICK, "--set", "tiers.small.outage_probability=2"], "must be <= 1"),
    (["validate", QUICK, "--set", "tiers.small.power_mean=[nan, 1.0]"],
     "tiers.small.power_mean: must not be NaN"),
    (["run", QUICK, "--scheduler", "dolly[straggler_ratio=nan]"],
     "dolly: straggler_ratio must be finite"),
    (["run", QUICK, "--set", "run.dt=1e300"], "run.dt: must be <= 86400"),
    (["run", QUICK, "--set", "links.redraw_interval=5e-324"],
     "links.redraw_interval: must be 0 (never) or at least 1e-3"),
]


@pytest.mark.parametrize(("argv", "message"), BAD_RUNS, ids=[m for _, m in BAD_RUNS])
def test_bad_input_exits_2_with_one_line_and_no_output(tmp_path, argv, message):
    out = tmp_path / "never"
    argv = argv + (["--out", str(out)] if argv[0] == "run" else [])
    proc = subprocess.run([sys.executable, "-m", "geosim.cli", *argv], capture_output=True,
                          text=True, cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("geosim: error: ")
    assert message in lines[0]
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_bad_files_exit_2_without_traceback(tmp_path):
    import networkx as nx
    nx.write_graphml(nx.Graph([(0, 1), (2, 3)]), tmp_path / "split.graphml")
    cases = {
        "broken.toml": ("[workload\nn_jobs = 3", "broken.toml: malformed TOML"),
        "split.toml": ("[topology]\ngenerator = \"file\"\nfile = \"split.graphml\"\n",
                       "split.graphml: topology is disconnected"),
        "far.toml": ("[topology]\ngenerator = \"single\"\n[workload]\nkind = \"single\"\n"
                     "input_cluster = 7\n", "input on cluster 7"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text)
        out = tmp_path / f"out-{name}"
        proc = subprocess.run([sys.executable, "-m", "geosim.cli", "run", name, "--out", str(out)],
                              capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode == 2, name
        assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, name
        assert "Traceback" not in proc.stderr
        assert not out.exists()


def test_unreadable_scenarios_exit_2_with_one_line(tmp_path, capsys):
    cases = {
        "utf16.toml": ("[run]\n".encode("utf-16"), "not UTF-8 text (byte 0)"),
        "junk.toml": (bytes(range(128, 256)), "not UTF-8 text"),
        "deep.toml": (("a = " + "[" * 5000 + "]" * 5000).encode(), "nested too deeply"),
        "empty.toml": (b"# nothing but a comment\n", "empty scenario"),
    }
    for name, (data, message) in cases.items():
        (tmp_path / name).write_bytes(data)
        assert main(["validate", str(tmp_path / name)]) == 2, name
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1, name


def test_an_output_directory_that_cannot_be_written_is_refused_before_the_run(tmp_path,
                                                                                capsys):
    (tmp_path / "afile").write_text("x")
    for out, message in ((tmp_path / "afile" / "res", "is not a directory"),
                         (Path("/proc/geosim-res"), "cannot be written")):
        code = main(["run", QUICK, "--out", str(out), "--set", "workload.n_jobs=2",
                     "--set", "topology.n_clusters=6"])
        err = capsys.readouterr()
        assert code == 2 and message in err.err and "jobs done" not in err.out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]   # nothing left behind


def test_refuses_to_overwrite_a_foreign_directory(tmp_path, capsys):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    code = main(["run", QUICK, "--out", str(foreign), "--set", "workload.n_jobs=2",
                 "--set", "topology.n_clusters=6"])
    assert code == 2
    assert "not a geosim results directory" in capsys.readouterr().err
    assert (foreign / "notes.txt").read_text() == "keep me"


def test_a_plugin_command_that_cannot_load_says_why(monkeypatch, capsys):
    import importlib.metadata

    class Broken:
        name = "broken"

        def load(self):
            raise ImportError("No module named 'missing_extra'")

    real = importlib.metadata.entry_points
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: (
        [Broken()] if group == "geosim.commands" else real(group=group)))
    assert main(["broken", "anything", "--flag"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("geosim: error: the 'broken' command is unavailable: "
                   "No module named 'missing_extra'")


def test_a_damaged_or_incomplete_result_is_refused_in_one_line(tmp_path, capsys):
    good = tmp_path / "good"
    assert main(["run", QUICK, "--out", str(good), "--set", "workload.n_jobs=3",
                 "--set", "topology.n_clusters=6"]) == 0
    damage = {
        "truncated": (lambda d: (d / "jobs.parquet").write_bytes(
            (good / "jobs.parquet").read_bytes()[:100]), "jobs.parquet cannot be read"),
        "no-table": (lambda d: (d / "copies.parquet").unlink(), "no copies table"),
        "no-meta": (lambda d: (d / "meta.json").unlink(), "no meta.json"),
        "bad-json": (lambda d: (d / "summary.json").write_text("{"), "malformed JSON"),
        "json-list": (lambda d: (d / "meta.json").write_text("[]"),
                      "meta.json holds no JSON object"),
    }
    for name, (spoil, message) in damage.items():
        target = tmp_path / name
        shutil.copytree(good, target)
        spoil(target)
        with pytest.raises(GeosimError, match=message):
            load_result(target)
        capsys.readouterr()
        assert main(["plot", str(target), "--out", str(tmp_path / f"fig-{name}")]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1, name
        assert not (tmp_path / f"fig-{name}").exists()


def test_help_and_a_missing_file_do_not_load_the_numerical_stack():
    """``geosim --help`` and a one-line input error answer without pandas, SciPy or Numba."""
    code = (
        "import sys\n"
        "from geosim.cli import main\n"
        "for argv in (['--help'], ['run', 'no-such-file.toml']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(sorted(m for m in ('pandas', 'numba', 'scipy', 'mesa')"
        " if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_compile_runs_every_registered_scheduler_and_checks_its_argument(capsys):
    """``geosim compile`` reaches every scheduler's kernels; a bad worker count exits 2."""
    from geosim import threads
    from geosim.schedulers import registered
    from geosim.warmup import _run, _runs
    runs = _runs()
    assert {name for world, name in runs if world == "geo"} == set(registered())
    assert {world for world, _ in runs} == {"geo", "closed-slot", "closed-event", "flows",
                                            "geo-checked", "geo-wide"}
    assert runs[0] == ("geo", "pingan")        # the longest compile starts first
    assert _run("closed-event", "srpt+r") > 0
    wide_from = threads.WIDE_FROM
    assert _run("geo-wide", "fair") > 0 and threads.WIDE_FROM == wide_from    # restored
    assert main(["compile", "--jobs-parallel", "0"]) == 2
    assert capsys.readouterr().err.strip() == (
        "geosim: error: --jobs-parallel: must be at least 1 (got 0)")
