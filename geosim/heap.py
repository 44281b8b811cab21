"""Python's cyclic garbage collector and the objects that live as long as a run.

A run allocates many short-lived objects, and at each full pass the collector also
scans every object alive: the imported packages' (NumPy, SciPy, pandas, Numba, Mesa:
about 130 000 objects) and the world's (its graph, its agents). Those live at least as
long as the run, so scanning them is wasted work: in a fresh process it was about a
sixth of ``geosim run scenarios/quickstart.toml`` (``docs/results.md``, "Fixed costs of
a command"). :func:`gc.freeze` takes them out of the collector's passes.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def long_lived() -> Iterator[None]:
    """Keep the objects alive now out of the collector's passes while the block runs.

    Objects made inside the block are collected as usual; the frozen ones return to the
    collector at the end. If objects are frozen already (by a caller's
    :func:`gc.freeze`, or an enclosing block), that choice is left as it is.
    """
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def importing() -> Iterator[None]:
    """Import in the block without collecting; the collector is then as it was.

    Imports make long-lived objects only, so the collector's passes during them find
    nothing to free; a command imports its packages here, then runs in :func:`long_lived`.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
