"""The numpy CPU backend: every operation runs numpy on views of the input buffers and writes into
buffers from the caching allocator.

`native(x)` is the numpy view of an array, built once and cached on the array. A fresh buffer's
view is also cached on its allocator block, so a loop that frees and reallocates same-shaped
results reuses both the memory and the view.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from functools import cache, partial
from typing import Any

import numpy as np

from ... import _dtypes as dt
from ..._array import Array
from ..._compiled import speedups
from ..._numpy_kernels import cast, errstate_var, quiet
from ..._ops import REDUCTIONS
from ...hal.allocator import Block, CachingAllocator, MemoryBuffer
from ...hal.device import Device, DeviceType
from ...hal.scope import current_pool
from .. import philox as rng
from ..base import FRESH_LAYOUTS, Backend, fresh_layout, reruns_after_memory_error
from . import fused, kernels, parallel
from .allocator import CpuAllocator
from .device import cpu_capabilities
from .linalg_kernels import FFT, LINALG
from .parallel import Thresholds
from .stream import CpuEvent, CpuStream

if speedups is not None:  # the compiled executor, built and loaded with the speedups
    from . import fastpath
else:
    fastpath = None

_make = Array._make
_ndarray = np.ndarray
_FROM_NUMPY = dt.FROM_NUMPY
_INT64 = dt.int64
_arange_into = kernels.arange_into
# a random loop's argument (`codegen/random.host_source`): the output's address, the range of
# elements, the key, the 256-bit counter, the lane and the parameters
_RANDOM_ARGS = struct.Struct("<3q9Q").pack
_LOW_COUNTER = 1 << 66  # positions (4 x counter + lane) whose counter fits its lowest limb
# Random values cost about 2 ns each on one core (a normal 10), several times an element-wise
# operation, so the pool pays from fewer of them than fused.THREADED_FROM
_RANDOM_THREADED_FROM = 1 << 16


# Below this length an arange is filled by the compiled loop (`fastpath.arange`), or without it
# made by numpy's own arange and copied, which costs less than setting up the one-pass fill
# (docs/performance.md); from it, numpy's vectorised fills.
_SMALL_ARANGE = 1 << 14
_LOW, _HIGH = -(1 << 62), 1 << 62  # int arange's bounds on start, stop and step: no overflow


def _typed_view(block: Block, dtype: dt.DType, shape: tuple[int, ...]) -> np.ndarray:
    """A CPU block's numpy view as (dtype, shape), which the block keeps for its next users
    (`Block.view`)."""
    return _ndarray(shape, dtype.numpy, block.handle)  # (positional: keywords cost as much again)


@cache
def host_allocator() -> CachingAllocator:
    """The process's caching allocator of host memory, shared by every CpuBackend (there is one
    host memory)."""
    device = Device(DeviceType.CPU)
    return CachingAllocator(CpuAllocator(device),
                            max_cached_bytes=cpu_capabilities()["total_memory"] // 4)


class CpuBackend(Backend):
    """numpy on views of host buffers. Work is synchronous: every stream of the CPU runs array
    operations on the calling thread, in program order (`stream.py`). Large operations are split
    over a thread pool from the `thresholds` on (`parallel.py`)."""

    device_type = DeviceType.CPU
    priority = 0
    # compiled (`fastpath`): empty, a copy of a CPU array, a small arange
    _fresh: Callable[[tuple[int, ...], dt.DType], Array | None] | None = None
    _copied: Callable[[Array], Array | None] | None = None
    _arange: Callable[[Any, Any, int, dt.DType], Array | None] | None = None

    def __init__(self, thresholds: Thresholds | None = None) -> None:
        super().__init__()
        self.device = Device(self.device_type)
        self._allocator = host_allocator()
        self._default_stream = CpuStream(self.device, default=True)
        self.set_thresholds(thresholds or Thresholds())

    def release_memory(self) -> None:
        """After numpy ran out of host memory: free the cache (MemoryError again if it held
        nothing), counted as an out-of-memory event."""
        allocator = self._allocator
        stats = allocator.stats()
        allocator._note_oom()
        if not stats["cached_bytes"]:
            raise MemoryError(f"out of memory on {self.device}: numpy could not allocate "
                              f"inside an operation and the cache holds nothing to free; "
                              f"allocator stats: {stats}")
        allocator.empty_cache()

    def set_thresholds(self, thresholds: Thresholds) -> None:
        """Use `thresholds` from now on, in the compiled fast path too."""
        self.thresholds = thresholds
        self._elementwise_limits = thresholds.elementwise_limits()
        if self.device_type is DeviceType.CPU:
            self._bind_fast_path()

    def _bind_fast_path(self) -> None:
        """Bind the CPU fast path (`fastpath`: the compiled namespace functions, the operator
        slots' fast path, fresh arrays, copies, aranges) to this backend: its device, allocator,
        element-wise kernels (the bare ufunc where that is all a kernel does), `reduce_into` for the
        reductions of `_ops.REDUCTIONS`, and the thresholds below which they run on the calling
        thread; larger or other operands take the general path, and so does every call while a
        hook is installed (`hal.hooks`) or inside a memory scope."""
        if fastpath is None or errstate_var is None:
            return
        self._fresh, self._copied, self._arange = fastpath.fresh, fastpath.copied, fastpath.arange
        fastpath.bind_cpu(self.device, self._allocator, _typed_view, self.native, self.elementwise,
                          kernels.FAST_PATH_KERNELS,
                          {op.name: limit for op, limit in self._elementwise_limits.items()},
                          kernels.reduce_into, frozenset(REDUCTIONS.values()),
                          (self.thresholds.reduction, _SMALL_ARANGE))

    # -- devices, memory, streams ------------------------------------------------------------------
    def device_count(self) -> int:
        return 1

    def capabilities(self, device: Device) -> dict[str, Any]:
        return cpu_capabilities()

    def allocator(self, device: Device) -> CachingAllocator:
        return self._allocator

    def default_stream(self, device: Device) -> CpuStream:
        return self._default_stream

    def create_stream(self, device: Device, **options: Any) -> CpuStream:
        return CpuStream(device, **options)

    def create_event(self, device: Device, **options: Any) -> CpuEvent:
        return CpuEvent(device, **options)

    def synchronize(self, device: Device) -> None:
        """Nothing to wait for: array operations are done when they return."""

    def dlpack_device(self, device: Device) -> tuple[int, int]:
        return (1, 0)  # kDLCPU

    def dlpack(self, x: Array, *, stream: Any, max_version: Any, dl_device: Any, copy: Any) -> Any:
        """A capsule of `x`'s memory in place (the base class for a copy or another device):
        numpy exports a view of it (`_Exported`) that holds `x`'s buffer, so the memory stays
        the consumer's until it lets go, and the block goes back to the cache only then."""
        if stream is not None:
            raise ValueError("stream must be None for CPU arrays")
        if copy or (dl_device is not None and tuple(dl_device) != (1, 0)):
            return super().dlpack(x, stream=stream, max_version=max_version, dl_device=dl_device,
                                  copy=copy)
        # (nothing to synchronize: CPU operations are done when they return)
        view = self.native(x).view(_Exported)
        view.buffer = x._buffer
        if x._readonly:
            view.flags.writeable = False
        if max_version is None:  # a legacy consumer: no versioned capsule
            return view.__dlpack__()
        return view.__dlpack__(max_version=max_version)  # (copy is None or False: no copy)

    # -- numpy views -------------------------------------------------------------------------------
    def native(self, x: Array) -> np.ndarray:
        """The cached numpy view of `x` (internal: it does not keep `x`'s buffer alive). A view
        that starts the block in C order (a reshape, say) shares the block's typed view of its
        dtype and shape (`Block.view`), as a fresh array of that layout does: a loop that
        reshapes a fresh result builds no numpy view after the first."""
        h = x._handle
        if h is None:
            block = x._buffer.block
            if x._offset == 0 and type(block) is Block and \
                    x._strides == fresh_layout(x._shape, x._dtype)[1]:
                h = block.view(x._dtype, x._shape, _typed_view)
            else:
                # (positional: numpy's keyword parsing costs as much as the view)
                h = _ndarray(x._shape, x._dtype.numpy, block.handle, x._offset, x._strides)
            x._handle = h
        return h

    def host_view(self, x: Array) -> np.ndarray:
        """A numpy view of `x` that keeps its buffer alive, for handing out to users (read-only
        where `x` is)."""
        h = _ndarray(x._shape, x._dtype.numpy, np.asarray(x._buffer), x._offset, x._strides)
        if x._readonly:
            h.flags.writeable = False
        return h

    def adopt(self, data: np.ndarray) -> Array | None:
        """Wrap a host numpy array without copying (for DLPack and `asarray`); the array keeps
        `data` alive. Its memory is not from the allocator, so it is not in the stats. None for
        read-only memory (hxarray arrays are writable) and dtypes or byte orders hxarray lacks.
        About a microsecond: the block's address and byte view are made only if asked for."""
        dtype = _FROM_NUMPY.get(data.dtype)
        flags = data.flags
        if dtype is None or not flags.writeable:
            return None
        block = _new_block(_ForeignBlock)
        block.data = data
        if flags.c_contiguous:
            block.low = 0
            block.nbytes = nbytes = data.nbytes
        else:
            block.low, nbytes = _extent(data)
            block.nbytes = nbytes
        return _make(MemoryBuffer(self.device, nbytes, block, _FOREIGN), dtype, data.shape,
                     data.strides, -block.low, data)

    # -- creation and data movement ----------------------------------------------------------------
    def empty(self, shape: tuple[int, ...], dtype: dt.DType, device: Device = None) -> Array:
        if self._fresh is not None:  # compiled, bound to this backend's device and allocator
            out = self._fresh(shape, dtype, self.device)
            if out is not None:
                return out
        pool = current_pool(self.device)
        if pool is not None:  # a memory scope's (the fast path declines inside any scope)
            return self.empty_in(pool, shape, dtype)
        nbytes, strides = FRESH_LAYOUTS.get((shape, dtype)) or fresh_layout(shape, dtype)
        allocator = self._allocator
        block = allocator.malloc(nbytes)
        buffer = MemoryBuffer(self.device, nbytes, block, allocator)  # gives it back on errors
        return _make(buffer, dtype, shape, strides, 0, block.view(dtype, shape, _typed_view))

    def empty_in(self, allocator: Any, shape: tuple[int, ...], dtype: dt.DType,
                 device: Device = None) -> Array:
        """`empty` from another allocator (a memory scope's pool), with the numpy view."""
        nbytes, strides = FRESH_LAYOUTS.get((shape, dtype)) or fresh_layout(shape, dtype)
        block = allocator.malloc(nbytes)
        buffer = MemoryBuffer(self.device, nbytes, block, allocator)
        return _make(buffer, dtype, shape, strides, 0, block.view(dtype, shape, _typed_view))

    def from_host(self, data: np.ndarray, device: Device = None) -> Array:
        dtype = _FROM_NUMPY.get(data.dtype)
        if dtype is None:
            raise TypeError(f"numpy dtype {data.dtype} has no hxarray equivalent")
        out = self.empty(data.shape, dtype)
        out._handle[...] = data  # same values (at most the byte order differs)
        return out

    def _result(self, data: np.ndarray) -> Array:
        """Wrap a numpy result computed into memory numpy allocated: copy it into our buffer."""
        if data.dtype not in _FROM_NUMPY:
            data = data.astype(data.dtype.newbyteorder("="))
        return self.from_host(np.asarray(data))

    @reruns_after_memory_error
    def to_host(self, x: Array) -> np.ndarray:
        return np.array(self.native(x), copy=True)

    def full(self, shape, value, dtype, device=None) -> Array:
        out = self.empty(shape, dtype)
        if type(value) is int and value == 0:
            # Zero is all zero bits in every dtype, and numpy fills bytes with memset: from
            # 1e5 elements 1.4x (float64) to 3x faster than filling with a typed zero.
            out._buffer.block.handle[:out._buffer.nbytes].fill(0)
        else:
            out._handle.fill(value)
        return out

    @reruns_after_memory_error
    def random_bits(self, kind: str, key: tuple[int, int], position: int, out: Array,
                    params: tuple[int, int]) -> None:
        """The compiled loop of the transform (`fused.random_loop`), else the numpy
        implementation of the same source, over equal slices of the elements on the pool from
        `_RANDOM_THREADED_FROM` elements."""
        n = out.size
        if not n:
            return
        transform = rng.KINDS[kind]
        loop = fused.random_loop(transform, out._dtype)
        if loop is None:
            flat = self.host_view(out).reshape(-1)

            def part(begin: int, end: int) -> None:
                for start in range(begin, end, fused.CHUNK):
                    stop = min(start + fused.CHUNK, end)
                    flat[start:stop] = rng.evaluate(transform, flat.dtype, key, position, start,
                                                    stop, params)
        else:
            address = out._buffer.block.address + out._offset
            if position < _LOW_COUNTER:  # (what rng.arguments gives, without its 256-bit work)
                words = (key[0], key[1], position >> 2, 0, 0, 0, position & 3, params[0],
                         params[1])
            else:
                words = tuple(rng.arguments(key, position, params))
            if n < fused.GIL_FROM:  # a small call: as numpy calls its loops, holding the GIL
                loop[1](_RANDOM_ARGS(address, 0, n, *words))
                return
            function = loop[0]

            def part(begin: int, end: int) -> None:
                function(_RANDOM_ARGS(address, begin, end, *words))

        if n < _RANDOM_THREADED_FROM or parallel.machine_busy() or \
                (count := parallel.get_num_threads()) < 2:
            part(0, n)
        else:
            parallel.run_chunks(part, n, count)

    def arange(self, start, stop, step, dtype, device=None) -> Array:
        # (type() and module-level names: what compiles to pointer comparisons)
        if dtype is _INT64 and type(start) is int and type(stop) is int and type(step) is int \
                and _LOW < start < _HIGH and _LOW < stop < _HIGH and _LOW < step < _HIGH:
            length = len(range(start, stop, step))
            if self._arange is not None:  # compiled, for small lengths
                out = self._arange(start, step, length, dtype, self.device)
                if out is not None:
                    return out
            out = self.empty((length,), dtype)
            _arange_into(out._handle, start, step)
            return out
        if (dtype is dt.float64 or dtype is dt.float32) and isinstance(start, (int, float)) and \
                isinstance(step, (int, float)) and isinstance(stop, (int, float)):
            length = math.ceil((stop - start) / step)  # numpy's length
            if self._arange is not None and length < _SMALL_ARANGE:
                out = self._arange(start, step, length, dtype, self.device)
                if out is not None:
                    return out
            if _SMALL_ARANGE <= length <= (1 << 24 if dtype is dt.float32 else 1 << 62):
                out = self.empty((length,), dtype)
                parts = parallel.get_num_threads() if length >= self.thresholds.memory_bound \
                    else 1
                with quiet():
                    kernels.arange_float_into(out._handle, start, step, parts,
                                              fused.arange_loop(out._handle.dtype))
                return out
        data = np.arange(start, stop, step, dtype=dtype.numpy)
        out = self.empty(data.shape, dtype)
        out._handle[...] = data
        return out

    @reruns_after_memory_error
    def copy(self, x: Array, dtype: dt.DType | None = None) -> Array:
        if dtype is None or dtype is x._dtype:
            if self._copied is not None:
                out = self._copied(x)
                if out is not None:
                    return out
            out = self.empty(x._shape, x._dtype)
            out._handle[...] = x._handle if x._handle is not None else self.native(x)
            return out
        out = self.empty(x._shape, dtype)
        with quiet():  # casts may overflow
            cast(self.native(x), out=out._handle)
        return out

    @reruns_after_memory_error
    def assign(self, dst: Array, src: Array | Any) -> None:
        target = self.native(dst)
        if isinstance(src, Array):
            value = self.native(src)
            if src._dtype is dst._dtype:  # no conversion: nothing to convert or warn about
                target[...] = value
                return
        else:
            value = src
        with quiet():
            cast(value, out=target)

    # -- compute -----------------------------------------------------------------------------------
    def elementwise(self, op, args, signature, shape, out=None) -> Array:
        if out is None:  # a kernel's temporaries may need the cache freed (`release_memory`)
            out = self.empty(shape, signature.result)
            try:
                return self._elementwise(op, args, out)
            except MemoryError:
                self.release_memory()
                return self._elementwise(op, args, out)
        return self._elementwise(op, args, out)

    def _elementwise(self, op, args, out) -> Array:
        target = out._handle if out._handle is not None else self.native(out)
        handles = [a._handle if type(a) is Array and a._handle is not None else
                   self.native(a) if type(a) is Array else a for a in args]
        kernel = kernels.ELEMENTWISE[op]
        if self._threaded(op, target.size):
            parallel.elementwise(kernel, handles, target)
        else:
            kernel(*handles, out=target)
        return out

    def _threaded(self, op, size) -> bool:
        """Whether the element-wise `op` on `size` elements is split over the pool (from its
        threshold in `parallel.Thresholds`): the rule of eager and of prepared calls."""
        return size >= self._elementwise_limits[op]

    def prepare(self, call):
        if call.primitive != "elementwise":
            return super().prepare(call)
        op, args, _, _, out = call.args
        target = self.native(out)
        handles = [self.native(a) if type(a) is Array else a for a in args]
        if self._threaded(op, target.size):
            return partial(parallel.elementwise, kernels.ELEMENTWISE[op], handles, target)
        return partial(kernels.ELEMENTWISE[op], *handles, out=target)

    def prepare_all(self, calls, inputs):
        """The calls prepared; with the compiled executor, an element-wise call small enough
        for one thread as numpy's loop on its arrays' addresses (`fastpath.loop_step`), which
        the replay calls directly, and contiguous arguments copied in with memcpy."""
        if fastpath is None:
            return super().prepare_all(calls, inputs)
        steps = []
        for call in calls:
            step = None
            if call.primitive == "elementwise":
                op, args, signature, _, out = call.args
                if not self._threaded(op, math.prod(out._shape)):
                    step = fastpath.loop_step(kernels.FAST_PATH_KERNELS[op.name], signature,
                                              tuple(args), out)
            steps.append(self.prepare(call) if step is None else step)
        return partial(fastpath.replay, steps, list(inputs), self.assign)

    def fused(self, expression, operands, out) -> None:
        fused.run(expression, operands, out)

    def fused_call(self, expression, scalars):
        return fused.Prepared(expression, scalars)

    def fused_layout(self, call, arrays, shape):
        return call.laid_out(arrays, shape)

    def fused_reduce_call(self, op, expression, scalars, arrays, shape, axes, dtype, after=None,
                          after_operands=(), *, positive_zero=False):
        """A sum over all axes of dense operands of fewer than `fused.THREADED_FROM` elements:
        its compiled pass, then `after` (a prepared call too); the same as `fused_reduce`
        runs it, less what the layout already decided."""
        call = super().fused_reduce_call(op, expression, scalars, arrays, shape, axes, dtype,
                                         after, after_operands, positive_zero=positive_zero)
        size = math.prod(shape)
        if op is not REDUCTIONS["sum"] or len(axes) != len(shape) or \
                size >= fused.THREADED_FROM or not fused.dense(arrays, shape):
            return call
        summed = fused.PreparedSum.of(expression, scalars, shape, dtype, positive_zero)
        if summed is None:
            return call
        single = summed.single()
        finish = None if after is None else self.fused_layout(
            self.fused_call(after, after_operands), [self.empty((), dtype)], ())

        def run(arrays, out) -> None:
            if size >= self.thresholds.reduction:  # split in pieces, as unfused
                call(arrays, out)
            elif finish is None:
                single(arrays, out)
            else:
                reduced = self.empty((), dtype)
                single(arrays, reduced)
                finish((reduced,), out)

        return run

    def fused_reduce(self, op, expression, operands, shape, axes, out, after=None,
                     after_operands=(), *, positive_zero=False) -> None:
        if after is None and len(axes) == len(shape):  # over all axes: in one pass
            def reduce(chunk: np.ndarray, into: np.ndarray) -> None:
                kernels.reduce_into(op, chunk, None, False, into, positive_zero)

            # a sum compiled, in pieces as the unfused reduction of the values splits them
            pieces = parallel.get_num_threads() \
                if math.prod(shape) >= self.thresholds.reduction else 1
            with quiet():
                if op is REDUCTIONS["sum"] and fused.run_sum(expression, operands, shape, out,
                                                             positive_zero, pieces):
                    return
                if fused.run_reduce(expression, operands, shape, reduce, self.native(out)):
                    return
        super().fused_reduce(op, expression, operands, shape, axes, out, after, after_operands,
                             positive_zero=positive_zero)

    @reruns_after_memory_error
    def reduce(self, op, x, axes, out, *, positive_zero=False) -> None:
        h = x._handle if x._handle is not None else self.native(x)
        axis = None if len(axes) == h.ndim else axes
        target = self.native(out)
        exact = h.dtype.kind in "biu" and target.dtype.kind in "biu"
        if op.silent or exact:
            self._reduce_into(op, h, axis, target, positive_zero)
        else:
            with quiet():  # floating-point overflow, invalid operations and casts
                self._reduce_into(op, h, axis, target, positive_zero)

    def _reduce_into(self, op, h, axis, out, positive_zero) -> None:
        """kernels.reduce_into, split on the thread pool when large: along a kept axis, or (over
        all axes) as the same reduction of partial results over chunks."""
        if h.size >= self.thresholds.reduction:
            if axis is not None:
                if parallel.split_reduction(
                        lambda part, into: kernels.reduce_into(op, part, axis, False, into,
                                                               positive_zero),
                        h, axis, False, out):
                    return
            else:
                partials = parallel.reduction_partials(
                    lambda chunk, into: kernels.reduce_into(op, chunk, None, False, into,
                                                            positive_zero),
                    h, out.dtype)
                if partials is not None:
                    kernels.reduce_into(op, partials, None, False, out.reshape(()),
                                        positive_zero)
                    return
        kernels.reduce_into(op, h, axis, False, out, positive_zero)

    @reruns_after_memory_error
    def arg_reduce(self, op, x, axis, out) -> None:
        self.native(out)[...] = op.numpy(self.native(x), axis=axis)

    @reruns_after_memory_error
    def scan(self, op, x, axis, out) -> None:
        target = self.native(out)
        with quiet():
            op.numpy(self.native(x), axis=axis, dtype=target.dtype, out=target)

    @reruns_after_memory_error
    def matmul(self, a, b, out) -> None:
        with quiet(), parallel.blas_limits:
            np.matmul(self.native(a), self.native(b), out=self.native(out))

    @reruns_after_memory_error
    def sort(self, x, axis, stable, out) -> None:
        # Equal values are indistinguishable, so a value sort needs no stability: numpy's
        # default sort in place (or large ones on the thread pool).
        h, target = self.native(x), self.native(out)
        if h.size < self.thresholds.sort or not parallel.sort(h, target, axis):
            target[...] = h
            target.sort(axis=axis)

    @reruns_after_memory_error
    def argsort(self, x, axis, stable, out) -> None:
        self.native(out)[...] = np.argsort(self.native(x), axis=axis,
                                           kind="stable" if stable else None)

    @reruns_after_memory_error
    def searchsorted(self, x1, x2, side, out) -> None:
        self.native(out)[...] = np.searchsorted(self.native(x1), self.native(x2), side=side)

    @reruns_after_memory_error
    def nonzero(self, x) -> tuple[Array, ...]:
        return tuple(self._result(i.astype(np.int64, copy=False))
                     for i in np.nonzero(self.native(x)))

    @reruns_after_memory_error
    def unique(self, x):
        return tuple(self._result(r) for r in kernels.unique(self.native(x)))

    @reruns_after_memory_error
    def bincount(self, x, out) -> None:
        """numpy's `bincount`: one pass."""
        self.native(out)[...] = np.bincount(self.native(x), minlength=out._shape[0])

    @reruns_after_memory_error
    def isin(self, x1, x2, invert, out) -> None:
        self.native(out)[...] = np.isin(self.native(x1), self.native(x2), invert=invert)

    @reruns_after_memory_error
    def gather(self, x, axis, indices, out) -> None:
        h, target = self.native(x), self.native(out)
        index = [self.native(i) for i in indices]
        if len(index) == 1 and index[0].dtype.kind == "i":
            np.take(h, index[0], axis=axis, out=target)
        else:
            target[...] = h[(slice(None),) * axis + tuple(index)]

    @reruns_after_memory_error
    def scatter(self, x, axis, indices, values) -> None:
        key = (slice(None),) * axis + tuple(self.native(i) for i in indices)
        self.native(x)[key] = self.native(values)

    @reruns_after_memory_error
    def compress(self, x, mask) -> Array:
        """`x[mask]` for a boolean mask over x's leading axes: numpy's branching mask indexing
        for few elements (or a multi-axis mask of a non-contiguous x), else numpy's `compress`,
        3-4x faster from 1e4 elements, straight into the result's buffer."""
        h, m = self.native(x), self.native(mask)
        if m.size < kernels.COMPRESS_FROM or m.ndim > 1 and not h.flags.c_contiguous:
            picked = h[m]  # (empty itself: from_host, a primitive with a hook point of its
            # own, would find the dtype again from numpy's)
            out = self.empty(picked.shape, x._dtype)
            out._handle[...] = picked
            return out
        if m.ndim > 1:
            h = h.reshape((-1, *h.shape[m.ndim:]))
            m = m.reshape(-1)
        out = self.empty((int(np.count_nonzero(m)), *h.shape[1:]), x._dtype)
        h.compress(m, axis=0, out=out._handle)
        return out

    @reruns_after_memory_error
    def place(self, x, mask, value) -> None:
        """numpy's own masked assignment: no index arrays, and a Python scalar converted to
        x's dtype as `full` converts it."""
        self.native(x)[self.native(mask)] = self.native(value) if type(value) is Array else value

    @reruns_after_memory_error
    def concat(self, arrays, axis, out) -> None:
        with quiet():
            np.concatenate([self.native(a) for a in arrays], axis=axis, out=self.native(out),
                           casting="unsafe")

    @reruns_after_memory_error
    def linalg(self, name, *args, **params):
        handles = [self.native(a) if isinstance(a, Array) else a for a in args]
        with quiet(), parallel.blas_limits:
            result = LINALG[name](*handles, **params)
        if isinstance(result, tuple):
            return tuple(self._result(r) for r in result)
        return self._result(result)

    @reruns_after_memory_error
    def fft(self, name, x, **params) -> Array:
        with quiet():
            return self._result(FFT[name](self.native(x), **params))


def _extent(data: np.ndarray) -> tuple[int, int]:
    """The byte span of a strided array's elements: where it starts relative to the first
    element (<= 0 with negative strides) and its length."""
    if not data.size:
        return 0, 0
    low = high = 0
    for n, s in zip(data.shape, data.strides):
        if s < 0:
            low += (n - 1) * s
        else:
            high += (n - 1) * s
    return low, high - low + data.itemsize


class _Exported(np.ndarray):
    """A numpy view exported through DLPack (`CpuBackend.dlpack`), holding the `buffer` of the
    array it views: the consumer's capsule keeps this view, and so the memory, alive."""

    __slots__ = ("buffer",)


class _ForeignBlock:
    """Host memory owned by another library's array (`data`), kept alive by reference: `low`,
    the start of its bytes relative to the first element (<= 0 with negative strides), and
    `nbytes`. Its address and byte view (`handle`) are computed on first use."""

    __slots__ = ("data", "low", "nbytes", "_handle", "_address")
    cache = None  # no typed view is kept for a next user: the block is never reused

    @property
    def address(self) -> int:
        """Found once (numpy builds a dict for it): the memory cannot move while the block holds
        `data`, since numpy refuses to resize an array another object refers to."""
        try:
            return self._address
        except AttributeError:
            self._address = self.data.__array_interface__["data"][0] + self.low
            return self._address

    @property
    def handle(self) -> np.ndarray:
        try:
            return self._handle
        except AttributeError:
            self._handle = np.asarray(_HostBytes(self.data, self.address, self.nbytes))
            return self._handle


_new_block = object.__new__  # filled in by `adopt`, cheaper than an __init__ call


class _HostBytes:
    """Exposes a byte range of `data`'s memory to numpy while keeping `data` alive."""

    __slots__ = ("data", "__array_interface__")

    def __init__(self, data: np.ndarray, address: int, nbytes: int) -> None:
        self.data = data
        self.__array_interface__ = {"data": (address, False), "shape": (nbytes,),
                                    "typestr": "|u1", "version": 3}


class _ForeignMemory(CpuAllocator):
    """The allocator of adopted memory: freeing just drops the reference."""

    def __init__(self) -> None:
        super().__init__(Device("cpu"))

    def malloc(self, nbytes: int):
        raise TypeError("foreign memory is adopted, never allocated")

    # Nothing to give back: the block, and the memory it keeps alive, dies with its buffer. A C
    # builtin is the cheapest callable that takes the block and does nothing with it.
    free = staticmethod(id)


_FOREIGN = _ForeignMemory()
