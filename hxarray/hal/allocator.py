"""Memory: blocks, the buffers arrays hold, the raw per-device allocator interface and caching
allocators over any of them.

A `MemoryBuffer` is one span of memory on one device, owned by whoever holds a reference to it:
arrays and views hold the buffer; when the last of them dies, the buffer's deallocation hands the
block back to the allocator it came from, exactly once.

The caching allocator follows the shape of PyTorch's CUDACachingAllocator, simplified: requests are
rounded up to size classes (64-byte steps up to 512 B, then quarter-power-of-two steps, so at most
25% waste), freed blocks go to a per-class free list and are handed out again without touching the
raw allocator, and an out-of-memory error frees the whole cache and retries once.
"""

from __future__ import annotations

import contextlib
import operator
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .hooks import allocated, freed, observers
from .sources import compiled
from .stream import current_stream

if TYPE_CHECKING:
    import numpy as np

    from .device import Device
    from .stream import Event, Stream

__all__ = ["Block", "MemoryBuffer", "Allocator", "CachingAllocator", "StreamOrderedAllocator",
           "size_class"]


class Block:
    """A piece of raw device memory: its address, size, the backend's handle for it, and a slot in
    which a backend may cache a derived object (e.g. a typed view) for the block's next users
    (`view`)."""

    __slots__ = ("_address", "_nbytes", "handle", "cache", "_owner")
    handle: Any
    cache: Any
    _owner: Any  # the caching allocator that handed the block out and has not taken it back

    def __init__(self, address: int, nbytes: int, handle: Any) -> None:
        if getattr(self, "_address", None) is not None:  # fixed: views rely on them
            raise TypeError("a Block is initialised once")
        if not isinstance(address, int):
            raise TypeError(f"a block's address is an int, got {type(address).__name__}")
        nbytes = operator.index(nbytes)
        if nbytes < 0:
            raise ValueError(f"a block cannot have {nbytes} bytes")
        self._address = address
        self._nbytes = nbytes
        self.handle = handle
        self.cache = None
        self._owner = None

    @property
    def address(self) -> int:
        return self._address

    @property
    def nbytes(self) -> int:
        return self._nbytes

    def __reduce__(self) -> Any:
        raise TypeError("a Block cannot be copied or pickled: a copy would be a second owner of "
                        "the same memory")

    def view(self, dtype: Any, shape: tuple[int, ...], make: Callable[..., Any]) -> Any:
        """The backend's typed view of this block as (dtype, shape), `make(block, dtype, shape)`,
        kept in `cache` for the block's next users with the view of its user before (two
        (dtype, shape, view) triples, the newest first): a loop that frees and reallocates
        same-shaped results builds each once, also where two kinds of result take turns in the
        same blocks (a mask and the values it picks)."""
        cached = self.cache
        if cached is not None:
            if cached[0] is dtype and (cached[1] is shape or cached[1] == shape):
                return cached[2]
            if len(cached) > 3 and cached[3] is dtype and (cached[4] is shape or
                                                           cached[4] == shape):
                return cached[5]
        view = make(self, dtype, shape)
        self.cache = (dtype, shape, view) if cached is None else (dtype, shape, view, *cached[:3])
        return view

    def vector_shape(self, dtype: Any, size: int) -> tuple[int]:
        """The shape `(size,)` of a vector of `dtype` in this block: the tuple cached with a view
        (`view`, which then finds that view by identity) where one of the block's last users was
        such a vector, so a loop of same-sized vectors makes it once rather than a new tuple
        for each."""
        cached = self.cache
        if cached is not None:
            for at in range(0, len(cached), 3):
                if cached[at] is dtype:
                    shape = cached[at + 1]
                    if len(shape) == 1:
                        extent = shape[0]
                        if extent == size:
                            return shape
        return (size,)


