"""Device types, devices, and the default-device scope.

A `Device` is a tiny immutable value (type + index), interned so that `Device("cuda:0") is
Device("cuda", 0)`. Whether a device can actually be used is the business of its backend; creating
the value never touches hardware.
"""

from __future__ import annotations

import contextlib
import contextvars
import operator
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from .settings import DEFAULT_DEVICE

if TYPE_CHECKING:  # annotations only: the HAL imports nothing above it
    from ..backends.base import Backend

__all__ = ["DeviceType", "Device", "DeviceUnavailableError", "Registry", "default_device",
           "device_scope", "use_registry"]


class DeviceUnavailableError(ValueError):
    """A device was named correctly but cannot be used here (no backend, no hardware, bad index)."""


class Registry(Protocol):
    """What the HAL asks of the layer above it, which knows the backends: the backend registry
    (`hxarray.backends.registry`) installs itself with `use_registry` when it is imported."""

    def discover(self) -> None:
        """Register the device types that installed plug-ins add."""

    def backend_for(self, device: Device) -> Backend:
        """The backend that runs `device`; `DeviceUnavailableError` saying why there is none."""

    def capabilities(self, device: Device) -> dict[str, Any]:
        """`device.capabilities()`."""

    def best_device(self) -> Device:
        """The device hxarray picks by itself (`HXARRAY_DEFAULT_DEVICE=best`)."""


_registry: list[Registry] = []


def use_registry(registry: Registry) -> None:
    """Make `registry` the one the HAL asks for backends (the backend layer calls it once)."""
    _registry[:] = [registry]


def _installed_registry() -> Registry:
    if not _registry:
        raise DeviceUnavailableError("no backend registry is installed: `import hxarray` "
                                     "installs it")
    return _registry[0]


class DeviceType:
    """An extensible enumeration of device kinds; plug-ins add members with `register`."""

    __slots__ = ("name",)
    name: str
    _members: dict[str, DeviceType] = {}
    _lock = threading.Lock()

    CPU: DeviceType
    CUDA: DeviceType

    def __new__(cls, name: str | DeviceType) -> DeviceType:
        if isinstance(name, DeviceType):
            return name
        try:
            return cls._members[name]
        except (KeyError, TypeError):
            pass
        if isinstance(name, str) and _registry:  # a plug-in's: known once entry points are read
            _registry[0].discover()
            if name in cls._members:
                return cls._members[name]
        known = ", ".join(sorted(cls._members))
        raise ValueError(f"unknown device type {name!r}; known device types: {known}")

    @classmethod
    def register(cls, name: str) -> DeviceType:
        """Add (or return the existing) device type called `name`."""
        if not isinstance(name, str) or not name.isidentifier() or name != name.lower():
            raise ValueError(f"a device type name must be a lowercase identifier, got {name!r}")
        with cls._lock:
            member = cls._members.get(name)
            if member is None:
                member = object.__new__(cls)
                member.name = name
                cls._members[name] = member
            return member

    @classmethod
    def members(cls) -> tuple[DeviceType, ...]:
        return tuple(cls._members.values())

    def __repr__(self) -> str:
        return f"DeviceType({self.name!r})"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self) -> tuple[Any, ...]:
        return (DeviceType, (self.name,))


DeviceType.CPU = DeviceType.register("cpu")
DeviceType.CUDA = DeviceType.register("cuda")


class Device:
    """A device: a `DeviceType` plus an index. Accepts `Device("cuda:1")`, `Device("cpu")`,
    `Device("cuda", 1)` or `Device(DeviceType.CUDA, 1)`; equal devices are the same object."""

    __slots__ = ("type", "index", "_backend", "__weakref__")
    type: DeviceType
    index: int
    _backend: Backend | None
    _interned: dict[tuple[DeviceType, int], Device] = {}

    def __new__(cls, spec: str | DeviceType | Device, index: int | None = None) -> Device:
        if isinstance(spec, Device):
            if index is not None and index != spec.index:
                raise ValueError(f"conflicting index {index} for device {spec}")
            return spec
        if isinstance(spec, str) and index is None and ":" in spec:
            type_name, _, index_text = spec.partition(":")
            try:
                index = int(index_text)
            except ValueError:
                raise ValueError(
                    f"invalid device string {spec!r}: expected 'type' or 'type:index' "
                    "such as 'cuda:1'"
                ) from None
            spec = type_name
        elif not isinstance(spec, (str, DeviceType)):
            raise TypeError(f"a device is given as a Device, a DeviceType or a string such as "
                            f"'cpu' or 'cuda:1', got {type(spec).__name__}")
        device_type = DeviceType(spec)
        if index is None:
            index = 0
        elif type(index) is not int:
            if isinstance(index, bool) or not hasattr(index, "__index__"):
                raise TypeError(f"a device index must be an int, got {type(index).__name__}")
            index = operator.index(index)
        if index < 0:
            raise ValueError(f"a device index must be non-negative, got {index}")
        key = (device_type, index)
        device = cls._interned.get(key)
        if device is None:
            device = object.__new__(cls)
            device.type = device_type
            device.index = index
            device._backend = None
            device = cls._interned.setdefault(key, device)
        return device

    @property
    def backend(self) -> Backend:
        """The backend that runs this device (looked up once); `DeviceUnavailableError` if none."""
        backend = self._backend
        if backend is None:
            backend = _installed_registry().backend_for(self)
            self._backend = backend
        return backend

    def capabilities(self) -> dict[str, Any]:
        """Name, vendor, total/free memory, compute units and type-specific features, with the
        estimated `peak_flops` per dtype and `memory_bandwidth` (`hxarray.backends.performance`:
        read from the device's properties, or measured once and cached)."""
        return _installed_registry().capabilities(self)

    def __repr__(self) -> str:
        return f"Device('{self}')"

    def __str__(self) -> str:
        return f"{self.type.name}:{self.index}" if self.index or self.type is not DeviceType.CPU \
            else "cpu"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Device, (self.type.name, self.index))


_scoped_device: contextvars.ContextVar[Device | None] = contextvars.ContextVar(
    "hxarray_device", default=None)
_env_default: list[Device] = []  # filled once and never rebound (the compiled fast path holds it)
_scoped = _scoped_device.get  # (bound once: every new array asks)


def default_device() -> Device:
    """The device new arrays go to: the innermost `device_scope`, else `HXARRAY_DEFAULT_DEVICE`
    (a device, or `best` for `best_device()`), else the CPU."""
    device = _scoped()
    if device is not None:
        return device
    if not _env_default:
        spec = DEFAULT_DEVICE.get()
        try:
            if spec == "best":
                _env_default.append(_installed_registry().best_device())
            else:
                _env_default.append(Device(spec))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"HXARRAY_DEFAULT_DEVICE={spec!r} is not a valid device: "
                             f"{exc}") from None
    return _env_default[0]


@contextlib.contextmanager
def device_scope(device: Device | str) -> Iterator[Device]:
    """Make `device` the default device inside the `with` block (per thread and per task)."""
    device = Device(device)
    device.backend  # noqa: B018 - fail now, with the reason, if the device cannot be used
    token = _scoped_device.set(device)
    try:
        yield device
    finally:
        _scoped_device.reset(token)
