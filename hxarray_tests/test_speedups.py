"""The compiled speedups: built where a C compiler exists, twins of the pure-Python types, and the
temporary elision of the operator slots (which must never write into memory anyone can see).

`make test` runs the whole suite twice, with the compiled types and with HXARRAY_PURE_PYTHON=1, so
every other test checks both; the tests here are about what only one of them does."""

from __future__ import annotations

import ast
import contextlib
import gc
import importlib
import inspect
import os
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hxarray as xp
from hxarray._compiled import speedups
from hxarray._elementwise import OPERATIONS
from hxarray._ops import OPS
from hxarray.backends.base import fresh_layout
from hxarray.backends.cpu.allocator import CpuAllocator
from hxarray.backends.cpu.backend import fastpath
from hxarray.hal import CachingAllocator, Device, size_class
from hxarray.hal.sources import _Sources

from .oracle import DTYPES, INTEGER, NUMERIC, REAL_FLOATING, np_dtype, thread_thresholds

PURE = os.environ.get("HXARRAY_PURE_PYTHON", "0") not in ("", "0")
compiled = pytest.mark.skipif(speedups is None, reason="runs on the compiled types only "
                              "(HXARRAY_PURE_PYTHON=1 is set)")

ROOT = Path(__file__).resolve().parents[1]
LARGE = 1 << 16  # float64 elements: 512 KiB, above the 256 KiB elision threshold


def test_the_extension_is_built_unless_pure_python_is_asked_for() -> None:
    assert (speedups is None) == PURE


def _compiled_modules() -> list[str]:
    """setup.py's COMPILED: the modules Cython builds from their Python source."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    paths = next(ast.literal_eval(node.value) for node in tree.body
                 if isinstance(node, ast.Assign) and node.targets[0].id == "COMPILED")
    return [path[:-3].replace("/", ".") for path in paths]


@pytest.mark.parametrize("name", _compiled_modules())
def test_compiled_modules_run_their_source_only_in_pure_python(name) -> None:
    module = importlib.import_module(name)
    assert module.__file__ is not None
    assert module.__file__.endswith(".py") == PURE, (
        f"{name} loaded from {module.__file__}: the build is missing or older than its source "
        "(`make` rebuilds it)")


def test_an_install_without_the_c_extension_works() -> None:
    """Where _speedups.c was not built (it is optional), hxarray runs without it: the
    reductions' compiled fast path, whose build reads the extension's array type, is not
    imported, and the namespace functions are their Python source."""
    code = """
