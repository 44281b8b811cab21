"""Figures, animation and the plot/animate commands, drawn from saved results."""

from __future__ import annotations

import functools
import itertools
import os
import re
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
from matplotlib.colors import rgb_to_hsv, to_hex, to_rgba
from PIL import Image

import geosim
from geosim import GeosimError, load_result
from geosim.cli import main
from geosim.model import GeoModel
from geosim.scenario import load_scenario
from geosim.schedulers import registered
from viz import figures
from viz.data import READABLE_COPIES, ComparisonData, as_run, load_comparison
from viz.palette import (
    FALLBACK_COLORS,
    MAX_PLAIN,
    OUTCOME_COLORS,
    SCHEDULER_COLORS,
    STATE_COLORS,
    scheduler_colors,
    scheduler_styles,
)

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


def _synthetic(flowtimes: dict[str, list[float]], name: str = "synthetic") -> ComparisonData:
    """A comparison of given per-job flowtimes (one replication), without any run."""
    labels = list(flowtimes)
    per_job = pd.DataFrame([(label, job, float(f)) for label in labels
                            for job, f in enumerate(flowtimes[label])],
                           columns=["label", "job", "flowtime"])
    summary = pd.DataFrame({
        "label": labels, "mean_flowtime": [np.mean(flowtimes[k]) for k in labels],
        "ci95": [5.0] * len(labels), "copies_per_task": [1.0 + i / 10 for i in
                                                         range(len(labels))]})
    runs = pd.DataFrame({"label": labels, "seed": 1,
                         "wasted_slot_seconds": [100.0 * i for i in range(len(labels))]})
    return ComparisonData(summary, runs, per_job, labels, [1], name=name)


def _inside(xy: np.ndarray, box) -> bool:
    return bool(np.any((xy[:, 0] > box.x0) & (xy[:, 0] < box.x1)
                       & (xy[:, 1] > box.y0) & (xy[:, 1] < box.y1)))


def _covered(fig) -> list[str]:
    """Data drawn under a legend: ``"legend title: artist"`` for each covered artist.

    Lines are followed along their segments (steps included), bars by their extent,
    collections by their points and vertices.
    """
    fig.canvas.draw()
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    found = []
    for legend in legends:
        box = legend.get_window_extent().expanded(0.98, 0.9)
        inside = functools.partial(_inside, box=box)
        for ax in fig.axes:
            for line in ax.lines:
                xy = np.asarray(line.get_xydata(), dtype=float)
                if line.get_drawstyle().startswith("steps") and len(xy) > 1:
                    xy = np.column_stack([np.repeat(xy[:, 0], 2)[1:],
                                          np.repeat(xy[:, 1], 2)[:-1]])
                if line.get_linestyle() not in ("None", "", " ") and len(xy) > 1:
                    t = np.linspace(0, 1, 25)[:, None]
                    xy = np.concatenate([a + t * (b - a) for a, b in zip(xy[:-1], xy[1:],
                                                                         strict=True)])
                xy = line.get_transform().transform(xy)
                if inside(xy[np.isfinite(xy).all(axis=1)]):
                    found.append(f"{legend.get_title().get_text()}: {line.get_label()}")
            for patch in ax.patches:
                if patch.get_window_extent().overlaps(box):
                    found.append(f"{legend.get_title().get_text()}: {patch.get_label()}")
            for coll in ax.collections:
                if isinstance(coll, QuadMesh):
                    continue   # heatmaps fill their axes: no legend is ever on one
                if isinstance(coll, PathCollection):   # markers: their positions
                    xy = coll.get_offset_transform().transform(np.asarray(coll.get_offsets()))
                else:                                   # polygons, segments: vertices
                    xy = np.concatenate([coll.get_transform().transform(p.vertices)
                                         for p in coll.get_paths()] or [np.empty((0, 2))])
                if len(xy) and inside(xy):
                    found.append(f"{legend.get_title().get_text()}: {coll}")
    return found


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
    with pytest.raises(GeosimError, match="job 99 does not exist"):
        figures.gantt(run, 99)


