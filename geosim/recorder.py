"""The one recorder of a run's time series.

:class:`Recorder` has the interface of Mesa's ``DataCollector`` (``collect``,
``get_model_vars_dataframe``, ``get_agenttype_vars_dataframe``; model-level and
agent-type-level reporters) with two differences, both for the simulator's sake:

- An agent-type reporter is a function of the model that returns one value per agent of
  the type, as an array in the agents' index order (clusters, links), instead of one
  call per agent. A sample of 100 clusters with eight quantities then costs a handful of
  NumPy calls: on full-size ``pingan-medium`` about 0.06–0.2 ms per sample of clusters
  and links, against 9–12 ms for Mesa's per-agent collection of the same eight cluster
  properties (``benchmarks/bench_recorder.py``).
- Samples are keyed by simulated time, not by Mesa's step counter: an idle jump takes
  several samples in one step, which a step-keyed table would overwrite.

The model samples its clusters and links with one recorder (``GeoModel.recorder``); the
result tables, the figures and the dashboard read what it recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

#: A model-level reporter: model -> one number.
ModelReporter = Callable[[Any], float]
#: An agent-type reporter: model -> one value per agent of the type.
AgentReporter = Callable[[Any], np.ndarray]


class Recorder:
    """Time series of model-level values and of every agent of some types.

    Args:
        model_reporters: Name -> function of the model returning one number.
        agenttype_reporters: Agent type -> (name -> function of the model returning an
            array with one value per agent of that type).
        index: Agent type -> name of its index column (default ``"agent"``).
        clock: Function of the model returning the sample time.
    """

    def __init__(self, model_reporters: Mapping[str, ModelReporter] | None = None,
                 agenttype_reporters: Mapping[type, Mapping[str, AgentReporter]] | None = None,
                 index: Mapping[type, str] | None = None,
                 clock: Callable[[Any], float] = lambda model: model.engine.time):
        self.model_reporters = dict(model_reporters or {})
        self.agenttype_reporters = {k: dict(v) for k, v in (agenttype_reporters or {}).items()}
        self.index = dict(index or {})
        self.clock = clock
        self._n = 0
        self._model = {k: np.zeros(1024) for k in ("time", *self.model_reporters)}
        self._agents: dict[type, list[dict[str, np.ndarray]]] = {
            t: [] for t in self.agenttype_reporters}

    def collect(self, model: Any) -> None:
        """Take one sample of every reporter now."""
        t = float(self.clock(model))
        if self.model_reporters:
            if self._n == self._model["time"].size:
                self._model = {k: np.concatenate([a, np.zeros(a.size)])
                               for k, a in self._model.items()}
            self._model["time"][self._n] = t
            for name, report in self.model_reporters.items():
                self._model[name][self._n] = report(model)
        self._n += 1
        for agent_type, reporters in self.agenttype_reporters.items():
            values = {name: report(model) for name, report in reporters.items()}
            n = len(next(iter(values.values()))) if values else 0
            self.add(agent_type, {"time": np.full(n, t),
                                  self._index(agent_type): np.arange(n), **values})

    def add(self, agent_type: type, columns: Mapping[str, np.ndarray]) -> None:
        """Append a sample of ``agent_type`` taken elsewhere (e.g. by a compiled loop).

        ``columns`` holds ``time``, the index column and one array per reporter, in
        the order of :meth:`collect`; it may hold several samples' rows one after
        another (a block taken at once).
        """
        self._agents.setdefault(agent_type, []).append(dict(columns))

    def __len__(self) -> int:
        """Samples taken by :meth:`collect`."""
        return self._n

    def __getitem__(self, name: str) -> np.ndarray:
        """The series of model-level reporter ``name`` (or ``"time"``), oldest first."""
        return self._model[name][:self._n]

    def samples(self, agent_type: type) -> list[dict[str, np.ndarray]]:
        """The samples of ``agent_type``: one dict of column arrays per sample or block."""
        return self._agents.get(agent_type, [])

    def get_model_vars_dataframe(self) -> pd.DataFrame:
        """Model-level series, one row per sample (column ``time`` first)."""
        return pd.DataFrame({k: a[:self._n].copy() for k, a in self._model.items()})

    def get_agenttype_vars_dataframe(self, agent_type: type,
                                     dtypes: Mapping[str, Any] | None = None) -> pd.DataFrame:
        """One row per agent of ``agent_type`` and sample (columns ``time``, index, ...).

        Args:
            agent_type: The agent type.
            dtypes: Column types, which also name the columns of the empty table
                returned when nothing was recorded.
        """
        records = self.samples(agent_type)
        if not records:
            return pd.DataFrame({k: np.empty(0, dtype=t) for k, t in (dtypes or {}).items()})
        table = {k: np.concatenate([r[k] for r in records]) for k in records[0]}
        if dtypes:
            table = {k: v.astype(dtypes[k]) if k in dtypes else v for k, v in table.items()}
        return pd.DataFrame(table)

    def get_index_vars_dataframe(self, index: str,
                                 dtypes: Mapping[str, Any] | None = None) -> pd.DataFrame:
        """:meth:`get_agenttype_vars_dataframe` of the agent type indexed by column ``index``.

        For readers that know a series by its index column (``"cluster"``, ``"link"``)
        rather than by the agents' class.
        """
        for agent_type, name in self.index.items():
            if name == index:
                return self.get_agenttype_vars_dataframe(agent_type, dtypes)
        return pd.DataFrame({k: np.empty(0, dtype=t) for k, t in (dtypes or {}).items()})

    def _index(self, agent_type: type) -> str:
        return self.index.get(agent_type, "agent")
