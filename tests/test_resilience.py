"""What a disk, a crash or a second user does to stored results: nothing lost or corrupted."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pandas as pd
import pytest
from conftest import closed_world
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import geosim
from geosim import GeosimError
from geosim.cli import main
from geosim.experiment import lock
from geosim.scenario import SCHEMA, load_scenario

ROOT = Path(__file__).resolve().parents[1]
SCHEDULERS = ["fifo", "srpt"]


def tiny(**kw):
    return closed_world(**{"slots": 2, "rate": 0.3, "n_jobs": 12, **kw})


def compare(out, **kw):
    return geosim.compare(tiny(), SCHEDULERS, reps=2, jobs_parallel=1, out=out, **kw)


@pytest.fixture
def finished(tmp_path):
    """A finished comparison and its summary table."""
    out = tmp_path / "cmp"
    return out, compare(out).summary


def run_dir(out, label="fifo", seed=1):
    return out / "runs" / label / f"seed-{seed}"


DAMAGES = {
    "truncated jobs table": lambda d: (d / "jobs.parquet").write_bytes(
        (d / "jobs.parquet").read_bytes()[:100]),
    "malformed summary": lambda d: (d / "summary.json").write_text("{not json"),
    "summary of another shape": lambda d: (d / "summary.json").write_text("[1, 2]"),
    "meta of another seed": lambda d: (d / "meta.json").write_text(json.dumps(
        {**json.loads((d / "meta.json").read_text()), "seed": 7})),
    "a table missing": lambda d: (d / "copies.parquet").unlink(),
    "rows lost": lambda d: pd.read_parquet(d / "jobs.parquet").iloc[:-1].to_parquet(
        d / "jobs.parquet", index=False),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_run_is_made_again_and_said(finished, damage):
    out, summary = finished
    DAMAGES[damage](run_dir(out))
    again = compare(out)
    assert len(again.redone) == 1 and again.redone[0].startswith("fifo, seed 1: ")
    pd.testing.assert_frame_equal(again.summary, summary)
    assert compare(out).redone == ()          # made again, it is reused afterwards


def test_the_command_line_says_which_run_was_made_again(finished, capsys, tmp_path):
    out, _ = finished
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(geosim.load_scenario(tiny()).to_toml())
    DAMAGES["truncated jobs table"](run_dir(out, "srpt", 2))
    assert main(["compare", str(scenario), "--schedulers", "fifo,srpt", "--reps", "2",
                 "--jobs-parallel", "1", "--out", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["geosim: damaged saved run made again: srpt, seed 2: jobs.parquet or "
                   "jobs.csv is missing or cannot be read"]


def test_a_full_disk_is_one_line_and_leaves_nothing_partial(tmp_path, capsys, monkeypatch):
    def full(self, path, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(pd.DataFrame, "to_parquet", full)
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(geosim.load_scenario(tiny()).to_toml())
    out = tmp_path / "run"
    assert main(["run", str(scenario), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("geosim: error: ")
    assert err[0].endswith("jobs.parquet: No space left on device")
    assert not out.exists() and list(tmp_path.iterdir()) == [scenario]
    cmp = tmp_path / "cmp"
    assert main(["compare", str(scenario), "--schedulers", "fifo,srpt", "--jobs-parallel",
                 "1", "--out", str(cmp), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "fifo, seed 1: " in err[0] and "No space left" in err[0]
    assert not (cmp / "runs").exists() or not any((cmp / "runs").rglob("summary.json"))


def test_a_removed_comparison_directory_stops_the_comparison(tmp_path, monkeypatch):
    import shutil

    from geosim.experiment import runner
    out = tmp_path / "cmp"
    real = runner._execute

    def execute_then_remove(scenario, run, fmt):
        outcome = real(scenario, run, fmt)
        shutil.rmtree(out)
        return outcome

    monkeypatch.setattr(runner, "_execute", execute_then_remove)
    with pytest.raises(GeosimError, match="compare.json vanished while the comparison ran"):
        compare(out)


@pytest.mark.parametrize("name", ["a\nb", 'quote " and \\ back', "tab\there\x7f", "日本"])
def test_a_saved_scenario_reads_back_equal(name):
    scenario = load_scenario(tiny(), {"run.name": name})
    again = load_scenario(tomllib.loads(scenario.to_toml()))
    assert again.data == scenario.data


def test_a_second_writer_of_a_directory_is_refused_in_one_line(tmp_path):
    out = tmp_path / "cmp"
    with lock.hold(out, "compare"):
        with pytest.raises(GeosimError) as err:
            compare(out)
    message = str(err.value)
    assert message.startswith(f"{out}: is being written by another geosim compare (pid "
                              f"{os.getpid()} on ")
    assert "\n" not in message and not out.exists()
    compare(out)                               # free again once released
    assert not lock.lock_path(out).exists()    # and the command removes its lock file


def test_the_lock_of_a_killed_process_is_free(tmp_path):
    out = tmp_path / "cmp"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom geosim.experiment import lock\n"
         f"with lock.hold({str(out)!r}, 'sweep'):\n    print('held', flush=True)\n"
         "    time.sleep(60)\n"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(GeosimError, match=f"another geosim sweep \\(pid {holder.pid} "):
            compare(out)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
    start = time.perf_counter()
    assert compare(out).out == out and time.perf_counter() - start < 60


# --- round trip over the whole schema ---------------------------------------------------------

def valid_value(field) -> st.SearchStrategy:
    """Values a field's declaration allows (strings with control and non-ASCII characters)."""
    lo = -1e6 if field.lo is None else field.lo
    hi = 1e6 if field.hi is None else min(field.hi, max(lo, 0) + 1e6)
    if field.kind in ("float", "range"):
        number = st.floats(lo, hi, exclude_min=field.lo_open, exclude_max=field.hi_open,
                           allow_nan=False)
        if field.kind == "float":
            return number
        return st.one_of(number, st.tuples(number, number).map(lambda p: sorted(p)))
    if field.kind in ("int", "irange"):
        number = st.integers(int(lo) + field.lo_open, int(hi) - field.hi_open)
        if field.kind == "int":
            return number
        return st.one_of(number, st.tuples(number, number).map(lambda p: sorted(p)))
    if field.kind == "bool":
        return st.booleans()
    if field.kind == "str":
        return st.sampled_from(field.choices) if field.choices else st.text(max_size=12)
    if field.kind == "table":
        return st.dictionaries(st.text(min_size=1, max_size=6),
                               st.one_of(st.text(max_size=6), st.integers(-5, 5)), max_size=3)
    return st.lists(st.text(max_size=6), max_size=3)


