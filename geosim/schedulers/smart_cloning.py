"""Smart Cloning (SCA), reconstructed from 000 §VI-A and Xu and Lau (INFOCOM 2015).

000 describes SCA as running, at the beginning of each slot, a convex program that sets
the number of copies of each task of the arriving jobs, then launching all copies at
once; its source describes it as maximising the overall system utility (the reduction
of job flowtime) for a lightly loaded cluster. Neither paper we have prints the
program, so this is a reconstruction, not the published program:

- The tasks considered are the unscheduled ready tasks at a slot boundary where
  something changed (the arriving jobs' map tasks, and tasks whose stage just became
  ready), taken in job arrival order.
- If they outnumber the free machines, cloning cannot pay (000 §IV, after [3]): the
  first ones in arrival order get one copy each.
- Otherwise every task gets one copy and the ``B`` spare machines are shared by the
  concave integer program

      max  sum_t  (w_j / n_j) (1 - 1 / s_t(c_t))  -  price * (c_t / s_t(c_t) - 1)
      s.t. sum_t (c_t - 1) <= B,   1 <= c_t <= max_copies,

  where ``n_j`` is the number of the job's tasks in the program, ``1 / s_t(c)`` is the
  expected minimum of ``c`` copies relative to one (000 §III-A's speedup; for Pareto
  copies ``s(c) = (c alpha - 1) / (c (alpha - 1))``), the first term the job's expected
  weighted flowtime reduction shared among its tasks (per unit of the task's mean, which
  cancels) and the second the expected extra machine time of the copies at ``price``
  per unit. Both terms are concave in ``c``, so marginal allocation (the ``B`` largest
  positive increments) is exact.

The program's ``price`` keeps SCA from giving every spare machine to the tasks of one
slot: 000 compares it in a cluster whose load leaves machines spare, and its source
trades flowtime against resource use. ``price = 0`` clones up to ``max_copies`` while
machines last.
"""

from __future__ import annotations

from math import inf

import numpy as np

from geosim.params import Field
from geosim.schedulers.base import Scheduler
from geosim.schedulers.registry import register
from geosim.schedulers.srptms_c import launch_on_random_slots
from geosim.variability import expected_min_factor
from geosim.view import Actions, SchedulerView


def clone_counts(weight: np.ndarray, share: np.ndarray, cv: np.ndarray, spare: int,
                 family: str = "pareto", price: float = 0.01,
                 max_copies: int = 8) -> np.ndarray:
    """Copies per task maximising SCA's (reconstructed) utility, exactly.

    Args:
        weight: The weight of each task's job.
        share: ``n_j``, the number of the job's tasks in the program, per task.
        cv: Coefficient of variation of each task's copies.
        spare: Machines beyond one per task (``B >= 0``).
        family: Family of the copies' work (:mod:`geosim.variability`).
        price: Weight of one expected machine time unit (per unit of task mean).
        max_copies: Cap on the copies of one task.

    Returns:
        ``c_t >= 1`` per task.
    """
    n = weight.size
    counts = np.ones(n, dtype=np.int64)
    if spare <= 0 or n == 0 or max_copies <= 1:
        return counts
    c = np.arange(1, max_copies + 1, dtype=np.float64)
    m = expected_min_factor(family, cv[:, None], c[None, :])      # (n, max_copies)
    utility = (weight / share)[:, None] * (1.0 - m) - price * (c[None, :] * m - 1.0)
    gain = np.diff(utility, axis=1)                              # increments c -> c + 1
    flat = gain.ravel()
    order = np.lexsort((np.arange(flat.size), -flat))
    take = order[: spare]
    take = take[flat[take] > 1e-12]
    np.add.at(counts, take // (max_copies - 1), 1)
    return counts


@register
class SmartCloning(Scheduler):
    """Smart Cloning (SCA) as reconstructed from 000 §VI-A (see the module docstring).

    Args:
        price: Utility cost of one expected unit of extra machine time (>= 0).
        max_copies: Most copies of one task (>= 1).
    """

    event_driven = True
    name = "sca"
    description = "Smart Cloning (reconstruction): copies per task from a concave program"
    params = {
        "price": Field(0.01, "float", lo=0, hi=inf, doc="utility cost of one expected unit "
                       "of extra machine time"),
        "max_copies": Field(8, "int", lo=1, hi=inf, doc="most copies of one task"),
    }

    def __init__(self, price: float = 0.01, max_copies: int = 8):
        self.validate_params(price=price, max_copies=max_copies)
        self.price, self.max_copies = float(price), max_copies

    def reset(self, view: SchedulerView, rng: np.random.Generator) -> None:
        """Learn the family of the copies' work (a property of the world)."""
        super().reset(view, rng)
        self._family = view.copy_variability

    def decide(self, view: SchedulerView, actions: Actions) -> None:
        """Clone the unscheduled ready tasks over the free machines and launch them."""
        jobs = view.alive_jobs
        if not self.at_event(view) or jobs.size == 0 or view.n_ready == 0:
            return
        free = int(view.free_slots().sum())
        if free == 0:
            return
        jobs = jobs[np.lexsort((jobs, view.job_arrival[jobs]))]
        tasks, pos = view.ready_in_order(jobs)
        if tasks.size >= free:
            launch_on_random_slots(view, actions, self.rng, tasks[:free])
            return
        share = np.bincount(pos, minlength=jobs.size)[pos]
        counts = clone_counts(view.job_weight[jobs[pos]].astype(np.float64), share,
                              view.task_cv[tasks], free - tasks.size, self._family,
                              self.price, self.max_copies)
        launch_on_random_slots(view, actions, self.rng, np.repeat(tasks, counts))
