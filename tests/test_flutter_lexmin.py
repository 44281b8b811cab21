"""Flutter's exact lexicographic assignment (:func:`lexmin_assign`) against references.

Two independent references: a brute force over every assignment (tiny instances, any
costs) and, for costs with few distinct values, one assignment problem whose weights
``(k + 1) ** level`` make the sum order the same as the lexicographic order of the counts
per cost level (exact in floating point at these sizes).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from geosim.schedulers.flutter import lexmin_assign
from geosim.schedulers.lexmin import _limit


def sorted_placed(cost: np.ndarray, got: np.ndarray) -> tuple[int, list[float]]:
    """Rows placed and their costs, in descending order."""
    rows = np.flatnonzero(got >= 0)
    return rows.size, sorted(cost[rows, got[rows]].tolist(), reverse=True)


def check_feasible(cost: np.ndarray, cap: np.ndarray, got: np.ndarray) -> None:
    """Columns in range, capacities respected, only finite costs used."""
    n, m = cost.shape
    assert got.shape == (n,) and got.dtype == np.int64
    assert np.all((got >= -1) & (got < m))
    rows = np.flatnonzero(got >= 0)
    assert np.all(np.bincount(got[rows], minlength=m) <= cap)
    assert np.all(np.isfinite(cost[rows, got[rows]]))


def brute_force(cost: np.ndarray, cap: np.ndarray) -> tuple[int, list[float], np.ndarray]:
    """Optimum by enumeration, and the optimal assignment the documented tie rule picks.

    The tie rule: the lexicographically smallest vector of columns, a row left out
    counting as larger than any column.
    """
    n, m = cost.shape
    choice = np.indices((m + 1,) * n).reshape(n, -1).T      # every assignment; m: out
    ok = np.ones(len(choice), dtype=bool)
    for c in range(m):
        ok &= (choice == c).sum(axis=1) <= cap[c]
    ext = np.column_stack([cost, np.full(n, -np.inf)])       # out: sorts last
    c = ext[np.arange(n), choice]
    ok &= ~np.isposinf(c).any(axis=1)
    placed = (choice < m).sum(axis=1)
    ok &= placed == placed[ok].max()
    choice, c = choice[ok], -np.sort(-c[ok], axis=1)
    keys = np.column_stack([c, choice])
    best = np.lexsort(keys.T[::-1])[0]
    k = int(placed[ok][0])
    col = choice[best]
    return k, c[best, :k].tolist(), np.where(col < m, col, -1)


def weighted_reference(cost: np.ndarray, cap: np.ndarray,
                       fixed: dict[int, int] | None = None) -> tuple[int, float]:
    """Rows placed and total weight of an optimum, by one assignment problem.

    Costs must take few distinct values. Column ``c`` becomes ``cap[c]`` slots, and each
    row gets a slot of its own meaning "left out". A row at cost level ``L`` (0 the
    cheapest) weighs ``(n + 1) ** L``, so a smaller weight sum is a lexicographically
    smaller vector of counts per level from the top; leaving a row out weighs more than
    any placed set. ``fixed`` maps rows to the column (``-1``: out) they must take.
    """
    n, m = cost.shape
    levels = np.unique(cost[np.isfinite(cost)])
    base = float(n + 1)
    out_w = base ** levels.size
    forbid = np.inf
    slots = np.repeat(np.arange(m), cap)
    w = np.full((n, slots.size + n), forbid)
    lev = np.searchsorted(levels, cost[:, slots])
    w[:, :slots.size] = np.where(np.isfinite(cost[:, slots]), base ** lev, forbid)
    w[np.arange(n), slots.size + np.arange(n)] = out_w
    for r, c in (fixed or {}).items():
        keep = w[r].copy()
        w[r] = forbid
        if c >= 0:
            w[r, :slots.size][slots == c] = keep[:slots.size][slots == c]
        else:
            w[r, slots.size + r] = out_w
    try:
        rows, cols = linear_sum_assignment(w)
    except ValueError:                                    # ``fixed`` cannot be met
        return -1, np.inf
    total = w[rows, cols].sum()
    placed = int(np.sum(cols < slots.size))
    return placed, total


def weight_of(cost: np.ndarray, got: np.ndarray) -> float:
    """Weight of an assignment under :func:`weighted_reference`'s weights."""
    n = cost.shape[0]
    levels = np.unique(cost[np.isfinite(cost)])
    rows = np.flatnonzero(got >= 0)
    lev = np.searchsorted(levels, cost[rows, got[rows]])
    return float(np.sum(float(n + 1) ** lev) + (n - rows.size) * float(n + 1) ** levels.size)


def random_instance(rng: np.random.Generator, n: int, m: int, ties: bool,
                    p_inf: float = 0.15) -> tuple[np.ndarray, np.ndarray]:
    """Random costs (small integers when ``ties``), some ``inf``, capacities from 0."""
    cost = rng.integers(1, 5, (n, m)).astype(float) if ties else rng.random((n, m))
    cost[rng.random((n, m)) < p_inf] = np.inf
    return cost, rng.integers(0, 3, m)


@pytest.mark.parametrize("ties", [False, True])
def test_lexmin_matches_brute_force_and_its_tie_rule(ties):
    rng = np.random.default_rng(11 + ties)
    for _ in range(200):
        n, m = int(rng.integers(1, 6)), int(rng.integers(1, 5))
        cost, cap = random_instance(rng, n, m, ties)
        got = lexmin_assign(cost, cap)
        check_feasible(cost, cap, got)
        k, vec, picked = brute_force(cost, cap)
        assert sorted_placed(cost, got) == (k, vec), (cost, cap, got)
        assert got.tolist() == picked.tolist(), (cost, cap, got)


