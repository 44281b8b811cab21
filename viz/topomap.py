"""The topology map: clusters in the plane, WAN links, states and traffic at one sample.

:class:`TopologyMap` draws the map once and redraws its colours for any sampling time,
so the static figure (:func:`viz.figures.topology_map`) and the animation
(:mod:`viz.animation`) are the same picture.
"""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import Normalize, to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import PercentFormatter

from geosim.errors import GeosimError
from geosim.results import CLUSTER_STATES
from geosim.topology import TIERS
from viz.data import RunData
from viz.palette import (
    IDLE_LINK_COLOR,
    STATE_COLORS,
    TIER_MARKERS,
    traffic_cmap,
    utilisation_cmap,
)

#: Marker areas (pt²) of the smallest possible and of the largest cluster.
MIN_AREA, MAX_AREA = 12.0, 320.0
COLOR_BY = ("state", "utilisation")
#: Where the map goes in its figure (left, bottom, width, height), leaving the right
#: side to the legend and colour bars.
MAP_RECT = (0.08, 0.08, 0.6, 0.84)


class TopologyMap:
    """A run's topology drawn on ``ax``, coloured for one sampling time at a time.

    Nodes are clusters: marker shape by tier, area proportional to slots, fill colour by
    state or by slot utilisation (then the outline shows the state). Links are coloured
    by the traffic they carry (MB/s, both directions), on one scale for the whole run.

    Args:
        run: The run.
        ax: Axes to draw on.
        color_by: ``"state"`` or ``"utilisation"``.

    Raises:
        GeosimError: ``color_by`` is unknown, or the world cannot be rebuilt.
    """

    def __init__(self, run: RunData, ax: Axes, color_by: str = "state"):
        if color_by not in COLOR_BY:
            raise GeosimError(f"unknown colouring {color_by!r} (state or utilisation)",
                              source="color-by")
        self.run, self.ax, self.color_by = run, ax, color_by
        layout = run.layout
        self.layout = layout
        self.states = run.matrix("state")              # clusters (run.order) × samples
        slots = run.matrix("slots").astype(float)
        self.utilisation = np.divide(run.matrix("busy"), slots, out=np.zeros_like(slots),
                                     where=slots > 0)
        self.traffic, self.per_link = run.link_traffic
        peak = float(self.traffic.max()) if self.traffic.size else 0.0
        peak = peak if peak > 0 else 1.0   # no traffic at all: every link idle
        self.traffic_norm = Normalize(vmin=peak * 1e-3, vmax=peak)
        self.traffic_cmap = traffic_cmap()
        self.util_cmap = utilisation_cmap()
        self.util_norm = Normalize(0.0, 1.0)
        order = run.order
        self.rank = np.empty(len(order), dtype=np.int64)
        self.rank[order] = np.arange(len(order))

        segments = np.stack([np.column_stack([layout.x[layout.link_u], layout.y[layout.link_u]]),
                             np.column_stack([layout.x[layout.link_v], layout.y[layout.link_v]])],
                            axis=1) if len(layout.link_u) else np.zeros((0, 2, 2))
        self.links = LineCollection(segments, cmap=self.traffic_cmap, norm=self.traffic_norm,
                                    linewidths=1.4, zorder=1, capstyle="round")
        self.links.set_array(np.zeros(len(segments)))
        ax.add_collection(self.links)

        biggest = max(float(layout.slots.max()), 1.0)
        self.nodes: dict[str, tuple[PathCollection, np.ndarray]] = {}
        for tier in TIERS:
            ids = np.flatnonzero(layout.tier == tier)
            if not ids.size:
                continue
            area = MIN_AREA + (MAX_AREA - MIN_AREA) * layout.slots[ids] / biggest
            points = ax.scatter(layout.x[ids], layout.y[ids], s=area, marker=TIER_MARKERS[tier],
                                linewidths=0.6, edgecolors="black", zorder=2 + TIERS.index(tier),
                                label=f"{tier} clusters")
            self.nodes[tier] = (points, ids)
        ax.set_aspect("equal", adjustable="box", anchor="W")
        pad = 0.04 * max(np.ptp(layout.x), np.ptp(layout.y), 1.0)
        ax.set_xlim(layout.x.min() - pad, layout.x.max() + pad)
        ax.set_ylim(layout.y.min() - pad, layout.y.max() + pad)
        ax.set_xlabel("x (km)")
        ax.set_ylabel("y (km)")

    def sample_index(self, time: float) -> int:
        """Index of the last sample at or before ``time``."""
        return int(np.searchsorted(self.run.times, self.run.sample_at(time)))

    def show(self, index: int) -> list:
        """Colour nodes and links for sample ``index``; return the changed artists."""
        traffic = self.traffic[:, index] if self.traffic.size else np.zeros(0)
        self.links.set_array(traffic)
        scale = np.clip(traffic / self.traffic_norm.vmax, 0.0, 1.0)
        widths = np.where(traffic >= self.traffic_norm.vmin, 1.2 + 2.3 * scale, 0.7)
        self.links.set_linewidths(widths)
        changed: list = [self.links]
        for points, ids in self.nodes.values():
            rows = self.rank[ids]
            states = self.states[rows, index].astype(int)
            state_rgba = np.array([to_rgba(STATE_COLORS[CLUSTER_STATES[s]]) for s in states])
            if self.color_by == "state":
                points.set_facecolors(state_rgba)
            else:
                util = np.ma.masked_where(states == CLUSTER_STATES.index("unreachable"),
                                          self.utilisation[rows, index])
                points.set_facecolors(self.util_cmap(self.util_norm(util)))
                points.set_edgecolors(state_rgba)
                points.set_linewidths(1.6)
            changed.append(points)
        return changed

    def add_legends(self, fig: Figure, ax: Axes, loc: str = "upper left") -> None:
        """Add the tier, state and size legend beside the map, and the colour bars."""
        layout = self.layout
        handles: list = [Line2D([], [], marker=TIER_MARKERS[t], linestyle="", color="#555555",
                                markeredgecolor="black", markersize=7, label=f"{t}")
                         for t in TIERS if (layout.tier == t).any()]
        title = "tier"
        if self.color_by == "state":
            handles += [Patch(facecolor=STATE_COLORS[s], edgecolor="black", linewidth=0.5,
                              label=s) for s in CLUSTER_STATES]
            title = "tier · state"
        else:
            for s in CLUSTER_STATES:
                down = s == "unreachable"
                handles.append(Line2D([], [], marker="o", linestyle="", markersize=7,
                                      markerfacecolor=STATE_COLORS[s] if down else "white",
                                      markeredgecolor=STATE_COLORS[s], markeredgewidth=1.6,
                                      label=s if down else f"{s} (outline)"))
            title = "tier · state"
        biggest = max(int(layout.slots.max()), 1)
        for n in _size_steps(biggest):
            area = MIN_AREA + (MAX_AREA - MIN_AREA) * n / biggest
            handles.append(Line2D([], [], marker="o", linestyle="", color="#BBBBBB",
                                  markeredgecolor="black", markeredgewidth=0.4,
                                  markersize=float(np.sqrt(area)),
                                  label=f"{n} slot{'s' if n > 1 else ''}"))
        has_links = len(layout.link_u) > 0
        if has_links:
            handles.append(Line2D([], [], color=IDLE_LINK_COLOR, linewidth=0.8,
                                  label="idle link"))
        ax.legend(handles=handles, title=title, loc=loc, bbox_to_anchor=(1.02, 1.0),
                  borderaxespad=0.0, labelspacing=0.9, handletextpad=0.8)
        if has_links:
            what = "link traffic (MB/s)" if self.per_link else \
                "link traffic (MB/s), estimated\nas its ends' smaller gate traffic"
            bar = fig.colorbar(self.links, cax=ax.inset_axes([1.05, 0.0, 0.03, 0.36]),
                               extend="min")
            bar.set_label(what)
        if self.color_by == "utilisation":
            from matplotlib.cm import ScalarMappable
            bar = fig.colorbar(ScalarMappable(self.util_norm, self.util_cmap),
                               cax=ax.inset_axes([1.24 if has_links else 1.05, 0.0, 0.03,
                                                  0.36]),
                               format=PercentFormatter(1.0))
            bar.set_label("slot utilisation (busy / slots)")


def _size_steps(biggest: int) -> list[int]:
    """Two or three round slot counts up to ``biggest`` for the size legend."""
    steps = []
    for value in (biggest, biggest / 4, biggest / 20):
        magnitude = 10 ** max(int(np.floor(np.log10(max(value, 1)))), 0)
        rounded = int(max(round(value / magnitude) * magnitude, 1))
        if rounded not in steps and rounded <= biggest:
            steps.append(rounded)
    return sorted(steps, reverse=True)
