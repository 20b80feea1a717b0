"""numpy's answers in numpy mode where libraries built on the standard (SciPy, marray) rely on
them, checked against numpy on every device: lists of axes in moveaxis, 0-D arrays as bounds of
linspace and arange, format specs of 0-D arrays, the truth of one-element arrays, result_type of
Python scalars, float fill values of integer arrays, the float32 results of floating-point
functions of small integers, complex numbers in numpy's order, and devices() added to a list.
Strict mode keeps refusing what the standard leaves open."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import hxarray as xp

from .oracle import (
    COMPLEX_FLOATING,
    DTYPES,
    ON_EACH_DEVICE,
    REAL_FLOATING,
    STANDARD_DTYPES,
    assert_matches,
    np_dtype,
)

pytestmark = ON_EACH_DEVICE


@pytest.mark.parametrize("strict", [False, True], ids=["numpy", "strict"])
@pytest.mark.parametrize(("source", "destination"), [
    ([0, 1], (-2, -1)), ([2], [0]), ((0, 2), [2, 0]), ([], []), ([-1, 0, 1], [0, 1, 2])])
def test_moveaxis_takes_lists_of_axes_in_both_modes(strict, source, destination):
    a = np.arange(24.0).reshape(2, 3, 4)
    with xp.set_strict(strict):
        assert_matches(xp.moveaxis(xp.asarray(a), source, destination),
                       np.moveaxis(a, source, destination))


def test_moveaxis_still_refuses_lists_of_different_lengths():
    with pytest.raises(ValueError, match="same length"):
        xp.moveaxis(xp.zeros((2, 3)), [0, 1], [0])


# Each mode with its own dtypes: strict mode has the standard's (no float16).
MODES_AND_DTYPES = [(False, d) for d in DTYPES] + [(True, d) for d in STANDARD_DTYPES]
FLOATING_MODES_AND_DTYPES = [(strict, d) for strict, d in MODES_AND_DTYPES
                             if d in REAL_FLOATING + COMPLEX_FLOATING]


def _mode_id(case: object) -> str:
    return ("strict" if case else "numpy") if isinstance(case, bool) else case.name


@pytest.mark.parametrize(("strict", "dtype"), FLOATING_MODES_AND_DTYPES, ids=_mode_id)
def test_linspace_takes_0d_array_bounds(strict, dtype):
    """numpy mode: numpy's values and dtype (a float32 bound keeps float32, a float16 bound
    float16); strict mode: the standard's default dtype."""
    start, stop = np.asarray(-1.5, np_dtype(dtype)), np.asarray(2.25, np_dtype(dtype))
    for num, endpoint in ((5, True), (4, False), (1, True), (0, True)):
        want = np.linspace(start, stop, num, endpoint=endpoint)
        with xp.set_strict(strict):
            got = xp.linspace(xp.asarray(start), xp.asarray(stop), num, endpoint=endpoint)
        if not strict:
            assert_matches(got, want)
            continue
        default = xp.complex128 if dtype in COMPLEX_FLOATING else xp.float64
        assert got.dtype is default
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    assert_matches(xp.linspace(xp.asarray(0), 4, 3), np.linspace(np.asarray(0), 4, 3))


def test_linspace_refuses_arrays_with_more_than_one_element():
    with pytest.raises(TypeError, match="start"):
        xp.linspace(xp.asarray([0.0]), 1.0, 3)


def test_arange_takes_0d_arrays_in_numpy_mode():
    for args in ((1, np.asarray(4.0)), (np.asarray(1), 4), (np.asarray(0.5), np.asarray(3), 0.5),
                 (np.asarray(7, np.int8),)):
        got = xp.arange(*(xp.asarray(a) if isinstance(a, np.ndarray) else a for a in args))
        assert_matches(got, np.arange(*args))
    with xp.set_strict(True), pytest.raises(TypeError, match="stop must be"):
        xp.arange(1, xp.asarray(4.0))


@pytest.mark.parametrize(("strict", "dtype"), MODES_AND_DTYPES, ids=_mode_id)
def test_0d_arrays_take_format_specs(strict, dtype):
    a = np.asarray(3, np_dtype(dtype))
    specs = {"b": ["d", ">5"], "i": ["d", "5d", "+x"], "u": ["d", "08b"], "f": [".3f", "g", "e"],
             "c": [".2f", "g"]}[a.dtype.kind]
    with xp.set_strict(strict):
        x = xp.asarray(a)
        for spec in specs:
            assert format(x, spec) == format(a, spec)
        assert format(x, "") == str(x)
        with pytest.raises(TypeError, match="0-D"):
            format(xp.asarray([a, a]), ".3f")


def test_numpy_scalars_times_0d_arrays_take_format_specs():
    assert f"{np.float64(2) * xp.asarray(1.5):g}" == f"{np.float64(2) * np.asarray(1.5):g}"


