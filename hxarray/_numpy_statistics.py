"""numpy's statistics beyond the standard (numpy mode only): the NaN-ignoring reductions,
median, quantiles and percentiles, weighted averages, covariance and correlation, histograms and
counts.

Composed from the standard's functions (sort, take, sum, where, searchsorted, cumulative sums),
so every device computes them; numpy's algorithms step for step where its results depend on
them (quantile interpolation, histogram edges). Strict mode refuses them (`numpy_only`).
"""

from __future__ import annotations

import builtins
import math
import operator
import warnings
from typing import Any

import numpy as np

from . import _dtypes as dt
from ._array import Array
from ._checks import as_dtype
from ._numpy_functions import (
    array,
    as_array,
    axis_tuple,
    float_dtype,
    into,
    numpy_only,
    to_last,
)

# `hxarray` itself, whose public functions these are composed from (with their hooks): handed
# down by `use_namespace` from hxarray/__init__, which imports this module
xp: Any = None


def use_namespace(namespace: Any) -> None:
    """Compose these functions from `namespace` (`hxarray`)."""
    global xp
    xp = namespace


__all__ = ["average", "bincount", "corrcoef", "cov", "histogram", "histogram_bin_edges",
           "median", "nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean",
           "nanmedian", "nanmin", "nanpercentile", "nanprod", "nanquantile", "nanstd", "nansum",
           "nanvar", "percentile", "quantile"]


def _warn(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=3)


# -- NaN-ignoring reductions -----------------------------------------------------------------------


def _replaced(x: Array, value: Any) -> tuple[Array, Array | None]:
    """x with its NaNs replaced by `value`, and where they were (None: no NaNs possible)."""
    if x.dtype not in dt.FLOATING:
        return x, None
    mask = xp.isnan(x)
    return xp.where(mask, xp.asarray(value, dtype=x.dtype, device=x.device), x), mask


def _divide_by_count(total: Array, count: Array) -> Array:
    """numpy's `total / count` written back into total's dtype (float32 totals divided in
    float64, then rounded once)."""
    wide = dt.complex128 if total.dtype in dt.COMPLEX_FLOATING else dt.float64
    return xp.astype(xp.astype(total, wide) / xp.astype(count, dt.float64), total.dtype)


@numpy_only
def nansum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
           keepdims: builtins.bool = False) -> Array:
    """numpy's `nansum`: the sum with NaNs counted as zero (0 for an empty or all-NaN slice)."""
    x, _ = _replaced(as_array(a), 0)
    return into(out, xp.sum(x, axis=_axis(axis), dtype=dtype, keepdims=keepdims), "nansum")


@numpy_only
def nanprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: builtins.bool = False) -> Array:
    """numpy's `nanprod`: the product with NaNs counted as one."""
    x, _ = _replaced(as_array(a), 1)
    return into(out, xp.prod(x, axis=_axis(axis), dtype=dtype, keepdims=keepdims), "nanprod")


def _axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


@numpy_only
def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: builtins.bool = False) -> Array:
    """numpy's `nanmean`: the mean of the values that are not NaN; NaN (with numpy's
    RuntimeWarning) for a slice with none."""
    return into(out, _nanmean(a, axis, dtype, keepdims), "nanmean")


def _nanmean(a: Any, axis: Any, dtype: Any, keepdims: builtins.bool) -> Array:
    x = as_array(a)
    if x.dtype not in dt.FLOATING:
        if dtype is not None:
            x = xp.astype(x, as_dtype(dtype, "nanmean"))
        return xp.mean(x, axis=_axis(axis), keepdims=keepdims)
    x, mask = _replaced(x, 0)
    assert mask is not None
    count = xp.sum(xp.logical_not(mask), axis=_axis(axis), keepdims=keepdims)
    total = xp.sum(x, axis=_axis(axis), dtype=dtype, keepdims=keepdims)
    if builtins.bool(xp.any(count == 0)):
        _warn("Mean of empty slice")
    return _divide_by_count(total, count)


@numpy_only
def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0,
           keepdims: builtins.bool = False, *, correction: Any = None) -> Array:
    """numpy's `nanvar`: the variance of the values that are not NaN, with `ddof` (or
    `correction`) degrees of freedom removed; NaN (with numpy's RuntimeWarning) where no degree
    of freedom is left. Real for complex input."""
    return into(out, _nanvar(a, axis, dtype, ddof, keepdims, correction), "nanvar")


def _nanvar(a: Any, axis: Any, dtype: Any, ddof: float, keepdims: builtins.bool,
            correction: Any) -> Array:
    if correction is not None:
        ddof = correction
    x = as_array(a)
    if x.dtype not in dt.FLOATING:
        if dtype is not None:
            x = xp.astype(x, as_dtype(dtype, "nanvar"))
        return xp.var(x, axis=_axis(axis), correction=ddof, keepdims=keepdims)
    axes = axis_tuple(axis, x.ndim, "nanvar")
    x, mask = _replaced(x, 0)
    assert mask is not None
    count = xp.sum(xp.logical_not(mask), axis=axes, keepdims=True)
    mean = _divide_by_count(xp.sum(x, axis=axes, dtype=dtype, keepdims=True), count)
    deviation = xp.where(mask, xp.asarray(0, dtype=x.dtype, device=x.device),
                         xp.astype(x - mean, x.dtype))
    square = xp.real(deviation * xp.conj(deviation)) if x.dtype in dt.COMPLEX_FLOATING else \
        deviation * deviation
    total = xp.sum(square, axis=axes, dtype=dtype, keepdims=keepdims)
    if not keepdims:
        count = xp.reshape(count, total.shape)
    dof = count - ddof
    result = _divide_by_count(total, dof)
    bad = dof <= 0
    if builtins.bool(xp.any(bad)):
        _warn("Degrees of freedom <= 0 for slice.")
        result = xp.where(bad, xp.asarray(math.nan, dtype=result.dtype, device=x.device),
                          result)
    return result


