"""Closed-form queueing results on the one-cluster world, with event timing.

``run.timing = "event"`` lets an event-driven scheduler decide at the instant of every
arrival and completion, so the engine is an exact event simulation of the queue and the
closed forms apply as they are. SRPT and processor sharing run on 002's pool policies
(SRPT+R and Fair+R on one machine are exactly those queues), whose compiled loop affords
200 000 jobs and a 1.5% tolerance. The general step is checked job by job: FIFO against
the c-server recursion on the same jobs (the recursion, on 120 000 of geosim's jobs,
meets Erlang C within 2%), SRPT and processor sharing against the pool loop's.
With slotted timing a job waits for the next boundary and a freed slot idles until it;
``test_slotted_bias_shrinks_with_dt`` measures that bias.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
import pytest
from conftest import closed_world, geo_world
from scipy import stats
from scipy.integrate import cumulative_trapezoid, trapezoid

import geosim
from geosim.workload import build_workload
from geosim.world import build_world, spawn_streams


def erlang_c_response(lam: float, mu: float, c: int) -> float:
    """Mean response time of M/M/c FIFO."""
    a = lam / mu
    rho = a / c
    head = sum(a**k / math.factorial(k) for k in range(c))
    tail = a**c / math.factorial(c) / (1 - rho)
    return tail / (head + tail) / (c * mu - lam) + 1 / mu


def srpt_response(lam: float, dist, n: int = 200_001) -> float:
    """Schrage & Miller's mean response time of M/G/1 preemptive SRPT, by quadrature.

    ``T(x) = ∫_0^x dt / (1 − ρ(t)) + λ (∫_0^x t² dF + x² (1 − F(x))) / (2 (1 − ρ(x))²)``
    with ``ρ(x) = λ ∫_0^x t dF``, averaged over ``F``.
    """
    x = np.linspace(0.0, dist.ppf(1 - 1e-10), n)
    f, cdf = dist.pdf(x), dist.cdf(x)
    rho = lam * cumulative_trapezoid(x * f, x, initial=0.0)
    second = cumulative_trapezoid(x * x * f, x, initial=0.0)
    wait = cumulative_trapezoid(1.0 / (1.0 - rho), x, initial=0.0)
    t = wait + lam * (second + x * x * (1.0 - cdf)) / (2.0 * (1.0 - rho) ** 2)
    return float(trapezoid(t * f, x) / trapezoid(f, x))


def event_world(**kwargs) -> dict:
    world = closed_world(**kwargs)
    world["run"]["timing"] = "event"
    return world


def mean_flowtime(world: dict, seeds: range) -> float:
    return float(np.mean([geosim.run(world, seed=s).jobs["flowtime"].mean() for s in seeds]))


def fifo_completions(arrival: np.ndarray, work: np.ndarray, c: int) -> np.ndarray:
    """Completion instants of FIFO on ``c`` identical servers of speed 1 (Kiefer-Wolfowitz)."""
    free = [0.0] * c
    done = np.empty(arrival.size)
    for i, (a, s) in enumerate(zip(arrival, work, strict=True)):
        done[i] = max(a, heapq.heappop(free)) + s
        heapq.heappush(free, done[i])
    return done


def recursion_flowtime(world: dict, c: int, seeds: range) -> float:
    """Mean flowtime of :func:`fifo_completions` on the jobs geosim draws for ``seeds``."""
    scenario = geosim.load_scenario(world)
    means = []
    for seed in seeds:
        streams = spawn_streams(seed)
        wl = build_workload(scenario, build_world(scenario, streams), streams["workload"])
        means.append(np.mean(fifo_completions(wl.arrival, wl.task_work, c) - wl.arrival))
    return float(np.mean(means))


def test_mmc_fifo_matches_erlang_c():
    # Through the general event-timed step. Its completions are exactly those of the
    # c-server FIFO recursion on the same jobs, and the recursion on 4 × 30 000 of
    # geosim's jobs meets Erlang C within 2% (about 3 standard errors), so the general
    # step meets it without running them all.
    c, mean, rho = 4, 20.0, 0.5
    lam = rho * c / mean
    world = event_world(slots=c, rate=lam, n_jobs=4000,
                        work={"distribution": "exponential", "mean": mean})
    jobs = geosim.run(world).jobs
    expected = fifo_completions(jobs["arrival"].to_numpy(), jobs["work"].to_numpy(), c)
    assert jobs["completion"].to_numpy() == pytest.approx(expected, rel=1e-9, abs=1e-6)
    world["workload"]["n_jobs"] = 30_000
    assert recursion_flowtime(world, c, range(4)) == pytest.approx(
        erlang_c_response(lam, 1 / mean, c), rel=0.02)


@pytest.mark.parametrize("name, dist, work", [
    ("exponential", stats.expon(scale=20.0), {"distribution": "exponential", "mean": 20.0}),
    ("pareto", stats.pareto(b=2.5, scale=12.0),
     {"distribution": "pareto", "scale": 12.0, "shape": 2.5}),
    ("uniform", stats.uniform(loc=5.0, scale=30.0),
     {"distribution": "uniform", "low": 5.0, "high": 35.0}),
])
def test_mg1_srpt_matches_schrage_miller(name, dist, work):
    # SRPT+R on one machine is preemptive SRPT (one job alive or more: the smallest runs,
    # checkpointed at every event), run by the compiled pool loop: 200 000 jobs.
    lam = 0.5 / dist.mean()
    world = event_world(slots=1, rate=lam, n_jobs=50_000, scheduler="srpt+r", work=work)
    sim = mean_flowtime(world, range(4))
    assert sim == pytest.approx(srpt_response(lam, dist), rel=0.015)


def test_general_step_srpt_is_the_pool_loop_s_srpt():
    # The same queue through the general event-timed step (its own SRPT scheduler) gives
    # every job the completion instant that SRPT+R on the pool loop gives it, the queue
    # checked against Schrage-Miller above.
    world = event_world(slots=1, rate=0.025, n_jobs=2000, scheduler="srpt",
                        work={"distribution": "exponential", "mean": 20.0})
    general = geosim.run(world).jobs["completion"].to_numpy()
    pool = geosim.run(world, scheduler="srpt+r").jobs["completion"].to_numpy()
    assert general == pytest.approx(pool, rel=1e-9, abs=1e-6)


def test_fair_r_on_one_machine_is_processor_sharing():
    # Fair+R with n >= M = 1 jobs runs every job at share 1/n: M/G/1-PS, whose
    # E[T | S] = S / (1 - rho) gives sum(T) / sum(S) -> 1 / (1 - rho).
    mean, rho = 20.0, 0.5
    world = event_world(slots=1, rate=rho / mean, n_jobs=50_000, scheduler="fair+r",
                        work={"distribution": "pareto", "scale": 10.0, "shape": 2.0})
    ratios = [(lambda j: j["flowtime"].sum() / j["work"].sum())(geosim.run(world, seed=s).jobs)
              for s in range(4)]
    assert np.mean(ratios) == pytest.approx(1 / (1 - rho), rel=0.015)


def test_general_step_processor_sharing_is_the_pool_loop_s():
    # Fair with multitasking on one slot shares it equally among the alive jobs through
    # the general step: every completion is Fair+R's on the pool loop, the M/G/1-PS queue
    # checked above.
    world = event_world(slots=1, rate=0.025, n_jobs=2000, scheduler="fair",
                        params={"multitasking": True},
                        work={"distribution": "exponential", "mean": 20.0})
    general = geosim.run(world).jobs["completion"].to_numpy()
    pool = geosim.run(world, scheduler="fair+r").jobs["completion"].to_numpy()
    assert general == pytest.approx(pool, rel=1e-9, abs=1e-6)


def test_md1_fifo_matches_pollaczek_khinchine():
    # One slot, deterministic work: W = S + rho S / (2 (1 - rho)). The general step's
    # completions are the one-server recursion's; the recursion on 2 × 6000 of geosim's
    # jobs meets Pollaczek-Khinchine.
    s, rho = 10.0, 0.5
    world = event_world(slots=1, rate=rho / s, n_jobs=2000,
                        work={"distribution": "deterministic", "value": s})
    jobs = geosim.run(world).jobs
    expected = fifo_completions(jobs["arrival"].to_numpy(), jobs["work"].to_numpy(), 1)
    assert jobs["completion"].to_numpy() == pytest.approx(expected, rel=1e-9, abs=1e-6)
    world["workload"]["n_jobs"] = 6000
    assert recursion_flowtime(world, 1, range(2)) == pytest.approx(
        s + rho * s / (2 * (1 - rho)), rel=0.02)


def test_slotted_bias_shrinks_with_dt():
    # The same jobs under slotted timing approach the event-timed run as dt falls; at
    # dt = 1 the mean is about dt/2 high (a job waits for the boundary after it arrives).
    world = closed_world(slots=2, rate=0.05, n_jobs=300, scheduler="srpt",
                         work={"distribution": "exponential", "mean": 20.0})
    event = dict(world, run={**world["run"], "timing": "event"})
    exact = geosim.run(event).jobs["flowtime"].mean()
    gaps = []
    for dt in (1.0, 0.1, 0.01):
        slotted = dict(world, run={**world["run"], "dt": dt})
        gaps.append(geosim.run(slotted).jobs["flowtime"].mean() / exact - 1)
    assert gaps[0] > gaps[1] > gaps[2] > 0 and gaps[2] < 1e-3


def availability_phases(world: dict, until: float,
                        slot: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Phase starts and speed factors of a slot's availability, rebuilt from the seed."""
    scenario = geosim.load_scenario(world)
    avail = build_world(scenario, spawn_streams(world["run"]["seed"])).availability
    starts, levels = [0.0], [float(avail.level[slot])]
    while starts[-1] < until:
        starts.append(float(avail.next_change[slot]))
        avail.advance(starts[-1])
        levels.append(float(avail.level[slot]))
    return np.array(starts), np.array(levels)


