"""The problem data of FlowFlex (004 §1) and the pseudo-jobs of Stage 1 (004 §2.1).

There are ``P`` identical slots. A :class:`Flow` is a DAG of MapReduce :class:`Job` objects; job
``i`` has work ``s_i`` (slot-time units) and a malleability cap ``δ_i ∈ [P]``: at any time it
runs on any number of slots between 0 and ``δ_i``, with linear speedup, and it starts only
once all its predecessors in the flow have finished. A flow has a release time (0 in 004's
batch experiments), a weight, and the data its cost functions need (a deadline, SLA steps,
or an explicit :class:`~geosim.flowflex.costs.CostFunction`). A flow completes when its last
job does.

Stage 1 (004 §2.1) turns a flow into a chain of pseudo-jobs. The *pseudo-schedule* runs every
job on its ``δ_i`` slots from its earliest start ``b_i`` (the longest path to it, with slots
unlimited) to ``b_i + s_i/δ_i``; it ends at the flow's critical path ``T``. Cutting ``[0, T]``
into maximal intervals ``I_k`` in which the set of running jobs is fixed gives pseudo-job
``k`` with cap ``r_k = Σ δ_i`` over its jobs and size ``r_k · |I_k|``; the pseudo-jobs form a
chain. The cap may exceed ``P``. Total work and critical path are unchanged (004 fn. 3).

Job keys are ``(flow index, job index)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import networkx as nx
import numpy as np

from geosim.flowflex.costs import CostFunction

#: A job's key: ``(flow index, job index within the flow)``.
JobKey = tuple[int, int]

#: A piece of a schedule: ``(t_start, t_end, slots)`` (``slots`` may be fractional for
#: malleable rate profiles, and is an integer in slot assignments).
Piece = tuple[float, float, float]


@dataclass(frozen=True)
class Job:
    """A MapReduce job.

    Args:
        size: Work ``s_i`` in slot-time units (> 0).
        cap: Malleability cap ``δ_i``: the most slots it can use at once (integer >= 1).
        name: Optional label.
    """

    size: float
    cap: int
    name: str = ""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.size) and self.size > 0):
            raise ValueError(f"job size must be finite and > 0, got {self.size}")
        if int(self.cap) != self.cap or self.cap < 1:
            raise ValueError(f"job cap must be an integer >= 1, got {self.cap}")
        object.__setattr__(self, "cap", int(self.cap))

    @property
    def duration(self) -> float:
        """Its running time on ``cap`` slots, ``s_i / δ_i``."""
        return self.size / self.cap


@dataclass(frozen=True)
class PseudoJob:
    """A pseudo-job of Stage 1: the jobs running in one interval of the pseudo-schedule.

    Args:
        start: Start of the interval ``I_k`` in the pseudo-schedule (from the flow's start).
        duration: ``|I_k|`` (> 0).
        members: ``(job index, δ_i)`` of the jobs running throughout ``I_k``.
    """

    start: float
    duration: float
    members: tuple[tuple[int, int], ...]

    @property
    def cap(self) -> int:
        """``r_k = Σ δ_i`` over the members (may exceed ``P``)."""
        return sum(c for _, c in self.members)

    @property
    def size(self) -> float:
        """``s(k) = r_k · |I_k|``."""
        return self.cap * self.duration


@dataclass(frozen=True, eq=False)
class Flow:
    """A flow: a DAG of jobs with a release time, a weight and cost data.

    Args:
        jobs: The jobs.
        edges: Precedence arcs ``(i1, i2)``: job ``i1`` finishes before ``i2`` starts.
        release: Release time (>= 0); no job of the flow runs before it.
        weight: Weight for weighted metrics (>= 0).
        deadline: Deadline for the tardy and tardiness metrics.
        sla_times: SLA step times for the SLA metrics.
        sla_heights: SLA step heights (same length as ``sla_times``).
        cost: Explicit cost function for the ``custom`` metric.
        name: Optional label.
    """

    jobs: tuple[Job, ...]
    edges: tuple[tuple[int, int], ...] = ()
    release: float = 0.0
    weight: float = 1.0
    deadline: float | None = None
    sla_times: tuple[float, ...] = ()
    sla_heights: tuple[float, ...] = ()
    cost: CostFunction | None = None
    name: str = ""

    def __post_init__(self) -> None:
        jobs = tuple(self.jobs)
        edges = tuple((int(a), int(b)) for a, b in self.edges)
        object.__setattr__(self, "jobs", jobs)
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "sla_times", tuple(float(x) for x in self.sla_times))
        object.__setattr__(self, "sla_heights", tuple(float(x) for x in self.sla_heights))
        if not jobs:
            raise ValueError("a flow needs at least one job")
        if not (math.isfinite(self.release) and self.release >= 0):
            raise ValueError(f"release must be finite and >= 0, got {self.release}")
        if not (math.isfinite(self.weight) and self.weight >= 0):
            raise ValueError(f"weight must be finite and >= 0, got {self.weight}")
        if len(self.sla_times) != len(self.sla_heights):
            raise ValueError("sla_times and sla_heights must have the same length")
        n = len(jobs)
        for a, b in edges:
            if not (0 <= a < n and 0 <= b < n) or a == b:
                raise ValueError(f"bad edge {(a, b)} for a flow of {n} jobs")
        object.__setattr__(self, "_order", self._topological_order())

    def _topological_order(self) -> tuple[int, ...]:
        """A topological order, smallest index first; raises if the graph has a cycle."""
        graph = nx.DiGraph()
        graph.add_nodes_from(range(len(self.jobs)))
        graph.add_edges_from(self.edges)
        try:
            return tuple(nx.lexicographical_topological_sort(graph))
        except nx.NetworkXUnfeasible:
            raise ValueError("the precedence graph of a flow must be acyclic") from None

    @property
    def n_jobs(self) -> int:
        """Number of jobs."""
        return len(self.jobs)

    @property
    def topological_order(self) -> tuple[int, ...]:
        """Job indices in topological order (smallest available index first)."""
        return self._order

    def _neighbours(self, arcs) -> tuple[tuple[int, ...], ...]:
        """For each job, the sorted heads of the ``(tail, head)`` arcs leaving it."""
        out: list[set[int]] = [set() for _ in self.jobs]
        for a, b in arcs:
            out[a].add(b)
        return tuple(tuple(sorted(s)) for s in out)

    @cached_property
    def predecessors(self) -> tuple[tuple[int, ...], ...]:
        """Each job's immediate predecessors."""
        return self._neighbours((b, a) for a, b in self.edges)

    @cached_property
    def successors(self) -> tuple[tuple[int, ...], ...]:
        """Each job's immediate successors."""
        return self._neighbours(self.edges)

    @cached_property
    def earliest_start(self) -> np.ndarray:
        """``b_i``: the earliest start of each job with unlimited slots (from the flow's start)."""
        b = np.zeros(self.n_jobs)
        finish = np.zeros(self.n_jobs)
        for i in self._order:
            preds = self.predecessors[i]
            b[i] = max((finish[p] for p in preds), default=0.0)
            finish[i] = b[i] + self.jobs[i].duration
        return b

    @cached_property
    def earliest_finish(self) -> np.ndarray:
        """``b_i + s_i / δ_i``."""
        return self.earliest_start + np.array([j.duration for j in self.jobs])

    @cached_property
    def critical_path(self) -> float:
        """The critical-path bound: the longest chain of ``s_i / δ_i``."""
        return float(self.earliest_finish.max())

    @cached_property
    def total_work(self) -> float:
        """``Σ s_i``."""
        return float(sum(j.size for j in self.jobs))

    @cached_property
    def pseudo_jobs(self) -> tuple[PseudoJob, ...]:
        """The chain of pseudo-jobs of Stage 1 (004 §2.1)."""
        b, f = self.earliest_start, self.earliest_finish
        events = np.unique(np.concatenate([b, f]))
        caps = np.array([j.cap for j in self.jobs])
        chain = []
        for u, v in zip(events[:-1], events[1:], strict=True):
            mid = 0.5 * (u + v)
            running = np.flatnonzero((b <= mid) & (mid < f))
            if running.size and v > u:
                members = tuple((int(i), int(caps[i])) for i in running)
                chain.append(PseudoJob(float(u), float(v - u), members))
        return tuple(chain)


@dataclass(frozen=True, eq=False)
class Instance:
    """A set of flows on ``slots`` identical slots.

    Args:
        flows: The flows.
        slots: ``P``, the number of slots (004 §3: 25).
    """

    flows: tuple[Flow, ...]
    slots: int = 25

    def __post_init__(self) -> None:
        flows = tuple(self.flows)
        object.__setattr__(self, "flows", flows)
        if not flows:
            raise ValueError("an instance needs at least one flow")
        if int(self.slots) != self.slots or self.slots < 1:
            raise ValueError(f"slots must be an integer >= 1, got {self.slots}")
        object.__setattr__(self, "slots", int(self.slots))
        for j, flow in enumerate(flows):
            for i, job in enumerate(flow.jobs):
                if job.cap > self.slots:
                    raise ValueError(f"job {(j, i)} has cap {job.cap} > {self.slots} slots")

    @property
    def n_flows(self) -> int:
        """Number of flows."""
        return len(self.flows)

    @property
    def releases(self) -> np.ndarray:
        """Release times ``r_j``."""
        return np.array([f.release for f in self.flows], dtype=float)

    @property
    def volumes(self) -> np.ndarray:
        """Total work ``V_j`` of each flow."""
        return np.array([f.total_work for f in self.flows])

    @property
    def critical_paths(self) -> np.ndarray:
        """Critical-path length of each flow."""
        return np.array([f.critical_path for f in self.flows])

    def job_keys(self) -> list[JobKey]:
        """All job keys, flow by flow."""
        return [(j, i) for j, f in enumerate(self.flows) for i in range(f.n_jobs)]

    def job(self, key: JobKey) -> Job:
        """The job with the given key."""
        return self.flows[key[0]].jobs[key[1]]


@dataclass(frozen=True, eq=False)
class ScheduleResult:
    """A schedule's per-job pieces and the completion times they imply.

    Args:
        job_completion: Completion time of every job.
        flow_completion: Completion time of every flow (max over its jobs).
        pieces: Per job, ``(t_start, t_end, slots)`` pieces in time order.
        name: Which scheduler produced it.
    """

    job_completion: dict[JobKey, float]
    flow_completion: np.ndarray
    pieces: dict[JobKey, list[Piece]]
    name: str = ""


def merge_pieces(pieces: Sequence[Piece], tol: float = 0.0) -> list[Piece]:
    """Sort pieces, drop empty ones and merge contiguous pieces of equal slots."""
    out: list[list[float]] = []
    for t0, t1, s in sorted(pieces):
        if t1 <= t0 or s == 0:
            continue
        if out and out[-1][2] == s and abs(out[-1][1] - t0) <= tol:
            out[-1][1] = t1
        else:
            out.append([t0, t1, s])
    return [(a, b, c) for a, b, c in out]
