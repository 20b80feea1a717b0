"""The hooks' operation point (`hxarray.hal.hooks`): each namespace function and array operator
a user calls is observed as an operation, with its device and arguments.

The hot functions (the element-wise functions, `where` and the reductions) run the CPU
backend's compiled executor first where it is built (`fast`, `fast_reduction`: an Operation or a
Reduction of backends/cpu/fastpath.py), which checks the hook list itself and calls
`observe_operation`; every other function gets a wrapper (`operation`) whose check, while no hook
is installed, is one read of that list: for a function with numpy mode's adapter
(`_adapter.adapted`), the adapter itself."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterable
from typing import Any

from ._forwarding import forwarding
from .backends.cpu.backend import fastpath
from .hal.device import Device, default_device
from .hal.hooks import device_of, observe, observers

_COMPILED: tuple[type, ...] = () if fastpath is None else (fastpath.Operation,
                                                           fastpath.Reduction)


def _device_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Device:
    """The device an operation runs on: its first array's, a Device argument, its `device=`,
    else the default device."""
    device = device_of((*args, *kwargs.values()))
    if device is not None:
        return device
    if kwargs.get("device") is not None:
        try:
            return Device(kwargs["device"])
        except (TypeError, ValueError):  # the call says what is wrong with it
            pass
    return default_device()


def observe_operation(name: str, function: Callable[..., Any], /, *args: Any,
                      **kwargs: Any) -> Any:
    """`function(*args, **kwargs)` observed as the operation `name`; the hooks' `detail`
    holds the call's `args` and `kwargs`."""
    return observe("operation", name, _device_of(args, kwargs),
                   {"args": args, "kwargs": kwargs}, function, *args, **kwargs)


# function -> its observed wrapper: a function exported by two modules is one object in both
_points: dict[Callable[..., Any], Callable[..., Any]] = {}


def operation(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` with the operation point (a compiled function has its own)."""
    if isinstance(function, _COMPILED):
        return function
    known = _points.get(function)
    if known is not None:
        return known
    observed_as = getattr(function, "observed_as", None)
    if observed_as is not None:  # an adapter (`_adapter.adapted`): one wrapper, both points
        point = _points[function] = observed_as(name)
        return point
    point = _points[function] = forwarding(function, """
        if not _hx_observers:
            return _hx_function(CALL)
        return _hx_observe(_hx_name, _hx_function, *ARGS, **KWARGS)
    """, observers=observers, function=function, observe=observe_operation, name=name)
    return point


def observe_names(namespace: dict[str, Any], names: Iterable[str], prefix: str = "") -> None:
    """Give the functions `names` of a module's `namespace` the operation point, named
    `prefix + name` where the module defines them (a function it re-exports from the main
    namespace keeps its name there). Each pickles by reference, as numpy's functions do: as
    its own module's attribute, or where that is another object (the function a wrapper
    wraps), as this namespace's."""
    module = namespace["__name__"]
    for name in names:
        function = namespace[name]
        own = getattr(function, "__module__", None) == module
        point = namespace[name] = operation(prefix + name if own else name, function)
        home = sys.modules.get(getattr(point, "__module__", None) or "")
        if getattr(home, getattr(point, "__qualname__", ""), None) is not point:
            point.__module__, point.__qualname__ = module, name


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


def fast(function: Callable[..., Any], plans: dict[Any, Any],
         general: Callable[..., Any] | None = None, **options: Any) -> Callable[..., Any]:
    """An element-wise namespace function (or `where`): the pure-Python `function` without the
    compiled executor; with it, a `fastpath.Operation` in front of `general` (by default
    `function` itself), dressed as `function`; `.fallback` is the general path. `plans` maps each
    operand dtype the executor may take to the plan the namespace resolved for it,
    `(operation, signature)`. Calls that do not match its arity, or pass keywords, go to
    `function`, so they fail as the Python function's signature says."""
    if fastpath is None:
        return function
    return dressed(fastpath.Operation(function.__name__, plans, general or function,
                                      observe_operation, reference=function, **options),
                   function)


def fast_reduction(function: Callable[..., Any], results: dict[Any, Any],
                   **options: Any) -> Callable[..., Any]:
    """A namespace reduction: `function` itself without the compiled executor; with it, a
    `fastpath.Reduction` in front of it (`results`: the result's dtype for each operand dtype
    the executor may take; `options`: its keywords), dressed as `function`."""
    if fastpath is None:
        return function
    return dressed(fastpath.Reduction(function.__name__, results, function, observe_operation,
                                      **options), function)