def test_event_timing_is_exact_under_availability_periods():
    # One machine alternating between available and unavailable periods, FIFO: each job
    # starts when it arrives or its predecessor leaves and finishes when the integral of
    # the speed factor reaches its work, computed here from the phases alone.
    world = event_world(availability=True, rate=0.02, n_jobs=150)
    result = geosim.run(world)
    jobs = result.jobs
    starts, levels = availability_phases(world, jobs["completion"].max() + 1)
    done_work = np.concatenate([[0.0], np.cumsum(levels[:-1] * np.diff(starts))])

    def finish(t: float, work: float) -> float:
        k = np.searchsorted(starts, t, side="right") - 1
        target = done_work[k] + levels[k] * (t - starts[k]) + work
        k = np.searchsorted(done_work, target, side="left") - 1
        return float(starts[k] + (target - done_work[k]) / levels[k])

    free, expected = 0.0, []
    for arrival, work in zip(jobs["arrival"], jobs["work"], strict=True):
        free = finish(max(arrival, free), work)
        expected.append(free)
    assert jobs["completion"].to_numpy() == pytest.approx(expected, rel=1e-9, abs=1e-6)
    # Slotted timing with the same world approaches it as dt falls.
    gaps = [abs(geosim.run(dict(world, run={**world["run"], "timing": "slot", "dt": dt}))
                .jobs["flowtime"].mean() / jobs["flowtime"].mean() - 1) for dt in (1.0, 0.1)]
    assert gaps[1] < gaps[0] and gaps[1] < 0.01


