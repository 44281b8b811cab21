"""The :class:`Engine`: tasks, copies, slots and transfers of one run, slot by slot.

The engine's state lives in named records (:mod:`geosim.engine.records`, and the tables'
records of :mod:`geosim.engine.tables`) that its compiled kernels take whole. Readers
reach the arrays through the engine's properties (``task_state``, ``job_done``,
``slot_used``, ...); only the engine's own methods change them.
"""

from __future__ import annotations

import math

import numpy as np

from geosim.engine.base import (
    ALIVE,
    DONE,
    EPS,
    FAILED,
    KILLED,
    NO_FLOAT,
    NO_INT,
    READY,
    RUNNING,
    TIME_RESOLUTION,
    TRANSFER_MODES,
    WAITING,
    WON,
    SchedulingError,
    first_of_runs,
    pointers,
)
from geosim.engine.checkpoint import checkpoint_copies
from geosim.engine.launch import (
    launch_check,
    launch_kernel,
    new_copy_factors,
    pick_slots,
    take_slots,
)
from geosim.engine.records import Flows, Graph, JobState, TaskState, new_slot_state, recount_slots
from geosim.engine.records import field_property as _field
from geosim.engine.sharing import SHARING_RULES, allocate, empty_memory
from geosim.engine.stages import Stages
from geosim.engine.step import (
    WITHIN,
    change_that_matters,
    complete_kernel,
    leave_slots,
    next_event_kernel,
    run_step,
    stream_demand,
    time_left_kernel,
)
from geosim.engine.subspans import NEED_BLOCK, NEED_ROUTES, REACHED, Completions, run_subspans
from geosim.engine.tables import COPY_SPEC, ID_MAX, INPUT_SPEC, CopyCols, InputCols, Table
from geosim.engine.transfers import (
    RawMoves,
    account_kernel,
    count_inputs,
    fill_inputs,
    flow_structure,
    homes_kernel,
    inputs_kernel,
    new_traffic,
)
from geosim.errors import GeosimError
from geosim.guards import Budget
from geosim.processes import NO_RENEWAL
from geosim.variability import FAMILIES
from geosim.workload import Workload
from geosim.world import World

#: No transfer in a span.
_NO_FLOWS = Flows(*([NO_INT] * len(Flows._fields)))


