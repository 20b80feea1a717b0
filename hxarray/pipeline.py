"""Overlapped transfer and compute: `pipeline` (double or triple buffering) and `prefetch`.

`for y in xp.pipeline(batches, stage, device="cuda:0", depth=2):` runs `stage` on each batch on
the device and yields the results, in order, on the host. Three streams of the device carry
the work, ordered by events, so that while batch N is computed, batch N+1 is uploaded and batch
N-1 downloaded:

    upload stream    | up 0 | up 1 | up 2 | up 3 |
    compute stream          | f(0) | f(1) | f(2) | f(3) |
    download stream                | dn 0 | dn 1 | dn 2 | dn 3 |

- **Bounded memory**: `depth` input buffers on the device, allocated at the first batch (and
  again only when a batch's shapes change), reused round-robin; an upload into a buffer waits,
  on the device, for every stream that last read it: the compute, and the download too when a
  result downloaded is (a view of) the input. At most `depth` results are in flight.
- **Results never change**: a result left on the device (`out=None`) that is an input buffer
  or a view of one takes that buffer out of the round-robin (the next batch of its slot gets a
  fresh one), so later batches never overwrite it. Costs: such a stage allocates one input
  buffer per batch; with `out="cpu"` its next upload into the slot waits for the download
  (at depth 2 the upload then no longer overlaps the previous compute; depth 3 restores it).
  The arrays the stage gets are the pipeline's buffers: a reference the stage keeps elsewhere
  (not in its result) sees later batches.
- **Order** is the batches' order. **Errors**: the first error, from the batches' iterator, the
  stage (raised on the host) or queued device work (a failed kernel), is raised once the results
  before it have been yielded; nothing after it is.
- On a device whose work is synchronous (the CPU) the same code runs without overlap.

`xp.prefetch(batches, device, depth=2)` is the loader half: it uploads up to `depth` batches
ahead on a stream of its own and yields device arrays that the consumer's stream waits for.

Batches are host arrays (numpy, hxarray CPU arrays, anything `numpy.asarray` takes) or tuples
or lists of them; the stage gets device arrays in the same structure, and returns an array or a
tuple or list of arrays.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from . import _views
from ._array import Array
from ._creation import check_unmasked
from ._dtypes import FROM_NUMPY
from .hal.device import Device, DeviceType, default_device
from .hal.stream import Event, Stream, current_stream

__all__ = ["pipeline", "prefetch"]


def _leaves(batch: Any, function: str) -> tuple[list[np.ndarray], bool]:
    """The host arrays of a batch (one, or a tuple/list of them) and whether it was one."""
    single = not isinstance(batch, (tuple, list))
    items = [batch] if single else list(batch)
    leaves = []
    for item in items:
        check_unmasked(item, function)
        host = np.ascontiguousarray(np.asarray(item))
        if host.dtype not in FROM_NUMPY:
            raise TypeError(f"a batch holds an array of numpy dtype {host.dtype}, which hxarray "
                            "does not support")
        leaves.append(host)
    return leaves, single


def _check(event: Event) -> None:
    """Wait for `event` and raise the error of work queued before it, if any."""
    event.synchronize()  # a CUDA driver raises a failed kernel's error here
    error = getattr(event, "error", None)  # a HostStream's event carries it
    if error is not None:
        raise RuntimeError(f"work queued on {event.device} before this batch's event "
                           "failed") from error


def _upload(leaves: list[np.ndarray], targets: list[Array] | None, device: Device,
            stream: Stream) -> list[Array]:
    """Copy `leaves` into `targets` (device arrays of the same shapes and dtypes; new ones when
    None or different), in order on `stream`."""
    backend = device.backend
    adopted = [backend.adopt(h) for h in leaves]  # the CPU uses host memory in place
    if all(a is not None for a in adopted):
        return adopted  # type: ignore[return-value]
    if targets is None or [(t.shape, t.dtype.numpy) for t in targets] != \
            [(h.shape, h.dtype) for h in leaves]:
        with stream:
            targets = [backend.empty(h.shape, FROM_NUMPY[h.dtype], device) for h in leaves]
    for host, target in zip(leaves, targets):
        if host.nbytes:
            buffer = target._buffer
            buffer.allocator.copy_from_host(buffer.block, target._offset, host, stream)
    return targets


class _Download:
    """The host copies of one batch's results, queued on the download stream."""

    def __init__(self, results: Any, out: Device | None, compute: Stream, download: Stream,
                 computed: Event) -> None:
        """Queue the copies of `results` (computed once `computed` completes) to `out`."""
        self.single = not isinstance(results, (tuple, list))
        self.kind = type(results)
        arrays = [results] if self.single else list(results)
        for a in arrays:
            if a.__class__ is not Array:
                raise TypeError(f"the stage returned {type(a).__name__}; it must return an "
                                "hxarray array, or a tuple or list of them")
        self.host: list[Array] = arrays
        self.downloaded: list[Array] = []  # the device arrays the download stream reads
        self.computed = self.done = computed
        if out is None or out is compute.device:
            return
        if not all(_views.is_contiguous(a) for a in arrays):  # copies on the compute stream
            with compute:
                arrays = [a if _views.is_contiguous(a) else a._buffer.device.backend.copy(a)
                          for a in arrays]
            self.computed = compute.record_event()
        download.wait_event(self.computed)
        self.host = []
        for a in arrays:
            host = out.backend.empty(a._shape, a._dtype, out)
            if a.size:
                buffer = a._buffer
                buffer.allocator.record_stream(buffer.block, download)
                buffer.allocator.copy_to_host(buffer.block, a._offset, np.asarray(host),
                                              download)
            self.host.append(host)
        self.downloaded = arrays  # (alive until the copies are done)
        self.done = download.record_event()

    def result(self) -> Any:
        _check(self.computed)
        _check(self.done)
        if self.single:
            return self.host[0]
        return self.kind(self.host)


