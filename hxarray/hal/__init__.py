"""The hardware abstraction layer: devices, memory, streams, the kernel cache and the hooks that
observe them. It imports nothing from hxarray above it; the backends that run its devices live in
`hxarray.backends` (docs/hal.md, "Layers")."""

from . import sources  # noqa: F401  (first: it decides which modules load compiled)

from . import hooks  # isort: skip
from .allocator import (
    Allocator,
    Block,
    CachingAllocator,
    MemoryBuffer,
    StreamOrderedAllocator,
    size_class,
)
from .device import Device, DeviceType, DeviceUnavailableError, default_device, device_scope
from .kernel_cache import KernelCache
from .stream import Event, HostEvent, HostStream, Stream, current_stream

__all__ = [
    "Allocator", "Block", "CachingAllocator", "Device", "DeviceType", "DeviceUnavailableError",
    "Event", "HostEvent", "HostStream", "KernelCache", "MemoryBuffer", "Stream", "hooks",
    "StreamOrderedAllocator", "current_stream", "default_device", "device_scope", "size_class",
]
