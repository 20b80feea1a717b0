"""Regression tests of issue 17's write paths: every write refuses a read-only array (a broadcast
view, or a view of one) with the ValueError of `b += 1` and leaves its bytes alone, and a write
whose value shares memory with its target gives the as-if-copied answer, on every device.
docs/reliability.md ("Writes") describes the rules; `python -m stress --parts writes` checks them
systematically."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hxarray as xp
from hxarray.backends.cuda.driver import ParamInfo
from hxarray.backends.cuda.raw import const_pointers, to_kernel_args
from hxarray.hal.device import DeviceType

from .conftest import DEVICES
from .oracle import CPU_ONLY, ON_EACH_DEVICE

pytestmark = ON_EACH_DEVICE


def _snapshot(x: xp.Array) -> bytes:
    """The bytes of x's whole buffer (the elements of every view of it)."""
    return np.asarray(xp.asarray(x, copy=True).to_device("cpu")).tobytes()


# -- 1. numpy's out=, ufunc.at and the functions that write into an argument ------------------
def _numpy_writes(b: xp.Array) -> dict[str, Callable[[], Any]]:
    """Calls that write into the read-only 2x3 float64 `b` (a broadcast of a 3-vector)."""
    ones = xp.ones((4, 3))
    index = xp.asarray([0, 1, 2])
    return {
        "add out=": lambda: np.add(b, 1, out=b),
        "add positional out": lambda: np.add(b, 1, b),
        "add out=(b,)": lambda: np.add(b, 1, out=(b,)),
        "negative": lambda: np.negative(b, out=b),
        "sin": lambda: np.sin(b, out=b),
        "maximum": lambda: np.maximum(b, 5.0, out=b),
        "add where=": lambda: np.add(b, 1, out=b, where=True),
        "sum out=b[0]": lambda: np.sum(ones, axis=0, out=b[0]),
        "sum positional out": lambda: np.sum(ones, 0, None, b[0]),
        "mean": lambda: np.mean(ones, axis=0, out=b[0]),
        "cumsum": lambda: np.cumsum(xp.ones(3), out=b[0]),
        "clip": lambda: np.clip(b, 0.0, 1.0, out=b),
        "clip positional out": lambda: np.clip(b, 0.0, 1.0, b),
        "take": lambda: np.take(xp.arange(3.0), index, out=b[0]),
        "round": lambda: np.round(b, out=b),
        "matmul": lambda: np.matmul(xp.ones((2, 2)), xp.ones((2, 3)), out=b),
        "dot": lambda: np.dot(xp.ones((2, 2)), xp.ones((2, 3)), out=b),
        "add.reduce": lambda: np.add.reduce(ones, axis=0, out=b[0]),
        "add.accumulate": lambda: np.add.accumulate(xp.ones((2, 3)), axis=0, out=b),
        "add.reduceat": lambda: np.add.reduceat(xp.ones((2, 3)), [0], axis=0, out=b[:1]),
        "add.outer": lambda: np.add.outer(xp.ones(2), xp.ones(3), out=b),
        "add.at": lambda: np.add.at(b, (0, 0), 1.0),
        "negative.at": lambda: np.negative.at(b, [0, 1]),
        "copyto": lambda: np.copyto(b, 5.0),
        "put": lambda: np.put(b, [0], 5.0),
        "place": lambda: np.place(b, np.ones((2, 3), bool), [5.0]),
        "putmask": lambda: np.putmask(b, np.ones((2, 3), bool), 5.0),
        "fill_diagonal": lambda: np.fill_diagonal(b, 5.0),
        "put_along_axis": lambda: np.put_along_axis(b, np.zeros((2, 1), np.intp), 5.0, 1),
        "ndarray method sum(out=)": lambda: ones.sum(axis=0, out=b[0]),
    }


@pytest.mark.parametrize("call", list(_numpy_writes(xp.broadcast_to(xp.ones(3), (2, 3)))))
def test_numpy_writes_refuse_read_only_targets(call: str) -> None:
    base = xp.asarray([0.0, 1.0, 2.0])
    b = xp.broadcast_to(base, (2, 3))
    before = _snapshot(base)
    with pytest.raises(ValueError, match="read-only") as refused:
        _numpy_writes(b)[call]()
    assert "numpy." in str(refused.value)  # the call is named, as for `b += 1`
    assert _snapshot(base) == before


