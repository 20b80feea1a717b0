"""Choosing a device: by priority (`best_device`), by requirements (`select_device`), and the
cross-device summary (`devices_report`).

Ranking, among the usable devices that meet every requirement:

1. devices named by `prefer` (device types or devices, in the order given) before the others;
2. higher backend `priority` (CUDA 10, CPU 0, the reference backend -10);
3. more free memory;
4. higher estimated peak FLOP/s for the dtype (float64 unless `dtype` names another);
5. device type name and index, so that the order is stable.

A backend that fails to load, or reports itself unavailable, is skipped with its reason: the
reasons appear in `devices_report()["unavailable"]` and in the `DeviceUnavailableError` of a
selection that no device meets.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any

from .._dtypes import ALL_DTYPES, BY_NAME, numpy_only
from ..hal.device import Device, DeviceType, DeviceUnavailableError, default_device
from .registry import BackendRegistry
from .registry import registry as _installed

if TYPE_CHECKING:
    from .._dtypes import DType

__all__ = ["best_device", "devices_report", "select_device"]

GB = 10**9  # select_device's min_memory_gb counts SI gigabytes


def _preference(prefer: Any) -> list[Device | DeviceType]:
    """`prefer` (None, a device type or device, by name or value, or a sequence of them) as a
    list of devices and device types."""
    if prefer is None:
        return []
    items = [prefer] if isinstance(prefer, (str, Device, DeviceType)) else list(prefer)
    ranked: list[Device | DeviceType] = []
    for item in items:
        if isinstance(item, (Device, DeviceType)):
            ranked.append(item)
        elif isinstance(item, str) and ":" not in item:
            ranked.append(DeviceType(item))
        elif isinstance(item, str):
            ranked.append(Device(item))
        else:
            raise TypeError(f"prefer takes device types or devices (or their names), got "
                            f"{type(item).__name__}")
    return ranked


def _checked(registry: Any, **requirements: Any) -> BackendRegistry:
    """`registry` (None: the installed backends'), after TypeError for a `registry` that is not
    a BackendRegistry, a `vendor` that is not a str, or a minimum that is not a real number
    (None: no requirement)."""
    if registry is None:
        registry = _installed
    if not isinstance(registry, BackendRegistry):
        raise TypeError(f"registry must be a BackendRegistry, got {type(registry).__name__}")
    vendor = requirements.pop("vendor", None)
    if vendor is not None and not isinstance(vendor, str):
        raise TypeError(f"vendor must be a str or None, got {type(vendor).__name__}")
    for name, value in requirements.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
            raise TypeError(f"{name} must be a real number or None, got {type(value).__name__}")
    return registry


def _dtype_name(dtype: DType | str | None) -> str:
    """The name of `dtype` (an hxarray dtype or its name), after ValueError for a name that is
    none, and strict mode's TypeError for numpy mode's dtypes (float16)."""
    if dtype is None:
        return "float64"
    name = getattr(dtype, "name", dtype)
    found = BY_NAME.get(name) if isinstance(name, str) else None
    if found is None:
        raise ValueError(f"unknown dtype {dtype!r}: select_device() takes an hxarray dtype or "
                         f"its name ({', '.join(d.name for d in ALL_DTYPES)})")
    return numpy_only(found, "select_device").name


def _rejection(caps: dict[str, Any], *, min_memory_gb: float | None, min_tflops: float | None,
               vendor: str | None, dtype: str) -> str | None:
    """Why a device with capabilities `caps` does not meet the requirements, or None."""
    reasons = []
    if min_memory_gb is not None and caps["free_memory"] < min_memory_gb * GB:
        reasons.append(f"{caps['free_memory'] / GB:.3g} GB free, {min_memory_gb:g} GB required")
    supported = caps.get("dtypes")
    if supported is not None and dtype not in supported:
        reasons.append(f"no {dtype} support")
    if min_tflops is not None:
        peak = caps.get("peak_flops", {}).get(dtype)
        if peak is None:
            reasons.append(f"no {dtype} FLOP/s estimate, {min_tflops:g} TFLOP/s required")
        elif peak < min_tflops * 1e12:
            reasons.append(f"{peak / 1e12:.3g} {dtype} TFLOP/s, {min_tflops:g} required")
    if vendor is not None and str(caps.get("vendor", "")).lower() != vendor.lower():
        reasons.append(f"vendor is {caps.get('vendor')!r}, not {vendor!r}")
    return "; ".join(reasons) or None


def _capabilities(registry: BackendRegistry, device: Device) -> dict[str, Any]:
    """`device.capabilities()` through `registry`'s backend for it (and its priority)."""
    from .performance import estimate

    backend = registry.get(device.type)
    return {**backend.capabilities(device), **estimate(device, backend),
            "priority": backend.priority}


def _rank(device: Device, caps: dict[str, Any], preferred: list[Device | DeviceType],
          dtype: str) -> tuple[Any, ...]:
    first = next((i for i, p in enumerate(preferred) if p is device or p is device.type),
                 len(preferred))
    return (first, -caps["priority"], -caps["free_memory"],
            -caps.get("peak_flops", {}).get(dtype, 0.0), device.type.name, device.index)


def select_device(*, min_memory_gb: float | None = None, min_tflops: float | None = None,
                  prefer: Any = None, vendor: str | None = None,
                  dtype: DType | str | None = None,
                  registry: BackendRegistry | None = None) -> Device:
    """The best usable device that meets every requirement (ranked as the module docstring
    says): at least `min_memory_gb` GB (10^9 bytes) free, at least `min_tflops` estimated peak
    TFLOP/s in `dtype` (default float64), made by `vendor` (the capabilities' vendor, any case),
    supporting `dtype`; `prefer` (device types or devices) ranks devices first without
    requiring them. DeviceUnavailableError lists every device and why it was rejected, and every
    device type that cannot be used here."""
    registry = _checked(registry, min_memory_gb=min_memory_gb, min_tflops=min_tflops,
                        vendor=vendor)
    dtype_name = _dtype_name(dtype)
    preferred = _preference(prefer)
    candidates, rejected = [], []
    for device in registry.devices():
        caps = _capabilities(registry, device)
        reason = _rejection(caps, min_memory_gb=min_memory_gb, min_tflops=min_tflops,
                            vendor=vendor, dtype=dtype_name)
        if reason is None:
            candidates.append((_rank(device, caps, preferred, dtype_name), device))
        else:
            rejected.append(f"{device}: {reason}")
    if candidates:
        return min(candidates, key=lambda pair: pair[0])[1]
    rejected += [f"{name} (device type): {reason}"
                 for name, reason in registry.unavailable().items()]
    asked = ", ".join(f"{k}={v!r}" for k, v in (("min_memory_gb", min_memory_gb),
                                                 ("min_tflops", min_tflops), ("vendor", vendor),
                                                 ("dtype", dtype)) if v is not None)
    raise DeviceUnavailableError(f"no device meets the requirements ({asked or 'none'}):\n  "
                                 + "\n  ".join(rejected or ["no devices found"]))


def best_device(registry: BackendRegistry | None = None) -> Device:
    """The highest-priority usable device (ties: more free memory, then more compute); the CPU
    when nothing else can be used."""
    return select_device(registry=registry)


def _entry(registry: BackendRegistry, device: Device) -> dict[str, Any]:
    caps = _capabilities(registry, device)
    return {
        "device": str(device), "type": device.type.name, "index": device.index,
        "name": caps["name"], "vendor": caps["vendor"], "priority": caps["priority"],
        "total_memory": caps["total_memory"], "free_memory": caps["free_memory"],
        "compute_units": caps["compute_units"], "peak_flops": dict(caps.get("peak_flops", {})),
        "memory_bandwidth": caps.get("memory_bandwidth"),
        "performance_source": caps.get("performance_source"),
        "simulated": bool(caps.get("simulated", False)),
    }


def devices_report(registry: BackendRegistry | None = None) -> dict[str, Any]:
    """Every usable device, best first (name, vendor, priority, total and free memory, compute
    units, peak FLOP/s per dtype, memory bandwidth), grouped by type and by vendor, the default
    and the best device, and every device type that cannot be used here with the reason.
    JSON-serialisable."""
    registry = _checked(registry)
    entries = [_entry(registry, device) for device in registry.devices()]
    entries.sort(key=lambda e: (-e["priority"], -e["free_memory"], e["type"], e["index"]))
    by_type: dict[str, list[str]] = {}
    by_vendor: dict[str, list[str]] = {}
    for entry in entries:
        by_type.setdefault(entry["type"], []).append(entry["device"])
        by_vendor.setdefault(entry["vendor"], []).append(entry["device"])
    try:
        best: str | None = str(best_device(registry))
    except DeviceUnavailableError:
        best = None
    return {"default_device": str(default_device()), "best_device": best, "devices": entries,
            "by_type": by_type, "by_vendor": by_vendor, "unavailable": registry.unavailable()}

