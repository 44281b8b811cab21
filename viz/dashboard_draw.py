"""The dashboard's two figures, drawn with a fixed set of matplotlib artists.

Each figure is built once per run (:class:`ClusterMap` from the world's positions, tiers
and links; :class:`TimeSeries` with empty lines) and every frame only updates the data of
its artists: the cluster map is two scatters (clusters, their busy slots) and one
``LineCollection`` (the WAN links), whatever the number of clusters.

Frames are blitted: the static part of a figure (axes, ticks, grid, legend) is drawn
once into a background, and a frame restores that background and draws only the
changing artists on it. The time axes grow in steps to round values, so the background
is redrawn only when a limit moves. Figures are plain :class:`matplotlib.figure.Figure`
objects on an Agg canvas (no pyplot, no GUI backend); frames are JPEG bytes (encoding a
frame as PNG takes ten times longer, for no visible gain at this size).
"""

from __future__ import annotations

import io
import math
import time
from collections.abc import Hashable, Sequence

import numpy as np
from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import LogLocator, NullFormatter, StrMethodFormatter
from PIL import Image

from geosim import state
from geosim.model import GeoModel
from geosim.state import CLUSTER_STATES
from viz.dashboard_run import cluster_snapshot, watch
from viz.palette import STATE_COLORS

#: Edge colour of each cluster state: its fill colour, darkened.
STATE_EDGES = {state: tuple(0.6 * c for c in to_rgba(color)[:3])
               for state, color in STATE_COLORS.items()}
#: Colour of a cluster's busy slots (the inner disc).
BUSY_COLOR = "#253494"
LINK_COLOR = to_rgba("#737373", 0.35)
LINK_DOWN_COLOR = to_rgba(STATE_COLORS["unreachable"], 0.55)
#: Marker area (pt²) of the largest cluster; areas scale as slots ** SIZE_EXPONENT.
MAX_AREA = 900.0
SIZE_EXPONENT = 0.7
#: Time series longer than this are thinned (every k-th point) before drawing.
MAX_POINTS = 4000
DPI = 90
JPEG_QUALITY = 92


def nice_ceil(value: float) -> float:
    """The smallest of 1, 1.5, 2, 3, 5, 7.5 × 10^k that is ≥ ``value`` (and > 0)."""
    if value <= 0:
        return 1.0
    base = 10.0 ** math.floor(math.log10(value))
    for m in (1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0):
        if m * base >= value * (1 - 1e-12):
            return m * base
    return 10.0 * base  # pragma: no cover - the loop ends at 10


def log_ceil(value: float) -> float:
    """The smallest of 1, 3 × 10^k that is ≥ ``value`` (> 0): a round log-axis top."""
    k = math.floor(math.log10(value))
    for top in (10.0 ** k, 3 * 10.0 ** k, 10.0 ** (k + 1)):
        if top >= value * (1 - 1e-12):
            return top
    return 10.0 ** (k + 1)  # pragma: no cover - the loop ends at 10^(k+1)


def log_floor(value: float) -> float:
    """The largest of 1, 3 × 10^k that is ≤ ``value`` (> 0): a round log-axis bottom."""
    k = math.floor(math.log10(value))
    return 3 * 10.0 ** k if 3 * 10.0 ** k <= value * (1 + 1e-12) else 10.0 ** k


