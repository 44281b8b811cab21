"""Event timing's sub-spans in one compiled loop (:meth:`Engine.advance`).

Under event timing with copies reading input over the WAN, a model step is cut into
exact sub-spans, each to the next instant a rate or a share can change: an input
arriving in full, a busy slot's availability phase change (in fetch mode only where its
copy could reach its end or its data first:
:func:`~geosim.engine.step.change_that_matters`), a completion. Run one Python call
each, the sub-spans cost more than the simulation inside them; :func:`run_subspans`
runs them in one compiled loop, calling the same kernels in the same order as the
engine's Python path (:meth:`Engine.time_to_event`, then :meth:`Engine._run_span`), so
both give the same numbers bit for bit.

The loop hands back to Python whenever Python has work to do, with a code saying why:

- :data:`COMPLETED`: the sub-span just run completed tasks (the engine ends them), or,
  when the loop ends completions itself, no copy is left alive;
- :data:`REACHED`: the loop reached ``stop``;
- :data:`NEED_ROUTES`: the flows must be rebuilt with routes not in the table yet
  (nothing of the sub-span was run);
- :data:`NEED_BLOCK`: the availability process needs a block of draws in the middle of
  a sub-span; the caller draws it and calls again with the sub-span ``pending``.

A scheduler that decides at slot boundaries only has no use for the instant of a
completion. Asked to (``through``), the loop ends the completed tasks itself, with
:func:`~geosim.engine.step.complete_kernel` as :meth:`Engine._complete` does, and runs
on. It hands back the copies left alive, the winners, the children made ready (with
their instants) and the jobs finished (:class:`Completions`), which the engine records
as it records a completion. The results are the same bit for bit: the MB moved over the
WAN are summed as the engine sums them, and a completion in the last sub-span is
followed by one of length 0, as a call from Python at ``stop`` runs it.

Raw-input moves are not handled here: a run with moves under way takes the Python path.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from geosim.engine.base import fmin
from geosim.engine.records import Flows
from geosim.engine.sharing import allocate
from geosim.engine.step import (
    WITHIN,
    apply,
    change_that_matters,
    complete_kernel,
    finish_kernel,
    first_event,
    rates,
    step_kernel,
    stream_demand,
)
from geosim.engine.tables import CopyCols, InputCols
from geosim.engine.transfers import account_kernel, flow_kernel
from geosim.jit import njit
from geosim.processes import renewal_mean, renewal_sync

#: Why :func:`run_subspans` returned (see the module docstring).
COMPLETED, REACHED, NEED_ROUTES, NEED_BLOCK = 0, 1, 2, 3


class Completions(NamedTuple):
    """The completions :func:`run_subspans` ended itself, in order.

    Attributes:
        live: The live copies left.
        winners: The copy that finished each completed task.
        ready: The children made ready, each at ``ready_at``.
        ready_at: The instant each of ``ready`` became ready.
        jobs: The jobs finished.
    """

    live: np.ndarray
    winners: np.ndarray
    ready: np.ndarray
    ready_at: np.ndarray
    jobs: np.ndarray


@njit(cache=True)
def run_subspans(t, stop, resolution, eps, live, copies, inputs, task_work, power, avail,
                 max_level, epoch, pending, wan_mb, flows, flows_ok, routes, n_clusters, cap,
                 reachable, maxmin, fetch, traffic, scratch, local, memory, best_time,
                 best_pos, records, through):  # pragma: no cover - compiled
    """Run exact sub-spans from ``t`` until a completion, ``stop`` or a need of Python.

    Args:
        t: The engine's time.
        stop: Where the step ends.
        resolution: The clock's resolution (relative): the shortest sub-span.
        eps: The engine's ``EPS``.
        live: Live copies (ascending; unchanged until a completion).
        copies: The copies table's records.
        inputs: The inputs table's records.
        task_work: Work of each task.
        power: Each slot's VM power.
        avail: The availability process's ``kernel_arg`` (or ``NO_RENEWAL``).
        max_level: No availability level exceeds it (``inf``: not known).
        epoch: The process's epoch (incremented per sub-span).
        pending: ``[t_end, dt, last]`` of a sub-span waiting for draws (``[1] < 0``: none).
        wan_mb: MB moved over the WAN so far (the engine's total).
        flows: The current :class:`~geosim.engine.records.Flows` (as a tuple).
        flows_ok: Whether ``flows`` is up to date.
        routes: The route table (``Routes.pair_table``).
        n_clusters: Clusters of the world.
        cap: Capacity of every resource (MB/s).
        reachable: Whether each cluster is reachable.
        maxmin: ``"maxmin"`` sharing.
        fetch: ``links.transfer`` is ``"fetch"``.
        traffic: The traffic counters' records.
        scratch: The accounting scratch (three zeroed arrays).
        local: Max-min's scratch (-1 per resource).
        memory: The last max-min allocation (:func:`~geosim.engine.sharing.maxmin_shares`).
        best_time: Per-task scratch of the completion kernel (NaN).
        best_pos: Per-task scratch of the completion kernel (-1).
        records: The engine's task, job, slot and graph records and its stage groups.
        through: End completions here and run on; False hands back at each.

    Returns:
        The code, time, epoch, sub-spans run, WAN MB in all, last sub-span's length, flows
        and whether they are up to date, last sub-span's bandwidths, activity and demands,
        :func:`~geosim.engine.step.step_kernel`'s completion outputs (ending positions and
        instants, winners' positions, tasks and instants), the block needed (kind, last
        block), the completions ended (:class:`Completions`, a tuple), the max-min memory.
    """
    with_avail = avail[0].size > 0
    keys, ids, dense, ptr, route_res, route_epoch = routes
    slot_of = CopyCols(*copies).slot
    slots = _slots_of(live, slot_of)
    no_float, no_int = np.empty(0), np.empty(0, dtype=np.int64)
    no_move = no_int
    none = (no_int, no_float, no_int, no_int, no_float, -1, -1)    # no completion, no block
    have_alloc, bw, active, demand = False, no_float, np.empty(0, dtype=np.bool_), no_float
    n_spans, wan, span_len = 0, 0.0, 0.0
    # The completions ended here: winners, children made ready, their instants, jobs.
    ended, n_ended = (no_int, no_int, no_float, no_int), np.zeros(3, dtype=np.int64)
    while True:
        if pending[1] < 0.0:
            left = stop - t
            if with_avail:
                renewal_sync(avail, slots, t)       # a keyed process's busy slots to t
            if not flows_ok:
                out = flow_kernel(live, copies, inputs, no_move, no_move, keys, ids, dense, ptr,
                                  route_res, route_epoch, n_clusters, 1.0 - eps)
                if out[-1].size:
                    return (NEED_ROUTES, t, epoch, n_spans, wan_mb + wan, span_len, flows, False,
                            bw, active, demand) + none + (_trim(live, ended, n_ended), memory)
                flows = out[:-1]
                flows_ok = True
                have_alloc = False
            level = no_float
            if with_avail:
                level = np.empty(slots.size)
                for p in range(slots.size):
                    level[p] = avail[1][slots[p]]
            bw, active, demand, have_alloc, _, memory = _allocation(
                live, copies, inputs, task_work, power, level, flows, cap, reachable, maxmin,
                fetch, bw, active, demand, have_alloc, local, memory)
            # next_event_kernel, keeping the rates for the span when they are the same.
            r = rates(live, CopyCols(*copies), InputCols(*inputs), task_work, power, level,
                      fetch, True, Flows(*flows), bw)
            best = first_event(r, fetch)
            floor = resolution * max(1.0, t)
            soon = np.inf
            if with_avail:
                soon = _busy_change(live, copies, inputs, flows, task_work, power, avail[2],
                                    slots, max_level if fetch else np.inf,
                                    max(min(left, best), floor) * WITHIN) - t
            dt = max(min(left, min(soon, best)), floor)
            last = dt >= left
            pending[0] = t + (left if last else dt)
            pending[1] = left if last else dt
            pending[2] = 1.0 if last else 0.0
            fresh = True
        else:
            fresh = False
        t_end, dt, last = pending[0], pending[1], pending[2] > 0.0
        factor = no_float
        if with_avail:
            if fresh:
                epoch += 1
            factor = np.empty(slots.size)
            kind, block = renewal_mean(avail, epoch, t_end, t, slots, factor, not fresh)
            if kind >= 0:
                return (NEED_BLOCK, t, epoch, n_spans, wan_mb + wan, span_len, flows, flows_ok,
                        bw, active, demand, no_int, no_float, no_int, no_int, no_float, kind, block,
                        _trim(live, ended, n_ended), memory)
        pending[1] = -1.0
        bw, active, demand, have_alloc, new_bw, memory = _allocation(
            live, copies, inputs, task_work, power, factor, flows, cap, reachable, maxmin,
            fetch, bw, active, demand, have_alloc, local, memory)
        f = Flows(*flows)
        has_flows = f.idx.size > 0
        if fresh and not new_bw and _same(factor, level):
            # step_kernel on the rates already computed: the same inputs give the same rates.
            c, i = CopyCols(*copies), InputCols(*inputs)
            elapsed, win_at, done_tasks, done_time, ending, ending_at = finish_kernel(
                live, c.task, r.left, t, dt, dt * (1.0 + eps), best_time, best_pos)
            moved, arrived = apply(live, elapsed, r, win_at, fetch, has_flows, f, c, i,
                                   1.0 + eps)
        else:
            span = (t, dt, dt * (1.0 + eps), 1.0 + eps, fetch)
            moved, arrived, win_at, done_tasks, done_time, ending, ending_at = step_kernel(
                live, copies, inputs, task_work, power, factor, span, has_flows, flows, bw,
                best_time, best_pos)
        if has_flows:
            if fetch and arrived:
                flows_ok = False
            wan += account_kernel(f.src, f.dst, moved, f.res, f.starts, 1.0, traffic,
                                  scratch[0], scratch[1], scratch[2])
        n_spans += 1
        span_len = dt
        t = t_end
        if win_at.size and not through:
            return (COMPLETED, t, epoch, n_spans, wan_mb + wan, span_len, flows, flows_ok, bw,
                    active, demand, ending, ending_at, win_at, done_tasks, done_time, -1, -1,
                    _trim(live, ended, n_ended), memory)
        if win_at.size:
            live, ended = _end_tasks(live, ending, ending_at, win_at, done_tasks, done_time,
                                     copies, records, best_pos, t, ended, n_ended)
            slots = _slots_of(live, slot_of)
            wan_mb, wan = wan_mb + wan, 0.0     # summed as the engine sums each return's
            flows_ok = have_alloc = False
            if live.size == 0:
                return (COMPLETED, t, epoch, n_spans, wan_mb, span_len, flows, flows_ok, bw,
                        active, demand) + none + (_trim(live, ended, n_ended), memory)
            continue    # even at ``stop``: a last sub-span (of length 0) on the copies left
        if last:
            return (REACHED, t, epoch, n_spans, wan_mb + wan, span_len, flows, flows_ok, bw,
                    active, demand) + none + (_trim(live, ended, n_ended), memory)


@njit(cache=True)
def _busy_change(live, copies, inputs, flows, task_work, power, next_change, slots, max_level,
                 within):  # pragma: no cover - compiled
    """The earliest phase change of a busy slot that ends a sub-span (an instant).

    Every busy slot's next change, or, with a bound ``max_level`` on the levels (fetch
    mode: a slot's availability moves only its own copy's processing), those of the
    copies that could reach their end or their data within ``within`` seconds
    (:func:`~geosim.engine.step.change_that_matters`).
    """
    if max_level == np.inf:
        soon = next_change[slots[0]]
        for p in range(1, slots.size):
            soon = fmin(soon, next_change[slots[p]])
        return soon
    change = np.empty(slots.size)
    for p in range(slots.size):
        change[p] = next_change[slots[p]]
    return change_that_matters(live, copies, inputs, flows, task_work, power, change,
                               max_level, within)


@njit(cache=True)
def _end_tasks(live, ending, ending_at, win_at, tasks, times, copies, records, mark, t, ended,
               n_ended):  # pragma: no cover - compiled
    """End the tasks a sub-span completed as :meth:`Engine._complete` does; record them.

    Returns:
        The live copies left and ``ended`` with the winners, the children made ready at
        ``t`` and the jobs finished appended (counts in ``n_ended``).
    """
    task, job, slot, graph, groups = records
    winners = np.empty(win_at.size, dtype=np.int64)
    for i in range(win_at.size):
        winners[i] = live[win_at[i]]
    ending_ids = np.empty(ending.size, dtype=np.int64)
    for i in range(ending.size):
        ending_ids[i] = live[ending[i]]
    ready, done, left = complete_kernel(ending_ids, ending_at, winners, tasks, times, live,
                                        copies, task, job, slot, graph, False, groups, mark)
    won, made_ready, ready_at, jobs = ended
    won = _append(won, n_ended[0], winners)
    made_ready = _append(made_ready, n_ended[1], ready)
    at = np.full(ready.size, t)
    ready_at = _append(ready_at, n_ended[1], at)
    jobs = _append(jobs, n_ended[2], done)
    n_ended[0] += winners.size
    n_ended[1] += ready.size
    n_ended[2] += done.size
    return left, (won, made_ready, ready_at, jobs)


@njit(cache=True)
def _slots_of(live, slot_of):  # pragma: no cover - compiled
    """The slot of each live copy."""
    slots = np.empty(live.size, dtype=np.int64)
    for p in range(live.size):
        slots[p] = slot_of[live[p]]
    return slots


@njit(cache=True)
def _append(buf, n, values):  # pragma: no cover - compiled
    """``buf[:n]`` followed by ``values``, in ``buf`` or in a larger copy of it."""
    if n + values.size > buf.size:
        grown = np.empty(max(2 * buf.size, n + values.size), dtype=buf.dtype)
        grown[:n] = buf[:n]
        buf = grown
    buf[n:n + values.size] = values
    return buf


@njit(cache=True)
def _trim(live, ended, n_ended):  # pragma: no cover - compiled
    """The :class:`Completions` ended so far, as a tuple."""
    won, ready, ready_at, jobs = ended
    return (live, won[:n_ended[0]], ready[:n_ended[1]], ready_at[:n_ended[1]],
            jobs[:n_ended[2]])


@njit(cache=True)
def _allocation(live, copies, inputs, task_work, power, factor, flows, cap, reachable, maxmin,
                fetch, bw, active, demand, have_alloc, local,
                memory):  # pragma: no cover - compiled
    """The bandwidths of a sub-span, as ``Engine._bandwidths`` computes them.

    Also returns whether they were computed anew, and the max-min memory. Without
    demands the allocation of the same flows is kept (the reachable clusters and link
    bandwidths do not change within a step); streamed inputs under max-min ask for what
    their copy can process, which the availability factor changes.
    """
    f = Flows(*flows)
    no_move = np.empty(0, dtype=np.int64)
    if maxmin and not fetch and f.idx.size:
        demand = stream_demand(live, copies, inputs, task_work, power, factor, flows, 0)
    elif have_alloc:
        return bw, active, np.empty(0), True, False, memory
    else:
        demand = np.empty(0)
    bw, active, memory = allocate(flows, no_move, no_move, cap, reachable, maxmin, demand, local,
                                  memory)
    return bw, active, demand, demand.size == 0, True, memory


@njit(cache=True)
def _same(a, b):  # pragma: no cover - compiled
    """Whether two arrays hold the same values."""
    if a.size != b.size:
        return False
    for k in range(a.size):
        if a[k] != b[k]:
            return False
    return True
