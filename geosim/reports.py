"""Progress reports: what a speculation rule knows of the copies it watches (003 §2).

Mantri, LATE and Spark's speculation act on what running copies tell their job's
manager. With ``monitoring = "oracle"`` (the default) a rule reads every live copy's
true progress at every slot boundary: free, instant and never lost. With
``monitoring = "reports"`` it reads a :class:`ReportBoard` instead, which models the
reports as 003 §2 describes their trouble at the edge:

- **Heartbeats.** A copy reports every ``interval`` seconds from its start (at the
  first slot boundary at or after ``start + k · interval``, ``k = 1, 2, …``): its
  progress at that boundary, stamped with that time. A rule computes rates from the
  report's own pair (progress, time) and reads the latest report as current; between
  reports it does not extrapolate.
- **Where to.** Reports go to the job's manager on its **master cluster**: by default
  (``report_to = "home"``) the cluster holding the largest part (MB) of the job's raw
  input when its first copy is seen (a job without raw input: the cluster with the most
  slots, lowest id on ties); or one cluster given by id for every job.
- **Outages.** A report is sent only if the copy's cluster and the master cluster are
  both reachable at that boundary, and delivered only if the master is reachable when it
  arrives; otherwise it is lost and the manager keeps the previous report (missed
  heartbeats are not re-sent: the next one carries the newer progress).
- **Delay.** A report arrives ``delay × hops`` seconds after it is sent (``hops``: the
  route's length in WAN links between the copy's and the master cluster; 0 for a copy on
  the master cluster), seen at the first slot boundary at or after that instant.
- **Cost.** Each monitored copy gives ``cost`` of its slot share to its monitoring agent:
  a copy of share ``σ`` runs at ``σ · (1 − cost)`` from the boundary at which the board
  first sees it.

Completions are events, not heartbeats: a completion report (Spark's status update) is
sent when the task is seen done and delivered after the same delay once the master is
reachable (:meth:`ReportBoard.delays`); it waits, it is not lost.
"""

from __future__ import annotations

from collections.abc import Callable
from math import inf

import numpy as np

from geosim.errors import GeosimError
from geosim.modeler import PerformanceModel
from geosim.params import Field
from geosim.view import Actions, SchedulerView

#: ``place(tasks) -> clusters``, as :data:`geosim.schedulers.compose.PlaceFn`.
PlaceFn = Callable[[np.ndarray], np.ndarray]

#: What a speculation rule reads of running copies.
MONITORING = ("oracle", "reports")

#: Parameters of a redundancy rule that reads running copies through :mod:`geosim.reports`
#: (a :class:`~geosim.reports.Monitored` rule). That the report settings need
#: ``monitoring = "reports"`` is a rule across fields, left to
#: :func:`check_monitoring`, as is ``report_to``, a name or a number.
MONITORING_PARAMS: dict[str, Field] = {
    "monitoring": Field("oracle", "str", choices=MONITORING,
                        doc="oracle: true progress at every slot; reports: progress reports"),
    "report_interval": Field(None, "float", lo=0, hi=inf, lo_open=True, optional=True,
                             doc="seconds between a copy's heartbeats (reports; default 3)"),
    "report_delay": Field(None, "float", lo=0, hi=inf, optional=True,
                          doc="seconds a report travels per WAN hop (reports; default 0)"),
    "report_to": Field(None, "any", doc="master cluster: home (default) or a cluster id "
                       "(reports)"),
    "monitoring_cost": Field(None, "float", lo=0, hi=1, hi_open=True, optional=True,
                             doc="fraction of its slot share a copy gives to its monitoring "
                                 "(reports; default 0)"),
}
#: Seconds between a copy's heartbeats when ``report_interval`` is not given (Hadoop's
#: TaskTracker heartbeat).
DEFAULT_INTERVAL = 3.0

_EPS = 1e-9



