"""Creation functions (spec: "Creation Functions") against numpy, with the standard's dtype
inference and `copy` semantics."""

from __future__ import annotations

import array
import gc
import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hxarray as xp
from hxarray.backends.cpu import fused

from .oracle import (
    COMPLEX_FLOATING,
    CPU_ONLY,
    DTYPES,
    INTEGER,
    NUMERIC,
    ON_EACH_DEVICE,
    SEQUENCE,
    VIEWS,
    assert_matches,
    ids,
    np_dtype,
    sample,
    thread_thresholds,
    view_pair,
)

pytestmark = ON_EACH_DEVICE


def shares_memory(x: xp.Array, data: np.ndarray) -> bool:
    return np.shares_memory(np.asarray(x), data)


# -- asarray ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(VIEWS))
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_asarray_from_numpy(kind, dtype):
    data = VIEWS[kind](sample((4, 5), dtype))
    x = xp.asarray(data, copy=True)
    assert_matches(x, data)
    assert not shares_memory(x, data)  # copy=True: into device memory (copy=None shares it)


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_asarray_from_0d_numpy_and_numpy_scalars(dtype):
    value = sample((1,), dtype)[0]
    assert_matches(xp.asarray(np.asarray(value)), np.asarray(value))
    assert_matches(xp.asarray(value), np.asarray(value))


@pytest.mark.parametrize("obj,expected", [
    (True, np.asarray(True)),
    (0, np.asarray(0, dtype=np.int64)),
    (-2.5, np.asarray(-2.5)),
    (-0.0, np.asarray(-0.0)),
    (math.nan, np.asarray(math.nan)),
    (1 - 2j, np.asarray(1 - 2j)),
    ([True, False], np.array([True, False])),
    ([True, 2], np.array([1, 2], dtype=np.int64)),  # bool and int mix to the default integer
    ([1, 2.5], np.array([1.0, 2.5])),
    ([1.5, 2j], np.array([1.5, 2j])),  # complex wins over float
    ([[1, 2], [3, 4]], np.array([[1, 2], [3, 4]], dtype=np.int64)),
    ([(1, 2), (3, 4)], np.array([[1, 2], [3, 4]], dtype=np.int64)),
    ([], np.array([], dtype=np.float64)),
    ([[], []], np.zeros((2, 0))),
    (range(4), np.arange(4)),
    ([2**63 - 1, -(2**63)], np.array([2**63 - 1, -(2**63)], dtype=np.int64)),
])
def test_asarray_infers_dtypes_from_python_data(obj, expected):
    assert_matches(xp.asarray(obj), expected)


def test_asarray_keeps_numpy_uint64_scalars():
    assert_matches(xp.asarray([np.uint64(2**63)]), np.array([2**63], dtype=np.uint64))
    assert_matches(xp.asarray([2**63], dtype=xp.uint64), np.array([2**63], dtype=np.uint64))


