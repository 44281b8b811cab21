"""Hostile scenarios, generated: bad input ends in one ``geosim: error:`` line, status 2.

README ("bad input") promises that a malformed or out-of-range scenario, a bad ``--set``,
or a malformed topology or workflow file it names prints exactly one line
``geosim: error: ...`` on stderr and exits with status 2, without a traceback and without
writing anything. These properties mutate small scenarios (unknown and deleted keys,
wrong types, extreme numbers and ranges, other encodings, junk bytes, deep nesting,
hostile ``--set`` values, malformed GraphML, BRITE and WfFormat files) and call
``geosim.cli.main`` in-process: it must return 0 or give that one clean line.

Every example is cheap by construction: the scenarios hold at most a few jobs on a few
small clusters, and the values a mutation may set are capped where a valid value sizes
the world or the workload (``CAPS``, ``FLOORS``). A run example only sets values the
schema must refuse. A watchdog turns a runaway example into a failure instead of a hang.

Inputs that once escaped the promise are kept in ``FORMER_ESCAPES``, one per class, and
checked by ``test_former_escapes_give_one_clean_line``.
``benchmarks/fuzz_scenarios.py`` runs the same kinds of mutation at scale, each in its
own process, including huge worlds and inputs that take long.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import io
import json
import math
import re
import signal
import tempfile
import tomllib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from geosim.cli import main
from geosim.scenario import SCHEMA
from geosim.tomlio import dump_toml, toml_value

ROOT = Path(__file__).resolve().parents[1]
BRITE = ROOT / "topologies" / "small.brite"
WFJSON = ROOT / "tests" / "data" / "montage-wfformat.json"

NAN, INF = float("nan"), float("inf")
WATCHDOG_SECONDS = 120

# --- small scenarios -----------------------------------------------------------------------

SMALL: dict[str, Any] = {
    "workload.n_jobs": 5, "workload.large_max_tasks": 600, "workload.max_tasks": 60,
    "workload.flow_count": [2, 3], "workload.flow_jobs": [2, 3], "run.horizon": 3000.0,
    "tiers.large.slots": [2, 8], "tiers.medium.slots": [2, 8], "tiers.small.slots": [2, 8],
}

#: Largest valid value a mutation may set, for keys that size the world or the workload.
CAPS: dict[str, float] = {
    "workload.n_jobs": 5, "topology.n_clusters": 12, "topology.m": 12, "tiers.*.slots": 16,
    "workload.large_max_tasks": 600, "workload.max_tasks": 60, "workload.mean_tasks": 60,
    "workload.map_tasks": 20, "workload.reduce_tasks": 10, "workload.flow_count": 3,
    "workload.flow_jobs": 3, "workload.flow_sla_steps": 5, "workload.flow_sla_heights": 5,
    "workload.flow_narrow_cap": 16, "workload.flow_time_unit": 600.0,
    "workload.flow_short_duration": 20.0, "workload.flow_tall_duration": 20.0,
    "workload.flow_big_factor": 10.0,
}
#: Smallest positive value a mutation may set, where smaller means more tasks.
FLOORS: dict[str, float] = {"workload.flow_brick": 1.0}
#: Keys never deleted: their defaults are the paper-sized world (2000 jobs, 100 clusters).
KEEP = {"workload", "topology", "tiers", *CAPS, "run.horizon"}


def _set(doc: dict[str, Any], dotted: str, value: Any) -> None:
    section, _, key = dotted.rpartition(".")
    node = doc
    for part in section.split("."):
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[key] = value


def _base(name: str, **changes: Any) -> dict[str, Any]:
    doc = tomllib.loads((ROOT / "scenarios" / f"{name}.toml").read_text(encoding="utf-8"))
    for dotted, value in {**SMALL, **changes}.items():
        _set(doc, dotted, value)
    if doc["topology"].get("generator", "barabasi_albert") == "barabasi_albert":
        doc["topology"]["n_clusters"] = 8
    return doc


BASES: dict[str, dict[str, Any]] = {
    "quickstart": _base("quickstart"),
    "quickstart-brite": _base("quickstart", **{"topology.generator": "file",
                                               "topology.file": str(BRITE)}),
    "redundancy-gamma": _base("redundancy-gamma"),
    "flowflex": _base("flowflex"),
    "cloning-google": _base("cloning-google"),
}
RUN_BASES = ("redundancy-gamma", "cloning-google")  # one small cluster: a run takes < 1 s

# --- a hostile case -------------------------------------------------------------------------


@dataclass
class Case:
    """A mutated scenario: its document, or bytes replacing its text, and its files."""

    base: str
    doc: dict[str, Any]
    ops: list[str] = field(default_factory=list)
    text: bytes | None = None
    raw: dict[str, str] = field(default_factory=dict)  # placeholder -> TOML written verbatim
    files: dict[str, bytes] = field(default_factory=dict)
    overrides: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"Case(base={self.base!r}, ops={self.ops!r})"

    def write(self, directory: Path) -> Path:
        for name, content in self.files.items():
            (directory / name).write_bytes(content)
        path = directory / "scenario.toml"
        if self.text is not None:
            path.write_bytes(self.text)
            return path
        text = dump_toml(self.doc)
        for placeholder, verbatim in self.raw.items():
            text = text.replace(json.dumps(placeholder), verbatim)
        path.write_text(text, encoding="utf-8")
        return path


def pick(draw, options: list[Any]) -> Any:
    """One of ``options``, spread evenly (a plain sampled_from favours the first ones)."""
    return options[draw(st.integers(0, 2**32 - 1)) * 2654435761 % 2**32 % len(options)]


def _field_names(kinds: tuple[str, ...] | None = None) -> list[str]:
    return sorted(f"{sec}.{key}" for sec, fields in SCHEMA.items()
                  for key, fld in fields.items() if kinds is None or fld.kind in kinds)


def _field(dotted: str):
    section, _, key = dotted.rpartition(".")
    return SCHEMA[section][key]


def _limit(dotted: str, value: Any) -> Any:
    """Pull a valid-looking number inside the caps of ``dotted`` (others pass unchanged)."""
    if isinstance(value, list):
        return [_limit(dotted, v) for v in value]
    if not isinstance(value, int | float) or isinstance(value, bool) or value != value:
        return value
    cap = CAPS.get(re.sub(r"^tiers\.\w+\.", "tiers.*.", dotted))
    if cap is not None and value > cap:
        return type(value)(cap) if math.isfinite(cap) else value
    floor = FLOORS.get(dotted)
    if floor is not None and 0 < value < floor:
        return floor
    return value


numbers = st.one_of(
    st.sampled_from([NAN, INF, -INF, 1e300, -1e300, 1e-300, 5e-324, -5e-324, -0.0, 0.0,
                     0.5, 1.0, -1.0, 1e-7, 1.7976931348623157e308, 2**63 - 1, -(2**63),
                     2**64, -1, 0, 1, 2, 10**400, -(10**400)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**400), max_value=10**400),
)
wrong_types = st.one_of(
    st.text(max_size=12), st.booleans(), st.sampled_from([
        dt.datetime(1979, 5, 27, 7, 32, tzinfo=dt.UTC), dt.date(1979, 5, 27), dt.time(7, 32)]),
    st.lists(st.one_of(st.integers(-5, 5), st.text(max_size=4), st.booleans()), max_size=4),
    st.dictionaries(st.text(max_size=6), st.one_of(st.integers(-5, 5), st.text(max_size=4)),
                    max_size=3),
)


def any_value(dotted: str) -> st.SearchStrategy[Any]:
    """Hostile values for a key: any type, extreme numbers and ranges (within the caps)."""
    pairs = st.lists(st.one_of(numbers, wrong_types), max_size=3)
    return st.one_of(numbers, pairs, wrong_types).map(lambda v: _limit(dotted, v))


def invalid_value(dotted: str) -> st.SearchStrategy[Any]:
    """Values the schema must refuse for a key (so a run with one never starts)."""
    fld = _field(dotted)
    kind = fld.kind
    options: list[st.SearchStrategy[Any]] = []
    if kind in ("float", "int", "range", "irange"):
        options.append(st.sampled_from([NAN, [NAN, 1.0], [1.0, NAN], "1", True, {}]))
        if fld.lo is not None:
            options.append(st.floats(max_value=fld.lo, exclude_max=not fld.lo_open,
                                     allow_nan=False, width=64))
        if fld.hi is not None:
            options.append(st.floats(min_value=fld.hi, exclude_min=not fld.hi_open,
                                     allow_nan=False, width=64))
        if kind in ("float", "range"):
            options.append(st.sampled_from([INF, -INF]))
        if kind in ("range", "irange"):
            options.append(st.sampled_from([[], [1, 2, 3], [[1, 2]], ["1", "2"]]))
            options.append(st.tuples(st.integers(2, 10**6), st.integers(1, 10**6))
                           .map(lambda p: [p[0] + p[1], p[0]]))  # reversed
        if kind in ("int", "irange"):
            options.append(st.sampled_from([1.5, 2.25, [1.5, 2.5]]))
    elif kind == "bool":
        options.append(st.sampled_from([0, 1, "true", "yes", [], NAN]))
    elif kind == "str":
        options.append(st.one_of(st.integers(), st.booleans(), st.just([]), st.just({})))
        if fld.choices:
            options.append(st.text(max_size=10).filter(lambda s: s not in fld.choices))
    elif kind == "list":
        options.append(st.one_of(st.integers(), st.text(max_size=5), st.just({})))
    else:
        options.append(st.one_of(st.integers(), st.text(max_size=5), st.just([1])))
    return st.one_of(*options)


# --- mutations --------------------------------------------------------------------------------


@st.composite
def set_key(draw, case: Case, invalid: bool = False) -> None:
    dotted = pick(draw, _field_names())
    value = draw(invalid_value(dotted) if invalid else any_value(dotted))
    _set(case.doc, dotted, value)
    case.ops.append(f"set {dotted} = {toml_value(value)}")


@st.composite
def unknown_key(draw, case: Case) -> None:
    section = pick(draw, sorted(SCHEMA))
    key = draw(st.one_of(st.sampled_from(["bogus", "N_JOBS", "", " ", "ключ", "seed2"]),
                         st.text(max_size=8)))
    if key in SCHEMA[section]:
        key += "_x"
    value = draw(st.one_of(numbers, wrong_types))
    _set(case.doc, f"{section}.{key}", value)
    case.ops.append(f"set {section}.{key!r} = {toml_value(value)}")


@st.composite
def delete_key(draw, case: Case) -> None:
    choices = sorted(
        [sec for sec in case.doc if sec not in KEEP]
        + [f"{sec}.{key}" for sec, body in case.doc.items() if isinstance(body, dict)
           for key in body if f"{sec}.{key}" not in KEEP and not isinstance(body[key], dict)])
    if not choices:
        return
    dotted = pick(draw, choices)
    section, _, key = dotted.rpartition(".")
    del (case.doc[section] if section else case.doc)[key]
    case.ops.append(f"delete {dotted}")


ENCODINGS = ("utf-16", "utf-16-be", "utf-32", "latin-1", "cp1252")


@st.composite
def garble_text(draw, case: Case, invalid_only: bool = False) -> None:
    """Replace the scenario's bytes: other encodings, a BOM, junk, truncation, NUL, empty."""
    text = dump_toml(case.doc)
    kinds = ["encoding", "bom", "junk", "empty", "nul"]
    if not invalid_only:  # these may leave a valid scenario with fewer keys
        kinds += ["truncate", "flip"]
    kind = draw(st.sampled_from(kinds))
    data = text.encode("utf-8")
    if kind == "encoding":
        enc = draw(st.sampled_from(ENCODINGS))
        data = ("# café “quoted”\n" + text).encode(enc, errors="replace")
    elif kind == "bom":
        data = b"\xef\xbb\xbf" + data
    elif kind == "junk":
        data = draw(st.binary(min_size=1, max_size=200)) + b"\xff"
    elif kind == "empty":
        data = draw(st.sampled_from([b"", b"\n", b"  \t\n", b"# nothing\n"]))
    elif kind == "nul":
        data = data.replace(b"\n", b"\n\x00", 1)
    elif kind == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    else:
        pos = draw(st.integers(0, len(data) - 1))
        data = data[:pos] + bytes([draw(st.integers(0, 255))]) + data[pos + 1:]
    case.text = data
    case.ops.append(f"scenario bytes: {kind} ({data[:40]!r}...)")