def check_monitoring(monitoring: object, report_interval: object = None,
                     report_delay: object = None, report_to: object = None,
                     monitoring_cost: object = None) -> None:
    """Check the rules across the monitoring parameters of a speculation rule.

    Each value's own range is declared in :data:`MONITORING_PARAMS` and checked with the
    scheduler's other parameters; what is left is what one field cannot say.

    Args:
        monitoring: ``"oracle"`` or ``"reports"`` (see :data:`MONITORING`).
        report_interval: Seconds between heartbeats, or None for the default.
        report_delay: Seconds per WAN hop a report travels, or None for 0.
        report_to: ``"home"``, a cluster id (int >= 0), or None for ``"home"``.
        monitoring_cost: Fraction of a copy's slot share its monitoring takes, or None.

    Raises:
        ValueError: A report setting given with ``"oracle"``, or a bad ``report_to``.
    """
    given = {"report_interval": report_interval, "report_delay": report_delay,
             "report_to": report_to, "monitoring_cost": monitoring_cost}
    if monitoring == "oracle":
        named = [k for k, v in given.items() if v is not None]
        if named:
            raise ValueError(f"{named[0]} needs monitoring='reports' "
                             "(monitoring='oracle' reads true progress, for free)")
        return
    if report_to is not None and report_to != "home" and (
            not isinstance(report_to, int) or isinstance(report_to, bool) or report_to < 0):
        raise ValueError(f"report_to must be 'home' or a cluster id >= 0, got {report_to!r}")


class Monitored:
    """Mixin of a speculation rule that reads copies through a :class:`ReportBoard`.

    The rule calls :meth:`_init_monitoring` in ``__init__`` with its monitoring
    parameters and implements :meth:`speculate` instead of ``act``. With
    ``monitoring = "oracle"`` :attr:`reports` is None and :meth:`act` is the rule alone.
    """

    #: Whether copies send periodic progress reports (Spark's rule reads only completions).
    heartbeats: bool = True

    def _init_monitoring(self, monitoring: str, report_interval: float | None,
                         report_delay: float | None, report_to: str | int | None,
                         monitoring_cost: float | None) -> None:
        """Validate (:func:`check_monitoring`) and store the monitoring parameters."""
        check_monitoring(monitoring, report_interval, report_delay, report_to, monitoring_cost)
        self.monitoring, self.report_interval = monitoring, report_interval
        self.report_delay, self.report_to = report_delay, report_to
        self.monitoring_cost = monitoring_cost

    def prepare(self, view: SchedulerView, rng: np.random.Generator,
              model: PerformanceModel) -> None:
        """Reset the rule and start an empty board (None with ``"oracle"``)."""
        super().prepare(view, rng, model)  # type: ignore[misc]
        #: The reports the rule reads, or None when it reads true progress.
        self.reports: ReportBoard | None = None
        if self.monitoring == "oracle":
            return
        interval = DEFAULT_INTERVAL if self.report_interval is None \
            else float(self.report_interval)
        self.reports = ReportBoard(
            interval if self.heartbeats else None,
            0.0 if self.report_delay is None else float(self.report_delay),
            "home" if self.report_to is None else self.report_to,
            0.0 if self.monitoring_cost is None else float(self.monitoring_cost))
        self.reports.start(view)

    def act(self, view: SchedulerView, actions: Actions, place: PlaceFn,
            free: np.ndarray) -> None:
        """Take this boundary's reports, let the rule act, then charge the new copies."""
        board = self.reports
        if board is None:
            self.speculate(view, actions, place, free)
            return
        board.update(view)
        self.speculate(view, actions, place, free)
        board.charge(view, actions)

    def speculate(self, view: SchedulerView, actions: Actions, place: PlaceFn,
                  free: np.ndarray) -> None:
        """The rule's ``act`` (see :meth:`geosim.schedulers.compose.Redundancy.act`)."""
        raise NotImplementedError

    def progress_seen(self, view: SchedulerView, info: dict) -> tuple[np.ndarray, np.ndarray]:
        """Progress of the copies of ``info`` as the rule knows it, and when it was measured.

        With ``"oracle"`` the true progress, now (a scalar); with ``"reports"`` the last
        delivered reports (:meth:`ReportBoard.reported`).
        """
        if self.reports is None:
            return info["progress"], np.asarray(view.time)
        return self.reports.reported(info["copy"])


