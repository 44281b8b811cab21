"""Figures from saved results, one function per figure, each returning its Figure.

Run figures take a run (a :class:`~viz.data.RunData`, a :class:`~geosim.results.Result`
or a run directory); comparison figures take one or several comparisons (a
:class:`~viz.data.ComparisonData`, a :class:`~geosim.Comparison` or a comparison
directory), one group or panel per comparison, i.e. per load; the map of a sweep takes a
:class:`~geosim.Sweep` or a sweep directory. Nothing is simulated.

The figures are plain :class:`matplotlib.figure.Figure` objects with an Agg canvas (no
pyplot, no display needed): ``fig.savefig("states.png")``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.colors import LogNorm, Normalize, to_rgba
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import (
    FuncFormatter,
    LogLocator,
    NullFormatter,
    PercentFormatter,
)

from geosim.errors import GeosimError
from geosim.experiment import Comparison, Sweep, t_halfwidth
from geosim.experiment.sweep import decision, show_value
from geosim.results import CLUSTER_STATES, Result
from geosim.topology import TIERS
from viz.data import (
    READABLE_COPIES,
    ComparisonData,
    RunData,
    as_comparison,
    as_run,
    as_sweep,
    open_results,
)
from viz.palette import (
    OUTCOME_COLORS,
    TIER_COLORS,
    UNDECIDED_COLOR,
    UNDECIDED_HATCH,
    SchedulerStyle,
    change_cmap,
    scheduler_colors,
    scheduler_styles,
    state_cmap,
    styled,
    traffic_cmap,
    utilisation_cmap,
)
from viz.topomap import MAP_RECT, TopologyMap

Run = RunData | Result | str | os.PathLike
Compared = ComparisonData | Comparison | str | os.PathLike
Swept = Sweep | str | os.PathLike

__all__ = [
    "cluster_states", "copies_and_waste", "flowtime_cdf", "gantt", "mean_flowtime",
    "paired_change", "reduction_cdf", "sweep_map", "topology_map", "wan_traffic",
]


def new_figure(width: float, height: float, layout: str | None = "constrained") -> Figure:
    """A figure with an Agg canvas (drawable and savable without any GUI)."""
    fig = Figure(figsize=(width, height), layout=layout)
    FigureCanvasAgg(fig)
    return fig


# ---------------------------------------------------------------------------- run figures
def _time_edges(times: np.ndarray, end: float) -> np.ndarray:
    """Cell edges of the samples: each sample holds until the next (the last to ``end``)."""
    step = float(np.median(np.diff(times))) if len(times) > 1 else 1.0
    last = max(end, times[-1] + step) if end > times[-1] else times[-1] + step
    return np.append(times, last)


def _tier_bands(ax: Axes, run: RunData) -> None:
    """Label the tiers of the cluster rows on the y axis and separate them with lines."""
    tiers = run.cluster_info.loc[run.order, "tier"].astype(str).to_numpy()
    ticks, labels = [], []
    start = 0
    for tier in TIERS:
        count = int((tiers == tier).sum())
        if not count:
            continue
        ticks.append(start + count / 2)
        labels.append(f"{tier} ({count})")
        if start:
            ax.axhline(start, color="white", linewidth=1.2)
            ax.axhline(start, color="black", linewidth=0.5)
        start += count
    ax.set_yticks(ticks, labels, fontsize=7)
    ax.tick_params(axis="y", length=0)


@styled
def cluster_states(run: Run) -> Figure:
    """Heatmaps of cluster state and slot utilisation over time.

    Rows are clusters sorted by tier (large first), then slots; columns are the sampling
    times. Utilisation is busy slot shares over slots; its cells are drawn in the
    outage colour while the cluster is unreachable.

    Args:
        run: The run.

    Returns:
        Two panels sharing the time axis; their meshes are clusters × samples.
    """
    run = as_run(run)
    states = run.matrix("state").astype(float)
    slots = run.matrix("slots").astype(float)
    busy = run.matrix("busy")
    util = np.divide(busy, slots, out=np.zeros_like(busy, dtype=float), where=slots > 0)
    util = np.ma.masked_where(states == CLUSTER_STATES.index("unreachable"), util)
    n = len(run.order)
    panel = min(max(0.045 * n + 0.7, 1.5), 4.2)
    fig = new_figure(8.0, 2 * panel + 0.9)
    axes = fig.subplots(2, 1, sharex=True)
    x = _time_edges(run.times, run.end_time)
    y = np.arange(n + 1)
    cmap, norm = state_cmap()
    mesh = axes[0].pcolormesh(x, y, states, cmap=cmap, norm=norm, rasterized=True)
    bar = fig.colorbar(mesh, ax=axes[0], ticks=[0, 1, 2], pad=0.01, aspect=12, shrink=0.7)
    bar.ax.set_yticklabels(list(CLUSTER_STATES))
    bar.ax.tick_params(length=0)
    shown = (states == CLUSTER_STATES.index("unreachable")).mean()
    axes[0].set_title(f"(a) cluster state: {100 * shown:.1f}% of cluster-time unreachable",
                      loc="left")
    mesh = axes[1].pcolormesh(x, y, util, cmap=utilisation_cmap(), norm=Normalize(0, 1),
                              rasterized=True)
    bar = fig.colorbar(mesh, ax=axes[1], pad=0.01, aspect=12, format=PercentFormatter(1.0))
    bar.set_label("busy slots / slots")
    axes[1].set_title("(b) slot utilisation (outages in the unreachable colour)", loc="left")
    for ax in axes:
        ax.set_ylim(n, 0)
        _tier_bands(ax, run)
        ax.set_ylabel("cluster (tier, by slots)")
    axes[1].set_xlabel("time (s)")
    axes[1].set_xlim(x[0], x[-1])
    fig.suptitle(f"{run.name}: clusters over time", x=0.01, ha="left", fontweight="bold")
    return fig


@styled
def topology_map(run: Run, time: float | None = None, color_by: str = "state") -> Figure:
    """The topology at one time: clusters by tier and size, state or utilisation, link traffic.

    Args:
        run: The run.
        time: Time (s); the last sample at or before it is drawn. Default: the middle.
        color_by: Fill clusters by ``"state"`` or ``"utilisation"`` (outline: state).

    Raises:
        GeosimError: The time lies outside the run, or the world cannot be rebuilt.
    """
    run = as_run(run)
    when = run.check_time(time)
    fig = new_figure(8.4, 6.6, layout=None)
    ax = fig.add_axes(MAP_RECT)
    view = TopologyMap(run, ax, color_by)
    index = view.sample_index(when)
    view.show(index)
    view.add_legends(fig, ax)
    down = int((view.states[:, index] == CLUSTER_STATES.index("unreachable")).sum())
    ax.set_title(f"{run.name}: t = {run.times[index]:.0f} s, {down} of "
                 f"{view.layout.n_clusters} clusters unreachable", loc="left")
    return fig


def _spans(times: np.ndarray) -> np.ndarray:
    """Length of the interval each sample averages over (0 for the first)."""
    return np.diff(times, prepend=times[0])


@styled
def wan_traffic(run: Run) -> Figure:
    """WAN traffic over time, by tier of the sending cluster, and per cluster gate.

    Args:
        run: The run.

    Returns:
        (a) total WAN throughput (MB/s, every byte counted once, at its sender's egress
        gate), stacked by tier; (b) each cluster's gate traffic (egress plus ingress)
        over time, rows as in :func:`cluster_states`; (c) each cluster's mean egress (up)
        and ingress (down) over the run.
    """
    run = as_run(run)
    egress, ingress = run.matrix("egress_mbps"), run.matrix("ingress_mbps")
    tiers = run.cluster_info.loc[run.order, "tier"].astype(str).to_numpy()
    times = run.times
    n = len(tiers)
    panel = min(max(0.03 * n + 0.8, 1.5), 3.2)
    fig = new_figure(8.0, 2.3 + panel + 2.2 + 0.8)
    top, middle, bottom = fig.subplots(3, 1, height_ratios=[2.3, panel, 2.2])
    present = [t for t in TIERS if (tiers == t).any()]
    stacks = [egress[tiers == t].sum(axis=0) for t in present]
    top.stackplot(times, *stacks, labels=[f"from {t} clusters" for t in present],
                  colors=[TIER_COLORS[t] for t in present], step="pre", linewidth=0)
    top.set_xlim(times[0], times[-1])
    top.set_ylim(0, max(float(np.sum(stacks, axis=0).max()), 1e-9) * 1.08)
    top.set_xlabel("time (s)")
    top.set_ylabel("WAN throughput (MB/s)")
    top.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    top.set_title(f"(a) WAN traffic: {run.result.summary.get('wan_mb', float('nan')):,.0f} MB "
                  "in all", loc="left")
    top.grid(axis="y")

    gate = egress + ingress
    peak = max(float(gate.max()), 1e-9)
    norm = LogNorm(vmin=peak * 1e-3, vmax=peak)
    cmap = traffic_cmap().with_extremes(under="white", bad="white")
    mesh = middle.pcolormesh(_time_edges(times, run.end_time), np.arange(n + 1),
                             np.where(gate > 0, gate, np.nan), cmap=cmap, norm=norm,
                             rasterized=True)
    bar = fig.colorbar(mesh, ax=middle, pad=0.01, aspect=12, extend="min")
    bar.set_label("MB/s")
    middle.set_ylim(n, 0)
    _tier_bands(middle, run)
    middle.set_xlim(times[0], times[-1])
    middle.set_xlabel("time (s)")
    middle.set_ylabel("cluster")
    middle.set_title("(b) gate traffic per cluster (egress + ingress), white: none", loc="left")

    span = _spans(times)
    total = max(times[-1] - times[0], 1e-12)
    mean_out, mean_in = egress @ span / total, ingress @ span / total
    x = np.arange(n)
    bottom.bar(x, mean_out, width=0.8, color="#0072B2", label="egress")
    bottom.bar(x, -mean_in, width=0.8, color="#E69F00", label="ingress")
    bottom.axhline(0, color="black", linewidth=0.6)
    start = 0
    for tier in present:
        count = int((tiers == tier).sum())
        if start:
            bottom.axvline(start - 0.5, color="#888888", linewidth=0.6, linestyle=":")
        bottom.text(start + count / 2 - 0.5, 1.0, tier, transform=bottom.get_xaxis_transform(),
                    ha="center", va="bottom", fontsize=8, color="#444444")
        start += count
    bottom.set_xlim(-0.8, n - 0.2)
    reach = max(float(mean_out.max()), float(mean_in.max()), 1e-9) * 1.15
    bottom.set_ylim(-reach, reach)
    bottom.yaxis.set_major_formatter(_absolute)
    bottom.set_xlabel("cluster (by tier, then slots)")
    bottom.set_ylabel("mean MB/s\n← ingress · egress →")
    if n <= 40:
        bottom.set_xticks(x, [str(c) for c in run.order], fontsize=6)
    else:
        bottom.set_xticks([])
    bottom.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    bottom.set_title("(c) mean gate traffic over the run", loc="left", pad=14)
    fig.suptitle(f"{run.name}: WAN traffic", x=0.01, ha="left", fontweight="bold")
    return fig


def _absolute(value: float, _pos: int) -> str:
    return f"{abs(value):g}"


@styled
def gantt(run: Run, job: int | None = None) -> Figure:
    """The tasks and copies of one job: where, when, and how each copy ended.

    One bar per copy, from its start to its end, grouped by task (tasks in order of
    their first start), coloured by outcome; a star marks the copy that won. Bars are
    labelled with their cluster when there are at most
    :data:`~viz.data.READABLE_COPIES`.

    Args:
        run: The run.
        job: Job id; default: a slow job that is still readable, the finished job with
            the largest flowtime among those with at most
            :data:`~viz.data.READABLE_COPIES` copies (see
            :meth:`~viz.data.RunData.default_job`).

    Raises:
        GeosimError: The job does not exist.
    """
    run = as_run(run)
    job = run.check_job(job)
    result = run.result
    info = result.jobs.set_index("job").loc[job]
    tasks = result.tasks[result.tasks["job"] == job]
    copies = result.copies[result.copies["job"] == job].copy()
    copies["outcome"] = copies["outcome"].astype(str)
    end_of_run = run.end_time
    copies["stop"] = copies["end"].fillna(end_of_run)
    first = copies.groupby("task")["start"].min()
    order = tasks.assign(first=tasks["task"].map(first)) \
        .sort_values(["first", "task"], na_position="last")["task"].to_numpy()
    copies["rank"] = copies["task"].map({t: i for i, t in enumerate(order)})
    copies = copies.sort_values(["rank", "start", "copy"]).reset_index(drop=True)
    rows = len(copies)
    fig = new_figure(8.0, min(max(1.6 + 0.16 * rows, 3.0), 14.0))
    ax = fig.add_subplot()
    y = np.arange(rows)
    colors = [OUTCOME_COLORS.get(o, "#000000") for o in copies["outcome"]]
    few = rows <= 150   # more rows are a density picture: no gaps, ticks for winners
    ax.barh(y, copies["stop"] - copies["start"], left=copies["start"],
            height=0.8 if few else 1.0, color=colors, linewidth=0, label="_copies",
            gid="copies")
    won = copies["outcome"] == "won"
    ax.plot(copies.loc[won, "stop"], y[won.to_numpy()], linestyle="",
            marker="*" if few else "|", markersize=7 if few else 2.0,
            markeredgewidth=None if few else 0.6, color="black", label="winning copy",
            gid="winners")
    arrival = float(info["arrival"])
    ax.axvline(arrival, color="#444444", linestyle="--", linewidth=0.8, label="job arrival")
    if bool(info["finished"]):
        ax.axvline(float(info["completion"]), color="#444444", linewidth=0.8,
                   label="job completion")
    labelled = rows <= READABLE_COPIES
    if labelled:
        for row, copy in copies.iterrows():
            ax.annotate(f"c{int(copy['cluster'])}", (copy["stop"], row), xytext=(6, 0),
                        textcoords="offset points", va="center", fontsize=6, color="#333333")
    bounds = copies.groupby("rank").size().cumsum().to_numpy()
    if few:
        for edge in bounds[:-1]:
            ax.axhline(edge - 0.5, color="#E0E0E0", linewidth=0.5, zorder=0)
    if len(order) <= 40:
        centres = (np.concatenate([[0], bounds[:-1]]) + bounds - 1) / 2
        type_of = tasks.set_index("task")["type"].astype(str)
        ax.set_yticks(centres, [f"task {t} ({type_of[t]})" for t in order[:len(centres)]],
                      fontsize=7)
        ax.set_ylabel("copies, grouped by task")
    else:
        ax.set_yticks([])
        ax.set_ylabel(f"copies, grouped by task ({len(order)} tasks)")
    ax.set_ylim(rows - 0.5, -0.5)
    ax.set_xlabel("time (s)")
    span = max(copies["stop"].max(), float(info["completion"]) if info["finished"] else 0) \
        - min(arrival, copies["start"].min())
    ax.set_xlim(min(arrival, copies["start"].min()) - 0.02 * span,
                copies["stop"].max() + (0.08 if labelled else 0.02) * span)
    present = [o for o in OUTCOME_COLORS if (copies["outcome"] == o).any()]
    handles = [Patch(color=OUTCOME_COLORS[o], label=f"{o} ({int((copies['outcome'] == o).sum())})")
               for o in present]
    handles += [h for h in ax.get_legend_handles_labels()[0]]
    if labelled:
        handles.append(Line2D([], [], linestyle="", label="c7: ran on cluster 7"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              title="copy outcome", borderaxespad=0.0)
    flow = f"flowtime {float(info['flowtime']):.0f} s" if info["finished"] else "unfinished"
    ax.set_title(f"{run.name}: job {job}, {len(tasks)} tasks, {rows} copies, {flow}",
                 loc="left")
    return fig


# ---------------------------------------------------------------------------- jobs
def _sources(sources: object) -> list[RunData | ComparisonData]:
    items = sources if isinstance(sources, list | tuple) else [sources]
    out: list[RunData | ComparisonData] = []
    for item in items:
        if isinstance(item, RunData | Result):
            out.append(as_run(item))
        elif isinstance(item, ComparisonData | Comparison):
            out.append(as_comparison(item))
        else:
            out.append(open_results(item))   # type: ignore[arg-type]
    if not out:
        raise GeosimError("nothing to draw: no run or comparison given")
    return out


def _comparisons(sources: Compared | Sequence[Compared]) -> list[ComparisonData]:
    items = sources if isinstance(sources, list | tuple) else [sources]
    comps = [as_comparison(item) for item in items]
    if not comps:
        raise GeosimError("nothing to draw: no comparison given")
    return comps


def _cdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step coordinates of the empirical CDF, starting at 0 at the smallest value."""
    x = np.sort(values)
    y = np.arange(1, len(x) + 1) / len(x)
    return np.concatenate([x[:1], x]), np.concatenate([[0.0], y])


