"""Indexing and creation kernels (`kernels/indexing.cuh`): gather/scatter, nonzero, arange.

Gather and scatter move elements by size and read index arrays of every integer dtype through a
run-time kind, and nonzero tests values through one, so each is a single instantiation; the
three families are separate sources so a program compiles only what it uses. arange computes in
its dtype: one instantiation per dtype, compiled together.

Layouts: a gather or scatter iterates over the gathered shape x.shape[:axis] + B +
x.shape[axis + k:], where x has stride 0 along B and the index arrays stride 0 off it; the host
collapses that iteration like an element-wise one (`collapse_launches`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ... import _dtypes as dt
from . import C_TYPES, OPTIONS, PREAMBLE, struct
from . import elementwise as ew

MAX_INDICES = 16  # HX_MAX_INDICES
NO_ERROR = 2**64 - 1  # HX_NO_ERROR
NONZERO_THREADS = 256  # HX_NZ_THREADS
NONZERO_CHUNK = NONZERO_THREADS * 32  # HX_NZ_CHUNK: elements per block and chunk

GATHER_SOURCE = PREAMBLE + '#define HX_INDEXING_GATHER\n#include "indexing.cuh"\n'
GATHER, CHECK, SCATTER = "hx::gather", "hx::check_indices", "hx::scatter"
NONZERO_SOURCE = PREAMBLE + '#define HX_INDEXING_NONZERO\n#include "indexing.cuh"\n'
COUNT, SCAN, WRITE = "hx::nonzero_count", "hx::nonzero_scan", "hx::nonzero_write"
ARANGE_SOURCE = PREAMBLE + '#include "indexing.cuh"\n'
ARANGE_DTYPES = tuple(d for d in dt.ALL_DTYPES if d is not dt.bool)  # numpy: no bool fill

# load_index's kinds and is_nonzero's
INDEX_KINDS = {dt.int8: 0, dt.int16: 1, dt.int32: 2, dt.int64: 3, dt.uint8: 4, dt.uint16: 5,
               dt.uint32: 6, dt.uint64: 7}
VALUE_KINDS = {dt.float32: 4, dt.float64: 5, dt.complex64: 6, dt.complex128: 7, dt.float16: 8}

_STRIDES = ("<i8", (ew.MAX_DIMS,))
INDEX_ARRAY = struct([("data", "<u8", 0), ("strides", _STRIDES, 8), ("extent", "<i8", 72),
                      ("step", "<i8", 80), ("kind", "<i4", 88), ("unused", "<i4", 92)], 96)
INDEX_LAYOUT = struct([("shape", ew.SHAPE, 0), ("x", _STRIDES, 80), ("y", _STRIDES, 144),
                       ("first", "<i8", 208), ("total", "<i8", 216), ("count", "<i4", 224),
                       ("itemsize", "<i4", 228), ("index", (INDEX_ARRAY, (MAX_INDICES,)), 232)],
                      232 + 96 * MAX_INDICES)
VALUES = struct([("data", "<u8", 0), ("strides", _STRIDES, 8), ("kind", "<i4", 72),
                 ("itemsize", "<i4", 76)], 80)
COORDINATES = struct([("axis", ("<u8", (ew.MAX_DIMS,)), 0)], 8 * ew.MAX_DIMS)


def gather_batch() -> list[str]:
    return [GATHER, CHECK, SCATTER]


def nonzero_batch() -> list[str]:
    return [COUNT, SCAN, WRITE]


def arange_name(dtype: dt.DType) -> str:
    return f"hx::arange<{C_TYPES[dtype]}>"


def arange_batch() -> list[str]:
    return [arange_name(d) for d in ARANGE_DTYPES]


def all_sources() -> Iterator[tuple[str, str, Sequence[str], Sequence[str]]]:
    yield "indexing/gather.cu", GATHER_SOURCE, OPTIONS, gather_batch()
    yield "indexing/nonzero.cu", NONZERO_SOURCE, OPTIONS, nonzero_batch()
    yield "indexing/arange.cu", ARANGE_SOURCE, OPTIONS, arange_batch()


# -- layouts ---------------------------------------------------------------------------------------
Launch = tuple[int, tuple[int, ...], tuple[int, ...], list[tuple[int, ...]]]


def collapse_launches(shape: tuple[int, ...], strides: Sequence[tuple[int, ...]],
                      first: int = 0) -> list[Launch]:
    """An iteration over `shape` with each operand's byte `strides`, collapsed (size-1 axes
    dropped, contiguous neighbours merged), as launches (first C-order position, byte offset of
    each operand, shape, strides): one where the collapsed axes fit HX_MAX_DIMS, else one per
    index of the leading axis, recursively."""
    dims, steps = ew.collapse(shape, list(strides))
    if len(dims) <= ew.MAX_DIMS:
        return [(first, (0,) * len(strides), dims, steps)]
    inner = math.prod(shape[1:])
    rest = [s[1:] for s in strides]
    return [(start, tuple(o + i * s[0] for o, s in zip(offsets, strides)), sub_dims, sub_steps)
            for i in range(shape[0])
            for start, offsets, sub_dims, sub_steps in collapse_launches(
                shape[1:], rest, first + i * inner)]


def pack_index_layout(dims: tuple[int, ...], steps: Sequence[tuple[int, ...]], first: int,
                      total: int, itemsize: int,
                      indices: Sequence[tuple[int, int, int, int]]) -> np.void:
    """The IndexLayout struct: `steps` are x's, y's and each index array's strides over `dims`;
    `indices` are each index array's (address, kind, extent of the axis, x's stride along it)."""
    record = np.zeros((), INDEX_LAYOUT)
    record["shape"] = ew.pack_shape(dims, False)
    record["x"][:len(dims)] = steps[0]
    record["y"][:len(dims)] = steps[1]
    record["first"], record["total"] = first, total
    record["count"], record["itemsize"] = len(indices), itemsize
    for j, ((address, kind, extent, step), strides) in enumerate(zip(indices, steps[2:])):
        entry = record["index"][j]
        entry["data"], entry["kind"], entry["extent"], entry["step"] = address, kind, extent, step
        entry["strides"][:len(dims)] = strides
    return record[()]


def value_kind(dtype: dt.DType) -> int:
    """is_nonzero's kind of `dtype`: its bits for bool and integers, else its value."""
    kind = VALUE_KINDS.get(dtype)
    return {1: 0, 2: 1, 4: 2, 8: 3}[dtype.itemsize] if kind is None else kind