class ReportBoard:
    """The last report of every copy, as its job's master cluster received it.

    Per-copy state lives in arrays indexed by copy id; reports in flight in a queue of
    arrays. Call :meth:`start` once per run, :meth:`update` at every slot boundary
    (before reading), :meth:`charge` after launching copies.

    Args:
        interval: Seconds between a copy's heartbeats; None sends none (only
            :meth:`delays` is used, for completions).
        delay: Seconds a report takes per WAN hop.
        report_to: ``"home"`` or the id of the master cluster of every job.
        cost: Fraction of its slot share each monitored copy gives up.
    """

    def __init__(self, interval: float | None, delay: float = 0.0,
                 report_to: str | int = "home", cost: float = 0.0):
        self.interval, self.delay, self.report_to, self.cost = interval, delay, report_to, cost

    def start(self, view: SchedulerView) -> None:
        """Forget every report and master; check ``report_to`` against the world.

        Raises:
            GeosimError: ``report_to`` names a cluster the world does not have.
        """
        if self.report_to != "home" and not 0 <= int(self.report_to) < view.n_clusters:
            raise GeosimError(f"report_to = {self.report_to} is not a cluster "
                              f"(the world has {view.n_clusters})", key="scheduler.params")
        self._routes = view.routes
        self._master = np.full(len(view.job_arrival), -1, dtype=np.int64)
        self._largest = int(np.argmax(view.cluster_slots))
        self._prog = np.zeros(0)          # last delivered progress, per copy id
        self._at = np.zeros(0)            # when that progress was measured
        self._beats = np.zeros(0, dtype=np.int64)   # heartbeats due so far
        self._seen = np.zeros(0, dtype=bool)
        self._charged = np.zeros(0, dtype=bool)
        self._q_copy = np.empty(0, dtype=np.int64)  # reports in flight, in send order
        self._q_prog = np.empty(0)
        self._q_at = np.empty(0)
        self._q_due = np.empty(0)
        self._q_master = np.empty(0, dtype=np.int64)
        #: Heartbeats sent, delivered, and lost (unreachable sender or master) over the run.
        self.sent = 0
        self.delivered = 0
        self.lost = 0

    # ------------------------------------------------------------------ masters
    def masters(self, view: SchedulerView, jobs: np.ndarray) -> np.ndarray:
        """Master cluster of each of ``jobs`` (fixed the first time a job is asked for)."""
        jobs = np.asarray(jobs, dtype=np.int64)
        if self.report_to != "home":
            return np.full(jobs.size, int(self.report_to), dtype=np.int64)
        unknown = np.unique(jobs[self._master[jobs] < 0])
        for job in unknown:                      # once per job, not per step
            _, where, size = view.raw_inputs(int(job))
            mb = np.bincount(where, weights=size, minlength=view.n_clusters)
            self._master[job] = int(np.argmax(mb)) if mb.sum() > 0 else self._largest
        return self._master[jobs]

    def delays(self, view: SchedulerView, clusters: np.ndarray, jobs: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        """Master cluster and travel time (s) of a report (heartbeat or completion)."""
        master = self.masters(view, jobs)
        return master, self.delay * self._routes.hops(np.asarray(clusters, dtype=np.int64),
                                                       master)

    # ------------------------------------------------------------------ heartbeats
    def _grow(self, n: int) -> None:
        if n <= self._prog.size:
            return
        size = max(n, 2 * self._prog.size, 256)
        pad = size - self._prog.size
        self._prog = np.r_[self._prog, np.zeros(pad)]
        self._at = np.r_[self._at, np.zeros(pad)]
        self._beats = np.r_[self._beats, np.zeros(pad, dtype=np.int64)]
        self._seen = np.r_[self._seen, np.zeros(pad, dtype=bool)]
        self._charged = np.r_[self._charged, np.zeros(pad, dtype=bool)]

    def update(self, view: SchedulerView) -> None:
        """Send the heartbeats due at this boundary and deliver the reports arriving."""
        if self.interval is None:
            return
        now = view.time
        info = view.copy_info()
        ids = info["copy"]
        if ids.size:
            self._grow(int(ids.max()) + 1)
            new = ~self._seen[ids]
            if new.any():                    # no report yet: the launch, at its base
                fresh = ids[new]
                self._prog[fresh] = info["base"][new]
                self._at[fresh] = info["start"][new]
                self._seen[fresh] = True
            beats = np.floor((now - info["start"]) / self.interval + _EPS).astype(np.int64)
            due = beats > self._beats[ids]
            self._beats[ids] = np.maximum(self._beats[ids], beats)
            if due.any():
                sel = np.flatnonzero(due)
                master, travel = self.delays(view, info["cluster"][sel], info["job"][sel])
                reach = np.asarray(view.reachable)
                ok = reach[info["cluster"][sel]] & reach[master]
                self.sent += int(ok.sum())
                self.lost += int((~ok).sum())
                sel, master, travel = sel[ok], master[ok], travel[ok]
                self._q_copy = np.r_[self._q_copy, ids[sel]]
                self._q_prog = np.r_[self._q_prog, info["progress"][sel]]
                self._q_at = np.r_[self._q_at, np.full(sel.size, now)]
                self._q_due = np.r_[self._q_due, now + travel]
                self._q_master = np.r_[self._q_master, master]
        self._deliver(view, now)

    def _deliver(self, view: SchedulerView, now: float) -> None:
        """Apply the reports arriving by ``now`` at a reachable master; drop the others."""
        if self._q_copy.size == 0:
            return
        arrived = self._q_due <= now + _EPS
        if not arrived.any():
            return
        ok = arrived & np.asarray(view.reachable)[self._q_master]
        self.delivered += int(ok.sum())
        self.lost += int((arrived & ~ok).sum())
        # Per copy, the newest report that arrived (the queue is in send order).
        rows = np.flatnonzero(ok)[::-1]
        copies, first = np.unique(self._q_copy[rows], return_index=True)
        rows = rows[first]
        newer = self._q_at[rows] > self._at[copies]
        copies, rows = copies[newer], rows[newer]
        self._prog[copies] = self._q_prog[rows]
        self._at[copies] = self._q_at[rows]
        keep = ~arrived
        self._q_copy, self._q_prog = self._q_copy[keep], self._q_prog[keep]
        self._q_at, self._q_due = self._q_at[keep], self._q_due[keep]
        self._q_master = self._q_master[keep]

    def reported(self, copies: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Last delivered progress of ``copies`` and the time it was measured.

        A copy without a delivered report shows its base progress at its start.
        """
        copies = np.asarray(copies, dtype=np.int64)
        return self._prog[copies].copy(), self._at[copies].copy()

    # ------------------------------------------------------------------ cost
    def charge(self, view: SchedulerView, actions: Actions) -> None:
        """Take ``cost`` of their share from the live copies not charged yet."""
        if self.cost <= 0:
            return
        live = np.asarray(view.live_copies)
        if live.size == 0:
            return
        self._grow(int(live.max()) + 1)
        todo = live[~self._charged[live]]
        if todo.size == 0:
            return
        share = view.copy_info(todo)["share"]
        for value in np.unique(share):           # one call per distinct share
            actions.set_share(todo[share == value], float(value) * (1.0 - self.cost))
        self._charged[todo] = True
