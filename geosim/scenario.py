"""Scenarios: TOML files describing a world, a workload and a scheduler.

A scenario is validated against :data:`SCHEMA` before anything runs: every key is known,
every value has the right type and lies in its range, and files it names exist. Problems
raise :class:`~geosim.errors.GeosimError` naming the file, the dotted key and the value.

Range-valued parameters (``slots = [10, 50]``) are drawn uniformly per cluster, as in
PingAn's Table 2 (003 §6.1); a scalar fixes the value. See ``docs/model.md`` for units.
"""

from __future__ import annotations

import copy
import math
import os
import reprlib
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geosim.errors import GeosimError
from geosim.flowflex.generator import GeneratorConfig
from geosim.params import MAX_FLOAT, Field
from geosim.params import check_value as _check
from geosim.params import is_number as _is_number
from geosim.tomlio import toml_value
from geosim.topology import MAX_CLUSTERS

_FLOWS = GeneratorConfig()  # defaults of the flows workload

Check = Callable[[Any], str | None]


def _tier(slots, gate, pmean, prsd, outage) -> dict[str, Field]:
    return {
        "slots": Field(slots, "irange", lo=1, hi=1_000_000,
                       doc="slots (VMs) per cluster, drawn per cluster"),
        "gate_ratio": Field(gate, "range", lo=0, lo_open=True, doc="gate bandwidth / sum of VMs' "
                            "external bandwidth"),
        "power_mean": Field(pmean, "range", lo=0, lo_open=True, doc="mean VM power (MIPS)"),
        "power_rsd": Field(prsd, "range", lo=0, doc="relative standard deviation of VM power"),
        "outage_probability": Field(outage, "range", lo=0, hi=1, doc="probability that the "
                                    "cluster becomes unreachable at each outage trial"),
    }


