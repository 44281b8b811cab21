"""The speedup function of redundant execution: g(r, t) of 002 and s(r) of 000.

002 §3 models machine ``i``'s service as a process with stationary increments
``S_i(t, τ]`` of unit mean rate and peak rate Δ. A job run as ``r`` redundant copies and
checkpointed at the end of an interval of length ``t`` receives the service of the most
advanced copy, and Assumption 2 replaces it by its mean::

    g(r, t) = E[ max_{i=1..r} S_i(0, t] ]                       (002, eq. 1)

Lemma 1: ``g(r, t)`` is concave in ``r``. Lemma 2: ``g(r, t) ≤ min(Δ t, r t)`` and
``g(1, t) = t``. 000 §III-A defines the task-level speedup ``s(r) = E[T_1] / E[T_r]``, where
``T_r`` is the minimum duration of ``r`` i.i.d. copies; for Pareto(μ, α) durations it is
``(rα − 1) / (r(α − 1))``.

In geosim a machine is a slot, and its service process is the scenario's availability
process (002 §6; :func:`geosim.world.build_world`, :class:`geosim.processes.AlternatingRenewal`):
available periods (AP) of length Gamma(``available_shape``, ``available_scale``) at a rate
drawn from U[``available_rate``], alternating with unavailable periods (UP) of length
Gamma(``unavailable_shape``, ``unavailable_scale``) at a rate drawn from
U[``unavailable_rate``]. With ``availability.normalise`` the rates are divided by the
long-run mean rate, so the mean rate is 1 as 002 assumes. With availability disabled the
rate is 1 throughout, so ``g(r, t) = t`` for every ``r``.

Service is reported in **unit-speed seconds**: the slot's VM power, which multiplies the
rate in a run, is left out (in the 002 §6 setting, ``redundancy-gamma.toml``, it is 1).

Functions:

- :func:`service_increments`: i.i.d. draws of ``S(τ, τ+t]`` in the stationary regime.
- :func:`estimate_g` and :func:`speedup_table`: Monte-Carlo ``g(r, t)`` with standard errors.
- :func:`pareto_speedup` and :func:`duration_speedup`: 000's ``s(r)``, closed form and
  Monte-Carlo for any duration distribution.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import gammaln

from geosim.scenario import Scenario, load_scenario
from geosim.world import availability_rates

#: Draws i.i.d. durations: ``sampler(rng, size)`` returns an array of shape ``size``.
DurationSampler = Callable[[np.random.Generator, tuple[int, int]], np.ndarray]

#: Estimators of the expected maximum (or minimum) of ``r`` of a window's i.i.d. values.
ESTIMATORS = ("subsets", "first")

#: Largest number of phase draws held in memory at once by :func:`service_increments`.
_MAX_BLOCK = 1 << 22


@dataclass(frozen=True)
class ServiceProcess:
    """A slot's service (speed-factor) process: alternating AP and UP (002 §6).

    Attributes:
        available_shape: Gamma shape ``k`` of AP lengths.
        available_scale: Gamma scale ``θ`` of AP lengths (s).
        unavailable_shape: Gamma shape of UP lengths.
        unavailable_scale: Gamma scale of UP lengths (s).
        available_rate: ``(lo, hi)`` of the uniform AP rate, before normalisation.
        unavailable_rate: ``(lo, hi)`` of the uniform UP rate, before normalisation.
        factor: Normalisation factor multiplying every rate (1 without normalisation).
    """

    available_shape: float
    available_scale: float
    unavailable_shape: float
    unavailable_scale: float
    available_rate: tuple[float, float]
    unavailable_rate: tuple[float, float]
    factor: float = 1.0

    @property
    def mean_available(self) -> float:
        """Mean AP length (s)."""
        return self.available_shape * self.available_scale

    @property
    def mean_unavailable(self) -> float:
        """Mean UP length (s)."""
        return self.unavailable_shape * self.unavailable_scale

    @property
    def mean_cycle(self) -> float:
        """Mean length of one AP + UP cycle (s)."""
        return self.mean_available + self.mean_unavailable

    @property
    def available_fraction(self) -> float:
        """Long-run fraction of time in an AP, E[AP] / (E[AP] + E[UP]) (renewal-reward)."""
        return self.mean_available / self.mean_cycle

    @property
    def mean_rate(self) -> float:
        """Long-run mean rate (1 when normalised; then ``g(1, t) = t``, 002 Lemma 2)."""
        p = self.available_fraction
        return self.factor * (p * float(np.mean(self.available_rate))
                              + (1 - p) * float(np.mean(self.unavailable_rate)))

    @property
    def peak_rate(self) -> float:
        """Δ of 002 §3: the largest rate the process can take (largest AP/UP rate × factor)."""
        return self.factor * max(self.available_rate[1], self.unavailable_rate[1])

    def increments(self, t: float, n: int, rng: np.random.Generator,
                   burn_in: float | None = None) -> np.ndarray:
        """Return ``n`` independent draws of the service over one window of length ``t``.

        Each draw is a fresh, independent path. With ``burn_in=None`` the path starts in
        the exact equilibrium of the alternating renewal process, and the window is
        ``(0, t]``. Otherwise it starts a fresh AP at time 0, as a slot does in geosim, and
        the window is ``(burn_in, burn_in + t]``. See :func:`service_increments`.

        Args:
            t: Window length (s).
            n: Number of paths.
            rng: Source of every random draw.
            burn_in: None for the equilibrium start, or the window's start (s).

        Returns:
            Array of shape ``(n,)``: ``S(a, a + t]`` in unit-speed seconds.
        """
        shape = np.array([self.unavailable_shape, self.available_shape])
        scale = np.array([self.unavailable_scale, self.available_scale])
        lo = np.array([self.unavailable_rate[0], self.available_rate[0]])
        hi = np.array([self.unavailable_rate[1], self.available_rate[1]])
        a = 0.0 if burn_in is None else float(burn_in)
        b = a + t

        # First phase (kind 1 = AP, 0 = UP).
        if burn_in is None:
            # Equilibrium: the phase covering time 0 is an AP with probability
            # E[AP] / (E[AP] + E[UP]); its total length is length-biased, which for a
            # Gamma(k, θ) is Gamma(k + 1, θ); the time left in it is a uniform fraction of
            # that; its rate is drawn independently of its length, as in every phase.
            kind = (rng.random(n) < self.available_fraction).astype(np.int64)
            length = rng.random(n) * rng.gamma(shape[kind] + 1.0, scale[kind])
        else:
            kind = np.ones(n, dtype=np.int64)
            length = rng.gamma(shape[kind], scale[kind])
        level = rng.uniform(lo[kind], hi[kind])
        acc = level * np.clip(np.minimum(length, b) - a, 0.0, None)
        pos = length
        kind = 1 - kind

        # Later phases alternate, drawn in rounds of k phases for the paths not yet past b.
        active = np.flatnonzero(pos < b)
        while active.size:
            remaining = float(np.mean(b - pos[active]))
            k = max(4, math.ceil(3.0 * remaining / self.mean_cycle) + 4)
            rows = max(1, _MAX_BLOCK // k)
            for start in range(0, active.size, rows):
                idx = active[start:start + rows]
                kinds = (kind[idx, None] + np.arange(k)) % 2
                lengths = rng.gamma(shape[kinds], scale[kinds])
                levels = rng.uniform(lo[kinds], hi[kinds])
                ends = pos[idx, None] + np.cumsum(lengths, axis=1)
                starts = ends - lengths
                overlap = np.minimum(ends, b) - np.maximum(starts, a)
                acc[idx] += np.sum(levels * np.clip(overlap, 0.0, None), axis=1)
                pos[idx] = ends[:, -1]
            kind[active] = (kind[active] + k) % 2
            active = active[pos[active] < b]
        return acc * self.factor


def service_process(scenario: Scenario | str | os.PathLike | Mapping[str, Any]
                    ) -> ServiceProcess | None:
    """Return the scenario's slot service process, or None when availability is disabled.

    The normalisation is geosim's (002 §6): every rate is divided by the long-run mean
    rate ``(E[AP]·E[r_AP] + E[UP]·E[r_UP]) / (E[AP] + E[UP])`` when
    ``availability.normalise`` is on and that mean is positive.

    Args:
        scenario: A :class:`~geosim.scenario.Scenario`, a scenario file or a scenario dict.
    """
    av = _scenario(scenario)["availability"]
    if not av["enabled"]:
        return None
    on, off, factor = availability_rates(av)
    return ServiceProcess(float(av["available_shape"]), float(av["available_scale"]),
                          float(av["unavailable_shape"]), float(av["unavailable_scale"]),
                          on, off, factor)


def peak_rate(scenario: Scenario | str | os.PathLike | Mapping[str, Any]) -> float:
    """Return Δ, the peak rate of a slot's service process (002 §3; 1 without availability).

    It is the largest available rate times the normalisation factor, so
    ``S(τ, τ+t] ≤ Δ t`` surely (002 Lemma 2).
    """
    proc = service_process(scenario)
    return 1.0 if proc is None else proc.peak_rate


def service_increments(scenario: Scenario | str | os.PathLike | Mapping[str, Any], t: float,
                       n_machines: int, n_windows: int, seed: Any = 0,
                       burn_in: float | None = None) -> np.ndarray:
    """Draw the service machines receive in windows of length ``t`` (002 §3, ``S_i(τ, τ+t]``).

    Every entry is an independent path of the scenario's slot service process: machines
    are independent (002 §3) and windows are independent of each other. Vectorised over
    paths; phases are drawn in blocks, and the loop runs over rounds of phases, never over
    samples.

    Stationarity: a geosim slot starts a fresh AP at time 0, so its increments are not
    stationary at first. By default (``burn_in=None``) each path instead starts in the
    exact equilibrium of the alternating renewal process: the phase at time 0 is an AP
    with probability E[AP] / (E[AP] + E[UP]), its total length is length-biased
    (Gamma(k + 1, θ) for Gamma(k, θ) periods), the time left in it is a uniform fraction of
    that, and its rate is uniform as in any phase. The increments are then exactly
    stationary, with no burn-in bias and no time spent simulating one, and
    ``E[S(τ, τ+t]] = mean_rate · t`` exactly (``= t`` when normalised). Passing a number
    as ``burn_in`` starts each path as geosim does and returns ``S(burn_in, burn_in + t]``:
    ``burn_in=0`` gives the service of a slot at the start of a run, and a burn-in of many
    mean cycles (E[AP] + E[UP], about 40 s in 002 §6) approaches the equilibrium.

    Args:
        scenario: A :class:`~geosim.scenario.Scenario`, a scenario file or a scenario dict.
        t: Window length (s), > 0.
        n_machines: Machines per window (columns), ≥ 1.
        n_windows: Windows (rows), ≥ 1.
        seed: Seed of ``np.random.default_rng``, the only source of randomness.
        burn_in: None for the equilibrium start (default), or the start of the window (s)
            on paths that begin with a fresh AP at time 0.

    Returns:
        Array of shape ``(n_windows, n_machines)`` in unit-speed seconds (VM power is left
        out). Every entry equals ``t`` when availability is disabled.

    Raises:
        ValueError: An argument is out of range.
    """
    t = _positive("t", t)
    n_machines = _count("n_machines", n_machines, 1)
    n_windows = _count("n_windows", n_windows, 1)
    if burn_in is not None:
        burn_in = _finite("burn_in", burn_in, lo=0.0)
    proc = service_process(scenario)
    if proc is None:
        return np.full((n_windows, n_machines), t)
    rng = np.random.default_rng(seed)
    return proc.increments(t, n_windows * n_machines, rng, burn_in).reshape(n_windows, n_machines)


@dataclass(frozen=True)
class SpeedupEstimate:
    """Monte-Carlo estimates of ``g(r, t)`` at one ``t`` (002 Assumption 2).

    Attributes:
        r: Redundancy levels.
        t: Interval length (s).
        g: Estimated ``g(r, t)`` per ``r``, in unit-speed seconds.
        stderr: Standard error of each estimate.
        peak_rate: Δ of the service process (002 §3).
        samples: Independent windows the estimates average over.
        estimator: ``"subsets"`` or ``"first"`` (see :func:`estimate_g`).
    """

    r: np.ndarray
    t: float
    g: np.ndarray
    stderr: np.ndarray
    peak_rate: float
    samples: int
    estimator: str

    @property
    def speedup(self) -> np.ndarray:
        """``g(r, t) / t``: the mean service rate of ``r`` redundant copies."""
        return self.g / self.t

    @property
    def bound(self) -> np.ndarray:
        """002 Lemma 2's bound ``min(Δ t, r t)``."""
        return np.minimum(self.peak_rate * self.t, self.r * self.t)

    def to_frame(self) -> pd.DataFrame:
        """Return columns r, t, g, stderr, speedup (= g/t), bound (Lemma 2), one row per r."""
        return pd.DataFrame({"r": self.r, "t": self.t, "g": self.g, "stderr": self.stderr,
                             "speedup": self.speedup, "bound": self.bound})


