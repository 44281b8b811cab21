"""Agents carry the engine's state, one recorder keeps the time series, the view is read-only."""

from __future__ import annotations

import numpy as np
import pytest

from geosim import state
from geosim.agents import ClusterAgent, JobAgent, LinkAgent
from geosim.engine import READY, RUNNING
from geosim.model import GeoModel
from geosim.recorder import Recorder
from geosim.scenario import load_scenario
from geosim.schedulers import Scheduler, registered
from geosim.testing import geo_world
from geosim.view import Actions, SchedulerView


def _model(scheduler: str = "fair", **overrides) -> GeoModel:
    return GeoModel(load_scenario(geo_world(), overrides), scheduler)


def _step_until(model: GeoModel, test, limit: int = 3000) -> None:
    for _ in range(limit):
        if test(model):
            return
        model.step()
    raise AssertionError("the condition never held")


# ---------------------------------------------------------------------------- agents
def test_agent_sets_select_on_the_truth():
    model = _model(**{"tiers.small.outage_probability": 0.5})
    e = model.engine
    _step_until(model, lambda m: not m.engine.reachable.all() and len(m.jobs) > 2)
    clusters = model.agents_by_type[ClusterAgent]
    down = clusters.select(lambda c: not c.reachable)
    assert sorted(c.index for c in down) == np.flatnonzero(~e.reachable).tolist()
    assert {c.state for c in down} == {"unreachable"}
    codes = state.cluster_state_codes(e.reachable, state.available_slots(model.world),
                                      model.world.slots)
    assert [c.state for c in clusters] == [state.CLUSTER_STATES[k] for k in codes]
    assert sum(c.busy for c in clusters) == pytest.approx(e.slot_used.sum())
    assert sum(c.copies for c in clusters) == e.live.size
    assert sum(c.queue for c in clusters) == state.queues(e).sum()
    assert [c.egress_rate for c in clusters] == e.gate_out.tolist()
    links = model.agents_by_type[LinkAgent]
    assert [link.bandwidth for link in links] == model.world.link_bw.level.tolist()


def test_job_agents_follow_their_jobs():
    model = _model()
    _step_until(model, lambda m: m.jobs_done >= 3 and len(m.jobs) >= 2)
    jobs = model.agents_by_type[JobAgent]
    assert sorted(j.job for j in jobs) == sorted(model.jobs)
    assert all(0.0 <= j.progress < 1.0 for j in jobs)
    for _ in range(20):
        model.step()
    e = model.engine
    for job in model.agents_by_type[JobAgent]:
        assert job.unfinished == e.job_left[job.job] > 0
        assert job.running == int(e.task_live[job.tasks].sum())
        work = model.workload.task_work[job.tasks].sum()   # progress lost to outages counts
        assert job.progress == pytest.approx(1 - e.remaining_work(np.array([job.job]))[0] / work)
        assert (job.task_states == 3).sum() == len(job.tasks) - job.unfinished
        assert job.age == pytest.approx(e.time - job.arrival)


def test_slot_counts_have_one_definition_each():
    model = _model(**{"tiers.small.outage_probability": 0.5})
    _step_until(model, lambda m: not m.engine.reachable.all())
    e, world = model.engine, model.world
    assert model.view.total_slots == state.reachable_slots(e) == world.slots[e.reachable].sum()
    assert model.view.total_slots < world.n_slots
    # the usable slots are those of the reachable slots in an available phase
    up = e.reachable[world.slot_cluster]
    if world.availability is not None:
        up = up & world.availability.on
    assert state.usable_slots(e) == np.count_nonzero(up) <= state.reachable_slots(e)
    clusters = model.agents_by_type[ClusterAgent]
    assert [c.available_slots for c in clusters] == state.available_slots(world).tolist()
    assert [c.copies for c in clusters] == state.running_copies(e).tolist()
    assert [c.busy for c in clusters] == state.busy_slots(e).tolist()
    links = model.agents_by_type[LinkAgent]
    forward, backward = state.link_traffic_mb(e)
    assert [link.traffic_mb for link in links] == list(zip(forward.tolist(), backward.tolist(),
                                                            strict=True))


