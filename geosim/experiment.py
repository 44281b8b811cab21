"""Comparisons of schedulers on common random numbers (``geosim compare``).

A run is determined by its scenario, its scheduler (with parameters) and its seed. The
world (topology, slot availability, outages, bandwidth) and the workload (arrivals, job
DAGs) depend on the seed only, never on the scheduler, so replication ``i`` of every
scheduler sees the same world and job ``j`` of replication ``i`` is the same job under
every scheduler: differences between schedulers are not blurred by different luck.

:func:`compare` runs every (scheduler, seed) pair in parallel worker processes (or on a
Dask cluster), stores each run's complete result under ``DIR/runs/<scheduler>/seed-<s>/``
and summarises them in three tables (:class:`Comparison`):

``summary``
    One row per scheduler label. ``mean_flowtime`` is the mean over replications of each
    run's mean flowtime; ``ci95`` the half-width of its 95% confidence interval: Student's
    t over the replications' means when there are two or more, and with one replication
    the method of batch means (the run's jobs in arrival order cut into 10 batches of
    consecutive jobs; t with 9 degrees of freedom over the batch means). Percentiles and
    the ``within_<T>`` fractions (flowtime at most ``T`` seconds) pool every job of every
    replication. ``copies_per_task`` is copies launched over tasks, over all runs;
    ``wasted_slot_seconds`` the mean per run. With a baseline, ``reduction_mean`` and
    ``reduction_median`` summarise the per-job flowtime reduction ratios,
    ``slower`` is the fraction of jobs slower than under the baseline, and
    ``paired_diff`` / ``paired_ci95`` the change of the mean flowtime against the baseline
    taken job by job (common random numbers) with the half-width of its 95% interval by
    batch means over every seed (:func:`paired_difference`); :meth:`Comparison.format`
    ends with one verdict line per scheduler (:func:`verdict`).
``per_job``
    One row per scheduler and job id: the job's flowtime averaged over the replications
    (PingAn's evaluation, 003 §6.1) and, with a baseline, its reduction ratio
    ``(F_base - F) / F_base``. Each seed draws its own workload, so job ``j`` of two
    replications are different jobs: the average is over the job index, and within each
    replication it is the same job under every scheduler.
``runs``
    One row per run: label, seed and every number of the run's summary.

Jobs that did not finish (a run stopped at ``run.horizon``) are left out of every
flowtime statistic and counted in ``unfinished``; a job's replication average needs the
job to finish in every replication.

A comparison directory is resumable: ``compare.json`` records the scenario, the
schedulers, the seeds, the geosim version and the fingerprint of the code
(:func:`~geosim.results.code_fingerprint`); a later call with the same scenario and the
same code skips every run whose directory is complete and may add schedulers or seeds.
A directory written by different code (or before fingerprints were recorded) is refused
rather than re-run: its runs are kept, and results of different code are never mixed.

Worker processes end as soon as the process that started the comparison ends, even when
it is killed (:func:`exit_with`), so a killed comparison leaves no simulation running.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import multiprocessing
import os
import re
import select
import shutil
import sys
import threading
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geosim.errors import GeosimError
from geosim.results import Result, code_fingerprint, use_code_fingerprint
from geosim.scenario import Scenario, default_scenario, load_scenario
from geosim.schedulers.spec import Spec, parse_spec, parse_specs, split_top

#: Default ``within`` thresholds (s): the fraction of jobs finishing within each.
WITHIN = (40.0, 200.0, 800.0)
#: Batches of the batch-means confidence interval of a single replication.
BATCHES = 10
MANIFEST = "compare.json"
#: Columns of a run's jobs table that the summary needs.
JOB_COLUMNS = ("job", "arrival", "work", "weight", "flowtime", "finished")
#: Seconds between checks that the main process runs, where it cannot be waited for.
WATCH_INTERVAL = 0.5
#: Exit status of a worker whose main process ended.
ORPHAN_EXIT = 70


def coerce_specs(schedulers: str | Sequence[str | Spec | tuple[str, Mapping[str, Any]]]
                 ) -> list[Spec]:
    """Turn spec strings, ``(name, params)`` pairs or specs into validated specs.

    Every scheduler is built once with :func:`~geosim.schedulers.make_scheduler`, so an
    unknown name or a bad parameter is reported before anything runs.

    Raises:
        GeosimError: No scheduler, a bad spec, an unknown name, a bad parameter, or a
            label that repeats.
    """
    from geosim.schedulers import make_scheduler
    items = [schedulers] if isinstance(schedulers, str) else list(schedulers)
    specs: list[Spec] = []
    for item in items:
        if isinstance(item, Spec):
            specs.append(item)
        elif isinstance(item, str):
            specs.extend(parse_specs(item))
        else:
            name, params = item
            specs.append(Spec(name, dict(params or {})))
    if not specs:
        raise GeosimError("no scheduler to compare", source="schedulers")
    seen: set[str] = set()
    for spec in specs:
        make_scheduler(spec.name, spec.params, source="schedulers")
        if spec.label in seen:
            raise GeosimError(f"scheduler {spec.label!r} is listed twice", source="schedulers")
        seen.add(spec.label)
    return specs


# ---------------------------------------------------------------------------- options
def resolve_seeds(scenario: Scenario, seeds: str | Sequence[int] | None,
                  reps: int | None) -> list[int]:
    """Return the seeds of the replications.

    Args:
        scenario: Its ``run.seed`` is the first seed when ``seeds`` is not given.
        seeds: Explicit seeds (a list or a comma-separated string).
        reps: Number of replications: seeds ``run.seed + i``; default 1.

    Raises:
        GeosimError: Malformed, negative or repeated seeds, ``reps < 1``, or both given
            with different counts.
    """
    if reps is not None and (isinstance(reps, bool) or not isinstance(reps, int) or reps < 1):
        raise GeosimError(f"must be a whole number >= 1 (got {reps!r})", source="reps")
    if seeds is None:
        first = int(scenario["run"]["seed"])
        return [first + i for i in range(reps or 1)]
    values = split_top(seeds, "seeds") if isinstance(seeds, str) else list(seeds)
    out = []
    for value in values:
        try:
            seed = int(str(value).strip()) if isinstance(value, str) else value
        except ValueError:
            seed = value
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise GeosimError(f"must be whole numbers >= 0 (got {value!r})",
                              source="seeds")
        out.append(int(seed))
    if not out or len(set(out)) != len(out):
        raise GeosimError(f"need distinct seeds (got {values!r})", source="seeds")
    if reps is not None and reps != len(out):
        raise GeosimError(f"{len(out)} seeds given but reps = {reps}", source="seeds")
    return out


def check_within(within: str | Sequence[float]) -> tuple[float, ...]:
    """Return the flowtime thresholds as positive finite floats.

    Raises:
        GeosimError: A value that is not a positive number, or none at all.
    """
    values = split_top(within, "within") if isinstance(within, str) else list(within)
    out = []
    for value in values:
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(value, bool) or not math.isfinite(number) or number <= 0:
            raise GeosimError(f"thresholds must be positive numbers (got {value!r})",
                              source="within")
        out.append(number)
    if not out:
        raise GeosimError("no threshold given", source="within")
    return tuple(out)


def _baseline_label(baseline: str | None, specs: Sequence[Spec]) -> str | None:
    if baseline is None:
        return None
    labels = [s.label for s in specs]
    try:
        label = parse_spec(baseline).label
    except GeosimError:
        label = baseline
    if label not in labels:
        raise GeosimError(f"{baseline!r} is not among the schedulers ({', '.join(labels)})",
                          source="baseline")
    return label


def safe_name(text: str) -> str:
    """A file name made of ``text``: brackets and unusual characters become ``_``."""
    name = re.sub(r"[^A-Za-z0-9._+=,-]+", "_", text.replace("]", "")).strip("._")
    return name or "_"


# ---------------------------------------------------------------------------- one run
@dataclass(frozen=True)
class RunOutcome:
    """What the comparison needs of one run.

    Attributes:
        label: The scheduler's label.
        seed: The run's seed.
        summary: The run's summary (JSON values; missing numbers are NaN).
        jobs: The run's jobs table, columns :data:`JOB_COLUMNS`.
    """

    label: str
    seed: int
    summary: dict[str, Any]
    jobs: pd.DataFrame


@dataclass(frozen=True)
class _Run:
    spec: Spec
    seed: int
    dest: str | None


def run_scenario(scenario: Scenario, spec: Spec, seed: int) -> Scenario:
    """The scenario of one run: ``spec`` as its scheduler and ``seed`` as ``run.seed``.

    Its TOML, saved with the run's result, reproduces the run with ``geosim run``.
    """
    data = {section: dict(values) for section, values in scenario.data.items()}
    data["run"]["seed"] = int(seed)
    data["scheduler"] = {**data["scheduler"], "name": spec.name, "params": dict(spec.params)}
    return Scenario(data, scenario.source, scenario.base_dir)


def simulate(scenario: Scenario, spec: Spec, seed: int) -> Result:
    """Run ``scenario`` with the scheduler of ``spec`` and ``seed``; return its result."""
    from geosim.model import GeoModel
    return GeoModel(run_scenario(scenario, spec, seed)).run()


def _digest(run: _Run, result: Result) -> RunOutcome:
    summary = {k: (v.item() if isinstance(v, np.generic) else v)
               for k, v in result.summary.items()}
    jobs = result.jobs.loc[:, list(JOB_COLUMNS)].reset_index(drop=True)
    return RunOutcome(run.spec.label, run.seed, summary, jobs)


def _execute(scenario: Scenario, run: _Run, fmt: str) -> RunOutcome:
    """Worker entry point: simulate one run, save it if it has a directory, digest it."""
    result = simulate(scenario, run.spec, run.seed)
    if run.dest is not None:
        result.save(run.dest, fmt=fmt)
    return _digest(run, result)


def load_outcome(directory: str | os.PathLike, label: str, seed: int) -> RunOutcome:
    """Read what the comparison needs from a saved run (its summary and jobs table)."""
    src = Path(directory)
    summary = json.loads((src / "summary.json").read_text())
    summary = {k: math.nan if v is None else v for k, v in summary.items()}
    parquet = src / "jobs.parquet"
    jobs = pd.read_parquet(parquet, columns=list(JOB_COLUMNS)) if parquet.exists() else \
        pd.read_csv(src / "jobs.csv", usecols=list(JOB_COLUMNS), float_precision="round_trip")
    return RunOutcome(label, seed, summary, jobs.loc[:, list(JOB_COLUMNS)])


def _failed(run: _Run, exc: BaseException) -> BaseException:
    """The error to raise for a run that raised ``exc``, naming its scheduler and seed."""
    where = f"{run.spec.label}, seed {run.seed}"
    if isinstance(exc, GeosimError):
        return GeosimError(f"{where}: {exc}")
    if isinstance(exc, BrokenProcessPool):
        return GeosimError(f"{where}: a worker process died ({exc}); finished runs are "
                           "kept, run the comparison again to resume")
    exc.add_note(f"while running {where}")
    return exc


# ---------------------------------------------------------------------------- executors
Done = Callable[[RunOutcome], None]


def _mp_context() -> multiprocessing.context.BaseContext:
    """Forkserver (workers fork from a server that imported geosim once), else spawn."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["geosim.experiment"])
        return ctx
    return multiprocessing.get_context("spawn")


