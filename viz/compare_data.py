"""What the comparison dashboard shows: schedulers side by side, live or replayed.

A *side* is one scheduler's run. The comparison page draws every side from the same
readings, whichever source they come from:

- :class:`LiveComparison` builds one :class:`~geosim.model.GeoModel` per scheduler on the
  same scenario, seed and overrides, so every side sees the same world and the same jobs
  (common random numbers), and advances them in lockstep: :meth:`~LiveComparison.advance`
  steps each model until its simulated time reaches a common target.
- :class:`Replay` reads saved runs (a comparison directory's runs of one seed, or one run
  directory) and shows them at any sampled time, without running anything.

Both give, per side, a :class:`~viz.dashboard_run.MapFrame` (cluster states, busy
slots, WAN link load and gate utilisation) and :class:`Series` (alive jobs, busy slots,
WAN traffic and the mean flowtime of completed jobs against simulated time), and, per
side other than the first
(the baseline), the paired change of the mean flowtime over the jobs completed under
every side so far (:func:`geosim.experiment.stats.paired_change`, the definition of
``geosim compare`` for one seed).

Link load is a link's busier direction's traffic over its bandwidth, and gate
utilisation a cluster's busier gate direction's traffic over its gate bandwidth, both
over the last sampling interval (``run.record_interval``) as the saved tables hold
them, so a live side and its replay show the same map (the bandwidth is the level in
force over that interval, :func:`~viz.dashboard_run.interval_bandwidth`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Self

import numpy as np
import pandas as pd

from geosim import state
from geosim.errors import GeosimError
from geosim.experiment.stats import paired_change
from geosim.schedulers.spec import parse_specs
from viz.dashboard_run import MapFrame, build_model, load_share, model_frame, step
from viz.data import ComparisonData, Layout, RunData, layout_of, open_results

#: Most schedulers a comparison page shows side by side.
MAX_SIDES = 4
#: Most points of the replayed paired-change line (it is recomputed at each).
PAIRED_POINTS = 400


class TimeColumns:
    """Columns of points in time order, the first named ``time``."""

    time: np.ndarray

    def upto(self, t: float) -> Self:
        """The points at or before ``t``."""
        k = int(np.searchsorted(self.time, t + 1e-9, side="right"))
        return type(self)(*(getattr(self, f.name)[:k] for f in fields(self)))


@dataclass
class Series(TimeColumns):
    """One side's time series, oldest first.

    Attributes:
        time: Simulated time (s) of each point.
        alive: Alive jobs.
        busy: Busy slot shares, % of all slots.
        wan: WAN traffic, MB/s (summed over links and directions).
        mean_flowtime: Mean flowtime (s) of the jobs completed so far (NaN before any).
    """

    time: np.ndarray
    alive: np.ndarray
    busy: np.ndarray
    wan: np.ndarray
    mean_flowtime: np.ndarray


@dataclass
class Paired(TimeColumns):
    """The paired change of the mean flowtime of one side against the baseline, over time.

    Attributes:
        time: Simulated time (s) of each point.
        change: Mean per-job flowtime difference over the baseline's mean flowtime.
        half: Half-width of its 95% interval (batch means; NaN with too few jobs).
        jobs: Jobs completed under every side at that time.
    """

    time: np.ndarray
    change: np.ndarray
    half: np.ndarray
    jobs: np.ndarray


class Rows:
    """Rows of numbers appended one at a time, read as columns without copying.

    Args:
        width: Numbers per row.
    """

    def __init__(self, width: int):
        self._data = np.empty((64, width))
        self.n = 0

    def append(self, *row: float) -> None:
        """Add one row (the store doubles when full)."""
        if self.n == len(self._data):
            self._data = np.concatenate([self._data, np.empty_like(self._data)])
        self._data[self.n] = row
        self.n += 1

    def columns(self) -> list[np.ndarray]:
        """Every column so far, as views."""
        return [self._data[:self.n, i] for i in range(self._data.shape[1])]

    def last(self) -> np.ndarray:
        """The last row."""
        return self._data[self.n - 1]


def paired_now(completion: np.ndarray, arrival: np.ndarray, t: float | None = None
               ) -> tuple[int, list[tuple[float, float]]]:
    """Paired change of each side against the first over jobs completed under all.

    Args:
        completion: Completion time per side (rows) and job (columns, arrival order);
            NaN while unfinished.
        arrival: Arrival time per job.
        t: Count only completions at or before ``t`` (default: all known).

    Returns:
        The number of common jobs, and ``(change, half)`` per side after the first.
    """
    done = ~np.isnan(completion)
    if t is not None:
        done &= completion <= t + 1e-9
    common = done.all(axis=0)
    flow = completion[:, common] - arrival[common]
    return int(common.sum()), [paired_change(flow[k], flow[0])
                               for k in range(1, completion.shape[0])]


def check_sides(labels: Sequence[str], source: str) -> None:
    """Raise a one-line error unless there are 1 to :data:`MAX_SIDES` distinct labels."""
    if len(set(labels)) < len(labels):
        raise GeosimError(f"a scheduler is named twice ({', '.join(labels)})", source=source)
    if not 1 <= len(labels) <= MAX_SIDES:
        raise GeosimError(f"the dashboard compares 2 to {MAX_SIDES} schedulers (got "
                          f"{len(labels)})", source=source)


# ---------------------------------------------------------------------------- live
class LiveComparison:
    """Schedulers run side by side in lockstep on the same world and jobs.

    Its readings (:meth:`series`, :meth:`paired_series`, :meth:`map_frame`,
    :meth:`status`) take a time as :class:`Replay`'s do, and show now whatever it is.

    Args:
        specs: Scheduler specs, the first being the baseline (``NAME[KEY=VALUE,...]``).
        scenario_file: Scenario TOML file.
        seed: The seed of every side.
        load: Factor applied to the scenario's arrival rate.
        overrides: Dotted-key scenario overrides, as ``(key, value)`` pairs.

    Raises:
        GeosimError: A bad scenario, scheduler or parameter (one line).
    """

    def __init__(self, specs: Sequence[str], scenario_file: str, seed: int | str = 1,
                 load: float = 1.0, overrides: Sequence[tuple[str, Any]] = ()):
        parsed = parse_specs(",".join(specs)) if specs else []
        self.labels = [s.label for s in parsed]
        check_sides(self.labels, "--compare")
        self.models = [build_model(scenario_file, spec.label, seed, epsilon=None, beta=None,
                                   load=load, overrides=overrides) for spec in parsed]
        first = self.models[0]
        self.layout: Layout = layout_of(first.world)
        self.dt = float(first.config["run"]["dt"])
        self.n_jobs = first.workload.n_jobs
        self.arrival = np.asarray(first.workload.arrival, dtype=float)
        self._rows = [Rows(5) for _ in self.models]
        self._wan = [0.0] * len(self.models)
        self._paired = [Rows(4) for _ in self.models[1:]]
        self.steps = 0
        self._sample()

    @property
    def time(self) -> float:
        """The common clock: the earliest simulated time of a side still running."""
        times = [m.engine.time for m in self.models if m.running]
        return float(min(times)) if times else max(m.engine.time for m in self.models)

    @property
    def running(self) -> bool:
        """Whether any side can still advance."""
        return any(m.running for m in self.models)

    def advance(self, slots: int = 1) -> None:
        """Advance every running side until its time reaches ``slots`` × ``run.dt`` later.

        A side that jumps past the target (an idle stretch, an event) waits for the
        others; a side whose jobs are all done stops.

        Raises:
            GeosimError: A side's step failed (a stalled run); that side stops.
        """
        target = self.time + max(int(slots), 1) * self.dt
        for model in self.models:
            while model.running and model.engine.time < target - 1e-9:
                step(model)
        self.steps += 1
        self._sample()

    def _sample(self) -> None:
        for k, m in enumerate(self.models):
            e = m.engine
            rows, t = self._rows[k], float(e.time)
            before = rows.last()[0] if rows.n else None
            if before is not None and t <= before:
                continue   # a side that did not move keeps its last point
            wan_mb = state.totals(e)["wan_mb"]
            rate = (wan_mb - self._wan[k]) / (t - before) if before is not None else 0.0
            self._wan[k] = wan_mb
            rows.append(t, len(m.jobs), 100.0 * state.total_busy_slots(e) / m.world.n_slots,
                        rate, m.datacollector.mean_flowtime())
        if self._paired:
            completion = np.stack([m.engine.job_done[:self.n_jobs] for m in self.models])
            n, changes = paired_now(completion, self.arrival)
            for p, (change, half) in zip(self._paired, changes, strict=True):
                p.append(self.time, change, half, n)

    def series(self, k: int, t: float | None = None) -> Series:
        """Side ``k``'s time series so far."""
        return Series(*self._rows[k].columns())

    def paired_series(self, k: int, t: float | None = None) -> Paired:
        """Side ``k``'s (``k >= 1``) paired change against the first side so far."""
        return Paired(*self._paired[k - 1].columns())

    def map_frame(self, k: int, t: float | None = None) -> MapFrame:
        """Side ``k``'s world now (:func:`~viz.dashboard_run.model_frame`)."""
        return model_frame(self.models[k])

    def status(self, k: int, t: float | None = None) -> dict[str, Any]:
        """Side ``k``'s headline numbers now."""
        m = self.models[k]
        _, flow = state.finished_flowtimes(m.engine)
        last = self._rows[k].last()
        return {"time": float(m.engine.time), "arrived": int(m.engine.next_job),
                "alive": len(m.jobs), "done": int(m.jobs_done),
                "mean_flowtime": float(flow.mean()) if flow.size else math.nan,
                "busy": float(last[2]), "wan": float(last[3]), "finished": m.done}