class Engine:
    """Tasks, copies, slots and transfers of one run, advanced slot by slot.

    Args:
        world: The clusters, slots and WAN.
        workload: Every job of the run.
        dt: Length of a time slot (s).
        rng: Stream for choosing among equally good free slots.
        transfer: ``"fetch"`` or ``"stream"``, see :mod:`geosim.engine`.
        sharing: ``"maxmin"`` or ``"equal"``, how transfers share the WAN
            (:mod:`geosim.engine.sharing`).
        data_lag: A job's raw input exists this long before it arrives (s).
        variability: Family of the copies' work factors of tasks of positive ``task_cv``.
        copy_key: Key of the counter-based stream of copy factors (from the run's seed).
        budget: The run's memory limit, asked before the copies and inputs tables grow.

    Attributes:
        time: The engine's clock (s); see :meth:`jump_to`.
        reachable: Whether each cluster is reachable now; see :meth:`set_reachable`.
        reach_version: Changes of :attr:`reachable` so far.
        live: Ids of the live copies, ascending.
        n_ready: Tasks ready (no live copy) now.
        next_job: The first job not yet arrived.
        next_announced: The first job whose raw input does not exist yet.
        copies: The copies table (:data:`~geosim.engine.tables.COPY_SPEC`).
        inputs: The copy inputs table (:data:`~geosim.engine.tables.INPUT_SPEC`).
        completed: Winner copy ids of each span of the last :meth:`advance`.
        finished_jobs: Ids of the jobs finished so far, in order.
        tasks, jobs, slots, graph: The state records (:mod:`geosim.engine.records`).
        stages: The stage barriers and caps (:class:`~geosim.engine.stages.Stages`).
        moves: Raw-input moves (:class:`~geosim.engine.transfers.RawMoves`).
        traffic: The traffic counters (:class:`~geosim.engine.records.Traffic`).
        flows: The transfers of the last span (:class:`~geosim.engine.records.Flows`).
        flow_bw: Their bandwidths (MB/s) in that span, flows then moves.
        flow_demand: The most each of them could use (empty: no limit).
        flow_active: Whether each of them could move (its clusters reachable).
        last_span: Length (s) of the last span run.
        compiled_subspans: False runs event timing's sub-spans in Python (same results).
    """

    compiled_subspans = True

    def __init__(self, world: World, workload: Workload, dt: float, rng: np.random.Generator,
                 transfer: str = "fetch", data_lag: float = 0.0, variability: str = "pareto",
                 copy_key: int = 0, budget: Budget | None = None, sharing: str = "maxmin"):
        if transfer not in TRANSFER_MODES:
            raise ValueError(f"transfer mode {transfer!r} not in {TRANSFER_MODES}")
        if sharing not in SHARING_RULES:
            raise ValueError(f"sharing rule {sharing!r} not in {SHARING_RULES}")
        if variability not in FAMILIES:
            raise ValueError(f"copy variability {variability!r} not in {FAMILIES}")
        if not data_lag >= 0.0:
            raise ValueError(f"data_lag must be >= 0, got {data_lag}")
        self.world, self.wl, self.dt, self.rng = world, workload, dt, rng
        self.data_lag = float(data_lag)
        self.fetch, self.sharing = transfer == "fetch", sharing
        self.flows, self.flow_bw, self.flow_demand = _NO_FLOWS, NO_FLOAT, NO_FLOAT
        self.flow_active = np.empty(0, dtype=bool)
        self.last_span = dt
        self._alloc, self._alloc_key = (NO_FLOAT, self.flow_active), None
        self.time = 0.0
        n_tasks, n_jobs = workload.n_tasks, workload.n_jobs
        if max(n_tasks, world.n_slots, world.n_clusters) > ID_MAX:
            raise GeosimError(f"a run holds at most {ID_MAX:,} tasks, slots and clusters "
                              "(their ids are 32-bit)")
        wl = workload
        in_order = np.argsort(wl.edge_dst, kind="stable")
        out_order = np.argsort(wl.edge_src, kind="stable")
        # Raw inputs' clusters are copied: moves before arrival change them.
        self.graph = Graph(
            raw_ptr=wl.raw_ptr, raw_cluster=wl.raw_cluster.copy(), raw_size=wl.raw_size,
            in_ptr=pointers(wl.edge_dst, n_tasks), in_src=wl.edge_src[in_order],
            in_size=wl.edge_size[in_order], out_ptr=pointers(wl.edge_src, n_tasks),
            out_dst=wl.edge_dst[out_order])
        pending = np.bincount(wl.edge_dst, minlength=n_tasks).astype(np.int64)
        self.task_cv = wl.task_cv
        self.variability = variability if np.any(wl.task_cv > 0) else "none"
        self.copy_key, self.copy_bounds = int(copy_key), wl.copy_bounds
        self.stages = Stages(wl, pending)
        self.staged, self.capped = self.stages.staged, self.stages.capped

        self.tasks = TaskState(
            job=wl.job_of_task, work=wl.task_work,
            state=np.full(n_tasks, WAITING, dtype=np.int8), ready=np.full(n_tasks, np.nan),
            start=np.full(n_tasks, np.nan), done=np.full(n_tasks, np.nan),
            cluster=np.full(n_tasks, -1, dtype=np.int64),
            home=np.full(n_tasks, -1, dtype=np.int64), saved=np.zeros(n_tasks),
            copies=np.zeros(n_tasks, dtype=np.int64), live=np.zeros(n_tasks, dtype=np.int64),
            checkpoints=np.zeros(n_tasks, dtype=np.int64), pending=pending)
        self.jobs = JobState(
            left=np.diff(wl.task_ptr).astype(np.int64), done=np.full(n_jobs, np.nan),
            last=np.full(n_jobs, -np.inf), checkpoints=np.zeros(n_jobs, dtype=np.int64),
            work_left=np.bincount(wl.job_of_task, weights=wl.task_work, minlength=n_jobs),
            live=np.zeros(n_jobs, dtype=np.int64), waiting=np.diff(wl.task_ptr).astype(np.int64))
        self.slots = new_slot_state(world.slot_cluster, world.n_clusters)
        # The records complete_kernel takes (their arrays are the engine's for the run).
        self._records = (tuple(self.tasks), tuple(self.jobs), tuple(self.slots),
                         tuple(self.graph), tuple(self.stages.groups))
        # Without raw inputs or DAG edges no copy ever fetches anything.
        self.has_inputs = wl.n_raw > 0 or wl.n_edges > 0
        self._task_scratch: tuple[np.ndarray, np.ndarray] | None = None   # see _scratch
        self.next_job = 0
        self.next_announced = 0
        self.moves = RawMoves()
        self.n_ready = 0

        self.reachable = np.ones(world.n_clusters, dtype=bool)
        self.reach_version = 0
        self.copies = Table(COPY_SPEC, name="copies", budget=budget, max_rows=ID_MAX,
                            record=CopyCols)
        self.inputs = Table(INPUT_SPEC, capacity=4096, name="inputs", budget=budget,
                            record=InputCols)
        self.live = np.empty(0, dtype=np.int64)
        self._flows: Flows | None = None
        self.traffic = new_traffic(world.n_clusters, world.n_links)
        # Scratch kept between calls: traffic accounting's (zeroed), max-min's (-1 each)
        n, n_res = world.n_clusters, 2 * world.n_links + 2 * world.n_clusters
        self._account_scratch = (np.zeros(n), np.zeros(n), np.zeros(n_res))
        self._res_local = np.full(n_res, -1, dtype=np.int64)
        self._maxmin_memory = empty_memory(n_res)     # the last max-min allocation's
        self._gates_used = False          # the gates hold a span's traffic (to be zeroed)
        self._wan_mb = 0.0
        self._slot_end = 0.0       # end of the span being advanced (children ready then)
        self.completed: list[np.ndarray] = []
        self.finished_jobs: list[int] = []

    # ------------------------------------------------------------------ state, read-only
    task_job = _field("tasks", "job", "Job of each task.")
    task_work = _field("tasks", "work", "Mean work of each task (MI).")
    task_state = _field("tasks", "state", "State of each task (WAITING ... DONE).")
    task_ready = _field("tasks", "ready", "When each task last became ready (NaN: never).")
    task_start = _field("tasks", "start", "When each task's first copy started.")
    task_done = _field("tasks", "done", "When each task finished (NaN: not yet).")
    task_cluster = _field("tasks", "cluster", "Cluster of each finished task's winner.")
    task_home = _field("tasks", "home", "Cluster holding most of each ready task's input.")
    task_saved = _field("tasks", "saved", "Fraction of each task kept by checkpoints.")
    task_copies = _field("tasks", "copies", "Copies ever launched of each task.")
    task_live = _field("tasks", "live", "Live copies of each task.")
    task_checkpoints = _field("tasks", "checkpoints", "Checkpoints of each task.")
    pending = _field("tasks", "pending", "Unfinished parents and barriers of each task.")
    job_left = _field("jobs", "left", "Unfinished tasks of each job.")
    job_done = _field("jobs", "done", "When each job finished (NaN: not yet).")
    job_last = _field("jobs", "last", "When each job's last finished task finished.")
    job_checkpoints = _field("jobs", "checkpoints", "Checkpoints of each job.")
    job_work_left = _field("jobs", "work_left", "Work each job still needs, checkpoints "
                                                "counted (MI).")
    job_live = _field("jobs", "live", "Live copies of each job.")
    job_waiting = _field("jobs", "waiting", "Tasks of each job not yet ready.")
    slot_used = _field("slots", "used", "Share of each slot in use.")
    slot_copies = _field("slots", "copies", "Copies on each slot.")
    raw_cluster = _field("graph", "raw_cluster", "Cluster holding each raw input.")
    in_ptr = _field("graph", "in_ptr", "Each task's parent edges: ``in_ptr[t]:in_ptr[t+1]``.")
    in_src = _field("graph", "in_src", "Parent task of each parent edge.")
    in_size = _field("graph", "in_size", "Size of each parent edge's data (MB).")
    out_ptr = _field("graph", "out_ptr", "Each task's child edges: ``out_ptr[t]:out_ptr[t+1]``.")
    out_dst = _field("graph", "out_dst", "Child task of each child edge.")
    group_of = _field("stages.groups", "of", "Stage group of each task.")
    group_ptr = _field("stages.groups", "ptr", "Each group's tasks (CSR).")
    group_left = _field("stages.groups", "left", "Unfinished tasks of each group.")
    group_child_ptr = _field("stages.groups", "child_ptr", "Each group's child groups (CSR).")
    group_child = _field("stages.groups", "child", "Child group of each group edge.")
    group_waiting = _field("stages.groups", "waiting", "Unfinished parent groups of each group.")
    group_ready = _field("stages.groups", "ready", "Ready tasks of each group.")
    group_running = _field("stages.groups", "running", "Running tasks of each group.")
    job_groups = _field("stages.groups", "job_groups", "Each job's groups (CSR).")
    group_capped = _field("stages.groups", "capped", "Whether each group has a cap.")
    group_room = _field("stages.groups", "room", "Tasks each capped group may still admit.")
    group_next = _field("stages.groups", "next_task", "Next task each capped group admits.")
    move_raw = _field("moves", "raw", "Raw input of each running move.")
    move_src = _field("moves", "src", "Source cluster of each running move.")
    move_dst = _field("moves", "dst", "Destination cluster of each running move.")
    move_got = _field("moves", "got", "Fraction of each running move arrived.")
    moved_mb = _field("moves", "moved_mb", "MB of raw input that reached its new cluster.")
    moves_done = _field("moves", "done", "Moves completed.")
    moves_abandoned = _field("moves", "abandoned", "Moves still running when their job arrived.")
    gate_out = _field("traffic", "gate_out", "MB/s out of each cluster in the last span.")
    gate_in = _field("traffic", "gate_in", "MB/s into each cluster in the last span.")
    egress_mb = _field("traffic", "egress", "MB out of each cluster since the last sample.")
    ingress_mb = _field("traffic", "ingress", "MB into each cluster since the last sample.")
    link_mb = _field("traffic", "link", "MB over each link direction since the last "
                                        "sample (``2e`` u→v, ``2e+1`` v→u).")

    @property
    def wan_mb(self) -> float:
        """MB carried over the WAN so far."""
        return self._wan_mb

    # ------------------------------------------------------------------ writes from outside
    def jump_to(self, t: float) -> None:
        """Move the clock to ``t`` without running any copy (an idle span)."""
        self.time = float(t)

    def set_reachable(self, on: np.ndarray) -> None:
        """Set which clusters are reachable (a copy of ``on`` is kept).

        :attr:`reach_version` counts the calls that changed the set, so a reader can tell
        "unchanged since I last looked" without comparing arrays.
        """
        on = np.asarray(on, dtype=bool)
        if on.tobytes() != self.reachable.tobytes():        # one memcmp, no ufuncs
            self.reachable = on.copy()
            self.reach_version += 1

    def reset_traffic(self) -> None:
        """Zero the egress, ingress and link counters (after a sample read them)."""
        for counter in (self.traffic.egress, self.traffic.ingress, self.traffic.link):
            counter[:] = 0.0

    def apply_pool_outcome(self, live: np.ndarray, n_copies: int, next_job: int,
                           time: float) -> None:
        """Take the state left by a loop that ran the tasks and copies arrays itself.

        The loop (:mod:`geosim.poolsim`) filled tasks, slots and the first ``n_copies``
        rows of the copies table; this brings the engine's other counters in line.

        Args:
            live: Ids of the live copies, ascending.
            n_copies: Rows of the copies table used.
            next_job: The first job not yet arrived.
            time: The clock.
        """
        self.copies.set_rows(n_copies)
        self.live = np.array(live, dtype=np.int64)
        done = self.task_state == DONE
        jobs = self.jobs
        jobs.done[done] = self.task_done[done]
        jobs.last[done] = self.task_done[done]
        jobs.left[done] = 0
        jobs.live[:] = self.task_live
        jobs.waiting[:] = np.bincount(self.task_job, self.task_state == WAITING, jobs.left.size)
        self.n_ready = int(np.count_nonzero(self.task_state == READY))
        recount_slots(self.slots)
        self.next_job = int(next_job)
        self.next_announced = max(self.next_announced, self.next_job)
        self.time = float(time)

    # ------------------------------------------------------------------ queries
    def free_slots(self) -> np.ndarray:
        """Whole free slots per cluster (0 for unreachable clusters)."""
        return np.where(self.reachable, self.world.slots - self.slots.busy, 0)

    def inputs_of(self, tasks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Inputs of ready tasks: raw data, then parents' outputs where the parents ran.

        Returns:
            For every input, grouped by task in the order of ``tasks``: the position of its
            task in ``tasks``, the cluster holding it, and its size (MB).
        """
        return inputs_kernel(np.asarray(tasks, dtype=np.int64), tuple(self.graph),
                             self.tasks.cluster)

    def task_inputs(self, task: int) -> tuple[np.ndarray, np.ndarray]:
        """Clusters and sizes (MB) of a ready task's inputs (raw, then parents' outputs)."""
        _, src, size = self.inputs_of(np.array([task]))
        return src, size

    def remaining_work(self, jobs: np.ndarray) -> np.ndarray:
        """Work (MI) each job still needs.

        Its unfinished tasks' work, less checkpoints and each one's most advanced live copy.
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
        moves = self.moves
        if moves.raw.size:
            arriving = self.wl.raw_task[moves.raw] < self.wl.task_ptr[j1]
            if arriving.any():
                moves.abandoned += int(arriving.sum())
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
        if self.moves.start(raws, clusters, (self.wl.raw_task, self.task_job),
                            (self.next_job, self.next_announced), self.raw_cluster,
                            self.world.n_clusters):
            self._flows = None

    def _drop_moves(self, mask: np.ndarray) -> None:
        self.moves.drop(mask)
        self._flows = None

    def _make_ready(self, tasks: np.ndarray, at: float | np.ndarray) -> None:
        """Tasks whose dependencies are met become ready (those admitted, under caps)."""
        if self.capped and tasks.size:
            tasks = self.stages.admit(tasks)
        self._set_ready(tasks, at)

    def _set_ready(self, tasks: np.ndarray, at: float | np.ndarray) -> None:
        if tasks.size == 0:
            return
        self.task_state[tasks] = READY
        self.task_ready[tasks] = at
        self.n_ready += tasks.size
        np.subtract.at(self.jobs.waiting, self.task_job[tasks], 1)
        if self.staged:
            self.stages.count_ready(tasks)
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
        homes_kernel(owner, src, size, self.world.n_clusters, home)
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
            SchedulingError: A task not ready or running, a share outside (EPS, 1], an
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
        code, at = launch_check(tasks, clusters, self.task_state, self.reachable)
        if code == 1:
            raise IndexError(f"task {tasks[at]} does not exist")
        if code == 2:
            raise SchedulingError(f"task {tasks[at]} is not ready "
                                  f"(state {self.task_state[tasks[at]]})")
        if not EPS < share <= 1.0:
            raise SchedulingError(f"share {share} outside ({EPS:g}, 1]")
        if code == 3:
            raise IndexError(f"cluster {clusters[at]} does not exist")
        if code == 4:
            raise SchedulingError(f"cluster {clusters[at]} is unreachable")
        ptr = self.world.slot_ptr
        slots = pick_slots(clusters, share, ptr, self.slot_used, self.rng) if slots is None \
            else np.asarray(slots, dtype=np.int64).ravel()
        if not take_slots(slots, clusters, share, ptr, self.slot_used, 1.0 + EPS):
            raise SchedulingError(f"slots {slots.tolist()} cannot take share {share:g}")
        self.world.power.sync(slots)      # a keyed power's level for the period, if not yet
        rows = self.copies.append(n)
        ids = np.arange(rows.start, rows.stop)
        if self.variability != "none":
            self.copies.cols["factor"][rows] = new_copy_factors(
                tasks, self.task_copies, self.task_cv, self.variability, self.copy_key,
                self.tasks.work, self.copy_bounds)
        self._add_inputs(ids, tasks, self.task_saved[tasks])
        self.live, started = launch_kernel(
            tasks, clusters, slots, share, rows.start, self.time, self.copies.kernel_arg,
            tuple(self.tasks), tuple(self.jobs), tuple(self.slots), self.staged,
            tuple(self.stages.groups), self.live)
        self.n_ready -= started
        self._flows = None
        return ids

    def _add_inputs(self, copies: np.ndarray, tasks: np.ndarray, saved: np.ndarray) -> None:
        """Record each new copy's inputs: raw data, then its parents' outputs.

        The fraction its task saved at a checkpoint counts as received already.
        """
        if not self.has_inputs:
            return          # in_lo = in_hi = 0: no inputs
        graph = tuple(self.graph)
        rows = self.inputs.append(count_inputs(tasks, graph))
        fill_inputs(tasks, copies, saved, rows.start, graph, self.tasks.cluster,
                    self.inputs.kernel_arg, self.copies.kernel_arg)

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
            self.stages.count_idle(idle)

    def checkpoint_jobs(self, jobs: np.ndarray) -> None:
        """Checkpoint every job of ``jobs`` that has running copies, in one pass.

        See :func:`~geosim.engine.checkpoint.checkpoint_copies` (002 §3).
        """
        if checkpoint_copies(self.live, self.copies.cols, self.inputs.cols["received"], jobs,
                             self.tasks, self.jobs, self.task_work):
            self._flows = None

    def set_share(self, copies: np.ndarray | int, share: float) -> None:
        """Set the slot share of live copies (multitasking); the result must fit every slot."""
        copies = np.atleast_1d(np.asarray(copies, dtype=np.int64))
        cols = self.copies.cols
        if np.any(cols["outcome"][copies] != ALIVE):
            raise SchedulingError(f"copy {copies[cols['outcome'][copies] != ALIVE][0]} is not live")
        slots = cols["slot"][copies]
        used = self.slot_used
        before = used[slots]                  # touched slots only: the cost of the copies
        np.add.at(used, slots, share - cols["share"][copies])
        if not EPS < share <= 1.0 or np.any(used[slots] > 1.0 + EPS):
            used[slots] = before              # a repeated slot has one value before: exact
            raise SchedulingError(f"share {share:g} does not fit slots {np.unique(slots)}")
        cols["share"][copies] = share

    def fail_clusters(self, clusters: np.ndarray) -> int:
        """Kill every live copy on clusters hit by an outage (outcome ``failed``).

        Returns:
            The number of copies killed.
        """
        if clusters.size == 0 or not self.slots.busy[clusters].any():   # no copy there
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
        leave_slots(cols["slot"][copies], cols["share"][copies], tuple(self.slots))
        np.subtract.at(self.task_live, t, 1)
        np.subtract.at(self.job_live, self.task_job[t], 1)
        # Every ended copy is live, and ``live`` ascends.
        self.live = np.delete(self.live, np.searchsorted(self.live, copies))
        self._flows = None

    # ------------------------------------------------------------------ transfers
    def _flow_structure(self) -> Flows:
        """Remote inputs of live copies, raw-input moves and the resources they cross (cached).

        Returns:
            The :class:`~geosim.engine.records.Flows`.
        """
        if self._flows is not None:
            return self._flows
        world, moves = self.world, self.moves
        self._flows = flow_structure(
            self.live, self.copies.kernel_arg, self.inputs.kernel_arg, moves.src, moves.dst,
            world.routes, 1.0 - EPS)
        return self._flows

    def _account(self, src: np.ndarray, dst: np.ndarray, moved: np.ndarray, res: np.ndarray,
                 starts: np.ndarray, dt: float) -> None:
        """Add MB moved to the link and WAN counters, and MB / ``dt`` to the gates'."""
        self._wan_mb += account_kernel(src, dst, moved, res, starts, dt, tuple(self.traffic),
                                       *self._account_scratch)
        self._gates_used = True

    def _bandwidths(self, flows: Flows, factor: np.ndarray) -> np.ndarray:
        """Bandwidth of every transfer of the span, flows then moves (:mod:`.sharing`).

        Also kept as :attr:`flow_bw` with the span's :attr:`flows`.
        """
        maxmin = self.sharing == "maxmin"
        demand = NO_FLOAT
        if maxmin and not self.fetch and flows.idx.size:
            demand = stream_demand(self.live, self.copies.kernel_arg, self.inputs.kernel_arg,
                                   self.task_work, self.world.power.level, factor,
                                   tuple(flows), self.moves.src.size)
        # Without demands the allocation depends only on the transfers (the cached
        # structure), the reachable clusters and the link bandwidths: an event-timed step
        # asks it twice (the time to the next event, then the span).
        link_bw = self.world.link_bw
        key = (self.reach_version, link_bw.epoch if link_bw is not None else 0)
        held = self._alloc_key
        if demand.size or held is None or held[0] is not flows or held[1:] != key:
            *self._alloc, self._maxmin_memory = allocate(
                tuple(flows), self.moves.src, self.moves.dst, self.world.resource_capacity(),
                self.reachable, maxmin, demand, self._res_local, self._maxmin_memory)
            self._alloc_key = None if demand.size else (flows, *key)
        self.flows, self.flow_demand = flows, demand
        self.flow_bw, self.flow_active = self._alloc
        return self.flow_bw

    def _advance_moves(self, flows: Flows, bw: np.ndarray, dt: float, gate_dt: float) -> None:
        """Run the raw-input moves through ``dt`` seconds at bandwidths ``bw``."""
        moves = self.moves
        src, dst = moves.src, moves.dst
        moved, done = moves.advance(bw, self.wl.raw_size, dt)
        self._account(src, dst, moved, flows.move_res, flows.move_starts, gate_dt)
        if done.any():
            self.raw_cluster[moves.raw[done]] = dst[done]
            self._drop_moves(done)

    # ------------------------------------------------------------------ time
    def advance(self, slots: int = 1, span: float | None = None,
                through_events: bool = False, to_completion: bool = True) -> None:
        """Run every live copy through ``slots`` time slots ``[time, time + slots * dt]``.

        More than one slot at once is exact only when every rate is constant over the
        span (see :meth:`quiet_slots`). ``span`` (seconds) replaces ``slots * dt``: event
        timing runs to the next event instant (:meth:`time_to_completion`).

        Args:
            slots: Slots to run.
            span: Seconds to run instead.
            through_events: Event timing: run ``span`` as exact sub-spans, each to the
                next instant a rate or a share can change (:meth:`time_to_event`; in one
                compiled loop, :mod:`.subspans`, when copies read input and no move
                runs), so that such instants cost no model step unless they are decision
                points. No rate may change otherwise within ``span``. Gate rates and
                :attr:`last_span` are then over the whole run.
            to_completion: With ``through_events``, return after the first sub-span in
                which a task completes (a decision point of an event-driven scheduler);
                False runs the whole span (a scheduler that decides at slot boundaries).
        """
        if self._gates_used:          # the last run's gate rates are zeroed
            self.gate_out[:] = 0.0
            self.gate_in[:] = 0.0
            self._gates_used = False
        if not through_events:
            self._run_span(self.dt * slots if span is None else float(span), 0.0)
            return
        start, stop = self.time, self.time + float(span)
        completed = []
        pending = np.array([0.0, -1.0, 0.0])       # a sub-span waiting for draws
        while True:
            if self.compiled_subspans and self.live.size and self.has_inputs \
                    and not self.moves.raw.size:
                code = self._compiled_subspans(stop, pending, not to_completion)
                completed.extend(self.completed)    # all the call ended, before any continue
                if code == NEED_ROUTES:     # the flows are rebuilt here, routes added
                    self._flow_structure()
                    continue
                if code == NEED_BLOCK:
                    continue
                last = code == REACHED
            else:
                left = stop - self.time
                dt = max(min(left, self.time_to_event(left)),
                         TIME_RESOLUTION * max(1.0, self.time))
                last = dt >= left
                self._run_span(left if last else dt, 1.0)
                completed.extend(self.completed)
            if last or (to_completion and self.completed):
                break
        self.completed = completed
        self.last_span = self.time - start
        if self._gates_used:          # MB moved, into MB/s over the whole run
            np.divide(self.gate_out, self.last_span, out=self.gate_out)
            np.divide(self.gate_in, self.last_span, out=self.gate_in)

    def _compiled_subspans(self, stop: float, pending: np.ndarray, through: bool) -> int:
        """Run sub-spans in one compiled loop (:func:`~.subspans.run_subspans`) and apply them.

        ``through``: the loop ends completions itself and runs on, unless stages or caps
        need Python at a completion (see :mod:`.subspans`).

        Returns:
            Why the loop returned; after :data:`~.subspans.NEED_BLOCK` the block is drawn
            and ``pending`` holds the sub-span to finish.
        """
        world, avail = self.world, self.world.availability
        flows = self._flows if self._flows is not None else _NO_FLOWS
        (code, t, epoch, n_spans, wan, span_len, flows, flows_ok, bw, active, demand, ending,
         ending_at, win_at, tasks, times, kind, block, ended, self._maxmin_memory) = run_subspans(
            self.time, stop, TIME_RESOLUTION, EPS, self.live, self.copies.kernel_arg,
            self.inputs.kernel_arg, self.task_work, world.power.level,
            NO_RENEWAL if avail is None else avail.kernel_arg,
            math.inf if avail is None else avail.max_level,
            0 if avail is None else avail.epoch, pending, self._wan_mb, tuple(flows),
            self._flows is not None, world.routes.pair_table(), world.n_clusters,
            world.resource_capacity(), self.reachable, self.sharing == "maxmin", self.fetch,
            tuple(self.traffic), self._account_scratch, self._res_local, self._maxmin_memory,
            *self._scratch(), self._records, through and not (self.staged or self.capped))
        if avail is not None:
            avail.epoch = epoch
            if code == NEED_BLOCK:
                avail.draw(kind, block)
            else:
                avail.advance(t)
        self.completed = []
        ended = Completions(*ended)
        if ended.winners.size:      # the flows returned are those of the copies left
            self.live = ended.live
            self._completed(ended.winners, ended.ready, ended.ready_at, ended.jobs)
        flows = Flows(*flows)
        self._flows = flows if flows_ok else None
        self._alloc_key = None
        if n_spans:
            self.time, self.last_span, self._wan_mb = t, span_len, wan
            self._gates_used = True
            self.flows, self.flow_bw, self.flow_active, self.flow_demand = \
                flows, bw, active, demand
        if win_at.size:
            self._slot_end = t
            live = self.live
            self._complete(live[ending], ending_at, live[win_at], tasks, times)
        return code

    def _run_span(self, dt: float, gate_dt: float) -> None:
        """Run every live copy through ``dt`` seconds at constant rates.

        Args:
            dt: Seconds.
            gate_dt: Seconds the gate counters divide MB by (0: ``dt``).
        """
        t, world = self.time, self.world
        self.last_span = dt
        t_end = t + dt
        live = self.live
        avail = world.availability
        factor = NO_FLOAT
        if avail is not None:
            # Every slot moves on; only the slots of live copies are averaged (no slot
            # twice while none holds two copies).
            if live.size:
                factor = avail.advance_mean(t_end, t, self.copies.cols["slot"][live],
                                            not self.slots.shared[0])
            else:
                avail.advance(t_end)
        self.completed = []
        gate_dt = gate_dt or dt
        flows, bw = self.flows, self.flow_bw = _NO_FLOWS, NO_FLOAT
        if self.moves.raw.size or (live.size and self.has_inputs):
            # Moves and copies' inputs share one structure and one allocation in the slot.
            flows = self._flow_structure()
            bw = self._bandwidths(flows, factor)
        if self.moves.raw.size:
            self._advance_moves(flows, bw[flows.idx.size:], dt, gate_dt)
        if live.size == 0:
            self.time = t_end
            return
        has_flows = flows.idx.size > 0
        span_fields = (t, dt, dt * (1.0 + EPS), 1.0 + EPS, self.fetch)     # a Span's
        moved, arrived, win_at, done_tasks, done_time, ending, ending_at = run_step(
            live, self.copies.kernel_arg, self.inputs.kernel_arg, self.task_work,
            world.power.level, factor, span_fields, has_flows, tuple(flows), bw,
            *self._scratch())
        if has_flows:
            if self.fetch and arrived:
                self._flows = None
            self._account(flows.src, flows.dst, moved, flows.res, flows.starts, gate_dt)
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
        return int(max(1, min(limit, np.floor(left / self.dt * (1.0 - EPS)))))

    def time_to_completion(self) -> float:
        """Seconds until the first live copy finishes (``inf`` if none), at today's rates."""
        live = self.live
        if live.size == 0:
            return math.inf
        avail = self.world.availability
        factor = NO_FLOAT if avail is None else \
            avail.current(self.copies.cols["slot"][live], self.time)[0]
        return float(time_left_kernel(live, self.copies.kernel_arg, self.task_work,
                                      self.world.power.level, factor))

    def time_to_event(self, horizon: float = math.inf) -> float:
        """Seconds until a copy ends, an input arrives, a move ends or a busy slot changes.

        A busy slot's change is a phase change of its availability. At today's rates and
        bandwidths (``inf`` if nothing would happen). Between two such events, with the
        world's other processes constant, every rate and bandwidth is constant, so event
        timing may run to the earliest exactly. Copies fetching inputs count only the
        changes that can matter before the next event or ``horizon``
        (:func:`~geosim.engine.step.change_that_matters`).
        """
        live, moves = self.live, self.moves
        avail = self.world.availability
        soon, factor, change = math.inf, NO_FLOAT, None
        if avail is not None and live.size:     # a busy slot's phase change
            factor, change = avail.current(self.copies.cols["slot"][live], self.time)
            soon = float(change.min()) - self.time
        if not moves.raw.size and not (self.has_inputs and live.size):
            return min(soon, self.time_to_completion())
        flows = self._flow_structure()
        bw = self._bandwidths(flows, factor)
        best = math.inf
        if live.size:
            best = float(next_event_kernel(
                live, self.copies.kernel_arg, self.inputs.kernel_arg, self.task_work,
                self.world.power.level, factor, self.fetch, tuple(flows), bw))
        if moves.raw.size:
            size = self.wl.raw_size[moves.raw]
            move_bw = bw[flows.idx.size:]
            going = move_bw > 0
            if going.any():
                left = (1.0 - moves.got[going]) * size[going] / move_bw[going]
                best = min(best, float(left.min()))
        if change is not None and self.fetch and avail.max_level < math.inf:
            within = max(min(horizon, best), TIME_RESOLUTION * max(1.0, self.time)) * WITHIN
            soon = float(change_that_matters(
                live, self.copies.kernel_arg, self.inputs.kernel_arg, tuple(flows), self.task_work,
                self.world.power.level, change, avail.max_level, within)) - self.time
        return min(soon, best)

    def _scratch(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-task scratch of the completion kernels: a time (NaN), a copy (-1); made once."""
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
        task, job, slot, graph, groups = self._records
        ready, done_jobs, self.live = complete_kernel(
            ending, at, winners, tasks, times, self.live, self.copies.kernel_arg, task, job,
            slot, graph, self.staged, groups, self._scratch()[1])
        self._flows = None
        self._completed(winners, ready, self._slot_end, done_jobs)
        if self.staged:
            self._make_ready(self.stages.release(tasks, self.pending), self._slot_end)
        if self.capped:
            self._set_ready(self.stages.finish(tasks), self._slot_end)

    def _completed(self, winners: np.ndarray, ready: np.ndarray, at: float | np.ndarray,
                   jobs: np.ndarray) -> None:
        """Record ended tasks: ``winners`` won, ``ready`` are ready from ``at``, ``jobs`` done."""
        if ready.size:
            self._make_ready(ready, at)
        self.finished_jobs.extend(jobs.tolist())
        self.completed.append(winners)

    # ------------------------------------------------------------------ accounting
    def work_balance(self) -> tuple[float, float, float]:
        """Return (executed, demanded by finished tasks, wasted) work over all copies."""
        n, cols = self.copies.n, self.copies.cols
        done = self.task_state == DONE
        return (float(cols["executed"][:n].sum()), float(self.task_work[done].sum()),
                float(cols["wasted"][:n].sum()))