@st.composite
def deep_nesting(draw, case: Case) -> None:
    """A value nested deeply (arrays, inline tables) or a long dotted key."""
    depth = draw(st.sampled_from([10, 100, 190, 400, 1000, 5000, 20_000]))
    shape = draw(st.sampled_from(["array", "table", "dotted"]))
    section = draw(st.sampled_from(["run", "workload", "scheduler", "tiers.small"]))
    if shape == "dotted":
        depth = min(depth, 190)  # deeper dotted keys are a known escape
        _set(case.doc, f"{section}.@@key@@", 1)
        case.raw["@@key@@"] = ".".join(["a"] * depth)
    else:
        key = draw(st.sampled_from(["n_jobs", "params", "bogus", "arrival_rate", "slots"]))
        _set(case.doc, f"{section}.{key}", "@@value@@")
        case.raw["@@value@@"] = "[" * depth + "1" + "]" * depth if shape == "array" else \
            "{a = " * depth + "1" + "}" * depth
    case.ops.append(f"[{section}] {shape} nested {depth} deep")


SET_TEXT = st.one_of(
    st.sampled_from(["", "=", "[", "{a=", '"open', "'", "1e999", "nan", "-nan", "+inf",
                     "[nan, 1]", "{}", "[[1]]", "1_000", "0x10", "1979-05-27", "ünï",
                     "[" * 50 + "]" * 50]),
    st.text(max_size=10),
)


