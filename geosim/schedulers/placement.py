"""Locality-first placement: run a task where its data is.

The rule of Hadoop/Spark's locality scheduling, used by the plain baselines: a task
goes to the cluster holding the largest part of its input if that cluster has a free
slot, else to another cluster holding some of its input, else to the reachable cluster
with a free slot fewest hops from its data (ties: most free slots, then lowest id).
"""

from __future__ import annotations

import functools

import numpy as np

from geosim.jit import njit
from geosim.view import READY, SchedulerView, concat_ranges, rank_in_runs

#: Most hop rows :func:`locality_clusters` fetches at once.
HOP_ROWS = 64


def locality_cluster(view: SchedulerView, task: int, free: np.ndarray) -> int:
    """Return the cluster for ``task`` under locality-first placement, or -1 if no slot.

    Args:
        view: The scheduler's view.
        task: A ready task.
        free: Free slots per cluster (the caller decrements it as it launches).
    """
    home = int(view.task_home[task])
    if home >= 0 and free[home] > 0:
        return home
    if home >= 0:
        src, size = view.task_inputs(task)
        for c in src[np.argsort(-size, kind="stable")]:
            if free[c] > 0:
                return int(c)
    candidates = np.flatnonzero(free > 0)
    if candidates.size == 0:
        return -1
    if home < 0:
        return int(candidates[np.argmax(free[candidates])])
    key = view.hops[home, candidates] * (free.max() + 1) - free[candidates]
    return int(candidates[np.argmin(key)])


def locality_clusters(view: SchedulerView, tasks: np.ndarray, free: np.ndarray,
                      stop: bool = True) -> np.ndarray:
    """:func:`locality_cluster` for each task in turn, taking a slot from ``free`` each time.

    Args:
        view: The scheduler's view.
        tasks: Ready (or running) tasks, in the order they are served.
        free: Free slots per cluster; decremented for every task placed.
        stop: Stop (leaving ``-1``) at the first task that finds every entry of ``free``
            zero; otherwise every task is served.

    Returns:
        The cluster of each task, ``-1`` where none was chosen.
    """
    tasks = np.asarray(tasks, dtype=np.int64)
    out = np.full(tasks.size, -1, dtype=np.int64)
    if tasks.size == 0:
        return out
    owner, src, size = view.inputs_of(tasks)
    ptr = np.searchsorted(owner, np.arange(tasks.size + 1))
    homes = np.asarray(view.task_home)[tasks]
    every = view.routes.all_hops()
    if every is not None:           # a small world: every row at hand
        _locality_kernel(0, homes, ptr, src, size, free, every, _rows_in_order(view.n_clusters),
                         stop, out)
        return out
    # Hop rows of the homes, fetched when a task first needs one: the kernel stops at a
    # task whose home has no row and goes on from there once the rows are in.
    row_of, rows = _no_rows(view.n_clusters)
    at = _locality_kernel(0, homes, ptr, src, size, free, rows, row_of, stop, out)
    if at < tasks.size:
        row_of = np.empty(view.n_clusters, dtype=np.int64)
    while at < tasks.size:
        ahead = homes[at:]
        first = np.sort(np.unique(ahead, return_index=True)[1])
        need = ahead[first]
        need = need[need >= 0][:min(HOP_ROWS, view.routes.tree_capacity)]
        row_of[:] = -1
        row_of[need], rows = view.routes.kept_hop_rows(need)
        at = _locality_kernel(at, homes, ptr, src, size, free, rows, row_of, stop, out)
    return out


@functools.cache
def _rows_in_order(n: int) -> np.ndarray:
    """Row ``h`` of cluster ``h``, for ``n`` clusters (never written)."""
    return np.arange(n, dtype=np.int64)


@functools.cache
def _no_rows(n: int) -> tuple[np.ndarray, np.ndarray]:
    """No hop row yet, for ``n`` clusters (never written)."""
    return np.full(n, -1, dtype=np.int64), np.empty((0, n), dtype=np.int64)


@njit(cache=True)
def _locality_kernel(start, homes, ptr, src, size, free, rows, row_of, stop,
                     out):  # pragma: no cover - compiled
    """The rule of :func:`locality_cluster` for a sequence of tasks sharing ``free``.

    Serves tasks from ``start`` on (task ``i``'s home is ``homes[i]``, its inputs
    ``src[ptr[i]:ptr[i+1]]``), reading the hop counts from home ``h`` in
    ``rows[row_of[h]]``. Returns the first task whose home's row is missing when it is
    needed (nothing done for it), or the number of tasks.
    """
    n = free.size
    for i in range(start, homes.size):
        if stop:
            empty = True
            for c in range(n):
                if free[c] != 0:
                    empty = False
                    break
            if empty:
                return homes.size
        home = homes[i]
        pick = -1
        if home >= 0 and free[home] > 0:
            pick = home
        if pick < 0 and home >= 0:
            best = -1
            for j in range(ptr[i], ptr[i + 1]):
                if free[src[j]] > 0 and (best < 0 or size[j] > size[best]):
                    best = j
            if best >= 0:
                pick = src[best]
        if pick < 0:
            r = row_of[home] if home >= 0 else 0
            if r < 0:
                return i
            top = free[0]
            for c in range(1, n):
                if free[c] > top:
                    top = free[c]
            for c in range(n):
                if free[c] <= 0:
                    continue
                if pick < 0:
                    pick = c
                elif home < 0:
                    if free[c] > free[pick]:
                        pick = c
                elif rows[r, c] * (top + 1) - free[c] < rows[r, pick] * (top + 1) - free[pick]:
                    pick = c
        out[i] = pick
        free[pick] -= 1
    return homes.size


def fill_in_order(view: SchedulerView, actions, jobs: np.ndarray,
                  limits: np.ndarray | None = None, share: float = 1.0) -> None:
    """Give free slots to ready tasks, job by job in the given order, locality first.

    Args:
        view: The scheduler's view.
        actions: Where launches go.
        jobs: Job ids in priority order.
        limits: Optional cap on the copies each job may start now (same order as jobs).
        share: Slot share of each new copy (below 1 when multitasking).
    """
    free = view.free_slots() if share >= 1.0 else view.free_units(share)
    budget = int(free.sum())
    if budget <= 0:
        return
    tasks = view.ready_in_order(jobs, limits, budget)[0]
    clusters = locality_clusters(view, tasks, free, stop=False)
    actions.launch_many(tasks, clusters, share)


def launch_from_stages(view: SchedulerView, actions, lo: np.ndarray, hi: np.ndarray,
                       counts: np.ndarray) -> int:
    """Start the first ``counts[g]`` ready tasks of each stage ``lo[g]:hi[g]`` on free slots.

    For stages of input-free "brick" tasks (flows of MapReduce jobs, 004): any free slot
    serves, lowest slot id first. Stops when the free slots run out; returns the copies
    started.
    """
    counts = np.asarray(counts, dtype=np.int64)
    keep = counts > 0
    if not keep.any():
        return 0
    lo, hi, counts = lo[keep], hi[keep], counts[keep]
    tasks = concat_ranges(lo, hi)
    group = np.repeat(np.arange(lo.size), hi - lo)
    ready = view.task_state[tasks] == READY
    tasks, group = tasks[ready], group[ready]
    tasks = tasks[rank_in_runs(group) < counts[group]]
    slots = view.free_slot_ids()[: tasks.size]
    tasks = tasks[: slots.size]
    if tasks.size:
        actions.launch_many(tasks, view.slot_cluster[slots], slots=slots)
    return int(tasks.size)
