"""Fused expressions on the CPU (`hxarray.fuse`): one compiled loop, or blocked numpy.

Compiled: the expression's C++ (`cuda/codegen/fused.host_source`: the same operation sources as
the CUDA kernels), built once by the host C++ compiler the CUDA simulator uses and kept in the
kernel cache, called through ctypes (which releases the GIL) on equal slices of the elements,
one per thread of the pool (one thread while the machine is busy: `parallel.machine_busy`).
Without a compiler (or CuPy's headers, which the sources include): blocked numpy, each step's
numpy kernel on cache-sized chunks into per-chunk temporaries, chunks spread over the pool;
hxarray says so once.
"""

from __future__ import annotations

import ctypes
import math
import struct
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..._array import Array
from ..._ops import Op
from ..._views import contiguous_strides
from ...hal.kernel_cache import KernelCache, default_cache_dir
from ..fusion import SCALAR, Expression
from . import kernels, parallel

__all__ = ["CHUNK", "arange_loop", "compiled", "host_function", "run", "run_reduce"]

CHUNK = 8192  # elements per chunk of blocked evaluation: a few temporaries stay in L2
THREADED_FROM = 1 << 18  # elements from which a fused loop is split over the pool
ONE_PASS_FROM = 1 << 21  # elements from which a fused reduction runs chunk by chunk

_ARGTYPES = [ctypes.c_longlong] * 4 + [ctypes.c_void_p] * 4
_lock = threading.Lock()
_loops: dict[Expression, Callable[..., None] | None] = {}
_UNSET: Any = object()
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
        try:
            from ..cuda.codegen import OPTIONS
            from ..cuda.driver import CompileError
            from ..cuda.sim.compiler import HostCompiler

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


def compiled(expression: Expression) -> Callable[..., None] | None:
    """The expression's compiled loop (built on first use), or None."""
    loop = _loops.get(expression, _UNSET)
    if loop is _UNSET:
        from ..cuda.codegen.fused import host_source

        loop = _loops[expression] = host_function(host_source(expression), "hx_fused",
                                                  _ARGTYPES)
    return loop


