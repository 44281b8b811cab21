"""Vectorised execution of task copies.

State of record is struct-of-arrays: tasks (fixed, one entry per task of the workload),
copies and copy inputs (growing tables), slots and clusters. One call to
:meth:`Engine.advance` moves every running copy through one time slot ``[t, t+dt]`` in a
handful of NumPy operations:

- each transfer of a remote input crosses resources (each directed WAN link of its route,
  the source's egress gate, the destination's ingress gate) and gets bandwidth ``bw_j``
  from them by the scenario's ``links.sharing`` rule (:mod:`~geosim.engine.sharing`: an
  equal share of each resource, the smallest, or max-min fair); 0 while the source
  cluster is unreachable;
- a copy's progress is the bottleneck of processing and input transfer (003 §3.2). How
  the two combine over time is the scenario's ``links.transfer`` key:

  - ``"fetch"`` (default): each remote input is fetched on its own at ``bw_j / size_j``
    (fraction per second) until it has all arrived, and the copy processes at
    ``share * speed / work`` but never beyond the smallest received fraction of its
    inputs. A source that goes unreachable stalls only its own input; the others go on
    arriving and are processed, as a shuffle read fetches blocks from many hosts.
  - ``"stream"``: the copy advances at ``min(share * speed / work, min_j bw_j / size_j)``,
    every input streaming in lockstep with processing: one unreachable source stops the
    whole copy.

  With constant rates both finish at ``max(work / speed, max_j size_j / bw_j)``; they
  differ when rates vary during a copy's life. ``speed`` is the slot's VM power times its
  availability factor averaged exactly over the slot;
- a copy's own work is its task's mean work times a factor drawn for that copy (mean 1,
  the task's coefficient of variation ``task_cv``; :mod:`geosim.variability`), so its
  progress rate is divided by the factor. Progress, ``executed`` and ``wasted`` stay in
  units of the task's mean work (a fraction of the task, as checkpoints carry it);
- a task of stage s > 0 of a job becomes ready only after every task of stage s - 1 of
  that job has finished (a stage barrier, such as MapReduce's map -> reduce; it carries
  no data);
- a copy reaching progress 1 finishes at the interpolated time inside the slot; the first
  copy of a task to finish wins and its siblings are killed at that instant, so their
  slots are free at the next slot boundary and their work up to that instant is wasted.

Work accounting: ``executed`` integrates every copy's progress; work a copy did that does
not survive in its task (killed copies, losers of a checkpoint) is ``wasted``. For a
finished run ``sum(executed) == sum(task work) + sum(wasted)``.

The package's modules, one responsibility each:

- :mod:`~geosim.engine.base`: task states, copy outcomes, :class:`SchedulingError` and
  array helpers;
- :mod:`~geosim.engine.tables`: the growable copies and inputs tables (:class:`Table`);
- :mod:`~geosim.engine.records`: the named records of state the compiled kernels take;
- :mod:`~geosim.engine.stages`: stage barriers and malleability caps;
- :mod:`~geosim.engine.launch`: launch checks, the choice of slots, new copies;
- :mod:`~geosim.engine.draw`: the exact replica of ``Generator.choice`` that picks slots;
- :mod:`~geosim.engine.transfers`: inputs, flows, raw-input moves, traffic accounting;
- :mod:`~geosim.engine.sharing`: each transfer's bandwidth (equal or max-min sharing);
- :mod:`~geosim.engine.step`: the compiled kernels of a span and of completions;
- :mod:`~geosim.engine.core`: the :class:`Engine` that holds them together.
"""

from geosim.engine.base import (
    ALIVE,
    DONE,
    EPS,
    FAILED,
    KILLED,
    LOST,
    OUTCOMES,
    READY,
    RUNNING,
    TRANSFER_MODES,
    WAITING,
    WON,
    SchedulingError,
    concat_ranges,
    first_of_runs,
    in_sorted,
    rank_in_runs,
)
from geosim.engine.core import Engine
from geosim.engine.tables import COPY_SPEC, ID_MAX, INPUT_SPEC, CopyCols, InputCols, Table

__all__ = [
    "ALIVE", "COPY_SPEC", "DONE", "EPS", "FAILED", "ID_MAX", "INPUT_SPEC", "KILLED", "LOST",
    "OUTCOMES", "READY", "RUNNING", "TRANSFER_MODES", "WAITING", "WON", "CopyCols", "Engine",
    "InputCols", "SchedulingError", "Table", "concat_ranges", "first_of_runs",
    "in_sorted", "rank_in_runs",
]
