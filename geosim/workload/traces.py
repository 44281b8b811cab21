"""Jobs read from public cluster traces: Google cluster-data 2011 and Alibaba 2018.

Both readers stream their files row by row (CSV without a header, as the traces are
published, plain or gzipped by the ``.gz`` suffix), keep the jobs submitted in a time
window ``[start, end)`` (seconds from the trace's origin; ``end = 0``: no end), and take
the first ``n_jobs`` complete ones in submission order. Memory follows the jobs of the
window, not the size of the files. A malformed row is refused with one line naming the
file, the line and the column. Arrivals are the submission times less the first one, so
the first job arrives at 0. Work is the measured duration in seconds, as on a machine of
power 1 (the convention of the synthetic ``google`` kind), and each copy draws its own
work around it with a coefficient of variation drawn per stage from ``task_cv``.

Google cluster-data 2011 (:func:`google_trace_jobs`)
    ``job_events`` rows (columns: 0 time in µs, 1 missing info, 2 job id, 3 event type,
    4 user, 5 scheduling class, 6 job name, 7 logical job name) give each job's
    submission: the time of its first SUBMIT event (type 0). A job first seen before the
    trace began (time 0) has no submission time and is left out. ``task_events`` rows
    (0 time, 1 missing info, 2 job id, 3 task index, 4 machine id, 5 event type, 6 user,
    7 scheduling class, 8 priority, 9-11 CPU, memory and disk requests, 12 different-
    machine restriction) give each task's duration: from its last SCHEDULE (1) to its
    FINISH (4). A task evicted, failed, killed or lost (2, 3, 5, 6) and scheduled again
    runs again from its new SCHEDULE. A job is complete when every task it submitted
    finished; jobs with a task that never finished in the files are left out. The job's
    weight is its highest task priority plus one (000 treats the priority, 0-11, as the
    weight). The trace has no phases: as in the synthetic ``google`` kind, the last
    ``floor(reduce_fraction * n)`` tasks by task index form a reduce stage after the map
    stage (jobs of fewer than 5 tasks are map-only), so ``cloning-google.toml`` runs the
    trace in place of its synthetic jobs.

Alibaba cluster-trace-v2018 (:func:`alibaba_trace_jobs`)
    ``batch_task.csv`` rows (0 task name, 1 instance count, 2 job name, 3 task type,
    4 status, 5 start time, 6 end time in s, 7 planned CPU, 8 planned memory). A task name
    ``M5_3_4`` is task 5 of its job (type letters ``M``, ``R``, ``J``, ... ignored), which
    waits for tasks 3 and 4; a name without that shape (``task_...``) is a task with no
    dependency. Each task is a stage of ``instance count`` parallel tasks, each of the
    task's duration (end less start), and a dependency is a barrier between stages
    (a stage edge). A job's submission is its earliest task start (the file has no
    submission time). A job is complete when every task is ``Terminated`` with an end
    at or after its start; jobs with another status, or whose dependencies name a task
    missing from the job or form a cycle, are left out. Every job has weight 1. A job
    with a task that started before the window is dropped as soon as that row is read, so
    memory follows the rows from the window's start on.

Durations of 0 (start and end in the same second, or the same microsecond) become
:data:`MIN_DURATION`, because a task's work must be positive.
"""

from __future__ import annotations

import csv
import gzip
import heapq
import io
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from geosim.errors import GeosimError
from geosim.workload.core import Workload
from geosim.workload.mapreduce import MAPREDUCE_TYPES

__all__ = ["ALIBABA_TYPES", "MIN_DURATION", "alibaba_trace_jobs", "google_trace_jobs"]

#: Shortest task duration kept (seconds): a measured 0 becomes this.
MIN_DURATION = 1e-3
#: Task type names of an Alibaba job: the stage's kind is not modelled, one type.
ALIBABA_TYPES = ("task",)

_SUBMIT, _SCHEDULE, _FINISH = 0, 1, 4
_ENDED = (2, 3, 5, 6)                   # evict, fail, kill, lost: the run ended unfinished
_US = 1e-6                              # Google's timestamps are microseconds
_AFTER = 2**63 - 1                      # Google's timestamp of an event after the trace
_DAG_NAME = re.compile(r"^[A-Za-z]+(\d+)((?:_\d+)*)$")


