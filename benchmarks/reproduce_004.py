"""Reproduce FlowFlex's simulation results (004 §3, Tables 1 and 2).

Every experiment is one :func:`geosim.flowflex.generate_instance` draw with the default
:class:`~geosim.flowflex.GeneratorConfig` (5–20 flows of 2–20 jobs on 25 slots, all at time
0). For each of the 9 minisum metrics of Table 1 and the 8 minimax metrics of Table 2, the
script plans every experiment with FlowFlex (:func:`geosim.flowflex.plan`), runs Fair and
FIFO, and divides each cost by the plan's best lower bound as 004's footnote 4 does:
``(cost + 1) / (lower bound + 1)`` (min-cost-flow bound for minisum, critical-path /
bisection bound for minimax). This is what :func:`geosim.flowflex.compare` computes; the
script calls the pieces itself so that it can time the planner alone and run Fair and FIFO
once per experiment (their schedules do not depend on the metric).

Seeds. Experiment ``k`` (``k = 0 … 24``) is ``generate_instance(seed + k)`` and, by default,
the same 25 experiments serve every row of both tables: every experiment carries weights,
deadlines and SLA steps, so one draw defines all 17 problems, and rows are then compared on
common random numbers (004 does not say whether its rows share experiments). With
``--independent`` row ``r`` (0–8 for Table 1, 9–16 for Table 2, in table order) gets its own
experiments, ``generate_instance(seed + 1000 (r + 1) + k)``.

Prints each table as Markdown with geosim's average/worst ratio beside 004's, the planning
time per plan (minimum, median, maximum; FlowFlex only, without Fair and FIFO) and the wall
time of the run; writes the per-experiment numbers to ``<out>/ratios.csv``. Results do not
depend on ``--workers``. About 10 s on 2 cores.

``--diagnose`` adds, for every row and experiment, two numbers that locate the gap between a
schedule and 004's bound (about 20 min on 2 cores):

- a stronger lower bound, by energetic reasoning: if flow ``j`` completes by ``C``, job ``i``
  (running at most ``δ_i`` slots, with a longest path ``q_i`` after it) must be done by
  ``C − q_i``, so at least ``g_j(C − t) = V_j − min(P u, Σ_i min(s_i, δ_i (u − q_i)⁺))``
  (``u = C − t``) of the flow's work is done by time ``t``, and the flows' mandatory works add
  up to at most ``P t``. Minisum: an LP over the fractions ``y_jk`` of flow ``j`` completing
  in cell ``k`` of the min-cost-flow relaxation's grid (the relaxation is this LP with
  ``g_j = V_j [C ≤ t]``), and with ``--mip SECONDS`` the same with ``y`` binary, solved by
  HiGHS within that time (its dual bound counts; about 45 min in all with ``--mip 20``);
  minimax: the bisection of 004 §3 with this test in place of the squashed-area partial
  sums. All are valid bounds (checked against brute force on small instances) and at least
  as strong as the conditions they replace;
- a better schedule: the cheapest of FlowFlex, Fair, FIFO and three local searches, over the
  flow order of FlowFlex's own greedy (Stage 2 on the pseudo-job chains), over the flow
  order of a FIFO-like job-level ready list, and over the target completion times of a
  job-level ready list that serves jobs by latest start time (target minus the path after
  the job).

The optimum lies between the two, so ``FlowFlex / stronger bound`` and ``best / stronger
bound`` show how much of 004's ratio is the bound, and ``FlowFlex / best`` how much is the
plan.

Sensitivity options: ``--set name=value`` overrides a
:class:`~geosim.flowflex.GeneratorConfig` field (e.g. ``deadline_slack=0.1``);
``--grid-cells N`` lets the relaxation's uniform grid have up to ``N`` cells (default 256,
beyond which the grid is geometric); ``--time-unit U`` prints the ratios with time-valued
costs (completion time, tardiness) measured in units of ``U``, which changes footnote 4's
``+ 1``; ``--stretch-size critical_path`` divides completion times by the critical path
instead of the work in the stretch rows.

    python benchmarks/reproduce_004.py [--experiments 25] [--seed 0] [--workers 2]
        [--independent] [--rows minisum:tardiness ...] [--set deadline_slack=0.1 ...]
        [--grid-cells 256] [--time-unit 1] [--stretch-size work]
        [--diagnose [--mip 20]] [--out results/reproduce-004]
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import math
import multiprocessing
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import Bounds, LinearConstraint, linprog, milp
from scipy.sparse import coo_matrix

from geosim.flowflex import (
    MINIMAX_METRICS,
    MINISUM_METRICS,
    GeneratorConfig,
    GridOptions,
    Instance,
    Metric,
    Plan,
    PlannerOptions,
    build_relaxation,
    earliest_completions,
    fair_schedule,
    fifo_schedule,
    generate_instance,
    greedy_schedule,
    plan,
)
from geosim.flowflex.bounds import cost_values, smallest_passing
from geosim.flowflex.metrics import STRETCH_SIZES

ROOT = Path(__file__).resolve().parents[1]
SCHEDULERS = ("flowflex", "fair", "fifo")
TABLES = {"minisum": MINISUM_METRICS, "minimax": MINIMAX_METRICS}

#: 004 Table 1 (minisum) and Table 2 (minimax): (average, worst) of FlowFlex, Fair, FIFO.
PAPER: dict[str, dict[str, tuple[tuple[float, float], ...]]] = {
    "minisum": {
        "completion_time": ((1.23, 1.46), (2.10, 2.25), (2.07, 3.00)),
        "stretch": ((1.22, 1.38), (3.79, 6.32), (7.92, 21.03)),
        "weighted_completion_time": ((1.25, 1.52), (2.42, 3.15), (2.30, 5.39)),
        "number_of_tardy": ((1.42, 2.12), (1.88, 3.97), (1.64, 3.31)),
        "weighted_number_of_tardy": ((1.65, 3.06), (2.71, 9.31), (2.14, 7.08)),
        "tardiness": ((1.51, 3.11), (3.51, 8.54), (3.74, 10.55)),
        "weighted_tardiness": ((1.77, 4.11), (4.84, 8.99), (5.25, 16.54)),
        "unit_sla": ((1.62, 3.27), (2.62, 5.19), (2.22, 4.27)),
        "sla": ((1.52, 2.44), (2.56, 5.31), (2.32, 4.96)),
    },
    "minimax": {
        "makespan": ((1.01, 1.07), (1.01, 1.10), (1.02, 1.08)),
        "stretch": ((1.03, 1.14), (4.33, 13.42), (15.67, 55.00)),
        "weighted_completion_time": ((1.05, 1.14), (2.22, 3.81), (2.15, 3.81)),
        "weighted_number_of_tardy": ((1.12, 1.17), (1.50, 10.00), (1.47, 10.00)),
        "tardiness": ((1.07, 1.35), (1.13, 1.81), (1.47, 4.12)),
        "weighted_tardiness": ((1.08, 1.31), (2.69, 5.28), (2.92, 5.92)),
        "unit_sla": ((1.26, 1.50), (1.50, 3.00), (1.42, 2.00)),
        "sla": ((1.10, 1.43), (1.59, 2.63), (1.54, 2.63)),
    },
}

#: Row labels as 004 prints them.
LABELS = {
    "completion_time": "Completion Time", "makespan": "Makespan", "stretch": "Stretch",
    "weighted_completion_time": "Weighted Completion Time",
    "number_of_tardy": "Number of Tardy Jobs",
    "weighted_number_of_tardy": "Weighted Number of Tardy",
    "tardiness": "Tardiness", "weighted_tardiness": "Weighted Tardiness",
    "unit_sla": "Unit SLA", "sla": "SLA",
}

#: Metric kinds whose cost is a time (scaled by ``--time-unit``); stretch is a ratio.
TIME_VALUED = ("completion", "weighted_completion", "tardiness", "weighted_tardiness")

Row = tuple[str, str]
#: ``(experiment k, instance seed, rows, options)``; options: ``config`` (GeneratorConfig
#: overrides), ``grid_cells`` (the relaxation's most uniform cells), ``stretch_size``,
#: ``diagnose`` and ``mip``.
Task = tuple[int, int, tuple[Row, ...], dict[str, Any]]


def rows() -> list[Row]:
    """``(table, metric name)`` of the 17 rows in table order (``--independent``'s index)."""
    return [(table, name) for table, metrics in TABLES.items() for name in metrics]


def tasks(n: int, seed: int, independent: bool, selected: list[Row],
          options: dict[str, Any]) -> list[Task]:
    """One task per instance (per instance and row with ``independent``)."""
    all_rows = rows()
    if not independent:
        return [(k, seed + k, tuple(selected), options) for k in range(n)]
    return [(k, seed + 1000 * (r + 1) + k, (row,), options)
            for r, row in enumerate(all_rows) if row in selected for k in range(n)]


# ---------------------------------------------------------------- stronger lower bounds

class MandatoryWork:
    """``g_j(u)``: the work of flow ``j`` that must be done before its last ``u`` time units.

    In the last ``u`` time units before its completion, job ``i`` can do at most
    ``δ_i (u − q_i)⁺`` (and at most ``s_i``), ``q_i`` being the longest path of running times
    after it, and the flow at most ``P u``; the rest is done earlier.
    """

    def __init__(self, instance: Instance):
        self.slots = instance.slots
        self.flows = []
        for flow in instance.flows:
            dur = np.array([job.duration for job in flow.jobs])
            tail = np.zeros(flow.n_jobs)
            for i in reversed(flow.topological_order):
                tail[i] = max((dur[s] + tail[s] for s in flow.successors[i]), default=0.0)
            caps = np.array([job.cap for job in flow.jobs], dtype=float)
            sizes = np.array([job.size for job in flow.jobs])
            self.flows.append((tail, dur, caps, sizes, flow.total_work))

    def __call__(self, j: int, u: np.ndarray) -> np.ndarray:
        """``g_j`` at every ``u`` (``V_j`` for ``u ≤ 0``, 0 for ``u = ∞``)."""
        tail, _, caps, sizes, volume = self.flows[j]
        u = np.atleast_1d(np.asarray(u, dtype=float))
        late = np.minimum(sizes, caps * np.maximum(0.0, u[:, None] - tail)).sum(axis=1)
        late = np.minimum(late, self.slots * np.maximum(u, 0.0))
        out = volume - np.where(np.isinf(u), volume, late)
        return np.where(u <= 0, volume, out)

    def admissible(self, instance: Instance, deadlines: np.ndarray) -> bool:
        """Whether the mandatory works of flows due by ``deadlines`` fit, at every kink."""
        d = np.asarray(deadlines, dtype=float)
        if np.any(d < earliest_completions(instance) * (1 - 1e-12)):
            return False
        due = np.flatnonzero(np.isfinite(d))
        if due.size == 0:
            return True
        points = np.concatenate([np.concatenate([d[j] - tail, d[j] - tail - dur, [d[j]]])
                                 for j in due for tail, dur, *_ in [self.flows[j]]])
        points = np.unique(points[points > 0])
        if points.size == 0:
            return True
        total = sum(self(j, d[j] - points) for j in due)
        slack = 1e-9 * float(instance.volumes.sum())
        return bool(np.all(total <= self.slots * points * (1 + 1e-9) + slack))


def energetic_minisum(instance: Instance, metric: Metric, grid: GridOptions | None = None,
                      mip_seconds: float = 0.0) -> float:
    """The min-cost-flow relaxation with mandatory work in place of volume.

    ``y_jk`` is the fraction of flow ``j`` completing in cell ``k`` (right end ``R_k``); at
    every grid point ``t``, ``Σ_jk y_jk g_j(R_k − t) ≤ P t``; the cost is the relaxation's
    least cost of each cell. As an LP, and with ``mip_seconds > 0`` also with ``y`` binary
    (every flow completes in one cell), solved by HiGHS within that time; the MIP's dual
    bound is valid even when the time runs out.
    """
    relax = build_relaxation(instance, metric.costs(instance), grid)
    work = MandatoryWork(instance)
    ends = relax.right_ends
    points = relax.times[1:]
    allowed = np.argwhere(relax.allowed)
    cols, rows_, vals = [], [], []
    for v, (j, k) in enumerate(allowed):
        g = work(int(j), ends[k] - points)
        nz = np.flatnonzero(g > 0)
        rows_.append(nz)
        cols.append(np.full(nz.size, v))
        vals.append(g[nz])
    n = len(allowed)
    a_ub = coo_matrix((np.concatenate(vals), (np.concatenate(rows_), np.concatenate(cols))),
                      shape=(points.size, n))
    a_eq = coo_matrix((np.ones(n), (allowed[:, 0], np.arange(n))), shape=(instance.n_flows, n))
    cost = relax.costs[allowed[:, 0], allowed[:, 1]]
    res = linprog(cost, A_ub=a_ub, b_ub=instance.slots * points, A_eq=a_eq,
                  b_eq=np.ones(instance.n_flows), bounds=(0, None), method="highs")
    if res.status != 0:
        raise RuntimeError(f"energetic LP failed: {res.message}")
    best = float(res.fun)
    if mip_seconds > 0:
        mip = milp(cost, integrality=np.ones(n), bounds=Bounds(0, 1),
                   constraints=[LinearConstraint(a_ub, -np.inf, instance.slots * points),
                                LinearConstraint(a_eq, 1, 1)],
                   options={"time_limit": mip_seconds})
        if mip.mip_dual_bound is not None and math.isfinite(mip.mip_dual_bound):
            best = max(best, float(mip.mip_dual_bound))
    return best


def energetic_minimax(instance: Instance, metric: Metric, upper: float) -> float:
    """004 §3's bisection with the mandatory-work test; ``upper`` is a schedule's cost."""
    costs = metric.costs(instance)
    work = MandatoryWork(instance)
    e = earliest_completions(instance)
    m0 = max(float(c.cost(x)) for c, x in zip(costs, e, strict=True))

    def test(bound: float) -> bool:
        return work.admissible(instance, np.array([c.deadline(bound) for c in costs]))

    hi = max(m0, upper)
    if not test(hi):
        raise RuntimeError("a schedule's own cost fails the mandatory-work test")
    values = cost_values(costs)
    failed, passed = smallest_passing(test, m0, hi, values, rel_tol=1e-6, bracket_steps=30)
    return passed if values is not None else max(m0, failed)


# ---------------------------------------------------------------- better schedules

def chain_greedy(instance: Instance, order: list[int]) -> np.ndarray:
    """FlowFlex's Stage 2 greedy on the pseudo-job chains, flows in ``order``."""
    rank = np.empty(len(order))
    rank[np.asarray(order)] = np.arange(len(order))
    chains = [f.pseudo_jobs for f in instance.flows]
    return greedy_schedule(chains, instance.releases, rank, instance.slots).completion


def flow_list(instance: Instance, order: list[int]) -> np.ndarray:
    """FIFO's job-level ready list with flows served in ``order``."""
    permuted = Instance(tuple(instance.flows[j] for j in order), instance.slots)
    out = np.empty(len(order))
    out[np.asarray(order)] = fifo_schedule(permuted).flow_completion
    return out


def latest_start_list(instance: Instance, work: MandatoryWork,
                      targets: np.ndarray) -> np.ndarray:
    """A job-level ready list serving jobs by latest start ``target_j − q_i − s_i/δ_i``.

    At every event the ready jobs (all predecessors done), smallest key first, each take
    ``min(δ_i, slots left)``; returns the flow completion times.
    """
    keys = instance.job_keys()
    index = {k: x for x, k in enumerate(keys)}
    key = np.array([targets[j] - work.flows[j][0][i] - work.flows[j][1][i] for j, i in keys])
    size = np.array([instance.job(k).size for k in keys])
    caps = np.array([instance.job(k).cap for k in keys], dtype=float)
    rem = size.copy()
    indeg = np.zeros(len(keys), dtype=int)
    succ: list[list[int]] = [[] for _ in keys]
    for j, flow in enumerate(instance.flows):
        for a, b in set(flow.edges):
            succ[index[(j, a)]].append(index[(j, b)])
            indeg[index[(j, b)]] += 1
    ready = [x for x in range(len(keys)) if indeg[x] == 0]
    flow_done = np.zeros(instance.n_flows)
    t, left_jobs = 0.0, len(keys)
    while left_jobs:
        idx = np.array(sorted(ready, key=lambda x: (key[x], x)))
        take = np.minimum(caps[idx], np.maximum(0.0, instance.slots - np.concatenate(
            [[0.0], np.cumsum(caps[idx])[:-1]])))
        run = take > 0
        finish = np.full(idx.size, math.inf)
        finish[run] = rem[idx[run]] / take[run]
        dt = float(finish.min())
        rem[idx] -= take * dt
        t += dt
        for x in idx[run & ((finish <= dt * (1 + 1e-12)) | (rem[idx] <= 1e-12 * size[idx]))]:
            rem[x] = 0.0
            ready.remove(int(x))
            left_jobs -= 1
            flow_done[keys[x][0]] = max(flow_done[keys[x][0]], t)
            for y in succ[x]:
                indeg[y] -= 1
                if indeg[y] == 0:
                    ready.append(y)
    return flow_done


def order_search(instance: Instance, metric: Metric, schedule, order: list[int],
                 budget: int, rng: np.random.Generator) -> float:
    """First-improvement local search over flow orders (move one flow), ``budget`` runs."""
    best = metric.evaluate(instance, schedule(instance, order))
    runs, n, improved = 1, len(order), True
    while improved and runs < budget:
        improved = False
        moves = [(a, b) for a in range(n) for b in range(n) if a != b]
        for m in rng.permutation(len(moves)):
            if runs >= budget:
                break
            a, b = moves[m]
            cand = order[:a] + order[a + 1:]
            cand.insert(b, order[a])
            value = metric.evaluate(instance, schedule(instance, cand))
            runs += 1
            if value < best - 1e-9:
                best, order, improved = value, cand, True
                break
    return best


def target_search(instance: Instance, metric: Metric, work: MandatoryWork,
                  targets: np.ndarray, budget: int, rng: np.random.Generator) -> float:
    """Coordinate search on the target completion times of :func:`latest_start_list`."""
    d = np.array(targets, dtype=float)
    best = metric.evaluate(instance, latest_start_list(instance, work, d))
    step = 0.25 * max(1.0, float(np.ptp(d)))
    runs, stop = 1, 1e-3 * step
    while runs < budget and step > stop:
        improved = False
        for j in rng.permutation(instance.n_flows):
            for delta in (-step, step):
                cand = d.copy()
                cand[j] += delta
                value = metric.evaluate(instance, latest_start_list(instance, work, cand))
                runs += 1
                if value < best - 1e-9:
                    best, d, improved = value, cand, True
                    break
            if runs >= budget:
                break
        if not improved:
            step /= 2
    return best


def diagnose(instance: Instance, metric: Metric, p: Plan, known: float,
             grid: GridOptions | None = None, mip_seconds: float = 0.0,
             budget: int = 150) -> dict[str, float]:
    """The stronger bound and the best schedule found (see the module docstring)."""
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    if metric.minimax:
        strong = energetic_minimax(instance, metric, known)
    else:
        strong = energetic_minisum(instance, metric, grid, mip_seconds)
    work = MandatoryWork(instance)
    by_plan = [int(j) for j in np.argsort(p.flow_completion, kind="stable")]
    found = {"chain_order": order_search(instance, metric, chain_greedy, by_plan, budget, rng),
             "list_order": order_search(instance, metric, flow_list, by_plan, budget, rng)}
    due = np.array([c.deadline(0.0) for c in metric.costs(instance)])
    due = np.where(np.isfinite(due), due, p.flow_completion)
    found["latest_start"] = min(
        target_search(instance, metric, work, p.flow_completion, budget, rng),
        target_search(instance, metric, work, due, budget, rng))
    out = {f"search_{k}": v for k, v in found.items()}
    out["best_schedule"] = min(known, *found.values())
    out["energetic_bound"] = strong
    out["diagnose_seconds"] = time.perf_counter() - start
    return out


# ---------------------------------------------------------------- the experiments

def run_task(task: Task) -> list[dict]:
    """Plan one experiment for the given rows; Fair and FIFO are run once and evaluated."""
    k, inst_seed, task_rows, opts = task
    instance = generate_instance(inst_seed, GeneratorConfig(**opts["config"]))
    grid = GridOptions(max_uniform_cells=opts["grid_cells"])
    options = PlannerOptions(grid=grid)
    fair = fair_schedule(instance).flow_completion
    fifo = fifo_schedule(instance).flow_completion
    out = []
    for table, name in task_rows:
        metric = TABLES[table][name]
        if metric.kind == "stretch":
            metric = dataclasses.replace(metric, stretch_size=opts["stretch_size"])
        start = time.perf_counter()
        p = plan(instance, metric, options)
        seconds = time.perf_counter() - start
        costs = {"flowflex": p.cost, "fair": metric.evaluate(instance, fair),
                 "fifo": metric.evaluate(instance, fifo)}
        lb = p.lower_bound
        rec = {"table": table, "metric": name, "experiment": k, "seed": inst_seed,
               "flows": instance.n_flows, "jobs": sum(f.n_jobs for f in instance.flows),
               "lower_bound": lb, "best_bound": max(p.lower_bounds, key=p.lower_bounds.get),
               "plan_seconds": seconds}
        rec.update({f"bound_{b}": v for b, v in p.lower_bounds.items()})
        for s in SCHEDULERS:
            rec[f"cost_{s}"] = costs[s]
            rec[f"ratio_{s}"] = (costs[s] + 1.0) / (lb + 1.0)
        if table == "minisum":
            rec.update(relaxation=p.details["relaxation"], alpha=p.details["alpha"],
                       grid=p.details["grid"])
        if opts["diagnose"]:
            rec.update(diagnose(instance, metric, p, min(costs.values()), grid, opts["mip"]))
        out.append(rec)
    return out


def run_all(tasks_: list[Task], workers: int) -> pd.DataFrame:
    """Every (row, experiment) record, in a fixed order whatever ``workers`` is."""
    if workers > 1:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            parts = pool.map(run_task, tasks_, chunksize=1)
    else:
        parts = [run_task(t) for t in tasks_]
    df = pd.DataFrame([r for part in parts for r in part])
    order = {row: i for i, row in enumerate(rows())}
    df["row"] = [order[(t, m)] for t, m in zip(df["table"], df["metric"], strict=True)]
    return df.sort_values(["row", "experiment"]).reset_index(drop=True)


def _avg_worst(x: pd.Series) -> str:
    return f"{x.mean():.2f}/{x.max():.2f}"


def ratios(sub: pd.DataFrame, scheduler: str, table: str, name: str,
           unit: float = 1.0) -> pd.Series:
    """``(cost + 1) / (bound + 1)``, with time in units of ``unit`` for time-valued costs."""
    scale = unit if TABLES[table][name].kind in TIME_VALUED else 1.0
    return (sub[f"cost_{scheduler}"] / scale + 1.0) / (sub["lower_bound"] / scale + 1.0)


def table_markdown(df: pd.DataFrame, table: str, unit: float = 1.0) -> str:
    """geosim's average/worst ratio beside 004's, per row and scheduler."""
    head = ("| metric | FlowFlex | 004 | Fair | 004 | FIFO | 004 |\n"
            "|---|---|---|---|---|---|---|\n")
    lines = []
    for name in TABLES[table]:
        sub = df[(df["table"] == table) & (df["metric"] == name)]
        if sub.empty:
            continue
        cells = [LABELS[name]]
        for s, paper in zip(SCHEDULERS, PAPER[table][name], strict=True):
            cells += [_avg_worst(ratios(sub, s, table, name, unit)),
                      f"{paper[0]:.2f}/{paper[1]:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return head + "\n".join(lines)


def diagnose_markdown(df: pd.DataFrame) -> str:
    """Where the ratio comes from: the bound (stronger bound) or the plan (best schedule)."""
    head = ("| table | metric | FlowFlex / 004 bound | stronger bound raises 004's in | "
            "FlowFlex / stronger bound | best / stronger bound | FlowFlex / best | "
            "Fair / stronger bound |\n|---|---|---|---|---|---|---|---|\n")
    lines = []
    for (table, name), sub in df.groupby(["table", "metric"], sort=False):
        strong = np.maximum(sub["lower_bound"], sub["energetic_bound"])
        raised = int((strong > sub["lower_bound"] * (1 + 1e-6) + 1e-9).sum())
        ff, best, fair = sub["cost_flowflex"], sub["best_schedule"], sub["cost_fair"]
        lines.append(
            f"| {table} | {LABELS[name]} | {_avg_worst(sub['ratio_flowflex'])} | "
            f"{raised}/{len(sub)} | {_avg_worst((ff + 1) / (strong + 1))} | "
            f"{_avg_worst((best + 1) / (strong + 1))} | {_avg_worst((ff + 1) / (best + 1))} | "
            f"{_avg_worst((fair + 1) / (strong + 1))} |")
    return head + "\n".join(lines)


def timing_markdown(df: pd.DataFrame) -> str:
    """Planning time per plan (FlowFlex only) by table, and in all."""
    head = "| plans | n | total s | min ms | median ms | max ms |\n|---|---|---|---|---|---|\n"
    lines = []
    for label, sub in [("minisum", df[df["table"] == "minisum"]),
                       ("minimax", df[df["table"] == "minimax"]), ("all", df)]:
        if sub.empty:
            continue
        t = sub["plan_seconds"].to_numpy()
        lines.append(f"| {label} | {t.size} | {t.sum():.1f} | {1000 * t.min():.0f} | "
                     f"{1000 * statistics.median(t):.0f} | {1000 * t.max():.0f} |")
    return head + "\n".join(lines)


def parse_config(items: list[str]) -> dict[str, Any]:
    """``name=value`` overrides of :class:`GeneratorConfig` (values as Python literals)."""
    names = {f.name for f in dataclasses.fields(GeneratorConfig)}
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        if name not in names:
            raise SystemExit(f"unknown GeneratorConfig field {name!r}")
        out[name] = ast.literal_eval(value)
    GeneratorConfig(**out)
    return out


def parse_rows(items: list[str] | None) -> list[Row]:
    """``table:metric`` selections (all 17 rows by default)."""
    if not items:
        return rows()
    out = []
    for item in items:
        table, _, name = item.partition(":")
        if table not in TABLES or name not in TABLES[table]:
            raise SystemExit(f"unknown row {item!r}: use e.g. minisum:tardiness")
        out.append((table, name))
    return [r for r in rows() if r in out]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=25, help="experiments per row")
    parser.add_argument("--seed", type=int, default=0, help="base seed")
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument("--independent", action="store_true",
                        help="draw separate experiments for every row")
    parser.add_argument("--set", dest="config", nargs="+", default=[], metavar="NAME=VALUE",
                        help="GeneratorConfig overrides, e.g. deadline_slack=1.0")
    parser.add_argument("--rows", nargs="+", metavar="TABLE:METRIC", help="rows to run")
    parser.add_argument("--diagnose", action="store_true",
                        help="add the stronger bound and the best schedule found")
    parser.add_argument("--mip", type=float, default=0.0, metavar="SECONDS",
                        help="--diagnose: also solve the minisum bound as a MIP, this long")
    parser.add_argument("--grid-cells", type=int, default=GridOptions().max_uniform_cells,
                        help="most cells of the relaxation's uniform grid (then geometric)")
    parser.add_argument("--time-unit", type=float, default=1.0,
                        help="print ratios with time-valued costs in this unit")
    parser.add_argument("--stretch-size", choices=STRETCH_SIZES, default="work",
                        help="the size dividing a flow's completion time in the stretch rows")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "reproduce-004")
    args = parser.parse_args()
    config = parse_config(args.config)
    selected = parse_rows(args.rows)
    start = time.perf_counter()
    options = {"config": config, "grid_cells": args.grid_cells, "diagnose": args.diagnose,
               "mip": args.mip, "stretch_size": args.stretch_size}
    df = run_all(tasks(args.experiments, args.seed, args.independent, selected, options),
                 args.workers)
    wall = time.perf_counter() - start
    args.out.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out / "ratios.csv", index=False)
    shared = "separate experiments per row" if args.independent else "the same in every row"
    print(f"{args.experiments} experiments per row (base seed {args.seed}, {shared}; "
          f"generator overrides {config or 'none'}; uniform grid up to {args.grid_cells} "
          f"cells; stretch size {args.stretch_size}); "
          "ratio (cost + 1) / (best lower bound + 1), average/worst"
          + (f", times in units of {args.time_unit:g}" if args.time_unit != 1 else ""))
    for table, title in (("minisum", "Table 1: minisum"), ("minimax", "Table 2: minimax")):
        if (df["table"] == table).any():
            print(f"\n### {title}\n")
            print(table_markdown(df, table, args.time_unit))
    if args.diagnose:
        print("\n### Bound or plan? (ratios (x + 1) / (y + 1), average/worst)\n")
        print(diagnose_markdown(df))
        below = (df["lower_bound"] <= df["best_schedule"] * (1 + 1e-6) + 1e-9).all()
        print(f"\n004's bound below the best schedule found in every experiment: {below}; "
              f"diagnosis {df['diagnose_seconds'].sum():.0f} s in all")
    print(f"\n### Planning time (FlowFlex, per plan; {args.workers} worker(s))\n")
    print(timing_markdown(df))
    print(f"\nWall time of the run: {wall:.1f} s")


if __name__ == "__main__":
    main()
