"""Running comparisons: one run, many runs in worker processes or on Dask, :func:`compare`.

A run is determined by its scenario, its scheduler (with parameters) and its seed. The
world (topology, slot availability, outages, bandwidth) and the workload (arrivals, job
DAGs) depend on the seed only, never on the scheduler, so replication ``i`` of every
scheduler sees the same world and job ``j`` of replication ``i`` is the same job under
every scheduler: differences between schedulers are not blurred by different luck.

:func:`compare` runs every (scheduler, seed) pair in parallel worker processes
(:func:`run_local`) or on a Dask cluster (:func:`run_dask`), keeps each run's result in
a comparison directory (:class:`~geosim.experiment.store.CompareDir`) and summarises them
in the tables of :class:`~geosim.experiment.tables.Comparison`.

Worker processes end as soon as the process that started the comparison ends, even when
it is killed (:func:`exit_with`), so a killed comparison leaves no simulation running.
"""

from __future__ import annotations

import contextlib
import gc
import math
import multiprocessing
import os
import select
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

import numpy as np

from geosim.errors import GeosimError, os_error
from geosim.experiment import lock
from geosim.experiment.options import (
    _baseline_label,
    _check_workers,
    check_within,
    coerce_specs,
    resolve_seeds,
)
from geosim.experiment.store import JOB_COLUMNS, MANIFEST, CompareDir, RunOutcome
from geosim.experiment.tables import WITHIN, Comparison, build_comparison, flow_table
from geosim.results import Result, code_fingerprint, use_code_fingerprint
from geosim.scenario import Scenario, load_scenario
from geosim.schedulers.build import check_scheduler_names
from geosim.schedulers.spec import Spec
from geosim.threads import one_thread

#: Seconds between checks that the main process runs, where it cannot be waited for.
WATCH_INTERVAL = 0.5
#: Exit status of a worker whose main process ended.
ORPHAN_EXIT = 70


@dataclass(frozen=True)
class _Run:
    spec: Spec
    seed: int
    dest: str | None


def run_scenario(scenario: Scenario, spec: Spec, seed: int) -> Scenario:
    """The scenario of one run: ``spec`` as its scheduler and ``seed`` as ``run.seed``.

    Its TOML, saved with the run's result, reproduces the run with ``geosim run``.
    """
    data = {section: dict(values) for section, values in scenario.data.items()}
    data["run"]["seed"] = int(seed)
    data["scheduler"] = {**data["scheduler"], "name": spec.name, "params": dict(spec.params)}
    return Scenario(data, scenario.source, scenario.base_dir)


def simulate(scenario: Scenario, spec: Spec, seed: int) -> Result:
    """Run ``scenario`` with the scheduler of ``spec`` and ``seed``; return its result."""
    from geosim.model import GeoModel
    return GeoModel(run_scenario(scenario, spec, seed)).run()


def _digest(run: _Run, result: Result) -> RunOutcome:
    summary = {k: (v.item() if isinstance(v, np.generic) else v)
               for k, v in result.summary.items()}
    jobs = result.jobs.loc[:, list(JOB_COLUMNS)].reset_index(drop=True)
    return RunOutcome(run.spec.label, run.seed, summary, jobs)


def _execute(scenario: Scenario, run: _Run, fmt: str) -> RunOutcome:
    """Worker entry point: simulate one run, save it if it has a directory, digest it."""
    # A finished model is a reference cycle (model <-> agents); free the last run's
    # engine now rather than at the collector's next full pass, so a worker's peak
    # memory is that of one run.
    gc.collect()
    result = simulate(scenario, run.spec, run.seed)
    if run.dest is not None:
        result.save(run.dest, fmt=fmt)
    return _digest(run, result)


