"""The scheduler contract and the registry of scheduler names.

A scheduler is a small class: its parameters are keyword arguments of ``__init__``,
stored as given, declared in :attr:`Scheduler.params` (a :class:`~geosim.params.Field` per
parameter: default, kind, bounds, choices) and validated against the declarations by
:meth:`Scheduler.validate_params` at the top of ``__init__`` (raising ``ValueError``);
:meth:`Scheduler.decide` turns the read-only view into actions once per time slot.
Register it with :func:`register` so scenarios and the command line can name it; the
common conformance suite (``tests/test_conformance.py``) then runs it automatically.

Schedulers from other distributions are plugins: entry points of the group
``geosim.schedulers`` (:data:`ENTRY_POINT_GROUP`) naming a :class:`Scheduler` subclass
(``mine = "mypkg.greedy:Greedy"``, the entry point's name being the class's
:attr:`~Scheduler.name`) or a module whose import registers some (``mine = "mypkg.greedy"``).
:func:`registered` and :func:`make_scheduler` load them once per process, on first use,
after the built-ins. A plugin that cannot be loaded, is not a scheduler or takes a name
already registered is refused: :func:`unavailable` says why, and naming it raises a
:class:`~geosim.errors.GeosimError` with that reason, while every other scheduler works.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from importlib.metadata import EntryPoint
from types import ModuleType
from typing import Any, ClassVar

import numpy as np

from geosim.errors import GeosimError
from geosim.params import Field, check_value
from geosim.view import Actions, SchedulerView

#: Entry-point group of scheduler plugins.
ENTRY_POINT_GROUP = "geosim.schedulers"

_REGISTRY: dict[str, type[Scheduler]] = {}
#: Plugins refused by name (their entry point's), with the reason.
_UNAVAILABLE: dict[str, str] = {}
_plugins_loaded = False


class Parametrised:
    """A class configured by the keyword arguments of its ``__init__``.

    Each parameter is stored, as given, under its own name. :attr:`params` declares them;
    ``__init__`` checks its arguments with :meth:`validate_params` before storing them.
    Declarations are optional: a class that declares none checks its parameters itself.
    """

    #: The parameters by name, each with its default and rule: every keyword argument of
    #: ``__init__`` (or none, for a class that checks its parameters itself).
    params: ClassVar[Mapping[str, Field]] = {}

    @classmethod
    def param_names(cls) -> list[str]:
        """Names of the parameters: the named keyword arguments of ``__init__``."""
        return [p.name for p in inspect.signature(cls.__init__).parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    @classmethod
    def validate_params(cls, **values: Any) -> None:
        """Check values against their declarations in :attr:`params`.

        A name the class does not declare is not checked here.

        Raises:
            ValueError: The first value that breaks its rule, naming the parameter, the
                rule and the value (``beta must be < 1 (got 1.5)``).
        """
        for name, value in values.items():
            fld = cls.params.get(name)
            problem = None if fld is None else check_value(fld, value)
            if problem:
                raise ValueError(f"{name} {problem} (got {value!r})")

    def parts(self) -> tuple[Parametrised, ...]:
        """The objects this one passes some of its parameters on to (default: none)."""
        return ()

    def get_params(self) -> dict[str, Any]:
        """Return the parameters as given (scikit-learn style).

        Each parameter of :meth:`param_names` is read from the part that took it
        (:meth:`parts`), else from the attribute of its name.
        """
        given: dict[str, Any] = {}
        for part in self.parts():
            given.update(part.get_params())
        return {name: given[name] if name in given else getattr(self, name)
                for name in self.param_names()}


class Scheduler(Parametrised):
    """Base class of scheduling policies.

    Subclasses set :attr:`name` and :attr:`description`, take their parameters as
    keyword arguments (declared in :attr:`params`), and implement :meth:`decide`.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: Whether :meth:`place_data` moves raw input before jobs arrive (when the scenario's
    #: ``workload.data_lag`` gives it time to).
    places_data: bool = False
    #: Whether the policy acts only at decision points (:meth:`at_event`: an arrival, a
    #: completion, a failure, a change of the reachable clusters) and otherwise leaves the
    #: slot as it is. On a world whose rates are constant the model then runs the quiet
    #: slots between events in one engine call (:meth:`~geosim.model.GeoModel.step`).
    event_driven: bool = False
    #: Whether the last :meth:`at_event` call saw the reachable clusters change.
    reach_changed: bool = False

    def reset(self, view: SchedulerView, rng: np.random.Generator) -> None:
        """Prepare for a new run (called once before the first slot).

        Args:
            view: The run's view.
            rng: The scheduler's own random stream (from the run's seed).
        """
        self.rng = rng
        self._seen_reachable: np.ndarray | None = None
        self.reach_changed = False

    def at_event(self, view: SchedulerView) -> bool:
        """Whether this boundary is a decision point: the one rule of event-driven policies.

        A boundary is a decision point after a job arrival, a task completion or a copy
        lost to an outage, and when the set of reachable clusters (hence the reachable
        slots) differs from the one the previous call saw: an outage's start or end, with
        or without anything else happening then. The first call is a decision point.

        Call it once per boundary the policy is asked to decide at: it remembers the
        reachable clusters, and sets :attr:`reach_changed` for policies that also act on
        that change alone (PingAn renews its candidates then).
        """
        reach = view.reachable
        seen = self._seen_reachable
        self.reach_changed = seen is None or not np.array_equal(reach, seen)
        if self.reach_changed:
            self._seen_reachable = np.array(reach, dtype=bool)
        return bool(view.arrivals or view.completions or view.failures or self.reach_changed)

    def decide(self, view: SchedulerView, actions: Actions) -> None:
        """Act at the current slot boundary."""
        raise NotImplementedError

    def place_data(self, view: SchedulerView, actions: Actions) -> None:
        """Move raw input of the jobs in ``view.announced`` (only if :attr:`places_data`)."""

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"


def register(cls: type[Scheduler]) -> type[Scheduler]:
    """Class decorator adding a scheduler to the registry under ``cls.name``.

    Raises:
        ValueError: The name is empty or already registered.
    """
    if not cls.name:
        raise ValueError(f"scheduler class {_origin(cls)} has no name")
    if cls.name in _REGISTRY:
        raise ValueError(f"scheduler name {cls.name!r} is taken by {_origin(_REGISTRY[cls.name])}")
    _REGISTRY[cls.name] = cls
    return cls


def registered() -> dict[str, type[Scheduler]]:
    """Return the registered scheduler classes by name, sorted by name (plugins included)."""
    _load_plugins()
    return dict(sorted(_REGISTRY.items()))


def unavailable() -> dict[str, str]:
    """Return the plugins that were refused, by entry-point name, with the reason."""
    _load_plugins()
    return dict(sorted(_UNAVAILABLE.items()))


def _origin(cls: type) -> str:
    """``module.Class`` of a class, naming built-ins as such."""
    where = f"{cls.__module__}.{cls.__qualname__}"
    return f"the built-in {where}" if cls.__module__.startswith("geosim.") else where


def _load_plugins() -> None:
    """Load the scheduler plugins of :data:`ENTRY_POINT_GROUP` (once per process)."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points

    import geosim.schedulers  # noqa: F401  (built-ins first: a plugin never takes their names)
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        before = dict(_REGISTRY)
        try:
            reason = _load_plugin(ep, before)
        except Exception as exc:   # a plugin's import may fail in any way
            lines = str(exc).strip().splitlines()
            reason = f"cannot load {ep.value}: {type(exc).__name__}" + (
                f": {lines[0].strip()}" if lines else "")
        if reason:
            _REGISTRY.clear()          # a refused plugin leaves nothing registered
            _REGISTRY.update(before)
            _UNAVAILABLE.setdefault(ep.name, reason)


def _load_plugin(ep: EntryPoint, before: Mapping[str, type[Scheduler]]) -> str:
    """Load one entry point and register what it names; return why not ('' if it did)."""
    obj = ep.load()
    if isinstance(obj, ModuleType):
        package = obj.__name__
        if len(_REGISTRY) == len(before) and not any(
                cls.__module__ == package or cls.__module__.startswith(package + ".")
                for cls in _REGISTRY.values()):
            return f"module {package} registers no scheduler"
        return ""
    if not (isinstance(obj, type) and issubclass(obj, Scheduler)):
        return f"{ep.value} is not a geosim Scheduler subclass (got {type(obj).__name__})"
    if obj.name != ep.name:
        return (f"{ep.value} has name {obj.name!r} but its entry point is {ep.name!r}; "
                "they must agree")
    if _REGISTRY.get(ep.name) is obj:   # its module registered it
        return ""
    if ep.name in _REGISTRY:
        return f"{ep.value}: scheduler name {ep.name!r} is taken by {_origin(_REGISTRY[ep.name])}"
    _REGISTRY[ep.name] = obj
    return ""


def _finite(value: Any) -> bool:
    """Whether ``value`` holds no NaN or infinity (looking inside lists and tables)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list | tuple):
        return all(_finite(v) for v in value)
    if isinstance(value, Mapping):
        return all(_finite(v) for v in value.values())
    return True


def make_scheduler(name: str, params: Mapping[str, Any] | None = None,
                   source: str = "scheduler") -> Scheduler:
    """Instantiate a registered scheduler.

    Raises:
        GeosimError: Unknown or unavailable name, or bad parameters (one line naming them).
    """
    known = registered()
    cls = known.get(name)
    if cls is None and name in _UNAVAILABLE:
        raise GeosimError(f"scheduler {name!r} is unavailable: {_UNAVAILABLE[name]}",
                          source=source, key="scheduler.name")
    if cls is None:
        raise GeosimError(f"unknown scheduler {name!r} (known: {', '.join(known)})",
                          source=source, key="scheduler.name")
    for key, value in dict(params or {}).items():
        if not _finite(value):
            raise GeosimError(f"{name}: {key} must be finite (got {value!r})", source=source,
                              key="scheduler.params")
    try:
        return cls(**dict(params or {}))
    except TypeError as exc:
        msg = str(exc).split("__init__() ")[-1]
        raise GeosimError(f"{name}: {msg}", source=source, key="scheduler.params") from None
    except ValueError as exc:
        raise GeosimError(f"{name}: {exc}", source=source, key="scheduler.params") from None
