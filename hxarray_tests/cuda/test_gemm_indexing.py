"""The CUDA backend's matrix product, gather/scatter, nonzero and arange kernels on cuda:0 (the
simulator here; a GPU where the registered CUDA backend runs one), against numpy: every dtype,
batched, broadcast, transposed and strided operands, sizes that are not multiples of the tile,
negative, duplicate and out-of-range indices, large and empty inputs; none of it on the host."""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import hxarray as xp
from hxarray.backends.codegen import gemm
from hxarray.backends.codegen import indexing as ix
from hxarray.backends.cuda import backend as cuda_backend
from hxarray.backends.cuda.backend import CudaBackend
from hxarray.backends.registry import registry
from hxarray.hal.kernel_cache import KernelCache

from ..oracle import (
    COMPLEX_FLOATING,
    DTYPES,
    INTEGER,
    NUMERIC,
    REAL_FLOATING,
    assert_matches,
    ids,
    np_dtype,
    sample,
)

PRIMITIVES = ("matmul", "gather", "scatter", "nonzero")


@pytest.fixture(scope="module")
def cuda(kernel_cache: KernelCache) -> Iterator[xp.Device]:
    """cuda:0 as the default device: the registered CUDA backend where it runs, else (no
    HXARRAY_CUDA_DRIVER) a simulator-backed one registered in its place for this module. Fails
    if any of the primitives under test ran on the host."""
    device = xp.Device("cuda:0")
    previous = registry.get("cuda")
    backend = previous
    if previous.unavailable_reason() is not None:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("HXARRAY_CUDA_DRIVER", "sim")
            if kernel_cache.directory is not None:
                env.setenv("HXARRAY_KERNEL_CACHE", str(kernel_cache.directory))
            backend = CudaBackend()
        registry.register(backend, replace=True)
    try:
        with xp.device_scope(device):
            yield device
        assert not set(backend.host_fallbacks) & set(PRIMITIVES), backend.host_fallbacks
    finally:
        if backend is not previous:
            registry.register(previous, replace=True)


def on(device: xp.Device, data: np.ndarray) -> xp.Array:
    return xp.asarray(data, device=device)


def host(x: xp.Array) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


