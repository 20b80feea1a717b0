"""The CUDA device runtime over a driver: raw device memory, streams and events."""

from __future__ import annotations

import atexit
import collections
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...hal.allocator import Allocator, Block
from ...hal.device import Device
from ...hal.settings import CUDA_SYNC_CHECKS
from ...hal.stream import DeferredIndexError, Event, Stream

if TYPE_CHECKING:
    from .driver import Driver


class CudaMemory(Allocator):
    """Raw device memory from the driver; the copies queue on the given stream, staged in
    page-locked host memory (`driver.host_alloc`), so that each is a DMA: data copied to the
    device is staged at once and the staging buffer held until the stream has passed the copy
    (which overlaps the caller's work); data copied to the host arrives in a staging buffer,
    then in `out` once the stream has passed the copy (the copy waits for it)."""

    managed = False  # (ManagedMemory: managed allocations)

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


class ManagedMemory(CudaMemory):
    """Managed (unified) memory from the driver (`malloc_managed`): the device's kernels and
    the host address it alike, so the host reads it in place (`array_interface`) once the
    device's work on it is done; copies go through the same streams as device memory's."""

    managed = True

    def malloc(self, nbytes: int) -> Block:
        return Block(self.driver.malloc_managed(self.device.index, max(nbytes, 1)), nbytes, None)

    def array_interface(self, block: Block, nbytes: int) -> dict[str, Any]:
        return {"data": (block.address, False), "shape": (nbytes,), "typestr": "|u1",
                "version": 3}


class DeferredCheck:
    """One call's check of an error its kernels report on the device: `run()` gives numpy's
    message, or None. `label` names the call; `result` is a weak reference to the buffer the
    call wrote (a gather's), which stays marked if the check fails."""

    __slots__ = ("label", "device", "run", "result", "message")

    def __init__(self, label: str, device: Device, run: Callable[[], str | None],
                 result: weakref.ref[Any] | None) -> None:
        self.label = label
        self.device = device
        self.run = run
        self.result = result
        self.message: str | None = None

    def error(self, how: str) -> DeferredIndexError:
        return DeferredIndexError(f"{how}: {self.label} on {self.device}: {self.message}")


class DeferredErrors:
    """The checks of errors a device's kernels report (an index out of range), run by the
    device's next synchronising call, as CUDA reports a device-side assertion. The errors found
    are kept in call order, and each synchronising call raises the earliest one not yet raised,
    naming its own call: every error is raised once, and the device stays in error until each
    has been. A failed call's result stays marked (`failed`): using or reading it raises that
    call's error every time. At most LIMIT checks wait: the call after them runs them before its
    own work (`make_room`). Errors never raised are written to stderr at exit."""

    LIMIT = 256

    def __init__(self, device: Device) -> None:
        self.device = device
        self._waiting: list[DeferredCheck] = []  # in call order
        self._found: collections.deque[DeferredCheck] = collections.deque()  # not yet raised
        self.failed: dict[weakref.ref[Any], DeferredCheck] = {}  # result buffer -> its check
        self._lock = threading.Lock()
        # Held while checks run, so that errors found by several threads stay in call order;
        # `_busy` says so without taking it.
        self._running = threading.RLock()
        self._busy = False
        self._reports_at_exit = False

    def add(self, check: DeferredCheck) -> None:
        with self._lock:
            self._waiting.append(check)
            if not self._reports_at_exit:
                # Registered after the driver's streams and their finalizers, so that it runs
                # before them at exit (last in, first out) while the checks can still run.
                self._reports_at_exit = True
                atexit.register(self.report_at_exit)

    def make_room(self) -> None:
        """Before a call adds a check: with LIMIT waiting, `raise_next` (a synchronisation)."""
        if len(self._waiting) >= self.LIMIT:
            self.raise_next()

    def raise_next(self) -> None:
        """Run the waiting checks (or wait for the thread running them); raise the earliest
        error found and not yet raised."""
        if self._waiting or self._busy:
            self._run()
        if self._found:
            with self._lock:
                check = self._found.popleft() if self._found else None
            if check is not None:
                raise check.error("an earlier call failed")

    def _run(self) -> None:
        with self._running:
            with self._lock:
                checks, self._waiting = self._waiting, []
                self._busy = True  # (before the list looks empty to another thread)
            try:
                for at, check in enumerate(checks):
                    try:
                        message = check.run()
                    except BaseException:  # (a driver error) the checks not run wait again
                        with self._lock:
                            self._waiting[:0] = checks[at:]
                        raise
                    if message is not None:
                        check.message = message
                        buffer = None if check.result is None else check.result()
                        with self._lock:
                            self._found.append(check)
                            if buffer is not None:
                                self.failed[weakref.ref(buffer, self._forget)] = check
            finally:
                self._busy = False

    def _forget(self, result: weakref.ref[Any]) -> None:
        self.failed.pop(result, None)

    def refuse_failed(self, arrays: Sequence[Any]) -> None:
        """Raise the error of the failed call that made any of `arrays` (then counted as
        raised)."""
        for a in arrays:
            check = self.failed.get(weakref.ref(a._buffer))
            if check is not None:
                with self._lock:
                    if check in self._found:
                        self._found.remove(check)
                raise check.error("the array is the result of a failed call")

    def report_at_exit(self) -> None:
        """Write each error never raised to stderr, a line each; never raises (a thread that
        never lets the checks go is waited for at most a few seconds)."""
        try:
            lines = []
            if self._running.acquire(timeout=5.0):
                try:
                    if self._waiting:
                        self._run()
                except Exception as exc:  # noqa: BLE001 - reported, not raised, at exit
                    lines.append(f"the device's errors could not be checked: {exc}")
                finally:
                    self._running.release()
            with self._lock:
                found, self._found = list(self._found), collections.deque()
                unchecked = len(self._waiting)
            lines += [str(check.error("an error no synchronising call raised"))
                      for check in found]
            if unchecked:
                lines.append(f"{unchecked} calls whose errors were never checked")
            if lines and sys.stderr is not None:
                sys.stderr.write("".join(f"hxarray: at exit, {self.device}: {line}\n"
                                         for line in lines))
        except Exception:  # noqa: BLE001, S110 - nothing may fail at interpreter exit
            pass


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
            self.errors.raise_next()

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