def test_event_timing_runs_network_worlds_and_schedulers_that_decide_every_slot():
    # Transfers' arrivals end sub-spans inside the engine; PingAn, which decides every
    # slot (003's rounds), still decides at slot boundaries only, and arrivals (off the
    # boundaries) are steps of their own.
    # Completions, not decision points for it, end no model step either.
    world = geo_world(n_jobs=3, scheduler="pingan")
    world["run"]["timing"] = "event"
    model = geosim.GeoModel(geosim.load_scenario(world))
    decided, decide = [], model.policy.decide
    model.policy.decide = lambda view, actions: (decided.append(view.time),
                                                 decide(view, actions))
    ends = []
    while model.running:
        model.step()
        ends.append(model.engine.time)
    result = model.result()
    assert result.jobs["finished"].all()
    assert decided and all(t == round(t) for t in decided)     # dt = 1 s
    assert model.steps_run > len(decided)
    completions = set(result.tasks["completion"]) - {round(t) for t in ends}
    assert len(completions) > 100 and not completions & set(ends)


def test_srpt_beats_fifo_on_heavy_tailed_work():
    # At load ~0.8 with Pareto work SRPT is far below FIFO (Schrage & Miller optimality).
    world = closed_world(slots=2, rate=0.09, n_jobs=3000,
                         work={"distribution": "pareto", "scale": 10.0, "shape": 2.2})
    fifo = geosim.run(world, scheduler="fifo").jobs["flowtime"].mean()
    srpt = geosim.run(world, scheduler="srpt").jobs["flowtime"].mean()
    fair = geosim.run(world, scheduler="fair").jobs["flowtime"].mean()
    assert srpt < 0.8 * fifo
    assert srpt <= fair <= fifo * 1.05


def test_event_timing_stops_at_outages():
    # A cluster's outages start and end at instants fixed by the seed: event timing loses
    # the copies at the start instant itself, and launches nothing while it lasts.
    world = event_world(slots=3, rate=0.05, n_jobs=80, scheduler="srpt")
    world["tiers"]["small"]["outage_probability"] = [0.3, 0.3]
    world["outages"] = {"enabled": True, "trial_interval": 20.0, "duration": "exponential",
                        "duration_scale": 15.0}
    result = geosim.run(world)
    assert result.jobs["finished"].all()
    outages = build_world(geosim.load_scenario(world),
                          spawn_streams(world["run"]["seed"])).outages
    _, at, level = outages.changes(result.jobs["completion"].max() + 1)
    down, up = at[level == 0.0], at[level == 1.0]
    copies = result.copies
    failed = copies[copies["outcome"] == "failed"]
    assert len(failed) > 0
    assert np.isin(failed["end"].to_numpy(), down).all()
    for start, end in zip(down, np.append(up, np.inf)[:down.size], strict=True):
        assert not ((copies["start"] > start) & (copies["start"] < end)).any()
