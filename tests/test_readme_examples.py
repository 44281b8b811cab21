"""The README's worked example and sweep example print what the README shows."""

from __future__ import annotations

import re
from pathlib import Path

from geosim.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _shown(command: str) -> list[str]:
    """The output lines the README shows under ``$ command``."""
    text = (ROOT / "README.md").read_text()
    block = text.split(f"$ {command}\n", 1)[1].split("```", 1)[0]
    return block.rstrip("\n").splitlines()


def test_the_worked_example_prints_what_the_readme_shows(tmp_path, capsys, monkeypatch):
    command = (".venv/bin/geosim run scenarios/quickstart.toml --scheduler srpt --seed 2 "
               "--out results/quick")
    shown = _shown(command)
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(ROOT / "scenarios" / "quickstart.toml"), "--scheduler", "srpt",
                 "--seed", "2", "--out", "results/quick"]) == 0
    printed = capsys.readouterr().out.rstrip("\n").splitlines()

    def same(line: str) -> str:        # the wall time is the machine's, not the model's
        return re.sub(r"^(wall time \(s\)\s+)\S+$", r"\1*", line)

    assert [same(x) for x in printed] == [same(x) for x in shown]


def test_the_sweep_example_prints_what_the_readme_shows(tmp_path, capsys, monkeypatch):
    command = (".venv/bin/geosim sweep scenarios/quickstart.toml --set workload.n_jobs=30 \\\n"
               "      --schedulers 'pingan,late,spark+speculation' --vary "
               "workload.arrival_rate=0.02,0.1 \\\n"
               "      --focus pingan --reps 2 --within 100,200,800 --out results/sweep-quickstart")
    shown = _shown(command)
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", str(ROOT / "scenarios" / "quickstart.toml"), "--set",
                 "workload.n_jobs=30", "--schedulers", "pingan,late,spark+speculation",
                 "--vary", "workload.arrival_rate=0.02,0.1", "--focus", "pingan", "--reps", "2",
                 "--within", "100,200,800", "--out", "results/sweep-quickstart",
                 "--no-progress", "--jobs-parallel", "1"]) == 0   # same tables, no pool
    assert capsys.readouterr().out.rstrip("\n").splitlines() == shown
