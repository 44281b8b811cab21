"""Trace readers: Google cluster-data 2011 and Alibaba cluster-trace-v2018, in their schemas."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

import geosim
from geosim.cli import main
from geosim.errors import GeosimError
from geosim.scenario import load_scenario
from geosim.testing import geo_world
from geosim.workload.traces import MIN_DURATION, alibaba_trace_jobs, google_trace_jobs

ROOT = Path(__file__).resolve().parents[1]


def _csv(path: Path, rows: list[tuple]) -> Path:
    text = "".join(",".join(str(v) for v in row) + "\n" for row in rows)
    if path.suffix == ".gz":
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


def _task_event(t: int, job: int, index: int, kind: int, priority: int = 0) -> tuple:
    """A task_events row: time (µs), missing info, job id, task index, machine id, event
    type, user, scheduling class, priority, CPU, memory and disk requests, different-machine
    restriction."""
    return (t, "", job, index, "" if kind == 0 else 3741, kind, "user=", 1, priority, 0.0625,
            0.03, 0.0001, 0)


@pytest.fixture
def google(tmp_path) -> tuple[Path, Path]:
    """Job 1 (6 tasks, one evicted and run again), job 2 (a task never finishes), job 3
    (submitted before the trace began), job 4 (one task, priority 9)."""
    mus = 1_000_000
    # job_events: time, missing info, job id, event type, user, scheduling class, job name,
    # logical job name
    jobs = _csv(tmp_path / "job_events-00000-of-00500.csv", [
        (0, "", 3, 0, "user=", 1, "name=", "logical="),
        (1 * mus, "", 1, 0, "user=", 1, "name=", "logical="),
        (3 * mus, "", 2, 0, "user=", 1, "name=", "logical="),
        (5 * mus, "", 4, 0, "user=", 2, "name=", "logical="),
        (6 * mus, "", 1, 0, "user=", 1, "name=", "logical=")])     # resubmitted: ignored
    rows = [_task_event(1 * mus, 1, i, 0, 5 if i == 0 else 2) for i in range(6)]
    rows += [_task_event(2 * mus, 1, i, 1) for i in range(6)]
    rows += [_task_event(3 * mus, 1, 0, 2), _task_event(4 * mus, 1, 0, 1)]   # evicted, again
    rows += [_task_event((2 + i) * mus, 1, i, 4) for i in range(1, 6)]
    rows += [_task_event(9_500_000, 1, 0, 4)]
    rows += [_task_event(3 * mus, 2, i, 0) for i in range(2)]
    rows += [_task_event(3_500_000, 2, i, 1) for i in range(2)] + [_task_event(4 * mus, 2, 0, 4)]
    rows += [_task_event(5 * mus, 4, 0, 0, 9), _task_event(5 * mus, 4, 0, 1),
             _task_event(7 * mus, 4, 0, 4)]
    tasks = _csv(tmp_path / "task_events-00000-of-00500.csv.gz", sorted(rows, key=lambda r: r[0]))
    return jobs, tasks


@pytest.fixture
def alibaba(tmp_path) -> Path:
    """batch_task.csv: task name, instances, job, task type, status, start, end (s), CPU,
    memory. j_1 is a DAG, j_2 one independent task; j_3 failed, j_4 names a missing task,
    j_5's tasks wait for each other."""
    return _csv(tmp_path / "batch_task.csv", [
        ("M1", 2, "j_1", 1, "Terminated", 10, 20, 100, 0.2),
        ("M2", 1, "j_1", 1, "Terminated", 10, 15, 100, 0.2),
        ("J4_3", 1, "j_1", 1, "Terminated", 41, 50, 100, 0.2),
        ("R3_1_2", 3, "j_1", 1, "Terminated", 25, 40, 100, 0.2),
        ("task_Nzg3ODAwNDgzMTAwNTc3NjA3Mg==", 1, "j_2", 1, "Terminated", 12, 12, 50, 0.1),
        ("M1", 1, "j_3", 1, "Failed", 11, 0, 100, 0.2),
        ("M1_2", 1, "j_4", 1, "Terminated", 13, 20, 100, 0.2),
        ("M1_2", 1, "j_5", 1, "Terminated", 14, 20, 100, 0.2),
        ("M2_1", 1, "j_5", 1, "Terminated", 14, 20, 100, 0.2)])


def test_google_jobs_are_the_complete_ones_with_their_last_runs(google):
    jobs, tasks = google
    w = google_trace_jobs([str(jobs)], [str(tasks)], 10, np.random.default_rng(1))
    assert w.arrival.tolist() == [0.0, 4.0]                   # submitted at 1 s and 5 s
    assert w.weight.tolist() == [6.0, 10.0]                   # highest priority + 1
    assert w.task_ptr.tolist() == [0, 6, 7]
    # task 0 ran from its second SCHEDULE (4 s) to its FINISH (9.5 s)
    assert w.task_work.tolist() == pytest.approx([5.5, 1.0, 2.0, 3.0, 4.0, 5.0, 2.0])
    assert w.task_stage.tolist() == [0, 0, 0, 0, 0, 1, 0]     # floor(0.2 * 6) reduce tasks
    cv = w.task_cv
    assert len(set(cv[:5])) == 1 and cv[5] != cv[0] and (0.1 <= cv).all() and (cv <= 0.5).all()
    late = google_trace_jobs([str(jobs)], [str(tasks)], 10, np.random.default_rng(1), start=4)
    assert late.arrival.tolist() == [0.0] and late.task_work.tolist() == [2.0]
    first = google_trace_jobs([str(jobs)], [str(tasks)], 1, np.random.default_rng(1))
    assert first.task_ptr.tolist() == [0, 6]
    with pytest.raises(GeosimError, match=r"no job submitted in \[6, 9\) s"):
        google_trace_jobs([str(jobs)], [str(tasks)], 10, np.random.default_rng(1), start=6,
                          end=9)


