"""Result tables on disk, the monitor's observed statistics."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import closed_world, geo_world

import geosim
from geosim import GeoModel, GeosimError, load_scenario
from geosim import results as rs
from geosim.engine import WON
from geosim.engine.step import observed_kernel
from geosim.monitor import Monitor

ROOT = Path(__file__).resolve().parents[1]


def test_save_and_load_round_trip(tmp_path):
    result = geosim.run(geo_world(n_jobs=4))
    for fmt in ("parquet", "csv"):
        out = result.save(tmp_path / fmt, fmt=fmt)
        back = geosim.load_result(out)
        pd.testing.assert_frame_equal(back.jobs, result.jobs, check_dtype=False)
        assert len(back.copies) == len(result.copies)
        assert back.summary["jobs_done"] == 4
        assert back.meta["scheduler"] == "fifo"
    result.save(tmp_path / "parquet")   # a previous result may be replaced
    with pytest.raises(GeosimError, match="not a geosim results directory"):
        geosim.load_result(tmp_path)


def test_summary_is_consistent_with_tables():
    result = geosim.run(geo_world(n_jobs=5, scheduler="fair"))
    s, jobs, copies = result.summary, result.jobs, result.copies
    assert s["mean_flowtime"] == pytest.approx(jobs["flowtime"].mean())
    assert s["p95_flowtime"] == pytest.approx(np.percentile(jobs["flowtime"], 95))
    assert s["copies_launched"] == len(copies)
    assert s["copies_killed"] == int((copies["outcome"] != "won").sum())
    assert 0 < s["slot_utilisation"] < 1
    clusters = result.clusters
    assert set(clusters["tier"].unique()) <= {"large", "medium", "small"}
    assert (clusters["busy"] <= clusters["slots"] + 1e-9).all()
    assert (clusters["available_slots"] <= clusters["slots"]).all()


def test_monitor_ring_keeps_the_most_recent_window():
    mon = Monitor(n_clusters=2, n_types=1, window=4)
    mon.record_copies(np.array([0, 0, 0]), np.array([0, 0, 0]), np.array([1.0, 2.0, 3.0]))
    mon.record_copies(np.array([0, 1, 0, 0]), np.zeros(4, dtype=int), np.array([4., 9., 5., 6.]))
    assert sorted(mon.speed_samples(0, 0)) == [3.0, 4.0, 5.0, 6.0]
    assert list(mon.speed_samples(1)) == [9.0]
    mon.record_transfers(np.array([0]), np.array([1]), np.array([2.5]))
    assert list(mon.bandwidth_samples(0, 1)) == [2.5]
    assert mon.bandwidth_samples(1, 0).size == 0


def test_pair_rings_are_the_same_with_a_dense_or_a_sorted_index(monkeypatch):
    # A world of at most 512 clusters finds pair rings in a dense index, a larger one in
    # sorted keys: both hold the same samples in the same order, and a window of 3 wraps.
    rng = np.random.default_rng(4)
    batches = [(rng.integers(0, 30, k), rng.integers(0, 30, k), rng.random(k))
               for k in rng.integers(1, 40, 25)]
    dense = Monitor(n_clusters=30, n_types=1, window=3)
    monkeypatch.setattr("geosim.monitor.DENSE_KEYS", 0)
    sparse = Monitor(n_clusters=30, n_types=1, window=3)
    assert dense._bandwidth._dense.size == 900 and sparse._bandwidth._dense.size == 0
    kept = []       # keys and rows as each batch left them: later writes leave them be
    for src, dst, bw in batches:
        dense.record_transfers(src, dst, bw)
        sparse.record_transfers(src, dst, bw)
        for mon in (dense, sparse):
            keys, rows = mon._bandwidth.keys_rows()
            kept.append((keys, keys.copy(), rows, rows.copy()))
    for keys, keys_then, rows, rows_then in kept:
        np.testing.assert_array_equal(keys, keys_then)
        np.testing.assert_array_equal(rows, rows_then)
    for a, b in zip(dense.bandwidth_table(), sparse.bandwidth_table(), strict=True):
        np.testing.assert_array_equal(a, b)
    keys = dense.bandwidth_table()[0]
    assert keys.size > 100 and np.all(np.diff(keys) > 0)
    for mon in (dense, sparse):     # the table before its samples are gathered
        table_keys, samples, counts = mon.bandwidth_table()
        row_keys, rows, buf, count = mon.bandwidth_rows()
        np.testing.assert_array_equal(row_keys, table_keys)
        np.testing.assert_array_equal(buf[rows], samples)
        np.testing.assert_array_equal(count[rows], counts)
        assert not any(a.flags.writeable for a in (row_keys, rows, buf, count))
    for src in range(30):
        for dst in range(30):
            np.testing.assert_array_equal(dense.bandwidth_samples(src, dst),
                                          sparse.bandwidth_samples(src, dst))


def test_monitor_learns_the_true_speed_from_completed_copies():
    # Power N(50, 10) per slot, fixed for the run, no availability dips: every observed
    # speed is one slot's power, so the samples follow the slots' distribution.
    world = closed_world(slots=40, rate=0.5, n_jobs=400)
    world["tiers"]["small"].update(power_mean=50.0, power_rsd=0.2)
    model = GeoModel(load_scenario(world))
    model.run()
    seen = model.monitor.speed_samples(0)
    assert seen.size == 64
    assert seen.mean() == pytest.approx(50.0, rel=0.1)
    assert set(np.round(seen, 9)) <= set(np.round(model.world.power.level, 9))


def test_what_completed_copies_saw_is_their_speed_and_their_remote_fetches():
    # The monitor's feed, against its definition: per copy the speed integral over its
    # life; per input fetched from another cluster, size and time positive, MB over time.
    model = GeoModel(load_scenario(geo_world(n_clusters=6, n_jobs=12, seed=3)))
    model.run()
    e = model.engine
    cols, icols = e.copies.cols, e.inputs.cols
    won = np.flatnonzero(cols["outcome"][:e.copies.n] == WON)
    cluster, task, speed, src, dst, bw = observed_kernel(
        won, e.copies.kernel_arg, e.inputs.kernel_arg)
    np.testing.assert_array_equal(cluster, cols["cluster"][won])
    np.testing.assert_array_equal(task, cols["task"][won])
    np.testing.assert_array_equal(
        speed, cols["speed_time"][won] / np.maximum(cols["end"][won] - cols["start"][won], 1e-12))
    want = [(s, c, icols["bw_time"][i] / icols["fetch_time"][i])
            for c, lo, hi in zip(cols["cluster"][won], cols["in_lo"][won], cols["in_hi"][won],
                                 strict=True)
            for i, s in zip(range(lo, hi), icols["src"][lo:hi], strict=True)
            if s != c and icols["size"][i] > 0 and icols["fetch_time"][i] > 0]
    assert 0 < len(want) == src.size
    assert list(zip(src, dst, bw, strict=True)) == want


def test_link_traffic_is_recorded_per_direction():
    # two clusters joined by one link: every remote byte crosses it, u→v from u's egress
    two = geo_world(n_clusters=2, n_jobs=6, seed=5)
    two["topology"]["m"] = 1
    result = geosim.run(two)
    links, clusters = result.links, result.clusters
    assert list(links.columns) == ["time", "link", "u", "v", "bandwidth", "forward_mbps",
                                   "backward_mbps"]
    assert len(links) == clusters["time"].nunique() and (links["u"] == 0).all()
    gate = clusters.pivot(index="time", columns="cluster", values="egress_mbps")
    np.testing.assert_allclose(links["forward_mbps"], gate[0].to_numpy(), atol=1e-9)
    np.testing.assert_allclose(links["backward_mbps"], gate[1].to_numpy(), atol=1e-9)
    assert links[["forward_mbps", "backward_mbps"]].to_numpy().sum() > 0
    assert (links["bandwidth"] > 0).all()


def test_link_traffic_covers_every_route_and_survives_saving(tmp_path):
    result = geosim.run(geo_world(n_jobs=6, scheduler="fair"))
    links, clusters = result.links, result.clusters
    per_sample = links.groupby("time")[["forward_mbps", "backward_mbps"]].sum().sum(axis=1)
    wan = clusters.groupby("time")["egress_mbps"].sum()
    hops = len(result.clusters["cluster"].unique()) - 1
    assert (per_sample >= wan - 1e-9).all() and (per_sample <= hops * wan + 1e-9).all()
    assert per_sample.sum() > 0
    for fmt in ("parquet", "csv"):
        back = geosim.load_result(result.save(tmp_path / fmt, fmt=fmt))
        pd.testing.assert_frame_equal(back.links, links, check_dtype=False)
    (tmp_path / "parquet" / "links.parquet").unlink()   # a result saved before links existed
    assert geosim.load_result(tmp_path / "parquet").links.empty
    single = geosim.run(closed_world(n_jobs=3))
    assert single.links.empty and "forward_mbps" in single.links


# ---------------------------------------------------------------------------- saving
@pytest.fixture(scope="module")
def tiny_result():
    return geosim.run(closed_world(n_jobs=3))


def _temporary(parent: Path, name: str, pid: int) -> Path:
    """A temporary directory of a save to ``parent/name`` by ``pid``, with a partial table."""
    tmp = parent / f".{name}.{pid}.{secrets.token_hex(4)}"
    tmp.mkdir()
    (tmp / "jobs.parquet").write_bytes(b"PAR1 cut short")
    return tmp


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_save_removes_temporaries_of_dead_saves_only(tmp_path, tiny_result, monkeypatch):
    dead = _dead_pid()
    killed = _temporary(tmp_path, "run", dead)
    running = _temporary(tmp_path, "run", os.getppid())   # a save still running elsewhere
    mine = _temporary(tmp_path, "run", os.getpid())       # one of this process (a thread)
    unnamed = tmp_path / ".run.k3_x9a0q"                  # an older version's: no writer
    unnamed.mkdir()
    others = [_temporary(tmp_path, "run2", dead), _temporary(tmp_path, "run.5", dead),
              tmp_path / "keep"]
    others[-1].mkdir()
    dest = tiny_result.save(tmp_path / "run")
    assert not killed.exists()
    assert all(p.exists() for p in [running, mine, unnamed, *others])
    assert geosim.load_result(dest).summary["jobs"] == 3
    # past STALE_SECONDS a running pid proves nothing (it may have been reused)
    monkeypatch.setattr(rs, "STALE_SECONDS", 0.0)
    removed = rs.remove_stale_temporaries(dest)
    assert sorted(removed) == sorted([running, mine, unnamed])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["run", *(p.name for p in others)])


KILLED_SAVE = """
import os, sys
from pathlib import Path
import geosim
result = geosim.load_result(sys.argv[1])
write = Path.write_text

