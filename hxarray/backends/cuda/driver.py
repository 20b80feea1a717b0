"""The CUDA driver interface: the narrow set of operations a CUDA backend needs.

Three implementations: `driver_cupy.CupyDriver` (a GPU, through CuPy), `sim.SimDriver` (the CPU
simulator that runs the same CUDA C) and `driver_null.NullDriver` (kernels that do nothing, to
measure hxarray's own host cost). `load_driver()` picks one.

Conventions shared by both drivers:

- A device is an `int` index. A device address is a Python `int`.
- A stream or an event is an opaque handle returned by the driver (`create_stream`, `create_event`);
  `stream_ptr` gives the raw `cudaStream_t` value for interoperability (DLPack, CuPy).
- Streams never synchronise implicitly with each other (there is no legacy null stream):
  `default_stream(index)` is a driver-owned stream per device, and order between streams comes from
  events only.
- Calls marked *asynchronous* only enqueue work on the stream and return; errors of the work
  (a faulting kernel) are raised by the next `stream_synchronize` of that stream (or
  `event_synchronize` of an event recorded after it), as `KernelError`.
- Kernel arguments are already typed: each is a numpy scalar (`numpy.generic`) whose bytes are the
  parameter's bytes; device pointers are `numpy.uintp(address)`. Typing Python values belongs to
  the RawKernel layer (`hxarray.backends.cuda.raw`).
- Drivers are thread-safe.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...hal.settings import CUDA_DRIVER

__all__ = [
    "CUDAUnavailableError", "DeviceProperties", "Driver", "Function",
    "FunctionAttributes", "KernelError", "Module", "ParamInfo", "load_driver",
]


class CUDAUnavailableError(RuntimeError):
    """No CUDA driver can be used; the message says why and how to get the simulator."""


class KernelError(RuntimeError):
    """A kernel failed while running: a fault, a divergent barrier, the watchdog, a trap.

    `address` is the faulting address when there is one; `allocation` describes the allocation it
    missed (simulator check mode)."""

    def __init__(self, message: str, address: int | None = None,
                 allocation: tuple[int, int] | None = None) -> None:
        super().__init__(message)
        self.address = address
        self.allocation = allocation


@dataclass(frozen=True)
class DeviceProperties:
    """What the backend needs to know about a device (cudaDeviceProp's fields, renamed)."""

    name: str
    compute_capability: tuple[int, int]
    multiprocessor_count: int
    max_threads_per_block: int
    max_threads_per_multiprocessor: int
    max_block_dims: tuple[int, int, int]
    max_grid_dims: tuple[int, int, int]
    warp_size: int
    shared_memory_per_block: int
    shared_memory_per_multiprocessor: int
    registers_per_block: int
    registers_per_multiprocessor: int
    total_memory: int
    clock_rate_khz: int
    memory_clock_rate_khz: int
    memory_bus_width: int
    l2_cache_size: int
    simulated: bool


@dataclass(frozen=True)
class FunctionAttributes:
    """cudaFuncAttributes. On the simulator `num_regs` is 0 (no registers to count) and
    `shared_size_bytes` is the static shared memory of the whole module."""

    max_threads_per_block: int
    num_regs: int
    shared_size_bytes: int
    const_size_bytes: int
    local_size_bytes: int
    max_dynamic_shared_size_bytes: int
    ptx_version: int
    binary_version: int


@dataclass(frozen=True)
class ParamInfo:
    """One kernel parameter as compiled: size and alignment in bytes, and its kind:
    'pointer', 'signed', 'unsigned', 'float', 'bool' or 'other' (a struct by value)."""

    size: int
    align: int
    kind: str


class Function(abc.ABC):
    """A kernel in a compiled module."""

    name: str
    #: the parameters as compiled, or None where the driver cannot tell (CuPy)
    params: tuple[ParamInfo, ...] | None

    @property
    @abc.abstractmethod
    def attributes(self) -> FunctionAttributes:
        """The kernel's attributes (occupancy inputs)."""


# A kernel launch without its stream: (function, grid, block, args, dynamic shared memory).
Launch = tuple[Function, tuple[int, int, int], tuple[int, int, int], Sequence[Any], int]


class Module(abc.ABC):
    """A compiled source."""

    @abc.abstractmethod
    def get_function(self, name: str) -> Function:
        """The kernel `name`: an `extern "C"` name or one of the module's name expressions.
        KeyError naming the kernels available when there is none."""


class Driver(abc.ABC):
    """The operations a CUDA backend uses. See the module docstring for the conventions."""

    #: True for the CPU simulator
    simulated: bool = False
    #: True where every allocation ends at a guard (the simulator's check mode): the backend then
    #: asks for exactly the bytes an array needs, so that the first byte past it faults
    check: bool = False

    # -- devices --------------------------------------------------------------------------------
    @abc.abstractmethod
    def device_count(self) -> int:
        """How many devices there are (>= 1 for a driver that loaded)."""

    @abc.abstractmethod
    def properties(self, index: int) -> DeviceProperties:
        """The device's properties; ValueError for an index out of range."""

    @abc.abstractmethod
    def mem_info(self, index: int) -> tuple[int, int]:
        """(free, total) bytes of device memory."""

    @abc.abstractmethod
    def synchronize(self, index: int) -> None:
        """Wait for all work on every stream of the device (raises the first KernelError)."""

    # -- memory ---------------------------------------------------------------------------------
    @abc.abstractmethod
    def malloc(self, index: int, nbytes: int) -> int:
        """A new device allocation of `nbytes` (aligned to 256 bytes), synchronous.
        MemoryError naming the device, the size and the free memory when it does not fit."""

    def managed_memory(self, index: int) -> bool:
        """Whether the device has managed (unified) memory: `malloc_managed`. Default: no."""
        return False

    def malloc_managed(self, index: int, nbytes: int) -> int:
        """A new managed allocation of `nbytes`, addressed by the host and the device alike,
        released with `free`; MemoryError, as `malloc`'s, where it does not fit in the device's
        free memory (more managed memory than the device holds can hang a GPU that pages it in).
        Default: the device has none (TypeError)."""
        raise TypeError(f"cuda:{index} has no managed memory")

    def prefetch(self, address: int, nbytes: int, index: int | None, stream: Any) -> None:
        """Move `nbytes` of managed memory at `address` to device `index` (None: the host)
        ahead of its use, queued on `stream`: a hint, which changes no value. Default: none."""
        return None  # (memory that never moves: nothing to do)

    @abc.abstractmethod
    def free(self, index: int, address: int) -> None:
        """Release an allocation made by `malloc` on that device. The caller makes sure no queued
        work still uses it (a caching allocator records the streams)."""

    @abc.abstractmethod
    def memset(self, address: int, value: int, nbytes: int, stream: Any) -> None:
        """Set `nbytes` bytes at `address` to the byte `value`. Asynchronous."""

    @abc.abstractmethod
    def copy_host_to_device(self, dst: int, src: Any, nbytes: int, stream: Any) -> None:
        """Copy `nbytes` from a C-contiguous numpy array or buffer to device memory.
        Asynchronous: `src` must stay unchanged until the stream has passed the copy
        (the driver keeps it alive)."""

    @abc.abstractmethod
    def copy_device_to_host(self, dst: np.ndarray, src: int, nbytes: int, stream: Any) -> None:
        """Copy `nbytes` of device memory into a writable C-contiguous numpy array.
        Asynchronous: read `dst` only after synchronising."""

    @abc.abstractmethod
    def copy_device_to_device(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        """Copy within one device. Asynchronous."""

    @abc.abstractmethod
    def copy_peer(self, dst: int, dst_index: int, src: int, src_index: int, nbytes: int,
                  stream: Any) -> None:
        """Copy between devices (peer access or staged by the driver). Asynchronous, ordered on
        `stream` (a stream of either device)."""

    @abc.abstractmethod
    def can_access_peer(self, index: int, peer: int) -> bool:
        """Whether device `index` can access `peer`'s memory directly."""

    @abc.abstractmethod
    def host_alloc(self, nbytes: int) -> np.ndarray:
        """Page-locked host memory for staging, as a uint8 numpy array of `nbytes`."""

    @abc.abstractmethod
    def host_free(self, array: np.ndarray) -> None:
        """Give back memory from `host_alloc` (it is released when the last view dies)."""

    # -- streams and events -----------------------------------------------------------------------
    @abc.abstractmethod
    def create_stream(self, index: int) -> Any:
        """A new in-order stream on the device."""

    @abc.abstractmethod
    def default_stream(self, index: int) -> Any:
        """The driver-owned stream of the device (created once, never destroyed)."""

    @abc.abstractmethod
    def destroy_stream(self, stream: Any) -> None:
        """Release a stream from `create_stream` after its queued work has finished."""

    @abc.abstractmethod
    def stream_synchronize(self, stream: Any) -> None:
        """Wait until the stream's work is done; raise the first KernelError it had."""

    @abc.abstractmethod
    def stream_query(self, stream: Any) -> bool:
        """True when all work queued on the stream has finished."""

    @abc.abstractmethod
    def stream_wait_event(self, stream: Any, event: Any) -> None:
        """Work queued on `stream` after this call waits for `event`'s last record.
        Asynchronous (the host does not wait)."""

    @abc.abstractmethod
    def stream_ptr(self, stream: Any) -> int:
        """The stream's raw handle as an int (cudaStream_t; an id on the simulator)."""

    @abc.abstractmethod
    def create_event(self, index: int, timing: bool = True) -> Any:
        """A new event; `timing=False` makes it cheaper and unusable for elapsed time."""

    @abc.abstractmethod
    def destroy_event(self, event: Any) -> None:
        """Release an event."""

    @abc.abstractmethod
    def event_record(self, event: Any, stream: Any) -> None:
        """Record the event at the current end of `stream`. Asynchronous."""

    @abc.abstractmethod
    def event_synchronize(self, event: Any) -> None:
        """Wait for the event's last record to complete (at once if never recorded)."""

    @abc.abstractmethod
    def event_query(self, event: Any) -> bool:
        """True when the event's last record has completed (or it was never recorded)."""

    @abc.abstractmethod
    def event_elapsed_ms(self, start: Any, end: Any) -> float:
        """Milliseconds between two completed timing events; RuntimeError if either has not
        completed, ValueError if either was made with timing=False."""

    # -- kernels ----------------------------------------------------------------------------------
    @abc.abstractmethod
    def compile(self, index: int, source: str, options: Sequence[str] = (),
                name_expressions: Sequence[str] = ()) -> Module:
        """Compile CUDA C for the device (NVRTC options). `name_expressions` name template
        instantiations to export (`"kernel<float>"`). CompileError with the log on failure.
        Results are cached (memory and disk) through the kernel cache."""

    @abc.abstractmethod
    def launch(self, function: Function, grid: tuple[int, int, int],
               block: tuple[int, int, int], args: Sequence[np.generic], shared_mem: int,
               stream: Any) -> None:
        """Launch `function` with `args` (numpy scalars, pointers as numpy.uintp). Asynchronous.
        The configuration (grid, block, shared memory) and the argument count are checked here:
        ValueError/TypeError before anything is queued."""

    # -- graphs -----------------------------------------------------------------------------------
    def capture(self, index: int, launches: Sequence[Launch]) -> Any:
        """A graph of `launches` (each `launch`'s arguments but the stream) on device `index`,
        which `launch_graph` queues on a stream as one unit; nothing runs now. By default the
        graph is the launches themselves, queued one by one (the simulator and the null
        driver); a driver with CUDA graphs captures them into one."""
        return tuple(launches)

    def launch_graph(self, graph: Any, stream: Any) -> None:
        """Queue a graph made by `capture` on `stream`. Asynchronous."""
        for function, grid, block, args, shared_mem in graph:
            self.launch(function, grid, block, args, shared_mem, stream)


def check_launch(props: DeviceProperties, function: Function, grid: Sequence[int],
                 block: Sequence[int], args: Sequence[Any], shared_mem: int,
                 max_dynamic_shared: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Validate a launch configuration against the device; returns (grid, block) as triples."""
    def triple(value: Sequence[int], what: str, limits: tuple[int, int, int]) -> tuple[int, ...]:
        if isinstance(value, (int, np.integer)):
            value = (int(value),)
        if not isinstance(value, (tuple, list)) or not 1 <= len(value) <= 3:
            raise TypeError(f"{what} must be an int or a tuple of 1 to 3 ints, got {value!r}")
        dims = [int(v) for v in value] + [1] * (3 - len(value))
        for d, limit, axis in zip(dims, limits, "xyz"):
            if not 1 <= d <= limit:
                raise ValueError(f"{what}.{axis} = {d} is outside 1..{limit} on "
                                 f"{props.name}")
        return tuple(dims)

    g = triple(grid, "grid", props.max_grid_dims)
    b = triple(block, "block", props.max_block_dims)
    threads = b[0] * b[1] * b[2]
    if threads > props.max_threads_per_block:
        raise ValueError(f"a block of {threads} threads exceeds the device's "
                         f"{props.max_threads_per_block} threads per block")
    if not isinstance(shared_mem, (int, np.integer)) or not 0 <= shared_mem <= max_dynamic_shared:
        raise ValueError(f"shared_mem = {shared_mem!r}: dynamic shared memory must be an int in "
                         f"0..{max_dynamic_shared} bytes")
    for i, a in enumerate(args):
        if not isinstance(a, np.generic):
            raise TypeError(f"kernel argument {i} is {type(a).__name__}; the driver takes numpy "
                            "scalars (pointers as numpy.uintp); use hxarray.backends.cuda.raw "
                            "for Python values")
    params = function.params
    if params is not None:
        if len(args) != len(params):
            raise TypeError(f"kernel '{function.name}' takes {len(params)} arguments, "
                            f"{len(args)} given")
        for i, (a, p) in enumerate(zip(args, params)):
            if a.nbytes != p.size:
                raise TypeError(f"kernel '{function.name}' argument {i} is {p.size} bytes "
                                f"({p.kind}), got {a.dtype} of {a.nbytes} bytes")
    return g, b  # type: ignore[return-value]


def load_driver() -> Driver:
    """The driver `HXARRAY_CUDA_DRIVER` names ('sim', 'cupy' or 'null'); unset: CuPy when it
    imports and sees a GPU, else CUDAUnavailableError saying why."""
    choice = CUDA_DRIVER.get()
    if choice == "sim":
        from .sim import SimDriver

        return SimDriver()
    if choice == "cupy":
        from .driver_cupy import CupyDriver

        return CupyDriver()
    if choice == "null":
        from .driver_null import NullDriver

        return NullDriver()
    try:
        import cupy  # noqa: F401
    except Exception as exc:  # CuPy missing or broken
        reason = f"CuPy does not import ({type(exc).__name__}: {exc})"
    else:
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # no driver: CUDARuntimeError and friends
            reason = f"CuPy finds no usable GPU ({type(exc).__name__}: {exc})"
        else:
            if count > 0:
                from .driver_cupy import CupyDriver

                return CupyDriver()
            reason = "CuPy reports 0 GPUs"
    raise CUDAUnavailableError(f"CUDA is unavailable: {reason}. Set HXARRAY_CUDA_DRIVER=sim to run "
                               "CUDA devices on the CPU simulator")
