"""The FlowFlex offline planner (004 §2), a plan simulator, and the Fair and FIFO competitors.

**Stage 1** (:attr:`Flow.pseudo_jobs <geosim.flowflex.model.Flow.pseudo_jobs>`) turns every
flow into a chain of pseudo-jobs.

**Stage 2a, deadlines (Theorem 2.2, Figure 4).** :func:`greedy_schedule` takes the chains in
non-decreasing deadline order and runs each pseudo-job, from the moment its predecessor ends,
on ``min(P − σ(t), δ_k)`` slots until its work is done, ``σ`` being the slots already used.
If any schedule meets the deadlines, chain ``j`` ends by ``2 d_j``: ``C_j ≤ r_j + A_j + B_j``
with ``A_j ≤`` (work of the first ``j`` chains)``/P ≤ d_j`` the busy time and ``B_j ≤ cp_j ≤
d_j − r_j`` the rest. :func:`check_deadlines` reports whether the deadlines were met and
whether the completion times are within the factor. Corrections to Figure 4: the first
pseudo-job of a chain starts at the flow's release time (line 4 reads ``C(τ_0)``, undefined);
the chains are sorted by deadline first (the text renumbers them, the loop does not), ties by
a secondary key then by index; the last piece of a pseudo-job is fractional (time is
continuous); and a chain beyond ``factor · d_j`` is reported, not an abort.

**Stage 2b, minisum (Theorem 2.3).** Solve the time-indexed minimum-cost flow
(:mod:`geosim.flowflex.bounds`), derive deadlines ``d_j`` = right end of the cell where half
of ``V_j`` is reached, run the greedy. The squashed area of the first ``j`` chains is then at
most ``2 P d_j`` and ``cp_j ≤ d_j − r_j``, so ``C_j ≤ 3 d_j`` (factor 3, not Figure 4's 2).
As 004 suggests ("round the flow based on multiple values"), the fractions in
``PlannerOptions.alphas`` (default 1/2, 1/4, 3/4, 1) are all tried and the cheapest schedule
is kept; with fraction ``α`` the factor is ``1 + 1/α``. Equal deadlines are ordered by the
flow's mean cell in the relaxation.

**Stage 2b, minimax (Theorem 2.5).** For a bound ``M`` the deadlines are
``D_j(M) = sup{t : w_j(t) ≤ M}``. Bracket and bisection from the critical-path bound
``max_j w_j(e_j)`` (``e_j`` as in :mod:`geosim.flowflex.bounds`) find the least ``M`` at which
the greedy is not shown infeasible (``C_j ≤ 2 D_j`` for every ``j``, 004's 2-speed test; a
bound with some ``D_j < e_j`` fails outright). Every ``M`` that fails is below the optimum,
so this ``M`` is at most the optimum up to ``rel_tol``. Its schedule runs at unit speed,
where its cost may exceed ``M``: a second bracket and bisection, from that ``M`` up, looks
for the least ``M`` whose unit-speed greedy schedule costs at most ``M`` (this test is not
monotone in ``M``; bisection finds a passing ``M`` next to a failing one). The cheapest
schedule seen in either search is kept, so Corollary 2.6's factor 2 (for costs
``w · max(0, C − offset)`` with offset 0) holds too. ``D_j`` may be infinite (a flow whose
cost never exceeds ``M``); such chains go last. Equal deadlines are ordered by critical
path, longest first: under the makespan every flow has the same deadline, and the longest
chains are the ones that cannot wait. Costs with finitely many values (step costs) are
searched over their values exactly.

**Stage 3 (§2.3).** Every piece of a pseudo-job's schedule is shape-shifted into integer slot
counts of its member jobs with McNaughton's rule (:mod:`geosim.flowflex.mcnaughton`).

**Simulation.** :func:`simulate_plan` checks a slot assignment (caps, ``P``, precedence,
release times, work) and returns the completion times; :func:`fair_schedule` and
:func:`fifo_schedule` are the ready-list competitors of 004 §3, as exact event-driven
continuous schedules: every ready job (all predecessors done, flow released) shares the
slots, capped at ``δ_i``; Fair gives the ready jobs equal shares with water-filling under the
caps (rates may be fractional, as for Fair's fair shares), FIFO gives each ready job in turn
``min(δ_i, slots left)`` in order of flow release time, flow index, then the job's position
in its flow's topological order.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from geosim.flowflex.bounds import (
    FlowSolution,
    GridOptions,
    build_relaxation,
    cost_values,
    deadlines_admissible,
    earliest_completions,
    horizon,
    lower_bounds,
    smallest_passing,
    solve_relaxation,
)
from geosim.flowflex.costs import CostFunction, StepCost
from geosim.flowflex.mcnaughton import shape_shift, slot_usage
from geosim.flowflex.metrics import Metric
from geosim.flowflex.model import Instance, JobKey, Piece, PseudoJob, ScheduleResult, merge_pieces

#: Relative tolerance of the feasibility tests on completion times.
_TOL = 1e-9


class ChainItem(Protocol):
    """Anything with a work ``size`` and a slot ``cap`` (a pseudo-job, or a job)."""

    @property
    def size(self) -> float:
        """Work in slot-time units."""

    @property
    def cap(self) -> int:
        """Most slots at once."""


@dataclass(frozen=True)
class PlannerOptions:
    """Options of :func:`plan`.

    Args:
        alphas: Minisum: volume fractions at which the flow is rounded into deadlines
            (the first, 1/2, is 004's).
        grid: Minisum: the relaxation's time grid.
        volume_units: Minisum: integer units the total volume is scaled to.
        cost_precision: Minisum: largest rounding loss of the bound relative to the largest
            arc cost.
        rel_tol: Minimax: relative width at which a bisection stops.
        bracket_steps: Minimax: doublings of the bracketing gap.
        max_evaluations: Minimax: most greedy runs per search.
        unit_speed_search: Minimax: run the second (unit-speed) search.
    """

    alphas: tuple[float, ...] = (0.5, 0.25, 0.75, 1.0)
    grid: GridOptions = field(default_factory=GridOptions)
    volume_units: int = 100_000
    cost_precision: float = 1e-7
    rel_tol: float = 1e-3
    bracket_steps: int = 10
    max_evaluations: int = 40
    unit_speed_search: bool = True

    def __post_init__(self) -> None:
        if not self.alphas or any(not 0 < a <= 1 for a in self.alphas):
            raise ValueError("alphas must be a non-empty tuple of values in (0, 1]")
        if not self.rel_tol > 0 or self.max_evaluations < 1 or self.bracket_steps < 0:
            raise ValueError("bad minimax search options")


@dataclass(frozen=True, eq=False)
class GreedySchedule:
    """A schedule of chains from :func:`greedy_schedule`.

    Args:
        deadlines: The deadlines used.
        order: Chains in scheduling order.
        completion: Completion time of each chain.
        pieces: Per chain, ``(t_start, t_end, slots, item index)`` in time order.
    """

    deadlines: np.ndarray
    order: np.ndarray
    completion: np.ndarray
    pieces: list[list[tuple[float, float, float, int]]]


@dataclass(frozen=True)
class GreedyCheck:
    """The deadline report of Theorem 2.2.

    Args:
        factor: The guarantee checked (2 for deadlines, ``1 + 1/α`` for minisum deadlines).
        max_ratio: ``max_j C_j / d_j`` over finite deadlines (0 if none).
        all_met: Whether ``C_j ≤ d_j`` for every flow.
        within_factor: Whether ``C_j ≤ factor · d_j`` for every flow; when it fails, no
            schedule meets the deadlines.
    """

    factor: float
    max_ratio: float
    all_met: bool
    within_factor: bool


def check_deadlines(completion: np.ndarray, deadlines: np.ndarray,
                    factor: float = 2.0) -> GreedyCheck:
    """Compare completion times with deadlines (see :class:`GreedyCheck`)."""
    c = np.asarray(completion, dtype=float)
    d = np.asarray(deadlines, dtype=float)
    finite = np.isfinite(d)
    ratio = 0.0
    if finite.any():
        cf, df = c[finite], d[finite]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = float(np.max(np.where(df > 0, cf / df, np.where(cf > 0, np.inf, 1.0))))

    def within(f: float) -> bool:
        return bool(np.all(c <= f * d + _TOL * np.maximum(1.0, np.abs(c))))

    return GreedyCheck(factor=factor, max_ratio=ratio, all_met=within(1.0),
                       within_factor=within(factor))


class _Utilisation:
    """``σ(t)``: slots in use, a step function on ``[0, ∞)`` that is 0 after the last step."""

    def __init__(self, slots: int):
        self.slots = slots
        self.times = np.zeros(1)
        self.levels = np.zeros(1)
        self._refresh()

    def _refresh(self) -> None:
        n = self.levels.size
        idx = np.where(self.levels < self.slots, np.arange(n), n)
        nxt = np.minimum.accumulate(idx[::-1])[::-1]
        self._t = self.times.tolist()
        self._l = self.levels.tolist()
        self._next = nxt.tolist()

    def fill(self, start: float,
             chain: Sequence[ChainItem]) -> list[tuple[float, float, float, int]]:
        """Figure 4 lines 3–8 for one chain: each item greedily, from ``start``."""
        times, levels, nxt = self._t, self._l, self._next
        n = len(times)
        p = self.slots
        i = bisect.bisect_right(times, start) - 1
        t = start
        out: list[tuple[float, float, float, int]] = []
        for k, item in enumerate(chain):
            rem = float(item.size)
            cap = item.cap
            eps = 1e-12 * rem
            while True:
                if levels[i] >= p:
                    i = nxt[i]
                    t = max(t, times[i])
                    continue
                end = times[i + 1] if i + 1 < n else math.inf
                rate = float(min(p - levels[i], cap))
                avail = rate * (end - t)
                if avail >= rem - eps:
                    t1 = min(t + rem / rate, end)
                    out.append((t, t1, rate, k))
                    t = t1
                    if i + 1 < n and t >= times[i + 1]:
                        i += 1
                    break
                out.append((t, end, rate, k))
                rem -= avail
                t = end
                i += 1
        return out

    def add(self, pieces: list[tuple[float, float, float, int]]) -> None:
        """``σ ← σ + τ`` for one chain's pieces (sorted and disjoint)."""
        s0 = np.array([p[0] for p in pieces])
        s1 = np.array([p[1] for p in pieces])
        rate = np.array([p[2] for p in pieces])
        new_t = np.union1d(self.times, np.concatenate([s0, s1]))
        old = self.levels[np.searchsorted(self.times, new_t, side="right") - 1]
        idx = np.maximum(np.searchsorted(s0, new_t, side="right") - 1, 0)
        inside = (new_t >= s0[idx]) & (new_t < s1[idx])
        level = old + np.where(inside, rate[idx], 0.0)
        keep = np.concatenate([[True], level[1:] != level[:-1]])
        self.times, self.levels = new_t[keep], level[keep]
        self._refresh()


def greedy_schedule(chains: Sequence[Sequence[ChainItem]], releases: Sequence[float],
                    deadlines: Sequence[float], slots: int,
                    tiebreak: Sequence[float] | None = None) -> GreedySchedule:
    """The greedy algorithm of Theorem 2.2 (Figure 4) for chains with deadlines.

    Args:
        chains: Each chain's items (pseudo-jobs, or jobs) in chain order.
        releases: Each chain's release time.
        deadlines: Each chain's deadline (may be ``±inf``).
        slots: ``P``.
        tiebreak: Secondary sort key among equal deadlines (then the chain index).

    Returns:
        The schedule; chain ``j`` ends by ``2 d_j`` whenever some schedule meets all deadlines.
    """
    m = len(chains)
    d = np.asarray(deadlines, dtype=float)
    r = np.asarray(releases, dtype=float)
    key2 = np.zeros(m) if tiebreak is None else np.asarray(tiebreak, dtype=float)
    order = np.lexsort((np.arange(m), key2, d))
    util = _Utilisation(slots)
    completion = np.zeros(m)
    pieces: list[list[tuple[float, float, float, int]]] = [[] for _ in range(m)]
    for j in order:
        got = util.fill(float(r[j]), chains[j])
        util.add(got)
        pieces[j] = got
        completion[j] = got[-1][1]
    return GreedySchedule(deadlines=d, order=order, completion=completion, pieces=pieces)


@dataclass(frozen=True, eq=False)
class Plan:
    """A FlowFlex plan.

    Args:
        metric: The metric planned for (None for a plain deadline plan).
        job_slots: Per job, integer ``(t_start, t_end, slots)`` pieces: the plan to execute.
        job_rates: Per job, the malleable rate pieces before McNaughton's rule.
        job_completion: Each job's completion time.
        flow_completion: Each flow's completion time.
        cost: The metric's value (a deadline plan: the number of flows late).
        lower_bound: The best lower bound on the optimum.
        lower_bounds: Every lower bound, by name.
        deadlines: The deadlines of the final greedy run.
        check: The deadline report of that run.
        details: How the plan was found (chosen fraction or bound, grid, evaluations).
    """

    metric: Metric | None
    job_slots: dict[JobKey, list[tuple[float, float, int]]]
    job_rates: dict[JobKey, list[Piece]]
    job_completion: dict[JobKey, float]
    flow_completion: np.ndarray
    cost: float
    lower_bound: float
    lower_bounds: dict[str, float]
    deadlines: np.ndarray
    check: GreedyCheck
    details: dict[str, Any]

    @property
    def ratio(self) -> float:
        """``(cost + 1) / (lower bound + 1)``, 004 §3's ratio (fn. 4)."""
        return (self.cost + 1.0) / (self.lower_bound + 1.0)

    @property
    def makespan(self) -> float:
        """When the last flow completes."""
        return float(self.flow_completion.max())

    def timeline(self) -> list[tuple[float, float, dict[JobKey, int]]]:
        """The plan as consecutive intervals with every running job's slots."""
        times = sorted({t for v in self.job_slots.values() for p in v for t in p[:2]})
        out: list[tuple[float, float, dict[JobKey, int]]] = [(a, b, {}) for a, b in
                                                             zip(times[:-1], times[1:],
                                                                 strict=True)]
        for key, plist in self.job_slots.items():
            for t0, t1, s in plist:
                lo = bisect.bisect_left(times, t0)
                hi = bisect.bisect_left(times, t1)
                for k in range(lo, hi):
                    out[k][2][key] = s
        return out


def _shape(instance: Instance, greedy: GreedySchedule,
           ) -> tuple[dict[JobKey, list[Piece]], dict[JobKey, list[tuple[float, float, int]]]]:
    """Stage 3: job rate pieces and integer slot pieces from a pseudo-job schedule."""
    rates: dict[JobKey, list[Piece]] = {k: [] for k in instance.job_keys()}
    slots: dict[JobKey, list[tuple[float, float, int]]] = {k: [] for k in rates}
    for j, flow in enumerate(instance.flows):
        chain = flow.pseudo_jobs
        for t0, t1, rate, k in greedy.pieces[j]:
            pj: PseudoJob = chain[k]
            for i, c in pj.members:
                rates[(j, i)].append((t0, t1, c * rate / pj.cap))
            for i, plist in shape_shift(pj, t0, t1, rate).items():
                slots[(j, i)].extend(plist)
    return ({k: merge_pieces(v) for k, v in rates.items()},
            {k: [(a, b, int(s)) for a, b, s in merge_pieces(v)] for k, v in slots.items()})


def _assemble(instance: Instance, greedy: GreedySchedule, metric: Metric | None,
              costs: list[CostFunction], bounds: dict[str, float], check: GreedyCheck,
              details: dict[str, Any]) -> Plan:
    rates, slots = _shape(instance, greedy)
    sim = simulate_plan(instance, slots, name="flowflex")
    values = np.array([c.cost(t) for c, t in zip(costs, sim.flow_completion, strict=True)])
    cost = float(values.sum()) if metric is None or not metric.minimax else float(values.max())
    return Plan(metric=metric, job_slots=slots, job_rates=rates,
                job_completion=sim.job_completion, flow_completion=sim.flow_completion,
                cost=cost, lower_bound=max(bounds.values()), lower_bounds=bounds,
                deadlines=greedy.deadlines, check=check, details=details)


def _chains(instance: Instance) -> list[tuple[PseudoJob, ...]]:
    return [f.pseudo_jobs for f in instance.flows]


def plan_deadlines(instance: Instance, deadlines: Sequence[float]) -> Plan:
    """Theorem 2.2: the greedy plan for strict deadlines, with its factor-2 report.

    Equal deadlines are ordered by critical path, longest first. The plan's cost is the
    number of flows that miss their deadline; its lower bound is 1
    when :func:`~geosim.flowflex.bounds.deadlines_admissible` shows that some flow must be
    late, else 0.
    """
    d = np.asarray(deadlines, dtype=float)
    if d.shape != (instance.n_flows,):
        raise ValueError("one deadline per flow is needed")
    greedy = greedy_schedule(_chains(instance), instance.releases, d, instance.slots,
                             -instance.critical_paths)
    costs: list[CostFunction] = [StepCost([x], [1.0]) if np.isfinite(x) else StepCost([], [])
                                 for x in d]
    bound = 0.0 if deadlines_admissible(instance, d) else 1.0
    check = check_deadlines(greedy.completion, d, 2.0)
    return _assemble(instance, greedy, None, costs, {"deadlines": bound}, check, {})


def _minisum(instance: Instance, costs: list[CostFunction], options: PlannerOptions,
             ) -> tuple[GreedySchedule, GreedyCheck, dict[str, Any], FlowSolution]:
    relax = build_relaxation(instance, costs, options.grid)
    sol = solve_relaxation(relax, volume_units=options.volume_units,
                           cost_precision=options.cost_precision)
    chains = _chains(instance)
    mean_end = sol.mean_cell_end()
    best: tuple[float, float, GreedySchedule] | None = None
    tried: dict[float, float] = {}
    for alpha in options.alphas:
        d = sol.deadlines(alpha)
        g = greedy_schedule(chains, instance.releases, d, instance.slots, mean_end)
        value = float(sum(c.cost(t) for c, t in zip(costs, g.completion, strict=True)))
        tried[alpha] = value
        if best is None or value < best[0]:
            best = (value, alpha, g)
    assert best is not None
    _, alpha, g = best
    check = check_deadlines(g.completion, g.deadlines, 1.0 + 1.0 / alpha)
    details = {"alpha": alpha, "tried": tried, "grid": relax.kind, "cells": relax.n_cells,
               "relaxation": sol.value}
    return g, check, details, sol


def _minimax(instance: Instance, costs: list[CostFunction], options: PlannerOptions,
             ) -> tuple[GreedySchedule, GreedyCheck, dict[str, Any]]:
    chains = _chains(instance)
    e = earliest_completions(instance)
    cp = instance.critical_paths
    big_h = horizon(instance) * (1 + 1e-9)
    m0 = max(c.cost(x) for c, x in zip(costs, e, strict=True))
    m_h = max(m0, max(c.cost(big_h) for c in costs))
    values = cost_values(costs)
    runs: dict[float, tuple[GreedySchedule, float] | None] = {}
    best: list[Any] = [None]

    def run(bound: float) -> tuple[GreedySchedule, float] | None:
        if bound in runs:
            return runs[bound]
        d = np.array([c.deadline(bound) for c in costs])
        out = None
        if not np.any(d < e * (1 - 1e-12)):
            g = greedy_schedule(chains, instance.releases, d, instance.slots, -cp)
            value = max(c.cost(t) for c, t in zip(costs, g.completion, strict=True))
            out = (g, value)
            if best[0] is None or value < best[0][1]:
                best[0] = (bound, value, g)
        runs[bound] = out
        return out

    def two_speed(bound: float) -> bool:
        out = run(bound)
        return out is not None and check_deadlines(out[0].completion, out[0].deadlines,
                                                   2.0).within_factor

    def unit_speed(bound: float) -> bool:
        out = run(bound)
        return out is not None and out[1] <= bound + _TOL * max(1.0, abs(bound))

    kw = {"rel_tol": options.rel_tol, "bracket_steps": options.bracket_steps,
          "budget": options.max_evaluations}
    _, m_two = smallest_passing(two_speed, m0, m_h, values, **kw)
    m_unit = m_two
    if options.unit_speed_search:
        _, m_unit = smallest_passing(unit_speed, m_two, m_h, values, **kw)
    bound, value, g = best[0]
    check = check_deadlines(g.completion, g.deadlines, 2.0)
    details = {"bound": bound, "two_speed_bound": m_two, "unit_speed_bound": m_unit,
               "critical_path_bound": m0, "evaluations": len(runs)}
    return g, check, details


def plan(instance: Instance, metric: Metric, options: PlannerOptions | None = None) -> Plan:
    """Plan an instance for a metric with FlowFlex (004 §2).

    Args:
        instance: The flows and slots.
        metric: The metric (minisum or minimax).
        options: Planner options.

    Returns:
        The plan: integer slot pieces per job, completion times, cost and lower bound.
    """
    options = options or PlannerOptions()
    costs = metric.costs(instance)
    if metric.minimax:
        greedy, check, details = _minimax(instance, costs, options)
        value = metric.evaluate(instance, greedy.completion)
        bounds = lower_bounds(instance, metric, upper=value)
    else:
        greedy, check, details, sol = _minisum(instance, costs, options)
        bounds = lower_bounds(instance, metric, solution=sol)
    return _assemble(instance, greedy, metric, costs, bounds, check, details)


def simulate_plan(instance: Instance, pieces: Mapping[JobKey, Sequence[Piece]], *,
                  rel_tol: float = 1e-6, name: str = "") -> ScheduleResult:
    """Execute a slot assignment and return the completion times.

    A job completes at the end of its last piece (004 §1: ``C(τ_i) = sup{t : τ_i(t) > 0}``).

    Args:
        instance: The instance.
        pieces: Per job, ``(t_start, t_end, slots)`` pieces (integer or fractional slots).
        rel_tol: Relative tolerance on work and times.
        name: Label of the result.

    Returns:
        The job and flow completion times.

    Raises:
        ValueError: If a job is missing or gets the wrong work, a piece exceeds the job's cap
            or overlaps another, the total exceeds ``P``, or a job starts before its flow's
            release or a predecessor's completion.
    """
    ends = [p[1] for v in pieces.values() for p in v]
    atol = rel_tol * max(1.0, max(ends, default=1.0))
    start: dict[JobKey, float] = {}
    done: dict[JobKey, float] = {}
    clean: dict[JobKey, list[Piece]] = {}
    for key in instance.job_keys():
        job = instance.job(key)
        plist = sorted(p for p in pieces.get(key, ()) if p[1] > p[0] and p[2] != 0)
        if not plist:
            raise ValueError(f"job {key} is never run")
        prev = -math.inf
        for t0, t1, s in plist:
            if t0 < prev - atol:
                raise ValueError(f"job {key} has overlapping pieces")
            if s < 0 or s > job.cap * (1 + rel_tol):
                raise ValueError(f"job {key} runs on {s} slots, its cap is {job.cap}")
            prev = t1
        work = sum(s * (t1 - t0) for t0, t1, s in plist)
        if abs(work - job.size) > rel_tol * job.size:
            raise ValueError(f"job {key} gets work {work}, its size is {job.size}")
        start[key], done[key] = plist[0][0], plist[-1][1]
        clean[key] = merge_pieces(plist)
    for j, flow in enumerate(instance.flows):
        for i in range(flow.n_jobs):
            if start[(j, i)] < flow.release - atol:
                raise ValueError(f"job {(j, i)} starts before its flow's release")
        for a, b in flow.edges:
            if start[(j, b)] < done[(j, a)] - atol:
                raise ValueError(f"job {(j, b)} starts before its predecessor {(j, a)} ends")
    # Intervals shorter than float resolution (pieces meeting at rounded times) are ignored.
    usage = [u for a, b, u in slot_usage(clean) if b - a > 1e-6 * atol]
    if usage and max(usage) > instance.slots * (1 + rel_tol):
        raise ValueError(f"more than {instance.slots} slots in use")
    flow_done = np.array([max(done[(j, i)] for i in range(f.n_jobs))
                          for j, f in enumerate(instance.flows)])
    return ScheduleResult(job_completion=done, flow_completion=flow_done, pieces=clean,
                          name=name)


def _water_fill(caps: np.ndarray, slots: float) -> np.ndarray:
    """Equal shares of ``slots`` among jobs, none above its cap, the surplus redistributed."""
    if caps.sum() <= slots:
        return caps.astype(float)
    out = np.zeros(caps.size)
    order = np.argsort(caps, kind="stable")
    left = float(slots)
    for n_left, pos in zip(range(caps.size, 0, -1), range(caps.size), strict=True):
        i = order[pos]
        share = left / n_left
        if caps[i] <= share:
            out[i] = caps[i]
            left -= caps[i]
        else:
            out[order[pos:]] = share
            break
    return out


def _fifo_fill(caps: np.ndarray, priority: np.ndarray, slots: float) -> np.ndarray:
    """Each job in priority order takes ``min(cap, slots left)``."""
    out = np.zeros(caps.size)
    left = float(slots)
    for i in np.argsort(priority, kind="stable"):
        take = min(float(caps[i]), left)
        out[i] = take
        left -= take
        if left <= 0:
            break
    return out


def _ready_list(instance: Instance, policy: str) -> ScheduleResult:
    keys = instance.job_keys()
    index = {k: n for n, k in enumerate(keys)}
    size = np.array([instance.job(k).size for k in keys])
    caps = np.array([instance.job(k).cap for k in keys], dtype=float)
    rem = size.copy()
    n = len(keys)
    indeg = np.zeros(n, dtype=int)
    succ: list[list[int]] = [[] for _ in range(n)]
    rank = np.zeros(n)
    for j, flow in enumerate(instance.flows):
        for a, b in set(flow.edges):
            succ[index[(j, a)]].append(index[(j, b)])
            indeg[index[(j, b)]] += 1
        for pos, i in enumerate(flow.topological_order):
            rank[index[(j, i)]] = pos
    flow_of = np.array([k[0] for k in keys])
    rel = instance.releases
    # FIFO priority: flow release, flow index, topological position.
    prio = np.empty(n)
    prio[np.lexsort((rank, flow_of, rel[flow_of]))] = np.arange(n)
    release_times = np.unique(rel)
    released = np.zeros(instance.n_flows, dtype=bool)
    ready: list[int] = []
    pieces: dict[JobKey, list[Piece]] = {k: [] for k in keys}
    done: dict[JobKey, float] = {}
    t = float(release_times[0])
    nxt_rel = 0

    def release_upto(now: float) -> None:
        nonlocal nxt_rel
        while nxt_rel < release_times.size and release_times[nxt_rel] <= now:
            for j in np.flatnonzero(rel == release_times[nxt_rel]):
                released[j] = True
                ready.extend(x for x in range(n) if flow_of[x] == j and indeg[x] == 0)
            nxt_rel += 1

    release_upto(t)
    while len(done) < n:
        if not ready:
            t = float(release_times[nxt_rel])
            release_upto(t)
            continue
        idx = np.array(ready)
        if policy == "fair":
            rates = _water_fill(caps[idx], instance.slots)
        else:
            rates = _fifo_fill(caps[idx], prio[idx], instance.slots)
        run = rates > 0
        finish = np.full(idx.size, math.inf)
        finish[run] = rem[idx[run]] / rates[run]
        dt = float(finish.min())
        next_release = release_times[nxt_rel] if nxt_rel < release_times.size else math.inf
        dt = min(dt, float(next_release) - t)
        for x, rho in zip(idx[run], rates[run], strict=True):
            pieces[keys[x]].append((t, t + dt, float(rho)))
        rem[idx] -= rates * dt
        t += dt
        finished = idx[(finish <= dt * (1 + 1e-12)) | (rem[idx] <= 1e-12 * size[idx])]
        for x in finished:
            rem[x] = 0.0
            done[keys[x]] = t
            ready.remove(int(x))
            for y in succ[x]:
                indeg[y] -= 1
                if indeg[y] == 0 and released[flow_of[y]]:
                    ready.append(y)
        release_upto(t)
    flow_done = np.array([max(done[(j, i)] for i in range(f.n_jobs))
                          for j, f in enumerate(instance.flows)])
    return ScheduleResult(job_completion=done, flow_completion=flow_done,
                          pieces={k: merge_pieces(v) for k, v in pieces.items()}, name=policy)


def fair_schedule(instance: Instance) -> ScheduleResult:
    """004 §3's Fair: ready jobs share the slots equally, water-filled under their caps."""
    return _ready_list(instance, "fair")


def fifo_schedule(instance: Instance) -> ScheduleResult:
    """004 §3's FIFO: ready jobs, oldest flow first, each take up to their cap."""
    return _ready_list(instance, "fifo")


@dataclass(frozen=True, eq=False)
class Comparison:
    """FlowFlex, Fair and FIFO on one instance and metric (004 §3, Tables 1–2).

    Args:
        lower_bound: The best lower bound.
        costs: Cost of each scheduler (``flowflex``, ``fair``, ``fifo``).
        ratios: ``(cost + 1) / (lower bound + 1)`` of each scheduler.
        plan: The FlowFlex plan.
    """

    lower_bound: float
    costs: dict[str, float]
    ratios: dict[str, float]
    plan: Plan


def compare(instance: Instance, metric: Metric,
            options: PlannerOptions | None = None) -> Comparison:
    """Plan with FlowFlex, run Fair and FIFO, and compute 004 §3's ratios."""
    p = plan(instance, metric, options)
    costs = {"flowflex": p.cost,
             "fair": metric.evaluate(instance, fair_schedule(instance).flow_completion),
             "fifo": metric.evaluate(instance, fifo_schedule(instance).flow_completion)}
    lb = p.lower_bound
    return Comparison(lower_bound=lb, costs=costs,
                      ratios={k: (v + 1.0) / (lb + 1.0) for k, v in costs.items()}, plan=p)
