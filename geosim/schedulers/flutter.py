"""Flutter: stage-wise task placement that minimises finish estimates lexicographically.

Hu, Li and Luo, "Flutter: Scheduling tasks closer to data across geo-distributed
datacenters", INFOCOM 2016. Flutter places the tasks of a stage so that the stage
finishes as early as possible: the slowest task first (min-max), then the next slowest,
and so on (a lexicographical min-max integer program, §III). Its constraint matrix is
totally unimodular, so the integer program is solved through linear programs (§IV).
:func:`lexmin_assign` solves it exactly; :class:`Flutter` builds the finish estimates.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.optimize import linprog
from scipy.sparse.csgraph import maximum_flow

try:  # HiGHS's own object, for warm starts; scipy does not make it public, so any
    # change to it falls back to the public linprog (same optima, no warm start)
    from scipy.optimize._highspy import _core
    for _name in ("_Highs", "HighsLp", "MatrixFormat", "HighsModelStatus"):
        getattr(_core, _name)
except (ImportError, AttributeError):  # pragma: no cover - other scipy versions
    _core = None

from geosim.schedulers.compose import Placement
from geosim.view import SchedulerView, first_of_runs

#: Compute-time estimates of a task's finish time at a cluster.
COMPUTES = ("uniform", "observed")

_TOL = 1e-6


class Flutter(Placement):
    """Flutter's placement (INFOCOM 2016, §III–IV), one stage at a time.

    A stage is the ready tasks of one job handed to :meth:`place` together (tasks come
    grouped by job, in job priority order); stages are solved one after another, each on
    the free slots the earlier ones left. A task's finish estimate at cluster ``m`` is

    ``transfer + compute``: ``transfer = max_s size_s / B[s, m]`` over its remote inputs
    (all fetched in parallel; ``B`` the observed mean bandwidth
    ``model.bandwidth_mean``; inputs already at ``m`` cost nothing), and ``compute`` the
    task's work over a processing speed.

    The tasks are assigned to clusters with free slots (at most ``free[m]`` tasks to
    ``m``) so that the sorted (descending) vector of finish estimates is
    lexicographically minimal (:func:`lexmin_assign`). When the stage has more tasks
    than free slots, the number of tasks placed is maximised first; the optimisation
    then decides which tasks get slots, and the others wait (``-1``).

    Flutter's objective is driven by where the data is (transfer times), and 003 §6.2
    describes Flutter and Iridium as unaware of cluster heterogeneity. ``compute = "uniform"``
    (default) therefore divides the work by one speed for every cluster: the mean over
    clusters of the observed mean speed of the task's type (``model.speed_mean``).
    ``compute = "observed"`` uses each cluster's own observed mean speed instead, a
    heterogeneity-aware variant.

    Simplifications: finish estimates ignore queueing of transfers on shared links and
    gates (as Flutter's do) and outages; a running task handed to :meth:`place` (a
    speculative copy) is treated like a ready one.

    Args:
        compute: ``uniform`` or ``observed`` (see :data:`COMPUTES`).
    """

    name = "flutter"

    def __init__(self, compute: str = "uniform"):
        if compute not in COMPUTES:
            raise ValueError(f"compute must be one of {', '.join(COMPUTES)}, got {compute!r}")
        self.compute = compute

    def place(self, view: SchedulerView, tasks: np.ndarray, free: np.ndarray) -> np.ndarray:
        """Place each job's tasks (a stage) by :func:`lexmin_assign`, job by job."""
        tasks = np.asarray(tasks, dtype=np.int64)
        out = np.full(tasks.size, -1, dtype=np.int64)
        if tasks.size == 0:
            return out
        starts = np.flatnonzero(first_of_runs(view.task_job[tasks]))
        ends = np.append(starts[1:], tasks.size)
        for lo, hi in zip(starts, ends, strict=True):
            if not free.any():
                break
            cost = self.finish_estimates(view, tasks[lo:hi])
            cost[:, free <= 0] = np.inf
            got = lexmin_assign(cost, free)
            out[lo:hi] = got
            free -= np.bincount(got[got >= 0], minlength=free.size).astype(free.dtype)
        return out

    def finish_estimates(self, view: SchedulerView, tasks: np.ndarray) -> np.ndarray:
        """Finish estimate (s) of each task at each cluster, shape ``(tasks, clusters)``."""
        n = view.n_clusters
        pos, src, size = view.inputs_of(tasks)
        transfer = np.zeros((tasks.size, n))
        if pos.size:
            bw = self.model.bandwidth_mean[src]                       # (inputs, n)
            with np.errstate(divide="ignore"):
                t = np.where(bw > 0, size[:, None] / bw, np.inf)
            t[np.arange(src.size), src] = 0.0
            np.maximum.at(transfer, pos, t)
        speed = self.model.speed_mean[:, view.task_type[tasks]].T   # (tasks, n)
        if self.compute == "uniform":
            speed = np.repeat(speed.mean(axis=1, keepdims=True), n, axis=1)
        with np.errstate(divide="ignore"):
            compute = np.where(speed > 0, view.task_work[tasks][:, None] / speed, np.inf)
        return transfer + compute


