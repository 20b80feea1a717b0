"""The numpy kernels behind the CPU backend, by spec name.

Elementwise kernels take numpy arrays or Python scalars and write into `out`. Floating-point
warnings are silenced (the standard defines the special values; warnings would be noise), with
numpy's context variable where it exists, since `np.errstate` costs a microsecond per call.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

try:  # numpy >= 2: error state is a context variable; setting it is ~10x cheaper than errstate
    from numpy._core._ufunc_config import _extobj_contextvar as errstate_var

    with np.errstate(all="ignore"):
        QUIET_STATE = errstate_var.get()
except (ImportError, AttributeError):  # pragma: no cover - other numpy layouts
    errstate_var = None


class quiet:
    """Silence numpy floating-point warnings inside the `with` block (a class, not a generator:
    this sits on every reduction's path)."""

    __slots__ = ("_token", "_fallback")

    def __enter__(self) -> None:
        if errstate_var is None:
            self._fallback = np.errstate(all="ignore")
            self._fallback.__enter__()
        else:
            self._token = errstate_var.set(QUIET_STATE)

    def __exit__(self, *exc: object) -> None:
        if errstate_var is None:
            self._fallback.__exit__(*exc)
        else:
            errstate_var.reset(self._token)


def _quiet_kernel(ufunc: Callable[..., Any],
                  complex_fix: Callable[..., None] | None = None) -> Callable[..., Any]:
    """`ufunc(*args, out=out)` with floating-point warnings silenced; `complex_fix(*args, out)`
    then corrects complex results (for unary kernels, whose `out` never aliases the input)."""
    if errstate_var is None:
        def kernel(*args: Any, out: np.ndarray) -> None:
            with np.errstate(all="ignore"):
                ufunc(*args, out=out)
                if complex_fix is not None and out.dtype.kind == "c":
                    complex_fix(*args, out)
        return kernel
    set_state, reset_state = errstate_var.set, errstate_var.reset

    def kernel(*args: Any, out: np.ndarray) -> None:
        token = set_state(QUIET_STATE)
        try:
            ufunc(*args, out=out)
        finally:
            reset_state(token)

    def fixed_kernel(*args: Any, out: np.ndarray) -> None:
        token = set_state(QUIET_STATE)
        try:
            ufunc(*args, out=out)
            if out.dtype.kind == "c":
                complex_fix(*args, out)
        finally:
            reset_state(token)

    return kernel if complex_fix is None else fixed_kernel


def _real(x: Any, out: np.ndarray) -> None:
    np.copyto(out, np.real(x))


def _imag(x: Any, out: np.ndarray) -> None:
    if np.iscomplexobj(x):
        np.copyto(out, np.imag(x))
    else:
        out[...] = 0


_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}  # unsigned ints by itemsize
_SELECT_BITS_FROM = 1024  # elements from which selecting bits beats numpy's branching `where`


def _where(condition: np.ndarray, x1: Any, x2: Any, out: np.ndarray) -> None:
    """numpy's `where` branches on every element, which costs about 4 ns per element on an
    unpredictable condition. With both operands of out's (real or bool) dtype it selects bits
    instead, out = x2 ^ ((x1 ^ x2) * condition) on unsigned views: three passes, no branch,
    exact (NaN payloads included)."""
    if out.size < _SELECT_BITS_FROM:  # small: two copies beat where's temporary and a copy
        np.copyto(out, x2, casting="unsafe")
        np.copyto(out, x1, casting="unsafe", where=condition)
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


def _clip(x: np.ndarray, low: Any, high: Any, out: np.ndarray) -> None:
    np.copyto(out, x)
    if low is not None:
        np.maximum(out, low, out=out, casting="unsafe")
    if high is not None:
        np.minimum(out, high, out=out, casting="unsafe")


def _round(x: np.ndarray, out: np.ndarray) -> None:
    np.round(x, out=out)


def _floor_divide(x1: Any, x2: Any, out: np.ndarray) -> None:
    """numpy divides through fmod, which gives NaN for inf // finite and -1 for 1 // -inf; the
    standard wants floor(x1 / x2) there. (The fix is computed first: `out` may alias `x1`.)"""
    fix = None
    if out.dtype.kind == "f":
        infinite = np.isinf(x1) | np.isinf(x2)
        if infinite.any():
            fix = (infinite, np.floor(np.divide(x1, x2)))
    np.floor_divide(x1, x2, out=out)
    if fix is not None:
        np.copyto(out, fix[1], where=fix[0])


def _pow(x1: Any, x2: Any, out: np.ndarray) -> None:
    """numpy raises for integers to negative powers, which the standard leaves unspecified; here
    they are 1 / x1**-x2 truncated (1 for 1, ±1 for -1, else 0), so that no value makes the
    kernel fail part-way through an in-place or chunked operation."""
    if out.dtype.kind == "i":
        negative = x2 < 0
        if negative is True or (negative is not False and negative.any()):
            odd = np.bitwise_and(x2, 1).astype(bool)
            fix = np.where(np.equal(x1, 1), 1, np.where(np.equal(x1, -1), 1 - 2 * odd, 0))
            np.power(x1, np.maximum(x2, 0), out=out)
            np.copyto(out, fix, where=negative, casting="unsafe")
            return
    np.power(x1, x2, out=out)


