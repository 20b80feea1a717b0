"""Data types, type promotion and the data type functions (spec: "Data Types", "Type Promotion
Rules", "Data Type Functions"). The promotion tables are copied from type_promotion.rst."""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hxarray as xp

from .oracle import (
    COMPLEX_FLOATING,
    DTYPES,
    FLOATING,
    INTEGER,
    ON_EACH_DEVICE,
    REAL_FLOATING,
    SIGNED,
    STANDARD_DTYPES,
    UNSIGNED,
    VIEWS,
    assert_matches,
    ids,
    np_dtype,
    sample,
    standard,
    view_pair,
)

pytestmark = ON_EACH_DEVICE

CODES = {"i1": xp.int8, "i2": xp.int16, "i4": xp.int32, "i8": xp.int64, "u1": xp.uint8,
         "u2": xp.uint16, "u4": xp.uint32, "u8": xp.uint64, "f4": xp.float32, "f8": xp.float64,
         "c8": xp.complex64, "c16": xp.complex128}

# The spec's tables, row operand first (type_promotion.rst, 2025.12).
SPEC_TABLES = """
     i1 i2 i4 i8
i1   i1 i2 i4 i8
i2   i2 i2 i4 i8
i4   i4 i4 i4 i8
i8   i8 i8 i8 i8

     u1 u2 u4 u8
u1   u1 u2 u4 u8
u2   u2 u2 u4 u8
u4   u4 u4 u4 u8
u8   u8 u8 u8 u8

     u1 u2 u4
i1   i2 i4 i8
i2   i2 i4 i8
i4   i4 i4 i8
i8   i8 i8 i8

     f4  f8  c8  c16
f4   f4  f8  c8  c16
f8   f8  f8  c16 c16
c8   c8  c16 c8  c16
c16  c16 c16 c16 c16
"""


def _parse_tables(text: str) -> dict[tuple[xp.DType, xp.DType], xp.DType]:
    table = {(xp.bool, xp.bool): xp.bool}
    for block in text.strip().split("\n\n"):
        header, *rows = (line.split() for line in block.splitlines())
        for row, *results in rows:
            for column, result in zip(header, results):
                table[CODES[row], CODES[column]] = CODES[result]
                table[CODES[column], CODES[row]] = CODES[result]  # the tables are symmetric
    return table


PROMOTION = _parse_tables(SPEC_TABLES)
PAIRS = list(itertools.product(STANDARD_DTYPES, STANDARD_DTYPES))  # (strict mode's)
ALL_PAIRS = list(itertools.product(DTYPES, DTYPES))


def test_the_spec_tables_cover_the_defined_pairs():
    assert len(PROMOTION) == 1 + 16 + 16 + 2 * 12 + 16


@pytest.mark.strict
@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a.name}-{b.name}" for a, b in PAIRS])
def test_result_type_follows_the_spec_tables(a, b):
    if (a, b) in PROMOTION:
        assert xp.result_type(a, b) is PROMOTION[a, b]
        assert xp.result_type(xp.empty(0, dtype=a), b) is PROMOTION[a, b]
        assert xp.result_type(xp.empty((), dtype=a), xp.empty(3, dtype=b)) is PROMOTION[a, b]
    else:  # mixed kinds and int64 with uint64: the spec leaves these open, hxarray refuses
        with pytest.raises(TypeError):
            xp.result_type(a, b)


@pytest.mark.strict
@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a.name}-{b.name}" for a, b in PAIRS])
def test_can_cast_follows_the_spec_tables(a, b):
    expected = PROMOTION.get((a, b)) is b
    assert xp.can_cast(a, b) is expected
    assert xp.can_cast(xp.empty(2, dtype=a), b) is expected