def exit_with(pid: int) -> None:
    """End this process as soon as process ``pid`` ends (a daemon thread watches it).

    On Linux the thread waits on a pidfd of ``pid``, which a reused pid cannot fool;
    on other POSIX systems it checks every :data:`WATCH_INTERVAL` seconds that ``pid``
    exists. Elsewhere it does nothing. If ``pid`` has already ended, this process ends
    at once.
    """
    if os.name != "posix":
        return
    try:
        fd: int | None = os.pidfd_open(pid)
    except ProcessLookupError:
        os._exit(ORPHAN_EXIT)
    except (AttributeError, OSError):   # no pidfd (an older kernel, another system)
        fd = None

    def watch() -> None:
        if fd is not None:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            while not poller.poll():
                pass
        else:
            while True:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                except PermissionError:
                    pass
                time.sleep(WATCH_INTERVAL)
        os._exit(ORPHAN_EXIT)

    threading.Thread(target=watch, name="geosim-exit-with-main", daemon=True).start()


def _init_worker(main_pid: int, fingerprint: str) -> None:
    """Worker initializer: die with the main process and take its code fingerprint.

    With the forkserver the worker's parent is the server, not the main process, and the
    server outlives a killed main process as long as its workers run: the worker watches
    the main process itself.
    """
    exit_with(main_pid)
    use_code_fingerprint(fingerprint)


