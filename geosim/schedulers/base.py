"""The scheduler contract and the registry of scheduler names.

A scheduler is a small class: its parameters are keyword arguments of ``__init__``,
stored as given and validated there (raising ``ValueError``); :meth:`Scheduler.decide`
turns the read-only view into actions once per time slot. Register it with
:func:`register` so scenarios and the command line can name it; the common
conformance suite (``tests/test_conformance.py``) then runs it automatically.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from geosim.errors import GeosimError
from geosim.view import Actions, SchedulerView

_REGISTRY: dict[str, type[Scheduler]] = {}


class Scheduler:
    """Base class of scheduling policies.

    Subclasses set :attr:`name` and :attr:`description`, take their parameters as
    keyword arguments, and implement :meth:`decide`.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: Whether :meth:`place_data` moves raw input before jobs arrive (when the scenario's
    #: ``workload.data_lag`` gives it time to).
    places_data: bool = False
    #: Whether the policy acts only when something happened (an arrival, a completion, a
    #: failure, a change of reachable slots) and otherwise leaves the slot as it is. On a
    #: world whose rates are constant the model then runs the quiet slots between events
    #: in one engine call (:meth:`~geosim.model.GeoModel.step`).
    event_driven: bool = False

    def reset(self, view: SchedulerView, rng: np.random.Generator) -> None:
        """Prepare for a new run (called once before the first slot).

        Args:
            view: The run's view.
            rng: The scheduler's own random stream (from the run's seed).
        """
        self.rng = rng
        self._pool = -1

    def at_event(self, view: SchedulerView) -> bool:
        """Whether this boundary is a decision point of an event-driven policy.

        True after an arrival, a task completion or a copy lost to an outage, and when
        the number of reachable slots changed since the last call.
        """
        pool = view.total_slots
        changed = pool != self._pool
        self._pool = pool
        return bool(view.arrivals or view.completions or view.failures or changed)

    def decide(self, view: SchedulerView, actions: Actions) -> None:
        """Act at the current slot boundary."""
        raise NotImplementedError

    def place_data(self, view: SchedulerView, actions: Actions) -> None:
        """Move raw input of the jobs in ``view.announced`` (only if :attr:`places_data`)."""

    def get_params(self) -> dict[str, Any]:
        """Return the parameters as given (scikit-learn style)."""
        if type(self).__init__ is object.__init__:
            return {}
        sig = inspect.signature(type(self).__init__)
        return {p: getattr(self, p) for p in sig.parameters if p != "self"}

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"


def register(cls: type[Scheduler]) -> type[Scheduler]:
    """Class decorator adding a scheduler to the registry under ``cls.name``."""
    if not cls.name or cls.name in _REGISTRY:
        raise ValueError(f"scheduler name {cls.name!r} is empty or taken")
    _REGISTRY[cls.name] = cls
    return cls


def registered() -> dict[str, type[Scheduler]]:
    """Return the registered scheduler classes by name, sorted by name."""
    return dict(sorted(_REGISTRY.items()))


def make_scheduler(name: str, params: Mapping[str, Any] | None = None,
                   source: str = "scheduler") -> Scheduler:
    """Instantiate a registered scheduler.

    Raises:
        GeosimError: Unknown name or bad parameters (one line naming them).
    """
    cls = _REGISTRY.get(name)
    if cls is None:
        raise GeosimError(f"unknown scheduler {name!r} (known: {', '.join(registered())})",
                          source=source, key="scheduler.name")
    for key, value in dict(params or {}).items():
        if isinstance(value, float) and math.isnan(value):
            raise GeosimError(f"{name}: {key} must not be NaN", source=source,
                              key="scheduler.params")
    try:
        return cls(**dict(params or {}))
    except TypeError as exc:
        msg = str(exc).split("__init__() ")[-1]
        raise GeosimError(f"{name}: {msg}", source=source, key="scheduler.params") from None
    except ValueError as exc:
        raise GeosimError(f"{name}: {exc}", source=source, key="scheduler.params") from None