def lexmin_assign(cost: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Assign rows to columns, lexicographically minimising the sorted costs, exactly.

    Among assignments of rows (tasks) to columns (clusters) with at most ``cap[m]`` rows
    on column ``m`` and finite cost, those placing the most rows are kept; among them,
    the one whose placed costs, sorted in descending order, are lexicographically
    smallest is returned.

    Method. (1) If every row can take its cheapest column (the rows with the smallest
    minima, when not all fit), that is optimal, since every entry of the sorted vector
    is then as small as it can be. (2) Otherwise each row keeps only the columns whose
    strictly cheaper columns hold fewer than ``k`` slots in all (``k`` the rows placed):
    in an optimum every strictly cheaper column of a placed row is full, so no optimum
    is lost. (3) Cost levels are processed from the top. At each level ``T`` a linear
    program over the current face minimises the number of rows at cost ``T`` (the
    matrix is totally unimodular, so a vertex is integral), and complementary slackness
    with its optimal duals restricts the face to the solutions optimal at ``T``. A level
    the current solution does not use needs no program (its minimum is 0). The loop
    stops when the current solution has every row at its cheapest column left on the
    face, which is then optimal by the argument of (1).
    Among several optimal assignments, the solver's vertex is returned.

    Args:
        cost: Shape ``(rows, columns)``; ``inf`` where a row may not go.
        cap: Slots per column (integers >= 0).

    Returns:
        The column of each row, ``-1`` for a row left out.
    """
    cost = np.asarray(cost, dtype=float)
    n, m = cost.shape
    out = np.full(n, -1, dtype=np.int64)
    cap = np.asarray(cap, dtype=np.int64)
    allowed = np.isfinite(cost) & (cap > 0)[None, :]
    if n == 0 or not allowed.any():
        return out
    c = np.where(allowed, cost, np.inf)
    k = _max_placed(allowed, cap)
    # (1) everyone at their cheapest column
    best = np.argmin(c, axis=1)
    low = c[np.arange(n), best]
    chosen = np.argsort(low, kind="stable")[:k]
    if np.all(np.bincount(best[chosen], minlength=m) <= cap):
        out[chosen] = best[chosen]
        return out
    # (2) candidate columns
    order = np.argsort(c, axis=1, kind="stable")
    sc = np.take_along_axis(c, order, axis=1)
    before = np.cumsum(cap[order], axis=1) - cap[order]
    last = np.maximum(np.sum(before < k, axis=1) - 1, 0)
    limit = sc[np.arange(n), last]
    keep = allowed & (c <= limit[:, None])
    rows, cols = np.nonzero(keep)
    return _faces(rows, cols, c[rows, cols], cap, n, m, k, out)


def _max_placed(allowed: np.ndarray, cap: np.ndarray) -> int:
    """Largest number of rows placeable (a bipartite b-matching, by maximum flow)."""
    n, m = allowed.shape
    usable = cap > 0
    if np.all(allowed[:, usable]):
        return int(min(n, cap[usable].sum()))
    rows, cols = np.nonzero(allowed)
    s, t = n + m, n + m + 1
    src = np.concatenate([np.full(n, s), rows, n + np.arange(m)])
    dst = np.concatenate([np.arange(n), n + cols, np.full(m, t)])
    w = np.concatenate([np.ones(n + rows.size, dtype=np.int32),
                        np.minimum(cap, n).astype(np.int32)])
    graph = sparse.csr_matrix((w, (src, dst)), shape=(n + m + 2, n + m + 2))
    return int(maximum_flow(graph, s, t).flow_value)


class _LevelLP:
    """The linear program of one stage, re-solved with new costs, bounds and row bounds.

    Rows are ``lower <= A x <= upper`` with ``A`` the row (task) and column (cluster)
    incidence of the candidate edges, plus ``sum x = k``. HiGHS is warm-started from the
    previous basis where scipy exposes its HiGHS object; otherwise each program is solved
    afresh with :func:`scipy.optimize.linprog`.
    """

    def __init__(self, inc: sparse.csr_matrix, k: int):
        self.inc = sparse.vstack([inc, np.ones((1, inc.shape[1]))], format="csc")
        self.k, self.highs, self.now = k, None, None
        if _core is not None:
            h = _core._Highs()
            h.setOptionValue("output_flag", False)
            h.setOptionValue("presolve", "off")
            self.highs = h

    def solve(self, cost: np.ndarray, lb: np.ndarray, ub: np.ndarray, lower: np.ndarray,
              upper: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Solve; return the solution, the reduced costs and the row duals (no sum row)."""
        lo = np.append(lower, self.k).astype(float)
        hi = np.append(upper, self.k).astype(float)
        if self.highs is None:
            return self._linprog(cost, lb, ub, lo, hi)
        h, e = self.highs, cost.size
        if self.now is None:
            lp = _core.HighsLp()
            lp.num_col_, lp.num_row_ = e, lo.size
            lp.col_cost_, lp.col_lower_, lp.col_upper_ = cost, lb, ub
            lp.row_lower_, lp.row_upper_ = lo, hi
            a = lp.a_matrix_
            a.format_ = _core.MatrixFormat.kColwise
            a.num_col_, a.num_row_ = e, lo.size
            a.start_, a.index_, a.value_ = self.inc.indptr, self.inc.indices, self.inc.data
            lp.a_matrix_ = a
            h.passModel(lp)
        else:
            c_now, lb_now, ub_now, lo_now, hi_now = self.now
            idx = np.flatnonzero(cost != c_now).astype(np.int32)
            if idx.size:
                h.changeColsCost(idx.size, idx, cost[idx])
            idx = np.flatnonzero((lb != lb_now) | (ub != ub_now)).astype(np.int32)
            if idx.size:
                h.changeColsBounds(idx.size, idx, lb[idx], ub[idx])
            for r in np.flatnonzero((lo != lo_now) | (hi != hi_now)):
                h.changeRowBounds(int(r), lo[r], hi[r])
        self.now = (cost.copy(), lb.copy(), ub.copy(), lo, hi)
        h.run()
        if h.getModelStatus() != _core.HighsModelStatus.kOptimal:
            # Dual simplex without presolve can stop a hair short of optimality (status
            # unknown, dual infeasibility ~1e-4 on costs that differ little): solve
            # again from scratch with presolve, then with the public linprog.
            h.clearSolver()
            h.setOptionValue("presolve", "on")
            h.run()
            h.setOptionValue("presolve", "off")
            if h.getModelStatus() != _core.HighsModelStatus.kOptimal:
                self.now = None
                h.clearModel()
                return self._linprog(cost, lb, ub, lo, hi)
        sol = h.getSolution()
        return (np.asarray(sol.col_value), np.asarray(sol.col_dual),
                np.asarray(sol.row_dual)[:-1])

    def _linprog(self, cost, lb, ub, lo, hi):
        inc = self.inc[:-1]
        a_ub = sparse.vstack([inc, -inc], format="csr")
        res = linprog(cost, A_ub=a_ub, b_ub=np.concatenate([hi[:-1], -lo[:-1]]),
                      A_eq=np.ones((1, cost.size)), b_eq=[self.k],
                      bounds=np.column_stack([lb, ub]), method="highs")
        if res.status != 0:
            raise RuntimeError(f"Flutter's linear program failed: {res.message}")
        half = lo.size - 1
        dual = res.ineqlin.marginals
        return res.x, res.lower.marginals + res.upper.marginals, dual[:half] - dual[half:]


def _faces(rows: np.ndarray, cols: np.ndarray, ce: np.ndarray, cap: np.ndarray, n: int,
           m: int, k: int, out: np.ndarray) -> np.ndarray:
    """Step (3) of :func:`lexmin_assign` on the candidate edges."""
    e = rows.size
    lev = np.unique(ce, return_inverse=True)[1].ravel()
    lb, ub = np.zeros(e), np.ones(e)
    idx = np.arange(e)
    inc = sparse.vstack([sparse.csr_matrix((np.ones(e), (rows, idx)), shape=(n, e)),
                         sparse.csr_matrix((np.ones(e), (cols, idx)), shape=(m, e))])
    upper = np.concatenate([np.ones(n), cap]).astype(float)
    lower = np.zeros(n + m)
    program = _LevelLP(inc, k)

    def solve(obj: np.ndarray, restrict: bool) -> np.ndarray:
        x, reduced, dual = program.solve(obj, lb, ub, lower, upper)
        if restrict:
            # Complementary slackness with these duals (integers: the matrix is totally
            # unimodular) gives the face of the solutions optimal for ``obj``.
            at_lb, at_ub = reduced > 0.5, reduced < -0.5
            ub[at_lb] = lb[at_lb]
            lb[at_ub] = ub[at_ub]
            lower[dual < -0.5] = upper[dual < -0.5]
            upper[dual > 0.5] = lower[dual > 0.5]
            forced = np.zeros(n, dtype=bool)
            forced[rows[lb > 0.5]] = True
            ub[forced[rows] & (lb < 0.5)] = 0.0       # a placed row's other columns
        return np.rint(x)

    x = solve(ce, restrict=False)                     # a good first point on the face
    cur = int(lev.max()) + 1
    while True:
        free = lb < ub
        used = free & (x > 0.5) & (lev < cur)
        if not used.any():
            break
        top = int(lev[used].max())
        ub[free & (lev > top) & (lev < cur)] = 0.0    # levels x does not use: minimum 0
        cur = top
        if _lexmin_on_face(x, rows, ce, ub, n):
            break
        x = solve((free & (lev == top)).astype(float), restrict=True)
    sel = x > 0.5
    out[rows[sel]] = cols[sel]
    return out


def _lexmin_on_face(x: np.ndarray, rows: np.ndarray, ce: np.ndarray, ub: np.ndarray,
                    n: int) -> bool:
    """Whether every placed row is at its cheapest allowed column, below every unplaced row."""
    cheapest = np.full(n, np.inf)
    ok = ub > 0.5
    np.minimum.at(cheapest, rows[ok], ce[ok])
    sel = x > 0.5
    placed = np.zeros(n, dtype=bool)
    placed[rows[sel]] = True
    if np.any(ce[sel] > cheapest[rows[sel]]):
        return False
    return not (~placed).any() or ce[sel].max(initial=-np.inf) <= cheapest[~placed].min()
