"""Mantri's fast ``t_new`` and decision kernels give what the general path gives, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from geosim.distributions import (
    exact_min,
    expected_min,
    quantile_bounds,
    survival_steps,
    thresholds,
)
from geosim.modeler import PairTable
from geosim.schedulers.mantri_rows import _HOLD, exact_quantiles, t_new_rows
from geosim.schedulers.mantri_rules import bound_tables, decide, decide_lazy


def _problem(rng: np.random.Generator, n: int = 7, types: int = 3, k: int = 8, tasks: int = 9,
             coarse: bool = False):
    """Random speed/bandwidth atoms and tasks with input groups (coarse: many ties)."""
    def draw(shape):
        x = rng.integers(1, 4, shape).astype(float) if coarse else rng.gamma(2.0, 5.0, shape)
        return np.sort(x, axis=-1)
    speed, bandwidth = draw((n, types, k)), draw((n * n, k))
    per_task = rng.integers(0, 4, tasks)
    per_task[0] = max(per_task[0], 1)
    g_task = np.repeat(np.arange(tasks), per_task)
    g_src = np.concatenate([np.sort(rng.choice(n, p, replace=False)) for p in per_task])
    g_size = rng.integers(1, 5, g_task.size).astype(float) if coarse \
        else rng.uniform(0.5, 50.0, g_task.size)
    work = rng.integers(1, 4, tasks).astype(float) if coarse else rng.uniform(1.0, 20.0, tasks)
    return speed, bandwidth, rng.integers(0, types, tasks), work, g_task, g_src, g_size


def _reference(speed, bandwidth, types, work, g_task, g_src, g_size) -> np.ndarray:
    """Mantri's ``t_new`` from one :func:`expected_min` call over padded rows."""
    n, _, k = speed.shape
    per_task = np.bincount(g_task, minlength=types.size)
    r = 1 + int(per_task.max(initial=0))
    atoms = np.full((types.size, n, r, k), np.inf)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        atoms[:, :, 0, :] = speed[:, types, :].transpose(1, 0, 2) / work[:, None, None]
        slot = 1 + (np.arange(g_task.size) - np.r_[0, np.cumsum(per_task)[:-1]][g_task])
        trans = bandwidth.reshape(n, n, k)[g_src] / g_size[:, None, None]
        trans[np.arange(g_task.size), g_src, :] = np.inf
        atoms[g_task, :, slot, :] = trans
        _, q = expected_min(atoms.reshape(types.size * n, r, k), quantiles=True)
        return (1.0 / q[:, ::-1]).reshape(types.size, n, k)


def _pairs(bandwidth: np.ndarray, n: int, indexed: bool) -> PairTable:
    """Every pair's atoms ``bandwidth[src * n + dst]`` as a pair table (with its own row)."""
    table = PairTable(np.arange(n * n, dtype=np.int64), np.full(n, -1, dtype=np.int64),
                      np.ones(n), n * n, bandwidth)
    return table.indexed() if indexed else table


def _fast(speed, bandwidth, types, work, g_task, g_src, g_size, need=None, bounds=None,
          clean=False, indexed=True):
    n, _, k = speed.shape
    table = _pairs(bandwidth, n, indexed)
    per_task = np.bincount(g_task, minlength=types.size)
    lo, hi = quantile_bounds(k, types.size * n) if bounds is None else bounds
    out = np.zeros((types.size, n, k))
    need = np.ones(n, dtype=bool) if need is None else need
    redo = t_new_rows(speed, table, types.astype(np.int64), work,
                       np.r_[0, np.cumsum(per_task)], g_src.astype(np.int64), g_size, need,
                       survival_steps(1, k), lo, hi, out, clean)
    return out, redo


