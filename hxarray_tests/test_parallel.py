"""The multi-threaded CPU paths: same values as numpy, deterministic, safe with aliasing."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

import hxarray as xp
from hxarray.backends.cpu import fused as cpu_fused
from hxarray.backends.cpu import parallel

from .oracle import DTYPES, FLOATING, REAL, VIEWS, ids, sample, thread_thresholds

SPLIT_FROM = 4096  # the thresholds, lowered so that small test arrays take the threaded paths
N = SPLIT_FROM * 3 + 7  # large enough to split, not a multiple of the thread count
MACHINE_BUSY = parallel.machine_busy  # the real one (the fixture below replaces it)


@pytest.fixture(autouse=True)
def low_thresholds(monkeypatch):
    """Low thresholds, and a machine taken as idle (the sample sort gives way on a busy one)."""
    monkeypatch.setattr(parallel, "machine_busy", lambda: False)
    with thread_thresholds(SPLIT_FROM):
        yield


@pytest.fixture(params=[1, 2, 3], ids=lambda n: f"threads{n}")
def thread_count(request):
    with xp.threads(request.param):
        yield request.param


@pytest.fixture
def data():
    rng = np.random.default_rng(42)
    return rng.standard_normal(N), rng.standard_normal(N)


def test_elementwise_matches_numpy(thread_count, data):
    a, b = data
    x, y = xp.asarray(a), xp.asarray(b)
    np.testing.assert_array_equal(np.asarray(x + y), a + b)
    np.testing.assert_array_equal(np.asarray(xp.sin(x)), np.sin(a))
    np.testing.assert_array_equal(np.asarray(xp.where(x > 0, x, y)), np.where(a > 0, a, b))
    np.testing.assert_array_equal(np.asarray(x * 2.5), a * 2.5)


def test_broadcast_and_views(thread_count):
    a = np.arange(2 * N, dtype=np.float32).reshape(2, N)
    row = np.linspace(0, 1, N, dtype=np.float32)
    x, r = xp.asarray(a), xp.asarray(row)
    np.testing.assert_array_equal(np.asarray(x + r), a + row)
    np.testing.assert_array_equal(np.asarray(x[:, ::-1] - x[::-1, :]), a[:, ::-1] - a[::-1, :])
    col = xp.asarray(a.T.copy())
    np.testing.assert_array_equal(np.asarray(col.mT * 2), a * 2)


def test_in_place_same_view(thread_count, data):
    a, b = data
    x = xp.asarray(a, copy=True)
    x += xp.asarray(b)
    np.testing.assert_array_equal(np.asarray(x), a + b)


def test_overlapping_in_place_falls_back_to_one_thread(thread_count):
    a = np.arange(N, dtype=np.float64)
    x = xp.asarray(a, copy=True)
    x[1:] += x[:-1]  # overlapping but shifted: chunking would race
    expected = a.copy()
    expected[1:] += expected[:-1].copy()
    np.testing.assert_array_equal(np.asarray(x), expected)


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "all", "any"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_full_reductions(thread_count, name, keepdims):
    rng = np.random.default_rng(1)
    a = rng.uniform(0.999, 1.001, size=(3, N // 3)) if name == "prod" else \
        rng.standard_normal((3, N // 3))
    if name in ("all", "any"):
        a = a > -3.5 if name == "all" else a > 3.5
    got = np.asarray(getattr(xp, name)(xp.asarray(a), keepdims=keepdims))
    expected = getattr(np, name)(a, keepdims=keepdims)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-12)


REDUCTIONS = ["sum", "prod", "max", "min", "mean", "all", "any"]


def _reduction_oracle(name, a, axis, keepdims):
    """numpy's reduction with the standard's accumulator (int64/uint64 for integer sums) and
    complex means divided part by part."""
    if name == "mean" and a.dtype.kind == "c":
        total = np.sum(a, axis=axis, keepdims=keepdims)
        count = a.size // total.size
        mean = np.empty_like(total)
        mean.real, mean.imag = total.real / count, total.imag / count
        return mean
    if name in ("sum", "prod") and a.dtype.kind in "iu":
        return getattr(np, name)(a, axis=axis, keepdims=keepdims,
                                 dtype=np.int64 if a.dtype.kind == "i" else np.uint64)
    return getattr(np, name)(a, axis=axis, keepdims=keepdims)


def _applies(name, dtype):
    return not (name in ("max", "min") and dtype.kind in "bc" or name == "mean" and
                dtype.kind not in "fc" or name in ("sum", "prod", "mean") and dtype.kind == "b")


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (1, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_split_reductions(thread_count, view, axis, keepdims):
    """Reductions over some axes split along a kept one; over all axes into partial results."""
    a = np.random.default_rng(3).standard_normal((5, 6, N // 29))
    x = VIEWS[view](xp.asarray(a))
    v = VIEWS[view](a)
    for name in REDUCTIONS:
        if name in ("all", "any"):
            got = getattr(xp, name)(x > -3.5 if name == "all" else x > 3.5, axis=axis,
                                    keepdims=keepdims)
            expected = getattr(np, name)(v > -3.5 if name == "all" else v > 3.5, axis=axis,
                                         keepdims=keepdims)
        else:
            got = getattr(xp, name)(x * 0.001 + 1 if name == "prod" else x, axis=axis,
                                    keepdims=keepdims)
            expected = getattr(np, name)(v * 0.001 + 1 if name == "prod" else v, axis=axis,
                                         keepdims=keepdims)
        assert got.shape == expected.shape and got.dtype.name == expected.dtype.name
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-12, err_msg=name)


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
@pytest.mark.parametrize("axis", [None, 1])
def test_split_reductions_of_every_dtype(thread_count, dtype, axis):
    """Special values (NaN, infinities, zeros of both signs, integer extremes) go through the
    threaded paths as through numpy's."""
    a = sample((3, N), dtype)
    x = xp.asarray(a)
    for name in REDUCTIONS:
        if not _applies(name, a.dtype):
            continue
        got = np.asarray(getattr(xp, name)(x, axis=axis))
        with np.errstate(all="ignore"):
            expected = _reduction_oracle(name, a, axis, False)
        assert got.shape == expected.shape and got.dtype == expected.dtype, name
        np.testing.assert_allclose(got, expected, rtol=1e-5 if dtype in FLOATING else 0,
                                   err_msg=name)


