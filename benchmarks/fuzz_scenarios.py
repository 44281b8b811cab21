"""Fuzz campaign: hostile scenario files against geosim's bad-input promise.

geosim promises (README, "bad input") that bad input prints exactly one line
``geosim: error: ...`` on stderr, exits with status 2, shows no traceback and writes
nothing. This campaign starts from the scenarios in ``scenarios/`` and generates hostile
mutations of them:

- keys: unknown keys and sections, deleted keys and sections;
- types: strings, booleans, lists, tables and dates where numbers go, and the reverse;
- values: NaN, ±inf, 1e±300, 5e-324, 2**63-1, -1, 0, huge integers, and ranges
  ``[x, y]`` made of them (reversed, NaN, empty, too long);
- special keys: the work distribution table, scheduler names, specs and parameters,
  tier shares, priority probabilities, input tiers, topology and workflow file names;
- text: UTF-16/UTF-32, latin-1 and cp1252 bytes, invalid UTF-8, a BOM, binary junk,
  truncation, flipped bytes, NUL bytes, empty and comment-only files;
- depth: arrays, inline tables, dotted keys and table headers nested deeply;
- ``--set KEY=VALUE`` overrides carrying the same hostile values;
- files a scenario names: malformed GraphML and BRITE topologies and WfFormat JSON
  workflows (truncated, deeply nested, huge numbers, missing fields, entity bombs...).

Each case is written into its own directory and checked with ``geosim validate``; a
seeded sample of them (``--run-sample``, built on a shrunk copy of the base scenario so
that a sound run takes seconds) also goes through ``geosim run --out DIR``. Every case
runs in its own process under a memory limit (``RLIMIT_AS``) and a time limit, and its
outcome is classified:

- ``ok``: exit status 0;
- ``clean error``: status 2, stderr exactly one line starting ``geosim: error:``, empty
  stdout, nothing written;
- escapes: ``traceback``, ``memory error``, ``hang`` (time limit), ``crash`` (killed by
  a signal), ``other exit``, ``multi-line stderr``, ``bad error line`` (one line not
  starting ``geosim: error:``), ``stdout on failure``, ``wrote output on failure``.

By default the cases run in a fork server: this process imports geosim once and forks
one child per case, which calls ``geosim.cli.main`` with its stdout and stderr
redirected to files and exits with its status (a segfault kills the child with a
signal, so it is still a crash). Each escape found that way is then run again as a
fresh ``geosim`` process (``--no-confirm`` skips this); ``--isolation subprocess`` runs
every case that way (about 3 s of start-up per case).

Usage (by hand, not part of the test suite)::

    .venv/bin/python benchmarks/fuzz_scenarios.py [--seed 1] [--cases 1100]
        [--run-sample 100] [--timeout 60] [--validate-timeout 30] [-j 2]
        [--report fuzz.json] [--keep DIR] [--only ID ...]

``--only`` regenerates the listed cases (``v17`` for validate case 17, ``r17`` for its
run) of the same seed; with ``--keep DIR`` their files stay in ``DIR/<id>/`` so that an
escape can be reproduced with the command the report gives. Cases are reproducible:
case ``i`` draws from a generator seeded with ``(seed, i)`` only.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import functools
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geosim.tomlio import dump_toml as _dump_toml
from geosim.tomlio import toml_string
from geosim.tomlio import toml_value as _toml_value

ROOT = Path(__file__).resolve().parents[1]
SCENARIO_DIR = ROOT / "scenarios"
GRAPHML = ROOT / "topologies" / "default-100.graphml"
BRITE = ROOT / "topologies" / "small.brite"
WFJSON = ROOT / "tests" / "data" / "montage-wfformat.json"

NAN, INF = float("nan"), float("inf")

OK, CLEAN = "ok", "clean error"
ESCAPES = ("traceback", "memory error", "hang", "crash", "other exit", "multi-line stderr",
           "bad error line", "stdout on failure", "wrote output on failure")

# --- hostile values ---------------------------------------------------------------------

EXTREME_NUMBERS: list[Any] = [
    NAN, INF, -INF, 1e300, -1e300, 1e-300, 5e-324, -5e-324, 1.7976931348623157e308,
    2**63 - 1, -(2**63), 2**64, 10**30, -(10**30), 10**400, -1, 0, -0.0, 0.0, 1, 0.5,
    1e-7, 1e-3, 2**31, 10**5, 10**6, 86400.000001, -1e-9,
]
# Kept separate: they are valid for many keys and only expensive (memory, time).
LARGE_COUNTS: list[int] = [10**4, 10**5, 10**6, 10**7, 2**40, 2**63 - 1]
HOSTILE_STRINGS: list[str] = [
    "", " ", "nan", "inf", "12", "-1", "true", "fifo ", " FIFO", "Fair", "montage\n",
    "ünïcödé", "名前", "\u202e", "a" * 100_000, "../../etc/passwd", "$HOME", "%s%n",
    "{}", "[1, 2]", "null",
]
WEIRD_KEYS: list[str] = [
    "bogus", "N_JOBS", "n_jobs ", "", " ", "ключ", "a.b", "seed2", "Workload", "\u00e9",
    "x" * 5000, "1", "true",
]
WHEN = [dt.datetime(1979, 5, 27, 7, 32, tzinfo=dt.UTC), dt.datetime(1979, 5, 27, 7, 32),
        dt.date(1979, 5, 27), dt.time(7, 32, 0)]


def _wrong_types(kind: str) -> list[Any]:
    """Values of the wrong type for a schema field of ``kind``."""
    strings: list[Any] = ["12", "", "nan", "1e3", "[1, 2]", "yes"]
    bools: list[Any] = [True, False]
    lists: list[Any] = [[], [1], [1, 2, 3], ["a", "b"], [[1, 2]], [True], [{}], [NAN, 1],
                        [1, "2"]]
    tables: list[Any] = [{}, {"a": 1}, {"value": 1.0}, {"low": 1, "high": 2}]
    numbers: list[Any] = [0, 1, -1, 1.5, NAN, 2**63 - 1]
    pools = {
        "float": strings + bools + lists + tables + WHEN,
        "int": strings + bools + lists + tables + WHEN + [1.5, 2.0, NAN, INF, 1e300],
        "range": strings + bools + tables + WHEN + [[], [1, 2, 3], [[1, 2]], ["1", "2"],
                                                  [True, False], [{}, {}]],
        "irange": strings + bools + tables + WHEN + [[], [1, 2, 3], [[1, 2]], ["1", "2"],
                                                   [1.5, 2.5], 1.5, [True, 2]],
        "bool": strings + numbers + lists + tables + WHEN + ["true", "false"],
        "str": numbers + bools + lists + tables + WHEN,
        "list": strings + numbers + bools + tables + WHEN,
        "table": strings + numbers + bools + lists + WHEN,
    }
    return [v for v in pools[kind] if v is not None]


def _hostile_pair(rng: random.Random) -> list[Any]:
    choice = rng.randrange(9)
    a, b = rng.choice(EXTREME_NUMBERS), rng.choice(EXTREME_NUMBERS)
    if choice == 0:
        return [a, b]
    if choice == 1:
        lo, hi = sorted([abs(rng.choice([1, 5, 100, 1e6, 2**63 - 1])), 0.5])
        return [hi + 1, lo]  # reversed
    if choice == 2:
        return rng.choice([[NAN, 1], [1, NAN], [NAN, NAN], [-INF, INF], [INF, INF]])
    if choice == 3:
        return rng.choice([[0, 1e300], [5e-324, 1e300], [1e-300, 1e300], [1, 10**30],
                           [2**63 - 1, 2**63 - 1], [1, 2**63 - 1], [10**6, 10**7]])
    if choice == 4:
        return rng.choice([[], [1], [1, 2, 3], [[1, 2]], [1, [2]]])
    if choice == 5:
        return [a, a]
    if choice == 6:
        return rng.choice([[-1, 5], [0, 0], [-5, -1], [-0.0, 0.0], [0, 1]])
    if choice == 7:
        return rng.choice([[1.5, 2.5], [1, 2.5], [1e-7, 1e-7]])
    return rng.choice([["1", "2"], [True, 2], [1, {}], [dt.date(2000, 1, 1), 2]])


# --- a small TOML writer (tomllib only reads) ------------------------------------------


@dataclass(frozen=True)
class Raw:
    """TOML text written verbatim as a value (for nesting deeper than a writer would)."""

    text: str


def _mark_raw(value: Any, raws: dict[str, str]) -> Any:
    """``value`` with every :class:`Raw` replaced by a unique string recorded in ``raws``."""
    if isinstance(value, Raw):
        key = f"@@raw-{len(raws)}@@"
        raws[toml_string(key)] = value.text
        return key
    if isinstance(value, list | tuple):
        return [_mark_raw(v, raws) for v in value]
    if isinstance(value, dict):
        return {k: _mark_raw(v, raws) for k, v in value.items()}
    return value


def _write(writer: Callable[[Any], str], value: Any) -> str:
    raws: dict[str, str] = {}
    text = writer(_mark_raw(value, raws))
    for quoted, raw in raws.items():
        text = text.replace(quoted, raw)
    return text


def toml_value(value: Any) -> str:
    """One TOML value (geosim's writer; :class:`Raw` values verbatim)."""
    return _write(_toml_value, value)


def dump_toml(doc: dict[str, Any]) -> str:
    """Serialise a parsed scenario back to TOML (geosim's writer; :class:`Raw` verbatim)."""
    return _write(_dump_toml, doc)


# --- cases ---------------------------------------------------------------------------


@dataclass
class Case:
    """One hostile input: a scenario (document or raw bytes), its files and its command.

    Attributes:
        id: ``v<i>`` (validate) or ``r<i>`` (run) for case number ``i``.
        base: The scenario file it started from.
        family: The kind of mutation.
        doc: The parsed scenario being mutated (None once replaced by raw text).
        ops: One human-readable line per mutation applied, in order.
        encode: Turns the scenario's TOML text into the bytes written.
        files: Extra files in the case directory (None: a directory).
        overrides: ``--set`` arguments.
        scheduler: ``--scheduler`` argument of a run.
    """

    id: str
    base: str
    family: str = ""
    doc: dict[str, Any] | None = None
    ops: list[str] = field(default_factory=list)
    encode: Callable[[str], bytes] = lambda text: text.encode("utf-8")
    raw: str | None = None
    files: dict[str, bytes | None] = field(default_factory=dict)
    overrides: list[str] = field(default_factory=list)
    scheduler: str | None = None

    @property
    def command(self) -> str:
        return "run" if self.id.startswith("r") else "validate"

    def scenario_bytes(self) -> bytes:
        text = self.raw if self.raw is not None else dump_toml(self.doc or {})
        return self.encode(text)

    def argv(self, directory: Path) -> list[str]:
        args = [self.command, str(directory / "scenario.toml")]
        args += [f"--set={o}" for o in self.overrides]
        if self.command == "run":
            if self.scheduler is not None:
                args.append(f"--scheduler={self.scheduler}")
            args += ["--out", str(directory / "out"), "--no-progress"]
        return args

    def write(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "scenario.toml").write_bytes(self.scenario_bytes())
        for name, content in self.files.items():
            path = directory / name
            if content is None:
                path.mkdir(parents=True, exist_ok=True)
            else:
                path.write_bytes(content)


def _schema() -> dict[str, dict[str, Any]]:
    from geosim.scenario import SCHEMA
    return SCHEMA


@functools.cache
def _schedulers() -> dict[str, list[str]]:
    """Registered scheduler names to their constructor's parameter names."""
    import inspect

    from geosim.schedulers import registered
    out = {}
    for name, cls in registered().items():
        try:
            params = [p for p in inspect.signature(cls.__init__).parameters
                      if p not in ("self", "params", "kwargs")]
        except (TypeError, ValueError):
            params = []
        out[name] = params
    return out


def _get_section(doc: dict[str, Any], section: str, create: bool = True) -> dict | None:
    node: Any = doc
    for part in section.split("."):
        if not isinstance(node, dict):
            return None
        if part not in node or not isinstance(node[part], dict):
            if not create:
                return None
            node[part] = {}
        node = node[part]
    return node


def _set(case: Case, dotted: str, value: Any, note: str = "") -> None:
    section, _, key = dotted.rpartition(".")
    table = _get_section(case.doc, section)
    if table is None:  # an earlier mutation made a parent a non-table
        case.doc[section.split(".")[0]] = {}
        table = _get_section(case.doc, section)
    table[key] = value
    shown = value.text[:60] + ("..." if len(value.text) > 60 else "") \
        if isinstance(value, Raw) else _show(value)
    case.ops.append(f"set {dotted} = {shown}{note}")


def _show(value: Any, limit: int = 120) -> str:
    try:
        text = toml_value(value)
    except TypeError:
        text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"


def _field_keys(kinds: tuple[str, ...] | None = None) -> list[tuple[str, str, Any]]:
    return [(f"{sec}.{key}", fld.kind, fld) for sec, fields in _schema().items()
            for key, fld in fields.items() if kinds is None or fld.kind in kinds]


def _sections(doc: dict[str, Any]) -> list[str]:
    out = []
    for top, value in doc.items():
        if top == "tiers" and isinstance(value, dict):
            out += [f"tiers.{sub}" for sub, v in value.items() if isinstance(v, dict)]
        elif isinstance(value, dict):
            out.append(top)
    return out


# --- scenario mutations ------------------------------------------------------------------


def op_unknown_key(rng: random.Random, case: Case) -> None:
    section = rng.choice(_sections(case.doc) or ["run"])
    _set(case, f"{section}.{rng.choice(WEIRD_KEYS)}",
         rng.choice([1, "x", NAN, [], {}, True, 2**63 - 1]), " (unknown key)")


def op_unknown_section(rng: random.Random, case: Case) -> None:
    which = rng.randrange(8)
    if which == 0:
        case.doc[rng.choice(WEIRD_KEYS)] = {"a": 1}
        case.ops.append(f"add unknown section {_show(list(case.doc)[-1])}")
    elif which == 1:
        if not isinstance(case.doc.get("tiers"), dict):
            case.doc["tiers"] = {}
        case.doc["tiers"][rng.choice(["huge", "Small", "", "small2"])] = {"slots": 10}
        case.ops.append("add unknown tier section under [tiers]")
    elif which == 2:
        name = rng.choice(["tiers", "workload", "run", "scheduler", "topology"])
        case.doc[name] = rng.choice([5, "x", [1, 2], True, NAN])
        case.ops.append(f"section [{name}] replaced by the value {_show(case.doc[name])}")
    elif which == 3:
        name = rng.choice(["run", "workload", "tiers"])
        case.doc[name] = [{"seed": 1}, {"seed": 2}]
        case.ops.append(f"[{name}] made an array of tables")
    elif which == 4:
        case.doc["scheduler.defaults"] = {"pingan": {"epsilon": 0.5}}
        case.ops.append('add a quoted top-level key "scheduler.defaults" = {pingan = ...}')
    elif which == 5:
        key = rng.choice(["seed", "n_jobs", "name"])
        case.doc[key] = 1
        case.ops.append(f"add top-level scalar {key} = 1 (outside any section)")
    elif which == 6:
        case.doc["tiers"] = {"small": rng.choice([1, [], "x"])}
        case.ops.append(f"tiers.small made the value {_show(case.doc['tiers']['small'])}")
    else:
        case.doc["scheduler"] = case.doc.get("scheduler") if isinstance(
            case.doc.get("scheduler"), dict) else {}
        case.doc["scheduler"]["defaults"] = {"pingan": {"epsilon": 0.5},
                                             rng.choice(WEIRD_KEYS): {}}
        case.ops.append("scheduler.defaults with an odd scheduler name")


def op_delete(rng: random.Random, case: Case) -> None:
    sections = _sections(case.doc)
    if not sections or rng.random() < 0.35:
        if not case.doc:
            case.ops.append("nothing to delete")
            return
        top = rng.choice(list(case.doc))
        del case.doc[top]
        case.ops.append(f"delete section [{top}]")
        return
    section = rng.choice(sections)
    table = _get_section(case.doc, section, create=False)
    if not table:
        case.ops.append(f"[{section}] already empty")
        return
    key = rng.choice(list(table))
    del table[key]
    case.ops.append(f"delete key {section}.{key}")


def op_wrong_type(rng: random.Random, case: Case) -> None:
    dotted, kind, _ = rng.choice(_field_keys())
    _set(case, dotted, rng.choice(_wrong_types(kind)), f" (wrong type for a {kind})")


def op_extreme(rng: random.Random, case: Case) -> None:
    dotted, kind, _ = rng.choice(_field_keys(("float", "int", "range", "irange")))
    value = rng.choice(LARGE_COUNTS) if rng.random() < 0.12 else rng.choice(EXTREME_NUMBERS)
    _set(case, dotted, value, f" (extreme {kind})")


def op_range(rng: random.Random, case: Case) -> None:
    kinds = ("range", "irange") if rng.random() < 0.8 else ("float", "int")
    dotted, kind, _ = rng.choice(_field_keys(kinds))
    _set(case, dotted, _hostile_pair(rng), f" (hostile [lo, hi] for a {kind})")


def _hostile_param(rng: random.Random) -> Any:
    return rng.choice(EXTREME_NUMBERS + ["", "x", "keep", "random", True, False, [], {},
                                         [1, 2], {"a": 1}, 10**7, 2**63 - 1])


def op_special(rng: random.Random, case: Case) -> None:
    which = rng.randrange(14)
    scheds = _schedulers()
    if which == 0:
        dist = rng.choice(["pareto", "exponential", "deterministic", "uniform", "gamma", "",
                           "PARETO", 1, [], {}, NAN, None])
        params = {k: _hostile_param(rng) for k in rng.sample(
            ["scale", "shape", "mean", "value", "low", "high", "alpha", "distribution"],
            rng.randrange(0, 4))}
        work = {"distribution": dist, **params} if dist is not None else params
        _set(case, "workload.work", work, " (work distribution)")
        if rng.random() < 0.6:
            _set(case, "workload.kind", "single")
    elif which == 1:
        name = rng.choice(list(scheds) + ["", "nope", "FIFO", "fifo ", "laps+r[beta=nan]",
                                          "srpt[", "fair[multitasking=maybe]",
                                          "laps+r[beta=0.6,beta=0.7]", "pingan[epsilon=1e999]",
                                          "dolly[budget=-1]", "x" * 10_000, "a[b=[[[[1]]]]]",
                                          "fifo[]", "[]", "fifo[=1]"])
        _set(case, "scheduler.name", name, " (scheduler name or spec)")
    elif which in (2, 3):
        name = rng.choice(list(scheds))
        params = scheds[name] or ["x"]
        chosen = rng.sample(params, min(len(params), rng.randrange(1, 3)))
        values = {p: _hostile_param(rng) for p in chosen}
        if rng.random() < 0.2:
            values[rng.choice(WEIRD_KEYS)] = 1
        _set(case, "scheduler.name", name)
        _set(case, "scheduler.params", values, " (hostile scheduler parameters)")
    elif which == 4:
        name = rng.choice(list(scheds) + ["nope", ""])
        defaults = rng.choice([
            {name: {p: _hostile_param(rng) for p in (scheds.get(name) or ["x"])[:2]}},
            {name: 1}, {name: []}, {name: {"nope": 1}}, {"": {}}, {name: {"epsilon": NAN}},
        ])
        _set(case, "scheduler.defaults", defaults, " (scheduler defaults)")
        if rng.random() < 0.5:
            _set(case, "scheduler.name", name)
    elif which == 5:
        _set(case, "topology.tier_shares", rng.choice([
            [NAN, 0.2, 0.8], [1, 0, 0], [0, 0, 1], [0.5, 0.5], [1e300, -1e300, 1],
            ["a", "b", "c"], [], [0.05, 0.2, 0.75, 0], [INF, -INF, 1], [-0.5, 0.5, 1],
            [1 / 3, 1 / 3, 1 / 3], [5e-324, 0, 1], [True, False, False], [[1], 0, 0]]))
    elif which == 6:
        probs = rng.choice([[NAN] * 12, [1] + [0] * 11, [1 / 12] * 12, [0.5, 0.5],
                            [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -0.0], [-1, 2] + [0] * 10,
                            [INF] + [0] * 11, ["x"] * 12, [], [1e300] * 12])
        _set(case, "workload.priority_probs", probs)
        _set(case, "workload.kind", "google")
    elif which == 7:
        _set(case, "workload.input_tiers", rng.choice([
            ["large"], ["huge"], [1], [], ["small", "small"], [["small"]], ["Small"],
            [""], ["large", "medium", "small"]]))
    elif which == 8:
        name = rng.choice(["missing.json", "", ".", "sub", "scenario.toml", "/dev/null",
                           "/nonexistent/x.json", "x" * 300 + ".json", "wf.json\x00"])
        files = rng.choice([[name], [1], [[]], [name, name], []])
        if name == "sub":
            case.files["sub"] = None
        _set(case, "workload.kind", "wfformat")
        _set(case, "workload.files", files)
    elif which == 9:
        name = rng.choice(["", "missing.graphml", ".", "dir.graphml", "topo.txt",
                           "scenario.toml", "/dev/null", "topo.GRAPHML", "x" * 300 + ".brite",
                           "/etc/passwd", "nul\x00.graphml"])
        if name == "dir.graphml":
            case.files["dir.graphml"] = None
        _set(case, "topology.generator", "file")
        _set(case, "topology.file", name)
    elif which == 10:
        n = rng.choice([1, 2, 3, 5, 10**4, 2**63 - 1, 0, -1])
        m = rng.choice([1, 2, n - 1 if isinstance(n, int) else 1, n, 10**6, 0])
        _set(case, "topology.generator", "barabasi_albert")
        _set(case, "topology.n_clusters", n)
        _set(case, "topology.m", m)
    elif which == 11:
        kind = rng.choice(["montage", "single", "wfformat", "mapreduce", "google", "flows"])
        _set(case, "workload.kind", kind, " (workload kind switched)")
        if rng.random() < 0.5:
            _set(case, "topology.generator", rng.choice(["single", "barabasi_albert"]))
    elif which == 12:
        _set(case, "run.timing", "event")
        _set(case, "scheduler.name", rng.choice(list(scheds)))
    else:
        _set(case, "workload.kind", "google")
        lo = rng.choice([5e-324, 1e-300, 12.8, 1e300, 1.7976931348623157e308])
        hi = rng.choice([lo, lo * 2 if lo < 1e300 else INF, 1e308, 22919.3])
        _set(case, "workload.duration_min", lo)
        _set(case, "workload.duration_max", hi)
        _set(case, "workload.duration_mean", rng.choice([(lo + hi) / 2, 1179.7, hi]))


DOC_OPS: list[tuple[Callable[[random.Random, Case], None], float]] = [
    (op_unknown_key, 1), (op_unknown_section, 1), (op_delete, 1.5), (op_wrong_type, 3),
    (op_extreme, 3), (op_range, 1.5), (op_special, 2.5),
]


def op_stack(rng: random.Random, case: Case) -> None:
    fns, weights = zip(*DOC_OPS, strict=True)
    for fn in rng.choices(fns, weights, k=rng.randrange(2, 5)):
        fn(rng, case)


def op_override(rng: random.Random, case: Case) -> None:
    for _ in range(rng.randrange(1, 4)):
        which = rng.randrange(6)
        if which == 0:
            dotted, kind, _ = rng.choice(_field_keys())
            value = rng.choice(_wrong_types(kind) + EXTREME_NUMBERS)
            text = toml_value(value)
        elif which == 1:
            dotted, kind, _ = rng.choice(_field_keys())
            text = rng.choice(["", "=", "[", "]", "{a=", '"unterminated', "'", "1e999",
                               "0x7fffffffffffffff", "1_000", "nan", "-nan", "+inf",
                               "[nan, 1]", "{}", "[[1]]", "\x00", "ünï", "1 2", "true false",
                               "1979-05-27", "{ a = { b = 1 } }", "[" * 60 + "]" * 60])
        elif which == 2:
            dotted = rng.choice(["workload", "", ".", "a.b.c.d", "tiers.small", "tiers.x.slots",
                                 "scheduler.params.epsilon", " workload.n_jobs ",
                                 "workload.n_jobs.x", "WORKLOAD.N_JOBS", "tiers..slots",
                                 "run.name=1"])
            text = "1"
        elif which == 3:
            dotted, _, _ = rng.choice(_field_keys())
            depth = rng.choice([100, 1000, 5000, 50_000])
            text = "[" * depth + "1" + "]" * depth
        elif which == 4:
            dotted = "scheduler.params"
            text = rng.choice(["{epsilon = nan}", "{beta = 1e300}", "{x = 1}", "1", "[1]",
                               "{epsilon = " + "[" * 500 + "]" * 500 + "}"])
        else:
            dotted, kind, _ = rng.choice(_field_keys(("range", "irange")))
            text = toml_value(_hostile_pair(rng))
        arg = f"{dotted}={text}"
        case.overrides.append(arg)
        shown = arg if len(arg) <= 120 else f"{arg[:120]}... ({len(arg)} chars)"
        case.ops.append(f"--set {shown!r}")


def _utf8(text: str) -> bytes:
    return text.encode("utf-8")


def op_text(rng: random.Random, case: Case) -> None:
    which = rng.randrange(16)
    if which == 0:
        enc = rng.choice(["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
        case.encode = lambda t, enc=enc: t.encode(enc)
        case.ops.append(f"scenario encoded as {enc}")
    elif which == 1:
        _set(case, "run.name", "Zürich café ½")
        case.encode = lambda t: t.encode("latin-1")
        case.ops.append("scenario encoded as latin-1 (run.name has non-ASCII letters)")
    elif which == 2:
        _set(case, "run.name", "\u201csmart\u201d \u2013 quotes")
        case.encode = lambda t: t.encode("cp1252")
        case.ops.append("scenario encoded as cp1252 (smart quotes in run.name)")
    elif which == 3:
        case.encode = lambda t: b"\xef\xbb\xbf" + _utf8(t)
        case.ops.append("UTF-8 BOM before the scenario")
    elif which == 4:
        junk = rng.randbytes(rng.choice([1, 16, 512, 4096]))
        case.encode = lambda t, junk=junk: junk
        case.ops.append(f"scenario replaced by {len(junk)} random bytes "
                        f"(starting {junk[:8].hex()})")
    elif which == 5:
        junk = rng.randbytes(rng.choice([1, 16, 256]))
        case.encode = lambda t, junk=junk: _utf8(t) + junk
        case.ops.append(f"{len(junk)} random bytes appended (starting {junk[:8].hex()})")
    elif which == 6:
        seq = rng.choice([b"\xc0\xaf", b"\xed\xa0\x80", b"\xff\xfe", b"\x80", b"\xf8\x88\x80"])
        case.encode = lambda t, seq=seq: _utf8(t).replace(b"\n", b"\n# " + seq + b"\n", 1)
        case.ops.append(f"invalid UTF-8 {seq!r} in a comment line")
    elif which == 7:
        frac = rng.random()
        case.encode = lambda t, frac=frac: _utf8(t)[: int(len(_utf8(t)) * frac)]
        case.ops.append(f"scenario truncated at {frac:.3f} of its bytes")
    elif which == 8:
        flips = [(rng.random(), rng.randrange(256)) for _ in range(rng.randrange(1, 8))]

        def flip(t: str, flips=flips) -> bytes:
            data = bytearray(_utf8(t))
            for pos, byte in flips:
                data[int(pos * (len(data) - 1))] = byte
            return bytes(data)

        case.encode = flip
        case.ops.append(f"{len(flips)} bytes overwritten: "
                        + ", ".join(f"{p:.3f}->0x{b:02x}" for p, b in flips))
    elif which == 9:
        case.encode = lambda t: _utf8(t).replace(b"\n", b"\n\x00", 1)
        case.ops.append("NUL byte at the start of line 2")
    elif which == 10:
        case.encode = lambda t: _utf8(t).replace(b"\n", b"\r\n")
        case.ops.append("CRLF line endings")
    elif which == 11:
        case.encode = lambda t: _utf8(t).replace(b"\n", b"\r")
        case.ops.append("lone CR line endings")
    elif which == 12:
        case.raw = rng.choice(["", "\n", "   \n\t\n", "# only a comment\n", "\ufeff",
                               "[run]\n", "[workload]\n", "[tiers]\n", "[tiers.small]\n"])
        case.ops.append(f"scenario text replaced by {case.raw!r}")
    elif which == 13:
        _set(case, "run.name", "x" * rng.choice([10**5, 10**6, 5 * 10**6]))
    elif which == 14:
        n = rng.choice([10**4, 10**5])
        case.encode = lambda t, n=n: _utf8(t) + b"".join(
            f"# comment line {i}\n".encode() for i in range(n))
        case.ops.append(f"{n} comment lines appended")
    else:
        case.encode = lambda t: _utf8(t).replace(b"[", b"[ \t", 1).replace(b"=", b" \f= ", 1)
        case.ops.append("odd whitespace (form feed) around the first '='")


def _nest(kind: str, depth: int) -> str:
    if kind == "array":
        return "[" * depth + "1" + "]" * depth
    if kind == "table":
        return "{a = " * depth + "1" + " }" * depth
    return "[{a = " * depth + "1" + "}]" * depth


def op_deep(rng: random.Random, case: Case) -> None:
    depth = rng.choice([10, 100, 300, 500, 1000, 3000, 10_000, 100_000])
    which = rng.randrange(6)
    if which < 3:
        kind = ("array", "table", "mixed")[which]
        dotted = rng.choice([k for k, _, _ in _field_keys()] + ["run.bogus"])
        _set(case, dotted, Raw(_nest(kind, depth)), f" (a {kind} nested {depth} deep)")
    elif which == 3:
        _set(case, "scheduler.params", Raw("{x = " + _nest("array", depth) + "}"),
             f" (scheduler parameter nested {depth} deep)")
    elif which == 4:
        case.raw = dump_toml(case.doc) + "\n" + ".".join(["a"] * depth) + " = 1\n"
        case.ops.append(f"dotted key a.a.a... of {depth} parts appended")
    else:
        case.raw = dump_toml(case.doc) + "\n[" + ".".join(["a"] * depth) + "]\nb = 1\n"
        case.ops.append(f"table header [a.a.a...] of {depth} parts appended")


# --- files a scenario names ----------------------------------------------------------------


def _graphml_text(n: int, edges: list[tuple[int, int]], extra_keys: str = "",
                  node_data: Callable[[int], str] | None = None,
                  edge_data: Callable[[int, int], str] | None = None,
                  edgedefault: str = "undirected") -> str:
    node_data = node_data or (lambda i: f'<data key="d0">{i * 10.0}</data>'
                              f'<data key="d1">{(i * 7) % 100 * 1.0}</data>')
    edge_data = edge_data or (lambda u, v: "")
    body = "".join(f'<node id="{i}">{node_data(i)}</node>\n' for i in range(n))
    body += "".join(f'<edge source="{u}" target="{v}">{edge_data(u, v)}</edge>\n'
                    for u, v in edges)
    return ('<?xml version="1.0" encoding="utf-8"?>\n'
            '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n'
            '<key id="d0" for="node" attr.name="x" attr.type="double"/>\n'
            '<key id="d1" for="node" attr.name="y" attr.type="double"/>\n'
            '<key id="d2" for="edge" attr.name="length" attr.type="double"/>\n'
            '<key id="d3" for="edge" attr.name="bandwidth" attr.type="double"/>\n'
            f"{extra_keys}<graph edgedefault=\"{edgedefault}\">\n{body}</graph>\n</graphml>\n")


def _ring(n: int) -> list[tuple[int, int]]:
    return [(i, (i + 1) % n) for i in range(n)] if n > 1 else []


def _damage(rng: random.Random, name: str, data: bytes, overwrite: bool) -> tuple[str, bytes]:
    """``data`` cut at a random fraction, or with 1 to 5 random bytes overwritten."""
    if not overwrite:
        frac = rng.random()
        return f"{name} truncated at {frac:.3f}", data[: int(len(data) * frac)]
    out = bytearray(data)
    spots = [rng.randrange(len(out)) for _ in range(rng.randrange(1, 6))]
    for s in spots:
        out[s] = rng.randrange(256)
    return f"{name} with bytes overwritten at {spots}", bytes(out)


def _mutate_graphml(rng: random.Random) -> tuple[str, bytes]:
    base = GRAPHML.read_text(encoding="utf-8")
    which = rng.randrange(24)
    if which in (0, 1):
        return _damage(rng, "default-100.graphml", _utf8(base), overwrite=which == 1)
    if which == 2:
        value = rng.choice(["nan", "inf", "-inf", "1e400", "-1e400", "abc", "", "0x10", " ",
                            "1_000", "1e308", "NaN", "Infinity"])
        text = base.replace('<data key="d0">2143.2320123825766</data>',
                            f'<data key="d0">{value}</data>', 1)
        return f"default-100.graphml: x of node 0 = {value!r}", _utf8(text)
    if which == 3:
        big = "1" + "0" * rng.choice([20, 400, 400, 5000])
        text = _graphml_text(
            4, _ring(4), node_data=lambda i: f'<data key="d0">{big if i == 0 else i}</data>'
            f'<data key="d1">{i}</data>').replace(
            'attr.name="x" attr.type="double"', 'attr.name="x" attr.type="long"')
        return f"4-node ring, x declared long, node 0 x = 1e{len(big) - 1} as an integer", \
            _utf8(text)
    if which == 4:
        value = rng.choice(["-1", "nan", "1e400", "inf", "abc", "-0.0", "5e-324", "1e308"])
        text = _graphml_text(4, _ring(4), edge_data=lambda u, v: f'<data key="d2">{value}</data>')
        return f"4-node ring, every edge length = {value!r}", _utf8(text)
    if which == 5:
        value = rng.choice(["0", "-1", "nan", "1e400", "inf", "fast", "5e-324", "1e308"])
        text = _graphml_text(4, _ring(4), edge_data=lambda u, v: f'<data key="d3">{value}</data>')
        return f"4-node ring, every edge bandwidth = {value!r}", _utf8(text)
    if which == 6:
        return "default-100.graphml with every edge removed", \
            _utf8(re.sub(r"<edge .*?</edge>\s*", "", base, flags=re.S))
    if which == 7:
        return "GraphML with a graph and no nodes", _utf8(_graphml_text(0, []))
    if which == 8:
        return "GraphML with one node, no edges", _utf8(_graphml_text(1, []))
    if which == 9:
        return "GraphML whose edges name undeclared nodes 7 and 9", \
            _utf8(_graphml_text(3, [(0, 1), (1, 2), (7, 9)]))
    if which == 10:
        text = _graphml_text(3, _ring(3)).replace('<node id="2">', '<node id="0">')
        return "GraphML with a duplicate node id", _utf8(text)
    if which == 11:
        return "GraphML with edgedefault=\"directed\"", \
            _utf8(_graphml_text(4, [(0, 1), (1, 2), (2, 3)], edgedefault="directed"))
    if which == 12:
        text = _graphml_text(3, _ring(3)).replace(
            '<node id="1">', '<node id="1"><graph edgedefault="undirected">'
            '<node id="1::a"/></graph>', 1)
        return "GraphML with a nested subgraph inside node 1", _utf8(text)
    if which == 13:
        text = _graphml_text(3, _ring(3)).replace(
            "</graph>", '<hyperedge><endpoint node="0"/><endpoint node="1"/>'
            '<endpoint node="2"/></hyperedge></graph>')
        return "GraphML with a hyperedge", _utf8(text)
    if which == 14:
        depth = rng.choice([1000, 10_000, 100_000])
        text = _graphml_text(3, _ring(3)).replace(
            '<node id="0">', '<node id="0">' + "<x>" * depth + "</x>" * depth, 1)
        return f"GraphML with {depth} nested elements inside node 0", _utf8(text)
    if which == 15:
        depth = rng.choice([50, 200, 1000])
        inner = '<node id="leaf"/>'
        for i in range(depth):
            inner = f'<node id="n{i}"><graph edgedefault="undirected">{inner}</graph></node>'
        text = _graphml_text(2, [(0, 1)]).replace("</graph>\n</graphml>",
                                                   inner + "</graph>\n</graphml>")
        return f"GraphML with subgraphs nested {depth} deep", _utf8(text)
    if which == 16:
        ents = '<!ENTITY e0 "xxxxxxxxxx">' + "".join(
            f'<!ENTITY e{i} "{("&e" + str(i - 1) + ";") * 10}">' for i in range(1, 10))
        text = _graphml_text(2, [(0, 1)]).replace(
            '<?xml version="1.0" encoding="utf-8"?>\n',
            f'<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE graphml [{ents}]>\n').replace(
            '<node id="0">', '<node id="0"><data key="d0">&e9;</data>', 1)
        return "GraphML with an entity-expansion bomb (10^10 characters)", _utf8(text)
    if which == 17:
        text = _graphml_text(2, [(0, 1)]).replace(
            '<?xml version="1.0" encoding="utf-8"?>\n',
            '<?xml version="1.0" encoding="utf-8"?>\n'
            '<!DOCTYPE graphml [<!ENTITY ext SYSTEM "file:///etc/passwd">]>\n').replace(
            '<node id="0">', '<node id="0"><data key="d0">&ext;</data>', 1)
        return "GraphML with an external entity", _utf8(text)
    if which == 18:
        enc = rng.choice(["utf-16", "utf-32", "latin-1"])
        text = _graphml_text(3, _ring(3)).replace("utf-8", enc if enc != "latin-1" else "utf-8")
        text = text.replace("?>\n", "?>\n<!-- café -->\n", 1)
        return f"GraphML encoded as {enc} (declared {enc if enc != 'latin-1' else 'utf-8'})", \
            text.encode(enc)
    if which == 19:
        junk = rng.randbytes(rng.choice([0, 1, 64, 4096]))
        return f"GraphML replaced by {len(junk)} random bytes", junk
    if which == 20:
        return "XML whose root is not graphml", b'<?xml version="1.0"?><html><body/></html>'
    if which == 21:
        n = rng.choice([2000, 5000, 30_000])
        return f"GraphML ring of {n} nodes", _utf8(_graphml_text(n, _ring(n)))
    if which == 22:
        text = _graphml_text(3, _ring(3), extra_keys=(
            '<key id="d9" for="all" attr.name="x" attr.type="double">'
            "<default>nan</default></key>\n"))
        return "GraphML with a second x key for='all' whose default is nan", _utf8(text)
    text = _graphml_text(3, _ring(3)).replace('key="d0"', 'key="undeclared"', 1)
    return "GraphML whose data names an undeclared key", _utf8(text)


def _brite_text(n: int, edges: list[tuple[int, int]], node_line=None, edge_line=None,
                n_header: str | None = None, e_header: str | None = None) -> str:
    node_line = node_line or (lambda i: f"{i}\t{i * 10}\t{(i * 7) % 100}\t2\t2\t-1\tRT_NODE")
    edge_line = edge_line or (lambda k, u, v: f"{k}\t{u}\t{v}\t10.0\t0.03\t100.0\t-1\t-1\tE_RT\tU")
    lines = [f"Topology: ( {n} Nodes, {len(edges)} Edges )", "Model (2 - RTBarabasiAlbert):", "",
             n_header or f"Nodes: ( {n} )"]
    lines += [node_line(i) for i in range(n)]
    lines += ["", "", e_header or f"Edges: ( {len(edges)} )"]
    lines += [edge_line(k, u, v) for k, (u, v) in enumerate(edges)]
    return "\n".join(lines) + "\n"


def _mutate_brite(rng: random.Random) -> tuple[str, bytes]:
    base = BRITE.read_text(encoding="utf-8")
    which = rng.randrange(18)
    if which in (0, 1):
        return _damage(rng, "small.brite", _utf8(base), overwrite=which == 1)
    if which == 2:
        value = rng.choice(["nan", "inf", "1e999", "-1e999", "abc", "1e308", "0x10", "1_0"])
        text = _brite_text(4, _ring(4), node_line=lambda i: f"{i}\t{value if i == 1 else i}\t0"
                           "\t2\t2\t-1\tRT_NODE")
        return f"4-node BRITE ring, node 1 x = {value!r}", _utf8(text)
    if which == 3:
        ident = rng.choice(["1" + "0" * 30, "-5", "1" + "0" * 5000, "0x1", "1.5"])
        text = _brite_text(2, [], node_line=lambda i: f"{ident if i else 0}\t1\t1\t1\t1\t-1"
                           "\tRT_NODE") + f"Edges: ( 1 )\n0\t0\t{ident}\t1.0\t0.1\t5.0\n"
        text = text.replace("Edges: ( 0 )\n", "")
        return f"BRITE with node id {ident[:40]!r} ({len(ident)} chars)", _utf8(text)
    if which == 4:
        return "BRITE with a duplicate node id", _utf8(_brite_text(
            3, [(0, 1)], node_line=lambda i: f"{min(i, 1)}\t1\t1\t1\t1\t-1\tRT_NODE"))
    if which == 5:
        count = rng.choice(["99999999999999999999999", "0", "-1", "3", "1" + "0" * 4000])
        return f"BRITE Nodes header declaring {count[:30]} nodes", \
            _utf8(_brite_text(4, _ring(4), n_header=f"Nodes: ( {count} )"))
    if which == 6:
        return "BRITE edge line with only two fields", _utf8(_brite_text(
            3, _ring(3), edge_line=lambda k, u, v: f"{k}\t{u}"))
    if which in (7, 8):
        value = rng.choice(["nan", "inf", "1e999", "-5", "abc", "-1e999", "1e308", "5e-324"])
        col = "length" if which == 7 else "bandwidth"
        line = (lambda k, u, v: f"{k}\t{u}\t{v}\t{value}\t0.1\t5.0") if which == 7 else \
            (lambda k, u, v: f"{k}\t{u}\t{v}\t1.0\t0.1\t{value}")
        return f"4-node BRITE ring, every edge {col} = {value!r}", \
            _utf8(_brite_text(4, _ring(4), edge_line=line))
    if which == 9:
        return "BRITE edge to unknown node 42", _utf8(_brite_text(3, [(0, 1), (1, 42)]))
    if which == 10:
        return "BRITE without the Nodes: header", _utf8(base.replace("Nodes: ( 8 )", ""))
    if which == 11:
        return "BRITE with the Edges section removed", \
            _utf8(base.split("Edges:")[0])
    if which == 12:
        return "BRITE with headers only", b"Topology: ( 0 Nodes, 0 Edges )\nNodes: ( 0 )\n" \
            b"Edges: ( 0 )\n"
    if which == 13:
        enc = rng.choice(["utf-16", "latin-1"])
        return f"small.brite encoded as {enc} (with an accented comment)", \
            ("Model (é):\n" + base).encode(enc)
    if which == 14:
        junk = rng.randbytes(rng.choice([0, 1, 64, 4096]))
        return f"BRITE replaced by {len(junk)} random bytes", junk
    if which == 15:
        n = rng.choice([1_000_000, 10_000])
        return f"BRITE node line with {n} fields", _utf8(base.replace(
            "RT_NODE", "RT_NODE" + " 1" * n, 1))
    if which == 16:
        n = rng.choice([2000, 5000, 30_000])
        return f"BRITE ring of {n} nodes", _utf8(_brite_text(n, _ring(n)))
    return "BRITE with self-loops only", _utf8(_brite_text(3, [(0, 0), (1, 1), (2, 2)]))


def op_topology(rng: random.Random, case: Case) -> None:
    if rng.random() < 0.55:
        desc, data = _mutate_graphml(rng)
        name = rng.choice(["topo.graphml"] * 5 + ["topo.GraphML"])
    else:
        desc, data = _mutate_brite(rng)
        name = "topo.brite"
    case.files[name] = data
    _set(case, "topology.generator", "file")
    _set(case, "topology.file", name)
    case.ops.append(f"{name}: {desc}")


def _json_path_set(doc: Any, path: list[Any], value: Any, delete: bool = False) -> bool:
    node = doc
    for part in path[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return False
    try:
        if delete:
            del node[path[-1]]
        else:
            node[path[-1]] = value
    except (KeyError, IndexError, TypeError):
        return False
    return True


WF_PATHS: list[list[Any]] = [
    ["workflow"], ["workflow", "specification"], ["workflow", "specification", "tasks"],
    ["workflow", "specification", "files"], ["workflow", "execution"],
    ["workflow", "specification", "tasks", 0, "id"],
    ["workflow", "specification", "tasks", 0, "name"],
    ["workflow", "specification", "tasks", 0, "parents"],
    ["workflow", "specification", "tasks", 4, "children"],
    ["workflow", "specification", "tasks", 0, "inputFiles"],
    ["workflow", "specification", "tasks", 0, "outputFiles"],
    ["workflow", "specification", "files", 0, "sizeInBytes"],
    ["workflow", "specification", "files", 0, "id"],
    ["workflow", "execution", "tasks", 0, "runtimeInSeconds"],
    ["workflow", "execution", "tasks", 0, "id"],
    ["workflow", "execution", "tasks"],
]
WF_VALUES: list[Any] = [NAN, INF, -INF, -1, 0, 1e308, None, "12", "", [], {}, [None],
                        ["ID0000001"], "ID0000001", [{"a": 1}], True, 2**63 - 1, 5e-324,
                        [[["x"]]], {"id": 1}]


def _mutate_wfformat(rng: random.Random) -> tuple[str, bytes]:
    doc = json.loads(WFJSON.read_text(encoding="utf-8"))
    which = rng.randrange(16)

    def dump(d: Any) -> bytes:
        return json.dumps(d, indent=1).encode("utf-8")

    if which in (0, 1):
        path = rng.choice(WF_PATHS)
        _json_path_set(doc, path, None, delete=True)
        return f"montage-wfformat.json without {'.'.join(map(str, path))}", dump(doc)
    if which in (2, 3, 4):
        path = rng.choice(WF_PATHS)
        value = rng.choice(WF_VALUES)
        _json_path_set(doc, path, value)
        return f"montage-wfformat.json with {'.'.join(map(str, path))} = " \
            f"{json.dumps(value)[:60]}", dump(doc)
    if which == 5:
        digits = rng.choice([20, 400, 5000])
        path = rng.choice([["workflow", "specification", "files", 0, "sizeInBytes"],
                           ["workflow", "execution", "tasks", 0, "runtimeInSeconds"]])
        _json_path_set(doc, path, 12345)
        text = dump(doc).replace(b"12345", b"1" + b"0" * digits, 1)
        return f"montage-wfformat.json with {'.'.join(map(str, path))} = 1e{digits} written " \
            "as an integer", text
    if which == 6:
        path = ["workflow", "execution", "tasks", 0, "runtimeInSeconds"]
        _json_path_set(doc, path, 12345)
        lit = rng.choice([b"1e999", b"-1e999", b"NaN", b"Infinity", b"-Infinity"])
        return f"montage-wfformat.json with a runtime of {lit.decode()}", \
            dump(doc).replace(b"12345", lit, 1)
    if which == 7:
        depth = rng.choice([1000, 10_000, 100_000])
        return f"JSON array nested {depth} deep", b"[" * depth + b"]" * depth
    if which == 8:
        depth = rng.choice([1000, 5000, 100_000])
        _json_path_set(doc, ["workflow", "specification", "tasks", 0, "parents"], "@@")
        text = dump(doc).replace(b'"@@"', b"[" * depth + b"]" * depth, 1)
        return f"montage-wfformat.json with task 0's parents nested {depth} deep", text
    if which == 9:
        tasks = doc["workflow"]["specification"]["tasks"]
        tasks[0]["parents"] = [tasks[-1]["id"]]
        tasks[-1]["children"] = [tasks[0]["id"]]
        return "montage-wfformat.json with a dependency cycle (last task -> first)", dump(doc)
    if which == 10:
        return _damage(rng, "montage-wfformat.json", dump(doc), overwrite=False)
    if which == 11:
        enc = rng.choice(["utf-16", "latin-1", "utf-8-sig"])
        doc["description"] = "é " + doc.get("description", "")
        return f"montage-wfformat.json encoded as {enc}", \
            json.dumps(doc, ensure_ascii=False).encode(enc)
    if which == 12:
        junk = rng.choice([b"", b"null", b"[]", b"\"x\"", b"1", b"{}", b'{"workflow": 1}',
                           rng.randbytes(256)])
        return f"WfFormat file holding {junk[:20]!r}", junk
    if which == 13:
        n = rng.choice([20_000, 100_000])
        tasks = [{"id": f"t{i}", "name": f"t{i}", "parents": [f"t{i - 1}"] if i else [],
                  "runtimeInSeconds": 1.0} for i in range(n)]
        return f"WfFormat chain of {n} tasks", dump(
            {"workflow": {"specification": {"tasks": tasks, "files": []}}})
    if which == 14:
        old = {"name": "old", "schemaVersion": "1.3", "workflow": {"jobs": [
            {"name": "a", "runtime": rng.choice([1.0, NAN, -1, "x", None]),
             "files": [{"name": "f", "size": rng.choice([10, -1, NAN, "big", 10**30]),
                        "link": rng.choice(["input", "output", "both", None, 3])}],
             "parents": rng.choice([[], ["a"], ["zz"], "a", None])},
            {"name": "b", "runtime": 2.0, "files": [], "parents": ["a"]}]}}
        return f"old-layout WfFormat {json.dumps(old['workflow'])[:160]}", dump(old)
    doc["workflow"]["specification"]["tasks"] = doc["workflow"]["specification"]["tasks"] * 2
    return "montage-wfformat.json with every task listed twice (duplicate ids)", dump(doc)


def op_wfformat(rng: random.Random, case: Case) -> None:
    desc, data = _mutate_wfformat(rng)
    case.files["wf.json"] = data
    _set(case, "workload.kind", "wfformat")
    _set(case, "workload.files", ["wf.json"])
    case.ops.append(f"wf.json: {desc}")


FAMILIES: list[tuple[str, Callable[[random.Random, Case], None], float]] = [
    ("unknown key", op_unknown_key, 4), ("unknown section", op_unknown_section, 3),
    ("delete", op_delete, 5), ("wrong type", op_wrong_type, 16), ("extreme", op_extreme, 16),
    ("range", op_range, 8), ("special", op_special, 12), ("stack", op_stack, 8),
    ("--set", op_override, 6), ("text", op_text, 9), ("deep", op_deep, 4),
    ("topology", op_topology, 8), ("wfformat", op_wfformat, 6),
]


def _load_bases() -> dict[str, dict[str, Any]]:
    bases = {}
    for path in sorted(SCENARIO_DIR.glob("*.toml")):
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        topo = doc.get("topology", {})
        if topo.get("file") and not Path(topo["file"]).is_absolute():
            topo["file"] = str((path.parent / topo["file"]).resolve())
        bases[path.name] = doc
    return bases


def _shrink(doc: dict[str, Any]) -> None:
    """Make a base scenario run in seconds (the sample of cases that also run)."""
    wl = doc.setdefault("workload", {})
    wl["n_jobs"] = min(wl.get("n_jobs", 2000), 6)
    wl["large_max_tasks"] = 600
    if wl.get("kind") == "flows":
        wl["flow_count"], wl["flow_jobs"] = [2, 3], [2, 3]
    topo = doc.setdefault("topology", {})
    if topo.get("generator", "barabasi_albert") == "barabasi_albert":
        topo["n_clusters"] = min(topo.get("n_clusters", 100), 12)


def make_case(seed: int, index: int, run: bool, bases: dict[str, dict[str, Any]]) -> Case:
    """Build case ``index`` of a campaign; the same arguments give the same case."""
    rng = random.Random(f"geosim-fuzz:{seed}:{index}")
    base = rng.choice(sorted(bases))
    case = Case(id=f"{'r' if run else 'v'}{index}", base=base, doc=copy.deepcopy(bases[base]))
    if run:
        _shrink(case.doc)
    names, fns, weights = zip(*FAMILIES, strict=True)
    pick = rng.choices(range(len(FAMILIES)), weights)[0]
    case.family = names[pick]
    fns[pick](rng, case)
    if run and rng.random() < 0.15:
        case.scheduler = rng.choice(["srpt", "fifo", "laps+r[beta=nan]", "pingan[epsilon=2]",
                                     "mantri[interval=5e-324]", "nope", "fair[x=1]", ""])
        case.ops.append(f"--scheduler {case.scheduler!r}")
    return case


# --- running and classifying ---------------------------------------------------------------


@dataclass
class Outcome:
    """What one case did."""

    outcome: str
    problem: str
    status: int | None
    signal: int | None
    seconds: float
    maxrss_mb: float
    stdout: str
    stderr: str

    @property
    def first_line(self) -> str:
        return (self.stderr.splitlines() or [""])[0]

    def signature(self) -> str:
        """Outcome, exception and innermost geosim frame: one line per distinct escape."""
        if self.outcome not in ("traceback", "memory error"):
            return f"{self.outcome}: {re.sub(r'/tmp/[^ :]*', 'FILE', self.problem)[:90]}"
        frames = re.findall(r'File "([^"]*)", line (\d+), in (\S+)', self.stderr)
        ours = [f for f in frames if "/geosim/" in f[0] and "site-packages" not in f[0]]
        where = "?" if not ours else \
            f"{ours[-1][0].split('/geosim/')[-1]}:{ours[-1][1]} ({ours[-1][2]})"
        exc = self.problem.split(":")[0]
        return f"{self.outcome}: {exc} in geosim/{where}"


def _files_under(directory: Path) -> set[str]:
    return {str(p.relative_to(directory)) for p in directory.rglob("*")}


def classify(command: str, status: int | None, sig: int | None, timed_out: bool,
             stdout: str, stderr: str, new_files: set[str]) -> tuple[str, str]:
    """Return the outcome and the first line that shows the problem."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    if timed_out:
        return "hang", "killed at the time limit"
    if sig is not None:
        return "crash", f"killed by {signal.Signals(sig).name}" + (f"; stderr: {last}"
                                                                     if last else "")
    if (status == 2 and not new_files and not stdout.strip() and "\n" not in stderr.rstrip("\n")
            and stderr.startswith("geosim: error:")):
        return CLEAN, stderr.strip()
    memory = ("MemoryError", "Unable to allocate", "bad_alloc", "Cannot allocate memory",
              "out of memory")
    if status != 0 and any(m in stderr for m in memory):
        return "memory error", next((ln for ln in lines if any(m in ln for m in memory)), last)
    if "Traceback (most recent call last)" in stderr:
        return "traceback", last
    if status == 0:
        return OK, ""
    if status != 2:
        return "other exit", f"status {status}: {last or '(no stderr)'}"
    if new_files:
        return "wrote output on failure", f"wrote {sorted(new_files)[:3]}; stderr: {last}"
    if len(stderr.splitlines()) != 1:
        return "multi-line stderr", f"{len(stderr.splitlines())} lines: " + \
            " | ".join(lines[:3])[:300]
    if not stderr.startswith("geosim: error:"):
        return "bad error line", stderr.strip()
    return "stdout on failure", stdout.strip().splitlines()[0]


def _child(argv: list[str], directory: Path, io_dir: Path, mem: int) -> None:
    """In a forked child: run ``geosim.cli.main(argv)`` like the console script, then exit."""
    status = 70
    try:
        os.setpgid(0, 0)
        os.chdir(directory)
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, name in ((1, "stdout"), (2, "stderr")):
            target = os.open(io_dir / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(target, fd)
        from geosim.cli import main
        try:
            code = main(argv)
            status = 0 if code is None else int(code)
        except SystemExit as exc:
            if exc.code is None:
                status = 0
            elif isinstance(exc.code, int):
                status = exc.code
            else:
                print(exc.code, file=sys.stderr)
                status = 1
        except BaseException:  # what the interpreter does with an uncaught exception
            traceback.print_exc()
            status = 1
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(status & 0xFF)


def _geosim_command() -> list[str]:
    script = ROOT / ".venv" / "bin" / "geosim"
    if script.exists():
        return [str(script)]
    found = shutil.which("geosim")
    return [found] if found else [sys.executable, "-m", "geosim.cli"]


@dataclass
class _Job:
    case: Case
    directory: Path
    io_dir: Path
    timeout: float
    before: set[str]
    start: float = 0.0
    timed_out: bool = False
    proc: subprocess.Popen | None = None


def run_cases(cases: list[Case], workdir: Path, *, jobs: int, mem: int,
              validate_timeout: float, run_timeout: float, isolation: str,
              progress: Callable[[Case, Outcome], None]) -> dict[str, Outcome]:
    """Run every case (at most ``jobs`` at once); return case id to outcome."""
    pending = list(reversed(cases))
    running: dict[int, _Job] = {}
    results: dict[str, Outcome] = {}
    command = _geosim_command()

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))

    while pending or running:
        while pending and len(running) < jobs:
            case = pending.pop()
            directory = workdir / case.id
            io_dir = workdir / f"{case.id}.io"
            shutil.rmtree(directory, ignore_errors=True)
            shutil.rmtree(io_dir, ignore_errors=True)
            case.write(directory)
            io_dir.mkdir(parents=True)
            job = _Job(case, directory, io_dir,
                       run_timeout if case.command == "run" else validate_timeout,
                       _files_under(directory))
            argv = case.argv(directory)
            sys.stdout.flush()
            sys.stderr.flush()
            job.start = time.monotonic()
            if isolation == "fork":
                pid = os.fork()
                if pid == 0:
                    _child(argv, directory, io_dir, mem)
            else:
                with open(io_dir / "stdout", "wb") as out, open(io_dir / "stderr", "wb") as err:
                    job.proc = subprocess.Popen(
                        [*command, *argv], cwd=directory, stdin=subprocess.DEVNULL,
                        stdout=out, stderr=err, start_new_session=True,
                        preexec_fn=limit_memory)
                pid = job.proc.pid
            running[pid] = job
        pid, wait_status, usage = os.wait4(-1, os.WNOHANG)
        if pid == 0:
            now = time.monotonic()
            for child, job in running.items():
                if not job.timed_out and now - job.start > job.timeout:
                    job.timed_out = True
                    try:
                        os.killpg(child, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            time.sleep(0.01)
            continue
        job = running.pop(pid, None)
        if job is None:
            continue
        if job.proc is not None:  # reaped here, so Popen must not wait for it again
            job.proc.returncode = wait_status
        try:  # anything the case left running in its process group
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        seconds = time.monotonic() - job.start
        status = os.WEXITSTATUS(wait_status) if os.WIFEXITED(wait_status) else None
        sig = os.WTERMSIG(wait_status) if os.WIFSIGNALED(wait_status) else None
        stdout = (job.io_dir / "stdout").read_text(encoding="utf-8", errors="replace")
        stderr = (job.io_dir / "stderr").read_text(encoding="utf-8", errors="replace")
        new = _files_under(job.directory) - job.before
        if job.case.command == "run" and status == 0:
            new = set()
        outcome, problem = classify(job.case.command, status, sig, job.timed_out, stdout,
                                    stderr, new)
        if len(stderr) > 8000:
            stderr = stderr[:2000] + "\n[...]\n" + stderr[-6000:]
        result = Outcome(outcome, problem, status, sig, round(seconds, 3),
                         round(usage.ru_maxrss / 1024, 1), stdout[-2000:], stderr)
        results[job.case.id] = result
        progress(job.case, result)
    return results


# --- the campaign ----------------------------------------------------------------------------


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1, help="campaign seed (default 1)")
    parser.add_argument("--cases", type=int, default=1100, help="validate cases (default 1100)")
    parser.add_argument("--run-sample", type=int, default=100,
                        help="cases also pushed through geosim run (default 100)")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="time limit of a run case, s (default 60)")
    parser.add_argument("--validate-timeout", type=float, default=30.0,
                        help="time limit of a validate case, s (default 30)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="cases at once (default 2)")
    parser.add_argument("--mem-gib", type=float, default=4.0,
                        help="address-space limit per case, GiB (default 4)")
    parser.add_argument("--isolation", choices=("fork", "subprocess"), default="fork",
                        help="fork server (default) or a fresh geosim process per case")
    parser.add_argument("--no-confirm", action="store_true",
                        help="do not re-run escapes as fresh geosim processes")
    parser.add_argument("--report", metavar="FILE", help="write a JSON report")
    parser.add_argument("--keep", metavar="DIR", help="keep the escapes' case directories "
                        "(every case's with --only) in DIR")
    parser.add_argument("--only", nargs="+", metavar="ID", help="run only these cases, "
                        "e.g. v17 r17")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the campaign; return 0 (escapes are reported, not an error of this script)."""
    args = _parse_args(argv)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMBA_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    started = time.time()
    import geosim.cli  # noqa: F401  (the fork server's one import of geosim)
    import geosim.model  # noqa: F401
    import geosim.results  # noqa: F401
    from geosim.cli import _parser
    _parser()  # loads the plugin commands once, as every child would
    bases = _load_bases()
    sample = random.Random(f"geosim-fuzz-sample:{args.seed}").sample(
        range(args.cases), min(args.run_sample, args.cases))
    cases = [make_case(args.seed, i, False, bases) for i in range(args.cases)]
    cases += [make_case(args.seed, i, True, bases) for i in sorted(sample)]
    if args.only:
        wanted = set(args.only)
        cases = [make_case(args.seed, int(i[1:]), i.startswith("r"), bases)
                 for i in args.only if i[:1] in "vr" and i[1:].isdigit()]
        if not cases or len(cases) != len(wanted):
            print("--only takes ids like v17 or r17", file=sys.stderr)
            return 2
    mem = int(args.mem_gib * 2**30)
    workdir = Path(tempfile.mkdtemp(prefix="geosim-fuzz-"))
    done = Counter()

    def progress(case: Case, result: Outcome) -> None:
        done[result.outcome] += 1
        total = sum(done.values())
        if result.outcome not in (OK, CLEAN) or total % 100 == 0 or total == len(cases):
            tag = "" if result.outcome in (OK, CLEAN) else f"  {case.id}: {result.outcome}"
            print(f"[{total}/{len(cases)} {time.time() - started:6.0f}s]{tag}",
                  file=sys.stderr, flush=True)

    print(f"geosim fuzz campaign: seed {args.seed}, {sum(c.command == 'validate' for c in cases)}"
          f" validate + {sum(c.command == 'run' for c in cases)} run cases, -j {args.jobs}, "
          f"{args.isolation} isolation, cases in {workdir}", file=sys.stderr, flush=True)
    results = run_cases(cases, workdir, jobs=args.jobs, mem=mem,
                        validate_timeout=args.validate_timeout, run_timeout=args.timeout,
                        isolation=args.isolation, progress=progress)
    escapes = [c for c in cases if results[c.id].outcome not in (OK, CLEAN)]
    confirmed: dict[str, Outcome] = {}
    if escapes and args.isolation == "fork" and not args.no_confirm:
        print(f"re-running {len(escapes)} escapes as fresh geosim processes",
              file=sys.stderr, flush=True)
        again = run_cases(escapes, workdir / "confirm", jobs=args.jobs, mem=mem,
                          validate_timeout=args.validate_timeout, run_timeout=args.timeout,
                          isolation="subprocess", progress=lambda c, r: None)
        confirmed.update(again)
    elapsed = time.time() - started

    # the table
    commands = ("validate", "run")
    table: dict[str, Counter] = {cmd: Counter() for cmd in commands}
    for case in cases:
        table[case.command][results[case.id].outcome] += 1
    print()
    print(f"{'outcome':<26}{'validate':>10}{'run':>8}{'total':>8}")
    for outcome in (OK, CLEAN, *ESCAPES):
        row = [table[cmd][outcome] for cmd in commands]
        if outcome in (OK, CLEAN) or sum(row):
            print(f"{outcome:<26}{row[0]:>10}{row[1]:>8}{sum(row):>8}")
    print(f"{'cases':<26}{sum(table['validate'].values()):>10}{sum(table['run'].values()):>8}"
          f"{len(cases):>8}")
    noisy = [c for c in cases if results[c.id].outcome == OK and results[c.id].stderr.strip()]
    if noisy:
        print(f"(of the ok cases, {len(noisy)} printed on stderr, e.g. {noisy[0].id}: "
              f"{results[noisy[0].id].first_line[:120]})")
    by_family: dict[str, Counter] = {}
    for case in cases:
        by_family.setdefault(case.family, Counter())[results[case.id].outcome in (OK, CLEAN)] += 1
    print("\nescapes by mutation family: " + ", ".join(
        f"{fam} {cnt[False]}/{sum(cnt.values())}" for fam, cnt in sorted(by_family.items())))

    if escapes:
        print("\nescapes:")
    keep = Path(args.keep) if args.keep else None
    report_escapes = []
    for case in escapes:
        res = results[case.id]
        again = confirmed.get(case.id)
        note = "" if again is None else \
            f" [fresh process: {again.outcome}{'' if again.outcome == res.outcome else ' !'}]"
        print(f"  {case.id:<6} {res.outcome:<20} base {case.base}, family {case.family}{note}")
        for op in case.ops:
            print(f"         - {op}")
        print(f"         => {res.problem[:300]}")
        entry = {"id": case.id, "command": case.command, "base": case.base,
                 "family": case.family, "mutations": case.ops, "overrides": case.overrides,
                 "scheduler": case.scheduler, "outcome": res.outcome, "problem": res.problem,
                 "status": res.status, "signal": res.signal, "seconds": res.seconds,
                 "maxrss_mb": res.maxrss_mb, "signature": res.signature(),
                 "stderr_tail": res.stderr[-1500:],
                 "reproduce": f".venv/bin/python benchmarks/fuzz_scenarios.py --seed "
                              f"{args.seed} --only {case.id} --keep DIR, then geosim "
                              + " ".join(case.argv(Path("DIR") / case.id))}
        if again is not None:
            entry["fresh_process"] = {"outcome": again.outcome, "problem": again.problem}
        report_escapes.append(entry)
    signatures = Counter(results[c.id].signature() for c in escapes)
    if signatures:
        print("\ndistinct escapes (outcome, exception, innermost geosim frame):")
        for sig_text, count in signatures.most_common():
            ids = [c.id for c in escapes if results[c.id].signature() == sig_text]
            print(f"  {count:>3}  {sig_text}  [{', '.join(ids[:6])}{' ...' if count > 6 else ''}]")
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        for case in (cases if args.only else escapes):
            dest = keep / case.id
            shutil.rmtree(dest, ignore_errors=True)
            case.write(dest)
            (dest / "mutations.txt").write_text(
                f"base {case.base}\n" + "\n".join(case.ops) + "\n\ngeosim "
                + " ".join(case.argv(dest)) + "\n", encoding="utf-8")
    if args.report:
        report = {
            "seed": args.seed, "cases": len(cases), "validate_cases": len(
                [c for c in cases if c.command == "validate"]),
            "run_cases": len([c for c in cases if c.command == "run"]),
            "isolation": args.isolation, "jobs": args.jobs, "mem_gib": args.mem_gib,
            "validate_timeout": args.validate_timeout, "run_timeout": args.timeout,
            "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)),
            "seconds": round(elapsed, 1),
            "counts": {cmd: dict(table[cmd]) for cmd in commands},
            "escapes": report_escapes,
            "signatures": dict(signatures),
            "ok_with_stderr": [c.id for c in noisy],
            "cases_detail": [{"id": c.id, "base": c.base, "family": c.family,
                              "mutations": c.ops, "outcome": results[c.id].outcome,
                              "status": results[c.id].status,
                              "seconds": results[c.id].seconds,
                              "first_stderr_line": results[c.id].first_line[:300]}
                             for c in cases],
        }
        Path(args.report).write_text(json.dumps(report, indent=1, default=str) + "\n",
                                     encoding="utf-8")
    shutil.rmtree(workdir, ignore_errors=True)
    print(f"\nwall time {elapsed:.0f} s")
    print(f"escapes: {len(escapes)} of {len(cases)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
