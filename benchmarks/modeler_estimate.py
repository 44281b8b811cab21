"""How far PingAn's planned copy times are from the times copies took (docs/results.md).

Runs PingAn with each ``estimate`` / ``learn_from`` on ``scenarios/pingan-medium.toml``
and tags every copy it launches with the time its planning rate promised for that copy
alone (``1 / ev.rate``: ``1 / E[r(1)]`` with ``mean-rate``, ``E[T(1)]`` with
``mean-time``) and with whether any of its inputs is on another cluster. The package is
not changed: the tags come from a wrapper around one scheduler instance's ``_launch``.

For the copies that won, it reports actual over planned time (median, mean, and total
over total), for remote and local copies, and for those that were their task's only
copy (no race picked them, so no selection towards fast copies). Prints one JSON line
per run, then a Markdown table of means over seeds with 95% t-intervals.

    python benchmarks/modeler_estimate.py [--jobs 150] [--seeds 1 2] [--sharing equal|maxmin]
"""

from __future__ import annotations

import argparse
import json
import time
import types
from pathlib import Path

import numpy as np
from scipy import stats
from summary_tables import add_sharing_option, sharing_override

from geosim import GeoModel, load_scenario, make_scheduler
from geosim.schedulers.pingan import PingAn

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {
    "mean-rate (003)": {},
    "mean-time": {"estimate": "mean-time"},
    "mean-rate, learn_from=all": {"learn_from": "all"},
    "mean-time, learn_from=all": {"estimate": "mean-time", "learn_from": "all"},
}
GROUPS = ("remote", "local", "remote_sole", "local_sole")


def run(jobs: int, seed: int, params: dict, sharing: str | None = None) -> dict:
    """One run of PingAn; its flowtimes and the actual/planned ratios of its winners."""
    scenario = load_scenario(ROOT / "scenarios" / "pingan-medium.toml",
                             {"workload.n_jobs": jobs, "run.seed": seed,
                              **sharing_override(sharing)})
    policy = make_scheduler("pingan", {"epsilon": 0.6, **params})
    model = GeoModel(scenario, scheduler=policy)
    planned: dict[int, tuple[float, bool]] = {}

    def tagged(self: PingAn, actions, tasks, ev, plan) -> None:
        first = model.engine.copies.n
        PingAn._launch(self, actions, tasks, ev, plan)
        n = int(plan.n[0])
        if n == 0:
            return
        rows, cols = plan.rows[:n], plan.cols[:n]
        cluster = ev.cand[rows, cols]
        with np.errstate(divide="ignore"):
            promise = 1.0 / ev.rate[rows, cols]
        for x in range(rows.size):
            i = rows[x]
            remote = bool(np.any(ev.g_src[ev.g_ptr[i]:ev.g_ptr[i + 1]] != cluster[x]))
            planned[first + x] = (float(promise[x]), remote)

    policy._launch = types.MethodType(tagged, policy)
    start = time.process_time()
    result = model.run()
    cpu = time.process_time() - start
    c = result.copies
    won = c[c["outcome"] == "won"]
    sole = (c.groupby("task")["copy"].transform("size") == 1)[won.index].to_numpy()
    promise = np.array([planned[i][0] for i in won["copy"]])
    remote = np.array([planned[i][1] for i in won["copy"]])
    took = (won["end"] - won["start"]).to_numpy()
    out = {"params": params, "seed": seed, "jobs": jobs, "cpu_s": round(cpu, 1),
           "mean_flowtime": float(result.jobs["flowtime"].mean()),
           "median_flowtime": float(result.jobs["flowtime"].median()),
           "copies": int(len(c)), "copies_by_round": policy.copies_by_round.tolist()}
    for group, mask in zip(GROUPS, (remote, ~remote, remote & sole, ~remote & sole),
                           strict=True):
        ratio = took[mask] / promise[mask]
        out[group] = {"n": int(mask.sum()), "median": float(np.median(ratio)),
                      "mean": float(ratio.mean()),
                      "of_totals": float(took[mask].sum() / promise[mask].sum())}
    return out


def _ci(values: list[float]) -> str:
    x = np.asarray(values, dtype=float)
    if x.size < 2:
        return f"{x.mean():.2f}"
    half = stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
    return f"{x.mean():.2f} ± {half:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=150)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    add_sharing_option(parser)
    args = parser.parse_args()
    runs = {}
    for seed in args.seeds:
        for label, params in VARIANTS.items():
            runs[label, seed] = run(args.jobs, seed, params, args.sharing)
            print(json.dumps({"variant": label, **runs[label, seed]}), flush=True)
    base = "mean-rate (003)"
    print("\n| variant | mean flowtime (s) | vs 003's, paired (s) | remote: median ratio "
          "| remote: total/total | local: median ratio | only copy, remote: median | "
          "only copy, local: median |")
    print("|---" * 8 + "|")
    for label in VARIANTS:
        per = [runs[label, s] for s in args.seeds]
        diff = [runs[label, s]["mean_flowtime"] - runs[base, s]["mean_flowtime"]
                for s in args.seeds]
        print(f"| {label} | {_ci([r['mean_flowtime'] for r in per])} | "
              f"{'' if label == base else _ci(diff)} | "
              f"{_ci([r['remote']['median'] for r in per])} | "
              f"{_ci([r['remote']['of_totals'] for r in per])} | "
              f"{_ci([r['local']['median'] for r in per])} | "
              f"{_ci([r['remote_sole']['median'] for r in per])} | "
              f"{_ci([r['local_sole']['median'] for r in per])} |")


if __name__ == "__main__":
    main()
