"""The live dashboard: its model, its views without a browser, and the page in Chromium."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("solara", reason="the dashboard needs the viz extra")

import ipyvuetify as v  # noqa: E402
import ipywidgets  # noqa: E402
import solara  # noqa: E402

from geosim import state  # noqa: E402
from geosim.cli import main  # noqa: E402
from geosim.model import GeoModel  # noqa: E402
from geosim.results import CLUSTER_STATES  # noqa: E402
from viz.dashboard import DashboardConfig, build_config  # noqa: E402
from viz.dashboard_draw import LoadMap, TimeSeries, log_ceil, log_floor, nice_ceil  # noqa: E402
from viz.dashboard_run import Run, build_model, cluster_snapshot, model_frame  # noqa: E402
from viz.dashboard_ui import make_page, run_state, status_lines  # noqa: E402
from viz.data import layout_of  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
QUICK = str(ROOT / "scenarios" / "quickstart.toml")
SMALL = ["workload.n_jobs=40"]
JPEG = b"\xff\xd8\xff"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def small_model(**kw) -> GeoModel:
    return build_model(scenario_file=QUICK, overrides=(("workload.n_jobs", 40),), **kw)


def small_run(**kw) -> Run:
    return Run.build(scenario_file=QUICK, overrides=(("workload.n_jobs", 40),), **kw)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------- the model
def test_model_records_each_step_and_reads_cluster_states():
    model = small_model(scheduler="fair", seed=2)
    world = model.world
    assert isinstance(model, GeoModel)
    for _ in range(60):
        model.step()
    h = model.datacollector.model_vars
    assert h.n == 60 and np.all(np.diff(h["time"]) > 0)
    assert h["alive_jobs"].max() > 0 and h["busy_slots"].max() > 0
    assert np.all(h["busy_slots"] <= world.n_slots)
    assert h["busy_slots"][-1] == pytest.approx(state.busy_slots(model.engine).sum())
    snap = cluster_snapshot(model)
    assert snap.state.shape == (world.n_clusters,)
    assert sum(snap.counts.values()) == world.n_clusters and set(snap.counts) == set(
        CLUSTER_STATES)
    unreachable = CLUSTER_STATES.index("unreachable")
    assert np.array_equal(snap.state == unreachable, ~model.engine.reachable)
    assert np.all(snap.busy <= snap.slots + 1e-9)


def test_model_runs_to_the_end_and_stops():
    model = small_model(scheduler="srpt", seed=1, load=2.0)
    assert model.config["workload"]["arrival_rate"] == pytest.approx(0.1)
    while model.running:
        model.step()
    done_at, flow = state.finished_flowtimes(model.engine)
    assert len(flow) == 40 and np.all(flow > 0) and model.done
    assert model.datacollector.model_vars["mean_flowtime"][-1] == pytest.approx(flow.mean())


def test_epsilon_and_beta_reach_the_schedulers_that_take_them():
    assert small_model(scheduler="pingan", epsilon=0.3).policy.epsilon == 0.3
    assert small_model(scheduler="laps+r", beta=0.35).policy.beta == 0.35
    assert small_model(scheduler="fair", epsilon=0.3).policy.get_params() == {
        "multitasking": False}
    # the scenario's scheduler.defaults apply, under the controls (the one rule of
    # geosim.schedulers.build)
    defaults = (("workload.n_jobs", 40),
                ("scheduler.defaults", {"pingan": {"candidates": 3, "epsilon": 0.9}}))
    model = build_model(scenario_file=QUICK, scheduler="pingan", epsilon=0.4,
                        overrides=defaults)
    assert model.policy.get_params()["candidates"] == 3 and model.policy.epsilon == 0.4


def test_a_bad_choice_gives_no_model_and_the_message():
    run = Run.build(scenario_file="missing.toml")
    assert run.model is None and not run.running
    assert run.error == "missing.toml: scenario file not found"
    bad = small_run(scheduler="pingan", epsilon=1.5)
    assert "epsilon" in bad.error and not bad.running and bad.model is None
    assert small_model(seed=" 12 ").seed == 12
    assert small_run(seed="x").error == "seed must be a whole number >= 0 (got 'x')"
    good = small_run(scheduler="fair")
    assert good.error is None and good.running and isinstance(good.model, GeoModel)


def test_status_counts_simulated_time_and_steps_and_says_paused():
    model = small_model(scheduler="fair", seed=2)
    first, second = status_lines(model)[:2]
    assert first.endswith(" · paused") and run_state(model, playing=False) == "paused"
    assert second.startswith("simulated time 0 s · step 0 · jobs arrived 0 / 40")
    for _ in range(25):
        model.step()
    now = model.view.time
    assert now > 25 and now == model.datacollector.model_vars["time"][-1]  # the plots' last
    assert model.steps_run == 25
    assert status_lines(model, playing=True)[0].endswith(" · playing")
    assert status_lines(model, playing=False)[0].endswith(" · paused")
    assert status_lines(model)[1].startswith(f"simulated time {now:,.0f} s · step 25 · ")
    while model.running:
        model.step()
    taken, end = model.steps_run, model.view.time
    model.step()   # past the end: Mesa counts the call, the run does not move
    assert model.steps_run == taken and model.steps == taken + 1 and model.view.time == end
    assert status_lines(model, playing=True)[0].endswith(" · finished")
    assert f" · step {taken:,} · jobs arrived 40 / 40 " in status_lines(model)[1]


# ---------------------------------------------------------------------------- the figures
def test_figures_keep_a_fixed_set_of_artists_and_change_with_the_run():
    model = small_model(scheduler="fair", seed=2)
    cmap, plots = LoadMap(layout_of(model.world), "fair", (0, 0, 0)), TimeSeries(model)
    first = cmap.draw(model_frame(model)), plots.frame(model)
    artists = (len(cmap.axes.collections), len(cmap.axes.lines),
               [len(ax.lines) + len(ax.collections) for ax in plots.axes])
    loads = []
    for _ in range(80):
        model.step()
        frame = model_frame(model)
        later = cmap.draw(frame), plots.frame(model)
        loads.append(frame.link_load.max())
    assert artists == (3, 0, [1, 1, 2])   # links + clusters + busy; one series per panel
    assert (len(cmap.axes.collections), len(cmap.axes.lines),
            [len(ax.lines) + len(ax.collections) for ax in plots.axes]) == artists
    assert later[0] != first[0] and later[1] != first[1]
    assert later[0][:3] == JPEG
    assert plots.backgrounds < plots.frames and cmap.backgrounds == 1   # blitted
    sizes = cmap.busy.get_sizes()
    assert sizes.max() > 0 and np.all(sizes <= cmap.area + 1e-9)
    # the links are drawn by load: a loaded link is thicker than an idle one
    assert max(loads) > 0
    widths = cmap.links.get_linewidths()
    assert len(set(np.round(widths, 6))) > 1


def test_plots_legend_sits_between_panels_not_over_the_points():
    model = small_model(scheduler="fair", seed=2)
    plots = TimeSeries(model)
    for _ in range(200):
        model.step()
    plots.frame(model)
    _alive, util, flow = plots.axes
    box = flow.get_legend().get_window_extent()
    assert box.y0 >= flow.get_window_extent().y1 - 1      # above the flowtime panel
    assert box.y1 <= util.get_window_extent().y0 + 1      # below the panel above it
    assert len(state.finished_flowtimes(model.engine)[1]) > 0


def test_axis_limits_grow_to_round_values():
    assert [nice_ceil(x) for x in (0.4, 1, 1.2, 1.6, 2.5, 4, 6, 8, 2400)] == [
        0.5, 1, 1.5, 2, 3, 5, 7.5, 10, 3000]
    assert [log_ceil(x) for x in (2, 3, 4, 1500, 3001)] == [3, 3, 10, 3000, 10_000]
    assert [log_floor(x) for x in (2, 3, 4, 1500)] == [1, 3, 3, 1000]


# ---------------------------------------------------------------------------- the CLI
def test_cli_rejects_bad_input_with_one_line(capsys):
    cases = [
        (["dashboard", "missing.toml"], "missing.toml: scenario file not found"),
        (["dashboard", QUICK, "--scheduler", "nope"], "unknown scheduler 'nope'"),
        (["dashboard", QUICK, "--scheduler", "pingan[epsilon=2]"], "epsilon"),
        (["dashboard", QUICK, "--set", "workload.arrival_rate=-1"], "arrival_rate"),
        (["dashboard", QUICK, "--port", "70000"], "--port must be in 1..65535"),
    ]
    for argv, message in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("geosim: error:") and message in err
        assert len(err.splitlines()) == 1


def test_cli_rejects_a_port_in_use(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["dashboard", QUICK, "--port", str(port), "--set", SMALL[0]]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"geosim: error: port {port} on 127.0.0.1 is in use; choose another with --port"


def test_config_carries_the_command_line_to_the_server():
    config = build_config(QUICK, "pingan[epsilon=0.25,candidates=4]", 7, SMALL)
    again = DashboardConfig.from_json(config.to_json())
    assert again == config
    assert (again.scheduler, again.seed, again.epsilon) == ("pingan", 7, 0.25)
    assert again.scenario in again.scenarios and len(again.scenarios) >= 5
    assert Path(again.scenario).resolve() == Path(QUICK)
    model = build_model(**again.model_kwargs())
    assert model.policy.get_params()["candidates"] == 4
    assert model.policy.epsilon == 0.25 and model.workload.n_jobs == 40


# ---------------------------------------------------------------------------- the page, no browser
def _images(rc) -> dict[str, bytes]:
    """The dashboard's images by class (other images, such as Mesa's plots, left out)."""
    return {w._dom_classes[-1]: bytes(w.value) for w in rc.find(ipywidgets.Image).widgets
            if w._dom_classes and w._dom_classes[-1].startswith("geosim-")}


def _status(rc) -> list[str]:
    return [w.children[0] for w in rc.find(v.Html, class_="geosim-status-line").widgets]


def test_page_shows_the_views_and_they_follow_the_model():
    page = make_page(build_config(QUICK, "fair", 2, SMALL))
    _box, rc = solara.render(solara.AppLayout(children=[page()]), handle_error=False)
    before = _images(rc)
    assert set(before) == {"geosim-cluster-map", "geosim-plots-image"}
    assert all(image[:3] == JPEG for image in before.values())
    assert _status(rc)[0].endswith(" · paused")
    assert _status(rc)[1].startswith("simulated time 0 s · step 0 · ")
    step = rc.find(v.Btn, children=["Step"]).widget
    for _ in range(20):
        step.click()
    after = _images(rc)
    assert all(after[k] != before[k] for k in before)
    assert _status(rc)[0].endswith(" · paused")
    assert not _status(rc)[1].startswith("simulated time 0 s")
    assert " · step 20 · " in _status(rc)[1]
    assert _status(rc)[2].startswith("clusters ") and "last frame map" in _status(rc)[3]
    # there is one step counter, in the status lines
    assert not [w for w in rc.find(v.Html).widgets
                if str(w.children[0] if w.children else "").startswith("Step:")]

    # ▶ says playing (and Step is off), ❚❚ says paused; the interval is long enough that
    # no frame comes in between
    interval = next(w for w in rc.find(v.Slider).widgets if w.label.startswith("Play"))
    interval.v_model = 500
    rc.find(v.Btn, children=["▶"]).widget.click()
    assert _status(rc)[0].endswith(" · playing")
    assert rc.find(v.Btn, children=["Step"]).widget.disabled
    rc.find(v.Btn, children=["❚❚"]).widget.click()
    assert _status(rc)[0].endswith(" · paused")
    assert not rc.find(v.Btn, children=["Step"]).widget.disabled

    # a changed control applies at Reset: a new run with the chosen scheduler and ε
    rc.find(v.Select, label="scheduler").widget.v_model = "pingan"
    (eps,) = [w for w in rc.find(v.Select).widgets if w.label.startswith("ε")]
    eps.v_model = 0.3
    rc.find(v.Btn, children=["Reset"]).widget.click()
    assert _status(rc)[0].startswith("pingan[epsilon=0.3] · seed 2")
    assert _status(rc)[1].startswith("simulated time 0 s · step 0 · ")
    step.click()
    assert " · step 1 · " in _status(rc)[1]

    # a choice that cannot run shows why, and the next good choice runs again
    seed = rc.find(v.TextField, label="seed").widget
    seed.v_model = "two"
    seed.fire_event("keyup.enter", {})   # a text field reports its value on Enter
    rc.find(v.Btn, children=["Reset"]).widget.click()
    assert _status(rc) == ["no run: change the controls and press Reset"]
    assert not rc.find(ipywidgets.Image).widgets
    alert = rc.find(v.Alert).widget
    assert "seed must be a whole number >= 0 (got 'two')" in str(alert.children)
    seed.v_model = "3"
    seed.fire_event("keyup.enter", {})
    rc.find(v.Btn, children=["Reset"]).widget.click()
    assert " · seed 3 · " in _status(rc)[0] and len(_images(rc)) == 2


# Mesa 3.3's own SolaraViz trips Solara's hook check (its code, not the dashboard's)
@pytest.mark.filterwarnings("ignore:.*use_state. found despite early return:UserWarning")
def test_mesa_solara_viz_drives_the_geo_model(monkeypatch):
    text = (ROOT / "README.md").read_text().split("**In Mesa's own SolaraViz.**", 1)[1]
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)   # the README's app.py
    page = namespace["page"]
    _box, rc = solara.render(solara.AppLayout(children=[page]), handle_error=False)
    before = _images(rc)
    assert set(before) == {"geosim-cluster-map", "geosim-plots-image"}
    assert _status(rc)[0].startswith("pingan[epsilon=0.6] · seed 2")
    for _ in range(5):
        rc.find(v.Btn, children=["Step"]).widget.click()
    assert " · step 5 · " in _status(rc)[1]
    assert all(_images(rc)[k] != before[k] for k in before)
    # SolaraViz's Reset re-creates the model, a GeoModel, from the controls
    rc.find(v.Select, label="scheduler").widget.v_model = "srpt"
    rc.find(v.Btn, children=["Reset"]).widget.click()
    assert _status(rc)[0].startswith("srpt · seed 2")
    assert _status(rc)[1].startswith("simulated time 0 s · step 0 · ")


# ---------------------------------------------------------------------------- the page, in Chromium
def _browser_or_skip():
    required = os.environ.get("GEOSIM_REQUIRE_BROWSER") == "1"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if required:
            pytest.fail("GEOSIM_REQUIRE_BROWSER=1 but playwright is not installed")
        pytest.skip("playwright is not installed")
    if not os.access(CHROMIUM, os.X_OK):
        if required:
            pytest.fail(f"GEOSIM_REQUIRE_BROWSER=1 but {CHROMIUM} is missing "
                        "(apt-get install chromium)")
        pytest.skip(f"no browser: {CHROMIUM} is missing (apt-get install chromium; set "
                    "GEOSIM_REQUIRE_BROWSER=1 to make this a failure)")
    return sync_playwright


def _wait_until_served(proc: subprocess.Popen, url: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the dashboard exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    pytest.fail(f"the dashboard did not answer at {url} within {timeout:.0f} s")


@pytest.fixture
def playwright_chromium():
    """Playwright's ``sync_playwright``, or a skip (a failure with GEOSIM_REQUIRE_BROWSER=1)."""
    return _browser_or_skip()


