"""The array object (spec: "Array object"): attributes, views, operators, Python conversions,
DLPack, numpy interchange, repr, devices and the namespace, checked against numpy."""

from __future__ import annotations

import ctypes
import gc
import math
import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hxarray as xp
from hxarray._ops import OPS

from .oracle import (
    BOOL,
    COMPLEX_FLOATING,
    CPU_ONLY,
    DTYPES,
    FLOATING,
    INTEGER,
    NUMERIC,
    NUMPY_DEVICES,
    ON_EACH_DEVICE,
    REAL,
    REAL_FLOATING,
    VIEWS,
    assert_elementwise,
    assert_matches,
    ids,
    np_dtype,
    numpy_from_dlpack,
    sample,
    view_pair,
    xps,
)

pytestmark = ON_EACH_DEVICE

# -- attributes and views --------------------------------------------------------------------------


def test_array_cannot_be_constructed_directly():
    with pytest.raises(TypeError, match="asarray"):
        xp.Array()


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 4), (2, 3, 4)])
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_attributes(shape, dtype, device):
    x = xp.empty(shape, dtype=dtype)
    assert x.dtype is dtype
    assert x.shape == shape and type(x.shape) is tuple
    assert x.ndim == len(shape)
    assert x.size == math.prod(shape) and type(x.size) is int
    assert x.device == device


@pytest.mark.parametrize("kind", list(VIEWS))
def test_transposes_are_views(kind):
    x, expected = view_pair(kind, (4, 6), xp.float64)
    assert_matches(x.T, expected.T)
    assert_matches(x.mT, expected.mT)
    assert x.T.buffer is x.buffer and x.mT.buffer is x.buffer


def test_mT_of_a_stack_and_T_errors():
    data = sample((2, 3, 4), xp.int32)
    x = xp.asarray(data)
    assert_matches(x.mT, data.mT)
    for bad in (xp.asarray(1.0), xp.arange(3), x):
        with pytest.raises(ValueError):
            bad.T
    with pytest.raises(ValueError):
        xp.arange(3).mT


def test_views_share_the_buffer_both_ways():
    x = xp.reshape(xp.arange(12.0), (3, 4))
    view = x[1:, ::2]
    assert view.buffer is x.buffer
    view[0, 0] = -1.0
    assert float(x[1, 0]) == -1.0
    x[2, 2] = 42.0
    assert float(view[1, 1]) == 42.0
    x.mT[3, 0] = 7.0
    assert float(x[0, 3]) == 7.0


def test_views_keep_the_buffer_alive():
    x = xp.arange(10)
    view = x[2:5]
    del x
    gc.collect()
    xp.full(10, -1)  # would reuse the freed memory
    assert_matches(view, np.arange(2, 5))


def test_arrays_are_unhashable_and_iterate_over_the_first_axis():
    with pytest.raises(TypeError):
        hash(xp.arange(3))
    items = list(xp.asarray([4, 5, 6], dtype=xp.int16))
    assert len(items) == 3
    for item, value in zip(items, [4, 5, 6]):
        assert_matches(item, np.asarray(value, dtype=np.int16))
    assert len(xp.zeros((2, 3))) == 2
    with pytest.raises(TypeError):
        iter(xp.asarray(1))


# -- operators -------------------------------------------------------------------------------------