@numpy_only
def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0,
           keepdims: builtins.bool = False, *, correction: Any = None) -> Array:
    """numpy's `nanstd`: the square root of `nanvar`."""
    return into(out, xp.sqrt(_nanvar(a, axis, dtype, ddof, keepdims, correction)), "nanstd")


def _nan_extremum(name: str, a: Any, axis: Any, keepdims: builtins.bool) -> Array:
    x = as_array(a)
    reduce = getattr(xp, name)
    if x.dtype not in dt.FLOATING:
        return reduce(x, axis=_axis(axis), keepdims=keepdims)
    fill: Any = -math.inf if name == "max" else math.inf
    if x.dtype in dt.COMPLEX_FLOATING:
        fill = complex(fill, fill)  # below (or above) every number in numpy's order
    filled, mask = _replaced(x, fill)
    assert mask is not None
    result = reduce(filled, axis=_axis(axis), keepdims=keepdims)
    empty = xp.all(mask, axis=_axis(axis), keepdims=keepdims)
    if builtins.bool(xp.any(empty)):
        _warn("All-NaN slice encountered")
        # numpy's fmax/fmin keep the first NaN of an all-NaN slice
        result = xp.where(empty, reduce(x, axis=_axis(axis), keepdims=keepdims), result)
    return result


@numpy_only
def nanmax(a: Any, axis: Any = None, out: Any = None, keepdims: builtins.bool = False) -> Array:
    """numpy's `nanmax`: the maximum ignoring NaNs; NaN (with numpy's RuntimeWarning) for an
    all-NaN slice; ValueError for an empty one."""
    return into(out, _nan_extremum("max", a, axis, keepdims), "nanmax")


@numpy_only
def nanmin(a: Any, axis: Any = None, out: Any = None, keepdims: builtins.bool = False) -> Array:
    """numpy's `nanmin`: the minimum ignoring NaNs; NaN (with numpy's RuntimeWarning) for an
    all-NaN slice; ValueError for an empty one."""
    return into(out, _nan_extremum("min", a, axis, keepdims), "nanmin")


def _nan_arg(name: str, a: Any, axis: Any, keepdims: builtins.bool) -> Array:
    x = as_array(a)
    reduce = getattr(xp, name)
    if x.dtype not in dt.FLOATING:
        return reduce(x, axis=axis, keepdims=keepdims)
    fill: Any = -math.inf if name == "argmax" else math.inf
    if x.dtype in dt.COMPLEX_FLOATING:
        fill = complex(fill, fill)
    filled, mask = _replaced(x, fill)
    assert mask is not None
    if builtins.bool(xp.any(xp.all(mask, axis=axis))):
        raise ValueError("All-NaN slice encountered")
    return reduce(filled, axis=axis, keepdims=keepdims)


@numpy_only
def nanargmax(a: Any, axis: int | None = None, out: Any = None, *,
              keepdims: builtins.bool = False) -> Array:
    """numpy's `nanargmax`: the index of the maximum ignoring NaNs; ValueError for an all-NaN
    slice."""
    return into(out, _nan_arg("argmax", a, axis, keepdims), "nanargmax")


@numpy_only
def nanargmin(a: Any, axis: int | None = None, out: Any = None, *,
              keepdims: builtins.bool = False) -> Array:
    """numpy's `nanargmin`: the index of the minimum ignoring NaNs; ValueError for an all-NaN
    slice."""
    return into(out, _nan_arg("argmin", a, axis, keepdims), "nanargmin")


# -- median and quantiles --------------------------------------------------------------------------


@numpy_only
def median(a: Any, axis: Any = None, out: Any = None, overwrite_input: builtins.bool = False,
           keepdims: builtins.bool = False) -> Array:
    """numpy's `median`: the middle value (the mean of the two middle ones) along `axis` (None:
    all), in the dtype `mean` gives; NaN for a slice holding a NaN, and (with numpy's
    RuntimeWarning) for an empty one. `overwrite_input` changes nothing: the input is never
    written."""
    return into(out, _median(as_array(a), axis, keepdims), "median")


def _kept_axes(result: Array, x: Array, axes: tuple[int, ...], keepdims: builtins.bool,
               leading: tuple[int, ...] = ()) -> Array:
    """A result over x's `axes` (after `leading` axes of its own, a quantile's q), with those
    axes back as size 1 if `keepdims`."""
    if not keepdims:
        return result
    return xp.reshape(result, leading + tuple(1 if i in axes else m for i, m in enumerate(x.shape)))


def _median(x: Array, axis: Any, keepdims: builtins.bool) -> Array:
    axes = axis_tuple(axis, x.ndim, "median")
    flat = to_last(x, axes)
    n = flat.shape[-1]
    if n == 0:
        _warn("Mean of empty slice.")
    ordered = xp.sort(flat, axis=-1)
    half = n // 2
    start = half if n % 2 else builtins.max(half - 1, 0)
    middle = ordered[..., start:half + 1]
    result = xp.mean(middle, axis=-1)
    if x.dtype in dt.FLOATING and n:
        last = ordered[..., -1]
        result = xp.where(xp.isnan(last), xp.astype(last, result.dtype), result)
    result = _kept_axes(result, x, axes, keepdims)
    return result


_CONTINUOUS = {"interpolated_inverted_cdf": (0.0, 1.0), "hazen": (0.5, 0.5),
               "weibull": (0.0, 0.0), "median_unbiased": (1 / 3.0, 1 / 3.0),
               "normal_unbiased": (3 / 8.0, 3 / 8.0)}
_METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation", "linear", "lower",
            "higher", "midpoint", "nearest", *_CONTINUOUS)


def _boundaries(index: np.ndarray, condition: Any) -> np.ndarray:
    """numpy's discrete methods: the index below or above `index`."""
    previous = np.floor(index)
    gamma = index - previous
    result = np.where(condition(gamma, index), previous, previous + 1).astype(np.intp)
    result[result < 0] = 0
    return result