import importlib.abc, sys
class NoSpeedups(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "hxarray._speedups":
            raise ImportError("not built")
sys.meta_path.insert(0, NoSpeedups())
import numpy as np, hxarray as xp
from hxarray import _compiled
from hxarray.backends.cpu import backend
assert _compiled.speedups is None and backend.fastpath is None
assert "hxarray.backends.cpu.fastpath" not in sys.modules
x = xp.asarray(np.arange(6.0).reshape(2, 3))
assert float(xp.sum(x)) == 15.0 and np.asarray(xp.mean(x, axis=0)).tolist() == [1.5, 2.5, 3.5]
assert np.asarray(x + 1).tolist() == [[1, 2, 3], [4, 5, 6]]
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_source_newer_than_its_build_runs_interpreted(tmp_path) -> None:
    source, build = tmp_path / "module.py", tmp_path / f"module{EXTENSION_SUFFIXES[0]}"
    build.write_bytes(b"")
    source.write_text("")
    os.utime(build, (1_000, 1_000))
    with pytest.warns(RuntimeWarning, match="changed after it was compiled"):
        assert _Sources.stale(str(source), str(tmp_path / "module"))
    os.utime(source, (500, 500))
    assert not _Sources.stale(str(source), str(tmp_path / "module"))
    build.unlink()
    assert not _Sources.stale(str(source), str(tmp_path / "module"))


def test_caching_allocator_rejects_a_negative_bound() -> None:
    with pytest.raises(ValueError, match="max_cached_bytes"):
        CachingAllocator(CpuAllocator(Device("cpu")), max_cached_bytes=-1)


def test_block_fields() -> None:
    block = xp.hal.Block(4096, 64, "handle")
    assert (block.address, block.nbytes, block.handle, block.cache) == (4096, 64, "handle", None)
    block.cache = ("any", "thing")
    block.handle = None
    assert block.cache == ("any", "thing") and block.handle is None
    with pytest.raises(ValueError, match="-1 bytes"):
        xp.hal.Block(0, -1, None)
    with pytest.raises(AttributeError):
        block.nbytes = 1


@compiled
def test_namespace_functions_are_operations_dressed_as_functions() -> None:
    import inspect

    assert xp.add.__name__ == "add" and "add" in xp.add.__doc__
    assert str(inspect.signature(xp.add)).startswith("(x1")
    xp.asarray(1.0)  # the CPU backend binds the kernels when it starts
    assert xp.add.kernel is np.add  # a bare ufunc
    assert xp.sum.kernel is not None and xp.where.kernel is not None
    assert xp.floor_divide.kernel is not None  # a kernel with fixes, called the same way
    assert list(inspect.signature(xp.where).parameters) == ["condition", "x1", "x2"]


@pytest.mark.strict
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("size", [37, 700, 2000])  # two copies, where and a copy, bit selection
def test_where_fast_path_matches_numpy(dtype: str, size: int) -> None:
    rng = np.random.default_rng(3)
    c = rng.random(size) > 0.5
    x1 = (rng.standard_normal(size) * 10).astype(dtype)
    x2 = (rng.standard_normal(size) * 10).astype(dtype)
    got = xp.where(xp.asarray(c), xp.asarray(x1), xp.asarray(x2))
    assert got.dtype == getattr(xp, dtype)
    assert np.array_equal(np.asarray(got), np.where(c, x1, x2))
    scalar = True if dtype == "bool" else 7
    assert np.array_equal(np.asarray(xp.where(xp.asarray(c), xp.asarray(x1), scalar)),
                          np.where(c, x1, np.asarray(scalar, dtype)))
    with pytest.raises(TypeError):
        xp.where(xp.asarray(c.astype(np.int8)), xp.asarray(x1), xp.asarray(x2))


# -- elision -----------------------------------------------------------------------------------
def _inputs(n: int = LARGE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    return tuple(rng.standard_normal(n) for _ in range(3))


def _peak_during(expression) -> tuple[int, xp.Array]:
    """The allocator's peak above what was allocated before, while `expression()` ran."""
    gc.collect()
    xp.empty_cache()
    device = Device("cpu")
    allocator = device.backend.allocator(device)
    allocator.reset_peak_stats()
    before = allocator.stats()["allocated_bytes"]
    result = expression()
    return allocator.stats()["peak_allocated_bytes"] - before, result


@pytest.mark.parametrize("threaded", [False, True])
def test_expression_values_match_numpy(threaded: bool) -> None:
    an, bn, cn = _inputs()
    a, b, c = (xp.asarray(v) for v in (an, bn, cn))
    with thread_thresholds(4096) if threaded else contextlib.nullcontext():
        got = ((a * b + c) * 0.5 - (a - b) * (c + 1.0)) / 2.0 - 3
    want = ((an * bn + cn) * 0.5 - (an - bn) * (cn + 1.0)) / 2.0 - 3
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-15, atol=0)
    for array, original in zip((a, b, c), (an, bn, cn)):
        assert np.array_equal(np.asarray(array), original)  # the inputs are untouched


@compiled
def test_a_chain_of_operators_reuses_its_temporaries() -> None:
    an, bn, _ = _inputs()
    a, b = xp.asarray(an), xp.asarray(bn)
    nbytes = an.nbytes
    peak, result = _peak_during(lambda: (a * a + b * b) * 0.5 + 1)
    assert peak == 2 * nbytes  # a*a and b*b; the sum and the rest are written into a*a
    np.testing.assert_allclose(np.asarray(result), (an * an + bn * bn) * 0.5 + 1, rtol=1e-15)


@compiled
def test_small_temporaries_are_not_elided() -> None:
    an, bn, _ = _inputs(1000)
    a, b = xp.asarray(an), xp.asarray(bn)
    peak, _ = _peak_during(lambda: (a * a + b * b) * 0.5 + 1)
    assert peak > 2 * size_class(an.nbytes)


def test_named_arrays_are_never_overwritten() -> None:
    an, bn, _ = _inputs()
    a, b = xp.asarray(an), xp.asarray(bn)
    t = a * b
    kept = np.array(t)
    r = t + a
    assert r is not t and np.array_equal(np.asarray(t), kept)
    items = [a * b]
    r = items[0] + a
    assert r is not items[0] and np.array_equal(np.asarray(items[0]), kept)


def test_shared_memory_is_never_written() -> None:
    an, bn, _ = _inputs()
    a, b = xp.asarray(an), xp.asarray(bn)
    # a temporary whose buffer a view, a numpy array or the user's own data also reaches
    t = a * b
    view = t[::2]
    expected_view = np.array(view)
    _ = t[::1] + a  # the temporary view shares t's buffer
    assert np.array_equal(np.asarray(view), expected_view)
    host = np.asarray(a * b)  # numpy keeps the buffer alive
    kept = host.copy()
    _ = xp.asarray(host, copy=False) + a
    assert np.array_equal(host, kept)
    user = an.copy()
    _ = xp.asarray(user, copy=False) + b  # adopted user memory is not the allocator's to reuse
    assert np.array_equal(user, an)
    del view, host


def test_broadcast_operands_write_only_temporaries_of_the_results_shape() -> None:
    """An operator of operands that broadcast writes its result into a temporary operand only
    where that temporary has the result's shape; in place, into the left operand of that
    shape, the right one read as numpy reads it even where it is a view of the left one."""
    an, bn, _ = _inputs()
    matrix, row = an.reshape(256, 256), bn[:256]
    a, r = xp.asarray(matrix), xp.asarray(row)
    np.testing.assert_array_equal(np.asarray((r * 2.0) + a), row * 2.0 + matrix)
    np.testing.assert_array_equal(np.asarray((a * 2.0) - r), matrix * 2.0 - row)
    np.testing.assert_array_equal(np.asarray(r[:, None] * 1.0 - a), row[:, None] - matrix)
    x, expected = xp.asarray(matrix, copy=True), matrix.copy()
    x += x[3]
    expected += expected[3]
    np.testing.assert_array_equal(np.asarray(x), expected)
    with pytest.raises(ValueError):
        r += a  # (the result would not fit r)
    np.testing.assert_array_equal(np.asarray(r), row)


def test_in_place_operators_refuse_foreign_operands() -> None:
    x = xp.asarray([1.0, 2.0])
    for bad in ("a", None, object(), [1.0, 2.0]):
        with pytest.raises(TypeError):
            x += bad
        with pytest.raises(TypeError):
            x *= bad
    assert np.asarray(x).tolist() == [1.0, 2.0]


@pytest.mark.strict
@pytest.mark.parametrize("name", ["sum", "prod", "mean", "max", "min"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "complex128"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1), (), (1, 0)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_fast_path_matches_numpy(name: str, dtype: str, axis, keepdims: bool) -> None:
    host = (np.arange(12).reshape(3, 4) % 5 - 1).astype(dtype)
    x = xp.asarray(host)
    function = getattr(xp, name)
    accepted = (name in ("sum", "prod") or (name == "mean" and dtype in ("float32", "float64",
                "complex128")) or (name in ("max", "min") and dtype != "complex128"))
    if not accepted:
        with pytest.raises(TypeError):
            function(x, axis=axis, keepdims=keepdims)
        return
    got = function(x, axis=axis, keepdims=keepdims)
    oracle = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "max": np.max, "min": np.min}[name]
    kwargs = {"dtype": {"int32": np.int64, "uint8": np.uint64}.get(dtype)} \
        if name in ("sum", "prod") else {}
    want = np.asarray(oracle(host, axis=axis, keepdims=keepdims, **kwargs))
    assert got.shape == want.shape and np.asarray(got).dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_reduction_fast_path_leaves_errors_to_the_general_path() -> None:
    x = xp.asarray(np.ones((2, 3)))
    for bad in (2, -3, (0, 0), 1.0, (0, "a")):
        with pytest.raises((ValueError, IndexError, TypeError)):
            xp.sum(x, axis=bad)
    with pytest.raises(ValueError):
        xp.max(xp.asarray(np.ones((0, 3))), axis=0)
    with pytest.raises(TypeError, match="keepdims must be a bool"):  # the general path decides
        xp.sum(x, keepdims=1)
    assert xp.sum(x, dtype=xp.float32).dtype == xp.float32  # dtype=: the general path
    assert xp.sum(xp.asarray(np.ones((0, 3))), axis=0).shape == (3,)


@pytest.mark.parametrize("axis", [2**70, -2**70, 2**63, (0, -2), (1, 1), (0, 2**64), True,
                                  np.int64(1), [0], (0.0,)])
def test_reduction_axes_the_fast_path_declines_go_to_the_general_path(axis) -> None:
    """Axes that are not plain ints in range, or repeat one (after wrapping a negative one),
    get the general path's answer or error."""
    x = xp.asarray(np.arange(6.0).reshape(2, 3))
    outcomes = []
    for call in (xp.sum, getattr(xp.sum, "fallback", xp.sum)):
        try:
            outcomes.append(np.asarray(call(x, axis=axis)).tolist())
        except Exception as exc:  # noqa: BLE001 - the comparison is the test
            outcomes.append(type(exc))
    assert outcomes[0] == outcomes[1]
    assert isinstance(outcomes[0], type) or axis in (True, np.int64(1))


@pytest.mark.parametrize("ndim", [62, 63, 64])
def test_reductions_of_many_dimensions(ndim) -> None:
    """The fast path takes at most 62 dimensions (its axis mask); beyond, the general path."""
    host = np.arange(2.0).reshape((1,) * (ndim - 1) + (2,))
    x = xp.asarray(host)
    assert float(xp.sum(x)) == 1.0
    got = xp.max(x, axis=(0, -1), keepdims=True)
    want = np.max(host, axis=(0, -1), keepdims=True)
    assert got.shape == want.shape and np.array_equal(np.asarray(got), want)


def test_fast_paths_from_several_threads_stay_quiet_and_correct() -> None:
    """A quiet context is entered by one call at a time (the element-wise path's only by the
    first thread that used it); other calls set numpy's variable. Either way no floating-point
    warning escapes and every result is right."""
    import threading
    import warnings

    an = np.array([1.0, -1.0, 0.0, np.inf, np.nan])
    with np.errstate(all="ignore"):
        quotient, logarithm = an / 0.0, np.log(an)
    failures: list[BaseException] = []

    def work() -> None:
        try:
            a, big = xp.asarray(an), xp.asarray([1e308, 1e308])
            for _ in range(300):
                assert np.array_equal(np.asarray(a / 0.0), quotient, equal_nan=True)
                assert np.array_equal(np.asarray(xp.log(a)), logarithm, equal_nan=True)
                assert float(xp.sum(a[:3])) == 0.0
                assert float(xp.sum(big)) == np.inf  # overflow: no warning
                assert np.isnan(float(xp.mean(a[2:4] * 0.0)))  # 0 * inf: invalid
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    with warnings.catch_warnings():  # the filters are process-wide: set once, here
        warnings.simplefilter("error")
        for t in threads:
            t.start()
        work()
        for t in threads:
            t.join()
    assert not failures, failures
    assert np.geterr()["divide"] == "warn"  # the caller's numpy state is untouched


@pytest.mark.parametrize("function", ["empty", "zeros", "ones"])
@pytest.mark.parametrize("dtype", [None, "bool", "int8", "uint64", "float32", "complex128"])
@pytest.mark.parametrize("shape", [0, 7, (), (3, 0), (2, 3), (1 << 18,)])
def test_creation_fast_path_matches_numpy(function: str, dtype: str | None, shape) -> None:
    kwargs = {} if dtype is None else {"dtype": getattr(xp, dtype)}
    got = getattr(xp, function)(shape, **kwargs)
    want = getattr(np, function)(shape, dtype=dtype or "float64")
    assert got.shape == want.shape and got.dtype == getattr(xp, dtype or "float64")
    assert got.device == xp.Device("cpu")
    if function != "empty":
        assert np.array_equal(np.asarray(got), want)


@pytest.mark.strict
def test_creation_fast_path_leaves_the_rest_to_the_general_path() -> None:
    for bad in (-1, (2, -1), True, 2.0, (2, "a"), 1 << 62):
        with pytest.raises((TypeError, ValueError, MemoryError)):
            xp.zeros(bad)
    with pytest.raises(TypeError, match="dtype"):
        xp.ones(3, dtype=[1])
    with pytest.raises(TypeError, match="dtype"):
        xp.empty(3, dtype=np.float64)
    assert xp.zeros(3, device="cpu").device == xp.Device("cpu")  # a string: the general path
    with xp.device_scope("toy"):
        assert xp.zeros(2).device == xp.Device("toy")
    assert np.array_equal(np.asarray(xp.zeros(xp.asarray(3))), np.zeros(3))  # __index__ shape
    assert xp.zeros([2, 3]).shape == (2, 3)  # a list


@compiled
def test_cpu_backend_empty_is_the_compiled_allocation_outside_memory_scopes() -> None:
    backend = xp.Device("cpu").backend
    allocator = backend.allocator(backend.device)
    before = allocator.stats()["num_allocs"]
    for shape, dtype in (((), xp.bool), ((0,), xp.int8), ((3, 4), xp.complex64),
                         ((2, 1, 5), xp.uint16), ((0, 3), xp.float64)):
        for got in (fastpath.fresh(shape, dtype, None), backend.empty(shape, dtype)):
            assert got.shape == shape and got.dtype == dtype and got.device == backend.device
            assert got._strides == fresh_layout(shape, dtype)[1]  # the Python method's layout
            assert got._buffer.allocator is allocator and got._offset == 0
            assert got._handle.shape == shape and got._handle.dtype == dtype.numpy
    assert allocator.stats()["num_allocs"] == before + 10
    # the Python method's cases: a memory scope's pool, a shape that is not a tuple of ints
    # within the limits (which the general path judges, and mostly refuses)
    for shape in ([2], (2, -1), (2, 2.0), (2**70,), (2**40, 2**40), (1,) * 65, (np.int64(2),),
                  -1, 2**70, 2**59 + 1, True, 2.0, np.int64(2)):
        assert fastpath.fresh(shape, xp.float64, None) is None, shape
    with xp.memory_scope():
        assert fastpath.fresh((2,), xp.float64, None) is None
        assert backend.empty((2,), xp.float64)._buffer.allocator is not allocator
    with pytest.raises(TypeError):
        fastpath.fresh((2,), xp.float64)
    # empty/zeros's form: the device asked for (None on any other), cleared or not
    assert fastpath.fresh((2,), xp.float64, object(), False) is None
    with xp.device_scope("toy"):  # None: the default device, here not the CPU
        assert fastpath.fresh((2,), xp.float64, None) is None
        assert fastpath.fresh((2,), xp.float64, backend.device) is not None
    dirty = fastpath.fresh((64,), xp.int64, backend.device, False)
    dirty._handle[...] = -1
    address = dirty._buffer.block.address
    del dirty  # its block goes back to the cache, -1s in it, and is the next one taken
    cleared = fastpath.fresh((64,), xp.int64, backend.device, True)
    assert cleared._buffer.block.address == address and cleared._handle.tolist() == [0] * 64


@compiled
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_compiled_vector_takes_its_shape_with_the_blocks_cached_view(dtype: xp.DType) -> None:
    """An int shape: a vector whose shape tuple is its block's last user's where that was a
    vector of the same dtype and size, and a new one otherwise (the same block: sizes whose
    bytes round to the same size class, the newest cached block taken first)."""
    twins = [twin for twin in DTYPES if twin.itemsize == dtype.itemsize and twin != dtype]
    for n in (0, 1, 7):
        first = fastpath.fresh(n, dtype, None)
        assert first.shape == (n,) and first._handle.shape == (n,) and first.dtype == dtype
        assert first._strides == fresh_layout((n,), dtype)[1]
        shape, block = first._shape, first._buffer.block
        del first
        again = fastpath.fresh(n, dtype, None)
        assert again._buffer.block is block and again._shape is shape
        del again
        for shape_or_size, its_dtype in [(n + 1, dtype), ((n, 1), dtype)] + \
                [(n, twin) for twin in twins[:1]]:
            other = fastpath.fresh(shape_or_size, its_dtype, None)  # (one at a time)
            assert other._buffer.block is block and other._shape is not shape
            assert other._handle.shape == other.shape and other._handle.dtype == other.dtype.numpy
            del other
        vector = fastpath.fresh(n, dtype, None)
        assert vector._buffer.block is block
        assert vector.shape == (n,) and vector._handle.shape == (n,)
        vector._handle[...] = 1  # writable, its own
        assert np.asarray(vector).tolist() == [1] * n


@compiled
@pytest.mark.parametrize("dtype", DTYPES)
def test_cpu_backend_copy_is_the_compiled_copy_outside_memory_scopes(dtype: str) -> None:
    backend = xp.Device("cpu").backend
    allocator = backend.allocator(backend.device)
    data = np.arange(-12, 12).astype(np_dtype(dtype)).reshape(4, 6)
    own = xp.asarray(data, copy=True)  # in a block of the allocator
    sources = [xp.asarray(data), own, own[1:3], own[:, ::2], own[::-1], own.T, own[2, 3],
               own[:0], xp.asarray(data[::-1, 1:]), xp.asarray(data.T)]
    for x in sources:
        fast = fastpath.copied(x)  # None only for another layout without the numpy view
        contiguous = x._strides == fresh_layout(x.shape, x.dtype)[1]
        assert fast is not None or (x._handle is None and not contiguous)
        expected = np.array(np.asarray(x))
        for got in (backend.copy(x) if fast is None else fast, backend.copy(x)):
            assert got._buffer is not x._buffer and got._buffer.allocator is allocator
            assert got.dtype == x.dtype and got.shape == x.shape and got._offset == 0
            assert got._strides == fresh_layout(x.shape, x.dtype)[1]
            np.testing.assert_array_equal(got._handle, expected)
            got._handle[...] = 0  # the copy's memory is its own
            np.testing.assert_array_equal(np.asarray(x), expected)
    np.testing.assert_array_equal(data, np.arange(-12, 12).astype(np_dtype(dtype)).reshape(4, 6))


@compiled
def test_the_compiled_copy_declines_what_python_judges() -> None:
    big = xp.asarray(np.arange(1 << 18, dtype=np.float64))  # 2 MiB: copied without the GIL
    np.testing.assert_array_equal(fastpath.copied(big)._handle, np.arange(1 << 18))
    for other in (np.arange(3.0), 3.0, None, xp.asarray(np.arange(3.0), device="ref")):
        assert fastpath.copied(other) is None
    with xp.memory_scope():
        x = xp.ones(3)
        assert fastpath.copied(x) is None
        copy = xp.asarray(x, copy=True)
        assert copy._buffer.allocator is x._buffer.allocator  # the scope's pool
        np.testing.assert_array_equal(np.asarray(copy), [1.0, 1.0, 1.0])


@compiled
@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["float64", "float32"]),
       st.one_of(st.integers(-2**24, 2**24), st.floats(-1e30, 1e30)),
       st.floats(-1e6, 1e6).filter(lambda step: abs(step) > 1e-9),
       st.integers(0, 300))
