"""000's cloning schedulers: SRPTMS+C's sharing and procedure, Algorithm 1, Smart Cloning."""

from __future__ import annotations

import numpy as np
import pytest

from geosim import make_scheduler
from geosim.errors import GeosimError
from geosim.schedulers.smart_cloning import clone_counts
from geosim.schedulers.srptms_c import (
    epsilon_shares,
    grant_machines,
    procedure,
    round_shares,
)
from geosim.variability import copy_factors, expected_min_factor, keyed_uniforms, pareto_shape


# ---------------------------------------------------------------------------- g_i (eq. 5)
def test_epsilon_shares_three_cases_by_hand():
    # W = 10, eps = 0.6: the lowest-priority 4 units of weight get nothing.
    g = epsilon_shares(np.array([3.0, 2.0, 1.0, 4.0]), 0.6, 100)
    # W_i = 10, 7, 5, 4: the first three lie wholly in the top 6 (case 1), the last has
    # W_i - (1 - eps) W = 0 (case 3 with nothing left).
    np.testing.assert_allclose(g, [50.0, 100 / 3, 100 / 6, 0.0])
    assert g.sum() == pytest.approx(100.0)


def test_epsilon_shares_boundary_job_uses_total_weight():
    # W = 10, eps = 0.5: job 0 in full (60), job 1 cut by the boundary: (7 - 5) * 100 / 5.
    g = epsilon_shares(np.array([3.0, 3.0, 4.0]), 0.5, 100)
    np.testing.assert_allclose(g, [60.0, 40.0, 0.0])
    # The printed third case, (W_i - (1 - eps) W_i) M / (eps W), would give job 1 70
    # machines and a total of 130 > M.
    assert (7 - 0.5 * 7) * 100 / 5 == 70


def test_epsilon_one_is_weighted_fair_share():
    w = np.array([1.0, 5.0, 2.0, 12.0])
    np.testing.assert_allclose(epsilon_shares(w, 1.0, 1000), w * 1000 / w.sum())


@pytest.mark.parametrize("seed", range(20))
def test_shares_sum_to_machines_after_rounding(seed):
    rng = np.random.default_rng(seed)
    w = rng.integers(1, 13, size=rng.integers(1, 40)).astype(float)
    eps = rng.uniform(0.05, 1.0)
    machines = int(rng.integers(1, 5000))
    g = epsilon_shares(w, eps, machines)
    assert g.sum() == pytest.approx(machines)
    n = round_shares(g, machines)
    assert n.sum() == machines and np.all(np.abs(n - g) < 1.0)


def test_round_shares_largest_remainder():
    np.testing.assert_array_equal(round_shares(np.array([50.0, 100 / 3, 100 / 6, 0.0]), 100),
                                  [50, 33, 17, 0])


# ---------------------------------------------------------------------------- Algorithm 2
def test_grant_no_preemption_and_free_machines_in_priority_order():
    # xi = g - sigma; job 1 already runs more than it deserves: skipped, nothing taken.
    used = grant_machines(np.array([5, -1, 10, 3]), np.array([2, 4, 3, 5]), 12)
    # job 0: 5 machines > 2 tasks -> 2 copies each = 4; job 2: min(10, 8) = 8 > 3 tasks
    # -> 2 copies each = 6; job 3: the 2 machines left, one copy on 2 random tasks.
    np.testing.assert_array_equal(used, [4, 0, 6, 2])
    # With at most one copy per task (no cloning), job 0 uses 2, job 2 uses 3, job 3 gets 5.
    np.testing.assert_array_equal(grant_machines(np.array([5, -1, 10, 3]),
                                                 np.array([2, 4, 3, 5]), 12, max_copies=1),
                                  [2, 0, 3, 3])


