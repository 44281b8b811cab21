"""Compiled kernels of the general step: rates, completions, progress and bookkeeping.

:func:`step_kernel` runs the live copies through one span: :func:`rates` (each copy's
rate and each transfer's bandwidth), :func:`finish_kernel` (which copies finish in the
span and which of them wins its task), then :func:`apply` (progress, received fractions
and integrals). :func:`complete_kernel` then ends the finishing tasks' copies and
releases their children. :func:`run_step` runs :func:`step_kernel`, or for many live
copies the same steps with each loop split among threads (:func:`rates_wide`,
:func:`apply_wide`; :mod:`geosim.threads`).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from geosim.engine.base import ALIVE, DONE, LOST, WON, fmax, fmin, sorted_unique
from geosim.engine.records import Flows, Graph, Groups, JobState, SlotState, TaskState
from geosim.engine.tables import CopyCols, InputCols
from geosim.jit import njit, prange
from geosim.threads import part_bounds, wide

#: :func:`change_that_matters` asks whether a copy could reach a limit within this
#: factor of a span (far above the rounding of its bound and of the span's time-average
#: availability).
WITHIN = 1.0 + 1e-6


class Span(NamedTuple):
    """One span of :func:`step_kernel`.

    Attributes:
        t: Its start (s).
        dt: Its length (s).
        limit: A copy whose time left is at most this finishes in the span.
        slack: ``1 + eps``: a transfer whose time left is within ``elapsed * slack``
            arrives in full.
        fetch: ``links.transfer`` is ``"fetch"`` (else ``"stream"``).
    """

    t: float
    dt: float
    limit: float
    slack: float
    fetch: bool


class Rates(NamedTuple):
    """Rates of a span.

    Per live copy: speed, work, share, rate, progress and time left; per transfer: its
    bandwidth, size, fetch rate, received fraction and time left (fetch mode).
    """

    speed: np.ndarray
    work: np.ndarray
    share: np.ndarray
    rate: np.ndarray
    progress: np.ndarray
    left: np.ndarray
    bw: np.ndarray
    size: np.ndarray
    fetch_rate: np.ndarray
    got: np.ndarray
    fetch_left: np.ndarray


@njit(cache=True)
def fold_groups(values, group, pos, out, largest, lo, hi):  # pragma: no cover - compiled
    """Fold each copy's run of ``values`` into ``out[pos]``, for the runs ``lo:hi``.

    ``group`` holds the runs' starts. The minimum of the run and ``out``
    (``np.minimum.reduceat`` then ``np.minimum``), or the maximum when ``largest``, in
    the same order.
    """
    n = values.size
    for g in range(lo, hi):
        start = group[g]
        end = group[g + 1] if g + 1 < group.size else n
        acc = values[start]
        for j in range(start + 1, end):
            acc = fmax(acc, values[j]) if largest else fmin(acc, values[j])
        p = pos[start]
        out[p] = fmax(out[p], acc) if largest else fmin(out[p], acc)


@njit(cache=True)
def _empty_rates(n, flow_bw, n_flow):  # pragma: no cover - compiled
    """The fields of :class:`Rates` of ``n`` copies and ``n_flow`` transfers, to be filled.

    (A plain tuple: the kernels' parts take plain tuples, which Numba's threaded loops
    pass where named ones fail; each part names the fields again.)
    """
    return (np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n),
            flow_bw[:n_flow], np.empty(n_flow), np.empty(n_flow), np.empty(n_flow),
            np.empty(n_flow))


@njit(cache=True)
def _copy_rates(lo, hi, live, copies, task_work, level, avail, r):  # pragma: no cover
    """Speed, work, share, rate and progress of the live copies ``lo:hi`` into ``r``."""
    copies, r = CopyCols(*copies), Rates(*r)
    for p in range(lo, hi):
        c = live[p]
        sp = level[copies.slot[c]]
        if avail.size:
            sp = sp * avail[p]
        r.speed[p] = sp
        w = task_work[copies.task[c]]
        r.work[p] = w
        r.share[p] = copies.share[c]
        r.rate[p] = copies.share[c] * sp / (w * copies.factor[c])
        r.progress[p] = copies.progress[c]


@njit(cache=True)
def _flow_rates(lo, hi, idx, inputs, fetch, r):  # pragma: no cover - compiled
    """Size, fetch rate, received fraction and time left of the transfers ``lo:hi``."""
    inputs, r = InputCols(*inputs), Rates(*r)
    for j in range(lo, hi):
        r.size[j] = inputs.size[idx[j]]
        r.fetch_rate[j] = r.bw[j] / r.size[j]
        r.got[j] = inputs.received[idx[j]]
        if fetch:
            r.fetch_left[j] = ((1.0 - r.got[j]) / r.fetch_rate[j] if r.fetch_rate[j] > 0
                               else np.inf)


@njit(cache=True)
def _time_left(lo, hi, r):  # pragma: no cover - compiled
    """Time each of the live copies ``lo:hi`` needs to finish at its rate."""
    r = Rates(*r)
    for p in range(lo, hi):
        r.left[p] = (1.0 - r.progress[p]) / r.rate[p] if r.rate[p] > 0 else np.inf


@njit(cache=True)
def rates(live, copies, inputs, task_work, level, avail, fetch, flows_on, flows,
          flow_bw):  # pragma: no cover - compiled
    """Rates of the live copies and of their transfers, and the time each copy needs.

    ``avail`` is the availability factor of each live copy's slot (empty: none);
    ``level`` each slot's VM power; ``flow_bw`` each transfer's bandwidth
    (:func:`geosim.engine.sharing.allocate`). A copy's transfers bound its rate when
    inputs stream, its time left when they are fetched.

    Returns:
        The :class:`Rates`.
    """
    n = live.size
    n_flow = flows.idx.size if flows_on else 0
    rt = _empty_rates(n, flow_bw, n_flow)
    r = Rates(*rt)
    _copy_rates(0, n, live, copies, task_work, level, avail, rt)
    _flow_rates(0, n_flow, flows.idx, inputs, fetch, rt)
    n_group = flows.group.size if n_flow else 0
    if not fetch:
        fold_groups(r.fetch_rate, flows.group, flows.pos, r.rate, False, 0, n_group)
    _time_left(0, n, rt)
    if fetch:
        fold_groups(r.fetch_left, flows.group, flows.pos, r.left, True, 0, n_group)
    return r


@njit(cache=True, parallel=True)
def rates_wide(live, copies, inputs, task_work, level, avail, fetch, flows_on, flows,
               flow_bw, parts):  # pragma: no cover - compiled
    """:func:`rates`, each loop split over the threads (:mod:`geosim.threads`).

    ``copies``, ``inputs`` and ``flows`` are the plain tuples of their records; so are
    the rates returned. ``parts``: how many parts each loop is split into (one per
    thread; a kernel reading Numba's thread count itself could not be cached).
    """
    idx, pos, group = flows[0], flows[1], flows[6]
    n = live.size
    n_flow = idx.size if flows_on else 0
    rt = _empty_rates(n, flow_bw, n_flow)
    rate, left, fetch_rate, fetch_left = rt[3], rt[5], rt[8], rt[10]
    n_group = group.size if n_flow else 0
    at, fl, gr = part_bounds(n, parts), part_bounds(n_flow, parts), part_bounds(n_group, parts)
    for k in prange(parts):
        _copy_rates(at[k], at[k + 1], live, copies, task_work, level, avail, rt)
        _flow_rates(fl[k], fl[k + 1], idx, inputs, fetch, rt)
    if not fetch:
        for k in prange(parts):
            fold_groups(fetch_rate, group, pos, rate, False, gr[k], gr[k + 1])
    for k in prange(parts):
        _time_left(at[k], at[k + 1], rt)
    if fetch:
        for k in prange(parts):
            fold_groups(fetch_left, group, pos, left, True, gr[k], gr[k + 1])
    return rt


@njit(cache=True)
def next_event_kernel(live, copies, inputs, task_work, level, avail, fetch, flows,
                      flow_bw):  # pragma: no cover - compiled
    """Seconds until a live copy finishes or one of its inputs arrives, at today's rates.

    The rates of :func:`rates` (``avail``: each live copy's availability factor, empty for
    none); ``inf`` when nothing would end.
    """
    copies, inputs, flows = CopyCols(*copies), InputCols(*inputs), Flows(*flows)
    return first_event(rates(live, copies, inputs, task_work, level, avail, fetch, True,
                             flows, flow_bw), fetch)


@njit(cache=True)
def first_event(r, fetch):  # pragma: no cover - compiled
    """Seconds until the first copy finishes or input arrives at the :class:`Rates` ``r``."""
    best = np.inf
    for p in range(r.left.size):
        best = fmin(best, r.left[p])
    if fetch:
        for j in range(r.fetch_left.size):
            best = fmin(best, r.fetch_left[j])
    return best


@njit(cache=True)
def change_that_matters(live, copies, inputs, flows, task_work, level, change, max_level,
                        within):  # pragma: no cover - compiled
    """The earliest ``change[p]`` of a live copy whose processing could reach a limit soon.

    In fetch mode a slot's availability moves only its own copy's processing, and that
    processing is held back only by the copy's end (progress 1) or by the least received
    of its inputs still in transfer (``flows``: processing never runs ahead of the data).
    A copy that could reach neither within ``within`` seconds even at ``max_level`` (a
    bound on every availability level) has, over a span that short, progress exactly its
    rate at the span's time-average availability times the span, whatever its slot's
    phases: its slot's changes need not end a span. ``change[p]`` is the next phase
    change of copy ``p``'s slot, ``level`` each slot's VM power; ``inf`` when no copy's
    change matters.
    """
    copies, inputs, flows = CopyCols(*copies), InputCols(*inputs), Flows(*flows)
    least = np.ones(live.size)
    for j in range(flows.idx.size):
        p = flows.pos[j]
        least[p] = fmin(least[p], inputs.received[flows.idx[j]])
    soon = np.inf
    for p in range(live.size):
        if not change[p] < soon:
            continue
        c = live[p]
        fastest = copies.share[c] * level[copies.slot[c]] * max_level / (
            task_work[copies.task[c]] * copies.factor[c])
        if fastest > 0 and least[p] - copies.progress[c] <= fastest * within:
            soon = change[p]
    return soon


@njit(cache=True)
def stream_demand(live, copies, inputs, task_work, level, avail, flows,
                  n_move):  # pragma: no cover - compiled
    """The most each transfer can use when inputs stream (``"maxmin"`` sharing).

    A streamed input moves in lockstep with processing, so its transfer can use at most
    its copy's processing rate (fraction per second, as :func:`rates` computes it) times
    its size; a raw-input move has no such limit.
    """
    flows, copies, inputs = Flows(*flows), CopyCols(*copies), InputCols(*inputs)
    demand = np.full(flows.idx.size + n_move, np.inf)
    for j in range(flows.idx.size):
        p = flows.pos[j]
        c = live[p]
        sp = level[copies.slot[c]]
        if avail.size:
            sp = sp * avail[p]
        rate = copies.share[c] * sp / (task_work[copies.task[c]] * copies.factor[c])
        demand[j] = rate * inputs.size[flows.idx[j]]
    return demand


@njit(cache=True)
def _reached(lo, hi, r, elapsed, reached):  # pragma: no cover - compiled
    """Progress the live copies ``lo:hi`` reach at their rates, at most 1."""
    r = Rates(*r)
    for p in range(lo, hi):
        reached[p] = fmin(r.progress[p] + r.rate[p] * elapsed[p], 1.0)


@njit(cache=True)
def _fetched(lo, hi, r, elapsed, flows, inputs, slack, moved,
             reached):  # pragma: no cover - compiled
    """Move the fetched transfers of the copies' runs ``lo:hi``; whether any arrived.

    Each copy's progress is held to the least received of its inputs.
    """
    r, flows, inputs = Rates(*r), Flows(*flows), InputCols(*inputs)
    idx, pos, group = flows.idx, flows.pos, flows.group
    n_flow = idx.size
    arrived_any = False
    for g in range(lo, hi):
        start = group[g]
        end = group[g + 1] if g + 1 < group.size else n_flow
        p = pos[start]
        least = 0.0
        for j in range(start, end):
            el = elapsed[pos[j]]
            arrived = fmin(r.got[j] + r.fetch_rate[j] * el, 1.0)
            least = arrived if j == start else fmin(least, arrived)
            new_got = 1.0 if r.fetch_left[j] <= el * slack else arrived
            if new_got >= 1.0:
                arrived_any = True
            moved[j] = (new_got - r.got[j]) * r.size[j]
            inputs.received[idx[j]] = new_got
            busy = fmin(el, r.fetch_left[j])
            inputs.bw_time[idx[j]] += r.bw[j] * busy
            inputs.fetch_time[idx[j]] += busy
        reached[p] = fmin(reached[p], fmax(least, r.progress[p]))
    return arrived_any


@njit(cache=True)
def _progress(lo, hi, live, r, elapsed, reached, copies):  # pragma: no cover - compiled
    """Write the progress, work and time integrals of the live copies ``lo:hi``."""
    r, copies = Rates(*r), CopyCols(*copies)
    for p in range(lo, hi):
        c = live[p]
        copies.progress[c] = reached[p]
        copies.executed[c] += (reached[p] - r.progress[p]) * r.work[p]
        copies.share_time[c] += r.share[p] * elapsed[p]
        copies.speed_time[c] += r.speed[p] * elapsed[p]


@njit(cache=True)
def _streamed(lo, hi, r, elapsed, flows, inputs, moved):  # pragma: no cover - compiled
    """Move the streamed transfers ``lo:hi`` in step with their copies."""
    r, flows, inputs = Rates(*r), Flows(*flows), InputCols(*inputs)
    idx, pos = flows.idx, flows.pos
    for j in range(lo, hi):
        el = elapsed[pos[j]]
        moved[j] = r.rate[pos[j]] * r.size[j] * el
        inputs.bw_time[idx[j]] += r.bw[j] * el
        inputs.fetch_time[idx[j]] += el


@njit(cache=True)
def apply(live, elapsed, r, win_pos, fetch, flows_on, flows, copies, inputs,
          slack):  # pragma: no cover - compiled
    """Move the live copies and their transfers through the span (``elapsed`` each).

    ``r`` is the :class:`Rates` of the span; ``slack`` is ``1 + eps``. Writes progress,
    work and time integrals of the copies and the received fractions and transfer
    integrals of their inputs.

    Returns:
        MB moved by each transfer, and whether any input has arrived in full.
    """
    n = live.size
    n_flow = flows.idx.size if flows_on else 0
    reached = np.empty(n)
    moved = np.empty(n_flow)
    _reached(0, n, r, elapsed, reached)
    arrived_any = False
    if n_flow and fetch:
        arrived_any = _fetched(0, flows.group.size, r, elapsed, flows, inputs, slack, moved,
                               reached)
    for w in range(win_pos.size):
        reached[win_pos[w]] = 1.0
    _progress(0, n, live, r, elapsed, reached, copies)
    if n_flow and not fetch:
        _streamed(0, n_flow, r, elapsed, flows, inputs, moved)
    return moved, arrived_any


@njit(cache=True, parallel=True)
def apply_wide(live, elapsed, r, win_pos, fetch, flows_on, flows, copies, inputs,
               slack, parts):  # pragma: no cover - compiled
    """:func:`apply`, each loop split over the threads (:mod:`geosim.threads`).

    ``r``, ``flows``, ``copies`` and ``inputs`` are plain tuples of their fields;
    ``parts`` as for :func:`rates_wide`.
    """
    n = live.size
    n_flow = flows[0].size if flows_on else 0
    reached = np.empty(n)
    moved = np.empty(n_flow)
    at, fl = part_bounds(n, parts), part_bounds(n_flow, parts)
    gr = part_bounds(flows[6].size if n_flow and fetch else 0, parts)
    for k in prange(parts):
        _reached(at[k], at[k + 1], r, elapsed, reached)
    arrived = np.zeros(parts, dtype=np.bool_)
    for k in prange(parts):
        arrived[k] = _fetched(gr[k], gr[k + 1], r, elapsed, flows, inputs, slack, moved,
                              reached)
    for w in range(win_pos.size):
        reached[win_pos[w]] = 1.0
    for k in prange(parts):
        _progress(at[k], at[k + 1], live, r, elapsed, reached, copies)
    if n_flow and not fetch:
        for k in prange(parts):
            _streamed(fl[k], fl[k + 1], r, elapsed, flows, inputs, moved)
    return moved, arrived.any()


@njit(cache=True)
def step_kernel(live, copies, inputs, task_work, level, avail, span, flows_on, flows, flow_bw,
                best_time, best_pos):  # pragma: no cover - compiled
    """One span of :meth:`Engine.advance <geosim.engine.Engine.advance>`.

    :func:`rates`, :func:`finish_kernel` and :func:`apply` in turn, on the tables'
    records ``copies`` and ``inputs``, the :class:`~geosim.engine.records.Flows` and
    the :class:`Span`. ``best_time`` and ``best_pos`` are per-task scratch.

    Returns:
        MB moved by each transfer, whether an input arrived in full, then what
        :func:`finish_kernel` returns but the time each copy ran.
    """
    copies, inputs, flows, span = CopyCols(*copies), InputCols(*inputs), Flows(*flows), \
        Span(*span)
    r = rates(live, copies, inputs, task_work, level, avail, span.fetch, flows_on, flows,
              flow_bw)
    elapsed, win_pos, tasks, times, ending, ending_at = finish_kernel(
        live, copies.task, r.left, span.t, span.dt, span.limit, best_time, best_pos)
    moved, arrived = apply(live, elapsed, r, win_pos, span.fetch, flows_on, flows, copies,
                           inputs, span.slack)
    return moved, arrived, win_pos, tasks, times, ending, ending_at


def run_step(live: np.ndarray, copies: tuple, inputs: tuple, task_work: np.ndarray,
             level: np.ndarray, avail: np.ndarray, span: tuple, flows_on: bool, flows: tuple,
             flow_bw: np.ndarray, best_time: np.ndarray, best_pos: np.ndarray) -> tuple:
    """:func:`step_kernel`, or for many live copies its wide variant: the same numbers.

    The wide variant runs :func:`rates_wide`, :func:`finish_kernel` and
    :func:`apply_wide` from Python (a compiled caller of threaded kernels could not be
    cached).
    """
    if not wide(live.size):
        return step_kernel(live, copies, inputs, task_work, level, avail, span, flows_on,
                           flows, flow_bw, best_time, best_pos)
    span, parts = Span(*span), numba.get_num_threads()
    r = rates_wide(live, copies, inputs, task_work, level, avail, span.fetch, flows_on, flows,
                   flow_bw, parts)
    elapsed, win_pos, tasks, times, ending, ending_at = finish_kernel(
        live, CopyCols(*copies).task, r[5], span.t, span.dt, span.limit, best_time, best_pos)
    moved, arrived = apply_wide(live, elapsed, r, win_pos, span.fetch, flows_on, flows,
                                copies, inputs, span.slack, parts)
    return moved, arrived, win_pos, tasks, times, ending, ending_at


@njit(cache=True)
def finish_kernel(live, task_of, left, t, dt, limit, best_time,
                  best_pos):  # pragma: no cover - compiled
    """Copies that finish within the span, and the first of each task to finish.

    A copy whose time left is at most ``limit`` finishes at ``t + left``; the first of
    its task to finish (ties: the lowest copy id) wins, and every live copy of that task
    ends then. ``best_time`` (NaN) and ``best_pos`` (-1) are per-task scratch, left as
    found.

    Returns:
        Each live copy's time run in the span (``dt``, or up to its task's finishing
        instant), the winners' positions in ``live``, the finished tasks (ascending) and
        their finishing instants, and the positions of the copies that end with their
        instants.
    """
    n = live.size
    elapsed = np.full(n, dt)
    tasks = np.empty(n, dtype=np.int64)
    k = 0
    for p in range(n):
        if left[p] <= limit:
            j = task_of[live[p]]
            at = t + left[p]
            if best_pos[j] < 0:
                best_pos[j] = p
                best_time[j] = at
                tasks[k] = j
                k += 1
            elif at < best_time[j]:     # ``live`` ascends: ties keep the lowest copy
                best_pos[j] = p
                best_time[j] = at
    tasks = np.sort(tasks[:k])
    win_pos = np.empty(k, dtype=np.int64)
    times = np.empty(k)
    for i in range(k):
        win_pos[i] = best_pos[tasks[i]]
        times[i] = best_time[tasks[i]]
    m = 0
    if k:
        for p in range(n):
            if best_pos[task_of[live[p]]] >= 0:
                m += 1
    ending = np.empty(m, dtype=np.int64)
    ending_at = np.empty(m)
    m = 0
    if k:
        for p in range(n):
            j = task_of[live[p]]
            if best_pos[j] >= 0:
                at = best_time[j]
                ending[m] = p
                ending_at[m] = at
                m += 1
                el = at - t
                elapsed[p] = dt if el > dt else (0.0 if el < 0.0 else el)
    for i in range(k):
        best_pos[tasks[i]] = -1
        best_time[tasks[i]] = np.nan
    return elapsed, win_pos, tasks, times, ending, ending_at


@njit(cache=True)
def end_copies(ending, at, winners, tasks, copies, task, job, slot,
               mark):  # pragma: no cover - compiled
    """End the ``ending`` copies at ``at``: each task's winner wins, the others lose.

    Lost work since the last checkpoint is wasted; the copies leave their slots, tasks
    and jobs. ``mark`` is per-task scratch (-1), left marking each task's winner.
    """
    for i in range(winners.size):
        copies.progress[winners[i]] = 1.0
        mark[tasks[i]] = winners[i]
    for i in range(ending.size):
        c = ending[i]
        t = copies.task[c]
        copies.end[c] = at[i]
        lost = mark[t] != c
        copies.outcome[c] = LOST if lost else WON
        copies.wasted[c] += (copies.progress[c] - copies.base[c]) * task.work[t] if lost \
            else 0.0
    for i in range(ending.size):
        c = ending[i]
        leave_slot(slot, copies.slot[c], copies.share[c])
    for i in range(ending.size):
        t = copies.task[ending[i]]
        task.live[t] -= 1
        job.live[task.job[t]] -= 1


@njit(cache=True)
def leave_slot(slot, s, share):  # pragma: no cover - compiled
    """Take a copy of ``share`` off slot ``s`` of the engine's :class:`SlotState`.

    The counts of slots holding a copy (per cluster) and holding several follow.
    """
    slot.used[s] -= share
    slot.copies[s] -= 1
    if slot.copies[s] == 0:
        slot.busy[slot.cluster[s]] -= 1
    elif slot.copies[s] == 1:
        slot.shared[0] -= 1


@njit(cache=True)
def leave_slots(slots, shares, slot):  # pragma: no cover - compiled
    """:func:`leave_slot` of each of ``slots`` in order (``slot``: the records, a tuple)."""
    slot = SlotState(*slot)
    for i in range(slots.size):
        leave_slot(slot, slots[i], shares[i])


@njit(cache=True)
def still_alive(live, outcome):  # pragma: no cover - compiled
    """The copies of ``live`` whose ``outcome`` is still alive, in order."""
    n_live = 0
    for i in range(live.size):
        if outcome[live[i]] == ALIVE:
            n_live += 1
    left = np.empty(n_live, dtype=np.int64)
    n_live = 0
    for i in range(live.size):
        if outcome[live[i]] == ALIVE:
            left[n_live] = live[i]
            n_live += 1
    return left


@njit(cache=True)
def complete_kernel(ending, at, winners, tasks, times, live, copies, task, job, slot, graph,
                    staged, groups, mark):  # pragma: no cover - compiled
    """The bookkeeping of completions, in the order its NumPy form had.

    Ends the ``ending`` copies (:func:`end_copies`), then marks ``tasks`` done, credits
    their jobs and releases their children. ``copies``, ``task``, ``job``, ``slot``,
    ``graph`` and ``groups`` are the engine's records; ``mark`` is per-task scratch (-1),
    left as found.

    Returns:
        The children whose last parent finished (ascending, unique), the jobs that
        finished (ascending, unique), and the live copies left.
    """
    copies, task, job, slot = CopyCols(*copies), TaskState(*task), JobState(*job), \
        SlotState(*slot)
    graph, groups = Graph(*graph), Groups(*groups)
    end_copies(ending, at, winners, tasks, copies, task, job, slot, mark)
    left = still_alive(live, copies.outcome)
    out_ptr, out_dst, pending = graph.out_ptr, graph.out_dst, task.pending
    n_child = 0
    for i in range(tasks.size):
        t = tasks[i]
        mark[t] = -1
        task.state[t] = DONE
        task.done[t] = times[i]
        if staged:
            groups.running[groups.of[t]] -= 1
        task.cluster[t] = copies.cluster[winners[i]]
        j = task.job[t]
        job.left[j] -= 1
        job.work_left[j] -= (1.0 - task.saved[t]) * task.work[t]
        task.saved[t] = 1.0
        job.last[j] = fmax(job.last[j], times[i])
        n_child += out_ptr[t + 1] - out_ptr[t]
    for i in range(tasks.size):
        t = tasks[i]
        for e in range(out_ptr[t], out_ptr[t + 1]):
            pending[out_dst[e]] -= 1
    ready = np.empty(n_child, dtype=np.int64)
    n_ready = 0
    for i in range(tasks.size):
        t = tasks[i]
        for e in range(out_ptr[t], out_ptr[t + 1]):
            if pending[out_dst[e]] == 0:
                ready[n_ready] = out_dst[e]
                n_ready += 1
    ready = sorted_unique(ready[:n_ready])
    done = np.empty(tasks.size, dtype=np.int64)
    n_done = 0
    for i in range(tasks.size):
        j = task.job[tasks[i]]
        if job.left[j] == 0:
            done[n_done] = j
            n_done += 1
    done = sorted_unique(done[:n_done])
    for j in done:
        job.done[j] = job.last[j]
    return ready, done, left


@njit(cache=True, error_model="numpy")
def time_left_kernel(live, copies, task_work, level, avail):  # pragma: no cover - compiled
    """Seconds until the first of ``live`` finishes at today's rates (``inf`` if none).

    A copy's rate is ``share * level[slot] (* avail[p]) / (work * factor)``, evaluated
    in that order as the NumPy expression it replaces; a NaN time makes the result NaN,
    as ``np.min`` does. ``avail`` is empty without availability periods.
    """
    copies = CopyCols(*copies)
    best = np.inf
    for p in range(live.size):
        c = live[p]
        s = copies.slot[c]
        speed = level[s] * avail[p] if avail.size else level[s]
        rate = copies.share[c] * speed / (task_work[copies.task[c]] * copies.factor[c])
        left = (1.0 - copies.progress[c]) / rate
        if left != left:
            return left
        best = min(best, left)
    return best


@njit(cache=True)
def observed_kernel(winners, copies, inputs):  # pragma: no cover - compiled
    """What the copies in ``winners`` saw while they ran, for the monitor.

    Returns:
        Per copy its cluster, task and mean processing speed (MIPS: speed integral over
        its life, at least 1e-12 s); then, per remote input that was fetched (from
        another cluster, of positive size, over a positive time), in the order of the
        copies and of their inputs: the source, the destination (the copy's cluster) and
        the mean bandwidth (MB/s).
    """
    copies, inputs = CopyCols(*copies), InputCols(*inputs)
    n = winners.size
    cluster = np.empty(n, dtype=np.int64)
    task = np.empty(n, dtype=np.int64)
    speed = np.empty(n)
    n_in = 0
    for j in range(n):
        c = winners[j]
        cluster[j] = copies.cluster[c]
        task[j] = copies.task[c]
        speed[j] = copies.speed_time[c] / max(copies.end[c] - copies.start[c], 1e-12)
        n_in += max(copies.in_hi[c] - copies.in_lo[c], 0)
    src = np.empty(n_in, dtype=np.int64)
    dst = np.empty(n_in, dtype=np.int64)
    bw = np.empty(n_in)
    m = 0
    for j in range(n):
        c = winners[j]
        for i in range(copies.in_lo[c], copies.in_hi[c]):
            s, fetching = inputs.src[i], inputs.fetch_time[i]
            if s != cluster[j] and inputs.size[i] > 0 and fetching > 0:
                src[m], dst[m], bw[m] = s, cluster[j], inputs.bw_time[i] / fetching
                m += 1
    return cluster, task, speed, src[:m], dst[:m], bw[:m]
