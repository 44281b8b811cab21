"""Vectorised execution of task copies (DESIGN.md, "Time and execution").

State of record is struct-of-arrays: tasks (fixed, one entry per task of the workload),
copies and copy inputs (growing tables), slots and clusters. One call to
:meth:`Engine.advance` moves every running copy through one time slot ``[t, t+dt]`` in a
handful of NumPy operations:

- each transfer of a remote input gets an equal share of every resource it crosses (each
  directed WAN link of its route, the source's egress gate, the destination's ingress
  gate); its bandwidth ``bw_j`` is the smallest of those shares, and 0 while the source
  cluster is unreachable;
- a copy's progress is the bottleneck of processing and input transfer (003 §3.2). How
  the two combine over time is the scenario's ``links.transfer`` key:

  - ``"fetch"`` (default): each remote input is fetched on its own at ``bw_j / size_j``
    (fraction per second) until it has all arrived, and the copy processes at
    ``share * speed / work`` but never beyond the smallest received fraction of its
    inputs. A source that goes unreachable stalls only its own input; the others go on
    arriving and are processed, as a shuffle read fetches blocks from many hosts.
  - ``"stream"``: the copy advances at ``min(share * speed / work, min_j bw_j / size_j)``,
    every input streaming in lockstep with processing: one unreachable source stops the
    whole copy.

  With constant rates both finish at ``max(work / speed, max_j size_j / bw_j)``; they
  differ when rates vary during a copy's life. ``speed`` is the slot's VM power times its
  availability factor averaged exactly over the slot;
- a copy's own work is its task's mean work times a factor drawn for that copy (mean 1,
  the task's coefficient of variation ``task_cv``; :mod:`geosim.variability`), so its
  progress rate is divided by the factor. Progress, ``executed`` and ``wasted`` stay in
  units of the task's mean work (a fraction of the task, as checkpoints carry it);
- a task of stage s > 0 of a job becomes ready only after every task of stage s - 1 of
  that job has finished (a stage barrier, such as MapReduce's map -> reduce; it carries
  no data);
- a copy reaching progress 1 finishes at the interpolated time inside the slot; the first
  copy of a task to finish wins and its siblings are killed at that instant, so their
  slots are free at the next slot boundary and their work up to that instant is wasted.

Work accounting: ``executed`` integrates every copy's progress; work a copy did that does
not survive in its task (killed copies, losers of a checkpoint) is ``wasted``. For a
finished run ``sum(executed) == sum(task work) + sum(wasted)``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from geosim.errors import GeosimError
from geosim.guards import Budget
from geosim.variability import FAMILIES, copy_factors, keyed_uniforms
from geosim.workload import Workload
from geosim.world import World

# Task states.
WAITING, READY, RUNNING, DONE = 0, 1, 2, 3
# Copy outcomes.
ALIVE, WON, LOST, KILLED, FAILED = 0, 1, 2, 3, 4
OUTCOMES = ("alive", "won", "lost", "killed", "failed")

_EPS = 1e-9
#: How a copy's inputs and its processing combine over time (see the module docstring).
TRANSFER_MODES = ("fetch", "stream")
_NO_INT = np.empty(0, dtype=np.int64)
_NO_FLOAT = np.empty(0)


class SchedulingError(RuntimeError):
    """A scheduler asked for something the engine cannot do (a bug in the policy)."""


def concat_ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Return the concatenation of ``arange(lo[i], hi[i])`` for every i."""
    return _concat_ranges(np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64))


@njit(cache=True)
def _concat_ranges(lo, hi):  # pragma: no cover - compiled
    total = 0
    for i in range(lo.size):
        total += max(hi[i] - lo[i], 0)
    out = np.empty(total, dtype=np.int64)
    j = 0
    for i in range(lo.size):
        for v in range(lo[i], hi[i]):
            out[j] = v
            j += 1
    return out


def first_of_runs(keys: np.ndarray) -> np.ndarray:
    """Mask of the elements of a sorted array that start a run of equal values."""
    first = np.empty(keys.size, dtype=bool)
    if keys.size:
        first[0] = True
        np.not_equal(keys[1:], keys[:-1], out=first[1:])
    return first


def rank_in_runs(keys: np.ndarray) -> np.ndarray:
    """Position of each element of a sorted array within its run of equal values."""
    idx = np.arange(keys.size)
    starts = np.where(first_of_runs(keys), idx, 0)
    return idx - np.maximum.accumulate(starts) if keys.size else idx


class _Table:
    """Growable struct-of-arrays with amortised doubling, of at most ``max_rows`` rows."""

    def __init__(self, spec: dict[str, tuple[np.dtype, float]], capacity: int = 1024,
                 name: str = "rows", budget: Budget | None = None,
                 max_rows: int = 2**63 - 1):
        self._spec = spec
        self.n = 0
        self.name, self.budget, self.max_rows = name, budget, max_rows
        self.cols = {k: np.full(capacity, fill, dtype=dt) for k, (dt, fill) in spec.items()}

    @property
    def capacity(self) -> int:
        """Rows the columns hold (used or not)."""
        return len(next(iter(self.cols.values())))

    def append(self, count: int) -> slice:
        """Reserve ``count`` new rows (filled with defaults) and return their slice."""
        need = self.n + count
        if need > self.capacity:
            self.resize(max(need, min(2 * self.capacity, self.max_rows)))
        rows = slice(self.n, need)
        for k, (_, fill) in self._spec.items():
            self.cols[k][rows] = fill
        self.n = need
        return rows

    def resize(self, capacity: int) -> None:
        """Hold ``capacity`` rows (at least the ``n`` used), one column at a time.

        Each old column is released as soon as its replacement is filled, so the peak is
        the table plus one column, not two tables. Rows beyond ``n`` are left unfilled
        (:meth:`append` fills the rows it hands out), so the unused half of a doubled
        table takes no memory until it is used.
        """
        capacity = max(capacity, self.n)
        self.check(capacity)
        for k, (dt, _) in self._spec.items():
            arr = np.empty(capacity, dtype=dt)
            arr[: self.n] = self.cols[k][: self.n]
            self.cols[k] = arr

    def resize_in_place(self, capacity: int) -> None:
        """Hold ``capacity`` rows (at least the ``n`` used) by reallocating each column.

        The allocator extends or trims a large column where it lies (moving pages, not
        copying rows), so growing a table of millions of rows costs neither a copy nor a
        second column. New rows are zero-filled. Only for a caller that holds no view of
        the columns: a view would be left pointing at released memory.
        """
        capacity = max(capacity, self.n)
        self.check(capacity)
        for col in self.cols.values():
            col.resize(capacity, refcheck=False)

    def keep(self, names: tuple[str, ...]) -> None:
        """Drop every column but ``names`` (their rows are kept as they are)."""
        self._spec = {k: v for k, v in self._spec.items() if k in names}
        self.cols = {k: v for k, v in self.cols.items() if k in names}

    def check(self, capacity: int) -> None:
        """Ask the run's memory budget (if any) whether ``capacity`` rows may be held.

        Raises:
            GeosimError: The table would exceed ``run.max_memory_gb`` or ``max_rows``.
        """
        if capacity > self.max_rows:
            raise GeosimError(f"the run's {self.name} table would exceed {self.max_rows:,} "
                              "rows (its ids are 32-bit)")
        if self.budget is not None:
            row = sum(np.dtype(dt).itemsize for dt, _ in self._spec.values())
            self.budget.check(capacity * row, f"{self.name} table ({capacity:,} rows)")


#: Largest task, slot, cluster or copy id: the copies table keeps them in 32 bits (a
#: long run's memory is mostly that table).
ID_MAX = 2**31 - 1
_COPY_SPEC = {
    "task": (np.int32, -1), "slot": (np.int32, -1), "cluster": (np.int32, -1),
    "share": (np.float64, 0.0), "progress": (np.float64, 0.0), "base": (np.float64, 0.0),
    "start": (np.float64, np.nan), "end": (np.float64, np.nan),
    "executed": (np.float64, 0.0), "wasted": (np.float64, 0.0),
    "share_time": (np.float64, 0.0), "speed_time": (np.float64, 0.0),
    "outcome": (np.int8, ALIVE), "in_lo": (np.int64, 0), "in_hi": (np.int64, 0),
    "factor": (np.float64, 1.0),
}
_INPUT_SPEC = {
    "copy": (np.int64, -1), "src": (np.int64, -1), "size": (np.float64, 0.0),
    "received": (np.float64, 0.0), "bw_time": (np.float64, 0.0), "fetch_time": (np.float64, 0.0),
}


