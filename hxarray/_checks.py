"""Argument checks shared by the namespace modules; each raises the standard's exception class with
a message naming the function, what was wrong and what was expected."""

from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any

from . import _dtypes as dt
from . import _numpy_conversions as numpy_mode
from ._array import Array
from ._modes import UnspecifiedType
from .hal.device import Device, default_device


class AxisError(ValueError, IndexError):
    """An axis outside [-ndim, ndim); both a ValueError and an IndexError, as in numpy."""


def check_array(x: Any, function: str, name: str = "x") -> Array:
    if type(x) is not Array:
        raise TypeError(f"{function}(): {name} must be an hxarray Array, got {type(x).__name__}")
    return x


def check_dtype(x: Array, allowed: str, function: str) -> Array:
    """`x` if its dtype is in the category `allowed` (a key of dt.CATEGORIES); otherwise what
    numpy mode makes of it (_numpy_conversions.coerce: strict mode's TypeError, or x converted)."""
    if x._dtype not in dt.CATEGORIES[allowed]:
        return numpy_mode.coerce(x, allowed, function)
    return x


_REAL_VALUED, _COMPLEX = dt.CATEGORIES["real-valued"], dt.CATEGORIES["complex floating-point"]


def check_ordered(x: Array, function: str) -> Array:
    """check_dtype(x, "real-valued", function) for a function that orders values; a complex `x`
    is Unspecified (numpy mode orders complex numbers as numpy does)."""
    if x._dtype in _REAL_VALUED:  # (sets: a tuple's `in` would call DType.__eq__ per element)
        return x
    if x._dtype in _COMPLEX:
        raise UnspecifiedType("{}() requires an array of real-valued dtype, got {}", function,
                              x._dtype.name)
    return check_dtype(x, "real-valued", function)


def as_dtype(dtype: Any, function: str) -> dt.DType:
    """An hxarray dtype; numpy mode also takes numpy dtypes, their scalar types and names
    (_numpy_conversions.as_dtype, which also refuses numpy mode's float16 in strict mode)."""
    if type(dtype) is dt.DType and dtype not in dt.NUMPY_MODE_ONLY:
        return dtype
    return numpy_mode.as_dtype(dtype, function)


def as_device(device: Any, function: str) -> Device:
    """The device an argument names, None meaning the default device."""
    if device is None:
        return default_device()
    try:
        return Device(device)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{function}(): {exc}") from None


def same_device(arrays: Sequence[Array], function: str) -> Device:
    device = arrays[0]._buffer.device
    for a in arrays[1:]:
        if a._buffer.device is not device:
            raise ValueError(f"{function}(): all arrays must be on one device, got {device} and "
                             f"{a._buffer.device}; move them with to_device()")
    return device


def as_shape(shape: Any, function: str) -> tuple[int, ...]:
    """`shape` (an integer or a sequence of integers; bools are not integers here) as a tuple."""
    if type(shape) is tuple:
        for n in shape:
            if type(n) is not int or n < 0:
                break
        else:
            return shape  # the common case, checked without building anything
    elif type(shape) is int and shape >= 0:
        return (shape,)
    if type(shape) is not tuple and type(shape) is not builtins.bool:
        try:
            shape = (operator.index(shape),)
        except TypeError:
            pass
    try:
        if any(type(n) is builtins.bool for n in shape):
            raise TypeError
        shape = tuple(operator.index(n) for n in shape)
    except TypeError:
        raise TypeError(f"{function}(): shape must be an int or a tuple of ints, got {shape!r}") \
            from None
    if any(n < 0 for n in shape):
        raise ValueError(f"{function}(): shape entries must be non-negative, got {shape}")
    return shape


def normalize_axis(axis: Any, ndim: int, function: str) -> int:
    """`axis` in [0, ndim); any integer with `__index__` except a bool is an axis."""
    if type(axis) is not int:
        try:
            if isinstance(axis, builtins.bool):
                raise TypeError
            axis = operator.index(axis)
        except TypeError:
            raise TypeError(f"{function}(): axis must be an int, got {type(axis).__name__}") \
                from None
    if not -ndim <= axis < ndim:
        raise AxisError(f"{function}(): axis {axis} is out of bounds for an array with "
                         f"{ndim} dimension(s)")
    return axis % ndim if ndim else 0


def normalize_axes(axis: Any, ndim: int, function: str) -> tuple[int, ...]:
    """`axis` (None, int or tuple of ints) as a sorted tuple of distinct non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, tuple):
        axes = tuple(normalize_axis(a, ndim, function) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"{function}(): repeated axis in {axis}")
        return tuple(sorted(axes))
    return (normalize_axis(axis, ndim, function),)


def as_bool(value: Any, function: str, name: str) -> builtins.bool:
    """A flag: True or False (a numpy bool too); TypeError for anything else, which would
    otherwise be taken by its truthiness."""
    if value is True or value is False:
        return value
    if type(value).__name__ == "bool" and type(value).__module__ == "numpy":  # numpy.bool
        return builtins.bool(value)
    raise TypeError(f"{function}(): {name} must be a bool, got {type(value).__name__}")


def as_copy(value: Any, function: str) -> builtins.bool | None:
    """The `copy` flag: None, True or False."""
    return None if value is None else as_bool(value, function, "copy")


def as_int(value: Any, function: str, name: str) -> int:
    """`value` as a Python int (anything with `__index__`); TypeError for bools and others."""
    if isinstance(value, builtins.bool):
        raise TypeError(f"{function}(): {name} must be an int, got bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{function}(): {name} must be an int, got {type(value).__name__}") \
            from None
