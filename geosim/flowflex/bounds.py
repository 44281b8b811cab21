"""The time-indexed minimum-cost-flow relaxation and the lower bounds of 004 §2–§3.

**Per-flow bounds (004 §1).** Flow ``j`` cannot complete before ``r_j + cp_j`` (critical path)
nor before ``r_j + V_j / P`` (its squashed area); ``e_j = r_j + max(cp_j, V_j / P)`` is 004's
``Q_j`` shifted by the release time. All the work is done after ``min_j r_j``, so the last flow
completes at ``T ≥ min_j r_j + Σ_j V_j / P``. :func:`critical_path_bound` and
:func:`squashed_area_bound` turn these times into cost bounds.

**Minimum-cost flow (004 Theorem 2.3, Figure 5, appendix).** Every flow is a volume ``V_j``
that must be processed, at most ``P`` per unit of time, before the flow completes; the flow
network has a node ``a_j`` per flow fed with ``V_j``, a node ``b_k`` per time cell
``(t_{k-1}, t_k]`` draining ``P · |cell|`` to the sink, arcs ``a_j → b_k`` ("flow ``j``
completes in cell ``k``") for the cells that end at or after ``e_j``, and arcs
``b_{k+1} → b_k`` that let the volume of a flow completing in cell ``k`` use earlier capacity.
Corrections to the printed construction, each needed for the flow to be a relaxation of every
schedule, i.e. for its optimum to be a valid lower bound:

- The arc cost of completing in a cell is the *least* cost over the cell, not the cost at its
  right end (``w_j(t)`` for ``[t-1, t)`` in §2.2.2, ``w_j((1+ε)^{ℓ-1})`` in the appendix):
  ``w_j(e_j)`` if ``e_j`` lies inside the cell, else ``lim_{s↓t_{k-1}} w_j(s)`` at the cell's left
  end. With the right end, a schedule completing inside a cell would be charged more than its
  cost, and (3) fails for continuous costs such as ``w·C``.
- The appendix's geometric cells start at ``(1+ε)^0 = 1`` and leave the capacity of ``[0, 1)``
  out of the network; a cell ``(0, q]`` (``q = min_j e_j``, where the appendix scales time so
  that ``min_j Q_j = 1``) is added. The appendix's ``E_4`` ranges over ``ℓ ∈ [N − 1]`` (printed
  ``[H − 1]``), and there are ``⌈log_{1+ε}(H/q)⌉`` cells.
- A last cell ``(t_N, ∞)`` of unlimited capacity makes the relaxation valid whatever the
  horizon (a greedy schedule in any flow order ends by ``H = max_j (r_j + cp_j) + Σ_j V_j / P``,
  the last grid point, so it is never needed for capacity).

The grid is uniform, cells of ``time_unit`` (004's integer time), when ``⌈H / time_unit⌉ ≤
max_uniform_cells`` (256 by default: networkx solves 20 flows × 256 cells in about 0.1 s);
otherwise it is the appendix's geometric grid with ``ε = 1/m`` (coarsened so that there are at
most ``max_cells`` cells). Either way every ``e_j`` and every breakpoint of a cost function
becomes a grid point, so step costs are exact on the grid.

networkx's network simplex needs integer data, so volumes are scaled by ``F`` (about
``volume_units`` units in all, at least 10⁴ per flow) and arc costs by ``G``: supplies are
rounded down, cell capacities up, and per-unit costs down. The integer network is then a
relaxation of the scaled real one, so its optimum divided by ``G`` is still a valid lower
bound; the volume ``V_j − ⌊V_j F⌋ / F`` dropped by rounding is added back at flow ``j``'s
cheapest arc cost, which any completion of it costs at least. With
``G = U / (cost_precision · c_max)`` (``U`` the total units) the cost rounding loses at most
``cost_precision · c_max``.

**Minimax (004 §3).** A schedule of cost at most ``M`` completes every flow by
``D_j(M) = sup{t : w_j(t) ≤ M}``, so it needs ``e_j ≤ D_j(M)`` and, for every release time
``a`` and deadline ``b``, ``Σ {V_j : r_j ≥ a, D_j(M) ≤ b} ≤ P (b − a)`` (the partial sums of the
squashed area in deadline order; with all releases 0 these are exactly 004's conditions).
They are monotone in ``M``; :func:`bisection_bound` bisects between the critical-path bound
``max_j w_j(e_j)`` and a known schedule's cost for the least ``M`` that passes (exactly, over
the finite set of cost values, for step costs).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import networkx as nx
import numpy as np

from geosim.flowflex.costs import CostFunction
from geosim.flowflex.metrics import Metric
from geosim.flowflex.model import Instance

#: Relative slack when testing necessary conditions on floating-point times.
_SLACK = 1e-9


@dataclass(frozen=True)
class GridOptions:
    """The time grid of the minimum-cost-flow relaxation.

    Args:
        time_unit: Cell width of the uniform grid (004's unit of time).
        max_uniform_cells: The uniform grid is used when it has at most this many cells.
        max_cells: Most cells of the geometric grid (``ε`` is raised to stay within it).
        epsilon: Ratio step of the geometric grid; None for the appendix's ``1/m``.
    """

    time_unit: float = 1.0
    max_uniform_cells: int = 256
    max_cells: int = 400
    epsilon: float | None = None

    def __post_init__(self) -> None:
        if not self.time_unit > 0:
            raise ValueError("time_unit must be > 0")
        if self.max_uniform_cells < 1 or self.max_cells < 1:
            raise ValueError("cell limits must be >= 1")
        if self.epsilon is not None and not self.epsilon > 0:
            raise ValueError("epsilon must be > 0")


def earliest_completions(instance: Instance) -> np.ndarray:
    """``e_j = r_j + max(cp_j, V_j / P)``: no flow can complete earlier."""
    return instance.releases + np.maximum(instance.critical_paths,
                                          instance.volumes / instance.slots)


def horizon(instance: Instance) -> float:
    """``H = max_j (r_j + cp_j) + Σ_j V_j / P``: the greedy, in any order, ends by ``H``."""
    return float(np.max(instance.releases + instance.critical_paths)
                 + instance.volumes.sum() / instance.slots)


def _costs_at(costs: list[CostFunction], times: np.ndarray) -> np.ndarray:
    """``w_j(times[j])`` for every flow."""
    return np.array([c.cost(t) for c, t in zip(costs, times, strict=True)], dtype=float)


def time_grid(instance: Instance, costs: list[CostFunction],
              options: GridOptions | None = None) -> tuple[np.ndarray, str]:
    """The grid points ``0 = t_0 < t_1 < … < t_N`` (``t_N ≥ H``) and the grid's kind."""
    opt = options or GridOptions()
    big_h = horizon(instance)
    e = earliest_completions(instance)
    n_uniform = math.ceil(big_h / opt.time_unit - 1e-12)
    if n_uniform <= opt.max_uniform_cells:
        base = opt.time_unit * np.arange(1, n_uniform + 1)
        kind = "uniform"
    else:
        q = float(e.min())
        eps = opt.epsilon if opt.epsilon is not None else 1.0 / instance.n_flows
        n = math.ceil(math.log(big_h / q) / math.log1p(eps) - 1e-12)
        if n > opt.max_cells:
            n = opt.max_cells
            eps = (big_h / q) ** (1.0 / n) - 1.0
        base = q * (1.0 + eps) ** np.arange(n + 1)
        kind = "geometric"
    base = np.append(base, big_h)
    t_end = float(base.max())
    extra = [b for c in costs for b in c.breakpoints() if 0 < b < t_end]
    points = np.unique(np.concatenate([base, e, extra]))
    points = points[points > 0]
    keep = np.concatenate([[True], np.diff(points) > 1e-12 * t_end])
    return np.concatenate([[0.0], points[keep]]), kind


@dataclass(frozen=True, eq=False)
class Relaxation:
    """The time-indexed relaxation: flows as volumes completing in time cells.

    Cell ``k`` (0-based) is ``(times[k], times[k+1]]`` for ``k < N`` and ``(times[N], ∞)`` for
    ``k = N``.

    Args:
        times: Grid points ``t_0 = 0 < … < t_N``.
        volumes: ``V_j``.
        capacity: ``P · |cell|`` of the ``N`` finite cells.
        costs: ``m × (N+1)``: the least cost of flow ``j`` completing in cell ``k`` (inf where
            it cannot).
        kind: ``uniform`` or ``geometric``.
        slots: ``P``.
    """

    times: np.ndarray
    volumes: np.ndarray
    capacity: np.ndarray
    costs: np.ndarray
    kind: str
    slots: int

    @property
    def n_cells(self) -> int:
        """``N``, the number of finite cells."""
        return self.times.size - 1

    @property
    def allowed(self) -> np.ndarray:
        """``m × (N+1)``: whether flow ``j`` may complete in cell ``k``."""
        return np.isfinite(self.costs)

    @property
    def right_ends(self) -> np.ndarray:
        """Right end of every cell (inf for the last)."""
        return np.append(self.times[1:], math.inf)


def build_relaxation(instance: Instance, costs: list[CostFunction],
                     options: GridOptions | None = None) -> Relaxation:
    """Build the minimum-cost-flow relaxation of 004 Theorem 2.3 on :func:`time_grid`."""
    times, kind = time_grid(instance, costs, options)
    e = earliest_completions(instance)
    left = times
    right = np.append(times[1:], math.inf)
    m = instance.n_flows
    table = np.full((m, times.size), math.inf)
    for j, c in enumerate(costs):
        ok = right >= e[j] * (1 - 1e-12)
        inside = left < e[j]
        after = np.asarray(c.cost_after(left), dtype=float)
        table[j, ok] = np.where(inside, c.cost(e[j]), after)[ok]
    return Relaxation(times=times, volumes=instance.volumes, capacity=instance.slots
                      * np.diff(times), costs=table, kind=kind, slots=instance.slots)


@dataclass(frozen=True, eq=False)
class FlowSolution:
    """An optimal integer flow of the scaled relaxation.

    Args:
        relaxation: The relaxation solved.
        units: ``m × (N+1)`` integer flow of each flow into each cell.
        supplies: Each flow's integer supply ``⌊V_j F⌋``.
        value: A valid lower bound on the relaxation's optimum (hence on the optimum cost).
        volume_scale: ``F``, units per unit of work.
        cost_scale: ``G``, integer cost units per unit of cost.
    """

    relaxation: Relaxation
    units: np.ndarray
    supplies: np.ndarray
    value: float
    volume_scale: float
    cost_scale: float

    def deadlines(self, fraction: float = 0.5) -> np.ndarray:
        """``d_j``: right end of the cell where ``fraction`` of flow ``j``'s volume is reached.

        ``fraction = 1/2`` is 004's half-volume deadline; a flow that reaches it only in the
        last (unbounded) cell gets an infinite deadline.
        """
        if not 0 < fraction <= 1:
            raise ValueError("fraction must be in (0, 1]")
        cum = np.cumsum(self.units, axis=1)
        reached = cum >= fraction * self.supplies[:, None] - 1e-9
        k = np.argmax(reached, axis=1)
        return self.relaxation.right_ends[k]

    def mean_cell_end(self) -> np.ndarray:
        """Volume-weighted mean right end of the cells each flow's volume is assigned to."""
        ends = np.minimum(self.relaxation.right_ends, self.relaxation.times[-1])
        return (self.units * ends).sum(axis=1) / np.maximum(self.supplies, 1)


def solve_relaxation(relaxation: Relaxation, *, volume_units: int = 100_000,
                     cost_precision: float = 1e-7) -> FlowSolution:
    """Solve the relaxation as an integer minimum-cost flow with networkx.

    Args:
        relaxation: From :func:`build_relaxation`.
        volume_units: About how many integer units the total volume is scaled to.
        cost_precision: Largest rounding loss of the bound, relative to the largest arc cost.

    Returns:
        The integer flow and its lower bound (see the module docstring for the scaling).
    """
    vol = relaxation.volumes
    m, cells = relaxation.costs.shape
    scale_v = max(volume_units / vol.sum(), 10_000.0 / vol.min())
    supplies = np.floor(vol * scale_v).astype(np.int64)
    caps = np.ceil(relaxation.capacity * scale_v).astype(np.int64)
    allowed = relaxation.allowed
    c_max = float(relaxation.costs[allowed].max()) if allowed.any() else 0.0
    total = int(supplies.sum())
    scale_c = total / (cost_precision * c_max) if c_max > 0 else 1.0
    per_unit = np.where(allowed, relaxation.costs, 0.0) * scale_c / (vol * scale_v)[:, None]
    weights = np.floor(per_unit).astype(np.int64)

    g = nx.DiGraph()
    g.add_node("r", demand=-total)
    g.add_node("s", demand=total)
    for j in range(m):
        g.add_edge("r", ("a", j), capacity=int(supplies[j]), weight=0)
        for k in np.flatnonzero(allowed[j]):
            g.add_edge(("a", j), ("b", int(k)), weight=int(weights[j, k]))
    for k in range(cells):
        if k < cells - 1:
            g.add_edge(("b", k), "s", capacity=int(caps[k]), weight=0)
        else:
            g.add_edge(("b", k), "s", weight=0)
        if k > 0:
            g.add_edge(("b", k), ("b", k - 1), weight=0)
    flow_cost, flow = nx.network_simplex(g)
    units = np.zeros((m, cells), dtype=np.int64)
    for j in range(m):
        for (_, k), x in flow[("a", j)].items():
            units[j, k] = x
    # The volume lost to rounding supplies down costs at least the flow's cheapest arc.
    cheapest = np.where(allowed, relaxation.costs, np.inf).min(axis=1) / vol
    lost = np.maximum(vol - supplies / scale_v, 0.0)
    value = flow_cost / scale_c + float((lost * cheapest).sum())
    return FlowSolution(relaxation=relaxation, units=units, supplies=supplies,
                        value=value, volume_scale=scale_v, cost_scale=scale_c)


def critical_path_bound(instance: Instance, metric: Metric) -> float:
    """The metric at the flows' critical-path completion times ``r_j + cp_j``."""
    costs = metric.costs(instance)
    return metric.aggregate(_costs_at(costs, instance.releases + instance.critical_paths))


def squashed_area_bound(instance: Instance, metric: Metric) -> float:
    """The metric at the squashed-area completion times.

    Each flow completes by ``a_j = r_j + V_j / P`` at the earliest and the last one at
    ``T ≥ min_j r_j + Σ V / P``: minisum adds ``min_j [w_j(max(T, a_j)) − w_j(a_j)]`` to
    ``Σ w_j(a_j)``; minimax takes ``max(max_j w_j(a_j), min_j w_j(max(T, a_j)))``.
    """
    costs = metric.costs(instance)
    a = instance.releases + instance.volumes / instance.slots
    last = float(instance.releases.min() + instance.volumes.sum() / instance.slots)
    own = _costs_at(costs, a)
    late = _costs_at(costs, np.maximum(a, last))
    if metric.minimax:
        return float(max(own.max(), late.min()))
    return float(own.sum() + max(0.0, (late - own).min()))


def deadlines_admissible(instance: Instance, deadlines: np.ndarray) -> bool:
    """Necessary conditions for a schedule completing every flow ``j`` by ``deadlines[j]``.

    ``e_j ≤ d_j``, and for every release time ``a`` the flows released at or after ``a``, in
    deadline order, satisfy ``Σ_{d_l ≤ d} V_l ≤ P (d − a)``. Infinite deadlines are free.
    """
    d = np.asarray(deadlines, dtype=float)
    e = earliest_completions(instance)
    if np.any(d < e - _SLACK * np.maximum(1.0, np.abs(e))):
        return False
    finite = np.isfinite(d)
    if not finite.any():
        return True
    r = instance.releases
    vol = instance.volumes
    p = instance.slots
    slack = _SLACK * max(1.0, float(vol.sum()))
    for a in np.unique(r[finite]):
        sel = finite & (r >= a)
        order = np.argsort(d[sel], kind="stable")
        cum = np.cumsum(vol[sel][order])
        if np.any(cum > p * (d[sel][order] - a) * (1 + _SLACK) + slack):
            return False
    return True


def cost_values(costs: list[CostFunction]) -> np.ndarray | None:
    """The union of the finite value sets of the costs, or None if any is continuous."""
    sets = [c.values() for c in costs]
    if any(s is None for s in sets):
        return None
    return np.unique(np.concatenate(sets))


def smallest_passing(test: Callable[[float], bool], lo: float, hi: float,
                     values: np.ndarray | None = None, *, rel_tol: float = 1e-3,
                     bracket_steps: int = 10, budget: int = 1000) -> tuple[float, float]:
    """Bracket and bisect for the least bound that passes ``test``.

    ``test(hi)`` is assumed to pass. With ``values`` the search is over the values in
    ``(lo, hi]`` (plus ``hi``); otherwise over the reals, bracketing upwards from ``lo`` by
    gaps ``(hi − lo) · 2^{k − bracket_steps}`` and bisecting until the bracket is within
    ``rel_tol`` of its upper end.

    Args:
        test: Pass/fail of a bound.
        lo: Start (the critical-path bound).
        hi: A passing bound.
        values: Finite candidate values, or None.
        rel_tol: Relative width of the final bracket (continuous search).
        bracket_steps: Number of doublings from the smallest gap up to ``hi − lo``.
        budget: Most calls of ``test``.

    Returns:
        ``(last_failed, first_passed)``: the largest bound seen to fail (``-inf`` if ``lo``
        passes) and the least bound seen to pass.
    """
    calls = 0

    def run(x: float) -> bool:
        nonlocal calls
        calls += 1
        return test(x)

    if run(lo):
        return -math.inf, lo
    if values is not None:
        cand = values[(values > lo) & (values < hi)]
        cand = np.append(cand, hi)
        prev, idx, step = -1, 0, 1
        while True:
            if calls >= budget:
                return (lo if prev < 0 else float(cand[prev])), hi
            if run(float(cand[idx])):
                break
            prev = idx
            if idx == cand.size - 1:
                return float(cand[idx]), hi
            idx = min(idx + step, cand.size - 1)
            step *= 2
        while idx - prev > 1 and calls < budget:
            mid = (prev + idx) // 2
            if run(float(cand[mid])):
                idx = mid
            else:
                prev = mid
        return (lo if prev < 0 else float(cand[prev])), float(cand[idx])
    gap = hi - lo
    failed, passed = lo, hi
    for k in range(bracket_steps + 1):
        x = lo + gap * 2.0 ** (k - bracket_steps) if k < bracket_steps else hi
        if calls >= budget:
            break
        if run(x):
            passed = x
            break
        failed = x
    while passed - failed > rel_tol * max(abs(passed), 1e-12) and calls < budget:
        mid = 0.5 * (failed + passed)
        if run(mid):
            passed = mid
        else:
            failed = mid
    return failed, passed


def bisection_bound(instance: Instance, metric: Metric, upper: float | None = None, *,
                    rel_tol: float = 1e-9) -> float:
    """The minimax lower bound of 004 §3 by bisection on the necessary conditions.

    The least ``M`` whose deadlines ``D_j(M)`` pass :func:`deadlines_admissible`, searched
    from the critical-path bound ``max_j w_j(e_j)``.

    Args:
        instance: The instance.
        metric: A minimax metric.
        upper: The cost of a known schedule (default: ``max_j w_j(H)``, which any greedy
            schedule achieves).
        rel_tol: Relative precision of the bisection on continuous costs.

    Returns:
        A bound ``≤`` the optimum: a value shown infeasible (continuous costs) or the least
        value not shown infeasible (step costs, whose optimum is one of their values).
    """
    costs = metric.costs(instance)
    e = earliest_completions(instance)
    m0 = float(_costs_at(costs, e).max())

    def admissible(bound: float) -> bool:
        return deadlines_admissible(instance, np.array([c.deadline(bound) for c in costs]))

    m_h = max(m0, float(_costs_at(costs, np.full(len(costs), horizon(instance))).max()))
    hi = m_h if upper is None else max(m0, float(upper))
    if not admissible(hi):
        hi = max(hi, m_h)
        if not admissible(hi):
            return m0
    values = cost_values(costs)
    failed, passed = smallest_passing(admissible, m0, hi, values, rel_tol=rel_tol,
                                      bracket_steps=30)
    if values is not None:
        return passed
    return max(m0, failed)


def flow_bound(instance: Instance, metric: Metric, options: GridOptions | None = None) -> float:
    """The minimum-cost-flow lower bound of a minisum metric (004 §3)."""
    if metric.minimax:
        raise ValueError("the minimum-cost-flow bound is for minisum metrics")
    relax = build_relaxation(instance, metric.costs(instance), options)
    return solve_relaxation(relax).value


def lower_bounds(instance: Instance, metric: Metric, *, upper: float | None = None,
                 solution: FlowSolution | None = None,
                 options: GridOptions | None = None) -> dict[str, float]:
    """Every applicable lower bound, by name.

    Args:
        instance: The instance.
        metric: The metric.
        upper: Minimax: the cost of a known schedule, to bracket the bisection.
        solution: Minisum: an already solved relaxation of this instance and metric.
        options: Minisum: the relaxation's time grid.

    Returns:
        ``critical_path`` and ``squashed_area``, plus ``min_cost_flow`` (minisum) or
        ``bisection`` (minimax).
    """
    out = {"critical_path": critical_path_bound(instance, metric),
           "squashed_area": squashed_area_bound(instance, metric)}
    if metric.minimax:
        out["bisection"] = bisection_bound(instance, metric, upper)
    else:
        if solution is None:
            solution = solve_relaxation(build_relaxation(instance, metric.costs(instance),
                                                         options))
        out["min_cost_flow"] = solution.value
    return out


def lower_bound(instance: Instance, metric: Metric, **kwargs) -> float:
    """The best of :func:`lower_bounds` (keyword arguments are passed on)."""
    return max(lower_bounds(instance, metric, **kwargs).values())
