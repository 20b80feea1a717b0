"""The raw CPU allocator: 64-byte-aligned host memory carved from numpy byte arrays. CPU work is
synchronous, so copies run at once whatever stream they are given."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...hal.allocator import Allocator, Block
from ...hal.device import Device

ALIGNMENT = 64


class CpuAllocator(Allocator):
    """Allocates from the process heap through numpy; frees when the last reference goes."""

    def __init__(self, device: Device) -> None:
        self.device = device

    def malloc(self, nbytes: int) -> Block:
        try:
            raw = np.empty(nbytes + ALIGNMENT, np.uint8)
        except (MemoryError, ValueError) as exc:
            raise MemoryError(f"cannot allocate {nbytes} bytes of host memory: {exc}") from None
        address = raw.__array_interface__["data"][0]
        pad = -address % ALIGNMENT
        return Block(address + pad, nbytes, raw[pad:pad + nbytes])

    def free(self, block: Block) -> None:
        block.handle = None
        block.cache = None

    def copy_to_host(self, block: Block, offset: int, out: np.ndarray, stream: Any = None) -> None:
        out.reshape(-1).view(np.uint8)[...] = block.handle[offset:offset + out.nbytes]

    def copy_from_host(self, block: Block, offset: int, data: np.ndarray,
                       stream: Any = None) -> None:
        block.handle[offset:offset + data.nbytes] = np.ascontiguousarray(data).reshape(-1).view(
            np.uint8)

    def array_interface(self, block: Block, nbytes: int) -> dict[str, Any]:
        return {"data": (block.address, False), "shape": (nbytes,), "typestr": "|u1",
                "version": 3}