def _unique_names(runs: list[RunData]) -> list[str]:
    names = [r.name for r in runs]
    if len(set(names)) == len(names):
        return names
    return [f"{r.name} ({r.path.name if r.path else i})" for i, r in enumerate(runs)]


@styled
def flowtime_cdf(sources: Run | Compared | Sequence[Run | Compared],
                 log_x: bool = True) -> Figure:
    """CDF of job flowtimes: runs overlaid in one panel, one panel per comparison.

    A comparison draws one line per scheduler from each job's flowtime averaged over
    the replications (003 §6.1), so every line has one point per job. One legend below
    the panels names every line with its mean flowtime in each panel, left to right.

    Args:
        sources: Runs and/or comparisons.
        log_x: Logarithmic flowtime axis.
    """
    items = _sources(sources)
    runs = [s for s in items if isinstance(s, RunData)]
    comps = _ordered([s for s in items if isinstance(s, ComparisonData)])
    run_names = _unique_names(runs)
    styles = scheduler_styles([n.split(" (")[0] for n in run_names] +
                              [label for c in comps for label in c.labels])
    styles.update({n: styles[n.split(" (")[0]] for n in run_names})
    panels = ([("runs", runs)] if runs else []) + [("comparison", c) for c in comps]
    labels = list(dict.fromkeys(run_names + [label for c in comps for label in c.labels]))
    fig = new_figure(min(3.9 * len(panels) + 1.2, 14.0), PANEL_HEIGHT)
    axes = np.atleast_1d(fig.subplots(1, len(panels), sharey=True, squeeze=False)[0])
    entries = _Entries(labels, len(panels))
    for p, (ax, (kind, item)) in enumerate(zip(axes, panels, strict=True)):
        if kind == "runs":
            series = [(name, r.result.jobs.loc[r.result.jobs["finished"].astype(bool),
                                               "flowtime"].to_numpy())
                      for name, r in zip(run_names, item, strict=True)]
            ax.set_title("jobs of each run", loc="left")
            ax.set_xlabel("flowtime (s)")
        else:
            per_job = item.per_job
            series = [(label, per_job.loc[per_job["label"] == label, "flowtime"].dropna()
                       .to_numpy()) for label in item.labels]
            runs_of = f"{len(item.seeds)} replication{'s' if len(item.seeds) > 1 else ''}"
            ax.set_title(f"{item.name} ({runs_of})", loc="left")
            ax.set_xlabel("flowtime (s), per job averaged over replications"
                          if len(item.seeds) > 1 else "flowtime (s)")
        for label, values in series:
            if not len(values):
                continue
            x, y = _cdf(values)
            line, = ax.plot(x, y, drawstyle="steps-post", linewidth=1.5, label=label,
                            **styles[label].line())
            entries.add(label, p, line, f"{values.mean():.0f} s")
        if log_x:
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(0, 1.01)
        ax.grid(True, which="major")
    axes[0].set_ylabel("fraction of jobs (CDF)")
    axes[0].yaxis.set_major_formatter(PercentFormatter(1.0))
    entries.legend(fig, "mean", "mean flowtime")
    return fig


