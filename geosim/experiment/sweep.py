"""Load-regime maps (``geosim sweep``): one comparison per cell of a grid of scenario values.

A sweep varies one to three scenario keys (``workload.arrival_rate``,
``workload.reference_mips``, ``links.bandwidth_mean``, ...) over given values. Every
cell of the Cartesian product is the base scenario with that cell's values, and every
cell is a :func:`~geosim.experiment.compare` of the same schedulers on the same seeds,
kept in its own comparison directory ``DIR/cell-<i>``: each cell resumes run by run,
refuses results of other code and runs locally or on Dask exactly as a comparison does.

``DIR/sweep.json`` (:data:`SWEEP_MANIFEST`) records the grid, the schedulers, the seeds,
the scenario and the code fingerprint, and the focus, versus and thresholds of the table
written last. Rerunning with the same grid, schedulers and seeds resumes; another grid,
other schedulers or seeds, another scenario or other code are refused unless ``restart``,
which removes the sweep. ``DIR/sweep.csv`` (:data:`SWEEP_TABLE`) holds the table.

Per cell, from the runs' outcomes (each loaded once), the table gives:

- ``best``: the scheduler with the lowest mean flowtime, ``runner_up`` the next, and the
  runner-up's paired change of the mean against the best (``runner_up_diff``,
  ``runner_up_ci95``); ``decided`` when its 95% interval lies above 0;
- with a focus (and the schedulers it is set against, ``versus``): ``versus_best``, the
  one of ``versus`` with the lowest mean, the focus's paired change of the mean against it
  (``focus_diff``, ``focus_ci95``) and its ``verdict`` (``faster``, ``slower`` or
  ``undecided``), the mean slot utilisation of the focus's runs (``focus_utilisation``)
  and the share of its jobs within each threshold (``focus_within_<T>``);
- ``utilisation``: the mean slot utilisation of all runs; ``unfinished``: jobs not
  finished over all runs; ``mean <label>``: every scheduler's mean flowtime.

The paired changes are :func:`~geosim.experiment.build_comparison`'s (job by job under
common random numbers, 95% interval by batch means).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geosim.errors import GeosimError
from geosim.experiment import lock
from geosim.experiment.options import (
    _check_workers,
    check_within,
    coerce_specs,
    resolve_seeds,
    scheduler_label,
)
from geosim.experiment.runner import compare, dask_client
from geosim.experiment.stats import verdict
from geosim.experiment.store import (
    MANIFEST,
    CompareDir,
    RunOutcome,
    _difference,
    _identity,
    load_outcome,
    run_path,
)
from geosim.experiment.tables import (
    WITHIN,
    Comparison,
    _num,
    _pct,
    _signed_pct,
    _within_column,
    build_comparison,
)
from geosim.results import code_fingerprint
from geosim.scenario import Scenario, load_scenario, parse_override
from geosim.schedulers.spec import Spec, split_top

SWEEP_MANIFEST = "sweep.json"
SWEEP_TABLE = "sweep.csv"
#: Most keys a sweep varies.
MAX_KEYS = 3


@dataclass
class Sweep:
    """The table of a sweep (see the module documentation).

    Attributes:
        table: One row per cell, in grid order: the varied keys' values first, then
            ``cell`` and the columns of the module documentation.
        keys: The varied keys, in order.
        values: Each key's values, in order (the grid is their Cartesian product).
        labels: The scheduler labels.
        seeds: The seeds of every cell.
        focus: The scheduler set against ``versus``, if any.
        versus: The schedulers the focus is set against.
        within: The thresholds (s) of the ``focus_within_<T>`` columns.
        out: The sweep directory, if one was written.
    """

    table: pd.DataFrame
    keys: tuple[str, ...]
    values: dict[str, list[Any]]
    labels: tuple[str, ...]
    seeds: tuple[int, ...]
    focus: str | None = None
    versus: tuple[str, ...] = ()
    within: tuple[float, ...] = WITHIN
    out: Path | None = None

    def describe(self, row: Mapping[str, Any]) -> str:
        """A cell's values as ``key=value, ...``."""
        return ", ".join(f"{key}={show_value(row[key])}" for key in self.keys)

    def format(self) -> str:
        """The table as aligned text, with one verdict line per cell."""
        text: list[tuple[str, str, Callable[[Any], str]]] = [
            *((key, key, show_value) for key in self.keys),
            ("best", "best", str), ("runner-up", "runner_up", str)]
        numbers = [("Δ runner-up", "runner_up_diff", _signed_pct),
                   ("±95%", "runner_up_ci95", _pct)]
        if self.focus is not None:
            numbers += [("versus best", "versus_best", str),
                        ("Δ focus (paired)", "focus_diff", _signed_pct),
                        ("±95%", "focus_ci95", _pct), ("verdict", "verdict", str),
                        ("util focus", "focus_utilisation", _pct)]
        numbers.append(("util all", "utilisation", _pct))
        if self.focus is not None:
            numbers += [(f"<={t:g}s", f"focus_{_within_column(t)}", _pct) for t in self.within]
        numbers += [(label, f"mean {label}", _num) for label in self.labels]
        columns = text + numbers
        rows = self.table.to_dict("records")
        cells = [[head for head, _, _ in columns]]
        cells += [[fmt(row[key]) for _, key, fmt in columns] for row in rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
        lines = ["  ".join(c.ljust(w) if i < len(text) else c.rjust(w)
                           for i, (c, w) in enumerate(zip(r, widths, strict=True)))
                 for r in cells]
        lines.append(self._legend())
        lines += [self._verdict(row) for row in rows]
        return "\n".join(line.rstrip() for line in lines)

    def _legend(self) -> str:
        text = ("best: lowest mean flowtime; Δ runner-up: the runner-up's change of the mean "
                "flowtime against the best")
        if self.focus is not None:
            text += (f"; Δ focus: {self.focus}'s against the best of "
                     f"{', '.join(self.versus)} by mean")
        text += (" (paired: job by job under common random numbers, 95% interval by batch "
                 f"means, {len(self.seeds)} seed{'s' if len(self.seeds) > 1 else ''}); util: "
                 "mean slot utilisation")
        if self.focus is not None:
            text += " of the focus's runs and of all runs; <=Ts: share of the focus's jobs"
        return text + "; then each scheduler's mean flowtime (s)"

    def _verdict(self, row: Mapping[str, Any]) -> str:
        where = f"cell {row['cell']} ({self.describe(row)})"
        runner = verdict(row["runner_up"], row["best"], row["runner_up_diff"],
                         row["runner_up_ci95"])
        if self.focus is None:
            return f"{where}: best {row['best']}; {runner}"
        focus = verdict(self.focus, row["versus_best"], row["focus_diff"], row["focus_ci95"])
        decided = "decided" if row["decided"] else "undecided"
        return f"{where}: {focus}; best {row['best']} ({decided} against {row['runner_up']})"


def show_value(value: Any) -> str:
    """A scenario value as the sweep prints it: ``0.07``, ``[10, 20]``, ``true``, ``fetch``."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(show_value(v) for v in value) + "]"
    return str(value)


def decision(diff: float, half: float) -> str:
    """The word of :func:`~geosim.experiment.verdict`: faster, slower or undecided."""
    if math.isfinite(diff) and math.isfinite(half):
        if diff + half < 0:
            return "faster"
        if diff - half > 0:
            return "slower"
    return "undecided"


# ---------------------------------------------------------------------------- checking
def check_grid(scenario: Scenario, vary: Mapping[str, Any]
               ) -> tuple[dict[str, list[Any]], list[Scenario]]:
    """Check the varied keys and values; return them and every cell's scenario.

    A key's values are a sequence (or a comma-separated string, split outside brackets
    and parsed as TOML values). Each value is checked on the base scenario alone, then
    every cell as a whole, so a bad key or value is named before any cell runs.

    Returns:
        Each key's values as the scenario holds them, and the cells' scenarios in grid
        order (the last key varies fastest).

    Raises:
        GeosimError: No key or more than :data:`MAX_KEYS`, a key that is unknown or that
            a sweep cannot vary (``run.seed``, ``scheduler.*``), no value, a value given
            twice, or a value the scenario refuses.
    """
    if not isinstance(vary, Mapping) or not 1 <= len(vary) <= MAX_KEYS:
        count = len(vary) if isinstance(vary, Mapping) else vary
        raise GeosimError(f"vary 1 to {MAX_KEYS} keys (got {count!r})", source="vary")
    values: dict[str, list[Any]] = {}
    for key, given in vary.items():
        if not isinstance(key, str) or key == "run.seed" or key.startswith("scheduler."):
            raise GeosimError(f"{key!r} cannot be varied (the seeds and schedulers are the "
                              "sweep's own options)", source="vary")
        items = [parse_override(f"{key}={v}", "vary")[1] for v in split_top(given, "vary")] \
            if isinstance(given, str) else list(given) if isinstance(given, Sequence) else None
        if not items:
            raise GeosimError(f"{key}: no value to vary over (got {given!r})", source="vary")
        values[key] = []
        for value in map(_plain, items):
            try:
                cell = scenario.with_overrides({key: value})
            except GeosimError as exc:
                raise GeosimError(f"{key}={show_value(value)}: {_reason(exc)}",
                                  source="vary") from None
            if cell.get(key) in values[key]:
                raise GeosimError(f"{key}={show_value(value)} is given twice", source="vary")
            values[key].append(cell.get(key))
    cells = []
    for combo in itertools.product(*values.values()):
        overrides = dict(zip(values, combo, strict=True))
        try:
            cells.append(scenario.with_overrides(overrides))
        except GeosimError as exc:
            where = ", ".join(f"{k}={show_value(v)}" for k, v in overrides.items())
            raise GeosimError(f"the cell {where}: {_reason(exc)}", source="vary") from None
    return values, cells


def _plain(value: Any) -> Any:
    """``value`` with NumPy scalars and arrays as Python numbers and lists."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _reason(exc: GeosimError) -> str:
    """The message of a scenario error without the scenario's file name."""
    text = str(exc)
    return text[len(exc.source) + 2:] if exc.source and text.startswith(f"{exc.source}: ") \
        else text


