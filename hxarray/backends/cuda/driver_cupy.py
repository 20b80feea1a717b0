"""The CUDA driver over CuPy: each method is a few calls of `cupy.cuda.runtime`, `cupy.cuda.Stream`
/`Event` or `cupy.RawModule`. Kept thin on purpose: this file cannot run without a GPU, so
`hxarray_tests/cuda/test_driver_cupy.py` checks every CuPy name it uses, and the arity of every
call, against the installed CuPy. Naming rule for that check: CuPy objects live in variables
called `cstream`, `cevent`, `cmodule` and `ckernel`, and CuPy's functions are spelled `cupy.…`.

Kernels are compiled by CuPy's NVRTC call (`cupy.cuda.compiler.compile_using_nvrtc`, with CuPy's
options for C++17 and its headers) and loaded by path, cached in hxarray's kernel cache, rather
than through `cupy.RawModule(code=...)`: that route appends `-ftz=true` to every kernel's
options, which flushes float32 subnormals to zero (numpy keeps them).
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cupy
import numpy as np

from ...hal.kernel_cache import KernelCache, default_cache_dir
from ..codegen.compiler import CompileError, cupy_include_dirs
from .driver import (
    DeviceProperties,
    Driver,
    Function,
    FunctionAttributes,
    KernelError,
    Launch,
    Module,
    check_launch,
)

__all__ = ["CupyDriver"]

_CUDA_ERROR_MEMORY_ALLOCATION = 2
_ATTACH_GLOBAL = 1  # cudaMemAttachGlobal: any stream may use a managed allocation
_CPU_DEVICE_ID = -1  # cudaCpuDeviceId: the host, as a prefetch's destination


class CupyStream:
    """A non-blocking CuPy stream and its device."""

    def __init__(self, index: int, cstream: Any, owned: bool) -> None:
        self.index = index
        self.cstream = cstream
        self.owned = owned


class CupyEvent:
    def __init__(self, index: int, cevent: Any, timing: bool) -> None:
        self.index = index
        self.cevent = cevent
        self.timing = timing


class CupyFunction(Function):
    def __init__(self, name: str, ckernel: Any, index: int) -> None:
        self.name = name
        self.ckernel = ckernel
        self.index = index
        self.params = None  # CuPy does not expose the signature

    @functools.cached_property
    def attributes(self) -> FunctionAttributes:  # (ten driver calls: read once)
        with cupy.cuda.Device(self.index):
            a = self.ckernel.attributes
        return FunctionAttributes(
            max_threads_per_block=a["max_threads_per_block"], num_regs=a["num_regs"],
            shared_size_bytes=a["shared_size_bytes"], const_size_bytes=a["const_size_bytes"],
            local_size_bytes=a["local_size_bytes"],
            max_dynamic_shared_size_bytes=a["max_dynamic_shared_size_bytes"],
            ptx_version=a["ptx_version"], binary_version=a["binary_version"])


class CupyModule(Module):
    """A loaded module; `names` maps the name expressions of a module loaded by path to their
    lowered names (CuPy maps those of the modules it compiles)."""

    def __init__(self, cmodule: Any, index: int, names: dict[str, str] | None = None) -> None:
        self.cmodule = cmodule
        self.index = index
        self.names = names or {}

    def get_function(self, name: str) -> Function:
        with cupy.cuda.Device(self.index):
            try:
                ckernel = self.cmodule.get_function(self.names.get(name, name))
            except cupy.cuda.driver.CUDADriverError as exc:
                raise KeyError(f"no kernel {name!r} in the module ({exc})") from None
        return CupyFunction(name, ckernel, self.index)


@functools.cache
def _binaries() -> Path:
    """The directory of this process's compiled modules, which CuPy loads by path."""
    directory = Path(tempfile.mkdtemp(prefix="hxarray-modules-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return directory


def _kernel_error(exc: Exception) -> KernelError:
    return KernelError(f"a kernel or copy failed on the GPU: {exc}")


class CupyDriver(Driver):
    """CUDA devices through CuPy (a GPU is needed)."""

    simulated = False

    def __init__(self, cache: KernelCache | None = None) -> None:
        self.cache = cache if cache is not None else KernelCache(default_cache_dir())
        self._count = cupy.cuda.runtime.getDeviceCount()
        self._lock = threading.Lock()
        self._defaults: dict[int, CupyStream] = {}
        self._props: dict[int, DeviceProperties] = {}

    def _index(self, index: int) -> int:
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise TypeError(f"a device index is an int, got {type(index).__name__}")
        if not 0 <= index < self._count:
            raise ValueError(f"cuda:{index} does not exist: CuPy sees {self._count} GPU(s)")
        return int(index)

    # -- devices ----------------------------------------------------------------------------
    def device_count(self) -> int:
        return self._count

    def properties(self, index: int) -> DeviceProperties:
        index = self._index(index)
        if index not in self._props:
            p = cupy.cuda.runtime.getDeviceProperties(index)
            name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
            self._props[index] = DeviceProperties(
                name=name, compute_capability=(p["major"], p["minor"]),
                multiprocessor_count=p["multiProcessorCount"],
                max_threads_per_block=p["maxThreadsPerBlock"],
                max_threads_per_multiprocessor=p["maxThreadsPerMultiProcessor"],
                max_block_dims=tuple(p["maxThreadsDim"]), max_grid_dims=tuple(p["maxGridSize"]),
                warp_size=p["warpSize"], shared_memory_per_block=p["sharedMemPerBlock"],
                shared_memory_per_multiprocessor=p["sharedMemPerMultiprocessor"],
                registers_per_block=p["regsPerBlock"],
                registers_per_multiprocessor=p["regsPerMultiprocessor"],
                total_memory=p["totalGlobalMem"],
                clock_rate_khz=self._attribute(p, "clockRate", index),
                memory_clock_rate_khz=self._attribute(p, "memoryClockRate", index),
                memory_bus_width=self._attribute(p, "memoryBusWidth", index),
                l2_cache_size=p["l2CacheSize"], simulated=False)
        return self._props[index]

    # cudaDeviceAttr numbers of the properties CUDA 13 took out of cudaDeviceProp
    _ATTRIBUTES = {"clockRate": 13, "memoryClockRate": 36, "memoryBusWidth": 37}

    @classmethod
    def _attribute(cls, p: dict[str, Any], key: str, index: int) -> int:
        """cudaDeviceProp's `key`, or where CUDA 13's runtime leaves it out (or 0) the device
        attribute of the same meaning; 0 if neither is known."""
        value = p.get(key) or 0
        if not value:
            try:
                value = cupy.cuda.runtime.deviceGetAttribute(cls._ATTRIBUTES[key], index)
            except (AttributeError, cupy.cuda.runtime.CUDARuntimeError):
                value = 0
        return int(value)

    def mem_info(self, index: int) -> tuple[int, int]:
        with cupy.cuda.Device(self._index(index)):
            free, total = cupy.cuda.runtime.memGetInfo()
        return int(free), int(total)

    def synchronize(self, index: int) -> None:
        with cupy.cuda.Device(self._index(index)):
            try:
                cupy.cuda.runtime.deviceSynchronize()
            except cupy.cuda.runtime.CUDARuntimeError as exc:
                raise _kernel_error(exc) from exc

    # -- memory -------------------------------------------------------------------------------
    def malloc(self, index: int, nbytes: int) -> int:
        index = self._index(index)
        with cupy.cuda.Device(index):
            try:
                return int(cupy.cuda.runtime.malloc(max(int(nbytes), 1)))
            except cupy.cuda.runtime.CUDARuntimeError as exc:
                if exc.status == _CUDA_ERROR_MEMORY_ALLOCATION:
                    free, total = cupy.cuda.runtime.memGetInfo()
                    raise MemoryError(f"cuda:{index} is out of memory: {nbytes} bytes requested, "
                                      f"{free} of {total} free") from exc
                raise

    def managed_memory(self, index: int) -> bool:
        index = self._index(index)
        attribute = getattr(cupy.cuda.runtime, "cudaDevAttrManagedMemory", 83)
        return bool(cupy.cuda.runtime.deviceGetAttribute(attribute, index))

    def malloc_managed(self, index: int, nbytes: int) -> int:
        index = self._index(index)
        with cupy.cuda.Device(index):
            free, total = cupy.cuda.runtime.memGetInfo()
            if nbytes > free:  # paged in on use, more than the device holds can hang the GPU
                raise MemoryError(f"cuda:{index}: {nbytes} bytes of managed memory requested, "
                                  f"{free} of {total} free (hxarray refuses more managed memory "
                                  "than the device has free)")
            return int(cupy.cuda.runtime.mallocManaged(max(int(nbytes), 1), _ATTACH_GLOBAL))

    def prefetch(self, address: int, nbytes: int, index: int | None, stream: Any) -> None:
        target = _CPU_DEVICE_ID if index is None else self._index(index)
        cupy.cuda.runtime.memPrefetchAsync(address, nbytes, target, stream.cstream.ptr)

    def free(self, index: int, address: int) -> None:
        with cupy.cuda.Device(self._index(index)):
            cupy.cuda.runtime.free(address)

    def memset(self, address: int, value: int, nbytes: int, stream: Any) -> None:
        with cupy.cuda.Device(stream.index):
            cupy.cuda.runtime.memsetAsync(address, value, nbytes, stream.cstream.ptr)

    @staticmethod
    def _host_address(array: Any, nbytes: int) -> int:
        view = array if isinstance(array, np.ndarray) else np.frombuffer(memoryview(array),
                                                                          np.uint8)
        if not view.flags.c_contiguous or view.nbytes < nbytes:
            raise ValueError(f"host memory must be C-contiguous with at least {nbytes} bytes")
        return int(view.ctypes.data)

    def copy_host_to_device(self, dst: int, src: Any, nbytes: int, stream: Any) -> None:
        with cupy.cuda.Device(stream.index):
            cupy.cuda.runtime.memcpyAsync(dst, self._host_address(src, nbytes), nbytes,
                                          cupy.cuda.runtime.memcpyHostToDevice,
                                          stream.cstream.ptr)

    def copy_device_to_host(self, dst: np.ndarray, src: int, nbytes: int, stream: Any) -> None:
        if not isinstance(dst, np.ndarray) or not dst.flags.writeable:
            raise ValueError("the destination must be a writable numpy array")
        with cupy.cuda.Device(stream.index):
            cupy.cuda.runtime.memcpyAsync(self._host_address(dst, nbytes), src, nbytes,
                                          cupy.cuda.runtime.memcpyDeviceToHost,
                                          stream.cstream.ptr)

    def copy_device_to_device(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        with cupy.cuda.Device(stream.index):
            cupy.cuda.runtime.memcpyAsync(dst, src, nbytes,
                                          cupy.cuda.runtime.memcpyDeviceToDevice,
                                          stream.cstream.ptr)

    def copy_peer(self, dst: int, dst_index: int, src: int, src_index: int, nbytes: int,
                  stream: Any) -> None:
        with cupy.cuda.Device(stream.index):
            cupy.cuda.runtime.memcpyPeerAsync(dst, self._index(dst_index), src,
                                              self._index(src_index), nbytes,
                                              stream.cstream.ptr)

    def can_access_peer(self, index: int, peer: int) -> bool:
        return bool(cupy.cuda.runtime.deviceCanAccessPeer(self._index(index), self._index(peer)))

    def host_alloc(self, nbytes: int) -> np.ndarray:
        pinned = cupy.cuda.alloc_pinned_memory(int(nbytes))
        return np.frombuffer(pinned, np.uint8, int(nbytes))  # keeps `pinned` alive

    def host_free(self, array: np.ndarray) -> None:
        if not isinstance(array, np.ndarray) or array.dtype != np.uint8:
            raise TypeError("host_free takes the uint8 array host_alloc returned")

    # -- streams and events --------------------------------------------------------------------
    def create_stream(self, index: int) -> CupyStream:
        index = self._index(index)
        with cupy.cuda.Device(index):
            cstream = cupy.cuda.Stream(non_blocking=True)
        return CupyStream(index, cstream, owned=True)

    def default_stream(self, index: int) -> CupyStream:
        index = self._index(index)
        with self._lock:
            if index not in self._defaults:
                stream = self.create_stream(index)
                stream.owned = False
                self._defaults[index] = stream
            return self._defaults[index]

    def destroy_stream(self, stream: Any) -> None:
        if not stream.owned:
            raise ValueError("the default stream belongs to the driver and cannot be destroyed")
        self.stream_synchronize(stream)
        stream.cstream = None  # CuPy destroys the stream with the object

    def stream_synchronize(self, stream: Any) -> None:
        try:
            stream.cstream.synchronize()
        except cupy.cuda.runtime.CUDARuntimeError as exc:
            raise _kernel_error(exc) from exc

    def stream_query(self, stream: Any) -> bool:
        return bool(stream.cstream.done)

    def stream_wait_event(self, stream: Any, event: Any) -> None:
        stream.cstream.wait_event(event.cevent)

    def stream_ptr(self, stream: Any) -> int:
        return int(stream.cstream.ptr)

    def create_event(self, index: int, timing: bool = True) -> CupyEvent:
        index = self._index(index)
        with cupy.cuda.Device(index):
            cevent = cupy.cuda.Event(block=False, disable_timing=not timing)
        return CupyEvent(index, cevent, bool(timing))

    def destroy_event(self, event: Any) -> None:
        event.cevent = None

    def event_record(self, event: Any, stream: Any) -> None:
        event.cevent.record(stream.cstream)

    def event_synchronize(self, event: Any) -> None:
        try:
            event.cevent.synchronize()
        except cupy.cuda.runtime.CUDARuntimeError as exc:
            raise _kernel_error(exc) from exc

    def event_query(self, event: Any) -> bool:
        return bool(event.cevent.done)

    def event_elapsed_ms(self, start: Any, end: Any) -> float:
        if not (start.timing and end.timing):
            raise ValueError("elapsed time needs two events created with timing=True")
        try:
            return float(cupy.cuda.get_elapsed_time(start.cevent, end.cevent))
        except cupy.cuda.runtime.CUDARuntimeError as exc:
            raise RuntimeError(f"elapsed time is not available: {exc}") from exc

    # -- kernels --------------------------------------------------------------------------------
    # "nvrtc": CuPy's NVRTC call, without RawModule's flush to zero (module docstring);
    # "rawmodule": `cupy.RawModule(code=...)`, for a stand-in CuPy that runs CUDA C (the tests')
    compile_route = "nvrtc"

    def compile(self, index: int, source: str, options: Sequence[str] = (),
                name_expressions: Sequence[str] = ()) -> CupyModule:
        index = self._index(index)
        if self.compile_route == "nvrtc":
            return self._load_binary(index, source, options, name_expressions)
        with cupy.cuda.Device(index):
            cmodule = cupy.RawModule(code=source, options=tuple(options),
                                     name_expressions=tuple(name_expressions) or None)
            try:
                cmodule.compile()
            except cupy.cuda.compiler.CompileException as exc:
                raise CompileError(f"NVRTC rejects the source: {exc}", log=str(exc)) from exc
        return CupyModule(cmodule, index)

    def _load_binary(self, index: int, source: str, options: Sequence[str],
                     name_expressions: Sequence[str]) -> CupyModule:
        """The module of `source` for the device (a cubin, or PTX where CuPy's NVRTC does not
        know its architecture), from the kernel cache or NVRTC with the options RawModule would
        add except `-ftz=true`, loaded by CuPy from a file of this process's own directory
        (removed at exit)."""
        major, minor = self.properties(index).compute_capability
        flags = (*(() if any(o.startswith(("-std", "--std")) for o in options) else
                   ("-std=c++17",)), *options, *(f"-I{d}" for d in cupy_include_dirs()))
        key = KernelCache.key("cupy-driver", source, "\0".join(flags),
                              "\0".join(name_expressions), f"{major}{minor}", cupy.__version__,
                              ".".join(map(str, cupy.cuda.nvrtc.getVersion())))

        def build() -> bytes:  # the lowered names as a JSON line, then the binary
            with cupy.cuda.Device(index):
                try:
                    binary, names = cupy.cuda.compiler.compile_using_nvrtc(
                        source, flags, name_expressions=tuple(name_expressions) or None)
                except cupy.cuda.compiler.CompileException as exc:
                    raise CompileError(f"NVRTC rejects the source: {exc}",
                                       log=str(exc)) from exc
            binary = binary if isinstance(binary, bytes) else binary.encode()
            return json.dumps(dict(names or {})).encode() + b"\n" + binary

        header, _, binary = self.cache.get_or_compile(key, build).partition(b"\n")
        suffix = ".cubin" if binary[:4] == b"\x7fELF" else ".ptx"
        path = _binaries() / f"{hashlib.sha256(binary).hexdigest()[:40]}{suffix}"
        if not path.exists():  # whole or absent, for a thread loading it meanwhile
            partial = path.with_name(f"{path.name}.{threading.get_ident()}")
            partial.write_bytes(binary)
            os.replace(partial, path)
        with cupy.cuda.Device(index):
            cmodule = cupy.RawModule(path=str(path))
        return CupyModule(cmodule, index, json.loads(header))

    def capture(self, index: int, launches: Sequence[Launch]) -> Any:
        """The launches captured into a CUDA graph (`cupy.cuda.Graph`) on a stream of their
        own, the kernels its nodes."""
        stream = self.create_stream(index)
        with cupy.cuda.Device(stream.index):
            stream.cstream.begin_capture()
            try:
                for function, grid, block, args, shared_mem in launches:
                    self.launch(function, grid, block, args, shared_mem, stream)
            finally:
                cgraph = stream.cstream.end_capture()
        return cgraph

    def launch_graph(self, graph: Any, stream: Any) -> None:
        cgraph = graph
        with cupy.cuda.Device(stream.index):
            cgraph.launch(stream.cstream)

    def launch(self, function: Function, grid: tuple[int, int, int],
               block: tuple[int, int, int], args: Sequence[np.generic], shared_mem: int,
               stream: Any) -> None:
        g, b = check_launch(self.properties(stream.index), function, grid, block, args,
                            shared_mem, self.properties(stream.index).shared_memory_per_block)
        ckernel = function.ckernel  # type: ignore[attr-defined]
        with cupy.cuda.Device(stream.index):
            ckernel(g, b, tuple(args), shared_mem=int(shared_mem), stream=stream.cstream)
