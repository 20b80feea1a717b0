"""Streams, events, memory, devices and compilation through the driver interface; on the
simulator and, unchanged, on a GPU."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from hxarray.backends.codegen.compiler import CompileError
from hxarray.backends.cuda.driver import DeviceProperties, Driver, Module

from .conftest import DeviceArrays

Compile = Callable[..., Module]


def test_properties_and_mem_info(driver: Driver) -> None:
    assert driver.device_count() >= 1
    props = driver.properties(0)
    assert isinstance(props, DeviceProperties)
    assert props.warp_size == 32 and props.max_threads_per_block >= 1024
    assert props.multiprocessor_count >= 1 and props.shared_memory_per_block >= 48 * 1024
    assert props.simulated == driver.simulated
    free, total = driver.mem_info(0)
    assert 0 < free <= total == props.total_memory
    with pytest.raises(ValueError, match="does not exist"):
        driver.properties(driver.device_count())


def test_malloc_counts_against_memory(driver: Driver) -> None:
    """A block large enough that a GPU's driver cannot serve it from memory it set aside already
    (it hands out small blocks from 2 MiB pages it keeps)."""
    size = 256 << 20
    free_before, _ = driver.mem_info(0)
    address = driver.malloc(0, size)
    assert address % 16 == 0
    free_while_held = driver.mem_info(0)[0]
    assert free_while_held <= free_before - size
    driver.free(0, address)
    assert driver.mem_info(0)[0] >= free_while_held + size


def test_copies_and_memset_round_trip(driver: Driver, mem: DeviceArrays) -> None:
    data = np.arange(1000, dtype=np.int32)
    a = mem.put(data)
    b = mem.empty(data.nbytes)
    driver.copy_device_to_device(b, int(a), data.nbytes, mem.stream)
    driver.memset(b, 0xFF, 40, mem.stream)
    expected = data.copy()
    expected[:10] = -1
    np.testing.assert_array_equal(mem.get(b, 1000, np.int32), expected)
    staging = driver.host_alloc(data.nbytes)
    assert staging.dtype == np.uint8 and staging.nbytes == data.nbytes
    driver.copy_device_to_host(staging, int(a), data.nbytes, mem.stream)
    driver.stream_synchronize(mem.stream)
    np.testing.assert_array_equal(staging.view(np.int32), data)
    driver.host_free(staging)


def test_two_streams_ordered_by_an_event(driver: Driver, mem: DeviceArrays,
                                         compile_kernel: Compile) -> None:
    module = compile_kernel(driver, "streams.cu")
    n = 4096
    x, y = mem.zeros(n * 4), mem.zeros(n * 4)
    s1, s2 = driver.create_stream(0), driver.create_stream(0)
    start, filled, done = (driver.create_event(0) for _ in range(3))
    try:
        driver.event_record(start, s1)
        driver.launch(module.get_function("slow_fill"), (n // 256, 1, 1), (256, 1, 1),
                      (x, np.int32(n), np.float32(41), np.int32(20_000)), 0, s1)
        driver.event_record(filled, s1)
        driver.stream_wait_event(s2, filled)  # s2 must see the fill
        driver.launch(module.get_function("add_one"), (n // 256, 1, 1), (256, 1, 1),
                      (x, y, np.int32(n)), 0, s2)
        driver.event_record(done, s2)
        driver.event_synchronize(done)
        assert driver.event_query(done) and driver.event_query(filled)
        np.testing.assert_array_equal(mem.get(y, n, np.float32, stream=s2), 42.0)
        elapsed = driver.event_elapsed_ms(start, done)
        assert elapsed > 0 and driver.event_elapsed_ms(start, filled) <= elapsed
        assert driver.stream_query(s1) and driver.stream_query(s2)
    finally:
        driver.stream_synchronize(s1)
        driver.stream_synchronize(s2)
        driver.destroy_stream(s1)
        driver.destroy_stream(s2)
        for e in (start, filled, done):
            driver.destroy_event(e)


def test_stream_work_is_asynchronous(driver: Driver, mem: DeviceArrays,
                                     compile_kernel: Compile) -> None:
    module = compile_kernel(driver, "streams.cu")
    n = 2048
    x = mem.zeros(n * 4)
    stream = driver.create_stream(0)
    try:
        driver.launch(module.get_function("slow_fill"), (n // 256, 1, 1), (256, 1, 1),
                      (x, np.int32(n), np.float32(1), np.int32(20_000)), 0, stream)
        queued = driver.stream_query(stream)  # returns before the kernel has run
        driver.stream_synchronize(stream)
        assert not queued and driver.stream_query(stream)
    finally:
        driver.destroy_stream(stream)


def test_event_timing_rules(driver: Driver) -> None:
    stream = driver.default_stream(0)
    plain = driver.create_event(0, timing=False)
    timed = driver.create_event(0)
    assert driver.event_query(timed)  # never recorded: complete
    driver.event_record(plain, stream)
    driver.event_record(timed, stream)
    driver.stream_synchronize(stream)
    with pytest.raises(ValueError, match="timing"):
        driver.event_elapsed_ms(plain, timed)
    assert driver.event_elapsed_ms(timed, timed) == 0.0


def test_peer_copy_between_devices(driver: Driver, mem: DeviceArrays) -> None:
    if driver.device_count() < 2:
        pytest.skip("needs two devices")
    data = np.random.default_rng(1).standard_normal(5000)
    src = mem.put(data, index=0)
    dst = mem.empty(data.nbytes, index=1)
    assert driver.can_access_peer(0, 1) in (True, False)
    driver.copy_peer(dst, 1, int(src), 0, data.nbytes, mem.stream)
    driver.stream_synchronize(mem.stream)
    np.testing.assert_array_equal(mem.get(dst, 5000, np.float64), data)


def test_launch_configuration_errors(driver: Driver, mem: DeviceArrays,
                                     compile_kernel: Compile) -> None:
    kernel = compile_kernel(driver, "elementwise.cu").get_function("empty")
    s = mem.stream
    with pytest.raises(ValueError, match="block of 2048 threads"):
        driver.launch(kernel, (1, 1, 1), (1024, 2, 1), (), 0, s)
    with pytest.raises(ValueError, match="grid.x = 0"):
        driver.launch(kernel, (0, 1, 1), (1, 1, 1), (), 0, s)
    with pytest.raises(ValueError, match="shared_mem"):
        driver.launch(kernel, (1, 1, 1), (1, 1, 1), (), 1 << 30, s)
    with pytest.raises(TypeError, match="numpy scalars"):
        driver.launch(kernel, (1, 1, 1), (1, 1, 1), (3,), 0, s)
    driver.launch(kernel, 1, 32, (), 0, s)
    driver.stream_synchronize(s)


def test_compile_errors_carry_the_log(driver: Driver) -> None:
    with pytest.raises(CompileError, match="undeclared|not declared|undefined") as info:
        driver.compile(0, 'extern "C" __global__ void k(float* x) { x[0] = missing; }')
    assert "missing" in info.value.log
    module = driver.compile(0, 'extern "C" __global__ void k(int* x) { x[0] = 1; }')
    with pytest.raises(KeyError, match=r"no kernel .*nope"):
        module.get_function("nope")