@pytest.mark.parametrize("a,b", ALL_PAIRS, ids=[f"{a.name}-{b.name}" for a, b in ALL_PAIRS])
def test_numpy_mode_promotes_as_numpy(a, b):
    """numpy mode's result_type, can_cast and operators are numpy's for every pair, float16
    among them (float16 with int8 is float16, with int16 float32, with complex64 complex64)."""
    expected = np.result_type(np_dtype(a), np_dtype(b))
    assert xp.result_type(a, b).name == expected.name
    assert xp.can_cast(a, b) is bool(np.can_cast(np_dtype(a), np_dtype(b)))
    if a is not xp.bool or b is not xp.bool:
        x, y = xp.ones(2, dtype=a), xp.zeros(2, dtype=b)
        with np.errstate(all="ignore"):
            assert (x * y).dtype.name == (np.ones(2, np_dtype(a)) * np.zeros(2, np_dtype(b))
                                          ).dtype.name


@pytest.mark.parametrize("scalar", [True, 2, -70000, 1.5, 1e300, 1 + 2j], ids=str)
def test_float16_with_python_scalars_is_numpys(scalar):
    """A Python scalar is weak: float16 stays float16 (an int or float beyond its range rounds
    to infinity, as numpy's cast), a complex makes complex64."""
    data = np.array([0.5, -1.0, 65504.0, np.nan], np.float16)
    x = xp.asarray(data)
    with np.errstate(all="ignore"):
        if isinstance(scalar, bool):  # numpy adds a bool to float16 as a float16 1
            expected = data + scalar
        else:
            expected = data + np.asarray(scalar, dtype=np.result_type(data, scalar))
        assert xp.result_type(x, scalar).name == np.result_type(data, scalar).name
        assert_matches(x + scalar, expected)
        assert_matches(scalar + x, expected)


def test_finfo_of_float16_is_numpys():
    info, expected = xp.finfo(xp.float16), np.finfo(np.float16)
    assert (info.bits, info.eps, info.max, info.min, info.smallest_normal) == (
        16, float(expected.eps), 65504.0, -65504.0, float(expected.smallest_normal))
    assert info.dtype is xp.float16
    assert xp.finfo(xp.ones(1, dtype=xp.float16)) == info
    assert xp.finfo(np.float16) == info
    assert xp.isdtype(xp.float16, "real floating") and xp.isdtype(xp.float16, "numeric")
    assert "float16" not in xp.__array_namespace_info__().dtypes(kind="real floating")


@pytest.mark.parametrize("source", DTYPES, ids=ids(DTYPES))
def test_casts_to_and_from_float16_are_numpys(source):
    """Every dtype to float16 (rounded once, to nearest even: overflow to infinity, subnormals,
    NaN), and float16 to every dtype, as numpy's astype; strided views too."""
    data = sample((40,), source, seed=3)
    halves = np.array([0.0, -0.0, 1.0, -1.0, 65504.0, -65504.0, np.inf, -np.inf, np.nan,
                       2.0**-24, -(2.0**-24), 2.0**-14, 0.1, 3.140625, 100.5, 2049.0],
                      np.float16)
    with np.errstate(all="ignore"):
        if source not in COMPLEX_FLOATING:
            assert_matches(xp.astype(xp.asarray(data), xp.float16), data.astype(np.float16))
            assert_matches(xp.astype(xp.asarray(data)[::3], xp.float16),
                           data[::3].astype(np.float16))
        target = np_dtype(source)
        expected = halves.astype(target)
        if source in INTEGER:  # numpy's casts of NaN and infinities to integers vary by path
            keep = np.isfinite(halves)
            got = np.asarray(xp.astype(xp.asarray(halves), source))
            np.testing.assert_array_equal(got[keep], expected[keep], strict=True)
        else:
            assert_matches(xp.astype(xp.asarray(halves), source), expected)


def test_float64_rounds_to_float16_once():
    """Directly, not through float32: 1 + 2**-11 + 2**-40 is above the halfway point between two
    float16s, which float32 rounds away."""
    value = 1 + 2.0**-11 + 2.0**-40
    assert np.float16(value) != np.float16(np.float32(value))
    assert_matches(xp.astype(xp.asarray([value]), xp.float16), np.array([value], np.float16))
    assert_matches(xp.asarray([value], dtype=xp.float16), np.array([value], np.float16))


