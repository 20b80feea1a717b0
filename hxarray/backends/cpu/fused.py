"""Fused expressions on the CPU (`hxarray.fuse`): one compiled loop, or blocked numpy.

Compiled: the expression's C++ (`backends/codegen/fused.host_source`: the same operation sources
as the CUDA kernels), built once by the host C++ compiler the CUDA simulator uses too
(`backends/codegen/compiler.py`) and kept in the kernel cache, called through ctypes (which
releases the GIL) on equal slices of the elements, one per thread of the pool (one thread while
the machine is busy: `parallel.machine_busy`).
Without a compiler (or CuPy's headers, which the sources include): blocked numpy, each step's
numpy kernel on cache-sized chunks into per-chunk temporaries, chunks spread over the pool;
hxarray says so once.
"""

from __future__ import annotations

import ctypes
import functools
import math
import struct
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..._array import Array
from ..._ops import REDUCTIONS, Op
from ..._views import contiguous_strides
from ...hal.kernel_cache import KernelCache, check_directory, default_cache_dir
from ..fusion import SCALAR, Expression, operands_of, scalar_key
from . import kernels, parallel

__all__ = ["CHUNK", "Prepared", "PreparedSum", "arange_loop", "compiled", "dense",
           "holding_the_gil", "host_function", "partition_loops", "random_loop", "run",
           "run_reduce", "run_sum"]

CHUNK = 8192  # elements per chunk of blocked evaluation: a few temporaries stay in L2
THREADED_FROM = 1 << 18  # elements from which a fused loop is split over the pool
GIL_FROM = 1 << 10  # elements from which a loop releases the GIL (below: that costs more)
ONE_PASS_FROM = 1 << 21  # elements from which a fused reduction runs chunk by chunk

_lock = threading.Lock()
_noted = False


def host_function(source: str, symbol: str, argtypes: Sequence[Any]) -> Any:
    """The C function `symbol` of C++ `source` (written against the CUDA headers), compiled by
    the host compiler (once per source: cached in memory and in the kernel cache), or None where
    it cannot be compiled here (hxarray says so once)."""
    global _noted
    key = (source, symbol)
    with _lock:
        if key in _functions:
            return _functions[key]
        if not _compilers:  # a directory others can write is refused, not worked around below
            check_directory(default_cache_dir())
        try:
            from ..codegen import OPTIONS
            from ..codegen.compiler import CompileError, HostCompiler

            if not _compilers:
                _compilers.append(HostCompiler(KernelCache(default_cache_dir())))
            compiler = _compilers[0]
            function = getattr(compiler.load_host(*compiler.compile_host(source, OPTIONS)),
                               symbol)
            function.argtypes = list(argtypes)
            function.restype = None
        except (ImportError, CompileError, OSError) as exc:
            function = None
            if not _noted:
                _noted = True
                warnings.warn(f"hxarray cannot compile its CPU loops here "
                              f"({str(exc).splitlines()[0]}): fused expressions run as blocked "
                              "numpy", RuntimeWarning, stacklevel=5)
        _functions[key] = function
        return function


_compilers: list[Any] = []
_functions: dict[tuple[str, str], Any] = {}


def compiled(expression: Expression) -> Callable[[bytes], None] | None:
    """The expression's compiled loop, `hx_fused(args)` (`host_source`), or None."""
    from ..codegen.fused import host_source

    return host_function(host_source(expression), "hx_fused", [ctypes.c_char_p])


def holding_the_gil(function: Any) -> Callable[[bytes], None]:
    """The compiled `function` of one `char*` called as numpy calls its loops of fewer than
    GIL_FROM elements: without releasing the GIL, and with its bytes passed as they are, not
    through `argtypes` (the most of a small ctypes call's cost)."""
    quick: Any = ctypes.cast(function, ctypes.PYFUNCTYPE(None))
    quick.argtypes = None
    return quick


