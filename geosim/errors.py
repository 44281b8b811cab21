"""Errors raised for bad user input.

Every problem a user can cause (a malformed scenario, an unknown scheduler, a value
out of range, a bad topology file) is reported as a :class:`GeosimError` whose message
is one line naming where the problem is (file, key, value). The command-line interface
prints that line and exits with status 2, without a traceback.
"""

from __future__ import annotations

import os
import re


class GeosimError(Exception):
    """A user-facing error with a one-line message.

    Args:
        message: What is wrong.
        source: The file (or other origin) the bad input came from, if any.
        key: The dotted scenario key involved, if any.
    """

    def __init__(self, message: str, *, source: str | None = None, key: str | None = None):
        self.source = source
        self.key = key
        parts = [p for p in (source, key) if p]
        prefix = ": ".join(parts)
        super().__init__(_one_line(f"{prefix}: {message}" if prefix else message))


def _one_line(text: str) -> str:
    """``text`` with every unprintable character escaped (a key or path may hold a CR)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def os_error(exc: OSError) -> str:
    """One line for an error of the machine: the path and the cause.

    For example ``results/x/jobs.parquet: No space left on device``. An error without
    an ``errno`` of its own is read for the ``[errno N]`` it names; the cause is the
    system's text for the error number (pyarrow's own text wraps it in its details).
    """
    path = exc.filename if exc.filename is not None else ""
    text = str(exc).strip()
    code = exc.errno or next((int(m) for m in re.findall(r"\[errno (\d+)\]", text,
                                                         flags=re.IGNORECASE)), None)
    cause = (os.strerror(code) if code else "") or exc.strerror \
        or (text.splitlines() or [type(exc).__name__])[0]
    return f"{path}: {cause}" if path else cause
