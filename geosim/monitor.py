"""Observed statistics: what a scheduler may learn about the world.

Like PingAn's performance modeler (003 §3.2, Fig. 1b), the monitor learns only from
copies that completed: the processing speed each one saw (per cluster and task type)
and the bandwidth of each of its remote-input transfers, captured at the download end
(per cluster pair, and pooled per destination and over all pairs). It keeps the most
recent ``window`` samples of each, in ring buffers written in vectorised batches. Rings of
cluster pairs exist only for the pairs that carried a transfer (a sorted key array and a
buffer grown on demand), so the monitor's size does not grow with the square of the
clusters. Outage
statistics come from what a resource manager sees: how many outages began per cluster
over how much reachable time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from geosim.jit import njit
from geosim.sortedkeys import insert_sorted


@dataclass(frozen=True)
class Priors:
    """What an operator knows of the world before observing it: nominal parameters.

    The cold-start prior of the performance modeler (003 §3.2): the middle of each
    cluster's tier range in the scenario, not the values drawn for the cluster (those are
    hidden truth).

    Attributes:
        speed_mean: Nominal mean processing speed per cluster (MIPS): the tier's VM power
            times the long-run mean availability factor.
        speed_rsd: Nominal relative standard deviation of that speed, per cluster.
        bandwidth_mean: Nominal mean bandwidth of a WAN link (MB/s).
        bandwidth_rsd: Nominal relative standard deviation of link bandwidth.
        outage_rate: Nominal outage onsets per second of reachable time, per cluster.
    """

    speed_mean: np.ndarray
    speed_rsd: np.ndarray
    bandwidth_mean: float
    bandwidth_rsd: float
    outage_rate: np.ndarray

    def __post_init__(self) -> None:
        for name in ("speed_mean", "speed_rsd", "outage_rate"):
            object.__setattr__(self, name, _frozen(np.asarray(getattr(self, name), dtype=float)))


class _Ring:
    """Fixed-size ring buffers of float samples, one per key."""

    def __init__(self, n_keys: int, window: int):
        self.buf = np.full((n_keys, window), np.nan)
        self.count = np.zeros(n_keys, dtype=np.int64)
        self.window = window

    def write(self, keys: np.ndarray, values: np.ndarray) -> None:
        if keys.size:
            _ring_write(self.buf, self.count, np.asarray(keys, dtype=np.int64),
                        np.asarray(values, dtype=float))

    def samples(self, key: int) -> np.ndarray:
        n = min(int(self.count[key]), self.window)
        return self.buf[key, :n].copy() if n < self.window else self.buf[key].copy()


#: Keys up to which a sparse ring also keeps a dense index (2 MiB; 512 clusters' pairs).
DENSE_KEYS = 512 * 512
#: Largest dense copy of a per-pair statistic that a small world keeps for compiled
#: readers (bytes): the performance model's pair atoms and means.
DENSE_PAIRS_BYTES = 8 * 2**20


class _SparseRing:
    """Ring buffers of float samples for the keys written so far, created on demand.

    Each key written has the row of its ring in a buffer that grows by doubling; a key
    never written has no ring and no samples. Keys below ``n_keys``, when that is at most
    :data:`DENSE_KEYS`, find their rows in a dense index (one lookup); other keys in
    sorted arrays (a binary search), which a compiled pass extends in place
    (:func:`_sorted_rows`).
    """

    def __init__(self, window: int, n_keys: int = 0):
        self.window = window
        self._dense = np.full(n_keys if n_keys <= DENSE_KEYS else 0, -1, dtype=np.int64)
        # Without a dense index: the first ``used`` of ``_keys`` (sorted) and their rows.
        self._keys = np.zeros(0, dtype=np.int64)
        self._rows = np.zeros(0, dtype=np.int64)     # ring of _keys[i]
        self.used = 0
        self._listed: tuple | None = None      # (used, keys, rows) as keys_rows lists them
        self.buf = np.full((0, window), np.nan)
        self.count = np.zeros(0, dtype=np.int64)

    def keys_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Keys in use (ascending) and the row of each.

        Later writes leave the arrays as they are (they are made anew when keys were
        added), so a caller may keep them.
        """
        if self._listed is None or self._listed[0] != self.used:   # new keys since
            if self._dense.size:
                keys = np.flatnonzero(self._dense >= 0)
                self._listed = (self.used, keys, self._dense[keys])
            else:
                n = self.used
                self._listed = (n, self._keys[:n].copy(), self._rows[:n].copy())
        return self._listed[1], self._listed[2]

    def _find(self, keys: np.ndarray) -> np.ndarray:
        """Rows of ``keys``, -1 for a key without a ring."""
        if self._dense.size:
            return self._dense[keys]
        sorted_keys, rows = self._keys[:self.used], self._rows[:self.used]
        if not sorted_keys.size:
            return np.full(keys.size, -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
        return np.where(sorted_keys[at] == keys, rows[at], -1)

    def _rows_of(self, keys: np.ndarray) -> np.ndarray:
        """Rows of ``keys``, adding rings for the keys not seen yet.

        With a dense index, one compiled pass finds the rows and gives new keys theirs in
        the order first seen; otherwise one finds them and gives new keys theirs in key
        order.
        """
        if self._dense.size:
            rows, used = _dense_rows(self._dense, keys, self.used)
        else:
            rows, self._keys, self._rows, used = _sorted_rows(self._keys, self._rows,
                                                              self.used, keys)
        self._grow(used)
        return rows

    def _grow(self, used: int) -> None:
        """Count ``used`` rings, growing the buffer (by doubling) to hold them."""
        if used > self.count.size:
            size = max(used, 2 * self.count.size, 16)
            buf = np.full((size, self.window), np.nan)
            buf[:self.used] = self.buf[:self.used]
            count = np.zeros(size, dtype=np.int64)
            count[:self.used] = self.count[:self.used]
            self.buf, self.count = buf, count
        self.used = used

    def write(self, keys: np.ndarray, values: np.ndarray) -> None:
        keys = np.asarray(keys, dtype=np.int64)
        if keys.size:
            rows = self._rows_of(keys)      # may grow the buffer
            _ring_write(self.buf, self.count, rows, np.asarray(values, dtype=float))

    def samples(self, key: int) -> np.ndarray:
        row = int(self._find(np.array([key], dtype=np.int64))[0])
        if row < 0:
            return np.zeros(0)
        n = min(int(self.count[row]), self.window)
        return self.buf[row, :n].copy()


#: Samples kept per key by default.
WINDOW = 64


class Monitor:
    """Empirical distributions learned from completed copies.

    Args:
        n_clusters: Number of clusters.
        n_types: Number of task types in the workload.
        window: Samples kept per cluster (and type) and per cluster pair.
        priors: Nominal parameters of the world, for estimators' cold start.
    """

    def __init__(self, n_clusters: int, n_types: int, window: int = WINDOW,
                 priors: Priors | None = None):
        self.n_clusters, self.n_types, self.window = n_clusters, n_types, window
        self.priors = priors
        self._speed = _Ring(n_clusters * n_types, window)
        self._bandwidth = _SparseRing(window, n_clusters * n_clusters)   # src * n + dst
        self._bandwidth_into = _Ring(n_clusters + 1, window)   # per destination; all
        self.outage_onsets = np.zeros(n_clusters, dtype=np.int64)
        self.reachable_time = np.zeros(n_clusters)

    def record_copies(self, cluster: np.ndarray, task_type: np.ndarray,
                      speed: np.ndarray) -> None:
        """Add the mean processing speed (MIPS) each completed copy saw."""
        self._speed.write(cluster * self.n_types + task_type, speed)

    def record_transfers(self, src: np.ndarray, dst: np.ndarray, bandwidth: np.ndarray) -> None:
        """Add the mean bandwidth (MB/s) of completed copies' transfers, src to dst."""
        self._bandwidth.write(src * self.n_clusters + dst, bandwidth)
        # per destination, then pooled (row n): each row gets its samples in order
        self._bandwidth_into.write(np.concatenate([dst, np.full(dst.size, self.n_clusters)]),
                                   np.concatenate([bandwidth, bandwidth]))

    def record_reachability(self, reachable: np.ndarray, onsets: np.ndarray | None,
                            dt: float) -> None:
        """Count one slot of reachability and the outages that began in it (None: none)."""
        self.reachable_time += reachable * dt
        if onsets is not None:
            self.outage_onsets += onsets

    def speed_samples(self, cluster: int, task_type: int | None = None) -> np.ndarray:
        """Recent processing speeds (MIPS) seen at ``cluster`` (all types if None)."""
        if task_type is not None:
            return self._speed.samples(cluster * self.n_types + task_type)
        return np.concatenate([self._speed.samples(cluster * self.n_types + t)
                               for t in range(self.n_types)])

    def bandwidth_samples(self, src: int, dst: int) -> np.ndarray:
        """Recent transfer bandwidths (MB/s) from ``src`` to ``dst``."""
        return self._bandwidth.samples(src * self.n_clusters + dst)

    def speed_table(self) -> tuple[np.ndarray, np.ndarray]:
        """All recent speeds at once: samples ``[cluster, type, i]`` (NaN where none) and counts.

        Returns read-only views; a count above ``window`` means the ring is full.
        """
        shape = (self.n_clusters, self.n_types)
        return (_frozen(self._speed.buf.reshape(*shape, self.window)),
                _frozen(self._speed.count.reshape(shape)))

    def bandwidth_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Recent bandwidths of the pairs that carried a transfer.

        Returns:
            Read-only keys ``src * n_clusters + dst`` of those pairs (ascending), their
            samples ``[row, i]`` (NaN where none) and counts; a count above ``window``
            means the ring is full. A pair not listed has no samples.
        """
        keys, rows, samples, count = self.bandwidth_rows()
        return _frozen(keys.copy()), _frozen(samples[rows]), _frozen(count[rows])

    def bandwidth_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`bandwidth_table` before its samples are gathered: nothing is copied.

        Returns:
            Read-only keys of the pairs (ascending), the row of each pair's samples in
            ``samples[row, i]``, those samples and each row's count, valid until the
            next write.
        """
        keys, rows = self._bandwidth.keys_rows()
        return (_frozen(keys), _frozen(rows), _frozen(self._bandwidth.buf),
                _frozen(self._bandwidth.count))

    def bandwidth_into_table(self) -> tuple[np.ndarray, np.ndarray]:
        """Recent bandwidths into each cluster ``[dst, i]`` and of all transfers (last row)."""
        return _frozen(self._bandwidth_into.buf), _frozen(self._bandwidth_into.count)

    def outage_rate(self) -> np.ndarray:
        """Observed outage onsets per second of reachable time, per cluster."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.reachable_time > 0,
                            self.outage_onsets / np.maximum(self.reachable_time, 1e-300), 0.0)


class MonitorView:
    """A :class:`Monitor` as a scheduler sees it: its statistics, none of its writers.

    Args:
        monitor: The run's monitor.
    """

    __slots__ = ("_m",)

    def __init__(self, monitor: Monitor):
        object.__setattr__(self, "_m", monitor)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"the monitor's statistics are read-only (cannot set {name!r})")

    @property
    def n_clusters(self) -> int:
        """Number of clusters."""
        return self._m.n_clusters

    @property
    def n_types(self) -> int:
        """Number of task types."""
        return self._m.n_types

    @property
    def window(self) -> int:
        """Samples kept per key."""
        return self._m.window

    @property
    def priors(self) -> Priors | None:
        """Nominal parameters of the world (the modeler's cold start)."""
        return self._m.priors

    @property
    def outage_onsets(self) -> np.ndarray:
        """Outages that began per cluster (read-only)."""
        return _frozen(self._m.outage_onsets)

    @property
    def reachable_time(self) -> np.ndarray:
        """Seconds each cluster was reachable (read-only)."""
        return _frozen(self._m.reachable_time)

    def speed_samples(self, cluster: int, task_type: int | None = None) -> np.ndarray:
        """See :meth:`Monitor.speed_samples`."""
        return self._m.speed_samples(cluster, task_type)

    def bandwidth_samples(self, src: int, dst: int) -> np.ndarray:
        """See :meth:`Monitor.bandwidth_samples`."""
        return self._m.bandwidth_samples(src, dst)

    def speed_table(self) -> tuple[np.ndarray, np.ndarray]:
        """See :meth:`Monitor.speed_table`."""
        return self._m.speed_table()

    def bandwidth_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """See :meth:`Monitor.bandwidth_table`."""
        return self._m.bandwidth_table()

    def bandwidth_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """See :meth:`Monitor.bandwidth_rows`."""
        return self._m.bandwidth_rows()

    def bandwidth_into_table(self) -> tuple[np.ndarray, np.ndarray]:
        """See :meth:`Monitor.bandwidth_into_table`."""
        return self._m.bandwidth_into_table()

    def outage_rate(self) -> np.ndarray:
        """See :meth:`Monitor.outage_rate`."""
        return self._m.outage_rate()


@njit(cache=True)
def _dense_rows(index, keys, used):  # pragma: no cover - compiled
    """Rows of ``keys`` in the dense ``index``, and the new count of rows.

    A key without a row gets row ``used``, the next such key ``used + 1``, and so on.
    """
    rows = np.empty(keys.size, dtype=np.int64)
    for i in range(keys.size):
        k = keys[i]
        if index[k] < 0:
            index[k] = used
            used += 1
        rows[i] = index[k]
    return rows, used


@njit(cache=True)
def _sorted_rows(keys, rows, n, query):  # pragma: no cover - compiled
    """Rows of ``query`` in the sorted index ``keys[:n]`` (rows ``rows``), new keys added.

    Every key of the index has a row below ``n``; the keys without one get rows ``n``
    onward in key order and are merged into the index
    (:func:`~geosim.sortedkeys.insert_sorted`).

    Returns:
        The rows, the index's keys and rows (the same arrays unless grown) and its size.
    """
    out = np.empty(query.size, dtype=np.int64)
    n_miss = 0
    for i in range(query.size):
        at = np.searchsorted(keys[:n], query[i])
        if at < n and keys[at] == query[i]:
            out[i] = rows[at]
        else:
            out[i] = -1
            n_miss += 1
    if n_miss == 0:
        return out, keys, rows, n
    miss = np.empty(n_miss, dtype=np.int64)
    m = 0
    for i in range(query.size):
        if out[i] < 0:
            miss[m] = query[i]
            m += 1
    keys, rows, n = insert_sorted(keys, rows, n, np.unique(miss), n)
    for i in range(query.size):
        if out[i] < 0:
            out[i] = rows[np.searchsorted(keys[:n], query[i])]
    return out, keys, rows, n


@njit(cache=True)
def _ring_write(buf, count, keys, values):  # pragma: no cover - compiled
    """Append ``values[i]`` to ring ``keys[i]``, in order, overwriting the oldest."""
    window = buf.shape[1]
    for i in range(keys.size):
        k = keys[i]
        buf[k, count[k] % window] = values[i]
        count[k] += 1


def _frozen(arr: np.ndarray) -> np.ndarray:
    view = arr.view()
    view.flags.writeable = False
    return view
