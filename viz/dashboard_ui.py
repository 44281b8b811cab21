"""The dashboard page: the run's controls beside its views.

:func:`make_page` returns the page component, laid out as Mesa's SolaraViz lays out a
model: an app bar; a sidebar with the *Controls* card (Reset, ▶ / ❚❚, Step, and the
Play Interval and Render Interval sliders) and the *Model Parameters* card (scenario,
scheduler, seed, ε, β, load: :func:`model_params`); the views in the main area. A
changed parameter takes effect at the next Reset. The page runs the play loop itself
(:func:`RunControls`) rather than through SolaraViz's controller, whose play state no
other component can read: so the status line says ``playing``, ``paused`` or
``finished`` truthfully, and it counts simulated time and steps itself, with no second
step counter beside it. The views are Solara components of the model that re-render
after every frame:

- :func:`ClusterView`: the clusters and WAN links on the topology, by state and load
  (:class:`~viz.dashboard_draw.LoadMap`);
- :func:`PlotsView`: alive jobs, busy slots and flowtimes (:class:`~viz.dashboard_draw.TimeSeries`);
- :func:`StatusView`: the run's headline numbers, whether it plays, and the last step's
  and frame's wall time.

The page holds a :class:`~viz.dashboard_run.Run`: a :class:`~geosim.model.GeoModel`
built from the controls by :func:`~viz.dashboard_run.build_model`, or the reason the
controls' choice cannot run. The views take the GeoModel itself, so Mesa's SolaraViz can
show them beside its own components (:func:`solara_viz_components`).
"""

from __future__ import annotations

import math
import threading
from typing import Any

import solara

from geosim.errors import GeosimError
from geosim.mesa_scenario import SCENARIO_PARAM
from geosim.model import GeoModel
from geosim.schedulers import registered
from geosim.schedulers.spec import Spec
from viz.dashboard import DashboardConfig
from viz.dashboard_draw import LoadMap, TimeSeries
from viz.dashboard_run import (
    CONTROL_PARAMS,
    Run,
    model_frame,
    scheduler_defaults,
    schedulers_taking,
    status,
    step,
    watch,
)
from viz.data import layout_of
from viz.palette import scheduler_colors

#: Play Interval (ms) between frames while playing, at start; the Render Interval sets
#: how many steps each frame (and each Step click) advances.
PLAY_INTERVAL = 100
RENDER_INTERVAL = 1

#: Bumped after every frame (a Step click, or a frame while playing): the views
#: re-render when it changes. Solara keeps one value per browser session.
frame_counter = solara.reactive(0)


#: Values offered by the ε and β controls, and by the load control.
FRACTIONS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
LOADS = [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0]


def _choices(values: list[float], current: float) -> list[float]:
    return sorted(set(values) | {float(current)})


def model_params(config: DashboardConfig) -> dict[str, Any]:
    """The model parameters: one control per keyword of :func:`~viz.dashboard_run.build_model`.

    In the format of Mesa's ``model_params`` (a dict with ``type``, ``label``, ``value``
    per control; other values are fixed). Numbers are offered in drop-down lists (and
    the seed in a text field) rather than sliders, whose value is not shown.
    """
    eps_users = ", ".join(schedulers_taking("epsilon")) or "none"
    beta_users = ", ".join(schedulers_taking("beta")) or "none"
    return {
        "scenario_file": {"type": "Select", "label": "scenario", "value": config.scenario,
                          "values": config.scenarios or [config.scenario]},
        "scheduler": {"type": "Select", "label": "scheduler", "value": config.scheduler,
                      "values": list(registered())},
        "seed": {"type": "InputText", "label": "seed", "value": str(config.seed)},
        "epsilon": {"type": "Select", "label": f"ε ({eps_users})", "value": config.epsilon,
                    "values": _choices(FRACTIONS, config.epsilon)},
        "beta": {"type": "Select", "label": f"β ({beta_users})", "value": config.beta,
                 "values": _choices(FRACTIONS, config.beta)},
        "load": {"type": "Select", "label": "load (× the scenario's arrival rate)",
                 "value": config.load, "values": _choices(LOADS, config.load)},
        "overrides": tuple(map(tuple, config.overrides)),
    }


