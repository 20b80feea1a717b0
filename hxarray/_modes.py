"""The two behaviours where the standard is silent: numpy's (the default) and strict.

In strict mode every case the standard leaves unspecified raises (promotion across kinds, integer
input to floating-point functions, positional forms of keyword-only parameters, numpy dtypes, numpy
protocols), as array-api-strict does. By default hxarray does what numpy 2 does there; see
docs/modes.md for every place the two differ.

The mode is a context variable: `set_strict` changes it for the current thread (or asyncio task),
like numpy's error state, and `HXARRAY_STRICT=1` sets the default of every thread. Nothing on the
hot paths reads it: a namespace function states the standard and raises `Unspecified` where the
standard leaves a case open; only then does its adapter (`adapted`) read the mode, and numpy mode's
rules (`_numpy_mode`, one registry of every place the modes differ) take over.
"""

from __future__ import annotations

import contextvars
from types import TracebackType

from .hal.settings import STRICT as STRICT_SETTING

__all__ = ["is_strict", "set_strict"]


_DEFAULT = STRICT_SETTING.get()  # read once, at import
STRICT: contextvars.ContextVar[bool] = contextvars.ContextVar("hxarray_strict", default=_DEFAULT)
is_strict = STRICT.get  # is_strict() -> bool: whether the current context runs in strict mode


def positive_zero_sums() -> bool:
    """Whether a floating-point sum (sum, mean) starts from +0 here: in numpy mode, as numpy's
    sums do; in strict mode it starts from -0, as the standard's successive additions do, so that
    a sum of zeros that are all -0 is -0 (`Backend.reduce`'s `positive_zero`). The namespace and
    the compiled fast path both ask this."""
    return not STRICT.get()


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


class Unspecified(Exception):
    """A case the standard leaves unspecified, raised where the namespace's own check finds it, in
    both modes, as the exception strict mode raises (`UnspecifiedType`: a TypeError,
    `UnspecifiedOverflow`: an OverflowError; the message is formatted only if it is read). The
    function's adapter (`adapted`) hands it, outside strict mode, to numpy mode's rule."""

    def __str__(self) -> str:
        message, *args = self.args or ("",)
        return message.format(*args) if args else message


class UnspecifiedType(Unspecified, TypeError):
    """An operand type, dtype or form the standard does not define (strict mode's TypeError)."""


class UnspecifiedOverflow(Unspecified, OverflowError):
    """A Python int beyond an integer array's dtype (strict mode's OverflowError)."""
