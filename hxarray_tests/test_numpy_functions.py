"""numpy's functions beyond the standard (hxarray/_numpy_functions.py, _numpy_statistics.py)
against numpy itself, on every device: values, dtypes and shapes, with empty, 0-D, NaN and
infinite inputs, views that are not contiguous, several dtypes; numpy's protocols routing
`np.median(x)` and friends to them; strict mode refusing them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import hxarray as xp
from hxarray_tests.oracle import ON_EACH_DEVICE, assert_matches

pytestmark = ON_EACH_DEVICE

RNG = np.random.default_rng(7)
DATA = RNG.standard_normal((6, 5)) * 10
DATA_NAN = DATA.copy()
DATA_NAN[1, 2] = DATA_NAN[4, 0] = np.nan
DATA_NAN[:, 3] = np.nan  # an all-NaN column
INTS = RNG.integers(-50, 50, (6, 5))


def close(actual: object, expected: object, rtol: float | None = None) -> None:
    """Same dtype and shape as numpy's result, values within rounding (sums may add in another
    order); NaNs in the same places."""
    assert type(actual) is xp.Array, type(actual)
    expected = np.asarray(expected)
    assert actual.dtype.name == expected.dtype.name, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if rtol is None:
        rtol = 1e-4 if expected.dtype in (np.float32, np.complex64) else 1e-10
    got = np.asarray(actual)
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * 1e-3, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


def quiet(function, *args, **kwargs):
    """numpy's result with its RuntimeWarnings (empty or all-NaN slices) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return function(*args, **kwargs)


# -- creation, joining, axes -----------------------------------------------------------------------


def test_array(device):
    assert_matches(xp.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]]))
    assert_matches(xp.array(2.5, ndmin=2), np.array(2.5, ndmin=2))
    assert_matches(xp.array([1, 2], dtype="float32"), np.array([1, 2], dtype="float32"))
    x = xp.asarray([1.0, 2.0], device=device)
    y = xp.array(x)
    assert y.device == device
    y[0] = 5.0
    assert float(x[0]) == 1.0  # a copy
    assert xp.array(x, copy=None) is x
    with pytest.raises(ValueError):
        xp.array(x, order="F")


@pytest.mark.parametrize("dtypes", [("int32", "float32"), ("int8", "uint8"), ("bool", "int16"),
                                    ("complex64", "float64")])
def test_concatenate(device, dtypes):
    a = (np.arange(6).reshape(2, 3) % 3).astype(dtypes[0])
    b = (np.arange(9).reshape(3, 3)[::-1] % 2).astype(dtypes[1])  # flipped: not contiguous
    x, y = xp.asarray(a), xp.asarray(b)
    assert_matches(xp.concatenate([x, y]), np.concatenate([a, b]))
    assert_matches(xp.concatenate([x, y], axis=None), np.concatenate([a, b], axis=None))
    assert_matches(xp.concatenate((x.mT, y.mT), axis=1), np.concatenate((a.T, b.T), axis=1))
    assert_matches(xp.concatenate([x, y], dtype="complex128"),
                   np.concatenate([a, b], dtype="complex128"))
    out = xp.empty((5, 3), dtype=xp.complex128)
    assert xp.concatenate([x, y], out=out) is out
    assert_matches(out, np.concatenate([a, b]).astype(np.complex128))


def test_concatenate_edge_cases(device):
    assert_matches(xp.concatenate([xp.zeros((0, 2)), xp.ones((1, 2))]),
                   np.concatenate([np.zeros((0, 2)), np.ones((1, 2))]))
    with pytest.raises(TypeError, match="same_kind"):
        xp.concatenate([xp.asarray([1.5])], dtype="int64")
    with pytest.raises(ValueError):
        xp.concatenate([])


@pytest.mark.parametrize("view", ["contiguous", "T", "flip", "step", "T_flip"])
@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
def test_ravel(device, view, order):
    a = np.arange(24.0).reshape(4, 6)
    views = {"contiguous": lambda v: v, "T": lambda v: v.mT if hasattr(v, "mT") else v.T,
             "flip": lambda v: v[::-1], "step": lambda v: v[::2, 1::2],
             "T_flip": lambda v: (v.mT if hasattr(v, "mT") else v.T)[::-1]}
    x = views[view](xp.asarray(a))
    assert_matches(xp.ravel(x, order), np.ravel(views[view](a), order))


def test_swapaxes_and_splits(device):
    a = np.arange(60).reshape(3, 4, 5)
    x = xp.asarray(a)
    assert_matches(xp.swapaxes(x, 0, -1), np.swapaxes(a, 0, -1))
    for sections in (1, 3, 4, 7, [1, 3], [0, 2, 10], [3, 1]):
        got = xp.array_split(x, sections, axis=1)
        want = np.array_split(a, sections, axis=1)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_matches(g, w)
    for g, w in zip(xp.split(x, 5, axis=2), np.split(a, 5, axis=2)):
        assert_matches(g, w)
    with pytest.raises(ValueError, match="equal division"):
        xp.split(x, 3, axis=1)