def geo_model_params(config: DashboardConfig) -> dict[str, Any]:
    """Model parameters of :class:`~geosim.model.GeoModel` for Mesa's SolaraViz.

    The scenario file, the scheduler (a registered name, or a spec with parameters) and
    the seed: GeoModel's own keywords, so SolaraViz's Reset re-creates the model from
    them. The scenario file's parameter is :data:`geosim.mesa_scenario.SCENARIO_PARAM`
    (``scenario`` with Mesa 3.3, ``scenario_file`` from Mesa 3.4 on). The ε, β and load
    controls and the ``--set`` overrides are the dashboard page's
    (:func:`model_params`); here a scheduler's parameters go in its spec.
    """
    names = list(registered())
    return {
        SCENARIO_PARAM: {"type": "Select", "label": "scenario", "value": config.scenario,
                     "values": config.scenarios or [config.scenario]},
        "scheduler": {"type": "Select", "label": "scheduler", "value": config.scheduler,
                      "values": names if config.scheduler in names
                      else [config.scheduler, *names]},
        "seed": {"type": "InputText", "label": "seed", "value": str(config.seed)},
    }


def control_values(params: dict[str, Any]) -> dict[str, Any]:
    """The model's keyword arguments from :func:`model_params`: each control's value."""
    return {name: spec["value"] if _is_control(spec) else spec
            for name, spec in params.items()}


def _is_control(spec: Any) -> bool:
    return isinstance(spec, dict) and "type" in spec


def run_state(model: GeoModel | None, playing: bool) -> str:
    """``"finished"``, ``"playing"`` or ``"paused"``: what the run is doing now."""
    if model is None or model.done:
        return "finished"
    return "playing" if playing else "paused"


def advance(model: GeoModel | None, steps: int) -> None:
    """Step ``model`` up to ``steps`` times (fewer if it ends), then show the new frame."""
    for _ in range(max(int(steps), 1)):
        if model is None or not model.running:
            break
        step(model)
    frame_counter.value += 1


def _frame_key(model: GeoModel | None) -> list:
    return [model, model.steps if model is not None else 0]


@solara.component
def ClusterView(model: GeoModel | None, tick: int = 0, error: str | None = None):
    """The clusters and links on the topology: states, busy slots, WAN load.

    Args:
        model: The run's model, or ``None`` when the controls' choice cannot run.
        tick: The frame counter; a new value re-renders the view.
        error: Why there is no model.
    """
    def make_map() -> LoadMap | None:
        if model is None:
            return None
        label = model.policy.name
        return LoadMap(layout_of(model.world), label, scheduler_colors([label])[label],
                       size=(6.2, 5.8))

    def draw() -> bytes | None:
        if drawer is None:
            return None
        with watch(model).lock:
            frame = model_frame(model)
        return drawer.draw(frame)

    drawer = solara.use_memo(make_map, [model])
    png = solara.use_memo(draw, _frame_key(model))
    if png is None:
        with solara.Column(classes=["geosim-cluster-view"]):
            solara.Error(f"cannot run this choice: {error}", classes=["geosim-error"])
        return
    watch(model).frame_seconds["map"] = drawer.frame_seconds
    with solara.Column(classes=["geosim-cluster-view"], style={"padding": "4px"}):
        solara.Image(png, width="100%", format="jpeg", classes=["geosim-cluster-map"])


@solara.component
def PlotsView(model: GeoModel | None, tick: int = 0):
    """Alive jobs, busy slots and flowtimes over simulated time (``tick`` as above)."""
    drawer = solara.use_memo(lambda: TimeSeries(model) if model is not None else None, [model])
    png = solara.use_memo(lambda: drawer.frame(model) if drawer else None,
                          _frame_key(model))
    if png is None:
        solara.Column(classes=["geosim-plots"])
        return
    watch(model).frame_seconds["plots"] = drawer.frame_seconds
    with solara.Column(classes=["geosim-plots"], style={"padding": "4px"}):
        solara.Image(png, width="100%", format="jpeg", classes=["geosim-plots-image"])


