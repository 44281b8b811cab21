"""Threads for the kernels that split a large span's work: whether, and in what parts.

A few kernels have a *wide* variant (``parallel=True``) that runs the same per-element
loops over the parts of :func:`part_bounds`, one part per thread: the live copies'
rates and progress (:mod:`geosim.engine.step`), their slots' availability
(:mod:`geosim.processes`), the listing of their transfers
(:mod:`geosim.engine.transfers`) and the shortest-path trees of new sources
(:mod:`geosim.routes`). Each element is written by one part only and no floating-point
sum crosses parts, so a wide kernel gives the same numbers bit for bit whatever the
number of threads. Engines call them only from :data:`WIDE_FROM` elements (below, the
threads' wake-up costs more than it saves) and when Numba has more than one thread: by
default one per core; ``NUMBA_NUM_THREADS`` sets it, and the worker processes of a sweep
run on one thread each (:func:`one_thread`), the sweep's parallelism being its
processes.
"""

from __future__ import annotations

import os

import numba
import numpy as np

from geosim.jit import njit

#: Elements (live copies, transfers, slots asked for) from which a kernel's wide variant
#: is used.
WIDE_FROM = 16_384

# Between parts the threads sleep rather than spin, unless the environment says
# otherwise: spinning, OpenMP's default, took a second core's time and made the first
# 1 800 steps of edge-10k 5% slower (81.7 s against 78.0 s, 137 s of CPU against 99 s).
# It must be set before Numba starts its threads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def wide(n: int) -> bool:
    """Whether work on ``n`` elements should go to a wide kernel."""
    # The size is asked first: reading the threads starts Numba's pool of threads.
    return n >= WIDE_FROM and numba.get_num_threads() > 1


def one_thread() -> None:
    """Run this process's wide kernels on one thread (a worker of a parallel sweep)."""
    numba.set_num_threads(1)


@njit(cache=True)
def part_bounds(n, parts):  # pragma: no cover - compiled
    """Bounds of ``parts`` contiguous parts of ``0..n`` (part ``k``: ``b[k]:b[k + 1]``)."""
    bounds = np.empty(parts + 1, dtype=np.int64)
    for k in range(parts + 1):
        bounds[k] = n * k // parts
    return bounds