def test_numpy_reads_of_read_only_arrays_still_work() -> None:
    base = xp.asarray([0.0, 1.0, 2.0])
    b = xp.broadcast_to(base, (2, 3))
    expected = np.broadcast_to(np.arange(3.0), (2, 3))
    out = xp.zeros((2, 3))
    np.testing.assert_array_equal(np.asarray(np.add(b, 1, out=out).to_device("cpu")),
                                  expected + 1)
    np.testing.assert_array_equal(np.asarray(np.sum(b, axis=0).to_device("cpu")),
                                  expected.sum(axis=0))
    np.testing.assert_array_equal(np.asarray(np.clip(b, 0.5, 1.5).to_device("cpu")),
                                  np.clip(expected, 0.5, 1.5))
    target = xp.zeros(3)
    np.add(b[0], b[1], out=target)  # a read-only input next to a writable out
    np.testing.assert_array_equal(np.asarray(target.to_device("cpu")), [0.0, 2.0, 4.0])


# -- 7. overlapping __setitem__ is as if the value had been copied first ----------------------
def _as_if_copied(values: np.ndarray, target: Any, source: Any) -> np.ndarray:
    expected = values.copy()
    expected[target] = values[source].copy()
    return expected


OVERLAPS = [  # (target key, value key) of the same 1-D array of 10
    (slice(None, None, 2), slice(None, 5)),  # the x[::2] = x[:5]
    (slice(1, None), slice(None, -1)),
    (slice(None, -1), slice(1, None)),
    (slice(None, None, -1), slice(None)),
    (slice(None, None, 2), slice(None, None, -2)),
    (slice(0, 7, 3), slice(1, 4)),  # strides where numpy's own copy misses the overlap
    (slice(1, 5), slice(0, 8, 2)),
    (slice(6, 1, -2), slice(4, 1, -1)),
    (slice(5, 1, -1), slice(7, None, -2)),
    (np.array([0, 2, 4, 6, 8]), slice(None, 5)),  # advanced target
    (np.array([True, False] * 5), slice(3, 8)),  # mask target
]


@pytest.mark.parametrize("target, source", OVERLAPS, ids=str)
def test_overlapping_setitem_is_as_if_copied(target: Any, source: Any) -> None:
    values = np.arange(10.0)
    x = xp.asarray(values, copy=True)
    key = xp.asarray(target) if isinstance(target, np.ndarray) else target
    x[key] = x[source]
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")),
                                  _as_if_copied(values, target, source))


def test_overlapping_setitem_in_two_dimensions() -> None:
    values = np.arange(16.0).reshape(4, 4)
    x = xp.asarray(values, copy=True)
    x[...] = x.mT
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), values.T)
    x = xp.asarray(values, copy=True)
    x[1:, :] = x[:-1, :]
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")),
                                  _as_if_copied(values, np.s_[1:, :], np.s_[:-1, :]))
    x = xp.asarray(values, copy=True)
    x[:, 0] = x[0]  # a row into a column: one element shared
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")),
                                  _as_if_copied(values, np.s_[:, 0], np.s_[0]))


def test_an_index_array_that_is_its_own_target() -> None:
    i = xp.asarray([1, 2, 0, 3])
    i[i] = xp.asarray([10, 20, 30, 40])  # numpy reads every index before writing
    expected = np.array([1, 2, 0, 3])
    expected[expected.copy()] = [10, 20, 30, 40]
    np.testing.assert_array_equal(np.asarray(i.to_device("cpu")), expected)


@given(data=st.data(), dtype=st.sampled_from(["float32", "int64", "complex128", "bool"]))
def test_overlapping_slices_property(data: st.DataObject, dtype: str) -> None:
    """x[target] = x[source] for slices of one array of the same length, in any direction."""
    n = 12
    target = data.draw(st.builds(slice, st.integers(0, n - 1), st.integers(1, n),
                                 st.sampled_from([1, 2, 3, -1, -2, -3])), "target")
    length = len(range(*target.indices(n)))
    step = data.draw(st.sampled_from([1, 2, 3, -1, -2, -3]), "source step")
    span = (length - 1) * abs(step)
    if length == 0 or span >= n:
        return
    first = data.draw(st.integers(span if step < 0 else 0, n - 1 if step < 0 else n - 1 - span))
    source = slice(first, first + length * step if first + length * step >= 0 else None, step)
    values = (np.arange(n) % 5).astype(dtype)
    x = xp.asarray(values, copy=True)
    x[target] = x[source]
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")),
                                  _as_if_copied(values, target, source))


