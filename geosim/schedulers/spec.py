"""Scheduler specs: a registered name with parameters, written ``name[key=value,...]``.

``laps+r[beta=0.6]``, ``fair[multitasking=true]`` or plain ``srpt``: the form the command
line (``geosim run --scheduler``, ``geosim compare --schedulers``) and
:func:`geosim.run` accept, and the label of a scheduler in comparison tables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from geosim.errors import GeosimError
from geosim.scenario import parse_override
from geosim.tomlio import toml_value

_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_.+-]*")


@dataclass(frozen=True)
class Spec:
    """A registered scheduler name with parameters.

    Attributes:
        name: Registered scheduler name.
        params: Keyword parameters of the scheduler.
    """

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The normalised spec, e.g. ``laps+r[beta=0.6]``: the scheduler's name in tables."""
        if not self.params:
            return self.name
        inner = ",".join(f"{k}={_spec_value(v)}" for k, v in sorted(self.params.items()))
        return f"{self.name}[{inner}]"


def _spec_value(value: Any) -> str:
    if isinstance(value, str) and _BARE.fullmatch(value) and \
            parse_override(f"v={value}")[1] == value:
        return value
    return toml_value(value)


def split_top(text: str, source: str = "schedulers") -> list[str]:
    """Split ``text`` at commas outside brackets, braces and quotes.

    Raises:
        GeosimError: Unbalanced brackets or quotes.
    """
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth < 0:
                raise GeosimError(f"unbalanced brackets in {text!r}", source=source)
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth or quote:
        raise GeosimError(f"unbalanced brackets or quotes in {text!r}", source=source)
    parts.append(text[start:])
    return parts


def parse_spec(text: str) -> Spec:
    """Parse one scheduler spec: ``name`` or ``name[key=value,...]``.

    Values are TOML values (``true``, ``0.6``, ``"x"``); a bare word is a string.

    Raises:
        GeosimError: A malformed spec or a parameter given twice.
    """
    match = re.fullmatch(r"\s*([^\[\],=\s]+)\s*(?:\[(.*)\])?\s*", text, flags=re.DOTALL)
    if match is None:
        raise GeosimError(f"bad scheduler spec {text!r} (expected NAME or "
                          "NAME[KEY=VALUE,...])", source="schedulers")
    name, body = match.groups()
    params: dict[str, Any] = {}
    for item in split_top(body) if body and body.strip() else []:
        key, value = parse_override(item, source=f"schedulers: {text.strip()}")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) or key in params:
            raise GeosimError(f"bad or repeated parameter {key!r} in {text.strip()!r}",
                              source="schedulers")
        params[key] = value
    return Spec(name, params)


def parse_specs(text: str) -> list[Spec]:
    """Parse comma-separated scheduler specs (commas inside brackets belong to a spec)."""
    return [parse_spec(part) for part in split_top(text)]