#: Every key a scenario may hold, with its default. PingAn's Table 2 (003 §6.1) supplies the
#: tier defaults; the redundancy paper (002 §6) the availability defaults.
SCHEMA: dict[str, dict[str, Field]] = {
    "run": {
        "name": Field("scenario", "str", doc="label stored with the results"),
        "seed": Field(1, "int", lo=0, hi=2**63 - 1, doc="seed of every random draw of the run"),
        "dt": Field(1.0, "float", lo=1e-6, hi=86400.0,
                    doc="length of a time slot (s), 1e-6 to 86 400"),
        "horizon": Field(0.0, "float", lo=0,
                         doc="stop at this time (s); 0 = when all jobs are done"),
        "record_interval": Field(10.0, "float", lo=0,
                                 doc="sampling period of the cluster and link time series "
                                     "(s), at least 1e-6; 0 = no time series"),
        "max_memory_gb": Field(8.0, "float", lo=0, lo_open=True,
                               doc="refuse a run whose estimated memory exceeds this (GiB)"),
        "max_wall_seconds": Field(0.0, "float", lo=0,
                                  doc="stop a run after this much wall-clock time (s); "
                                      "0 = no limit"),
        "max_steps": Field(0, "int", lo=0, doc="stop a run after this many steps; 0 = no "
                           "limit"),
        "timing": Field("slot", "str", choices=("slot", "event"),
                        doc="slot: decisions at slot boundaries; event: an event-driven "
                        "scheduler decides at the instant of each arrival and completion, "
                        "others at slot boundaries; steps end at every instant a rate "
                        "changes (availability, outages, transfers), so all are exact"),
    },
    "scheduler": {
        "name": Field("fifo", "str", doc="registered scheduler name (geosim schedulers)"),
        "params": Field({}, "table", doc="keyword parameters of the scheduler"),
        "defaults": Field({}, "table", doc="parameters per scheduler name, used by a run of "
                          "that scheduler for the ones its spec leaves out, e.g. "
                          "[scheduler.defaults.pingan] epsilon = 0.8"),
        "aliases": Field({}, "table", doc="what a scheduler name means in this scenario: "
                         "name -> spec, e.g. srpt = \"srpt+r[max_copies=1,reassign=random]\" "
                         "(a spec's own parameters go on top of the alias's)"),
    },
    "topology": {
        "generator": Field("barabasi_albert", "str", choices=("barabasi_albert", "file", "single"),
                           doc="how the cluster graph is made"),
        "n_clusters": Field(100, "int", lo=1, hi=MAX_CLUSTERS, doc="clusters, for the generator"),
        "m": Field(2, "int", lo=1, doc="Barabási–Albert attachment edges per new node"),
        "file": Field("", "str", doc="GraphML or BRITE file (relative to the scenario)"),
        "tier_shares": Field([0.05, 0.20, 0.75], "list", doc="shares of large/medium/small "
                             "clusters, by degree"),
        "seed": Field(-1, "int", lo=-1, hi=2**63 - 1,
                      doc="seed of the generated graph; -1 = the run's seed"),
    },
    "tiers.large": _tier([500, 1500], [0.55, 0.75], [174.0, 355.0], [0.25, 0.6], [0.002, 0.011]),
    "tiers.medium": _tier([50, 500], [0.65, 0.85], [128.0, 241.0], [0.55, 0.85], [0.02, 0.2]),
    "tiers.small": _tier([10, 50], [0.75, 0.95], [68.0, 179.0], [0.35, 0.75], [0.05, 0.5]),
    "clusters": {
        "vm_bandwidth": Field(2.0, "float", lo=0, lo_open=True,
                              doc="external bandwidth of one VM (MB/s), for the gates"),
        "power_redraw_interval": Field(60.0, "float", lo=0,
                                       doc="VM power is redrawn every this many s (at least "
                                           "1e-3); 0 = never"),
        "slot_scale": Field(1.0, "float", lo=0, lo_open=True, hi=1_000,
                            doc="every cluster's drawn slot count times this (rounded, at "
                            "least 1); gates stay those of the drawn slots: slot scarcity "
                            "alone"),
        "slot_streams": Field("shared", "str", choices=("shared", "keyed"),
                              doc="shared: every slot's availability periods and VM power "
                                  "drawn at every step, from streams all slots share; keyed: "
                                  "each slot's own draws, made only when the slot is read "
                                  "(cost and memory follow the busy slots)"),
    },
    "availability": {
        "enabled": Field(True, "bool", doc="per-slot available/unavailable periods"),
        "available_shape": Field(0.34, "float", lo=0, lo_open=True, doc="gamma k of AP length"),
        "available_scale": Field(94.35, "float", lo=0, lo_open=True,
                                 doc="gamma θ of AP length (s)"),
        "unavailable_shape": Field(0.19, "float", lo=0, lo_open=True, doc="gamma k of UP length"),
        "unavailable_scale": Field(39.92, "float", lo=0, lo_open=True,
                                   doc="gamma θ of UP length (s)"),
        "available_rate": Field([2.0, 3.0], "range", lo=0, doc="speed factor in an AP, uniform"),
        "unavailable_rate": Field([0.0, 0.3], "range", lo=0, doc="speed factor in an UP, uniform"),
        "normalise": Field(True, "bool", doc="scale factors so the long-run mean factor is 1"),
    },
    "outages": {
        "enabled": Field(True, "bool", doc="cluster-level unreachability"),
        "trial_interval": Field(60.0, "float", lo=0, lo_open=True,
                                doc="seconds between outage trials of a reachable cluster"),
        "duration": Field("gamma", "str", choices=("gamma", "exponential", "deterministic"),
                          doc="distribution of outage length"),
        "duration_shape": Field(2.0, "float", lo=0, lo_open=True,
                                doc="gamma k of outage length (gamma only)"),
        "duration_scale": Field(15.0, "float", lo=0, lo_open=True,
                                doc="gamma θ; mean of exponential; value of deterministic (s)"),
        "probability_scale": Field(1.0, "float", lo=0, hi=1_000,
                                   doc="every cluster's drawn outage probability times this "
                                   "(at most 1): outage rates alone"),
    },
    "links": {
        "bandwidth_mean": Field([8.0, 32.0], "range", lo=0, lo_open=True,
                                doc="mean bandwidth of a WAN link (MB/s), drawn per link"),
        "bandwidth_rsd": Field([0.2, 0.5], "range", lo=0, doc="RSD of link bandwidth, per link"),
        "bandwidth_scale": Field(1.0, "float", lo=0, lo_open=True, hi=1_000,
                                 doc="every link's drawn mean bandwidth and every gate times "
                                 "this: WAN scarcity alone"),
        "redraw_interval": Field(10.0, "float", lo=0,
                                 doc="link bandwidth is redrawn every this many s (at "
                                     "least 1e-3); 0 = never"),
        "routing": Field("distance", "str", choices=("distance", "hops"),
                         doc="shortest paths by geographic length or by hop count"),
        "transfer": Field("fetch", "str", choices=("fetch", "stream"),
                          doc="fetch: each remote input arrives on its own and is processed "
                          "as it arrives; stream: a copy moves at its slowest input's "
                          "current rate"),
        "sharing": Field("maxmin", "str", choices=("maxmin", "equal"),
                         doc="maxmin: max-min fair (progressive filling), unused bandwidth "
                         "goes to the others; equal: each transfer gets an equal share of "
                         "every link and gate it crosses, its bandwidth the smallest"),
    },
    "workload": {
        "kind": Field("montage", "str",
                      choices=("montage", "single", "wfformat", "mapreduce", "google", "flows",
                               "spark", "google-trace", "alibaba-trace"),
                      doc="job generator, or a trace to read (the *-trace kinds)"),
        "n_jobs": Field(2000, "int", lo=1, hi=100_000_000, doc="jobs in the run"),
        "arrival_rate": Field(0.07, "float", lo=0, lo_open=True, doc="Poisson arrival rate (1/s)"),
        "work": Field({"distribution": "pareto", "scale": 20.0, "shape": 2.0}, "table",
                      doc="work distribution of single-work jobs"),
        "input_cluster": Field(-1, "int", lo=-1, doc="single-work jobs: cluster holding the "
                               "input (-1: no input data)"),
        "input_tiers": Field(["small", "medium"], "list", doc="tiers that may hold raw input"),
        "medium_input_share": Field(0.5, "float", lo=0, hi=1,
                                    doc="share of medium clusters that hold raw input"),
        "large_max_tasks": Field(2000, "int", lo=501, hi=1_000_000,
                                 doc="largest task count of a large job"),
        "reference_mips": Field(200.0, "float", lo=0, lo_open=True,
                                doc="MIPS of the machine task runtimes were measured on"),
        "files": Field([], "list", doc="WfFormat JSON instances (wfformat kind), or "
                       "batch_task.csv files of Alibaba's 2018 trace (alibaba-trace)"),
        "recipe": Field("", "str", doc="wfformat: generate the "
                        "workflows with this WfCommons recipe instead of reading files "
                        "(needs the wfcommons extra)"),
        "recipe_tasks": Field(250, "int", lo=1, hi=1_000_000, doc="wfformat with a recipe: "
                              "tasks asked of each generated workflow"),
        "recipe_instances": Field(4, "int", lo=1, hi=10_000, doc="wfformat with a recipe: "
                                  "distinct workflows generated (job j replays j mod this)"),
        "job_events": Field([], "list", doc="google-trace: job_events files of Google's "
                            "2011 trace (CSV, or gzipped CSV), in trace order"),
        "task_events": Field([], "list", doc="google-trace: task_events files, in trace "
                             "order"),
        "trace_start": Field(0.0, "float", lo=0, doc="*-trace kinds: keep jobs submitted "
                             "from this many s after the trace's origin"),
        "trace_end": Field(0.0, "float", lo=0, doc="*-trace kinds: ... and before this many "
                           "s (0: to the end)"),
        "data_lag": Field(0.0, "float", lo=0, doc="a job's raw input exists this many s "
                          "before the job arrives; a data-placing scheduler may move it"),
        "copy_variability": Field("pareto", "str",
                                  choices=("pareto", "lognormal", "gamma", "none"),
                                  doc="family of each copy's own work around its task's mean, "
                                  "with the task's coefficient of variation (000 §III: Pareto)"),
        "map_tasks": Field([1, 50], "irange", lo=1, hi=1_000_000,
                           doc="mapreduce jobs: map tasks per job, drawn per job"),
        "reduce_tasks": Field([0, 10], "irange", lo=0, hi=1_000_000, doc="mapreduce jobs: "
                              "reduce tasks per job, drawn per job (0: map-only)"),
        "map_mean": Field([10.0, 100.0], "range", lo=0, lo_open=True, doc="mapreduce jobs: "
                          "mean map task duration (s at power 1), drawn per job"),
        "map_cv": Field(0.5, "float", lo=0, doc="mapreduce jobs: coefficient of variation of "
                        "a map copy's work"),
        "reduce_mean": Field([10.0, 100.0], "range", lo=0, lo_open=True, doc="mapreduce jobs: "
                             "mean reduce task duration (s at power 1), drawn per job"),
        "reduce_cv": Field(0.5, "float", lo=0, doc="mapreduce jobs: coefficient of variation "
                           "of a reduce copy's work"),
        "weight": Field([1, 1], "irange", lo=1, doc="mapreduce jobs: job weight, drawn per job"),
        "mean_tasks": Field(26.31, "float", lo=1, lo_open=True, doc="google jobs: mean tasks "
                            "per job (000 Table II)"),
        "max_tasks": Field(5000, "int", lo=2, hi=10_000_000, doc="google jobs: largest task "
                           "count of the power law"),
        "duration_law": Field("split", "str", choices=("split", "pareto"), doc="google jobs: "
                              "split (every copy's duration within Table II's bounds, short "
                              "and long phases) or pareto (Table II as phase means)"),
        "duration_min": Field(12.8, "float", lo=0, lo_open=True, doc="google jobs: smallest "
                              "task duration (s at power 1; 000 Table II)"),
        "duration_max": Field(22919.3, "float", lo=0, lo_open=True, doc="google jobs: largest "
                              "task duration (s at power 1; 000 Table II)"),
        "duration_mean": Field(1179.7, "float", lo=0, lo_open=True, doc="google jobs: mean "
                               "task duration (s at power 1; 000 Table II)"),
        "duration_split": Field(1000.0, "float", lo=0, lo_open=True, doc="google jobs, split: "
                                "boundary between short and long phase means (s)"),
        "short_shape": Field(0.275, "float", lo=-20, hi=20, doc="google jobs, split: bounded "
                             "Pareto shape of short phase means"),
        "long_shape": Field(-1.0, "float", lo=-20, hi=20, doc="google jobs, split: bounded "
                            "Pareto shape of long phase means"),
        "task_cv": Field([0.1, 0.5], "range", lo=0, doc="google and *-trace jobs: coefficient "
                         "of variation of a copy's work, drawn per phase or stage (000 §VI-B: "
                         "small within a phase)"),
        "reduce_fraction": Field(0.2, "float", lo=0, hi=1, hi_open=True, doc="google(-trace): "
                                 "share of a job's tasks in its reduce stage, rounded down"),
        "priority_probs": Field([0.30, 0.15, 0.10, 0.02, 0.20, 0.02, 0.02, 0.02, 0.02, 0.12,
                                 0.02, 0.01], "list", doc="google jobs: probabilities of "
                                "priorities 0..11 (weight = priority + 1)"),
        "flow_batch": Field(True, "bool", doc="flows: one 004 §3 experiment, every flow at "
                            "t = 0 (false: n_jobs flows arriving at arrival_rate)"),
        "flow_count": Field(list(_FLOWS.flows), "irange", lo=1, hi=100_000, doc="flows: flows "
                            "per experiment (004 §3: 5-20)"),
        "flow_jobs": Field(list(_FLOWS.jobs), "irange", lo=1, hi=10_000, doc="flows: MapReduce "
                           "jobs per flow (004 §3: 2-20)"),
        "flow_edge_probability": Field(_FLOWS.edge_probability, "float", lo=0, hi=1,
                                       doc="flows: probability of each forward precedence arc"),
        "flow_weights": Field(list(_FLOWS.weights), "irange", lo=1, doc="flows: flow weight "
                              "(004 §3: 1-10)"),
        "flow_big_probability": Field(_FLOWS.big_probability, "float", lo=0, hi=1,
                                      doc="flows: probability that a flow is big"),
        "flow_big_factor": Field(_FLOWS.big_factor, "float", lo=0, lo_open=True,
                                 doc="flows: running-time multiplier of a big flow's jobs"),
        "flow_tall_probability": Field(_FLOWS.tall_probability, "float", lo=0, hi=1,
                                       doc="flows: probability that a flow's jobs are tall"),
        "flow_wide_probability": Field(_FLOWS.wide_probability, "float", lo=0, hi=1,
                                       doc="flows: probability that a flow's jobs are wide "
                                       "(cap = all slots)"),
        "flow_short_duration": Field(list(_FLOWS.short_duration), "range", lo=0, lo_open=True,
                                     doc="flows: running time at full width of a job that is "
                                     "not tall (time units)"),
        "flow_tall_duration": Field(list(_FLOWS.tall_duration), "range", lo=0, lo_open=True,
                                    doc="flows: running time at full width of a tall job "
                                    "(time units)"),
        "flow_narrow_cap": Field(list(_FLOWS.narrow_cap), "irange", lo=1, hi=1_000_000,
                                 doc="flows: cap of a job of a flow that is not wide"),
        "flow_deadline_slack": Field(_FLOWS.deadline_slack, "float", lo=0, doc="flows: extra "
                                     "deadline time, fraction of the experiment's squashed "
                                     "area"),
        "flow_sla_steps": Field(list(_FLOWS.sla_steps), "irange", lo=1, hi=1000,
                                doc="flows: SLA steps per flow (004: at most 5)"),
        "flow_sla_heights": Field(list(_FLOWS.sla_heights), "irange", lo=1, doc="flows: "
                                  "height of each SLA step"),
        "flow_sla_gap": Field(_FLOWS.sla_gap, "float", lo=0, doc="flows: extra time between "
                              "SLA steps, fraction of the squashed area"),
        "flow_time_unit": Field(60.0, "float", lo=0, lo_open=True, doc="flows: seconds per "
                                "time unit of the generator (and of the flow cost metrics)"),
        "flow_brick": Field(10.0, "float", lo=0, lo_open=True, doc="flows: largest work of "
                            "one brick task (s on a slot of power 1)"),
        "spark_app_weights": Field([1.0, 1.0, 1.0], "list", doc="spark jobs: relative "
                                   "frequencies of WordCount, iterative ML and PageRank "
                                   "(003 §5 gives none)"),
        "spark_size_mix": Field([0.46, 0.40, 0.14], "list", doc="spark jobs: shares of small, "
                                "medium and large inputs (003 Table 1)"),
        "spark_exact_mix": Field(True, "bool", doc="spark jobs: hold the application and size "
                                 "shares exactly, in random order (false: drawn per job)"),
        "spark_block_mb": Field(128.0, "float", lo=16.0, doc="spark jobs: HDFS block size "
                                "(MB), one map-side task per block"),
        "spark_ml_iterations": Field(10, "irange", lo=1, hi=100, doc="spark jobs: iterations "
                                     "of an iterative ML job, drawn per job"),
        "spark_pagerank_iterations": Field(10, "irange", lo=1, hi=100, doc="spark jobs: "
                                           "iterations of a PageRank job, drawn per job"),
        "spark_work_cv": Field(0.1, "float", lo=0, doc="spark jobs: coefficient of variation "
                               "of a task's work (partition skew)"),
    },
}

