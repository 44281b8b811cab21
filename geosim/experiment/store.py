"""The result store of comparisons: comparison directories, written and read back.

A comparison directory holds ``compare.json`` (:data:`MANIFEST`), every run's complete
result under ``runs/<scheduler>/seed-<s>/`` and the tables of the last comparison made in
it (``summary.csv``, ``runs.csv``, ``per_job.<fmt>``, ``flow_costs.csv`` for flows).

It is resumable: ``compare.json`` records the scenario, the schedulers, the seeds, the
geosim version and the fingerprint of the code
(:func:`~geosim.results.code_fingerprint`); a later call with the same scenario and the
same code skips every run whose directory is complete and may add schedulers or seeds.
A directory written by different code (or before fingerprints were recorded) is refused
rather than re-run: its runs are kept, and results of different code are never mixed.

``compare.json`` also records the baseline of the tables written last (``baseline``,
null without one), updated when the tables are written. :func:`load_comparison` reads a
directory back, :func:`comparison_baseline` names its baseline (also for a
``compare.json`` without the key) and :func:`run_path` finds its runs.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from geosim.errors import GeosimError
from geosim.experiment.outcome import RunOutcome
from geosim.results import code_fingerprint
from geosim.scenario import Scenario, default_scenario
from geosim.schedulers.build import resolve_alias
from geosim.schedulers.spec import Spec

if TYPE_CHECKING:
    from geosim.experiment.tables import Comparison

MANIFEST = "compare.json"
#: Columns of a run's jobs table that the summary needs.
JOB_COLUMNS = ("job", "arrival", "work", "weight", "flowtime", "finished")


#: The tables every saved run holds (as ``<name>.parquet`` or ``<name>.csv``).
RUN_TABLES = ("jobs", "tasks", "copies", "clusters", "links")


def saved_run_problem(directory: str | os.PathLike, spec: Spec, seed: int,
                      code: str) -> str:
    """What keeps a saved run from being reused, or ``""`` when it can be.

    A run can be reused when its ``summary.json`` and ``meta.json`` read back as JSON
    objects, the meta names this scheduler (its name and every parameter of ``spec``),
    seed and code, and every table of :data:`RUN_TABLES` is there and readable (Parquet:
    its footer; CSV: its header), the jobs table with one row per job of the summary.

    Args:
        directory: The run's directory.
        spec: The scheduler it should hold (an alias resolved: what ran).
        seed: The seed it should hold.
        code: The code fingerprint of the comparison.
    """
    src = Path(directory)
    records = {}
    for name in ("summary.json", "meta.json"):
        try:
            records[name] = json.loads((src / name).read_text())
        except FileNotFoundError:
            return f"{name} is missing"
        except (OSError, ValueError):
            return f"{name} cannot be read"
        if not isinstance(records[name], dict):
            return f"{name} cannot be read"
    meta, summary = records["meta.json"], records["summary.json"]
    params = meta.get("params") if isinstance(meta.get("params"), dict) else {}
    if meta.get("scheduler") != spec.name or meta.get("seed") != seed \
            or any(params.get(k) != v for k, v in json.loads(json.dumps(spec.params)).items()):
        return "meta.json describes another run"
    if meta.get("code") != code:
        return "meta.json names other code"
    for name in RUN_TABLES:
        rows = _table_rows(src, name)
        if rows is None:
            return f"{name}.parquet or {name}.csv is missing or cannot be read"
        if name == "jobs" and rows != summary.get("jobs", rows) and rows >= 0:
            return f"jobs table has {rows} rows, summary.json {summary.get('jobs')} jobs"
    return ""


def _table_rows(directory: Path, name: str) -> int | None:
    """Rows of a saved table (-1: a CSV, not counted), or None if unreadable or missing."""
    import pyarrow.parquet as pq
    parquet, csv = directory / f"{name}.parquet", directory / f"{name}.csv"
    try:
        if parquet.is_file():
            return int(pq.read_metadata(parquet).num_rows)
        if csv.is_file():
            with csv.open() as fh:
                return -1 if fh.readline().strip() else None
    except (OSError, ValueError):      # pyarrow's ArrowInvalid is a ValueError
        return None
    return None


def load_outcome(directory: str | os.PathLike, label: str, seed: int) -> RunOutcome:
    """Read what the comparison needs from a saved run (its summary and jobs table)."""
    src = Path(directory)
    summary = json.loads((src / "summary.json").read_text())
    summary = {k: math.nan if v is None else v for k, v in summary.items()}
    parquet = src / "jobs.parquet"
    jobs = pd.read_parquet(parquet, columns=list(JOB_COLUMNS)) if parquet.exists() else \
        pd.read_csv(src / "jobs.csv", usecols=list(JOB_COLUMNS), float_precision="round_trip")
    return RunOutcome(label, seed, summary, jobs.loc[:, list(JOB_COLUMNS)])


def safe_name(text: str) -> str:
    """A file name made of ``text``: brackets and unusual characters become ``_``."""
    name = re.sub(r"[^A-Za-z0-9._+=,-]+", "_", text.replace("]", "")).strip("._")
    return name or "_"


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

    def __init__(self, path: Path, manifest: dict[str, Any], stale: bool = False,
                 aliases: Mapping[str, str] | None = None):
        self.path, self.manifest, self.stale = path, manifest, stale
        #: The scenario's ``scheduler.aliases``: a saved run records what it ran.
        self.aliases = dict(aliases or {})
        #: Saved runs found damaged by :meth:`load` (one line each), made again.
        self.damaged: list[str] = []

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
        from geosim.version import __version__
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
        return cls(path, manifest, stale, scenario["scheduler"]["aliases"])

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
        path = run_path(self.path, self.manifest, spec.label, seed)
        if path is None:   # not entered by open()
            raise KeyError(spec.label)
        return path

    def load(self, spec: Spec, seed: int) -> RunOutcome | None:
        """The saved outcome of a run, or None if it has to run (again).

        A run directory that exists but fails :func:`saved_run_problem` (or whose jobs
        table then cannot be read) is removed and recorded in :attr:`damaged`, so the run
        is made again. (A save is atomic: an interrupted one leaves no run directory.)
        """
        src = self.run_dir(spec, seed)
        if not src.exists():
            return None
        problem = saved_run_problem(src, resolve_alias(self.aliases, spec), seed,
                                    self.manifest["code"])
        if not problem:
            try:
                return load_outcome(src, spec.label, seed)
            except (OSError, ValueError, KeyError):
                problem = "the jobs table cannot be read"
        self.damaged.append(f"{spec.label}, seed {seed}: {problem}")
        shutil.rmtree(src, ignore_errors=True)
        return None

    def write_tables(self, comparison: Comparison, fmt: str) -> None:
        """Write ``summary.csv``, ``runs.csv`` and ``per_job.<fmt>``; record the baseline.

        The tables are written first and the manifest then records their baseline
        (``baseline``, null without one), so that it names the baseline of the tables on
        disk whenever it is read.
        """
        comparison.summary.to_csv(self.path / "summary.csv", index=False)
        comparison.runs.to_csv(self.path / "runs.csv", index=False)
        if fmt == "parquet":
            comparison.per_job.to_parquet(self.path / "per_job.parquet", index=False)
        else:
            comparison.per_job.to_csv(self.path / "per_job.csv", index=False)
        if comparison.flows is not None:
            comparison.flows.to_csv(self.path / "flow_costs.csv", index=False)
        self.manifest["baseline"] = comparison.baseline
        self.write_manifest()


def _unique_dir(label: str, taken: set[str]) -> str:
    name = safe_name(label)
    if name in taken:
        name = f"{name}-{hashlib.sha1(label.encode()).hexdigest()[:8]}"
    return name


# ---------------------------------------------------------------------------- reading
@dataclass
class SavedComparison:
    """A comparison directory read back: its manifest and the tables written last.

    Attributes:
        path: The directory.
        manifest: Its ``compare.json``.
        summary: ``summary.csv``: one row per scheduler label.
        runs: ``runs.csv``: one row per run.
        per_job: ``per_job.parquet`` or ``per_job.csv``: per label and job, the
            replication-averaged flowtime and the reduction ratio.
        labels: The labels of the tables, in the manifest's order.
        seeds: The seeds of the tables, in the manifest's order.
    """

    path: Path
    manifest: dict[str, Any]
    summary: pd.DataFrame
    runs: pd.DataFrame
    per_job: pd.DataFrame
    labels: list[str]
    seeds: list[int]

    @property
    def baseline(self) -> str | None:
        """The label the tables' reductions refer to (:func:`comparison_baseline`)."""
        return comparison_baseline(self.manifest, self.per_job, self.labels)


