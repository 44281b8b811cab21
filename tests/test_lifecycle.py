"""Processes of ``geosim compare`` and ``geosim dashboard`` die with the command.

A SIGKILL of the command cannot be caught, so its children must notice on their own:
these tests kill the command and watch its descendants disappear.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc and relies on Linux process control")

ROOT = Path(__file__).resolve().parents[1]
#: Seconds the descendants get to disappear after the command is killed.
GRACE = 5.0


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state, start time) of ``pid`` from /proc, or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), fields[0], int(fields[19])


def descendants(root: int) -> dict[int, int]:
    """Every living descendant of ``root``: pid -> start time (to tell a reused pid)."""
    parent, start = {}, {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(int(entry))) is not None and st[1] != "Z":
            parent[int(entry)], start[int(entry)] = st[0], st[2]
    found, frontier = {}, [root]
    while frontier:
        pid = frontier.pop()
        for child, ppid in parent.items():
            if ppid == pid and child not in found:
                found[child] = start[child]
                frontier.append(child)
    return found


def alive(procs: dict[int, int]) -> list[int]:
    """Those of ``procs`` still running (zombies waiting for a reaper count as gone)."""
    out = []
    for pid, start in procs.items():
        st = _stat(pid)
        if st is not None and st[1] != "Z" and st[2] == start:
            out.append(pid)
    return out


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


def kill_and_watch(proc: subprocess.Popen, procs: dict[int, int]) -> float:
    """SIGKILL ``proc``; return the seconds until every one of ``procs`` is gone."""
    t0 = time.monotonic()
    proc.kill()
    proc.wait()
    try:
        wait_for(lambda: not alive(procs), GRACE, "the descendants to exit")
    finally:
        for pid in alive(procs):   # never leave them running, whatever the outcome
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return time.monotonic() - t0


def _run(tmp_path: Path, argv: list[str]) -> subprocess.Popen:
    with (tmp_path / "command.log").open("w") as log:
        return subprocess.Popen([sys.executable, *argv], cwd=ROOT, stdout=log,
                                stderr=subprocess.STDOUT)


def _started(proc: subprocess.Popen, tmp_path: Path, found: dict[int, int]) -> dict[int, int]:
    assert proc.poll() is None, (tmp_path / "command.log").read_text()
    return found


def test_compare_workers_die_with_a_killed_command(tmp_path):
    # Runs of the medium scenario take minutes: the workers are busy simulating when
    # the command is killed.
    proc = _run(tmp_path, ["-m", "geosim.cli", "compare",
                           str(ROOT / "scenarios" / "pingan-medium.toml"), "--schedulers",
                           "fifo,fair", "--jobs-parallel", "2", "--out", str(tmp_path / "cmp"),
                           "--no-progress"])
    try:
        def workers() -> dict[int, int] | bool:
            # main -> forkserver -> two workers (and the resource tracker)
            procs = descendants(proc.pid)
            deeper = [p for p in procs if (st := _stat(p)) is not None and st[0] != proc.pid]
            return procs if len(deeper) >= 2 else proc.poll() is not None

        procs = _started(proc, tmp_path, wait_for(workers, 60.0, "two worker processes"))
        time.sleep(0.5)   # let them start simulating
        procs = _started(proc, tmp_path, descendants(proc.pid) | procs)
        elapsed = kill_and_watch(proc, procs)
        print(f"{len(procs)} descendants gone {elapsed:.2f} s after SIGKILL")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not list((tmp_path / "cmp").glob("runs/*/seed-*"))


SERVE = """
import sys
import viz.dashboard as d
d.server_command = lambda host, port: [sys.executable, "-c", "import time; time.sleep(120)"]
d.serve(d.DashboardConfig(), "127.0.0.1", 1)
"""


def test_dashboard_server_dies_with_a_killed_command(tmp_path):
    # the command's serve() with a stand-in server that would sleep for two minutes
    proc = _run(tmp_path, ["-c", SERVE])
    try:
        found = wait_for(lambda: descendants(proc.pid) or proc.poll() is not None, 60.0,
                         "the server process")
        procs = _started(proc, tmp_path, found)
        elapsed = kill_and_watch(proc, procs)
        print(f"server gone {elapsed:.2f} s after SIGKILL")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
