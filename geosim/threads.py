"""Threads for the kernels that split a large span's work: whether, and in what parts.

A few kernels have a *wide* variant (``parallel=True``) that runs the same per-element
loops over the parts of :func:`part_bounds`, one part per thread: the live copies'
rates and progress (:mod:`geosim.engine.step`), their slots' availability
(:mod:`geosim.processes`), the listing of their transfers
(:mod:`geosim.engine.transfers`), the shortest-path trees of new sources
(:mod:`geosim.routes`) and PingAn's bounds on its candidates' rates
(:mod:`geosim.schedulers.pingan.candidates`). A NumPy call that releases the GIL and
treats the rows of an array independently (PingAn's ``argpartition``) runs on parts of
the rows in a pool of threads (:func:`map_rows`). Each element is written by one part
only and no floating-point sum crosses parts, so a wide kernel gives the same numbers
bit for bit whatever the number of threads. Engines call them only from
:data:`WIDE_FROM` elements (:data:`ROWS_WIDE_FROM` for a split by rows; below, the
threads' wake-up costs more than it saves) and when Numba has more than one thread: by
default one per core; ``NUMBA_NUM_THREADS`` sets it, and the worker processes of a sweep
run on one thread each (:func:`one_thread`), the sweep's parallelism being its
processes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from geosim.jit import njit

#: Elements (live copies, transfers, slots asked for) from which a kernel's wide variant
#: is used.
WIDE_FROM = 16_384

#: Elements from which a split by rows (:func:`map_rows`, PingAn's bounds) is used: a
#: pool's dispatch costs about 0.1 ms, and a pass that only copies its rows runs near
#: memory speed, so below about 100 000 elements one thread was as fast (2026-12-03).
ROWS_WIDE_FROM = 131_072

# Between parts the threads sleep rather than spin, unless the environment says
# otherwise: spinning, OpenMP's default, took a second core's time and made the first
# 1 800 steps of edge-10k 5% slower (81.7 s against 78.0 s, 137 s of CPU against 99 s).
# It must be set before Numba starts its threads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def wide(n: int, start: int | None = None) -> bool:
    """Whether work on ``n`` elements should go to the threads.

    From ``start`` elements on (by default :data:`WIDE_FROM`), with more than one thread.
    """
    # The size is asked first: reading the threads starts Numba's pool of threads.
    return n >= (WIDE_FROM if start is None else start) and numba.get_num_threads() > 1


def wide_rows(n: int) -> bool:
    """Whether work on ``n`` elements split by rows should go to the threads."""
    return wide(n, ROWS_WIDE_FROM)


#: The pool of :func:`map_rows`: (process id, threads) and its executor.
_POOL: tuple[tuple[int, int], ThreadPoolExecutor] | None = None


def map_rows(func: Callable[[np.ndarray], np.ndarray], a: np.ndarray,
             parts: int | None = None) -> np.ndarray:
    """``func(a)`` computed on parts of ``a``'s rows, one part per thread, in order.

    For a NumPy call that releases the GIL and computes each row of its result from the
    same row of ``a`` alone: the result is ``func(a)``'s whatever the number of parts.

    Args:
        func: The call, from an array of rows to an array of as many rows.
        a: Its argument.
        parts: How many parts (at most one per row); by default one per Numba thread.
            One part is ``func(a)`` itself.
    """
    global _POOL
    parts = min(numba.get_num_threads() if parts is None else parts, a.shape[0])
    if parts < 2:
        return func(a)
    key = (os.getpid(), parts)
    if _POOL is None or _POOL[0] != key:
        if _POOL is not None and _POOL[0][0] == key[0]:
            _POOL[1].shutdown(wait=False)
        _POOL = (key, ThreadPoolExecutor(parts, thread_name_prefix="geosim-rows"))
    b = part_bounds(a.shape[0], parts)
    return np.concatenate(list(_POOL[1].map(lambda k: func(a[b[k]:b[k + 1]]), range(parts))))


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
