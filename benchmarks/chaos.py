"""Chaos campaign: damaged files, full disks, killed workers and second writers.

Every case drives the ``geosim`` command line the way a long campaign meets a real
machine, and counts an *escape* when the command answers with a traceback, an exit status
other than the documented one, or results that are lost, duplicated or different from an
undisturbed comparison. The cases:

- ``damage``: a finished comparison, then one saved file damaged (each table truncated,
  emptied or removed, ``summary.json``/``meta.json`` malformed or of another run) and the
  same ``geosim compare`` again: it must finish (exit 0), say which run it made again,
  and print the same table as before.
- ``plot``: ``geosim plot`` on a damaged run: one line, exit 2.
- ``disk``: ``geosim run`` and ``geosim compare`` writing to a full file system (a small
  tmpfs, when this process may mount one): one line, exit 2, no partial result; then the
  same compare with room resumes and finishes.
- ``kill``: a compare worker SIGKILLed mid-run: exit 0 with the runs made again, or one
  line; the next invocation resumes with every run once.
- ``lock``: two ``geosim compare`` into one directory at once: the second refuses in one
  line (exit 2), the first finishes.
- ``name``: a scenario whose ``run.name`` holds control characters: compared, then resumed.

Usage::

    python benchmarks/chaos.py [--against DIR] [--only damage,kill,...]

``--against DIR`` runs the same cases with the geosim of checkout ``DIR`` too (e.g. a
``git worktree`` of an older commit), and prints both counts.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = """[run]
name = "{name}"
seed = 1

[scheduler]
name = "fifo"

[topology]
generator = "single"

[tiers.small]
slots = 2
power_mean = 1.0
power_rsd = 0.0

[clusters]
power_redraw_interval = 0.0

[availability]
enabled = false

[outages]
enabled = false

