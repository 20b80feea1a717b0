"""Utility functions (spec: "Utility Functions")."""

from __future__ import annotations

import builtins
import operator

from . import _dtypes as dt
from . import _numpy_mode as numpy_mode
from ._array import Array
from ._checks import check_array, check_dtype, normalize_axis
from ._modes import NumpyRule, is_strict
from ._numpy_mode import numpy_positional
from ._statistical import reduce

__all__ = ["all", "any", "diff"]


@numpy_positional("axis", "out", "keepdims")
def all(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
        keepdims: builtins.bool = False) -> Array:
    check_array(x, "all")
    return reduce("all", x, axis, keepdims, dt.bool)


@numpy_positional("axis", "out", "keepdims")
def any(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
        keepdims: builtins.bool = False) -> Array:
    check_array(x, "any")
    return reduce("any", x, axis, keepdims, dt.bool)


@numpy_positional("n", "axis", "prepend", "append")
def diff(x: Array, /, *, axis: int = -1, n: int = 1, prepend: Array | None = None,
         append: Array | None = None) -> Array:
    check_array(x, "diff")
    if x._dtype is not dt.bool or is_strict():
        x = check_dtype(x, "numeric", "diff")
    if x.ndim == 0:
        raise ValueError("diff(): x must have at least one dimension")
    if isinstance(n, builtins.bool):
        raise TypeError("diff(): n must be an int, got bool")
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"diff(): n must be non-negative, got {n}")
    axis = normalize_axis(axis, x.ndim, "diff")
    dtype = x._dtype
    extra = {}
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
        try:
            dtype = dt.promote(dtype, other._dtype)
        except NumpyRule:
            dtype = numpy_mode.result_type(dtype, other._dtype)
        extra[name] = other
    if not is_strict():
        x, extra = numpy_mode.cast(x, dtype), {k: numpy_mode.cast(v, dtype)
                                               for k, v in extra.items()}
        if dtype is dt.bool:
            return _bool_diff(x, axis, n, extra)
    return x._buffer.device.backend.reduce("diff", x, (axis,), False, dtype, n=n, **extra)


def _bool_diff(x: Array, axis: int, n: int, extra: dict[str, Array]) -> Array:
    """numpy's diff of booleans: n times, whether neighbours differ."""
    from ._elementwise import not_equal
    from ._indexing import basic_view
    from ._manipulation import concat

    if extra:
        x = concat([p for p in (extra.get("prepend"), x, extra.get("append")) if p is not None],
                   axis=axis)
    head = (slice(None),) * axis
    for _ in range(n):
        x = not_equal(basic_view(x, (*head, slice(1, None))),
                      basic_view(x, (*head, slice(None, -1))))
    return x
