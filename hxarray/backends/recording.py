"""Recording a function's primitive calls, for `hxarray.graph` (`hxarray/_graph.py`).

While a graph captures, its device's backend is a `Recorder`: the namespace runs as always
(argument checks, promotion, numpy mode) and calls the recorder's primitives, which run them on
the real backend and keep each call, with the arrays it read and wrote, as a `Call`. The
backend then turns each call into an executor with nothing left to decide
(`Backend.prepare`), and a replay runs those executors in order.

Only the capturing thread is recorded: other threads calling the device meanwhile reach the
real backend. A call whose result a replay could not reproduce (a value read on the host, a
shape that depends on values, random numbers, a synchronisation, another device) raises
`CaptureError`, naming it, at capture time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from .._array import Array
from ..hal.device import Device

__all__ = ["CaptureError", "Call", "Recorder", "capturing", "share_memory"]

# The recorders capturing now, in any thread (the fused functions' cached calls, which hold the
# real backend, take the recorded route while it is not empty).
capturing: list[Recorder] = []
_lock = threading.Lock()
_turns: dict[Device, threading.Lock] = {}  # per device: held by the capture under way


class CaptureError(RuntimeError):
    """An operation a graph cannot capture: its replay would not compute what the call did."""


class Call(NamedTuple):
    """One recorded primitive call: `primitive` (a backend method's name, or "call" for a
    prepared callable the backend handed out, `args[0]`) with its arguments, each output
    already in place (an array the call made is passed as its `out`)."""

    primitive: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


# The primitives that write into arrays they are given: replayed as they were called.
_INTO = frozenset({"assign", "reduce", "arg_reduce", "scan", "matmul", "sort", "argsort",
                   "searchsorted", "gather", "scatter", "concat", "place", "isin",
                   "squared_deviations", "fused", "fused_reduce"})
# Where each of those writes: its output's position among the arguments, and its name.
_WRITES = {"assign": (0, "dst"), "scatter": (0, "x"), "place": (0, "x"),
           **{name: (index, "out") for name, index in (
               ("reduce", 3), ("arg_reduce", 3), ("scan", 3), ("matmul", 2), ("sort", 3),
               ("argsort", 3), ("searchsorted", 3), ("gather", 3), ("concat", 2), ("isin", 3),
               ("squared_deviations", 2), ("fused", 2), ("fused_reduce", 5))}}
# The primitives that make arrays: replayed by computing again into the arrays they made.
_MAKE = frozenset({"elementwise", "full", "copy", "arange", "from_host", "linalg", "fft"})
# The prepared calls of fused expressions a backend hands out, which a fused function calls with
# its arrays and out (`fused_call`'s only reach the backend again through `fused_layout`).
_PREPARES = frozenset({"fused_layout", "fused_reduce_call"})
# What a replay cannot reproduce, and why.
_REFUSED = {
    "host_view": "reads the array's values on the host (bool(), float(), int(), "
                 "numpy conversion, printing)",
    "to_host": "reads the array's values on the host (bool(), float(), int(), "
               "numpy conversion, printing)",
    "dlpack": "exports the array (DLPack)",
    "nonzero": "gives a result whose shape depends on the values (nonzero, boolean indexing)",
    "unique": "gives a result whose shape depends on the values (unique)",
    "compress": "gives a result whose shape depends on the values (boolean indexing)",
    "random_bits": "draws random numbers (a replay would repeat them: draw them outside and "
                   "pass them as an argument)",
    "synchronize": "waits for the device (a synchronisation)",
    "copy_to": "copies to another device",
}
# Asked of the backend and answered as it is (nothing computed).
_ASKED = frozenset({"empty", "empty_in", "adopt", "allocator", "default_stream", "stream",
                    "create_stream", "create_event", "capabilities", "performance",
                    "device_count", "unavailable_reason", "scope_allocator", "dlpack_device",
                    "device_type", "priority", "host_fallbacks", "release_memory", "fused_call"})


class Recorder:
    """The backend of a device while a graph captures (module docstring). `recorded` are the
    recorded calls in order, `written` the ids of the buffers they wrote. Captures on one device
    take turns: a second waits for the first to end. (Its own attributes carry names no backend
    has: every other attribute is the real backend's.)"""

    def __init__(self, device: Device, name: str) -> None:
        self.real_backend: Any = None  # (the device's backend, read when its turn comes)
        self.graph_device = device
        self.graph_name = name
        self.recorded: list[Call] = []
        self.written: set[int] = set()
        self.capturing_thread = threading.get_ident()

    def __enter__(self) -> Recorder:
        device = self.graph_device
        with _lock:
            turn = _turns.setdefault(device, threading.Lock())
        turn.acquire()  # (another thread's capture on the device ends first)
        with _lock:
            self.real_backend = device.backend
            device._backend = self  # type: ignore[assignment]
            capturing.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        with _lock:
            self.graph_device._backend = self.real_backend
            capturing.remove(self)
        _turns[self.graph_device].release()

    def refuse(self, what: str) -> CaptureError:
        return CaptureError(f"{self.graph_name}: the function {what}, which a graph cannot "
                            "capture; run that part outside the graphed function")

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.real_backend, name)
        if threading.get_ident() != self.capturing_thread or name in _ASKED:
            return attribute
        if name in _REFUSED:
            raise self.refuse(_REFUSED[name])
        if name in _INTO:
            return lambda *args, **kwargs: self._into(name, attribute, args, kwargs)
        if name in _MAKE:
            return lambda *args, **kwargs: self._make(name, attribute, args, kwargs)
        if name in _PREPARES:
            return lambda *args, **kwargs: self._prepared(attribute(*args, **kwargs))
        if not callable(attribute):
            return attribute
        raise self.refuse(f"calls the backend's {name}()")

    # `pays` and friends ask the class whether the backend compiles fused expressions
    @property
    def fused(self) -> Any:
        return self.__getattr__("fused")

    def _note(self, call: Call, written: Any) -> None:
        self.recorded.append(call)
        if written.__class__ is Array:
            self.written.add(id(written._buffer))

    def _into(self, name: str, method: Callable[..., Any], args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Any:
        result = method(*args, **kwargs)
        index, keyword = _WRITES[name]
        self._note(Call(name, args, kwargs), args[index] if index < len(args) else
                   kwargs.get(keyword))
        return result

    def _make(self, name: str, method: Callable[..., Any], args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Any:
        if name == "elementwise":  # recorded as (op, args, signature, shape, out)
            out = args[4] if len(args) > 4 else kwargs.get("out")
            result = method(*args[:4], out)
            self._note(Call(name, (*args[:4], result), {}), result)
            return result
        result = method(*args, **kwargs)  # computed again into what it made, at a replay
        self._note(Call("make", (method, args, result), kwargs), None)
        return result

    def _prepared(self, call: Callable[..., Any]) -> Callable[..., Any]:
        """A prepared call the backend handed out: recorded when it is called."""
        def recorded(arrays: Sequence[Array], out: Array) -> None:
            call(arrays, out)
            if threading.get_ident() == self.capturing_thread:
                self._note(Call("call", (call, tuple(arrays), out), {}), out)

        return recorded


def _arrays_in(value: Any) -> list[Array]:
    """The arrays in a recorded argument (an array, or tuples and lists of them)."""
    if value.__class__ is Array:
        return [value]
    if value.__class__ in (tuple, list):
        return [a for v in value for a in _arrays_in(v)]
    return []


def _mapped(value: Any, moved: dict[int, Any]) -> Any:
    """A recorded argument with each array over a buffer in `moved` (id -> new buffer) made
    over the new buffer, at the same offset and strides."""
    if value.__class__ is Array:
        buffer = moved.get(id(value._buffer))
        if buffer is None:
            return value
        return Array._make(buffer, value._dtype, value._shape, value._strides, value._offset)
    if value.__class__ in (tuple, list):
        return value.__class__(_mapped(v, moved) for v in value)
    if value.__class__ is dict:
        return {key: _mapped(v, moved) for key, v in value.items()}
    return value


def share_memory(calls: list[Call], pool: Any, kept: set[int],
                 new_buffer: Callable[[int], Any]) -> list[Call]:
    """`calls` with the arrays they alone use (the buffers that `pool` served during the
    capture, other than the buffers in `kept`) moved to shared buffers: two arrays share one
    where no call uses both and every use of one comes before every use of the other, as an
    eager run's temporaries reuse the allocator's memory. Without it a graph of many
    operations on large arrays would hold, and stream through, one buffer per operation.
    `new_buffer(nbytes)` makes a buffer."""
    uses: dict[int, list[Any]] = {}  # id(buffer) -> [buffer, first call, last call]
    for index, call in enumerate(calls):
        for array in _arrays_in((call.args, tuple(call.kwargs.values()))):
            buffer = array._buffer
            if buffer.allocator is not pool or id(buffer) in kept:
                continue
            use = uses.get(id(buffer))
            if use is None:
                uses[id(buffer)] = [buffer, index, index]
            else:
                use[2] = index
    if not uses:
        return calls
    starting: dict[int, list[Any]] = {}
    ending: dict[int, list[Any]] = {}
    for buffer, first, last in uses.values():
        starting.setdefault(first, []).append(buffer)
        ending.setdefault(last, []).append(buffer)
    free: list[Any] = []  # shared buffers no live array uses, smallest first
    moved: dict[int, Any] = {}
    for index, call in enumerate(calls):
        donor = _in_place(call, uses, index)
        for buffer in starting.get(index, ()):  # before the call's last uses end: a call's
            if donor is not None and buffer is call.args[4]._buffer:  # arrays apart, but ...
                moved[id(buffer)] = moved[id(donor)]  # ... an operand's, computed in place
                continue
            fits = next((b for b in free if b.nbytes >= buffer.nbytes), None)
            if fits is None:
                fits = new_buffer(buffer.nbytes)
            else:
                free.remove(fits)
            moved[id(buffer)] = fits
        for buffer in ending.get(index, ()):
            if buffer is not donor:
                free.append(moved[id(buffer)])
        free.sort(key=lambda b: b.nbytes)
    return [Call(call.primitive, _mapped(call.args, moved), _mapped(call.kwargs, moved))
            for call in calls]


def _in_place(call: Call, uses: dict[int, list[Any]], index: int) -> Any:
    """The buffer of an element-wise call's operand that its result may take over (the
    primitive's contract: out may alias an operand element for element): the operand's last
    use, laid out as the result, which the call makes; None where there is none. Not for
    `where` and `clip` (`selects`, `chain`), whose kernels write out before reading every
    operand."""
    if call.primitive != "elementwise":
        return None
    op, operands, _, _, out = call.args
    made = uses.get(id(out._buffer))
    if op.selects or op.chain or made is None or made[1] != index:
        return None
    layout = (out._offset, out._shape, out._strides, out._dtype.itemsize)
    for a in operands:
        use = uses.get(id(a._buffer)) if a.__class__ is Array else None
        if use is None or use[1] == index or use[2] != index or \
                a._buffer.nbytes < out._buffer.nbytes or \
                (a._offset, a._shape, a._strides, a._dtype.itemsize) != layout:
            continue
        if all(b.__class__ is not Array or b._buffer is not a._buffer or
               (b._offset, b._shape, b._strides, b._dtype.itemsize) == layout
               for b in operands):  # no other view of it, read after out is written
            return a._buffer
    return None