@pytest.mark.parametrize("coarse", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_t_new_rows_match_expected_min(seed, coarse):
    rng = np.random.default_rng(seed)
    problem = _problem(rng, coarse=coarse)
    want = _reference(*problem)
    for clean in (False, True):
        # a small world's table lists every pair's row; a large one's is searched
        got, redo = _fast(*problem, clean=clean, indexed=seed % 2 == 0)
        assert redo.size == 0
        assert np.array_equal(got, want)


def test_t_new_rows_with_overflowing_atoms():
    """Atoms that overflow to +inf (a clean model, tiny sizes) end a variable as absent."""
    rng = np.random.default_rng(11)
    speed, bandwidth, types, work, g_task, g_src, g_size = _problem(rng)
    bandwidth[::3, -4:] = 1e307
    g_size[::2] = 1e-3
    problem = (speed, bandwidth, types, work, g_task, g_src, g_size)
    want = _reference(*problem)
    for clean in (False, True):
        got, redo = _fast(*problem, clean=clean)
        assert redo.size == 0
        assert np.array_equal(got, want)


def test_t_new_rows_skip_clusters_outside_need():
    problem = _problem(np.random.default_rng(3))
    need = np.zeros(7, dtype=bool)
    need[[1, 4]] = True
    got, _ = _fast(*problem, need=need)
    want = _reference(*problem)
    assert np.array_equal(got[:, need], want[:, need])
    assert not got[:, ~need].any()


def test_unsettled_rows_are_reported_and_solved_exactly_with_their_offsets():
    """Rows not settled by the bounds (here: none), non-ascending or NaN rows go back."""
    rng = np.random.default_rng(5)
    speed, bandwidth, types, work, g_task, g_src, g_size = _problem(rng)
    speed[2, :, :] = speed[2, :, ::-1]                 # not ascending: merged in full
    speed[4, :, 0] = 0.0
    work[1] = 0.0                                      # 0/0: NaN atoms
    problem = (speed, bandwidth, types, work, g_task, g_src, g_size)
    want = _reference(*problem)
    n, k = speed.shape[0], speed.shape[2]
    for bounds in (None, (np.full(k, -np.inf), np.full(k, np.inf))):
        got, redo = _fast(*problem, bounds=bounds)
        assert redo.size > 0
        if bounds is not None:
            assert redo.size == types.size * n
        per_task = np.bincount(g_task, minlength=types.size)
        r = 1 + int(per_task.max())
        # The general path on the reported rows alone, with their offsets in the call.
        full = np.full((types.size, n, r, k), np.inf)
        with np.errstate(divide="ignore", invalid="ignore"):
            full[:, :, 0, :] = speed[:, types, :].transpose(1, 0, 2) / work[:, None, None]
            slot = 1 + (np.arange(g_task.size) - np.r_[0, np.cumsum(per_task)[:-1]][g_task])
            trans = bandwidth.reshape(n, n, k)[g_src] / g_size[:, None, None]
            trans[np.arange(g_task.size), g_src, :] = np.inf
            full[g_task, :, slot, :] = trans
            _, q = exact_min(full.reshape(-1, r, k)[redo], 2.0 * redo, True)
            flat = got.reshape(-1, k)
            flat[redo] = 1.0 / q[:, ::-1]
        assert np.array_equal(got, want, equal_nan=True)


def test_exact_min_on_a_subset_of_rows_matches_the_whole_call():
    rng = np.random.default_rng(1)
    atoms = np.sort(rng.integers(0, 5, (400, 3, 4)).astype(float), axis=2)
    atoms[::4, 1] = np.inf
    mean, q = expected_min(atoms, quantiles=True)
    rows = np.array([0, 7, 199, 399])
    m2, q2 = exact_min(atoms[rows], 2.0 * rows, True)
    assert np.array_equal(m2, mean[rows]) and np.array_equal(q2, q[rows])


def _decide_reference(means, atoms, t_rem, c, restartable, jobs, pool, free, margin, delta,
                      factor):
    """The per-candidate loop of Mantri.act before it was compiled."""
    out = []
    for j in range(means.shape[0]):
        mine = pool.get(int(jobs[j]), []) if restartable[j] else []
        room = free > 0
        restart = False
        best = -1
        if mine or (restartable[j] and room.any()):
            wide = room.copy()
            wide[[cl for _, cl in mine]] = True
            where = np.flatnonzero(wide)
            best = int(where[np.argmin(means[j][where])])
            restart = bool(t_rem[j] > means[j, best] + margin)
        if not restart:
            where = np.flatnonzero(room)
            if where.size == 0:
                out.append((0, -1, -1))
                continue
            best = int(where[np.argmin(means[j][where])])
            f = (c[j] + 1.0) / c[j] if factor is None else factor
            if not np.mean(atoms[j, best] * f < t_rem[j]) > delta:
                out.append((0, -1, -1))
                continue
        took = -1
        if free[best] > 0:
            free[best] -= 1
        else:
            e = next(e for e in mine if e[1] == best)
            mine.remove(e)
            if not mine:
                del pool[int(jobs[j])]
            took = e[0]
        out.append((2 if restart else 1, best, took))
    return out


@pytest.mark.parametrize("factor", [None, 2.0])
@pytest.mark.parametrize("seed", range(8))
def test_decide_matches_the_python_loop(seed, factor):
    rng = np.random.default_rng(seed)
    m, n, k = 20, 6, 8
    atoms = np.sort(rng.integers(1, 6, (m, n, k)).astype(float), axis=2)
    means = atoms.mean(axis=2)
    means[rng.random((m, n)) < 0.05] = np.nan
    t_rem = rng.choice([1.0, 3.0, 5.0, 8.0, np.inf], m)
    c = rng.integers(1, 3, m).astype(float)
    restartable = rng.random(m) < 0.5
    jobs = rng.integers(0, 4, m)
    free = rng.integers(0, 2, n)
    drawn = sorted(zip(rng.integers(0, 4, 6).tolist(), rng.integers(0, n, 6).tolist(),
                       strict=True), key=lambda x: x[0])
    entries = [(e, j, cl) for e, (j, cl) in enumerate(drawn)]      # by job, stable
    pool: dict[int, list[tuple[int, int]]] = {}
    for e, j, cl in entries:
        pool.setdefault(j, []).append((e, cl))
    want = _decide_reference(means, atoms, t_rem, c, restartable, jobs, pool, free.copy(),
                             1.0, 0.25, factor)
    pool_jobs = np.array([j for _, j, _ in entries])
    pool_cluster = np.array([cl for _, _, cl in entries], dtype=np.int64)
    lo = np.searchsorted(pool_jobs, jobs, side="left")
    hi = np.where(restartable, np.searchsorted(pool_jobs, jobs, side="right"), lo)
    taken = np.zeros(len(entries), dtype=bool)
    n_atoms = np.full(m, k, dtype=np.int64)                      # every candidate: k atoms
    what, where, took = decide(means, atoms, n_atoms, t_rem, c, restartable, lo, hi,
                                pool_cluster, taken, free, 1.0, 0.25,
                                -1.0 if factor is None else factor)
    got = [(int(a), int(b) if a else -1, int(t)) for a, b, t in zip(what, where, took,
                                                                   strict=True)]
    assert got == want


@pytest.mark.parametrize("k", [4, 16, 128])
@pytest.mark.parametrize("n_rows", [1, 30_000, 10**7])
def test_quantile_bounds_leave_only_tests_rounding_can_flip(k, n_rows):
    """Outside ``[lo, hi]`` the offset quantile test goes as the bounds say, at any offset.

    The log-survivals just outside each level's window (the nearest floats and a few
    units further) are put through the test as the general path makes it (NumPy's
    ``exp``, offsets up to twice the last row's index).
    """
    lo, hi = quantile_bounds(k, n_rows)
    thr = thresholds(k)
    offsets = 2.0 * np.array([0, 1, n_rows // 3, n_rows - 1], dtype=float)
    ulps = np.arange(1, 65, dtype=float)
    for c in range(k):
        below = np.nextafter(lo[c], -np.inf) - ulps * np.spacing(abs(lo[c]))
        above = np.nextafter(hi[c], np.inf) + ulps * np.spacing(abs(hi[c]))
        for off in offsets:
            assert np.all((1.0 - np.exp(below)) + off >= thr[c] + off)
            assert not np.any((1.0 - np.exp(above)) + off >= thr[c] + off)


def test_quantile_bounds_settle_exact_ties_of_levels_in_wide_calls():
    """A survival equal to a level's own (two of 16 atoms' variables at 12/16 and 14/16
    meet level 5's 1 - 5.5/16) is settled without the general path in a call of 30 000
    rows: each level's window is as wide as rounding near that level's survival needs,
    not as wide as near the last level's (about twenty times wider here).
    """
    k, steps = 16, survival_steps(1, 16)
    lo, hi = quantile_bounds(k, 30_000)
    log_s = steps[:4].sum() + steps[:2].sum()                 # (12/16) (14/16)
    assert np.isclose(np.exp(log_s), 1.0 - 5.5 / 16)
    assert not lo[5] <= log_s <= hi[5]
    assert hi[5] - lo[5] < (hi[-1] - lo[-1]) / 10


@pytest.mark.parametrize("n", [9, 3 * _HOLD])
@pytest.mark.parametrize("general", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_lazy_decisions_match_full_rows(seed, general, n):
    """The lazy rules pick what the rules on every row pick, with the same E[t_new].

    ``general`` makes every quantile test ambiguous, so every row the lazy search computes
    goes through the general path at its offset in the call over all rows. With more
    clusters than one scan of the bounds holds, searches go on to later scans.
    """
    rng = np.random.default_rng(seed)
    speed, bandwidth, types, work, g_task, g_src, g_size = _problem(rng, n=n, tasks=12)
    n, _, k = speed.shape
    atoms = _reference(speed, bandwidth, types, work, g_task, g_src, g_size)
    means = atoms.mean(axis=2)
    m = types.size
    t_rem = rng.choice([0.5, 2.0, 5.0, np.inf], m)
    c = rng.integers(1, 3, m).astype(float)
    # Some candidates may restart on their jobs' fresh copies (a pool of clusters each).
    restartable = rng.random(m) < 0.5
    per_pool = np.where(restartable, rng.integers(0, 3, m), 0)
    pool_hi = np.cumsum(per_pool).astype(np.int64)
    pool_lo = pool_hi - per_pool
    pool_cluster = rng.integers(0, n, int(per_pool.sum())).astype(np.int64)
    per_task = np.bincount(g_task, minlength=m)
    g_ptr = np.r_[0, np.cumsum(per_task)].astype(np.int64)
    lo, hi = quantile_bounds(k, m * n)
    if general:
        lo, hi = np.full(k, -np.inf), np.full(k, np.inf)
    r = 1 + int(per_task.max())
    for dense in (np.empty((0, 0)), bandwidth):
        free = rng.integers(0, 3, n)
        args = (t_rem, c, restartable, pool_lo, pool_hi, pool_cluster)
        taken = np.zeros(pool_cluster.size, dtype=bool)
        want = decide(means, atoms, np.full(m, k, dtype=np.int64), *args, taken.copy(),
                       free.copy(), 1.0, 0.25, -1.0)
        what, where, took, best = decide_lazy(
            speed, _pairs(bandwidth, n, True), dense, types.astype(np.int64), work, g_ptr,
            g_src.astype(np.int64), g_size, survival_steps(1, k), lo, hi,
            survival_steps(r, k), thresholds(k), *bound_tables(speed, bandwidth), *args,
            taken, free, 1.0, 0.25, -1.0)
        assert what.any()
        assert (what == 2).any() or pool_cluster.size == 0
        np.testing.assert_array_equal(what, want[0])
        np.testing.assert_array_equal(where, want[1])
        np.testing.assert_array_equal(took, want[2])
        chosen = what > 0
        assert np.array_equal(best[chosen], means[chosen.nonzero()[0], where[chosen]])


@pytest.mark.parametrize("base", [0, 10**15])
def test_exact_quantiles_match_the_call_over_all_rows(base):
    """One row by the general path gets its quantiles in the call, at its offset there.

    At offsets near 2e15 a unit in the last place is a quarter, so an offset left out
    would move quantiles.
    """
    rng = np.random.default_rng(base % 97)
    speed, bandwidth, types, work, g_task, g_src, g_size = _problem(rng, coarse=True)
    n, _, k = speed.shape
    m = types.size
    per_task = np.bincount(g_task, minlength=m)
    g_ptr = np.r_[0, np.cumsum(per_task)].astype(np.int64)
    r = 1 + int(per_task.max())
    full = np.full((m, n, r, k), np.inf)
    full[:, :, 0, :] = speed[:, types, :].transpose(1, 0, 2) / work[:, None, None]
    slot = 1 + (np.arange(g_task.size) - g_ptr[:-1][g_task])
    trans = bandwidth.reshape(n, n, k)[g_src] / g_size[:, None, None]
    trans[np.arange(g_task.size), g_src, :] = np.inf
    full[g_task, :, slot, :] = trans
    offsets = 2.0 * (base + np.arange(m * n))
    _, want = exact_min(full.reshape(m * n, r, k), offsets, True)
    table, q = _pairs(bandwidth, n, True), np.empty(k)
    for row in range(m * n):
        j, dst = divmod(row, n)
        exact_quantiles(speed, table, types, work, j, dst, g_ptr, g_src.astype(np.int64),
                        g_size, survival_steps(r, k), thresholds(k), offsets[row], q)
        assert np.array_equal(q, want[row])