def run_local(scenario: Scenario, runs: Sequence[_Run], fmt: str, workers: int,
              done: Done) -> None:
    """Run ``runs`` in up to ``workers`` processes (in this process if one suffices).

    Workers end when this process ends, even if it is killed (:func:`exit_with`).
    """
    if workers <= 1 or len(runs) <= 1:
        for run in runs:
            try:
                outcome = _execute(scenario, run, fmt)
            except Exception as exc:
                raise _failed(run, exc) from None
            done(outcome)
        return
    with ProcessPoolExecutor(min(workers, len(runs)), mp_context=_mp_context(),
                             initializer=_init_worker,
                             initargs=(os.getpid(), code_fingerprint())) as pool:
        futures = {pool.submit(_execute, scenario, run, fmt): run for run in runs}
        try:
            for future in as_completed(futures):
                try:
                    outcome = future.result()
                except Exception as exc:
                    raise _failed(futures[future], exc) from None
                done(outcome)
        except BaseException:
            for future in futures:
                future.cancel()
            raise


@contextlib.contextmanager
def dask_client(dask: Any) -> Iterator[Any]:
    """Yield a Dask client for ``dask`` (an address or a client); close one made here.

    Raises:
        GeosimError: The ``distributed`` package is missing or the scheduler is
            unreachable.
    """
    try:
        import distributed
    except ImportError:
        raise GeosimError("running on Dask needs the distributed package: "
                          "pip install 'geosim[dask]'", source="dask") from None
    if not isinstance(dask, str):
        yield dask
        return
    try:
        client = distributed.Client(dask, timeout="10s")
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise GeosimError(f"cannot reach the Dask scheduler at {dask!r}: {first}",
                          source="dask") from None
    try:
        yield client
    finally:
        client.close()


def run_dask(client: Any, scenario: Scenario, runs: Sequence[_Run], fmt: str,
             done: Done) -> None:
    """Run ``runs`` on a Dask cluster; results are saved here, by the client.

    Raises:
        GeosimError: A run failed, or a worker runs other code than this process (another
            :func:`~geosim.results.code_fingerprint`): its results are not kept.
    """
    import distributed
    pending = {client.submit(simulate, scenario, run.spec, run.seed, pure=False): run
               for run in runs}
    try:
        for future in distributed.as_completed(list(pending)):
            run = pending.pop(future)
            try:
                result = future.result()
            except Exception as exc:
                raise _failed(run, exc) from None
            if result.meta.get("code") != code_fingerprint():
                theirs = f"geosim {result.meta.get('geosim', '?')}, code " \
                    f"{result.meta.get('code') or 'not recorded'}"
                raise GeosimError(
                    f"{run.spec.label}, seed {run.seed}: the Dask worker runs different "
                    f"code ({theirs}) than this process (code {code_fingerprint()}); "
                    "install the same geosim on the workers", source="dask")
            if run.dest is not None:
                result.save(run.dest, fmt=fmt)
            done(_digest(run, result))
            future.release()
    except BaseException:
        if pending:
            client.cancel(list(pending))
        raise


