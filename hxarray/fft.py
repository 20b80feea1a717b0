"""The `fft` extension (spec: "Fourier Transform Functions").

Transforms check their arguments here, resolve `n`/`s` and the axes to concrete values and run as
`backend.fft(name, x, ...)`. Frequencies and shifts are compositions of other namespace functions.

Input dtypes are enforced (TypeError otherwise): `fft`, `ifft`, `fftn`, `ifftn`, `irfft`,
`irfftn` and `hfft` take complex input, `rfft`, `rfftn` and `ihfft` real floating-point input;
results keep the input's precision. `s` without `axes`, repeated axes and transform lengths
below 1 raise ValueError. An entry -1 in `s` means that axis's default length, so for the last
axis of `irfftn` it is 2*(M-1) and all the input is used, as the standard says (numpy takes M).
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any, Literal

from . import _dtypes as dt
from ._adapter import adapted
from ._array import Array
from ._checks import as_device, as_dtype, check_array, check_dtype, normalize_axis
from ._creation import arange, asarray
from ._manipulation import concat, roll
from ._modes import UnspecifiedType
from ._observed import observe_names
from .hal.device import Device

__all__ = ["fft", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifftn", "ifftshift", "ihfft",
           "irfft", "irfftn", "rfft", "rfftfreq", "rfftn"]

Norm = Literal["backward", "ortho", "forward"]
_COMPLEX = "complex floating-point"
_REAL = "real-valued floating-point"
_HALF_SPECTRUM = ("irfft", "irfftn", "hfft")  # input holds n//2+1 of the n output points


def _positive(n: Any, function: str, name: str) -> int:
    if isinstance(n, builtins.bool):
        raise TypeError(f"{function}(): {name} must be an int, got bool")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"{function}(): {name} must be an int, got {type(n).__name__}") from None
    if n < 1:
        raise ValueError(f"{function}(): {name} must be at least 1, got {n}")
    return n


def _length(function: str, n: Any, name: str, m: int, last: builtins.bool = True) -> int:
    """The transform length along an axis of input size `m`: `n`, or the default for None."""
    if n is not None:
        return _positive(n, function, name)
    n = 2 * (m - 1) if last and function in _HALF_SPECTRUM else m
    if n < 1:
        raise ValueError(f"{function}(): the default {name} for an axis of size {m} is {n}; "
                         f"pass a positive {name}")
    return n


def _sequence(value: Any, function: str, name: str) -> tuple[Any, ...]:
    if not isinstance(value, (str, Array)):  # iterable, but not sequences of ints
        try:
            return tuple(value)
        except TypeError:
            pass
    raise TypeError(f"{function}(): {name} must be a sequence of ints, got "
                    f"{type(value).__name__}")


def _start(function: str, x: Any, norm: Any) -> Array:
    """`x` checked (numpy mode: real input of complex transforms made complex, integer input
    floating) and `norm` validated."""
    check_array(x, function)
    x = check_dtype(x, _REAL if function in ("rfft", "rfftn", "ihfft") else _COMPLEX, function)
    if norm not in ("backward", "ortho", "forward"):
        raise ValueError(f"{function}(): norm must be 'backward', 'ortho' or 'forward', "
                         f"got {norm!r}")
    return x


def _transform(function: str, x: Array, n: int | None, axis: int, norm: Norm) -> Array:
    x = _start(function, x, norm)
    axis = normalize_axis(axis, x.ndim, function)
    n = _length(function, n, "n", x._shape[axis])
    return x._buffer.device.backend.fft(function, x, n=n, axis=axis, norm=norm)


def _transform_n(function: str, x: Array, s: Sequence[int] | None,
                 axes: Sequence[int] | None, norm: Norm) -> Array:
    x = _start(function, x, norm)
    if axes is None:
        if s is not None:
            raise ValueError(f"{function}(): s needs axes (the standard leaves s without axes "
                             "undefined)")
        axes = tuple(range(x.ndim))
    else:
        axes = tuple(normalize_axis(a, x.ndim, function) for a in _sequence(axes, function,
                                                                             "axes"))
        if len(set(axes)) != len(axes):
            raise ValueError(f"{function}(): repeated axis in {axes}")
    if not axes and function in ("rfftn", "irfftn"):
        raise ValueError(f"{function}(): needs at least one axis to transform")
    lengths = (None,) * len(axes) if s is None else _sequence(s, function, "s")
    if len(lengths) != len(axes):
        raise ValueError(f"{function}(): s and axes must have the same length, got "
                         f"{len(lengths)} and {len(axes)}")
    last = len(axes) - 1
    s = tuple(_length(function, None if n == -1 else n, "s", x._shape[a],
                      i == last) for i, (n, a) in enumerate(zip(lengths, axes)))
    return x._buffer.device.backend.fft(function, x, s=s, axes=axes, norm=norm)


@adapted
def fft(x: Array, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Array:
    """The one-dimensional discrete Fourier transform along `axis` (spec: extensions/fft, fft)."""
    return _transform("fft", x, n, axis, norm)


@adapted
def ifft(x: Array, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Array:
    """The one-dimensional inverse discrete Fourier transform along `axis` (spec: extensions/fft,
    ifft)."""
    return _transform("ifft", x, n, axis, norm)


@adapted
def fftn(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: Norm = "backward") -> Array:
    """The n-dimensional discrete Fourier transform over `axes` (spec: extensions/fft, fftn)."""
    return _transform_n("fftn", x, s, axes, norm)


@adapted
def ifftn(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: Norm = "backward") -> Array:
    """The n-dimensional inverse discrete Fourier transform over `axes` (spec: extensions/fft,
    ifftn)."""
    return _transform_n("ifftn", x, s, axes, norm)


@adapted
def rfft(x: Array, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Array:
    """The one-dimensional discrete Fourier transform of real x: the n//2 + 1 non-negative
    frequencies (spec: extensions/fft, rfft)."""
    return _transform("rfft", x, n, axis, norm)


@adapted
def irfft(x: Array, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Array:
    """The inverse of rfft: n real points from n//2 + 1 frequencies
    (spec: extensions/fft, irfft)."""
    return _transform("irfft", x, n, axis, norm)


@adapted
def rfftn(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: Norm = "backward") -> Array:
    """The n-dimensional discrete Fourier transform of real x, halved along the last axis
    (spec: extensions/fft, rfftn)."""
    return _transform_n("rfftn", x, s, axes, norm)


@adapted
def irfftn(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: Norm = "backward") -> Array:
    """The inverse of rfftn (spec: extensions/fft, irfftn)."""
    return _transform_n("irfftn", x, s, axes, norm)


@adapted
def hfft(x: Array, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Array:
    """The discrete Fourier transform of a signal with Hermitian symmetry, given by its first
    n//2 + 1 points: a real spectrum (spec: extensions/fft, hfft)."""
    return _transform("hfft", x, n, axis, norm)


