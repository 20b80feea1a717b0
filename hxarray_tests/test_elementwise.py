"""Element-wise functions (spec: "Element-wise Functions"): every function on every dtype its
category allows, against numpy, with the spec's result dtypes, broadcasting, Python scalars,
0-D, empty and strided inputs, in-place operators and errors. Special values are the business of
test_special_cases.py; here numpy is the oracle except where the standard overrides it."""

from __future__ import annotations

import math
import operator
import warnings
from itertools import product

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
    NUMERIC,
    ON_EACH_DEVICE,
    REAL,
    REAL_FLOATING,
    SIGNED,
    STANDARD_DTYPES,
    assert_elementwise,
    assert_matches,
    ids,
    np_dtype,
    sample,
    standard,
    view_pairs,
    xps,
)

pytestmark = ON_EACH_DEVICE

INTEGER_OR_BOOL = INTEGER + BOOL

# The standard's input dtypes and result dtype per function, written from the spec: "same" is the
# promoted input dtype, "bool" is bool, "real" is the real dtype of the input's precision.
UNARY: dict[str, tuple[tuple[xp.DType, ...], str]] = {
    "abs": (NUMERIC, "real"), "bitwise_invert": (INTEGER_OR_BOOL, "same"),
    "ceil": (REAL, "same"), "floor": (REAL, "same"), "trunc": (REAL, "same"),
    "round": (NUMERIC, "same"), "conj": (NUMERIC, "same"), "real": (NUMERIC, "real"),
    "imag": (NUMERIC, "real"), "square": (NUMERIC, "same"), "negative": (NUMERIC, "same"),
    "positive": (NUMERIC, "same"), "sign": (NUMERIC, "same"),
    "isfinite": (NUMERIC, "bool"), "isinf": (NUMERIC, "bool"), "isnan": (NUMERIC, "bool"),
    "logical_not": (BOOL, "bool"), "signbit": (REAL_FLOATING, "bool"),
    **{name: (FLOATING, "same") for name in (
        "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan",
        "tanh", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "reciprocal")},
}
BINARY: dict[str, tuple[tuple[xp.DType, ...], str]] = {
    "add": (NUMERIC, "same"), "subtract": (NUMERIC, "same"), "multiply": (NUMERIC, "same"),
    "pow": (NUMERIC, "same"), "divide": (FLOATING, "same"),
    "floor_divide": (REAL, "same"), "remainder": (REAL, "same"),
    "maximum": (REAL, "same"), "minimum": (REAL, "same"),
    "equal": (DTYPES, "bool"), "not_equal": (DTYPES, "bool"),
    **{name: (REAL, "bool") for name in ("greater", "greater_equal", "less", "less_equal")},
    **{name: (REAL_FLOATING, "same") for name in (
        "atan2", "hypot", "copysign", "nextafter", "logaddexp")},
    **{name: (INTEGER_OR_BOOL, "same") for name in ("bitwise_and", "bitwise_or", "bitwise_xor")},
    "bitwise_left_shift": (INTEGER, "same"), "bitwise_right_shift": (INTEGER, "same"),
    **{name: (BOOL, "bool") for name in ("logical_and", "logical_or", "logical_xor")},
}
REAL_OF = {xp.complex64: xp.float32, xp.complex128: xp.float64}
COMPLEX_OF = {xp.float16: xp.complex64, xp.float32: xp.complex64, xp.float64: xp.complex128}
OPERATORS = {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "truediv",
             "floor_divide": "floordiv", "remainder": "mod", "pow": "pow",
             "bitwise_and": "and_", "bitwise_or": "or_", "bitwise_xor": "xor",
             "bitwise_left_shift": "lshift", "bitwise_right_shift": "rshift"}


def _cases(table: dict[str, tuple[tuple[xp.DType, ...], str]]) -> list[tuple[str, xp.DType]]:
    return [(name, dtype) for name, (dtypes, _) in table.items() for dtype in dtypes]


def _case_ids(cases: list[tuple[str, xp.DType]]) -> list[str]:
    return [f"{name}-{dtype.name}" for name, dtype in cases]


UNARY_CASES, BINARY_CASES = _cases(UNARY), _cases(BINARY)


def _result_dtype(name: str, dtype: xp.DType) -> np.dtype:
    rule = (UNARY.get(name) or BINARY[name])[1]
    if rule == "bool":
        return np.dtype(bool)
    return np_dtype(REAL_OF.get(dtype, dtype) if rule == "real" else dtype)


