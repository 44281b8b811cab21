"""Schedulers from other distributions: the ``geosim.schedulers`` entry points.

Each test writes a real distribution into a temporary directory (a ``*.dist-info``
directory with ``METADATA`` and ``entry_points.txt`` beside its modules), which
``importlib.metadata`` discovers on ``sys.path`` without installing anything. The
in-process tests reload the plugins into a copy of the registry; the command-line tests
run ``geosim`` in a subprocess with ``PYTHONPATH`` pointing at the directory.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from geosim import GeoModel, GeosimError, load_scenario, make_scheduler
from geosim.schedulers import registered, registry, unavailable
from geosim.schedulers.fifo import FIFO

ROOT = Path(__file__).resolve().parent.parent
QUICK = str(ROOT / "scenarios" / "quickstart.toml")

#: A scheduler class for plugins: FIFO's rule, one parameter stored as given.
MINE = '''
from geosim.schedulers import Scheduler
from geosim.schedulers.placement import fill_in_order


class Mine(Scheduler):
    """Arrival order, locality placement."""

    name = "{name}"
    description = "a plugin: arrival order, locality placement"
    event_driven = True

    def __init__(self, label: str = "plain"):
        self.label = label

    def decide(self, view, actions):
        if view.n_ready:
            fill_in_order(view, actions, view.alive_jobs)


def helper():
    """Not a scheduler."""
'''


def make_dist(root: Path, dist: str, entry_points: dict[str, str],
              files: dict[str, str] | None = None) -> None:
    """Write distribution ``dist`` with ``geosim.schedulers`` entry points and source files."""
    # The directory is NAME-VERSION with NAME's dashes as underscores (as pip writes it).
    info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\n{lines}")
    for rel, text in (files or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A registry of the built-ins only, plugins not yet loaded, ``tmp_path`` on sys.path.

    Returns a unique module-name prefix, so modules of one test never shadow another's.
    """
    registry.registered()       # the built-ins register as their modules load, once
    monkeypatch.setattr(registry, "_REGISTRY", {n: c for n, c in registry._REGISTRY.items()
                                            if c.__module__.startswith("geosim.")})
    monkeypatch.setattr(registry, "_UNAVAILABLE", {})
    monkeypatch.setattr(registry, "_plugins_loaded", False)
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"plug_{uuid.uuid4().hex[:10]}"


# ------------------------------------------------------------------ in-process loading
def test_a_class_plugin_is_registered_and_made_by_name(fresh, tmp_path):
    make_dist(tmp_path, "geosim-mine", {"mine": f"{fresh}:Mine"},
              {f"{fresh}.py": MINE.format(name="mine")})
    reg = registered()
    assert reg["mine"].__module__ == fresh and "fifo" in reg
    assert list(reg) == sorted(reg)
    sched = make_scheduler("mine", {"label": "x"})
    assert sched.get_params() == {"label": "x"}
    with pytest.raises(GeosimError, match="mine: got an unexpected keyword argument 'bogus'"):
        make_scheduler("mine", {"bogus": 1})
    assert unavailable() == {}


def test_a_class_registered_by_its_module_may_also_be_named(fresh, tmp_path):
    # The README's pattern: @register for in-process use, and an entry point naming it.
    registered_too = MINE.format(name="mine").replace(
        "\n\nclass Mine", "\nfrom geosim.schedulers import register\n\n\n@register\nclass Mine")
    assert "@register" in registered_too
    make_dist(tmp_path, "geosim-mine", {"mine": f"{fresh}:Mine"},
              {f"{fresh}.py": registered_too})
    assert registered()["mine"].__module__ == fresh and unavailable() == {}


def test_a_module_plugin_registers_its_schedulers(fresh, tmp_path):
    # A package whose __init__ imports a submodule that registers two schedulers.
    two = MINE.format(name="mine-a") + '''

from geosim.schedulers import register

register(Mine)


@register
class MineB(Mine):
    name = "mine-b"
'''
    make_dist(tmp_path, "geosim-two", {"mine-a": fresh},
              {f"{fresh}/__init__.py": f"from {fresh} import impl  # noqa: F401\n",
               f"{fresh}/impl.py": two})
    reg = registered()
    assert reg["mine-a"].__name__ == "Mine" and reg["mine-b"].__name__ == "MineB"
    assert unavailable() == {}