BINARY = {  # name: (Python operator, numpy function, operand dtypes)
    "add": (operator.add, np.add, NUMERIC),
    "sub": (operator.sub, np.subtract, NUMERIC),
    "mul": (operator.mul, np.multiply, NUMERIC),
    "truediv": (operator.truediv, np.divide, FLOATING),
    "floordiv": (operator.floordiv, np.floor_divide, REAL),
    "mod": (operator.mod, np.remainder, REAL),
    "pow": (operator.pow, np.power, NUMERIC),
    "and": (operator.and_, np.bitwise_and, BOOL + INTEGER),
    "or": (operator.or_, np.bitwise_or, BOOL + INTEGER),
    "xor": (operator.xor, np.bitwise_xor, BOOL + INTEGER),
    "lshift": (operator.lshift, np.left_shift, INTEGER),
    "rshift": (operator.rshift, np.right_shift, INTEGER),
    "eq": (operator.eq, np.equal, DTYPES),
    "ne": (operator.ne, np.not_equal, DTYPES),
    "lt": (operator.lt, np.less, REAL),
    "le": (operator.le, np.less_equal, REAL),
    "gt": (operator.gt, np.greater, REAL),
    "ge": (operator.ge, np.greater_equal, REAL),
}
INPLACE = {"add": operator.iadd, "sub": operator.isub, "mul": operator.imul,
           "truediv": operator.itruediv, "floordiv": operator.ifloordiv, "mod": operator.imod,
           "pow": operator.ipow, "and": operator.iand, "or": operator.ior, "xor": operator.ixor,
           "lshift": operator.ilshift, "rshift": operator.irshift}
CASES = [(name, dtype) for name, (_, _, dtypes) in BINARY.items() for dtype in dtypes]
INPLACE_CASES = [(name, dtype) for name, dtype in CASES if name in INPLACE]


def _operands(name: str, dtype: xp.DType) -> tuple[np.ndarray, np.ndarray]:
    """Two (3, 4) operands for `name` that stay inside what the operator defines for integers
    (no zero divisors, no negative powers, shifts within the bit width) and where numpy follows
    the spec's special cases."""
    a, b = sample((3, 4), dtype, seed=1), sample((3, 4), dtype, seed=2)
    if name == "floordiv" and dtype in REAL_FLOATING:  # numpy misses the spec's cases with inf
        a, b = (np.where(np.isinf(v), v.dtype.type(7.5), v) for v in (a, b))
    if dtype in INTEGER:
        if name in ("floordiv", "mod"):
            b[b == 0] = 1
        elif name == "pow":
            b = (b % 4).astype(b.dtype)
        elif name in ("lshift", "rshift"):
            b = (b % (8 * b.itemsize)).astype(b.dtype)
            b[b < 0] += 8 * b.itemsize // 2
    return a, b


def _scalar(name: str, dtype: xp.DType) -> bool | int | float | complex:
    """A Python scalar of the kind the spec lets meet an array of `dtype`."""
    if dtype is xp.bool:
        return True
    if dtype in INTEGER:
        return 3 if name not in ("lshift", "rshift", "pow") else 2
    return 2.5 if dtype in REAL_FLOATING else complex(1.5, -2.0)


def _expected(function, a, b):
    with np.errstate(all="ignore"):
        return function(a, b)


SPEC_NAME = {op.operator: name for name, op in OPS.items() if op.operator}  # "truediv": "divide"


def _check(stem, result, function, a, b):
    """`result` of the operator `stem` on the numpy operands a and b is numpy's."""
    expected = np.asarray(_expected(function, a, b))
    assert result.dtype.name == expected.dtype.name, (result.dtype, expected.dtype)
    assert_elementwise(SPEC_NAME[stem], result, expected, (a, b))


@pytest.mark.parametrize("name,dtype", CASES, ids=[f"{n}-{d.name}" for n, d in CASES])
def test_binary_operator_with_arrays(name, dtype):
    op, function, _ = BINARY[name]
    a, b = _operands(name, dtype)
    _check(name, op(xp.asarray(a), xp.asarray(b)), function, a, b)


@pytest.mark.parametrize("name,dtype", CASES, ids=[f"{n}-{d.name}" for n, d in CASES])
def test_binary_operator_with_python_scalars_on_either_side(name, dtype):
    op, function, _ = BINARY[name]
    a, _ = _operands(name, dtype)
    if name == "pow" and dtype in INTEGER:
        a = (a % 4).astype(a.dtype)  # keep `scalar ** a` defined
    if name in ("lshift", "rshift") and dtype in INTEGER:
        a = (a % 4).astype(a.dtype)
    if name in ("floordiv", "mod") and dtype in INTEGER:
        a[a == 0] = 1
    s = _scalar(name, dtype)
    s_np = np.asarray(s, dtype=a.dtype)
    x = xp.asarray(a)
    _check(name, op(x, s), function, a, s_np)
    _check(name, op(s, x), function, s_np, a)