def _rows(path: str, columns: int) -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` of every non-empty row of ``path``, with ``columns`` fields.

    Raises:
        GeosimError: The file cannot be read, is not text, or a row has too few fields.
    """
    try:
        raw = gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")  # noqa: SIM115
    except OSError as exc:
        raise GeosimError(exc.strerror or str(exc), source=path) from None
    line = 0
    try:
        with raw, io.TextIOWrapper(raw, encoding="utf-8", newline="") as text:
            for line, row in enumerate(csv.reader(text), start=1):
                if not row or row == [""]:
                    continue
                if len(row) < columns:
                    raise GeosimError(f"line {line}: {len(row)} columns, {columns} expected",
                                      source=path)
                yield line, row
    except (OSError, EOFError, UnicodeDecodeError, csv.Error, gzip.BadGzipFile) as exc:
        why = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else \
            (getattr(exc, "strerror", None) or str(exc))
        raise GeosimError(f"line {line + 1}: {why}", source=path) from None


def _number(path: str, line: int, row: list[str], col: int, name: str, kind: type,
            lo: float = 0) -> int | float:
    """Field ``col`` of ``row`` as an ``int`` or ``float`` of at least ``lo``."""
    text = row[col].strip()
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or not value >= lo or (kind is float and not np.isfinite(value)):
        what = "an integer" if kind is int else "a number"
        raise GeosimError(f"line {line}, column {col} ({name}): expected {what} of at least "
                          f"{lo:g}, got {text[:40]!r}", source=path)
    return value


def _window(start: float, end: float) -> tuple[float, float]:
    if not start >= 0 or not end >= 0 or (end and end <= start):
        raise GeosimError(f"the trace window must satisfy 0 <= start < end (end 0: none), "
                          f"got start {start!r}, end {end!r}")
    return start, end if end else np.inf


def _stage_cv(n_stages: int, task_cv: tuple[float, float],
              rng: np.random.Generator) -> np.ndarray:
    lo, hi = task_cv
    return np.full(n_stages, lo) if lo == hi else rng.uniform(lo, hi, size=n_stages)


# ------------------------------------------------------------------------ Google 2011
@dataclass
class _GoogleTask:
    submitted: bool = False
    scheduled: float = -1.0             # time of the running attempt's SCHEDULE, -1: none
    duration: float = -1.0              # of the finishing attempt, -1: not finished


@dataclass
class _GoogleJob:
    submit: float
    priority: int = 0
    tasks: dict[int, _GoogleTask] = field(default_factory=dict)


def google_trace_jobs(job_events: Sequence[str], task_events: Sequence[str], n_jobs: int,
                      rng: np.random.Generator, *, start: float = 0.0, end: float = 0.0,
                      task_cv: tuple[float, float] = (0.1, 0.5),
                      reduce_fraction: float = 0.2) -> Workload:
    """The first ``n_jobs`` complete jobs of a Google cluster-data 2011 extract.

    Args:
        job_events: ``job_events`` files, in trace order.
        task_events: ``task_events`` files, in trace order.
        n_jobs: Most jobs to keep.
        rng: Draws the coefficient of variation of each stage (map, then reduce, per job).
        start: Window start, seconds from the trace's origin.
        end: Window end (0: none).
        task_cv: Range of each stage's coefficient of variation of a copy's work.
        reduce_fraction: Share of a job's tasks in its reduce stage (rounded down; jobs of
            fewer than 5 tasks are map-only).

    Raises:
        GeosimError: A file that cannot be read, a malformed row, or no complete job.
    """
    lo, hi = _window(start, end)
    jobs: dict[int, _GoogleJob] = {}
    seen: set[int] = set()              # jobs whose first SUBMIT has been read
    for path in job_events:
        for line, row in _rows(path, 4):
            if _number(path, line, row, 3, "event type", int) != _SUBMIT:
                continue
            job = _number(path, line, row, 2, "job id", int)
            if job in seen:                     # a resubmission: the first one counts
                continue
            seen.add(job)
            stamp = _number(path, line, row, 0, "time", int)
            t = stamp * _US                 # 0: before the trace began; 2**63 - 1: after
            if 0 < stamp < _AFTER and lo <= t < hi:
                jobs[job] = _GoogleJob(t)
    for path in task_events:
        for line, row in _rows(path, 9):
            job = jobs.get(_number(path, line, row, 2, "job id", int))
            if job is None:
                continue
            index = _number(path, line, row, 3, "task index", int)
            kind = _number(path, line, row, 5, "event type", int)
            t = _number(path, line, row, 0, "time", int) * _US
            task = job.tasks.setdefault(index, _GoogleTask())
            if kind == _SUBMIT:
                task.submitted = True
                job.priority = max(job.priority, _number(path, line, row, 8, "priority", int))
            elif kind == _SCHEDULE:
                task.scheduled = t
            elif kind == _FINISH and task.scheduled >= 0:
                task.duration, task.scheduled = t - task.scheduled, -1.0
            elif kind in _ENDED:
                task.scheduled = -1.0
    complete = sorted((j.submit, jid) for jid, j in jobs.items() if j.tasks and all(
        t.submitted and t.duration >= 0 for t in j.tasks.values()))[:n_jobs]
    if not complete:
        raise GeosimError(f"no job submitted in [{start:g}, {end or np.inf:g}) s finished "
                          "every task in the task_events files")
    kept = [jobs[jid] for _, jid in complete]
    durations = [np.array([job.tasks[i].duration for i in sorted(job.tasks)]) for job in kept]
    arrival = np.array([job.submit for job in kept])
    return _google_workload(arrival - arrival[0], np.array([j.priority + 1.0 for j in kept]),
                            durations, task_cv, reduce_fraction, rng)


def _google_workload(arrival: np.ndarray, weight: np.ndarray, durations: list[np.ndarray],
                     task_cv: tuple[float, float], reduce_fraction: float,
                     rng: np.random.Generator) -> Workload:
    """Map then reduce stages (by task index) of per-task durations."""
    n = np.array([d.size for d in durations], dtype=np.int64)
    r = np.where(n >= 5, np.floor(reduce_fraction * n + 1e-9), 0).astype(np.int64)
    task_ptr = np.concatenate(([0], np.cumsum(n)))
    job = np.repeat(np.arange(n.size), n)
    is_reduce = np.arange(task_ptr[-1]) - task_ptr[:-1][job] >= (n - r)[job]
    cv = _stage_cv(2 * n.size, task_cv, rng).reshape(n.size, 2)
    i0 = np.zeros(0, dtype=np.int64)
    return Workload(arrival=arrival, weight=weight, task_ptr=task_ptr,
                    task_work=np.maximum(np.concatenate(durations), MIN_DURATION),
                    task_type=is_reduce.astype(np.int32), type_names=MAPREDUCE_TYPES,
                    edge_src=i0, edge_dst=i0, edge_size=np.zeros(0),
                    raw_ptr=np.zeros(task_ptr[-1] + 1, dtype=np.int64), raw_cluster=i0,
                    raw_size=np.zeros(0), task_stage=is_reduce.astype(np.int32),
                    task_cv=cv[job, is_reduce.astype(np.int64)])


# ------------------------------------------------------------------------ Alibaba 2018
@dataclass
class _AlibabaJob:
    submit: float = np.inf
    ok: bool = True
    tasks: dict[int, tuple[int, float, tuple[int, ...]]] = field(default_factory=dict)


def alibaba_trace_jobs(files: Sequence[str], n_jobs: int, rng: np.random.Generator, *,
                       start: float = 0.0, end: float = 0.0,
                       task_cv: tuple[float, float] = (0.1, 0.5)) -> Workload:
    """The first ``n_jobs`` complete DAG jobs of Alibaba cluster-trace-v2018's batch tasks.

    Args:
        files: ``batch_task.csv`` files (or parts of one).
        n_jobs: Most jobs to keep.
        rng: Draws the coefficient of variation of each stage (job by job, in stage order).
        start: Window start on a job's submission, seconds from the trace's origin.
        end: Window end (0: none).
        task_cv: Range of each stage's coefficient of variation of a copy's work.

    Raises:
        GeosimError: A file that cannot be read, a malformed row, or no complete job.
    """
    lo, hi = _window(start, end)
    jobs: dict[str, _AlibabaJob] = {}
    for path in files:
        for line, row in _rows(path, 7):
            job = jobs.setdefault(row[2], _AlibabaJob())
            if not job.ok:
                continue
            name = row[0].strip()
            count = _number(path, line, row, 1, "instance count", int, lo=1)
            match = _DAG_NAME.match(name)
            number = int(match.group(1)) if match else -1 - len(job.tasks)
            deps = tuple(int(d) for d in match.group(2).split("_")[1:]) if match else ()
            if row[4].strip() != "Terminated" or number in job.tasks:
                job.ok, job.tasks = False, {}   # unfinished, or a task listed twice
                continue
            begin = _number(path, line, row, 5, "start time", float)
            finish = _number(path, line, row, 6, "end time", float, lo=begin)
            if begin < lo:                      # submitted before the window: never kept
                job.ok, job.tasks = False, {}
                continue
            job.submit = min(job.submit, begin)
            job.tasks[number] = (count, finish - begin, deps)
    orders = {name: _stage_order(job) for name, job in jobs.items()
              if job.ok and lo <= job.submit < hi}
    complete = sorted((jobs[name].submit, name) for name, order in orders.items()
                      if order is not None)[:n_jobs]
    if not complete:
        raise GeosimError(f"no job submitted in [{start:g}, {end or np.inf:g}) s has every "
                          "task Terminated and a well-formed task graph")
    return _alibaba_workload([(jobs[name], orders[name]) for _, name in complete], task_cv,
                             rng)


def _stage_order(job: _AlibabaJob) -> list[int] | None:
    """The job's task numbers in a topological order (smallest first), None if none exists."""
    tasks = job.tasks
    if any(d not in tasks for _, _, deps in tasks.values() for d in deps):
        return None
    waiting = {t: len(set(deps)) for t, (_, _, deps) in tasks.items()}
    children: dict[int, list[int]] = {}
    for t, (_, _, deps) in tasks.items():
        for d in set(deps):
            children.setdefault(d, []).append(t)
    ready = [t for t, k in waiting.items() if k == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        t = heapq.heappop(ready)
        order.append(t)
        for c in children.get(t, ()):
            waiting[c] -= 1
            if waiting[c] == 0:
                heapq.heappush(ready, c)
    return order if len(order) == len(tasks) else None


def _alibaba_workload(jobs: list[tuple[_AlibabaJob, list[int]]], task_cv: tuple[float, float],
                      rng: np.random.Generator) -> Workload:
    """One stage per trace task (its instances), stage edges for its dependencies.

    ``jobs`` holds each job with its tasks in a topological order (:func:`_stage_order`).
    """
    counts, works, stages, ptr = [], [], [], [0]
    edge_job, edge_src, edge_dst = [], [], []
    for j, (job, order) in enumerate(jobs):
        position = {t: s for s, t in enumerate(order)}
        for s, t in enumerate(order):
            count, duration, deps = job.tasks[t]
            counts.append(count)
            works.append(duration)
            stages.append(s)
            for d in sorted(set(deps)):
                edge_job.append(j)
                edge_src.append(position[d])
                edge_dst.append(s)
        ptr.append(ptr[-1] + len(order))
    counts = np.array(counts, dtype=np.int64)
    task_ptr = np.concatenate(([0], np.cumsum(np.add.reduceat(counts, ptr[:-1]))))
    cv = _stage_cv(counts.size, task_cv, rng)
    nt = int(task_ptr[-1])
    i0 = np.zeros(0, dtype=np.int64)
    submit = np.array([job.submit for job, _ in jobs])
    return Workload(arrival=submit - submit[0], weight=np.ones(len(jobs)), task_ptr=task_ptr,
                    task_work=np.repeat(np.maximum(works, MIN_DURATION), counts),
                    task_type=np.zeros(nt, dtype=np.int32), type_names=ALIBABA_TYPES,
                    edge_src=i0, edge_dst=i0, edge_size=np.zeros(0),
                    raw_ptr=np.zeros(nt + 1, dtype=np.int64), raw_cluster=i0,
                    raw_size=np.zeros(0), task_stage=np.repeat(stages, counts),
                    task_cv=np.repeat(cv, counts), stage_edge_job=np.array(edge_job),
                    stage_edge_src=np.array(edge_src), stage_edge_dst=np.array(edge_dst))
