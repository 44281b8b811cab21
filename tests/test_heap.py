"""The collector and a run's long-lived objects (:mod:`geosim.heap`)."""

from __future__ import annotations

import gc
import weakref

import geosim
from geosim import heap


class _Node:
    """An object that can sit in a reference cycle."""

    def __init__(self):
        self.other = self


def test_long_lived_freezes_for_the_block_and_collects_what_it_makes():
    frozen = gc.get_freeze_count()
    before = _Node()
    with heap.long_lived():
        assert gc.get_freeze_count() > frozen
        cycle = _Node()
        gone = weakref.ref(cycle)
        del cycle
        gc.collect()
        assert gone() is None           # a cycle made inside is collected
        kept = weakref.ref(before)
    assert gc.get_freeze_count() == 0
    del before
    gc.collect()
    assert kept() is None               # frozen garbage returns to the collector after


def test_long_lived_leaves_a_callers_freeze_alone():
    # Whether an object is still frozen, not the frozen count: frozen objects that other
    # threads (the test runner's) release meanwhile lower the count.
    mine = [object()]
    gc.freeze()
    try:
        with heap.long_lived():
            pass
        assert not any(o is mine for o in gc.get_objects())    # still frozen
    finally:
        gc.unfreeze()
    assert any(o is mine for o in gc.get_objects())


def test_importing_collects_nothing_inside_and_restores_the_collector():
    assert gc.isenabled()
    try:
        with heap.importing():
            assert not gc.isenabled()
        assert gc.isenabled()
        gc.disable()
        with heap.importing():
            pass
        assert not gc.isenabled()       # left as the caller had it
    finally:
        gc.enable()


def test_a_command_leaves_the_collector_as_it_found_it(tmp_path, capsys):
    from geosim.cli import main

    assert main(["run", "scenarios/quickstart.toml", "--scheduler", "fifo", "--set",
                 "workload.n_jobs=5", "--out", str(tmp_path / "r"), "--no-progress"]) == 0
    assert main(["validate", "scenarios/quickstart.toml"]) == 0
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_a_run_freezes_only_while_it_runs():
    geosim.run("scenarios/quickstart.toml", scheduler="fifo",
               overrides={"workload.n_jobs": 5})
    assert gc.get_freeze_count() == 0 and gc.isenabled()
