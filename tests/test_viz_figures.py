"""Figures, animation and the plot/animate commands, drawn from saved results."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pandas as pd
import pytest
from conftest import closed_world, geo_world
from matplotlib.collections import LineCollection, PathCollection, QuadMesh
from matplotlib.colors import to_rgba
from PIL import Image

import geosim
from geosim import GeosimError, load_result
from geosim.cli import main
from geosim.model import GeoModel
from geosim.scenario import load_scenario
from viz import figures
from viz.data import load_comparison
from viz.palette import OUTCOME_COLORS, STATE_COLORS, scheduler_colors

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A run directory and two comparison directories (two loads), all tiny."""
    base = tmp_path_factory.mktemp("viz")
    run = geosim.run(geo_world(n_jobs=6, seed=3)).save(base / "run")
    low = geosim.compare(geo_world(n_jobs=6, rate=0.05), ["fifo", "pingan"], reps=2,
                         jobs_parallel=1, out=base / "low", baseline="fifo")
    high = geosim.compare(geo_world(n_jobs=6, rate=0.1), ["fifo", "pingan"], reps=2,
                          jobs_parallel=1, out=base / "high", baseline="fifo")
    return {"run": run, "low": low.out, "high": high.out, "base": base}


def _close(fig):
    fig.canvas.draw()   # every figure must render, not only build


# ---------------------------------------------------------------------------- run figures
def test_cluster_states_heatmaps_are_clusters_by_samples(saved):
    result = load_result(saved["run"])
    fig = figures.cluster_states(saved["run"])
    _close(fig)
    meshes = [c for ax in fig.axes[:2] for c in ax.collections if isinstance(c, QuadMesh)]
    assert len(meshes) == 2
    n_clusters = result.clusters["cluster"].nunique()
    n_samples = result.clusters["time"].nunique()
    state, util = (m.get_array() for m in meshes)
    assert state.shape == util.shape == (n_clusters, n_samples)
    # rows sorted by tier (large first), then slots; cells are the table's states
    first = result.clusters[result.clusters["time"] == 0].set_index("cluster")
    tiers = first["tier"].astype(str).map({"large": 0, "medium": 1, "small": 2})
    order = pd.DataFrame({"t": tiers, "s": -first["slots"], "c": first.index}) \
        .sort_values(["t", "s", "c"]).index.to_numpy()
    table = result.clusters.pivot(index="cluster", columns="time", values="state") \
        .loc[order].astype(str).to_numpy()
    codes = {"available": 0, "degraded": 1, "unreachable": 2}
    np.testing.assert_array_equal(np.asarray(state), np.vectorize(codes.get)(table))
    # an outage masks utilisation; elsewhere it is busy / slots
    down = table == "unreachable"
    assert down.any() and np.ma.getmaskarray(util)[down].all()
    busy = result.clusters.pivot(index="cluster", columns="time", values="busy").loc[order]
    slots = result.clusters.pivot(index="cluster", columns="time", values="slots").loc[order]
    np.testing.assert_allclose(np.ma.filled(util, np.nan)[~down],
                               (busy / slots).to_numpy()[~down])
    bottom = fig.axes[1]
    assert bottom.get_xlabel() == "time (s)"
    assert [t.get_text().split()[0] for t in bottom.get_yticklabels()] == \
        [t for t in ("large", "medium", "small") if t in set(first["tier"].astype(str))]


