"""The engine's growable tables: copies and copy inputs, as struct-of-arrays.

A :class:`Table` holds one NumPy column per field and grows by amortised doubling,
asking the run's memory budget first. Its columns are also handed to compiled kernels as
one record (:class:`CopyCols`, :class:`InputCols`), built once per allocation of the
columns.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from geosim.engine.base import ALIVE
from geosim.errors import GeosimError
from geosim.guards import Budget

#: Largest task, slot, cluster or copy id: the copies table keeps them in 32 bits (a
#: long run's memory is mostly that table).
ID_MAX = 2**31 - 1

#: Columns of the copies table: dtype and the value of a new row.
COPY_SPEC = {
    "task": (np.int32, -1), "slot": (np.int32, -1), "cluster": (np.int32, -1),
    "share": (np.float64, 0.0), "progress": (np.float64, 0.0), "base": (np.float64, 0.0),
    "start": (np.float64, np.nan), "end": (np.float64, np.nan),
    "executed": (np.float64, 0.0), "wasted": (np.float64, 0.0),
    "share_time": (np.float64, 0.0), "speed_time": (np.float64, 0.0),
    "outcome": (np.int8, ALIVE), "in_lo": (np.int64, 0), "in_hi": (np.int64, 0),
    "factor": (np.float64, 1.0),
}
#: Columns of the copy inputs table (one row per input of a copy).
INPUT_SPEC = {
    "copy": (np.int64, -1), "src": (np.int64, -1), "size": (np.float64, 0.0),
    "received": (np.float64, 0.0), "bw_time": (np.float64, 0.0), "fetch_time": (np.float64, 0.0),
    "route": (np.int64, -1), "route_epoch": (np.int64, -1),
}


class CopyCols(NamedTuple):
    """The copies table's columns (:data:`COPY_SPEC`), as compiled kernels take them.

    ``progress`` and ``base`` are fractions of the task's mean work; ``executed`` and
    ``wasted`` are MI; ``in_lo:in_hi`` are the copy's rows of the inputs table.
    """

    task: np.ndarray
    slot: np.ndarray
    cluster: np.ndarray
    share: np.ndarray
    progress: np.ndarray
    base: np.ndarray
    start: np.ndarray
    end: np.ndarray
    executed: np.ndarray
    wasted: np.ndarray
    share_time: np.ndarray
    speed_time: np.ndarray
    outcome: np.ndarray
    in_lo: np.ndarray
    in_hi: np.ndarray
    factor: np.ndarray


class InputCols(NamedTuple):
    """The inputs table's columns (:data:`INPUT_SPEC`), as compiled kernels take them.

    ``route`` is the row of the input's route (its source to its copy's cluster) in the
    table of routes as it was in ``route_epoch`` (:meth:`~geosim.routes.Routes.pair_table`),
    kept so that a transfer looks its route up once, not at every span (-1: not yet).
    """

    copy: np.ndarray
    src: np.ndarray
    size: np.ndarray
    received: np.ndarray
    bw_time: np.ndarray
    fetch_time: np.ndarray
    route: np.ndarray
    route_epoch: np.ndarray


class Table:
    """Growable struct-of-arrays with amortised doubling, of at most ``max_rows`` rows.

    Args:
        spec: Each column's dtype and the value of a new row.
        capacity: Rows allocated at first.
        name: What the rows are, for error messages.
        budget: The run's memory limit, asked before the table grows.
        max_rows: Most rows the table may hold.
        record: A ``NamedTuple`` type with one field per column of ``spec``; then
            :attr:`kernel_arg` hands the columns to compiled kernels in one argument.
    """

    def __init__(self, spec: dict[str, tuple[np.dtype, float]], capacity: int = 1024,
                 name: str = "rows", budget: Budget | None = None,
                 max_rows: int = 2**63 - 1, record: type | None = None):
        self._spec = spec
        self.n = 0
        self.name, self.budget, self.max_rows = name, budget, max_rows
        self.cols = {k: np.full(capacity, fill, dtype=dt) for k, (dt, fill) in spec.items()}
        self._record = record
        self._rec = None

    @property
    def capacity(self) -> int:
        """Rows the columns hold (used or not)."""
        return len(next(iter(self.cols.values())))

    @property
    def kernel_arg(self) -> tuple:
        """The columns as a plain tuple in the ``record``'s order, made once per allocation.

        Compiled kernels name it on entry (see :mod:`geosim.engine.records`).

        Raises:
            TypeError: The table has no record type, or :meth:`keep` dropped columns.
        """
        if self._rec is None:
            if self._record is None:
                raise TypeError(f"the {self.name} table has no record of its columns")
            self._rec = tuple(self._record(**self.cols))
        return self._rec

    def set_rows(self, n: int) -> None:
        """Count the first ``n`` rows as used (a loop that fills the columns itself)."""
        if not 0 <= n <= self.capacity:
            raise ValueError(f"{n} rows outside 0..{self.capacity}")
        self.n = int(n)

    def append(self, count: int) -> slice:
        """Reserve ``count`` new rows (filled with defaults) and return their slice."""
        need = self.n + count
        if need > self.capacity:
            self.resize(max(need, min(2 * self.capacity, self.max_rows)))
        rows = slice(self.n, need)
        for k, (_, fill) in self._spec.items():
            self.cols[k][rows] = fill
        self.n = need
        return rows

    def resize(self, capacity: int) -> None:
        """Hold ``capacity`` rows (at least the ``n`` used), one column at a time.

        Each old column is released as soon as its replacement is filled, so the peak is
        the table plus one column, not two tables. Rows beyond ``n`` are left unfilled
        (:meth:`append` fills the rows it hands out), so the unused half of a doubled
        table takes no memory until it is used.
        """
        capacity = max(capacity, self.n)
        self.check(capacity)
        self._rec = None
        for k, (dt, _) in self._spec.items():
            arr = np.empty(capacity, dtype=dt)
            arr[: self.n] = self.cols[k][: self.n]
            self.cols[k] = arr

    def grown(self, done: int, total: int) -> int:
        """The next capacity of a full table whose rows came from ``done`` of ``total`` items.

        The rows per item so far, projected over every item (with a sixteenth to spare),
        when that is larger than an eighth more and :meth:`fits`; otherwise an eighth
        more, at most ``max_rows`` (a full table asks for one row more, which
        :meth:`check` refuses). A run that fills its table early then grows it about
        once, where growing by an eighth took thirteen resizes; unused rows are trimmed
        at the end of the run.
        """
        cap = self.capacity
        step = min(cap + cap // 8, max(self.max_rows, cap + 1))
        if 0 < done < total:
            projected = min(self.n * total // done + self.n * total // (16 * done),
                            self.max_rows)
            if projected > step and self.fits(projected):
                return projected
        return step

    def resize_in_place(self, capacity: int) -> None:
        """Hold ``capacity`` rows (at least the ``n`` used) by reallocating each column.

        The allocator extends or trims a large column where it lies (moving pages, not
        copying rows), so growing a table of millions of rows costs neither a copy nor a
        second column. New rows are zero-filled. Only for a caller that holds no view of
        the columns: a view would be left pointing at released memory.
        """
        capacity = max(capacity, self.n)
        self.check(capacity)
        self._rec = None
        for col in self.cols.values():
            col.resize(capacity, refcheck=False)

    def keep(self, names: tuple[str, ...]) -> None:
        """Drop every column but ``names`` (their rows are kept as they are)."""
        self._spec = {k: v for k, v in self._spec.items() if k in names}
        self.cols = {k: v for k, v in self.cols.items() if k in names}
        self._rec = None
        self._record = None

    def check(self, capacity: int) -> None:
        """Ask the run's memory budget (if any) whether ``capacity`` rows may be held.

        Raises:
            GeosimError: The table would exceed ``run.max_memory_gb`` or ``max_rows``.
        """
        if capacity > self.max_rows:
            raise GeosimError(f"the run's {self.name} table would exceed {self.max_rows:,} "
                              "rows (its ids are 32-bit)")
        if self.budget is not None:
            self.budget.check(capacity * self._row_bytes(), f"{self.name} table "
                              f"({capacity:,} rows)")

    def fits(self, capacity: int) -> bool:
        """Whether ``capacity`` rows are within ``max_rows`` and the memory budget."""
        return capacity <= self.max_rows and (
            self.budget is None or capacity * self._row_bytes() <= self.budget.limit_bytes)

    def _row_bytes(self) -> int:
        return sum(np.dtype(dt).itemsize for dt, _ in self._spec.values())
