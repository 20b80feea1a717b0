"""The one point where a namespace call consults the mode: `adapted` wraps each namespace function
so that a case the standard leaves open (`_modes.Unspecified`, raised by the chapter's own check)
goes to numpy mode's rule in `_numpy_mode`, outside strict mode. Part of the namespace layer, as
`_numpy_mode` is (whose rules call the chapters back through the package)."""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from . import _numpy_mode
from ._modes import STRICT, Unspecified
from ._observed import observe_operation
from .hal.hooks import observers

F = TypeVar("F", bound=Callable[..., Any])


def adapted(function: F, name: str | None = None, *, operation: str | None = None) -> F:
    """`function` as the namespace exports it: with numpy mode's rule for the cases the standard
    leaves open (the one point where a call consults the mode). A call the standard defines runs
    `function` and nothing else: no mode is read. Where `function` raises `Unspecified`, strict
    mode lets it through and numpy mode calls the rule `_numpy_mode.RULES[name]` (by default the
    function's public name: `sum`, `linalg.solve`, `Array.__iadd__`) with the exception and the
    call's arguments. Positional arguments beyond the function's own are numpy's positional
    forms of its keyword-only parameters (`sum(x, 0)`): numpy mode maps them to keywords as
    `_numpy_mode.POSITIONAL[name]` says; strict mode leaves them to Python's own TypeError.
    With `operation`, the same wrapper is also the hooks' operation point of that name
    (`_observed.operation`): one call in front of `function`, not two."""
    name = name or _public_name(function)
    parameters = inspect.signature(function).parameters.values()
    positional = sys.maxsize if any(p.kind is p.VAR_POSITIONAL for p in parameters) else \
        sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)
    unobserved = None if operation is None else adapted(function, name)
    point = operation or name

    @functools.wraps(function)
    def adapter(*args: Any, **kwargs: Any) -> Any:
        if unobserved is not None and observers:
            return observe_operation(point, unobserved, *args, **kwargs)
        if len(args) > positional and not STRICT.get():
            args, kwargs = _numpy_mode.numpy_keywords(name, positional, args, kwargs)
        try:
            return function(*args, **kwargs)
        except Unspecified as case:
            if STRICT.get():
                raise
            return _numpy_mode.apply(name, case, args, kwargs)

    # `_observed.operation` asks for the wrapper that is also the operation point
    adapter.observed_as = lambda point: adapted(function, name, operation=point)  # type: ignore[attr-defined]
    return adapter  # type: ignore[return-value]


def _public_name(function: Callable[..., Any]) -> str:
    """`sum`, `linalg.solve`, `Array.__bool__`: a namespace function's name as users write it."""
    module = function.__module__.rpartition(".")[2]
    return f"{module}.{function.__qualname__}" if module in ("linalg", "fft") else \
        function.__qualname__
