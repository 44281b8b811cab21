"""Mesa's own tools on a GeoModel: batch_run, the DataCollector, SolaraViz."""

from __future__ import annotations

import bisect
import inspect
import tomllib
from pathlib import Path

import mesa
import numpy as np
import pandas as pd
import pytest

import geosim
from geosim import state
from geosim.agents import ClusterAgent
from geosim.datacollector import (
    CLUSTER_REPORTERS,
    MODEL_REPORTERS,
    GeoDataCollector,
    ModelColumns,
)
from geosim.mesa_scenario import SCENARIO_PARAM
from geosim.model import GeoModel

ROOT = Path(__file__).resolve().parents[1]
QUICK = str(ROOT / "scenarios" / "quickstart.toml")


def _small(n_jobs: int = 8) -> dict:
    """quickstart.toml as a mapping, with fewer jobs."""
    raw = tomllib.loads(Path(QUICK).read_text())
    raw["workload"]["n_jobs"] = n_jobs
    return raw


def _batch_run(parameters: dict, seeds: list[int], max_steps: int) -> pd.DataFrame:
    """``mesa.batch_run`` over ``parameters`` and ``seeds``: from Mesa 3.5 on, seeds are
    its ``rng`` argument (it sets a model's ``seed`` keyword from it), before, a parameter.
    """
    if "rng" in inspect.signature(mesa.batch_run).parameters:
        rows = mesa.batch_run(GeoModel, parameters=parameters, rng=seeds, max_steps=max_steps,
                              number_processes=1, display_progress=False)
    else:
        rows = mesa.batch_run(GeoModel, parameters={**parameters, "seed": seeds},
                              max_steps=max_steps, number_processes=1, display_progress=False)
    return pd.DataFrame(rows)


def test_batch_run_returns_model_and_cluster_variables():
    table = _batch_run({"scenario": [QUICK], "scheduler": ["fifo", "srpt"]}, [1, 2], 40)
    assert set(MODEL_REPORTERS) <= set(table.columns)
    assert set(CLUSTER_REPORTERS) <= set(table.columns)
    runs = table.groupby(["scheduler", "seed"])
    assert runs.ngroups == 4
    assert (runs.size() == 20).all()                          # one row per cluster
    # Mesa 3.3 stops after max_steps + 1 steps, Mesa 3.5 after max_steps; the rows of
    # the last step are stored at step - 1
    (last,) = table["Step"].unique()
    assert last + 1 in (40, 41)
    # each run's rows hold the state when it stopped: the same as stepping it by hand
    model = GeoModel(QUICK, "srpt", 2)
    for _ in range(last + 1):
        model.step()
    rows = table[(table["scheduler"] == "srpt") & (table["seed"] == 2)]
    assert rows["time"].iloc[0] == model.engine.time > 0
    assert rows["alive_jobs"].iloc[0] == len(model.jobs) > 0
    assert rows["busy_slots"].iloc[0] == pytest.approx(state.busy_slots(model.engine).sum())
    assert rows["busy"].tolist() == state.busy_slots(model.engine).tolist()
    assert rows["queue"].tolist() == state.queues(model.engine).tolist()
    assert rows["cluster"].tolist() == list(range(20))
    # the schedulers differ, the seeds differ
    assert table.groupby(["scheduler", "seed"])["busy_slots"].first().nunique() > 1


def test_batch_run_to_the_end_reports_the_finished_run():
    last = _batch_run({"scenario": [_small()], "scheduler": "srpt"}, [3], 100_000).iloc[0]
    result = geosim.run(_small(), "srpt", 3)
    assert last["jobs_done"] == 8 and last["alive_jobs"] == 0
    assert last["mean_flowtime"] == pytest.approx(result.summary["mean_flowtime"], rel=1e-12)
    assert last["time"] == pytest.approx(result.summary["simulated_seconds"])


def test_a_scenario_path_mapping_or_object_make_the_same_run():
    models = [GeoModel(QUICK, "srpt", 2), GeoModel(geosim.load_scenario(QUICK), "srpt", 2),
              GeoModel(tomllib.loads(Path(QUICK).read_text()), "srpt", 2)]
    for model in models:
        for _ in range(30):
            model.step()
    assert len({m.engine.time for m in models}) == 1
    assert len({m.datacollector.model_vars["busy_slots"].tobytes() for m in models}) == 1


