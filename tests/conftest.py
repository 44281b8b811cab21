"""Shared builders of small scenarios for the tests."""

from __future__ import annotations

import copy
import importlib.util
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from geosim import invariants
from geosim.processes import KeyedRenewal
from geosim.testing import (  # noqa: F401 - the tests import them from here
    closed_world,
    flows_world,
    geo_world,
    mapreduce_world,
)
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


def input_less_jobs(works: list[list[float]], stages: list[list[int]] | None = None,
                    cv: float = 0.0) -> Workload:
    """Jobs arriving at 0, each a list of input-less tasks of the given work (MI)."""
    import numpy as np

    work = [w for job in works for w in job]
    stage = [s for job in stages for s in job] if stages else [0] * len(work)
    n = len(work)
    empty = np.zeros(0, dtype=np.int64)
    return Workload(arrival=np.zeros(len(works)), weight=np.ones(len(works)),
                    task_ptr=np.cumsum([0] + [len(job) for job in works]), task_work=work,
                    task_type=np.zeros(n, dtype=np.int32), type_names=("t",), edge_src=empty,
                    edge_dst=empty, edge_size=np.zeros(0),
                    raw_ptr=np.zeros(n + 1, dtype=np.int64), raw_cluster=empty,
                    raw_size=np.zeros(0), task_stage=np.asarray(stage, dtype=np.int32),
                    task_cv=np.full(n, cv))


def keyed_availability(seed: int = 0, n: int = 400, factor: float = 1.0) -> KeyedRenewal:
    """002's availability periods (§6) on ``n`` entities, drawn from keyed streams."""
    return KeyedRenewal(n, (0.34, 94.35), (0.19, 39.92), (2.0, 3.0), (0.0, 0.3), factor,
                        np.random.default_rng(seed))


def tiny_workload(**changes: Any) -> Workload:
    """Two jobs: job 0 = tasks 0 -> 1, job 1 = task 2; one raw input per task."""
    fields = {"arrival": [0.0, 1.0], "weight": [1.0, 1.0], "task_ptr": [0, 2, 3],
              "task_work": [10.0, 20.0, 30.0], "task_type": [0, 1, 0], "type_names": ("a", "b"),
              "edge_src": [0], "edge_dst": [1], "edge_size": [1.5], "raw_ptr": [0, 1, 2, 3],
              "raw_cluster": [0, 1, 2], "raw_size": [1.0, 2.0, 3.0]}
    fields.update(changes)
    return Workload(**fields)


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


def benchmark_module(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The script ``benchmarks/<name>.py`` loaded as a module, its siblings importable."""
    folder = Path(__file__).resolve().parent.parent / "benchmarks"
    monkeypatch.syspath_prepend(str(folder))               # as a script sees its siblings
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