# ---------------------------------------------------------------------------- directory
def _identity(toml_text: str) -> dict[str, Any]:
    """The part of a scenario that determines runs (its seed and scheduler do not).

    Flat dotted keys; a key the stored scenario lacks (written before the key existed)
    takes its default, which reproduces the behaviour of the version that wrote it.
    """
    data = {**_flat(default_scenario()), **_flat(tomllib.loads(toml_text))}
    return {k: v for k, v in data.items()
            if k != "run.seed" and not k.startswith("scheduler.")}


def _flat(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _difference(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> str:
    a, b = _flat(ours), _flat(theirs)
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            return f"{key}: {a.get(key)!r} here, {b.get(key)!r} there"
    return "same values"


class CompareDir:
    """A comparison directory: its manifest and where each run's result lives.

    Args:
        path: The directory.
        manifest: Its ``compare.json`` content (updated with the new schedulers/seeds).
    """

    def __init__(self, path: Path, manifest: dict[str, Any], stale: bool = False):
        self.path, self.manifest, self.stale = path, manifest, stale

    @classmethod
    def open(cls, path: str | os.PathLike, scenario: Scenario, specs: Sequence[Spec],
             seeds: Sequence[int], restart: bool = False) -> CompareDir:
        """Check ``path`` and merge this comparison into its manifest (nothing written).

        Args:
            path: The comparison directory.
            scenario: The scenario compared.
            specs: The schedulers.
            seeds: The seeds.
            restart: Start afresh, instead of refusing, when ``path`` holds a comparison
                written by different code or of a different scenario (its runs are
                removed when the new manifest is written).

        Raises:
            GeosimError: ``path`` is not empty and not a comparison directory, or holds a
                comparison written by different code (another
                :func:`~geosim.results.code_fingerprint`, or none recorded) or of a
                different scenario, and ``restart`` is false.
        """
        from geosim import __version__
        path = Path(path)
        toml = scenario.to_toml()
        code = code_fingerprint()
        manifest = cls._read(path)
        stale = manifest is not None and restart and (
            manifest.get("code") != code
            or _identity(manifest["scenario"]) != _identity(toml))
        if manifest is None or stale:
            manifest = {"geosim": __version__, "code": code, "scenario": toml,
                        "source": scenario.source, "schedulers": [], "seeds": []}
        elif manifest.get("code") != code:
            version = manifest.get("geosim", "?")
            writer = f"geosim {version} (code {manifest['code']})" if manifest.get("code") \
                else f"geosim {version} (before code fingerprints were recorded)"
            raise GeosimError(f"holds runs written by {writer}, this is geosim {__version__} "
                              f"(code {code}); results of different code cannot be mixed: "
                              "use another output directory (or --restart to replace it)",
                              source=str(path))
        elif _identity(manifest["scenario"]) != _identity(toml):
            diff = _difference(_identity(toml), _identity(manifest["scenario"]))
            raise GeosimError(f"holds a comparison of a different scenario ({diff}); "
                              "use another output directory (or --restart to replace it)",
                              source=str(path))
        known = {s["label"]: s for s in manifest["schedulers"]}
        dirs = {s["dir"] for s in manifest["schedulers"]}
        for spec in specs:
            if spec.label not in known:
                entry = {"label": spec.label, "name": spec.name, "params": spec.params,
                         "dir": _unique_dir(spec.label, dirs)}
                manifest["schedulers"].append(entry)
                known[spec.label] = entry
                dirs.add(entry["dir"])
        manifest["seeds"] += [s for s in seeds if s not in manifest["seeds"]]
        return cls(path, manifest, stale)

    @staticmethod
    def _read(path: Path) -> dict[str, Any] | None:
        if not path.exists():
            return None
        if not path.is_dir():
            raise GeosimError("exists and is not a directory", source=str(path))
        file = path / MANIFEST
        if not file.is_file():
            if any(path.iterdir()):
                raise GeosimError("exists and is neither empty nor a geosim comparison "
                                  f"directory (no {MANIFEST})", source=str(path))
            return None
        try:
            manifest = json.loads(file.read_text())
            _ = manifest["scenario"], manifest["schedulers"], manifest["seeds"]
        except (ValueError, KeyError, TypeError) as exc:
            raise GeosimError(f"unreadable {MANIFEST} ({exc})", source=str(path)) from None
        return manifest

    def write_manifest(self) -> None:
        """Write ``compare.json`` (atomically), creating the directory.

        A stale comparison (:meth:`open` with ``restart``) is removed first.
        """
        if self.stale:
            shutil.rmtree(self.path)
            self.stale = False
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.path / f".{MANIFEST}.tmp"
        tmp.write_text(json.dumps(self.manifest, indent=2))
        os.replace(tmp, self.path / MANIFEST)

    def run_dir(self, spec: Spec, seed: int) -> Path:
        """Where the result of ``spec`` with ``seed`` is kept."""
        entry = next(s for s in self.manifest["schedulers"] if s["label"] == spec.label)
        return self.path / "runs" / entry["dir"] / f"seed-{seed}"

    def load(self, spec: Spec, seed: int) -> RunOutcome | None:
        """The saved outcome of a run, or None if its directory is not complete."""
        src = self.run_dir(spec, seed)
        if not (src / "summary.json").is_file():
            return None
        return load_outcome(src, spec.label, seed)

    def write_tables(self, comparison: Comparison, fmt: str) -> None:
        """Write ``summary.csv``, ``runs.csv`` and ``per_job.<fmt>``."""
        comparison.summary.to_csv(self.path / "summary.csv", index=False)
        comparison.runs.to_csv(self.path / "runs.csv", index=False)
        if fmt == "parquet":
            comparison.per_job.to_parquet(self.path / "per_job.parquet", index=False)
        else:
            comparison.per_job.to_csv(self.path / "per_job.csv", index=False)
        if comparison.flows is not None:
            comparison.flows.to_csv(self.path / "flow_costs.csv", index=False)


def _unique_dir(label: str, taken: set[str]) -> str:
    name = safe_name(label)
    if name in taken:
        name = f"{name}-{hashlib.sha1(label.encode()).hexdigest()[:8]}"
    return name


# ---------------------------------------------------------------------------- statistics
def t_halfwidth(values: Sequence[float] | np.ndarray, level: float = 0.95) -> float:
    """Half-width of the Student-t confidence interval of the mean of ``values``.

    NaN values are ignored; fewer than two values give NaN.
    """
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size < 2:
        return math.nan
    from scipy import stats
    t = stats.t.ppf(0.5 + level / 2, x.size - 1)
    return float(t * x.std(ddof=1) / math.sqrt(x.size))


def batch_means(values: Sequence[float] | np.ndarray, batches: int = BATCHES) -> np.ndarray:
    """Means of ``batches`` batches of consecutive values (sizes differ by at most one).

    Fewer values than batches give an empty array.
    """
    x = np.asarray(values, dtype=float)
    if x.size < batches:
        return np.empty(0)
    return np.array([b.mean() for b in np.array_split(x, batches)])


def paired_difference(jobs: pd.DataFrame, reference: pd.DataFrame, weighted: bool = False,
                      batches: int = BATCHES) -> tuple[float, float]:
    """Paired difference of the (weighted) mean flowtime against a reference.

    Both frames hold the same jobs (columns ``seed``, ``job``, ``flowtime``, ``finished``,
    ``weight``): under common random numbers job j of seed s is the same job under both
    schedulers, so the differences ``w_j (F_j - F_ref,j)`` are taken job by job (jobs
    finished under both). They are correlated within a run, so each seed's jobs, in
    arrival order, are cut into ``batches`` batches and the interval is Student's t over
    all seeds' batch means.

    Returns:
        The mean difference relative to the reference's (weighted) mean, and the half-width
        of its 95% interval in the same units (NaN when there are too few jobs).
    """
    key = ["seed", "job"]
    both = jobs.merge(reference, on=key, suffixes=("", "_ref")).sort_values(key)
    both = both[both["finished"].astype(bool) & both["finished_ref"].astype(bool)]
    if both.empty:
        return math.nan, math.nan
    w = both["weight"].to_numpy(dtype=float) if weighted else np.ones(len(both))
    d = w * (both["flowtime"] - both["flowtime_ref"]).to_numpy()
    means = np.concatenate([batch_means(d[idx], batches) / w[idx].mean()
                            for idx in both.groupby("seed").indices.values()])
    ref = float(np.sum(w * both["flowtime_ref"].to_numpy()) / w.sum())
    return float(d.sum() / w.sum() / ref), t_halfwidth(means) / ref


def verdict(label: str, baseline: str, diff: float, half: float) -> str:
    """One line: the paired change of the mean flowtime and whether it is decided."""
    if not math.isfinite(diff):
        return f"{label} vs {baseline}: no job finished under both"
    if not math.isfinite(half):
        return f"{label} vs {baseline}: {100 * diff:+.1f}% (too few jobs for an interval)"
    span = f"{100 * diff:+.1f}% [{100 * (diff - half):+.1f}, {100 * (diff + half):+.1f}]"
    if diff - half > 0:
        return f"{label} vs {baseline}: {span}: slower"
    if diff + half < 0:
        return f"{label} vs {baseline}: {span}: faster"
    return f"{label} vs {baseline}: {span}: undecided (the interval contains 0)"


def _ci95(jobs: pd.DataFrame, run_means: np.ndarray) -> float:
    """CI half-width of the mean flowtime: over replications, or batch means of one."""
    if len(run_means) >= 2:
        return t_halfwidth(run_means)
    done = jobs[jobs["finished"]].sort_values(["arrival", "job"], kind="stable")
    return t_halfwidth(batch_means(done["flowtime"].to_numpy()))


def _weighted_mean(jobs: pd.DataFrame, runs: pd.DataFrame) -> float:
    """Mean over replications of each run's weighted mean flowtime ``sum wF / sum w``."""
    done = jobs[jobs["finished"]]
    if done.empty:
        return math.nan
    weight = done["weight"]
    per_seed = (done["flowtime"] * weight).groupby(done["seed"]).sum() \
        / weight.groupby(done["seed"]).sum()
    return float(per_seed.reindex(runs["seed"]).mean())


def _within_column(threshold: float) -> str:
    return f"within_{threshold:g}"


def per_job_table(jobs: pd.DataFrame, labels: Sequence[str],
                  baseline: str | None) -> pd.DataFrame:
    """Each job's flowtime averaged over replications, per label, and its reduction ratio.

    A job that did not finish in every replication has no average (NaN). The reduction
    ratio is ``(F_base - F) / F_base`` against the baseline's average.
    """
    tables = []
    for label in labels:
        mine = jobs[jobs["label"] == label]
        flow = mine["flowtime"].where(mine["finished"])
        wide = mine.assign(flowtime=flow).pivot(index="job", columns="seed", values="flowtime")
        tables.append(pd.DataFrame({"label": label, "job": wide.index.to_numpy(),
                                    "flowtime": wide.mean(axis=1, skipna=False).to_numpy()}))
    table = pd.concat(tables, ignore_index=True)
    table["reduction"] = math.nan
    if baseline is not None:
        base = table[table["label"] == baseline].set_index("job")["flowtime"]
        ref = base.reindex(table["job"]).to_numpy()
        table["reduction"] = (ref - table["flowtime"].to_numpy()) / ref
    return table


def _summary_row(label: str, runs: pd.DataFrame, jobs: pd.DataFrame, per_job: pd.DataFrame,
                 within: Sequence[float], baseline: str | None,
                 base_jobs: pd.DataFrame | None = None) -> dict[str, Any]:
    done = jobs.loc[jobs["finished"], "flowtime"].to_numpy()
    run_means = jobs[jobs["finished"]].groupby("seed")["flowtime"].mean() \
        .reindex(runs["seed"]).to_numpy()

    def q(p: float) -> float:
        return float(np.percentile(done, p)) if done.size else math.nan

    row: dict[str, Any] = {
        "label": label,
        "runs": len(runs),
        "jobs": len(jobs),
        "unfinished": int((~jobs["finished"]).sum()),
        "mean_flowtime": float(np.nanmean(run_means)) if np.isfinite(run_means).any()
        else math.nan,
        "ci95": _ci95(jobs, run_means),
        "weighted_mean_flowtime": _weighted_mean(jobs, runs),
        "p50_flowtime": q(50), "p95_flowtime": q(95), "p99_flowtime": q(99),
    }
    for t in within:
        row[_within_column(t)] = float(np.mean(done <= t)) if done.size else math.nan
    tasks = runs["tasks"].sum()
    row["copies_per_task"] = float(runs["copies_launched"].sum() / tasks) if tasks else math.nan
    row["wasted_slot_seconds"] = float(runs["wasted_slot_seconds"].mean())
    if baseline is not None:
        ratio = per_job.loc[per_job["label"] == label, "reduction"].dropna().to_numpy()
        row["reduction_mean"] = float(ratio.mean()) if ratio.size else math.nan
        row["reduction_median"] = float(np.median(ratio)) if ratio.size else math.nan
        row["slower"] = float(np.mean(ratio < 0)) if ratio.size else math.nan
        row["paired_diff"], row["paired_ci95"] = paired_difference(
            jobs, base_jobs, weighted=bool((jobs["weight"] != 1.0).any()))
    return row


def build_comparison(outcomes: Sequence[RunOutcome], labels: Sequence[str],
                     seeds: Sequence[int], baseline: str | None = None,
                     within: Sequence[float] = WITHIN) -> Comparison:
    """Assemble the comparison tables from run outcomes (one per label and seed)."""
    by_key = {(o.label, o.seed): o for o in outcomes}
    ordered = [by_key[(label, seed)] for label in labels for seed in seeds]
    runs = pd.DataFrame([{"label": o.label, "seed": o.seed,
                          **{k: v for k, v in o.summary.items() if k != "seed"}}
                         for o in ordered])
    first = ["label", "scheduler", "seed"]
    runs = runs[[c for c in first if c in runs] + [c for c in runs if c not in first]]
    jobs = pd.concat([o.jobs.assign(label=o.label, seed=o.seed) for o in ordered],
                     ignore_index=True)
    jobs["finished"] = jobs["finished"].astype(bool)
    per_job = per_job_table(jobs, labels, baseline)
    base_jobs = jobs[jobs["label"] == baseline] if baseline is not None else None
    rows = [_summary_row(label, runs[runs["label"] == label], jobs[jobs["label"] == label],
                         per_job, within, baseline, base_jobs) for label in labels]
    weighted = bool((jobs["weight"] != 1.0).any())
    return Comparison(pd.DataFrame(rows), runs, per_job, baseline, tuple(within),
                      weighted=weighted)


# ---------------------------------------------------------------------------- result
@dataclass
class Comparison:
    """Tables of a comparison of schedulers (see the module documentation).

    Attributes:
        summary: One row per scheduler label.
        runs: One row per run: label, scheduler, seed and every summary number.
        per_job: One row per label and job: replication-averaged flowtime, reduction.
        baseline: The baseline label, if any.
        within: The flowtime thresholds of the ``within_<T>`` columns.
        out: The comparison directory, if one was written.
    """

    summary: pd.DataFrame
    runs: pd.DataFrame
    per_job: pd.DataFrame
    baseline: str | None = None
    within: tuple[float, ...] = WITHIN
    out: Path | None = None
    #: Whether jobs carry different weights (the table then shows the weighted mean).
    weighted: bool = False
    #: Flows of MapReduce jobs (004): one row per label, seed and metric of 004 Tables 1-2
    #: with the cost, the lower bound and their ratio (:mod:`geosim.flowcost`).
    flows: pd.DataFrame | None = None

    def format(self) -> str:
        """The summary as an aligned text table."""
        columns: list[tuple[str, str, Callable[[Any], str]]] = [
            ("scheduler", "label", str),
            ("runs", "runs", str),
            ("unfinished", "unfinished", str),
            ("mean (s)", "mean_flowtime", _num),
            ("±95% CI", "ci95", _num),
            *((("weighted (s)", "weighted_mean_flowtime", _num),) if self.weighted else ()),
            ("p50", "p50_flowtime", _num),
            ("p95", "p95_flowtime", _num),
            ("p99", "p99_flowtime", _num),
            *((f"<={t:g}s", _within_column(t), _pct) for t in self.within),
            ("copies/task", "copies_per_task", lambda v: f"{v:.2f}" if _finite(v) else "-"),
            ("wasted slot-s", "wasted_slot_seconds", lambda v: f"{v:.0f}" if _finite(v) else "-"),
        ]
        if self.baseline is not None:
            columns += [("Δ mean (paired)", "paired_diff", _signed_pct),
                        ("±95%", "paired_ci95", _pct),
                        ("reduction mean", "reduction_mean", _pct),
                        ("median", "reduction_median", _pct), ("slower", "slower", _pct)]
        cells = [[head for head, _, _ in columns]]
        cells += [[fmt(row[key]) for _, key, fmt in columns]
                  for row in self.summary.to_dict("records")]
        widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
        lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                           for i, (c, w) in enumerate(zip(r, widths, strict=True)))
                 for r in cells]
        if self.baseline is not None:
            lines.append(f"Δ mean (paired): change of the mean flowtime against {self.baseline}, "
                         "job by job under common random numbers, 95% interval by batch "
                         "means; reduction: per-job flowtime reduction (F_base - F) / F_base; "
                         "slower: share of jobs slower than under it")
            lines += [verdict(row["label"], self.baseline, row["paired_diff"],
                              row["paired_ci95"])
                      for row in self.summary.to_dict("records")
                      if row["label"] != self.baseline]
        if self.flows is not None:
            lines += ["", self.format_flows()]
        return "\n".join(line.rstrip() for line in lines)

    def format_flows(self) -> str:
        """The flow cost metrics: per metric and label, mean cost and ratio (mean / worst)."""
        f = self.flows
        labels = list(dict.fromkeys(f["label"]))
        grouped = f.groupby(["metric", "label"], sort=False)
        cost, mean, worst = grouped["cost"].mean(), grouped["ratio"].mean(), \
            grouped["ratio"].max()
        bound = f.groupby("metric", sort=False)["bound"].mean()
        cells = [["metric", "bound", *labels]]
        for metric in dict.fromkeys(f["metric"]):
            cells.append([metric, f"{bound[metric]:.4g}", *(
                f"{cost[metric, lab]:.4g} ({mean[metric, lab]:.2f}/{worst[metric, lab]:.2f})"
                for lab in labels)])
        widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
        lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                           for i, (c, w) in enumerate(zip(r, widths, strict=True)))
                 for r in cells]
        lines.append("flow costs in time units of workload.flow_time_unit, averaged over seeds; "
                     "(mean/worst) ratio (cost + 1) / (lower bound + 1) over seeds (004 §3)")
        return "\n".join(lines)


