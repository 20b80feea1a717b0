"""Streams (in-order work queues) and events (markers in them), after c10's Stream/Event.

`Stream(device)` and `Event(device)` build the device backend's own kind. A stream used as a
context manager becomes the current stream of its device for the calling thread or task.
"""

from __future__ import annotations

import contextvars
from abc import ABC, ABCMeta, abstractmethod
from typing import Any

from .device import Device, default_device

__all__ = ["Stream", "Event", "current_stream"]

# (device -> current stream, the enclosing value): one link per `with stream:`, per thread and task
_current: contextvars.ContextVar[tuple[dict[Device, Stream], Any]] = contextvars.ContextVar(
    "hxarray_streams", default=({}, None))


def current_stream(device: Device | str | None = None) -> Stream:
    """The stream work on `device` goes to now: the innermost `with stream:`, else the default."""
    device = default_device() if device is None else Device(device)
    stream = _current.get()[0].get(device)
    return stream if stream is not None else device.backend.default_stream(device)


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
        outer = _current.get()
        _current.set(({**outer[0], self.device: self}, outer))
        return self

    def __exit__(self, *exc: object) -> None:
        _current.set(_current.get()[1])


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
