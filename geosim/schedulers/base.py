"""The scheduler contract: what a scheduling policy is and what it is given.

A scheduler is a small class: its parameters are keyword arguments of ``__init__``,
stored as given, declared in :attr:`Scheduler.params` (a :class:`~geosim.params.Field` per
parameter: default, kind, bounds, choices) and validated against the declarations by
:meth:`Scheduler.validate_params` at the top of ``__init__`` (raising ``ValueError``);
:meth:`Scheduler.decide` turns the read-only view into actions once per time slot.
Register it with :func:`geosim.schedulers.registry.register` so scenarios and the
command line can name it; the common conformance suite (``tests/test_conformance.py``)
then runs it automatically.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from geosim.params import Field, check_value
from geosim.view import Actions, SchedulerView


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
        self._seen_version = -1
        self.reach_changed = False

    def at_event(self, view: SchedulerView) -> bool:
        """Whether this boundary is a decision point: the one rule of event-driven policies.

        A boundary is a decision point after a job arrival, a task completion or a copy
        lost to an outage, and when the set of reachable clusters (hence the reachable
        slots) differs from the one the previous call saw: an outage's start or end, with
        or without anything else happening then. The first call is a decision point.

        Call it once per boundary the policy is asked to decide at: it remembers the
        reachable clusters, and sets :attr:`reach_changed` for policies that also act on
        that change alone (FlowFlex replans then).
        """
        version, seen = view.reach_version, self._seen_reachable
        if seen is not None and version == self._seen_version:
            self.reach_changed = False      # the same set as at the last call
        else:
            reach = view.reachable
            self.reach_changed = seen is None or not np.array_equal(reach, seen)
            if self.reach_changed:
                self._seen_reachable = np.array(reach, dtype=bool)
        self._seen_version = version
        return bool(view.arrivals or view.completions or view.failures or self.reach_changed)

    def decide(self, view: SchedulerView, actions: Actions) -> None:
        """Act at the current slot boundary."""
        raise NotImplementedError

    def place_data(self, view: SchedulerView, actions: Actions) -> None:
        """Move raw input of the jobs in ``view.announced`` (only if :attr:`places_data`)."""

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"
