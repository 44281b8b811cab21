"""Spark applications: the workload of PingAn's prototype (003 §5, Table 1).

:func:`spark_app_jobs` generates a Poisson stream of three Spark applications, WordCount,
iterative machine learning and PageRank, whose input sizes follow 003's Table 1: a job is
small (46%), medium (40%) or large (14%), and its input lies in its application's range
for that class (MB, 1 GB = 1000 MB):

    ===========  ============  =============  =============
    class        WordCount     iterative ML   PageRank
    ===========  ============  =============  =============
    small  46%   100-200       130-300        150-400
    medium 40%   700-1500      1300-1800      1000-2000
    large  14%   3000-5000     2500-4000      3500-6000
    ===========  ============  =============  =============

003 gives the classes' shares and the ranges, not the applications' shares; by default
the three are equally frequent (``app_weights``). With ``exact_mix`` (the default) the
``n_jobs`` jobs hold every application and every class in the proportion given, rounded
by largest remainder (88 jobs: 30 / 29 / 29 applications, 41 / 35 / 12 classes), paired at
random and in random order; without it each job draws both independently. The input size
is uniform in the range.

Input and partitions
    The input is split into HDFS blocks of ``block_mb`` (128 MB, Hadoop 2's default block
    size; the last block holds the remainder), one map-side task per block, as Spark's
    ``textFile`` does. Each block lies on one input cluster drawn uniformly (weights
    ``input_probs``), independently of the others: 003 §5 "randomly distribute[s] the input
    across the 10 VMs". A shuffle has as many reduce-side tasks as its parent stage has
    tasks (Spark's default partitioner when ``spark.default.parallelism`` is unset), so
    every stage of a job has ``p`` tasks, ``p`` its number of blocks. Blocks are not
    replicated (HDFS keeps three replicas; here a block is readable only from its cluster).

Stages (one task type per stage, so that a Spark TaskSet is a (job, type) group; the stage
index is ``Workload.task_stage``, and stage ``s + 1`` waits for all of stage ``s``)::

    WordCount       wordcount.map (block) -> wordcount.reduce   (all-to-all shuffle)
    iterative ML    ml.iter1 (block: read, parse, cache, gradient) -> ml.iter2 -> ... ml.iterK
                    (task i of an iteration reads task i's cached partition)
    PageRank        pagerank.parse (block) -> pagerank.distinct -> pagerank.iter1 -> ...
                    -> pagerank.iterK -> pagerank.ranks   (an all-to-all shuffle between
                    consecutive stages; task i of an iteration also reads the cached links
                    partition i)

They are Spark's own example programs: WordCount (``flatMap``, ``map``, ``reduceByKey``);
logistic regression as in ``SparkHdfsLR`` (the points are parsed and cached while the
first gradient is computed; each later iteration is one stage over the cached partitions,
its gradient reduced at the driver, whose small messages are not modelled); and
``SparkPageRank`` (``distinct`` and ``groupByKey`` shuffle the edge list twice, the links
are cached, and each iteration joins them with the ranks and shuffles the contributions
with ``reduceByKey``; the last ranks are collected). ``K`` is ``ml_iterations`` and
``pagerank_iterations``, 10 by default (the default of ``SparkPageRank``; LR needs tens of
iterations to converge, and 10 keeps ML jobs of the same order as the others). An edge's
data is stored where the parent's winning copy ran, so an iteration that runs where the
previous one did reads its cached partition locally, as Spark's process-local scheduling
intends.

Work (:class:`SparkCosts`)
    Each stage costs seconds per MB of its main input on an uncontended reference core
    (``reference_mips``), and each shuffle writes a fraction of its stage's input. The
    defaults are choices, from published Spark figures:

    ====================  =========  ==================================================
    stage                 s / MB     reason
    ====================  =========  ==================================================
    wordcount.map         0.05       20 MB/s per core: read, split, count per block
    wordcount.reduce      0.05       of its shuffle input
    ml.iter1              0.10       10 MB/s: reading and parsing text dominates
    ml.iterK (K >= 2)     0.01       later iterations run several times (k-means) to
                                     tens of times (logistic regression) faster than
                                     the first in the Spark papers; 10x between
    pagerank.parse        0.05       split the edge list, map side of ``distinct``
    pagerank.distinct     0.05       of its shuffle input
    pagerank.iter1        0.05+0.20  build the links (``groupByKey``), then an iteration
    pagerank.iterK        0.20       join, ``flatMap`` and combine per MB of links: about
                                     5 MB/s per core, as GraphX's PageRank on 1.27 G
                                     edges of about 20 bytes (SPARK-3427: 40 s per
                                     iteration on 128 cores)
    pagerank.ranks        0.05       of its shuffle input
    ====================  =========  ==================================================

    Shuffles: WordCount's combined map output is 10% of its input (a natural-language
    vocabulary); ``distinct`` and ``groupByKey`` each move the whole edge list; an
    iteration's combined contributions are 30% of the links. The cached ML points are as
    large as their text. Each task's work is multiplied by a gamma factor of mean 1 and
    coefficient of variation ``work_cv`` (default 0.1: partition skew), drawn once per
    task; ``task_cv`` (default 0) adds per-copy variability (see ``Workload.task_cv``).

Units: data in MB, work in MI (seconds on the reference core times ``reference_mips``).
Draw order: arrivals, the applications and classes, the input sizes, the iteration
counts (both drawn for every job), the blocks' clusters, the work factors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from geosim.errors import GeosimError
from geosim.workload.core import (
    REFERENCE_MIPS,
    Workload,
    check_count,
    check_positive,
    check_range,
    gamma_noise,
    input_sites,
    poisson_arrivals,
)

__all__ = ["SPARK_APPS", "TABLE1_INPUT_MB", "TABLE1_SIZE_MIX", "SparkCosts", "spark_app_draws",
           "spark_app_jobs", "spark_expected_size", "spark_scenario_jobs", "spark_type_names"]

SPARK_APPS: tuple[str, ...] = ("wordcount", "ml", "pagerank")
"""The applications of 003 §5, in the order of ``app_weights`` and :data:`TABLE1_INPUT_MB`."""

TABLE1_SIZE_MIX: tuple[float, float, float] = (0.46, 0.40, 0.14)
"""Shares of small, medium and large jobs (003 Table 1)."""

TABLE1_INPUT_MB: tuple[tuple[tuple[float, float], ...], ...] = (
    ((100.0, 200.0), (700.0, 1500.0), (3000.0, 5000.0)),      # WordCount
    ((130.0, 300.0), (1300.0, 1800.0), (2500.0, 4000.0)),     # iterative ML
    ((150.0, 400.0), (1000.0, 2000.0), (3500.0, 6000.0)),     # PageRank
)
"""Input size ranges (MB) per application and class (003 Table 1): ``[app][class]``."""

_WC, _ML, _PR = range(3)


@dataclass(frozen=True)
class SparkCosts:
    """Compute per MB (seconds on the reference core) and shuffle ratios of the stages.

    Attributes:
        wordcount_map: s/MB of a block: read, split and count.
        wordcount_shuffle: Combined map output per MB of input.
        wordcount_reduce: s/MB of shuffle input.
        ml_load: s/MB of a block: read, parse, cache and the first gradient.
        ml_cache: Cached points per MB of input text.
        ml_iteration: s/MB of cached points, per later iteration.
        pagerank_parse: s/MB of a block: split the edges, map side of ``distinct``.
        pagerank_distinct: s/MB of shuffle input: reduce side of ``distinct``, map side
            of ``groupByKey``.
        pagerank_links: s/MB of shuffle input: build the cached links (``groupByKey``).
        pagerank_iteration: s/MB of links: join with the ranks, ``flatMap``, combine.
        pagerank_contrib: Combined contributions per MB of links, per iteration.
        pagerank_ranks: s/MB of shuffle input: the last ranks, collected.
    """

    wordcount_map: float = 0.05
    wordcount_shuffle: float = 0.10
    wordcount_reduce: float = 0.05
    ml_load: float = 0.10
    ml_cache: float = 1.0
    ml_iteration: float = 0.01
    pagerank_parse: float = 0.05
    pagerank_distinct: float = 0.05
    pagerank_links: float = 0.05
    pagerank_iteration: float = 0.20
    pagerank_contrib: float = 0.30
    pagerank_ranks: float = 0.05

    def __post_init__(self) -> None:
        for f in fields(self):
            check_positive(getattr(self, f.name), f"SparkCosts.{f.name}")


def spark_type_names(ml_iterations: int, pagerank_iterations: int) -> tuple[str, ...]:
    """Task type names for jobs of at most the given iteration counts (one per stage).

    Args:
        ml_iterations: Most iterations of an ML job.
        pagerank_iterations: Most iterations of a PageRank job.

    Returns:
        ``wordcount.map``, ``wordcount.reduce``, ``ml.iter1``..., ``pagerank.parse``,
        ``pagerank.distinct``, ``pagerank.iter1``..., ``pagerank.ranks``.
    """
    return (("wordcount.map", "wordcount.reduce")
            + tuple(f"ml.iter{k}" for k in range(1, ml_iterations + 1))
            + ("pagerank.parse", "pagerank.distinct")
            + tuple(f"pagerank.iter{k}" for k in range(1, pagerank_iterations + 1))
            + ("pagerank.ranks",))


def _shares(values: Any, name: str, n: int) -> np.ndarray:
    """``n`` non-negative weights with a positive sum, normalised to 1."""
    try:
        w = np.asarray([float(v) for v in values], dtype=np.float64)
    except (TypeError, ValueError):
        raise GeosimError(f"{name} must be {n} numbers, got {values!r}") from None
    if w.shape != (n,) or not np.all(np.isfinite(w)) or (w < 0).any() or w.sum() <= 0:
        raise GeosimError(f"{name} must be {n} non-negative numbers with a positive sum, "
                          f"got {values!r}")
    return w / w.sum()


def _largest_remainder(n: int, p: np.ndarray) -> np.ndarray:
    """Counts summing to ``n`` in proportion ``p`` (largest remainder, ties to the first)."""
    exact = n * p
    counts = np.floor(exact + 1e-9).astype(np.int64)
    left = n - int(counts.sum())
    order = np.lexsort((np.arange(p.size), -(exact - counts)))
    counts[order[:left]] += 1
    return counts


def spark_app_draws(n_jobs: int, rng: np.random.Generator, *,
                    app_weights: Sequence[float] = (1.0, 1.0, 1.0),
                    size_mix: Sequence[float] = TABLE1_SIZE_MIX,
                    exact_mix: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Application and size class of every job.

    Args:
        n_jobs: Number of jobs.
        rng: Random generator.
        app_weights: Relative frequencies of WordCount, iterative ML and PageRank.
        size_mix: Shares of small, medium and large jobs.
        exact_mix: Hold the proportions exactly (largest remainder), in random order and
            randomly paired; otherwise draw each job's application and class independently.

    Returns:
        ``(app, size_class)``: int64[n_jobs] indices into :data:`SPARK_APPS` and into
        (small, medium, large).
    """
    n = check_count(n_jobs, "n_jobs")
    pa = _shares(app_weights, "app_weights", 3)
    pc = _shares(size_mix, "size_mix", 3)
    if exact_mix:
        app = rng.permutation(np.repeat(np.arange(3), _largest_remainder(n, pa)))
        cls = rng.permutation(np.repeat(np.arange(3), _largest_remainder(n, pc)))
        return app.astype(np.int64), cls.astype(np.int64)
    app = rng.choice(3, size=n, p=pa)
    cls = rng.choice(3, size=n, p=pc)
    return app.astype(np.int64), cls.astype(np.int64)