@pytest.fixture
def dashboard_server(playwright_chromium, tmp_path):
    """``geosim dashboard`` on the small scenario, on a free port; always stopped."""
    with serving(tmp_path, QUICK, "--scheduler", "fair", "--seed", "2", "--set", SMALL[0]) as url:
        yield url


@pytest.fixture
def compare_server(playwright_chromium, tmp_path):
    """``geosim dashboard --compare`` of two schedulers on the small scenario."""
    with serving(tmp_path, QUICK, "--compare", "fair,pingan", "--seed", "2",
                 "--set", SMALL[0]) as url:
        yield url


@pytest.fixture
def replay_server(playwright_chromium, tmp_path):
    """``geosim dashboard RESULTS_DIR`` on a comparison saved by ``geosim compare``."""
    saved = tmp_path / "saved"
    assert main(["compare", QUICK, "--schedulers", "fair,pingan", "--reps", "1",
                 "--set", SMALL[0], "--out", str(saved)]) == 0
    with serving(tmp_path, str(saved)) as url:
        yield url


@contextlib.contextmanager
def serving(tmp_path: Path, *args: str):
    """``geosim dashboard ARGS`` on a free port; always stopped."""
    port = free_port()
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "geosim.cli", "dashboard", *args, "--port", str(port)],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}/"
        _wait_until_served(proc, url)
        yield url
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)   # what a service manager would send
            proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        left = _group_alive(proc.pid)
        if left or proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        log.close()
        # the command stopped its server on SIGTERM: nothing of it was left running
        assert not left and proc.returncode == 0


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _toggle(page, label: str, then: str) -> None:
    """Click the button ``label`` until it turns into ``then`` (a click can land while the
    button is being re-rendered)."""
    from playwright.sync_api import expect

    for _ in range(3):
        page.get_by_role("button", name=label).click()
        try:
            expect(page.get_by_role("button", name=then)).to_be_visible(timeout=3000)
            return
        except AssertionError:
            continue
    expect(page.get_by_role("button", name=then)).to_be_visible()


