"""PingAn against the best of 003's baselines, paired, from saved comparisons.

003 §6.2 reports PingAn's mean flowtime against the best baseline of each load (−52.9%,
−61.9%, −13.5% at light, medium and heavy load) and the share of jobs PingAn,
Flutter+Mantri and Flutter+Dolly finish within 100, 200 and 800 s. This script reads the
comparisons ``make run``, ``make run-full`` or ``make run-calibrated`` saved (one
directory per load, named after its scenario) and prints, per load, the baseline with
the lowest mean, PingAn's paired change against it and against every other baseline (job
by job on the same worlds, 95% interval by batch means over the seeds), and the three
shares beside 003's. Nothing is run.

    python benchmarks/against_best.py results/compare-003-calibrated
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd
from summary_tables import interval, run_script, saved_jobs

from geosim.errors import GeosimError
from geosim.experiment import MANIFEST, paired_difference

#: Load: (threshold in s, 003's PingAn vs best baseline, 003's shares: PingAn, Mantri, Dolly).
PAPER = {
    "light": (100, -0.529, (0.769, 0.737, 0.705)),
    "medium": (200, -0.619, (0.840, 0.613, 0.675)),
    "heavy": (800, -0.135, (0.710, 0.590, 0.376)),
}
PINGAN = "pingan"
SHARES = (PINGAN, "flutter+mantri", "flutter+dolly")


def load_of(directory: Path) -> str:
    """The load a comparison directory holds, from its name (``pingan-…-heavy``)."""
    for load in PAPER:
        if directory.name.endswith(load):
            return load
    raise GeosimError(f"expected a directory named after a light, medium or heavy scenario, "
                      f"got {directory.name!r}", source=str(directory))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="directory of a saved 003 comparison")
    args = parser.parse_args()
    dirs = sorted((d for d in args.out.iterdir() if (d / MANIFEST).is_file()),
                  key=lambda d: list(PAPER).index(load_of(d))) if args.out.is_dir() else []
    if not dirs:
        raise GeosimError("no saved comparison found", source=str(args.out))
    print("| load | best baseline (lowest mean) | PingAn vs it (paired, 95%) | 003 "
          "| PingAn vs the other baselines (paired) | within | PingAn / F+Mantri / F+Dolly "
          "| 003: PingAn / Mantri / Dolly |")
    print("|---|---|---|---|---|---|---|---|")
    for directory in dirs:
        load = load_of(directory)
        threshold, paper_change, paper_shares = PAPER[load]
        seeds = json.loads((directory / MANIFEST).read_text())["seeds"]
        summary = pd.read_csv(directory / "summary.csv").set_index("label")
        if PINGAN not in summary.index:
            raise GeosimError("the comparison has no run of pingan", source=str(directory))
        baselines = summary.drop(index=PINGAN)["mean_flowtime"].sort_values()
        pingan = saved_jobs(directory, PINGAN, seeds)
        changes = {b: interval(*paired_difference(pingan, saved_jobs(directory, b, seeds)))
                   for b in baselines.index}
        best = baselines.index[0]
        others = "; ".join(f"{b}: {changes[b]}" for b in baselines.index[1:])
        shares = " / ".join(f"{100 * summary.loc[s, f'within_{threshold}']:.1f}%"
                            if s in summary.index else "—" for s in SHARES)
        paper = " / ".join(f"{100 * v:.1f}%" for v in paper_shares)
        print(f"| {load} | {best} ({baselines[best]:.1f} s) | {changes[best]} "
              f"| {100 * paper_change:+.1f}% | {others} | {threshold} s | {shares} | {paper} |")


if __name__ == "__main__":
    run_script(main, "against_best")
