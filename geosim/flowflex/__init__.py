"""FlowFlex: malleable scheduling of flows of MapReduce jobs (004), as an offline planner.

A pure module, independent of the simulator: it takes an :class:`Instance` (flows of jobs on
``P`` slots) and a :class:`Metric`, and returns a :class:`Plan` (integer slots per job over
time, completion times, cost and a lower bound on the optimum) that a scheduler can execute.

- :mod:`~geosim.flowflex.model`: jobs, flows, instances, Stage 1 pseudo-jobs.
- :mod:`~geosim.flowflex.costs`: cost functions and the metrics of 004 §3.
- :mod:`~geosim.flowflex.planner`: the greedy deadline scheduler, minisum and minimax
  planning, plan simulation, Fair and FIFO.
- :mod:`~geosim.flowflex.mcnaughton`: McNaughton's wrap-around and Stage 3 shape-shifting.
- :mod:`~geosim.flowflex.bounds`: the minimum-cost-flow relaxation and the lower bounds.
- :mod:`~geosim.flowflex.generator`: 004 §3's random experiments.
"""

from geosim.flowflex.bounds import (
    FlowSolution,
    GridOptions,
    Relaxation,
    bisection_bound,
    build_relaxation,
    critical_path_bound,
    deadlines_admissible,
    earliest_completions,
    flow_bound,
    horizon,
    lower_bound,
    lower_bounds,
    solve_relaxation,
    squashed_area_bound,
)
from geosim.flowflex.costs import CostFunction, LinearCost, StepCost
from geosim.flowflex.generator import GeneratorConfig, generate_dag, generate_instance
from geosim.flowflex.mcnaughton import integerize, shape_shift, slot_usage, wrap_around
from geosim.flowflex.metrics import KINDS, MINIMAX_METRICS, MINISUM_METRICS, Metric
from geosim.flowflex.model import Flow, Instance, Job, JobKey, PseudoJob, ScheduleResult
from geosim.flowflex.planner import (
    Comparison,
    GreedyCheck,
    GreedySchedule,
    Plan,
    PlannerOptions,
    check_deadlines,
    compare,
    fair_schedule,
    fifo_schedule,
    greedy_schedule,
    plan,
    plan_deadlines,
    simulate_plan,
)

__all__ = [
    "KINDS",
    "MINIMAX_METRICS",
    "MINISUM_METRICS",
    "Comparison",
    "CostFunction",
    "Flow",
    "FlowSolution",
    "GeneratorConfig",
    "GreedyCheck",
    "GreedySchedule",
    "GridOptions",
    "Instance",
    "Job",
    "JobKey",
    "LinearCost",
    "Metric",
    "Plan",
    "PlannerOptions",
    "PseudoJob",
    "Relaxation",
    "ScheduleResult",
    "StepCost",
    "bisection_bound",
    "build_relaxation",
    "check_deadlines",
    "compare",
    "critical_path_bound",
    "deadlines_admissible",
    "earliest_completions",
    "fair_schedule",
    "fifo_schedule",
    "flow_bound",
    "generate_dag",
    "generate_instance",
    "greedy_schedule",
    "horizon",
    "integerize",
    "lower_bound",
    "lower_bounds",
    "plan",
    "plan_deadlines",
    "shape_shift",
    "simulate_plan",
    "slot_usage",
    "solve_relaxation",
    "squashed_area_bound",
    "wrap_around",
]
