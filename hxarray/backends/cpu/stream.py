"""CPU streams and events.

Array operations on the CPU run synchronously on the calling thread, in program order, on any
stream. A non-default CPU stream is additionally an in-order queue of host callables (`submit`)
run by a worker thread (the HAL's `HostStream`); events mark positions in that queue. Entering a
stream's context waits for its queued work, so no operation can observe results before they are
ready.
"""

from __future__ import annotations

from ...hal.device import Device
from ...hal.stream import HostEvent, HostStream, Stream


class CpuEvent(HostEvent):
    def __init__(self, device: Device | str = "cpu", *, enable_timing: bool = True) -> None:
        super().__init__(device, enable_timing=enable_timing)


class CpuStream(HostStream):
    """The default stream runs everything inline; others queue `submit`ted host work."""

    def __init__(self, device: Device | str = "cpu", *, default: bool = False) -> None:
        super().__init__(device, inline=default)
        self.is_default = default

    def __repr__(self) -> str:
        return f"CpuStream({self.device}, default={self.is_default})"

    def __enter__(self) -> Stream:
        self.synchronize()
        return super().__enter__()
