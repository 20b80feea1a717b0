"""Set functions (spec: "Set Functions"): unique_all/counts/inverse/values and isin, against numpy
and against their defining properties (NaNs distinct, signed zeros one value, indices of first
occurrences, inverse indices that rebuild x, counts that add up)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hxarray as xp

from .oracle import (
    BOOL,
    COMPLEX_FLOATING,
    DTYPES,
    FLOATING,
    INTEGER,
    ON_EACH_DEVICE,
    VIEWS,
    assert_matches,
    ids,
    np_dtype,
    sample,
    xps,
)

pytestmark = ON_EACH_DEVICE


def _repeats(dtype: xp.DType, shape: tuple[int, ...] = (4, 6)) -> np.ndarray:
    """Sample values, each repeated, so that duplicates (and several NaNs) occur."""
    data = sample((math.prod(shape) // 2,), dtype)
    return np.random.default_rng(5).permutation(np.concatenate([data, data])).reshape(shape)


def _equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Value equality that lets NaN (or a complex number with a NaN part) match NaN."""
    if a.dtype.kind in "fc":
        return (a == b) | (np.isnan(a) & np.isnan(b))
    return a == b


def _check_unique_all(x: xp.Array, a: np.ndarray) -> None:
    """Everything the standard requires of unique_all(x), with numpy's unique as the oracle."""
    values, indices, inverse, counts = xp.unique_all(x)
    flat = a.reshape(-1)
    expected = np.unique(flat, equal_nan=False)
    assert values.dtype.name == a.dtype.name and values.ndim == 1
    got = np.asarray(values)
    assert got.shape == expected.shape and _equal(got, expected).all()
    for array in (indices, inverse, counts):
        assert array.dtype is xp.int64
    assert indices.shape == counts.shape == values.shape and inverse.shape == a.shape
    indices, inverse, counts = np.asarray(indices), np.asarray(inverse), np.asarray(counts)
    assert _equal(flat[indices], got).all()
    for index, value in zip(indices, got):  # the first occurrence
        assert not (flat[:index] == value).any()
    assert _equal(got[inverse], a).all()
    assert counts.sum() == a.size
    assert (counts == [np.sum(flat == v) if v == v else 1 for v in got]).all()


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_unique_all(dtype):
    """Every view (indices refer to x flattened in row-major order), 0-D and empty arrays."""
    base_data = _repeats(dtype)
    base = xp.asarray(base_data)
    for view in VIEWS.values():
        _check_unique_all(view(base), view(base_data))
    for shape in ((), (0,), (2, 0, 3), (9,)):
        data = sample(shape, dtype, seed=1)
        _check_unique_all(xp.asarray(data), data)


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_unique_counts_inverse_and_values_agree_with_unique_all(dtype):
    x = xp.asarray(_repeats(dtype).mT)
    values, indices, inverse, counts = xp.unique_all(x)
    result = xp.unique_counts(x)
    assert result._fields == ("values", "counts")
    assert_matches(result.values, np.asarray(values))
    assert_matches(result.counts, np.asarray(counts))
    result = xp.unique_inverse(x)
    assert result._fields == ("values", "inverse_indices")
    assert_matches(result.values, np.asarray(values))
    assert_matches(result.inverse_indices, np.asarray(inverse))
    assert_matches(xp.unique_values(x), np.asarray(values))
    assert xp.unique_all(x)._fields == ("values", "indices", "inverse_indices", "counts")


@pytest.mark.parametrize("dtype", FLOATING, ids=ids(FLOATING))
def test_nans_are_distinct_and_signed_zeros_are_one_value(dtype):
    nan = complex(math.nan, 0) if dtype in COMPLEX_FLOATING else math.nan
    x = xp.asarray([nan, -0.0, 1.0, nan, 0.0, nan, 1.0], dtype=dtype)
    values, counts = xp.unique_counts(x)
    got = np.asarray(values)
    assert got.shape == (5,) and np.isnan(got).sum() == 3
    assert sorted(np.asarray(counts)[~np.isnan(got)].tolist()) == [2, 2]
    assert (np.asarray(counts)[np.isnan(got)] == 1).all()
    if dtype in COMPLEX_FLOATING:  # a NaN in either part
        z = xp.asarray([complex(0, math.nan), complex(0, math.nan), complex(math.nan, 1)],
                       dtype=dtype)
        assert xp.unique_values(z).shape == (3,)


@given(x=xps.arrays(dtype=xps.scalar_dtypes(), shape=xps.array_shapes(min_dims=0, max_dims=3,
                                                                      min_side=0, max_side=5)))
def test_unique_all_on_random_arrays(x):
    _check_unique_all(x, np.asarray(x))