def test_logspace(device):
    close(xp.logspace(0, 3, 7, device=device), np.logspace(0, 3, 7))
    close(xp.logspace(0, 1, 5, endpoint=False, base=2.0, device=device),
          np.logspace(0, 1, 5, endpoint=False, base=2.0))
    close(xp.logspace(xp.asarray([0.0, 1.0]), xp.asarray([2.0, 3.0]), 4, axis=1),
          np.logspace([0.0, 1.0], [2.0, 3.0], 4, axis=1))
    close(xp.logspace(0, 2, 3, dtype="float32", device=device),
          np.logspace(0, 2, 3, dtype="float32"))
    assert xp.logspace(0, 2, 0, device=device).shape == (0,)


# -- comparisons -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "complex128"])
def test_isclose(device, dtype):
    a = np.array([1.0, np.inf, -np.inf, np.nan, 1e-9, 100.0, 0.0, np.inf])
    b = np.array([1.0 + 1e-6, np.inf, np.inf, np.nan, 0.0, 100.1, -0.0, 5.0])
    if dtype == "int32":
        a, b = np.arange(8), np.arange(8)[::-1]
    a, b = a.astype(dtype), b.astype(dtype)
    x, y = xp.asarray(a), xp.asarray(b)
    for kwargs in ({}, {"equal_nan": True}, {"rtol": 1e-3, "atol": 0.2}):
        assert_matches(xp.isclose(x, y, **kwargs), np.isclose(a, b, **kwargs))
        assert xp.allclose(x, y, **kwargs) == np.allclose(a, b, **kwargs)
    assert_matches(xp.isclose(x, 1.0), np.isclose(a, 1.0))
    assert xp.allclose(x, x, equal_nan=True)
    assert_matches(xp.isclose(x[::-2], y[::2]), np.isclose(a[::-2], b[::2]))


def test_isclose_does_not_call_finite_numbers_close_to_infinity(device):
    assert not bool(xp.isclose(xp.asarray(1e300), xp.asarray(np.inf)))
    assert_matches(xp.isclose(xp.asarray([], dtype=xp.float32), 1.0),
                   np.isclose(np.array([], np.float32), 1.0))


# -- NaN-ignoring reductions -----------------------------------------------------------------------


NAN_REDUCTIONS = ["nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin"]


@pytest.mark.parametrize("name", NAN_REDUCTIONS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "complex128"])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_nan_reductions(device, name, dtype, axis):
    if dtype == "complex128":
        if name in ("nanmax", "nanmin"):
            pytest.skip("numpy's fmax of complex numbers is covered below")
        data = (DATA_NAN + 1j * DATA[::-1]).astype(dtype)
    else:
        data = (DATA_NAN if dtype != "int32" else INTS).astype(dtype)
    if name == "nanprod":
        data = data / 8 if dtype != "int32" else data % 3
    for view in (lambda v: v, lambda v: v[::-1, ::2]):
        a = view(data)
        x = view(xp.asarray(data))
        for keepdims in (False, True):
            want = quiet(getattr(np, name), a, axis=axis, keepdims=keepdims)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                got = getattr(xp, name)(x, axis=axis, keepdims=keepdims)
            if name in ("nanmax", "nanmin") or dtype == "int32" and name in ("nansum",
                                                                             "nanprod"):
                assert_matches(got, want)
            else:
                close(got, want)


def test_nan_reductions_warn_as_numpy(device):
    x = xp.asarray(DATA_NAN)
    with pytest.warns(RuntimeWarning, match="All-NaN"):
        xp.nanmax(x, axis=0)
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        xp.nanmean(x, axis=0)
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        xp.nanvar(x, axis=0, ddof=5)
    with pytest.raises(ValueError):
        xp.nanmax(xp.zeros((0,)))


@pytest.mark.parametrize("name", ["nanvar", "nanstd"])
def test_nan_spread_with_ddof(device, name):
    for ddof in (0, 1, 4, 6):
        want = quiet(getattr(np, name), DATA_NAN, axis=0, ddof=ddof)
        got = quiet(getattr(xp, name), xp.asarray(DATA_NAN), axis=0, ddof=ddof)
        close(got, want)


def test_nan_extrema_and_args(device):
    a = np.array([[np.nan, 1.0, -np.inf], [np.nan, np.nan, np.nan], [2.0, np.nan, np.inf]])
    x = xp.asarray(a)
    for name in ("nanmax", "nanmin"):
        assert_matches(quiet(getattr(xp, name), x, axis=1), quiet(getattr(np, name), a, axis=1))
    for name in ("nanargmax", "nanargmin"):
        assert_matches(getattr(xp, name)(x, axis=0), getattr(np, name)(a, axis=0))
        with pytest.raises(ValueError, match="All-NaN"):
            getattr(xp, name)(x, axis=1)
    c = np.array([1 + 1j, complex(np.nan, 0), 1 + 2j, -5 + 9j])
    assert_matches(xp.nanmax(xp.asarray(c)), np.nanmax(c))
    assert_matches(xp.nanmin(xp.asarray(c)), np.nanmin(c))
    assert_matches(xp.nansum(xp.zeros((0, 3)), axis=0), np.nansum(np.zeros((0, 3)), axis=0))


# -- median and quantiles --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1)])
def test_median(device, dtype, axis):
    data = (np.abs(INTS) % 7 if dtype in ("uint8", "bool") else DATA).astype(dtype)
    for view in (lambda v: v, lambda v: v[1:, ::-2], lambda v: v[:5]):
        a = view(data)
        x = view(xp.asarray(data))
        for keepdims in (False, True):
            close(xp.median(x, axis=axis, keepdims=keepdims),
                  np.median(a, axis=axis, keepdims=keepdims))


