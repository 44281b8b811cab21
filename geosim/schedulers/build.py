"""Where a run's scheduler is built: the one rule for its name and parameters.

The model, the command line, comparisons and the dashboard all build schedulers here, so
a scenario's ``scheduler.params`` and ``scheduler.defaults`` mean the same everywhere.
Scenario validation checks only the shape of these keys; the names they hold are
resolved here, against the registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from geosim.scenario import Scenario
from geosim.schedulers.base import Scheduler
from geosim.schedulers.registry import make_scheduler, scheduler_class
from geosim.schedulers.spec import Spec, parse_spec


def check_scheduler_names(scenario: Scenario) -> None:
    """Check that every name in ``scheduler.defaults`` is a registered, loadable scheduler.

    Raises:
        GeosimError: An unknown name, naming the key.
    """
    for name in scenario["scheduler"]["defaults"]:
        scheduler_class(name, scenario.source, key=f"scheduler.defaults.{name}")


def scheduler_params(scenario: Scenario, spec: Spec | str | None = None) -> dict[str, Any]:
    """The parameters a run of ``spec`` on ``scenario`` uses.

    A spec with parameters keeps them; a bare name takes ``scheduler.params`` when it is
    the scenario's scheduler (``None`` stands for it) and nothing otherwise; either way
    over ``scheduler.defaults`` for that name.
    """
    section = scenario["scheduler"]
    if not isinstance(spec, Spec):
        spec = parse_spec(spec or section["name"])
    params = spec.params or (section["params"] if spec.name == section["name"] else {})
    return {**section["defaults"].get(spec.name, {}), **params}


def build_scheduler(scenario: Scenario, scheduler: Scheduler | Spec | str | None = None,
                    params: Mapping[str, Any] | None = None) -> Scheduler:
    """The scheduler of a run: an instance as given, or built from a name or spec.

    Args:
        scenario: The validated scenario of the run.
        scheduler: An instance (returned as is), a spec such as ``"laps+r[beta=0.6]"``,
            or ``None`` for the scenario's ``scheduler.name``.
        params: Parameters set on top of the rule of :func:`scheduler_params` (the
            dashboard's controls).

    Raises:
        GeosimError: An unknown name in the spec or in ``scheduler.defaults``, or bad
            parameters (one line naming them).
    """
    check_scheduler_names(scenario)
    if isinstance(scheduler, Scheduler):
        return scheduler
    spec = scheduler if isinstance(scheduler, Spec) else parse_spec(
        scheduler or scenario["scheduler"]["name"])
    return make_scheduler(spec.name, {**scheduler_params(scenario, spec), **(params or {})},
                          source=scenario.source)