_SECTION_PARENTS = {"tiers"}

#: Deepest nesting of tables and arrays in a scenario (or a --set value).
MAX_DEPTH = 16
#: Largest scenario file read (bytes) and longest ``--set`` value (characters).
MAX_FILE_BYTES = 1 * 2**20
MAX_VALUE_CHARS = 65536
_REPR = reprlib.Repr()
_REPR.maxstring, _REPR.maxlong, _REPR.maxother, _REPR.maxlevel = 60, 40, 60, 4


def _short(value: Any) -> str:
    """``repr`` of a user's value, shortened (long strings, huge numbers, deep nesting)."""
    return _REPR.repr(value)


def default_scenario() -> dict[str, dict[str, Any]]:
    """Return the scenario made of every default (a fresh, mutable copy)."""
    return {sec: {k: copy.deepcopy(f.default) for k, f in fields.items()}
            for sec, fields in SCHEMA.items()}


@dataclass
class Scenario:
    """A validated scenario.

    Attributes:
        data: Section name (``"run"``, ``"tiers.small"``, …) to its complete key/value map.
        source: The file it came from, or ``"<dict>"``.
        base_dir: Directory that relative file names in the scenario are resolved against.
    """

    data: dict[str, dict[str, Any]]
    source: str = "<dict>"
    base_dir: Path = field(default_factory=Path.cwd)

    def __getitem__(self, section: str) -> dict[str, Any]:
        return self.data[section]

    def get(self, dotted: str) -> Any:
        """Return the value of a dotted key such as ``"workload.arrival_rate"``."""
        section, key = _split_key(dotted, self.source)
        return self.data[section][key]

    def resolve(self, path: str) -> Path:
        """Resolve a file named in the scenario relative to the scenario's directory."""
        p = Path(path)
        return p if p.is_absolute() else self.base_dir / p

    def with_overrides(self, overrides: Mapping[str, Any]) -> Scenario:
        """Return a new validated scenario with dotted-key overrides applied."""
        data = copy.deepcopy(self.data)
        _apply_overrides(data, overrides, self.source)
        _validate(data, self.source, self.base_dir)
        return Scenario(data, self.source, self.base_dir)

    def to_toml(self) -> str:
        """Serialise the complete scenario (every key, defaults included) as TOML."""
        lines: list[str] = []
        for section, values in self.data.items():
            lines.append(f"[{section}]")
            for key, value in values.items():
                lines.append(f"{key} = {toml_value(value)}")
            lines.append("")
        return "\n".join(lines)