def _all_to_all(lo_src: int, lo_dst: int, out: np.ndarray, p: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Shuffle edges from ``p`` tasks at ``lo_src`` to ``p`` tasks at ``lo_dst``.

    Task i sends ``out[i] / p`` MB to each task of the next stage (hash partitioning).
    """
    i = np.repeat(np.arange(p), p)
    j = np.tile(np.arange(p), p)
    return lo_src + i, lo_dst + j, np.repeat(out / p, p)


def _job(app: int, blocks: np.ndarray, iterations: int, c: SparkCosts,
         offsets: Mapping[str, int]) -> tuple[np.ndarray, ...]:
    """Local stages, types, work (s), raw-block flags and edges of one job.

    Returns:
        ``(stage, type, work, has_raw, src, dst, size)``; the first ``p`` tasks read the
        blocks, in order.
    """
    p = blocks.size
    total = float(blocks.sum())
    src: list[np.ndarray] = []
    dst: list[np.ndarray] = []
    size: list[np.ndarray] = []

    def shuffle(s_from: int, out: np.ndarray) -> None:
        a, b, m = _all_to_all(s_from * p, (s_from + 1) * p, out, p)
        src.append(a)
        dst.append(b)
        size.append(m)

    if app == _WC:
        n_stages = 2
        types = np.repeat([offsets["wordcount.map"], offsets["wordcount.reduce"]], p)
        shuffle(0, c.wordcount_shuffle * blocks)
        reduce_in = np.full(p, c.wordcount_shuffle * total / p)
        work = np.concatenate([c.wordcount_map * blocks, c.wordcount_reduce * reduce_in])
    elif app == _ML:
        n_stages = iterations
        types = np.repeat(offsets["ml.iter1"] + np.arange(iterations), p)
        cached = c.ml_cache * blocks
        work = np.concatenate([c.ml_load * blocks]
                              + [c.ml_iteration * cached] * (iterations - 1))
        for s in range(1, iterations):
            src.append((s - 1) * p + np.arange(p))
            dst.append(s * p + np.arange(p))
            size.append(cached)
    else:
        n_stages = iterations + 3
        types = np.repeat(np.concatenate([
            [offsets["pagerank.parse"], offsets["pagerank.distinct"]],
            offsets["pagerank.iter1"] + np.arange(iterations), [offsets["pagerank.ranks"]]]), p)
        links = np.full(p, total / p)
        contrib = c.pagerank_contrib * links
        shuffle(0, blocks)                       # distinct: the whole edge list
        shuffle(1, links)                        # groupByKey: the whole edge list again
        for s in range(2, iterations + 2):       # contributions of iteration s - 1
            a, b, m = _all_to_all(s * p, (s + 1) * p, contrib, p)
            if s < iterations + 1:               # the next iteration reads links i too
                m = m + np.where(a - s * p == b - (s + 1) * p, np.repeat(links, p), 0.0)
            src.append(a)
            dst.append(b)
            size.append(m)
        work = np.concatenate([c.pagerank_parse * blocks, c.pagerank_distinct * links,
                               (c.pagerank_links + c.pagerank_iteration) * links]
                              + [c.pagerank_iteration * links] * (iterations - 1)
                              + [c.pagerank_ranks * contrib])
    stage = np.repeat(np.arange(n_stages, dtype=np.int32), p)
    has_raw = np.zeros(n_stages * p, dtype=bool)
    has_raw[:p] = True
    e = np.zeros(0, dtype=np.int64)
    return (stage, types.astype(np.int32), work, has_raw,
            np.concatenate(src) if src else e, np.concatenate(dst) if dst else e,
            np.concatenate(size) if size else np.zeros(0))


def _blocks(total: float, block_mb: float) -> np.ndarray:
    """Sizes of the HDFS blocks of a ``total``-MB input (the last one holds the rest)."""
    full = int(total // block_mb)
    rest = total - full * block_mb
    sizes = np.full(full, block_mb)
    return np.append(sizes, rest) if rest > 1e-9 or full == 0 else sizes


def spark_app_jobs(n_jobs: int, arrival_rate: float, rng: np.random.Generator, *,
                   input_clusters: np.ndarray, input_probs: np.ndarray | None = None,
                   app_weights: Sequence[float] = (1.0, 1.0, 1.0),
                   size_mix: Sequence[float] = TABLE1_SIZE_MIX,
                   input_mb: Sequence[Sequence[tuple[float, float]]] = TABLE1_INPUT_MB,
                   exact_mix: bool = True, block_mb: float = 128.0,
                   ml_iterations: int | tuple[int, int] = 10,
                   pagerank_iterations: int | tuple[int, int] = 10,
                   costs: SparkCosts | None = None, work_cv: float = 0.1,
                   task_cv: float = 0.0, reference_mips: float = REFERENCE_MIPS,
                   start: float = 0.0) -> Workload:
    """003's prototype workload (§5, Table 1): a Poisson stream of Spark applications.

    See the module docstring for the applications' stages, data and work.

    Args:
        n_jobs: Number of jobs (003 §5: 88).
        arrival_rate: Poisson arrival rate, jobs per second (003 §5: 3 per 5 minutes).
        rng: Random generator.
        input_clusters: Clusters that may store input blocks.
        input_probs: Weights of ``input_clusters`` (uniform if None).
        app_weights: Relative frequencies of WordCount, iterative ML and PageRank.
        size_mix: Shares of small, medium and large jobs (Table 1: 46%, 40%, 14%).
        input_mb: Input size range (MB) per application and class, ``[app][class]``.
        exact_mix: Hold the application and class proportions exactly (see
            :func:`spark_app_draws`).
        block_mb: HDFS block size (MB): one map-side task per block.
        ml_iterations: Iterations of an ML job, or a ``(low, high)`` range drawn per job.
        pagerank_iterations: Iterations of a PageRank job, or a range drawn per job.
        costs: Compute and shuffle figures of the stages (default :class:`SparkCosts`).
        work_cv: Coefficient of variation of each task's work (gamma, mean 1).
        task_cv: Coefficient of variation of each copy's own work around its task's.
        reference_mips: MIPS of the core the costs are seconds on.
        start: Time origin of the arrivals.

    Returns:
        The workload, with type names :func:`spark_type_names` of the largest iteration
        counts.

    Raises:
        GeosimError: On an invalid parameter.
    """
    clusters, probs = input_sites(input_clusters, input_probs)
    c = costs if costs is not None else SparkCosts()
    ranges = np.asarray(input_mb, dtype=np.float64)
    if ranges.shape != (3, 3, 2) or not np.all(np.isfinite(ranges)) or \
            (ranges[..., 0] <= 0).any() or (ranges[..., 1] < ranges[..., 0]).any():
        raise GeosimError("input_mb must give a (low, high) MB range with 0 < low <= high "
                          f"for each of 3 applications and 3 classes, got {input_mb!r}")
    block = check_positive(block_mb, "block_mb")
    ml_lo, ml_hi = check_range(ml_iterations, "ml_iterations", integer=True, minimum=1)
    pr_lo, pr_hi = check_range(pagerank_iterations, "pagerank_iterations", integer=True,
                                minimum=1)
    work_cv = check_positive(work_cv, "work_cv", allow_zero=True)
    task_cv = check_positive(task_cv, "task_cv", allow_zero=True)
    mips = check_positive(reference_mips, "reference_mips")

    arrival = poisson_arrivals(n_jobs, arrival_rate, rng, start)
    nj = arrival.shape[0]
    app, cls = spark_app_draws(nj, rng, app_weights=app_weights, size_mix=size_mix,
                               exact_mix=exact_mix)
    lo, hi = ranges[app, cls, 0], ranges[app, cls, 1]
    total = rng.uniform(lo, hi) if nj else np.zeros(0)
    ml_k = rng.integers(ml_lo, ml_hi + 1, nj)
    pr_k = rng.integers(pr_lo, pr_hi + 1, nj)

    names = spark_type_names(ml_hi, pr_hi)
    offsets = {name: i for i, name in enumerate(names)}
    parts: list[tuple[np.ndarray, ...]] = []
    block_l: list[np.ndarray] = []
    counts = np.zeros(nj, dtype=np.int64)
    offset = 0
    for j in range(nj):
        blocks = _blocks(float(total[j]), block)
        k = int(ml_k[j] if app[j] == _ML else pr_k[j])
        stage, types, work, has_raw, src, dst, size = _job(int(app[j]), blocks, k, c, offsets)
        parts.append((stage, types, work, has_raw, src + offset, dst + offset, size))
        block_l.append(blocks)
        counts[j] = stage.size
        offset += stage.size

    def cat(i: int, dtype: type) -> np.ndarray:
        return np.concatenate([q[i] for q in parts]).astype(dtype) if parts else \
            np.zeros(0, dtype=dtype)

    stage, ttype, seconds, has_raw = cat(0, np.int32), cat(1, np.int32), cat(2, np.float64), \
        cat(3, bool)
    src, dst, size = cat(4, np.int64), cat(5, np.int64), cat(6, np.float64)
    order = np.lexsort((src, dst))
    raw_size = np.concatenate(block_l) if block_l else np.zeros(0)
    raw_cluster = clusters[rng.choice(clusters.shape[0], size=raw_size.shape[0], p=probs)] \
        if raw_size.size else np.zeros(0, dtype=np.int64)
    nt = offset
    work = seconds * mips * gamma_noise(rng, work_cv, nt)
    return Workload(
        arrival=arrival, weight=np.ones(nj),
        task_ptr=np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
        task_work=work, task_type=ttype, type_names=names,
        edge_src=src[order], edge_dst=dst[order], edge_size=size[order],
        raw_ptr=np.concatenate(([0], np.cumsum(has_raw))).astype(np.int64),
        raw_cluster=raw_cluster, raw_size=raw_size, task_stage=stage,
        task_cv=np.full(nt, task_cv))


def spark_expected_size(workload: Mapping[str, Any]) -> tuple[float, float]:
    """Expected tasks and DAG edges per job of a scenario's ``[workload]`` (``spark``).

    For the memory estimate before a run: every stage of a job has ``p`` tasks (its HDFS
    blocks); an all-to-all shuffle has ``p²`` edges, a partition-wise dependency ``p``.
    ``p`` is taken as ``input / block + 1/2`` at the middle of each Table 1 range.
    """
    apps = _shares(workload["spark_app_weights"], "spark_app_weights", 3)
    sizes = _shares(workload["spark_size_mix"], "spark_size_mix", 3)
    block = float(workload["spark_block_mb"])
    k_ml = float(np.mean(workload["spark_ml_iterations"]))
    k_pr = float(np.mean(workload["spark_pagerank_iterations"]))
    # (stages, all-to-all shuffles, partition-wise dependencies) per application
    shape = {_WC: (2.0, 1.0, 0.0), _ML: (k_ml, 0.0, k_ml - 1),
             _PR: (k_pr + 3, k_pr + 2, k_pr)}
    tasks = edges = 0.0
    for app, (stages, shuffles, local) in shape.items():
        for cls in range(3):
            lo, hi = TABLE1_INPUT_MB[app][cls]
            p = 0.5 * (lo + hi) / block + 0.5
            weight = apps[app] * sizes[cls]
            tasks += weight * stages * p
            edges += weight * (shuffles * p * p + local * p)
    return tasks, edges


def spark_scenario_jobs(workload: Mapping[str, Any], input_clusters: np.ndarray,
                        rng: np.random.Generator) -> Workload:
    """:func:`spark_app_jobs` with the keys of a scenario's ``[workload]`` section.

    Args:
        workload: The validated ``[workload]`` section (``kind = "spark"``).
        input_clusters: Clusters that may store input blocks (the world's).
        rng: The run's workload generator.

    Returns:
        The workload.
    """
    def pair(value: Any) -> int | tuple[int, int]:
        return (int(value[0]), int(value[-1])) if isinstance(value, list) else int(value)

    return spark_app_jobs(
        workload["n_jobs"], workload["arrival_rate"], rng, input_clusters=input_clusters,
        app_weights=workload["spark_app_weights"], size_mix=workload["spark_size_mix"],
        exact_mix=workload["spark_exact_mix"], block_mb=workload["spark_block_mb"],
        ml_iterations=pair(workload["spark_ml_iterations"]),
        pagerank_iterations=pair(workload["spark_pagerank_iterations"]),
        work_cv=workload["spark_work_cv"], reference_mips=workload["reference_mips"])
