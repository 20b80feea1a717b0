"""Streams (in-order work queues) and events (markers in them), after c10's Stream/Event.

`Stream(device)` and `Event(device)` build the device backend's own kind. A stream used as a
context manager becomes the current stream of its device, and that device the default device, for
the calling thread or task (as `torch.cuda.stream` does).

`HostStream` and `HostEvent` are a complete implementation for devices whose work is host
callables: a worker thread per stream runs them in order. An exception in queued work is sticky,
as on a GPU: later work is skipped (events still complete, so nothing waits forever) until
`synchronize()` raises it. At interpreter exit each worker finishes the work queued on it and
ends; work queued later (by finalizers during shutdown) runs at once on the calling thread, so
shutdown never waits on a worker that can no longer run.

A device that checks a call's work after the call returned (CUDA's index checks) raises
`DeferredIndexError` at a later synchronising call, naming the namespace function the call was
for (`calling`, set around it).

`set_worker_hook(hook)` is a testing hook: every stream worker (the `HostStream`'s, the CUDA
simulator's) calls `hook()` after each piece of queued work. The reliability suite sleeps a
random while in it, so that the streams of a device run in ever different interleavings.
"""

from __future__ import annotations

import atexit
import contextvars
import functools
import queue
import threading
import time
import weakref
from abc import ABC, ABCMeta, abstractmethod
from collections.abc import Callable
from typing import Any

from .device import Device, _scoped_device, default_device

__all__ = ["Stream", "Event", "HostStream", "HostEvent", "DeferredIndexError", "calling",
           "current_stream", "set_worker_hook", "run_worker_hook"]

# (device -> current stream, the enclosing value): one link per `with stream:`, per thread and task
_current: contextvars.ContextVar[tuple[dict[Device, Stream], Any]] = contextvars.ContextVar(
    "hxarray_streams", default=({}, None))


def current_stream(device: Device | str | None = None) -> Stream:
    """The stream work on `device` goes to now: the innermost `with stream:`, else the default."""
    if device.__class__ is not Device:
        device = default_device() if device is None else Device(device)
    stream = _current.get()[0].get(device)
    return stream if stream is not None else device.backend.default_stream(device)


class DeferredIndexError(IndexError):
    """An index out of range that a device found for an earlier call it ran asynchronously:
    raised by a later synchronising call, or by using that call's result. The message names the
    call and its device."""


# The namespace function running in this thread or task, which a device names in the errors it
# finds after the function returned (None: a backend's own call).
calling: contextvars.ContextVar[str | None] = contextvars.ContextVar("hxarray_calling",
                                                                     default=None)


