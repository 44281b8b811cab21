"""The comparison dashboard page: schedulers side by side, run live or replayed.

:func:`make_compare_page` returns the page of ``geosim dashboard SCENARIO --compare
A,B,...`` (a :class:`~viz.compare_data.LiveComparison`) and of ``geosim dashboard
RESULTS_DIR`` (a :class:`~viz.compare_data.Replay` of saved runs). It is laid out as the
single-run page: the controls in the sidebar, the views in the main area.

- Live: *Reset* builds the comparison again (with the seed and load controls), *Step*
  advances every side by Render Interval time slots in lockstep, *▶* / *❚❚* play and
  pause.
- Replay: the *time* slider scrubs through the sampled times; *▶* / *❚❚* move it
  forward by Render Interval samples every Play Interval.

The views are the status lines (one per side, then the paired changes), one
:class:`~viz.dashboard_draw.LoadMap` per side and the shared
:class:`~viz.compare_draw.CompareSeries`.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import solara

from geosim.errors import GeosimError
from geosim.experiment.stats import verdict
from viz.compare_data import LiveComparison, Replay, open_replay
from viz.compare_draw import CompareSeries
from viz.dashboard import DashboardConfig
from viz.dashboard_draw import LoadMap
from viz.dashboard_ui import LOADS, PLAY_INTERVAL, RENDER_INTERVAL, StatusLines, _choices
from viz.palette import scheduler_styles

Source = LiveComparison | Replay


@dataclass(frozen=True)
class Board:
    """The page's comparison, or why it cannot be shown.

    Attributes:
        source: The live comparison or the replay, or ``None``.
        error: The one-line reason, or ``None``.
        lock: Held while the live comparison advances and while a view reads it.
    """

    source: Source | None
    error: str | None = None
    lock: Any = field(default_factory=threading.RLock, compare=False)

    @classmethod
    def build(cls, config: DashboardConfig, seed: Any = None, load: float | None = None
              ) -> Board:
        """The comparison of ``config`` (live, with ``seed`` and ``load`` if given)."""
        try:
            if config.replay:
                return cls(open_replay(config.replay, config.compare, config.replay_seed))
            return cls(LiveComparison(config.compare, config.scenario,
                                      config.seed if seed is None else seed,
                                      config.load if load is None else load,
                                      tuple(map(tuple, config.overrides))))
        except GeosimError as exc:
            return cls(None, str(exc))


def _flow(value: float) -> str:
    return "–" if not math.isfinite(value) else f"{value:,.1f} s"


def status_lines(board: Board, config: DashboardConfig, now: float, playing: bool
                 ) -> list[str]:
    """The status lines: the comparison, one line per side, one per paired change.

    Args:
        board: The page's comparison.
        config: The dashboard's configuration.
        now: The time shown (replay: the slider's; live: ignored).
        playing: Whether the play loop runs.
    """
    src = board.source
    if src is None:
        return ["no comparison: change the controls and press Reset"]
    live = isinstance(src, LiveComparison)
    t = src.time if live else now
    ended = not src.running if live else now >= src.end_time - 1e-9
    mode = "finished" if ended else "playing" if playing else "paused"
    if live:
        head = (f"{' vs '.join(src.labels)} · seed {src.models[0].seed} · "
                f"{Path(config.scenario).name} · λ = "
                f"{src.models[0].config['workload']['arrival_rate']:.3g}/s · {mode}")
        clock = f"simulated time {t:,.0f} s · step {src.steps:,}"
    else:
        more = f" · {len(src.labels)} of {src.of} schedulers (--compare chooses)" \
            if src.of > len(src.labels) else ""
        head = f"replay of {config.replay} · seed {src.runs[0].result.meta.get('seed')}" \
               f"{more} · {mode}"
        clock = f"simulated time {t:,.0f} s of {src.end_time:,.0f} s"
    lines = [head, clock]
    for k, label in enumerate(src.labels):
        s = src.status(k, None if live else t)
        lines.append(f"{label}: at {s['time']:,.0f} s · jobs arrived {s['arrived']} / "
                     f"{src.n_jobs} · alive {s['alive']} · done {s['done']} · mean flowtime "
                     f"{_flow(s['mean_flowtime'])} · busy slots {s['busy']:.1f}% · WAN "
                     f"{s['wan']:,.1f} MB/s")
    for k, label in enumerate(src.labels[1:], start=1):
        p = src.paired_series(k, None if live else t)
        if not p.time.size:
            continue
        text = verdict(label, src.labels[0], p.change[-1], p.half[-1])
        jobs = int(p.jobs[-1])
        lines.append(f"{text} · over the {jobs} jobs completed under all" if jobs else text)
    return lines


@solara.component
def CompareViews(board: Board, config: DashboardConfig, now: float, playing: bool,
                 tick: int):
    """Status lines above the maps (two per row) beside the shared plots."""
    if board.source is None:
        StatusLines(status_lines(board, config, now, playing))
        solara.Error(f"cannot show this comparison: {board.error}", classes=["geosim-error"])
    else:
        SideBySide(board, config, now, playing, tick)


@solara.component
def SideBySide(board: Board, config: DashboardConfig, now: float, playing: bool, tick: int):
    """The views of a comparison that can be shown (see :func:`CompareViews`)."""
    src = board.source
    live = isinstance(src, LiveComparison)
    styles = scheduler_styles(src.labels)

    def make_series() -> CompareSeries:
        if live:
            return CompareSeries(src.labels)
        n = len(src.labels)
        return CompareSeries(src.labels, ([src.series(k) for k in range(n)],
                                          [src.paired_series(k) for k in range(1, n)]))

    maps = solara.use_memo(lambda: [LoadMap(src.layout, label, styles[label].color)
                                    for label in src.labels], [src])
    plots = solara.use_memo(make_series, [src])
    at = None if live else now

    def images() -> tuple[list[bytes], bytes, list[str]]:
        with board.lock:
            frames = [src.map_frame(k, at) for k in range(len(src.labels))]
            series = [src.series(k, at) for k in range(len(src.labels))]
            paired = [src.paired_series(k, at) for k in range(1, len(src.labels))]
            lines = status_lines(board, config, now, playing)
        return ([m.draw(f) for m, f in zip(maps, frames, strict=True)],
                plots.draw(series, paired), lines)

    pictures, chart, lines = solara.use_memo(images, [src, tick, now, playing])
    with solara.Column(classes=["geosim-dashboard"], gap="0px"):
        StatusLines(lines)
        with solara.Columns([3, 2], gutters_dense=True):
            with solara.Column(gap="0px"):
                for row in range(0, len(pictures), 2):
                    with solara.Columns([1, 1], gutters_dense=True):
                        for image in pictures[row:row + 2]:
                            solara.Image(image, width="100%", format="jpeg",
                                         classes=["geosim-load-map"])
            solara.Image(chart, width="100%", format="jpeg", classes=["geosim-compare-plots"])


@solara.component
def LiveControls(board: solara.Reactive[Board], config: DashboardConfig,
                 playing: solara.Reactive[bool], tick: solara.Reactive[int]):
    """Reset (with the seed and load controls), ▶ / ❚❚, Step and the intervals."""
    play_interval = solara.use_reactive(PLAY_INTERVAL)
    render_interval = solara.use_reactive(RENDER_INTERVAL)
    seed = solara.use_reactive(str(config.seed))
    load = solara.use_reactive(config.load)
    error = solara.use_reactive(None)
    current = board.value
    src = current.source

    def advance() -> None:
        if isinstance(src, LiveComparison) and src.running:
            with current.lock:
                src.advance(render_interval.value)
        tick.value += 1

    def play(cancel: threading.Event) -> None:
        if not playing.value:
            return
        try:
            while not cancel.wait(play_interval.value / 1000):
                advance()
                if src is None or not src.running:
                    break
        except Exception as exc:   # shown on the page; the comparison stops playing
            error.value = f"error while playing: {exc}"
        if not cancel.is_set():
            playing.value = False

    solara.use_thread(play, dependencies=[playing.value, current], intrusive_cancel=False)

    def step_clicked() -> None:
        try:
            advance()
        except GeosimError as exc:
            error.value = f"the comparison stopped: {exc}"

    def reset() -> None:
        playing.value = False
        error.value = None
        board.value = Board.build(config, seed.value, load.value)
        tick.value += 1

    running = src is not None and src.running
    with solara.Row(justify="space-between"):
        solara.Button(label="Reset", color="primary", on_click=reset)
        solara.Button(label="❚❚" if playing.value else "▶", color="primary",
                      on_click=lambda: playing.set(not playing.value), disabled=not running)
        solara.Button(label="Step", color="primary", on_click=step_clicked,
                      disabled=playing.value or not running)
    solara.SliderInt(f"Play Interval: {play_interval.value} ms", value=play_interval,
                     min=10, max=500, step=10)
    slots = render_interval.value
    solara.SliderInt(f"Render Interval: {slots} slot{'s' if slots > 1 else ''}",
                     value=render_interval, min=1, max=100)
    solara.InputText("seed (at Reset)", value=seed)
    solara.Select("load (× the scenario's arrival rate, at Reset)", value=load,
                  values=_choices(LOADS, config.load))
    if error.value:
        solara.Error(error.value)


@solara.component
def ReplayControls(replay: Replay, now: solara.Reactive[float],
                   playing: solara.Reactive[bool]):
    """The time slider, ▶ / ❚❚ and the intervals of a replay."""
    play_interval = solara.use_reactive(PLAY_INTERVAL)
    render_interval = solara.use_reactive(RENDER_INTERVAL)
    times = replay.times

    def forward() -> None:
        i = int(times.searchsorted(now.value + 1e-9, side="right")) - 1
        now.value = float(times[min(max(i, 0) + render_interval.value, len(times) - 1)])

    def play(cancel: threading.Event) -> None:
        if not playing.value:
            return
        while not cancel.wait(play_interval.value / 1000):
            forward()
            if now.value >= replay.end_time:
                break
        if not cancel.is_set():
            playing.value = False

    solara.use_thread(play, dependencies=[playing.value, replay], intrusive_cancel=False)
    at_end = now.value >= replay.end_time - 1e-9
    with solara.Row(justify="space-between"):
        solara.Button(label="❚❚" if playing.value else "▶", color="primary",
                      on_click=lambda: playing.set(not playing.value),
                      disabled=at_end and not playing.value)
        solara.Button(label="Start", color="primary", on_click=lambda: now.set(float(times[0])),
                      disabled=playing.value)
    step = float(times[1] - times[0]) if len(times) > 1 else 1.0
    solara.SliderFloat("time (s)", value=now, min=float(times[0]), max=replay.end_time,
                       step=step)
    solara.SliderInt(f"Play Interval: {play_interval.value} ms", value=play_interval,
                     min=10, max=500, step=10)
    samples = render_interval.value
    solara.SliderInt(f"Render Interval: {samples} sample{'s' if samples > 1 else ''}",
                     value=render_interval, min=1, max=100)


def make_compare_page(config: DashboardConfig):
    """The comparison page for ``config``; each browser session gets its own comparison.

    Returns:
        A Solara component taking no arguments (the app's ``Page``).
    """
    @solara.component
    def Page():
        first = solara.use_memo(lambda: Board.build(config), [])
        board = solara.use_reactive(first)
        playing = solara.use_reactive(False)
        tick = solara.use_reactive(0)
        src = board.value.source
        now = solara.use_reactive(float(src.times[0]) if isinstance(src, Replay) else 0.0)
        with solara.AppBar():
            solara.AppBarTitle("geosim dashboard: comparison" if not config.replay
                               else "geosim dashboard: replay")
        with solara.Sidebar(), solara.Column():
            with solara.Card("Controls"):
                if isinstance(src, Replay):
                    ReplayControls(src, now, playing)
                else:
                    LiveControls(board, config, playing, tick)
        CompareViews(board.value, config, now.value, playing.value, tick.value)

    return Page
