"""Stage barriers and malleability caps: which tasks may become ready, and when.

Tasks of one job are ordered by stage, so a (job, stage) group is a contiguous range of
task ids. A stage depends on the previous one (a chain), or, for a job with stage edges,
on the stages its edges name. Each group counts its unfinished tasks and its unfinished
parent groups; each task of a group with parents has one pending barrier (memory linear
in tasks and stage edges). A capped group admits its tasks in order, at most ``cap`` of
them unfinished at once.
"""

from __future__ import annotations

import numpy as np

from geosim.engine.base import NO_INT, concat_ranges, pointers
from geosim.engine.records import Groups
from geosim.workload import Workload


class Stages:
    """The stage groups of a run and their counters.

    Args:
        wl: Every job of the run.
        pending: Unfinished parents per task; each task of a group with parent groups
            gets one more (its barrier), in place.

    Attributes:
        staged: Whether any job has more than one stage, stage edges or caps (else
            :attr:`groups` holds empty arrays and nothing here is called).
        capped: Whether any group has a malleability cap.
        groups: The groups' arrays (:class:`~geosim.engine.records.Groups`).
    """

    def __init__(self, wl: Workload, pending: np.ndarray):
        stage, job = wl.task_stage, wl.job_of_task
        self.capped = bool(np.any(wl.task_cap > 0))
        self.staged = bool(stage.size and (stage.max() > 0 or wl.stage_edge_job.size)) \
            or self.capped
        if not self.staged:
            self.groups = Groups(*([NO_INT] * len(Groups._fields)))
            return
        new = np.ones(stage.size, dtype=bool)
        new[1:] = (job[1:] != job[:-1]) | (stage[1:] != stage[:-1])
        group_of = np.cumsum(new) - 1
        starts = np.flatnonzero(new)
        group_ptr = np.append(starts, stage.size).astype(np.int64)
        # Parent -> child group edges: the chain for jobs without stage edges, else theirs.
        first = group_of[wl.task_ptr[:-1]]        # each job's stage-0 group
        explicit = np.zeros(wl.n_jobs, dtype=bool)
        explicit[wl.stage_edge_job] = True
        g_job, g_stage = job[starts], stage[starts]
        chain = np.flatnonzero((g_stage > 0) & ~explicit[g_job])
        src = np.concatenate([chain - 1, first[wl.stage_edge_job] + wl.stage_edge_src])
        dst = np.concatenate([chain, first[wl.stage_edge_job] + wl.stage_edge_dst])
        order = np.argsort(src, kind="stable")
        waiting = np.bincount(dst, minlength=starts.size)
        pending += waiting[group_of] > 0
        capped, room, next_task = NO_INT, NO_INT, NO_INT
        if self.capped:
            # ``next_task`` is the next task of the group to admit.
            cap = wl.task_cap[starts].astype(np.int64)
            capped, room, next_task = cap > 0, cap, starts.astype(np.int64)
        # Tasks of each group that are ready (no live copy) and running, and each job's
        # groups (``job_groups[j]:job_groups[j+1]``), for stage-level policies.
        self.groups = Groups(
            of=group_of, ptr=group_ptr, left=np.diff(group_ptr),
            child_ptr=pointers(src, starts.size), child=dst[order], waiting=waiting,
            ready=np.zeros(starts.size, dtype=np.int64),
            running=np.zeros(starts.size, dtype=np.int64),
            job_groups=pointers(g_job, wl.n_jobs), capped=capped, room=room,
            next_task=next_task)

    def admit(self, tasks: np.ndarray) -> np.ndarray:
        """Of tasks whose dependencies are met, those that may become ready now.

        Tasks of capped groups beyond their group's room wait; :meth:`finish` admits
        them as tasks of the group finish. A capped group's tasks all meet their
        dependencies together (no task edges lead into it), so admission is a pointer.
        """
        groups = self.groups.of[tasks]
        capped = self.groups.capped[groups]
        if not capped.any():
            return tasks
        return np.concatenate([tasks[~capped], self.admit_groups(np.unique(groups[capped]))])

    def admit_groups(self, groups: np.ndarray) -> np.ndarray:
        """Admit as many waiting tasks of capped ``groups`` as their room allows."""
        g = self.groups
        start = g.next_task[groups]
        n = np.minimum(g.room[groups], g.ptr[groups + 1] - start)
        g.next_task[groups] += n
        g.room[groups] -= n
        return concat_ranges(start, start + n)

    def release(self, tasks: np.ndarray, pending: np.ndarray) -> np.ndarray:
        """Count finished ``tasks`` against their stage; return tasks whose barrier fell.

        ``pending`` (per task) loses the barrier of every task of a group whose parent
        groups have all finished.
        """
        g = self.groups
        groups = g.of[tasks]
        np.subtract.at(g.left, groups, 1)
        groups = np.unique(groups)
        done = groups[g.left[groups] == 0]
        children = g.child[concat_ranges(g.child_ptr[done], g.child_ptr[done + 1])]
        if children.size == 0:
            return np.empty(0, dtype=np.int64)
        np.subtract.at(g.waiting, children, 1)
        free = np.unique(children[g.waiting[children] == 0])
        nxt = concat_ranges(g.ptr[free], g.ptr[free + 1])
        pending[nxt] -= 1
        return nxt[pending[nxt] == 0]

    def finish(self, tasks: np.ndarray) -> np.ndarray:
        """Give finished ``tasks``' capped groups their room back; return tasks admitted."""
        g = self.groups
        groups = g.of[tasks]
        groups = groups[g.capped[groups]]
        if groups.size == 0:
            return np.empty(0, dtype=np.int64)
        np.add.at(g.room, groups, 1)
        return self.admit_groups(np.unique(groups))

    def count_ready(self, tasks: np.ndarray) -> None:
        """Count ``tasks`` (just made ready) in their groups."""
        np.add.at(self.groups.ready, self.groups.of[tasks], 1)

    def count_idle(self, tasks: np.ndarray) -> None:
        """Count running ``tasks`` that lost their last copy as ready again."""
        np.add.at(self.groups.ready, self.groups.of[tasks], 1)
        np.add.at(self.groups.running, self.groups.of[tasks], -1)
