"""Sorting functions (spec: "Sorting Functions"): sort and argsort against numpy, stability on
data with many ties, descending order and NaN placement (last ascending, first descending)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hxarray as xp

from .oracle import (
    BOOL,
    COMPLEX_FLOATING,
    ON_EACH_DEVICE,
    REAL,
    REAL_FLOATING,
    assert_matches,
    ids,
    np_dtype,
    sample,
    standard,
    view_pairs,
    xps,
)

pytestmark = ON_EACH_DEVICE


def _ties(dtype: xp.DType, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Few distinct values (NaN among them for floats), so most keys are equal to others."""
    values = np.random.default_rng(seed).integers(0, 4, shape).astype(np_dtype(dtype))
    if dtype in REAL_FLOATING:
        values[values == 3] = np.nan
    return values


def _descending_order(a: np.ndarray, axis: int) -> np.ndarray:
    """The stable descending order: greatest first, NaNs first, ties in their original order."""
    n = a.shape[axis]
    return n - 1 - np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)


@pytest.mark.parametrize("dtype", REAL, ids=ids(REAL))
def test_sort(dtype):
    """Every view and axis, ascending (numpy's order: NaNs last) and descending (the reverse)."""
    for data in (sample((4, 6), dtype), _ties(dtype, (4, 6))):
        for x, a in view_pairs(data):
            for axis in (0, 1, -1, -2):
                expected = np.sort(a, axis=axis)
                for stable in (True, False):
                    assert_matches(xp.sort(x, axis=axis, stable=stable), expected)
                    assert_matches(xp.sort(x, axis=axis, descending=True, stable=stable),
                                   np.flip(expected, axis))


@pytest.mark.parametrize("dtype", REAL, ids=ids(REAL))
def test_argsort_is_stable(dtype):
    """Equal keys keep their original relative order, ascending and descending, on data where
    nearly every key has equals."""
    for data in (_ties(dtype, (4, 40), seed=1), sample((4, 6), dtype)):
        for x, a in view_pairs(data):
            for axis in (0, 1, -1):
                assert_matches(xp.argsort(x, axis=axis),
                               np.argsort(a, axis=axis, kind="stable").astype(np.int64))
                assert_matches(xp.argsort(x, axis=axis, descending=True),
                               _descending_order(a, axis).astype(np.int64))


@pytest.mark.parametrize("dtype", REAL, ids=ids(REAL))
@pytest.mark.parametrize("descending", [False, True])
def test_unstable_argsort_still_sorts(dtype, descending):
    """stable=False may order ties freely, but the indices must sort x."""
    a = _ties(dtype, (3, 50), seed=2)
    order = np.asarray(xp.argsort(xp.asarray(a), axis=1, descending=descending, stable=False))
    assert order.dtype == np.int64
    assert (np.sort(order, axis=1) == np.arange(50)).all()  # a permutation per row
    expected = np.sort(a, axis=1)
    np.testing.assert_array_equal(np.take_along_axis(a, order, axis=1),
                                  np.flip(expected, 1) if descending else expected)


def test_nan_placement():
    x = xp.asarray([2.0, np.nan, -np.inf, 1.0, np.nan, np.inf, -1.0])
    assert np.asarray(xp.argsort(x)).tolist() == [2, 6, 3, 0, 5, 1, 4]
    assert np.asarray(xp.argsort(x, descending=True)).tolist() == [1, 4, 5, 0, 3, 6, 2]
    np.testing.assert_array_equal(np.asarray(xp.sort(x, descending=True)),
                                  [np.nan, np.nan, np.inf, 2.0, 1.0, -1.0, -np.inf])


@pytest.mark.parametrize("name", ["sort", "argsort"])
def test_sort_of_empty_and_single_element_arrays(name):
    function = getattr(xp, name)
    dtype = np.int64 if name == "argsort" else np.float32
    assert_matches(function(xp.zeros((0, 3), dtype=xp.float32), axis=0), np.zeros((0, 3), dtype))
    assert_matches(function(xp.zeros((3, 0), dtype=xp.float32)), np.zeros((3, 0), dtype))
    assert_matches(function(xp.asarray([5.0], dtype=xp.float32), descending=True),
                   np.zeros(1, dtype) if name == "argsort" else np.array([5.0], dtype))


def test_sort_leaves_its_input_alone():
    data = sample((5, 4), xp.float64)
    x = xp.asarray(data)
    xp.sort(x, axis=0)
    xp.sort(x.mT, descending=True)
    xp.argsort(x[::-1], descending=True)
    assert_matches(x, data)


@pytest.mark.strict
@pytest.mark.parametrize("name", ["sort", "argsort"])
def test_sort_errors(name):
    function = getattr(xp, name)
    for dtype in BOOL + COMPLEX_FLOATING:
        with pytest.raises(TypeError):
            function(xp.ones(3, dtype=dtype))
    with pytest.raises(ValueError):
        function(xp.asarray(1.0))  # 0-D
    for axis, error in ((2, IndexError), (-3, IndexError), ((0,), TypeError),
                        (None, TypeError), (True, TypeError)):
        with pytest.raises(error):
            function(xp.ones((2, 3)), axis=axis)
    with pytest.raises(TypeError):
        function([3, 1, 2])


@given(x=xps.arrays(dtype=st.sampled_from(standard(REAL)),
                    shape=xps.array_shapes(min_dims=1, max_dims=3, min_side=0)),
       data=st.data())
def test_sort_and_argsort_on_random_arrays(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    descending = data.draw(st.booleans(), label="descending")
    a = np.asarray(x)
    order = _descending_order(a, axis) if descending else np.argsort(a, axis=axis,
                                                                    kind="stable")
    assert_matches(xp.argsort(x, axis=axis, descending=descending), order.astype(np.int64))
    expected = np.sort(a, axis=axis)
    result = xp.sort(x, axis=axis, descending=descending)
    np.testing.assert_array_equal(np.asarray(result), np.flip(expected, axis) if descending
                                  else expected)  # signed zeros may come in either order