@pytest.mark.parametrize("name,dtype", INPLACE_CASES,
                         ids=[f"i{n}-{d.name}" for n, d in INPLACE_CASES])
def test_inplace_operator_writes_into_the_array(name, dtype):
    _, function, _ = BINARY[name]
    a, b = _operands(name, dtype)
    x = xp.asarray(a, copy=True)
    buffer = x.buffer
    y = INPLACE[name](x, xp.asarray(b))
    assert y is x and x.buffer is buffer
    _check(name, x, function, a, b)
    s = _scalar(name, dtype)
    x = xp.asarray(a, copy=True)
    assert INPLACE[name](x, s) is x
    _check(name, x, function, a, np.asarray(s, a.dtype))


def test_inplace_operator_on_a_view_writes_through_to_the_base():
    x = xp.reshape(xp.arange(12.0), (3, 4))
    expected = np.arange(12.0).reshape(3, 4)
    view = x[::2, ::-1]
    view += 100.0
    expected[::2, ::-1] += 100.0
    assert_matches(x, expected)
    x.mT[1] *= -1.0
    expected.mT[1] *= -1.0
    assert_matches(x, expected)


def test_inplace_operator_broadcasts_the_right_operand():
    x = xp.zeros((2, 3), dtype=xp.int32)
    x += xp.asarray([1, 2, 3], dtype=xp.int32)
    x -= xp.asarray(1, dtype=xp.int8)  # a narrower dtype of the same kind keeps x's dtype
    assert_matches(x, np.array([[0, 1, 2], [0, 1, 2]], dtype=np.int32))


@pytest.mark.strict
@pytest.mark.parametrize("update,error", [
    (lambda x: operator.iadd(x, xp.ones((2, 3), dtype=xp.int16)), ValueError),  # would grow x
    (lambda x: operator.iadd(x, xp.ones(2, dtype=xp.int16)), ValueError),  # does not broadcast
    (lambda x: operator.iadd(x, xp.ones(3, dtype=xp.int32)), TypeError),  # changes the dtype
    (lambda x: operator.iadd(x, 1.5), TypeError),  # a float does not fit an integer array
    (lambda x: operator.itruediv(x, 2), TypeError),  # true division needs floats
    (lambda x: operator.iadd(x, 2**20), OverflowError),  # the int does not fit int16
    (lambda x: operator.iadd(x, xp.ones(3)), TypeError),  # no integer/floating promotion
    (lambda x: operator.imatmul(x, xp.ones((3, 2), dtype=xp.int16)), ValueError),  # new shape
])
def test_failed_inplace_operator_leaves_x_unchanged(update, error):
    x = xp.asarray([1, 2, 3], dtype=xp.int16)
    before = np.asarray(x).copy()
    with pytest.raises(error):
        update(x)
    assert_matches(x, before)


def test_inplace_matmul():
    x = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
    x @= xp.asarray([[0.0, 1.0], [1.0, 0.0]])
    assert_matches(x, np.array([[2.0, 1.0], [4.0, 3.0]]))


@pytest.mark.parametrize("dtype", BOOL + INTEGER, ids=ids(BOOL + INTEGER))
def test_unary_operators(dtype):
    a = sample((3, 4), dtype)
    x = xp.asarray(a)
    assert_matches(~x, np.invert(a))
    if dtype is not xp.bool:
        with np.errstate(all="ignore"):
            assert_matches(-x, np.negative(a))
            assert_matches(+x, a)
            assert_matches(abs(x), np.abs(a))


