"""Size classes, the caching allocator (reuse, statistics, cache bounds, OOM retry, threads) and the
raw CPU allocator."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hxarray as xp
from hxarray.backends.cpu.allocator import CpuAllocator
from hxarray.hal import Allocator, Block, CachingAllocator, Device, size_class


class FakeRaw(Allocator):
    """A raw allocator with `capacity` bytes of pretend device memory; `fail` forces the next
    that many mallocs to raise MemoryError."""

    def __init__(self, capacity: int = 1 << 20, fail: int = 0, granule: int = 1) -> None:
        self.device = Device("cpu")
        self.capacity = capacity
        self.fail = fail
        self.granule = granule  # sizes are rounded up to multiples of this
        self.used = 0
        self.mallocs = 0
        self.frees = 0
        self._next = 1 << 16
        self.live: set[int] = set()

    def malloc(self, nbytes: int) -> Block:
        if self.fail:
            self.fail -= 1
            raise MemoryError("fake device: forced failure")
        nbytes = -(-nbytes // self.granule) * self.granule
        if self.used + nbytes > self.capacity:
            raise MemoryError(f"fake device: {self.used} of {self.capacity} bytes in use")
        self.used += nbytes
        self.mallocs += 1
        address, self._next = self._next, self._next + nbytes
        self.live.add(address)
        return Block(address, nbytes, None)

    def free(self, block: Block) -> None:
        assert block.address in self.live, "double or foreign free"
        self.live.remove(block.address)
        self.used -= block.nbytes
        self.frees += 1

    def copy_to_host(self, block: Block, offset: int, out: np.ndarray) -> None:
        raise NotImplementedError

    def copy_from_host(self, block: Block, offset: int, data: np.ndarray) -> None:
        raise NotImplementedError


# -- size classes ----------------------------------------------------------------------------------
@pytest.mark.parametrize("nbytes, expected", [
    (0, 64), (1, 64), (64, 64), (65, 128), (500, 512), (512, 512), (513, 640), (1000, 1024),
    (1025, 1280), (4096, 4096), (4097, 5120), (10**6, 1048576),
])
def test_size_class_examples(nbytes: int, expected: int) -> None:
    assert size_class(nbytes) == expected


@given(st.one_of(st.integers(513, 1 << 62), st.sampled_from([(1 << k) + d for k in range(10, 62)
                                                            for d in (-1, 0, 1)] + [1 << 62])))
def test_size_class_above_512_bytes_steps_by_a_quarter_of_the_power_of_two_below(
        nbytes: int) -> None:
    step = 1 << (nbytes.bit_length() - 3)  # the oracle: the rule written with bit_length
    assert size_class(nbytes) == -(-nbytes // step) * step


@given(st.integers(0, 1 << 40))
def test_size_class_bounds(nbytes: int) -> None:
    size = size_class(nbytes)
    assert size >= nbytes
    assert size % 64 == 0
    assert size <= 1.25 * nbytes + 64


@given(st.integers(0, 1 << 40), st.integers(0, 1 << 20))
def test_size_class_is_monotone(nbytes: int, extra: int) -> None:
    assert size_class(nbytes) <= size_class(nbytes + extra)


def test_size_class_is_idempotent() -> None:
    for nbytes in range(0, 70_000, 37):
        assert size_class(size_class(nbytes)) == size_class(nbytes)


# -- the caching allocator -------------------------------------------------------------------------
def test_free_then_malloc_of_the_same_class_hits_the_cache() -> None:
    raw = FakeRaw()
    alloc = CachingAllocator(raw)
    first = alloc.malloc(1000)
    assert first.nbytes == size_class(1000) == 1024
    alloc.free(first)
    second = alloc.malloc(1020)  # same class
    assert second is first
    third = alloc.malloc(2000)  # another class
    assert third is not first
    stats = alloc.stats()
    assert (raw.mallocs, stats["cache_hits"], stats["cache_misses"]) == (2, 1, 2)


def test_statistics() -> None:
    raw = FakeRaw()
    alloc = CachingAllocator(raw)
    a, b = alloc.malloc(100), alloc.malloc(1000)  # 128 + 1024
    assert alloc.stats() == {
        "allocated_bytes": 1152, "reserved_bytes": 1152, "cached_bytes": 0,
        "peak_allocated_bytes": 1152, "peak_reserved_bytes": 1152, "num_allocs": 2,
        "num_frees": 0, "cache_hits": 0, "cache_misses": 2, "num_raw_allocs": 2,
        "num_raw_frees": 0, "num_ooms": 0}
    alloc.free(b)
    stats = alloc.stats()
    assert (stats["allocated_bytes"], stats["cached_bytes"], stats["reserved_bytes"]) == \
        (128, 1024, 1152)
    assert (stats["peak_allocated_bytes"], stats["num_frees"]) == (1152, 1)
    c = alloc.malloc(1024)  # from the cache: reserved memory does not grow
    stats = alloc.stats()
    assert (stats["allocated_bytes"], stats["reserved_bytes"], stats["cache_hits"]) == \
        (1152, 1152, 1)
    alloc.free(a)
    alloc.free(c)
    alloc.reset_peak_stats()
    stats = alloc.stats()
    assert (stats["allocated_bytes"], stats["cached_bytes"]) == (0, 1152)
    assert (stats["peak_allocated_bytes"], stats["peak_reserved_bytes"]) == (0, 1152)
    assert stats["num_allocs"] == stats["num_frees"] == 3
    assert raw.used == 1152


def test_the_newest_cached_block_of_a_size_is_taken_first() -> None:
    """Cached blocks are reused newest first, whatever was freed in between (the newest one
    waits outside the free lists), and `empty_cache` releases that one too."""
    raw = FakeRaw()
    alloc = CachingAllocator(raw)
    a1, a2, b = alloc.malloc(64), alloc.malloc(64), alloc.malloc(4096)
    for block in (a1, a2, b):
        alloc.free(block)
    assert alloc.malloc(64) is a2 and alloc.malloc(64) is a1 and alloc.malloc(4096) is b
    assert alloc.stats()["cache_hits"] == 3 and raw.mallocs == 3
    alloc.free(b)
    alloc.empty_cache()
    stats = alloc.stats()
    assert raw.live == {a1.address, a2.address}
    assert (stats["cached_bytes"], stats["allocated_bytes"], stats["num_raw_frees"]) == \
        (0, 128, 1)
    with pytest.raises(ValueError, match="freed already"):
        alloc.free(b)


def test_empty_cache_releases_cached_blocks_only() -> None:
    raw = FakeRaw()
    alloc = CachingAllocator(raw)
    kept = alloc.malloc(256)
    for block in [alloc.malloc(n) for n in (64, 640, 4096)]:
        alloc.free(block)
    assert raw.used == 256 + 64 + 640 + 4096
    alloc.empty_cache()
    stats = alloc.stats()
    assert raw.used == 256 and raw.live == {kept.address}
    assert (stats["cached_bytes"], stats["reserved_bytes"], stats["num_raw_frees"]) == (0, 256, 3)
    assert alloc.malloc(640) is not None and alloc.stats()["cache_hits"] == 0


def test_raw_blocks_larger_than_requested_are_accounted_as_such() -> None:
    raw = FakeRaw(granule=4096)
    alloc = CachingAllocator(raw)
    block = alloc.malloc(100)
    assert block.nbytes == 4096 and alloc.stats()["allocated_bytes"] == 4096 == raw.used
    alloc.free(block)
    stats = alloc.stats()
    assert (stats["allocated_bytes"], stats["cached_bytes"]) == (0, 4096)
    assert alloc.malloc(4096) is block  # cached under its real size
    assert alloc.stats()["allocated_bytes"] == 4096


def test_max_cached_bytes_bounds_the_cache() -> None:
    raw = FakeRaw()
    alloc = CachingAllocator(raw, max_cached_bytes=1024)
    blocks = [alloc.malloc(512) for _ in range(3)]
    for block in blocks:
        alloc.free(block)
    stats = alloc.stats()
    assert stats["cached_bytes"] == 1024  # two fit; the third went back to the raw allocator
    assert raw.frees == 1 and stats["num_raw_frees"] == 1 and raw.used == 1024
    zero = CachingAllocator(FakeRaw(), max_cached_bytes=0)
    zero.free(zero.malloc(64))
    assert zero.stats()["cached_bytes"] == 0 and zero.raw.used == 0


def test_oom_frees_the_cache_and_retries() -> None:
    raw = FakeRaw(capacity=4096)
    alloc = CachingAllocator(raw)
    alloc.free(alloc.malloc(4096))  # all device memory now sits in the cache
    block = alloc.malloc(1024)  # the raw allocator fails once, the cache is freed, retry works
    assert block.nbytes == 1024 and raw.used == 1024
    stats = alloc.stats()
    assert (stats["num_ooms"], stats["cached_bytes"], stats["allocated_bytes"]) == (1, 0, 1024)


def test_a_single_raw_failure_is_retried() -> None:
    raw = FakeRaw(fail=1)
    alloc = CachingAllocator(raw)
    assert alloc.malloc(100).nbytes == 128
    assert alloc.stats()["num_ooms"] == 1 and raw.mallocs == 1


def test_oom_twice_raises_memory_error_with_the_stats() -> None:
    raw = FakeRaw()
    alloc = CachingAllocator(raw)
    kept = alloc.malloc(64)
    raw.fail = 2
    with pytest.raises(MemoryError) as info:
        alloc.malloc(3000)
    message = str(info.value)
    assert "out of memory on cpu" in message and "3072 bytes" in message
    assert "'allocated_bytes': 64" in message and "'num_ooms': 1" in message
    stats = alloc.stats()
    assert stats["allocated_bytes"] == 64 and raw.used == kept.nbytes
    assert alloc.malloc(3000).nbytes == 3072  # the allocator still works afterwards


@pytest.mark.parametrize("nbytes", [-1, 1.5, "8", None, True, np.int64(8)])
def test_allocate_rejects_bad_sizes(nbytes: object) -> None:
    alloc = CachingAllocator(FakeRaw())
    with pytest.raises(ValueError, match="nbytes must be a non-negative int"):
        alloc.allocate(nbytes)  # type: ignore[arg-type]
    assert alloc.stats()["num_allocs"] == 0


def test_allocate_wraps_a_block_in_a_buffer() -> None:
    alloc = CachingAllocator(CpuAllocator(Device("cpu")))
    buffer = alloc.allocate(100)
    assert (buffer.nbytes, buffer.block.nbytes, buffer.device) == (100, 128, Device("cpu"))
    assert buffer.allocator is alloc and buffer.address == buffer.block.address
    assert alloc.stats()["allocated_bytes"] == 128
    del buffer
    assert alloc.stats()["allocated_bytes"] == 0


def test_concurrent_allocation_keeps_stats_consistent() -> None:
    alloc = CachingAllocator(CpuAllocator(Device("cpu")), max_cached_bytes=1 << 16)
    n_threads, n_rounds = 8, 200
    errors: list[str] = []
    barrier = threading.Barrier(n_threads)

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        barrier.wait()
        live = []
        for i in range(n_rounds):
            nbytes = rng.choice((8, 100, 700, 3000))
            buffer = alloc.allocate(nbytes)
            pattern = np.full(nbytes, seed * 16 + i % 16, np.uint8)
            buffer.copy_from_host(pattern)
            live.append((buffer, pattern))
            if len(live) > 4 or rng.random() < 0.5:
                buffer, pattern = live.pop(rng.randrange(len(live)))
                out = np.empty(buffer.nbytes, np.uint8)
                if not np.array_equal(buffer.copy_to_host(out), pattern):
                    errors.append(f"thread {seed}: a live buffer was overwritten")
        live.clear()

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    stats = alloc.stats()
    total = n_threads * n_rounds
    assert stats["allocated_bytes"] == 0
    assert stats["num_allocs"] == stats["num_frees"] == total
    assert stats["cache_hits"] + stats["cache_misses"] == total
    assert stats["cache_misses"] == stats["num_raw_allocs"]
    assert stats["reserved_bytes"] == stats["cached_bytes"] <= 1 << 16
    assert 0 < stats["peak_allocated_bytes"] <= stats["peak_reserved_bytes"]
    alloc.empty_cache()
    stats = alloc.stats()
    assert stats["reserved_bytes"] == 0
    assert stats["num_raw_allocs"] == stats["num_raw_frees"]


def test_the_compiled_build_keeps_the_gil_its_bookkeeping_relies_on() -> None:
    """Compiled, the allocator takes no lock: its bookkeeping is atomic under the GIL. A module
    that declared free-threading support (Cython's `freethreading_compatible`, or Py_mod_gil in
    the hand-written C) would let a free-threaded CPython run it without one: then the allocator
    must lock in both builds first."""
    root = Path(__file__).resolve().parents[1]
    assert "freethreading_compatible" not in (root / "setup.py").read_text()
    assert not any("freethreading_compatible" in path.read_text()
                   for path in (root / "hxarray").rglob("*.py"))
    assert "Py_mod_gil" not in (root / "hxarray" / "_speedups.c").read_text()


# -- the raw CPU allocator -------------------------------------------------------------------------
@pytest.mark.parametrize("nbytes", [1, 63, 64, 100, 4097, 1 << 20])
def test_cpu_memory_is_64_byte_aligned(nbytes: int) -> None:
    raw = CpuAllocator(Device("cpu"))
    blocks = [raw.malloc(nbytes) for _ in range(8)]
    for block in blocks:
        assert block.address % 64 == 0
        assert block.nbytes == nbytes == block.handle.nbytes
        assert block.handle.__array_interface__["data"][0] == block.address
        raw.free(block)
        assert block.handle is None


def test_cpu_arrays_are_64_byte_aligned() -> None:
    for shape in [(1,), (3,), (17, 5), (1000,)]:
        for dtype in (xp.int8, xp.float32, xp.complex128):
            x = xp.zeros(shape, dtype=dtype)
            assert x._buffer.address % 64 == 0
            assert np.asarray(x).ctypes.data % 64 == 0


def test_cpu_allocator_reports_impossible_sizes_as_memory_error() -> None:
    with pytest.raises(MemoryError, match="cannot allocate"):
        CpuAllocator(Device("cpu")).malloc(1 << 62)


# -- through the namespace -------------------------------------------------------------------------
def test_namespace_memory_stats_track_arrays() -> None:
    xp.empty_cache()
    before = xp.memory_stats()
    assert before == xp.memory_stats("cpu") == xp.memory_stats(Device("cpu"))
    x = xp.asarray(np.arange(1000, dtype=np.float64), copy=True)  # 8000 bytes -> class 8192
    after = xp.memory_stats()
    assert after["allocated_bytes"] - before["allocated_bytes"] == size_class(8000) == 8192
    assert after["num_allocs"] - before["num_allocs"] == 1
    assert after["peak_allocated_bytes"] >= after["allocated_bytes"]
    assert np.array_equal(np.asarray(x), np.arange(1000.0))
    del x
    freed = xp.memory_stats()
    assert freed["allocated_bytes"] == before["allocated_bytes"]
    assert freed["cached_bytes"] - before["cached_bytes"] == 8192
    y = xp.ones(1000)  # reuses the cached block
    assert xp.memory_stats()["cache_hits"] - freed["cache_hits"] == 1
    assert np.array_equal(np.asarray(y), np.ones(1000))
    del y
    xp.empty_cache()
    emptied = xp.memory_stats("cpu")
    assert emptied["cached_bytes"] == 0
    assert emptied["reserved_bytes"] == emptied["allocated_bytes"] == before["allocated_bytes"]


def test_namespace_memory_stats_reject_bad_devices() -> None:
    with pytest.raises(ValueError, match="memory_stats"):
        xp.memory_stats("gpu")
    with pytest.raises(TypeError, match="empty_cache"):
        xp.empty_cache(3)


def test_cpu_blocks_keep_the_views_of_their_last_two_users() -> None:
    """A mask and the values it picks take turns in the same cached blocks: each block keeps the
    numpy views of both kinds, so a loop of `a[a > 0]` builds no view once warm, and every
    result still holds its own values."""
    host = np.arange(10.0) - 4.5
    a = xp.asarray(host, copy=True)
    views: list[tuple[np.ndarray, np.ndarray]] = []  # held: no id of a dropped view reappears
    for _ in range(8):
        mask = a > 0
        picked = a[mask]
        assert np.array_equal(np.asarray(picked), host[host > 0])
        assert np.array_equal(np.asarray(mask), host > 0)
        views.append((mask._handle, picked._handle))  # the views the fresh blocks came with
        del mask, picked
    warm = {id(view) for pair in views[:4] for view in pair}
    assert all(id(view) in warm for pair in views[4:] for view in pair)


def test_a_block_keeps_the_views_of_its_last_two_users() -> None:
    """`Block.view` itself: a view is made once per (dtype, shape) while it is among the block's
    last two, and an equal shape in another tuple finds it."""
    made = []

    def make(block, dtype, shape):
        made.append((dtype, shape))
        return np.ndarray(shape, dtype.numpy, buffer=block.handle)

    block = xp.hal.Block(0, 64, np.zeros(64, np.uint8))
    first = block.view(xp.float64, (8,), make)
    assert block.view(xp.float64, (8,), make) is first  # an equal shape, another tuple too
    second = block.view(xp.int32, (4, 4), make)
    assert block.view(xp.float64, (8,), make) is first and block.view(xp.int32, (4, 4), make) \
        is second
    block.view(xp.uint8, (64,), make)  # a third: the oldest goes
    block.view(xp.float64, (8,), make)
    assert made == [(xp.float64, (8,)), (xp.int32, (4, 4)), (xp.uint8, (64,)),
                    (xp.float64, (8,))]


def test_a_blocks_vector_shape_is_the_cached_one_of_the_same_dtype_and_size() -> None:
    """`Block.vector_shape`: the tuple cached with a view of a vector of that dtype and size
    (either of the last two), else a new `(size,)`."""
    def make(block, dtype, shape):
        return np.ndarray(shape, dtype.numpy, buffer=block.handle)

    block = xp.hal.Block(0, 64, np.zeros(64, np.uint8))
    assert block.vector_shape(xp.float64, 8) == (8,)  # nothing cached
    vector, matrix = (8,), (2, 4)
    block.view(xp.float64, vector, make)
    assert block.vector_shape(xp.float64, 8) is vector
    block.view(xp.float64, matrix, make)  # the vector's is now the older of two
    assert block.vector_shape(xp.float64, 8) is vector
    for dtype, size in ((xp.float64, 7), (xp.int64, 8), (xp.float32, 8)):
        shape = block.vector_shape(dtype, size)
        assert shape == (size,) and shape is not vector
    assert block.vector_shape(xp.float64, 2) == (2,)  # not the matrix's first extent
    block.view(xp.uint8, (64,), make)
    block.view(xp.uint8, (32,), make)  # two newer views: the vector's is gone
    assert block.vector_shape(xp.float64, 8) is not vector