def status_lines(model: GeoModel | None, playing: bool = False) -> list[str]:
    """The status card's lines: the run and its state, time and jobs, slots, timings.

    Args:
        model: The run's model (``None``: the controls' choice cannot run).
        playing: Whether the play loop runs (the ▶ button was pressed, not ❚❚).

    Returns:
        The first line ends with :func:`run_state`; the second gives the simulated time
        (s, as on the plots' time axis) and the number of steps taken (each a time slot,
        or a jump over a stretch with no alive job), then the jobs.
    """
    if model is None:
        return ["no run: change the controls and press Reset"]
    s = status(model)
    defaults = scheduler_defaults(s["scheduler"])
    shown = {k: v for k, v in s["params"].items()
             if k in CONTROL_PARAMS or k not in defaults or v != defaults[k]}
    label = Spec(s["scheduler"], shown).label
    flow = s["mean_flowtime"]
    timings = watch(model)
    frame = " + ".join(f"{k} {1e3 * v:.0f} ms" for k, v in timings.frame_seconds.items())
    c = s["clusters"]
    return [
        f"{label} · seed {s['seed']} · λ = {s['arrival_rate']:.3g}/s · "
        f"{s['scenario']} · {run_state(model, playing)}",
        f"simulated time {s['time']:,.0f} s · step {s['steps']:,} · jobs arrived "
        f"{s['arrived']} / {s['jobs']} · alive {s['alive']} · done {s['done']} · "
        "mean flowtime " + ("–" if math.isnan(flow) else f"{flow:,.1f} s"),
        f"clusters {c['available']} available, {c['degraded']} degraded, "
        f"{c['unreachable']} unreachable · busy slots {100 * s['utilisation']:.1f}% · "
        f"usable slots {100 * s['usable']:.0f}%",
        f"last step {1e3 * timings.step_seconds:.1f} ms · last frame {frame or '–'}",
    ]


@solara.component
def StatusView(model: GeoModel | None, playing: bool = False, tick: int = 0):
    """The run's headline numbers and timings (plain text: no Markdown renderer needed)."""
    if model is None:
        lines = status_lines(None, playing)
    else:
        with watch(model).lock:
            lines = status_lines(model, playing)
    StatusLines(lines)


@solara.component
def StatusLines(lines: list[str]):
    """Status lines as plain text, the first in bold (no Markdown renderer needed)."""
    with solara.Column(classes=["geosim-status"], gap="2px",
                       style={"padding": "8px 12px", "font-size": "14px"}):
        for i, line in enumerate(lines):
            solara.Text(line, style={"font-weight": "bold"} if i == 0 else None,
                        classes=["geosim-status-line"])


@solara.component
def DashboardViews(run: Run, playing: solara.Reactive[bool]):
    """The main area: the status lines above the cluster map and the plots, side by side.

    Only this component subscribes to :data:`frame_counter` and the play state, and
    hands them down, so a frame costs one render pass, not one per view.
    """
    tick = frame_counter.value
    with solara.Column(classes=["geosim-dashboard"], gap="0px"):
        StatusView(run.model, playing.value, tick)
        with solara.Columns([1, 1], gutters_dense=True):
            ClusterView(run.model, tick, run.error)
            PlotsView(run.model, tick)


def solara_viz_components() -> list:
    """The dashboard's views as components of Mesa's own SolaraViz page.

    ``SolaraViz(GeoModel(...), solara_viz_components(), model_params=...)`` shows the
    status lines, the cluster map and the plots of a GeoModel, with SolaraViz's
    controller stepping the model and its Reset re-creating it from the model
    parameters (:func:`geo_model_params`). Each view follows SolaraViz's update counter,
    so it re-renders after every step.
    """
    from mesa.visualization.utils import update_counter

    def follow(view):
        @solara.component
        def component(model: GeoModel):
            view(model, tick=update_counter.value)
        component.__name__ = view.__name__
        return component

    return [follow(StatusView), follow(ClusterView), follow(PlotsView)]