def _virtual_index(method: str, n: int, q: np.ndarray) -> np.ndarray:
    """Where each quantile falls in the sorted sample (numpy's `_QuantileMethods`)."""
    if method == "linear":
        return np.asanyarray((n - 1) * q)
    if method == "lower":
        return np.floor((n - 1) * q).astype(np.intp)
    if method == "higher":
        return np.ceil((n - 1) * q).astype(np.intp)
    if method == "nearest":
        return np.around((n - 1) * q).astype(np.intp)
    if method == "midpoint":
        return np.asanyarray(0.5 * (np.floor((n - 1) * q) + np.ceil((n - 1) * q)))
    if method == "inverted_cdf":
        return _boundaries(n * q - 1, lambda gamma, _: gamma == 0)
    if method == "closest_observation":
        return _boundaries(n * q - 1 - 0.5,
                           lambda gamma, index: (gamma == 0) & (np.floor(index) % 2 == 1))
    if method == "averaged_inverted_cdf":
        return np.asanyarray(n * q - 1)
    alpha, beta = _CONTINUOUS[method]
    return np.asanyarray(n * q + (alpha + q * (1 - alpha - beta)) - 1)


def _gamma(method: str, virtual: np.ndarray, previous: np.ndarray) -> np.ndarray:
    gamma = np.asanyarray(virtual - previous)
    if method == "averaged_inverted_cdf":
        gamma = np.where(gamma == 0, 0.5, 1.0)
    elif method == "midpoint":
        gamma = np.where(virtual % 1 == 0, 0.0, 0.5)
    return np.asanyarray(gamma, dtype=virtual.dtype)


def _quantiles(x: Array, q: Any, method: str, weights: Any,
               function: str) -> tuple[np.ndarray, builtins.bool]:
    """The checked arguments of a quantile function: `q` as quantiles on the host (a
    percentile's divided by 100), and whether it was a Python number (numpy's weak q: the result
    then keeps x's floating dtype)."""
    if x.dtype in dt.COMPLEX_FLOATING:
        raise TypeError("a must be an array of real numbers")
    if method not in _METHODS:
        raise ValueError(f"{method!r} is not a valid method. Use one of: {_METHODS}")
    if weights is not None and method != "inverted_cdf":
        raise ValueError(f"Only method 'inverted_cdf' supports weights. Got: {method}.")
    host = np.asarray(q) if type(q) is not Array else np.asarray(q.to_device("cpu"))
    percentile = function.endswith("percentile")
    if percentile:
        host = np.true_divide(host, 100)
    if host.ndim > 2:
        raise ValueError("q must be a scalar or 1d")
    if not (np.all(host >= 0) and np.all(host <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]" if percentile else
                         "Quantiles must be in the range [0, 1]")
    return host, type(q) in (int, float)


def _quantile(x: Array, q: Any, axis: Any, method: str, keepdims: builtins.bool,
              function: str, weights: Any) -> Array:
    host, weak = _quantiles(x, q, method, weights, function)
    axes = axis_tuple(axis, x.ndim, function)
    if weights is not None:
        return _weighted(x, host, axes, axis, weights, keepdims, False)
    flat = xp.moveaxis(to_last(x, axes), -1, 0)  # the sampled axis first, as numpy has it
    n = flat.shape[0]
    ordered = xp.sort(flat, axis=0)
    nans = x.dtype in dt.FLOATING
    virtual = _virtual_index(method, n, host)
    device = x.device

    def pick(index: np.ndarray) -> Array:
        flat_index = xp.asarray(index.reshape(-1).astype(np.int64), device=device)
        picked = xp.take(ordered, flat_index, axis=0)
        return xp.reshape(picked, index.shape + ordered.shape[1:])

    integral = virtual.dtype.kind in "iu"
    if method in ("inverted_cdf", "closest_observation", "lower", "higher", "nearest") or \
            (method == "linear" and integral):
        if n == 0:
            raise IndexError("cannot do a non-empty take from an empty axes.")
        result = pick(virtual)
    else:
        previous = np.array(np.floor(virtual))
        following = np.array(previous + 1)
        above = virtual >= n - 1
        previous[above] = -1
        following[above] = -1
        below = virtual < 0
        previous[below] = 0
        following[below] = 0
        if nans:
            previous[np.isnan(virtual)] = -1
            following[np.isnan(virtual)] = -1
        previous, following = previous.astype(np.intp), following.astype(np.intp)
        if n == 0:
            raise IndexError("index -1 is out of bounds for axis 0 with size 0")
        low, high = pick(previous % n), pick(following % n)
        gamma = _gamma(method, virtual, previous)
        t: Any = float(gamma) if weak else xp.asarray(
            gamma.reshape(virtual.shape + (1,) * (ordered.ndim - 1)), device=device)
        difference = high - low
        lerp = low + difference * t
        result = xp.where(t >= 0.5 if type(t) is Array else xp.asarray(t >= 0.5, device=device),
                          high - difference * (1 - t), lerp)
    if nans and n:
        last = ordered[-1]
        result = xp.where(xp.isnan(last), xp.astype(last, result.dtype), result)
    return _kept_axes(result, x, axes, keepdims, host.shape)


