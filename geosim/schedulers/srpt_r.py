"""SRPT+R: shortest remaining processing time with redundancy (002 §4.1, Algorithm 1)."""

from __future__ import annotations

import numpy as np

from geosim.schedulers.pool import PoolPolicy, split_machines
from geosim.schedulers.registry import register
from geosim.view import SchedulerView


def srpt_r_machines(n: int, machines: int) -> np.ndarray:
    """Machines per job, jobs sorted by remaining work (002 Algorithm 1).

    ``n >= M``: the ``M`` jobs with least remaining work get one machine each, the others
    wait. ``n < M``: job 1 gets ``M - (n - 1) * floor(M / n)`` machines, the others
    ``floor(M / n)`` each.
    """
    if n >= machines:
        return (np.arange(n) < machines).astype(np.int64)
    return split_machines(n, machines, first=0)


@register
class SRPTR(PoolPolicy):
    """SRPT+R (002 §4.1, Algorithm 1): SRPT that fills idle machines with redundant copies.

    At every arrival or departure, jobs are sorted by remaining work ``p_j(t)`` (ties by
    arrival) and every job is checkpointed. With ``n(t) >= M`` the ``M`` smallest jobs run
    on one machine each and the rest wait; with ``n(t) < M`` the smallest job runs on
    ``M - (n(t) - 1) floor(M / n(t))`` machines and every other job on ``floor(M / n(t))``,
    so redundancy is used only when there are fewer jobs than machines. Remaining work is
    known (the paper's clairvoyant setting). Without service variability the copies buy
    nothing and SRPT+R behaves as SRPT (002 Remark 4).

    Machines are all slots of all reachable clusters; see :mod:`geosim.schedulers.pool`
    for decision points, DAG jobs and the choice of machines.

    Args:
        reassign: ``"keep"`` (default: a job keeps its machines; only missing copies are
            drawn at random) or ``"random"`` (all copies re-drawn at every decision).
        max_copies: Cap on the copies of one task (default: none, as in the paper).
    """

    name = "srpt+r"
    description = "002 Alg. 1: SRPT, idle machines run redundant copies, checkpoints at events"

    def allocate(self, view: SchedulerView, jobs: np.ndarray,
                 machines: int) -> tuple[np.ndarray, np.ndarray, float]:
        """Sort by remaining work; split machines as Algorithm 1 does."""
        order = jobs[np.argsort(view.remaining_work(jobs), kind="stable")]
        return order, srpt_r_machines(order.size, machines), 1.0
