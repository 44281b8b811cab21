"""Command line: ``geosim run | compare | sweep | validate | schedulers | compile``, plus plugins.

Other packages add subcommands through the ``geosim.commands`` entry-point group: each
entry point names a callable ``add_parser(subparsers)`` that adds one subparser and sets
its ``handler`` default to a function of the parsed arguments returning the exit status.
This is how ``viz`` adds ``plot``, ``animate`` and ``dashboard`` without ``geosim``
importing it.

Bad input (a malformed scenario, an unknown scheduler, a value out of range, a bad
topology file) prints one line ``geosim: error: ...`` naming the file, key and value,
and exits with status 2, without a traceback and without writing any output.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from geosim.errors import GeosimError, os_error

if TYPE_CHECKING:
    from geosim.scenario import Scenario

#: geosim's own commands: naming one, the plugins' entry points are not loaded.
COMMANDS = ("run", "compare", "sweep", "validate", "schedulers", "compile")


def _parser(plugins: bool = True) -> argparse.ArgumentParser:
    """The command line's parser, with the plugins' subcommands unless ``plugins`` is off."""
    parser = argparse.ArgumentParser(
        prog="geosim", description="Simulate scheduling on geo-distributed edge clusters.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one simulation and write its result tables")
    run.add_argument("scenario", help="scenario TOML file")
    run.add_argument("--scheduler", help="scheduler name, or NAME[KEY=VALUE,...] with "
                     "parameters, e.g. 'laps+r[beta=0.6]' (default: the scenario's)")
    run.add_argument("--seed", type=int, help="seed (default: the scenario's run.seed)")
    run.add_argument("--out", default=None,
                     help="output directory (default: results/run-<run.name>-<scheduler>)")
    run.add_argument("--format", choices=("parquet", "csv"), default="parquet",
                     help="table format (default: parquet)")
    run.add_argument("--set", dest="overrides", action="append", default=[],
                     metavar="KEY=VALUE", help="override a scenario key, e.g. "
                     "workload.arrival_rate=0.07 (repeatable)")
    run.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    _compare_parser(sub)
    _sweep_parser(sub)
    val = sub.add_parser("validate", help="check a scenario without running it")
    val.add_argument("scenario")
    val.add_argument("--set", dest="overrides", action="append", default=[],
                     metavar="KEY=VALUE")
    sub.add_parser("schedulers", help="list the registered schedulers")
    comp = sub.add_parser("compile", help="compile the simulation kernels into Numba's "
                          "cache now, so that the first run does not wait for them")
    comp.add_argument("--jobs-parallel", type=int, default=None, metavar="K",
                      help="worker processes (default: every core)")
    if plugins:
        _add_plugins(sub)
    return parser


def _add_plugins(sub: argparse._SubParsersAction) -> None:
    """Add the subcommands of the ``geosim.commands`` entry points, sorted by name."""
    from importlib.metadata import entry_points
    for ep in sorted(entry_points(group="geosim.commands"), key=lambda e: e.name):
        try:
            add_parser = ep.load()
        except ImportError as exc:
            reason = f"the {ep.name!r} command is unavailable: {exc}"

            def unavailable(_args: argparse.Namespace, reason: str = reason) -> int:
                raise GeosimError(reason)

            # Still a command, so using it says why it cannot run instead of "invalid choice".
            missing = sub.add_parser(ep.name, help=f"(unavailable: {exc})", add_help=False)
            missing.add_argument("rest", nargs=argparse.REMAINDER)
            missing.set_defaults(handler=unavailable)
            continue
        add_parser(sub)


def _replication_options(parser: argparse.ArgumentParser, what: str) -> None:
    """``--reps``, ``--seeds`` and ``--jobs-parallel`` of ``compare`` and ``sweep``."""
    parser.add_argument("--reps", type=int, metavar="N",
                        help=f"{what}, with seeds run.seed + 0..N-1 (default: 1)")
    parser.add_argument("--seeds", metavar="LIST", help="explicit seeds, e.g. 1,2,3")
    parser.add_argument("--jobs-parallel", type=int, metavar="K",
                        help="worker processes (default: the number of CPUs)")


def _execution_options(parser: argparse.ArgumentParser) -> None:
    """``--format``, ``--dask`` and ``--no-progress`` of ``compare`` and ``sweep``."""
    parser.add_argument("--format", choices=("parquet", "csv"), default="parquet",
                        help="table format of the saved runs (default: parquet)")
    parser.add_argument("--dask", metavar="ADDRESS", help="run on an existing Dask "
                        "cluster, e.g. tcp://host:8786 (needs geosim[dask])")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress (a "
                        "bar on a terminal, one line per finished run otherwise)")


def _compare_parser(sub: argparse._SubParsersAction) -> None:
    cmp = sub.add_parser(
        "compare", help="run several schedulers on the same worlds and compare them",
        description="Run every scheduler with every seed (replication i of every scheduler "
        "sees the same world and jobs), save each run under DIR/runs/, and print and write "
        "a summary table (DIR/summary.csv). Rerunning with the same DIR resumes: finished "
        "runs are loaded, not run again.")
    cmp.add_argument("scenario", nargs="+", help="scenario TOML file(s); with several "
                     "(e.g. one per load), each is compared in turn into its own directory")
    cmp.add_argument("--schedulers", required=True, metavar="SPECS",
                     help="comma-separated schedulers, each NAME or NAME[KEY=VALUE,...], "
                     "e.g. fifo,srpt,fair[multitasking=true]")
    _replication_options(cmp, "replications")
    cmp.add_argument("--out", metavar="DIR",
                     help="comparison directory (default: results/compare-<run.name>; with "
                     "several scenarios, DIR/<run.name> for each)")
    cmp.add_argument("--baseline", metavar="NAME", help="scheduler (one of --schedulers) "
                     "to report per-job flowtime reductions against")
    cmp.add_argument("--within", default="40,200,800", metavar="LIST",
                     help="flowtime thresholds (s): report the share of jobs finishing "
                     "within each (default: 40,200,800)")
    cmp.add_argument("--set", dest="overrides", action="append", default=[],
                     metavar="KEY=VALUE", help="override a scenario key (repeatable)")
    _execution_options(cmp)
    cmp.add_argument("--restart", action="store_true", help="if DIR holds a comparison "
                     "written by other geosim code or of another scenario, remove it and "
                     "start afresh (default: refuse)")


def _compare(args: argparse.Namespace) -> int:
    from geosim.experiment import compare, safe_name
    scenarios = [_load(args, path) for path in args.scenario]
    names = [safe_name(sc["run"]["name"]) for sc in scenarios]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise GeosimError(f"scenarios {args.scenario[names.index(name)]} and "
                              f"{args.scenario[i]} share run.name {name!r}; give each its own",
                              source="compare")
    for scenario, name in zip(scenarios, names, strict=True):
        if len(scenarios) == 1:
            out = args.out or f"results/compare-{name}"
        else:
            out = f"{args.out}/{name}" if args.out else f"results/compare-{name}"
            print(f"== {name} ({scenario.source})")
        comparison = compare(
            scenario, args.schedulers, seeds=args.seeds, reps=args.reps,
            jobs_parallel=args.jobs_parallel, out=out, baseline=args.baseline,
            within=args.within, fmt=args.format, dask=args.dask,
            progress=not args.no_progress and ("bar" if sys.stderr.isatty() else "lines"),
            restart=args.restart)
        for line in comparison.redone:
            print(f"geosim: damaged saved run made again: {line}", file=sys.stderr)
        print(comparison.format())
        print(f"results written to {comparison.out}/")
    return 0


def _sweep_parser(sub: argparse._SubParsersAction) -> None:
    swp = sub.add_parser(
        "sweep", help="compare schedulers in every cell of a grid of scenario values",
        description="Compare the schedulers (as geosim compare does) in every cell of the "
        "grid that --vary spans, each cell into DIR/cell-<i>, and print one row per cell: "
        "the best scheduler and, with --focus, the focus's paired change of the mean "
        "flowtime against the best of --versus. The table is written to DIR/sweep.csv; "
        "geosim plot DIR draws the map. Rerunning with the same DIR resumes.")
    swp.add_argument("scenario", help="base scenario TOML file")
    swp.add_argument("--schedulers", required=True, metavar="SPECS",
                     help="comma-separated schedulers, each NAME or NAME[KEY=VALUE,...]")
    swp.add_argument("--vary", action="append", required=True, metavar="KEY=V1,V2,...",
                     help="a scenario key and its values, e.g. workload.arrival_rate="
                     "0.02,0.07,0.15 (values as for --set; 1 to 3 keys, repeat --vary)")
    swp.add_argument("--focus", metavar="LABEL", help="scheduler to set against --versus "
                     "in every cell")
    swp.add_argument("--versus", metavar="LABELS", help="comma-separated schedulers the "
                     "focus meets (the best of them by mean; default: every other one)")
    _replication_options(swp, "replications per cell")
    swp.add_argument("--out", metavar="DIR",
                     help="sweep directory (default: results/sweep-<run.name>)")
    swp.add_argument("--within", default="40,200,800", metavar="LIST",
                     help="flowtime thresholds (s) of the focus's shares of jobs within "
                     "them (default: 40,200,800)")
    swp.add_argument("--set", dest="overrides", action="append", default=[],
                     metavar="KEY=VALUE", help="override a key of the base scenario "
                     "(repeatable)")
    _execution_options(swp)
    swp.add_argument("--restart", action="store_true", help="if DIR holds another sweep "
                     "(grid, schedulers, seeds, scenario or code), remove it and start "
                     "afresh (default: refuse)")
    swp.set_defaults(handler=_sweep)


def _parse_vary(items: Sequence[str]) -> dict[str, list]:
    """``--vary KEY=V1,V2`` options as keys to typed values (commas inside brackets kept)."""
    from geosim.scenario import parse_override
    from geosim.schedulers.spec import split_top
    vary: dict[str, list] = {}
    for item in items:
        if "=" not in item:
            raise GeosimError(f"expected KEY=V1,V2,..., got {item!r}", source="--vary")
        key, text = (part.strip() for part in item.split("=", 1))
        parts = [p.strip() for p in split_top(text, "--vary")]
        if not all(parts):
            raise GeosimError(f"{key}: empty value in {text!r}", source="--vary")
        if key in vary:
            raise GeosimError(f"{key} is varied twice", source="--vary")
        vary[key] = [parse_override(f"{key}={p}", "--vary")[1] for p in parts]
    return vary


def _sweep(args: argparse.Namespace) -> int:
    from geosim.experiment import safe_name, sweep
    scenario = _load(args)
    result = sweep(
        scenario, args.schedulers, _parse_vary(args.vary), focus=args.focus,
        versus=args.versus, seeds=args.seeds, reps=args.reps,
        jobs_parallel=args.jobs_parallel,
        out=args.out or f"results/sweep-{safe_name(scenario['run']['name'])}",
        within=args.within, fmt=args.format, dask=args.dask,
        progress=not args.no_progress and ("bar" if sys.stderr.isatty() else "lines"),
        restart=args.restart)
    print(result.format())
    print(f"results written to {result.out}/")
    return 0


def _load(args: argparse.Namespace, path: str | None = None):
    from geosim.scenario import load_scenario, parse_override
    overrides = dict(parse_override(o) for o in args.overrides)
    return load_scenario(args.scenario if path is None else path, overrides)


def _format_summary(summary: dict) -> str:
    rows = [
        ("scheduler", summary["scheduler"]), ("seed", summary["seed"]),
        ("jobs done", f"{summary['jobs_done']} / {summary['jobs']}"),
        ("flowtime mean (s)", f"{summary['mean_flowtime']:.2f}"),
        ("flowtime p50 / p95 / p99 (s)", f"{summary['p50_flowtime']:.2f} / "
         f"{summary['p95_flowtime']:.2f} / {summary['p99_flowtime']:.2f}"),
        ("simulated time (s)", f"{summary['simulated_seconds']:.0f}"),
        ("slot utilisation", f"{100 * summary['slot_utilisation']:.1f}%"),
        ("WAN traffic (MB)", f"{summary['wan_mb']:.1f}"),
        ("copies launched / killed", f"{summary['copies_launched']} / "
         f"{summary['copies_killed']} ({summary['copies_failed']} by outages)"),
        ("wasted slot-seconds", f"{summary['wasted_slot_seconds']:.1f}"),
        ("wall time (s)", f"{summary['wall_seconds']:.2f}"),
    ]
    if summary.get("data_moved_mb") or summary.get("data_moves_abandoned"):
        rows.insert(7, ("raw input moved before arrival (MB)",
                        f"{summary['data_moved_mb']:.1f} ({summary['data_moves_abandoned']} "
                        "moves abandoned)"))
    weighted = summary.get("weighted_mean_flowtime")
    if weighted is not None and weighted == weighted \
            and abs(weighted - summary["mean_flowtime"]) > 1e-9:
        rows.insert(4, ("weighted flowtime mean (s)", f"{weighted:.2f}"))
    flows = [(key, f"{value:.4g}") for key, value in summary.items() if key.startswith("flow ")]
    if flows:
        rows += [("flow costs (004 Tables 1-2)", "in time units of workload.flow_time_unit"),
                 *flows]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _validate(scenario: Scenario) -> int:
    """``geosim validate``: build the run's inputs and print their size and estimate."""
    from geosim import heap
    with heap.importing():
        from geosim.footprint import describe_run
        from geosim.inputs import build_inputs
        from geosim.schedulers.build import build_scheduler
    with heap.long_lived():
        policy = build_scheduler(scenario, None)
        inputs = build_inputs(scenario)
        world, workload = inputs.world, inputs.workload
        print(f"{scenario.source}: ok ({world.n_clusters} clusters, {world.n_slots} slots, "
              f"{workload.n_jobs} jobs, {workload.n_tasks} tasks, scheduler {policy.name})")
        print(describe_run(scenario, world, workload, inputs.footprint))
    return 0


