"""Data type functions (spec: "Data Type Functions")."""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _dtypes as dt
from . import _numpy_conversions as numpy_mode
from ._adapter import adapted
from ._array import Array
from ._checks import as_bool, as_device, as_dtype, check_array
from ._modes import UnspecifiedType

__all__ = ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"]


def astype(x: Array, dtype: Any, /, *, copy: builtins.bool = True, device: Any = None) -> Array:
    """Cast to `dtype` (any dtype to any other, as the standard allows); with `copy=False` the
    input itself is returned when nothing changes."""
    check_array(x, "astype")
    dtype = as_dtype(dtype, "astype")
    copy = as_bool(copy, "astype", "copy")
    if x._dtype in dt.COMPLEX_FLOATING and dtype not in dt.COMPLEX_FLOATING and \
            dtype is not dt.bool:
        raise TypeError(f"astype(): casting complex to {dtype.name} would discard the imaginary "
                        "part; take real() or imag() first")
    target = x._buffer.device if device is None else as_device(device, "astype")
    if target is not x._buffer.device:
        x = x.to_device(target)
        copy = False  # the move already copied
    if dtype is x._dtype and not copy:
        return x
    return target.backend.copy(x, dtype)


def _dtype_of(value: Any, function: str) -> dt.DType:
    if type(value) is dt.DType:
        return dt.numpy_only(value, function)
    if type(value) is Array:
        return value._dtype
    found = numpy_mode.numpy_dtype(value)  # numpy mode: numpy dtypes, names, numpy arrays
    if found is not None:
        return found
    raise TypeError(f"{function}(): expected an hxarray dtype or array, got {value!r}")


def can_cast(from_: Any, to: Any, /) -> builtins.bool:
    """Whether the promotion lattice casts `from_` to `to` without leaving it (numpy mode:
    numpy's "safe" casting, which also casts across kinds, e.g. int32 to float64)."""
    source = _dtype_of(from_, "can_cast")
    target = as_dtype(to, "can_cast")
    return dt.PROMOTION_TABLE.get((source, target)) is target or \
        numpy_mode.can_cast(source, target)


def _with_scalar(dtype: dt.DType, value: builtins.bool | int | float | complex) -> dt.DType:
    """`dtype` meeting a Python scalar (spec: "Mixing arrays with Python scalars"): the scalar
    takes the array's dtype, except that a complex makes a real floating dtype complex."""
    if isinstance(value, builtins.bool):
        fits = dtype is dt.bool
    elif isinstance(value, int):
        fits = dtype is not dt.bool
    elif isinstance(value, float):
        fits = dtype in dt.FLOATING
    else:
        fits = dtype in dt.FLOATING
        dtype = dt.COMPLEX_OF.get(dtype, dtype)
    if not fits:
        raise UnspecifiedType(f"result_type(): a Python {type(value).__name__} does not combine "
                              f"with {dtype.name}")
    return dtype


@adapted
def result_type(*arrays_and_dtypes: Any) -> dt.DType:
    """The promoted dtype; Python scalars take part as the spec's weak scalars (numpy mode:
    numpy's rules, NEP 50, where the standard has none)."""
    dtypes = []
    scalars = []
    for value in arrays_and_dtypes:
        if isinstance(value, (builtins.bool, int, float, complex)):
            scalars.append(value)
        else:
            dtypes.append(_dtype_of(value, "result_type"))
    if not dtypes:
        raise (UnspecifiedType if scalars else TypeError)(
            "result_type() needs at least one array or dtype")
    result = dt.result_type_of(*dtypes)
    for value in scalars:
        result = _with_scalar(result, value)
    return result


@dataclass(frozen=True)
class finfo_object:
    """Machine limits of a floating-point dtype; every number is a Python float."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: dt.DType


@dataclass(frozen=True)
class iinfo_object:
    """Machine limits of an integer dtype; every number is a Python int."""

    bits: int
    max: int
    min: int
    dtype: dt.DType


def finfo(type: Any, /) -> finfo_object:
    """Machine limits of a floating-point dtype (or of an array's)
    (spec: data_type_functions/finfo)."""
    dtype = _dtype_of(type, "finfo")
    if dtype not in dt.FLOATING:
        raise TypeError(f"finfo() needs a floating-point dtype, got {dtype.name}")
    real = dt.REAL_OF.get(dtype, dtype)
    info = np.finfo(real.numpy)
    return finfo_object(bits=info.bits, eps=float(info.eps), max=float(info.max),
                        min=float(info.min), smallest_normal=float(info.smallest_normal),
                        dtype=real)


def iinfo(type: Any, /) -> iinfo_object:
    """Machine limits of an integer dtype (or of an array's) (spec: data_type_functions/iinfo)."""
    dtype = _dtype_of(type, "iinfo")
    if dtype not in dt.INTEGER:
        raise TypeError(f"iinfo() needs an integer dtype, got {dtype.name}")
    info = np.iinfo(dtype.numpy)
    return iinfo_object(bits=info.bits, max=int(info.max), min=int(info.min), dtype=dtype)


def isdtype(dtype: Any, kind: Any) -> builtins.bool:
    """Whether `dtype` is `kind`: a dtype, a kind name, or a tuple of either."""
    dtype = as_dtype(dtype, "isdtype")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if type(kind) is not dt.DType and not isinstance(kind, str):
        kind = numpy_mode.numpy_dtype(kind) or kind  # numpy mode: a numpy dtype
    if type(kind) is dt.DType:
        return dtype is kind
    if isinstance(kind, str):
        try:
            return dtype in dt.KINDS[kind]
        except KeyError:
            raise ValueError(f"isdtype(): unknown kind {kind!r}; expected one of "
                             f"{', '.join(dt.KINDS)}") from None
    raise TypeError(f"isdtype(): kind must be a dtype, a kind name or a tuple, got {kind!r}")