# -- the oracle ------------------------------------------------------------------------------------
def _oracle(name: str, *args: np.ndarray) -> np.ndarray:
    """numpy's answer, with reciprocal as the standard defines it (1.0 / x), complex expm1 as
    exp(z) - 1 where that cannot cancel, and integer powers with negative exponents as hxarray
    defines them (numpy raises): 1 / x1**-x2 truncated."""
    with np.errstate(all="ignore"):
        if name == "reciprocal":
            return np.divide(1.0, args[0])
        if name == "expm1" and args[0].dtype.kind == "c":  # numpy's overflows for Re z > 1
            return np.where(args[0].real > 1, np.exp(args[0]) - 1, np.expm1(args[0]))
        if name == "pow" and np.result_type(*args).kind == "f":
            # numpy takes a square root for one exponent of 0.5; the standard's pow gives +0
            # for -0 ** 0.5 and +inf for -inf ** 0.5
            result = np.asarray(np.power(*args))
            x1, x2 = np.broadcast_arrays(*args)
            result[(x2 == 0.5) & (x1 == 0)] = 0.0
            result[(x2 == 0.5) & (x1 == -np.inf)] = np.inf
            return result
        if name == "pow" and args[0].dtype.kind in "iu" and np.any(args[1] < 0):
            x1, x2 = np.broadcast_arrays(*args)
            truncated = np.where(x1 == 1, 1, np.where(x1 == -1, 1 - 2 * (x2 % 2), 0))
            return np.where(x2 < 0, truncated, np.power(x1, np.maximum(x2, 0))).astype(
                np.result_type(*args))
        if name == "nextafter" and args[0].dtype == np.float16:
            # numpy's float16 loop gives x1 for equal operands before numpy 2.5, x2 from it on
            # (the standard's special case, which hxarray follows with every numpy)
            x1, x2 = np.broadcast_arrays(*args)
            return np.where(x1 == x2, x2, np.nextafter(x1, x2))
        return getattr(np, name)(*args)


def _numpy_is_right(name: str, *args: np.ndarray) -> np.ndarray | None:
    """Where numpy's value is the standard's (None: everywhere). Elsewhere hxarray follows the
    spec's special cases, which test_special_cases.py checks."""
    if name == "floor_divide" and args[0].dtype.kind == "f":
        return ~(np.isinf(args[0]) | np.isinf(args[1]))
    if name in ("expm1", "tanh", "tan", "sign") and args[0].dtype.kind == "c":
        return np.isfinite(args[0])
    if name == "log1p" and args[0].dtype.kind == "c":  # numpy's loses precision near 0
        return (np.abs(args[0]) >= 0.5) | (args[0] == 0) | ~np.isfinite(args[0])
    return None


def _check(name: str, result: xp.Array, args: tuple[np.ndarray, ...],
           result_dtype: np.dtype) -> None:
    """`result` is the standard's answer for `name` on the numpy arrays `args`: dtype, shape and
    values (NaNs alike, signs of zeros alike; complex expm1 to rounding; where a device's own math
    library rounds, within a few units in the last place)."""
    assert type(result) is xp.Array
    assert result.dtype.name == result_dtype.name, (name, result.dtype, result_dtype)
    expected = np.asarray(_oracle(name, *args)).astype(result_dtype)
    keep = _numpy_is_right(name, *(np.broadcast_to(a, expected.shape) for a in args))
    if name == "expm1" and result.dtype in COMPLEX_FLOATING:  # hxarray's own formula
        got = np.asarray(result)
        if keep is not None:
            got, expected = got[keep], expected[keep]
        rtol = 1e-5 if got.dtype == np.complex64 else 1e-12
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * 1e-3)
        return
    assert_elementwise(name, result, expected, args, keep)


def _data(name: str, shape: tuple[int, ...], dtype: xp.DType, seed: int) -> np.ndarray:
    """Sample values for an operand of `name`; second operands of shifts and integer powers
    stay in their meaningful range (shifts: [0, bits), powers: [0, 4))."""
    data = sample(shape, dtype, seed)
    if seed % 2 and dtype in INTEGER and name in ("bitwise_left_shift", "bitwise_right_shift",
                                                  "pow"):
        limit = 4 if name == "pow" else 8 * np_dtype(dtype).itemsize
        data = np.mod(data, np.asarray(limit).astype(data.dtype))
    return data


# float16's edges: zeros of both signs, subnormals (the smallest, the largest), the smallest
# normal, the largest finite value and values whose results pass it, infinities, NaN.
HALF_EDGES = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.5, 3.0, -7.25, 0.1, 255.9, 65504.0,
                       -65504.0, 40000.0, 2.0**-24, -(2.0**-24), 1023 * 2.0**-24, 2.0**-14,
                       np.inf, -np.inf, np.nan], np.float16)