def _weighted(x: Array, host: np.ndarray, axes: tuple[int, ...], axis: Any, weights: Any,
              keepdims: builtins.bool, skip_nans: builtins.bool) -> Array:
    """numpy's weighted quantiles (method "inverted_cdf"): in each slice, the first value in
    sorted order whose share of the weight, summed from the smallest value on (in float64, then
    q's floating dtype), reaches q; leading zero weights are passed over. A slice holding a NaN
    gives NaN; with `skip_nans` (nanquantile) NaNs weigh nothing instead, and only a slice of
    NaNs only gives NaN. The values are sorted on their device; the weights are summed on the
    host, one after another as numpy sums them, so every device picks the same values."""
    w = np.asarray(as_array(weights).to_device("cpu"))
    if w.shape != x.shape:  # numpy's checks and its broadcast of weights along `axis`
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        given = axis if isinstance(axis, (tuple, list)) else (axis,)
        normal = tuple(operator.index(a) % x.ndim for a in given)
        if w.shape != tuple(x.shape[a] for a in normal):
            raise ValueError("Shape of weights must be consistent with shape of a along specified "
                             "axis.")
        w = w.transpose(np.argsort(normal)).reshape(
            tuple(x.shape[i] if i in axes else 1 for i in range(x.ndim)))
    if np.any(w < 0):
        raise ValueError("Weights must be non-negative.")
    values = to_last(x, axes)
    order = xp.argsort(values, axis=-1, stable=True)
    ordered = xp.take_along_axis(values, order, axis=-1)
    rest = [i for i in range(x.ndim) if i not in axes]  # `to_last`'s order, on the host
    w = np.broadcast_to(w, x.shape).transpose(*rest, *axes).reshape(values.shape)
    w = np.take_along_axis(w, np.asarray(order.to_device("cpu")), axis=-1)
    nans = np.asarray(xp.isnan(ordered).to_device("cpu")) if x.dtype in dt.FLOATING else None
    if skip_nans and nans is not None:
        w = np.where(nans, 0, w)
    cdf = np.cumsum(w, axis=-1, dtype=np.float64)
    empty = nans.all(axis=-1) if skip_nans and nans is not None else np.zeros(cdf.shape[:-1], bool)
    total = cdf[..., -1:]
    if np.any(~empty & ((total[..., 0] == 0) | ~np.isfinite(total[..., 0]))):
        raise ValueError("Weights included NaN, inf or were all zero.")
    with np.errstate(invalid="ignore", divide="ignore"):  # (slices of NaNs only)
        cdf = cdf / total
    if host.dtype.kind == "f":
        cdf = cdf.astype(host.dtype)
    cdf[cdf == 0] = -1
    # each quantile's index: how many of the slice's shares lie below it (numpy's searchsorted,
    # side "left"), at most the last
    below = (cdf < host.reshape(host.shape + (1,) * cdf.ndim)).sum(axis=-1)
    result = _gathered(ordered, np.minimum(below, ordered.shape[-1] - 1))
    if nans is not None:
        if skip_nans and np.any(empty):
            _warn("All-NaN slice encountered")
        result = _with_nans(result, np.asarray(empty if skip_nans else nans[..., -1]))
    return _kept_axes(result, x, axes, keepdims, host.shape)


@numpy_only
def quantile(a: Any, q: Any, axis: Any = None, out: Any = None,
             overwrite_input: builtins.bool = False, method: str = "linear",
             keepdims: builtins.bool = False, *, weights: Any = None) -> Array:
    """numpy's `quantile`: the `q`-th quantiles (0 <= q <= 1; an array of them prepends its
    shape) along `axis` (None: all), by any of numpy's methods (default "linear"), with numpy's
    result dtypes; NaN for a slice holding a NaN. `weights` (of x's shape, or of its shape along
    `axis`) need method "inverted_cdf", as in numpy. `q` is read on the host; the input is never
    written."""
    return into(out, _quantile(as_array(a), q, axis, method, keepdims, "quantile", weights),
                "quantile")


@numpy_only
def percentile(a: Any, q: Any, axis: Any = None, out: Any = None,
               overwrite_input: builtins.bool = False, method: str = "linear",
               keepdims: builtins.bool = False, *, weights: Any = None) -> Array:
    """numpy's `percentile`: `quantile` of `q / 100` (0 <= q <= 100)."""
    return into(out, _quantile(as_array(a), q, axis, method, keepdims, "percentile", weights),
                "percentile")


# -- NaN-ignoring median, quantiles and running sums ---------------------------------------------


def _sorted_counts(x: Array, axes: tuple[int, ...]) -> tuple[Array, np.ndarray]:
    """x's `axes` merged into its last axis and sorted along it (NaNs last), and how many values
    of each slice are not NaN (read on the host), warning as numpy does where a slice has none."""
    ordered = xp.sort(to_last(x, axes), axis=-1)
    counts = np.asarray(xp.sum(xp.logical_not(xp.isnan(ordered)), axis=-1).to_device("cpu"))
    if ordered.shape[-1] and np.any(counts == 0):
        _warn("All-NaN slice encountered")
    return ordered, counts


def _gathered(ordered: Array, index: np.ndarray) -> Array:
    """`ordered[s, index[..., s]]` for each slice s (ordered: slices by its last axis; index: any
    leading shape, then the slices' shape)."""
    n = ordered.shape[-1]
    slices = np.arange(math.prod(ordered.shape[:-1]), dtype=np.int64).reshape(ordered.shape[:-1])
    flat = (slices * n + index).astype(np.int64).reshape(-1)
    picked = xp.take(xp.reshape(ordered, (-1,)), xp.asarray(flat, device=ordered.device))
    return xp.reshape(picked, index.shape)


def _with_nans(result: Array, empty: np.ndarray) -> Array:
    """`result` with NaN where `empty` (broadcast against its trailing axes) is true."""
    if not np.any(empty):
        return result
    where = xp.asarray(np.broadcast_to(empty, result.shape), device=result.device)
    return xp.where(where, xp.asarray(math.nan, dtype=result.dtype, device=result.device), result)