def test_the_compiled_float_arange_is_numpy_bit_for_bit(dtype, start, step, count) -> None:
    stop = start + count * step
    expected = np.arange(start, stop, step, dtype=dtype)
    if expected.size >= 1 << 14:
        return
    got = fastpath.arange(start, step, expected.size, getattr(xp, dtype), None)
    assert got is not None and got._handle.tobytes() == expected.tobytes()
    assert np.asarray(xp.arange(start, stop, step, dtype=getattr(xp, dtype))).tobytes() == \
        expected.tobytes()


@compiled
def test_the_compiled_arange_declines_what_python_judges() -> None:
    for n in (1, 2, 10, (1 << 14) - 1):
        np.testing.assert_array_equal(fastpath.arange(0, 1, n, xp.int64, None)._handle,
                                      np.arange(n))
    np.testing.assert_array_equal(fastpath.arange(-2**61, 2**60, 5, xp.int64, None)._handle,
                                  np.arange(-2**61, 2**61 + 2**59, 2**60))
    # values across the whole int64 range: no intermediate overflows (Python's exact range:
    # numpy's length, computed in floats, is one short for the first)
    for args in ((-2**62, 2**63 - 1, 2**62 - 1), (2**63 - 5, -2**63, -2**62)):
        expected = list(range(*args))
        got = fastpath.arange(args[0], args[2], len(expected), xp.int64, None)
        assert got._handle.tolist() == expected
        assert np.asarray(xp.arange(*args)).tolist() == expected
    assert fastpath.arange(2**63, 1, 1, xp.int64, None) is None  # beyond a C integer
    assert fastpath.arange(0, 1, 1 << 14, xp.int64, None) is None  # numpy's vectorised fill
    assert fastpath.arange(0, 1, -1, xp.int64, None) is None
    assert fastpath.arange(0, 1, 3, xp.int32, None) is None
    assert fastpath.arange(2**53 + 1, 1, 3, xp.float64, None) is None  # a float rounds these ints
    assert fastpath.arange(2**24 + 1, 1, 3, xp.float32, None) is None
    assert fastpath.arange(0, 1, 3, xp.float64, object()) is None  # another device
    with xp.device_scope("toy"):  # None: the default device, here not the CPU
        assert fastpath.arange(0, 1, 3, xp.float64, None) is None
        assert xp.arange(3).device == xp.Device("toy") and xp.arange(3.0).device == xp.Device("toy")
    allocator = xp.Device("cpu").backend.allocator(xp.Device("cpu"))
    assert xp.arange(3)._buffer.allocator is allocator
    with xp.memory_scope():
        assert fastpath.arange(0, 1, 3, xp.int64, None) is None
        assert xp.arange(3)._buffer.allocator is not allocator  # the scope's pool
        np.testing.assert_array_equal(np.asarray(xp.arange(3)), [0, 1, 2])
    np.testing.assert_array_equal(np.asarray(xp.arange(1e308, 1.5e308, 1e308)), [1e308])