def test_dashboard_in_chromium_steps_and_plays(playwright_chromium, dashboard_server, tmp_path):
    in_chromium(playwright_chromium, tmp_path, lambda page, shots: _drive(page, shots,
                                                                          dashboard_server))


def test_comparison_in_chromium_steps_both_sides(playwright_chromium, compare_server, tmp_path):
    in_chromium(playwright_chromium, tmp_path,
                lambda page, shots: _drive_comparison(page, shots, compare_server))


def test_replay_in_chromium_plays_saved_runs(playwright_chromium, replay_server, tmp_path):
    in_chromium(playwright_chromium, tmp_path,
                lambda page, shots: _drive_replay(page, shots, replay_server))


def in_chromium(sync_playwright, tmp_path: Path, drive) -> None:
    """Open a page in Chromium that may reach only this machine, and ``drive(page, shots)``."""
    shots = Path(os.environ.get("GEOSIM_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            # the page must need nothing beyond the server on this machine
            outside: list[str] = []

            def local_only(route):
                url = route.request.url
                if url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:")):
                    route.continue_()
                else:
                    outside.append(url)
                    route.abort()

            page.route("**/*", local_only)
            console: list[str] = []
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
            try:
                drive(page, shots)
            except Exception:
                page.screenshot(path=shots / "dashboard-failure.png")
                (shots / "console.log").write_text("\n".join(console))
                raise
            assert outside == []
        finally:
            browser.close()


def _drive(page, shots: Path, url: str) -> None:
    """Load the page, step it, play it; check that the views change."""
    from playwright.sync_api import expect

    page.goto(url)
    cmap = page.locator("img.geosim-cluster-map")
    plots = page.locator("img.geosim-plots-image")
    state = page.locator(".geosim-status-line").nth(0)
    status = page.locator(".geosim-status-line").nth(1)
    expect(cmap).to_be_visible(timeout=60_000)
    expect(plots).to_be_visible()
    expect(status).to_have_text("simulated time 0 s · step 0 · jobs arrived 0 / 40 · "
                                "alive 0 · done 0 · mean flowtime –")
    expect(state).to_have_text(re.compile(r" · paused$"))
    page.screenshot(path=shots / "dashboard-start.png")
    map_before, plots_before = cmap.screenshot(), plots.screenshot()

    step = page.get_by_role("button", name="Step")
    for _ in range(4):
        shown = status.inner_text()
        step.click()
        expect(status).not_to_have_text(shown)
    page.wait_for_timeout(500)   # let the images of the last step arrive
    map_after, plots_after = cmap.screenshot(), plots.screenshot()
    assert map_after != map_before and plots_after != plots_before
    page.screenshot(path=shots / "dashboard-stepped.png")

    shown = status.inner_text()
    _toggle(page, "▶", "❚❚")   # play
    expect(state).to_have_text(re.compile(r" · playing$"))
    expect(status).not_to_have_text(shown, timeout=15_000)
    page.wait_for_timeout(1000)
    _toggle(page, "❚❚", "▶")   # pause
    expect(state).to_have_text(re.compile(r" · paused$"))
    page.wait_for_timeout(500)
    assert cmap.screenshot() != map_after
    page.screenshot(path=shots / "dashboard-played.png")


def _open_side_by_side(page, url: str):
    """Load the side-by-side page with two maps; its maps, plots, head and clock lines."""
    from playwright.sync_api import expect

    page.goto(url)
    maps = page.locator("img.geosim-load-map")
    plots = page.locator("img.geosim-compare-plots")
    head = page.locator(".geosim-status-line").nth(0)
    clock = page.locator(".geosim-status-line").nth(1)
    expect(plots).to_be_visible(timeout=60_000)
    expect(maps).to_have_count(2)
    return maps, plots, head, clock


def _play_and_pause(page, head, clock, shown) -> None:
    """▶ until the clock leaves ``shown`` (text or pattern), then ❚❚."""
    from playwright.sync_api import expect

    _toggle(page, "▶", "❚❚")
    expect(head).to_have_text(re.compile(r" · playing$"))
    expect(clock).not_to_have_text(shown, timeout=15_000)
    _toggle(page, "❚❚", "▶")
    expect(head).to_have_text(re.compile(r" · paused$"))


def _drive_comparison(page, shots: Path, url: str) -> None:
    """Load the comparison, step both sides together, play and pause."""
    from playwright.sync_api import expect

    maps, plots, head, clock = _open_side_by_side(page, url)
    expect(head).to_have_text(re.compile(r"^fair vs pingan · seed 2 · quickstart.toml .* paused$"))
    expect(clock).to_have_text("simulated time 0 s · step 0")
    before = [maps.nth(0).screenshot(), maps.nth(1).screenshot(), plots.screenshot()]
    step = page.get_by_role("button", name="Step")
    for _ in range(6):
        shown = clock.inner_text()
        step.click()
        expect(clock).not_to_have_text(shown)
    expect(clock).to_have_text(re.compile(r" · step 6$"))
    page.wait_for_timeout(500)
    after = [maps.nth(0).screenshot(), maps.nth(1).screenshot(), plots.screenshot()]
    assert all(a != b for a, b in zip(after, before, strict=True))
    lines = page.locator(".geosim-status-line")
    expect(lines.nth(2)).to_have_text(re.compile(r"^fair: at \d+ s · jobs arrived "))
    expect(lines.nth(3)).to_have_text(re.compile(r"^pingan: at \d+ s · jobs arrived "))
    shown = clock.inner_text()
    _play_and_pause(page, head, clock, shown)
    page.screenshot(path=shots / "comparison.png")


def _drive_replay(page, shots: Path, url: str) -> None:
    """Load the replay, play it forward, pause; nothing runs, so there is no Step."""
    from playwright.sync_api import expect

    maps, plots, head, clock = _open_side_by_side(page, url)
    expect(head).to_have_text(re.compile(r"^replay of .*saved · seed 1 · paused$"))
    expect(clock).to_have_text(re.compile(r"^simulated time 0 s of [0-9,]+ s$"))
    expect(page.get_by_role("button", name="Step")).to_have_count(0)
    before = plots.screenshot()
    _play_and_pause(page, head, clock, re.compile(r"^simulated time 0 s "))
    page.wait_for_timeout(500)
    assert plots.screenshot() != before
    page.screenshot(path=shots / "replay.png")
