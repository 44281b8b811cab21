"""Cost functions of a flow's completion time (004 §1, §3).

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

:mod:`geosim.flowflex.metrics` builds the metrics of 004 §3 from these.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike


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