HALF_FUNCTIONS = sorted(name for name, (dtypes, _) in {**UNARY, **BINARY}.items()
                        if xp.float16 in dtypes)


@pytest.mark.parametrize("name", HALF_FUNCTIONS)
def test_float16_edge_values_are_numpys(name):
    """Every function of float16 on its edge values (each pair of them for two operands):
    numpy's float16 results (computed in float32 and rounded once; nextafter, maximum and
    minimum on float16 itself), contiguous, strided and 0-D; where the device's math library
    rounds (transcendental functions off the CPU), within a few float16 ulps."""
    n = HALF_EDGES.size
    args = (HALF_EDGES,) if name in UNARY else (np.repeat(HALF_EDGES, n), np.tile(HALF_EDGES, n))
    function, result_dtype = getattr(xp, name), _result_dtype(name, xp.float16)
    _check(name, function(*(xp.asarray(a) for a in args)), args, result_dtype)
    strided = [xp.asarray(np.repeat(a, 2))[::2] for a in args]
    _check(name, function(*strided), args, result_dtype)
    scalar_args = tuple(a[7:8].reshape(()) for a in args)
    _check(name, function(*(xp.asarray(a) for a in scalar_args)), scalar_args, result_dtype)
    if name in BINARY:  # a Python float stands for a float16 (rounded to it first, as numpy)
        with np.errstate(all="ignore"):
            for value in (0.1, 70000.0, -0.0):
                rounded = np.float16(value)
                _check(name, function(xp.asarray(args[0]), value),
                       (args[0], np.full(args[0].shape, rounded)), result_dtype)


def test_float16_arithmetic_overflows_to_infinity_as_numpy():
    """65504 + 15 rounds back to 65504; 65504 + 16 is halfway to 65536 and rounds to even:
    infinity."""
    data = np.array([65504.0, 32768.0, -65504.0, 1.0], np.float16)
    x = xp.asarray(data)
    with np.errstate(all="ignore"):
        for got, expected in ((x + 15.0, data + np.float16(15)), (x + 16, data + np.float16(16)),
                              (x * 2.0, data * np.float16(2)), (x - 65504.0, data - 65504.0)):
            assert_matches(got, expected)
    assert np.asarray(x + 16.0)[0] == np.inf and np.asarray(x + 15.0)[0] == 65504.0


SHAPES = [(), (0,), (2, 0), (5,), (2, 3, 4)]
BROADCASTS = [((4, 1), (6,)), ((), (3,)), ((3,), ()), ((2, 0, 3), (1, 3)), ((1,), (0,)),
              ((2, 1, 5), (3, 1))]
# -- unary functions -------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "dtype"), UNARY_CASES, ids=_case_ids(UNARY_CASES))
def test_unary(name, dtype):
    """Every view kind, 0-D and empty inputs; the input is left as it was."""
    function, result_dtype = getattr(xp, name), _result_dtype(name, dtype)
    for x, a in view_pairs(sample((4, 6), dtype)):
        before = np.asarray(x).copy()
        _check(name, function(x), (a,), result_dtype)
        np.testing.assert_array_equal(np.asarray(x), before, strict=True)
    for shape in SHAPES:
        a = sample(shape, dtype, seed=1)
        _check(name, function(xp.asarray(a)), (a,), result_dtype)


@pytest.mark.strict
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_refuses_other_dtypes(name):
    for dtype in set(STANDARD_DTYPES) - set(UNARY[name][0]):
        with pytest.raises(TypeError, match=name):
            getattr(xp, name)(xp.ones(3, dtype=dtype))


@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize("value", [1.0, [1.0, 2.0], np.ones(2), None], ids=["float", "list",
                                                                         "numpy", "None"])
def test_unary_refuses_non_arrays(name, value):
    with pytest.raises(TypeError):
        getattr(xp, name)(value)


@pytest.mark.strict
@given(x=xps.arrays(dtype=xps.scalar_dtypes(), shape=xps.array_shapes(min_dims=0, max_dims=3,
                                                                      min_side=0, max_side=4)),
       name=st.sampled_from(sorted(UNARY)))
def test_unary_on_random_arrays(x, name):
    if x.dtype not in UNARY[name][0]:
        with pytest.raises(TypeError):
            getattr(xp, name)(x)
        return
    _check(name, getattr(xp, name)(x), (np.asarray(x),), _result_dtype(name, x.dtype))


