"""Where an event-timed sub-span's time goes, on 003's world.

Under event timing, a world whose tasks read input over the WAN runs each model step
as exact sub-spans in one compiled loop (``geosim/engine/subspans.py``). This script
runs ``scenarios/pingan-medium.toml`` event-timed (``--jobs`` jobs, ``--scheduler``),
times that loop (calls, sub-spans, wall time per sub-span, live copies per sub-span) and
captures the loop's arguments at its ``--at``-th call. It then times each kernel a
sub-span calls, on the captured state, in compiled loops of ``--repeat`` calls (no
dispatch from Python in the figures):

- ``flow structure``: the transfers of the live copies' inputs and their resources
  (``flow_kernel``), paid after an input arrives;
- ``allocation``: max-min (or equal) sharing of those transfers (``allocate``), paid with
  the flow structure;
- ``rates and next event``: every live copy's and transfer's rate and the time to the
  first completion (``rates``, ``first_event``);
- ``availability mean``: the time-average availability of the busy slots over the
  sub-span (``renewal_mean``; with shared slot streams every slot moves on: the phase
  changes due are looked for block by block, skipping blocks of 64 slots whose earliest
  change is later);
- ``step``: the copies and transfers moved through the sub-span at those rates
  (``finish_kernel``, ``apply``);
- ``traffic``: the MB each link and gate carried (``account_kernel``).

One line of JSON per figure, then a table. Usage:

    python benchmarks/bench_subspans.py [--jobs 100] [--scheduler pingan] [--at 1500]
        [--repeat 200] [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import copy
import inspect
import json
import time
from pathlib import Path

import numpy as np
from numba import njit

import geosim.engine.core as core
import geosim.engine.subspans as subspans
from geosim import GeoModel, load_scenario
from geosim.engine.records import Flows
from geosim.engine.sharing import allocate, empty_memory
from geosim.engine.step import apply, finish_kernel, first_event, rates
from geosim.engine.tables import CopyCols, InputCols
from geosim.engine.transfers import account_kernel, flow_kernel
from geosim.processes import renewal_mean
from geosim.scenario import parse_override

ROOT = Path(__file__).resolve().parents[1]
NO_MOVE = np.empty(0, dtype=np.int64)


@njit
def _flows(k, live, copies, inputs, routes, n_clusters, eps):
    keys, ids, dense, ptr, route_res, epoch = routes
    for _ in range(k):
        out = flow_kernel(live, copies, inputs, NO_MOVE, NO_MOVE, keys, ids, dense, ptr,
                          route_res, epoch, n_clusters, 1.0 - eps)
    return out[:-1]


@njit
def _allocate(k, flows, cap, reachable, maxmin, memory):
    local = np.full(cap.size, -1, dtype=np.int64)
    for _ in range(k):      # a whole allocation each time: from the same (empty) memory
        bw, _active, _memory = allocate(flows, NO_MOVE, NO_MOVE, cap, reachable, maxmin,
                                        np.empty(0), local, memory)
    return bw


@njit
def _rates(k, live, copies, inputs, task_work, power, level, fetch, flows, bw):
    for _ in range(k):
        r = rates(live, CopyCols(*copies), InputCols(*inputs), task_work, power, level,
                  fetch, True, Flows(*flows), bw)
        first_event(r, fetch)
    return r


@njit
def _mean(k, avail, epoch, t_end, t, slots):
    factor = np.empty(slots.size)
    for i in range(k):
        renewal_mean(avail, epoch + i + 1, t_end, t, slots, factor, False)
    return factor


@njit
def _step(k, live, copies, inputs, r, t, dt, eps, fetch, flows, best_time, best_pos):
    c, i = CopyCols(*copies), InputCols(*inputs)
    for _ in range(k):
        elapsed, win_at, _, _, _, _ = finish_kernel(live, c.task, r.left, t, dt,
                                                    dt * (1.0 + eps), best_time, best_pos)
        apply(live, elapsed, r, win_at, fetch, True, Flows(*flows), c, i, 1.0 + eps)


@njit
def _traffic(k, flows, moved, traffic, scratch):
    f = Flows(*flows)
    for _ in range(k):
        account_kernel(f.src, f.dst, moved, f.res, f.starts, 1.0, traffic, scratch[0],
                       scratch[1], scratch[2])


def run_and_capture(jobs: int, scheduler: str, at: int, overrides: dict) -> tuple:
    """Run the world event-timed; return the loop's figures and its ``at``-th arguments."""
    loop = core.run_subspans
    seen = {"calls": 0, "spans": 0, "seconds": 0.0, "live": 0, "args": None}

    def timed(*args):
        seen["calls"] += 1
        if seen["calls"] == at:
            seen["args"] = copy.deepcopy(args)
        start = time.perf_counter()
        out = loop(*args)
        seen["seconds"] += time.perf_counter() - start
        seen["spans"] += out[3]
        seen["live"] += args[4].size * out[3]
        return out

    scenario = load_scenario(ROOT / "scenarios" / "pingan-medium.toml",
                             {"workload.n_jobs": jobs, "run.timing": "event", **overrides})
    model = GeoModel(scenario, scheduler)
    core.run_subspans = timed
    try:
        start = time.perf_counter()
        model.run()
        wall = time.perf_counter() - start
    finally:
        core.run_subspans = loop
    if seen["args"] is None:
        raise SystemExit(f"bench_subspans.py: --at {at}: the loop was called only "
                         f"{seen['calls']} times")
    spans = max(seen["spans"], 1)
    figures = {"run seconds": wall, "loop seconds": seen["seconds"],
               "loop calls": seen["calls"], "sub-spans": seen["spans"],
               "us per sub-span": seen["seconds"] / spans * 1e6,
               "live copies per sub-span": seen["live"] / spans}
    return figures, seen["args"]