def estimate_g(scenario: Scenario | str | os.PathLike | Mapping[str, Any], r: Any, t: float,
               samples: int = 20000, seed: Any = 0, estimator: str = "subsets",
               burn_in: float | None = None) -> SpeedupEstimate:
    """Estimate ``g(r, t) = E[max_{i≤r} S_i(0, t]]`` (002 §3, Assumption 2).

    One sample of ``samples`` independent windows of ``max(r)`` independent machines
    (:func:`service_increments`) serves every ``r`` (common random numbers):

    - ``"subsets"`` (default): per window, the mean of the maximum over *every* subset of
      ``r`` of its machines, ``Σ_k x_(k) C(k−1, r−1) / C(n, r)`` with ``x_(k)`` the window's
      sorted values. It is unbiased and, for every sample, exactly concave and
      non-decreasing in ``r`` (002 Lemma 1) and below ``min(Δ t, r·ĝ(1, t))`` (Lemma 2);
      it also has a lower variance than ``"first"``.
    - ``"first"``: per window, the maximum over its first ``r`` machines. Unbiased and
      non-decreasing in ``r``, but concave only up to sampling noise.

    Standard errors are the standard deviation of the per-window values over
    ``sqrt(samples)``; windows are i.i.d.

    Args:
        scenario: A :class:`~geosim.scenario.Scenario`, a scenario file or a scenario dict.
        r: Redundancy level(s): an integer ≥ 1 or an array of them.
        t: Interval length (s), > 0.
        samples: Independent windows, ≥ 2.
        seed: Seed of ``np.random.default_rng``.
        estimator: ``"subsets"`` or ``"first"``.
        burn_in: As in :func:`service_increments` (None: stationary increments).

    Returns:
        The estimates, in the order of ``r``, with Δ.

    Raises:
        ValueError: An argument is out of range.
    """
    rs = _redundancy("r", r)
    t = _positive("t", t)
    samples = _count("samples", samples, 2)
    _check_estimator(estimator)
    x = service_increments(scenario, t, int(rs.max()), samples, seed, burn_in)
    per_window = _expected_max(x, rs, estimator)
    g, stderr = _mean_and_stderr(per_window)
    return SpeedupEstimate(rs, t, g, stderr, peak_rate(scenario), samples, estimator)