# -- binary functions ------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "dtype"), BINARY_CASES, ids=_case_ids(BINARY_CASES))
def test_binary(name, dtype):
    """Same-kind views on both sides, mixed layouts, 0-D, empty and broadcast shapes; the inputs
    are left as they were."""
    function, result_dtype = getattr(xp, name), _result_dtype(name, dtype)
    pairs = zip(view_pairs(_data(name, (4, 6), dtype, 0)),
                view_pairs(_data(name, (4, 6), dtype, 1)))
    for (x1, a1), (x2, a2) in pairs:
        before = np.asarray(x1).copy(), np.asarray(x2).copy()
        _check(name, function(x1, x2), (a1, a2), result_dtype)
        for x, copy in zip((x1, x2), before):
            np.testing.assert_array_equal(np.asarray(x), copy, strict=True)
    (x1, a1), (x2, a2) = view_pairs(_data(name, (4, 6), dtype, 2))[0], \
        view_pairs(_data(name, (4, 6), dtype, 3))[2]  # contiguous with flipped
    _check(name, function(x1, x2), (a1, a2), result_dtype)
    for shape1, shape2 in [(s, s) for s in SHAPES] + BROADCASTS:
        a1, a2 = _data(name, shape1, dtype, 4), _data(name, shape2, dtype, 5)
        _check(name, function(xp.asarray(a1), xp.asarray(a2)), (a1, a2), result_dtype)


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_refuses_shapes_that_do_not_broadcast(name):
    dtype = BINARY[name][0][0]
    with pytest.raises(ValueError):
        getattr(xp, name)(xp.ones((3, 2), dtype=dtype), xp.ones(4, dtype=dtype))


def _promoted(d1: xp.DType, d2: xp.DType) -> xp.DType | None:
    """The spec's promotion of two dtypes (None: none): within a kind, numpy's answer, except
    that no dtype holds both uint64 and a signed integer."""
    kinds = [0 if d is xp.bool else 1 if d in INTEGER else 2 for d in (d1, d2)]
    if kinds[0] != kinds[1] or {d1, d2} & {xp.uint64} and {d1, d2} & set(INTEGER[:4]):
        return None
    return getattr(xp, np.result_type(np_dtype(d1), np_dtype(d2)).name)


@pytest.mark.strict
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_promotes_mixed_dtypes(name):
    """Every pair of dtypes the function allows: the promoted result or TypeError."""
    allowed = BINARY[name][0]
    for d1, d2 in product(STANDARD_DTYPES, STANDARD_DTYPES):
        x1, x2 = xp.asarray(_data(name, (3,), d1, 0)), xp.asarray(_data(name, (3,), d2, 1))
        promoted = _promoted(d1, d2)
        if d1 not in allowed or d2 not in allowed or promoted is None:
            with pytest.raises(TypeError):
                getattr(xp, name)(x1, x2)
            continue
        _check(name, getattr(xp, name)(x1, x2), (np.asarray(x1), np.asarray(x2)),
               _result_dtype(name, promoted))


@given(data=st.data(), name=st.sampled_from(sorted(BINARY)))
def test_binary_on_random_broadcast_arrays(data, name):
    # (hypothesis's strategies know the standard's dtypes)
    dtype = data.draw(st.sampled_from(standard(BINARY[name][0])), label="dtype")
    shapes = data.draw(xps.mutually_broadcastable_shapes(2, max_dims=3, max_side=4),
                       label="shapes").input_shapes
    x1 = data.draw(xps.arrays(dtype, shapes[0]), label="x1")
    elements = None
    if dtype in INTEGER and name in ("bitwise_left_shift", "bitwise_right_shift", "pow"):
        elements = {"min_value": 0, "max_value": 3 if name == "pow" else
                    8 * np_dtype(dtype).itemsize - 1}
    x2 = data.draw(xps.arrays(dtype, shapes[1], elements=elements), label="x2")
    _check(name, getattr(xp, name)(x1, x2), (np.asarray(x1), np.asarray(x2)),
           _result_dtype(name, dtype))


# -- Python scalars --------------------------------------------------------------------------------
def _scalars(name: str, dtype: xp.DType) -> list[bool | int | float | complex]:
    """Python scalars the standard lets meet an array of `dtype` in `name`."""
    if dtype is xp.bool:
        return [True, False]
    if dtype in INTEGER:
        if name in ("bitwise_left_shift", "bitwise_right_shift", "pow"):
            return [0, 1, 3]
        low, high = np.iinfo(np_dtype(dtype)).min, np.iinfo(np_dtype(dtype)).max
        return [0, 1, int(low), int(high), 7]
    values = [0, 3, -2, 0.5, -0.0, math.inf, math.nan, 1e300]
    return values + [2j, complex(-1.5, math.inf)] if name in ("add", "subtract", "multiply",
                                                              "divide", "pow", "equal",
                                                              "not_equal") else values


