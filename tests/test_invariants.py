"""Conformance mode (:mod:`geosim.invariants`): every scheduler keeps the invariants under
outages, availability periods and checkpoints, and every check fails on a corrupted state.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import closed_world, flows_world, geo_world

from geosim import GeoModel, invariants, load_scenario, poolsim, registered
from geosim.engine import ALIVE, DONE, FAILED, KILLED, LOST, READY, RUNNING, WAITING, WON
from geosim.invariants import Checker, InvariantError

QUICKSTART = Path(__file__).resolve().parents[1] / "scenarios" / "quickstart.toml"
#: The quickstart world, small (3 workflows, about 200 tasks, on 8 clusters), with
#: availability periods and frequent outages (a trial every 30 s).
FAULTY = {"run.seed": 6, "workload.n_jobs": 3, "workload.arrival_rate": 0.1,
          "workload.large_max_tasks": 501, "topology.n_clusters": 8,
          "outages.trial_interval": 30.0}


@functools.cache
def _faulty_run(name: str) -> GeoModel:
    """A checked run of ``name`` on the faulty world (shared by the tests that read it)."""
    model = GeoModel(load_scenario(QUICKSTART, FAULTY), name, check_invariants=True)
    model.run()
    return model


@pytest.mark.parametrize("name", sorted(registered()))
def test_every_scheduler_keeps_the_invariants_under_faults(name):
    model = _faulty_run(name)
    e = model.engine
    assert model.world.availability is not None
    assert model.world.outages.count[1].sum() > 0, "no outage in the run"
    assert np.all(e.task_state == DONE) and model.jobs_done == model.workload.n_jobs
    executed, demanded, wasted = e.work_balance()
    assert executed == pytest.approx(demanded + wasted, rel=1e-9)


@pytest.mark.parametrize("name", ["srpt+r", "fair+r", "laps+r"])
def test_outages_kill_checkpointed_copies_under_checks(name):
    # Policies that checkpoint at every event: outages kill copies of tasks with saved
    # progress (their base), which the checks hold to losing only what came after it.
    model = _faulty_run(name)
    e = model.engine
    cols, n = e.copies.cols, e.copies.n
    assert e.task_checkpoints.sum() > 0
    assert np.any((cols["outcome"][:n] == FAILED) & (cols["base"][:n] > 0))


def test_checked_pool_runs_take_the_general_step(monkeypatch):
    world = closed_world(slots=4, rate=0.5, n_jobs=40, availability=True, scheduler="srpt+r")
    world["run"]["timing"] = "event"
    scenario = load_scenario(world)
    assert not GeoModel(scenario).why_not_compiled()

    def refuse(*args):
        raise AssertionError("the compiled loop ran under checks")

    monkeypatch.setattr(poolsim, "run", refuse)
    model = GeoModel(scenario, check_invariants=True)
    assert model.run().jobs["finished"].all()
    assert model.steps_run > 0


@pytest.mark.parametrize(("value", "on"), [("1", True), ("yes", True), ("0", False),
                                           ("", False), ("off", False), ("False", False)])
def test_the_environment_turns_checks_on(monkeypatch, value, on):
    monkeypatch.setenv(invariants.ENV_VAR, value)
    scenario = load_scenario(closed_world(n_jobs=3))
    assert GeoModel(scenario).check_invariants is on
    assert GeoModel(scenario, check_invariants=not on).check_invariants is not on


def test_checks_are_off_by_default(monkeypatch):
    monkeypatch.delenv(invariants.ENV_VAR, raising=False)
    assert GeoModel(load_scenario(closed_world(n_jobs=3))).check_invariants is False


# ---------------------------------------------------------------------- corrupted states
def _midrun(steps: int = 60) -> tuple[GeoModel, Checker]:
    """A model after ``steps`` unchecked steps, and a checker that saw all but the last."""
    model = GeoModel(load_scenario(geo_world(n_jobs=6, rate=0.2)), "fair",
                     check_invariants=False)
    for _ in range(steps - 1):
        model.step()
    checker = Checker(model)
    model.step()
    e = model.engine
    assert e.live.size >= 2 and np.any(e.task_state == DONE) and model.jobs
    return model, checker


def _live(model: GeoModel) -> tuple[dict, np.ndarray]:
    return model.engine.copies.cols, model.engine.live


def _extra_share_on_a_busy_slot(model):
    cols, live = _live(model)
    model.engine.slot_used[cols["slot"][live[0]]] += 0.5


def _extra_busy_slot(model):
    e = model.engine
    e.slot_used[np.flatnonzero(e.slot_copies == 0)[0]] = 1.0


def _two_copies_on_one_slot(model):
    # Consistent bookkeeping, but two whole-slot copies share one slot.
    e = model.engine
    cols, live = _live(model)
    cluster = cols["cluster"][live]
    first, second = live[cluster == np.bincount(cluster).argmax()][:2]
    old = cols["slot"][second]
    e.slot_used[old] -= cols["share"][second]
    e.slot_copies[old] -= 1
    e.slots.busy[model.world.slot_cluster[old]] -= e.slot_copies[old] == 0
    e.slots.shared[0] += e.slot_copies[cols["slot"][first]] == 2
    cols["slot"][second] = cols["slot"][first]
    e.slot_used[cols["slot"][first]] += cols["share"][second]
    e.slot_copies[cols["slot"][first]] += 1


def _busy_count_off_its_slots(model):
    cols, live = _live(model)
    model.engine.slots.busy[cols["cluster"][live[0]]] -= 1


def _shared_slots_miscounted(model):
    model.engine.slots.shared[0] += 1


def _share_above_one(model):
    cols, live = _live(model)
    model.engine.slot_used[cols["slot"][live[0]]] += 0.5
    cols["share"][live[0]] += 0.5


def _ended_copy_still_live(model):
    cols, live = _live(model)
    cols["outcome"][live[0]] = KILLED


def _live_list_out_of_order(model):
    e = model.engine
    e.live[[0, 1]] = e.live[[1, 0]]


def _copy_on_another_cluster_s_slot(model):
    cols, live = _live(model)
    cols["cluster"][live[0]] = (cols["cluster"][live[0]] + 1) % model.world.n_clusters


def _finish_time_in_the_future(model):
    e = model.engine
    e.task_done[np.flatnonzero(e.task_state == DONE)[0]] = e.time + 10.0


def _job_live_count(model):
    cols, live = _live(model)
    model.engine.job_live[model.engine.task_job[cols["task"][live[0]]]] += 1


def _pending_on_a_ready_task(model):
    e = model.engine
    e.pending[np.flatnonzero(e.task_state == READY)[0]] = 1


def _task_state_out_of_range(model):
    e = model.engine
    e.task_state[np.flatnonzero(e.task_state == WAITING)[0]] = DONE + 1


def _ended_copy_marked_alive(model):
    # A copy that ended in the last step (checked one by one there), not in the live list.
    e = model.engine
    cols, n = e.copies.cols, e.copies.n
    ended = np.flatnonzero(cols["outcome"][:n] != ALIVE)
    cols["outcome"][ended[-1]] = ALIVE


def _copy_on_unreachable_cluster(model):
    cols, live = _live(model)
    model.engine.reachable[cols["cluster"][live[0]]] = False


def _egress_gate_over_capacity(model):
    model.engine.gate_out[0] = model.world.gate[0] * 1.01


def _ingress_gate_over_capacity(model):
    model.engine.gate_in[-1] = model.world.gate[-1] * 2


def _received_above_one(model):
    cols, live = _live(model)
    c = live[np.flatnonzero(cols["in_hi"][live] > cols["in_lo"][live])[0]]
    model.engine.inputs.cols["received"][cols["in_lo"][c]] = 1.5


def _task_live_count(model):
    cols, live = _live(model)
    model.engine.task_live[cols["task"][live[0]]] += 1


def _ready_count(model):
    model.engine.n_ready += 1


def _running_without_a_copy(model):
    e = model.engine
    t = np.flatnonzero(e.task_state == READY)[0]
    e.task_state[t] = RUNNING
    e.n_ready -= 1


def _ready_before_its_parents(model):
    e = model.engine
    wl = model.workload
    waiting = e.task_state[wl.edge_dst] == WAITING
    child = wl.edge_dst[np.flatnonzero(waiting & (e.task_state[wl.edge_src] != DONE))[0]]
    e.task_state[child] = READY
    e.pending[child] = 0
    e.task_ready[child] = e.time
    e.n_ready += 1


def _executed_counted_twice(model):
    cols, live = _live(model)
    c = live[np.argmax(cols["executed"][live])]
    cols["executed"][c] *= 2


def _wasted_work_vanishes(model):
    cols = model.engine.copies.cols
    n = model.engine.copies.n
    c = np.flatnonzero((cols["outcome"][:n] == FAILED) & (cols["wasted"][:n] > 0))[0]
    cols["wasted"][c] = 0.0


def _negative_waste(model):
    cols, live = _live(model)
    cols["wasted"][live[0]] = -1.0


def _base_off_the_checkpoint(model):
    cols, live = _live(model)
    c = live[np.argmax(cols["progress"][live] - cols["base"][live])]
    cols["base"][c] += 0.5 * (cols["progress"][c] - cols["base"][c])


def _done_task_not_saved(model):
    e = model.engine
    e.task_saved[np.flatnonzero(e.task_state == DONE)[0]] = 0.5


def _job_work_left(model):
    e = model.engine
    e.job_work_left[next(iter(model.jobs))] += 1.0


def _task_won_twice(model):
    # A copy of a done task that did not win (here: failed) is made a second winner.
    e = model.engine
    cols, n = e.copies.cols, e.copies.n
    ended = (cols["outcome"][:n] != WON) & (cols["outcome"][:n] != ALIVE)
    c = np.flatnonzero(ended & (e.task_state[cols["task"][:n]] == DONE))[0]
    cols["outcome"][c], cols["progress"][c] = WON, 1.0


def _job_left_count(model):
    e = model.engine
    e.job_left[e.task_job[np.flatnonzero(e.task_state == DONE)[0]]] -= 1


def _done_task_without_winner(model):
    cols = model.engine.copies.cols
    n = model.engine.copies.n
    cols["outcome"][np.flatnonzero(cols["outcome"][:n] == WON)[0]] = LOST


def _job_waiting_count(model):
    e = model.engine
    e.job_waiting[next(iter(model.jobs))] -= 1


def _jobs_done_count(model):
    model.jobs_done += 1


def _job_agent_lost(model):
    model.jobs.pop(next(iter(model.jobs)))


#: Corruptions of the state after a step: the invariant that catches it, and how.
CORRUPTIONS: dict[str, tuple[str, Callable[[GeoModel], None]]] = {
    "extra share on a busy slot": ("slots", _extra_share_on_a_busy_slot),
    "an idle slot marked busy": ("slots", _extra_busy_slot),
    "two copies on one slot": ("slots", _two_copies_on_one_slot),
    "a cluster's busy slots miscounted": ("slots", _busy_count_off_its_slots),
    "shared slots miscounted": ("slots", _shared_slots_miscounted),
    "a share above 1": ("copies", _share_above_one),
    "an ended copy still live": ("copies", _ended_copy_still_live),
    "a copy on an unreachable cluster": ("reachability", _copy_on_unreachable_cluster),
    "a live list out of order": ("copies", _live_list_out_of_order),
    "a copy on another cluster's slot": ("copies", _copy_on_another_cluster_s_slot),
    "a finish time in the future": ("tasks", _finish_time_in_the_future),
    "a job's live-copy count": ("tasks", _job_live_count),
    "a pending dependency on a ready task": ("tasks", _pending_on_a_ready_task),
    "a task state out of range": ("tasks", _task_state_out_of_range),
    "egress gate over capacity": ("bandwidth", _egress_gate_over_capacity),
    "ingress gate over capacity": ("bandwidth", _ingress_gate_over_capacity),
    "an input received beyond its size": ("transfers", _received_above_one),
    "a wrong live-copy count": ("tasks", _task_live_count),
    "a wrong ready count": ("tasks", _ready_count),
    "a job's count of tasks not ready": ("tasks", _job_waiting_count),
    "a running task without a copy": ("tasks", _running_without_a_copy),
    "a task ready before its parents": ("tasks", _ready_before_its_parents),
    "executed work counted twice": ("work", _executed_counted_twice),
    "negative waste": ("work", _negative_waste),
    "a live copy off its task's checkpoint": ("work", _base_off_the_checkpoint),
    "a done task not fully saved": ("work", _done_task_not_saved),
    "a job's work left": ("work", _job_work_left),
    "a job's unfinished-task count": ("completion", _job_left_count),
    "the finished-job count": ("completion", _jobs_done_count),
    "a lost job agent": ("completion", _job_agent_lost),
}
#: Corruptions of copies that ended before the last step: a step's check leaves such
#: copies to per-task sums, the check over every copy (and the run's last one) finds them.
SETTLED_CORRUPTIONS: dict[str, tuple[str, Callable[[GeoModel], None]]] = {
    "wasted work of a failed copy forgotten": ("work", _wasted_work_vanishes),
    "a task won twice": ("completion", _task_won_twice),
    "a done task without a winner": ("completion", _done_task_without_winner),
    "an ended copy marked alive": ("copies", _ended_copy_marked_alive),
}


def test_an_untouched_state_passes():
    model, checker = _midrun()
    checker.check()
    invariants.check(model)


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_each_check_fails_on_a_corrupted_state(case):
    expected, corrupt = CORRUPTIONS[case]
    model, checker = _midrun()
    corrupt(model)
    with pytest.raises(InvariantError) as err:
        checker.check()
    assert err.value.invariant == expected, str(err.value)
    assert err.value.time == model.engine.time
    assert f"t={model.engine.time:g}" in str(err.value)
    with pytest.raises(InvariantError) as err:
        invariants.check(model)     # the same over every copy, without history
    assert err.value.invariant == expected, str(err.value)


@pytest.mark.parametrize("case", sorted(SETTLED_CORRUPTIONS))
def test_corrupted_ended_copies_fail_the_full_check(case):
    expected, corrupt = SETTLED_CORRUPTIONS[case]
    model, _ = _midrun()
    corrupt(model)
    with pytest.raises(InvariantError) as err:
        invariants.check(model)
    assert err.value.invariant == expected, str(err.value)


def test_the_last_check_of_a_run_goes_over_every_copy():
    model = GeoModel(load_scenario(geo_world(n_jobs=6, rate=0.2)), "fair",
                     check_invariants=True)
    for _ in range(60):
        model.step()
    _wasted_work_vanishes(model)
    model.step()                    # the copy ended before: this step's check skips it
    with pytest.raises(InvariantError) as err:
        model.run()
    assert err.value.invariant == "work"
    assert model.done


def test_the_engine_completing_a_task_again_fails():
    # The engine's own completion run a second time on a done task, on jobs of one task
    # each (no children to make ready twice): the job finishes twice over.
    model = GeoModel(load_scenario(closed_world(slots=3, rate=0.2, n_jobs=30)), "fifo",
                     check_invariants=True)
    e = model.engine
    while not (np.any(e.task_state == DONE) and e.live.size):
        model.step()
    cols, n = e.copies.cols, e.copies.n
    won = np.flatnonzero(cols["outcome"][:n] == WON)[0]
    t = cols["task"][won]
    e._complete(np.empty(0, dtype=np.int64), np.empty(0), np.array([won]), np.array([t]),
                np.array([e.time]))
    with pytest.raises(InvariantError, match=f"job {e.task_job[t]} ") as err:
        model.step()
    assert err.value.invariant == "completion"


def test_a_link_over_capacity_fails():
    # Link rates are what a link's counter gained in the last step, over one slot.
    model, checker = _midrun()
    e, world = model.engine, model.world
    e.link_mb[3] += 2.0 * world.link_bw.level[1] * e.dt
    with pytest.raises(InvariantError, match="link 1 ") as err:
        checker.check()
    assert err.value.invariant == "bandwidth"


@pytest.mark.parametrize("what", ["saved", "task_done", "job_done", "time", "jobs_done"])
def test_history_checks_fail_when_the_past_differs(what):
    # The checker remembers the previous step: make that memory disagree with now.
    model, checker = _midrun(steps=300)
    e = model.engine
    if what == "saved":
        checker.saved[np.flatnonzero(e.task_state == DONE)[0]] = 1.5
    elif what == "task_done":
        t = np.flatnonzero(e.task_state == DONE)[0]
        checker.task_done[t] = e.task_done[t] - 1.0
    elif what == "job_done":
        j = np.flatnonzero(~np.isnan(e.job_done))[0]
        checker.job_done[j] = e.job_done[j] - 1.0
    elif what == "time":
        checker.time = e.time + 1.0
    else:
        checker.jobs_done = model.jobs_done + 1
    with pytest.raises(InvariantError) as err:
        checker.check()
    assert err.value.invariant == "history"


def test_a_stage_beyond_its_cap_fails():
    # Admit one task too many to a capped stage, with every count kept consistent.
    model = GeoModel(load_scenario(flows_world()), "fifo", check_invariants=False)
    e, wl = model.engine, model.workload
    for _ in range(200):
        model.step()
        cap = wl.task_cap[e.group_ptr[:-1]]
        full = (cap > 0) & (e.group_ready + e.group_running == cap) \
            & (e.group_next < e.group_ptr[1:]) & (e.group_waiting == 0)
        if full.any():
            break
    assert full.any(), "no full capped stage with a task waiting for room"
    invariants.check(model)
    g = np.flatnonzero(full)[0]
    t = e.group_next[g]
    e.task_state[t], e.task_ready[t] = READY, e.time
    e.group_ready[g] += 1
    e.n_ready += 1
    e.job_waiting[e.task_job[t]] -= 1
    with pytest.raises(InvariantError, match=f"cap {cap[g]}") as err:
        invariants.check(model)
    assert err.value.invariant == "stage caps"


def test_the_error_names_the_offender():
    model, _ = _midrun()
    cols, live = _live(model)
    c = int(live[0])
    cols["outcome"][c] = ALIVE      # unchanged: still passes
    invariants.check(model)
    model.engine.reachable[cols["cluster"][c]] = False
    with pytest.raises(InvariantError, match=rf"copy {c} of task {int(cols['task'][c])} runs "
                                             rf"on unreachable cluster {int(cols['cluster'][c])}"):
        invariants.check(model)
    assert issubclass(InvariantError, AssertionError)