NUMERIC_PAIRS = [(a, b) for (a, b) in PROMOTION if a is not xp.bool]


@pytest.mark.parametrize("a,b", NUMERIC_PAIRS, ids=[f"{a.name}-{b.name}" for a, b in NUMERIC_PAIRS])
def test_operators_promote_like_result_type(a, b):
    x1, x2 = xp.ones((2, 1), dtype=a), xp.ones(3, dtype=b)
    expected = np.ones((2, 3), dtype=np_dtype(PROMOTION[a, b]))
    assert_matches(x1 * x2, expected)
    assert_matches(x1 == x2, np.ones((2, 3), dtype=bool))


def test_bool_operators_stay_bool():
    t, f = xp.asarray([True, False]), xp.asarray([True, True])
    assert_matches(t & f, np.array([True, False]))
    assert_matches(t ^ f, np.array([False, True]))


@pytest.mark.strict  # numpy's own promotion is not associative: int8, uint16, float32
@given(st.lists(st.sampled_from([d for d in STANDARD_DTYPES if d is not xp.bool]), min_size=2,
                max_size=5))
def test_result_type_is_associative_and_commutative(dtypes):
    try:
        expected = xp.result_type(*dtypes)
    except TypeError:
        for order in itertools.permutations(dtypes):
            with pytest.raises(TypeError):
                xp.result_type(*order)
        return
    for order in itertools.permutations(dtypes):
        assert xp.result_type(*order) is expected
    assert xp.result_type(xp.result_type(*dtypes[:2]), *dtypes[2:]) is expected


SCALAR_CASES = [  # (dtype, Python scalar, the result or the error)
    *[(xp.bool, True, xp.bool)],
    *[(d, s, TypeError) for d in (xp.bool,) for s in (1, 1.0, 1j)],
    *[(d, 2**70 if d is xp.uint64 else 1, d) for d in INTEGER],
    *[(d, s, TypeError) for d in INTEGER for s in (True, 1.0, 1j)],
    *[(d, s, d) for d in standard(FLOATING) for s in (1, 1.5)],
    *[(d, True, TypeError) for d in standard(FLOATING)],
    (xp.float32, 1j, xp.complex64), (xp.float64, 1j, xp.complex128),
    (xp.complex64, 1j, xp.complex64), (xp.complex128, 1j, xp.complex128),
]


@pytest.mark.strict
@pytest.mark.parametrize("dtype,scalar,expected", SCALAR_CASES,
                         ids=[f"{d.name}-{type(s).__name__}" for d, s, _ in SCALAR_CASES])
def test_result_type_with_python_scalars(dtype, scalar, expected):
    if expected is TypeError:
        with pytest.raises(TypeError):
            xp.result_type(dtype, scalar)
    else:
        assert xp.result_type(dtype, scalar) is expected
        assert xp.result_type(scalar, xp.empty(1, dtype=dtype)) is expected


def test_result_type_with_several_scalars_and_dtypes():
    assert xp.result_type(xp.float32, 1, 2.5, 1j) is xp.complex64
    assert xp.result_type(xp.int8, 3, xp.int16, 7) is xp.int16
    assert xp.result_type(1.5, xp.float32, xp.float64) is xp.float64


@pytest.mark.strict
@pytest.mark.parametrize("args", [(), (1,), (1.0, 2), ("int8",), (np.int8,), (np.dtype("f8"),),
                                  (xp.int8, "float32"), ([1, 2],)])
def test_result_type_rejects_what_is_not_a_dtype_or_array(args):
    with pytest.raises(TypeError):
        xp.result_type(*args)


@pytest.mark.strict
@pytest.mark.parametrize("to", ["int16", np.int16, None, 3])
def test_can_cast_rejects_non_dtypes(to):
    with pytest.raises(TypeError):
        xp.can_cast(xp.int8, to)
    with pytest.raises(TypeError):
        xp.can_cast(to, xp.int8)


