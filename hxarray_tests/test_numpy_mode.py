"""numpy mode (the default) against numpy itself, where the standard leaves the behaviour open:
NEP 50 promotion across kinds, Python and numpy scalars, integer and bool input to floating-point
functions, numpy's bool loops, reductions of bool and integer arrays, numpy dtypes as dtypes and
numpy's positional forms (float16 where numpy gives it, as from floating-point functions of 8-bit
integers and bools)."""

from __future__ import annotations

import warnings
from itertools import product

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hxarray as xp
from hxarray._ops import BINARY, UNARY

from .conftest import DEVICES
from .oracle import DTYPES, INTEGER, assert_matches, ids, np_dtype, sample

# numpy mode converts the operands to dtypes the standard defines before any backend sees them,
# so it holds on every device: these sweeps over every pair of dtypes run on the CPU, the toy
# plug-in and the from-scratch reference backend. On the simulated CUDA device each pair would
# compile its own kernels (minutes); test_modes.py runs numpy mode's conversions there.
pytestmark = [pytest.mark.usefixtures("device"),
              pytest.mark.parametrize("device", [d for d in DEVICES if d.type.name != "cuda"],
                                      ids=str, indirect=True)]

_NUMPY_NAMES = {
    "acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh", "atan": "arctan",
    "atanh": "arctanh", "atan2": "arctan2", "bitwise_invert": "invert", "conj": "conjugate",
    "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift", "pow": "power",
    "round": "rint",
}


def _numpy(name: str, *args: object) -> np.ndarray:
    """numpy's answer, and the dtype numpy mode promises for it: numpy's; an integer reciprocal
    is 1 / x in the dtype of sqrt(x)."""
    ufunc = getattr(np, _NUMPY_NAMES.get(name, name))
    if name == "reciprocal" and args[0].dtype.kind in "biu":  # numpy's truncates: not numpy mode's
        ufunc = lambda a: np.divide(1, a.astype(np.sqrt(np.zeros(0, a.dtype)).dtype))  # noqa: E731
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        result = np.asarray(ufunc(*args))
    if name in ("real", "imag") and result.dtype == np.bool_ and name == "imag":
        result = np.zeros_like(result)
    return result


def _small(data: np.ndarray) -> np.ndarray:
    """data % 5 (NaN and infinities stay NaN), quietly."""
    with np.errstate(invalid="ignore"):
        return data % 5


def _operand(dtype: xp.DType, seed: int) -> np.ndarray:
    data = sample((12,), dtype, seed)
    if dtype in INTEGER:  # moderate values: shifts and powers stay defined
        data = (data % 7).astype(np_dtype(dtype))
    return data


def _standard_defines(call) -> bool:
    """Whether strict mode takes the call: then the standard defines it, tested elsewhere."""
    with xp.set_strict(True):
        try:
            call()
        except (TypeError, OverflowError):
            return False
    return True


def _finite(*args: object) -> np.ndarray:
    """Where every operand is finite: the values numpy and the standard's special cases (which
    hxarray keeps in both modes) agree on."""
    masks = [np.isfinite(a) if isinstance(a, np.ndarray) and a.dtype.kind in "fc" else
             np.isfinite(complex(a)) if isinstance(a, (float, complex)) else np.True_
             for a in args]
    return np.logical_and.reduce(np.broadcast_arrays(*masks)) if masks else np.True_


def _check(name: str, *operands: object) -> None:
    """Where the standard is silent: numpy mode's `name` of the operands (numpy arrays become
    hxarray arrays) is numpy's (dtype, and values from finite operands), or a TypeError where
    numpy has none."""
    function = getattr(xp, name)
    converted = [xp.asarray(o) if isinstance(o, np.ndarray) else o for o in operands]
    if _standard_defines(lambda: function(*converted)):
        return
    try:
        want = _numpy(name, *operands)
    except TypeError:
        with pytest.raises(TypeError):
            function(*converted)
        return
    got = function(*converted)
    assert got.dtype.name == want.dtype.name, (name, got.dtype, want.dtype)
    finite = np.broadcast_to(_finite(*operands), want.shape)
    got_values, want = np.asarray(got)[finite], want[finite]
    if want.dtype.kind in "fc":
        tolerance = 2e-6 if want.dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(got_values, want, rtol=tolerance, atol=0, equal_nan=True,
                                   err_msg=name)
    else:
        np.testing.assert_array_equal(got_values, want, err_msg=name)


