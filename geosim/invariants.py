"""Invariants of a run, checked after every step in conformance mode.

Conformance mode is off by default. It is on for a model built with
``GeoModel(..., check_invariants=True)``, or, when that argument is left out, when the
environment variable ``GEOSIM_CHECK_INVARIANTS`` is set to anything but ``""``, ``0``,
``false``, ``no`` or ``off`` (read when the model is built). The model then calls
:meth:`Checker.check` at the end of every :meth:`~geosim.model.GeoModel.step` and runs
through the general step only: the compiled pool loop (:mod:`geosim.poolsim`) is not
checked, so a checked run never takes it.

Every check is a handful of NumPy operations over the engine's tables (tasks, copies,
slots, clusters, links), with no Python loop over tasks or copies. A copy never changes
once it has ended, so a step's check looks one by one only at the copies live at the last
check or launched since, and keeps the others in per-task sums; :func:`check`, and the
check after a run's last step, go over every copy. A violation raises
:class:`InvariantError` naming the invariant, the simulated time and the first offending
cluster, slot, link, job, task or copy. What each invariant asserts, and why the engine
(:mod:`geosim.engine`) makes it hold:

``copies``
    The live list holds each live copy once, in ascending order; exactly the copies
    with outcome ``alive`` are in it; every live copy has a share in (0, 1] and runs on
    a slot of its own cluster. A copy enters the list at launch and leaves it when it
    ends (won, lost, killed or failed), in the same call that sets its outcome.
``slots``
    Per slot, the recorded busy share equals the summed shares of the live copies on it
    (within ``1e-9``) and lies in [0, 1]; the recorded copy count equals the number of
    live copies on it; per cluster, the busy share is at most the cluster's slots.
    ``launch`` and ``set_share`` refuse a share that does not fit, and ending a copy
    gives its share back.
``reachability``
    No live copy runs on an unreachable cluster. ``launch`` refuses an unreachable
    cluster, and at every boundary the model kills the copies of every cluster whose
    outage started since the last one. Availability periods only slow a slot down (a
    speed factor, possibly 0), so copies may run on an unavailable slot.
``bandwidth``
    In the step's span, each cluster's egress and ingress gate carried at most its
    bandwidth, and each direction of each WAN link at most the link's bandwidth, both
    within a relative ``1e-6``. The shares of one resource sum to at most its capacity
    under either sharing rule. The tolerance is that of a rate measured over a span:
    MB moved come from received fractions, whose rounding (about ``1e-16`` of an input's
    size) an event-timed span as short as the clock's resolution (``1e-9`` of the clock)
    turns into up to about ``1e-7`` of a rate; a slot-long span, into far less.
    Gate rates are the engine's own per-span counters; a link's rate is what its counter
    gained in the step (the model resets the counters when it samples, before the
    engine runs the span), over the span. Transfers run only in one-slot spans or, under
    event timing, in spans that end before any bandwidth changes (multi-slot spans need
    a world without transfers).
``transfers``
    Every received fraction of a copy input and of a raw-input move lies in [0, 1].
``sharing`` (``links.sharing = "maxmin"``)
    The last span's bandwidths are max-min fair: a transfer from an unreachable cluster
    gets 0; every other one gets what it could use, or crosses a resource that is full
    (within a relative ``1e-6``) and on which no transfer gets more than it. No transfer
    could then gain without taking from one whose bandwidth is smaller or equal.
    Progressive filling (:mod:`geosim.engine.sharing`) freezes each transfer at a
    resource that fills at the level it reached, the highest on it.
``tasks``
    Per task, the live-copy count equals the live copies of the task, and a task is
    running exactly when it is not done and has a live copy; the job live-copy counts
    and the ready count agree with the tables. A task is ready, running or done only
    when every task it reads output from is done and its stage barrier has fallen
    (pending count 0). A task has a finish time exactly when it is done, and it is not
    in the future.
``stage caps``
    Per stage, the ready and running counts agree with the task states, and a capped
    stage never has more tasks ready or running than its cap.
``work``
    Progress and work are in units of the task's mean work. Per copy: ``0 <= base <=
    progress <= 1``, ``executed >= 0`` and ``0 <= wasted <= executed``; a live copy's
    base is its task's checkpointed progress ``saved``, and a winner's progress is 1.
    Per task, ``saved`` lies in [0, 1] and is 1 once the task is done. Conservation per
    task (within ``1e-9`` of the work involved)::

        sum over copies (executed - wasted) == (saved + sum over live copies
                                                (progress - base)) * work

    Each term moves with the other: a slot adds the same progress to both sides; a
    copy that ends other than by winning wastes exactly its progress since its base
    (this is how an outage loses un-checkpointed work, and only that); a checkpoint
    moves the leader's progress into ``saved`` and wastes the others'; a winner's
    progress completes ``saved`` to 1. Summed over a finished run, this is the engine's
    ``executed == task work + wasted``. Each job's remaining work agrees with
    ``(1 - saved) * work`` summed over its unfinished tasks.
``completion``
    Every done task has exactly one winning copy, every other task none; each job's
    unfinished-task count is its number of tasks not done; a job has a finish time
    exactly when all its tasks are done, and it is the latest of their finish times; a
    finished job has arrived. The model's count of finished jobs is the number of
    finished jobs, and its job agents are exactly the jobs arrived and not finished.
``history`` (across steps, kept by :class:`Checker`)
    Time does not go back; no task's checkpointed progress decreases (an outage loses
    only work since the last checkpoint, never the checkpoint); a finish time, once
    set, never changes, for tasks and for jobs (each finishes at most once); the count
    of finished jobs never decreases.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn, Protocol

import numpy as np
from numba import njit

from geosim.engine import ALIVE, DONE, EPS, READY, RUNNING, WAITING, WON, concat_ranges

if TYPE_CHECKING:
    from geosim.engine import Engine
    from geosim.workload import Workload
    from geosim.world import World

#: The environment variable that turns conformance mode on.
ENV_VAR = "GEOSIM_CHECK_INVARIANTS"
#: Tolerance of shares and progress (absolute, fractions of a slot or of a task).
SHARE_TOL = 1e-9
#: Relative tolerance of bandwidth use against capacity (see ``bandwidth``).
BANDWIDTH_RTOL = 1e-6
#: Relative tolerance of work conservation.
WORK_RTOL = 1e-9
_OFF = ("", "0", "false", "no", "off")


class InvariantError(AssertionError):
    """A run broke one of the invariants of :mod:`geosim.invariants`.

    Attributes:
        invariant: Name of the broken invariant (``"slots"``, ``"work"``, ...).
        time: Simulated time (s) at which the check found it.
        detail: What is wrong, naming the first offending entity.
    """

    def __init__(self, invariant: str, time: float, detail: str):
        self.invariant, self.time, self.detail = invariant, float(time), detail
        super().__init__(f"invariant {invariant!r} broken at t={time:g}: {detail}")


class CheckedModel(Protocol):
    """What the checks read of a model (a :class:`geosim.model.GeoModel`)."""

    engine: Engine
    world: World
    workload: Workload
    jobs_done: int
    steps_run: int

    @property
    def done(self) -> bool:
        """Whether every job has finished, or the horizon is reached."""

    @property
    def link_records(self) -> list[dict[str, np.ndarray]]:
        """The sampled WAN link time series, one dict of arrays per sample."""


def from_environment() -> bool:
    """Whether :data:`ENV_VAR` turns conformance mode on."""
    return os.environ.get(ENV_VAR, "").strip().lower() not in _OFF


def check(model: CheckedModel) -> None:
    """Check every invariant that the state of ``model`` alone determines, over every copy.

    Raises:
        InvariantError: The first broken invariant.
    """
    _State(model).run()


class _Settled:
    """Per-task sums over the copies that had ended by the last check."""

    def __init__(self, n_tasks: int):
        self.kept = np.zeros(n_tasks)       # executed - wasted
        self.scale = np.zeros(n_tasks)      # executed + wasted
        self.wins = np.zeros(n_tasks, dtype=np.int64)

    def add(self, task: np.ndarray, executed: np.ndarray, wasted: np.ndarray,
            won: np.ndarray) -> None:
        """Add ended copies (their task, work and whether each won)."""
        n = self.kept.size
        self.kept += np.bincount(task, weights=executed - wasted, minlength=n)
        self.scale += np.bincount(task, weights=executed + wasted, minlength=n)
        self.wins += np.bincount(task[won], minlength=n)


class Checker:
    """Checks a model after each step, remembering what must not go back.

    A copy that has ended never changes again, so each copy is checked one by one while
    it is live and at the step it ends; from then on its work and its win count only
    in per-task sums. When the run is done, one last check goes over every copy.

    Args:
        model: The model to check; its state now is the first reference (not checked).
    """

    def __init__(self, model: CheckedModel):
        self.model = model
        e = model.engine
        self.settled = _Settled(e.task_state.size)
        self.n_copies = 0
        self.live = np.empty(0, dtype=np.int64)
        cols, n = e.copies.cols, e.copies.n
        ended = np.flatnonzero(cols["outcome"][:n] != ALIVE)
        self.settled.add(cols["task"][ended], cols["executed"][ended], cols["wasted"][ended],
                         cols["outcome"][ended] == WON)
        self._remember()

    def check(self) -> None:
        """Check every invariant, including those across steps, then remember the state.

        Raises:
            InvariantError: The first broken invariant.
        """
        model = self.model
        if model.done:
            state = _State(model)
        else:
            fresh = np.arange(self.n_copies, model.engine.copies.n, dtype=np.int64)
            state = _State(model, np.concatenate([self.live, fresh]), self.settled)
        state.run()
        self._check_history(state)
        self.settled = state.settle()
        self._remember()

    def _remember(self) -> None:
        model = self.model
        e = model.engine
        self.n_copies = e.copies.n
        self.live = e.live.copy()
        self.time = e.time
        self.saved = e.task_saved.copy()
        self.task_done = e.task_done.copy()
        self.job_done = e.job_done.copy()
        self.jobs_done = model.jobs_done
        self.link_mb = e.link_mb.copy()
        self.samples = len(model.link_records)
        self.steps = model.steps_run

    def _check_history(self, state: _State) -> None:
        model, e = self.model, self.model.engine
        if e.time < self.time:
            state.fail("history", f"time went back from {self.time:g}")
        state.require("history", e.task_saved >= self.saved, lambda t: (
            f"task {t}: checkpointed progress fell from {self.saved[t]:.12g} to "
            f"{e.task_saved[t]:.12g}"))
        for what, before, now in (("task", self.task_done, e.task_done),
                                  ("job", self.job_done, e.job_done)):
            state.require("history", (now == before) | np.isnan(before),
                          lambda i, what=what, before=before, now=now: (
                              f"{what} {i} finished again: at {before[i]:g}, now {now[i]:g}"))
        if model.jobs_done < self.jobs_done:
            state.fail("history", f"finished jobs fell from {self.jobs_done} to "
                                  f"{model.jobs_done}")
        if model.steps_run == self.steps + 1 and e.dt > 0:
            # The model samples (and resets the link counters) before the engine runs the
            # slot, so after a sample the counters hold this step's traffic alone.
            sampled = len(model.link_records) != self.samples
            moved = e.link_mb if sampled else e.link_mb - self.link_mb
            state.check_links(moved / e.last_span)


class _State:
    """The arrays of one check, gathered once and shared by every invariant.

    Args:
        model: The model.
        copies: Ascending ids of the copies to check one by one (default: every copy);
            they must include every live copy.
        settled: Sums over the ended copies left out of ``copies`` (default: none).
    """

    def __init__(self, model: CheckedModel, copies: np.ndarray | None = None,
                 settled: _Settled | None = None):
        self.model, self.e, self.world = model, model.engine, model.world
        e = self.e
        cols, n = e.copies.cols, e.copies.n
        self.full = copies is None
        self.ids = np.arange(n, dtype=np.int64) if copies is None else copies
        self.settled = settled if settled is not None else _Settled(e.task_state.size)
        ids = slice(0, n) if copies is None else copies
        self.c_task = cols["task"][ids]
        self.c_outcome = cols["outcome"][ids]
        self.c_progress = cols["progress"][ids]
        self.c_base = cols["base"][ids]
        self.c_executed = cols["executed"][ids]
        self.c_wasted = cols["wasted"][ids]
        self.live = e.live
        live = self.live
        self.l_task, self.l_slot = cols["task"][live], cols["slot"][live]
        self.l_cluster, self.l_share = cols["cluster"][live], cols["share"][live]
        self.l_progress, self.l_base = cols["progress"][live], cols["base"][live]

    def fail(self, invariant: str, detail: str) -> NoReturn:
        """Raise :class:`InvariantError` at the engine's time."""
        raise InvariantError(invariant, self.e.time, detail)

    def require(self, invariant: str, ok: np.ndarray, describe: Callable[[int], str]) -> None:
        """Fail unless ``ok`` holds everywhere; ``describe(i)`` names the first ``i`` it fails."""
        if np.count_nonzero(ok) != ok.size:      # faster than ``ok.all()`` on small arrays
            bad = np.flatnonzero(~ok)
            more = f" (and {bad.size - 1} more)" if bad.size > 1 else ""
            self.fail(invariant, describe(int(bad[0])) + more)

    def run(self) -> None:
        """Check every invariant that the state alone determines."""
        self.check_copies()
        self.check_slots()
        self.check_gates()
        self.check_transfers()
        self.check_sharing()
        self.check_tasks()
        self.check_stage_caps()
        self.check_work()
        self.check_completion()

    def settle(self) -> _Settled:
        """The settled sums, with the checked copies that have ended added (in place)."""
        ended = self.c_outcome != ALIVE
        if ended.any():
            self.settled.add(self.c_task[ended], self.c_executed[ended], self.c_wasted[ended],
                             self.c_outcome[ended] == WON)
        return self.settled

    # ------------------------------------------------------------------ resources
    def check_copies(self) -> None:
        """The ``copies`` and ``reachability`` invariants."""
        live, ids, world = self.live, self.ids, self.world
        n = self.e.copies.n
        if live.size and not (live[0] >= 0 and live[-1] < n and np.all(live[1:] > live[:-1])):
            self.fail("copies", f"the live list is not ascending ids of copies 0..{n - 1}: "
                                f"{live.tolist()[:20]}")
        if not self.full:
            at = np.minimum(np.searchsorted(ids, live), max(ids.size - 1, 0))
            self.require("copies", ids[at] == live, lambda i: (
                f"copy {int(live[i])} is live but was neither live nor new at the last check"))
        cols = self.e.copies.cols
        self.require("copies", cols["outcome"][live] == ALIVE, lambda i: (
            f"live copy {int(live[i])} has outcome {int(cols['outcome'][live[i]])}"))
        alive = int(np.count_nonzero(self.c_outcome == ALIVE))
        if alive != live.size:
            self.fail("copies", f"{alive} copies have outcome alive, {live.size} are live")
        slot, cluster, share = self.l_slot, self.l_cluster, self.l_share
        home = world.slot_cluster.take(slot, mode="clip")
        self.require("copies", (share > 0.0) & (share <= 1.0 + SHARE_TOL) & (slot >= 0)
                     & (slot < world.n_slots) & (home == cluster), lambda i: (
                         f"copy {int(live[i])} of cluster {int(cluster[i])} has share "
                         f"{share[i]:g} on slot {int(slot[i])}"))
        self.require("reachability", self.e.reachable[cluster], lambda i: (
            f"copy {int(live[i])} of task {int(self.l_task[i])} runs on unreachable "
            f"cluster {int(cluster[i])}"))

    def check_slots(self) -> None:
        """The ``slots`` invariant."""
        e, world = self.e, self.world
        slot = self.l_slot
        used = np.bincount(slot, weights=self.l_share, minlength=world.n_slots)
        count = np.bincount(slot, minlength=world.n_slots)
        self.require("slots", (np.abs(e.slot_used - used) <= SHARE_TOL)
                     & (e.slot_used <= 1.0 + SHARE_TOL) & (e.slot_used >= -SHARE_TOL)
                     & (e.slot_copies == count), lambda s: (
                         f"slot {s} of cluster {int(world.slot_cluster[s])} records share "
                         f"{e.slot_used[s]:.12g} busy by {int(e.slot_copies[s])} copies; "
                         f"{int(count[s])} live copies hold {used[s]:.12g}"))
        busy = np.bincount(world.slot_cluster, weights=e.slot_used, minlength=world.n_clusters)
        self.require("slots", busy <= world.slots * (1.0 + SHARE_TOL), lambda c: (
            f"cluster {c} has {busy[c]:.12g} slots busy of {int(world.slots[c])}"))
        # The free slots the engine counts from its live copies, against every slot.
        free = np.where(e.reachable, np.bincount(world.slot_cluster, weights=e.slot_used <= EPS,
                                                 minlength=world.n_clusters), 0)
        counted = e.free_slots()
        self.require("slots", counted == free, lambda c: (
            f"cluster {c} counts {int(counted[c])} free slots, its slots hold {int(free[c])}"))
        # Every live copy runs at its slot's VM power of this period (keyed power draws it
        # only for the slots read).
        held = world.power.periods(slot)
        self.require("slots", held == world.power.epoch, lambda i: (
            f"slot {int(slot[i])} holds the VM power of period {int(held[i])}, "
            f"not {world.power.epoch}"))

    def check_gates(self) -> None:
        """The gate half of the ``bandwidth`` invariant."""
        e, gate = self.e, self.world.gate
        limit = gate * (1.0 + BANDWIDTH_RTOL)
        for name, rate in (("egress", e.gate_out), ("ingress", e.gate_in)):
            self.require("bandwidth", (rate <= limit) & (rate >= 0.0),
                         lambda c, name=name, rate=rate: (f"cluster {c}'s {name} gate carried "
                                                          f"{rate[c]:.12g} MB/s of {gate[c]:.12g}"))

    def check_links(self, rate: np.ndarray) -> None:
        """The link half of ``bandwidth``: ``rate`` is MB/s per link direction in the slot."""
        world = self.world
        if world.n_links == 0 or world.link_bw is None:
            return
        cap = np.repeat(world.link_bw.level, 2)

        def describe(d: int) -> str:
            link = d // 2
            u, v = int(world.link_u[link]), int(world.link_v[link])
            a, b = (u, v) if d % 2 == 0 else (v, u)
            return f"link {link} ({a}->{b}) carried {rate[d]:.12g} MB/s of {cap[d]:.12g}"

        self.require("bandwidth", (rate <= cap * (1.0 + BANDWIDTH_RTOL))
                     & (rate >= -BANDWIDTH_RTOL * cap), describe)

    def check_transfers(self) -> None:
        """The ``transfers`` invariant."""
        e = self.e
        icols, cols = e.inputs.cols, e.copies.cols
        rows = slice(0, e.inputs.n) if self.full else \
            concat_ranges(cols["in_lo"][self.ids], cols["in_hi"][self.ids])
        got = icols["received"][rows]
        self.require("transfers", (got >= 0.0) & (got <= 1.0), lambda i: (
            f"an input of copy {int(icols['copy'][rows][i])} has received {got[i]:.12g}"))
        self.require("transfers", (e.move_got >= 0.0) & (e.move_got <= 1.0), lambda i: (
            f"move of raw input {int(e.move_raw[i])} has received {e.move_got[i]:.12g}"))

    def check_sharing(self) -> None:
        """The ``sharing`` invariant (max-min sharing only)."""
        e = self.e
        bw, flows = e.flow_bw, e.flows
        if e.sharing != "maxmin" or bw.size == 0:
            return
        n_flow = flows.idx.size
        active = e.flow_active
        ok = _max_min_held(flows.res, flows.starts, flows.move_res, flows.move_starts, bw,
                           self.world.resource_capacity(), active, e.flow_demand,
                           BANDWIDTH_RTOL)
        self.require("sharing", ok, lambda j: (
            f"{'flow' if j < n_flow else 'move'} {j if j < n_flow else j - n_flow} got "
            f"{bw[j]:.12g} MB/s, " + ("no resource it crosses is full with it the largest "
                                      "there" if active[j] else "but a cluster of it is "
                                      "unreachable")))

    # ------------------------------------------------------------------ tasks
    def check_tasks(self) -> None:
        """The ``tasks`` invariant."""
        e, wl = self.e, self.model.workload
        state = e.task_state
        per_task = np.bincount(self.l_task, minlength=state.size)
        done = state == DONE
        if state.size and not WAITING <= state.min() <= state.max() <= DONE:
            self.fail("tasks", f"task states outside {WAITING}..{DONE}")
        self.require("tasks", (e.task_live == per_task) & ((state == RUNNING) == (per_task > 0)),
                     lambda t: (f"task {t} is in state {int(state[t])}, records "
                                f"{int(e.task_live[t])} live copies, {int(per_task[t])} run"))
        per_job = np.bincount(e.task_job[self.l_task], minlength=e.job_live.size)
        self.require("tasks", e.job_live == per_job, lambda j: (
            f"job {j} records {int(e.job_live[j])} live copies, {int(per_job[j])} run"))
        ready = int(np.count_nonzero(state == READY))
        if e.n_ready != ready:
            self.fail("tasks", f"{e.n_ready} tasks counted ready, {ready} are")
        started = state != WAITING
        self.require("tasks", ~started | (e.pending == 0), lambda t: (
            f"task {t} is in state {int(state[t])} with {int(e.pending[t])} dependencies "
            "pending"))
        if wl.n_edges:
            src, dst = wl.edge_src, wl.edge_dst
            self.require("tasks", ~started[dst] | done[src], lambda k: (
                f"task {int(dst[k])} is in state {int(state[dst[k]])} but its parent task "
                f"{int(src[k])} is not done"))
        finish = e.task_done
        self.require("tasks", (np.isnan(finish) != done)
                     & ~(finish > e.time + SHARE_TOL * max(1.0, abs(e.time))), lambda t: (
                         f"task {t} (state {int(state[t])}) has finish time {finish[t]:g}"))

    def check_stage_caps(self) -> None:
        """The ``stage caps`` invariant."""
        e = self.e
        if not e.staged:
            return
        n_groups = e.group_ready.size
        ready = np.bincount(e.group_of[e.task_state == READY], minlength=n_groups)
        running = np.bincount(e.group_of[e.task_state == RUNNING], minlength=n_groups)
        self.require("stage caps", (e.group_ready == ready) & (e.group_running == running),
                     lambda g: (f"stage group {g} (job {int(e.task_job[e.group_ptr[g]])}) "
                                f"records {int(e.group_ready[g])} tasks ready and "
                                f"{int(e.group_running[g])} running; {int(ready[g])} and "
                                f"{int(running[g])} are"))
        if e.capped:
            cap = self.model.workload.task_cap[e.group_ptr[:-1]]
            busy = ready + running
            self.require("stage caps", (cap <= 0) | (busy <= cap), lambda g: (
                f"stage group {g} (job {int(e.task_job[e.group_ptr[g]])}) has {int(busy[g])} "
                f"tasks ready or running, cap {int(cap[g])}"))

    def check_work(self) -> None:
        """The ``work`` invariant."""
        e, live, ids, task = self.e, self.live, self.ids, self.c_task
        base, progress = self.c_base, self.c_progress
        executed, wasted = self.c_executed, self.c_wasted
        work, saved = e.task_work, e.task_saved
        ok = (base >= -SHARE_TOL) & (base <= progress + SHARE_TOL) & (progress <= 1.0 + SHARE_TOL)
        ok &= (executed >= 0.0) & (wasted >= 0.0)
        ok &= wasted <= executed * (1.0 + WORK_RTOL) + WORK_RTOL * work[task]
        ok &= (self.c_outcome != WON) | (np.abs(progress - 1.0) <= SHARE_TOL)
        self.require("work", ok, lambda i: (
            f"copy {int(ids[i])} of task {int(task[i])} (outcome {int(self.c_outcome[i])}): "
            f"base {base[i]:.12g}, progress {progress[i]:.12g}, executed "
            f"{executed[i]:.12g}, wasted {wasted[i]:.12g}"))
        self.require("work", (saved >= 0.0) & (saved <= 1.0)
                     & ((e.task_state != DONE) | (saved == 1.0)), lambda t: (
                         f"task {t} (state {int(e.task_state[t])}) has checkpointed progress "
                         f"{saved[t]:.12g}"))
        l_task, l_base = self.l_task, self.l_base
        self.require("work", np.abs(l_base - saved[l_task]) <= SHARE_TOL, lambda i: (
            f"live copy {int(live[i])} of task {int(l_task[i])} started from "
            f"{l_base[i]:.12g}, the task's checkpoint is {saved[l_task[i]]:.12g}"))
        n_tasks = work.size
        kept = self.settled.kept + np.bincount(task, weights=executed - wasted,
                                               minlength=n_tasks)
        ahead = np.bincount(l_task, weights=self.l_progress - l_base, minlength=n_tasks)
        held = (saved + ahead) * work
        scale = self.settled.scale + np.bincount(task, weights=executed + wasted,
                                                 minlength=n_tasks) + work
        self.require("work", np.abs(kept - held) <= WORK_RTOL * scale, lambda t: (
            f"task {t}: its copies kept {kept[t]:.12g} of the work they executed, but it "
            f"holds {held[t]:.12g} (checkpoint {saved[t]:.12g}, live progress "
            f"{ahead[t]:.12g}, work {work[t]:.12g})"))
        n_jobs = e.job_work_left.size
        left = np.bincount(e.task_job, weights=(e.task_state != DONE) * (1.0 - saved) * work,
                           minlength=n_jobs)
        total = np.bincount(e.task_job, weights=work, minlength=n_jobs)
        self.require("work", np.abs(e.job_work_left - left) <= WORK_RTOL * total, lambda j: (
            f"job {j} records {e.job_work_left[j]:.12g} work left, its unfinished tasks "
            f"need {left[j]:.12g}"))

    def check_completion(self) -> None:
        """The ``completion`` invariant."""
        model, e = self.model, self.e
        n_tasks, n_jobs = e.task_state.size, e.job_left.size
        done = e.task_state == DONE
        wins = self.settled.wins + np.bincount(self.c_task[self.c_outcome == WON],
                                               minlength=n_tasks)
        self.require("completion", wins == done, lambda t: (
            f"task {t} ({'done' if done[t] else 'not done'}) has {int(wins[t])} winning "
            "copies"))
        left = np.bincount(e.task_job[~done], minlength=n_jobs)
        finished = ~np.isnan(e.job_done)
        last = np.maximum.reduceat(np.where(done, e.task_done, -np.inf),
                                   model.workload.task_ptr[:-1]) if n_jobs else np.empty(0)
        ok = (e.job_left == left) & (finished == (left == 0))
        ok &= ~finished | ((e.job_done == last) & (np.arange(n_jobs) < e.next_job))
        self.require("completion", ok, lambda j: (
            f"job {j} (arrived: {j < e.next_job}) records {int(e.job_left[j])} unfinished "
            f"tasks, {int(left[j])} are; finished at {e.job_done[j]:g}, its last task at "
            f"{last[j]:g}"))
        n_finished = int(np.count_nonzero(finished)) - len(e.finished_jobs)
        if model.jobs_done != n_finished:
            self.fail("completion", f"{model.jobs_done} jobs counted done, {n_finished} are")
        alive = np.flatnonzero(~finished[:e.next_job])
        if e.finished_jobs:
            alive = np.union1d(alive, e.finished_jobs)
        agents = np.fromiter(model.jobs, dtype=np.int64, count=len(model.jobs))
        if agents.size != alive.size or not np.array_equal(np.sort(agents), alive):
            j = int(np.setxor1d(agents, alive)[0])
            self.fail("completion", f"job {j} {'has' if j in model.jobs else 'lacks'} an agent "
                                    f"but is {'' if j in alive else 'not '}alive")