def _run(args: argparse.Namespace, scenario: Scenario) -> int:
    """``geosim run``: run the scenario, save its tables and print its summary."""
    from geosim import heap
    with heap.importing():
        from geosim.model import GeoModel
        from geosim.results import check_output_dir
    with heap.long_lived():
        model = GeoModel(scenario, args.scheduler, args.seed)
        out = args.out or f"results/run-{scenario['run']['name']}-{_slug(model.policy.name)}"
        check_output_dir(out)
        result = model.run(progress=not args.no_progress and sys.stderr.isatty())
        out = result.save(out, fmt=args.format)
    print(_format_summary(result.summary))
    print(f"results written to {out}/")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``geosim`` command; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # One of geosim's own commands is parsed without the plugins (their entry points and
    # modules take long to load); any other first argument may name a plugin's command.
    args = _parser(plugins=not argv or argv[0] not in COMMANDS).parse_args(argv)
    try:
        if getattr(args, "handler", None) is not None:
            return args.handler(args)
        if args.command == "schedulers":
            from geosim.schedulers import registered, unavailable
            rows = [(name, cls.description) for name, cls in registered().items()]
            rows += [(name, f"(unavailable: {why})") for name, why in unavailable().items()]
            width = max(len(n) for n, _ in rows)
            for name, text in rows:
                print(f"{name:<{width}}  {text}")
            return 0
        if args.command == "compare":
            return _compare(args)
        if args.command == "compile":
            if args.jobs_parallel is not None and args.jobs_parallel < 1:
                raise GeosimError(f"--jobs-parallel: must be at least 1 (got "
                                  f"{args.jobs_parallel})")
            from geosim.warmup import compile_kernels
            print(f"kernels compiled in {compile_kernels(args.jobs_parallel):.1f} s")
            return 0
        scenario = _load(args)
        return _validate(scenario) if args.command == "validate" else _run(args, scenario)
    except GeosimError as exc:
        print(f"geosim: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"geosim: error: {os_error(exc)}", file=sys.stderr)
        return 2
    except MemoryError:
        print("geosim: error: out of memory: the machine cannot hold this run (its estimate "
              "passed run.max_memory_gb); make it smaller or lower run.max_memory_gb",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        resume = "; run the same command again to resume" \
            if args.command in ("compare", "sweep") else ""
        print(f"geosim: interrupted{resume}", file=sys.stderr)
        return 130


def entry() -> None:
    """The ``geosim`` program: :func:`main` on the command line, exiting with its status.

    Everything alive is frozen first (:func:`gc.freeze`): the interpreter's collection
    at exit would otherwise scan every object of the process, about a sixth of a short
    command's time, to free memory the exit releases anyway.
    """
    import gc

    status = main()
    gc.freeze()
    sys.exit(status)


def _slug(name: str) -> str:
    """A scheduler name as a directory name part (``flutter+mantri`` stays readable)."""
    return "".join(ch if ch.isalnum() or ch in "+-_." else "-" for ch in name)


if __name__ == "__main__":
    entry()