@pytest.mark.parametrize("name", sorted(n for n in UNARY if n not in ("real", "imag")))
def test_unary_functions_follow_numpy_on_every_dtype(name):
    for dtype in DTYPES:
        _check(name, _operand(dtype, 0))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_functions_follow_numpy_on_every_pair_of_dtypes(name):
    for d1, d2 in product(DTYPES, DTYPES):
        _check(name, _operand(d1, 0), _operand(d2, 1))


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("scalar", [True, 3, -2.5, 1.5 - 2j], ids=["bool", "int", "float",
                                                                   "complex"])
def test_python_scalars_are_weak_as_in_numpy(name, scalar):
    for dtype in DTYPES:
        data = _operand(dtype, 0)
        _check(name, data, scalar)
        _check(name, scalar, data)


@given(data=st.data(), name=st.sampled_from(sorted(BINARY)),
       d1=st.sampled_from(DTYPES), d2=st.sampled_from(DTYPES))
def test_binary_functions_follow_numpy_on_random_broadcast_arrays(data, name, d1, d2):
    """Random values and broadcast shapes (views too), any pair of dtypes."""
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
                       label="shapes").input_shapes
    a1, a2 = (data.draw(hnp.arrays(np_dtype(d), shape), label=f"x{i}")
              for i, (d, shape) in enumerate(((d1, shapes[0]), (d2, shapes[1])), 1))
    if name in ("bitwise_left_shift", "bitwise_right_shift", "pow"):  # defined exponents
        a2 = np.asarray(_small(np.abs(a2.real if a2.dtype.kind == "c" else a2)))  # an array
        a2 = a2.astype(np_dtype(d2)) if d2 is not xp.bool else a2.astype(bool)
    _check(name, a1[::-1] if a1.ndim else a1, a2)


def test_numpy_scalars_count_as_python_scalars():
    """A float32 array times a numpy float64 stays float32, as with a Python float (hxarray arrays
    are not numpy arrays; numpy would make it float64)."""
    x = xp.asarray([1.0, 2.0], dtype=xp.float32)
    assert (x * np.float64(2.0)).dtype is xp.float32
    assert xp.multiply(x, np.int64(3)).dtype is xp.float32
    assert (xp.asarray([1, 2]) + np.float32(0.5)).dtype is xp.float64
    assert_matches(xp.asarray([1, 2], dtype=xp.int8) + np.int64(3), np.array([4, 5], np.int8))


def test_comparisons_with_ints_beyond_the_dtype():
    a = np.array([0, 7, 255], dtype=np.uint8)
    x = xp.asarray(a)
    for op in ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal"):
        for value in (300, -1):
            assert_matches(getattr(xp, op)(x, value), getattr(np, op)(a, value))
            assert_matches(getattr(xp, op)(value, x), getattr(np, op)(value, a))
    with pytest.raises(OverflowError):
        x + 300  # arithmetic still refuses, as numpy does


def test_int64_with_uint64_compares_exactly():
    a = np.array([-1, 0, 2**62, 5], dtype=np.int64)
    b = np.array([2**63, 0, 2**62, 2**64 - 1], dtype=np.uint64)
    for op in ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal"):
        assert_matches(getattr(xp, op)(xp.asarray(a), xp.asarray(b)), getattr(np, op)(a, b))
        assert_matches(getattr(xp, op)(xp.asarray(b), xp.asarray(a)), getattr(np, op)(b, a))


@pytest.mark.parametrize("dtype", [xp.int16, xp.float32, xp.int64], ids=["int16", "float32",
                                                                        "int64"])
