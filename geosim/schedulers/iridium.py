"""Iridium: network-aware task placement for geo-distributed analytics.

Pu et al., "Low Latency Geo-distributed Data Analytics", SIGCOMM 2015, §3 (task
placement). A reduce stage reads data spread over sites; Iridium chooses the fraction
``r_i`` of the stage's tasks at each site so that the slowest upload or download of the
shuffle is as short as possible, a linear program (:func:`reduce_fractions`).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment, linprog

from geosim.schedulers.compose import Placement
from geosim.schedulers.placement import locality_cluster
from geosim.view import SchedulerView, first_of_runs


class Iridium(Placement):
    """Iridium's task placement (SIGCOMM 2015, §3), one job's ready tasks at a time.

    The ready tasks handed to :meth:`place` come grouped by job, in job priority order;
    each job's are placed in turn on the slots the earlier jobs left.

    - **Map (input) tasks**, whose input sits in one cluster (or which have none), run at
      their data: locality placement
      (:func:`~geosim.schedulers.placement.locality_cluster`).
    - **Reduce tasks**, which read inputs from more than one cluster, form the job's
      reduce stage. With ``I_i`` the stage's input MB at cluster ``i``, ``S = Σ I_i``
      and ``U_i``, ``D_i`` the egress and ingress gate bandwidths (``view.gate``), the
      fractions ``r_i`` of its tasks minimise ``T`` subject to
      ``I_i (1 − r_i) / U_i ≤ T`` (upload), ``r_i (S − I_i) / D_i ≤ T`` (download),
      ``Σ r_i = 1``, ``r_i ≥ 0`` (:func:`reduce_fractions`). The sites are the reachable
      clusters with a free slot; a cluster holding data without a free slot only
      uploads, a constant the program cannot change, so it is left out. Free slots
      bound the fractions, ``r_i ≤ free_i / N`` (``N`` the tasks placed: the stage's
      tasks, or the free slots if fewer), so the program itself respects capacity and
      needs no spill-over. Fractions become whole tasks by largest remainder, never
      beyond a site's free slots (:func:`round_counts`); which tasks go to site ``i``
      maximises the input the tasks find locally (an assignment problem, solved
      exactly), and tasks left without a slot wait.

    Simplifications. Iridium's model treats a stage's intermediate data as divisible
    among its tasks (every reduce task reads an equal share from every site, as in an
    all-to-all shuffle); here a task reads its own inputs, so the program places the
    stage's volume and the assignment then moves as little as it can. Iridium's data
    placement (moving input between sites before queries arrive, §4) and its WAN budget
    (§5) are not modelled: data cannot move before a job arrives in the engine.
    """

    name = "iridium"

    def place(self, view: SchedulerView, tasks: np.ndarray, free: np.ndarray) -> np.ndarray:
        """Map tasks at their data, each job's reduce tasks by :func:`reduce_fractions`."""
        tasks = np.asarray(tasks, dtype=np.int64)
        out = np.full(tasks.size, -1, dtype=np.int64)
        if tasks.size == 0:
            return out
        n = view.n_clusters
        starts = np.flatnonzero(first_of_runs(view.task_job[tasks]))
        ends = np.append(starts[1:], tasks.size)
        for lo, hi in zip(starts, ends, strict=True):
            if not free.any():
                break
            sub = tasks[lo:hi]
            pos, src, size = view.inputs_of(sub)
            data = np.zeros((sub.size, n))
            np.add.at(data, (pos, src), size)
            reduce = np.count_nonzero(data, axis=1) >= 2
            for i in np.flatnonzero(~reduce):
                if not free.any():
                    break
                c = locality_cluster(view, int(sub[i]), free)
                out[lo + i] = c
                free[c] -= 1
            red = np.flatnonzero(reduce)
            if red.size and free.any():
                got = place_reduce(data[red], np.asarray(view.gate, dtype=float), free)
                out[lo + red] = got
                np.subtract.at(free, got[got >= 0], 1)
        return out


