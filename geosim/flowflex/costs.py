"""Cost functions of a flow's completion time and the metrics built from them (004 §1, §3).

004 §1 gives every flow ``j`` a non-decreasing cost ``w_j(C)`` of its completion time ``C``;
the objective is the sum (*minisum*) or the maximum (*minimax*) over the flows. Two classes
cover every metric of 004 §3 (Figure 2, Tables 1 and 2):

- :class:`LinearCost` ``w · max(0, C − offset)``: weighted completion time (offset 0, or the
  release time for flow time), tardiness (offset = the deadline), stretch (weight 1/size,
  offset = the release time).
- :class:`StepCost` ``Σ_k h_k · [C > b_k]``: a non-decreasing step function, left-continuous
  (finishing exactly at a breakpoint costs nothing for that step). Weighted number of tardy
  flows is one step ``w · [C > d]``; an SLA is up to 5 steps.

Besides ``cost(C)`` (vectorised) the planner needs, for any cost function:

- ``cost_after(t)``: the right limit ``lim_{s↓t} w(s)``, the least cost of completing in
  ``(t, t + ε]``; the minimum-cost-flow lower bound charges a time cell at its left end with it.
- ``deadline(M)``: ``sup{t : w(t) ≤ M}``, the latest completion time of cost at most ``M``
  (``+inf`` if no completion time costs more than ``M``, ``-inf`` if even ``w(0) > M``).
  This is 004's ``D_j = argmax{t : w_j(t) ≤ M}`` of Theorem 2.5, which need not be attained.
- ``breakpoints()``: times where the cost changes slope or jumps, added to the time grid.
- ``values()``: the finite set of values the function takes, or None when it takes a
  continuum (the minimax searches then bisect over these values exactly).

:class:`Metric` names one of the metrics of 004 §3 and builds each flow's cost function from
the flow's data (weight, deadline, SLA steps, release). Stretch weights a flow by the
reciprocal of its size; 004 §3 calls this "completion time weighted by the reciprocal of the
amount of work associated with the flow", so the size is the flow's total work ``Σ s_i`` by
default (``stretch_size="critical_path"`` uses the critical-path length instead), and stretch
is measured from the release time, ``(C − r_j) / size``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    from geosim.flowflex.model import Flow, Instance

#: The objectives of 004 §1.
OBJECTIVES = ("minisum", "minimax")

#: The metric kinds of 004 §3 (plus ``custom``: each flow's own :attr:`Flow.cost`).
KINDS = (
    "completion",
    "weighted_completion",
    "stretch",
    "tardy",
    "weighted_tardy",
    "tardiness",
    "weighted_tardiness",
    "unit_sla",
    "sla",
    "custom",
)

#: What the size of a flow is in the stretch metric.
STRETCH_SIZES = ("work", "critical_path")


def _out(values: np.ndarray) -> np.ndarray | float:
    """Return a float for a 0-d result, the array otherwise."""
    return float(values) if values.ndim == 0 else values


class CostFunction(ABC):
    """A non-decreasing cost ``w(C) ≥ 0`` of a flow's completion time ``C``."""

    @abstractmethod
    def cost(self, t: ArrayLike) -> np.ndarray | float:
        """The cost of completing at time(s) ``t`` (a float for a scalar ``t``)."""

    def cost_after(self, t: ArrayLike) -> np.ndarray | float:
        """The right limit ``lim_{s↓t} w(s)``; equals :meth:`cost` for continuous costs."""
        return self.cost(t)

    @abstractmethod
    def deadline(self, bound: float) -> float:
        """``sup{t : w(t) ≤ bound}``: ``+inf`` if unbounded, ``-inf`` if the set is empty."""

    def breakpoints(self) -> tuple[float, ...]:
        """Times at which the cost jumps or changes slope."""
        return ()

    def values(self) -> np.ndarray | None:
        """The sorted finite set of values taken, or None for a continuum."""
        return None


