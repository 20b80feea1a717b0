"""The hand-written speedups (hxarray/_speedups.c), or None: absent where the extension was not
built (no C compiler at install time), with HXARRAY_PURE_PYTHON=1, or where the HAL's memory
types (hal/allocator.py), which they use, run from their Python source (`hxarray.hal.sources`).
With them, `fastpath` is the reductions' fast path (`_fastpath`, whose build reads the array's
C fields, so it is imported only here). Without them every namespace function is its Python
source.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .hal import allocator, hooks
from .hal.sources import compiled

speedups: ModuleType | None = None
if compiled(allocator.__file__):  # the speedups read the layout of its types
    try:
        speedups = importlib.import_module("hxarray._speedups")
    except ImportError:  # pragma: no cover - installs without a C compiler
        speedups = None
if speedups is not None:  # the fast path takes the general path while a hook is installed
    speedups.bind_hooks(hooks.observers)
fastpath: ModuleType | None = None if speedups is None else \
    importlib.import_module("hxarray._fastpath")


def dressed(compiled: Any, function: Callable[..., Any]) -> Any:
    """`compiled`, a compiled namespace function, carrying `function`'s name, docstring, module
    and signature, and `function` itself as `__wrapped__` (for `inspect` and IDEs)."""
    compiled.__name__ = compiled.__qualname__ = function.__name__
    compiled.__doc__, compiled.__module__ = function.__doc__, function.__module__
    compiled.__signature__ = inspect.signature(function)
    compiled.__wrapped__ = function
    return compiled


def fast(function: Callable[..., Any], results: dict[Any, Any],
         general: Callable[..., Any] | None = None, **options: Any) -> Callable[..., Any]:
    """An element-wise namespace function (or `where`): the pure-Python `function` without the
    speedups; with them, the compiled `Operation` with the CPU fast path in front of `general`
    (by default `function` itself), dressed as `function`; `.fallback` is the general path.
    `results` maps each operand dtype the fast path takes to the result's dtype. Calls that do
    not match its arity, or pass keywords, go to `function`, so they fail as the Python
    function's signature says."""
    if speedups is None:
        return function
    return dressed(speedups.Operation(function.__name__, results, general or function,
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