def test_same_view_assignment_and_disjoint_halves() -> None:
    values = np.arange(10.0)
    x = xp.asarray(values, copy=True)
    x[...] = x  # the same view: nothing to copy
    x[:5] = x[5:]  # same buffer, disjoint bytes
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), [5, 6, 7, 8, 9] * 2)


# -- 12. RawKernel and read-only views ---------------------------------------------------------
_COPY = r"""
extern "C" __global__ void plus_one(const float* __restrict__ x, float* y, long long n) {
    for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        y[i] = x[i] + 1.0f;
}"""
CUDA = [d for d in DEVICES if d.type is DeviceType.CUDA]


@pytest.mark.parametrize("device", CUDA, ids=str)
def test_raw_kernels_take_read_only_arrays_at_const_pointers_only(device) -> None:
    from hxarray import cuda

    kernel = cuda.RawKernel(_COPY, "plus_one", device=device)
    base = xp.arange(4, dtype=xp.float32, device=device)
    b = xp.broadcast_to(base, (2, 4))
    y = xp.zeros((2, 4), dtype=xp.float32, device=device)
    kernel((1,), (32,), (b[0], y, 4))  # `const float*`: read-only memory may go there
    np.testing.assert_array_equal(np.asarray(y.to_device("cpu"))[0], [1, 2, 3, 4])
    before = _snapshot(base)
    with pytest.raises(ValueError, match="argument 1 .* read-only"):
        kernel((1,), (32,), (y, b, 8))  # `float*`: the kernel could write through it
    assert _snapshot(base) == before


class _Interface:
    """An object exposing device memory by `__cuda_array_interface__`, read-only or not."""

    def __init__(self, address: int, read_only: bool) -> None:
        self.__cuda_array_interface__ = {"data": (address, read_only), "shape": (4,),
                                         "typestr": "<f4", "version": 3}


@CPU_ONLY
def test_read_only_cuda_array_interfaces_go_to_const_pointers_only(device) -> None:
    pointer = ParamInfo(8, 8, "pointer")
    count = ParamInfo(8, 8, "signed")
    const = const_pointers(_COPY, "plus_one")
    assert const == frozenset({0})
    typed = to_kernel_args((pointer, pointer, count),
                           [_Interface(4096, True), _Interface(8192, False), 4], "plus_one", const)
    assert [int(v) for v in typed] == [4096, 8192, 4]
    with pytest.raises(ValueError, match="argument 1 of kernel 'plus_one' is read-only"):
        to_kernel_args((pointer, pointer, count), [_Interface(4096, False),
                                                   _Interface(8192, True), 4], "plus_one", const)
    with pytest.raises(ValueError, match="argument 0 .* read-only"):  # signature unknown
        to_kernel_args(None, [_Interface(4096, True)], "template")


@CPU_ONLY
def test_const_pointer_declarations(device) -> None:
    code = """extern "C" __global__ void k(const float* a, float const* b, float* const c,
                                          const float** d, float* e, const int f) {}"""
    assert const_pointers(code, "k") == frozenset({0, 1})
    assert const_pointers(code, "missing") == frozenset()
    unknown = """extern "C" __global__ void k(pair<int, int> p, const float* x, float* y) {}"""
    assert const_pointers(unknown, "k") == frozenset()  # positions cannot be told: none


# -- DLPack: exports of read-only arrays say so (or copy); imports never write a producer -----
def test_dlpack_export_of_a_read_only_view_is_read_only_or_a_copy() -> None:
    base = xp.asarray([0.0, 1.0, 2.0])
    b = xp.broadcast_to(base, (2, 3))
    before = _snapshot(base)
    try:
        host = np.from_dlpack(b)
    except BufferError:  # a device whose memory is not host memory: no export without a copy
        host = np.from_dlpack(b, device="cpu", copy=True)
    if host.flags.writeable:  # only a copy may be writable
        host[...] = 42.0
    else:
        with pytest.raises(ValueError):
            host[0, 0] = 42.0
    assert _snapshot(base) == before
    with pytest.raises(BufferError, match="read-only"):
        b.__dlpack__()  # a legacy consumer cannot be told that the memory is read-only


def test_dlpack_import_of_a_read_only_producer_never_writes_it() -> None:
    producer = np.arange(3.0)
    producer.flags.writeable = False
    x = xp.from_dlpack(producer, device=xp.asarray(0.0).device)
    x[0] = 7.0
    np.testing.assert_array_equal(producer, [0.0, 1.0, 2.0])
    with pytest.raises(ValueError):
        xp.from_dlpack(producer, copy=False)