def load_scenario(source: str | os.PathLike | Mapping[str, Any],
                  overrides: Mapping[str, Any] | None = None) -> Scenario:
    """Load and validate a scenario.

    Args:
        source: A TOML file path, or a nested mapping in the same shape as the file.
        overrides: Dotted keys to values (``{"workload.arrival_rate": 0.07}``); string
            values are parsed as TOML values where they parse (``"0.07"`` → 0.07).

    Returns:
        The validated scenario, every key present.

    Raises:
        GeosimError: The file is missing or malformed, or a key or value is bad.
    """
    if isinstance(source, Mapping):
        raw, name, base = dict(source), "<dict>", Path.cwd()
    else:
        path = Path(source)
        name, base = str(path), path.parent
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise GeosimError("scenario file not found", source=name) from None
        except OSError as exc:
            raise GeosimError(f"cannot read scenario file ({exc.strerror})", source=name) from None
        except UnicodeDecodeError as exc:
            raise GeosimError(f"not UTF-8 text (byte {exc.start})", source=name) from None
        if len(text) > MAX_FILE_BYTES:
            raise GeosimError(f"larger than {MAX_FILE_BYTES:,} bytes", source=name)
        line = _deep_key_line(text)
        if line:
            raise GeosimError(f"line {line}: a key of more than {MAX_DEPTH} dotted parts",
                              source=name)
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise GeosimError(f"malformed TOML: {exc}", source=name) from None
        except RecursionError:
            raise GeosimError("malformed TOML: nested too deeply", source=name) from None
        _check_depth(raw, name)
        if not raw:
            raise GeosimError("empty scenario: it sets nothing, so it would run every default "
                              "(give at least one section, e.g. [workload])", source=name)
    data = default_scenario()
    _merge(data, raw, name)
    if overrides:
        _apply_overrides(data, overrides, name)
    _validate(data, name, base)
    return Scenario(data, name, base)


