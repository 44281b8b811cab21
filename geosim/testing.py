"""The scheduler contract as checks an author runs on their own scheduler.

Like scikit-learn's ``check_estimator``: :func:`check_scheduler` runs a scheduler class
through the core checks of the project's conformance suite (``tests/test_conformance.py``)
and raises :class:`AssertionError` naming the first check that fails. The checks are

``params``
    ``name`` is set; parameters are keyword arguments of ``__init__`` stored as given, so
    :meth:`~geosim.schedulers.Scheduler.get_params` returns them and rebuilds an equal
    scheduler. If the class declares its parameters
    (:attr:`~geosim.schedulers.Scheduler.params`), it declares exactly the keyword
    arguments of ``__init__`` (those of a composite's part that declares none excepted),
    each with the default ``__init__`` gives it, and a value that breaks a declaration
    (:func:`geosim.params.values_outside`) is refused with a ``ValueError`` naming the
    parameter.
``flows``, ``closed``, ``mapreduce``, ``geo``, ``geo-event``
    A run in each small world of the suite (flows of capped stages; one cluster with
    availability periods; MapReduce jobs whose copies vary; a geo-distributed world with
    every process on: availability, outages, WAN; the same, smaller, event-timed and with
    the WAN shared max-min fairly) in conformance mode, which checks the
    invariants of :mod:`geosim.invariants` after every step (no slot, gate, link or capped
    stage oversubscribed, no copy on an unreachable cluster, work conserved). At the end
    every job has finished, every task has exactly one winning copy that started after
    the task was ready, and executed work is demanded plus wasted work.
``same seed``
    Two runs with the same seed give identical tables.

Each run builds a fresh scheduler and stops after :data:`MAX_STEPS` of its world's
steps (about ten times what the slowest built-in scheduler needs there), so a scheduler
that never finishes fails within seconds instead of running on. With pytest, one test
per check::

    from geosim.testing import scheduler_checks

    CHECKS = scheduler_checks(Greedy)

    @pytest.mark.parametrize("check", CHECKS.values(), ids=list(CHECKS))
    def test_greedy_conformance(check):
        check()
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import pandas as pd

from geosim.errors import GeosimError
from geosim.model import GeoModel
from geosim.params import check_value, values_outside
from geosim.results import Result
from geosim.scenario import load_scenario
from geosim.schedulers.base import Scheduler
from geosim.schedulers.registry import scheduler_class

#: Steps per world after which a checked run is stopped and its check fails.
MAX_STEPS = {"flows": 1_000, "closed": 8_000, "mapreduce": 5_000, "geo": 40_000,
             "geo-event": 20_000}


def closed_world(slots: int = 1, rate: float = 0.05, n_jobs: int = 200,
                 work: dict | None = None, scheduler: str = "fifo",
                 params: dict | None = None, dt: float = 1.0, seed: int = 1,
                 availability: bool = False) -> dict[str, Any]:
    """One cluster of ``slots`` slots of power 1, no outages: the queueing-theory world."""
    return {
        "run": {"seed": seed, "dt": dt, "record_interval": 100.0},
        "scheduler": {"name": scheduler, "params": params or {}},
        "topology": {"generator": "single"},
        "tiers": {"small": {"slots": slots, "power_mean": 1.0, "power_rsd": 0.0}},
        "clusters": {"power_redraw_interval": 0.0},
        "availability": {"enabled": availability},
        "outages": {"enabled": False},
        "workload": {"kind": "single", "n_jobs": n_jobs, "arrival_rate": rate,
                     "work": work or {"distribution": "exponential", "mean": 10.0}},
    }


def mapreduce_world(slots: int = 12, n_jobs: int = 25, rate: float = 0.05, seed: int = 2,
                    scheduler: str = "fifo", params: dict | None = None) -> dict[str, Any]:
    """One cluster of unit-speed machines running MapReduce jobs whose copies vary (000)."""
    world = closed_world(slots=slots, rate=rate, n_jobs=n_jobs, scheduler=scheduler,
                         params=params, seed=seed)
    world["workload"] = {"kind": "mapreduce", "n_jobs": n_jobs, "arrival_rate": rate,
                         "map_tasks": [1, 8], "reduce_tasks": [0, 3], "map_mean": [5.0, 30.0],
                         "reduce_mean": [5.0, 20.0], "map_cv": 0.8, "reduce_cv": 0.5,
                         "weight": [1, 5]}
    return world


def flows_world(scheduler: str = "fifo", params: dict | None = None, seed: int = 1
                ) -> dict[str, Any]:
    """004's world, small: 25 unit-speed slots, 2-3 flows of 2-4 capped brick stages."""
    world = closed_world(slots=25, scheduler=scheduler, params=params, seed=seed, dt=5.0)
    world["workload"] = {"kind": "flows", "flow_count": [2, 3], "flow_jobs": [2, 4],
                         "flow_time_unit": 10.0, "flow_brick": 5.0}
    return world


