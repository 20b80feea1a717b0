"""Device-neutral views: new (shape, strides, offset) over the same buffer, computed without
touching the data. Strides and offsets are in bytes, as in numpy."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from ._layout import broadcast_pair, c_contiguous, c_strides

if TYPE_CHECKING:
    from ._array import Array
    from ._dtypes import DType

Shape = tuple[int, ...]


def nbytes_of(shape: Shape, dtype: DType) -> int:
    """The bytes of a fresh array of `shape` and `dtype`. ValueError where numpy could not
    represent it: more than MAX_DIMS dimensions, a dimension beyond 2**63 - 1, or the non-zero
    dimensions spanning more than 2**63 - 1 bytes; MemoryError beyond 2**62 bytes (no allocator
    has them)."""
    from ._array import MAX_DIMS

    if len(shape) > MAX_DIMS:
        raise ValueError(f"an array of shape {shape} would have {len(shape)} dimensions; hxarray "
                         f"supports at most {MAX_DIMS}")
    nonzero, size = dtype.itemsize, 1
    for n in shape:
        if n:
            nonzero *= n
        size *= n
    if nonzero > _MAX_INDEX:
        raise ValueError(f"an array of shape {shape} and dtype {dtype.name} would span more "
                         "than 2**63 - 1 bytes")
    if size * dtype.itemsize > 1 << 62:
        raise MemoryError(f"cannot allocate an array of shape {shape} and dtype {dtype.name}: "
                          f"{size * dtype.itemsize} bytes is more than any device has")
    return size * dtype.itemsize


_MAX_INDEX = 2**63 - 1


@lru_cache(maxsize=4096)
def contiguous_strides(shape: Shape, itemsize: int) -> Shape:
    """C-order strides of a fresh array (`_layout.c_strides`), cached."""
    return c_strides(shape, itemsize)


def is_contiguous(x: Array) -> bool:
    """Whether `x` is C-contiguous (its elements in C order with no gaps: `_layout`)."""
    return c_contiguous(x._shape, x._strides, x._dtype.itemsize)


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
    """The broadcast of `shapes` (spec: "Broadcasting", `_layout.broadcast_pair`); ValueError
    naming the first dimension that does not broadcast."""
    out: Shape = ()
    for shape in shapes:
        joined = broadcast_pair(out, shape)
        if joined is None:
            ndim = max(len(out), len(shape))
            i = next(i for i in range(-1, -ndim - 1, -1)
                     if broadcast_pair(out[i:], shape[i:]) is None)
            raise ValueError(f"shapes {', '.join(map(str, shapes))} cannot be broadcast "
                             f"together: dimension {i} has sizes {out[i]} and {shape[i]}")
        out = joined
    return out


def view(x: Array, shape: Shape, strides: Shape, offset: int) -> Array:
    return x._view(x, shape, strides, offset)  # (Array imports this module, so not the reverse)


def byte_span(x: Array) -> tuple[int, int]:
    """The bytes of x's buffer its elements occupy, [low, high) (empty for an empty array)."""
    low = high = x._offset
    for n, s in zip(x._shape, x._strides):
        if n == 0:
            return x._offset, x._offset
        low, high = (low + (n - 1) * s, high) if s < 0 else (low, high + (n - 1) * s)
    return low, high + x._dtype.itemsize


def may_overlap(a: Array, b: Array) -> bool:
    """Whether `a` and `b` may share an element: the same buffer and intersecting byte spans (a
    bound: interleaved views such as x[::2] and x[1::2] count as overlapping)."""
    if a._buffer is not b._buffer:
        return False
    (low1, high1), (low2, high2) = byte_span(a), byte_span(b)
    return low1 < high2 and low2 < high1


def same_view(a: Array, b: Array) -> bool:
    """Whether `a` and `b` are the same elements of the same buffer in the same order."""
    return a._buffer is b._buffer and a._offset == b._offset and a._shape == b._shape and \
        a._strides == b._strides and a._dtype is b._dtype


def parts(x: Array) -> tuple[Array, ...]:
    """The real and imaginary parts of a complex `x` as views of its memory (real dtype, same
    shape and strides); `(x,)` for any other `x`."""
    from ._dtypes import REAL_OF

    real = REAL_OF.get(x._dtype)
    if real is None:
        return (x,)
    return tuple(x._view(x, x._shape, x._strides, x._offset + i * real.itemsize, real)
                 for i in (0, 1))


def broadcast_to(x: Array, shape: Shape) -> Array:
    """A read-only view of `x` with zero strides on the broadcast axes (`x` itself for its own
    shape): its elements alias each other, so writes to it raise (numpy's rule)."""
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
    return x._make(x._buffer, x._dtype, shape, tuple(strides), x._offset, None, True)


def permute(x: Array, axes: Shape) -> Array:
    # (lists, not generators: compiled, a generator costs a frame)
    return view(x, tuple([x._shape[a] for a in axes]), tuple([x._strides[a] for a in axes]),
                x._offset)


def expand(x: Array, axes: Shape) -> Array:
    """Insert size-1 axes at the (normalised, sorted) positions `axes` of the result."""
    shape, strides = list(x._shape), list(x._strides)
    for a in axes:
        shape.insert(a, 1)
        strides.insert(a, 0)
    return view(x, tuple(shape), tuple(strides), x._offset)


def squeeze(x: Array, axes: Shape) -> Array:
    keep = [i for i in range(x.ndim) if i not in axes]
    return view(x, tuple([x._shape[i] for i in keep]), tuple([x._strides[i] for i in keep]),
                x._offset)


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
    if 0 in old_shape or c_contiguous(old_shape, old_strides, itemsize):
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
