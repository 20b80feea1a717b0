"""MemoryBuffer: host copies, bounds, and the lifetime rule (the block goes back to its allocator
exactly once, when the last array, view or numpy array over it has died)."""

from __future__ import annotations

import copy
import gc
import pickle

import numpy as np
import pytest

import hxarray as xp
from hxarray.backends.cpu.allocator import CpuAllocator
from hxarray.hal import Block, CachingAllocator, Device
from hxarray.hal.allocator import MemoryBuffer


class CountingRaw(CpuAllocator):
    """The CPU allocator, counting the frees of each block."""

    def __init__(self) -> None:
        super().__init__(Device("cpu"))
        self.freed: list[int] = []

    def free(self, block: Block) -> None:
        self.freed.append(block.address)
        super().free(block)


@pytest.fixture
def alloc() -> CachingAllocator:
    return CachingAllocator(CountingRaw(), max_cached_bytes=0)  # every free reaches the raw


# -- host copies -----------------------------------------------------------------------------------
def test_copy_round_trip(alloc: CachingAllocator) -> None:
    buffer = alloc.allocate(80)
    data = np.arange(10, dtype=np.float64)
    buffer.copy_from_host(data)
    out = buffer.copy_to_host(np.empty(10, np.float64))
    assert np.array_equal(out, data)
    assert np.array_equal(np.asarray(buffer).view(np.float64), data)


def test_copy_at_offsets(alloc: CachingAllocator) -> None:
    buffer = alloc.allocate(16)
    buffer.copy_from_host(np.zeros(16, np.uint8))
    buffer.copy_from_host(np.array([7, 8], np.int32), offset=8)
    buffer.copy_from_host(np.array([[1, 2], [3, 4]], np.uint8)[:, ::-1])  # non-contiguous input
    expected = np.zeros(16, np.uint8)
    expected[:4] = [2, 1, 4, 3]
    expected[8:16] = np.array([7, 8], np.int32).view(np.uint8)
    assert np.array_equal(buffer.copy_to_host(np.empty(16, np.uint8)), expected)
    tail = buffer.copy_to_host(np.empty(1, np.int32), offset=12)
    assert tail.tolist() == [8]
    assert np.array_equal(buffer.copy_to_host(np.empty((2, 2), np.uint8), offset=0),
                          expected[:4].reshape(2, 2))


@pytest.mark.parametrize("offset, count", [(-1, 1), (0, 13), (10, 3), (12, 1), (100, 0)])
def test_copies_outside_the_buffer_raise_index_error(alloc: CachingAllocator, offset: int,
                                                      count: int) -> None:
    buffer = alloc.allocate(12)  # its block has 64 bytes, but only 12 belong to the buffer
    buffer.copy_from_host(np.arange(12, dtype=np.uint8))
    with pytest.raises(IndexError, match="outside this 12-byte buffer"):
        buffer.copy_from_host(np.full(count, 99, np.uint8), offset=offset)
    with pytest.raises(IndexError, match="outside this 12-byte buffer"):
        buffer.copy_to_host(np.empty(count, np.uint8), offset=offset)
    assert np.array_equal(buffer.copy_to_host(np.empty(12, np.uint8)), np.arange(12))


def test_copy_to_a_non_contiguous_output_is_refused(alloc: CachingAllocator) -> None:
    buffer = alloc.allocate(32)
    buffer.copy_from_host(np.arange(4, dtype=np.float64))
    out = np.zeros((2, 4))
    with pytest.raises(ValueError, match="C-contiguous"):  # used to be a silent no-op
        buffer.copy_to_host(out[:, :2])
    assert not out.any()
    readonly = np.zeros(32, np.uint8)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        buffer.copy_to_host(readonly)


def test_repr_names_device_size_and_address(alloc: CachingAllocator) -> None:
    buffer = alloc.allocate(24)
    assert repr(buffer) == f"MemoryBuffer(device=Device('cpu'), nbytes=24, " \
                           f"address={buffer.address:#x})"


# -- lifetime at the allocator level ---------------------------------------------------------------
def test_buffer_frees_its_block_once(alloc: CachingAllocator) -> None:
    buffer = alloc.allocate(100)
    address = buffer.address
    del buffer
    gc.collect()
    assert alloc.raw.freed == [address]
    assert alloc.stats()["num_frees"] == 1 and alloc.stats()["allocated_bytes"] == 0


@pytest.mark.skipif(not hasattr(MemoryBuffer, "__del__"), reason="compiled, the hand-back is "
                    "the C deallocator, which Python code cannot call")