# ---------------------------------------------------------------------------- replay
class Replay:
    """Saved runs of several schedulers (one seed), shown at any sampled time.

    Args:
        runs: The saved runs, the first being the baseline; all of one world and workload.
        where: The results directory, for messages.
        of: How many schedulers the saved comparison has (default: as many as runs).

    Raises:
        GeosimError: No runs, too many, or runs of different worlds or jobs.
    """

    def __init__(self, runs: Sequence[RunData], where: str, of: int | None = None):
        self.labels = [r.name for r in runs]
        #: Schedulers of the saved comparison (some may not be shown).
        self.of = len(self.labels) if of is None else of
        check_sides(self.labels, where)
        self.runs = list(runs)
        self.layout: Layout = runs[0].layout
        jobs = [r.result.jobs.sort_values("job") for r in runs]
        self.arrival = jobs[0]["arrival"].to_numpy(dtype=float)
        for r, j in zip(runs[1:], jobs[1:], strict=True):
            if len(j) != len(self.arrival) or not np.allclose(
                    j["arrival"].to_numpy(dtype=float), self.arrival):
                raise GeosimError(f"the run of {r.name!r} has other jobs than "
                                  f"{self.labels[0]!r}'s: not one comparison", source=where)
        self.completion = np.stack([j["completion"].to_numpy(dtype=float) for j in jobs])
        self.n_jobs = len(self.arrival)
        #: Every sample time of any side, and each side's end.
        self.times = np.unique(np.concatenate([*(r.times for r in runs),
                                               [r.end_time for r in runs]]))
        self._sides = [self._side(r, self.completion[k]) for k, r in enumerate(runs)]
        self.paired = self._paired()

    @property
    def end_time(self) -> float:
        """The last sampled time of any side."""
        return float(self.times[-1])

    def _side(self, run: RunData, completion: np.ndarray) -> dict[str, Any]:
        """One side's per-sample arrays (samples × clusters, samples × links)."""
        table = run.clusters
        times = run.times
        n, layout = len(run.cluster_info), self.layout
        if len(table) != len(times) * n:
            raise GeosimError("the cluster table does not hold every cluster at every "
                              "sample", source=run.where)

        def wide(column: str) -> np.ndarray:
            values = table[column]
            if isinstance(values.dtype, pd.CategoricalDtype):
                values = values.cat.codes
            return values.to_numpy().reshape(len(times), n)

        traffic = np.maximum(wide("egress_mbps"), wide("ingress_mbps"))
        links = run.result.links
        n_links = len(layout.link_u)
        if links is not None and not links.empty and n_links:
            links = links.sort_values(["time", "link"], kind="stable")
            link_times = np.unique(links["time"].to_numpy())
            if len(links) != len(link_times) * n_links:
                raise GeosimError("the link table does not hold every link at every sample",
                                  source=run.where)

            def lwide(column: str) -> np.ndarray:
                return links[column].to_numpy(dtype=float).reshape(len(link_times), n_links)

            bandwidth = lwide("bandwidth")
            bandwidth = np.vstack([bandwidth[:1], bandwidth[:-1]])   # in force over the interval
            load = load_share(np.maximum(lwide("forward_mbps"), lwide("backward_mbps")), bandwidth)
            wan = (lwide("forward_mbps") + lwide("backward_mbps")).sum(axis=1)
            idx = np.clip(np.searchsorted(link_times, times + 1e-9, side="right") - 1, 0, None)
            load, wan = load[idx], wan[idx]
        else:
            load, wan = np.zeros((len(times), n_links)), np.zeros(len(times))
        busy = wide("busy").astype(float)
        grid = self.times[self.times <= run.end_time + 1e-9]
        sample = np.clip(np.searchsorted(times, grid + 1e-9, side="right") - 1, 0, None)
        flow = completion - self.arrival
        done_at = np.sort(completion[~np.isnan(completion)])
        cum = np.concatenate([[0.0], np.cumsum(flow[np.argsort(completion)][:done_at.size])])
        count = np.searchsorted(done_at, grid + 1e-9, side="right")
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(count > 0, cum[count] / count, math.nan)
        arrived = np.searchsorted(np.sort(self.arrival), grid + 1e-9, side="right")
        series = Series(grid.astype(float), (arrived - count).astype(float),
                        100.0 * busy.sum(axis=1)[sample] / layout.slots.sum(), wan[sample],
                        mean)
        return {"times": times, "state": wide("state").astype(np.intp), "busy": busy,
                "gate": load_share(traffic, layout.gate), "load": load, "series": series,
                "arrived": arrived, "count": count}

    def _paired(self) -> list[Paired]:
        out = [Rows(4) for _ in self.labels[1:]]
        if not out:
            return []
        step = max(1, -(-len(self.times) // PAIRED_POINTS))
        grid = self.times[::step]
        if grid[-1] != self.times[-1]:
            grid = np.append(grid, self.times[-1])
        for t in grid:
            n, changes = paired_now(self.completion, self.arrival, float(t))
            for p, (change, half) in zip(out, changes, strict=True):
                p.append(float(t), change, half, n)
        return [Paired(*rows.columns()) for rows in out]

    def _index(self, times: np.ndarray, t: float | None) -> int:
        t = self.end_time if t is None else t
        return max(int(np.searchsorted(times, t + 1e-9, side="right")) - 1, 0)

    def series(self, k: int, t: float | None = None) -> Series:
        """Side ``k``'s time series up to ``t`` (default: all)."""
        s = self._sides[k]["series"]
        return s if t is None else s.upto(t)

    def paired_series(self, k: int, t: float | None = None) -> Paired:
        """Side ``k``'s (``k >= 1``) paired change against the first up to ``t``."""
        p = self.paired[k - 1]
        return p if t is None else p.upto(t)

    def map_frame(self, k: int, t: float | None = None) -> MapFrame:
        """Side ``k``'s world at its last sample at or before ``t`` (default: the end)."""
        side = self._sides[k]
        i = self._index(side["times"], t)
        return MapFrame(float(side["times"][i]), side["state"][i], side["busy"][i],
                        side["load"][i], side["gate"][i])

    def status(self, k: int, t: float | None = None) -> dict[str, Any]:
        """Side ``k``'s headline numbers at ``t`` (or its end, if earlier)."""
        side = self._sides[k]
        s = side["series"]
        i = self._index(s.time, t)
        return {"time": float(s.time[i]), "arrived": int(side["arrived"][i]),
                "alive": int(s.alive[i]), "done": int(side["count"][i]),
                "mean_flowtime": float(s.mean_flowtime[i]), "busy": float(s.busy[i]),
                "wan": float(s.wan[i]), "finished": i == len(s.time) - 1}


def open_replay(directory: str | os.PathLike, labels: Sequence[str] = (),
                seed: int | None = None) -> Replay:
    """The saved runs of a comparison (one seed) or a run directory, for replay.

    Args:
        directory: A comparison directory (``geosim compare``) or a run directory.
        labels: Schedulers of the comparison to show, the first being the baseline
            (default: the comparison's baseline, then the others in order, up to
            :data:`MAX_SIDES`).
        seed: The seed of the runs (default: the comparison's first).

    Raises:
        GeosimError: Not a run or comparison directory, an unknown label or seed, a run
            that was not saved, or more than :data:`MAX_SIDES` labels.
    """
    source = open_results(directory)
    where = str(directory)
    if isinstance(source, RunData):
        if labels or seed is not None:
            raise GeosimError("--compare and --seed choose the runs of a comparison "
                              "directory; this is one run", source=where)
        return Replay([source], where)
    if not isinstance(source, ComparisonData):
        raise GeosimError("a sweep directory holds many comparisons: replay one of its "
                          "cells (its comparison directory cell-<i>)", source=where)
    chosen = list(labels) or default_labels(source)
    for label in chosen:
        if label not in source.labels:
            raise GeosimError(f"no scheduler {label!r} in the comparison "
                              f"({', '.join(source.labels)})", source=where)
    check_sides(chosen, where)
    seed = source.seeds[0] if seed is None else int(seed)
    return Replay([source.load_run(label, seed) for label in chosen], where,
                  of=len(source.labels))


def default_labels(comparison: ComparisonData) -> list[str]:
    """The comparison's baseline, then its other labels in order, up to :data:`MAX_SIDES`."""
    first = comparison.baseline()
    return [first, *[label for label in comparison.labels if label != first]][:MAX_SIDES]
