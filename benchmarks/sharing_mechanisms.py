"""Which difference between the WAN sharing rules moves the speculation verdicts.

``"equal"`` and ``"maxmin"`` sharing (``links.sharing``) differ in two ways:

1. **Inactive transfers.** Under ``"equal"`` a transfer whose source is unreachable gets
   bandwidth 0 but still counts in the number of transfers each of its resources is
   divided by; under ``"maxmin"`` it takes nothing.
2. **Stranded shares.** Under ``"equal"`` a transfer held back at one resource leaves
   the rest of its share of every other resource unused; ``"maxmin"`` gives it to the
   others.

This script runs a third rule, ``equal-active``, which is ``"equal"`` with difference 1
removed (shares divided among the active transfers only), and prints, per rule, the
paired change of the mean flowtime for each pair of schedulers (job by job under common
random numbers, 95% batch-means interval, as ``geosim compare``). Where ``equal-active``
lands near ``"maxmin"``, difference 1 moves the verdict; where it stays near ``"equal"``,
difference 2 does. ``equal-active`` exists only in this script: it replaces the
engine's allocation in the worker processes, and runs slotted worlds only (the compiled
sub-spans of event timing allocate on their own).

Usage (003's medium load at its paper size: 777 s for one rule on 2 cores)::

    python benchmarks/sharing_mechanisms.py [--scenario scenarios/pingan-medium.toml]
        [--rules equal,equal-active,maxmin] [--reps 10] [--jobs 2000] [--workers 2]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SCHEDULERS = ("flutter", "flutter+mantri", "pingan")
PAIRS = (("flutter+mantri", "flutter"), ("pingan", "flutter"), ("pingan", "flutter+mantri"))
RULES = ("equal", "equal-active", "maxmin")


def allocate_equal_active(flows, move_src, move_dst, cap, reachable, maxmin, demand, local,
                          memory):
    """``"equal"`` shares divided among the active transfers only.

    The signature and the returns of :func:`geosim.engine.sharing.allocate` (``memory``,
    max-min's, passes through as under ``"equal"``).
    """
    from geosim.engine.records import Flows
    from geosim.engine.sharing import active_transfers, equal_shares
    f = Flows(*flows)
    active = active_transfers(f.src, move_src, move_dst, reachable)
    hops = np.concatenate((f.res, f.move_res))
    per = np.concatenate((np.diff(f.starts, append=f.res.size),
                          np.diff(f.move_starts, append=f.move_res.size)))
    users = np.bincount(hops, weights=np.repeat(active, per),
                        minlength=cap.size).astype(np.int64)
    bw = np.empty(active.size)
    equal_shares(f.src.size, f.res, f.starts, f.move_res, f.move_starts,
                 np.maximum(users, 1), cap, active, bw)
    return bw, active, memory


def _run(task: tuple[str, str, int, int, str]) -> pd.DataFrame:
    """One run: every job's flowtime under ``rule``."""
    scenario, rule, seed, n_jobs, scheduler = task
    import geosim
    import geosim.engine.core as core
    if rule == "equal-active":
        core.allocate = allocate_equal_active
        core.Engine.compiled_subspans = False
    overrides = {"workload.n_jobs": n_jobs,
                 "links.sharing": "maxmin" if rule == "maxmin" else "equal"}
    jobs = geosim.run(geosim.load_scenario(scenario, overrides), scheduler, seed=seed).jobs
    return jobs.assign(rule=rule, label=scheduler, seed=seed)[
        ["rule", "label", "seed", "job", "flowtime", "finished", "weight"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default=str(ROOT / "scenarios" / "pingan-medium.toml"))
    parser.add_argument("--rules", default=",".join(RULES))
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", help="write every job's flowtime to this CSV file")
    args = parser.parse_args(argv)
    import geosim
    from geosim.experiment.stats import paired_difference, verdict
    rules = args.rules.split(",")
    config = geosim.load_scenario(args.scenario)
    if set(rules) - set(RULES):
        parser.error(f"--rules: unknown rule in {args.rules!r} (known: {', '.join(RULES)})")
    if "equal-active" in rules and config["run"]["timing"] != "slot":
        parser.error(f"{args.scenario}: equal-active runs slotted worlds only "
                     f"(run.timing = {config['run']['timing']!r})")
    base_seed = config["run"]["seed"]
    seeds = [base_seed + i for i in range(args.reps)]
    tasks = [(args.scenario, rule, seed, args.jobs, name)
             for rule in rules for name in SCHEDULERS for seed in seeds]
    start = time.perf_counter()
    with mp.get_context("spawn").Pool(args.workers, maxtasksperchild=1) as pool:
        jobs = pd.concat(pool.imap_unordered(_run, tasks), ignore_index=True)
    print(f"{len(tasks)} runs of {args.jobs} jobs on {Path(args.scenario).name}, seeds "
          f"{seeds[0]}-{seeds[-1]}, in {time.perf_counter() - start:.0f} s")
    if args.out:
        jobs.to_csv(args.out, index=False)
    for rule in rules:
        mine = jobs[jobs["rule"] == rule]
        means = mine[mine["finished"]].groupby("label")["flowtime"].mean()
        print(f"\n{rule}: mean flowtime " + ", ".join(
            f"{name} {means[name]:.1f} s" for name in SCHEDULERS))
        for label, base in PAIRS:
            diff, half = paired_difference(mine[mine["label"] == label],
                                           mine[mine["label"] == base])
            print("  " + verdict(label, base, diff, half))
    return 0


if __name__ == "__main__":
    sys.exit(main())