# ---------------------------------------------------------------------------- recorder
def test_recorder_has_datacollector_tables_and_keeps_samples_of_one_step():
    class Clock:
        def __init__(self):
            self.t, self.values = 0.0, np.arange(3.0)

    rec = Recorder(model_reporters={"total": lambda m: m.values.sum()},
                   agenttype_reporters={ClusterAgent: {"v": lambda m: m.values * 2}},
                   index={ClusterAgent: "cluster"}, clock=lambda m: m.t)
    m = Clock()
    for t in (0.0, 10.0, 20.0):     # three samples, as an idle jump takes them in one step
        m.t = t
        rec.collect(m)
        m.values = m.values + 1
    assert len(rec) == 3 and rec["total"].tolist() == [3.0, 6.0, 9.0]
    assert rec.get_model_vars_dataframe()["time"].tolist() == [0.0, 10.0, 20.0]
    table = rec.get_agenttype_vars_dataframe(ClusterAgent)
    assert list(table.columns) == ["time", "cluster", "v"] and len(table) == 9
    assert table["v"].tolist() == [0, 2, 4, 2, 4, 6, 4, 6, 8]
    empty = rec.get_agenttype_vars_dataframe(LinkAgent, {"time": float, "link": int})
    assert list(empty.columns) == ["time", "link"] and empty.empty


def test_the_result_reads_the_models_recorder():
    model = _model(**{"workload.n_jobs": 12})
    result = model.run()
    records = model.recorder.samples(ClusterAgent)
    assert len(result.clusters) == sum(len(r["time"]) for r in records)
    times = result.clusters["time"].unique()
    assert np.all(np.diff(times) > 0)
    assert len(result.links) == len(model.recorder.samples(LinkAgent)) * model.world.n_links


# ---------------------------------------------------------------------------- the view
def _engine_arrays(model: GeoModel) -> list[np.ndarray]:
    """Every array the run's state lives in."""
    out = []
    for owner in (model.engine, model.world, model.workload, model.monitor):
        out += [v for v in vars(owner).values() if isinstance(v, np.ndarray)]
    out += list(model.engine.copies.cols.values()) + list(model.engine.inputs.cols.values())
    return out


def _arrays(value) -> list[np.ndarray]:
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, tuple | list):
        return [a for v in value for a in _arrays(v)]
    if isinstance(value, dict):
        return [a for v in value.values() for a in _arrays(v)]
    return []


def _readings(view: SchedulerView) -> dict[str, object]:
    """What every property and query of the view returns now."""
    jobs = np.asarray(view.alive_jobs)
    tasks, _ = view.ready_in_order(jobs)
    out = {name: getattr(view, name) for name in dir(view)
           if not name.startswith("_") and not callable(getattr(view, name))}
    out["monitor"] = [getattr(view.monitor, n) for n in ("outage_onsets", "reachable_time")] + [
        view.monitor.speed_table(), view.monitor.bandwidth_table(),
        view.monitor.bandwidth_into_table(), view.monitor.outage_rate(),
        view.monitor.priors.speed_mean, view.monitor.priors.outage_rate]
    calls = {
        "free_slots": (), "free_units": (1.0,), "slot_units": (1.0,), "free_slot_ids": (),
        "ready_tasks": (int(jobs[0]),), "tasks_of": (jobs,), "ready_in_order": (jobs,),
        "runnable_counts": (jobs,), "stage_groups": (jobs, True), "running_copies": (jobs,),
        "inputs_of": (tasks,), "input_groups": (tasks,), "input_group_ptr": (tasks,),
        "raw_inputs": (int(jobs[0]),), "moves": (), "remaining_work": (jobs,),
        "copy_info": (), "task_inputs": (int(tasks[0]),)}
    public = {n for n in dir(view) if not n.startswith("_") and callable(getattr(view, n))}
    assert public == set(calls), "every query of the view is checked"
    out.update({name: getattr(view, name)(*args) for name, args in calls.items()})
    return out


