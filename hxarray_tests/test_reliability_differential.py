"""Devices agree (docs/reliability.md, "Devices agree"): complex special values on cuda:0 as on
the CPU, numpy mode's true divide and integer powers as numpy 2's, what the cross-device
differential (stress/differential.py) found, and a bounded run of that differential on every
device against the CPU."""

from __future__ import annotations

import math
import operator

import numpy as np
import pytest

import hxarray as xp
from stress import differential

from .oracle import (
    COMPLEX_FLOATING,
    INTEGER,
    ON_EACH_DEVICE,
    REAL_FLOATING,
    SIGNED,
    assert_close,
    ids,
    np_dtype,
)

pytestmark = ON_EACH_DEVICE
INF, NAN = math.inf, math.nan


def assert_same(got: xp.Array, expected: np.ndarray, op: str = "equal") -> None:
    """`got` is `expected` bit for bit, a NaN's sign and payload aside (where `op` rounds, within
    the differential's ulp bound)."""
    values = np.asarray(got.to_device(xp.Device("cpu")))
    expected = np.asarray(expected)
    assert values.dtype == expected.dtype, (values.dtype, expected.dtype)
    mismatch, _ = differential.compare(differential.Case(op, (str(values.dtype),), True), values,
                                       expected)
    assert mismatch is None, f"{mismatch.detail}: {values} against {expected}"


# -- 8. complex special values: every device gives the CPU's answer -----------------------------
ZEROS = [0j, complex(0, -0.0), complex(-0.0, 0), complex(-0.0, -0.0)]


@pytest.mark.parametrize("dtype", COMPLEX_FLOATING, ids=ids(COMPLEX_FLOATING))
def test_a_zero_base_to_a_complex_power_of_positive_real_part_is_zero(device, dtype) -> None:
    assert_same(xp.pow(xp.asarray(0j, dtype=dtype), 1 + 1j), np.asarray(0j, np_dtype(dtype)))
    exponents = [1 + 1j, 1 - 1j, 0.5 + 2j, 3 + 0j, complex(INF, 1), complex(1, NAN), 0j,
                 complex(-0.0, 0), -1 + 0j, -1 + 1j, 1j, complex(NAN, 0)]
    base = np.repeat(np.array(ZEROS, np_dtype(dtype)), len(exponents))
    power = np.tile(np.array(exponents, np_dtype(dtype)), len(ZEROS))
    with np.errstate(all="ignore"):
        expected = np.power(base, power)  # numpy 2: 0 where the real part is > 0, 1 at 0
    assert_same(xp.pow(xp.asarray(base), xp.asarray(power)), expected)


@pytest.mark.parametrize("dtype", COMPLEX_FLOATING, ids=ids(COMPLEX_FLOATING))
def test_the_sign_of_a_complex_number_with_an_infinite_part(device, dtype) -> None:
    assert_same(xp.sign(xp.asarray(complex(0, INF), dtype=dtype)),
                np.asarray(1j, np_dtype(dtype)))
    values = np.array([complex(INF, 1), complex(-INF, -1), complex(1, -INF), complex(-0.0, INF),
                       complex(INF, -0.0), complex(INF, INF), complex(-INF, INF),
                       complex(INF, NAN), complex(NAN, -INF)], np_dtype(dtype))
    expected = np.sign(values)
    expected[np.isnan(values)] = complex(NAN, NAN)  # the standard: NaN where a part is NaN
    assert_same(xp.sign(xp.asarray(values)), expected)


# -- what the differential found -----------------------------------------------------------------
# Inputs where cuda:0 gave another class of value (another sign of a zero or an infinity, NaN
# for a number) than the CPU, whose functions here are numpy's (glibc's complex functions).
SPECIAL = {
    "asin": [complex(-INF, NAN), complex(INF, NAN)],
    "asinh": [complex(NAN, -INF), complex(NAN, INF)],
    "cos": [complex(0, NAN), complex(INF, 0), complex(INF, -0.0), complex(-INF, 0),
            complex(-INF, -0.0)],
    "cosh": [complex(0, INF), complex(0, -INF), complex(-0.0, INF), complex(-0.0, -INF),
             complex(NAN, -0.0), complex(NAN, 0)],
    "exp": [complex(-INF, -INF), complex(-INF, INF), complex(-INF, NAN)],
    "sin": [complex(INF, -0.0), complex(INF, INF), complex(INF, -INF), complex(NAN, 0),
            complex(NAN, INF), complex(NAN, -INF), complex(-INF, -0.0), complex(-INF, INF),
            complex(0, INF), complex(-0.0, -INF)],
    "sinh": [complex(0, INF), complex(0, -INF), complex(-0.0, NAN), complex(-0.0, INF)],
}
NUMPY = {"asin": np.arcsin, "asinh": np.arcsinh}