# -- finfo, iinfo ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATING, ids=ids(FLOATING))
def test_finfo(dtype):
    real = {xp.complex64: xp.float32, xp.complex128: xp.float64}.get(dtype, dtype)
    expected = np.finfo(np_dtype(real))
    for info in (xp.finfo(dtype), xp.finfo(xp.empty(2, dtype=dtype))):
        assert type(info.bits) is int and info.bits == expected.bits
        for name in ("eps", "max", "min", "smallest_normal"):
            value = getattr(info, name)
            assert type(value) is float and value == float(getattr(expected, name)), name
        assert info.dtype is real


@pytest.mark.parametrize("dtype", INTEGER, ids=ids(INTEGER))
def test_iinfo(dtype):
    expected = np.iinfo(np_dtype(dtype))
    for info in (xp.iinfo(dtype), xp.iinfo(xp.empty(2, dtype=dtype))):
        for name in ("bits", "max", "min"):
            value = getattr(info, name)
            assert type(value) is int and value == int(getattr(expected, name)), name
        assert info.dtype is dtype


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_finfo_and_iinfo_reject_other_kinds(dtype):
    if dtype not in FLOATING:
        with pytest.raises(TypeError):
            xp.finfo(dtype)
    if dtype not in INTEGER:
        with pytest.raises(TypeError):
            xp.iinfo(dtype)


@pytest.mark.strict
@pytest.mark.parametrize("value", ["float32", np.float32, 1.0, None])
def test_finfo_and_iinfo_reject_non_dtypes(value):
    with pytest.raises(TypeError):
        xp.finfo(value)
    with pytest.raises(TypeError):
        xp.iinfo(value)


# -- isdtype ---------------------------------------------------------------------------------------

KINDS = {
    "bool": (xp.bool,), "signed integer": SIGNED, "unsigned integer": UNSIGNED,
    "integral": INTEGER, "real floating": REAL_FLOATING, "complex floating": COMPLEX_FLOATING,
    "numeric": INTEGER + FLOATING,
}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_isdtype_kinds(dtype, kind):
    assert xp.isdtype(dtype, kind) is (dtype in KINDS[kind])


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_isdtype_with_dtypes_and_tuples(dtype):
    for other in DTYPES:
        assert xp.isdtype(dtype, other) is (dtype is other)
    assert xp.isdtype(dtype, ()) is False
    assert xp.isdtype(dtype, ("bool", "numeric")) is True
    assert xp.isdtype(dtype, (xp.int8, "real floating")) is \
        (dtype is xp.int8 or dtype in REAL_FLOATING)


@pytest.mark.strict
@pytest.mark.parametrize("dtype,kind,error", [
    (xp.int8, "floating", ValueError), (xp.int8, "integer", ValueError),
    (xp.int8, ("bool", "Integral"), ValueError), (xp.int8, 3, TypeError),
    (xp.int8, np.int8, TypeError), ("int8", "integral", TypeError),
    (np.dtype("int8"), "integral", TypeError), (xp.empty(1), "numeric", TypeError),
])
def test_isdtype_rejects_bad_arguments(dtype, kind, error):
    with pytest.raises(error):
        xp.isdtype(dtype, kind)


# -- dtype objects ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_dtype_objects(dtype):
    assert dtype == dtype and hash(dtype) == hash(dtype)
    assert all(dtype != other for other in DTYPES if other is not dtype)
    assert dtype == dtype.name and dtype == dtype.numpy.str  # numpy mode: numpy's comparison
    assert dtype != "not a dtype, f8" and dtype != ""  # (no dtype's name: not equal, as numpy)
    with xp.set_strict(True):
        assert dtype != dtype.name  # strict mode: a name is not a dtype
    assert dtype == np_dtype(dtype) and np.dtype(dtype) == np_dtype(dtype)  # numpy reads .dtype
    assert pickle.loads(pickle.dumps(dtype)) is dtype
    assert dtype.name in repr(dtype)
    assert getattr(xp, dtype.name) is dtype


