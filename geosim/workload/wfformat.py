"""WfFormat: real workflow instances in WfCommons' WfFormat (schema 1.5 and 1.6, and 1.0-1.4).

:func:`read_wfformat` reads one instance as a one-job workload; :func:`wfformat_jobs` replays
instances as a Poisson stream, placing raw inputs as :func:`~geosim.workload.montage_jobs` does.
"""

from __future__ import annotations

import functools
import heapq
import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from geosim.errors import GeosimError
from geosim.workload.core import (
    BYTES_PER_MB,
    REFERENCE_MIPS,
    Workload,
    check_count,
    check_positive,
    check_range,
    input_sites,
    place_inputs,
    poisson_arrivals,
)

__all__ = ["read_wfformat", "wfformat_jobs"]

#: Largest WfFormat file read (bytes): a bound on the memory a file can ask for.
MAX_FILE_BYTES = 512 * 2**20


@dataclass(frozen=True)
class _WfTemplate:
    """One parsed WfFormat workflow, tasks in topological order (runtimes in seconds)."""

    runtime: np.ndarray
    task_type: np.ndarray
    type_names: tuple[str, ...]
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_size: np.ndarray
    raw_ptr: np.ndarray
    raw_size: np.ndarray
    raw_file: np.ndarray  # index of the distinct raw file of each raw input
    n_raw_files: int


_ID_SUFFIX = re.compile(r"[_-](?:ID)?\d+$")


def _task_type_name(name: str, category: Any) -> str:
    if isinstance(category, str) and category:
        return category
    return _ID_SUFFIX.sub("", name) or name


@dataclass
class _WfTask:
    key: str
    type_name: str
    runtime: Any
    parents: list[str]
    children: list[str]
    inputs: list[str]
    outputs: list[str]


def _wf_list(obj: Any, what: str) -> list[Any]:
    if obj is None:
        return []
    if not isinstance(obj, list):
        raise ValueError(f"{what} must be a list")
    return obj


def _wf_tasks_v15(wf: dict[str, Any]) -> tuple[list[_WfTask], dict[str, Any]]:
    spec = wf["specification"]
    sizes = {str(f["id"]): f["sizeInBytes"] for f in _wf_list(spec.get("files"), "files")}
    runtimes: dict[str, Any] = {}
    execution = wf.get("execution") or {}
    for t in _wf_list(execution.get("tasks"), "execution.tasks"):
        runtimes[str(t["id"])] = t.get("runtimeInSeconds")
    tasks = []
    for t in _wf_list(spec["tasks"], "specification.tasks"):
        key = str(t["id"])
        name = str(t.get("name", key))
        rt = runtimes.get(key, t.get("runtimeInSeconds"))
        tasks.append(_WfTask(key, _task_type_name(name, t.get("category")), rt,
                             [str(p) for p in _wf_list(t.get("parents"), "parents")],
                             [str(c) for c in _wf_list(t.get("children"), "children")],
                             [str(f) for f in _wf_list(t.get("inputFiles"), "inputFiles")],
                             [str(f) for f in _wf_list(t.get("outputFiles"), "outputFiles")]))
    return tasks, sizes


def _wf_tasks_old(wf: dict[str, Any]) -> tuple[list[_WfTask], dict[str, Any], dict[str, str]]:
    raw_tasks = wf.get("tasks", wf.get("jobs"))
    sizes: dict[str, Any] = {}
    tasks = []
    alias: dict[str, str] = {}
    for t in _wf_list(raw_tasks, "workflow.tasks"):
        name = str(t["name"])
        key = str(t.get("id", name))
        alias.setdefault(key, key)
        alias.setdefault(name, key)
        inputs, outputs = [], []
        for f in _wf_list(t.get("files"), "files"):
            fid = str(f.get("id", f.get("name")))
            if "path" in f and "id" not in f:
                fid = str(f["path"]) + fid
            size = f.get("sizeInBytes", f.get("size"))
            if fid in sizes and sizes[fid] != size:
                size = max(sizes[fid], size)
            sizes[fid] = size
            link = str(f.get("link", "")).lower()
            if link == "input":
                inputs.append(fid)
            elif link == "output":
                outputs.append(fid)
            else:
                raise ValueError(f"file {fid!r} of task {key!r} has link {f.get('link')!r}, "
                                 "expected 'input' or 'output'")
        rt = t.get("runtimeInSeconds", t.get("runtime"))
        tasks.append(_WfTask(key, _task_type_name(name, t.get("category")), rt,
                             [str(p) for p in _wf_list(t.get("parents"), "parents")],
                             [str(c) for c in _wf_list(t.get("children"), "children")],
                             inputs, outputs))
    return tasks, sizes, alias