@compiled
def test_operations_take_calls_of_every_form() -> None:
    """The compiled element-wise functions: their vectorcall takes positional calls; keywords and
    other arities reach the standard's signature (its TypeError); an Operation made after the
    speedups were configured has no vectorcall and takes the same calls through `__call__`."""
    a = xp.asarray([1.0, 2.0])
    assert np.asarray(xp.add(a, 1.0)).tolist() == [2.0, 3.0]
    assert xp.add(a, a).__class__ is xp.Array
    with pytest.raises(TypeError, match="positional-only"):
        xp.add(a, x2=a)
    with pytest.raises(TypeError, match=r"^add\(\) takes 2 positional arguments but 4"):
        xp.add(a, a, a, a)
    with pytest.raises(TypeError, match=r"^add\(\) missing 2 required positional"):
        xp.add()
    plans = {xp.float64: OPERATIONS["negative"].results[xp.float64][3]}
    late = fastpath.Operation("negative", plans, OPERATIONS["negative"].fallback,
                              lambda name, function, *args, **kwargs: function(*args, **kwargs),
                              arity=1)
    assert np.asarray(late(a)).tolist() == [-1.0, -2.0]
    with pytest.raises(TypeError):
        late(a, extra=1)
    with pytest.raises(ValueError, match="arity must be 1 or 2"):
        fastpath.Operation("x", {}, abs, abs, arity=3)