def parse_override(text: str, source: str = "--set") -> tuple[str, Any]:
    """Parse ``KEY=VALUE`` from the command line into a dotted key and a typed value."""
    if "=" not in text:
        raise GeosimError(f"expected KEY=VALUE, got {text!r}", source=source)
    key, value = text.split("=", 1)
    return key.strip(), _parse_value(value.strip(), source, key.strip())


def _parse_value(value: Any, source: str = "--set", key: str | None = None) -> Any:
    if not isinstance(value, str):
        _check_depth(value, source, key)
        return value
    if len(value) > MAX_VALUE_CHARS:
        raise GeosimError(f"value longer than {MAX_VALUE_CHARS} characters ({_short(value)})",
                          source=source, key=key)
    try:
        parsed = tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        return value
    except RecursionError:
        raise GeosimError(f"value nested too deeply ({_short(value)})", source=source,
                          key=key) from None
    _check_depth(parsed, source, key)
    return parsed


def _deep_key_line(text: str) -> int:
    """The first line whose key has more than :data:`MAX_DEPTH` dotted parts (0: none).

    Checked before parsing, in one pass: the TOML reader slows down with the square of
    a key's parts.
    """
    for number, line in enumerate(text.splitlines(), 1):
        ends = [i for i in (line.find("="), line.find("]")) if i >= 0]
        if line[:min(ends, default=len(line))].count(".") > MAX_DEPTH:
            return number
    return 0


