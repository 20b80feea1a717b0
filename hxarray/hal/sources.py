"""Where hxarray's modules load from: a compiled build, or their Python source.

setup.py compiles some modules with Cython from their own, unchanged Python source (its
`COMPILED` list, the HAL's allocator and buffer among them). The finder below runs the source
instead where a build must not run: always with HXARRAY_PURE_PYTHON=1, and in a source checkout
where the source changed after the build (with a warning). The HAL imports this module before
any compiled module, so the choice holds for all of them.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

from .settings import PURE_PYTHON

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CHECKOUT = os.path.isfile(os.path.join(_PACKAGE, os.pardir, "setup.py"))  # not an install


def compiled(module_file: str) -> bool:
    """Whether the module whose `__file__` this is runs compiled (not from its `.py`)."""
    return not module_file.endswith(".py")


def loads_compiled(name: str) -> bool:
    """Whether importing the hxarray module `name` (`hxarray.backends.cpu.fastpath`) will load its
    compiled build, as the finder below decides, without importing it (or its package)."""
    stem = os.path.join(_PACKAGE, *name.split(".")[1:])
    if _FINDER is not None and (_FINDER.pure or _FINDER.stale(stem + ".py", stem, warn=False)):
        return False
    return any(os.path.isfile(stem + suffix)
               for suffix in importlib.machinery.EXTENSION_SUFFIXES)


class _Sources(importlib.abc.MetaPathFinder):
    """Finds an hxarray module's Python source where a compiled build of it must not run: always
    with HXARRAY_PURE_PYTHON=1, and in a checkout where the source is newer than its build (with
    a warning: `make` or `pip install -e .` rebuilds it). Other modules it leaves to Python's
    finders, which prefer a compiled build."""

    def __init__(self, pure: bool) -> None:
        self.pure = pure

    def find_spec(self, name: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if path is None or not name.startswith("hxarray."):
            return None
        leaf = name.rpartition(".")[2]
        for folder in path:
            source = os.path.join(folder, leaf + ".py")
            if os.path.isfile(source):
                if self.pure or self.stale(source, os.path.join(folder, leaf)):
                    return importlib.util.spec_from_file_location(name, source)
                return None
        return None

    @staticmethod
    def stale(source: str, stem: str, warn: bool = True) -> bool:
        """Whether the module's source is newer than its build (with a warning, if `warn`)."""
        builds = [stem + suffix for suffix in importlib.machinery.EXTENSION_SUFFIXES
                  if os.path.isfile(stem + suffix)]
        if not builds or os.path.getmtime(source) <= os.path.getmtime(builds[0]):
            return False
        if not warn:
            return True
        warnings.warn(f"{source} changed after it was compiled: it runs interpreted until "
                      "`make` (or `pip install -e .`) rebuilds it", RuntimeWarning, stacklevel=2)
        return True


_FINDER = _Sources(PURE_PYTHON.get()) if PURE_PYTHON.get() or _CHECKOUT else None
if _FINDER is not None:
    sys.meta_path.insert(0, _FINDER)