@compiled
def test_ufunc_kernels_run_numpys_own_loop() -> None:
    """Where a kernel is a ufunc whose dtypes numpy resolves without a cast, the fast path holds
    numpy's loop for them (a numpy without the documented low-level access would leave every
    Loop out, slower but correct: this test says so)."""
    for name, dtypes in [("add", NUMERIC), ("multiply", NUMERIC), ("exp", REAL_FLOATING),
                         ("greater", (xp.int64, xp.float64)), ("logical_and", (xp.bool,))]:
        results = getattr(xp, name).results
        for dtype in dtypes:
            assert isinstance(results[dtype][2], fastpath.Loop), (name, dtype)


@compiled
@pytest.mark.parametrize("size", [0, 1, 7, 499, 500, 501, 3000])  # the GIL is handed over > 500
def test_numpys_loops_called_directly_match_the_ufunc(size: int) -> None:
    values = np.linspace(-300.0, 300.0, size)
    special = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e308, -1e-310]
    values[:len(special)] = special[:size]
    for dtype in (xp.float64, xp.float32, xp.int64, xp.uint8, xp.complex128):
        with np.errstate(all="ignore"):
            data = values.astype(np_dtype(dtype)) if dtype != xp.int64 else \
                np.arange(size, dtype=np.int64) * 7919 - 3
        a, b = xp.asarray(data, copy=True), xp.asarray(data[::-1], copy=True)
        for name in ("add", "multiply", "subtract", "greater", "equal", "sqrt", "exp", "negative"):
            op = getattr(xp, name)
            if op.results.get(a.dtype) is None:
                continue
            args = (a, b) if OPS[name].arity == 2 else (a,)
            with np.errstate(all="ignore"):
                expected = op.kernel(*(np.asarray(x) for x in args))
            assert _bits(op(*args)) == _bits(xp.asarray(expected)), (name, dtype)


