"""CUDA reductions and scans (backends/codegen/reduction.py and scan.py): the launch plans
(cuda/launch.py), then on cuda:0 the paths the chapter tests' small arrays never take (a group of
threads per output across warps and within a warp, a thread per output, rows split into parts for
two passes, block scans, scans of row parts), against numpy on arrays large enough to take them,
and determinism: the same bits on every run and on two streams.

The plan tests run everywhere; the device tests where a CUDA device is usable: a GPU, or the
simulator (`HXARRAY_CUDA_DRIVER=sim`)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import hxarray as xp
from hxarray.backends.codegen import OPTIONS
from hxarray.backends.codegen import reduction as rd
from hxarray.backends.codegen import scan as sc
from hxarray.backends.cuda import launch
from hxarray.backends.cuda.driver import DeviceProperties

CUDA = next((d for d in xp.__array_namespace_info__().devices() if d.type.name == "cuda"), None)
needs_cuda = pytest.mark.skipif(CUDA is None, reason="needs a CUDA device: a GPU, or the "
                                "simulator (HXARRAY_CUDA_DRIVER=sim)")

# An A100's figures, and the simulator's on a 2-core machine.
A100 = DeviceProperties(
    name="A100", compute_capability=(8, 0), multiprocessor_count=108, max_threads_per_block=1024,
    max_threads_per_multiprocessor=2048, max_block_dims=(1024, 1024, 64),
    max_grid_dims=(2**31 - 1, 65535, 65535), warp_size=32, shared_memory_per_block=49152,
    shared_memory_per_multiprocessor=167936, registers_per_block=65536,
    registers_per_multiprocessor=65536, total_memory=40 << 30, clock_rate_khz=1410000,
    memory_clock_rate_khz=1215000, memory_bus_width=5120, l2_cache_size=40 << 20,
    simulated=False)
SIM2 = dataclasses.replace(A100, name="sim", multiprocessor_count=2, simulated=True)


# -- plans -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("props", [A100, SIM2], ids=["A100", "sim2"])
def test_reduction_plans(props):
    """Long rows: a multi-warp group per part, two passes; medium inner rows: a group within a
    warp; outer rows: a thread per output, split where outputs are few; many short rows: a thread
    per output. Every plan's threads cover each part, and parts cover the row."""
    whole = launch.reduction_plan(1, 10**6, True, props)
    assert whole.group > 32 and whole.parts > 1
    medium = launch.reduction_plan(1000, 500, True, props)
    assert 1 < medium.group <= 32 and medium.parts == 1
    columns = launch.reduction_plan(1000, 1000, False, props)
    assert columns.group == 1 and columns.parts > 1
    short = launch.reduction_plan(10**6, 8, True, props)
    assert short.group == 1 and short.parts == 1
    assert launch.reduction_plan(3, 10**6, True, props, may_split=False).parts == 1
    for outputs, length, inner in [(1, 10**6, True), (1000, 1000, True), (1000, 1000, False),
                                   (10**6, 8, True), (4, 250_000, True), (250_000, 4, False),
                                   (7, 1, True), (1, 1, False), (5, 10**7, False)]:
        plan = launch.reduction_plan(outputs, length, inner, props)
        assert plan.block % plan.group == 0 and plan.block % props.warp_size == 0
        assert plan.group & (plan.group - 1) == 0 and plan.group <= plan.block <= rd.BLOCK
        assert plan.parts <= rd.MAX_PARTS and (plan.parts - 1) * plan.chunk < length
        assert plan.parts * plan.chunk >= length
        assert 1 <= plan.grid <= launch.WAVES * props.multiprocessor_count * 2048 // plan.block
        if outputs * length >= launch.WAVES * props.multiprocessor_count * 2048 * rd.PER_THREAD \
                and plan.parts < rd.MAX_PARTS:
            assert plan.grid * plan.block >= props.multiprocessor_count * 2048  # every SM, full


