"""Saved results as the figures read them: runs, comparisons and the world's layout.

A *run directory* is what ``geosim run`` writes (``summary.json`` and the tables); a
*comparison directory* is what ``geosim compare`` writes (``compare.json``,
``summary.csv``, ``runs.csv``, ``per_job.*`` and every run under ``runs/``); a *sweep
directory* is what ``geosim sweep`` writes (``sweep.json``, ``sweep.csv`` and a comparison
directory per cell), read by :func:`geosim.experiment.load_sweep`. Nothing is
simulated again: cluster positions come from the world rebuilt from the saved
``scenario.toml`` and seed, which is cheap and deterministic.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import networkx as nx
import numpy as np
import pandas as pd

from geosim.errors import GeosimError
from geosim.experiment import (
    MANIFEST,
    SWEEP_MANIFEST,
    Comparison,
    Sweep,
    comparison_baseline,
    load_sweep,
    reductions,
    run_path,
)
from geosim.experiment import load_comparison as load_saved_comparison
from geosim.results import CLUSTER_STATES, Result, load_result
from geosim.topology import TIERS

if TYPE_CHECKING:
    from geosim.world import World

#: Most copies (one bar each) of the job a Gantt chart shows by default
#: (:meth:`RunData.default_job`); up to this many, each bar is labelled with its cluster.
READABLE_COPIES = 60


@dataclass(frozen=True)
class Layout:
    """Where clusters and links are, from the rebuilt world.

    Attributes:
        x, y: Position of every cluster in the plane (km).
        tier: Tier name of every cluster.
        slots: Slots of every cluster.
        gate: Gate bandwidth of every cluster (MB/s, each direction).
        link_u, link_v: End clusters of every link (``link_u < link_v``).
    """

    x: np.ndarray
    y: np.ndarray
    tier: np.ndarray
    slots: np.ndarray
    gate: np.ndarray
    link_u: np.ndarray
    link_v: np.ndarray

    @property
    def n_clusters(self) -> int:
        """Number of clusters."""
        return len(self.x)


@dataclass
class RunData:
    """One saved run and the derived views the figures share.

    Attributes:
        result: The run's tables.
        path: Its directory, if it was read from one.
        name: A short name for titles and file names (the scheduler label).
    """

    result: Result
    path: Path | None = None
    name: str = ""
    _layout: Layout | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.name:
            self.name = str(self.result.meta.get("scheduler") or
                            (self.path.name if self.path else "run"))

    @property
    def where(self) -> str:
        """The run's directory, or its name, for error messages."""
        return str(self.path) if self.path is not None else self.name

    @cached_property
    def clusters(self) -> pd.DataFrame:
        """The cluster time series with typed tier and state columns (also from CSV)."""
        table = self.result.clusters.copy()
        if table.empty:
            raise GeosimError("the run recorded no cluster time series", source=self.where)
        table["tier"] = pd.Categorical(table["tier"].astype(str), categories=list(TIERS))
        table["state"] = pd.Categorical(table["state"].astype(str),
                                        categories=list(CLUSTER_STATES))
        return table.sort_values(["time", "cluster"], kind="stable").reset_index(drop=True)

    @cached_property
    def times(self) -> np.ndarray:
        """Sampling times of the cluster time series (s), increasing."""
        return np.unique(self.clusters["time"].to_numpy())

    @cached_property
    def end_time(self) -> float:
        """Last moment of the run: its simulated time, or the last event in the tables."""
        sim = self.result.summary.get("simulated_seconds")
        ends = [self.times[-1]] if not self.result.clusters.empty else [0.0]
        if sim is not None and np.isfinite(sim):
            ends.append(float(sim))
        return float(max(ends))

    @cached_property
    def cluster_info(self) -> pd.DataFrame:
        """One row per cluster: tier and slots (from the first sample), by cluster id."""
        first = self.clusters.drop_duplicates("cluster").set_index("cluster").sort_index()
        return first[["tier", "slots"]]

    @cached_property
    def order(self) -> np.ndarray:
        """Cluster ids sorted by tier (large first), then slots (most first), then id."""
        info = self.cluster_info
        key = pd.DataFrame({"tier": info["tier"].cat.codes, "slots": -info["slots"],
                            "id": info.index}, index=info.index)
        return key.sort_values(["tier", "slots", "id"]).index.to_numpy()

    def matrix(self, column: str) -> np.ndarray:
        """A cluster column as an array of clusters (in :attr:`order`) × sampling times."""
        table = self.clusters
        values = table[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            values = values.cat.codes
        wide = pd.DataFrame({"time": table["time"], "cluster": table["cluster"],
                             "value": values.to_numpy()}) \
            .pivot(index="cluster", columns="time", values="value")
        return wide.reindex(index=self.order, columns=self.times).to_numpy()

    def sample_at(self, time: float) -> float:
        """The last sampling time at or before ``time`` (the first one if earlier)."""
        i = np.searchsorted(self.times, time + 1e-9, side="right") - 1
        return float(self.times[max(i, 0)])

    def check_time(self, time: float | None) -> float:
        """``time``, or the middle of the run by default, checked to lie in the run.

        Raises:
            GeosimError: The time is outside the run.
        """
        if time is None:
            return float(self.times[0] + self.times[-1]) / 2
        if not (np.isfinite(time) and self.times[0] <= time <= self.end_time):
            raise GeosimError(f"time {time:g} s is outside the run ({self.times[0]:g} to "
                              f"{self.end_time:g} s)", source=self.where)
        return float(time)

    def check_job(self, job: int | None) -> int:
        """``job``, or by default :meth:`default_job`.

        Raises:
            GeosimError: The job does not exist, or the run has no jobs.
        """
        jobs = self.result.jobs
        if job is None:
            return self.default_job()
        if job not in set(jobs["job"].astype(int)):
            raise GeosimError(f"job {job} does not exist (jobs {int(jobs['job'].min())} to "
                              f"{int(jobs['job'].max())})", source=self.where)
        return int(job)

    def default_job(self) -> int:
        """The job a Gantt chart shows by default: a slow one that is still readable.

        Among the finished jobs with at most :data:`READABLE_COPIES` copies (one bar
        each), the one with the largest flowtime; when every finished job has more
        copies, the finished job with the fewest (ties: the larger flowtime). Unfinished
        jobs are only considered when no job finished, and jobs without any copy when no
        job has one. Ties left are broken by the lower job id.

        Raises:
            GeosimError: The run has no jobs.
        """
        jobs = self.result.jobs
        if jobs.empty:
            raise GeosimError("the run has no jobs", source=self.where)
        copies = self.result.copies.groupby("job").size()
        table = pd.DataFrame({
            "job": jobs["job"].astype(int).to_numpy(),
            "copies": jobs["job"].map(copies).fillna(0).astype(int).to_numpy(),
            "finished": jobs["finished"].astype(bool).to_numpy(),
            "flowtime": jobs["flowtime"].astype(float).fillna(-np.inf).to_numpy()})
        started = table[table["copies"] > 0]
        pool = started if len(started) else table
        done = pool[pool["finished"]]
        pool = done if len(done) else pool
        readable = pool[pool["copies"] <= READABLE_COPIES]
        if len(readable):
            best = readable.sort_values(["flowtime", "job"], ascending=[False, True])
        else:
            best = pool.sort_values(["copies", "flowtime", "job"],
                                    ascending=[True, False, True])
        return int(best["job"].iloc[0])

    @property
    def layout(self) -> Layout:
        """Positions of clusters and links, from the world rebuilt from the saved scenario."""
        if self._layout is None:
            self._layout = rebuild_layout(self)
        return self._layout

    @cached_property
    def link_traffic(self) -> tuple[np.ndarray, bool]:
        """Traffic on every link at every sampling time (MB/s, both directions).

        Returns:
            An array of links (in layout order) × sampling times, and whether it was
            recorded per link (True) or, for results saved without the link table,
            estimated as the smaller of its two end clusters' gate traffic (False).
        """
        layout, links = self.layout, self.result.links
        if not len(layout.link_u):
            return np.zeros((0, len(self.times))), True
        if links is not None and not links.empty:
            total = links["forward_mbps"].to_numpy() + links["backward_mbps"].to_numpy()
            wide = pd.DataFrame({"time": links["time"], "link": links["link"], "v": total}) \
                .pivot(index="link", columns="time", values="v")
            wide = wide.reindex(index=np.arange(len(layout.link_u)), columns=self.times)
            return np.nan_to_num(wide.to_numpy()), True
        gate = self.gate_traffic()
        pos = {c: i for i, c in enumerate(self.order)}
        u = np.array([pos[c] for c in layout.link_u], dtype=np.int64)
        v = np.array([pos[c] for c in layout.link_v], dtype=np.int64)
        return np.minimum(gate[u], gate[v]), False

    def gate_traffic(self) -> np.ndarray:
        """Egress plus ingress of every cluster (in :attr:`order`) × sampling time (MB/s)."""
        return self.matrix("egress_mbps") + self.matrix("ingress_mbps")


@dataclass
class ComparisonData:
    """One saved comparison (``geosim compare``).

    Attributes:
        summary: ``summary.csv``: one row per scheduler label.
        runs: ``runs.csv``: one row per run.
        per_job: Per label and job: replication-averaged flowtime and reduction.
        labels: Scheduler labels, in the comparison's order.
        seeds: Seeds of the replications.
        path: The directory, if it was read from one.
        manifest: ``compare.json``, if it was read from one.
        name: A short name for titles (``λ = …/s`` when the arrival rate is known).
        own_baseline: The label the comparison's reductions refer to (its
            ``--baseline``), None if it had none; by default the one
            :func:`geosim.experiment.comparison_baseline` finds in ``manifest`` and
            ``per_job``.
    """

    summary: pd.DataFrame
    runs: pd.DataFrame
    per_job: pd.DataFrame
    labels: list[str]
    seeds: list[int]
    path: Path | None = None
    manifest: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    own_baseline: str | None = None

    def __post_init__(self) -> None:
        if self.own_baseline is None:
            self.own_baseline = comparison_baseline(self.manifest, self.per_job, self.labels)
        if not self.name:
            rate = self.arrival_rate
            self.name = f"λ = {rate:g}/s" if rate is not None else (
                self.path.name if self.path else "comparison")

    @property
    def where(self) -> str:
        """The directory, or the name, for error messages."""
        return str(self.path) if self.path is not None else self.name

    @cached_property
    def scenario(self) -> dict[str, Any]:
        """The comparison's scenario, as parsed TOML (empty if unknown)."""
        text = self.manifest.get("scenario")
        return tomllib.loads(text) if text else {}

    @property
    def arrival_rate(self) -> float | None:
        """The workload's arrival rate (1/s), the comparison's load, if known."""
        rate = self.scenario.get("workload", {}).get("arrival_rate")
        return float(rate) if rate is not None else None

    def run_dir(self, label: str, seed: int) -> Path:
        """Directory of the run of ``label`` with ``seed``.

        Raises:
            GeosimError: Unknown label or seed, or the run is not saved.
        """
        if self.path is None:
            raise GeosimError("the comparison was not saved, so its runs cannot be read",
                              source=self.where)
        path = run_path(self.path, self.manifest, label, seed)
        if path is None:
            raise GeosimError(f"no scheduler {label!r} in the comparison "
                              f"({', '.join(self.labels)})", source=self.where)
        if seed not in self.seeds:
            raise GeosimError(f"no seed {seed} in the comparison "
                              f"({', '.join(map(str, self.seeds))})", source=self.where)
        if not (path / "summary.json").is_file():
            raise GeosimError(f"the run of {label!r} with seed {seed} is not saved (run the "
                              "comparison again to finish it)", source=str(path))
        return path

    def load_run(self, label: str, seed: int) -> RunData:
        """The saved run of ``label`` with ``seed``."""
        return RunData(load_result(self.run_dir(label, seed)), self.run_dir(label, seed),
                       name=label)

    def baseline(self, requested: str | None = None) -> str:
        """The label reductions refer to: ``requested``, the comparison's, or the first.

        The comparison's is :attr:`own_baseline`.

        Raises:
            GeosimError: ``requested`` is not one of the labels.
        """
        if requested is not None:
            if requested not in self.labels:
                raise GeosimError(f"baseline {requested!r} is not among the schedulers "
                                  f"({', '.join(self.labels)})", source=self.where)
            return requested
        if self.own_baseline in self.labels:
            return self.own_baseline
        return self.labels[0]

    def reductions(self, baseline: str) -> pd.DataFrame:
        """Per label and job: ``(F_base - F) / F_base`` against ``baseline``'s flowtimes.

        The ratios are :func:`geosim.experiment.reductions` of :attr:`per_job`.
        """
        table = self.per_job[["label", "job", "flowtime"]].copy()
        table["reduction"] = reductions(table, baseline)
        return table


def load_comparison(directory: str | os.PathLike) -> ComparisonData:
    """Read a comparison directory written by ``geosim compare``.

    The directory is read by :func:`geosim.experiment.load_comparison`.

    Raises:
        GeosimError: It is not a comparison directory or is incomplete.
    """
    saved = load_saved_comparison(directory)
    return ComparisonData(saved.summary, saved.runs, saved.per_job, saved.labels, saved.seeds,
                          saved.path, saved.manifest, own_baseline=saved.baseline)


def as_run(source: RunData | Result | str | os.PathLike) -> RunData:
    """A run from a :class:`RunData`, a :class:`~geosim.results.Result` or a run directory."""
    if isinstance(source, RunData):
        return source
    if isinstance(source, Result):
        return RunData(source)
    path = Path(source)
    if not (path / "summary.json").is_file():
        raise GeosimError("not a geosim run directory (no summary.json)", source=str(path))
    return RunData(load_result(path), path)


def as_comparison(source: ComparisonData | Comparison | str | os.PathLike) -> ComparisonData:
    """A comparison from a :class:`ComparisonData`, a :class:`~geosim.Comparison` or a path."""
    if isinstance(source, ComparisonData):
        return source
    if isinstance(source, Comparison):
        if source.out is not None and (Path(source.out) / MANIFEST).is_file():
            return load_comparison(source.out)
        labels = list(source.summary["label"].astype(str))
        seeds = sorted(set(source.runs["seed"].astype(int)))
        return ComparisonData(source.summary, source.runs, source.per_job, labels, seeds,
                              own_baseline=source.baseline)
    return load_comparison(source)


def as_sweep(source: Sweep | str | os.PathLike) -> Sweep:
    """A sweep from a :class:`~geosim.experiment.Sweep` or a sweep directory."""
    return source if isinstance(source, Sweep) else load_sweep(source)


def open_results(directory: str | os.PathLike) -> RunData | ComparisonData | Sweep:
    """Read a run, a comparison or a sweep directory, whichever it is.

    Raises:
        GeosimError: It is none of them (naming the directory).
    """
    path = Path(directory)
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a directory"
        raise GeosimError(what, source=str(path))
    if (path / SWEEP_MANIFEST).is_file():
        return load_sweep(path)
    if (path / MANIFEST).is_file():
        return load_comparison(path)
    if (path / "summary.json").is_file():
        return as_run(path)
    raise GeosimError("not a geosim results directory (no summary.json of a run, no "
                      f"{MANIFEST} of a comparison, no {SWEEP_MANIFEST} of a sweep)",
                      source=str(path))


# ---------------------------------------------------------------------------- layout
def rebuild_layout(run: RunData) -> Layout:
    """Rebuild the run's world from its saved scenario and seed; keep where things are.

    A relative topology file is looked for beside the results, then beside the scenario
    the run was started from (``meta.json``'s ``source``), then in the working directory.

    Raises:
        GeosimError: No saved scenario, a topology file that cannot be found, or a world
            that does not match the saved tables (the topology file changed since).
    """
    from geosim.scenario import load_scenario
    from geosim.world import build_world, spawn_streams

    result = run.result
    if not result.scenario_toml:
        raise GeosimError("cannot place the clusters: no scenario.toml saved with the run",
                          source=run.where)
    try:
        data = tomllib.loads(result.scenario_toml)
    except tomllib.TOMLDecodeError as exc:
        raise GeosimError(f"malformed scenario.toml: {exc}", source=run.where) from None
    bases = [run.path] if run.path is not None else []
    source = result.meta.get("source")
    if source and source != "<dict>":
        bases.append(Path(source).parent)
    bases.append(Path.cwd())
    topo = data.get("topology", {})
    if topo.get("generator") == "file" and topo.get("file"):
        topo["file"] = str(_find(topo["file"], bases, run.where, "topology file"))
    workload = data.get("workload", {})
    if workload.get("kind") == "wfformat":
        # the world does not depend on the workflows; do not require their files
        workload["kind"], workload["files"] = "montage", []
    seed = int(result.meta.get("seed", data.get("run", {}).get("seed", 1)))
    scenario = load_scenario(data)
    world = build_world(scenario, spawn_streams(seed))
    info = run.cluster_info
    if world.n_clusters != len(info) or not np.array_equal(world.slots[info.index],
                                                            info["slots"].to_numpy()):
        raise GeosimError("the saved scenario does not rebuild the run's world (did its "
                          "topology file change?)", source=run.where)
    return layout_of(world)


def layout_of(world: World) -> Layout:
    """Where the clusters and links of ``world`` are, with their slots and gates."""
    graph: nx.Graph = world.graph
    x = np.array([graph.nodes[c].get("x", 0.0) for c in range(world.n_clusters)], dtype=float)
    y = np.array([graph.nodes[c].get("y", 0.0) for c in range(world.n_clusters)], dtype=float)
    return Layout(x, y, np.asarray(TIERS, dtype=object)[world.tier], world.slots.copy(),
                  world.gate.copy(), world.link_u.copy(), world.link_v.copy())


def _find(name: str, bases: list[Path], where: str, what: str) -> Path:
    if Path(name).is_absolute():
        candidates = [Path(name)]
    else:
        candidates = [base / name for base in bases]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    raise GeosimError(f"cannot place the clusters: {what} {name!r} not found beside the "
                      "results, the original scenario or the working directory", source=where)