def test_median_edge_cases(device):
    close(xp.median(xp.asarray(DATA_NAN), axis=0), np.median(DATA_NAN, axis=0))
    close(xp.median(xp.asarray(3.5)), np.median(3.5))
    with pytest.warns(RuntimeWarning):
        got = xp.median(xp.zeros((0,)))
    close(got, quiet(np.median, np.zeros((0,))))
    big = np.array([np.finfo(np.float32).max] * 2, dtype=np.float32)
    close(quiet(xp.median, xp.asarray(big)), quiet(np.median, big))
    a = np.array([[1.0, np.inf], [np.inf, -np.inf]])
    close(quiet(xp.median, xp.asarray(a), axis=1), quiet(np.median, a, axis=1))


METHODS = ["linear", "lower", "higher", "nearest", "midpoint", "inverted_cdf",
           "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf", "hazen",
           "weibull", "median_unbiased", "normal_unbiased"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_quantile_methods(device, method, dtype):
    data = (DATA if dtype != "int64" else INTS).astype(dtype)
    x = xp.asarray(data)
    for q in (0.5, 0.0, 1.0, [0.1, 0.25, 0.9], np.array([[0.3], [0.7]])):
        for axis in (None, 0, 1):
            close(xp.quantile(x, q, axis=axis, method=method),
                  np.quantile(data, q, axis=axis, method=method))
    close(xp.percentile(x[::-1, 1:], [5, 50, 95], axis=0, method=method, keepdims=True),
          np.percentile(data[::-1, 1:], [5, 50, 95], axis=0, method=method, keepdims=True))


def test_quantile_edge_cases(device):
    x = xp.asarray(DATA_NAN)
    close(xp.quantile(x, 0.3, axis=0), np.quantile(DATA_NAN, 0.3, axis=0))
    close(xp.percentile(x, [10.0, 90.0], axis=1), np.percentile(DATA_NAN, [10.0, 90.0], axis=1))
    close(xp.quantile(xp.asarray(DATA, dtype=xp.float32), np.array([0.5])),
          np.quantile(DATA.astype(np.float32), np.array([0.5])))
    with pytest.raises(ValueError, match="range"):
        xp.quantile(x, 1.5)
    with pytest.raises(ValueError, match="range"):
        xp.percentile(x, -1)
    with pytest.raises(TypeError):
        xp.quantile(xp.asarray([1j]), 0.5)
    with pytest.raises(ValueError, match="not a valid method"):
        xp.quantile(x, 0.5, method="bogus")


def exact(actual: object, expected: object) -> None:
    """numpy's dtype, shape and values bit for bit (NaNs in the same places)."""
    assert type(actual) is xp.Array, type(actual)
    expected = np.asarray(expected)
    assert (actual.dtype.name, actual.shape) == (expected.dtype.name, expected.shape)
    np.testing.assert_array_equal(np.asarray(actual.to_device("cpu")), expected, strict=True)


# NaNs here and there, a slice of NaNs only along each axis, non-contiguous views of it
SPARSE = RNG.standard_normal((5, 7, 4))
SPARSE[RNG.random(SPARSE.shape) < 0.3] = np.nan
SPARSE[1, :, 2] = np.nan


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2)])
def test_nanmedian(device, dtype, axis):
    for view in (lambda v: v, lambda v: v[::-1, 1:, ::2]):
        a = view(SPARSE.astype(dtype))
        x = view(xp.asarray(SPARSE.astype(dtype)))
        for keepdims in (False, True):
            exact(quiet(xp.nanmedian, x, axis=axis, keepdims=keepdims),
                  quiet(np.nanmedian, a, axis=axis, keepdims=keepdims))


def test_nanmedian_edge_cases(device):
    with pytest.warns(RuntimeWarning, match="All-NaN slice"):
        got = xp.nanmedian(xp.asarray([np.nan, np.nan]))
    exact(got, quiet(np.nanmedian, np.array([np.nan, np.nan])))
    exact(xp.nanmedian(xp.asarray(INTS), axis=0), np.nanmedian(INTS, axis=0))  # no NaNs: median
    exact(xp.nanmedian(xp.asarray([1.0, np.inf, np.nan, -np.inf, -0.0])),
          np.nanmedian([1.0, np.inf, np.nan, -np.inf, -0.0]))
    exact(xp.nanmedian(xp.asarray(2.5)), np.nanmedian(2.5))
    with pytest.warns(RuntimeWarning):
        got = xp.nanmedian(xp.zeros((0, 3)), axis=0)
    exact(got, quiet(np.nanmedian, np.zeros((0, 3)), axis=0))
    out = xp.empty((7, 4), device=device)
    assert quiet(xp.nanmedian, xp.asarray(SPARSE), axis=0, out=out) is out
    exact(out, quiet(np.nanmedian, SPARSE, axis=0))
    assert np.nanmedian(xp.asarray([1.0, np.nan, 3.0])).device == device  # numpy's protocol


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_nanquantile_methods(device, method, dtype):
    a = SPARSE.astype(dtype)
    x = xp.asarray(a)
    # Python numbers keep x's dtype (numpy's weak q), arrays and numpy scalars promote
    for q in (0.3, 0.999, 1, [0.0, 0.25, 1.0], np.float32(0.7), np.array([0.1, 0.6])):
        for axis in (None, 0, (0, 2)):
            exact(quiet(xp.nanquantile, x, q, axis=axis, method=method),
                  quiet(np.nanquantile, a, q, axis=axis, method=method))
    exact(quiet(xp.nanpercentile, x[:, ::-2], [5, 50, 95], axis=1, method=method,
                keepdims=True),
          quiet(np.nanpercentile, a[:, ::-2], [5, 50, 95], axis=1, method=method,
                keepdims=True))