class _Loop:
    """An expression's compiled loop (`function`, None without a compiler; `quick`: the same
    holding the GIL) and what every call of it reuses: the packing of its arguments
    (`host_source`'s int64s: `head`, the part that changes from call to call, and `tail`) and
    the tail of a dense call (every operand contiguous in the output's shape)."""

    __slots__ = ("function", "quick", "head", "tail", "dense", "dense_tail")

    def __init__(self, expression: Expression, function: Callable[[bytes], None] | None) -> None:
        operands = expression.steps[:expression.operands]
        self.function = function
        self.quick = None if function is None else holding_the_gil(function)
        self.head = struct.Struct(f"<{len(operands) + 3}q").pack
        self.tail = struct.Struct(f"<{4 + 2 * len(operands)}q").pack
        self.dense = tuple(x for s in operands
                           for x in (0, 0 if s.op == SCALAR else s.dtype.itemsize))
        self.dense_tail = self.tail(0, 1, 0, expression.dtype.itemsize, *self.dense)

    def __call__(self, n0: int, n1: int, target: int, out_strides: Sequence[int],
                 pointers: Sequence[int], strides: Sequence[int], split: bool = True) -> None:
        """The loop over n0 x n1 elements, split over the pool when large (and `split`)."""
        total = n0 * n1
        function, head, tail = self.function, self.head, self.tail
        assert function is not None
        if not split or total < THREADED_FROM or parallel.machine_busy() or \
                (count := parallel.get_num_threads()) < 2:
            function(head(*pointers, target, n1, total) + tail(0, n0, *out_strides, *strides))
            return
        parallel.run_chunks(lambda start, stop: function(
            head(*pointers, target, n1, stop) + tail(start, n0, *out_strides, *strides)),
            total, count)


def _loop(expression: Expression) -> _Loop:
    """The expression's `_Loop` (compiled on first use)."""
    found = _loops.get(expression)
    if found is None:
        found = _Loop(expression, compiled(expression))
        with _lock:
            found = _loops.setdefault(expression, found)
    return found


_loops: dict[Expression, _Loop] = {}


class _Operands:
    """An expression's operands for calls with the same scalars (None at the arrays' places):
    the scalars' table (`_scalars`), and each call's operand pointers."""

    __slots__ = ("expression", "scalars", "constants", "pointers", "slots")

    def __init__(self, expression: Expression, scalars: Sequence[Any]) -> None:
        self.expression = expression
        self.scalars = scalars
        self.constants = _scalars(expression, scalars)
        address = iter(range(self.constants[1], self.constants[1] + 16 * len(scalars), 16))
        self.pointers = [0 if v is None else next(address) for v in scalars]
        self.slots = [k for k, v in enumerate(scalars) if v is None]

    def addresses(self, arrays: Sequence[Array]) -> list[int]:
        """Each operand's address: the arrays' (in order) and the scalars' in the table."""
        pointers = self.pointers[:]
        for k, a in zip(self.slots, arrays):
            pointers[k] = a._buffer.block.address + a._offset
        return pointers

    def calling(self, function: Callable[[bytes], None], pack: Callable[..., bytes],
                rest: Sequence[int], tail: bytes = b"") -> Callable[[Sequence[Array], Array], None]:
        """A call of the array operands and out: `function` of `pack` of the operands'
        addresses, out's and `rest`, then `tail` (`_caller`)."""
        return _caller(tuple(self.slots), len(self.pointers), len(rest))(
            function, pack, self.pointers, rest, tail)


@functools.cache
def _caller(slots: tuple[int, ...], operands: int, extra: int) -> Callable[..., Any]:
    """What makes `_Operands.calling`'s call for `operands` operands, the arrays at `slots` and
    `extra` values after out's address: the call written out for them (as `dataclasses` writes
    `__init__`), so that a warm call builds no list and runs no loop."""
    scalars = [k for k in range(operands) if k not in slots]
    values = [f"a{k}._buffer.block.address + a{k}._offset" if k in slots else f"p{k}"
              for k in range(operands)]
    values += ["out._buffer.block.address + out._offset", *(f"r{i}" for i in range(extra))]
    lines = ["def make(function, pack, pointers, rest, tail):",
             *(f"    p{k} = pointers[{k}]" for k in scalars),
             *(f"    r{i} = rest[{i}]" for i in range(extra)),
             "    def call(arrays, out):",
             f"        ({''.join(f'a{k}, ' for k in slots)}) = arrays",
             f"        function(pack({', '.join(values)}) + tail)",
             "    return call"]
    namespace: dict[str, Any] = {}
    exec(compile("\n".join(lines), f"<fused call, arrays at {slots} of {operands}>", "exec"),
         namespace)
    return namespace["make"]


