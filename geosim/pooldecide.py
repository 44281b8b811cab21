"""A decision of the compiled pool loop (:mod:`geosim.poolsim`): 002's model at an event.

At every arrival and departure every job is checkpointed at its best copy's progress
(002 §3), the policy gives each alive job its machines (002 Algorithms 1-3: SRPT+R,
Fair+R, LAPS+R(β)), the copies that keep their machines stay (resized to the new share),
the rest are killed and the missing copies are launched on free machines drawn at random
(as :func:`~geosim.schedulers.pool.apply_allocation` draws them). :func:`decide` is that
decision; :func:`catch_up`, :func:`set_rate`, :func:`end_copy` and :func:`compact` are the
per-copy steps the loop shares with it.

Every function is compiled and inlined into the loop, which is compiled without
reference counting: none may make an array. The loop's docstring
(:func:`geosim.poolsim._loop`) says what the arrays and tuples passed here hold.
"""

from __future__ import annotations

import math

import numpy as np

from geosim.engine import ALIVE, DONE, KILLED, READY, RUNNING, WON
from geosim.jit import njit

#: Tolerance of progress comparisons (a copy at its task's best progress, less this).
EPS = 1e-9


@njit(cache=True, inline="always")
def _below(rng, n):  # pragma: no cover - compiled
    """A uniform integer in [0, n) from the xorshift64* state ``rng[0]``."""
    x = rng[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    rng[0] = x
    r = x * np.uint64(2685821657736338717)
    return np.int64((r >> np.uint64(11)) % np.uint64(n))


@njit(cache=True, inline="always")
def _choose(rng, cand, n_cand, k):  # pragma: no cover - compiled
    """Move ``k`` of ``cand[:n_cand]`` drawn without replacement to its front."""
    for i in range(k):
        j = i + _below(rng, n_cand - i)
        cand[i], cand[j] = cand[j], cand[i]


@njit(cache=True, inline="always")
def catch_up(i, c, t, work, ctask, cshare, cexec, cshare_t, lprog, lt0,
             lrate):  # pragma: no cover - compiled
    """Bring live copy ``c`` (at ``i``)'s progress and integrals to ``t`` (constant rate)."""
    el = t - lt0[i]
    if el > 0:
        reached = min(lprog[i] + lrate[i] * el, 1.0)
        cexec[c] += (reached - lprog[i]) * work[ctask[c]]
        lprog[i] = reached
        cshare_t[c] += cshare[c] * el
        lt0[i] = t


@njit(cache=True, inline="always")
def set_rate(i, c, t, work, power, level, ctask, cslot, cshare, lprog, lrate,
             lfin):  # pragma: no cover - compiled
    """Rate of live copy ``c`` (at ``i``) from ``t`` (progress up to date), and its end."""
    s = cslot[c]
    rate = cshare[c] * power[s] * level[s] / work[ctask[c]]
    lrate[i] = rate
    lfin[i] = t + (1.0 - lprog[i]) / rate if rate > 0 else math.inf


@njit(cache=True, inline="always")
def end_copy(i, c, at, outcome, work, ctask, cslot, cshare, cend, cwaste, cout, lprog,
             lbase, slot_used, slot_copies, tlive):  # pragma: no cover - compiled
    """End live copy ``c`` (at ``i``) at ``at`` with ``outcome``; free its machine's share."""
    cend[c] = at
    cout[c] = outcome
    t = ctask[c]
    if outcome != WON:
        cwaste[c] += (lprog[i] - lbase[i]) * work[t]
    slot_used[cslot[c]] -= cshare[c]
    slot_copies[cslot[c]] -= 1
    tlive[t] -= 1


@njit(cache=True, inline="always")
def compact(live, n_live, cout, cslot, slot_at, lprog, lbase, lt0, lrate,
            lfin):  # pragma: no cover - compiled
    """Keep the live copies still alive, in order, with their per-live state."""
    k = 0
    for i in range(n_live):
        c = live[i]
        if cout[c] == ALIVE:
            live[k] = c
            slot_at[cslot[c]] = k
            lprog[k], lbase[k], lt0[k] = lprog[i], lbase[i], lt0[i]
            lrate[k], lfin[k] = lrate[i], lfin[i]
            k += 1
    return k


@njit(cache=True, inline="always")
def _sort_prefix(a, n):  # pragma: no cover - compiled
    """Sort ``a[:n]`` in place (insertion sort: the prefix is nearly sorted)."""
    for i in range(1, n):
        v = a[i]
        q = i - 1
        while q >= 0 and a[q] > v:
            a[q + 1] = a[q]
            q -= 1
        a[q + 1] = v


@njit(cache=True, inline="always")
def _allocate(kind, beta, n, m, counts):  # pragma: no cover - compiled
    """Machines of the ``n`` jobs in policy order (002 Algorithms 1-3); return the share."""
    for i in range(n):
        counts[i] = 0
    if kind == 2:                              # LAPS+R(beta), jobs by arrival
        served = min(int(math.floor(beta * n + 1e-9)), n - 1)
        z, alpha = served // m, served % m
        if z >= 1:
            for i in range(n - served - 1, n - 1):
                counts[i] = 1
            counts[n - 1] = m - alpha
            return 1.0 / (z + 1)
        each = m // (alpha + 1)
        for i in range(n - alpha - 1, n):
            counts[i] = each
        counts[n - 1] = m - alpha * each
        return 1.0
    if n >= m:
        if kind == 0:                          # SRPT+R: the m smallest
            for i in range(m):
                counts[i] = 1
            return 1.0
        k, oldest = n // m, n % m              # Fair+R: the km latest, share 1/k
        for i in range(oldest, n):
            counts[i] = 1
        return 1.0 / k
    each = m // n
    for i in range(n):
        counts[i] = each
    counts[0 if kind == 0 else n - 1] = m - (n - 1) * each
    return 1.0


@njit(cache=True, inline="always")
def _launch(j, s, share, t, iv, work, power, level, saved, tstate, tstart, tcopies, tlive,
            slot_used, slot_copies, ctask, cslot, cshare, cstart, cend, cexec, cwaste,
            cshare_t, cout, live, slot_at, per_live, n_live):  # pragma: no cover - compiled
    lprog, lbase, lt0, lrate, lfin = per_live[0], per_live[1], per_live[2], per_live[3], \
        per_live[4]
    c = iv[5]
    iv[5] = c + 1
    ctask[c] = j
    cslot[c] = s
    cshare[c] = share
    cstart[c] = t
    cend[c] = np.nan
    cexec[c] = 0.0
    cwaste[c] = 0.0
    cshare_t[c] = 0.0
    cout[c] = ALIVE
    live[n_live] = c
    slot_at[s] = n_live
    lprog[n_live] = saved[j]
    lbase[n_live] = saved[j]
    lt0[n_live] = t
    set_rate(n_live, c, t, work, power, level, ctask, cslot, cshare, lprog, lrate, lfin)
    slot_used[s] += share
    slot_copies[s] += 1
    if tstate[j] == READY:
        tstate[j] = RUNNING
        if np.isnan(tstart[j]):
            tstart[j] = t
    tcopies[j] += 1
    tlive[j] += 1
    return n_live + 1


@njit(cache=True, inline="always")
def _checkpoint(t, n_live, live, per_live, work, tasks, copies, cmax,
                clead):  # pragma: no cover - compiled
    """Checkpoint every job (002 §3): every copy of a task continues from its best copy.

    A negative ``clead`` means no lead copy (every reader takes it so): -1, or -2 - lead
    once the task has been checkpointed here, so its later copies still know the lead.
    """
    lprog, lbase, lt0, lrate = per_live[0], per_live[1], per_live[2], per_live[3]
    ctask, cshare, cexec, cwaste, cshare_t = copies[0], copies[2], copies[5], copies[6], \
        copies[7]
    saved, tckpt, jwork_left, jckpt = tasks[1], tasks[7], tasks[9], tasks[10]
    for i in range(n_live):
        c = live[i]
        catch_up(i, c, t, work, ctask, cshare, cexec, cshare_t, lprog, lt0, lrate)
        j = ctask[c]
        if clead[j] < 0 or lprog[i] > cmax[j]:
            clead[j] = c
            cmax[j] = lprog[i]
    for i in range(n_live):
        c = live[i]
        j = ctask[c]
        lead = clead[j]
        if lead >= 0:               # the task's first copy: checkpoint the task
            lv = max(saved[j], cmax[j])
            jwork_left[j] -= (lv - saved[j]) * work[j]
            saved[j] = lv
            tckpt[j] += 1
            jckpt[j] += 1
            clead[j] = -2 - lead
        else:
            lead = -2 - lead
        lv = saved[j]
        if not (c == lead and lprog[i] >= lv - EPS):
            cwaste[c] += (lprog[i] - lbase[i]) * work[j]
        lprog[i] = lv
        lbase[i] = lv


@njit(cache=True, inline="always")
def _order_jobs(kind, n_alive, iv, tasks, alive, order, keys):  # pragma: no cover - compiled
    """The alive jobs in the policy's order: SRPT by remaining work, else by arrival.

    ``keys`` is scratch for the sort keys (one per position).
    """
    tstate, jwork_left = tasks[0], tasks[9]
    if kind == 0:
        # SRPT order by remaining work, ties by arrival: last decision's order, less the
        # jobs gone, plus the new ones, re-sorted by insertion (it is nearly sorted: only
        # running jobs' remaining work moved).
        k = 0
        for i in range(iv[9]):
            if tstate[order[i]] != DONE:
                order[k] = order[i]
                k += 1
        for j in range(iv[8], iv[0]):
            order[k] = j
            k += 1
        iv[8], iv[9] = iv[0], k
        for i in range(k):
            keys[i] = max(jwork_left[order[i]], 0.0)
        for i in range(1, k):
            j = order[i]
            key = keys[i]
            q = i - 1
            while q >= 0 and (keys[q] > key or keys[q] == key and order[q] > j):
                order[q + 1] = order[q]
                keys[q + 1] = keys[q]
                q -= 1
            order[q + 1] = j
            keys[q + 1] = key
    else:
        for i in range(n_alive):
            order[i] = alive[i]


@njit(cache=True, inline="always")
def _want(kind, beta, max_copies, n_alive, m, order, want,
          counts):  # pragma: no cover - compiled
    """Copies each alive job should have, and their share; whether one wants several."""
    share = _allocate(kind, beta, n_alive, m, counts)
    any_multi = False
    for i in range(n_alive):
        r = counts[i]
        if max_copies > 0 and r > max_copies:
            r = max_copies
        want[order[i]] = r
        if r > 1:
            any_multi = True
    return share, any_multi


@njit(cache=True, inline="always")
def _keep(t, share, any_multi, random, n_live, live, per_live, work, slots, tasks, copies,
          scratch):  # pragma: no cover - compiled
    """Keep, resize or kill each live copy for the new allocation; return the live count.

    Copies stay by copy id within the task, then within the machine; the rest are killed.
    """
    lprog, lbase, lt0, lrate, lfin = per_live[0], per_live[1], per_live[2], per_live[3], \
        per_live[4]
    power, level, slot_used, slot_copies = slots[0], slots[2], slots[4], slots[5]
    tstate, tlive = tasks[0], tasks[8]
    ctask, cslot, cshare, cend, cwaste, cout = copies[0], copies[1], copies[2], copies[4], \
        copies[6], copies[8]
    want, have, units, cand, slot_at = scratch[2], scratch[3], scratch[4], scratch[5], \
        scratch[8]
    m = power.size
    per_machine = int(math.floor(1.0 / share + 1e-9))
    # Copies of single-copy jobs first give way where machines are shared by several.
    shared = not random and share < 1.0 and any_multi
    if not random:
        for s in range(m):
            units[s] = 0
    for i in range(n_live):
        c = live[i]
        j = ctask[c]
        keep = not random and have[j] < want[j]
        if keep:
            have[j] += 1
            if shared:
                if want[j] == 1:
                    if units[cslot[c]] >= per_machine - 1:
                        keep = False
                    units[cslot[c]] += 1
            else:
                if units[cslot[c]] >= per_machine:
                    keep = False
                units[cslot[c]] += 1
        cand[i] = 1 if keep else 0
    if shared:
        for s in range(m):
            units[s] = 0
        for i in range(n_live):
            c = live[i]
            if cand[i] == 1:
                if units[cslot[c]] >= per_machine:
                    cand[i] = 0
                units[cslot[c]] += 1
    for i in range(n_live):
        c = live[i]
        if cand[i] == 0:
            end_copy(i, c, t, KILLED, work, ctask, cslot, cshare, cend, cwaste, cout,
                     lprog, lbase, slot_used, slot_copies, tlive)
    for i in range(n_live):
        c = live[i]
        j = ctask[c]
        have[j] = 0
        if cand[i] == 1:
            # A kept copy's rate is recomputed where its share changed (it is the same
            # number otherwise), and its end from its checkpointed progress.
            if abs(cshare[c] - share) > 1e-12:
                slot_used[cslot[c]] += share - cshare[c]
                cshare[c] = share
                set_rate(i, c, t, work, power, level, ctask, cslot, cshare, lprog, lrate,
                         lfin)
            else:
                rate = lrate[i]
                lfin[i] = t + (1.0 - lprog[i]) / rate if rate > 0 else math.inf
        elif tlive[j] == 0 and tstate[j] == RUNNING:
            tstate[j] = READY
    return compact(live, n_live, cout, cslot, slot_at, lprog, lbase, lt0, lrate, lfin)


@njit(cache=True, inline="always")
def _place(t, share, n_live, n_alive, rng, iv, live, per_live, work, slots, tasks, copies,
           scratch):  # pragma: no cover - compiled
    """Launch the missing copies on free units drawn at random (pool._place).

    A job that needs several copies, or has one already, draws among the machines it is
    not on; the other jobs' single copies are drawn together from the free units.
    """
    power, level, slot_used, slot_copies = slots[0], slots[2], slots[4], slots[5]
    tstate, saved, tstart, tcopies, tlive = tasks[0], tasks[1], tasks[3], tasks[6], tasks[8]
    ctask, cslot, cshare, cstart, cend, cexec, cwaste, cshare_t, cout = copies
    want, units, cand, order, counts, slot_at = scratch[2], scratch[4], scratch[5], \
        scratch[6], scratch[7], scratch[8]
    m = power.size
    for s in range(m):
        units[s] = int(math.floor((1.0 - slot_used[s] + 1e-9) / share))
    whole = share >= 1.0 - 1e-12
    n_single = 0
    for i in range(n_alive):
        j = order[i]
        miss = want[j] - tlive[j]
        if miss <= 0:
            continue
        if whole or not (miss > 1 or tlive[j] > 0):
            for _ in range(miss):
                counts[n_single] = j        # counts: scratch for the singles
                n_single += 1
            continue
        n_cand = 0
        for s in range(m):
            if units[s] > 0:
                cand[n_cand] = s
                n_cand += 1
        for i2 in range(n_live):        # not on a machine the task is on
            c = live[i2]
            if ctask[c] == j:
                for q in range(n_cand):
                    if cand[q] == cslot[c]:
                        cand[q] = cand[n_cand - 1]
                        n_cand -= 1
                        break
        _sort_prefix(cand, n_cand)      # candidates in slot order
        k = min(miss, n_cand)
        _choose(rng, cand, n_cand, k)
        for q in range(k):
            s = cand[q]
            units[s] -= 1
            n_live = _launch(j, s, share, t, iv, work, power, level, saved, tstate,
                             tstart, tcopies, tlive, slot_used, slot_copies, ctask,
                             cslot, cshare, cstart, cend, cexec, cwaste, cshare_t,
                             cout, live, slot_at, per_live, n_live)
    n_pool = 0
    for s in range(m):
        for _ in range(units[s]):
            cand[n_pool] = s
            n_pool += 1
    k = min(n_single, n_pool)
    _choose(rng, cand, n_pool, k)
    for q in range(k):
        n_live = _launch(counts[q], cand[q], share, t, iv, work, power, level, saved,
                         tstate, tstart, tcopies, tlive, slot_used, slot_copies, ctask,
                         cslot, cshare, cstart, cend, cexec, cwaste, cshare_t, cout,
                         live, slot_at, per_live, n_live)
    return n_live


@njit(cache=True, inline="always")
def decide(t, n_live, n_alive, rng, iv, params, beta, live, per_live, alive, work, slots,
           tasks, copies, scratch):  # pragma: no cover - compiled
    """A decision: checkpoint every job, allocate, kill, resize, launch; return live copies."""
    kind, max_copies, random = params[0], params[1], params[2] != 0
    cmax, clead, want, order, counts = scratch[0], scratch[1], scratch[2], scratch[6], \
        scratch[7]
    _checkpoint(t, n_live, live, per_live, work, tasks, copies, cmax, clead)
    _order_jobs(kind, n_alive, iv, tasks, alive, order, cmax)   # cmax: free scratch now
    share, any_multi = _want(kind, beta, max_copies, n_alive, slots[0].size, order, want,
                             counts)
    n_live = _keep(t, share, any_multi, random, n_live, live, per_live, work, slots, tasks,
                   copies, scratch)
    n_live = _place(t, share, n_live, n_alive, rng, iv, live, per_live, work, slots, tasks,
                    copies, scratch)
    for i in range(n_alive):
        want[alive[i]] = 0
    return n_live
