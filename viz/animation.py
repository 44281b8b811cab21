"""The topology map over time, as a GIF or an MP4, rendered headlessly.

Every frame is the map of :class:`~viz.topomap.TopologyMap` at one sampling time:
clusters filled by slot utilisation (or state), outlined by state, links coloured by the
traffic they carry, and below it a timeline of utilisation and WAN traffic with a
cursor at the frame's clock. GIFs are written with Pillow (it comes with matplotlib);
MP4s with ffmpeg, which must be on ``PATH``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
from matplotlib import animation
from matplotlib.figure import Figure

from geosim.errors import GeosimError
from geosim.results import CLUSTER_STATES
from viz.data import RunData, as_run
from viz.figures import new_figure
from viz.palette import styled
from viz.topomap import TopologyMap

#: Output suffixes and the writer each needs.
FORMATS = {".gif": "pillow", ".mp4": "ffmpeg"}
#: Default length of an animation (s of video) and frame rate (frames per second).
SECONDS, FPS = 10.0, 10.0


def frame_count(frames: int | None, seconds: float | None, fps: float) -> int:
    """Frames of an animation: ``frames``, or ``seconds × fps`` (default 10 s).

    Raises:
        GeosimError: Both or neither sensible: a count below 1, a length or rate <= 0.
    """
    if not (np.isfinite(fps) and fps > 0):
        raise GeosimError(f"must be > 0 (got {fps:g})", source="--fps")
    if frames is not None and seconds is not None:
        raise GeosimError("give --frames or --seconds, not both", source="--frames")
    if frames is not None:
        if frames < 1:
            raise GeosimError(f"must be >= 1 (got {frames})", source="--frames")
        return int(frames)
    seconds = SECONDS if seconds is None else seconds
    if not (np.isfinite(seconds) and seconds > 0):
        raise GeosimError(f"must be > 0 (got {seconds:g})", source="--seconds")
    return max(int(round(seconds * fps)), 1)


def check_output(out: str | os.PathLike) -> tuple[Path, str]:
    """The output path and its writer's name.

    Raises:
        GeosimError: An unknown suffix, an MP4 without ffmpeg on ``PATH``, or a path
            that is a directory.
    """
    path = Path(out)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise GeosimError(f"unknown animation format {path.suffix or '(no suffix)'!r} "
                          "(.gif or .mp4)", source=str(path))
    if path.is_dir():
        raise GeosimError("is a directory; name the animation file, e.g. run.gif",
                          source=str(path))
    writer = FORMATS[suffix]
    if writer == "ffmpeg" and not animation.writers.is_available("ffmpeg"):
        raise GeosimError("writing MP4 needs ffmpeg on PATH, which was not found; "
                          "install ffmpeg or write a .gif", source=str(path))
    return path, writer


class Animator:
    """The figure of an animation and how to draw each frame.

    Args:
        run: The run.
        frames: Number of frames, spread evenly from ``start`` to ``end``.
        color_by: Fill clusters by ``"utilisation"`` (default) or ``"state"``.
        start: First time shown (s); default the start of the run.
        end: Last time shown (s); default the end of the run.
    """

    def __init__(self, run: RunData, frames: int, color_by: str = "utilisation",
                 start: float | None = None, end: float | None = None):
        self.run = run
        start = run.times[0] if start is None else run.check_time(start)
        end = run.times[-1] if end is None else run.check_time(end)
        if end < start:
            raise GeosimError(f"the end ({end:g} s) is before the start ({start:g} s)",
                              source="--end")
        self.clock = np.linspace(start, end, frames)
        self.fig = self._figure(color_by)

    @styled
    def _figure(self, color_by: str) -> Figure:
        run = self.run
        fig = new_figure(8.4, 7.6, layout=None)
        ax = fig.add_axes((0.08, 0.3, 0.6, 0.64))
        self.map = TopologyMap(run, ax, color_by)
        self.map.add_legends(fig, ax)
        self.title = ax.set_title("", loc="left")
        line = fig.add_axes((0.08, 0.06, 0.6, 0.15))
        times = run.times
        slots = run.matrix("slots").astype(float)
        busy = run.matrix("busy").sum(axis=0) / np.maximum(slots.sum(axis=0), 1e-12)
        wan = run.matrix("egress_mbps").sum(axis=0)
        line.plot(times, 100 * busy, color="#0072B2", linewidth=1.0, label="busy slots (%)")
        line.set_ylabel("busy slots (%)", color="#0072B2")
        line.set_ylim(bottom=0)
        twin = line.twinx()
        twin.plot(times, wan, color="#6A51A3", linewidth=1.0)
        twin.set_ylabel("WAN (MB/s)", color="#6A51A3")
        twin.set_ylim(bottom=0)
        twin.spines["right"].set_visible(True)
        line.set_xlim(times[0], max(times[-1], times[0] + 1e-9))
        line.set_xlabel("time (s)")
        self.cursor = line.axvline(times[0], color="black", linewidth=1.0)
        return fig

    def draw(self, frame: int) -> None:
        """Bring the figure to frame ``frame``."""
        run, view = self.run, self.map
        clock = float(self.clock[frame])
        index = view.sample_index(clock)
        view.show(index)
        states = view.states[:, index]
        down = int((states == CLUSTER_STATES.index("unreachable")).sum())
        self.title.set_text(f"{run.name}   t = {clock:7.0f} s   unreachable: {down:3d} of "
                            f"{len(states)} clusters")
        self.cursor.set_xdata([clock, clock])


def animate(run: RunData | str | os.PathLike, out: str | os.PathLike, *,
            frames: int | None = None, seconds: float | None = None, fps: float = FPS,
            color_by: str = "utilisation", start: float | None = None,
            end: float | None = None, dpi: float = 100) -> Path:
    """Render the topology map over time to ``out`` (``.gif`` or ``.mp4``).

    The file is written completely or not at all.

    Args:
        run: The run (a :class:`~viz.data.RunData`, a result or a run directory).
        out: Output file; its suffix picks the format.
        frames: Number of frames; default ``seconds × fps``.
        seconds: Length of the animation (default 10 s of video).
        fps: Frames per second.
        color_by: Fill clusters by ``"utilisation"`` or ``"state"``.
        start: First simulated time shown (s); default the start of the run.
        end: Last simulated time shown (s); default the end of the run.
        dpi: Resolution of the frames.

    Returns:
        The file written.

    Raises:
        GeosimError: A bad option, a bad output name, MP4 without ffmpeg, or a run whose
            world cannot be rebuilt.
    """
    path, writer_name = check_output(out)
    count = frame_count(frames, seconds, fps)
    animator = Animator(as_run(run), count, color_by, start, end)
    writer = animation.PillowWriter(fps=fps) if writer_name == "pillow" else \
        animation.FFMpegWriter(fps=fps, codec="h264", extra_args=["-pix_fmt", "yuv420p"])
    tmpdir = Path(tempfile.mkdtemp(prefix="geosim-animate-"))
    try:
        tmp = tmpdir / path.name
        with writer.saving(animator.fig, str(tmp), dpi):
            for frame in range(count):
                animator.draw(frame)
                writer.grab_frame()
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(tmp), str(path))
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return path