def test_plugins_are_loaded_once(fresh, tmp_path, monkeypatch):
    make_dist(tmp_path, "geosim-mine", {"mine": f"{fresh}:Mine"},
              {f"{fresh}.py": MINE.format(name="mine")})
    calls = []
    real = importlib.metadata.entry_points

    def counting(**kw):
        calls.append(kw)
        return real(**kw)

    monkeypatch.setattr(importlib.metadata, "entry_points", counting)
    registered()
    make_scheduler("mine")
    unavailable()
    assert calls == [{"group": "geosim.schedulers"}]


REFUSED = {
    "import fails": ({"broken": "plug_missing_module_xyz:Broken"}, {},
                     "broken", "cannot load plug_missing_module_xyz:Broken: "
                     "ModuleNotFoundError: No module named 'plug_missing_module_xyz'"),
    "raises on import": ({"boom": "{m}:Mine"}, {"{m}.py": "raise RuntimeError('no GPU\\nhere')"},
                         "boom", "cannot load {m}:Mine: RuntimeError: no GPU"),
    "not a class": ({"notone": "{m}:helper"}, {"{m}.py": MINE.format(name="notone")},
                    "notone", "{m}:helper is not a geosim Scheduler subclass (got function)"),
    "not a scheduler": ({"dict": "{m}:D"}, {"{m}.py": "class D(dict):\n    name = 'dict'\n"},
                        "dict", "{m}:D is not a geosim Scheduler subclass (got type)"),
    "names disagree": ({"other": "{m}:Mine"}, {"{m}.py": MINE.format(name="mine")},
                       "other", "{m}:Mine has name 'mine' but its entry point is 'other'"),
    "clashes with a built-in": ({"fifo": "{m}:Mine"}, {"{m}.py": MINE.format(name="fifo")},
                                "fifo", "{m}:Mine: scheduler name 'fifo' is taken by the "
                                "built-in geosim.schedulers.fifo.FIFO"),
    "module registers nothing": ({"empty": "{m}"}, {"{m}.py": "X = 1\n"},
                                 "empty", "module {m} registers no scheduler"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_bad_plugin_is_refused_in_one_line_and_the_rest_work(fresh, tmp_path, case):
    eps, files, name, reason = REFUSED[case]
    eps = {k: v.format(m=fresh) for k, v in eps.items()}
    files = {k.format(m=fresh): v for k, v in files.items()}
    reason = reason.format(m=fresh)
    make_dist(tmp_path, "geosim-bad", eps, files)
    make_dist(tmp_path, "geosim-good", {"good": f"{fresh}_good:Mine"},
              {f"{fresh}_good.py": MINE.format(name="good")})
    assert reason in unavailable()[name]
    assert "\n" not in unavailable()[name]
    assert "good" in registered() and registered()["fifo"] is FIFO
    if name != "fifo":
        assert name not in registered()
        with pytest.raises(GeosimError) as err:
            make_scheduler(name, source="s.toml")
        assert str(err.value) == f"s.toml: scheduler.name: scheduler {name!r} is unavailable: " \
                                 + unavailable()[name]
    else:
        assert isinstance(make_scheduler("fifo"), FIFO)   # the built-in keeps its name


def test_a_module_plugin_that_clashes_leaves_nothing_behind(fresh, tmp_path):
    clash = MINE.format(name="first") + '''

from geosim.schedulers import register
from geosim.schedulers.fifo import FIFO

register(Mine)


@register
class Again(FIFO):
    name = "srpt"
'''
    make_dist(tmp_path, "geosim-clash", {"first": fresh}, {f"{fresh}.py": clash})
    assert "first" not in registered()
    assert "is taken by the built-in geosim.schedulers.srpt.SRPT" in unavailable()["first"]
    assert registered()["srpt"].__module__ == "geosim.schedulers.srpt"


def test_scenario_names_and_defaults_may_name_a_plugin(fresh, tmp_path):
    make_dist(tmp_path, "geosim-mine", {"mine": f"{fresh}:Mine"},
              {f"{fresh}.py": MINE.format(name="mine")})
    world = {"scheduler": {"name": "mine", "defaults": {"mine": {"label": "from-defaults"}}},
             "topology": {"generator": "single"}, "workload": {"kind": "single", "n_jobs": 3}}
    model = GeoModel(load_scenario(world))
    assert type(model.policy).__name__ == "Mine" and model.policy.label == "from-defaults"
    assert model.run().jobs["finished"].all()


# ------------------------------------------------------------------ the command line
@pytest.fixture
def plugin_dir(tmp_path):
    """A directory holding a working plugin ``mine`` and a distribution of broken ones."""
    root = tmp_path / "site"
    make_dist(root, "geosim-mine", {"mine": "mine_plugin:Mine"},
              {"mine_plugin.py": MINE.format(name="mine")})
    make_dist(root, "geosim-broken", {"broken": "missing_plugin_module:Broken",
                                      "notone": "mine_plugin:helper"})
    return root


def geosim_cli(plugin_dir: Path, *argv: str, cwd: Path) -> subprocess.CompletedProcess:
    path = os.pathsep.join(p for p in (str(plugin_dir), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", "geosim.cli", *argv], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, "PYTHONPATH": path})


def test_cli_lists_runs_and_refuses_plugins(plugin_dir, tmp_path):
    listing = geosim_cli(plugin_dir, "schedulers", cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    rows = {line.split()[0]: line.split(None, 1)[1] for line in listing.stdout.splitlines()}
    assert rows["mine"] == "a plugin: arrival order, locality placement"
    assert rows["broken"] == ("(unavailable: cannot load missing_plugin_module:Broken: "
                              "ModuleNotFoundError: No module named 'missing_plugin_module')")
    assert rows["notone"].startswith("(unavailable: mine_plugin:helper is not a geosim")
    assert {"fifo", "srpt", "pingan"} <= set(rows)

    out = tmp_path / "out"
    ran = geosim_cli(plugin_dir, "run", QUICK, "--scheduler", "mine[label=cli]", "--set",
                     "workload.n_jobs=5", "--set", "topology.n_clusters=6", "--out", str(out),
                     "--no-progress", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert f"results written to {out}/" in ran.stdout
    meta = json.loads((out / "meta.json").read_text())
    assert meta["scheduler"] == "mine" and meta["params"] == {"label": "cli"}

    never = tmp_path / "never"
    bad = geosim_cli(plugin_dir, "run", QUICK, "--scheduler", "broken", "--out", str(never),
                     cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        f"geosim: error: {QUICK}: scheduler.name: scheduler 'broken' is unavailable: cannot "
        "load missing_plugin_module:Broken: ModuleNotFoundError: No module named "
        "'missing_plugin_module'"]
    assert not never.exists()


def test_compare_workers_find_plugins(plugin_dir, tmp_path):
    # Two runs on two workers: the forkserver's processes resolve "mine" by name.
    scenario = tmp_path / "mine.toml"
    scenario.write_text(Path(QUICK).read_text().replace('name = "fair"', 'name = "mine"')
                        + '\n[scheduler.defaults.mine]\nlabel = "from-defaults"\n')
    out = tmp_path / "cmp"
    proc = geosim_cli(plugin_dir, "compare", str(scenario), "--schedulers", "mine,fifo",
                      "--jobs-parallel", "2", "--set", "workload.n_jobs=4", "--set",
                      "topology.n_clusters=6", "--out", str(out), "--no-progress",
                      cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((out / "runs" / "mine" / "seed-1" / "meta.json").read_text())
    assert meta["scheduler"] == "mine" and meta["params"] == {"label": "from-defaults"}
    assert (out / "runs" / "fifo" / "seed-1" / "meta.json").is_file()