@pytest.mark.parametrize("dtype", COMPLEX_FLOATING, ids=ids(COMPLEX_FLOATING))
@pytest.mark.parametrize("name", list(SPECIAL))
def test_complex_special_values_are_the_cpus(device, name, dtype) -> None:
    values = np.array(SPECIAL[name], np_dtype(dtype))
    with np.errstate(all="ignore"):
        expected = NUMPY.get(name, getattr(np, name, None))(values)
    assert_same(getattr(xp, name)(xp.asarray(values)), expected)


@pytest.mark.parametrize("dtype", COMPLEX_FLOATING, ids=ids(COMPLEX_FLOATING))
def test_complex_log_and_sqrt_of_subnormal_numbers_keep_their_digits(device, dtype) -> None:
    tiny = float(np.finfo(np_dtype(dtype)).smallest_subnormal)
    values = np.array([complex(tiny, tiny), complex(tiny * 3, -tiny), complex(0, tiny),
                       complex(-tiny, 0)], np_dtype(dtype))
    for name in ("log", "log2", "log10", "sqrt"):
        got = np.asarray(getattr(xp, name)(xp.asarray(values)).to_device(xp.Device("cpu")))
        assert_close(got, getattr(np, name)(values), ulps=8, err_msg=name)


@pytest.mark.parametrize("dtype", COMPLEX_FLOATING, ids=ids(COMPLEX_FLOATING))
def test_sign_and_log1p_of_complex_numbers_whose_magnitude_overflows(device, dtype) -> None:
    """|z| is beyond the largest float, the results are not: numpy gives 1j and inf there."""
    big = float(np.finfo(np_dtype(dtype)).max)
    values = np.array([complex(big, big), complex(-big, big / 2)], np_dtype(dtype))
    expected_sign = values / 2 / np.abs(values / 2)
    got = np.asarray(xp.sign(xp.asarray(values)).to_device(xp.Device("cpu")))
    assert_close(got, expected_sign.astype(np_dtype(dtype)), ulps=4, err_msg="sign")
    got = np.asarray(xp.log1p(xp.asarray(values)).to_device(xp.Device("cpu")))
    assert np.isfinite(got).all(), got
    assert_close(got, np.log(values + 1), ulps=16, err_msg="log1p")


@pytest.mark.parametrize("dtype", COMPLEX_FLOATING, ids=ids(COMPLEX_FLOATING))
def test_complex_products_have_the_cpus_bits(device, dtype) -> None:
    """numpy's vector loops fuse each part's second product into the first (FMA); cuda:0 fuses
    the same ones, where it rounded both products on their own."""
    rng = np.random.default_rng(7)
    a, b = (np.array(rng.standard_normal(500) + 1j * rng.standard_normal(500), np_dtype(dtype))
            for _ in range(2))
    assert_same(xp.asarray(a) * xp.asarray(b), a * b)
    assert_same(xp.square(xp.asarray(a)), np.square(a))
    big = np.array([complex(np.finfo(np_dtype(dtype)).max, INF)], np_dtype(dtype))
    assert_same(xp.square(xp.asarray(big)), np.square(big))


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("source", REAL_FLOATING, ids=ids(REAL_FLOATING))
def test_floats_beyond_uint32_convert_alike_in_every_layout(device, source, layout) -> None:
    """numpy converts float32 and float64 values beyond uint32 one way in its contiguous loop and
    another in its strided one; its float16 loops (whose values beyond 65504 are infinities)
    convert alike in both, NaN and infinities to 0, and every device gives those."""
    with np.errstate(over="ignore"):  # (float16: the values beyond 65504 are infinities)
        values = np.array([NAN, INF, -INF, 5e9, -5e9, -3e9, 3e9, 2.0**31, -1.5, 7.9],
                          np_dtype(source))
    if source is xp.float16:
        with np.errstate(invalid="ignore"):
            expected = values.astype(np.uint32)
            np.testing.assert_array_equal(np.repeat(values, 2)[::2].astype(np.uint32), expected)
        np.testing.assert_array_equal(expected, [0] * 8 + [2**32 - 1, 7])
    else:
        expected = np.array([2**31, 0, 2**31, 0, 2**31, 2**31, 3_000_000_000, 2**31, 2**32 - 1,
                             7], np.uint32)
    x = xp.asarray(values) if layout == "contiguous" else \
        xp.asarray(np.repeat(values, 2))[::2]
    assert_same(xp.astype(x, xp.uint32), expected)
    target = xp.zeros(2 * values.size, dtype=xp.uint32)
    target[::2] = x
    assert_same(target[::2], expected)