def speedup_table(scenario: Scenario | str | os.PathLike | Mapping[str, Any], rs: Any, ts: Any,
                  samples: int = 20000, seed: Any = 0, estimator: str = "subsets",
                  burn_in: float | None = None) -> pd.DataFrame:
    """Estimate ``g(r, t)`` over a grid of ``r`` and ``t`` (002 §3).

    Each ``t`` is one call of :func:`estimate_g` with the same seed, so all ``r`` at one
    ``t`` share their sample.

    Args:
        scenario: A :class:`~geosim.scenario.Scenario`, a scenario file or a scenario dict.
        rs: Redundancy levels (integers ≥ 1).
        ts: Interval lengths (s), each > 0.
        samples: Independent windows per ``t``, ≥ 2.
        seed: Seed of ``np.random.default_rng``.
        estimator: ``"subsets"`` or ``"first"`` (see :func:`estimate_g`).
        burn_in: As in :func:`service_increments`.

    Returns:
        Columns r, t, g, stderr, speedup (= g/t), bound (``min(Δ t, r t)``, 002 Lemma 2),
        one row per (t, r), ordered by t then r; Δ is in ``frame.attrs["peak_rate"]``.
    """
    ts = np.atleast_1d(np.asarray(ts, dtype=float))
    if ts.ndim != 1 or ts.size == 0:
        raise ValueError(f"ts must be a non-empty 1-D sequence, got {ts!r}")
    scen = _scenario(scenario)
    frames = [estimate_g(scen, rs, float(t), samples, seed, estimator, burn_in).to_frame()
              for t in ts]
    frame = pd.concat(frames, ignore_index=True)
    frame.attrs["peak_rate"] = peak_rate(scen)
    return frame