def test_alibaba_tasks_become_stages_of_their_instances(alibaba):
    w = alibaba_trace_jobs([str(alibaba)], 10, np.random.default_rng(1))
    assert w.arrival.tolist() == [0.0, 2.0]                   # earliest starts: 10 s, 12 s
    assert w.task_ptr.tolist() == [0, 7, 8]                   # 2 + 1 + 3 + 1 instances; 1
    assert w.task_work.tolist() == [10, 10, 5, 15, 15, 15, 9, MIN_DURATION]
    assert w.task_stage.tolist() == [0, 0, 1, 2, 2, 2, 3, 0]
    edges = list(zip(w.stage_edge_job.tolist(), w.stage_edge_src.tolist(),
                     w.stage_edge_dst.tolist(), strict=True))
    assert edges == [(0, 0, 2), (0, 1, 2), (0, 2, 3)]         # R3 waits for M1 and M2
    assert len(set(w.task_cv[:2])) == 1 and w.task_cv[1] != w.task_cv[2]
    assert alibaba_trace_jobs([str(alibaba)], 10, np.random.default_rng(1), start=11) \
        .task_ptr.tolist() == [0, 1]                          # j_1 started at 10 s


def test_traces_run_in_place_of_the_synthetic_jobs(google, alibaba):
    jobs, tasks = google
    trace = {"workload.kind": "google-trace", "workload.job_events": [str(jobs)],
             "workload.task_events": [str(tasks)]}
    scenario = load_scenario(ROOT / "scenarios" / "cloning-google.toml",
                             {**trace, "tiers.small.slots": 8})
    result = geosim.run(scenario, scheduler="srptms+c")
    assert result.jobs["finished"].all() and len(result.tasks) == 7
    world = geo_world(scheduler="fifo")
    world["workload"] = {"kind": "alibaba-trace", "files": [str(alibaba)], "task_cv": 0.0}
    result = geosim.run(load_scenario(world), scheduler="fifo")
    tasks = result.tasks
    assert result.jobs["finished"].all() and len(tasks) == 8
    # each stage is ready once the stages it waits for have finished (tasks 0-1: M1, 2: M2,
    # 3-5: R3 after both, 6: J4 after R3)
    ready, completion = tasks["ready"].to_numpy(), tasks["completion"].to_numpy()
    assert (ready[3:6] >= completion[:3].max() - 1e-9).all()
    assert ready[6] >= completion[3:6].max() - 1e-9 and (ready[:3] == ready[0]).all()


@pytest.mark.parametrize(("bad", "column", "why"), [
    ("abc", 0, "time): expected an integer of at least 0, got 'abc'"),
    ("-4", 2, "job id): expected an integer of at least 0, got '-4'"),
])
def test_a_malformed_row_is_refused_in_one_line(tmp_path, google, capsys, bad, column, why):
    jobs, tasks = google
    rows = jobs.read_text().splitlines()
    fields = rows[2].split(",")
    fields[column] = bad
    rows[2] = ",".join(fields)
    jobs.write_text("\n".join(rows) + "\n")
    scenario = tmp_path / "trace.toml"
    scenario.write_text(
        (ROOT / "scenarios" / "cloning-google.toml").read_text()
        .replace('kind = "google"', f'kind = "google-trace"\njob_events = ["{jobs}"]\n'
                                    f'task_events = ["{tasks}"]'))
    out = tmp_path / "out"
    assert main(["run", str(scenario), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"geosim: error: {jobs}: line 3, column {column} ({why}"]
    assert not out.exists()


def test_trace_scenarios_name_their_files(tmp_path, alibaba):
    world = geo_world()
    world["workload"] = {"kind": "google-trace", "job_events": [str(alibaba)]}
    with pytest.raises(GeosimError, match=r"workload.task_events: kind 'google-trace' needs "
                                          r"workload.task_events$"):
        load_scenario(world)
    world["workload"] = {"kind": "alibaba-trace", "files": [str(tmp_path / "gone.csv")]}
    with pytest.raises(GeosimError, match=r"workload.files: file not found: .*gone.csv$"):
        load_scenario(world)
    world["workload"] = {"kind": "alibaba-trace", "files": [str(alibaba)], "trace_start": 5.0,
                         "trace_end": 5.0}
    with pytest.raises(GeosimError, match=r"workload.trace_end: must be 0 \(no end\) or above"):
        load_scenario(world)
    short = _csv(tmp_path / "short.csv", [("M1", 1, "j_1")])
    with pytest.raises(GeosimError, match=r"short.csv: line 1: 3 columns, 7 expected$"):
        alibaba_trace_jobs([str(short)], 1, np.random.default_rng(0))
