"""Workloads: jobs arriving over time, each a DAG of tasks, held as flat NumPy arrays.

A :class:`Workload` holds every job of a run in arrival order as a struct of arrays (see
:mod:`geosim.workload.core` for the layout and units: data in MB, work in MI, time in
seconds). Every generator takes a :class:`numpy.random.Generator` and draws everything from
it, in a fixed order, so the same seed gives identical arrays.

Modules
    * :mod:`~geosim.workload.core` -- the :class:`Workload` container and its checks,
      :func:`poisson_arrivals`, :func:`concat` and :func:`empty_workload`.
    * :mod:`~geosim.workload.single` -- :func:`single_work_jobs`, the redundancy paper's jobs
      (002 §6): one task per job, its work drawn from a :class:`WorkDistribution`.
    * :mod:`~geosim.workload.montage` -- :func:`montage_jobs`, PingAn's workload (003 §6.1):
      Montage workflows whose task counts follow the Facebook job-size mix.
    * :mod:`~geosim.workload.wfformat` -- :func:`read_wfformat` / :func:`wfformat_jobs`, real
      workflow instances in WfCommons' WfFormat, one job or a Poisson stream of them.
    * :mod:`~geosim.workload.mapreduce` -- :func:`mapreduce_jobs`: a map stage, then a reduce
      stage behind a stage barrier (``Workload.task_stage``), with per-copy work variability
      (``Workload.task_cv``, 000 §III).
    * :mod:`~geosim.workload.google` -- :func:`google_jobs`: MapReduce jobs whose laws are
      fitted to the Google-trace statistics of 000 Table II.
    * :mod:`~geosim.workload.flows` -- :func:`flow_jobs`: flows of MapReduce jobs (004 §3),
      each MapReduce job a stage of malleable "brick" tasks; :func:`flow_instance` reads
      them back for the FlowFlex planner.
    * :mod:`~geosim.workload.spark_apps` -- :func:`spark_app_jobs`: the Spark applications of
      PingAn's prototype (003 §5, Table 1), WordCount, iterative ML and PageRank, each a
      chain of stages with shuffles and cached partitions.
    * :mod:`~geosim.workload.traces` -- :func:`google_trace_jobs` and
      :func:`alibaba_trace_jobs`: jobs read from Google cluster-data 2011 and Alibaba
      cluster-trace-v2018, streamed row by row.
    * :mod:`~geosim.workload.build` -- :func:`build_workload`: a scenario's ``[workload]``
      table turned into jobs on a world, with the run's workload stream.

Every public name is re-exported here, so ``from geosim.workload import montage_jobs`` works.
"""

from geosim.workload.build import build_workload
from geosim.workload.core import (
    BYTES_PER_MB,
    REFERENCE_MIPS,
    Workload,
    concat,
    empty_workload,
    poisson_arrivals,
)
from geosim.workload.flows import FLOW_TYPES, flow_instance, flow_jobs, flow_workload
from geosim.workload.google import (
    GOOGLE_PRIORITY_PROBS,
    bounded_pareto,
    bounded_pareto_mean,
    bounded_pareto_shape,
    google_jobs,
    google_task_counts,
    task_count_exponent,
    task_count_pmf,
)
from geosim.workload.mapreduce import MAPREDUCE_TYPES, mapreduce_jobs
from geosim.workload.montage import (
    FACEBOOK_SIZE_MIX,
    MONTAGE_TYPES,
    montage_jobs,
    montage_task_counts,
)
from geosim.workload.single import WorkDistribution, single_work_jobs
from geosim.workload.spark_apps import (
    SPARK_APPS,
    TABLE1_INPUT_MB,
    TABLE1_SIZE_MIX,
    SparkCosts,
    spark_app_draws,
    spark_app_jobs,
    spark_scenario_jobs,
    spark_type_names,
)
from geosim.workload.traces import ALIBABA_TYPES, alibaba_trace_jobs, google_trace_jobs
from geosim.workload.wfformat import read_wfformat, wfformat_jobs

__all__ = [
    "ALIBABA_TYPES",
    "BYTES_PER_MB",
    "FACEBOOK_SIZE_MIX",
    "FLOW_TYPES",
    "GOOGLE_PRIORITY_PROBS",
    "MAPREDUCE_TYPES",
    "MONTAGE_TYPES",
    "REFERENCE_MIPS",
    "SPARK_APPS",
    "TABLE1_INPUT_MB",
    "TABLE1_SIZE_MIX",
    "SparkCosts",
    "WorkDistribution",
    "Workload",
    "alibaba_trace_jobs",
    "bounded_pareto",
    "bounded_pareto_mean",
    "bounded_pareto_shape",
    "build_workload",
    "concat",
    "empty_workload",
    "flow_instance",
    "flow_jobs",
    "flow_workload",
    "google_jobs",
    "google_trace_jobs",
    "google_task_counts",
    "mapreduce_jobs",
    "montage_jobs",
    "montage_task_counts",
    "poisson_arrivals",
    "read_wfformat",
    "single_work_jobs",
    "spark_app_draws",
    "spark_app_jobs",
    "spark_scenario_jobs",
    "spark_type_names",
    "task_count_exponent",
    "task_count_pmf",
    "wfformat_jobs",
]
