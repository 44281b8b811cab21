"""The dashboard page: Mesa's SolaraViz with geosim's views and controls.

:func:`make_page` returns the page component. SolaraViz supplies the step / play /
reset buttons and turns :func:`model_params` into the controls (scenario, scheduler,
seed, ε, β, load); a changed control takes effect at the next Reset. The views are
Solara components of the model that re-render after every step:

- :func:`ClusterView`: the clusters on the topology (:class:`~viz.dashboard_draw.ClusterMap`);
- :func:`PlotsView`: alive jobs, busy slots and flowtimes (:class:`~viz.dashboard_draw.TimeSeries`);
- :func:`StatusView`: the run's headline numbers and the last step's and frame's wall time.

Mesa 3.3 and 3.5 differ in SolaraViz's internals (``renderer``, the Mesa ``Scenario``
that 3.5 reads from ``model.scenario``, the ``Step:``/``Time:`` card). The page uses
only what both share: ``SolaraViz(model, components=[(component, page), ...],
model_params=..., name=..., play_interval=..., render_interval=...)``, components
that take the model as their one argument and subscribe to
``mesa.visualization.utils.update_counter``, and a model whose constructor takes only
keyword arguments named after the controls (see :mod:`viz.dashboard_model` for why it
wraps :class:`~geosim.model.GeoModel`).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import solara

with warnings.catch_warnings():
    # Importing Mesa 3.3's SolaraViz makes Solara warn about a hook after an early return
    # in Mesa's own ComponentsView (fixed in Mesa 3.5); nothing to act on here.
    warnings.filterwarnings("ignore", message=r".*ComponentsView: `use_state` found despite",
                            category=UserWarning)
    from mesa.visualization import SolaraViz
    from mesa.visualization.utils import update_counter

from geosim.schedulers import registered
from geosim.schedulers.spec import Spec
from viz.dashboard import DashboardConfig
from viz.dashboard_draw import ClusterMap, TimeSeries
from viz.dashboard_model import (
    CONTROL_PARAMS,
    DashboardModel,
    scheduler_defaults,
    schedulers_taking,
)

#: Play interval (ms) between frames while playing; the Render Interval slider of
#: SolaraViz sets how many steps each frame advances.
PLAY_INTERVAL = 100


#: Values offered by the ε and β controls, and by the load control.
FRACTIONS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
LOADS = [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0]


def _choices(values: list[float], current: float) -> list[float]:
    return sorted(set(values) | {float(current)})


def model_params(config: DashboardConfig) -> dict[str, Any]:
    """SolaraViz's ``model_params``: one control per keyword of the dashboard model.

    Numbers are offered in drop-down lists (and the seed in a text field) rather than
    sliders, because SolaraViz's sliders do not show their value.
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


def _frame_key(model: DashboardModel) -> list:
    return [model, model.history.n, model.time_now]


@solara.component
def ClusterView(model: DashboardModel, tick: int = 0):
    """The clusters on the topology, coloured by state, with their busy slots.

    Args:
        model: The dashboard model.
        tick: Mesa's update counter; a new value re-renders the view.
    """
    drawer = solara.use_memo(lambda: ClusterMap(model) if model.sim else None, [model])
    png = solara.use_memo(lambda: drawer.frame(model) if drawer else None,
                          _frame_key(model))
    if png is None:
        with solara.Column(classes=["geosim-cluster-view"]):
            solara.Error(f"cannot run this choice: {model.error}", classes=["geosim-error"])
        return
    model.frame_seconds["map"] = drawer.frame_seconds
    with solara.Column(classes=["geosim-cluster-view"], style={"padding": "4px"}):
        solara.Image(png, width="100%", format="jpeg", classes=["geosim-cluster-map"])


