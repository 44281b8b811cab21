"""The Mesa model: one run of a scenario with one scheduler and one seed.

One :meth:`GeoModel.step` runs from one decision to the next (docs/model.md, "Time and
execution"):

1. the world's processes are brought to the current instant ``t`` (VM power, link
   bandwidth, outages; copies on a cluster hit by an outage since the last instant are
   killed); the cluster and link time series are sampled if a sampling time is due;
2. when no job is alive, the model first moves to the next arrival (the processes are
   advanced exactly across the gap, samples taken on the way);
3. jobs that arrived by ``t`` become alive (a :class:`~geosim.agents.JobAgent` each), and
   the scheduler agent acts on the view;
4. the engine runs every live copy to the next decision; completed jobs' agents are
   removed.

When the next decision is due is asked of one method, :meth:`GeoModel._next_decision`,
for every timing mode, and one method, :meth:`GeoModel._advance`, goes there:

- slot timing (``run.timing = "slot"``): the next slot boundary; with an event-driven
  scheduler on a world of constant rates, the first boundary that can hold an event (a
  quiet span of several slots run in one engine call);
- event timing (``"event"``): the next arrival, completion, sample, VM power redraw,
  availability phase change of a busy slot, outage change or the horizon; with data on
  the WAN, also the next bandwidth redraw, and the engine runs through input arrivals,
  move ends and busy slots' availability changes (not decision points) to the first
  completion; for a scheduler that decides every slot, also the next slot boundary (it
  decides only there);
- idle: the next arrival (under slot timing, the slot boundary at or after it).

The cluster time series is sampled at the first instant at or after each sampling time
(under slot timing, a boundary), after step 1 (traffic averaged since the last sample).

Event-timed runs of 002's pool policies on a pool of machines advance on the compiled
loop of :mod:`geosim.poolsim` instead: the model hands it plain values and applies the
outcome it returns (:meth:`GeoModel._run_pool`).
"""

from __future__ import annotations

import math
import time as _time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

# Mesa first: importing mesa.model inspects the call stack, which takes longer the more
# modules are loaded (docs/results.md, "Fixed costs of a command").
import mesa
import numpy as np

import geosim.guards as guards
import geosim.heap as heap
import geosim.invariants as invariants
import geosim.mesa_scenario as mesa_scenario
import geosim.poolsim as poolsim
import geosim.state as state
from geosim.agents import ClusterAgent, JobAgent, LinkAgent, SchedulerAgent
from geosim.datacollector import GeoDataCollector
from geosim.engine import Engine
from geosim.engine.step import observed_kernel
from geosim.errors import GeosimError
from geosim.guards import GIB, Budget, RunGuards
from geosim.inputs import build_inputs, rate_changes
from geosim.monitor import Monitor
from geosim.recorder import Recorder
from geosim.results import Result, RunInfo, build_result
from geosim.scenario import Scenario, load_scenario
from geosim.schedulers import Scheduler
from geosim.schedulers.build import build_scheduler
from geosim.series import CLUSTER_INDEX, CLUSTER_SERIES, LINK_INDEX, LINK_SERIES, readings
from geosim.view import Actions, Boundary, SchedulerView
from geosim.workload import Workload
from geosim.world import nominal_priors


@dataclass(frozen=True)
class Stop:
    """Where the next decision is, and how the model gets there.

    Attributes:
        kind: ``"idle"``: no job is alive, the world's processes are brought to the
            instant ``value``; ``"slots"``: the engine runs ``value`` slots;
            ``"span"``: the engine runs ``value`` seconds (event timing).
        value: The instant, the number of slots or the seconds.
    """

    kind: Literal["idle", "slots", "span"]
    value: float


