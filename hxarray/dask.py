"""hxarray as a dask.array chunk type and array backend (docs/dask.md).

Importing this module (dask's `array.backends` entry point does, for
`dask.config.set({"array.backend": "hxarray"})`) registers what dask needs beyond numpy's
protocols: its `*_lookup` dispatches for hxarray arrays and, where distributed is installed, a
worker preload that applies the thread rule (`worker_threads`) on every worker. `import hxarray`
never imports dask.
"""

from __future__ import annotations

import itertools
import math
import os
from typing import Any

import dask
import dask.array as da
import numpy as np
from dask.array.backends import ArrayBackendEntrypoint
from dask.array.dispatch import (
    concatenate_lookup,
    divide_lookup,
    einsum_lookup,
    empty_lookup,
    nannumel_lookup,
    numel_lookup,
    percentile_lookup,
    take_lookup,
    tensordot_lookup,
    to_numpy_dispatch,
)
from dask.utils import Dispatch

try:
    from distributed import WorkerPlugin as _WorkerPlugin
except ImportError:  # dask without distributed: no thread rule to apply
    _WorkerPlugin = object  # type: ignore[misc,assignment]

import hxarray as xp
from hxarray import Array, _views
from hxarray import random as _random
from hxarray.backends.philox import KINDS
from hxarray.hal.settings import NUM_THREADS

__all__ = ["Generator", "HxarrayBackendEntrypoint", "RandomState", "backend_entrypoint",
           "default_rng", "random", "to_device",
           "to_hxarray_dispatch", "worker_threads", "ThreadRulePlugin", "dask_setup"]

DEVICE_KEY = "array.hxarray.device"  # dask config: the device the backend creates chunks on
THREADS_KEY = "array.hxarray.threads"  # dask config: hxarray's threads per worker (overrides)

to_hxarray_dispatch = Dispatch("to_hxarray_dispatch")


def _device() -> Any:
    """The device of the backend's chunks: dask config's array.hxarray.device, else hxarray's
    default device."""
    name = dask.config.get(DEVICE_KEY, None)
    return xp.__array_namespace_info__().default_device() if name is None else xp.Device(name)


def _on_device_of(like: Array, value: Any) -> Any:
    return value if isinstance(value, Array) else xp.asarray(value, device=like.device)


# -- dask's per-type dispatches ------------------------------------------------------------------


def _concatenate(arrays: Any, axis: int | None = 0) -> Array:
    arrays = list(arrays)
    first = next(a for a in arrays if isinstance(a, Array))
    arrays = [_on_device_of(first, a) for a in arrays]
    if axis is None:
        return xp.concat([xp.reshape(a, (-1,)) for a in arrays], axis=0)
    return xp.concat(arrays, axis=axis)


def _tensordot(a: Any, b: Any, axes: Any = 2) -> Array:
    like = a if isinstance(a, Array) else b
    return xp.tensordot(_on_device_of(like, a), _on_device_of(like, b), axes=axes)


def _take(a: Array, indices: Any, axis: int | None = None) -> Array:
    indices = _on_device_of(a, indices)
    if axis is None:
        return xp.take(xp.reshape(a, (-1,)), xp.reshape(indices, (-1,)), axis=0)
    if indices.ndim != 1:
        raise ValueError(f"take of hxarray chunks needs 1-D indices, got shape {indices.shape}")
    return xp.take(a, indices, axis=axis)


def _divide(x1: Any, x2: Any, out: Any = None, dtype: Any = None) -> Array:
    if out is not None:
        raise TypeError("divide of hxarray chunks takes no out=")
    result = xp.divide(x1, x2)
    return result if dtype is None else xp.astype(result, dtype)


def _empty(shape: Any, dtype: Any = float, **kwargs: Any) -> Array:
    device = kwargs.pop("device", None) or _device()
    kwargs.pop("order", None)
    if kwargs:
        raise TypeError(f"empty of hxarray chunks takes no {sorted(kwargs)}")
    return xp.empty(shape, dtype=np.dtype(dtype), device=device)


def _numel(x: Array, axis: Any = None, keepdims: bool = False, dtype: Any = np.float64,
           **kwargs: Any) -> Array:
    """Element counts along `axis` (dask's mean/var denominators), as an hxarray array on x's
    device."""
    shape = x.shape
    axes = tuple(range(x.ndim)) if axis is None else (
        tuple(axis) if isinstance(axis, (tuple, list)) else (axis,))
    axes = tuple(a % x.ndim for a in axes) if x.ndim else ()
    count = 1
    for a in axes:
        count *= shape[a]
    if keepdims:
        out_shape = tuple(1 if i in axes else n for i, n in enumerate(shape))
    else:
        out_shape = tuple(n for i, n in enumerate(shape) if i not in axes)
    return xp.full(out_shape, count, dtype=np.dtype(dtype), device=x.device)


