"""CPU streams and events.

Array operations on the CPU run synchronously on the calling thread, in program order, on any
stream. A non-default CPU stream is additionally an in-order queue of host callables (`submit`)
run by a worker thread; events mark positions in that queue. Entering a stream's context waits for
its queued work, so no operation can observe results before they are ready.

An exception in queued work is sticky, as on a GPU: later work is skipped (events still complete,
so nothing waits forever) until `synchronize()` raises it.
"""

from __future__ import annotations

import functools
import queue
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from ...hal.device import Device
from ...hal.stream import Event, Stream


class CpuEvent(Event):
    """Completes when the stream work queued before it has run; records the time it did."""

    def __init__(self, device: Device | None = None, *, enable_timing: bool = True) -> None:
        self.device = Device(device or "cpu")
        self.enable_timing = enable_timing
        self._done = threading.Event()
        self._done.set()  # an unrecorded event counts as completed
        self._recorded = False
        self._time: float | None = None

    def _arm(self) -> None:
        self._done.clear()
        self._recorded = True
        self._time = None

    def _fire(self) -> None:
        self._time = time.perf_counter()
        self._done.set()

    def synchronize(self) -> None:
        self._done.wait()

    def query(self) -> bool:
        return self._done.is_set()

    def elapsed_time(self, end: Event) -> float:
        if not isinstance(end, CpuEvent):
            raise TypeError(f"elapsed_time needs another CPU event, got {type(end).__name__}")
        for event in (self, end):
            if not event.enable_timing:
                raise ValueError("elapsed_time needs events created with enable_timing=True")
            if not event._recorded:
                raise ValueError("elapsed_time needs both events to have been recorded")
            if not event.query():
                raise ValueError("elapsed_time needs both events to have completed; "
                                 "call synchronize() first")
        return (end._time - self._time) * 1000.0


# A queued item: the callable, and whether it runs even after earlier work failed (event markers).
_Item = tuple[Callable[[], Any], bool]


def _work(q: queue.Queue[_Item | None], errors: list[BaseException]) -> None:
    """A stream's worker thread: run items in order until the stream's finalizer sends `None`."""
    while True:
        item = q.get()
        try:
            if item is None:
                return
            fn, marker = item
            if marker or not errors:
                fn()
        except BaseException as exc:  # reported by the next synchronize()
            errors.append(exc)
        finally:
            q.task_done()


class CpuStream(Stream):
    """An in-order queue of host work; the default stream runs everything inline."""

    def __init__(self, device: Device | None = None, *, default: bool = False) -> None:
        self.device = Device(device or "cpu")
        self.is_default = default
        self._queue: queue.Queue[_Item | None] | None = None
        self._lock = threading.Lock()
        self._errors: list[BaseException] = []  # shared with the worker, which must not hold self

    def __repr__(self) -> str:
        return f"CpuStream({self.device}, default={self.is_default})"

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Queue `fn(*args)` after all work queued so far."""
        self._put(functools.partial(fn, *args), marker=False)

    def _put(self, fn: Callable[[], Any], marker: bool) -> None:
        if self.is_default:
            fn()
            return
        with self._lock:
            if self._queue is None:
                self._queue = queue.Queue()
                threading.Thread(target=_work, args=(self._queue, self._errors), daemon=True,
                                 name=f"hxarray-{self.device}-stream").start()
                weakref.finalize(self, self._queue.put, None)  # the worker ends with the stream
        self._queue.put((fn, marker))

    def synchronize(self) -> None:
        if self._queue is not None:
            self._queue.join()
        if self._errors:
            error = self._errors[0]
            self._errors.clear()
            raise RuntimeError(f"work queued on {self!r} failed") from error

    def query(self) -> bool:
        return self._queue is None or self._queue.unfinished_tasks == 0

    def record_event(self, event: Event | None = None) -> Event:
        event = CpuEvent(self.device) if event is None else event
        if not isinstance(event, CpuEvent):
            raise TypeError(f"a CPU stream records CPU events, got {type(event).__name__}")
        event._arm()
        self._put(event._fire, marker=True)
        return event

    def wait_event(self, event: Event) -> None:
        if not isinstance(event, CpuEvent):
            raise TypeError(f"a CPU stream waits on CPU events, got {type(event).__name__}")
        self._put(event.synchronize, marker=True)

    def __enter__(self) -> Stream:
        self.synchronize()
        return super().__enter__()
