"""The cost metrics of flows (004 §1, §3) for runs: costs from a jobs table, lower bounds.

A run whose jobs carry deadlines or SLA steps (the ``flows`` workload: one job per flow of
MapReduce jobs) is scored by the 17 metrics of 004 Tables 1-2
(:data:`geosim.flowflex.MINISUM_METRICS` and :data:`~geosim.flowflex.MINIMAX_METRICS`),
named ``minisum <row>`` and ``minimax <row>``. Times are in the workload's time unit
(``workload.flow_time_unit`` seconds) so that 004's ratio ``(cost + 1) / (bound + 1)`` has
its meaning; the lower bound is the best of :func:`geosim.flowflex.lower_bounds` on the
flows read back from the workload (:func:`geosim.workload.flow_instance`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from geosim.flowflex import (
    MINIMAX_METRICS,
    MINISUM_METRICS,
    Flow,
    Instance,
    Job,
    Metric,
    lower_bounds,
)
from geosim.workload import Workload, flow_instance

#: Every metric of 004 Tables 1-2, by name.
METRICS: dict[str, Metric] = {
    **{f"minisum {k}": m for k, m in MINISUM_METRICS.items()},
    **{f"minimax {k}": m for k, m in MINIMAX_METRICS.items()},
}


def has_flows(jobs: pd.DataFrame) -> bool:
    """Whether a jobs table carries service levels (a ``deadline`` column)."""
    return "deadline" in jobs.columns


def _flows(jobs: pd.DataFrame, time_unit: float) -> list[Flow]:
    """One single-job flow per row, carrying what the cost functions read."""
    steps = sorted(int(c.rsplit("_", 1)[1]) for c in jobs.columns if c.startswith("sla_time_"))
    out = []
    for row in jobs.to_dict("records"):
        times = [row[f"sla_time_{k}"] / time_unit for k in steps
                 if math.isfinite(row[f"sla_time_{k}"])]
        heights = [row[f"sla_height_{k}"] for k in steps if math.isfinite(row[f"sla_time_{k}"])]
        d = row["deadline"]
        out.append(Flow(jobs=(Job(size=row["work"] / time_unit, cap=1),),
                        release=row["arrival"] / time_unit, weight=row["weight"],
                        deadline=d / time_unit if math.isfinite(d) else None,
                        sla_times=times, sla_heights=heights))
    return out


def flow_costs(jobs: pd.DataFrame, time_unit: float = 1.0) -> dict[str, float]:
    """Every metric's value for one run's jobs table.

    NaN when a job did not finish or lacks the deadline or SLA steps the metric needs.

    Args:
        jobs: A run's jobs table with service-level columns (:func:`has_flows`).
        time_unit: Seconds per time unit.
    """
    flows = _flows(jobs, time_unit)
    completion = jobs["completion"].to_numpy() / time_unit
    done = bool(jobs["finished"].all())
    out = {}
    for name, metric in METRICS.items():
        try:
            costs = metric.costs(Instance(flows=tuple(flows), slots=1)) if done else None
        except ValueError:                  # a flow lacks the deadline or SLA it needs
            costs = None
        out[name] = math.nan if costs is None else metric.aggregate(
            [c.cost(t) for c, t in zip(costs, completion, strict=True)])
    return out


def flow_bounds(workload: Workload, slots: int, time_unit: float = 1.0) -> dict[str, float]:
    """The best lower bound of every metric for a workload's flows on ``slots`` slots.

    NaN for a metric whose deadline or SLA steps some flow lacks.
    """
    instance = flow_instance(workload, slots, time_unit=time_unit)
    out = {}
    for name, metric in METRICS.items():
        try:
            out[name] = max(lower_bounds(instance, metric).values())
        except ValueError:                  # a flow lacks the deadline or SLA it needs
            out[name] = math.nan
    return out


def ratio(cost: float | np.ndarray, bound: float | np.ndarray) -> float | np.ndarray:
    """004's ratio to the lower bound, adding 1 to both (its footnote 4)."""
    return (np.asarray(cost) + 1.0) / (np.asarray(bound) + 1.0)
