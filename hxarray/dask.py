"""hxarray as a dask.array chunk type and array backend (docs/dask.md).

Importing this module (dask's `array.backends` entry point does, for
`dask.config.set({"array.backend": "hxarray"})`) registers what dask needs beyond numpy's
protocols: its `*_lookup` dispatches for hxarray arrays and, where distributed is installed,
distributed's serialisation of hxarray arrays and a client preload that applies the thread rule
(`worker_threads`) on every worker. `DeviceCluster` runs one worker per device. `import hxarray`
never imports dask.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import pickle
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
    from distributed import LocalCluster as _LocalCluster
    from distributed import WorkerPlugin as _WorkerPlugin
    from distributed.protocol import dask_deserialize, dask_serialize
except ImportError:  # dask without distributed: no thread rule, no device workers
    _WorkerPlugin = object  # type: ignore[misc,assignment]
    _LocalCluster = object  # type: ignore[misc,assignment]
    dask_serialize = dask_deserialize = None  # type: ignore[assignment]

import hxarray as xp
from hxarray import Array, _views
from hxarray import random as _random
from hxarray._array import _rebuild
from hxarray._dtypes import FROM_NUMPY
from hxarray.backends.philox import KINDS
from hxarray.hal.settings import DEFAULT_DEVICE, NUM_THREADS

__all__ = ["DeviceCluster", "Generator", "HxarrayBackendEntrypoint", "RandomState",
           "backend_entrypoint", "default_rng", "random", "to_device",
           "to_hxarray_dispatch", "worker_device", "worker_threads", "ThreadRulePlugin",
           "dask_setup"]

DEVICE_KEY = "array.hxarray.device"  # dask config: the device the backend creates chunks on
WORKER = "worker"  # as a device: the default device of the process computing each chunk
THREADS_KEY = "array.hxarray.threads"  # dask config: hxarray's threads per worker (overrides)

to_hxarray_dispatch = Dispatch("to_hxarray_dispatch")


def _default_device() -> Any:
    return xp.__array_namespace_info__().default_device()


def _worker_target() -> Any:
    """The device of a chunk made for "worker": the default device of the process computing it
    (a device worker's own); the reason where the worker failed to take its device."""
    if _worker_failure:
        raise ValueError(f"this worker does not own a device: {_worker_failure[0]}")
    return _default_device()


def _device() -> Any:
    """The device of the backend's chunks made here and now: dask config's array.hxarray.device,
    else (and for "worker") hxarray's default device."""
    name = dask.config.get(DEVICE_KEY, None)
    return _default_device() if name is None or name == WORKER else xp.Device(name)


def _target() -> Any:
    """The device of the backend's chunks in a graph being built: `_device()`, or WORKER where
    dask config says "worker" (each chunk on the default device of the process computing it)."""
    return WORKER if dask.config.get(DEVICE_KEY, None) == WORKER else _device()


def _on_device_of(like: Array, value: Any) -> Any:
    if isinstance(value, Array):
        return value if value.device == like.device else value.to_device(like.device)
    return xp.asarray(value, device=like.device)


# -- dask's per-type dispatches ------------------------------------------------------------------


def _concatenate(arrays: Any, axis: int | None = 0) -> Array:
    """xp.concat, on the first hxarray chunk's device: dask's combine steps may gather partial
    results of blocks on several devices."""
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
    if device == WORKER:
        device = _worker_target()
    return block.to_device(device) if isinstance(block, Array) else xp.asarray(block,
                                                                               device=device)


def to_device(array: da.Array, device: Any) -> da.Array:
    """`array` with every chunk on `device` (hxarray or numpy chunks; a device or its name), or
    with "worker", on the default device of the process that computes the chunk: on a
    `DeviceCluster`, the device of the worker that holds it, so the chunks spread over the
    cluster's devices as dask spreads the work over its workers (the array's meta, which only
    tells dask the chunk type, is on this process's default device)."""
    if not isinstance(array, da.Array):
        raise TypeError(f"to_device() takes a dask array, got {type(array).__name__}")
    if device != WORKER:
        device = xp.Device(device) if isinstance(device, str) else device  # unknown: an error
    meta = xp.empty((0,) * array.ndim, dtype=np.dtype(array.dtype),
                    device=_default_device() if device == WORKER else device)
    return array.map_blocks(_chunk_to_device, device=device, dtype=array.dtype, meta=meta)  # type: ignore[call-arg,arg-type]


# -- many devices: one worker per device ---------------------------------------------------------

_worker_device: list[Any] = []  # the device this worker process owns: set once, by its preload
_worker_failure: list[str] = []  # why this worker does not own the device its resources name


def worker_device() -> Any:
    """The device this dask worker process owns (a worker with a resource named by a device,
    e.g. `cuda:1`, preloading hxarray.dask), else None: in the client, or on other workers."""
    return _worker_device[0] if _worker_device else None


def _device_name(name: Any) -> Any:
    """The device a worker resource names, or None where it names none (a "GPU" resource)."""
    try:
        return xp.Device(name) if isinstance(name, str) else None
    except ValueError:
        return None


def _owned_devices(resources: dict[str, Any]) -> list[Any]:
    return [device for name, amount in resources.items()
            if amount and (device := _device_name(name)) is not None]


def _take_device(worker: Any) -> None:
    """Make the worker's process own the device its resources name (none: nothing to do): it
    must exist here and be the process's default device (HXARRAY_DEFAULT_DEVICE, set here where
    unset); dask config's array.hxarray.device names it, so the hxarray backend's chunks made
    there land on it. distributed logs a preload's error and starts the worker all the same, so
    the error is kept too, and raised by the tasks that would put chunks on the device."""
    try:
        _own(worker)
    except ValueError as error:
        _worker_failure[:] = [str(error)]
        raise


def _own(worker: Any) -> None:
    owned = _owned_devices(dict(worker.state.total_resources))
    if not owned:
        return
    if len(owned) > 1:
        raise ValueError(f"dask worker {worker.name!r} has resources for several devices "
                         f"({', '.join(map(str, owned))}); a worker owns one device")
    device = owned[0]
    try:
        device.backend  # noqa: B018 - it must exist in this process
    except ValueError as error:
        raise ValueError(f"dask worker {worker.name!r} has the resource {str(device)!r}, but "
                         f"{error}") from None
    if _worker_device and _worker_device[0] != device:
        raise ValueError(f"dask worker {worker.name!r} owns {device}, but another worker in "
                         f"its process owns {_worker_device[0]}: run one process per device "
                         "(a DeviceCluster does)")
    if not os.environ.get(DEFAULT_DEVICE.name, "").strip():  # read at its first use, not yet
        os.environ[DEFAULT_DEVICE.name] = str(device)
    default = _default_device()
    if default != device:
        raise ValueError(f"dask worker {worker.name!r} owns {device} (its resources), but its "
                         f"default device is {default}: start it with "
                         f"HXARRAY_DEFAULT_DEVICE={device}, or none")
    dask.config.set({DEVICE_KEY: str(device)})
    _worker_device[:] = [device]


def _serialize(x: Array) -> tuple[dict[str, Any], list[Any]]:
    """distributed's serialisation of an hxarray array: pickle's payload (the values in C
    order, out-of-band for a CPU array) in one frame."""
    _, (data, dtype, shape, device) = x.__reduce_ex__(5)
    return ({"dtype": dtype.numpy.str, "shape": list(shape), "device": str(device)},
            [data.raw() if isinstance(data, pickle.PickleBuffer) else data])


def _deserialize(header: dict[str, Any], frames: list[Any]) -> Array:
    """An array arriving at a worker that owns a device lands on that device when it comes
    from another device of its type (the worker's tasks then see only their own device's
    chunks); elsewhere, on the device it left."""
    device = xp.Device(header["device"])
    owned = worker_device()
    if owned is not None and device.type is owned.type:
        device = owned
    return _rebuild(frames[0], FROM_NUMPY[np.dtype(header["dtype"])], tuple(header["shape"]),
                    device)


class DeviceCluster(_LocalCluster):
    """A distributed LocalCluster of one worker process per device (docs/dask.md). The worker
    of `cuda:1` is named `cuda:1` and owns that device (`worker_device()`): it has the resource
    `cuda:1`, cuda:1 as its default device (HXARRAY_DEFAULT_DEVICE) and as dask config's
    array.hxarray.device, and arrays of another CUDA device arriving at it land on cuda:1, so
    the chunks it computes and receives stay on its device. `to_device(array, "worker")` puts
    each chunk on the device of the worker computing it. `devices`: names or devices (default:
    every CUDA device here); other arguments as LocalCluster's, one thread per worker unless
    `threads_per_worker` says otherwise; `n_workers`, if given, must equal len(devices), and
    the cluster does not scale beyond one worker per device."""

    def __init__(self, devices: Any = None, *, n_workers: int | None = None,
                 threads_per_worker: int = 1, **kwargs: Any) -> None:
        if _LocalCluster is object:
            raise ImportError("DeviceCluster needs distributed (pip install 'hxarray[dask]')")
        devices = _cluster_devices(devices)
        if n_workers is not None and n_workers != len(devices):
            raise ValueError(f"a DeviceCluster has one worker per device: {len(devices)} "
                             f"devices ({', '.join(map(str, devices))}) but n_workers="
                             f"{n_workers}")
        if not kwargs.pop("processes", True):
            raise ValueError("a DeviceCluster runs each device's worker in its own process "
                             "(processes=False would share one process between devices)")
        if "memory_limit" not in kwargs:  # LocalCluster's share: the host's memory / workers
            from distributed.worker_memory import parse_memory_limit

            kwargs["memory_limit"] = parse_memory_limit("auto", 1, len(devices),
                                                        logger=logging.getLogger(__name__))
        self.devices = devices
        super().__init__(n_workers=0, threads_per_worker=threads_per_worker, processes=True,
                         **kwargs)

    async def _start(self) -> None:
        while len(self.worker_spec) < len(self.devices):
            self.worker_spec.update(self.new_worker_spec())
        await super()._start()

    def new_worker_spec(self) -> dict[str, Any]:
        """The worker of the next device without one (SpecCluster asks when it scales up)."""
        free = [d for d in self.devices if str(d) not in self.worker_spec]
        if not free:
            raise ValueError(f"a DeviceCluster has one worker per device and each of its "
                             f"{len(self.devices)} devices ({', '.join(map(str, self.devices))})"
                             " has its worker: it cannot scale beyond that")
        device = str(free[0])
        options = dict(self.new_spec["options"])
        options["name"] = device
        options["resources"] = {**(options.get("resources") or {}), device: 1}
        options["env"] = {**(options.get("env") or {}), DEFAULT_DEVICE.name: device}
        preload = options.get("preload") or dask.config.get("distributed.worker.preload", [])
        options["preload"] = [*preload, __name__]
        return {device: {**self.new_spec, "options": options}}


def _cluster_devices(devices: Any) -> list[Any]:
    """DeviceCluster's devices, each checked to exist here, none twice."""
    if devices is None:
        devices = [d for d in xp.__array_namespace_info__().devices() if d.type.name == "cuda"]
        if not devices:
            raise ValueError("DeviceCluster(): no CUDA device here; name the devices "
                             "(devices=[...])")
    elif isinstance(devices, (str, xp.Device)):
        devices = [devices]
    devices = [xp.Device(d) for d in devices]
    if not devices:
        raise ValueError("DeviceCluster() needs at least one device")
    if len(set(devices)) != len(devices):
        raise ValueError(f"DeviceCluster(): a device is named twice in "
                         f"{[str(d) for d in devices]}: one worker per device")
    for device in devices:
        try:
            device.backend  # noqa: B018
        except ValueError as error:
            available = ", ".join(map(str, xp.__array_namespace_info__().devices()))
            raise ValueError(f"DeviceCluster(): {error} (devices here: {available})") from None
    return devices


# -- the array backend ---------------------------------------------------------------------------


def _fill(value: Any, dtype: Any, device: Any, block_info: Any = None) -> Array:
    shape = block_info[None]["chunk-shape"]
    if device == WORKER:
        device = _worker_target()
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
    device = meta.device if isinstance(meta, Array) else _target()
    chunks = da.core.normalize_chunks(chunks, shape, dtype=np.dtype(dtype))
    meta = xp.empty((0,) * len(shape), dtype=dtype,
                    device=_default_device() if device == WORKER else device)
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
    if device == WORKER:
        device = _worker_target()
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
        device = _target()
        chunks = da.core.normalize_chunks(chunks, shape, dtype=dtype.numpy)
        meta = xp.empty((0,) * len(shape), dtype=dtype,
                        device=_default_device() if device == WORKER else device)
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
        return to_device(data, kwargs.pop("device", None) or _target())

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
        return to_device(array, like.device if isinstance(like, Array) else _target())


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
    """distributed's preload hook. In a client (distributed.client.preload): registers
    ThreadRulePlugin with the cluster of every client created after `import hxarray.dask`. In a
    worker (`--preload hxarray.dask`, as DeviceCluster's workers have): a worker whose resources
    name a device owns it (`worker_device`)."""
    if hasattr(client, "_register_worker_plugin"):  # a Client
        await client._register_worker_plugin(plugin=ThreadRulePlugin(),
                                             name=ThreadRulePlugin.name, idempotent=True)
    elif hasattr(client, "state") and hasattr(client.state, "total_resources"):  # a Worker
        _take_device(client)


def _preload_for_clients() -> None:
    if _WorkerPlugin is object:
        return
    preloads = list(dask.config.get("distributed.client.preload", []))
    if __name__ not in preloads:
        dask.config.set({"distributed.client.preload": [*preloads, __name__]})


_register()
_preload_for_clients()
if dask_serialize is not None:
    dask_serialize.register(Array)(_serialize)
    dask_deserialize.register(Array)(_deserialize)