def _nannumel(x: Array, **kwargs: Any) -> Array:
    return xp.sum(xp.logical_not(xp.isnan(x)), **kwargs)


def _einsum(subscripts: str, *operands: Any, **kwargs: Any) -> Array:
    """numpy's einsum on host copies (hxarray has no einsum), the result on the first hxarray
    operand's device."""
    device = next(o.device for o in operands if isinstance(o, Array))
    kwargs.pop("casting", None)
    kwargs.pop("order", None)
    host = [np.asarray(o) for o in operands]
    return xp.asarray(np.einsum(subscripts, *host, **kwargs), device=device)


def _percentile(a: Array, q: Any, method: str = "linear") -> tuple[Any, int]:
    """dask's per-chunk percentile: (values, element count); computed by numpy on a host view
    or copy, the values back on a's device."""
    n = a.shape[0] if a.ndim else 1
    if n == 0:
        return None, 0
    host = np.asarray(a)
    if not np.issubdtype(host.dtype, np.number):
        method = "nearest"
    return xp.asarray(np.percentile(host, list(q), method=method), device=a.device), n  # type: ignore[call-overload]


def _to_numpy(data: Array, **kwargs: Any) -> np.ndarray:
    return np.asarray(data, **kwargs)


def _register() -> None:
    concatenate_lookup.register(Array, _concatenate)
    tensordot_lookup.register(Array, _tensordot)
    take_lookup.register(Array, _take)
    divide_lookup.register(Array, _divide)
    empty_lookup.register(Array, _empty)
    numel_lookup.register(Array, _numel)
    nannumel_lookup.register(Array, _nannumel)
    einsum_lookup.register(Array, _einsum)
    percentile_lookup.register(Array, _percentile)
    to_numpy_dispatch.register(Array, _to_numpy)
    to_hxarray_dispatch.register(Array, lambda data, **kwargs: data)
    to_hxarray_dispatch.register(np.ndarray, lambda data, device=None, **kwargs:
                                 xp.asarray(data, device=device or _device(), **kwargs))


# -- devices -------------------------------------------------------------------------------------


def _chunk_to_device(block: Any, device: Any) -> Array:
    return block.to_device(device) if isinstance(block, Array) else xp.asarray(block,
                                                                               device=device)


def to_device(array: da.Array, device: Any) -> da.Array:
    """`array` with every chunk on `device` (hxarray or numpy chunks; a device or its name)."""
    if not isinstance(array, da.Array):
        raise TypeError(f"to_device() takes a dask array, got {type(array).__name__}")
    device = xp.Device(device) if isinstance(device, str) else device  # unknown: an error here
    meta = xp.empty((0,) * array.ndim, dtype=np.dtype(array.dtype), device=device)
    return array.map_blocks(_chunk_to_device, device=device, dtype=array.dtype, meta=meta)  # type: ignore[call-arg,arg-type]


# -- the array backend ---------------------------------------------------------------------------


def _fill(value: Any, dtype: Any, device: Any, block_info: Any = None) -> Array:
    shape = block_info[None]["chunk-shape"]
    if value is None:
        return xp.empty(shape, dtype=dtype, device=device)
    return xp.full(shape, value, dtype=dtype, device=device)


def _filled(value: Any, shape: Any, dtype: Any, chunks: Any = "auto", meta: Any = None,
            name: str | None = None, **kwargs: Any) -> da.Array:
    """da.ones/zeros/empty/full of hxarray chunks: one writable chunk per block (dask's numpy
    backend broadcasts a single element, which hxarray would let a write go through)."""
    if kwargs:
        raise TypeError(f"unexpected arguments for the hxarray array backend: {sorted(kwargs)}")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if dtype is None:
        dtype = np.float64 if value is None or isinstance(value, float) else np.result_type(value)
    dtype = xp.asarray(0, dtype=np.dtype(dtype)).dtype
    device = meta.device if isinstance(meta, Array) else _device()
    chunks = da.core.normalize_chunks(chunks, shape, dtype=np.dtype(dtype))
    meta = xp.empty((0,) * len(shape), dtype=dtype, device=device)
    return da.map_blocks(_fill, value, dtype, device, chunks=chunks, dtype=dtype, meta=meta,
                         name=name)


class RandomState:
    """dask's RandomState interface over numpy's generator, giving hxarray chunks on the
    backend's device (the legacy `da.random.random`, `normal`, ... functions use it)."""

    def __init__(self, seed: Any = None) -> None:
        self._state = np.random.RandomState(seed)

    def __getattr__(self, name: str) -> Any:
        function = getattr(self._state, name)
        if not callable(function):
            return function

        def draw(*args: Any, **kwargs: Any) -> Any:
            result = function(*args, **kwargs)
            if isinstance(result, np.ndarray):
                return xp.asarray(result, device=_device())
            return result

        return draw


