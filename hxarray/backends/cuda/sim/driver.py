"""The CUDA simulator as a `Driver`: device memory, streams and events in Python, kernels in the
C++ runtime (`backends/codegen/include/hxsim_runtime.cpp`) on a pool of OS threads.

Each stream is a real in-order queue run by its own worker thread, so work on different streams
overlaps (and races) as on a GPU. Device memory is memory the runtime allocates (never a numpy
array); in check mode every allocation sits between guard pages.
"""

from __future__ import annotations

import atexit
import bisect
import ctypes
import itertools
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ....hal import settings
from ....hal.kernel_cache import KernelCache, default_cache_dir
from ....hal.stream import run_worker_hook
from ...codegen.compiler import MAX_DYNAMIC_SHARED, HostCompiler
from ..driver import (
    DeviceProperties,
    Driver,
    Function,
    FunctionAttributes,
    KernelError,
    Module,
    ParamInfo,
    check_launch,
)

__all__ = ["SimDriver", "SimEvent", "SimStream", "settings_from_env"]

_KINDS = {0: "other", 1: "pointer", 2: "signed", 3: "unsigned", 4: "float", 5: "bool"}


class _Param(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("align", ctypes.c_uint32), ("kind", ctypes.c_uint32)]


class _KernelInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("invoke", ctypes.c_void_p),
                ("nparams", ctypes.c_uint32), ("params", ctypes.POINTER(_Param))]


# Array types made once: ctypes caches them only weakly, so one made per call becomes cyclic
# garbage each time its last instance dies.
_KernelTable = ctypes.POINTER(_KernelInfo) * 4096
_ErrorText = ctypes.c_char * 1024
# The runtime turns the watchdog's limit into a deadline in nanoseconds (a 64-bit count); a
# longer limit, inf included, is passed as this one (31 years), which never expires.
_LONGEST_WATCHDOG = 1e9


def settings_from_env() -> dict[str, Any]:
    """The simulator's settings from its environment variables (`hxarray.hal.settings`)."""
    return {
        "devices": settings.CUDA_SIM_DEVICES.get(),
        "check": settings.CUDA_SIM_CHECK.get(),
        "watchdog": settings.CUDA_SIM_WATCHDOG.get(),
        "memory": settings.CUDA_SIM_MEMORY.get(),
        "workers": settings.CUDA_SIM_WORKERS.get(),
        "stack": settings.CUDA_SIM_STACK.get(),
        "fibers": settings.CUDA_SIM_FIBERS.get(),
    }


# ---- the process-wide runtime -------------------------------------------------------------------
_runtime_lock = threading.Lock()
_runtime: ctypes.CDLL | None = None
_compilers: dict[str, HostCompiler] = {}


def _compiler(cache: KernelCache) -> HostCompiler:
    tag = str(cache.directory)
    with _runtime_lock:
        if tag not in _compilers:
            _compilers[tag] = HostCompiler(cache)
        return _compilers[tag]


