"""The one point where a namespace call consults the mode: `adapted` wraps each namespace function
so that a case the standard leaves open (`_modes.Unspecified`, raised by the chapter's own check)
goes to numpy mode's rule in `_numpy_mode`, outside strict mode. Part of the namespace layer, as
`_numpy_mode` is (whose rules call the chapters back through the package)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from . import _numpy_mode
from ._forwarding import forwarding
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
    `_numpy_mode.POSITIONAL[name]` says; strict mode raises Python's TypeError. With
    `operation`, the same wrapper is also the hooks' operation point of that name
    (`_observed.operation`): one call in front of `function`, not two. The wrapper takes
    `function`'s own parameters (`_forwarding`), so that a call's keywords reach `function`
    without a dict packed and unpacked on the way."""
    name = name or _public_name(function)
    parameters = inspect.signature(function).parameters.values()
    leading = [p.default for p in parameters if p.kind in (p.POSITIONAL_ONLY,
                                                          p.POSITIONAL_OR_KEYWORD)]
    defaults = {p.name: p.default for p in parameters if p.kind is p.KEYWORD_ONLY}
    point = operation or name
    unobserved: Callable[..., Any] = function if operation is None else adapted(function, name)

    def given(args: tuple[Any, ...], kwargs: dict[str, Any]
              ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The arguments as the caller gave them: those left at their defaults taken out."""
        count = len(args)
        while 0 < count <= len(leading) and args[count - 1] is leading[count - 1]:
            count -= 1
        return args[:count], {key: value for key, value in kwargs.items()
                              if value is not defaults.get(key, inspect.Parameter.empty)}

    def observed(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        args, kwargs = given(args, kwargs)
        return observe_operation(point, unobserved, *args, **kwargs)

    def unspecified(case: Unspecified, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if STRICT.get():
            raise case
        return _numpy_mode.apply(name, case, *given(args, kwargs))

    def numpy_positional(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A call with positional arguments beyond the function's own: numpy's forms of its
        keywords, or (strict mode) the TypeError Python would raise."""
        if STRICT.get():  # Python's words, compiled or not
            least = sum(default is inspect.Parameter.empty for default in leading)
            takes = least if least == len(leading) else f"from {least} to {len(leading)}"
            raise TypeError(f"{name}() takes {takes} positional argument"
                            f"{'' if len(leading) == 1 else 's'} but {len(args)} were given")
        args, kwargs = _numpy_mode.numpy_keywords(name, len(leading), *given(args, kwargs))
        try:
            return function(*args, **kwargs)
        except Unspecified as case:
            return unspecified(case, args, kwargs)

    adapter = forwarding(function, """
        if _hx_observed_point and _hx_observers:
            return _hx_observed(ARGS + _hx_extra, KWARGS)
        if _hx_extra:
            return _hx_numpy_positional(ARGS + _hx_extra, KWARGS)
        try:
            return _hx_function(CALL)
        except _hx_Unspecified as case:
            return _hx_unspecified(case, ARGS, KWARGS)
    """, surplus=True, observed_point=operation is not None, observers=observers,
        observed=observed, numpy_positional=numpy_positional, function=function,
        Unspecified=Unspecified, unspecified=unspecified)
    # `_observed.operation` asks for the wrapper that is also the operation point
    adapter.observed_as = lambda point: adapted(function, name, operation=point)  # type: ignore[attr-defined]
    return adapter  # type: ignore[return-value]


def _public_name(function: Callable[..., Any]) -> str:
    """`sum`, `linalg.solve`, `Array.__bool__`: a namespace function's name as users write it."""
    module = function.__module__.rpartition(".")[2]
    return f"{module}.{function.__qualname__}" if module in ("linalg", "fft") else \
        function.__qualname__
