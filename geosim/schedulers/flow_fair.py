"""004's Fair: every ready MapReduce job of every flow gets an equal share of the slots."""

from __future__ import annotations

import numpy as np

from geosim.schedulers.base import Scheduler
from geosim.schedulers.fair import waterfill
from geosim.schedulers.placement import launch_from_stages
from geosim.schedulers.registry import register
from geosim.view import Actions, SchedulerView


@register
class FlowFair(Scheduler):
    """Fair sharing among ready malleable jobs (004 §3's Fair), not among flows.

    The unit of sharing is a stage whose predecessors are done (in a flow of MapReduce
    jobs, a ready MapReduce job): the reachable slots are split max-min fairly among them,
    each asking for at most its cap ``δ`` and its unfinished bricks (:func:`waterfill`);
    stages furthest below their share start bricks first. Bricks are not preempted, so a
    stage above its share gives slots back as its bricks end, and slots no stage below its
    share can use go to the other stages with ready bricks (work conserving). 004's Fair is
    the continuous version of this rule (:func:`geosim.flowflex.fair_schedule`); with bricks
    no longer than a slot the two agree up to rounding the shares to whole slots. The plain
    ``fair`` scheduler shares among jobs (flows) instead; ``fifo`` is already 004's FIFO on
    capped stages (oldest flow first, its stages in order, each up to its cap).
    """

    name = "flow-fair"
    description = "004's Fair: equal slot shares among ready stages (malleable jobs), capped"

    def decide(self, view: SchedulerView, actions: Actions) -> None:
        """Fill free slots towards the max-min fair shares of the ready stages."""
        slots = view.total_slots
        if view.alive_jobs.size == 0 or slots == 0 or not view.n_ready:
            return
        g = view.stage_groups(view.alive_jobs)
        active = np.flatnonzero(g["open"] & (g["left"] > 0))
        cap = np.where(g["cap"] > 0, g["cap"], slots)[active]
        share = waterfill(slots, np.minimum(cap, g["left"][active]))
        running, ready = g["running"][active], g["ready"][active]
        want = np.clip(share - running, 0, ready)
        order = np.lexsort((np.arange(active.size), running / np.maximum(share, 1)))
        lo, hi = g["lo"][active][order], g["hi"][active][order]
        launched = launch_from_stages(view, actions, lo, hi, want[order])
        if launched == int(want.sum()):
            launch_from_stages(view, actions, lo, hi, (ready - want)[order])