def check_focus(focus: str | None, versus: str | Sequence[str] | None,
                specs: Sequence[Spec]) -> tuple[str | None, tuple[str, ...]]:
    """The focus's label and those of the schedulers it is set against.

    ``versus`` defaults to every other scheduler; it needs a focus.

    Raises:
        GeosimError: A name that is not among the schedulers, ``versus`` without a focus,
            or holding the focus, or empty.
    """
    if focus is None:
        if versus is not None:
            raise GeosimError("needs a focus to set against", source="versus")
        return None, ()
    mine = scheduler_label(focus, specs, "focus")
    if versus is None:
        names = [s.label for s in specs if s.label != mine]
    else:
        names = split_top(versus, "versus") if isinstance(versus, str) else list(versus)
    others = tuple(dict.fromkeys(scheduler_label(n.strip(), specs, "versus") for n in names))
    if not others:
        raise GeosimError("no scheduler to set the focus against", source="versus")
    if mine in others:
        raise GeosimError(f"holds the focus {mine!r}", source="versus")
    return mine, others


# ---------------------------------------------------------------------------- directory
def _manifest(scenario: Scenario, values: Mapping[str, list[Any]], labels: Sequence[str],
              seeds: Sequence[int], focus: str | None, versus: Sequence[str],
              within: Sequence[float]) -> dict[str, Any]:
    from geosim.version import __version__
    cells = [{"dir": f"cell-{i}", "values": dict(zip(values, combo, strict=True))}
             for i, combo in enumerate(itertools.product(*values.values()))]
    manifest = {"geosim": __version__, "code": code_fingerprint(),
                "scenario": scenario.to_toml(), "source": scenario.source,
                "vary": dict(values), "cells": cells, "schedulers": list(labels),
                "seeds": list(seeds), "focus": focus, "versus": list(versus),
                "within": list(within)}
    return json.loads(json.dumps(manifest, default=str))