@st.composite
def override(draw, case: Case, invalid: bool = False) -> None:
    dotted = pick(draw, _field_names())
    if invalid:
        text = toml_value(draw(invalid_value(dotted)))
    elif dotted in CAPS or dotted.endswith(".slots") or dotted in FLOORS:
        text = toml_value(draw(any_value(dotted)))
    else:
        text = draw(st.one_of(SET_TEXT, any_value(dotted).map(toml_value)))
    key = draw(st.sampled_from([dotted] * 6 + ["", ".", "workload", "a.b.c", "tiers.x.slots",
                                               dotted.upper(), dotted + ".x"]))
    case.overrides.append(f"{key}={text}")
    case.ops.append(f"--set {key}={text!r}")


def _brite(nodes: list[str], edges: list[str]) -> bytes:
    return ("Topology: ( 0 Nodes, 0 Edges )\n\n"
            f"Nodes: ( {len(nodes)} )\n" + "\n".join(nodes)
            + f"\n\nEdges: ( {len(edges)} )\n" + "\n".join(edges) + "\n").encode()


TOPO_NUMBERS = ["nan", "inf", "-inf", "1e999", "-5", "abc", "", "1e308", "0x10", "5e-324"]


@st.composite
def bad_topology(draw, case: Case) -> None:
    """A malformed topology file named by the scenario."""
    text = BRITE.read_bytes()
    kind = draw(st.sampled_from(["truncate", "flip", "number", "junk", "graphml", "counts",
                                 "unknown-node", "no-nodes", "deep-xml"]))
    name = "topo.brite"
    if kind == "truncate":
        data = text[: draw(st.integers(0, len(text)))]
    elif kind == "flip":
        pos = draw(st.integers(0, len(text) - 1))
        data = text[:pos] + bytes([draw(st.integers(0, 255))]) + text[pos + 1:]
    elif kind == "number":
        value = draw(st.sampled_from(TOPO_NUMBERS))
        node = ["1", "5", "5", "1", "1", "-1", "RT_NODE"]
        edge = ["0", "0", "1", "1.0", "0.1", "5.0"]
        if draw(st.booleans()):
            node[draw(st.integers(0, 2))] = value  # id, x or y
        else:
            edge[draw(st.integers(1, 5))] = value  # from, to, length, delay or bandwidth
        data = _brite(["0 0 0 1 1 -1 RT_NODE", " ".join(node)], [" ".join(edge)])
    elif kind == "junk":
        data = draw(st.binary(max_size=300))
    elif kind == "counts":
        data = text.replace(b"Nodes: ( 8 )", b"Nodes: ( " + str(draw(st.integers(
            -5, 10**30))).encode() + b" )")
    elif kind == "unknown-node":
        data = _brite(["0 0 0 1 1 -1 RT_NODE"], ["0 0 7 1.0 0.1 5.0"])
    elif kind == "no-nodes":
        data = b"Edges: ( 1 )\n0 0 1 1.0 0.1 5.0\n"
    else:
        name = "topo.graphml"
        depth = draw(st.sampled_from([1, 100, 5000]))
        value = draw(st.sampled_from(TOPO_NUMBERS + ["1.0"]))
        data = ('<?xml version="1.0"?><graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
                '<key id="x" for="node" attr.name="x" attr.type="double"/>'
                '<graph edgedefault="undirected"><node id="0">' + "<z>" * depth
                + "</z>" * depth + f'<data key="x">{value}</data></node><node id="1"/>'
                + draw(st.sampled_from(['<edge source="0" target="1"/>', "", "<edge/>"]))
                + "</graph></graphml>").encode()
        if draw(st.booleans()):
            data = data[: draw(st.integers(0, len(data) - 1))]
    case.files[name] = data
    _set(case.doc, "topology.generator", "file")
    _set(case.doc, "topology.file", name)
    case.ops.append(f"{name}: {kind} ({data[:60]!r}...)")


