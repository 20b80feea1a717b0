"""Statistical functions (spec: "Statistical Functions") against numpy: accumulator dtypes, axes,
keepdims, empty reductions, NaN propagation, corrections, cumulative sums and products."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hxarray as xp
from hxarray._ops import REDUCTIONS

from .oracle import (
    BOOL,
    COMPLEX_FLOATING,
    FLOATING,
    INTEGER,
    NUMERIC,
    NUMPY_DEVICES,
    ON_EACH_DEVICE,
    REAL,
    REAL_FLOATING,
    SIGNED,
    UNSIGNED,
    VIEWS,
    assert_matches,
    ids,
    np_dtype,
    sample,
    standard,
    view_pairs,
    xps,
)

pytestmark = ON_EACH_DEVICE

AXES = [None, 0, 1, -1, (0, 1), (-1, 0), (), (1,)]


def _accumulator(dtype: xp.DType) -> xp.DType:
    """The spec's default dtype of sum, prod and the cumulative functions: integers widen to the
    default integer of their signedness, everything else stays."""
    return xp.int64 if dtype in SIGNED else xp.uint64 if dtype in UNSIGNED else dtype


def _views(dtype: xp.DType, seed: int = 0) -> list[tuple[xp.Array, np.ndarray]]:
    return view_pairs(sample((4, 6), dtype, seed))


def _expected(function, a: np.ndarray, **kwargs) -> np.ndarray:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(function(a, **kwargs))


def _spec_sum(a: np.ndarray, axis=None, keepdims: bool = False, dtype=None) -> np.ndarray:
    """numpy's sum; in strict mode its zeros signed as successive additions sign them (spec:
    sum, "Special cases"): a sum of negative zeros is -0, where numpy's sum (and numpy mode's)
    starts from +0."""
    total = _expected(np.sum, a, axis=axis, keepdims=keepdims, dtype=dtype)
    if total.dtype.kind not in "fc" or a.dtype.kind not in "fc" or a.size == 0 or \
            not xp._modes.is_strict():
        return total
    axes = tuple(range(a.ndim)) if axis is None else (axis,) if isinstance(axis, int) else axis
    axes = tuple(i % a.ndim for i in axes)
    if not axes:  # a sum of one term is that term
        return a.astype(total.dtype)
    if any(a.shape[i] == 0 for i in axes):
        return total
    moved = np.moveaxis(a.astype(total.dtype), axes, range(-len(axes), 0))
    flat = moved.reshape(*moved.shape[:a.ndim - len(axes)], -1)
    successive = np.add.accumulate(flat, axis=-1)[..., -1]
    if keepdims:
        successive = np.expand_dims(successive, axes)
    parts = (np.real, np.imag) if total.dtype.kind == "c" else (lambda v: v,)
    for part in parts:
        target, source = part(total), part(successive)
        np.copyto(target, source, where=(target == 0) & (source == 0))
    return total


def _assert_accumulated(result: xp.Array, expected: np.ndarray, magnitudes: list[np.ndarray],
                        terms: int, product: bool = False, overflows: np.ndarray | None = None
                        ) -> None:
    """`result` of a sum or product (or a cumulative one) is numpy's `expected`: exactly on the
    devices that run numpy's kernels, and for integers everywhere. Other devices round in their
    own order (and numpy's SIMD complex products fuse multiply-adds), so there: NaNs and
    infinities where numpy has them and the signs of zeros alike, part by part; finite values
    within 2 * terms roundings of their part's magnitude (the same reduction of |x|, or of the
    part's |x|, which bounds the error of any order). A complex product's NaN or infinite parts
    depend on the order: it is non-finite where numpy's is, its finite values compared. Where
    `overflows` (some order of the operations leaves the dtype's range, another may not: 0 * big
    * big is 0 or NaN, big * big * small is inf or finite), any value is right."""
    if result.device.type.name in NUMPY_DEVICES or expected.dtype.kind not in "fc":
        assert_matches(result, expected)
        return
    got = np.asarray(result)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, got.shape)
    finfo = np.finfo(got.dtype)
    bounds = [np.broadcast_to(np.nan_to_num(2 * max(terms, 1) * float(finfo.eps) *
                                            np.asarray(m, np.float64), nan=np.inf), got.shape)
              + float(finfo.smallest_subnormal) for m in magnitudes]
    if overflows is not None:
        keep = ~np.broadcast_to(overflows, got.shape)
        got, expected, bounds = got[keep], expected[keep], [b[keep] for b in bounds]
    if product and got.dtype.kind == "c":
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(expected),
                                      err_msg="non-finite products")
        keep = np.isfinite(expected)
        got, expected, bounds = got[keep], expected[keep], [b[keep] for b in bounds]
    parts = (np.real, np.imag) if got.dtype.kind == "c" else (np.asarray,)
    for part, bound in zip(parts, bounds * len(parts) if len(bounds) == 1 else bounds):
        g, e = part(got), part(expected)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(e), err_msg="NaNs")
        infinite = np.isinf(e) | np.isinf(g)
        np.testing.assert_array_equal(g[infinite], e[infinite], err_msg="infinities")
        zeros = (g == 0) & (e == 0)
        np.testing.assert_array_equal(np.signbit(g[zeros]), np.signbit(e[zeros]),
                                      err_msg="signs of zeros")
        finite = np.isfinite(g) & np.isfinite(e)
        error = np.abs(np.where(finite, g, 0).astype(np.float64) - np.where(finite, e, 0))
        assert (error[finite] <= bound[finite]).all(), \
            f"beyond rounding: {g[finite]} against {e[finite]}"


def _check_sum_or_prod(name: str, result: xp.Array, a: np.ndarray, **kwargs) -> None:
    """`result` of xp.sum or xp.prod (or a cumulative one) of `a` with numpy's arguments
    `kwargs` against the oracle (_assert_accumulated)."""
    oracle = {"sum": _spec_sum, "prod": np.prod, "cumulative_sum": np.cumsum,
              "cumulative_prod": np.cumprod}[name]
    expected = _expected(oracle, a, **kwargs)
    if result.device.type.name in NUMPY_DEVICES or expected.dtype.kind not in "fc":
        assert_matches(result, expected)
        return
    axis = kwargs.get("axis")
    axes = range(a.ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
    terms = math.prod(a.shape[i] for i in axes)
    if name.startswith("cumulative"):
        terms = a.shape[axis]
    product = name.endswith("prod")
    parts = (np.real, np.imag) if a.dtype.kind == "c" and not product else (np.asarray,)
    magnitudes = [_expected(oracle, np.abs(part(a)), **{**kwargs, "dtype": None})
                  for part in parts]
    size, finfo = np.abs(a).astype(np.float64), np.finfo(expected.dtype)
    if product:  # some order multiplies the large terms first, or the small ones
        logs = _expected(np.log, np.where((size == 0) | np.isinf(size), 1.0, size))
        total = np.cumsum if name.startswith("cumulative") else np.sum
        grow, shrink = (_expected(total, bound(logs, 0.0), **{**kwargs, "dtype": np.float64})
                        for bound in (np.maximum, np.minimum))
        overflows = (grow > np.log(finfo.max)) | (shrink < np.log(finfo.tiny))
    else:
        overflows = _expected(oracle, size, **{**kwargs, "dtype": np.float64}) > finfo.max
    _assert_accumulated(result, expected, magnitudes, terms, product, overflows)


def _close(result: xp.Array, expected: np.ndarray) -> None:
    """Same dtype and shape, values equal to rounding (NaN where NaN)."""
    assert result.dtype.name == expected.dtype.name and result.shape == expected.shape
    rtol = {np.float16: 2e-3, np.float32: 1e-5, np.complex64: 1e-5}.get(expected.dtype.type,
                                                                          1e-12)
    for part in (np.real, np.imag):
        np.testing.assert_allclose(part(np.asarray(result)), part(expected), rtol=rtol, atol=0,
                                   equal_nan=True)


# -- sum and prod ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["sum", "prod"])
@pytest.mark.parametrize("dtype", NUMERIC, ids=ids(NUMERIC))
def test_sum_and_prod(name, dtype):
    """Every axis form and view, keepdims, the spec's accumulator dtype."""
    accumulator = np_dtype(_accumulator(dtype))
    for x, a in _views(dtype):
        for axis in AXES:
            for keepdims in (False, True):
                _check_sum_or_prod(name, getattr(xp, name)(x, axis=axis, keepdims=keepdims), a,
                                   axis=axis, keepdims=keepdims, dtype=accumulator)


@pytest.mark.parametrize("name", ["sum", "prod"])
@pytest.mark.parametrize(("dtype", "accumulator"), [
    (xp.int8, xp.int64), (xp.int32, xp.int64), (xp.int64, xp.int64), (xp.uint8, xp.uint64),
    (xp.uint32, xp.uint64), (xp.uint64, xp.uint64), (xp.float32, xp.float32),
    (xp.float64, xp.float64), (xp.complex64, xp.complex64), (xp.complex128, xp.complex128)],
    ids=lambda d: d.name)
def test_sum_and_prod_default_dtype(name, dtype, accumulator):
    """Small integers do not overflow: they are accumulated in the default integer type."""
    big = 100 if dtype in INTEGER else 1e3
    x = xp.full((50,), big, dtype=dtype)
    result = getattr(xp, name)(x)
    assert result.dtype is accumulator
    _check_sum_or_prod(name, result, np.asarray(x), dtype=np_dtype(accumulator))


@pytest.mark.parametrize("name", ["sum", "prod"])
@pytest.mark.parametrize(("dtype", "requested"), [
    (xp.int8, xp.int8), (xp.int32, xp.float64), (xp.uint8, xp.int16), (xp.float32, xp.float64),
    (xp.float64, xp.float32), (xp.float32, xp.complex128), (xp.int64, xp.complex64)],
    ids=lambda d: d.name)
def test_sum_and_prod_with_an_explicit_dtype(name, dtype, requested):
    """The input is cast to `dtype` before accumulating."""
    a = sample((3, 5), dtype)
    for axis in (None, 0, 1):
        result = getattr(xp, name)(xp.asarray(a), axis=axis, dtype=requested)
        with np.errstate(all="ignore"):
            cast = a.astype(np_dtype(requested))
        _check_sum_or_prod(name, result, cast, axis=axis, dtype=np_dtype(requested))


@pytest.mark.parametrize("name", ["sum", "prod", "cumulative_sum", "cumulative_prod"])
def test_complex_input_refuses_a_real_accumulator(name):
    with pytest.raises(TypeError):
        getattr(xp, name)(xp.asarray([1j, 2j]), dtype=xp.float64)


@pytest.mark.parametrize(("name", "identity"), [("sum", 0), ("prod", 1)])
@pytest.mark.parametrize("dtype", NUMERIC, ids=ids(NUMERIC))
def test_empty_sum_and_prod_are_their_identity(name, identity, dtype):
    empty = xp.zeros((0, 3), dtype=dtype)
    accumulator = np_dtype(_accumulator(dtype))
    assert_matches(getattr(xp, name)(empty), np.asarray(identity, dtype=accumulator))
    assert_matches(getattr(xp, name)(empty, axis=0), np.full(3, identity, dtype=accumulator))
    assert_matches(getattr(xp, name)(empty, axis=1), np.zeros(0, dtype=accumulator))
    assert_matches(getattr(xp, name)(empty, axis=0, keepdims=True),
                   np.full((1, 3), identity, dtype=accumulator))


def test_sum_of_floats_propagates_nan_and_infinities():
    a = np.array([[1.0, np.nan], [np.inf, 2.0], [np.inf, -np.inf]])
    assert_matches(xp.sum(xp.asarray(a), axis=1), _expected(np.sum, a, axis=1))
    assert math.isnan(float(xp.prod(xp.asarray([0.0, np.inf]))))


@pytest.mark.strict
def test_sum_of_negative_zeros_is_negative_zero_in_strict_mode():
    """As successive additions: -0 + -0 is -0; the empty sum is +0."""
    x = xp.asarray([[-0.0, -0.0], [0.0, -0.0]])
    assert_matches(xp.sum(x, axis=1), np.array([-0.0, 0.0]))
    assert_matches(xp.sum(x, axis=0), np.array([0.0, -0.0]))
    assert_matches(xp.sum(x[0]), np.asarray(-0.0))
    assert_matches(xp.sum(x[:, :0], axis=1), np.zeros(2))
    z = xp.asarray([complex(-0.0, 0.0), complex(-0.0, -0.0)], dtype=xp.complex64)
    assert_matches(xp.sum(z), np.asarray(complex(-0.0, 0.0), dtype=np.complex64))
    assert_matches(xp.sum(x[0], dtype=xp.float32), np.asarray(-0.0, dtype=np.float32))
    assert_matches(xp.mean(x, axis=1), np.array([-0.0, 0.0]))


@pytest.mark.parametrize("dtype", FLOATING, ids=ids(FLOATING))
@pytest.mark.parametrize("size", [1, 3, 300_001])  # the compiled fast path, and threads
def test_sum_of_negative_zeros_is_positive_zero_in_numpy_mode(device, dtype, size):
    """numpy's sums start from +0; on every device, with and without keepdims."""
    zero = complex(-0.0, -0.0) if dtype in COMPLEX_FLOATING else -0.0
    a = np.full((size, 2), zero, np_dtype(dtype))
    x = xp.asarray(a, device=device)
    for axis, keepdims in ((None, False), (0, False), (0, True), (1, False)):
        for name in ("sum", "mean"):
            assert_matches(getattr(xp, name)(x, axis=axis, keepdims=keepdims),
                           getattr(np, name)(a, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("shape, axes", [((5,), (0,)), ((3, 4), (0,)), ((300_001, 2), (0, 1))])
def test_reduce_starts_sums_from_the_zero_on_the_call(device, shape, axes):
    """The backend's reduce: a floating-point sum of zeros that are all -0 is +0 where the call
    says `positive_zero`, else -0, whatever the mode; any other sum is the same bit for bit
    either way."""
    backend = xp.asarray(0, device=device).device.backend
    kept = tuple(n for i, n in enumerate(shape) if i not in axes)
    for dtype in FLOATING:
        complex_ = dtype in COMPLEX_FLOATING
        zero, positive = (complex(-0.0, -0.0), 0j) if complex_ else (-0.0, 0.0)
        zeros = xp.asarray(np.full(shape, zero, np_dtype(dtype)), device=device)
        values = xp.asarray(sample(shape, dtype), device=device)
        for positive_zero in (False, True):
            out = xp.empty(kept, dtype=dtype, device=device)
            backend.reduce(REDUCTIONS["sum"], zeros, axes, out, positive_zero=positive_zero)
            assert_matches(out, np.full(kept, positive if positive_zero else zero,
                                        np_dtype(dtype)))
        sums = []
        for positive_zero in (False, True):
            sums.append(xp.empty(kept, dtype=dtype, device=device))
            backend.reduce(REDUCTIONS["sum"], values, axes, sums[-1], positive_zero=positive_zero)
        assert_matches(sums[1], np.asarray(sums[0].to_device("cpu")))


# -- max and min -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("dtype", REAL, ids=ids(REAL))
def test_max_and_min(name, dtype):
    """Every axis form and view; NaNs propagate (the samples hold NaN)."""
    for x, a in _views(dtype):
        for axis in AXES:
            for keepdims in (False, True):
                expected = _expected(getattr(np, name), a, axis=axis, keepdims=keepdims)
                assert_matches(getattr(xp, name)(x, axis=axis, keepdims=keepdims), expected)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_and_min_propagate_nan(name):
    x = xp.asarray([[1.0, np.nan, 3.0], [np.inf, -np.inf, 0.0]])
    assert math.isnan(float(getattr(xp, name)(x)))
    result = np.asarray(getattr(xp, name)(x, axis=1))
    assert math.isnan(result[0]) and not math.isnan(result[1])


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_and_min_of_an_empty_selection_raise(name):
    empty = xp.zeros((0, 3))
    for axis in (None, 0, (0, 1)):
        with pytest.raises(ValueError):
            getattr(xp, name)(empty, axis=axis)
    assert getattr(xp, name)(empty, axis=1).shape == (0,)  # nothing to reduce: no error
    assert getattr(xp, name)(empty, axis=()).shape == (0, 3)


@pytest.mark.strict
@pytest.mark.parametrize("name", ["max", "min", "mean", "var", "std"])
@pytest.mark.parametrize("dtype", BOOL + COMPLEX_FLOATING + INTEGER[:1],
                         ids=ids(BOOL + COMPLEX_FLOATING + INTEGER[:1]))
def test_functions_refuse_dtypes_outside_their_category(name, dtype):
    allowed = {"max": REAL, "min": REAL, "mean": FLOATING}.get(name, REAL_FLOATING)
    x = xp.ones(3, dtype=dtype)
    if dtype in allowed:
        getattr(xp, name)(x)
    else:
        with pytest.raises(TypeError):
            getattr(xp, name)(x)


# -- mean, var and std -----------------------------------------------------------------------------
def _mean_by_parts(a: np.ndarray, **kwargs) -> np.ndarray:
    """numpy's mean, of the real and imaginary parts separately for complex input."""
    if a.dtype.kind != "c":
        return _expected(np.mean, a, **kwargs)
    real, imag = _expected(np.mean, a.real, **kwargs), _expected(np.mean, a.imag, **kwargs)
    result = np.empty(real.shape, a.dtype)
    result.real, result.imag = real, imag
    return result


@pytest.mark.parametrize("dtype", FLOATING, ids=ids(FLOATING))
def test_mean(dtype):
    for x, a in _views(dtype):
        for axis in AXES:
            for keepdims in (False, True):
                _close(xp.mean(x, axis=axis, keepdims=keepdims),
                       _mean_by_parts(a, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("dtype", REAL_FLOATING, ids=ids(REAL_FLOATING))
@pytest.mark.parametrize("correction", [0, 1, 0.5, 2.0])
def test_var_and_std(name, dtype, correction):
    """Finite data (NaN propagation has its own test), every axis form and view."""
    data = np.random.default_rng(1).standard_normal((4, 6)).astype(np_dtype(dtype))
    base = xp.asarray(data)
    for view in VIEWS.values():
        x, a = view(base), view(data)
        for axis in AXES:
            for keepdims in (False, True):
                expected = _expected(getattr(np, name), a, axis=axis, ddof=correction,
                                     keepdims=keepdims)
                count = a.size // max(expected.size, 1) if a.size else 0
                if count - correction <= 0:  # the spec's NaN, where numpy divides by <= 0
                    expected = np.full_like(expected, np.nan)
                _close(getattr(xp, name)(x, axis=axis, correction=correction,
                                         keepdims=keepdims), expected)


@pytest.mark.parametrize("name", ["var", "std"])
def test_var_and_std_propagate_nan_and_need_degrees_of_freedom(name):
    """NaN where a NaN is reduced or where M - correction <= 0, with no warnings."""
    x = xp.asarray([[1.0, np.nan, 2.0], [1.0, 2.0, 4.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = np.asarray(getattr(xp, name)(x, axis=1))
        assert math.isnan(result[0]) and not math.isnan(result[1])
        for correction, axis in ((3, 1), (2, 0), (4.5, 1), (1, ())):
            result = getattr(xp, name)(x, axis=axis, correction=correction)
            assert np.isnan(np.asarray(result)).all()
        assert xp.isnan(getattr(xp, name)(xp.zeros((0, 2)), axis=0)).shape == (2,)
        keep = getattr(xp, name)(xp.zeros((0, 2)), axis=0, keepdims=True)
        assert keep.shape == (1, 2) and keep.dtype is xp.float64


@pytest.mark.parametrize("dtype, offset, noise", [(xp.float32, 1e4, 1), (xp.float32, 1e8, 100),
                                                  (xp.float64, 1e8, 1), (xp.float64, 1e12, 1)])
@pytest.mark.parametrize("shape, axis", [((1000,), None), ((300, 40), 0), ((40, 300), 1),
                                         ((5, 7, 9), (0, 2)), ((3000, 5), 0),
                                         ((200_000,), None)])
def test_var_is_accurate_on_data_far_from_zero(dtype, offset, noise, shape, axis):
    """var of `offset` plus normal `noise` (the shapes reach every launch form of a one-pass
    device: a group or a thread per output, rows split in two passes), against the exact
    variance of the same data (long double): at worst twice numpy's two-pass error, or a few
    units in the last place."""
    rng = np.random.default_rng(2)
    data = (offset + noise * rng.standard_normal(shape)).astype(np_dtype(dtype))
    exact = np.var(data.astype(np.longdouble), axis=axis)
    got = np.asarray(xp.var(xp.asarray(data), axis=axis), dtype=np.longdouble)
    error = float(np.max(np.abs(got - exact) / exact))
    numpy_error = float(np.max(np.abs(np.var(data, axis=axis) - exact) / exact))
    assert error <= max(2 * numpy_error, 16 * np.finfo(np_dtype(dtype)).eps), \
        (error, numpy_error)


@pytest.mark.parametrize("dtype", REAL_FLOATING, ids=ids(REAL_FLOATING))
@pytest.mark.parametrize("shape", [(6,), (50_000,)])  # one pass, and rows split in two
def test_var_and_std_of_infinities_are_nan(dtype, shape):
    """An infinity anywhere makes the variance NaN, as numpy's inf - inf does; the rest of
    the rows are finite."""
    data = np.random.default_rng(3).standard_normal((4, *shape)).astype(np_dtype(dtype))
    data[0, -1], data[1, 0], data[2, 2], data[2, 3] = np.inf, -np.inf, np.inf, -np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in ("var", "std"):
            expected = getattr(np, name)(data, axis=1, ddof=1)
            got = getattr(xp, name)(xp.asarray(data), axis=1, correction=1)
            assert np.isnan(np.asarray(got)[:3]).all()
            _close(got, expected)


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("correction", [-1, -0.5, "1", None])
def test_var_and_std_refuse_bad_corrections(name, correction):
    with pytest.raises((ValueError, TypeError)):
        getattr(xp, name)(xp.ones(3), correction=correction)


@pytest.mark.parametrize("dtype", FLOATING, ids=ids(FLOATING))
def test_mean_of_an_empty_selection_is_nan(dtype):
    nan = complex(math.nan, math.nan) if dtype in COMPLEX_FLOATING else math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = xp.mean(xp.zeros((0, 3), dtype=dtype))
        assert result.dtype is dtype and result.shape == ()
        assert_matches(result, np.asarray(nan, dtype=np_dtype(dtype)))
        assert_matches(xp.mean(xp.zeros((0, 3), dtype=dtype), axis=0),
                       np.full(3, nan, dtype=np_dtype(dtype)))


def test_mean_of_complex_numbers_propagates_nan_by_part():
    x = xp.asarray([complex(math.nan, 1.0), complex(2.0, 3.0)])
    result = complex(xp.mean(x))
    assert math.isnan(result.real) and result.imag == 2.0


# -- cumulative sums and products ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("dtype", NUMERIC, ids=ids(NUMERIC))
def test_cumulative(name, dtype):
    """Every axis and view, with and without the initial value (0 or 1), the accumulator dtype."""
    initial = 0 if name == "cumulative_sum" else 1
    accumulator = np_dtype(_accumulator(dtype))
    for x, a in _views(dtype):
        for axis in (0, 1, -1, -2):
            _check_sum_or_prod(name, getattr(xp, name)(x, axis=axis), a, axis=axis,
                               dtype=accumulator)
            with_initial = getattr(xp, name)(x, axis=axis, include_initial=True)
            head, tail = [slice(None)] * a.ndim, [slice(None)] * a.ndim
            head[axis], tail[axis] = slice(0, 1), slice(1, None)
            shape = list(a.shape)
            shape[axis] = 1
            assert_matches(with_initial[tuple(head)], np.full(shape, initial, accumulator))
            _check_sum_or_prod(name, with_initial[tuple(tail)], a, axis=axis, dtype=accumulator)


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
def test_cumulative_of_1d_empty_and_explicit_dtypes(name):
    function = np.cumsum if name == "cumulative_sum" else np.cumprod
    initial = 0 if name == "cumulative_sum" else 1
    a = np.arange(1, 8, dtype=np.int8)
    x = xp.asarray(a)
    assert_matches(getattr(xp, name)(x), function(a, dtype=np.int64))
    assert_matches(getattr(xp, name)(x, dtype=xp.int8), function(a, dtype=np.int8))
    assert_matches(getattr(xp, name)(x, dtype=xp.float32), function(a, dtype=np.float32))
    assert_matches(getattr(xp, name)(x[::-2]), function(a[::-2], dtype=np.int64))
    empty = xp.zeros((3, 0), dtype=xp.float32)
    assert_matches(getattr(xp, name)(empty, axis=1), np.zeros((3, 0), np.float32))
    assert_matches(getattr(xp, name)(empty, axis=1, include_initial=True),
                   np.full((3, 1), initial, np.float32))
    assert_matches(getattr(xp, name)(empty, axis=0, include_initial=True),
                   np.zeros((4, 0), np.float32))


@pytest.mark.strict
@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
def test_cumulative_errors(name):
    function = getattr(xp, name)
    with pytest.raises(ValueError):
        function(xp.ones((2, 3)))  # the axis is required above one dimension
    with pytest.raises(ValueError):
        function(xp.asarray(1.0))  # 0-D
    with pytest.raises(IndexError):
        function(xp.ones((2, 3)), axis=2)
    with pytest.raises(TypeError):
        function(xp.ones((2, 3)), axis=(0,))
    with pytest.raises(TypeError):
        function(xp.asarray([True, False]))
    with pytest.raises(TypeError):
        function([1, 2])


# -- axes and arguments ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std"])
def test_axis_errors(name):
    function = getattr(xp, name)
    x = xp.ones((2, 3))
    for axis in (2, -3, (0, 2)):
        with pytest.raises(IndexError):  # also a ValueError, as in numpy
            function(x, axis=axis)
        with pytest.raises(ValueError):
            function(x, axis=axis)
    with pytest.raises(ValueError):
        function(x, axis=(0, -2))  # repeated
    for axis in (True, 1.0, "0", [0]):
        with pytest.raises(TypeError):
            function(x, axis=axis)
    with pytest.raises(TypeError):
        function(np.ones(3))


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean"])
@pytest.mark.parametrize("dtype", REAL_FLOATING + (xp.int32,), ids=ids(REAL_FLOATING + (xp.int32,)))
def test_0d_input(name, dtype):
    if name == "mean" and dtype is xp.int32:
        return
    value = xp.asarray(3, dtype=dtype)
    result = getattr(xp, name)(value)
    expected_dtype = _accumulator(dtype) if name in ("sum", "prod") else dtype
    assert result.shape == () and result.dtype is expected_dtype and float(result) == 3
    assert getattr(xp, name)(value, axis=(), keepdims=True).shape == ()


@given(x=xps.arrays(dtype=st.sampled_from(standard(REAL)),
                    shape=xps.array_shapes(min_dims=1, max_dims=3, min_side=1)),
       data=st.data())
def test_reductions_on_random_arrays(x, data):
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1)
                     | st.lists(st.integers(0, x.ndim - 1), unique=True).map(tuple), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    a = np.asarray(x)
    for name in ("sum", "prod"):
        _check_sum_or_prod(name, getattr(xp, name)(x, axis=axis, keepdims=keepdims), a,
                           axis=axis, keepdims=keepdims, dtype=np_dtype(_accumulator(x.dtype)))
    for name in ("max", "min"):
        assert_matches(getattr(xp, name)(x, axis=axis, keepdims=keepdims),
                       _expected(getattr(np, name), a, axis=axis, keepdims=keepdims))
    if x.dtype in REAL_FLOATING:
        _close(xp.mean(x, axis=axis, keepdims=keepdims),
               _expected(np.mean, a, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("dtype", [xp.float32, xp.float64, xp.int64], ids=lambda d: d.name)
def test_large_full_reductions(dtype):
    """Arrays big enough for the CPU backend's chunked reductions give numpy's results."""
    a = np.random.default_rng(2).standard_normal(300_001).astype(np_dtype(dtype))
    x = xp.asarray(a)
    for name in ("sum", "max", "min") + (("mean",) if dtype in REAL_FLOATING else ()):
        expected = _expected(getattr(np, name), a, **(
            {"dtype": np_dtype(_accumulator(dtype))} if name == "sum" else {}))
        _close(getattr(xp, name)(x), expected)
        _close(getattr(xp, name)(x, keepdims=True), expected.reshape(1))
    if dtype in REAL_FLOATING:
        a[123_456] = np.nan
        assert math.isnan(float(xp.max(xp.asarray(a)))) and math.isnan(float(xp.sum(
            xp.asarray(a))))


def test_large_full_reductions_keep_the_special_cases():
    a = np.ones(300_001, dtype=np.complex128)
    a[7] = complex(math.nan, 1.0)
    mean = complex(xp.mean(xp.asarray(a)))
    assert math.isnan(mean.real) and not math.isnan(mean.imag)
    with xp.set_strict(True):
        assert math.copysign(1.0, float(xp.sum(xp.asarray(np.full(300_001, -0.0))))) == -1.0


# -- float16 (numpy mode) --------------------------------------------------------------------------
def _half_close(got: xp.Array, expected: np.ndarray, ulps: int,
                reference: np.ndarray | None = None) -> None:
    """numpy's `expected` bit for bit on numpy's devices; elsewhere within `ulps` float16 ulps
    of `reference` (by default `expected`): the float64 result rounded to float16 where numpy's
    loops round each step to float16 (a sum along a strided axis, a cumulative sum) and another
    device's, carrying float32, is closer to the exact result than numpy's."""
    assert got.dtype is xp.float16 and got.shape == expected.shape
    if got.device.type.name in NUMPY_DEVICES and reference is None:
        assert_matches(got, expected)
        return
    target = expected if reference is None else reference
    values = np.asarray(got.to_device(xp.Device("cpu"))).astype(np.float64)
    wide = target.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(values), np.isnan(wide))
    finite = np.isfinite(wide)
    np.testing.assert_array_equal(values[~finite & ~np.isnan(wide)],
                                  wide[~finite & ~np.isnan(wide)])
    spacing = np.spacing(np.abs(target[finite])).astype(np.float64)
    assert (np.abs(values[finite] - wide[finite]) <= ulps * spacing).all(), (values, wide)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)], ids=str)
def test_float16_reductions_are_numpys(axis):
    """numpy's dtypes, and numpy's values on numpy's devices: sum, max, min float16 (its loops
    carry float32 and round once, or round each step along a strided axis), mean summed and
    divided in float32; prod, var and std float16 within a few ulps (numpy's own order of
    operations depends on the view's layout; var divides in float64); on every view. Other
    devices carry float32: within an ulp or two of the float64 result rounded to float16."""
    rng = np.random.default_rng(5)
    data = (rng.standard_normal((37, 21)) * 8).astype(np.float16)
    data[3, 4], data[5, :] = np.float16(-0.0), np.float16(0.0)
    for x, a in view_pairs(data):
        on_numpy = x.device.type.name in NUMPY_DEVICES
        with np.errstate(all="ignore"):
            for name, ulps in (("sum", 1), ("prod", 8), ("max", 0), ("min", 0), ("mean", 1),
                               ("var", 4), ("std", 4)):
                # (prod: factors near 1, so that float32 neither overflows nor makes inf * 0)
                y, b = (1 + x / 256, 1 + a / np.float16(256)) if name == "prod" else (x, a)
                expected = np.asarray(getattr(np, name)(b, axis=axis))
                assert expected.dtype == np.float16, name
                exact = np.asarray(getattr(np, name)(b.astype(np.float64), axis=axis)
                                   ).astype(np.float16)
                reference = None if on_numpy or name in ("max", "min", "mean") else exact
                if on_numpy and name in ("prod", "var", "std"):  # (numpy's order by layout)
                    reference = expected
                _half_close(getattr(xp, name)(y, axis=axis), expected, ulps, reference)
            for name, oracle in (("argmax", np.argmax), ("argmin", np.argmin)):
                if axis in (0, 1, None):
                    assert_matches(getattr(xp, name)(x, axis=axis),
                                   oracle(a, axis=axis).astype(np.int64))


def test_float16_sums_overflow_and_keep_specials_as_numpy():
    """A float16 sum beyond 65504 is infinity (numpy's float32 running value, rounded once:
    three times 30000 is 90000); NaN and infinities propagate; an empty sum is +0, a mean NaN."""
    for values in ([30000.0, 30000.0, 30000.0], [30000.0, 30000.0, -30000.0], [1.0, np.nan],
                   [np.inf, -np.inf], [np.inf, 1.0], [-0.0, -0.0], []):
        a = np.array(values, np.float16)
        x = xp.asarray(a)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            assert_matches(xp.sum(x), np.sum(a))
            assert_matches(xp.prod(x), np.prod(a))
            assert_matches(xp.mean(x), np.mean(a))


def test_float16_cumulative_sums_are_numpys():
    """Exact values (eighths, small sums) add exactly in float16 and float32 alike, so every
    device gives numpy's bits; beyond 2048 float16 rounds each step (numpy's running value is
    float16): within a few ulps off numpy's devices."""
    a = (np.arange(60, dtype=np.float16) % 7 - 3) / np.float16(8)
    x = xp.asarray(a)
    assert_matches(xp.cumulative_sum(x), np.cumsum(a))
    factors = np.array([2.0, 0.5, 1.5, -1.0, 3.0, 0.25, 1.25, 2.0], np.float16)  # exact products
    assert_matches(xp.cumulative_prod(xp.asarray(factors)), np.cumprod(factors))
    assert_matches(xp.cumulative_sum(x, include_initial=True),
                   np.concatenate([[np.float16(0)], np.cumsum(a)]))
    big = np.full(300, 21.5, np.float16)
    exact = np.cumsum(big.astype(np.float64)).astype(np.float16)
    if x.device.type.name in NUMPY_DEVICES:
        assert_matches(xp.cumulative_sum(xp.asarray(big)), np.cumsum(big))
    else:  # numpy's float16 running value drifts (3.5% at the end here); float32's does not
        _half_close(xp.cumulative_sum(xp.asarray(big)), np.cumsum(big), 1, exact)


def test_float16_matmul_is_numpys():
    """numpy sums a float16 product's terms in float32, in order, and rounds once: so does every
    device (bit for bit)."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((9, 70)).astype(np.float16)
    b = rng.standard_normal((70, 5)).astype(np.float16)
    assert_matches(xp.asarray(a) @ xp.asarray(b), a @ b)
    assert_matches(xp.matmul(xp.asarray(a)[::2], xp.asarray(b)), a[::2] @ b)
    assert_matches(xp.vecdot(xp.asarray(a[0]), xp.asarray(a[1])), np.vecdot(a[0], a[1]))