def test_ready_and_runnable_counts_are_read_from_every_task_of_the_jobs():
    # The compiled queries against their definition over tasks_of, jobs in any order.
    model = _model()
    _step_until(model, lambda m: len(m.jobs) >= 3 and m.engine.n_ready and m.engine.live.size)
    view = model.view
    jobs = np.asarray(view.alive_jobs)[::-1]
    tasks, pos = view.tasks_of(jobs)
    s = view.task_state[tasks]
    ready, where = view.ready_in_order(jobs)
    np.testing.assert_array_equal(ready, tasks[s == READY])
    np.testing.assert_array_equal(where, pos[s == READY])
    assert ready.size and ready.dtype == where.dtype == np.int64
    # At most limits[i] of job i, budget in all: the first ones in order.
    limits = np.ones(jobs.size)
    capped, at = view.ready_in_order(jobs, limits, 2)
    first = np.flatnonzero(np.r_[True, where[1:] != where[:-1]])[:2]
    np.testing.assert_array_equal(capped, ready[first])
    np.testing.assert_array_equal(at, where[first])
    np.testing.assert_array_equal(
        view.runnable_counts(jobs),
        np.bincount(pos[(s == READY) | (s == RUNNING)], minlength=jobs.size))


def test_nothing_read_through_the_view_can_change_the_run():
    model = _model()
    _step_until(model, lambda m: len(m.jobs) >= 2 and m.engine.live.size and m.jobs_done)
    view = model.view
    state_arrays = _engine_arrays(model)
    for name, value in _readings(view).items():
        for arr in _arrays(value):
            shared = any(np.shares_memory(arr, s) for s in state_arrays)
            assert not (shared and arr.flags.writeable), f"view.{name} hands out a writable " \
                "window on the run's state"
    for name in [n for n in dir(view) if not n.startswith("__")]:
        with pytest.raises(AttributeError, match="read-only"):
            setattr(view, name, 0)
    assert not [n for n in dir(view.monitor) if n.startswith("record")]
    with pytest.raises(AttributeError):
        view.monitor.window = 1


class _Vandal(Scheduler):
    """Tries to change the run through its view (and launches nothing)."""

    name = "vandal-test"

    def decide(self, view: SchedulerView, actions: Actions) -> None:
        self.attempts, self.refused = 0, 0
        for attempt in (lambda: setattr(view, "arrivals", 99),
                        lambda: setattr(view, "alive_jobs", np.arange(3)),
                        lambda: view.alive_jobs.__setitem__(0, -1),
                        lambda: view.task_state.__setitem__(0, 3),
                        lambda: view.reachable.__setitem__(0, False),
                        lambda: view.monitor.record_copies(np.zeros(1, int), np.zeros(1, int),
                                                           np.ones(1))):
            self.attempts += 1
            try:
                attempt()
            except (AttributeError, ValueError):
                self.refused += 1


def test_a_scheduler_cannot_write_to_its_view():
    vandal = _Vandal()
    model = GeoModel(load_scenario(geo_world()), vandal)
    _step_until(model, lambda m: len(m.jobs) >= 1 and m.steps_run > 2)
    assert vandal.attempts == 6 and vandal.refused == 6
    assert "vandal-test" not in registered()


def test_the_readme_example_prints_what_the_readme_shows(capsys):
    from pathlib import Path
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = text.split("## Mesa agents and the time series", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    shown = section.split("prints\n\n```\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out == shown


def test_run_without_out_writes_beside_comparisons(tmp_path, monkeypatch, capsys):
    from pathlib import Path

    from geosim.cli import main
    quick = str(Path(__file__).resolve().parents[1] / "scenarios" / "quickstart.toml")
    (tmp_path / "results" / "compare-003").mkdir(parents=True)   # what make run leaves
    monkeypatch.chdir(tmp_path)
    assert main(["run", quick, "--scheduler", "flutter+mantri", "--set",
                 "workload.n_jobs=1"]) == 0
    out = tmp_path / "results" / "run-quickstart-flutter+mantri"
    assert (out / "summary.json").is_file()
    assert "results written to results/run-quickstart-flutter+mantri/" in capsys.readouterr().out


def test_a_finished_model_is_freed():
    """Nothing keeps a model alive once its user drops it (Mesa 3.3 did: mesa#3179)."""
    import gc
    import weakref
    model = GeoModel(load_scenario(geo_world(n_jobs=3)), "fair")
    model.run()
    assert len(model.agents) > 0
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None