# -- astype ----------------------------------------------------------------------------------------


def _castable_sample(source: xp.DType, target: xp.DType) -> np.ndarray:
    """Values of `source` whose cast to `target` the spec defines: no NaN, infinity or
    out-of-range values going from floating to integer."""
    data = sample((4, 6), source)
    if source in FLOATING and target in INTEGER:
        low = 0 if target in UNSIGNED else -100
        real = np.nan_to_num(data.real if source in COMPLEX_FLOATING else data)
        data = np.clip(real, low, 100).astype(np_dtype(source))
    return data


CASTS = [(a, b) for a, b in PAIRS if not (a in COMPLEX_FLOATING and b in INTEGER + REAL_FLOATING)]


@pytest.mark.parametrize("source,target", CASTS, ids=[f"{a.name}-{b.name}" for a, b in CASTS])
def test_astype_matches_numpy(source, target):
    data = _castable_sample(source, target)
    with np.errstate(all="ignore"):
        expected = data.astype(np_dtype(target))
    assert_matches(xp.astype(xp.asarray(data), target), expected)


@pytest.mark.parametrize("source", COMPLEX_FLOATING, ids=ids(COMPLEX_FLOATING))
@pytest.mark.parametrize("target", INTEGER + REAL_FLOATING, ids=ids(INTEGER + REAL_FLOATING))
def test_astype_refuses_complex_to_real(source, target):
    x = xp.asarray([1 + 2j], dtype=source)
    with pytest.raises(TypeError):
        xp.astype(x, target)
    assert_matches(x, np.array([1 + 2j], dtype=np_dtype(source)))


def test_astype_bool_special_cases():
    values = xp.asarray([0.0, -0.0, np.nan, np.inf, 1e-300])
    assert_matches(xp.astype(values, xp.bool), np.array([False, False, True, True, True]))
    numbers = xp.asarray([0j, complex(-0.0, 0.0), complex(0.0, 1.0), complex(np.nan, 0.0)])
    assert_matches(xp.astype(numbers, xp.bool), np.array([False, False, True, True]))
    flags = xp.asarray([True, False])
    assert_matches(xp.astype(flags, xp.complex64), np.array([1 + 0j, 0j], dtype=np.complex64))
    assert_matches(xp.astype(flags, xp.uint16), np.array([1, 0], dtype=np.uint16))


@pytest.mark.parametrize("kind", list(VIEWS))
def test_astype_copy_semantics(kind):
    x, data = view_pair(kind, (4, 6), xp.int32)
    same = xp.astype(x, xp.int32, copy=False)
    assert same is x
    copied = xp.astype(x, xp.int32)
    assert copied.buffer is not x.buffer
    assert_matches(copied, data)
    copied[0, 0] = 12345
    assert_matches(x, data)
    cast = xp.astype(x, xp.int64, copy=False)  # a new dtype always needs a new array
    assert cast.buffer is not x.buffer
    assert_matches(cast, data.astype(np.int64))


def test_astype_device(device):
    x = xp.arange(3)
    assert xp.astype(x, xp.int64, copy=False, device=str(device)) is x
    moved = xp.astype(x, xp.float32, device=xp.Device("cpu"))
    assert moved.device == xp.Device("cpu")
    assert_matches(moved, np.arange(3, dtype=np.float32))
    with pytest.raises(ValueError):
        xp.astype(x, xp.float32, device="nowhere")


@pytest.mark.strict
@pytest.mark.parametrize("args,error", [
    ((np.arange(3), xp.float32), TypeError), ((xp.arange(3), "float32"), TypeError),
    ((xp.arange(3), np.float32), TypeError), (([1, 2], xp.int8), TypeError),
])
def test_astype_rejects_bad_arguments(args, error):
    with pytest.raises(error):
        xp.astype(*args)
