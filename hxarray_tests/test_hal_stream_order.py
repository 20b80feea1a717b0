"""Stream-ordered memory on a device whose work really runs asynchronously (the reference backend,
device type 'ref'): operations queue on the current stream, and the caching allocator never hands
a block to one stream while queued work on another may still read it."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator

import numpy as np
import pytest

import hxarray as xp
from hxarray.hal import Allocator, Block, Device, HostStream, Stream, StreamOrderedAllocator

REF = next((d for d in xp.__array_namespace_info__().devices() if d.type.name == "ref"), None)
pytestmark = pytest.mark.skipif(REF is None, reason="needs the reference backend plug-in "
                                "(pip install -e hxarray_tests/ref_pkg)")
N = 4096


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """An event that queued work can wait for, holding its stream busy; always opened at the
    end, so no worker is left waiting."""
    event = threading.Event()
    yield event
    event.set()


def test_operations_queue_on_the_current_stream(gate: threading.Event) -> None:
    stream = Stream(REF)
    with stream:
        x = xp.ones(N)
        stream.submit(gate.wait)
        y = x + 1  # queued behind the gate: not computed yet
        assert not stream.query()
    gate.set()
    with stream:
        assert np.array_equal(np.asarray(y), np.full(N, 2.0))  # reading waits for the stream
    assert stream.query()


def test_a_block_changes_stream_only_once_its_stream_is_idle(gate: threading.Event) -> None:
    first, second = Stream(REF), Stream(REF)
    with first:
        x = xp.ones(N)
        first.submit(gate.wait)
        y = x * 2  # queued on `first`, reads x
        address = x.buffer.address
        del x  # x's block goes back to `first`, where y's kernel will still read it
        again = xp.empty(N)  # in order on `first`: reusing the block there is safe
        assert again.buffer.address == address
        del again
    with second:
        other = xp.empty(N)
        assert other.buffer.address != address  # `first` is busy: not handed over
    gate.set()
    first.synchronize()
    with second:
        moved = xp.empty(N)
        assert moved.buffer.address == address  # `first` is idle now: the block migrates
    assert np.array_equal(np.asarray(y), np.full(N, 2.0))


def test_a_host_copy_into_a_buffer_on_another_stream_holds_its_block(
        gate: threading.Event) -> None:
    xp.empty_cache(REF)  # no block other tests left cached to be taken instead
    home, copier, other = Stream(REF), Stream(REF), Stream(REF)
    with home:
        x = xp.empty(N)
    copier.submit(gate.wait)
    with copier:
        x.buffer.copy_from_host(np.ones(N))  # queued behind the gate on `copier`
    address = x.buffer.address
    del x  # `home` is idle, but the copy will still write the block
    with other:
        y = xp.empty(N)
        assert y.buffer.address != address
    gate.set()


def test_a_reader_on_one_stream_never_sees_a_writer_on_another(gate: threading.Event) -> None:
    reader, writer = Stream(REF), Stream(REF)
    with writer:
        a = xp.ones(N)  # made for `writer`
    writer.synchronize()
    reader.submit(gate.wait)
    with reader:
        b = a + 1  # queued on `reader`, which now uses a's block too
    address = a.buffer.address
    del a  # held back until the reader's queued work is done
    with writer:
        c = xp.full((N,), 7.0)  # must not land on a's block, which `b` has yet to read
        assert c.buffer.address != address
        c.buffer.device.backend.synchronize(c.buffer.device)
    gate.set()
    reader.synchronize()
    assert np.array_equal(np.asarray(b), np.full(N, 2.0))
    with writer:
        reused = xp.empty(N)
        assert reused.buffer.address == address  # released once the reader's event completed


def test_to_device_runs_on_the_given_stream(gate: threading.Event) -> None:
    stream = Stream(REF)
    stream.submit(gate.wait)
    moved = xp.arange(N, dtype=xp.float64, device="cpu").to_device(REF, stream=stream)
    assert not stream.query()  # the upload is queued behind the gate
    gate.set()
    assert np.array_equal(np.asarray(moved.to_device("cpu", stream=stream)), np.arange(N))
    with pytest.raises(ValueError, match="neither"):
        moved.to_device("cpu", stream=Stream(Device("toy")))


def test_the_allocator_lets_dropped_streams_go(gate: threading.Event) -> None:
    # the free lists held every stream a block was ever freed on, and with it its worker thread
    busy, dropped = Stream(REF), Stream(REF)
    with busy:
        x = xp.ones(N)
        busy.submit(gate.wait)
        y = x * 2  # queued behind the gate: x's block must stay with `busy`
        address = x.buffer.address
        del x
    with dropped:
        xp.ones(N)
    dropped.synchronize()  # idle: the next sweep moves its block to the idle pool
    gone = weakref.ref(dropped)
    del dropped
    for _ in range(StreamOrderedAllocator.SWEEP_EVERY):
        xp.ones(8, device=REF)
    gc.collect()
    assert gone() is None
    with Stream(REF):
        assert xp.ones(N).buffer.address != address  # still held back for the busy stream
    gate.set()
    with busy:
        assert np.array_equal(np.asarray(y), np.full(N, 2.0))


class _Addresses(Allocator):
    """Raw memory that is only addresses: enough for the allocator's bookkeeping."""

    def __init__(self) -> None:
        self.device, self.next = Device("cpu"), 1 << 20

    def malloc(self, nbytes: int) -> Block:
        self.next += nbytes
        return Block(self.next, nbytes, None)

    def free(self, block: Block) -> None:
        pass

    def copy_to_host(self, block, offset, out, stream=None) -> None:
        raise NotImplementedError

    def copy_from_host(self, block, offset, data, stream=None) -> None:
        raise NotImplementedError


def test_a_block_another_stream_used_is_held_by_events_recorded_outside_the_lock() -> None:
    """Queuing an event may run a finalizer that frees into the same allocator (and, where the
    collector may run anywhere, deadlock two threads): free records them outside its lock."""
    allocator = StreamOrderedAllocator(_Addresses())
    locked: list[bool] = []

    class Watched(HostStream):
        def record_event(self, event=None):
            locked.append(allocator._lock._owner == threading.get_ident())
            return super().record_event(event)

    home, other = HostStream(Device("cpu")), Watched(Device("cpu"))
    block = allocator.malloc(64, home)
    allocator.record_stream(block, other)
    allocator.free(block)
    assert locked == [False]
    other.synchronize()
    assert allocator.malloc(64, home) is block  # back once the other stream's work is done
