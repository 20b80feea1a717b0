"""Fixtures for the CUDA runtime tests: drivers (the simulator always, CuPy when a GPU is present),
kernels from kernels/*.cu verified by NVRTC before they run, and one kernel cache for the session
shared by the xdist workers and by both `make test` passes (under pytest's cache directory)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from hxarray.backends.cuda import nvrtc
from hxarray.backends.cuda.driver import Driver, Module
from hxarray.backends.cuda.sim import SimDriver
from hxarray.hal.kernel_cache import KernelCache

KERNELS = Path(__file__).resolve().parent / "kernels"


def gpu_available() -> bool:
    """Whether CuPy sees a GPU (the CuPy-driver tests run only then)."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


requires_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU and CuPy")


def source(name: str) -> str:
    return (KERNELS / name).read_text()


@pytest.fixture(scope="session")
def kernel_cache(request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory) -> KernelCache:
    configured = os.environ.get("HXARRAY_TEST_KERNEL_CACHE")
    cache = getattr(request.config, "cache", None)  # None with -p no:cacheprovider
    if configured:
        directory = Path(configured)
    elif cache is not None:
        directory = Path(cache.mkdir("hxarray-kernels"))
        directory.chmod(0o700)  # made under the umask: hxarray refuses a group-writable cache
    else:
        directory = tmp_path_factory.mktemp("hxarray-kernels")
    return KernelCache(directory)


@pytest.fixture(scope="session")
def sim(kernel_cache: KernelCache) -> SimDriver:
    """The simulator with two devices, as `HXARRAY_CUDA_DRIVER=sim` with
    `HXARRAY_CUDA_SIM_DEVICES=2` would give."""
    return SimDriver(devices=2, check=False, watchdog=60.0, cache=kernel_cache)


@pytest.fixture(scope="session", params=["sim", "cupy-on-sim",
                                        pytest.param("cupy", marks=requires_gpu)])
def driver(request: pytest.FixtureRequest, sim: SimDriver) -> Iterator[Driver]:
    """Every driver this machine can run: the same test runs on the simulator and on a GPU.
    "cupy-on-sim" is driver_cupy.py's code over a stand-in for CuPy backed by the simulator
    (fake_cupy.py), so the GPU driver's own logic runs here too."""
    if request.param == "sim":
        yield sim
    elif request.param == "cupy-on-sim":
        from .fake_cupy import cupy_driver_on

        yield cupy_driver_on(sim)
    else:
        from hxarray.backends.cuda.driver_cupy import CupyDriver

        yield CupyDriver()


@pytest.fixture(scope="session")
def compile_kernel(kernel_cache: KernelCache) -> Callable[..., Module]:
    """compile_kernel(driver, "file.cu", options=(), name_expressions=()): NVRTC-verifies the
    source (sm_80, cached) so that a kernel the host compiler accepts but NVRTC rejects fails,
    then compiles it with the driver; without fused multiply-adds (`--fmad=false`), so that a
    GPU rounds each operation as the simulator and numpy's expected values do."""
    def compile(driver: Driver, name: str, options: Sequence[str] = (),
                name_expressions: Sequence[str] = ()) -> Module:
        code, options = source(name), ("--fmad=false", *options)
        nvrtc.verify(code, name, options, name_expressions, archs=("sm_80",), cache=kernel_cache)
        return driver.compile(0, code, options, name_expressions)

    return compile


class DeviceArrays:
    """Device allocations made from numpy arrays, freed at teardown. `put` and `zeros` wait for
    their copy or memset (made on the device's default stream), so that the memory is ready for
    work on any stream: a non-blocking stream is not ordered after the default one (a slow fill
    on one raced the memset of its output on the default stream)."""

    def __init__(self, driver: Driver, index: int = 0) -> None:
        self.driver = driver
        self.index = index
        self.stream = driver.default_stream(index)
        self.allocations: list[tuple[int, int]] = []

    def empty(self, nbytes: int, index: int | None = None) -> int:
        index = self.index if index is None else index
        address = self.driver.malloc(index, max(int(nbytes), 1))
        self.allocations.append((index, address))
        return address

    def put(self, array: np.ndarray, index: int | None = None) -> np.uintp:
        array = np.ascontiguousarray(array)
        address = self.empty(array.nbytes, index)
        self.driver.copy_host_to_device(address, array, array.nbytes, self.stream)
        self.driver.stream_synchronize(self.stream)
        return np.uintp(address)

    def zeros(self, nbytes: int, index: int | None = None) -> np.uintp:
        address = self.empty(nbytes, index)
        self.driver.memset(address, 0, nbytes, self.stream)
        self.driver.stream_synchronize(self.stream)
        return np.uintp(address)

    def get(self, address: int, shape: int | tuple[int, ...], dtype: object,
            stream: object = None) -> np.ndarray:
        out = np.empty(shape, dtype=dtype)
        stream = self.stream if stream is None else stream
        self.driver.copy_device_to_host(out, int(address), out.nbytes, stream)
        self.driver.stream_synchronize(stream)
        return out

    def free_all(self) -> None:
        self.driver.synchronize(self.index)
        for index, address in self.allocations:
            self.driver.free(index, address)
        self.allocations.clear()


@pytest.fixture
def mem(driver: Driver) -> Iterator[DeviceArrays]:
    arrays = DeviceArrays(driver)
    yield arrays
    arrays.free_all()


@pytest.fixture
def sim_mem(sim: SimDriver) -> Iterator[DeviceArrays]:
    arrays = DeviceArrays(sim)
    yield arrays
    try:
        arrays.free_all()
    except Exception:
        for index, address in arrays.allocations:
            sim.free(index, address)