class BlitFigure:
    """A figure whose frames redraw only its changing artists.

    Subclasses build :attr:`figure`, list the changing artists in :attr:`animated`,
    set them in :meth:`update` and return from :meth:`background_key` whatever the
    static part depends on (axis limits).

    Attributes:
        frame_seconds: Wall time of the last :meth:`frame` (update, draw, encode).
        frames: Number of frames rendered.
        backgrounds: Number of times the static part was drawn.
    """

    figure: Figure
    animated: Sequence[Artist]

    def __init__(self) -> None:
        self.frame_seconds = 0.0
        self.frames = 0
        self.backgrounds = 0
        self._background = None
        self._key: Hashable = None

    def _attach(self) -> None:
        self.canvas = FigureCanvasAgg(self.figure)
        for artist in self.animated:
            artist.set_animated(True)

    def background_key(self) -> Hashable:
        """What the static part of the figure depends on; a change redraws it."""
        return None

    def update(self, model: GeoModel) -> None:  # pragma: no cover - abstract
        """Set the artists' data (and axis limits) from ``model``."""
        raise NotImplementedError

    def render(self) -> bytes:
        """Draw the current state and return it as JPEG bytes."""
        key = self.background_key()
        if self._background is None or key != self._key:
            self.canvas.draw()   # skips the animated artists
            self._background = self.canvas.copy_from_bbox(self.figure.bbox)
            self._key = key
            self.backgrounds += 1
        else:
            self.canvas.restore_region(self._background)
        for artist in self.animated:
            self.figure.draw_artist(artist)
        width, height = self.canvas.get_width_height()
        image = Image.frombuffer("RGBA", (width, height), self.canvas.buffer_rgba(),
                                 "raw", "RGBA", 0, 1).convert("RGB")
        buf = io.BytesIO()
        image.save(buf, format="JPEG", quality=JPEG_QUALITY)
        return buf.getvalue()

    def frame(self, model: GeoModel) -> bytes:
        """Update the artists from ``model`` (holding its lock) and render them; time it."""
        start = time.perf_counter()
        with watch(model).lock:
            self.update(model)
        png = self.render()
        self.frame_seconds = time.perf_counter() - start
        self.frames += 1
        return png


def marker_area(slots: np.ndarray, largest: float) -> np.ndarray:
    """Marker area (pt²) of a cluster of ``slots`` slots, the largest having ``largest``."""
    return MAX_AREA * (np.asarray(slots, dtype=float) / largest) ** SIZE_EXPONENT


def map_axes(fig: Figure, rect: tuple[float, float, float, float], xy: np.ndarray):
    """Axes at ``rect`` of ``fig`` framing the points ``xy`` (no axis lines, equal scale)."""
    ax = fig.add_axes(rect)
    ax.set_axis_off()
    pad = 0.05 * max(np.ptp(xy[:, 0]), np.ptp(xy[:, 1]), 1.0)
    ax.set_xlim(xy[:, 0].min() - pad, xy[:, 0].max() + pad)
    ax.set_ylim(xy[:, 1].min() - pad, xy[:, 1].max() + pad)
    ax.set_aspect("equal", adjustable="box")
    return ax


def cluster_discs(ax, xy: np.ndarray, area: np.ndarray, edges, linewidth: float):
    """The clusters' discs (filled with the first state's colour) and their busy discs."""
    n = len(xy)
    fill = np.repeat([to_rgba(STATE_COLORS[CLUSTER_STATES[0]])], n, axis=0)
    clusters = ax.scatter(xy[:, 0], xy[:, 1], s=area, c=fill, edgecolors=edges,
                          linewidths=linewidth, zorder=2)
    busy = ax.scatter(xy[:, 0], xy[:, 1], s=np.zeros(n), c=BUSY_COLOR, linewidths=0,
                      alpha=0.85, zorder=3)
    return clusters, busy


def state_handles(markersize: float) -> list[Artist]:
    """Legend entries of the cluster states and of the busy-slot disc."""
    handles: list[Artist] = [Patch(facecolor=STATE_COLORS[s], edgecolor=STATE_EDGES[s],
                                   label=s) for s in CLUSTER_STATES]
    handles.append(Line2D([], [], marker="o", linestyle="", markersize=markersize,
                          markerfacecolor=BUSY_COLOR, markeredgewidth=0, label="busy slots"))
    return handles


