"""Multi-threaded execution of numpy kernels on large arrays.

numpy releases the GIL inside its loops, so chunks of one large operation run truly in parallel.
Chunking is deterministic: chunk boundaries depend only on the shape, the thread count and (for a
sort) the values, never on timing, so results are reproducible. Handing a chunk to a worker thread
costs tens to hundreds of microseconds (docs/performance.md has a measurement), so only
operations long enough to repay it are split (`Thresholds`, which the CPU backend holds and
checks before calling in here).

The thread count comes from `HXARRAY_NUM_THREADS`, else the CPUs this process may use; `threads(n)`
changes it for a block, in the calling thread (or asyncio task) only: it is a context variable.
Chunks run on one shared pool that grows to the largest count asked for and is never shut down, so
blocks in many threads at once never disturb each other.

`threads(n)` also caps the BLAS threads of hxarray's own BLAS calls (matmul, linalg) made in the
block. BLAS libraries (OpenBLAS, as numpy ships it) keep one process-wide thread count, so a
per-thread limit cannot exist; instead each such call applies its limit through threadpoolctl just
around the call and restores the previous count after it (`blas_limits`). Calls that want another
count wait meanwhile, so no hxarray call ever runs under another call's limit, and nothing is left
changed after a call. BLAS calls made by other code while an hxarray call under a limit runs see
that limit.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, NamedTuple

import numpy as np

from ..._ops import OPS, Op
from ...hal.settings import MAX_THREADS, NUM_THREADS


class Thresholds(NamedTuple):
    """Element counts from which an operation is split over threads."""

    compute_bound: int = 1 << 18  # transcendental functions and other compute-bound kernels
    memory_bound: int = 1 << 21  # the other element-wise kernels
    reduction: int = 1 << 21
    sort: int = 1 << 17

    def elementwise_limits(self) -> dict[Op, int]:
        """Each element-wise operation's element count from which it is split over threads:
        `compute_bound` for the compute-bound ones (`Op.heavy`), `memory_bound` for the others.
        The CPU backend's general path and its compiled fast path both read this table."""
        return {op: self.compute_bound if op.heavy else self.memory_bound for op in OPS.values()}


def _count(value: Any, where: str) -> int:
    """A thread count: an int from 1 to MAX_THREADS (TypeError for other types)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{where} must be an int, got {type(value).__name__}")
    if not 1 <= value <= MAX_THREADS:
        raise ValueError(f"{where} must be a positive integer of at most {MAX_THREADS}, got "
                         f"{value}")
    return value


_process_threads = NUM_THREADS.get()  # set_num_threads; a threads() block overrides it
_process_blas_threads: int | None = None  # set_num_threads' BLAS limit (None: the libraries')
_threads: contextvars.ContextVar[int] = contextvars.ContextVar("hxarray_threads")
_blas_threads: contextvars.ContextVar[int | None] = contextvars.ContextVar("hxarray_blas_threads")
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def get_num_threads() -> int:
    """How many threads a large CPU operation uses here."""
    return _threads.get(_process_threads)


def set_num_threads(count: int) -> None:
    """Use `count` threads for CPU operations, and at most `count` BLAS threads in hxarray's BLAS
    calls, from now on in every thread of the process outside a `threads()` block (hxarray.dask
    sets it on workers)."""
    global _process_threads, _process_blas_threads
    _process_threads = _process_blas_threads = _count(count, "set_num_threads(): count")


@contextlib.contextmanager
def threads(count: int) -> Iterator[int]:
    """Use `count` threads for CPU operations, and at most `count` BLAS threads in hxarray's BLAS
    calls, in this block of the calling thread or task."""
    count = _count(count, "threads(): count")
    token, blas = _threads.set(count), _blas_threads.set(count)
    try:
        yield count
    finally:
        _blas_threads.reset(blas)
        _threads.reset(token)


def _executor() -> ThreadPoolExecutor:
    """The shared pool: it starts threads as work needs them (up to MAX_THREADS), reuses idle
    ones, and is never shut down while the process runs."""
    global _pool
    pool = _pool
    if pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max_workers=MAX_THREADS,
                                           thread_name_prefix="hxarray-cpu")
            pool = _pool
    return pool


def _forget_pool() -> None:
    """In a forked child: the parent's pool threads do not exist here."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


