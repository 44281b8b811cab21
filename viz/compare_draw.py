"""The comparison dashboard's figures: one load map per scheduler and the shared plots.

Both are :class:`~viz.dashboard_draw.BlitFigure` objects: built once, then each frame
only sets the data of a fixed set of artists and redraws them on a cached background.

- :class:`LoadMap`: the clusters and WAN links of one side. A cluster is filled with
  its state's colour and holds a dark disc of its busy slots (as on the single-run
  map); its outline and each link are coloured by how loaded they are (traffic over
  bandwidth, on one scale from idle grey to dark purple at 100%), and grow thicker
  with the load, so the scarce resource, the WAN, is what stands out. A link with an
  unreachable end is drawn in the outage colour.
- :class:`CompareSeries`: alive jobs, busy slots, WAN traffic and the mean flowtime of
  completed jobs, one line per scheduler (colour, line style and marker of
  :func:`viz.palette.scheduler_styles`), and the paired change of the mean flowtime of
  each scheduler against the first over the jobs completed under all of them, with its
  95% interval as a band.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Sequence

import numpy as np
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.colors import Normalize, to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import StrMethodFormatter

from geosim.state import CLUSTER_STATES
from viz.compare_data import MapFrame, Paired, Series
from viz.dashboard_draw import (
    DPI,
    BlitFigure,
    cluster_discs,
    map_axes,
    marker_area,
    nice_ceil,
    state_handles,
)
from viz.data import Layout
from viz.palette import STATE_COLORS, scheduler_styles, traffic_cmap

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
    """

    def __init__(self, layout: Layout, label: str, color: tuple[float, float, float]):
        super().__init__()
        self.layout = layout
        xy = np.column_stack([layout.x, layout.y])
        self.largest = float(max(layout.slots.max(), 1))
        self.area = marker_area(layout.slots, self.largest)
        self.cmap = traffic_cmap()
        self.norm = Normalize(IDLE_LOAD, 1.0)
        self._fill = np.array([to_rgba(STATE_COLORS[s]) for s in CLUSTER_STATES])
        self._down = CLUSTER_STATES.index("unreachable")

        fig = Figure(figsize=(4.6, 4.5), dpi=DPI)
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
        bar = fig.colorbar(_mappable(self.cmap, self.norm), cax=bar_ax, orientation="horizontal",
                           extend="min")
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


def _mappable(cmap, norm):
    from matplotlib.cm import ScalarMappable
    return ScalarMappable(norm=norm, cmap=cmap)


