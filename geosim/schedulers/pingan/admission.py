"""PingAn's admission (003 §4.1): the ε-fraction of jobs and the ready tasks each may take.

Compiled kernels. Each kernel does in one pass what a chain of small NumPy calls did, with the same
floating-point operations in the same order (results are bit-identical): elementwise
arithmetic, exact minima and maxima, and sums in NumPy's own order
(:func:`geosim.distributions.pairwise_sum`).
"""

from __future__ import annotations

import numpy as np

from geosim.jit import njit
from geosim.schedulers.pingan.kernels import _stable_order
from geosim.view import READY, RUNNING


@njit(cache=True)
def _pick(jobs, budget, task_ptr, state, limit):  # pragma: no cover - compiled
    """Ready tasks of ``jobs`` in job order, at most ``budget[j]`` of job ``j``, ``limit`` in all.

    Returns:
        Task ids and the position in ``jobs`` of each one's job.
    """
    tasks = np.empty(max(limit, 0), dtype=np.int64)
    pos = np.empty(max(limit, 0), dtype=np.int64)
    n = 0
    for j in range(jobs.size):
        if n >= limit:
            break
        taken = 0
        for t in range(task_ptr[jobs[j]], task_ptr[jobs[j] + 1]):
            if n >= limit or taken >= budget[j]:
                break
            if state[t] == READY:
                tasks[n], pos[n] = t, j
                n += 1
                taken += 1
    return tasks[:n], pos[:n]


@njit(cache=True)
def _unprocessed(jobs, task_ptr, state, data):  # pragma: no cover - compiled
    """Input MB of each job's ready and running tasks, summed in task order from 0."""
    out = np.zeros(jobs.size)
    for j in range(jobs.size):
        acc = 0.0
        for t in range(task_ptr[jobs[j]], task_ptr[jobs[j] + 1]):
            if state[t] == READY or state[t] == RUNNING:
                acc += data[t]
        out[j] = acc
    return out


@njit(cache=True)
def _admit_pick(alive, live, task_ptr, state, data, cut, promise,
                limit):  # pragma: no cover - compiled
    """The admission of :meth:`PingAn._admit` and the tasks :func:`_pick` takes from it.

    Jobs are sorted by unprocessed data (:func:`_unprocessed`), then id (as
    ``numpy.lexsort``); the first ``cut`` are admitted, each with ``promise`` less its
    live copies (``live``, aligned with ``alive``), and those left with a positive budget
    are kept.

    Returns:
        The kept jobs' budgets (a fresh array), the jobs not admitted, and :func:`_pick`'s
        tasks and job positions.
    """
    unprocessed = _unprocessed(alive, task_ptr, state, data)
    by_id = np.argsort(alive, kind="mergesort")
    order = by_id[_stable_order(unprocessed[by_id])]
    cut = min(max(cut, 0), alive.size)
    jobs = np.empty(cut, dtype=np.int64)
    budget = np.empty(cut, dtype=np.int64)
    n = 0
    for x in range(cut):
        b = promise - live[order[x]]
        if b > 0:
            jobs[n], budget[n] = alive[order[x]], b
            n += 1
    rest = alive[order[cut:]]
    tasks, pos = _pick(jobs[:n], budget[:n], task_ptr, state, limit)
    return budget[:n].copy(), rest, tasks, pos
