"""hxarray's reference backend: device type ``ref``, loaded through the ``hxarray.backends`` entry
point, written against the public plug-in surface `hxarray.plugin` alone (docs/hal.md, "Writing a
backend").

It is the smallest complete backend and the proof that the seam is complete: a raw allocator of
host memory of its own under the HAL's stream-ordered caching allocator, streams that run every
operation asynchronously on a worker thread (the default stream too, as on a GPU), and exactly the
required primitives, each a few lines of numpy queued on the current stream. Everything else
(creation, copies, concatenation, masks, `isin`, linear algebra and FFT through host fallbacks,
the standard's semantics above the backends) comes from the defaults.

Its memory is host memory but, like a GPU's, not handed to numpy directly: arrays reach the host
through the allocator's copies (`to_host`), which wait for the stream.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hxarray.plugin import (
    OPS,
    Allocator,
    Array,
    Backend,
    Block,
    Device,
    DeviceType,
    HostEvent,
    HostStream,
    Stream,
    StreamOrderedAllocator,
    cast,
    numpy_view,
    quiet,
    quietly,
)

__all__ = ["RefBackend", "RefMemory"]

_KERNELS = {op: quietly(op.numpy) for op in OPS.values()}


class RefMemory(Allocator):
    """Raw memory: one anonymous memory map per block. A block's handle is a numpy byte view of
    its map; queued work holds views of it, so the memory lives until the last of them is done."""

    def __init__(self, device: Device, capacity: int = 1 << 30) -> None:
        self.device = device
        self.capacity = capacity
        self.in_use = 0

    def malloc(self, nbytes: int) -> Block:
        if self.in_use + nbytes > self.capacity:
            raise MemoryError(f"{self.device} has {self.capacity - self.in_use} of "
                              f"{self.capacity} bytes free, {nbytes} were asked for")
        memory = np.frombuffer(mmap.mmap(-1, max(nbytes, 1)), np.uint8)[:nbytes]
        self.in_use += nbytes
        return Block(memory.__array_interface__["data"][0], nbytes, memory)

    def free(self, block: Block) -> None:
        self.in_use -= block.nbytes
        block.handle = None

    def copy_to_host(self, block: Block, offset: int, out: np.ndarray,
                     stream: Stream | None = None) -> None:
        source, target = block.handle[offset:offset + out.nbytes], out.reshape(-1).view(np.uint8)
        _launch(stream, lambda: np.copyto(target, source))

    def copy_from_host(self, block: Block, offset: int, data: np.ndarray,
                       stream: Stream | None = None) -> None:
        source = np.frombuffer(data.tobytes(), np.uint8)  # a snapshot: data may change after
        target = block.handle[offset:offset + data.nbytes]
        _launch(stream, lambda: np.copyto(target, source))

    def array_interface(self, block: Block, nbytes: int) -> dict[str, Any]:
        """The bytes of a block, for `numpy_view` (DLPack exports them in place)."""
        return {"data": (block.address, False), "shape": (nbytes,), "typestr": "|u1",
                "version": 3}


def _launch(stream: Stream | None, work: Callable[[], Any]) -> None:
    """Queue `work` on `stream`, or run it now (after the device's default stream) for None."""
    if stream is None:
        work()
    else:
        stream.submit(work)


class RefBackend(Backend):
    """Device type ``ref``: one device, numpy kernels queued on asynchronous streams."""

    device_type = DeviceType.register("ref")
    priority = -10  # never chosen by itself over a real device

    def __init__(self) -> None:
        super().__init__()
        self.device = Device(self.device_type)
        self.memory = RefMemory(self.device)
        self._allocator = StreamOrderedAllocator(self.memory, max_cached_bytes=256 << 20)
        self._default = HostStream(self.device)

    # -- device runtime ----------------------------------------------------------------------------
    def device_count(self) -> int:
        return 1

    def capabilities(self, device: Device) -> dict[str, Any]:
        return {"name": "hxarray reference device", "vendor": "hxarray tests",
                "total_memory": self.memory.capacity,
                "free_memory": self.memory.capacity - self.memory.in_use, "compute_units": 1,
                "features": ["asynchronous streams"]}

    def allocator(self, device: Device) -> StreamOrderedAllocator:
        return self._allocator

    def default_stream(self, device: Device) -> HostStream:
        return self._default

    def create_stream(self, device: Device, **options: Any) -> HostStream:
        return HostStream(device)

    def create_event(self, device: Device, **options: Any) -> HostEvent:
        return HostEvent(device, **options)

    def dlpack_device(self, device: Device) -> tuple[int, int]:
        return (1, 0)  # kDLCPU: the memory is host memory

    def dlpack(self, x: Array, *, stream: Any, max_version: Any, dl_device: Any, copy: Any) -> Any:
        """The memory in place once the current stream's work is done (numpy's exporter, over a
        view that keeps the buffer alive)."""
        if dl_device is not None and tuple(dl_device) != (1, 0):
            raise BufferError(f"cannot export an array on {x.device} to DLPack device "
                              f"{tuple(dl_device)}")
        self.stream(x.device).synchronize()
        host = numpy_view(x)  # keeps the buffer alive; read-only where x is (a broadcast view)
        if max_version is None:
            return (host.copy() if copy else host).__dlpack__()
        return host.__dlpack__(max_version=max_version, copy=copy)

    # -- the required primitives -------------------------------------------------------------------
    def _view(self, x: Any) -> Any:
        """The numpy view of an array's memory (scalars pass through), for queued work: the view
        holds the block's memory, not the buffer, which stays with the caller's arrays."""
        if not isinstance(x, Array):
            return x
        return np.ndarray(x.shape, x.dtype.numpy, buffer=x.buffer.block.handle, offset=x.offset,
                          strides=x.strides)

    def _run(self, work: Callable[..., Any], *operands: Any) -> None:
        """Queue `work(*views of the operands)` on the current stream, noting that stream's use
        of every operand's block."""
        stream = self.stream(self.device)
        for a in operands:  # through the buffer's allocator: a memory scope's pool too
            if isinstance(a, Array):
                a.buffer.allocator.record_stream(a.buffer.block, stream)
        views = [self._view(a) for a in operands]
        stream.submit(work, *views)

    def assign(self, dst, src) -> None:
        def copy(target, value):
            with quiet():
                cast(value, out=target)
        self._run(copy, dst, src)

    def elementwise(self, op, args, signature, shape, out=None) -> Array:
        out = self.empty(shape, signature.result, self.device) if out is None else out
        kernel = _KERNELS[op]
        self._run(lambda target, *values: kernel(*values, out=target), out, *args)
        return out

    def reduce(self, op, x, axes, out, *, positive_zero=False) -> None:
        def reduction(values, target):
            zero = 0.0 if positive_zero else -0.0  # -0: an all -0 sum is -0
            start = {"f": zero, "c": complex(zero, zero)}.get(target.dtype.kind)
            if op.signed_zero and start is not None and values.size:
                op.ufunc.reduce(values, axes, target.dtype, target, initial=start)
            else:
                op.ufunc.reduce(values, axes, target.dtype if op.accumulates else None, target)
        self._run(quietly_call(reduction), x, out)

    def arg_reduce(self, op, x, axis, out) -> None:
        self._run(lambda values, target: np.copyto(target, op.numpy(values, axis=axis)), x, out)

    def scan(self, op, x, axis, out) -> None:
        self._run(quietly_call(lambda values, target: op.numpy(values, axis=axis,
                                                               dtype=target.dtype, out=target)),
                  x, out)

    def matmul(self, a, b, out) -> None:
        self._run(quietly_call(lambda left, right, target: np.matmul(left, right, out=target)),
                  a, b, out)

    def sort(self, x, axis, stable, out) -> None:
        self._run(lambda values, target: np.copyto(target, np.sort(values, axis=axis)), x, out)

    def argsort(self, x, axis, stable, out) -> None:
        kind = "stable" if stable else None
        self._run(lambda values, target: np.copyto(
            target, np.argsort(values, axis=axis, kind=kind)), x, out)

    def searchsorted(self, x1, x2, side, out) -> None:
        self._run(lambda values, keys, target: np.copyto(
            target, np.searchsorted(values, keys, side=side)), x1, x2, out)

    def _now(self, x: Array) -> np.ndarray:
        """The values of `x` once the current stream's work is done (for data-dependent work)."""
        self.stream(self.device).synchronize()
        return self._view(x)

    def nonzero(self, x) -> tuple[Array, ...]:
        return tuple(self.from_host(i.astype(np.int64), self.device)
                     for i in np.nonzero(self._now(x)))

    def _checked(self, x: Array, axis: int, indices: Sequence[Array]) -> None:
        """IndexError now, rather than at the next synchronize, for an index out of range."""
        for i, index in enumerate(indices):
            n, values = x.shape[axis + i], self._now(index)
            if values.size and (values.min() < -n or values.max() >= n):
                bad = values[(values < -n) | (values >= n)].flat[0]
                raise IndexError(f"index {bad} is out of bounds for axis {axis + i} with size {n}")

    def gather(self, x, axis, indices, out) -> None:
        self._checked(x, axis, indices)
        lead = (slice(None),) * axis
        self._run(lambda values, target, *index: np.copyto(target, values[(*lead, *index)]),
                  x, out, *indices)

    def scatter(self, x, axis, indices, values) -> None:
        self._checked(x, axis, indices)
        lead = (slice(None),) * axis

        def store(target, source, *index):
            target[(*lead, *index)] = source
        self._run(store, x, values, *indices)

    def unique(self, x):
        values, first, inverse, counts = np.unique(
            self._now(x).reshape(-1), return_index=True, return_inverse=True,
            return_counts=True, equal_nan=False)
        return (self.from_host(values, self.device),
                *(self.from_host(a.reshape(shape).astype(np.int64), self.device)
                  for a, shape in ((first, first.shape), (inverse, x.shape),
                                   (counts, counts.shape))))


def quietly_call(work: Callable[..., Any]) -> Callable[..., Any]:
    """`work(*args)` with numpy's floating-point warnings silenced."""
    def call(*args: Any) -> Any:
        with quiet():
            return work(*args)
    return call