def test_inplace_operators_cast_back_as_numpy(dtype):
    a = _small(sample((2, 3), dtype))
    for other in (np.float64(1.5), 2.5, np.arange(3.0), np.arange(3, dtype=np.int32)):
        x = xp.asarray(a, copy=True)
        want = a.copy()
        try:
            with np.errstate(all="ignore"):
                want += other
        except TypeError:  # numpy's same_kind refusal
            with pytest.raises(TypeError):
                x += xp.asarray(other) if isinstance(other, np.ndarray) else other
            assert_matches(x, a)  # unchanged
            continue
        buffer = x.buffer
        x += xp.asarray(other) if isinstance(other, np.ndarray) else other
        assert x.buffer is buffer
        assert_matches(x, want)


# -- reductions and other functions ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [xp.bool, xp.int8, xp.uint16, xp.int64], ids=ids((
    xp.bool, xp.int8, xp.uint16, xp.int64)))
def test_statistics_of_integer_and_bool_arrays_follow_numpy(dtype):
    a = sample((3, 4), dtype) % 11 if dtype is not xp.bool else sample((3, 4), dtype)
    x = xp.asarray(a)
    for name in ("sum", "prod", "max", "min", "mean", "var", "std"):
        for axis in (None, 0, (0, 1)):
            got = getattr(xp, name)(x, axis=axis)
            want = np.asarray(getattr(np, name)(a, axis=axis))
            if name in ("sum", "prod") and dtype is xp.uint16:
                want = want.astype(np.uint64)  # the standard's accumulator for unsigned input
            assert got.dtype.name == want.dtype.name, (name, got.dtype, want.dtype)
            np.testing.assert_allclose(np.asarray(got, dtype=np.float64),
                                       want.astype(np.float64), rtol=1e-12)
    for name, kwargs in (("argmax", {"axis": 1}), ("argmin", {}), ("sort", {"axis": 0}),
                         ("argsort", {"axis": 1})):
        assert_matches(getattr(xp, name)(x, **kwargs), getattr(np, name)(a, **kwargs))
    accumulator = np.uint64 if dtype is xp.uint16 else np.int64
    assert_matches(xp.cumulative_sum(x, axis=1), np.cumsum(a, axis=1, dtype=accumulator))
    assert_matches(xp.diff(x, axis=0), np.diff(a, axis=0))
    assert_matches(xp.diff(x, n=2, axis=1), np.diff(a, n=2, axis=1))


def test_bool_products_are_bool():
    a = sample((4, 5), xp.bool)
    b = sample((5, 3), xp.bool, seed=1)
    assert_matches(xp.asarray(a) @ xp.asarray(b), a @ b)
    assert_matches(xp.vecdot(xp.asarray(a), xp.asarray(a)), np.vecdot(a, a))
    assert_matches(xp.tensordot(xp.asarray(a), xp.asarray(b), axes=1), np.tensordot(a, b, 1))
    c = np.ones((300, 300), dtype=bool)  # 300 true terms: counted exactly, not in int8
    assert_matches(xp.asarray(c) @ xp.asarray(c), c @ c)


def test_floating_point_functions_of_integer_arrays():
    a = np.array([[4, 1], [2, 3]])
    x = xp.asarray(a)
    np.testing.assert_allclose(np.asarray(xp.linalg.inv(x)), np.linalg.inv(a))
    np.testing.assert_allclose(np.asarray(xp.linalg.solve(x, xp.asarray([1, 2]))),
                               np.linalg.solve(a, [1, 2]))
    assert_matches(xp.linalg.matrix_power(x, 3), np.linalg.matrix_power(a, 3))  # stays integer
    np.testing.assert_allclose(np.asarray(xp.linalg.vector_norm(x)), np.linalg.norm(a))
    assert_matches(xp.fft.fft(xp.asarray([1, 2, 3, 4])), np.fft.fft([1, 2, 3, 4]))
    assert_matches(xp.fft.rfft(xp.asarray([1, 2, 3, 4])), np.fft.rfft([1, 2, 3, 4]))
    assert_matches(xp.fft.fftshift(xp.asarray([1, 2, 3, 4])), np.fft.fftshift([1, 2, 3, 4]))


@pytest.mark.parametrize(("d1", "d2"), [(xp.int32, xp.float32), (xp.bool, xp.int8),
                                        (xp.uint64, xp.int64), (xp.float32, xp.complex128),
                                        (xp.float64, xp.bool)])
