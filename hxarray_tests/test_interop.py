"""Interchange with numpy, DLPack producers and consumers, pickle, copy and array-api-compat:
zero-copy where memory can be shared (same address), copies where it cannot."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import hxarray as xp

from .oracle import DTYPES, TOY, VIEWS, assert_matches, ids, needs_toy, sample


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


# -- asarray ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_asarray_shares_a_writable_numpy_array(dtype):
    """Every layout of a numpy array is shared at its own address and strides, writes passing
    both ways."""
    for view in VIEWS.values():
        data = view(sample((4, 6), dtype))
        x = xp.asarray(data)
        shared = np.asarray(x)
        assert (_address(shared), shared.strides) == (_address(data), data.strides)
        block = x._buffer.block  # its address (found once, then kept): where its bytes start
        assert block.address == block.address == _address(data) + sum(
            min(0, (n - 1) * s) for n, s in zip(data.shape, data.strides))
        data[0, 0] = data[1, 1]
        assert_matches(x, data)
        x[0, 0] = x[1, 0]
        np.testing.assert_array_equal(data[0, 0], data[1, 0])


def test_asarray_keeps_its_source_alive():
    data = np.arange(1000.0)
    address = _address(data)
    x = xp.asarray(data)
    del data
    import gc

    gc.collect()
    assert _address(np.asarray(x)) == address
    assert_matches(x[::100], np.arange(0.0, 1000.0, 100.0))
    assert_matches(x + 1, np.arange(1000.0) + 1)


def test_asarray_copies_what_it_cannot_share():
    read_only = np.arange(5.0)
    read_only.flags.writeable = False
    swapped = np.arange(5.0).astype(">f8")
    for data, dtype in ((read_only, xp.float64), (swapped, xp.float64)):
        x = xp.asarray(data)
        assert x.dtype is dtype
        assert_matches(x, data.astype(dtype.name))
        assert not np.shares_memory(np.asarray(x), data)
    with pytest.raises(ValueError, match="read-only"):
        xp.asarray(read_only, copy=False)
    fresh = np.arange(4)
    copied = xp.asarray(fresh, copy=True)
    assert not np.shares_memory(np.asarray(copied), fresh)
    assert not np.shares_memory(np.asarray(xp.asarray(fresh, dtype=xp.int32)), fresh)


@needs_toy
def test_asarray_to_another_device_copies():
    data = np.arange(6.0)
    x = xp.asarray(data, device=TOY)
    assert x.device is TOY and not np.shares_memory(np.asarray(x), data)
    assert_matches(x, data)


def test_asarray_takes_buffers_sequences_and_scalars():
    assert_matches(xp.asarray(bytearray(b"\x01\x02")), np.array([1, 2], dtype=np.uint8))
    assert_matches(xp.asarray(memoryview(np.arange(3, dtype=np.int16))),
                   np.arange(3, dtype=np.int16))
    assert_matches(xp.asarray([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]]))
    assert_matches(xp.asarray(2.5), np.asarray(2.5))
    shared = bytearray(b"\x00\x00")
    xp.asarray(shared, copy=False)[0] = 7
    assert shared[0] == 7


# -- DLPack ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_dlpack_with_numpy_is_zero_copy_both_ways(dtype):
    data = sample((3, 4), dtype)
    x = xp.from_dlpack(data)
    assert _address(np.asarray(x)) == _address(data)
    assert_matches(x, data)
    y = xp.asarray(data, copy=True)
    back = np.from_dlpack(y)
    assert _address(back) == _address(np.asarray(y))
    np.testing.assert_array_equal(back, data)


def test_dlpack_with_torch_is_zero_copy_both_ways():
    torch = pytest.importorskip("torch")  # an optional test dependency
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    x = xp.from_dlpack(t)
    assert _address(np.asarray(x)) == t.data_ptr()
    assert_matches(x, t.numpy())
    y = xp.asarray(np.linspace(0, 1, 6), copy=True)
    back = torch.from_dlpack(y)
    assert back.data_ptr() == _address(np.asarray(y))
    back[0] = 42.0
    assert float(y[0]) == 42.0


# -- pickle and copy -------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", [2, 4, 5])
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_pickle_round_trip(protocol, dtype):
    for kind in ("contiguous", "flip", "mT"):
        data = VIEWS[kind](sample((3, 4), dtype))
        x = xp.asarray(data)
        y = pickle.loads(pickle.dumps(x, protocol=protocol))
        assert y.device == x.device
        assert_matches(y, data)
        y[0, 0] = y[1, 1]  # writable, and independent
        assert_matches(x, data)
    for data in (sample((), dtype), sample((0, 3), dtype)):
        assert_matches(pickle.loads(pickle.dumps(xp.asarray(data), protocol=protocol)), data)


def test_pickle_protocol_5_passes_cpu_memory_out_of_band_without_copies():
    x = xp.asarray(np.arange(1000.0), copy=True)
    buffers: list[pickle.PickleBuffer] = []
    payload = pickle.dumps(x, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1 and len(payload) < 200  # the values are not in the payload
    assert _address(np.asarray(buffers[0])) == _address(np.asarray(x))
    y = pickle.loads(payload, buffers=buffers)
    assert _address(np.asarray(y)) == _address(np.asarray(x))  # no copy on either side


@needs_toy
def test_pickle_of_a_device_array_comes_back_on_its_device():
    x = xp.asarray(np.arange(5.0), device=TOY)
    y = pickle.loads(pickle.dumps(x))
    assert y.device is TOY
    assert_matches(y, np.arange(5.0))


@pytest.mark.parametrize("function", [copy.copy, copy.deepcopy])
def test_copy_and_deepcopy(function):
    data = sample((3, 4), xp.float32)
    x = xp.asarray(data)[::-1]
    y = function(x)
    assert y.device == x.device
    assert_matches(y, data[::-1])
    assert not np.shares_memory(np.asarray(y), np.asarray(x))
    holder = copy.deepcopy({"x": x, "again": x})  # one copy, shared as the original was
    assert holder["x"] is not x and holder["x"] is holder["again"]


def _public_functions() -> dict[str, object]:
    functions = {}
    for prefix, namespace in (("", xp), ("linalg.", xp.linalg), ("fft.", xp.fft)):
        for name in dir(namespace):
            value = getattr(namespace, name)
            if not name.startswith("_") and callable(value) and not isinstance(value, type):
                functions[prefix + name] = value
    return functions


@pytest.mark.parametrize("name", sorted(_public_functions()))
def test_public_functions_pickle_by_reference(name):
    """As numpy's functions do, so that work can go to other processes (dask's schedulers):
    compiled or not, observed by the hooks' wrapper or not, a public function pickles as a
    reference that comes back as the same object."""
    function = _public_functions()[name]
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        assert pickle.loads(pickle.dumps(function, protocol)) is function


# -- array-api-compat ------------------------------------------------------------------------------


def test_array_api_compat_sees_hxarray():
    compat = pytest.importorskip("array_api_compat")
    x = xp.ones(3)
    assert compat.array_namespace(x) is xp
    assert compat.array_namespace(x, xp.zeros(2)) is xp
    assert compat.is_array_api_obj(x)
    assert compat.device(x) == xp.Device("cpu")
    assert compat.size(xp.ones((2, 3))) == 6