@numpy_only
def nanmedian(a: Any, axis: Any = None, out: Any = None, overwrite_input: builtins.bool = False,
              keepdims: builtins.bool = False) -> Array:
    """numpy's `nanmedian`: the median of the values that are not NaN along `axis` (None: all);
    NaN, with numpy's RuntimeWarning, for a slice of NaNs only. The counts of values are read on
    the host; the input is never written."""
    x = as_array(a)
    axes = axis_tuple(axis, x.ndim, "nanmedian")
    if x.dtype not in dt.FLOATING or not math.prod(x.shape[i] for i in axes):
        return into(out, _median(x, axis, keepdims), "nanmedian")
    ordered, counts = _sorted_counts(x, axes)
    low, high = np.maximum(counts - 1, 0) // 2, counts // 2
    middle = xp.stack([_gathered(ordered, low), _gathered(ordered, high)], axis=-1)
    result = _with_nans(xp.mean(middle, axis=-1), counts == 0)
    result = _kept_axes(result, x, axes, keepdims)
    return into(out, result, "nanmedian")


def _nanquantile(x: Array, q: Any, axis: Any, method: str, keepdims: builtins.bool,
                 function: str, weights: Any) -> Array:
    """numpy's nanquantile: each slice's quantiles of its values that are not NaN, numpy's
    quantile method step for step with that slice's count."""
    host, weak = _quantiles(x, q, method, weights, function)
    axes = axis_tuple(axis, x.ndim, function)
    if weights is not None and x.dtype in dt.FLOATING:
        return _weighted(x, host, axes, axis, weights, keepdims, True)
    if x.dtype not in dt.FLOATING or not math.prod(x.shape[i] for i in axes):
        return _quantile(x, q, axis, method, keepdims, function.removeprefix("nan"), weights)
    ordered, counts = _sorted_counts(x, axes)
    n = np.maximum(counts, 1)  # (a slice of NaNs only: any index, its result is NaN)
    qs = host.reshape(host.shape + (1,) * n.ndim)
    # numpy computes each slice's indices with its count as a Python int, which takes q's dtype
    virtual = _virtual_index(method, n.astype(host.dtype) if host.dtype.kind == "f" else n, qs)
    virtual = np.broadcast_to(virtual, qs.shape[:host.ndim] + n.shape)
    if method in ("inverted_cdf", "closest_observation", "lower", "higher", "nearest") or \
            (method == "linear" and virtual.dtype.kind in "iu"):
        result = _gathered(ordered, np.clip(virtual, 0, n - 1))
    else:
        # as `_quantile`: beyond the last value both ends are the last (-1), before the first
        # both are the first
        floor = np.floor(virtual)
        above, below = virtual >= n - 1, virtual < 0
        previous = np.where(above, -1, np.where(below, 0, floor)).astype(np.intp)
        following = np.where(above, -1, np.where(below, 0, floor + 1)).astype(np.intp)
        low, high = _gathered(ordered, previous % n), _gathered(ordered, following % n)
        gamma = _gamma(method, virtual, previous)
        # numpy's lerp per slice, with gamma a Python float where q is one (weak: x's dtype)
        t, rest = (gamma, 1 - gamma) if not weak else \
            (gamma.astype(x.dtype.numpy), (1 - gamma).astype(x.dtype.numpy))
        difference = high - low
        result = xp.where(xp.asarray(gamma >= 0.5, device=x.device),
                          high - difference * xp.asarray(rest, device=x.device),
                          low + difference * xp.asarray(t, device=x.device))
    result = _with_nans(result, counts == 0)
    return _kept_axes(result, x, axes, keepdims, host.shape)


@numpy_only
def nanquantile(a: Any, q: Any, axis: Any = None, out: Any = None,
                overwrite_input: builtins.bool = False, method: str = "linear",
                keepdims: builtins.bool = False, *, weights: Any = None) -> Array:
    """numpy's `nanquantile`: `quantile` of the values that are not NaN in each slice; NaN, with
    numpy's RuntimeWarning, for a slice of NaNs only; `weights` as `quantile` takes them. `q`
    and the counts of values are read on the host."""
    return into(out, _nanquantile(as_array(a), q, axis, method, keepdims, "nanquantile",
                                  weights), "nanquantile")


@numpy_only
def nanpercentile(a: Any, q: Any, axis: Any = None, out: Any = None,
                  overwrite_input: builtins.bool = False, method: str = "linear",
                  keepdims: builtins.bool = False, *, weights: Any = None) -> Array:
    """numpy's `nanpercentile`: `nanquantile` of `q / 100` (0 <= q <= 100)."""
    return into(out, _nanquantile(as_array(a), q, axis, method, keepdims, "nanpercentile",
                                  weights), "nanpercentile")


def _nan_running(name: str, a: Any, axis: Any, dtype: Any, out: Any) -> Array:
    """numpy's nancumsum and nancumprod: the running sums or products with NaNs counted as zero
    or one, along `axis` (None: of the flattened array)."""
    x, _ = _replaced(as_array(a), 0 if name == "nancumsum" else 1)
    if axis is None:
        x, axis = xp.reshape(x, (-1,)), 0
    running = xp.cumulative_sum if name == "nancumsum" else xp.cumulative_prod
    return into(out, running(x, axis=operator.index(axis), dtype=dtype), name)


@numpy_only
def nancumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Array:
    """numpy's `nancumsum`: running sums with NaNs counted as zero (None: over the flattened
    array)."""
    return _nan_running("nancumsum", a, axis, dtype, out)


@numpy_only
def nancumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Array:
    """numpy's `nancumprod`: running products with NaNs counted as one (None: over the
    flattened array)."""
    return _nan_running("nancumprod", a, axis, dtype, out)


# -- averages, covariance, correlation -------------------------------------------------------------