def pareto_speedup(r: Any, alpha: float) -> float | np.ndarray:
    """Return 000 §III-A's speedup of ``r`` copies with Pareto(μ, α) durations.

    The minimum of ``r`` i.i.d. Pareto(μ, α) durations is Pareto(μ, rα), of mean
    ``rαμ / (rα − 1)``, so ``s(r) = E[T_1] / E[T_r] = (rα − 1) / (r(α − 1))``, which does not
    depend on μ. ``r`` may be real (000 treats it as continuous).

    Args:
        r: Number of copies, ≥ 1 (scalar or array).
        alpha: Pareto shape, > 1 (so that E[T_1] is finite).

    Returns:
        A float for scalar ``r``, else an array.

    Raises:
        ValueError: ``alpha ≤ 1`` or some ``r < 1``.
    """
    alpha = _finite("alpha", alpha)
    if alpha <= 1:
        raise ValueError(f"alpha must be > 1 for a finite mean duration, got {alpha!r}")
    arr = np.asarray(r, dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr < 1):
        raise ValueError(f"r must be ≥ 1, got {r!r}")
    out = (arr * alpha - 1.0) / (arr * (alpha - 1.0))
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class DurationSpeedup:
    """Monte-Carlo speedup ``s(r) = E[T_1] / E[T_r]`` of ``r`` copies (000 §III-A).

    Attributes:
        r: Numbers of copies.
        speedup: Estimated ``s(r)``.
        stderr: Standard error of each ``s(r)`` (delta method for a ratio of means).
        mean_duration: Estimated ``E[T_r]``, the mean of the minimum of ``r`` durations.
        samples: Independent rows the estimates average over.
        estimator: ``"subsets"`` or ``"first"`` (see :func:`duration_speedup`).
    """

    r: np.ndarray
    speedup: np.ndarray
    stderr: np.ndarray
    mean_duration: np.ndarray
    samples: int
    estimator: str

    def to_frame(self) -> pd.DataFrame:
        """Return columns r, mean_duration, speedup, stderr, one row per r."""
        return pd.DataFrame({"r": self.r, "mean_duration": self.mean_duration,
                             "speedup": self.speedup, "stderr": self.stderr})