def test_functions_promote_across_kinds_as_numpy(d1, d2):
    a = sample((6,), d1) if d1 is xp.bool else _small(sample((6,), d1))
    b = sample((6,), d2, seed=1)
    if d2 in (xp.float32, xp.complex128):
        b = np.nan_to_num(b, nan=0.5, posinf=3.0, neginf=-3.0)
    x, y = xp.asarray(a), xp.asarray(b)
    cond = np.arange(6) % 2 == 0
    s = np.sort(a)
    calls = [
        (lambda: xp.concat([x, y]), lambda: np.concatenate([a, b])),
        (lambda: xp.stack([x, y]), lambda: np.stack([a, b])),
        (lambda: xp.where(xp.asarray(cond), x, y), lambda: np.where(cond, a, b)),
        (lambda: xp.isin(x, y), lambda: np.isin(a, b)),
        (lambda: xp.reshape(x, (2, 3)) @ xp.reshape(y, (3, 2)),
         lambda: a.reshape(2, 3) @ b.reshape(3, 2)),
    ]
    if "c" not in (d1.kind, d2.kind):
        calls += [
            (lambda: xp.clip(x, y, None), lambda: np.clip(a, b, None)),
            (lambda: xp.searchsorted(xp.asarray(s), y), lambda: np.searchsorted(s, b)),
            (lambda: xp.diff(x, append=y), lambda: np.diff(a, append=b)),
        ]
    for got, want in calls:
        if not _standard_defines(got):
            assert_matches(got(), want())
    assert xp.result_type(d1, d2).name == np.result_type(np_dtype(d1), np_dtype(d2)).name


def test_where_takes_any_condition_and_two_scalars():
    cond = np.array([0, 2, 0, -1])
    assert_matches(xp.where(xp.asarray(cond), 1, 0.5), np.where(cond, 1, 0.5))
    assert_matches(xp.where(xp.asarray(cond), xp.asarray([1, 2, 3, 4]), 0.5),
                   np.where(cond, [1, 2, 3, 4], 0.5))
    nonzero = xp.where(xp.asarray(cond))  # numpy's one-argument form
    assert len(nonzero) == 1
    assert_matches(nonzero[0], np.where(cond)[0])


def test_setitem_casts_as_numpy():
    a = np.zeros(4, dtype=np.int32)
    x = xp.asarray(a, copy=True)
    x[0] = 1.75
    x[1:3] = xp.asarray([2.5, -3.9])
    a[0] = 1.75
    a[1:3] = np.array([2.5, -3.9])
    assert_matches(x, a)
    with pytest.raises(TypeError):
        x[0] = 1j


# -- dtypes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", [np.float32, np.dtype("float32"), "float32", "f4",
                                  np.dtype(">f4")], ids=["type", "dtype", "name", "code", ">f4"])
def test_numpy_dtypes_are_taken_wherever_a_dtype_is(spec):
    x = xp.ones(3, dtype=spec)
    assert x.dtype is xp.float32
    assert xp.astype(xp.arange(3), spec).dtype is xp.float32
    assert xp.asarray([1, 2], dtype=spec).dtype is xp.float32
    assert xp.full(2, 7, dtype=spec).dtype is xp.float32
    assert xp.sum(xp.arange(3), dtype=spec).dtype is xp.float32
    assert xp.isdtype(spec, "real floating")
    if not isinstance(spec, str):  # a string kind is a kind name, as in numpy
        assert xp.isdtype(xp.float32, spec)
    assert xp.finfo(spec).bits == 32
    assert xp.result_type(spec, xp.float64) is xp.float64
    assert xp.can_cast(spec, xp.float64)


def test_builtin_types_and_bad_dtypes():
    assert xp.zeros(1, dtype=float).dtype is xp.float64
    assert xp.zeros(1, dtype=int).dtype is xp.int64
    assert xp.zeros(1, dtype=bool).dtype is xp.bool
    assert xp.zeros(1, dtype=np.float16).dtype is xp.float16
    assert xp.zeros(1, dtype="float16").dtype is xp.float16
    with pytest.raises(TypeError, match="<U3 has no hxarray equivalent"):
        xp.zeros(1, dtype="U3")
    with pytest.raises(TypeError, match="not a data type"):
        xp.zeros(1, dtype="no such dtype")


