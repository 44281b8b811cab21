"""Load-regime maps: the grid, each cell's comparison, resuming, refusing, the CLI, the map."""

from __future__ import annotations

import itertools
import json
import os
import shutil

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pandas as pd
import pytest
from conftest import closed_world
from matplotlib.colors import Normalize, to_rgba
from matplotlib.patches import Rectangle
from PIL import Image

import geosim
from geosim import GeosimError
from geosim.cli import _parse_vary, main
from geosim.experiment import SWEEP_MANIFEST, Sweep, load_sweep, runner
from geosim.experiment.sweep import decision
from geosim.scenario import load_scenario
from viz import figures
from viz.palette import UNDECIDED_COLOR, UNDECIDED_HATCH, change_cmap, scheduler_colors

SCHEDULERS = ["fifo", "srpt", "fair"]
VARY = {"workload.arrival_rate": [0.05, 0.09], "tiers.small.power_mean": [1.0, 2.0]}
ARGS = {"focus": "srpt", "versus": "fifo,fair", "reps": 2, "jobs_parallel": 1}


def tiny(**kw) -> dict:
    return closed_world(**{"slots": 1, "n_jobs": 30, **kw})


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A 2 × 2 sweep of three schedulers with two seeds, saved to a directory."""
    out = tmp_path_factory.mktemp("sweep") / "map"
    return geosim.sweep(tiny(), SCHEDULERS, VARY, out=out, **ARGS)


def _count_runs(monkeypatch) -> list[tuple[str, int, float]]:
    calls = []
    real = runner.simulate

    def counting(scenario, spec, seed):
        calls.append((spec.label, seed, scenario["workload"]["arrival_rate"]))
        return real(scenario, spec, seed)

    monkeypatch.setattr(runner, "simulate", counting)
    return calls


# ---------------------------------------------------------------------------- the table
def test_the_grid_is_the_product_of_the_values(swept):
    table = swept.table
    assert swept.keys == tuple(VARY)
    assert list(table.columns[:3]) == [*VARY, "cell"]
    assert table[list(VARY)].values.tolist() == [[0.05, 1.0], [0.05, 2.0], [0.09, 1.0],
                                                  [0.09, 2.0]]
    assert table["cell"].tolist() == [0, 1, 2, 3]
    assert sorted(p.name for p in swept.out.iterdir()) == [
        "cell-0", "cell-1", "cell-2", "cell-3", "sweep.csv", "sweep.json"]
    manifest = json.loads((swept.out / SWEEP_MANIFEST).read_text())
    assert manifest["vary"] == VARY and manifest["schedulers"] == SCHEDULERS
    assert manifest["seeds"] == [1, 2] and manifest["focus"] == "srpt"
    assert manifest["versus"] == ["fifo", "fair"]
    assert manifest["code"] == geosim.results.code_fingerprint()
    cell = json.loads((swept.out / "cell-3" / "compare.json").read_text())
    assert load_scenario(tiny()).with_overrides(manifest["cells"][3]["values"]).to_toml() \
        == cell["scenario"]
    assert cell["baseline"] == table.loc[3, "versus_best"]   # the cell's tables: vs it


def test_each_cell_equals_its_own_comparison(swept):
    row = swept.table.iloc[3]
    scenario = load_scenario(tiny()).with_overrides({k: float(row[k]) for k in VARY})
    fresh = geosim.compare(scenario, SCHEDULERS, reps=2, jobs_parallel=1,
                           baseline=row["versus_best"], within=(40, 200, 800))
    summary = fresh.summary.set_index("label")
    means = summary["mean_flowtime"]
    assert row["best"] == means.idxmin()
    assert row["runner_up"] == means.drop(row["best"]).idxmin()
    assert row["versus_best"] == means[["fifo", "fair"]].idxmin()
    assert row["focus_diff"] == summary.loc["srpt", "paired_diff"]
    assert row["focus_ci95"] == summary.loc["srpt", "paired_ci95"]
    for label in SCHEDULERS:
        assert row[f"mean {label}"] == means[label]
    for t in (40, 200, 800):
        assert row[f"focus_within_{t}"] == summary.loc["srpt", f"within_{t}"]
    util = fresh.runs.groupby("label")["slot_utilisation"].mean()
    assert row["focus_utilisation"] == pytest.approx(util["srpt"])
    assert row["utilisation"] == pytest.approx(fresh.runs["slot_utilisation"].mean())
    # the runner-up against the best: the stored runs read again with that baseline
    again = geosim.compare(scenario, SCHEDULERS, reps=2, jobs_parallel=1, baseline=row["best"],
                           out=swept.out / "cell-3").summary.set_index("label")
    assert row["runner_up_diff"] == again.loc[row["runner_up"], "paired_diff"]
    assert row["runner_up_ci95"] == again.loc[row["runner_up"], "paired_ci95"]
    assert row["decided"] == (row["runner_up_diff"] - row["runner_up_ci95"] > 0)
    assert row["verdict"] == ("faster" if row["focus_diff"] + row["focus_ci95"] < 0 else
                              "slower" if row["focus_diff"] - row["focus_ci95"] > 0 else
                              "undecided")


def test_the_table_reads_back_and_formats(swept):
    back = load_sweep(swept.out)
    pd.testing.assert_frame_equal(back.table, swept.table, check_dtype=False)
    assert (back.keys, back.labels, back.seeds, back.focus, back.versus, back.within) == \
        (swept.keys, swept.labels, swept.seeds, swept.focus, swept.versus, swept.within)
    lines = swept.format().splitlines()
    assert lines[0].split()[:4] == ["workload.arrival_rate", "tiers.small.power_mean", "best",
                                    "runner-up"]
    assert len(lines) == 1 + 4 + 1 + 4
    row = swept.table.iloc[1]
    assert lines[-3].startswith("cell 1 (workload.arrival_rate=0.05, tiers.small.power_mean=2): "
                                f"srpt vs {row['versus_best']}: ")
    assert f"; best {row['best']} (" in lines[-3]


# ---------------------------------------------------------------------------- resuming
def test_a_second_call_runs_only_what_is_missing(swept, tmp_path, monkeypatch):
    out = tmp_path / "map"
    shutil.copytree(swept.out, out)
    calls = _count_runs(monkeypatch)
    again = geosim.sweep(tiny(), SCHEDULERS, VARY, out=out, **ARGS)
    assert calls == []
    pd.testing.assert_frame_equal(again.table, swept.table)
    shutil.rmtree(out / "cell-2" / "runs" / "fair" / "seed-2")
    again = geosim.sweep(tiny(), SCHEDULERS, VARY, out=out, **ARGS)
    assert calls == [("fair", 2, 0.09)]
    pd.testing.assert_frame_equal(again.table, swept.table)
    # another focus needs no run: the table is made again from the stored runs
    calls.clear()
    other = geosim.sweep(tiny(), SCHEDULERS, VARY, out=out, focus="fifo", versus=["fair"],
                         reps=2, jobs_parallel=1)
    assert calls == [] and set(other.table["versus_best"]) == {"fair"}
    assert json.loads((out / SWEEP_MANIFEST).read_text())["focus"] == "fifo"


def test_another_grid_is_refused_and_replaced_with_restart(swept, tmp_path, monkeypatch):
    out = tmp_path / "map"
    shutil.copytree(swept.out, out)
    before = (out / SWEEP_MANIFEST).read_text()
    calls = _count_runs(monkeypatch)
    smaller = {"workload.arrival_rate": [0.05]}
    with pytest.raises(GeosimError, match="holds a sweep of another grid "
                       r"\(workload.arrival_rate=0.05,0.09 tiers.small.power_mean=1,2 there, "
                       r"workload.arrival_rate=0.05 here\); use another output directory "
                       r"\(or --restart to replace it\)"):
        geosim.sweep(tiny(), SCHEDULERS, smaller, out=out, **ARGS)
    with pytest.raises(GeosimError, match="holds a sweep of other schedulers"):
        geosim.sweep(tiny(), ["fifo", "srpt"], VARY, out=out, focus="srpt", reps=2)
    with pytest.raises(GeosimError, match="holds a sweep of other seeds"):
        geosim.sweep(tiny(), SCHEDULERS, VARY, out=out, focus="srpt", seeds=[1, 3])
    with pytest.raises(GeosimError, match="holds a sweep of a different scenario "
                       r"\(workload.n_jobs: 20 here, 30 there\)"):
        geosim.sweep(tiny(n_jobs=20), SCHEDULERS, VARY, out=out, **ARGS)
    assert calls == [] and (out / SWEEP_MANIFEST).read_text() == before
    replaced = geosim.sweep(tiny(), SCHEDULERS, smaller, out=out, restart=True, **ARGS)
    assert len(calls) == 6 and len(replaced.table) == 1
    assert sorted(p.name for p in out.iterdir()) == ["cell-0", "sweep.csv", "sweep.json"]
    assert json.loads((out / SWEEP_MANIFEST).read_text())["vary"] == smaller


def test_a_directory_that_is_not_a_sweep_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(GeosimError, match="neither empty nor a geosim sweep directory"):
        geosim.sweep(tiny(), SCHEDULERS, VARY, out=tmp_path, restart=True, **ARGS)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("vary, kwargs, message", [
    ({}, {}, "vary: vary 1 to 3 keys (got 0)"),
    ({f"k{i}": [1] for i in range(4)}, {}, "vary: vary 1 to 3 keys (got 4)"),
    ({"workload.nope": [1, 2]}, {}, "vary: workload.nope=1: unknown key 'workload.nope'"),
    ({"workload.arrival_rate": [0.1, -1]}, {},
     "vary: workload.arrival_rate=-1: workload.arrival_rate: must be > 0 (got -1)"),
    ({"workload.arrival_rate": []}, {}, "vary: workload.arrival_rate: no value to vary over"),
    ({"workload.arrival_rate": [0.1, 0.1]}, {}, "vary: workload.arrival_rate=0.1 is given twice"),
    ({"run.seed": [1, 2]}, {}, "vary: 'run.seed' cannot be varied"),
    ({"workload.mean_tasks": [10.0, 60.0], "workload.max_tasks": [50, 100]}, {},
     "vary: the cell workload.mean_tasks=60, workload.max_tasks=50: workload.mean_tasks: "
     "must be below workload.max_tasks = 50 (got 60.0)"),
    ({"workload.arrival_rate": [0.1]}, {"focus": "late"}, "focus: 'late' is not among"),
    ({"workload.arrival_rate": [0.1]}, {"versus": "fifo"}, "versus: needs a focus"),
    ({"workload.arrival_rate": [0.1]}, {"focus": "srpt", "versus": "srpt,fifo"},
     "versus: holds the focus 'srpt'"),
    ({"workload.arrival_rate": [0.1]}, {"schedulers": ["srpt"]},
     "schedulers: a sweep needs at least two schedulers"),
    ({"workload.arrival_rate": [0.1]}, {"jobs_parallel": 0}, "jobs-parallel: must be"),
])
def test_bad_input_is_refused_before_anything_runs(tmp_path, monkeypatch, vary, kwargs,
                                                   message):
    calls = _count_runs(monkeypatch)
    schedulers = kwargs.pop("schedulers", SCHEDULERS)
    with pytest.raises(GeosimError) as err:
        geosim.sweep(tiny(), schedulers, vary, out=tmp_path / "map", **kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert calls == [] and not (tmp_path / "map").exists()


def test_vary_values_split_outside_brackets():
    assert _parse_vary(["tiers.small.slots=[1, 2],3", "workload.arrival_rate=0.02,0.07",
                        "links.transfer=fetch,stream", "outages.enabled=true,false"]) == {
        "tiers.small.slots": [[1, 2], 3], "workload.arrival_rate": [0.02, 0.07],
        "links.transfer": ["fetch", "stream"], "outages.enabled": [True, False]}


def _toml(tmp_path, **kw) -> str:
    path = tmp_path / "tiny.toml"
    path.write_text(load_scenario(tiny(**kw)).to_toml())
    return str(path)


@pytest.mark.parametrize("argv, message", [
    (["--vary", "workload.arrival_rate"], "--vary: expected KEY=V1,V2,..., got"),
    (["--vary", "workload.arrival_rate=0.1,,0.2"], "--vary: workload.arrival_rate: empty value"),
    (["--vary", "tiers.small.slots=[1,2"], "--vary: unbalanced brackets or quotes"),
    (["--vary", "workload.arrival_rate=0.1", "--vary", "workload.arrival_rate=0.2"],
     "--vary: workload.arrival_rate is varied twice"),
    (["--vary", "workload.arrival_rate=0.1,-2"], "vary: workload.arrival_rate=-2: "
     "workload.arrival_rate: must be > 0 (got -2)"),
    (["--vary", "workload.arrival_rate=0.1", "--focus", "late"], "focus: 'late' is not among"),
    (["--vary", "workload.arrival_rate=0.1", "--focus", "srpt", "--versus", "fifo,dolly"],
     "versus: 'dolly' is not among"),
    (["--vary", "workload.arrival_rate=0.1", "--seeds", "1,1"], "seeds: need distinct seeds"),
    (["--vary", "workload.arrival_rate=0.1", "--within", "0"], "within: thresholds must be"),
])
def test_cli_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, argv, message):
    scenario = _toml(tmp_path)
    out = tmp_path / "map"
    code = main(["sweep", scenario, "--schedulers", "fifo,srpt", "--out", str(out), *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("geosim: error: ") and len(err.splitlines()) == 1
    assert message in err
    assert not out.exists()


def test_cli_sweep_prints_the_table_and_resumes(tmp_path, capsys, monkeypatch):
    scenario = _toml(tmp_path)
    out = tmp_path / "map"
    argv = ["sweep", scenario, "--schedulers", "fifo,srpt", "--vary",
            "workload.arrival_rate=0.05,0.09", "--focus", "srpt", "--out", str(out),
            "--no-progress", "--jobs-parallel", "1"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    expected = geosim.sweep(load_scenario(scenario), "fifo,srpt",
                            {"workload.arrival_rate": [0.05, 0.09]}, focus="srpt",
                            out=tmp_path / "again", jobs_parallel=1)
    assert printed == f"{expected.format()}\nresults written to {out}/\n"
    calls = _count_runs(monkeypatch)
    changed = [a.replace("0.05,0.09", "0.05") for a in argv]
    assert main(changed) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"geosim: error: {out}: holds a sweep of another grid "
                   "(workload.arrival_rate=0.05,0.09 there, workload.arrival_rate=0.05 here); "
                   "use another output directory (or --restart to replace it)")
    assert main(argv) == 0 and calls == []
    assert main([*changed, "--restart"]) == 0 and len(calls) == 2


# ---------------------------------------------------------------------------- the map
def _synthetic(values: dict, diffs: list[float], focus: str | None = "pingan") -> Sweep:
    """A sweep table of given paired changes (interval ±10% each), without any run."""
    keys = tuple(values)
    rows = []
    for i, combo in enumerate(itertools.product(*values.values())):
        d = diffs[i]
        rows.append({**dict(zip(keys, combo, strict=True)), "cell": i,
                     "best": "pingan" if d < 0 else "late", "runner_up": "late",
                     "runner_up_diff": 0.3, "runner_up_ci95": 0.1 + 0.15 * (i % 2),
                     "decided": i % 2 == 0, "versus_best": "late", "focus_diff": d,
                     "focus_ci95": 0.1, "verdict": decision(d, 0.1),
                     "focus_utilisation": 0.02 + i / 100, "utilisation": 0.05})
    return Sweep(pd.DataFrame(rows), keys, {k: list(v) for k, v in values.items()},
                 ("pingan", "late", "flutter+mantri"), (1, 2, 3), focus,
                 ("late", "flutter+mantri") if focus else ())


def _cells(fig) -> dict[int, Rectangle]:
    return {int(p.get_gid().split(":")[1]): p for ax in fig.axes for p in ax.patches
            if (p.get_gid() or "").startswith("cell:")}


def test_the_map_of_one_key_is_a_row_coloured_by_the_focus_change():
    sweep = _synthetic({"workload.arrival_rate": [0.02, 0.07, 0.15]}, [-0.4, 0.05, 0.3])
    fig = figures.sweep_map(sweep)
    fig.canvas.draw()
    cells = _cells(fig)
    assert sorted(cells) == [0, 1, 2]
    assert [(c.get_x(), c.get_y()) for c in cells.values()] == [(0, 0), (1, 0), (2, 0)]
    cmap, norm = change_cmap(), Normalize(-0.4, 0.4)
    assert to_rgba(cells[0].get_facecolor()) == pytest.approx(cmap(norm(-0.4)))   # faster
    assert to_rgba(cells[2].get_facecolor()) == pytest.approx(cmap(norm(0.3)))    # slower
    assert to_rgba(cells[1].get_facecolor()) == pytest.approx(to_rgba(UNDECIDED_COLOR))
    assert cells[1].get_hatch() == UNDECIDED_HATCH and not cells[0].get_hatch()
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.02", "0.07", "0.15"]
    assert ax.get_xlabel() == "workload.arrival_rate" and ax.get_yticks().size == 0
    texts = {t.get_gid(): t.get_text() for t in ax.texts}
    assert texts["text:0"] == "-40.0% [-50.0, -30.0]\nvs late\nbest: pingan\nutil 2.0%"
    assert texts["text:1"] == "+5.0% [-5.0, +15.0]\nvs late\nbest: late?\nutil 3.0%"
    bar = fig.axes[-1]
    assert bar.get_ylim() == pytest.approx((-0.4, 0.4))
    # without a focus: the best scheduler's colour, hatched when undecided
    fig = figures.sweep_map(_synthetic({"workload.arrival_rate": [0.02, 0.07]}, [-0.4, 0.2],
                                       focus=None))
    fig.canvas.draw()
    cells = _cells(fig)
    colors = scheduler_colors(["pingan", "late", "flutter+mantri"])
    assert to_rgba(cells[0].get_facecolor())[:3] == pytest.approx(colors["pingan"])
    assert to_rgba(cells[1].get_facecolor())[:3] == pytest.approx(colors["late"])
    assert cells[1].get_hatch() == UNDECIDED_HATCH and not cells[0].get_hatch()


def test_the_map_of_two_keys_is_a_grid_and_of_three_keys_panels(swept):
    fig = figures.sweep_map(swept.out)
    fig.canvas.draw()
    cells = _cells(fig)
    assert len(cells) == 4
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.05", "0.09"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1", "2"]
    assert (ax.get_xlabel(), ax.get_ylabel()) == tuple(VARY)
    table = swept.table
    for row in table.to_dict("records"):
        cell = cells[row["cell"]]
        assert (cell.get_x(), cell.get_y()) == (VARY["workload.arrival_rate"].index(
            row["workload.arrival_rate"]), VARY["tiers.small.power_mean"].index(
            row["tiers.small.power_mean"]))
        assert (cell.get_hatch() == UNDECIDED_HATCH) == (row["verdict"] == "undecided")
        text = next(t.get_text() for t in ax.texts if t.get_gid() == f"text:{row['cell']}")
        assert f"vs {row['versus_best']}\nbest: {row['best']}" in text
        assert f"{100 * row['focus_diff']:+.1f}% [" in text
    assert "srpt against the best of fifo, fair" in fig._suptitle.get_text()
    three = _synthetic({"a.x": [1, 2], "b.y": [1, 2, 3], "c.z": [10.0, 20.0]},
                       list(np.linspace(-0.5, 0.5, 12)))
    fig = figures.sweep_map(three)
    fig.canvas.draw()
    panels = [ax for ax in fig.axes if ax.patches]
    assert [ax.get_title(loc="left") for ax in panels] == ["c.z = 10", "c.z = 20"]
    assert [len(ax.patches) for ax in panels] == [6, 6]


def test_plot_draws_the_map_of_a_sweep_directory(swept, tmp_path, capsys):
    out = tmp_path / "figs"
    assert main(["plot", str(swept.out), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["sweep-map.png"]
    with Image.open(out / "sweep-map.png") as image:
        assert image.format == "PNG" and image.size[0] > 600
    capsys.readouterr()
    assert main(["animate", str(swept.out), "--out", str(tmp_path / "a.gif")]) == 2
    assert "a sweep directory holds many runs" in capsys.readouterr().err
    # a cell is a comparison directory: its tables are against the best of versus
    fig = figures.paired_change(swept.out / "cell-0")
    fig.canvas.draw()
    versus = swept.table.loc[0, "versus_best"]
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == [
        f"λ = 0.05/s\nvs {versus}"]