@pytest.mark.parametrize("dtype", FLOATING, ids=ids(FLOATING))
def test_unary_operators_on_floats(dtype):
    a = sample((3, 4), dtype)
    x = xp.asarray(a)
    assert_matches(-x, -a)
    assert_matches(+x, a)
    assert_elementwise("abs", abs(x), np.abs(a), (a,))
    with pytest.raises(TypeError):
        ~x


@pytest.mark.parametrize("dtype", NUMERIC, ids=ids(NUMERIC))
def test_matmul_operator(dtype, device):
    a = sample((2, 3, 4), dtype, seed=3) % 7 if dtype in INTEGER else sample((2, 3, 4), dtype)
    b = sample((4, 5), dtype, seed=4) % 7 if dtype in INTEGER else sample((4, 5), dtype, seed=4)
    a, b = np.nan_to_num(a), np.nan_to_num(b)  # keep inf * 0 out of the sums
    if str(device) not in NUMPY_DEVICES and dtype in FLOATING:
        # Sums that overflow give inf or NaN by how the products are rounded and ordered
        # (numpy's BLAS fuses them): other devices are compared on values that stay finite.
        a, b = (np.where(np.abs(v) > 1e4, 1, v) for v in (a, b))
    with np.errstate(all="ignore"):
        expected = a @ b
    result = xp.asarray(a) @ xp.asarray(b)
    assert result.dtype.name == expected.dtype.name and result.shape == expected.shape
    np.testing.assert_allclose(np.asarray(result), expected, rtol=1e-5)


def test_operators_mixing_dtypes_promote():
    x = xp.asarray([1, 2], dtype=xp.int8) + xp.asarray([1, 2], dtype=xp.uint8)
    assert_matches(x, np.array([2, 4], dtype=np.int16))
    y = xp.asarray([1.5], dtype=xp.float32) * xp.asarray([2j], dtype=xp.complex128)
    assert_matches(y, np.array([3j], dtype=np.complex128))


def test_operators_broadcast():
    a, b = sample((3, 1), xp.float64), sample((4,), xp.float64, seed=1)
    assert_matches(xp.asarray(a) - xp.asarray(b), a - b)
    with pytest.raises(ValueError):
        xp.ones((3, 2)) + xp.ones(4)


@pytest.mark.strict
@pytest.mark.parametrize("other", ["a", None, [1, 2, 3], (1, 2, 3), np.arange(3), object()])
def test_operators_reject_other_types(other):
    x = xp.arange(3)
    with pytest.raises(TypeError):
        x + other
    with pytest.raises(TypeError):
        other + x
    with pytest.raises(TypeError):
        x < other


@pytest.mark.strict
@pytest.mark.parametrize("expression", [
    "xp.arange(3) + 1.5",  # float with an integer array
    "xp.arange(3) + True",  # bool with an integer array
    "xp.asarray([True]) + 1",  # int with a bool array
    "xp.asarray([True]) + xp.asarray([True])",  # add needs numbers
    "xp.arange(3) + xp.asarray([1.0, 2.0, 3.0])",  # no integer/floating promotion
    "xp.asarray([1.0]) < xp.asarray([1j])",  # complex numbers do not compare
    "xp.asarray([1.0]) & xp.asarray([1.0])",  # bitwise needs integers or bools
    "xp.arange(3) @ 2",  # @ takes no scalars
])
def test_operators_reject_mismatched_kinds(expression):
    with pytest.raises(TypeError):
        eval(expression, {"xp": xp})


@pytest.mark.parametrize("dtype", REAL_FLOATING, ids=ids(REAL_FLOATING))
def test_complex_scalar_with_real_floating_array(dtype):
    a = sample((4,), dtype)
    expected_dtype = np.result_type(np_dtype(dtype), 1j).type  # (float16's: complex64)
    with np.errstate(all="ignore"):
        assert_matches(xp.asarray(a) * 2j, a.astype(expected_dtype) * expected_dtype(2j))
        assert_matches(1j + xp.asarray(a), expected_dtype(1j) + a.astype(expected_dtype))