class ClusterMap(BlitFigure):
    """The clusters on their topology positions, coloured by state.

    A cluster is a disc whose area grows with its slots, filled with its state's colour
    (:data:`STATE_COLORS`); a dark inner disc is the size a cluster with as many slots as
    are busy would have, so a fully busy cluster is entirely dark. WAN links are grey,
    and red while one of their ends is unreachable.

    The time and the number of clusters in each state are in the status line above it
    (text is the dearest thing to draw per frame).

    Args:
        model: The run's model.
    """

    def __init__(self, model: GeoModel):
        super().__init__()
        world = model.world
        graph = world.graph
        n = world.n_clusters
        xy = np.array([[graph.nodes[c].get("x", 0.0), graph.nodes[c].get("y", 0.0)]
                       for c in range(n)], dtype=float)
        self.link_u, self.link_v = world.link_u, world.link_v
        self.largest = float(world.slots.max())
        self.area = marker_area(world.slots, self.largest)
        self._fill = np.array([to_rgba(STATE_COLORS[s]) for s in CLUSTER_STATES])
        self._edge = np.array([to_rgba(STATE_EDGES[s]) for s in CLUSTER_STATES])
        self._link_colors = np.array([LINK_COLOR, LINK_DOWN_COLOR])

        fig = Figure(figsize=(6.2, 5.8), dpi=DPI)
        ax = map_axes(fig, (0.02, 0.1, 0.96, 0.88), xy)
        self.links = LineCollection(np.stack([xy[self.link_u], xy[self.link_v]], axis=1),
                                    colors=[LINK_COLOR], linewidths=0.7, zorder=1)
        ax.add_collection(self.links)
        self.clusters, self.busy = cluster_discs(ax, xy, self.area,
                                                 np.repeat(self._edge[:1], n, axis=0), 0.8)
        fig.legend(handles=state_handles(7), loc="lower center", ncols=4, fontsize=8,
                   frameon=False, handlelength=1.2, columnspacing=1.2,
                   bbox_to_anchor=(0.5, 0.035))
        fig.text(0.5, 0.012, "disc area grows with a cluster's slots; the dark disc is "
                 "its busy slots on the same scale", fontsize=7, color="#555555",
                 ha="center", va="bottom")
        self.axes = ax
        self.figure = fig
        self.animated = (self.links, self.clusters, self.busy)
        self._attach()

    def update(self, model: GeoModel) -> None:
        """Recolour and resize the clusters and recolour the links (vectorised)."""
        snap = cluster_snapshot(model)
        self.clusters.set_facecolor(self._fill[snap.state])
        self.clusters.set_edgecolor(self._edge[snap.state])
        self.busy.set_sizes(marker_area(np.minimum(snap.busy, snap.slots), self.largest))
        down = snap.state == CLUSTER_STATES.index("unreachable")
        self.links.set_color(self._link_colors[(down[self.link_u] | down[self.link_v])
                                               .astype(np.intp)])