class _BlasLimits:
    """The process-wide BLAS thread count, shared out between concurrent calls: calls that want
    the same count (None: the libraries' own) run together; one that wants another waits until
    they are done, then sets its count, and the last call out restores the count found before.
    While a call waits, new arrivals wait for the next phase too, so none waits forever."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # taken directly: a Condition's `with` is Python code
        self._cond = threading.Condition(self._lock)
        self._applied: int | None = None  # the count set now (None: the libraries' own)
        self._users = 0
        self._waiting = 0
        self._phase = 0  # counts the times the users ran out
        self._libraries: list[Any] | None = None  # threadpoolctl's BLAS controllers
        self._saved: list[int] = []

    def __enter__(self) -> None:
        """Enter a BLAS call with the calling context's limit (`threads()`, else
        `set_num_threads`), or none: `with blas_limits:` (a class, not a generator: this sits on
        every matmul's path)."""
        want = _blas_threads.get(_process_blas_threads)
        with self._lock:
            if self._users and (self._applied != want or self._waiting):
                # wait for a later phase (all current users gone) that runs this count
                phase = self._phase
                self._waiting += 1
                try:
                    while self._users and (self._applied != want or self._phase == phase):
                        self._cond.wait()
                finally:
                    self._waiting -= 1
            if self._applied != want:
                self._apply(want)
            self._users += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._users -= 1
            if not self._users:
                self._phase += 1
                if self._applied is not None:
                    self._apply(None)
                if self._waiting:
                    self._cond.notify_all()

    def _apply(self, count: int | None) -> None:
        """Set the BLAS libraries to `count` threads (None: back to the saved counts)."""
        libraries = self._find()
        if count is not None and self._applied is None:
            self._saved = [library.get_num_threads() for library in libraries]
        for library, saved in zip(libraries, self._saved):
            # A library already at the count is left alone: setting OpenBLAS's count costs far
            # more than reading it, even to the same value.
            if (saved if self._applied is None else self._applied) == \
                    (saved if count is None else count):
                continue
            # threadpoolctl lets one Python thread at a time set OpenBLAS's count and ignores
            # the others; this class already orders them, so each set takes control first.
            release = getattr(type(library), "clear_controlling_thread", None)
            if release is not None:
                release(force=True)
            library.set_num_threads(saved if count is None else count)
            if release is not None:
                release(force=True)
        self._applied = count

    def _find(self) -> list[Any]:
        if self._libraries is None:
            try:
                from threadpoolctl import ThreadpoolController
            except ImportError:  # pragma: no cover - threadpoolctl is a dependency
                self._libraries = []
            else:
                self._libraries = list(ThreadpoolController().select(
                    user_api="blas").lib_controllers)
        return self._libraries


blas_limits = _BlasLimits()


def run_chunks(task: Callable[[int, int], Any], length: int, count: int) -> list[Any]:
    """Run `task(start, stop)` over `count` equal slices of range(length): slices 1.. on the pool
    (in copies of the caller's context, so numpy's error state carries over), slice 0 on the
    calling thread. Returns the results in slice order. Every slice has finished
    before this returns or raises (the first error is re-raised)."""
    bounds = [length * i // count for i in range(count + 1)]
    executor = _executor()
    futures = [executor.submit(contextvars.copy_context().run, task, bounds[i], bounds[i + 1])
               for i in range(1, count)]
    try:  # each result in turn: wait() would add a wake-up, about 4% of a 1e7-element sum
        results = [task(bounds[0], bounds[1])]
        results.extend(f.result() for f in futures)
    except BaseException:
        wait(futures)
        raise
    return results


def _independent(handles: Sequence[Any], out: np.ndarray) -> bool:
    """True if no input overlaps `out` except as exactly the same view (which is chunk-safe)."""
    for h in handles:
        if isinstance(h, np.ndarray) and np.may_share_memory(h, out):
            same = (h.__array_interface__["data"][0] == out.__array_interface__["data"][0]
                    and h.strides == out.strides and h.shape == out.shape)
            if not same:
                return False
    return True


def elementwise(kernel: Callable[..., None], handles: Sequence[Any], out: np.ndarray) -> None:
    """`kernel(*handles, out=out)`, split along the output's first long-enough axis (the caller
    has checked that the output is large enough for the kernel's cost)."""
    count = _threads.get(_process_threads)
    if count < 2 or not _independent(handles, out):
        kernel(*handles, out=out)
        return
    axis = next((i for i, n in enumerate(out.shape) if n >= count), None)
    if axis is None:
        kernel(*handles, out=out)
        return
    shape = out.shape
    inputs = [np.broadcast_to(h, shape) if isinstance(h, np.ndarray) else h for h in handles]
    lead = (slice(None),) * axis

    def chunk(start: int, stop: int) -> None:
        key = (*lead, slice(start, stop))
        kernel(*(h[key] if isinstance(h, np.ndarray) else h for h in inputs), out=out[key])

    run_chunks(chunk, shape[axis], count)


def reduction_partials(reduce: Callable[[np.ndarray, np.ndarray], None], x: np.ndarray,
                       dtype: np.dtype) -> np.ndarray | None:
    """`reduce(chunk, into)` of equal chunks of a C-contiguous `x` (flattened) in parallel, each
    into its element (a 0-D view) of the returned array of partial results; None where that does
    not apply (the caller then reduces on one thread). The caller has checked that `x` is large
    enough."""
    count = _threads.get(_process_threads)
    if count < 2 or not x.flags.c_contiguous:
        return None
    flat, size = x.reshape(-1), x.size
    partials = np.empty(count, dtype)
    run_chunks(lambda i, _: reduce(flat[size * i // count:size * (i + 1) // count],
                                   partials[i, ...]), count, count)
    return partials


def split_reduction(reduce: Callable[[np.ndarray, np.ndarray], None], x: np.ndarray,
                    axis: tuple[int, ...], keepdims: bool, out: np.ndarray) -> bool:
    """`reduce(part, into)` in parallel over slices of `x` along its first kept axis (not in
    `axis`) long enough to split, each writing its slice of `out`; False if there is none (the
    caller then reduces on one thread). Each output element is reduced exactly as without the
    split. The caller has checked that `x` is large enough."""
    count = _threads.get(_process_threads)
    kept = next((i for i, n in enumerate(x.shape) if n >= count and i not in axis), None)
    if count < 2 or kept is None:
        return False
    position = kept if keepdims else kept - sum(1 for a in axis if a < kept)

    def chunk(start: int, stop: int) -> None:
        part = slice(start, stop)
        reduce(x[(slice(None),) * kept + (part,)], out[(slice(None),) * position + (part,)])

    run_chunks(chunk, x.shape[kept], count)
    return True


_SAMPLE = 1024  # about how many regularly spaced elements choose the pivots of a parallel sort


def sort(x: np.ndarray, out: np.ndarray, axis: int) -> bool:
    """`x` sorted along `axis` into `out` (same shape, C-contiguous) on the thread pool, or False
    (out untouched) where that does not apply. Many rows: each thread sorts whole rows, as one
    thread would. One row: a sample sort, exact as well, since a value sort's result does not
    depend on the order it is reached in. The caller has checked that `x` is large enough."""
    count = _threads.get(_process_threads)
    if count < 2:
        return False
    other = next((i for i, n in enumerate(x.shape) if i != axis and n >= count), None)
    if other is not None:
        def rows(start: int, stop: int) -> None:
            key = (slice(None),) * other + (slice(start, stop),)
            part = out[key]
            part[...] = x[key]
            part.sort(axis=axis)

        run_chunks(rows, x.shape[other], count)
        return True
    if x.size != x.shape[axis]:
        return False
    return _sample_sort(x.reshape(-1), out.reshape(-1), count)


def _sample_sort(x: np.ndarray, out: np.ndarray, count: int) -> bool:
    """Sort the 1-D `x` into `out` as `count` value ranges split at pivots taken from a regular
    sample, each step on all threads: each thread counts its own slice of `x`'s elements per
    range, then moves each of them to its range's place in `out` (compiled passes:
    `fused.partition_loops`), then each thread sorts one range in place (NaN, which sorts last,
    is in the last). Every element is read twice and written once before the sorts, all in
    parallel. False (out untouched) where the ranges come out too uneven to pay (e.g. few
    distinct values), where the passes cannot be compiled here, or where the machine is already
    busy (its load average at least the CPUs this process may use): threads would then only
    add the partition to numpy's own sort."""
    if machine_busy():
        return False
    from .fused import partition_loops

    loops = partition_loops(x.dtype)
    if loops is None:
        return False
    count_loop, scatter_loop = loops
    sample = np.sort(x[::max(1, x.size // _SAMPLE)])
    pivots = np.ascontiguousarray(sample[[sample.size * i // count for i in range(1, count)]])
    if np.any(pivots != pivots):  # NaN pivots (most of the sample) do not split
        return False
    size, stride, k = x.size, x.strides[0], count - 1
    bounds = [size * c // count for c in range(count + 1)]
    base, at_pivots = x.ctypes.data, pivots.ctypes.data
    counts = np.zeros((count, count), np.int64)  # [slice, value range]
    run_chunks(lambda c, _: count_loop(base + bounds[c] * stride, bounds[c + 1] - bounds[c],
                                       stride, at_pivots, k, counts[c].ctypes.data),
               count, count)
    totals = counts.sum(axis=0)
    if totals.max() > size * 3 // (2 * count):
        return False
    starts = np.concatenate(([0], np.cumsum(totals)))
    at = starts[:-1] + np.cumsum(counts, axis=0) - counts  # [slice, range] -> next place
    run_chunks(lambda c, _: scatter_loop(base + bounds[c] * stride, bounds[c + 1] - bounds[c],
                                         stride, at_pivots, k, out.ctypes.data,
                                         at[c].ctypes.data),
               count, count)
    run_chunks(lambda r, _: out[int(starts[r]):int(starts[r + 1])].sort(), count, count)
    return True


def machine_busy() -> bool:
    """Whether other work already fills the CPUs this process may use, so that threads would
    wait for each other's turn: the threads runnable right now besides the caller fill at least
    half of them (another process holding one of two CPUs; read twice, so that a thread the
    kernel ran for an instant does not count), or the load average over the last minute fills
    them all. Both are the kernel's figures for the whole machine (`_kernel_load`)."""
    cpus = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else os.cpu_count()) or 1
    load, others = _kernel_load()
    if 2 * others >= cpus:
        others = min(others, _kernel_load()[1])
    return 2 * others >= cpus or load >= cpus


_loadavg: list[int] = []  # /proc/loadavg's descriptor, opened once (-1: none here)


def _kernel_load() -> tuple[float, int]:
    """(load average over the last minute, threads runnable right now besides the caller) from
    /proc/loadavg (each read at offset 0 is a fresh one); where that file cannot be read, the
    load average alone (0 where there is none either, as on Windows) and 0."""
    if not _loadavg:
        try:
            _loadavg.append(os.open("/proc/loadavg", os.O_RDONLY))
        except OSError:
            _loadavg.append(-1)
    try:
        if _loadavg[0] >= 0:
            fields = os.pread(_loadavg[0], 128, 0).split()
            return float(fields[0]), max(0, int(fields[3].split(b"/")[0]) - 1)
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.getloadavg()[0], 0
    except (OSError, AttributeError):
        return 0.0, 0