class Prepared(_Operands):
    """An expression prepared for calls with the same scalar operands (`CpuBackend.fused_call`):
    the loop and the operands."""

    __slots__ = ("loop",)

    def __init__(self, expression: Expression, scalars: Sequence[Any]) -> None:
        super().__init__(expression, scalars)
        self.loop = _loop(expression)

    def __call__(self, arrays: Sequence[Array], out: Array) -> None:
        """out = the expression of the array operands (in order) and the scalars."""
        shape = out._shape
        size = math.prod(shape)
        loop = self.loop
        if size == 0:
            return
        if loop.function is None:
            _blocked(self.expression, [native(a) if a.__class__ is Array else a
                                       for a in operands_of(self.scalars, arrays)], native(out))
        elif not dense(arrays, shape):
            _strided(loop, operands_of(self.scalars, arrays), out, self.constants[1])
        elif size < THREADED_FROM:
            self.laid_out(arrays, shape)(arrays, out)
        else:
            loop(1, size, out._buffer.block.address + out._offset, (0, out._dtype.itemsize),
                 self.addresses(arrays), loop.dense)

    def laid_out(self, arrays: Sequence[Array], shape: tuple[int, ...]
                 ) -> Callable[[Sequence[Array], Array], None]:
        """This call for array operands laid out as `arrays` and a fresh out of `shape`
        (`CpuBackend.fused_layout`): where they are dense and fewer than THREADED_FROM, the
        compiled loop on the calling thread, with nothing checked."""
        size = math.prod(shape)
        loop = self.loop
        if not size or size >= THREADED_FROM or loop.function is None or loop.quick is None or \
                not dense(arrays, shape):
            return self
        return self.calling(loop.quick if size < GIL_FROM else loop.function, loop.head,
                            (size, size), loop.dense_tail)


_ARANGE = """
// T(i) for a block of 16 indices is T(i) of the first plus the exact offsets 0..15: one
// conversion per block, where converting each int64 index is a scalar instruction on CPUs
// without a vector conversion (AVX2). The sums are integers below 2**24 (float: the caller's
// bound) or 2**53 (double), so exact: the values are numpy's bit for bit.
template <typename T> static void arange(T* out, long long begin, long long end, T first,
                                         T delta) {
    T offset[16];
    for (int k = 0; k < 16; k++) offset[k] = T(k);
    long long i = begin;
    for (; i + 16 <= end; i += 16) {
        const T base = T(i);
        for (int k = 0; k < 16; k++) out[i + k] = first + (base + offset[k]) * delta;
    }
    for (; i < end; i++) out[i] = first + T(i) * delta;
}
extern "C" void hx_arange_f32(float* out, long long begin, long long end, double first,
                              double delta) {
    arange<float>(out, begin, end, float(first), float(delta));
}
extern "C" void hx_arange_f64(double* out, long long begin, long long end, double first,
                              double delta) {
    arange<double>(out, begin, end, first, delta);
}
"""


def arange_loop(dtype: np.dtype) -> Callable[..., None] | None:
    """A compiled `out[i] = first + i * delta` for i in [begin, end) (float32, float64), as
    numpy's arange fills; None without a compiler."""
    return host_function(_ARANGE, "hx_arange_f32" if dtype == np.float32 else "hx_arange_f64",
                         [ctypes.c_void_p, ctypes.c_longlong, ctypes.c_longlong,
                          ctypes.c_double, ctypes.c_double])


def random_loop(kind: Any, dtype: Any) -> tuple[Callable[[bytes], None], Any] | None:
    """The compiled fill of random transform `kind` (`backends/philox.py`) in `dtype`,
    `hx_random(packed)` (`codegen/random.host_source`), as (the call that releases the GIL, the
    one that holds it: `holding_the_gil`); None without a compiler."""
    found = _random_loops.get((kind.name, dtype), False)
    if found is False:
        from ..codegen.random import host_source

        function = host_function(host_source(kind, dtype), "hx_random", [ctypes.c_char_p])
        found = _random_loops[kind.name, dtype] = None if function is None else (
            function, holding_the_gil(function))
    return found


_random_loops: dict[tuple[str, Any], Any] = {}