@pytest.mark.parametrize(("name", "dtype"), BINARY_CASES, ids=_case_ids(BINARY_CASES))
def test_python_scalars_on_either_side(name, dtype):
    """array op scalar is array op asarray(scalar, dtype=array.dtype); a complex scalar with a
    real floating array stands for a complex 0-D array of the same precision."""
    a = _data(name, (2, 3), dtype, 0)
    x = xp.asarray(a)
    # (numpy mode refuses the negative exponents in `a`: strict mode computes them)
    with xp.set_strict(name == "pow" and dtype in SIGNED):
        for scalar in _scalars(name, dtype):
            scalar_dtype = COMPLEX_OF[dtype] if isinstance(scalar, complex) and \
                dtype in COMPLEX_OF else dtype
            with np.errstate(all="ignore"):
                s = np.asarray(scalar, dtype=np_dtype(scalar_dtype))
            promoted = _result_dtype(name, scalar_dtype)
            _check(name, getattr(xp, name)(x, scalar), (a, s), promoted)
            _check(name, getattr(xp, name)(scalar, x), (s, a), promoted)
            if name in OPERATORS:
                op = getattr(operator, OPERATORS[name])
                _check(name, op(x, scalar), (a, s), promoted)
                _check(name, op(scalar, x), (s, a), promoted)


def _incompatible(dtype: xp.DType) -> list[object]:
    """Python scalars (and other objects) an array of `dtype` must refuse."""
    others = ["1", None, [1], (1,), np.ones(2)]
    if dtype is xp.bool:
        return [1, 1.0, 1j, *others]
    if dtype in INTEGER:
        return [True, 1.5, 1j, *others]
    return [True, *others]


@pytest.mark.strict
@pytest.mark.parametrize("name", list(BINARY))
def test_incompatible_python_scalars_raise(name):
    for dtype in standard(BINARY[name][0]):
        x = xp.ones(3, dtype=dtype)
        for value in _incompatible(dtype):
            for args in ((x, value), (value, x)):
                with pytest.raises(TypeError):
                    getattr(xp, name)(*args)
        if dtype in INTEGER:
            low, high = np.iinfo(np_dtype(dtype)).min, np.iinfo(np_dtype(dtype)).max
            for value in (int(low) - 1, int(high) + 1):
                for args in ((x, value), (value, x)):
                    with pytest.raises(OverflowError):
                        getattr(xp, name)(*args)
    with pytest.raises(TypeError):
        getattr(xp, name)(1, 2)


@pytest.mark.strict
@pytest.mark.parametrize("name", ["atan2", "maximum", "greater", "floor_divide", "remainder"])
@pytest.mark.parametrize("dtype", REAL_FLOATING, ids=ids(REAL_FLOATING))
def test_complex_scalars_with_functions_of_real_numbers_raise(name, dtype):
    with pytest.raises(TypeError):
        getattr(xp, name)(xp.ones(3, dtype=dtype), 1j)


@pytest.mark.parametrize("name", ["atan2", "floor_divide", "remainder"])
@pytest.mark.parametrize("dtype", REAL_FLOATING, ids=ids(REAL_FLOATING))
def test_complex_scalars_with_functions_numpy_lacks_for_them_raise_in_numpy_mode(name, dtype):
    """(numpy mode orders complex numbers: maximum and greater take them, test_numpy_answers.py)"""
    with pytest.raises(TypeError):
        getattr(xp, name)(xp.ones(3, dtype=dtype), 1j)


# -- in-place operators ----------------------------------------------------------------------------
INPLACE_CASES = [(name, dtype) for name, dtype in BINARY_CASES if name in OPERATORS
                 and BINARY[name][1] == "same"]


def _inplace(name: str):
    return getattr(operator, f"i{OPERATORS[name].rstrip('_')}")


