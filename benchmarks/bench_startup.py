"""Fixed costs a user pays on every command: start-up, imports and loading compiled kernels.

Every figure is measured in fresh processes, ``--repeat`` times (default 5), and given
as minimum / median wall seconds:

- ``help``: ``geosim --help``;
- ``validate``: ``geosim validate scenarios/quickstart.toml``;
- ``run``: ``geosim run scenarios/quickstart.toml --scheduler fifo --out <tmp>
  --no-progress`` (the result tables written);
- ``import``: ``python -c "import geosim.model"``;
- ``world``: the 002 world (``redundancy-gamma`` at λ = 2, 20 000 jobs, event timing,
  SRPT+R) through ``geosim.run`` in a fresh process: the whole process, the import of
  ``geosim.model`` and the call alone;
- ``warm``: the same call again in the process that made it once (each later call a
  sample).

Then, for the ``run`` command and the 002 world, where the time of a fresh process goes:

- ``imports``: ``python -X importtime``, the import time of each top-level package (the
  sum of its modules' own times, so the rows add up to the whole), median of the repeats;
- ``kernels``: Numba's kernels loaded from its cache during the run (counted with
  Numba's ``numba:compiler_lock`` events: one outermost lock span per kernel loaded),
  each one's load time, and the one-time set-up of Numba's compilation context that the
  first load pays (measured before the run, so the loads exclude it);
- ``mesa``: ``import mesa`` and its parts (``-X importtime``): the whole, SciPy's spatial
  module that ``mesa.experimental`` imports, ``mesa.model`` alone (its module logger
  inspects the call stack, which costs more the more modules are loaded), tqdm's
  ``auto`` module and pandas; after what ``geosim run`` imports before Mesa, and after
  pandas and Numba as well;
- ``profile``: the top of a cProfile of one fresh process (``--profile``, off by
  default: it prints many lines).

Each case first runs once untimed in each checkout (Python writes its bytecode cache,
the files are read into memory). With ``--against DIR`` each measurement is followed by
the same one in checkout ``DIR`` (a ``git worktree`` of an older commit, say), so a
before/after comparison is measured under the same load. The machine is shared: only
figures of one run compare. Usage:

    python benchmarks/bench_startup.py [--repeat 5] [--against DIR] [--profile] [CASE ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUICK = "scenarios/quickstart.toml"
WORLD = ("scenarios/redundancy-gamma.toml", "srpt+r",
         {"workload.arrival_rate": 2.0, "workload.n_jobs": 20_000, "run.timing": "event"})
COMMANDS = {"help": "geosim --help", "validate": "geosim validate (quickstart)",
            "run": "geosim run (quickstart, fifo)", "import": "import geosim.model"}
CASES = (*COMMANDS, "world", "warm", "imports", "kernels", "mesa")
#: What a process has imported before Mesa: as ``geosim run`` does (NumPy and NetworkX,
#: from the scenario), and with pandas, Numba and its BLAS check's SciPy too.
BEFORE_MESA = {"geosim's order": "numpy, networkx",
               "after pandas and Numba": "numpy, networkx, pandas, numba, scipy.linalg"}

#: The 002 world's call, timed inside a fresh process (``{warm}``: calls after the first).
WORLD_CODE = """
import json, time
t0 = time.perf_counter()
import geosim
run = geosim.run                      # imports geosim.model
t1 = time.perf_counter()
kw = dict(scheduler={scheduler!r}, seed=1, overrides={overrides!r})
run({scenario!r}, **kw)
t2 = time.perf_counter()
warm = []
for _ in range({warm}):
    start = time.perf_counter()
    run({scenario!r}, **kw)
    warm.append(time.perf_counter() - start)
print(json.dumps({{"import": t1 - t0, "call": t2 - t1, "warm": warm}}))
"""

#: The kernels a run loads from Numba's cache, and what each load takes.
KERNELS_CODE = """
import json, sys, time
import numba.core.event as ev
from numba.core.registry import cpu_target
import geosim.model
start = time.perf_counter()
cpu_target.target_context.refresh()     # the set-up the first load would pay
init = time.perf_counter() - start
with ev.install_recorder("numba:compiler_lock") as rec:
    {call}
depth, opened, loads = 0, 0.0, []
for stamp, event in rec.buffer:
    if event.is_start:
        depth += 1
        opened = stamp if depth == 1 else opened
    else:
        depth -= 1
        if depth == 0:
            loads.append(stamp - opened)