# -- matmul ----------------------------------------------------------------------------------------
def operands(dtype: xp.DType, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Random values of `dtype`: small integers (so products stay exact), bools, or normal
    floats (complex parts both)."""
    rng = np.random.default_rng(seed)
    if dtype is xp.bool:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in INTEGER:
        info = np.iinfo(np_dtype(dtype))
        return rng.integers(max(info.min, -50), min(info.max, 50), shape).astype(np_dtype(dtype))
    values = rng.standard_normal(shape)
    if dtype in COMPLEX_FLOATING:
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(np_dtype(dtype))


def check_product(got: xp.Array, a: np.ndarray, b: np.ndarray) -> None:
    """Exact for bool and integers (numpy's wrapping products); floating-point values within the
    error bound of a sum of K products, (K + 2) eps sum |a||b|, of the exact product."""
    with np.errstate(all="ignore"):
        expected = np.matmul(a, b)
    if a.dtype.kind in "biu":
        assert_matches(got, expected)
        return
    assert got.dtype.name == expected.dtype.name and got.shape == expected.shape
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    exact = np.matmul(a.astype(wide), b.astype(wide))
    bound = np.matmul(np.abs(a).astype(np.float64), np.abs(b).astype(np.float64))
    eps = np.finfo(a.dtype).eps
    assert np.all(np.abs(host(got) - exact) <= (a.shape[-1] + 2) * eps * bound + 1e-300)


SHAPES = [((1, 1), (1, 1)), ((3, 4), (4, 5)), ((65, 17), (17, 70)), ((2, 3, 4), (4, 5)),
          ((2, 1, 5, 3), (4, 3, 2)), ((7,), (7, 3)), ((4, 7), (7,)), ((3, 0), (0, 2)),
          ((0, 3), (3, 2)), ((130, 33), (33, 5))]


@pytest.mark.parametrize("dtype", NUMERIC, ids=ids(NUMERIC))
def test_matmul_every_dtype_and_shape(cuda, dtype):
    for n, (sa, sb) in enumerate(SHAPES):
        a, b = operands(dtype, sa, 2 * n), operands(dtype, sb, 2 * n + 1)
        check_product(on(cuda, a) @ on(cuda, b), a, b)


def primitive_matmul(device: xp.Device, a: np.ndarray, b: np.ndarray) -> xp.Array:
    """The backend's matmul itself (the namespace takes no bool operands)."""
    backend = device.backend
    out = backend.empty((*a.shape[:-2], a.shape[-2], b.shape[-1]), xp.asarray(a).dtype, device)
    backend.matmul(on(device, a), on(device, b), out)
    return out


@pytest.mark.parametrize("dtype", [xp.int32, xp.float64, xp.complex64], ids=str)
def test_matmul_of_views(cuda, dtype):
    """Transposed, stepped, reversed and broadcast operands need no copies."""
    a = operands(dtype, (3, 40, 70), 1)
    b = operands(dtype, (3, 70, 40), 2)
    x, y = on(cuda, a), on(cuda, b)
    check_product(x.mT @ y.mT, np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2))
    check_product(x[:, ::3, ::2] @ y[:, ::2, 1::2], a[:, ::3, ::2], b[:, ::2, 1::2])
    check_product(x[::-1, ::-1] @ y[:, :, ::-1], a[::-1, ::-1], b[:, :, ::-1])
    row = xp.broadcast_to(x[:1, :1], (3, 5, 70))  # a zero-stride batch and rows
    check_product(row @ y, np.broadcast_to(a[:1, :1], (3, 5, 70)), b)
    got = xp.tensordot(x, y, axes=([2], [1]))
    expected = np.tensordot(a, b, axes=([2], [1]))
    if dtype in INTEGER:
        assert_matches(got, expected)
    else:
        np.testing.assert_allclose(host(got), expected, rtol=1e-4, atol=1e-4)


def test_matmul_of_many_batch_axes(cuda):
    """More batch axes than the kernel takes (their strides do not merge): one launch per index
    of the leading axes."""
    a = operands(xp.int16, (2,) * 9 + (3, 4), 3)
    b = operands(xp.int16, (2,) * 9 + (4, 2), 4)
    x = xp.permute_dims(on(cuda, a.transpose(*range(8, -1, -1), 9, 10).copy()),
                        (*range(8, -1, -1), 9, 10))
    check_product(x @ on(cuda, b), a, b)


@pytest.mark.parametrize("dtype", [xp.float32, xp.float64], ids=str)
def test_matmul_rounds_like_numpy_own_loop(cuda, dtype):
    """The GEMM kernel's outputs are the sums of their products in order of k, every operation
    rounded on its own: bit for bit numpy's additions of products (no fused multiply-adds). On a
    GPU, cuBLAS computes floating-point products in its own order, with fused multiply-adds:
    within the classic bound, k units of rounding of the sum of the products' magnitudes."""
    a, b = operands(dtype, (20, 37), 5), operands(dtype, (37, 19), 6)
    expected = np.zeros((20, 19), a.dtype)
    for k in range(37):
        expected = expected + a[:, k:k + 1] * b[k:k + 1, :]
    got = on(cuda, a) @ on(cuda, b)
    if cuda.backend.simulated:
        assert_matches(got, expected)
    else:
        bound = 37 * np.finfo(a.dtype).eps * (np.abs(a) @ np.abs(b))
        assert np.all(np.abs(host(got) - expected) <= bound)


def test_matmul_of_integers_wraps_and_bool_is_or_of_ands(cuda):
    a = np.full((2, 70), 2**62, np.int64)
    b = np.full((70, 2), 3, np.int64)
    assert_matches(on(cuda, a) @ on(cuda, b), a @ b)
    m = np.zeros((3, 80), bool)
    m[1, 77] = True
    n = np.zeros((80, 2), bool)
    n[77, 1] = True
    assert_matches(primitive_matmul(cuda, m, n), m @ n)
    m, n = operands(xp.bool, (2, 67, 30), 7), operands(xp.bool, (2, 30, 66), 8)
    assert_matches(primitive_matmul(cuda, m, n), m @ n)


def test_cublas_path_uses_real_cupy_names():
    """The GPU path (cupy.matmul on views) cannot run here: its CuPy names and calls are checked
    against the installed CuPy, as driver_cupy's are."""
    pytest.importorskip("cupy")
    from . import test_driver_cupy as check

    tree = ast.parse(Path(cuda_backend.__file__).read_text())
    method = next(node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and
                  node.name == "_cublas_matmul")
    calls = {id(n.func): n for n in ast.walk(method) if isinstance(n, ast.Call)}
    checked = 0
    for node in ast.walk(method):
        parts = check._chain(node) if isinstance(node, ast.Attribute) else None
        if parts and parts[0] == "cupy":
            obj = check._resolve(parts, node.lineno)
            check._bind(check._signature(obj), calls[id(node)], ".".join(parts))
            checked += 1
    assert checked == 1


def test_gemm_layout_matches_the_c_struct():
    assert gemm.LAYOUT.itemsize == 344 and ix.INDEX_LAYOUT.itemsize == 232 + 96 * ix.MAX_INDICES
    assert gemm.grid(1, 1, 1, 2**31 - 1) == (1, 1, 1)
    assert gemm.grid(65, 129, 70000, 2) == (2, 2, 65535)


# -- gather and scatter ----------------------------------------------------------------------------
INDEX_DTYPES = INTEGER


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES, ids=ids(INDEX_DTYPES))
def test_gather_with_every_index_dtype(cuda, index_dtype):
    a = sample((5, 6, 7), xp.float64)
    positions = np.array([[0, 4], [3, 3]]).astype(np_dtype(index_dtype))
    x, i = on(cuda, a), on(cuda, positions)
    assert_matches(x[i], a[positions])
    assert_matches(x[:, i], a[:, positions])
    assert_matches(x[:, :, i], a[:, :, positions])
    assert_matches(x[i, 1:3, i], a[positions, 1:3, positions])  # not adjacent: B first
    assert_matches(xp.take(x, i[0], axis=1), np.take(a, positions[0], axis=1))


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_gather_and_scatter_every_element_size(cuda, dtype):
    a = sample((6, 5), dtype)
    rows, cols = np.array([-1, 0, 5, -6]), np.array([[4], [-5]])
    x = on(cuda, a)
    assert_matches(x[on(cuda, rows)], a[rows])
    assert_matches(x[on(cuda, rows), on(cuda, cols)], a[rows, cols])
    values = sample((2, 4), dtype, seed=9)
    a[rows[:2], cols] = values[:, :2]
    x[on(cuda, rows[:2]), on(cuda, cols)] = on(cuda, values[:, :2])
    assert_matches(x, a)