@compiled
def test_numpys_loops_take_scalars_as_numpy_converts_them() -> None:
    """A Python scalar goes to the loop in the operands' dtype; one the dtype would round takes
    the ufunc's path. Either way the answer is numpy's."""
    cases = [(xp.float32, 0.1), (xp.float32, 1e300), (xp.float32, 2**24 + 1), (xp.float32, 3),
             (xp.float64, 2**53 + 1), (xp.float64, -0.0), (xp.float64, 5), (xp.int64, 2**62),
             (xp.int64, -(2**63)), (xp.bool, True)]
    for dtype, scalar in cases:
        data = np.arange(-3, 4).astype(np_dtype(dtype))
        a = xp.asarray(data, copy=True)
        for name in ("add", "multiply", "subtract", "less_equal") if dtype != xp.bool else \
                ("logical_or", "equal", "bitwise_xor"):
            op = getattr(xp, name)
            with np.errstate(all="ignore"):
                for args in ((a, scalar), (scalar, a)):
                    expected = op.kernel(*(np.asarray(x) if isinstance(x, xp.Array) else x
                                           for x in args))
                    assert _bits(op(*args)) == _bits(xp.asarray(expected)), (name, args)


@compiled
def test_numpys_loops_leave_overlap_and_unaligned_memory_to_the_ufunc() -> None:
    data = np.arange(12.0)
    a = xp.asarray(data, copy=True)
    view = a[2:]
    view += a[:-2]  # the output overlaps an operand: numpy's ufunc buffers it
    expected = data.copy()
    expected[2:] += data[:-2].copy()
    np.testing.assert_array_equal(np.asarray(a), expected)
    raw = np.zeros(8 * 10 + 1, dtype=np.uint8)
    unaligned = np.frombuffer(raw.data, dtype=np.float64, count=10, offset=1)
    assert not unaligned.flags.aligned
    u = xp.asarray(unaligned)  # shares the unaligned memory
    u_sum = u + xp.asarray(np.ones(10), copy=True)
    np.testing.assert_array_equal(np.asarray(u_sum), np.ones(10))
    strided = xp.asarray(np.arange(20.0), copy=True)[::2]
    np.testing.assert_array_equal(np.asarray(strided * strided), np.arange(0.0, 20.0, 2.0) ** 2)