class MemoryBuffer:
    """A span of `nbytes` bytes on `device`, carved from `allocator`."""

    __slots__ = ("device", "nbytes", "block", "allocator", "__weakref__")

    def __init__(self, device: Device, nbytes: int, block: Block, allocator: Allocator) -> None:
        if getattr(self, "block", None) is not None:  # it goes back to its allocator exactly once
            raise TypeError("a MemoryBuffer is initialised once")
        if not isinstance(nbytes, int):
            raise TypeError(f"MemoryBuffer() argument 'nbytes' must be int, not "
                            f"{type(nbytes).__name__}")
        self.device = device
        self.nbytes = nbytes
        self.block = block
        self.allocator = allocator

    def __dealloc__(self) -> None:
        """Hand the block back, exactly once: compiled, this is the C deallocator; interpreted,
        the finalizer (`__del__`, set below the class)."""
        allocator = self.allocator
        if allocator is not None:
            self.allocator = None  # type: ignore[assignment]  # handed back: exactly once
            _hand_back(allocator, self.block)

    @property
    def address(self) -> int:
        """The device address of the first byte."""
        return self.block.address

    def copy_to_host(self, out: np.ndarray, offset: int = 0) -> np.ndarray:
        """Copy `out.nbytes` bytes from byte `offset` on into the contiguous host array `out`,
        after the work queued on the device's current stream (waited for)."""
        if not (out.flags.c_contiguous and out.flags.writeable):
            raise ValueError("copy_to_host needs a writeable C-contiguous output array")
        self._check_span(offset, out.nbytes)
        stream = current_stream(self.device)
        self.allocator.copy_to_host(self.block, offset, out, stream)
        stream.synchronize()
        return out

    def copy_from_host(self, data: np.ndarray, offset: int = 0) -> None:
        """Copy the contiguous host array `data` into this buffer starting at byte `offset`, in
        order on the device's current stream (noted as a user of the block: it is not handed to
        another stream before the copy is done)."""
        self._check_span(offset, data.nbytes)
        stream = current_stream(self.device)
        self.allocator.record_stream(self.block, stream)
        self.allocator.copy_from_host(self.block, offset, data, stream)

    def _check_span(self, offset: int, nbytes: int) -> None:
        if offset < 0 or offset + nbytes > self.nbytes:
            raise IndexError(f"byte range [{offset}, {offset + nbytes}) is outside this "
                             f"{self.nbytes}-byte buffer")

    @property
    def __array_interface__(self) -> dict[str, Any]:
        """Host-visible buffers expose their bytes to numpy; the numpy array keeps this alive."""
        return self.allocator.array_interface(self.block, self.nbytes)

    def __repr__(self) -> str:
        return (f"MemoryBuffer(device={self.device!r}, nbytes={self.nbytes}, "
                f"address={self.address:#x})")

    def __reduce__(self) -> Any:
        raise TypeError("a MemoryBuffer cannot be copied or pickled: a copy would hand its block "
                        "back a second time (copy the array instead)")


if not compiled(__file__):  # interpreted, Python calls no __dealloc__: the finalizer does it
    MemoryBuffer.__del__ = MemoryBuffer.__dealloc__  # type: ignore[attr-defined]


def _hand_back(allocator: Allocator, block: Block) -> None:
    """`allocator.free(block)`, from a dying buffer (compiled, a caching allocator's is a C
    call: allocator.pxd types `caching`)."""
    if isinstance(allocator, _CachingAllocatorBase):
        caching = allocator
        caching.free(block)
    else:
        allocator.free(block)


