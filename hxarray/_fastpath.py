"""The CPU fast path of the reductions (`sum`, `prod`, `mean`, `max`, `min`), compiled by Cython
from this source (setup.py's `COMPILED`; `_fastpath.pxd` gives the C types) where the speedups
are built (`_compiled.fast_reduction` puts a `Reduction` in front of each namespace function),
not imported without them.

A `Reduction` takes the common call, one CPU array below the threading threshold with `axis`
and `keepdims` and no `dtype`, outside hooks and memory scopes, and runs the CPU backend's
`reduce_into` into a fresh array from the caching allocator, as the backend would; any other
call goes to the namespace function (`.fallback`), which is the reference and raises the errors.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

from ._numpy_kernels import QUIET_STATE, errstate_var, quiet
from .hal.allocator import MemoryBuffer
from .hal.hooks import observers
from .hal.sources import compiled

__all__ = ["Reduction", "bind_cpu"]

_REDUCTIONS: list[Reduction] = []  # every Reduction, to bind the kernel to

# What `bind_cpu` binds: the array type, the CPU's device, its fresh-array allocation, the
# largest reduction that runs on the calling thread.
_array_type: Any = None
_cpu_device: Any = None
_fresh: Any = None
_limit = 0


class Reduction:
    """sum, prod, mean, max or min with the CPU fast path in front of the namespace function
    `fallback`: its kernel runs `reduction` (an `_ops.Reduction`), then, with `then`, that
    element-wise operation with the count (mean: the sum divided by it); `nonempty`: an empty
    selection goes to `fallback` (max, min: an error; mean: NaN); with the ContextVar `strict`,
    the kernel's positive_zero is True where strict mode is off (numpy mode's sums start from
    +0). `results` maps each operand dtype the fast path takes to the result's dtype; while a
    hook is installed every call goes to `observe(name, fallback, *args, **kwargs)`, the
    operation point."""

    def __init__(self, name: str, results: dict[Any, Any], fallback: Callable[..., Any],
                 observe: Callable[..., Any], *, reduction: Any, then: Any = None,
                 nonempty: bool = False,
                 strict: contextvars.ContextVar[bool] | None = None) -> None:
        self.name = name
        self.results = dict(results)
        self.fallback = fallback
        self._observe = observe
        self.kernel: Any = None  # bound by `bind_cpu` where the CPU backend's kernel serves
        self._reduction = reduction
        self._then = then
        self._nonempty = nonempty
        self._strict = strict
        _REDUCTIONS.append(self)

    def __repr__(self) -> str:
        return f"<hxarray function {self.name}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if observers:  # hooks observe the general path
            return self._observe(self.name, self.fallback, *args, **kwargs)
        if len(args) == 1 and self.kernel is not None:
            result = self._fast(args[0], kwargs)
            if result is not None:
                return result
        return self.fallback(*args, **kwargs)

    def _fast(self, x: Any, options: dict[str, Any]) -> Any:
        """The result, or None where the general path must run."""
        if type(x) is not _array_type:
            return None
        array = x  # (compiled: x's C fields, _fastpath.pxd)
        if type(array._buffer) is not MemoryBuffer:
            return None
        buffer = array._buffer
        if array._handle is None or buffer.device is not _cpu_device:
            return None
        axis, keepdims = None, False
        for key, value in options.items():
            if key == "axis":
                axis = value
            elif key == "keepdims" and (value is True or value is False):
                keepdims = value
            elif key != "dtype" or value is not None:
                return None
        dtype = self.results.get(array._dtype)
        if dtype is None:
            return None
        shape = array._shape
        ndim = len(shape)
        reduced = _reduced(axis, ndim)
        if reduced < 0:
            return None
        size = 1
        result_shape = []
        axes = []
        for i in range(ndim):
            n = shape[i]
            size *= n
            if not reduced >> i & 1:
                result_shape.append(n)
                continue
            if n == 0 and self._nonempty:
                return None
            if keepdims:
                result_shape.append(1)
            axes.append(i)
        if size >= _limit:
            return None
        out = _fresh(tuple(result_shape), dtype)  # (None inside a memory scope)
        if out is None:
            return None
        strict = self._strict
        positive_zero = strict is not None and not strict.get()
        if axis is not None:
            axis = tuple(axes)
        global _quiet_entered
        if _quiet_entered:  # (the arguments spelled out: a call with *args costs a tuple more)
            with quiet():
                self.kernel(self._reduction, array._handle, axis, keepdims, out._handle,
                            positive_zero, self._then)
            return out
        _quiet_entered = True
        try:
            _run_quietly(self.kernel, self._reduction, array._handle, axis, keepdims,
                         out._handle, positive_zero, self._then)
        finally:
            _quiet_entered = False
        return out


def _reduced(axis: Any, ndim: int) -> int:
    """The axes `axis` (None, an int or a tuple of ints) selects of `ndim`, as a bit mask; -1
    where the general path must judge it (out of range, repeated, not ints, or more than 62
    dimensions, which the mask does not hold)."""
    if ndim > 62:
        return -1
    if axis is None:
        every = 1  # (shifts of typed variables: compiled, a literal 1 is a 32-bit C int)
        return (every << ndim) - 1
    items = axis if type(axis) is tuple else (axis,)
    reduced = 0
    for item in items:
        if type(item) is not int:
            return -1
        try:
            index = item
        except OverflowError:  # (compiled: an int beyond a C integer)
            return -1
        if not -ndim <= index < ndim:
            return -1
        bit = 1
        bit <<= index + ndim if index < 0 else index
        if reduced & bit:
            return -1
        reduced |= bit
    return reduced


# numpy's floating-point warnings are silenced by running the kernel in a context that holds
# numpy's quiet error state (entering it is a pointer swap, where setting the variable allocates
# a mapping and a token). A context is entered by one call at a time: a call that finds it
# entered (by another thread, while the kernel let go of the GIL, or re-entered) sets the
# variable instead (`quiet`). Compiled, reading and setting `_quiet_entered` run no Python code
# between them, so the GIL makes the pair atomic; interpreted they do not, and every call sets
# the variable.
_quiet_context = contextvars.Context()
if errstate_var is not None:
    _quiet_context.run(errstate_var.set, QUIET_STATE)
_run_quietly = _quiet_context.run  # (bound once: a method lookup per call costs ~40 ns)
_quiet_entered = not compiled(__file__)


def bind_cpu(array_type: type, device: Any, fresh: Callable[..., Any],
             reduce: Callable[..., None], reducible: frozenset[Any], limit: int) -> None:
    """Enable the fast path for arrays of exactly `array_type` on the CPU `device`:
    `fresh(shape, dtype)` makes the result (None where Python must run), `reduce` is the kernel
    of the reductions in `reducible`, and reductions of `limit` elements or more take the
    general path."""
    global _array_type, _cpu_device, _fresh, _limit
    for reduction in _REDUCTIONS:
        reduction.kernel = reduce if reduction._reduction in reducible else None
    _array_type, _cpu_device, _fresh, _limit = array_type, device, fresh, limit
