"""The invariants of :mod:`geosim.invariants` as compiled rules.

Each rule checker (``*_rules``) goes over the engine's records once and returns
``(rule, first, count)``: the first of its rules broken, in the order its docstring lists
them (-1: none), the first offender and how many offenders break it; then the arrays the
words of a violation need. :mod:`geosim.invariants` words the violation. A check is a few
calls instead of a hundred NumPy operations on small arrays, which took half the time of a
checked run.
"""

from __future__ import annotations

import numpy as np

from geosim.engine import ALIVE, DONE, EPS, READY, RUNNING, WAITING, WON, CopyCols
from geosim.engine.records import JobState, SlotState, TaskState
from geosim.jit import njit

#: Tolerance of shares and progress (absolute, fractions of a slot or of a task).
SHARE_TOL = 1e-9
#: Relative tolerance of bandwidth use against capacity (the ``bandwidth`` invariant).
BANDWIDTH_RTOL = 1e-6
#: Relative tolerance of work conservation.
WORK_RTOL = 1e-9


@njit(cache=True)
def max_min_held(res: np.ndarray, starts: np.ndarray, move_res: np.ndarray,
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


@njit(cache=True)
def _first_bad(ok: np.ndarray) -> tuple[int, int]:  # pragma: no cover - compiled
    """The first index where ``ok`` is false (-1: none), and how many there are."""
    first, count = -1, 0
    for i in range(ok.size):
        if not ok[i]:
            if count == 0:
                first = i
            count += 1
    return first, count


@njit(cache=True)
def copy_rules(ids: np.ndarray, live: np.ndarray, full: bool, copies: tuple, n: int,
                slot_cluster: np.ndarray, reachable: np.ndarray,
                n_tasks: int) -> tuple[int, int, int]:  # pragma: no cover - compiled
    """``copies`` and ``reachability`` (offenders are positions in ``live``).

    0. The live list holds ascending ids of copies ``0..n-1``.
    1. Unless ``full``, each live copy is among ``ids`` (live or new at the last check).
    2. Each live copy's outcome is alive.
    3. As many checked copies (``ids``) are alive as live (``first``: how many are).
    4. Each live copy's share lies in (0, 1], its slot exists and is of its cluster, and
       its task exists.
    5. Each live copy's cluster is reachable.
    """
    c = CopyCols(*copies)
    m = live.size
    if m and not (live[0] >= 0 and live[m - 1] < n and np.all(live[1:] > live[:-1])):
        return 0, -1, 1
    ok = np.zeros(m, dtype=np.bool_)
    if not full:
        if ids.size:            # ``in_sorted``: ids are ascending
            ok = ids[np.minimum(np.searchsorted(ids, live), ids.size - 1)] == live
        first, count = _first_bad(ok)
        if count:
            return 1, first, count
    for p in range(m):
        ok[p] = c.outcome[live[p]] == ALIVE
    first, count = _first_bad(ok)
    if count:
        return 2, first, count
    alive = 0
    for k in ids:
        alive += c.outcome[k] == ALIVE
    if alive != m:
        return 3, alive, 1
    n_slots = slot_cluster.size
    for p in range(m):
        k = live[p]
        s, share = c.slot[k], c.share[k]
        ok[p] = (share > 0.0 and share <= 1.0 + SHARE_TOL and 0 <= s < n_slots
                 and slot_cluster[s] == c.cluster[k] and 0 <= c.task[k] < n_tasks)
    first, count = _first_bad(ok)
    if count:
        return 4, first, count
    for p in range(m):
        ok[p] = reachable[c.cluster[live[p]]]
    first, count = _first_bad(ok)
    if count:
        return 5, first, count
    return -1, -1, 0


@njit(cache=True)
def slot_rules(live: np.ndarray, copies: tuple, slots: tuple, slot_cluster: np.ndarray,
                capacity: np.ndarray, reachable: np.ndarray,
                counted: np.ndarray) -> tuple:  # pragma: no cover - compiled
    """``slots``, on live copies that passed :func:`copy_rules`.

    0. Per slot, the recorded busy share equals the live copies' shares (within
       :data:`SHARE_TOL`) and lies in [0, 1], and the recorded copy count is theirs.
    1. Per cluster, the busy share is at most its slots (``capacity``).
    2. Per cluster, the engine's count of free slots (``counted``) is that of its slots
       (0 when unreachable).
    3. The engine's count of slots holding more than one copy is theirs (no offender
       named; ``first``: how many hold more than one).

    Returns:
        The rule found, then per slot the live copies' share and count, per cluster the
        busy share and free slots (the last two zero when rule 0 fails).
    """
    c, s = CopyCols(*copies), SlotState(*slots)
    n_slots, n_clusters = slot_cluster.size, capacity.size
    used = np.zeros(n_slots)
    count = np.zeros(n_slots, dtype=np.int64)
    for p in range(live.size):
        k = c.slot[live[p]]
        used[k] += c.share[live[p]]
        count[k] += 1
    busy = np.zeros(n_clusters)
    free = np.zeros(n_clusters, dtype=np.int64)
    ok = (np.abs(s.used - used) <= SHARE_TOL) & (s.used <= 1.0 + SHARE_TOL) \
        & (s.used >= -SHARE_TOL) & (s.copies == count)
    first, bad = _first_bad(ok)
    if bad:
        return (0, first, bad), used, count, busy, free
    for k in range(n_slots):
        busy[slot_cluster[k]] += s.used[k]
        if s.used[k] <= EPS:
            free[slot_cluster[k]] += 1
    first, bad = _first_bad(busy <= capacity * (1.0 + SHARE_TOL))
    if bad:
        return (1, first, bad), used, count, busy, free
    for x in range(n_clusters):
        if not reachable[x]:
            free[x] = 0
    first, bad = _first_bad(counted == free)
    if bad:
        return (2, first, bad), used, count, busy, free
    shared = np.count_nonzero(count > 1)
    if s.shared[0] != shared:
        return (3, shared, 1), used, count, busy, free
    return (-1, -1, 0), used, count, busy, free


@njit(cache=True)
def task_rules(live: np.ndarray, copies: tuple, tasks: tuple, jobs: tuple, n_ready: int,
                edge_src: np.ndarray, edge_dst: np.ndarray,
                time: float) -> tuple:  # pragma: no cover - compiled
    """``tasks``, on live copies that passed :func:`copy_rules`.

    0. Every task state lies in ``WAITING..DONE`` (no offender named).
    1. Per task, the recorded live-copy count is the live copies', and it is running
       exactly when it has one.
    2. Per job, the recorded live-copy count is the live copies'.
    3. The ready count is the tasks ready (``first``: how many are).
    4. A task that is not waiting has no dependency pending.
    5. Per edge, a child that is not waiting has a done parent.
    6. A task has a finish time exactly when done, and not in the future.

    Returns:
        The rule found, then the live copies per task and per job.
    """
    c, t, j = CopyCols(*copies), TaskState(*tasks), JobState(*jobs)
    state = t.state
    n_tasks = state.size
    per_task = np.zeros(n_tasks, dtype=np.int64)
    per_job = np.zeros(j.live.size, dtype=np.int64)
    for p in range(live.size):
        k = c.task[live[p]]
        per_task[k] += 1
        per_job[t.job[k]] += 1
    if n_tasks and not (WAITING <= state.min() and state.max() <= DONE):
        return (0, -1, 1), per_task, per_job
    ok = (t.live == per_task) & ((state == RUNNING) == (per_task > 0))
    first, bad = _first_bad(ok)
    if bad:
        return (1, first, bad), per_task, per_job
    first, bad = _first_bad(j.live == per_job)
    if bad:
        return (2, first, bad), per_task, per_job
    ready = 0
    for k in range(n_tasks):
        ready += state[k] == READY
    if n_ready != ready:
        return (3, ready, 1), per_task, per_job
    for k in range(n_tasks):
        ok[k] = state[k] == WAITING or t.pending[k] == 0
    first, bad = _first_bad(ok)
    if bad:
        return (4, first, bad), per_task, per_job
    edges = np.empty(edge_dst.size, dtype=np.bool_)
    for k in range(edge_dst.size):
        edges[k] = state[edge_dst[k]] == WAITING or state[edge_src[k]] == DONE
    first, bad = _first_bad(edges)
    if bad:
        return (5, first, bad), per_task, per_job
    future = time + SHARE_TOL * max(1.0, abs(time))
    for k in range(n_tasks):
        ok[k] = np.isnan(t.done[k]) != (state[k] == DONE) and not t.done[k] > future
    first, bad = _first_bad(ok)
    if bad:
        return (6, first, bad), per_task, per_job
    return (-1, -1, 0), per_task, per_job


@njit(cache=True)
def work_rules(ids: np.ndarray, live: np.ndarray, copies: tuple, tasks: tuple, jobs: tuple,
                settled_kept: np.ndarray,
                settled_scale: np.ndarray) -> tuple:  # pragma: no cover - compiled
    """``work``, on live copies that passed :func:`copy_rules`.

    0. Per checked copy (offenders are positions in ``ids``): ``0 <= base <= progress <=
       1``, ``executed >= 0``, ``0 <= wasted <= executed`` and a winner's progress is 1.
    1. Per task, ``saved`` lies in [0, 1] and is 1 once done.
    2. A live copy's base is its task's checkpoint (offenders: positions in ``live``).
    3. Per task, the work its copies kept is its checkpoint plus its live copies' progress.
    4. Per job, the recorded work left is its unfinished tasks' remaining work.

    Returns:
        The rule found, then per task the work kept and held and the live progress, and
        per job the work its unfinished tasks need (the last four zero until reached).
    """
    c, t, j = CopyCols(*copies), TaskState(*tasks), JobState(*jobs)
    work, saved = t.work, t.saved
    n_tasks, n_jobs = work.size, j.work_left.size
    kept, held = np.zeros(n_tasks), np.zeros(n_tasks)
    ahead, left = np.zeros(n_tasks), np.zeros(n_jobs)
    ok = np.empty(ids.size, dtype=np.bool_)
    for i in range(ids.size):
        k = ids[i]
        base, progress = c.base[k], c.progress[k]
        executed, wasted = c.executed[k], c.wasted[k]
        ok[i] = (base >= -SHARE_TOL and base <= progress + SHARE_TOL
                 and progress <= 1.0 + SHARE_TOL and executed >= 0.0 and wasted >= 0.0
                 and wasted <= executed * (1.0 + WORK_RTOL) + WORK_RTOL * work[c.task[k]]
                 and (c.outcome[k] != WON or abs(progress - 1.0) <= SHARE_TOL))
    first, bad = _first_bad(ok)
    if bad:
        return (0, first, bad), kept, held, ahead, left
    first, bad = _first_bad((saved >= 0.0) & (saved <= 1.0)
                            & ((t.state != DONE) | (saved == 1.0)))
    if bad:
        return (1, first, bad), kept, held, ahead, left
    at_base = np.empty(live.size, dtype=np.bool_)
    for p in range(live.size):
        k = live[p]
        at_base[p] = abs(c.base[k] - saved[c.task[k]]) <= SHARE_TOL
    first, bad = _first_bad(at_base)
    if bad:
        return (2, first, bad), kept, held, ahead, left
    scale = np.zeros(n_tasks)
    for k in ids:
        kept[c.task[k]] += c.executed[k] - c.wasted[k]
        scale[c.task[k]] += c.executed[k] + c.wasted[k]
    for k in live:
        ahead[c.task[k]] += c.progress[k] - c.base[k]
    kept += settled_kept
    held[:] = (saved + ahead) * work
    scale = settled_scale + scale + work
    first, bad = _first_bad(np.abs(kept - held) <= WORK_RTOL * scale)
    if bad:
        return (3, first, bad), kept, held, ahead, left
    total = np.zeros(n_jobs)
    for k in range(n_tasks):
        left[t.job[k]] += (1.0 if t.state[k] != DONE else 0.0) * (1.0 - saved[k]) * work[k]
        total[t.job[k]] += work[k]
    first, bad = _first_bad(np.abs(j.work_left - left) <= WORK_RTOL * total)
    if bad:
        return (4, first, bad), kept, held, ahead, left
    return (-1, -1, 0), kept, held, ahead, left


@njit(cache=True)
def history_rules(tasks: tuple, jobs: tuple, saved: np.ndarray, task_done: np.ndarray,
                   job_done: np.ndarray) -> tuple[int, int, int]:  # pragma: no cover
    """``history`` per task and job, against what the last check remembered.

    0. No task's checkpointed progress fell below ``saved``.
    1. No task's finish time changed once set (``task_done``).
    2. No job's finish time changed once set (``job_done``).

    When all hold, the remembered arrays take the values of now.
    """
    t, j = TaskState(*tasks), JobState(*jobs)
    first, bad = _first_bad(t.saved >= saved)
    if bad:
        return 0, first, bad
    first, bad = _first_bad((t.done == task_done) | np.isnan(task_done))
    if bad:
        return 1, first, bad
    first, bad = _first_bad((j.done == job_done) | np.isnan(job_done))
    if bad:
        return 2, first, bad
    saved[:] = t.saved
    task_done[:] = t.done
    job_done[:] = j.done
    return -1, -1, 0


@njit(cache=True)
def completion_rules(ids: np.ndarray, copies: tuple, tasks: tuple, jobs: tuple,
                      task_ptr: np.ndarray, settled_wins: np.ndarray,
                      next_job: int) -> tuple:  # pragma: no cover - compiled
    """``completion``, on tasks that passed :func:`task_rules`.

    0. Every done task has one winning copy (settled or among ``ids``), every other none.
    1. Per job, the unfinished-task count is its tasks not done; it has a finish time
       exactly when that count is 0, and then it has arrived and finished when its last
       task did.

    Returns:
        The rule found, then the winners per task, per job its tasks not done and its
        last task's finish time, and the number of jobs with a finish time.
    """
    c, t, j = CopyCols(*copies), TaskState(*tasks), JobState(*jobs)
    n_tasks, n_jobs = t.state.size, j.left.size
    wins = settled_wins.copy()
    for k in ids:
        if c.outcome[k] == WON:
            wins[c.task[k]] += 1
    left = np.zeros(n_jobs, dtype=np.int64)
    last = np.full(n_jobs, -np.inf)
    ok = np.empty(n_tasks, dtype=np.bool_)
    for k in range(n_tasks):
        done = t.state[k] == DONE
        ok[k] = wins[k] == (1 if done else 0)
        if not done:
            left[t.job[k]] += 1
    first, bad = _first_bad(ok)
    if bad:
        return (0, first, bad), wins, left, last, 0
    n_finished = 0
    jobs_ok = np.empty(n_jobs, dtype=np.bool_)
    for g in range(n_jobs):
        top = -np.inf               # as np.maximum: a NaN finish time stays NaN
        for k in range(task_ptr[g], task_ptr[g + 1]):
            v = t.done[k] if t.state[k] == DONE else -np.inf
            if not np.isnan(top) and (np.isnan(v) or v > top):
                top = v
        last[g] = top
        finished = not np.isnan(j.done[g])
        n_finished += finished
        jobs_ok[g] = (j.left[g] == left[g] and finished == (left[g] == 0)
                      and (not finished or (j.done[g] == top and g < next_job)))
    first, bad = _first_bad(jobs_ok)
    if bad:
        return (1, first, bad), wins, left, last, n_finished
    return (-1, -1, 0), wins, left, last, n_finished
