"""MemoryBuffer: one span of memory on one device, owned by whoever holds a reference to it.

Arrays and views hold the buffer; when the last of them dies, the buffer's deallocation hands the
block back to the allocator it came from, exactly once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .stream import current_stream

if TYPE_CHECKING:
    import numpy as np

    from .allocator import Allocator, Block
    from .device import Device

__all__ = ["MemoryBuffer"]


class MemoryBuffer:
    """A span of `nbytes` bytes on `device`, carved from `allocator`."""

    __slots__ = ("device", "nbytes", "block", "allocator", "__weakref__")

    def __init__(self, device: Device, nbytes: int, block: Block, allocator: Allocator) -> None:
        if getattr(self, "block", None) is not None:  # it goes back to its allocator exactly once
            raise TypeError("a MemoryBuffer is initialised once")
        if not isinstance(nbytes, int):
            raise TypeError(f"MemoryBuffer() argument 'nbytes' must be int, not "
                            f"{type(nbytes).__name__}")
        self.device = device
        self.nbytes = nbytes
        self.block = block
        self.allocator = allocator

    def __del__(self) -> None:
        allocator = self.allocator
        if allocator is not None:
            self.allocator = None  # type: ignore[assignment]  # handed back: exactly once
            allocator.free(self.block)

    @property
    def address(self) -> int:
        """The device address of the first byte."""
        return self.block.address

    def copy_to_host(self, out: np.ndarray, offset: int = 0) -> np.ndarray:
        """Copy `out.nbytes` bytes from byte `offset` on into the contiguous host array `out`,
        after the work queued on the device's current stream (waited for)."""
        if not (out.flags.c_contiguous and out.flags.writeable):
            raise ValueError("copy_to_host needs a writeable C-contiguous output array")
        self._check_span(offset, out.nbytes)
        stream = current_stream(self.device)
        self.allocator.copy_to_host(self.block, offset, out, stream)
        stream.synchronize()
        return out

    def copy_from_host(self, data: np.ndarray, offset: int = 0) -> None:
        """Copy the contiguous host array `data` into this buffer starting at byte `offset`, in
        order on the device's current stream (noted as a user of the block: it is not handed to
        another stream before the copy is done)."""
        self._check_span(offset, data.nbytes)
        stream = current_stream(self.device)
        self.allocator.record_stream(self.block, stream)
        self.allocator.copy_from_host(self.block, offset, data, stream)

    def _check_span(self, offset: int, nbytes: int) -> None:
        if offset < 0 or offset + nbytes > self.nbytes:
            raise IndexError(f"byte range [{offset}, {offset + nbytes}) is outside this "
                             f"{self.nbytes}-byte buffer")

    @property
    def __array_interface__(self) -> dict[str, Any]:
        """Host-visible buffers expose their bytes to numpy; the numpy array keeps this alive."""
        return self.allocator.array_interface(self.block, self.nbytes)

    def __repr__(self) -> str:
        return (f"MemoryBuffer(device={self.device!r}, nbytes={self.nbytes}, "
                f"address={self.address:#x})")
