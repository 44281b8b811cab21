"""The README's "Write your own scheduler" section stays true.

Its example runs as printed and passes the contract's checks, its entry-point table
names the class it defines, its pytest example works, and every view attribute, action,
monitor and model member its tables list exists.
"""

from __future__ import annotations

import re
import sys
import tomllib
import types
from pathlib import Path

import numpy as np
import pytest

from geosim import GeoModel, load_scenario
from geosim.modeler import PerformanceModel
from geosim.schedulers import registry
from geosim.testing import check_scheduler, scheduler_checks
from geosim.view import Actions

ROOT = Path(__file__).resolve().parent.parent


def section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("\n## Write your own scheduler\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", section(), re.S)


def table_rows(header: str) -> list[tuple[str, str]]:
    """The (first cell, second cell) of each row of the table headed ``header``."""
    lines = section().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {header} |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        first, second = (cell.strip() for cell in line.strip().strip("|").split(" | ", 1))
        rows.append((first, second))
    return rows


@pytest.fixture(scope="module")
def example():
    """The namespace of the README's example after running it from the repository root.

    Its ``@register`` is undone after this module's tests.
    """
    with pytest.MonkeyPatch.context() as patch:
        registry.registered()   # the built-ins register as their modules load, once
        patch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
        namespace: dict = {"__name__": "readme_example"}
        with pytest.MonkeyPatch.context() as cwd:
            cwd.chdir(ROOT)    # the example names scenarios/quickstart.toml
            exec(compile(blocks("python")[0], "README.md", "exec"), namespace)
        yield namespace


def test_the_example_runs_every_job_and_passes_the_contract(example):
    greedy = example["Greedy"]
    assert registry.registered()["greedy"] is greedy
    jobs = example["result"].jobs
    assert len(jobs) == 10 and jobs["finished"].all()
    assert example["result"].summary["mean_flowtime"] > 0
    check_scheduler(greedy)
    with pytest.raises(ValueError, match="pick must be"):
        greedy(pick="nearest")


def test_the_entry_point_names_the_example_class(example):
    (toml,) = blocks("toml")
    points = tomllib.loads(toml)["project"]["entry-points"][registry.ENTRY_POINT_GROUP]
    name, value = next(iter(points.items()))
    assert name == example["Greedy"].name and value.endswith(":Greedy")


def test_the_pytest_example_runs(example, monkeypatch):
    package, module = types.ModuleType("mypkg"), types.ModuleType("mypkg.greedy")
    module.Greedy = example["Greedy"]
    monkeypatch.setitem(sys.modules, "mypkg", package)
    monkeypatch.setitem(sys.modules, "mypkg.greedy", module)
    namespace: dict = {}
    exec(compile(blocks("python")[1], "README.md", "exec"), namespace)
    assert list(namespace["CHECKS"]) == list(scheduler_checks(example["Greedy"]))
    namespace["test_greedy_conformance"](namespace["CHECKS"]["params"])


def test_the_tables_name_only_what_exists():
    world = {"topology": {"generator": "single"}, "workload": {"kind": "single", "n_jobs": 2}}
    view = GeoModel(load_scenario(world)).view
    rows = dict(table_rows("view"))
    names = {n for first in rows for n in re.findall(r"`view\.(\w+)", first)}
    assert len(names) > 40
    for name in sorted(names):
        assert hasattr(view, name), f"the README lists view.{name}"
    # members named in the second cell: `name(...)`, `name[...]` or `name`
    members = r"`(\w+)[(\[`]"
    for name in re.findall(members, rows["`view.monitor`"]):
        assert hasattr(view.monitor, name), f"the README lists monitor.{name}"
    model_row = next(second for first, second in rows.items() if "PerformanceModel" in first)
    estimates = PerformanceModel(view.monitor, np.asarray(view.gate), view.dt)
    for name in re.findall(members, model_row):
        assert hasattr(estimates, name), f"the README lists PerformanceModel.{name}"
    actions = {n for first, _ in table_rows("actions") for n in re.findall(r"`actions\.(\w+)",
                                                                             first)}
    assert actions == {n for n in vars(Actions) if not n.startswith("_")}
