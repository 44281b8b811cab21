"""PingAn's performance modeler (003 §3.2, Fig. 1b) and the algebra of rate distributions.

:class:`PerformanceModel` turns what the :class:`~geosim.monitor.Monitor` saw of completed
copies into distributions a scheduler can plan with:

- processing speed ``V^P`` per cluster and task type (the paper models one distribution
  per RDD operation), from the speeds completed copies saw;
- transfer bandwidth ``V^T`` per cluster pair, captured at the download end;
- the probability ``p_m`` that cluster ``m`` becomes unreachable in a time slot, from the
  outages the resource managers saw.

Every distribution is held as ``K`` equally likely atoms, its quantiles at levels
``(i + 1/2) / K``, refreshed periodically ("PM regularly collects the execution
information", 003 §3.1). A key with fewer than ``min_samples`` recent samples falls back
to a coarser estimate: a type without samples uses its cluster's samples of every type; a
pair without samples uses the recent transfers into its destination, else all recent
transfers; and what has no samples at all uses the nominal prior (the scenario's tier
parameters, :class:`~geosim.monitor.Priors`): a normal with the nominal mean and RSD,
truncated at 0. Pooling matters for pairs: most of the ``n²`` pairs are never observed,
and the nominal link bandwidth ignores the sharing of links and gates that real transfers
see, so a prior-only pair would look far better than any observed one.

The outage rate is the gamma–Poisson posterior mean: observed onsets plus
``prior_seconds`` of nominal behaviour, over observed reachable time plus
``prior_seconds``.

Rates of a task copy are compositions of these independent discrete variables (003
§3.2): a copy's rate is ``min(V^P / work, min_s V^T_s / size_s)`` and a task with copies
``1..c`` runs at ``max`` of theirs. :func:`~geosim.distributions.expected_min` and
:func:`~geosim.distributions.expected_max` compute the expectations of such compositions
exactly from the atoms (:mod:`geosim.distributions` holds that algebra; its public
functions are re-exported here).

Two choices of the paper are options (:data:`ESTIMATES`, :data:`LEARN_FROM`):

- ``estimate``: 003 plans with the expected rate ``r(c) = E[max_i V_i]`` and takes the
  execution time as ``datasize / r(c)`` (§3.2, eq. 6), the default ``"mean-rate"``. By
  Jensen's inequality ``1 / E[V] <= E[1 / V]``: the time is underestimated, the more the
  more the rate varies. ``"mean-time"`` plans with the rate ``1 / E[T]`` instead, ``T``
  the time of the task (per unit of it): ``E[1 / min_s X_s] = E[max_s 1 / X_s]`` for one
  copy, exact over the resources' atoms
  (:func:`~geosim.distributions.expected_time_min`), and ``E[min_i 1 / V_i]`` over the
  copies' quantile atoms (:func:`~geosim.distributions.expected_time_max`).
- ``learn_from``: 003's PM hears from finished tasks only (§3.1, Fig. 1b): the default
  ``"winners"``. ``"all"`` also learns from copies that ended without winning (killed
  siblings, copies lost to outages): their progress over their running time is a rate
  observation, credited to the resource the model expects to bound the copy
  (:meth:`PerformanceModel.observe_ended`). Such samples are kept in the model's own
  rings, next to the monitor's, so the run's monitor is not changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from geosim.distributions import (
    expected_max,
    expected_min,
    expected_time_max,
    expected_time_min,
    levels,
    normal_atoms,
    quantile_bounds,
    sample_atoms,
    thresholds,
)
from geosim.jit import njit
from geosim.monitor import DENSE_PAIRS_BYTES, Monitor
from geosim.routes import FULL_ROWS

__all__ = [
    "DENSE_PAIRS_CLUSTERS",
    "ESTIMATES",
    "LEARN_FROM",
    "PairTable",
    "PerformanceModel",
    "expected_max",
    "expected_min",
    "expected_time_max",
    "expected_time_min",
    "levels",
    "normal_atoms",
    "pair_row",
    "pair_rows",
    "quantile_bounds",
    "source_rows",
    "thresholds",
]

#: How expected times are estimated: ``datasize / E[rate]`` (003 §3.2) or ``E[datasize / rate]``.
ESTIMATES = ("mean-rate", "mean-time")
#: Which copies the model learns from: the winners (003 §3.1) or every copy that ran.
LEARN_FROM = ("winners", "all")


#: Largest world whose pair tables list every pair's row (:meth:`PairTable.indexed`): the
#: routes' (:data:`~geosim.routes.FULL_ROWS`).
DENSE_PAIRS_CLUSTERS = FULL_ROWS
_NO_DENSE = np.empty((0, 0))       # no dense atoms
_NO_DENSE_MEANS = np.empty(0)
_NO_ROWS = np.zeros(0, dtype=np.int64)


class PairTable(NamedTuple):
    """A value (or row of atoms) per ordered cluster pair, stored without ``n²`` rows.

    Pairs with their own observations have their own rows; every other pair shares the
    row of its destination's fallback, or a nominal prior row, that of whichever of the
    pair's two clusters has the narrower gate (the prior of a pair is the nominal link
    bandwidth capped at both gates). :func:`pair_row` finds a pair's row.

    Attributes:
        keys: ``src * n + dst`` of the pairs with their own rows ``0..len(keys)-1``,
            ascending.
        fallback: Per destination, the row of its fallback, or -1 for the prior rows.
        gate: Gate bandwidth per cluster: which prior row a pair uses.
        prior: Row of cluster 0's prior; cluster ``c``'s is ``prior + c``.
        values: The rows, shape ``(rows,)`` or ``(rows, K)``.
        index: Empty, or the row of every pair ``src * n + dst`` (a world of at most
            :data:`DENSE_PAIRS_CLUSTERS` clusters: one lookup per pair, see
            :meth:`indexed`).
    """

    keys: np.ndarray
    fallback: np.ndarray
    gate: np.ndarray
    prior: int
    values: np.ndarray
    index: np.ndarray = _NO_ROWS

    @property
    def n(self) -> int:
        """Number of clusters."""
        return self.fallback.size

    def with_values(self, values: np.ndarray) -> PairTable:
        """The same pairs with other row values (one per row of :attr:`values`)."""
        return self._replace(values=values)

    def indexed(self) -> PairTable:
        """The same table with the row of every pair listed, in a small world.

        Up to :data:`DENSE_PAIRS_CLUSTERS` clusters (``n²`` rows of 8 bytes: 2 MiB at
        most), :func:`pair_row` then reads a pair's row instead of searching for it.
        """
        if self.n > DENSE_PAIRS_CLUSTERS or self.index.size:
            return self
        return self._replace(index=_all_rows(self))

    def row(self, src: int) -> np.ndarray:
        """The value of every pair from ``src``, ``[dst]`` (``n`` rows)."""
        n = self.n
        return self.values[pair_rows(self, np.full(n, src, dtype=np.int64),
                                     np.arange(n, dtype=np.int64))]

    def dense(self) -> np.ndarray:
        """The value of every pair, ``[src * n + dst]`` (``n²`` rows: for small worlds)."""
        return self.values[self.index if self.index.size else _all_rows(self)]

    @staticmethod
    def constant(n: int, value: np.ndarray | float) -> PairTable:
        """Every pair of ``n`` clusters with the same ``value`` (a scalar or a row)."""
        return PairTable(np.zeros(0, dtype=np.int64), np.zeros(n, dtype=np.int64),
                         np.zeros(n), 1, np.asarray([value, value], dtype=float))


class PerformanceModel:
    """Distributions of speed, bandwidth and unreachability learned from observations.

    Args:
        monitor: The run's observations (with its :class:`~geosim.monitor.Priors`).
        gate: Gate bandwidth per cluster (MB/s); caps the nominal bandwidth of a pair.
        dt: Time slot (s), the unit of the outage probability.
        atoms: Atoms ``K`` per distribution.
        min_samples: Samples a key needs before its own observations replace the fallback.
        prior_seconds: Weight of the nominal outage rate, in seconds of observation.
        refresh: Seconds between refreshes of the distributions.
        estimate: ``"mean-rate"`` (003 §3.2: plan with ``E[rate]``, time ``1 / E[rate]``)
            or ``"mean-time"`` (plan with ``1 / E[time]``); see :meth:`copy_rate`.
        learn_from: ``"winners"`` (003: completed copies only) or ``"all"`` (also the
            copies reported to :meth:`observe_ended`).

    Attributes:
        speed_mean: ``E[V^P]`` per cluster and type (MIPS).
        speed_hmean: Harmonic mean ``1 / E[1 / V^P]`` per cluster and type (MIPS).
        bandwidth_pairs: The atoms of ``V^T`` per cluster pair (MB/s), a :class:`PairTable`.
        bandwidth_mean_pairs: ``E[V^T]`` per cluster pair, a :class:`PairTable`.
        bandwidth_hmean_pairs: Harmonic mean ``1 / E[1 / V^T]`` per cluster pair.
        bandwidth, bandwidth_mean, bandwidth_hmean: The same as dense arrays
            (``[src * n + dst]``, ``[src, dst]``; built on demand, ``n²`` entries).
    """

    def __init__(self, monitor: Monitor, gate: np.ndarray, dt: float, atoms: int = 16,
                 min_samples: int = 5, prior_seconds: float = 600.0, refresh: float = 30.0,
                 estimate: str = "mean-rate", learn_from: str = "winners"):
        if monitor.priors is None:
            raise ValueError("the monitor has no priors for the performance model")
        if estimate not in ESTIMATES:
            raise ValueError(f"estimate must be one of {', '.join(ESTIMATES)}, got {estimate!r}")
        if learn_from not in LEARN_FROM:
            raise ValueError(f"learn_from must be one of {', '.join(LEARN_FROM)}, "
                             f"got {learn_from!r}")
        self.estimate, self.learn_from = estimate, learn_from
        # Rate observations of copies that ended without winning (learn_from = "all").
        self._ended = (Monitor(monitor.n_clusters, monitor.n_types, monitor.window)
                       if learn_from == "all" else None)
        self.monitor, self.dt, self.k = monitor, dt, atoms
        self.min_samples, self.prior_seconds, self.refresh_interval = (
            min_samples, prior_seconds, refresh)
        pri = monitor.priors
        n, types = monitor.n_clusters, monitor.n_types
        self._speed_prior = pri.speed_mean[:, None] * normal_atoms(pri.speed_rsd, atoms)
        # The prior of pair (s, d) is that of the cluster of the narrower gate: the
        # nominal bandwidth capped at both gates.
        self._gate = np.asarray(gate, dtype=float)
        self._bw_prior = (np.minimum(pri.bandwidth_mean, self._gate)[:, None]
                          * normal_atoms(pri.bandwidth_rsd, atoms))
        self._bw_prior_mean = self._bw_prior.mean(axis=1)
        self.speed = np.repeat(self._speed_prior[:, None, :], types, axis=1)
        self._speed_seen = np.zeros((n, types), dtype=np.int64)
        # Pairs with samples (ascending keys) and their sample counts at the last
        # bandwidth refresh; those with enough of their own, with their atoms and means.
        self._bw_keys = np.zeros(0, dtype=np.int64)
        self._bw_seen = np.zeros(0, dtype=np.int64)
        self._own_keys = np.zeros(0, dtype=np.int64)
        self._own_atoms = np.zeros((0, atoms))
        self._own_mean = np.zeros(0)
        # What the last bandwidth refresh built on: sample counts of the pooled rows, the
        # pooled atoms and each destination's fallback (see _refresh_bandwidth).
        self._into_seen = np.zeros(n + 1, dtype=np.int64)
        self._pooled = np.zeros((n + 1, atoms))
        self._fallback = np.zeros(n, dtype=np.int64)
        self._next = -np.inf
        self.version = 0
        self.speed_mean = self.speed.mean(axis=2)
        self._hmeans: tuple[np.ndarray, PairTable] | None = None
        self._dense: dict[str, np.ndarray] = {}
        self._build_bandwidth()
        self.outage_probability = self._outage_probability()

    def refresh(self, now: float) -> bool:
        """Bring the distributions up to date if ``refresh`` seconds have passed.

        Returns:
            Whether anything was recomputed.
        """
        if now < self._next:
            return False
        self._next = now + self.refresh_interval
        self._refresh_speed()
        self._refresh_bandwidth()
        self._hmeans = None
        self._dense = {}
        self.outage_probability = self._outage_probability()
        self.version += 1
        return True

    @property
    def speed_hmean(self) -> np.ndarray:
        """Harmonic mean ``1 / E[1 / V^P]`` per cluster and type (see :meth:`_harmonic_means`)."""
        return self._harmonic_means()[0]

    @property
    def bandwidth_hmean_pairs(self) -> PairTable:
        """Harmonic mean ``1 / E[1 / V^T]`` per cluster pair (see :meth:`_harmonic_means`)."""
        return self._harmonic_means()[1]

    @property
    def bandwidth(self) -> np.ndarray:
        """The atoms of every pair, ``[src * n + dst, i]`` (``n²`` rows, built on demand)."""
        return self._dense_of("bandwidth", self.bandwidth_pairs)

    @property
    def bandwidth_mean(self) -> np.ndarray:
        """``E[V^T]`` of every pair, ``[src, dst]`` (``n²`` entries, built on demand)."""
        return self._dense_of("mean", self.bandwidth_mean_pairs)

    def dense_bandwidth(self) -> np.ndarray:
        """:attr:`bandwidth` if small, else empty.

        Compiled readers of a small world read a pair's atoms at row ``src * n + dst`` of
        this array instead of looking its row up in the pair table (the lookup made
        Flutter's and Mantri's kernels up to a third slower); above
        :data:`~geosim.monitor.DENSE_PAIRS_BYTES` they take the pair table.
        """
        n = self.monitor.n_clusters
        if n * n * self.k * 8 > DENSE_PAIRS_BYTES:
            return _NO_DENSE
        return self.bandwidth

    def mean_rows(self, sources: np.ndarray) -> np.ndarray:
        """:attr:`bandwidth_mean` flattened, with at least the rows of ``sources`` filled.

        Empty above :data:`~geosim.monitor.DENSE_PAIRS_BYTES`, as
        :meth:`dense_bandwidth`. A source's row (its mean to every cluster) is filled when
        first asked for after a refresh, so a refresh costs the rows read, not ``n²``.
        """
        n = self.monitor.n_clusters
        if n * n * 8 > DENSE_PAIRS_BYTES:
            return _NO_DENSE_MEANS
        if "mean" in self._dense:
            return self._dense["mean"].reshape(n * n)
        if "mean_rows" not in self._dense:
            self._dense["mean_rows"] = np.empty(n * n)
            self._dense["mean_filled"] = np.zeros(n, dtype=np.bool_)
        out = self._dense["mean_rows"]
        _fill_rows(self.bandwidth_mean_pairs, np.asarray(sources, dtype=np.int64), out,
                   self._dense["mean_filled"], np.empty(n, dtype=np.int64))
        return out

    @property
    def bandwidth_hmean(self) -> np.ndarray:
        """``1 / E[1 / V^T]`` of every pair, ``[src, dst]`` (built on demand)."""
        return self._dense_of("hmean", self.bandwidth_hmean_pairs)

    def _dense_of(self, name: str, table: PairTable) -> np.ndarray:
        """``table`` as a dense array, kept until the next refresh."""
        if name not in self._dense:
            n = table.n
            dense = table.dense()
            self._dense[name] = dense if dense.ndim == 2 else dense.reshape(n, n)
        return self._dense[name]

    def _harmonic_means(self) -> tuple[np.ndarray, PairTable]:
        """``1 / E[1 / V]`` of every speed and bandwidth distribution (0 if an atom is 0).

        Computed when first asked for after a refresh (only ``mean-time`` planning uses
        them) and kept until the next one.
        """
        if self._hmeans is None:
            with np.errstate(divide="ignore"):
                self._hmeans = (1.0 / np.mean(1.0 / self.speed, axis=2),
                                self.bandwidth_pairs.with_values(
                                    1.0 / np.mean(1.0 / self.bandwidth_pairs.values, axis=1)))
        return self._hmeans

    def _tables(self, mine: tuple[np.ndarray, np.ndarray], theirs: tuple | None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Samples, sample counts (to detect change) and samples in use, of one kind.

        ``mine`` is a table of the monitor, ``theirs`` the same table of the ended copies
        (None when learning from winners): with it, each key's samples are the recent
        ``window`` of each source side by side.
        """
        samples, counts = mine
        window = self.monitor.window
        if theirs is None:
            return samples, counts, np.minimum(counts, window)
        more, more_counts = theirs
        return (np.concatenate([samples, more], axis=-1), counts + more_counts,
                np.minimum(counts, window) + np.minimum(more_counts, window))

    def _refresh_speed(self) -> None:
        samples, counts, used = self._tables(
            self.monitor.speed_table(),
            None if self._ended is None else self._ended.speed_table())
        changed = np.flatnonzero(np.any(counts != self._speed_seen, axis=1))
        if changed.size == 0:
            return
        self._speed_seen[changed] = counts[changed]
        n = used[changed]
        atoms = np.repeat(self._speed_prior[changed][:, None, :], n.shape[1], axis=1)
        pooled = n.sum(axis=1) >= self.min_samples
        if pooled.any():
            flat = samples[changed[pooled]].reshape(int(pooled.sum()), -1)
            atoms[pooled] = sample_atoms(flat, self.k)[:, None, :]
        own = n >= self.min_samples
        if own.any():
            atoms[own] = sample_atoms(samples[changed][own], self.k)
        self.speed[changed] = atoms
        self.speed_mean[changed] = atoms.mean(axis=2)

    def _refresh_bandwidth(self) -> None:
        ended = self._ended
        keys, counts, used, samples_of = self._pair_tables(ended)
        seen = np.zeros(keys.size, dtype=np.int64)
        seen[_positions(keys, self._bw_keys)] = self._bw_seen   # keys only grow
        if np.array_equal(counts, seen):
            return
        changed = counts != seen
        self._bw_keys, self._bw_seen = keys, counts.copy()
        n = self.monitor.n_clusters
        # Fallback of a pair without its own samples: transfers into its destination
        # (kind 2), else all transfers (1), else the nominal prior (0).
        into, into_counts, into_used = self._tables(
            self.monitor.bandwidth_into_table(),
            None if ended is None else ended.bandwidth_into_table())
        enough = into_used >= self.min_samples
        # A row's atoms depend on its own samples only (sample_atoms works row by row),
        # and samples change only with their counts: rows are redone where those did,
        # the others kept from the refresh that made them.
        redo = enough & (into_counts != self._into_seen)
        self._into_seen = into_counts.copy()
        if redo.any():
            self._pooled[redo] = sample_atoms(into[redo], self.k)
        self._fallback = np.where(enough[:n], 2, 1 if enough[n] else 0)
        own = used >= self.min_samples                  # once own, a pair stays own
        mine = own & changed
        at = _positions(keys, self._own_keys)
        atoms = np.empty((int(own.sum()), self.k))
        mean = np.empty(atoms.shape[0])
        slot = np.cumsum(own) - 1                       # row of each own pair
        kept = ~changed[at]
        atoms[slot[at[kept]]] = self._own_atoms[kept]
        mean[slot[at[kept]]] = self._own_mean[kept]
        if mine.any():
            fresh = sample_atoms(samples_of(mine), self.k)
            atoms[slot[mine]] = fresh
            mean[slot[mine]] = fresh.mean(axis=1)
        self._own_keys, self._own_atoms, self._own_mean = keys[own], atoms, mean
        self._build_bandwidth()

    def _pair_tables(self, ended: Monitor | None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, Callable]:
        """Keys, counts and samples in use of the pairs with samples, and their samples.

        As :meth:`_tables`, for the sparse tables of :meth:`Monitor.bandwidth_table` (and
        of the ``ended`` copies' monitor, if any): a pair missing from one of them has no
        samples there (NaN, count 0). The samples come as a function of a mask of the
        pairs, so that a refresh gathers only those of the pairs it redoes.
        """
        if ended is None:
            keys, rows, buf, count = self.monitor.bandwidth_rows()
            counts = count[rows]
            return (keys, counts, np.minimum(counts, self.monitor.window),
                    lambda mask: buf[rows[mask]])
        mine, theirs = self.monitor.bandwidth_table(), ended.bandwidth_table()
        union = np.union1d(mine[0], theirs[0])
        parts = []
        for k, smp, cnt in (mine, theirs):
            full = np.full((union.size, smp.shape[1]), np.nan)
            total = np.zeros(union.size, dtype=np.int64)
            at = np.searchsorted(union, k)
            full[at], total[at] = smp, cnt
            parts.append((full, total))
        (a, ca), (b, cb) = parts
        window = self.monitor.window
        samples = np.concatenate([a, b], axis=-1)
        return (union, ca + cb, np.minimum(ca, window) + np.minimum(cb, window),
                lambda mask: samples[mask])

    def _build_bandwidth(self) -> None:
        """The pair tables of the atoms and means: own rows, pooled rows, prior rows."""
        m, n = self._own_keys.size, self.monitor.n_clusters
        fallback = np.where(self._fallback == 2, m + np.arange(n),
                            np.where(self._fallback == 1, m + n, -1))
        table = PairTable(self._own_keys, fallback, self._gate, m + n + 1,
                          np.concatenate([self._own_atoms, self._pooled, self._bw_prior])
                          ).indexed()
        self.bandwidth_pairs = table
        self.bandwidth_mean_pairs = table.with_values(np.concatenate(
            [self._own_mean, self._pooled.mean(axis=1), self._bw_prior_mean]))

    def _outage_probability(self) -> np.ndarray:
        mon, tau = self.monitor, self.prior_seconds
        rate = (mon.outage_onsets + mon.priors.outage_rate * tau) / (mon.reachable_time + tau)
        return -np.expm1(-rate * self.dt)

    def pair_atoms(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Bandwidth atoms (MB/s) from ``src[i]`` to ``dst[i]``; shape ``src.shape + (K,)``."""
        src, dst = np.broadcast_arrays(np.asarray(src, dtype=np.int64),
                                       np.asarray(dst, dtype=np.int64))
        rows = pair_rows(self.bandwidth_pairs, src.ravel(), dst.ravel())
        return self.bandwidth_pairs.values[rows].reshape(src.shape + (self.k,))

    # ------------------------------------------------------------------ planning rates
    def copy_rate(self, atoms: np.ndarray) -> np.ndarray:
        """The rate a scheduler plans with for a copy whose rate is ``min_r X_r``.

        ``"mean-rate"``: ``E[min_r X_r]`` (003's ``r(1)``); ``"mean-time"``:
        ``1 / E[1 / min_r X_r]``, the reciprocal of the expected time (0 when it is
        infinite). Either way the expected time is taken as ``1 / rate``.

        Args:
            atoms: Shape ``(N, R, K)`` as for :func:`expected_min`.
        """
        if self.estimate == "mean-rate":
            return expected_min(atoms)[0]
        with np.errstate(divide="ignore"):
            return 1.0 / expected_time_min(atoms)

    def task_rate(self, atoms: np.ndarray) -> np.ndarray:
        """The rate a scheduler plans with for a task run by copies of rates ``X_r``.

        ``"mean-rate"``: ``E[max_r X_r]`` (003's ``r(c)``); ``"mean-time"``:
        ``1 / E[1 / max_r X_r]``.

        Args:
            atoms: Shape ``(N, R, K)`` as for :func:`expected_max`.
        """
        if self.estimate == "mean-rate":
            return expected_max(atoms)
        with np.errstate(divide="ignore"):
            return 1.0 / expected_time_max(atoms)

    # ------------------------------------------------------------------ ended copies
    def observe_ended(self, cluster: np.ndarray, task_type: np.ndarray, work: np.ndarray,
                      rate: np.ndarray, g_ptr: np.ndarray, g_src: np.ndarray,
                      g_size: np.ndarray) -> None:
        """Learn from copies that ended without winning (only with ``learn_from="all"``).

        A copy's observed rate ``rho`` (the fraction of its task done per second of its
        running time) is ``min(V^P / work, min_s V^T_s / size_s)`` as the copy saw them:
        one observation of whichever bound the copy. It is credited to the bound the
        model expects to be the tightest, ``E[V^P] / work`` or ``E[V^T_{s,m}] / size_s``
        over the copy's remote input groups, as ``rho * work`` (a speed sample, MIPS) or
        ``rho * size_s`` (a bandwidth sample of the pair ``s -> m``, MB/s). The samples
        take effect at the next refresh. Where the model's guess of the bottleneck is
        wrong the sample is a lower bound of the other resource, not a draw of it.

        Args:
            cluster: Cluster of each copy.
            task_type: Type of each copy's task.
            work: Mean work (MI) of each copy's task.
            rate: Observed rate of each copy (1/s); non-finite or negative ones are ignored.
            g_ptr: Input groups of copy ``i``: ``g_ptr[i]:g_ptr[i + 1]`` (as
                :meth:`~geosim.view.SchedulerView.input_group_ptr` of their tasks).
            g_src: Source cluster of each group.
            g_size: Size (MB) of the largest input of each group.
        """
        if self._ended is None or len(cluster) == 0:
            return
        cluster = np.asarray(cluster, dtype=np.int64)
        task_type = np.asarray(task_type, dtype=np.int64)
        work, rate = np.asarray(work, dtype=float), np.asarray(rate, dtype=float)
        g_ptr = np.asarray(g_ptr, dtype=np.int64)
        g_src, g_size = np.asarray(g_src, dtype=np.int64), np.asarray(g_size, dtype=float)
        ok = np.isfinite(rate) & (rate >= 0)
        group = _bottleneck(cluster, task_type, work, g_ptr, g_src, g_size, self.speed_mean,
                            self.bandwidth_mean_pairs)
        proc = np.flatnonzero(ok & (group < 0))
        self._ended.record_copies(cluster[proc], task_type[proc], rate[proc] * work[proc])
        tr = np.flatnonzero(ok & (group >= 0))
        g = group[tr]
        self._ended.record_transfers(g_src[g], cluster[tr], rate[tr] * g_size[g])


@njit(cache=True, error_model="numpy")
def _bottleneck(cluster, task_type, work, g_ptr, g_src, g_size, speed_mean,
                bw_mean):  # pragma: no cover - compiled
    """Per copy, the input group whose expected rate bounds it, or -1 for processing.

    Processing bounds at ``speed_mean / work``; a remote group (source not the copy's
    cluster) at the mean bandwidth (a :class:`PairTable`) of ``source -> cluster`` over
    ``size``; ties go to processing, then to the earlier group.
    """
    out = np.full(cluster.size, -1, dtype=np.int64)
    for i in range(cluster.size):
        c = cluster[i]
        best = speed_mean[c, task_type[i]] / work[i]
        for g in range(g_ptr[i], g_ptr[i + 1]):
            if g_src[g] != c:
                r = bw_mean.values[pair_row(bw_mean, g_src[g], c)] / g_size[g]
                if r < best:
                    best = r
                    out[i] = g
    return out


@njit(cache=True)
def _positions(keys, sub):  # pragma: no cover - compiled
    """``np.searchsorted(keys, sub)`` for ``sub`` ascending too, by one merge of the two.

    A refresh maps its previous pairs into the current ones: thousands of each in a
    small world, where a binary search per pair cost more than the rest of the refresh.
    """
    out = np.empty(sub.size, dtype=np.int64)
    i = 0
    for j in range(sub.size):
        while i < keys.size and keys[i] < sub[j]:
            i += 1
        out[j] = i
    return out


@njit(cache=True, inline="always")
def pair_row(table, src, dst):  # pragma: no cover - compiled
    """The row of pair ``src -> dst`` in :class:`PairTable` ``table``."""
    n = table.fallback.size
    key = src * n + dst
    if table.index.size:
        return table.index[key]
    at = np.searchsorted(table.keys, key)
    if at < table.keys.size and table.keys[at] == key:
        return at
    return _shared_row(table, src, dst)


@njit(cache=True, inline="always")
def _shared_row(table, src, dst):  # pragma: no cover - compiled
    """The row of a pair without one of its own: its destination's, or the prior's."""
    row = table.fallback[dst]
    if row >= 0:
        return row
    return table.prior + (src if table.gate[src] <= table.gate[dst] else dst)


@njit(cache=True)
def source_rows(table, src, out):  # pragma: no cover - compiled
    """:func:`pair_row` of every pair ``src -> dst`` (``dst = 0..n-1``) into ``out``.

    One merge of the destinations with the source's keys, instead of a search per pair.
    """
    n = table.fallback.size
    keys = table.keys
    at = np.searchsorted(keys, src * n)
    for dst in range(n):
        if at < keys.size and keys[at] == src * n + dst:
            out[dst] = at
            at += 1
        else:
            out[dst] = _shared_row(table, src, dst)


@njit(cache=True)
def _fill_rows(table, sources, out, filled, rows):  # pragma: no cover - compiled
    """Values of every pair ``s -> dst`` into ``out[s * n + dst]``, for new sources.

    Sources ``s`` already ``filled`` are skipped, the others marked; ``rows`` is work space
    of ``n``.
    """
    n = table.fallback.size
    for s in sources:
        if not filled[s]:
            source_rows(table, s, rows)
            for dst in range(n):
                out[s * n + dst] = table.values[rows[dst]]
            filled[s] = True


@njit(cache=True)
def _all_rows(table):  # pragma: no cover - compiled
    """The row of every pair ``src * n + dst`` of :class:`PairTable` ``table``.

    :func:`source_rows` of each source.
    """
    n = table.fallback.size
    out = np.empty(n * n, dtype=np.int64)
    for src in range(n):
        source_rows(table, src, out[src * n:(src + 1) * n])
    return out


@njit(cache=True)
def pair_rows(table, src, dst):  # pragma: no cover - compiled
    """The rows of pairs ``src[i] -> dst[i]`` in :class:`PairTable` ``table``."""
    out = np.empty(src.size, dtype=np.int64)
    for i in range(src.size):
        out[i] = pair_row(table, src[i], dst[i])
    return out