WF_PATHS = [
    ("workflow",), ("workflow", "specification"), ("workflow", "specification", "tasks"),
    ("workflow", "specification", "files"), ("workflow", "execution", "tasks"),
    ("workflow", "specification", "tasks", 0, "id"),
    ("workflow", "specification", "tasks", 0, "parents"),
    ("workflow", "specification", "tasks", 4, "children"),
    ("workflow", "specification", "tasks", 0, "inputFiles"),
    ("workflow", "specification", "files", 0, "sizeInBytes"),
    ("workflow", "execution", "tasks", 0, "runtimeInSeconds"),
]
WF_VALUES = [NAN, INF, -1, 0, 1e308, None, "12", "", [], {}, [None], "ID0000001",
             [{"a": 1}], True, 2**63 - 1, ["nope"]]


@st.composite
def bad_workflow(draw, case: Case) -> None:
    """A malformed WfFormat file named by the scenario (workload kind wfformat)."""
    doc = json.loads(WFJSON.read_text(encoding="utf-8"))
    kind = draw(st.sampled_from(["delete", "set", "truncate", "deep", "encoding", "junk",
                                 "cycle"]))
    path = draw(st.sampled_from(WF_PATHS))
    node: Any = doc
    for part in path[:-1]:
        node = node[part]
    if kind == "delete":
        del node[path[-1]]
    elif kind == "set":
        node[path[-1]] = draw(st.sampled_from(WF_VALUES))
    elif kind == "cycle":
        tasks = doc["workflow"]["specification"]["tasks"]
        tasks[0]["parents"] = [tasks[-1]["id"]]
    data = json.dumps(doc).encode()
    if kind == "truncate":
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif kind == "deep":
        depth = draw(st.sampled_from([100, 10_000, 100_000]))
        data = b"[" * depth + b"]" * depth
    elif kind == "encoding":
        data = json.dumps(doc, ensure_ascii=False).replace("Hand-made", "Händ-made").encode(
            draw(st.sampled_from(["utf-16", "latin-1", "utf-8-sig"])))
    elif kind == "junk":
        data = draw(st.binary(max_size=200))
    case.files["wf.json"] = data
    _set(case.doc, "workload.kind", "wfformat")
    _set(case.doc, "workload.files", ["wf.json"])
    case.ops.append(f"wf.json: {kind} {'.'.join(map(str, path))} ({data[:50]!r}...)")