def _refusal(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """Why a sweep directory holding ``old`` cannot take the sweep ``new``, or None."""
    if old.get("code") != new["code"]:
        version = old.get("geosim", "?")
        return (f"holds a sweep written by geosim {version} (code {old.get('code')}), this is "
                f"geosim {new['geosim']} (code {new['code']}); results of different code "
                "cannot be mixed")
    if _identity(old["scenario"]) != _identity(new["scenario"]):
        diff = _difference(_identity(new["scenario"]), _identity(old["scenario"]))
        return f"holds a sweep of a different scenario ({diff})"
    grid = [(k, v) for k, v in old["vary"].items()], [(k, v) for k, v in new["vary"].items()]
    if grid[0] != grid[1]:
        return f"holds a sweep of another grid ({_grid(old)} there, {_grid(new)} here)"
    for key, what in (("schedulers", "other schedulers"), ("seeds", "other seeds")):
        if old[key] != new[key]:
            return (f"holds a sweep of {what} ({','.join(map(str, old[key]))} there, "
                    f"{','.join(map(str, new[key]))} here)")
    return None


def _grid(manifest: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={','.join(show_value(v) for v in vs)}"
                    for k, vs in manifest["vary"].items())


def _open_dir(path: Path, manifest: Mapping[str, Any], restart: bool) -> bool:
    """Check a sweep directory (nothing written); return whether to remove what it holds.

    Raises:
        GeosimError: It is not empty and not a sweep directory, or holds another sweep
            (:func:`_refusal`) and ``restart`` is false.
    """
    if not path.exists():
        return False
    if not path.is_dir():
        raise GeosimError("exists and is not a directory", source=str(path))
    file = path / SWEEP_MANIFEST
    if not file.is_file():
        if any(path.iterdir()):
            raise GeosimError("exists and is neither empty nor a geosim sweep directory "
                              f"(no {SWEEP_MANIFEST})", source=str(path))
        return False
    try:
        old = json.loads(file.read_text())
        why = _refusal(old, manifest)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        why = f"unreadable {SWEEP_MANIFEST} ({exc})"
    if why is None or restart:
        return why is not None
    raise GeosimError(f"{why}; use another output directory (or --restart to replace it)",
                      source=str(path))


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    tmp = path.parent / f".{path.name}.tmp"
    tmp.write_text(json.dumps(data, indent=2))
    os.replace(tmp, path)


# ---------------------------------------------------------------------------- one cell
def _cell_outcomes(directory: Path, labels: Sequence[str],
                   seeds: Sequence[int]) -> list[RunOutcome]:
    """Every run's outcome of a cell's comparison directory, each read once."""
    manifest = json.loads((directory / MANIFEST).read_text())
    return [load_outcome(run_path(directory, manifest, label, seed), label, seed)  # type: ignore[arg-type]
            for label in labels for seed in seeds]


def _mean_order(summary: pd.DataFrame, labels: Sequence[str]) -> list[str]:
    """``labels`` by mean flowtime, lowest first (a label without one last)."""
    means = summary.set_index("label")["mean_flowtime"]
    return sorted(labels, key=lambda lab: means[lab] if math.isfinite(means[lab]) else math.inf)


def cell_row(outcomes: Sequence[RunOutcome], labels: Sequence[str], seeds: Sequence[int],
             focus: str | None, versus: Sequence[str], within: Sequence[float]
             ) -> tuple[dict[str, Any], Comparison]:
    """One cell's row of the sweep table, and the cell's comparison against its reference.

    The reference (the comparison's baseline) is the best of ``versus`` with a focus, else
    the best scheduler.
    """
    order = _mean_order(build_comparison(outcomes, labels, seeds, None, within).summary,
                        labels)
    best, runner_up = order[:2]
    versus_best = next(label for label in order if label in versus) if focus else best
    reference = build_comparison(outcomes, labels, seeds, versus_best, within)
    summary = reference.summary.set_index("label")
    head = summary if versus_best == best else build_comparison(
        outcomes, [best, runner_up], seeds, best, within).summary.set_index("label")
    runs = reference.runs
    util = runs.get("slot_utilisation", pd.Series(math.nan, runs.index))
    row: dict[str, Any] = {
        "best": best, "runner_up": runner_up,
        "runner_up_diff": float(head.loc[runner_up, "paired_diff"]),
        "runner_up_ci95": float(head.loc[runner_up, "paired_ci95"]),
        "decided": decision(head.loc[runner_up, "paired_diff"],
                            head.loc[runner_up, "paired_ci95"]) == "slower",
    }
    if focus is not None:
        mine = summary.loc[focus]
        row.update({
            "versus_best": versus_best,
            "focus_diff": float(mine["paired_diff"]),
            "focus_ci95": float(mine["paired_ci95"]),
            "verdict": decision(mine["paired_diff"], mine["paired_ci95"]),
            "focus_utilisation": float(util[runs["label"] == focus].mean()),
        })
    row["utilisation"] = float(util.mean())
    if focus is not None:
        row.update({f"focus_{_within_column(t)}": float(mine[_within_column(t)])
                    for t in within})
    row["unfinished"] = int(summary["unfinished"].sum())
    row.update({f"mean {label}": float(summary.loc[label, "mean_flowtime"])
                for label in labels})
    return row, reference


# ---------------------------------------------------------------------------- sweep
def sweep(scenario: Scenario | str | os.PathLike | Mapping[str, Any],
          schedulers: str | Sequence[str | Spec | tuple[str, Mapping[str, Any]]],
          vary: Mapping[str, Sequence[Any] | str], *, focus: str | None = None,
          versus: str | Sequence[str] | None = None, seeds: str | Sequence[int] | None = None,
          reps: int | None = None, jobs_parallel: int | None = None,
          out: str | os.PathLike | None = None, within: str | Sequence[float] = WITHIN,
          overrides: Mapping[str, Any] | None = None, fmt: str = "parquet", dask: Any = None,
          progress: bool | str = False, restart: bool = False) -> Sweep:
    """Compare schedulers in every cell of a grid of scenario values (a load-regime map).

    Args:
        scenario: The base scenario: a scenario, a TOML path or a mapping.
        schedulers: Specs, as for :func:`~geosim.experiment.compare` (at least two).
        vary: One to three dotted keys, each with its values; the grid is their Cartesian
            product (the last key varies fastest).
        focus: A scheduler to set against ``versus`` in every cell.
        versus: The schedulers the focus is set against (a list or a comma-separated
            string); default every other one. The focus meets the best of them by mean.
        seeds: Seeds of the replications of every cell.
        reps: Number of replications (default 1).
        jobs_parallel: Worker processes (default: the number of CPUs).
        out: Sweep directory: ``sweep.json``, ``sweep.csv`` and a comparison directory
            ``cell-<i>`` per cell. None keeps nothing (a temporary directory serves).
        within: Flowtime thresholds (s) of the focus's ``focus_within_<T>`` columns.
        overrides: Dotted-key overrides applied to the base scenario.
        fmt: Table format of the saved runs: ``"parquet"`` or ``"csv"``.
        dask: Address of a Dask scheduler, or a ``distributed.Client``.
        progress: As for :func:`~geosim.experiment.compare`; also a line per cell.
        restart: When ``out`` holds another sweep (grid, schedulers, seeds, scenario or
            code), remove it and start afresh instead of refusing.

    Returns:
        The sweep table.

    Raises:
        GeosimError: Bad input (checked before anything runs or is written), or a run
            that failed (finished runs stay saved).
    """
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario, overrides)
    elif overrides:
        scenario = scenario.with_overrides(overrides)
    specs = coerce_specs(schedulers)
    if len(specs) < 2:
        raise GeosimError("a sweep needs at least two schedulers", source="schedulers")
    labels = [s.label for s in specs]
    values, scenarios = check_grid(scenario, vary)
    seed_list = resolve_seeds(scenario, seeds, reps)
    mine, others = check_focus(focus, versus, specs)
    thresholds = check_within(within)
    _check_workers(jobs_parallel)
    if fmt not in ("parquet", "csv"):
        raise GeosimError(f"unknown table format {fmt!r} (parquet or csv)", source="format")
    manifest = _manifest(scenario, values, labels, seed_list, mine, others, thresholds)
    with contextlib.ExitStack() as stack:
        if out is None:
            path, stale = Path(stack.enter_context(tempfile.TemporaryDirectory())), False
        else:
            path = Path(out)
            stack.enter_context(lock.hold(path, "sweep"))
            stale = _open_dir(path, manifest, restart)
            if path.exists() and not stale:
                for cell, sc in zip(manifest["cells"], scenarios, strict=True):
                    CompareDir.open(path / cell["dir"], sc, specs, seed_list, restart)
        client = stack.enter_context(dask_client(dask)) if dask is not None else None
        if stale:
            shutil.rmtree(path)
        path.mkdir(parents=True, exist_ok=True)
        if out is not None and (stale or not (path / SWEEP_MANIFEST).is_file()):
            _write_json(path / SWEEP_MANIFEST, manifest)
        rows = []
        for i, (cell, sc) in enumerate(zip(manifest["cells"], scenarios, strict=True)):
            if progress:
                where = ", ".join(f"{k}={show_value(v)}" for k, v in cell["values"].items())
                print(f"sweep: cell {i + 1}/{len(scenarios)} ({where})", file=sys.stderr,
                      flush=True)
            directory = path / cell["dir"]
            compare(sc, specs, seeds=seed_list, jobs_parallel=jobs_parallel, out=directory,
                    within=thresholds, fmt=fmt, dask=client, progress=progress,
                    restart=restart)
            outcomes = _cell_outcomes(directory, labels, seed_list)
            row, reference = cell_row(outcomes, labels, seed_list, mine, others, thresholds)
            if out is not None:
                CompareDir.open(directory, sc, specs, seed_list).write_tables(reference, fmt)
            rows.append({**cell["values"], "cell": i, **row})
        result = Sweep(pd.DataFrame(rows), tuple(values), dict(manifest["vary"]),
                       tuple(labels), tuple(seed_list), mine, others, thresholds)
        if out is not None:
            result.table.to_csv(path / SWEEP_TABLE, index=False)
            _write_json(path / SWEEP_MANIFEST, manifest)
            result.out = path
    return result


