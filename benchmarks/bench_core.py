"""Core performance figures, side by side: one JSON line per run, then a table.

(a) the redundancy paper's world (002 §6): 100 machines, 20 000 Pareto jobs, λ = 2,
    event-timed (002's model), 002's SRPT: one copy per job, machines re-drawn at every
    arrival and departure (a new copy each time: about 3.3 million copies);
(a1) the same with SRPT keeping each job on its machine (``reassign = "keep"``);
(b) ``pingan-medium`` (003 §6.1, 100 clusters, 2000 Montage workflows) with Fair;
(c) the 002 world as in (a) with SRPT+R (002 Alg. 1);
(d) ``pingan-medium`` with PingAn (003 Alg. 1, ε = 0.6), with the share of time spent in
    the scheduler;
(e) ``cloning-google`` (000 §VI: 12 000 machines, 6064 MapReduce jobs, about 160 000
    tasks) with SRPTMS+C (ε = 0.6, r = 3), the whole §VI run;
(f) ``pingan-medium`` with Flutter+Mantri; (g) with Iridium;
(c10) case (c) with 10× the jobs (200 000): cost per job and memory per task at scale;
    with (c) in the same run, the table ends with the memory each task adds from (c) to
    (c10), the fixed cost of a run left out;
(s100-KEY, s1000-KEY) 300 ``pingan-medium`` jobs on a Barabási–Albert world of 100 or
    1 000 clusters with Fair, PingAn, Flutter+Mantri or Iridium (KEY: fair, pingan, fm,
    iridium): with both sizes in one run, the table ends with the time and memory ratio
    of 1 000 to 100 clusters (cost should follow the activity, not the world's size);
(e100-KEY, e1000-KEY) the same with the edge settings: keyed slot streams and no
    time series.

Each run is a fresh process (its peak memory is its own, and compiled kernels load from
the cache as in any new run). The machine is shared, so each case runs ``--repeat`` times
and the table gives the minimum and median wall time. With ``--against DIR`` every run is
followed by the same run of the geosim in checkout ``DIR`` (e.g. a ``git worktree`` of
an older commit), so the two are measured side by side under the same load; the table
then has both. ``--set KEY=VALUE`` (repeatable) changes every case's scenario in this
checkout only, e.g. ``--set links.sharing=equal`` to measure against a checkout older
than that key, whose WAN was shared equally.
Usage:

    python benchmarks/bench_core.py [--repeat 3] [--against DIR] [--set K=V] [a] [a1] ...
"""

from __future__ import annotations

import gc
import json
import multiprocessing as mp
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from queue import Empty

ROOT = Path(__file__).resolve().parents[1]
WORLD_002 = {"workload.arrival_rate": 2.0, "workload.n_jobs": 20_000, "run.timing": "event"}
CASES = {
    "a": ("redundancy-gamma.toml", "srpt+r[max_copies=1,reassign=random]", WORLD_002),
    "a1": ("redundancy-gamma.toml", "srpt+r[max_copies=1]", WORLD_002),
    "b": ("pingan-medium.toml", "fair", {}),
    "c": ("redundancy-gamma.toml", "srpt+r", WORLD_002),
    "c10": ("redundancy-gamma.toml", "srpt+r", {**WORLD_002, "workload.n_jobs": 200_000}),
    "d": ("pingan-medium.toml", "pingan[epsilon=0.6]", {}),
    "e": ("cloning-google.toml", "srptms+c", {}),
    "f": ("pingan-medium.toml", "flutter+mantri", {}),
    "g": ("pingan-medium.toml", "iridium", {}),
}

#: "Cost follows activity" (edge scale): the same 300 pingan-medium jobs on Barabási–Albert
#: worlds of 100 and 1 000 clusters, for the schedulers that scan clusters;
#: ``s<N>-<key>``, e.g. ``s1000-pingan``; ``e<N>-<key>`` the same with the edge settings
#: (keyed slot streams, no time series: ``scenarios/edge-10k.toml``'s).
SCALE_SCHEDULERS = {"fair": "fair", "pingan": "pingan[epsilon=0.6]",
                    "fm": "flutter+mantri", "iridium": "iridium"}
