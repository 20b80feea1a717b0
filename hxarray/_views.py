"""Device-neutral views: new (shape, strides, offset) over the same buffer, computed without
touching the data. Strides and offsets are in bytes, as in numpy."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._array import Array

Shape = tuple[int, ...]


@lru_cache(maxsize=4096)
def contiguous_strides(shape: Shape, itemsize: int) -> Shape:
    """C-order strides of a fresh array."""
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _is_c_contiguous(shape: Shape, strides: Shape, itemsize: int) -> bool:
    """True if the layout is C order with no gaps (size-0/1 axes may have any stride)."""
    step = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n == 0:
            return True
        if n != 1 and s != step:
            return False
        step *= n
    return True


def is_contiguous(x: Array) -> bool:
    """Whether `x` is C-contiguous (its elements in C order with no gaps)."""
    return _is_c_contiguous(x._shape, x._strides, x._dtype.itemsize)


def flatten(x: Array) -> Array:
    """The 1-D view of the C-contiguous `x`."""
    return view(x, (x.size,), (x._dtype.itemsize,), x._offset)


def slice_axis(x: Array, axis: int, start: int, stop: int) -> Array:
    """The view x[..., start:stop, ...] along `axis` (0 <= start <= stop <= x.shape[axis])."""
    shape = (*x._shape[:axis], stop - start, *x._shape[axis + 1:])
    empty = 0 in shape  # an empty view may not point past its (possibly empty) buffer
    return view(x, shape, x._strides, x._offset if empty else x._offset + start * x._strides[axis])


@lru_cache(maxsize=4096)
def broadcast_shapes(*shapes: Shape) -> Shape:
    """The broadcast of `shapes` (spec: "Broadcasting"); ValueError if they do not broadcast."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for i, n in enumerate(shape, ndim - len(shape)):
            m = out[i]
            if m == 1:
                out[i] = n
            elif n != 1 and n != m:
                raise ValueError(
                    f"shapes {', '.join(map(str, shapes))} cannot be broadcast together: "
                    f"dimension {i - ndim} has sizes {m} and {n}")
    return tuple(out)


def view(x: Array, shape: Shape, strides: Shape, offset: int) -> Array:
    return x._view(x, shape, strides, offset)  # (Array imports this module, so not the reverse)


def parts(x: Array) -> tuple[Array, ...]:
    """The real and imaginary parts of a complex `x` as views of its memory (real dtype, same
    shape and strides); `(x,)` for any other `x`."""
    from ._dtypes import REAL_OF

    real = REAL_OF.get(x._dtype)
    if real is None:
        return (x,)
    return tuple(x._make(x._buffer, real, x._shape, x._strides, x._offset + i * real.itemsize)
                 for i in (0, 1))


def broadcast_to(x: Array, shape: Shape) -> Array:
    """A read-through view of `x` with zero strides on the broadcast axes."""
    if x._shape == shape:
        return x
    ndim = len(shape)
    if x.ndim > ndim:
        raise ValueError(f"cannot broadcast an array of shape {x._shape} to the smaller rank of "
                         f"{shape}")
    lead = ndim - x.ndim
    strides = [0] * lead
    for i, (n, s) in enumerate(zip(x._shape, x._strides)):
        target = shape[lead + i]
        if n == target:
            strides.append(s)
        elif n == 1:
            strides.append(0)
        else:
            raise ValueError(f"cannot broadcast an array of shape {x._shape} to shape {shape}")
    return view(x, shape, tuple(strides), x._offset)


def permute(x: Array, axes: Shape) -> Array:
    return view(x, tuple(x._shape[a] for a in axes), tuple(x._strides[a] for a in axes), x._offset)


def expand(x: Array, axes: Shape) -> Array:
    """Insert size-1 axes at the (normalised, sorted) positions `axes` of the result."""
    shape, strides = list(x._shape), list(x._strides)
    for a in axes:
        shape.insert(a, 1)
        strides.insert(a, 0)
    return view(x, tuple(shape), tuple(strides), x._offset)


def squeeze(x: Array, axes: Shape) -> Array:
    keep = [i for i in range(x.ndim) if i not in axes]
    return view(x, tuple(x._shape[i] for i in keep), tuple(x._strides[i] for i in keep), x._offset)


def flip(x: Array, axes: Shape) -> Array:
    strides = list(x._strides)
    offset = x._offset
    if x.size:
        for a in axes:
            offset += (x._shape[a] - 1) * strides[a]
            strides[a] = -strides[a]
    return view(x, x._shape, tuple(strides), offset)


@lru_cache(maxsize=4096)
def reshape_strides(old_shape: Shape, old_strides: Shape, itemsize: int,
                    shape: Shape) -> Shape | None:
    """Strides that show an array of (old_shape, old_strides) with `shape` without copying, or
    None if a copy is needed (the algorithm of numpy's `_attempt_nocopy_reshape`)."""
    if 0 in old_shape or _is_c_contiguous(old_shape, old_strides, itemsize):
        return contiguous_strides(shape, itemsize)
    old = [(n, s) for n, s in zip(old_shape, old_strides) if n != 1]
    new_strides = [0] * len(shape)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(shape) and oi < len(old):
        new_n, old_n = shape[ni], old[oi][0]
        while new_n != old_n:
            if new_n < old_n:
                new_n *= shape[nj]
                nj += 1
            else:
                old_n *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):  # the merged old axes must be contiguous with each other
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        new_strides[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            new_strides[k - 1] = new_strides[k] * shape[k]
        ni, nj, oi, oj = nj, nj + 1, oj, oj + 1
    return tuple(new_strides)


def diagonal(x: Array, offset: int) -> Array:
    """The diagonal of the last two axes (shifted by `offset`) as a view."""
    *batch, rows, cols = x._shape
    *bstrides, rs, cs = x._strides
    start = x._offset
    if offset >= 0:
        n = max(0, min(rows, cols - offset))
        if n and x.size:
            start += offset * cs
    else:
        n = max(0, min(rows + offset, cols))
        if n and x.size:
            start -= offset * rs
    return view(x, (*batch, n), (*bstrides, rs + cs), start)