def _check_depth(value: Any, source: str, key: str | None = None) -> None:
    """Refuse tables and arrays nested deeper than :data:`MAX_DEPTH` (without recursing)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise GeosimError(f"tables or arrays nested deeper than {MAX_DEPTH} levels",
                              source=source, key=key)
        if isinstance(item, Mapping):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list | tuple):
            stack.extend((v, depth + 1) for v in item)


def _split_key(dotted: str, source: str) -> tuple[str, str]:
    section, _, key = dotted.rpartition(".")
    if section not in SCHEMA:
        raise GeosimError(f"unknown key {_short(dotted)}", source=source)
    if key not in SCHEMA[section]:
        raise GeosimError(f"unknown key {_short(dotted)}", source=source)
    return section, key


def _merge(data: dict[str, dict[str, Any]], raw: Mapping[str, Any], source: str) -> None:
    for top, value in raw.items():
        if top in _SECTION_PARENTS:
            if not isinstance(value, Mapping):
                raise GeosimError(f"[{top}] must be a table", source=source, key=top)
            for sub, subval in value.items():
                _merge_section(data, f"{top}.{sub}", subval, source)
        else:
            _merge_section(data, top, value, source)


def _merge_section(data: dict[str, dict[str, Any]], section: str, values: Any,
                   source: str) -> None:
    if section not in SCHEMA:
        raise GeosimError(f"unknown section [{section}]", source=source, key=section)
    if not isinstance(values, Mapping):
        raise GeosimError(f"[{section}] must be a table", source=source, key=section)
    for key, value in values.items():
        if key not in SCHEMA[section]:
            raise GeosimError(f"unknown key (value {_short(value)})", source=source,
                              key=f"{section}.{key}")
        data[section][key] = value


def _apply_overrides(data: dict[str, dict[str, Any]], overrides: Mapping[str, Any],
                     source: str) -> None:
    for dotted, value in overrides.items():
        section, key = _split_key(dotted, source)
        if section == "scheduler" and key == "params" and isinstance(value, Mapping):
            data[section][key] = {**data[section][key], **value}
        else:
            data[section][key] = _parse_value(value, source, dotted)


def _validate(data: dict[str, dict[str, Any]], source: str, base: Path) -> None:
    for section, fields in SCHEMA.items():
        for key, fld in fields.items():
            value = data[section][key]
            problem = _check(fld, value)
            if problem:
                raise GeosimError(f"{problem} (got {_short(value)})", source=source,
                                  key=f"{section}.{key}")
            if fld.kind == "irange" and isinstance(value, float):
                data[section][key] = int(value)
    interval = data["run"]["record_interval"]
    if 0 < interval < 1e-6:
        raise GeosimError(f"must be 0 (no time series) or at least 1e-6 (got {interval:g})",
                          source=source, key="run.record_interval")
    shares = data["topology"]["tier_shares"]
    if (len(shares) != 3 or not all(_is_number(s) and s >= 0 for s in shares)
            or not math.isclose(sum(shares), 1.0, abs_tol=1e-9)):
        raise GeosimError(f"must be three non-negative shares summing to 1 (got {shares!r})",
                          source=source, key="topology.tier_shares")
    topo = data["topology"]
    if topo["generator"] == "file":
        if not topo["file"]:
            raise GeosimError("generator 'file' needs topology.file", source=source,
                              key="topology.file")
        if not _is_file(base, topo["file"]):
            raise GeosimError(f"topology file not found: {base / topo['file']}",
                              source=source, key="topology.file")
    if topo["generator"] == "barabasi_albert" and topo["n_clusters"] <= topo["m"]:
        raise GeosimError(f"needs more clusters than m={topo['m']} (got {topo['n_clusters']})",
                          source=source, key="topology.n_clusters")
    bad = [t for t in data["workload"]["input_tiers"] if t not in ("large", "medium", "small")]
    if bad or not data["workload"]["input_tiers"]:
        raise GeosimError(f"must list tiers among large/medium/small (got {bad or '[]'})",
                          source=source, key="workload.input_tiers")
    wl = data["workload"]
    if not wl["duration_min"] < wl["duration_max"]:
        raise GeosimError(f"must exceed workload.duration_min = {wl['duration_min']!r} "
                          f"(got {wl['duration_max']!r})", source=source,
                          key="workload.duration_max")
    if not wl["duration_min"] < wl["duration_mean"] < wl["duration_max"]:
        raise GeosimError("must lie strictly between workload.duration_min and duration_max "
                          f"(got {wl['duration_mean']!r})", source=source,
                          key="workload.duration_mean")
    if wl["duration_law"] == "split" and \
            not wl["duration_min"] < wl["duration_split"] < wl["duration_max"]:
        raise GeosimError("must lie strictly between workload.duration_min and duration_max "
                          f"(got {wl['duration_split']!r})", source=source,
                          key="workload.duration_split")
    if not wl["mean_tasks"] < wl["max_tasks"]:
        raise GeosimError(f"must be below workload.max_tasks = {wl['max_tasks']!r} "
                          f"(got {wl['mean_tasks']!r})", source=source, key="workload.mean_tasks")
    probs = wl["priority_probs"]
    if (len(probs) != 12 or not all(_is_number(p) and p >= 0 for p in probs)
            or not math.isclose(sum(probs), 1.0, abs_tol=1e-6)):
        raise GeosimError(f"must be 12 non-negative probabilities summing to 1 (got {probs!r})",
                          source=source, key="workload.priority_probs")
    if wl["kind"] == "spark":
        for key in ("spark_app_weights", "spark_size_mix"):
            shares = wl[key]
            if (len(shares) != 3 or not all(_is_number(v) and 0 <= v <= MAX_FLOAT
                                            for v in shares) or not sum(shares) > 0):
                raise GeosimError(f"must be three non-negative numbers with a positive sum "
                                  f"(got {_short(shares)})", source=source, key=f"workload.{key}")
    if wl["recipe"]:
        from geosim.workload.recipes import RECIPES
        if wl["kind"] != "wfformat":
            raise GeosimError(f"generates workflows for kind 'wfformat', not {wl['kind']!r}",
                              source=source, key="workload.recipe")
        if wl["recipe"] not in RECIPES:
            raise GeosimError(f"must be one of {', '.join(RECIPES)} (got {_short(wl['recipe'])})",
                              source=source, key="workload.recipe")
        if wl["files"]:
            raise GeosimError("give workload.files or workload.recipe, not both",
                              source=source, key="workload.recipe")
    for key in () if wl["recipe"] else _FILE_KEYS.get(wl["kind"], ()):
        _check_files(wl, key, base, source)
    if wl["kind"].endswith("-trace") and wl["trace_end"] and \
            not wl["trace_end"] > wl["trace_start"]:
        raise GeosimError(f"must be 0 (no end) or above workload.trace_start = "
                          f"{wl['trace_start']!r} (got {wl['trace_end']!r})", source=source,
                          key="workload.trace_end")
    for section, key in (("clusters", "power_redraw_interval"), ("links", "redraw_interval")):
        value = data[section][key]
        if 0 < value < 1e-3:
            raise GeosimError(f"must be 0 (never) or at least 1e-3 (got {value!r})",
                              source=source, key=f"{section}.{key}")
    if not isinstance(data["scheduler"]["params"], Mapping):
        raise GeosimError("must be a table", source=source, key="scheduler.params")
    defaults = data["scheduler"]["defaults"]
    if not isinstance(defaults, Mapping):
        raise GeosimError("must be a table", source=source, key="scheduler.defaults")
    for name, params in defaults.items():       # names are resolved where runs are built
        if not isinstance(params, Mapping):
            raise GeosimError(f"must be a table of parameters (got {_short(params)})",
                              source=source, key=f"scheduler.defaults.{name}")
    aliases = data["scheduler"]["aliases"]
    if not isinstance(aliases, Mapping):
        raise GeosimError("must be a table", source=source, key="scheduler.aliases")
    for name, spec in aliases.items():
        if not isinstance(spec, str):
            raise GeosimError(f"must be a scheduler spec, a string (got {_short(spec)})",
                              source=source, key=f"scheduler.aliases.{name}")
    _check_work(data["workload"]["work"], source)


def _check_work(work: Mapping[str, Any], source: str) -> None:
    """Check ``workload.work`` whatever the workload kind, so a bad table never waits."""
    from geosim.workload import WorkDistribution
    params = dict(work)
    kind = params.pop("distribution", "pareto")
    if not isinstance(kind, str):
        raise GeosimError(f"distribution must be a string (got {_short(kind)})", source=source,
                          key="workload.work")
    try:
        WorkDistribution(kind, params)
    except GeosimError as exc:
        raise GeosimError(str(exc), source=source, key="workload.work") from None


#: The file lists each workload kind needs.
_FILE_KEYS = {"wfformat": ("files",), "alibaba-trace": ("files",),
              "google-trace": ("job_events", "task_events")}


def _check_files(wl: Mapping[str, Any], key: str, base: Path, source: str) -> None:
    """``workload.<key>`` lists at least one file, and each exists."""
    if not wl[key]:
        raise GeosimError(f"kind {wl['kind']!r} needs workload.{key}", source=source,
                          key=f"workload.{key}")
    for name in wl[key]:
        if not isinstance(name, str):
            raise GeosimError(f"must list file names (got {_short(name)})", source=source,
                              key=f"workload.{key}")
        if not _is_file(base, name):
            raise GeosimError(f"file not found: {base / name}", source=source,
                              key=f"workload.{key}")


def _is_file(base: Path, name: str) -> bool:
    """Whether ``name`` (relative to ``base``) is a file; False for a name the system refuses."""
    try:
        return (base / name).is_file()            # an absolute name replaces base
    except (OSError, ValueError):                 # too long, or holding a NUL byte
        return False