def test_lexmin_with_more_rows_than_slots_and_heavy_ties():
    # Rows share cheapest columns, so the fast path fails and the levels are needed.
    rng = np.random.default_rng(3)
    for _ in range(120):
        n, m = int(rng.integers(3, 7)), int(rng.integers(2, 4))
        cost = rng.integers(1, 4, (n, m)).astype(float)
        cost[:, 0] = rng.integers(1, 2, n)                # everyone's cheapest is column 0
        cost[rng.random((n, m)) < 0.1] = np.inf
        cap = rng.integers(0, 3, m)
        cap[0] = 1
        got = lexmin_assign(cost, cap)
        check_feasible(cost, cap, got)
        k, vec, picked = brute_force(cost, cap)
        assert sorted_placed(cost, got) == (k, vec), (cost, cap, got)
        assert got.tolist() == picked.tolist(), (cost, cap, got)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lexmin_matches_the_weighted_assignment_on_larger_instances(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n, m = int(rng.integers(5, 40)), int(rng.integers(2, 10))
        cost = rng.integers(1, 6, (n, m)).astype(float)
        hot = rng.integers(m)                             # a popular, small column
        cost[:, hot] = np.minimum(cost[:, hot], 1.0 + (rng.random(n) < 0.5))
        cost[rng.random((n, m)) < 0.2] = np.inf
        cap = rng.integers(0, 5, m)
        got = lexmin_assign(cost, cap)
        check_feasible(cost, cap, got)
        placed, total = weighted_reference(cost, cap)
        assert np.sum(got >= 0) == placed
        assert weight_of(cost, got) == total, (cost, cap, got)


def test_lexmin_tie_rule_on_medium_instances():
    # Row by row, the column returned is the lowest-numbered one (a left-out row last)
    # that some optimal assignment agreeing on the earlier rows uses.
    rng = np.random.default_rng(21)
    for _ in range(12):
        n, m = int(rng.integers(6, 12)), int(rng.integers(2, 6))
        cost = rng.integers(1, 4, (n, m)).astype(float)
        cost[rng.random((n, m)) < 0.2] = np.inf
        cap = rng.integers(0, 4, m)
        got = lexmin_assign(cost, cap)
        placed, total = weighted_reference(cost, cap)
        fixed: dict[int, int] = {}
        for r in range(n):
            for c in [*range(m), -1]:
                if c >= 0 and not np.isfinite(cost[r, c]):
                    continue
                p, w = weighted_reference(cost, cap, {**fixed, r: c})
                if p == placed and w == total:
                    fixed[r] = c
                    break
        assert got.tolist() == [fixed[r] for r in range(n)], (cost, cap, got)


def test_lexmin_on_a_large_stage_with_many_ties():
    # A stage shaped like pingan-medium's hard ones: hundreds of tasks, 100 clusters,
    # a few cost values shared by many cells, tight capacities at the cheap clusters.
    rng = np.random.default_rng(8)
    n, m = 300, 100
    cost = 3.0 + rng.integers(0, 2, (n, m))
    home = rng.integers(0, 10, n)
    cost[np.arange(n), home] = 1.0 + (rng.random(n) < 0.5)
    cap = rng.integers(0, 4, m)
    cap[:10] = 5
    got = lexmin_assign(cost, cap)
    check_feasible(cost, cap, got)
    placed, total = weighted_reference(cost, cap)
    assert np.sum(got >= 0) == placed == min(n, cap.sum())
    assert weight_of(cost, got) == total


def test_lexmin_degenerate_inputs():
    inf = np.inf
    assert lexmin_assign(np.zeros((0, 3)), np.array([1, 1, 1])).tolist() == []
    assert lexmin_assign(np.ones((2, 2)), np.array([0, 0])).tolist() == [-1, -1]
    assert lexmin_assign(np.full((2, 2), inf), np.array([1, 1])).tolist() == [-1, -1]
    # the only slot goes to the cheaper row; equal rows: the earlier one
    assert lexmin_assign(np.array([[4.0], [2.0]]), np.array([1])).tolist() == [-1, 0]
    assert lexmin_assign(np.array([[2.0], [2.0]]), np.array([1])).tolist() == [0, -1]
    # placing both rows beats placing the cheaper one alone
    cost = np.array([[1.0, 9.0], [1.0, inf]])
    assert lexmin_assign(cost, np.array([1, 1])).tolist() == [1, 0]
    # a tie among optima: the lowest-numbered columns, earlier rows first
    cost = np.array([[5.0, 5.0, 1.0], [5.0, 5.0, 1.0]])
    assert lexmin_assign(cost, np.array([1, 1, 1])).tolist() == [0, 2]


def test_limit_is_the_cost_where_the_cheapest_columns_first_hold_k_slots():
    """Level by level (up to 16 distinct costs) and by the sort beyond, the definition."""
    rng = np.random.default_rng(3)
    deep = 0
    for _ in range(3000):
        m = int(rng.integers(1, 60))
        row = rng.choice(np.arange(int(rng.integers(1, 40)), dtype=float), m)
        row[rng.random(m) < 0.1] = np.inf
        cap = rng.integers(1, 4, m)
        k = int(rng.integers(1, 3 * m))
        levels = [v for v in np.unique(row[np.isfinite(row)]) if cap[row <= v].sum() >= k]
        want = levels[0] if levels else np.inf
        deep += np.unique(row[row <= want]).size > 16
        assert _limit(row, cap, k) == want, (row.tolist(), cap.tolist(), k)
    assert deep > 100                                 # the sort's path is taken too