def pack_values(address: int, strides: tuple[int, ...], dtype: dt.DType) -> np.void:
    record = np.zeros((), VALUES)
    record["data"] = address
    record["strides"][:len(strides)] = strides
    record["kind"], record["itemsize"] = value_kind(dtype), dtype.itemsize
    return record[()]


def pack_coordinates(addresses: Sequence[int]) -> np.void:
    record = np.zeros((), COORDINATES)
    record["axis"][:len(addresses)] = addresses
    return record[()]


# -- arange ----------------------------------------------------------------------------------------
def arange_plan(start: Any, stop: Any, step: Any, dtype: dt.DType
                ) -> tuple[int, np.ndarray] | None:
    """numpy's arange (PyArray_ArangeObj) up to the fill: the length, and the first two values
    as numpy stores them (`start` and the Python sum `start + step`, converted by the dtype's
    setitem; numpy's errors and warnings for values out of range included). None where the
    kernel does not apply (bool, integer dtypes from floats, a length numpy refuses): numpy
    itself then computes the array, and raises what it raises."""
    values = (start, stop, step)
    if dtype is dt.bool or any(isinstance(v, (bool, complex)) or
                               not isinstance(v, (int, float)) for v in values):
        return None
    if dtype in dt.INTEGER and not all(isinstance(v, int) for v in values):
        return None
    try:
        span = stop - start
        ratio = span / step
    except (OverflowError, ZeroDivisionError):
        return None
    if ratio == 0 and span != 0:  # the quotient underflows: the sign decides
        length = 0 if math.copysign(1.0, ratio) < 0 else 1
    elif math.isnan(ratio) or math.isinf(ratio):
        return None
    else:
        length = math.ceil(ratio)
        if length > sys.maxsize:
            return None
    length = max(length, 0)
    first = np.empty(2, dtype.numpy)
    if length:
        first[0] = start
        first[1] = start + step if length > 1 else first[0]
    return length, first