@dataclass(frozen=True)
class LinearCost(CostFunction):
    """``weight · max(0, C − offset)``.

    Args:
        weight: Slope (>= 0).
        offset: Time from which the cost grows (0 for completion time, the deadline for
            tardiness, the release time for flow time and stretch).
    """

    weight: float = 1.0
    offset: float = 0.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.weight) and self.weight >= 0):
            raise ValueError(f"weight must be finite and >= 0, got {self.weight}")
        if not math.isfinite(self.offset):
            raise ValueError(f"offset must be finite, got {self.offset}")

    def cost(self, t: ArrayLike) -> np.ndarray | float:
        """``weight · max(0, t − offset)``."""
        t = np.asarray(t, dtype=float)
        return _out(self.weight * np.maximum(t - self.offset, 0.0))

    def deadline(self, bound: float) -> float:
        """``offset + bound / weight`` (``+inf`` for weight 0, ``-inf`` for a negative bound)."""
        if bound < 0:
            return -math.inf
        if self.weight == 0:
            return math.inf
        return self.offset + bound / self.weight

    def breakpoints(self) -> tuple[float, ...]:
        """The kink at ``offset``."""
        return (self.offset,)


@dataclass(frozen=True, init=False)
class StepCost(CostFunction):
    """``Σ_k heights[k] · [C > times[k]]``: a left-continuous non-decreasing step function.

    Args:
        times: Breakpoints (any order; equal breakpoints are merged).
        heights: The increment at each breakpoint (>= 0).
    """

    times: tuple[float, ...]
    heights: tuple[float, ...]

    def __init__(self, times: Sequence[float], heights: Sequence[float]):
        t = np.asarray(times, dtype=float).ravel()
        h = np.asarray(heights, dtype=float).ravel()
        if t.size != h.size:
            raise ValueError("times and heights must have the same length")
        if not (np.all(np.isfinite(t)) and np.all(np.isfinite(h)) and np.all(h >= 0)):
            raise ValueError("times must be finite and heights finite and >= 0")
        uniq, inverse = np.unique(t, return_inverse=True)
        merged = np.zeros(uniq.size)
        np.add.at(merged, inverse, h)
        object.__setattr__(self, "times", tuple(uniq.tolist()))
        object.__setattr__(self, "heights", tuple(merged.tolist()))
        object.__setattr__(self, "_t", uniq)
        object.__setattr__(self, "_cum", np.concatenate([[0.0], np.cumsum(merged)]))

    def cost(self, t: ArrayLike) -> np.ndarray | float:
        """The sum of the steps whose breakpoint is strictly before ``t``."""
        t = np.asarray(t, dtype=float)
        return _out(self._cum[np.searchsorted(self._t, t, side="left")])

    def cost_after(self, t: ArrayLike) -> np.ndarray | float:
        """The sum of the steps whose breakpoint is at or before ``t``."""
        t = np.asarray(t, dtype=float)
        return _out(self._cum[np.searchsorted(self._t, t, side="right")])

    def deadline(self, bound: float) -> float:
        """The first breakpoint after which the cost exceeds ``bound`` (``+inf`` if none)."""
        if bound < 0:
            return -math.inf
        above = np.flatnonzero(self._cum > bound)
        if above.size == 0:
            return math.inf
        return float(self._t[above[0] - 1])

    def breakpoints(self) -> tuple[float, ...]:
        """The step times."""
        return self.times

    def values(self) -> np.ndarray | None:
        """The cumulative step heights."""
        return np.unique(self._cum)


def flow_size(flow: Flow, kind: str = "work") -> float:
    """The size of a flow for the stretch metric: total work or critical-path length."""
    if kind == "work":
        return flow.total_work
    if kind == "critical_path":
        return flow.critical_path
    raise ValueError(f"stretch size must be one of {STRETCH_SIZES}, got {kind!r}")


