"""The scheduling metrics of 004 §3, built from the cost functions of :mod:`.costs`.

:class:`Metric` names one of the metrics of 004 §3 and builds each flow's cost function from
the flow's data (weight, deadline, SLA steps, release). Stretch weights a flow by the
reciprocal of its size; 004 §3 calls this "completion time weighted by the reciprocal of the
amount of work associated with the flow", so the size is the flow's total work ``Σ s_i`` by
default (``stretch_size="critical_path"`` uses the critical-path length instead), and stretch
is measured from the release time, ``(C − r_j) / size``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from geosim.flowflex.costs import CostFunction, LinearCost, StepCost
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