_PARTITION = """
// The value range of v among k sorted pivots: how many of them v is not below (NaN: k).
template <typename T> static inline long long range_of(T v, const T* p, long long k) {
    long long lo = 0, len = k;
    while (len > 0) {
        const long long half = len / 2;
        if (v < p[lo + half]) len = half; else { lo += half + 1; len -= half + 1; }
    }
    return lo;
}
template <typename T, typename F> static inline void each(const char* x, long long n,
                                                          long long stride, F f) {
    if (stride == sizeof(T)) {
        const T* v = reinterpret_cast<const T*>(x);
        for (long long i = 0; i < n; i++) f(v[i]);
    } else {
        for (long long i = 0; i < n; i++) f(*reinterpret_cast<const T*>(x + i * stride));
    }
}
template <typename T> static void count(const char* x, long long n, long long stride,
                                        const T* p, long long k, long long* counts) {
    if (k == 1) {
        const T p0 = p[0];
        long long below = 0;
        each<T>(x, n, stride, [&](T v) { below += v < p0; });
        counts[0] = below;
        counts[1] = n - below;
        return;
    }
    for (long long r = 0; r <= k; r++) counts[r] = 0;
    each<T>(x, n, stride, [&](T v) { counts[range_of(v, p, k)]++; });
}
// Each element to its range's next place; `at` (one per range) advances. Branch-free for one
// pivot: with random data a branch would be mispredicted every other element.
template <typename T> static void scatter(const char* x, long long n, long long stride,
                                          const T* p, long long k, T* out, long long* at) {
    if (k == 1) {
        const T p0 = p[0];
        long long lo = at[0], hi = at[1];
        each<T>(x, n, stride, [&](T v) {
            const long long below = v < p0, mask = -below;
            out[(lo & mask) | (hi & ~mask)] = v;
            lo += below;
            hi += 1 - below;
        });
        at[0] = lo;
        at[1] = hi;
        return;
    }
    each<T>(x, n, stride, [&](T v) { out[at[range_of(v, p, k)]++] = v; });
}
#define HX_PARTITION(name, T) \\
    extern "C" void hx_count_##name(const char* x, long long n, long long stride, const T* p, \\
                                    long long k, long long* counts) { \\
        count<T>(x, n, stride, p, k, counts); \\
    } \\
    extern "C" void hx_scatter_##name(const char* x, long long n, long long stride, const T* p, \\
                                      long long k, T* out, long long* at) { \\
        scatter<T>(x, n, stride, p, k, out, at); \\
    }
HX_PARTITION(b1, bool) HX_PARTITION(i1, signed char) HX_PARTITION(u1, unsigned char)
HX_PARTITION(i2, short) HX_PARTITION(u2, unsigned short) HX_PARTITION(i4, int)
HX_PARTITION(u4, unsigned int) HX_PARTITION(i8, long long) HX_PARTITION(u8, unsigned long long)
HX_PARTITION(f4, float) HX_PARTITION(f8, double)
"""
_PARTITIONED = frozenset("b1 i1 u1 i2 u2 i4 u4 i8 u8 f4 f8".split())


def partition_loops(dtype: np.dtype) -> tuple[Callable[..., None], Callable[..., None]] | None:
    """The compiled passes of a sample sort's partition of a (strided) 1-D array by k sorted
    pivots (`x`'s dtype) into k + 1 value ranges (NaN in the last):
    `count(x, n, byte_stride, pivots, k, counts)` (int64 per range) and
    `scatter(x, n, byte_stride, pivots, k, out, at)` (each element to `out[at[range]++]`);
    None for other dtypes or without a compiler."""
    name = dtype.str[1:]
    if name not in _PARTITIONED or not dtype.isnative:
        return None
    pointer, integer = ctypes.c_void_p, ctypes.c_longlong
    count = host_function(_PARTITION, f"hx_count_{name}",
                          [pointer, integer, integer, pointer, integer, pointer])
    scatter = host_function(_PARTITION, f"hx_scatter_{name}",
                            [pointer, integer, integer, pointer, integer, pointer, pointer])
    return None if count is None or scatter is None else (count, scatter)


def _scalars(expression: Expression, operands: Sequence[Any]) -> tuple[np.ndarray, int]:
    """The scalar operands stored in their dtypes, 16 bytes apart, and their address (kept per
    expression and values: they are the constants of a traced signature)."""
    key = (expression, tuple(scalar_key(v) for v, s in zip(operands, expression.steps)
                             if s.op == SCALAR))
    found = _constants.get(key)
    if found is None:
        table = np.zeros((max(1, len(key[1])), 16), np.uint8)
        with np.errstate(all="ignore"):  # a scalar stored in a narrower dtype, as unfused
            scalars = [(v, s) for v, s in zip(operands, expression.steps) if s.op == SCALAR]
            for row, (v, s) in enumerate(scalars):
                value = np.asarray(v, dtype=s.dtype.numpy)
                table[row, :value.itemsize] = np.frombuffer(value.tobytes(), np.uint8)
        if len(_constants) > 4096:
            _constants.clear()
        found = _constants[key] = _addressed(table)
    return found


