"""Statistical functions (spec: "Statistical Functions") and the reductions of "Utility
Functions" share one path: check, normalise axes, pick the result dtype and shape, then the
backend's `reduce` of the operation's object (`_ops.REDUCTIONS`) into a fresh array. `mean`,
`var` and `std` are compositions of reductions and element-wise operations, with the standard's
special cases (no elements, no degrees of freedom) decided here, once for every device."""

from __future__ import annotations

import builtins
import math
from typing import Any

from . import _dtypes as dt
from . import _views
from ._adapter import adapted
from ._array import Array
from ._checks import (
    as_bool,
    as_dtype,
    check_array,
    check_dtype,
    check_ordered,
    normalize_axes,
    normalize_axis,
)
from ._modes import positive_zero_sums
from ._numpy_conversions import back_to_bool
from ._observed import fast_reduction
from ._ops import OPS, REDUCTIONS, SCANS, Op, Reduction, Scan

# The operations mean, var and std are composed of.
_DIVIDE, _SQRT = OPS["divide"], OPS["sqrt"]
_SUM, _PROD, _MAX, _MIN = (REDUCTIONS[name] for name in ("sum", "prod", "max", "min"))
# mean: the sum (from +0 in numpy mode, as `sum`), each result then divided by the count, part by
# part (`_mean`; the CPU's compiled fast path runs the same two operations, given here).
_MEAN = (_SUM, _DIVIDE)

# The dtype category each function's check takes (`check_dtype`, `check_ordered`); the fast
# path's tables of result dtypes (`_results`) cover the same dtypes.
_CATEGORY = {"sum": "numeric", "prod": "numeric", "mean": "floating-point",
             "max": "real-valued", "min": "real-valued"}

__all__ = ["cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var"]


def reduce(op: Reduction, x: Array, axis: Any, keepdims: builtins.bool, dtype: dt.DType, *,
           positive_zero: builtins.bool = False) -> Array:
    """The reduction `op` of x over `axis` (None, int or tuple) into a new array of `dtype`."""
    return reduce_axes(op, x, normalize_axes(axis, x.ndim, op.name), keepdims, dtype,
                       positive_zero=positive_zero)


def reduce_axes(op: Reduction, x: Array, axes: tuple[int, ...], keepdims: builtins.bool,
                dtype: dt.DType, *, positive_zero: builtins.bool = False) -> Array:
    """`backend.reduce` over the normalised `axes` into a fresh array of the result's shape."""
    keepdims = as_bool(keepdims, op.name, "keepdims")
    backend = x._buffer.device.backend
    out = backend.empty(tuple(n for i, n in enumerate(x._shape) if i not in axes), dtype,
                        x._buffer.device)
    backend.reduce(op, x, axes, out, positive_zero=positive_zero)
    return _views.expand(out, axes) if keepdims else out


def _sum_dtype(op: Reduction, x_dtype: dt.DType, dtype: Any, function: str) -> dt.DType:
    """The dtype `function` (sum, prod or a scan, folding with `op`) accumulates an array of
    `x_dtype` in: the `dtype` asked for, else the spec's default (`op.accumulator`). With `dtype`
    None, the fast path's table of result dtypes (`_results`) is made by this function too."""
    if dtype is None:
        return op.accumulator(x_dtype)
    dtype = as_dtype(dtype, function)
    if x_dtype in dt.COMPLEX_FLOATING and dtype not in dt.COMPLEX_FLOATING:
        raise TypeError(f"{function}(): accumulating complex input in {dtype.name} would discard "
                        "the imaginary part")
    return dtype


@adapted
def sum(x: Array, /, *, axis: int | tuple[int, ...] | None = None, dtype: Any = None,
        keepdims: builtins.bool = False) -> Array:
    """The sum along `axis` (all axes if None) (spec: statistical_functions/sum). In numpy mode a
    sum starts from +0, as numpy's does; in strict mode from -0, so a sum of -0s is -0."""
    check_array(x, "sum")
    x = check_dtype(x, _CATEGORY["sum"], "sum")
    return reduce(_SUM, x, axis, keepdims, _sum_dtype(_SUM, x._dtype, dtype, "sum"),
                  positive_zero=positive_zero_sums())