@solara.component
def RunControls(current: solara.Reactive[Run], playing: solara.Reactive[bool],
                values: solara.Reactive[dict[str, Any]]):
    """Reset, ▶ / ❚❚ and Step, the Play Interval and Render Interval, and the play loop.

    While ``playing`` is set, a thread advances the run by Render Interval steps every
    Play Interval, until ❚❚, Reset or the end of the run (which clears ``playing``).

    A step that fails (a run that stalls) stops the run and shows why.

    Args:
        current: The run (replaced on Reset).
        playing: Whether the play loop runs.
        values: The model parameters a Reset builds the next run from.
    """
    play_interval = solara.use_reactive(PLAY_INTERVAL)
    render_interval = solara.use_reactive(RENDER_INTERVAL)
    error = solara.use_reactive(None)
    run = current.value

    def play(cancel: threading.Event) -> None:
        if not playing.value:
            return
        try:
            while not cancel.wait(play_interval.value / 1000):
                advance(run.model, render_interval.value)
                if not run.running:
                    break
        except Exception as exc:   # shown on the page; the run stops
            error.value = f"error while playing: {exc}"
        if not cancel.is_set():
            playing.value = False

    solara.use_thread(play, dependencies=[playing.value, run], intrusive_cancel=False)

    def step_clicked() -> None:
        try:
            advance(run.model, render_interval.value)
        except GeosimError as exc:
            error.value = f"the run stopped: {exc}"

    def reset() -> None:
        playing.value = False
        error.value = None
        current.value = Run.build(**values.value)
        frame_counter.value += 1

    def toggle() -> None:
        playing.value = not playing.value

    with solara.Row(justify="space-between"):
        solara.Button(label="Reset", color="primary", on_click=reset)
        solara.Button(label="❚❚" if playing.value else "▶", color="primary",
                      on_click=toggle, disabled=not run.running)
        solara.Button(label="Step", color="primary", on_click=step_clicked,
                      disabled=playing.value or not run.running)
    solara.SliderInt(f"Play Interval: {play_interval.value} ms", value=play_interval,
                     min=10, max=500, step=10)
    steps = render_interval.value
    solara.SliderInt(f"Render Interval: {steps} step{'s' if steps > 1 else ''}",
                     value=render_interval, min=1, max=100)
    if error.value:
        solara.Error(error.value)


@solara.component
def ParameterControls(params: dict[str, Any], values: solara.Reactive[dict[str, Any]]):
    """One control per model parameter of :func:`model_params` (the others are fixed)."""
    for name, spec in params.items():
        if not _is_control(spec):
            continue
        def on_value(value: Any, name: str = name) -> None:
            values.set({**values.value, name: value})

        if spec["type"] == "Select":
            solara.Select(spec["label"], value=values.value[name], values=spec["values"],
                          on_value=on_value)
        else:
            solara.InputText(spec["label"], value=str(values.value[name]), on_value=on_value)


def make_page(config: DashboardConfig):
    """The dashboard page component for ``config``; each browser session gets its own run.

    Returns:
        A Solara component taking no arguments (the app's ``Page``).
    """
    params = model_params(config)

    @solara.component
    def Page():
        first = solara.use_memo(lambda: Run.build(**config.model_kwargs()), [])
        current = solara.use_reactive(first)
        playing = solara.use_reactive(False)
        values = solara.use_reactive(control_values(params))
        with solara.AppBar():
            solara.AppBarTitle("geosim dashboard")
        with solara.Sidebar(), solara.Column():
            with solara.Card("Controls"):
                RunControls(current, playing, values)
            with solara.Card("Model Parameters"):
                ParameterControls(params, values)
        DashboardViews(current.value, playing)

    return Page