@pytest.mark.parametrize(("name", "dtype"), INPLACE_CASES, ids=_case_ids(INPLACE_CASES))
def test_inplace_operator(name, dtype):
    """x op= y writes op(x, y) into x's own memory (arrays, broadcast rows, scalars, x itself and
    overlapping views of x), keeping x's dtype."""
    a1, a2 = _data(name, (4, 6), dtype, 0), _data(name, (4, 6), dtype, 1)
    inplace = _inplace(name)
    scalar = True if dtype is xp.bool else 3 if dtype in INTEGER else 2.5
    for other, expected_args in ((xp.asarray(a2), (a1, a2)), (xp.asarray(a2[0]), (a1, a2[0])),
                                 (scalar, (a1, np.asarray(scalar, np_dtype(dtype))))):
        x = xp.asarray(a1, copy=True)
        buffer = x.buffer
        assert inplace(x, other) is x
        assert x.buffer is buffer
        _check(name, x, expected_args, np_dtype(dtype))
    x = xp.asarray(a1, copy=True)
    other = xp.asarray(_data(name, (4, 6), dtype, 1))
    _check(name, inplace(x, x if name not in ("bitwise_left_shift", "pow") else other),
           (a1, a1 if name not in ("bitwise_left_shift", "pow") else a2), np_dtype(dtype))
    if name in ("bitwise_left_shift", "bitwise_right_shift", "pow") and dtype in INTEGER:
        return  # overlapping operands would be out of range
    function = getattr(xp, name)
    x = xp.asarray(a1, copy=True)
    inplace(x[1:], x[:-1])  # as if the right operand were copied first
    expected = a1.copy()
    expected[1:] = np.asarray(function(xp.asarray(a1[1:]), xp.asarray(a1[:-1])))
    assert_matches(x, expected)
    base = xp.asarray(a1, copy=True)
    inplace(base[::-1, ::2], xp.asarray(a2[::-1, ::2]))  # writes through a strided view
    expected = a1.copy()
    expected[::-1, ::2] = np.asarray(function(xp.asarray(a1[::-1, ::2]),
                                              xp.asarray(a2[::-1, ::2])))
    assert_matches(base, expected)


def _refused_updates() -> list[tuple[str, xp.DType, object, type[Exception]]]:
    """(operator, x's dtype, right operand, error) that must leave x untouched."""
    return [
        ("add", xp.int8, xp.ones(3, dtype=xp.int16), TypeError),
        ("multiply", xp.float32, xp.ones(3, dtype=xp.float64), TypeError),
        ("add", xp.float64, xp.ones(3, dtype=xp.complex128), TypeError),
        ("subtract", xp.float32, 1j, TypeError),
        ("divide", xp.int64, 2, TypeError),
        ("add", xp.int32, 1.5, TypeError),
        ("add", xp.bool, True, TypeError),
        ("add", xp.uint8, 256, OverflowError),
        ("add", xp.int64, xp.ones((2, 3), dtype=xp.int64), ValueError),
        ("floor_divide", xp.float64, xp.ones(4), ValueError),
        ("bitwise_and", xp.float64, xp.ones(3), TypeError),
        ("add", xp.float64, "1", TypeError),
    ]


@pytest.mark.strict
@pytest.mark.parametrize(("name", "dtype", "other", "error"), _refused_updates(),
                         ids=[f"{n}-{d.name}-{type(o).__name__}" for n, d, o, _
                              in _refused_updates()])
def test_refused_inplace_operator_leaves_x_unchanged(name, dtype, other, error):
    """The result's dtype and shape must be x's; otherwise x keeps its dtype, shape and values."""
    a = sample((3,), dtype)
    x = xp.asarray(a)
    with pytest.raises(error):
        _inplace(name)(x, other)
    assert x.dtype is dtype and x.shape == (3,)
    np.testing.assert_array_equal(np.asarray(x), a, strict=True)


# -- specific semantics ----------------------------------------------------------------------------
@pytest.mark.strict
@pytest.mark.parametrize("dtype", INTEGER[:4], ids=ids(INTEGER[:4]))
def test_integer_powers_with_negative_exponents(dtype):
    """Unspecified by the standard; strict mode truncates 1 / x1**-x2, so in-place and chunked
    operations never fail part-way (numpy mode raises numpy's ValueError before computing)."""
    x1 = xp.asarray([2, 1, -1, -1, 0, 3, -2], dtype=dtype)
    x2 = xp.asarray([-1, -5, -3, -2, -1, 2, -1], dtype=dtype)
    expected = np.array([0, 1, -1, 1, 0, 9, 0], dtype=np_dtype(dtype))
    np.testing.assert_array_equal(np.asarray(x1 ** x2), expected, strict=True)
    np.testing.assert_array_equal(np.asarray(x1 ** -1), [0, 1, -1, -1, 0, 0, 0], strict=False)
    x1 **= x2
    np.testing.assert_array_equal(np.asarray(x1), expected, strict=True)