class Allocator(ABC):
    """A per-device allocator. Subclasses implement `malloc`/`free` and the host copies; callers use
    `allocate`, which wraps a block in a `MemoryBuffer` that frees it when the last user dies."""

    device: Device

    @abstractmethod
    def malloc(self, nbytes: int) -> Block:
        """A block of at least `nbytes` bytes; `MemoryError` if the device has no room."""

    @abstractmethod
    def free(self, block: Block) -> None:
        """Return a block obtained from `malloc`."""

    @abstractmethod
    def copy_to_host(self, block: Block, offset: int, out: np.ndarray,
                     stream: Stream | None = None) -> None:
        """Copy `out.nbytes` bytes from the block at `offset` into the contiguous host array,
        in order on `stream` (None: at once); `out` holds them once the stream has reached this
        point."""

    @abstractmethod
    def copy_from_host(self, block: Block, offset: int, data: np.ndarray,
                       stream: Stream | None = None) -> None:
        """Copy the contiguous host array into the block at `offset`, in order on `stream`
        (None: at once). `data` may be changed as soon as this returns."""

    def record_stream(self, block: Block, stream: Stream) -> None:  # noqa: B027 - optional
        """Note that work queued on `stream` uses `block`, so that the block is not reused by
        another stream before that work is done (nothing to do where work is synchronous)."""

    def array_interface(self, block: Block, nbytes: int) -> dict[str, Any]:
        """numpy's `__array_interface__` for host-accessible memory; device memory is not."""
        raise TypeError(f"memory on {self.device} is not host-accessible; copy it to the CPU with "
                        "to_device('cpu') first")

    def allocate(self, nbytes: int) -> MemoryBuffer:
        """A `MemoryBuffer` of `nbytes` bytes on this allocator's device (for the device's
        current stream, where that matters)."""
        if type(nbytes) is not int or nbytes < 0:
            raise ValueError(f"nbytes must be a non-negative int, got {nbytes!r}")
        return MemoryBuffer(self.device, nbytes, self.malloc(nbytes), self)

    def stats(self) -> dict[str, int]:
        return {}

    def set_memory_limit(self, nbytes: int | None) -> None:
        """Keep this device's memory in use within `nbytes` bytes (caching allocators do)."""
        raise TypeError(f"the allocator of {self.device} ({type(self).__name__}) cannot limit "
                        "its memory; only caching allocators can")

    def empty_cache(self) -> None:  # noqa: B027 - a no-op unless the allocator caches
        """Release cached, unused memory back to the device (nothing to do without a cache)."""


MAX_BLOCK = 1 << 62  # the largest request (4 EiB)
_LARGEST = (1 << 63) - 1  # the largest byte count a C integer holds


def size_class(nbytes: int) -> int:
    """The rounded size a request of `nbytes` (0 to 2**62) is served with."""
    if nbytes < 0:
        raise ValueError(f"nbytes must be non-negative, got {nbytes}")
    if nbytes > MAX_BLOCK:
        raise OverflowError(f"nbytes must be at most 2**62, got {nbytes}")
    if nbytes <= 512:
        return max(64, (nbytes + 63) & ~63)
    step = 128  # then the largest power of two at most nbytes / 4 (compiled, a C loop)
    while step <= nbytes >> 3:
        step *= 2
    return (nbytes + step - 1) // step * step


def _exact_size(nbytes: int) -> int:
    """The size class of an allocator that does not round: the request itself (0 to 2**62)."""
    if not 0 <= nbytes <= MAX_BLOCK:
        raise ValueError(f"nbytes must be from 0 to 2**62, got {nbytes}")
    return nbytes


class _Guard:
    """The lock of an allocator's bookkeeping. A block freed on the thread that holds it (by a
    buffer's finalizer, which the garbage collector may run while the bookkeeping allocates) is
    not waited for, which would deadlock: it is handed to `free` once the holder is done."""

    __slots__ = ("_lock", "_owner", "_deferred", "_free")

    def __init__(self, free: Callable[[Block], None]) -> None:
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._deferred: list[Block] = []
        self._free = free

    def __enter__(self) -> None:
        self._lock.acquire()
        self._owner = threading.get_ident()

    def __exit__(self, *exc: object) -> None:
        self._owner = None
        self._lock.release()
        while self._deferred:
            self._free(self._deferred.pop())

    def defer(self, block: Block) -> bool:
        """True if the calling thread holds the lock: then `block` is freed when it lets go."""
        if self._owner == threading.get_ident():
            self._deferred.append(block)
            return True
        return False


_UNLOCKED = contextlib.nullcontext()


