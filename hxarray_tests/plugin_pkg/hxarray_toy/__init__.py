"""A toy hxarray backend, discovered through the ``hxarray.backends`` entry point ``toy``.

It is the numpy CPU backend under another device type, with its own raw and caching allocators,
so the tests can tell its arrays and memory statistics apart from the CPU's: a plug-in for host
memory may build on the CPU backend, which `hxarray.plugin` exports for that.
"""

from __future__ import annotations

from typing import Any

from hxarray.plugin import Block, CachingAllocator, CpuAllocator, CpuBackend, Device, DeviceType

__all__ = ["ToyAllocator", "ToyBackend"]


class ToyAllocator(CpuAllocator):
    """Host memory for the toy device; counts the raw allocations and frees it serves."""

    def __init__(self, device: Device) -> None:
        super().__init__(device)
        self.mallocs = 0
        self.frees = 0

    def malloc(self, nbytes: int) -> Block:
        self.mallocs += 1
        return super().malloc(nbytes)

    def free(self, block: Block) -> None:
        self.frees += 1
        super().free(block)


class ToyBackend(CpuBackend):
    """Device type ``toy``: one device whose arrays live in memory from `ToyAllocator`."""

    device_type = DeviceType.register("toy")
    priority = -5  # a test device: never picked by itself over the CPU

    def __init__(self) -> None:
        super().__init__()
        self.raw_allocator = ToyAllocator(self.device)
        self._allocator = CachingAllocator(self.raw_allocator, max_cached_bytes=64 << 20)

    def capabilities(self, device: Device) -> dict[str, Any]:
        total = 1 << 30
        return {**super().capabilities(device), "name": "toy device", "vendor": "hxarray tests",
                "total_memory": total,
                "free_memory": total - self._allocator.stats()["reserved_bytes"]}

    def adopt(self, data: Any) -> None:
        """Toy memory stands for a separate device's: host arrays are always copied in."""
        return None