def test_gather_and_scatter_on_strided_views(cuda):
    a = sample((8, 9, 4), xp.int32)
    x = on(cuda, a)
    view, view_a = x[::-2, 1::3], a[::-2, 1::3]
    i = np.array([[2], [-3]])  # no duplicates: which of them a GPU stores is left open
    assert_matches(view[:, on(cuda, i)], view_a[:, i])
    values = sample((4, 2, 1, 8), xp.int32, seed=2)
    view[:, on(cuda, i)] = on(cuda, values)[..., ::-2]  # strided values
    view_a[:, i] = values[..., ::-2]
    assert_matches(x, a)


def test_scatter_broadcasts_scalars_and_stores_one_of_duplicate_values(cuda):
    a = np.zeros(6, np.float32)
    x = on(cuda, a)
    x[on(cuda, np.array([1, 3, -1]))] = 7.0
    assert_matches(x, np.array([0, 7, 0, 7, 0, 7], np.float32))
    x[on(cuda, np.array([2, 2, 2, 2]))] = on(cuda, np.array([1, 2, 3, 4], np.float32))
    assert host(x)[2] in (1, 2, 3, 4)


def test_scatter_reads_its_indices_and_values_before_writing(cuda):
    """Index arrays and values sharing x's memory are copied first."""
    a = np.array([3, 2, 1, 0, 5, 4], np.int64)
    x = on(cuda, a)
    x[x] = xp.flip(x)
    expected = a.copy()
    expected[a.copy()] = a[::-1].copy()
    assert_matches(x, expected)


