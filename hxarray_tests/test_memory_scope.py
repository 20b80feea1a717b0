"""Memory scopes: a pool per scope (peak, allocations), memory returned at exit, arrays that
outlive their scope, nesting with device_scope, threads, and the CPU fast path held off only
while a scope is open."""

from __future__ import annotations

import gc
import threading
import time

import numpy as np
import pytest

import hxarray as xp
from hxarray.hal import Device, StreamOrderedAllocator
from hxarray.hal.scope import current_pool

from .conftest import DEVICES

KIB = 1024


def _raw_in_use(device: Device) -> int | None:
    """Bytes the device's raw allocator has handed out, where the backend can tell (ref)."""
    memory = getattr(device.backend, "memory", None)
    return getattr(memory, "in_use", None)


def _eventually(check, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_peak_allocations_and_values(device: Device) -> None:
    device_allocs = xp.memory_stats(device)["num_allocs"]
    with xp.memory_scope(device) as scope:
        assert xp.ones(1).device is device  # the scope's device is the default device inside
        x = xp.arange(1024, dtype=xp.float64)  # 8 KiB
        for _ in range(4):
            y = xp.exp(x / 1024) * 2.0  # three 8 KiB temporaries live at once, reused each round
        total = float(xp.sum(y))
        del x, y
    assert total == pytest.approx(2 * np.exp(np.arange(1024.0) / 1024).sum())
    assert xp.memory_stats(device)["num_allocs"] == device_allocs  # none from the device's pool
    assert scope.allocations >= 10
    # x, y, x / 1024 and exp(x / 1024) at the peak (8 KiB each; 64 bytes for the sum)
    assert 3 * 8 * KIB <= scope.peak_bytes <= 4 * 8 * KIB + 64
    stats = scope.stats()
    assert stats["cache_hits"] > 0 and stats["allocated_bytes"] == 0
    assert stats["peak_allocated_bytes"] == scope.peak_bytes


@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_cached_memory_is_returned_at_exit(device: Device) -> None:
    raw = device.backend.allocator(device)
    raw = getattr(raw, "raw", raw)
    frees = []
    original = raw.free

    def counting_free(block):
        frees.append(block.nbytes)
        original(block)

    raw.free = counting_free
    try:
        with xp.memory_scope(device) as scope:
            for n in (1000, 2000, 3000):
                xp.ones(n)
            pool = current_pool(device)
            assert pool is scope.pool and pool.stats()["cached_bytes"] > 0
            device.backend.synchronize(device)
        assert _eventually(lambda: sum(frees) >= scope.stats()["reserved_bytes"])
        assert pool.stats()["cached_bytes"] == 0 and current_pool(device) is None
    finally:
        del raw.free


@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_escaping_arrays_stay_valid_and_go_back_when_they_die(device: Device) -> None:
    in_use = _raw_in_use(device)
    with xp.memory_scope(device) as scope:
        kept = xp.arange(100_000, dtype=xp.int64) * 3  # outlives the scope
        address = kept.buffer.address
    assert scope.live_bytes >= 800_000
    with xp.memory_scope(device):  # a new scope, then the device's pool: never the same block
        others = [xp.full(100_000, 7, dtype=xp.int64) for _ in range(3)]
    others += [xp.full(100_000, 7, dtype=xp.int64) for _ in range(3)]
    assert all(o.buffer.address != address for o in others)
    assert np.array_equal(np.asarray(kept.to_device("cpu")), np.arange(100_000) * 3)
    del kept, others
    gc.collect()
    assert scope.live_bytes == 0
    if in_use is not None:  # the block went back to the device's raw memory
        assert _eventually(lambda: _raw_in_use(device) <= in_use + 1_000_000)


@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_a_scope_closes_after_its_pool_pooled_idle_streams_blocks(device: Device) -> None:
    in_use = _raw_in_use(device)
    with xp.memory_scope(device) as scope:
        kept = [xp.ones(10) for _ in range(StreamOrderedAllocator.SWEEP_EVERY + 1)]
        device.backend.synchronize(device)  # idle: a sweep moves the blocks to the shared pool
        del kept
    assert scope.pool.stats()["cached_bytes"] == 0
    if in_use is not None:  # the blocks went back to the device's raw memory
        assert _eventually(lambda: _raw_in_use(device) <= in_use)


def test_nesting_with_device_scope_and_other_scopes() -> None:
    with xp.memory_scope("ref") as outer:
        with xp.device_scope("cpu"):
            cpu_array = xp.ones(10)  # not scoped: no CPU scope is open
            assert current_pool(Device("cpu")) is None
            with xp.memory_scope() as cpu_scope:  # the default device: cpu
                xp.ones(10)
        with xp.memory_scope("ref") as inner:
            xp.ones(10)
            assert current_pool(Device("ref")) is inner.pool
        assert current_pool(Device("ref")) is outer.pool
        xp.ones(10)
    assert cpu_array.device is Device("cpu") and cpu_scope.device is Device("cpu")
    assert (outer.allocations, inner.allocations, cpu_scope.allocations) == (1, 1, 1)


def test_scopes_are_per_thread() -> None:
    results: dict[str, int] = {}
    start = threading.Barrier(2)

    def work(name: str, n: int) -> None:
        with xp.memory_scope("cpu") as scope:
            start.wait()
            for _ in range(n):
                xp.ones(100) + 1
        results[name] = scope.allocations

    threads = [threading.Thread(target=work, args=(f"t{n}", n)) for n in (3, 7)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {"t3": 6, "t7": 14}


def test_the_allocation_path_looks_the_scope_up() -> None:
    """The compiled fast path's calls too; another thread, outside the scope, is not served by
    it, and nothing is replaced on the backend."""
    backend = Device("cpu").backend
    own = set(vars(backend))
    a = xp.ones(10)
    before = xp.memory_stats("cpu")["num_allocs"]
    outside = threading.Thread(target=lambda: a + a)
    with xp.memory_scope("cpu") as scope:
        a + a, xp.add(a, a), xp.sum(a), xp.zeros(3)  # fast-path calls: now from the pool
        assert set(vars(backend)) == own
        outside.start()
        outside.join()
    assert scope.allocations == 4 and xp.memory_stats("cpu")["num_allocs"] == before + 1
    a + a
    assert xp.memory_stats("cpu")["num_allocs"] == before + 2


def test_errors() -> None:
    scope = xp.memory_scope("cpu")
    with pytest.raises(RuntimeError, match="not been entered"):
        scope.peak_bytes
    with scope:
        pass
    with pytest.raises(RuntimeError, match="only once"):
        with scope:
            pass
    with pytest.raises(ValueError, match="unknown device type"):
        xp.memory_scope("nosuchdevice").__enter__()


@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_managed_memory_where_the_device_has_it(device: Device) -> None:
    """Managed scopes: arrays computed on the device and read by numpy in place (no copy: a
    write through numpy shows on the device), prefetched to the host and back; refused with a
    ValueError on devices without managed memory, as prefetch is for other arrays."""
    has = device.capabilities()["managed_memory"]
    outside = xp.ones(4, device=device)
    with pytest.raises(ValueError, match="not in managed memory"):
        outside.prefetch(device)
    if not has:
        with pytest.raises(ValueError, match="has no managed memory"):
            with xp.memory_scope(device, managed=True):
                pass
        return
    assert str(device).startswith("cuda")
    expected = np.arange(1000, dtype=np.float32) * 2 + 1
    with xp.memory_scope(device, managed=True) as scope:
        x = xp.arange(1000, dtype=xp.float32, device=device) * 2 + 1
    assert scope.allocations >= 1
    assert x.device == device
    host = np.asarray(x)
    np.testing.assert_array_equal(host, expected)
    host[0] = -5.0  # the same memory: the device sees the write
    np.testing.assert_array_equal(np.asarray((x + 0).to_device("cpu"))[:2], [-5.0, 3.0])
    assert x.prefetch("cpu") is x and x.prefetch(device) is x
    np.testing.assert_array_equal(np.asarray(x)[1:], expected[1:])
    assert np.shares_memory(np.asarray(x), np.asarray(x))
    with pytest.raises(TypeError, match="managed must be a bool"):
        xp.memory_scope(device, managed="yes")
    free = device.capabilities()["free_memory"]
    with pytest.raises(MemoryError):  # more managed memory than the device has free: refused
        with xp.memory_scope(device, managed=True):
            xp.empty(2 * free // 8 + 1024, dtype=xp.float64, device=device)
    with pytest.raises(ValueError, match="a CUDA device or the CPU"):
        x.prefetch("ref:0")