def geo_world(n_clusters: int = 8, n_jobs: int = 12, rate: float = 0.05, seed: int = 3,
              scheduler: str = "fifo", params: dict | None = None) -> dict[str, Any]:
    """A small geo-distributed world with every process on: availability, outages, WAN.

    Raw input exists 60 s before its job arrives, for schedulers that place data.
    """
    return {
        "run": {"seed": seed, "record_interval": 20.0},
        "scheduler": {"name": scheduler, "params": params or {}},
        "topology": {"generator": "barabasi_albert", "n_clusters": n_clusters},
        "tiers": {"large": {"slots": [30, 40]}, "medium": {"slots": [10, 20]},
                  "small": {"slots": [4, 8]}},
        "outages": {"trial_interval": 30.0},
        "workload": {"kind": "montage", "n_jobs": n_jobs, "arrival_rate": rate,
                     "large_max_tasks": 600, "data_lag": 60.0},
    }


def _limited(world: dict[str, Any], name: str) -> dict[str, Any]:
    world["run"]["max_steps"] = MAX_STEPS[name]
    return world


#: The worlds a scheduler runs in, by check name (quickest first): builders of scenarios,
#: the worlds of the conformance suite.
WORLDS: dict[str, Callable[[], dict[str, Any]]] = {
    "flows": lambda: _limited(flows_world(), "flows"),
    "closed": lambda: _limited(closed_world(slots=3, rate=0.2, n_jobs=150,
                                            availability=True), "closed"),
    "mapreduce": lambda: _limited(mapreduce_world(), "mapreduce"),
    "geo": lambda: _limited(geo_world(), "geo"),
    "geo-event": lambda: _limited(event_maxmin(geo_world(n_jobs=4)), "geo-event"),
}


def event_maxmin(world: dict[str, Any]) -> dict[str, Any]:
    """``world`` event-timed, its WAN shared max-min fairly (``links.sharing``)."""
    world["run"]["timing"] = "event"
    world["links"] = {**world.get("links", {}), "sharing": "maxmin"}
    return world


