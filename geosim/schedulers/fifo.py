"""FIFO: jobs in arrival order, each task on one slot, locality-first placement."""

from __future__ import annotations

from geosim.schedulers.base import Scheduler
from geosim.schedulers.placement import fill_in_order
from geosim.schedulers.registry import register
from geosim.view import Actions, SchedulerView


@register
class FIFO(Scheduler):
    """First in, first out: the earliest-arrived job takes every free slot it can use.

    Non-preemptive and without redundancy: ready tasks of the oldest alive job are
    placed first (locality first, :mod:`geosim.schedulers.placement`), then those of
    the next job, and so on. On one cluster with single-task jobs this is the M/G/c
    FIFO queue.
    """

    name = "fifo"
    description = "first come first served, one copy per task, locality-first placement"
    event_driven = True     # free slots and ready tasks change only at decision points

    def decide(self, view: SchedulerView, actions: Actions) -> None:
        """At a decision point (:meth:`at_event`), fill free slots in arrival order."""
        if self.at_event(view) and view.n_ready:
            fill_in_order(view, actions, view.alive_jobs)
