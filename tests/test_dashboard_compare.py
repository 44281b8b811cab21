"""The comparison dashboard: lockstep sides, replay of saved results, the page and the CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("solara", reason="the dashboard needs the viz extra")

import ipyvuetify as v  # noqa: E402
import ipywidgets  # noqa: E402
import solara  # noqa: E402

from geosim.agents import ClusterAgent, LinkAgent  # noqa: E402
from geosim.cli import main  # noqa: E402
from geosim.errors import GeosimError  # noqa: E402
from geosim.experiment.stats import paired_change, paired_difference  # noqa: E402
from viz.compare_data import LiveComparison, open_replay  # noqa: E402
from viz.compare_draw import CompareSeries  # noqa: E402
from viz.compare_ui import make_compare_page  # noqa: E402
from viz.dashboard import DashboardConfig, compare_config  # noqa: E402
from viz.dashboard_draw import LoadMap  # noqa: E402
from viz.dashboard_run import interval_bandwidth  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
QUICK = str(ROOT / "scenarios" / "quickstart.toml")
MEDIUM = str(ROOT / "scenarios" / "pingan-medium.toml")
SMALL = (("workload.n_jobs", 40),)
JPEG = b"\xff\xd8\xff"
LABELS = ["fair", "srpt", "pingan"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    """A saved comparison of three schedulers on the small quickstart world, one seed."""
    out = tmp_path_factory.mktemp("compare") / "quick"
    assert main(["compare", QUICK, "--schedulers", ",".join(LABELS), "--reps", "1",
                 "--set", "workload.n_jobs=40", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def finished() -> LiveComparison:
    live = LiveComparison(LABELS, QUICK, 1, overrides=SMALL)
    while live.running:
        live.advance(25)
    return live


# ---------------------------------------------------------------------------- live
def test_sides_share_the_world_and_the_jobs_and_advance_in_lockstep():
    live = LiveComparison(["pingan", "flutter+mantri"], MEDIUM, 3,
                          overrides=(("workload.n_jobs", 60),))
    a, b = live.models
    assert live.labels == ["pingan", "flutter+mantri"]
    assert np.array_equal(a.workload.arrival, b.workload.arrival)
    assert np.array_equal(a.world.slots, b.world.slots)
    for _ in range(40):
        before = live.time
        live.advance(2)
        # the same outages and bandwidths, whatever the schedulers did
        assert np.array_equal(a.engine.reachable, b.engine.reachable)
        assert np.array_equal(a.world.link_bw.level, b.world.link_bw.level)
        assert a.engine.time == b.engine.time >= before + 2 * live.dt - 1e-9
    assert live.steps == 40 and live.time == a.engine.time
    assert [s.time.size for s in (live.series(0), live.series(1))] == [41, 41]


def test_live_map_reads_link_load_and_gate_utilisation_of_the_last_interval():
    live = LiveComparison(["pingan", "fair"], MEDIUM, 1, overrides=(("workload.n_jobs", 60),))
    loads = []
    for _ in range(150):
        live.advance(1)
        frame = live.map_frame(0)
        loads.append(frame.link_load.max())
        # traffic never exceeds the bandwidth in force: the load is a share
        assert np.all(frame.link_load <= 1 + 1e-9) and np.all(frame.gate_util <= 1 + 1e-9)
    assert max(loads) > 0.5
    m = live.models[0]
    links, clusters = m.recorder.samples(LinkAgent), m.recorder.samples(ClusterAgent)
    last, before = links[-1], links[-2]
    expect = np.maximum(last["forward_mbps"], last["backward_mbps"]) / before["bandwidth"]
    assert np.allclose(live.map_frame(0).link_load, expect)
    gate = np.maximum(clusters[-1]["egress_mbps"], clusters[-1]["ingress_mbps"]) / m.world.gate
    assert np.allclose(live.map_frame(0).gate_util, gate)


def test_the_bandwidth_of_an_interval_is_the_sample_before_also_within_a_block():
    one, two = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    assert interval_bandwidth([{"bandwidth": one}], 2).tolist() == [1, 2]
    assert interval_bandwidth([{"bandwidth": one}, {"bandwidth": two}], 2).tolist() == [1, 2]
    block = {"bandwidth": np.concatenate([one, two])}   # two samples taken at once
    assert interval_bandwidth([block], 2).tolist() == [1, 2]


def test_paired_change_is_the_comparison_definition_for_one_seed(finished):
    results = [m.result().jobs.assign(seed=1) for m in finished.models]
    for k in (1, 2):
        p = finished.paired_series(k)
        change, half = paired_difference(results[k], results[0])
        assert p.change[-1] == pytest.approx(change) and p.half[-1] == pytest.approx(half)
        assert p.jobs[-1] == 40
    assert np.isnan(paired_change(np.empty(0), np.empty(0))[0])


def test_a_finished_comparison_stops_and_its_series_end_with_the_means(finished):
    assert not finished.running
    for k, m in enumerate(finished.models):
        s = finished.series(k)
        jobs = m.result().jobs
        assert s.mean_flowtime[-1] == pytest.approx(jobs["flowtime"].mean())
        assert s.alive[-1] == 0 and np.all(np.diff(s.time) > 0)
        assert finished.status(k)["done"] == 40 and finished.status(k)["finished"]


def test_a_trace_feeds_a_side_by_side_comparison(tmp_path):
    """Jobs read from a trace (Alibaba's batch_task.csv layout) run side by side as any."""
    trace = tmp_path / "batch_task.csv"
    trace.write_text("\n".join([
        "M1,2,j_1,1,Terminated,10,20,100,0.2", "M2,1,j_1,1,Terminated,10,15,100,0.2",
        "R3_1_2,3,j_1,1,Terminated,25,40,100,0.2", "M1,4,j_2,1,Terminated,30,90,100,0.2",
        "M1,1,j_3,1,Terminated,50,55,100,0.2"]) + "\n")
    live = LiveComparison(["fair", "srpt"], QUICK, 1, overrides=(
        ("workload.kind", "alibaba-trace"), ("workload.files", [str(trace)]),
        ("workload.task_cv", 0.0)))
    assert live.n_jobs == 3 and live.arrival.tolist() == [0.0, 20.0, 40.0]
    while live.running:
        live.advance(10)
    assert [live.status(k)["done"] for k in range(2)] == [3, 3]
    assert live.paired_series(1).jobs[-1] == 3


# ---------------------------------------------------------------------------- replay
def test_replay_shows_what_the_live_comparison_showed(saved, finished):
    replay = open_replay(saved)
    assert replay.labels == LABELS and replay.of == 3
    assert np.array_equal(replay.completion,
                          np.stack([m.engine.job_done[:40] for m in finished.models]),
                          equal_nan=True)
    for k in range(3):
        assert replay.status(k)["mean_flowtime"] == pytest.approx(
            finished.status(k)["mean_flowtime"])
    for k in (1, 2):
        assert replay.paired_series(k).change[-1] == pytest.approx(
            finished.paired_series(k).change[-1])
    # a map at a sampled time is that sample of the saved tables
    run = replay.runs[2]
    t = float(run.times[30])
    frame = replay.map_frame(2, t + 0.5)
    table = run.clusters[run.clusters["time"] == t].sort_values("cluster")
    assert frame.time == t
    assert np.allclose(frame.busy, table["busy"].to_numpy())
    gate = np.maximum(table["egress_mbps"], table["ingress_mbps"]).to_numpy()
    assert np.allclose(frame.gate_util, gate / replay.layout.gate)
    # scrubbing back shows the past: fewer jobs done
    early = replay.status(2, float(run.times[5]))
    assert early["done"] < 40 and early["arrived"] < 40
    assert replay.series(2, float(run.times[5])).time[-1] <= run.times[5]


def test_replay_chooses_labels_and_seed_and_refuses_bad_ones(saved, tmp_path):
    replay = open_replay(saved, ["pingan", "fair"])
    assert replay.labels == ["pingan", "fair"] and replay.of == 3
    with pytest.raises(GeosimError, match="no scheduler 'nope'"):
        open_replay(saved, ["nope", "fair"])
    with pytest.raises(GeosimError, match="no seed 9"):
        open_replay(saved, seed=9)
    with pytest.raises(GeosimError, match="not a geosim results directory"):
        open_replay(tmp_path)
    one = open_replay(saved / "runs" / "fair" / "seed-1")   # a run directory: one side
    assert one.labels == ["fair"] and one.paired == []
    with pytest.raises(GeosimError, match="this is one run"):
        open_replay(saved / "runs" / "fair" / "seed-1", ["fair"])


# ---------------------------------------------------------------------------- figures
def test_figures_draw_every_side_with_a_fixed_set_of_artists(finished):
    labels = finished.labels
    maps = [LoadMap(finished.layout, label, (0, 0, 0)) for label in labels]
    plots = CompareSeries(labels)
    images = [m.draw(finished.map_frame(k)) for k, m in enumerate(maps)]
    chart = plots.draw([finished.series(k) for k in range(3)],
                       [finished.paired_series(k) for k in (1, 2)])
    assert all(image[:3] == JPEG for image in [*images, chart])
    assert len(plots.axes) == 5 and len(plots.bands) == 2
    assert [len(ax.lines) for ax in plots.axes[:4]] == [3, 3, 3, 3]
    lo, hi = plots.axes[-1].get_ylim()
    assert lo == -hi and hi > 0


# ---------------------------------------------------------------------------- the page
def _images(rc) -> list[bytes]:
    return [bytes(w.value) for w in rc.find(ipywidgets.Image).widgets]


def _status(rc) -> list[str]:
    return [w.children[0] for w in rc.find(v.Html, class_="geosim-status-line").widgets]


def test_live_page_steps_every_side_together():
    config = compare_config(QUICK, "fair,pingan", 2, ["workload.n_jobs=40"])
    assert config.compare == ["fair", "pingan"] and config.side_by_side
    page = make_compare_page(DashboardConfig.from_json(config.to_json()))
    _box, rc = solara.render(solara.AppLayout(children=[page()]), handle_error=False)
    before = _images(rc)
    assert len(before) == 3   # two maps and the plots
    lines = _status(rc)
    assert lines[0].startswith("fair vs pingan · seed 2 · quickstart.toml") and \
        lines[0].endswith(" · paused")
    assert lines[1] == "simulated time 0 s · step 0"
    assert lines[2].startswith("fair: at 0 s · jobs arrived 0 / 40")
    for _ in range(30):
        rc.find(v.Btn, children=["Step"]).widget.click()
    after = _images(rc)
    assert all(a != b for a, b in zip(after, before, strict=True))
    assert _status(rc)[1].startswith("simulated time ") and " · step 30" in _status(rc)[1]
    seed = rc.find(v.TextField, label="seed (at Reset)").widget
    seed.v_model = "5"
    seed.fire_event("keyup.enter", {})
    rc.find(v.Btn, children=["Reset"]).widget.click()
    assert " · seed 5 · " in _status(rc)[0] and _status(rc)[1] == "simulated time 0 s · step 0"


def test_replay_page_scrubs_through_time(saved):
    config = compare_config(str(saved), None)
    page = make_compare_page(config)
    _box, rc = solara.render(solara.AppLayout(children=[page()]), handle_error=False)
    first = _images(rc)
    assert len(first) == 4 and _status(rc)[0].startswith(f"replay of {config.replay} · seed 1")
    assert _status(rc)[1].startswith("simulated time 0 s of ")
    slider = rc.find(v.Slider, label="time (s)").widget
    slider.v_model = 900.0
    assert _status(rc)[1].startswith("simulated time 900 s of ")
    later = _images(rc)
    assert all(a != b for a, b in zip(later, first, strict=True))
    assert not rc.find(v.Btn, children=["Step"]).widgets   # nothing runs


# ---------------------------------------------------------------------------- the CLI
def test_cli_refuses_bad_comparisons_with_one_line(capsys, saved, tmp_path):
    cases = [
        ([QUICK, "--compare", "fair"], "compares 2 to 4 schedulers (got 1)"),
        ([QUICK, "--compare", "fair,srpt,laps,fifo,pingan"], "compares 2 to 4 schedulers"),
        ([QUICK, "--compare", "fair,fair"], "a scheduler is named twice"),
        ([QUICK, "--compare", "fair,nope"], "unknown scheduler 'nope'"),
        ([QUICK, "--compare", "fair,pingan[epsilon=3]"], "epsilon"),
        ([QUICK, "--compare", "fair,srpt", "--scheduler", "fair"], "--scheduler"),
        ([str(saved), "--compare", "fair,nope"], "no scheduler 'nope'"),
        ([str(saved), "--set", "workload.n_jobs=3"], "takes no overrides"),
        ([str(tmp_path)], "not a geosim results directory"),
    ]
    for argv, message in cases:
        assert main(["dashboard", *argv]) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("geosim: error:") and message in err, (argv, err)
        assert len(err.splitlines()) == 1


def test_replay_needs_every_cluster_and_link_at_every_sample(saved, tmp_path):
    """A run table with a cluster missing at a sample is refused, not misdrawn."""
    import shutil

    copy = tmp_path / "cut"
    shutil.copytree(saved, copy)
    table = copy / "runs" / "srpt" / "seed-1" / "clusters.parquet"
    pd.read_parquet(table).iloc[1:].to_parquet(table)
    with pytest.raises(GeosimError, match="every cluster at every sample"):
        open_replay(copy)
    links = copy / "runs" / "pingan" / "seed-1" / "links.parquet"
    pd.read_parquet(links).iloc[:-1].to_parquet(links)
    with pytest.raises(GeosimError, match="every link at every sample"):
        open_replay(copy, ["pingan", "fair"])
