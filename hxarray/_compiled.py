"""The hand-written speedups (hxarray/_speedups.c: the Array's base type and operator slots) and
the CPU fast path (`fastpath`: hxarray/_fastpath.py, compiled), or None: absent where the
extension was not built (no C compiler at install time), with HXARRAY_PURE_PYTHON=1, or where a
module they need runs from its Python source (`hxarray.hal.sources`): the HAL's memory types
(hal/allocator.py), the fast path, or the Array (_array.py, whose constructor sets the C fields).
The fast path's build reads the array's C fields, so it is imported only here. Without them every
namespace function is its Python source.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .hal import allocator
from .hal.sources import compiled

speedups: ModuleType | None = None
fastpath: ModuleType | None = None
if compiled(allocator.__file__):  # the speedups read the layout of its types
    try:
        speedups = importlib.import_module("hxarray._speedups")
        fastpath = importlib.import_module("hxarray._fastpath")
    except ImportError:  # pragma: no cover - installs without a C compiler
        speedups = fastpath = None
    # an edit not compiled: the fast path, or the Array's constructor (_array.py)
    array = importlib.util.find_spec("hxarray._array")
    if fastpath is not None and not (compiled(str(fastpath.__file__)) and array is not None and
                                     compiled(str(array.origin))):
        speedups = fastpath = None


def dressed(compiled: Any, function: Callable[..., Any]) -> Any:
    """`compiled`, a compiled namespace function, carrying `function`'s name, docstring, module
    and signature, and `function` itself as `__wrapped__` (for `inspect` and IDEs)."""
    compiled.__name__ = compiled.__qualname__ = function.__name__
    package, _, module = function.__module__.rpartition(".")
    # the module users import it from: `hxarray` for a chapter's (`hxarray._statistical`)
    compiled.__doc__ = function.__doc__
    compiled.__module__ = package if module.startswith("_") else function.__module__
    compiled.__signature__ = inspect.signature(function)
    compiled.__wrapped__ = function
    return compiled


def fast(function: Callable[..., Any], results: dict[Any, Any], observe: Callable[..., Any],
         general: Callable[..., Any] | None = None, **options: Any) -> Callable[..., Any]:
    """An element-wise namespace function (or `where`): the pure-Python `function` without the
    speedups; with them, a `_fastpath.Operation` with the CPU fast path in front of `general`
    (by default `function` itself), dressed as `function`; `.fallback` is the general path.
    `results` maps each operand dtype the fast path takes to the result's dtype; `observe` is
    the operation point. Calls that do not match its arity, or pass keywords, go to `function`,
    so they fail as the Python function's signature says."""
    if fastpath is None:
        return function
    return dressed(fastpath.Operation(function.__name__, results, general or function, observe,
                                      reference=function, **options), function)


def fast_reduction(function: Callable[..., Any], results: dict[Any, Any],
                   observe: Callable[..., Any], **options: Any) -> Callable[..., Any]:
    """A namespace reduction: `function` itself without the speedups; with them, a
    `_fastpath.Reduction` in front of it (`options`: its keywords; `observe`: the operation
    point), dressed as `function`."""
    if fastpath is None:
        return function
    return dressed(fastpath.Reduction(function.__name__, results, function, observe,
                                      **options), function)