def _addressed(array: np.ndarray) -> tuple[np.ndarray, int]:
    return array, array.ctypes.data


_constants: dict[Any, tuple[np.ndarray, int]] = {}


def run(expression: Expression, operands: Sequence[Any], out: Array) -> None:
    """out = the expression of the operands (arrays of the CPU, broadcast to out, or Python
    scalars); `out` is fresh and C-contiguous."""
    Prepared(expression, [None if a.__class__ is Array else a for a in operands])(
        [a for a in operands if a.__class__ is Array], out)


def _strided(loop: _Loop, operands: Sequence[Any], out: Array, constants: int) -> None:
    """Any layout: the broadcast strides merged (`collapse`) to at most two axes per call, a
    call per index of the axes before them."""
    from ..codegen.elementwise import broadcast_strides, collapse

    shape = out._shape
    arrays = [a for a in operands if a.__class__ is Array]
    dims, steps = collapse(shape, [out._strides, *(broadcast_strides(shape, a._shape, a._strides)
                                                   for a in arrays)])
    while len(dims) < 2:
        dims, steps = (1, *dims), [(0, *st) for st in steps]
    n0, n1 = dims[-2:]
    strides: list[int] = []
    bases: list[tuple[int, tuple[int, ...]]] = []
    array_steps = iter(zip(arrays, steps[1:]))
    for a in operands:
        if a.__class__ is not Array:
            bases.append((constants, ()))
            constants += 16
            strides += (0, 0)
        else:
            array, layout = next(array_steps)
            bases.append((array._buffer.block.address + array._offset, layout[:-2]))
            strides += layout[-2:]
    start = out._buffer.block.address + out._offset
    for index in np.ndindex(*dims[:-2]):
        pointers = [b + sum(i * s for i, s in zip(index, lead)) for b, lead in bases]
        target = start + sum(i * s for i, s in zip(index, steps[0][:-2]))
        loop(n0, n1, target, steps[0][-2:], pointers, strides)


def native(x: Array) -> np.ndarray:
    from .backend import CpuBackend

    return CpuBackend.native(None, x)  # type: ignore[arg-type]


def dense(operands: Sequence[Any], shape: tuple[int, ...]) -> bool:
    """Whether every array among `operands` is C-contiguous in `shape` (none broadcast): the
    loops' dense layout, where each operand advances by its own itemsize."""
    return all(a._shape == shape and a._strides == contiguous_strides(shape, a._dtype.itemsize)
               for a in operands if a.__class__ is Array)


