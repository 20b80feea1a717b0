"""Built-in indices in three dimensions, device globals, and the driver under concurrent use:
several host threads and streams at once, errors confined to their stream."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable

import numpy as np
import pytest

from hxarray.backends.cuda.driver import Driver, KernelError, Module
from hxarray.backends.cuda.sim import SimDriver
from hxarray.hal.kernel_cache import KernelCache

from .conftest import DeviceArrays

Compile = Callable[..., Module]


def test_three_dimensional_indices_and_device_globals(driver: Driver, mem: DeviceArrays,
                                                      compile_kernel: Compile) -> None:
    module = compile_kernel(driver, "indexing.cu")
    grid, block = (3, 2, 2), (4, 2, 3)
    total = int(np.prod(grid) * np.prod(block))
    out = mem.zeros(total * 16)
    counter = mem.zeros(4)
    driver.launch(module.get_function("where_am_i"), grid, block, (out,), 0, mem.stream)
    driver.launch(module.get_function("read_counter"), 1, 1, (counter,), 0, mem.stream)
    got = mem.get(out, (grid[2] * block[2], grid[1] * block[1], grid[0] * block[0], 4), np.int32)
    z, y, x = np.meshgrid(*(np.arange(g * b) for g, b in zip(grid[::-1], block[::-1])),
                          indexing="ij")
    b = np.array(block)
    np.testing.assert_array_equal(got[..., 0], x % b[0] + 10 * (y % b[1]) + 100 * (z % b[2]))
    np.testing.assert_array_equal(got[..., 1], x // b[0] + 10 * (y // b[1]) + 100 * (z // b[2]))
    np.testing.assert_array_equal(got[..., 2], 4 + 20 + 300)
    np.testing.assert_array_equal(got[..., 3], 3 + 20 + 2000)
    assert mem.get(counter, 1, np.uint32)[0] % total == 0  # one count per thread per launch


def test_many_host_threads_and_streams(driver: Driver, compile_kernel: Compile) -> None:
    module = compile_kernel(driver, "elementwise.cu")
    saxpy = module.get_function("saxpy")
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        try:
            arrays = DeviceArrays(driver)
            arrays.stream = driver.create_stream(0)
            rng = np.random.default_rng(seed)
            for _ in range(15):
                n = int(rng.integers(1, 5000))
                x = rng.standard_normal(n).astype(np.float32)
                y = rng.standard_normal(n).astype(np.float32)
                px, py = arrays.put(x), arrays.put(y)
                driver.launch(saxpy, (int(rng.integers(1, 8)), 1, 1), (64, 1, 1),
                              (np.float32(seed), px, py, np.int64(n)), 0, arrays.stream)
                np.testing.assert_array_equal(arrays.get(py, n, np.float32),
                                              np.float32(seed) * x + y)
            driver.stream_synchronize(arrays.stream)
            for index, address in arrays.allocations:
                driver.free(index, address)
            driver.destroy_stream(arrays.stream)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[0]


def test_a_kernel_error_stays_on_its_stream(sim: SimDriver, compile_kernel: Compile) -> None:
    failing, healthy = DeviceArrays(sim), DeviceArrays(sim)
    failing.stream, healthy.stream = sim.create_stream(0), sim.create_stream(0)
    module = compile_kernel(sim, "failures.cu")
    x = failing.zeros(64 * 4)
    y = healthy.put(np.arange(8, dtype=np.int32))
    after = sim.create_event(0)
    sim.launch(module.get_function("trap_kernel"), 1, 8, (x,), 0, failing.stream)
    sim.event_record(after, failing.stream)
    sim.launch(module.get_function("divide"), 1, 8, (y, np.int32(2)), 0, healthy.stream)
    np.testing.assert_array_equal(healthy.get(y, 8, np.int32), np.arange(8) // 2)
    with pytest.raises(KernelError, match="__trap"):
        sim.event_synchronize(after)  # an event after the failure reports it
    with pytest.raises(KernelError, match="__trap"):
        sim.stream_synchronize(failing.stream)
    sim.stream_synchronize(failing.stream)  # reported once; the stream works again
    sim.launch(module.get_function("divide"), 1, 8, (y, np.int32(1)), 0, failing.stream)
    sim.stream_synchronize(failing.stream)
    for arrays in (failing, healthy):
        arrays.free_all()
        sim.destroy_stream(arrays.stream)
    with pytest.raises(ValueError, match="destroyed"):
        sim.launch(module.get_function("divide"), 1, 8, (y, np.int32(1)), 0, failing.stream)


def test_default_stream_is_shared_and_owned(sim: SimDriver) -> None:
    assert sim.default_stream(0) is sim.default_stream(0)
    assert sim.default_stream(1) is not sim.default_stream(0)
    assert sim.stream_ptr(sim.default_stream(0)) != sim.stream_ptr(sim.default_stream(1))
    with pytest.raises(ValueError, match="cannot be destroyed"):
        sim.destroy_stream(sim.default_stream(0))


def test_a_dropped_stream_ends_its_thread(sim: SimDriver) -> None:
    import gc

    def stream_threads() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name.startswith("hxsim-stream-")}

    before = stream_threads()  # (streams of earlier tests may end meanwhile)
    stream = sim.create_stream(0)
    sim.stream_synchronize(stream)
    (thread,) = stream_threads() - before
    del stream
    gc.collect()
    thread.join(timeout=5)
    assert not thread.is_alive()




def test_the_collector_may_queue_work_and_free_memory_inside_the_drivers_bookkeeping(
        kernel_cache: KernelCache) -> None:
    """A finalizer may queue work on a simulated stream (a buffer's records an event where other
    streams used its block) or free device memory (past a memory limit), and the collector runs
    finalizers at any allocation: also while this thread waits in that stream's `synchronize`,
    or is inside the driver's memory bookkeeping (a failed malloc's error). In a subprocess: a
    deadlock times out."""
    code = """
        import gc
        import threading
        import time
        from hxarray.backends.cuda.sim import SimDriver

        class Kept:
            pass

        driver = SimDriver(memory=1 << 20)
        stream = driver.create_stream(0)
        spare = [driver.malloc(0, 64) for _ in range(100)]
        events, kept = [], []
        every = False

        def as_a_finalizer_would(phase, info):
            if not every or threading.current_thread() is not threading.main_thread():
                return
            if phase == "start":
                if spare:
                    driver.free(0, spare.pop())
                events.append(driver.create_event(0))
                driver.event_record(events[-1], stream)
            else:  # objects kept past the threshold: this thread's next allocation collects
                for _ in range(4):
                    kept.append(Kept())

        gc.callbacks.append(as_a_finalizer_would)
        gc.set_threshold(1)
        for _ in range(3):
            stream.submit(lambda: time.sleep(0.05))  # work for synchronize to wait for
            every = True
            gc.collect(0)
            driver.stream_synchronize(stream)  # (waiting allocates inside the stream's lock)
            try:
                driver.malloc(0, 2 << 20)  # (its error is allocated inside the driver's lock)
            except MemoryError:
                pass
            every = False
        driver.stream_synchronize(stream)
        assert len(spare) < 100 and all(driver.event_query(event) for event in events)
    """
    subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=True, timeout=120,
                   env={**os.environ, "HXARRAY_KERNEL_CACHE": str(kernel_cache.directory)})