_ARANGE = """
template <typename T> static void arange(T* out, long long begin, long long end, T first,
                                         T delta) {
    for (long long i = begin; i < end; i++) out[i] = first + T(i) * delta;
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


def _scalars(expression: Expression, operands: Sequence[Any]) -> tuple[np.ndarray, int]:
    """The scalar operands stored in their dtypes, 16 bytes apart, and their address (kept per
    expression and values: they are the constants of a traced signature)."""
    key = (expression, tuple(_exact(v) for v, s in zip(operands, expression.steps)
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


def _exact(value: Any) -> Any:
    """A key that tells apart every scalar value (0.0 from -0.0, each NaN payload)."""
    if value.__class__ is float:
        return _DOUBLE.pack(value)
    if value.__class__ is complex:
        return _DOUBLE.pack(value.real) + _DOUBLE.pack(value.imag)
    return (value.__class__, value)


_DOUBLE = struct.Struct("<d")
_constants: dict[Any, tuple[np.ndarray, int]] = {}
_DENSE_OUT = {size: _addressed(np.array((0, size), np.int64)) for size in (1, 2, 4, 8, 16)}
_dense_strides: dict[Expression, tuple[np.ndarray, int]] = {}


def _dense(expression: Expression) -> tuple[np.ndarray, int]:
    """Operand strides for operands that are C-contiguous in the output's shape (scalars 0),
    and their address."""
    found = _dense_strides.get(expression)
    if found is None:
        found = _dense_strides[expression] = _addressed(np.array(
            [x for s in expression.steps[:expression.operands]
             for x in (0, 0 if s.op == SCALAR else s.dtype.itemsize)], np.int64))
    return found


def run(expression: Expression, operands: Sequence[Any], out: Array) -> None:
    """out = the expression of the operands (arrays of the CPU, broadcast to out, or Python
    scalars); `out` is fresh and C-contiguous."""
    shape = out._shape
    size = math.prod(shape)
    if size == 0:
        return
    loop = _loops.get(expression, _UNSET)
    if loop is _UNSET:
        loop = compiled(expression)
    if loop is None:
        _blocked(expression, [native(a) if a.__class__ is Array else a for a in operands],
                 native(out))
        return
    constants, base = _scalars(expression, operands)
    pointers = []
    dense = True
    row = 0
    for a, step in zip(operands, expression.steps):
        if step.op == SCALAR:
            pointers.append(base + 16 * row)
            row += 1
            continue
        if a._shape != shape or a._strides != out._strides and \
                a._strides != contiguous_strides(shape, a._dtype.itemsize):
            dense = False
        pointers.append(a._buffer.block.address + a._offset)
    target = out._buffer.block.address + out._offset
    if dense:
        _call(loop, 1, size, target, _DENSE_OUT[out._dtype.itemsize], pointers,
              _dense(expression), (constants,))
        return
    _strided(loop, expression, operands, out, (constants, base))


def _call(loop: Callable[..., None], n0: int, n1: int, target: int,
          out_strides: tuple[np.ndarray, int], pointers: list[int],
          strides: tuple[np.ndarray, int], keep: Any, split: bool = True) -> None:
    """The loop over n0 x n1 elements, split over the pool when large (and `split`); strides
    come with their addresses."""
    addresses = (ctypes.c_void_p * len(pointers))(*pointers)
    total = n0 * n1
    count = parallel.get_num_threads() if split and total >= THREADED_FROM and \
        not parallel.machine_busy() else 1
    args = (target, out_strides[1], addresses, strides[1])
    if count < 2:
        loop(n0, n1, 0, total, *args)
    else:
        parallel.run_chunks(lambda start, stop: loop(n0, n1, start, stop, *args), total, count)
    del keep


def _strided(loop: Callable[..., None], expression: Expression, operands: Sequence[Any],
             out: Array, constants: tuple[np.ndarray, int]) -> None:
    """Any layout: the broadcast strides merged (`collapse`) to at most two axes per call, a
    call per index of the axes before them."""
    from ..cuda.codegen.elementwise import broadcast_strides, collapse

    shape = out._shape
    arrays = [a for a, s in zip(operands, expression.steps) if s.op != SCALAR]
    dims, steps = collapse(shape, [out._strides, *(broadcast_strides(shape, a._shape, a._strides)
                                                   for a in arrays)])
    while len(dims) < 2:
        dims, steps = (1, *dims), [(0, *st) for st in steps]
    n0, n1 = dims[-2:]
    strides = _addressed(np.zeros(2 * expression.operands, np.int64))
    bases: list[tuple[int, tuple[int, ...]]] = []
    array_steps = iter(zip(arrays, steps[1:]))
    row = 0
    for k, step in enumerate(expression.steps[:expression.operands]):
        if step.op == SCALAR:
            bases.append((constants[1] + 16 * row, ()))
            row += 1
        else:
            array, layout = next(array_steps)
            bases.append((array._buffer.block.address + array._offset, layout[:-2]))
            strides[0][2 * k:2 * k + 2] = layout[-2:]
    out_strides = _addressed(np.array(steps[0][-2:], np.int64))
    start = out._buffer.block.address + out._offset
    for index in np.ndindex(*dims[:-2]):
        pointers = [b + sum(i * s for i, s in zip(index, lead)) for b, lead in bases]
        target = start + sum(i * s for i, s in zip(index, steps[0][:-2]))
        _call(loop, n0, n1, target, out_strides, pointers, strides, constants)


def native(x: Array) -> np.ndarray:
    from .backend import CpuBackend

    return CpuBackend.native(None, x)  # type: ignore[arg-type]


def run_reduce(expression: Expression, operands: Sequence[Any], shape: tuple[int, ...],
               reduce: Callable[[np.ndarray, np.ndarray], None], out: np.ndarray) -> bool:
    """out = `reduce` over all axes of the expression of same-shaped C-contiguous arrays (and
    scalars), in one pass: chunks of the expression into a small temporary, each reduced into a
    partial result, the partials reduced in order. False (out untouched) where the operands
    are laid out otherwise or too small to pay."""
    size = math.prod(shape)
    if size < ONE_PASS_FROM or any(
            a.__class__ is Array and (a._shape != shape or
                                      a._strides != contiguous_strides(shape, a._dtype.itemsize))
            for a in operands):
        return False
    loop = _loops.get(expression, _UNSET)
    if loop is _UNSET:
        loop = compiled(expression)
    constants, base = _scalars(expression, operands)
    flat = [native(a).reshape(-1) if a.__class__ is Array else a for a in operands]
    chunk = CHUNK * 8
    chunks = -(-size // chunk)
    partials = np.empty(chunks, out.dtype)
    dtype = expression.dtype.numpy
    strides = _dense(expression)
    out_strides = _DENSE_OUT[dtype.itemsize]

    def part(first: int, last: int) -> None:
        buffer = np.empty(chunk, dtype)
        for c in range(first, last):
            start, stop = c * chunk, min(size, (c + 1) * chunk)
            value = buffer[:stop - start]
            if loop is None:
                _evaluate(expression, [v[start:stop] if v.__class__ is np.ndarray else v
                                       for v in flat], value)
            else:
                row = iter(range(expression.operands))
                pointers = [base + 16 * next(row) if s.op == SCALAR else
                            v.ctypes.data + start * v.itemsize
                            for v, s in zip(flat, expression.steps)]
                _call(loop, 1, stop - start, value.ctypes.data, out_strides, pointers, strides,
                      constants, split=False)
            reduce(value, partials[c, ...])

    count = 1 if parallel.machine_busy() else parallel.get_num_threads()
    if count < 2:
        part(0, chunks)
    else:
        parallel.run_chunks(part, chunks, min(count, chunks))
    reduce(partials, out)
    return True


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