@numpy_only
def average(a: Any, axis: Any = None, weights: Any = None, returned: builtins.bool = False, *,
            keepdims: builtins.bool = False) -> Any:
    """numpy's `average`: the mean, or with `weights` `sum(a * w) / sum(w)` in numpy's result
    dtype (float64 at least for integer and bool input); `returned=True` also gives the sum of
    the weights. ZeroDivisionError where the weights sum to 0."""
    x = as_array(a)
    axes = axis_tuple(axis, x.ndim, "average") if axis is not None else None
    if weights is None:
        result = xp.mean(x, axis=axes, keepdims=keepdims)
        count = x.size // builtins.max(result.size, 1) if result.size else 0
        scale = xp.full(result.shape, count, dtype=result.dtype, device=x.device)
        return (result, scale) if returned else result
    w = as_array(weights, x.device)
    floor = (dt.float64,) if x.dtype in dt.INTEGER or x.dtype is dt.bool else ()
    dtype = xp.result_type(x.dtype, w.dtype, *floor)
    if w.shape != x.shape:
        if axes is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        if w.shape != tuple(x.shape[i] for i in axes):
            if w.ndim != 1 or len(axes) != 1:
                raise TypeError("1D weights expected when shapes of a and weights differ.")
            raise ValueError("Length of weights not compatible with specified axis.")
        w = xp.permute_dims(xp.reshape(w, (1,) * (x.ndim - w.ndim) + w.shape),
                            _placing(axes, x.ndim))
        w = xp.broadcast_to(w, x.shape)
    x, w = xp.astype(x, dtype), xp.astype(w, dtype)
    scale = xp.sum(w, axis=axes, keepdims=keepdims)
    if builtins.bool(xp.any(scale == 0)):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    result = xp.sum(x * w, axis=axes, keepdims=keepdims) / scale
    return (result, xp.broadcast_to(scale, result.shape)) if returned else result


def _placing(axes: tuple[int, ...], ndim: int) -> tuple[int, ...]:
    """The permutation that moves the last len(axes) axes of an ndim-array to `axes`."""
    lead = ndim - len(axes)
    order = [0] * ndim
    rest = iter(range(lead))
    for i in range(ndim):
        order[i] = lead + axes.index(i) if i in axes else next(rest)
    return tuple(order)


@numpy_only
def cov(m: Any, y: Any = None, rowvar: builtins.bool = True, bias: builtins.bool = False,
        ddof: int | None = None, fweights: Any = None, aweights: Any = None, *,
        dtype: Any = None) -> Array:
    """numpy's `cov`: the covariance matrix of the variables in the rows of `m` (columns with
    `rowvar=False`), `y` adding variables, with frequency and analytic weights; float64 at
    least. NaN (with numpy's RuntimeWarning) where no degree of freedom is left."""
    x = as_array(m)
    if x.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if dtype is None:
        dtype = xp.result_type(x.dtype, dt.float64) if x.dtype not in dt.FLOATING or \
            x.dtype in (dt.float32, dt.complex64) else x.dtype
        if x.dtype in dt.COMPLEX_FLOATING:
            dtype = dt.complex128
    x = array.__wrapped__(x, dtype=dtype, ndmin=2)  # type: ignore[attr-defined]
    if not rowvar and x.shape[0] != 1:
        x = xp.matrix_transpose(x)
    if x.shape[0] == 0:
        return xp.reshape(xp.asarray([], dtype=x.dtype, device=x.device), (0, 0))
    if y is not None:
        other = array.__wrapped__(as_array(y, x.device), dtype=dtype, ndmin=2, copy=None)  # type: ignore[attr-defined]
        if not rowvar and other.shape[0] != 1:
            other = xp.matrix_transpose(other)
        x = xp.concat([x, other], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    w = None
    if fweights is not None:
        f = as_array(fweights, x.device)
        if f.dtype not in dt.INTEGER and not builtins.bool(xp.all(f == xp.round(f))):
            raise TypeError("fweights must be integer")
        _check_weights(f, x.shape[1], "fweights")
        w = xp.astype(f, dt.float64)
    if aweights is not None:
        aw = as_array(aweights, x.device)
        _check_weights(aw, x.shape[1], "aweights")
        aw = xp.astype(aw, dt.float64)
        w = aw if w is None else w * aw
    mean, total = average.__wrapped__(x, axis=1, weights=w, returned=True)  # type: ignore[attr-defined]
    w_sum = float(xp.real(total[0])) if total.ndim else float(total)
    fact: float
    if w is None:
        fact = x.shape[1] - ddof
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * float(xp.sum(w * aw)) / w_sum
    if fact <= 0:
        _warn("Degrees of freedom <= 0 for slice")
        fact = 0.0
    centred = x - xp.expand_dims(mean, axis=1)
    weighted = centred if w is None else centred * w
    c = xp.matmul(centred, xp.conj(xp.matrix_transpose(weighted)))
    with np.errstate(divide="ignore"):
        factor = np.true_divide(1, fact)
    c = c * float(factor)
    return xp.squeeze(c, axis=tuple(i for i, n in enumerate(c.shape) if n == 1))


def _check_weights(w: Array, n: int, name: str) -> None:
    if w.ndim > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if w.shape[0] != n:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    if builtins.bool(xp.any(w < 0)):
        raise ValueError(f"{name} cannot be negative")


@numpy_only
def corrcoef(x: Any, y: Any = None, rowvar: builtins.bool = True, *, dtype: Any = None) -> Array:
    """numpy's `corrcoef`: Pearson correlation coefficients, `cov` normalised by the standard
    deviations and clipped to [-1, 1] (each part, for complex input)."""
    c = cov.__wrapped__(x, y, rowvar, dtype=dtype)  # type: ignore[attr-defined]
    if c.ndim == 0:
        return c / c
    d = xp.linalg.diagonal(c)
    deviation = xp.sqrt(xp.real(d))
    c = c / xp.expand_dims(deviation, axis=1)
    c = c / xp.expand_dims(deviation, axis=0)
    if c.dtype in dt.COMPLEX_FLOATING:
        from ._numpy_functions import _complex
        real = xp.clip(xp.real(c), -1.0, 1.0)
        imag = xp.clip(xp.imag(c), -1.0, 1.0)
        return xp.astype(_complex(real, imag), c.dtype)
    return xp.clip(c, -1.0, 1.0)


# -- counting --------------------------------------------------------------------------------------


def _segment_sums(keys: Array, values: Array) -> Array:
    """Inclusive sums of `values` within runs of equal `keys` (sorted), by doubling steps: each
    total adds only values of its own run, in a tree order (no cancellation)."""
    n = values.shape[0]
    step = 1
    while step < n:
        shifted = xp.concat([xp.zeros((step,), dtype=values.dtype, device=values.device),
                             values[:n - step]])
        same = xp.concat([xp.zeros((step,), dtype=dt.bool, device=keys.device),
                          keys[step:] == keys[:n - step]])
        values = values + xp.where(same, shifted, xp.zeros_like(shifted))
        step *= 2
    return values


@numpy_only
def bincount(x: Any, weights: Any = None, minlength: int = 0) -> Array:
    """numpy's `bincount`: how often each value 0, 1, ..., max(x) occurs in the non-negative
    integers `x` (1-D), at least `minlength` counts; with `weights`, their sums (float64). The
    largest value is read from the device (the result's length depends on it). Weighted sums
    round in a tree order within each bin, not numpy's running order."""
    values = as_array(x)
    if values.ndim != 1:
        raise ValueError("object too deep for desired array" if values.ndim > 1 else
                         "object of too small depth for desired array")
    if values.dtype not in dt.INTEGER and values.dtype is not dt.bool or \
            values.dtype is dt.uint64:
        raise TypeError(f"Cannot cast array data from dtype('{values.dtype.name}') to "
                        "dtype('int64') according to the rule 'safe'")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    values = xp.astype(values, dt.int64, copy=False)
    size = values.shape[0]
    if size and builtins.bool(xp.any(values < 0)):
        raise ValueError("'list' argument must have no negative elements")
    length = builtins.max(int(xp.max(values)) + 1 if size else 0, minlength)
    if weights is None:
        device = values.device
        counts = device.backend.empty((length,), dt.int64, device)
        device.backend.bincount(values, counts)
        return counts
    bins = xp.arange(length, dtype=dt.int64, device=values.device)
    w = as_array(weights, values.device)
    if w.shape != values.shape:
        raise ValueError("The weights and list don't have the same length.")
    if w.dtype in dt.COMPLEX_FLOATING:
        raise TypeError("Cannot cast array data from dtype('complex') to dtype('float64') "
                        "according to the rule 'safe'")
    w = xp.astype(w, dt.float64)
    order = xp.argsort(values, stable=True)
    keys, w = xp.take(values, order), xp.take(w, order)
    sums = _segment_sums(keys, w)
    ends = xp.searchsorted(keys, bins, side="right")
    starts = xp.searchsorted(keys, bins, side="left")
    if not size:
        return xp.zeros((length,), dtype=dt.float64, device=values.device)
    picked = xp.take(sums, xp.clip(ends - 1, 0, size - 1))
    return xp.where(ends > starts, picked, xp.zeros_like(picked))


_ESTIMATORS = ("auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt")


def _outer_edges(x: Array, range: Any) -> tuple[Any, Any]:
    """numpy's `_get_outer_edges`: the range, or the data's (widened by 0.5 where flat)."""
    if range is not None:
        first, last = range
        if first > last:
            raise ValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"supplied range of [{first}, {last}] is not finite")
    elif x.size == 0:
        first, last = 0, 1
    else:
        first, last = (np.asarray(v).astype(x.dtype.numpy)[()] for v in
                       (xp.min(x).to_device("cpu"), xp.max(x).to_device("cpu")))
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"autodetected range of [{first}, {last}] is not finite")
    if first == last:
        first = first - 0.5
        last = last + 0.5
    return first, last


