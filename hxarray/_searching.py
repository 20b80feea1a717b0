"""Searching functions (spec: "Searching Functions")."""

from __future__ import annotations

import builtins
import inspect
from typing import Any

from . import _dtypes as dt
from . import _views
from ._adapter import adapted
from ._array import Array
from ._checks import (
    as_bool,
    check_array,
    check_dtype,
    check_ordered,
    normalize_axes,
    normalize_axis,
)
from ._elementwise import _check_scalar, scalar_operand
from ._modes import UnspecifiedType
from ._observed import fast
from ._ops import ARG_REDUCTIONS, OPS, REDUCTIONS, ArgReduction
from ._statistical import reduce_axes
from ._views import broadcast_shapes

__all__ = ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"]


def _arg_extremum(op: ArgReduction, x: Array, axis: int | None, keepdims: builtins.bool
                  ) -> Array:
    name = op.name
    check_array(x, name)
    x = check_ordered(x, name)
    keepdims = as_bool(keepdims, name, "keepdims")
    axis = arg_extremum_axis(name, x, axis)
    axes = tuple(range(x.ndim)) if axis is None else (axis,)
    backend = x._buffer.device.backend
    out = backend.empty(tuple(n for i, n in enumerate(x._shape) if i not in axes), dt.int64,
                        x._buffer.device)
    backend.arg_reduce(op, x, axis, out)
    return _views.expand(out, axes) if keepdims else out


def arg_extremum_axis(name: str, x: Array, axis: Any) -> int | None:
    """The normalised axis of argmax or argmin (`name`) of x; ValueError where it selects
    nothing."""
    if axis is not None:
        axis = normalize_axis(axis, x.ndim, name)
    if (x.size if axis is None else x._shape[axis]) == 0:
        raise ValueError(f"{name}() of an empty selection has no value")
    return axis


@adapted
def argmax(x: Array, /, *, axis: int | None = None, keepdims: builtins.bool = False) -> Array:
    """Indices of the first maximum along `axis` (of the flattened x if None)
    (spec: searching_functions/argmax)."""
    return _arg_extremum(ARG_REDUCTIONS["argmax"], x, axis, keepdims)


@adapted
def argmin(x: Array, /, *, axis: int | None = None, keepdims: builtins.bool = False) -> Array:
    """Indices of the first minimum along `axis` (of the flattened x if None)
    (spec: searching_functions/argmin)."""
    return _arg_extremum(ARG_REDUCTIONS["argmin"], x, axis, keepdims)


@adapted
def count_nonzero(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
                  keepdims: builtins.bool = False) -> Array:
    """The number of nonzero elements along `axis` (spec: searching_functions/count_nonzero)."""
    check_array(x, "count_nonzero")
    axes = normalize_axes(axis, x.ndim, "count_nonzero")
    keepdims = as_bool(keepdims, "count_nonzero", "keepdims")
    zero = False if x._dtype is dt.bool else 0
    not_equal = OPS["not_equal"]
    nonzero = x._buffer.device.backend.elementwise(
        not_equal, (x, zero), not_equal.signature(x._dtype, x._dtype), x._shape)
    return reduce_axes(REDUCTIONS["sum"], nonzero, axes, keepdims, dt.int64)


def nonzero(x: Array, /) -> tuple[Array, ...]:
    """The indices of the nonzero elements, one array per axis
    (spec: searching_functions/nonzero)."""
    check_array(x, "nonzero")
    if x.ndim == 0:
        raise ValueError("nonzero() of a 0-D array is not allowed; use x[None] or bool(x)")
    return x._buffer.device.backend.nonzero(x)