def test_python_int_out_of_bounds_overflows():
    with pytest.raises(OverflowError):
        xp.asarray([1], dtype=xp.uint8) + 256
    with pytest.raises(OverflowError):
        -1 + xp.asarray([1], dtype=xp.uint8)


@given(x=xps.arrays(dtype=xps.floating_dtypes(), shape=xps.array_shapes(max_dims=3)),
       value=st.floats(allow_nan=True, allow_infinity=True, width=32))
def test_float_scalar_arithmetic_matches_numpy(x, value):
    a = np.asarray(x)
    for op in (operator.add, operator.sub, operator.mul, operator.truediv):
        with np.errstate(all="ignore"):
            assert_matches(op(x, value), op(a, np.asarray(value, dtype=a.dtype)))
            assert_matches(op(value, x), op(np.asarray(value, dtype=a.dtype), a))


# -- Python scalars --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_conversions_of_0d_arrays(dtype):
    for value in sample((6,), dtype, seed=5):
        x = xp.asarray(value, dtype=dtype)
        assert type(bool(x)) is bool and bool(x) == bool(value)
        assert type(complex(x)) is complex
        if dtype in COMPLEX_FLOATING:
            assert complex(x) == complex(value) or np.isnan(value)
            for convert in (int, float, operator.index):
                with pytest.raises(TypeError):
                    convert(x)
            continue
        real = float(value)
        assert type(float(x)) is float
        assert float(x) == real or math.isnan(real)
        if math.isfinite(real):
            assert type(int(x)) is int and int(x) == int(value)
        if dtype in INTEGER:
            assert operator.index(x) == int(value) and type(operator.index(x)) is int
        else:
            with pytest.raises(TypeError):
                operator.index(x)


@pytest.mark.parametrize("dtype", REAL_FLOATING, ids=ids(REAL_FLOATING))
def test_conversion_special_cases(dtype):
    nan, inf, zero = (xp.asarray(v, dtype=dtype) for v in (math.nan, math.inf, -0.0))
    assert bool(nan) is True and bool(inf) is True and bool(zero) is False
    with pytest.raises(ValueError):
        int(nan)
    with pytest.raises(OverflowError):
        int(inf)
    with pytest.raises(OverflowError):
        int(-inf)
    assert int(zero) == 0 and int(xp.asarray(-2.75, dtype=dtype)) == -2
    assert math.copysign(1.0, float(zero)) == -1.0
    c = complex(nan)
    assert math.isnan(c.real) and math.isnan(c.imag)  # the spec's NaN + NaN j
    assert complex(inf) == complex(math.inf, 0.0)
    assert complex(xp.asarray(-math.inf, dtype=dtype)) == complex(-math.inf, 0.0)


def test_conversions_of_bool_and_complex():
    true, false = xp.asarray(True), xp.asarray(False)
    assert (int(true), float(true), complex(true)) == (1, 1.0, 1 + 0j)
    assert (int(false), float(false), complex(false)) == (0, 0.0, 0j)
    assert type(int(true)) is int
    with pytest.raises(TypeError):
        operator.index(true)
    assert bool(xp.asarray(complex(0.0, -0.0))) is False
    assert bool(xp.asarray(complex(0.0, 1e-300))) is True
    assert bool(xp.asarray(complex(math.nan, 0.0))) is True


def test_uint64_converts_exactly():
    x = xp.asarray(2**64 - 1, dtype=xp.uint64)
    assert int(x) == 2**64 - 1 and operator.index(x) == 2**64 - 1


@pytest.mark.strict
@pytest.mark.parametrize("shape", [(1,), (2,), (1, 1), (0,)])
@pytest.mark.parametrize("convert", [bool, int, float, complex, operator.index])
def test_conversions_need_0d(shape, convert):
    with pytest.raises(TypeError):
        convert(xp.ones(shape, dtype=xp.int64))


