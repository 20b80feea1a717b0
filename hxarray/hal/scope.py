"""Memory scopes: `with memory_scope(device) as scope:` serves the arrays created in the block on
`device` from a pool of their own, and returns the pool's cached memory at exit.

- **The pool** is a caching allocator of the device allocator's kind over the same raw allocator
  (`Backend.scope_allocator`): size classes and reuse inside the scope, statistics of its own
  (`scope.peak_bytes`, `scope.allocations`, `scope.stats()`); `xp.memory_stats(device)` keeps
  reporting the device's own pool.
- **Per thread and task**, like `device_scope`: the scopes in force are a context variable
  (device -> pool). A scope also makes its device the default device inside the block, and nests
  with `device_scope` and other memory scopes (an inner scope of the same device takes over
  until it ends).
- **At exit** the pool is closed: its cached blocks go back to the device (on a device with
  streams, once no queued work can touch them), and so does every block freed later. Arrays that
  outlive the scope stay valid: their blocks go back to the device when they die, and are never
  handed out while alive.
- **The allocation path looks the pool up**: a backend's `empty` reads `scoped_pools` (one
  context-variable read, and an empty mapping while no scope is open in the thread or task).
  The CPU's compiled fast path reads the same variable and, inside a scope, hands the call to
  the general Python path (a few microseconds instead of about one); the scope's pool is the
  pure-Python caching allocator (about a microsecond per allocation and free instead of a
  tenth). Threads and tasks outside every scope keep the fast path.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .allocator import (
    Allocator,
    Block,
    StreamOrderedAllocator,
    _CachingAllocatorBase,
    _marker,
    _OverRaw,
)
from .device import Device, _scoped_device, default_device

if TYPE_CHECKING:
    from .stream import Event, Stream

__all__ = ["MemoryScope", "ScopePool", "StreamOrderedScopePool", "memory_scope", "scope_pool",
           "current_pool"]

# device -> the pool of the innermost memory scope of that device, per thread and task
# (its default, NO_SCOPES, is what the compiled fast path compares with)
NO_SCOPES: Mapping[Device, Allocator] = MappingProxyType({})
scoped_pools: contextvars.ContextVar[Mapping[Device, Allocator]] = contextvars.ContextVar(
    "hxarray_memory_scopes", default=NO_SCOPES)
_lock = threading.Lock()


def current_pool(device: Device) -> Allocator | None:
    """The pool of the innermost memory scope of `device` in this thread or task, or None."""
    return scoped_pools.get().get(device)


class ScopePool(_OverRaw, _CachingAllocatorBase, Allocator):
    """The pool of a memory scope on a device whose work is synchronous (the CPU): a caching
    allocator over the device's raw allocator. Closing it sends its cache, and every block freed
    afterwards, to the raw allocator."""

    def close(self) -> None:
        self.max_cached_bytes = 0
        self.empty_cache()


class StreamOrderedScopePool(StreamOrderedAllocator):
    """The pool of a memory scope on a device with asynchronous streams. Once closed, a freed
    block goes back to the raw allocator as soon as no queued work can touch it: at once if its
    streams are idle, else from a background thread that waits for events recorded now."""

    closed = False

    def close(self) -> None:
        self.closed = True
        self._return_to_device()

    def free(self, block: Block) -> None:
        if self.closed and self._lock.defer(block):  # freed while this thread holds the lock
            return
        super().free(block)
        if self.closed:
            self._return_to_device()

    def _return_to_device(self) -> None:
        ready: list[Block] = []
        busy: list[tuple[Block, list[Event | Stream]]] = []
        with self._lock:
            self._release_held()
            for (stream, _), blocks in self._free_lists.items():
                idle = stream is None or stream.query()  # None: the pool of idle streams' blocks
                while blocks:
                    block = blocks.pop()
                    if idle:
                        ready.append(block)
                    else:
                        busy.append((block, [_marker(stream)]))
            for block, home, events in self._held:
                busy.append((block, [*events, _marker(home)]))
            self._held = []
            self._num_raw_frees += len(ready) + len(busy)
            self._cached = 0
        for block in ready:
            self.raw.free(block)
        for block, events in busy:
            _reaper().put((self.raw, block, events))


def scope_pool(allocator: Allocator) -> Allocator:
    """A fresh pool of `allocator`'s kind over its raw allocator (the default of
    `Backend.scope_allocator`)."""
    raw = getattr(allocator, "raw", allocator)
    if isinstance(allocator, StreamOrderedAllocator):
        return StreamOrderedScopePool(raw)
    return ScopePool(raw)


_reaper_queue: queue.Queue[tuple[Allocator, Block, list[Event | Stream]]] | None = None


def _reap(work: queue.Queue[tuple[Allocator, Block, list[Event | Stream]]]) -> None:
    """Free blocks of closed pools once the events recorded for them have completed."""
    while True:
        raw, block, events = work.get()
        for event in events:
            try:
                event.synchronize()
            except Exception:  # noqa: S110 - a failed kernel's error belongs to its stream
                pass
        raw.free(block)


def _reaper() -> queue.Queue[tuple[Allocator, Block, list[Event | Stream]]]:
    global _reaper_queue
    with _lock:
        if _reaper_queue is None:
            _reaper_queue = queue.Queue()
            threading.Thread(target=_reap, args=(_reaper_queue,), daemon=True,
                             name="hxarray-scope-reaper").start()
        return _reaper_queue


class MemoryScope:
    """A memory scope (see the module docstring); use `memory_scope(device)`."""

    def __init__(self, device: Device | str | None = None, managed: bool = False) -> None:
        if managed is not True and managed is not False:
            raise TypeError(f"memory_scope(): managed must be a bool, got "
                            f"{type(managed).__name__}")
        self._requested = device
        self.managed = managed
        self.device: Device | None = None
        self.pool: Allocator | None = None
        self._tokens: tuple[Any, Any] | None = None
        self._final: dict[str, int] | None = None

    def __enter__(self) -> MemoryScope:
        if self.pool is not None:
            raise RuntimeError("a memory scope can be entered only once; make a new one")
        device = default_device() if self._requested is None else Device(self._requested)
        backend = device.backend
        pool = backend.scope_allocator(device, managed=True) if self.managed else \
            backend.scope_allocator(device)
        self.device, self.pool = device, pool
        self._tokens = (scoped_pools.set({**scoped_pools.get(), device: pool}),
                        _scoped_device.set(device))
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._tokens is not None and self.pool is not None
        pools, scoped = self._tokens
        _scoped_device.reset(scoped)
        scoped_pools.reset(pools)
        self._final = self.pool.stats()
        close = getattr(self.pool, "close", None)
        if close is not None:
            close()

    def stats(self) -> dict[str, int]:
        """The pool's allocator statistics (`xp.memory_stats`'s keys), at exit once exited."""
        if self.pool is None:
            raise RuntimeError("the memory scope has not been entered")
        return dict(self._final) if self._final is not None else self.pool.stats()

    @property
    def peak_bytes(self) -> int:
        """The most memory the scope's arrays held at once (bytes, in size classes)."""
        return self.stats()["peak_allocated_bytes"]

    @property
    def allocations(self) -> int:
        """How many allocations the scope served."""
        return self.stats()["num_allocs"]

    @property
    def live_bytes(self) -> int:
        """Bytes held now by arrays allocated in the scope (they may outlive it)."""
        if self.pool is None:
            raise RuntimeError("the memory scope has not been entered")
        return self.pool.stats()["allocated_bytes"]

    def __repr__(self) -> str:
        where = self.device or self._requested or "the default device"
        return f"MemoryScope({where}, allocations={self.allocations if self.pool else 0})"


def memory_scope(device: Device | str | None = None, *, managed: bool = False) -> MemoryScope:
    """`with memory_scope(device) as scope:` serves allocations on `device` (default: the
    default device) made in the block, in this thread or task, from a pool of their own (module
    docstring); `scope.peak_bytes` and `scope.allocations` report it. With `managed=True` the
    pool's memory is managed (unified) memory, which the host reads and writes in place
    (`np.asarray(x)` without a copy, after the device's work is done) and `x.prefetch(device)`
    moves ahead of use: on devices whose `capabilities()["managed_memory"]` is True (ValueError
    elsewhere)."""
    return MemoryScope(device, managed)
