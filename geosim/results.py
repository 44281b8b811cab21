"""Result tables of a run.

A :class:`Result` holds tidy pandas tables (``jobs``, ``tasks``, ``copies``,
``clusters``) and a ``summary`` dict. :meth:`Result.save` writes them as Parquet (or CSV)
with the complete scenario and the run's metadata beside them, so any figure can be
redrawn without running again; :func:`load_result` reads them back. A directory is
written completely or not at all: it is built in a hidden temporary directory
``.NAME.<pid>.<hex>`` beside its destination and renamed into place. A save killed
midway leaves that temporary directory behind; the next save to the same destination
removes it once its writer is gone (:func:`remove_stale_temporaries`).

Every result's metadata records the geosim version and a fingerprint of the code that
produced it (:func:`code_fingerprint`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from geosim.engine import OUTCOMES, WON
from geosim.errors import GeosimError
from geosim.flowcost import flow_costs, has_flows
from geosim.series import CLUSTER_INDEX, CLUSTER_SERIES, LINK_INDEX, LINK_SERIES
from geosim.state import (
    CLUSTER_STATES,
    cluster_state_codes,
    copy_columns,
    job_columns,
    task_columns,
    totals,
    work_balance,
)
from geosim.topology import TIERS

if TYPE_CHECKING:
    from geosim.engine import Engine
    from geosim.recorder import Recorder
    from geosim.workload import Workload
    from geosim.world import World

TABLES = ("jobs", "tasks", "copies", "clusters", "links")
#: Age (s) after which a temporary directory of a save is stale even if a process with its
#: writer's pid runs (the pid was reused) or it names no writer (written by older versions).
STALE_SECONDS = 3600.0
#: Hex digits of :func:`code_fingerprint`.
FINGERPRINT_DIGITS = 12


@dataclass
class Result:
    """Tables and summary of one run.

    Attributes:
        jobs: One row per job: arrival, completion, flowtime (s), tasks, work (MI),
            data (MB), weight, checkpoints, finished.
        tasks: One row per task: job, type, work, data, ready, start and completion
            times, winning cluster, copies launched, checkpoints.
        copies: One row per copy: task, job, cluster, slot, start, end, outcome
            (won/lost/killed/failed/alive), share, executed and wasted work (MI),
            slot-seconds and wasted slot-seconds.
        clusters: Cluster time series: per sample and cluster, tier, state (see
            :data:`CLUSTER_STATES`), reachability, slots,
            slots in an available period, busy slot shares, copies, queued ready tasks
            whose data is there, egress and ingress (MB/s, averaged since the last sample).
        summary: Headline figures (see :func:`summarise`).
        meta: Scenario name, scheduler, its parameters, seed, versions.
        scenario_toml: The complete scenario the run used.
        links: WAN link time series, sampled with ``clusters``: per sample and link, its
            end clusters ``u < v``, bandwidth in each direction (MB/s, at the sample) and
            traffic ``u→v`` and ``v→u`` (MB/s, averaged since the last sample). Empty
            for results saved without it.
    """

    jobs: pd.DataFrame
    tasks: pd.DataFrame
    copies: pd.DataFrame
    clusters: pd.DataFrame
    summary: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)
    scenario_toml: str = ""
    links: pd.DataFrame = field(default_factory=lambda: _link_table())

    def save(self, directory: str | os.PathLike, fmt: str = "parquet") -> Path:
        """Write every table, the summary, the scenario and metadata to ``directory``.

        The directory is built beside its destination and moved into place, so it is
        complete or absent; ``summary.json`` is written last. An existing directory is
        replaced only if it holds a previous result (a ``summary.json``) or is empty; it
        is moved aside before the new one takes its place, so the destination never holds
        a partly deleted result. Temporary directories of earlier saves to the same
        destination whose writer is gone are removed first.

        Args:
            directory: Destination directory.
            fmt: ``"parquet"`` or ``"csv"``.

        Returns:
            The directory written.
        """
        if fmt not in ("parquet", "csv"):
            raise GeosimError(f"unknown table format {fmt!r} (parquet or csv)")
        dest = check_output_dir(directory)
        dest.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(dest)
        tmp = _make_temporary(dest)
        old = None
        try:
            for name in TABLES:
                table = getattr(self, name)
                if fmt == "parquet":
                    table.to_parquet(tmp / f"{name}.parquet", index=False)
                else:
                    table.to_csv(tmp / f"{name}.csv", index=False)
            (tmp / "meta.json").write_text(json.dumps(_jsonable(self.meta), indent=2))
            (tmp / "scenario.toml").write_text(self.scenario_toml)
            (tmp / "summary.json").write_text(json.dumps(_jsonable(self.summary), indent=2))
            if dest.exists():
                old = _make_temporary(dest)
                old.rmdir()
                dest.rename(old)
            tmp.rename(dest)
        except BaseException as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            if old is not None and old.exists() and not dest.exists():
                old.rename(dest)   # put the previous result back
            if isinstance(exc, OSError) and exc.filename is None and exc.errno is not None:
                exc.filename = str(dest)       # name the result that could not be written
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return dest


def is_temporary(directory: str | os.PathLike) -> bool:
    """Whether ``directory`` is named as a temporary directory of a save."""
    return re.fullmatch(r"\..+\.[0-9]+\.[0-9a-f]{8}", Path(directory).name) is not None


def _make_temporary(dest: Path) -> Path:
    """Create (mode 0777 less the umask) and return a new temporary directory of ``dest``."""
    while True:
        tmp = dest.parent / f".{dest.name}.{os.getpid()}.{secrets.token_hex(4)}"
        try:
            tmp.mkdir()
        except FileExistsError:
            continue
        return tmp


def _running(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user counts)."""
    if pid <= 0:
        return False
    if os.name != "posix":   # no harmless probe elsewhere: assume it runs
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temporaries(dest: str | os.PathLike) -> list[Path]:
    """Remove temporary directories of saves to ``dest`` that no running save owns.

    A temporary directory ``.NAME.<pid>.<hex>`` is stale when no process ``pid`` runs
    (its save was killed) or when it is older than :data:`STALE_SECONDS` (the pid was
    reused); one of a save still running, in this process or another (two comparison
    workers, say), is kept. Temporary directories of older versions (``.NAME.<8
    characters>``) name no writer and are removed once older than :data:`STALE_SECONDS`.
    Saves to the same directory from several machines are not supported.

    Returns:
        The directories removed.
    """
    dest = Path(dest)
    name = re.escape(dest.name)
    ours = re.compile(rf"\.{name}\.([0-9]+)\.[0-9a-f]{{8}}")
    unnamed = re.compile(rf"\.{name}\.[a-z0-9_]{{8}}")
    removed = []
    try:
        entries = list(os.scandir(dest.parent))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        match = ours.fullmatch(entry.name)
        if match is None and not unnamed.fullmatch(entry.name):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue   # removed meanwhile
        age = now - max(st.st_mtime, st.st_ctime)   # ctime: a rename (a result moved aside)
        if age < STALE_SECONDS and (match is None or _running(int(match.group(1)))):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed


