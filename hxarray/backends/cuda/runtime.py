"""The CUDA device runtime over a driver: raw device memory, streams and events."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ...hal.allocator import Allocator, Block
from ...hal.device import Device
from ...hal.settings import CUDA_SYNC_CHECKS
from ...hal.stream import Event, Stream

if TYPE_CHECKING:
    from .driver import Driver


class CudaMemory(Allocator):
    """Raw device memory from the driver; the copies queue on the given stream, staged in
    page-locked host memory (`driver.host_alloc`), so that each is a DMA: data copied to the
    device is staged at once and the staging buffer held until the stream has passed the copy
    (which overlaps the caller's work); data copied to the host arrives in a staging buffer,
    then in `out` once the stream has passed the copy (the copy waits for it)."""

    def __init__(self, driver: Driver, device: Device, default: CudaStream) -> None:
        self.driver = driver
        self.device = device
        self._default = default
        self._staged: list[tuple[Any, np.ndarray]] = []  # (event after the copy, its buffer)
        self._lock = threading.Lock()

    def malloc(self, nbytes: int) -> Block:
        return Block(self.driver.malloc(self.device.index, max(nbytes, 1)), nbytes, None)

    def free(self, block: Block) -> None:
        self.driver.free(self.device.index, block.address)

    def copy_to_host(self, block: Block, offset: int, out: np.ndarray,
                     stream: Stream | None = None) -> None:
        queue = stream or self._default
        assert isinstance(queue, CudaStream)
        staging = self.driver.host_alloc(out.nbytes)
        try:
            self.driver.copy_device_to_host(staging, block.address + offset, out.nbytes,
                                            queue.handle)
            if stream is None:
                queue.synchronize()  # (raises the device's deferred errors)
            else:
                self.driver.stream_synchronize(queue.handle)
            np.copyto(out, staging.view(out.dtype).reshape(out.shape), casting="no")
        finally:
            self.driver.host_free(staging)

    def copy_from_host(self, block: Block, offset: int, data: np.ndarray,
                       stream: Stream | None = None) -> None:
        # The driver reads the staging buffer when the stream gets there; the caller may change
        # `data` at once.
        queue = stream or self._default
        assert isinstance(queue, CudaStream)
        self._release_staged()
        staging = self.driver.host_alloc(data.nbytes)
        np.copyto(staging.view(data.dtype).reshape(data.shape), data, casting="no")
        self.driver.copy_host_to_device(block.address + offset, staging, data.nbytes,
                                        queue.handle)
        event = self.driver.create_event(self.device.index, timing=False)
        self.driver.event_record(event, queue.handle)
        with self._lock:
            self._staged.append((event, staging))
        if stream is None:
            queue.synchronize()

    def _release_staged(self) -> None:
        """Give back the staging buffers of copies the device has done."""
        with self._lock:
            done = [entry for entry in self._staged if self.driver.event_query(entry[0])]
            self._staged = [entry for entry in self._staged if entry not in done]
        for event, staging in done:
            self.driver.destroy_event(event)
            self.driver.host_free(staging)


def sync_checks() -> bool:
    """Whether device-side errors are checked at once (`HXARRAY_CUDA_SYNC_CHECKS=1`: a host
    synchronisation per call) rather than at the next synchronising call (0, the default)."""
    return CUDA_SYNC_CHECKS.get()


class DeferredErrors:
    """Checks of errors kernels report on the device (an index out of range), run by the device's
    next synchronising call, as CUDA reports a device-side assertion; each returns the exception
    to raise or None. At most LIMIT wait: the one after them runs them all first."""

    LIMIT = 256

    def __init__(self) -> None:
        self._checks: list[Callable[[], BaseException | None]] = []
        self._lock = threading.Lock()

    def add(self, check: Callable[[], BaseException | None]) -> None:
        if len(self._checks) >= self.LIMIT:
            self.raise_first()
        with self._lock:
            self._checks.append(check)

    def raise_first(self) -> None:
        """Run every waiting check; raise the first error (in call order) any reports."""
        with self._lock:
            checks, self._checks = self._checks, []
        errors = [error for error in (check() for check in checks) if error is not None]
        if errors:
            raise errors[0]


class CudaStream(Stream):
    """A driver stream of one device (`handle`). Synchronising it raises the device's deferred
    errors (`errors`)."""

    def __init__(self, driver: Driver, device: Device, handle: Any = None,
                 errors: DeferredErrors | None = None) -> None:
        self.driver = driver
        self.device = device
        self.handle = driver.create_stream(device.index) if handle is None else handle
        self.errors = errors

    def __repr__(self) -> str:
        return f"CudaStream({self.device}, {self.handle!r})"

    def synchronize(self) -> None:
        self.driver.stream_synchronize(self.handle)
        if self.errors is not None:
            self.errors.raise_first()

    def query(self) -> bool:
        return self.driver.stream_query(self.handle)

    def record_event(self, event: Event | None = None) -> Event:
        event = CudaEvent(self.driver, self.device) if event is None else event
        if not isinstance(event, CudaEvent):
            raise TypeError(f"{self!r} records CUDA events, got {type(event).__name__}")
        self.driver.event_record(event.handle, self.handle)
        event.recorded = True
        return event

    def wait_event(self, event: Event) -> None:
        if not isinstance(event, CudaEvent):
            raise TypeError(f"{self!r} waits on CUDA events, got {type(event).__name__}")
        self.driver.stream_wait_event(self.handle, event.handle)


class CudaEvent(Event):
    """A driver event of one device."""

    def __init__(self, driver: Driver, device: Device, *, enable_timing: bool = True) -> None:
        self.driver = driver
        self.device = device
        self.handle = driver.create_event(device.index, timing=enable_timing)
        self.recorded = False

    def synchronize(self) -> None:
        if self.recorded:
            self.driver.event_synchronize(self.handle)

    def query(self) -> bool:
        return not self.recorded or self.driver.event_query(self.handle)

    def elapsed_time(self, end: Event) -> float:
        if not isinstance(end, CudaEvent):
            raise TypeError(f"elapsed_time needs another CUDA event, got {type(end).__name__}")
        if not (self.recorded and end.recorded):
            raise ValueError("elapsed_time needs both events to have been recorded")
        return self.driver.event_elapsed_ms(self.handle, end.handle)