@pytest.mark.parametrize("operation", ["gather", "scatter"])
def test_indices_out_of_range_raise_index_error_naming_numpy_s_index(cuda, operation,
                                                                   monkeypatch):
    monkeypatch.setenv("HXARRAY_CUDA_SYNC_CHECKS", "1")  # at once, so the call names it
    a = np.arange(30.0).reshape(5, 6)
    x = on(cuda, a)
    cases = [
        ((np.array([1, 5, -9]),), "index 5 is out of bounds for axis 0 with size 5"),
        ((np.array([0, -6, 7]),), "index -6 is out of bounds for axis 0 with size 5"),
        ((np.array([[0], [1]]), np.array([2, 6, -7])),
         "index 6 is out of bounds for axis 1 with size 6"),
        ((np.array([3, 250], np.uint8),), "index 250 is out of bounds for axis 0 with size 5"),
    ]
    for key, message in cases:
        with pytest.raises(IndexError) as numpy_error:
            a[key]
        assert str(numpy_error.value) == message  # numpy's own words
        device_key = tuple(on(cuda, k) for k in key)
        function = "__getitem__" if operation == "gather" else "__setitem__"
        with pytest.raises(IndexError, match=f"^{function}: {message}$"):  # named by the call
            if operation == "gather":
                x[device_key]
            else:
                x[device_key] = -1.0
        assert_matches(x, a)  # a failed scatter writes nothing
    # numpy wraps a uint64 index past int64's range to a negative one; the contract calls it out
    # of range
    huge = on(cuda, np.array([2**64 - 1], np.uint64))
    with pytest.raises(IndexError, match=": index 18446744073709551615 is out of bounds"):
        x[huge] if operation == "gather" else x.__setitem__(huge, 0.0)


def test_gather_over_more_axes_than_the_kernel_takes(cuda, monkeypatch):
    """A 10-D view whose axes do not merge: one launch per index of the leading axes, each with
    its own C-order positions for the error key (checked at once, so the call names it)."""
    monkeypatch.setenv("HXARRAY_CUDA_SYNC_CHECKS", "1")
    a = sample((2,) * 10, xp.int8)
    order = (*range(9, -1, -1),)
    x = xp.permute_dims(on(cuda, np.ascontiguousarray(a.transpose(order))), order)
    i = np.array([1, 0, -1])
    assert_matches(x[..., on(cuda, i)], a[..., i])
    assert_matches(xp.take_along_axis(x, on(cuda, np.ones((2,) * 10, np.int64)), axis=3),
                   np.take_along_axis(a, np.ones((2,) * 10, np.int64), axis=3))
    with pytest.raises(IndexError,
                       match="^__getitem__: index 2 is out of bounds for axis 9 with size 2$"):
        x[..., on(cuda, np.array([0, 2]))]


def test_gather_of_a_million_elements(cuda):
    a = np.random.default_rng(0).standard_normal(1_000_000).astype(np.float32)
    i = np.random.default_rng(1).integers(-1_000_000, 1_000_000, 1_000_000)
    assert_matches(on(cuda, a)[on(cuda, i)], a[i])


# -- nonzero ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_nonzero_every_dtype(cuda, dtype):
    a = sample((9, 11), dtype)
    a[::3] = 0
    if dtype in REAL_FLOATING + COMPLEX_FLOATING:
        a[1, 1] = -0.0  # zero
        a[2, 2] = np.nan  # not zero
    for x, view in ((on(cuda, a), a), (on(cuda, a)[::-2, 1::3], a[::-2, 1::3])):
        for got, expected in zip(xp.nonzero(x), np.nonzero(view), strict=True):
            assert_matches(got, expected.astype(np.int64))