@njit(cache=True)
def _max_min_held(res: np.ndarray, starts: np.ndarray, move_res: np.ndarray,
                  move_starts: np.ndarray, bw: np.ndarray, cap: np.ndarray,
                  active: np.ndarray, demand: np.ndarray,
                  rtol: float) -> np.ndarray:  # pragma: no cover - compiled
    """Per transfer (flows, then moves), whether its bandwidth passes the max-min test.

    An active transfer passes when it gets all it asks (``demand``, when given) or crosses
    a resource that is full and on which no transfer gets more than it; an inactive one
    when it gets 0. Each resource's load and largest bandwidth are gathered in one pass
    (``np.maximum.at`` alone took up to a third of a checked max-min run).
    """
    n_flow = starts.size
    load = np.zeros(cap.size)
    top = np.zeros(cap.size)
    for j in range(bw.size):
        lo, hi = _span(j, n_flow, starts, move_starts, res.size, move_res.size)
        for k in range(lo, hi):
            r = res[k] if j < n_flow else move_res[k]
            load[r] += bw[j]
            top[r] = max(top[r], bw[j])
    ok = np.empty(bw.size, dtype=np.bool_)
    for j in range(bw.size):
        if not active[j]:
            ok[j] = bw[j] == 0.0
            continue
        held = demand.size > 0 and bw[j] >= demand[j] * (1.0 - rtol)
        lo, hi = _span(j, n_flow, starts, move_starts, res.size, move_res.size)
        for k in range(lo, hi):
            r = res[k] if j < n_flow else move_res[k]
            if load[r] >= cap[r] * (1.0 - rtol) and bw[j] >= top[r] * (1.0 - rtol):
                held = True
                break
        ok[j] = held
    return ok


@njit(cache=True)
def _span(j: int, n_flow: int, starts: np.ndarray, move_starts: np.ndarray, n_res: int,
          n_move_res: int) -> tuple[int, int]:  # pragma: no cover - compiled
    """Where transfer ``j``'s resources lie: in ``res`` for a flow, ``move_res`` for a move."""
    if j < n_flow:
        return starts[j], starts[j + 1] if j + 1 < n_flow else n_res
    m = j - n_flow
    return move_starts[m], move_starts[m + 1] if m + 1 < move_starts.size else n_move_res