def test_nanquantile_edge_cases(device):
    x = xp.asarray(SPARSE)
    with pytest.warns(RuntimeWarning, match="All-NaN slice"):
        xp.nanquantile(x, 0.5, axis=1)
    exact(xp.nanquantile(xp.asarray(INTS), 0.4, axis=1), np.nanquantile(INTS, 0.4, axis=1))
    with pytest.raises(ValueError, match="range"):
        xp.nanquantile(x, 1.5)
    with pytest.raises(ValueError, match="range"):
        xp.nanpercentile(x, -1)
    with pytest.raises(ValueError, match="not a valid method"):
        xp.nanquantile(x, 0.5, method="bogus")
    with pytest.raises(TypeError, match="real numbers"):
        xp.nanquantile(xp.asarray([1j, np.nan]), 0.5)
    with pytest.raises(ValueError, match="inverted_cdf"):
        xp.nanquantile(x, 0.5, weights=xp.ones_like(x))  # only that method takes weights
    before = np.asarray(x.to_device("cpu")).copy()
    quiet(xp.nanquantile, x, [0.2, 0.8], axis=0, overwrite_input=True)
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), before)  # never written


@pytest.mark.parametrize("name", ["quantile", "percentile", "nanquantile", "nanpercentile"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_weighted_quantiles(device, name, dtype):
    data = (SPARSE if name.startswith("nan") else np.nan_to_num(SPARSE) + SPARSE[0, 0, 0])
    data = (data if dtype != "int64" else np.abs(INTS[:5, :4]).reshape(5, 4, 1) % 4 *
            np.ones((5, 4, 7), np.int64)).astype(dtype)
    x = xp.asarray(data)
    scale = 100 if "percentile" in name else 1
    weights = RNG.integers(0, 3, data.shape).astype(float)
    weights[0] = 0.5  # no slice weighs nothing
    weights.flat[:3] = 0  # leading zero weights are passed over
    for q in (0.0, 0.3, 1.0, [0.1, 0.5, 0.9], np.float32(0.4)):
        q = np.multiply(q, scale) if not isinstance(q, float) else q * scale
        for keepdims in (False, True):
            exact(quiet(getattr(xp, name), x, q, method="inverted_cdf", weights=weights,
                        keepdims=keepdims),
                  quiet(getattr(np, name), data, q, method="inverted_cdf", weights=weights,
                        keepdims=keepdims))
        # weights along the axes only, in the order `axis` names them; numpy's nan functions
        # fail there (IndexError), so each slice is compared with its 1-D answer
        along = RNG.random((data.shape[2], data.shape[0]))
        got = quiet(getattr(xp, name), x, q, axis=(2, 0), method="inverted_cdf", weights=along)
        for j in range(data.shape[1]):
            exact(got[..., j], quiet(getattr(np, name), data[:, j, :].T, q, method="inverted_cdf",
                                     weights=along, axis=None))


def test_weighted_quantile_errors(device):
    x = xp.asarray(DATA)
    with pytest.raises(ValueError, match="Only method 'inverted_cdf'"):
        xp.quantile(x, 0.5, weights=np.ones(DATA.shape))
    with pytest.raises(TypeError, match="Axis must be specified"):
        xp.quantile(x, 0.5, method="inverted_cdf", weights=np.ones(6))
    with pytest.raises(ValueError, match="consistent with shape"):
        xp.quantile(x, 0.5, axis=0, method="inverted_cdf", weights=np.ones(5))
    with pytest.raises(ValueError, match="non-negative"):
        xp.quantile(x, 0.5, axis=0, method="inverted_cdf", weights=-np.ones(6))
    with pytest.raises(ValueError, match="all zero"):
        xp.quantile(x, 0.5, axis=0, method="inverted_cdf", weights=np.zeros(6))
    with pytest.raises(ValueError, match="all zero"):
        xp.nanquantile(xp.asarray([1.0, np.nan]), 0.5, method="inverted_cdf",
                       weights=np.array([0.0, 1.0]))
    with pytest.warns(RuntimeWarning, match="All-NaN slice"):
        got = xp.nanquantile(xp.asarray([[np.nan, np.nan], [1.0, 2.0]]), 0.5, axis=1,
                             method="inverted_cdf", weights=np.ones(2))
    exact(got, np.array([np.nan, 1.0]))


@pytest.mark.parametrize("name", ["nancumsum", "nancumprod"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool"])
def test_nan_running(device, name, dtype):
    a = (SPARSE if dtype.startswith("float") else np.abs(INTS[:5, :4]) % 3)
    a = a[..., 0] if a.ndim == 3 else a
    a = a.astype(dtype)
    x = xp.asarray(a)
    for axis in (None, 0, 1, -1):
        close(getattr(xp, name)(x, axis=axis), getattr(np, name)(a, axis=axis))
    close(getattr(xp, name)(x[::-1], axis=0, dtype="float64"),
          getattr(np, name)(a[::-1], axis=0, dtype="float64"))
    close(getattr(xp, name)(xp.asarray(np.float64(np.nan))), getattr(np, name)(np.nan))
    close(getattr(xp, name)(xp.zeros((0,))), getattr(np, name)(np.zeros((0,))))


# -- averages, covariance, correlation -------------------------------------------------------------


def test_average(device):
    x = xp.asarray(DATA)
    close(xp.average(x), np.average(DATA))
    close(xp.average(x, axis=0), np.average(DATA, axis=0))
    w = RNG.random(5)
    close(xp.average(x, axis=1, weights=w), np.average(DATA, axis=1, weights=w))
    close(xp.average(x, axis=1, weights=xp.asarray(w), keepdims=True),
          np.average(DATA, axis=1, weights=w, keepdims=True))
    full = RNG.random((6, 5))
    got, scale = xp.average(x[::-1], weights=full, returned=True)
    want, want_scale = np.average(DATA[::-1], weights=full, returned=True)
    close(got, want)
    close(scale, want_scale)
    close(xp.average(xp.asarray(INTS), axis=0, weights=np.arange(1, 7)),
          np.average(INTS, axis=0, weights=np.arange(1, 7)))
    got, count = xp.average(x, axis=0, returned=True)
    close(count, np.average(DATA, axis=0, returned=True)[1])
    with pytest.raises(ZeroDivisionError):
        xp.average(x, axis=0, weights=np.zeros(6))
    with pytest.raises(TypeError):
        xp.average(x, weights=w)


def test_cov_and_corrcoef(device):
    m = DATA[:3]
    x = xp.asarray(m)
    close(xp.cov(x), np.cov(m))
    close(xp.cov(x, rowvar=False), np.cov(m, rowvar=False))
    close(xp.cov(x, bias=True), np.cov(m, bias=True))
    close(xp.cov(x, ddof=2), np.cov(m, ddof=2))
    close(xp.cov(x[0], x[1]), np.cov(m[0], m[1]))
    f, aw = np.array([1, 2, 1, 3, 1]), RNG.random(5)
    close(xp.cov(x, fweights=f), np.cov(m, fweights=f))
    close(xp.cov(x, aweights=aw), np.cov(m, aweights=aw))
    close(xp.cov(x, fweights=f, aweights=aw, ddof=1), np.cov(m, fweights=f, aweights=aw, ddof=1))
    close(xp.cov(xp.asarray(INTS[:2])), np.cov(INTS[:2]))
    close(xp.cov(x[0]), np.cov(m[0]))
    c = m[:2] + 1j * m[1:3]
    close(xp.cov(xp.asarray(c)), np.cov(c))
    close(xp.corrcoef(x), np.corrcoef(m))
    close(xp.corrcoef(x[0], x[2]), np.corrcoef(m[0], m[2]))
    close(xp.corrcoef(xp.asarray(c)), np.corrcoef(c))
    close(xp.cov(xp.asarray(m, dtype=xp.float32)), np.cov(m.astype(np.float32)))


# -- counting --------------------------------------------------------------------------------------


def test_bincount(device):
    a = np.array([0, 3, 3, 1, 7, 3, 0])
    x = xp.asarray(a)
    assert_matches(xp.bincount(x), np.bincount(a))
    assert_matches(xp.bincount(x, minlength=12), np.bincount(a, minlength=12))
    assert_matches(xp.bincount(x[::-2]), np.bincount(a[::-2]))
    w = np.array([0.5, 1.0, -2.0, 3.0, 1e-3, 4.0, 1e16])
    close(xp.bincount(x, weights=w), np.bincount(a, weights=w))
    close(xp.bincount(x, weights=xp.asarray([1, 2, 3, 4, 5, 6, 7], dtype=xp.int8)),
          np.bincount(a, weights=np.array([1, 2, 3, 4, 5, 6, 7], dtype=np.int8)))
    assert_matches(xp.bincount(xp.asarray([], dtype=xp.int64)),
                   np.bincount(np.array([], dtype=np.int64)))
    assert_matches(xp.bincount(xp.asarray([True, False, True])),
                   np.bincount(np.array([True, False, True])))
    with pytest.raises(ValueError, match="negative"):
        xp.bincount(xp.asarray([1, -1]))
    with pytest.raises(TypeError):
        xp.bincount(xp.asarray([1.0]))


def test_bincount_sums_without_cancellation(device):
    got = xp.bincount(xp.asarray([0, 1, 1]), weights=xp.asarray([1e16, 1.0, 1.0]))
    assert np.asarray(got).tolist() == [1e16, 2.0]


@pytest.mark.parametrize("bins", [10, 1, 7, [-20.0, -3.0, 0.0, 0.5, 30.0], "auto", "fd",
                                  "sturges", "sqrt", "rice", "scott", "doane"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_histogram(device, bins, dtype):
    data = (DATA if dtype != "int32" else INTS).astype(dtype)
    x = xp.asarray(data)
    got, edges = xp.histogram(x, bins)
    want, want_edges = np.histogram(data, bins)
    assert_matches(got, want)
    close(edges, want_edges)
    got, edges = xp.histogram(x[::-1, ::2], bins, range=(-10, 10))
    want, want_edges = np.histogram(data[::-1, ::2], bins, range=(-10, 10))
    assert_matches(got, want)
    close(edges, want_edges)
    close(xp.histogram_bin_edges(x, bins), np.histogram_bin_edges(data, bins))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_equal_bins_put_values_on_and_beside_the_edges_where_numpy_does(device, dtype):
    """Equal bins place each value by arithmetic, then move it across an edge its rounding
    crossed: values on every edge, one unit in the last place either side of it, outside the
    range and NaN land where numpy puts them."""
    for bins, low, high in ((10, 0.0, 1.0), (7, -3.3, 12.1), (1000, -1.0, 1.0)):
        edges = np.histogram_bin_edges(np.array([low, high], dtype), bins).astype(dtype)
        data = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf),
                               np.array([low - 1, high + 1, np.nan], dtype)]).astype(dtype)
        got = xp.histogram(xp.asarray(data), bins, range=(low, high))[0]
        assert_matches(got, np.histogram(data, bins, range=(low, high))[0])


def test_histogram_weights_density_and_edges(device):
    x = xp.asarray(DATA)
    w = RNG.random(DATA.shape)
    for bins in (5, [-30.0, -1.0, 0.0, 2.0, 30.0]):
        got, _ = xp.histogram(x, bins, weights=w)
        close(got, np.histogram(DATA, bins, weights=w)[0])
        got, _ = xp.histogram(x, bins, density=True)
        close(got, np.histogram(DATA, bins, density=True)[0])
        got, _ = xp.histogram(x, bins, weights=w, density=True)
        close(got, np.histogram(DATA, bins, weights=w, density=True)[0])
    flat = np.full(4, 3.0)
    got, edges = xp.histogram(xp.asarray(flat), 4)
    assert_matches(got, np.histogram(flat, 4)[0])
    close(edges, np.histogram(flat, 4)[1])
    got, edges = xp.histogram(xp.zeros((0,)), 3)
    assert_matches(got, np.histogram(np.zeros((0,)), 3)[0])
    with pytest.raises(ValueError, match="not finite"):
        xp.histogram(xp.asarray([1.0, np.nan]))
    with pytest.raises(ValueError, match="monotonically"):
        xp.histogram(x, [1.0, 0.0])
    top = np.array([0.0, 1.0, 2.0, 2.0])  # the last edge belongs to the last bin
    assert_matches(xp.histogram(xp.asarray(top), [0.0, 1.0, 2.0])[0],
                   np.histogram(top, [0.0, 1.0, 2.0])[0])


# -- products --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("shape_a", "shape_b"), [((5,), (5,)), ((3, 5), (5, 2)), ((5,), (5, 2)),
                                                  ((3, 5), (5,)), ((2, 3, 5), (4, 5, 2)),
                                                  ((), (3,)), ((2, 3), ())])
@pytest.mark.parametrize("dtype", ["float64", "complex128", "int32", "bool"])
def test_dot(device, shape_a, shape_b, dtype):
    a = RNG.standard_normal(shape_a) + (1j * RNG.standard_normal(shape_a) if dtype ==
                                        "complex128" else 0)
    b = RNG.standard_normal(shape_b) + (1j * RNG.standard_normal(shape_b) if dtype ==
                                        "complex128" else 0)
    a, b = (np.asarray(v * 5).astype(dtype) for v in (a, b))
    close(xp.dot(xp.asarray(a), xp.asarray(b)), np.dot(a, b))


EINSUMS = [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("ii->i", [(4, 4)]),
           ("ii", [(4, 4)]), ("ij->", [(3, 4)]), ("ij->ji", [(3, 4)]), ("i,i->", [(5,), (5,)]),
           ("i,j->ij", [(3,), (4,)]), ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
           ("...ij,jk", [(2, 3, 4), (4, 5)]), ("ij...,jk...->ik...", [(3, 4, 2), (4, 5, 1)]),
           ("bij,bjk,bkl->bil", [(2, 3, 4), (2, 4, 5), (2, 5, 3)]), ("iij->j", [(3, 3, 2)]),
           ("ijk,ikj->i", [(2, 3, 3), (2, 3, 3)]), ("i,i,i->i", [(4,), (4,), (4,)]),
           ("ij,ij->ij", [(3, 4), (1, 4)]), ("...", [(2, 3)]), ("i->", [(0,)]),
           (",->", [(), ()]), ("ab,cd->abcd", [(2, 3), (1, 2)]), ("jii->j", [(2, 3, 3)])]


@pytest.mark.parametrize(("subscripts", "shapes"), EINSUMS, ids=[s for s, _ in EINSUMS])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "complex128"])
def test_einsum(device, subscripts, shapes, dtype):
    arrays = [(RNG.standard_normal(s) * 4).astype(dtype) for s in shapes]
    if dtype == "complex128":
        arrays = [a + 1j * RNG.standard_normal(a.shape) for a in arrays]
    want = np.einsum(subscripts, *arrays)
    got = xp.einsum(subscripts, *(xp.asarray(a) for a in arrays))
    assert (got.dtype.name, got.shape) == (want.dtype.name, np.shape(want))
    # sums of products may add in another order (numpy's own order changes with its version and
    # BLAS): the rounding is relative to the terms' size, not to a result that cancels near 0
    if want.dtype.kind not in "fc":
        np.testing.assert_array_equal(np.asarray(got), want)
        return
    terms = np.einsum(subscripts, *(np.abs(a) for a in arrays))
    eps = np.finfo(want.dtype).eps
    np.testing.assert_array_less(np.abs(np.asarray(got) - want), 64 * eps * (terms + 1))