@pytest.mark.parametrize("dtype", FLOATING, ids=ids(FLOATING))
def test_squares_are_numpys_powers(dtype):
    """x ** 2 (an exponent of 2 given once: the CPU squares) is numpy's power of 2, on every view
    and the special values, in place too; x is left unchanged."""
    for x, data in view_pairs(sample((6, 7), dtype)):
        before = data.copy()
        for exponent in (2, 2.0):
            with np.errstate(all="ignore"):
                expected = np.power(data, np.asarray(exponent, dtype=data.dtype))
            assert_elementwise("pow", x ** exponent, expected, (data, exponent))
            assert_elementwise("pow", xp.pow(x, exponent), expected, (data, exponent))
        assert_matches(x, before)
        y = xp.asarray(data, copy=True)
        y **= 2
        assert_elementwise("pow", y, expected, (data, 2))
    for shape in [(0,), ()]:
        data = sample(shape, dtype)
        with np.errstate(all="ignore"):
            expected = np.power(data, np.asarray(2, dtype=data.dtype))
        assert_elementwise("pow", xp.asarray(data) ** 2, np.asarray(expected), (data, 2))


def test_floating_point_exceptions_are_silent():
    """The standard defines the special values, so numpy's warnings would be noise."""
    f = xp.asarray([-1.0, 0.0, 1000.0, np.inf, np.nan])
    i = xp.asarray([1, 0, -3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for result in (xp.log(f), xp.sqrt(f), xp.exp(f), xp.divide(f, 0.0), f * f,
                       xp.floor_divide(f, 0.0), xp.remainder(f, 0.0), xp.acos(f),
                       xp.floor_divide(i, 0), xp.remainder(i, 0),
                       xp.asarray([100], dtype=xp.int8) * 100, xp.log(xp.asarray([0j])),
                       xp.asarray([1.0], dtype=xp.float32) + 1e300):
            assert type(result) is xp.Array
        with xp.set_strict(True):  # (numpy mode raises numpy's ValueError for this one)
            assert type(i ** -1) is xp.Array


@pytest.mark.parametrize("dtype", INTEGER, ids=ids(INTEGER))
def test_integer_arithmetic_wraps_and_divides_by_zero_to_zero(dtype):
    info = np.iinfo(np_dtype(dtype))
    x = xp.asarray([info.max, info.min, 5], dtype=dtype)
    assert np.asarray(x + 1).tolist() == [info.min, info.min + 1, 6]
    assert np.asarray(x // 0).tolist() == [0, 0, 0]
    assert np.asarray(x % 0).tolist() == [0, 0, 0]


@pytest.mark.parametrize("dtype", REAL, ids=ids(REAL))
def test_real_imag_conj_of_real_input(dtype):
    a = sample((5,), dtype)
    x = xp.asarray(a)
    for name, expected in (("real", a), ("imag", np.zeros_like(a)), ("conj", a)):
        result = getattr(xp, name)(x)
        assert result.dtype is dtype
        np.testing.assert_array_equal(np.asarray(result), expected, strict=True)


@pytest.mark.parametrize("dtype", FLOATING, ids=ids(FLOATING))
def test_round_halves_to_even(dtype):
    big = 1e16 + 2.0 if dtype is not xp.float16 else 2048.0  # (whole numbers beyond halves)
    values = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5000001, big]
    x = xp.asarray(values, dtype=dtype)
    expected = [0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 4.0, big]
    result = np.asarray(xp.round(x))
    assert result.dtype == np_dtype(dtype)
    np.testing.assert_array_equal(result.real, np.asarray(expected, result.real.dtype))
    if dtype in COMPLEX_FLOATING:
        result = np.asarray(xp.round(x * 1j))
        np.testing.assert_array_equal(result.imag, np.asarray(expected, result.imag.dtype))


@pytest.mark.parametrize("dtype", COMPLEX_FLOATING, ids=ids(COMPLEX_FLOATING))
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh",
                                  "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh"])