class TimeSeries(BlitFigure):
    """Alive jobs, slot utilisation and flowtimes against simulated time.

    Three stacked panels sharing the time axis: the number of alive jobs; busy slot
    shares as a percentage of all slots; and the flowtime of every completed job at its
    completion time (log scale) with the running mean of completed jobs' flowtimes.

    Args:
        model: The run's model.
    """

    def __init__(self, model: GeoModel):
        super().__init__()
        fig = Figure(figsize=(6.2, 5.8), dpi=DPI)
        fig.subplots_adjust(left=0.12, right=0.97, bottom=0.085, top=0.975, hspace=0.14)
        ax_alive, ax_util, ax_flow = fig.subplots(3, 1, sharex=True)
        (self.alive,) = ax_alive.plot([], [], color="#4e79a7", lw=1.2, drawstyle="steps-post")
        ax_alive.set_ylabel("alive jobs")
        (self.util,) = ax_util.plot([], [], color=BUSY_COLOR, lw=1.0)
        ax_util.set_ylabel("busy slots (%)")
        self.flow_points = ax_flow.scatter([], [], s=7, color="#9c755f", alpha=0.55,
                                           linewidths=0)
        (self.flow_mean,) = ax_flow.plot([], [], color="#e15759", lw=1.6)
        ax_flow.set_yscale("log")
        ax_flow.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 3.0)))
        ax_flow.yaxis.set_major_formatter(StrMethodFormatter("{x:g}"))
        ax_flow.yaxis.set_minor_formatter(NullFormatter())
        ax_flow.set_ylabel("flowtime (s)")
        ax_flow.set_xlabel("simulated time (s)")
        ax_flow.legend(handles=[
            Line2D([], [], marker="o", linestyle="", markersize=4, color="#9c755f",
                   label="completed job"),
            Line2D([], [], color="#e15759", lw=1.6, label="running mean")],
            # above the panel, in the gap to the one above: never over a point
            loc="lower right", bbox_to_anchor=(1.0, 1.0), borderaxespad=0.1, fontsize=7,
            ncols=2, frameon=False)
        ax_flow.xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
        for ax in (ax_alive, ax_util, ax_flow):
            ax.grid(True, lw=0.4, alpha=0.5)
            ax.tick_params(labelsize=8)
        self.axes = (ax_alive, ax_util, ax_flow)
        self.figure = fig
        self.animated = (self.alive, self.util, self.flow_points, self.flow_mean)
        self._limits = (100.0, 10.0, 1.0, 10.0, 1000.0)
        self._set_limits()
        self._attach()

    def background_key(self) -> Hashable:
        """The axis limits."""
        return self._limits

    def _set_limits(self) -> None:
        t_max, alive_max, util_max, flow_lo, flow_hi = self._limits
        ax_alive, ax_util, ax_flow = self.axes
        ax_alive.set_xlim(0.0, t_max)
        ax_alive.set_ylim(0.0, alive_max)
        ax_util.set_ylim(0.0, util_max)
        ax_flow.set_ylim(flow_lo, flow_hi)

    def update(self, model: GeoModel) -> None:
        """Set the lines' and points' data; grow the axis limits in round steps.

        The lines are the model variables of the model's ``datacollector`` (one value
        per step); the points are the finished jobs (:mod:`geosim.state`).
        """
        h = model.datacollector.model_vars.snapshot(
            ["time", "alive_jobs", "busy_slots", "mean_flowtime"])
        times, alive = h["time"], h["alive_jobs"]
        k = max(1, -(-times.size // MAX_POINTS))
        t = times[::k]
        util = h["busy_slots"][::k] * (100.0 / model.world.n_slots)
        self.alive.set_data(t, alive[::k])
        self.util.set_data(t, util)
        self.flow_mean.set_data(t, h["mean_flowtime"][::k])
        done_at, flow = state.finished_flowtimes(model.engine)
        self.flow_points.set_offsets(np.column_stack([done_at, flow]) if flow.size
                                     else np.empty((0, 2)))
        t_max, alive_max, util_max, flow_lo, flow_hi = self._limits
        now = float(times[-1]) if times.size else 0.0
        if now > t_max:
            t_max = nice_ceil(now * 1.2)
        peak = float(alive.max()) if alive.size else 0.0
        if peak > alive_max:
            alive_max = nice_ceil(peak * 1.15)
        top = float(util.max()) if util.size else 0.0
        if top > util_max:
            util_max = min(nice_ceil(top * 1.15), 100.0)
        if flow.size:
            lo, hi = float(flow.min()), float(flow.max())
            if lo < flow_lo:
                flow_lo = log_floor(max(lo, 1e-3))
            if hi > flow_hi:
                flow_hi = log_ceil(hi)
        limits = (t_max, alive_max, util_max, flow_lo, flow_hi)
        if limits != self._limits:
            self._limits = limits
            self._set_limits()
