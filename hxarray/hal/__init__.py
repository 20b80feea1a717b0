"""The hardware abstraction layer: devices, memory, streams, backends, the kernel cache and the
hooks that observe them."""

from . import hooks
from .allocator import Allocator, Block, CachingAllocator, StreamOrderedAllocator, size_class
from .backend import Backend
from .buffer import MemoryBuffer
from .device import Device, DeviceType, DeviceUnavailableError, default_device, device_scope
from .kernel_cache import KernelCache
from .registry import ENTRY_POINT_GROUP, BackendRegistry, registry
from .stream import Event, HostEvent, HostStream, Stream, current_stream

__all__ = [
    "Allocator", "Backend", "BackendRegistry", "Block", "CachingAllocator", "Device", "DeviceType",
    "DeviceUnavailableError", "ENTRY_POINT_GROUP", "Event", "HostEvent", "HostStream",
    "KernelCache", "MemoryBuffer", "Stream", "hooks",
    "StreamOrderedAllocator", "current_stream", "default_device", "device_scope", "registry",
    "size_class",
]
