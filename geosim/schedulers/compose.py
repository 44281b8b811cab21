"""Composite schedulers: a job order, a placement rule and a redundancy rule.

The baselines of 003 §6.1 are built from parts: ``flutter+mantri`` is Flutter's
placement with Mantri's speculation, ``dolly`` is Dolly's cloning on locality placement.
A part is a small class like a scheduler: parameters as keyword arguments of
``__init__``, declared in :attr:`Part.params` and validated there (raising ``ValueError``),
per-run state in :meth:`Part.prepare` (a scheduler's :meth:`reset` prepares its parts).

- A :class:`Placement` says where ready tasks run (:meth:`Placement.place`).
- A :class:`Redundancy` says how many copies a ready task starts with
  (:meth:`Redundancy.clones`, Dolly) and, once the primary copies are placed, which
  running tasks get more copies or are restarted (:meth:`Redundancy.act`, Mantri, LATE,
  Spark speculation).

:func:`composite` builds a registered scheduler from a placement, a redundancy rule and
a job order; its parameters are the union of the parts' parameters plus ``order``, and so
are its declarations (:attr:`Composite.params`).
At every slot boundary a :class:`Composite`:

1. refreshes the performance model (observed distributions, :mod:`geosim.modeler`)
   that every part may read;
2. orders the alive jobs (``fifo``: by arrival, Spark's and Hadoop's default;
   ``fair``: jobs furthest below their max-min fair share of the slots first, each
   capped at its deficit, as :class:`~geosim.schedulers.fair.Fair` does);
3. takes their ready tasks in that order, repeats each as often as
   :meth:`Redundancy.clones` says, cuts the list at the number of free slots and asks the
   placement for a cluster for each (``-1``: the copy waits);
4. lets the redundancy rule act on the running copies with the slots left over, placing
   any new copy through the same placement rule.

A placement may also move raw input before jobs arrive (:meth:`Placement.place_data`,
Iridium's data placement) when the scenario's ``workload.data_lag`` gives it time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from geosim.modeler import PerformanceModel
from geosim.params import Field
from geosim.schedulers.base import Parametrised, Scheduler
from geosim.schedulers.fair import waterfill
from geosim.schedulers.placement import locality_clusters
from geosim.schedulers.registry import register
from geosim.view import Actions, SchedulerView, rank_in_runs

#: Job orders of a composite scheduler.
ORDERS = ("fifo", "fair")

#: ``place(tasks) -> clusters``: the placement rule bound to the current free slots.
PlaceFn = Callable[[np.ndarray], np.ndarray]



def _order_field(default: str) -> Field:
    """The declaration of a composite's ``order``, with its default."""
    return Field(default, "str", choices=ORDERS, doc="job order: fifo or fair")


class Part(Parametrised):
    """A placement or redundancy rule: parameters in ``__init__``, state in :meth:`prepare`."""

    name: ClassVar[str] = ""

    def prepare(self, view: SchedulerView, rng: np.random.Generator,
              model: PerformanceModel) -> None:
        """Prepare for a new run.

        Args:
            view: The run's view.
            rng: The scheduler's random stream (shared by the parts, drawn in a fixed order).
            model: Observed distributions of speed, bandwidth and outages, refreshed by
                the composite before every decision.
        """
        self.rng, self.model = rng, model


class Placement(Part):
    """Where ready tasks run."""

    def place(self, view: SchedulerView, tasks: np.ndarray, free: np.ndarray) -> np.ndarray:
        """Choose a cluster for one new copy of each task.

        Args:
            view: The scheduler's view.
            tasks: Ready or running tasks in priority order; a task may appear several
                times (clones), and each occurrence is one copy.
            free: Free slots per cluster; decrement it for every copy placed.

        Returns:
            A cluster per entry of ``tasks``, ``-1`` for a copy that waits.
        """
        raise NotImplementedError


    #: Whether :meth:`place_data` moves raw input before jobs arrive.
    places_data: bool = False

    def place_data(self, view: SchedulerView, actions: Actions, jobs: np.ndarray) -> None:
        """Move raw input of ``jobs``, announced but not yet arrived (``actions.move_data``)."""


class Redundancy(Part):
    """When a task gets more than one copy. The default makes none."""

    def clones(self, view: SchedulerView, tasks: np.ndarray, pos: np.ndarray,
               jobs: np.ndarray) -> np.ndarray:
        """Copies each ready task starts with (1 = no clone).

        Args:
            view: The scheduler's view.
            tasks: Ready tasks without a live copy, grouped by job in priority order.
            pos: For each task, the position of its job in ``jobs``.
            jobs: The jobs, in priority order.
        """
        return np.ones(tasks.size, dtype=np.int64)

    def act(self, view: SchedulerView, actions: Actions, place: PlaceFn,
            free: np.ndarray) -> None:
        """Speculate, restart or kill running copies after the primary placement.

        Args:
            view: The scheduler's view (it already shows this boundary's launches).
            actions: Where kills and launches go.
            place: The placement rule on the free slots left: ``place(tasks)`` returns a
                cluster (or -1) per task and takes the slots it hands out from ``free``.
            free: Free slots per cluster left after the primary placement. A rule that
                places copies itself (Mantri's network-aware placement) must decrement
                it; slots freed by kills appear in ``view.free_slots()``.
        """


class NoRedundancy(Redundancy):
    """One copy per task, never speculated."""

    name = "none"


