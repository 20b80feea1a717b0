"""Backends and the registry that maps each device type to one.

Built-in backends are listed below; third-party backends announce themselves through the
entry-point group ``hxarray.backends`` (the value names a `Backend` subclass), the analogue of
PyTorch's PrivateUse1 plug-ins. Backends are instantiated lazily, on first use of their device type.
"""

from __future__ import annotations

import importlib
import threading
import warnings
from typing import Any

from ..hal.device import Device, DeviceType, DeviceUnavailableError, use_registry
from .base import Backend

__all__ = ["BackendRegistry", "registry", "ENTRY_POINT_GROUP"]

ENTRY_POINT_GROUP = "hxarray.backends"
BUILTIN_BACKENDS = {
    "cpu": "hxarray.backends.cpu:CpuBackend",
    "cuda": "hxarray.backends.cuda.backend:CudaBackend",
}


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
        self._failures: dict[str, str] = {}
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

    def capabilities(self, device: Device) -> dict[str, Any]:
        """`device.capabilities()`: its backend's, with the estimated peak FLOP/s and memory
        bandwidth (`hxarray.backends.performance`)."""
        from .performance import estimate

        return {"managed_memory": False, **device.backend.capabilities(device),
                **estimate(device)}

    def best_device(self) -> Device:
        """`hxarray.best_device()` among this registry's devices."""
        from .selection import best_device

        return best_device(self)

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

    def unavailable(self) -> dict[str, str]:
        """Every known device type that cannot be used here, with the reason: its backend failed
        to load, reports itself unavailable, or does not exist."""
        usable = set(self.available_types())
        reasons = {}
        for device_type in DeviceType.members():
            name = device_type.name
            if name in usable:
                continue
            backend = self._backends.get(device_type)
            reason = backend.unavailable_reason() if backend is not None else None
            reasons[name] = reason or self._failures.get(name, "no backend is registered for it")
        return reasons

    def devices(self) -> list[Device]:
        """Every usable device of every registered backend."""
        found: list[Device] = []
        for name in self.available_types():
            backend = self._backends[DeviceType(name)]
            found.extend(Device(name, i) for i in range(backend.device_count()))
        return found


registry = BackendRegistry()
use_registry(registry)  # the HAL's devices find their backends here
