"""Checkpoints of redundant copies (002 §3).

Every running copy of a task is brought to the progress of its most advanced copy.
"""

from __future__ import annotations

import numpy as np

from geosim.engine.base import EPS, concat_ranges, first_of_runs
from geosim.engine.records import JobState, TaskState


def checkpoint_copies(live: np.ndarray, cols: dict[str, np.ndarray], received: np.ndarray,
                      jobs: np.ndarray, tasks: TaskState, job_state: JobState,
                      task_work: np.ndarray) -> bool:
    """Checkpoint every job of ``jobs`` that has running copies, in one pass.

    Each running copy is brought to the progress of its task's most advanced copy: the
    state of that copy is saved and cloned to the others, whose own work since the last
    checkpoint is wasted. A job (and a task) counts a checkpoint only when it has running
    copies; a job without any has nothing to save. Inputs are received as far as the new
    progress needs.

    Args:
        live: Live copies.
        cols: The copies table's columns.
        received: The inputs' received fractions.
        jobs: Jobs to checkpoint.
        tasks: The tasks' state (``job``, ``saved``, ``checkpoints`` are read or written).
        job_state: The jobs' state (``work_left``, ``checkpoints``).
        task_work: Work of each task.

    Returns:
        Whether any copy was checkpointed.
    """
    if live.size == 0:
        return False
    task = cols["task"][live]
    chosen = np.zeros(job_state.work_left.size, dtype=bool)
    chosen[np.asarray(jobs, dtype=np.int64)] = True
    mine = chosen[tasks.job[task]]
    if not mine.any():
        return False
    copies, t = live[mine], task[mine]
    ut, inv = np.unique(t, return_inverse=True)
    best = tasks.saved[ut].copy()
    np.maximum.at(best, inv, cols["progress"][copies])
    level = best[inv]
    # One leader per task keeps its work (its base is the task's saved progress);
    # every other copy's work since the last checkpoint is wasted, ties included.
    progress = cols["progress"][copies]
    order = np.lexsort((copies, -progress, inv))
    leader = np.zeros(copies.size, dtype=bool)
    leader[order[first_of_runs(inv[order])]] = True
    cols["wasted"][copies] += np.where(
        leader & (progress >= level - EPS), 0.0,
        (progress - cols["base"][copies]) * task_work[t])
    cols["progress"][copies] = level
    cols["base"][copies] = level
    idx = concat_ranges(cols["in_lo"][copies], cols["in_hi"][copies])
    if idx.size:
        reach = np.repeat(level, cols["in_hi"][copies] - cols["in_lo"][copies])
        received[idx] = np.maximum(received[idx], reach)
    gain = (best - tasks.saved[ut]) * task_work[ut]
    np.subtract.at(job_state.work_left, tasks.job[ut], gain)
    tasks.saved[ut] = best
    tasks.checkpoints[ut] += 1
    job_state.checkpoints[np.unique(tasks.job[ut])] += 1
    return True