def run_path(directory: str | os.PathLike, manifest: Mapping[str, Any], label: str,
             seed: int) -> Path | None:
    """Where a comparison directory keeps the run of ``label`` with ``seed``.

    Returns:
        The run's directory (which may not exist yet), or None when the manifest has no
        scheduler ``label``.
    """
    entry = next((s for s in manifest["schedulers"] if s["label"] == label), None)
    if entry is None:
        return None
    return Path(directory) / "runs" / entry["dir"] / f"seed-{seed}"


def comparison_baseline(manifest: Mapping[str, Any], per_job: pd.DataFrame | None,
                        labels: Sequence[str]) -> str | None:
    """The label a saved comparison's reductions refer to, or None if it has none.

    ``compare.json`` records it (key ``baseline``, null for none); a recorded label
    that the tables do not hold gives None. A manifest without the key (written by an
    older geosim) is read by the rule that served before: the first label whose own
    reductions are all 0, when any reduction is known. The baseline's reductions are 0
    by definition, but so are those of a scheduler with the same flowtimes, which the
    rule cannot tell apart.

    Args:
        manifest: The comparison's ``compare.json`` (empty if unknown).
        per_job: Its per-job table (column ``reduction``), for older manifests.
        labels: The labels of its tables, in order.
    """
    if "baseline" in manifest:
        recorded = manifest["baseline"]
        return recorded if recorded in labels else None
    ratio = per_job.get("reduction") if per_job is not None else None
    if ratio is not None and ratio.notna().any():
        for label in labels:
            mine = per_job.loc[per_job["label"] == label, "reduction"].dropna()
            if len(mine) and (mine == 0).all():
                return label
    return None


