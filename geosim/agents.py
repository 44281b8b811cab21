"""Mesa agents: clusters, WAN links, alive jobs and the scheduler.

Agents own identity, parameters and the behaviour that is naturally per entity; the
per-task state they refer to lives in the engine's arrays, so no agent loops over
tasks. Only the :class:`SchedulerAgent` acts every step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import mesa
import numpy as np

from geosim.topology import TIERS

if TYPE_CHECKING:
    from geosim.model import GeoModel
    from geosim.schedulers import Scheduler


class ClusterAgent(mesa.Agent):
    """One cluster (a node of the topology): its slots, gate and reachability."""

    def __init__(self, model: GeoModel, index: int):
        super().__init__(model)
        self.index = index

    @property
    def tier(self) -> str:
        """``"large"``, ``"medium"`` or ``"small"``."""
        return TIERS[int(self.model.world.tier[self.index])]

    @property
    def n_slots(self) -> int:
        """Number of slots (VMs)."""
        return int(self.model.world.slots[self.index])

    @property
    def gate(self) -> float:
        """Ingress and egress gate bandwidth (MB/s)."""
        return float(self.model.world.gate[self.index])

    @property
    def reachable(self) -> bool:
        """Whether the cluster is reachable now."""
        return bool(self.model.engine.reachable[self.index])

    @property
    def busy(self) -> float:
        """Slot shares in use (busy slots, counting fractional shares)."""
        lo, hi = self.model.world.slot_ptr[self.index: self.index + 2]
        return float(self.model.engine.slot_used[lo:hi].sum())


class LinkAgent(mesa.Agent):
    """One WAN link (an edge of the topology) and its current bandwidth."""

    def __init__(self, model: GeoModel, index: int):
        super().__init__(model)
        self.index = index
        self.ends = (int(model.world.link_u[index]), int(model.world.link_v[index]))

    @property
    def bandwidth(self) -> float:
        """Current bandwidth in each direction (MB/s)."""
        return float(self.model.world.link_bw.level[self.index])


class JobAgent(mesa.Agent):
    """An alive job: created at its arrival, removed at its completion."""

    def __init__(self, model: GeoModel, job: int):
        super().__init__(model)
        self.job = job
        wl = model.workload
        self.arrival = float(wl.arrival[job])
        self.tasks = np.arange(wl.task_ptr[job], wl.task_ptr[job + 1])

    @property
    def unfinished(self) -> int:
        """Tasks not yet completed."""
        return int(self.model.engine.job_left[self.job])


class SchedulerAgent(mesa.Agent):
    """Runs the scheduling policy at every slot boundary."""

    def __init__(self, model: GeoModel, policy: Scheduler):
        super().__init__(model)
        self.policy = policy

    def step(self) -> None:
        """Let the policy act on the current view."""
        self.policy.decide(self.model.view, self.model.actions)