@pytest.mark.parametrize("props", [A100, SIM2], ids=["A100", "sim2"])
def test_scan_plans(props):
    """Short rows, or rows enough to fill the device: a thread per row; a long inner row: blocks
    over parts of whole tiles; long outer rows: threads over parts."""
    items = sc.items(xp.float32)
    assert launch.scan_plan(1000, sc.SHORT_ROW, True, props, items).sequential
    many = launch.scan_plan(10**6, 100, True, props, items)
    assert many.sequential and many.parts == 1 and many.block == sc.MAX_BLOCK
    row = launch.scan_plan(1, 10**6, True, props, items)
    assert not row.sequential and row.parts > 1 and row.chunk % (row.block * items) == 0
    columns = launch.scan_plan(1000, 1000, False, props, items)
    assert columns.sequential and columns.parts > 1
    for rows, length, inner in [(1, 10**6, True), (1000, 1000, True), (1000, 1000, False),
                                (3, 100, True), (1, 65, True), (2, 10**7, False)]:
        plan = launch.scan_plan(rows, length, inner, props, items)
        assert plan.block % props.warp_size == 0 and plan.block <= sc.MAX_BLOCK
        assert plan.parts <= sc.MAX_PARTS and (plan.parts - 1) * plan.chunk < length
        assert plan.parts * plan.chunk >= length


def test_layouts_walk_reduced_axes_forwards_and_merge_them():
    """Reduced axes are walked forwards, widest stride first, so a flipped or transposed full
    reduction is one contiguous row; argmax/argmin keep the C order of the row index."""
    split = rd.split((4, 6), (-48, -8), (0, 1), (), in_order=False)
    assert split.base == -3 * 48 - 5 * 8 and split.row == (24,) and split.x_row == (8,)
    split = rd.split((4, 6), (8, 32), (0, 1), (), in_order=False)
    assert split.row == (24,) and split.x_row == (8,) and split.base == 0
    split = rd.split((4, 6), (8, 32), (0, 1), (), in_order=True)
    assert split.row == (4, 6) and split.x_row == (8, 32)
    split = rd.split((5, 4, 6), (192, 48, 8), (1,), (48, 8), in_order=False)
    assert split.kept == (5, 6) and split.row == (4,) and not split.row_inner
    assert not rd.split((2,) * 10, tuple(8 * 3**k for k in range(10)), (9,), (8,) * 9,
                        False).fits


@needs_cuda
def test_layout_structs_match_the_kernels():
    """The packed layouts have the C structs' sizes and member offsets, as the device's compiler
    lays them out (read by a kernel: NVRTC has no offsetof)."""
    expected, lines = [], []
    for struct, layout in (("hx::ReduceLayout", rd.LAYOUT), ("hx::ScanLayout", sc.LAYOUT)):
        lines.append(f"{{ {struct} s; const char *base = (const char *)&s;")
        lines.append(f"  out[{len(expected)}] = sizeof(s);")
        expected.append(layout.itemsize)
        for field, (_, offset) in layout.fields.items():
            lines.append(f"  out[{len(expected)}] = (const char *)&s.{field} - base;")
            expected.append(offset)
        lines.append("}")
    source = (sc.SOURCE + 'extern "C" __global__ void layouts(long long *out) {\n' +
              "\n".join(lines) + "\n}\n")
    out = xp.zeros(len(expected), dtype=xp.int64, device=CUDA)
    CUDA.backend._launch(CUDA, source, "layouts", list, 0,
                         [np.uintp(out._buffer.address + out._offset)], [out],
                         ((1, 1, 1), (1, 1, 1), 0))
    np.testing.assert_array_equal(np.asarray(out.to_device("cpu")), expected)


# -- values on the device --------------------------------------------------------------------------
def _on_device(a: np.ndarray) -> xp.Array:
    x = xp.asarray(a, device=CUDA)
    CUDA.backend.synchronize(CUDA)
    return x