def _random_block(kind: str, key: tuple[int, int], position: int, shape: tuple[int, ...],
                  params: tuple[int, int], dtype: Any, device: Any,
                  block_info: Any = None) -> Array:
    """The block of a `Generator` draw at block_info's location: each row of the block (a
    contiguous run of the whole array in C order) from the words of its place in the whole."""
    location = block_info[None]["array-location"]
    out = xp.empty(tuple(stop - start for start, stop in location), dtype=dtype, device=device)
    if not out.size:
        return out
    transform = KINDS[kind]
    start, stop = location[-1] if location else (0, 1)
    width = stop - start
    strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
    flat = _views.flatten(out)
    for k, row in enumerate(itertools.product(*(range(a, b) for a, b in location[:-1]))):
        first = sum(i * s for i, s in zip((*row, start), strides))
        device.backend.random_bits(kind, key, (position + transform.first(first)) % _random.WORDS,
                                   _views.slice_axis(flat, 0, k * width, (k + 1) * width), params)
    return out


class Generator:
    """dask arrays of hxarray chunks from hxarray.random's Philox stream, on the backend's
    device: each element takes its words from its place in the C-ordered whole array, so the
    values do not depend on the chunks; they are hxarray.random.default_rng(seed)'s for the same
    calls. float32 `random` (numpy's half-word stream) is not offered: use `uniform`."""

    def __init__(self, seed: Any = None) -> None:
        self._rng = _random.default_rng(seed)

    def _draw(self, function: str, size: Any, chunks: Any, plan: _random.Plan) -> da.Array:
        kind, dtype, params = plan
        shape = _random._size(size, function)
        bit_generator = self._rng.bit_generator
        position = bit_generator._take(KINDS[kind].words(math.prod(shape)))
        device = _device()
        chunks = da.core.normalize_chunks(chunks, shape, dtype=dtype.numpy)
        meta = xp.empty((0,) * len(shape), dtype=dtype, device=device)
        return da.map_blocks(_random_block, kind, bit_generator._key, position, shape, params,
                             dtype, device, chunks=chunks, dtype=dtype.numpy, meta=meta)

    def random(self, size: Any = None, dtype: Any = xp.float64, chunks: Any = "auto"
               ) -> da.Array:
        """hxarray.random.Generator.random (float64)."""
        if _random._float(dtype, "random") is not xp.float64:
            raise TypeError("random(): the dask generator gives float64; float32 values in "
                            "[0, 1) come from uniform(dtype=float32)")
        return self._draw("random", size, chunks, _random._random_plan(dtype))

    def uniform(self, low: float = 0.0, high: float = 1.0, size: Any = None,
                dtype: Any = xp.float64, chunks: Any = "auto") -> da.Array:
        """hxarray.random.Generator.uniform."""
        return self._draw("uniform", size, chunks, _random._uniform_plan(low, high, dtype))

    def integers(self, low: int, high: int | None = None, size: Any = None,
                 dtype: Any = xp.int64, endpoint: bool = False, chunks: Any = "auto"
                 ) -> da.Array:
        """hxarray.random.Generator.integers."""
        return self._draw("integers", size, chunks,
                          _random._integers_plan(low, high, dtype, endpoint))

    def standard_normal(self, size: Any = None, dtype: Any = xp.float64, chunks: Any = "auto"
                        ) -> da.Array:
        """hxarray.random.Generator.standard_normal."""
        return self.normal(0.0, 1.0, size, dtype, chunks)

    def normal(self, loc: float = 0.0, scale: float = 1.0, size: Any = None,
               dtype: Any = xp.float64, chunks: Any = "auto") -> da.Array:
        """hxarray.random.Generator.normal."""
        return self._draw("normal", size, chunks, _random._normal_plan(loc, scale, dtype))

    def exponential(self, scale: float = 1.0, size: Any = None, dtype: Any = xp.float64,
                    chunks: Any = "auto") -> da.Array:
        """hxarray.random.Generator.exponential."""
        return self._draw("exponential", size, chunks, _random._exponential_plan(scale, dtype))


def default_rng(seed: Any = None) -> Generator:
    """A dask `Generator` on hxarray.random's Philox(seed)."""
    return Generator(seed)


class random:  # noqa: N801 (a namespace, as dask.array.random)
    """`hxarray.dask.random.default_rng(seed)`."""

    default_rng = staticmethod(default_rng)
    Generator = Generator


