"""LAPS(β) and LAPS+R(β): latest-arrival processor sharing (002 §5.3, Algorithm 3)."""

from __future__ import annotations

import math

import numpy as np

from geosim.params import Field
from geosim.schedulers.pool import PoolPolicy, split_machines
from geosim.schedulers.registry import register
from geosim.view import SchedulerView


def laps_r_allocation(n: int, machines: int, beta: float) -> tuple[np.ndarray, float]:
    """Machines per job (jobs in arrival order) and the share, as Algorithm 3 sets them.

    Write ``beta * n = z M + alpha + gamma`` with integers ``z >= 0``, ``0 <= alpha < M``
    and ``0 <= gamma < 1``. If ``z >= 1``, jobs ``n - zM - alpha .. n - 1`` get one machine
    each and job ``n`` (the latest) gets ``M - alpha`` machines, all at share ``1/(z+1)``.
    If ``z = 0``, jobs ``n - alpha .. n - 1`` get ``floor(M / (alpha + 1))`` machines each
    and job ``n`` the remaining ``M - alpha floor(M / (alpha + 1))``, at share 1. Older
    jobs wait.
    """
    served = min(math.floor(beta * n + 1e-9), n - 1)     # z M + alpha
    z, alpha = divmod(served, machines)
    counts = np.zeros(n, dtype=np.int64)
    if z >= 1:
        counts[n - served - 1:n - 1] = 1
        counts[n - 1] = machines - alpha
        return counts, 1.0 / (z + 1)
    counts[n - alpha - 1:] = split_machines(alpha + 1, machines, first=alpha)
    return counts, 1.0


@register
class LAPSR(PoolPolicy):
    """LAPS+R(β) (002 §5.3, Algorithm 3): share among the β-fraction of latest arrivals.

    At every arrival or departure all jobs are checkpointed and only the ``βn(t)`` most
    recently arrived jobs are served (see :func:`laps_r_allocation`): when they are fewer
    than the machines, they split the machines (redundant copies, no multitasking); when
    ``βn(t) = zM + α + γ`` with ``z >= 1``, each runs on one machine at share ``1/(z+1)``
    and the latest arrival also takes the ``M - α`` machines left, at the same share.
    Jobs are ordered by arrival, oldest first (Algorithm 3's line 2 prints the order
    reversed; the text and lines 5-17 index the latest arrival as job ``n(t)``). The
    policy is non-clairvoyant.

    Machines are all slots of all reachable clusters; see :mod:`geosim.schedulers.pool`.

    Args:
        beta: Fraction of the alive jobs served, in (0, 1) as in the paper.
        reassign: ``"keep"`` (default) or ``"random"``; see :mod:`geosim.schedulers.pool`.
        max_copies: Cap on the copies of one task (default: none, as in the paper).
    """

    name = "laps+r"
    description = "002 Alg. 3: share among the latest beta-fraction of jobs, with redundancy"
    params = {"beta": Field(0.8, "float", lo=0, hi=1, lo_open=True, hi_open=True,
                            doc="fraction of the alive jobs served (latest arrivals)"),
              **PoolPolicy.params}

    def __init__(self, beta: float = 0.8, reassign: str = "keep",
                 max_copies: int | None = None):
        self.validate_params(beta=beta)
        self.beta = beta
        super().__init__(reassign=reassign, max_copies=max_copies)

    def allocate(self, view: SchedulerView, jobs: np.ndarray,
                 machines: int) -> tuple[np.ndarray, np.ndarray, float]:
        """Algorithm 3's machines and share for jobs in arrival order."""
        counts, share = laps_r_allocation(jobs.size, machines, self.beta)
        return jobs, counts, share


@register
class LAPS(LAPSR):
    """LAPS(β) without redundancy: LAPS+R(β)'s jobs and shares, one copy per task.

    The no-redundancy twin of :class:`LAPSR` (the LAPS of 002 §6, after Edmonds and
    Pruhs): the same ``βn(t)`` latest arrivals are served at the same share, but no task
    runs more than one copy, so a job uses at most one machine per runnable task.

    Args:
        beta: Fraction of the alive jobs served, in (0, 1).
        reassign: ``"keep"`` (default) or ``"random"``; see :mod:`geosim.schedulers.pool`.
    """

    name = "laps"
    description = "latest arrivals processor sharing over the beta-fraction, no redundancy"
    params = {k: f for k, f in LAPSR.params.items() if k != "max_copies"}   # always 1

    def __init__(self, beta: float = 0.8, reassign: str = "keep"):
        super().__init__(beta=beta, reassign=reassign, max_copies=1)