@dataclass(frozen=True)
class Metric:
    """A scheduling metric of 004 §3: a cost kind and an objective.

    Args:
        kind: One of :data:`KINDS`. ``completion`` is ``C`` (its minimax is the makespan),
            ``weighted_completion`` ``w·C``, ``stretch`` ``(C − r)/size``, ``tardy``
            ``[C > d]``, ``weighted_tardy`` ``w·[C > d]``, ``tardiness`` ``max(0, C − d)``,
            ``weighted_tardiness`` ``w·max(0, C − d)``, ``unit_sla`` unit steps at the flow's
            SLA times, ``sla`` the flow's SLA steps, ``custom`` each flow's ``cost``.
        objective: ``minisum`` (sum over flows) or ``minimax`` (maximum over flows).
        from_release: Measure (weighted) completion time from the flow's release time.
        stretch_size: ``work`` (total work, 004 §3) or ``critical_path``.
    """

    kind: str
    objective: str = "minisum"
    from_release: bool = False
    stretch_size: str = "work"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")
        if self.stretch_size not in STRETCH_SIZES:
            raise ValueError(f"stretch_size must be one of {STRETCH_SIZES}")

    @property
    def name(self) -> str:
        """``objective kind``, e.g. ``minisum weighted_tardiness``."""
        return f"{self.objective} {self.kind}"

    @property
    def minimax(self) -> bool:
        """Whether the objective is the maximum over flows."""
        return self.objective == "minimax"

    def flow_cost(self, flow: Flow) -> CostFunction:
        """The cost function of one flow under this metric."""
        k = self.kind
        origin = flow.release if self.from_release else 0.0
        if k == "completion":
            return LinearCost(1.0, origin)
        if k == "weighted_completion":
            return LinearCost(flow.weight, origin)
        if k == "stretch":
            return LinearCost(1.0 / flow_size(flow, self.stretch_size), flow.release)
        if k == "custom":
            if flow.cost is None:
                raise ValueError("the custom metric needs every flow's cost")
            return flow.cost
        if k in ("tardy", "weighted_tardy", "tardiness", "weighted_tardiness"):
            if flow.deadline is None:
                raise ValueError(f"the {k} metric needs every flow's deadline")
            w = flow.weight if k.startswith("weighted") else 1.0
            if k.endswith("tardy"):
                return StepCost([flow.deadline], [w])
            return LinearCost(w, flow.deadline)
        if not flow.sla_times:
            raise ValueError(f"the {k} metric needs every flow's SLA steps")
        heights = np.ones(len(flow.sla_times)) if k == "unit_sla" else flow.sla_heights
        return StepCost(flow.sla_times, heights)

    def costs(self, instance: Instance) -> list[CostFunction]:
        """Every flow's cost function, in flow order."""
        return [self.flow_cost(f) for f in instance.flows]

    def aggregate(self, values: ArrayLike) -> float:
        """Sum or maximum of per-flow costs."""
        v = np.asarray(values, dtype=float)
        return float(v.max() if self.minimax else v.sum())

    def flow_costs(self, instance: Instance, completion: ArrayLike) -> np.ndarray:
        """Each flow's cost at the given completion times."""
        c = np.asarray(completion, dtype=float)
        return np.array([f.cost(t) for f, t in zip(self.costs(instance), c, strict=True)])

    def evaluate(self, instance: Instance, completion: ArrayLike) -> float:
        """The objective value of the given flow completion times."""
        return self.aggregate(self.flow_costs(instance, completion))


#: The 9 minisum metrics of 004 Table 1, by row.
MINISUM_METRICS: dict[str, Metric] = {
    "completion_time": Metric("completion"),
    "stretch": Metric("stretch"),
    "weighted_completion_time": Metric("weighted_completion"),
    "number_of_tardy": Metric("tardy"),
    "weighted_number_of_tardy": Metric("weighted_tardy"),
    "tardiness": Metric("tardiness"),
    "weighted_tardiness": Metric("weighted_tardiness"),
    "unit_sla": Metric("unit_sla"),
    "sla": Metric("sla"),
}

#: The 8 minimax metrics of 004 Table 2, by row (the makespan is the maximum completion time).
MINIMAX_METRICS: dict[str, Metric] = {
    "makespan": Metric("completion", "minimax"),
    "stretch": Metric("stretch", "minimax"),
    "weighted_completion_time": Metric("weighted_completion", "minimax"),
    "weighted_number_of_tardy": Metric("weighted_tardy", "minimax"),
    "tardiness": Metric("tardiness", "minimax"),
    "weighted_tardiness": Metric("weighted_tardiness", "minimax"),
    "unit_sla": Metric("unit_sla", "minimax"),
    "sla": Metric("sla", "minimax"),
}
