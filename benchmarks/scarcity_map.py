"""Where insurance beats speculation, on every axis that decides it.

The load-regime map of ``docs/results.md`` varies load and compute on a world whose slots
stay 97% idle. This map varies four scarcities of ``scenarios/pingan-medium.toml``, each
at three levels (``docs/model.md``, "Scarcity axes"), the middle one (bold) being the
shipped world:

- load, ``workload.arrival_rate``: 0.02, **0.07**, 0.15 (003's three loads);
- slots, ``clusters.slot_scale``: **1**, 0.2, 0.05 (each cluster's drawn slots times the
  scale);
- WAN, ``links.bandwidth_scale``: 3, **1**, 0.3 (every link and gate);
- outages, ``outages.probability_scale``: 0, **1**, 2 (every cluster's outage
  probability per trial).

One panel per pair of axes, the other two at the shipped level: 6 panels of 3 × 3 cells,
33 distinct cells, each run once and shared by the panels it belongs to. In every cell
PingAn (ε = 0.6), Flutter+Mantri, LATE, Spark's speculation and FIFO run on the same
seeds, worlds and jobs (common random numbers). Per cell: PingAn's paired change of the
mean flowtime (job by job, 95% interval by batch means) against the best speculation
(the one of Flutter+Mantri, LATE and Spark's speculation with the lowest mean) and
against FIFO, the lowest mean of all five, and the utilisation of slots, gates and links
over all runs of the cell (busy slot-seconds over slot-seconds; a gate's or link's
traffic over its capacity, summed over samples and resources, and the same for the
busiest gate and link alone).

With ``--more-seeds N,M``, a cell whose verdict against the best speculation is
undecided on the first seeds runs again on seeds 1..N, and if still undecided on 1..M
(the runs made are kept).

Printed: the table (Markdown), then the figure (``--figure``, one heat map per panel of
PingAn's change against the best speculation, each cell marked with its verdict).
Runs are saved under ``--out`` (default ``results/scarcity-map``); an interrupted map
resumes run by run, and ``--dask ADDRESS`` runs it on a Dask cluster. Usage:

    python benchmarks/scarcity_map.py [--jobs 300] [--seeds 3] [--more-seeds N,M]
        [--jobs-parallel K] [--dask ADDRESS] [--out DIR] [--figure docs/img/scarcity-map.png]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
from summary_tables import interval as paired_interval
from summary_tables import run_script

import geosim
from geosim.experiment import build_comparison
from geosim.experiment.store import MANIFEST, load_outcome, run_path
from geosim.experiment.sweep import cell_row, decision
from geosim.world import build_world, spawn_streams

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "pingan-medium.toml"
PINGAN = "pingan[epsilon=0.6]"
SPECULATION = ("flutter+mantri", "late", "spark+speculation")
SCHEDULERS = (PINGAN, *SPECULATION, "fifo")
SHORT = {PINGAN: "PingAn", "flutter+mantri": "F+Mantri", "late": "LATE",
         "spark+speculation": "Spark spec.", "fifo": "FIFO"}
#: Axis name: (scenario key, levels from abundant to scarce, the shipped level).
AXES = {
    "load": ("workload.arrival_rate", (0.02, 0.07, 0.15), 0.07),
    "slots": ("clusters.slot_scale", (1.0, 0.2, 0.05), 1.0),
    "WAN": ("links.bandwidth_scale", (3.0, 1.0, 0.3), 1.0),
    "outages": ("outages.probability_scale", (0.0, 1.0, 2.0), 1.0),
}
WITHIN = (100.0, 200.0, 800.0)


def panels() -> list[tuple[str, str]]:
    """Every pair of axes, in the order of :data:`AXES`."""
    return list(itertools.combinations(AXES, 2))


def cells() -> list[dict[str, float]]:
    """The distinct cells of all panels: each a value per axis, the others shipped."""
    seen: dict[tuple, dict[str, float]] = {}
    for a, b in panels():
        for va, vb in itertools.product(AXES[a][1], AXES[b][1]):
            cell = {name: shipped for name, (_, _, shipped) in AXES.items()}
            cell[a], cell[b] = va, vb
            seen.setdefault(tuple(cell.values()), cell)
    return list(seen.values())


def cell_name(cell: dict[str, float]) -> str:
    """The cell's directory name, e.g. ``load=0.07,slots=1,WAN=1,outages=1``."""
    return ",".join(f"{name}={value:g}" for name, value in cell.items())


def overrides(cell: dict[str, float], jobs: int) -> dict[str, float | int]:
    """The cell's scenario overrides."""
    return {"workload.n_jobs": jobs, **{AXES[name][0]: value for name, value in cell.items()}}


