"""Single-work jobs: the redundancy paper's workload (002 §6).

One task per job, its work drawn from a :class:`WorkDistribution` (there Pareto with b=20,
alpha=2, mean 40), in units where a machine of power 1 runs one unit per second.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from geosim.errors import GeosimError
from geosim.workload.core import Workload, check_count, check_positive, poisson_arrivals

__all__ = ["WorkDistribution", "single_work_jobs"]

_DIST_PARAMS: dict[str, tuple[str, ...]] = {
    "pareto": ("scale", "shape"),
    "exponential": ("mean",),
    "deterministic": ("value",),
    "uniform": ("low", "high"),
}


@dataclass(frozen=True)
class WorkDistribution:
    """A distribution of job work (positive values).

    Kinds and parameters:
        ``pareto``: ``scale`` b > 0, ``shape`` alpha > 0; support [b, inf),
        P(X > x) = (b/x)**alpha, mean alpha*b/(alpha-1) (infinite if alpha <= 1).
        ``exponential``: ``mean`` > 0.
        ``deterministic``: ``value`` > 0.
        ``uniform``: ``low`` > 0, ``high`` >= low.

    Attributes:
        kind: One of the kinds above.
        params: Parameter name -> value.

    Raises:
        GeosimError: On an unknown kind or a missing, unknown or out-of-range parameter.
    """

    kind: str
    params: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in _DIST_PARAMS:
            raise GeosimError(f"unknown work distribution {self.kind!r} "
                              f"(choose from {', '.join(_DIST_PARAMS)})")
        wanted = _DIST_PARAMS[self.kind]
        given = dict(self.params)
        for name in given:
            if name not in wanted:
                raise GeosimError(f"{self.kind} distribution has no parameter {name!r} "
                                  f"(parameters: {', '.join(wanted)})")
        clean: dict[str, float] = {}
        for name in wanted:
            if name not in given:
                raise GeosimError(f"{self.kind} distribution needs parameter {name!r}")
            clean[name] = check_positive(given[name], f"{self.kind} parameter {name!r}")
        if self.kind == "uniform" and clean["high"] < clean["low"]:
            raise GeosimError(f"uniform parameter 'high' ({clean['high']:g}) must be >= "
                              f"'low' ({clean['low']:g})")
        object.__setattr__(self, "params", clean)

    @classmethod
    def pareto(cls, scale: float, shape: float) -> WorkDistribution:
        """Pareto with support [scale, inf) and tail index ``shape``."""
        return cls("pareto", {"scale": scale, "shape": shape})

    @classmethod
    def exponential(cls, mean: float) -> WorkDistribution:
        """Exponential with the given mean."""
        return cls("exponential", {"mean": mean})

    @classmethod
    def deterministic(cls, value: float) -> WorkDistribution:
        """Return ``value`` every time."""
        return cls("deterministic", {"value": value})

    @classmethod
    def uniform(cls, low: float, high: float) -> WorkDistribution:
        """Uniform on [low, high]."""
        return cls("uniform", {"low": low, "high": high})

    @property
    def mean(self) -> float:
        """The distribution's mean (``inf`` for a Pareto with shape <= 1)."""
        p = self.params
        if self.kind == "pareto":
            a = p["shape"]
            return math.inf if a <= 1 else a * p["scale"] / (a - 1)
        if self.kind == "exponential":
            return p["mean"]
        if self.kind == "deterministic":
            return p["value"]
        return 0.5 * (p["low"] + p["high"])

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n`` values.

        Args:
            n: Number of values.
            rng: Random generator.

        Returns:
            float64[n], all > 0.
        """
        n = check_count(n, "sample size")
        p = self.params
        if self.kind == "pareto":
            # numpy's pareto is the Lomax (Pareto II) law; shift and scale to Pareto I.
            return p["scale"] * (1.0 + rng.pareto(p["shape"], n))
        if self.kind == "exponential":
            return rng.exponential(p["mean"], n)
        if self.kind == "deterministic":
            return np.full(n, p["value"])
        return rng.uniform(p["low"], p["high"], n)


def single_work_jobs(n_jobs: int, arrival_rate: float, work: WorkDistribution,
                     rng: np.random.Generator, input_cluster: int | None = None, *,
                     start: float = 0.0) -> Workload:
    """Generate the redundancy paper's jobs (002 §6): one task per job, Poisson arrivals.

    The caller chooses units so that a machine of power 1 runs one unit of work per second.

    Args:
        n_jobs: Number of jobs.
        arrival_rate: Poisson arrival rate, jobs per second.
        work: Distribution of each job's work.
        rng: Random generator (arrivals are drawn first, then work).
        input_cluster: If given, each task has one raw input of size = its work (MB) stored
            there; otherwise no raw input.
        start: Time origin of the arrivals.

    Returns:
        A workload with type names ``("job",)`` and no edges.
    """
    arrival = poisson_arrivals(n_jobs, arrival_rate, rng, start)
    n = arrival.shape[0]
    w = work.sample(n, rng)
    i0 = np.zeros(0, dtype=np.int64)
    if input_cluster is None:
        raw_ptr, raw_cluster, raw_size = np.zeros(n + 1, dtype=np.int64), i0, np.zeros(0)
    else:
        c = check_count(input_cluster, "input_cluster")
        raw_ptr = np.arange(n + 1, dtype=np.int64)
        raw_cluster, raw_size = np.full(n, c, dtype=np.int64), w.copy()
    return Workload(arrival=arrival, weight=np.ones(n), task_ptr=np.arange(n + 1),
                    task_work=w, task_type=np.zeros(n, dtype=np.int32), type_names=("job",),
                    edge_src=i0, edge_dst=i0, edge_size=np.zeros(0), raw_ptr=raw_ptr,
                    raw_cluster=raw_cluster, raw_size=raw_size)
