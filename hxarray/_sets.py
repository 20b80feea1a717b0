"""Set functions (spec: "Set Functions"). NaNs are distinct from each other, as the standard
requires; values come out sorted."""

from __future__ import annotations

import builtins
from typing import Any, NamedTuple

from . import _dtypes as dt
from ._adapter import adapted
from ._array import Array
from ._checks import as_bool, check_array
from ._elementwise import scalar_operand

__all__ = ["isin", "unique_all", "unique_counts", "unique_inverse", "unique_values"]


class UniqueAllResult(NamedTuple):
    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCountsResult(NamedTuple):
    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    values: Array
    inverse_indices: Array


def _unique(x: Array, function: str) -> tuple[Array, Array, Array, Array]:
    check_array(x, function)
    return x._buffer.device.backend.unique(x)


def unique_all(x: Array, /) -> UniqueAllResult:
    """The unique elements of x, with first indices, inverse indices and counts
    (spec: set_functions/unique_all)."""
    return UniqueAllResult(*_unique(x, "unique_all"))


def unique_counts(x: Array, /) -> UniqueCountsResult:
    """The unique elements of x and their counts (spec: set_functions/unique_counts)."""
    values, _, _, counts = _unique(x, "unique_counts")
    return UniqueCountsResult(values, counts)


def unique_inverse(x: Array, /) -> UniqueInverseResult:
    """The unique elements of x and the indices that rebuild x from them
    (spec: set_functions/unique_inverse)."""
    values, _, inverse, _ = _unique(x, "unique_inverse")
    return UniqueInverseResult(values, inverse)


def unique_values(x: Array, /) -> Array:
    """The unique elements of x (spec: set_functions/unique_values)."""
    return _unique(x, "unique_values")[0]


@adapted
def isin(x1: Array | Any, x2: Array | Any, /, *, invert: builtins.bool = False) -> Array:
    """Whether each element of x1 occurs in x2; either may be a Python scalar."""
    invert = as_bool(invert, "isin", "invert")
    arrays = [a for a in (x1, x2) if a.__class__ is Array]
    if not arrays:
        raise TypeError("isin(): at least one of x1 and x2 must be an array")
    device = arrays[0]._buffer.device
    if any(a._buffer.device is not device for a in arrays):
        raise ValueError("isin(): x1 and x2 must be on the same device")
    backend = device.backend
    dtype = dt.result_type_of(*(a._dtype for a in arrays))
    operands = []
    for a in (x1, x2):
        if a.__class__ is not Array:
            value, dtype = scalar_operand("isin", a, dtype)
            a = backend.full((), value, dtype, device)
        operands.append(a)
    x1, x2 = (a if a._dtype is dtype else backend.copy(a, dtype) for a in operands)
    out = backend.empty(x1._shape, dt.bool, device)
    backend.isin(x1, x2, invert, out)
    return out