def test_datacollector_collects_every_step_and_stops_with_the_run():
    model = GeoModel(_small(), "fair", 1)
    dc = model.datacollector
    assert isinstance(dc, mesa.DataCollector) and isinstance(dc, GeoDataCollector)
    assert model.running and dc.model_vars.n == 0
    while model.running:
        model.step()
    steps, end = model.steps, model.engine.time
    assert model.done and model.jobs_done == 8
    table = dc.get_model_vars_dataframe()
    assert list(table.columns) == list(MODEL_REPORTERS)
    assert len(table) == steps                 # index k: the state after step k + 1
    keys = dc._collection_steps                # what Mesa 3.5's batch_run bisects
    assert len(keys) == steps and keys[-1] == steps - 1 and list(keys[:3]) == [0, 1, 2]
    assert bisect.bisect_right(keys, steps - 1) - 1 == steps - 1
    assert table["time"].iloc[-1] == end and np.all(np.diff(table["time"]) >= 0)
    assert table["jobs_done"].iloc[-1] == 8 and table["alive_jobs"].iloc[-1] == 0
    assert table["alive_jobs"].max() > 0 and table["busy_slots"].max() > 0
    assert np.isnan(table["mean_flowtime"].iloc[0])
    model.step()                                # past the end: Mesa counts it, nothing moves
    assert model.steps == steps + 1 and model.engine.time == end and not model.running
    assert len(dc.get_model_vars_dataframe()) == steps + 1
    dc.model_vars["time"][0] = -1.0             # a copy: the collector keeps its values
    assert dc.model_vars["time"][0] == table["time"].iloc[0]


def test_cluster_rows_are_read_only_for_the_last_step():
    model = GeoModel(QUICK, "fair", 1)
    for _ in range(30):
        model.step()
    dc = model.datacollector
    assert dc._agent_records.get(model.steps - 2, []) == []
    rows = dc._agent_records.get(model.steps - 1)
    clusters = model.agents_by_type[ClusterAgent]
    assert [r[1] for r in rows] == [c.unique_id for c in clusters]
    names = list(dc.agent_reporters)
    for row, cluster in zip(rows, clusters, strict=True):
        values = dict(zip(names, row[2:], strict=True))
        assert values["cluster"] == cluster.index and values["state"] == cluster.state
        assert values["busy"] == cluster.busy and values["queue"] == cluster.queue
        assert values["reachable"] == cluster.reachable
    frame = dc.get_agent_vars_dataframe()
    assert frame.index.names == ["Step", "AgentID"] and len(frame) == 20
    model.step()
    assert dc._agent_records.get(model.steps - 2, []) == []   # not kept


def test_geosims_own_runs_keep_their_results_and_stop():
    model = GeoModel(_small(), "srpt", 3)
    result = model.run()
    assert not model.running
    assert result.summary["mean_flowtime"] == pytest.approx(
        model.datacollector.model_vars["mean_flowtime"][-1], rel=1e-12)


def test_model_columns_keep_rows_across_blocks(monkeypatch):
    monkeypatch.setattr(ModelColumns, "BLOCK", 4)
    columns = ModelColumns({"t": (None, float), "n": (None, np.int64)})
    for i in range(11):                   # two blocks moved (the columns grow), three left
        columns.append((0.5 * i, i))
        assert columns["n"].tolist() == list(range(i + 1))
    assert columns.n == 11 and columns["t"][-1] == 5.0 and columns["n"].dtype == np.int64
    assert pd.DataFrame(columns.snapshot())["n"].sum() == 55
    assert list(GeoDataCollector(GeoModel(_small(), "fair", 1))._collection_steps) == []


# ---------------------------------------------------------------------------- SolaraViz
# Mesa 3.3's own SolaraViz trips Solara's hook check (its code, not geosim's)
@pytest.mark.filterwarnings("ignore:.*use_state. found despite early return:UserWarning")
def test_solara_viz_draws_the_geo_model_with_mesas_own_components():
    solara = pytest.importorskip("solara", reason="SolaraViz needs the viz extra")
    import ipyvuetify as v
    from mesa.visualization import SolaraViz, make_plot_component

    drawn: list[dict[str, np.ndarray]] = []     # what each render of the plot drew

    def seen(ax) -> None:
        drawn.append({line.get_label(): np.asarray(line.get_ydata()) for line in ax.lines})

    model = GeoModel(QUICK, "fair", 2)
    params = {SCENARIO_PARAM: QUICK,
              "scheduler": {"type": "Select", "value": "fair", "values": ["fair", "srpt"],
                            "label": "scheduler"},
              "seed": 2}
    plot = make_plot_component(["alive_jobs", "busy_slots"], post_process=seen)
    page = SolaraViz(model, components=[plot], model_params=params, name="geosim")
    _box, rc = solara.render(solara.AppLayout(children=[page]), handle_error=False)
    step = rc.find(v.Btn, children=["Step"]).widget
    for _ in range(5):
        step.click()
    assert model.steps == 5
    last = drawn[-1]
    assert last["alive_jobs"].tolist() == model.datacollector.model_vars["alive_jobs"].tolist()
    assert last["busy_slots"].tolist() == model.datacollector.model_vars["busy_slots"].tolist()
    assert len(last["busy_slots"]) == 5 and last["busy_slots"].max() > 0
    # SolaraViz's Reset re-creates the GeoModel from the parameters (a scenario path)
    rc.find(v.Select, label="scheduler").widget.v_model = "srpt"
    rc.find(v.Btn, children=["Reset"]).widget.click()
    rc.find(v.Btn, children=["Step"]).widget.click()
    assert len(drawn[-1]["busy_slots"]) == 1
    assert model.steps == 5      # the first model is left as it was
