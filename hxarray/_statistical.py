"""Statistical functions (spec: "Statistical Functions") and the reductions of "Utility
Functions" share one path: check, normalise axes, pick the result dtype, then `backend.reduce`."""

from __future__ import annotations

import builtins
from typing import Any

from . import _dtypes as dt
from ._array import Array
from ._checks import as_dtype, check_array, check_dtype, normalize_axes, normalize_axis
from ._compiled import fast
from ._numpy_mode import as_bool, numpy_positional

__all__ = ["cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var"]

_ACCUMULATOR = {**{d: dt.int64 for d in dt.SIGNED}, **{d: dt.uint64 for d in dt.UNSIGNED}}


def reduce(name: str, x: Array, axis: Any, keepdims: builtins.bool, dtype: dt.DType) -> Array:
    return x._buffer.device.backend.reduce(name, x, normalize_axes(axis, x.ndim, name), keepdims,
                                           dtype)


def _sum_dtype(x: Array, dtype: Any, function: str) -> dt.DType:
    """The spec's accumulator: the default integer of x's signedness for integers, else x's."""
    if dtype is None:
        return _ACCUMULATOR.get(x._dtype, x._dtype)
    dtype = as_dtype(dtype, function)
    if x._dtype in dt.COMPLEX_FLOATING and dtype not in dt.COMPLEX_FLOATING:
        raise TypeError(f"{function}(): accumulating complex input in {dtype.name} would discard "
                        "the imaginary part")
    return dtype


@numpy_positional("axis", "dtype", "out", "keepdims")
def sum(x: Array, /, *, axis: int | tuple[int, ...] | None = None, dtype: Any = None,
        keepdims: builtins.bool = False) -> Array:
    check_array(x, "sum")
    x = check_dtype(x, "numeric", "sum")
    return reduce("sum", x, axis, keepdims, _sum_dtype(x, dtype, "sum"))


@numpy_positional("axis", "dtype", "out", "keepdims")
def prod(x: Array, /, *, axis: int | tuple[int, ...] | None = None, dtype: Any = None,
         keepdims: builtins.bool = False) -> Array:
    check_array(x, "prod")
    x = check_dtype(x, "numeric", "prod")
    return reduce("prod", x, axis, keepdims, _sum_dtype(x, dtype, "prod"))


def _extremum(name: str, x: Array, axis: Any, keepdims: builtins.bool) -> Array:
    check_array(x, name)
    values = check_dtype(x, "real-valued", name)
    axes = normalize_axes(axis, x.ndim, name)
    if 0 in x._shape and any(x._shape[a] == 0 for a in axes):
        raise ValueError(f"{name}() of an empty selection has no value (the standard leaves "
                         "it undefined)")
    return as_bool(values._buffer.device.backend.reduce(name, values, axes, keepdims,
                                                        values._dtype), x)


@numpy_positional("axis", "out", "keepdims")
def max(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
        keepdims: builtins.bool = False) -> Array:
    return _extremum("max", x, axis, keepdims)


@numpy_positional("axis", "out", "keepdims")
def min(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
        keepdims: builtins.bool = False) -> Array:
    return _extremum("min", x, axis, keepdims)


@numpy_positional("axis")
def mean(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
         keepdims: builtins.bool = False) -> Array:
    check_array(x, "mean")
    x = check_dtype(x, "floating-point", "mean")
    return reduce("mean", x, axis, keepdims, x._dtype)


# The compiled fast path: one array below the threading threshold, `axis` and `keepdims` given or
# not, `dtype` None; the result dtypes are those of the functions above, for the dtypes they take.
_accumulated = {d: _ACCUMULATOR.get(d, d) for d in dt.CATEGORIES["numeric"]}
sum = fast("Reduction", sum, _accumulated)
prod = fast("Reduction", prod, _accumulated)
mean = fast("Reduction", mean, {d: d for d in dt.CATEGORIES["floating-point"]})
max = fast("Reduction", max, {d: d for d in dt.CATEGORIES["real-valued"]}, nonempty=True)
min = fast("Reduction", min, {d: d for d in dt.CATEGORIES["real-valued"]}, nonempty=True)


def _spread(name: str, x: Array, axis: Any, correction: int | float,
            keepdims: builtins.bool) -> Array:
    check_array(x, name)
    x = check_dtype(x, "real-valued floating-point", name)
    if not isinstance(correction, (int, float)) or correction < 0:
        raise ValueError(f"{name}(): correction must be a non-negative number, got {correction!r}")
    return x._buffer.device.backend.reduce(name, x, normalize_axes(axis, x.ndim, name), keepdims,
                                           x._dtype, correction=correction)


@numpy_positional("axis")
def var(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
        correction: int | float = 0.0, keepdims: builtins.bool = False) -> Array:
    return _spread("var", x, axis, correction, keepdims)


@numpy_positional("axis")
def std(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
        correction: int | float = 0.0, keepdims: builtins.bool = False) -> Array:
    return _spread("std", x, axis, correction, keepdims)


def _cumulative(name: str, x: Array, axis: int | None, dtype: Any,
                include_initial: builtins.bool) -> Array:
    check_array(x, name)
    x = check_dtype(x, "numeric", name)
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{name}(): axis is required for arrays with more than one "
                             "dimension")
        axis = 0
    if x.ndim == 0:
        raise ValueError(f"{name}(): x must have at least one dimension")
    axis = normalize_axis(axis, x.ndim, name)
    initial = 0 if name == "cumulative_sum" else 1
    return x._buffer.device.backend.reduce(
        name, x, (axis,), False, _sum_dtype(x, dtype, name), include_initial=include_initial,
        initial=initial)


def cumulative_sum(x: Array, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: builtins.bool = False) -> Array:
    return _cumulative("cumulative_sum", x, axis, dtype, include_initial)


def cumulative_prod(x: Array, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: builtins.bool = False) -> Array:
    return _cumulative("cumulative_prod", x, axis, dtype, include_initial)
