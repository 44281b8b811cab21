"""FlowFlex, Fair and FIFO executed by the engine against the planner's continuous schedules.

For every seed of ``scenarios/flowflex.toml`` (one 004 §3 experiment each) and every metric
of 004 Tables 1-2, this runs ``flowflex`` planned for that metric, ``flow-fair`` and
``fifo`` in the engine (bricks of ``workload.flow_brick`` seconds on slots of ``run.dt``)
through ``geosim compare``, and sets each run's ratio to the lower bound beside the ratio
of the planner's own schedule on the same flows (:func:`geosim.flowflex.plan`,
:func:`~geosim.flowflex.fair_schedule`, :func:`~geosim.flowflex.fifo_schedule`). The
difference is what executing in whole bricks at slot boundaries costs.

    python benchmarks/flowflex_engine.py [--seeds 5] [--dt 10] [--workers 2]
        [--out results/flowflex-engine]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from geosim import load_scenario
from geosim.experiment import coerce_specs, compare
from geosim.flowcost import METRICS, flow_bounds, ratio
from geosim.flowflex import fair_schedule, fifo_schedule, plan
from geosim.inputs import world_and_workload
from geosim.workload import flow_instance

SCENARIO = "scenarios/flowflex.toml"


def main() -> None:
    """Run the comparison and print one row per metric."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--dt", type=float, default=10.0, help="slot length = brick size (s)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="results/flowflex-engine",
                        help="comparison directory (runs are kept; a rerun resumes)")
    args = parser.parse_args()
    start = time.perf_counter()
    scenario = load_scenario(SCENARIO, {"run.dt": args.dt, "workload.flow_brick": args.dt})
    unit = scenario["workload"]["flow_time_unit"]
    labels = {m: coerce_specs(f"flowflex[objective={m.split()[0]},kind={METRICS[m].kind}]")[0]
              .label for m in METRICS}
    seeds = list(range(1, args.seeds + 1))
    comparison = compare(scenario, list(dict.fromkeys([*labels.values(), "flow-fair", "fifo"])),
                         seeds=seeds, jobs_parallel=args.workers, out=args.out)
    flows = comparison.flows.set_index(["label", "seed", "metric"])
    rows = {m: {"flowflex": [], "fair": [], "fifo": []} for m in METRICS}
    for seed in seeds:
        world, workload = world_and_workload(scenario, seed)
        instance = flow_instance(workload, world.n_slots, time_unit=unit)
        bounds = flow_bounds(workload, world.n_slots, unit)
        fair, fifo = fair_schedule(instance), fifo_schedule(instance)
        for m, metric in METRICS.items():
            exact = {"flowflex": plan(instance, metric).cost,
                     "fair": metric.evaluate(instance, fair.flow_completion),
                     "fifo": metric.evaluate(instance, fifo.flow_completion)}
            engine = {"flowflex": flows.loc[(labels[m], seed, m), "ratio"],
                      "fair": flows.loc[("flow-fair", seed, m), "ratio"],
                      "fifo": flows.loc[("fifo", seed, m), "ratio"]}
            for k in exact:
                rows[m][k].append((float(engine[k]), float(ratio(exact[k], bounds[m]))))
    print(f"{len(seeds)} experiments, dt = brick = {args.dt:g} s; ratio to the lower bound, "
          "average over experiments: engine / planner's continuous schedule")
    print(f"{'metric':34s} {'FlowFlex':>15s} {'Fair':>15s} {'FIFO':>15s}")
    for m, cols in rows.items():
        cells = [f"{np.mean([e for e, _ in v]):6.2f} / {np.mean([c for _, c in v]):5.2f}"
                 for v in cols.values()]
        print(f"{m:34s} " + " ".join(f"{c:>15s}" for c in cells))
    print(f"wall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