def _load_runtime(compiler: HostCompiler, workers: int, stack: int, fibers: str
                  ) -> ctypes.CDLL:
    """Build (once, cached) and load the runtime; its pool starts with the first driver's
    settings for workers and stack size and keeps them for the process."""
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            path = compiler.runtime_library(ucontext=fibers == "ucontext")
            lib = ctypes.CDLL(str(path), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
            lib.hxsim_start.argtypes = [ctypes.c_int, ctypes.c_size_t]
            lib.hxsim_alloc.argtypes = [ctypes.c_size_t, ctypes.c_int]
            lib.hxsim_alloc.restype = ctypes.c_void_p
            lib.hxsim_dealloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            lib.hxsim_launch.argtypes = [
                ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                ctypes.c_int, ctypes.c_double, ctypes.c_char_p,
                ctypes.c_size_t, ctypes.POINTER(ctypes.c_ulonglong), ctypes.POINTER(ctypes.c_int)]
            lib.hxsim_start(workers, stack)
            _runtime = lib
        return _runtime


# ---- streams and events -------------------------------------------------------------------------
class _Record:
    """One record of an event: completes when its stream reaches it."""

    __slots__ = ("done", "time_ns", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.time_ns = 0
        self.error: BaseException | None = None


class _WorkQueue:
    """An in-order queue of host callables run by one worker thread. The thread holds only this
    object, so a stream that is dropped without destroy_stream is collected and its thread ends.

    Queuing is reentrant: the garbage collector may run a finalizer that queues work here or
    queries it (a buffer's, whose stream-ordered allocator records an event) at any allocation,
    also while this thread waits in `synchronize` or the worker counts work done. So the lock
    is an RLock, and waiting and counting use a condition of their own that no finalizer
    takes."""

    def __init__(self, name: str) -> None:
        self._queue: queue.SimpleQueue[Callable[[], object] | None] = queue.SimpleQueue()
        self._lock = threading.RLock()
        self._queued = 0  # work queued so far
        self._done = 0  # work the worker has run
        self._finished = threading.Condition()  # told when the worker has run one more
        self._error: BaseException | None = None
        self.closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        _open_queues.add(self)

    def submit(self, work: Callable[[], object]) -> bool:
        with self._lock:  # (put here: never after the None that `close` puts)
            if self.closed:
                return False
            self._queued += 1
            self._queue.put(work)
        return True

    def _run(self) -> None:
        while True:
            work = self._queue.get()
            if work is None:
                return
            try:
                work()
                run_worker_hook()  # the testing hook, if one is set
            except BaseException as exc:  # kept for synchronize(), never lost
                with self._lock:
                    if self._error is None:
                        self._error = exc
            finally:
                del work
                with self._finished:
                    self._done += 1
                    self._finished.notify_all()

    def pending_error(self) -> BaseException | None:
        with self._lock:
            return self._error

    def synchronize(self) -> None:
        """Wait for the work queued before this call, then raise its first error, if any."""
        queued = self._queued
        with self._finished:
            self._finished.wait_for(lambda: self._done >= queued)
        with self._lock:
            error, self._error = self._error, None
        if error is not None:
            raise error

    def query(self) -> bool:
        return self._done == self._queued  # (read first: work done never outruns work queued)

    def close(self, wait: bool = False) -> None:
        """Refuse new work; the worker ends after the work queued so far (waited for with
        `wait`)."""
        with self._lock:
            if not self.closed:
                self.closed = True
                self._queue.put(None)
        if wait and threading.current_thread() is not self._thread:
            self._thread.join()


_open_queues: weakref.WeakSet[_WorkQueue] = weakref.WeakSet()


@atexit.register
def _finish_at_exit() -> None:
    """Let every worker finish its queued work and end while threads can still run, so that
    shutdown never waits on a worker that can no longer run (later work is refused)."""
    for work in list(_open_queues):
        work.close(wait=True)


class SimStream:
    """A simulated stream: a `_WorkQueue` with its device and id."""

    _ids = itertools.count(1)

    def __init__(self, index: int, owned: bool = True) -> None:
        self.index = index
        self.id = next(self._ids)
        self.owned = owned
        self._work = _WorkQueue(f"hxsim-stream-{self.id}")
        weakref.finalize(self, self._work.close)

    def __repr__(self) -> str:
        return f"<simulated CUDA stream {self.id} on cuda:{self.index}>"

    def submit(self, work: Callable[[], object]) -> None:
        if not self._work.submit(work):
            raise ValueError(f"{self!r} has been destroyed")

    def pending_error(self) -> BaseException | None:
        return self._work.pending_error()

    def synchronize(self) -> None:
        self._work.synchronize()

    def query(self) -> bool:
        return self._work.query()

    def close(self) -> None:
        self._work.close()


class SimEvent:
    """An event: each record is a `_Record`; waits and queries use the latest one."""

    def __init__(self, index: int, timing: bool) -> None:
        self.index = index
        self.timing = timing
        self.last: _Record | None = None

    def __repr__(self) -> str:
        return f"<simulated CUDA event on cuda:{self.index}>"


# ---- modules ------------------------------------------------------------------------------------
class SimFunction(Function):
    def __init__(self, module: SimModule, name: str, info: Any) -> None:  # POINTER(_KernelInfo)
        self.module = module
        self.name = name
        self.info_address = ctypes.cast(info, ctypes.c_void_p).value
        entry = info.contents
        self.params = tuple(ParamInfo(entry.params[i].size, entry.params[i].align,
                                      _KINDS.get(entry.params[i].kind, "other"))
                            for i in range(entry.nparams))

    def __repr__(self) -> str:
        return f"<simulated CUDA kernel {self.name!r}>"

    @property
    def attributes(self) -> FunctionAttributes:
        return FunctionAttributes(
            max_threads_per_block=1024, num_regs=0, shared_size_bytes=self.module.static_shared,
            const_size_bytes=0, local_size_bytes=0,
            max_dynamic_shared_size_bytes=MAX_DYNAMIC_SHARED, ptx_version=0, binary_version=0)


def _tls_size(binary: bytes) -> int:
    """p_memsz of the PT_TLS program header of an ELF64 shared object (0 without one)."""
    if binary[:4] != b"\x7fELF" or binary[4] != 2:
        return 0
    phoff = int.from_bytes(binary[0x20:0x28], "little")
    entsize = int.from_bytes(binary[0x36:0x38], "little")
    count = int.from_bytes(binary[0x38:0x3A], "little")
    for i in range(count):
        at = phoff + i * entsize
        if int.from_bytes(binary[at:at + 4], "little") == 7:  # PT_TLS
            return int.from_bytes(binary[at + 0x28:at + 0x30], "little")
    return 0


# What makes a CUDA thread wait for another: the runtime's barrier and warp-collective entry points
# (every __syncthreads*, __syncwarp, __shfl*, __ballot, __any/__all, __reduce*, __match*,
# __activemask of hxsim.h calls one of them).
_WAITING = frozenset({"hxsim_barrier", "hxsim_warp_op", "hxsim_activemask"})


def _undefined_symbols(binary: bytes) -> set[str]:
    """Names of the undefined dynamic symbols of an ELF64 little-endian shared object (what it
    imports; empty for anything else)."""
    if binary[:4] != b"\x7fELF" or binary[4] != 2 or binary[5] != 1:
        return set()

    def word(at: int, size: int) -> int:
        return int.from_bytes(binary[at:at + size], "little")

    shoff, shentsize, shnum = word(0x28, 8), word(0x3A, 2), word(0x3C, 2)
    sections = [shoff + i * shentsize for i in range(shnum)]
    names: set[str] = set()
    for header in sections:
        if word(header + 4, 4) != 11:  # SHT_DYNSYM
            continue
        offset, size, entsize = word(header + 0x18, 8), word(header + 0x20, 8), \
            word(header + 0x38, 8)
        strtab = word(sections[word(header + 0x28, 4)] + 0x18, 8)
        for entry in range(offset + entsize, offset + size, entsize):  # entry 0 is null
            if word(entry + 6, 2) == 0:  # SHN_UNDEF
                start = strtab + word(entry, 4)
                names.add(binary[start:binary.index(b"\0", start)].decode())
    return names


def runs_as_loop(binary: bytes) -> bool:
    """Whether a compiled module's kernels can run in loop mode: it uses no shared memory (no
    thread-local storage) and calls no barrier or warp collective, so no thread ever waits for
    another and running each to its end in turn is exactly what fibers would do."""
    return _tls_size(binary) == 0 and not _undefined_symbols(binary) & _WAITING


class SimModule(Module):
    def __init__(self, lib: ctypes.CDLL, binary: bytes) -> None:
        self.lib = lib
        dynamic = 0
        try:
            dynamic = ctypes.c_uint64.in_dll(lib, "hxsim_dynamic_shared_bytes").value
        except ValueError:
            pass
        self.static_shared = max(0, _tls_size(binary) - dynamic)
        self.loop = runs_as_loop(binary)
        table = _KernelTable.in_dll(lib, "hxsim_module_kernels")
        self.functions: dict[str, SimFunction] = {}
        for i in range(len(table)):
            if not table[i]:
                break
            name = table[i].contents.name.decode()
            self.functions[name] = SimFunction(self, name, table[i])

    def get_function(self, name: str) -> Function:
        try:
            return self.functions[name]
        except KeyError:
            raise KeyError(f"no kernel {name!r} in the module; it has {sorted(self.functions)} "
                           '(kernels need extern "C", or a name expression at compile time)'
                           ) from None


# ---- the driver ---------------------------------------------------------------------------------
class SimDriver(Driver):
    """The CPU simulator. Arguments default to the environment (`settings_from_env`)."""

    simulated = True

    def __init__(self, devices: int | None = None, *, check: bool | None = None,
                 watchdog: float | None = None, memory: int | None = None,
                 cache: KernelCache | None = None) -> None:
        env = settings_from_env()
        self.devices = env["devices"] if devices is None else int(devices)
        if not 1 <= self.devices <= settings.MAX_SIM_DEVICES:
            raise ValueError(f"the simulator needs at least 1 device and at most "
                             f"{settings.MAX_SIM_DEVICES}, got {devices}")
        self.check = env["check"] if check is None else bool(check)
        self.watchdog = env["watchdog"] if watchdog is None else float(watchdog)
        if not self.watchdog > 0:
            raise ValueError(f"the watchdog's limit must be > 0 seconds, got {watchdog!r}")
        self.memory = env["memory"] if memory is None else int(memory)
        if self.memory < 0:
            raise ValueError(f"a simulated device's memory must be >= 0 bytes, got {memory!r}")
        self.cache = cache if cache is not None else KernelCache(default_cache_dir())
        self.compiler = _compiler(self.cache)
        self.runtime = _load_runtime(self.compiler, env["workers"], env["stack"], env["fibers"])
        # reentrant: a finalizer the collector runs while this thread holds it (at any
        # allocation) may free device memory (a buffer's, through its allocator)
        self._lock = threading.RLock()
        self._allocs: dict[int, tuple[int, int, bool]] = {}  # address -> (device, size, guarded)
        self._starts: list[int] = []  # sorted allocation addresses
        self._used = [0] * self.devices
        self._modules: dict[str, SimModule] = {}
        self._defaults: dict[int, SimStream] = {}
        self._streams: list[weakref.ref[SimStream]] = []
        self._props: DeviceProperties | None = None

    def __repr__(self) -> str:
        return (f"SimDriver(devices={self.devices}, check={self.check}, "
                f"watchdog={self.watchdog})")

    # -- devices ----------------------------------------------------------------------------------
    def _index(self, index: int) -> int:
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise TypeError(f"a device index is an int, got {type(index).__name__}")
        if not 0 <= index < self.devices:
            raise ValueError(f"cuda:{index} does not exist: the simulator has {self.devices} "
                             f"device(s) (HXARRAY_CUDA_SIM_DEVICES sets how many)")
        return int(index)

    def device_count(self) -> int:
        return self.devices

    def properties(self, index: int) -> DeviceProperties:
        self._index(index)
        if self._props is None:
            cores = os.cpu_count() or 1
            self._props = DeviceProperties(
                name="hxarray CUDA simulator", compute_capability=(8, 0),
                multiprocessor_count=cores, max_threads_per_block=1024,
                max_threads_per_multiprocessor=2048, max_block_dims=(1024, 1024, 64),
                max_grid_dims=(2**31 - 1, 65535, 65535), warp_size=32,
                shared_memory_per_block=MAX_DYNAMIC_SHARED,
                shared_memory_per_multiprocessor=2 * MAX_DYNAMIC_SHARED,
                registers_per_block=65536, registers_per_multiprocessor=65536,
                total_memory=self.memory, clock_rate_khz=_cpu_khz(), memory_clock_rate_khz=0,
                memory_bus_width=0, l2_cache_size=0, simulated=True)
        return self._props

    def mem_info(self, index: int) -> tuple[int, int]:
        index = self._index(index)
        with self._lock:
            return self.memory - self._used[index], self.memory

    def synchronize(self, index: int) -> None:
        index = self._index(index)
        streams = [s for s in (r() for r in self._streams) if s is not None and s.index == index]
        first: BaseException | None = None
        for stream in streams:
            try:
                stream.synchronize()
            except KernelError as exc:
                first = first or exc
        if first is not None:
            raise first

    # -- memory -----------------------------------------------------------------------------------
    def malloc(self, index: int, nbytes: int) -> int:
        index = self._index(index)
        if not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
            raise ValueError(f"malloc needs a byte count >= 0, got {nbytes!r}")
        nbytes = int(nbytes)
        with self._lock:
            free = self.memory - self._used[index]
            if nbytes > free:
                raise MemoryError(f"cuda:{index} (simulated) is out of memory: {nbytes} bytes "
                                  f"requested, {free} of {self.memory} free")
            address = self.runtime.hxsim_alloc(nbytes, int(self.check))
            if not address:
                raise MemoryError(f"cuda:{index} (simulated): the host could not allocate "
                                  f"{nbytes} bytes")
            self._allocs[address] = (index, nbytes, self.check)
            bisect.insort(self._starts, address)
            self._used[index] += nbytes
        return address

    def managed_memory(self, index: int) -> bool:
        self._index(index)
        return True

    def malloc_managed(self, index: int, nbytes: int) -> int:
        """The simulated device's memory is host memory: a managed allocation is one of its
        allocations (counted against its memory as any)."""
        return self.malloc(index, nbytes)

    def free(self, index: int, address: int) -> None:
        index = self._index(index)
        with self._lock:
            entry = self._allocs.get(address)
            if entry is None or entry[0] != index:
                raise ValueError(f"0x{address:x} is not an allocation of cuda:{index} "
                                 "(double free, or memory of another device?)")
            del self._allocs[address]
            self._starts.pop(bisect.bisect_left(self._starts, address))
            self._used[index] -= entry[1]
        self.runtime.hxsim_dealloc(address, entry[1], int(entry[2]))

    def _owner(self, address: int) -> tuple[int, int, int] | None:
        """(start, size, device) of the allocation holding `address`, if any."""
        with self._lock:
            i = bisect.bisect_right(self._starts, address) - 1
            if i < 0:
                return None
            start = self._starts[i]
            device, size, _ = self._allocs[start]
            return (start, size, device) if address < start + max(size, 1) else None

    def _check_range(self, address: int, nbytes: int, what: str, index: int | None = None) -> None:
        if not isinstance(address, (int, np.integer)):
            raise TypeError(f"{what} must be a device address (int), got {type(address).__name__}")
        owner = self._owner(int(address))
        if owner is None or address + nbytes > owner[0] + owner[1]:
            where = ("outside every allocation" if owner is None else
                     f"past the end of the {owner[1]}-byte allocation at 0x{owner[0]:x}")
            raise ValueError(f"{what} 0x{address:x} + {nbytes} bytes is {where}")
        if index is not None and owner[2] != index:
            raise ValueError(f"{what} 0x{address:x} is memory of cuda:{owner[2]}, not cuda:{index}")

    def _stream(self, stream: Any) -> SimStream:
        if not isinstance(stream, SimStream):
            raise TypeError(f"expected a stream of this driver, got {stream!r}")
        return stream

    @staticmethod
    def _nbytes(nbytes: Any) -> int:
        if not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
            raise ValueError(f"a byte count must be an int >= 0, got {nbytes!r}")
        return int(nbytes)

    def memset(self, address: int, value: int, nbytes: int, stream: Any) -> None:
        nbytes = self._nbytes(nbytes)
        self._check_range(address, nbytes, "memset address")
        if not 0 <= int(value) <= 255:
            raise ValueError(f"memset value must be a byte (0..255), got {value}")
        self._stream(stream).submit(lambda: ctypes.memset(address, int(value), nbytes))

    @staticmethod
    def _host(array: Any, nbytes: int, writable: bool) -> tuple[Any, int]:
        """(keep-alive object, address) of a C-contiguous host buffer of at least nbytes."""
        view = array if isinstance(array, np.ndarray) else np.frombuffer(
            memoryview(array), dtype=np.uint8)
        if not view.flags.c_contiguous:
            raise ValueError("host memory for a copy must be C-contiguous")
        if writable and not view.flags.writeable:
            raise ValueError("the destination numpy array is read-only")
        if view.nbytes < nbytes:
            raise ValueError(f"the host buffer holds {view.nbytes} bytes, the copy needs {nbytes}")
        return view, view.ctypes.data

    def copy_host_to_device(self, dst: int, src: Any, nbytes: int, stream: Any) -> None:
        nbytes = self._nbytes(nbytes)
        self._check_range(dst, nbytes, "destination")
        keep, address = self._host(src, nbytes, writable=False)
        self._stream(stream).submit(lambda: (ctypes.memmove(dst, address, nbytes), keep))

    def copy_device_to_host(self, dst: np.ndarray, src: int, nbytes: int, stream: Any) -> None:
        nbytes = self._nbytes(nbytes)
        self._check_range(src, nbytes, "source")
        if not isinstance(dst, np.ndarray):
            raise TypeError(f"the destination must be a numpy array, got {type(dst).__name__}")
        keep, address = self._host(dst, nbytes, writable=True)
        self._stream(stream).submit(lambda: (ctypes.memmove(address, src, nbytes), keep))

    def copy_device_to_device(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        nbytes = self._nbytes(nbytes)
        s = self._stream(stream)
        self._check_range(src, nbytes, "source", s.index)
        self._check_range(dst, nbytes, "destination", s.index)
        s.submit(lambda: ctypes.memmove(dst, src, nbytes))

    def copy_peer(self, dst: int, dst_index: int, src: int, src_index: int, nbytes: int,
                  stream: Any) -> None:
        nbytes = self._nbytes(nbytes)
        self._check_range(src, nbytes, "source", self._index(src_index))
        self._check_range(dst, nbytes, "destination", self._index(dst_index))
        self._stream(stream).submit(lambda: ctypes.memmove(dst, src, nbytes))

    def can_access_peer(self, index: int, peer: int) -> bool:
        return self._index(index) != self._index(peer)

    def host_alloc(self, nbytes: int) -> np.ndarray:
        return np.empty(self._nbytes(nbytes), dtype=np.uint8)  # host memory is host memory here

    def host_free(self, array: np.ndarray) -> None:
        if not isinstance(array, np.ndarray) or array.dtype != np.uint8:
            raise TypeError("host_free takes the uint8 array host_alloc returned")

    # -- streams and events -----------------------------------------------------------------------
    def create_stream(self, index: int) -> SimStream:
        stream = SimStream(self._index(index))
        with self._lock:
            self._streams = [r for r in self._streams if r() is not None]
            self._streams.append(weakref.ref(stream))
        return stream

    def default_stream(self, index: int) -> SimStream:
        index = self._index(index)
        with self._lock:
            stream = self._defaults.get(index)
        if stream is None:
            created = self.create_stream(index)
            created.owned = False
            with self._lock:
                stream = self._defaults.setdefault(index, created)
            if stream is not created:
                created.close()
        return stream

    def destroy_stream(self, stream: Any) -> None:
        s = self._stream(stream)
        if not s.owned:
            raise ValueError("the default stream belongs to the driver and cannot be destroyed")
        s.close()

    def stream_synchronize(self, stream: Any) -> None:
        self._stream(stream).synchronize()

    def stream_query(self, stream: Any) -> bool:
        return self._stream(stream).query()

    def stream_wait_event(self, stream: Any, event: Any) -> None:
        record = self._event(event).last
        if record is not None:
            self._stream(stream).submit(record.done.wait)

    def stream_ptr(self, stream: Any) -> int:
        return self._stream(stream).id

    @staticmethod
    def _event(event: Any) -> SimEvent:
        if not isinstance(event, SimEvent):
            raise TypeError(f"expected an event of this driver, got {event!r}")
        return event

    def create_event(self, index: int, timing: bool = True) -> SimEvent:
        return SimEvent(self._index(index), bool(timing))

    def destroy_event(self, event: Any) -> None:
        self._event(event)

    def event_record(self, event: Any, stream: Any) -> None:
        e, s = self._event(event), self._stream(stream)
        record = _Record()
        e.last = record

        def complete() -> None:
            record.time_ns = time.perf_counter_ns()
            record.error = s.pending_error()
            record.done.set()

        s.submit(complete)

    def event_synchronize(self, event: Any) -> None:
        record = self._event(event).last
        if record is not None:
            record.done.wait()
            if record.error is not None:
                raise record.error

    def event_query(self, event: Any) -> bool:
        record = self._event(event).last
        return record is None or record.done.is_set()

    def event_elapsed_ms(self, start: Any, end: Any) -> float:
        a, b = self._event(start), self._event(end)
        if not (a.timing and b.timing):
            raise ValueError("elapsed time needs two events created with timing=True")
        if a.last is None or b.last is None:
            raise RuntimeError("elapsed time of an event that was never recorded")
        if not (a.last.done.is_set() and b.last.done.is_set()):
            raise RuntimeError("elapsed time of an event that has not completed yet (not ready)")
        return (b.last.time_ns - a.last.time_ns) / 1e6

    # -- kernels ----------------------------------------------------------------------------------
    def compile(self, index: int, source: str, options: Sequence[str] = (),
                name_expressions: Sequence[str] = ()) -> SimModule:
        self._index(index)
        if isinstance(options, str) or isinstance(name_expressions, str):
            raise TypeError("options and name_expressions are sequences of strings")
        key, binary = self.compiler.compile(source, tuple(options), tuple(name_expressions),
                                            check=self.check)
        with self._lock:
            module = self._modules.get(key)
        if module is None:
            module = SimModule(self.compiler.load(key, binary), binary)
            with self._lock:
                module = self._modules.setdefault(key, module)
        return module

    def launch(self, function: Function, grid: tuple[int, int, int],
               block: tuple[int, int, int], args: Sequence[np.generic], shared_mem: int,
               stream: Any) -> None:
        if not isinstance(function, SimFunction):
            raise TypeError(f"expected a kernel compiled by this driver, got {function!r}")
        s = self._stream(stream)
        g, b = check_launch(self.properties(s.index), function, grid, block, args, shared_mem,
                            MAX_DYNAMIC_SHARED)
        # one 16-aligned slot per argument, copied now: later changes to args do not matter
        offsets, total = [], 0
        for a in args:
            offsets.append(total)
            total += (a.nbytes + 15) & ~15
        blob = np.zeros(total + 16, np.uint8)
        base = (blob.ctypes.data + 15) & ~15
        shift = base - blob.ctypes.data
        for a, offset in zip(args, offsets):
            blob[shift + offset:shift + offset + a.nbytes] = np.frombuffer(a.tobytes(), np.uint8)
        pointers = np.array([base + o for o in offsets] or [0], dtype=np.uintp)
        dims = np.array([*g, *b], dtype=np.uint32)
        strict = int(self.check)
        loop = int(function.module.loop)
        info = function.info_address
        keep = (function.module, blob)  # alive until the launch has run

        def run() -> None:
            error = _ErrorText()
            address = ctypes.c_ulonglong(0)
            is_fault = ctypes.c_int(0)
            status = self.runtime.hxsim_launch(info, pointers.ctypes.data, dims.ctypes.data,
                                               dims.ctypes.data + 12, strict, loop,
                                               min(self.watchdog, _LONGEST_WATCHDOG),
                                               error, len(error), ctypes.byref(address),
                                               ctypes.byref(is_fault))
            assert keep
            if status:
                raise self._kernel_error(error.value.decode(errors="replace"),
                                         address.value if is_fault.value else None)

        s.submit(run)

    def _kernel_error(self, message: str, address: int | None) -> KernelError:
        allocation = None
        if self.check and "SIGILL" in message:
            message += (" (in check mode: often an index past the end of a fixed-size array, "
                        "such as a __shared__ tile or a local array)")
        if address is not None:
            near = self._nearest(address)
            if near is not None:
                start, size, device = near
                allocation = (start, size)
                if address >= start + size:
                    detail = f"{address - start - size} bytes past the end"
                elif address < start:
                    detail = f"{start - address} bytes before the start"
                else:
                    detail = "inside"
                message += (f"; that is {detail} of the {size}-byte allocation at 0x{start:x} "
                            f"on cuda:{device}")
            elif not self.check:
                message += " (run with HXARRAY_CUDA_SIM_CHECK=1 to catch out-of-bounds accesses "\
                           "at the first byte)"
        return KernelError(message, address, allocation)

    def _nearest(self, address: int) -> tuple[int, int, int] | None:
        """The allocation whose guard pages (one page each side) hold `address`."""
        page = os.sysconf("SC_PAGE_SIZE")
        with self._lock:
            i = bisect.bisect_right(self._starts, address)
            best = None
            for j in (i - 1, i):
                if 0 <= j < len(self._starts):
                    start = self._starts[j]
                    device, size, _ = self._allocs[start]
                    if start - page <= address < start + size + page:
                        best = (start, size, device)
            return best


def _cpu_khz() -> int:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("cpu MHz"):
                return int(float(line.split(":")[1]) * 1000)
    except (OSError, ValueError, IndexError):
        pass
    return 0
