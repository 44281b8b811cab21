"""PingAn's choice among clusters tied at the last candidate's bound (``ties``).

NumPy's ``argpartition`` (``ties = "numpy"``) chooses among tied values by an algorithm
that NumPy picks by the CPU's vector instructions; ``"seeded"`` chooses by keyed draws
of the run's seed, so its runs are the same on every machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from geosim.keyed import uniform
from geosim.schedulers.pingan.candidates import top_columns
from geosim.schedulers.pingan.seeded import _patch_candidates, _seeded_top
from geosim.testing import scheduler_checks

KEY = np.uint64(0x5EED)


def _reference(score: np.ndarray, m: int, row_task: np.ndarray, key: np.uint64) -> np.ndarray:
    """The ``m`` first columns by (value, NaN last; draw; column), with a draw per column."""
    n_rows, n = score.shape
    out = np.empty((n_rows, m), dtype=np.int64)
    cols = np.arange(n)
    for i in range(n_rows):
        draw = np.array([uniform(key, row_task[i], c, 0) for c in range(n)])
        nan = np.isnan(score[i])
        order = np.lexsort((cols, draw, np.where(nan, 0.0, score[i]), nan))
        out[i] = order[:m]
    return out


def test_seeded_top_orders_by_value_then_draw_then_column():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n_rows, n = int(rng.integers(1, 5)), int(rng.integers(2, 30))
        m = int(rng.integers(1, n + 1))
        score = rng.choice([-3.0, -1.0, -0.0, 0.0, 2.0, np.inf, -np.inf, np.nan],
                           size=(n_rows, n), p=[.2, .2, .1, .1, .2, .1, .05, .05])
        row_task = rng.integers(0, 1000, size=n_rows)
        np.testing.assert_array_equal(_seeded_top(score, m, row_task, KEY),
                                      _reference(score, m, row_task, KEY))


def test_seeded_top_chooses_among_ties_uniformly_and_by_task():
    n, m, tasks = 10, 3, 4000
    score = np.zeros((tasks, n))
    score[:, 0] = -1.0                  # the best column is always taken, first
    top = _seeded_top(score, m, np.arange(tasks), KEY)
    assert (top[:, 0] == 0).all()
    counts = np.bincount(top[:, 1:].ravel(), minlength=n)[1:]
    # each of the 9 tied columns is chosen with probability 2/9: 888.9 of 4000 rows
    expected = tasks * (m - 1) / (n - 1)
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected))
    # the same task gets the same choice; another key another one
    again = _seeded_top(score[:5], m, np.arange(5), KEY)
    np.testing.assert_array_equal(again, top[:5])
    other = _seeded_top(score, m, np.arange(tasks), np.uint64(1))
    assert not np.array_equal(other, top)


def _masked(bound: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """The rows :func:`_seeded_top` searches: negated bounds, ``+inf`` where unreachable."""
    return np.where(reach, -bound, np.inf)


@pytest.mark.parametrize(("levels", "p", "nan"), [(3, 0.8, 0.02), (1000, 0.8, 0.02),
                                                 (3, 0.1, 0.5)])
def test_patched_candidates_are_those_searched_again(levels, p, nan):
    """Candidates brought to a new reachability equal a new search, entry by entry.

    Bounds from a few levels (many ties) or many, a share ``nan`` of them NaN; each round
    draws the reachability of a random handful of clusters anew (each reachable with
    probability ``p``), sometimes of most of them. With few reachable clusters and many
    NaN bounds, unreachable clusters (tied at ``+inf``, before NaN) are candidates, and
    one that becomes unreachable can enter. A random part of the entries is looked up
    each round, the others falling epochs behind. Entries the patch cannot bring up to
    date (a candidate changed, or no kept bounds) are marked to be searched again.
    """
    rng = np.random.default_rng(levels)
    n, m, entries = 60, 4, 40
    bound = rng.integers(0, levels, (entries, n)).astype(float)
    bound[rng.random(bound.shape) < nan] = np.nan
    slot_task = rng.permutation(10 * entries)[:entries]
    reach = rng.random(n) < p
    cand = _seeded_top(_masked(bound, reach), m, slot_task, KEY)
    bound_ok = np.ones(entries, dtype=bool)
    bound_ok[-3:] = False                       # their bounds were not kept
    epoch, log, log_ptr = 0, [], [0]
    cand_epoch = np.zeros(entries, dtype=np.int64)
    kept, patched = 0, 0
    for _ in range(80):
        drawn = rng.choice(n, rng.integers(1, n if rng.random() < 0.1 else 6), replace=False)
        old = reach.copy()
        reach[drawn] = rng.random(drawn.size) < p
        log += np.flatnonzero(reach != old).tolist()
        log_ptr.append(len(log))
        epoch += 1
        fresh = _seeded_top(_masked(bound, reach), m, slot_task, KEY)
        # The entries looked up this round (the others wait, epochs behind).
        looked = np.flatnonzero(rng.random(entries) < 0.4)
        before = cand.copy()
        ok = np.ones(entries, dtype=bool)
        _patch_candidates(looked, slot_task, cand, ok, cand_epoch, epoch,
                          np.array(log, dtype=np.int64), np.array(log_ptr), bound, bound_ok,
                          reach, KEY)
        done = np.zeros(entries, dtype=bool)
        done[looked] = True
        np.testing.assert_array_equal(cand[done & ok], fresh[done & ok])
        np.testing.assert_array_equal(cand[~done], before[~done])
        assert ok[~done].all()
        assert (cand_epoch[done & ok] == epoch).all()
        assert not (done[-3:] & ok[-3:]).any()
        for e in np.flatnonzero(done & ~ok & bound_ok):     # only for a changed candidate
            assert np.isin(before[e], log[log_ptr[cand_epoch[e]]:]).any()
        kept += int((done & ok).sum())
        patched += int((done & ok & (before != fresh).any(axis=1)).sum())
        searched = done & ~ok                       # searched again, as a lookup would
        cand[searched] = fresh[searched]
        cand_epoch[searched] = epoch
    assert kept > 100 and patched > 10      # entries kept, some of them changed


def test_top_columns_without_a_key_is_argpartitions():
    score = np.random.default_rng(0).random((6, 40))
    np.testing.assert_array_equal(np.sort(top_columns(score, 5, np.arange(6), None), axis=1),
                                  np.sort(np.argpartition(score, 4, axis=1)[:, :5], axis=1))


@pytest.mark.parametrize("check", ["params", "geo", "same seed"])
def test_pingan_with_seeded_ties_keeps_the_contract(check):
    scheduler_checks("pingan", {"ties": "seeded"})[check]()


_RUN = """
import json
import geosim
runs = []
for spec in ("pingan[ties=seeded]", "pingan[ties=seeded,estimate=mean-time]"):
    result = geosim.run("scenarios/pingan-medium.toml", scheduler=spec, overrides={
        "topology.generator": "barabasi_albert", "topology.n_clusters": 200,
        "workload.n_jobs": 20, "clusters.slot_streams": "keyed", "run.record_interval": 0.0})
    runs.append([result.copies["cluster"].tolist(), float(result.jobs["flowtime"].sum())])
print(json.dumps(runs))
"""


def test_seeded_ties_give_the_same_runs_whatever_numpys_vector_instructions():
    """A wide world where many clusters tie: the runs are the same without NumPy's AVX paths.

    Both estimates (their candidates are found by different code), with NumPy free to
    use every vector instruction and with its AVX2 and AVX-512 paths off. Disabling a
    feature the CPU lacks changes nothing. On a CPU with AVX-512 the default
    ``ties = "numpy"`` gives this world's runs another result under the second setting
    (on 400 clusters, with AVX-512 off alone too).
    """
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    runs = []
    for disabled in ("", "X86_V3 X86_V4 AVX512_ICL"):
        proc = subprocess.run([sys.executable, "-c", _RUN], cwd=root, capture_output=True,
                              env={**os.environ, "NPY_DISABLE_CPU_FEATURES": disabled},
                              text=True, check=True)
        runs.append(json.loads(proc.stdout.splitlines()[-1]))
    assert runs[0] == runs[1]
