"""The two behaviours where the standard is silent: numpy's (the default) and strict.

In strict mode every case the standard leaves unspecified raises (promotion across kinds, integer
input to floating-point functions, positional forms of keyword-only parameters, numpy dtypes, numpy
protocols), as array-api-strict does. By default hxarray does what numpy 2 does there; see
docs/modes.md for every place the two differ.

The mode is a context variable: `set_strict` changes it for the current thread (or asyncio task),
like numpy's error state, and `HXARRAY_STRICT=1` sets the default of every thread. Nothing on the
hot paths reads it: those take only inputs on which both modes agree, and the slower paths that
reach a case the standard leaves open ask `is_strict()` there.
"""

from __future__ import annotations

import contextvars
from types import TracebackType

from .hal.settings import STRICT as STRICT_SETTING

__all__ = ["is_strict", "set_strict"]


_DEFAULT = STRICT_SETTING.get()  # read once, at import
STRICT: contextvars.ContextVar[bool] = contextvars.ContextVar("hxarray_strict", default=_DEFAULT)
is_strict = STRICT.get  # is_strict() -> bool: whether the current context runs in strict mode


class set_strict:
    """Turn strict mode on (or off) for the current thread; as a context manager, only for the
    `with` block:

        hxarray.set_strict(True)          # from here on, in this thread
        with hxarray.set_strict(True):    # inside the block only
            ...
    """

    __slots__ = ("_token",)

    def __init__(self, strict: bool = True) -> None:
        if strict is not True and strict is not False:
            raise TypeError(f"set_strict() takes True or False, got {strict!r}")
        self._token = STRICT.set(strict)

    def __enter__(self) -> set_strict:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        STRICT.reset(self._token)

    def __repr__(self) -> str:
        return f"hxarray.set_strict({self._token.var.get()})"


class NumpyRule(TypeError):
    """Raised where the standard leaves a case unspecified and numpy mode has a rule for it: the
    caller catches it and applies numpy's behaviour. It carries strict mode's message (formatted
    only if it is read), so if it ever escapes it still reads as the TypeError strict mode
    raises."""

    def __str__(self) -> str:
        message, *args = self.args or ("",)
        return message.format(*args) if args else message


def unspecified(message: str, *args: object) -> NumpyRule | TypeError:
    """The exception for a case the standard leaves unspecified (`raise unspecified(...)`): a
    plain TypeError with `message.format(*args)` in strict mode, else a NumpyRule for the caller
    to catch (which formats the message only if it is ever shown)."""
    if STRICT.get():
        return TypeError(message.format(*args) if args else message)
    return NumpyRule(message, *args)
