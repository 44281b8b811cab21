"""Fair: equal slot shares among alive jobs."""

from __future__ import annotations

import math

import numpy as np

from geosim.jit import njit
from geosim.params import Field
from geosim.schedulers.base import Scheduler
from geosim.schedulers.placement import fill_in_order
from geosim.schedulers.registry import register
from geosim.view import Actions, SchedulerView, rank_in_runs


def waterfill(capacity: int, demand: np.ndarray) -> np.ndarray:
    """Max-min fair integer split of ``capacity`` units among demands.

    Jobs with the smallest demands are served first; what they do not use is shared
    among the others, so no job gets more than it asks and none gets less than an equal
    share unless it asks for less. A fractional demand counts as its integer part.
    """
    return _waterfill(int(capacity), np.asarray(demand, dtype=np.float64))


@njit(cache=True)
def _waterfill(capacity, demand):  # pragma: no cover - compiled
    """:func:`waterfill`: demands served in ascending order (stable), each its fair share."""
    n = demand.size
    target = np.zeros(n, dtype=np.int64)
    remaining = capacity
    order = np.argsort(demand, kind="mergesort")        # stable
    for i in range(n):
        j = order[i]
        target[j] = min(int(demand[j]), remaining // (n - i))
        remaining -= target[j]
    return target


@register
class Fair(Scheduler):
    """Fair sharing: each alive job gets an equal share of the slots (max-min by demand).

    Each job's target is its max-min fair share of the reachable slots given how many
    tasks it can run; jobs furthest below target launch first, locality first. Running
    copies are not preempted to rebalance (Hadoop's Fair Scheduler without preemption).

    With ``multitasking=True`` (002 §5), when there are more alive jobs ``n`` than slots
    ``M``, every slot is shared by up to ``k = ceil(n / M)`` copies at share ``1/k``, so
    every job runs; when ``k`` changes at an arrival or departure, shares are reset and
    copies on slots holding more than ``k`` are checkpointed and moved. On one slot this
    is processor sharing.

    Args:
        multitasking: Whether slots may be shared fractionally among copies.
    """

    name = "fair"
    description = "equal slot shares among alive jobs (optionally multitasking), locality"
    event_driven = True     # shares change only at decision points (at_event)
    params = {"multitasking": Field(False, "bool", doc="share slots fractionally among "
                                    "copies when jobs outnumber slots (002 §5)")}

    def __init__(self, multitasking: bool = False):
        self.validate_params(multitasking=multitasking)
        self.multitasking = multitasking

    def decide(self, view: SchedulerView, actions: Actions) -> None:
        """Rebalance shares if multitasking, then fill slots towards fair targets."""
        jobs = view.alive_jobs
        event = self.at_event(view)
        slots = view.total_slots
        if jobs.size == 0 or slots == 0 or not (view.n_ready or event):
            return
        k = math.ceil(jobs.size / slots) if self.multitasking else 1
        if self.multitasking and event:
            self._reshare(view, actions, k)
        running = view.running_copies(jobs)
        demand = view.runnable_counts(jobs)
        target = waterfill(slots * k, demand)
        deficit = target - running
        order = np.lexsort((np.arange(jobs.size), running / np.maximum(target, 1)))
        order = order[deficit[order] > 0]
        if order.size:
            fill_in_order(view, actions, jobs[order], limits=deficit[order], share=1.0 / k)

    @staticmethod
    def _reshare(view: SchedulerView, actions: Actions, k: int) -> None:
        info = view.copy_info()
        if info["copy"].size == 0:
            return
        share = 1.0 / k
        order = np.lexsort((info["copy"], info["slot"]))   # per slot, oldest first
        slot_sorted = info["slot"][order]
        rank = rank_in_runs(slot_sorted)
        moving = np.zeros(order.size, dtype=bool)
        moving[order[rank >= k]] = True
        if moving.any():
            actions.preempt(info["copy"][moving])
        resize = ~moving & (info["share"] != share)
        if resize.any():
            actions.set_share(info["copy"][resize], share)
