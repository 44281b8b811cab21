"""000's offline Algorithm 1: jobs by ``w / phi``, no cloning (000 §IV).

The bound-carrying baseline of 000: with every job present at time 0 and no task
variance, each job finishes within ``E_i^r + f_i^s / M`` (Theorem 1, Remark 2), so the
algorithm is 2-competitive. Run online, it ranks the alive jobs by ``w_i / phi_i``, with
``phi_i = sum_t (E_t + r sigma_t)`` over all the job's tasks (eq. 2, fixed at arrival),
and whenever machines are free the highest-priority job with an unscheduled task gets
them, one copy per task, map tasks before reduce tasks, tasks chosen at random. Running
copies are never preempted.

Departure from the printed algorithm: 000 lets a reduce task be scheduled (hold a
machine without progress) before its job's map phase ends; geosim's engine starts a
reduce task only once its map phase is done, so a machine goes to the next job instead
of waiting. It never makes a job finish later than holding the machine would.
"""

from __future__ import annotations

import numpy as np

from geosim.schedulers.base import Scheduler
from geosim.schedulers.registry import register
from geosim.schedulers.srptms_c import R_FIELD, effective_work, launch_on_random_slots
from geosim.view import Actions, SchedulerView


@register
class SRPTMSOffline(Scheduler):
    """000 Algorithm 1 run online: highest ``w / phi`` first, one copy per task, no preemption.

    Args:
        r: Multiplier of a task's standard deviation in the effective workload (>= 0).
    """

    event_driven = True
    name = "srptms-offline"
    description = "000's Algorithm 1: jobs by weight over effective workload, no cloning"
    params = {"r": R_FIELD}

    def __init__(self, r: float = 3.0):
        self.validate_params(r=r)
        self.r = float(r)

    def reset(self, view: SchedulerView, rng: np.random.Generator) -> None:
        """Compute every job's priority ``w / phi`` once (it does not change)."""
        super().reset(view, rng)
        phi = np.add.reduceat(effective_work(view, np.arange(view.task_work.size), self.r),
                              view.job_task_ptr[:-1]) if view.task_work.size else np.empty(0)
        empty = np.diff(view.job_task_ptr) == 0
        phi[empty] = np.inf
        self._priority = view.job_weight / phi

    def decide(self, view: SchedulerView, actions: Actions) -> None:
        """Fill free machines with the ready tasks of the highest-priority jobs."""
        jobs = view.alive_jobs
        if not self.at_event(view) or jobs.size == 0 or view.n_ready == 0:
            return
        free = int(view.free_slots().sum())
        if free == 0:
            return
        order = jobs[np.lexsort((jobs, -self._priority[jobs]))]
        tasks, pos = view.ready_in_order(order)
        if tasks.size > free:
            # Jobs in priority order, each job's tasks in random order: the first ``free``
            # are every task of the jobs served whole and a random subset of the last.
            tasks = tasks[np.lexsort((self.rng.random(tasks.size), pos))][:free]
        launch_on_random_slots(view, actions, self.rng, tasks)
