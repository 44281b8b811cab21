"""What a command or an import loads: only what it uses.

Each case runs in a fresh interpreter and reports which modules ended up imported, so the
fixed cost every command pays stays what the command needs (``benchmarks/
bench_startup.py`` measures the times; no test here asserts one).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from geosim.schedulers import registered, registry

ROOT = Path(__file__).resolve().parent.parent
QUICK = str(ROOT / "scenarios" / "quickstart.toml")
GAMMA = str(ROOT / "scenarios" / "redundancy-gamma.toml")
#: Packages (or modules) a command may not need, by the name ``sys.modules`` has.
HEAVY = ("numpy", "pandas", "numba", "scipy", "scipy.stats", "scipy.optimize", "mesa",
         "networkx", "matplotlib", "pyarrow", "viz")


def loaded(code: str) -> set[str]:
    """The modules of :data:`HEAVY` and the scheduler modules that ``code`` imports."""
    probe = (f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules "
             f"if m in {HEAVY!r} or m.startswith('geosim.schedulers.'))))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def scheduler_modules(modules: set[str]) -> set[str]:
    """The modules among ``modules`` that register built-in schedulers or hold their parts."""
    parts = {f"geosim.schedulers.{name}" for name in (
        "compose", "dolly", "flutter", "iridium", "late", "lexmin", "mantri", "spark")}
    return {m for m in modules if m in registry.BUILTIN_MODULES or m in parts
            or m.startswith("geosim.schedulers.pingan.")}


def test_importing_the_package_loads_nothing_numerical():
    assert loaded("import geosim, geosim.errors, geosim.scenario") & {
        "pandas", "numba", "scipy", "mesa", "matplotlib", "pyarrow"} == set()


def test_validate_loads_neither_mesa_nor_pandas_nor_other_schedulers():
    got = loaded(f"from geosim.cli import main\nmain(['validate', {QUICK!r}])")
    assert got & {"mesa", "pandas", "scipy.stats", "scipy.optimize", "matplotlib", "viz"} == set()
    assert scheduler_modules(got) == {"geosim.schedulers.fair"}


def test_a_run_imports_only_the_scheduler_it_builds(tmp_path):
    got = loaded(f"from geosim.cli import main\n"
                 f"main(['run', {QUICK!r}, '--scheduler', 'fifo', '--out', "
                 f"{str(tmp_path / 'out')!r}, '--no-progress'])")
    assert got & {"scipy.stats", "scipy.optimize", "matplotlib", "viz"} == set()
    assert scheduler_modules(got) == {"geosim.schedulers.fifo"}


def test_the_002_world_imports_its_pool_policy_alone():
    got = loaded(f"import geosim\ngeosim.run({GAMMA!r}, scheduler='srpt+r', "
                 "overrides={'workload.n_jobs': 50, 'run.timing': 'event'})")
    assert got & {"scipy.stats", "scipy.optimize", "matplotlib"} == set()
    assert scheduler_modules(got) == {"geosim.schedulers.srpt_r"}


def test_the_builtin_map_names_every_builtin_and_only_them():
    builtins = {name for name, cls in registered().items() if cls.__module__.startswith("geosim.")}
    assert set(registry.BUILTINS) == builtins
    assert set(registry.BUILTIN_MODULES) == set(registry.BUILTINS.values())


def test_importing_a_builtins_module_registers_it():
    # In a fresh interpreter, each module of the map is imported in turn: every name that
    # the import registers must map to a module imported by then, itself or one it imports.
    code = ("import json, sys\nfrom importlib import import_module\n"
            "from geosim.schedulers import registry\nwrong = []\n"
            "for module in registry.BUILTIN_MODULES:\n"
            "    before = set(registry._REGISTRY)\n"
            "    import_module(module)\n"
            "    for name in set(registry._REGISTRY) - before:\n"
            "        if registry.BUILTINS.get(name) not in sys.modules:\n"
            "            wrong.append([name, module])\n"
            "print(json.dumps(wrong))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []


def test_a_composite_leaves_scipy_optimize_to_iridium():
    got = loaded("from geosim.schedulers import make_scheduler\n"
                 "make_scheduler('flutter+mantri')")
    assert "scipy.optimize" not in got and "geosim.schedulers.compositions" in got