@adapted
def searchsorted(x1: Array, x2: Array | int | float, /, *, side: str = "left",
                 sorter: Array | None = None) -> Array:
    """Indices at which inserting x2 would keep the 1-D x1 sorted, before equal elements with
    `side="left"`, after them with "right"; `sorter` sorts x1 first
    (spec: searching_functions/searchsorted)."""
    check_array(x1, "searchsorted", "x1")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted(): x1 must be 1-D, got {x1.ndim}-D")
    x1 = check_dtype(x1, "real-valued", "searchsorted")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted(): side must be 'left' or 'right', got {side!r}")
    backend = x1._buffer.device.backend
    device = x1._buffer.device
    if type(x2) is Array and x2._buffer.device is not device:
        raise ValueError(f"searchsorted(): x2 is on {x2.device}, x1 on {x1.device}")
    if type(x2) is not Array:
        x2 = backend.full((), _check_scalar("searchsorted", x2, x1._dtype), x1._dtype, device)
    dtype = dt.promote(x1._dtype, x2._dtype)
    if sorter is not None:
        check_array(sorter, "searchsorted", "sorter")
        if sorter._dtype not in dt.INTEGER or sorter._shape != x1._shape:
            raise ValueError("searchsorted(): sorter must be an integer array shaped like x1")
        if sorter._buffer.device is not device:
            raise ValueError(f"searchsorted(): sorter is on {sorter.device}, x1 on {x1.device}")
        sorted_x1 = backend.empty(x1._shape, dtype, device)
        backend.gather(x1, 0, (sorter,), sorted_x1)
        x1 = sorted_x1
    x1, x2 = (a if a._dtype is dtype else backend.copy(a, dtype) for a in (x1, x2))
    out = backend.empty(x2._shape, dt.int64, device)
    backend.searchsorted(x1, x2, side, out)
    return out


_WHERE = OPS["where"]


class _Missing:
    """The default of where()'s x1 and x2, so that numpy mode can take numpy's where(condition)."""

    def __repr__(self) -> str:
        return "<required>"


_MISSING = _Missing()


def _where(condition: Array, x1: Array | Any = _MISSING, x2: Array | Any = _MISSING) -> Array:
    if x1 is _MISSING or x2 is _MISSING:
        missing = [repr(n) for n, v in (("x1", x1), ("x2", x2)) if v is _MISSING]
        error = UnspecifiedType if x1 is x2 else TypeError  # numpy's where(condition)
        raise error(f"where() missing {len(missing)} required positional argument"
                    f"{'s' * (len(missing) > 1)}: {' and '.join(missing)}")
    check_array(condition, "where", "condition")
    if condition._dtype is not dt.bool:
        raise UnspecifiedType(f"where(): condition must be a boolean array, got "
                              f"{condition._dtype.name}")
    arrays = [a for a in (x1, x2) if type(a) is Array]
    if not arrays:
        raise UnspecifiedType("where(): at least one of x1 and x2 must be an array")
    for a in arrays:
        if a._buffer.device is not condition._buffer.device:
            raise ValueError(f"where(): arrays are on different devices ({condition.device} "
                             f"and {a.device})")
    dtype = dt.result_type_of(*(a._dtype for a in arrays))
    operands = []
    for a in (x1, x2):
        if type(a) is not Array:
            a, dtype = scalar_operand("where", a, dtype)
        operands.append(a)
    shape = broadcast_shapes(condition._shape, *(a._shape for a in arrays))
    y1, y2 = operands
    signature = _WHERE.signature(dt.bool, y1._dtype if type(y1) is Array else dtype,
                                 y2._dtype if type(y2) is Array else dtype)
    return condition._buffer.device.backend.elementwise(_WHERE, (condition, y1, y2), signature,
                                                        shape)


_general_where = adapted(_where, "where")


def where(condition: Array, x1: Array | Any = _MISSING, x2: Array | Any = _MISSING, /) -> Array:
    """Elements of x1 where condition is true, else of x2; one of x1/x2 may be a Python scalar.
    numpy mode also takes numpy's `where(condition)`, which is `nonzero(condition)`."""
    return _general_where(condition, x1, x2)


# what `hxarray.where` shows: the standard's signature (the defaults are numpy mode's)
WHERE_SIGNATURE = inspect.signature(where).replace(parameters=[
    p.replace(default=p.empty) for p in inspect.signature(where).parameters.values()])

where = fast(where, {d: (_WHERE, _WHERE.signature(dt.bool, d, d)) for d in dt.ALL_DTYPES},
             _general_where, arity=3, condition=True)