class Engine:
    """Tasks, copies, slots and transfers of one run, advanced slot by slot.

    Args:
        world: The clusters, slots and WAN.
        workload: Every job of the run.
        dt: Length of a time slot (s).
        rng: Stream for choosing among equally good free slots.
        transfer: ``"fetch"`` or ``"stream"``, see the module docstring.
        data_lag: A job's raw input exists this long before it arrives (s).
        variability: Family of each copy's own work factor (:mod:`geosim.variability`);
            used for tasks whose ``task_cv`` is positive.
        copy_key: Key of the counter-based stream of copy factors (from the run's seed).
        budget: The run's memory limit, asked before the copies and inputs tables grow.
    """

    def __init__(self, world: World, workload: Workload, dt: float, rng: np.random.Generator,
                 transfer: str = "fetch", data_lag: float = 0.0, variability: str = "pareto",
                 copy_key: int = 0, budget: Budget | None = None):
        if transfer not in TRANSFER_MODES:
            raise ValueError(f"transfer mode {transfer!r} not in {TRANSFER_MODES}")
        if variability not in FAMILIES:
            raise ValueError(f"copy variability {variability!r} not in {FAMILIES}")
        if not data_lag >= 0.0:
            raise ValueError(f"data_lag must be >= 0, got {data_lag}")
        self.world, self.wl, self.dt, self.rng = world, workload, dt, rng
        self.data_lag = float(data_lag)
        self.fetch = transfer == "fetch"
        self.time = 0.0
        n_tasks, n_jobs = workload.n_tasks, workload.n_jobs
        if max(n_tasks, world.n_slots, world.n_clusters) > ID_MAX:
            raise GeosimError(f"a run holds at most {ID_MAX:,} tasks, slots and clusters "
                              "(their ids are 32-bit)")
        self.task_job = workload.job_of_task
        self.task_work = workload.task_work
        order = np.argsort(workload.edge_dst, kind="stable")
        self.in_ptr = _ptr(workload.edge_dst, n_tasks)
        self.in_src = workload.edge_src[order]
        self.in_size = workload.edge_size[order]
        order = np.argsort(workload.edge_src, kind="stable")
        self.out_ptr = _ptr(workload.edge_src, n_tasks)
        self.out_dst = workload.edge_dst[order]
        self.pending = np.bincount(workload.edge_dst, minlength=n_tasks).astype(np.int64)
        self.task_cv = workload.task_cv
        self.variability = variability if np.any(workload.task_cv > 0) else "none"
        self.copy_key = int(copy_key)
        self._init_stages(workload)

        self.task_state = np.full(n_tasks, WAITING, dtype=np.int8)
        self.task_ready = np.full(n_tasks, np.nan)
        self.task_start = np.full(n_tasks, np.nan)
        self.task_done = np.full(n_tasks, np.nan)
        self.task_cluster = np.full(n_tasks, -1, dtype=np.int64)
        self.task_home = np.full(n_tasks, -1, dtype=np.int64)
        self.task_saved = np.zeros(n_tasks)
        self.task_copies = np.zeros(n_tasks, dtype=np.int64)
        self.task_live = np.zeros(n_tasks, dtype=np.int64)
        self.job_live = np.zeros(n_jobs, dtype=np.int64)   # live copies per job
        # Without raw inputs or DAG edges no copy ever fetches anything.
        self.has_inputs = workload.n_raw > 0 or workload.n_edges > 0
        self.task_checkpoints = np.zeros(n_tasks, dtype=np.int64)
        self._task_scratch: tuple[np.ndarray, np.ndarray] | None = None   # see _scratch

        self.job_left = np.diff(workload.task_ptr).astype(np.int64)
        self.job_done = np.full(n_jobs, np.nan)
        self.job_last = np.full(n_jobs, -np.inf)
        self.job_checkpoints = np.zeros(n_jobs, dtype=np.int64)
        self.job_work_left = np.bincount(self.task_job, weights=self.task_work, minlength=n_jobs)
        self.next_job = 0          # first job not yet arrived
        self.next_announced = 0    # first job whose raw input does not exist yet
        self.raw_cluster = workload.raw_cluster.copy()   # moves before arrival change it
        # Raw inputs on their way to another cluster before their job arrives.
        self.move_raw = np.empty(0, dtype=np.int64)
        self.move_src = np.empty(0, dtype=np.int64)
        self.move_dst = np.empty(0, dtype=np.int64)
        self.move_got = np.empty(0)
        self.moved_mb = 0.0        # MB of raw input that reached its new cluster
        self.moves_done = 0
        self.moves_abandoned = 0   # moves still running when their job arrived
        self.n_ready = 0

        self.slot_used = np.zeros(world.n_slots)
        self.slot_copies = np.zeros(world.n_slots, dtype=np.int64)
        self.reachable = np.ones(world.n_clusters, dtype=bool)
        self.copies = _Table(_COPY_SPEC, name="copies", budget=budget, max_rows=ID_MAX)
        self.inputs = _Table(_INPUT_SPEC, capacity=4096, name="inputs", budget=budget)
        self.live = np.empty(0, dtype=np.int64)     # ids of live copies, ascending
        self._flows: tuple | None = None
        self.egress_mb = np.zeros(world.n_clusters)
        self.ingress_mb = np.zeros(world.n_clusters)
        self.link_mb = np.zeros(2 * world.n_links)     # per direction: 2e is u→v, 2e+1 v→u
        self.gate_out = np.zeros(world.n_clusters)     # MB/s used in the last slot
        self.gate_in = np.zeros(world.n_clusters)
        self.wan_mb = 0.0
        self._slot_end = 0.0       # end of the span being advanced (children ready then)
        self.completed: list[np.ndarray] = []   # winner copy ids per step, for the monitor
        self.finished_jobs: list[int] = []

    def _init_stages(self, wl: Workload) -> None:
        """Stage barriers: a stage waits for every task of the stages it depends on.

        Tasks of one job are ordered by stage, so a (job, stage) group is a contiguous
        range of task ids. A stage depends on the previous one (a chain), or, for a job with
        stage edges, on the stages its edges name. Each group counts its unfinished tasks
        and its unfinished parent groups; each task of a group with parents has one pending
        barrier (memory linear in tasks and stage edges).
        """
        stage = wl.task_stage
        job = self.task_job
        self.capped = bool(np.any(wl.task_cap > 0))
        self.staged = bool(stage.size and (stage.max() > 0 or wl.stage_edge_job.size)) \
            or self.capped
        if not self.staged:
            return
        new = np.ones(stage.size, dtype=bool)
        new[1:] = (job[1:] != job[:-1]) | (stage[1:] != stage[:-1])
        self.group_of = np.cumsum(new) - 1
        starts = np.flatnonzero(new)
        self.group_ptr = np.append(starts, stage.size).astype(np.int64)
        self.group_left = np.diff(self.group_ptr)
        # Parent -> child group edges: the chain for jobs without stage edges, else theirs.
        first = self.group_of[wl.task_ptr[:-1]]        # each job's stage-0 group
        explicit = np.zeros(wl.n_jobs, dtype=bool)
        explicit[wl.stage_edge_job] = True
        g_job, g_stage = job[starts], stage[starts]
        chain = np.flatnonzero((g_stage > 0) & ~explicit[g_job])
        src = np.concatenate([chain - 1, first[wl.stage_edge_job] + wl.stage_edge_src])
        dst = np.concatenate([chain, first[wl.stage_edge_job] + wl.stage_edge_dst])
        order = np.argsort(src, kind="stable")
        self.group_child_ptr = _ptr(src, starts.size)
        self.group_child = dst[order]
        self.group_waiting = np.bincount(dst, minlength=starts.size)
        self.pending += self.group_waiting[self.group_of] > 0
        # Tasks of each group that are ready (no live copy) and running, and each job's
        # groups (``job_groups[j]:job_groups[j+1]``), for stage-level policies.
        self.group_ready = np.zeros(starts.size, dtype=np.int64)
        self.group_running = np.zeros(starts.size, dtype=np.int64)
        self.job_groups = _ptr(g_job, wl.n_jobs)
        if self.capped:
            # Malleability caps: a capped group admits its tasks in order, at most
            # ``cap`` of them unfinished at once; ``group_next`` is the next to admit.
            cap = wl.task_cap[starts].astype(np.int64)
            self.group_capped = cap > 0
            self.group_room = cap
            self.group_next = starts.astype(np.int64)

    def _admit(self, tasks: np.ndarray) -> np.ndarray:
        """Of tasks whose dependencies are met, those that may become ready now.

        Tasks of capped groups beyond their group's room wait; :meth:`_complete` admits
        them as tasks of the group finish. A capped group's tasks all meet their
        dependencies together (no task edges lead into it), so admission is a pointer.
        """
        groups = self.group_of[tasks]
        capped = self.group_capped[groups]
        if not capped.any():
            return tasks
        return np.concatenate([tasks[~capped], self._admit_groups(np.unique(groups[capped]))])

    def _admit_groups(self, groups: np.ndarray) -> np.ndarray:
        """Admit as many waiting tasks of capped ``groups`` as their room allows."""
        start = self.group_next[groups]
        n = np.minimum(self.group_room[groups], self.group_ptr[groups + 1] - start)
        self.group_next[groups] += n
        self.group_room[groups] -= n
        return concat_ranges(start, start + n)

    def _release_stages(self, tasks: np.ndarray) -> np.ndarray:
        """Count finished ``tasks`` against their stage; return tasks whose barrier fell."""
        groups = self.group_of[tasks]
        np.subtract.at(self.group_left, groups, 1)
        groups = np.unique(groups)
        done = groups[self.group_left[groups] == 0]
        children = self.group_child[concat_ranges(self.group_child_ptr[done],
                                                  self.group_child_ptr[done + 1])]
        if children.size == 0:
            return np.empty(0, dtype=np.int64)
        np.subtract.at(self.group_waiting, children, 1)
        free = np.unique(children[self.group_waiting[children] == 0])
        nxt = concat_ranges(self.group_ptr[free], self.group_ptr[free + 1])
        self.pending[nxt] -= 1
        return nxt[self.pending[nxt] == 0]

    # ------------------------------------------------------------------ queries
    def free_slots(self) -> np.ndarray:
        """Whole free slots per cluster (0 for unreachable clusters)."""
        return _free_count(self.slot_used, self.world.slot_ptr, self.reachable, _EPS)

    def inputs_of(self, tasks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Inputs of ready tasks: raw data, then parents' outputs where the parents ran.

        Returns:
            For every input, grouped by task in the order of ``tasks``: the position of its
            task in ``tasks``, the cluster holding it, and its size (MB).
        """
        wl = self.wl
        return _inputs_kernel(np.asarray(tasks, dtype=np.int64), wl.raw_ptr, self.raw_cluster,
                              wl.raw_size, self.in_ptr, self.in_src, self.in_size,
                              self.task_cluster)

    def task_inputs(self, task: int) -> tuple[np.ndarray, np.ndarray]:
        """Clusters and sizes (MB) of a ready task's inputs (raw, then parents' outputs)."""
        _, src, size = self.inputs_of(np.array([task]))
        return src, size

    def remaining_work(self, jobs: np.ndarray) -> np.ndarray:
        """Work (MI) each job still needs.

        That is the work of its unfinished tasks, less checkpointed progress and the
        progress of each task's most advanced live copy.
        """
        left = self.job_work_left[jobs].copy()
        live = self.live
        if live.size:
            cols = self.copies.cols
            task = cols["task"][live]
            ahead = cols["progress"][live] - cols["base"][live]
            order = np.lexsort((-ahead, task))
            first = first_of_runs(task[order])
            lead = order[first]
            credit = np.bincount(self.task_job[task[lead]],
                                 weights=ahead[lead] * self.task_work[task[lead]],
                                 minlength=self.wl.n_jobs)
            left -= credit[jobs]
        return np.maximum(left, 0.0)

    # ------------------------------------------------------------------ arrivals
    def arrive(self, until: float) -> list[int]:
        """Make jobs with arrival time <= ``until`` alive; return their ids."""
        arrival = self.wl.arrival
        j0 = self.next_job
        j1 = int(np.searchsorted(arrival, until, side="right"))
        if j1 <= j0:
            return []
        self.next_job = j1
        self.next_announced = max(self.next_announced, j1)
        if self.move_raw.size:
            arriving = self.wl.raw_task[self.move_raw] < self.wl.task_ptr[j1]
            if arriving.any():
                self.moves_abandoned += int(arriving.sum())
                self._drop_moves(arriving)
        tasks = np.arange(self.wl.task_ptr[j0], self.wl.task_ptr[j1])
        self._make_ready(tasks[self.pending[tasks] == 0], until)
        return list(range(j0, j1))

    def announce(self, until: float) -> np.ndarray:
        """Jobs whose raw input exists by ``until`` (``data_lag`` before their arrival).

        Returns:
            The ids of the jobs announced since the last call, in arrival order.
        """
        j0 = max(self.next_announced, self.next_job)
        j1 = int(np.searchsorted(self.wl.arrival, until + self.data_lag, side="right"))
        if j1 <= j0:
            return np.empty(0, dtype=np.int64)
        self.next_announced = j1
        return np.arange(j0, j1, dtype=np.int64)

    def start_moves(self, raws: np.ndarray, clusters: np.ndarray) -> None:
        """Start moving raw inputs of announced, not yet arrived jobs to other clusters.

        A move is a WAN transfer like any other (it shares links and gates); the input
        is at its new cluster once all of it has arrived. A move still running when its
        job arrives is abandoned and the input stays where it was.

        Raises:
            SchedulingError: A raw input of a job not announced or already arrived,
                already moving, or moved to the cluster holding it or to no cluster.
        """
        raws = np.atleast_1d(np.asarray(raws, dtype=np.int64))
        clusters = np.atleast_1d(np.asarray(clusters, dtype=np.int64))
        if raws.shape != clusters.shape:
            raise SchedulingError(f"{raws.size} raw inputs but {clusters.size} clusters")
        if raws.size == 0:
            return
        if raws.min() < 0 or raws.max() >= self.wl.n_raw:
            raise SchedulingError(f"raw inputs {raws.tolist()} outside 0..{self.wl.n_raw - 1}")
        job = self.task_job[self.wl.raw_task[raws]]
        bad = (job < self.next_job) | (job >= self.next_announced)
        if bad.any():
            raise SchedulingError(f"raw input {int(raws[bad][0])} belongs to job "
                                  f"{int(job[bad][0])}, which has arrived or is not announced")
        if np.unique(raws).size < raws.size or np.isin(raws, self.move_raw).any():
            raise SchedulingError("a raw input is moved twice at once")
        src = self.raw_cluster[raws]
        if (clusters < 0).any() or (clusters >= self.world.n_clusters).any() \
                or (clusters == src).any():
            raise SchedulingError(f"cannot move raw inputs {raws.tolist()} from clusters "
                                  f"{src.tolist()} to {clusters.tolist()}")
        self.move_raw = np.concatenate([self.move_raw, raws])
        self.move_src = np.concatenate([self.move_src, src])
        self.move_dst = np.concatenate([self.move_dst, clusters])
        self.move_got = np.concatenate([self.move_got, np.zeros(raws.size)])
        self._flows = None

    def _drop_moves(self, mask: np.ndarray) -> None:
        keep = ~mask
        self.move_raw, self.move_src = self.move_raw[keep], self.move_src[keep]
        self.move_dst, self.move_got = self.move_dst[keep], self.move_got[keep]
        self._flows = None

    def _make_ready(self, tasks: np.ndarray, at: float) -> None:
        """Tasks whose dependencies are met become ready (those admitted, under caps)."""
        if self.capped and tasks.size:
            tasks = self._admit(tasks)
        self._set_ready(tasks, at)

    def _set_ready(self, tasks: np.ndarray, at: float) -> None:
        if tasks.size == 0:
            return
        self.task_state[tasks] = READY
        self.task_ready[tasks] = at
        self.n_ready += tasks.size
        if self.staged:
            np.add.at(self.group_ready, self.group_of[tasks], 1)
        self.task_home[tasks] = self._homes(tasks)

    def _homes(self, tasks: np.ndarray) -> np.ndarray:
        """Cluster holding the largest part of each task's input (-1: no input)."""
        home = np.full(tasks.size, -1, dtype=np.int64)
        if not self.has_inputs:
            return home
        owner, src, size = self.inputs_of(tasks)
        if owner.size == 0:
            return home
        # largest total per task; ties -> smallest cluster id
        _homes_kernel(owner, src, size, self.world.n_clusters, home)
        return home

    # ------------------------------------------------------------------ operations
    def launch(self, task: int, cluster: int, share: float = 1.0, slot: int | None = None) -> int:
        """Start a copy of a ready or running task on ``cluster``; return the copy id.

        Args:
            task: Task id.
            cluster: Cluster to run on; must be reachable.
            share: Fraction of one slot the copy gets (multitasking, 002 §5).
            slot: A specific slot of ``cluster``; by default as in :meth:`launch_many`.
        """
        slots = None if slot is None else np.array([slot])
        return int(self.launch_many(np.array([task]), np.array([cluster]), share, slots)[0])

    def launch_many(self, tasks: np.ndarray, clusters: np.ndarray, share: float = 1.0,
                    slots: np.ndarray | None = None) -> np.ndarray:
        """Start one copy of each ``tasks[i]`` on ``clusters[i]``; return the copy ids.

        A task may appear several times (redundant copies started together). Without
        ``slots``, whole-slot copies go to free slots drawn uniformly at random
        (without replacement) in each cluster; a fractional copy goes to the slot with the
        least spare share that still fits it (best fit), ties broken at random.

        Raises:
            SchedulingError: A task not ready or running, a share outside (0, 1], an
                unreachable cluster, or slots that cannot take the copies.
            IndexError: A task or cluster that does not exist.
        """
        tasks = np.asarray(tasks, dtype=np.int64).ravel()
        clusters = np.asarray(clusters, dtype=np.int64).ravel()
        n = tasks.size
        if n == 0:
            return np.empty(0, dtype=np.int64)
        if clusters.size != n:
            raise SchedulingError(f"{n} copies but {clusters.size} clusters")
        code, at = _launch_check(tasks, clusters, self.task_state, self.reachable)
        if code == 1:
            raise IndexError(f"task {tasks[at]} does not exist")
        if code == 2:
            raise SchedulingError(f"task {tasks[at]} is not ready "
                                  f"(state {self.task_state[tasks[at]]})")
        if not 0.0 < share <= 1.0:
            raise SchedulingError(f"share {share} outside (0, 1]")
        if code == 3:
            raise IndexError(f"cluster {clusters[at]} does not exist")
        if code == 4:
            raise SchedulingError(f"cluster {clusters[at]} is unreachable")
        slots = self._pick_slots(clusters, share) if slots is None else \
            np.asarray(slots, dtype=np.int64).ravel()
        used = _take_slots(slots, clusters, share, self.world.slot_ptr, self.slot_used,
                           1.0 + _EPS)
        if used.size == 0:
            raise SchedulingError(f"slots {slots.tolist()} cannot take share {share:g}")
        self.slot_used = used
        rows = self.copies.append(n)
        ids = np.arange(rows.start, rows.stop)
        cols = self.copies.cols
        if self.variability != "none":
            cols["factor"][rows] = self._copy_factors(tasks)
        self._add_inputs(ids, tasks, self.task_saved[tasks])
        staged = self.staged
        self.live, started = _launch_kernel(
            tasks, clusters, slots, share, rows.start, self.time, cols["task"], cols["slot"],
            cols["cluster"], cols["share"], cols["progress"], cols["base"], cols["start"],
            self.task_state, self.task_saved, self.task_start, self.task_copies,
            self.task_live, self.job_live, self.task_job, self.slot_copies, staged,
            self.group_ready if staged else _NO_INT, self.group_running if staged else _NO_INT,
            self.group_of if staged else _NO_INT, self.live)
        self.n_ready -= started
        self._flows = None
        return ids

    def _copy_factors(self, tasks: np.ndarray) -> np.ndarray:
        """Work factors of new copies of ``tasks`` (before ``task_copies`` counts them).

        The k-th copy ever launched of a task draws from the key ``(run, task, k)``.
        """
        order = np.argsort(tasks, kind="stable")
        index = np.empty(tasks.size, dtype=np.int64)
        index[order] = rank_in_runs(tasks[order])
        index += self.task_copies[tasks]
        return copy_factors(self.variability, self.task_cv[tasks],
                            keyed_uniforms(self.copy_key, tasks, index))

    def _pick_slots(self, clusters: np.ndarray, share: float) -> np.ndarray:
        """Slots for new copies of ``share`` on ``clusters`` (see :meth:`launch_many`)."""
        ptr = self.world.slot_ptr
        if share >= 1.0:
            # Per cluster (ascending), its copies in order take free slots drawn without
            # replacement: ``rng.choice(free, k, replace=False)``, whose bounded draws
            # are made here in one call, in the same order.
            plan = _whole_slot_plan(clusters, ptr, self.slot_used, 1.0 - _EPS)
            bad, n_free, k, highs = plan[-4:]
            if bad >= 0:
                raise SchedulingError(f"cluster {bad} has {n_free} free slots, {k} asked")
            draws = self.rng.integers(0, highs + 1) if highs.size else _NO_INT
            return _whole_slot_assign(*plan[:-4], ptr, draws)
        out = np.empty(clusters.size, dtype=np.int64)
        for c in np.unique(clusters):
            where = np.flatnonzero(clusters == c)
            lo = ptr[c]
            spare = 1.0 - self.slot_used[lo:ptr[c + 1]]
            spare = spare.copy()
            for i in where:
                fits = np.flatnonzero(spare >= share - _EPS)
                if fits.size == 0:
                    raise SchedulingError(f"no slot of cluster {c} has {share:g} spare")
                best = fits[spare[fits] <= spare[fits].min() + _EPS]
                pick = best[0] if best.size == 1 else self.rng.choice(best)
                out[i] = lo + pick
                spare[pick] -= share
        return out

    def _add_inputs(self, copies: np.ndarray, tasks: np.ndarray, saved: np.ndarray) -> None:
        """Record each new copy's inputs: raw data, then its parents' outputs.

        The fraction its task saved at a checkpoint counts as received already.
        """
        if not self.has_inputs:
            return          # in_lo = in_hi = 0: no inputs
        wl = self.wl
        rows = self.inputs.append(_count_inputs(tasks, wl.raw_ptr, self.in_ptr))
        icols, cols = self.inputs.cols, self.copies.cols
        _fill_inputs(tasks, copies, saved, rows.start, wl.raw_ptr, self.raw_cluster,
                     wl.raw_size, self.in_ptr, self.in_src, self.in_size, self.task_cluster,
                     icols["copy"], icols["src"], icols["size"], icols["received"],
                     cols["in_lo"], cols["in_hi"])

    def kill(self, copies: np.ndarray | int, outcome: int = KILLED) -> None:
        """End live copies now; their work since the last checkpoint is wasted."""
        copies = np.atleast_1d(np.asarray(copies, dtype=np.int64))
        cols = self.copies.cols
        if np.any(cols["outcome"][copies] != ALIVE):
            raise SchedulingError(f"copy {copies[cols['outcome'][copies] != ALIVE][0]} is not live")
        self._end(copies, np.full(copies.size, self.time), outcome)
        tasks = np.unique(cols["task"][copies])
        idle = tasks[(self.task_live[tasks] == 0) & (self.task_state[tasks] == RUNNING)]
        self.task_state[idle] = READY
        self.n_ready += idle.size
        if self.staged:
            np.add.at(self.group_ready, self.group_of[idle], 1)
            np.add.at(self.group_running, self.group_of[idle], -1)

    def checkpoint(self, job: int) -> None:
        """Bring every running copy of ``job`` to its task's most advanced copy (002 §3)."""
        self.checkpoint_jobs(np.array([job], dtype=np.int64))

    def checkpoint_jobs(self, jobs: np.ndarray) -> None:
        """Checkpoint every job of ``jobs`` that has running copies, in one pass.

        Each running copy is brought to the progress of its task's most advanced copy
        (002 §3): the state of that copy is saved and cloned to the others, whose own
        work since the last checkpoint is wasted. A job (and a task) counts a checkpoint
        only when it has running copies; a job without any has nothing to save.
        """
        live = self.live
        if live.size == 0:
            return
        cols = self.copies.cols
        task = cols["task"][live]
        chosen = np.zeros(self.wl.n_jobs, dtype=bool)
        chosen[np.asarray(jobs, dtype=np.int64)] = True
        mine = chosen[self.task_job[task]]
        if not mine.any():
            return
        copies, t = live[mine], task[mine]
        ut, inv = np.unique(t, return_inverse=True)
        best = self.task_saved[ut].copy()
        np.maximum.at(best, inv, cols["progress"][copies])
        level = best[inv]
        # One leader per task keeps its work (its base is the task's saved progress);
        # every other copy's work since the last checkpoint is wasted, ties included.
        progress = cols["progress"][copies]
        order = np.lexsort((copies, -progress, inv))
        leader = np.zeros(copies.size, dtype=bool)
        leader[order[first_of_runs(inv[order])]] = True
        cols["wasted"][copies] += np.where(
            leader & (progress >= level - _EPS), 0.0,
            (progress - cols["base"][copies]) * self.task_work[t])
        cols["progress"][copies] = level
        cols["base"][copies] = level
        idx = concat_ranges(cols["in_lo"][copies], cols["in_hi"][copies])
        if idx.size:
            received = self.inputs.cols["received"]
            reach = np.repeat(level, cols["in_hi"][copies] - cols["in_lo"][copies])
            received[idx] = np.maximum(received[idx], reach)
        self._flows = None
        gain = (best - self.task_saved[ut]) * self.task_work[ut]
        np.subtract.at(self.job_work_left, self.task_job[ut], gain)
        self.task_saved[ut] = best
        self.task_checkpoints[ut] += 1
        self.job_checkpoints[np.unique(self.task_job[ut])] += 1

    def set_share(self, copies: np.ndarray | int, share: float) -> None:
        """Set the slot share of live copies (multitasking); the result must fit every slot."""
        copies = np.atleast_1d(np.asarray(copies, dtype=np.int64))
        cols = self.copies.cols
        if np.any(cols["outcome"][copies] != ALIVE):
            raise SchedulingError(f"copy {copies[cols['outcome'][copies] != ALIVE][0]} is not live")
        slots = cols["slot"][copies]
        used = self.slot_used.copy()
        np.add.at(used, slots, share - cols["share"][copies])
        if not 0.0 < share <= 1.0 or np.any(used[slots] > 1.0 + _EPS):
            raise SchedulingError(f"share {share:g} does not fit slots {np.unique(slots)}")
        self.slot_used = used
        cols["share"][copies] = share

    def fail_clusters(self, clusters: np.ndarray) -> int:
        """Kill every live copy on clusters hit by an outage (outcome ``failed``).

        Returns:
            The number of copies killed.
        """
        if clusters.size == 0 or self.live.size == 0:
            return 0
        hit = np.zeros(self.world.n_clusters, dtype=bool)
        hit[clusters] = True
        victims = self.live[hit[self.copies.cols["cluster"][self.live]]]
        if victims.size:
            self.kill(victims, outcome=FAILED)
        return int(victims.size)

    def _end(self, copies: np.ndarray, at: np.ndarray, outcome: int | np.ndarray) -> None:
        cols = self.copies.cols
        cols["end"][copies] = at
        cols["outcome"][copies] = outcome
        lost = np.asarray(outcome) != WON
        t = cols["task"][copies]
        cols["wasted"][copies] += np.where(
            lost, (cols["progress"][copies] - cols["base"][copies]) * self.task_work[t], 0.0)
        np.subtract.at(self.slot_used, cols["slot"][copies], cols["share"][copies])
        np.subtract.at(self.slot_copies, cols["slot"][copies], 1)
        np.subtract.at(self.task_live, t, 1)
        np.subtract.at(self.job_live, self.task_job[t], 1)
        # Every ended copy is live, and ``live`` ascends.
        self.live = np.delete(self.live, np.searchsorted(self.live, copies))
        self._flows = None

    # ------------------------------------------------------------------ transfers
    def _flow_structure(self) -> tuple:
        """Remote inputs of live copies, raw-input moves and the resources they cross (cached).

        Returns:
            ``(idx, pos, src, dst, res, starts, group, users, move_res, move_starts)``:
            the copy inputs being fetched (input row, position of their copy in
            ``live``, source, destination, resources and where each one's start in
            ``res``, the first flow of each copy), the number of flows on each resource,
            and the resources of each move.
        """
        if self._flows is not None:
            return self._flows
        cols, icols, world = self.copies.cols, self.inputs.cols, self.world
        self._flows = _flow_kernel(
            self.live, cols["in_lo"], cols["in_hi"], cols["cluster"], icols["src"],
            icols["size"], icols["received"], self.move_src, self.move_dst, world.pair_ptr,
            world.pair_res, world.n_clusters, 2 * world.n_links + 2 * world.n_clusters,
            1.0 - _EPS)
        return self._flows

    def _account(self, src: np.ndarray, dst: np.ndarray, moved: np.ndarray, res: np.ndarray,
                 starts: np.ndarray) -> None:
        """Add MB moved over the slot to the gate, link and WAN counters."""
        _account_kernel(src, dst, moved, res, starts, self.dt, self.gate_out, self.gate_in,
                        self.egress_mb, self.ingress_mb, self.link_mb,
                        2 * self.world.n_links + 2 * self.world.n_clusters)
        self.wan_mb += float(moved.sum())

    def _advance_moves(self, flows: tuple, cap: np.ndarray) -> None:
        """Run the raw-input moves through the slot at their share of every resource."""
        users, move_res, move_starts = flows[7:]
        src, dst = self.move_src, self.move_dst
        bw = np.minimum.reduceat(cap[move_res] / users[move_res], move_starts)
        bw[~(self.reachable[src] & self.reachable[dst])] = 0.0
        size = self.wl.raw_size[self.move_raw]
        with np.errstate(divide="ignore", invalid="ignore"):
            got = np.where(size > 0, np.minimum(self.move_got + bw * self.dt / size, 1.0), 1.0)
        got[got >= 1.0 - _EPS] = 1.0
        moved = (got - self.move_got) * size
        self.move_got = got
        self._account(src, dst, moved, move_res, move_starts)
        done = got >= 1.0
        if done.any():
            self.raw_cluster[self.move_raw[done]] = dst[done]
            self.moved_mb += float(size[done].sum())
            self.moves_done += int(done.sum())
            self._drop_moves(done)

    # ------------------------------------------------------------------ time
    def advance(self, slots: int = 1, span: float | None = None) -> None:
        """Run every live copy through ``slots`` time slots ``[time, time + slots * dt]``.

        More than one slot at once is exact only when every rate is constant over the
        span: no availability process, no transfers or moves, power not redrawn, and no
        copy finishing before the last slot (see :meth:`quiet_slots`). ``span`` (seconds)
        replaces ``slots * dt``: event timing runs to the next event instant
        (:meth:`time_to_completion`).
        """
        t, world = self.time, self.world
        dt = self.dt * slots if span is None else float(span)
        t_end = t + dt
        live = self.live
        cols, icols = self.copies.cols, self.inputs.cols
        avail = world.availability
        factor = _NO_FLOAT
        if avail is not None:
            # Every slot moves on; only the slots of live copies are averaged.
            if live.size:
                factor = avail.advance_mean(t_end, t, cols["slot"][live])
            else:
                avail.advance(t_end)
        self.completed = []
        self.gate_out[:] = 0.0
        self.gate_in[:] = 0.0
        flows = cap = None
        if self.move_raw.size:   # moves and copies share one structure within the slot
            flows = self._flow_structure()
            cap = world.resource_capacity()
            self._advance_moves(flows, cap)
        if live.size == 0:
            self.time = t_end
            return
        if flows is None and self.has_inputs:
            flows = self._flow_structure()
        has_flows = flows is not None and flows[0].size > 0
        if has_flows:
            idx, pos, src, dst, res, starts, group, users = flows[:8]
            cap = world.resource_capacity() if cap is None else cap
        else:
            idx = pos = src = dst = res = starts = group = users = _NO_INT
            cap = _NO_FLOAT
        moved, arrived, win_at, done_tasks, done_time, ending, ending_at = _step_kernel(
            live, cols["slot"], cols["task"], cols["share"], cols["factor"], cols["progress"],
            world.power.level, factor, self.task_work, self.fetch, has_flows, idx, pos, src,
            res, starts, group, users, cap, self.reachable, icols["size"], icols["received"],
            t, dt, dt * (1.0 + _EPS), *self._scratch(), cols["executed"], cols["share_time"],
            cols["speed_time"], icols["bw_time"], icols["fetch_time"], 1.0 + _EPS)
        if has_flows:
            if self.fetch and arrived:
                self._flows = None
            self._account(src, dst, moved, res, starts)
        if win_at.size:
            self._slot_end = t_end
            self._complete(live[ending], ending_at, live[win_at], done_tasks, done_time)
        self.time = t_end

    def quiet_slots(self, limit: int) -> int:
        """Whole slots from now, at most ``limit``, before the first one a copy can finish in.

        Valid only when rates are constant (see :meth:`advance`): the copies' time left
        is then exact, so :meth:`advance` may run that many slots at once and every
        completion falls in its last slot.
        """
        if self.live.size == 0 or limit <= 1:
            return max(1, limit)      # nothing can finish: up to the limit
        left = self.time_to_completion()
        return int(max(1, min(limit, np.floor(left / self.dt * (1.0 - _EPS)))))

    def time_to_completion(self) -> float:
        """Seconds until the first live copy finishes (``inf`` if none), at today's rates."""
        live = self.live
        if live.size == 0:
            return math.inf
        cols, avail = self.copies.cols, self.world.availability
        task, slot = cols["task"][live], cols["slot"][live]
        speed = self.world.power.level[slot]
        if avail is not None:
            speed = speed * avail.level[slot]
        rate = cols["share"][live] * speed / (self.task_work[task] * cols["factor"][live])
        with np.errstate(divide="ignore"):
            return float(np.min((1.0 - cols["progress"][live]) / rate))

    def _scratch(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-task scratch of the completion kernels: a time (NaN) and a copy (-1).

        Made at the first completion (a run on the compiled pool loop never needs it).
        """
        if self._task_scratch is None:
            n = self.wl.n_tasks
            self._task_scratch = (np.full(n, np.nan), np.full(n, -1, dtype=np.int64))
        return self._task_scratch

    def _complete(self, ending: np.ndarray, at: np.ndarray, winners: np.ndarray,
                  tasks: np.ndarray, times: np.ndarray) -> None:
        """Tasks finish: their ``winners`` win, the other ``ending`` copies lose.

        Args:
            ending: Every live copy of the finishing tasks, ascending.
            at: The instant each of them ends (its task's finishing time).
            winners: The copy that finished each task first.
            tasks: The finishing tasks, ascending.
            times: When each of them finished.
        """
        cols = self.copies.cols
        staged = self.staged
        ready, done_jobs, self.live = _complete_kernel(
            ending, at, winners, tasks, times, self.live, cols["task"], cols["slot"],
            cols["share"], cols["progress"], cols["base"], cols["end"], cols["outcome"],
            cols["wasted"], cols["cluster"], self.task_work, self.task_job, self.slot_used,
            self.slot_copies, self.task_live, self.job_live, self.task_state, self.task_done,
            self.task_cluster, self.task_saved, self.job_left, self.job_work_left,
            self.job_last, self.job_done, self.out_ptr, self.out_dst, self.pending, staged,
            self.group_running if staged else _NO_INT, self.group_of if staged else _NO_INT,
            self._scratch()[1])
        self._flows = None
        if ready.size:
            self._make_ready(ready, self._slot_end)
        if staged:
            self._make_ready(self._release_stages(tasks), self._slot_end)
        if self.capped:
            groups = self.group_of[tasks]
            groups = groups[self.group_capped[groups]]
            if groups.size:
                np.add.at(self.group_room, groups, 1)
                self._set_ready(self._admit_groups(np.unique(groups)), self._slot_end)
        self.finished_jobs.extend(done_jobs.tolist())
        self.completed.append(winners)

    # ------------------------------------------------------------------ accounting
    def work_balance(self) -> tuple[float, float, float]:
        """Return (executed, demanded by finished tasks, wasted) work over all copies."""
        n = self.copies.n
        cols = self.copies.cols
        done = self.task_state == DONE
        return (float(cols["executed"][:n].sum()), float(self.task_work[done].sum()),
                float(cols["wasted"][:n].sum()))


def _ptr(keys: np.ndarray, n: int) -> np.ndarray:
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return ptr


# ---------------------------------------------------------------------- compiled kernels
@njit(cache=True)
def _min(a, b):  # pragma: no cover - compiled
    """``np.minimum`` of two floats (NaN propagates)."""
    return a if a <= b or a != a else b


@njit(cache=True)
def _max(a, b):  # pragma: no cover - compiled
    """``np.maximum`` of two floats (NaN propagates)."""
    return a if a >= b or a != a else b


@njit(cache=True)
def _fold_groups(values, group, pos, out, largest):  # pragma: no cover - compiled
    """Fold each copy's run of ``values`` (``group`` starts) into ``out[pos]``.

    The minimum of the run and ``out`` (``np.minimum.reduceat`` then ``np.minimum``), or
    the maximum when ``largest``, in the same order.
    """
    n = values.size
    for g in range(group.size):
        lo = group[g]
        hi = group[g + 1] if g + 1 < group.size else n
        acc = values[lo]
        for j in range(lo + 1, hi):
            acc = _max(acc, values[j]) if largest else _min(acc, values[j])
        p = pos[lo]
        out[p] = _max(out[p], acc) if largest else _min(out[p], acc)


@njit(cache=True)
def _flow_kernel(live, in_lo, in_hi, cluster, i_src, i_size, i_received, move_src, move_dst,
                 pair_ptr, pair_res, n_clusters, n_res, done):  # pragma: no cover - compiled
    """The arrays of :meth:`Engine._flow_structure` in one pass.

    ``done`` is the received fraction from which an input counts as arrived.
    """
    total = 0
    for p in range(live.size):
        c = live[p]
        total += max(in_hi[c] - in_lo[c], 0)
    idx = np.empty(total, dtype=np.int64)
    pos = np.empty(total, dtype=np.int64)
    src = np.empty(total, dtype=np.int64)
    dst = np.empty(total, dtype=np.int64)
    n_flow = 0
    n_hop = 0
    for p in range(live.size):
        c = live[p]
        d = cluster[c]
        for i in range(in_lo[c], in_hi[c]):
            s = i_src[i]
            if s != d and i_size[i] > 0 and i_received[i] < done:
                idx[n_flow], pos[n_flow], src[n_flow], dst[n_flow] = i, p, s, d
                pair = s * n_clusters + d
                n_hop += pair_ptr[pair + 1] - pair_ptr[pair]
                n_flow += 1
    idx, pos, src, dst = idx[:n_flow], pos[:n_flow], src[:n_flow], dst[:n_flow]
    res = np.empty(n_hop, dtype=np.int64)
    starts = np.empty(n_flow, dtype=np.int64)
    users = np.zeros(n_res, dtype=np.int64)
    h = 0
    n_group = 0
    for j in range(n_flow):
        starts[j] = h
        pair = src[j] * n_clusters + dst[j]
        for q in range(pair_ptr[pair], pair_ptr[pair + 1]):
            res[h] = pair_res[q]
            users[res[h]] += 1
            h += 1
        if j == 0 or pos[j] != pos[j - 1]:
            n_group += 1
    group = np.empty(n_group, dtype=np.int64)
    g = 0
    for j in range(n_flow):
        if j == 0 or pos[j] != pos[j - 1]:
            group[g] = j
            g += 1
    n_move_hop = 0
    for j in range(move_src.size):
        pair = move_src[j] * n_clusters + move_dst[j]
        n_move_hop += pair_ptr[pair + 1] - pair_ptr[pair]
    move_res = np.empty(n_move_hop, dtype=np.int64)
    move_starts = np.empty(move_src.size, dtype=np.int64)
    h = 0
    for j in range(move_src.size):
        move_starts[j] = h
        pair = move_src[j] * n_clusters + move_dst[j]
        for q in range(pair_ptr[pair], pair_ptr[pair + 1]):
            move_res[h] = pair_res[q]
            users[move_res[h]] += 1
            h += 1
    return idx, pos, src, dst, res, starts, group, users, move_res, move_starts


@njit(cache=True)
def _rates(live, slot_of, task_of, share_of, factor_of, progress_of, level, avail, task_work,
           fetch, flows_on, idx, pos, src, res, starts, group, users, cap, reachable, i_size,
           i_received):  # pragma: no cover - compiled
    """Rates of the live copies and of their transfers, and the time each copy needs.

    ``avail`` is the availability factor of each live copy's slot (empty: none).

    Returns:
        Per copy: speed, work, share, rate, progress and time left; per transfer: its
        bandwidth, size, fetch rate, received fraction and time left (fetch mode).
    """
    n = live.size
    speed = np.empty(n)
    work = np.empty(n)
    share = np.empty(n)
    rate = np.empty(n)
    progress = np.empty(n)
    left = np.empty(n)
    for p in range(n):
        c = live[p]
        s = slot_of[c]
        sp = level[s]
        if avail.size:
            sp = sp * avail[p]
        speed[p] = sp
        w = task_work[task_of[c]]
        work[p] = w
        share[p] = share_of[c]
        rate[p] = share_of[c] * sp / (w * factor_of[c])
        progress[p] = progress_of[c]
    n_flow = idx.size if flows_on else 0
    bw = np.empty(n_flow)
    size = np.empty(n_flow)
    fetch_rate = np.empty(n_flow)
    got = np.empty(n_flow)
    fetch_left = np.empty(n_flow)
    for j in range(n_flow):
        end = starts[j + 1] if j + 1 < n_flow else res.size
        b = cap[res[starts[j]]] / users[res[starts[j]]]
        for h in range(starts[j] + 1, end):
            b = _min(b, cap[res[h]] / users[res[h]])
        if not reachable[src[j]]:
            b = 0.0
        bw[j] = b
        size[j] = i_size[idx[j]]
        fetch_rate[j] = b / size[j]
        got[j] = i_received[idx[j]]
        if fetch:
            fetch_left[j] = (1.0 - got[j]) / fetch_rate[j] if fetch_rate[j] > 0 else np.inf
    if n_flow and not fetch:
        _fold_groups(fetch_rate, group, pos, rate, False)
    for p in range(n):
        left[p] = (1.0 - progress[p]) / rate[p] if rate[p] > 0 else np.inf
    if n_flow and fetch:
        _fold_groups(fetch_left, group, pos, left, True)
    return speed, work, share, rate, progress, left, bw, size, fetch_rate, got, fetch_left


@njit(cache=True)
def _apply(live, elapsed, speed, work, share, rate, progress, win_pos, fetch, flows_on, idx,
           pos, group, bw, size, fetch_rate, got, fetch_left, c_progress, c_executed,
           c_share_time, c_speed_time, i_received, i_bw_time, i_fetch_time,
           slack):  # pragma: no cover - compiled
    """Move the live copies and their transfers through the span (``elapsed`` each).

    ``slack`` is ``1 + eps``. Writes progress, work and time integrals of the copies and
    the received fractions and transfer integrals of their inputs.

    Returns:
        MB moved by each transfer, and whether any input has arrived in full.
    """
    n = live.size
    reached = np.empty(n)
    for p in range(n):
        reached[p] = _min(progress[p] + rate[p] * elapsed[p], 1.0)
    n_flow = idx.size if flows_on else 0
    moved = np.empty(n_flow)
    arrived_any = False
    if n_flow and fetch:
        for g in range(group.size):
            lo = group[g]
            hi = group[g + 1] if g + 1 < group.size else n_flow
            p = pos[lo]
            least = 0.0
            for j in range(lo, hi):
                el = elapsed[pos[j]]
                arrived = _min(got[j] + fetch_rate[j] * el, 1.0)
                least = arrived if j == lo else _min(least, arrived)
                new_got = 1.0 if fetch_left[j] <= el * slack else arrived
                if new_got >= 1.0:
                    arrived_any = True
                moved[j] = (new_got - got[j]) * size[j]
                i_received[idx[j]] = new_got
                busy = _min(el, fetch_left[j])
                i_bw_time[idx[j]] += bw[j] * busy
                i_fetch_time[idx[j]] += busy
            reached[p] = _min(reached[p], _max(least, progress[p]))
    for w in range(win_pos.size):
        reached[win_pos[w]] = 1.0
    for p in range(n):
        c = live[p]
        c_progress[c] = reached[p]
        c_executed[c] += (reached[p] - progress[p]) * work[p]
        c_share_time[c] += share[p] * elapsed[p]
        c_speed_time[c] += speed[p] * elapsed[p]
    if n_flow and not fetch:
        for j in range(n_flow):
            el = elapsed[pos[j]]
            moved[j] = rate[pos[j]] * size[j] * el
            i_bw_time[idx[j]] += bw[j] * el
            i_fetch_time[idx[j]] += el
    return moved, arrived_any


@njit(cache=True)
def _step_kernel(live, slot_of, task_of, share_of, factor_of, progress_of, level, avail,
                 task_work, fetch, flows_on, idx, pos, src, res, starts, group, users, cap,
                 reachable, i_size, i_received, t, dt, limit, best_time, best_pos,
                 c_executed, c_share_time, c_speed_time, i_bw_time, i_fetch_time,
                 slack):  # pragma: no cover - compiled
    """One span of :meth:`Engine.advance`: rates, completions, then progress.

    :func:`_rates`, :func:`_finish_kernel` and :func:`_apply` in turn, what they pass
    each other kept here.

    Returns:
        MB moved by each transfer, whether an input arrived in full, then what
        :func:`_finish_kernel` returns but the time each copy ran.
    """
    speed, work, share, rate, progress, left, bw, size, fetch_rate, got, fetch_left = _rates(
        live, slot_of, task_of, share_of, factor_of, progress_of, level, avail, task_work,
        fetch, flows_on, idx, pos, src, res, starts, group, users, cap, reachable, i_size,
        i_received)
    elapsed, win_pos, tasks, times, ending, ending_at = _finish_kernel(
        live, task_of, left, t, dt, limit, best_time, best_pos)
    moved, arrived = _apply(
        live, elapsed, speed, work, share, rate, progress, win_pos, fetch, flows_on, idx, pos,
        group, bw, size, fetch_rate, got, fetch_left, progress_of, c_executed, c_share_time,
        c_speed_time, i_received, i_bw_time, i_fetch_time, slack)
    return moved, arrived, win_pos, tasks, times, ending, ending_at


@njit(cache=True)
def _free_count(slot_used, slot_ptr, reachable, eps):  # pragma: no cover - compiled
    """Whole free slots (used share at most ``eps``) per cluster, 0 where unreachable."""
    n = slot_ptr.size - 1
    free = np.zeros(n, dtype=np.int64)
    for c in range(n):
        if reachable[c]:
            k = 0
            for s in range(slot_ptr[c], slot_ptr[c + 1]):
                if slot_used[s] <= eps:
                    k += 1
            free[c] = k
    return free


@njit(cache=True)
def _finish_kernel(live, task_of, left, t, dt, limit, best_time,
                   best_pos):  # pragma: no cover - compiled
    """Copies that finish within the span, and the first of each task to finish.

    A copy whose time left is at most ``limit`` finishes at ``t + left``; the first of
    its task to finish (ties: the lowest copy id) wins, and every live copy of that task
    ends then. ``best_time`` (NaN) and ``best_pos`` (-1) are per-task scratch, left as
    found.

    Returns:
        Each live copy's time run in the span (``dt``, or up to its task's finishing
        instant), the winners' positions in ``live``, the finished tasks (ascending) and
        their finishing instants, and the positions of the copies that end with their
        instants.
    """
    n = live.size
    elapsed = np.full(n, dt)
    tasks = np.empty(n, dtype=np.int64)
    k = 0
    for p in range(n):
        if left[p] <= limit:
            j = task_of[live[p]]
            at = t + left[p]
            if best_pos[j] < 0:
                best_pos[j] = p
                best_time[j] = at
                tasks[k] = j
                k += 1
            elif at < best_time[j]:     # ``live`` ascends: ties keep the lowest copy
                best_pos[j] = p
                best_time[j] = at
    tasks = np.sort(tasks[:k])
    win_pos = np.empty(k, dtype=np.int64)
    times = np.empty(k)
    for i in range(k):
        win_pos[i] = best_pos[tasks[i]]
        times[i] = best_time[tasks[i]]
    m = 0
    if k:
        for p in range(n):
            if best_pos[task_of[live[p]]] >= 0:
                m += 1
    ending = np.empty(m, dtype=np.int64)
    ending_at = np.empty(m)
    m = 0
    if k:
        for p in range(n):
            j = task_of[live[p]]
            if best_pos[j] >= 0:
                at = best_time[j]
                ending[m] = p
                ending_at[m] = at
                m += 1
                el = at - t
                elapsed[p] = dt if el > dt else (0.0 if el < 0.0 else el)
    for i in range(k):
        best_pos[tasks[i]] = -1
        best_time[tasks[i]] = np.nan
    return elapsed, win_pos, tasks, times, ending, ending_at


@njit(cache=True)
def _complete_kernel(ending, at, winners, tasks, times, live, c_task, c_slot, c_share,
                     c_progress, c_base, c_end, c_outcome, c_wasted, c_cluster, task_work,
                     task_job, slot_used, slot_copies, task_live, job_live, task_state,
                     task_done, task_cluster, task_saved, job_left, job_work_left, job_last,
                     job_done, out_ptr, out_dst, pending, staged, group_running, group_of,
                     mark):  # pragma: no cover - compiled
    """The bookkeeping of :meth:`Engine._complete`, in the order its NumPy form had.

    Ends the ``ending`` copies (the task's winner won, the others lost; lost work is
    wasted), then marks ``tasks`` done, credits their jobs and releases their children.
    ``mark`` is per-task scratch (-1), left as found.

    Returns:
        The children whose last parent finished (ascending, unique), the jobs that
        finished (ascending, unique), and the live copies left.
    """
    for i in range(winners.size):
        c_progress[winners[i]] = 1.0
        mark[tasks[i]] = winners[i]
    for i in range(ending.size):
        c = ending[i]
        t = c_task[c]
        c_end[c] = at[i]
        lost = mark[t] != c
        c_outcome[c] = LOST if lost else WON
        c_wasted[c] += (c_progress[c] - c_base[c]) * task_work[t] if lost else 0.0
    for i in range(ending.size):
        c = ending[i]
        slot_used[c_slot[c]] -= c_share[c]
    for i in range(ending.size):
        c = ending[i]
        t = c_task[c]
        slot_copies[c_slot[c]] -= 1
        task_live[t] -= 1
        job_live[task_job[t]] -= 1
    n_live = 0
    for i in range(live.size):
        if c_outcome[live[i]] == ALIVE:
            n_live += 1
    left = np.empty(n_live, dtype=np.int64)
    n_live = 0
    for i in range(live.size):
        if c_outcome[live[i]] == ALIVE:
            left[n_live] = live[i]
            n_live += 1
    n_child = 0
    for i in range(tasks.size):
        t = tasks[i]
        mark[t] = -1
        task_state[t] = DONE
        task_done[t] = times[i]
        if staged:
            group_running[group_of[t]] -= 1
        task_cluster[t] = c_cluster[winners[i]]
        j = task_job[t]
        job_left[j] -= 1
        job_work_left[j] -= (1.0 - task_saved[t]) * task_work[t]
        task_saved[t] = 1.0
        job_last[j] = _max(job_last[j], times[i])
        n_child += out_ptr[t + 1] - out_ptr[t]
    for i in range(tasks.size):
        t = tasks[i]
        for e in range(out_ptr[t], out_ptr[t + 1]):
            pending[out_dst[e]] -= 1
    ready = np.empty(n_child, dtype=np.int64)
    n_ready = 0
    for i in range(tasks.size):
        t = tasks[i]
        for e in range(out_ptr[t], out_ptr[t + 1]):
            if pending[out_dst[e]] == 0:
                ready[n_ready] = out_dst[e]
                n_ready += 1
    ready = _sorted_unique(ready[:n_ready])
    done = np.empty(tasks.size, dtype=np.int64)
    n_done = 0
    for i in range(tasks.size):
        j = task_job[tasks[i]]
        if job_left[j] == 0:
            done[n_done] = j
            n_done += 1
    done = _sorted_unique(done[:n_done])
    for j in done:
        job_done[j] = job_last[j]
    return ready, done, left


@njit(cache=True)
def _sorted_unique(a):  # pragma: no cover - compiled
    """``np.unique`` of an int64 array."""
    if a.size < 2:
        return a.copy()
    a = np.sort(a)
    n = 1
    for i in range(1, a.size):
        if a[i] != a[n - 1]:
            a[n] = a[i]
            n += 1
    return a[:n]


@njit(cache=True)
def _account_kernel(src, dst, moved, res, starts, dt, gate_out, gate_in, egress, ingress,
                    link_mb, n_res):  # pragma: no cover - compiled
    """Add MB moved to the gate (per second of ``dt``), egress, ingress and link counters.

    Sums run in the order of the transfers, as ``np.bincount`` adds its weights.
    """
    n = gate_out.size
    out = np.zeros(n)
    into = np.zeros(n)
    per_res = np.zeros(n_res)
    for j in range(moved.size):
        out[src[j]] += moved[j]
        into[dst[j]] += moved[j]
        end = starts[j + 1] if j + 1 < starts.size else res.size
        for h in range(starts[j], end):
            per_res[res[h]] += moved[j]
    for c in range(n):
        gate_out[c] += out[c] / dt
        gate_in[c] += into[c] / dt
        egress[c] += out[c]
        ingress[c] += into[c]
    for d in range(link_mb.size):
        link_mb[d] += per_res[d]


@njit(cache=True)
def _inputs_kernel(tasks, raw_ptr, raw_cluster, raw_size, in_ptr, in_src, in_size,
                   task_cluster):  # pragma: no cover - compiled
    """Inputs of ``tasks`` (raw data, then parents' outputs), grouped by task in order."""
    total = 0
    for t in tasks:
        total += raw_ptr[t + 1] - raw_ptr[t] + in_ptr[t + 1] - in_ptr[t]
    owner = np.empty(total, dtype=np.int64)
    src = np.empty(total, dtype=np.int64)
    size = np.empty(total)
    j = 0
    for i in range(tasks.size):
        t = tasks[i]
        for r in range(raw_ptr[t], raw_ptr[t + 1]):
            owner[j], src[j], size[j] = i, raw_cluster[r], raw_size[r]
            j += 1
        for e in range(in_ptr[t], in_ptr[t + 1]):
            owner[j], src[j], size[j] = i, task_cluster[in_src[e]], in_size[e]
            j += 1
    return owner, src, size


@njit(cache=True)
def _count_inputs(tasks, raw_ptr, in_ptr):  # pragma: no cover - compiled
    """Number of inputs (raw, then parents' outputs) of ``tasks`` together."""
    total = 0
    for t in tasks:
        total += raw_ptr[t + 1] - raw_ptr[t] + in_ptr[t + 1] - in_ptr[t]
    return total


@njit(cache=True)
def _fill_inputs(tasks, copies, saved, row, raw_ptr, raw_cluster, raw_size, in_ptr, in_src,
                 in_size, task_cluster, i_copy, i_src, i_size, i_received, c_in_lo,
                 c_in_hi):  # pragma: no cover - compiled
    """Write the inputs of new ``copies`` of ``tasks`` from row ``row`` of the inputs table.

    In the order of :func:`_inputs_kernel`; each input has received its copy's ``saved``
    fraction; each copy's inputs are rows ``in_lo:in_hi``.
    """
    j = row
    for i in range(tasks.size):
        t, c, got = tasks[i], copies[i], saved[i]
        c_in_lo[c] = j
        for r in range(raw_ptr[t], raw_ptr[t + 1]):
            i_copy[j], i_src[j], i_size[j], i_received[j] = c, raw_cluster[r], raw_size[r], got
            j += 1
        for e in range(in_ptr[t], in_ptr[t + 1]):
            i_copy[j], i_src[j], i_size[j] = c, task_cluster[in_src[e]], in_size[e]
            i_received[j] = got
            j += 1
        c_in_hi[c] = j


@njit(cache=True)
def _homes_kernel(owner, src, size, n_clusters, home):  # pragma: no cover - compiled
    """Cluster of the largest summed input of each owner (ties: lowest id) into ``home``.

    ``owner`` is grouped; sizes add up in their order, as ``np.bincount`` adds weights.
    """
    total = np.zeros(n_clusters)
    seen = np.zeros(n_clusters, dtype=np.bool_)
    lo = 0
    while lo < owner.size:
        hi = lo
        while hi < owner.size and owner[hi] == owner[lo]:
            c = src[hi]
            if seen[c]:
                total[c] += size[hi]
            else:
                seen[c] = True
                total[c] = 0.0 + size[hi]
            hi += 1
        best = -1
        for j in range(lo, hi):
            c = src[j]
            if best < 0 or total[c] > total[best] or (total[c] == total[best] and c < best):
                best = c
        home[owner[lo]] = best
        for j in range(lo, hi):
            seen[src[j]] = False
        lo = hi


@njit(cache=True)
def _launch_check(tasks, clusters, task_state, reachable):  # pragma: no cover - compiled
    """First problem with a launch: ``(code, index)``, code 0 when there is none.

    Codes, checked in this order over all copies: 1 a task that does not exist, 2 a task
    neither ready nor running, then 3 a cluster that does not exist, 4 an unreachable one.
    """
    for i in range(tasks.size):
        if tasks[i] < 0 or tasks[i] >= task_state.size:
            return 1, i
    for i in range(tasks.size):
        state = task_state[tasks[i]]
        if state != READY and state != RUNNING:
            return 2, i
    for i in range(clusters.size):
        if clusters[i] < 0 or clusters[i] >= reachable.size:
            return 3, i
    for i in range(clusters.size):
        if not reachable[clusters[i]]:
            return 4, i
    return 0, 0


@njit(cache=True)
def _take_slots(slots, clusters, share, slot_ptr, slot_used, limit):  # pragma: no cover
    """The slots' used shares once the new copies take ``share`` each, in order.

    Returns:
        A new array of used shares, or an empty one when a slot is not in its copy's
        cluster or would exceed ``limit``.
    """
    fail = np.empty(0)
    if slots.size != clusters.size:
        return fail
    for i in range(slots.size):
        c, s = clusters[i], slots[i]
        if s < slot_ptr[c] or s >= slot_ptr[c + 1]:
            return fail
    used = slot_used.copy()
    for i in range(slots.size):
        used[slots[i]] += share
    for i in range(slots.size):
        if used[slots[i]] > limit:
            return fail
    return used


@njit(cache=True)
def _launch_kernel(tasks, clusters, slots, share, row, now, c_task, c_slot, c_cluster,
                   c_share, c_progress, c_base, c_start, task_state, task_saved, task_start,
                   task_copies, task_live, job_live, task_job, slot_copies, staged,
                   group_ready, group_running, group_of, live):  # pragma: no cover - compiled
    """Record new copies at rows ``row...`` and their tasks' new state.

    Returns:
        The live copies with the new ones, and how many ready tasks started running.
    """
    n = tasks.size
    started = 0
    for i in range(n):
        t = tasks[i]
        c = row + i
        s = slots[i]
        slot_copies[s] += 1
        c_task[c] = t
        c_slot[c] = s
        c_cluster[c] = clusters[i]
        c_share[c] = share
        c_progress[c] = task_saved[t]
        c_base[c] = task_saved[t]
        c_start[c] = now
    for i in range(n):
        t = tasks[i]
        if task_state[t] == READY:
            task_state[t] = RUNNING
            started += 1
            if staged:
                group_ready[group_of[t]] -= 1
                group_running[group_of[t]] += 1
            if np.isnan(task_start[t]):
                task_start[t] = now
    for i in range(n):
        t = tasks[i]
        task_copies[t] += 1
        task_live[t] += 1
        job_live[task_job[t]] += 1
    out = np.empty(live.size + n, dtype=np.int64)
    out[:live.size] = live
    for i in range(n):
        out[live.size + i] = row + i
    return out, started


@njit(cache=True)
def _whole_slot_plan(clusters, slot_ptr, slot_used, whole):  # pragma: no cover - compiled
    """Free slots for whole-slot copies on ``clusters``, and the draws choosing among them.

    Per cluster asked for (ascending): its copies (positions in ``clusters``, in order)
    and its free slots (spare share at least ``whole``, offsets in the cluster). Where
    there are more free slots than copies, ``Generator.choice(free, k, replace=False)``
    picks them: ``highs`` lists the upper bounds of its bounded integer draws, cluster
    after cluster (see :func:`_choice`).

    Returns:
        The clusters, where each one's copies start in ``where``, ``where``, the free
        offsets and where each cluster's start; then ``(-1, 0, 0, highs)``, or at the
        first cluster with too few free slots ``(cluster, free slots, copies asked, -)``.
    """
    n_clusters = slot_ptr.size - 1
    count = np.zeros(n_clusters + 1, dtype=np.int64)
    for c in clusters:
        count[c + 1] += 1
    n_uniq = 0
    total = 0
    for c in range(n_clusters):
        if count[c + 1]:
            n_uniq += 1
            total += slot_ptr[c + 1] - slot_ptr[c]
        count[c + 1] += count[c]
    where = np.empty(clusters.size, dtype=np.int64)
    fill = count[:-1].copy()
    for i in range(clusters.size):
        where[fill[clusters[i]]] = i
        fill[clusters[i]] += 1
    uniq = np.empty(n_uniq, dtype=np.int64)
    at = np.empty(n_uniq + 1, dtype=np.int64)
    free = np.empty(total, dtype=np.int64)
    free_ptr = np.empty(n_uniq + 1, dtype=np.int64)
    n_high = 0
    g = 0
    n = 0
    for c in range(n_clusters):
        k = count[c + 1] - count[c]
        if k == 0:
            continue
        uniq[g], at[g], free_ptr[g] = c, count[c], n
        lo = slot_ptr[c]
        for s in range(lo, slot_ptr[c + 1]):
            if 1.0 - slot_used[s] >= whole:
                free[n] = s - lo
                n += 1
        pop = n - free_ptr[g]
        if pop < k:
            return uniq, at, where, free, free_ptr, c, pop, k, np.empty(0, np.int64)
        if pop > k:
            n_high += _n_draws(pop, k)
        g += 1
    at[n_uniq], free_ptr[n_uniq] = clusters.size, n
    highs = np.empty(n_high, dtype=np.int64)
    h = 0
    for g in range(n_uniq):
        k = at[g + 1] - at[g]
        pop = free_ptr[g + 1] - free_ptr[g]
        if pop == k:
            continue
        if pop > 10000 and k > pop // 50:
            for i in range(pop - 1, max(pop - k, 1) - 1, -1):
                highs[h] = i
                h += 1
        else:
            for j in range(pop - k, pop):
                highs[h] = j
                h += 1
            for i in range(k - 1, 0, -1):
                highs[h] = i
                h += 1
    return uniq, at, where, free, free_ptr, -1, 0, 0, highs


@njit(cache=True)
def _n_draws(pop, k):  # pragma: no cover - compiled
    """Bounded integer draws ``Generator.choice(pop, k, replace=False)`` makes."""
    if pop > 10000 and k > pop // 50:
        return pop - max(pop - k, 1)
    return k + k - 1


@njit(cache=True)
def _whole_slot_assign(uniq, at, where, free, free_ptr, slot_ptr,
                       draws):  # pragma: no cover - compiled
    """The slot of each copy from :func:`_whole_slot_plan` and the draws it asked for."""
    out = np.empty(where.size, dtype=np.int64)
    d = 0
    for g in range(uniq.size):
        lo = slot_ptr[uniq[g]]
        k = at[g + 1] - at[g]
        got = free[free_ptr[g]:free_ptr[g + 1]]
        if got.size == k:
            for q in range(k):
                out[where[at[g] + q]] = lo + got[q]
            continue
        n = _n_draws(got.size, k)
        pick = _choice(got.size, k, draws[d:d + n])
        d += n
        for q in range(k):
            out[where[at[g] + q]] = lo + got[pick[q]]
    return out


@njit(cache=True)
def _choice(pop, k, draws):  # pragma: no cover - compiled
    """``Generator.choice(pop, k, replace=False)`` given its bounded integer draws.

    NumPy's algorithm: a partial Fisher-Yates shuffle of ``arange(pop)`` for a large
    sample of a large population, else Floyd's sampling followed by a shuffle. Draw
    ``i`` is uniform on ``[0, highs[i]]`` (:func:`_whole_slot_plan`), as
    ``Generator.integers(0, highs + 1)`` makes it.
    """
    idx = np.empty(k, dtype=np.int64)
    d = 0
    if pop > 10000 and k > pop // 50:
        perm = np.arange(pop)
        for i in range(pop - 1, max(pop - k, 1) - 1, -1):
            j = draws[d]
            d += 1
            perm[i], perm[j] = perm[j], perm[i]
        idx[:] = perm[pop - k:]
        return idx
    seen = np.zeros(pop, dtype=np.bool_)
    for j in range(pop - k, pop):
        val = draws[d]
        d += 1
        if seen[val]:
            val = j
        seen[val] = True
        idx[j - pop + k] = val
    for i in range(k - 1, 0, -1):
        j = draws[d]
        d += 1
        idx[i], idx[j] = idx[j], idx[i]
    return idx