#: Height (inches) of a row of CDF panels, without the legend below them.
PANEL_HEIGHT = 3.4
#: Inches per character and for the handle of a legend entry, and per legend row (at
#: the legend's 8 pt font).
LEGEND_CHAR, LEGEND_HANDLE, LEGEND_ROW = 0.06, 0.7, 0.18


def _legend_shape(texts: list[str], width: float) -> tuple[int, int]:
    """Columns and rows of a legend of ``texts`` that fits a figure ``width`` wide."""
    column = LEGEND_HANDLE + LEGEND_CHAR * max(len(t) for t in texts)
    ncols = max(1, min(len(texts), int(width // column)))
    return ncols, -(-len(texts) // ncols)


class _Entries:
    """The entries of one legend below the panels: a line and a number per panel each.

    Legends go outside the axes, so no curve is ever hidden behind one. Each scheduler
    is listed once with its numbers in every panel, left to right (``–`` in a panel
    without it).
    """

    def __init__(self, labels: list[str], panels: int):
        self.labels, self.panels = labels, panels
        self.handles: dict[str, Line2D] = {}
        self.values: dict[str, list[str]] = {label: ["–"] * panels for label in labels}
        self.notes: dict[str, list[int]] = {label: [0] * panels for label in labels}
        self.extra: list[tuple[Line2D, str]] = []

    def add(self, label: str, panel: int, line: Line2D, value: str, note: int = 0) -> None:
        """Record ``label``'s line (its first is the legend's handle) and its numbers."""
        self.handles.setdefault(label, line)
        self.values[label][panel] = value
        self.notes[label][panel] = note

    def legend(self, fig: Figure, word: str, what: str,
               note: str | None = None) -> Legend | None:
        """Add the legend below the panels, growing the figure by its height.

        Args:
            fig: The figure (with a constrained layout), :data:`PANEL_HEIGHT` high.
            word: What the numbers are, in each entry (``"mean"``).
            what: What the numbers are, in the title (``"mean flowtime"``).
            note: What a nonzero note counts (``"below −100%"``); notes are shown only
                for entries with one.
        """
        shown = [label for label in self.labels if label in self.handles]
        if not shown:
            return None
        texts = []
        for label in shown:
            text = f"{label} ({word} {', '.join(self.values[label])}"
            if note and any(self.notes[label]):
                counts = ", ".join(str(n) for n in self.notes[label])
                text += f"; {counts} {'job' if counts == '1' else 'jobs'} {note}"
            texts.append(text + ")")
        title = f"{what} in each panel, left to right" if self.panels > 1 else what
        handles = [self.handles[label] for label in shown]
        for handle, text in self.extra:
            handles.append(handle)
            texts.append(text)
        width = fig.get_figwidth()
        ncols, rows = _legend_shape(texts, width)
        fig.set_size_inches(width, PANEL_HEIGHT + LEGEND_ROW * (rows + 1) + 0.25)
        return fig.legend(handles, texts, loc="outside lower center", ncols=ncols,
                          title=title)


def _grouped_bars(ax: Axes, comps: list[ComparisonData], values: dict[tuple[int, str], float],
                  errors: dict[tuple[int, str], float] | None,
                  styles: dict[str, SchedulerStyle]) -> None:
    """Bars of ``values[(comparison index, label)]``: a group per comparison."""
    labels = list(dict.fromkeys(label for c in comps for label in c.labels))
    width = 0.8 / max(len(labels), 1)
    for k, label in enumerate(labels):
        xs, hs, es = [], [], []
        for g in range(len(comps)):
            if (g, label) in values:
                xs.append(g - 0.4 + width * (k + 0.5))
                hs.append(values[(g, label)])
                es.append(errors.get((g, label), np.nan) if errors else np.nan)
        if not xs:
            continue
        yerr = np.nan_to_num(es) if errors else None
        ax.bar(xs, hs, width=width * 0.92, label=label, yerr=yerr,
               capsize=3 if errors else 0, error_kw={"linewidth": 0.9}, gid=f"bars:{label}",
               **styles[label].bar())
    ax.set_xticks(range(len(comps)), [c.name for c in comps])
    ax.set_xlim(-0.6, len(comps) - 0.4)
    ax.set_ylim(bottom=0)   # intervals reaching below zero are cut at it
    ax.grid(axis="y")
    ax.set_axisbelow(True)


def _bar_legend(ax: Axes, count: int) -> Legend:
    """The scheduler legend of bar figures, beside the axes (never over a bar)."""
    return ax.legend(title="scheduler", loc="upper left", bbox_to_anchor=(1.01, 1.0),
                     borderaxespad=0.0, ncols=1 if count <= 14 else 2)


def _ordered(comps: list[ComparisonData]) -> list[ComparisonData]:
    """Comparisons by load (arrival rate) when every one has it, else as given."""
    if all(c.arrival_rate is not None for c in comps):
        return sorted(comps, key=lambda c: c.arrival_rate)  # type: ignore[arg-type,return-value]
    return comps


def _bar_height(count: int) -> float:
    """Height (inches) of a bar figure whose legend beside it lists ``count`` schedulers."""
    rows = count if count <= 14 else -(-count // 2)
    return max(3.8, 0.9 + 0.19 * rows)


@styled
def mean_flowtime(comparisons: Compared | Sequence[Compared]) -> Figure:
    """Mean flowtime per scheduler with its 95% confidence interval, a group per load.

    Heights and error bars are ``summary.csv``'s ``mean_flowtime`` and ``ci95`` (003
    Fig. 4 style).

    Args:
        comparisons: One comparison per load.
    """
    comps = _ordered(_comparisons(comparisons))
    labels = list(dict.fromkeys(label for c in comps for label in c.labels))
    styles = scheduler_styles(labels)
    values, errors = {}, {}
    for g, comp in enumerate(comps):
        rows = comp.summary.set_index("label")
        for label in comp.labels:
            values[(g, label)] = float(rows.loc[label, "mean_flowtime"])
            errors[(g, label)] = float(rows.loc[label, "ci95"])
    fig = new_figure(max(3.2 + 1.3 * len(comps), 5.0), _bar_height(len(labels)))
    ax = fig.add_subplot()
    _grouped_bars(ax, comps, values, errors, styles)
    ax.set_ylabel("mean flowtime (s)")
    ax.set_xlabel("load (Poisson arrival rate)" if all(c.arrival_rate is not None
                                                       for c in comps) else "comparison")
    reps = sorted({len(c.seeds) for c in comps})
    how = "over replications" if min(reps) > 1 else "batch means of one replication"
    ax.set_title(f"Mean flowtime, 95% confidence intervals ({how})", loc="left")
    _bar_legend(ax, len(labels))
    return fig


#: Left end of the reduction axis: a job more than twice as slow as under the baseline
#: is counted, not placed.
REDUCTION_CUT = -1.0


@styled
def reduction_cdf(comparisons: Compared | Sequence[Compared],
                  baseline: str | None = None) -> Figure:
    """CDF of the per-job flowtime reduction ratio against a baseline (003 Fig. 5 style).

    Each job's ratio is ``(F_base - F) / F_base`` from replication-averaged flowtimes:
    positive when faster than under the baseline. The axis is cut at -100%: when a
    scheduler has jobs below it (more than twice as slow), a ◀ at the left edge marks
    the share of them (the CDF's height there) and the legend counts them. The legend,
    below the panels, gives each scheduler's median reduction in every panel.

    Args:
        comparisons: One panel per comparison.
        baseline: Label to compare against; default the comparison's ``--baseline``, or
            its first scheduler.

    Raises:
        GeosimError: A comparison has a single scheduler, or the baseline is unknown.
    """
    comps = _ordered(_comparisons(comparisons))
    for comp in comps:
        if len(comp.labels) < 2:
            raise GeosimError("a reduction needs at least two schedulers", source=comp.where)
    bases = [comp.baseline(baseline) for comp in comps]
    labels = list(dict.fromkeys(label for comp, base in zip(comps, bases, strict=True)
                                for label in comp.labels if label != base))
    styles = scheduler_styles(label for c in comps for label in c.labels)
    fig = new_figure(min(3.9 * len(comps) + 1.2, 14.0), PANEL_HEIGHT)
    axes = np.atleast_1d(fig.subplots(1, len(comps), sharey=True, squeeze=False)[0])
    entries = _Entries(labels, len(comps))
    clipped_any = False
    for p, (ax, comp, base) in enumerate(zip(axes, comps, bases, strict=True)):
        table = comp.reductions(base)
        lowest = 0.0
        clipped: list[tuple[str, float]] = []
        for label in comp.labels:
            if label == base:
                continue
            ratio = table.loc[table["label"] == label, "reduction"].dropna().to_numpy()
            if not len(ratio):
                continue
            x, y = _cdf(ratio)
            lowest = min(lowest, float(x.min()))
            below = int((ratio < REDUCTION_CUT).sum())
            line, = ax.plot(x, y, drawstyle="steps-post", linewidth=1.5, label=label,
                            **styles[label].line())
            entries.add(label, p, line, _signed_percent(float(np.median(ratio))), below)
            if below:
                clipped.append((label, below / len(ratio)))
        left = REDUCTION_CUT - 0.06 if clipped else lowest - 0.02
        for label, share in clipped:
            ax.plot([left], [share], linestyle="", marker="<", markersize=7,
                    color=styles[label].color, markeredgecolor="black",
                    markeredgewidth=0.5, clip_on=False, zorder=4, gid=f"clipped:{label}")
        clipped_any = clipped_any or bool(clipped)
        ax.axvline(0, color="#444444", linewidth=0.8, linestyle="--")
        ax.set_xlim(left, 1.0)
        ax.xaxis.set_major_formatter(PercentFormatter(1.0))
        ax.set_xlabel(f"flowtime reduction against {base}: (F_{base} − F) / F_{base}")
        ax.set_title(comp.name, loc="left")
        ax.grid(True)
    if clipped_any:
        entries.extra.append((Line2D([], [], linestyle="", marker="<", markersize=7,
                                     color="#BBBBBB", markeredgecolor="black",
                                     markeredgewidth=0.5),
                              "◀ at the left edge: share of jobs below −100% (axis cut)"))
    axes[0].set_ylabel("fraction of jobs (CDF)")
    axes[0].yaxis.set_major_formatter(PercentFormatter(1.0))
    axes[0].set_ylim(0, 1.01)
    entries.legend(fig, "median", "median reduction", note="below −100%")
    return fig


@styled
def copies_and_waste(comparisons: Compared | Sequence[Compared]) -> Figure:
    """Copies launched per task and wasted slot-seconds per run, per scheduler and load.

    Wasted slot-seconds are slot time of copies whose work did not survive (lost to a
    sibling, killed, failed in an outage), as a mean per run with its 95% confidence
    interval over the replications.

    Args:
        comparisons: One group per comparison.
    """
    comps = _ordered(_comparisons(comparisons))
    labels = list(dict.fromkeys(label for c in comps for label in c.labels))
    styles = scheduler_styles(labels)
    copies, waste, waste_ci = {}, {}, {}
    for g, comp in enumerate(comps):
        rows = comp.summary.set_index("label")
        for label in comp.labels:
            copies[(g, label)] = float(rows.loc[label, "copies_per_task"])
            mine = comp.runs.loc[comp.runs["label"] == label, "wasted_slot_seconds"]
            waste[(g, label)] = float(mine.mean())
            waste_ci[(g, label)] = t_halfwidth(mine.to_numpy())
    fig = new_figure(max(2 * (2.2 + 1.1 * len(comps)), 7.0), max(_bar_height(len(labels)) - 0.2,
                                                                 3.6))
    left, right = fig.subplots(1, 2)
    _grouped_bars(left, comps, copies, None, styles)
    left.axhline(1, color="#444444", linewidth=0.8, linestyle="--")
    left.set_ylabel("copies launched per task")
    left.set_title("(a) copies per task", loc="left")
    _grouped_bars(right, comps, waste, waste_ci, styles)
    right.set_ylabel("wasted slot-seconds per run")
    right.set_title("(b) wasted work", loc="left")
    right.yaxis.set_major_formatter(_thousands)
    _bar_legend(right, len(labels))
    return fig


def _signed_percent(ratio: float) -> str:
    value = int(round(100 * ratio))
    return f"{value:+d}%" if value else "0%"


def _thousands(value: float, _pos: int) -> str:
    return f"{value:,.0f}"


@styled
def paired_change(comparisons: Compared | Sequence[Compared]) -> Figure:
    """Each scheduler's paired change of the mean flowtime against the baseline, ±95%.

    A point per scheduler at ``summary.csv``'s ``paired_diff`` with whiskers of
    ``paired_ci95`` (the change taken job by job under common random numbers, the
    interval by batch means), a group per comparison (load), a line at 0. A filled point
    is decided (its interval excludes 0), an open one is not. Comparisons made without a
    baseline are left out.

    Args:
        comparisons: One group per comparison.

    Raises:
        GeosimError: No comparison has a baseline.
    """
    comps = [c for c in _ordered(_comparisons(comparisons))
             if c.own_baseline is not None and "paired_diff" in c.summary]
    if not comps:
        raise GeosimError("no comparison has a baseline, so there is no paired change to "
                          "draw (compare with --baseline)")
    labels = list(dict.fromkeys(label for c in comps for label in c.labels
                                if label != c.own_baseline))
    styles = scheduler_styles(label for c in comps for label in c.labels)
    rows = sum(len(c.labels) - 1 for c in comps)
    fig = new_figure(7.4, max(2.6, 1.3 + 0.26 * rows + 0.25 * len(comps)))
    ax = fig.add_subplot()
    y, ticks, names, shown = 0.0, [], [], set()
    for comp in comps:
        summary = comp.summary.set_index("label")
        mine = [label for label in comp.labels if label != comp.own_baseline]
        ticks.append(y + (len(mine) - 1) / 2)
        names.append(f"{comp.name}\nvs {comp.own_baseline}")
        for label in mine:
            diff, half = (float(summary.loc[label, k]) for k in ("paired_diff", "paired_ci95"))
            decided = decision(diff, half) != "undecided"
            color = styles[label].color
            ax.errorbar([diff], [y], xerr=half if np.isfinite(half) else None,
                        fmt=styles[label].marker or "o", color=color, capsize=3,
                        markersize=6, markeredgecolor=color,
                        markerfacecolor=color if decided else "white",
                        label=label if label not in shown else "_" + label,
                        gid=f"paired:{comp.name}:{label}")
            shown.add(label)
            y += 1
        y += 0.6
        if comp is not comps[-1]:
            ax.axhline(y - 0.8, color="#E0E0E0", linewidth=0.6)
    ax.axvline(0, color="#444444", linewidth=0.8, linestyle="--")
    ax.set_yticks(ticks, names)
    ax.tick_params(axis="y", length=0)
    ax.set_ylim(y - 0.4, -0.6)
    ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.set_xlabel("change of the mean flowtime against the baseline, job by job "
                  "(negative: faster)")
    ax.grid(axis="x")
    ax.set_axisbelow(True)
    ax.set_title("Paired change of the mean flowtime, 95% intervals (batch means)", loc="left")
    handles = [h for h in ax.get_legend_handles_labels()[0]]
    handles.append(Line2D([], [], linestyle="", marker="o", color="#777777",
                          markerfacecolor="white", label="open: undecided (interval holds 0)"))
    ax.legend(handles=handles, title="scheduler", loc="upper left", bbox_to_anchor=(1.01, 1.0),
              borderaxespad=0.0, ncols=1 if len(labels) <= 14 else 2)
    return fig


#: Size (inches) of a cell of the sweep map.
CELL_WIDTH, CELL_HEIGHT = 2.05, 1.05


@styled
def sweep_map(sweep: Swept) -> Figure:
    """The load-regime map of a sweep: in each cell, who is best and by how much.

    With a focus, each cell is coloured by the focus's paired change of the mean flowtime
    against the best of the schedulers it is set against (blue: faster, red: slower,
    grey and hatched: undecided, the 95% interval contains 0) and annotated with the
    change and its interval, that scheduler, the best scheduler of all (``?`` when the
    runner-up's interval against it contains 0) and the slot utilisation of the focus's
    runs. Without a focus each cell takes the best scheduler's colour (hatched when
    undecided against the runner-up). The first varied key runs along x, the second
    along y, the third (if any) gives one panel per value.

    Args:
        sweep: The sweep.
    """
    sweep = as_sweep(sweep)
    keys, values, table = sweep.keys, sweep.values, sweep.table
    nx = len(values[keys[0]])
    ny = len(values[keys[1]]) if len(keys) > 1 else 1
    panels = values[keys[2]] if len(keys) > 2 else [None]
    fig = new_figure(CELL_WIDTH * nx * len(panels) + 2.2, CELL_HEIGHT * ny + 1.7)
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    finite = table["focus_diff"].abs().dropna() if sweep.focus else []
    reach = max(float(np.max(finite)) if len(finite) else 0.0, 0.05)
    norm, cmap = Normalize(-reach, reach), change_cmap()
    colors = scheduler_colors(sweep.labels)
    for row in table.to_dict("records"):
        p = panels.index(row[keys[2]]) if len(keys) > 2 else 0
        x = values[keys[0]].index(row[keys[0]])
        y = values[keys[1]].index(row[keys[1]]) if len(keys) > 1 else 0
        if sweep.focus:
            decided = row["verdict"] in ("faster", "slower")
            face = cmap(norm(row["focus_diff"])) if decided else UNDECIDED_COLOR
            lines = [_span(row["focus_diff"], row["focus_ci95"]),
                     f"vs {row['versus_best']}",
                     f"best: {row['best']}{'' if row['decided'] else '?'}",
                     f"util {_percent(row['focus_utilisation'])}"]
        else:
            decided = bool(row["decided"])
            face = colors[row["best"]]
            lines = [f"best: {row['best']}{'' if decided else '?'}",
                     f"runner-up {row['runner_up']}:",
                     _span(row["runner_up_diff"], row["runner_up_ci95"]),
                     f"util {_percent(row['utilisation'])}"]
        ax = axes[p]
        ax.add_patch(Rectangle((x, y), 1, 1, facecolor=face, edgecolor="white", linewidth=2,
                               hatch=None if decided else UNDECIDED_HATCH,
                               gid=f"cell:{row['cell']}"))
        plain = bool(sweep.focus) and decided   # the colour is the number: no box
        ax.text(x + 0.5, y + 0.5, "\n".join(lines), ha="center", va="center", fontsize=7,
                color="white" if plain and _dark(face) else "black", linespacing=1.3,
                gid=f"text:{row['cell']}", bbox=None if plain else {
                    "facecolor": "white", "alpha": 0.75, "linewidth": 0, "pad": 1.0})
    for p, ax in enumerate(axes):
        ax.set_xlim(0, nx)
        ax.set_ylim(0, ny)
        ax.set_xticks(np.arange(nx) + 0.5, [show_value(v) for v in values[keys[0]]])
        ax.set_xlabel(keys[0])
        ax.tick_params(length=0)
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        if len(keys) > 2:
            ax.set_title(f"{keys[2]} = {show_value(panels[p])}", loc="left")
    if len(keys) > 1:
        axes[0].set_yticks(np.arange(ny) + 0.5, [show_value(v) for v in values[keys[1]]])
        axes[0].set_ylabel(keys[1])
    else:
        axes[0].set_yticks([])
    seeds = f"{len(sweep.seeds)} seed{'s' if len(sweep.seeds) > 1 else ''}"
    if sweep.focus:
        bar = fig.colorbar(ScalarMappable(norm, cmap), ax=list(axes), pad=0.02, aspect=15,
                           format=PercentFormatter(1.0, decimals=0))
        bar.set_label(f"{sweep.focus}: paired change of the mean\n← faster · slower →")
        title = (f"{sweep.focus} against the best of {', '.join(sweep.versus)}\n"
                 f"(the lowest mean flowtime in each cell), 95% intervals, {seeds}")
    else:
        title = f"Best scheduler by mean flowtime, {seeds}"
    fig.suptitle(title, x=0.01, ha="left", fontweight="bold", fontsize=9)
    fig.legend(handles=[Patch(facecolor=UNDECIDED_COLOR if sweep.focus else "white",
                              edgecolor="#777777", hatch=UNDECIDED_HATCH,
                              label="undecided: the 95% interval contains 0"),
                        Line2D([], [], linestyle="", label="?: best not decided against "
                               "the runner-up; util: slot utilisation" +
                               (" of the focus's runs" if sweep.focus else ""))],
               loc="outside lower center", ncols=1)
    return fig


def _span(diff: float, half: float) -> str:
    """A paired change and its interval: ``−12.3% [−20.1, −4.5]``."""
    if not np.isfinite(diff):
        return "no change known"
    if not np.isfinite(half):
        return f"{100 * diff:+.1f}%"
    return f"{100 * diff:+.1f}% [{100 * (diff - half):+.1f}, {100 * (diff + half):+.1f}]"


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%" if np.isfinite(value) else "–"


def _dark(color: object) -> bool:
    """Whether text on ``color`` reads better in white (relative luminance below 0.4)."""
    r, g, b = to_rgba(color)[:3]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.4