def test_numpy_reads_hxarray_dtypes():
    for dtype in DTYPES:
        assert np.dtype(dtype) == np_dtype(dtype)
        assert np.zeros(2, dtype=dtype).dtype == np_dtype(dtype)


def test_can_cast_is_numpys_safe_casting():
    for d1, d2 in product(DTYPES, DTYPES):
        assert xp.can_cast(d1, d2) == np.can_cast(np_dtype(d1), np_dtype(d2)), (d1, d2)


# -- numpy's positional forms ----------------------------------------------------------------------


@pytest.mark.parametrize(("call", "oracle"), [
    (lambda m, x: m.sum(x, 0), None),
    (lambda m, x: m.sum(x, 1, None, None, True), None),
    (lambda m, x: m.prod(x, (0, 1)), None),
    (lambda m, x: m.max(x, 1), None),
    (lambda m, x: m.min(x, 0, None, True), None),
    (lambda m, x: m.mean(x, 1), None),
    (lambda m, x: m.std(x, 0), None),
    (lambda m, x: m.var(x, 1), None),
    (lambda m, x: m.argmax(x, 1), None),
    (lambda m, x: m.argmin(x, 0), None),
    (lambda m, x: m.all(x, 0), None),
    (lambda m, x: m.any(x, 1), None),
    (lambda m, x: m.count_nonzero(x, 0), None),
    (lambda m, x: m.diff(x, 2), None),
    (lambda m, x: m.diff(x, 1, 0), None),
    (lambda m, x: m.sort(x, 0), None),
    (lambda m, x: m.argsort(x, 0), None),
    (lambda m, x: m.flip(x, 1), None),
    (lambda m, x: m.roll(x, 2, 1), None),
    (lambda m, x: m.repeat(x, 2, 0), None),
    (lambda m, x: m.concat([x, x], 1), lambda x: np.concatenate([x, x], 1)),
    (lambda m, x: m.stack([x, x], 2), None),
    (lambda m, x: m.take(x, m.asarray([0, 2]), 1), None),
    (lambda m, x: m.tensordot(x, x.T, 1), None),
    (lambda m, x: m.zeros_like(x, m.int8), None),
    (lambda m, x: m.full_like(x, 3, m.float32), None),
    (lambda m, x: m.zeros((2, 2), m.int16), None),
    (lambda m, x: m.ones(3, m.uint8), None),
    (lambda m, x: m.full(2, 1.5, m.float32), None),
    (lambda m, x: m.eye(3, 4, 1, m.int32), None),
    (lambda m, x: m.arange(0, 10, 3, m.int16), None),
    (lambda m, x: m.linspace(0, 1, 4, False), None),
    (lambda m, x: m.asarray([1, 2], m.float32), None),
    (lambda m, x: m.fft.fft(x, 4, 0), None),
    (lambda m, x: m.fft.fftshift(x, 1), None),
    (lambda m, x: m.linalg.svd(x, False)[1], None),
])
def test_numpy_positional_forms(call, oracle):
    a = np.arange(12.0).reshape(3, 4) % 5
    got = call(xp, xp.asarray(a))
    want = oracle(a) if oracle is not None else call(np, a)
    assert_matches(got, np.asarray(want).astype(np.asarray(want).dtype))


def test_positional_forms_refuse_conflicts_and_out():
    x = xp.ones((2, 3))
    with pytest.raises(TypeError, match="multiple values for argument 'axis'"):
        xp.sum(x, 0, axis=1)
    with pytest.raises(TypeError, match="out= is not supported"):
        xp.sum(x, 0, None, xp.ones(3))
    with pytest.raises(TypeError, match="at most"):
        xp.diff(x, 1, 0, None, None, 5)
    with pytest.raises(TypeError, match="multiple values for argument 'dtype'"):
        xp.asarray([1, 2], xp.float32, dtype=xp.int8)
    # a keyword left at its default beside a positional form is no conflict, as in numpy
    assert_matches(xp.asarray([1, 2], xp.float32, copy=True), np.asarray([1, 2], np.float32))
    assert_matches(xp.sum(x, 0, keepdims=False), np.sum(np.ones((2, 3)), 0))
