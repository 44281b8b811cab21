"""Random instances in the manner of 004 §3's simulation experiments.

What 004 §3 states, and :func:`generate_instance` follows: ``P = 25`` slots; every flow is
present at time 0; the number of flows is uniform on {5, …, 20} and the number of jobs of a
flow uniform on {2, …, 20}; the jobs are in topological order and each forward pair
``(i1 < i2)`` is an arc with probability 0.5; every job without successors (other than the
last) then precedes the flow's last job; weights are uniform on {1, …, 10}; a deadline is
feasible (at least the flow's own lower bound ``Q_j``) plus a uniformly random extra time; SLAs
have at most 5 steps, with heights drawn like the weights and successive step times drawn
like the deadline.

What 004 leaves open, chosen here (all are :class:`GeneratorConfig` fields):

- *Big, tall and wide* (004: "sampling from a variety of parameters governed whether the flow
  itself was big in volume, and also whether the jobs in that flow were tall and/or wide
  (having maximum width equal to the number of slots)"): per flow, *big* with probability
  ``big_probability`` = 0.25 multiplies every job's running time by ``big_factor`` = 4;
  *tall* with probability ``tall_probability`` = 0.5 draws each job's running time at full
  width ``s_i / δ_i`` from U[``tall_duration``] = U[4, 16] instead of U[``short_duration``] =
  U[1, 4]; *wide* with probability ``wide_probability`` = 0.5 gives every job ``δ_i = P``,
  otherwise ``δ_i`` is uniform on {``narrow_cap``} = {1, …, 12}. The size is
  ``s_i = δ_i · running time``.
- *Deadline slack*: ``d_j = Q_j + U[0, deadline_slack · W]`` with ``W = Σ_j V_j / P`` the
  squashed area of the whole experiment and ``deadline_slack`` = 0.5, so that some flows can
  be on time and some cannot.
- *SLA steps*: the number of steps is uniform on {``sla_steps``} = {1, …, 5}; the first step
  time is drawn like a deadline, each next one adds U[0, ``sla_gap`` · W] with ``sla_gap`` =
  0.25; step heights are uniform on {``sla_heights``} = {1, …, 10} (the unit-SLA metric uses
  the same times with unit heights).

Draws come from a ``numpy.random.Generator`` (or a seed for ``numpy.random.default_rng``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from geosim.flowflex.model import Flow, Instance, Job


@dataclass(frozen=True)
class GeneratorConfig:
    """Parameters of :func:`generate_instance` (defaults: 004 §3 and the module docstring).

    Args:
        slots: ``P``.
        flows: Inclusive range of the number of flows.
        jobs: Inclusive range of the number of jobs per flow.
        edge_probability: Probability of each forward arc.
        weights: Inclusive range of the integer weights.
        big_probability: Probability that a flow is big.
        big_factor: Running-time multiplier of a big flow's jobs.
        tall_probability: Probability that a flow's jobs are tall.
        wide_probability: Probability that a flow's jobs are wide (cap ``P``).
        short_duration: Range of a job's running time at full width (not tall).
        tall_duration: Range of a tall job's running time at full width.
        narrow_cap: Inclusive range of a job's cap when its flow is not wide.
        deadline_slack: Extra deadline time, as a fraction of the experiment's squashed area.
        sla_steps: Inclusive range of the number of SLA steps.
        sla_heights: Inclusive range of the integer SLA step heights.
        sla_gap: Extra time between SLA steps, as a fraction of the squashed area.
    """

    slots: int = 25
    flows: tuple[int, int] = (5, 20)
    jobs: tuple[int, int] = (2, 20)
    edge_probability: float = 0.5
    weights: tuple[int, int] = (1, 10)
    big_probability: float = 0.25
    big_factor: float = 4.0
    tall_probability: float = 0.5
    wide_probability: float = 0.5
    short_duration: tuple[float, float] = (1.0, 4.0)
    tall_duration: tuple[float, float] = (4.0, 16.0)
    narrow_cap: tuple[int, int] = (1, 12)
    deadline_slack: float = 0.5
    sla_steps: tuple[int, int] = (1, 5)
    sla_heights: tuple[int, int] = (1, 10)
    sla_gap: float = 0.25

    def __post_init__(self) -> None:
        for name in ("flows", "jobs", "weights", "narrow_cap", "sla_steps", "sla_heights"):
            lo, hi = getattr(self, name)
            if not 1 <= lo <= hi:
                raise ValueError(f"{name} must be an integer range with 1 <= lo <= hi")
        for name in ("short_duration", "tall_duration"):
            lo, hi = getattr(self, name)
            if not 0 < lo <= hi:
                raise ValueError(f"{name} must satisfy 0 < lo <= hi")
        if self.slots < 1 or self.narrow_cap[0] > self.slots:
            raise ValueError("slots must be >= 1 and >= the smallest narrow cap")
        for name in ("edge_probability", "big_probability", "tall_probability",
                     "wide_probability"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be a probability")
        if self.big_factor <= 0 or self.deadline_slack < 0 or self.sla_gap < 0:
            raise ValueError("big_factor must be > 0 and the slacks >= 0")


def _uniform_int(rng: np.random.Generator, bounds: tuple[int, int], size: int | None = None):
    return rng.integers(bounds[0], bounds[1] + 1, size=size)


def generate_dag(rng: np.random.Generator, n: int, p: float) -> list[tuple[int, int]]:
    """004 §3's flow DAG: forward arcs with probability ``p``, every sink before the last job."""
    draws = rng.random((n, n)) < p
    edges = [(a, b) for a in range(n) for b in range(a + 1, n) if draws[a, b]]
    has_succ = {a for a, _ in edges}
    edges += [(a, n - 1) for a in range(n - 1) if a not in has_succ]
    return edges


