"""What runs compiled: the hand-written speedups (hxarray/_speedups.c, or None) and the modules
that Cython compiles from their own Python source (setup.py's `COMPILED`).

Every compiled type of the speedups has a pure-Python twin with the same behaviour, used when the
extension was not built (no C compiler at install time) or when HXARRAY_PURE_PYTHON=1 is set. A
module compiled by Cython is its Python source: with HXARRAY_PURE_PYTHON=1, or in a source
checkout where the source changed after the build, the source runs interpreted instead. The HAL
imports this module first (`hxarray/__init__.py` imports the HAL before anything else), so the
choice holds for every compiled module.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from .hal.settings import PURE_PYTHON

speedups: ModuleType | None = None
if not PURE_PYTHON.get():
    try:
        speedups = importlib.import_module("hxarray._speedups")
    except ImportError:  # pragma: no cover - installs without a C compiler
        speedups = None

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_CHECKOUT = os.path.isfile(os.path.join(_PACKAGE, os.pardir, "setup.py"))  # not an install


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
                if self.pure or self._stale(source, os.path.join(folder, leaf)):
                    return importlib.util.spec_from_file_location(name, source)
                return None
        return None

    @staticmethod
    def _stale(source: str, stem: str) -> bool:
        builds = [stem + suffix for suffix in importlib.machinery.EXTENSION_SUFFIXES
                  if os.path.isfile(stem + suffix)]
        if not builds or os.path.getmtime(source) <= os.path.getmtime(builds[0]):
            return False
        warnings.warn(f"{source} changed after it was compiled: it runs interpreted until "
                      "`make` (or `pip install -e .`) rebuilds it", RuntimeWarning, stacklevel=2)
        return True


if PURE_PYTHON.get() or _CHECKOUT:
    sys.meta_path.insert(0, _Sources(PURE_PYTHON.get()))


def fast(kind: str, function: Callable[..., Any], results: dict[Any, Any],
         general: Callable[..., Any] | None = None, **options: Any) -> Callable[..., Any]:
    """A namespace function: the pure-Python `function` without the speedups; with them, the
    compiled `kind` ("Operation", "Reduction" or "Creation") with the CPU fast path in front of
    `general` (by default `function` itself), carrying `function`'s name, docstring, module and
    signature, and `function` itself as `__wrapped__` (for `inspect` and IDEs); `.fallback` is
    the general path. `results` maps each operand dtype the fast path takes to the result's
    dtype. An Operation hands calls that do not match its arity, or pass keywords, to
    `function`, so they fail as the Python function's signature says."""
    if speedups is None:
        return function
    if kind == "Operation":
        options["reference"] = function
    compiled = getattr(speedups, kind)(function.__name__, results, general or function,
                                       **options)
    compiled.__name__ = compiled.__qualname__ = function.__name__
    compiled.__doc__, compiled.__module__ = function.__doc__, function.__module__
    compiled.__signature__ = inspect.signature(function)
    compiled.__wrapped__ = function
    return compiled