print(json.dumps({{"init": init, "loads": loads}}))
"""

RUN_CALL = ("from geosim.cli import main; "
            "main(['run', {quick!r}, '--scheduler', 'fifo', '--out', {out!r}, '--no-progress'])")
WORLD_CALL = ("geosim.model.run({scenario!r}, scheduler={scheduler!r}, seed=1, "
              "overrides={overrides!r})")


def _env(root: Path) -> dict[str, str]:
    """The environment of a measured process: ``root``'s geosim first on the path.

    Python writes and reads its bytecode cache as on a user's machine, even where this
    benchmark runs with ``PYTHONDONTWRITEBYTECODE`` (else every import compiles source).
    """
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _geosim() -> list[str]:
    """The ``geosim`` command: the console script beside this Python, else ``-m``."""
    script = Path(sys.executable).with_name("geosim")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "geosim.cli"]


def _command(case: str, out: str) -> list[str]:
    return {
        "help": [*_geosim(), "--help"],
        "validate": [*_geosim(), "validate", QUICK],
        "run": [*_geosim(), "run", QUICK, "--scheduler", "fifo", "--out", out,
                "--no-progress"],
        "import": [sys.executable, "-c", "import geosim.model"],
    }[case]


def _wall(cmd: list[str], root: Path) -> tuple[float, str]:
    """Wall seconds of a fresh process running ``cmd`` in ``root``, and its output."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, env=_env(root), capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed in {root}:\n{proc.stderr[-2000:]}")
    return wall, proc.stdout


def _world_code(warm: int) -> str:
    scenario, scheduler, overrides = WORLD
    return WORLD_CODE.format(scenario=scenario, scheduler=scheduler, overrides=overrides,
                             warm=warm)


def measure(case: str, root: Path) -> dict[str, list[float]]:
    """One sample of ``case`` in checkout ``root``: named lists of seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        if case in COMMANDS:
            return {COMMANDS[case]: [_wall(_command(case, f"{tmp}/out"), root)[0]]}
        if case == "world":
            wall, out = _wall([sys.executable, "-c", _world_code(0)], root)
            inner = json.loads(out.strip().splitlines()[-1])
            return {"002 world, fresh process: whole": [wall],
                    "002 world, fresh process: import geosim.model": [inner["import"]],
                    "002 world, fresh process: the call alone": [inner["call"]]}
        if case == "warm":
            _, out = _wall([sys.executable, "-c", _world_code(3)], root)
            return {"002 world, warm call": json.loads(out.strip().splitlines()[-1])["warm"]}
        if case == "imports":
            return _imports(root, f"{tmp}/out")
        if case == "mesa":
            return _mesa(root)
        return _kernels(root, f"{tmp}/out")


def _subtree(stderr: str, root: str) -> dict[str, tuple[float, float]]:
    """``-X importtime``'s (own, cumulative) seconds of ``root``'s modules, by name.

    Only the modules imported under the last top-level import of ``root`` count.
    """
    rows = []
    for line in stderr.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            own, total, name = line.removeprefix("import time:").split("|")
            rows.append((name.rstrip(), int(own) / 1e6, int(total) / 1e6))
    end = max(i for i, row in enumerate(rows) if row[0] == f" {root}")
    start = end
    while start > 0 and rows[start - 1][0].startswith("   "):
        start -= 1
    return {name.strip(): (own, total) for name, own, total in rows[start:end + 1]}


def _mesa(root: Path) -> dict[str, list[float]]:
    """What ``import mesa`` costs, and its parts, after what a run imports before it."""
    rows: dict[str, list[float]] = {}
    for label, before in BEFORE_MESA.items():
        proc = subprocess.run([sys.executable, "-X", "importtime", "-c",
                               f"import {before}\nimport mesa"], cwd=root, env=_env(root),
                              capture_output=True, text=True, check=True)
        tree = _subtree(proc.stderr, "mesa")
        zero = (0.0, 0.0)
        rows[f"mesa, {label}: import mesa"] = [tree["mesa"][1]]
        rows[f"mesa, {label}: scipy.spatial"] = [tree.get("scipy.spatial", zero)[1]]
        rows[f"mesa, {label}: mesa.model alone"] = [tree.get("mesa.model", zero)[0]]
        rows[f"mesa, {label}: tqdm.auto"] = [tree.get("tqdm.auto", zero)[1]]
        rows[f"mesa, {label}: pandas"] = [tree.get("pandas", zero)[1]]
    return rows


def _imports(root: Path, out: str) -> dict[str, list[float]]:
    """Import seconds by top-level package (``-X importtime``) of the ``run`` command."""
    code = RUN_CALL.format(quick=QUICK, out=out)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], cwd=root,
                          env=_env(root), capture_output=True, text=True, check=True)
    by_package: dict[str, float] = {}
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, _, name = line.removeprefix("import time:").split("|")
        package = name.strip().split(".")[0]
        by_package[package] = by_package.get(package, 0.0) + int(own) / 1e6
    top = sorted(by_package.items(), key=lambda kv: -kv[1])
    rows = {f"import {name}": [sec] for name, sec in top[:9]}
    rows["import (other packages)"] = [sum(sec for _, sec in top[9:])]
    rows["import (all)"] = [sum(by_package.values())]
    return rows


def _kernels(root: Path, out: str) -> dict[str, list[float]]:
    """Kernels the ``run`` command and the 002 world load from Numba's cache."""
    scenario, scheduler, overrides = WORLD
    rows: dict[str, list[float]] = {}
    for label, call in (("run", RUN_CALL.format(quick=QUICK, out=out)),
                        ("world", WORLD_CALL.format(scenario=scenario, scheduler=scheduler,
                                                    overrides=overrides))):
        _, text = _wall([sys.executable, "-c", KERNELS_CODE.format(call=call)], root)
        got = json.loads(text.strip().splitlines()[-1])
        loads = got["loads"]
        rows[f"{label}: Numba set-up"] = [got["init"]]
        rows[f"{label}: kernels loaded"] = [float(len(loads))]
        rows[f"{label}: all loads"] = [sum(loads)]
        rows[f"{label}: one load (median)"] = [statistics.median(loads) if loads else 0.0]
    return rows