def _require(condition: Any, message: str) -> None:
    """Raise :class:`AssertionError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise AssertionError(message)


def _resolve(scheduler: type[Scheduler] | str) -> type[Scheduler]:
    if isinstance(scheduler, str):   # the one-line error of a bad name
        return scheduler_class(scheduler)
    if not (isinstance(scheduler, type) and issubclass(scheduler, Scheduler)):
        raise TypeError(f"not a geosim Scheduler subclass: {scheduler!r}")
    return scheduler


def _run(cls: type[Scheduler], params: Mapping[str, Any], world: dict[str, Any],
         where: str) -> Result:
    """One run in conformance mode with a fresh scheduler."""
    try:
        return GeoModel(load_scenario(world), cls(**params), check_invariants=True).run()
    except GeosimError as exc:   # e.g. stopped after MAX_STEPS
        raise AssertionError(f"{where}: {exc}") from exc
    except Exception as exc:   # a broken invariant, an impossible action
        exc.add_note(f"while checking {where}")
        raise


def check_params(cls: type[Scheduler], params: Mapping[str, Any]) -> None:
    """The ``params`` check: a name, parameters stored as given, declarations kept."""
    where = f"{cls.__name__}, params"
    _require(isinstance(cls.name, str) and cls.name != "", f"{where}: the class sets no name")
    _require(isinstance(cls.description, str), f"{where}: description must be a string")
    scheduler = cls(**params)
    try:
        got = scheduler.get_params()
    except AttributeError as exc:
        raise AssertionError(f"{where}: every __init__ parameter must be stored as an "
                             f"attribute of the same name ({exc})") from None
    for key, value in params.items():
        _require(got.get(key) == value,
                 f"{where}: {key}={value!r} was given but get_params() says {got.get(key)!r}")
    _require(cls(**got).get_params() == got, f"{where}: cls(**get_params()) differs")
    repr(scheduler)
    if cls.params:
        _check_declarations(cls, scheduler, params, where)


def _check_declarations(cls: type[Scheduler], scheduler: Scheduler,
                        params: Mapping[str, Any], where: str) -> None:
    """Declarations match ``__init__`` and are enforced (see the ``params`` check)."""
    names = cls.param_names()
    undeclared = {n for part in scheduler.parts() if not type(part).params
                  for n in type(part).param_names()}    # a part that checks its own
    for name in names:
        _require(name in cls.params or name in undeclared,
                 f"{where}: {name} is a keyword argument of __init__ but is not declared")
    got = scheduler.get_params()
    for name, fld in cls.params.items():
        _require(name in names, f"{where}: {name} is declared but __init__ does not take it")
        _require(check_value(fld, fld.default) is None,
                 f"{where}: the declared default of {name}, {fld.default!r}, breaks its rule")
        _require(name in params or got[name] == fld.default,
                 f"{where}: {name} is declared with default {fld.default!r} but "
                 f"defaults to {got[name]!r}")
        for bad in values_outside(fld):
            _check_refused(cls, {**params, name: bad}, name, where)


def _check_refused(cls: type[Scheduler], params: Mapping[str, Any], name: str,
                   where: str) -> None:
    """``cls(**params)`` raises a one-line ``ValueError`` naming ``name``."""
    value = params[name]
    try:
        cls(**params)
    except ValueError as exc:
        _require(name in str(exc) and "\n" not in str(exc),
                 f"{where}: {name}={value!r} is refused, but not in one line naming "
                 f"{name}: {exc}")
        return
    except Exception as exc:   # a plugin's __init__ may fail in any way
        raise AssertionError(f"{where}: {name}={value!r} raised {type(exc).__name__}, "
                             f"not ValueError ({exc})") from None
    raise AssertionError(f"{where}: {name}={value!r} breaks its declaration but was "
                         "accepted")


def check_world(cls: type[Scheduler], params: Mapping[str, Any], world: str) -> None:
    """A world check (a key of :data:`WORLDS`): see the module."""
    where = f"{cls.__name__} in the {world} world"
    result = _run(cls, params, WORLDS[world](), where)
    jobs, tasks, copies = result.jobs, result.tasks, result.copies
    _require(jobs["finished"].all(), f"{where}: some jobs never finished")
    _require((jobs["completion"] >= jobs["arrival"]).all(),
             f"{where}: a job ended before it arrived")
    won = copies[copies["outcome"] == "won"]
    _require(won["task"].is_unique and len(won) == len(tasks),
             f"{where}: a task did not complete exactly once")
    _require((copies["outcome"] != "alive").all(), f"{where}: copies alive after the run")
    ready = tasks.loc[won["task"], "ready"].to_numpy()
    _require((won["start"].to_numpy() >= ready - 1e-9).all(),
             f"{where}: a winning copy started before its task was ready")
    s = result.summary
    executed, demanded, wasted = s["executed_work"], s["demanded_work"], s["wasted_work"]
    _require(abs(executed - demanded - wasted) <= 1e-9 * max(executed, 1.0),
             f"{where}: executed work {executed} is not demanded {demanded} + wasted {wasted}")


def check_same_seed(cls: type[Scheduler], params: Mapping[str, Any]) -> None:
    """The ``same seed`` check: two runs with one seed give identical tables."""
    where = f"{cls.__name__}, same seed"
    a = _run(cls, params, _limited(geo_world(n_jobs=6), "geo"), where)
    b = _run(cls, params, _limited(geo_world(n_jobs=6), "geo"), where)
    for table in ("jobs", "tasks", "copies", "clusters"):
        try:
            pd.testing.assert_frame_equal(getattr(a, table), getattr(b, table))
        except AssertionError as exc:
            first = str(exc).strip().splitlines()[0]
            raise AssertionError(f"{where}: the {table} tables differ ({first})") from None


def scheduler_checks(scheduler: type[Scheduler] | str,
                     params: Mapping[str, Any] | None = None) -> dict[str, Callable[[], None]]:
    """The contract's checks of a scheduler, by name, each a call without arguments.

    Args:
        scheduler: A :class:`~geosim.schedulers.Scheduler` subclass (registered or not)
            or a registered name.
        params: Keyword parameters of the scheduler (default: its defaults).

    Raises:
        TypeError: ``scheduler`` is not a scheduler class.
        GeosimError: An unknown or unavailable name.
    """
    cls, params = _resolve(scheduler), dict(params or {})
    checks: dict[str, Callable[[], None]] = {"params": partial(check_params, cls, params)}
    checks.update({world: partial(check_world, cls, params, world) for world in WORLDS})
    checks["same seed"] = partial(check_same_seed, cls, params)
    return checks


def check_scheduler(scheduler: type[Scheduler] | str,
                    params: Mapping[str, Any] | None = None) -> None:
    """Run every check of the contract on ``scheduler`` (see the module).

    Args:
        scheduler: A :class:`~geosim.schedulers.Scheduler` subclass or a registered name.
        params: Keyword parameters of the scheduler (default: its defaults).

    Raises:
        AssertionError: The first check that fails, named in the message (a broken
            invariant raises :class:`geosim.invariants.InvariantError`, an
            :class:`AssertionError`).
    """
    for check in scheduler_checks(scheduler, params).values():
        check()