def test_default_gantt_job_is_the_slowest_readable_one(saved, monkeypatch):
    run = as_run(saved["run"])
    flowtime = run.result.jobs.set_index("job")["flowtime"]
    copies = run.result.copies.groupby("job").size()
    slowest = int(flowtime.idxmax())
    # the run's slowest job has too many copies to draw readably
    assert copies[slowest] > READABLE_COPIES
    readable = copies[copies <= READABLE_COPIES].index
    expected = int(flowtime[readable].idxmax())
    assert run.default_job() == run.check_job(None) == expected != slowest
    fig = figures.gantt(run)
    _close(fig)
    ax = fig.axes[0]
    assert f"job {expected}, " in ax.get_title(loc="left")
    assert len(ax.containers[0].patches) == copies[expected] <= READABLE_COPIES
    assert sum(t.get_text().startswith("c") for t in ax.texts) == copies[expected]
    # no job small enough: the one with the fewest copies
    monkeypatch.setattr("viz.data.READABLE_COPIES", int(copies.min()) - 1)
    assert run.default_job() == int(copies.idxmin())
    # --job still chooses any job
    assert f"job {slowest}, " in figures.gantt(run, slowest).axes[0].get_title(loc="left")


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


def test_paired_change_points_and_intervals_come_from_the_summaries(saved, tmp_path):
    comps = {rate: geosim.compare(closed_world(slots=1, rate=rate, n_jobs=30),
                                  ["fifo", "srpt", "fair"], reps=2, jobs_parallel=1,
                                  out=tmp_path / str(rate), baseline="fifo").out
             for rate in (0.09, 0.05)}
    fig = figures.paired_change([*comps.values(), saved["low"]])
    _close(fig)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "λ = 0.05/s\nvs fifo", "λ = 0.05/s\nvs fifo", "λ = 0.09/s\nvs fifo"]
    assert [line.get_xdata()[0] for line in ax.lines if line.get_linestyle() == "--"] == [0]
    decided = []
    for rate, path in comps.items():
        summary = pd.read_csv(path / "summary.csv").set_index("label")
        for label in ("srpt", "fair"):
            row = summary.loc[label]
            (bars,) = [c for c in ax.containers
                       if c.lines[0].get_gid() == f"paired:λ = {rate:g}/s:{label}"]
            point, (whisker,) = bars.lines[0], bars.lines[2]
            assert point.get_xdata()[0] == pytest.approx(row["paired_diff"])
            (segment,) = whisker.get_segments()
            assert segment[:, 0] == pytest.approx([row["paired_diff"] - row["paired_ci95"],
                                                   row["paired_diff"] + row["paired_ci95"]])
            filled = to_rgba(point.get_markerfacecolor()) != to_rgba("white")
            assert filled == (abs(row["paired_diff"]) > row["paired_ci95"])
            decided.append(filled)
    assert True in decided   # srpt is decidedly faster than fifo at the higher load
    # the baseline has no point; too few jobs for an interval: a point without whiskers
    assert not [c for c in ax.containers if c.lines[0].get_gid().endswith(":fifo")]
    (few,) = [c for c in ax.containers if c.lines[0].get_gid() == "paired:λ = 0.05/s:pingan"]
    assert len(ax.containers) == 2 * 2 + 1 and few.lines[2] == ()
    assert _covered(fig) == []
    plain = geosim.compare(closed_world(slots=1, n_jobs=20), ["fifo", "srpt"], jobs_parallel=1)
    with pytest.raises(GeosimError, match="no comparison has a baseline"):
        figures.paired_change(plain)


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


def test_reduction_cdf_marks_the_jobs_beyond_the_cut():
    comp = _synthetic({"base": [100.0] * 10, "fast": [50.0] * 10,
                       "slow": [350.0, 250.0, 210.0] + [90.0] * 7})
    fig = figures.reduction_cdf(comp, baseline="base")
    _close(fig)
    ax = fig.axes[0]
    left = ax.get_xlim()[0]
    assert -1.1 <= left < -1.0   # the axis is cut just left of -100%...
    curves = {line.get_label(): line for line in ax.lines if line.get_gid() is None
              and line.get_label() in ("fast", "slow")}
    assert np.sort(curves["slow"].get_xdata())[1:4] == pytest.approx([-2.5, -1.5, -1.1])
    # ... and a marker at the cut, at the share of jobs beyond it, says so
    (mark,) = [line for line in ax.lines if line.get_gid() == "clipped:slow"]
    assert mark.get_xdata()[0] == pytest.approx(left)
    assert mark.get_ydata()[0] == pytest.approx(0.3)
    assert to_rgba(mark.get_color()) == to_rgba(curves["slow"].get_color())
    assert not [line for line in ax.lines if line.get_gid() == "clipped:fast"]
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert texts[:2] == ["fast (median +50%)", "slow (median +10%; 3 jobs below −100%)"]
    assert texts[2].startswith("◀ at the left edge") and "axis cut" in texts[2]
    # nothing cut: no marker, no note, the axis reaches the lowest value
    fig = figures.reduction_cdf(_synthetic({"base": [100.0] * 4, "other": [150, 90, 80, 70]}),
                                baseline="base")
    _close(fig)
    assert not [line for line in fig.axes[0].lines if line.get_gid()]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["other (median +15%)"]
    assert fig.axes[0].get_xlim()[0] == pytest.approx(-0.52)