def test_einsum_forms(device):
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 5))
    x, y = xp.asarray(a), xp.asarray(b)
    close(xp.einsum(x, [0, 1], y, [1, 2], [0, 2]), np.einsum(a, [0, 1], b, [1, 2], [0, 2]))
    close(xp.einsum(x, [Ellipsis, 1], y, [1, 2]), np.einsum(a, [Ellipsis, 1], b, [1, 2]))
    close(xp.einsum("ij,jk->ik", x.mT.mT[::-1], y[:, ::2]),
          np.einsum("ij,jk->ik", a[::-1], b[:, ::2]))
    close(xp.einsum("ij,jk->ik", x, y, dtype="complex128"),
          np.einsum("ij,jk->ik", a, b, dtype="complex128"))
    bools = np.array([[True, False], [False, False]])
    assert_matches(xp.einsum("ij,jk->ik", xp.asarray(bools), xp.asarray(bools)),
                   np.einsum("ij,jk->ik", bools, bools))
    assert_matches(xp.einsum("i->", xp.asarray([100, 100], dtype=xp.int8)),
                   np.einsum("i->", np.array([100, 100], dtype=np.int8)))
    assert_matches(xp.einsum("ij,j->i", xp.asarray(INTS), xp.asarray(INTS[0])),
                   np.einsum("ij,j->i", INTS, INTS[0]))
    for bad in ("ij,jk->il", "ij->ii", "ijk", "ij,jk"):
        with pytest.raises(ValueError):
            xp.einsum(bad, x, x)