def _finite(value: Any) -> bool:
    return value is not None and math.isfinite(value)


def _num(value: Any) -> str:
    return f"{value:.1f}" if _finite(value) else "-"


def _pct(value: Any) -> str:
    return f"{100 * value:.1f}%" if _finite(value) else "-"


def _signed_pct(value: Any) -> str:
    return f"{100 * value:+.1f}%" if _finite(value) else "-"


# ---------------------------------------------------------------------------- entry point
def compare(scenario: Scenario | str | os.PathLike | Mapping[str, Any],
            schedulers: str | Sequence[str | Spec | tuple[str, Mapping[str, Any]]], *,
            seeds: str | Sequence[int] | None = None, reps: int | None = None,
            jobs_parallel: int | None = None, out: str | os.PathLike | None = None,
            baseline: str | None = None, within: str | Sequence[float] = WITHIN,
            overrides: Mapping[str, Any] | None = None, fmt: str = "parquet",
            dask: Any = None, progress: bool | str = False,
            restart: bool = False) -> Comparison:
    """Run several schedulers on the same worlds and workloads and compare them.

    Every (scheduler, seed) pair is one run; replication ``i`` of every scheduler uses
    seed ``seeds[i]``, so all schedulers see the same worlds and jobs.

    Args:
        scenario: A scenario, a TOML path or a mapping (see :func:`load_scenario`).
        schedulers: Specs such as ``"srpt"`` or ``"fair[multitasking=true]"`` (a list,
            or one comma-separated string), or ``(name, params)`` pairs.
        seeds: Seeds of the replications; default ``run.seed + i`` for ``reps`` of them.
        reps: Number of replications (default 1); must match ``seeds`` if both given.
        jobs_parallel: Worker processes (default: the number of CPUs).
        out: Comparison directory: every run is saved there and reused by later calls
            with the same scenario. None keeps everything in memory.
        baseline: Label of the scheduler the per-job reduction ratios refer to.
        within: Flowtime thresholds (s) of the ``within_<T>`` columns.
        overrides: Dotted-key overrides applied to the scenario.
        fmt: Table format of the saved runs: ``"parquet"`` or ``"csv"``.
        dask: Address of a Dask scheduler, or a ``distributed.Client``, to run on
            instead of local processes (needs ``pip install 'geosim[dask]'``).
        progress: Report finished runs on standard error: True or ``"bar"`` for a
            progress bar, ``"lines"`` for one line per run (for logs and pipes).
        restart: When ``out`` holds a comparison written by different code or of a
            different scenario, remove it and start afresh instead of refusing.

    Returns:
        The comparison tables.

    Raises:
        GeosimError: Bad input (checked before anything runs or is written), or a run
            that failed (named by scheduler and seed; finished runs stay saved).
    """
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario, overrides)
    elif overrides:
        scenario = scenario.with_overrides(overrides)
    specs = coerce_specs(schedulers)
    seed_list = resolve_seeds(scenario, seeds, reps)
    base = _baseline_label(baseline, specs)
    thresholds = check_within(within)
    workers = _check_workers(jobs_parallel)
    if fmt not in ("parquet", "csv"):
        raise GeosimError(f"unknown table format {fmt!r} (parquet or csv)", source="format")
    store = CompareDir.open(out, scenario, specs, seed_list, restart) \
        if out is not None else None
    with dask_client(dask) if dask is not None else contextlib.nullcontext() as client:
        if store is not None:
            store.write_manifest()
        outcomes = _run_all(scenario, specs, seed_list, store, fmt, workers, client, progress)
    comparison = build_comparison(outcomes, [s.label for s in specs], seed_list, base,
                                  thresholds)
    if scenario["workload"]["kind"] == "flows":
        comparison.flows = flow_table(scenario, outcomes, [s.label for s in specs], seed_list)
    if store is not None:
        store.write_tables(comparison, fmt)
        comparison.out = store.path
    return comparison