def test_topology_map_places_clusters_and_colours_links_by_their_traffic(saved):
    result = load_result(saved["run"])
    model = GeoModel(load_scenario(geo_world(n_jobs=6, seed=3)))
    world = model.world
    times = np.sort(result.clusters["time"].unique())
    fig = figures.topology_map(saved["run"], time=float(times[len(times) // 2]) + 0.5)
    _close(fig)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "x (km)" and ax.get_ylabel() == "y (km)"
    points = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert sum(len(p.get_offsets()) for p in points) == world.n_clusters
    xy = np.concatenate([p.get_offsets() for p in points])
    expected = {(round(world.graph.nodes[c]["x"], 6), round(world.graph.nodes[c]["y"], 6))
                for c in range(world.n_clusters)}
    assert {(round(x, 6), round(y, 6)) for x, y in xy} == expected
    # one marker shape per tier, marker area growing with slots
    tiers = set(result.clusters["tier"].astype(str))
    assert sorted(p.get_label() for p in points) == sorted(f"{t} clusters" for t in tiers)
    where = {(round(world.graph.nodes[c]["x"], 6), round(world.graph.nodes[c]["y"], 6)): c
             for c in range(world.n_clusters)}
    slots = np.array([world.slots[where[(round(x, 6), round(y, 6))]] for x, y in xy])
    sizes = np.concatenate([p.get_sizes() for p in points])
    assert (np.diff(sizes[np.argsort(slots, kind="stable")]) >= -1e-9).all()
    # links: one segment each, coloured by the recorded traffic at the sample
    links = next(c for c in ax.collections if isinstance(c, LineCollection))
    assert len(links.get_segments()) == world.n_links
    sample = result.links[result.links["time"] == times[len(times) // 2]].sort_values("link")
    np.testing.assert_allclose(links.get_array(),
                               sample["forward_mbps"] + sample["backward_mbps"])
    assert f"t = {times[len(times) // 2]:.0f} s" in ax.get_title(loc="left")
    # fill by state: colours are the palette's
    state = result.clusters[result.clusters["time"] == times[len(times) // 2]]
    colors = {tuple(np.round(c, 4)) for p in points for c in p.get_facecolors()}
    assert colors == {tuple(np.round(to_rgba(STATE_COLORS[s]), 4))
                      for s in state["state"].astype(str)}


def test_topology_map_by_utilisation_and_bad_options(saved):
    fig = figures.topology_map(saved["run"], color_by="utilisation")
    _close(fig)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "available (outline)" in labels
    with pytest.raises(GeosimError, match="unknown colouring 'speed'"):
        figures.topology_map(saved["run"], color_by="speed")
    with pytest.raises(GeosimError, match="time 1e\\+07 s is outside the run"):
        figures.topology_map(saved["run"], time=1e7)


def test_wan_traffic_totals_and_per_gate_means(saved):
    result = load_result(saved["run"])
    fig = figures.wan_traffic(saved["run"])
    _close(fig)
    top, middle, bottom = fig.axes[:3]
    assert top.get_ylabel() == "WAN throughput (MB/s)" and top.get_xlabel() == "time (s)"
    total = result.clusters.groupby("time")["egress_mbps"].sum()
    stack_top = max(p.get_paths()[0].vertices[:, 1].max() for p in top.collections)
    assert stack_top == pytest.approx(total.max())
    n = result.clusters["cluster"].nunique()
    (mesh,) = [c for c in middle.collections if isinstance(c, QuadMesh)]
    gate = np.ma.filled(mesh.get_array(), 0.0)
    assert gate.shape == (n, len(total))
    c = result.clusters
    both = (c["egress_mbps"] + c["ingress_mbps"]).groupby(c["time"]).sum()
    assert gate.sum(axis=0) == pytest.approx(both.to_numpy())
    bars = bottom.patches
    assert len(bars) == 2 * n
    heights = np.array([b.get_height() for b in bars])
    times = np.sort(result.clusters["time"].unique())
    span = np.diff(times, prepend=times[0])
    egress = result.clusters.pivot(index="cluster", columns="time", values="egress_mbps")
    means = egress.to_numpy() @ span / (times[-1] - times[0])
    assert sorted(np.round(heights[:n], 9)) == sorted(np.round(means, 9))
    assert (heights[n:] <= 0).all()


def test_gantt_has_a_bar_per_copy_and_marks_the_winners(saved):
    comp = load_comparison(saved["low"])
    run = comp.load_run("pingan", comp.seeds[0])
    copies = run.result.copies
    per_task = copies.groupby("job").size()
    job = int(copies[copies["outcome"].astype(str) == "lost"]["job"].iloc[0]) \
        if (copies["outcome"].astype(str) == "lost").any() else int(per_task.idxmax())
    fig = figures.gantt(run, job)
    _close(fig)
    ax = fig.axes[0]
    mine = copies[copies["job"] == job]
    bars = ax.containers[0]
    assert len(bars.patches) == len(mine)
    won = mine["outcome"].astype(str) == "won"
    won_color = to_rgba(OUTCOME_COLORS["won"])
    assert sum(p.get_facecolor() == won_color for p in bars.patches) == won.sum()
    winners = next(line for line in ax.lines if line.get_gid() == "winners")
    assert len(winners.get_xdata()) == won.sum() == (run.result.tasks["job"] == job).sum()
    assert np.sort(winners.get_xdata()) == pytest.approx(np.sort(mine.loc[won, "end"]))
    starts = sorted(p.get_x() for p in bars.patches)
    assert starts == pytest.approx(sorted(mine["start"]))
    assert ax.get_xlabel() == "time (s)" and f"job {job}," in ax.get_title(loc="left")
    # default: the job with the largest flowtime
    jobs = run.result.jobs
    slowest = int(jobs.loc[jobs["flowtime"].idxmax(), "job"])
    assert f"job {slowest}," in figures.gantt(run).axes[0].get_title(loc="left")
    with pytest.raises(GeosimError, match="job 99 does not exist"):
        figures.gantt(run, 99)


# ---------------------------------------------------------------------------- jobs
def test_flowtime_cdf_of_a_run_and_of_comparisons(saved):
    jobs = load_result(saved["run"]).jobs
    fig = figures.flowtime_cdf(saved["run"])
    _close(fig)
    (line,) = fig.axes[0].lines
    assert line.get_xdata().max() == pytest.approx(jobs["flowtime"].max())
    assert line.get_ydata()[-1] == 1.0 and len(line.get_xdata()) == len(jobs) + 1
    assert fig.axes[0].get_xlabel() == "flowtime (s)"
    assert fig.axes[0].get_ylabel() == "fraction of jobs (CDF)"

    fig = figures.flowtime_cdf([saved["high"], saved["low"]], log_x=False)
    _close(fig)
    panels = [ax for ax in fig.axes if ax.lines]
    assert len(panels) == 2
    per_job = pd.read_parquet(saved["low"] / "per_job.parquet")   # panels ordered by load
    assert panels[0].get_title(loc="left") == "λ = 0.05/s (2 replications)"
    assert panels[1].get_title(loc="left").startswith("λ = 0.1/s")
    colors = scheduler_colors(["fifo", "pingan"])
    for line, label in zip(panels[0].lines, ["fifo", "pingan"], strict=True):
        mine = per_job.loc[per_job["label"] == label, "flowtime"]
        assert line.get_xdata().max() == pytest.approx(mine.max())
        assert line.get_label().startswith(label)
        assert to_rgba(line.get_color()) == to_rgba(colors[label])


def test_mean_flowtime_bars_and_intervals_come_from_the_summaries(saved):
    fig = figures.mean_flowtime([saved["high"], saved["low"]])
    _close(fig)
    ax = fig.axes[0]
    assert ax.get_ylabel() == "mean flowtime (s)"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["λ = 0.05/s", "λ = 0.1/s"]
    for label in ("fifo", "pingan"):
        bars = next(c for c in ax.containers if c.get_label() == label)
        expected = [pd.read_csv(saved[k] / "summary.csv").set_index("label").loc[label]
                    for k in ("low", "high")]
        assert [b.get_height() for b in bars.patches] == \
            pytest.approx([e["mean_flowtime"] for e in expected])
        segments = bars.errorbar.lines[2][0].get_segments()
        half = [(s[1, 1] - s[0, 1]) / 2 for s in segments]
        assert half == pytest.approx([e["ci95"] for e in expected])


def test_reduction_cdf_against_the_baseline(saved):
    fig = figures.reduction_cdf(saved["low"])
    _close(fig)
    ax = fig.axes[0]
    (line,) = ax.lines[:1]
    per_job = pd.read_parquet(saved["low"] / "per_job.parquet")
    ratio = per_job.loc[per_job["label"] == "pingan", "reduction"].dropna().sort_values()
    assert line.get_xdata()[1:] == pytest.approx(ratio.to_numpy())
    assert ax.get_xlabel() == "flowtime reduction against fifo: (F_fifo − F) / F_fifo"
    # another baseline: recomputed from the replication-averaged flowtimes
    fig = figures.reduction_cdf(saved["low"], baseline="pingan")
    fifo = per_job[per_job["label"] == "fifo"].set_index("job")["flowtime"]
    ping = per_job[per_job["label"] == "pingan"].set_index("job")["flowtime"]
    assert np.sort(fig.axes[0].lines[0].get_xdata()[1:]) == \
        pytest.approx(np.sort(((ping - fifo) / ping).to_numpy()))
    with pytest.raises(GeosimError, match="baseline 'srpt' is not among"):
        figures.reduction_cdf(saved["low"], baseline="srpt")


def test_copies_and_waste_per_scheduler_and_load(saved):
    fig = figures.copies_and_waste([saved["low"], saved["high"]])
    _close(fig)
    left, right = fig.axes[:2]
    assert left.get_ylabel() == "copies launched per task"
    assert right.get_ylabel() == "wasted slot-seconds per run"
    summary = pd.read_csv(saved["low"] / "summary.csv").set_index("label")
    runs = pd.read_csv(saved["low"] / "runs.csv")
    pingan = next(c for c in left.containers if c.get_label() == "pingan")
    assert pingan.patches[0].get_height() == pytest.approx(summary.loc["pingan",
                                                                       "copies_per_task"])
    waste = next(c for c in right.containers if c.get_label() == "pingan")
    assert waste.patches[0].get_height() == pytest.approx(
        runs.loc[runs["label"] == "pingan", "wasted_slot_seconds"].mean())


def test_scheduler_colours_are_stable_and_distinct():
    one = scheduler_colors(["fifo", "pingan"])
    two = scheduler_colors(["pingan", "srpt", "laps+r[beta=0.6]", "laps+r[beta=0.8]"])
    assert one["pingan"] == two["pingan"]
    assert len(set(two.values())) == 4


def test_results_without_link_table_estimate_links_from_gates(saved, tmp_path):
    old = tmp_path / "old"
    load_result(saved["run"]).save(old, fmt="csv")
    (old / "links.csv").unlink()
    fig = figures.topology_map(old)
    _close(fig)
    bars = fig.axes[0].child_axes
    assert any("estimated" in bar.get_ylabel() for bar in bars)


def test_a_one_cluster_world_without_wan_draws_every_run_figure(tmp_path):
    run = geosim.run(closed_world(n_jobs=8, slots=2)).save(tmp_path / "one")
    fig = figures.topology_map(run, color_by="utilisation")
    _close(fig)
    (links,) = [c for c in fig.axes[0].collections if isinstance(c, LineCollection)]
    assert len(links.get_segments()) == 0
    assert not any("traffic" in bar.get_ylabel() for bar in fig.axes[0].child_axes)
    for draw in (figures.cluster_states, figures.wan_traffic, figures.gantt):
        _close(draw(run))
    assert main(["animate", str(run), "--out", str(tmp_path / "one.gif"), "--frames", "2",
                 "--dpi", "30"]) == 0


def test_a_changed_topology_is_refused(saved, tmp_path):
    copy = tmp_path / "copy"
    load_result(saved["run"]).save(copy)
    toml = (copy / "scenario.toml").read_text().replace("n_clusters = 8", "n_clusters = 9")
    (copy / "scenario.toml").write_text(toml)
    with pytest.raises(GeosimError, match="does not rebuild the run's world"):
        figures.topology_map(copy)


# ---------------------------------------------------------------------------- commands
def test_plot_command_on_a_run_directory(saved, tmp_path, capsys):
    out = tmp_path / "figs"
    assert main(["plot", str(saved["run"]), "--out", str(out), "--job", "2",
                 "--time", "40"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["cluster-states.png", "flowtime-cdf.png", "gantt-job-2.png",
                     "topology-map.png", "wan-traffic.png"]
    for path in out.iterdir():
        with Image.open(path) as image:
            assert image.format == "PNG" and image.size[0] > 400
    assert str(out / "gantt-job-2.png") in capsys.readouterr().out


def test_plot_command_on_comparison_directories(saved, tmp_path):
    out = tmp_path / "cmp"
    assert main(["plot", str(saved["low"]), "--out", str(out), "--format", "svg",
                 "--scheduler", "pingan"]) == 0
    names = {p.name for p in out.iterdir()}
    assert {"flowtime-cdf.svg", "mean-flowtime.svg", "reduction-cdf.svg",
            "copies-and-waste.svg", "pingan-seed-3-cluster-states.svg",
            "pingan-seed-3-topology-map.svg", "pingan-seed-3-wan-traffic.svg"} <= names
    assert not any(n.startswith("fifo-") for n in names)
    both = tmp_path / "both"
    assert main(["plot", str(saved["low"]), str(saved["high"]), "--out", str(both),
                 "--format", "pdf"]) == 0
    assert sorted(p.name for p in both.iterdir()) == [
        "copies-and-waste.pdf", "flowtime-cdf.pdf", "mean-flowtime.pdf", "reduction-cdf.pdf"]


def test_animate_command_writes_a_gif(saved, tmp_path):
    out = tmp_path / "anim" / "run.gif"
    assert main(["animate", str(saved["run"]), "--out", str(out), "--frames", "3",
                 "--fps", "4", "--dpi", "40"]) == 0
    with Image.open(out) as gif:
        assert gif.format == "GIF" and gif.n_frames == 3
    out = tmp_path / "cmp.gif"
    assert main(["animate", str(saved["low"]), "--out", str(out), "--seconds", "0.5",
                 "--fps", "4", "--dpi", "40", "--scheduler", "pingan",
                 "--color-by", "state"]) == 0
    with Image.open(out) as gif:
        assert gif.n_frames == 2


@pytest.mark.parametrize("argv, message", [
    (["plot", "{tmp}/missing"], "{tmp}/missing: does not exist"),
    (["plot", "{tmp}"], "{tmp}: not a geosim results directory"),
    (["plot", "{run}", "--job", "999"], "job 999 does not exist (jobs 0 to 5)"),
    (["plot", "{run}", "--format", "gif"], "--format: unknown figure format 'gif'"),
    (["plot", "{run}", "--time", "-5"], "time -5 s is outside the run"),
    (["plot", "{low}", "--scheduler", "srpt"], "no scheduler 'srpt' in the comparison"),
    (["plot", "{low}", "--seed", "7"], "no seed 7 in the comparison (3, 4)"),
    (["plot", "{low}", "--baseline", "srpt"], "baseline 'srpt' is not among"),
    (["animate", "{run}", "--out", "{tmp}/run.avi"], "unknown animation format '.avi'"),
    (["animate", "{run}", "--out", "{tmp}/run.gif", "--frames", "0"], "--frames: must be >= 1"),
    (["animate", "{run}", "--out", "{tmp}/run.gif", "--fps", "0"], "--fps: must be > 0"),
    (["animate", "{tmp}", "--out", "{tmp}/run.gif"], "not a geosim results directory"),
])
def test_bad_input_is_one_line_and_writes_nothing(saved, tmp_path, capsys, argv, message):
    empty = tmp_path / "empty"
    empty.mkdir()
    fill = {"tmp": str(empty), "run": str(saved["run"]), "low": str(saved["low"])}
    argv = [a.format(**fill) for a in argv]
    out = ["--out", str(tmp_path / "figs")] if argv[0] == "plot" else []
    assert main(argv + out) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("geosim: error: ") and len(err.splitlines()) == 1
    assert message.format(**fill) in err
    assert not (tmp_path / "figs").exists() and list(empty.iterdir()) == []


@pytest.mark.skipif(shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None,
                    reason="ffmpeg is not installed (apt-get install ffmpeg)")
def test_animate_command_writes_an_mp4_with_ffmpeg(saved, tmp_path):
    out = tmp_path / "run.mp4"
    assert main(["animate", str(saved["run"]), "--out", str(out), "--frames", "5",
                 "--fps", "5", "--dpi", "40"]) == 0
    probe = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
                            "-show_entries", "stream=codec_name,nb_read_frames",
                            "-of", "default=noprint_wrappers=1", str(out)],
                           capture_output=True, text=True, check=True).stdout
    assert "codec_name=h264" in probe and "nb_read_frames=5" in probe


def test_mp4_without_ffmpeg_is_a_clear_error(saved, tmp_path, capsys, monkeypatch):
    from matplotlib import animation
    monkeypatch.setattr(animation.writers, "is_available", lambda name: False)
    assert main(["animate", str(saved["run"]), "--out", str(tmp_path / "run.mp4")]) == 2
    assert "writing MP4 needs ffmpeg on PATH" in capsys.readouterr().err
    assert not (tmp_path / "run.mp4").exists()


def test_commands_are_registered_entry_points():
    # geosim itself never imports viz: only the entry points do, when the CLI is built
    code = ("import sys, geosim, geosim.cli, geosim.experiment\n"
            "print(any(m.split('.')[0] == 'viz' for m in sys.modules))\n"
            "print(geosim.cli._parser().format_help())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    first, help_text = out.split("\n", 1)
    assert first == "False"
    assert "plot" in help_text and "animate" in help_text
