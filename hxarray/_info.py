"""Inspection (spec: "Inspection"): `__array_namespace_info__()` and memory statistics."""

from __future__ import annotations

from typing import Any

from . import _dtypes as dt
from ._checks import as_device
from ._version import sequence_result
from .backends.registry import registry
from .hal.device import Device, default_device

__all__ = ["__array_namespace_info__", "empty_cache", "memory_stats", "set_memory_limit"]


class Devices(tuple[Device, ...]):
    """What `devices()` returns: the tuple the standard (2025.12) asks for, which also adds to a
    list as the list of earlier versions and numpy's namespace did (`devices() + [None]` is a
    list); every other tuple operation is a tuple's."""

    __slots__ = ()

    def __add__(self, other: Any) -> Any:
        if isinstance(other, list):
            return [*self, *other]
        return super().__add__(other)

    def __radd__(self, other: Any) -> Any:
        if isinstance(other, list):
            return [*other, *self]
        return NotImplemented


class Info:
    """What this namespace supports, for every device the registry knows."""

    __module__ = "hxarray"

    def capabilities(self) -> dict[str, Any]:
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> Device:
        return default_device()

    def devices(self) -> tuple[Device, ...] | list[Device]:
        found = sequence_result(registry.devices())
        return Devices(found) if isinstance(found, tuple) else found

    def default_dtypes(self, *, device: Any = None) -> dict[str, dt.DType]:
        as_device(device, "default_dtypes")
        return {"real floating": dt.float64, "complex floating": dt.complex128,
                "integral": dt.int64, "indexing": dt.int64}

    def dtypes(self, *, device: Any = None,
               kind: str | tuple[str, ...] | None = None) -> dict[str, dt.DType]:
        as_device(device, "dtypes")
        if kind is None:  # the standard's (float16, numpy mode's, is left out, as numpy does)
            return {d.name: d for d in dt.STANDARD_DTYPES}
        kinds = kind if isinstance(kind, tuple) else (kind,)
        selected: dict[str, dt.DType] = {}
        for k in kinds:
            if k not in dt.KINDS:
                raise ValueError(f"dtypes(): unknown kind {k!r}; expected one of "
                                 f"{', '.join(dt.KINDS)}")
            selected.update((d.name, d) for d in dt.KINDS[k])
        return {d.name: d for d in dt.STANDARD_DTYPES if d.name in selected}


_INFO = Info()


def __array_namespace_info__() -> Info:
    return _INFO


def memory_stats(device: Any = None) -> dict[str, int]:
    """The caching allocator's statistics for `device` (default: the default device)."""
    device = as_device(device, "memory_stats")
    return device.backend.allocator(device).stats()


def empty_cache(device: Any = None) -> None:
    """Return the cached free blocks of `device` to the system."""
    device = as_device(device, "empty_cache")
    device.backend.allocator(device).empty_cache()


def set_memory_limit(nbytes: int | None, device: Any = None) -> None:
    """Keep the memory `device` (default: the default device) holds in live and cached blocks
    within `nbytes` bytes; None lifts the limit. A request past it frees the device's cache and
    retries once, then raises MemoryError naming the device, the request and the statistics."""
    device = as_device(device, "set_memory_limit")
    if nbytes is not None and (not isinstance(nbytes, int) or isinstance(nbytes, bool)):
        raise TypeError(f"set_memory_limit(): nbytes must be None or an int, got "
                        f"{type(nbytes).__name__}")
    if nbytes is not None and nbytes < 0:
        raise ValueError(f"set_memory_limit(): nbytes must be None or >= 0, got {nbytes}")
    device.backend.allocator(device).set_memory_limit(nbytes)
