"""CPU streams and events: inline default stream, ordered worker streams, events, cross-stream
waits, timing, error reporting, the current-stream context and the namespace factories."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

import numpy as np
import pytest

import hxarray as xp
from hxarray.backends.cpu.stream import CpuEvent, CpuStream
from hxarray.hal import Device, current_stream, device_scope


def _finishes(fn: Any, timeout: float = 5.0) -> bool:
    """Run `fn` on a helper thread; True if it returned within `timeout` seconds."""
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    thread.join(timeout)
    return not thread.is_alive()


def test_default_stream_runs_inline() -> None:
    stream = current_stream()
    assert stream is current_stream("cpu") is Device("cpu").backend.default_stream(Device("cpu"))
    assert isinstance(stream, CpuStream) and stream.is_default and stream.device is Device("cpu")
    ran: list[tuple[int, int]] = []
    stream.submit(lambda a, b: ran.append((a + b, threading.get_ident())), 2, 3)
    assert ran == [(5, threading.get_ident())]
    assert stream.query()
    event = stream.record_event()
    assert event.query()


def test_worker_stream_runs_work_in_order_on_another_thread() -> None:
    stream = CpuStream("cpu")
    log: list[int] = []
    threads: set[int] = set()

    def step(i: int) -> None:
        if i % 10 == 0:
            time.sleep(0.001)
        log.append(i)
        threads.add(threading.get_ident())

    for i in range(100):
        stream.submit(step, i)
    stream.synchronize()
    assert log == list(range(100))
    assert len(threads) == 1 and threading.get_ident() not in threads
    assert stream.query()


def test_events_complete_after_the_work_before_them() -> None:
    stream = CpuStream()
    gate = threading.Event()
    done: list[str] = []
    stream.submit(gate.wait, 5)
    stream.submit(done.append, "work")
    event = stream.record_event()
    later = stream.record_event(CpuEvent())
    assert not event.query() and not later.query() and not stream.query()
    gate.set()
    event.synchronize()
    assert event.query() and done == ["work"]
    stream.synchronize()
    assert later.query() and stream.query()


def test_an_event_recorded_again_completes_with_its_latest_recording() -> None:
    """As CUDA's: a recording reached after the event was recorded again no longer completes
    it, and a wait is for the recording made before it."""
    gates = threading.Event(), threading.Event()
    first, second, waiter = CpuStream(), CpuStream(), CpuStream()
    event = CpuEvent()
    first.submit(gates[0].wait)
    first.record_event(event)
    second.submit(gates[1].wait)
    second.record_event(event)
    waiter.wait_event(event)
    seen: list[bool] = []
    waiter.submit(lambda: seen.append(gates[1].is_set()))
    gates[0].set()
    first.synchronize()
    assert not event.query()
    first.record_event(event)  # reached at once: the waiter still waits for `second`
    first.synchronize()
    gates[1].set()
    waiter.synchronize()
    assert event.query() and seen == [True]


def test_unrecorded_event_counts_as_complete() -> None:
    event = xp.Event()
    assert event.query()
    assert _finishes(event.synchronize)


def test_wait_event_orders_two_streams() -> None:
    a, b = CpuStream(), CpuStream()
    log: list[str] = []

    def slow() -> None:
        time.sleep(0.05)
        log.append("a")

    a.submit(slow)
    b.wait_event(a.record_event())
    b.submit(log.append, "b")
    b.synchronize()
    assert log == ["a", "b"]


def test_wait_stream_and_default_stream_waits() -> None:
    a, b = CpuStream(), CpuStream()
    log: list[str] = []
    a.submit(time.sleep, 0.02)
    a.submit(log.append, "a1")
    b.wait_stream(a)
    b.submit(log.append, "b")
    b.synchronize()
    assert log == ["a1", "b"]
    a.submit(time.sleep, 0.02)
    a.submit(log.append, "a2")
    current_stream().wait_event(a.record_event())  # the default stream waits inline
    assert log[-1] == "a2"


def test_event_record_and_wait_methods() -> None:
    a, b = CpuStream(), CpuStream()
    log: list[str] = []
    event = CpuEvent()
    a.submit(time.sleep, 0.02)
    a.submit(log.append, "a")
    event.record(a)
    event.wait(b)
    b.submit(log.append, "b")
    b.synchronize()
    assert log == ["a", "b"]
    with a:
        event.record()  # on the current stream, a
        event.synchronize()
        assert event.query()


def test_elapsed_time_is_plausible() -> None:
    stream = CpuStream()
    start = stream.record_event()
    stream.submit(time.sleep, 0.05)
    end = stream.record_event()
    end.synchronize()
    elapsed = start.elapsed_time(end)
    assert 45.0 <= elapsed < 5000.0
    assert end.elapsed_time(start) == pytest.approx(-elapsed)


def test_elapsed_time_needs_recorded_timing_events() -> None:
    stream = current_stream()
    recorded = stream.record_event()
    with pytest.raises(ValueError, match="recorded"):
        recorded.elapsed_time(CpuEvent())
    untimed = xp.Event(enable_timing=False)
    stream.record_event(untimed)
    with pytest.raises(ValueError, match="enable_timing"):
        untimed.elapsed_time(recorded)
    with pytest.raises(TypeError, match="event of cpu.s kind"):
        recorded.elapsed_time(object())  # type: ignore[arg-type]
    gate = threading.Event()
    worker = CpuStream()
    worker.submit(gate.wait, 5)
    pending = worker.record_event()
    with pytest.raises(ValueError, match="synchronize"):
        recorded.elapsed_time(pending)
    gate.set()
    worker.synchronize()
    assert recorded.elapsed_time(pending) >= 0.0


def test_errors_in_queued_work_surface_in_synchronize() -> None:
    stream = CpuStream()
    log: list[str] = []
    stream.submit(log.append, "before")
    stream.submit(lambda: 1 / 0)
    stream.submit(log.append, "skipped")  # later work is skipped after a failure
    event = stream.record_event()
    assert _finishes(event.synchronize)  # events still complete, so no waiter hangs
    other = CpuStream()
    other.wait_event(event)
    other.submit(log.append, "other")
    other.synchronize()
    with pytest.raises(RuntimeError, match="work queued on CpuStream") as info:
        stream.synchronize()
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert log == ["before", "other"]
    stream.submit(log.append, "after")  # the error was reported; the stream works again
    stream.synchronize()
    assert log == ["before", "other", "after"]


def test_default_stream_errors_raise_at_once() -> None:
    with pytest.raises(ZeroDivisionError):
        current_stream().submit(lambda: 1 / 0)
    current_stream().synchronize()


def test_the_collector_may_queue_work_on_a_stream_inside_its_own_submit() -> None:
    """A finalizer may queue work on a stream (a buffer's records an event where other streams
    used its block), and the collector runs finalizers at any allocation: also inside that
    stream's `submit`, or in its worker's bookkeeping. In a subprocess: a deadlock times out."""
    code = """
        import gc
        from hxarray.backends.cpu.stream import CpuStream
        stream = CpuStream()
        events = []
        gc.callbacks.append(lambda phase, info: phase == "start" and
                            events.append(stream.record_event()))
        gc.set_threshold(1)  # a collection at nearly every allocation
        for _ in range(300):
            stream.submit(int)
        gc.callbacks.clear()
        stream.synchronize()
        assert events and all(event.query() for event in events)
    """
    subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=True, timeout=60)


def test_streams_reject_foreign_events() -> None:
    stream = CpuStream()
    with pytest.raises(TypeError, match="events of its own kind"):
        stream.record_event(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="events of its own kind"):
        stream.wait_event(object())  # type: ignore[arg-type]


def test_worker_thread_ends_with_its_stream() -> None:
    stream = CpuStream()
    workers: list[threading.Thread] = []
    stream.submit(lambda: workers.append(threading.current_thread()))
    stream.synchronize()
    (worker,) = workers
    assert worker.is_alive() and worker is not threading.current_thread()
    del stream
    gc.collect()
    worker.join(5)
    assert not worker.is_alive()


# -- the current stream ----------------------------------------------------------------------------
def test_with_stream_makes_it_current_and_restores() -> None:
    default = current_stream()
    outer, inner = CpuStream(), CpuStream()
    log: list[str] = []
    outer.submit(time.sleep, 0.02)
    outer.submit(log.append, "queued")
    with outer as entered:
        assert log == ["queued"]  # entering waits for the queued work
        assert entered is outer and current_stream() is outer and current_stream("cpu") is outer
        with inner:
            assert current_stream() is inner
        assert current_stream() is outer
        with outer:  # re-entering the same stream nests too
            assert current_stream() is outer
        assert current_stream() is outer
    assert current_stream() is default


def test_with_stream_restores_after_an_exception() -> None:
    default = current_stream()
    stream = CpuStream()
    with pytest.raises(KeyError):
        with stream:
            raise KeyError("boom")
    assert current_stream() is default


def test_current_stream_is_per_thread() -> None:
    stream = CpuStream()
    default = current_stream()
    seen: list[Any] = []
    with stream:
        thread = threading.Thread(target=lambda: seen.append(current_stream()))
        thread.start()
        thread.join()
        assert current_stream() is stream
    assert seen == [default]


def test_one_stream_entered_by_two_threads() -> None:
    stream = CpuStream()
    default = current_stream()
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    results: dict[str, bool] = {}

    def first() -> None:  # enters first, leaves first
        with stream:
            a_in.set()
            b_in.wait(5)
            results["a inside"] = current_stream() is stream
        results["a after"] = current_stream() is default
        a_out.set()

    def second() -> None:
        a_in.wait(5)
        with stream:
            b_in.set()
            a_out.wait(5)
            results["b inside"] = current_stream() is stream
        results["b after"] = current_stream() is default

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert results == {"a inside": True, "a after": True, "b inside": True, "b after": True}


# -- the namespace factories -----------------------------------------------------------------------
def test_namespace_factories_build_cpu_kinds() -> None:
    stream, event = xp.Stream(), xp.Event()
    assert type(stream) is CpuStream and type(event) is CpuEvent
    assert isinstance(stream, xp.Stream) and isinstance(event, xp.Event)
    assert stream.device is Device("cpu") and event.device is Device("cpu")
    assert not stream.is_default and event.enable_timing
    assert xp.Stream(device="cpu:0").device is Device("cpu")
    assert xp.Stream("cpu", default=True).is_default
    assert not xp.Event("cpu", enable_timing=False).enable_timing
    with device_scope("cpu"):
        assert xp.Stream().device is Device("cpu")
    log: list[int] = []
    stream.submit(log.append, 1)
    stream.record_event(event)
    event.synchronize()
    assert log == [1]


def test_subclasses_construct_normally() -> None:
    class Incomplete(xp.hal.Stream):
        pass

    with pytest.raises(TypeError, match="abstract"):
        Incomplete()
    stream = CpuStream("cpu", default=True)
    assert type(stream) is CpuStream and stream.is_default


def test_arrays_computed_inside_a_stream_scope_match_numpy() -> None:
    a = np.arange(12.0).reshape(3, 4)
    with CpuStream():
        x = xp.asarray(a)
        y = xp.sum(x * x, axis=1)
    assert np.array_equal(np.asarray(y), np.sum(a * a, axis=1))