def _finite(value: Any) -> bool:
    """Whether a JSON value is a finite number (a huge integer is not)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def workflow_size(path: str | Path) -> int:
    """Number of tasks of a WfFormat instance (the file is read once per change)."""
    p = Path(path)
    try:
        stat = p.stat()
    except OSError:
        stat = None
    key = (str(p), stat.st_mtime_ns, stat.st_size) if stat else (str(p), 0, 0)
    return _cached_template(*key).runtime.size


@functools.lru_cache(maxsize=16)
def _cached_template(path: str, _mtime: int, _size: int) -> _WfTemplate:
    return _parse_wfformat(path, 0.0)


def _parse_wfformat(path: str | Path, min_runtime: float) -> _WfTemplate:
    src = str(path)

    def fail(message: str) -> GeosimError:
        return GeosimError(message.replace("\n", " "), source=src)

    try:
        if os.path.getsize(path) > MAX_FILE_BYTES:
            raise fail(f"larger than {MAX_FILE_BYTES:,} bytes")
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, UnicodeDecodeError) as exc:
        raise fail(f"cannot read WfFormat file: {exc}") from None
    except json.JSONDecodeError as exc:
        raise fail(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except ValueError as exc:                       # e.g. an integer of too many digits
        raise fail(f"not valid JSON: {exc}") from None
    except RecursionError:
        raise fail("not valid WfFormat: nested too deeply") from None
    try:
        if not isinstance(doc, dict) or not isinstance(doc.get("workflow"), dict):
            raise ValueError("no 'workflow' object")
        wf = doc["workflow"]
        if "specification" in wf:
            tasks, sizes = _wf_tasks_v15(wf)
            alias = {t.key: t.key for t in tasks}
        elif "tasks" in wf or "jobs" in wf:
            tasks, sizes, alias = _wf_tasks_old(wf)
        else:
            raise ValueError("'workflow' has neither 'specification' (schema 1.5, 1.6) nor 'tasks'")
    except KeyError as exc:
        raise fail(f"malformed WfFormat: missing field {exc}") from None
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise fail(f"malformed WfFormat: {exc}") from None

    if not tasks:
        raise fail("workflow has no tasks")
    index: dict[str, int] = {}
    for i, t in enumerate(tasks):
        if t.key in index:
            raise fail(f"duplicate task id {t.key!r}")
        index[t.key] = i
    for name, key in alias.items():
        index.setdefault(name, index[key])

    # file sizes (MB) and producers
    size_mb: dict[str, float] = {}
    for fid, size in sizes.items():
        ok = _finite(size) and size >= 0
        if not ok:
            raise fail(f"file {fid!r} has invalid size {size!r}")
        size_mb[fid] = float(size) / BYTES_PER_MB
    writer: dict[str, int] = {}
    for i, t in enumerate(tasks):
        for f in t.outputs:
            if f not in size_mb:
                raise fail(f"task {t.key!r} writes unknown file {f!r}")
            writer.setdefault(f, i)

    # dependencies: declared parents and children, plus data flow from producers
    deps: set[tuple[int, int]] = set()
    for i, t in enumerate(tasks):
        for p in t.parents:
            if p not in index:
                raise fail(f"task {t.key!r} has unknown parent {p!r}")
            deps.add((index[p], i))
        for c in t.children:
            if c not in index:
                raise fail(f"task {t.key!r} has unknown child {c!r}")
            deps.add((i, index[c]))
        for f in t.inputs:
            if f not in size_mb:
                raise fail(f"task {t.key!r} reads unknown file {f!r}")
            w = writer.get(f)
            if w is not None and w != i:
                deps.add((w, i))
    self_loops = [tasks[a].key for a, b in deps if a == b]
    if self_loops:
        raise fail(f"task {self_loops[0]!r} depends on itself")

    # topological order (Kahn), ties broken by file order
    nt = len(tasks)
    children: list[list[int]] = [[] for _ in range(nt)]
    indeg = [0] * nt
    for a, b in deps:
        children[a].append(b)
        indeg[b] += 1
    heap = [i for i in range(nt) if indeg[i] == 0]
    heapq.heapify(heap)
    topo: list[int] = []
    while heap:
        i = heapq.heappop(heap)
        topo.append(i)
        for c in children[i]:
            indeg[c] -= 1
            if indeg[c] == 0:
                heapq.heappush(heap, c)
    if len(topo) < nt:
        stuck = [tasks[i].key for i in range(nt) if indeg[i] > 0]
        more = f" (and {len(stuck) - 5} more)" if len(stuck) > 5 else ""
        raise fail(f"dependency cycle among tasks {', '.join(map(repr, stuck[:5]))}{more}")
    pos = np.empty(nt, dtype=np.int64)
    pos[topo] = np.arange(nt)

    # runtimes and types
    runtime = np.empty(nt)
    type_index: dict[str, int] = {}
    ttype = np.empty(nt, dtype=np.int32)
    for i, t in enumerate(tasks):
        rt = t.runtime
        ok = _finite(rt) and rt >= 0
        if not ok:
            raise fail(f"task {t.key!r} has no valid runtime (got {rt!r})")
        runtime[pos[i]] = max(float(rt), min_runtime)
        ttype[pos[i]] = type_index.setdefault(t.type_name, len(type_index))

    # edges (sizes: files the child reads that the parent writes) and raw inputs
    outputs = [set(t.outputs) for t in tasks]
    edges = sorted((int(pos[a]), int(pos[b]),
                    sum(size_mb[f] for f in set(tasks[b].inputs) if f in outputs[a]))
                   for a, b in deps)
    raw_lists: list[list[tuple[float, int]]] = [[] for _ in range(nt)]
    raw_index: dict[str, int] = {}
    for i, t in enumerate(tasks):
        for f in dict.fromkeys(t.inputs):
            if f not in writer:
                raw_lists[pos[i]].append((size_mb[f], raw_index.setdefault(f, len(raw_index))))
    counts = [len(r) for r in raw_lists]
    flat = [x for r in raw_lists for x in r]
    return _WfTemplate(
        runtime=runtime,
        task_type=ttype,
        type_names=tuple(type_index),
        edge_src=np.array([e[0] for e in edges], dtype=np.int64),
        edge_dst=np.array([e[1] for e in edges], dtype=np.int64),
        edge_size=np.array([e[2] for e in edges], dtype=np.float64),
        raw_ptr=np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
        raw_size=np.array([x[0] for x in flat], dtype=np.float64),
        raw_file=np.array([x[1] for x in flat], dtype=np.int64),
        n_raw_files=len(raw_index),
    )


def read_wfformat(path: str | Path, *, arrival: float = 0.0, input_cluster: int = 0,
                  reference_mips: float = REFERENCE_MIPS, min_runtime: float = 1e-3) -> Workload:
    """One job from a WfCommons WfFormat instance (JSON).

    Supports schemas 1.5 and 1.6 (``workflow.specification.tasks`` with ``id``, ``name``,
    ``parents``, ``children``, ``inputFiles``, ``outputFiles``; ``workflow.specification.files``
    with ``id``, ``sizeInBytes``; ``workflow.execution.tasks`` with ``id``,
    ``runtimeInSeconds``; WfCommons 1.6 writes 1.6 in that layout) and the older
    layout of 1.0-1.4 (``workflow.tasks`` or ``workflow.jobs`` with ``name``/``id``,
    ``parents``/``children`` by name or id, ``runtime``/``runtimeInSeconds``, and ``files`` with
    ``link`` input/output and ``size``/``sizeInBytes`` in bytes).

    Dependencies are the declared parents and children plus data flow (a task reading a file
    another task writes depends on it). An edge's size is the total size of the files the child
    reads that the parent writes (0 for a pure control dependency). A file read but written by no
    task is a raw input of each task reading it, stored on ``input_cluster``. A task's type is its
    ``category`` if present, else its name without a trailing ``_ID0000012``/``_12`` suffix.

    Args:
        path: The JSON file.
        arrival: Arrival time of the job.
        input_cluster: Cluster holding the raw inputs.
        reference_mips: Work = runtime x reference_mips (the runtimes are taken as measured on a
            VM of that power).
        min_runtime: Runtimes below this (traces record 0 s for very short tasks) are raised to
            it, since work must be positive.

    Returns:
        A one-job workload, tasks in a topological order (file order where free).

    Raises:
        GeosimError: With ``source=path`` for an unreadable or malformed file, a missing
            parent, an unknown file, a missing runtime or a dependency cycle.
    """
    mips = check_positive(reference_mips, "reference_mips")
    min_runtime = check_positive(min_runtime, "min_runtime")
    c = check_count(input_cluster, "input_cluster")
    tpl = _parse_wfformat(path, min_runtime)
    return _template_job(tpl, np.full(tpl.n_raw_files, c, dtype=np.int64), float(arrival), mips)


def _template_job(tpl: _WfTemplate, file_cluster: np.ndarray, arrival: float,
                  mips: float) -> Workload:
    nt = tpl.runtime.shape[0]
    return Workload(arrival=np.array([arrival]), weight=np.ones(1),
                    task_ptr=np.array([0, nt]), task_work=tpl.runtime * mips,
                    task_type=tpl.task_type, type_names=tpl.type_names, edge_src=tpl.edge_src,
                    edge_dst=tpl.edge_dst, edge_size=tpl.edge_size, raw_ptr=tpl.raw_ptr,
                    raw_cluster=file_cluster[tpl.raw_file], raw_size=tpl.raw_size)


def wfformat_jobs(paths: Sequence[str | Path], n_jobs: int, arrival_rate: float,
                  rng: np.random.Generator, *, input_clusters: np.ndarray,
                  input_probs: np.ndarray | None = None,
                  sites_per_job: int | tuple[int, int] = (1, 4),
                  reference_mips: float = REFERENCE_MIPS, min_runtime: float = 1e-3,
                  start: float = 0.0) -> Workload:
    """Replay real workflows as a Poisson stream: job j is instance ``paths[j % len(paths)]``.

    Each instance is read once (see :func:`read_wfformat`). Raw inputs are placed as in
    :func:`montage_jobs`: each job picks ``k ~ U{sites_per_job}`` distinct clusters from
    ``input_clusters`` (weighted by ``input_probs``) and stores each distinct raw file of the
    job on one of them (a file read by several tasks is in one place).

    Args:
        paths: WfFormat JSON files.
        n_jobs: Number of jobs.
        arrival_rate: Poisson arrival rate, jobs per second.
        rng: Random generator.
        input_clusters: Clusters that may store raw inputs.
        input_probs: Weights of ``input_clusters`` (uniform if None).
        sites_per_job: Range (inclusive) of distinct input clusters per job.
        reference_mips: Work = runtime x reference_mips.
        min_runtime: Minimum runtime, seconds.
        start: Time origin of the arrivals.

    Returns:
        The workload; type names are the union over the instances.
    """
    paths = list(paths)
    if not paths:
        raise GeosimError("wfformat_jobs needs at least one WfFormat file")
    clusters, probs = input_sites(input_clusters, input_probs)
    usable = int(np.count_nonzero(probs)) if probs is not None else clusters.shape[0]
    k_lo, k_hi = check_range(sites_per_job, "sites_per_job", integer=True, minimum=1)
    mips = check_positive(reference_mips, "reference_mips")
    min_runtime = check_positive(min_runtime, "min_runtime")
    templates = [_parse_wfformat(p, min_runtime) for p in paths]

    name_index: dict[str, int] = {}
    remaps = []
    for tpl in templates:
        for nm in tpl.type_names:
            name_index.setdefault(nm, len(name_index))
        remaps.append(np.array([name_index[nm] for nm in tpl.type_names], dtype=np.int32))

    arrival = poisson_arrivals(n_jobs, arrival_rate, rng, start)
    nj = arrival.shape[0]
    k_sites = np.minimum(rng.integers(k_lo, k_hi + 1, nj), usable)
    which = np.arange(nj) % len(templates)
    sizes = np.array([t.runtime.shape[0] for t in templates], dtype=np.int64)
    task_ptr = np.concatenate(([0], np.cumsum(sizes[which]))).astype(np.int64)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in
                                          ("work", "type", "src", "dst", "esize", "rcount",
                                           "rcl", "rsize")}
    for j in range(nj):
        tpl = templates[which[j]]
        off = task_ptr[j]
        file_cluster = place_inputs(rng, clusters, probs, int(k_sites[j]), tpl.n_raw_files)
        parts["work"].append(tpl.runtime * mips)
        parts["type"].append(remaps[which[j]][tpl.task_type])
        parts["src"].append(tpl.edge_src + off)
        parts["dst"].append(tpl.edge_dst + off)
        parts["esize"].append(tpl.edge_size)
        parts["rcount"].append(np.diff(tpl.raw_ptr))
        parts["rcl"].append(file_cluster[tpl.raw_file])
        parts["rsize"].append(tpl.raw_size)

    def cat(key: str, dtype: type) -> np.ndarray:
        return np.concatenate(parts[key]).astype(dtype) if nj else np.zeros(0, dtype=dtype)

    return Workload(arrival=arrival, weight=np.ones(nj), task_ptr=task_ptr,
                    task_work=cat("work", np.float64), task_type=cat("type", np.int32),
                    type_names=tuple(name_index), edge_src=cat("src", np.int64),
                    edge_dst=cat("dst", np.int64), edge_size=cat("esize", np.float64),
                    raw_ptr=np.concatenate(([0], np.cumsum(cat("rcount", np.int64)))),
                    raw_cluster=cat("rcl", np.int64), raw_size=cat("rsize", np.float64))