@pytest.mark.parametrize("shape", [(1,), (1, 1), (1, 1, 1)])
def test_one_element_arrays_have_a_truth_value_in_numpy_mode(shape):
    for value in (0.0, 2.0, np.nan):
        a = np.full(shape, value)
        assert bool(xp.asarray(a) < 1) is bool(a < 1)
        assert bool(xp.asarray(a)) is bool(a)
    with pytest.raises(TypeError, match="0-D"):
        bool(xp.ones((2,)))
    with xp.set_strict(True), pytest.raises(TypeError, match="0-D"):
        bool(xp.ones(shape))


@pytest.mark.parametrize("scalars", [(1.0, 2.0, 10.0), (1, 2), (True, 1), (True,), (1, 2.5j),
                                     (False, True), (3, 1.5)])
def test_result_type_of_python_scalars_alone(scalars):
    assert xp.result_type(*scalars).name == np.result_type(*scalars).name
    with xp.set_strict(True), pytest.raises(TypeError, match="at least one array or dtype"):
        xp.result_type(*scalars)


@pytest.mark.parametrize("scalars", [(2**64,), (-(2**63) - 1,), (2**100,)])
def test_result_type_of_a_python_int_no_dtype_holds_is_an_overflow(scalars):
    """numpy answers its object dtype, which hxarray does not have."""
    assert np.result_type(*scalars) == np.dtype(object)
    with pytest.raises(OverflowError, match=r"Python int -?\d+ is out of bounds for every"):
        xp.result_type(*scalars)
    assert xp.result_type(xp.float32, *scalars) == xp.float32  # as numpy: a float takes it


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64", "bool"])
def test_full_takes_whole_float_fill_values_in_numpy_mode(dtype):
    """numpy's cast where it loses nothing; a fraction, which numpy's cast drops, raises."""
    for value in {"bool": (0.0, 1.0, 5.0), "uint8": (2.0, 0.0, -0.0)}.get(dtype, (2.0, -3.0, 0.0)):
        assert_matches(xp.full((3,), value, dtype=dtype), np.full((3,), value, dtype=dtype))
        assert_matches(xp.full_like(xp.ones(2, dtype=dtype), value),
                       np.full_like(np.ones(2, dtype=dtype), value))
    with pytest.raises(TypeError, match="round it first"):
        xp.full((2,), 2.5, dtype=dtype)
    with pytest.raises(ValueError, match="nan"):
        xp.full((2,), np.nan, dtype=dtype)
    with pytest.raises(OverflowError, match="out of bounds"):
        xp.full((2,), 300.0, dtype="int8")
    with xp.set_strict(True), pytest.raises(TypeError, match="fill_value"):
        xp.full((2,), 2.0, dtype=getattr(xp, dtype))


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "uint16", "int32"])
def test_floating_functions_of_small_integers_give_numpys_dtype(dtype):
    """numpy's dtypes: float16 for 8-bit integers and bools, float32 for 16-bit ones, float64 for
    wider ones; numpy's values bit for bit."""
    a = np.asarray([0, 1, 3, 7], dtype=dtype)
    want = np.sin(a).dtype
    assert want == {"int16": np.float32, "uint16": np.float32, "int32": np.float64}.get(
        dtype, np.float16)
    for name, reference in (("atan2", np.arctan2), ("hypot", np.hypot)):
        got = getattr(xp, name)(xp.asarray(a), xp.asarray(a[::-1]))
        expected = reference(a, a[::-1])
        np.testing.assert_array_equal(np.asarray(got), expected, strict=True)
    assert xp.sin(xp.asarray(a)).dtype.name == np.dtype(want).name
    assert xp.sqrt(xp.asarray(a)).dtype.name == np.dtype(want).name


def test_devices_is_a_tuple_that_adds_to_lists():
    found = xp.__array_namespace_info__().devices()
    assert isinstance(found, tuple)
    assert found + [None] == [*found, None]
    assert [None] + found == [None, *found]
    assert type(found + (None,)) is tuple


# -- complex numbers in numpy's order --------------------------------------------------------------
_NAN = np.nan
_X = np.array([1 + 2j, 2 + 0j, complex(_NAN, 0), complex(1, _NAN), 1 + 1j, 2 - 1j,
               complex(_NAN, _NAN), complex(np.inf, 1), complex(1, -np.inf), complex(-0.0, 0), 0j,
               1 + 2j])
_Y = np.array([1 + 2j, 1 + 3j, complex(1, _NAN), complex(_NAN, 0), 2 + 0j, 0j, 1 + 1j,
               complex(np.inf, 2), 1 - 1j, 0j, complex(0, -0.0), complex(_NAN, 1)])


def _numpy(function, *args, **kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.asarray(function(*args, **kwargs))


def _same(got: xp.Array, want: np.ndarray) -> None:
    """Equal dtype, shape and values, NaNs in the same places (their signs aside)."""
    assert got.dtype.name == want.dtype.name and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), want, strict=True)


