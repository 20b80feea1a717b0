"""A CUDA driver whose kernels do nothing (`HXARRAY_CUDA_DRIVER=null`), after tinygrad's NULL
device: compiling, launching, streams and events cost nothing, so that timing an operation on
`cuda:0` measures hxarray's own host work alone (`make bench-cuda` reports it per operation).

Results hold no computed values. Memory is real host memory (uninitialised; copies in and out do
copy bytes), so that nothing can fault: an array's values are whatever was last copied into its
memory. The device describes itself as an H100 (SXM) so that launch configurations are a GPU's;
like the simulator, it is not a GPU (`simulated`): CuPy's library functions are not used.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from .driver import (
    DeviceProperties,
    Driver,
    Function,
    FunctionAttributes,
    Module,
)

__all__ = ["NullDriver"]

_PROPERTIES = DeviceProperties(
    name="hxarray null CUDA device (kernels do nothing)", compute_capability=(9, 0),
    multiprocessor_count=132, max_threads_per_block=1024, max_threads_per_multiprocessor=2048,
    max_block_dims=(1024, 1024, 64), max_grid_dims=(2**31 - 1, 65535, 65535), warp_size=32,
    shared_memory_per_block=48 * 1024, shared_memory_per_multiprocessor=228 * 1024,
    registers_per_block=65536, registers_per_multiprocessor=65536, total_memory=80 * 2**30,
    clock_rate_khz=1_980_000, memory_clock_rate_khz=2_619_000, memory_bus_width=5120,
    l2_cache_size=50 * 2**20, simulated=True)

_ATTRIBUTES = FunctionAttributes(
    max_threads_per_block=1024, num_regs=0, shared_size_bytes=0, const_size_bytes=0,
    local_size_bytes=0, max_dynamic_shared_size_bytes=48 * 1024, ptx_version=90,
    binary_version=90)


class NullFunction(Function):
    params = None  # nothing is compiled: the arguments are not checked against a signature

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def attributes(self) -> FunctionAttributes:
        return _ATTRIBUTES


class NullModule(Module):
    def get_function(self, name: str) -> Function:
        return NullFunction(name)


class NullHandle:
    """A stream or an event: its device index; all its work is always done."""

    def __init__(self, index: int) -> None:
        self.index = index


class NullDriver(Driver):
    """One device whose kernels do nothing (see the module docstring)."""

    simulated = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.launches = 0  # kernels launched (that did nothing)
        self._memory: dict[int, np.ndarray] = {}  # address -> the host bytes behind it
        self._used = 0
        self._default = NullHandle(0)
        self._ids = itertools.count(1)

    def _index(self, index: int) -> int:
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise TypeError(f"a device index is an int, got {type(index).__name__}")
        if index != 0:
            raise ValueError(f"cuda:{index} does not exist: the null driver has one device, "
                             "cuda:0")
        return 0

    # -- devices ----------------------------------------------------------------------------------
    def device_count(self) -> int:
        return 1

    def properties(self, index: int) -> DeviceProperties:
        self._index(index)
        return _PROPERTIES

    def mem_info(self, index: int) -> tuple[int, int]:
        self._index(index)
        return _PROPERTIES.total_memory - self._used, _PROPERTIES.total_memory

    def synchronize(self, index: int) -> None:
        self._index(index)

    # -- memory -----------------------------------------------------------------------------------
    def malloc(self, index: int, nbytes: int) -> int:
        self._index(index)
        if nbytes > _PROPERTIES.total_memory - self._used:
            raise MemoryError(f"out of memory on cuda:{index} (null driver): {nbytes} bytes "
                              f"requested, {_PROPERTIES.total_memory - self._used} free")
        memory = np.empty(nbytes + 255, np.uint8)
        address = (memory.ctypes.data + 255) & ~255
        with self._lock:
            self._memory[address] = memory
            self._used += nbytes
        return address

    def managed_memory(self, index: int) -> bool:
        self._index(index)
        return True

    def malloc_managed(self, index: int, nbytes: int) -> int:
        return self.malloc(index, nbytes)  # (host memory, as all of the null driver's)

    def free(self, index: int, address: int) -> None:
        self._index(index)
        with self._lock:
            memory = self._memory.pop(address, None)
            if memory is None:
                raise ValueError(f"0x{address:x} is not an allocation of cuda:{index}")
            self._used -= memory.nbytes - 255

    def memset(self, address: int, value: int, nbytes: int, stream: Any) -> None:
        ctypes.memset(address, value, nbytes)

    def copy_host_to_device(self, dst: int, src: Any, nbytes: int, stream: Any) -> None:
        ctypes.memmove(dst, np.ascontiguousarray(src).ctypes.data, nbytes)

    def copy_device_to_host(self, dst: np.ndarray, src: int, nbytes: int, stream: Any) -> None:
        ctypes.memmove(dst.ctypes.data, src, nbytes)

    def copy_device_to_device(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        ctypes.memmove(dst, src, nbytes)

    def copy_peer(self, dst: int, dst_index: int, src: int, src_index: int, nbytes: int,
                  stream: Any) -> None:
        ctypes.memmove(dst, src, nbytes)

    def can_access_peer(self, index: int, peer: int) -> bool:
        return False

    def host_alloc(self, nbytes: int) -> np.ndarray:
        return np.empty(nbytes, np.uint8)

    def host_free(self, array: np.ndarray) -> None:
        """Nothing to do: the memory goes when the last view of it does."""

    # -- streams and events -----------------------------------------------------------------------
    def create_stream(self, index: int) -> Any:
        return NullHandle(self._index(index))

    def default_stream(self, index: int) -> Any:
        self._index(index)
        return self._default

    def destroy_stream(self, stream: Any) -> None:
        """Nothing to release."""

    def stream_synchronize(self, stream: Any) -> None:
        """Nothing is ever queued."""

    def stream_query(self, stream: Any) -> bool:
        return True

    def stream_wait_event(self, stream: Any, event: Any) -> None:
        """Nothing to wait for."""

    def stream_ptr(self, stream: Any) -> int:
        return id(stream)

    def create_event(self, index: int, timing: bool = True) -> Any:
        return NullHandle(self._index(index))

    def destroy_event(self, event: Any) -> None:
        """Nothing to release."""

    def event_record(self, event: Any, stream: Any) -> None:
        """Recorded and complete at once."""

    def event_synchronize(self, event: Any) -> None:
        """Complete at once."""

    def event_query(self, event: Any) -> bool:
        return True

    def event_elapsed_ms(self, start: Any, end: Any) -> float:
        return 0.0

    # -- kernels ----------------------------------------------------------------------------------
    def compile(self, index: int, source: str, options: Sequence[str] = (),
                name_expressions: Sequence[str] = ()) -> Module:
        self._index(index)
        return NullModule()

    def launch(self, function: Function, grid: tuple[int, int, int],
               block: tuple[int, int, int], args: Sequence[np.generic], shared_mem: int,
               stream: Any) -> None:
        """Nothing runs (and nothing is checked: the configuration is the real drivers' to
        judge); counted in `launches`."""
        with self._lock:
            self.launches += 1
