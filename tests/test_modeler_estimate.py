"""The modeler's estimate of a copy's time: ``1 / E[rate]`` (003) against ``E[1 / rate]``.

Worlds with known rate distributions: the performance model is fed synthetic
observations directly, so the exact expected time is known in closed form.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import geo_world, uniform_world

from geosim import GeoModel, load_scenario, make_scheduler
from geosim.errors import GeosimError
from geosim.modeler import PerformanceModel, expected_time_max, expected_time_min
from geosim.monitor import Monitor, Priors
from geosim.schedulers.pingan.rounds import _saving_candidates_time
from geosim.workload import Workload

WORK = 1000.0       # MI of the task
LO, HI = 50.0, 200.0


def _priors(n: int) -> Priors:
    return Priors(speed_mean=np.full(n, 100.0), speed_rsd=np.full(n, 0.3),
                  bandwidth_mean=20.0, bandwidth_rsd=0.3, outage_rate=np.full(n, 1e-3))


def _model(estimate: str = "mean-rate", learn_from: str = "winners", window: int = 64,
           n: int = 2) -> PerformanceModel:
    mon = Monitor(n_clusters=n, n_types=1, window=window, priors=_priors(n))
    return PerformanceModel(mon, gate=np.full(n, 1e3), dt=1.0, atoms=16, min_samples=5,
                            refresh=0.0, estimate=estimate, learn_from=learn_from)


def _speeds(model: PerformanceModel, speeds: np.ndarray) -> None:
    zeros = np.zeros(speeds.size, dtype=np.int64)
    model.monitor.record_copies(zeros, zeros, speeds)


def _planned_time(model: PerformanceModel) -> float:
    """The time the model plans for one copy of the task on cluster 0: 1 / its rate."""
    atoms = (model.speed[0, 0] / WORK)[None, None, :]
    return float(1.0 / model.copy_rate(atoms)[0])


# ---------------------------------------------------------------------- the algebra
def _enumerate(atoms: np.ndarray, op) -> list[float]:
    present = [row for row in atoms if np.isfinite(row).any()]
    return [op(c) for c in itertools.product(*present)]


def test_expected_times_match_enumeration():
    rng = np.random.default_rng(0)
    k = 4
    atoms = np.sort(rng.uniform(0.1, 10, (30, 3, k)), axis=2)
    atoms[::3, 2] = np.inf                       # an absent variable (a local input)
    got = expected_time_min(atoms)
    for i in range(atoms.shape[0]):
        assert got[i] == pytest.approx(np.mean(_enumerate(atoms[i], lambda c: 1 / min(c))),
                                       rel=1e-12)
    top = np.where(np.isinf(atoms), -np.inf, atoms)
    got = expected_time_max(top)
    for i in range(atoms.shape[0]):
        assert got[i] == pytest.approx(np.mean(_enumerate(top[i], lambda c: 1 / max(c))),
                                       rel=1e-12)


def test_a_rate_of_zero_is_an_infinite_time_unless_another_copy_covers_it():
    stall = np.array([0.0, 1.0, 2.0, 4.0])      # stalls with probability 1/4
    sure = np.array([1.0, 1.0, 2.0, 2.0])
    assert expected_time_min(stall[None, None, :])[0] == np.inf
    assert expected_time_min(np.stack([sure, stall])[None])[0] == np.inf
    assert expected_time_max(np.stack([stall, stall])[None])[0] == np.inf
    # a sure copy next to the stalling one: E[min(1/X, 1/Y)] by enumeration
    want = np.mean([min(1 / x, 1 / y) if x > 0 else 1 / y for x in stall for y in sure])
    assert expected_time_max(np.stack([stall, sure])[None])[0] == pytest.approx(want)


# ---------------------------------------------------------------------- unbiasedness
@pytest.mark.parametrize(("draw", "inverse_mean", "mean"), [
    # uniform on [50, 200]: E[1/V] = ln(4) / 150, E[V] = 125
    (lambda rng, n: rng.uniform(LO, HI, n), np.log(HI / LO) / (HI - LO), (LO + HI) / 2),
    # two points 50 and 200, equally likely: E[1/V] = 1/80, E[V] = 125
    (lambda rng, n: rng.choice([LO, HI], n), (1 / LO + 1 / HI) / 2, (LO + HI) / 2),
])
def test_mean_time_is_unbiased_and_mean_rate_is_jensen_short(draw, inverse_mean, mean):
    """Over many independent windows of 64 observations, the average planned time is
    the exact ``E[WORK / V]`` with ``mean-time`` and ``WORK / E[V]`` with ``mean-rate``."""
    rng = np.random.default_rng(7)
    reps = 300
    planned = {"mean-rate": np.empty(reps), "mean-time": np.empty(reps)}
    for r in range(reps):
        speeds = draw(rng, 64)
        for estimate, out in planned.items():
            model = _model(estimate)
            _speeds(model, speeds)
            model.refresh(0.0)
            out[r] = _planned_time(model)
    exact, short = WORK * inverse_mean, WORK / mean
    for estimate, want in (("mean-time", exact), ("mean-rate", short)):
        got = planned[estimate]
        error = 4 * got.std(ddof=1) / np.sqrt(reps)       # four standard errors
        assert abs(got.mean() - want) < error + 0.003 * want, estimate
    # Jensen: the mean-rate time falls short of the true expected time, by far more
    # than the sampling error
    assert planned["mean-rate"].mean() < 0.9 * exact


def test_mean_time_of_a_composed_copy_matches_monte_carlo():
    """A copy bound by processing (uniform speed) and one transfer (two-point bandwidth):
    the planned time of ``mean-time`` is ``E[max(work / V^P, size / V^T)]``."""
    rng = np.random.default_rng(3)
    model = _model("mean-time", window=20_000)
    _speeds(model, rng.uniform(LO, HI, 20_000))
    bandwidth = rng.choice([2.0, 20.0], 20_000)
    model.monitor.record_transfers(np.ones(20_000, dtype=np.int64),
                                   np.zeros(20_000, dtype=np.int64), bandwidth)
    model.refresh(0.0)
    size = 100.0
    atoms = np.stack([model.speed[0, 0] / WORK, model.pair_atoms(1, 0) / size])[None]
    planned = 1.0 / model.copy_rate(atoms)[0]
    v, b = rng.uniform(LO, HI, 1_000_000), rng.choice([2.0, 20.0], 1_000_000)
    truth = np.maximum(WORK / v, size / b).mean()
    assert planned == pytest.approx(truth, rel=0.01)
    rate_model = _model("mean-rate", window=20_000)
    rate_model.speed, rate_model.bandwidth_pairs = model.speed, model.bandwidth_pairs
    assert 1.0 / rate_model.copy_rate(atoms)[0] < 0.8 * truth


# ---------------------------------------------------------------------- learning from all
def test_learning_from_all_copies_undoes_the_winners_selection():
    """Each task races two copies of uniform speed; only the faster reports as a winner.

    Winners alone learn ``max(V1, V2)`` (mean 150 for U[50, 200]); with the losers'
    observations too the model learns ``V`` itself (mean 125).
    """
    rng = np.random.default_rng(11)
    n = 4000
    pair = rng.uniform(LO, HI, (n, 2))
    winners, losers = pair.max(axis=1), pair.min(axis=1)
    means = {}
    for learn_from in ("winners", "all"):
        model = _model(learn_from=learn_from, window=n)
        _speeds(model, winners)
        zeros = np.zeros(n, dtype=np.int64)
        # local copies (no input groups): the rate is the processing speed over the work
        model.observe_ended(zeros, zeros, np.full(n, WORK), losers / WORK,
                            np.zeros(n + 1, dtype=np.int64), zeros[:0], np.zeros(0))
        model.refresh(0.0)
        means[learn_from] = model.speed_mean[0, 0]
    assert means["winners"] == pytest.approx(150.0, rel=0.02)
    assert means["all"] == pytest.approx(125.0, rel=0.02)


def test_an_ended_copy_is_credited_to_its_expected_bottleneck():
    """A remote copy whose transfer is the tighter bound gives a bandwidth sample
    ``rate * size`` of its pair; a local one a speed sample ``rate * work``."""
    model = _model(learn_from="all", n=3)
    model.refresh(0.0)
    # copy 0 on cluster 0 reads 500 MB from cluster 2 (transfer bound: 20 / 500 < 100 /
    # 1000); copy 1 on cluster 1 reads only local input
    cluster, types = np.array([0, 1]), np.array([0, 0])
    g_ptr, g_src, g_size = np.array([0, 1, 2]), np.array([2, 1]), np.array([500.0, 10.0])
    for _ in range(5):
        model.observe_ended(cluster, types, np.full(2, WORK), np.array([0.002, 0.05]),
                            g_ptr, g_src, g_size)
    model.refresh(1.0)
    assert model.bandwidth[2 * 3 + 0] == pytest.approx(np.full(16, 0.002 * 500))
    assert model.speed[1, 0] == pytest.approx(np.full(16, 0.05 * WORK))
    assert model.speed_mean[0, 0] == pytest.approx(model._speed_prior[0].mean())
    # the run's monitor is not changed
    assert model.monitor.speed_table()[1].sum() == 0
    assert model.monitor.bandwidth_table()[2].sum() == 0


def test_winners_only_ignores_ended_copies():
    model = _model(learn_from="winners")
    model.refresh(0.0)
    before = model.speed.copy()
    zeros = np.zeros(10, dtype=np.int64)
    model.observe_ended(zeros, zeros, np.full(10, WORK), np.full(10, 0.5),
                        np.zeros(11, dtype=np.int64), zeros[:0], np.zeros(0))
    model.refresh(1.0)
    np.testing.assert_array_equal(model.speed, before)


# ---------------------------------------------------------------------- PingAn
def test_the_mean_time_saving_bound_keeps_every_candidate_that_saves():
    """Rounds >= 3 compute E[T(c)] exactly only for candidates passing a bound; no
    candidate whose exact ``1 / E[T(c)]`` beats the need may be left out."""
    rng = np.random.default_rng(5)
    model = _model("mean-time")
    checked = pruned = 0
    for _ in range(200):
        t, m, k, h = 6, int(rng.integers(2, 9)), 8, int(rng.integers(2, 4))
        # log-normal rates, some nearly sure and some wide, and a few stalls (rate 0)
        base, spread = rng.uniform(0.5, 2, (t, m, 1)), rng.uniform(0.02, 1.0, (t, m, 1))
        atoms = base * np.exp(spread * rng.standard_normal((t, m, k)))
        atoms[rng.random((t, m, k)) < 0.01] = 0.0
        atoms = np.sort(atoms, axis=2)
        rows = rng.choice(t, 4, replace=False)
        have = np.array([rng.choice(m, min(h, m), replace=False) for _ in rows])
        before = model.task_rate(atoms[rows[:, None], have])
        need = (have.shape[1] + 2) / (have.shape[1] + 1) * before
        ti, ci, stacked = _saving_candidates_time(atoms, rows, have, before, need)
        exact = np.array([[model.task_rate(np.concatenate(
            [atoms[r, hv], atoms[r, j][None]])[None])[0] for j in range(m)]
            for r, hv in zip(rows, have, strict=True)])
        saves = set(zip(*np.nonzero(exact > need[:, None]), strict=True))
        passed = set(zip(ti.tolist(), ci.tolist(), strict=True))
        assert saves <= passed
        checked += len(saves)
        pruned += exact.size - len(passed)
        for e in range(ti.size):
            np.testing.assert_array_equal(stacked[e, -1], atoms[rows[ti[e]], ci[e]])
    assert checked > 300 and pruned > 1000      # the bound is exercised both ways


def _one_task() -> Workload:
    empty = np.zeros(0, dtype=np.int64)
    return Workload(arrival=np.zeros(1), weight=np.ones(1), task_ptr=[0, 1],
                    task_work=[1e6], task_type=np.zeros(1, dtype=np.int32), type_names=("t",),
                    edge_src=empty, edge_dst=empty, edge_size=np.zeros(0), raw_ptr=[0, 0],
                    raw_cluster=empty, raw_size=np.zeros(0))


@pytest.mark.parametrize(("estimate", "cluster"), [("mean-rate", 1), ("mean-time", 0)])
def test_pingan_s_first_copy_follows_the_estimate(estimate, cluster):
    """Cluster 0 runs at 100 for sure; cluster 1 at 10 or 400, equally likely.

    ``E[V]`` is 205 on cluster 1 (mean-rate picks it) but ``1 / E[1/V]`` is 19.5 there
    against 100 on cluster 0 (mean-time picks cluster 0).
    """
    policy = make_scheduler("pingan", {"estimate": estimate, "epsilon": 0.6})
    model = GeoModel(load_scenario(uniform_world(1)), scheduler=policy,
                     workload=_one_task())
    pm = policy.model
    pm.refresh = lambda now: False
    k = pm.k
    speed = np.array([[100.0] * k, [10.0] * (k // 2) + [400.0] * (k // 2), [1.0] * k])
    pm.speed = np.broadcast_to(speed[:, None, :], pm.speed.shape).copy()
    pm.speed_mean = pm.speed.mean(axis=2)
    pm.outage_probability = np.zeros(3)
    model.step()
    first = int(model.engine.copies.cols["cluster"][0])
    assert first == cluster


@pytest.mark.parametrize("params", [{"estimate": "mean-time"}, {"learn_from": "all"},
                                    {"estimate": "mean-time", "learn_from": "all"}])
def test_pingan_finishes_every_job_with_each_option(params):
    scenario = load_scenario(geo_world(n_clusters=6, n_jobs=6, rate=0.1, scheduler="pingan",
                                       params=params))
    model = GeoModel(scenario)
    result = model.run()
    assert len(result.jobs) == 6
    assert np.isfinite(result.jobs["flowtime"]).all()
    assert model.policy.model.estimate == params.get("estimate", "mean-rate")
    ended = model.policy.model._ended
    if params.get("learn_from") == "all":
        # copies that did not win were observed (insurance copies lose their races)
        lost = (result.copies["outcome"] != "won").sum()
        assert lost > 0
        assert ended.speed_table()[1].sum() + ended.bandwidth_table()[2].sum() > 0
    else:
        assert ended is None


@pytest.mark.parametrize(("params", "message"), [
    ({"estimate": "median"}, "estimate must be one of mean-rate, mean-time"),
    ({"learn_from": "losers"}, "learn_from must be one of winners, all"),
])
def test_bad_options_are_one_line_errors(params, message):
    with pytest.raises(GeosimError, match=message):
        make_scheduler("pingan", params)
