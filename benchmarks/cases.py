"""What is measured: the libraries under comparison and the benchmark cases.

A case's `setup(lib, size)` builds its inputs with `lib` and returns the zero-argument callable that
is timed. Every setup is written once against the Array API namespace `lib.xp`, so the same code
runs on numpy, hxarray and array-api-strict; inputs come from the same numpy data for each library,
so results can be compared with numpy's.

The exceptions are the two "allocator" cases, which measure hxarray's caching allocator and so
reach below the namespace: `alloc_pair` times the HAL's `Allocator.allocate` (against numpy's
`np.empty` for reference), and `alloc_add` times `add` with a fresh output against the same
addition into a preallocated one. They run on numpy and hxarray only (`Case.libraries`). numexpr
is an anchor, not an array library: a column only in the cases that name it (the fused ones, where
an expression applies), when it can be imported. A case with
`variants` returns one callable per variant; the runner times all of them in the same interleaved
rounds, so the difference between variants is measured as carefully as the ratio between libraries.

Everything runs on the CPU today. A CUDA column would be one more `Library` whose `from_numpy`
places the data on the GPU (hxarray on `cuda:0` against CuPy); the runner would then also have to
synchronise the device around each timed round. Neither exists yet, so neither is here.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Thunk = Callable[[], Any]


@dataclass(frozen=True)
class Library:
    """One column of the comparison: an Array API namespace and how data gets in and out."""

    name: str
    xp: Any
    version: str
    from_numpy: Callable[[np.ndarray], Any]  # a fresh copy of host data, owned by this library
    to_numpy: Callable[[Any], np.ndarray]


def _distribution_version(name: str, module: Any) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return getattr(module, "__version__", "not installed (imported from the source tree)")


def libraries() -> tuple[list[Library], list[str]]:
    """numpy (the reference, always first), hxarray, and array-api-strict if it can be imported;
    plus notes about anything skipped."""
    import hxarray

    libs = [
        Library("numpy", np, np.__version__, lambda h: np.array(h, copy=True), np.asarray),
        Library("hxarray", hxarray, _distribution_version("hxarray", hxarray),
                lambda h: hxarray.asarray(h, copy=True), np.asarray),
    ]
    notes: list[str] = []
    optional: list[tuple[str, str, Callable[[Any], tuple[Any, Any]]]] = [
        ("array-api-strict", "array_api_strict",
         lambda m: (lambda h: m.asarray(h, copy=True), np.from_dlpack)),
        ("numexpr", "numexpr", lambda m: (lambda h: np.array(h, copy=True), np.asarray)),
    ]
    for name, module_name, converters in optional:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            notes.append(f"{name} column skipped: it cannot be imported ({exc})")
            continue
        libs.append(Library(name, module, module.__version__, *converters(module)))
    return libs, notes


ANCHORS = ("numexpr",)  # columns only in the cases that name them


@dataclass(frozen=True)
class Case:
    """A benchmark: what `setup(lib, size)` returns is called in the timing loop."""

    name: str
    group: str
    description: str
    setup: Callable[[Library, int], Thunk]
    sizes: tuple[int, ...]  # full run: number of elements (matmul: the side n of n x n matrices)
    quick_sizes: tuple[int, ...]
    compare_values: bool = True  # False: only shape and dtype are compared (uninitialised memory)
    shape: Callable[[int], tuple[int, ...]] = lambda size: (size,)  # the inputs' shape at a size
    libraries: tuple[str, ...] | None = None  # only these (None: all but the anchors)
    # With variants, setup returns {variant: callable} for each of them; the first is the main one,
    # reported under the library's name, the others as "<library>:<variant>".
    variants: tuple[str, ...] = ()

    def sizes_for(self, quick: bool) -> tuple[int, ...]:
        return self.quick_sizes if quick else self.sizes


SIZES = (10, 1_000, 100_000, 1_000_000, 10_000_000)
QUICK_SIZES = (10, 100_000, 1_000_000)
NUMPY_SIZES = (10, 1_000, 100_000, 1_000_000)  # numpy's functions beyond the standard
QUICK_NUMPY_SIZES = (1_000, 100_000)
MATMUL_SIZES = (64, 128, 256, 512, 1024, 2048)
QUICK_MATMUL_SIZES = (64, 256, 512)


@functools.lru_cache(maxsize=6)
def host_data(size: int, seed: int, dtype: str = "float64") -> np.ndarray:
    """Standard-normal host data, the same for every library (cached: setups ask repeatedly)."""
    data = np.random.default_rng(seed).standard_normal(size).astype(dtype, copy=False)
    data.flags.writeable = False
    return data


def near_square(size: int) -> tuple[int, int]:
    """The 2-D shape (rows, cols) with rows * cols == size and rows the largest divisor <= sqrt."""
    rows = next(r for r in range(math.isqrt(size), 0, -1) if size % r == 0)
    return rows, size // rows


def _square(n: int) -> tuple[int, int]:
    return n, n


def _two(lib: Library, size: int) -> tuple[Any, Any]:
    return lib.from_numpy(host_data(size, 0)), lib.from_numpy(host_data(size, 1))


def _creation(function: str) -> Callable[[Library, int], Thunk]:
    def setup(lib: Library, size: int) -> Thunk:
        create = getattr(lib.xp, function)
        return lambda: create(size)
    return setup


def _asarray(lib: Library, size: int) -> Thunk:
    host, asarray = host_data(size, 0), lib.xp.asarray
    return lambda: asarray(host, copy=True)


def _asarray_shared(lib: Library, size: int) -> Thunk:
    """`asarray` of a writable numpy array, copy=None: numpy returns the array itself, hxarray
    wraps its memory without copying."""
    host, asarray = host_data(size, 0).copy(), lib.xp.asarray
    return lambda: asarray(host)


def _unary(function: str) -> Callable[[Library, int], Thunk]:
    def setup(lib: Library, size: int) -> Thunk:
        a, f = lib.from_numpy(host_data(size, 0)), getattr(lib.xp, function)
        return lambda: f(a)
    return setup


def _add(lib: Library, size: int) -> Thunk:
    (a, b), add = _two(lib, size), lib.xp.add
    return lambda: add(a, b)


def _chain(lib: Library, size: int) -> Thunk:
    (a, b), sqrt = _two(lib, size), lib.xp.sqrt
    return lambda: sqrt(a * a + b * b) * 0.5 + 1


CHAIN = "sqrt(a*a + b*b) * 0.5 + 1"


def _fused_chain(lib: Library, size: int) -> Thunk:
    """The chain as each library runs it fastest: hxarray fused (`hxarray.fuse`), numexpr's
    evaluate, numpy operator by operator (the reference)."""
    a, b = _two(lib, size)
    if lib.name == "numexpr":
        evaluate = lib.xp.evaluate
        return lambda: evaluate(CHAIN, local_dict={"a": a, "b": b})
    sqrt = lib.xp.sqrt

    def chain(x: Any, y: Any) -> Any:
        return sqrt(x * x + y * y) * 0.5 + 1

    function = lib.xp.fuse(chain) if lib.name == "hxarray" else chain
    return lambda: function(a, b)


def _fused_sum(lib: Library, size: int) -> dict[str, Thunk]:
    """`sum(a * b)`: fused (hxarray: one pass, no temporary) and unfused (`xp.sum(a * b)`);
    numpy has no fusion, so both of its variants are the unfused call."""
    (a, b), total = _two(lib, size), lib.xp.sum

    def unfused() -> Any:
        return total(a * b)

    if lib.name != "hxarray":
        return {"fused": unfused, "unfused": unfused}
    fused = lib.xp.fuse(lambda x, y: total(x * y))
    return {"fused": lambda: fused(a, b), "unfused": unfused}


def _graph(lib: Library, size: int) -> dict[str, Thunk]:
    """Twenty arithmetic operations (ten multiply-adds): replayed through `hxarray.graph`
    ("graph") and run eagerly ("eager"); numpy runs the function eagerly for both."""
    a, b = _two(lib, size)

    def twenty(x: Any, y: Any) -> Any:
        for _ in range(10):
            x = x * y + 0.5
        return x

    if lib.name != "hxarray":
        return {"graph": lambda: twenty(a, b), "eager": lambda: twenty(a, b)}
    graphed = lib.xp.graph(twenty)
    return {"graph": lambda: graphed(a, b), "eager": lambda: twenty(a, b)}


def _arange_float(lib: Library, size: int) -> Thunk:
    arange, stop = lib.xp.arange, float(size)
    return lambda: arange(stop)


def _reduction(function: str, axis: int | None) -> Callable[[Library, int], Thunk]:
    def setup(lib: Library, size: int) -> Thunk:
        a = lib.from_numpy(host_data(size, 0))
        if axis is not None:
            a = lib.xp.reshape(a, near_square(size))
        reduce = getattr(lib.xp, function)
        return lambda: reduce(a, axis=axis)
    return setup


def _mask(lib: Library, size: int) -> Thunk:
    a = lib.from_numpy(host_data(size, 0))
    return lambda: a[a > 0]


def _where(lib: Library, size: int) -> Thunk:
    (a, b), where = _two(lib, size), lib.xp.where
    return lambda: where(a > 0, a, b)


def _numpy_function(call: Callable[..., Any], nans: bool = False, square: bool = False,
                    pair: bool = False) -> Callable[[Library, int], Thunk]:
    """`call(module, a)` of one of numpy's functions beyond the standard (numpy mode's), on
    float64 data (a tenth of it NaN with `nans`, near-square 2-D with `square`); with `pair`,
    `call(module, a, b)`, where half of b's elements differ from a's by 1e-9 of them and the
    others by a tenth."""
    def setup(lib: Library, size: int) -> Thunk:
        data = host_data(size, 0)
        if nans:
            data = np.where(np.arange(size) % 10 == 3, np.nan, data)
        if square:
            data = data.reshape(near_square(size))
        operands = [lib.from_numpy(data)]
        if pair:
            scale = np.where(np.arange(size) % 2 == 0, 1e-9, 0.1).reshape(data.shape)
            operands.append(lib.from_numpy(data + data * scale))
        return functools.partial(call, lib.xp, *operands)
    return setup


def _matmul(dtype: str) -> Callable[[Library, int], Thunk]:
    def setup(lib: Library, n: int) -> Thunk:
        a = lib.from_numpy(host_data(n * n, 0, dtype).reshape(n, n))
        b = lib.from_numpy(host_data(n * n, 1, dtype).reshape(n, n))
        matmul = lib.xp.matmul
        return lambda: matmul(a, b)
    return setup


def _to_device(lib: Library, size: int) -> Thunk:
    a = lib.from_numpy(host_data(size, 0))
    device = a.device
    return lambda: a.to_device(device)


def _dlpack(lib: Library, size: int) -> Thunk:
    return functools.partial(np.from_dlpack, lib.from_numpy(host_data(size, 0)))


def _copy(lib: Library, size: int) -> Thunk:
    a, asarray = lib.from_numpy(host_data(size, 0)), lib.xp.asarray
    return lambda: asarray(a, copy=True)


def _overhead(lib: Library, size: int) -> Thunk:
    xp = lib.xp
    (a, b), shape = _two(lib, size), near_square(size)

    def twelve_ops() -> Any:
        e = xp.exp((a + b) * 0.5)
        f = xp.sqrt(xp.abs(xp.where(e > 1.0, e, a)))
        rows = xp.sum(xp.reshape(f, shape), axis=1)
        return xp.mean(rows) - xp.max(f)

    return twelve_ops


def _random(method: str, dtype: str) -> Callable[[Library, int], Thunk]:
    """`default_rng(0).<method>(n, dtype=...)`: numpy's own default generator (PCG64) against
    hxarray.random's (Philox4x64-10); their values differ, so only shapes and dtypes are
    compared."""
    def setup(lib: Library, size: int) -> Thunk:
        module = np.random if lib.name == "numpy" else lib.xp.random
        return functools.partial(getattr(module.default_rng(0), method), size,
                                 dtype=getattr(lib.xp, dtype))

    return setup


def _cpu_allocator() -> Any:
    import hxarray

    device = hxarray.Device("cpu")
    return device.backend.allocator(device)


def _alloc_pair(lib: Library, size: int) -> Thunk:
    """hxarray: `allocator.allocate(nbytes)`, whose MemoryBuffer the timing loop drops at once, so
    its block goes back to the cache: one cached allocate + free pair. numpy: `np.empty` of the same
    bytes, for reference. `functools.partial`, not a lambda, so no Python frame is timed."""
    nbytes = 8 * size  # as many bytes as `size` float64 elements
    if lib.name == "numpy":
        return functools.partial(np.empty, nbytes, np.uint8)
    allocator = _cpu_allocator()
    allocate = allocator.allocate
    hits = allocator.stats().get("cache_hits")
    allocate(nbytes)  # dropped at once: its block goes to the cache ...
    allocate(nbytes)  # ... and this one must come from there
    if hits is None or allocator.stats()["cache_hits"] <= hits:
        raise RuntimeError(f"{type(allocator).__name__}.allocate({nbytes}) is not a cache hit")
    return functools.partial(allocate, nbytes)


def _alloc_add(lib: Library, size: int) -> dict[str, Thunk]:
    """`add(a, b)` through the namespace with a fresh output ("fresh"), and the same addition into
    a preallocated output ("out"): `c += a`, with c starting as a copy of b, so that the first
    call (the checked one) gives a + b. Both variants run the same kernel over the same memory
    traffic (two reads, one write) and differ only by getting and freeing the output."""
    a, b = _two(lib, size)
    c = lib.xp.asarray(b, copy=True)
    return {"fresh": functools.partial(lib.xp.add, a, b),
            "out": functools.partial(operator.iadd, c, a)}


CASES: tuple[Case, ...] = (
    Case("zeros", "creation", "`zeros(n)`, float64", _creation("zeros"), SIZES, QUICK_SIZES),
    Case("ones", "creation", "`ones(n)`, float64", _creation("ones"), SIZES, QUICK_SIZES),
    Case("arange", "creation", "`arange(n)`, int64", _creation("arange"), SIZES, QUICK_SIZES),
    Case("arange_f64", "creation", "`arange(float(n))`, float64", _arange_float, SIZES,
         QUICK_SIZES),
    Case("asarray", "creation", "`asarray(numpy_array, copy=True)`: host data into the library",
         _asarray, SIZES, QUICK_SIZES),
    Case("asarray_shared", "interop", "`asarray(numpy_array)` of a writable array: shared, not "
         "copied (numpy returns the array itself)", _asarray_shared, SIZES, QUICK_SIZES),
    Case("add", "elementwise", "`add(a, b)`: binary, memory-bound", _add, SIZES, QUICK_SIZES),
    Case("exp", "elementwise", "`exp(a)`: unary, compute-bound", _unary("exp"), SIZES,
         QUICK_SIZES),
    Case("sin", "elementwise", "`sin(a)`: unary, compute-bound", _unary("sin"), SIZES,
         QUICK_SIZES),
    Case("chain", "elementwise", "`sqrt(a*a + b*b) * 0.5 + 1`: five ops and their temporaries",
         _chain, SIZES, QUICK_SIZES),
    Case("fused_chain", "fused", f"`{CHAIN}` float64 through `hxarray.fuse` (numpy: the plain "
         "chain; numexpr: `evaluate`)", _fused_chain, SIZES, QUICK_SIZES,
         libraries=("numpy", "hxarray", "numexpr")),
    Case("fused_sum", "fused", "`sum(a * b)` float64: `hxarray.fuse` (one pass) and, as "
         "`:unfused`, `xp.sum(a * b)`", _fused_sum, SIZES, QUICK_SIZES,
         libraries=("numpy", "hxarray"), variants=("fused", "unfused")),
    Case("graph", "fused", "twenty operations `x = x * y + 0.5` (ten times) float64 through "
         "`hxarray.graph`, and (`graph:eager`) run eagerly", _graph, (10, 1_000, 100_000),
         (1_000,), libraries=("numpy", "hxarray"), variants=("graph", "eager")),
    Case("sum", "reduction", "`sum(a)` over all elements", _reduction("sum", None), SIZES,
         QUICK_SIZES),
    Case("sum_axis0", "reduction", "`sum(m, axis=0)`, m near-square 2-D, C order",
         _reduction("sum", 0), SIZES, QUICK_SIZES, shape=near_square),
    Case("sum_axis1", "reduction", "`sum(m, axis=1)`, m near-square 2-D, C order",
         _reduction("sum", 1), SIZES, QUICK_SIZES, shape=near_square),
    Case("mean", "reduction", "`mean(a)` over all elements", _reduction("mean", None), SIZES,
         QUICK_SIZES),
    Case("mask", "indexing", "`a[a > 0]`: boolean-mask indexing (about half kept)", _mask, SIZES,
         QUICK_SIZES),
    Case("where", "indexing", "`where(a > 0, a, b)`", _where, SIZES, QUICK_SIZES),
    Case("sort", "indexing", "`sort(a)`, float64, each library's default algorithm",
         _unary("sort"), SIZES, QUICK_SIZES),
    Case("median", "numpy", "`median(a)` (numpy mode)", _numpy_function(lambda m, a: m.median(a)),
         NUMPY_SIZES, QUICK_NUMPY_SIZES, libraries=("numpy", "hxarray")),
    Case("quantile", "numpy", "`quantile(a, [0.1, 0.5, 0.9])`, linear",
         _numpy_function(lambda m, a: m.quantile(a, [0.1, 0.5, 0.9])), NUMPY_SIZES,
         QUICK_NUMPY_SIZES, libraries=("numpy", "hxarray")),
    Case("nanmean", "numpy", "`nanmean(a)`, a tenth NaN",
         _numpy_function(lambda m, a: m.nanmean(a), nans=True), NUMPY_SIZES, QUICK_NUMPY_SIZES,
         libraries=("numpy", "hxarray")),
    Case("nanmedian", "numpy", "`nanmedian(a)`, a tenth NaN",
         _numpy_function(lambda m, a: m.nanmedian(a), nans=True), NUMPY_SIZES,
         QUICK_NUMPY_SIZES, libraries=("numpy", "hxarray")),
    Case("histogram", "numpy", "`histogram(a, bins=50)` (its counts compared)",
         _numpy_function(lambda m, a: m.histogram(a, bins=50)[0]), NUMPY_SIZES,
         QUICK_NUMPY_SIZES,
         libraries=("numpy", "hxarray")),
    Case("isclose", "numpy", "`isclose(a, b)`, half of b within the tolerances",
         _numpy_function(lambda m, a, b: m.isclose(a, b), pair=True), NUMPY_SIZES,
         QUICK_NUMPY_SIZES, libraries=("numpy", "hxarray")),
    Case("nansum", "numpy", "`nansum(a)`, a tenth NaN",
         _numpy_function(lambda m, a: m.nansum(a), nans=True), NUMPY_SIZES, QUICK_NUMPY_SIZES,
         libraries=("numpy", "hxarray")),
    Case("einsum", "numpy", "`einsum('ij,ij->i', m, m)`, m near-square 2-D: the rows' dot "
         "products", _numpy_function(lambda m, a: m.einsum("ij,ij->i", a, a), square=True),
         NUMPY_SIZES, QUICK_NUMPY_SIZES, shape=near_square, libraries=("numpy", "hxarray")),
    Case("matmul_f32", "matmul", "`matmul(a, b)`, n x n float32", _matmul("float32"),
         MATMUL_SIZES, QUICK_MATMUL_SIZES, shape=_square),
    Case("matmul_f64", "matmul", "`matmul(a, b)`, n x n float64", _matmul("float64"),
         MATMUL_SIZES, QUICK_MATMUL_SIZES, shape=_square),
    Case("random_f64", "random", "`default_rng(0).random(n)` float64 (numpy: PCG64; hxarray: "
         "Philox)", _random("random", "float64"), SIZES, QUICK_SIZES, compare_values=False,
         libraries=("numpy", "hxarray")),
    Case("random_f32", "random", "`default_rng(0).random(n, dtype=float32)`",
         _random("random", "float32"), SIZES, QUICK_SIZES, compare_values=False,
         libraries=("numpy", "hxarray")),
    Case("standard_normal", "random", "`default_rng(0).standard_normal(n)` float64 (numpy: "
         "ziggurat; hxarray: Box-Muller)", _random("standard_normal", "float64"), SIZES,
         QUICK_SIZES, compare_values=False, libraries=("numpy", "hxarray")),
    Case("to_device", "memory", "`a.to_device(a.device)`: same device, a no-op on the CPU",
         _to_device, SIZES, QUICK_SIZES),
    Case("dlpack", "memory", "`np.from_dlpack(a)`: numpy's view of the array through DLPack",
         _dlpack, SIZES, QUICK_SIZES),
    Case("copy", "memory", "`asarray(a, copy=True)`: a device-to-device copy", _copy, SIZES,
         QUICK_SIZES),
    Case("empty", "memory", "`empty(n)`, dropped at once: the allocator's allocate + free",
         _creation("empty"), SIZES, QUICK_SIZES, compare_values=False),
    Case("alloc_pair", "allocator", "hxarray: the caching allocator's `allocate(8n)` + free of a "
         "cached block; numpy: `np.empty` of 8n bytes, for reference", _alloc_pair, SIZES,
         QUICK_SIZES, compare_values=False, libraries=("numpy", "hxarray")),
    Case("alloc_add", "allocator", "`add(a, b)` with a fresh output, and (`alloc_add:out`) the "
         "same addition into a preallocated output, `c += a`", _alloc_add,
         SIZES, (100_000,), libraries=("numpy", "hxarray"), variants=("fresh", "out")),
    Case("overhead", "overhead", "a loop body of 12 mixed ops on 10-element arrays", _overhead,
         (10,), (10,)),
)
