"""Pipelines and prefetching: results in order and correct, structured batches, changing shapes,
the first error raised after the results before it, bounded memory, and the arguments. Overlap
is measured by the benchmark (python -m benchmarks.pipeline), not here."""

from __future__ import annotations

import numpy as np
import pytest

import hxarray as xp
from hxarray.hal import Device, current_stream

from .conftest import DEVICES

N = 4096


def _batches(count: int, n: int = N) -> list[np.ndarray]:
    return [np.arange(n, dtype=np.float64) + 1000 * i for i in range(count)]


def _stage(x):
    return xp.sqrt(x * 2.0 + 1.0)


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_results_in_order(device: Device, depth: int) -> None:
    batches = _batches(9)
    results = list(xp.pipeline(batches, _stage, device=device, depth=depth))
    assert len(results) == 9
    for got, batch in zip(results, batches):
        assert got.device is Device("cpu") and got.dtype == xp.float64
        np.testing.assert_allclose(np.asarray(got), np.sqrt(batch * 2 + 1))


@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_structured_batches_changing_shapes_and_results_left_on_the_device(device) -> None:
    batches = [(np.full(5 + i, float(i)), np.arange(5 + i)) for i in range(5)]

    def stage(values, index):
        return values + 1.0, xp.sum(index)

    results = list(xp.pipeline(batches, stage, device=device, depth=2, out=None))
    for (total, count), (values, index) in zip(results, batches):
        assert total.device is device and count.device is device
        np.testing.assert_array_equal(np.asarray(total.to_device("cpu")), values + 1)
        assert int(count.to_device("cpu")) == index.sum()


def test_strided_results_and_a_list() -> None:
    def stage(x):
        return [x[::2] * 1.0, xp.flip(x)]

    (evens, flipped), = list(xp.pipeline([np.arange(10.0)], stage, device="ref"))
    assert np.array_equal(np.asarray(evens), np.arange(0, 10.0, 2))
    assert np.array_equal(np.asarray(flipped), np.arange(10.0)[::-1])


@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_stage_error_after_the_results_before_it(device: Device) -> None:
    def stage(x):
        if float(x[0]) == 3000:
            raise KeyError("batch 3")
        return x + 1

    seen = []
    with pytest.raises(KeyError, match="batch 3"):
        for result in xp.pipeline(_batches(8), stage, device=device, depth=3):
            seen.append(float(result[0]))
    assert seen == [1.0, 1001.0, 2001.0]


def test_iterator_error_after_the_results_before_it() -> None:
    def batches():
        yield from _batches(2)
        raise OSError("disk gone")

    seen = []
    with pytest.raises(OSError, match="disk gone"):
        for result in xp.pipeline(batches(), _stage, device="ref", depth=2):
            seen.append(result)
    assert len(seen) == 2


def test_failed_device_work_is_raised() -> None:
    """Work queued on the compute stream fails on the device: the batch's result is never
    yielded; the error is."""
    def stage(x):
        if float(x[0]) == 1000:
            current_stream(x.device).submit(lambda: 1 / 0)
        return x * 2

    seen = []
    with pytest.raises(RuntimeError, match="failed") as info:
        for result in xp.pipeline(_batches(4), stage, device="ref", depth=2):
            seen.append(float(result[0]))
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert seen == [0.0]


@pytest.mark.parametrize("depth", [2, 3])
def test_bounded_memory(depth: int) -> None:
    """Device memory does not grow with the number of batches: the input buffers are reused
    and at most `depth` results are in flight."""
    nbytes = N * 8
    peaks = {}
    for count in (4, 16):
        with xp.memory_scope("ref") as scope:
            for _ in xp.pipeline(_batches(count), _stage, device="ref", depth=depth):
                pass
        peaks[count] = scope.peak_bytes
    assert peaks[16] == peaks[4]
    assert peaks[16] <= (2 * depth + 2) * nbytes  # buffers, results, one temporary each


def test_prefetch() -> None:
    batches = _batches(6)
    seen = []
    for x in xp.prefetch(iter(batches), "ref", depth=3):
        assert x.device is Device("ref")
        seen.append(np.asarray((x + 0).to_device("cpu")))
    assert all(np.array_equal(a, b) for a, b in zip(seen, batches)) and len(seen) == 6
    pairs = list(xp.prefetch([(np.ones(3), np.zeros(2, dtype=np.int32))], "ref"))
    assert [a.dtype for a in pairs[0]] == [xp.float64, xp.int32]


def test_arguments() -> None:
    with pytest.raises(ValueError, match="depth"):
        xp.pipeline([], _stage, device="ref", depth=0)
    with pytest.raises(TypeError, match="callable"):
        xp.pipeline([], 3, device="ref")
    with pytest.raises(ValueError, match="out must be"):
        xp.pipeline([], _stage, device="ref", out="toy")
    with pytest.raises(ValueError, match="depth"):
        xp.prefetch([], "ref", depth=-1)
    with pytest.raises(TypeError, match="returned int"):
        list(xp.pipeline(_batches(1), lambda x: 3, device="ref"))
    with pytest.raises(TypeError, match="numpy dtype object"):
        list(xp.pipeline([np.array([None])], _stage, device="ref"))
    assert list(xp.pipeline([], _stage, device="ref")) == []
