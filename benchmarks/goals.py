"""geosim's performance goals: each figure measured beside its limit, in one run.

Every goal is measured ``--repeat`` times (minimum and median) by the benchmark that
owns its figure, so the figures are those of ``bench_startup.py`` (fresh processes) and
``bench_core.py`` (a fresh process per run, the model built and run with the kernels
loaded). A goal is *met* when its median is within the limit, *by the minimum only* when
only its fastest sample is. Goals (``name``: figure, limit):

- ``help``: ``geosim --help``, whole process: 0.2 s.
- ``quickstart``: ``geosim run scenarios/quickstart.toml --scheduler fifo``, whole
  process: 1.2 s.
- ``world-002``: 002's world (``redundancy-gamma``, λ = 2, 20 000 jobs, event timing,
  SRPT+R) through ``geosim.run``: the call in a fresh process 0.5 s, warm 0.2 s.
- ``medium``: the whole ``pingan-medium`` (2 000 jobs), model build included: Fair 4 s,
  PingAn (ε = 0.6) 8 s.
- ``activity``: the same 300 ``pingan-medium`` jobs on Barabási–Albert worlds of 1 000
  and of 100 clusters with the edge settings (keyed slot streams, no time series), for
  Fair, PingAn, Flutter+Mantri and Iridium: time and peak memory at most 1.3 times.
- ``maxmin``: the whole ``pingan-medium`` with Fair, slotted, under max-min sharing
  against equal sharing: at most 1.5 times.
- ``event``: 003's world (300 ``pingan-medium`` jobs, PingAn, ε = 0.6) event-timed against
  slotted: at most 1.0 times.
- ``edge`` (long): ``scenarios/edge-10k.toml`` (10 000 clusters, 20 000 jobs) with Fair:
  5 minutes and 4 GiB.
- ``run-full`` (long): ``make run-full`` (150 runs): 10 minutes.
- ``edge-pingan`` (hours; only when named): ``edge-10k`` with PingAn: 10 minutes.

The default runs all but the long ones; ``--long`` adds ``edge`` and ``run-full``, each
measured once. The machine's other load moves every figure: report the day's figures
with the load they had. Usage:

    python benchmarks/goals.py [--repeat 3] [--long] [GOAL ...]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import subprocess
import sys
import time
from pathlib import Path

import bench_core
import bench_startup
from bench_core import ROOT

QUICK = ("help", "quickstart", "world-002", "medium", "activity", "maxmin", "event")
LONG = ("edge", "run-full")
GOALS = (*QUICK, *LONG, "edge-pingan")
ACTIVITY = ("fair", "pingan", "fm", "iridium")
EVENT_003 = {"workload.n_jobs": 300}


def _core(case: str, extra: dict | None = None) -> dict:
    """One run of ``bench_core.py``'s ``case`` in a fresh process: its figures."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=bench_core._run, args=(case, queue, extra))
    proc.start()
    figures = queue.get()
    proc.join()
    return figures


def _startup(case: str, figure: str, repeat: int) -> list[float]:
    """``repeat`` samples of ``bench_startup.py``'s ``figure`` (of its ``case``)."""
    bench_startup.measure(case, ROOT)          # untimed: bytecode written, files cached
    return [v for _ in range(repeat) for v in bench_startup.measure(case, ROOT)[figure]]


def _walls(case: str, repeat: int) -> list[float]:
    """Wall seconds of ``repeat`` runs of ``case``."""
    return [_core(case)["wall_seconds"] for _ in range(repeat)]


def _ratios(top: str, bottom: str, repeat: int, extra_top: dict | None = None,
            extra_bottom: dict | None = None) -> tuple[list[float], float]:
    """``repeat`` alternating runs of cases ``top`` and ``bottom``: the time ratio of each
    pair, and the ratio of their largest peak memories."""
    pairs = [(_core(top, extra_top), _core(bottom, extra_bottom)) for _ in range(repeat)]
    memory = (max(t["peak_memory_mib"] for t, _ in pairs)
              / max(b["peak_memory_mib"] for _, b in pairs))
    return [t["wall_seconds"] / b["wall_seconds"] for t, b in pairs], memory


