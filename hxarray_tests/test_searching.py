"""Searching functions (spec: "Searching Functions") against numpy: argmax/argmin, count_nonzero,
nonzero, searchsorted and where."""

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
    INTEGER,
    ON_EACH_DEVICE,
    REAL,
    REAL_FLOATING,
    assert_matches,
    ids,
    np_dtype,
    pair,
    sample,
    view_pairs,
    xps,
)

pytestmark = ON_EACH_DEVICE


def _ties(dtype: xp.DType, shape: tuple[int, ...] = (4, 6)) -> np.ndarray:
    """Few distinct values, so that extremes occur several times."""
    values = np.random.default_rng(3).integers(0, 3, shape)
    return values.astype(bool) if dtype is xp.bool else values.astype(np_dtype(dtype))


# -- argmax and argmin -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", REAL, ids=ids(REAL))
def test_argmax_and_argmin(name, dtype):
    """The first occurrence of the extreme, for special values and ties, every view and axis."""
    for data in (sample((4, 6), dtype), _ties(dtype)):
        for x, a in view_pairs(data):
            for axis in (None, 0, 1, -1):
                for keepdims in (False, True):
                    result = getattr(xp, name)(x, axis=axis, keepdims=keepdims)
                    assert_matches(result, getattr(np, name)(a, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_and_argmin_of_0d_and_empty_arrays(name):
    function = getattr(xp, name)
    assert_matches(function(xp.asarray(5.0)), np.asarray(0))
    assert_matches(function(xp.asarray(5.0), keepdims=True), np.asarray(0))
    assert_matches(function(xp.zeros((2, 0)), axis=0), np.zeros(0, dtype=np.int64))
    for x, axis in ((xp.zeros((2, 0)), None), (xp.zeros((2, 0)), 1), (xp.zeros(0), 0)):
        with pytest.raises(ValueError):
            function(x, axis=axis)


@pytest.mark.strict
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_and_argmin_errors(name):
    function = getattr(xp, name)
    for dtype in BOOL + COMPLEX_FLOATING:
        with pytest.raises(TypeError):
            function(xp.ones(3, dtype=dtype))
    for axis, error in ((2, IndexError), ((0,), TypeError), (True, TypeError)):
        with pytest.raises(error):
            function(xp.ones((2, 3)), axis=axis)
    with pytest.raises(TypeError):
        function([1, 2])


# -- count_nonzero and nonzero ---------------------------------------------------------------------
def _with_zeros(dtype: xp.DType, shape: tuple[int, ...] = (4, 6)) -> np.ndarray:
    data = sample(shape, dtype)
    data.reshape(-1)[::3] = 0
    return data


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_count_nonzero(dtype):
    """NaN and a complex number with one nonzero part count; every axis form and view."""
    for x, a in view_pairs(_with_zeros(dtype)):
        for axis in (None, 0, 1, -1, (0, 1), (), (1, 0)):
            for keepdims in (False, True):
                expected = np.asarray(np.count_nonzero(a, axis=axis, keepdims=keepdims),
                                      dtype=np.int64)
                assert_matches(xp.count_nonzero(x, axis=axis, keepdims=keepdims), expected)


def test_count_nonzero_of_special_and_empty_arrays():
    x = xp.asarray([0j, complex(0, -0.0), complex(0, 1), complex(np.nan, 0), complex(-0.0, 0)])
    assert_matches(xp.count_nonzero(x), np.asarray(2))
    assert_matches(xp.count_nonzero(xp.asarray([np.nan, -0.0, np.inf])), np.asarray(2))
    assert_matches(xp.count_nonzero(xp.zeros((0, 3)), axis=0), np.zeros(3, dtype=np.int64))
    assert_matches(xp.count_nonzero(xp.asarray(True)), np.asarray(1))
    with pytest.raises(IndexError):
        xp.count_nonzero(xp.ones(3), axis=1)


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_nonzero(dtype):
    """Indices in row-major order, one int64 array per dimension, for every view and shape."""
    cases = view_pairs(_with_zeros(dtype)) + [
        (xp.asarray(a), a) for a in (_with_zeros(dtype, (7,)), _with_zeros(dtype, (2, 3, 4)),
                                     np.zeros((3, 0), np_dtype(dtype)))]
    for x, a in cases:
        result = xp.nonzero(x)
        assert isinstance(result, tuple) and len(result) == a.ndim
        for got, expected in zip(result, np.nonzero(a)):
            assert_matches(got, expected.astype(np.int64))


def test_nonzero_refuses_0d_arrays():
    for value in (0, 1.5, True):
        with pytest.raises(ValueError):
            xp.nonzero(xp.asarray(value))
    with pytest.raises(TypeError):
        xp.nonzero([1, 0])


# -- searchsorted ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", REAL, ids=ids(REAL))
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(dtype, side):
    """Sorted x1 with repeats (NaNs last, as sort puts them), x2 of any shape, views of both."""
    x1_data = np.sort(np.concatenate([sample((9,), dtype), sample((5,), dtype)]))
    x2_data = sample((3, 4), dtype, seed=1)
    expected = np.searchsorted(x1_data, x2_data, side=side)
    for x2, a2 in view_pairs(x2_data):
        result = xp.searchsorted(xp.asarray(x1_data), x2, side=side)
        assert_matches(result, np.searchsorted(x1_data, a2, side=side).astype(np.int64))
    doubled = xp.asarray(np.repeat(x1_data, 2))[::2]  # a strided x1
    assert_matches(xp.searchsorted(doubled, xp.asarray(x2_data), side=side),
                   expected.astype(np.int64))
    reversed_ = xp.asarray(x1_data[::-1].copy())[::-1]
    assert_matches(xp.searchsorted(reversed_, xp.asarray(x2_data), side=side),
                   expected.astype(np.int64))


@pytest.mark.parametrize("dtype", REAL, ids=ids(REAL))
def test_searchsorted_with_a_sorter(dtype):
    data = sample((12,), dtype)
    order = np.argsort(data, kind="stable")
    x2 = sample((5,), dtype, seed=2)
    for side in ("left", "right"):
        result = xp.searchsorted(xp.asarray(data), xp.asarray(x2), side=side,
                                 sorter=xp.asarray(order))
        assert_matches(result, np.searchsorted(data, x2, side=side, sorter=order).astype(np.int64))


def test_searchsorted_side_conditions():
    """left: x1[i-1] < v <= x1[i]; right: x1[i-1] <= v < x1[i]; 0 below, M above all."""
    x1 = xp.asarray([1, 2, 2, 2, 5])
    assert np.asarray(xp.searchsorted(x1, xp.asarray([0, 1, 2, 3, 5, 6]))).tolist() == \
        [0, 0, 1, 4, 4, 5]
    assert np.asarray(xp.searchsorted(x1, xp.asarray([0, 1, 2, 3, 5, 6]),
                                      side="right")).tolist() == [0, 1, 4, 4, 5, 5]


@pytest.mark.parametrize("dtype", REAL, ids=ids(REAL))
def test_searchsorted_with_a_python_scalar(dtype):
    """A scalar x2 is a 0-D array of x1's dtype; the result is 0-D."""
    x1 = xp.asarray([1, 2, 2, 3], dtype=dtype)
    for value in (2, 0, 9) + ((2.5, -math.inf, math.nan) if dtype in REAL_FLOATING else ()):
        for side in ("left", "right"):
            expected = np.searchsorted(np.asarray(x1), np.asarray(value, np_dtype(dtype)),
                                       side=side)
            assert_matches(xp.searchsorted(x1, value, side=side), np.asarray(expected, np.int64))


def test_searchsorted_promotes_and_handles_empty_arrays():
    x1 = xp.asarray([1, 3, 5], dtype=xp.int8)
    assert_matches(xp.searchsorted(x1, xp.asarray([300, 2], dtype=xp.int16)), np.array([3, 1]))
    assert_matches(xp.searchsorted(xp.asarray([0.5, 1.5], dtype=xp.float32),
                                   xp.asarray([1.0], dtype=xp.float64)), np.array([1]))
    assert_matches(xp.searchsorted(xp.zeros(0), xp.asarray([1.0, 2.0])), np.zeros(2, np.int64))
    assert_matches(xp.searchsorted(x1, xp.zeros((2, 0), dtype=xp.int8)),
                   np.zeros((2, 0), np.int64))


@pytest.mark.strict
@pytest.mark.parametrize(("args", "kwargs", "error"), [
    ((xp.ones((2, 2)), xp.ones(1)), {}, ValueError),
    ((xp.asarray(1.0), xp.ones(1)), {}, ValueError),
    ((xp.asarray([1j]), xp.asarray([1j])), {}, TypeError),
    ((xp.asarray([True]), xp.asarray([True])), {}, TypeError),
    ((xp.asarray([1, 2]), xp.asarray([1.0])), {}, TypeError),
    ((xp.asarray([1, 2]), 1.5), {}, TypeError),
    ((xp.asarray([1, 2]), True), {}, TypeError),
    ((xp.asarray([1.0, 2.0]), 1j), {}, TypeError),
    ((xp.asarray([1, 2], dtype=xp.uint8), 256), {}, OverflowError),
    ((xp.asarray([1, 2], dtype=xp.int64), xp.asarray([1], dtype=xp.uint64)), {}, TypeError),
    ((xp.asarray([1, 2]), xp.asarray([1])), {"side": "middle"}, ValueError),
    ((xp.asarray([1, 2]), xp.asarray([1])), {"sorter": xp.asarray([0.0, 1.0])}, ValueError),
    ((xp.asarray([1, 2]), xp.asarray([1])), {"sorter": xp.asarray([0])}, ValueError),
    (([1, 2], xp.asarray([1])), {}, TypeError),
], ids=["2-D", "0-D", "complex", "bool", "kinds", "float-scalar", "bool-scalar",
        "complex-scalar", "int-overflow", "int64-uint64", "side", "sorter-dtype", "sorter-shape",
        "list"])
def test_searchsorted_errors(args, kwargs, error):
    with pytest.raises(error):
        xp.searchsorted(*args, **kwargs)


# -- where -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_where(dtype):
    """Arrays of one dtype in every view, and broadcast condition / operands."""
    condition = np.random.default_rng(4).integers(0, 2, (4, 6)).astype(bool)
    data1, data2 = sample((4, 6), dtype), sample((4, 6), dtype, seed=1)
    triples = zip(view_pairs(condition), view_pairs(data1), view_pairs(data2))
    for (c, ca), (x1, a1), (x2, a2) in triples:
        assert_matches(xp.where(c, x1, x2), np.where(ca, a1, a2))
    result = xp.where(xp.asarray(condition[:, :1]), xp.asarray(data1[0]), xp.asarray(data2[0, 0]))
    assert_matches(result, np.where(condition[:, :1], data1[0], data2[0, 0]))
    empty = np.zeros((0, 6), bool)
    assert_matches(xp.where(xp.asarray(empty), xp.asarray(data1[0]), xp.asarray(data2[0])),
                   np.zeros((0, 6), np_dtype(dtype)))


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_where_on_large_arrays_is_bit_exact(dtype):
    """Arrays large enough for the CPU backend's branch-free selection: every view, broadcast
    and scalar operands, NaN payloads and signed zeros kept bit for bit."""
    condition = np.random.default_rng(5).integers(0, 2, (40, 60)).astype(bool)
    data1, data2 = sample((40, 60), dtype), sample((40, 60), dtype, seed=1)
    if dtype in REAL_FLOATING:
        bits = np.dtype(f"u{data1.itemsize}")
        data1.view(bits)[::7] |= 1  # NaN payloads and odd bit patterns
    triples = zip(view_pairs(condition), view_pairs(data1), view_pairs(data2))
    for (c, ca), (x1, a1), (x2, a2) in triples:
        got, expected = np.asarray(xp.where(c, x1, x2)), np.where(ca, a1, a2)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(np.ascontiguousarray(got).view(np.uint8),
                                      np.ascontiguousarray(expected).view(np.uint8))
    c, x1, x2 = xp.asarray(condition), xp.asarray(data1), xp.asarray(data2)
    assert_matches(xp.where(c, x1[:1], x2[:, :1]), np.where(condition, data1[:1], data2[:, :1]))
    scalar = _scalar_for(dtype)
    s = np.asarray(scalar, dtype=np_dtype(dtype))
    assert_matches(xp.where(c, x1, scalar), np.where(condition, data1, s))
    assert_matches(xp.where(c, scalar, x2), np.where(condition, s, data2))


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_where_on_large_arrays_with_a_uniform_condition_is_bit_exact(dtype):
    """A condition that picks one operand everywhere (the CPU copies that operand): every view,
    0-D and scalar operands, broadcast conditions, NaN payloads; the operands left unchanged."""
    data1, data2 = sample((40, 60), dtype), sample((40, 60), dtype, seed=1)
    if dtype in REAL_FLOATING:
        data1.view(np.dtype(f"u{data1.itemsize}"))[::7] |= 1  # NaN payloads, odd bit patterns
    s = np.asarray(_scalar_for(dtype), dtype=np_dtype(dtype))
    for value in (False, True):
        full = np.full((40, 60), value)
        triples = zip(view_pairs(full), view_pairs(data1), view_pairs(data2))
        for (c, ca), (x1, a1), (x2, a2) in [*triples, (pair(full[:1]), pair(data1), pair(data2))]:
            before1, before2 = a1.copy(), a2.copy()
            got, expected = np.asarray(xp.where(c, x1, x2)), np.where(ca, a1, a2)
            np.testing.assert_array_equal(np.ascontiguousarray(got).view(np.uint8),
                                          np.ascontiguousarray(expected).view(np.uint8))
            assert_matches(x1, before1)
            assert_matches(x2, before2)
        c, x1 = xp.asarray(full), xp.asarray(data1)
        assert_matches(xp.where(c, x1, s.item()), np.where(full, data1, s))
        assert_matches(xp.where(c, xp.asarray(s), x1), np.where(full, s, data1))


def test_where_on_large_arrays_of_mixed_dtypes():
    condition = np.random.default_rng(6).integers(0, 2, 5000).astype(bool)
    a1, a2 = np.arange(5000, dtype=np.int8), np.arange(5000, dtype=np.int64)
    assert_matches(xp.where(xp.asarray(condition), xp.asarray(a1), xp.asarray(a2)),
                   np.where(condition, a1, a2))
    assert_matches(xp.where(xp.asarray(condition), xp.asarray(a1.astype(np.float32)), 1e300),
                   np.where(condition, a1.astype(np.float32), np.float32(np.inf)))


def _scalar_for(dtype: xp.DType) -> object:
    return True if dtype is xp.bool else 7 if dtype in INTEGER else -2.5 if dtype in \
        REAL_FLOATING else complex(1, -2)


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_where_with_python_scalars(dtype):
    """A scalar takes the array's dtype, on either side."""
    condition = np.array([[True, False, True], [False, False, True]])
    data = sample((2, 3), dtype)
    scalar = _scalar_for(dtype)
    s = np.asarray(scalar, dtype=np_dtype(dtype))
    assert_matches(xp.where(xp.asarray(condition), xp.asarray(data), scalar),
                   np.where(condition, data, s))
    assert_matches(xp.where(xp.asarray(condition), scalar, xp.asarray(data)),
                   np.where(condition, s, data))


@pytest.mark.parametrize("dtype", REAL_FLOATING, ids=ids(REAL_FLOATING))
def test_where_with_a_complex_scalar_and_a_real_array(dtype):
    complex_dtype = np.result_type(np_dtype(dtype), 1j).type  # (float16's: complex64)
    condition = np.array([True, False])
    data = np.array([1.5, -2.0], dtype=np_dtype(dtype))
    assert_matches(xp.where(xp.asarray(condition), 1j, xp.asarray(data)),
                   np.where(condition, complex_dtype(1j), data.astype(complex_dtype)))


def test_where_promotes_arrays_of_one_kind():
    condition = xp.asarray([True, False])
    assert_matches(xp.where(condition, xp.asarray([1, 2], dtype=xp.int8),
                            xp.asarray([300, 400], dtype=xp.int16)),
                   np.array([1, 400], dtype=np.int16))
    assert_matches(xp.where(condition, xp.asarray([1, 2], dtype=xp.uint8),
                            xp.asarray([-1, -2], dtype=xp.int8)),
                   np.array([1, -2], dtype=np.int16))
    assert_matches(xp.where(condition, xp.asarray([1.5, 2], dtype=xp.float32),
                            xp.asarray([1j, 2j], dtype=xp.complex64)),
                   np.array([1.5, 2j], dtype=np.complex64))


@pytest.mark.strict
@pytest.mark.parametrize(("args", "error"), [
    ((xp.asarray([1, 0]), xp.ones(2), xp.zeros(2)), TypeError),
    ((xp.asarray([True]), 1, 2), TypeError),
    ((xp.asarray([True]), xp.asarray([1]), xp.asarray([1.0])), TypeError),
    ((xp.asarray([True]), xp.asarray([1]), 1.5), TypeError),
    ((xp.asarray([True]), xp.asarray([1]), True), TypeError),
    ((xp.asarray([True]), xp.asarray([True]), 1), TypeError),
    ((xp.asarray([True]), xp.asarray([1], dtype=xp.uint8), 256), OverflowError),
    ((xp.asarray([True, False]), xp.ones(3), 0.0), ValueError),
    (([True], xp.ones(1), xp.ones(1)), TypeError),
    ((xp.asarray([True]), xp.ones(1), "1"), TypeError),
], ids=["int-condition", "two-scalars", "kinds", "float-scalar", "bool-scalar", "int-on-bool",
        "overflow", "shapes", "list-condition", "string"])
def test_where_errors(args, error):
    with pytest.raises(error):
        xp.where(*args)


@given(data=st.data())
def test_where_on_random_broadcast_arrays(data):
    dtype = data.draw(xps.scalar_dtypes(), label="dtype")
    shapes = data.draw(xps.mutually_broadcastable_shapes(3, max_dims=3), label="shapes")
    condition = data.draw(xps.arrays(xp.bool, shapes.input_shapes[0]), label="condition")
    x1 = data.draw(xps.arrays(dtype, shapes.input_shapes[1]), label="x1")
    x2 = data.draw(xps.arrays(dtype, shapes.input_shapes[2]), label="x2")
    assert_matches(xp.where(condition, x1, x2),
                   np.where(np.asarray(condition), np.asarray(x1), np.asarray(x2)))