def profile(root: Path) -> str:
    """The top of a cProfile of the ``run`` command in a fresh process."""
    with tempfile.TemporaryDirectory() as tmp:
        code = ("import cProfile, pstats\n"
                f"cProfile.run({RUN_CALL.format(quick=QUICK, out=tmp + '/out')!r}, "
                f"{tmp + '/prof'!r})\n"
                f"pstats.Stats({tmp + '/prof'!r}).sort_stats('cumulative').print_stats(30)\n")
        return _wall([sys.executable, "-c", code], root)[1]


def _fmt(values: list[float], count: bool) -> str:
    if not values:
        return ""
    if count:
        return f"{min(values):.0f} / {statistics.median(values):.0f}"
    return f"{min(values):.3f} / {statistics.median(values):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", metavar="CASE",
                        help=f"cases to run, of {', '.join(CASES)} (default: all)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--against", type=Path, help="another checkout to measure alike")
    parser.add_argument("--profile", action="store_true",
                        help="print the top of a cProfile of the run command")
    args = parser.parse_args()
    unknown = set(args.cases) - set(CASES)
    if unknown:
        parser.error(f"unknown cases {sorted(unknown)}; choose from {', '.join(CASES)}")
    args.cases = args.cases or list(CASES)
    roots = {"this": ROOT} | ({"against": args.against.resolve()} if args.against else {})
    samples: dict[str, dict[str, list[float]]] = {label: {} for label in roots}
    for case in args.cases:
        for root in roots.values():     # untimed: writes the bytecode, fills the file cache
            measure(case, root)
        for _ in range(args.repeat):
            for label, root in roots.items():     # interleaved: the same load for both
                for name, values in measure(case, root).items():
                    samples[label].setdefault(name, []).extend(values)
                    print(json.dumps({"checkout": label, "case": case, "figure": name,
                                      "seconds": [round(v, 4) for v in values]}),
                          flush=True)
    head = "| figure | seconds (min / median) |" + (
        " against (min / median) |" if args.against else "")
    print("\n" + head + "\n|---|---|" + ("---|" if args.against else ""))
    for name, values in samples["this"].items():
        count = name.endswith("kernels loaded")
        other = samples.get("against", {}).get(name, [])
        print(f"| {name} | {_fmt(values, count)} |"
              + (f" {_fmt(other, count)} |" if args.against else ""))
    if args.profile:
        for label, root in roots.items():
            print(f"\n== cProfile of the run command ({label}: {root})\n{profile(root)}")


if __name__ == "__main__":
    main()
