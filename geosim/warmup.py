"""Compile geosim's kernels ahead of the first run.

geosim's hot loops are Numba kernels cached on disk (``cache=True``): the first run of a
fresh install compiles them, which takes minutes for the whole set (a 30-job PingAn run
takes 105 s on a cold cache and 6 s on a warm one), and every later process loads them in
milliseconds. :func:`compile_kernels` pays that cost once, in parallel, by running every
registered scheduler briefly on the small worlds of :mod:`geosim.testing`: the geo world
(every process on), one cluster of queueing slots under slotted and event timing, and
004's flows of MapReduce stages; one run on the geo world in conformance mode
(:mod:`geosim.invariants`), and one with every kernel's wide variant
(:mod:`geosim.threads`). ``geosim compile`` and ``make`` call it after
installing.

A kernel that these runs do not reach still compiles on first use, as before; nothing here
changes a result.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor

#: Schedulers whose kernels take longest to compile go first, so that the parallel
#: workers finish together.
_FIRST = ("pingan", "flutter+mantri", "srpt+r", "flowflex", "iridium")


def _runs() -> list[tuple[str, str]]:
    """``(world, scheduler)`` pairs: every registered scheduler on the worlds it runs on."""
    from geosim.schedulers import registered
    names = sorted(registered(), key=lambda n: (
        _FIRST.index(n) if n in _FIRST else len(_FIRST), n))
    runs = [("geo", name) for name in names]
    runs += [("closed-slot", "srpt+r"), ("closed-event", "srpt+r"),
             ("closed-event", "fair+r"), ("closed-event", "laps+r"), ("flows", "flowflex"),
             ("geo-checked", "fifo"), ("geo-wide", "fair")]
    return runs


def _run(world: str, scheduler: str) -> float:
    """Run ``scheduler`` briefly on ``world``; the seconds it took."""
    from geosim import threads
    from geosim.model import GeoModel
    from geosim.scenario import load_scenario
    from geosim.testing import closed_world, flows_world, geo_world
    start = time.perf_counter()
    if world.startswith("geo"):
        config = geo_world(n_jobs=4, scheduler=scheduler)
    elif world == "flows":
        config = flows_world(scheduler=scheduler)
    else:
        config = closed_world(slots=3, rate=0.2, n_jobs=20, scheduler=scheduler)
        config["run"]["timing"] = world.removeprefix("closed-")
    wide_from = threads.WIDE_FROM
    if world == "geo-wide":         # every wide kernel, keyed slot streams included
        config["clusters"] = {"slot_streams": "keyed"}
        threads.WIDE_FROM = 0
    try:
        GeoModel(load_scenario(config), check_invariants=world == "geo-checked").run()
    finally:
        threads.WIDE_FROM = wide_from
    return time.perf_counter() - start


def compile_kernels(jobs: int | None = None) -> float:
    """Compile (or load from Numba's cache) the kernels every scheduler uses.

    Args:
        jobs: Worker processes (default: every core). Each compiles the kernels of the
            runs it takes; a kernel two workers both need is compiled by each (Numba's
            cache writes are atomic).

    Returns:
        Wall seconds taken.
    """
    start = time.perf_counter()
    runs = _runs()
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(runs)))
    if jobs == 1:
        for world, scheduler in runs:
            _run(world, scheduler)
    else:
        with ProcessPoolExecutor(jobs) as pool:
            list(pool.map(_run, *zip(*runs, strict=True)))
    return time.perf_counter() - start
