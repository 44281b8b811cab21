"""The run behind the live dashboard: a GeoModel built from the controls, and its readings.

The dashboard steps a plain :class:`geosim.model.GeoModel`. :func:`build_model` builds it
from the dashboard's controls (scenario file, scheduler, seed, ε, β, load): the scheduler
through :func:`geosim.schedulers.build.build_scheduler`, the one rule for a run's
scheduler parameters, with the ε and β controls as parameters of the schedulers that
take them. :class:`Run` is what the page holds: that model, or the one-line reason the
controls' choice cannot run.

What the views show is read from the model: the time series from its Mesa
``datacollector`` (model variables collected at every step), the clusters and the
headline numbers from :mod:`geosim.state` when a frame is drawn (:func:`cluster_snapshot`,
:func:`status`), by the same rules as the result tables. Wall-clock timings and the lock
the views read under are kept per model (:func:`watch`), so the views draw any GeoModel,
also one that Mesa's SolaraViz steps.
"""

from __future__ import annotations

import inspect
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from geosim import state
from geosim.agents import ClusterAgent, LinkAgent
from geosim.errors import GeosimError
from geosim.model import GeoModel
from geosim.scenario import Scenario, load_scenario
from geosim.schedulers import registered
from geosim.schedulers.build import build_scheduler

#: Scheduler parameters the dashboard has controls for.
CONTROL_PARAMS = ("epsilon", "beta")


def scheduler_defaults(name: str) -> dict[str, Any]:
    """Keyword defaults of a registered scheduler's ``__init__`` (empty if unknown)."""
    cls = registered().get(name)
    if cls is None or cls.__init__ is object.__init__:
        return {}
    return {p.name: p.default for p in inspect.signature(cls.__init__).parameters.values()
            if p.default is not inspect.Parameter.empty}


def schedulers_taking(param: str) -> list[str]:
    """Registered schedulers that take ``param`` (e.g. ``"epsilon"``)."""
    return [name for name in registered() if param in scheduler_defaults(name)]


def control_params(name: str, epsilon: float | None, beta: float | None) -> dict[str, Any]:
    """The ε and β controls as parameters of scheduler ``name`` (those it takes)."""
    defaults = scheduler_defaults(name)
    return {key: round(float(value), 6) for key, value in (("epsilon", epsilon), ("beta", beta))
            if value is not None and key in defaults}


def load_dashboard_scenario(path: str, overrides: Sequence[tuple[str, Any]] = (),
                            load: float = 1.0) -> Scenario:
    """Load a scenario with the dashboard's overrides and load factor applied.

    Args:
        path: Scenario TOML file.
        overrides: Dotted-key overrides, as ``(key, value)`` pairs.
        load: Factor applied to the scenario's ``workload.arrival_rate`` (after the
            overrides).

    Raises:
        GeosimError: A missing or malformed scenario, a bad override or load.
    """
    scenario = load_scenario(path, dict(overrides))
    if load != 1.0:
        if not load > 0:
            raise GeosimError(f"load must be > 0 (got {load})", source=scenario.source)
        rate = scenario["workload"]["arrival_rate"] * float(load)
        scenario = scenario.with_overrides({"workload.arrival_rate": rate})
    return scenario


def parse_seed(seed: int | str) -> int | None:
    """A seed from a control (an int, or the text of a field); ``None`` if it is not one."""
    try:
        value = int(str(seed).strip())
    except ValueError:
        return None
    return value if value >= 0 else None


def build_model(scenario_file: str = "scenarios/pingan-medium.toml", scheduler: str = "fair",
                seed: int | str = 1, epsilon: float | None = 0.6, beta: float | None = 0.8,
                load: float = 1.0, overrides: Sequence[tuple[str, Any]] = ()) -> GeoModel:
    """The GeoModel of the dashboard's controls.

    Args:
        scenario_file: Scenario TOML file.
        scheduler: Registered scheduler name (its parameters: the scenario's rule of
            :func:`~geosim.schedulers.build.scheduler_params`, then the controls).
        seed: Seed of every random draw of the run (an int, or its text).
        epsilon: ε of the schedulers that take it (PingAn).
        beta: β of the schedulers that take it (LAPS, LAPS+R).
        load: Factor applied to the scenario's arrival rate.
        overrides: Dotted-key scenario overrides, as ``(key, value)`` pairs.

    Raises:
        GeosimError: A choice that cannot run (one line saying why).
    """
    value = parse_seed(seed)
    if value is None:
        raise GeosimError(f"seed must be a whole number >= 0 (got {seed!r})")
    scenario = load_dashboard_scenario(str(scenario_file), overrides, load)
    name = str(scheduler)
    policy = build_scheduler(scenario, name, params=control_params(name, epsilon, beta))
    return GeoModel(scenario, policy, value)


@dataclass(frozen=True)
class Run:
    """The page's run: the model of the controls, or why they cannot run.

    Attributes:
        model: The model, or ``None``.
        error: The one-line reason the controls' choice cannot run, or ``None``.
    """

    model: GeoModel | None
    error: str | None = None

    @classmethod
    def build(cls, **controls: Any) -> Run:
        """:func:`build_model` of the controls; a :class:`GeosimError` becomes ``error``."""
        try:
            return cls(build_model(**controls))
        except GeosimError as exc:
            return cls(None, str(exc))

    @property
    def running(self) -> bool:
        """Whether the run can take another step."""
        return self.model is not None and self.model.running


