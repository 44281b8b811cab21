"""The one TOML writer: scenarios, scheduler specs and stored runs (``tomllib`` only reads).

Every value written here reads back equal with :func:`tomllib.loads`: strings escape
quotes, backslashes and control characters, floats keep NaN, infinities and full
precision, tables are written inline below a section header.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from typing import Any

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_string(text: str) -> str:
    """A basic TOML string: quotes, backslashes and control characters escaped."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_key(key: str) -> str:
    """A key: bare where TOML allows it, quoted otherwise."""
    return key if _BARE_KEY.fullmatch(key) else toml_string(key)


def toml_value(value: Any) -> str:
    """One TOML value.

    Raises:
        TypeError: A value TOML has no form for.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        text = repr(float(value))
        return text if any(c in text for c in ".en") else text + ".0"
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{toml_key(str(k))} = {toml_value(v)}"
                                for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {value!r}")


def dump_toml(doc: Mapping[str, Any]) -> str:
    """A document: non-empty tables as ``[section]`` headers, everything else inline."""
    lines: list[str] = []

    def table(prefix: list[str], body: Mapping[str, Any]) -> None:
        subs = []
        for key, value in body.items():
            if isinstance(value, Mapping) and value:
                subs.append((key, value))
            else:
                lines.append(f"{toml_key(str(key))} = {toml_value(value)}")
        for key, value in subs:
            path = [*prefix, toml_key(str(key))]
            if lines:
                lines.append("")
            lines.append(f"[{'.'.join(path)}]")
            table(path, value)

    table([], doc)
    return "\n".join(lines) + "\n"