# -- the fast paths against the general paths they stand in front of ----------------------------
_SIDE = st.integers(0, 5)
_SHAPES = st.lists(_SIDE, min_size=0, max_size=3).map(tuple)


def _bits(x: xp.Array) -> tuple[str, tuple[int, ...], bytes]:
    return x.dtype.name, x.shape, np.ascontiguousarray(np.asarray(x)).tobytes()


@st.composite
def _operands(draw: st.DrawFn, arity: int) -> tuple[object, ...]:
    """Operands the fast path takes: arrays of one dtype, of one shape or of shapes that
    broadcast together (or not: the error is the general path's), or one with a Python scalar
    (special values included), in either order."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(_SHAPES)
    shapes = [shape] * arity if draw(st.booleans()) else [draw(_SHAPES) for _ in range(arity)]
    arrays = [xp.asarray(draw(hnp.arrays(np_dtype(dtype), shapes[i])))
              for i in range(arity)]
    if arity == 2 and draw(st.booleans()):
        scalar = draw(st.booleans() if dtype is xp.bool else st.integers(-3, 3)
                      if dtype in INTEGER else st.floats(allow_nan=True, width=64))
        arrays[draw(st.integers(0, 1))] = scalar
    return tuple(arrays)


COMPILED_OPERATIONS = {**OPERATIONS, "where": xp.where}  # (clip is one Python function)


@compiled
@settings(max_examples=300)
@given(data=st.data(), name=st.sampled_from(sorted(COMPILED_OPERATIONS)))
def test_fast_operations_equal_their_general_path_bit_for_bit(data, name) -> None:
    """Every compiled element-wise function (and `where`) against its `.fallback`: the same
    dtype, shape and bytes, or the same exception."""
    function = COMPILED_OPERATIONS[name]
    if name == "where":
        condition = data.draw(hnp.arrays(np.bool_, data.draw(_SHAPES)))
        shapes = data.draw(st.sampled_from([(condition.shape,) * 2, (condition.shape[1:], ()),
                                            ((), (1,) * condition.ndim)]))
        values = tuple(xp.asarray(np.zeros(shape) + i) for i, shape in zip((1, 2), shapes))
        args = (xp.asarray(condition), *values)
    else:
        args = data.draw(_operands(OPS[name].arity))
    outcomes = []
    for call in (function, function.fallback):
        try:
            outcomes.append(_bits(call(*args)))
        except Exception as exc:  # noqa: BLE001 - the comparison is the test
            outcomes.append(type(exc))
    assert outcomes[0] == outcomes[1]


@compiled
@settings(max_examples=200)
@given(data=st.data(), name=st.sampled_from(["sum", "prod", "mean", "max", "min"]),
       keepdims=st.booleans())
def test_fast_reductions_equal_their_general_path_bit_for_bit(data, name, keepdims) -> None:
    dtype = data.draw(st.sampled_from(NUMERIC))
    shape = data.draw(_SHAPES)
    x = xp.asarray(data.draw(hnp.arrays(np_dtype(dtype), shape)))
    axes = st.sampled_from(range(-len(shape), len(shape))) if shape else st.nothing()
    axis = data.draw(st.none() | axes | st.lists(axes, max_size=len(shape)).map(tuple))
    function = getattr(xp, name)
    outcomes = []
    for call in (function, function.fallback):
        try:
            outcomes.append(_bits(call(x, axis=axis, keepdims=keepdims)))
        except Exception as exc:  # noqa: BLE001 - the comparison is the test
            outcomes.append(type(exc))
    assert outcomes[0] == outcomes[1]


@compiled
@given(name=st.sampled_from(["empty", "zeros", "ones"]), shape=_SHAPES,
       dtype=st.sampled_from(DTYPES))
def test_fast_creation_equals_its_general_path(name, shape, dtype) -> None:
    function = getattr(xp, name)
    fast, general = function(shape, dtype=dtype), function.fallback(shape, dtype=dtype)
    assert (fast.dtype, fast.shape) == (general.dtype, general.shape)
    if name != "empty":
        assert _bits(fast) == _bits(general)


@compiled
@pytest.mark.parametrize("name", [*COMPILED_OPERATIONS, "sum", "mean", "zeros"])
def test_compiled_functions_lead_to_their_python_source(name) -> None:
    function = COMPILED_OPERATIONS.get(name) or getattr(xp, name)
    source = inspect.unwrap(function)  # through numpy mode's positional-form wrapper, if any
    assert source.__name__ == function.__name__
    assert inspect.unwrap(function.__wrapped__) is source
    if inspect.isfunction(source):  # defined in a module that runs interpreted
        assert "def " in inspect.getsource(function)
    else:  # a module compiled by Cython: its code object still names the source and the line
        code = source.__code__
        lines = (ROOT / code.co_filename).read_text().splitlines()[code.co_firstlineno - 1:]
        assert any(line.startswith(f"def {name}(") for line in lines[:5])
