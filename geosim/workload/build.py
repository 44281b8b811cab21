"""A scenario's workload: its ``[workload]`` table turned into jobs on a world.

:func:`build_workload` reads the scenario's workload kind and parameters and calls the
generator of that kind with the run's workload random stream; a world and its workload
are thus built without a model (the CLI's ``validate``, the flow lower bounds of a
comparison and the benchmarks use it that way).

The scenario and the world are read through two small protocols, not their classes, so
that the workload package does not depend on the scenario and world modules (which
depend on it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from geosim.errors import GeosimError
from geosim.workload.core import Workload
from geosim.workload.flows import flow_jobs
from geosim.workload.google import google_jobs
from geosim.workload.mapreduce import mapreduce_jobs
from geosim.workload.montage import montage_jobs
from geosim.workload.recipes import generated_instances
from geosim.workload.single import WorkDistribution, single_work_jobs
from geosim.workload.spark_apps import spark_scenario_jobs
from geosim.workload.traces import alibaba_trace_jobs, google_trace_jobs
from geosim.workload.wfformat import wfformat_jobs


class ScenarioLike(Protocol):
    """What the workload is built from: a validated scenario (:class:`geosim.scenario.Scenario`)."""

    source: str | None

    def __getitem__(self, key: str) -> Any:
        """A table of the scenario (``"workload"``)."""

    def resolve(self, path: str) -> Path:
        """A path of the scenario, relative to its file."""


class WorldLike(Protocol):
    """What the workload is fitted to: a built world (:class:`geosim.world.World`)."""

    n_clusters: int
    n_slots: int
    input_clusters: Sequence[int] | np.ndarray


def build_workload(scenario: ScenarioLike, world: WorldLike,
                   rng: np.random.Generator) -> Workload:
    """Generate the scenario's jobs (all of them, at the start of the run).

    Args:
        scenario: A validated scenario.
        world: The world the jobs run on (its clusters, slots and input clusters).
        rng: The run's workload stream (``spawn_streams(seed)["workload"]``).

    Raises:
        GeosimError: A workload that does not fit the world, or bad generator parameters,
            naming the scenario's ``workload`` table.
    """
    wl = scenario["workload"]
    kind = wl["kind"]
    if kind == "single":
        work = dict(wl["work"])        # checked by the scenario's validation
        dist = WorkDistribution(work.pop("distribution", "pareto"), work)
        cluster = wl["input_cluster"]
        if cluster >= world.n_clusters:
            raise GeosimError(f"input on cluster {cluster}, but the topology has "
                              f"{world.n_clusters} clusters", source=scenario.source,
                              key="workload.input_cluster")
        return single_work_jobs(wl["n_jobs"], wl["arrival_rate"], dist, rng,
                                input_cluster=cluster if cluster >= 0 else None)
    if kind in ("mapreduce", "google"):
        return _task_jobs(scenario, rng)
    if kind == "flows":
        return _flow_jobs(scenario, world.n_slots, rng)
    if kind == "spark":
        return spark_scenario_jobs(wl, world.input_clusters, rng)
    if kind.endswith("-trace"):
        return _trace_jobs(scenario, rng)
    common = {"input_clusters": world.input_clusters, "reference_mips": wl["reference_mips"]}
    if kind == "montage":
        mix = ((0.89, 1, 150), (0.08, 151, 500), (0.03, 501, wl["large_max_tasks"]))
        return montage_jobs(wl["n_jobs"], wl["arrival_rate"], rng, size_mix=mix, **common)
    if wl["recipe"]:                    # generated workflows (the wfcommons extra)
        try:
            with generated_instances(wl["recipe"], wl["recipe_tasks"], wl["recipe_instances"],
                                     rng) as files:
                return wfformat_jobs(files, wl["n_jobs"], wl["arrival_rate"], rng, **common)
        except GeosimError as exc:
            raise GeosimError(str(exc), source=scenario.source, key="workload.recipe") \
                from None
    files = [str(scenario.resolve(f)) for f in wl["files"]]
    return wfformat_jobs(files, wl["n_jobs"], wl["arrival_rate"], rng, **common)


def _task_jobs(scenario: ScenarioLike, rng: np.random.Generator) -> Workload:
    """MapReduce or Google-trace jobs: durations are seconds on a machine of power 1."""
    wl = scenario["workload"]
    try:
        if wl["kind"] == "mapreduce":
            return mapreduce_jobs(
                wl["n_jobs"], wl["arrival_rate"], rng, map_tasks=wl["map_tasks"],
                reduce_tasks=wl["reduce_tasks"], map_mean=wl["map_mean"],
                map_cv=wl["map_cv"], reduce_mean=wl["reduce_mean"],
                reduce_cv=wl["reduce_cv"], weight=wl["weight"])
        return google_jobs(
            wl["n_jobs"], wl["arrival_rate"], rng, mean_tasks=wl["mean_tasks"],
            max_tasks=wl["max_tasks"], duration_min=wl["duration_min"],
            duration_max=wl["duration_max"], duration_mean=wl["duration_mean"],
            task_cv=wl["task_cv"], reduce_fraction=wl["reduce_fraction"],
            priority_probs=wl["priority_probs"], duration_law=wl["duration_law"],
            duration_split=wl["duration_split"], short_shape=wl["short_shape"],
            long_shape=wl["long_shape"], copy_family=wl["copy_variability"])
    except GeosimError as exc:
        raise GeosimError(str(exc), source=scenario.source, key="workload") from None


def _trace_jobs(scenario: ScenarioLike, rng: np.random.Generator) -> Workload:
    """Jobs read from a Google 2011 or Alibaba 2018 trace (:mod:`.traces`)."""
    wl = scenario["workload"]
    files = {key: [str(scenario.resolve(f)) for f in wl[key]]
             for key in ("files", "job_events", "task_events")}
    common = {"start": wl["trace_start"], "end": wl["trace_end"],
              "task_cv": _pair(wl["task_cv"])}
    try:
        if wl["kind"] == "google-trace":
            return google_trace_jobs(files["job_events"], files["task_events"], wl["n_jobs"],
                                     rng, reduce_fraction=wl["reduce_fraction"], **common)
        return alibaba_trace_jobs(files["files"], wl["n_jobs"], rng, **common)
    except GeosimError as exc:
        if exc.source:                  # names the trace file, its line and column
            raise
        raise GeosimError(str(exc), source=scenario.source, key="workload") from None


def _pair(value: Any) -> tuple:
    """A range key as ``(low, high)``: a single number stands for both."""
    return tuple(value) if isinstance(value, list) else (value, value)


def _flow_jobs(scenario: ScenarioLike, slots: int, rng: np.random.Generator) -> Workload:
    """004 §3's flows on the world's ``slots`` slots (work in seconds at power 1)."""
    from geosim.flowflex import GeneratorConfig
    wl = scenario["workload"]
    keys = {f: wl[f"flow_{f}"] for f in (
        "edge_probability", "big_probability", "big_factor", "tall_probability",
        "wide_probability", "deadline_slack", "sla_gap")}
    keys.update({f: _pair(wl[f"flow_{f}"]) for f in (
        "count", "jobs", "weights", "short_duration", "tall_duration", "narrow_cap",
        "sla_steps", "sla_heights")})
    keys["flows"] = keys.pop("count")
    try:
        config = GeneratorConfig(slots=slots, **keys)
    except ValueError as exc:
        raise GeosimError(str(exc), source=scenario.source, key="workload") from None
    return flow_jobs(rng, config, batch=wl["flow_batch"], n_flows=wl["n_jobs"],
                     arrival_rate=wl["arrival_rate"], time_unit=wl["flow_time_unit"],
                     brick=wl["flow_brick"])