EDGE = {"clusters.slot_streams": "keyed", "run.record_interval": 0.0}
for _n in (100, 1000):
    for _key, _name in SCALE_SCHEDULERS.items():
        CASES[f"s{_n}-{_key}"] = ("pingan-medium.toml", _name, {
            "topology.generator": "barabasi_albert", "topology.n_clusters": _n,
            "workload.n_jobs": 300})
        CASES[f"e{_n}-{_key}"] = ("pingan-medium.toml", _name, {
            **CASES[f"s{_n}-{_key}"][2], **EDGE})

#: Cases run without arguments.
DEFAULT = ["a", "a1", "c", "c10", "b", "d", "f", "g", "e"]


def _run(case: str, queue: mp.Queue, extra: dict | None = None) -> None:
    # geosim loads modules (a scheduler's, SciPy's) on first use: build the case's model
    # once on one job before the clock starts, as any process that has run once has them,
    # and collect that model's garbage, which a process running one model does not hold
    # (on 1 000 clusters its collection took 0.09 s of the timed run's build)
    from geosim.model import GeoModel
    from geosim.results import build_result  # noqa: F401
    from geosim.scenario import load_scenario

    scenario, scheduler, overrides = CASES[case]
    overrides = {**overrides, **(extra or {})}
    GeoModel(load_scenario(ROOT / "scenarios" / scenario, {**overrides, "workload.n_jobs": 1}),
             scheduler)
    gc.collect()
    start = time.perf_counter()
    model = GeoModel(load_scenario(ROOT / "scenarios" / scenario, overrides), scheduler)
    setup = time.perf_counter() - start
    result = model.run()
    wall = time.perf_counter() - start
    s = result.summary
    queue.put({
        "case": case, "scenario": scenario, "scheduler": scheduler, "overrides": overrides,
        "wall_seconds": round(wall, 2), "setup_seconds": round(setup, 2),
        "scheduler_share": round(s["scheduler_seconds"] / wall, 3),
        "steps": s["steps"], "jobs": s["jobs_done"], "tasks": s["tasks"],
        "copies": s["copies_launched"],
        "tasks_per_wall_second": round(s["tasks"] / wall, 1),
        "simulated_seconds_per_wall_second": round(s["simulated_seconds"] / wall, 1),
        "mean_flowtime": round(s["mean_flowtime"], 3),
        "peak_memory_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    })


def _option(argv: list[str], name: str, default: str | None) -> tuple[str | None, list[str]]:
    if name not in argv:
        return default, argv
    at = argv.index(name)
    return argv[at + 1], argv[:at] + argv[at + 2:]


def _sets(argv: list[str]) -> tuple[dict, list[str]]:
    """The ``--set KEY=VALUE`` options of ``argv`` (parsed as ``geosim --set``) and the rest."""
    from geosim.scenario import parse_override
    extra = {}
    while "--set" in argv:
        item, argv = _option(argv, "--set", None)
        key, value = parse_override(item)
        extra[key] = value
    return extra, argv


def _result(proc: mp.Process, queue: mp.Queue, case: str) -> dict:
    """The figures ``proc`` puts in ``queue``; exit with status 1 if it dies without them."""
    while True:
        try:
            return queue.get(timeout=1.0)
        except Empty:
            if not proc.is_alive():
                print(f"bench_core.py: the run of case {case} failed (exit code "
                      f"{proc.exitcode})", file=sys.stderr)
                sys.exit(1)


def _run_in(checkout: str, case: str) -> dict:
    """The figures of ``case`` run by the geosim of another checkout (a fresh process)."""
    env = {**os.environ, "PYTHONPATH": str(Path(checkout).resolve())}
    out = subprocess.run([sys.executable, __file__, "--one", case], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])


def main(argv: list[str]) -> None:
    extra, argv = _sets(argv)
    one, argv = _option(argv, "--one", None)
    if one is not None:               # one run in this process, for --against
        queue = mp.SimpleQueue()
        _run(one, queue, extra)
        print(json.dumps(queue.get()))
        return
    if "-h" in argv or "--help" in argv:
        print(__doc__)
        return
    repeat, argv = _option(argv, "--repeat", "3")
    against, argv = _option(argv, "--against", None)
    unknown = [case for case in argv if case not in CASES]
    if unknown or not repeat.isdigit() or int(repeat) < 1:
        what = f"unknown case {unknown[0]!r}" if unknown else f"--repeat {repeat!r}"
        print(f"bench_core.py: {what} (cases: {', '.join(CASES)}; --repeat: a whole number "
              ">= 1)", file=sys.stderr)
        sys.exit(2)
    from geosim.errors import GeosimError
    from geosim.scenario import load_scenario

    for case in argv or DEFAULT:            # a bad --set: one line before any run
        scenario, _, overrides = CASES[case]
        try:
            load_scenario(ROOT / "scenarios" / scenario, {**overrides, **extra})
        except GeosimError as err:
            print(f"bench_core.py: {err}", file=sys.stderr)
            sys.exit(2)
    ctx = mp.get_context("spawn")
    table = []
    for case in argv or DEFAULT:
        walls, other = [], []
        for _ in range(int(repeat)):
            queue = ctx.Queue()
            proc = ctx.Process(target=_run, args=(case, queue, extra))
            proc.start()
            figures = _result(proc, queue, case)
            proc.join()
            print(json.dumps(figures), flush=True)
            walls.append(figures["wall_seconds"])
            if against:
                theirs = _run_in(against, case)
                print(json.dumps({"against": against, **theirs}), flush=True)
                other.append(theirs["wall_seconds"])
        table.append((case, figures["scenario"], figures["scheduler"], min(walls),
                      statistics.median(walls), figures["peak_memory_mib"],
                      figures["tasks"], other))
    width = max([5] + [len(row[0]) + 1 for row in table])
    print(f"\n{'case':<{width}}{'scenario':<24}{'scheduler':<40}{'min s':>8}{'median s':>10}"
          f"{'peak MiB':>10}{'KiB/task':>10}" + (f"{'against: min s':>16}{'median s':>10}"
                                                 if against else ""))
    for case, scenario, scheduler, low, mid, mib, tasks, other in table:
        print(f"{case:<{width}}{scenario:<24}{scheduler:<40}{low:>8.2f}{mid:>10.2f}{mib:>10.0f}"
              f"{mib * 1024 / max(tasks, 1):>10.2f}"
              + (f"{min(other):>16.2f}{statistics.median(other):>10.2f}" if other else ""))
    peaks = {case: (mib, tasks) for case, *_, mib, tasks, _ in table}
    if "c" in peaks and "c10" in peaks and peaks["c10"][1] > peaks["c"][1]:
        # What each task adds at scale: the fixed cost of a run (interpreter, libraries,
        # compiled kernels) cancels out.
        (small, n_small), (large, n_large) = peaks["c"], peaks["c10"]
        print(f"\nc10 over c: {(large - small) * 1024 / (n_large - n_small):.2f} KiB per task")
    walls = {case: (low, mib) for case, _, _, low, _, mib, *_ in table}
    for key in SCALE_SCHEDULERS:
        for kind in "se":
            if f"{kind}100-{key}" in walls and f"{kind}1000-{key}" in walls:
                (t1, m1), (t10, m10) = walls[f"{kind}100-{key}"], walls[f"{kind}1000-{key}"]
                print(f"{kind}-{key}: 1 000 over 100 clusters: {t10 / t1:.2f}x time (min), "
                      f"{m10 / m1:.2f}x peak memory")


if __name__ == "__main__":
    main(sys.argv[1:])