def test_interpreted_buffer_frees_once_even_if_its_finalizer_is_called_twice(
        alloc: CachingAllocator) -> None:
    buffer = MemoryBuffer(alloc.device, 100, alloc.malloc(100), alloc)
    address = buffer.block.address
    buffer.__del__()  # an explicit call, then the real one when the reference goes
    del buffer
    gc.collect()
    assert alloc.raw.freed == [address]
    assert alloc.stats()["num_frees"] == 1 and alloc.stats()["allocated_bytes"] == 0


def test_numpy_view_of_a_buffer_keeps_it_alive(alloc: CachingAllocator) -> None:
    buffer = alloc.allocate(32)
    buffer.copy_from_host(np.arange(32, dtype=np.uint8))
    host = np.asarray(buffer)
    del buffer
    gc.collect()
    assert alloc.raw.freed == []
    assert np.array_equal(host, np.arange(32))
    del host
    gc.collect()
    assert len(alloc.raw.freed) == 1


# -- lifetime of arrays and views ------------------------------------------------------------------
def _frees() -> int:
    return xp.memory_stats()["num_frees"]


def test_views_keep_the_buffer_alive() -> None:
    expected = np.arange(1000.0)
    x = xp.asarray(expected, copy=True)  # memory from the allocator
    allocated = xp.memory_stats()["allocated_bytes"]
    start = _frees()
    views = [x[10:20], xp.reshape(x, (10, 100)), x[::-3]]
    assert all(v._buffer is x._buffer for v in views)
    del x
    gc.collect()
    assert _frees() == start
    assert np.array_equal(np.asarray(views[0]), expected[10:20])
    assert np.array_equal(np.asarray(views[1]), expected.reshape(10, 100))
    assert np.array_equal(np.asarray(views[2]), expected[::-3])
    views.pop()
    views.pop()
    gc.collect()
    assert _frees() == start
    views.clear()
    gc.collect()
    assert _frees() == start + 1
    assert xp.memory_stats()["allocated_bytes"] == allocated - 8192


def test_numpy_arrays_from_asarray_keep_the_buffer_alive() -> None:
    x = xp.asarray(np.arange(100, dtype=np.int64), copy=True)
    host = np.asarray(x)[5:]
    start = _frees()
    del x
    gc.collect()
    assert _frees() == start
    y = xp.full(100, -1, dtype=xp.int64)  # must not be handed the memory numpy still sees
    assert not np.shares_memory(np.asarray(y), host)
    assert np.array_equal(host, np.arange(5, 100))
    del host
    gc.collect()
    assert _frees() == start + 1
    assert np.array_equal(np.asarray(y), np.full(100, -1))


def test_dlpack_consumers_keep_the_buffer_alive() -> None:
    x = xp.asarray(np.linspace(0.0, 1.0, 50), copy=True)
    consumer = np.from_dlpack(x)
    assert type(consumer) is np.ndarray  # (the CPU exports a view of its own type)
    start = _frees()
    del x
    gc.collect()
    assert _frees() == start
    assert np.array_equal(consumer, np.linspace(0.0, 1.0, 50))
    del consumer
    gc.collect()
    assert _frees() == start + 1


def test_each_temporary_is_freed_once() -> None:
    a = xp.asarray(np.arange(64.0))
    gc.collect()
    start = xp.memory_stats()
    for _ in range(20):
        b = (a + 1.0) * 2.0  # a temporary and a result per round
        assert float(b[3]) == 8.0
    del b
    gc.collect()
    end = xp.memory_stats()
    allocs = end["num_allocs"] - start["num_allocs"]
    assert allocs >= 20 and end["num_frees"] - start["num_frees"] == allocs
    assert end["allocated_bytes"] == start["allocated_bytes"]


def test_adopted_numpy_memory_is_not_from_the_allocator() -> None:
    data = np.arange(12.0)
    start = xp.memory_stats()
    x = xp.asarray(data, copy=False)
    assert np.shares_memory(np.asarray(x), data)
    del x
    gc.collect()
    assert xp.memory_stats() == start
    assert np.array_equal(data, np.arange(12.0))


@pytest.mark.parametrize("duplicate", [copy.copy, copy.deepcopy,
                                       lambda x: pickle.loads(pickle.dumps(x))],
                         ids=["copy", "deepcopy", "pickle"])
def test_buffers_and_blocks_refuse_to_be_copied(alloc: CachingAllocator, duplicate) -> None:
    """A copy would be a second owner: its death would hand the block back again, to whichever
    array holds it by then."""
    buffer = alloc.allocate(64)
    for owner, name in ((buffer, "MemoryBuffer"), (buffer.block, "Block")):
        with pytest.raises(TypeError, match=f"a {name} cannot be copied or pickled"):
            duplicate(owner)
    address = buffer.block.address
    del buffer
    gc.collect()
    assert alloc.stats()["num_frees"] == 1 and alloc.malloc(64).address == address