def killed_at_the_scenario(self, *args, **kwargs):
    if self.name == "scenario.toml":
        os._exit(9)
    return write(self, *args, **kwargs)

Path.write_text = killed_at_the_scenario
result.save(sys.argv[2])
"""


def test_a_killed_save_leaves_nothing_loadable_and_is_cleaned_up(tmp_path, tiny_result):
    source = tiny_result.save(tmp_path / "source")
    dest = tmp_path / "out" / "run"
    done = subprocess.run([sys.executable, "-c", KILLED_SAVE, str(source), str(dest)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 9, done.stderr
    [left] = (tmp_path / "out").iterdir()
    assert left.name.startswith(".run.") and rs.is_temporary(left)
    assert (left / "meta.json").is_file() and not (left / "summary.json").exists()
    assert not dest.exists()
    with pytest.raises(GeosimError, match="temporary directory of a save"):
        geosim.load_result(left)
    # even a temporary directory that holds every file is not a result
    whole = tmp_path / "out" / f".run.{os.getpid()}.0123abcd"
    shutil.copytree(source, whole)
    with pytest.raises(GeosimError, match="temporary directory of a save"):
        geosim.load_result(whole)
    shutil.rmtree(whole)
    tiny_result.save(dest)
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["run"]
    assert geosim.load_result(dest).summary["jobs"] == 3


def test_a_failed_replacement_keeps_the_previous_result(tmp_path, tiny_result, monkeypatch):
    dest = tiny_result.save(tmp_path / "run")
    other = geosim.run(closed_world(n_jobs=5))
    rename, failed = Path.rename, []

    def fail_once_into_dest(self, target):
        if Path(target) == dest and not failed:
            failed.append(self)
            raise OSError("no space left")
        return rename(self, target)

    monkeypatch.setattr(Path, "rename", fail_once_into_dest)
    with pytest.raises(OSError, match="no space left"):
        other.save(dest)
    monkeypatch.undo()
    assert failed and [p.name for p in tmp_path.iterdir()] == ["run"]
    assert geosim.load_result(dest).summary["jobs"] == 3
    other.save(dest)
    assert geosim.load_result(dest).summary["jobs"] == 5
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_results_record_the_code_that_made_them(tmp_path, tiny_result):
    code = rs.code_fingerprint()
    assert len(code) == rs.FINGERPRINT_DIGITS and int(code, 16) >= 0
    assert tiny_result.meta["code"] == code and tiny_result.meta["geosim"] == geosim.__version__
    meta = json.loads((tiny_result.save(tmp_path / "run") / "meta.json").read_text())
    assert meta["code"] == code


def test_code_fingerprint_follows_every_source_file(tmp_path):
    src = tmp_path / "pkg"
    (src / "sub").mkdir(parents=True)
    (src / "a.py").write_text("x = 1\n")
    (src / "sub" / "b.py").write_text("y = 2\n")
    first = rs.fingerprint_sources(src)
    digest = hashlib.sha256(b"a.py\x006\x00x = 1\nsub/b.py\x006\x00y = 2\n").hexdigest()
    assert first == digest[:rs.FINGERPRINT_DIGITS]
    (src / "notes.txt").write_text("not code")
    (src / ".#a.py").write_text("an editor's lock")
    assert rs.fingerprint_sources(src) == first
    seen = [first]
    for change in (lambda: (src / "a.py").write_text("x = 2\n"),
                   lambda: (src / "sub" / "b.py").rename(src / "sub" / "c.py"),
                   lambda: (src / "d.py").write_text("")):
        change()
        seen.append(rs.fingerprint_sources(src))
    assert len(set(seen)) == 4
    (src / "d.py").unlink()
    assert rs.fingerprint_sources(src) == seen[2]