def _crowded(name: str, shift: float = 0.0) -> ComparisonData:
    """Every registered scheduler, with flowtimes spread over several decades."""
    rng = np.random.default_rng(7)
    return _synthetic({label: rng.lognormal(4.0 + 0.08 * i + shift, 0.9, 40)
                       for i, label in enumerate(registered())}, name=name)


def test_no_legend_covers_a_curve_bar_or_point(saved):
    crowded = [_crowded("λ = 1/s"), _crowded("λ = 2/s", 0.3)]
    draws = {
        "flowtime-cdf crowded": lambda: figures.flowtime_cdf(crowded),
        "flowtime-cdf one": lambda: figures.flowtime_cdf(crowded[0]),
        "reduction-cdf crowded": lambda: figures.reduction_cdf(crowded, baseline="fifo"),
        "reduction-cdf one": lambda: figures.reduction_cdf(crowded[0], baseline="fifo"),
        "mean-flowtime": lambda: figures.mean_flowtime(crowded),
        "copies-and-waste": lambda: figures.copies_and_waste(crowded),
        "flowtime-cdf saved": lambda: figures.flowtime_cdf([saved["run"], saved["low"]]),
        "reduction-cdf saved": lambda: figures.reduction_cdf([saved["low"], saved["high"]]),
        "wan-traffic": lambda: figures.wan_traffic(saved["run"]),
        "gantt": lambda: figures.gantt(saved["run"]),
        "topology-map": lambda: figures.topology_map(saved["run"]),
    }
    covered = {name: _covered(draw()) for name, draw in draws.items()}
    assert {name: found for name, found in covered.items() if found} == {}


def test_crowded_figures_tell_schedulers_apart_by_style_too():
    fig = figures.flowtime_cdf(_crowded("λ = 1/s"))
    _close(fig)
    lines = fig.axes[0].lines
    assert len(lines) == len(registered()) > MAX_PLAIN
    assert len({(line.get_color(), line.get_linestyle(), line.get_marker())
                for line in lines}) == len(lines)
    assert len({(line.get_linestyle(), line.get_marker()) for line in lines}) == len(lines)
    fig = figures.mean_flowtime(_crowded("λ = 1/s"))
    hatches = {c.get_label(): c.patches[0].get_hatch() for c in fig.axes[0].containers
               if hasattr(c, "patches")}
    assert len(hatches) == len(registered())
    assert len(set(hatches.values())) > 1
    # two schedulers differ in style too; one alone is a plain solid line
    fig = figures.flowtime_cdf(_synthetic({"fifo": [10, 20], "pingan": [15, 30]}))
    assert len({(line.get_linestyle(), line.get_marker())
                for line in fig.axes[0].lines}) == 2
    fig = figures.flowtime_cdf(_synthetic({"fifo": [10, 20]}))
    assert {(line.get_linestyle(), line.get_marker()) for line in fig.axes[0].lines} == {
        ("-", "None")}


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


