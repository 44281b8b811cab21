"""Checking the inputs of a comparison: schedulers, seeds, thresholds, baseline, workers.

Every check runs before anything is run or written, so bad input is reported at once,
naming the option (``source``) and the value.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from geosim.errors import GeosimError
from geosim.scenario import Scenario
from geosim.schedulers.spec import Spec, parse_spec, parse_specs, split_top


def coerce_specs(schedulers: str | Sequence[str | Spec | tuple[str, Mapping[str, Any]]]
                 ) -> list[Spec]:
    """Turn spec strings, ``(name, params)`` pairs or specs into validated specs.

    Every scheduler is built once with :func:`~geosim.schedulers.make_scheduler`, so an
    unknown name or a bad parameter is reported before anything runs.

    Raises:
        GeosimError: No scheduler, a bad spec, an unknown name, a bad parameter, or a
            label that repeats.
    """
    from geosim.schedulers import make_scheduler
    items = [schedulers] if isinstance(schedulers, str) else list(schedulers)
    specs: list[Spec] = []
    for item in items:
        if isinstance(item, Spec):
            specs.append(item)
        elif isinstance(item, str):
            specs.extend(parse_specs(item))
        else:
            name, params = item
            specs.append(Spec(name, dict(params or {})))
    if not specs:
        raise GeosimError("no scheduler to compare", source="schedulers")
    seen: set[str] = set()
    for spec in specs:
        make_scheduler(spec.name, spec.params, source="schedulers")
        if spec.label in seen:
            raise GeosimError(f"scheduler {spec.label!r} is listed twice", source="schedulers")
        seen.add(spec.label)
    return specs


def resolve_seeds(scenario: Scenario, seeds: str | Sequence[int] | None,
                  reps: int | None) -> list[int]:
    """Return the seeds of the replications.

    Args:
        scenario: Its ``run.seed`` is the first seed when ``seeds`` is not given.
        seeds: Explicit seeds (a list or a comma-separated string).
        reps: Number of replications: seeds ``run.seed + i``; default 1.

    Raises:
        GeosimError: Malformed, negative or repeated seeds, ``reps < 1``, or both given
            with different counts.
    """
    if reps is not None and (isinstance(reps, bool) or not isinstance(reps, int) or reps < 1):
        raise GeosimError(f"must be a whole number >= 1 (got {reps!r})", source="reps")
    if seeds is None:
        first = int(scenario["run"]["seed"])
        return [first + i for i in range(reps or 1)]
    values = split_top(seeds, "seeds") if isinstance(seeds, str) else list(seeds)
    out = []
    for value in values:
        try:
            seed = int(str(value).strip()) if isinstance(value, str) else value
        except ValueError:
            seed = value
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise GeosimError(f"must be whole numbers >= 0 (got {value!r})",
                              source="seeds")
        out.append(int(seed))
    if not out or len(set(out)) != len(out):
        raise GeosimError(f"need distinct seeds (got {values!r})", source="seeds")
    if reps is not None and reps != len(out):
        raise GeosimError(f"{len(out)} seeds given but reps = {reps}", source="seeds")
    return out


def check_within(within: str | Sequence[float]) -> tuple[float, ...]:
    """Return the flowtime thresholds as positive finite floats.

    Raises:
        GeosimError: A value that is not a positive number, or none at all.
    """
    values = split_top(within, "within") if isinstance(within, str) else list(within)
    out = []
    for value in values:
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(value, bool) or not math.isfinite(number) or number <= 0:
            raise GeosimError(f"thresholds must be positive numbers (got {value!r})",
                              source="within")
        out.append(number)
    if not out:
        raise GeosimError("no threshold given", source="within")
    return tuple(out)


def scheduler_label(name: str, specs: Sequence[Spec], source: str) -> str:
    """The label of ``name`` (a spec or a label) among ``specs``.

    Raises:
        GeosimError: It is not among them (naming ``source``, e.g. ``baseline``).
    """
    labels = [s.label for s in specs]
    try:
        label = parse_spec(name).label
    except GeosimError:
        label = name
    if label not in labels:
        raise GeosimError(f"{name!r} is not among the schedulers ({', '.join(labels)})",
                          source=source)
    return label


def _baseline_label(baseline: str | None, specs: Sequence[Spec]) -> str | None:
    return None if baseline is None else scheduler_label(baseline, specs, "baseline")


def _check_workers(jobs_parallel: int | None) -> int:
    if jobs_parallel is None:
        return os.cpu_count() or 1
    if isinstance(jobs_parallel, bool) or not isinstance(jobs_parallel, int) or \
            jobs_parallel < 1:
        raise GeosimError(f"must be a whole number >= 1 (got {jobs_parallel!r})",
                          source="jobs-parallel")
    return jobs_parallel
