"""The layout of an array's elements: whether it is C-contiguous, the strides of a fresh one, the
shape two shapes broadcast to, and the layout of a basic index's view (`basic_index`). One home
for the views (`_views`, `_indexing`), the backends (`backends.base.fresh_layout`) and the CPU
backend's compiled executor (`backends/cpu/fastpath.py`, which calls these as C functions:
`_layout.pxd`); compiled by Cython from this source (setup.py's `COMPILED`)."""

from __future__ import annotations

import operator
import sys
from typing import Any

__all__ = ["basic_index", "broadcast_pair", "c_contiguous", "c_strides"]


def c_contiguous(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> bool:
    """Whether elements of `itemsize` bytes laid out with `shape` and `strides` lie in C order
    without gaps (axes of one element may have any stride; an empty array's always do)."""
    step = itemsize
    for i in range(len(shape) - 1, -1, -1):
        extent = shape[i]
        if extent == 0:
            return True
        if extent != 1:
            stride = strides[i]
            if stride != step:
                return False
        step *= extent
    return True


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """The C-order strides of a fresh array of `shape` with elements of `itemsize` bytes (an
    axis of no elements counts as one)."""
    ndim = len(shape)
    steps = [0] * ndim
    step = itemsize
    for i in range(ndim - 1, -1, -1):
        steps[i] = step
        extent = shape[i]
        step *= extent if extent > 1 else 1
    return tuple(steps)


def broadcast_pair(first: tuple[int, ...], second: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape `first` and `second` broadcast to (spec: "Broadcasting": aligned at their last
    axes, a size-1 axis stretched to the other's size), or None where they do not broadcast."""
    if first == second:
        return first
    if len(first) < len(second):
        first, second = second, first
    lead = len(first) - len(second)
    out = list(first)
    for i in range(len(second)):
        n, m = second[i], first[lead + i]
        if n != m:
            if m == 1:
                out[lead + i] = n
            elif n != 1:
                return None
    return tuple(out)


def basic_index(shape: tuple[int, ...], strides: tuple[int, ...], offset: int,
                key: tuple[Any, ...]) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """The (shape, strides, offset) of the view `[key]` of an array laid out as `shape`,
    `strides` and `offset` (bytes), for a key of ints, slices, None and at most one Ellipsis
    (spec: "Indexing"): IndexError for a second Ellipsis, too many indices or an int out of
    bounds; ValueError for a slice's zero step. An empty view keeps `offset` (it may not point
    past its buffer)."""
    ellipsis = False
    n_indices = 0
    for k in key:
        if k is Ellipsis:
            if ellipsis:
                raise IndexError("an index can only have a single ellipsis ('...')")
            ellipsis = True
        elif k is not None:
            n_indices += 1
    ndim = len(shape)
    if n_indices > ndim:
        raise IndexError(f"too many indices: {n_indices} given for an array with {ndim} "
                         f"dimension(s)")
    origin = offset
    out_shape = []
    out_strides = []
    axis = 0
    for k in key:
        if k is None:
            out_shape.append(1)
            out_strides.append(0)
        elif k is Ellipsis:
            for _ in range(ndim - n_indices):
                out_shape.append(shape[axis])
                out_strides.append(strides[axis])
                axis += 1
        elif k.__class__ is slice:
            n, stride = shape[axis], strides[axis]
            # the elements k picks of n, as Python's slices pick them (PySlice_Unpack, then
            # PySlice_AdjustIndices), in C integers where compiled
            step = 1 if k.step is None else _slice_index(k.step)
            if step == 0:
                raise ValueError("slice step cannot be zero")
            if step < -_SSIZE_MAX:
                step = -_SSIZE_MAX
            start = _bound(_SSIZE_MAX if step < 0 else 0, k.start, n, step)
            stop = _bound(-_SSIZE_MAX - 1 if step < 0 else _SSIZE_MAX, k.stop, n, step)
            if step < 0:
                length = (start - stop - 1) // -step + 1 if stop < start else 0
            else:
                length = (stop - start - 1) // step + 1 if start < stop else 0
            if length:
                offset += start * stride
            out_shape.append(length)
            # (a step beyond the axis never moves: the stride of one element stays)
            out_strides.append(stride * step if length > 1 else stride)
            axis += 1
        else:
            i = operator.index(k)
            n = shape[axis]
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            offset += (i % n) * strides[axis]
            axis += 1
    for rest in range(axis, ndim):
        out_shape.append(shape[rest])
        out_strides.append(strides[rest])
    if 0 in out_shape:
        offset = origin
    return tuple(out_shape), tuple(out_strides), offset


_SSIZE_MAX = sys.maxsize  # a slice's bounds are clamped to the C range, as Python's are


def _slice_index(value: Any) -> int:
    """A slice's start, stop or step as an integer clamped to the C range."""
    if value.__class__ is not int:
        try:
            value = operator.index(value)
        except TypeError:
            raise TypeError("slice indices must be integers or None or have an __index__ "
                            "method") from None
    try:
        index = value  # (compiled: OverflowError beyond a C integer)
    except OverflowError:
        return _SSIZE_MAX if value > 0 else -_SSIZE_MAX - 1
    if index > _SSIZE_MAX:
        return _SSIZE_MAX
    if index < -_SSIZE_MAX - 1:
        return -_SSIZE_MAX - 1
    return index


def _bound(default: int, value: Any, n: int, step: int) -> int:
    """A slice's start or stop (`default` for None) on an axis of n elements, within
    [-1, n]."""
    index = default if value is None else _slice_index(value)
    if index < 0:
        index += n
        if index < 0:
            index = -1 if step < 0 else 0
    elif index >= n:
        index = n - 1 if step < 0 else n
    return index