def _cielab(rgb) -> np.ndarray:
    """CIELAB (D65) of an sRGB colour."""
    c = np.asarray(rgb, dtype=float)
    c = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                    [0.0193, 0.1192, 0.9505]]) @ c / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def test_every_registered_scheduler_has_a_distinct_stable_colour():
    names = list(registered())
    assert set(names) <= set(SCHEDULER_COLORS)
    colors = scheduler_colors(names)
    lab = {name: _cielab(c) for name, c in colors.items()}
    gap, a, b = min((float(np.linalg.norm(lab[a] - lab[b])), a, b)
                    for a, b in itertools.combinations(names, 2))
    assert gap >= 20, f"{a} and {b} are only {gap:.1f} CIELAB units apart"
    # the three greens of the usability issue
    assert min(np.linalg.norm(lab[a] - lab[b]) for a, b in itertools.combinations(
        ["pingan", "iridium", "flutter+dolly"], 2)) >= 30
    # the same colour alone, in any order, beside anything
    for name in names:
        assert scheduler_colors([name])[name] == colors[name] == \
            scheduler_colors(["my-plugin", *reversed(names)])[name]
    # no two registered schedulers share both line style and marker in crowded figures
    styles = scheduler_styles(names)
    assert len({(s.linestyle, s.marker) for s in styles.values()}) == len(names)
    assert all(s.linestyle == "-" and s.marker is None and not s.hatch
               for s in scheduler_styles(names[:MAX_PLAIN]).values())


#: Colour-vision deficiencies (Machado, Oliveira and Fernandes 2009, severity 1), applied
#: to linear RGB.
_DEFICIENCIES = {
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
}


def test_the_schedulers_make_run_compares_are_told_apart_by_everyone():
    makefile = (ROOT / "Makefile").read_text()
    names = re.search(r"^SCHEDULERS \?= (\S+)$", makefile, flags=re.M).group(1).split(",")
    colors = scheduler_colors(names)

    def to_linear(c):
        c = np.asarray(c, dtype=float)
        return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)

    def to_srgb(c):
        c = np.clip(c, 0.0, 1.0)
        return np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055)

    for a, b in itertools.combinations(names, 2):
        assert np.linalg.norm(_cielab(colors[a]) - _cielab(colors[b])) >= 30, (a, b)
        for kind, matrix in _DEFICIENCIES.items():
            seen = [_cielab(to_srgb(matrix @ to_linear(colors[x]))) for x in (a, b)]
            assert np.linalg.norm(seen[0] - seen[1]) >= 15, (kind, a, b)
    styles = scheduler_styles(names)        # and never by colour alone
    assert len({(s.linestyle, s.marker) for s in styles.values()}) == len(names)
    assert len({s.marker for s in styles.values()}) == len(names)


def test_unknown_labels_get_deterministic_colours():
    alone = scheduler_colors(["fair[multitasking=true]", "my-plugin"])
    beside = scheduler_colors(["srpt", "my-plugin", "fair", "fair[multitasking=true]", "pingan"])
    assert alone == {k: beside[k] for k in alone}
    assert to_hex(alone["my-plugin"]) in {c.lower() for c in FALLBACK_COLORS}
    fair, variant = beside["fair"], beside["fair[multitasking=true]"]
    assert not np.allclose(variant, fair)   # a darker or lighter shade of fair's colour
    assert rgb_to_hsv(variant)[0] == pytest.approx(rgb_to_hsv(fair)[0], abs=0.01)
    # variants of one scheduler, and plugins drawn together, stay apart
    assert len(set(scheduler_colors([f"laps+r[beta=0.{i}]" for i in range(1, 7)]).values())) == 6
    assert len(set(scheduler_colors([f"plugin-{i}" for i in range(8)]).values())) == 8
    # the same in another process, whatever its hash seed
    code = ("from viz.palette import scheduler_colors; "
            "print(scheduler_colors(['my-plugin', 'fair[multitasking=true]']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert out.stdout.strip() == repr(scheduler_colors(["my-plugin",
                                                        "fair[multitasking=true]"]))


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


def test_plot_command_on_a_run_without_time_series(tmp_path, capsys):
    # run.record_interval = 0: the figures of jobs are drawn, none over time.
    run = tmp_path / "run"
    assert main(["run", "scenarios/quickstart.toml", "--set", "workload.n_jobs=5", "--set",
                 "run.record_interval=0", "--out", str(run), "--no-progress"]) == 0
    out = tmp_path / "figs"
    assert main(["plot", str(run), "--out", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names[0] == "flowtime-cdf.png" and names[1].startswith("gantt-job-")
    assert len(names) == 2
    capsys.readouterr()
    assert main(["plot", str(run), "--out", str(tmp_path / "at"), "--time", "10"]) == 2
    assert "recorded no cluster time series" in capsys.readouterr().err
    assert not (tmp_path / "at").exists()


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
        "copies-and-waste.pdf", "flowtime-cdf.pdf", "mean-flowtime.pdf", "paired-change.pdf",
        "reduction-cdf.pdf"]


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