@pytest.mark.parametrize("name", ["unique_all", "unique_counts", "unique_inverse",
                                  "unique_values"])
def test_unique_refuses_non_arrays(name):
    with pytest.raises(TypeError):
        getattr(xp, name)([1, 2, 2])


# -- isin ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
@pytest.mark.parametrize("invert", [False, True])
def test_isin(dtype, invert):
    """Every view of x1 (the result has its shape), x2 of any shape; NaN is in nothing."""
    data1 = sample((4, 6), dtype)
    data2 = np.concatenate([data1.reshape(-1)[::3], sample((4,), dtype, seed=7)]).reshape(3, -1)
    base = xp.asarray(data1)
    for view in VIEWS.values():
        for x2, a2 in ((xp.asarray(data2), data2), (xp.asarray(data2).mT, data2.mT)):
            result = xp.isin(view(base), x2, invert=invert)
            assert_matches(result, np.isin(view(data1), a2, invert=invert))


def test_isin_uses_value_equality():
    x = xp.asarray([-0.0, 0.0, math.nan, 1.0, math.inf])
    assert np.asarray(xp.isin(x, xp.asarray([0.0, math.nan, math.inf]))).tolist() == \
        [True, True, False, False, True]
    z = xp.asarray([complex(0, -0.0), complex(math.nan, 0)])
    assert np.asarray(xp.isin(z, xp.asarray([0j, complex(math.nan, 0)]))).tolist() == \
        [True, False]


@pytest.mark.parametrize("dtype", INTEGER + FLOATING + BOOL, ids=ids(INTEGER + FLOATING + BOOL))
def test_isin_with_python_scalars(dtype):
    """A scalar x1 gives a 0-D result; a scalar x2 is a one-element set."""
    scalar = True if dtype is xp.bool else 2
    data = np.array([0, 1, 2, 2], dtype=np_dtype(dtype))
    x = xp.asarray(data)
    for invert in (False, True):
        assert_matches(xp.isin(x, scalar, invert=invert),
                       np.isin(data, np.asarray(scalar, np_dtype(dtype)), invert=invert))
        result = xp.isin(scalar, x, invert=invert)
        assert result.shape == () and bool(result) is (not invert)


def test_isin_promotes_arrays_of_one_kind_and_empty_arrays():
    assert_matches(xp.isin(xp.asarray([1, 2], dtype=xp.int8),
                           xp.asarray([2, 300], dtype=xp.int16)), np.array([False, True]))
    assert_matches(xp.isin(xp.asarray([1.5], dtype=xp.float32),
                           xp.asarray([1.5], dtype=xp.float64)), np.array([True]))
    assert_matches(xp.isin(xp.asarray([1.0, 2.0]), 1j), np.array([False, False]))
    assert_matches(xp.isin(xp.zeros((0, 2)), xp.zeros(3)), np.zeros((0, 2), bool))
    assert_matches(xp.isin(xp.zeros(2), xp.zeros(0)), np.zeros(2, bool))
    assert_matches(xp.isin(xp.zeros(2), xp.zeros(0), invert=True), np.ones(2, bool))


@pytest.mark.strict
@pytest.mark.parametrize(("x1", "x2", "error"), [
    (1, 2, TypeError),
    (xp.asarray([1]), xp.asarray([1.0]), TypeError),
    (xp.asarray([1]), xp.asarray([True]), TypeError),
    (xp.asarray([1], dtype=xp.int64), xp.asarray([1], dtype=xp.uint64), TypeError),
    (xp.asarray([1]), 1.5, TypeError),
    (xp.asarray([1], dtype=xp.uint8), 256, OverflowError),
    ([1, 2], xp.asarray([1]), TypeError),
    (xp.asarray([1]), "1", TypeError),
], ids=["two-scalars", "int-float", "int-bool", "int64-uint64", "float-scalar", "overflow",
        "list", "string"])
def test_isin_errors(x1, x2, error):
    with pytest.raises(error):
        xp.isin(x1, x2)


@given(data=st.data())
def test_isin_on_random_arrays(data):
    dtype = data.draw(xps.integer_dtypes() | xps.floating_dtypes(), label="dtype")
    x1 = data.draw(xps.arrays(dtype, xps.array_shapes(min_dims=0, max_dims=3, min_side=0)),
                   label="x1")
    x2 = data.draw(xps.arrays(dtype, xps.array_shapes(min_dims=0, max_dims=2, min_side=0)),
                   label="x2")
    invert = data.draw(st.booleans(), label="invert")
    assert_matches(xp.isin(x1, x2, invert=invert),
                   np.isin(np.asarray(x1), np.asarray(x2), invert=invert))