def _byte_count(value: int | None, name: str) -> int | None:
    """`value`, a bound in bytes named `name`: None or a non-negative int (not a bool)."""
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise TypeError(f"{name} must be None or an int number of bytes, got "
                        f"{type(value).__name__}")
    if value is not None and value < 0:
        raise ValueError(f"{name} must be None or >= 0 bytes")
    return value


def _note_allocated(allocator: _CachingAllocatorBase, size: int) -> None:
    """Count `size` more bytes in use, and the peaks (lock held)."""
    allocator._allocated += size
    allocator._peak_allocated = max(allocator._peak_allocated, allocator._allocated)
    allocator._peak_reserved = max(allocator._peak_reserved,
                                   allocator._allocated + allocator._cached)


class _CachingAllocatorBase:
    """Size-class free lists and statistics over `raw`. A miss calls the subclass's
    `_raw_malloc(size)`.

    The bookkeeping is thread-safe. Run interpreted, it takes a lock (`_lock`, a `_Guard`); run
    compiled, it calls no Python code between its reads and writes, so the GIL makes it atomic
    and `_lock` is None (subclasses whose bookkeeping does call Python code, as the stream-
    ordered allocator's does, set `_locked = True` to keep the lock). There is always a GIL in
    the compiled build: its modules do not declare free-threading support, so a free-threaded
    CPython turns the GIL back on when they load (hxarray_tests/test_hal_allocator.py keeps it
    so); the interpreted build needs the lock because it may run without one."""

    raw: Allocator
    device: Device
    _locked = not compiled(__file__)

    if TYPE_CHECKING:  # provided by the subclass (`_OverRaw`)
        def _raw_malloc(self, size: int) -> Block: ...
        def _over_limit(self, size: int) -> MemoryError: ...

    def __init__(self, raw: Allocator, max_cached_bytes: int | None = None) -> None:
        if getattr(self, "_free_lists", None) is not None:  # blocks in use point at it
            raise TypeError("a CachingAllocator is initialised once")
        self._memory_limit: int | None = None
        self._pending = 0  # bytes of raw requests under way, counted against the limit
        self.raw = raw
        self.device = raw.device
        self.max_cached_bytes = max_cached_bytes
        self._free_lists: dict[Any, list[Block]] = {}
        self._newest: Block | None = None  # the newest cached block, on no free list
        self._newest_size = -1
        self._lock: _Guard | None = _Guard(self.free) if self._locked else None
        self._allocated = self._cached = self._peak_allocated = self._peak_reserved = 0
        self._num_allocs = self._num_frees = self._cache_hits = 0
        self._num_raw_allocs = self._num_raw_frees = self._num_ooms = 0

    @property
    def max_cached_bytes(self) -> int | None:
        """The most memory the cache keeps (None: no bound): a freed block that would take it
        past the bound goes back to the device."""
        return None if self._cache_bound < 0 else self._cache_bound

    @max_cached_bytes.setter
    def max_cached_bytes(self, value: int | None) -> None:
        value = _byte_count(value, "max_cached_bytes")
        # (compiled, a C integer: beyond 2**63 - 1 bytes no cache reaches it anyway)
        self._cache_bound = -1 if value is None else min(value, _LARGEST)

    @property
    def memory_limit(self) -> int | None:
        """Live plus cached bytes never exceed this (None: no limit)."""
        return self._memory_limit

    @memory_limit.setter
    def memory_limit(self, value: int | None) -> None:
        self._memory_limit = _byte_count(value, "memory_limit")

    def _reserve(self, size: int) -> None:
        """Note a raw request of `size` bytes as pending, within the memory limit: over it, free
        the cache and check again; MemoryError (from `_over_limit`) if still over. Pending
        requests count against the limit, so concurrent ones stay within it."""
        limit = self._memory_limit
        if limit is not None:
            with self._lock or _UNLOCKED:
                over = self._allocated + self._cached + self._pending + size > limit
                if over:
                    self._num_ooms += 1
            if over:
                self.empty_cache()
        with self._lock or _UNLOCKED:
            over = limit is not None and \
                self._allocated + self._cached + self._pending + size > limit
            if not over:
                self._pending += size
        if over:
            raise self._over_limit(size)

    def _unreserve(self, size: int) -> None:
        with self._lock or _UNLOCKED:
            self._pending -= size

    def malloc(self, nbytes: int) -> Block:
        if nbytes > MAX_BLOCK:
            raise MemoryError(f"cannot allocate {nbytes} bytes on {self.device!r}: more than any "
                              "block (2**62 bytes)")
        return self._malloc(size_class(nbytes))

    def _malloc(self, size: int) -> Block:
        """A block of the size class `size`: a cached one, else a fresh one."""
        lock = self._lock
        if lock is None:
            cached = self._take(size)
        else:
            with lock:
                cached = self._take(size)
        if cached is not None:
            if observers:
                allocated(self, cached)
            return cached
        self._reserve(size)
        try:
            block = self._raw_malloc(size)
        finally:
            self._unreserve(size)
        with self._lock or _UNLOCKED:
            self._num_allocs += 1
            self._num_raw_allocs += 1
            _note_allocated(self, block.nbytes)  # a raw allocator may round up; `free` counts this
            block._owner = self
        if observers:
            allocated(self, block)
        return block

    def _take(self, size: int) -> Block | None:
        """A cached block of `size` bytes, now in use, or None (lock held): the newest one."""
        block = self._newest
        if block is not None and self._newest_size == size:
            self._newest = None
        else:
            free_list = self._free_lists.get(size)
            if not free_list:
                return None
            block = free_list[-1]
            del free_list[-1]  # (not pop(): emptying the list this way frees its storage at
            # once, where pop() shrinks it with realloc, twice as costly)
        self._num_allocs += 1
        self._cache_hits += 1
        self._cached -= size
        _note_allocated(self, size)
        block._owner = self
        return block

    def free(self, block: Block) -> None:
        if not isinstance(block, Block):
            raise TypeError(f"free() takes a Block, got {type(block).__name__}")
        lock = self._lock
        if lock is None:
            keep = self._give(block)
        elif lock.defer(block):
            return
        else:
            with lock:
                keep = self._give(block)
        if observers:
            freed(self, block)
        if not keep:
            self.raw.free(block)

    def _give(self, block: Block) -> bool:
        """Take `block` back: True if it stays in the cache, False if the caller must hand it
        to the raw allocator (lock held). Raises ValueError for a block that is not in use
        from this allocator (freeing twice would hand one block to two arrays)."""
        if block._owner is not self:
            raise ValueError(f"block at {block.address!r} is not in use from this allocator "
                             f"of {self.device!r}: it was freed already or allocated elsewhere")
        block._owner = None
        size = block._nbytes
        self._num_frees += 1
        self._allocated -= size
        if not self._keeps(size):
            self._num_raw_frees += 1
            return False
        self._cached += size
        # The newest cached block waits outside the free lists (`_newest`), so a loop that frees
        # a block and takes one of the same size does no list or dict work; the block it
        # replaces goes on its list (after the swap: appending may run a finalizer that frees).
        older, older_size = self._newest, self._newest_size
        self._newest, self._newest_size = block, size
        if older is not None:
            free_list = self._free_lists.get(older_size)
            if free_list is None:  # (setdefault: the new list's collection may run a finalizer
                free_list = self._free_lists.setdefault(older_size, [])  # that makes one)
            free_list.append(older)
        return True

    def _keeps(self, size: int) -> bool:
        """Whether a freed block of `size` bytes stays in the cache: within its bound, and not
        while memory is over the limit (one set below what was in use): then it goes back to
        the device (lock held)."""
        limit = self._memory_limit
        return (self._cache_bound < 0 or self._cached + size <= self._cache_bound) and \
            (limit is None or self._allocated + self._cached + size <= limit)

    def empty_cache(self) -> None:
        with self._lock or _UNLOCKED:
            blocks = [b for free_list in self._free_lists.values() for b in free_list]
            if self._newest is not None:
                blocks.append(self._newest)
            self._free_lists.clear()
            self._newest = None
            self._cached = 0
            self._num_raw_frees += len(blocks)
        for block in blocks:
            self.raw.free(block)

    def stats(self) -> dict[str, int]:
        with self._lock or _UNLOCKED:
            return {
                "allocated_bytes": self._allocated,
                "reserved_bytes": self._allocated + self._cached,
                "cached_bytes": self._cached,
                "peak_allocated_bytes": self._peak_allocated,
                "peak_reserved_bytes": self._peak_reserved,
                "num_allocs": self._num_allocs,
                "num_frees": self._num_frees,
                "cache_hits": self._cache_hits,
                "cache_misses": self._num_allocs - self._cache_hits,
                "num_raw_allocs": self._num_raw_allocs,
                "num_raw_frees": self._num_raw_frees,
                "num_ooms": self._num_ooms,
            }

    def reset_peak_stats(self) -> None:
        with self._lock or _UNLOCKED:
            self._peak_allocated = self._allocated
            self._peak_reserved = self._allocated + self._cached

    def _note_oom(self) -> None:
        with self._lock or _UNLOCKED:
            self._num_ooms += 1


