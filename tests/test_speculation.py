"""Mantri (OSDI 2010) and LATE (OSDI 2008) on hand-built worlds with pinned beliefs."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import input_less_jobs, uniform_world

from geosim import GeoModel, load_scenario, make_scheduler
from geosim.modeler import PairTable
from geosim.schedulers.late import LATE, grouped_quantile
from geosim.schedulers.mantri import (
    Mantri,
    duplicate_rule,
    remaining_time,
    restart_rule,
)
from geosim.schedulers.mantri_rows import exact_atoms

N = 3   # clusters


def _world(slots: int) -> dict:
    return uniform_world(slots, N, power_redraw_interval=0.0)


class _Dip:
    """Availability that drops chosen slots to ``level`` from time ``at`` on."""

    def __init__(self, n_slots: int, at: float, level: float):
        self.factor = np.ones(n_slots)
        self.on = np.ones(n_slots, dtype=bool)
        self.at, self.level, self.slots = at, level, np.empty(0, dtype=np.int64)

    def advance(self, t_end, t=None):
        out = self.factor.copy()
        if t is not None and t >= self.at:
            out[self.slots] = self.level
        return out

    def advance_mean(self, t_end, t, slots, distinct=False):
        return self.advance(t_end, t)[slots]


def _model(name: str, works, slots=4, **params) -> tuple[GeoModel, object]:
    policy = make_scheduler(name, params)
    model = GeoModel(load_scenario(_world(slots)), scheduler=policy,
                     workload=input_less_jobs(works))
    pm = policy.model
    pm.refresh = lambda now: False
    pm.speed = np.full(pm.speed.shape, 100.0)
    pm.speed_mean = pm.speed.mean(axis=2)
    return model, policy


def _copies(model: GeoModel) -> dict[int, int]:
    info = model.view.copy_info()
    return {int(t): int(n) for t, n in zip(*np.unique(info["task"], return_counts=True),
                                           strict=True)}


# ---------------------------------------------------------------------- Mantri
def test_duplicate_rule_fires_just_above_delta():
    t_new = np.arange(1.0, 17.0)[None, :]          # 16 atoms: 1..16
    # c = 1: a duplicate pays when 2 t_new < t_rem; t_rem = 9 -> atoms 1..4 -> P = 4/16
    assert not duplicate_rule(np.array([9.0]), t_new, np.array([1]), 0.25)[0]
    assert duplicate_rule(np.array([10.5]), t_new, np.array([1]), 0.25)[0]   # 5/16
    # c = 2: factor 3/2; t_rem = 7.5 -> atoms 1..4 (1.5 .. 6) -> P = 0.25 exactly
    assert not duplicate_rule(np.array([7.5]), t_new, np.array([2]), 0.25)[0]
    assert duplicate_rule(np.array([7.6]), t_new, np.array([2]), 0.25)[0]
    assert restart_rule(np.array([12.1, 12.0]), np.array([11.0, 11.0]), 1.0).tolist() == \
        [True, False]
    rem = remaining_time(np.array([4.0, 4.0]), np.array([0.5, 0.2]), np.array([0.0, 0.2]))
    assert rem[0] == pytest.approx(4.0) and np.isinf(rem[1])


def _dipped_run(steps: int, **params):
    # Two single-task jobs of 2000 MI (20 s at 100 MIPS) on a world with free slots.
    model, policy = _model("mantri", [[2000.0], [2000.0]], **params)
    model.step()                                      # both start at t = 0
    info = model.view.copy_info()
    dip = _Dip(model.world.n_slots, at=2.0, level=0.1)
    dip.slots = info["slot"][info["task"] == 0]
    model.world.availability = dip
    for _ in range(steps):
        model.step()
    return model, policy


def test_mantri_duplicates_the_dipped_copy_not_the_healthy_one():
    # Task 0 runs 2 s at 100 MIPS then at 10: at t = 6, p = 0.24 -> t_rem = 6·0.76/0.24
    # = 19 > 2 · t_new(20)? No; the rate estimate keeps falling until t_rem > 40 (t = 8:
    # p = 0.26, t_rem = 22.8 ... ) and it is duplicated; task 1 (t_rem = 20 − t) never is.
    model, policy = _dipped_run(12, interval=1.0)
    copies = _copies(model)
    assert copies.get(0) == 2 and copies.get(1, 1) == 1
    assert policy.redundancy.n_duplicates == 1 and policy.redundancy.n_restarts == 0


def test_mantri_restart_cap_holds():
    # One slot per cluster; task 0 (2000 MI) is slowed wherever it runs while forty
    # short tasks of its job wait (a restarted copy is judged by progress once
    # it outlives its expected 20 s): each time one of them gets a slot, Mantri restarts
    # task 0 there instead (t_rem >> E[t_new] + Δ), but never more than max_restarts times.
    model, policy = _model("mantri", [[2000.0] + [300.0] * 40], slots=1, max_restarts=2,
                           interval=1.0)
    dip = _Dip(model.world.n_slots, at=0.0, level=0.05)

    def follow(t_end, t=None):
        out = np.ones(model.world.n_slots)
        info = model.view.copy_info()
        out[info["slot"][info["task"] == 0]] = 0.05
        return out

    dip.advance = follow
    model.world.availability = dip
    for _ in range(70):
        model.step()
    assert policy.redundancy.n_restarts == 2
    assert policy.redundancy._restarts[0] == 2 and policy.redundancy._restarts.sum() == 2


def test_mantri_validates_parameters():
    with pytest.raises(ValueError, match="delta"):
        Mantri(delta=1.5)
    with pytest.raises(ValueError, match="max_restarts"):
        Mantri(max_restarts=-1)
    with pytest.raises(ValueError, match="interval"):
        Mantri(interval=0)


# ---------------------------------------------------------------------- LATE
def test_grouped_quantile_matches_numpy():
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 4, 50)
    vals = rng.random(50)
    got = grouped_quantile(keys, vals, 0.25)
    for k in range(4):
        assert np.allclose(got[keys == k], np.quantile(vals[keys == k], 0.25))


def _late_with_two_slow_tasks(steps: int, **params):
    """Eight equal tasks on 3 clusters x 4 slots; tasks 2 and 5 run at 0.2 and 0.5 speed."""
    model, policy = _model("late", [[3000.0] * 8], min_runtime=3.0, **params)
    model.step()
    info = model.view.copy_info()
    slot_of = dict(zip(info["task"].tolist(), info["slot"].tolist(), strict=True))
    levels = np.ones(model.world.n_slots)
    levels[slot_of[2]], levels[slot_of[5]] = 0.2, 0.5
    dip = _Dip(model.world.n_slots, at=0.0, level=1.0)
    dip.advance = lambda t_end, t=None: levels.copy()
    model.world.availability = dip
    for _ in range(steps):
        model.step()
    return _copies(model), policy


def test_late_backs_up_slow_tasks_longest_first_within_cap():
    # 12 slots: cap 10% -> 1 backup. Only tasks below the 25th percentile of rates are
    # candidates, and the slowest (longest time left) goes first.
    copies, policy = _late_with_two_slow_tasks(6)
    assert copies[2] == 2                                   # slowest: backed up first
    assert all(copies[t] == 1 for t in copies if t != 2)    # cap 1: nothing else
    assert policy.redundancy.n_backups == 1
    # with a cap of 50%, task 5 (below the threshold) is backed up too, and only it
    copies, policy = _late_with_two_slow_tasks(8, speculative_cap=0.5)
    assert copies[2] == 2 and copies[5] == 2
    assert all(copies[t] == 1 for t in copies if t not in (2, 5))
    assert policy.redundancy.n_backups == 2            # one backup per task, ever


def test_late_validates_parameters():
    with pytest.raises(ValueError, match="speculative_cap"):
        LATE(speculative_cap=0)
    with pytest.raises(ValueError, match="min_runtime"):
        LATE(min_runtime=-1)


@pytest.mark.parametrize("indexed", [True, False])
def test_exact_path_variables_are_speed_then_each_remote_group(indexed):
    # Rows (task, cluster) of Mantri's general path: the processing-rate atoms, then per
    # input group the pair's bandwidth atoms over the group's size, +inf where the input
    # is local or the task has fewer groups.
    rng = np.random.default_rng(3)
    n, k = 5, 4
    speed = np.sort(rng.random((n, 2, k)), axis=2)
    pairs = np.sort(rng.random((n * n, k)), axis=1)
    table = PairTable(np.arange(n * n, dtype=np.int64), np.full(n, -1, dtype=np.int64),
                      np.ones(n), n * n, np.concatenate([pairs, np.ones((n, k))]))
    table = table.indexed() if indexed else table
    types, work = np.array([0, 1, 1]), np.array([2.0, 3.0, 5.0])
    g_ptr, g_src, g_size = np.array([0, 2, 2, 3]), np.array([1, 3, 4]), np.array([4.0, 8.0, 2.0])
    pos, dst = np.array([0, 0, 1, 2]), np.array([1, 2, 0, 4])
    got = exact_atoms(speed, table, types, work, pos, dst, g_ptr, g_src, g_size, 3)
    want = np.full((4, 3, k), np.inf)
    for i, (j, m) in enumerate(zip(pos, dst, strict=True)):
        want[i, 0] = speed[m, types[j]] / work[j]
        for g in range(g_ptr[j], g_ptr[j + 1]):
            if g_src[g] != m:
                want[i, 1 + g - g_ptr[j]] = pairs[g_src[g] * n + m] / g_size[g]
    np.testing.assert_array_equal(got, want)
    assert np.isinf(got[0, 1]).all() and np.isfinite(got[1, 1]).all()   # local, remote
