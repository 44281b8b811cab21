"""Launching copies: the checks, the choice of slots and the records of new copies."""

from __future__ import annotations

import math

import numpy as np

from geosim.engine.base import (
    EPS,
    NO_INT,
    READY,
    RUNNING,
    SchedulingError,
    rank_in_runs,
)
from geosim.engine.draw import whole_slot_assign, whole_slot_plan
from geosim.engine.records import Groups, JobState, SlotState, TaskState
from geosim.engine.tables import CopyCols
from geosim.jit import njit
from geosim.variability import copy_factors, keyed_uniforms


def pick_slots(clusters: np.ndarray, share: float, slot_ptr: np.ndarray,
               slot_used: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Slots for new copies of ``share`` on ``clusters``.

    Whole-slot copies go to free slots drawn uniformly at random (without replacement) in
    each cluster; a fractional copy goes to the slot with the least spare share that
    still fits it (best fit), ties broken at random.

    Raises:
        SchedulingError: A cluster without room for its copies.
    """
    ptr = slot_ptr
    if share >= 1.0:
        # Per cluster (ascending), its copies in order take free slots drawn without
        # replacement: ``rng.choice(free, k, replace=False)``, whose bounded draws
        # are made here in one call, in the same order.
        plan = whole_slot_plan(clusters, ptr, slot_used, 1.0 - EPS)
        bad, n_free, k, highs = plan[-4:]
        if bad >= 0:
            raise SchedulingError(f"cluster {bad} has {n_free} free slots, {k} asked")
        draws = rng.integers(0, highs + 1) if highs.size else NO_INT
        return whole_slot_assign(*plan[:-4], ptr, draws)
    out = np.empty(clusters.size, dtype=np.int64)
    for c in np.unique(clusters):
        where = np.flatnonzero(clusters == c)
        lo = ptr[c]
        spare = 1.0 - slot_used[lo:ptr[c + 1]]
        spare = spare.copy()
        for i in where:
            fits = np.flatnonzero(spare >= share - EPS)
            if fits.size == 0:
                raise SchedulingError(f"no slot of cluster {c} has {share:g} spare")
            best = fits[spare[fits] <= spare[fits].min() + EPS]
            pick = best[0] if best.size == 1 else rng.choice(best)
            out[i] = lo + pick
            spare[pick] -= share
    return out


def new_copy_factors(tasks: np.ndarray, task_copies: np.ndarray, task_cv: np.ndarray,
                     family: str, key: int, task_work: np.ndarray,
                     bounds: tuple[float, float] = (0.0, math.inf)) -> np.ndarray:
    """Work factors of new copies of ``tasks`` (before ``task_copies`` counts them).

    The k-th copy ever launched of a task draws from the key ``(run, task, k)``. A copy's
    work ``task_work * factor`` is drawn from its law truncated to ``bounds`` (the
    workload's ``copy_bounds``; the default is no bounds).
    """
    order = np.argsort(tasks, kind="stable")
    index = np.empty(tasks.size, dtype=np.int64)
    index[order] = rank_in_runs(tasks[order])
    index += task_copies[tasks]
    u = keyed_uniforms(key, tasks, index)
    if bounds == (0.0, math.inf):
        return copy_factors(family, task_cv[tasks], u)
    work = task_work[tasks]
    return copy_factors(family, task_cv[tasks], u, bounds[0] / work, bounds[1] / work)


# ---------------------------------------------------------------------- compiled kernels
@njit(cache=True)
def launch_check(tasks, clusters, task_state, reachable):  # pragma: no cover - compiled
    """First problem with a launch: ``(code, index)``, code 0 when there is none.

    Codes, checked in this order over all copies: 1 a task that does not exist, 2 a task
    neither ready nor running, then 3 a cluster that does not exist, 4 an unreachable one.
    """
    for i in range(tasks.size):
        if tasks[i] < 0 or tasks[i] >= task_state.size:
            return 1, i
    for i in range(tasks.size):
        state = task_state[tasks[i]]
        if state != READY and state != RUNNING:
            return 2, i
    for i in range(clusters.size):
        if clusters[i] < 0 or clusters[i] >= reachable.size:
            return 3, i
    for i in range(clusters.size):
        if not reachable[clusters[i]]:
            return 4, i
    return 0, 0


@njit(cache=True)
def take_slots(slots, clusters, share, slot_ptr, slot_used, limit):  # pragma: no cover
    """Add ``share`` to the used share of each of ``slots``, in order, in place.

    Nothing changes (and False is returned) when a slot is not in its copy's cluster or
    would exceed ``limit``; the work is the new copies', not the slots'.
    """
    if slots.size != clusters.size:
        return False
    for i in range(slots.size):
        c, s = clusters[i], slots[i]
        if s < slot_ptr[c] or s >= slot_ptr[c + 1]:
            return False
    before = np.empty(slots.size)
    for i in range(slots.size):
        before[i] = slot_used[slots[i]]
    for i in range(slots.size):
        slot_used[slots[i]] += share
    for i in range(slots.size):
        if slot_used[slots[i]] > limit:
            for r in range(slots.size - 1, -1, -1):     # the first value of each slot
                slot_used[slots[r]] = before[r]
            return False
    return True


@njit(cache=True)
def launch_kernel(tasks, clusters, slots, share, row, now, copies, task, job, slot, staged,
                  groups, live):  # pragma: no cover - compiled
    """Record new copies at rows ``row...`` and their tasks' new state.

    ``copies``, ``task``, ``job``, ``slot`` and ``groups`` are the engine's records
    (:class:`~geosim.engine.tables.CopyCols`, :mod:`geosim.engine.records`).

    Returns:
        The live copies with the new ones, and how many ready tasks started running.
    """
    copies, task, job, slot = CopyCols(*copies), TaskState(*task), JobState(*job), \
        SlotState(*slot)
    groups = Groups(*groups)
    n = tasks.size
    started = 0
    for i in range(n):
        t = tasks[i]
        c = row + i
        s = slots[i]
        slot.copies[s] += 1
        if slot.copies[s] == 1:
            slot.busy[slot.cluster[s]] += 1
        elif slot.copies[s] == 2:
            slot.shared[0] += 1
        copies.task[c] = t
        copies.slot[c] = s
        copies.cluster[c] = clusters[i]
        copies.share[c] = share
        copies.progress[c] = task.saved[t]
        copies.base[c] = task.saved[t]
        copies.start[c] = now
    for i in range(n):
        t = tasks[i]
        if task.state[t] == READY:
            task.state[t] = RUNNING
            started += 1
            if staged:
                groups.ready[groups.of[t]] -= 1
                groups.running[groups.of[t]] += 1
            if np.isnan(task.start[t]):
                task.start[t] = now
    for i in range(n):
        t = tasks[i]
        task.copies[t] += 1
        task.live[t] += 1
        job.live[task.job[t]] += 1
    out = np.empty(live.size + n, dtype=np.int64)
    out[:live.size] = live
    for i in range(n):
        out[live.size + i] = row + i
    return out, started