def _cached_malloc(allocator: _CachingAllocatorBase, nbytes: int) -> Block:
    """`allocator.malloc(nbytes)` for the CPU's caching allocator (which does not override it),
    as a C function: how the compiled fast path (hxarray/backends/cpu/fastpath.py) allocates."""
    if nbytes > MAX_BLOCK:
        return allocator.malloc(nbytes)  # (which raises the error)
    return allocator._malloc(size_class(nbytes))


class _OverRaw:
    """What a caching allocator does through its raw allocator: fresh blocks (freeing the cache
    and retrying once when the device is out of memory), copies, host access."""

    raw: Allocator
    device: Device

    def set_memory_limit(self, nbytes: int | None) -> None:
        """Keep live plus cached memory within `nbytes` bytes (None: no limit): a request past
        it frees the cache and retries once, then raises MemoryError. A limit below what is
        held now frees the cache at once; live memory past it goes back to the device as it is
        freed."""
        self.memory_limit = nbytes
        if nbytes is not None and self.stats()["reserved_bytes"] > nbytes:
            self.empty_cache()
    if TYPE_CHECKING:  # from the caching base the class is combined with
        def _note_oom(self) -> None: ...
        def empty_cache(self) -> None: ...
        def stats(self) -> dict[str, int]: ...

    def _raw_malloc(self, size: int) -> Block:
        """A block of `size` bytes from the raw allocator; on `MemoryError`, free the cache and
        retry once."""
        try:
            return self._checked(self.raw.malloc(size), size)
        except MemoryError:
            self._note_oom()
        self.empty_cache()
        try:
            return self._checked(self.raw.malloc(size), size)
        except MemoryError as exc:
            raise MemoryError(
                f"out of memory on {self.device}: could not allocate {size} bytes even after "
                f"freeing the cache ({exc}); allocator stats: {self.stats()}") from None

    def _checked(self, block: Any, size: int) -> Block:
        if not isinstance(block, Block) or block.nbytes < size:
            raise TypeError(f"the raw allocator of {self.device} returned {block!r} for a "
                            f"request of {size} bytes; expected a Block of at least that size")
        return block

    def _over_limit(self, size: int) -> MemoryError:
        """The error of a request of `size` bytes past the memory limit (cache already freed)."""
        stats = self.stats()
        return MemoryError(
            f"out of memory on {self.device}: {size} bytes requested with "
            f"{stats['allocated_bytes']} in use would exceed its memory limit of "
            f"{self.memory_limit} bytes (hxarray.set_memory_limit), even after freeing the "
            f"cache; allocator stats: {stats}")

    def copy_to_host(self, block: Block, offset: int, out: np.ndarray,
                     stream: Stream | None = None) -> None:
        self.raw.copy_to_host(block, offset, out, stream)

    def copy_from_host(self, block: Block, offset: int, data: np.ndarray,
                       stream: Stream | None = None) -> None:
        self.raw.copy_from_host(block, offset, data, stream)

    def array_interface(self, block: Block, nbytes: int) -> dict[str, Any]:
        return self.raw.array_interface(block, nbytes)


