"""A stand-in for the parts of CuPy that driver_cupy.py uses, running on the simulator.

It lets the driver-level tests run through `CupyDriver`'s own code without a GPU (in the way of
tinygrad's MOCKGPU), so a wrong argument order or a wrong memcpy kind fails a test. It follows the
documented semantics of each CuPy call it imitates: `runtime.memcpyAsync(dst, src, size, kind,
stream_ptr)` with raw addresses, a current device set by `cuda.Device`, streams identified by
`ptr`. test_driver_cupy.py separately checks the names and signatures against the real CuPy.
"""

from __future__ import annotations

import ctypes
import importlib.util
import re
import sys
import threading
import types
from pathlib import Path
from typing import Any

import numpy as np

from hxarray.backends.codegen.compiler import CompileError
from hxarray.backends.cuda.sim import SimDriver

_state = threading.local()


def _current() -> int:
    return getattr(_state, "device", 0)


def _host(address: int, size: int) -> np.ndarray:
    return np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(address))


def supported_floor() -> tuple[int, int]:
    """The oldest CuPy hxarray supports: the floor of `cupy-cuda12x` in pyproject.toml (every
    extra names the same one)."""
    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    floors = set(re.findall(r'"cupy-cuda12x>=(\d+)\.(\d+)', text))
    assert len(floors) == 1, f"pyproject.toml names different CuPy floors: {sorted(floors)}"
    major, minor = floors.pop()
    return int(major), int(minor)


def refuses(version: tuple[int, int], arg: Any) -> str | None:
    """Why CuPy `version`'s kernel launch refuses the argument (None where it takes it), from
    cupy/cuda/function.pyx: CuPy 13 packs numpy scalars of the numeric and bool dtypes only
    (numpy.void: `TypeError: Unsupported type`); 14.0 packs numpy.void structs as raw bytes but
    asserts they are smaller than 32 bytes; 14.1 takes them at any size."""
    if not isinstance(arg, np.generic):
        return f"Unsupported type {type(arg)}"
    if isinstance(arg, np.void):
        if version < (14, 0):
            return f"Unsupported type {type(arg)} (CuPy {version[0]}.{version[1]})"
        if version < (14, 1) and arg.dtype.itemsize >= 32:
            return (f"a {arg.dtype.itemsize}-byte numpy.void argument fails CuPy 14.0's "
                    "assertion (fewer than 32 bytes)")
    return None


