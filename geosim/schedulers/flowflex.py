"""FlowFlex (004): plan flows of malleable MapReduce jobs, then execute the plan brick by brick."""

from __future__ import annotations

import time

import numpy as np

from geosim.flowflex import KINDS, Flow, Instance, Job, LinearCost, Metric, Plan, StepCost, plan
from geosim.flowflex.costs import CostFunction
from geosim.flowflex.metrics import OBJECTIVES
from geosim.params import Field
from geosim.schedulers.base import Scheduler
from geosim.schedulers.placement import launch_from_stages
from geosim.schedulers.registry import register
from geosim.view import Actions, SchedulerView


def shifted(cost: CostFunction, now: float) -> CostFunction:
    """``t ↦ cost(now + t)``: a flow's cost on a clock that starts at ``now``."""
    if isinstance(cost, LinearCost):
        return LinearCost(cost.weight, cost.offset - now)
    if isinstance(cost, StepCost):
        return StepCost(np.asarray(cost.times) - now, cost.heights)
    raise TypeError(f"cannot shift a {type(cost).__name__}")


@register
class FlowFlex(Scheduler):
    """004's FlowFlex: an offline plan of every flow, executed by an assignment layer.

    Each alive job is a flow and each of its unfinished stages a malleable MapReduce job of
    its remaining work (seconds at power 1, less the progress of running copies) and cap
    ``δ`` (the stage's ``task_cap``, else every slot). :func:`geosim.flowflex.plan` plans
    them for the metric on the reachable slots (minisum: minimum-cost flow, half-volume
    deadlines and the greedy; minimax: bracket and bisection; then McNaughton's
    shape-shifting). It plans when flows arrive (once, at t = 0, for 004's batch
    experiments; again at every arrival for flows arriving online, and when the reachable
    slots change), each flow's cost shifted to the planning time.

    The plan is executed by an assignment layer (004 §1, Figure 1): at every slot boundary
    the planned stages, in order of their planned completion, start bricks on free slots
    until the work each has started since the plan covers the work the plan does by the end
    of the slot. The order is the plan's priority, so a stage that fell behind (its
    predecessor ended late, or its last bricks were short) catches up before later stages,
    not by taking slots from stages the plan finishes first. With ``backfill``, slots still
    free then go to the stages with ready bricks, in the same order (a brick is never
    preempted, so without it a slot the plan leaves idle stays idle). With bricks no longer
    than a slot the executed cost converges to the plan's as the slot shrinks
    (docs/results.md). On workloads other than flows every stage is planned as a malleable
    job; task edges inside a stage are not seen by the plan (the engine still enforces them).

    Args:
        objective: ``minisum`` or ``minimax``.
        kind: The per-flow cost, one of :data:`geosim.flowflex.KINDS` but ``custom``
            (``weighted_completion``, ``stretch``, ``weighted_tardiness``, ``sla``, ...).
        backfill: Give slots the plan leaves free to stages with ready bricks.
    """

    name = "flowflex"
    description = ("004's FlowFlex: minimum-cost-flow (minisum) or bisection (minimax) plan "
                   "of flows of malleable jobs, executed brick by brick")
    params = {
        "objective": Field("minisum", "str", choices=OBJECTIVES, doc="minisum or minimax"),
        "kind": Field("weighted_completion", "str",
                      choices=tuple(k for k in KINDS if k != "custom"), doc="per-flow cost"),
        "backfill": Field(True, "bool", doc="give slots the plan leaves free to stages "
                          "with ready bricks"),
    }

    def __init__(self, objective: str = "minisum", kind: str = "weighted_completion",
                 backfill: bool = True):
        self.validate_params(objective=objective, kind=kind, backfill=backfill)
        self.objective, self.kind, self.backfill = objective, kind, backfill

    def reset(self, view: SchedulerView, rng: np.random.Generator) -> None:
        """Forget any plan."""
        super().reset(view, rng)
        self.metric = Metric(self.kind, self.objective)
        self.plans: list[Plan] = []          # every plan made, in order
        self.planning_seconds: list[float] = []
        self._lo = np.empty(0, dtype=np.int64)   # first task of each planned stage

    # ------------------------------------------------------------------ planning
    def _flow_cost(self, view: SchedulerView, job: int, work: float) -> CostFunction:
        """The job's cost under the metric, from its arrival, weight, deadline and SLA."""
        s0, s1 = view.sla_ptr[job], view.sla_ptr[job + 1]
        deadline = float(view.job_deadline[job])
        flow = Flow(jobs=(Job(size=work, cap=1),), release=float(view.job_arrival[job]),
                    weight=float(view.job_weight[job]),
                    deadline=deadline if np.isfinite(deadline) else None,
                    sla_times=view.sla_time[s0:s1], sla_heights=view.sla_height[s0:s1])
        return self.metric.flow_cost(flow)

    def _plan(self, view: SchedulerView) -> None:
        """Plan every alive flow's remaining work from now on."""
        now, slots = view.time, view.total_slots
        jobs = view.alive_jobs
        g = view.stage_groups(jobs, work=True)
        work = g["work_left"].copy()
        info = view.copy_info()
        if info["copy"].size:                          # less the progress of running bricks
            best = np.zeros(view.task_work.size)
            np.maximum.at(best, info["task"], info["progress"])
            task = np.unique(info["task"])
            at = np.searchsorted(g["lo"], task, side="right") - 1
            np.subtract.at(work, at, view.task_work[task] *
                           np.clip(best[task] - view.task_saved[task], 0.0, 1.0))
        keep = g["left"] > 0
        flows, lo = [], []
        total = np.bincount(view.task_job, weights=view.task_work)
        for job in jobs:
            mine = np.flatnonzero(keep & (g["job"] == job))
            if mine.size == 0:
                continue
            index = {int(s): i for i, s in enumerate(g["stage"][mine])}
            edges = self._edges(view, int(job), index)
            caps = np.where(g["cap"][mine] > 0, np.minimum(g["cap"][mine], slots), slots)
            cost = shifted(self._flow_cost(view, int(job), float(total[job])), now)
            flows.append(Flow(jobs=tuple(Job(size=max(float(w), 1e-9), cap=int(c))
                                         for w, c in zip(work[mine], caps, strict=True)),
                              edges=tuple(edges), weight=float(view.job_weight[job]),
                              cost=cost))
            lo.append(g["lo"][mine])
        self._lo = np.concatenate(lo) if lo else np.empty(0, dtype=np.int64)
        if not flows:
            return
        start = time.process_time()
        p = plan(Instance(flows=tuple(flows), slots=slots), Metric("custom", self.objective))
        self.planning_seconds.append(time.process_time() - start)
        self.plans.append(p)
        self._store(p, flows, now)

    def _edges(self, view: SchedulerView, job: int, index: dict[int, int]) -> list:
        """Precedence among the job's unfinished stages (``index``: stage -> position)."""
        k = np.flatnonzero(view.stage_edge_job == job)
        if k.size:
            pairs = zip(view.stage_edge_src[k].tolist(), view.stage_edge_dst[k].tolist(),
                        strict=True)
        else:
            last = int(view.task_stage[view.job_task_ptr[job + 1] - 1])
            pairs = ((s, s + 1) for s in range(last))
        return [(index[a], index[b]) for a, b in pairs if a in index and b in index]

    def _store(self, p: Plan, flows: list[Flow], now: float) -> None:
        """The plan as per-stage slot counts on one time grid (absolute times)."""
        keys = [(j, i) for j, f in enumerate(flows) for i in range(f.n_jobs)]
        times = np.unique([t for k in keys for a, b, _ in p.job_slots[k] for t in (a, b)])
        rate = np.zeros((len(keys), max(times.size, 1)))
        for r, k in enumerate(keys):
            for a, b, s in p.job_slots[k]:
                rate[r, np.searchsorted(times, a):np.searchsorted(times, b)] += s
        cum = np.zeros_like(rate)
        if times.size > 1:
            cum[:, 1:] = np.cumsum(rate[:, :-1] * np.diff(times), axis=1)
        self._times, self._rate, self._cum = now + times, rate, cum
        finish = np.array([p.job_completion[k] for k in keys])
        self._order = np.lexsort((np.arange(finish.size), finish))   # planned completion

    def _planned(self, t: float) -> np.ndarray:
        """Work each planned stage has done by ``t`` in the plan."""
        k = int(np.searchsorted(self._times, t, side="right")) - 1
        if k < 0:
            return np.zeros(self._lo.size)
        return self._cum[:, k] + self._rate[:, k] * (t - self._times[k])

    # ------------------------------------------------------------------ execution
    def decide(self, view: SchedulerView, actions: Actions) -> None:
        """Re-plan at arrivals (or a change of reachable clusters), then start the bricks needed."""
        self.at_event(view)     # the one rule's reach_changed: an outage started or ended
        if view.alive_jobs.size == 0 or view.total_slots == 0:
            return
        if view.arrivals or self.reach_changed:
            self._plan(view)
        if self._lo.size == 0 or not view.n_ready:
            return
        g = view.stage_groups(view.alive_jobs)
        pos = np.searchsorted(g["lo"], self._lo)
        pos = np.minimum(pos, g["lo"].size - 1)
        alive = g["lo"][pos] == self._lo
        brick = view.task_work[self._lo]
        ready = np.where(alive, g["ready"][pos], 0)
        # Work started since the plan: its total less the bricks not started yet.
        started = self._cum[:, -1] - (g["left"] - g["running"])[pos] * brick
        behind = np.where(alive, self._planned(view.time + view.dt) - started, 0.0)
        want = np.clip(np.ceil(behind / brick - 1e-9), 0, ready).astype(np.int64)
        order = self._order
        lo, hi = self._lo[order], g["hi"][pos][order]
        launched = launch_from_stages(view, actions, lo, hi, want[order])
        if self.backfill and launched == int(want.sum()):
            launch_from_stages(view, actions, lo, hi, (ready - want)[order])