def flow_table(scenario: Scenario, outcomes: Sequence[RunOutcome], labels: Sequence[str],
               seeds: Sequence[int]) -> pd.DataFrame:
    """Cost, lower bound and ratio of every metric of 004 Tables 1-2, per label and seed.

    The bound is computed once per seed, on that seed's flows, so every label's ratio in a
    replication divides by the same number.
    """
    from geosim.flowcost import flow_bounds, ratio
    from geosim.model import GeoModel
    unit = scenario["workload"]["flow_time_unit"]
    by_key = {(o.label, o.seed): o for o in outcomes}
    rows = []
    for seed in seeds:
        model = GeoModel(scenario, scheduler="fifo", seed=seed)
        bounds = flow_bounds(model.workload, model.world.n_slots, unit)
        for label in labels:
            summary = by_key[(label, seed)].summary
            rows += [{"label": label, "seed": seed, "metric": m, "cost": summary[f"flow {m}"],
                      "bound": b, "ratio": float(ratio(summary[f"flow {m}"], b))}
                     for m, b in bounds.items()]
    return pd.DataFrame(rows)


def _check_workers(jobs_parallel: int | None) -> int:
    if jobs_parallel is None:
        return os.cpu_count() or 1
    if isinstance(jobs_parallel, bool) or not isinstance(jobs_parallel, int) or \
            jobs_parallel < 1:
        raise GeosimError(f"must be a whole number >= 1 (got {jobs_parallel!r})",
                          source="jobs-parallel")
    return jobs_parallel


