"""A run's world and workload, built from a scenario and a seed without a model.

:func:`build_inputs` is what :class:`~geosim.model.GeoModel` builds its world and jobs
with (the same streams of the same seed, the same checks in the same order), so what it
returns is what a model of the scenario and seed runs. It serves what needs them without
running anything: validating a scenario, the flow lower bounds of a comparison,
benchmarks and tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import geosim.footprint as footprint
import geosim.guards as guards
from geosim.scenario import Scenario
from geosim.workload import Workload, build_workload
from geosim.world import World, build_graph, build_world, spawn_streams


@dataclass
class RunInputs:
    """The world and jobs of a run, and the random streams of its seed.

    Attributes:
        streams: The run's random streams (:func:`~geosim.world.spawn_streams`); those
            of the world and workload have been drawn from.
        footprint: The run's size and memory estimate.
        world: The world.
        workload: The jobs.
    """

    streams: dict[str, np.random.Generator]
    footprint: footprint.Footprint
    world: World
    workload: Workload


def build_inputs(scenario: Scenario, seed: int | None = None,
                 workload: Workload | None = None) -> RunInputs:
    """Build and check the world and jobs of ``scenario`` under ``seed``.

    The memory estimate is checked before the world is built, so a run too large for
    ``run.max_memory_gb`` is refused before it takes the memory, and again once the
    world and the jobs give the run's expected length (over which the time series and
    the slots' blocks of draws grow).

    Args:
        scenario: A validated scenario.
        seed: Seed of every random draw; default: the scenario's ``run.seed``.
        workload: Jobs to use instead of the scenario's generator.

    Raises:
        GeosimError: A run over its memory or pace limits, or a workload that
            does not fit the world.
    """
    seed = scenario["run"]["seed"] if seed is None else int(seed)
    streams = spawn_streams(seed)
    graph = build_graph(scenario, streams["topology"])
    topology = footprint.topology_bytes(graph)
    size = footprint.estimate(scenario, graph, workload, topology=topology)
    footprint.check_memory(size, scenario)
    world = build_world(scenario, streams, graph)
    if workload is None:
        workload = build_workload(scenario, world, streams["workload"])
    workload.validate(world.n_clusters, source=scenario.source)
    footprint.check_pace(scenario, world, workload, guards.STALL_SECONDS, guards.STALL_STEPS)
    # Again over the run's expected length, now that the world and the jobs give it.
    size = footprint.estimate(scenario, graph, workload,
                              footprint.simulated_span(scenario, world, workload)[0], topology)
    footprint.check_memory(size, scenario)
    return RunInputs(streams, size, world, workload)


def world_and_workload(scenario: Scenario, seed: int | None = None) -> tuple[World, Workload]:
    """The world and the jobs of ``scenario`` under ``seed`` (default: ``run.seed``)."""
    inputs = build_inputs(scenario, seed)
    return inputs.world, inputs.workload


def rate_changes(world: World, workload: Workload, places_data: bool) -> str:
    """Why copies' rates may change between slot boundaries ('' when they cannot).

    Where this is '', a quiet span of several slots may run in one engine call. Event
    timing needs no such condition: it ends its spans at every instant a rate can
    change (:meth:`~geosim.model.GeoModel._event_span`).

    Args:
        world: The run's world.
        workload: The run's jobs.
        places_data: Whether the scheduler moves raw input before arrival.
    """
    for cause, present in (("the world has availability periods",
                            world.availability is not None),
                           ("the world has outages", world.outages is not None),
                           ("tasks read input over the network",
                            workload.n_raw > 0 or workload.n_edges > 0),
                           ("raw input is moved before arrival", places_data)):
        if present:
            return cause
    return ""
