"""The profiler: `with xp.profile() as prof:` records what hxarray does in the block.

Recorded, from every thread:

- **operations**: each namespace function (`xp.add`, `xp.linalg.solve`, ...) and array operator
  (`a + b`, `a[i]`, `x.to_device(d)`) called through the namespace or an array, with its device
  and stream, host time and, on devices that run work asynchronously, device time between two
  events recorded on the stream around it;
- **primitives**: each call of a backend primitive (`elementwise:add`, `matmul`, `reduce:sum`,
  ...), timed the same way;
- **kernels** and **compilations** on CUDA devices: every launch (kernel name, device-event
  time) and every compilation or kernel-cache load (host time);
- **transfers**: host to device, device to host and device to device copies, with bytes and
  bandwidth;
- **allocations**: every allocation from a device's allocator or a memory scope's pool (bytes),
  and the bytes allocated on each device after each operation (a counter track in the trace).

`prof.table()` is a summary sorted by total time; `prof.export_chrome_trace(path)` writes a
trace for Perfetto (ui.perfetto.dev) or chrome://tracing.

Free when off: nothing on any call path checks for a profiler. Entering a profile installs
wrappers (namespace attributes, the array's operator methods, instance attributes on the
backends and allocators in use) and holds the CPU's compiled fast path off; leaving it removes
them all. A function imported by name before the profile (`from hxarray import add`) is the
unwrapped one: its calls show as primitives, not as operations.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._ops import Op
from .hal.device import Device, DeviceType, default_device

__all__ = ["Profile", "ProfileEvent", "profile"]

NAMESPACE_MODULES = ("_creation", "_data_types", "_elementwise", "_indexing", "_linalg_functions",
                     "_manipulation", "_searching", "_sets", "_sorting", "_statistical",
                     "_utility")
OPERATORS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
             "xor", "lshift", "rshift")
ARRAY_METHODS = (*(f"__{p}{op}__" for op in OPERATORS for p in ("", "r", "i")),
                 "__neg__", "__pos__", "__abs__", "__invert__", "__eq__", "__ne__", "__lt__",
                 "__le__", "__gt__", "__ge__", "__getitem__", "__setitem__", "to_device")
PRIMITIVES = ("assign", "elementwise", "reduce", "arg_reduce", "scan", "matmul", "sort",
              "argsort", "searchsorted", "nonzero", "gather", "scatter", "unique", "linalg",
              "fft", "full", "copy", "arange", "concat", "compress", "isin")
NAMED_PRIMITIVES = {"elementwise", "reduce", "arg_reduce", "scan", "linalg", "fft"}
TRANSFERS = {"from_host": "host to device", "to_host": "device to host",
             "copy_to": "device to device"}

_active: list[Profile] = []
_install_lock = threading.Lock()


@dataclass
class ProfileEvent:
    """One recorded event. Times are seconds from the start of the profile; `device_start` and
    `device_duration` come from device events where the device runs work asynchronously (None
    elsewhere: there the host times are the device's)."""

    category: str  # operation, primitive, kernel, compile, transfer, allocation
    name: str
    device: str
    stream: str
    thread: int
    start: float
    duration: float = 0.0
    nbytes: int = 0
    depth: int = 0
    error: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    device_start: float | None = None
    device_duration: float | None = None
    _events: tuple[Any, Any] | None = field(default=None, repr=False)

    @property
    def time(self) -> float:
        """The event's time: on the device where measured there, else on the host."""
        return self.device_duration if self.device_duration is not None else self.duration


def _describe(value: Any) -> str:
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return f"{getattr(dtype, 'name', dtype)}{list(shape)}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_describe(v) for v in value[:4]) + (", ..." if len(value) > 4
                                                                  else "") + "]"
    return type(value).__name__ if not isinstance(value, (int, float, bool)) else repr(value)


def _device_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Device:
    """The device an operation runs on: its first array's, its `device=`, else the default."""
    from ._array import Array

    values = (*args, *kwargs.values())
    for value in values:
        if value.__class__ is Array:
            return value._buffer.device
        if isinstance(value, (list, tuple)) and value and value[0].__class__ is Array:
            return value[0]._buffer.device
    for value in values:
        if isinstance(value, Device):
            return value
    device = kwargs.get("device")
    if device is not None:
        try:
            return Device(device)
        except (TypeError, ValueError):
            pass
    return default_device()


