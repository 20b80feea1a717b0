"""Hand-written CUDA kernels (kernels/*.cu) on every available driver, checked against numpy."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from hxarray.backends.cuda.driver import Driver, Module
from hxarray.backends.cuda.raw import RawKernel

from .conftest import DeviceArrays, source

Compile = Callable[..., Module]
rng = np.random.default_rng(0)


def test_grid_stride_elementwise(driver: Driver, mem: DeviceArrays, compile_kernel: Compile
                                 ) -> None:
    module = compile_kernel(driver, "elementwise.cu")
    n = 100_003
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    px, py = mem.put(x), mem.put(y)
    saxpy = module.get_function("saxpy")
    # a grid smaller than the data: each thread strides
    driver.launch(saxpy, (7, 1, 1), (128, 1, 1), (np.float32(2.5), px, py, np.int64(n)), 0,
                  mem.stream)
    np.testing.assert_array_equal(mem.get(py, n, np.float32), np.float32(2.5) * x + y)


def test_a_captured_graph_replays_its_launches_in_order(driver: Driver, mem: DeviceArrays,
                                                       compile_kernel: Compile) -> None:
    """Driver.capture's graph runs nothing when captured; each launch_graph queues the launches
    again, in order, reading the memory as it is then (a CUDA graph on a GPU, through CuPy)."""
    saxpy = compile_kernel(driver, "elementwise.cu").get_function("saxpy")
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    px, py = mem.put(x), mem.put(y)
    graph = driver.capture(0, [(saxpy, (4, 1, 1), (128, 1, 1), (np.float32(2.0), px, py,
                                                                 np.int64(n)), 0),
                               (saxpy, (4, 1, 1), (128, 1, 1), (np.float32(-1.0), py, px,
                                                                 np.int64(n)), 0)])
    np.testing.assert_array_equal(mem.get(py, n, np.float32), y)  # (nothing ran)
    for _ in range(2):
        driver.launch_graph(graph, mem.stream)
        y = np.float32(2.0) * x + y
        x = np.float32(-1.0) * y + x
    np.testing.assert_array_equal(mem.get(py, n, np.float32), y)
    np.testing.assert_array_equal(mem.get(px, n, np.float32), x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_template_kernel_through_name_expressions(driver: Driver, mem: DeviceArrays,
                                                  compile_kernel: Compile, dtype: type) -> None:
    ctype = "float" if dtype == np.float32 else "double"
    module = compile_kernel(driver, "elementwise.cu",
                            name_expressions=["axpby<float>", "axpby<double>"])
    n = 1000
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    px, py = mem.put(x), mem.put(y)
    kernel = module.get_function(f"axpby<{ctype}>")
    driver.launch(kernel, (4, 1, 1), (64, 1, 1), (dtype(3), px, dtype(-1), py, np.int32(n)), 0,
                  mem.stream)
    np.testing.assert_allclose(mem.get(py, n, dtype), 3 * x - y, rtol=1e-6)


def test_shared_memory_block_reduction(driver: Driver, mem: DeviceArrays, compile_kernel: Compile
                                       ) -> None:
    module = compile_kernel(driver, "block_reduce.cu")
    n, blocks = 123_457, 24
    x = rng.standard_normal(n)
    px, partial = mem.put(x), mem.zeros(blocks * 8)
    driver.launch(module.get_function("block_sum"), (blocks, 1, 1), (256, 1, 1),
                  (px, partial, np.int32(n)), 0, mem.stream)
    sums = mem.get(partial, blocks, np.float64)
    # block b sums the elements i with (i // 256) % blocks == b
    owner = (np.arange(n) // 256) % blocks
    np.testing.assert_allclose(sums, np.bincount(owner, weights=x, minlength=blocks), rtol=1e-12)
    np.testing.assert_allclose(sums.sum(), x.sum(), rtol=1e-12)


def test_warp_shuffle_reduction(driver: Driver, mem: DeviceArrays, compile_kernel: Compile
                                ) -> None:
    module = compile_kernel(driver, "warp_reduce.cu")
    n = 5000
    x = rng.uniform(0, 10, n).astype(np.float32)
    threads = 256
    blocks = -(-n // threads)
    warps = blocks * threads // 32
    px, total, maxima = mem.put(x), mem.zeros(4), mem.zeros(warps * 4)
    driver.launch(module.get_function("warp_sums"), (blocks, 1, 1), (threads, 1, 1),
                  (px, total, maxima, np.int32(n)), 0, mem.stream)
    np.testing.assert_allclose(mem.get(total, 1, np.float32)[0], x.sum(dtype=np.float64),
                               rtol=1e-5)
    padded = np.full(warps * 32, np.iinfo(np.int32).min, dtype=np.int64)
    padded[:n] = (x * np.float32(10)).astype(np.int32)
    np.testing.assert_array_equal(mem.get(maxima, warps, np.int32),
                                  padded.reshape(warps, 32).max(axis=1))


def test_atomics_histogram(driver: Driver, mem: DeviceArrays, compile_kernel: Compile) -> None:
    module = compile_kernel(driver, "histogram.cu")
    data = rng.integers(0, 256, 200_000).astype(np.uint8)
    pdata, bins = mem.put(data), mem.zeros(64 * 4)
    driver.launch(module.get_function("histogram"), (16, 1, 1), (256, 1, 1),
                  (pdata, np.int32(data.size), bins), 0, mem.stream)
    np.testing.assert_array_equal(mem.get(bins, 64, np.uint32),
                                  np.bincount(data % 64, minlength=64))


def test_every_atomic_operation(driver: Driver, mem: DeviceArrays, compile_kernel: Compile
                                ) -> None:
    module = compile_kernel(driver, "histogram.cu")
    n = 3000
    values = rng.integers(-1000, 1000, n).astype(np.int32)
    i32 = np.array([0, 0, 2**31 - 1, -2**31, -1, 0, 0, 0], np.int32)
    u32 = np.array([0, 2**32 - 1, 0, 0], np.uint32)
    i64 = np.array([2**62, 2**62, -2**62], np.int64)
    u64 = np.array([0, 0], np.uint64)
    f32 = np.array([0, 0], np.float32)
    f64 = np.array([0, 0], np.float64)
    ptrs = [mem.put(a) for a in (i32, u32, i64, u64, f32, f64)]
    driver.launch(module.get_function("atomics"), (12, 1, 1), (256, 1, 1),
                  (*ptrs, mem.put(values), np.int32(n)), 0, mem.stream)
    r32 = mem.get(ptrs[0], 8, np.int32)
    assert r32[0] == values.sum() and r32[1] == -values.sum()
    assert (r32[2], r32[3]) == (values.min(), values.max())
    assert r32[4] == -1 & ~np.bitwise_or.reduce(1 << (np.arange(n) % 31))
    assert r32[5] == np.bitwise_or.reduce(1 << (np.arange(n) % 31))
    assert r32[6] == np.bitwise_xor.reduce(values)
    assert r32[7] == n  # CAS loop
    r_u32 = mem.get(ptrs[1], 4, np.uint32)
    as_u32 = values.astype(np.uint32)
    assert r_u32[0] == as_u32.sum(dtype=np.uint32)
    assert (r_u32[1], r_u32[2], r_u32[3]) == (as_u32.min(), as_u32.max(), n)
    r64 = mem.get(ptrs[2], 3, np.int64)
    assert r64[0] == min(2**62, (values.astype(np.int64) * -1_000_000_000).min())
    assert (r64[1], r64[2]) == (values.min(), values.max())
    r_u64 = mem.get(ptrs[3], 2, np.uint64)
    assert r_u64[0] == values.astype(np.uint64).sum(dtype=np.uint64) and r_u64[1] == 7
    np.testing.assert_array_equal(mem.get(ptrs[4], 2, np.float32), [n * 0.5, 1.5])
    np.testing.assert_array_equal(mem.get(ptrs[5], 2, np.float64), [n * 0.25, values.sum()])


@pytest.mark.parametrize("shape", [(64, 96), (100, 37), (1, 1)])
def test_tiled_transpose_with_dynamic_shared_memory(driver: Driver, mem: DeviceArrays,
                                                    compile_kernel: Compile,
                                                    shape: tuple[int, int]) -> None:
    module = compile_kernel(driver, "transpose.cu", options=["-DTILE=32"])
    rows, cols = shape
    a = rng.standard_normal(shape).astype(np.float32)
    pa, pout = mem.put(a), mem.zeros(a.nbytes)
    grid = (-(-cols // 32), -(-rows // 32), 1)
    driver.launch(module.get_function("transpose"), grid, (32, 8, 1),
                  (pa, pout, np.int32(rows), np.int32(cols)), 32 * 33 * 4, mem.stream)
    np.testing.assert_array_equal(mem.get(pout, (cols, rows), np.float32), a.T)


def test_extern_shared_names_alias_one_buffer(driver: Driver, mem: DeviceArrays,
                                              compile_kernel: Compile) -> None:
    module = compile_kernel(driver, "transpose.cu", options=["-DTILE=32"])
    out = mem.zeros(4 * 4)
    driver.launch(module.get_function("alias_check"), (1, 1, 1), (4, 1, 1), (out,), 16,
                  mem.stream)
    np.testing.assert_array_equal(mem.get(out, 4, np.int32),
                                  np.frombuffer(np.int32(0x01020304).tobytes(), np.uint8))


@pytest.mark.parametrize("threads", [1024, 96])
def test_inclusive_scan_with_shfl_up(driver: Driver, mem: DeviceArrays, compile_kernel: Compile,
                                     threads: int) -> None:
    module = compile_kernel(driver, "scan.cu")
    n = 5000
    x = rng.integers(-50, 50, n).astype(np.int32)
    px, out = mem.put(x), mem.zeros(x.nbytes)
    blocks = -(-n // threads)
    driver.launch(module.get_function("block_scan"), (blocks, 1, 1), (threads, 1, 1),
                  (px, out, np.int32(n)), 0, mem.stream)
    padded = np.zeros(blocks * threads, np.int32)
    padded[:n] = x
    expected = np.cumsum(padded.reshape(blocks, threads), axis=1).ravel()[:n]
    np.testing.assert_array_equal(mem.get(out, n, np.int32), expected)


def test_ballot_stream_compaction(driver: Driver, mem: DeviceArrays, compile_kernel: Compile
                                  ) -> None:
    module = compile_kernel(driver, "compact.cu")
    n, threads = 10_000, 256
    blocks = -(-n // threads)
    x = rng.standard_normal(n).astype(np.float32)
    px, out, counts = mem.put(x), mem.zeros(blocks * threads * 4), mem.zeros(blocks * 4)
    driver.launch(module.get_function("compact"), (blocks, 1, 1), (threads, 1, 1),
                  (px, np.int32(n), out, counts), 0, mem.stream)
    got_counts = mem.get(counts, blocks, np.int32)
    got = mem.get(out, (blocks, threads), np.float32)
    kept = np.concatenate([got[b, :c] for b, c in enumerate(got_counts)])
    np.testing.assert_array_equal(kept, x[x > 0])


@pytest.mark.parametrize("dtype, kernel", [(np.complex64, "complex64_ops"),
                                           (np.complex128, "complex128_ops")])
def test_complex_arithmetic_through_complex_cuh(driver: Driver, mem: DeviceArrays,
                                                compile_kernel: Compile, dtype: type,
                                                kernel: str) -> None:
    module = compile_kernel(driver, "complex.cu")
    n = 999
    a = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    b = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    pa, pb, out = mem.put(a), mem.put(b), mem.zeros(a.nbytes)
    driver.launch(module.get_function(kernel), (4, 1, 1), (256, 1, 1),
                  (pa, pb, out, np.int32(n)), 0, mem.stream)
    expected = (a * b + np.conj(a) / b - np.exp(a) * 0.5 + np.sqrt(b)
                + (np.abs(a) + 1j * np.angle(b)))
    rtol = 1e-4 if dtype == np.complex64 else 1e-12
    np.testing.assert_allclose(mem.get(out, n, dtype), expected, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("m, n, k", [(64, 48, 80), (33, 17, 29)])
def test_tiled_gemm(driver: Driver, mem: DeviceArrays, compile_kernel: Compile, m: int, n: int,
                    k: int) -> None:
    module = compile_kernel(driver, "gemm.cu")
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    pa, pb, pc = mem.put(a), mem.put(b), mem.zeros(m * n * 4)
    driver.launch(module.get_function("gemm"), (-(-n // 16), -(-m // 16), 1), (16, 16, 1),
                  (pa, pb, pc, np.int32(m), np.int32(n), np.int32(k)), 0, mem.stream)
    np.testing.assert_allclose(mem.get(pc, (m, n), np.float32),
                               a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


def test_math_library_float(driver: Driver, mem: DeviceArrays, compile_kernel: Compile) -> None:
    module = compile_kernel(driver, "math.cu")
    x = np.linspace(0.3, 4.0, 77).astype(np.float32)
    px, out = mem.put(x), mem.zeros(x.size * 16 * 4)
    driver.launch(module.get_function("float_math"), (1, 1, 1), (128, 1, 1),
                  (px, out, np.int32(x.size)), 0, mem.stream)
    got = mem.get(out, (x.size, 16), np.float32)
    from math import erf, gamma

    d = x.astype(np.float64)
    bits = x.view(np.int32)
    expected = np.stack([
        1 / np.sqrt(d), d * 2 + 1, np.sin(d), np.cos(d), np.exp(d), np.log(d),
        (bits + 1).view(np.float32).astype(np.float64),
        [bin(int(b)).count("1") for b in x.view(np.uint32)], d * 3,
        np.cbrt(d) + np.array([erf(v) for v in d]) + np.array([gamma(v) for v in d])
        + np.log1p(d) + np.expm1(d),
        np.clip(d - 1, 0, 1), [32 - int(b).bit_length() for b in bits],
        np.hypot(d, 1) + np.arctan2(d, 2), np.minimum(d, 2) + np.maximum(d, 2),
        1 / d + np.sqrt(d) + d ** 1.5, np.rint(x * np.float32(10))], axis=1)
    np.testing.assert_allclose(got, expected, rtol=2e-5, atol=1e-5)


def test_math_library_double(driver: Driver, mem: DeviceArrays, compile_kernel: Compile) -> None:
    module = compile_kernel(driver, "math.cu")
    x = np.linspace(0.1, 9.0, 50)
    px, out = mem.put(x), mem.zeros(x.size * 6 * 8)
    driver.launch(module.get_function("double_math"), (2, 1, 1), (32, 1, 1),
                  (px, out, np.int32(x.size)), 0, mem.stream)
    got = mem.get(out, (x.size, 6), np.float64)
    expected = np.stack([1 / np.sqrt(x), x * x - 1, np.sin(x) * np.cos(x), -x,
                         np.exp(x) + np.log(x) + np.tanh(x),
                         (x.view(np.int64) >> 32).astype(np.float64)], axis=1)
    np.testing.assert_allclose(got, expected, rtol=1e-13)


def test_barrier_and_vote_variants(driver: Driver, mem: DeviceArrays, compile_kernel: Compile
                                   ) -> None:
    module = compile_kernel(driver, "sync.cu")
    blocks, threads = 3, 64
    pred = (rng.random(blocks * threads) < 0.3).astype(np.int32)
    pred[:threads] = 1  # block 0: all true
    out = mem.zeros(blocks * threads * 8 * 4)
    driver.launch(module.get_function("votes"), (blocks, 1, 1), (threads, 1, 1),
                  (mem.put(pred), out), 0, mem.stream)
    got = mem.get(out, (blocks, threads, 8), np.int32)
    p = pred.reshape(blocks, threads)
    warps = p.reshape(blocks, threads // 32, 32)
    t = np.arange(threads)
    for b in range(blocks):
        np.testing.assert_array_equal(got[b, :, 0], p[b].sum())
        np.testing.assert_array_equal(got[b, :, 1], int(p[b].all()))
        np.testing.assert_array_equal(got[b, :, 2], int(p[b].any()))
        np.testing.assert_array_equal(got[b, :, 3], np.repeat(warps[b].any(axis=1), 32))
        np.testing.assert_array_equal(got[b, :, 4], np.repeat(warps[b].all(axis=1), 32))
        np.testing.assert_array_equal(got[b, :, 5], -1)  # all 32 lanes active
        np.testing.assert_array_equal(got[b, :, 6], t - t % 8)
        np.testing.assert_array_equal(got[b, :, 7], np.repeat(warps[b].sum(axis=1), 32))


def test_raw_kernel_types_python_arguments(driver: Driver, mem: DeviceArrays) -> None:
    kernel = RawKernel(driver, source("elementwise.cu"), "saxpy")
    n = 1000
    x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    px, py = mem.put(x), mem.put(y)
    kernel((4,), (128,), (0.5, int(px), py, n))  # Python float and ints, typed by the signature
    np.testing.assert_array_equal(mem.get(py, n, np.float32), 0.5 * x + 1)
    with pytest.raises(TypeError, match="takes 4 arguments, 3 given"):
        kernel((1,), (1,), (0.5, px, py))
    with pytest.raises(TypeError, match="4-byte float parameter, got numpy.float64"):
        kernel((1,), (1,), (np.float64(0.5), px, py, n))
    with pytest.raises(TypeError, match="pointer parameter"):
        kernel((1,), (1,), (0.5, 1.5, py, n))
    with pytest.raises(OverflowError, match="does not fit"):
        kernel((1,), (1,), (0.5, px, py, 2**70))
