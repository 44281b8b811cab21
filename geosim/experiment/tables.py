"""The tables of a comparison of schedulers (:class:`Comparison`) and their text form.

``summary``
    One row per scheduler label. ``mean_flowtime`` is the mean over replications of each
    run's mean flowtime; ``ci95`` the half-width of its 95% confidence interval: Student's
    t over the replications' means when there are two or more, and with one replication
    the method of batch means (the run's jobs in arrival order cut into 10 batches of
    consecutive jobs; t with 9 degrees of freedom over the batch means). Percentiles and
    the ``within_<T>`` fractions (flowtime at most ``T`` seconds) pool every job of every
    replication. ``copies_per_task`` is copies launched over tasks, over all runs;
    ``wasted_slot_seconds`` the mean per run. With a baseline, ``reduction_mean`` and
    ``reduction_median`` summarise the per-job flowtime reduction ratios,
    ``slower`` is the fraction of jobs slower than under the baseline, and
    ``paired_diff`` / ``paired_ci95`` the change of the mean flowtime against the baseline
    taken job by job (common random numbers) with the half-width of its 95% interval by
    batch means over every seed (:func:`~geosim.experiment.stats.paired_difference`);
    :meth:`Comparison.format` ends with one verdict line per scheduler
    (:func:`~geosim.experiment.stats.verdict`).
``per_job``
    One row per scheduler and job id: the job's flowtime averaged over the replications
    (PingAn's evaluation, 003 §6.1) and, with a baseline, its reduction ratio
    ``(F_base - F) / F_base`` (:func:`~geosim.experiment.stats.reductions`). Each seed
    draws its own workload, so job ``j`` of two replications are different jobs: the
    average is over the job index, and within each replication it is the same job under
    every scheduler.
``runs``
    One row per run: label, seed and every number of the run's summary.

Jobs that did not finish (a run stopped at ``run.horizon``) are left out of every
flowtime statistic and counted in ``unfinished``; a job's replication average needs the
job to finish in every replication.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geosim.experiment.outcome import RunOutcome
from geosim.experiment.stats import (
    _ci95,
    _weighted_mean,
    paired_difference,
    reductions,
    verdict,
)
from geosim.scenario import Scenario

#: Default ``within`` thresholds (s): the fraction of jobs finishing within each.
WITHIN = (40.0, 200.0, 800.0)


def _within_column(threshold: float) -> str:
    return f"within_{threshold:g}"


def per_job_table(jobs: pd.DataFrame, labels: Sequence[str],
                  baseline: str | None) -> pd.DataFrame:
    """Each job's flowtime averaged over replications, per label, and its reduction ratio.

    A job that did not finish in every replication has no average (NaN). The reduction
    ratio is ``(F_base - F) / F_base`` against the baseline's average
    (:func:`~geosim.experiment.stats.reductions`); NaN without a baseline.
    """
    tables = []
    for label in labels:
        mine = jobs[jobs["label"] == label]
        flow = mine["flowtime"].where(mine["finished"])
        wide = mine.assign(flowtime=flow).pivot(index="job", columns="seed", values="flowtime")
        tables.append(pd.DataFrame({"label": label, "job": wide.index.to_numpy(),
                                    "flowtime": wide.mean(axis=1, skipna=False).to_numpy()}))
    table = pd.concat(tables, ignore_index=True)
    table["reduction"] = math.nan
    if baseline is not None:
        table["reduction"] = reductions(table, baseline)
    return table


def _summary_row(label: str, runs: pd.DataFrame, jobs: pd.DataFrame, per_job: pd.DataFrame,
                 within: Sequence[float], baseline: str | None,
                 base_jobs: pd.DataFrame | None = None) -> dict[str, Any]:
    done = jobs.loc[jobs["finished"], "flowtime"].to_numpy()
    run_means = jobs[jobs["finished"]].groupby("seed")["flowtime"].mean() \
        .reindex(runs["seed"]).to_numpy()

    def q(p: float) -> float:
        return float(np.percentile(done, p)) if done.size else math.nan

    row: dict[str, Any] = {
        "label": label,
        "runs": len(runs),
        "jobs": len(jobs),
        "unfinished": int((~jobs["finished"]).sum()),
        "mean_flowtime": float(np.nanmean(run_means)) if np.isfinite(run_means).any()
        else math.nan,
        "ci95": _ci95(jobs, run_means),
        "weighted_mean_flowtime": _weighted_mean(jobs, runs),
        "p50_flowtime": q(50), "p95_flowtime": q(95), "p99_flowtime": q(99),
    }
    for t in within:
        row[_within_column(t)] = float(np.mean(done <= t)) if done.size else math.nan
    tasks = runs["tasks"].sum()
    row["copies_per_task"] = float(runs["copies_launched"].sum() / tasks) if tasks else math.nan
    row["wasted_slot_seconds"] = float(runs["wasted_slot_seconds"].mean())
    if baseline is not None:
        ratio = per_job.loc[per_job["label"] == label, "reduction"].dropna().to_numpy()
        row["reduction_mean"] = float(ratio.mean()) if ratio.size else math.nan
        row["reduction_median"] = float(np.median(ratio)) if ratio.size else math.nan
        row["slower"] = float(np.mean(ratio < 0)) if ratio.size else math.nan
        row["paired_diff"], row["paired_ci95"] = paired_difference(
            jobs, base_jobs, weighted=bool((jobs["weight"] != 1.0).any()))
    return row


def build_comparison(outcomes: Sequence[RunOutcome], labels: Sequence[str],
                     seeds: Sequence[int], baseline: str | None = None,
                     within: Sequence[float] = WITHIN) -> Comparison:
    """Assemble the comparison tables from run outcomes (one per label and seed)."""
    by_key = {(o.label, o.seed): o for o in outcomes}
    ordered = [by_key[(label, seed)] for label in labels for seed in seeds]
    runs = pd.DataFrame([{"label": o.label, "seed": o.seed,
                          **{k: v for k, v in o.summary.items() if k != "seed"}}
                         for o in ordered])
    first = ["label", "scheduler", "seed"]
    runs = runs[[c for c in first if c in runs] + [c for c in runs if c not in first]]
    jobs = pd.concat([o.jobs.assign(label=o.label, seed=o.seed) for o in ordered],
                     ignore_index=True)
    jobs["finished"] = jobs["finished"].astype(bool)
    per_job = per_job_table(jobs, labels, baseline)
    base_jobs = jobs[jobs["label"] == baseline] if baseline is not None else None
    rows = [_summary_row(label, runs[runs["label"] == label], jobs[jobs["label"] == label],
                         per_job, within, baseline, base_jobs) for label in labels]
    weighted = bool((jobs["weight"] != 1.0).any())
    return Comparison(pd.DataFrame(rows), runs, per_job, baseline, tuple(within),
                      weighted=weighted)


@dataclass
class Comparison:
    """Tables of a comparison of schedulers (see the module documentation).

    Attributes:
        summary: One row per scheduler label.
        runs: One row per run: label, scheduler, seed and every summary number.
        per_job: One row per label and job: replication-averaged flowtime, reduction.
        baseline: The baseline label, if any.
        within: The flowtime thresholds of the ``within_<T>`` columns.
        out: The comparison directory, if one was written.
    """

    summary: pd.DataFrame
    runs: pd.DataFrame
    per_job: pd.DataFrame
    baseline: str | None = None
    within: tuple[float, ...] = WITHIN
    out: Path | None = None
    #: Whether jobs carry different weights (the table then shows the weighted mean).
    weighted: bool = False
    #: Flows of MapReduce jobs (004): one row per label, seed and metric of 004 Tables 1-2
    #: with the cost, the lower bound and their ratio (:mod:`geosim.flowcost`).
    flows: pd.DataFrame | None = None
    #: Saved runs of the directory that were found damaged and made again (one line each).
    redone: tuple[str, ...] = ()

    def format(self) -> str:
        """The summary as an aligned text table."""
        columns: list[tuple[str, str, Callable[[Any], str]]] = [
            ("scheduler", "label", str),
            ("runs", "runs", str),
            ("unfinished", "unfinished", str),
            ("mean (s)", "mean_flowtime", _num),
            ("±95% CI", "ci95", _num),
            *((("weighted (s)", "weighted_mean_flowtime", _num),) if self.weighted else ()),
            ("p50", "p50_flowtime", _num),
            ("p95", "p95_flowtime", _num),
            ("p99", "p99_flowtime", _num),
            *((f"<={t:g}s", _within_column(t), _pct) for t in self.within),
            ("copies/task", "copies_per_task", lambda v: f"{v:.2f}" if _finite(v) else "-"),
            ("wasted slot-s", "wasted_slot_seconds", lambda v: f"{v:.0f}" if _finite(v) else "-"),
        ]
        if self.baseline is not None:
            columns += [("Δ mean (paired)", "paired_diff", _signed_pct),
                        ("±95%", "paired_ci95", _pct),
                        ("reduction mean", "reduction_mean", _pct),
                        ("median", "reduction_median", _pct), ("slower", "slower", _pct)]
        cells = [[head for head, _, _ in columns]]
        cells += [[fmt(row[key]) for _, key, fmt in columns]
                  for row in self.summary.to_dict("records")]
        widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
        lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                           for i, (c, w) in enumerate(zip(r, widths, strict=True)))
                 for r in cells]
        if self.baseline is not None:
            lines.append(f"Δ mean (paired): change of the mean flowtime against {self.baseline}, "
                         "job by job under common random numbers, 95% interval by batch "
                         "means; reduction: per-job flowtime reduction (F_base - F) / F_base; "
                         "slower: share of jobs slower than under it")
            lines += [verdict(row["label"], self.baseline, row["paired_diff"],
                              row["paired_ci95"])
                      for row in self.summary.to_dict("records")
                      if row["label"] != self.baseline]
        if self.flows is not None:
            lines += ["", self.format_flows()]
        return "\n".join(line.rstrip() for line in lines)

    def format_flows(self) -> str:
        """The flow cost metrics: per metric and label, mean cost and ratio (mean / worst)."""
        f = self.flows
        labels = list(dict.fromkeys(f["label"]))
        grouped = f.groupby(["metric", "label"], sort=False)
        cost, mean, worst = grouped["cost"].mean(), grouped["ratio"].mean(), \
            grouped["ratio"].max()
        bound = f.groupby("metric", sort=False)["bound"].mean()
        cells = [["metric", "bound", *labels]]
        for metric in dict.fromkeys(f["metric"]):
            cells.append([metric, f"{bound[metric]:.4g}", *(
                f"{cost[metric, lab]:.4g} ({mean[metric, lab]:.2f}/{worst[metric, lab]:.2f})"
                for lab in labels)])
        widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
        lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                           for i, (c, w) in enumerate(zip(r, widths, strict=True)))
                 for r in cells]
        lines.append("flow costs in time units of workload.flow_time_unit, averaged over seeds; "
                     "(mean/worst) ratio (cost + 1) / (lower bound + 1) over seeds (004 §3)")
        return "\n".join(lines)


def _finite(value: Any) -> bool:
    return value is not None and math.isfinite(value)


def _num(value: Any) -> str:
    return f"{value:.1f}" if _finite(value) else "-"


def _pct(value: Any) -> str:
    return f"{100 * value:.1f}%" if _finite(value) else "-"


def _signed_pct(value: Any) -> str:
    return f"{100 * value:+.1f}%" if _finite(value) else "-"


def flow_table(scenario: Scenario, outcomes: Sequence[RunOutcome], labels: Sequence[str],
               seeds: Sequence[int]) -> pd.DataFrame:
    """Cost, lower bound and ratio of every metric of 004 Tables 1-2, per label and seed.

    The bound is computed once per seed, on that seed's flows, so every label's ratio in a
    replication divides by the same number.
    """
    from geosim.flowcost import flow_bounds, ratio
    from geosim.inputs import world_and_workload
    unit = scenario["workload"]["flow_time_unit"]
    by_key = {(o.label, o.seed): o for o in outcomes}
    rows = []
    for seed in seeds:
        world, workload = world_and_workload(scenario, seed)
        bounds = flow_bounds(workload, world.n_slots, unit)
        for label in labels:
            summary = by_key[(label, seed)].summary
            rows += [{"label": label, "seed": seed, "metric": m, "cost": summary[f"flow {m}"],
                      "bound": b, "ratio": float(ratio(summary[f"flow {m}"], b))}
                     for m, b in bounds.items()]
    return pd.DataFrame(rows)
