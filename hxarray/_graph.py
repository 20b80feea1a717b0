"""`hxarray.graph`: a function captured once per signature and replayed without the namespace.

The first call with a new signature runs the function on copies of its array arguments in
memory the graph owns, with the device's backend recording every primitive call
(backends/recording.py); the backend prepares each recorded call once (`Backend.prepare`). Later
calls copy the arguments into the graph's input arrays, run the prepared calls in order and
return copies of the results: no argument checks, promotion, dispatch or allocation between
them. See docs/graph.md.
"""

from __future__ import annotations

import builtins
import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ._array import Array
from ._dtypes import uint8
from ._modes import is_strict
from .backends.fusion import scalar_key
from .backends.recording import CaptureError, Recorder, capturing, share_memory
from .hal.device import Device, default_device
from .hal.hooks import observe, observers
from .hal.scope import memory_scope

__all__ = ["CaptureError", "Graph", "graph"]

_MAX_SIGNATURES = 64  # captured signatures kept per function (each holds its memory)


class _Captured:
    """One captured signature: the graph's input arrays, the prepared calls, the results."""

    def __init__(self, backend: Any, device: Device, inputs: list[Array], calls: list[Any],
                 results: Any) -> None:
        self.backend = backend
        self.device = device
        self.inputs = inputs  # (the calls keep every array the replay reads alive)
        self.calls = calls
        self.run = backend.prepare_all(calls, inputs)
        self.results = results
        self.lock = threading.Lock()  # one replay at a time: they share the graph's arrays

    def replay(self, arrays: Sequence[Array]) -> Any:
        with self.lock:
            self.run(arrays)
            return _copies(self.backend, self.results)


def _copies(backend: Any, results: Any) -> Any:
    """`results` (an array, or nested tuples and lists of arrays, scalars and None) with each
    array copied: what a call returns never changes when the graph runs again."""
    if results.__class__ is Array:
        return backend.copy(results)
    if isinstance(results, (tuple, list)):
        return type(results)(_copies(backend, r) for r in results)
    return results


def _arrays_of(results: Any, name: str) -> list[Array]:
    """The arrays of a function's results; TypeError for what a graph cannot return."""
    if results.__class__ is Array:
        return [results]
    if isinstance(results, (tuple, list)):
        return [a for r in results for a in _arrays_of(r, name)]
    if results is None or isinstance(results, (builtins.bool, int, float, complex)):
        return []
    raise TypeError(f"{name}: a graphed function returns arrays, Python scalars, None and "
                    f"tuples or lists of them, got {type(results).__name__}")


class Graph:
    """A graphed function (`graph(f)`): call it as the function."""

    def __init__(self, function: Callable[..., Any]) -> None:
        if not callable(function):
            raise TypeError(f"graph() takes a function, got {type(function).__name__}")
        self.function = function
        self.name = f"graph({getattr(function, '__qualname__', function)})"
        self._captured: dict[Any, _Captured] = {}
        self._lock = threading.Lock()
        functools.update_wrapper(self, function)

    def __repr__(self) -> str:
        return f"<hxarray.{self.name}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(f"{self.name} takes positional arguments only, got "
                            f"{', '.join(kwargs)}")
        if capturing and any(r.capturing_thread == threading.get_ident() for r in capturing):
            return self.function(*args)  # inside another graph's capture: a part of it
        # The signature: the mode, and per argument its dtype, shape and device, or a
        # Python scalar's type and bits (a constant of the capture).
        key: Any = (is_strict(),)
        arrays = []
        for a in args:
            if a.__class__ is Array:
                key += a._dtype, a._shape, a._buffer.device
                arrays.append(a)
            elif isinstance(a, (builtins.bool, int, float, complex)):
                key += (scalar_key(a),)
            else:
                raise TypeError(f"{self.name} takes hxarray arrays and Python scalars, got "
                                f"{type(a).__name__}")
        captured = self._captured.get(key)
        if captured is None:
            return self._capture(key, args, arrays)
        if observers:
            return observe("operation", self.name, captured.device,
                           {"args": args, "kwargs": {}}, captured.replay, arrays)
        return captured.replay(arrays)

    def _capture(self, key: Any, args: Sequence[Any], arrays: list[Array]) -> Any:
        """The first call of a signature: the function run and recorded; the results."""
        devices = {a._buffer.device for a in arrays}
        if len(devices) > 1:
            raise ValueError(f"{self.name}: arguments on different devices "
                             f"({', '.join(sorted(map(str, devices)))}); move them to one "
                             "with to_device()")
        device = devices.pop() if devices else default_device()
        with memory_scope(device) as scope, Recorder(device, self.name) as recorder:
            backend = recorder.real_backend  # (its turn taken: no other capture's recorder)
            inputs = [backend.copy(a) for a in arrays]  # (the real backend's: not recorded)
            given = iter(inputs)
            placed = [next(given) if a.__class__ is Array else a for a in args]
            results = self.function(*placed)
            for result in _arrays_of(results, self.name):
                if result._buffer.device is not device:
                    raise CaptureError(f"{self.name}: a result on {result._buffer.device}, "
                                       f"not the graph's device {device}")
        for position, a in enumerate(inputs):
            if id(a._buffer) in recorder.written:
                raise CaptureError(f"{self.name}: the function writes into its array argument "
                                   f"{position} (in place), which a graph cannot capture; "
                                   "return the new values instead")
        kept = {id(a._buffer) for a in (*inputs, *_arrays_of(results, self.name))}
        calls = share_memory(recorder.recorded, scope.pool, kept,
                             lambda nbytes: backend.empty((nbytes,), uint8, device)._buffer)
        del recorder  # (its calls hold the capture's own temporaries)
        captured = _Captured(backend, device, inputs, calls, results)
        with self._lock:
            if len(self._captured) >= _MAX_SIGNATURES:
                self._captured.clear()
            self._captured[key] = captured
        return _copies(backend, results)


def graph(function: Callable[..., Any]) -> Graph:
    """Capture `function` once per signature (its array arguments' dtypes, shapes and device,
    its scalar arguments' values) and replay it from then on, skipping the namespace: a
    decorator (`@graph`) or a function (`graph(f)`). Each call returns new arrays. See
    docs/graph.md."""
    return Graph(function)