def duration_speedup(r: Any, durations: np.ndarray | DurationSampler, samples: int = 100_000,
                     seed: Any = 0, estimator: str = "subsets") -> DurationSpeedup:
    """Estimate 000 §III-A's speedup ``s(r) = E[T_1] / E[min of r i.i.d. durations]``.

    Works for any duration distribution, given either a sample or a sampler. Each row
    holds i.i.d. durations and is one independent sample; every ``r`` uses the same rows
    (common random numbers). ``"subsets"`` averages the minimum over every ``r``-subset of
    a row (unbiased, lower variance); ``"first"`` takes the minimum of the row's first
    ``r`` durations. ``E[T_1]`` is the mean of all durations in the rows.

    Args:
        r: Number(s) of copies: integers ≥ 1.
        durations: Either an array of shape ``(n, r_max)`` of i.i.d. durations, with
            ``n ≥ 2`` and ``r_max ≥ max(r)``, or a callable ``sampler(rng, size)`` returning
            an array of shape ``size = (samples, max(r))``.
        samples: Rows to draw with a sampler, ≥ 2 (ignored for an array).
        seed: Seed of ``np.random.default_rng`` passed to the sampler.
        estimator: ``"subsets"`` or ``"first"``.

    Returns:
        The estimates in the order of ``r``. The standard error uses the delta method on
        the per-row ratio; it needs a finite variance of the durations (e.g. α > 2 for
        Pareto), otherwise the estimate still converges but slowly and the error is
        unreliable.

    Raises:
        ValueError: An argument is out of range or the durations have the wrong shape.
    """
    rs = _redundancy("r", r)
    _check_estimator(estimator)
    r_max = int(rs.max())
    if callable(durations):
        samples = _count("samples", samples, 2)
        x = np.asarray(durations(np.random.default_rng(seed), (samples, r_max)), dtype=float)
        if x.shape != (samples, r_max):
            raise ValueError(f"sampler returned shape {x.shape}, expected {(samples, r_max)}")
    else:
        x = np.asarray(durations, dtype=float)
        if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < r_max:
            raise ValueError(f"durations must have shape (n >= 2, r_max >= {r_max}), "
                             f"got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("durations must be finite")
    row_mean = x.mean(axis=1)
    row_min = -_expected_max(-x, rs, estimator)  # (n, len(rs))
    m1 = row_mean.mean()
    mr = row_min.mean(axis=0)
    s = m1 / mr
    # Delta method for a ratio of means of the same rows: z = (T1 − s·Tr) / E[Tr].
    z = (row_mean[:, None] - s * row_min) / mr
    stderr = z.std(axis=0, ddof=1) / math.sqrt(x.shape[0])
    return DurationSpeedup(rs, s, stderr, mr, x.shape[0], estimator)


# --- helpers -----------------------------------------------------------------------------


def _expected_max(x: np.ndarray, rs: np.ndarray, estimator: str) -> np.ndarray:
    """Per row of ``x``, estimate E[max of r of the row's i.i.d. values] for every r.

    Returns an array of shape ``(rows, len(rs))``.
    """
    if estimator == "first":
        return np.maximum.accumulate(x, axis=1)[:, rs - 1]
    n = x.shape[1]
    xs = np.sort(x, axis=1)
    if n == 1:
        return np.repeat(xs, len(rs), axis=1)
    # Tail form, exact for constant rows: max = x_(1) + Σ_{k≥2} (x_(k) − x_(k−1)) 1{max rank ≥ k},
    # and P(the maximum of a random r-subset has rank ≥ k) = 1 − C(k−1, r) / C(n, r).
    k = np.arange(2, n + 1)[None, :]
    rr = rs[:, None].astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        log_below = gammaln(k) - gammaln(k - rr) - gammaln(n + 1) + gammaln(n - rr + 1)
    q = 1.0 - np.where(k > rr, np.exp(log_below), 0.0)
    return xs[:, :1] + np.diff(xs, axis=1) @ q.T


def _mean_and_stderr(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return values.mean(axis=0), values.std(axis=0, ddof=1) / math.sqrt(values.shape[0])


def _scenario(scenario: Scenario | str | os.PathLike | Mapping[str, Any]) -> Scenario:
    return scenario if isinstance(scenario, Scenario) else load_scenario(scenario)


def _check_estimator(estimator: str) -> None:
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")


def _finite(name: str, value: Any, lo: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or (lo is not None and v < lo):
        bound = "finite" if lo is None else f"finite and >= {lo:g}"
        raise ValueError(f"{name} must be {bound}, got {value!r}")
    return v


def _positive(name: str, value: Any) -> float:
    v = _finite(name, value)
    if v <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return v


def _count(name: str, value: Any, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {value!r}")
    return int(value)


def _redundancy(name: str, value: Any) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(value))
    if (arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iuf"
            or not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)) or np.any(arr < 1)):
        raise ValueError(f"{name} must be an integer >= 1 or a 1-D array of them, got {value!r}")
    return arr.astype(np.int64)
