"""Reproduce the task-cloning evaluation (000 §VI) on ``scenarios/cloning-google.toml``.

Studies, each on the same jobs and copy draws for every scheduler (common random
numbers: the k-th copy of a task draws the same work under every scheduler):

- ``epsilon``: SRPTMS+C with r = 0 and ε ∈ {0.2, 0.4, 0.6, 0.8, 1.0} (Fig. 1);
- ``epsilon-ready``: ε ∈ {0.2, 0.6, 1.0} with ψ of ready jobs only (isolates 000's
  sharing set from the workload);
- ``r``: SRPTMS+C with ε = 0.6 and r ∈ {0, 1, 3, 5, 8} (Fig. 2);
- ``machines``: SRPTMS+C (ε = 0.6, r = 3) on 8 000 and on 12 000 machines (Fig. 3);
- ``baselines``: SRPTMS+C (as written; with ψ of ready jobs only; with at most 2 copies
  per task, under either ψ) against Smart Cloning, 000's Mantri with the observed estimator (the
  reference: progress reports, t_new from the phase's completed copies, a check when a
  machine becomes free), the same with noisy reports, the same Mantri reading exact
  progress and the task's known law (the model estimator), and 000's Algorithm 1
  (Figs. 4-6);
- ``before``: the same comparison as it was before 000's sharing set, the split
  duration law and Mantri's estimator: the ``"pareto"`` law, ψ of ready jobs, Mantri's
  model estimator;
- ``before-sweeps``: Fig. 1 (ε ∈ {0.2, 0.6, 1.0}) and Fig. 3 as they were before;
- ``floor`` (not run by default): what no scheduler can beat on either law;
- ``contention`` (not run by default): ε ∈ {0.2, 0.6, 1.0} and 000's Mantri on 6 000
  machines, where jobs wait for machines;
- ``redundancy`` (not run by default; use ``--jobs 1000``): the redundancy family SRPT+R
  and Fair+R of 002 beside SRPTMS+C and its ε = 1, r = 0 (weighted fair) setting.

Runs are saved under ``results/reproduce-000/`` and an interrupted study resumes. For
every study the script prints the weighted and unweighted means, the fractions within
100 s and 1000 s, the mean wait from a job's arrival to its first copy's start and,
against the study's reference, the paired difference of the
(weighted) mean flowtime with a 95% interval from batch means of the per-job
differences (job j of a seed is the same job under every scheduler; see ``paired``).

    python benchmarks/reproduce_000.py [--jobs 6064] [--seeds 1 2 3 4 5] [--study epsilon r ...]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
from summary_tables import saved_jobs

import geosim
from geosim.experiment import MANIFEST, paired_difference, run_path
from geosim.scenario import load_scenario
from geosim.schedulers.spec import parse_spec
from geosim.variability import pareto_shape
from geosim.workload.build import build_workload
from geosim.world import spawn_streams

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "cloning-google.toml"
#: 000's Mantri: a copy when P(t_rem > 2 t_new) > δ, no restarts, estimated as Mantri
#: does (progress reports, t_new from the phase), checked when a machine becomes free.
MANTRI = "mantri[duplicate_factor=2.0,max_restarts=0,estimator=observed,check=free]"
#: The same with noisy progress reports (log-normal, σ = 0.1).
MANTRI_NOISY = MANTRI[:-1] + ",progress_noise=0.1]"
#: The same rule reading exact progress and the task's known law every 10 s.
MANTRI_MODEL = "mantri[duplicate_factor=2.0,max_restarts=0]"
SRPTMS = "srptms+c[epsilon=0.6,r=3.0]"
READY = "srptms+c[epsilon=0.6,r=3.0,sharing_set=ready]"


def studies(which: list[str]) -> list[tuple[str, dict, list[str], str]]:
    """(study, overrides, scheduler specs, reference spec) of every comparison."""
    out = []
    if "epsilon" in which:
        specs = [f"srptms+c[epsilon={e},r=0.0]" for e in (0.2, 0.4, 0.6, 0.8, 1.0)]
        out.append(("epsilon", {}, specs, specs[2]))
    if "epsilon-ready" in which:
        # The same sweep with psi of ready jobs only: isolates 000's sharing set.
        specs = [f"srptms+c[epsilon={e},r=0.0,sharing_set=ready]" for e in (0.2, 0.6, 1.0)]
        out.append(("epsilon-ready", {}, specs, specs[1]))
    if "r" in which:
        specs = [f"srptms+c[epsilon=0.6,r={r}]" for r in (0.0, 1.0, 3.0, 5.0, 8.0)]
        out.append(("r", {}, specs, specs[2]))
    if "machines" in which:
        for m in (8000, 12000):
            out.append((f"machines-{m}", {"tiers.small.slots": m}, [SRPTMS], SRPTMS))
    if "before-sweeps" in which:
        # Fig. 1 and Fig. 3 as they were: the pareto law, psi of ready jobs.
        old = {"workload.duration_law": "pareto"}
        specs = [f"srptms+c[epsilon={e},r=0.0,sharing_set=ready]" for e in (0.2, 0.6, 1.0)]
        out.append(("before-epsilon", old, specs, specs[1]))
        for m in (8000, 12000):
            out.append((f"before-machines-{m}", {**old, "tiers.small.slots": m}, [READY],
                        READY))
    if "contention" in which:
        # The epsilon sweep on half the machines (load about 90% before copies): does the
        # sharing rule matter once machines are scarce?
        specs = [f"srptms+c[epsilon={e},r=3.0]" for e in (0.2, 0.6, 1.0)]
        out.append(("contention-6000", {"tiers.small.slots": 6000}, specs + [MANTRI], specs[1]))
    if "baselines" in which:
        out.append(("baselines", {}, [SRPTMS, READY, "srptms+c[epsilon=0.6,r=3.0,max_copies=2]",
                                      READY[:-1] + ",max_copies=2]", "sca", MANTRI,
                                      MANTRI_NOISY, MANTRI_MODEL, "srptms-offline"], MANTRI))
    if "before" in which:
        out.append(("before", {"workload.duration_law": "pareto"},
                    [READY, "srptms+c[epsilon=0.6,r=3.0,max_copies=2,sharing_set=ready]",
                     "sca", MANTRI_MODEL, "srptms-offline"], MANTRI_MODEL))
    if "redundancy" in which:
        # 002's pool policies re-place every copy at every event on 12 000 machines: run
        # them at a reduced size (--jobs 1000).
        out.append(("redundancy", {}, [SRPTMS, "srptms+c[epsilon=1.0,r=0.0]", "srpt+r",
                                       "fair+r", MANTRI], MANTRI))
    return out


def floor(seeds: list[int], jobs: int) -> None:
    """What no scheduler can beat on each law: per seed, the shares of jobs whose
    flowtime floor is within 100 s and 1000 s, and the floor's mean.

    A job cannot finish before the sum over its phases of the phase's mean work times the
    smallest factor a copy can draw (the Pareto scale, or ``duration_min / E`` where the
    copies are bounded), reached only with infinitely many clones and no wait. With one
    copy of mean work and no wait, the job takes the sum of its phases' means.
    """
    print("\n### floor: what no scheduler can beat\n")
    print("| law | seed | floor mean (s) | floor <=100 s | floor <=1000 s "
          "| mean work <=100 s | mean work <=1000 s |")
    print("|---|---|---|---|---|---|---|")
    for law in ("split", "pareto"):
        for seed in seeds:
            scenario = load_scenario(SCENARIO, overrides={"workload.n_jobs": jobs,
                                                          "workload.duration_law": law})
            wl = build_workload(scenario, None, spawn_streams(seed)["workload"])
            alpha = pareto_shape(np.maximum(wl.task_cv, 1e-12))
            low = np.maximum((alpha - 1.0) / alpha, wl.copy_bounds[0] / wl.task_work)
            first = np.r_[True, (np.diff(wl.job_of_task) != 0)
                          | (np.diff(wl.task_stage) != 0)]      # one task per phase
            job = wl.job_of_task[first]
            best = np.bincount(job, weights=(wl.task_work * low)[first], minlength=wl.n_jobs)
            mean = np.bincount(job, weights=wl.task_work[first], minlength=wl.n_jobs)
            print(f"| {law} | {seed} | {best.mean():.0f} | {100 * np.mean(best <= 100):.1f}% | "
                  f"{100 * np.mean(best <= 1000):.1f}% | {100 * np.mean(mean <= 100):.1f}% | "
                  f"{100 * np.mean(mean <= 1000):.1f}% |")


def paired(out: Path, seeds: list[int], label: str, reference: str,
           weighted: bool) -> tuple[float, float]:
    """Paired difference of the (weighted) mean flowtime against the reference
    (:func:`geosim.experiment.paired_difference` over the saved runs of ``seeds``)."""
    return paired_difference(saved_jobs(out, label, seeds),
                             saved_jobs(out, parse_spec(reference).label, seeds),
                             weighted=weighted)


def mean_wait(out: Path, seeds: list[int], label: str) -> float:
    """Mean time from a job's arrival to its first copy's start over the saved runs."""
    manifest = json.loads((out / MANIFEST).read_text())
    waits = []
    for seed in seeds:
        path = run_path(out, manifest, label, seed)
        first = pd.read_parquet(path / "tasks.parquet", columns=["job", "start"]).groupby(
            "job")["start"].min()
        jobs = pd.read_parquet(path / "jobs.parquet", columns=["job", "arrival"])
        waits.append((first - jobs.set_index("job")["arrival"]).to_numpy())
    return float(np.concatenate(waits).mean())


def _pct(value: float, half: float, is_reference: bool) -> str:
    if is_reference:
        return "ref"
    if not math.isfinite(half):
        return f"{100 * value:+.1f}%"
    return f"{100 * value:+.1f}% [{100 * (value - half):+.1f}, {100 * (value + half):+.1f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=6064, help="jobs per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--study", nargs="+",
                        default=["baselines", "before", "epsilon", "epsilon-ready", "r",
                                 "machines", "before-sweeps"])
    parser.add_argument("--parallel", type=int, default=None, help="worker processes")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "reproduce-000")
    args = parser.parse_args()
    if "floor" in args.study:
        floor(args.seeds, args.jobs)
    for study, overrides, specs, reference in studies(args.study):
        start = time.perf_counter()
        cmp = geosim.compare(SCENARIO, specs, seeds=args.seeds, jobs_parallel=args.parallel,
                             within=(100, 1000), baseline=reference,
                             overrides={"workload.n_jobs": args.jobs, **overrides},
                             out=args.out / study)
        wall = time.perf_counter() - start
        print(f"\n### {study} ({args.jobs} jobs x seeds {args.seeds}, {wall:.0f} s)\n")
        print("| scheduler | weighted mean (s) | mean (s) | ±95% | <=100 s | <=1000 s "
              "| copies/task | wait (s) | Δ mean vs ref [95%] | Δ weighted [95%] | run s |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        runs = cmp.runs.copy()
        for row in cmp.summary.to_dict("records"):
            label = row["label"]
            d, h = paired(args.out / study, args.seeds, label, reference, weighted=False)
            dw, hw = paired(args.out / study, args.seeds, label, reference, weighted=True)
            wall_run = runs.loc[runs["label"] == label, "wall_seconds"].mean()
            is_ref = label == parse_spec(reference).label
            print(f"| {label} | {row['weighted_mean_flowtime']:.1f} | "
                  f"{row['mean_flowtime']:.1f} | {row['ci95']:.1f} | "
                  f"{100 * row['within_100']:.1f}% | {100 * row['within_1000']:.1f}% | "
                  f"{row['copies_per_task']:.2f} | "
                  f"{mean_wait(args.out / study, args.seeds, label):.1f} | "
                  f"{_pct(d, h, is_ref)} | "
                  f"{_pct(dw, hw, is_ref)} | "
                  f"{wall_run:.0f} |")


if __name__ == "__main__":
    main()
