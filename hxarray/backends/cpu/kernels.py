"""The numpy kernels behind the CPU backend, by spec name.

Element-wise kernels are those declared in `hxarray._ops` (run quietly, see `_numpy_kernels`);
this module adds the CPU's faster variants and the other operations' kernels.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from ..._numpy_kernels import quietly, where
from ..._ops import OPS

_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}  # unsigned ints by itemsize
_SELECT_BITS_FROM = 1024  # elements from which selecting bits beats numpy's branching `where`


def _where(condition: np.ndarray, x1: Any, x2: Any, *, out: np.ndarray) -> None:
    """numpy's `where` branches on every element, which costs about 4 ns per element on an
    unpredictable condition. With both operands of out's (real or bool) dtype it selects bits
    instead, out = x2 ^ ((x1 ^ x2) * condition) on unsigned views: three passes, no branch,
    exact (NaN payloads included)."""
    if out.size < _SELECT_BITS_FROM:  # small: two copies beat where's temporary and a copy
        where(condition, x1, x2, out=out)
        return
    bits = _BITS.get(out.dtype.itemsize) if out.dtype.kind != "c" else None
    operands = [v if v.__class__ is np.ndarray else np.asarray(v, out.dtype) for v in (x1, x2)]
    if bits is None or \
            any(v.dtype != out.dtype or np.may_share_memory(v, out) for v in operands):
        np.copyto(out, np.where(condition, x1, x2), casting="unsafe")
        return
    u1, u2 = (v.view(bits) for v in operands)
    target = out.view(bits)
    np.bitwise_xor(u1, u2, out=target)
    np.multiply(target, condition, out=target)
    np.bitwise_xor(target, u2, out=target)


# The kernels by name: each operation's numpy kernel, quietly; `where` selects bits where it can.
ELEMENTWISE: dict[str, Callable[..., None]] = {
    **{name: quietly(op.numpy) for name, op in OPS.items()}, "where": quietly(_where)}
# The kernels that are exactly `ufunc(*args, out=out)` with warnings silenced, so that a caller
# may run the ufunc itself (the compiled fast path does).
PLAIN_UFUNCS = {name: op.numpy for name, op in OPS.items() if isinstance(op.numpy, np.ufunc)}
# Kernels that spend far longer computing than moving memory (worth threads on mid-size arrays).
COMPUTE_BOUND = frozenset(name for name, op in OPS.items() if op.heavy)


# -- creation --------------------------------------------------------------------------------------
_IOTA = np.arange(4096, dtype=np.int64)  # the first block of every int64 arange


def arange_into(out: np.ndarray, start: int, step: int) -> None:
    """`out[i] = start + i * step` for a 1-D int64 `out` (the caller has checked that the values,
    the step and the span fit in int64): a first block from a cached 0, 1, 2, ..., then the filled
    part again, shifted by its length, doubling it each time. Exact, and vectorised where numpy's
    arange computes element by element."""
    size, filled = out.size, min(out.size, _IOTA.size)
    head = out[:filled]
    if step == 1:
        np.add(_IOTA[:filled], start, out=head)
    else:
        np.multiply(_IOTA[:filled], step, out=head)
        np.add(head, start, out=head)
    while filled < size:
        count = min(filled, size - filled)
        np.add(out[:count], filled * step, out=out[filled:filled + count])
        filled += count


COMPRESS_FROM = 1024  # mask elements from which numpy's compress beats its branching mask indexing


# -- reductions ------------------------------------------------------------------------------------
REDUCING_UFUNCS: dict[str, np.ufunc] = {
    "sum": np.add, "mean": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum,
    "all": np.logical_and, "any": np.logical_or,
}
_ACCUMULATING = frozenset({"sum", "mean", "prod"})  # accumulate in the result's dtype
SILENT_REDUCTIONS = frozenset({"max", "min", "all", "any"})  # never a floating-point warning
_NEGATIVE_ZERO = {"f": -0.0, "c": complex(-0.0, -0.0)}


@lru_cache(maxsize=4096)
def reduction_plan(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool
                   ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """numpy's `axis` argument for reducing some of the axes of `shape`, and the result's
    shape."""
    return axes, tuple(1 if i in axes else n for i, n in enumerate(shape)) if keepdims else \
        tuple(n for i, n in enumerate(shape) if i not in axes)


def reduce_into(name: str, x: np.ndarray, axis: tuple[int, ...] | None, keepdims: bool,
                out: np.ndarray, count: int | None = None) -> None:
    """The reduction `name` (a key of REDUCING_UFUNCS) of `x` over `axis` (None: all axes),
    written into `out`. A mean divides by `count`, by default the number of elements reduced."""
    ufunc, dtype = REDUCING_UFUNCS[name], out.dtype
    if name == "sum":
        # From -0 rather than numpy's +0: a sum of negative zeros only is -0, as successive
        # additions give (part by part for complex numbers); any other sum is the same bit for bit.
        start = _NEGATIVE_ZERO.get(dtype.kind)
        if start is not None and x.size:
            ufunc.reduce(x, axis, dtype, out, keepdims, start)
        else:
            ufunc.reduce(x, axis, dtype, out, keepdims)
    elif name == "mean":
        if count is None:
            count = x.size if axis is None else _count(x, axis)
        if count == 0:
            out.fill(_nan(dtype))
            return
        ufunc.reduce(x, axis, dtype, out, keepdims)
        _divide_parts(out, count)
    else:
        ufunc.reduce(x, axis, dtype if name in _ACCUMULATING else None, out, keepdims)


def _divide_parts(total: np.ndarray, count: int) -> None:
    """`total /= count` in place, complex parts divided separately (so that a NaN in one stays
    there; numpy's complex division spreads it: spec, mean, "Special cases")."""
    if total.dtype.kind == "c":
        np.divide(total.real, count, out=total.real)
        np.divide(total.imag, count, out=total.imag)
    else:
        np.divide(total, count, out=total)


def _nan(dtype: np.dtype) -> Any:
    return complex(np.nan, np.nan) if dtype.kind == "c" else np.nan


def _undefined(x: np.ndarray, axes: tuple[int, ...], keepdims: bool,
               dtype: np.dtype) -> np.ndarray:
    """The all-NaN result of a statistic with no degrees of freedom left (numpy warns there)."""
    shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape)) if keepdims else \
        tuple(n for i, n in enumerate(x.shape) if i not in axes)
    return np.full(shape, _nan(dtype), dtype=dtype)