def _normal(shape: tuple[int, ...], seed: int) -> tuple[np.random.Generator, np.ndarray,
                                                       xp.Array]:
    """A generator, standard normal float64 data drawn from it, and its copy on the device."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    return rng, a, _on_device(a)


def _within_rounding(got: np.ndarray, expected: np.ndarray, magnitude: np.ndarray,
                     terms: int) -> None:
    """Equal up to 2 * terms roundings of `magnitude` (the sum of the terms' magnitudes)."""
    eps = np.finfo(got.dtype).eps
    bound = 2 * terms * eps * np.asarray(magnitude, np.float64)
    for part in (np.real, np.imag) if got.dtype.kind == "c" else (np.asarray,):
        error = np.abs(part(got).astype(np.float64) - part(expected))
        assert (error <= bound).all(), f"{error.max()} > {bound.min()}"


# (shape, axis): rows a multi-warp group reduces in two passes, medium inner rows (a group within
# a warp), outer rows (a thread per output, two passes), many short rows, few long rows either
# way, a row of two axes that do not merge.
REDUCTIONS = [((1_000_000,), None), ((1000, 1000), 1), ((1000, 1000), 0), ((100_000, 8), 1),
              ((4, 250_000), 1), ((250_000, 4), 0), ((60, 50, 40), (0, 2)), ((4000, 200), 1)]


@needs_cuda
def test_the_cases_take_every_path():
    props = CUDA.backend._state(CUDA).properties
    plans = []
    for shape, axis in REDUCTIONS:
        c = np.empty(shape)
        axes = tuple(range(c.ndim)) if axis is None else (axis,) if isinstance(axis, int) else axis
        kept = np.empty([n for i, n in enumerate(shape) if i not in axes])
        split = rd.split(shape, c.strides, axes, kept.strides, in_order=False)
        plans.append(launch.reduction_plan(split.outputs, split.length, split.row_inner, props))
    assert any(p.group > 32 and p.parts > 1 for p in plans)
    assert any(1 < p.group <= 32 for p in plans)
    assert any(p.group == 1 and p.parts > 1 for p in plans)
    assert any(p.group == 1 and p.parts == 1 for p in plans)


def _length(shape: tuple[int, ...], axis: int | tuple[int, ...] | None) -> int:
    axes = range(len(shape)) if axis is None else (axis,) if isinstance(axis, int) else axis
    return math.prod(shape[a] for a in axes)


@needs_cuda
@pytest.mark.parametrize(("shape", "axis"), REDUCTIONS, ids=str)
def test_sums_against_numpy(shape, axis):
    rng, a, x = _normal(shape, 0)
    terms = _length(shape, axis)
    _within_rounding(np.asarray(xp.sum(x, axis=axis)), np.sum(a, axis=axis),
                     np.sum(np.abs(a), axis=axis), terms)
    f = a.astype(np.float32)
    _within_rounding(np.asarray(xp.sum(_on_device(f), axis=axis)), np.sum(a, axis=axis),
                     np.sum(np.abs(a), axis=axis), terms)
    z = (a + 1j * rng.standard_normal(shape)).astype(np.complex64)
    _within_rounding(np.asarray(xp.sum(_on_device(z), axis=axis)), np.sum(z.astype(complex),
                     axis=axis), np.sum(np.abs(z), axis=axis), terms)
    i = rng.integers(-2**62, 2**62, shape)  # wraps around: exact all the same
    assert np.array_equal(np.asarray(xp.sum(_on_device(i), axis=axis)), np.sum(i, axis=axis))
    u = rng.integers(0, 255, shape, dtype=np.uint8)
    assert np.array_equal(np.asarray(xp.sum(_on_device(u), axis=axis)), np.sum(u, axis=axis))
    assert np.asarray(xp.sum(_on_device(u), axis=axis)).dtype == np.uint64


@needs_cuda
@pytest.mark.parametrize(("shape", "axis"), REDUCTIONS, ids=str)
def test_exact_reductions_against_numpy(shape, axis):
    """prod of ±1 with a few powers of two, max, min, all, any, argmax, argmin: exact in any
    order."""
    rng = np.random.default_rng(1)
    signs = rng.choice([-1.0, 1.0], shape)
    signs.flat[rng.integers(0, signs.size, 40)] = rng.choice([0.5, 2.0, 4.0], 40)
    x = _on_device(signs)
    assert np.array_equal(np.asarray(xp.prod(x, axis=axis)), np.prod(signs, axis=axis))
    a = rng.standard_normal(shape).astype(np.float32)
    a.flat[[5, len(a.flat) // 2, -3]] = np.nan  # NaN propagates (rows without one do not)
    y = _on_device(a)
    for name in ("max", "min"):
        np.testing.assert_array_equal(np.asarray(getattr(xp, name)(y, axis=axis)),
                                      getattr(np, name)(a, axis=axis))
    ints = rng.integers(-5, 5, shape, dtype=np.int16)  # many ties: the first index wins
    z = _on_device(ints)
    if axis is None or isinstance(axis, int):
        for name in ("argmax", "argmin"):
            for data, arr in ((ints, z), (a, y)):
                np.testing.assert_array_equal(np.asarray(getattr(xp, name)(arr, axis=axis)),
                                              getattr(np, name)(data, axis=axis))
    flags = rng.random(shape) < 0.999
    b = _on_device(flags)
    np.testing.assert_array_equal(np.asarray(xp.all(b, axis=axis)), np.all(flags, axis=axis))
    np.testing.assert_array_equal(np.asarray(xp.any(~b, axis=axis)), np.any(~flags, axis=axis))
    np.testing.assert_array_equal(np.asarray(xp.count_nonzero(b, axis=axis)),
                                  np.count_nonzero(flags, axis=axis))


@needs_cuda
def test_special_values_survive_two_passes():
    n = 1_000_000
    with xp.set_strict(True):  # the standard's -0 sums (numpy mode's are numpy's +0)
        assert math.copysign(1.0, float(xp.sum(_on_device(np.full(n, -0.0))))) == -1.0
        assert math.copysign(1.0, float(xp.sum(_on_device(np.full(n, -0.0)),
                                               dtype=xp.float32))) == -1
        mixed = np.full(n, -0.0)
        mixed[n - 1] = 0.0
        assert math.copysign(1.0, float(xp.sum(_on_device(mixed)))) == 1.0
        z = np.full(n, complex(-0.0, 0.0))
        total = complex(xp.sum(_on_device(z)))
        assert math.copysign(1.0, total.real) == -1.0 and math.copysign(1.0, total.imag) == 1.0
    assert math.copysign(1.0, float(xp.sum(_on_device(np.full(n, -0.0))))) == 1.0
    a = np.zeros(n)
    a[[700_001, 900_000]] = np.nan
    a[10] = np.inf
    x = _on_device(a)
    assert math.isnan(float(xp.max(x))) and math.isnan(float(xp.min(x)))
    assert int(xp.argmax(x)) == 700_001 and int(xp.argmin(x)) == 700_001
    assert math.isnan(float(xp.sum(x))) and math.isnan(float(xp.prod(x)))
    assert int(xp.argmax(_on_device(np.ones(n, np.float32)))) == 0
    assert int(xp.argmin(_on_device(np.arange(n, 0, -1) // 3))) == n - 2  # 1 // 3, 2 // 3
    assert float(xp.prod(_on_device(np.full(n, 2.0)))) == math.inf


@needs_cuda
def test_more_axes_than_the_kernels_index():
    """Views with more than MAX_DIMS axes left after merging: more kept axes (or rows of a
    scan) loop over the first; a longer row is reduced from a copy."""
    base = np.random.default_rng(2).standard_normal((3,) * 10)
    a = base[(slice(None, None, 2),) * 10]
    x = _on_device(base)[(slice(None, None, 2),) * 10]
    for axis in (9, 0, (1, 3, 5, 7, 9)):
        _within_rounding(np.asarray(xp.sum(x, axis=axis)), np.sum(a, axis=axis),
                         np.sum(np.abs(a), axis=axis), 32)
    np.testing.assert_array_equal(np.asarray(xp.argmin(x, axis=4)), np.argmin(a, axis=4))
    np.testing.assert_array_equal(np.asarray(xp.cumulative_sum(x, axis=3)), np.cumsum(a, axis=3))
    nine = a[0]  # nine axes reduced: a row of more than MAX_DIMS axes
    y = x[0]
    assert int(xp.argmax(y)) == np.argmax(nine)
    np.testing.assert_array_equal(np.asarray(xp.max(y)), np.max(nine))


# (shape, axis): a long row (blocks over parts), inner rows (a block each), outer rows (threads
# over parts), few long outer rows, short rows (a thread each), a row of one tile and a bit.
SCANS = [((1_000_000,), 0), ((1000, 1000), 1), ((1000, 1000), 0), ((20_000, 5), 0),
         ((5, 20_000), 1), ((300, 6), 1), ((3, 4097), -1)]


@needs_cuda
@pytest.mark.parametrize(("shape", "axis"), SCANS, ids=str)
def test_scans_against_numpy(shape, axis):
    rng, a, x = _normal(shape, 3)
    terms = np.cumsum(np.ones(shape[axis]))
    terms = terms.reshape([-1 if i == axis % len(shape) else 1 for i in range(len(shape))])
    _within_rounding(np.asarray(xp.cumulative_sum(x, axis=axis)), np.cumsum(a, axis=axis),
                     terms * np.cumsum(np.abs(a), axis=axis), 1)
    i = rng.integers(-2**62, 2**62, shape)
    assert np.array_equal(np.asarray(xp.cumulative_sum(_on_device(i), axis=axis)),
                          np.cumsum(i, axis=axis))
    signs = rng.choice(np.array([-1.0, 1.0], np.float32), shape)
    s = _on_device(signs)
    assert np.array_equal(np.asarray(xp.cumulative_prod(s, axis=axis)),
                          np.cumprod(signs, axis=axis))
    initial = np.asarray(xp.cumulative_prod(s, axis=axis, include_initial=True))
    assert np.array_equal(np.moveaxis(initial, axis, 0)[1:],
                          np.moveaxis(np.cumprod(signs, axis=axis), axis, 0))
    small = rng.integers(0, 3, shape, dtype=np.int8)
    flipped = _on_device(small)[(slice(None, None, -1),) * small.ndim]
    assert np.array_equal(np.asarray(xp.cumulative_sum(flipped, axis=axis, dtype=xp.int8)),
                          np.cumsum(small[(slice(None, None, -1),) * small.ndim], axis=axis,
                                    dtype=np.int8))


# A scan whose loads note the thread that reads each element (`scanned_by`, set by `note`).
_RECORDED_SCAN = sc.SOURCE + """
__device__ long long* scanned_by;
struct Recorded : hx::red::Sum<hx::i64, hx::i64> {
    __device__ static hx::i64 load(const char* p, hx::i64 r) {
        scanned_by[r] = threadIdx.x;
        return *reinterpret_cast<const hx::i64*>(p);
    }
};
extern "C" __global__ void note(long long* by) { scanned_by = by; }
"""


@pytest.mark.parametrize(("length", "block"), [(5000, 256), (2048, 256), (77, 32), (1000, 64)])
def test_scan_blocks_load_coalesced(sim, length, block):
    """scan_parts reads a tile element k by thread k mod blockDim (a warp reads consecutive
    elements), not each thread's own consecutive elements, and scans right across tiles."""
    module = sim.compile(0, _RECORDED_SCAN, OPTIONS, ["hx::scan_parts<Recorded>"])
    plan = sc.Launch(sequential=False, parts=1, chunk=length, block=block, grid=1)
    data = np.random.default_rng(4).integers(-100, 100, length)
    x, out, by = (sim.malloc(0, 8 * length) for _ in range(3))
    stream = sim.default_stream(0)
    sim.copy_host_to_device(x, data, data.nbytes, stream)
    sim.launch(module.get_function("note"), (1, 1, 1), (1, 1, 1), [np.uintp(by)], 0, stream)
    layout = sc.pack((), (), (), length, 8, 8, plan)
    sim.launch(module.get_function("hx::scan_parts<Recorded>"), (1, 1, 1), (plan.block, 1, 1),
               [np.uintp(x), np.uintp(out), layout], 0, stream)
    scanned, readers = np.empty(length, np.int64), np.empty(length, np.int64)
    sim.copy_device_to_host(scanned, out, scanned.nbytes, stream)
    sim.copy_device_to_host(readers, by, readers.nbytes, stream)
    sim.stream_synchronize(stream)
    for address in (x, out, by):
        sim.free(0, address)
    np.testing.assert_array_equal(scanned, np.cumsum(data))
    np.testing.assert_array_equal(readers, np.arange(length) % plan.block)


# -- determinism -----------------------------------------------------------------------------------
def _bits(x: xp.Array) -> bytes:
    return np.asarray(x).tobytes()


@needs_cuda
@pytest.mark.parametrize(("function", "dtype"), [
    (lambda x: xp.sum(x), np.float32), (lambda x: xp.sum(x.mT, axis=0), np.float32),
    (lambda x: xp.sum(x, axis=0), np.float32), (lambda x: xp.sum(x, axis=1), np.float32),
    (lambda x: xp.prod(1 + x / 1000, axis=0), np.float64),
    (lambda x: xp.cumulative_sum(xp.reshape(x, (-1,))), np.float32),
    (lambda x: xp.cumulative_prod(1 + x / 1000, axis=0), np.float32),
    (lambda x: xp.argmax(x), np.float32), (lambda x: xp.mean(x, axis=0), np.complex64),
    (lambda x: xp.sum(x), np.complex128),
], ids=["sum", "sum-transposed", "sum-0", "sum-1", "prod-0", "cumulative_sum", "cumprod-0",
        "argmax", "mean-complex", "sum-complex"])
def test_the_same_bits_on_every_run_and_stream(function, dtype):
    """No atomics in a result path: repeated runs and runs on two other streams agree bit for
    bit (floating-point sums in a different order would not)."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((1000, 1000))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(a.shape)
    x = _on_device(a.astype(dtype))
    first = _bits(function(x))
    assert all(_bits(function(x)) == first for _ in range(3))
    streams = [xp.Stream(CUDA), xp.Stream(CUDA)]
    results = []
    for stream in streams:
        with stream:
            results.append(function(x))
    for stream in streams:
        stream.synchronize()
    assert all(_bits(r) == first for r in results)