@solara.component
def PlotsView(model: DashboardModel, tick: int = 0):
    """Alive jobs, busy slots and flowtimes over simulated time (``tick`` as above)."""
    drawer = solara.use_memo(lambda: TimeSeries(model) if model.sim else None, [model])
    png = solara.use_memo(lambda: drawer.frame(model) if drawer else None,
                          _frame_key(model))
    if png is None:
        solara.Column(classes=["geosim-plots"])
        return
    model.frame_seconds["plots"] = drawer.frame_seconds
    with solara.Column(classes=["geosim-plots"], style={"padding": "4px"}):
        solara.Image(png, width="100%", format="jpeg", classes=["geosim-plots-image"])


def status_lines(model: DashboardModel) -> list[str]:
    """The status card's lines: the run, the jobs, the slots, the timings."""
    s = model.status()
    if "error" in s:
        return ["no run: change the controls and press Reset"]
    defaults = scheduler_defaults(s["scheduler"])
    shown = {k: v for k, v in s["params"].items()
             if k in CONTROL_PARAMS or k not in defaults or v != defaults[k]}
    label = Spec(s["scheduler"], shown).label
    flow = s["mean_flowtime"]
    frame = " + ".join(f"{k} {1e3 * v:.0f} ms" for k, v in model.frame_seconds.items())
    state = "finished" if s["finished"] else "running"
    c = s["clusters"]
    return [
        f"{label} · seed {model.seed_value} · λ = {s['arrival_rate']:.3g}/s · "
        f"{Path(model.scenario_file).name} · {state}",
        f"t = {s['time']:,.0f} s · jobs arrived {s['arrived']} / {s['jobs']} · "
        f"alive {s['alive']} · done {s['done']} · mean flowtime "
        + ("–" if math.isnan(flow) else f"{flow:,.1f} s"),
        f"clusters {c['available']} available, {c['degraded']} degraded, "
        f"{c['unreachable']} unreachable · busy slots {100 * s['utilisation']:.1f}% · "
        f"usable slots {100 * s['usable']:.0f}%",
        f"last step {1e3 * model.step_seconds:.1f} ms · last frame {frame or '–'}",
    ]


@solara.component
def StatusView(model: DashboardModel, tick: int = 0):
    """The run's headline numbers and timings (plain text: no Markdown renderer needed)."""
    with model.lock:
        lines = status_lines(model)
    with solara.Column(classes=["geosim-status"], gap="2px",
                       style={"padding": "8px 12px", "font-size": "14px"}):
        for i, line in enumerate(lines):
            solara.Text(line, style={"font-weight": "bold"} if i == 0 else None,
                        classes=["geosim-status-line"])


@solara.component
def DashboardViews(model: DashboardModel):
    """The main area: the status lines above the cluster map and the plots, side by side.

    Only this component subscribes to Mesa's update counter (which SolaraViz bumps after
    every step) and hands it down, so a step costs one render pass, not one per view.
    """
    tick = update_counter.get()
    with solara.Column(classes=["geosim-dashboard"], gap="0px"):
        StatusView(model, tick)
        with solara.Columns([1, 1], gutters_dense=True):
            ClusterView(model, tick)
            PlotsView(model, tick)


def make_page(config: DashboardConfig):
    """The dashboard page component for ``config``; each browser session gets its own run.

    SolaraViz gets the model as a reactive value and no components, so it supplies the
    app bar, the controls and the step / play / reset buttons, and replaces the model on
    Reset; :func:`DashboardViews` lays out the views in the main area beside it (Mesa's
    draggable grid of components would clip the figures at its fixed item height).

    Returns:
        A Solara component taking no arguments (the app's ``Page``).
    """
    params = model_params(config)

    @solara.component
    def Page():
        first = solara.use_memo(lambda: DashboardModel(**config.model_kwargs()), [])
        model = solara.use_reactive(first)
        SolaraViz(model, components=[], model_params=params, name="geosim dashboard",
                  play_interval=PLAY_INTERVAL, render_interval=1)
        DashboardViews(model.value)

    return Page
