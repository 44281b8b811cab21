"""Closed-form queueing results on the one-cluster world.

Decisions happen at slot boundaries, so a job waits on average dt/2 for the boundary
after its arrival; the theoretical means below add that (and the tolerances cover the
second-order effect of a freed slot idling until the next boundary, at most dt).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import closed_world

import geosim


def erlang_c_response(lam: float, mu: float, c: int) -> float:
    """Mean response time of M/M/c FIFO."""
    a = lam / mu
    rho = a / c
    head = sum(a**k / math.factorial(k) for k in range(c))
    tail = a**c / math.factorial(c) / (1 - rho)
    return tail / (head + tail) / (c * mu - lam) + 1 / mu


def mean_flowtime(world: dict, seeds: range) -> float:
    return float(np.mean([geosim.run(world, seed=s).jobs["flowtime"].mean() for s in seeds]))


def test_mmc_fifo_matches_erlang_c():
    c, mean, rho, dt = 4, 20.0, 0.6, 1.0
    lam = rho * c / mean
    world = closed_world(slots=c, rate=lam, n_jobs=6000, dt=dt,
                         work={"distribution": "exponential", "mean": mean})
    sim = mean_flowtime(world, range(3))
    theory = erlang_c_response(lam, 1 / mean, c) + dt / 2
    assert sim == pytest.approx(theory, rel=0.04)


def test_processor_sharing_matches_es_over_one_minus_rho():
    # M/G/1-PS: E[T | S] = S / (1 - rho) for every job, so sum(T - dt/2) / sum(S) estimates
    # 1 / (1 - rho) without the noise of the service times themselves.
    mean, rho, dt = 20.0, 0.5, 1.0
    world = closed_world(slots=1, rate=rho / mean, n_jobs=4000, dt=dt, scheduler="fair",
                         params={"multitasking": True},
                         work={"distribution": "exponential", "mean": mean})
    ratios = []
    for seed in range(4):
        jobs = geosim.run(world, seed=seed).jobs
        ratios.append((jobs["flowtime"] - dt / 2).sum() / jobs["work"].sum())
    assert np.mean(ratios) == pytest.approx(1 / (1 - rho), rel=0.07)


def test_md1_fifo_matches_pollaczek_khinchine():
    # One slot, deterministic work: W = S + rho S / (2 (1 - rho)).
    s, rho, dt = 10.0, 0.5, 0.5
    world = closed_world(slots=1, rate=rho / s, n_jobs=6000, dt=dt,
                         work={"distribution": "deterministic", "value": s})
    sim = mean_flowtime(world, range(2))
    theory = s + rho * s / (2 * (1 - rho)) + dt / 2
    assert sim == pytest.approx(theory, rel=0.04)


def test_srpt_beats_fifo_on_heavy_tailed_work():
    # At load ~0.8 with Pareto work SRPT is far below FIFO (Schrage & Miller optimality).
    world = closed_world(slots=2, rate=0.09, n_jobs=3000,
                         work={"distribution": "pareto", "scale": 10.0, "shape": 2.2})
    fifo = geosim.run(world, scheduler="fifo").jobs["flowtime"].mean()
    srpt = geosim.run(world, scheduler="srpt").jobs["flowtime"].mean()
    fair = geosim.run(world, scheduler="fair").jobs["flowtime"].mean()
    assert srpt < 0.8 * fifo
    assert srpt <= fair <= fifo * 1.05