[workload]
kind = "single"
n_jobs = 30
arrival_rate = 0.3
work = {{ distribution = "exponential", mean = 5.0 }}
"""


class Geosim:
    """The ``geosim`` command of one checkout."""

    def __init__(self, checkout: Path):
        self.checkout = checkout

    def start(self, *args: str, cwd: Path) -> subprocess.Popen:
        env = {**os.environ, "PYTHONPATH": str(self.checkout)}
        return subprocess.Popen([sys.executable, "-m", "geosim.cli", *args], cwd=cwd,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    def __call__(self, *args: str, cwd: Path) -> subprocess.CompletedProcess:
        proc = self.start(*args, cwd=cwd)
        out, err = proc.communicate(timeout=600)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def one_line(proc: subprocess.CompletedProcess, status: int = 2) -> bool:
    """Whether a failure was reported as documented: one line, the status, no traceback."""
    lines = proc.stderr.strip().splitlines()
    return proc.returncode == status and len(lines) == 1 and "Traceback" not in proc.stderr


def table(proc: subprocess.CompletedProcess) -> str:
    """The printed comparison table, without the wall-time column."""
    return "\n".join(line.rsplit(maxsplit=1)[0] if line.strip() else line
                     for line in proc.stdout.split("results written")[0].splitlines())


def compare_args(scenario: Path, out: Path, *extra: str) -> list[str]:
    return ["compare", str(scenario), "--schedulers", "fifo,srpt", "--reps", "2",
            "--jobs-parallel", "2", "--out", str(out), "--no-progress", *extra]


def _truncate(name: str) -> Callable[[Path], None]:
    return lambda d: (d / name).write_bytes((d / name).read_bytes()[:64])


def _empty(name: str) -> Callable[[Path], None]:
    return lambda d: (d / name).write_bytes(b"")


def _remove(name: str) -> Callable[[Path], None]:
    return lambda d: (d / name).unlink()


DAMAGES: dict[str, Callable[[Path], None]] = {
    **{f"truncate {t}": _truncate(f"{t}.parquet")
       for t in ("jobs", "tasks", "copies", "clusters", "links")},
    **{f"empty {t}": _empty(f"{t}.parquet") for t in ("jobs", "copies")},
    **{f"remove {t}": _remove(f"{t}.parquet") for t in ("jobs", "links")},
    "summary malformed": lambda d: (d / "summary.json").write_text("{"),
    "summary removed": lambda d: (d / "summary.json").unlink(),
    "meta malformed": lambda d: (d / "meta.json").write_text("[]"),
    "meta of another seed": lambda d: (d / "meta.json").write_text(
        (d / "meta.json").read_text().replace('"seed": 1', '"seed": 9')),
}


def damage_cases(geosim: Geosim, work: Path) -> Iterator[tuple[str, bool]]:
    scenario = work / "s.toml"
    scenario.write_text(SCENARIO.format(name="chaos"))
    base = work / "base"
    reference = geosim(*compare_args(scenario, base), cwd=work)
    assert reference.returncode == 0, reference.stderr
    for name, damage in DAMAGES.items():
        out = work / f"d-{len(list(work.iterdir()))}"
        shutil.copytree(base, out)
        damage(out / "runs" / "fifo" / "seed-1")
        again = geosim(*compare_args(scenario, out), cwd=work)
        ok = again.returncode == 0 and table(again) == table(reference) \
            and "made again" in again.stderr and "Traceback" not in again.stderr
        yield f"damage: {name}", ok
        plot_dir = work / f"p-{len(list(work.iterdir()))}"
        shutil.copytree(base / "runs" / "fifo" / "seed-1", plot_dir)
        damage(plot_dir)
        plotted = geosim("plot", str(plot_dir), "--out", str(work / "figs"), cwd=work)
        yield f"plot: {name}", one_line(plotted) or plotted.returncode == 0


@contextlib.contextmanager
def tmpfs(size: str) -> Iterator[Path | None]:
    """A small tmpfs mounted for the block (None when this process cannot mount one)."""
    where = Path(tempfile.mkdtemp(prefix="geosim-full-"))
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                              str(where)], capture_output=True).returncode == 0
    try:
        yield where if mounted else None
    finally:
        if mounted:
            subprocess.run(["umount", str(where)], capture_output=True)
        shutil.rmtree(where, ignore_errors=True)


def disk_cases(geosim: Geosim, work: Path) -> Iterator[tuple[str, bool]]:
    scenario = work / "s.toml"
    scenario.write_text(SCENARIO.format(name="chaos").replace("n_jobs = 30", "n_jobs = 3000"))
    with tmpfs("120k") as full:
        if full is None:
            print("disk: cannot mount a tmpfs here; disk cases skipped", file=sys.stderr)
            return
        run = geosim("run", str(scenario), "--out", str(full / "run"), "--no-progress",
                     cwd=work)
        yield "disk: run", one_line(run) and "No space left" in run.stderr \
            and not (full / "run").exists()
        cmp = geosim(*compare_args(scenario, full / "cmp"), cwd=work)
        leftovers = list((full / "cmp").glob("runs/*/.seed-*"))
        yield "disk: compare", one_line(cmp) and "No space left" in cmp.stderr \
            and not leftovers
        moved = work / "cmp"
        shutil.copytree(full / "cmp", moved)
    again = geosim(*compare_args(scenario, moved), cwd=work)
    yield "disk: resume with room", again.returncode == 0 and "Traceback" not in again.stderr


def kill_case(geosim: Geosim, work: Path) -> Iterator[tuple[str, bool]]:
    scenario = work / "s.toml"
    scenario.write_text(SCENARIO.format(name="chaos").replace("n_jobs = 30", "n_jobs = 20000"))
    out = work / "killed"
    proc = geosim.start(*compare_args(scenario, out), cwd=work)
    workers: list[int] = []
    deadline = time.monotonic() + 120
    while len(workers) < 2 and time.monotonic() < deadline and proc.poll() is None:
        workers = _grandchildren(proc.pid)
        time.sleep(0.05)
    time.sleep(1.0)
    if workers:
        os.kill(workers[0], signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=600)
    first = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    yield "kill: a worker", bool(workers) and (first.returncode == 0 or one_line(first))
    again = geosim(*compare_args(scenario, out), cwd=work)
    runs = sorted(p.relative_to(out).as_posix() for p in out.glob("runs/*/seed-*"))
    yield "kill: resume", again.returncode == 0 and len(runs) == 4 \
        and not list(out.glob("runs/*/.seed-*"))


def _grandchildren(pid: int) -> list[int]:
    """Children of the children of ``pid`` (the forkserver's workers), from /proc."""
    parent = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                text = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent[int(entry)] = int(text[text.rindex(")") + 2:].split()[1])
    children = {p for p, pp in parent.items() if pp == pid}
    return sorted(p for p, pp in parent.items() if pp in children)


def lock_case(geosim: Geosim, work: Path) -> Iterator[tuple[str, bool]]:
    scenario = work / "s.toml"
    scenario.write_text(SCENARIO.format(name="chaos").replace("n_jobs = 30", "n_jobs = 20000"))
    out = work / "shared"
    first = geosim.start(*compare_args(scenario, out), cwd=work)
    time.sleep(3.0)
    second = geosim(*compare_args(scenario, out), cwd=work)
    stdout, stderr = first.communicate(timeout=600)
    yield "lock: second writer", one_line(second) and "being written" in second.stderr
    yield "lock: first writer finishes", first.returncode == 0 and "Traceback" not in stderr


def name_case(geosim: Geosim, work: Path) -> Iterator[tuple[str, bool]]:
    scenario = work / "s.toml"
    scenario.write_text(SCENARIO.format(name="a\\nb\\t\\u0007c"))
    out = work / "named"
    first = geosim(*compare_args(scenario, out), cwd=work)
    again = geosim(*compare_args(scenario, out), cwd=work)
    yield "name: control characters, resumed", first.returncode == 0 \
        and again.returncode == 0 and table(first) == table(again)


CASES = {"damage": damage_cases, "disk": disk_cases, "kill": kill_case, "lock": lock_case,
         "name": name_case}


def campaign(checkout: Path, only: list[str]) -> tuple[int, list[str]]:
    """Run the cases with the geosim of ``checkout``: (cases tried, escapes)."""
    geosim, tried, escapes = Geosim(checkout), 0, []
    for name in only:
        with tempfile.TemporaryDirectory(prefix=f"chaos-{name}-") as tmp:
            try:
                for case, ok in CASES[name](geosim, Path(tmp)):
                    tried += 1
                    if not ok:
                        escapes.append(case)
            except (AssertionError, subprocess.TimeoutExpired, OSError) as exc:
                tried += 1
                escapes.append(f"{name}: the case itself failed ({type(exc).__name__})")
    return tried, escapes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, help="another checkout to run too")
    parser.add_argument("--only", default=",".join(CASES), help="comma-separated families")
    args = parser.parse_args()
    only = [c for c in args.only.split(",") if c]
    checkouts = [("this checkout", ROOT)] + ([("against", args.against)] if args.against
                                             else [])
    for label, checkout in checkouts:
        start = time.perf_counter()
        tried, escapes = campaign(checkout.resolve(), only)
        print(f"{label} ({checkout}): {tried} cases, {len(escapes)} escapes, "
              f"{time.perf_counter() - start:.0f} s")
        for case in escapes:
            print(f"  escape: {case}")


if __name__ == "__main__":
    main()