def wan_utilisation(directory: Path, scenario: geosim.Scenario, seed: int
                    ) -> tuple[float, float, float, float]:
    """Utilisation of the gates and the links in one run, over all and of the busiest.

    A gate carries the larger of its egress and ingress traffic (MB/s, averaged since the
    previous sample) against its capacity; a link the larger of its two directions
    against its bandwidth (which varies: each sample's bandwidth is the one at the
    sample). Utilisation is traffic summed over samples (and resources) over capacity
    summed alike; the busiest is the resource with the highest such ratio. A link's can
    exceed 100% where its bandwidth changes between samples.
    """
    world = build_world(scenario.with_overrides({"run.seed": seed}), spawn_streams(seed))
    clusters = pd.read_parquet(directory / "clusters.parquet",
                               columns=["cluster", "egress_mbps", "ingress_mbps"])
    gates = pd.DataFrame({
        "used": np.maximum(clusters["egress_mbps"], clusters["ingress_mbps"]),
        "cap": world.gate[clusters["cluster"].to_numpy()], "id": clusters["cluster"]})
    links = pd.read_parquet(directory / "links.parquet",
                            columns=["link", "bandwidth", "forward_mbps", "backward_mbps"])
    links = pd.DataFrame({"used": np.maximum(links["forward_mbps"], links["backward_mbps"]),
                          "cap": links["bandwidth"], "id": links["link"]})
    out = []
    for table in (gates, links):
        per = table.groupby("id")[["used", "cap"]].sum()
        out += [table["used"].sum() / table["cap"].sum(), (per["used"] / per["cap"]).max()]
    return tuple(float(x) for x in out)  # type: ignore[return-value]


def cell_figures(directory: Path, scenario: geosim.Scenario, seeds: list[int]
                 ) -> dict[str, object]:
    """One cell's row: the sweep's verdict columns, PingAn against FIFO, WAN utilisation."""
    manifest = json.loads((directory / MANIFEST).read_text())
    outcomes = [load_outcome(run_path(directory, manifest, label, seed), label, seed)
                for label in SCHEDULERS for seed in seeds]
    row, _ = cell_row(outcomes, list(SCHEDULERS), seeds, PINGAN, list(SPECULATION), WITHIN)
    fifo = build_comparison(outcomes, list(SCHEDULERS), seeds, "fifo", WITHIN).summary
    mine = fifo.set_index("label").loc[PINGAN]
    row["fifo_diff"], row["fifo_ci95"] = float(mine["paired_diff"]), float(mine["paired_ci95"])
    wan = np.array([wan_utilisation(run_path(directory, manifest, label, seed), scenario, seed)
                    for label in SCHEDULERS for seed in seeds])
    (row["gate_utilisation"], row["gate_busiest"], row["link_utilisation"],
     row["link_busiest"]) = wan.mean(axis=0)
    return row


def interval(diff: float, half: float) -> str:
    """The paired change with its interval and verdict; a decided lead in bold."""
    text = paired_interval(diff, half)
    return f"**{text}**" if decision(diff, half) == "faster" else text


