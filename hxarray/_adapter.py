"""The one point where a namespace call consults the mode: `adapted` wraps each namespace function
so that a case the standard leaves open (`_modes.Unspecified`, raised by the chapter's own check)
goes to numpy mode's rule in `_numpy_mode`, outside strict mode. Part of the namespace layer, below
the chapters, which wrap their functions with it; numpy mode sits on top of them (its rules call
the chapters back), so this module does not import it: `_numpy_mode` hands its rules down when it
is imported (`use_numpy_mode`, from `hxarray/__init__`), as the backend layer installs the HAL's
registry."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from ._forwarding import forwarding
from ._modes import STRICT, Unspecified
from ._observed import observe_operation
from .hal.hooks import observers

F = TypeVar("F", bound=Callable[..., Any])

# numpy mode's two entry points (`_numpy_mode.apply`, `_numpy_mode.numpy_keywords`), handed down by
# `use_numpy_mode` when `_numpy_mode` is imported, which `hxarray/__init__` does.
_apply: Callable[..., Any] | None = None
_numpy_keywords: Callable[..., tuple[tuple[Any, ...], dict[str, Any]]] | None = None


def use_numpy_mode(apply: Callable[..., Any],
                   numpy_keywords: Callable[..., tuple[tuple[Any, ...], dict[str, Any]]]) -> None:
    """Consult numpy mode's rules (`apply(name, case, args, kwargs)`) and positional forms
    (`numpy_keywords(name, standard, args, kwargs)`) outside strict mode."""
    global _apply, _numpy_keywords
    _apply, _numpy_keywords = apply, numpy_keywords


def _numpy_mode_missing() -> RuntimeError:
    return RuntimeError("numpy mode's rules are not installed: import hxarray (which imports "
                        "hxarray._numpy_mode) before calling the namespace")


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
        if _apply is None:
            raise _numpy_mode_missing() from case
        return _apply(name, case, *given(args, kwargs))

    def numpy_positional(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A call with positional arguments beyond the function's own: numpy's forms of its
        keywords, or (strict mode) the TypeError Python would raise."""
        if STRICT.get():  # Python's words, compiled or not
            least = sum(default is inspect.Parameter.empty for default in leading)
            takes = least if least == len(leading) else f"from {least} to {len(leading)}"
            raise TypeError(f"{name}() takes {takes} positional argument"
                            f"{'' if len(leading) == 1 else 's'} but {len(args)} were given")
        if _numpy_keywords is None:
            raise _numpy_mode_missing()
        args, kwargs = _numpy_keywords(name, len(leading), *given(args, kwargs))
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
