"""Mesa's ``DataCollector`` of a GeoModel: what ``mesa.batch_run`` and SolaraViz read.

``GeoModel.datacollector`` is a :class:`GeoDataCollector`, a subclass of
:class:`mesa.DataCollector`, so Mesa's tools work on a GeoModel as on any Mesa model::

    mesa.batch_run(GeoModel, parameters={"scenario": ["scenarios/quickstart.toml"],
                   "scheduler": ["fifo", "srpt"], "seed": [1, 2]}, max_steps=5000)

returns one row per run (and per cluster) with the model variables of
:data:`MODEL_REPORTERS` and the cluster variables of :data:`CLUSTER_REPORTERS`. Every
reporter reads :mod:`geosim.state` (or the model's counters), the one place that turns
engine arrays into observable quantities; the result tables keep their own time series,
sampled at ``run.record_interval`` by ``GeoModel.recorder``.

Cost and keying, for runs of millions of steps:

- Model variables are collected at the end of every step (the model calls
  :meth:`GeoDataCollector.collect`): one call of :func:`model_row`, O(1) Python work
  on NumPy arrays, written into preallocated NumPy columns (8 bytes per variable and step,
  grown by doubling), never into lists of Python objects. The mean flowtime is a
  running sum over finished jobs, added to once per job when its agent leaves the model
  (:meth:`GeoDataCollector.job_finished`). The compiled pool loop of
  :mod:`geosim.poolsim` takes no Mesa steps, so it collects nothing.
- Cluster variables are vectorised (one call per variable for all clusters) and taken
  only when read: ``_agent_records.get(step)`` for the last step reads the clusters now
  (their state has not changed since that step ended) and keeps the rows; earlier steps
  have no cluster rows, so a ``batch_run`` with a ``data_collection_period`` gets model
  rows for every period and cluster rows for the last step. Per-step cluster rows
  would cost a pass over the tasks (the queues) at every step.
- The collection at the end of Mesa step ``k`` (``model.steps == k``) is stored at index
  ``k - 1``. Mesa 3.3's ``batch_run`` reads index ``model.steps - 1`` after its last
  step, Mesa 3.5's the last key of ``_collection_steps`` (:class:`CollectionSteps`), so
  either way its rows hold the state when the run stopped (the ``time`` column says
  when); index ``i`` holds the state after ``i + 1`` steps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import mesa
import numpy as np
import pandas as pd

from geosim import state


def model_row(m: mesa.Model) -> tuple:
    """The model variables now, in :data:`MODEL_REPORTERS`' order (one call per step).

    ``time`` (simulated seconds), ``alive_jobs``, ``jobs_done``, ``busy_slots`` (slot
    shares in use, :func:`geosim.state.total_busy_slots`) and ``mean_flowtime`` (of
    finished jobs, from the running sum that :meth:`GeoDataCollector.job_finished`
    keeps): each costs one NumPy call at most (quantities that take more, such as the
    usable slots, are read from :mod:`geosim.state` when shown).
    """
    return (m.engine.time, len(m.jobs), m.jobs_done, state.total_busy_slots(m.engine),
            m.datacollector.mean_flowtime())


#: Column type of each model variable, in :func:`model_row`'s order.
_MODEL_TYPES = {"time": float, "alive_jobs": np.int64, "jobs_done": np.int64,
                "busy_slots": float, "mean_flowtime": float}


def model_reporters() -> dict[str, tuple[Callable[[mesa.Model], Any], type]]:
    """Model variables: name -> (reporter of the model, column type).

    Each reporter reads its item of :func:`model_row`, the one definition.
    """
    return {name: ((lambda m, i=i: model_row(m)[i]), kind)
            for i, (name, kind) in enumerate(_MODEL_TYPES.items())}


#: The model variables' names, in column order.
MODEL_REPORTERS = tuple(model_reporters())

#: Cluster variables: name -> reporter of the model returning one value per cluster,
#: in cluster index order.
CLUSTER_REPORTERS: dict[str, Callable[[mesa.Model], np.ndarray]] = {
    "cluster": lambda m: np.arange(m.world.n_clusters),
    "reachable": lambda m: state.reachable(m.engine).copy(),
    "state": lambda m: np.asarray(state.CLUSTER_STATES, dtype=object)[
        state.cluster_states(m.engine)],
    "slots": lambda m: m.world.slots.copy(),
    "available_slots": lambda m: state.available_slots(m.world),
    "busy": lambda m: state.busy_slots(m.engine),
    "copies": lambda m: state.running_copies(m.engine),
    "queue": lambda m: state.queues(m.engine),
}


class ModelColumns(Mapping):
    """The model variables as Mesa's ``model_vars``: name -> values, oldest first.

    Each value is a fresh NumPy array of the collected part of its column, so
    ``model_vars[name][step]`` and ``pd.DataFrame(model_vars)`` work as on Mesa's lists.
    Rows are appended as tuples to a short buffer (a list append per step) that the
    collecting thread moves into the columns every :attr:`BLOCK` rows. A reader in
    another thread (a page drawing while the run steps) reads the columns and the buffer
    under a lock the move also holds, and never moves rows itself.
    """

    #: Rows buffered before they are moved into the columns.
    BLOCK = 4096

    def __init__(self, reporters: Mapping[str, tuple[Callable, type]]):
        self._columns = {name: np.zeros(self.BLOCK, dtype=kind) for name, (_, kind)
                         in reporters.items()}
        self._stored = 0
        self._buffer: list[tuple] = []
        self._lock = threading.Lock()

    @property
    def n(self) -> int:
        """Rows collected."""
        return self._stored + len(self._buffer)

    def append(self, row: tuple) -> None:
        """Add one row: one value per variable, in column order."""
        self._buffer.append(row)
        if len(self._buffer) >= self.BLOCK:
            self._flush()

    def _flush(self) -> None:
        with self._lock:
            lo, hi = self._stored, self._stored + len(self._buffer)
            size = len(next(iter(self._columns.values())))
            if hi > size:
                grown = max(hi, 2 * size)
                self._columns = {k: np.concatenate([a, np.zeros(grown - size, dtype=a.dtype)])
                                 for k, a in self._columns.items()}
            for column, values in zip(self._columns.values(), zip(*self._buffer, strict=True),
                                      strict=True):
                column[lo:hi] = values
            self._stored = hi
            self._buffer = []

    def __getitem__(self, name: str) -> np.ndarray:
        return self.snapshot([name])[name]

    def snapshot(self, names: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """Fresh arrays of the variables ``names`` (default: all), all of the same rows."""
        names = list(self._columns) if names is None else list(names)
        order = list(self._columns)
        with self._lock:
            rows = list(self._buffer)
            heads = {k: self._columns[k][:self._stored].copy() for k in names}
        if not rows:
            return heads
        return {k: np.concatenate([heads[k], np.array([r[order.index(k)] for r in rows],
                                                      dtype=heads[k].dtype)])
                for k in names}

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)


class CollectionSteps(Sequence):
    """Mesa's ``_collection_steps`` (Mesa 3.5): the key of each collection, ``0 .. n-1``.

    Mesa 3.5's ``batch_run`` finds a step's row by bisecting this sequence; collection
    ``i`` is stored at key ``i`` (see the module's docstring), so no list is kept.
    """

    def __init__(self, columns: ModelColumns):
        self._columns = columns

    def __len__(self) -> int:
        return self._columns.n

    def __getitem__(self, index):
        return range(self._columns.n)[index]


class ClusterRecords(Mapping):
    """Mesa's ``_agent_records``: step -> one tuple per cluster, read when asked.

    A tuple is ``(step, unique_id, *values)`` in the order of
    :data:`CLUSTER_REPORTERS`, as Mesa's per-agent records. Only the last step has
    records: they are read from the model when first asked for and kept until the
    next step.
    """

    def __init__(self, collector: GeoDataCollector):
        self._collector = collector
        self._rows: tuple[int, list[tuple]] | None = None

    def _latest(self) -> int | None:
        model = self._collector.model
        n = self._collector.model_vars.n
        return None if model is None or not n else n - 1

    def __getitem__(self, step: int) -> list[tuple]:
        latest = self._latest()
        if latest is None or step != latest:
            raise KeyError(step)
        if self._rows is None or self._rows[0] != latest:
            self._rows = (latest, self._collector.cluster_rows(step))
        return self._rows[1]

    def __iter__(self) -> Iterator[int]:
        latest = self._latest()
        return iter(() if latest is None else (latest,))

    def __len__(self) -> int:
        return 0 if self._latest() is None else 1


class GeoDataCollector(mesa.DataCollector):
    """Mesa's DataCollector over a GeoModel's model and cluster variables.

    See the module's docstring for what is collected when. ``model_vars`` and
    ``_agent_records`` have Mesa's shapes (the second is what ``batch_run`` reads);
    ``agent_reporters`` names the cluster variables of each record.

    Args:
        model: The model it collects from (held to read the clusters when asked).
    """

    def __init__(self, model: mesa.Model):
        super().__init__()
        reporters = model_reporters()
        self.model_reporters = {name: report for name, (report, _) in reporters.items()}
        self.agent_reporters = dict(CLUSTER_REPORTERS)
        self.model_vars = ModelColumns(reporters)
        self._collection_steps = CollectionSteps(self.model_vars)
        self.model = model
        self._flow_sum = 0.0
        self._flow_count = 0
        self._agent_records = ClusterRecords(self)

    def job_finished(self, job: int) -> None:
        """Count the flowtime of ``job``, which has just finished (its agent leaves)."""
        flowtime = float(state.job_flowtimes(self.model.engine, np.array([job]))[0])
        if flowtime == flowtime:            # not NaN: the job did finish
            self._flow_sum += flowtime
            self._flow_count += 1

    def mean_flowtime(self) -> float:
        """Mean flowtime (s) of the jobs finished so far; NaN before the first."""
        return self._flow_sum / self._flow_count if self._flow_count else float("nan")

    def collect(self, model: mesa.Model) -> None:
        """Take the model variables now (the end of step ``model.steps``)."""
        self.model_vars.append(model_row(model))

    def cluster_rows(self, step: int) -> list[tuple]:
        """Records ``(step, unique_id, *values)`` of every cluster now (vectorised)."""
        model = self.model
        columns = [report(model) for report in self.agent_reporters.values()]
        ids = [agent.unique_id for agent in model.clusters]
        return [(step, uid, *values) for uid, *values in zip(
            ids, *(c.tolist() for c in columns), strict=True)]

    def get_model_vars_dataframe(self) -> pd.DataFrame:
        """One row per collection (index: the step it is stored at), one column per variable."""
        return pd.DataFrame(self.model_vars.snapshot())

    def get_agent_vars_dataframe(self) -> pd.DataFrame:
        """The clusters at the last step, indexed by ``Step`` and ``AgentID`` (Mesa's shape)."""
        rows = [row for step in self._agent_records for row in self._agent_records[step]]
        return pd.DataFrame.from_records(rows, columns=["Step", "AgentID",
                                                        *self.agent_reporters],
                                         index=["Step", "AgentID"])


__all__ = ["CLUSTER_REPORTERS", "ClusterRecords", "CollectionSteps", "GeoDataCollector",
           "MODEL_REPORTERS", "ModelColumns", "model_reporters",
           "model_row"]
