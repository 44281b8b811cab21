"""Where a run's scheduler is built: the one rule for its name and parameters.

The model, the command line, comparisons and the dashboard all build schedulers here, so
a scenario's ``scheduler.params``, ``scheduler.defaults`` and ``scheduler.aliases`` mean
the same everywhere.
Scenario validation checks only the shape of these keys; the names they hold are
resolved here, against the registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from geosim.errors import GeosimError
from geosim.scenario import Scenario
from geosim.schedulers.base import Scheduler
from geosim.schedulers.registry import BUILTINS, make_scheduler, scheduler_class
from geosim.schedulers.spec import Spec, parse_spec


def check_scheduler_names(scenario: Scenario) -> None:
    """Check the names of ``scheduler.defaults`` and the specs of ``scheduler.aliases``.

    Each must name a registered, loadable scheduler.

    Raises:
        GeosimError: An unknown name or a malformed spec, naming the key.
    """
    section = scenario["scheduler"]
    for name in section["defaults"]:
        scheduler_class(name, scenario.source, key=f"scheduler.defaults.{name}")
    for name, text in section["aliases"].items():
        key = f"scheduler.aliases.{name}"
        try:
            target = parse_spec(text)
        except GeosimError as exc:
            raise GeosimError(str(exc), source=scenario.source, key=key) from None
        if target.name not in BUILTINS:      # a built-in's module loads only if it runs
            scheduler_class(target.name, scenario.source, key=key)


def resolve_alias(aliases: Mapping[str, str], spec: Spec) -> Spec:
    """What ``spec`` runs under ``aliases`` (a scenario's ``scheduler.aliases``).

    Its name's alias gives a spec, and the given spec's own parameters go on top of the
    alias's; a name without an alias runs as it is. An alias is applied once:
    ``laps = "laps[reassign=random]"`` is not recursive.
    """
    text = aliases.get(spec.name)
    if text is None:
        return spec
    target = parse_spec(text)
    return Spec(target.name, {**target.params, **spec.params})


def scheduler_params(scenario: Scenario, spec: Spec | str | None = None) -> dict[str, Any]:
    """The parameters a run of ``spec`` on ``scenario`` uses.

    A spec with parameters keeps them; a bare name takes ``scheduler.params`` when it is
    the scenario's scheduler (``None`` stands for it) and nothing otherwise; then its
    alias's parameters go under them (:func:`resolve_alias`), and ``scheduler.defaults``
    for the name it runs under those.
    """
    section = scenario["scheduler"]
    if not isinstance(spec, Spec):
        spec = parse_spec(spec or section["name"])
    params = spec.params or (section["params"] if spec.name == section["name"] else {})
    spec = resolve_alias(section["aliases"], Spec(spec.name, params))
    return {**section["defaults"].get(spec.name, {}), **spec.params}


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
    name = resolve_alias(scenario["scheduler"]["aliases"], spec).name
    return make_scheduler(name, {**scheduler_params(scenario, spec), **(params or {})},
                          source=scenario.source)
