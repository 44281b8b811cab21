"""Declared parameters: a default and a rule per key, checked in one way.

A :class:`Field` says what a value may be (its kind, bounds and choices);
:func:`check_value` returns what is wrong with a value, as text that follows the key's
name (``"must be > 0"``), or None. Scenario keys (:data:`geosim.scenario.SCHEMA`) and
scheduler parameters (:attr:`geosim.schedulers.Scheduler.params`) are declared this way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Largest whole number a key without its own upper bound accepts (counts, weights, steps).
MAX_INT = 2**31 - 1
#: Largest magnitude of any other number without its own bound (seconds, MB/s, MIPS, ...):
#: far beyond any world, far enough from overflow that sums and products stay finite.
MAX_FLOAT = 1e15


@dataclass(frozen=True)
class Field:
    """One parameter: its default and how to check a value.

    Attributes:
        default: The value used when the parameter is not given.
        kind: ``"float"``, ``"int"``, ``"bool"``, ``"str"``, ``"range"`` (scalar or
            ``[lo, hi]`` of floats), ``"irange"`` (the same of integers), ``"list"``,
            ``"table"`` (free-form mapping checked elsewhere) or ``"any"`` (checked
            elsewhere, e.g. a value of one of several types).
        lo: Smallest allowed value (inclusive unless ``lo_open``).
        hi: Largest allowed value (inclusive unless ``hi_open``). None caps whole numbers
            at :data:`MAX_INT` and other numbers at :data:`MAX_FLOAT`; ``math.inf``
            leaves them unbounded (infinity itself is still refused).
        choices: Allowed strings for ``"str"`` fields.
        doc: One line for the documentation.
        optional: Whether None is also allowed (the parameter is left unset).
    """

    default: Any
    kind: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple[str, ...] | None = None
    doc: str = ""
    optional: bool = False


def is_number(value: Any) -> bool:
    """Whether ``value`` is an int or a float (a bool is not a number here)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_value(fld: Field, value: Any) -> str | None:
    """What is wrong with ``value`` for ``fld``, or None if nothing is.

    The text follows the key's name in a message: ``"must be > 0"``,
    ``"must be one of fifo, fair"``, ``"must be a whole number"``.
    """
    kind = fld.kind
    if kind == "any" or (fld.optional and value is None):
        return None
    if kind == "bool":
        return None if isinstance(value, bool) else "must be true or false"
    if kind == "str":
        if not isinstance(value, str):
            return "must be a string"
        if fld.choices and value not in fld.choices:
            return f"must be one of {', '.join(fld.choices)}"
        return None
    if kind in ("list", "table"):
        ok = isinstance(value, list) if kind == "list" else isinstance(value, Mapping)
        return None if ok else f"must be a {'list' if kind == 'list' else 'table'}"
    if kind in ("range", "irange"):
        values = value if isinstance(value, list) else [value]
        if len(values) not in (1, 2) or not all(is_number(v) for v in values):
            return "must be a number or a [low, high] pair"
        problem = next(filter(None, map(_nan, values)), None)
        if problem:
            return problem
        if kind == "irange" and not all(float(v).is_integer() for v in values):
            return "must be whole numbers"
        if len(values) == 2 and values[0] > values[1]:
            return "low must not exceed high"
        for v in values:
            problem = _bounds(fld, v)
            if problem:
                return problem
        return None
    if kind == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            return "must be a whole number"
        return _bounds(fld, value)
    if kind == "float":
        if not is_number(value):
            return "must be a number"
        return _nan(value) or _bounds(fld, value)
    raise AssertionError(kind)


def values_outside(fld: Field) -> list[Any]:
    """Values ``fld`` refuses: one of a wrong type, one past each bound, one not a choice.

    Empty for a field of kind ``"any"``, which this module does not check.
    """
    kind = fld.kind
    if kind == "any":
        return []
    whole = kind in ("int", "irange")
    out: list[Any] = [{"bool": "true", "str": 0, "list": 0, "table": 0}.get(kind, "1")]
    if kind == "str" and fld.choices:
        out.append(max(fld.choices, key=len) + "?")   # longer than every choice
    if kind in ("int", "float", "range", "irange"):
        if fld.lo is not None and math.isfinite(fld.lo):
            out.append(fld.lo if fld.lo_open else fld.lo - 1)
        if fld.hi is None:
            out.append(MAX_INT + 1 if whole else MAX_FLOAT * 10)
        elif math.isfinite(fld.hi):
            out.append(fld.hi if fld.hi_open else fld.hi + 1)
    return out


def _nan(v: float) -> str | None:
    """The problem with a number that is NaN or beyond the floating-point range."""
    try:
        return "must not be NaN" if math.isnan(v) else None
    except OverflowError:                       # a whole number of hundreds of digits
        return "must be a finite number"


def _bounds(fld: Field, v: float) -> str | None:
    if fld.hi is None and math.isfinite(v):
        top = MAX_INT if fld.kind in ("int", "irange") else MAX_FLOAT
        if abs(v) > top:
            return f"must be {'<=' if v > 0 else '>='} {'-' if v < 0 else ''}{_number(top)}"
    if fld.lo is not None and (v < fld.lo or (fld.lo_open and v == fld.lo)):
        return f"must be {'>' if fld.lo_open else '>='} {_number(fld.lo)}"
    if fld.hi is not None and (v > fld.hi or (fld.hi_open and v == fld.hi)):
        return f"must be {'<' if fld.hi_open else '<='} {_number(fld.hi)}"
    if isinstance(v, float) and math.isinf(v):
        return "must be finite"
    return None


def _number(x: float) -> str:
    """A bound as written: whole numbers in full, others in short form."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e10 else f"{x:g}"