def measure(goal: str, repeat: int) -> list[tuple[str, list[float], float, str]]:
    """Rows of ``goal``: (figure, samples, limit, unit)."""
    if goal == "help":
        return [("`geosim --help`", _startup("help", "geosim --help", repeat), 0.2, "s")]
    if goal == "quickstart":
        return [("quickstart run, fifo, whole process",
                 _startup("run", "geosim run (quickstart, fifo)", repeat), 1.2, "s")]
    if goal == "world-002":
        fresh = _startup("world", "002 world, fresh process: the call alone", repeat)
        warm = bench_startup.measure("warm", ROOT)["002 world, warm call"]
        return [("002 world, the call in a fresh process", fresh, 0.5, "s"),
                ("002 world, the call warm", warm, 0.2, "s")]
    if goal == "medium":
        return [("`pingan-medium`, Fair", _walls("b", repeat), 4.0, "s"),
                ("`pingan-medium`, PingAn", _walls("d", repeat), 8.0, "s")]
    if goal == "activity":
        rows = []
        for key in ACTIVITY:
            time_ratios, memory = _ratios(f"e1000-{key}", f"e100-{key}", repeat)
            name = bench_core.SCALE_SCHEDULERS[key]
            rows += [(f"1 000 over 100 clusters, {name}: time", time_ratios, 1.3, "×"),
                     (f"1 000 over 100 clusters, {name}: peak memory", [memory], 1.3, "×")]
        return rows
    if goal == "maxmin":
        return [("`pingan-medium`, Fair: max-min over equal sharing",
                 _ratios("b", "b", repeat, None, {"links.sharing": "equal"})[0], 1.5, "×")]
    if goal == "event":
        return [("003's world (300 jobs, PingAn): event-timed over slotted",
                 _ratios("d", "d", repeat, {**EVENT_003, "run.timing": "event"},
                         EVENT_003)[0], 1.0, "×")]
    if goal in ("edge", "edge-pingan"):
        scheduler = "fair" if goal == "edge" else "pingan"
        minutes, peak = _command(["geosim", "run", "scenarios/edge-10k.toml", "--scheduler",
                                  scheduler, "--out", "results/goals-edge", "--no-progress"])
        return [(f"`edge-10k`, {scheduler}: time", [minutes], 5.0 if goal == "edge" else 10.0,
                 "min"),
                (f"`edge-10k`, {scheduler}: peak memory", [peak], 4.0, "GiB")]
    return [("`make run-full`", [_command(["make", "run-full"])[0]], 10.0, "min")]


#: Runs its arguments as a command and prints the command's peak memory (KiB): a fresh
#: parent, so that no other child's peak is counted.
PEAK = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
        "capture_output=True); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def _command(cmd: list[str]) -> tuple[float, float]:
    """Minutes of ``cmd`` run in the checkout, and its peak memory (GiB)."""
    if cmd[0] == "geosim":
        cmd = [str(Path(sys.executable).with_name("geosim")), *cmd[1:]]
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", PEAK, *cmd], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return (time.perf_counter() - start) / 60, int(out.split()[-1]) / 2**20


def verdict(samples: list[float], limit: float) -> str:
    if statistics.median(samples) <= limit:
        return "met"
    return "by the minimum only" if min(samples) <= limit else "not met"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("goals", nargs="*", metavar="GOAL",
                        help=f"goals to measure, of {', '.join(GOALS)} (default: "
                             f"{', '.join(QUICK)})")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--long", action="store_true", help=f"add {', '.join(LONG)}")
    args = parser.parse_args()
    unknown = sorted(set(args.goals) - set(GOALS))
    if unknown:
        parser.error(f"unknown goals {unknown}; choose from {', '.join(GOALS)}")
    goals = args.goals or [*QUICK, *(LONG if args.long else ())]
    rows = []
    for goal in goals:
        for figure, samples, limit, unit in measure(goal, args.repeat):
            rows.append((goal, figure, samples, limit, unit))
            print(f"{goal}: {figure}: {', '.join(f'{v:.3f}' for v in samples)} {unit}",
                  flush=True)
    print("\n| goal | figure | min / median | limit | |\n|---|---|---|---|---|")
    for goal, figure, samples, limit, unit in rows:
        print(f"| {goal} | {figure} | {min(samples):.2f} / {statistics.median(samples):.2f} "
              f"{unit} | {limit:g} {unit} | {verdict(samples, limit)} |")


if __name__ == "__main__":
    main()