@pytest.mark.parametrize("ord", [None, 1, 2, np.inf, -np.inf, 0, 3, -1, "fro", "nuc", -2])
def test_norm(device, ord):
    m = DATA[:4, :4]
    x = xp.asarray(m)
    for axis in (None, 0, 1, (0, 1), (1, 0)):
        vector = axis in (0, 1) or axis is None and ord is None
        if (vector and isinstance(ord, str)) or (not vector and ord in (0, 3)):
            continue
        for keepdims in (False, True):
            close(xp.linalg.norm(x, ord, axis, keepdims), np.linalg.norm(m, ord, axis, keepdims))
    if not isinstance(ord, str):
        close(xp.linalg.norm(x[0], ord), np.linalg.norm(m[0], ord))
    close(xp.linalg.norm(xp.asarray(INTS)), np.linalg.norm(INTS))
    close(xp.linalg.norm(xp.asarray(DATA.reshape(2, 3, 5))), np.linalg.norm(DATA.reshape(2, 3, 5)))


# -- padding and interpolation ---------------------------------------------------------------------


PADS = [("constant", {}), ("constant", {"constant_values": ((1, 2), (3, 4))}),
        ("constant", {"constant_values": 7.9}), ("edge", {}), ("wrap", {}), ("reflect", {}),
        ("reflect", {"reflect_type": "odd"}), ("symmetric", {}),
        ("symmetric", {"reflect_type": "odd"}), ("linear_ramp", {}),
        ("linear_ramp", {"end_values": (5, -3)}), ("maximum", {}), ("minimum", {}),
        ("mean", {}), ("median", {}), ("mean", {"stat_length": 2}),
        ("maximum", {"stat_length": ((1, 2), (3, 1))})]


