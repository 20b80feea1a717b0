"""The layout of an array's elements: whether it is C-contiguous, the strides of a fresh one, and
the shape two shapes broadcast to. One home for the views (`_views`), the backends
(`backends.base.fresh_layout`) and the CPU backend's compiled executor
(`backends/cpu/fastpath.py`, which calls these as C functions: `_layout.pxd`); compiled by Cython
from this source (setup.py's `COMPILED`)."""

from __future__ import annotations

__all__ = ["broadcast_pair", "c_contiguous", "c_strides"]


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
