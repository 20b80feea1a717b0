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

Built on the hooks (`hxarray.hal.hooks`): entering a profile installs one hook, leaving removes
it; nothing is replaced. Free when off: with no hook installed each point costs one read of the
hook list. A function imported by name (`from hxarray import add`) is the same observed function
as `xp.add`; the namespace's own calls between its modules are not operations: they show as the
primitives they run.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .hal.device import Device
from .hal.hooks import Hook, install, remove
from .hal.scope import current_pool
from .hal.stream import current_stream

__all__ = ["Profile", "ProfileEvent", "profile"]

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
        self._hook = _Recorder(self)
        self._done = False

    # -- recording ---------------------------------------------------------------------------
    def _now(self) -> float:
        return time.perf_counter() - self._t0

    def _asynchronous(self, stream: Any) -> bool:
        return self.device_timing and not getattr(stream, "inline", False)

    def _anchor(self, device: Device, stream: Any) -> None:
        """An event on `device`, completed and dated on the host, that device events are timed
        against."""
        if device not in self._anchors:
            event = stream.record_event()
            event.synchronize()
            self._anchors[device] = (event, self._now())

    def _begin(self, kind: str, name: str, device: Device,
               detail: Mapping[str, Any]) -> tuple[Any, ...] | None:
        """An event of `device` on its current stream, begun now (the hook's `enter`)."""
        try:
            stream = None if kind == "compile" else current_stream(device)
        except Exception:  # an unusable device: the call will say why
            return None
        local = self._local
        depth = getattr(local, "depth", 0)
        args = {"inputs": ", ".join(_describe(a) for a in detail["args"])} \
            if kind == "operation" else {}
        event = ProfileEvent(kind, name, str(device), "" if stream is None else repr(stream),
                             threading.get_ident(), 0.0, nbytes=detail.get("nbytes", 0),
                             depth=depth, args=args)
        begin = None
        if stream is not None and self._asynchronous(stream):
            self._anchor(device, stream)
            begin = stream.record_event()
        local.depth = depth + 1
        event.start = self._now()
        return event, stream, begin, depth, device

    def _end(self, token: tuple[Any, ...] | None, error: BaseException | None) -> None:
        """Finish the event `_begin` made (the hook's `exit`)."""
        if token is None:
            return
        event, stream, begin, depth, device = token
        event.duration = self._now() - event.start
        self._local.depth = depth
        if error is not None:
            event.error = f"{type(error).__name__}: {error}"
        if begin is not None:
            event._events = (begin, stream.record_event())
        self.events.append(event)
        if self.record_memory and event.category == "operation":
            self._sample_memory(device)

    def _allocated(self, allocator: Any, block: Any) -> None:
        self.events.append(ProfileEvent(
            "allocation", type(allocator).__name__, str(allocator.device), "",
            threading.get_ident(), self._now(), nbytes=block.nbytes,
            depth=getattr(self._local, "depth", 0)))

    def _sample_memory(self, device: Device) -> None:
        pool = current_pool(device) or device.backend.allocator(device)
        self.memory.append((self._now(), str(device), pool.stats().get("allocated_bytes", 0)))

    # -- the context ---------------------------------------------------------------------------
    def __enter__(self) -> Profile:
        with _install_lock:
            if _active:
                raise RuntimeError("a profile is already recording; profiles do not nest")
            if self._done:
                raise RuntimeError("a profile records once; make a new one")
            _active.append(self)
            self._t0 = time.perf_counter()
            install(self._hook)
        return self

    def __exit__(self, *exc: object) -> None:
        with _install_lock:
            remove(self._hook)
            _active.clear()
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


class _Recorder(Hook):
    """A profile's hook: each point becomes an event of the profile."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile

    def enter(self, kind: str, name: str, device: Any, detail: Mapping[str, Any]) -> Any:
        return self.profile._begin(kind, name, device, detail)

    def exit(self, token: Any, error: BaseException | None) -> None:
        self.profile._end(token, error)

    def allocated(self, allocator: Any, block: Any) -> None:
        self.profile._allocated(allocator, block)


def profile(*, device_timing: bool = True, record_memory: bool = True) -> Profile:
    """`with xp.profile() as prof:` records operations, primitives, kernels, compilations,
    transfers and allocations (module docstring); `device_timing=False` skips the device events,
    `record_memory=False` the allocated-bytes counter."""
    return Profile(device_timing=device_timing, record_memory=record_memory)
