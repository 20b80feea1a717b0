"""Index errors a CUDA device finds after the call returned (docs/cuda.md, "Deferred indexing
errors"): every error raised once, in call order, each naming its own call; the result of a
failed gather never read without its error; a full queue drained before the next call's work;
errors still waiting at exit written to stderr."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

import hxarray as xp
from hxarray.backends.cuda.runtime import DeferredErrors
from hxarray.hal.stream import DeferredIndexError, current_stream

CUDA = "cuda:0"
EARLIER = "an earlier call failed: "
RESULT = "the array is the result of a failed call: "


def out_of_bounds(index: int, size: int, axis: int = 0) -> str:
    return f"index {index} is out of bounds for axis {axis} with size {size}"


def sync() -> None:
    current_stream(CUDA).synchronize()


def drain() -> list[str]:
    """Synchronise until the device raises no more errors; their messages."""
    seen = []
    while True:
        try:
            sync()
            return seen
        except IndexError as exc:
            seen.append(str(exc))


def on(values: object) -> xp.Array:
    return xp.asarray(values, device=CUDA)


@pytest.fixture(autouse=True)
def deferred(monkeypatch: pytest.MonkeyPatch) -> None:
    """cuda:0 with checks deferred, and no error of another test waiting before or after."""
    if CUDA not in [str(d) for d in xp.__array_namespace_info__().devices()]:
        pytest.skip("needs cuda:0 (HXARRAY_CUDA_DRIVER=sim)")
    monkeypatch.delenv("HXARRAY_CUDA_SYNC_CHECKS", raising=False)
    drain()
    yield
    assert drain() == []


def test_every_error_is_raised_once_in_call_order_by_its_own_call() -> None:
    data = np.arange(10.0)
    x = on(data)
    y1 = x[on([1, 20])]
    good = x[on([3, -1])]
    y2 = x[[2, 30]]
    with pytest.raises(DeferredIndexError,
                       match=f"^{EARLIER}__getitem__ on cuda:0: {out_of_bounds(20, 10)}$"):
        sync()
    with pytest.raises(DeferredIndexError,
                       match=f"^{EARLIER}__getitem__ on cuda:0: {out_of_bounds(30, 10)}$"):
        y2.to_device("cpu")  # the next synchronising call: the second error
    np.testing.assert_array_equal(np.asarray(good.to_device("cpu")), data[[3, -1]])
    for failed, index in ((y2, 30), (y1, 20), (y2, 30)):  # every time
        with pytest.raises(DeferredIndexError,
                           match=f"^{RESULT}__getitem__ on cuda:0: {out_of_bounds(index, 10)}$"):
            failed.to_device("cpu")
    sync()  # each error raised once


def test_take_then_gather() -> None:
    x = on(np.arange(10.0))
    y1 = xp.take(x, on([20, 1]))
    y2 = xp.take_along_axis(x, on([2, -11]))
    y3 = x[on([5])]
    assert drain() == [f"{EARLIER}take on cuda:0: {out_of_bounds(20, 10)}",
                       f"{EARLIER}take_along_axis on cuda:0: {out_of_bounds(-11, 10)}"]
    for failed in (y1, y2):
        with pytest.raises(DeferredIndexError, match=f"^{RESULT}take"):
            failed.to_device("cpu")
    np.testing.assert_array_equal(np.asarray(y3.to_device("cpu")), [5.0])


def test_the_result_of_a_failed_gather_is_never_read_or_used() -> None:
    """Every read of the result (or a view of it) raises its call's error, as does any kernel
    given it; a failed scatter leaves its target as it was."""
    data = np.arange(12.0).reshape(3, 4)
    x = on(data)
    z = on(np.zeros(4))
    y = x[on([0, 3])]
    z[on([1, 7])] = 5.0  # (axis 0 has 3 rows, z's 4 elements)
    assert drain() == [f"{EARLIER}__getitem__ on cuda:0: {out_of_bounds(3, 3)}",
                       f"{EARLIER}__setitem__ on cuda:0: {out_of_bounds(7, 4)}"]
    np.testing.assert_array_equal(np.asarray(z.to_device("cpu")), np.zeros(4))
    reads = [lambda: y.to_device("cpu"), lambda: np.asarray(y), lambda: np.from_dlpack(y),
             lambda: float(y[0, 0]), lambda: repr(y), lambda: y[1:].to_device("cpu"),
             lambda: y + 1, lambda: xp.sum(y), lambda: x[y[0, :2].astype(xp.int64)],
             lambda: z.__setitem__(on([0]), y[0, 0])]
    for read in reads:
        with pytest.raises(DeferredIndexError, match=f"^{RESULT}__getitem__ on cuda:0: "
                                                     f"{out_of_bounds(3, 3)}$"):
            read()
    np.testing.assert_array_equal(np.asarray(z.to_device("cpu")), np.zeros(4))
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), data)


def test_using_a_failed_result_counts_as_its_error_raised() -> None:
    """A kernel given the result of a call found failed raises that call's error; the device
    does not raise it again."""
    x = on(np.arange(10.0))
    y1 = x[on([11])]
    y2 = x[on([12])]
    with pytest.raises(DeferredIndexError, match=out_of_bounds(11, 10)):
        sync()  # finds both
    with pytest.raises(DeferredIndexError, match=f"^{RESULT}.*{out_of_bounds(12, 10)}$"):
        y2 * 2
    assert drain() == []
    del y1


def test_a_full_queue_is_drained_before_the_next_call_does_anything() -> None:
    """With LIMIT checks waiting, the next call raises the earliest error as that call's,
    leaving its own target unchanged; a call after LIMIT good ones has its own error kept."""
    x = on(np.arange(10.0))
    index = on([0])
    waiting = [x[on([70])]] + [x[index] for _ in range(DeferredErrors.LIMIT - 1)]
    z = on(np.zeros(4))
    with pytest.raises(DeferredIndexError,
                       match=f"^{EARLIER}__getitem__ on cuda:0: {out_of_bounds(70, 10)}$"):
        z[on([1])] = 5.0
    np.testing.assert_array_equal(np.asarray(z.to_device("cpu")), np.zeros(4))
    assert drain() == []
    z[on([1])] = 5.0  # again: now it runs
    np.testing.assert_array_equal(np.asarray(z.to_device("cpu")), [0.0, 5.0, 0.0, 0.0])

    waiting = [x[index] for _ in range(DeferredErrors.LIMIT)]
    z[on([9])] = 1.0  # the call after LIMIT: its own check waits, not dropped
    assert drain() == [f"{EARLIER}__setitem__ on cuda:0: {out_of_bounds(9, 4)}"]
    np.testing.assert_array_equal(np.asarray(z.to_device("cpu")), [0.0, 5.0, 0.0, 0.0])
    for w in waiting:
        np.testing.assert_array_equal(np.asarray(w.to_device("cpu")), [0.0])


def test_checks_from_several_threads_are_each_reported_once() -> None:
    """Threads gather with bad indices of their own (1000 * thread + k) and synchronise in
    between; every bad index is raised exactly once, in some thread, and the good results are
    numpy's."""
    data = np.arange(50.0)
    x = on(data)
    threads, calls = 4, 30
    raised: list[str] = []
    wrong: list[str] = []
    lock = threading.Lock()

    def work(t: int) -> None:
        rng = np.random.default_rng(t)
        kept = []
        for k in range(calls):
            try:
                if k % 3 == 0:
                    x[on([1, 1000 * (t + 1) + k])]
                else:
                    picks = rng.integers(-50, 50, 5)
                    kept.append((xp.take(x, on(picks)), data[picks]))
                if k % 7 == 0:
                    sync()
            except IndexError as exc:
                with lock:
                    raised.append(str(exc))
        for result, expected in kept:
            while True:
                try:
                    got = np.asarray(result.to_device("cpu"))
                    break
                except IndexError as exc:  # another call's, reported here
                    with lock:
                        raised.append(str(exc))
            if not np.array_equal(got, expected):
                with lock:
                    wrong.append(f"thread {t}: {got} != {expected}")

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    raised += drain()
    assert wrong == []
    assert all(m.startswith(f"{EARLIER}__getitem__ on cuda:0: ") for m in raised), raised
    bad = sorted(int(re.search(r"index (-?\d+) is out", m).group(1)) for m in raised)
    assert bad == sorted(1000 * (t + 1) + k for t in range(threads)
                         for k in range(0, calls, 3))


EXIT_SCRIPT = """
import hxarray as xp
from hxarray.hal.stream import current_stream
x = xp.arange(10.0, device="cuda:0")
y1 = x[xp.asarray([1, 20], device="cuda:0")]
y2 = xp.take(x, xp.asarray([30], device="cuda:0"))
try:
    current_stream("cuda:0").synchronize()
except IndexError as exc:
    print(exc)
x[xp.asarray([40], device="cuda:0")] = 1.0
"""


def test_errors_still_waiting_at_exit_are_written_to_stderr() -> None:
    env = {k: v for k, v in os.environ.items() if k != "HXARRAY_CUDA_SYNC_CHECKS"}
    done = subprocess.run([sys.executable, "-c", EXIT_SCRIPT], capture_output=True, text=True,
                          timeout=300, env={**env, "HXARRAY_CUDA_DRIVER": "sim"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{EARLIER}__getitem__ on cuda:0: {out_of_bounds(20, 10)}\n"
    prefix = "hxarray: at exit, cuda:0: an error no synchronising call raised: "
    assert done.stderr.splitlines() == [
        f"{prefix}take on cuda:0: {out_of_bounds(30, 10)}",
        f"{prefix}__setitem__ on cuda:0: {out_of_bounds(40, 10)}"]