@pytest.mark.parametrize("shape", [(1,), (2,), (1, 1), (0,)])
@pytest.mark.parametrize("convert", [int, float, complex, operator.index])
def test_conversions_but_bool_need_0d_in_numpy_mode(shape, convert):
    """(bool() takes one-element arrays in numpy mode: test_numpy_answers.py)"""
    with pytest.raises(TypeError):
        convert(xp.ones(shape, dtype=xp.int64))
    with pytest.raises(TypeError):
        bool(xp.ones((2, *shape), dtype=xp.int64))


def test_0d_integer_arrays_work_as_python_indices():
    i = xp.asarray(2, dtype=xp.uint8)
    assert [10, 20, 30][i] == 30
    assert range(10)[i] == 2


# -- DLPack ----------------------------------------------------------------------------------------


def _capsule_flags(capsule) -> int:
    """The `flags` of a versioned DLPack capsule (DLManagedTensorVersioned: version, manager_ctx,
    deleter, flags)."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return ctypes.c_uint64.from_address(get(capsule, b"dltensor_versioned") + 24).value


@pytest.mark.parametrize("kind", list(VIEWS))
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_dlpack_round_trip_through_numpy(kind, dtype):
    x, expected = view_pair(kind, (4, 5), dtype)
    exported = numpy_from_dlpack(x)
    np.testing.assert_array_equal(exported, expected, strict=True)
    assert_matches(xp.from_dlpack(exported), expected)


@pytest.mark.parametrize("shape", [(), (0,), (3, 0)])
def test_dlpack_of_0d_and_empty_arrays(shape):
    data = np.zeros(shape, dtype=np.float32)
    np.testing.assert_array_equal(numpy_from_dlpack(xp.asarray(data)), data, strict=True)


def test_dlpack_shares_memory_unless_copy_is_requested():
    x = xp.arange(4.0)
    if x.__dlpack_device__()[0] != 1:  # a GPU's memory: numpy takes only a host copy
        numpy_from_dlpack(x)[0] = 10.0
        assert float(x[0]) == 0.0
        return
    shared = np.from_dlpack(x)
    shared[0] = 10.0
    assert float(x[0]) == 10.0
    copied = np.from_dlpack(x, copy=True)
    copied[1] = 20.0
    assert float(x[1]) == 1.0
    kept = np.from_dlpack(x[1:])
    del x, shared
    gc.collect()
    xp.full(4, -1.0)
    np.testing.assert_array_equal(kept, [1.0, 2.0, 3.0])


@CPU_ONLY
def test_dlpack_versions_and_devices(device):
    x = xp.arange(3)
    assert x.__dlpack_device__() == (1, 0)
    for max_version in (None, (0, 8)):
        capsule = x.__dlpack__(max_version=max_version)
        assert "dltensor" in repr(capsule) and "versioned" not in repr(capsule)
    assert "dltensor_versioned" in repr(x.__dlpack__(max_version=(1, 0)))
    assert "dltensor_versioned" in repr(x.__dlpack__(max_version=(1, 0), dl_device=(1, 0)))
    assert _capsule_flags(x.__dlpack__(max_version=(1, 0), copy=False)) & 2 == 0
    with pytest.raises(BufferError):
        x.__dlpack__(dl_device=(2, 0))
    with pytest.raises(ValueError):
        x.__dlpack__(stream=1)


def test_dlpack_copy_sets_the_is_copied_flag():
    x = xp.arange(3)
    assert _capsule_flags(x.__dlpack__(max_version=(1, 0), copy=True)) & 2


# -- numpy interchange -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(VIEWS))
@CPU_ONLY
def test_numpy_asarray_is_a_view(kind, device):
    x, expected = view_pair(kind, (4, 6), xp.int32)
    host = np.asarray(x)
    np.testing.assert_array_equal(host, expected, strict=True)
    host[0, 0] = -7
    assert int(x[0, 0]) == -7


def test_numpy_asarray_keeps_the_buffer_alive():
    x = xp.arange(6.0)
    host = np.asarray(x[::2])
    del x
    gc.collect()
    for _ in range(3):
        xp.full(6, -1.0)
    np.testing.assert_array_equal(host, [0.0, 2.0, 4.0])


@CPU_ONLY
def test_numpy_array_protocol_copy_and_dtype(device):
    x = xp.arange(3.0)
    copied = np.array(x, copy=True)
    copied[0] = 9.0
    assert float(x[0]) == 0.0
    np.testing.assert_array_equal(np.asarray(x, dtype=np.int16), np.arange(3, dtype=np.int16),
                                  strict=True)
    np.asarray(x, dtype=np.float64, copy=False)[1] = 5.0
    assert float(x[1]) == 5.0
    with pytest.raises(ValueError):
        np.asarray(x, dtype=np.float32, copy=False)


@pytest.mark.strict
def test_numpy_ufuncs_do_not_convert_silently():
    with pytest.raises(TypeError):
        np.add(xp.arange(3), 1)


# -- repr, devices, namespace ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_repr_shows_values_dtype_and_device(dtype, device):
    data = sample((2, 3), dtype)
    text = repr(xp.asarray(data))
    assert text.startswith("Array(") and f"dtype={dtype.name}" in text
    assert f"device='{device}'" in text
    assert np.array2string(data, separator=", ", prefix="Array(") in text
    assert str(xp.asarray(data)) == text


def test_repr_of_0d_and_empty_arrays(device):
    assert repr(xp.asarray(1.5, dtype=xp.float32)) == \
        f"Array(1.5, dtype=float32, device='{device}')"
    assert repr(xp.zeros(0, dtype=xp.int8)) == f"Array([], dtype=int8, device='{device}')"
    assert "shape=(2, 0)" in repr(xp.zeros((2, 0)))
    assert "nan" in repr(xp.asarray([math.nan])) and "-inf" in repr(xp.asarray([-math.inf]))


@pytest.mark.parametrize("device", ["cpu", xp.Device("cpu"), "cpu:0"])
def test_to_device_same_device(device):
    x, expected = view_pair("mT", (3, 4), xp.float32)
    moved = x.to_device(device)
    assert moved.device == xp.Device("cpu")
    assert_matches(moved, expected)
    assert_matches(x.to_device(x.device, stream=None), expected)


@pytest.mark.parametrize("device,error", [("gpu", ValueError), ("cpu:x", ValueError),
                                          (3, TypeError), (None, TypeError)])
def test_to_device_rejects_bad_devices(device, error):
    with pytest.raises(error):
        xp.arange(3).to_device(device)


@pytest.mark.parametrize("kind", list(VIEWS))
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_to_device_copies_between_devices(kind, dtype, device, other_device):
    x, expected = view_pair(kind, (3, 4), dtype)
    moved = x.to_device(other_device, stream=None)
    assert moved.device == other_device and moved.buffer is not x.buffer
    assert_matches(moved, expected)
    back = moved.to_device(str(device))
    assert back.device == device
    assert_matches(back, expected)
    moved[0, 0] = moved[1, 1]
    assert_matches(x, expected)  # the source is untouched


def test_operators_refuse_arrays_on_different_devices(other_device):
    x = xp.arange(3.0)
    other = x.to_device(other_device)
    for op in (operator.add, operator.mul, operator.eq, operator.matmul):
        with pytest.raises(ValueError):
            op(x, other)
    with pytest.raises(ValueError):
        x += other
    assert_matches(x, np.arange(3.0))
    assert_matches(other * 2.0, np.arange(3.0) * 2.0)
    assert (other * 2.0).device == other_device


@pytest.mark.parametrize("version", [None, "2023.12", "2024.12", "2025.12"])
def test_array_namespace(version):
    assert xp.arange(3).__array_namespace__(api_version=version) is xp


@pytest.mark.parametrize("version", ["2021.12", "2026.12", "latest", 2025.12])
def test_array_namespace_rejects_unknown_versions(version):
    with pytest.raises(ValueError):
        xp.arange(3).__array_namespace__(api_version=version)
