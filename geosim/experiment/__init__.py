"""Comparisons of schedulers on common random numbers (``geosim compare``).

A run is determined by its scenario, its scheduler (with parameters) and its seed; the
world and the workload depend on the seed only, so replication ``i`` of every scheduler
sees the same world and jobs. :func:`compare` runs every (scheduler, seed) pair, keeps
the runs in a resumable comparison directory and returns the comparison's tables.

The package has one module per concern:

- :mod:`~geosim.experiment.options`: checking the inputs (schedulers, seeds, thresholds,
  baseline, worker count) before anything runs;
- :mod:`~geosim.experiment.runner`: one run, many runs in worker processes or on Dask,
  and :func:`compare`, which drives a comparison;
- :mod:`~geosim.experiment.store`: comparison directories (``compare.json``, the runs,
  the tables): resuming, refusing results of other code, reading a comparison back and
  knowing its baseline;
- :mod:`~geosim.experiment.tables`: the tables (:class:`Comparison`) and their text form;
- :mod:`~geosim.experiment.stats`: confidence intervals, paired differences, reduction
  ratios and verdicts;
- :mod:`~geosim.experiment.sweep`: load-regime maps (:func:`sweep`), one comparison per
  cell of a grid of scenario values, and their table (:class:`Sweep`) read back.
"""

from geosim.experiment.options import check_within, coerce_specs, resolve_seeds
from geosim.experiment.runner import (
    ORPHAN_EXIT,
    WATCH_INTERVAL,
    Done,
    compare,
    dask_client,
    exit_with,
    run_dask,
    run_local,
    run_scenario,
    simulate,
)
from geosim.experiment.stats import (
    BATCHES,
    batch_means,
    paired_difference,
    reductions,
    t_halfwidth,
    verdict,
)
from geosim.experiment.store import (
    JOB_COLUMNS,
    MANIFEST,
    CompareDir,
    RunOutcome,
    SavedComparison,
    comparison_baseline,
    load_comparison,
    load_outcome,
    run_path,
    safe_name,
)
from geosim.experiment.sweep import SWEEP_MANIFEST, SWEEP_TABLE, Sweep, load_sweep, sweep
from geosim.experiment.tables import (
    WITHIN,
    Comparison,
    build_comparison,
    flow_table,
    per_job_table,
)
from geosim.schedulers.spec import Spec, parse_spec, parse_specs

__all__ = [
    "BATCHES", "JOB_COLUMNS", "MANIFEST", "ORPHAN_EXIT", "SWEEP_MANIFEST", "SWEEP_TABLE",
    "WATCH_INTERVAL", "WITHIN", "CompareDir", "Comparison", "Done", "RunOutcome",
    "SavedComparison", "Spec", "Sweep",
    "batch_means", "build_comparison", "check_within", "coerce_specs", "compare",
    "comparison_baseline", "dask_client", "exit_with", "flow_table", "load_comparison",
    "load_outcome", "load_sweep", "paired_difference", "parse_spec", "parse_specs", "per_job_table",
    "reductions", "resolve_seeds", "run_dask", "run_local", "run_path", "run_scenario",
    "safe_name", "simulate", "sweep", "t_halfwidth", "verdict",
]