class _BackendFactory(ABCMeta):
    """Calling `Stream` or `Event` itself builds the device backend's kind, through the backend's
    factory alone (a `__new__` returning it would have Python run `__init__` on it again)."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is Stream or cls is Event:
            return cls._create(*args, **kwargs)
        return super().__call__(*args, **kwargs)


class Stream(ABC, metaclass=_BackendFactory):
    """An in-order queue of work on one device."""

    device: Device

    @staticmethod
    def _create(device: Device | str | None = None, **options: Any) -> Stream:
        device = default_device() if device is None else Device(device)
        return device.backend.create_stream(device, **options)

    @abstractmethod
    def synchronize(self) -> None:
        """Block until all work queued so far has finished."""

    @abstractmethod
    def query(self) -> bool:
        """True if all work queued so far has finished."""

    @abstractmethod
    def record_event(self, event: Event | None = None) -> Event:
        """Queue `event` (or a new one) to complete when the work queued before it completes."""

    @abstractmethod
    def wait_event(self, event: Event) -> None:
        """Make work queued after this call wait until `event` has completed."""

    def wait_stream(self, other: Stream) -> None:
        """Make work queued after this call wait for the work queued on `other` so far."""
        self.wait_event(other.record_event())

    def wait(self, event: Event) -> None:
        """Alias of `wait_event`."""
        self.wait_event(event)

    def __enter__(self) -> Stream:
        """Make this the current stream of its device, and its device the default device, for
        the calling thread or task until the block ends."""
        outer = _current.get()
        _current.set(({**outer[0], self.device: self}, (outer, _scoped_device.set(self.device))))
        return self

    def __exit__(self, *exc: object) -> None:
        outer, token = _current.get()[1]
        _scoped_device.reset(token)
        _current.set(outer)


class Event(ABC, metaclass=_BackendFactory):
    """A marker in a stream: it completes when the work queued before it has completed."""

    device: Device

    @staticmethod
    def _create(device: Device | str | None = None, **options: Any) -> Event:
        device = default_device() if device is None else Device(device)
        return device.backend.create_event(device, **options)

    def record(self, stream: Stream | None = None) -> None:
        """Record this event on `stream` (default: the device's current stream)."""
        (stream or current_stream(self.device)).record_event(self)

    def wait(self, stream: Stream | None = None) -> None:
        """Make `stream` (default: the current stream) wait for this event."""
        (stream or current_stream(self.device)).wait_event(self)

    @abstractmethod
    def synchronize(self) -> None:
        """Block until the event has completed."""

    @abstractmethod
    def query(self) -> bool:
        """True if the event has completed (an event never recorded counts as completed)."""

    @abstractmethod
    def elapsed_time(self, end: Event) -> float:
        """Milliseconds between this event and `end`, both recorded and completed."""


class _Recording:
    """One recording of a `HostEvent`: completed once its stream reaches it, with the time it did
    and the error of the work queued before it."""

    __slots__ = ("done", "time", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.time: float | None = None
        self.error: BaseException | None = None

    def fire(self, errors: list[BaseException]) -> None:
        self.time = time.perf_counter()
        self.error = errors[0] if errors else None
        self.done.set()


_UNRECORDED = _Recording()
_UNRECORDED.done.set()  # an unrecorded event counts as completed


class HostEvent(Event):
    """An event of a `HostStream`: completes when the work queued before it has run, and
    records the time it did. Recorded again, it stands for its latest recording alone (as
    CUDA's events do): an earlier one reached later no longer completes it."""

    def __init__(self, device: Device | str, *, enable_timing: bool = True) -> None:
        self.device = Device(device)
        self.enable_timing = enable_timing
        self._recording = _UNRECORDED

    @property
    def error(self) -> BaseException | None:
        """The exception of work queued before this event on its stream, once completed (the
        stream's `synchronize()` still raises it; this lets a waiter see it without that)."""
        return self._recording.error

    def _arm(self) -> _Recording:
        """A new recording, which the event stands for from now on."""
        self._recording = recording = _Recording()
        return recording

    def synchronize(self) -> None:
        self._recording.done.wait()

    def query(self) -> bool:
        return self._recording.done.is_set()

    def elapsed_time(self, end: Event) -> float:
        if not isinstance(end, HostEvent):
            raise TypeError(f"elapsed_time needs another event of {self.device}'s kind, got "
                            f"{type(end).__name__}")
        for event in (self, end):
            if not event.enable_timing:
                raise ValueError("elapsed_time needs events created with enable_timing=True")
            if event._recording is _UNRECORDED:
                raise ValueError("elapsed_time needs both events to have been recorded")
            if not event.query():
                raise ValueError("elapsed_time needs both events to have completed; "
                                 "call synchronize() first")
        start, stop = self._recording.time, end._recording.time
        assert start is not None and stop is not None  # completed, so dated
        return (stop - start) * 1000.0


_worker_hook: Callable[[], object] | None = None


def set_worker_hook(hook: Callable[[], object] | None) -> None:
    """Have every stream worker thread call `hook()` after each piece of queued work it runs
    (None: no hook, the default). For tests that need streams to interleave in many ways; the
    hook runs on the workers, so it must be thread-safe. An exception it raises is reported as
    the work's."""
    global _worker_hook
    if hook is not None and not callable(hook):
        raise TypeError(f"the worker hook must be callable or None, got {type(hook).__name__}")
    _worker_hook = hook


def run_worker_hook() -> None:
    """Called by a stream worker after each piece of work: runs the hook, if one is set."""
    hook = _worker_hook
    if hook is not None:
        hook()


# A queued item: the callable, and whether it runs even after earlier work failed (event markers).
_Item = tuple[Callable[[], Any], bool]


def _run(item: _Item, errors: list[BaseException], worker: bool) -> None:
    """Run a queued item unless earlier work failed (markers always run); keep its error."""
    fn, marker = item
    try:
        if marker or not errors:
            fn()
        if worker:
            run_worker_hook()
    except BaseException as exc:  # reported by the next synchronize()
        errors.append(exc)


def _work(q: queue.SimpleQueue[_Item | None], errors: list[BaseException], done: list[int],
          finished: threading.Condition) -> None:
    """A stream's worker thread: run items in order until the stream is closed (`None`),
    counting them in `done[0]` and telling `finished`."""
    while True:
        item = q.get()
        if item is None:
            return
        _run(item, errors, worker=True)
        with finished:
            done[0] += 1
            finished.notify_all()


_exiting = False
_started: weakref.WeakSet[HostStream] = weakref.WeakSet()  # streams with a worker thread


@atexit.register
def _finish_at_exit() -> None:
    """Let every worker finish its queued work and end while threads can still run; what is
    queued later runs on the caller's thread."""
    global _exiting
    _exiting = True
    for stream in list(_started):
        stream._close(wait=True)


class HostStream(Stream):
    """An in-order queue of host callables run by a worker thread of its own (started on first
    use, ended when the stream is collected); with `inline`, callables run at once on the
    calling thread instead.

    Queuing is reentrant: the garbage collector may run a finalizer that queues work here (a
    buffer's, whose stream-ordered allocator records an event) at any allocation, also while
    this thread is inside `submit` or the worker inside its bookkeeping."""

    def __init__(self, device: Device | str, *, inline: bool = False) -> None:
        self.device = Device(device)
        self.inline = inline
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()  # (reentrant put)
        self._thread: threading.Thread | None = None
        self._running = False  # whether the worker was started
        self._closed = False
        self._lock = threading.RLock()
        self._errors: list[BaseException] = []  # shared with the worker, which must not hold self
        self._queued = 0  # items queued for the worker so far
        self._done = [0]  # items the worker has run (a list: the worker must not hold self)
        self._finished = threading.Condition()  # told when the worker has run one more

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.device})"

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Queue `fn(*args)` after all work queued so far."""
        self._put(functools.partial(fn, *args), marker=False)

    def _put(self, fn: Callable[[], Any], marker: bool) -> None:
        if self.inline:
            fn()
            return
        with self._lock:
            here = self._closed or _exiting
            if not here:
                if not self._running:
                    self._running = True  # first: what a finalizer queues meanwhile waits for it
                    self._thread = threading.Thread(
                        target=_work, args=(self._queue, self._errors, self._done, self._finished),
                        daemon=True, name=f"hxarray-{self.device}-stream")
                    self._thread.start()
                    _started.add(self)
                    # the worker ends with the stream (at exit, `_finish_at_exit` ends it)
                    weakref.finalize(self, self._queue.put, None).atexit = False
                self._queued += 1
                self._queue.put((fn, marker))
        if here:  # closed: the worker has run everything queued before
            _run((fn, marker), self._errors, worker=False)

    def _close(self, wait: bool) -> None:
        """End the worker after the work queued so far (waiting for it with `wait`)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._running:
                self._queue.put(None)
        if wait and self._thread is not None:
            self._thread.join()

    def synchronize(self) -> None:
        queued = self._queued
        with self._finished:
            self._finished.wait_for(lambda: self._done[0] >= queued)
        if self._errors:
            error = self._errors[0]
            self._errors.clear()
            raise RuntimeError(f"work queued on {self!r} failed") from error

    def query(self) -> bool:
        return self._done[0] == self._queued

    def record_event(self, event: Event | None = None) -> Event:
        event = HostEvent(self.device) if event is None else event
        if not isinstance(event, HostEvent):
            raise TypeError(f"{self!r} records events of its own kind, got "
                            f"{type(event).__name__}")
        self._put(functools.partial(event._arm().fire, self._errors), marker=True)
        return event

    def wait_event(self, event: Event) -> None:
        if not isinstance(event, HostEvent):
            raise TypeError(f"{self!r} waits on events of its own kind, got "
                            f"{type(event).__name__}")
        self._put(event._recording.done.wait, marker=True)  # the recording made so far
