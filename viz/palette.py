"""One palette for every figure: cluster states, tiers, copy outcomes, schedulers, changes.

Colours are the Okabe–Ito set (readable with the common colour-vision deficiencies)
plus a few neutrals. Every registered scheduler has a colour of its own
(:data:`SCHEDULER_COLORS`), the same in every figure; a label with parameters
(``srpt[preemptive=false]``) is a shade of its scheduler's colour, and an unknown
scheduler name takes a fallback colour by a hash of the name. A figure of more than one
scheduler also gives each a line style, marker and hatch (:func:`scheduler_styles`), so
that none is told apart by colour alone.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

import matplotlib as mpl
import numpy as np
from matplotlib.colors import BoundaryNorm, Colormap, ListedColormap, to_rgb

from geosim.results import CLUSTER_STATES

#: Cluster states (see :data:`geosim.results.CLUSTER_STATES`).
STATE_COLORS: dict[str, str] = {
    "available": "#009E73",     # bluish green
    "degraded": "#F0E442",      # yellow
    "unreachable": "#D55E00",   # vermillion
}

#: Copy outcomes of the copies table.
OUTCOME_COLORS: dict[str, str] = {
    "won": "#0072B2",       # blue
    "lost": "#999999",      # grey: a sibling finished first
    "killed": "#CC79A7",    # reddish purple: stopped by the scheduler
    "failed": "#D55E00",    # vermillion, as an unreachable cluster
    "alive": "#56B4E9",     # sky blue: still running when the run stopped
}

#: Tiers: a marker each on maps, a colour each where tiers are stacked or banded.
TIER_MARKERS: dict[str, str] = {"large": "s", "medium": "D", "small": "o"}
TIER_COLORS: dict[str, str] = {"large": "#1B3A5C", "medium": "#4F7CAC", "small": "#A9C6E8"}

#: Colour map of slot utilisation (busy slot shares over slots).
UTILISATION_CMAP = "viridis"
#: Colour map of WAN traffic on links (MB/s): its upper part, light to dark purple, so
#: busier links are darker and no link looks like a cluster state.
TRAFFIC_CMAP = "Purples"
#: Links carrying nothing.
IDLE_LINK_COLOR = "#D0D0D0"
#: Colour map of a paired change of the mean flowtime: blue where a scheduler is faster,
#: red where slower, white at no change (ColorBrewer's RdBu, reversed; readable with the
#: common colour-vision deficiencies).
CHANGE_CMAP = "RdBu_r"
#: Fill and hatch of a change whose 95% interval contains 0 (nothing decided).
UNDECIDED_COLOR = "#D9D9D9"
UNDECIDED_HATCH = "///"

#: Colour of every registered scheduler (``geosim.schedulers.registered()``), fixed so
#: that a scheduler looks the same in every figure whatever is drawn beside it. The first
#: eight are the Okabe–Ito set (plus grey and brown); the others were picked from Paul
#: Tol's, Tableau's and ColorBrewer's sets to keep every pair at least 20 CIELAB units
#: apart, and about 10 apart under simulated deuteranopia and protanopia; the schedulers
#: ``make run`` compares are at least 37 apart, and 20 under those deficiencies. Figures
#: of more than :data:`MAX_PLAIN` scheduler also tell them apart by line style, marker
#: and hatch (:func:`scheduler_styles`).
SCHEDULER_COLORS: dict[str, str] = {
    "fifo": "#7F7F7F",               # grey
    "fair": "#0072B2",               # blue
    "srpt": "#E69F00",               # orange
    "pingan": "#009E73",             # bluish green
    "srpt+r": "#D55E00",             # vermillion
    "fair+r": "#56B4E9",             # sky blue
    "laps+r": "#CC79A7",             # reddish purple
    "laps": "#8C564B",               # brown
    "iridium": "#332288",            # indigo
    "flutter": "#0B3C49",            # dark teal
    "flutter+dolly": "#17BECF",      # cyan
    "flutter+mantri": "#AA4499",     # purple
    "flutter+late": "#B5CF6B",       # light olive
    "mantri": "#920000",             # dark red
    "late": "#8C6D31",               # ochre
    "dolly": "#FF9DA7",              # pink
    "spark": "#924900",              # rust
    "spark+speculation": "#EDC948",  # yellow
    "flowflex": "#B66DFF",           # violet
    "flow-fair": "#59A14F",          # green
    "sca": "#7B4173",                # plum
    "srptms+c": "#D62728",           # red
    "srptms-offline": "#999933",     # olive
}
#: Colours of scheduler names not in :data:`SCHEDULER_COLORS` (plugins): a hash of the
#: name picks one, so a name keeps its colour from figure to figure.
FALLBACK_COLORS = ("#E7298A", "#006DDB", "#9C9EDE", "#9467BD", "#F95D6A", "#637939",
                   "#AA3377", "#BBBBBB")
#: Up to this many schedulers in one figure are drawn by colour alone; with more, each
#: also gets a line style, a marker and a bar hatch of its own, so that no two are told
#: apart by colour only.
MAX_PLAIN = 1
LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "p", "h")
HATCHES = ("", "//", "\\\\", "xx", "..", "++", "--", "||", "oo")
# How much darker (negative) or lighter (positive) the variants of a scheduler are
# (``laps+r[beta=0.6]`` beside ``laps+r``): a hash of the label picks one.
_SHADES = (-0.3, 0.3, -0.5, 0.45, -0.15, 0.15)


#: Matplotlib settings of every figure.
STYLE: dict[str, object] = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": False,
    "grid.color": "#E5E5E5",
    "grid.linewidth": 0.6,
    "figure.dpi": 100,
    "image.interpolation": "nearest",
}

P = ParamSpec("P")
R = TypeVar("R")


def styled(func: Callable[P, R]) -> Callable[P, R]:
    """Decorate a figure function so that it draws with :data:`STYLE`."""
    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with mpl.rc_context(STYLE):
            return func(*args, **kwargs)
    return wrapper


def base_name(label: str) -> str:
    """The scheduler name of a label: ``"laps+r[beta=0.6]"`` → ``"laps+r"``."""
    return label.split("[", 1)[0].strip().lower()


def _digest(text: str) -> int:
    """A hash of ``text`` that is the same in every process (``hash()`` is salted)."""
    return zlib.crc32(text.encode())


def _base_colors(bases: Iterable[str]) -> dict[str, str]:
    """The colour of each scheduler name: its own, or a fallback colour by hash.

    Two unknown names drawn together that hash to the same fallback colour are told
    apart: the later in alphabetical order takes the next free one.
    """
    colors: dict[str, str] = {}
    taken: set[str] = set()
    for base in sorted(set(bases)):
        if base in SCHEDULER_COLORS:
            colors[base] = SCHEDULER_COLORS[base]
            continue
        start = _digest(base) % len(FALLBACK_COLORS)
        for k in range(len(FALLBACK_COLORS)):
            hue = FALLBACK_COLORS[(start + k) % len(FALLBACK_COLORS)]
            if hue not in taken:
                break
        colors[base] = hue
        taken.add(hue)
    return colors


def scheduler_colors(labels: Iterable[str]) -> dict[str, tuple[float, float, float]]:
    """Colour of every scheduler label, the same whatever figure draws it.

    A registered scheduler has its own colour (:data:`SCHEDULER_COLORS`); another name
    (a plugin) takes one of :data:`FALLBACK_COLORS` by a hash of the name. A label with
    parameters (``fair[multitasking=true]``) is a darker or lighter shade of its
    scheduler's colour, picked by a hash of the label; labels of one scheduler drawn
    together get different shades. Nothing depends on the order of ``labels``.

    Args:
        labels: Scheduler labels (names, or specs with parameters), in display order.

    Returns:
        An RGB colour per label, in the order of ``labels``.
    """
    labels = list(dict.fromkeys(labels))
    hues = _base_colors(base_name(label) for label in labels)
    colors: dict[str, tuple[float, float, float]] = {}
    used: dict[str, set[int]] = {}
    for label in sorted(labels):
        base = base_name(label)
        if label.strip().lower() == base:
            colors[label] = to_rgb(hues[base])
            continue
        taken = used.setdefault(base, set())
        start = _digest(label) % len(_SHADES)
        shade = next((i for k in range(len(_SHADES))
                      if (i := (start + k) % len(_SHADES)) not in taken), start)
        taken.add(shade)
        colors[label] = _shade(hues[base], _SHADES[shade])
    return {label: colors[label] for label in labels}


def _shade(hue: str, amount: float) -> tuple[float, float, float]:
    """``hue`` mixed with black (``amount`` < 0) or white (``amount`` > 0)."""
    rgb = to_rgb(hue)
    if amount < 0:
        return tuple(c * (1 + amount) for c in rgb)  # type: ignore[return-value]
    return tuple(c + (1 - c) * amount for c in rgb)  # type: ignore[return-value]


@dataclass(frozen=True)
class SchedulerStyle:
    """How a scheduler is drawn: a colour, and in crowded figures line style, marker, hatch.

    Attributes:
        color: RGB colour.
        linestyle: Line style of its lines.
        marker: Marker along its lines, or ``None``.
        hatch: Hatch of its bars, or ``None``.
    """

    color: tuple[float, float, float]
    linestyle: str = "-"
    marker: str | None = None
    hatch: str | None = None

    def line(self) -> dict[str, object]:
        """Keyword arguments of ``Axes.plot`` (markers spaced along the line)."""
        kwargs: dict[str, object] = {"color": self.color, "linestyle": self.linestyle}
        if self.marker:
            kwargs.update(marker=self.marker, markersize=4.5, markevery=0.12,
                          markerfacecolor="white", markeredgecolor=self.color)
        return kwargs

    def bar(self) -> dict[str, object]:
        """Keyword arguments of ``Axes.bar``."""
        kwargs: dict[str, object] = {"color": self.color}
        if self.hatch:
            kwargs.update(hatch=self.hatch, edgecolor="white", linewidth=0)
        return kwargs


def scheduler_styles(labels: Iterable[str]) -> dict[str, SchedulerStyle]:
    """Style of every scheduler label of one figure.

    Colours are :func:`scheduler_colors`. With at most :data:`MAX_PLAIN` labels every
    line is solid and every bar plain; with more, each label also gets a line style,
    marker and hatch: a registered scheduler by its place in :data:`SCHEDULER_COLORS`
    (no two registered schedulers share the pair of line style and marker), another
    label by a hash of it.

    Args:
        labels: Scheduler labels of the figure.

    Returns:
        A :class:`SchedulerStyle` per label, in the order of ``labels``.
    """
    colors = scheduler_colors(labels)
    if len(colors) <= MAX_PLAIN:
        return {label: SchedulerStyle(color) for label, color in colors.items()}
    order = {name: i for i, name in enumerate(SCHEDULER_COLORS)}
    styles = {}
    for label, color in colors.items():
        i = order.get(label.strip().lower(), _digest(label))
        styles[label] = SchedulerStyle(color, LINESTYLES[i % len(LINESTYLES)],
                                       MARKERS[i % len(MARKERS)], HATCHES[i % len(HATCHES)])
    return styles


def state_cmap() -> tuple[Colormap, BoundaryNorm]:
    """Colour map and norm drawing state codes (index in ``CLUSTER_STATES``)."""
    cmap = ListedColormap([STATE_COLORS[s] for s in CLUSTER_STATES], name="cluster-states")
    return cmap, BoundaryNorm([-0.5, 0.5, 1.5, 2.5], cmap.N)


def utilisation_cmap() -> Colormap:
    """Colour map of utilisation; masked cells (unreachable clusters) take the outage colour."""
    return mpl.colormaps[UTILISATION_CMAP].with_extremes(bad=STATE_COLORS["unreachable"])


def change_cmap() -> Colormap:
    """Colour map of paired changes of the mean flowtime (negative: faster)."""
    return mpl.colormaps[CHANGE_CMAP]


def traffic_cmap() -> Colormap:
    """Colour map of link traffic; values under the norm's minimum are idle links."""
    base = mpl.colormaps[TRAFFIC_CMAP]
    cmap = ListedColormap(base(np.linspace(0.5, 1.0, 256)), name="link-traffic")
    return cmap.with_extremes(under=IDLE_LINK_COLOR)


__all__ = [
    "CHANGE_CMAP", "FALLBACK_COLORS", "IDLE_LINK_COLOR", "MAX_PLAIN", "OUTCOME_COLORS",
    "SCHEDULER_COLORS", "STATE_COLORS", "STYLE", "TIER_COLORS", "TIER_MARKERS",
    "UNDECIDED_COLOR", "UNDECIDED_HATCH", "SchedulerStyle", "base_name", "change_cmap",
    "scheduler_colors", "scheduler_styles", "state_cmap", "styled", "traffic_cmap",
    "utilisation_cmap",
]
