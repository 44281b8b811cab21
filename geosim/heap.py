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

#: Objects the interpreter itself has frozen when geosim is imported: none on Python
#: 3.11, a few hundred of its start-up objects on 3.12.
_INTERPRETER_FROZEN = gc.get_freeze_count()


@contextmanager
def long_lived() -> Iterator[None]:
    """Keep the objects alive now out of the collector's passes while the block runs.

    Objects made inside the block are collected as usual; the frozen ones return to the
    collector at the end (on Python 3.12 with the interpreter's own start-up objects,
    which it froze). Freezing concerns the cyclic collector only: an object whose last
    reference goes is freed at once, frozen or not. If a caller has frozen objects (more
    are frozen than the interpreter's own), that choice is left as it is.
    """
    if gc.get_freeze_count() > _INTERPRETER_FROZEN:
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