def _run_all(scenario: Scenario, specs: Sequence[Spec], seeds: Sequence[int],
             store: CompareDir | None, fmt: str, workers: int, client: Any,
             progress: bool | str) -> list[RunOutcome]:
    """Load the saved runs, run the missing ones; return every outcome."""
    outcomes, missing = [], []
    for spec in specs:
        for seed in seeds:
            saved = store.load(spec, seed) if store is not None else None
            if saved is not None:
                outcomes.append(saved)
            else:
                dest = str(store.run_dir(spec, seed)) if store is not None else None
                missing.append(_Run(spec, seed, dest))
    from tqdm import tqdm
    total = len(outcomes) + len(missing)
    if progress == "lines" and missing:
        print(f"compare: {len(outcomes)} of {total} runs saved, {len(missing)} to run",
              file=sys.stderr, flush=True)
    with tqdm(total=total, initial=len(outcomes), unit="run", desc="compare",
              file=sys.stderr, disable=progress in (False, "lines"), leave=False,
              dynamic_ncols=True) as bar:
        def done(outcome: RunOutcome) -> None:
            outcomes.append(outcome)
            bar.update(1)
            if progress == "lines":
                print(f"compare: {len(outcomes)}/{total} runs done ({outcome.label}, seed "
                      f"{outcome.seed}, {outcome.summary.get('wall_seconds', math.nan):.0f} s)",
                      file=sys.stderr, flush=True)

        if client is not None:
            run_dask(client, scenario, missing, fmt, done)
        else:
            run_local(scenario, missing, fmt, workers, done)
    return outcomes