def check_output_dir(directory: str | os.PathLike) -> Path:
    """Return ``directory`` as a path if a result may be written there, else raise.

    Checked before a run, so that a run is not simulated only to fail when saving: the
    directory must be empty or a previous result, or be creatable in its nearest existing
    ancestor (tried by creating and removing a temporary directory there).

    Raises:
        GeosimError: It exists and is neither empty nor a previous result, or it cannot
            be created.
    """
    dest = Path(directory)
    if dest.exists() and (not dest.is_dir() or (any(dest.iterdir())
                                                and not (dest / "summary.json").exists())):
        raise GeosimError("exists and is not a geosim results directory", source=str(dest))
    parent = dest if dest.exists() else dest.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise GeosimError(f"cannot be created: {parent} is not a directory", source=str(dest))
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".geosim-check-", dir=parent))
    except OSError as exc:
        raise GeosimError(f"cannot be written ({exc.strerror})", source=str(dest)) from None
    return dest


def load_result(directory: str | os.PathLike) -> Result:
    """Read a result directory written by :meth:`Result.save`.

    Raises:
        GeosimError: The directory is not a result, or a file of it is missing or cannot
            be read (one line naming the file).
    """
    src = Path(directory)
    if is_temporary(src):
        raise GeosimError("a temporary directory of a save, not a result", source=str(src))
    if not (src / "summary.json").is_file():
        raise GeosimError("not a geosim results directory (no summary.json)", source=str(src))
    tables = {}
    for name in TABLES:
        parquet, csv = src / f"{name}.parquet", src / f"{name}.csv"
        if name == "links" and not (parquet.exists() or csv.exists()):
            continue   # saved before links were recorded
        path = parquet if parquet.exists() else csv
        try:
            tables[name] = pd.read_parquet(path) if path == parquet else pd.read_csv(path)
        except FileNotFoundError:
            raise GeosimError(f"incomplete result: no {name} table", source=str(src)) from None
        except Exception as exc:  # any reader failure means a damaged file
            raise GeosimError(f"damaged result: {path.name} cannot be read "
                              f"({type(exc).__name__})", source=str(src)) from None
    texts = {}
    for name in ("summary.json", "meta.json", "scenario.toml"):
        try:
            texts[name] = (src / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise GeosimError(f"incomplete result: no {name}", source=str(src)) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise GeosimError(f"damaged result: {name} cannot be read ({exc})",
                              source=str(src)) from None
    try:
        summary, meta = json.loads(texts["summary.json"]), json.loads(texts["meta.json"])
    except json.JSONDecodeError as exc:
        raise GeosimError(f"damaged result: malformed JSON ({exc.msg})",
                          source=str(src)) from None
    for name, value in (("summary.json", summary), ("meta.json", meta)):
        if not isinstance(value, dict):
            raise GeosimError(f"damaged result: {name} holds no JSON object",
                              source=str(src))
    return Result(**tables, summary=summary, meta=meta, scenario_toml=texts["scenario.toml"])


_fingerprint: str | None = None


def fingerprint_sources(root: str | os.PathLike) -> str:
    """A short SHA-256 of the ``.py`` files below ``root``.

    The files are hashed in the order of their paths relative to ``root``, each with its
    path and length, so that editing, adding, removing or renaming one changes it.
    Hidden files (an editor's lock or backup files) are left out.
    """
    root = Path(root)
    digest = hashlib.sha256()
    for rel in sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")
                      if not p.name.startswith(".")):
        try:
            data = (root / rel).read_bytes()
        except (FileNotFoundError, IsADirectoryError):   # removed meanwhile, or no file
            continue
        digest.update(f"{rel}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()[:FINGERPRINT_DIGITS]


def code_fingerprint() -> str:
    """The fingerprint of the geosim package's sources, computed once per process.

    Unlike ``geosim.__version__`` it changes with any change of the code
    (:func:`fingerprint_sources` of the installed package). Results of the same scenario
    and seed made by code with the same fingerprint are the same.
    """
    global _fingerprint
    if _fingerprint is None:
        _fingerprint = fingerprint_sources(Path(__file__).resolve().parent)
    return _fingerprint


def use_code_fingerprint(fingerprint: str) -> None:
    """Make :func:`code_fingerprint` return ``fingerprint`` in this process.

    Worker processes of a comparison take its fingerprint, so that every run's metadata
    names the code the comparison started with.
    """
    global _fingerprint
    _fingerprint = fingerprint


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj


@dataclass(frozen=True)
class RunInfo:
    """What a result needs of the run besides its state: how it ran.

    Attributes:
        scenario_toml: The complete scenario.
        steps: Steps the model took.
        wall_seconds: Wall time of the run.
        scheduler_seconds: Wall time spent in the scheduler's decisions.
        flow_time_unit: Seconds per time unit of 004's flow cost metrics.
    """

    scenario_toml: str
    steps: int
    wall_seconds: float
    scheduler_seconds: float
    flow_time_unit: float = 1.0


def build_result(engine: Engine, workload: Workload, world: World, recorder: Recorder,
                 meta: dict[str, Any], run: RunInfo) -> Result:
    """Assemble the tables of a finished (or horizon-stopped) run.

    Args:
        engine: The run's engine (read through :mod:`geosim.state`).
        workload: The run's jobs.
        world: The run's world.
        recorder: The run's time series (clusters and links).
        meta: What ``meta.json`` holds (scenario name, scheduler, its parameters, seed);
            the geosim version and code fingerprint are added.
        run: How the run went (steps, wall times) and its scenario.
    """
    from geosim.version import __version__

    wl = workload
    job_cols, task_cols, c = (job_columns(engine), task_columns(engine),
                              copy_columns(engine))
    task_job, job_done = task_cols["job"], job_cols["completion"]
    job_data = np.bincount(task_job, weights=wl.task_data, minlength=wl.n_jobs)
    jobs = pd.DataFrame({
        "job": np.arange(wl.n_jobs),
        "arrival": wl.arrival,
        "completion": job_done,
        "flowtime": job_done - wl.arrival,
        "tasks": np.diff(wl.task_ptr),
        "work": np.bincount(task_job, weights=wl.task_work, minlength=wl.n_jobs),
        "data": job_data,
        "weight": wl.weight,
        "checkpoints": job_cols["checkpoints"],
        "finished": ~np.isnan(job_done),
    })
    if np.isfinite(wl.deadline).any() or wl.sla_time.size:
        jobs = jobs.join(service_levels(wl))
    tasks = pd.DataFrame({
        "task": np.arange(wl.n_tasks),
        "job": task_job,
        "type": pd.Categorical.from_codes(wl.task_type, categories=list(wl.type_names)),
        "work": wl.task_work,
        "data": wl.task_data,
        **{k: task_cols[k] for k in ("ready", "start", "completion", "cluster", "copies",
                                     "checkpoints")},
    })
    n = len(c["task"])
    # the wasted share of each copy's slot-seconds, built in place (no row-sized float
    # temporaries): wasted / executed where the copy executed, else 1 unless it won
    executed = c["executed"]
    wasted_slot = (c["outcome"] != WON).astype(float)
    np.divide(c["wasted"], executed, out=wasted_slot, where=executed > 0)
    np.clip(wasted_slot, 0.0, 1.0, out=wasted_slot)
    wasted_slot *= c["share_time"]
    copies = pd.DataFrame({
        "copy": np.arange(n, dtype=np.int32),          # ids below engine.ID_MAX
        "task": c["task"],
        "job": task_job.astype(np.int32)[c["task"]],
        "cluster": c["cluster"],
        "slot": c["slot"],
        "start": c["start"],
        "end": c["end"],
        "outcome": pd.Categorical.from_codes(c["outcome"], categories=list(OUTCOMES)),
        "share": c["share"],
        "executed": executed,
        "wasted": c["wasted"],
        "slot_seconds": c["share_time"],
        "wasted_slot_seconds": wasted_slot,
    }, copy=False)  # columns share the engine's arrays: no second copy of millions of rows
    clusters = recorder.get_index_vars_dataframe(CLUSTER_INDEX, CLUSTER_SERIES)
    if not clusters.empty:
        codes = cluster_state_codes(clusters["reachable"].to_numpy(),
                                    clusters["available_slots"].to_numpy(),
                                    clusters["slots"].to_numpy())
        clusters.insert(2, "state", pd.Categorical.from_codes(
            codes, categories=list(CLUSTER_STATES)))
        clusters.insert(2, "tier", pd.Categorical.from_codes(
            world.tier[clusters["cluster"].to_numpy()], categories=list(TIERS)))
    links = recorder.get_index_vars_dataframe(LINK_INDEX, LINK_SERIES)
    meta = {**meta, "geosim": __version__, "code": code_fingerprint()}
    result = Result(jobs, tasks, copies, clusters, {}, meta, run.scenario_toml, links)
    result.summary = summarise(result, engine, world, run)
    return result


def service_levels(wl: Workload) -> pd.DataFrame:
    """Each job's deadline (``inf``: none) and SLA steps as ``sla_time_k``/``sla_height_k``.

    A job with fewer steps than the most has ``inf`` times and zero heights in the rest.
    """
    counts = np.diff(wl.sla_ptr)
    width = int(counts.max()) if counts.size else 0
    rank = np.arange(wl.sla_time.size) - np.repeat(wl.sla_ptr[:-1], counts)
    times = np.full((wl.n_jobs, width), np.inf)
    heights = np.zeros((wl.n_jobs, width))
    row = np.repeat(np.arange(wl.n_jobs), counts)
    times[row, rank], heights[row, rank] = wl.sla_time, wl.sla_height
    table = {"deadline": wl.deadline}
    for k in range(width):
        table[f"sla_time_{k + 1}"] = times[:, k]
        table[f"sla_height_{k + 1}"] = heights[:, k]
    return pd.DataFrame(table)


def _link_table() -> pd.DataFrame:
    """An empty link time series, typed."""
    return pd.DataFrame({k: np.empty(0, dtype=t) for k, t in LINK_SERIES.items()})


def summarise(result: Result, engine: Engine, world: World, run: RunInfo) -> dict[str, Any]:
    """Headline figures of a run.

    Utilisation is busy slot-seconds over all slot-seconds from time 0 to the end of
    the run; WAN traffic counts every byte moved between clusters.
    """
    jobs, copies = result.jobs, result.copies
    done = jobs[jobs["finished"]]
    flow = done["flowtime"].to_numpy()
    now = {**totals(engine), **work_balance(engine)}
    elapsed = max(now["time"], 1e-12)
    codes = copies["outcome"].cat.codes.to_numpy()     # counted without a row-sized temporary
    outcome = {name: np.count_nonzero(codes == k) for k, name in enumerate(OUTCOMES)}

    def q(p: float) -> float:
        return float(np.percentile(flow, p)) if flow.size else float("nan")

    summary = {
        "scheduler": result.meta["scheduler"],
        "seed": result.meta["seed"],
        "jobs": int(len(jobs)),
        "jobs_done": int(len(done)),
        "mean_flowtime": float(flow.mean()) if flow.size else float("nan"),
        "weighted_mean_flowtime": float(np.average(flow, weights=done["weight"].to_numpy()))
        if flow.size else float("nan"),
        "p50_flowtime": q(50), "p95_flowtime": q(95), "p99_flowtime": q(99),
        "simulated_seconds": now["time"],
        "slot_utilisation": float(copies["slot_seconds"].sum()
                                  / (world.n_slots * elapsed)),
        "wan_mb": now["wan_mb"],
        "data_moved_mb": now["moved_mb"],
        "data_moves_abandoned": now["moves_abandoned"],
        "tasks": int(len(result.tasks)),
        "copies_launched": int(len(copies)),
        "copies_killed": int(sum(outcome.get(k, 0) for k in ("lost", "killed", "failed"))),
        "copies_failed": int(outcome.get("failed", 0)),
        "wasted_slot_seconds": float(copies["wasted_slot_seconds"].sum()),
        "executed_work": now["executed_work"],
        "demanded_work": now["demanded_work"],
        "wasted_work": now["wasted_work"],
        "steps": int(run.steps),
        "wall_seconds": float(run.wall_seconds),
        "scheduler_seconds": float(run.scheduler_seconds),
    }
    if has_flows(jobs):       # flows of MapReduce jobs: 004's cost metrics, in time units
        summary.update({f"flow {k}": v for k, v in flow_costs(jobs, run.flow_time_unit).items()})
    return summary