def make_fake_cupy(sim: SimDriver, version: tuple[int, int] | None = None) -> types.ModuleType:
    """A module object shaped like `cupy` for driver_cupy.py, over `sim`, taking kernel
    arguments as CuPy `version` does (default: the oldest supported)."""
    version = version or supported_floor()
    streams: dict[int, Any] = {}

    class CUDARuntimeError(RuntimeError):
        def __init__(self, status: int, message: str) -> None:
            super().__init__(message)
            self.status = status

    class CompileException(Exception):
        pass

    class CUDADriverError(RuntimeError):
        pass

    def _wrap_errors(call: Any) -> Any:
        try:
            return call()
        except MemoryError as exc:
            raise CUDARuntimeError(2, f"cudaErrorMemoryAllocation: {exc}") from exc

    runtime = types.SimpleNamespace(
        CUDARuntimeError=CUDARuntimeError, memcpyHostToDevice=1, memcpyDeviceToHost=2,
        memcpyDeviceToDevice=3)
    runtime.getDeviceCount = sim.device_count

    def getDeviceProperties(device: int) -> dict[str, Any]:
        p = sim.properties(device)
        return {"name": p.name.encode(), "major": p.compute_capability[0],
                "minor": p.compute_capability[1], "multiProcessorCount": p.multiprocessor_count,
                "maxThreadsPerBlock": p.max_threads_per_block,
                "maxThreadsPerMultiProcessor": p.max_threads_per_multiprocessor,
                "maxThreadsDim": p.max_block_dims, "maxGridSize": p.max_grid_dims,
                "warpSize": p.warp_size, "sharedMemPerBlock": p.shared_memory_per_block,
                "sharedMemPerMultiprocessor": p.shared_memory_per_multiprocessor,
                "regsPerBlock": p.registers_per_block,
                "regsPerMultiprocessor": p.registers_per_multiprocessor,
                "totalGlobalMem": p.total_memory, "clockRate": p.clock_rate_khz,
                "memoryClockRate": p.memory_clock_rate_khz, "memoryBusWidth": p.memory_bus_width,
                "l2CacheSize": p.l2_cache_size}

    runtime.getDeviceProperties = getDeviceProperties

    def deviceGetAttribute(attribute: int, device: int) -> int:
        p = sim.properties(device)
        known = {13: p.clock_rate_khz, 36: p.memory_clock_rate_khz, 37: p.memory_bus_width}
        if attribute not in known:
            raise CUDARuntimeError(1, "cudaErrorInvalidValue")
        return known[attribute]

    runtime.deviceGetAttribute = deviceGetAttribute
    runtime.memGetInfo = lambda: sim.mem_info(_current())
    runtime.deviceSynchronize = lambda: sim.synchronize(_current())
    runtime.malloc = lambda size: _wrap_errors(lambda: sim.malloc(_current(), size))
    runtime.free = lambda ptr: sim.free(_current(), ptr)
    runtime.memsetAsync = lambda ptr, value, size, stream: sim.memset(ptr, value, size,
                                                                      streams[stream])
    runtime.deviceCanAccessPeer = lambda a, b: int(sim.can_access_peer(a, b))

    def memcpyAsync(dst: int, src: int, size: int, kind: int, stream: int) -> None:
        s = streams[stream]
        if kind == 1:
            sim.copy_host_to_device(dst, _host(src, size), size, s)
        elif kind == 2:
            sim.copy_device_to_host(_host(dst, size), src, size, s)
        elif kind == 3:
            sim.copy_device_to_device(dst, src, size, s)
        else:
            raise CUDARuntimeError(21, f"cudaErrorInvalidMemcpyDirection: kind {kind}")

    def memcpyPeerAsync(dst: int, dst_device: int, src: int, src_device: int, size: int,
                        stream: int) -> None:
        sim.copy_peer(dst, dst_device, src, src_device, size, streams[stream])

    runtime.memcpyAsync = memcpyAsync
    runtime.memcpyPeerAsync = memcpyPeerAsync

    class Device:
        def __init__(self, device: int | None = None) -> None:
            self.id = _current() if device is None else device

        def __enter__(self) -> Device:
            self._previous = _current()
            _state.device = self.id
            return self

        def __exit__(self, *exc: object) -> None:
            _state.device = self._previous

    class Stream:
        def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False,
                     priority: int | None = None) -> None:
            assert non_blocking and not null, "driver_cupy uses non-blocking streams"
            self._sim = sim.create_stream(_current())
            self.ptr = sim.stream_ptr(self._sim)
            streams[self.ptr] = self._sim
            self._captured: list[tuple[Any, ...]] | None = None  # while capturing: the launches

        def begin_capture(self, mode: int | None = None) -> None:
            assert self._captured is None, "a capture is already under way"
            self._captured = []

        def end_capture(self) -> Graph:
            assert self._captured is not None, "end_capture without begin_capture"
            graph, self._captured = Graph(self._captured), None
            return graph

        def synchronize(self) -> None:
            try:
                sim.stream_synchronize(self._sim)
            except Exception as exc:
                raise CUDARuntimeError(700, f"cudaErrorIllegalAddress: {exc}") from exc

        @property
        def done(self) -> bool:
            return sim.stream_query(self._sim)

        def wait_event(self, event: Event) -> None:
            sim.stream_wait_event(self._sim, event._sim)

    class Graph:
        """cupy.cuda.Graph: the kernel launches captured on a stream (queued, not run, while
        it captured), launched again in order on the stream given."""

        def __init__(self, launches: list[tuple[Any, ...]]) -> None:
            self._launches = launches

        def launch(self, stream: Stream | None = None) -> None:
            assert stream is not None, "driver_cupy launches graphs on explicit streams"
            for function, grid, block, args, shared_mem in self._launches:
                sim.launch(function, grid, block, args, shared_mem, stream._sim)

    class Event:
        def __init__(self, block: bool = False, disable_timing: bool = False,
                     interprocess: bool = False) -> None:
            self._sim = sim.create_event(_current(), timing=not disable_timing)

        def record(self, stream: Stream | None = None) -> None:
            assert stream is not None, "driver_cupy records on explicit streams"
            sim.event_record(self._sim, stream._sim)

        def synchronize(self) -> None:
            try:
                sim.event_synchronize(self._sim)
            except Exception as exc:
                raise CUDARuntimeError(700, f"cudaErrorIllegalAddress: {exc}") from exc

        @property
        def done(self) -> bool:
            return sim.event_query(self._sim)

    class RawKernel:
        def __init__(self, function: Any) -> None:
            self._function = function

        @property
        def attributes(self) -> dict[str, int]:
            a = self._function.attributes
            return {"max_threads_per_block": a.max_threads_per_block, "num_regs": a.num_regs,
                    "shared_size_bytes": a.shared_size_bytes,
                    "const_size_bytes": a.const_size_bytes,
                    "local_size_bytes": a.local_size_bytes,
                    "max_dynamic_shared_size_bytes": a.max_dynamic_shared_size_bytes,
                    "ptx_version": a.ptx_version, "binary_version": a.binary_version,
                    "cache_mode_ca": 0, "preferred_shared_memory_carveout": -1}

        def __call__(self, grid: tuple, block: tuple, args: tuple, *, shared_mem: int = 0,
                     stream: Stream | None = None) -> None:
            assert isinstance(grid, tuple) and isinstance(block, tuple)
            for a in args:
                why = refuses(version, a)
                if why is not None:
                    raise TypeError(why)
            if stream._captured is not None:  # (CUDA records it into the graph instead)
                stream._captured.append((self._function, grid, block, args, shared_mem))
                return
            sim.launch(self._function, grid, block, args, shared_mem, stream._sim)

    class RawModule:
        def __init__(self, code: str | None = None, *, path: str | None = None,
                     options: tuple = (), backend: str = "nvrtc",
                     translate_cucomplex: bool = False, enable_cooperative_groups: bool = False,
                     name_expressions: Any = None, jitify: Any = None) -> None:
            assert isinstance(options, tuple)
            self._code, self._options = code, options
            self._expressions = tuple(name_expressions or ())
            self._module = None

        def compile(self, log_stream: Any = None) -> None:
            try:
                self._module = sim.compile(_current(), self._code, self._options,
                                           self._expressions)
            except CompileError as exc:
                raise CompileException(str(exc)) from exc

        def get_function(self, name: str) -> RawKernel:
            if self._module is None:
                self.compile()
            try:
                return RawKernel(self._module.get_function(name))
            except KeyError as exc:
                raise CUDADriverError(f"CUDA_ERROR_NOT_FOUND: {name}") from exc

    def get_elapsed_time(start: Event, end: Event) -> float:
        try:
            return sim.event_elapsed_ms(start._sim, end._sim)
        except RuntimeError as exc:
            raise CUDARuntimeError(600, f"cudaErrorNotReady: {exc}") from exc

    cuda = types.SimpleNamespace(
        runtime=runtime, Device=Device, Stream=Stream, Event=Event,
        graph=types.SimpleNamespace(Graph=Graph),
        get_elapsed_time=get_elapsed_time, alloc_pinned_memory=lambda size: bytearray(size),
        compiler=types.SimpleNamespace(CompileException=CompileException),
        driver=types.SimpleNamespace(CUDADriverError=CUDADriverError))
    module = types.ModuleType("cupy")
    module.cuda = cuda  # type: ignore[attr-defined]
    module.RawModule = RawModule  # type: ignore[attr-defined]
    module.RawKernel = RawKernel  # type: ignore[attr-defined]
    return module


def stand_in(driver: Any) -> Any:
    """The stand-in CuPy module a driver from `cupy_driver_on` calls."""
    return type(driver).compile.__globals__["cupy"]


def cupy_driver_on(sim: SimDriver, version: tuple[int, int] | None = None) -> Any:
    """A CupyDriver (driver_cupy.py's code, loaded afresh) whose `cupy` is the stand-in (taking
    arguments as CuPy `version`, default the oldest supported), compiling through the stand-in's
    RawModule."""
    import hxarray.backends.cuda.driver_cupy as real

    spec = importlib.util.spec_from_file_location("hxarray.backends.cuda._driver_cupy_on_sim",
                                                  Path(real.__file__))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved = sys.modules.get("cupy")
    sys.modules["cupy"] = make_fake_cupy(sim, version)
    try:
        spec.loader.exec_module(module)
    finally:
        if saved is not None:
            sys.modules["cupy"] = saved
        else:
            sys.modules.pop("cupy", None)
    driver = module.CupyDriver()
    driver.compile_route = "rawmodule"  # the simulator runs CUDA C, not cubins
    return driver