class CachingAllocator(_OverRaw, _CachingAllocatorBase, Allocator):
    """Wraps a raw allocator with size-class free lists, statistics and an OOM retry, for devices
    whose work is complete when an operation returns (the CPU): a freed block is reusable at
    once.

    Thread-safe. `max_cached_bytes` bounds the memory kept in the cache: a freed block that would
    exceed it goes straight back to the raw allocator.
    """


def _marker(stream: Stream) -> Event | Stream:
    """What completes once the work queued on `stream` so far has: an event recorded now, or the
    stream itself where it takes no more work (the CUDA simulator's streams are closed at exit,
    while finalizers may still free blocks they used)."""
    try:
        return stream.record_event()
    except Exception:  # noqa: BLE001 - a stream that refuses work has none left to queue
        return stream


class StreamOrderedAllocator(_OverRaw, _CachingAllocatorBase, Allocator):
    """A caching allocator for devices whose work runs asynchronously on streams (after the
    stream-aware caching allocators of PyTorch and CuPy).

    A block is allocated *for a stream* (the device's current one) and, when freed, goes back to
    that stream's free list: work on one stream runs in order, so the block can be reused there
    at once even if queued work still reads it. Another stream gets it only once its stream has
    no work queued (`Stream.query()`), and a block that other streams used (`record_stream`) is
    held back until events recorded on those streams at free time have completed. Blocks go back
    to the raw allocator only when no queued work can touch them: `empty_cache` and the
    out-of-memory retry wait for the streams first, and the `max_cached_bytes` bound trims only
    blocks of idle streams. Every `SWEEP_EVERY` frees, the cached blocks of idle streams move to
    a pool any stream takes from, so the allocator holds no stream the program has dropped (nor
    its worker thread).

    `exact=True` serves every request with a block of exactly its size (no size classes), for
    raw allocators that put a guard right after each block (a debugging mode).
    """

    SWEEP_EVERY = 256
    _locked = True  # its bookkeeping asks streams whether they are idle: Python code
    _lock: _Guard

    def __init__(self, raw: Allocator, max_cached_bytes: int | None = None, *,
                 exact: bool = False) -> None:
        super().__init__(raw, max_cached_bytes)
        self._size_class = _exact_size if exact else size_class
        self._home: dict[int, Stream] = {}  # live block address -> the stream it was made for
        self._users: dict[int, set[Stream]] = {}  # live block address -> other streams using it
        self._held: list[tuple[Block, Stream, list[Event | Stream]]] = []  # freed, used elsewhere
        self._unswept = 0  # frees since the last sweep

    def malloc(self, nbytes: int, stream: Stream | None = None) -> Block:
        stream = stream or current_stream(self.device)
        size = self._size_class(nbytes)
        limit = self._memory_limit
        if limit is not None and self._cached and self._allocated + self._cached > limit:
            self.empty_cache()  # blocks freed over the limit while queued work still used them
        with self._lock:
            if self._held:
                self._release_held()
            cached = self._reusable(stream, size)
            if cached is not None:
                self._num_allocs += 1
                self._cache_hits += 1
                self._cached -= size
                _note_allocated(self, size)
                self._home[cached.address] = stream
            else:
                idle = self._trim()
        if cached is not None:
            if observers:
                allocated(self, cached)
            return cached
        for old in idle:
            self.raw.free(old)
        self._reserve(size)
        try:
            block = self._raw_malloc(size)
        finally:
            self._unreserve(size)
        with self._lock:
            self._num_allocs += 1
            self._num_raw_allocs += 1
            _note_allocated(self, block.nbytes)
            self._home[block.address] = stream
        if observers:
            allocated(self, block)
        return block

    def _reusable(self, stream: Stream, size: int) -> Block | None:
        """A cached block of `size` for `stream`: one freed on it, else one of the idle pool
        (key None), else one from a stream that has no work queued (lock held)."""
        for key in (stream, None):
            own = self._free_lists.get((key, size))
            if own:
                return own.pop()
        for (other, other_size), blocks in self._free_lists.items():
            if other_size == size and blocks and other.query():
                return blocks.pop()
        return None

    def _sweep(self) -> None:
        """Move the cached blocks of idle streams to the idle pool and forget those streams
        (lock held)."""
        for key in [k for k in self._free_lists if k[0] is not None]:
            stream, size = key
            if not self._free_lists[key]:
                del self._free_lists[key]
            elif stream.query():
                self._free_lists.setdefault((None, size), []).extend(self._free_lists.pop(key))
        self._unswept = 0

    def _trim(self) -> list[Block]:
        """Cached blocks of idle streams taken out until the cache is within its bound, for the
        caller to free outside the lock (lock held)."""
        taken: list[Block] = []
        limit = self.max_cached_bytes
        if limit is None or self._cached <= limit:
            return taken
        for (stream, _), blocks in self._free_lists.items():
            while blocks and self._cached > limit and (stream is None or stream.query()):
                block = blocks.pop()
                self._cached -= block.nbytes
                self._num_raw_frees += 1
                taken.append(block)
        return taken

    def free(self, block: Block) -> None:
        size = block.nbytes
        if self._lock.defer(block):
            return
        with self._lock:
            home = self._home.pop(block.address, None)
            if home is None:
                raise ValueError(f"block at {block.address:#x} is not in use on {self.device}: "
                                 "it was freed already or never allocated here")
            self._num_frees += 1
            self._allocated -= size
            users = self._users.pop(block.address, None)
            limit = self._memory_limit
            release = limit is not None and self._allocated + self._cached + size > limit \
                and not users and home.query()  # over the limit, and no queued work uses it
            if release:
                self._num_raw_frees += 1
            else:
                self._cached += size
                if not users:
                    self._free_lists.setdefault((home, size), []).append(block)
            self._unswept += 1
            if self._unswept >= self.SWEEP_EVERY:
                self._sweep()
        if users:  # held back until the other streams' work is done: recorded outside the lock,
            # as queuing may run a finalizer that frees into this allocator (the block is in no
            # list meanwhile, so nothing takes it)
            markers = [_marker(s) for s in users]
            with self._lock:
                self._held.append((block, home, markers))
        if observers:
            freed(self, block)
        if release:
            self.raw.free(block)

    def record_stream(self, block: Block, stream: Stream) -> None:
        if self._home.get(block.address) is stream:  # (a live block's home never changes)
            return
        with self._lock:
            home = self._home.get(block.address)
            if home is not None and home is not stream:
                self._users.setdefault(block.address, set()).add(stream)

    def _release_held(self) -> None:
        """Move held blocks whose events have all completed to their stream's free list (lock
        held)."""
        still = []
        for block, home, events in self._held:
            if all(event.query() for event in events):
                self._free_lists.setdefault((home, block.nbytes), []).append(block)
            else:
                still.append((block, home, events))
        self._held = still

    def empty_cache(self) -> None:
        """Wait for the streams whose cached blocks queued work may still touch, then give every
        cached block back to the raw allocator."""
        with self._lock:
            streams = {home for home, _ in self._free_lists if home is not None} | \
                {home for _, home, _ in self._held}
            events = [event for _, _, held in self._held for event in held]
        for stream in streams:
            stream.synchronize()
        for event in events:
            event.synchronize()
        with self._lock:
            self._release_held()
            blocks = []
            for (stream, _), free_list in self._free_lists.items():
                if stream is None or stream.query():  # (work queued since keeps its blocks)
                    blocks.extend(free_list)
                    free_list.clear()
            self._cached -= sum(b.nbytes for b in blocks)
            self._num_raw_frees += len(blocks)
            self._sweep()  # forget the streams whose lists are now empty
        for block in blocks:
            self.raw.free(block)