@pytest.mark.parametrize("dtype", COMPLEX_FLOATING, ids=lambda d: d.name)
@pytest.mark.parametrize("name", ["less", "less_equal", "greater", "greater_equal", "maximum",
                                  "minimum"])
def test_complex_comparisons_and_extrema_in_numpy_order(name, dtype):
    x, y = _X.astype(np_dtype(dtype)), _Y.astype(np_dtype(dtype))
    function, reference = getattr(xp, name), getattr(np, name)
    _same(function(xp.asarray(x), xp.asarray(y)), _numpy(reference, x, y))
    for scalar in (1 + 2j, complex(1, _NAN), 2.0):
        _same(function(xp.asarray(x), scalar), _numpy(reference, x, scalar))
        _same(function(scalar, xp.asarray(y)), _numpy(reference, scalar, y))
    _same(function(xp.asarray(x), xp.asarray(y.real)), _numpy(reference, x, y.real))
    with xp.set_strict(True), pytest.raises(TypeError, match="real-valued"):
        function(xp.asarray(x), xp.asarray(y))


def test_complex_comparison_operators():
    x, y = xp.asarray(_X), xp.asarray(_Y)
    _same(x < y, _numpy(np.less, _X, _Y))
    _same(x >= 1, _numpy(np.greater_equal, _X, 1))
    _same(2j > x, _numpy(np.greater, 2j, _X))


@pytest.mark.parametrize("name", ["max", "min", "argmax", "argmin"])
def test_complex_reductions_in_numpy_order(name):
    """The first element holding a NaN, else the lexicographic extremum (its first index)."""
    function, reference = getattr(xp, name), getattr(np, name)
    numbers = _X[~(np.isnan(_X.real) | np.isnan(_X.imag))]
    grid = (np.arange(24) % 5 + 1j * (np.arange(24) % 3)).reshape(2, 3, 4)
    for a in (_X, numbers, _X.reshape(3, 4), grid, _X.astype(np.complex64)):
        x = xp.asarray(a)
        _same(function(x), _numpy(reference, a))
        for axis in range(a.ndim):
            _same(function(x, axis=axis), _numpy(reference, a, axis=axis))
            _same(function(x, axis=axis, keepdims=True),
                  _numpy(reference, a, axis=axis, keepdims=True))
    if name in ("max", "min"):
        _same(function(xp.asarray(grid), axis=(0, 2)), _numpy(reference, grid, axis=(0, 2)))
        _same(function(xp.asarray(grid), axis=(2, 0), keepdims=True),
              _numpy(reference, grid, axis=(2, 0), keepdims=True))
        _same(function(xp.asarray(_X[0])), _X[0])
    with pytest.raises(ValueError, match="empty"):
        function(xp.zeros((0,), dtype=xp.complex128))
    with xp.set_strict(True), pytest.raises(TypeError, match="real-valued"):
        function(xp.asarray(_X))


def test_complex_sort_and_argsort_in_numpy_order():
    """Numbers lexicographically, then R + nan j, nan + R j, nan + nan j; stable."""
    m = np.concatenate([_X, _Y, _X[::-1]]).reshape(3, 12)
    for a in (_X, m, m.T.copy(), m.astype(np.complex64)):
        for axis in range(a.ndim):
            x = xp.asarray(a)
            _same(xp.sort(x, axis=axis), np.sort(a, axis=axis))
            _same(xp.argsort(x, axis=axis), np.argsort(a, axis=axis, kind="stable"))
            flipped = np.flip(a, axis)
            _same(xp.sort(x, axis=axis, descending=True), np.flip(np.sort(a, axis=axis), axis))
            _same(xp.argsort(x, axis=axis, descending=True),
                  a.shape[axis] - 1 - np.flip(np.argsort(flipped, axis=axis, kind="stable"),
                                              axis))
    with xp.set_strict(True), pytest.raises(TypeError, match="real-valued"):
        xp.sort(xp.asarray(_X))


def test_complex_clip_in_numpy_order():
    x, y = xp.asarray(_X), xp.asarray(_Y)
    for low, high in ((1 + 1.5j, 2 - 0.5j), (y, None), (None, y), (complex(_NAN, 0), 2),
                      (1, 2 + 1j), (2 + 0j, 1 + 0j)):
        args = [v if not isinstance(v, xp.Array) else _Y for v in (low, high)]
        _same(xp.clip(x, low, high), _numpy(np.clip, _X, *args))
    _same(xp.clip(xp.asarray(_X.real), 0.5 + 1j, 1.5), _numpy(np.clip, _X.real, 0.5 + 1j, 1.5))
    unclipped = xp.clip(x)
    _same(unclipped, _X)
    with xp.set_strict(True), pytest.raises(TypeError, match="real-valued"):
        xp.clip(x, 1, 2)