def _read_table(directory: Path, name: str) -> pd.DataFrame:
    parquet, csv = directory / f"{name}.parquet", directory / f"{name}.csv"
    if parquet.exists():
        return pd.read_parquet(parquet)
    if csv.exists():
        return pd.read_csv(csv)
    raise GeosimError(f"incomplete comparison directory: no {name}.parquet or {name}.csv "
                      "(run the comparison again to finish it)", source=str(directory))


def load_comparison(directory: str | os.PathLike) -> SavedComparison:
    """Read a comparison directory written by :func:`~geosim.experiment.compare`.

    The labels and seeds are the manifest's that the tables hold: a comparison that
    added schedulers or seeds and was interrupted before writing its tables leaves them
    out.

    Raises:
        GeosimError: It is not a comparison directory or is incomplete.
    """
    path = Path(directory)
    try:
        manifest = json.loads((path / MANIFEST).read_text())
        labels = [s["label"] for s in manifest["schedulers"]]
        seeds = [int(s) for s in manifest["seeds"]]
    except FileNotFoundError:
        raise GeosimError(f"not a geosim comparison directory (no {MANIFEST})",
                          source=str(path)) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise GeosimError(f"unreadable {MANIFEST} ({exc})", source=str(path)) from None
    for name in ("summary", "runs"):
        if not (path / f"{name}.csv").is_file():
            raise GeosimError(f"incomplete comparison directory: no {name}.csv (run the "
                              "comparison again to finish it)", source=str(path))
    summary = pd.read_csv(path / "summary.csv")
    runs = pd.read_csv(path / "runs.csv")
    per_job = _read_table(path, "per_job")
    done = list(summary["label"].astype(str))
    labels = [label for label in labels if label in done]
    seeds = [s for s in seeds if s in set(runs["seed"].astype(int))]
    return SavedComparison(path, manifest, summary, runs, per_job, labels, seeds)
