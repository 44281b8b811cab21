"""Fair+R: fair sharing with redundancy and multitasking (002 §5.1, Algorithm 2)."""

from __future__ import annotations

import numpy as np

from geosim.schedulers.pool import PoolPolicy, split_machines
from geosim.schedulers.registry import register
from geosim.view import SchedulerView


def fair_r_allocation(n: int, machines: int) -> tuple[np.ndarray, float]:
    """Machines per job (jobs in arrival order) and the share, as Algorithm 2 sets them.

    With ``n = kM + l >= M`` the ``kM`` most recent arrivals get one machine each at share
    ``1/k`` (every machine runs ``k`` jobs) and the ``l`` oldest wait; with ``n < M`` the
    latest arrival gets ``M - (n - 1) floor(M / n)`` machines, the others ``floor(M / n)``,
    at share 1.
    """
    if n >= machines:
        k, oldest = divmod(n, machines)
        return (np.arange(n) >= oldest).astype(np.int64), 1.0 / k
    return split_machines(n, machines, first=n - 1), 1.0


@register
class FairR(PoolPolicy):
    """Fair+R (002 §5.1, Algorithm 2): near-equal sharing, latest arrivals first.

    At every arrival or departure all jobs are checkpointed and, with ``n(t) = kM + l``:
    if ``n(t) >= M``, the ``kM`` most recently arrived jobs run on one machine each with a
    resource share of ``1/k`` (each machine multitasks ``k`` jobs) while the ``l`` oldest
    wait, exactly as the pseudo-code says; if ``n(t) < M``, the latest arrival runs on
    ``M - (n(t) - 1) floor(M / n(t))`` machines and every other job on ``floor(M / n(t))``,
    without multitasking. The policy is non-clairvoyant (it never reads job sizes).

    Machines are all slots of all reachable clusters; see :mod:`geosim.schedulers.pool`.

    Args:
        reassign: ``"keep"`` (default) or ``"random"``; see :mod:`geosim.schedulers.pool`.
        max_copies: Cap on the copies of one task (default: none, as in the paper).
    """

    name = "fair+r"
    description = "002 Alg. 2: equal shares, latest arrivals first, redundancy below M jobs"

    def allocate(self, view: SchedulerView, jobs: np.ndarray,
                 machines: int) -> tuple[np.ndarray, np.ndarray, float]:
        """Algorithm 2's machines and share for jobs in arrival order."""
        counts, share = fair_r_allocation(jobs.size, machines)
        return jobs, counts, share
