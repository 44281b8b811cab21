"""``geosim validate``'s time estimate: longest chains, input gates, and outages it cannot
estimate through."""

from __future__ import annotations

import numpy as np
import pytest

from geosim.cli import main
from geosim.footprint import (
    critical_paths,
    outage_exposure,
    simulated_span,
    task_alone,
)
from geosim.inputs import build_inputs
from geosim.scenario import load_scenario
from geosim.testing import geo_world
from geosim.tomlio import dump_toml
from geosim.workload.core import Workload


def _chain() -> Workload:
    """Job 0: tasks 0 -> 1 -> 2 (8 MB from 0 to 1) beside task 3 (10 MB raw input);
    job 1 (arrives at 100 s): a map stage of two tasks, then a reduce stage of one."""
    return Workload(arrival=np.array([0.0, 100.0]), weight=np.ones(2),
                    task_ptr=np.array([0, 4, 7]),
                    task_work=np.array([10.0, 20.0, 30.0, 40.0, 5.0, 15.0, 7.0]),
                    task_type=np.zeros(7, dtype=np.int32), type_names=("t",),
                    edge_src=np.array([0, 1]), edge_dst=np.array([1, 2]),
                    edge_size=np.array([8.0, 0.0]),
                    raw_ptr=np.array([0, 0, 0, 0, 1, 1, 1, 1]), raw_cluster=np.array([0]),
                    raw_size=np.array([10.0]),
                    task_stage=np.array([0, 0, 0, 0, 0, 0, 1], dtype=np.int32))


def _costs(bandwidth: float) -> np.ndarray:
    """The tasks of :func:`_chain` alone at 10 MI/s, inputs at ``bandwidth`` MB/s."""
    data = np.array([0.0, 8.0, 0.0, 10.0, 0.0, 0.0, 0.0])
    return _chain().task_work / 10.0 + data / bandwidth


def test_critical_paths_follow_edges_inputs_and_stage_barriers():
    # at 2 MB/s: job 0's chain 1 + (2 + 4) + 3 = 10 s against task 3's 4 + 5; job 1's
    # map stage takes its longest task (1.5 s), then the reduce (0.7 s)
    paths = critical_paths(_chain(), _costs(bandwidth=2.0))
    assert paths == pytest.approx([10.0, 2.2])
    assert critical_paths(_chain(), _costs(bandwidth=np.inf)) == pytest.approx([6.0, 2.2])


def test_the_estimate_takes_the_latest_of_arrivals_drain_and_chains():
    world = geo_world(n_clusters=6, n_jobs=4)
    scenario = load_scenario(world)
    inputs = build_inputs(scenario)
    simulated, steps = simulated_span(scenario, inputs.world, inputs.workload)
    wl = inputs.workload
    chains = wl.arrival + critical_paths(wl, task_alone(scenario, inputs.world, wl))
    assert simulated >= chains.max() - 1e-9 and steps == pytest.approx(simulated)



def test_validate_says_when_outages_make_any_estimate_wrong(tmp_path, capsys):
    world = geo_world(n_clusters=6, n_jobs=4)
    world["workload"]["reference_mips"] = 5000.0        # tasks of minutes...
    for tier in ("small", "medium", "large"):           # ...on clusters down every 33 s
        world["tiers"][tier]["outage_probability"] = 0.9
    lost, up = outage_exposure(load_scenario(world), *_built(world))
    assert lost > 0.9 and up == pytest.approx(30 / 0.9)
    quiet = dict(world, outages={"enabled": False})
    assert outage_exposure(load_scenario(quiet), *_built(quiet)) == (0.0, np.inf)
    path = tmp_path / "outages.toml"
    path.write_text(dump_toml(world))
    assert main(["validate", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("no estimate of time holds: outages would cut short the "
                               "copies that hold about ")
    assert main(["validate", "scenarios/pingan-medium.toml"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2


def _built(world):
    inputs = build_inputs(world if not isinstance(world, dict) else load_scenario(world))
    return inputs.world, inputs.workload