class Profile:
    """A recording (see the module docstring). Use `with xp.profile() as prof:`; one profile
    records at a time."""

    def __init__(self, *, device_timing: bool = True, record_memory: bool = True) -> None:
        self.device_timing = device_timing
        self.record_memory = record_memory
        self.events: list[ProfileEvent] = []
        self.memory: list[tuple[float, str, int]] = []  # (time, device, allocated bytes)
        self._t0 = 0.0
        self._local = threading.local()
        self._anchors: dict[Device, tuple[Any, float]] = {}
        self._restore: list[Callable[[], None]] = []
        self._instrumented: set[int] = set()
        self._done = False

    # -- recording ---------------------------------------------------------------------------
    def _now(self) -> float:
        return time.perf_counter() - self._t0

    def _stream(self, device: Device) -> Any:
        from .hal.stream import current_stream

        return current_stream(device)

    def _asynchronous(self, stream: Any) -> bool:
        return self.device_timing and not getattr(stream, "inline", False)

    def _anchor(self, device: Device, stream: Any) -> None:
        """An event on `device`, completed and dated on the host, that device events are timed
        against."""
        if device not in self._anchors:
            event = stream.record_event()
            event.synchronize()
            self._anchors[device] = (event, self._now())

    def _record(self, category: str, name: str, run: Callable[[], Any], device: Device,
                nbytes: int = 0, args: dict[str, Any] | None = None) -> Any:
        """Run `run()` and record it as an event of `device` on its current stream."""
        try:
            self._instrument_backend(device.backend)
            stream = self._stream(device)
        except Exception:  # an unusable device: the call will say why
            return run()
        local = self._local
        depth = getattr(local, "depth", 0)
        event = ProfileEvent(category, name, str(device), repr(stream), threading.get_ident(),
                             0.0, nbytes=nbytes, depth=depth, args=args or {})
        timed = self._asynchronous(stream)
        if timed:
            self._anchor(device, stream)
            begin = stream.record_event()
        local.depth = depth + 1
        event.start = self._now()
        try:
            return run()
        except BaseException as exc:
            event.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            event.duration = self._now() - event.start
            local.depth = depth
            if timed:
                event._events = (begin, stream.record_event())
            self.events.append(event)
            if self.record_memory and category == "operation":
                self._sample_memory(device)

    def _sample_memory(self, device: Device) -> None:
        from .hal.scope import current_pool

        pool = current_pool(device) or device.backend.allocator(device)
        self.memory.append((self._now(), str(device), pool.stats().get("allocated_bytes", 0)))

    # -- installing and removing the wrappers -------------------------------------------------
    def _set(self, owner: Any, name: str, value: Any) -> None:
        """Set `owner.name`, remembering how to undo it (an attribute of the owner's own, or
        one it inherits)."""
        own = vars(owner)
        had, previous = name in own, own.get(name)
        setattr(owner, name, value)
        self._restore.append(
            (lambda: setattr(owner, name, previous)) if had else (lambda: delattr(owner, name)))

    def _operation(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def operation(*args: Any, **kwargs: Any) -> Any:
            return self._record("operation", name, lambda: function(*args, **kwargs),
                                _device_of(args, kwargs),
                                args={"inputs": ", ".join(_describe(a) for a in args)})
        functools.update_wrapper(operation, function)
        return operation

    def _install(self) -> None:
        import hxarray

        from . import _array, fft, linalg

        for module_name in NAMESPACE_MODULES:
            module = getattr(hxarray, module_name)
            for name in module.__all__:
                if getattr(hxarray, name, None) is getattr(module, name):
                    self._set(hxarray, name, self._operation(name, getattr(module, name)))
        for module, prefix in ((linalg, "linalg."), (fft, "fft.")):
            for name in module.__all__:
                self._set(module, name, self._operation(prefix + name, getattr(module, name)))
        for name in ARRAY_METHODS:
            method = getattr(_array.Array, name, None)
            if method is not None:
                self._set(_array.Array, name, self._operation(f"Array.{name}", method))
        from .backends.cpu.backend import CpuBackend

        cpu = Device(DeviceType.CPU).backend
        assert isinstance(cpu, CpuBackend)
        cpu.hold_fast_path(True)
        self._restore.append(lambda: cpu.hold_fast_path(False))
        from .hal import scope
        from .hal.registry import registry

        for backend in list(registry._backends.values()):
            self._instrument_backend(backend)
        scope.pool_observers.append(self._instrument_allocator)
        self._restore.append(lambda: scope.pool_observers.remove(self._instrument_allocator))

    def _instrument_backend(self, backend: Any) -> None:
        """Wrap the primitives, transfers and allocators of `backend` (and its kernel launches
        and compilations on CUDA), once per profile."""
        if id(backend) in self._instrumented:
            return
        self._instrumented.add(id(backend))
        device_type = backend.device_type
        for name in PRIMITIVES:
            self._set(backend, name, self._primitive(backend, name, getattr(backend, name)))
        for name, kind in TRANSFERS.items():
            self._set(backend, name, self._transfer(backend, kind, getattr(backend, name)))
        for index in range(backend.device_count() if backend.unavailable_reason() is None else 0):
            self._instrument_allocator(backend.allocator(Device(device_type, index)))
        if hasattr(backend, "_submit") and hasattr(backend, "_function"):
            self._set(backend, "_submit", self._kernel(backend._submit))
            self._set(backend, "_function", self._compile(backend._function))

    def _instrument_allocator(self, allocator: Any) -> None:
        if id(allocator) in self._instrumented:
            return
        self._instrumented.add(id(allocator))
        malloc = allocator.malloc

        def traced_malloc(nbytes: int, *args: Any) -> Any:
            block = malloc(nbytes, *args)
            self.events.append(ProfileEvent(
                "allocation", type(allocator).__name__, str(allocator.device), "",
                threading.get_ident(), self._now(), nbytes=block.nbytes,
                depth=getattr(self._local, "depth", 0)))
            return block
        self._set(allocator, "malloc", traced_malloc)

    def _primitive(self, backend: Any, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        labelled = name in NAMED_PRIMITIVES

        def primitive(*args: Any, **kwargs: Any) -> Any:
            what = args[0].name if args and args[0].__class__ is Op else args[0] if args else None
            label = f"{name}:{what}" if labelled and isinstance(what, str) else name
            return self._record("primitive", label, lambda: method(*args, **kwargs),
                                _device_of(args, kwargs))
        return primitive

    def _transfer(self, backend: Any, kind: str,
                  method: Callable[..., Any]) -> Callable[..., Any]:
        home = Device(backend.device_type)

        def transfer(data: Any, *args: Any, **kwargs: Any) -> Any:
            target = args[0] if args else kwargs.get("device")
            if kind == "device to host":
                device = data._buffer.device
            else:  # recorded on the receiving device
                device = Device(target) if target is not None else home
            nbytes = int(getattr(data, "nbytes", 0) or (data.size * data.dtype.itemsize))
            return self._record("transfer", kind, lambda: method(data, *args, **kwargs),
                                device, nbytes=nbytes)
        return transfer

    def _kernel(self, submit: Callable[..., Any]) -> Callable[..., Any]:
        def kernel(device: Device, function: Any, *args: Any, **kwargs: Any) -> Any:
            return self._record("kernel", function.name,
                                lambda: submit(device, function, *args, **kwargs), device)
        return kernel

    def _compile(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def compile_or_load(state: Any, source: str, name: str, batch: Any) -> Any:
            library = state.library
            if (source, name) in library._functions:
                return function(state, source, name, batch)
            start = self._now()
            try:
                return function(state, source, name, batch)
            finally:
                self.events.append(ProfileEvent(
                    "compile", name, f"cuda:{library.index}", "", threading.get_ident(), start,
                    self._now() - start, depth=getattr(self._local, "depth", 0)))
        return compile_or_load

    # -- the context ---------------------------------------------------------------------------
    def __enter__(self) -> Profile:
        with _install_lock:
            if _active:
                raise RuntimeError("a profile is already recording; profiles do not nest")
            if self._done:
                raise RuntimeError("a profile records once; make a new one")
            _active.append(self)
            self._t0 = time.perf_counter()
            try:
                self._install()
            except BaseException:
                self._uninstall()
                raise
        return self

    def _uninstall(self) -> None:
        while self._restore:
            self._restore.pop()()
        _active.clear()

    def __exit__(self, *exc: object) -> None:
        with _install_lock:
            self._uninstall()
            self._done = True
        self._resolve()

    def _resolve(self) -> None:
        """Device times of the events timed with device events (waits for the devices)."""
        for event in self.events:
            if event._events is None:
                continue
            begin, end = event._events
            event._events = None
            try:
                end.synchronize()
                anchor, at = self._anchors[Device(event.device)]
                event.device_start = at + anchor.elapsed_time(begin) / 1e3
                event.device_duration = begin.elapsed_time(end) / 1e3
            except Exception as exc:  # a failed kernel: its error belongs to the caller
                event.error = event.error or f"{type(exc).__name__}: {exc}"

    # -- results -------------------------------------------------------------------------------
    def summary(self) -> list[dict[str, Any]]:
        """One row per (category, name, device): count, total and mean time (device time where
        measured), bytes and bandwidth; sorted by total time, longest first."""
        rows: dict[tuple[str, str, str], dict[str, Any]] = {}
        for event in self.events:
            key = (event.category, event.name, event.device)
            row = rows.setdefault(key, {"category": event.category, "name": event.name,
                                        "device": event.device, "count": 0, "total": 0.0,
                                        "host_total": 0.0, "bytes": 0, "errors": 0})
            row["count"] += 1
            row["total"] += event.time
            row["host_total"] += event.duration
            row["bytes"] += event.nbytes
            row["errors"] += event.error is not None
        for row in rows.values():
            row["mean"] = row["total"] / row["count"]
            timed = row["category"] == "transfer" and row["total"] > 0
            row["bandwidth"] = row["bytes"] / row["total"] if timed else None
        return sorted(rows.values(), key=lambda r: (-r["total"], r["name"]))

    def table(self, limit: int | None = 30) -> str:
        """The summary as a text table (`print(prof.table())`), sorted by total time."""
        lines = [f"{'category':11s} {'name':32s} {'device':8s} {'count':>7s} {'total':>10s} "
                 f"{'mean':>10s} {'bytes':>10s} {'bandwidth':>11s}"]
        rows = self.summary()
        for row in rows[:limit]:
            bandwidth = f"{row['bandwidth'] / 1e9:8.2f} GB/s" if row["bandwidth"] else ""
            lines.append(f"{row['category']:11s} {row['name'][:32]:32s} {row['device']:8s} "
                         f"{row['count']:7d} {_ms(row['total']):>10s} {_ms(row['mean']):>10s} "
                         f"{_bytes(row['bytes']):>10s} {bandwidth:>11s}")
        if limit is not None and len(rows) > limit:
            lines.append(f"... {len(rows) - limit} more rows")
        return "\n".join(lines)

    def trace(self) -> dict[str, Any]:
        """The recording in the Trace Event Format (Chrome's, read by Perfetto)."""
        events: list[dict[str, Any]] = []
        pids = {"host": 0}

        def pid(name: str) -> int:
            if name not in pids:
                pids[name] = len(pids)
            return pids[name]
        streams: dict[tuple[int, str], int] = {}
        for e in self.events:
            args = {"device": e.device, "stream": e.stream, **e.args}
            if e.nbytes:
                args["bytes"] = e.nbytes
            if e.error:
                args["error"] = e.error
            if e.category == "allocation":
                events.append({"name": f"alloc {e.nbytes} B", "cat": e.category, "ph": "i",
                               "s": "t", "ts": e.start * 1e6, "pid": 0, "tid": e.thread,
                               "args": args})
                continue
            events.append({"name": e.name, "cat": e.category, "ph": "X", "ts": e.start * 1e6,
                           "dur": e.duration * 1e6, "pid": 0, "tid": e.thread, "args": args})
            # operations are host calls; their primitives, kernels and copies go on the
            # device's stream tracks
            if e.device_start is not None and e.device_duration is not None and \
                    e.category != "operation":
                device_pid = pid(e.device)
                tid = streams.setdefault((device_pid, e.stream), len(streams) + 1)
                events.append({"name": e.name, "cat": e.category, "ph": "X",
                               "ts": e.device_start * 1e6, "dur": e.device_duration * 1e6,
                               "pid": device_pid, "tid": tid, "args": args})
        for at, device, allocated in self.memory:
            events.append({"name": f"memory {device}", "ph": "C", "ts": at * 1e6, "pid": 0,
                           "args": {"allocated bytes": allocated}})
        for name, number in pids.items():
            label = "host (hxarray calls)" if name == "host" else f"device {name}"
            events.append({"name": "process_name", "ph": "M", "pid": number,
                           "args": {"name": label}})
        for (number, stream), tid in streams.items():
            events.append({"name": "thread_name", "ph": "M", "pid": number, "tid": tid,
                           "args": {"name": stream}})
        return {"traceEvents": events, "displayTimeUnit": "ms",
                "otherData": {"producer": "hxarray.profile"}}

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> Path:
        """Write the trace as JSON to `path` (open it in ui.perfetto.dev or chrome://tracing)."""
        target = Path(path)
        target.write_text(json.dumps(self.trace()), encoding="utf-8")
        return target

    def __iter__(self) -> Iterator[ProfileEvent]:
        return iter(self.events)

    def __repr__(self) -> str:
        return f"Profile({len(self.events)} events)"


def _ms(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} us"


def _bytes(n: float) -> str:
    if not n:
        return ""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


def profile(*, device_timing: bool = True, record_memory: bool = True) -> Profile:
    """`with xp.profile() as prof:` records operations, primitives, kernels, compilations,
    transfers and allocations (module docstring); `device_timing=False` skips the device events,
    `record_memory=False` the allocated-bytes counter."""
    return Profile(device_timing=device_timing, record_memory=record_memory)
