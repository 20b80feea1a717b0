"""The numpy kernels behind the CPU backend.

Element-wise kernels and reductions are those declared in `hxarray._ops` (element-wise ones run
quietly, see `_numpy_kernels`); this module adds the CPU's faster variants and the other
operations' kernels.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._numpy_kernels import quietly, where
from ..._ops import OPS, Op, Reduction

_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}  # unsigned ints by itemsize
_SELECT_BITS_FROM = 1024  # elements from which selecting bits beats numpy's branching `where`
_WHERE_FROM = 512  # elements from which numpy's `where` and a copy beat two copies


def _where(condition: np.ndarray, x1: Any, x2: Any, *, out: np.ndarray) -> None:
    """numpy's `where` branches on every element, which mispredicts on an unpredictable
    condition. With both operands of out's dtype, where the condition picks one operand
    everywhere (a mask of NaNs that finds none, say) it copies that operand; else, of a real or
    bool dtype, it selects bits, out = x2 ^ ((x1 ^ x2) * condition) on unsigned views: three
    passes, no branch, exact (NaN payloads included)."""
    if out.size < _SELECT_BITS_FROM:  # small: two copies beat where's temporary and a copy,
        # except from _WHERE_FROM elements, where the masked copy's branches cost more (arrays of
        # out's dtype only: numpy's `where` would promote others together, not each to out's)
        if out.size >= _WHERE_FROM and type(x1) is np.ndarray and type(x2) is np.ndarray and \
                x1.dtype == out.dtype and x2.dtype == out.dtype:
            out[...] = np.where(condition, x1, x2)
        else:
            where(condition, x1, x2, out=out)
        return
    operands = [v if type(v) is np.ndarray else np.asarray(v, out.dtype) for v in (x1, x2)]
    bits = None
    if not any(v.dtype != out.dtype or np.may_share_memory(v, out) for v in operands):
        chosen = np.count_nonzero(condition)  # reads bytes: cheap beside a pass over the values
        if chosen == 0 or chosen == condition.size:
            np.copyto(out, operands[0] if chosen else operands[1])
            return
        bits = _BITS.get(out.dtype.itemsize) if out.dtype.kind != "c" else None
    if bits is None:
        np.copyto(out, np.where(condition, x1, x2), casting="unsafe")
        return
    u1, u2 = (v.view(bits) for v in operands)
    target = out.view(bits)
    np.bitwise_xor(u1, u2, out=target)
    np.multiply(target, condition, out=target)
    np.bitwise_xor(target, u2, out=target)


# For the compiled fast path, by name: the kernel of each operation, its numpy kernel (the bare
# ufunc, where it is one); a `selects` one (where) selects bits where it can. The fast path runs
# them in numpy's quiet error state itself.
FAST_PATH_KERNELS = {op.name: _where if op.selects else op.numpy for op in OPS.values()}
# The kernels of the seam: the same, silencing numpy's floating-point warnings themselves.
ELEMENTWISE: dict[Op, Callable[..., None]] = {
    op: quietly(FAST_PATH_KERNELS[op.name]) for op in OPS.values()}


# -- creation --------------------------------------------------------------------------------------
_IOTA_SIZE = 4096
_IOTA = np.arange(_IOTA_SIZE, dtype=np.int64)  # the first block of every int64 arange


def arange_into(out: np.ndarray, start: int, step: int) -> None:
    """`out[i] = start + i * step` for a 1-D int64 `out` (the caller has checked that the values,
    the step and the span fit in int64): a first block from a cached 0, 1, 2, ..., then the filled
    part again, shifted by its length, doubling it each time. Exact, and vectorised where numpy's
    arange computes element by element."""
    size = len(out)
    filled = size if size <= _IOTA_SIZE else _IOTA_SIZE
    head = out if filled == size else out[:filled]
    iota = _IOTA[:filled]
    if step != 1:
        np.multiply(iota, step, out=head)
        np.add(head, start, out=head)
    elif start:
        np.add(iota, start, out=head)
    else:
        head[...] = iota
    while filled < size:
        count = min(filled, size - filled)
        np.add(out[:count], filled * step, out=out[filled:filled + count])
        filled += count


_FLOAT_IOTA = {np.dtype(t): np.arange(1 << 15, dtype=t) for t in (np.float32, np.float64)}


def arange_float_into(out: np.ndarray, start: float, step: float, parts: int = 1,
                      loop: Callable[..., None] | None = None) -> None:
    """numpy's arange(start, start + len(out) * step, step) into the 1-D float32/float64 `out`,
    bit for bit: numpy stores start and start + step, then fills element i with
    start + i * delta (delta = their difference, in out's dtype). `loop` (a compiled
    `loop(out, begin, end, first, delta)`) does that in one pass; without it, block by block
    (a block stays in cache): the indices from a cached 0, 1, 2, ... shifted by the block's
    start, times delta, plus start: the same two roundings. Split over `parts` threads. (float32
    beyond 2**24 elements: numpy's indices round; the caller leaves those to numpy.)"""
    kind = out.dtype.type
    first, second = kind(start), kind(start + step)
    delta = second - first
    iota = _FLOAT_IOTA[out.dtype]
    block = iota.size
    address = out.ctypes.data

    def fill(begin: int, end: int) -> None:
        if loop is not None:
            loop(address, begin, end, float(first), float(delta))
            return
        for at in range(begin, end, block):
            part = out[at:min(end, at + block)]
            np.add(iota[:part.size], at, out=part)
            np.multiply(part, delta, out=part)
            np.add(part, first, out=part)

    if parts > 1:
        from .parallel import run_chunks

        run_chunks(lambda i, _: fill(out.size * i // parts // block * block,
                                     out.size if i == parts - 1 else
                                     out.size * (i + 1) // parts // block * block), parts, parts)
    else:
        fill(0, out.size)
    out[:2] = (first, second)[:out.size]


COMPRESS_FROM = 1024  # mask elements from which numpy's compress beats its branching mask indexing


# -- reductions ------------------------------------------------------------------------------------
# The zero a floating-point sum starts from, by `positive_zero` and dtype kind.
_ZEROS = {False: {"f": -0.0, "c": complex(-0.0, -0.0)}, True: {"f": 0.0, "c": 0j}}


def sum_start(dtype: np.dtype, positive_zero: bool) -> Any:
    """What a sum into `dtype` starts from: -0, so that a sum of negative zeros only is -0, as
    successive additions give (part by part for complex numbers), or +0 where `positive_zero`
    (numpy's sums); any other sum is the same from either. None for integers: no start."""
    return _ZEROS[positive_zero].get(dtype.kind)


def reduce_into(op: Reduction, x: np.ndarray, axis: tuple[int, ...] | None, keepdims: bool,
                out: np.ndarray, positive_zero: bool = False, then: Op | None = None) -> None:
    """The reduction `op` of `x` over `axis` (None: all axes), written into `out`; with `then`
    (an element-wise operation the namespace composes with the reduction: mean's divide), each
    result then combined with the number of elements reduced, part by part for complex results,
    as the namespace's composition does (the caller never reduces nothing with `then`)."""
    ufunc, dtype = op.ufunc, out.dtype
    if op.signed_zero:
        start = sum_start(dtype, positive_zero)
        if start is not None and x.size:
            ufunc.reduce(x, axis, dtype, out, keepdims, start)  # type: ignore[call-arg]
        else:
            ufunc.reduce(x, axis, dtype, out, keepdims)  # type: ignore[call-arg]
    else:
        ufunc.reduce(x, axis, dtype if op.accumulates else None, out,  # type: ignore[call-arg]
                     keepdims)
    if then is not None:
        count = x.size if axis is None else math.prod(x.shape[i] for i in axis)
        kernel = then.numpy
        for part in (out.real, out.imag) if dtype.kind == "c" else (out,):
            kernel(part, count, out=part)


# -- sorting and sets ------------------------------------------------------------------------------
def unique(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Values, first indices, inverse (shaped like x), counts; NaNs are all distinct."""
    values, index, inverse, counts = np.unique(
        x.reshape(-1), return_index=True, return_inverse=True, return_counts=True,
        equal_nan=False)
    return (values, index.astype(np.int64, copy=False),
            inverse.reshape(x.shape).astype(np.int64, copy=False),
            counts.astype(np.int64, copy=False))