@pytest.mark.parametrize(("mode", "kwargs"), PADS, ids=[f"{m}-{k}" for m, k in PADS])
@pytest.mark.parametrize("dtype", ["float64", "int32", "float32"])
def test_pad(device, mode, kwargs, dtype):
    data = (DATA[:3, :4] * 3).astype(dtype)
    x = xp.asarray(data)
    for width in (2, (1, 3), ((0, 2), (5, 1)), ((7, 9), (0, 11))):
        close(xp.pad(x, width, mode, **kwargs), np.pad(data, width, mode, **kwargs))
    close(xp.pad(x[::-1, ::2], 3, mode, **kwargs), np.pad(data[::-1, ::2], 3, mode, **kwargs))
    line = np.arange(5).astype(dtype)
    flat = {k: v for k, v in kwargs.items() if np.ndim(v) < 2}
    close(xp.pad(xp.asarray(line), (12, 9), mode, **flat), np.pad(line, (12, 9), mode, **flat))


def test_pad_edge_cases(device):
    one = np.array([4.0])
    for mode in ("reflect", "symmetric", "wrap", "edge"):
        close(xp.pad(xp.asarray(one), 3, mode), np.pad(one, 3, mode))
    close(xp.pad(xp.asarray(2.5), 0), np.pad(np.array(2.5), 0))
    close(xp.pad(xp.zeros((0, 2)), 1), np.pad(np.zeros((0, 2)), 1))
    with pytest.raises(ValueError, match="empty axis"):
        xp.pad(xp.zeros((0, 2)), 1, "edge")
    with pytest.raises(ValueError):
        xp.pad(xp.zeros(2), -1)