def pipeline(batches: Iterable[Any], stage: Callable[..., Any], *,
             device: Device | str | None = None, depth: int = 2,
             out: Device | str | None = "cpu") -> Iterator[Any]:
    """Yield `stage(batch)` for each host batch, computed on `device` (default: the default
    device) with upload, compute and download overlapped on three streams, `depth` (1, 2 or 3:
    sequential, double or triple buffering) batches in flight. Results come back to `out`
    ("cpu": hxarray CPU arrays; None: left on the device, ready). See the module docstring."""
    target = default_device() if device is None else Device(device)
    if depth.__class__ is not int or not 1 <= depth <= 8:
        raise ValueError(f"depth must be an int from 1 to 8, got {depth!r}")
    if not callable(stage):
        raise TypeError(f"stage must be callable, got {type(stage).__name__}")
    home = None if out is None else Device(out)
    if home is not None and home is not target and home.type is not DeviceType.CPU:
        raise ValueError(f"out must be 'cpu', the compute device ({target}) or None, got {home}")
    target.backend  # noqa: B018 - fail now, with the reason, if the device cannot be used
    return _run(iter(batches), stage, target, depth, home)


def _run(batches: Iterator[Any], stage: Callable[..., Any], device: Device, depth: int,
         out: Device | None) -> Iterator[Any]:
    backend = device.backend
    upload, compute, download = (backend.create_stream(device) for _ in range(3))
    buffers: list[list[Array] | None] = [None] * depth
    read: list[Event | None] = [None] * depth  # the last read of each slot's buffers
    staged: collections.deque[tuple[int, list[Array], bool, Event]] = collections.deque()
    flight: collections.deque[_Download] = collections.deque()
    failures: list[BaseException] = []  # the stage's error, then the batches' iterator's
    count = 0
    exhausted = False

    def stage_next() -> None:
        """Upload the next batch into the next buffer (after the compute that read it)."""
        nonlocal count, exhausted
        try:
            batch = next(batches, _END)
            if batch is _END:
                exhausted = True
                return
            leaves, single = _leaves(batch, "pipeline")
            slot = count % depth
            previous = read[slot]
            if previous is not None:
                upload.wait_event(previous)
            inputs = buffers[slot] = _upload(leaves, buffers[slot], device, upload)
        except Exception as exc:  # raised after the results of the batches before it
            exhausted = True
            failures.append(exc)
            return
        staged.append((slot, inputs, single, upload.record_event()))
        count += 1

    try:
        for _ in range(max(depth - 1, 1)):
            if not exhausted:
                stage_next()
        while staged:
            slot, inputs, single, uploaded = staged.popleft()
            if depth > 1 and not exhausted:
                stage_next()  # batch N+1 goes up while batch N is computed
            compute.wait_event(uploaded)
            try:
                with compute:
                    results = stage(inputs[0]) if single else stage(*inputs)
                flight.append(_Download(results, out, compute, download,
                                        compute.record_event()))
                read[slot] = flight[-1].computed  # the compute stream's last read of the slot
                _retire_aliased(flight[-1], buffers, read)
            except Exception as exc:
                failures.insert(0, exc)
                break
            del results
            if not staged and not exhausted:
                stage_next()  # one buffer: the next upload waits for this compute's read
            while len(flight) >= depth:
                yield flight.popleft().result()
        while flight:
            yield flight.popleft().result()
        if failures:
            raise failures[0]
    finally:
        for stream in (upload, compute, download):
            try:
                stream.synchronize()
            except Exception:  # noqa: S110 - already raised, or superseded by the first error
                pass