def _expm1(x: np.ndarray, out: np.ndarray) -> None:
    """Complex expm1 as exp(x)cis(y) - 1 computed without cancellation, with C99's cexp special
    values (numpy's complex expm1 loses them). Where exp(x) - 1 cannot cancel (real part > 1),
    numpy's exp, which scales to avoid premature overflow, gives it."""
    if out.dtype.kind != "c":
        np.expm1(x, out=out)
        return
    re, im = x.real, x.imag
    real = np.expm1(re) * np.cos(im) - 2 * np.sin(im / 2) ** 2 + 0.0  # + 0.0: -0 -> +0
    imag = np.where(im == 0, im, np.exp(re) * np.sin(im))
    large = np.isfinite(re) & (re > 1)
    if large.any():
        grown = np.exp(np.where(large, x, 0))
        real, imag = np.where(large, grown.real - 1, real), np.where(large, grown.imag, imag)
    real = np.where(re == -np.inf, -1.0, real)
    imag = np.where(re == -np.inf, np.where(np.isfinite(im), np.copysign(0.0, np.sin(im)), 0.0),
                    imag)
    blown = (re == np.inf) & ~np.isfinite(im)
    real = np.where(blown, np.inf, real)
    imag = np.where(blown, np.nan, imag)
    out.real, out.imag = real, imag


def _fix_tanh(x: np.ndarray, out: np.ndarray) -> None:
    """tanh(±inf + iy) for finite y is ±1 + copysign(0, y)j; numpy's sign of the zero varies."""
    edge = np.isinf(x.real) & np.isfinite(x.imag)
    if edge.any():
        out.real[edge] = np.sign(x.real[edge])
        out.imag[edge] = np.copysign(0.0, x.imag[edge])


def _fix_tan(x: np.ndarray, out: np.ndarray) -> None:
    """tan is -1j * tanh(1j * x): tan(a ± inf j) for finite a is copysign(0, a) ± 1j, where numpy
    signs the zero by sin(2a)."""
    edge = np.isinf(x.imag) & np.isfinite(x.real)
    if edge.any():
        out.real[edge] = np.copysign(0.0, x.real[edge])


def _fix_sign(x: np.ndarray, out: np.ndarray) -> None:
    """sign is NaN + NaN j when either part is NaN (numpy gives e.g. 1 + 0j at inf + NaN j)."""
    nan = np.isnan(x.real) | np.isnan(x.imag)
    if nan.any():
        out[nan] = complex(np.nan, np.nan)


def _fix_log1p(x: np.ndarray, out: np.ndarray) -> None:
    """numpy's complex log1p is log(1 + z), which loses the digits of a small z (log1p(1e-20) is
    0); near 0, log|1 + z| = log1p(2a + a² + b²) / 2 and arg(1 + z) = atan2(b, 1 + a)."""
    small = (np.abs(x) < 0.5) & (x != 0)
    if small.any():
        a, b = x.real[small], x.imag[small]
        out.real[small] = 0.5 * np.log1p(a * (2 + a) + b * b)
        out.imag[small] = np.arctan2(b, 1 + a)


def _fix_reciprocal(x: np.ndarray, out: np.ndarray) -> None:
    """reciprocal is 1.0 / x; numpy's complex reciprocal differs from its division (at
    infinities and in rounding). For real numbers the two agree."""
    np.divide(1.0, x, out=out)


_UFUNCS = {
    "abs": np.absolute, "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin,
    "asinh": np.arcsinh, "atan": np.arctan, "atanh": np.arctanh, "bitwise_invert": np.invert,
    "ceil": np.ceil, "floor": np.floor, "trunc": np.trunc, "conj": np.conjugate,
    "cos": np.cos, "cosh": np.cosh, "sin": np.sin, "sinh": np.sinh, "tan": np.tan, "tanh": np.tanh,
    "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "log2": np.log2,
    "log10": np.log10, "sqrt": np.sqrt, "square": np.square, "reciprocal": np.reciprocal,
    "isfinite": np.isfinite, "isinf": np.isinf, "isnan": np.isnan, "logical_not": np.logical_not,
    "negative": np.negative, "positive": np.positive, "sign": np.sign, "signbit": np.signbit,
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "floor_divide": np.floor_divide, "remainder": np.remainder, "pow": np.power,
    "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign, "nextafter": np.nextafter,
    "logaddexp": np.logaddexp, "maximum": np.maximum, "minimum": np.minimum,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "bitwise_left_shift": np.left_shift, "bitwise_right_shift": np.right_shift,
    "equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
    "greater_equal": np.greater_equal, "less": np.less, "less_equal": np.less_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}

# Kernels that spend far longer computing than moving memory (worth threads on mid-size arrays).
COMPUTE_BOUND = frozenset({
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "atan2", "cos", "cosh", "sin", "sinh",
    "tan", "tanh", "exp", "expm1", "log", "log1p", "log2", "log10", "logaddexp", "pow", "hypot",
})

ELEMENTWISE: dict[str, Callable[..., None]] = {
    name: _quiet_kernel(ufunc) for name, ufunc in _UFUNCS.items()}
_SPECIAL: dict[str, Callable[..., None]] = {
    "real": _real, "imag": _imag, "round": _quiet_kernel(_round), "where": _quiet_kernel(_where),
    "floor_divide": _quiet_kernel(_floor_divide), "expm1": _quiet_kernel(_expm1),
    "tanh": _quiet_kernel(np.tanh, _fix_tanh), "tan": _quiet_kernel(np.tan, _fix_tan),
    "sign": _quiet_kernel(np.sign, _fix_sign), "log1p": _quiet_kernel(np.log1p, _fix_log1p),
    "reciprocal": _quiet_kernel(np.reciprocal, _fix_reciprocal), "pow": _quiet_kernel(_pow),
    "clip": _quiet_kernel(_clip),
}
ELEMENTWISE.update(_SPECIAL)
# The kernels that are exactly `ufunc(*args, out=out)` with warnings silenced, so that a caller
# may run the ufunc itself (the compiled fast path does).
PLAIN_UFUNCS = {name: ufunc for name, ufunc in _UFUNCS.items() if name not in _SPECIAL}


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