FIELDS = sorted((f"{section}.{key}", field) for section, fields in SCHEMA.items()
                for key, field in fields.items())


@st.composite
def accepted_scenario(draw):
    """A scenario the validator accepts: the tiny world with up to eight keys changed."""
    chosen = draw(st.lists(st.sampled_from(FIELDS), max_size=8, unique_by=lambda f: f[0]))
    overrides = {key: draw(valid_value(field)) for key, field in chosen}
    try:
        return load_scenario(tiny(), overrides)
    except GeosimError:
        assume(False)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much,
                                                                  HealthCheck.too_slow])
@given(accepted_scenario())
def test_every_accepted_scenario_reads_back_equal(scenario):
    text = scenario.to_toml()
    again = load_scenario(tomllib.loads(text))
    assert again.data == scenario.data
    assert again.to_toml() == text


def test_a_saved_result_loads_back_equal(tmp_path):
    result = geosim.run(load_scenario(tiny(), {"run.name": "tab\there, ünï \"q\""}),
                        scheduler="srpt", seed=3)
    for fmt in ("parquet", "csv"):
        again = geosim.load_result(result.save(tmp_path / fmt, fmt=fmt))
        for name in ("jobs", "tasks", "copies", "clusters", "links"):
            ours, theirs = getattr(result, name), getattr(again, name)
            if fmt == "csv":        # CSV keeps values, not dtypes (categories read as text)
                ours, theirs = ours.astype(object), theirs.astype(object)
            pd.testing.assert_frame_equal(theirs, ours, check_dtype=fmt == "parquet")
        assert again.summary == json.loads(json.dumps(result.summary))
        assert again.scenario_toml == result.scenario_toml


# --- a worker killed ---------------------------------------------------------------------------

@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_worker_is_replaced_and_its_runs_made_again(tmp_path):
    from test_lifecycle import _stat, descendants, wait_for
    out = tmp_path / "cmp"
    argv = [sys.executable, "-m", "geosim.cli", "compare", "scenarios/quickstart.toml",
            "--schedulers", "fifo,srpt", "--reps", "2", "--jobs-parallel", "2", "--out",
            str(out), "--no-progress"]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        def workers():
            deeper = [p for p in descendants(proc.pid)
                      if (st := _stat(p)) is not None and st[0] != proc.pid]
            return deeper if len(deeper) >= 2 else proc.poll() is not None

        victims = wait_for(workers, 120.0, "two worker processes")
        assert proc.poll() is None
        time.sleep(1.0)                             # simulating by now
        os.kill(victims[0], signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr
    assert "geosim: a worker process died" in stderr and "unfinished runs again" in stderr
    saved = sorted(p.parent.name + "/" + p.name for p in out.glob("runs/*/seed-*"))
    assert saved == ["fifo/seed-1", "fifo/seed-2", "srpt/seed-1", "srpt/seed-2"]
    assert all((out / "runs" / s / "summary.json").is_file() for s in saved)
    assert not list(out.glob("runs/*/.seed-*"))     # no half-written run left behind
    again = subprocess.run(argv[:-1], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "runs done" not in again.stderr   # nothing ran again
    assert again.stdout.split("results written")[0] == stdout.split("results written")[0]


def test_a_killed_dask_worker_loses_nothing(tmp_path):
    distributed = pytest.importorskip("distributed")
    import threading
    scenario = load_scenario(ROOT / "scenarios" / "quickstart.toml", {"workload.n_jobs": 60})
    reference = geosim.compare(scenario, SCHEDULERS, reps=2, jobs_parallel=1)
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        victim, killed = min(client.run(os.getpid).values()), []

        def kill_when_busy() -> None:
            deadline = time.monotonic() + 60
            while not client.processing() or not any(client.processing().values()):
                if time.monotonic() > deadline:
                    return
                time.sleep(0.05)
            time.sleep(0.5)
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

        killer = threading.Thread(target=kill_when_busy, daemon=True)
        killer.start()
        remote = geosim.compare(scenario, SCHEDULERS, reps=2, dask=client, out=tmp_path / "d")
        killer.join(5)
    assert killed == [victim]
    assert len(list((tmp_path / "d").glob("runs/*/seed-*/summary.json"))) == 4
    pd.testing.assert_frame_equal(remote.per_job, reference.per_job)


def test_a_real_full_file_system(tmp_path, capsys):
    full = tmp_path / "full"
    full.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=120k", "tmpfs", str(full)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        scenario = tmp_path / "big.toml"
        scenario.write_text(geosim.load_scenario(tiny(n_jobs=3000)).to_toml())
        assert main(["run", str(scenario), "--out", str(full / "run"), "--no-progress"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"geosim: error: {full / 'run'}: No space left on device"]
        assert list(full.iterdir()) == []
    finally:
        subprocess.run(["umount", str(full)], capture_output=True)
