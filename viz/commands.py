"""``geosim plot`` and ``geosim animate``, added through the ``geosim.commands`` entry points.

This module is imported by every ``geosim`` invocation, so it imports matplotlib and the
figure modules only when one of its commands runs.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from geosim.errors import GeosimError

#: Figure file formats of ``geosim plot``.
FIGURE_FORMATS = ("png", "pdf", "svg")


def add_plot_parser(subparsers: argparse._SubParsersAction) -> None:
    """Add ``geosim plot`` to the ``geosim`` command line."""
    plot = subparsers.add_parser(
        "plot", help="draw figures from saved run, comparison or sweep results",
        description="Draw figures from the tables a run (geosim run), a comparison "
        "(geosim compare) or a sweep (geosim sweep) saved, without running again. A run "
        "directory gives cluster states over time, a topology map, WAN traffic, the "
        "flowtime CDF and a Gantt view of one job; a comparison directory adds mean "
        "flowtime with confidence intervals, the paired change against the baseline, "
        "flowtime and reduction CDFs, copies per task and wasted work, and the run figures "
        "of each scheduler at one seed. Several comparison directories (e.g. one per "
        "load) are drawn side by side in the comparison figures. A sweep directory gives "
        "its map.")
    plot.add_argument("dirs", nargs="+", metavar="RESULTS_DIR",
                      help="a run, comparison or sweep directory (several: figures combine "
                      "them)")
    plot.add_argument("--out", metavar="DIR",
                      help="where to write the figures (default: RESULTS_DIR/figures)")
    plot.add_argument("--format", default="png", metavar="FMT",
                      help="png, pdf or svg (default: png)")
    plot.add_argument("--time", type=float, metavar="SECONDS",
                      help="time of the topology map (default: the middle of the run)")
    plot.add_argument("--job", type=int, metavar="ID",
                      help="job of the Gantt view (default: the finished job with the "
                      "largest flowtime among those with at most 60 copies)")
    plot.add_argument("--color-by", default="state", metavar="WHAT",
                      help="fill the map's clusters by state or utilisation (default: state)")
    plot.add_argument("--baseline", metavar="LABEL", help="scheduler the reduction ratios "
                      "refer to (default: the comparison's --baseline, else its first)")
    plot.add_argument("--scheduler", metavar="LABEL", help="comparison: draw the run "
                      "figures of this scheduler only (default: every scheduler)")
    plot.add_argument("--seed", type=int, help="comparison: the seed of the run figures "
                                               "(default: the first)")
    plot.add_argument("--no-run-figures", action="store_true",
                      help="comparison: draw the comparison figures only")
    plot.add_argument("--linear", action="store_true",
                      help="linear flowtime axis in the CDF (default: logarithmic)")
    plot.add_argument("--dpi", type=float, default=150, help="resolution of PNG figures "
                                                             "(default: 150)")
    plot.set_defaults(handler=plot_command)


def add_animate_parser(subparsers: argparse._SubParsersAction) -> None:
    """Add ``geosim animate`` to the ``geosim`` command line."""
    anim = subparsers.add_parser(
        "animate", help="render the topology map over time as a GIF or MP4",
        description="Render a saved run's topology map over time: clusters filled by slot "
        "utilisation and outlined by state, links coloured by the traffic they carry, "
        "with a clock and a timeline. .gif is written with Pillow; .mp4 needs ffmpeg on "
        "PATH (without it: an error, write a .gif instead).")
    anim.add_argument("dir", metavar="RESULTS_DIR", help="a run or comparison directory")
    anim.add_argument("--out", required=True, metavar="FILE", help="run.gif or run.mp4")
    length = anim.add_mutually_exclusive_group()
    length.add_argument("--seconds", type=float, help="length of the video (default: 10)")
    length.add_argument("--frames", type=int, help="number of frames (default: seconds × fps)")
    anim.add_argument("--fps", type=float, default=10.0, help="frames per second (default: 10)")
    anim.add_argument("--start", type=float, metavar="SECONDS",
                      help="first simulated time shown (default: the start of the run)")
    anim.add_argument("--end", type=float, metavar="SECONDS",
                      help="last simulated time shown (default: the end of the run)")
    anim.add_argument("--color-by", default="utilisation", metavar="WHAT",
                      help="fill clusters by utilisation or state (default: utilisation)")
    anim.add_argument("--scheduler", metavar="LABEL",
                      help="comparison: the scheduler's run (default: the first)")
    anim.add_argument("--seed", type=int, help="comparison: the run's seed (default: the first)")
    anim.add_argument("--dpi", type=float, default=100, help="resolution (default: 100)")
    anim.set_defaults(handler=animate_command)


# ---------------------------------------------------------------------------- plot
Job = tuple[str, Callable[[], object]]


def _stem(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+=-]+", "_", text.replace("]", "")).strip("._") or "run"


def _run_jobs(run, prefix: str, args: argparse.Namespace, cdf: bool) -> list[Job]:
    """Figures of one run, checked now (time, job) and drawn later.

    A run without time series (``run.record_interval = 0``) has no figures over time
    unless ``--time`` asks for one (an error naming the run).
    """
    from viz import figures
    jobs: list[Job] = []
    if not run.result.clusters.empty or args.time is not None:
        when = run.check_time(args.time)
        jobs += [
            (f"{prefix}cluster-states", lambda: figures.cluster_states(run)),
            (f"{prefix}topology-map", lambda: figures.topology_map(run, when, args.color_by)),
            (f"{prefix}wan-traffic", lambda: figures.wan_traffic(run)),
        ]
    job = run.check_job(args.job)
    jobs.append((f"{prefix}gantt-job-{job}", lambda: figures.gantt(run, job)))
    if cdf:
        jobs.append((f"{prefix}flowtime-cdf",
                     lambda: figures.flowtime_cdf(run, log_x=not args.linear)))
    return jobs


def _plan(args: argparse.Namespace) -> list[Job]:
    """Every figure to draw, with all input checked before anything is drawn."""
    from geosim.experiment import Sweep
    from viz import figures
    from viz.data import ComparisonData, RunData, open_results
    from viz.topomap import COLOR_BY

    if args.color_by not in COLOR_BY:
        raise GeosimError(f"unknown colouring {args.color_by!r} (state or utilisation)",
                          source="--color-by")
    sources = [open_results(d) for d in args.dirs]
    runs = [s for s in sources if isinstance(s, RunData)]
    comps = [s for s in sources if isinstance(s, ComparisonData)]
    sweeps = [s for s in sources if isinstance(s, Sweep)]
    jobs: list[Job] = []
    for k, swept in enumerate(sweeps):
        prefix = f"{k + 1}-{_stem(swept.out.name)}-" if len(sources) > 1 and swept.out \
            else ""
        jobs.append((f"{prefix}sweep-map", lambda swept=swept: figures.sweep_map(swept)))
    names = [_stem(r.path.name if r.path else r.name) for r in runs]
    if len(set(names)) < len(names):
        names = [f"{i + 1}-{n}" for i, n in enumerate(names)]
    for run, name in zip(runs, names, strict=True):
        prefix = f"{name}-" if len(runs) > 1 or comps else ""
        jobs += _run_jobs(run, prefix, args, cdf=len(runs) == 1 and not comps)
    linear = args.linear
    if len(runs) > 1 or comps:
        jobs.append(("flowtime-cdf", lambda: figures.flowtime_cdf([*runs, *comps],
                                                                  log_x=not linear)))
    if comps:
        for comp in comps:
            if args.baseline is not None:
                comp.baseline(args.baseline)
        jobs.append(("mean-flowtime", lambda: figures.mean_flowtime(comps)))
        paired = [c for c in comps if c.own_baseline is not None and "paired_diff" in c.summary]
        if paired:
            jobs.append(("paired-change", lambda: figures.paired_change(paired)))
        if all(len(c.labels) >= 2 for c in comps):
            jobs.append(("reduction-cdf",
                         lambda: figures.reduction_cdf(comps, baseline=args.baseline)))
        jobs.append(("copies-and-waste", lambda: figures.copies_and_waste(comps)))
    if len(comps) == 1 and not runs and not args.no_run_figures:
        comp = comps[0]
        labels = comp.labels
        if args.scheduler is not None:
            if args.scheduler not in labels:
                raise GeosimError(f"no scheduler {args.scheduler!r} in the comparison "
                                  f"({', '.join(labels)})", source=comp.where)
            labels = [args.scheduler]
        seed = comp.seeds[0] if args.seed is None else args.seed
        for label in labels:
            run = comp.load_run(label, seed)
            jobs += _run_jobs(run, f"{_stem(label)}-seed-{seed}-", args, cdf=False)
    elif args.scheduler is not None or args.seed is not None:
        raise GeosimError("--scheduler and --seed choose the runs of one comparison "
                          "directory", source="--scheduler" if args.scheduler else "--seed")
    return jobs


def plot_command(args: argparse.Namespace) -> int:
    """Draw the figures of ``geosim plot``; all or none are written."""
    fmt = args.format.lower().lstrip(".")
    if fmt not in FIGURE_FORMATS:
        raise GeosimError(f"unknown figure format {args.format!r} (png, pdf or svg)",
                          source="--format")
    if not args.dpi > 0:
        raise GeosimError(f"must be > 0 (got {args.dpi:g})", source="--dpi")
    out = Path(args.out) if args.out else Path(args.dirs[0]) / "figures"
    if out.exists() and not out.is_dir():
        raise GeosimError("exists and is not a directory", source=str(out))
    jobs = _plan(args)
    tmp = Path(tempfile.mkdtemp(prefix="geosim-plot-"))
    try:
        files = []
        for name, draw in jobs:
            fig = draw()
            fig.savefig(tmp / f"{name}.{fmt}", dpi=args.dpi,   # type: ignore[attr-defined]
                        bbox_inches="tight", pad_inches=0.08)
            files.append(f"{name}.{fmt}")
        out.mkdir(parents=True, exist_ok=True)
        for name in files:
            shutil.move(str(tmp / name), str(out / name))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for name in files:
        print(out / name)
    return 0


# ---------------------------------------------------------------------------- animate
def animate_command(args: argparse.Namespace) -> int:
    """Render the animation of ``geosim animate``."""
    from viz.animation import animate, check_output, frame_count
    from viz.data import ComparisonData, RunData, open_results
    from viz.topomap import COLOR_BY

    check_output(args.out)
    frame_count(args.frames, args.seconds, args.fps)
    if args.color_by not in COLOR_BY:
        raise GeosimError(f"unknown colouring {args.color_by!r} (utilisation or state)",
                          source="--color-by")
    if not args.dpi > 0:
        raise GeosimError(f"must be > 0 (got {args.dpi:g})", source="--dpi")
    source = open_results(args.dir)
    if not isinstance(source, ComparisonData | RunData):
        raise GeosimError("a sweep directory holds many runs: animate a run of one of its "
                          "cells (its comparison directory cell-<i>)", source=args.dir)
    if isinstance(source, ComparisonData):
        label = args.scheduler or source.labels[0]
        seed = source.seeds[0] if args.seed is None else args.seed
        if label not in source.labels:
            raise GeosimError(f"no scheduler {label!r} in the comparison "
                              f"({', '.join(source.labels)})", source=source.where)
        run = source.load_run(label, seed)
        print(f"animating {label}, seed {seed}", file=sys.stderr)
    else:
        if args.scheduler is not None or args.seed is not None:
            raise GeosimError("--scheduler and --seed choose a run of a comparison "
                              "directory", source=args.dir)
        run = source
    path = animate(run, args.out, frames=args.frames, seconds=args.seconds, fps=args.fps,
                   color_by=args.color_by, start=args.start, end=args.end, dpi=args.dpi)
    print(path)
    return 0
