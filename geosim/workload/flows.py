"""Flows of MapReduce jobs (004) as geosim jobs of malleable "brick" stages, and back.

A flow of 004 is one geosim job. Each of its MapReduce jobs is one stage, listed in the
flow's topological order, with the flow's precedence arcs as stage edges. A MapReduce job of
work ``s_i`` (slot-seconds) and malleability cap ``δ_i`` becomes ``n_i = max(δ_i,
⌈s_i / b⌉)`` equal *brick* tasks of work ``s_i / n_i ≤ b`` (``b``: the ``brick`` size) whose
stage keeps at most ``δ_i`` of them in progress (``Workload.task_cap``): a job that runs on
any number of slots up to ``δ_i``, in whole bricks. Work is in seconds on a slot of power 1,
so the world should have unit-power slots (``scenarios/flowflex.toml``).

How bricks bound the error against 004's continuous (malleable) schedules: a slot starts a
brick only at a slot boundary and keeps it to its end, so a job holds a slot at most one
brick (``≤ b`` seconds at power 1) after the continuous schedule would have taken it away,
and its last bricks may leave up to ``δ_i − 1`` slots idle for less than ``b``. With ``b``
no larger than the slot length ``dt`` every brick ends within the slot it started in, and
every slot boundary is a fresh allocation of all slots: the executed schedule is the
continuous plan rounded to slots of length ``dt``. The gap between the engine's cost and the
planner's shrinks with ``b`` and ``dt`` (measured in ``docs/results.md``).

:func:`flow_jobs` draws 004 §3 experiments (:mod:`geosim.flowflex.generator`) and converts
them; :func:`flow_instance` reads the flows of a workload back as a planner
:class:`~geosim.flowflex.Instance` in seconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from geosim.errors import GeosimError
from geosim.flowflex import Flow, GeneratorConfig, Instance, Job, generate_instance
from geosim.workload.core import Workload

#: Task type name of every brick.
FLOW_TYPES = ("brick",)


def flow_workload(flows: Sequence[Flow], releases: Sequence[float], *, time_unit: float = 1.0,
                  brick: float = 1.0) -> Workload:
    """Turn planner flows into a workload: one job per flow, one brick stage per job.

    Args:
        flows: The flows (sizes in slot-time units, deadlines and SLA times in time units
            from the flow's release).
        releases: Arrival time of each flow, seconds (non-decreasing).
        time_unit: Seconds per time unit of the flows.
        brick: Largest work of one brick, seconds on a slot of power 1 (> 0).

    Returns:
        The workload, with weights, deadlines and SLA steps (in seconds from time 0).
    """
    if not (math.isfinite(brick) and brick > 0 and math.isfinite(time_unit) and time_unit > 0):
        raise GeosimError(f"brick ({brick!r}) and time unit ({time_unit!r}) must be > 0",
                          source="workload")
    releases = np.asarray(releases, dtype=float)
    works, caps, stages, ptr = [], [], [], [0]
    sj, ss, sd, deadline, sla_t, sla_h, sla_ptr = [], [], [], [], [], [], [0]
    for j, (flow, release) in enumerate(zip(flows, releases, strict=True)):
        order = flow.topological_order
        pos = np.empty(flow.n_jobs, dtype=np.int64)
        pos[list(order)] = np.arange(flow.n_jobs)
        for s, i in enumerate(order):
            job = flow.jobs[i]
            size = job.size * time_unit
            n = max(job.cap, math.ceil(size / brick * (1 - 1e-12)))
            works.append(np.full(n, size / n))
            caps.append(np.full(n, job.cap))
            stages.append(np.full(n, s))
        ptr.append(ptr[-1] + sum(a.size for a in works[len(works) - flow.n_jobs:]))
        for a, b in flow.edges:
            sj.append(j)
            ss.append(pos[a])
            sd.append(pos[b])
        deadline.append(np.inf if flow.deadline is None
                        else release + flow.deadline * time_unit)
        sla_t.extend(release + np.asarray(flow.sla_times) * time_unit)
        sla_h.extend(flow.sla_heights)
        sla_ptr.append(len(sla_t))
    work = np.concatenate(works)
    return Workload(
        arrival=releases, weight=np.array([f.weight for f in flows]),
        task_ptr=np.asarray(ptr), task_work=work, task_type=np.zeros(work.size),
        type_names=FLOW_TYPES, edge_src=np.empty(0), edge_dst=np.empty(0),
        edge_size=np.empty(0), raw_ptr=np.zeros(work.size + 1), raw_cluster=np.empty(0),
        raw_size=np.empty(0), task_stage=np.concatenate(stages),
        task_cap=np.concatenate(caps), stage_edge_job=np.asarray(sj, dtype=np.int64),
        stage_edge_src=np.asarray(ss, dtype=np.int64),
        stage_edge_dst=np.asarray(sd, dtype=np.int64), deadline=np.asarray(deadline),
        sla_ptr=np.asarray(sla_ptr), sla_time=np.asarray(sla_t, dtype=float),
        sla_height=np.asarray(sla_h, dtype=float))


def flow_jobs(rng: np.random.Generator, config: GeneratorConfig, *, batch: bool = True,
              n_flows: int = 1, arrival_rate: float = 1.0, time_unit: float = 1.0,
              brick: float = 1.0) -> Workload:
    """004 §3 experiments as a workload.

    Args:
        rng: Random stream.
        config: The experiment generator's parameters (its ``slots`` is ``P``).
        batch: One experiment, every flow at time 0 (004 §3); otherwise ``n_flows`` flows
            arriving as a Poisson process of rate ``arrival_rate`` (1/s), drawn from
            successive experiments, each flow's deadline and SLA times counted from its
            arrival.
        n_flows: Flows of the online workload.
        arrival_rate: Arrival rate of the online workload (1/s).
        time_unit: Seconds per time unit of the generator.
        brick: Largest work of one brick task, seconds on a slot of power 1.

    Returns:
        The workload.
    """
    if batch:
        instance = generate_instance(rng, config)
        return flow_workload(instance.flows, np.zeros(instance.n_flows),
                             time_unit=time_unit, brick=brick)
    flows: list[Flow] = []
    while len(flows) < n_flows:
        flows.extend(generate_instance(rng, config).flows)
    releases = np.cumsum(rng.exponential(1.0 / arrival_rate, n_flows))
    return flow_workload(flows[:n_flows], releases, time_unit=time_unit, brick=brick)


def flow_instance(workload: Workload, slots: int, jobs: Sequence[int] | None = None,
                  time_unit: float = 1.0) -> Instance:
    """The flows of a workload as a planner instance, in time units of ``time_unit`` seconds.

    Each job is a flow; each stage a MapReduce job of work the sum of its tasks' work and
    cap the stage's ``task_cap`` (``slots`` when uncapped); the precedence is the stage
    edges (a chain without them); releases, weights, deadlines and SLA steps are the
    workload's.

    Args:
        workload: A workload whose tasks run on slots of power 1.
        slots: ``P``, the number of slots.
        jobs: Which jobs (default: all).
        time_unit: Seconds per time unit of the instance (work: slot-time units).
    """
    wl, u = workload, float(time_unit)
    jobs = np.arange(wl.n_jobs) if jobs is None else np.asarray(jobs, dtype=np.int64)
    flows = []
    for j in jobs:
        t0, t1 = int(wl.task_ptr[j]), int(wl.task_ptr[j + 1])
        stage = wl.task_stage[t0:t1]
        n = int(stage[-1]) + 1
        size = np.bincount(stage, weights=wl.task_work[t0:t1], minlength=n) / u
        first = np.searchsorted(stage, np.arange(n))
        cap = wl.task_cap[t0:t1][first]
        k = wl.stage_edge_job == j
        edges = list(zip(wl.stage_edge_src[k].tolist(), wl.stage_edge_dst[k].tolist(),
                         strict=True)) or [(s, s + 1) for s in range(n - 1)]
        s0, s1 = int(wl.sla_ptr[j]), int(wl.sla_ptr[j + 1])
        d = float(wl.deadline[j])
        flows.append(Flow(
            jobs=tuple(Job(size=float(x), cap=int(min(c, slots)) if c > 0 else slots)
                       for x, c in zip(size, cap, strict=True)),
            edges=tuple(edges), release=float(wl.arrival[j]) / u, weight=float(wl.weight[j]),
            deadline=d / u if math.isfinite(d) else None,
            sla_times=tuple(wl.sla_time[s0:s1] / u),
            sla_heights=tuple(wl.sla_height[s0:s1]), name=f"job{j}"))
    return Instance(flows=tuple(flows), slots=slots)