def test_interp(device):
    px = np.array([0.0, 1.0, 1.0, 2.5, 4.0])
    fp = np.array([0.0, 10.0, 20.0, -5.0, np.inf])
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 2.5, 3.9, 4.0, 5.0, np.nan])
    close(xp.interp(xp.asarray(x), px, fp), np.interp(x, px, fp))
    close(xp.interp(xp.asarray(x), xp.asarray(px), fp, left=-1, right=99.0),
          np.interp(x, px, fp, left=-1, right=99.0))
    complex_fp = fp.astype(np.complex128)
    complex_fp.imag = fp[::-1]
    close(xp.interp(xp.asarray(x[::2]), px, complex_fp), np.interp(x[::2], px, complex_fp))
    close(xp.interp(xp.asarray(x), px, fp, period=3.0), np.interp(x, px, fp, period=3.0))
    close(xp.interp(xp.asarray(x), [1.0], [5.0]), np.interp(x, [1.0], [5.0]))
    close(xp.interp(xp.asarray([1, 2, 3]), [0, 4], [0, 8]), np.interp([1, 2, 3], [0, 4], [0, 8]))
    close(xp.interp(xp.asarray(2.0), px, fp), np.asarray(np.interp(2.0, px, fp)))
    with pytest.raises(ValueError):
        xp.interp(xp.asarray(x), [], [])


# -- methods and dtypes ----------------------------------------------------------------------------


def test_fill_and_view(device):
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    x = xp.asarray(a)
    x[1].fill(-2)
    a[1].fill(-2)
    assert_matches(x, a)
    x.fill(np.float32(1.5))
    a.fill(np.float32(1.5))
    assert_matches(x, a)
    assert_matches(x.view(xp.int64), a.view(np.int64))
    assert_matches(x.view("uint32"), a.view("uint32"))
    assert_matches(x.view(np.int8)[:, ::3], a.view(np.int8)[:, ::3])
    assert_matches(x.view(), a.view())
    assert_matches(xp.asarray(a.view(np.complex128)), a.view(np.complex128))
    assert_matches(x.view(xp.complex128), a.view(np.complex128))
    v = x.view(xp.int64)
    v[0, 0] = 0
    assert float(x[0, 0]) == 0.0  # the same memory
    with pytest.raises(ValueError):
        x.mT.view(xp.int32)
    with pytest.raises(ValueError):
        xp.asarray(1.0).view(xp.int32)
    with pytest.raises(TypeError):
        x.view(np.ndarray)


def test_dtype_equals_its_names(device):
    x = xp.asarray([1, 2], dtype=xp.int64)
    assert x.dtype == "int64" and x.dtype == "i8" and x.dtype != "int32"
    assert xp.float32 == "float32" and xp.float64 == "float" and xp.bool == "?"
    assert not xp.int8 == "not a dtype"
    with xp.set_strict(True):
        assert x.dtype != "int64"


# -- numpy's protocols -----------------------------------------------------------------------------


def test_numpy_functions_stay_on_the_device(device):
    x = xp.asarray(DATA_NAN, device=device)
    results = [np.median(x, axis=0), np.percentile(x, 30), np.quantile(x, [0.2, 0.8], axis=1),
               quiet(np.nanmean, x, axis=0), quiet(np.nanmax, x, axis=1), np.nansum(x),
               quiet(np.nanstd, x), np.einsum("ij->j", x), np.average(x, axis=0),
               np.cov(x[:2]), np.corrcoef(x[:2]), np.histogram(xp.asarray(DATA))[0],
               np.bincount(xp.asarray([1, 2, 2])), np.pad(x, 1),
               np.interp(xp.asarray([0.5]), [0, 1], [0, 2]), np.array_split(x, 2)[0],
               np.linalg.norm(x[:, 0]), np.dot(x[0], x[1]), np.isclose(x, x),
               np.concatenate([x, x], axis=None), np.ravel(x.mT, order="F"),
               np.swapaxes(x, 0, 1)]
    for result in results:
        assert type(result) is xp.Array and result.device == x.device
    close(np.median(xp.asarray(DATA)), np.median(DATA))
    out = xp.empty((5,))
    assert np.nansum(x, axis=0, out=out) is out
    close(out, np.nansum(DATA_NAN, axis=0))
    assert np.allclose(x, x, equal_nan=True) is True


# -- strict mode -----------------------------------------------------------------------------------


NAMES = ["allclose", "array", "array_split", "average", "bincount", "concatenate", "corrcoef",
         "cov", "dot", "einsum", "histogram", "histogram_bin_edges", "interp", "isclose",
         "logspace", "median", "nanargmax", "nanargmin", "nanmax", "nanmean", "nanmin",
         "nanprod", "nanstd", "nansum", "nanvar", "pad", "percentile", "quantile", "ravel",
         "split", "swapaxes"]


@pytest.mark.strict
@pytest.mark.parametrize("name", [*NAMES, "linalg.norm"])
def test_strict_mode_refuses_them(device, name):
    owner, _, attribute = name.rpartition(".")
    function = getattr(getattr(xp, owner) if owner else xp, attribute)
    x = xp.asarray([1.0, 2.0])
    args = {"allclose": (x, x), "isclose": (x, x), "dot": (x, x), "array_split": (x, 2),
            "split": (x, 2), "interp": (x, x, x), "logspace": (0, 1), "pad": (x, 1),
            "percentile": (x, 50), "quantile": (x, 0.5), "swapaxes": (x, 0, 0)}.get(name, (x,))
    with pytest.raises(TypeError, match=f"hxarray.{name}\\(\\) is numpy mode only"):
        function(*args)
    with pytest.raises(AttributeError, match="strict mode"):
        xp.asarray([1.0]).fill(0)
