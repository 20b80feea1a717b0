"""numpy mode's conversions that the chapters' own checks call: where the standard refuses an
argument (a dtype outside a function's category, a numpy dtype, a value of another kind stored into
an array, a float fill value of an integer array), what numpy mode makes of it, or strict mode's
error. Each reads the mode (`_modes.STRICT`) and calls no namespace function, so the lowest
namespace modules (`_checks` and the chapters) import it, and numpy mode itself (`_numpy_mode`, on
top of the chapters, whose rules call them back) is imported by none of them."""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from . import _dtypes as dt
from ._array import Array
from ._modes import STRICT
from ._views import broadcast_shapes

FLOATING_ONLY = frozenset({"floating-point", "real-valued floating-point"})


def dtype_of(value: Any) -> dt.DType | None:
    """The hxarray dtype a numpy dtype, numpy scalar type, dtype string or Python type names
    (non-native byte orders map to the native dtype), or None."""
    if value is None or isinstance(value, Array):
        return None
    try:
        found = np.dtype(value)
    except (TypeError, ValueError):
        return None
    if not found.isnative:
        found = found.newbyteorder("=")
    return dt.FROM_NUMPY.get(found)


def describe_dtype(value: Any) -> str:
    """Why `value` is not an hxarray dtype, for error messages."""
    try:
        found = np.dtype(value)
    except (TypeError, ValueError):
        return f"{value!r} is not a data type"
    return f"numpy dtype {found} has no hxarray equivalent"


def can_cast(source: dt.DType, target: dt.DType) -> builtins.bool:
    """numpy's `can_cast` under its default ("safe") rule, where the standard's lattice says no
    (strict mode: False)."""
    return not STRICT.get() and builtins.bool(np.can_cast(source.numpy, target.numpy))


def numpy_dtype(value: Any) -> dt.DType | None:
    """The hxarray dtype of a numpy dtype, name, scalar type or numpy array given where the
    standard takes an hxarray dtype or array (numpy mode); None in strict mode."""
    if STRICT.get():
        return None
    return dtype_of(value.dtype if isinstance(value, np.ndarray) else value)


def reinterpret(x: Array, dtype: dt.DType) -> Array:
    """The same bytes as another dtype of the same size (bool as uint8 or int8, and back)."""
    return Array._make(x._buffer, dtype, x._shape, x._strides, x._offset)


def cast(x: Array, dtype: dt.DType) -> Array:
    """`x` as `dtype`: itself, a reinterpretation of a bool array as int8/uint8, or a copy."""
    if x._dtype is dtype:
        return x
    if x._dtype is dt.bool and dtype in (dt.int8, dt.uint8):
        return reinterpret(x, dtype)
    return x._buffer.device.backend.copy(x, dtype)


def stored(value: Any, dtype: dt.DType, error: Exception) -> Any:
    """A value of another kind stored into an array of `dtype` (`x[key] = value`): numpy's
    cast (strict mode: `error`, the standard's)."""
    if STRICT.get():
        raise error
    return cast(value, dtype) if type(value) is Array else python_type(dtype)(value)


def fill_value(value: Any, kind: dt.DType, dtype: dt.DType, error: Exception, function: str
               ) -> tuple[int, dt.DType]:
    """A float fill value of an integer or bool dtype (numpy mode): the integer it equals, which
    fills the array as that integer does (numpy's cast gives the same). A fraction (which numpy's
    cast drops), NaN or an infinity (which it turns into arbitrary integers) raises; so does
    strict mode, and any other kind (`error`, the standard's)."""
    if STRICT.get() or kind is not dt.float64 or dtype in dt.FLOATING:
        raise error
    if not math.isfinite(value):
        raise ValueError(f"{function}(): fill_value {value} has no {dtype.name} value")
    if not value.is_integer():
        raise TypeError(f"{function}(): fill_value {value} is not a {dtype.name} value; round "
                        "it first (a float fills an integer or bool array only where it is one)")
    return int(value), dt.int64


def python_type(dtype: dt.DType) -> type:
    """The Python scalar type of a dtype's kind."""
    return builtins.bool if dtype is dt.bool else int if dtype in dt.INTEGER else \
        complex if dtype in dt.COMPLEX_FLOATING else float


def coerce(x: Array, category: str, function: str) -> Array:
    """`x`, whose dtype the standard's `category` excludes, as numpy takes it: integer and bool
    arrays become float64 for floating-point functions (the complex dtype of their precision for
    complex ones), bool arrays are int8 (zero-copy) for numeric ones; anything else, and
    everything in strict mode, raises the standard's TypeError."""
    if not STRICT.get():
        exact = x._dtype in dt.INTEGER or x._dtype is dt.bool
        if category in FLOATING_ONLY and exact:
            return cast(x, dt.float64)
        if category == "complex floating-point" and (exact or x._dtype in dt.REAL_FLOATING):
            return cast(x, dt.COMPLEX_OF.get(x._dtype, dt.complex128))
        if x._dtype is dt.bool and category in ("numeric", "real-valued"):
            return reinterpret(x, dt.int8)
    raise TypeError(f"{function}() requires an array of {category} dtype, got {x._dtype.name}")


def as_dtype(value: Any, function: str) -> dt.DType:
    """The hxarray dtype of a numpy dtype, numpy scalar type, dtype name or Python type given
    as `dtype=` (numpy mode); strict mode's TypeError."""
    if type(value) is dt.DType:
        return dt.numpy_only(value, function)
    if STRICT.get():
        raise TypeError(f"{function}(): dtype must be an hxarray dtype such as hxarray.float64, "
                        f"got {value!r}")
    found = dtype_of(value)
    if found is None:
        raise TypeError(f"{function}(): {describe_dtype(value)}; expected an hxarray dtype such "
                        "as hxarray.float64, or a numpy dtype with an hxarray equivalent")
    return found


def back_to_bool(result: Array, x: Array) -> Array:
    """A result computed on the int8 view of bool input `x` (max, min, sort), as bool again."""
    return reinterpret(result, dt.bool) if x._dtype is dt.bool else result


def linspace_dtype(start: Any, stop: Any) -> dt.DType | None:
    """The default dtype of linspace with a 0-D array bound: numpy mode's is numpy's (a float32
    or complex64 bound keeps its precision); strict mode's (None) the standard's default. (Both
    modes compute a result here, so the chapter asks, not the adapter.)"""
    if STRICT.get():
        return None
    arrays = [v._dtype for v in (start, stop) if type(v) is Array]
    return dt.FROM_NUMPY.get(np.result_type(*(d.numpy for d in arrays), 1.0))


def assign_inplace(name: str, x: Array, result: Array) -> Array:
    """`x <op>= y` under numpy's in-place rule: the result is cast back to x's dtype where numpy's
    "same_kind" casting allows it."""
    if not np.can_cast(result._dtype.numpy, x._dtype.numpy, "same_kind"):
        raise TypeError(f"in-place {name}: cannot cast the {result._dtype.name} result back to "
                        f"x's {x._dtype.name} (numpy's 'same_kind' rule)")
    if broadcast_shapes(x._shape, result._shape) != x._shape:
        raise ValueError(f"in-place {name}: a result of shape {result._shape} does not broadcast "
                         f"to x's shape {x._shape}")
    x._buffer.device.backend.assign(x, result)
    return x
