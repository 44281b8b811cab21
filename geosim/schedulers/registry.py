"""The registry of scheduler names: built-ins and plugins, loaded on first use.

Built-in schedulers live in the modules of :data:`BUILTIN_MODULES`, each registering its
classes with :func:`register` when imported. Nothing is imported until a name is needed:
naming a built-in (:func:`scheduler_class`, :func:`make_scheduler`) imports its module
(:data:`BUILTINS`) and no other; :func:`registered`, :func:`unavailable` and naming any
other scheduler import every built-in and then the plugins, once per process. Loading a
scenario or the package imports none.

Schedulers from other distributions are plugins: entry points of the group
``geosim.schedulers`` (:data:`ENTRY_POINT_GROUP`) naming a
:class:`~geosim.schedulers.base.Scheduler` subclass (``mine = "mypkg.greedy:Greedy"``, the
entry point's name being the class's ``name``) or a module whose import registers some
(``mine = "mypkg.greedy"``). They load after the built-ins, so a plugin never takes a
built-in's name. A plugin that cannot be loaded, is not a scheduler or takes a name
already registered is refused: :func:`unavailable` says why, and naming it raises a
:class:`~geosim.errors.GeosimError` with that reason, while every other scheduler works.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from importlib import import_module
from importlib.metadata import EntryPoint
from types import ModuleType
from typing import Any

from geosim.errors import GeosimError
from geosim.schedulers.base import Scheduler

#: The built-in schedulers by name, each with the module whose import registers it, so
#: that naming one imports that module alone (the composites' module imports every part).
BUILTINS = {
    **{name: "geosim.schedulers.compositions" for name in (
        "dolly", "flutter", "flutter+dolly", "flutter+late", "flutter+mantri", "iridium",
        "late", "mantri", "spark", "spark+speculation")},
    **{name: f"geosim.schedulers.{module}" for name, module in (
        ("fair", "fair"), ("fair+r", "fair_r"), ("fifo", "fifo"),
        ("flow-fair", "flow_fair"), ("flowflex", "flowflex"), ("laps", "laps"),
        ("laps+r", "laps"), ("pingan", "pingan"), ("sca", "smart_cloning"),
        ("srpt", "srpt"), ("srpt+r", "srpt_r"), ("srptms+c", "srptms_c"),
        ("srptms-offline", "srptms_offline"))},
}

#: The modules of the built-in schedulers (each registers its classes when imported).
BUILTIN_MODULES = tuple(sorted(set(BUILTINS.values())))

#: Entry-point group of scheduler plugins.
ENTRY_POINT_GROUP = "geosim.schedulers"

_REGISTRY: dict[str, type[Scheduler]] = {}
#: Plugins refused by name (their entry point's), with the reason.
_UNAVAILABLE: dict[str, str] = {}
_plugins_loaded = False


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

    for module in BUILTIN_MODULES:       # built-ins first: a plugin never takes their names
        import_module(module)
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


def scheduler_class(name: str, source: str = "scheduler",
                    key: str = "scheduler.name") -> type[Scheduler]:
    """The registered class of ``name``.

    Raises:
        GeosimError: Unknown or unavailable name (one line naming ``key``).
    """
    cls = _builtin(name)
    if cls is not None:
        return cls
    known = registered()
    cls = known.get(name)
    if cls is None and name in _UNAVAILABLE:
        raise GeosimError(f"scheduler {name!r} is unavailable: {_UNAVAILABLE[name]}",
                          source=source, key=key)
    if cls is None:
        raise GeosimError(f"unknown scheduler {name!r} (known: {', '.join(known)})",
                          source=source, key=key)
    return cls


def _builtin(name: str) -> type[Scheduler] | None:
    """The class of a built-in name, importing its module alone (None for another name).

    A plugin never takes a built-in's name, so a built-in is found without loading the
    plugins or the other built-ins.
    """
    module = BUILTINS.get(name)
    if module is None:
        return None
    import_module(module)
    return _REGISTRY.get(name)


def make_scheduler(name: str, params: Mapping[str, Any] | None = None,
                   source: str = "scheduler") -> Scheduler:
    """Instantiate a registered scheduler.

    Raises:
        GeosimError: Unknown or unavailable name, or bad parameters (one line naming them).
    """
    cls = scheduler_class(name, source)
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