def _unsigned_subtract(a: Any, b: Any) -> Any:
    """numpy's `_unsigned_subtract`: a - b without overflow for integer scalars."""
    signed_to_unsigned = {np.byte: np.ubyte, np.short: np.ushort, np.intc: np.uintc,
                          np.int_: np.uint, np.longlong: np.ulonglong}
    dtype = np.result_type(a, b)
    try:
        unsigned = signed_to_unsigned[dtype.type]
    except KeyError:
        return np.subtract(a, b, dtype=dtype)
    return np.subtract(np.asarray(a, dtype=dtype), np.asarray(b, dtype=dtype), casting="unsafe",
                       dtype=unsigned)


def _bin_width(name: str, x: Array, first: Any, last: Any) -> float:
    """numpy's bin-width estimators, their statistics computed on the device."""
    n = x.size
    span = float(_unsigned_subtract(np.asarray(xp.max(x).to_device("cpu")),
                                    np.asarray(xp.min(x).to_device("cpu")))) if n else 0.0
    if name == "sqrt":
        return span / np.sqrt(n)
    if name == "sturges":
        return span / (np.log2(n) + 1.0)
    if name == "rice":
        return span / (2.0 * n ** (1.0 / 3))
    data = xp.astype(x, dt.float64) if x.dtype not in dt.FLOATING else x
    if name == "scott":
        return (24.0 * np.pi ** 0.5 / n) ** (1.0 / 3.0) * float(xp.std(data))
    if name in ("fd", "auto"):
        q75, q25 = (float(v) for v in _quantile(x, [75, 25], None, "linear", False,
                                                "percentile", None))
        fd = 2.0 * (q75 - q25) * n ** (-1.0 / 3.0)
        if name == "fd":
            return fd
        sturges = span / (np.log2(n) + 1.0)
        return builtins.min(fd, sturges) if fd else sturges
    if name == "doane":
        if n > 2:
            sg1 = np.sqrt(6.0 * (n - 2) / ((n + 1.0) * (n + 3)))
            sigma = float(xp.std(data))
            if sigma > 0.0:
                centred = (data - xp.mean(data)) / sigma
                g1 = float(xp.mean(centred ** 3))
                return span / (1.0 + np.log2(n) + np.log2(1.0 + np.absolute(g1) / sg1))
        return 0.0
    raise ValueError(f"{name!r} is not a valid estimator for `bins` (hxarray computes "
                     f"{', '.join(e for e in _ESTIMATORS if e != 'stone')})")


