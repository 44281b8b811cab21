"""Max-min WAN sharing against SimGrid: every transfer's completion time, side by side.

Random sets of transfers on the default 100-cluster topology (``pingan-medium``'s world,
bandwidths held at their means), starting at random instants over the first 200 s.
geosim runs each transfer as a single-task job that reads one remote input and does
next to no work, pinned to the transfer's destination, event-timed under
``links.sharing = "maxmin"``: the job arrives (and its transfer starts) at the transfer's
instant and ends when its input has arrived. SimGrid runs each, from its instant, as a
host-to-host communication over one SimGrid link per geosim resource the transfer
crosses (its source's egress gate, each direction of each WAN link of its route, its
destination's ingress gate), with latency 0 and the plain max-min model (``CM02``
without TCP corrections). As transfers start and end, both share the links anew, so the
comparison covers the allocation and the event times.

Needs SimGrid's Python package, the optional ``bench`` extra (``pip install -e
'.[bench]'``; building it needs a C++ compiler, CMake, Boost's headers and, for SimGrid
4.1, pybind11 2.x in the build: ``PIP_CONSTRAINT`` naming a file that holds
``pybind11<3``). Usage:

    python benchmarks/bench_simgrid.py [--sets 5] [--transfers 300] [--seed 1]

Prints, per set, the largest difference of a completion time relative to the transfer's
duration, and the run times.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from geosim import GeoModel, load_scenario
from geosim.schedulers import Scheduler
from geosim.workload import Workload

ROOT = Path(__file__).resolve().parents[1]
#: The world: pingan-medium's topology and gates, nothing random in time.
WORLD = {"availability.enabled": False, "outages.enabled": False,
         "links.bandwidth_rsd": 0.0, "links.redraw_interval": 0.0,
         "clusters.power_redraw_interval": 0.0, "run.timing": "event",
         "links.sharing": "maxmin", "run.record_interval": 1e9}
#: Work of each job (MI): its processing takes far less than a microsecond.
WORK = 1e-9


class PinEach(Scheduler):
    """Every task on its own destination cluster, sharing slots (up to 1000 per slot)."""

    name = "pin-each"
    event_driven = True

    def __init__(self, dst: np.ndarray):
        self.dst = dst

    def decide(self, view, actions):
        for job in view.alive_jobs:
            for task in view.ready_tasks(int(job)):
                actions.launch(int(task), int(self.dst[task]), 1e-3)


def transfer_set(n_clusters: int, n: int, rng: np.random.Generator):
    """``n`` transfers: start (s, ascending), source, destination (different), size (MB)."""
    start = np.sort(rng.uniform(0.0, 200.0, n)).round(3)
    src = rng.integers(0, n_clusters, n)
    dst = (src + rng.integers(1, n_clusters, n)) % n_clusters
    size = rng.uniform(1.0, 500.0, n).round(3)
    return start, src, dst, size


def geosim_times(start: np.ndarray, src: np.ndarray, dst: np.ndarray, size: np.ndarray):
    """Completion time of each transfer in geosim, and the world it ran in."""
    n = src.size
    scenario = load_scenario(ROOT / "scenarios" / "pingan-medium.toml", WORLD)
    none = np.empty(0, dtype=np.int64)
    workload = Workload(
        arrival=start.astype(float), weight=np.ones(n), task_ptr=np.arange(n + 1),
        task_work=np.full(n, WORK), task_type=np.zeros(n, dtype=np.int32), type_names=("t",),
        edge_src=none, edge_dst=none, edge_size=np.empty(0), raw_ptr=np.arange(n + 1),
        raw_cluster=src.astype(np.int64), raw_size=size.astype(float))
    model = GeoModel(scenario, PinEach(dst), workload=workload)
    result = model.run()
    return result.jobs["completion"].to_numpy(), model.world


def simgrid_times(world, start: np.ndarray, src: np.ndarray, dst: np.ndarray,
                  size: np.ndarray) -> np.ndarray:
    """Completion time of each transfer in SimGrid's max-min model."""
    import simgrid
    engine = simgrid.Engine(["bench_simgrid", "--cfg=network/model:CM02",
                             "--cfg=network/TCP-gamma:0", "--cfg=network/crosstraffic:0",
                             "--cfg=network/weight-S:0", "--cfg=precision/timing:1e-12",
                             "--cfg=precision/work-amount:1e-12", "--log=root.thres:critical"])
    zone = engine.netzone_root.add_netzone_full("world")
    hosts = [zone.add_host(f"c{c}", 1e9).seal() for c in range(world.n_clusters)]
    cap = world.resource_capacity() * 1e6              # bytes per second
    links = {}
    routed = set()
    for s, d in zip(src.tolist(), dst.tolist(), strict=True):
        if (s, d) in routed:
            continue
        routed.add((s, d))
        path = []
        for r in world.routes.route(s, d).tolist():
            if r not in links:
                links[r] = zone.add_link(f"r{r}", float(cap[r])).set_latency(0).seal()
            path.append(simgrid.LinkInRoute(links[r]))
        zone.add_route(hosts[s], hosts[d], path, False)
    zone.seal()
    done = np.full(src.size, np.nan)

    def transfer(i: int) -> None:
        simgrid.this_actor.sleep_for(float(start[i]))
        simgrid.Comm.sendto(hosts[src[i]], hosts[dst[i]], int(round(size[i] * 1e6)))
        done[i] = simgrid.Engine.clock

    for i in range(src.size):
        simgrid.Actor.create(f"t{i}", hosts[src[i]], transfer, i)
    engine.run()
    return done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=5)
    parser.add_argument("--transfers", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    try:
        import simgrid  # noqa: F401
    except ImportError:
        print("SimGrid's Python package is not installed (pip install -e '.[bench]')")
        return 2
    rng = np.random.default_rng(args.seed)
    worst = 0.0
    print(f"{'set':>4} {'transfers':>9} {'max rel. diff':>14} {'geosim s':>9} {'SimGrid s':>9} "
          f"{'last end s':>10}")
    for k in range(args.sets):
        # SimGrid's engine is one per process: each set runs in a child process.
        start, src, dst, size = transfer_set(100, args.transfers, rng)
        t0 = time.perf_counter()
        ours, world = geosim_times(start, src, dst, size)
        t1 = time.perf_counter()
        theirs = _in_child(world, start, src, dst, size)
        t2 = time.perf_counter()
        rel = float(np.max(np.abs(ours - theirs) / (theirs - start)))
        worst = max(worst, rel)
        print(f"{k:>4} {src.size:>9} {rel:>14.2e} {t1 - t0:>9.2f} {t2 - t1:>9.2f} "
              f"{ours.max():>10.2f}")
    print(f"largest relative difference over {args.sets} sets: {worst:.2e}")
    return 0 if worst <= 1e-6 else 1


def _in_child(world, start, src, dst, size) -> np.ndarray:
    import multiprocessing as mp
    with mp.get_context("fork").Pool(1) as pool:
        return pool.apply(simgrid_times, (world, start, src, dst, size))


if __name__ == "__main__":
    sys.exit(main())