def run_reduce(expression: Expression, operands: Sequence[Any], shape: tuple[int, ...],
               reduce: Callable[[np.ndarray, np.ndarray], None], out: np.ndarray) -> bool:
    """out = `reduce` over all axes of the expression of same-shaped C-contiguous arrays (and
    scalars), in one pass: chunks of the expression into a small temporary, each reduced into a
    partial result, the partials reduced in order. False (out untouched) where the operands
    are laid out otherwise or too small to pay."""
    size = math.prod(shape)
    if size < ONE_PASS_FROM or not dense(operands, shape):
        return False
    loop = _loop(expression)
    constants = _scalars(expression, operands)
    flat = [native(a).reshape(-1) if a.__class__ is Array else a for a in operands]
    chunk = CHUNK * 8
    chunks = -(-size // chunk)
    partials = np.empty(chunks, out.dtype)
    dtype = expression.dtype.numpy
    out_strides = (0, dtype.itemsize)

    def part(first: int, last: int) -> None:
        buffer = np.empty(chunk, dtype)
        for c in range(first, last):
            start, stop = c * chunk, min(size, (c + 1) * chunk)
            value = buffer[:stop - start]
            if loop.function is None:
                _evaluate(expression, [v[start:stop] if v.__class__ is np.ndarray else v
                                       for v in flat], value)
            else:
                scalar = iter(range(constants[1], constants[1] + 16 * len(flat), 16))
                pointers = [v.ctypes.data + start * v.itemsize if v.__class__ is np.ndarray
                            else next(scalar) for v in flat]
                loop(1, stop - start, value.ctypes.data, out_strides, pointers, loop.dense,
                     split=False)
            reduce(value, partials[c, ...])

    count = 1 if parallel.machine_busy() else parallel.get_num_threads()
    if count < 2:
        part(0, chunks)
    else:
        parallel.run_chunks(part, chunks, min(count, chunks))
    reduce(partials, out)
    return True


def run_sum(expression: Expression, operands: Sequence[Any], shape: tuple[int, ...], out: Array,
            positive_zero: bool, pieces: int) -> bool:
    """out (0-D) = the sum over all axes of the expression of same-shaped C-contiguous arrays
    (and scalars) in one compiled pass (`PreparedSum`); False (out untouched) where it does not
    run: other layouts, dtypes, no elements, no compiler."""
    if not dense(operands, shape):
        return False
    summed = PreparedSum.of(expression, [None if a.__class__ is Array else a for a in operands],
                            shape, out._dtype, positive_zero)
    if summed is None:
        return False
    summed([a for a in operands if a.__class__ is Array], out, pieces)
    return True


class PreparedSum(_Operands):
    """The sum over all axes of an expression of dense operands of one shape and the same
    scalars, in one compiled pass, bit for bit what `kernels.reduce_into` gives for the
    expression's values (`positive_zero` as there) split into `pieces` partial sums as
    `parallel.reduction_partials` splits them (1: not split): numpy's pairwise order is kept
    (`host_sum_source`). Large sums run on the pool: the pieces, or one piece's pairwise halves
    (which numpy adds last). The caller keeps numpy's floating-point warnings quiet where the
    sum is split or large."""

    __slots__ = ("function", "quick", "pack", "size", "total", "positive_zero", "initial",
                 "at_initial")

    @classmethod
    def of(cls, expression: Expression, scalars: Sequence[Any], shape: tuple[int, ...],
           total: Any, positive_zero: bool) -> PreparedSum | None:
        """The prepared sum into `total`: floating-point sums in the expression's own dtype and
        integer sums; None for others (float16's, which numpy carries in float32), no
        elements, or without a compiler."""
        size = math.prod(shape)
        if not size or not (total == expression.dtype and total.kind == "f" and
                            total.itemsize >= 4 or
                            total.kind in "iu" and expression.dtype.kind in "biu"):
            return None
        loop = _sum_loop(expression, total)
        if loop is None:
            return None
        return cls(expression, scalars, loop, size, total.numpy, positive_zero)

    def __init__(self, expression: Expression, scalars: Sequence[Any],
                 loop: tuple[Callable[[bytes], None], Callable[[bytes], None],
                             Callable[..., bytes]],
                 size: int, total: np.dtype, positive_zero: bool) -> None:
        super().__init__(expression, scalars)
        self.function, self.quick, self.pack = loop
        self.size, self.total, self.positive_zero = size, total, positive_zero
        self.initial, self.at_initial = _starts[positive_zero, total]

    def single(self) -> Callable[[Sequence[Array], Array], None]:
        """The sum not split: one compiled pass on the calling thread (of fewer than
        THREADED_FROM elements, or on a busy machine)."""
        return self.calling(self.quick if self.size < GIL_FROM else self.function, self.pack,
                            (self.at_initial, 0, self.size))

    def __call__(self, arrays: Sequence[Array], out: Array, pieces: int) -> None:
        """out (0-D) = the sum of the expression of `arrays` (in order) and the scalars."""
        size, total = self.size, self.total
        count = 1 if size < THREADED_FROM or parallel.machine_busy() else \
            parallel.get_num_threads()
        if pieces == 1 and count < 2:
            self.single()(arrays, out)
            return
        # each piece, halved numpy's way until there are runs enough for the threads
        depth = 0 if pieces >= count else (count - 1).bit_length()
        runs: list[tuple[int, int]] = []
        trees = [_halves(size * p // pieces, size * (p + 1) // pieces, depth, runs)
                 for p in range(pieces)]
        sums = np.empty(len(runs), total)
        at_sums = sums.ctypes.data
        function, pack, pointers = self.function, self.pack, self.addresses(arrays)

        def part(first: int, last: int) -> None:
            for r in range(first, last):
                function(pack(*pointers, at_sums + r * sums.itemsize, 0, *runs[r]))

        if count < 2:
            part(0, len(runs))
        else:
            parallel.run_chunks(part, len(runs), min(count, len(runs)))
        partials = np.array([_combine(tree, sums) for tree in trees], total)
        if self.initial is not None:  # numpy's reduction: the start, then the pairwise sum added
            empty = np.diff([size * p // pieces for p in range(pieces + 1)]) == 0
            np.add(self.initial, partials, out=partials)
            partials[empty] = 0  # a piece of no elements has no start: numpy's empty sum, +0
        target = native(out)
        if pieces == 1:
            target[...] = partials[0]
        else:
            kernels.reduce_into(REDUCTIONS["sum"], partials, None, False, target,
                                self.positive_zero)


class _Starts(dict[tuple[bool, np.dtype], tuple[np.ndarray | None, int]]):
    """(positive_zero, dtype) -> what a sum starts from (`kernels.sum_start`) as a 0-D array
    and its address, or (None, 0): made once."""

    def __missing__(self, key: tuple[bool, np.dtype]) -> tuple[np.ndarray | None, int]:
        start = kernels.sum_start(key[1], key[0])
        value = None if start is None else np.array(start, key[1])
        found = self[key] = (value, 0 if value is None else value.ctypes.data)
        return found


_starts = _Starts()


def _halves(begin: int, end: int, depth: int, runs: list[tuple[int, int]]) -> Any:
    """The tree of [begin, end) halved `depth` times where numpy's pairwise summation halves a
    run (one of up to 128 elements it does not): a leaf is the index of its run, appended to
    `runs`; a node, the pair of its halves."""
    n = end - begin
    if depth == 0 or n <= 128:
        runs.append((begin, end))
        return len(runs) - 1
    half = n // 2 - n // 2 % 8
    return (_halves(begin, begin + half, depth - 1, runs),
            _halves(begin + half, end, depth - 1, runs))


def _combine(tree: Any, sums: np.ndarray) -> Any:
    """The sum of a `_halves` tree: each node's halves' sums added, as numpy adds them."""
    if tree.__class__ is int:
        return sums[tree]
    return _combine(tree[0], sums) + _combine(tree[1], sums)


def _sum_loop(expression: Expression, total: Any
              ) -> tuple[Callable[[bytes], None], Callable[[bytes], None],
                         Callable[..., bytes]] | None:
    """The compiled `hx_fused_sum` of the expression into `total` (`host_sum_source`), the
    same holding the GIL, and the packing of its arguments; None without a compiler."""
    key = (expression, total)
    if key not in _sums:
        from ..codegen.fused import host_sum_source

        function = host_function(host_sum_source(expression, total), "hx_fused_sum",
                                 [ctypes.c_char_p])
        _sums[key] = None if function is None else (
            function, holding_the_gil(function),
            struct.Struct(f"<{expression.operands + 4}q").pack)
    return _sums[key]


_sums: dict[tuple[Expression, Any], tuple[Callable[[bytes], None], Callable[[bytes], None],
                                          Callable[..., bytes]] | None] = {}


def _blocked(expression: Expression, operands: Sequence[Any], out: np.ndarray) -> None:
    """Blocked numpy evaluation into `out`, chunks along the first axis."""
    shape = out.shape
    views = [np.broadcast_to(v, shape) if s.op != SCALAR else v
             for v, s in zip(operands, expression.steps)]
    if not shape:
        _evaluate(expression, views, out)
        return
    row = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    rows = max(1, CHUNK // max(row, 1))
    chunks = -(-shape[0] // rows)

    def part(first: int, last: int) -> None:
        for c in range(first, last):
            key = slice(c * rows, min(shape[0], (c + 1) * rows))
            _evaluate(expression, [v[key] if v.__class__ is np.ndarray else v for v in views],
                      out[key])

    count = parallel.get_num_threads() if out.size >= THREADED_FROM else 1
    if count < 2 or chunks < 2:
        part(0, chunks)
    else:
        parallel.run_chunks(part, chunks, min(count, chunks))


def _evaluate(expression: Expression, operands: Sequence[Any], out: np.ndarray) -> None:
    values = list(operands)
    last = len(expression.steps) - 1
    for index, step in enumerate(expression.steps[expression.operands:], expression.operands):
        args = [values[i] for i in step.args]
        into = out if index == last else np.empty(out.shape, step.dtype.numpy)
        if not isinstance(step.op, Op):  # ASTYPE: the one other kind of step after the operands
            with np.errstate(all="ignore"):
                np.copyto(into, args[0], casting="unsafe")
        else:
            kernels.ELEMENTWISE[step.op](*args, out=into)
        values.append(into)
