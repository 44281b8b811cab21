"""Shared builders of small scenarios for the tests."""

from __future__ import annotations

import copy
import os
from typing import Any

import pytest

from geosim import invariants
from geosim.workload import Workload

#: Test modules run in conformance mode (:mod:`geosim.invariants` checked after every
#: step); elsewhere, the tests named for checkpoints or outages. Not the whole suite: a
#: check costs about as much as a cheap step, and a checked pool run leaves the compiled
#: loop that ``test_poolsim`` (never checked) exists to test. ``GEOSIM_CHECK_INVARIANTS``
#: set in the environment overrides this choice for every test.
CHECKED_MODULES = frozenset({"test_conformance", "test_engine", "test_invariants"})
CHECKED_WORDS = ("checkpoint", "outage")


@pytest.fixture(autouse=True)
def conformance_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Turn conformance mode on for the tests chosen above."""
    module = request.node.path.stem
    named = module != "test_poolsim" and any(w in request.node.name for w in CHECKED_WORDS)
    if (module in CHECKED_MODULES or named) and invariants.ENV_VAR not in os.environ:
        monkeypatch.setenv(invariants.ENV_VAR, "1")


def tiny_workload(**changes: Any) -> Workload:
    """Two jobs: job 0 = tasks 0 -> 1, job 1 = task 2; one raw input per task."""
    fields = {"arrival": [0.0, 1.0], "weight": [1.0, 1.0], "task_ptr": [0, 2, 3],
              "task_work": [10.0, 20.0, 30.0], "task_type": [0, 1, 0], "type_names": ("a", "b"),
              "edge_src": [0], "edge_dst": [1], "edge_size": [1.5], "raw_ptr": [0, 1, 2, 3],
              "raw_cluster": [0, 1, 2], "raw_size": [1.0, 2.0, 3.0]}
    fields.update(changes)
    return Workload(**fields)


def closed_world(slots: int = 1, rate: float = 0.05, n_jobs: int = 200,
                 work: dict | None = None, scheduler: str = "fifo",
                 params: dict | None = None, dt: float = 1.0, seed: int = 1,
                 availability: bool = False) -> dict[str, Any]:
    """One cluster of ``slots`` slots of power 1, no outages: the queueing-theory world."""
    return {
        "run": {"seed": seed, "dt": dt, "record_interval": 100.0},
        "scheduler": {"name": scheduler, "params": params or {}},
        "topology": {"generator": "single"},
        "tiers": {"small": {"slots": slots, "power_mean": 1.0, "power_rsd": 0.0}},
        "clusters": {"power_redraw_interval": 0.0},
        "availability": {"enabled": availability},
        "outages": {"enabled": False},
        "workload": {"kind": "single", "n_jobs": n_jobs, "arrival_rate": rate,
                     "work": work or {"distribution": "exponential", "mean": 10.0}},
    }


def mapreduce_world(slots: int = 12, n_jobs: int = 25, rate: float = 0.05, seed: int = 2,
                    scheduler: str = "fifo", params: dict | None = None) -> dict[str, Any]:
    """One cluster of unit-speed machines running MapReduce jobs whose copies vary (000)."""
    world = closed_world(slots=slots, rate=rate, n_jobs=n_jobs, scheduler=scheduler,
                         params=params, seed=seed)
    world["workload"] = {"kind": "mapreduce", "n_jobs": n_jobs, "arrival_rate": rate,
                         "map_tasks": [1, 8], "reduce_tasks": [0, 3], "map_mean": [5.0, 30.0],
                         "reduce_mean": [5.0, 20.0], "map_cv": 0.8, "reduce_cv": 0.5,
                         "weight": [1, 5]}
    return world


def flows_world(scheduler: str = "fifo", params: dict | None = None, seed: int = 1
                ) -> dict[str, Any]:
    """004's world, small: 25 unit-speed slots, 2-3 flows of 2-4 capped brick stages."""
    world = closed_world(slots=25, scheduler=scheduler, params=params, seed=seed, dt=5.0)
    world["workload"] = {"kind": "flows", "flow_count": [2, 3], "flow_jobs": [2, 4],
                         "flow_time_unit": 10.0, "flow_brick": 5.0}
    return world


def geo_world(n_clusters: int = 8, n_jobs: int = 12, rate: float = 0.05, seed: int = 3,
              scheduler: str = "fifo", params: dict | None = None) -> dict[str, Any]:
    """A small geo-distributed world with every process on: availability, outages, WAN.

    Raw input exists 60 s before its job arrives, for schedulers that place data.
    """
    small = {"slots": [4, 8]}
    return {
        "run": {"seed": seed, "record_interval": 20.0},
        "scheduler": {"name": scheduler, "params": params or {}},
        "topology": {"generator": "barabasi_albert", "n_clusters": n_clusters},
        "tiers": {"large": {"slots": [30, 40]}, "medium": {"slots": [10, 20]}, "small": small},
        "outages": {"trial_interval": 30.0},
        "workload": {"kind": "montage", "n_jobs": n_jobs, "arrival_rate": rate,
                     "large_max_tasks": 600, "data_lag": 60.0},
    }


def uniform_world(slots: int, n_clusters: int = 3, **clusters: Any) -> dict[str, Any]:
    """Clusters of ``slots`` VMs of power 100 MIPS, no availability periods or outages.

    The world of hand-computed scheduler tests; ``clusters`` adds ``[clusters]`` keys.
    """
    tier = {"slots": slots, "gate_ratio": 1.0, "power_mean": 100.0, "power_rsd": 0.0}
    return {
        "run": {"seed": 1},
        "topology": {"generator": "barabasi_albert", "n_clusters": n_clusters, "m": 1},
        "tiers": {"large": tier, "medium": tier, "small": tier},
        "clusters": clusters,
        "availability": {"enabled": False},
        "outages": {"enabled": False},
        "workload": {"kind": "single", "n_jobs": 1},
    }


@pytest.fixture
def world_dict():
    """Factory returning a fresh copy of a scenario dict."""
    return lambda builder=geo_world, **kw: copy.deepcopy(builder(**kw))
