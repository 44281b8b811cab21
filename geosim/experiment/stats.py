"""The statistics of a comparison: intervals, paired differences, reductions, verdicts.

Pure functions of numbers and job tables; nothing here runs or reads anything.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

#: Batches of the batch-means confidence interval of a single replication.
BATCHES = 10


def t_halfwidth(values: Sequence[float] | np.ndarray, level: float = 0.95) -> float:
    """Half-width of the Student-t confidence interval of the mean of ``values``.

    NaN values are ignored; fewer than two values give NaN.
    """
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size < 2:
        return math.nan
    from scipy import stats
    t = stats.t.ppf(0.5 + level / 2, x.size - 1)
    return float(t * x.std(ddof=1) / math.sqrt(x.size))


def batch_means(values: Sequence[float] | np.ndarray, batches: int = BATCHES) -> np.ndarray:
    """Means of ``batches`` batches of consecutive values (sizes differ by at most one).

    Fewer values than batches give an empty array.
    """
    x = np.asarray(values, dtype=float)
    if x.size < batches:
        return np.empty(0)
    return np.array([b.mean() for b in np.array_split(x, batches)])


def paired_difference(jobs: pd.DataFrame, reference: pd.DataFrame, weighted: bool = False,
                      batches: int = BATCHES) -> tuple[float, float]:
    """Paired difference of the (weighted) mean flowtime against a reference.

    Both frames hold the same jobs (columns ``seed``, ``job``, ``flowtime``, ``finished``,
    ``weight``): under common random numbers job j of seed s is the same job under both
    schedulers, so the differences ``w_j (F_j - F_ref,j)`` are taken job by job (jobs
    finished under both). They are correlated within a run, so each seed's jobs, in
    arrival order, are cut into ``batches`` batches and the interval is Student's t over
    all seeds' batch means.

    Returns:
        The mean difference relative to the reference's (weighted) mean, and the half-width
        of its 95% interval in the same units (NaN when there are too few jobs).
    """
    key = ["seed", "job"]
    both = jobs.merge(reference, on=key, suffixes=("", "_ref")).sort_values(key)
    both = both[both["finished"].astype(bool) & both["finished_ref"].astype(bool)]
    if both.empty:
        return math.nan, math.nan
    w = both["weight"].to_numpy(dtype=float) if weighted else np.ones(len(both))
    d = w * (both["flowtime"] - both["flowtime_ref"]).to_numpy()
    means = np.concatenate([batch_means(d[idx], batches) / w[idx].mean()
                            for idx in both.groupby("seed").indices.values()])
    ref = float(np.sum(w * both["flowtime_ref"].to_numpy()) / w.sum())
    return float(d.sum() / w.sum() / ref), t_halfwidth(means) / ref


def paired_change(flowtimes: np.ndarray, reference: np.ndarray,
                  batches: int = BATCHES) -> tuple[float, float]:
    """:func:`paired_difference` of one run, unweighted, from arrays.

    Args:
        flowtimes: Flowtimes of the jobs finished under both schedulers, in arrival order.
        reference: The same jobs' flowtimes under the reference scheduler.
        batches: Batches of the batch-means interval.

    Returns:
        The mean difference relative to the reference's mean flowtime, and the half-width
        of its 95% interval (NaN when there are too few jobs); NaN, NaN without jobs.
    """
    d = np.asarray(flowtimes, dtype=float) - np.asarray(reference, dtype=float)
    if not d.size:
        return math.nan, math.nan
    ref = float(np.mean(reference))
    return float(d.mean() / ref), t_halfwidth(batch_means(d, batches)) / ref


def verdict(label: str, baseline: str, diff: float, half: float) -> str:
    """One line: the paired change of the mean flowtime and whether it is decided."""
    if not math.isfinite(diff):
        return f"{label} vs {baseline}: no job finished under both"
    if not math.isfinite(half):
        return f"{label} vs {baseline}: {100 * diff:+.1f}% (too few jobs for an interval)"
    span = f"{100 * diff:+.1f}% [{100 * (diff - half):+.1f}, {100 * (diff + half):+.1f}]"
    if diff - half > 0:
        return f"{label} vs {baseline}: {span}: slower"
    if diff + half < 0:
        return f"{label} vs {baseline}: {span}: faster"
    return f"{label} vs {baseline}: {span}: undecided (the interval contains 0)"


def reductions(per_job: pd.DataFrame, baseline: str) -> np.ndarray:
    """Each row's flowtime reduction ratio ``(F_base - F) / F_base`` against ``baseline``.

    Args:
        per_job: One row per label and job (columns ``label``, ``job``, ``flowtime``), as
            :func:`~geosim.experiment.per_job_table` makes it.
        baseline: The label whose flowtimes ``F_base`` are the reference, job by job.

    Returns:
        One ratio per row of ``per_job``, in its order: positive when the job was faster
        than under the baseline; NaN when either flowtime is unknown (a job that did not
        finish in every replication) or the label is not in the table.
    """
    base = per_job[per_job["label"] == baseline].set_index("job")["flowtime"]
    ref = base.reindex(per_job["job"]).to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        return (ref - per_job["flowtime"].to_numpy()) / ref


def _ci95(jobs: pd.DataFrame, run_means: np.ndarray) -> float:
    """CI half-width of the mean flowtime: over replications, or batch means of one."""
    if len(run_means) >= 2:
        return t_halfwidth(run_means)
    done = jobs[jobs["finished"]].sort_values(["arrival", "job"], kind="stable")
    return t_halfwidth(batch_means(done["flowtime"].to_numpy()))


def _weighted_mean(jobs: pd.DataFrame, runs: pd.DataFrame) -> float:
    """Mean over replications of each run's weighted mean flowtime ``sum wF / sum w``."""
    done = jobs[jobs["finished"]]
    if done.empty:
        return math.nan
    weight = done["weight"]
    per_seed = (done["flowtime"] * weight).groupby(done["seed"]).sum() \
        / weight.groupby(done["seed"]).sum()
    return float(per_seed.reindex(runs["seed"]).mean())
