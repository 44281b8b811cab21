"""``geosim dashboard``: a live view of a run in the browser, a Mesa model served by Solara.

The command checks its input (scenario, scheduler, seed, overrides, port) in the calling
process, then serves the Solara app :mod:`viz.dashboard_app` with ``solara run`` in a
child process, passing the choices in the ``GEOSIM_DASHBOARD`` environment variable
(JSON of a :class:`DashboardConfig`). Ctrl-C (or SIGTERM) stops the server and the
command; on Linux the server is also killed when the command is (even by SIGKILL), by
its parent-death signal. The page itself is built by :mod:`viz.dashboard_ui`; with
``--compare`` (schedulers side by side) or a results directory (a replay), by
:mod:`viz.compare_ui` (input checked by :func:`compare_config`).

This module is imported whenever the ``geosim`` command starts (it is an entry point
of the ``geosim.commands`` group), so it imports neither Solara nor Mesa's
visualisation at module level.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from geosim.errors import GeosimError

#: Environment variable that carries the dashboard's configuration to the server.
CONFIG_ENV = "GEOSIM_DASHBOARD"
DEFAULT_SCENARIO = "scenarios/pingan-medium.toml"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
#: The Solara app module that ``solara run`` serves.
APP_MODULE = "viz.dashboard_app"
#: Packages the server needs (the ``viz`` extra).
REQUIRED = ("solara", "altair", "mesa.visualization")
#: Seconds the server gets to stop after Ctrl-C before it is terminated, then killed.
STOP_TIMEOUT = 10.0
#: Linux's prctl option that sets the signal a process gets when its parent ends.
PR_SET_PDEATHSIG = 1


@dataclass
class DashboardConfig:
    """The dashboard's starting choices (the initial values of its controls).

    Attributes:
        scenario: Scenario file the first run uses.
        scenarios: Scenario files offered by the scenario control.
        scheduler: Registered scheduler name.
        seed: Seed of the first run.
        epsilon: Initial value of the ε control.
        beta: Initial value of the β control.
        load: Initial load factor (× the scenario's arrival rate).
        overrides: Dotted-key scenario overrides applied to every scenario, as
            ``[key, value]`` pairs (``scheduler.*`` ones come from ``--scheduler``).
        compare: Scheduler specs shown side by side (the comparison page), the first
            being the baseline; empty for the single-run page.
        replay: A saved run or comparison directory to replay (the comparison page,
            nothing is run); empty to run live.
        replay_seed: The seed of the replayed comparison's runs (default: its first).
    """

    scenario: str = DEFAULT_SCENARIO
    scenarios: list[str] = field(default_factory=list)
    scheduler: str = "fair"
    seed: int = 1
    epsilon: float = 0.6
    beta: float = 0.8
    load: float = 1.0
    overrides: list[list[Any]] = field(default_factory=list)
    compare: list[str] = field(default_factory=list)
    replay: str = ""
    replay_seed: int | None = None

    @property
    def side_by_side(self) -> bool:
        """Whether the page is the comparison page (live comparison or replay)."""
        return bool(self.compare or self.replay)

    def to_json(self) -> str:
        """Serialise for :data:`CONFIG_ENV`."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> DashboardConfig:
        """Read what :meth:`to_json` wrote."""
        return cls(**json.loads(text))

    @classmethod
    def from_env(cls) -> DashboardConfig:
        """The configuration in :data:`CONFIG_ENV`, or the default scenario's."""
        text = os.environ.get(CONFIG_ENV)
        return cls.from_json(text) if text else build_config(DEFAULT_SCENARIO)

    def model_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`~viz.dashboard_run.build_model`."""
        return {"scenario_file": self.scenario, "scheduler": self.scheduler,
                "seed": self.seed, "epsilon": self.epsilon, "beta": self.beta,
                "load": self.load, "overrides": tuple(map(tuple, self.overrides))}


def display_path(path: str) -> str:
    """``path`` relative to the working directory when it lies below it, else as given."""
    rel = os.path.relpath(Path(path).resolve())
    return path if rel.startswith("..") else rel


def sibling_scenarios(path: str) -> list[str]:
    """``path`` and the other ``*.toml`` files of its directory, sorted."""
    p = Path(path)
    names = sorted({q.name for q in p.parent.glob("*.toml")} | {p.name})
    return [str(p.with_name(n)) for n in names]


def build_config(scenario: str, scheduler: str | None = None, seed: int | None = None,
                 overrides: Sequence[str] = (), check: bool = False) -> DashboardConfig:
    """Check the command's input and turn it into the dashboard's configuration.

    Args:
        scenario: Scenario TOML file.
        scheduler: Scheduler spec (``NAME`` or ``NAME[KEY=VALUE,...]``); its name is the
            scheduler control's first value, its parameters apply whenever that scheduler
            is chosen (``epsilon``/``beta`` set those controls); default: the scenario's.
        seed: First seed; default: the scenario's ``run.seed``.
        overrides: ``KEY=VALUE`` scenario overrides.
        check: Also build the run (world and workload), as ``geosim validate`` does.

    Raises:
        GeosimError: A bad scenario, override, scheduler or parameter.
    """
    from geosim.model import GeoModel
    from geosim.scenario import load_scenario, parse_override
    from geosim.schedulers.build import build_scheduler
    from geosim.schedulers.spec import parse_spec
    from viz.dashboard_run import scheduler_defaults

    pairs = dict(parse_override(o) for o in overrides)
    if scheduler:
        spec = parse_spec(scheduler)
        pairs["scheduler.name"] = spec.name
        if spec.params:
            pairs["scheduler.params"] = spec.params
    loaded = load_scenario(scenario, pairs)
    name, params = loaded["scheduler"]["name"], loaded["scheduler"]["params"]
    seed = loaded["run"]["seed"] if seed is None else int(seed)
    if seed < 0:
        raise GeosimError(f"--seed must be >= 0 (got {seed})")
    if check:
        GeoModel(loaded, None, seed)
    else:
        build_scheduler(loaded)
    eps = params.get("epsilon", scheduler_defaults("pingan").get("epsilon", 0.6))
    beta = params.get("beta", scheduler_defaults("laps+r").get("beta", 0.8))
    shown = display_path(str(scenario))
    return DashboardConfig(scenario=shown, scenarios=sibling_scenarios(shown),
                           scheduler=name, seed=seed, epsilon=float(eps), beta=float(beta),
                           overrides=[[k, v] for k, v in pairs.items()])


def compare_config(target: str, compare: str | None, seed: int | None = None,
                   overrides: Sequence[str] = (), scheduler: str | None = None
                   ) -> DashboardConfig:
    """Check the input of the comparison page and turn it into its configuration.

    Args:
        target: A scenario TOML file (a live comparison of ``compare``), or a saved run
            or comparison directory (a replay).
        compare: Scheduler specs, comma-separated (live: required, 2 to 4; replay: the
            labels to show).
        seed: Live: the seed of every side; replay: the seed of the saved runs.
        overrides: ``KEY=VALUE`` scenario overrides (live only).
        scheduler: Must be ``None``: ``--scheduler`` is the single-run page's.

    Raises:
        GeosimError: Bad input, in one line.
    """
    from geosim.scenario import parse_override
    from geosim.schedulers.spec import parse_specs, split_top

    if scheduler is not None:
        raise GeosimError("--scheduler chooses the run of the single-run page; side by "
                          "side, name the schedulers with --compare", source="--scheduler")
    if Path(target).is_dir():
        from viz.compare_data import open_replay
        if overrides:
            raise GeosimError("a replay runs nothing, so it takes no overrides",
                              source="--set")
        labels = split_top(compare, "--compare") if compare else []
        replay = open_replay(target, labels, seed)
        return DashboardConfig(scenario=display_path(target), compare=replay.labels,
                               replay=display_path(target), replay_seed=seed)
    if not compare:
        raise GeosimError("--compare needs 2 to 4 schedulers (e.g. 'pingan,flutter')",
                          source="--compare")
    specs = parse_specs(compare)
    from viz.compare_data import check_sides
    check_sides([s.label for s in specs], "--compare")
    if len(specs) < 2:
        raise GeosimError(f"the dashboard compares 2 to 4 schedulers (got {len(specs)}); "
                          "for one, leave out --compare", source="--compare")
    config = build_config(target, specs[0].label, seed, overrides, check=True)
    from geosim.schedulers.build import build_scheduler
    from viz.dashboard_run import load_dashboard_scenario
    loaded = load_dashboard_scenario(target, [parse_override(o) for o in overrides])
    for spec in specs[1:]:
        build_scheduler(loaded, spec)
    config.compare = [s.label for s in specs]
    return config


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``dashboard`` subcommand (entry point of ``geosim.commands``)."""
    p = subparsers.add_parser(
        "dashboard", help="watch a run, or schedulers side by side, live in the browser; "
        "replay saved results",
        description="Serve a live dashboard of a run (a Mesa model, served by Solara): the "
        "clusters on the topology coloured by state with their busy slots, WAN links and "
        "gates coloured by load, alive jobs, slot utilisation and flowtimes, with controls "
        "for the scenario, scheduler, seed, ε, β and load, and step / play / reset. With "
        "--compare, 2 to 4 schedulers run side by side in lockstep on the same world and "
        "jobs: one map per scheduler, shared plots and the paired change of the mean "
        "flowtime. Given a saved run or comparison directory instead of a scenario, it "
        "replays the saved tables with a time slider, running nothing. Needs the viz "
        "extra (pip install 'geosim[viz]').")
    p.add_argument("scenario", nargs="?", default=DEFAULT_SCENARIO, metavar="TARGET",
                   help=f"scenario TOML file (default: {DEFAULT_SCENARIO}), or a run or "
                   "comparison directory to replay")
    p.add_argument("--compare", metavar="SPECS", help="2 to 4 schedulers side by side, "
                   "comma-separated, the first being the baseline (e.g. "
                   "'pingan,flutter+mantri'); on a replayed comparison, which of its "
                   "schedulers to show (default: its baseline and the next three)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"port to serve on (default: {DEFAULT_PORT})")
    p.add_argument("--host", default=DEFAULT_HOST,
                   help=f"address to listen on (default: {DEFAULT_HOST})")
    p.add_argument("--scheduler", help="first scheduler, NAME or NAME[KEY=VALUE,...] "
                   "(default: the scenario's)")
    p.add_argument("--seed", type=int, help="first seed (default: the scenario's run.seed); "
                   "replay: the seed of the comparison's runs (default: its first)")
    p.add_argument("--set", dest="overrides", action="append", default=[],
                   metavar="KEY=VALUE", help="override a scenario key, applied to every "
                   "scenario the dashboard offers (repeatable)")
    p.set_defaults(handler=run_dashboard)


def run_dashboard(args: argparse.Namespace) -> int:
    """Handler of ``geosim dashboard``: check the input, then serve until stopped."""
    check_requirements()
    if not 1 <= args.port <= 65535:
        raise GeosimError(f"--port must be in 1..65535 (got {args.port})")
    if Path(args.scenario).is_dir() or args.compare is not None:
        config = compare_config(args.scenario, args.compare, args.seed, args.overrides,
                                args.scheduler)
    else:
        config = build_config(args.scenario, args.scheduler, args.seed, args.overrides,
                              check=True)
    check_port(args.host, args.port)
    return serve(config, args.host, args.port)


def check_requirements() -> None:
    """Raise a one-line error unless the ``viz`` extra is installed."""
    missing = [m for m in REQUIRED if _find_spec(m) is None]
    if missing:
        raise GeosimError(f"the dashboard needs {', '.join(missing)}: "
                          "pip install 'geosim[viz]'")


def _find_spec(name: str) -> object | None:
    try:
        return importlib.util.find_spec(name)
    except ImportError:
        return None


def check_port(host: str, port: int) -> None:
    """Raise a one-line error if nothing can listen on ``host:port`` (e.g. it is taken)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise GeosimError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
            sock.listen(1)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise GeosimError(f"port {port} on {host} is in use; choose another "
                                  "with --port") from None
            raise GeosimError(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def server_command(host: str, port: int) -> list[str]:
    """The ``solara run`` command line of the dashboard server."""
    return [sys.executable, "-m", "solara", "run", APP_MODULE, "--host", host,
            "--port", str(port), "--production", "--no-open"]


def server_env(config: DashboardConfig) -> dict[str, str]:
    """The server's environment: ours, the configuration, and no outbound telemetry."""
    env = dict(os.environ)
    env[CONFIG_ENV] = config.to_json()
    env.setdefault("SOLARA_TELEMETRY_MIXPANEL_ENABLE", "False")
    return env


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM like Ctrl-C while serving, so the server is stopped either way."""
    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:   # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def die_with_this_process() -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the child killed when this process ends, or None.

    On Linux the child sets its parent-death signal to SIGKILL (``prctl``), so even a
    SIGKILL of this process, which it cannot pass on, ends the child; a child whose
    parent ended before that took effect ends at once. Elsewhere: None.
    """
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    args = (ctypes.c_int(PR_SET_PDEATHSIG), ctypes.c_ulong(signal.SIGKILL),
            ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
    parent = os.getpid()

    def preexec() -> None:   # in the child between fork and exec: keep it to two calls
        prctl(*args)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


def serve(config: DashboardConfig, host: str, port: int) -> int:
    """Run the dashboard server until it exits or the user stops it.

    The server is a child process that ends with this one (:func:`die_with_this_process`).

    Returns:
        0 when stopped by Ctrl-C or SIGTERM.

    Raises:
        GeosimError: The server exited on its own with a failure status.
    """
    url_host = f"[{host}]" if ":" in host else host
    what = f"replay of {config.replay}" if config.replay else (
        f"{Path(config.scenario).name}, {' vs '.join(config.compare or [config.scheduler])}")
    print(f"geosim dashboard: http://{url_host}:{port}/  ({what}; Ctrl-C to stop)",
          flush=True)
    with _sigterm_as_interrupt():
        proc = subprocess.Popen(server_command(host, port), env=server_env(config),
                                preexec_fn=die_with_this_process())
        try:
            status = proc.wait()
        except KeyboardInterrupt:
            stop(proc)
            print("geosim dashboard: stopped", file=sys.stderr)
            return 0
        finally:
            if proc.poll() is None:
                stop(proc)
    if status != 0:
        raise GeosimError(f"the dashboard server exited with status {status}")
    return 0


def stop(proc: subprocess.Popen) -> None:
    """Stop the server, more firmly each time it does not exit.

    It first gets a moment to finish on its own (a Ctrl-C in the terminal reaches it
    too), then SIGINT, then SIGTERM, then SIGKILL.
    """
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=1.0)
    for action in (lambda: proc.send_signal(signal.SIGINT), proc.terminate, proc.kill):
        if proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            action()
        try:
            proc.wait(timeout=STOP_TIMEOUT / 2)
            return
        except subprocess.TimeoutExpired:
            continue
    proc.wait()
