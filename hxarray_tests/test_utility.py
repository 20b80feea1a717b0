"""Utility functions (spec: "Utility Functions"): all, any and diff against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hxarray as xp

from .oracle import (
    BOOL,
    DTYPES,
    NUMERIC,
    ON_EACH_DEVICE,
    VIEWS,
    assert_matches,
    here,
    ids,
    np_dtype,
    sample,
    xps,
)

pytestmark = ON_EACH_DEVICE

AXES = [None, 0, 1, -1, (0, 1), (1, 0), ()]


@pytest.mark.parametrize("name", ["all", "any"])
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_all_and_any(name, dtype):
    """Every axis form and view of data with zeros, NaN, infinities and complex numbers with one
    zero part (NaN and infinities count as true, as does a nonzero part)."""
    data = sample((4, 6), dtype)
    data.reshape(-1)[::5] = 0  # enough zeros for both answers to occur
    base = xp.asarray(data)
    for view in VIEWS.values():
        x, a = view(base), view(data)
        for axis in AXES:
            for keepdims in (False, True):
                expected = getattr(np, name)(a, axis=axis, keepdims=keepdims)
                assert_matches(getattr(xp, name)(x, axis=axis, keepdims=keepdims), expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_all_and_any_of_special_values(dtype):
    if dtype in BOOL:
        values, truth = [True, False], [True, False]
    elif dtype.name.startswith("complex"):
        values = [0j, 1j, complex(1, 0), complex(np.nan, 0), complex(0, -np.inf), complex(-0.0, 0)]
        truth = [False, True, True, True, True, False]
    elif dtype.name.startswith("float"):  # (the dtype's smallest subnormal number last)
        tiny = float(np.finfo(np_dtype(dtype)).smallest_subnormal)
        values, truth = [0.0, -0.0, np.nan, np.inf, -np.inf, tiny], [False, False, True, True,
                                                                    True, True]
    else:
        values, truth = [0, 1, int(np.iinfo(np_dtype(dtype)).max)], [False, True, True]
    for value, expected in zip(values, truth):
        x = xp.asarray([value], dtype=dtype)
        assert bool(xp.all(x)) is expected and bool(xp.any(x)) is expected
        assert xp.all(x[0]).shape == () and bool(xp.any(x[0])) is expected


@pytest.mark.parametrize("dtype", [xp.bool, xp.float64], ids=lambda d: d.name)
def test_all_and_any_of_empty_arrays(dtype):
    """An empty reduction: all is True, any is False."""
    empty = xp.zeros((2, 0), dtype=dtype)
    for axis, shape in ((None, ()), (1, (2,)), (0, (0,)), ((0, 1), ())):
        all_, any_ = xp.all(empty, axis=axis), xp.any(empty, axis=axis)
        assert all_.dtype is xp.bool and all_.shape == shape and any_.shape == shape
        assert np.asarray(all_).all() and not np.asarray(any_).any()
    assert xp.all(empty, axis=1, keepdims=True).shape == (2, 1)


@pytest.mark.parametrize("name", ["all", "any"])
def test_all_and_any_errors(name):
    x = xp.ones((2, 3))
    for axis in (2, -3):
        with pytest.raises(IndexError):
            getattr(xp, name)(x, axis=axis)
    for axis in (True, 1.5):
        with pytest.raises(TypeError):
            getattr(xp, name)(x, axis=axis)
    with pytest.raises(ValueError):
        getattr(xp, name)(x, axis=(1, -1))
    with pytest.raises(TypeError):
        getattr(xp, name)([True])


@given(x=xps.arrays(dtype=xps.scalar_dtypes(), shape=xps.array_shapes(min_dims=0, max_dims=3,
                                                                      min_side=0)),
       data=st.data())
def test_all_and_any_on_random_arrays(x, data):
    axis = data.draw(st.none() if x.ndim == 0 else st.none() | st.integers(-x.ndim, x.ndim - 1),
                     label="axis")
    for name in ("all", "any"):
        assert_matches(getattr(xp, name)(x, axis=axis),
                       getattr(np, name)(np.asarray(x), axis=axis))


# -- diff ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", NUMERIC, ids=ids(NUMERIC))
def test_diff(dtype):
    """Every view, axis and order n (recursive differences; n beyond the length is empty)."""
    data = sample((4, 6), dtype)
    base = xp.asarray(data)
    for view in VIEWS.values():
        x, a = view(base), view(data)
        for axis in (0, 1, -1, -2):
            for n in (0, 1, 2, 3, 7):
                with np.errstate(all="ignore"):
                    expected = np.diff(a, n=n, axis=axis)
                assert_matches(xp.diff(x, axis=axis, n=n), expected)


@pytest.mark.parametrize("dtype", [xp.int8, xp.uint16, xp.float32, xp.complex128],
                         ids=lambda d: d.name)
def test_diff_with_prepend_and_append(dtype):
    """prepend/append may have any length along the axis; the result's length is
    M + N1 + N2 - n."""
    a = sample((3, 4), dtype)
    before, after = sample((3, 2), dtype, seed=1), sample((1, 4), dtype, seed=2)
    x = xp.asarray(a)
    with np.errstate(all="ignore"):
        assert_matches(xp.diff(x, prepend=xp.asarray(before)),
                       np.diff(a, prepend=before))
        assert_matches(xp.diff(x, axis=0, append=xp.asarray(after), n=2),
                       np.diff(a, axis=0, append=after, n=2))
        assert_matches(xp.diff(x, axis=1, prepend=xp.asarray(before), append=xp.asarray(a[:, :0]),
                               n=3),
                       np.diff(a, axis=1, prepend=before, n=3))
        assert_matches(xp.diff(x[:, :1], axis=1), np.diff(a[:, :1], axis=1))


@pytest.mark.strict
def test_diff_promotes_prepend_and_append_of_the_same_kind():
    x = xp.asarray([1, 2, 4], dtype=xp.int8)
    result = xp.diff(x, prepend=xp.asarray([100], dtype=xp.int16))
    assert_matches(result, np.array([-99, 1, 2], dtype=np.int16))
    with pytest.raises(TypeError):
        xp.diff(x, append=xp.asarray([1.0]))


@pytest.mark.strict
@pytest.mark.parametrize(("kwargs", "error"), [
    ({"x": xp.asarray(1)}, ValueError),
    ({"n": -1}, ValueError),
    ({"n": 1.0}, TypeError),
    ({"n": True}, TypeError),
    ({"axis": 1}, IndexError),
    ({"axis": 0.0}, TypeError),
    ({"prepend": xp.ones((2, 2))}, ValueError),
    ({"append": xp.ones(())}, ValueError),
    ({"append": [1.0]}, TypeError),
    ({"x": xp.asarray([True, False])}, TypeError),
    ({"x": [1.0, 2.0]}, TypeError),
], ids=["0-D", "negative-n", "float-n", "bool-n", "axis", "float-axis", "prepend-shape",
        "append-0-D", "append-list", "bool", "list"])
def test_diff_errors(kwargs, error):
    kwargs = {name: here(value) for name, value in kwargs.items()}
    x = kwargs.pop("x", xp.asarray([1.0, 2.0, 4.0]))
    with pytest.raises(error):
        xp.diff(x, **kwargs)
