"""002's world in a plain SimPy model and in geosim, side by side in one run.

A reference point for geosim's speed: a straightforward event-driven model of 002 §6
written with SimPy, one pending completion per job. 100 machines alternate
gamma-distributed available and unavailable periods with uniform speed factors
(normalised to a long-run mean of 1); at every arrival and departure every job is
checkpointed at its best copy's progress and SRPT+R (002 Algorithm 1) gives machines
anew, drawn at random; a job ends with its first copy. Both models run the same jobs
(geosim's workload of the scenario: arrivals and Pareto work), geosim as
``srpt+r[reassign=random]``, which is that model. Their availability periods come from
different generators, so the mean flowtimes agree in distribution, not to the digit;
``--no-availability`` runs both on always-available machines, where they must agree to
rounding (machine choice cannot matter then).

Needs ``simpy`` (``pip install -e '.[bench]'``; not a dependency of geosim itself). Each
model runs ``--repeat`` times in fresh processes, alternately; prints one JSON line per
run and a table of minimum and median wall times. Usage:

    python benchmarks/bench_simpy.py [--jobs 20000] [--rate 2] [--repeat 3] [--no-availability]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MACHINES = 100


def _overrides(args: argparse.Namespace) -> dict:
    return {"workload.arrival_rate": args.rate, "workload.n_jobs": args.jobs,
            "run.timing": "event", "availability.enabled": not args.no_availability}


def _jobs(args: argparse.Namespace):
    """The scenario, and its jobs' arrival times and work, as geosim draws them."""
    from geosim.inputs import world_and_workload
    from geosim.scenario import load_scenario
    scenario = load_scenario(ROOT / "scenarios" / "redundancy-gamma.toml", _overrides(args))
    _, wl = world_and_workload(scenario)
    return scenario, wl.arrival.tolist(), wl.task_work.tolist()


def simpy_model(arrival: list[float], work: list[float], av: dict | None,
                seed: int) -> float:
    """Mean flowtime of SRPT+R on 002's machine pool, simulated with SimPy.

    One pending completion per job (its copies' earliest finish at their current speeds),
    replaced whenever a decision or a phase change of one of its machines moves it.
    """
    import simpy

    from geosim.world import availability_rates
    rng = np.random.default_rng(seed)
    env = simpy.Environment()
    n = len(arrival)
    level = [1.0] * MACHINES
    saved = [0.0] * n              # checkpointed fraction of each job's work
    done = [0.0] * n
    alive: list[int] = []
    copies: dict[int, list] = {}   # job -> its copies [machine, progress, since]
    holder: list[int] = [-1] * MACHINES
    version = [0] * n              # a job's pending completion counts only if current
    arrivals_left = list(range(n))[::-1]
    all_done = env.event()

    def progress(c: list, j: int) -> float:
        return min(c[1] + level[c[0]] * (env.now - c[2]) / work[j], 1.0)

    def complete(j: int, mine: int, delay: float):
        yield env.timeout(delay)
        if version[j] == mine:
            done[j] = env.now
            alive.remove(j)
            decide()
            if not alive and not arrivals_left:
                all_done.succeed()

    def schedule(j: int) -> None:
        version[j] += 1
        rates = [level[c[0]] / work[j] for c in copies[j]]
        ends = [(1.0 - c[1]) / r for c, r in zip(copies[j], rates, strict=True) if r > 0]
        if ends:
            env.process(complete(j, version[j], min(ends)))

    def decide() -> None:
        # checkpoint every job at its best copy, stop every copy
        for j, cs in copies.items():
            saved[j] = max([saved[j]] + [progress(c, j) for c in cs])
            version[j] += 1
            for c in cs:
                holder[c[0]] = -1
        copies.clear()
        if not alive:
            return
        order = sorted(alive, key=lambda j: ((1.0 - saved[j]) * work[j], j))
        k = len(order)
        if k >= MACHINES:
            counts = [1] * MACHINES
        else:
            counts = [MACHINES // k] * k
            counts[0] = MACHINES - (k - 1) * (MACHINES // k)
        machines = rng.permutation(MACHINES).tolist()
        for j, r in zip(order, counts, strict=False):
            copies[j] = [[machines.pop(), saved[j], env.now] for _ in range(r)]
            for c in copies[j]:
                holder[c[0]] = j
            schedule(j)

    def arrivals():
        while arrivals_left:
            j = arrivals_left.pop()
            yield env.timeout(arrival[j] - env.now)
            alive.append(j)
            decide()

    def machine(s: int, on_rate, off_rate, factor: float):
        mean_on = av["available_shape"] * av["available_scale"]
        mean_off = av["unavailable_shape"] * av["unavailable_scale"]
        on = rng.random() < mean_on / (mean_on + mean_off)
        while True:
            low, high = on_rate if on else off_rate
            j = holder[s]
            if j >= 0:                              # its copy here changes speed now
                c = next(c for c in copies[j] if c[0] == s)
                c[1], c[2] = progress(c, j), env.now
            level[s] = rng.uniform(low, high) * factor
            if j >= 0:
                schedule(j)
            shape, scale = ((av["available_shape"], av["available_scale"]) if on else
                            (av["unavailable_shape"], av["unavailable_scale"]))
            yield env.timeout(rng.gamma(shape, scale))
            on = not on

    env.process(arrivals())
    if av is not None:
        rates = availability_rates(av)
        for s in range(MACHINES):
            env.process(machine(s, *rates))
    env.run(until=all_done)
    return float(np.mean(np.array(done) - np.array(arrival)))


def _run(which: str, args: argparse.Namespace, queue: mp.Queue) -> None:
    from geosim.model import GeoModel
    from geosim.schedulers import registered
    registered()
    scenario, arrival, work = _jobs(args)
    start = time.perf_counter()
    if which == "simpy":
        av = None if args.no_availability else dict(scenario["availability"])
        mean = simpy_model(arrival, work, av, seed=1)
    else:
        mean = float(GeoModel(scenario, "srpt+r[reassign=random]").run()
                     .jobs["flowtime"].mean())
    queue.put({"model": which, "jobs": args.jobs, "rate": args.rate,
               "availability": not args.no_availability,
               "wall_seconds": round(time.perf_counter() - start, 3),
               "mean_flowtime": round(mean, 4)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-availability", action="store_true")
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    walls: dict[str, list[float]] = {"simpy": [], "geosim": []}
    means: dict[str, float] = {}
    for _ in range(args.repeat):
        for which in walls:                    # alternately, under the same load
            queue = ctx.Queue()
            proc = ctx.Process(target=_run, args=(which, args, queue))
            proc.start()
            figures = queue.get()
            proc.join()
            print(json.dumps(figures), flush=True)
            walls[which].append(figures["wall_seconds"])
            means[which] = figures["mean_flowtime"]
    print(f"\n{'model':<8}{'min s':>8}{'median s':>10}{'mean flowtime':>15}")
    for which, w in walls.items():
        print(f"{which:<8}{min(w):>8.2f}{statistics.median(w):>10.2f}{means[which]:>15.3f}")
    print(f"\nSimPy / geosim (min): {min(walls['simpy']) / min(walls['geosim']):.1f}x")


if __name__ == "__main__":
    main()
