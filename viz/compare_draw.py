"""The comparison dashboard's shared plots.

Each scheduler's map is a :class:`~viz.dashboard_draw.LoadMap`, as on the single-run
page. :class:`CompareSeries` is a :class:`~viz.dashboard_draw.BlitFigure`: built once, then
each frame only sets the data of a fixed set of artists and redraws them on a cached
background. It plots alive jobs, busy slots, WAN traffic and the mean flowtime of
completed jobs, one line per scheduler (colour, line style and marker of
:func:`viz.palette.scheduler_styles`), and the paired change of the mean flowtime of
each scheduler against the first over the jobs completed under all of them, with its
95% interval as a band.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Sequence

import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import StrMethodFormatter

from viz.compare_data import Paired, Series
from viz.dashboard_draw import (
    DPI,
    BlitFigure,
    nice_ceil,
)
from viz.palette import scheduler_styles


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
            c, h = p.change, np.nan_to_num(p.half)
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
            t, c, h = p.time, 100.0 * p.change, 100.0 * p.half
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