@pytest.mark.strict  # the standard's -0 sums (numpy mode's are numpy's +0)
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_split_sums_of_negative_zeros(thread_count, axis):
    got = np.asarray(xp.sum(xp.asarray(np.full((4, N), -0.0)), axis=axis))
    assert np.all(got == 0) and np.all(np.signbit(got))
    mixed = np.full((4, N), -0.0)
    mixed[2, 5] = 0.0
    got = np.asarray(xp.sum(xp.asarray(mixed), axis=axis))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(np.full((4, N), -0.0)).all(
        axis=axis) & np.all(mixed == 0, axis=axis) & np.signbit(mixed).all(axis=axis))


def test_split_complex_mean_keeps_nan_in_its_part(thread_count):
    a = np.ones((4, N), dtype=np.complex128)
    a[1, 7] = complex(np.nan, 1.0)
    for axis in (None, 1):
        mean = np.asarray(xp.mean(xp.asarray(a), axis=axis))
        assert np.isnan(mean.real).any() and not np.isnan(mean.imag).any()


def test_threaded_reductions_stay_quiet(thread_count):
    """numpy's error state reaches the worker threads: overflow in a chunk does not warn."""
    with np.errstate(all="raise"):
        assert np.isinf(float(xp.prod(xp.asarray(np.full(N, 1e300)))))


SORT_DATA = {
    "random": lambda rng: rng.standard_normal(N),
    "nan_inf_zeros": lambda rng: np.where(rng.random(N) < 0.3, rng.choice(
        [np.nan, np.inf, -np.inf, 0.0, -0.0], N), rng.standard_normal(N)),
    "mostly_nan": lambda rng: np.where(rng.random(N) < 0.7, np.nan, rng.standard_normal(N)),
    "few_values": lambda rng: rng.integers(0, 3, N).astype(np.float64),
    "equal": lambda rng: np.ones(N),
    "sorted": lambda rng: np.sort(rng.standard_normal(N)),
    "reversed": lambda rng: np.sort(rng.standard_normal(N))[::-1],
}