@adapted
def prod(x: Array, /, *, axis: int | tuple[int, ...] | None = None, dtype: Any = None,
         keepdims: builtins.bool = False) -> Array:
    """The product along `axis` (all axes if None) (spec: statistical_functions/prod)."""
    check_array(x, "prod")
    x = check_dtype(x, _CATEGORY["prod"], "prod")
    return reduce(_PROD, x, axis, keepdims, _sum_dtype(_PROD, x._dtype, dtype, "prod"))


def _extremum(op: Reduction, x: Array, axis: Any, keepdims: builtins.bool) -> Array:
    check_array(x, op.name)
    values = check_ordered(x, op.name)
    axes = extremum_axes(op.name, x, axis)
    return back_to_bool(reduce_axes(op, values, axes, keepdims, values._dtype), x)


def extremum_axes(name: str, x: Array, axis: Any) -> tuple[int, ...]:
    """The normalised axes of max or min (`name`) of x; ValueError where they select nothing."""
    axes = normalize_axes(axis, x.ndim, name)
    if 0 in x._shape and any(x._shape[a] == 0 for a in axes):
        raise ValueError(f"{name}() of an empty selection has no value (the standard leaves "
                         "it undefined)")
    return axes


@adapted
def max(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
        keepdims: builtins.bool = False) -> Array:
    """The maximum along `axis` (all axes if None); an empty selection raises ValueError
    (spec: statistical_functions/max)."""
    return _extremum(_MAX, x, axis, keepdims)


@adapted
def min(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
        keepdims: builtins.bool = False) -> Array:
    """The minimum along `axis` (all axes if None); an empty selection raises ValueError
    (spec: statistical_functions/min)."""
    return _extremum(_MIN, x, axis, keepdims)


@adapted
def mean(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
         keepdims: builtins.bool = False) -> Array:
    """The arithmetic mean along `axis` (all axes if None); NaN for an empty selection
    (spec: statistical_functions/mean)."""
    check_array(x, "mean")
    x = check_dtype(x, _CATEGORY["mean"], "mean")
    keepdims = as_bool(keepdims, "mean", "keepdims")
    return _mean(x, normalize_axes(axis, x.ndim, "mean"), keepdims)


def _count(x: Array, axes: tuple[int, ...]) -> int:
    return math.prod(x._shape[a] for a in axes)


def _mean(x: Array, axes: tuple[int, ...], keepdims: builtins.bool) -> Array:
    """`_MEAN`: the sum (from +0 in numpy mode, as `sum`) divided by the count, complex parts
    divided separately (so that a NaN in one part stays there); NaN over no elements (spec:
    mean, "Special cases")."""
    count = _count(x, axes)
    if count == 0:
        return _undefined(x, axes, keepdims)
    reduction, then = _MEAN
    wide = dt.COMPUTES_IN.get(x._dtype)
    total = reduce_axes(reduction, x, axes, keepdims, wide or x._dtype,
                        positive_zero=positive_zero_sums())
    _in_place(then, total, count)
    return total if wide is None else total._buffer.device.backend.copy(total, x._dtype)


def _in_place(op: Op, x: Array, value: int | float) -> None:
    """x = op(x, value) (an element-wise operation: divide), part by part for complex x."""
    backend = x._buffer.device.backend
    for part in _views.parts(x):
        backend.elementwise(op, (part, value), op.signature(part._dtype, part._dtype),
                            part._shape, out=part)


def _undefined(x: Array, axes: tuple[int, ...], keepdims: builtins.bool) -> Array:
    """The all-NaN result of a statistic with nothing to average over."""
    shape = tuple(1 if i in axes else n for i, n in enumerate(x._shape)) if keepdims else \
        tuple(n for i, n in enumerate(x._shape) if i not in axes)
    nan = complex(math.nan, math.nan) if x._dtype in dt.COMPLEX_FLOATING else math.nan
    return x._buffer.device.backend.full(shape, nan, x._dtype, x._buffer.device)


def _results(name: str, op: Reduction | None = None) -> dict[dt.DType, dt.DType]:
    """The result dtype of the function `name` for each dtype its check takes (`_CATEGORY`):
    `_sum_dtype` of `op` without a dtype asked for, else the input's own (mean, max, min): the
    fast path's table."""
    return {d: d if op is None else _sum_dtype(op, d, None, name)
            for d in dt.CATEGORIES[_CATEGORY[name]]
            if name != "mean" or d not in dt.COMPUTES_IN}  # (those: `_mean` alone)