class GeoModel(mesa.Model):
    """A geo-distributed world, its workload and a scheduler.

    Args:
        scenario: A validated scenario, or a TOML path or mapping (see
            :func:`~geosim.scenario.load_scenario`), or Mesa's scenario object of
            another GeoModel (:mod:`geosim.mesa_scenario`; SolaraViz's Reset passes one).
        scheduler: A scheduler instance, a registered name, or a spec with parameters such
            as ``"laps+r[beta=0.6]"``; default: the scenario's. A bare name takes
            ``scheduler.params`` when it is the scenario's scheduler, and its defaults
            otherwise.
        seed: Seed of every random draw; default: the scenario's ``run.seed``.
        workload: Jobs to run instead of the scenario's generator (same seed rules).
        check_invariants: Check :mod:`geosim.invariants` after every step (conformance
            mode; runs through the general step, never the compiled pool loop); default:
            on when the environment variable ``GEOSIM_CHECK_INVARIANTS`` says so.

    Raises:
        GeosimError: Bad scheduler name or parameters, or a workload that does not fit
            the world (e.g. input on a cluster that does not exist).

    Attributes:
        config: The validated scenario the run was built from. It is not called
            ``scenario``: from Mesa 3.4 on, ``model.scenario`` is Mesa's own scenario
            object, which Mesa's SolaraViz reads when it re-creates a model.
        datacollector: Mesa's collector of the run's model variables at every step
            (:class:`~geosim.datacollector.GeoDataCollector`), read by ``mesa.batch_run``
            and SolaraViz; ``running`` turns False when the run is done.
    """

    def __init__(self, scenario: Scenario | str | Mapping[str, Any],
                 scheduler: Scheduler | str | None = None,
                 seed: int | None = None, workload: Workload | None = None,
                 check_invariants: bool | None = None):
        given = mesa_scenario.geosim_scenario(scenario)
        scenario = given if isinstance(given, Scenario) else load_scenario(given)
        seed = scenario["run"]["seed"] if seed is None else int(seed)
        super().__init__(rng=seed)
        mesa_scenario.attach(self, given, seed)
        self.config, self.seed = scenario, seed
        self.dt = float(scenario["run"]["dt"])
        self.horizon = float(scenario["run"]["horizon"])
        self.record_interval = float(scenario["run"]["record_interval"])
        scheduler = build_scheduler(scenario, scheduler)
        self.policy = scheduler
        inputs = build_inputs(scenario, seed, workload)
        streams, self.footprint = inputs.streams, inputs.footprint
        self.world, self.workload = inputs.world, inputs.workload
        self.engine = Engine(self.world, self.workload, self.dt, streams["placement"],
                             transfer=scenario["links"]["transfer"],
                             sharing=scenario["links"]["sharing"],
                             data_lag=scenario["workload"]["data_lag"],
                             variability=scenario["workload"]["copy_variability"],
                             copy_key=int(streams["copies"].integers(2 ** 63)),
                             budget=Budget(scenario["run"]["max_memory_gb"] * GIB,
                                 scenario.source))
        self.monitor = Monitor(self.world.n_clusters, len(self.workload.type_names),
                               priors=nominal_priors(scenario, self.world))
        #: What happened at the current boundary, as the view shows it to the scheduler.
        self.boundary = Boundary()
        self.view = SchedulerView(self.engine, self.monitor, self.boundary)
        self.actions = Actions(self.engine)
        self.clusters = [ClusterAgent(self, c) for c in range(self.world.n_clusters)]
        self.links = [LinkAgent(self, e) for e in range(self.world.n_links)]
        self.scheduler_agent = SchedulerAgent(self, scheduler)
        self.jobs: dict[int, JobAgent] = {}
        self._alive = np.empty(0, dtype=np.int64)     # the keys of jobs, in arrival order
        scheduler.reset(self.view, streams["scheduler"])
        self._outages_seen = np.zeros(self.world.n_clusters, dtype=np.int64)
        self._last_boundary = 0.0
        # No time series (``record_interval`` 0): the first sample never comes.
        self._next_record = 0.0 if self.record_interval > 0 else math.inf
        self._last_record = 0.0
        self._sample_span = 1e-12
        #: The one recorder of the run's time series (clusters and links).
        self.recorder = self._recorder()
        self._last_progress = 0.0
        self._progress_step = 0
        self.guards = RunGuards(scenario["run"]["max_steps"], scenario["run"]["max_wall_seconds"],
                                scenario.source, scheduler.name, self.dt)
        self.steps_run = 0
        self.jobs_done = 0
        self.wall_seconds = 0.0
        self.scheduler_seconds = 0.0   # wall time spent in the scheduler's decisions
        # Jump over slots with no alive job (results unchanged) and run quiet spans at once
        # (unchanged up to floating-point rounding).
        self.skip_idle = True
        self.event_timing = scenario["run"]["timing"] == "event"
        # Event-timed runs of 002's pool policies on a pool of machines use the compiled
        # loop of :mod:`geosim.poolsim` (the same model); False forces the general step.
        self.compiled = True
        self._event = True     # event timing: something happened since the last decision
        self._reach_version = self.engine.reach_version
        #: Conformance mode: :mod:`geosim.invariants` checked after every step.
        self.check_invariants = invariants.from_environment() if check_invariants is None \
            else bool(check_invariants)
        self._invariants = invariants.Checker(self) if self.check_invariants else None
        self.datacollector = GeoDataCollector(self)

    # ------------------------------------------------------------------ running
    @property
    def done(self) -> bool:
        """Whether every job has finished, or the horizon is reached."""
        e = self.engine
        if self.horizon > 0 and e.time >= self.horizon - 1e-9:
            return True
        return e.next_job >= self.workload.n_jobs and not self.jobs

    def step(self) -> None:
        """Advance from one decision to the next (Mesa's step; see the module docstring).

        Once the run is done, a step only sets ``running`` to False and collects.
        """
        if self.done:
            self.running = False
            self.datacollector.collect(self)
            return
        e = self.engine
        self._boundary(e.time)
        if e.time >= self._next_record - 1e-9:
            self._record()
        if self._idle:                  # nothing to decide before the next arrival
            self._advance(self._next_decision(idle=True))
        self._decide()
        self._advance(self._next_decision())
        self._settle()
        if self._invariants is not None:
            self._invariants.check()
        self.running = not self.done
        self.datacollector.collect(self)

    def run(self, progress: bool = False) -> Result:
        """Step until every job is done (or the horizon); return the result tables.

        Args:
            progress: Show a progress bar of finished jobs on standard error.
        """
        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=self.workload.n_jobs, unit="job", desc=self.policy.name,
                       leave=False, dynamic_ncols=True)
        start = _time.perf_counter()
        self.guards.restart_clock()
        with heap.long_lived():
            if self.compiled and self._invariants is None and not self.steps_run \
                    and not self.why_not_compiled():
                self._run_pool()
            self.running = not self.done
            while self.running:
                self.step()
                self.check_budget(self.steps_run)
                if bar is not None and self.jobs_done != bar.n:
                    bar.update(self.jobs_done - bar.n)
        self.running = False
        self.wall_seconds = _time.perf_counter() - start
        if bar is not None:
            bar.close()
        return self.result()

    def why_not_compiled(self) -> str:
        """Why this run cannot advance on the compiled pool loop ('' when it can)."""
        return poolsim.unsupported(self.policy, self.world, self.workload, self.engine,
                                   event_timing=self.event_timing,
                                   places_data=self._places_data)

    def result(self) -> Result:
        """The result tables of the run so far (:func:`~geosim.results.build_result`)."""
        meta = {"scenario": self.config["run"]["name"], "source": self.config.source,
                "scheduler": self.policy.name, "params": self.policy.get_params(),
                "seed": self.seed}
        run = RunInfo(self.config.to_toml(), self.steps_run, self.wall_seconds,
                      self.scheduler_seconds, self.config["workload"]["flow_time_unit"])
        return build_result(self.engine, self.workload, self.world, self.recorder, meta, run)

    def stalled(self, alive: int) -> GeosimError:
        """The error of a run without a completion for the stall limits."""
        return self.guards.stalled(alive)

    def check_budget(self, steps: int) -> None:
        """Stop the run when it exceeds ``run.max_wall_seconds`` or ``run.max_steps``."""
        self.guards.check(steps, self.engine.time, self.jobs_done, self.workload.n_jobs)

    # ------------------------------------------------------------------ internals
    @property
    def _static(self) -> bool:
        """Whether quiet slots may run in one engine call (rates constant, policy waits).

        True for an event-driven policy on a world without availability periods,
        outages, transfers or data moves; VM power may be redrawn (spans stop there).
        """
        return (self.skip_idle and self.policy.event_driven and not self.engine.move_raw.size
                and not self._varying_rates())

    def _varying_rates(self) -> str:
        """Why copies' rates may change between events ('' when they cannot)."""
        return rate_changes(self.world, self.workload, self._places_data)

    def _stops(self) -> list[float]:
        """Instants a span must not cross: a sample, an arrival, the horizon, a power redraw.

        When data crosses the WAN, also the next bandwidth redraw; under event timing
        also, when the scheduler places data, the next announcement, and when it decides
        at slot boundaries, the next boundary.
        """
        e, world = self.engine, self.world
        stops = [self._next_record]
        if e.next_job < self.workload.n_jobs:
            stops.append(float(self.workload.arrival[e.next_job]))
        if self.horizon > 0:
            stops.append(self.horizon)
        for process in (world.power, world.link_bw if self._network else None):
            if process is not None and process.period > 0:
                stops.append((process.epoch + 1) * process.period)
        if self.event_timing:
            if self._places_data and e.next_announced < self.workload.n_jobs:
                stops.append(float(self.workload.arrival[e.next_announced]) - e.data_lag)
            if not self.policy.event_driven:
                stops.append((np.floor(e.time / self.dt + 1e-9) + 1) * self.dt)
        return stops

    @property
    def _network(self) -> bool:
        """Whether data crosses the WAN: tasks read input over it, or raw input is moved."""
        return self.engine.has_inputs or self._places_data

    @property
    def _idle(self) -> bool:
        """Whether no job is alive, one is still to come and no data is on the move."""
        e = self.engine
        return self.skip_idle and not self.jobs and e.next_job < self.workload.n_jobs \
            and not e.move_raw.size

    def _next_decision(self, idle: bool = False) -> Stop:
        """When the next decision is due, for every timing mode, and how to get there.

        Args:
            idle: No job is alive (:attr:`_idle`): the next decision is at the next
                arrival (or announcement, if the scheduler places data), under slot timing
                at the slot boundary at or after it.

        Returns:
            Under event timing, the seconds to the next event (:meth:`_event_span`);
            under slot timing, one slot, or a quiet span of several when rates are
            constant and the scheduler waits for events (:meth:`_quiet_slots`).
        """
        e = self.engine
        if idle:
            arrival = self._next_arrival()
            return Stop("idle", max(e.time, arrival if self.event_timing else
                                    np.ceil(arrival / self.dt - 1e-9) * self.dt))
        if self.event_timing:
            return Stop("span", self._event_span())
        return Stop("slots", self._quiet_slots() if self._static else 1)

    def _advance(self, stop: Stop) -> None:
        """Go to ``stop``: run the engine there, or, idle, bring the world there.

        Idle, the processes are advanced boundary by boundary (under event timing, sample
        by sample) and the time series sampled on the way.
        """
        e = self.engine
        if stop.kind == "span":
            e.advance(span=stop.value, through_events=self._sub_spans,
                      to_completion=self.policy.event_driven)
            return
        if stop.kind == "slots":
            e.advance(stop.value)
            return
        target = stop.value
        while e.time < target - 1e-9:
            if self.event_timing:       # samples at their instants
                at = min(target, self._next_record)
            else:
                at = min(target, max(self._next_record, e.time + self.dt))
                at = e.time + max(1, round((at - e.time) / self.dt)) * self.dt
            if self.world.availability is not None:
                self.world.availability.advance(at)
            e.jump_to(at)
            self._boundary(at)
            if at >= self._next_record - 1e-9:
                self._record()

    @property
    def _sub_spans(self) -> bool:
        """Whether event timing runs the engine through sub-spans (:meth:`_event_span`)."""
        return self._network or not self.policy.event_driven

    def _event_span(self) -> float:
        """Event timing: seconds to the next arrival, completion, sample, redraw or horizon.

        With data on the WAN, or when the scheduler decides at slot boundaries, the span
        is an upper bound: the engine runs through the events that are not decision
        points (an input's arrival, a move's end, which change the WAN's shares; a busy
        slot's availability change; for a scheduler that decides at slot boundaries, a
        completion) as exact sub-spans, and returns at a decision point
        (:meth:`Engine.advance <geosim.engine.Engine.advance>`).

        Otherwise the span also ends at the next completion and, with availability
        periods, at the next phase change of a slot that runs a copy: rates are then
        constant over the span, so progress and completion times are exact. Such a change
        is not a decision point (002 §6 decides at arrivals and departures only). With
        outages, the span ends at the next outage start or end of any cluster, which is
        one (copies are lost, the reachable slots change).
        """
        e = self.engine
        span = min(self._stops()) - e.time
        if not self._sub_spans:
            span = min(span, e.time_to_completion())
            avail = self.world.availability
            if avail is not None and e.live.size:
                change = avail.current(e.copies.cols["slot"][e.live], e.time)[1]
                span = min(span, float(change.min()) - e.time)
        outages = self.world.outages
        if outages is not None:
            span = min(span, float(outages.next_change.min()) - e.time)
        return span if math.isfinite(span) and span > 0 else self.dt

    def _quiet_slots(self) -> int:
        """Slots from now that no arrival, sample, redraw, horizon or completion can end.

        Decisions stay at slot boundaries: a span ends at the first boundary where a job
        arrives, a sample is due, VM power is redrawn or the horizon is reached, and in
        the slot where the first copy can finish. The engine runs the span at once, with
        the same result as slot by slot up to floating-point rounding.
        """
        e, dt = self.engine, self.dt
        limit = int(np.ceil((min(self._stops()) - e.time) / dt - 1e-9))
        return e.quiet_slots(limit) if limit > 1 else 1

    @property
    def _places_data(self) -> bool:
        """Whether raw input exists before arrival and the scheduler moves it."""
        return self.engine.data_lag > 0 and self.policy.places_data

    def _next_arrival(self) -> float:
        """Time of the next arrival, or of the next announcement if the scheduler uses them."""
        e, arrival = self.engine, self.workload.arrival
        t = float(arrival[e.next_job])
        if self._places_data and e.next_announced < self.workload.n_jobs:
            t = min(t, float(arrival[max(e.next_announced, e.next_job)]) - e.data_lag)
        return t

    def _decide(self) -> None:
        """Arrivals become alive; the scheduler places data and decides, if it has to."""
        e = self.engine
        t = e.time
        view, now = self.view, self.boundary
        arrived = e.arrive(t)
        for job in arrived:
            self.jobs[job] = JobAgent(self, job)
        if arrived:
            now.arrivals += len(arrived)
            self._alive = np.concatenate((self._alive, arrived))
        now.alive_jobs = self._alive
        if self._places_data:
            now.announced = e.announce(t)
            if now.announced.size:
                start = _time.perf_counter()
                self.policy.place_data(view, self.actions)
                self.scheduler_seconds += _time.perf_counter() - start
        if self._due():
            if self.jobs:
                start = _time.perf_counter()
                self.scheduler_agent.step()
                self.scheduler_seconds += _time.perf_counter() - start
            now.arrivals = now.completions = now.failures = 0   # counted from this decision
        self._event = False

    def _due(self) -> bool:
        """Whether the scheduler decides now.

        Under slot timing at every step (a slot boundary). Under event timing, an
        event-driven scheduler decides at arrivals and decision points (completions,
        outages, power redraws); a scheduler that decides every slot still decides at slot
        boundaries only, as its paper defines it, while events between them end spans.
        """
        if not self.event_timing:
            return True
        if self.policy.event_driven:
            return self._event or self.boundary.arrivals > 0
        t = self.engine.time
        return abs(t - round(t / self.dt) * self.dt) <= 1e-9 * max(1.0, t)

    def _settle(self) -> None:
        """After the engine ran: count the step, observe completions, remove finished jobs."""
        e, now = self.engine, self.boundary
        self.steps_run += 1
        completions = 0
        if e.completed:
            winners = e.completed[0] if len(e.completed) == 1 else np.concatenate(e.completed)
            completions = int(winners.size)
            now.completions += completions
            self._event = True
            self._observe(winners)
        if completions or not self.jobs:
            self._last_progress, self._progress_step = e.time, self.steps_run
        elif e.time - self._last_progress > guards.STALL_SECONDS \
                or self.steps_run - self._progress_step > guards.STALL_STEPS:
            raise self.stalled(len(self.jobs))
        if e.finished_jobs:
            for job in e.finished_jobs:
                self.jobs.pop(job).remove()
            self._alive = self._alive[~np.isin(self._alive, e.finished_jobs)]
        self.jobs_done += len(e.finished_jobs)
        e.finished_jobs.clear()

    def _run_pool(self) -> None:
        """Run to the end on the compiled pool loop and apply its outcome."""
        e, world, wl = self.engine, self.world, self.workload
        avail = world.availability
        setup = poolsim.PoolSetup(
            arrival=wl.arrival, work=wl.task_work, power=world.power.level,
            slot_cluster=world.slot_cluster, slots=world.slots, availability=avail,
            tasks=tuple(getattr(e, name) for name in poolsim.TASK_ARRAYS),
            slot_used=e.slot_used, slot_copies=e.slot_copies, copies=e.copies,
            policy=poolsim.policy_params(self.policy),
            seed=int(self.policy.rng.integers(1, 2 ** 63)), time=e.time,
            horizon=self.horizon, record_interval=self.record_interval,
            next_record=self._next_record, last_record=self._last_record)
        out = poolsim.run(setup, self.guards, guards.STALL_SECONDS)
        e.apply_pool_outcome(out.live, out.n_copies, out.next_job, out.time)
        self.steps_run, self.jobs_done = out.steps, out.jobs_done
        self._next_record, self._last_record = out.next_record, out.last_record
        if out.samples is not None:
            self.recorder.add(ClusterAgent, out.samples)
        if out.stalled:
            raise self.stalled(out.stalled)

    def _boundary(self, t: float) -> None:
        """Bring power, bandwidth and outages to time ``t``; kill copies hit by outages."""
        world, e = self.world, self.engine
        if world.power.advance(t):
            self._event = True      # a redraw changes rates: a decision point
            world.power.sync(e.copies.cols["slot"][e.live])     # keyed power: busy slots
        if world.link_bw is not None:
            world.link_bw.advance(t)
        outages = world.outages
        if outages is None:
            return
        started = None
        if t >= outages.next_change_time:      # else no outage starts or ends by t
            outages.advance(t)
            started = outages.count[1] - self._outages_seen
            self._outages_seen = outages.count[1].copy()
            e.set_reachable(outages.on)
            self.boundary.failures += e.fail_clusters(np.flatnonzero(started > 0))
            if started.any() or e.reach_version != self._reach_version:
                self._event = True      # an outage's start or end: a decision point
                self._reach_version = e.reach_version
        self.monitor.record_reachability(state.reachable(e), started, t - self._last_boundary)
        self._last_boundary = t

    def _observe(self, winners: np.ndarray) -> None:
        """Feed the monitor with what completed copies saw."""
        e = self.engine
        cluster, task, speed, src, dst, bw = observed_kernel(
            winners, e.copies.kernel_arg, e.inputs.kernel_arg)
        self.monitor.record_copies(cluster, self.workload.task_type[task], speed)
        if src.size:
            self.monitor.record_transfers(src, dst, bw)

    def _record(self) -> None:
        """Sample the cluster and link time series (traffic averaged since the last sample)."""
        e = self.engine
        self._sample_span = max(e.time - self._last_record, 1e-12)
        self.recorder.collect(self)
        e.reset_traffic()
        self._last_record = e.time
        behind = (e.time + 1e-9 - self._next_record) / self.record_interval
        if behind > 1000:                       # many intervals per slot: skip them at once
            self._next_record += math.floor(behind) * self.record_interval
        while self._next_record <= e.time + 1e-9:
            self._next_record += self.record_interval

    def _recorder(self) -> Recorder:
        """The recorder of the cluster and link time series (:mod:`geosim.state`'s readings).

        Its columns are those of :data:`~geosim.series.CLUSTER_SERIES` and
        :data:`~geosim.series.LINK_SERIES`, in their order.
        """
        e, world = self.engine, self.world
        clusters = {
            "reachable": lambda m: state.reachable(e).copy(),
            "slots": lambda m: world.slots.copy(),
            "available_slots": lambda m: state.available_slots(world),
            "busy": lambda m: state.busy_slots(e),
            "copies": lambda m: state.running_copies(e),
            "queue": lambda m: state.queues(e),
            "egress_mbps": lambda m: state.gate_traffic_mb(e)[0] / m._sample_span,
            "ingress_mbps": lambda m: state.gate_traffic_mb(e)[1] / m._sample_span,
        }
        types = {ClusterAgent: {name: clusters[name] for name in readings(CLUSTER_SERIES)}}
        if world.n_links:
            links = {
                "u": lambda m: world.link_u,
                "v": lambda m: world.link_v,
                "bandwidth": lambda m: state.link_bandwidth(world),
                "forward_mbps": lambda m: state.link_traffic_mb(e)[0] / m._sample_span,
                "backward_mbps": lambda m: state.link_traffic_mb(e)[1] / m._sample_span,
            }
            types[LinkAgent] = {name: links[name] for name in readings(LINK_SERIES)}
        return Recorder(agenttype_reporters=types,
                        index={ClusterAgent: CLUSTER_INDEX, LinkAgent: LINK_INDEX})

    @property
    def cluster_records(self) -> list[dict[str, np.ndarray]]:
        """The sampled cluster time series, one dict of arrays per sample."""
        return self.recorder.samples(ClusterAgent)

    @property
    def link_records(self) -> list[dict[str, np.ndarray]]:
        """The sampled WAN link time series, one dict of arrays per sample."""
        return self.recorder.samples(LinkAgent)


def run(scenario: Scenario | str | Mapping[str, Any], scheduler: Scheduler | str | None = None,
        seed: int | None = None, overrides: Mapping[str, Any] | None = None,
        progress: bool = False) -> Result:
    """Run one simulation and return its result tables.

    Args:
        scenario: A scenario, a TOML path or a mapping (see :func:`load_scenario`).
        scheduler: Scheduler instance or registered name; default: the scenario's.
        seed: Seed of every random draw; default: the scenario's ``run.seed``.
        overrides: Dotted-key overrides applied to the scenario.
        progress: Show a progress bar.
    """
    from geosim.scenario import load_scenario
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario, overrides)
    elif overrides:
        scenario = scenario.with_overrides(overrides)
    return GeoModel(scenario, scheduler, seed).run(progress=progress)