def test_asarray_of_a_sequence_of_arrays():
    rows = [xp.asarray([1.0, 2.0]), xp.asarray([3.0, 4.0])]
    assert_matches(xp.asarray(rows), np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert_matches(xp.asarray([xp.asarray(1), 2]), np.array([1, 2]))


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_asarray_with_dtype(dtype):
    assert_matches(xp.asarray([0, 1], dtype=dtype), np.array([0, 1], dtype=np_dtype(dtype)))
    assert_matches(xp.asarray(True, dtype=dtype), np.asarray(True, dtype=np_dtype(dtype)))


@pytest.mark.parametrize("obj", [np.array([1 + 2j]), np.complex64(1j), xp.asarray([1j]), [1j]],
                         ids=["numpy", "numpy-scalar", "hxarray", "list"])
@pytest.mark.parametrize("dtype", [xp.float32, xp.float64, xp.int64], ids=str)
def test_asarray_refuses_complex_to_real(obj, dtype):
    with pytest.raises(TypeError):
        xp.asarray(obj, dtype=dtype)


def test_asarray_complex_to_bool_and_complex():
    assert_matches(xp.asarray(np.array([0j, 1j]), dtype=xp.bool), np.array([False, True]))
    assert_matches(xp.asarray(xp.asarray([0j, 2.0]), dtype=xp.bool), np.array([False, True]))
    assert_matches(xp.asarray(np.array([1j]), dtype=xp.complex64), np.array([1j], np.complex64))


@pytest.mark.parametrize("obj,dtype", [(-1, xp.uint8), (256, xp.uint8), (2**64, None),
                                       ([2**63], None), ([[1], [2**64]], None),
                                       (-(2**63) - 1, None)])
def test_asarray_ints_out_of_range_overflow(obj, dtype):
    with pytest.raises(OverflowError):
        xp.asarray(obj, dtype=dtype)


def test_asarray_from_buffers():
    assert_matches(xp.asarray(b"\x00\x01\xff"), np.array([0, 1, 255], dtype=np.uint8))
    assert_matches(xp.asarray(bytearray(b"ab")), np.array([97, 98], dtype=np.uint8))
    assert_matches(xp.asarray(b"ab", dtype=xp.float32), np.array([97, 98], dtype=np.float32))
    assert_matches(xp.asarray(array.array("d", [1.5, -2.0])), np.array([1.5, -2.0]))
    ints = array.array("i", [1, 2, 3])
    assert_matches(xp.asarray(memoryview(ints)), np.array([1, 2, 3], dtype=np.int32))
    matrix = memoryview(np.arange(6, dtype=np.uint16).reshape(2, 3))
    assert_matches(xp.asarray(matrix), np.arange(6, dtype=np.uint16).reshape(2, 3))


def test_asarray_converts_numpy_dtypes_without_equivalent():
    assert_matches(xp.asarray(np.arange(3, dtype=">i4")), np.arange(3, dtype=np.int32))
    half = np.array([0.5, -1.0, np.inf], dtype=np.float16)
    assert_matches(xp.asarray(half), half)  # float16 stays float16 (numpy mode's dtype)
    assert_matches(xp.asarray(half.astype(">f2")), half)


@pytest.mark.parametrize("dtype", [np.longdouble, np.clongdouble, "U2", "M8[s]"],
                         ids=["longdouble", "clongdouble", "str", "datetime64"])
def test_asarray_of_a_dtype_hxarray_lacks_is_an_error_naming_it(dtype):
    """Never a silent change of dtype: the error names the numpy dtype (longdouble is float64
    itself on some platforms, where it converts as float64)."""
    data = np.zeros(3, dtype)
    if data.dtype in (np.float64, np.complex128):
        assert xp.asarray(data).dtype.name == data.dtype.name
        return
    named = re.escape(str(data.dtype))
    for make in (lambda: xp.asarray(data), lambda: xp.asarray(data, copy=True),
                 lambda: xp.asarray(data[::2], device=xp.Device("cpu"))):
        with pytest.raises(TypeError, match=named):
            make()
    with pytest.raises(TypeError, match=f"numpy dtype {named} has no hxarray equivalent"):
        xp.zeros(3, dtype=data.dtype)


@pytest.mark.parametrize("obj,error", [
    ("abc", TypeError), (None, TypeError), ({1: 2}, TypeError), (object(), TypeError),
    (np.array(["a"]), TypeError), (np.array([1], dtype=object), TypeError),
    (np.zeros(2, dtype=np.longdouble), TypeError), ([[1, 2], [3]], ValueError),
])
def test_asarray_rejects_what_has_no_array_form(obj, error):
    with pytest.raises(error):
        xp.asarray(obj)


@pytest.mark.strict
@pytest.mark.parametrize("kwargs,error", [
    ({"dtype": "float32"}, TypeError), ({"dtype": np.float32}, TypeError),
    ({"copy": "yes"}, TypeError), ({"device": "gpu"}, ValueError), ({"device": 0}, TypeError),
])
def test_asarray_rejects_bad_arguments(kwargs, error):
    with pytest.raises(error):
        xp.asarray([1.0], **kwargs)


@pytest.mark.parametrize("device", [None, "cpu", xp.Device("cpu")])
def test_asarray_device(device):
    assert xp.asarray([1], device=device).device == xp.Device("cpu")


class TestAsarrayCopy:
    """`copy` (spec: "Copy keyword argument"): True always copies, False never does (ValueError
    if it must), None copies only if it must."""

    def test_array_input(self):
        x = xp.arange(4.0)
        assert xp.asarray(x) is x and xp.asarray(x, copy=False) is x
        assert xp.asarray(x, dtype=xp.float64, copy=False) is x
        copied = xp.asarray(x, copy=True)
        assert copied.buffer is not x.buffer
        copied[0] = 5.0
        assert float(x[0]) == 0.0
        cast = xp.asarray(x, dtype=xp.float32)
        assert_matches(cast, np.arange(4.0, dtype=np.float32))
        with pytest.raises(ValueError):
            xp.asarray(x, dtype=xp.float32, copy=False)

    def test_array_view_input_copies_only_the_view(self):
        x, expected = view_pair("flip", (3, 4), xp.int16)
        assert_matches(xp.asarray(x, copy=True), expected)

    @CPU_ONLY
    @pytest.mark.parametrize("kind", list(VIEWS))
    def test_numpy_input_shared_with_copy_false(self, device, kind):
        base = sample((4, 6), xp.float64)
        data = VIEWS[kind](base)
        x = xp.asarray(data, copy=False)
        assert_matches(x, data)
        assert shares_memory(x, data)
        x[0, 0] = 1234.0
        assert data[0, 0] == 1234.0
        data[1, 1] = -1234.0
        assert float(x[1, 1]) == -1234.0

    @CPU_ONLY
    def test_shared_numpy_memory_stays_alive(self, device):
        data = np.arange(5)
        x = xp.asarray(data, copy=False)
        del data
        gc.collect()
        assert_matches(x, np.arange(5))

    def test_numpy_input_copied_with_copy_true(self):
        data = np.arange(3.0)
        x = xp.asarray(data, copy=True)
        x[0] = 9.0
        assert data[0] == 0.0

    @CPU_ONLY
    def test_writable_buffers_shared_with_copy_false(self, device):
        raw = bytearray(b"abc")
        x = xp.asarray(raw, copy=False)
        x[0] = 65
        assert raw == bytearray(b"Abc")
        values = array.array("d", [1.0, 2.0])
        xp.asarray(values, copy=False)[1] = 5.0
        assert values[1] == 5.0

    @pytest.mark.parametrize("obj", [
        [1, 2], 1.5, (1, 2), b"abc", np.float64(1.0), np.arange(3, dtype=">i4"),
        np.broadcast_to(np.arange(3), (2, 3)),
    ], ids=["list", "float", "tuple", "bytes", "numpy-scalar", "byteswapped", "read-only"])
    def test_copy_false_refuses_what_needs_a_copy(self, obj):
        before = np.array(obj, copy=True) if not isinstance(obj, bytes) else obj
        with pytest.raises(ValueError):
            xp.asarray(obj, copy=False)
        if isinstance(obj, np.ndarray):
            np.testing.assert_array_equal(obj, before)

    @CPU_ONLY
    def test_copy_false_refuses_a_dtype_change(self, device):
        with pytest.raises(ValueError):
            xp.asarray(np.arange(3), dtype=xp.float32, copy=False)
        x = xp.asarray(np.arange(3), dtype=xp.int64, copy=False)
        assert_matches(x, np.arange(3))


class TestOtherDevices:
    """Creation on a second device, and `asarray`/`*_like`/`from_dlpack` moving arrays there."""

    @pytest.mark.parametrize("function,args", [
        (xp.zeros, ((2, 3),)), (xp.ones, (3,)), (xp.empty, ((0, 2),)), (xp.full, (2, 1.5)),
        (xp.arange, (5,)), (xp.linspace, (0, 1, 4)), (xp.eye, (3,)), (xp.asarray, ([1, 2],)),
    ])
    def test_creation_on_the_device(self, other_device, function, args):
        x = function(*args, device=other_device)
        assert x.device == other_device
        if function is not xp.empty:
            cpu = function(*args)
            assert_matches(x, np.asarray(cpu))

    def test_asarray_moves_arrays(self, other_device):
        x, data = view_pair("flip", (3, 4), xp.int8)
        moved = xp.asarray(x, device=other_device)
        assert moved.device == other_device
        assert_matches(moved, data)
        back = xp.asarray(moved, dtype=xp.float32, device=x.device)
        assert back.device == x.device
        assert_matches(back, data.astype(np.float32))
        with pytest.raises(ValueError):
            xp.asarray(x, device=other_device, copy=False)

    def test_like_functions_and_from_dlpack(self, other_device):
        x = xp.ones((2, 3), dtype=xp.int16)
        other = other_device
        for result in (xp.zeros_like(x, device=other), xp.ones_like(x, device=other),
                       xp.empty_like(x, device=other), xp.full_like(x, 4, device=other)):
            assert result.device == other and result.shape == (2, 3) and result.dtype is xp.int16
        moved = xp.full_like(x, 4, device=other)
        assert xp.ones_like(moved).device == other  # the device follows x by default
        assert xp.from_dlpack(np.arange(3), device=other).device == other

    def test_host_memory_is_shared_only_where_the_device_can_use_it(self, other_device):
        data = np.arange(3)
        shares = other_device.backend.adopt(data) is not None
        for share in (xp.asarray, xp.from_dlpack):
            if shares:
                assert share(data, device=other_device, copy=False).device == other_device
            else:
                with pytest.raises(ValueError):
                    share(data, device=other_device, copy=False)

    def test_meshgrid_needs_one_device(self, other_device):
        with pytest.raises(ValueError):
            xp.meshgrid(xp.arange(2), xp.arange(2, device=other_device))


# -- empty, zeros, ones, full ----------------------------------------------------------------------


@pytest.mark.parametrize("shape,expected", [
    (3, (3,)), ((), ()), ((0,), (0,)), ((2, 0, 3), (2, 0, 3)), ([2, 3], (2, 3)),
    (np.int64(2), (2,)), ((np.int32(2), 1), (2, 1)), (xp.asarray(2), (2,)),
])
@pytest.mark.parametrize("function", [xp.empty, xp.zeros, xp.ones])
def test_shapes(function, shape, expected):
    x = function(shape)
    assert x.shape == expected and x.dtype is xp.float64


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_zeros_ones_empty(dtype):
    npd = np_dtype(dtype)
    assert_matches(xp.zeros((2, 3), dtype=dtype), np.zeros((2, 3), dtype=npd))
    assert_matches(xp.ones((2, 3), dtype=dtype), np.ones((2, 3), dtype=npd))
    x = xp.empty((2, 3), dtype=dtype)
    assert x.dtype is dtype and x.shape == (2, 3)


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_zeros_overwrite_reused_memory(dtype):
    """zeros clears memory the allocator hands out again (it is written, not assumed zero)."""
    npd = np_dtype(dtype)
    for shape in [(0,), (7,), (300, 301)]:
        dirty = xp.full(shape, 1, dtype=dtype)
        del dirty
        assert_matches(xp.zeros(shape, dtype=dtype), np.zeros(shape, dtype=npd))
    assert_matches(xp.full((3,), -0.0), np.full((3,), -0.0))
    assert_matches(xp.full((3,), 0.0, dtype=xp.float32), np.zeros(3, dtype=np.float32))


@pytest.mark.parametrize("shape,error", [
    (-1, ValueError), ((2, -1), ValueError), (2.0, TypeError), ((2.0,), TypeError),
    (True, TypeError), ((True, 2), TypeError), (None, TypeError), ("3", TypeError),
])
@pytest.mark.parametrize("function", [xp.empty, xp.zeros, xp.ones,
                                      lambda shape: xp.full(shape, 1)])
def test_bad_shapes(function, shape, error):
    with pytest.raises(error):
        function(shape)


@pytest.mark.parametrize("fill,expected", [
    (True, np.full(3, True)), (False, np.full(3, False)), (7, np.full(3, 7, dtype=np.int64)),
    (-(2**63), np.full(3, -(2**63), dtype=np.int64)), (2.5, np.full(3, 2.5)),
    (-0.0, np.full(3, -0.0)), (math.nan, np.full(3, math.nan)), (-math.inf, np.full(3, -math.inf)),
    (1 - 1j, np.full(3, 1 - 1j)), (xp.asarray(2.5, dtype=xp.float32), np.full(3, 2.5)),
])
def test_full_infers_the_dtype_from_the_fill_value(fill, expected):
    assert_matches(xp.full(3, fill), expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_full_with_dtype(dtype):
    fill = {xp.bool: True}.get(dtype, 1j if dtype in COMPLEX_FLOATING else 3)
    assert_matches(xp.full((2, 2), fill, dtype=dtype), np.full((2, 2), fill, dtype=np_dtype(dtype)))


@pytest.mark.parametrize("dtype", INTEGER, ids=ids(INTEGER))
def test_full_at_integer_bounds(dtype):
    info = np.iinfo(np_dtype(dtype))
    for value in (int(info.min), int(info.max)):
        assert_matches(xp.full(2, value, dtype=dtype), np.full(2, value, dtype=np_dtype(dtype)))
    for value in (int(info.min) - 1, int(info.max) + 1):
        with pytest.raises(OverflowError):
            xp.full(2, value, dtype=dtype)


@pytest.mark.parametrize("fill,dtype,error", [
    (1j, xp.float64, TypeError), (1j, xp.int64, TypeError), ("a", None, TypeError),
    (None, None, TypeError), ([1], None, TypeError), (xp.asarray([1.0]), None, ValueError),
    (2**63, None, OverflowError),
])
def test_full_rejects_bad_fill_values(fill, dtype, error):
    with pytest.raises(error):
        xp.full(2, fill, dtype=dtype)


# -- *_like ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(VIEWS))
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_like_functions_follow_x(kind, dtype):
    x, data = view_pair(kind, (3, 4), dtype)
    npd = np_dtype(dtype)
    assert_matches(xp.zeros_like(x), np.zeros_like(data))
    assert_matches(xp.ones_like(x), np.ones_like(data))
    fill = {xp.bool: True}.get(dtype, 2j if dtype in COMPLEX_FLOATING else 2)
    assert_matches(xp.full_like(x, fill), np.full(data.shape, fill, dtype=npd))
    empty = xp.empty_like(x)
    assert empty.shape == data.shape and empty.dtype is dtype and empty.buffer is not x.buffer


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_like_functions_with_dtype_and_device(dtype):
    x = xp.ones((0, 2), dtype=xp.int8)
    npd = np_dtype(dtype)
    assert_matches(xp.zeros_like(x, dtype=dtype, device="cpu"), np.zeros((0, 2), dtype=npd))
    assert_matches(xp.ones_like(xp.asarray(1.0), dtype=dtype), np.ones((), dtype=npd))
    assert xp.empty_like(x, dtype=dtype).dtype is dtype
    assert_matches(xp.full_like(x, 1, dtype=dtype), np.full((0, 2), 1, dtype=npd))


@pytest.mark.strict
def test_like_functions_reject_bad_inputs():
    for function in (xp.zeros_like, xp.ones_like, xp.empty_like):
        with pytest.raises(TypeError):
            function(np.ones(2))
        with pytest.raises(TypeError):
            function(xp.ones(2), dtype="float32")
    with pytest.raises(TypeError):
        xp.full_like(xp.ones(2), 1j)
    with pytest.raises(ValueError):
        xp.full_like(xp.ones(2), 1, device="nowhere")


# -- arange, linspace ------------------------------------------------------------------------------


@given(start=st.integers(-30, 30), stop=st.integers(-30, 30),
       step=st.integers(-7, 7).filter(bool))
def test_arange_ints(start, stop, step):
    assert_matches(xp.arange(start, stop, step), np.arange(start, stop, step))


@pytest.mark.parametrize("args", [
    (4096,), (4097,), (8193,), (100_003,), (-5, 20_000, 3), (20_000, -5, -3),
    (2**61, 2**61 + 9000), (-2**62 + 5, -2**62 + 9000), (-2**61, 2**61, 2**49),
    (2**63 - 10, 2**63 - 1), (-2**63, -2**63 + 5000), (0, 1, 2**62), (5, 5), (9, 3),
])
def test_arange_ints_of_every_length_and_range(args):
    """Long integer ranges, filled in blocks of doubling length, and ranges near int64's ends."""
    assert_matches(xp.arange(*args), np.arange(*args))


@given(stop=st.integers(-5, 30) | st.floats(-5, 30)
       | st.floats(16380, 16390))  # around the compiled arange's bound, 16,384
def test_arange_with_stop_only(stop):
    assert_matches(xp.arange(stop), np.arange(stop))


@pytest.mark.parametrize("stop, step", [(3, 3), (5, 2), (3, -1), (1, 1.0), (4, 0.5), (3, True)])
def test_arange_with_stop_and_a_step_keyword(stop, step):
    """`arange(n)`'s common case is taken only with the default step."""
    assert_matches(xp.arange(stop, step=step), np.arange(stop, step=step))


@given(start=st.floats(-100, 100), stop=st.floats(-100, 100),
       step=st.floats(0.25, 10) | st.floats(-10, -0.25))
def test_arange_floats(start, stop, step):
    result = xp.arange(start, stop, step)
    expected = np.arange(start, stop, step)
    assert_matches(result, expected)
    assert result.shape[0] == max(0, math.ceil((stop - start) / step))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("start, step", [(0.0, 1.0), (-3.7, 0.1), (1e10, -2.5e-3), (0.5, 3)])
@pytest.mark.parametrize("size", [2, 3, 4097, 16_385, 100_003])
def test_arange_floats_are_numpys_bit_for_bit(dtype, start, step, size):
    """numpy's arange below 2**14 elements; from there filled in place (a compiled loop, or
    blocked numpy passes), threads included."""
    stop = start + size * step
    expected = np.arange(start, stop, step, dtype=dtype)
    for threads in (1, 2):
        with xp.threads(threads), thread_thresholds(1000):
            result = np.asarray(xp.arange(start, stop, step, dtype=getattr(xp, dtype)))
        assert result.tobytes() == expected.tobytes()


@pytest.mark.parametrize("dtype, top", [("float32", 2**24), ("float64", 2**53)])
def test_compiled_arange_loop_is_exact_up_to_its_bound(dtype, top):
    """The compiled fill's indices (a block's first one converted, plus exact offsets) up to the
    last index whose conversion is exact: first + i * delta as numpy computes it, bit for bit."""
    loop = fused.arange_loop(np.dtype(dtype))
    if loop is None:
        pytest.skip("no C++ compiler: arange fills with numpy passes")
    kind = np.dtype(dtype).type
    first, delta = kind(-3.7), kind(0.1)
    for begin in (0, 5, top - 37):
        out = np.empty(37, dtype)  # the fill of indices [begin, begin + 37), shifted into `out`
        loop(out.ctypes.data - begin * out.itemsize, begin, begin + 37, float(first),
             float(delta))
        indices = np.arange(begin, begin + 37, dtype=np.int64).astype(dtype)
        assert out.tobytes() == (first + indices * delta).astype(dtype).tobytes()


@pytest.mark.parametrize("args,kwargs,expected", [
    ((5,), {}, np.arange(5)),
    ((5.0,), {}, np.arange(5.0)),
    ((1, 5, 2.0), {}, np.arange(1.0, 5.0, 2.0)),
    ((np.int64(3),), {}, np.arange(3)),
    ((5,), {"dtype": xp.float32}, np.arange(5, dtype=np.float32)),
    ((5,), {"dtype": xp.uint8}, np.arange(5, dtype=np.uint8)),
    ((0, 1, 0.25), {"dtype": xp.float32}, np.arange(0, 1, 0.25, dtype=np.float32)),
    ((5, 1), {}, np.arange(5, 1)),
    ((5, 1, -1), {}, np.arange(5, 1, -1)),
    ((0,), {}, np.arange(0)),
])
def test_arange_dtypes(args, kwargs, expected):
    assert_matches(xp.arange(*args, **kwargs), expected)


@pytest.mark.parametrize("args,error", [((1, 5, 0), ValueError), ((1j,), TypeError),
                                        (("3",), TypeError), ((0, None, None), TypeError)])
def test_arange_rejects_bad_arguments(args, error):
    with pytest.raises(error):
        xp.arange(*args)


@pytest.mark.parametrize("endpoint", [True, False])
@pytest.mark.parametrize("num", [0, 1, 2, 7])
@pytest.mark.parametrize("start,stop", [(0, 1), (-3.5, 10), (5, 5), (2, -2), (0, 1j),
                                        (1 + 1j, -2 - 3j)])
def test_linspace(start, stop, num, endpoint):
    expected = np.linspace(start, stop, num, endpoint=endpoint)
    assert_matches(xp.linspace(start, stop, num, endpoint=endpoint), expected)


@pytest.mark.parametrize("dtype", [xp.float32, xp.complex64, xp.complex128], ids=str)
def test_linspace_with_dtype(dtype):
    expected = np.linspace(0, 1, 5, dtype=np_dtype(dtype))
    assert_matches(xp.linspace(0, 1, 5, dtype=dtype), expected)


def test_linspace_endpoint_changes_the_step():
    assert_matches(xp.linspace(0, 1, 4, endpoint=False), np.array([0.0, 0.25, 0.5, 0.75]))
    assert_matches(xp.linspace(0, 1, 5), np.array([0.0, 0.25, 0.5, 0.75, 1.0]))


@pytest.mark.parametrize("args,kwargs,error", [
    ((0, 1, -1), {}, ValueError), ((0, 1, 2.0), {}, TypeError), ((0, 1, True), {}, TypeError),
    ((0, 1j, 3), {"dtype": xp.float64}, TypeError), (("a", 1, 3), {}, TypeError),
])
def test_linspace_rejects_bad_arguments(args, kwargs, error):
    with pytest.raises(error):
        xp.linspace(*args, **kwargs)


# -- eye, meshgrid, tril, triu ---------------------------------------------------------------------


@pytest.mark.parametrize("n_rows,n_cols", [(0, None), (1, None), (3, None), (2, 5), (5, 2),
                                           (3, 0)])
@pytest.mark.parametrize("k", [-6, -2, -1, 0, 1, 2, 6])
def test_eye(n_rows, n_cols, k):
    assert_matches(xp.eye(n_rows, n_cols, k=k), np.eye(n_rows, n_cols, k=k))


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_eye_dtypes(dtype):
    assert_matches(xp.eye(3, 4, k=1, dtype=dtype), np.eye(3, 4, k=1, dtype=np_dtype(dtype)))


@pytest.mark.strict
@pytest.mark.parametrize("args,kwargs,error", [
    ((-1,), {}, ValueError), ((2.0,), {}, TypeError), ((2, 2.5), {}, TypeError),
    ((2,), {"k": 1.0}, TypeError), ((2,), {"dtype": "int8"}, TypeError),
])
def test_eye_rejects_bad_arguments(args, kwargs, error):
    with pytest.raises(error):
        xp.eye(*args, **kwargs)


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sizes", [(), (3,), (0,), (2, 3), (3, 1, 4), (2, 0, 3), (1, 2, 3, 2)])
@pytest.mark.parametrize("dtype", NUMERIC, ids=ids(NUMERIC))
def test_meshgrid(sizes, indexing, dtype):
    data = [sample((n,), dtype, seed=i) for i, n in enumerate(sizes)]
    result = xp.meshgrid(*(xp.asarray(d) for d in data), indexing=indexing)
    expected = np.meshgrid(*data, indexing=indexing)
    assert type(result) is SEQUENCE and len(result) == len(expected)
    for r, e in zip(result, expected):
        assert_matches(r, e)


def test_meshgrid_of_views_and_independent_outputs():
    base = xp.arange(10)
    a, b = xp.meshgrid(base[::3], base[::-2])
    assert_matches(a, np.meshgrid(np.arange(10)[::3], np.arange(10)[::-2])[0])
    a[0, 0] = 100
    assert int(b[0, 0]) == 9 and int(base[0]) == 0


@pytest.mark.parametrize("arrays,kwargs,error", [
    ((xp.arange(2), xp.arange(2.0)), {}, TypeError),
    ((xp.zeros((2, 2)),), {}, ValueError),
    ((xp.asarray(1),), {}, ValueError),
    ((xp.arange(2),), {"indexing": "yx"}, ValueError),
    (([1, 2],), {}, TypeError),
])
def test_meshgrid_rejects_bad_arguments(arrays, kwargs, error):
    with pytest.raises(error):
        xp.meshgrid(*arrays, **kwargs)


@pytest.mark.parametrize("kind", list(VIEWS))
@pytest.mark.parametrize("k", [-5, -1, 0, 2, 5])
@pytest.mark.parametrize("name", ["tril", "triu"])
def test_triangles(name, k, kind):
    x, data = view_pair(kind, (5, 6), xp.float64)
    assert_matches(getattr(xp, name)(x, k=k), getattr(np, name)(data, k))


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
@pytest.mark.parametrize("shape", [(2, 3, 4), (0, 3, 3), (3, 0), (1, 1)])
def test_triangles_of_stacks_and_every_dtype(shape, dtype):
    data = sample(shape, dtype)
    x = xp.asarray(data)
    assert_matches(xp.tril(x, k=-1), np.tril(data, -1))
    assert_matches(xp.triu(x), np.triu(data))
    assert_matches(x, data)  # the input is untouched


@pytest.mark.parametrize("function", [xp.tril, xp.triu])
def test_triangles_reject_bad_arguments(function):
    with pytest.raises(ValueError):
        function(xp.ones(3))
    with pytest.raises(TypeError):
        function(xp.ones((3, 3)), k=0.5)
    with pytest.raises(TypeError):
        function(np.ones((3, 3)))


# -- from_dlpack -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(VIEWS))
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_from_dlpack_shares_numpy_memory(kind, dtype):
    data = VIEWS[kind](sample((4, 6), dtype))
    x = xp.from_dlpack(data)
    assert_matches(x, data)
    assert shares_memory(x, data)
    assert_matches(xp.from_dlpack(data, device="cpu", copy=False), data)


def test_from_dlpack_copy():
    data = np.arange(4.0)
    x = xp.from_dlpack(data, copy=True)
    x[0] = 100.0
    assert data[0] == 0.0


def test_from_dlpack_of_read_only_memory_copies_or_refuses():
    data = np.arange(3.0)
    data.flags.writeable = False
    x = xp.from_dlpack(data)
    x[0] = 7.0
    assert data[0] == 0.0
    with pytest.raises(ValueError):
        xp.from_dlpack(data, copy=False)


def test_from_dlpack_of_an_hxarray_array():
    x = xp.arange(3)
    assert_matches(xp.from_dlpack(x), np.arange(3))
    assert xp.from_dlpack(x, copy=True).buffer is not x.buffer


@CPU_ONLY
def test_from_dlpack_shares_float16(device):
    data = np.array([1.5, -0.0], dtype=np.float16)
    for x in (xp.from_dlpack(data), xp.from_dlpack(data, copy=False),
              xp.asarray(data, copy=False)):
        assert_matches(x, data)
        assert np.shares_memory(np.asarray(x), data)
    assert_matches(xp.from_dlpack(data, copy=True), data)
    back = np.from_dlpack(xp.from_dlpack(data))
    assert back.dtype == np.float16 and np.shares_memory(back, data)


@pytest.mark.strict
def test_strict_mode_refuses_float16_data():
    data = np.array([1.5, -0.0], dtype=np.float16)
    for make in (lambda: xp.asarray(data), lambda: xp.asarray(data, copy=True),
                 lambda: xp.from_dlpack(data), lambda: xp.asarray(data.tolist(), dtype=xp.float16),
                 lambda: xp.ones(2, dtype=xp.float16), lambda: xp.empty((2,), dtype=xp.float16),
                 lambda: xp.zeros_like(xp.ones(2), dtype=xp.float16),
                 lambda: xp.full(2, 1.0, dtype=xp.float16), lambda: xp.arange(3, dtype=xp.float16),
                 lambda: xp.astype(xp.ones(2), xp.float16), lambda: xp.finfo(xp.float16)):
        with pytest.raises(TypeError, match="float16 is numpy mode only"):
            make()
    assert "float16" not in xp.__array_namespace_info__().dtypes()


@pytest.mark.parametrize("obj", [[1, 2], 3.0, "abc"])
def test_from_dlpack_needs_the_protocol(obj):
    with pytest.raises(TypeError, match="__dlpack__"):
        xp.from_dlpack(obj)
