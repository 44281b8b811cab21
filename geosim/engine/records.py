"""Named records of the engine's state, as its compiled kernels take them.

Each record is a ``NamedTuple`` of NumPy arrays, built once when the engine is made; the
kernels write its arrays in place. The copies and inputs tables have their own records
(:mod:`geosim.engine.tables`), rebuilt when a table grows.

A kernel called from Python takes each record as a plain tuple (``tuple(record)``) and
names it on entry (``task = TaskState(*task)``): Numba's dispatcher types a plain tuple of
arrays on its fast path, a named tuple on a slow one (about twice the cost of the call),
and the engine's kernels are called thousands of times a run.
"""

from __future__ import annotations

from operator import attrgetter
from typing import NamedTuple

import numpy as np


class TaskState(NamedTuple):
    """Per task: its job and mean work (fixed), and the state of its execution.

    ``saved`` is the fraction of its work kept by checkpoints (1 once done); ``pending``
    counts unfinished parents and stage barriers; ``copies`` counts every copy ever
    launched, ``live`` those running.
    """

    job: np.ndarray
    work: np.ndarray
    state: np.ndarray
    ready: np.ndarray
    start: np.ndarray
    done: np.ndarray
    cluster: np.ndarray
    home: np.ndarray
    saved: np.ndarray
    copies: np.ndarray
    live: np.ndarray
    checkpoints: np.ndarray
    pending: np.ndarray


class JobState(NamedTuple):
    """Per job: the state of its execution.

    Unfinished tasks, finishing time, last task's end, checkpoints, work left (MI), live
    copies and tasks not yet ready (so ``left - waiting`` are ready or running).
    """

    left: np.ndarray
    done: np.ndarray
    last: np.ndarray
    checkpoints: np.ndarray
    work_left: np.ndarray
    live: np.ndarray
    waiting: np.ndarray


class SlotState(NamedTuple):
    """Per slot its share in use, copies and cluster; the slots holding copies, counted.

    The counts (per cluster the slots holding a copy, ``busy``; the slots holding more
    than one, ``shared[0]``) are kept as copies start and end, so that the free slots
    are read, and whether two live copies share a slot known, without a pass over the
    copies.
    """

    used: np.ndarray
    copies: np.ndarray
    cluster: np.ndarray
    busy: np.ndarray
    shared: np.ndarray


def new_slot_state(slot_cluster: np.ndarray, n_clusters: int) -> SlotState:
    """The slots of a world with nothing on them (``slot_cluster``: each slot's cluster)."""
    n = slot_cluster.size
    return SlotState(np.zeros(n), np.zeros(n, dtype=np.int64), slot_cluster,
                     np.zeros(n_clusters, dtype=np.int64), np.zeros(1, dtype=np.int64))


def recount_slots(slots: SlotState) -> None:
    """Count the slots holding a copy, and those holding several, from the copies per slot."""
    slots.busy[:] = np.bincount(slots.cluster[slots.copies > 0], minlength=slots.busy.size)
    slots.shared[0] = np.count_nonzero(slots.copies > 1)


class Graph(NamedTuple):
    """Where each task's inputs come from, in CSR form.

    Raw inputs of task ``t`` are ``raw_ptr[t]:raw_ptr[t+1]`` (``raw_cluster`` changes when
    a raw input is moved); its parents' outputs are ``in_ptr[t]:in_ptr[t+1]`` of
    ``in_src``/``in_size``; its children are ``out_ptr[t]:out_ptr[t+1]`` of ``out_dst``.
    """

    raw_ptr: np.ndarray
    raw_cluster: np.ndarray
    raw_size: np.ndarray
    in_ptr: np.ndarray
    in_src: np.ndarray
    in_size: np.ndarray
    out_ptr: np.ndarray
    out_dst: np.ndarray


class Groups(NamedTuple):
    """Stage groups (the tasks of one stage of one job; see :mod:`geosim.engine.stages`).

    Empty arrays when the run has no stages; ``capped``, ``room`` and ``next_task`` are empty
    when no group has a malleability cap.
    """

    of: np.ndarray
    ptr: np.ndarray
    left: np.ndarray
    child_ptr: np.ndarray
    child: np.ndarray
    waiting: np.ndarray
    ready: np.ndarray
    running: np.ndarray
    job_groups: np.ndarray
    capped: np.ndarray
    room: np.ndarray
    next_task: np.ndarray


class Flows(NamedTuple):
    """The transfers running in a span (see :func:`geosim.engine.transfers.flow_structure`).

    Copy inputs being fetched: their input row ``idx``, the position ``pos`` of their
    copy in the live copies, source and destination cluster, the resources each crosses
    (``res`` from ``starts[j]``) and the first flow of each copy (``group``); then the
    resources of each raw-input move.
    """

    idx: np.ndarray
    pos: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    res: np.ndarray
    starts: np.ndarray
    group: np.ndarray
    move_res: np.ndarray
    move_starts: np.ndarray


class Traffic(NamedTuple):
    """WAN traffic counters.

    MB/s through each cluster's gates in the last span (``gate_out``, ``gate_in``), and
    MB out of and into each cluster and over each direction of each link (``2e`` is u→v,
    ``2e+1`` v→u) since the last sample.
    """

    gate_out: np.ndarray
    gate_in: np.ndarray
    egress: np.ndarray
    ingress: np.ndarray
    link: np.ndarray


def field_property(record: str, name: str, doc: str) -> property:
    """A read-only property for ``self.<record>.<name>``.

    Its getter is C-level: readers call these thousands of times a step.
    """
    return property(attrgetter(f"{record}.{name}"), doc=doc)
