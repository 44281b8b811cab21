"""Mesa agents: clusters, WAN links, alive jobs and the scheduler.

Agents own identity and parameters; their state is the engine's, read through
:mod:`geosim.state` by properties (each indexes the vectorised reading of every cluster,
link or job, so a quantity has one definition), so what an agent says is the truth now
and no agent loops over tasks. Only the :class:`SchedulerAgent` acts every step.
"""

from __future__ import annotations

import itertools
import weakref
from typing import TYPE_CHECKING

import mesa
import numpy as np

from geosim import state
from geosim.topology import TIERS

if TYPE_CHECKING:
    from geosim.schedulers import Scheduler


class _PerModelIds(weakref.WeakKeyDictionary):
    """Mesa 3.3's per-model ``unique_id`` counters, holding their models weakly."""

    def __getitem__(self, model: mesa.Model) -> itertools.count:
        try:
            return super().__getitem__(model)
        except KeyError:
            self[model] = counter = itertools.count(1)
            return counter


class GeoAgent(mesa.Agent):
    """Base of geosim's agents.

    Mesa 3.3 (the last Mesa for Python 3.11) numbers agents from a class-level dict keyed
    by model, so every model that ever made an agent stayed in memory: a worker process
    of ``geosim compare`` kept all its runs' engines, about 150 MiB per 200-job run
    (mesa#3179, fixed in Mesa 3.4). geosim's agents keep those counters in a dict that
    does not keep the model alive; Mesa 3.4+ does not use it.
    """

    if hasattr(mesa.Agent, "_ids"):
        _ids = _PerModelIds()


class ClusterAgent(GeoAgent):
    """One cluster (a node of the topology): its slots, gate and reachability.

    Every property reads the engine's state now (through :mod:`geosim.state`), so Mesa's
    agent sets select on the truth, e.g.
    ``model.agents_by_type[ClusterAgent].select(lambda c: not c.reachable)``.
    """

    def __init__(self, model: mesa.Model, index: int):
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
        return bool(state.reachable(self.model.engine)[self.index])

    @property
    def available_slots(self) -> int:
        """Slots in their available phase now."""
        return int(state.available_slots(self.model.world)[self.index])

    @property
    def state(self) -> str:
        """``"available"``, ``"degraded"`` or ``"unreachable"`` (see :mod:`geosim.state`)."""
        return state.CLUSTER_STATES[int(state.cluster_states(self.model.engine)[self.index])]

    @property
    def busy(self) -> float:
        """Slot shares in use (busy slots, counting fractional shares)."""
        return float(state.busy_slots(self.model.engine)[self.index])

    @property
    def copies(self) -> int:
        """Copies running on the cluster now."""
        return int(state.running_copies(self.model.engine)[self.index])

    @property
    def queue(self) -> int:
        """Ready tasks without a live copy whose input lies mostly here."""
        return int(state.queues(self.model.engine)[self.index])

    @property
    def egress_rate(self) -> float:
        """Traffic out through the gate over the last slot (MB/s)."""
        return float(state.gate_rates(self.model.engine)[0][self.index])

    @property
    def ingress_rate(self) -> float:
        """Traffic in through the gate over the last slot (MB/s)."""
        return float(state.gate_rates(self.model.engine)[1][self.index])


class LinkAgent(GeoAgent):
    """One WAN link (an edge of the topology) and its current bandwidth."""

    def __init__(self, model: mesa.Model, index: int):
        super().__init__(model)
        self.index = index
        self.ends = (int(model.world.link_u[index]), int(model.world.link_v[index]))

    @property
    def bandwidth(self) -> float:
        """Current bandwidth in each direction (MB/s)."""
        return float(state.link_bandwidth(self.model.world)[self.index])

    @property
    def traffic_mb(self) -> tuple[float, float]:
        """MB sent over the link since the last sample, ``(u→v, v→u)``."""
        forward, backward = state.link_traffic_mb(self.model.engine)
        return float(forward[self.index]), float(backward[self.index])


class JobAgent(GeoAgent):
    """An alive job: created at its arrival, removed at its completion."""

    def __init__(self, model: mesa.Model, job: int):
        super().__init__(model)
        self.job = job
        wl = model.workload
        self.arrival = float(wl.arrival[job])
        self.tasks = np.arange(wl.task_ptr[job], wl.task_ptr[job + 1])

    def remove(self) -> None:
        """Leave the model at the job's completion; its flowtime goes to the collector.

        Mesa's way for an agent to report when it is removed (one call per job), so the
        mean flowtime of finished jobs costs nothing per step.
        """
        self.model.datacollector.job_finished(self.job)
        super().remove()

    @property
    def unfinished(self) -> int:
        """Tasks not yet completed."""
        return int(state.tasks_left(self.model.engine, np.array([self.job]))[0])

    @property
    def progress(self) -> float:
        """Fraction of the job's work done (finished tasks, checkpoints, live copies)."""
        return float(state.job_progress(self.model.engine, np.array([self.job]))[0])

    @property
    def running(self) -> int:
        """Copies of the job's tasks running now."""
        return int(state.job_copies(self.model.engine, np.array([self.job]))[0])

    @property
    def age(self) -> float:
        """Seconds since the job arrived."""
        return self.model.engine.time - self.arrival

    @property
    def task_states(self) -> np.ndarray:
        """State of each of its tasks: 0 waiting, 1 ready, 2 running, 3 done."""
        return state.task_states(self.model.engine, self.tasks)


class SchedulerAgent(GeoAgent):
    """Runs the scheduling policy at every slot boundary."""

    def __init__(self, model: mesa.Model, policy: Scheduler):
        super().__init__(model)
        self.policy = policy

    def step(self) -> None:
        """Let the policy act on the current view."""
        self.policy.decide(self.model.view, self.model.actions)