@st.composite
def validate_cases(draw) -> Case:
    base = pick(draw, sorted(BASES))
    case = Case(base, copy.deepcopy(BASES[base]))
    for _ in range(draw(st.integers(1, 3))):
        mutation = pick(draw, [set_key] * 5 + [
            unknown_key, delete_key, garble_text, deep_nesting, override, bad_topology,
            bad_workflow])
        draw(mutation(case))
        if case.text is not None:
            break
    return case


@st.composite
def run_cases(draw) -> Case:
    base = draw(st.sampled_from(RUN_BASES))
    case = Case(base, copy.deepcopy(BASES[base]))
    mutation = draw(st.sampled_from(["set"] * 4 + ["override", "unknown", "text"]))
    if mutation == "set":
        draw(set_key(case, invalid=True))
    elif mutation == "override":
        draw(override(case, invalid=True))
    elif mutation == "unknown":
        draw(unknown_key(case))
    else:
        draw(garble_text(case, invalid_only=True))
    return case


# --- the contract -----------------------------------------------------------------------------


@contextlib.contextmanager
def watchdog(seconds: int = WATCHDOG_SECONDS) -> Iterator[None]:
    """Raise in the test instead of hanging if one example runs away."""
    def expire(_signum, _frame):
        raise TimeoutError(f"example still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


SHOWN_BY_DEFAULT = (UserWarning, RuntimeWarning, SyntaxWarning, UnicodeWarning, BytesWarning,
                    FutureWarning)


def invoke(argv: list[str]) -> tuple[int, str, str]:
    """Call the command in-process: its status, stdout and stderr.

    Warnings that Python would print on a terminal (not deprecations) count as stderr lines.
    """
    out, err = io.StringIO(), io.StringIO()
    with warnings.catch_warnings(record=True) as caught, watchdog(), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        warnings.simplefilter("always")
        status = main(argv)
    shown = [f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}"
             for w in caught if issubclass(w.category, SHOWN_BY_DEFAULT)]
    return status, out.getvalue(), "".join(f"{line}\n" for line in shown) + err.getvalue()


