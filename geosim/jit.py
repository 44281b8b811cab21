"""How geosim compiles its kernels: Numba's ``njit``, with a cache that knows their sources.

Every module of geosim that defines compiled kernels takes ``njit`` (and ``prange``,
``objmode``) from here. They are Numba's own; importing this module also makes Numba's
on-disk cache of geosim's kernels follow every source a kernel is built from.

Numba keeps a kernel's compiled code beside its module and loads it again while *that
module's* source is unchanged. But the code also holds what the kernel took from other
modules when it was compiled: the kernels it calls (``complete_kernel`` of
``geosim/engine/step.py`` inside the event loop of ``geosim/engine/subspans.py``) and the
constants it reads (``EPS`` of ``geosim/engine/base.py``). After a change of one of those
alone (an edit, a ``git pull`` in an editable install) Numba would load the old code and a
run would silently compute with it. So each geosim kernel's cache entry is stamped with
the contents of its module and of every geosim module that module imports, directly or
through others (:func:`sources`); a change in any of them compiles the kernel anew.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re

from numba import njit, objmode, prange
from numba.core import caching

__all__ = ["njit", "objmode", "prange", "sources", "stamp"]

# Numba's cache implementation (``CacheImpl``; ``_CacheImpl`` before Numba 0.62), whose
# list of locators is asked in order which one caches a function.
_IMPL = getattr(caching, "CacheImpl", None) or caching._CacheImpl

#: The package whose kernels are stamped with their sources.
PACKAGE = "geosim"
_ROOT = os.path.dirname(os.path.abspath(__file__))

# ``from geosim.x import a, b`` (names possibly in parentheses over lines) or
# ``import geosim.x``, at the top level of a module: what its kernels can see. (Imports
# inside functions and under ``if TYPE_CHECKING:`` are indented.)
_IMPORT = re.compile(r"^(?:from[ \t]+(geosim(?:\.\w+)*)[ \t]+import[ \t]+"
                     r"(\([^)]*\)|[^\n]*)|import[ \t]+(geosim(?:\.\w+)*))", re.MULTILINE)
_NAME = re.compile(r"(\w+)(?:\s+as\s+\w+)?")
_COMMENT = re.compile(r"#[^\n]*")


def _source_file(module: str) -> str | None:
    """The source file of geosim module ``module`` (a module or a package), if any."""
    return _locate(_ROOT, module)


@functools.cache
def _locate(root: str, module: str) -> str | None:
    """:func:`_source_file` under ``root``, kept for the process.

    Files that are there stay there: only their contents are followed.
    """
    base = os.path.join(root, *module.split(".")[1:])
    for path in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(path):
            return path
    return None


@functools.cache
def _read(path: str, mtime_ns: int, size: int) -> tuple[str, tuple[str, ...]]:
    """The digest of a source file and the geosim modules it imports (by its stamp)."""
    with open(path, "rb") as f:
        data = f.read()
    text = _COMMENT.sub("", data.decode("utf-8", errors="replace"))
    imported = []
    for m in _IMPORT.finditer(text):
        if m.group(3):
            imported.append(m.group(3))
            continue
        imported.append(m.group(1))
        # ``from geosim.engine import step`` imports the module ``geosim.engine.step``.
        imported += [f"{m.group(1)}.{name}" for name in _NAME.findall(m.group(2))
                     if name != "import"]
    return hashlib.sha256(data).hexdigest(), tuple(imported)


def _scan(path: str) -> tuple[str, tuple[str, ...]]:
    """:func:`_read` of ``path`` as it is now."""
    st = os.stat(path)
    return _read(path, st.st_mtime_ns, st.st_size)


def sources(module: str) -> list[str]:
    """The source files a kernel of geosim module ``module`` may be built from.

    The module's own file and those of every geosim module it imports at its top level,
    directly or through other geosim modules, sorted.
    """
    seen: dict[str, str | None] = {}
    stack = [module]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen[name] = path = _source_file(name)
        if path is not None:
            stack += [m for m in _scan(path)[1] if m not in seen]
    return sorted({p for p in seen.values() if p is not None})


@functools.cache
def _module_stamp(module: str, files: tuple[tuple[str, int, int], ...]) -> str:
    """The stamp of ``module`` given the current stamps of its sources."""
    digest = hashlib.sha256()
    for path, mtime_ns, size in files:
        digest.update(os.path.relpath(path, _ROOT).encode())
        digest.update(_read(path, mtime_ns, size)[0].encode())
    return digest.hexdigest()


def stamp(module: str) -> str:
    """A digest of the contents of :func:`sources` of ``module``: its kernels' cache stamp."""
    files = []
    for path in sources(module):
        st = os.stat(path)
        files.append((path, st.st_mtime_ns, st.st_size))
    return _module_stamp(module, tuple(files))


class _SourcesLocator(caching._CacheLocator):
    """Numba's cache locator for geosim's kernels: Numba's own, stamped by :func:`stamp`.

    The cache stays where Numba would keep it (the locator Numba would choose is asked
    for the place); only the stamp that decides whether a cached kernel is still good
    covers every source of the kernel's module.
    """

    def __init__(self, inner: caching._CacheLocator, module: str):
        self._inner = inner
        self._module = module

    def ensure_cache_path(self) -> None:
        self._inner.ensure_cache_path()

    def get_cache_path(self) -> str:
        return self._inner.get_cache_path()

    def get_disambiguator(self) -> str:
        return self._inner.get_disambiguator()

    def get_source_stamp(self) -> tuple:
        return self._inner.get_source_stamp(), stamp(self._module)

    @classmethod
    def from_function(cls, py_func, py_file):  # noqa: D102 - Numba's contract
        module = getattr(py_func, "__module__", None) or ""
        if module != PACKAGE and not module.startswith(PACKAGE + "."):
            return None
        for other in _IMPL._locator_classes:
            if other is not cls:
                inner = other.from_function(py_func, py_file)
                if inner is not None:
                    return cls(inner, module)
        return None


if _SourcesLocator not in _IMPL._locator_classes:
    _IMPL._locator_classes.insert(0, _SourcesLocator)