@pytest.mark.parametrize("kind", SORT_DATA)
@pytest.mark.parametrize("descending", [False, True])
def test_parallel_sort(thread_count, kind, descending):
    """The sample sort (one row) of awkward data: NaN last, zeros of both signs, ties, few
    distinct values (which fall back to one thread), already sorted input, views."""
    a = SORT_DATA[kind](np.random.default_rng(9))
    for x, v in ((xp.asarray(a), a), (xp.asarray(a)[::-2], a[::-2])):
        expected = np.sort(v)[::-1] if descending else np.sort(v)
        np.testing.assert_array_equal(np.asarray(xp.sort(x, descending=descending)), expected)


@pytest.mark.parametrize("dtype", REAL, ids=ids(REAL))
@pytest.mark.parametrize("shape, axis", [((N,), 0), ((3, N // 3), 1), ((3, N // 3), 0),
                                         ((N // 5, 5), 0), ((1, N), 1), ((N, 1), 0)])
def test_parallel_sort_of_every_real_dtype_and_axis(thread_count, dtype, shape, axis):
    a = sample(shape, dtype)
    for view in (lambda v: v, lambda v: v[::-1]):
        got = np.asarray(xp.sort(view(xp.asarray(a)), axis=axis))
        np.testing.assert_array_equal(got, np.sort(view(a), axis=axis))


@pytest.mark.parametrize("operation", ["add", "sin", "sum", "sort"])
def test_large_operations_are_split(monkeypatch, data, operation):
    calls = []
    run_chunks = parallel.run_chunks

    def spy(task, length, count):
        calls.append(count)
        return run_chunks(task, length, count)

    monkeypatch.setattr(parallel, "run_chunks", spy)
    x, y = xp.asarray(data[0]), xp.asarray(data[1])
    compute = {"add": lambda: x + y, "sin": lambda: xp.sin(x), "sum": lambda: xp.sum(x),
               "sort": lambda: xp.sort(x)}[operation]
    split = [2, 2, 2] if operation == "sort" else [2]  # the sort: classify, move, sort
    with xp.threads(2):
        compute()
    assert calls == split
    with xp.threads(1):
        compute()
    assert calls == split
    with thread_thresholds(N + 1), xp.threads(2):
        compute()
    assert calls == split


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "uint64"])
def test_the_sample_sort_partitions_into_many_ranges(dtype):
    """Seven threads: six pivots, each element's range found by a search among them."""
    rng = np.random.default_rng(3)
    a = SORT_DATA["nan_inf_zeros"](rng).astype(dtype) if dtype.startswith("float") else \
        rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, N, dtype, endpoint=True)
    with xp.threads(7):
        for v in (a, a[::3], a[::-1]):
            got = np.asarray(xp.sort(xp.asarray(v)))
            np.testing.assert_array_equal(got, np.sort(v))


def test_without_a_compiler_one_row_sorts_with_numpy_alone(monkeypatch, data):
    calls = []
    monkeypatch.setattr(parallel, "run_chunks", lambda *args: calls.append(args))
    monkeypatch.setattr(cpu_fused, "partition_loops", lambda dtype: None)
    with xp.threads(2):
        result = xp.sort(xp.asarray(data[0]))
    assert calls == []
    np.testing.assert_array_equal(np.asarray(result), np.sort(data[0]))


def test_a_busy_machine_sorts_with_numpy_alone(monkeypatch, data):
    calls = []
    monkeypatch.setattr(parallel, "run_chunks", lambda *args: calls.append(args))
    monkeypatch.setattr(parallel, "machine_busy", lambda: True)
    with xp.threads(2):
        result = xp.sort(xp.asarray(data[0]))
    assert calls == []
    np.testing.assert_array_equal(np.asarray(result), np.sort(data[0]))


@pytest.mark.parametrize("readings, cpus, busy", [
    ([(0.4, 0)], 2, False),
    ([(0.4, 1), (0.4, 1)], 2, True),  # another process holds one of the two CPUs
    ([(0.4, 1), (0.4, 0)], 2, False),  # a thread that ran for an instant
    ([(2.1, 0)], 2, True),  # the last minute's load fills both
    ([(1.9, 3)], 8, False),
    ([(1.9, 4), (1.9, 5)], 8, True),
    ([(0.0, 0)], 1, False),
])
def test_machine_busy_reads_the_runnable_threads_and_the_load(monkeypatch, readings, cpus,
                                                               busy):
    left = list(readings)
    monkeypatch.setattr(parallel, "_kernel_load", lambda: left.pop(0))
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: set(range(cpus)),
                        raising=False)
    assert MACHINE_BUSY() is busy
    assert left == []  # a second reading only to confirm a busy first one


def test_kernel_load_reads_proc_loadavg_or_falls_back(monkeypatch):
    load, others = parallel._kernel_load()
    assert load >= 0 and others >= 0
    real_open = parallel.os.open

    def missing(path, *args):
        if path == "/proc/loadavg":
            raise FileNotFoundError(path)
        return real_open(path, *args)

    monkeypatch.setattr(parallel, "_loadavg", [])
    monkeypatch.setattr(parallel.os, "open", missing)
    monkeypatch.setattr(parallel.os, "getloadavg", lambda: (1.5, 1.0, 0.5))
    assert parallel._kernel_load() == (1.5, 0)

    def unavailable():
        raise OSError("no load average")

    monkeypatch.setattr(parallel.os, "getloadavg", unavailable)
    assert parallel._kernel_load() == (0.0, 0)
    monkeypatch.delattr(parallel.os, "getloadavg")  # as on Windows
    assert parallel._kernel_load() == (0.0, 0)


def test_run_chunks_finishes_every_chunk_before_raising():
    finished = []

    def task(start, stop):
        if start == 1:
            raise RuntimeError("chunk 1")
        time.sleep(0.05)
        finished.append(start)

    with pytest.raises(RuntimeError, match="chunk 1"):
        parallel.run_chunks(task, 3, 3)
    assert sorted(finished) == [0, 2]
    assert parallel.run_chunks(lambda start, stop: (start, stop), 10, 3) == [(0, 3), (3, 6),
                                                                             (6, 10)]


def test_reductions_are_deterministic(data):
    x = xp.asarray(data[0])
    with xp.threads(2):
        first = float(xp.sum(x))
        assert all(float(xp.sum(x)) == first for _ in range(5))


def test_integer_sums_are_exact(thread_count):
    a = np.arange(N, dtype=np.int32)
    assert int(xp.sum(xp.asarray(a))) == int(a.astype(np.int64).sum())


def test_threads_setting():
    before = xp.get_num_threads()
    with xp.threads(3) as count:
        assert count == 3 and xp.get_num_threads() == 3
    assert xp.get_num_threads() == before
    for bad in (0, -1, 2**100):
        with pytest.raises(ValueError, match="positive integer"):
            with xp.threads(bad):
                pass
    for bad in (1.5, True, "2", None):
        with pytest.raises(TypeError, match="must be an int"):
            with xp.threads(bad):
                pass


@pytest.mark.parametrize("value, expected", [("1", "1"), ("3", "3")])
def test_environment_variable(value, expected):
    out = subprocess.run([sys.executable, "-c", "import hxarray; print(hxarray.get_num_threads())"],
                         env={**os.environ, "HXARRAY_NUM_THREADS": value}, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == expected


def test_bad_environment_variable():
    out = subprocess.run([sys.executable, "-c", "import hxarray"],
                         env={**os.environ, "HXARRAY_NUM_THREADS": "x"},
                         capture_output=True, text=True)
    assert out.returncode != 0 and "HXARRAY_NUM_THREADS" in out.stderr