@adapted
def ihfft(x: Array, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Array:
    """The inverse of hfft (spec: extensions/fft, ihfft)."""
    return _transform("ihfft", x, n, axis, norm)


def _frequency_args(function: str, n: Any, d: Any, dtype: Any,
                    device: Any) -> tuple[int, float, dt.DType, Device]:
    n = _positive(n, function, "n")
    if isinstance(d, builtins.bool) or not isinstance(d, (int, float)):
        raise TypeError(f"{function}(): d must be a real number, got {type(d).__name__}")
    if d == 0:
        raise ValueError(f"{function}(): the sample spacing d must not be 0")
    dtype = dt.float64 if dtype is None else as_dtype(dtype, function)
    if dtype not in dt.REAL_FLOATING:
        raise TypeError(f"{function}(): dtype must be a real floating-point dtype, "
                        f"got {dtype.name}")
    if n * dtype.itemsize > 2**63 - 1:
        raise ValueError(f"{function}(): {n} frequencies would span more than 2**63 - 1 bytes")
    return n, float(d), dtype, as_device(device, function)


@adapted
def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Array:
    """The sample frequencies of fft's output for n points spaced `d` apart
    (spec: extensions/fft, fftfreq)."""
    n, d, dtype, device = _frequency_args("fftfreq", n, d, dtype, device)
    positive = arange((n - 1) // 2 + 1, dtype=dtype, device=device)
    negative = arange(-(n // 2), 0, dtype=dtype, device=device)
    return concat([positive, negative]) / (n * d)


@adapted
def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Array:
    """The sample frequencies of rfft's output for n points spaced `d` apart
    (spec: extensions/fft, rfftfreq)."""
    n, d, dtype, device = _frequency_args("rfftfreq", n, d, dtype, device)
    return arange(n // 2 + 1, dtype=dtype, device=device) / (n * d)


def _shift(function: str, x: Array, axes: int | Sequence[int] | None, sign: int,
           any_dtype: bool = False) -> Array:
    check_array(x, function)
    if not any_dtype and x._dtype not in dt.FLOATING:  # (numpy mode shifts any dtype)
        raise UnspecifiedType(f"{function}() requires an array of floating-point dtype, got "
                              f"{x._dtype.name}")
    given: Sequence[Any] = range(x.ndim) if axes is None else axes \
        if isinstance(axes, (tuple, list)) else (axes,)  # (normalize_axis refuses a non-int)
    chosen = tuple(normalize_axis(a, x.ndim, function) for a in given)
    if not chosen:
        return asarray(x, copy=True)
    return roll(x, tuple(sign * (x._shape[a] // 2) for a in chosen), axis=chosen)


@adapted
def fftshift(x: Array, /, *, axes: int | Sequence[int] | None = None) -> Array:
    """Roll each axis in `axes` by half its length, moving frequency 0 to the centre."""
    return _shift("fftshift", x, axes, 1)


@adapted
def ifftshift(x: Array, /, *, axes: int | Sequence[int] | None = None) -> Array:
    """The inverse of fftshift: frequency 0 back to the start of each axis in `axes`
    (spec: extensions/fft, ifftshift)."""
    return _shift("ifftshift", x, axes, -1)


observe_names(globals(), __all__, "fft.")  # the hooks' operation point
