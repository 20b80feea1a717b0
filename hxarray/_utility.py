"""Utility functions (spec: "Utility Functions")."""

from __future__ import annotations

import builtins
from typing import Any

from . import _dtypes as dt
from . import _views
from ._adapter import adapted
from ._array import Array
from ._checks import as_int, check_array, check_dtype, normalize_axis
from ._manipulation import concat
from ._modes import UnspecifiedType
from ._ops import OPS, REDUCTIONS
from ._statistical import reduce

__all__ = ["all", "any", "diff"]


@adapted
def all(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
        keepdims: builtins.bool = False) -> Array:
    """Whether every element along `axis` is true (spec: utility_functions/all)."""
    check_array(x, "all")
    return reduce(REDUCTIONS["all"], x, axis, keepdims, dt.bool)


@adapted
def any(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
        keepdims: builtins.bool = False) -> Array:
    """Whether any element along `axis` is true (spec: utility_functions/any)."""
    check_array(x, "any")
    return reduce(REDUCTIONS["any"], x, axis, keepdims, dt.bool)


@adapted
def diff(x: Array, /, *, axis: int = -1, n: int = 1, prepend: Array | None = None,
         append: Array | None = None) -> Array:
    """The n-th forward difference along `axis`, with `prepend` and `append` joined to x first
    (spec: utility_functions/diff)."""
    check_array(x, "diff")
    if x._dtype is dt.bool:
        raise UnspecifiedType("diff() requires an array of numeric dtype, got bool")
    return differences(check_dtype(x, "numeric", "diff"), axis, n, prepend, append)


def differences(x: Array, axis: Any, n: Any, prepend: Array | None, append: Array | None
                ) -> Array:
    """diff of `x` of any dtype (a bool array's difference is "not equal", as numpy's); prepend
    and append of another kind than x's are Unspecified."""
    if x.ndim == 0:
        raise ValueError("diff(): x must have at least one dimension")
    n = as_int(n, "diff", "n")
    if n < 0:
        raise ValueError(f"diff(): n must be non-negative, got {n}")
    axis = normalize_axis(axis, x.ndim, "diff")
    dtype = x._dtype
    pieces = [x]
    for name, other in (("prepend", prepend), ("append", append)):
        if other is None:
            continue
        check_array(other, "diff", name)
        if other._buffer.device is not x._buffer.device:
            raise ValueError(f"diff(): {name} is on {other.device}, x on {x.device}")
        if other.ndim != x.ndim or builtins.any(a != b for i, (a, b) in
                                       enumerate(zip(other._shape, x._shape)) if i != axis):
            raise ValueError(f"diff(): {name} of shape {other._shape} does not match x's shape "
                             f"{x._shape} off axis {axis}")
        dtype = dt.promote(dtype, other._dtype)
        pieces.insert(0 if name == "prepend" else len(pieces), other)
    backend = x._buffer.device.backend
    if len(pieces) > 1:
        x = concat(pieces, axis=axis)
    elif n == 0:
        return backend.copy(x)
    operation = OPS["not_equal" if dtype is dt.bool else "subtract"]
    signature = operation.signature(x._dtype, x._dtype)
    # n differences, each one element shorter than the last: after the length reaches 0 the
    # result stays empty, so at most `length` steps run whatever n is.
    for _ in range(builtins.min(n, x._shape[axis])):
        length = x._shape[axis] - 1
        x = backend.elementwise(operation, (_views.slice_axis(x, axis, 1, length + 1),
                                             _views.slice_axis(x, axis, 0, length)),
                                signature, x._shape[:axis] + (length,) + x._shape[axis + 1:])
    return x