def _count(x: np.ndarray, axes: tuple[int, ...]) -> int:
    return math.prod(x.shape[i] for i in axes)


def _var(function: Callable[..., Any]) -> Callable[..., Any]:
    def kernel(x, axes, keepdims, dtype, correction=0.0):
        """NaN where M - correction <= 0 (spec: var, "Special cases")."""
        if _count(x, axes) - correction <= 0:
            return _undefined(x, axes, keepdims, dtype)
        return function(x, axis=axes, keepdims=keepdims, ddof=correction, dtype=dtype)
    return kernel


def _arg(function: Callable[..., Any]) -> Callable[..., Any]:
    def kernel(x, axes, keepdims, dtype):
        axis = axes[0] if axes is not None else None
        return function(x, axis=axis, keepdims=keepdims).astype(np.int64, copy=False)
    return kernel


def _cumulative(function: Callable[..., Any]) -> Callable[..., Any]:
    def kernel(x, axes, keepdims, dtype, include_initial=False, initial=0):
        axis = axes[0]
        result = function(x, axis=axis, dtype=dtype)
        if include_initial:
            shape = list(result.shape)
            shape[axis] = 1
            result = np.concatenate([np.full(shape, initial, dtype=result.dtype), result], axis)
        return result
    return kernel


def _count_nonzero(x, axes, keepdims, dtype):
    return np.asarray(np.count_nonzero(x, axis=axes, keepdims=keepdims), dtype=dtype)


def _diff(x, axes, keepdims, dtype, n=1, prepend=None, append=None):
    kwargs = {}
    if prepend is not None:
        kwargs["prepend"] = prepend
    if append is not None:
        kwargs["append"] = append
    return np.diff(x, n=n, axis=axes[0], **kwargs).astype(dtype, copy=False)


REDUCTIONS: dict[str, Callable[..., Any]] = {  # the rest of the reductions, on numpy's memory
    "var": _var(np.var), "std": _var(np.std),
    "argmax": _arg(np.argmax), "argmin": _arg(np.argmin),
    "cumulative_sum": _cumulative(np.cumsum), "cumulative_prod": _cumulative(np.cumprod),
    "count_nonzero": _count_nonzero, "diff": _diff,
}


# -- sorting and sets ------------------------------------------------------------------------------
def argsort(x: np.ndarray, axis: int, descending: bool, stable: bool) -> np.ndarray:
    """The sorting permutation (int64); equal elements keep their order when `stable`."""
    kind = "stable" if stable else None
    if not descending:
        return np.argsort(x, axis=axis, kind=kind).astype(np.int64, copy=False)
    # Stable descending order: sort the reversed array ascending, then reverse and re-index, so
    # equal elements keep their original relative order.
    n = x.shape[axis]
    order = np.argsort(np.flip(x, axis=axis), axis=axis, kind=kind)
    return (n - 1 - np.flip(order, axis=axis)).astype(np.int64, copy=False)


def unique(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Values, first indices, inverse (shaped like x), counts; NaNs are all distinct."""
    values, index, inverse, counts = np.unique(
        x.reshape(-1), return_index=True, return_inverse=True, return_counts=True,
        equal_nan=False)
    return (values, index.astype(np.int64, copy=False),
            inverse.reshape(x.shape).astype(np.int64, copy=False),
            counts.astype(np.int64, copy=False))


MANIPULATIONS: dict[str, Callable[..., np.ndarray]] = {
    "roll": lambda x, shift, axis: np.roll(x, shift, axis=axis),
    "repeat": lambda x, repeats, axis: np.repeat(x, repeats, axis=axis),
    "tile": lambda x, repetitions: np.tile(x, repetitions),
    "tril": lambda x, k: np.tril(x, k),
    "triu": lambda x, k: np.triu(x, k),
    "pad": lambda x, pad_width, value: np.pad(x, pad_width, constant_values=value),
}

