"""One palette for every figure: cluster states, tiers, copy outcomes, schedulers.

Colours are the Okabe–Ito set (readable with the common colour-vision deficiencies)
plus a few neutrals. A scheduler keeps its colour in every figure of a call: its base
name (``srpt`` for ``srpt[preemptive=false]``) picks the hue, and labels sharing a base
name get darker and lighter shades of it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
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

# Hues of known schedulers; other names take the fallback hues in order of appearance.
_SCHEDULER_HUES: dict[str, str] = {
    "fifo": "#7F7F7F",
    "fair": "#0072B2",
    "srpt": "#E69F00",
    "pingan": "#009E73",
    "srpt+r": "#D55E00",
    "fair+r": "#56B4E9",
    "laps+r": "#CC79A7",
    "laps": "#8C564B",
}
_FALLBACK_HUES = ("#332288", "#117733", "#882255", "#44AA99", "#999933", "#AA4499",
                  "#DDCC77", "#661100")

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


def scheduler_colors(labels: Iterable[str]) -> dict[str, tuple[float, float, float]]:
    """Colour of every scheduler label, the same whatever figure draws it.

    Args:
        labels: Scheduler labels (names, or specs with parameters), in display order.

    Returns:
        An RGB colour per label.
    """
    labels = list(dict.fromkeys(labels))
    by_base: dict[str, list[str]] = {}
    for label in labels:
        by_base.setdefault(base_name(label), []).append(label)
    spare = iter(h for h in _FALLBACK_HUES if h not in _SCHEDULER_HUES.values())
    colors: dict[str, tuple[float, float, float]] = {}
    for base, members in by_base.items():
        hue = _SCHEDULER_HUES.get(base) or next(spare, "#000000")
        # the bare name (or the first label) takes the hue; the others alternate darker
        # and lighter shades of it
        members = sorted(members, key=lambda m: (m != base, labels.index(m)))
        for i, label in enumerate(members):
            colors[label] = _shade(hue, i)
    return {label: colors[label] for label in labels}


def _shade(hue: str, i: int) -> tuple[float, float, float]:
    rgb = to_rgb(hue)
    if i == 0:
        return rgb
    step = (i + 1) // 2
    amount = min(0.25 * step, 0.75)
    if i % 2:   # darker
        return tuple(c * (1 - amount) for c in rgb)  # type: ignore[return-value]
    return tuple(c + (1 - c) * amount for c in rgb)  # type: ignore[return-value]


def state_cmap() -> tuple[Colormap, BoundaryNorm]:
    """Colour map and norm drawing state codes (index in ``CLUSTER_STATES``)."""
    cmap = ListedColormap([STATE_COLORS[s] for s in CLUSTER_STATES], name="cluster-states")
    return cmap, BoundaryNorm([-0.5, 0.5, 1.5, 2.5], cmap.N)


def utilisation_cmap() -> Colormap:
    """Colour map of utilisation; masked cells (unreachable clusters) take the outage colour."""
    return mpl.colormaps[UTILISATION_CMAP].with_extremes(bad=STATE_COLORS["unreachable"])


def traffic_cmap() -> Colormap:
    """Colour map of link traffic; values under the norm's minimum are idle links."""
    base = mpl.colormaps[TRAFFIC_CMAP]
    cmap = ListedColormap(base(np.linspace(0.5, 1.0, 256)), name="link-traffic")
    return cmap.with_extremes(under=IDLE_LINK_COLOR)


__all__ = [
    "IDLE_LINK_COLOR", "OUTCOME_COLORS", "STATE_COLORS", "STYLE", "TIER_COLORS",
    "TIER_MARKERS", "base_name", "scheduler_colors", "state_cmap", "styled", "traffic_cmap",
    "utilisation_cmap",
]