def _every(points: int) -> int:
    """Markers of a line of ``points`` points: about five along it."""
    return max(1, points // 5)


#: The shared plots' panels: (Series field, y label).
PANELS = (("alive", "alive jobs"), ("busy", "busy slots (%)"), ("wan", "WAN traffic (MB/s)"),
          ("mean_flowtime", "mean flowtime of\ncompleted jobs (s)"))


class CompareSeries(BlitFigure):
    """The shared plots: one line per scheduler per panel, and the paired change.

    Args:
        labels: Scheduler labels, the first being the baseline of the paired change.
        fixed: Series and paired changes of the whole run (a replay): the axes are set
            from them once and do not move; live, they grow in round steps.
    """

    def __init__(self, labels: Sequence[str],
                 fixed: tuple[list[Series], list[Paired]] | None = None):
        super().__init__()
        self.labels = list(labels)
        styles = scheduler_styles(self.labels)
        panels = len(PANELS) + (len(labels) > 1)
        fig = Figure(figsize=(6.4, 1.75 * panels + 0.6), dpi=DPI)
        fig.subplots_adjust(left=0.15, right=0.97, bottom=0.06, top=0.95, hspace=0.16)
        axes = list(fig.subplots(panels, 1, sharex=True))
        self.lines: dict[str, list[Line2D]] = {}
        for (name, ylabel), ax in zip(PANELS, axes, strict=False):
            self.lines[name] = [ax.plot([], [], lw=1.3, label=label,
                                        **{**styles[label].line(), "markevery": None})[0]
                                for label in self.labels]
            ax.set_ylabel(ylabel, fontsize=8)
        axes[0].legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=len(labels),
                       fontsize=8, frameon=False, borderaxespad=0.1)
        self.bands: list[PolyCollection] = []
        self.changes: list[Line2D] = []
        if len(labels) > 1:
            ax = axes[-1]
            ax.axhline(0.0, color="#555555", lw=0.8)
            for label in self.labels[1:]:
                color = styles[label].color
                band = PolyCollection([], facecolors=[to_rgba(color, 0.18)], edgecolors="none")
                ax.add_collection(band)
                self.bands.append(band)
                self.changes.append(ax.plot([], [], lw=1.4,
                                            **{**styles[label].line(), "markevery": None})[0])
            ax.set_ylabel(f"Δ mean flowtime\nvs {self.labels[0]} (%)", fontsize=8)
        axes[-1].set_xlabel("simulated time (s)", fontsize=8)
        axes[-1].xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
        for ax in axes:
            ax.grid(True, lw=0.4, alpha=0.5)
            ax.tick_params(labelsize=7)
        self.axes = axes
        self.figure = fig
        self.animated = (*[ln for lines in self.lines.values() for ln in lines],
                         *self.bands, *self.changes)
        self._frozen = fixed is not None
        self._limits: tuple[float, ...] = (100.0, *([1.0] * len(PANELS)), 1.0)
        if fixed is not None:
            self._limits = self._grow((0.0, *([0.0] * len(PANELS)), 0.0), *fixed)
        self._set_limits()
        self._attach()

    def background_key(self) -> Hashable:
        """The axis limits."""
        return self._limits

    def _grow(self, limits: tuple[float, ...], series: list[Series],
              paired: list[Paired]) -> tuple[float, ...]:
        t_max, *tops, change = limits
        now = max((float(s.time[-1]) for s in series if s.time.size), default=0.0)
        if now > t_max:
            t_max = nice_ceil(now * 1.15)
        for i, (name, _) in enumerate(PANELS):
            peak = max((float(np.nanmax(getattr(s, name))) for s in series
                        if np.isfinite(getattr(s, name)).any()), default=0.0)
            if peak > tops[i]:
                tops[i] = nice_ceil(peak * 1.15)
        for p in paired:
            c, h = np.asarray(p.change, float), np.nan_to_num(np.asarray(p.half, float))
            ok = np.isfinite(c)
            if ok.any():
                reach = 100.0 * float(np.max(np.abs(c[ok]) + h[ok]))
                if reach > change:
                    change = nice_ceil(reach * 1.1)
        return (t_max, *tops, change)

    def _set_limits(self) -> None:
        t_max, *tops, change = self._limits
        for ax, top in zip(self.axes, tops, strict=False):
            ax.set_ylim(0.0, max(top, 1e-9))
        self.axes[0].set_xlim(0.0, t_max)
        if len(self.labels) > 1:
            self.axes[-1].set_ylim(-change, change)

    def update(self, series: list[Series], paired: list[Paired]) -> None:  # type: ignore[override]
        """Set every line and band from the sides' series and paired changes."""
        for name, _ in PANELS:
            for line, s in zip(self.lines[name], series, strict=True):
                line.set_data(s.time, getattr(s, name))
                line.set_markevery(_every(s.time.size))
        for band, line, p in zip(self.bands, self.changes, paired, strict=True):
            t = np.asarray(p.time, float)
            c = 100.0 * np.asarray(p.change, float)
            h = 100.0 * np.asarray(p.half, float)
            line.set_data(t, c)
            line.set_markevery(_every(t.size))
            ok = np.isfinite(c) & np.isfinite(h)
            if ok.sum() >= 2:
                upper = np.column_stack([t[ok], c[ok] + h[ok]])
                lower = np.column_stack([t[ok], c[ok] - h[ok]])[::-1]
                band.set_verts([np.concatenate([upper, lower])])
            else:
                band.set_verts([])
        if not self._frozen:
            limits = self._grow(self._limits, series, paired)
            if limits != self._limits:
                self._limits = limits
                self._set_limits()

    def draw(self, series: list[Series], paired: list[Paired]) -> bytes:
        """:meth:`update` and render; timed in ``frame_seconds``."""
        start = time.perf_counter()
        self.update(series, paired)
        image = self.render()
        self.frame_seconds = time.perf_counter() - start
        self.frames += 1
        return image