class Locality(Placement):
    """Locality-first placement (:func:`~geosim.schedulers.placement.locality_clusters`)."""

    name = "locality"

    def place(self, view: SchedulerView, tasks: np.ndarray, free: np.ndarray) -> np.ndarray:
        """Each copy at its data if a slot is free there, else the nearest free slot."""
        return locality_clusters(view, tasks, free)


class Composite(Scheduler):
    """A job order, a :class:`Placement` and a :class:`Redundancy`.

    Subclasses are made by :func:`composite`; see the module documentation for the step.
    A subclass's :attr:`params` are ``order`` and its parts' declarations.

    Args:
        order: ``fifo`` or ``fair`` (see :data:`ORDERS`).
        **values: Parameters of the placement and of the redundancy rule.
    """

    placement_cls: ClassVar[type[Placement]] = Locality
    redundancy_cls: ClassVar[type[Redundancy]] = NoRedundancy
    default_order: ClassVar[str] = "fifo"
    params: ClassVar[Mapping[str, Field]] = {"order": _order_field("fifo")}
    #: Performance-model settings of the observed distributions the parts read.
    model_refresh: ClassVar[float] = 30.0

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.params = {"order": _order_field(cls.default_order), **cls.placement_cls.params,
                      **cls.redundancy_cls.params}

    def __init__(self, **values: Any):
        order = values.pop("order", self.default_order)
        self.validate_params(order=order)
        self.order = order
        self.placement = self.placement_cls(**_pick(self.placement_cls, values))
        self.redundancy = self.redundancy_cls(**_pick(self.redundancy_cls, values))
        if values:
            raise ValueError(f"unknown parameter {sorted(values)[0]!r} "
                             f"(known: {', '.join(sorted(self.param_names()))})")

    @classmethod
    def param_names(cls) -> list[str]:
        """``order``, then the parameters of the placement and of the redundancy rule."""
        return ["order", *cls.placement_cls.param_names(), *cls.redundancy_cls.param_names()]

    def parts(self) -> tuple[Parametrised, ...]:
        """The placement and the redundancy rule, which hold their own parameters."""
        return (self.placement, self.redundancy)

    @property
    def places_data(self) -> bool:  # type: ignore[override]
        """Whether the placement moves raw input before jobs arrive."""
        return self.placement.places_data

    def place_data(self, view: SchedulerView, actions: Actions) -> None:
        """Let the placement move the raw input of the jobs just announced."""
        self.model.refresh(view.time)
        self.placement.place_data(view, actions, view.announced)

    def reset(self, view: SchedulerView, rng: np.random.Generator) -> None:
        """Start a fresh performance model and reset the parts."""
        super().reset(view, rng)
        self.model = PerformanceModel(view.monitor, np.asarray(view.gate), view.dt,
                                      refresh=self.model_refresh)
        self.placement.prepare(view, rng, self.model)
        self.redundancy.prepare(view, rng, self.model)

    def decide(self, view: SchedulerView, actions: Actions) -> None:
        """Order jobs, place their ready tasks (with clones), then let redundancy act."""
        if view.alive_jobs.size == 0:
            return
        self.model.refresh(view.time)
        free = view.free_slots()
        if view.n_ready and free.any():
            jobs, limits = self.job_order(view)
            tasks, pos = view.ready_in_order(jobs)
            if limits is not None and tasks.size:
                keep = rank_in_runs(pos) < limits[pos]
                tasks, pos = tasks[keep], pos[keep]
            copies = self.redundancy.clones(view, tasks, pos, jobs)
            tasks = np.repeat(tasks, copies)[: int(free.sum())]
            if tasks.size:
                clusters = self.placement.place(view, tasks, free)
                ok = clusters >= 0
                actions.launch_many(tasks[ok], clusters[ok])
        self.redundancy.act(view, actions, lambda t: self.placement.place(view, t, free), free)

    def job_order(self, view: SchedulerView) -> tuple[np.ndarray, np.ndarray | None]:
        """Alive jobs in priority order and, for ``fair``, the tasks each may start now."""
        jobs = view.alive_jobs
        if self.order == "fifo":
            return jobs[np.lexsort((jobs, view.job_arrival[jobs]))], None
        running = view.running_copies(jobs)
        target = waterfill(view.total_slots, view.runnable_counts(jobs))
        deficit = target - running
        order = np.lexsort((jobs, running / np.maximum(target, 1)))
        order = order[deficit[order] > 0]
        return jobs[order], deficit[order]


def composite(name: str, placement: type[Placement], redundancy: type[Redundancy],
              description: str, order: str = "fifo") -> type[Composite]:
    """Make and register a composite scheduler.

    Args:
        name: Registered name, e.g. ``"flutter+mantri"``.
        placement: The placement rule.
        redundancy: The redundancy rule.
        description: One line for ``geosim schedulers``.
        order: Default job order.
    """
    doc = (f"{description}.\n\n    Placement: {placement.__name__} "
           f"(``{placement.name}``); redundancy: {redundancy.__name__} "
           f"(``{redundancy.name}``); job order ``{order}`` by default. See "
           ":mod:`geosim.schedulers.compose`.\n")
    cls = type(_class_name(name), (Composite,), {
        "name": name, "description": description, "__doc__": doc,
        "placement_cls": placement, "redundancy_cls": redundancy, "default_order": order,
        "__module__": __name__})
    return register(cls)


def _pick(cls: type[Part], values: dict[str, Any]) -> dict[str, Any]:
    """Remove and return the entries of ``values`` that ``cls`` takes."""
    return {k: values.pop(k) for k in cls.param_names() if k in values}


def _class_name(name: str) -> str:
    return "".join(p.capitalize() for p in name.replace("+", " ").split()) or "Composite"