class HxarrayBackendEntrypoint(ArrayBackendEntrypoint):
    """`dask.config.set({"array.backend": "hxarray"})`: da.ones, zeros, empty, full, arange and
    the da.random functions make hxarray chunks on the device of dask config's
    array.hxarray.device (else hxarray's default device)."""

    def __init__(self) -> None:
        _register()

    @classmethod
    def to_backend_dispatch(cls) -> Dispatch:
        return to_hxarray_dispatch

    @classmethod
    def to_backend(cls, data: da.Array, **kwargs: Any) -> da.Array:
        if isinstance(data._meta, Array):
            return data
        return to_device(data, kwargs.pop("device", None) or _device())

    @property
    def RandomState(self) -> type:
        return RandomState

    @property
    def default_bit_generator(self) -> Any:
        raise NotImplementedError("da.random.default_rng() has no hxarray generator; use the "
                                  "da.random functions (da.random.random, normal, ...), which "
                                  "make hxarray chunks, or to_device() on numpy chunks")

    @staticmethod
    def ones(shape: Any, *, dtype: Any = None, meta: Any = None, **kwargs: Any) -> da.Array:
        return _filled(1, shape, dtype, meta=meta, **kwargs)

    @staticmethod
    def zeros(shape: Any, *, dtype: Any = None, meta: Any = None, **kwargs: Any) -> da.Array:
        return _filled(0, shape, dtype, meta=meta, **kwargs)

    @staticmethod
    def empty(shape: Any, *, dtype: Any = None, meta: Any = None, **kwargs: Any) -> da.Array:
        return _filled(None, shape, dtype, meta=meta, **kwargs)

    @staticmethod
    def full(shape: Any, fill_value: Any, *, dtype: Any = None, meta: Any = None,
             **kwargs: Any) -> da.Array:
        if np.ndim(fill_value) != 0:
            raise ValueError(f"fill_value must be a scalar, got shape {np.shape(fill_value)}")
        return _filled(fill_value, shape, dtype, meta=meta, **kwargs)

    @staticmethod
    def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None,
               like: Any = None, **kwargs: Any) -> da.Array:
        with dask.config.set({"array.backend": "numpy"}):
            array = da.arange(start, stop, step, dtype=dtype, **kwargs)
        return to_device(array, like.device if isinstance(like, Array) else _device())


def backend_entrypoint() -> HxarrayBackendEntrypoint:
    """dask's `dask.array.backends` entry point (pyproject.toml)."""
    return HxarrayBackendEntrypoint()


# -- distributed: hxarray's threads on workers ---------------------------------------------------


def worker_threads(cores: int, workers: int, threads_per_worker: int) -> int:
    """The thread rule: each of a host's `workers` worker processes runs `threads_per_worker`
    tasks at once, so one hxarray operation gets cores // (workers * threads_per_worker) threads,
    at least 1 (the host's cores are shared out, never oversubscribed)."""
    return max(1, cores // max(1, workers * threads_per_worker))


def _apply_thread_rule(worker: Any, host_workers: int) -> int:
    configured = dask.config.get(THREADS_KEY, None)
    if configured is not None:
        count = int(configured)
    elif NUM_THREADS.raw() is not None:
        return xp.get_num_threads()  # the user's explicit setting stands
    else:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 1)
        count = worker_threads(cores, host_workers, worker.state.nthreads)
    xp.set_num_threads(count)
    return count


class ThreadRulePlugin(_WorkerPlugin):
    """A distributed WorkerPlugin applying `worker_threads` on each worker, counting the workers
    the scheduler knows on the worker's host (`client.register_plugin(ThreadRulePlugin())`;
    `dask_setup` registers it for every client created after `import hxarray.dask`)."""

    name = "hxarray-thread-rule"
    idempotent = True

    async def setup(self, worker: Any) -> None:
        from distributed.comm import get_address_host

        info = await worker.scheduler.identity()
        host = get_address_host(worker.address)
        on_host = sum(1 for address in info.get("workers", {})
                      if get_address_host(address) == host)
        _apply_thread_rule(worker, max(1, on_host))


async def dask_setup(client: Any) -> None:
    """distributed's preload hook (distributed.client.preload): registers ThreadRulePlugin with
    the cluster of every client created after `import hxarray.dask`."""
    if hasattr(client, "_register_worker_plugin"):  # a Client (not a worker preloading this)
        await client._register_worker_plugin(plugin=ThreadRulePlugin(),
                                             name=ThreadRulePlugin.name, idempotent=True)


def _preload_for_clients() -> None:
    if _WorkerPlugin is object:
        return
    preloads = list(dask.config.get("distributed.client.preload", []))
    if __name__ not in preloads:
        dask.config.set({"distributed.client.preload": [*preloads, __name__]})


_register()
_preload_for_clients()