# -- 9. numpy mode: true divide by a Python int beyond the array's dtype, negative powers -------
@pytest.mark.parametrize("above", [True, False], ids=["above", "below"])
@pytest.mark.parametrize("reflected", [False, True], ids=["x / int", "int / x"])
@pytest.mark.parametrize("dtype", INTEGER, ids=ids(INTEGER))
def test_true_divide_by_a_python_int_beyond_the_dtype_is_numpys(device, dtype, reflected,
                                                                   above) -> None:
    """The 64 cases: each integer dtype, the int on either side, above its maximum or below its
    minimum, through the operator and the function."""
    info = np.iinfo(np_dtype(dtype))
    value = int(info.max) + 1 if above else int(info.min) - 1
    data = np.array([1, 0, 3, int(info.max)], np_dtype(dtype))
    with np.errstate(all="ignore"):
        expected = np.divide(value, data) if reflected else np.divide(data, value)
    x = xp.asarray(data)
    for form in (operator.truediv, xp.divide):
        assert_same(form(value, x) if reflected else form(x, value), expected)


@pytest.mark.parametrize("name", ["atan2", "copysign", "hypot", "logaddexp", "nextafter"])
def test_floating_functions_of_a_python_int_beyond_the_dtype(device, name) -> None:
    """numpy computes them in floating point: float16 for int8, the int converted to it."""
    data = np.array([1, 0, 3, -100], np.int8)
    function = np.arctan2 if name == "atan2" else getattr(np, name)
    with np.errstate(all="ignore"):
        first, second = function(data, 200), function(-200, data)
    assert first.dtype == second.dtype == np.float16
    assert_same(getattr(xp, name)(xp.asarray(data), 200), first, name)
    assert_same(getattr(xp, name)(-200, xp.asarray(data)), second, name)


@pytest.mark.strict
def test_strict_mode_still_refuses_an_int_beyond_the_dtype(device) -> None:
    with pytest.raises(OverflowError, match="200 is out of bounds for int8"):
        xp.asarray(np.int8([1, 0, 3])) / 200


def test_an_int_too_large_for_float64_is_an_overflow_error(device) -> None:
    with pytest.raises(OverflowError, match=r"divide\(\): a Python int is too large"):
        xp.asarray(np.int8([1])) / 10**400


@pytest.mark.parametrize("dtype", SIGNED, ids=ids(SIGNED))
def test_integers_to_negative_integer_powers_raise_numpys_value_error(device, dtype) -> None:
    x = xp.asarray([2, 3], dtype=dtype)
    message = "Integers to negative integer powers are not allowed."
    for call in (lambda: x ** -1, lambda: xp.pow(x, -2), lambda: 2 ** xp.asarray([-1], dtype=dtype),
                 lambda: xp.pow(x, xp.asarray([1, -1], dtype=dtype)),
                 lambda: xp.pow(xp.asarray([True]), xp.asarray([-1], dtype=dtype))):
        with pytest.raises(ValueError, match=message):
            call()
    with pytest.raises(ValueError, match=message):
        x **= -1
    assert_same(x, np.array([2, 3], np_dtype(dtype)))  # nothing written
    assert_same(x ** 2, np.array([4, 9], np_dtype(dtype)))
    assert_same(x ** xp.asarray([0, 1], dtype=dtype), np.array([1, 3], np_dtype(dtype)))


@pytest.mark.strict
def test_strict_mode_keeps_truncated_negative_powers(device) -> None:
    assert_same(xp.asarray([2, 3]) ** -1, np.array([0, 0]))
    assert_same(xp.asarray([1, -1, -1]) ** xp.asarray([-3, -3, -2]), np.array([1, -1, 1]))


# -- the differential, bounded -------------------------------------------------------------------
@pytest.mark.parametrize("strict", [False, True], ids=["numpy mode", "strict"])
def test_every_elementwise_operation_agrees_with_the_cpu(device, strict) -> None:
    """Every operation, dtype and cast over the special values, in several layouts and with a
    Python scalar on either side: this device's results against the CPU's (contiguous)."""
    (record,) = differential.differential([device], {"mixed": 0, "scalars": 1}, seed=0,
                                          modes=(strict,))
    assert record["calls"] > 1000
    assert not record["mismatches"], "\n".join(record["examples"])
