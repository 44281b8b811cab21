"""The model behind the live dashboard: one geosim run and a cheap record of it.

:class:`DashboardModel` is the Mesa model the dashboard steps and re-creates. Its
keyword arguments are the dashboard's controls (scenario file, scheduler, seed, ε, β,
load), so the page's Reset can rebuild it from the controls' values. It is a
:class:`geosim.model.GeoModel`, so Mesa's SolaraViz can drive it as well as the
dashboard's own page.

Every step takes one sample of a :class:`~geosim.recorder.Recorder` (the run's recorder
class, with model-level reporters over :mod:`geosim.state`: vectorised sums, no
per-cluster Python loop); the cluster states are computed only when a frame is drawn
(:meth:`DashboardModel.cluster_snapshot`), by the same rule as the result tables.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mesa
import numpy as np

from geosim import state
from geosim.errors import GeosimError
from geosim.model import GeoModel
from geosim.recorder import Recorder
from geosim.scenario import Scenario, load_scenario
from geosim.schedulers import make_scheduler, registered

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


def scheduler_params(scenario: Scenario, name: str, epsilon: float | None,
                     beta: float | None) -> dict[str, Any]:
    """Parameters of scheduler ``name`` in the dashboard.

    The scenario's ``scheduler.params`` apply when it names the same scheduler (as in
    :class:`~geosim.model.GeoModel`); the ε and β controls then set ``epsilon`` and
    ``beta`` for the schedulers that take them.
    """
    params = dict(scenario["scheduler"]["params"]) if scenario["scheduler"]["name"] == name \
        else {}
    defaults = scheduler_defaults(name)
    for key, value in (("epsilon", epsilon), ("beta", beta)):
        if value is not None and key in defaults:
            params[key] = round(float(value), 6)
    return params


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


@dataclass(frozen=True)
class ClusterSnapshot:
    """The clusters at the current slot boundary.

    Attributes:
        state: Index into :data:`geosim.results.CLUSTER_STATES` per cluster.
        busy: Busy slot shares per cluster.
        slots: Slots per cluster.
        counts: Number of clusters in each state.
    """

    state: np.ndarray
    busy: np.ndarray
    slots: np.ndarray
    counts: dict[str, int]


class DashboardModel(GeoModel):
    """One geosim run as the dashboard steps it: a :class:`~geosim.model.GeoModel`.

    Its constructor takes only keyword arguments named after the dashboard's controls,
    so the page's Reset, or Mesa's SolaraViz given this class, re-creates it from the
    controls' values. A bad choice of controls (a scenario that fails to load, an
    override that does not fit it) does not raise: the model is created stopped, with the
    one-line message in :attr:`error` and none of the run's parts, so the dashboard can
    show it and the user can pick again.

    Args:
        scenario_file: Scenario TOML file.
        scheduler: Registered scheduler name.
        seed: Seed of every random draw of the run (an int, or its text).
        epsilon: ε of the schedulers that take it (PingAn).
        beta: β of the schedulers that take it (LAPS, LAPS+R).
        load: Factor applied to the scenario's arrival rate.
        overrides: Dotted-key scenario overrides, as ``(key, value)`` pairs.

    Attributes:
        error: Why the run could not be built, or ``None``.
        history: Per-step time series (a :class:`~geosim.recorder.Recorder` with the
            model-level series ``time``, ``alive``, ``busy``, ``usable`` and
            ``mean_flowtime``).
        step_seconds: Wall time of the last step.
        total_step_seconds: Wall time of all steps.
        frame_seconds: Wall time of the last frame of each view, by view name (filled
            in by the dashboard's views).
        lock: Held while the run steps. The page steps the model in a thread of its own
            while a click (pause, reset) may render the views in another, so the views
            hold it while they read the run.
    """

    def __init__(self, scenario_file: str = "scenarios/pingan-medium.toml",
                 scheduler: str = "fair", seed: int | str = 1, epsilon: float = 0.6,
                 beta: float = 0.8, load: float = 1.0,
                 overrides: Sequence[tuple[str, Any]] = ()):
        self.scenario_file, self.scheduler_name = str(scenario_file), str(scheduler)
        self.seed_value = parse_seed(seed)
        self.error: str | None = None
        self.history = Recorder(model_reporters={
            "alive": lambda m: len(m.jobs),
            "busy": lambda m: float(state.busy_slots(m.engine).sum()),
            "usable": lambda m: float(state.usable_slots(m.engine)),
            "mean_flowtime": lambda m: m._mean_flowtime()}, clock=lambda m: m.time_now)
        self.step_seconds = 0.0
        self.total_step_seconds = 0.0
        self.frame_seconds: dict[str, float] = {}
        self.lock = threading.RLock()
        try:
            if self.seed_value is None:
                raise GeosimError(f"seed must be a whole number >= 0 (got {seed!r})")
            scenario = load_dashboard_scenario(self.scenario_file, overrides, load)
            params = scheduler_params(scenario, self.scheduler_name, epsilon, beta)
            policy = make_scheduler(self.scheduler_name, params, source=scenario.source)
        except GeosimError as exc:
            mesa.Model.__init__(self, rng=self.seed_value or 0)
            self._fail(exc)
            return
        try:
            super().__init__(scenario, policy, self.seed_value)
        except GeosimError as exc:
            self._fail(exc)
            return
        self.total_slots = float(self.world.n_slots)
        self._flow_sum = 0.0
        self._flow_seen = 0
        self.history.collect(self)

    def _fail(self, exc: GeosimError) -> None:
        self.error = str(exc)
        self.running = False

    # ------------------------------------------------------------------ stepping
    def step(self) -> None:
        """Advance the run by one time slot (or one idle jump) and record it."""
        if self.error is not None or self.done:
            self.running = False
            return
        start = time.perf_counter()
        with self.lock:
            try:
                super().step()
            except GeosimError as exc:
                self._fail(exc)
                return
            self.history.collect(self)
        self.step_seconds = time.perf_counter() - start
        self.total_step_seconds += self.step_seconds
        self.running = not self.done

    def _mean_flowtime(self) -> float:
        """Mean flowtime of the jobs finished so far (NaN before the first)."""
        if self.jobs_done != self._flow_seen:
            _, flowtimes = self.completed_flowtimes()
            self._flow_sum = float(np.sum(flowtimes))
            self._flow_seen = self.jobs_done
        return self._flow_sum / self._flow_seen if self._flow_seen else np.nan

    # ------------------------------------------------------------------ reading
    @property
    def time_now(self) -> float:
        """Simulated time (s) of the run."""
        return self.view.time if self.error is None else 0.0

    @property
    def steps_taken(self) -> int:
        """Steps that advanced the run: time slots, and jumps over idle stretches.

        Unlike Mesa's ``steps``, a call of :meth:`step` after the end of the run (or
        after an error) does not count.
        """
        return max(len(self.history) - 1, 0)

    def cluster_snapshot(self) -> ClusterSnapshot:
        """State, busy slot shares and slots of every cluster, now (vectorised)."""
        code = state.cluster_states(self.engine)
        counts = np.bincount(code, minlength=len(state.CLUSTER_STATES))
        return ClusterSnapshot(code, state.busy_slots(self.engine), self.world.slots,
                               dict(zip(state.CLUSTER_STATES, counts.tolist(), strict=True)))

    def completed_flowtimes(self) -> tuple[np.ndarray, np.ndarray]:
        """Completion times and flowtimes (s) of the jobs finished so far."""
        completion = state.job_columns(self.engine)["completion"]
        done = ~np.isnan(completion)
        return completion[done], completion[done] - self.workload.arrival[done]

    def status(self) -> dict[str, Any]:
        """Headline numbers of the run now, for the status card."""
        if self.error is not None:
            return {"error": self.error}
        h = self.history
        return {
            "scheduler": self.policy.name,
            "params": self.policy.get_params(),
            "time": self.time_now,
            "steps": self.steps_taken,
            "arrival_rate": self.config["workload"]["arrival_rate"],
            "jobs": self.workload.n_jobs,
            "arrived": state.totals(self.engine)["jobs_arrived"],
            "alive": len(self.jobs),
            "done": self.jobs_done,
            "mean_flowtime": float(h["mean_flowtime"][-1]) if len(h) else float("nan"),
            "utilisation": float(h["busy"][-1]) / self.total_slots if len(h) else 0.0,
            "usable": float(h["usable"][-1]) / self.total_slots if len(h) else 0.0,
            "clusters": self.cluster_snapshot().counts,
            "finished": self.done,
        }
