"""A run's size before it runs, and the limits that refuse a run the machine cannot hold.

Three guards, each naming the scenario key that causes the problem:

* :func:`estimate` and :func:`check_memory`: before the world and the workload are built,
  the expected numbers of slots, clusters (their cached routes), jobs and tasks (with
  the monitor's samples of the cluster pairs they use), and over the jobs' arrivals the
  time series and the slots' blocks of availability draws, give a memory estimate; a
  run whose estimate exceeds ``run.max_memory_gb`` is refused, naming the key behind
  the largest term. Once the world and jobs are built, the same is checked again over
  the run's expected length (:func:`simulated_span`). The per-item sizes are measured
  peaks of this implementation (see ``docs/model.md``), rounded up, so the estimate
  errs on the large side.
* :class:`geosim.guards.Budget` keeps the same limit while the run goes on.
* :func:`check_pace`: once the world and workload exist, a mean task alone on the slowest
  slot, gate and link must finish within the stall limits of :mod:`geosim.guards`
  (simulated seconds and steps); otherwise the run could never complete and is refused
  before it starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx
import numpy as np

from geosim.errors import GeosimError
from geosim.guards import GIB
from geosim.jit import njit
from geosim.monitor import DENSE_KEYS, DENSE_PAIRS_BYTES, WINDOW
from geosim.processes import BLOCK_LEN
from geosim.routes import (
    FULL_ROWS,
    PAIR_BYTES,
    ROUTE_CACHE_BYTES,
    ROUTE_ENTRY_BYTES,
    TREE_CACHE_BYTES,
    adjacency_bytes,
    tree_bytes,
)
from geosim.scenario import Scenario
from geosim.topology import TIERS, assign_tiers

#: Bytes of the interpreter, the libraries and the compiled kernels of one run: measured
#: 345 MiB for ``geosim run`` of one quickstart job, its tables written (2026-12-04).
BASE_BYTES = 384 * 2**20
#: Bytes of WfCommons' workflow generator, for a workload of its recipes: measured
#: 90 MiB more at the peak of a one-job Blast recipe run than of a one-job quickstart.
RECIPE_BYTES = 128 * 2**20
#: Bytes per slot of its state, VM power and availability words (about 140 B measured:
#: 112 000 slots added 16 MB). With shared slot streams and availability periods each
#: slot also holds its blocks of draws (:func:`ring_bytes`).
SLOT_STATE_BYTES = 256
#: Bytes per cluster and per link of the topology itself: its graph (and the scheduler
#: view's frozen copy) and the Mesa agents of clusters and links.
CLUSTER_BYTES = 8192
LINK_BYTES = 4096
#: Bytes per cluster pair that carried a transfer: the monitor's ring of
#: :data:`~geosim.monitor.WINDOW` samples and a count (twice: its buffer grows by
#: doubling), the pair's key and row, and a performance model's 16 atoms and mean.
MONITOR_PAIR_BYTES = 2 * (8 * WINDOW + 8) + 16 + 8 * 16 + 8
#: Cluster pairs a task may add to the monitor, on average: the remote inputs its
#: completed copies read (with at most every ordered pair of clusters). Measured on
#: ``edge-10k``: 0.060 per task with Fair over its first 500 jobs (4 195 pairs for
#: 69 809 tasks) and 0.063 over 2 000; 0.080 and 0.093 with PingAn; charged with more
#: than twice the largest as a margin.
MONITOR_PAIRS_PER_TASK = 0.25
#: Bytes per task and per job over a run: the tables of tasks, copies, inputs and results,
#: measured from 300 to 1 500 ``pingan-medium`` jobs (keyed slot streams, no time series,
#: which :func:`ring_bytes` and :func:`series_bytes` charge apart; 2026-12-04): Fair
#: 1.07 KiB per task, PingAn 1.57 KiB, Flutter+Mantri 1.45 KiB; charged with PingAn's
#: and a quarter again as a margin.
TASK_BYTES = 2048
JOB_BYTES = 2048
#: Bytes per DAG edge (its arrays, and an input row of each copy of its child task), for
#: workloads whose jobs are dense DAGs (the all-to-all shuffles of ``spark`` jobs).
EDGE_BYTES = 64
#: Wall-clock seconds per slotted step, per event of an event-timed run and per task,
#: for :func:`time_estimate`: fitted to the runs of the shipped scenarios measured by
#: ``benchmarks/estimate_check.py`` (steps of ``pingan-light`` and ``-medium``, tasks of
#: ``flowflex``; every shipped scenario then within a factor of 2.5, docs/results.md).
STEP_SECONDS = 6e-4
EVENT_SECONDS = 1e-5
TASK_SECONDS = 2e-5
#: Bytes of one sample of one cluster's (ten columns) and one link's (seven) time series.
RECORD_BYTES = 80
LINK_RECORD_BYTES = 56
#: What the time series take at a run's peak, in multiples of their values
#: (:func:`series_bytes`): the samples as recorded and the tables built from them.
#: Measured: 5 100 samples of ``pingan-medium``'s 100 clusters and 196 links added
#: 200 MiB to the peak, 2.2 times their 92 MiB (Fair, 300 jobs, keyed slot streams,
#: ``run.record_interval`` 1 against 0; 2026-12-04).
SERIES_PEAK = 2.5
#: Sources sampled for the mean route length of a large topology.
ROUTE_SAMPLES = 16


@dataclass(frozen=True)
class Footprint:
    """The expected size of a run.

    Attributes:
        clusters: Clusters of the topology.
        slots: Expected slots in all clusters.
        route_entries: Expected entries of the routes the run may hold at once: those
            between all pairs of clusters, or as many as the route cache's budget takes.
        jobs: Jobs of the workload.
        tasks: Expected tasks of the workload.
        terms: Estimated bytes per scenario key responsible for them.
    """

    clusters: int
    slots: float
    route_entries: float
    jobs: int
    tasks: float
    terms: dict[str, float]

    @property
    def memory_bytes(self) -> float:
        """Estimated peak memory of the run (bytes)."""
        return BASE_BYTES + sum(self.terms.values())

    def describe(self) -> str:
        """One line: the estimated memory and the counts behind it."""
        return (f"about {self.memory_bytes / GIB:.2f} GiB ({self.clusters} clusters, "
                f"~{self.slots:,.0f} slots, ~{self.route_entries:,.0f} route entries, "
                f"{self.jobs:,} jobs, ~{self.tasks:,.0f} tasks)")


def estimate(scenario: Scenario, graph: nx.Graph, workload=None,
             span: float | None = None,
             topology: tuple[float, float] | None = None) -> Footprint:
    """Estimate a run's size from its scenario and topology, before building anything.

    Args:
        scenario: A validated scenario.
        graph: Its topology (generated or read).
        workload: The jobs, when given instead of the scenario's generator.
        span: The simulated seconds expected (:func:`simulated_span`, once the world is
            built); default: the jobs' arrivals (:func:`arrival_span`). What grows with
            the run's length is charged over it: the time series and the slots' blocks
            of availability draws.
        topology: ``topology_bytes(graph)``, when already computed (it samples
            shortest paths: 9 ms on 1 000 clusters, 0.1 s on 10 000).

    Returns:
        The expected counts and memory terms.
    """
    n = graph.number_of_nodes()
    per_tier = np.bincount(assign_tiers(graph, scenario["topology"]["tier_shares"]),
                           minlength=len(TIERS))
    slots = max(float(n), scenario["clusters"]["slot_scale"] * sum(
        float(k) * _mean(scenario[f"tiers.{t}"]["slots"])
        for k, t in zip(per_tier, TIERS, strict=True)))
    entries, topo_bytes = topology_bytes(graph) if topology is None else topology
    if workload is None:
        jobs, tasks, task_key = _tasks(scenario, slots)
    else:
        jobs, tasks, task_key = workload.n_jobs, float(workload.n_tasks), "workload.n_jobs"
        if scenario["workload"]["kind"] == "spark":
            tasks += workload.edge_src.size * EDGE_BYTES / TASK_BYTES
    if span is None:
        span = arrival_span(scenario, workload)
    topo_key = "topology.file" if scenario["topology"]["generator"] == "file" \
        else "topology.n_clusters"
    terms = {"tiers.*.slots": slots * (SLOT_STATE_BYTES + ring_bytes(scenario, slots, span)),
             topo_key: topo_bytes,
             task_key: tasks * TASK_BYTES + jobs * JOB_BYTES
             + min(float(n) * (n - 1), tasks * MONITOR_PAIRS_PER_TASK) * MONITOR_PAIR_BYTES,
             "run.record_interval": series_bytes(scenario, n, graph.number_of_edges(), span)}
    if scenario["workload"]["kind"] == "wfformat" and scenario["workload"]["recipe"]:
        terms["workload.recipe"] = float(RECIPE_BYTES)
    return Footprint(n, slots, entries, jobs, tasks, terms)


def arrival_span(scenario: Scenario, workload=None) -> float:
    """Simulated seconds until the last arrival (0 for a trace not read yet).

    Given the jobs, their last arrival; otherwise their count over
    ``workload.arrival_rate``.
    """
    if workload is not None:
        return float(np.max(workload.arrival)) if workload.n_jobs else 0.0
    wl = scenario["workload"]
    return 0.0 if wl["kind"].endswith("-trace") else wl["n_jobs"] / wl["arrival_rate"]


def ring_bytes(scenario: Scenario, slots: float, span: float) -> float:
    """Bytes per slot of its blocks of availability draws after ``span`` simulated seconds.

    Only shared slot streams with availability periods hold blocks
    (:class:`~geosim.processes.AlternatingRenewal`): per phase kind, a ring of blocks of
    :data:`~geosim.processes.BLOCK_LEN` items (a length and a level, 8 B each) from the
    block of the slot that has started the fewest phases to that of the one that has
    started the most, in a power of two of at least 2 blocks. The phases started by time
    ``t`` have a variance of about ``t σ² / μ³`` (a renewal process whose cycle, an
    available and an unavailable period, has mean ``μ`` and variance ``σ²``), and the
    largest and smallest of ``n`` slots' counts lie about ``sqrt(2 ln n)`` standard
    deviations either side of their mean. (Measured on ``pingan-medium``: a ring of 4
    blocks after 300 jobs, 5 100 s, as this gives; 8 after 1 500.)
    """
    av = scenario["availability"]
    if not av["enabled"] or scenario["clusters"]["slot_streams"] != "shared":
        return 0.0
    shapes = (av["available_shape"], av["unavailable_shape"])
    scales = (av["available_scale"], av["unavailable_scale"])
    mean = sum(k * s for k, s in zip(shapes, scales, strict=True))
    var = sum(k * s * s for k, s in zip(shapes, scales, strict=True))
    spread = 2.0 * math.sqrt(2.0 * math.log(max(slots, 2.0)) * span * var / mean ** 3)
    width = 2
    while width < math.ceil(spread / BLOCK_LEN) + 1:
        width *= 2
    return 2 * width * BLOCK_LEN * 2 * 8.0      # kinds x blocks x items x (length, level)


def series_bytes(scenario: Scenario, n_clusters: int, n_links: int, span: float) -> float:
    """Bytes of the time series over ``span`` simulated seconds, at the run's peak.

    A sample every ``run.record_interval``, at most one per step of a slotted run, and
    :data:`SERIES_PEAK` times its values.
    """
    interval = float(scenario["run"]["record_interval"])
    if interval == 0:                   # no time series
        return 0.0
    samples = span / interval
    if scenario["run"]["timing"] == "slot":
        samples = min(samples, span / float(scenario["run"]["dt"]))
    return samples * (n_clusters * RECORD_BYTES + n_links * LINK_RECORD_BYTES) * SERIES_PEAK


def check_memory(footprint: Footprint, scenario: Scenario) -> None:
    """Refuse a run whose estimated memory exceeds ``run.max_memory_gb``.

    Raises:
        GeosimError: Naming the key behind the largest term, its value and the limit.
    """
    limit = float(scenario["run"]["max_memory_gb"])
    need = footprint.memory_bytes / GIB
    if need <= limit:
        return
    key = max(footprint.terms, key=footprint.terms.__getitem__)
    value = "" if key.startswith("tiers.") else f" = {scenario.get(key)!r}"
    fix = "raise run.record_interval or" if key == "run.record_interval" else \
        "make the run smaller or raise"
    raise GeosimError(
        f"the run would need {footprint.describe()}, more than run.max_memory_gb = "
        f"{limit:g}; most of it comes from {key}{value}: {fix} run.max_memory_gb",
        source=scenario.source, key=key)


def task_seconds(scenario: Scenario, world, workload,
                 slowest: bool = False) -> tuple[float, float]:
    """Time of a mean task alone: (compute, transfer) seconds.

    Compute is the mean work over the slots' mean power times the long-run mean speed
    factor of the availability periods; transfer is the mean input a task reads over the
    smaller of the gates' and the WAN links' mean bandwidths. With ``slowest``, the
    slowest slot, gate and link stand in for the means: a task that lands there must
    finish too.
    """
    power, bw = _rates(scenario, world, np.min if slowest else np.mean)
    n_tasks = max(int(workload.n_tasks), 1)
    compute = float(np.sum(workload.task_work)) / n_tasks / power if power > 0 else math.inf
    data = float(np.sum(workload.raw_size)) + float(np.sum(workload.edge_size))
    transfer = 0.0
    if data > 0 and math.isfinite(bw):
        transfer = data / n_tasks / bw if bw > 0 else math.inf
    return compute, transfer


def _rates(scenario: Scenario, world, pick=np.mean) -> tuple[float, float]:
    """A slot's rate (MI/s) and a transfer's bandwidth (MB/s), by ``pick`` (mean or min).

    The rate takes the availability periods' mean speed factor; the bandwidth is the
    smaller of the gates' and the links' (``inf`` in a one-cluster world).
    """
    power = float(pick(world.power.mean)) * _mean_factor(scenario)
    if world.n_clusters == 1:
        return power, math.inf
    bws = [float(pick(world.gate))]
    if world.link_bw is not None:
        bws.append(float(pick(world.link_bw.mean)))
    return power, min(bws)


def check_pace(scenario: Scenario, world, workload, stall_seconds: float,
               stall_steps: int) -> None:
    """Refuse a run whose tasks cannot finish within the stall limits on the slowest slots.

    Args:
        scenario: The run's scenario.
        world: Its world.
        workload: Its jobs.
        stall_seconds: Simulated seconds without a completion after which a run stops.
        stall_steps: Steps without a completion after which a run stops.

    Raises:
        GeosimError: Naming the key that makes tasks too slow (or the slot too short).
    """
    compute, transfer = task_seconds(scenario, world, workload, slowest=True)
    alone = compute + transfer
    if alone > stall_seconds:
        if compute >= transfer:
            typical = task_seconds(scenario, world, workload)[0] <= stall_seconds
            kind = scenario["workload"]["kind"]
            key = "workload.reference_mips" if kind in ("montage", "wfformat") and \
                not typical else "tiers.*.power_mean"
            if _mean_factor(scenario) < 1e-6:
                key = "availability.available_rate"
            why = f"computing takes {compute:.3g} s on the slowest VMs"
        else:
            key = "links.bandwidth_mean" if world.link_bw is not None and float(np.min(
                world.link_bw.mean)) < float(np.min(world.gate)) else "tiers.*.gate_ratio"
            why = f"reading its input takes {transfer:.3g} s through the slowest gate or link"
        raise GeosimError(
            f"a task alone would take about {alone:.3g} simulated seconds ({why}), more than "
            f"the {stall_seconds:g} s after which a run without progress stops: the run "
            "cannot finish", source=scenario.source, key=key)
    dt = float(scenario["run"]["dt"])
    if scenario["run"]["timing"] == "slot" and alone / dt > stall_steps:
        raise GeosimError(
            f"a task alone would take about {alone / dt:.3g} slots of {dt:g} s, more than "
            f"the {stall_steps:g} steps after which a run without progress stops: raise "
            "run.dt", source=scenario.source, key="run.dt")


def describe_run(scenario: Scenario, world, workload, footprint: Footprint) -> str:
    """What ``geosim validate`` says of a run: memory, simulated time, steps and wall time.

    The simulated time and steps are :func:`simulated_span`'s; the wall time is
    :data:`STEP_SECONDS` per step (:data:`EVENT_SECONDS` per event) plus
    :data:`TASK_SECONDS` per task, measured on the shipped scenarios, so take it as an
    order of magnitude (``benchmarks/estimate_check.py`` measures it). When outages
    would cut short the copies holding more than :data:`OUTAGE_SHARE` of the work
    (:func:`outage_exposure`), one more line says that no estimate holds, and why.
    """
    compute, transfer = task_seconds(scenario, world, workload)
    simulated, steps, wall = time_estimate(scenario, world, workload)
    unit = "events" if scenario["run"]["timing"] == "event" else \
        f"steps of {scenario['run']['dt']:g} s"
    text = (f"estimate: memory {footprint.memory_bytes / GIB:.2f} GiB (run.max_memory_gb = "
            f"{scenario['run']['max_memory_gb']:g}); a task alone takes about "
            f"{compute + transfer:.3g} s; about {simulated:,.0f} simulated s in at most "
            f"{steps:,.0f} {unit}; wall time on the order of {_duration(wall)}")
    share, up = outage_exposure(scenario, world, workload)
    if share > OUTAGE_SHARE:
        text += (f"\nno estimate of time holds: outages would cut short the copies that "
                 f"hold about {share:.0%} of the work (where their input is, a cluster has "
                 f"an outage every {up:,.0f} s on average, and a copy lost in one runs "
                 "again from the start), so the run may take far longer, or stall")
    return text


def time_estimate(scenario: Scenario, world, workload) -> tuple[float, float, float]:
    """Simulated seconds and steps (:func:`simulated_span`), and wall seconds of the run.

    The wall time is :data:`STEP_SECONDS` per step (:data:`EVENT_SECONDS` per event)
    plus :data:`TASK_SECONDS` per task.
    """
    simulated, steps = simulated_span(scenario, world, workload)
    per_step = EVENT_SECONDS if scenario["run"]["timing"] == "event" else STEP_SECONDS
    return simulated, steps, steps * per_step + workload.n_tasks * TASK_SECONDS


#: Share of the work in copies that outages cut short (:func:`outage_exposure`) above
#: which ``geosim validate`` says that no time estimate holds.
OUTAGE_SHARE = 0.2
#: Tasks :func:`outage_exposure` samples at most.
EXPOSURE_SAMPLES = 2000


def outage_exposure(scenario: Scenario, world, workload) -> tuple[float, float]:
    """The share of the work in copies outages cut short, and the time between outages.

    A cluster reachable for a trial interval starts an outage with its probability ``p``:
    outages come at rate ``λ = p / trial_interval``, and a copy that takes ``T`` s alone
    (:func:`task_alone`) meets one with probability ``1 - exp(-λ T)``. The share weighs
    that by ``T`` over the tasks (at most :data:`EXPOSURE_SAMPLES` of them) and over the
    clusters as :func:`outage_rates` weighs them: long tasks, which an outage is likely
    to cut, hold most of the work of the runs it lengthens (measured with
    ``benchmarks/estimate_check.py``; the share of copies alone missed them).

    Returns:
        The share (0 without outages) and the mean of ``1 / λ`` over the clusters with
        outages, weighted as the share is (``inf`` without outages).
    """
    rates = outage_rates(scenario, world, workload)
    if rates is None:
        return 0.0, math.inf
    lam, weight = rates
    step = max(1, workload.n_tasks // EXPOSURE_SAMPLES)
    alone = task_alone(scenario, world, workload)[::step]
    cut = -np.expm1(-np.outer(alone, lam)) @ weight
    share = float(np.sum(cut * alone) / max(np.sum(alone), 1e-300))
    return share, float(np.sum(weight / lam) / weight.sum())


def outage_rates(scenario: Scenario, world, workload) -> tuple[np.ndarray, np.ndarray] | None:
    """Outage rates ``λ`` (1/s) of the clusters copies run on, and the share of copies there.

    Copies are taken to run by their data, as locality-first placement runs them: each
    cluster weighs by the raw input it stores (by its slots when jobs have none). Only
    clusters with outages are listed; None when there are none.
    """
    out = scenario["outages"]
    p = np.asarray(world.outage_p, dtype=float)
    if not out["enabled"] or not np.any(p > 0) or workload.n_tasks == 0:
        return None
    weight = np.asarray(world.slots, dtype=float)
    if workload.raw_size.size and workload.raw_size.sum() > 0:
        weight = np.bincount(workload.raw_cluster, weights=workload.raw_size,
                             minlength=world.n_clusters)
    weight = weight / weight.sum()
    some = (p > 0) & (weight > 0)
    if not some.any():
        return None
    return p[some] / out["trial_interval"], weight[some]


def task_alone(scenario: Scenario, world, workload) -> np.ndarray:
    """Seconds of each task alone.

    Its work at the mean slot rate, and its inputs (raw and from its parents) over the
    smaller of the mean gate and link bandwidths.
    """
    n = workload.n_tasks
    rate, bw = _rates(scenario, world)
    per_raw = np.repeat(np.arange(n), np.diff(workload.raw_ptr))
    data = np.bincount(per_raw, weights=workload.raw_size, minlength=n) \
        + np.bincount(workload.edge_dst, weights=workload.edge_size, minlength=n)
    seconds = workload.task_work / rate if rate > 0 else np.full(n, math.inf)
    if not math.isfinite(bw) or not data.any():
        return seconds
    with np.errstate(divide="ignore", invalid="ignore"):
        return seconds + np.where(data > 0, data / bw, 0.0)


def critical_paths(workload, cost: np.ndarray) -> np.ndarray:
    """Per job, the seconds of its longest chain of tasks, each taking ``cost`` seconds.

    A task starts when its parents are done (the DAG's edges) and a stage when the stage
    before has finished (stage barriers, chained). With unlimited slots a job alone would
    take this long.
    """
    if workload.n_jobs == 0:
        return np.zeros(0)
    cost = np.asarray(cost, dtype=np.float64)
    by_child = np.argsort(workload.edge_dst, kind="stable")
    finish = _chain_finish(cost, workload.edge_src, workload.edge_dst, by_child)
    paths = np.maximum.reduceat(finish, workload.task_ptr[:-1])
    stage = workload.task_stage.astype(np.int64)
    if stage.any():
        width = int(stage.max()) + 1
        job = np.repeat(np.arange(workload.n_jobs), np.diff(workload.task_ptr))
        longest = np.zeros(workload.n_jobs * width)
        np.maximum.at(longest, job * width + stage, cost)
        paths = np.maximum(paths, longest.reshape(workload.n_jobs, width).sum(axis=1))
    return paths


@njit(cache=True)
def _chain_finish(cost: np.ndarray, src: np.ndarray, dst: np.ndarray,
                  by_child: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """Each task's finish along its longest chain: its cost after its latest parent.

    One pass in task order, which is topological (every edge goes from an earlier task
    to a later one); ``by_child`` lists the edges by child task.
    """
    finish = cost.copy()
    e = 0
    for t in range(cost.size):
        latest = 0.0
        while e < by_child.size and dst[by_child[e]] == t:
            latest = max(latest, finish[src[by_child[e]]])
            e += 1
        finish[t] = cost[t] + latest
    return finish


def simulated_span(scenario: Scenario, world, workload) -> tuple[float, float]:
    """Expected simulated seconds of a run, and its steps (events when event-timed).

    The simulated time is the latest of: the last arrival plus a mean task alone; the
    whole work on all slots at the mean rates plus a mean task alone; each job's arrival
    plus its longest chain of tasks (:func:`critical_paths` of :func:`task_alone`); and,
    per input cluster, the raw input stored there over its gate. Outages are left out
    (:func:`describe_run` says when they make the estimate meaningless). It is capped by
    ``run.horizon``. The steps are that over ``run.dt`` (a bound: idle stretches are
    skipped), or two per task when decisions are at events.
    """
    compute, transfer = task_seconds(scenario, world, workload)
    power = _rates(scenario, world)[0] * world.n_slots
    drain = float(np.sum(workload.task_work)) / power if power > 0 else math.inf
    arrivals = float(np.max(workload.arrival)) if workload.n_jobs else 0.0
    simulated = max(arrivals, drain) + compute + transfer
    if workload.n_jobs:
        paths = critical_paths(workload, task_alone(scenario, world, workload))
        simulated = max(simulated, float(np.max(workload.arrival + paths)))
    if workload.raw_size.size and world.n_clusters > 1:
        stored = np.bincount(workload.raw_cluster, weights=workload.raw_size,
                             minlength=world.n_clusters)
        gate = np.asarray(world.gate, dtype=float)
        out = np.divide(stored, gate, out=np.zeros_like(stored), where=gate > 0)
        simulated = max(simulated, float(out.max()))
    if scenario["run"]["horizon"] > 0:
        simulated = min(simulated, float(scenario["run"]["horizon"]))
    if scenario["run"]["timing"] == "event":
        return simulated, 2.0 * workload.n_tasks
    return simulated, simulated / float(scenario["run"]["dt"])


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _mean(value) -> float:
    return 0.5 * (value[0] + value[-1]) if isinstance(value, list) else float(value)


def _mean_factor(scenario: Scenario) -> float:
    """Long-run mean speed factor of a slot's available/unavailable periods."""
    av = scenario["availability"]
    if not av["enabled"] or av["normalise"]:
        return 1.0
    up = av["available_shape"] * av["available_scale"]
    down = av["unavailable_shape"] * av["unavailable_scale"]
    return (up * _mean(av["available_rate"]) + down * _mean(av["unavailable_rate"])) \
        / (up + down)


def topology_bytes(graph: nx.Graph) -> tuple[float, float]:
    """Route entries a run may hold at once, and the bytes that grow with the topology.

    The routes are computed for the pairs in use and cached within budgets
    (:mod:`geosim.routes`): the shortest-path trees of at most
    :data:`~geosim.routes.TREE_CACHE_BYTES`, the table of routes of at most
    :data:`~geosim.routes.ROUTE_CACHE_BYTES`, each charged whole unless every tree or
    every route takes less. The graph, its adjacency and the agents of clusters and links
    add their own bytes, and a small world four ``n²`` arrays (every hop count, and the
    dense indexes of pair rows of the routes, the monitor and the performance model),
    and the performance model's dense copies of the pair atoms (its default 16) and
    means, each where it takes at most :data:`~geosim.monitor.DENSE_PAIRS_BYTES`.
    (The monitor keeps samples only for the pairs that carried a transfer:
    :func:`estimate` charges them with the tasks.)
    """
    n, links = graph.number_of_nodes(), graph.number_of_edges()
    pairs = n * (n - 1)
    per_route = _mean_hops(graph) + 2.0
    per_pair = per_route * ROUTE_ENTRY_BYTES + PAIR_BYTES
    table = min(pairs * per_pair, float(ROUTE_CACHE_BYTES))
    trees = min(n, max(1, TREE_CACHE_BYTES // tree_bytes(n))) * tree_bytes(n) if n else 0
    topology = n * CLUSTER_BYTES + links * LINK_BYTES + adjacency_bytes(n, links) \
        + 8 * n * n * (3 * (n <= FULL_ROWS) + (n * n <= DENSE_KEYS)) \
        + sum(b for b in (8 * n * n * 16, 8 * n * n) if b <= DENSE_PAIRS_BYTES)
    return table / per_pair * per_route if pairs else 0.0, topology + trees + table


def _mean_hops(graph: nx.Graph) -> float:
    """Mean hop count of shortest paths, from up to :data:`ROUTE_SAMPLES` even sources."""
    nodes = list(graph.nodes)
    if len(nodes) < 2:
        return 0.0
    step = max(1, len(nodes) // ROUTE_SAMPLES)
    total = count = 0
    for s in nodes[::step][:ROUTE_SAMPLES]:
        lengths = nx.single_source_shortest_path_length(graph, s)
        total += sum(lengths.values())
        count += len(lengths) - 1
    return total / max(count, 1)


def _tasks(scenario: Scenario, slots: float) -> tuple[int, float, str]:
    """Jobs, expected tasks, and the key that sizes them."""
    wl = scenario["workload"]
    kind, jobs = wl["kind"], int(wl["n_jobs"])
    if kind == "single":
        return jobs, float(jobs), "workload.n_jobs"
    if kind == "montage":
        mix = ((0.89, 1, 150), (0.08, 151, 500), (0.03, 501, wl["large_max_tasks"]))
        return jobs, jobs * sum(p * 0.5 * (lo + hi) for p, lo, hi in mix), "workload.n_jobs"
    if kind == "mapreduce":
        per = _mean(wl["map_tasks"]) + _mean(wl["reduce_tasks"])
        return jobs, jobs * per, "workload.n_jobs"
    if kind == "google":
        return jobs, jobs * min(wl["mean_tasks"], wl["max_tasks"]), "workload.n_jobs"
    if kind.endswith("-trace"):         # not read yet: Google 2011's mean tasks per job
        return jobs, jobs * wl["mean_tasks"], "workload.n_jobs"
    if kind == "spark":
        from geosim.workload.spark_apps import spark_expected_size
        tasks, edges = spark_expected_size(wl)
        return jobs, jobs * (tasks + edges * EDGE_BYTES / TASK_BYTES), "workload.n_jobs"
    if kind == "wfformat" and wl["recipe"]:
        return jobs, jobs * float(wl["recipe_tasks"]), "workload.n_jobs"
    if kind == "wfformat":
        from geosim.workload.wfformat import workflow_size
        sizes = [workflow_size(scenario.resolve(f)) for f in wl["files"]]
        return jobs, jobs * float(np.mean(sizes)), "workload.n_jobs"
    # flows: bricks of at most flow_brick seconds over each job's area (slot-time units)
    flows = _mean(wl["flow_count"]) if wl["flow_batch"] else float(jobs)
    per_flow = _mean(wl["flow_jobs"])
    tall = wl["flow_tall_probability"]
    duration = tall * _mean(wl["flow_tall_duration"]) \
        + (1 - tall) * _mean(wl["flow_short_duration"])
    duration *= 1 + wl["flow_big_probability"] * (wl["flow_big_factor"] - 1)
    wide = wl["flow_wide_probability"]
    width = wide * slots + (1 - wide) * _mean(wl["flow_narrow_cap"])
    bricks = max(duration * width * wl["flow_time_unit"] / wl["flow_brick"], width)
    return int(flows), flows * per_flow * bricks, "workload.flow_brick"