@pytest.mark.parametrize("density", [0.0, 0.001, 0.5, 1.0])
def test_nonzero_of_a_million_elements(cuda, density):
    a = np.random.default_rng(2).random((1000, 1000)) < density
    results = xp.nonzero(on(cuda, a))
    for got, expected in zip(results, np.nonzero(a), strict=True):
        assert_matches(got, expected.astype(np.int64))
    assert all(host(r).tolist() == host(s).tolist()  # the same positions on every run
               for r, s in zip(results, xp.nonzero(on(cuda, a))))


def test_nonzero_of_empty_and_many_axis_arrays(cuda):
    for shape in ((0,), (3, 0), (0, 2, 5)):
        got = xp.nonzero(on(cuda, np.ones(shape, np.int8)))
        assert len(got) == len(shape) and all(g.shape == (0,) for g in got)
    a = np.random.default_rng(3).random((2,) * 9 + (3,)) < 0.3  # coordinates from positions
    for got, expected in zip(xp.nonzero(on(cuda, a)), np.nonzero(a), strict=True):
        assert_matches(got, expected.astype(np.int64))


def test_boolean_masks_select_in_c_order(cuda):
    a = sample((40, 50), xp.complex64)
    mask = np.random.default_rng(4).random((40, 50)) < 0.2
    x, m = on(cuda, a), on(cuda, mask)
    assert_matches(x[m], a[mask])
    assert_matches(x[m[:, 0]], a[mask[:, 0]])
    assert_matches(xp.where(m, x, 0), np.where(mask, a, 0))


# -- arange ----------------------------------------------------------------------------------------
ARANGES = [(0, 10, 1), (5, -7, -3), (-3, 3, 2), (0, 0, 1), (3, 4, 5), (2, 2**40 + 2, 2**38),
           (0.0, 1.0, 0.1), (-2.5, 7.25, 0.3), (1e10, 1e10 + 100, 7.5), (1.0, -1.0, -1 / 3),
           (0, 5e-324 * 7, 5e-324), (0.1, 1e4, 0.7), (3, 1000003, 1)]


@pytest.mark.parametrize("dtype", NUMERIC, ids=ids(NUMERIC))
def test_arange_is_numpy_s_bit_for_bit(cuda, dtype):
    for start, stop, step in ARANGES:
        if dtype in INTEGER and not all(isinstance(v, int) for v in (start, stop, step)):
            continue
        values = range(start, stop, step) if dtype in INTEGER else ()
        info = np.iinfo(np_dtype(dtype)) if values else None
        if values and not info.min <= min(values[0], values[-1]) <= max(values[0], values[-1]) \
                <= info.max:  # numpy wraps them; hxarray refuses values its dtype cannot hold
            with pytest.raises(OverflowError, match="do not fit"):
                xp.arange(start, stop, step, dtype=dtype)
            continue
        try:
            with np.errstate(all="ignore"):
                expected = np.arange(start, stop, step, dtype=np_dtype(dtype))
        except OverflowError:
            with pytest.raises(OverflowError):
                xp.arange(start, stop, step, dtype=dtype)
            continue
        with np.errstate(all="ignore"):
            got = xp.arange(start, stop, step, dtype=dtype)
        assert got.device == cuda
        assert_matches(got, expected)


def test_arange_plan_follows_numpy_s_length_rules():
    assert ix.arange_plan(0, 5e-324, 1e308, xp.float64)[0] == 1  # the quotient underflows
    assert ix.arange_plan(0, -5e-324, 1e308, xp.float64)[0] == 0
    assert ix.arange_plan(0, 10, 3, xp.int64)[0] == 4
    assert ix.arange_plan(0, 1e300, 1e-300, xp.float64) is None  # numpy refuses the length
    assert ix.arange_plan(0, 3, 1, xp.bool) is None
    assert ix.arange_plan(0.5, 3, 1, xp.int32) is None
    assert ix.arange_plan(0, math.inf, 1, xp.float64) is None
    with pytest.raises(ValueError, match=r"would span more than 2\*\*63 - 1 bytes"):
        xp.arange(0, 1e300, 1e-300, device=xp.Device("cpu"))
