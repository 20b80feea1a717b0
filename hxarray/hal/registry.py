"""Backends and the registry that maps each device type to one.

Built-in backends are listed below; third-party backends announce themselves through the
entry-point group ``hxarray.backends`` (the value names a `Backend` subclass), the analogue of
PyTorch's PrivateUse1 plug-ins. Backends are instantiated lazily, on first use of their device type.
"""

from __future__ import annotations

import importlib
import threading
import warnings
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from .device import Device, DeviceType, DeviceUnavailableError

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

    from .._array import Array
    from .._dtypes import DType
    from .allocator import Allocator
    from .stream import Event, Stream

__all__ = ["Backend", "BackendRegistry", "registry", "ENTRY_POINT_GROUP"]

ENTRY_POINT_GROUP = "hxarray.backends"
BUILTIN_BACKENDS = {
    "cpu": "hxarray.backends.cpu:CpuBackend",
}

Shape = tuple[int, ...]
Scalar = bool | int | float | complex


class Backend(ABC):
    """Runs the operations of one device type.

    The namespace has already validated every argument, promoted dtypes, normalised axes and
    computed output shapes; a backend only computes. Results are new arrays whose buffers come from
    the device's allocator (or views that share an input's buffer, where stated).
    """

    device_type: DeviceType

    # -- devices, memory and streams ---------------------------------------------------------------
    def unavailable_reason(self) -> str | None:
        """Why this backend cannot run here, or None when it can."""
        return None

    @abstractmethod
    def device_count(self) -> int: ...

    @abstractmethod
    def capabilities(self, device: Device) -> dict[str, Any]: ...

    @abstractmethod
    def allocator(self, device: Device) -> Allocator: ...

    @abstractmethod
    def default_stream(self, device: Device) -> Stream: ...

    @abstractmethod
    def create_stream(self, device: Device, **options: Any) -> Stream: ...

    @abstractmethod
    def create_event(self, device: Device, **options: Any) -> Event: ...

    def synchronize(self, device: Device) -> None:
        """Wait for all work on `device`."""
        self.default_stream(device).synchronize()

    # -- interchange -------------------------------------------------------------------------------
    def host_view(self, x: Array) -> np.ndarray | None:
        """A numpy view of `x` that keeps its buffer alive, or None if the memory is not
        host-accessible (then callers copy with `to_host`)."""
        return None

    def adopt(self, data: np.ndarray) -> Array | None:
        """An array sharing the host array `data`'s memory, or None if this device cannot use
        host memory in place."""
        return None

    @abstractmethod
    def dlpack_device(self, device: Device) -> tuple[int, int]:
        """The DLPack (device type, index) pair of `device`."""

    @abstractmethod
    def dlpack(self, x: Array, *, stream: Any, max_version: tuple[int, int] | None,
               dl_device: tuple[int, int] | None, copy: bool | None) -> Any:
        """A DLPack capsule of `x` (spec: array.__dlpack__)."""

    # -- data movement and creation ----------------------------------------------------------------
    @abstractmethod
    def empty(self, shape: Shape, dtype: DType, device: Device) -> Array:
        """An uninitialised C-contiguous array."""

    @abstractmethod
    def from_host(self, data: np.ndarray, device: Device) -> Array:
        """A new array holding a copy of the host array `data` (same dtype and shape)."""

    @abstractmethod
    def to_host(self, x: Array) -> np.ndarray:
        """A host (numpy) copy of `x`."""

    @abstractmethod
    def full(self, shape: Shape, value: Scalar, dtype: DType, device: Device) -> Array: ...

    @abstractmethod
    def arange(self, start: Scalar, stop: Scalar, step: Scalar, dtype: DType,
               device: Device) -> Array: ...

    @abstractmethod
    def linspace(self, start: Scalar, stop: Scalar, num: int, dtype: DType, device: Device,
                 endpoint: bool) -> Array: ...

    @abstractmethod
    def copy(self, x: Array, dtype: DType | None = None) -> Array:
        """A C-contiguous copy of `x`, cast to `dtype` if given."""

    @abstractmethod
    def assign(self, dst: Array, src: Array | Scalar) -> None:
        """Write `src` (broadcast to `dst.shape`) into the view `dst`."""

    # -- compute -----------------------------------------------------------------------------------
    @abstractmethod
    def elementwise(self, name: str, args: Sequence[Array | Scalar], dtype: DType,
                    shape: Shape) -> Array:
        """The spec's elementwise function `name` (or `where`, `clip`), broadcast to `shape`, with
        result dtype `dtype`. Python scalars in `args` have already been checked against the
        array operands' dtype."""

    @abstractmethod
    def reduce(self, name: str, x: Array, axes: tuple[int, ...], keepdims: bool,
               dtype: DType, **params: Any) -> Array:
        """Reductions: sum, prod, max, min, mean, var, std (param `correction`), all, any,
        count_nonzero, argmax, argmin (one axis), cumulative_sum, cumulative_prod (one axis,
        params `include_initial`, `initial`), diff (params `n`, `prepend`, `append`)."""

    @abstractmethod
    def matmul(self, a: Array, b: Array, dtype: DType) -> Array: ...

    @abstractmethod
    def tensordot(self, a: Array, b: Array, axes: tuple[Sequence[int], Sequence[int]],
                  dtype: DType) -> Array: ...

    @abstractmethod
    def sort(self, x: Array, axis: int, descending: bool, stable: bool,
             indices: bool) -> Array:
        """Sorted values, or (with `indices`) the sorting permutation as int64."""

    @abstractmethod
    def searchsorted(self, x1: Array, x2: Array, side: str, sorter: Array | None) -> Array: ...

    @abstractmethod
    def nonzero(self, x: Array) -> tuple[Array, ...]: ...

    @abstractmethod
    def unique(self, x: Array) -> tuple[Array, Array, Array, Array]:
        """(values, indices of first occurrences, inverse indices shaped like x, counts)."""

    @abstractmethod
    def isin(self, x1: Array, x2: Array, invert: bool) -> Array: ...

    @abstractmethod
    def take(self, x: Array, indices: Array, axis: int) -> Array: ...

    @abstractmethod
    def take_along_axis(self, x: Array, indices: Array, axis: int) -> Array: ...

    @abstractmethod
    def gather(self, x: Array, key: tuple[Any, ...]) -> Array:
        """Advanced indexing: `key` holds ints, slices, None, Ellipsis and integer or boolean
        arrays on this device, in numpy's advanced-indexing semantics."""

    @abstractmethod
    def scatter(self, x: Array, key: tuple[Any, ...], value: Array | Scalar) -> None:
        """In-place advanced-index assignment into `x`."""

    @abstractmethod
    def concat(self, arrays: Sequence[Array], axis: int, dtype: DType) -> Array: ...

    @abstractmethod
    def manipulate(self, name: str, x: Array, **params: Any) -> Array:
        """Copying rearrangements: roll (shift, axis), repeat (repeats, axis), tile (repetitions),
        tril / triu (k), pad (pad_width, value)."""

    @abstractmethod
    def linalg(self, name: str, *args: Array, **params: Any) -> Any:
        """A `linalg` extension function by name; returns an array or a tuple of arrays."""

    @abstractmethod
    def fft(self, name: str, x: Array, **params: Any) -> Array:
        """An `fft` extension function by name (params: n/s, axis/axes, norm)."""