def markdown(table: pd.DataFrame) -> str:
    """The map's table, one row per cell."""
    lines = ["| load | slots | WAN | outages | seeds | best (mean s) | best speculation "
             "| PingAn vs it | PingAn vs FIFO | util. slots / gates / links "
             "| busiest gate / link |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in table.iterrows():
        best = f"{SHORT[r['best']]} ({r['mean ' + r['best']]:.0f})"
        if not r["decided"]:
            best += f", undecided vs {SHORT[r['runner_up']]}"
        lines.append(
            f"| {r['load']:g} | {r['slots']:g} | {r['WAN']:g} | {r['outages']:g} "
            f"| {r['seeds']} | {best} | "
            f"{SHORT[r['versus_best']]} ({r['mean ' + r['versus_best']]:.0f}) | "
            f"{interval(r['focus_diff'], r['focus_ci95'])} | "
            f"{interval(r['fifo_diff'], r['fifo_ci95'])} | "
            f"{100 * r['utilisation']:.1f}% / {100 * r['gate_utilisation']:.1f}% / "
            f"{100 * r['link_utilisation']:.1f}% | "
            f"{100 * r['gate_busiest']:.1f}% / {100 * r['link_busiest']:.1f}% |")
    return "\n".join(lines)


def draw(table: pd.DataFrame, path: Path) -> None:
    """One heat map per pair of axes: PingAn's change against the best speculation.

    A decided cell is coloured by the change (blue: PingAn faster, red: slower; clipped at
    ±100%), an undecided one is grey; every cell names the best speculation.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(13.5, 8.4), constrained_layout=True)
    index = table.set_index(list(AXES))
    cmap = plt.get_cmap("RdBu_r").copy()
    cmap.set_bad("#dddddd")
    image = None
    for ax, (a, b) in zip(axes.flat, panels(), strict=True):
        va, vb = AXES[a][1], AXES[b][1]
        grid = np.full((len(va), len(vb)), np.nan)
        for i, j in itertools.product(range(len(va)), range(len(vb))):
            cell = {name: shipped for name, (_, _, shipped) in AXES.items()}
            cell[a], cell[b] = va[i], vb[j]
            r = index.loc[tuple(cell.values())]
            diff, word = 100 * r["focus_diff"], decision(r["focus_diff"], r["focus_ci95"])
            if word != "undecided":
                grid[i, j] = diff
            ax.text(j, i, f"{diff:+.0f}%\n{word}\nvs {SHORT[r['versus_best']]}",
                    ha="center", va="center", fontsize=8,
                    color="white" if word != "undecided" and abs(diff) > 60 else "black",
                    fontweight="bold" if word != "undecided" else "normal")
        image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=-100, vmax=100,
                          origin="upper")
        ax.set_xticks(range(len(vb)), [f"{v:g}" for v in vb])
        ax.set_yticks(range(len(va)), [f"{v:g}" for v in va])
        ax.set_xlabel(f"{b} ({AXES[b][0]})", fontsize=9)
        ax.set_ylabel(f"{a} ({AXES[a][0]})", fontsize=9)
    fig.colorbar(image, ax=axes, shrink=0.6, extend="both",
                 label="PingAn's paired change of the mean flowtime against the best "
                       "speculation (%; grey: undecided)")
    fig.suptitle("Where insurance (PingAn, ε = 0.6) beats speculation: each panel varies "
                 "two scarcities, the others as shipped (blue: PingAn faster)")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def run_cell(cell: dict[str, float], seeds: list[int], args: argparse.Namespace
             ) -> dict[str, object]:
    """Run (or resume) one cell on ``seeds`` and return its row."""
    scenario = geosim.load_scenario(SCENARIO, overrides(cell, args.jobs))
    directory = args.out / cell_name(cell)
    geosim.compare(scenario, list(SCHEDULERS), seeds=seeds, jobs_parallel=args.jobs_parallel,
                   within=WITHIN, out=directory, dask=args.dask)
    return cell_figures(directory, scenario, seeds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=300, help="jobs per run")
    parser.add_argument("--seeds", type=int, default=3, help="replications (seeds 1..N)")
    parser.add_argument("--jobs-parallel", type=int, default=None)
    parser.add_argument("--dask", default=None, help="address of a Dask scheduler")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "scarcity-map")
    parser.add_argument("--more-seeds", type=lambda text: [int(n) for n in text.split(",")],
                        default=[], help="N[,M...]: rerun cells left undecided with seeds "
                        "1..N, those still undecided with 1..M, and so on")
    parser.add_argument("--figure", type=Path, default=None, help="write the figure here")
    args = parser.parse_args()
    rows = []
    start = time.perf_counter()
    todo = cells()
    for i, cell in enumerate(todo):
        print(f"cell {i + 1}/{len(todo)}: {cell_name(cell)}", flush=True)
        seeds = list(range(1, args.seeds + 1))
        row = run_cell(cell, seeds, args)
        for more in args.more_seeds:
            if more <= len(seeds) or decision(row["focus_diff"], row["focus_ci95"]) != "undecided":
                break
            seeds = list(range(1, more + 1))
            print(f"  undecided: seeds 1..{more}", flush=True)
            row = run_cell(cell, seeds, args)
        rows.append({**cell, "seeds": len(seeds), **row})
    wall = time.perf_counter() - start
    table = pd.DataFrame(rows)
    table.to_csv(args.out / "map.csv", index=False)
    more = ", then ".join(str(n) for n in args.more_seeds) or "no more"
    print(f"\n{len(todo)} cells x {len(SCHEDULERS)} schedulers x {args.seeds} seeds "
          f"({more} where undecided), {args.jobs} jobs per run: {wall:.0f} s wall\n")
    print(markdown(table))
    words = [decision(d, h) for d, h in zip(table["focus_diff"], table["focus_ci95"],
                                            strict=True)]
    print(f"\nPingAn against the best speculation: {words.count('faster')} cells faster, "
          f"{words.count('slower')} slower, {words.count('undecided')} undecided "
          f"(of {len(table)}).")
    if args.figure is not None:
        draw(table, args.figure)
        print(f"figure written to {args.figure}")
    if not math.isfinite(float(table["focus_diff"].sum())):
        raise SystemExit("some cell has no paired change (a scheduler left jobs unfinished)")


if __name__ == "__main__":
    run_script(main, "scarcity_map")
