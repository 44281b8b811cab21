"""Locality-first placement: run a task where its data is.

The rule of Hadoop/Spark's locality scheduling, used by the plain baselines: a task
goes to the cluster holding the largest part of its input if that cluster has a free
slot, else to another cluster holding some of its input, else to the reachable cluster
with a free slot fewest hops from its data (ties: most free slots, then lowest id).
"""

from __future__ import annotations

import numpy as np

from geosim.view import READY, SchedulerView, concat_ranges, rank_in_runs


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
    tasks, pos = view.ready_in_order(jobs)
    if limits is not None and tasks.size:
        rank = rank_in_runs(pos)
        tasks = tasks[rank < np.asarray(limits)[pos]]
    tasks = tasks[:budget]
    clusters = np.empty(tasks.size, dtype=np.int64)
    for i, task in enumerate(tasks):
        clusters[i] = locality_cluster(view, int(task), free)
        free[clusters[i]] -= 1
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