def entry_points(group: str) -> Any:
    """The installed entry points of `group`; importlib.metadata is imported on first use (its
    modules take 3 MB of memory, which built-in backends do without)."""
    from importlib.metadata import entry_points as installed

    return installed(group=group)


class BackendRegistry:
    """Maps device types to backends; discovers plug-ins on first use; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._sources: dict[str, Any] = dict(BUILTIN_BACKENDS)
        self._backends: dict[DeviceType, Backend] = {}
        self._failures: dict[str, str] = {
            "cuda": "hxarray has no CUDA backend in this build yet (it is planned)"}
        self._discovered = False

    def register(self, backend: type[Backend] | Backend, *, replace: bool = False) -> Backend:
        """Register a backend class or instance for its `device_type`."""
        instance = backend() if isinstance(backend, type) else backend
        if not isinstance(instance, Backend):
            raise TypeError(f"expected a Backend subclass or instance, got {backend!r}")
        device_type = DeviceType.register(instance.device_type.name)
        with self._lock:
            if device_type in self._backends and not replace:
                raise ValueError(f"a backend for {device_type.name!r} is already registered; "
                                 "pass replace=True to override it")
            self._backends[device_type] = instance
            self._sources.pop(device_type.name, None)
            self._failures.pop(device_type.name, None)
        for device in list(Device._interned.values()):  # other threads may intern devices
            if device.type is device_type:
                device._backend = None
        return instance

    def discover(self) -> None:
        """Read the ``hxarray.backends`` entry points (once) and note the device types they add."""
        with self._lock:
            if self._discovered:
                return
            self._discovered = True
            for ep in entry_points(group=ENTRY_POINT_GROUP):
                try:
                    DeviceType.register(ep.name)
                except ValueError as exc:  # a badly named plug-in must not break hxarray
                    warnings.warn(f"ignoring hxarray backend entry point {ep.value!r}: {exc}",
                                  RuntimeWarning, stacklevel=2)
                    continue
                self._sources.setdefault(ep.name, ep)

    def _load(self, name: str) -> Backend | None:
        source = self._sources.get(name)
        if source is None:
            return None
        try:
            if isinstance(source, str):
                module, _, attr = source.partition(":")
                factory = getattr(importlib.import_module(module), attr)
            else:
                factory = source.load()
            instance = factory() if isinstance(factory, type) else factory
            if isinstance(instance, Backend) and instance.device_type is not DeviceType(name):
                raise TypeError(f"{factory!r} is a backend for {instance.device_type.name!r}, "
                                f"not for {name!r}")
            return self.register(instance)
        except Exception as exc:  # a broken plug-in must not break hxarray
            reason = f"loading backend {name!r} failed: {type(exc).__name__}: {exc}"
            self._failures[name] = reason
            self._sources.pop(name, None)
            warnings.warn(reason, RuntimeWarning, stacklevel=3)
            return None

    def get(self, device_type: DeviceType | str) -> Backend:
        """The backend for `device_type`; `DeviceUnavailableError` (a ValueError) saying why not."""
        device_type = DeviceType(device_type)
        backend = self._backends.get(device_type)
        if backend is not None:
            return backend
        with self._lock:
            backend = self._backends.get(device_type) or self._load(device_type.name)
            if backend is None:  # not built in: perhaps a plug-in's
                self.discover()
                backend = self._backends.get(device_type) or self._load(device_type.name)
        if backend is None:
            reason = self._failures.get(device_type.name, "no backend is registered for it")
            raise DeviceUnavailableError(
                f"device type {device_type.name!r} cannot be used: {reason}; "
                f"usable device types: {', '.join(self.available_types()) or 'none'}")
        return backend

    def backend_for(self, device: Device) -> Backend:
        """The backend that runs `device`, after checking that the device exists here."""
        backend = self.get(device.type)
        reason = backend.unavailable_reason()
        if reason is not None:
            raise DeviceUnavailableError(f"{device} is not available: {reason}")
        count = backend.device_count()
        if device.index >= count:
            raise DeviceUnavailableError(
                f"{device} does not exist: this machine has {count} {device.type.name} device(s)")
        return backend

    def available_types(self) -> list[str]:
        """Names of device types whose backend loads and reports itself available."""
        names = []
        with self._lock:  # loading races with `get` otherwise
            self.discover()
            for device_type in DeviceType.members():
                backend = self._backends.get(device_type) or self._load(device_type.name)
                if backend is not None and backend.unavailable_reason() is None:
                    names.append(device_type.name)
        return names

    def devices(self) -> list[Device]:
        """Every usable device of every registered backend."""
        found = []
        for name in self.available_types():
            backend = self._backends[DeviceType(name)]
            found.extend(Device(name, i) for i in range(backend.device_count()))
        return found


registry = BackendRegistry()
