"""Markdown rendering of comparison summaries, the saved job tables behind paired
differences, and the one-line refusal of bad input, shared by the benchmark scripts."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from geosim.errors import GeosimError
from geosim.experiment import MANIFEST, run_path
from geosim.experiment.sweep import decision


def add_sharing_option(parser: argparse.ArgumentParser) -> None:
    """``--sharing equal|maxmin``: the WAN sharing rule (default: the scenario's)."""
    parser.add_argument("--sharing", choices=["equal", "maxmin"], default=None,
                        help="WAN sharing rule (links.sharing; default: the scenario's)")


def sharing_override(sharing: str | None) -> dict[str, str]:
    """The scenario override ``--sharing`` asks for (none when it was not given)."""
    return {} if sharing is None else {"links.sharing": sharing}


def saved_jobs(out: Path, label: str, seeds: list[int]) -> pd.DataFrame:
    """Every saved job of ``label`` in the comparison directory ``out``, with its seed.

    The frame :func:`geosim.experiment.paired_difference` pairs job by job.
    """
    manifest = json.loads((Path(out) / MANIFEST).read_text())
    return pd.concat([pd.read_parquet(run_path(out, manifest, label, seed) / "jobs.parquet",
                                      columns=["job", "arrival", "flowtime", "weight",
                                               "finished"]).assign(seed=seed)
                      for seed in seeds], ignore_index=True)


def interval(diff: float, half: float) -> str:
    """A paired change with its 95% interval and verdict: ``+12.3% [+1.0, +23.6] slower``."""
    return (f"{100 * diff:+.1f}% [{100 * (diff - half):+.1f}, {100 * (diff + half):+.1f}] "
            f"{decision(diff, half)}")


def run_script(main: Callable[[], None], name: str) -> None:
    """Run a script's ``main``; bad input (:class:`GeosimError`) is one line, exit status 2."""
    try:
        main()
    except GeosimError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        sys.exit(2)


def markdown(table: pd.DataFrame, cols: list[str]) -> str:
    """The columns ``cols`` of ``table`` as a Markdown table (``within_*`` as percentages)."""
    t = table.loc[:, [c for c in cols if c in table.columns]]
    head = "| " + " | ".join(t.columns) + " |\n|" + "---|" * len(t.columns) + "\n"
    lines = []
    for _, row in t.iterrows():
        cells = []
        for col, value in row.items():
            if col.startswith("within"):
                cells.append(f"{100 * value:.1f}%")
            elif col == "lambda":
                cells.append(f"{value:g}")
            elif isinstance(value, float):
                cells.append(f"{value:.2f}")
            else:
                cells.append(str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return head + "\n".join(lines)