@dataclass
class Watch:
    """Wall-clock timings of a model on the dashboard, and the lock its readers hold.

    Attributes:
        step_seconds: Wall time of the last step taken through :func:`step`.
        total_step_seconds: Wall time of all of them.
        frame_seconds: Wall time of the last frame of each view, by view name.
        lock: Held while the page steps the model (:func:`step`) and while a view reads
            it: the page steps in a thread of its own while a click (pause, reset) may
            render the views in another. Mesa's SolaraViz steps without it; the views
            then read arrays of fixed size and the collector's rows, which are consistent
            on their own.
    """

    step_seconds: float = 0.0
    total_step_seconds: float = 0.0
    frame_seconds: dict[str, float] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)


_WATCHES: weakref.WeakKeyDictionary[GeoModel, Watch] = weakref.WeakKeyDictionary()


def watch(model: GeoModel) -> Watch:
    """The :class:`Watch` of ``model`` (made at the first call)."""
    found = _WATCHES.get(model)
    if found is None:
        found = _WATCHES[model] = Watch()
    return found


def step(model: GeoModel) -> None:
    """Step ``model`` once under its lock and time it.

    Raises:
        GeosimError: The step failed (a stalled run); the model stops running.
    """
    w = watch(model)
    start = time.perf_counter()
    with w.lock:
        try:
            model.step()
        except GeosimError:
            model.running = False
            raise
    w.step_seconds = time.perf_counter() - start
    w.total_step_seconds += w.step_seconds


@dataclass(frozen=True)
class MapFrame:
    """A run's world at one moment, as its map shows it.

    Attributes:
        time: Simulated time (s).
        state: Index into :data:`geosim.state.CLUSTER_STATES` per cluster.
        busy: Busy slot shares per cluster.
        link_load: Busier direction's traffic over bandwidth per link (0 when idle).
        gate_util: Busier gate direction's traffic over gate bandwidth per cluster.
    """

    time: float
    state: np.ndarray
    busy: np.ndarray
    link_load: np.ndarray
    gate_util: np.ndarray


def interval_bandwidth(samples: list[dict[str, np.ndarray]], links: int) -> np.ndarray:
    """The link bandwidth in force over the last sampling interval: the previous sample's.

    A sample's traffic is averaged over the interval since the sample before, while its
    ``bandwidth`` is the level at the sample, which holds from then on. The level at
    the interval's start is exact when links are redrawn no more often than samples are
    taken, at sample times (the defaults: both every 10 s); otherwise it stands for the
    interval's levels. ``samples`` are the recorder's (a block may hold several samples
    of ``links`` rows each); the first sample stands for itself.
    """
    last = samples[-1]["bandwidth"]
    if last.size >= 2 * links:
        return last[-2 * links:-links]
    return samples[-2]["bandwidth"][-links:] if len(samples) > 1 else last[-links:]


def model_frame(model: GeoModel) -> MapFrame:
    """The model's world now; link and gate load over the last sampling interval."""
    e, world = model.engine, model.world
    n, links = world.n_clusters, world.n_links
    gate_util, link_load = np.zeros(n), np.zeros(links)
    clusters = model.recorder.samples(ClusterAgent)
    if clusters:
        last = clusters[-1]
        traffic = np.maximum(last["egress_mbps"][-n:], last["ingress_mbps"][-n:])
        gate_util = load_share(traffic, world.gate)
    samples = model.recorder.samples(LinkAgent) if links else []
    if samples:
        last = samples[-1]
        traffic = np.maximum(last["forward_mbps"][-links:], last["backward_mbps"][-links:])
        link_load = load_share(traffic, interval_bandwidth(samples, links))
    return MapFrame(float(e.time), state.cluster_states(e), state.busy_slots(e), link_load,
                    gate_util)


def load_share(traffic: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Traffic over capacity, 0 where the capacity is 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nan_to_num(traffic / capacity, nan=0.0, posinf=0.0)


@dataclass(frozen=True)
class ClusterSnapshot:
    """The clusters at the current slot boundary.

    Attributes:
        state: Index into :data:`geosim.state.CLUSTER_STATES` per cluster.
        busy: Busy slot shares per cluster.
        slots: Slots per cluster.
        counts: Number of clusters in each state.
    """

    state: np.ndarray
    busy: np.ndarray
    slots: np.ndarray
    counts: dict[str, int]


def cluster_snapshot(model: GeoModel) -> ClusterSnapshot:
    """State, busy slot shares and slots of every cluster, now (vectorised)."""
    code = state.cluster_states(model.engine)
    counts = np.bincount(code, minlength=len(state.CLUSTER_STATES))
    return ClusterSnapshot(code, state.busy_slots(model.engine), model.world.slots,
                           dict(zip(state.CLUSTER_STATES, counts.tolist(), strict=True)))


def status(model: GeoModel) -> dict[str, Any]:
    """Headline numbers of the run now, for the status lines."""
    e = model.engine
    _, flowtimes = state.finished_flowtimes(e)
    slots = float(model.world.n_slots)
    return {
        "scheduler": model.policy.name,
        "params": model.policy.get_params(),
        "seed": model.seed,
        "scenario": Path(model.config.source).name,
        "time": float(model.view.time),
        "steps": model.steps_run,
        "arrival_rate": model.config["workload"]["arrival_rate"],
        "jobs": model.workload.n_jobs,
        "arrived": state.totals(e)["jobs_arrived"],
        "alive": len(model.jobs),
        "done": model.jobs_done,
        "mean_flowtime": float(flowtimes.mean()) if flowtimes.size else float("nan"),
        "utilisation": state.total_busy_slots(e) / slots,
        "usable": state.usable_slots(e) / slots,
        "clusters": cluster_snapshot(model).counts,
        "finished": model.done,
    }
