"""SRPT: the job with the least remaining work first."""

from __future__ import annotations

import numpy as np

from geosim.params import Field
from geosim.schedulers.base import Scheduler
from geosim.schedulers.placement import fill_in_order
from geosim.schedulers.registry import register
from geosim.view import Actions, SchedulerView


@register
class SRPT(Scheduler):
    """Shortest remaining processing time first, one copy per task, locality placement.

    Jobs are ranked by remaining work (unfinished tasks' work, net of checkpointed and
    live progress; ties by arrival). Each job may use one slot per runnable task; slots
    go to jobs in rank order.

    With ``preemptive=True`` (the SRPT of 002 §6), at every arrival or departure the
    copies of jobs that fall outside the slots' reach are preempted: their job is
    checkpointed first (002 Assumption 1 allows checkpoints at arrivals and
    departures), so a preempted task later resumes where it stopped. With
    ``preemptive=False`` running copies are never stopped and SRPT only orders the queue.

    Args:
        preemptive: Whether higher-ranked jobs take slots from running lower-ranked ones.
    """

    name = "srpt"
    description = "least remaining work first, checkpointed preemption, locality placement"
    event_driven = True     # ranks change only at decision points (at_event)
    params = {"preemptive": Field(True, "bool", doc="higher-ranked jobs take slots from "
                                  "running lower-ranked ones (checkpointed)")}

    def __init__(self, preemptive: bool = True):
        self.validate_params(preemptive=preemptive)
        self.preemptive = preemptive

    def decide(self, view: SchedulerView, actions: Actions) -> None:
        """Rank jobs by remaining work; preempt if allowed; fill free slots in rank order."""
        jobs = view.alive_jobs
        event = self.at_event(view)
        if jobs.size == 0 or not (view.n_ready or (self.preemptive and event)):
            return
        order = jobs[np.argsort(view.remaining_work(jobs), kind="stable")]
        if self.preemptive and event:
            self._preempt(view, actions, order)
        fill_in_order(view, actions, order)

    @staticmethod
    def _preempt(view: SchedulerView, actions: Actions, order: np.ndarray) -> None:
        info = view.copy_info()
        if info["copy"].size == 0:
            return
        demand = view.runnable_counts(order)
        allowed = np.clip(view.total_slots - (np.cumsum(demand) - demand), 0, demand)
        running = np.bincount(info["job"], minlength=len(view.job_arrival))[order]
        victims = []
        for job, extra in zip(order[running > allowed], (running - allowed)[running > allowed],
                              strict=True):
            mine = np.flatnonzero(info["job"] == job)
            victims.append(mine[np.argsort(info["progress"][mine], kind="stable")][:extra])
        if victims:
            actions.preempt(info["copy"][np.concatenate(victims)])
