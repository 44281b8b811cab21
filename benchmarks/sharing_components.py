"""How much of each max-min allocation the recomputation of touched groups skips.

Two active transfers are in one group (a connected component) when they cross a common
link or gate, directly or through other transfers. Max-min allocations of different
groups do not affect each other, so the engine fills anew only the groups a change
touched and keeps the others' rates (``geosim.engine.sharing.maxmin_shares``). This
script runs ``scenarios/pingan-medium.toml`` under ``links.sharing = "maxmin"``, slotted
(on the shipped 100-cluster topology, or on a Barabási–Albert world of N clusters), and
at every allocation works out, from the engine's memory of the one before, the groups
of the active transfers' classes (transfers of one pair of clusters) and which of them
are filled anew. Prints one line per world and scheduler: allocations, active transfers
and groups per allocation, the largest group's share of the transfers, and the share of
the transfers (over all allocations) whose rates were kept.

    python benchmarks/sharing_components.py [--clusters 100 1000] [--jobs 300]
        [--schedulers fair 'pingan[epsilon=0.6]']
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import geosim.engine.core as core
from geosim import GeoModel, load_scenario
from geosim.engine import sharing
from geosim.engine.records import Flows

ROOT = Path(__file__).resolve().parents[1]


def kept(flows: tuple, cap: np.ndarray, reachable: np.ndarray, demand: np.ndarray,
         local: np.ndarray, memory: tuple) -> tuple[int, int, float, int] | None:
    """Active transfers, groups, the largest group's size and the transfers kept.

    Works on copies of the memory's per-resource counts, so the allocation that follows
    sees the memory untouched. None without an active transfer.
    """
    f = Flows(*flows)
    no_move = np.empty(0, dtype=np.int64)
    active = sharing.active_transfers(f.src, no_move, no_move, reachable)
    if not active.any():
        return None
    pair = f.src * reachable.size + f.dst
    klass, first, mult, n_cls, _, _ = sharing._classes(
        active, pair if demand.size == 0 else pair[:0])
    used, at, cb, n_used = sharing._class_resources(first, n_cls, f.src.size, f.res,
                                                    f.starts, no_move, no_move, local)
    count, _, _ = sharing._members(at, cb, mult, n_cls, n_used)
    rate = np.full(n_cls, np.nan)
    dirty = sharing._changes((*memory[:4], memory[4].copy(), memory[5].copy()), pair,
                             first, mult, n_cls, used, n_used, count, cap, rate)
    group = sharing._groups(at, cb, n_cls, n_used)
    local[used[:n_used]] = -1
    redo = np.zeros(n_used, dtype=bool)
    redo[group[at[cb[:-1]][np.isnan(rate)]]] = True
    redo[group[:n_used][dirty]] = True
    cls_group = group[at[cb[:-1]]]
    sizes = np.bincount(cls_group, weights=mult[:n_cls], minlength=n_used)
    n_kept = 0 if demand.size else int(sizes[~redo].sum())
    return int(mult[:n_cls].sum()), int(np.count_nonzero(sizes)), int(sizes.max()), n_kept


def measure(clusters: int, scheduler: str, jobs: int) -> str:
    overrides = {"workload.n_jobs": jobs, "links.sharing": "maxmin"}
    if clusters != 100:
        overrides.update({"topology.generator": "barabasi_albert",
                          "topology.n_clusters": clusters})
    model = GeoModel(load_scenario(ROOT / "scenarios" / "pingan-medium.toml", overrides),
                     scheduler=scheduler)
    seen = []

    def observed(flows, move_src, move_dst, cap, reachable, maxmin, demand, local, memory):
        if move_src.size == 0 and (k := kept(flows, cap, reachable, demand, local,
                                             memory)) is not None:
            seen.append(k)
        return sharing.allocate(flows, move_src, move_dst, cap, reachable, maxmin, demand,
                                local, memory)

    core.allocate = observed
    try:
        while model.running:
            model.step()
    finally:
        core.allocate = sharing.allocate
    s = np.array(seen, dtype=float)
    world = "shipped topology" if clusters == 100 else "Barabási–Albert"
    return (f"{clusters} clusters ({world}), {scheduler}: {len(s)} allocations, "
            f"{s[:, 0].mean():.0f} active transfers, {s[:, 1].mean():.1f} groups, "
            f"largest {100 * (s[:, 2] / s[:, 0]).mean():.1f}% of the transfers (means); "
            f"{100 * s[:, 3].sum() / s[:, 0].sum():.1f}% of the transfers kept their rates")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--schedulers", nargs="+", default=["fair", "pingan[epsilon=0.6]"])
    parser.add_argument("--jobs", type=int, default=300)
    args = parser.parse_args()
    for clusters in args.clusters:
        for scheduler in args.schedulers:
            print(measure(clusters, scheduler, args.jobs), flush=True)


if __name__ == "__main__":
    main()