def test_complex_functions_match_cmath(name, dtype):
    """Finite complex values against Python's cmath (an oracle independent of numpy)."""
    import cmath

    a = sample((40,), dtype, seed=3)
    a = a[np.isfinite(a) & (np.abs(a) < 20)]
    result = np.asarray(getattr(xp, name)(xp.asarray(a)))
    expected = np.array([getattr(cmath, name)(complex(v)) for v in a])
    rtol = 1e-5 if dtype is xp.complex64 else 1e-12
    np.testing.assert_allclose(result, expected, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", COMPLEX_FLOATING, ids=ids(COMPLEX_FLOATING))
def test_complex_expm1_keeps_precision_near_zero(dtype):
    """expm1(z) ~ z for tiny z, where exp(z) - 1 would cancel to nothing."""
    z = np.array([1e-10 + 1e-10j, -3e-9 + 2e-12j, 1e-20j], dtype=np_dtype(dtype))
    expected = np.array([complex(cmath_expm1(complex(v))) for v in z])
    np.testing.assert_allclose(np.asarray(xp.expm1(xp.asarray(z))), expected,
                               rtol=1e-5 if dtype is xp.complex64 else 1e-12)


@pytest.mark.parametrize("dtype", COMPLEX_FLOATING, ids=ids(COMPLEX_FLOATING))
def test_complex_expm1_does_not_overflow_early(dtype):
    """expm1(z) is exp(z) - 1 where exp(z) is large: finite parts stay finite even when e**Re(z)
    alone overflows."""
    big = 89.0 if dtype is xp.complex64 else 710.0
    z = np.array([complex(big, 1e-20), complex(big, -2e-25), complex(5.0, 3.0),
                  complex(1.5, -0.0)], dtype=np_dtype(dtype))
    with np.errstate(all="ignore"):
        expected = np.exp(z) - np_dtype(dtype).type(1)
    result = np.asarray(xp.expm1(xp.asarray(z)))
    assert np.isfinite(result.imag[:2]).all()
    rtol = 1e-5 if dtype is xp.complex64 else 1e-12
    for part in (np.real, np.imag):
        np.testing.assert_allclose(part(result), part(expected), rtol=rtol)
    assert np.signbit(result.imag[3])
    zero_d = xp.expm1(xp.asarray(z[2]))
    assert zero_d.shape == () and np.isclose(complex(zero_d), expected[2], rtol=rtol)


@pytest.mark.parametrize("dtype", COMPLEX_FLOATING, ids=ids(COMPLEX_FLOATING))
def test_complex_log1p_keeps_precision_near_zero(dtype):
    """log1p(z) ~ z - z**2 / 2 for tiny z, where log(1 + z) would round 1 + z to 1."""
    z = np.array([1e-20 + 0j, 1e-10 + 1e-10j, -3e-9 + 2e-12j, -1e-12 + 3e-9j, 0.3 - 0.2j],
                 dtype=np_dtype(dtype))
    expected = np.array([sum((-1) ** (k + 1) * complex(v) ** k / k for k in range(1, 40))
                         for v in z])
    rtol = 1e-5 if dtype is xp.complex64 else 1e-13
    for part in (np.real, np.imag):
        np.testing.assert_allclose(part(np.asarray(xp.log1p(xp.asarray(z)))), part(expected),
                                   rtol=rtol)


def cmath_expm1(z: complex) -> complex:
    """expm1 of a small complex number from its Taylor series."""
    return sum(z**k / math.factorial(k) for k in range(1, 8))


# -- clip ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", REAL, ids=ids(REAL))
def test_clip(dtype):
    a = sample((4, 6), dtype)
    info = np.iinfo(np_dtype(dtype)) if dtype in INTEGER else None
    low = 0 if info is not None and info.min == 0 else -3
    for x, view in view_pairs(a):
        for lo, hi in ((low, 5), (None, 5), (low, None), (None, None)):
            with np.errstate(all="ignore"):
                expected = np.clip(view, lo, hi) if (lo, hi) != (None, None) else view
            assert_matches(xp.clip(x, lo, hi), expected)
    bounds = sample((6,), dtype, seed=2)
    lower, upper = np.minimum(bounds, bounds[::-1]), np.maximum(bounds, bounds[::-1])
    result = xp.clip(xp.asarray(a), xp.asarray(lower), xp.asarray(upper))
    with np.errstate(all="ignore"):
        assert_matches(result, np.minimum(np.maximum(a, lower), upper))


def test_clip_broadcasts_to_the_shape_of_all_arguments():
    result = xp.clip(xp.asarray([1.0, 5.0]), xp.zeros((3, 1)), 4.0)
    assert result.shape == (3, 2)
    np.testing.assert_array_equal(np.asarray(result), np.tile([1.0, 4.0], (3, 1)))


def test_clip_clamps_out_of_range_integer_bounds():
    x = xp.asarray([0, 100, 255], dtype=xp.uint8)
    np.testing.assert_array_equal(np.asarray(xp.clip(x, -5, 1000)), [0, 100, 255])
    np.testing.assert_array_equal(np.asarray(xp.clip(x, 50, 300)), [50, 100, 255])


@pytest.mark.strict
@pytest.mark.parametrize(("x", "low", "high"), [
    (xp.asarray([1j]), None, None),
    (xp.asarray([True]), None, None),
    (xp.asarray([1, 2]), 1.5, None),
    (xp.asarray([1.0, 2.0]), xp.asarray([1]), None),
    (xp.asarray([1, 2]), None, xp.asarray([1.0])),
    (xp.asarray([1.0]), 1j, None),
    ([1.0], None, None),
], ids=["complex", "bool", "float-bound", "int-array-bound", "float-array-bound",
        "complex-bound", "list"])
def test_clip_refuses_mismatched_kinds(x, low, high):
    with pytest.raises(TypeError):
        xp.clip(x, low, high)