def load_sweep(directory: str | os.PathLike) -> Sweep:
    """Read a sweep directory written by :func:`sweep`.

    Raises:
        GeosimError: It is not a sweep directory or is incomplete.
    """
    path = Path(directory)
    try:
        manifest = json.loads((path / SWEEP_MANIFEST).read_text())
        values = {k: list(v) for k, v in manifest["vary"].items()}
        cells = [cell["values"] for cell in manifest["cells"]]
        labels, seeds = tuple(manifest["schedulers"]), tuple(manifest["seeds"])
        versus, within = tuple(manifest["versus"]), tuple(manifest["within"])
        focus = manifest["focus"]
    except FileNotFoundError:
        raise GeosimError(f"not a geosim sweep directory (no {SWEEP_MANIFEST})",
                          source=str(path)) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise GeosimError(f"unreadable {SWEEP_MANIFEST} ({exc})", source=str(path)) from None
    if not (path / SWEEP_TABLE).is_file():
        raise GeosimError(f"incomplete sweep directory: no {SWEEP_TABLE} (run the sweep again "
                          "to finish it)", source=str(path))
    table = pd.read_csv(path / SWEEP_TABLE, keep_default_na=False, na_values=[""])
    if len(table) != len(cells):
        raise GeosimError(f"{SWEEP_TABLE} has {len(table)} rows for {len(cells)} cells (run "
                          "the sweep again to finish it)", source=str(path))
    for key in values:
        table[key] = pd.Series([cell[key] for cell in cells], index=table.index, dtype=object)
    return Sweep(table, tuple(values), values, labels, seeds, focus, versus, within, path)