_END = object()


def _retire_aliased(batch: _Download, buffers: list[list[Array] | None],
                    read: list[Event | None]) -> None:
    """Keep `batch`'s results from being overwritten by later uploads: a slot whose buffer a
    yielded device result shares leaves the round-robin (its next batch gets a fresh buffer); a
    slot whose buffer the download stream reads is reused only after that download."""
    kept_ids = {id(a._buffer) for a in batch.host}  # what is yielded (downloads: new memory)
    read_ids = {id(a._buffer) for a in batch.downloaded}
    for slot, inputs in enumerate(buffers):
        ids = {id(i._buffer) for i in inputs or ()}
        if ids & kept_ids:
            buffers[slot] = read[slot] = None
        elif ids & read_ids:
            read[slot] = batch.done


def prefetch(batches: Iterable[Any], device: Device | str | None = None,
             depth: int = 2) -> Iterator[Any]:
    """Yield each host batch as device arrays (the batch's structure), uploaded up to `depth`
    batches ahead on a stream of their own; the current stream of the device waits for each
    upload before the batch is yielded, so using it right away is safe."""
    target = default_device() if device is None else Device(device)
    if depth.__class__ is not int or not 1 <= depth <= 16:
        raise ValueError(f"depth must be an int from 1 to 16, got {depth!r}")
    target.backend  # noqa: B018 - fail now if the device cannot be used
    return _prefetch(iter(batches), target, depth)


def _prefetch(batches: Iterator[Any], device: Device, depth: int) -> Iterator[Any]:
    upload = device.backend.create_stream(device)
    ahead: collections.deque[tuple[list[Array], bool, Event]] = collections.deque()
    try:
        while True:
            while len(ahead) < depth:
                batch = next(batches, _END)
                if batch is _END:
                    break
                leaves, single = _leaves(batch, "prefetch")
                arrays = _upload(leaves, None, device, upload)
                ahead.append((arrays, single, upload.record_event()))
            if not ahead:
                return
            arrays, single, uploaded = ahead.popleft()
            _check(uploaded)
            current_stream(device).wait_event(uploaded)
            yield arrays[0] if single else tuple(arrays)
    finally:
        try:
            upload.synchronize()
        except Exception:  # noqa: S110 - raised already where it mattered
            pass