def test_procedure_branches():
    rng = np.random.default_rng(0)
    tasks = np.array([10, 11, 12, 20, 21, 22, 23, 24])
    pos = np.array([0, 0, 0, 1, 1, 1, 1, 1])
    new = procedure(tasks, pos, np.array([7 // 3 * 3, 2]), rng)
    count = np.bincount(new, minlength=25)
    # x = 7 > c = 3: floor(7/3) = 2 copies of every unscheduled task (6 used).
    np.testing.assert_array_equal(count[10:13], [2, 2, 2])
    # x = 2 <= c = 5: two distinct tasks, one copy each.
    assert count[20:25].sum() == 2 and count[20:25].max() == 1


def test_procedure_choice_is_uniform():
    rng = np.random.default_rng(1)
    tasks, pos = np.arange(4), np.zeros(4, dtype=np.int64)
    hits = np.zeros(4)
    for _ in range(4000):
        hits[procedure(tasks, pos, np.array([1]), rng)] += 1
    assert np.all(np.abs(hits / 4000 - 0.25) < 0.03)


@pytest.mark.parametrize("params, message", [
    ({"epsilon": 0.0}, "epsilon"), ({"epsilon": 1.5}, "epsilon"), ({"r": -1}, "r must"),
    ({"epsilon": True}, "epsilon"), ({"r": float("nan")}, "r must"),
    ({"max_copies": 0}, "max_copies"),
])
def test_srptms_bad_parameters_are_one_line_errors(params, message):
    with pytest.raises(GeosimError, match=message):
        make_scheduler("srptms+c", params)


@pytest.mark.parametrize("name, params", [("sca", {"price": -1.0}), ("sca", {"max_copies": 0}),
                                          ("srptms-offline", {"r": "x"}),
                                          ("mantri", {"duplicate_factor": 0.5})])
def test_other_bad_parameters(name, params):
    with pytest.raises(GeosimError):
        make_scheduler(name, params)


# ---------------------------------------------------------------------------- variability
def test_keyed_uniforms_depend_only_on_key_task_and_index():
    a = keyed_uniforms(7, np.array([3, 3, 9]), np.array([0, 1, 0]))
    b = keyed_uniforms(7, np.array([9, 3]), np.array([0, 0]))
    assert a[2] == b[0] and a[0] == b[1] and a[0] != a[1]
    assert keyed_uniforms(8, np.array([3]), np.array([0]))[0] != a[0]
    u = keyed_uniforms(1, np.arange(200_000), np.zeros(200_000, dtype=np.int64))
    assert np.all((u > 0) & (u < 1))
    assert abs(u.mean() - 0.5) < 0.003 and abs(u.var() - 1 / 12) < 0.001


@pytest.mark.parametrize("family", ["pareto", "lognormal", "gamma"])
@pytest.mark.parametrize("cv", [0.3, 1.0])
def test_copy_factors_have_mean_one_and_the_cv(family, cv):
    u = (np.arange(400_000) + 0.5) / 400_000
    x = copy_factors(family, np.full(u.size, cv), u)
    assert x.mean() == pytest.approx(1.0, rel=0.01)
    if family == "pareto":
        # The grid misses the far tail's variance; check the shape's moments exactly.
        a = pareto_shape(cv)
        scale = (a - 1) / a
        assert x.min() == pytest.approx(scale, rel=1e-3)
        assert a * scale / (a - 1) == pytest.approx(1.0)
        assert np.sqrt(a * scale ** 2 / ((a - 1) ** 2 * (a - 2))) == pytest.approx(cv)
    else:
        assert x.std() / x.mean() == pytest.approx(cv, rel=0.05)


def test_pareto_speedup_matches_000_closed_form():
    cv = 0.5
    alpha = pareto_shape(cv)
    for r in (1, 2, 3, 8):
        s = (r * alpha - 1) / (r * (alpha - 1))
        assert expected_min_factor("pareto", cv, r) == pytest.approx(1 / s)
    # And against the numerical rule used for the other families, on Pareto draws.
    rng = np.random.default_rng(3)
    draws = copy_factors("pareto", np.full((200_000, 3), cv), rng.random((200_000, 3)))
    assert draws.min(axis=1).mean() == pytest.approx(expected_min_factor("pareto", cv, 3),
                                                     rel=0.01)


@pytest.mark.parametrize("family", ["lognormal", "gamma"])
def test_expected_min_numerical_against_monte_carlo(family):
    rng = np.random.default_rng(4)
    draws = copy_factors(family, np.full((200_000, 4), 0.8), rng.random((200_000, 4)))
    assert draws.min(axis=1).mean() == pytest.approx(expected_min_factor(family, 0.8, 4),
                                                     rel=0.01)


# ---------------------------------------------------------------------------- Smart Cloning
def test_smart_cloning_marginal_allocation_by_hand():
    # Pareto copies with cv = 0.5: alpha = 1 + sqrt(5); E[min of c] = c(a-1)/(c a - 1).
    a = 1 + np.sqrt(5)
    m = [c * (a - 1) / (c * a - 1) for c in (1, 2, 3)]
    price = 0.01

    def gain(w, c):   # utility increment c -> c + 1 of a lone task of weight w
        u = [w * (1 - m[k]) - price * ((k + 1) * m[k] - 1) for k in range(3)]
        return u[c] - u[c - 1]
    # Task 0 (weight 1, alone in its job) and task 1 (weight 1, one of two tasks of a job,
    # so half the weight each): with one spare machine the larger first increment wins.
    assert gain(1, 1) > gain(0.5, 1)
    counts = clone_counts(np.array([1.0, 1.0, 1.0]), np.array([1, 2, 2]),
                          np.full(3, 0.5), spare=1, price=price, max_copies=3)
    np.testing.assert_array_equal(counts, [2, 1, 1])
    # With two spare machines the second goes to task 0's third copy only if that beats
    # the job of two's first clone: 0.5 * (1 - m2) - ... against 1 * (m2 - m3) - ...
    second = gain(1, 2) > gain(0.5, 1)
    counts = clone_counts(np.array([1.0, 1.0, 1.0]), np.array([1, 2, 2]),
                          np.full(3, 0.5), spare=2, price=price, max_copies=3)
    np.testing.assert_array_equal(counts, [3, 1, 1] if second else [2, 2, 1])
    # A high price makes no clone worth its machine time; no variability, no clone.
    assert clone_counts(np.ones(3), np.ones(3), np.full(3, 0.5), 5, price=10.0).max() == 1
    assert clone_counts(np.ones(3), np.ones(3), np.zeros(3), 5).max() == 1


def test_smart_cloning_is_the_exact_optimum():
    rng = np.random.default_rng(5)
    for _ in range(30):
        n = int(rng.integers(1, 4))
        w, share, cv = rng.uniform(1, 12, n), rng.integers(1, 4, n), rng.uniform(0.1, 1.5, n)
        spare = int(rng.integers(0, 6))
        got = clone_counts(w, share, cv, spare, price=0.02, max_copies=4)

        def value(c, w=w, share=share, cv=cv):
            m = expected_min_factor("pareto", cv, c)
            return float(np.sum(w / share * (1 - m) - 0.02 * (c * m - 1)))
        grid = np.stack(np.meshgrid(*[np.arange(1, 5)] * n, indexing="ij"), -1).reshape(-1, n)
        feasible = grid[(grid - 1).sum(axis=1) <= spare]
        best = max(value(c) for c in feasible)
        assert value(got) == pytest.approx(best, abs=1e-12)
        assert (got - 1).sum() <= spare