#: The loop's arguments :func:`kernel_times` reads, by name.
KERNEL_INPUTS = ("t", "eps", "live", "copies", "inputs", "task_work", "power", "avail",
                 "epoch", "routes", "n_clusters", "cap", "reachable", "maxmin", "fetch",
                 "traffic", "scratch", "best_time", "best_pos")


def loop_arguments(args: tuple) -> dict:
    """The captured arguments of the loop by its parameters' names."""
    names = inspect.signature(subspans.run_subspans.py_func).parameters
    return dict(zip(names, args, strict=True))


def kernel_times(args: tuple, repeat: int) -> dict[str, float]:
    """Microseconds per call of each kernel a sub-span calls, on the captured state."""
    a = loop_arguments(args)
    (t, eps, live, copies, inputs, task_work, power, avail, epoch, routes, n_clusters, cap,
     reachable, maxmin, fetch, traffic, scratch, best_time, best_pos) = (
        a[name] for name in KERNEL_INPUTS)
    slots = copies[1][live].astype(np.int64)
    level = avail[1][slots].copy() if avail[0].size else np.empty(0)

    def timed(kernel, *kargs):
        kernel(2, *kargs)                               # compile and warm
        start = time.perf_counter()
        out = kernel(repeat, *kargs)
        return (time.perf_counter() - start) / repeat * 1e6, out

    out = {}
    out["flow structure"], flows = timed(_flows, live, copies, inputs, routes, n_clusters,
                                         eps)
    out["allocation"], bw = timed(_allocate, flows, cap, reachable, maxmin,
                                     empty_memory(cap.size))
    out["rates and next event"], r = timed(_rates, live, copies, inputs, task_work, power,
                                           level, fetch, flows, bw)
    if avail[0].size:
        out["availability mean"], _ = timed(_mean, avail, epoch, t + 1e-9, t, slots)
    out["step"], _ = timed(_step, live, copies, inputs, r, t, 1e-9, eps, fetch, flows,
                           best_time, best_pos)
    moved = np.full(Flows(*flows).idx.size, 1e-6)
    out["traffic"], _ = timed(_traffic, flows, moved, traffic, scratch)
    out["(transfers)"] = float(Flows(*flows).idx.size)
    out["(slots)"] = float(avail[2].size)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--scheduler", default="pingan")
    parser.add_argument("--at", type=int, default=1500, help="the loop call to capture")
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE")
    args = parser.parse_args()
    overrides = dict(parse_override(item) for item in args.overrides)
    figures, captured = run_and_capture(args.jobs, args.scheduler, args.at, overrides)
    kernels = kernel_times(captured, args.repeat)
    for name, value in {**figures, **kernels}.items():
        print(json.dumps({"figure": name, "value": round(value, 3)}))
    print("\n| figure | value |\n|---|---|")
    for name, value in figures.items():
        print(f"| {name} | {value:,.0f} |" if isinstance(value, int) else
              f"| {name} | {value:,.1f} |")
    print(f"| live copies at call {args.at} | {captured[4].size} |")
    for name, value in kernels.items():
        print(f"| {name} | {value:,.0f} |" if name.startswith("(") else
              f"| {name} | {value:,.1f} µs |")


if __name__ == "__main__":
    main()
