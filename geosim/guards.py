"""The limits of a run while it goes on: memory, stalls, steps and wall-clock time.

Both ways a run advances (the model's step and the compiled pool loop) and the engine's
growable tables use these, so every limit is stated, checked and worded in one place:

* :class:`Budget`: ``run.max_memory_gb`` for what cannot be known in advance (the copies
  a redundant scheduler launches); the engine's tables ask it before they grow.
* :class:`RunGuards`: ``run.max_steps`` and ``run.max_wall_seconds``, and the stall limits
  :data:`STALL_SECONDS` and :data:`STALL_STEPS` that declare a run stuck.
"""

from __future__ import annotations

import math
import time

from geosim.errors import GeosimError

GIB = 2.0**30
#: Simulated seconds with alive jobs and no task completing after which a run is declared
#: stuck (a scheduler that never launches, or a world in which a task cannot finish).
STALL_SECONDS = 1e6
#: Steps with alive jobs and no task completing after which a run is declared stuck (so a
#: tiny ``run.dt`` cannot make the guard above unreachable).
STALL_STEPS = 1_000_000


class Budget:
    """The memory limit while a run goes on, asked by tables before they grow.

    Args:
        limit_bytes: Most bytes a growable table may hold.
        source: The scenario file, for the error message.
    """

    def __init__(self, limit_bytes: float = math.inf, source: str | None = None):
        self.limit_bytes, self.source = limit_bytes, source

    def check(self, nbytes: float, what: str) -> None:
        """Raise if a table of ``nbytes`` bytes would exceed the limit.

        Args:
            nbytes: The size the table is about to take.
            what: What grows, e.g. ``"12,000,000 copies"``.

        Raises:
            GeosimError: Naming ``run.max_memory_gb``.
        """
        if nbytes > self.limit_bytes:
            raise GeosimError(
                f"the run's {what} would take {nbytes / GIB:.2f} GiB, more than "
                f"run.max_memory_gb = {self.limit_bytes / GIB:g}: make the run smaller or "
                "raise run.max_memory_gb", source=self.source, key="run.max_memory_gb")


class RunGuards:
    """``run.max_steps``, ``run.max_wall_seconds`` and the stall limits of one run.

    Args:
        max_steps: Most steps (0: no limit).
        max_wall_seconds: Most wall-clock seconds (0: no limit).
        source: The scenario file, for the error message.
        scheduler: The scheduler's name, for the stall message.
        dt: ``run.dt``, for the stall message.
    """

    def __init__(self, max_steps: int = 0, max_wall_seconds: float = 0.0,
                 source: str | None = None, scheduler: str = "", dt: float = 1.0):
        self.max_steps, self.max_wall_seconds = max_steps, max_wall_seconds
        self.source, self.scheduler, self.dt = source, scheduler, dt
        self.start = time.perf_counter()

    def restart_clock(self) -> None:
        """Count wall-clock time from now."""
        self.start = time.perf_counter()

    def check(self, steps: int, now: float, jobs_done: int, n_jobs: int) -> None:
        """Stop the run when it exceeds ``run.max_steps`` or ``run.max_wall_seconds``.

        Args:
            steps: Steps run so far.
            now: Simulated time reached.
            jobs_done: Jobs finished so far.
            n_jobs: Jobs of the run.

        Raises:
            GeosimError: Naming the limit, the simulated time reached and the jobs done.
        """
        key, what, limit = "", "", 0.0
        if self.max_steps and steps > self.max_steps:
            key, what, limit = "run.max_steps", f"{steps} steps", self.max_steps
        elif self.max_wall_seconds:
            elapsed = time.perf_counter() - self.start
            if elapsed > self.max_wall_seconds:
                key, what, limit = "run.max_wall_seconds", \
                    f"{elapsed:.1f} s of wall-clock time", self.max_wall_seconds
        if key:
            raise GeosimError(
                f"stopped after {what} (limit {limit:g}) at simulated time {now:.6g} s with "
                f"{jobs_done} of {n_jobs} jobs done; nothing is written", source=self.source,
                key=key)

    def stalled(self, alive: int) -> GeosimError:
        """The error of a run without a completion for :data:`STALL_SECONDS` or steps."""
        return GeosimError(
            f"no task completed in {STALL_SECONDS:g} simulated seconds or {STALL_STEPS:g} "
            f"steps with {alive} jobs alive (scheduler {self.scheduler!r}, run.dt = "
            f"{self.dt:g}); set run.horizon to stop a run that cannot finish",
            source=self.source)
