"""Invariants of a run, checked after every step in conformance mode.

Conformance mode is off by default. It is on for a model built with
``GeoModel(..., check_invariants=True)``, or, when that argument is left out, when the
environment variable ``GEOSIM_CHECK_INVARIANTS`` is set to anything but ``""``, ``0``,
``false``, ``no`` or ``off`` (read when the model is built). The model then calls
:meth:`Checker.check` at the end of every :meth:`~geosim.model.GeoModel.step` and runs
through the general step only: the compiled pool loop (:mod:`geosim.poolsim`) is not
checked, so a checked run never takes it.

Every check is a few compiled passes over the engine's tables (tasks, copies, slots,
clusters, links; :mod:`geosim.invariant_rules`) and NumPy operations for the rest; this
module words what they find. A copy never changes
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
    running exactly when it is not done and has a live copy; the job live-copy counts,
    the jobs' counts of tasks not yet ready and the ready count agree with the tables. A
    task is ready, running or done only when every task it reads output from is done and
    its stage barrier has fallen (pending count 0). A task has a finish time exactly
    when it is done, and it is not in the future.
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

from geosim.engine import ALIVE, DONE, READY, RUNNING, WAITING, WON, concat_ranges
from geosim.invariant_rules import (
    BANDWIDTH_RTOL,
    completion_rules,
    copy_rules,
    history_rules,
    max_min_held,
    slot_rules,
    task_rules,
    work_rules,
)

if TYPE_CHECKING:
    from geosim.engine import Engine
    from geosim.workload import Workload
    from geosim.world import World

#: The environment variable that turns conformance mode on.
ENV_VAR = "GEOSIM_CHECK_INVARIANTS"
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
        # What must not go back per task and job (:func:`history_rules` keeps it since).
        self.saved = e.task_saved.copy()
        self.task_done = e.task_done.copy()
        self.job_done = e.job_done.copy()
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
        self.jobs_done = model.jobs_done
        self.link_mb = e.link_mb.copy()
        self.samples = len(model.link_records)
        self.steps = model.steps_run

    def _check_history(self, state: _State) -> None:
        model, e = self.model, self.model.engine
        if e.time < self.time:
            state.fail("history", f"time went back from {self.time:g}")
        found = history_rules(tuple(e.tasks), tuple(e.jobs), self.saved, self.task_done,
                               self.job_done)
        if found[0] >= 0:
            saved, task_done, job_done = self.saved, self.task_done, self.job_done
            state.report(found, [
                ("history", lambda t: (f"task {t}: checkpointed progress fell from "
                                       f"{saved[t]:.12g} to {e.task_saved[t]:.12g}")),
                ("history", lambda t: (f"task {t} finished again: at {task_done[t]:g}, now "
                                       f"{e.task_done[t]:g}")),
                ("history", lambda j: (f"job {j} finished again: at {job_done[j]:g}, now "
                                       f"{e.job_done[j]:g}")),
            ])
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
    """One check of a model's state: the compiled rules, and the words of a violation.

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
        self.full = copies is None
        self.ids = np.arange(e.copies.n, dtype=np.int64) if copies is None else copies
        self.settled = settled if settled is not None else _Settled(e.task_state.size)
        self.live = e.live
        self.cols = e.copies.cols
        self.copies = e.copies.kernel_arg

    def fail(self, invariant: str, detail: str) -> NoReturn:
        """Raise :class:`InvariantError` at the engine's time."""
        raise InvariantError(invariant, self.e.time, detail)

    def require(self, invariant: str, ok: np.ndarray, describe: Callable[[int], str]) -> None:
        """Fail unless ``ok`` holds everywhere; ``describe(i)`` names the first ``i`` it fails."""
        if np.count_nonzero(ok) != ok.size:      # faster than ``ok.all()`` on small arrays
            bad = np.flatnonzero(~ok)
            self.report((0, int(bad[0]), bad.size), [(invariant, describe)])

    def report(self, found: tuple[int, int, int],
               rules: list[tuple[str, Callable[[int], str]]]) -> None:
        """Fail with the rule a compiled check found broken.

        Args:
            found: ``(rule, first, count)`` from a compiled check: the index of the broken
                rule in ``rules`` (-1: none), its first offender and how many there are.
            rules: Each rule's invariant and the words naming an offender.
        """
        rule, first, count = found
        invariant, describe = rules[rule]
        more = f" (and {count - 1} more)" if count > 1 else ""
        self.fail(invariant, describe(int(first)) + more)

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
        cols = self.cols
        ended = self.ids[cols["outcome"][self.ids] != ALIVE]
        if ended.size:
            self.settled.add(cols["task"][ended], cols["executed"][ended],
                             cols["wasted"][ended], cols["outcome"][ended] == WON)
        return self.settled

    # ------------------------------------------------------------------ resources
    def check_copies(self) -> None:
        """The ``copies`` and ``reachability`` invariants."""
        e, live, cols = self.e, self.live, self.cols
        n = e.copies.n
        found = copy_rules(self.ids, live, self.full, self.copies, n, self.world.slot_cluster,
                            e.reachable, e.task_state.size)
        if found[0] < 0:
            return
        task, slot, cluster, share = cols["task"], cols["slot"], cols["cluster"], cols["share"]
        self.report(found, [
            ("copies", lambda _: (f"the live list is not ascending ids of copies 0..{n - 1}: "
                                  f"{live.tolist()[:20]}")),
            ("copies", lambda i: (f"copy {int(live[i])} is live but was neither live nor new "
                                  "at the last check")),
            ("copies", lambda i: (f"live copy {int(live[i])} has outcome "
                                  f"{int(cols['outcome'][live[i]])}")),
            ("copies", lambda alive: f"{alive} copies have outcome alive, {live.size} are live"),
            ("copies", lambda i: (f"copy {int(live[i])} of task {int(task[live[i]])} on cluster "
                                  f"{int(cluster[live[i]])} has share {share[live[i]]:g} on "
                                  f"slot {int(slot[live[i]])}")),
            ("reachability", lambda i: (f"copy {int(live[i])} of task {int(task[live[i]])} runs "
                                        f"on unreachable cluster {int(cluster[live[i]])}")),
        ])

    def check_slots(self) -> None:
        """The ``slots`` invariant."""
        e, world = self.e, self.world
        counted = e.free_slots()
        found, used, count, busy, free = slot_rules(
            self.live, self.copies, tuple(e.slots), world.slot_cluster, world.slots,
            e.reachable, counted)
        if found[0] >= 0:
            self.report(found, [
                ("slots", lambda s: (f"slot {s} of cluster {int(world.slot_cluster[s])} records "
                                     f"share {e.slot_used[s]:.12g} busy by "
                                     f"{int(e.slot_copies[s])} copies; {int(count[s])} live "
                                     f"copies hold {used[s]:.12g}")),
                ("slots", lambda c: (f"cluster {c} has {busy[c]:.12g} slots busy of "
                                     f"{int(world.slots[c])}")),
                ("slots", lambda c: (f"cluster {c} counts {int(counted[c])} free slots, "
                                     f"its slots hold {int(free[c])}")),
                ("slots", lambda n: (f"{int(e.slots.shared[0])} slots are counted holding "
                                     f"more than one copy; {n} do")),
            ])
        # Every live copy runs at its slot's VM power of this period (keyed power draws it
        # only for the slots read).
        slot = self.cols["slot"][self.live]
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
        ok = max_min_held(flows.res, flows.starts, flows.move_res, flows.move_starts, bw,
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
        found, per_task, per_job = task_rules(
            self.live, self.copies, tuple(e.tasks), tuple(e.jobs), e.n_ready, wl.edge_src,
            wl.edge_dst, e.time)
        waiting = np.bincount(e.task_job[e.task_state == WAITING], minlength=wl.n_jobs)
        self.require("tasks", waiting == e.job_waiting, lambda j: (
            f"job {j} counts {int(e.job_waiting[j])} tasks not ready, {int(waiting[j])} are"))
        if found[0] < 0:
            return
        state, src, dst, finish = e.task_state, wl.edge_src, wl.edge_dst, e.task_done
        self.report(found, [
            ("tasks", lambda _: f"task states outside {WAITING}..{DONE}"),
            ("tasks", lambda t: (f"task {t} is in state {int(state[t])}, records "
                                 f"{int(e.task_live[t])} live copies, {int(per_task[t])} run")),
            ("tasks", lambda j: (f"job {j} records {int(e.job_live[j])} live copies, "
                                 f"{int(per_job[j])} run")),
            ("tasks", lambda ready: f"{e.n_ready} tasks counted ready, {ready} are"),
            ("tasks", lambda t: (f"task {t} is in state {int(state[t])} with "
                                 f"{int(e.pending[t])} dependencies pending")),
            ("tasks", lambda k: (f"task {int(dst[k])} is in state {int(state[dst[k]])} but its "
                                 f"parent task {int(src[k])} is not done")),
            ("tasks", lambda t: (f"task {t} (state {int(state[t])}) has finish time "
                                 f"{finish[t]:g}")),
        ])

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
        e, ids, live, cols = self.e, self.ids, self.live, self.cols
        found, kept, held, ahead, left = work_rules(
            ids, live, self.copies, tuple(e.tasks), tuple(e.jobs), self.settled.kept,
            self.settled.scale)
        if found[0] < 0:
            return
        task, base, progress = cols["task"], cols["base"], cols["progress"]
        work, saved = e.task_work, e.task_saved
        self.report(found, [
            ("work", lambda i: (f"copy {int(ids[i])} of task {int(task[ids[i]])} (outcome "
                                f"{int(cols['outcome'][ids[i]])}): base {base[ids[i]]:.12g}, "
                                f"progress {progress[ids[i]]:.12g}, executed "
                                f"{cols['executed'][ids[i]]:.12g}, wasted "
                                f"{cols['wasted'][ids[i]]:.12g}")),
            ("work", lambda t: (f"task {t} (state {int(e.task_state[t])}) has checkpointed "
                                f"progress {saved[t]:.12g}")),
            ("work", lambda i: (f"live copy {int(live[i])} of task {int(task[live[i]])} started "
                                f"from {base[live[i]]:.12g}, the task's checkpoint is "
                                f"{saved[task[live[i]]]:.12g}")),
            ("work", lambda t: (f"task {t}: its copies kept {kept[t]:.12g} of the work they "
                                f"executed, but it holds {held[t]:.12g} (checkpoint "
                                f"{saved[t]:.12g}, live progress {ahead[t]:.12g}, work "
                                f"{work[t]:.12g})")),
            ("work", lambda j: (f"job {j} records {e.job_work_left[j]:.12g} work left, its "
                                f"unfinished tasks need {left[j]:.12g}")),
        ])

    def check_completion(self) -> None:
        """The ``completion`` invariant."""
        model, e = self.model, self.e
        found, wins, left, last, n_finished = completion_rules(
            self.ids, self.copies, tuple(e.tasks), tuple(e.jobs), model.workload.task_ptr,
            self.settled.wins, e.next_job)
        if found[0] >= 0:
            done = e.task_state == DONE
            self.report(found, [
                ("completion", lambda t: (f"task {t} ({'done' if done[t] else 'not done'}) has "
                                          f"{int(wins[t])} winning copies")),
                ("completion", lambda j: (f"job {j} (arrived: {j < e.next_job}) records "
                                          f"{int(e.job_left[j])} unfinished tasks, "
                                          f"{int(left[j])} are; finished at {e.job_done[j]:g}, "
                                          f"its last task at {last[j]:g}")),
            ])
        n_finished -= len(e.finished_jobs)
        if model.jobs_done != n_finished:
            self.fail("completion", f"{model.jobs_done} jobs counted done, {n_finished} are")
        finished = ~np.isnan(e.job_done)
        alive = np.flatnonzero(~finished[:e.next_job])
        if e.finished_jobs:
            alive = np.union1d(alive, e.finished_jobs)
        agents = np.fromiter(model.jobs, dtype=np.int64, count=len(model.jobs))
        if agents.size != alive.size or not np.array_equal(np.sort(agents), alive):
            j = int(np.setxor1d(agents, alive)[0])
            self.fail("completion", f"job {j} {'has' if j in model.jobs else 'lacks'} an agent "
                                    f"but is {'' if j in alive else 'not '}alive")
