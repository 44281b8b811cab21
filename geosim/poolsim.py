"""The compiled event loop of 002's model: one machine pool, the PoolPolicy family.

Under event timing (``run.timing = "event"``) a run of a :class:`~geosim.schedulers.pool.
PoolPolicy` (SRPT+R, Fair+R, LAPS+R(β) and their twins) on a world that is just a pool
of machines is the model of 002 §6 exactly: single-task jobs arrive, at every arrival and
departure every job is checkpointed and the policy gives each job machines, and between
events each copy runs at its machine's speed times its availability level. That loop is
here in one compiled function (its decision at an event in :mod:`geosim.pooldecide`), so a
20 000-job run takes a fraction of a second instead of tens of seconds through the
general step.

It is the same model as the general event-timed step (:class:`~geosim.model.GeoModel`
with :attr:`GeoModel.compiled` off), behind the same contract: :func:`run` takes plain
values (:class:`PoolSetup`) and the run's :class:`~geosim.guards.RunGuards`, fills the
engine's arrays in place, and returns a :class:`PoolOutcome` that the model applies. The
copies table keeps only the columns the results read (a copy's progress and rate live
only while it does). Two things differ, neither a modelling change:

- machines are drawn uniformly at random as :func:`~geosim.schedulers.pool.apply_allocation`
  draws them (the same candidates, the same rules for keeping copies), but from a
  generator of the kernel's own (xorshift64*, seeded from the scheduler's stream), so
  the particular machines differ from the general step's; on a pool of identical,
  always-available machines the job tables agree to rounding (a test checks it);
- the loop stops at every availability phase change, not only those of busy machines
  (rates are constant between stops either way).

:func:`unsupported` says why a run cannot use it (then the general step runs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from geosim.engine import DONE, LOST, READY, WON
from geosim.guards import RunGuards
from geosim.jit import njit
from geosim.pooldecide import EPS, catch_up, compact, decide, end_copy, set_rate
from geosim.series import CLUSTER_INDEX, CLUSTER_SERIES

#: Allocation rules of the PoolPolicy family, by registered base name.
KINDS = {"srpt+r": 0, "fair+r": 1, "laps+r": 2}
# Return codes of the kernel.
_DONE, _CHUNK, _COPIES, _RECORDS, _STALLED = 0, 1, 2, 3, 4
#: Availability phase changes are fetched this many simulated seconds at a time.
CHUNK_SECONDS = 5000.0
#: The engine's task and job arrays the loop reads and writes in place, in this order.
TASK_ARRAYS = ("task_state", "task_saved", "task_ready", "task_start", "task_done",
               "task_cluster", "task_copies", "task_checkpoints", "task_live",
               "job_work_left", "job_checkpoints")


@dataclass
class PoolSetup:
    """What the compiled loop runs: plain values, none of them the model.

    Attributes:
        arrival: Arrival instant of each job (one task per job).
        work: Work of each task (MI).
        power: Power of each slot (machine).
        slot_cluster: Cluster of each slot.
        slots: Slots of each cluster (for the samples).
        availability: The world's availability process, or None (machines always on).
        tasks: The engine's :data:`TASK_ARRAYS`, written in place.
        slot_used: The engine's busy share of each slot, written in place.
        slot_copies: The engine's running copies of each slot, written in place.
        copies: The engine's copies table, filled and grown in place.
        policy: The allocation rule and its parameters (:func:`policy_params`).
        seed: Seed of the loop's own machine draws (drawn from the scheduler's stream).
        time: The instant the run starts from.
        horizon: ``run.horizon`` (0: none).
        record_interval: ``run.record_interval``.
        next_record, last_record: The instants of the next and the last sample.
    """

    arrival: np.ndarray
    work: np.ndarray
    power: np.ndarray
    slot_cluster: np.ndarray
    slots: np.ndarray
    availability: Any
    tasks: tuple[np.ndarray, ...]
    slot_used: np.ndarray
    slot_copies: np.ndarray
    copies: Any
    policy: tuple[int, float, int, bool]
    seed: int
    time: float
    horizon: float
    record_interval: float
    next_record: float
    last_record: float


@dataclass
class PoolOutcome:
    """Where the compiled loop left the run, for the model to apply.

    Attributes:
        time: The instant reached.
        steps: Events run (the model's steps).
        jobs_done: Jobs finished.
        next_job: The first job not yet arrived.
        next_record, last_record: The instants of the next and the last sample.
        live: The copies alive at the end (ids in the copies table).
        n_copies: Rows of the copies table the loop filled.
        samples: The cluster samples taken, one block of rows in the columns of
            :data:`~geosim.series.CLUSTER_SERIES` (None when none was taken).
        stalled: Jobs alive when the run stalled (0: it did not).
    """

    time: float
    steps: int
    jobs_done: int
    next_job: int
    next_record: float
    last_record: float
    live: np.ndarray
    n_copies: int
    samples: dict[str, np.ndarray] | None
    stalled: int


def unsupported(policy, world, workload, engine, *, event_timing: bool,
                places_data: bool) -> str:
    """Why a run of ``policy`` on this world, workload and engine cannot use the loop.

    Returns:
        The reason, or '' when it can.
    """
    from geosim.schedulers.pool import PoolPolicy
    kind = _kind(policy)
    for why, bad in (
            ("timing is not 'event'", not event_timing),
            ("the scheduler is not one of 002's pool policies",
             not isinstance(policy, PoolPolicy) or kind < 0),
            ("jobs have more than one task", workload.n_tasks != workload.n_jobs),
            ("jobs have stages, caps or edges", engine.staged or workload.n_edges > 0),
            ("tasks read input", engine.has_inputs),
            ("copies vary in work", engine.variability != "none"),
            ("the world has outages", world.outages is not None),
            ("VM power is redrawn", world.power.period > 0),
            ("raw input is moved before arrival", places_data)):
        if bad:
            return why
    return ""


def policy_params(policy) -> tuple[int, float, int, bool]:
    """The loop's view of a pool policy: rule (:data:`KINDS`), beta, copy cap, random."""
    return (_kind(policy), float(getattr(policy, "beta", 0.0)), policy.max_copies or 0,
            policy.reassign == "random")


def _kind(policy) -> int:
    for cls in type(policy).__mro__:
        if getattr(cls, "name", "") in KINDS:
            return KINDS[cls.name]
    return -1


def run(setup: PoolSetup, guards: RunGuards, stall_seconds: float) -> PoolOutcome:
    """Run events to the end (or the horizon) on the compiled loop.

    Args:
        setup: The run's arrays, pool, policy and clock.
        guards: The run's step and wall-clock limits, checked between kernel calls.
        stall_seconds: Simulated seconds with alive jobs and no completion after which
            the loop stops (the outcome's ``stalled`` then counts the alive jobs).

    Raises:
        GeosimError: ``run.max_steps`` or ``run.max_wall_seconds`` exceeded, or the
            copies table would exceed its budget.
    """
    n, m = setup.arrival.size, setup.power.size
    n_clusters = setup.slots.size
    avail = setup.availability
    # The copies table keeps what the results read; a copy's progress, base and rate
    # matter only while it lives, so they are kept per live copy.
    table = setup.copies
    table.keep(_COLUMNS + ("cluster",))
    cap = max(1024, 4 * n)
    copies = _copy_arrays(table, cap)
    records = _record_arrays(1024, n_clusters)
    fs = np.array([setup.time, setup.next_record, setup.time, setup.last_record])
    # next job, live copies, alive jobs, decision pending, steps, copies, samples, phase
    # change, jobs in and length of the SRPT order
    iv = np.zeros(10, dtype=np.int64)
    iv[3] = 1                                   # an event is pending: decide first
    rng = np.array([setup.seed], dtype=np.uint64)
    level = np.ones(m) if avail is None else avail.level.copy()
    on = np.ones(m, dtype=bool) if avail is None else avail.on.copy()
    chunk_end = math.inf if avail is None else -math.inf
    ch = (np.empty(0, dtype=np.int64), np.empty(0), np.empty(0))
    # Live copies never exceed jobs + machines: per live copy, its id, progress, base,
    # the instant progress was last brought up to date, the rate since, and the instant
    # it finishes at that rate (memory is taken only as far as they are written).
    live = np.empty(n + m, dtype=np.int64)
    per_live = np.empty((5, n + m))
    alive = np.empty(n, dtype=np.int64)
    i64 = np.int64
    scratch = (np.zeros(n), np.full(n, -1, i64), np.zeros(n, i64), np.zeros(n, i64),
               np.zeros(m, i64), np.empty(n + m + 1, i64), np.empty(n, i64),
               np.empty(n + m + 1, i64), np.zeros(m, i64))
    kind, beta, max_copies, random = setup.policy
    params = np.array([kind, max_copies, random], dtype=np.int64)
    fparams = np.array([beta, setup.horizon, setup.record_interval, 0.0, stall_seconds])
    slots = (setup.power, setup.slot_cluster, level, on, setup.slot_used, setup.slot_copies)
    task_state = setup.tasks[0]
    while True:
        if avail is not None and not chunk_end > fs[0]:
            chunk_end = fs[0] + CHUNK_SECONDS
            ch = avail.changes(chunk_end)
            iv[7] = 0
        fparams[3] = chunk_end
        code = _loop(fs, iv, rng, params, fparams, setup.arrival, setup.work, slots, ch,
                     setup.tasks, copies, live, per_live, alive, scratch, records)
        guards.check(int(iv[4]), float(fs[0]), int(np.count_nonzero(task_state == DONE)), n)
        if code == _CHUNK:
            continue
        if code == _COPIES:
            table.set_rows(int(iv[5]))  # the rows to keep
            copies = _copy_arrays(table, table.grown(int(iv[0]), n))
            continue
        if code == _RECORDS:
            records = _grow(records, _record_arrays(2 * records[0].size, n_clusters))
            continue
        break
    n_copies = int(iv[5])
    table.set_rows(n_copies)
    _clusters_of(copies[1], setup.slot_cluster, table.cols["cluster"], n_copies)
    table.resize_in_place(n_copies)     # the run is over: keep no unused rows
    return PoolOutcome(
        time=float(fs[0]), steps=int(iv[4]),
        jobs_done=int(np.count_nonzero(task_state == DONE)), next_job=int(iv[0]),
        next_record=float(fs[1]), last_record=float(fs[3]), live=live[:iv[1]].copy(),
        n_copies=n_copies,
        samples=_samples(records, int(iv[6]), setup.slots),
        stalled=int(iv[2]) if code == _STALLED else 0)


#: Columns of the engine's copies table the loop fills, in the order it takes them.
_COLUMNS = ("task", "slot", "share", "start", "end", "executed", "wasted", "share_time",
            "outcome")


def _copy_arrays(table, cap: int) -> tuple[np.ndarray, ...]:
    """The engine's copy columns, grown in place to ``cap`` rows (the loop writes them).

    Nothing but the loop's own references holds the columns while it runs, so the table
    may grow where it lies (:meth:`~geosim.engine.Table.resize_in_place`).
    """
    if table.capacity < cap:
        table.resize_in_place(cap)
    return tuple(table.cols[name] for name in _COLUMNS)


def _record_arrays(cap: int, n_clusters: int) -> tuple[np.ndarray, ...]:
    """time; available slots, busy share, copies per cluster."""
    return (np.zeros(cap), np.zeros((cap, n_clusters), np.int64),
            np.zeros((cap, n_clusters)), np.zeros((cap, n_clusters), np.int64))


def _grow(old: tuple[np.ndarray, ...], new: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    for a, b in zip(old, new, strict=True):
        b[: a.shape[0]] = a
    return new


def _samples(records, n_rec: int, slots: np.ndarray) -> dict[str, np.ndarray] | None:
    """The loop's samples as one block of cluster-series rows, sample by sample.

    A pool has no outages, queues of data or network traffic: every cluster is
    reachable, and its queue and traffic are zero.
    """
    t, avail_slots, busy, count = records
    c = slots.size
    rows = n_rec * c
    if not rows:
        return None
    values = {
        "time": np.repeat(t[:n_rec], c), CLUSTER_INDEX: np.tile(np.arange(c), n_rec),
        "reachable": np.ones(rows, bool), "slots": np.tile(slots, n_rec),
        "available_slots": avail_slots[:n_rec].flatten(), "busy": busy[:n_rec].flatten(),
        "copies": count[:n_rec].flatten(), "queue": np.zeros(rows, dtype=np.int64),
        "egress_mbps": np.zeros(rows), "ingress_mbps": np.zeros(rows)}
    return {name: values[name] for name in CLUSTER_SERIES}


# ---------------------------------------------------------------------- compiled
@njit(cache=True)
def _clusters_of(slot, slot_cluster, out, n):  # pragma: no cover - compiled
    """``out[:n] = slot_cluster[slot[:n]]`` without a temporary."""
    for c in range(n):
        out[c] = slot_cluster[slot[c]]


@njit(cache=True, inline="always")
def _catch_up_all(t, n_live, live, per_live, work, copies):  # pragma: no cover - compiled
    """Bring every live copy's progress and integrals to ``t``."""
    lprog, lt0, lrate = per_live[0], per_live[2], per_live[3]
    ctask, cshare, cexec, cshare_t = copies[0], copies[2], copies[5], copies[7]
    for i in range(n_live):
        catch_up(i, live[i], t, work, ctask, cshare, cexec, cshare_t, lprog, lt0, lrate)


@njit(cache=True, inline="always")
def _sample(t, k, slots, records):  # pragma: no cover - compiled
    """Sample ``k``: each cluster's available slots, busy share and copies at ``t``."""
    power, slot_cluster, on, slot_used, slot_copies = slots[0], slots[1], slots[3], \
        slots[4], slots[5]
    rec_t, rec_avail, rec_busy, rec_copies = records
    rec_t[k] = t
    for c in range(rec_avail.shape[1]):
        rec_avail[k, c] = 0
        rec_busy[k, c] = 0.0
        rec_copies[k, c] = 0
    for s in range(power.size):
        c = slot_cluster[s]
        rec_avail[k, c] += on[s]
        rec_busy[k, c] += slot_used[s]
        rec_copies[k, c] += slot_copies[s]


@njit(cache=True, inline="always")
def _arrive(t, iv, arrival, tasks, alive, n_alive):  # pragma: no cover - compiled
    """Jobs arrived by ``t`` become ready and alive (a decision is then due)."""
    tstate, tready = tasks[0], tasks[2]
    while iv[0] < arrival.size and arrival[iv[0]] <= t:
        j = iv[0]
        tstate[j] = READY
        tready[j] = t
        alive[n_alive] = j
        n_alive += 1
        iv[0] = j + 1
        iv[3] = 1
    return n_alive


@njit(cache=True, inline="always")
def _next_stop(fs, iv, arrival, horizon, ch_t, chunk_end):  # pragma: no cover - compiled
    """The next stop: arrival, sample, horizon, phase change or chunk end."""
    t_next = fs[1]
    if iv[0] < arrival.size:
        t_next = min(t_next, arrival[iv[0]])
    if horizon > 0:
        t_next = min(t_next, horizon)
    if iv[7] < ch_t.size:
        t_next = min(t_next, ch_t[iv[7]])
    else:
        t_next = min(t_next, chunk_end)
    return t_next


@njit(cache=True, inline="always")
def _first_finish(n_live, lfin):  # pragma: no cover - compiled
    """The earliest instant a live copy finishes at its current rate."""
    first = math.inf
    for i in range(n_live):
        first = min(first, lfin[i])
    return first


@njit(cache=True, inline="always")
def _complete(t, t_next, n_live, n_alive, live, per_live, alive, work, slots, tasks, copies,
              scratch):  # pragma: no cover - compiled
    """Completions at ``t_next``: the first copy of a task to finish wins it.

    Returns:
        The live copies and alive jobs left.
    """
    lprog, lbase, lt0, lrate, lfin = per_live[0], per_live[1], per_live[2], per_live[3], \
        per_live[4]
    slot_cluster, slot_used, slot_copies = slots[1], slots[4], slots[5]
    tstate, saved, tdone, tcluster, tlive, jwork_left = tasks[0], tasks[1], tasks[4], \
        tasks[5], tasks[8], tasks[9]
    ctask, cslot, cshare, cend, cexec, cwaste, cshare_t, cout = copies[0], copies[1], \
        copies[2], copies[4], copies[5], copies[6], copies[7], copies[8]
    cmax, clead = scratch[0], scratch[1]
    span = t_next - t
    for i in range(n_live):
        c = live[i]
        if lfin[i] - t <= span * (1.0 + EPS) or lfin[i] <= t_next:
            j = ctask[c]
            if clead[j] < 0 or lfin[i] < cmax[j]:
                clead[j] = c
                cmax[j] = lfin[i]
    for i in range(n_live):
        c = live[i]
        j = ctask[c]
        if clead[j] < 0:
            continue
        w, at = clead[j], cmax[j]
        catch_up(i, c, max(min(at, t_next), t), work, ctask, cshare, cexec, cshare_t,
                 lprog, lt0, lrate)
        if c == w:
            cexec[c] += (1.0 - lprog[i]) * work[j]
            lprog[i] = 1.0
        end_copy(i, c, at, WON if c == w else LOST, work, ctask, cslot, cshare, cend,
                 cwaste, cout, lprog, lbase, slot_used, slot_copies, tlive)
        if tlive[j] == 0:
            tstate[j] = DONE
            tdone[j] = at
            tcluster[j] = slot_cluster[cslot[w]]
            jwork_left[j] -= (1.0 - saved[j]) * work[j]
            saved[j] = 1.0
            clead[j] = -1
    n_live = compact(live, n_live, cout, cslot, scratch[8], lprog, lbase, lt0, lrate, lfin)
    k = 0
    for i in range(n_alive):
        if tstate[alive[i]] != DONE:
            alive[k] = alive[i]
            k += 1
    return n_live, k


@njit(cache=True, inline="always")
def _phase_changes(t, iv, ch, n_live, live, per_live, work, slots, copies, slot_at,
                   first):  # pragma: no cover - compiled
    """Availability phase changes at ``t``: the copies on those machines change rate.

    A machine's only copy is found at ``slot_at``; several are found by a scan. Returns
    the first finish of the live copies, ``first`` before the changes.
    """
    ch_e, ch_t, ch_lv = ch
    lprog, lt0, lrate, lfin = per_live[0], per_live[2], per_live[3], per_live[4]
    power, level, on, slot_copies = slots[0], slots[2], slots[3], slots[5]
    ctask, cslot, cshare, cexec, cshare_t = copies[0], copies[1], copies[2], copies[5], \
        copies[7]
    rescan = False
    while iv[7] < ch_t.size and ch_t[iv[7]] <= t:
        s = ch_e[iv[7]]
        k = slot_copies[s]
        lo, hi = (slot_at[s], slot_at[s] + 1) if k == 1 else (0, n_live if k > 1 else 0)
        for i in range(lo, hi):
            c = live[i]
            if cslot[c] == s:
                catch_up(i, c, t, work, ctask, cshare, cexec, cshare_t, lprog, lt0,
                         lrate)
        level[s] = ch_lv[iv[7]]
        on[s] = not on[s]
        for i in range(lo, hi):
            c = live[i]
            if cslot[c] == s:
                old = lfin[i]
                set_rate(i, c, t, work, power, level, ctask, cslot, cshare, lprog,
                         lrate, lfin)
                if lfin[i] <= first:
                    first = lfin[i]
                elif old == first:
                    rescan = True
        iv[7] += 1
    return _first_finish(n_live, lfin) if rescan else first


@njit(cache=True, _nrt=False)
def _loop(fs, iv, rng, params, fparams, arrival, work, slots, ch, tasks, copies, live,
          per_live, alive, scratch, records):  # pragma: no cover - compiled
    """Run events until the end, the chunk's end, or a full table (see the return codes).

    A copy's progress is brought up to date only when something reads or changes it (a
    decision, its completion, a phase change of its machine): between those instants its
    rate is constant and ``lfin`` is when it finishes. ``live[i]`` is a live copy and
    ``lprog[i]``, ``lbase[i]``, ``lt0[i]``, ``lrate[i]``, ``lfin[i]`` (the rows of
    ``per_live``) its state. The tuples hold the arrays in these orders: ``slots``
    (power, cluster, level, on, used share, copies), ``ch`` (machine, instant, level of
    the chunk's phase changes), ``tasks`` (:data:`TASK_ARRAYS`), ``copies``
    (:data:`_COLUMNS`), ``scratch`` (best progress, leading copy, wanted and kept
    copies per job, free units per machine, candidates, job order, counts, and the
    position in ``live`` of each machine's copy, kept for a machine with one copy) and
    ``records`` (time, available slots, busy share, copies per cluster). ``first``, the
    earliest ``lfin``, is found anew after a decision or a completion and kept up to date
    through phase changes, which move one copy each.

    Compiled without reference counting (``_nrt=False``, see ``docs/architecture.md``):
    it took a third of the loop's time, so no helper may make an array.
    """
    n, m = arrival.size, slots[0].size
    beta, horizon, interval, chunk_end, stall = (fparams[0], fparams[1], fparams[2],
                                                 fparams[3], fparams[4])
    ch_t, lfin = ch[1], per_live[4]
    t = fs[0]
    n_live, n_alive = iv[1], iv[2]
    slot_at = scratch[8]
    first = _first_finish(n_live, lfin)
    while True:
        # ---- a sample is due: the state at this instant, before any decision
        if t >= fs[1] - 1e-9:
            k = iv[6]
            if k >= records[0].size:
                iv[1], iv[2] = n_live, n_alive
                return _RECORDS
            _sample(t, k, slots, records)
            iv[6] = k + 1
            fs[3] = t
            while fs[1] <= t + 1e-9:
                fs[1] += interval
        n_alive = _arrive(t, iv, arrival, tasks, alive, n_alive)
        if horizon > 0 and t >= horizon - 1e-9 or iv[0] >= n and n_alive == 0:
            _catch_up_all(t, n_live, live, per_live, work, copies)
            iv[1], iv[2] = n_live, n_alive
            fs[0] = t
            return _DONE
        if iv[3] != 0 and n_alive > 0:
            if iv[5] + n_alive + m >= copies[0].size:
                iv[1], iv[2] = n_live, n_alive
                fs[0] = t
                return _COPIES
            iv[3] = 0
            n_live = decide(t, n_live, n_alive, rng, iv, params, beta, live, per_live,
                            alive, work, slots, tasks, copies, scratch)
            first = _first_finish(n_live, lfin)
        # ---- the next event: arrival, completion, phase change, sample, horizon, chunk
        t_next = _next_stop(fs, iv, arrival, horizon, ch_t, chunk_end)
        if first < t_next:
            t_next = first
            n_live, n_alive = _complete(t, t_next, n_live, n_alive, live, per_live, alive,
                                        work, slots, tasks, copies, scratch)
            first = _first_finish(n_live, lfin)
            iv[3] = 1
            fs[2] = t_next
        t = t_next
        fs[0] = t
        iv[4] += 1
        first = _phase_changes(t, iv, ch, n_live, live, per_live, work, slots, copies,
                               slot_at, first)
        if n_alive > 0 and t - fs[2] > stall:
            iv[1], iv[2] = n_live, n_alive
            return _STALLED
        if n_alive == 0:
            fs[2] = t
        if iv[7] >= ch_t.size and t >= chunk_end:
            iv[1], iv[2] = n_live, n_alive
            return _CHUNK