def _jobs(rng: np.random.Generator, cfg: GeneratorConfig) -> tuple[list[Job], list]:
    n = int(_uniform_int(rng, cfg.jobs))
    big = rng.random() < cfg.big_probability
    tall = rng.random() < cfg.tall_probability
    wide = rng.random() < cfg.wide_probability
    lo, hi = cfg.tall_duration if tall else cfg.short_duration
    if wide:
        caps = np.full(n, cfg.slots)
    else:
        caps = _uniform_int(rng, (cfg.narrow_cap[0], min(cfg.narrow_cap[1], cfg.slots)), n)
    durations = rng.uniform(lo, hi, n) * (cfg.big_factor if big else 1.0)
    jobs = [Job(size=float(c * d), cap=int(c)) for c, d in zip(caps, durations, strict=True)]
    return jobs, generate_dag(rng, n, cfg.edge_probability)


def generate_instance(seed: int | np.random.Generator | None = None,
                      config: GeneratorConfig | None = None) -> Instance:
    """One experiment of 004 §3: flows with weights, deadlines and SLA steps, all at time 0.

    Args:
        seed: A ``numpy.random.Generator``, or a seed for ``numpy.random.default_rng``.
        config: Distribution parameters.

    Returns:
        The instance; every flow carries a weight, a deadline and SLA steps, so every metric
        of 004 Tables 1–2 applies to it.
    """
    rng = np.random.default_rng(seed)
    cfg = config or GeneratorConfig()
    m = int(_uniform_int(rng, cfg.flows))
    drafts = [_jobs(rng, cfg) for _ in range(m)]
    bare = [Flow(jobs=tuple(jobs), edges=tuple(edges)) for jobs, edges in drafts]
    area = sum(f.total_work for f in bare) / cfg.slots
    flows = []
    for j, f in enumerate(bare):
        q = max(f.critical_path, f.total_work / cfg.slots)
        weight = float(_uniform_int(rng, cfg.weights))
        deadline = q + rng.uniform(0.0, cfg.deadline_slack * area)
        steps = int(_uniform_int(rng, cfg.sla_steps))
        first = q + rng.uniform(0.0, cfg.deadline_slack * area)
        times = first + np.concatenate([[0.0], np.cumsum(
            rng.uniform(0.0, cfg.sla_gap * area, steps - 1))])
        heights = _uniform_int(rng, cfg.sla_heights, steps).astype(float)
        flows.append(Flow(jobs=f.jobs, edges=f.edges, weight=weight, deadline=float(deadline),
                          sla_times=tuple(times.tolist()), sla_heights=tuple(heights.tolist()),
                          name=f"flow{j}"))
    return Instance(flows=tuple(flows), slots=cfg.slots)