def _fast(function: Any, results: dict[dt.DType, dt.DType], **options: Any) -> Any:
    return fast_reduction(function, results, **options)


# The compiled fast path: one array below the threading threshold, `axis` and `keepdims` given or
# not, `dtype` None; the result dtypes are those of the functions above, for the dtypes they take
# (`_results`; max and min: the real-valued dtypes, which `check_ordered` passes as they are).
# The fast path's sums and means (`positive_zero=True`) start from +0 where
# `positive_zero_sums()` says (asked per call). A mean is `_MEAN`'s two operations; over no
# elements, `_mean`.
sum = _fast(sum, _results("sum", _SUM), reduction=_SUM, positive_zero=True)
prod = _fast(prod, _results("prod", _PROD), reduction=_PROD)
mean = _fast(mean, _results("mean"), reduction=_MEAN[0], then=_MEAN[1], nonempty=True,
             positive_zero=True)
max = _fast(max, _results("max"), reduction=_MAX, nonempty=True)
min = _fast(min, _results("min"), reduction=_MIN, nonempty=True)


def _spread(name: str, x: Array, axis: Any, correction: int | float,
            keepdims: builtins.bool) -> Array:
    """The sum of the squared deviations from the mean (the backend's `squared_deviations`: one
    pass where it can), divided by M - correction; NaN where M - correction <= 0 (spec: var,
    "Special cases"); std is its square root."""
    check_array(x, name)
    x = check_dtype(x, "real-valued floating-point", name)
    keepdims = as_bool(keepdims, name, "keepdims")
    if isinstance(correction, builtins.bool) or not isinstance(correction, (int, float)):
        raise TypeError(f"{name}(): correction must be an int or a float, got "
                        f"{type(correction).__name__}")
    if not correction >= 0:  # (NaN too)
        raise ValueError(f"{name}(): correction must be a non-negative number, got {correction!r}")
    axes = normalize_axes(axis, x.ndim, name)
    dof = _count(x, axes) - correction
    if dof <= 0:
        return _undefined(x, axes, keepdims)
    backend = x._buffer.device.backend
    result = backend.empty(tuple(n for i, n in enumerate(x._shape) if i not in axes), x._dtype,
                           x._buffer.device)
    backend.squared_deviations(x, axes, result)
    _in_place(_DIVIDE, result, dof)
    if name == "std":
        backend.elementwise(_SQRT, (result,), _SQRT.signature(x._dtype), result._shape,
                            out=result)
    return _views.expand(result, axes) if keepdims else result


@adapted
def var(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
        correction: int | float = 0.0, keepdims: builtins.bool = False) -> Array:
    """The variance along `axis`, divided by N - correction (spec: statistical_functions/var)."""
    return _spread("var", x, axis, correction, keepdims)


@adapted
def std(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
        correction: int | float = 0.0, keepdims: builtins.bool = False) -> Array:
    """The standard deviation along `axis`, with N - correction degrees of freedom
    (spec: statistical_functions/std)."""
    return _spread("std", x, axis, correction, keepdims)


def _cumulative(op: Scan, x: Array, axis: int | None, dtype: Any,
                include_initial: builtins.bool) -> Array:
    name = op.name
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
    dtype = _sum_dtype(op.folds, x._dtype, dtype, name)
    include_initial = as_bool(include_initial, name, "include_initial")
    backend = x._buffer.device.backend
    shape = list(x._shape)
    shape[axis] += builtins.bool(include_initial)
    out = backend.empty(tuple(shape), dtype, x._buffer.device)
    if include_initial:  # the sum of nothing, or the product of nothing, comes first
        backend.assign(_views.slice_axis(out, axis, 0, 1), op.initial)
    if x._shape[axis]:
        backend.scan(op, x, axis, _views.slice_axis(out, axis, int(include_initial), shape[axis]))
    return out


def cumulative_sum(x: Array, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: builtins.bool = False) -> Array:
    """Running sums along `axis`; `include_initial` puts the empty sum (0) first
    (spec: statistical_functions/cumulative_sum)."""
    return _cumulative(SCANS["cumulative_sum"], x, axis, dtype, include_initial)


def cumulative_prod(x: Array, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: builtins.bool = False) -> Array:
    """Running products along `axis`; `include_initial` puts the empty product (1) first
    (spec: statistical_functions/cumulative_prod)."""
    return _cumulative(SCANS["cumulative_prod"], x, axis, dtype, include_initial)