def reduce_fractions(data: np.ndarray, up: np.ndarray, down: np.ndarray,
                     cap: np.ndarray | None = None,
                     total: float | None = None) -> tuple[np.ndarray, float]:
    """Iridium's task-placement program (SIGCOMM 2015, §3.1), solved with HiGHS.

    Args:
        data: Input MB of the stage at each site, ``I_i``.
        up: Upload (egress) bandwidth of each site, ``U_i`` (MB/s).
        down: Download (ingress) bandwidth of each site, ``D_i`` (MB/s).
        cap: Optional upper bound on each ``r_i`` (free slots over tasks placed).
        total: The stage's input ``S`` (MB); by default ``sum(data)``. Larger when some
            input sits outside the sites: every site downloads its share of it too.

    Returns:
        The fractions ``r`` and the shuffle time ``T`` (s) they achieve.
    """
    data = np.asarray(data, dtype=float)
    s = data.size
    total = data.sum() if total is None else float(total)
    # variables (r_1..r_s, T); minimise T
    obj = np.zeros(s + 1)
    obj[-1] = 1.0
    eye = np.eye(s)
    upload = np.column_stack([-eye * (data / up)[:, None], -np.ones(s)])
    download = np.column_stack([eye * ((total - data) / down)[:, None], -np.ones(s)])
    a_ub = np.vstack([upload, download])
    b_ub = np.concatenate([-data / up, np.zeros(s)])
    a_eq = np.append(np.ones(s), 0.0)[None, :]
    hi = np.ones(s) if cap is None else np.minimum(np.asarray(cap, dtype=float), 1.0)
    bounds = [(0.0, h) for h in hi] + [(0.0, None)]
    res = linprog(obj, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0], bounds=bounds,
                  method="highs")
    if res.status != 0:
        raise RuntimeError(f"Iridium's linear program failed: {res.message}")
    r = np.clip(res.x[:s], 0.0, None)
    return r / r.sum(), float(res.x[-1])


def round_counts(r: np.ndarray, n: int, cap: np.ndarray) -> np.ndarray:
    """Whole tasks per site from fractions: largest remainder, at most ``cap`` per site.

    Args:
        r: Fractions summing to 1.
        n: Tasks to place (at most ``cap.sum()``).
        cap: Free slots per site.
    """
    cap = np.asarray(cap, dtype=np.int64)
    want = np.asarray(r, dtype=float) * n
    counts = np.minimum(np.floor(want + 1e-9).astype(np.int64), cap)
    rest = want - counts
    short = n - int(counts.sum())
    while short > 0:
        room = np.flatnonzero(counts < cap)
        order = room[np.argsort(-rest[room], kind="stable")][:short]
        counts[order] += 1
        rest[order] -= 1.0
        short = n - int(counts.sum())
    return counts


def place_reduce(data: np.ndarray, gate: np.ndarray, free: np.ndarray) -> np.ndarray:
    """Place a reduce stage: fractions by :func:`reduce_fractions`, then tasks to sites.

    Args:
        data: Input MB of each task at each cluster, shape ``(tasks, clusters)``.
        gate: Gate bandwidth per cluster (MB/s), egress and ingress alike.
        free: Free slots per cluster (not modified).

    Returns:
        The cluster of each task, ``-1`` for a task left waiting.
    """
    sites = np.flatnonzero(free > 0)
    n = int(min(data.shape[0], free[sites].sum()))
    out = np.full(data.shape[0], -1, dtype=np.int64)
    if n == 0:
        return out
    share = data[:, sites].sum(axis=0)
    r, _ = reduce_fractions(share, gate[sites], gate[sites], free[sites] / n, data.sum())
    counts = round_counts(r, n, free[sites])
    slot_site = np.repeat(sites, counts)
    rows, cols = linear_sum_assignment(-data[:, slot_site])
    out[rows] = slot_site[cols]
    return out
