"""The CUDA backend: `cuda:N` devices running CUDA C kernels that hxarray generates
(`backends/codegen/`), launched through a driver: CuPy on a GPU, the CPU simulator everywhere else
(`HXARRAY_CUDA_DRIVER=sim`, docs/cuda.md).

The primitives without a kernel of their own yet run the CPU backend on host copies; every such
call is counted in `host_fallbacks` (by operation), and `stats(device)` reports it with the
kernel launches and compilations.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import _dtypes as dt
from ... import _views
from ..._array import Array
from ..._ops import OPS, ArgReduction, Op, Reduction, Scan, Signature
from ...hal.allocator import Allocator, StreamOrderedAllocator
from ...hal.device import Device, DeviceType
from ...hal.hooks import observe, observers
from ...hal.scope import StreamOrderedScopePool, scoped_pools
from ...hal.stream import calling
from .. import fusion, philox
from ..base import Backend
from ..codegen import elementwise as ew
from ..codegen import fused as fused_codegen
from ..codegen import gemm
from ..codegen import indexing as ix
from ..codegen import random as rng
from ..codegen import reduction as rd
from ..codegen import scan as sc
from ..fusion import Expression
from ..recording import Call
from . import launch, peaks
from .driver import CUDAUnavailableError, DeviceProperties, Driver, Launch, load_driver
from .launch import reduction_plan, scan_plan
from .library import Library
from .runtime import (
    CudaEvent,
    CudaMemory,
    CudaStream,
    DeferredCheck,
    DeferredErrors,
    ManagedMemory,
    sync_checks,
)

Scalar = bool | int | float | complex
# A launch of one layout: the kernel, (grid, block, shared memory), the argument packer.
_Plan = tuple[Any, tuple[tuple[int, int, int], tuple[int, int, int], int],
              Callable[[Sequence[Any]], list[Any]]]
_MAX_PLANS = 4096  # layouts kept per device (all forgotten at once when full)
# What `nonzero` computes coordinates with.
_FLOOR_DIVIDE, _REMAINDER = OPS["floor_divide"], OPS["remainder"]
_INT64_PAIR = _FLOOR_DIVIDE.signature(dt.int64, dt.int64)


class _DeviceState:
    """What the backend keeps per device: properties, allocator, default stream, kernels,
    counters."""

    def __init__(self, driver: Driver, device: Device) -> None:
        self.properties: DeviceProperties = driver.properties(device.index)
        self.errors = DeferredErrors(device)  # raised by any stream's synchronize
        self.default_stream = CudaStream(driver, device, driver.default_stream(device.index),
                                         self.errors)
        self.memory = CudaMemory(driver, device, self.default_stream)
        total = self.properties.total_memory
        self.allocator = StreamOrderedAllocator(self.memory, max_cached_bytes=total // 2,
                                                exact=driver.check)
        self.library = Library(driver, device.index)
        self.kernels: dict[tuple[Op, Signature, str], Any] = {}  # element-wise, compiled
        self.plans: dict[tuple[Any, ...], _Plan] = {}  # launches by operation and layout
        self.launches = 0


class _Launches:
    """Consecutive kernel launches of a replay (`CudaBackend.prepare_all`) and the driver's
    graph of them, captured once: queued as one graph, or launch by launch while the hooks
    observe (each kernel its own event) or where the driver could not capture them (said
    once, with a RuntimeWarning: the replay stays correct, only slower)."""

    def __init__(self, driver: Driver, device: Device, launches: list[Launch]) -> None:
        self.driver, self.device, self.launches = driver, device, launches
        try:
            self.graph = driver.capture(device.index, launches)
        except Exception as exc:  # (a driver's refusal, whatever its class: CuPy's, CUDA's)
            warnings.warn(f"hxarray.graph: {device} could not capture {len(launches)} kernel "
                          f"launches into a CUDA graph ({type(exc).__name__}: {exc}); they are "
                          "queued one by one", RuntimeWarning, stacklevel=2)
            self.graph = None

    def queue(self, stream: Any) -> None:
        if self.graph is not None and not observers:
            self.driver.launch_graph(self.graph, stream)
            return
        for function, grid, block, args, shared in self.launches:
            if observers:
                observe("kernel", function.name, self.device, {}, self.driver.launch, function,
                        grid, block, args, shared, stream)
            else:
                self.driver.launch(function, grid, block, args, shared, stream)


class CudaBackend(Backend):
    device_type = DeviceType.CUDA
    priority = 10  # above the CPU: the device to pick when one is chosen by capability

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._states: dict[int, _DeviceState] = {}
        self._fused_sources: dict[Expression, str] = {}
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
            "managed_memory": self.driver.managed_memory(device.index),
        }

    def performance(self, device: Device) -> dict[str, Any] | None:
        """Peaks from a GPU's properties (`peaks.from_properties`); None on the simulator,
        whose speed is the host's and is measured instead."""
        p = self._state(device).properties
        return None if p.simulated else peaks.from_properties(p)

    def allocator(self, device: Device) -> StreamOrderedAllocator:
        return self._state(device).allocator

    def empty(self, shape: tuple[int, ...], dtype: dt.DType, device: Device) -> Array:
        pools = scoped_pools.get()
        if pools and device in pools:  # a memory scope's
            return self.empty_in(pools[device], shape, dtype, device)
        state = self._states.get(device.index) or self._state(device)
        return self.empty_in(state.allocator, shape, dtype, device)

    def default_stream(self, device: Device) -> CudaStream:
        return self._state(device).default_stream

    def create_stream(self, device: Device, **options: Any) -> CudaStream:
        return CudaStream(self.driver, device, errors=self._state(device).errors)

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
            source_stream = self.stream(x._buffer.device)
            source_stream.synchronize()  # the source's pending work first
            self._refuse_failed(x)
            self.driver.copy_peer(out._buffer.address + out._offset, device.index,
                                  source._buffer.address + source._offset,
                                  x._buffer.device.index, out._buffer.nbytes, stream.handle)
            # and the source's later work after the copy: an in-place write to x queued next on
            # its device must not reach the bytes before the other device's stream has read them
            source_stream.wait_stream(stream)
            # the source's block is read on the other device's stream: it must not be handed to
            # new work on its own device before that copy has run
            source._buffer.allocator.record_stream(source._buffer.block, stream)
        return out

    def copy(self, x: Array, dtype: dt.DType | None = None) -> Array:
        """A C-contiguous copy of `x`, cast to `dtype` if given: one device-to-device memcpy
        where x is C-contiguous and keeps its dtype (no kernel), else the assign kernel."""
        if (dtype is None or dtype is x._dtype) and _views.is_contiguous(x):
            out = self.empty(x._shape, x._dtype, x._buffer.device)
            self._copy_bytes(out, x)
            return out
        return super().copy(x, dtype)

    def _copy_bytes(self, out: Array, x: Array) -> None:
        """out = x, both C-contiguous, of one dtype and shape on one device: a memcpy on the
        current stream, which both blocks are recorded as used by."""
        device = out._buffer.device
        state = self._states[device.index]
        if state.errors.failed:
            state.errors.refuse_failed((out, x))
        nbytes = out.size * out._dtype.itemsize
        if nbytes:
            stream = self.stream(device)
            out._buffer.allocator.record_stream(out._buffer.block, stream)
            x._buffer.allocator.record_stream(x._buffer.block, stream)
            self.driver.copy_device_to_device(out._buffer.address + out._offset,
                                              x._buffer.address + x._offset, nbytes,
                                              stream.handle)

    def to_host(self, x: Array) -> np.ndarray:
        """The copy of `Backend.to_host`, refused where x is the result of a failed call (as
        its synchronisation may just have found)."""
        host = super().to_host(x)
        self._refuse_failed(x)
        return host

    def _refuse_failed(self, x: Array) -> None:
        """DeferredIndexError where x is the result of a call found to have failed."""
        errors = self._state(x._buffer.device).errors
        if errors.failed:
            errors.refuse_failed((x,))

    def scope_allocator(self, device: Device, managed: bool = False) -> Allocator:
        """With `managed`: a pool of managed memory (`ManagedMemory`, stream-ordered as the
        device's own pool)."""
        if not managed:
            return super().scope_allocator(device)
        if not self.driver.managed_memory(device.index):
            return super().scope_allocator(device, managed=True)  # (its ValueError)
        state = self._state(device)
        return StreamOrderedScopePool(ManagedMemory(self.driver, device, state.default_stream))

    def host_view(self, x: Array) -> np.ndarray | None:
        """Managed memory in place, once the device's work is done (None for device memory)."""
        if not getattr(getattr(x._buffer.allocator, "raw", None), "managed", False):
            return None
        self.synchronize(x._buffer.device)
        self._refuse_failed(x)
        host = np.ndarray(x._shape, x._dtype.numpy, buffer=np.asarray(x._buffer),
                          offset=x._offset, strides=x._strides)
        if x._readonly:
            host.flags.writeable = False
        return host

    def prefetch(self, x: Array, device: Device) -> None:
        raw = getattr(x._buffer.allocator, "raw", None)
        if not getattr(raw, "managed", False):
            super().prefetch(x, device)
        if device.type is not DeviceType.CPU and device.type is not DeviceType.CUDA:
            raise ValueError(f"prefetch(): managed memory moves to a CUDA device or the CPU, "
                             f"not {device}")
        source = x._buffer.device
        stream = self.stream(source)
        block = x._buffer.block
        x._buffer.allocator.record_stream(block, stream)
        self.driver.prefetch(block.address, x._buffer.nbytes,
                             None if device.type is DeviceType.CPU else device.index,
                             stream.handle)

    def dlpack_device(self, device: Device) -> tuple[int, int]:
        # A simulated device's memory is host memory: it never claims to be a GPU's.
        return (1, 0) if self.simulated else (2, device.index)  # kDLCPU, kDLCUDA

    def dlpack(self, x: Array, *, stream: Any, max_version: Any, dl_device: Any, copy: Any) -> Any:
        """On a GPU, CuPy's exporter over the memory in place, or over a copy on the device
        (`copy=True`, and a read-only array: CuPy's arrays have no read-only flag) whose capsule
        says it is one; called on the stream that produced x (the current one), so the
        consumer's `stream` is made to wait for it. On the simulator, the host memory in place
        once the device's work is done (kDLCPU, read-only where x is)."""
        if not self.simulated:
            from .interop import cupy_view, mark_copied, on_stream

            self._refuse_failed(x)  # (where found already: the export does not wait for it)
            if x._readonly and copy is False:
                raise BufferError(f"__dlpack__(copy=False): a read-only array on {x.device} can "
                                  "only be exported as a copy (CuPy's arrays have no read-only "
                                  "flag)")
            to_host = dl_device is not None and tuple(dl_device) == (1, 0)
            with on_stream(self, x._buffer.device):
                if (x._readonly or copy) and not to_host:  # the copy, ordered after x's work
                    return mark_copied(cupy_view(self, x).copy().__dlpack__(
                        stream=stream, max_version=max_version, dl_device=dl_device))
                return cupy_view(self, x).__dlpack__(stream=stream, max_version=max_version,
                                                     dl_device=dl_device, copy=copy)
        if dl_device is not None and tuple(dl_device) != (1, 0):
            raise BufferError(f"{x.device} is simulated in host memory: it exports to DLPack as "
                              f"kDLCPU (1, 0), not {tuple(dl_device)}")
        self.synchronize(x._buffer.device)
        self._refuse_failed(x)
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
        stream: over `work` independent items (a grid-stride loop), or with an explicit (grid,
        block, dynamic shared memory)."""
        state = self._state(device)
        function = self._function(state, source, name, batch)
        if config is None:
            grid, block = launch.grid_for(state.properties, function, work)
            config = (grid, block, 0)
        self._submit(device, function, config, args, operands)

    def _submit(self, device: Device, function: Any,
                config: tuple[tuple[int, int, int], tuple[int, int, int], int],
                args: Sequence[Any], operands: Sequence[Array]) -> None:
        """Queue `function` with (grid, block, shared memory) `config` and `args` on the current
        stream, recording the stream's use of every operand's memory (through the buffer's own
        allocator: a memory scope's pool, or the device's). The hooks' kernel point."""
        state = self._states[device.index]
        if state.errors.failed:  # (empty unless an earlier call failed)
            state.errors.refuse_failed(operands)
        stream = self.stream(device)
        for a in operands:
            a._buffer.allocator.record_stream(a._buffer.block, stream)
        grid, block, shared = config
        if observers:
            observe("kernel", function.name, device, {}, self.driver.launch, function, grid,
                    block, args, shared, stream.handle)
        else:
            self.driver.launch(function, grid, block, args, shared, stream.handle)
        state.launches += 1

    @staticmethod
    def _function(state: _DeviceState, source: str, name: str,
                  batch: Callable[[], list[str]]) -> Any:
        """The compiled kernel `name` of `source`: a dict hit once compiled; else compiled or
        loaded from the kernel cache (the hooks' compile point)."""
        library = state.library
        function = library._functions.get((source, name))
        if function is not None:
            return function
        if observers:
            return observe("compile", name, Device(DeviceType.CUDA, library.index), {},
                           library.function, source, name, batch())
        return library.function(source, name, batch())

    def _kernel(self, state: _DeviceState, op: Op, signature: Signature, index: str) -> Any:
        """The compiled element-wise kernel of `op` on `signature` with `index`: a dict hit
        after the first call."""
        key = (op, signature, index)
        function = state.kernels.get(key)
        if function is None:
            source, name, batch = ew.kernel(op, signature, index)
            function = state.kernels[key] = self._function(state, source, name, lambda: batch)
        return function

    def assign(self, dst: Array, src: Array | Scalar) -> None:
        dtype = dst._dtype if src.__class__ is not Array else src._dtype
        if 0 not in dst._shape:
            src = self._unaliased(src, dst)
            self._map(ew.COPY, (src,), Signature((dtype,), dtype, dst._dtype), dst)

    def elementwise(self, op: Op, args: Sequence[Array | Scalar | None], signature: Signature,
                    shape: tuple[int, ...], out: Array | None = None) -> Array:
        if out is None:
            for a in args:
                if a.__class__ is Array:
                    out = self.empty(shape, signature.result, a._buffer.device)
                    break
        else:
            args = [self._unaliased(a, out) for a in args]
        if op.chain:  # its operations in turn, each with the next operand
            x, *others = args
            current = x
            for step, operand, dtype in zip(op.chain, others, signature.operands[1:]):
                if operand is not None:
                    self.elementwise(step, (current, operand), Signature(
                        (current._dtype, dtype), signature.compute, signature.result), shape, out)
                    current = out
            if current is x:
                self.assign(out, x)
        elif 0 not in shape:
            self._map(op, args, signature, out)
        return out

    def prepare(self, call: Call) -> Callable[[], Any]:
        """An element-wise call as its kernel's launch with the arguments packed now (a
        replay queues it on the current stream, as `_map` would)."""
        launch = self._prepared_launch(call)
        if launch is None:
            return super().prepare(call)
        return functools.partial(self._submit, *launch)

    def prepare_all(self, calls: Sequence[Call], inputs: Sequence[Array]
                    ) -> Callable[[Sequence[Array]], None]:
        """The calls prepared, element-wise ones as their packed launches, and each run of
        consecutive launches captured as one graph by the driver (`Driver.capture`: a CUDA
        graph through CuPy; the launches themselves on the simulator). A replay copies the
        arguments in (a memcpy each where contiguous) and queues the steps on the current
        stream: each array's memory is marked as used by that stream once per replay (not once
        per launch), and a replay refuses arrays of a failed call once."""
        steps: list[Any] = []
        used: dict[int, Array] = {}  # id(buffer) -> an array over it
        for call in calls:
            launch = self._prepared_launch(call)
            if launch is None:
                steps.append(self.prepare(call))
                continue
            device, function, (grid, block, shared), packed, arrays = launch
            if steps and steps[-1].__class__ is list:
                steps[-1].append((function, grid, block, packed, shared))
            else:
                steps.append([(function, grid, block, packed, shared)])
            used.update((id(a._buffer), a) for a in arrays)
        device = inputs[0]._buffer.device if inputs else next(
            (a._buffer.device for a in used.values()), None)
        steps = [_Launches(self.driver, device, step) if step.__class__ is list else step
                 for step in steps]
        arrays = list(used.values())
        assign, copy_bytes = self.assign, self._copy_bytes

        def replay(arguments: Sequence[Array]) -> None:
            for into, value in zip(inputs, arguments, strict=True):
                if value._strides == into._strides:  # (C-contiguous, as `into` is: a memcpy)
                    copy_bytes(into, value)
                else:
                    assign(into, value)
            if device is None:  # (no launch)
                for step in steps:
                    step()
                return
            state = self._states[device.index]
            if state.errors.failed:
                state.errors.refuse_failed(arrays)
            stream = self.stream(device)
            for a in arrays:
                a._buffer.allocator.record_stream(a._buffer.block, stream)
            for step in steps:
                if step.__class__ is _Launches:
                    step.queue(stream.handle)
                    state.launches += len(step.launches)
                else:
                    step()

        return replay

    def _prepared_launch(self, call: Call) -> tuple[Any, ...] | None:
        """`_submit`'s arguments for an element-wise call (its launch planned and its arguments
        packed), or None where it does not run as one launch."""
        if call.primitive != "elementwise":
            return None
        op, args, signature, _, out = call.args
        if op.chain or 0 in out._shape or any(
                a.__class__ is Array and (a._buffer is out._buffer) and
                (a._offset, a._shape, a._strides) != (out._offset, out._shape, out._strides)
                for a in args):  # (what `elementwise` does around `_map`)
            return None
        device = out._buffer.device
        state = self._states.get(device.index) or self._state(device)
        values = [a._buffer.address + a._offset if a.__class__ is Array else a for a in args]
        address = out._buffer.address + out._offset
        arrays = [out, *(a for a in args if a.__class__ is Array)]
        aligned = not any((a._buffer.address + a._offset) & (ew.VECTOR_BYTES - 1)
                          for a in arrays)
        plan = self._plan_map(state, op, args, signature, out, aligned)
        if plan is None:
            return None
        function, config, pack = plan
        return device, function, config, pack([*values, address]), arrays

    def _map(self, op: Op, args: Sequence[Array | Scalar], signature: Signature,
             out: Array) -> None:
        """out[...] = op(args) element by element (broadcast): the launch of this layout from
        the device's plans (a dict hit after the first call), its arguments from the plan's
        packer."""
        device = out._buffer.device
        state = self._states.get(device.index) or self._state(device)
        key = [op, signature, out._shape, out._strides]
        values = []
        arrays = [out]
        for a in args:
            if a.__class__ is Array:
                key.append(a._shape)
                key.append(a._strides)
                values.append(a._buffer.address + a._offset)
                arrays.append(a)
            else:
                key.append(None)
                values.append(a)
        address = out._buffer.address + out._offset
        values.append(address)
        misaligned = address & (ew.VECTOR_BYTES - 1)
        for a in arrays[1:]:
            misaligned |= (a._buffer.address + a._offset) & (ew.VECTOR_BYTES - 1)
        key.append(not misaligned)
        key = tuple(key)
        plan = state.plans.get(key)
        if plan is None:
            plan = self._plan_map(state, op, args, signature, out, not misaligned)
            if plan is None:  # rare: more axes than a kernel takes
                self._map_by_rows(op, args, signature, out)
                return
            if len(state.plans) >= _MAX_PLANS:
                state.plans.clear()
            state.plans[key] = plan
        function, config, pack = plan
        self._submit(device, function, config, pack(values), arrays)

    def _plan_map(self, state: _DeviceState, op: Op, args: Sequence[Array | Scalar],
                  signature: Signature, out: Array, aligned: bool) -> _Plan | None:
        """The kernel, launch configuration and argument packer of `op` on this layout (every
        array starting on a 16-byte boundary where `aligned`); None where the merged axes are
        more than a kernel takes."""
        shape = out._shape
        arrays = [a for a in args if a.__class__ is Array]
        strides = [ew.broadcast_strides(shape, a._shape, a._strides) for a in arrays]
        dims, steps = ew.collapse(shape, [out._strides, *strides])
        if len(dims) > ew.MAX_DIMS:
            return None
        contiguous = _contiguous(dims, steps, [out, *arrays])
        kind = (ew.ALIGNED if aligned else ew.CONTIGUOUS) if contiguous else ew.STRIDED
        size = math.prod(dims)
        index = ew.INDEX_TYPES[size >= 2**31]
        function = self._kernel(state, op, signature, index)
        operands = signature.operands[1:] if op.selects else signature.operands
        work = -(-size // ew.per_thread(kind, [signature.result.itemsize,
                                               *(d.itemsize for d in operands)]))
        grid, block = launch.grid_for(state.properties, function, work)
        pack = ew.packer(dims, steps, kind, signature.compute,
                         [a.__class__ is not Array for a in args])
        return function, (grid, block, 0), pack

    def _map_by_rows(self, op: Op, args: Sequence[Array | Scalar], signature: Signature,
                     out: Array) -> None:
        """`_map` as one launch per index of the first axis."""
        shape = out._shape
        for i in range(shape[0]):
            self._map(op, [_views.slice_axis(_views.broadcast_to(a, shape), 0, i, i + 1)
                           if a.__class__ is Array else a for a in args], signature,
                      _views.slice_axis(out, 0, i, i + 1))

    def fused(self, expression: Expression, operands: Sequence[Array | Scalar],
              out: Array) -> None:
        """One generated kernel (codegen/fused.py) over out's shape."""
        shape = out._shape
        if 0 in shape:
            return
        arrays = [a for a in operands if a.__class__ is Array]
        strides = [ew.broadcast_strides(shape, a._shape, a._strides) for a in arrays]
        dims, steps = ew.collapse(shape, [out._strides, *strides])
        if len(dims) > ew.MAX_DIMS:  # rare: step by step
            super().fused(expression, operands, out)
            return
        packed_steps = iter(steps[1:])
        records = []
        for a, step in zip(operands, expression.steps):
            if a.__class__ is Array:
                records.append(ew.pack_operand(a._buffer.address + a._offset,
                                               next(packed_steps)))
            else:
                with np.errstate(all="ignore"):
                    records.append(ew.pack_operand(None, (), a, step.dtype))
        size = int(np.prod(dims, dtype=np.int64)) if dims else 1
        kernel = fused_codegen.kernel_name(expression, ew.INDEX_TYPES[size >= 2**31])
        source = self._fused_sources.get(expression)
        if source is None:
            source = self._fused_sources[expression] = fused_codegen.cuda_source(expression)
        self._launch(out._buffer.device, source, kernel, lambda: [kernel], size,
                     [*records, ew.pack_output(out._buffer.address + out._offset, steps[0]),
                      ew.pack_shape(dims, _contiguous(dims, steps, [out, *arrays]))],
                     [out, *arrays])

    def fused_reduce(self, op: Reduction, expression: Expression,
                     operands: Sequence[Array | Scalar], shape: tuple[int, ...],
                     axes: tuple[int, ...], out: Array, after: Expression | None = None,
                     after_operands: Sequence[Scalar | None] = (), *,
                     positive_zero: bool = False) -> None:
        """One generated kernel (codegen/fused.reduce_source) computing the expression where
        the reduction reads it, and `after` where it stores each result; taken twice where rows
        are split, as any reduction's kernel."""
        acc = out._dtype if after is None else fusion.reduced_dtype(after)
        layout = rd.split(shape, _views.contiguous_strides(shape, 1), axes, out._strides, False)
        if 0 in shape or len(shape) > ew.MAX_DIMS or not layout.fits:
            super().fused_reduce(op, expression, operands, shape, axes, out, after,
                                 after_operands, positive_zero=positive_zero)
            return
        device = out._buffer.device
        state = self._state(device)
        index = ew.INDEX_TYPES[math.prod(shape) >= 2**31]
        kernel = fused_codegen.reduce_kernel_name(op, acc, expression, after, index)
        key = (op, acc, expression, after)
        source = self._fused_sources.get(key)
        if source is None:
            source = self._fused_sources[key] = fused_codegen.reduce_source(op, acc,
                                                                              expression, after)
        function = self._function(state, source, kernel, lambda: [kernel])
        arrays = [a for a in operands if a.__class__ is Array]
        with np.errstate(all="ignore"):
            records = [ew.pack_operand(a._buffer.address + a._offset,
                                       ew.broadcast_strides(shape, a._shape, a._strides))
                       if a.__class__ is Array else ew.pack_operand(None, (), a, step.dtype)
                       for a, step in zip(operands, expression.steps)]
            if after is not None:
                records += [ew.pack_operand(None, (), 0 if v is None else v, step.dtype)
                            for v, step in zip(after_operands, after.steps)]
        dense = all(a._shape == shape and a._strides == _views.contiguous_strides(
            shape, a._dtype.itemsize) for a in arrays)
        passes = self._passes(state, function, op, acc, layout, positive_zero)
        self._reduce_passes(device, function, passes, out._buffer.address + out._offset, out,
                            arrays, records,
                            [ew.pack_shape(shape, ew.CONTIGUOUS if dense else ew.STRIDED)])

    def _unaliased(self, a: Array | Scalar, out: Array) -> Array | Scalar:
        """`a`, or a copy of it where it shares memory with `out` other than element for element
        (x[1:] += x[:-1]): the kernel would read values it has already written."""
        if a.__class__ is not Array or a._buffer is not out._buffer:
            return a
        if a._offset == out._offset and a._shape == out._shape and a._strides == out._strides:
            return a
        return self.copy(a)

    # -- reductions and scans (codegen/reduction.py, codegen/scan.py) ----------------------------
    def reduce(self, op: Reduction, x: Array, axes: tuple[int, ...], out: Array, *,
               positive_zero: bool = False) -> None:
        if 0 in out._shape:
            return
        if any(x._shape[a] == 0 for a in axes):
            if op.identity is None:
                raise ValueError(f"{op.name}() of an empty selection has no value")
            self.assign(out, op.identity)
            return
        self._reduce(op, x, axes, out, out._dtype, positive_zero)

    def squared_deviations(self, x: Array, axes: tuple[int, ...], out: Array) -> None:
        """One pass (a launch, or two where rows are split): Welford's update in each thread,
        the threads' moments combined in the reduction's tree."""
        if 0 not in out._shape:
            self._reduce(rd.SQUARED_DEVIATIONS, x, axes, out, out._dtype)

    def arg_reduce(self, op: ArgReduction, x: Array, axis: int | None, out: Array) -> None:
        axes = tuple(range(x.ndim)) if axis is None else (axis,)
        if 0 in out._shape:
            return
        if any(x._shape[a] == 0 for a in axes):
            raise ValueError(f"{op.name}() of an empty selection has no value")
        self._reduce(op, x, axes, out, x._dtype)

    def _reduce(self, op: rd.Folding, x: Array, axes: tuple[int, ...], out: Array,
                acc: dt.DType, positive_zero: bool = False) -> None:
        """out = the reduction `op` of x over the non-empty `axes`, accumulated in `acc` (a
        sum from +0 where `positive_zero`): one launch, or two where rows are split into parts
        (partial values in a temporary, then reduced in part order)."""
        device = x._buffer.device
        state = self._state(device)
        key = (op, x._dtype, acc, x._shape, x._strides, axes, out._strides, positive_zero)
        plan = state.plans.get(key)
        if plan is None:
            layout = rd.split(x._shape, x._strides, axes, out._strides,
                              isinstance(op, ArgReduction))
            if not layout.fits:  # more than MAX_DIMS axes left after merging (rare)
                kept = tuple(i for i in range(x.ndim) if i not in axes)
                if len(layout.kept) > ew.MAX_DIMS:  # one reduction per index of the first kept
                    first = kept[0]
                    for i in range(x._shape[first]):
                        self._reduce(op, _index(x, first, i),
                                     tuple(a - (a > first) for a in axes), _index(out, 0, i), acc,
                                     positive_zero)
                else:  # a copy with the reduced axes last and merged
                    moved = self.copy(_views.permute(x, kept + axes))
                    self._reduce(op, moved, tuple(range(len(kept), x.ndim)), out, acc,
                                 positive_zero)
                return
            plan = self._plan_reduce(state, op, x._dtype, acc, layout, positive_zero)
            if len(state.plans) >= _MAX_PLANS:
                state.plans.clear()
            state.plans[key] = plan
        function, base, *passes = plan
        self._reduce_passes(device, function, passes, x._buffer.address + x._offset + base, out,
                            [x])

    def _reduce_passes(self, device: Device, function: Any, passes: Sequence[Any], source: int,
                       out: Array, operands: Sequence[Array], before: Sequence[Any] = (),
                       after: Sequence[Any] = ()) -> None:
        """The launches of a reduction kernel planned by `_passes`, its arguments `before`,
        then (x, out, layout), then `after`: one, or two where rows are split (the partial
        values in a temporary)."""
        config, first, partial_bytes, final_config, final = passes
        target = np.uintp(out._buffer.address + out._offset)
        if not partial_bytes:
            self._submit(device, function, config, [*before, np.uintp(source), target, first,
                                                    *after], [*operands, out])
            return
        partials = self.empty((partial_bytes,), dt.uint8, device)
        between = np.uintp(partials._buffer.address)
        self._submit(device, function, config, [*before, np.uintp(source), between, first,
                                                *after], [*operands, partials])
        self._submit(device, function, final_config, [*before, between, target, final, *after],
                     [*operands, partials, out])

    def _plan_reduce(self, state: _DeviceState, op: rd.Folding, x: dt.DType, acc: dt.DType,
                     layout: rd.Split, positive_zero: bool) -> tuple[Any, ...]:
        """The kernel, x's base offset, and `_passes`."""
        kernel = rd.kernel_name(op, x, acc)
        function = self._function(state, rd.SOURCE, kernel, lambda: rd.batch(op, x, acc))
        return (function, layout.base,
                *self._passes(state, function, op, acc, layout, positive_zero))

    @staticmethod
    def _passes(state: _DeviceState, function: Any, op: rd.Folding, acc: dt.DType,
                layout: rd.Split, positive_zero: bool) -> tuple[Any, ...]:
        """The launch configuration and layout of each pass of a reduction kernel (the second
        only where rows are split: with the temporary's size in bytes, else 0), a sum starting
        from +0 where `positive_zero`."""
        limit = function.attributes.max_threads_per_block
        launch = reduction_plan(layout.outputs, layout.length, layout.row_inner, state.properties,
                                limit)
        if launch.parts == 1:
            return (_config(launch), rd.pack(layout, launch, positive_zero=positive_zero), 0,
                    None, None)
        size = rd.value_size(op, acc)
        dense = rd.contiguous(layout.kept, size)
        first = rd.pack(layout, launch, out_kept=dense, part_stride=layout.outputs * size,
                        to_partials=True, positive_zero=positive_zero)
        second = rd.Split(0, layout.kept, dense, layout.out_kept, (launch.parts,),
                          (layout.outputs * size,))
        final = reduction_plan(second.outputs, second.length, second.row_inner, state.properties,
                               limit, may_split=False)
        return (_config(launch), first, layout.outputs * launch.parts * size, _config(final),
                rd.pack(second, final, from_partials=True))

    def scan(self, op: Scan, x: Array, axis: int, out: Array) -> None:
        if 0 in x._shape:
            return
        device = x._buffer.device
        x = self._unaliased(x, out)
        others = tuple(i for i in range(x.ndim) if i != axis)
        rows, (x_rows, out_rows) = ew.collapse(tuple(x._shape[i] for i in others),
                                               [tuple(x._strides[i] for i in others),
                                                tuple(out._strides[i] for i in others)])
        if len(rows) > ew.MAX_DIMS:  # rare: one scan per index of the first other axis
            first = others[0]
            for i in range(x._shape[first]):
                self.scan(op, _index(x, first, i), axis - (axis > first), _index(out, first, i))
            return
        acc, count, length = out._dtype, math.prod(rows), x._shape[axis]
        state = self._state(device)
        inner = not x_rows or abs(x._strides[axis]) <= min(abs(s) for s in x_rows)
        launch = scan_plan(count, length, inner, state.properties, sc.items(acc))
        sequential = launch.sequential  # (the kernel's thread limit never changes it)
        kernel = sc.kernel_name(op, x._dtype, acc, sequential)
        batch = lambda: sc.batch(op, x._dtype, acc, sequential)  # noqa: E731
        limit = self._function(state, sc.SOURCE, kernel, batch).attributes.max_threads_per_block
        if limit < launch.block:
            launch = scan_plan(count, length, inner, state.properties, sc.items(acc), limit)
        operands, totals = [x, out], 0
        if launch.parts > 1:  # the totals of every part but the last, in a first pass
            reduction = op.folds
            size = rd.value_size(reduction, acc)
            partials = self.empty(((launch.parts - 1) * count * size,), dt.uint8, device)
            span = (launch.parts - 1) * launch.chunk
            layout = rd.Split(0, rows, x_rows, rd.contiguous(rows, size), (span,),
                              (x._strides[axis],))
            totaller = rd.kernel_name(reduction, x._dtype, acc)
            reductions = lambda: rd.batch(reduction, x._dtype, acc)  # noqa: E731
            function = self._function(state, rd.SOURCE, totaller, reductions)
            first = reduction_plan(count * (launch.parts - 1), launch.chunk, layout.row_inner,
                                   state.properties, function.attributes.max_threads_per_block,
                                   may_split=False)
            first = dataclasses.replace(first, parts=launch.parts - 1, chunk=launch.chunk)
            self._launch(device, rd.SOURCE, totaller, reductions, 0,
                         [np.uintp(x._buffer.address + x._offset),
                          np.uintp(partials._buffer.address),
                          rd.pack(layout, first, part_stride=count * size, to_partials=True,
                                  initial=False)],
                         [x, partials], _config(first))
            operands.append(partials)
            totals = partials._buffer.address
        self._launch(device, sc.SOURCE, kernel, batch, 0,
                     [np.uintp(x._buffer.address + x._offset),
                      np.uintp(out._buffer.address + out._offset),
                      sc.pack(rows, x_rows, out_rows, length, x._strides[axis], out._strides[axis],
                              launch, totals)], operands,
                     ((launch.grid, 1, 1), (launch.block, 1, 1), 0))

    # -- the host's results where no kernel applies (counted) ------------------------------------
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

    # -- matrix products -----------------------------------------------------------------------
    def matmul(self, a: Array, b: Array, out: Array) -> None:
        """The tiled GEMM kernel over any strides and broadcast batch axes; on a GPU, cuBLAS
        through CuPy for floating-point dtypes."""
        if 0 in out._shape:
            return
        if not self.simulated and out._dtype in gemm.CUBLAS:
            self._cublas_matmul(a, b, out)
            return
        device = out._buffer.device
        *batch, m, n = out._shape
        k, nb = a._shape[-1], len(batch)
        max_x = self._state(device).properties.max_grid_dims[0]
        for _, (at_a, at_b, at_out), dims, steps in ix.collapse_launches(
                tuple(batch), [a._strides[:nb], b._strides[:nb], out._strides[:nb]]):
            layout = gemm.pack_layout(dims, steps, m, n, k, a._strides[-2:], b._strides[-2:],
                                      out._strides[-2:])
            grid = gemm.grid(m, n, math.prod(dims), max_x)
            self._launch(device, gemm.SOURCE, gemm.kernel_name(out._dtype), gemm.batch, 0,
                         [np.uintp(_address(a) + at_a), np.uintp(_address(b) + at_b),
                          np.uintp(_address(out) + at_out), layout], [a, b, out],
                         (grid, (gemm.THREADS, 1, 1), 0))

    def _cublas_matmul(self, a: Array, b: Array, out: Array) -> None:
        """out = a @ b by cupy.matmul (cuBLAS) on zero-copy views, on the current stream."""
        import cupy

        from .interop import cupy_view, on_stream

        device = out._buffer.device
        stream = self.stream(device)
        for x in (a, b, out):  # the buffer's own allocator: a memory scope's pool, or the device's
            x._buffer.allocator.record_stream(x._buffer.block, stream)
        with on_stream(self, device):
            cupy.matmul(cupy_view(self, a), cupy_view(self, b), out=cupy_view(self, out))

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

    # -- indexing and creation -----------------------------------------------------------------
    def gather(self, x: Array, axis: int, indices: Sequence[Array], out: Array) -> None:
        """One kernel over out's elements, checking every index as it reads it (the elements
        with indices in range are written); IndexError (numpy's message, the first bad index
        numpy would name) once the stream has run it: the check (`_index_check`)."""
        if out.size == 0:
            return
        if len(indices) > ix.MAX_INDICES:
            self._host_into("gather", out, lambda cpu, h, i, o: cpu.gather(h, axis, i, o), x,
                            list(indices))
            return
        device = out._buffer.device
        self._state(device).errors.make_room()
        flag = self._index_flag(device)
        shape, strides = self._index_iteration(x, axis, indices, out)
        for first, offsets, dims, steps in ix.collapse_launches(shape, strides):
            layout = self._index_layout(x, axis, indices, dims, steps, offsets, first, out.size)
            self._launch(device, ix.GATHER_SOURCE, ix.GATHER, ix.gather_batch, math.prod(dims),
                         [np.uintp(_address(x) + offsets[0]), np.uintp(_address(out) + offsets[1]),
                          layout, np.uintp(_address(flag))], [x, out, *indices, flag])
        self._index_check("gather", flag, x, axis, indices, shape, axis, out)

    def scatter(self, x: Array, axis: int, indices: Sequence[Array], values: Array) -> None:
        """A kernel checking every index, then one storing the values (skipped on the device
        when an index is out of range, so nothing is written); IndexError as gather's."""
        if len(indices) > ix.MAX_INDICES:
            def store(cpu, host_x, host_indices, host_values, host_out):
                cpu.assign(host_out, host_x)
                cpu.scatter(host_out, axis, host_indices, host_values)
            self._host_into("scatter", x, store, x, list(indices), values)
            return
        device = x._buffer.device
        self._state(device).errors.make_room()
        # the kernel reads what it may overwrite: copies of anything sharing x's memory
        values = self.copy(values) if values._buffer is x._buffer else values
        indices = [self.copy(i) if i._buffer is x._buffer else i for i in indices]
        flag = self._index_flag(device)
        shape, strides = self._index_iteration(x, axis, indices, values)
        positions = indices[0]._shape  # checked over the index arrays' own shape
        nb = len(positions)
        checks = [(0,) * nb, (0,) * nb, *(s[axis:axis + nb] for s in strides[2:])]
        for first, offsets, dims, steps in ix.collapse_launches(positions, checks):
            layout = self._index_layout(x, axis, indices, dims, steps, offsets, first,
                                        math.prod(positions))
            self._launch(device, ix.GATHER_SOURCE, ix.CHECK, ix.gather_batch, math.prod(dims),
                         [layout, np.uintp(_address(flag))], [*indices, flag])
        for first, offsets, dims, steps in ix.collapse_launches(shape, strides):
            layout = self._index_layout(x, axis, indices, dims, steps, offsets, first,
                                        math.prod(shape))
            self._launch(device, ix.GATHER_SOURCE, ix.SCATTER, ix.gather_batch, math.prod(dims),
                         [np.uintp(_address(x) + offsets[0]),
                          np.uintp(_address(values) + offsets[1]), layout,
                          np.uintp(_address(flag))], [x, values, *indices, flag])
        self._index_check("scatter", flag, x, axis, indices, positions, 0, None)

    @staticmethod
    def _index_iteration(x: Array, axis: int, indices: Sequence[Array], other: Array
                         ) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
        """The gathered shape (other's: out or values) and the strides of x (0 along the index
        arrays' axes), of `other` and of each index array (0 off them) over it."""
        shape = other._shape
        positions = indices[0]._shape
        after = x.ndim - axis - len(indices)
        x_strides = (*x._strides[:axis], *(0,) * len(positions),
                     *x._strides[axis + len(indices):])
        return shape, [x_strides, ew.broadcast_strides(shape, other._shape, other._strides),
                       *((0,) * axis + ew.broadcast_strides(positions, i._shape, i._strides) +
                         (0,) * after for i in indices)]

    @staticmethod
    def _index_layout(x: Array, axis: int, indices: Sequence[Array], dims: tuple[int, ...],
                      steps: Sequence[tuple[int, ...]], offsets: tuple[int, ...], first: int,
                      total: int) -> np.void:
        return ix.pack_index_layout(
            dims, steps, first, total, x._dtype.itemsize,
            [(_address(i) + offset, ix.INDEX_KINDS[i._dtype], x._shape[axis + j],
              x._strides[axis + j]) for j, (i, offset) in enumerate(zip(indices, offsets[2:]))])

    def _index_flag(self, device: Device) -> Array:
        """A device word set to HX_NO_ERROR on the current stream (the kernels lower it)."""
        flag = self.empty((1,), dt.uint64, device)
        self.driver.memset(_address(flag), 0xFF, 8, self.stream(device).handle)
        return flag

    def _read(self, x: Array, stream: CudaStream | None = None) -> np.ndarray:
        """A small contiguous array's values on the host, once `stream` (the current one) has
        run to here (through the device memory's staged copy)."""
        host = np.empty(x._shape, x._dtype.numpy)
        device = x._buffer.device
        self._state(device).memory.copy_to_host(x._buffer.block, x._offset, host,
                                                stream or self.stream(device))
        return host

    def _index_check(self, operation: str, flag: Array, x: Array, axis: int,
                     indices: Sequence[Array], shape: tuple[int, ...], lead: int,
                     result: Array | None) -> None:
        """The check of `flag`, which the kernels lower for an index out of range: left to the
        device's next synchronising call (as CUDA reports device-side assertions; the launches
        return without waiting), naming the namespace function that called (else
        `operation`) and `result`, the array the call wrote; or run at once under
        HXARRAY_CUDA_SYNC_CHECKS=1 (IndexError)."""
        device = x._buffer.device
        stream, sizes = self.stream(device), x._shape[axis:axis + len(indices)]
        run = functools.partial(self._index_error, flag, stream, sizes, axis, indices, shape,
                                lead)
        if sync_checks():
            message = run()
            if message is not None:
                raise IndexError(message)
            return
        self._state(device).errors.add(DeferredCheck(
            calling.get() or operation, device, run,
            None if result is None else weakref.ref(result._buffer)))

    def _index_error(self, flag: Array, stream: CudaStream, sizes: tuple[int, ...], axis: int,
                     indices: Sequence[Array], shape: tuple[int, ...], lead: int) -> str | None:
        """numpy's IndexError message for what the kernels reported in `flag` on `stream`, as
        (index array j, position p of `shape`, whose axes lead .. lead + len(B) - 1 are the
        index arrays'): the first index out of range of the first index array holding one."""
        (key,) = self._read(flag, stream).tolist()
        if key == ix.NO_ERROR:
            return None
        j, position = divmod(key, math.prod(shape))
        index = indices[j]
        where = np.unravel_index(position, shape)[lead:lead + index.ndim]
        element = _views.view(index, (), (), index._offset + sum(
            int(c) * s for c, s in zip(where, index._strides)))
        bad = self._read(element, stream)[()]
        return f"index {bad} is out of bounds for axis {axis + j} with size {sizes[j]}"

    def nonzero(self, x: Array) -> tuple[Array, ...]:
        """Counts of non-zero elements per chunk, their exclusive scan (read back to size the
        results), then each chunk's coordinates in C order: deterministic."""
        device = x._buffer.device
        size = x.size
        if size == 0:
            return tuple(self.empty((0,), dt.int64, device) for _ in x._shape)
        dims, (steps,) = ew.collapse(x._shape, [x._strides])
        if len(dims) > ew.MAX_DIMS:
            x = self.copy(x)
            dims, steps = (size,), (x._dtype.itemsize,)
        contiguous = not dims or steps == (x._dtype.itemsize,)
        values = ix.pack_values(_address(x), steps, x._dtype)
        layout = ew.pack_shape(dims, contiguous)
        chunks = -(-size // ix.NONZERO_CHUNK)
        props = self._state(device).properties
        resident = props.multiprocessor_count * max(
            1, props.max_threads_per_multiprocessor // ix.NONZERO_THREADS)
        config = ((min(chunks, resident, props.max_grid_dims[0]), 1, 1),
                  (ix.NONZERO_THREADS, 1, 1), 0)
        starts = self.empty((chunks + 1,), dt.int64, device)  # and the count, last
        count_at = np.uintp(_address(starts) + 8 * chunks)
        source, batch = ix.NONZERO_SOURCE, ix.nonzero_batch
        self._launch(device, source, ix.COUNT, batch, 0,
                     [values, layout, np.uintp(_address(starts)), np.int64(chunks)], [x, starts],
                     config)
        self._launch(device, source, ix.SCAN, batch, 0,
                     [np.uintp(_address(starts)), np.int64(chunks), count_at], [starts],
                     ((1, 1, 1), (ix.NONZERO_THREADS, 1, 1), 0))
        (count,) = self._read(_views.view(starts, (1,), (8,), starts._offset + 8 * chunks))
        count = int(count)
        flat = x.ndim > ew.MAX_DIMS  # coordinates then come from C-order positions
        results = [self.empty((count,), dt.int64, device) for _ in range(1 if flat else x.ndim)]
        if count:
            self._launch(device, source, ix.WRITE, batch, 0,
                         [values, layout, np.uintp(_address(starts)), np.int64(chunks),
                          ew.pack_shape((size,) if flat else x._shape, False),
                          ix.pack_coordinates([_address(r) for r in results])],
                         [x, starts, *results], config)
        if flat:
            return self._unravel(results[0], x._shape)
        return tuple(results)

    def _unravel(self, positions: Array, shape: tuple[int, ...]) -> tuple[Array, ...]:
        """The coordinates in `shape` of the int64 C-order `positions`, axis by axis."""
        out = []
        for d, n in enumerate(shape):
            axis = self.elementwise(_FLOOR_DIVIDE, (positions, math.prod(shape[d + 1:])),
                                    _INT64_PAIR, positions._shape)
            out.append(self.elementwise(_REMAINDER, (axis, n), _INT64_PAIR, axis._shape, axis))
        return tuple(out)

    def arange(self, start: Scalar, stop: Scalar, step: Scalar, dtype: dt.DType,
               device: Device) -> Array:
        """numpy's values, bit for bit (its length and first two values from the host, its fill
        on the device); numpy on the host where the kernel does not apply (bool, integer
        dtypes from floats, lengths numpy refuses)."""
        plan = ix.arange_plan(start, stop, step, dtype)
        if plan is None:
            return super().arange(start, stop, step, dtype, device)
        length, first = plan
        out = self.empty((length,), dtype, device)
        if length:
            self._launch(device, ix.ARANGE_SOURCE, ix.arange_name(dtype), ix.arange_batch,
                         length, [np.uintp(_address(out)), np.int64(length), first[0], first[1]],
                         [out])
        return out


    def random_bits(self, kind: str, key: tuple[int, int], position: int, out: Array,
                    params: tuple[int, int]) -> None:
        """One generated kernel (codegen/random.py) filling out."""
        n = out.size
        if not n:
            return
        transform = philox.KINDS[kind]
        source = rng.cuda_source(transform, out._dtype)
        name = rng.kernel_name(transform, out._dtype)
        self._launch(out._buffer.device, source, name, lambda: [name], -(-n // rng.RUN),
                     [np.uintp(_address(out)), np.int64(n),
                      *(np.uint64(v) for v in philox.arguments(key, position, params))], [out])


def _contiguous(dims: tuple[int, ...], steps: Sequence[tuple[int, ...]],
                arrays: Sequence[Array]) -> bool:
    """Whether every array of an element-wise launch (the output first) is C-contiguous in the
    collapsed layout: the kernels then index by element number."""
    if len(dims) != 1:
        return not dims
    return all(s == (a._dtype.itemsize,) for s, a in zip(steps, arrays))


def _address(x: Array) -> int:
    """The device address of x's first element."""
    return x._buffer.address + x._offset


def _index(x: Array, axis: int, i: int) -> Array:
    """x[..., i, ...] at `axis`: a view without that axis."""
    return _views.squeeze(_views.slice_axis(x, axis, i, i + 1), (axis,))


def _config(launch: rd.Launch) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    return (launch.grid, 1, 1), (launch.block, 1, 1), 0


def _host_memory(x: Array) -> np.ndarray:
    """A numpy view of a simulated device array's memory that keeps its buffer alive (read-only
    where x is)."""
    owner = _HostMemory(x._buffer)
    host = np.ndarray(x._shape, x._dtype.numpy, buffer=np.asarray(owner), offset=x._offset,
                      strides=x._strides)
    host.flags.writeable = not x._readonly
    return host


class _HostMemory:
    """Exposes a simulated device buffer (host memory) to numpy, keeping the buffer alive."""

    def __init__(self, buffer: Any) -> None:
        self.buffer = buffer
        self.__array_interface__ = {"data": (buffer.block.address, False),
                                    "shape": (buffer.nbytes,), "typestr": "|u1", "version": 3}

