"""The CUDA backend: `cuda:N` devices running CUDA C kernels that hxarray generates
(`codegen/`), launched through a driver: CuPy on a GPU, the CPU simulator everywhere else
(`HXARRAY_CUDA_DRIVER=sim`, docs/cuda.md).

The primitives without a kernel of their own yet run the CPU backend on host copies; every such
call is counted in `host_fallbacks` (by operation), and `stats(device)` reports it with the
kernel launches and compilations.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import _dtypes as dt
from ... import _views
from ..._array import Array
from ..._ops import OPS
from ...hal.allocator import StreamOrderedAllocator
from ...hal.backend import Backend
from ...hal.device import Device, DeviceType
from . import launch, peaks
from .codegen import Library
from .codegen import elementwise as ew
from .driver import CUDAUnavailableError, DeviceProperties, Driver, load_driver
from .runtime import CudaEvent, CudaMemory, CudaStream

Scalar = bool | int | float | complex


class _DeviceState:
    """What the backend keeps per device: properties, allocator, default stream, kernels,
    counters."""

    def __init__(self, driver: Driver, device: Device) -> None:
        self.properties: DeviceProperties = driver.properties(device.index)
        self.default_stream = CudaStream(driver, device, driver.default_stream(device.index))
        self.memory = CudaMemory(driver, device, self.default_stream)
        total = self.properties.total_memory
        self.allocator = StreamOrderedAllocator(self.memory, max_cached_bytes=total // 2)
        self.library = Library(driver, device.index)
        self.launches = 0


class CudaBackend(Backend):
    device_type = DeviceType.CUDA
    priority = 10  # above the CPU: the device to pick when one is chosen by capability

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._states: dict[int, _DeviceState] = {}
        try:
            self.driver: Driver | None = load_driver()
            self._reason: str | None = None
        except CUDAUnavailableError as exc:
            self.driver, self._reason = None, str(exc)

    # == device runtime ============================================================================
    def unavailable_reason(self) -> str | None:
        return self._reason

    def device_count(self) -> int:
        return 0 if self.driver is None else self.driver.device_count()

    def _state(self, device: Device) -> _DeviceState:
        state = self._states.get(device.index)
        if state is None:
            with self._lock:
                state = self._states.get(device.index)
                if state is None:
                    state = self._states[device.index] = _DeviceState(self.driver, device)
        return state

    @property
    def simulated(self) -> bool:
        return self.driver is not None and self.driver.simulated

    def capabilities(self, device: Device) -> dict[str, Any]:
        p = self._state(device).properties
        free, total = self.driver.mem_info(device.index)
        return {
            "name": p.name, "vendor": "hxarray (simulated NVIDIA GPU)" if p.simulated else "NVIDIA",
            "simulated": p.simulated, "total_memory": total, "free_memory": free,
            "compute_units": p.multiprocessor_count,
            "compute_capability": f"{p.compute_capability[0]}.{p.compute_capability[1]}",
            "max_threads_per_block": p.max_threads_per_block, "warp_size": p.warp_size,
            "shared_memory_per_block": p.shared_memory_per_block,
            "features": ["simulated on the CPU"] if p.simulated else [],
        }

    def performance(self, device: Device) -> dict[str, Any] | None:
        """Peaks from a GPU's properties (`peaks.from_properties`); None on the simulator,
        whose speed is the host's and is measured instead."""
        p = self._state(device).properties
        return None if p.simulated else peaks.from_properties(p)

    def allocator(self, device: Device) -> StreamOrderedAllocator:
        return self._state(device).allocator

    def default_stream(self, device: Device) -> CudaStream:
        return self._state(device).default_stream

    def create_stream(self, device: Device, **options: Any) -> CudaStream:
        return CudaStream(self.driver, device)

    def create_event(self, device: Device, **options: Any) -> CudaEvent:
        return CudaEvent(self.driver, device, **options)

    def stats(self, device: Device) -> dict[str, Any]:
        """Kernel launches, compilations and compiled-kernel cache hits on `device`, and the
        operations that ran on the host instead (this backend's, by name)."""
        state = self._state(device)
        return {"kernel_launches": state.launches, "compilations": state.library.compilations,
                "kernel_cache_hits": state.library.hits,
                "host_fallbacks": dict(self.host_fallbacks)}

    def copy_to(self, x: Array, device: Device) -> Array:
        """Another CUDA device: a peer copy of a contiguous x (the driver stages it where the
        devices cannot reach each other)."""
        source = x if _views.is_contiguous(x) else self.copy(x)
        out = self.empty(source._shape, source._dtype, device)
        if out._buffer.nbytes:
            stream = self.stream(device)
            self.stream(x._buffer.device).synchronize()  # the source's pending work first
            self.driver.copy_peer(out._buffer.address + out._offset, device.index,
                                  source._buffer.address + source._offset,
                                  x._buffer.device.index, out._buffer.nbytes, stream.handle)
        return out

    def dlpack_device(self, device: Device) -> tuple[int, int]:
        # A simulated device's memory is host memory: it never claims to be a GPU's.
        return (1, 0) if self.simulated else (2, device.index)  # kDLCPU, kDLCUDA

    def dlpack(self, x: Array, *, stream: Any, max_version: Any, dl_device: Any, copy: Any) -> Any:
        """On a GPU, CuPy's exporter over the memory in place, with the consumer's stream; on the
        simulator, the host memory in place once the device's work is done (kDLCPU)."""
        if not self.simulated:
            from .interop import cupy_view

            return cupy_view(self, x).__dlpack__(stream=stream, max_version=max_version,
                                                 dl_device=dl_device, copy=copy)
        if dl_device is not None and tuple(dl_device) != (1, 0):
            raise BufferError(f"{x.device} is simulated in host memory: it exports to DLPack as "
                              f"kDLCPU (1, 0), not {tuple(dl_device)}")
        self.synchronize(x._buffer.device)
        host = _host_memory(x)
        if max_version is None:
            return (host.copy() if copy else host).__dlpack__()
        return host.__dlpack__(max_version=max_version, copy=copy)

    # == primitives ================================================================================
    def _launch(self, device: Device, source: str, name: str, batch: Callable[[], list[str]],
                work: int, args: Sequence[Any], operands: Sequence[Array],
                config: tuple[tuple[int, int, int], tuple[int, int, int], int] | None = None
                ) -> None:
        """Launch kernel `name` of `source` (compiling `batch()` with it when new) on the current
        stream, recording the stream's use of every operand's memory: over `work` independent
        items (a grid-stride loop), or with an explicit (grid, block, dynamic shared memory)."""
        state = self._state(device)
        function = self._function(state, source, name, batch)
        stream = self.stream(device)
        for a in operands:  # the buffer's own allocator: a memory scope's pool, or the device's
            a._buffer.allocator.record_stream(a._buffer.block, stream)
        if config is None:
            grid, block = launch.grid_for(state.properties, function, work)
            shared = 0
        else:
            grid, block, shared = config
        self.driver.launch(function, grid, block, args, shared, stream.handle)
        state.launches += 1

    @staticmethod
    def _function(state: _DeviceState, source: str, name: str,
                  batch: Callable[[], list[str]]) -> Any:
        library = state.library
        function = library._functions.get((source, name))
        return function if function is not None else library.function(source, name, batch())

    def assign(self, dst: Array, src: Array | Scalar) -> None:
        self._map(ew.COPY, (src,), dst._dtype if src.__class__ is not Array else src._dtype, dst)

    def elementwise(self, name: str, args: Sequence[Array | Scalar], dtype: dt.DType,
                    shape: tuple[int, ...], out: Array | None = None) -> Array:
        device = next(a for a in args if a.__class__ is Array)._buffer.device
        if out is None:
            out = self.empty(shape, dtype, device)
        if name == "clip":  # maximum, then minimum, as numpy's clip kernel computes it
            x, low, high = args
            current = x
            for bound, step in ((low, "maximum"), (high, "minimum")):
                if bound is not None:
                    self.elementwise(step, (current, bound), dtype, shape, out)
                    current = out
            if current is x:
                self.assign(out, x)
            return out
        self._map(name, args, self._compute_dtype(name, args, dtype), out)
        return out

    @staticmethod
    def _compute_dtype(name: str, args: Sequence[Array | Scalar], dtype: dt.DType) -> dt.DType:
        """The dtype the operation computes in: the result's, or for comparisons and the real
        parts of complex numbers, the operands' promoted dtype (numpy's rules: Python scalars
        are weak)."""
        op = OPS[name]
        if op.result == "same":
            return dtype
        arrays = [a for a in args if a.__class__ is Array]
        if name == "where":
            return dtype
        if op.result == "real":
            return arrays[0]._dtype
        scalars = [a for a in args if a.__class__ is not Array]
        return dt.FROM_NUMPY[np.result_type(*(a._dtype.numpy for a in arrays), *scalars)]

    def _map(self, name: str, args: Sequence[Array | Scalar], compute: dt.DType,
             out: Array) -> None:
        """out[...] = op(args) element by element (broadcast), computed in `compute`."""
        shape = out._shape
        if 0 in shape:
            return
        device = out._buffer.device
        args = [self._unaliased(a, out) for a in args]
        arrays = [a for a in args if a.__class__ is Array]
        strides = [ew.broadcast_strides(shape, a._shape, a._strides) for a in arrays]
        dims, steps = ew.collapse(shape, [out._strides, *strides])
        if len(dims) > ew.MAX_DIMS:  # rare: one launch per index of the first axis
            for i in range(shape[0]):
                self._map(name, [_views.slice_axis(_views.broadcast_to(a, shape), 0, i, i + 1)
                                 if a.__class__ is Array else a for a in args], compute,
                          _views.slice_axis(out, 0, i, i + 1))
            return
        contiguous = all(s == (a._dtype.itemsize,) for s, a in zip(steps, [out, *arrays])) \
            if len(dims) == 1 else not dims
        packed_steps = iter(steps[1:])
        operands = []
        for a in args:
            if a.__class__ is Array:
                operands.append(ew.pack_operand(a._buffer.address + a._offset,
                                                next(packed_steps)))
            else:
                with np.errstate(all="ignore"):
                    operands.append(ew.pack_operand(None, (), a, compute))
        size = int(np.prod(dims, dtype=np.int64)) if dims else 1
        index = ew.INDEX_TYPES[size >= 2**31]
        dtypes = [a._dtype if a.__class__ is Array else compute for a in args]
        if name == "where":
            dtypes = dtypes[1:]
        kernel = ew.kernel_name(name, out._dtype, compute, dtypes, index)
        same = all(d is compute for d in dtypes) and index == ew.INDEX_TYPES[0]
        self._launch(device, ew.source(name), kernel,
                     lambda: ew.same_dtype_batch(name, compute) if same else [kernel], size,
                     [*operands, ew.pack_output(out._buffer.address + out._offset, steps[0]),
                      ew.pack_shape(dims, contiguous)], [out, *arrays])

    def _unaliased(self, a: Array | Scalar, out: Array) -> Array | Scalar:
        """`a`, or a copy of it where it shares memory with `out` other than element for element
        (x[1:] += x[:-1]): the kernel would read values it has already written."""
        if a.__class__ is not Array or a._buffer is not out._buffer:
            return a
        if a._offset == out._offset and a._shape == out._shape and a._strides == out._strides:
            return a
        return self.copy(a)

    # -- primitives that run on the host for now (counted) --------------------------------------
    def _host_into(self, label: str, out: Array, run: Callable[..., None],
                   *inputs: Any) -> None:
        """`run(cpu_backend, *inputs, host_out)` with the array inputs copied to the CPU, then
        host_out copied into `out`; counted in `host_fallbacks[label]`."""
        cpu_device = Device(DeviceType.CPU)
        cpu = cpu_device.backend
        with self._lock:
            self.host_fallbacks[label] += 1
        moved = [cpu.from_host(self.to_host(a), cpu_device) if a.__class__ is Array else
                 [cpu.from_host(self.to_host(i), cpu_device) for i in a] if isinstance(a, list)
                 else a for a in inputs]
        host_out = cpu.empty(out._shape, out._dtype, cpu_device)
        run(cpu, *moved, host_out)
        self.assign(out, self.from_host(cpu.to_host(host_out), out._buffer.device))

    def reduce(self, name, x, axes, out) -> None:
        self._host_into(name, out, lambda cpu, h, o: cpu.reduce(name, h, axes, o), x)

    def arg_reduce(self, name, x, axis, out) -> None:
        self._host_into(name, out, lambda cpu, h, o: cpu.arg_reduce(name, h, axis, o), x)

    def scan(self, name, x, axis, out) -> None:
        self._host_into(name, out, lambda cpu, h, o: cpu.scan(name, h, axis, o), x)

    def matmul(self, a, b, out) -> None:
        self._host_into("matmul", out, lambda cpu, ha, hb, o: cpu.matmul(ha, hb, o), a, b)

    # -- CuPy's library functions on a GPU, the CPU backend on the simulator (counted) ---------
    def sort(self, x, axis, stable, out) -> None:
        if not self.simulated:
            from . import interop

            return interop.run_into(self, out, lambda v: interop.sort(v, axis, stable), x)
        self._host_into("sort", out, lambda cpu, h, o: cpu.sort(h, axis, stable, o), x)

    def argsort(self, x, axis, stable, out) -> None:
        if not self.simulated:
            from . import interop

            return interop.run_into(self, out, lambda v: interop.argsort(v, axis, stable), x)
        self._host_into("argsort", out, lambda cpu, h, o: cpu.argsort(h, axis, stable, o), x)

    def searchsorted(self, x1, x2, side, out) -> None:
        if not self.simulated:
            from . import interop

            return interop.run_into(self, out, lambda a, k: interop.searchsorted(a, k, side),
                                    x1, x2)
        self._host_into("searchsorted", out,
                        lambda cpu, h1, h2, o: cpu.searchsorted(h1, h2, side, o), x1, x2)

    def unique(self, x):
        if not self.simulated:
            from . import interop

            return interop.run(self, interop.unique, x)
        return self._on_host("unique", lambda cpu, h: cpu.unique(h), x)

    def linalg(self, name, *args, **params):
        if not self.simulated:
            from . import interop

            if name in interop.LINALG:
                return interop.run(self, lambda *v: interop.linalg(name, *v, **params), *args)
        return super().linalg(name, *args, **params)

    def fft(self, name, x, **params):
        if not self.simulated:
            from . import interop

            return interop.run(self, lambda v: interop.fft(name, v, **params), x)
        return super().fft(name, x, **params)

    def gather(self, x, axis, indices, out) -> None:
        self._host_into("gather", out, lambda cpu, h, i, o: cpu.gather(h, axis, i, o), x,
                        list(indices))

    def scatter(self, x, axis, indices, values) -> None:
        def store(cpu, host_x, host_indices, host_values, host_out):
            cpu.assign(host_out, host_x)
            cpu.scatter(host_out, axis, host_indices, host_values)
        self._host_into("scatter", x, store, x, list(indices), values)

    def nonzero(self, x) -> tuple[Array, ...]:
        return self._on_host("nonzero", lambda cpu, h: cpu.nonzero(h), x)



def _host_memory(x: Array) -> np.ndarray:
    """A numpy view of a simulated device array's memory that keeps its buffer alive."""
    owner = _HostMemory(x._buffer)
    return np.ndarray(x._shape, x._dtype.numpy, buffer=np.asarray(owner), offset=x._offset,
                      strides=x._strides)


class _HostMemory:
    """Exposes a simulated device buffer (host memory) to numpy, keeping the buffer alive."""

    def __init__(self, buffer: Any) -> None:
        self.buffer = buffer
        self.__array_interface__ = {"data": (buffer.block.address, False),
                                    "shape": (buffer.nbytes,), "typestr": "|u1", "version": 3}

