"""The benchmark scripts whose tables go into docs/results.md, on a small world.

``against_best.py`` reads saved comparisons; ``epsilon_hint.py`` runs PingAn at several ε.
Both are run as a user runs them (a fresh interpreter in the project's root), on the
quickstart world with a handful of jobs, and their tables are checked against the saved
runs they come from.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

import geosim
from geosim.experiment import MANIFEST, paired_difference, run_path

ROOT = Path(__file__).resolve().parent.parent
QUICK = ROOT / "scenarios" / "quickstart.toml"


def script(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / name), *args],
                          capture_output=True, text=True, cwd=ROOT)


def test_against_best_reads_the_best_baseline_and_pairs_pingan_with_it(tmp_path):
    out = tmp_path / "quickstart-heavy"
    cmp = geosim.compare(QUICK, ["pingan", "flutter", "flutter+mantri"], seeds=[1, 2],
                         within=(800,), out=out, overrides={"workload.n_jobs": 12},
                         jobs_parallel=1)
    summary = cmp.summary.set_index("label")
    best = summary.drop(index="pingan")["mean_flowtime"].idxmin()
    done = script("against_best.py", str(tmp_path))
    assert done.returncode == 0, done.stderr
    row = [line for line in done.stdout.splitlines() if line.startswith("| heavy")]
    assert len(row) == 1
    cells = [c.strip() for c in row[0].strip("|").split("|")]
    assert cells[1].startswith(best)
    manifest = json.loads((cmp.out / MANIFEST).read_text())
    frames = [pd.concat([pd.read_parquet(run_path(cmp.out, manifest, label, s) / "jobs.parquet")
                         .assign(seed=s) for s in (1, 2)]) for label in ("pingan", best)]
    diff, half = paired_difference(*frames)
    assert cells[2].startswith(f"{100 * diff:+.1f}% [{100 * (diff - half):+.1f}, ")
    assert cells[3] == "-13.5%"          # 003's PingAn against its best baseline, heavy load


def test_against_best_refuses_a_directory_without_comparisons(tmp_path):
    done = script("against_best.py", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip() == f"against_best: error: {tmp_path}: no saved comparison found"


def test_epsilon_hint_names_the_lowest_mean_beside_003s_best(tmp_path):
    done = script("epsilon_hint.py", "--scenario", str(QUICK), "--jobs", "12", "--seeds", "2",
                  "--rates", "0.05", "--epsilons", "0.2,0.8", "--jobs-parallel", "1",
                  "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    summary = pd.read_csv(tmp_path / "lambda-0.05" / "summary.csv").set_index("label")
    means = summary["mean_flowtime"]
    best = "0.2" if means["pingan[epsilon=0.2]"] <= means["pingan[epsilon=0.8]"] else "0.8"
    row = [line for line in done.stdout.splitlines() if line.startswith("| 0.05 |")]
    assert len(row) == 1
    cells = [c.strip() for c in row[0].strip("|").split("|")]
    assert cells[3] == best
    assert cells[6] == "0.6"             # 003's best ε at λ = 0.05
    bad = script("epsilon_hint.py", "--rates", "0.05,x")
    assert bad.returncode == 2
    assert bad.stderr.strip() == ("epsilon_hint: error: --rates: expected numbers separated "
                                  "by commas, got '0.05,x'")
