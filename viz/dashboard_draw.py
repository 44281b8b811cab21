"""The dashboard's figures, drawn with a fixed set of matplotlib artists.

Each figure is built once per run (:class:`LoadMap` from the world's positions and
links; :class:`TimeSeries` with empty lines) and every frame only updates the data of
its artists: the map is two scatters (clusters, their busy slots) and one
``LineCollection`` (the WAN links), whatever the number of clusters.

:class:`LoadMap`: the clusters and WAN links of one run. A cluster is filled with its
state's colour and holds a dark disc of its busy slots; its outline and each link are
coloured by how loaded they are (traffic over bandwidth, on one scale from idle grey
to dark purple at 100%), and grow thicker with the load, so the scarce resource, the
WAN, is what stands out. A link with an unreachable end is drawn in the outage colour.

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
from matplotlib.cm import ScalarMappable
from matplotlib.collections import LineCollection
from matplotlib.colors import Normalize, to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import LogLocator, NullFormatter, StrMethodFormatter
from PIL import Image

from geosim import state
from geosim.model import GeoModel
from geosim.state import CLUSTER_STATES
from viz.dashboard_run import MapFrame, watch
from viz.data import Layout
from viz.palette import STATE_COLORS, traffic_cmap

#: Edge colour of each cluster state: its fill colour, darkened.
STATE_EDGES = {state: tuple(0.6 * c for c in to_rgba(color)[:3])
               for state, color in STATE_COLORS.items()}
#: Colour of a cluster's busy slots (the inner disc).
BUSY_COLOR = "#253494"
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


#: Loads below this are drawn as idle (the colour map's "under" colour).
IDLE_LOAD = 1e-3
#: Line widths of an idle and of a fully loaded link, and outline widths of a cluster.
LINK_WIDTH = (0.5, 3.2)
GATE_WIDTH = (0.6, 3.0)
LINK_DOWN_COLOR = to_rgba(STATE_COLORS["unreachable"], 0.6)


class LoadMap(BlitFigure):
    """One side's clusters and links, coloured by state and by WAN load.

    Args:
        layout: Where the clusters and links are.
        label: The scheduler's label (the map's title).
        color: The scheduler's colour (of the title's marker).
        size: The figure's width and height (inches, at :data:`DPI` pixels each).
    """

    def __init__(self, layout: Layout, label: str, color: tuple[float, float, float],
                 size: tuple[float, float] = (4.6, 4.5)):
        super().__init__()
        self.layout = layout
        xy = np.column_stack([layout.x, layout.y])
        self.largest = float(max(layout.slots.max(), 1))
        self.area = marker_area(layout.slots, self.largest)
        self.cmap = traffic_cmap()
        self.norm = Normalize(IDLE_LOAD, 1.0)
        self._fill = np.array([to_rgba(STATE_COLORS[s]) for s in CLUSTER_STATES])
        self._down = CLUSTER_STATES.index("unreachable")

        fig = Figure(figsize=size, dpi=DPI)
        ax = map_axes(fig, (0.02, 0.2, 0.96, 0.72), xy)
        segments = np.stack([xy[layout.link_u], xy[layout.link_v]], axis=1) \
            if len(layout.link_u) else np.zeros((0, 2, 2))
        self.links = LineCollection(segments, linewidths=LINK_WIDTH[0], zorder=1,
                                    capstyle="round")
        ax.add_collection(self.links)
        self.clusters, self.busy = cluster_discs(ax, xy, self.area, "#bbbbbb", GATE_WIDTH[0])
        fig.text(0.03, 0.955, "●", color=color, fontsize=13, va="center")
        fig.text(0.09, 0.955, label, fontsize=11, fontweight="bold", va="center")
        fig.legend(handles=state_handles(6), loc="lower center", ncols=4, fontsize=7,
                   frameon=False, handlelength=1.0, columnspacing=0.8,
                   bbox_to_anchor=(0.5, 0.10))
        bar_ax = fig.add_axes((0.2, 0.075, 0.6, 0.025))
        bar = fig.colorbar(ScalarMappable(norm=self.norm, cmap=self.cmap), cax=bar_ax,
                           orientation="horizontal", extend="min")
        bar.set_ticks([IDLE_LOAD, 0.25, 0.5, 0.75, 1.0], labels=["0", "25", "50", "75", "100%"])
        bar.ax.tick_params(labelsize=7)
        bar.set_label("link load, gate utilisation: traffic ÷ bandwidth", fontsize=7,
                      labelpad=1)
        self.axes = ax
        self.figure = fig
        self.animated = (self.links, self.clusters, self.busy)
        self._attach()

    def update(self, frame: MapFrame) -> None:  # type: ignore[override]
        """Set states, busy slots, link loads and gate utilisation (vectorised)."""
        layout = self.layout
        load = np.clip(frame.link_load, 0.0, 1.0)
        colors = self.cmap(self.norm(load))
        down = frame.state == self._down
        cut = down[layout.link_u] | down[layout.link_v]
        colors[cut] = LINK_DOWN_COLOR
        self.links.set_color(colors)
        self.links.set_linewidths(LINK_WIDTH[0] + (LINK_WIDTH[1] - LINK_WIDTH[0]) * load)
        gate = np.clip(frame.gate_util, 0.0, 1.0)
        self.clusters.set_facecolor(self._fill[frame.state])
        self.clusters.set_edgecolor(self.cmap(self.norm(gate)))
        self.clusters.set_linewidths(GATE_WIDTH[0] + (GATE_WIDTH[1] - GATE_WIDTH[0]) * gate)
        self.busy.set_sizes(marker_area(np.minimum(frame.busy, layout.slots), self.largest))

    def draw(self, frame: MapFrame) -> bytes:
        """:meth:`update` and render; timed in ``frame_seconds``."""
        start = time.perf_counter()
        self.update(frame)
        image = self.render()
        self.frame_seconds = time.perf_counter() - start
        self.frames += 1
        return image


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