def check_contract(case: Case, command: str, tmp: Path) -> int:
    """Run the case and assert the bad-input promise; return the status."""
    path = case.write(tmp)
    before = sorted(tmp.rglob("*"))
    argv = [command, str(path), *(f"--set={o}" for o in case.overrides)]
    out = tmp / "out"
    if command == "run":
        argv += ["--out", str(out), "--no-progress"]
    status, stdout, stderr = invoke(argv)
    assert status in (0, 2), f"{case!r}: exit status {status}, stderr {stderr!r}"
    if command == "validate":
        assert sorted(tmp.rglob("*")) == before, f"{case!r}: validate wrote files"
    if status == 2:
        lines = stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("geosim: error: "), \
            f"{case!r}: stderr should be one geosim error line, got {stderr!r}"
        assert "Traceback" not in stderr
        assert stdout == "", f"{case!r}: stdout on failure {stdout!r}"
        assert sorted(tmp.rglob("*")) == before, f"{case!r}: wrote files on failure"
        assert not out.exists()
    elif command == "run":
        assert (out / "summary.json").is_file()
    return status


FUZZ = settings(deadline=None, derandomize=True, database=None, print_blob=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


@settings(FUZZ, max_examples=60)
@given(case=validate_cases())
def test_validate_gives_ok_or_one_clean_error(case):
    with tempfile.TemporaryDirectory() as tmp:
        check_contract(case, "validate", Path(tmp))


@settings(FUZZ, max_examples=12)
@given(case=run_cases())
def test_run_refuses_invalid_values_cleanly_and_writes_nothing(case):
    with tempfile.TemporaryDirectory() as tmp:
        check_contract(case, "run", Path(tmp))


def test_the_unmutated_small_scenarios_pass():
    """Every base is valid and small, so a refusal comes from its mutation."""
    for name in BASES:
        with tempfile.TemporaryDirectory() as tmp:
            case = Case(name, copy.deepcopy(BASES[name]))
            assert check_contract(case, "validate", Path(tmp)) == 0
    for name in RUN_BASES:
        with tempfile.TemporaryDirectory() as tmp:
            case = Case(name, copy.deepcopy(BASES[name]))
            assert check_contract(case, "run", Path(tmp)) == 0
    assert _limit("tiers.large.slots", [10**9, 3]) == [16, 3]
    assert _limit("workload.flow_brick", 1e-9) == 1.0
    assert math.isnan(_limit("workload.n_jobs", NAN))


# --- former escapes -----------------------------------------------------------------------------

_HUGE = "1" + "0" * 400  # an integer beyond the float range
_WORKFLOW = WFJSON.read_text(encoding="utf-8")


def _escape(reason: str, scenario: str, *args: str, files: dict[str, str] | None = None):
    """A case that once escaped as ``reason`` says."""
    return pytest.param(scenario, list(args), files or {}, id=reason)


_SMALL = '[run]\nseed = 1\n[topology]\ngenerator = "single"\n[tiers.small]\nslots = 4\n' \
         '[workload]\nn_jobs = 3\n'

#: Inputs that broke the promise once, one per class (each names where it escaped).
FORMER_ESCAPES = [
    _escape("integer beyond the float range in a number key: OverflowError in "
            "scenario._check",
            _SMALL + f'kind = "single"\narrival_rate = {_HUGE}\n'),
    _escape("flows range given as one number: TypeError in model._flow_jobs",
            _SMALL + 'kind = "flows"\nflow_sla_steps = 3\n'),
    _escape("--set value nested 1000 deep: RecursionError in scenario.parse_override",
            _SMALL + 'kind = "single"\n',
            "--set=workload.n_jobs=" + "[" * 1000 + "]" * 1000),
    _escape("dotted key of 1000 parts: RecursionError in the repr of "
            "scenario._merge_section's message",
            _SMALL + "a" + ".a" * 999 + " = 1\n"),
    _escape("workflow file name not a string: TypeError in scenario._validate",
            _SMALL + 'kind = "wfformat"\nfiles = [1]\n'),
    _escape("workflow file name longer than the system allows: OSError in "
            "scenario._validate",
            _SMALL + f'kind = "wfformat"\nfiles = ["{"x" * 300}.json"]\n'),
    _escape("topology file name longer than the system allows: OSError in "
            "scenario._validate",
            _SMALL.replace('"single"', f'"file"\nfile = "{"x" * 300}.graphml"')
            + 'kind = "single"\n'),
    _escape("GraphML long attribute beyond the float range: OverflowError in "
            "topology._number",
            _SMALL.replace('"single"', '"file"\nfile = "t.graphml"') + 'kind = "single"\n',
            files={"t.graphml": '<?xml version="1.0"?><graphml xmlns="http://graphml.'
                   'graphdrawing.org/xmlns"><key id="x" for="node" attr.name="x" '
                   'attr.type="long"/><graph edgedefault="undirected"><node id="0"><data '
                   f'key="x">{_HUGE}</data></node><node id="1"/><edge source="0" '
                   'target="1"/></graph></graphml>'}),
    _escape("WfFormat integer of 5000 digits: ValueError (int digit limit) in "
            "wfformat._parse_wfformat",
            _SMALL + 'kind = "wfformat"\nfiles = ["wf.json"]\n',
            files={"wf.json": re.sub(r'"runtimeInSeconds": [0-9.]+',
                                     '"runtimeInSeconds": 1' + "0" * 5000, _WORKFLOW, count=1)}),
    _escape("WfFormat size beyond the float range: OverflowError in wfformat._parse_wfformat",
            _SMALL + 'kind = "wfformat"\nfiles = ["wf.json"]\n',
            files={"wf.json": re.sub(r'"sizeInBytes": \d+', f'"sizeInBytes": {_HUGE}',
                                     _WORKFLOW, count=1)}),
    _escape("google durations near the float maximum: OverflowError in "
            "google.bounded_pareto_shape",
            _SMALL + 'kind = "google"\nduration_max = 1e308\nduration_mean = 5e307\n'),
    _escape("google durations from 1e-300: OverflowError in google._log_moment",
            _SMALL + 'kind = "google"\nduration_min = 1e-300\n'),
    _escape("google durations of 1e300..1e308: numpy RuntimeWarning printed before the "
            "error line", _SMALL + 'kind = "google"\nduration_min = 1e300\n'
            "duration_max = 1e308\nduration_mean = 5.00000005e307\n"),
]


@pytest.mark.parametrize(("scenario", "args", "files"), FORMER_ESCAPES)
def test_former_escapes_give_one_clean_line(tmp_path, scenario, args, files):
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    case = Case("known", {}, text=scenario.encode("utf-8"), overrides=[
        a.removeprefix("--set=") for a in args])
    check_contract(case, "validate", tmp_path)
