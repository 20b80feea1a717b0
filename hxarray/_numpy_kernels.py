"""numpy implementations of the element-wise operations where a bare ufunc misses the standard.

Each kernel takes numpy arrays or Python scalars and writes into `out`, like a ufunc called with
`out=`. They are the host reference of the operations declared in `_ops.py`: every numpy-based
backend runs them, and a device without a kernel of its own falls back to them.

Floating-point warnings are silenced around every kernel (the standard defines the special values;
warnings would be noise), through numpy's error-state context variable where it exists, since
`np.errstate` costs a microsecond per call.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

import numpy as np

try:  # numpy >= 2: error state is a context variable; setting it is ~10x cheaper than errstate
    from numpy._core._ufunc_config import (  # type: ignore[attr-defined]  # private, no stub
        _extobj_contextvar as errstate_var,
    )

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

    def __exit__(self, *exc: Any) -> None:
        if errstate_var is None:
            self._fallback.__exit__(*exc)
        else:
            errstate_var.reset(self._token)


def quiet_context() -> contextvars.Context:
    """A new context that holds numpy's quiet error state: a kernel run in it (`Context.run`) is
    silenced as in `quiet`, entering it costing a pointer swap where setting the variable
    allocates a mapping and a token. One call at a time may be inside it (the compiled fast
    path's `_quiet_entered` sees to that; a call that finds it entered uses `quiet`)."""
    context = contextvars.Context()
    if errstate_var is not None:
        context.run(errstate_var.set, QUIET_STATE)
    return context


def quietly(kernel: Callable[..., Any]) -> Callable[..., None]:
    """`kernel(*args, out=out)` with floating-point warnings silenced."""
    if errstate_var is None:
        def errstate_kernel(*args: Any, out: np.ndarray) -> None:
            with np.errstate(all="ignore"):
                kernel(*args, out=out)
        return errstate_kernel
    set_state, reset_state = errstate_var.set, errstate_var.reset

    def quiet_kernel(*args: Any, out: np.ndarray) -> None:
        token = set_state(QUIET_STATE)
        try:
            kernel(*args, out=out)
        finally:
            reset_state(token)

    return quiet_kernel


def _fixed(ufunc: np.ufunc, complex_fix: Callable[[np.ndarray, np.ndarray], None]
           ) -> Callable[..., None]:
    """`ufunc(x, out=out)`, then `complex_fix(x, out)` on complex results (unary kernels, whose
    `out` never aliases the input where a fix applies: complex results are fresh buffers or the
    input itself, which the fixes read only where they also write)."""
    def kernel(x: Any, *, out: np.ndarray) -> None:
        ufunc(x, out=out)
        if out.dtype.kind == "c":
            complex_fix(x, out)
    kernel.__name__ = kernel.__qualname__ = ufunc.__name__
    kernel.__doc__ = complex_fix.__doc__
    kernel.ufunc = ufunc  # type: ignore[attr-defined]
    return kernel


def _stands_for(ufunc: np.ufunc) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Marks a kernel as the standard's version of numpy's `ufunc` (`hxarray._ops.Op.ufunc`)."""
    def mark(kernel: Callable[..., None]) -> Callable[..., None]:
        kernel.ufunc = ufunc  # type: ignore[attr-defined]
        return kernel
    return mark


def cast(value: Any, *, out: np.ndarray) -> None:
    """`value` converted into `out` (numpy's unsafe casting), float32 and float64 values outside
    uint32's range as on every device (`hxarray.cuh`): NaN and values below -2**31 to 2**31, from
    2**32 on to 0. (numpy on x86-64 converts these differently in the loop it takes for
    contiguous arrays and the one it takes for strided arrays and scalars; its float16 loops
    convert alike in every layout, through int64: NaN and infinities to 0.)"""
    if out.dtype == np.uint32:
        source = np.asarray(value).real
        if source.dtype.kind == "f" and source.dtype.itemsize > 2:
            low, high = ~(source >= -2.0**31), source >= 2.0**32  # before `out` is written
            np.copyto(out, value, casting="unsafe")
            np.copyto(out, np.uint32(2**31), where=low)
            np.copyto(out, np.uint32(0), where=high)
            return
    np.copyto(out, value, casting="unsafe")


def real(x: Any, *, out: np.ndarray) -> None:
    np.copyto(out, np.real(x))


def imag(x: Any, *, out: np.ndarray) -> None:
    if np.iscomplexobj(x):
        np.copyto(out, np.imag(x))
    else:
        out[...] = 0


@_stands_for(np.rint)
def round(x: np.ndarray, *, out: np.ndarray) -> None:  # noqa: A001 - the spec's name
    np.round(x, out=out)


def where(condition: np.ndarray, x1: Any, x2: Any, *, out: np.ndarray) -> None:
    np.copyto(out, x2, casting="unsafe")
    np.copyto(out, x1, casting="unsafe", where=condition)


def clip(x: np.ndarray, low: Any, high: Any, *, out: np.ndarray) -> None:
    """x clamped to [low, high]; a None bound is no bound; NaN propagates from x."""
    np.copyto(out, x)
    if low is not None:
        np.maximum(out, low, out=out, casting="unsafe")
    if high is not None:
        np.minimum(out, high, out=out, casting="unsafe")


@_stands_for(np.floor_divide)
def floor_divide(x1: Any, x2: Any, *, out: np.ndarray) -> None:
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


@_stands_for(np.nextafter)
def nextafter(x1: Any, x2: Any, *, out: np.ndarray) -> None:
    """numpy's float16 loop gives x1 where x1 == x2 before numpy 2.5 (nextafter(-0, +0) is -0);
    the standard, C's nextafter (numpy's for float32 and float64) and numpy's float16 loop from
    2.5 on give x2. (The fix is computed first: `out` may alias `x1`.)"""
    fix = np.equal(x1, x2) if out.dtype == np.float16 else None
    np.nextafter(x1, x2, out=out)
    if fix is not None and np.any(fix):
        np.copyto(out, x2, where=fix)


_SCALARS = (int, float)


@_stands_for(np.power)
def pow(x1: Any, x2: Any, *, out: np.ndarray) -> None:  # noqa: A001 - the spec's name
    """numpy raises for integers to negative powers, which the standard leaves unspecified; here
    they are 1 / x1**-x2 truncated (1 for 1, ±1 for -1, else 0), so that no value makes the
    kernel fail part-way through an in-place or chunked operation. numpy takes the square root
    for an exponent of 0.5 given once (a scalar, or a stride-0 array), which gives -0 for -0 and
    NaN for -inf where the standard wants +0 and +inf: those are corrected. (The fix is
    computed first: `out` may alias `x1`.) For a float32 or float64 x1 squared (an exponent of
    2 given as a Python scalar) numpy's power loop computes x1 * x1 element by element: numpy's
    square does the same multiplication, vectorised."""
    if x2.__class__ in _SCALARS and x2 == 2 and out.dtype.char in "fd" and \
            type(x1) is np.ndarray and x1.dtype == out.dtype:
        np.square(x1, out=out)
        return
    if out.dtype.kind == "f":
        half = np.equal(x2, 0.5)
        if half is True or (half is not False and half.any()):
            edge = half & ((np.equal(x1, 0) & np.signbit(x1)) | np.equal(x1, -np.inf))
            fix = (edge, np.where(np.equal(x1, 0), 0.0, np.inf)) if np.any(edge) else None
            np.power(x1, x2, out=out)
            if fix is not None:
                np.copyto(out, fix[1], where=fix[0], casting="unsafe")
            return
    if out.dtype.kind == "i":
        negative = x2 < 0
        if negative is True or (negative is not False and negative.any()):
            odd = np.bitwise_and(x2, 1).astype(bool)
            ones = np.where(np.equal(x1, 1), 1, np.where(np.equal(x1, -1), 1 - 2 * odd, 0))
            np.power(x1, np.maximum(x2, 0), out=out)
            np.copyto(out, ones, where=negative, casting="unsafe")
            return
    np.power(x1, x2, out=out)


@_stands_for(np.expm1)
def expm1(x: np.ndarray, *, out: np.ndarray) -> None:
    """Complex expm1 as exp(x)cis(y) - 1 computed without cancellation, with C99's cexp special
    values (numpy's complex expm1 loses them). Where exp(x) - 1 cannot cancel (real part > 1),
    numpy's exp, which scales to avoid premature overflow, gives it."""
    if out.dtype.kind != "c":
        np.expm1(x, out=out)
        return
    re, im = x.real, x.imag
    real_part = np.expm1(re) * np.cos(im) - 2 * np.sin(im / 2) ** 2 + 0.0  # + 0.0: -0 -> +0
    imag_part = np.where(im == 0, im, np.exp(re) * np.sin(im))
    large = np.isfinite(re) & (re > 1)
    if large.any():
        grown = np.exp(np.where(large, x, 0))
        real_part = np.where(large, grown.real - 1, real_part)
        imag_part = np.where(large, grown.imag, imag_part)
    real_part = np.where(re == -np.inf, -1.0, real_part)
    imag_part = np.where(re == -np.inf,
                         np.where(np.isfinite(im), np.copysign(0.0, np.sin(im)), 0.0), imag_part)
    blown = (re == np.inf) & ~np.isfinite(im)
    out.real, out.imag = np.where(blown, np.inf, real_part), np.where(blown, np.nan, imag_part)


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
    """sign is NaN + NaN j when either part is NaN (numpy gives e.g. 1 + 0j at inf + NaN j); where
    |x| overflows with both parts finite, it is the halves' x / |x| (numpy gives 0 ± 1j)."""
    nan = np.isnan(x.real) | np.isnan(x.imag)
    if nan.any():
        out[nan] = complex(np.nan, np.nan)
    huge = np.isinf(np.abs(x)) & np.isfinite(x)
    if huge.any():
        half = x[huge] / 2
        size = np.abs(half)
        out.real[huge], out.imag[huge] = half.real / size, half.imag / size


def _fix_log1p(x: np.ndarray, out: np.ndarray) -> None:
    """numpy's complex log1p is log(1 + z), which loses the digits of a small z (log1p(1e-20) is
    0); near 0, log|1 + z| = log1p(2a + a² + b²) / 2 and arg(1 + z) = atan2(b, 1 + a). Where
    |1 + z| overflows with both parts finite (numpy gives inf), it is log(1 + z) by the complex
    log, which scales."""
    small = (np.abs(x) < 0.5) & (x != 0)
    if small.any():
        a, b = x.real[small], x.imag[small]
        out.real[small] = 0.5 * np.log1p(a * (2 + a) + b * b)
        out.imag[small] = np.arctan2(b, 1 + a)
    huge = np.isposinf(out.real) & np.isfinite(x)
    if huge.any():
        w = x[huge]
        w.real += 1
        out[huge] = np.log(w)


def _fix_reciprocal(x: np.ndarray, out: np.ndarray) -> None:
    """reciprocal is 1.0 / x; numpy's complex reciprocal differs from its division (at
    infinities and in rounding). For real numbers the two agree."""
    np.divide(1.0, x, out=out)


tanh = _fixed(np.tanh, _fix_tanh)
tan = _fixed(np.tan, _fix_tan)
sign = _fixed(np.sign, _fix_sign)
log1p = _fixed(np.log1p, _fix_log1p)
reciprocal = _fixed(np.reciprocal, _fix_reciprocal)