def _edges(x: Array, bins: Any, range: Any, weights: Any) -> tuple[Array, int | None]:
    """The bin edges on x's device, and the number of equal bins (None for given edges)."""
    if isinstance(bins, str):
        if bins not in _ESTIMATORS:
            raise ValueError(f"{bins!r} is not a valid estimator for `bins`")
        if weights is not None:
            raise TypeError("Automated estimation of the number of bins is not supported for "
                            "weighted data")
        first, last = _outer_edges(x, range)
        data = x
        if range is not None:
            data = x[xp.logical_and(x >= first, x <= last)]
        if data.size == 0:
            count = 1
        else:
            width = _bin_width(bins, data, first, last)
            count = int(np.ceil(_unsigned_subtract(last, first) / width)) if width else 1
            if count < 1:
                raise ValueError(f"Too many bins for data range. Cannot create {count} "
                                 "finite-sized bins.")
    elif np.ndim(bins) == 0:
        try:
            count = operator.index(bins)
        except TypeError as exc:
            raise TypeError("`bins` must be an integer, a string, or an array") from exc
        if count < 1:
            raise ValueError("`bins` must be positive, when an integer")
        first, last = _outer_edges(x, range)
    elif np.ndim(bins) == 1:
        edges = as_array(bins, x.device)
        if edges.size and builtins.bool(xp.any(edges[:-1] > edges[1:])):
            raise ValueError("`bins` must increase monotonically, when an array")
        return edges, None
    else:
        raise ValueError("`bins` must be 1d, when an array")
    kind = np.result_type(first, last, x.dtype.numpy)
    if kind.kind in "iub":
        kind = np.result_type(kind, float)
    host = np.linspace(first, last, count + 1, endpoint=True, dtype=kind)
    return xp.asarray(host, device=x.device), count


def _equal_bins(data: Array, edges: Array, nbins: int, inside: Array) -> Array:
    """The bin of each value `inside` the equal-width `edges`, numpy's way: estimated by
    arithmetic (one pass, where a search costs log(nbins) per value), then moved by one bin
    where the estimate's rounding put it across an edge; the last bin holds its right edge."""
    first, last = (float(e) for e in (edges[0], edges[-1]))
    values = xp.astype(data, dt.float64, copy=False)
    estimate = xp.where(inside, (values - first) * (nbins / (last - first)), 0.0)
    index = xp.astype(xp.clip(estimate, 0.0, nbins - 1.0), dt.int64)
    index = xp.where(data < xp.take(edges, index), index - 1, index)
    return xp.where(xp.logical_and(data >= xp.take(edges, index + 1), index != nbins - 1),
                    index + 1, index)


@numpy_only
def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None, weights: Any = None) -> Array:
    """numpy's `histogram_bin_edges`: the edges `histogram` uses (the estimators of numpy but
    "stone")."""
    x = xp.reshape(as_array(a), (-1,))
    return _edges(x, bins, range, weights)[0]


@numpy_only
def histogram(a: Any, bins: Any = 10, range: Any = None, density: Any = None,
              weights: Any = None) -> tuple[Array, Array]:
    """numpy's `histogram`: the counts (or weight sums, or with `density` the density) of the
    flattened `a` in `bins` (a count, increasing edges, or the name of one of numpy's
    estimators but "stone"), each bin half-open but the last; values outside the range are left
    out. Both results on a's device."""
    x = xp.reshape(as_array(a), (-1,))
    w = None if weights is None else xp.reshape(as_array(weights, x.device), (-1,))
    if w is not None and w.shape != x.shape:
        raise ValueError("weights should have the same shape as a.")
    edges, count = _edges(x, bins, range, weights)
    nbins = edges.shape[0] - 1
    if nbins < 0:
        raise ValueError("`bins` must have at least one edge")
    if count is not None:  # numpy compares in the edges' dtype
        data = xp.astype(x, edges.dtype) if x.dtype is not edges.dtype else x
    else:
        data = x
        common = xp.result_type(x.dtype, edges.dtype)
        data, edges_cmp = xp.astype(x, common), xp.astype(edges, common)
    cmp = edges if count is not None else edges_cmp
    if nbins == 0:
        index = xp.zeros(data.shape, dtype=dt.int64, device=x.device)
        inside = xp.zeros(data.shape, dtype=dt.bool, device=x.device)
    else:
        inside = xp.logical_and(data >= cmp[0], data <= cmp[-1])
        index = _equal_bins(data, cmp, nbins, inside) if count is not None else \
            xp.where(data == cmp[-1], nbins - 1, xp.searchsorted(cmp, data, side="right") - 1)
    index = xp.where(inside, index, nbins)
    kept_weights = None if w is None else w
    if kept_weights is None:
        counts = bincount.__wrapped__(index, minlength=nbins + 1)[:nbins]  # type: ignore[attr-defined]
    elif kept_weights.dtype in dt.COMPLEX_FLOATING:
        real = bincount.__wrapped__(index, xp.real(kept_weights), nbins + 1)[:nbins]  # type: ignore[attr-defined]
        imag = bincount.__wrapped__(index, xp.imag(kept_weights), nbins + 1)[:nbins]  # type: ignore[attr-defined]
        from ._numpy_functions import _complex
        counts = xp.astype(_complex(real, imag), kept_weights.dtype)
    else:
        counts = bincount.__wrapped__(index, kept_weights, nbins + 1)[:nbins]  # type: ignore[attr-defined]
        counts = xp.astype(counts, kept_weights.dtype)
    if density:
        widths = xp.astype(edges[1:] - edges[:-1], float_dtype(edges.dtype))
        counts = counts / widths / xp.sum(counts)
    return counts, edges