def _failed(run: _Run, exc: BaseException) -> BaseException:
    """The error to raise for a run that raised ``exc``, naming its scheduler and seed."""
    where = f"{run.spec.label}, seed {run.seed}"
    if isinstance(exc, GeosimError):
        return GeosimError(f"{where}: {exc}")
    if isinstance(exc, OSError):
        return GeosimError(f"{where}: {os_error(exc)}; finished runs are kept")
    if isinstance(exc, BrokenProcessPool):
        return GeosimError(f"{where}: a worker process died ({exc}); finished runs are "
                           "kept, run the comparison again to resume")
    exc.add_note(f"while running {where}")
    return exc


Done = Callable[[RunOutcome], None]


def _mp_context() -> multiprocessing.context.BaseContext:
    """Forkserver (workers fork from a server that imported geosim once), else spawn."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["geosim.experiment"])
        return ctx
    return multiprocessing.get_context("spawn")


def exit_with(pid: int) -> None:
    """End this process as soon as process ``pid`` ends (a daemon thread watches it).

    On Linux the thread waits on a pidfd of ``pid``, which a reused pid cannot fool;
    on other POSIX systems it checks every :data:`WATCH_INTERVAL` seconds that ``pid``
    exists. Elsewhere it does nothing. If ``pid`` has already ended, this process ends
    at once.
    """
    if os.name != "posix":
        return
    try:
        fd: int | None = os.pidfd_open(pid)
    except ProcessLookupError:
        os._exit(ORPHAN_EXIT)
    except (AttributeError, OSError):   # no pidfd (an older kernel, another system)
        fd = None

    def watch() -> None:
        if fd is not None:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            while not poller.poll():
                pass
        else:
            while True:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                except PermissionError:
                    pass
                time.sleep(WATCH_INTERVAL)
        os._exit(ORPHAN_EXIT)

    threading.Thread(target=watch, name="geosim-exit-with-main", daemon=True).start()


def _init_worker(main_pid: int, fingerprint: str) -> None:
    """Worker initializer: die with the main process, take its code fingerprint, one thread.

    With the forkserver the worker's parent is the server, not the main process, and the
    server outlives a killed main process as long as its workers run: the worker watches
    the main process itself. The workers share the cores, so each runs its wide kernels
    on one thread (:mod:`geosim.threads`; the numbers do not depend on it).
    """
    exit_with(main_pid)
    use_code_fingerprint(fingerprint)
    one_thread()


def run_local(scenario: Scenario, runs: Sequence[_Run], fmt: str, workers: int,
              done: Done) -> None:
    """Run ``runs`` in up to ``workers`` processes (in this process if one suffices).

    Workers end when this process ends, even if it is killed (:func:`exit_with`). A worker
    that dies (killed, out of memory) breaks the pool: the runs not finished then are run
    once more in a new pool, with a line on standard error; a second death stops the
    command with one line. Finished runs are saved either way, so nothing is run twice
    after a resume.
    """
    if workers <= 1 or len(runs) <= 1:
        for run in runs:
            try:
                outcome = _execute(scenario, run, fmt)
            except Exception as exc:
                raise _failed(run, exc) from None
            done(outcome)
        return
    finished: set[tuple[str, int]] = set()

    def record(outcome: RunOutcome) -> None:
        finished.add((outcome.label, outcome.seed))
        done(outcome)

    left = list(runs)
    for attempt in (1, 2):
        try:
            _run_pool(scenario, left, fmt, workers, record)
            return
        except _PoolBroken as broken:
            left = [r for r in left if (r.spec.label, r.seed) not in finished]
            if attempt == 2:
                raise _failed(broken.run, broken.exc) from None
            print(f"geosim: a worker process died ({broken.exc}); running the "
                  f"{len(left)} unfinished runs again", file=sys.stderr, flush=True)


class _PoolBroken(Exception):
    """A worker of the pool died while ``run`` was pending."""

    def __init__(self, run: _Run, exc: BaseException):
        super().__init__(str(exc))
        self.run, self.exc = run, exc


def _run_pool(scenario: Scenario, runs: Sequence[_Run], fmt: str, workers: int,
              done: Done) -> None:
    """Run ``runs`` in one pool of worker processes.

    Raises:
        _PoolBroken: A worker died.
    """
    with ProcessPoolExecutor(min(workers, len(runs)), mp_context=_mp_context(),
                             initializer=_init_worker,
                             initargs=(os.getpid(), code_fingerprint())) as pool:
        futures = {pool.submit(_execute, scenario, run, fmt): run for run in runs}
        try:
            for future in as_completed(futures):
                try:
                    outcome = future.result()
                except BrokenProcessPool as exc:
                    raise _PoolBroken(futures[future], exc) from None
                except Exception as exc:
                    raise _failed(futures[future], exc) from None
                done(outcome)
        except BaseException:
            for future in futures:
                future.cancel()
            raise


@contextlib.contextmanager
def dask_client(dask: Any) -> Iterator[Any]:
    """Yield a Dask client for ``dask`` (an address or a client); close one made here.

    Raises:
        GeosimError: The ``distributed`` package is missing or the scheduler is
            unreachable.
    """
    try:
        import distributed
    except ImportError:
        raise GeosimError("running on Dask needs the distributed package: "
                          "pip install 'geosim[dask]'", source="dask") from None
    if not isinstance(dask, str):
        yield dask
        return
    try:
        client = distributed.Client(dask, timeout="10s")
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise GeosimError(f"cannot reach the Dask scheduler at {dask!r}: {first}",
                          source="dask") from None
    try:
        yield client
    finally:
        client.close()


def run_dask(client: Any, scenario: Scenario, runs: Sequence[_Run], fmt: str,
             done: Done) -> None:
    """Run ``runs`` on a Dask cluster; results are saved here, by the client.

    Raises:
        GeosimError: A run failed, or a worker runs other code than this process (another
            :func:`~geosim.results.code_fingerprint`): its results are not kept.
    """
    import distributed
    pending = {client.submit(simulate, scenario, run.spec, run.seed, pure=False): run
               for run in runs}
    try:
        for future in distributed.as_completed(list(pending)):
            run = pending.pop(future)
            try:
                result = future.result()
            except Exception as exc:
                raise _failed(run, exc) from None
            if result.meta.get("code") != code_fingerprint():
                theirs = f"geosim {result.meta.get('geosim', '?')}, code " \
                    f"{result.meta.get('code') or 'not recorded'}"
                raise GeosimError(
                    f"{run.spec.label}, seed {run.seed}: the Dask worker runs different "
                    f"code ({theirs}) than this process (code {code_fingerprint()}); "
                    "install the same geosim on the workers", source="dask")
            if run.dest is not None:
                result.save(run.dest, fmt=fmt)
            done(_digest(run, result))
            future.release()
    except BaseException:
        if pending:
            client.cancel(list(pending))
        raise


def compare(scenario: Scenario | str | os.PathLike | Mapping[str, Any],
            schedulers: str | Sequence[str | Spec | tuple[str, Mapping[str, Any]]], *,
            seeds: str | Sequence[int] | None = None, reps: int | None = None,
            jobs_parallel: int | None = None, out: str | os.PathLike | None = None,
            baseline: str | None = None, within: str | Sequence[float] = WITHIN,
            overrides: Mapping[str, Any] | None = None, fmt: str = "parquet",
            dask: Any = None, progress: bool | str = False,
            restart: bool = False) -> Comparison:
    """Run several schedulers on the same worlds and workloads and compare them.

    Every (scheduler, seed) pair is one run; replication ``i`` of every scheduler uses
    seed ``seeds[i]``, so all schedulers see the same worlds and jobs.

    Args:
        scenario: A scenario, a TOML path or a mapping (see :func:`load_scenario`).
        schedulers: Specs such as ``"srpt"`` or ``"fair[multitasking=true]"`` (a list,
            or one comma-separated string), or ``(name, params)`` pairs.
        seeds: Seeds of the replications; default ``run.seed + i`` for ``reps`` of them.
        reps: Number of replications (default 1); must match ``seeds`` if both given.
        jobs_parallel: Worker processes (default: the number of CPUs).
        out: Comparison directory: every run is saved there and reused by later calls
            with the same scenario. None keeps everything in memory.
        baseline: Label of the scheduler the per-job reduction ratios refer to.
        within: Flowtime thresholds (s) of the ``within_<T>`` columns.
        overrides: Dotted-key overrides applied to the scenario.
        fmt: Table format of the saved runs: ``"parquet"`` or ``"csv"``.
        dask: Address of a Dask scheduler, or a ``distributed.Client``, to run on
            instead of local processes (needs ``pip install 'geosim[dask]'``).
        progress: Report finished runs on standard error: True or ``"bar"`` for a
            progress bar, ``"lines"`` for one line per run (for logs and pipes).
        restart: When ``out`` holds a comparison written by different code or of a
            different scenario, remove it and start afresh instead of refusing.

    Returns:
        The comparison tables.

    Raises:
        GeosimError: Bad input (checked before anything runs or is written), or a run
            that failed (named by scheduler and seed; finished runs stay saved).
    """
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario, overrides)
    elif overrides:
        scenario = scenario.with_overrides(overrides)
    specs = coerce_specs(schedulers)
    check_scheduler_names(scenario)
    seed_list = resolve_seeds(scenario, seeds, reps)
    base = _baseline_label(baseline, specs)
    thresholds = check_within(within)
    workers = _check_workers(jobs_parallel)
    if fmt not in ("parquet", "csv"):
        raise GeosimError(f"unknown table format {fmt!r} (parquet or csv)", source="format")
    with contextlib.ExitStack() as stack:
        if out is not None:
            stack.enter_context(lock.hold(out, "compare"))
        store = CompareDir.open(out, scenario, specs, seed_list, restart) \
            if out is not None else None
        client = stack.enter_context(dask_client(dask)) if dask is not None else None
        if store is not None:
            store.write_manifest()
        outcomes = _run_all(scenario, specs, seed_list, store, fmt, workers, client, progress)
        comparison = build_comparison(outcomes, [s.label for s in specs], seed_list, base,
                                      thresholds)
        if scenario["workload"]["kind"] == "flows":
            comparison.flows = flow_table(scenario, outcomes, [s.label for s in specs],
                                          seed_list)
        if store is not None:
            store.write_tables(comparison, fmt)
            comparison.out = store.path
            comparison.redone = tuple(store.damaged)
    return comparison


def _run_all(scenario: Scenario, specs: Sequence[Spec], seeds: Sequence[int],
             store: CompareDir | None, fmt: str, workers: int, client: Any,
             progress: bool | str) -> list[RunOutcome]:
    """Load the saved runs, run the missing ones; return every outcome."""
    outcomes, missing = [], []
    for spec in specs:
        for seed in seeds:
            saved = store.load(spec, seed) if store is not None else None
            if saved is not None:
                outcomes.append(saved)
            else:
                dest = str(store.run_dir(spec, seed)) if store is not None else None
                missing.append(_Run(spec, seed, dest))
    from tqdm import tqdm
    total = len(outcomes) + len(missing)
    if progress == "lines" and missing:
        print(f"compare: {len(outcomes)} of {total} runs saved, {len(missing)} to run",
              file=sys.stderr, flush=True)
    with tqdm(total=total, initial=len(outcomes), unit="run", desc="compare",
              file=sys.stderr, disable=progress in (False, "lines"), leave=False,
              dynamic_ncols=True) as bar:
        def done(outcome: RunOutcome) -> None:
            if store is not None and not (store.path / MANIFEST).is_file():
                raise GeosimError(f"{MANIFEST} vanished while the comparison ran (the "
                                  "directory was removed or replaced); stopped",
                                  source=str(store.path))
            outcomes.append(outcome)
            bar.update(1)
            if progress == "lines":
                print(f"compare: {len(outcomes)}/{total} runs done ({outcome.label}, seed "
                      f"{outcome.seed}, {outcome.summary.get('wall_seconds', math.nan):.0f} s)",
                      file=sys.stderr, flush=True)

        if client is not None:
            run_dask(client, scenario, missing, fmt, done)
        else:
            run_local(scenario, missing, fmt, workers, done)
    return outcomes
