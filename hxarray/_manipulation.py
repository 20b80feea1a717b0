"""Manipulation functions (spec: "Manipulation Functions").

Functions that only rearrange axes (`broadcast_to`, `expand_dims`, `flip`, `moveaxis`,
`permute_dims`, `squeeze`, `unstack` and `reshape` where strides allow) return views of the same
buffer; the rest ask the backend for a new array.
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from . import _dtypes as dt
from . import _views
from ._adapter import adapted
from ._array import MAX_DIMS, Array
from ._checks import as_copy, as_int, check_array, normalize_axes, normalize_axis, same_device
from ._version import sequence_result

__all__ = ["broadcast_arrays", "broadcast_shapes", "broadcast_to", "concat", "expand_dims", "flip",
           "moveaxis", "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile",
           "unstack"]


def _ints(values: Any, function: str, name: str, allow_int: builtins.bool = False
          ) -> tuple[int, ...]:
    """A tuple or list of integers (or, if allowed, one integer) as a tuple of Python ints;
    TypeError for anything else, bools included."""
    if type(values) is tuple:
        for v in values:
            if type(v) is not int:
                break
        else:
            return values  # the common case, checked without building anything
    items = values if isinstance(values, (tuple, list)) or not allow_int else (values,)
    try:
        if not isinstance(items, (tuple, list)) or \
                any(type(v) is builtins.bool for v in items):
            raise TypeError
        return tuple(operator.index(v) for v in items)
    except TypeError:
        expected = "an int or a tuple of ints" if allow_int else "a tuple of ints"
        raise TypeError(f"{function}(): {name} must be {expected}, got {values!r}") from None


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The shape that `shapes` broadcast to; ValueError where they do not
    (spec: manipulation_functions/broadcast_shapes)."""
    for shape in shapes:
        if not isinstance(shape, tuple) or not all(isinstance(n, int) for n in shape):
            raise TypeError(f"broadcast_shapes(): shapes must be tuples of ints, got {shape!r}")
    return _views.broadcast_shapes(*shapes)


def broadcast_arrays(*arrays: Array) -> tuple[Array, ...] | list[Array]:
    """Views of the inputs; a list under versions before 2025.12."""
    for a in arrays:
        check_array(a, "broadcast_arrays", "each input")
    shape = _views.broadcast_shapes(*(a._shape for a in arrays))
    return sequence_result(_views.broadcast_to(a, shape) for a in arrays)


def broadcast_to(x: Array, /, shape: tuple[int, ...]) -> Array:
    """x broadcast to `shape`, a view sharing x's memory
    (spec: manipulation_functions/broadcast_to)."""
    check_array(x, "broadcast_to")
    from ._checks import as_shape

    return _views.broadcast_to(x, as_shape(shape, "broadcast_to"))


def _sequence(arrays: Any) -> Any:
    """A tuple or list as a tuple; anything else as it is (for `_common_dtype` to refuse)."""
    return tuple(arrays) if isinstance(arrays, (tuple, list)) else arrays


def _common_dtype(arrays: tuple[Array, ...], function: str
                  ) -> tuple[dt.DType, tuple[Array, ...]]:
    """The promoted dtype and the arrays."""
    if not isinstance(arrays, tuple):
        raise TypeError(f"{function}(): arrays must be a tuple or list of arrays, got "
                        f"{type(arrays).__name__}")
    if not arrays:
        raise ValueError(f"{function}() needs at least one array")
    for a in arrays:
        check_array(a, function, "each input")
    same_device(arrays, function)
    return dt.result_type_of(*(a._dtype for a in arrays)), arrays


@adapted
def concat(arrays: tuple[Array, ...] | list[Array], /, *, axis: int | None = 0) -> Array:
    """The arrays joined along an existing `axis`; with `axis=None`, their flattened elements
    (spec: manipulation_functions/concat)."""
    dtype, arrays = _common_dtype(_sequence(arrays), "concat")
    if axis is None:
        arrays = tuple(reshape(a, (-1,)) for a in arrays)
        axis = 0
    else:
        ndim = arrays[0].ndim
        if ndim == 0:
            raise ValueError("concat(): 0-D arrays cannot be concatenated; use stack()")
        axis = normalize_axis(axis, ndim, "concat")
        for a in arrays:
            if a.ndim != ndim or any(n != m for i, (n, m) in
                                     enumerate(zip(a._shape, arrays[0]._shape)) if i != axis):
                raise ValueError(f"concat(): shapes {[b._shape for b in arrays]} differ off "
                                 f"axis {axis}")
    return _joined(arrays, axis, dtype)


def _joined(arrays: tuple[Array, ...], axis: int, dtype: dt.DType) -> Array:
    """A new array of `dtype` holding the arrays (checked to fit) one after another along axis."""
    shape = list(arrays[0]._shape)
    shape[axis] = sum(a._shape[axis] for a in arrays)
    device = arrays[0]._buffer.device
    backend = device.backend
    out = backend.empty(tuple(shape), dtype, device)
    backend.concat(arrays, axis, out)
    return out


@adapted
def stack(arrays: tuple[Array, ...] | list[Array], /, *, axis: int = 0) -> Array:
    """The arrays, of one shape, joined along a new `axis` (spec: manipulation_functions/stack)."""
    dtype, arrays = _common_dtype(_sequence(arrays), "stack")
    shape = arrays[0]._shape
    if any(a._shape != shape for a in arrays):
        raise ValueError(f"stack(): all arrays must have the same shape, got "
                         f"{[a._shape for a in arrays]}")
    axis = normalize_axis(axis, len(shape) + 1, "stack")
    return _joined(tuple(_views.expand(a, (axis,)) for a in arrays), axis, dtype)


def unstack(x: Array, /, *, axis: int = 0) -> tuple[Array, ...]:
    """The views of x along `axis`, one for each index (spec: manipulation_functions/unstack)."""
    check_array(x, "unstack")
    if x.ndim == 0:
        raise ValueError("unstack(): x must have at least one dimension")
    axis = normalize_axis(axis, x.ndim, "unstack")
    key: list[slice | int] = [slice(None)] * x.ndim
    from ._indexing import basic_view

    parts = []
    for i in range(x._shape[axis]):
        key[axis] = i
        parts.append(basic_view(x, tuple(key)))
    return tuple(parts)


def expand_dims(x: Array, /, axis: int | tuple[int, ...] = 0) -> Array:
    """x with a new axis of length one at each position in `axis`, a view
    (spec: manipulation_functions/expand_dims)."""
    check_array(x, "expand_dims")
    axes = axis if isinstance(axis, tuple) else (axis,)
    ndim = x.ndim + len(axes)
    normalized = tuple(sorted(normalize_axis(a, ndim, "expand_dims") for a in axes))
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"expand_dims(): repeated axis in {axis}")
    return _views.expand(x, normalized)


@adapted
def flip(x: Array, /, *, axis: int | tuple[int, ...] | None = None) -> Array:
    """x with the order of elements reversed along `axis` (all axes if None), a view
    (spec: manipulation_functions/flip)."""
    check_array(x, "flip")
    return _views.flip(x, normalize_axes(axis, x.ndim, "flip"))


def permute_dims(x: Array, /, axes: tuple[int, ...]) -> Array:
    """x with its axes reordered as `axes`, a view (spec: manipulation_functions/permute_dims)."""
    check_array(x, "permute_dims")
    axes = _ints(axes, "permute_dims", "axes")
    normalized = tuple(normalize_axis(a, x.ndim, "permute_dims") for a in axes)
    if sorted(normalized) != list(range(x.ndim)):
        raise ValueError(f"permute_dims(): axes {axes} is not a permutation of the "
                         f"{x.ndim} axes")
    return _views.permute(x, normalized)


def moveaxis(x: Array, source: int | tuple[int, ...], destination: int | tuple[int, ...],
             /) -> Array:
    """x with the axes `source` moved to the positions `destination`, a view
    (spec: manipulation_functions/moveaxis)."""
    check_array(x, "moveaxis")
    # a list of axes as well as a tuple, in both modes (numpy's and array-api-compat's too)
    src = tuple(source) if isinstance(source, (tuple, list)) else (source,)
    dst = tuple(destination) if isinstance(destination, (tuple, list)) else (destination,)
    if len(src) != len(dst):
        raise ValueError("moveaxis(): source and destination must have the same length")
    src = tuple(normalize_axis(a, x.ndim, "moveaxis") for a in src)
    dst = tuple(normalize_axis(a, x.ndim, "moveaxis") for a in dst)
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("moveaxis(): repeated axis")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _views.permute(x, tuple(order))


@lru_cache(maxsize=4096)
def _reshaped(old_shape: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """`shape` with its -1 resolved for an array of `old_shape`; ValueError if it does not fit."""
    size = math.prod(old_shape)
    if shape.count(-1) > 1 or min(shape, default=0) < -1:
        raise ValueError(f"reshape(): invalid shape {shape}: at most one -1 and no other "
                         "negative sizes")
    if -1 in shape:
        known = 1
        for n in shape:
            if n != -1:
                known *= n
        if known == 0 or size % known:
            raise ValueError(f"reshape(): cannot infer -1 in {shape} for {size} elements")
        shape = tuple(size // known if n == -1 else n for n in shape)
    total = 1
    for n in shape:
        total *= n
    if total != size:
        raise ValueError(f"reshape(): cannot reshape {size} elements of shape {old_shape} "
                         f"into shape {shape}")
    return shape


def reshape(x: Array, /, shape: tuple[int, ...], *, copy: builtins.bool | None = None) -> Array:
    """x with a new shape (one entry may be -1): a view where x's layout allows, else a copy;
    `copy=False` raises ValueError where a copy is needed (spec: manipulation_functions/reshape)."""
    check_array(x, "reshape")
    if copy is not None:
        copy = as_copy(copy, "reshape")
    shape = _reshaped(x._shape, _ints(shape, "reshape", "shape"))
    strides = None if copy else _views.reshape_strides(x._shape, x._strides, x._dtype.itemsize,
                                                        shape)
    if strides is not None:
        return _views.view(x, shape, strides, x._offset)
    if copy is False:
        raise ValueError(f"reshape(copy=False): shape {shape} cannot be a view of this array's "
                         "memory layout")
    contiguous = x._buffer.device.backend.copy(x)
    return _views.view(contiguous, shape, _views.contiguous_strides(shape, x._dtype.itemsize), 0)


def along_rows(x: Array, axis: int, run: Callable[[Array], Array]) -> Array:
    """`run(rows)` on the 2-D view (or copy) of x with `axis` last and the other axes merged into
    rows, its result shaped back like x: for kernels that take fewer dimensions than an array
    may have."""
    order = (*(a for a in range(x.ndim) if a != axis), axis)
    moved = _views.permute(x, order)
    result = run(reshape(moved, (math.prod(moved._shape[:-1]), x._shape[axis])))
    return _views.permute(reshape(result, moved._shape), tuple(order.index(a)
                                                               for a in range(x.ndim)))


def _merged(x: Array, axis: int) -> Array:
    """x as 3-D: the axes before `axis` merged, `axis`, the axes after it merged (a view where
    the layout allows)."""
    return reshape(x, (math.prod(x._shape[:axis]), x._shape[axis], math.prod(x._shape[axis + 1:])))


def squeeze(x: Array, /, axis: int | tuple[int, ...]) -> Array:
    """x without the axes `axis`, each of length one, a view
    (spec: manipulation_functions/squeeze)."""
    check_array(x, "squeeze")
    axes = normalize_axes(axis, x.ndim, "squeeze")
    for a in axes:
        if x._shape[a] != 1:
            raise ValueError(f"squeeze(): axis {a} has size {x._shape[a]}, not 1")
    return _views.squeeze(x, axes)


@adapted
def roll(x: Array, /, shift: int | tuple[int, ...], *,
         axis: int | tuple[int, ...] | None = None) -> Array:
    """Elements shifted along the axes (cyclically); over all axes of the flattened array when
    `axis` is None. A shift repeated for one axis adds up."""
    check_array(x, "roll")
    shifts = _ints(shift, "roll", "shift", allow_int=True)
    if axis is None:
        if isinstance(shift, (tuple, list)) and len(shifts) != 1:
            raise ValueError("roll(): a tuple shift needs a tuple axis of the same length")
        return reshape(_rolled(reshape(x, (-1,)), {0: shifts[0]}), x._shape)
    axes = axis if isinstance(axis, tuple) else (axis,)
    if not isinstance(shift, (tuple, list)):
        shifts *= len(axes)
    if len(shifts) != len(axes):
        raise ValueError("roll(): shift and axis must have the same length")
    total: dict[int, int] = {}
    for a, s in zip(axes, shifts):
        a = normalize_axis(a, x.ndim, "roll")
        total[a] = total.get(a, 0) + s
    return _rolled(x, total)


def _rolled(x: Array, shifts: dict[int, int]) -> Array:
    """A new array: x rolled by shifts[axis] along each axis, one pair of copies per axis."""
    backend = x._buffer.device.backend
    result = x
    for axis, shift in shifts.items():
        n = x._shape[axis]
        s = shift % n if n else 0
        if not s:
            continue
        out = backend.empty(x._shape, x._dtype, x._buffer.device)
        part = _views.slice_axis
        backend.assign(part(out, axis, 0, s), part(result, axis, n - s, n))
        backend.assign(part(out, axis, s, n), part(result, axis, 0, n - s))
        result = out
    return backend.copy(x) if result is x else result


@adapted
def repeat(x: Array, repeats: int | Array, /, *, axis: int | None = None) -> Array:
    """Each element repeated along `axis` (the flattened array for None): an int repeats all
    alike (one broadcast copy); an array gives each element's count (read on the host, as the
    result's length depends on it)."""
    check_array(x, "repeat")
    counts = None
    if type(repeats) is Array:
        if repeats._dtype not in dt.INTEGER:
            raise TypeError("repeat(): repeats must be an integer array")
        if repeats.ndim > 1:
            raise ValueError("repeat(): repeats must be 0-D or 1-D")
        same_device((x, repeats), "repeat")
        counts = repeats._host().reshape(-1)
        if (counts < 0).any():
            raise ValueError("repeat(): repeats must be non-negative")
        if counts.size == 1:
            repeats, counts = int(counts[0]), None
    else:
        repeats = as_int(repeats, "repeat", "repeats")
        if repeats < 0:
            raise ValueError(f"repeat(): repeats must be non-negative, got {repeats}")
    if axis is None:
        x = reshape(x, (-1,))
        axis = 0
    axis = normalize_axis(axis, x.ndim, "repeat")
    n = x._shape[axis]
    if counts is None:  # each element then `repeats` copies of it: one copy of a broadcast view
        assert isinstance(repeats, int)  # one count for every element
        shape = (*x._shape[:axis], n * repeats, *x._shape[axis + 1:])
        if x.ndim == MAX_DIMS:  # no room for the extra axis: through the 3-D view
            x, axis = _merged(x, axis), 1
        widened = _views.broadcast_to(_views.expand(x, (axis + 1,)),
                                      (*x._shape[:axis + 1], repeats, *x._shape[axis + 1:]))
        return reshape(reshape(widened, (*x._shape[:axis], n * repeats, *x._shape[axis + 1:]),
                               copy=True), shape)
    if counts.size != n:
        raise ValueError(f"repeat(): {counts.size} repeats do not match the {n} elements "
                         f"along axis {axis}")
    import numpy as np

    backend = x._buffer.device.backend
    indices = backend.from_host(np.repeat(np.arange(n, dtype=np.int64), counts),
                                x._buffer.device)
    out = backend.empty((*x._shape[:axis], indices._shape[0], *x._shape[axis + 1:]), x._dtype,
                        x._buffer.device)
    backend.gather(x, axis, (indices,), out)
    return out


def tile(x: Array, repetitions: tuple[int, ...], /) -> Array:
    """x repeated `repetitions[i]` times along each axis i (the shorter of the two shapes
    padded with leading 1s): one copy of a broadcast view."""
    check_array(x, "tile")
    repetitions = _ints(repetitions, "tile", "repetitions")
    if any(r < 0 for r in repetitions):
        raise ValueError(f"tile(): repetitions must be non-negative, got {repetitions}")
    ndim = max(x.ndim, len(repetitions))
    reps = (1,) * (ndim - len(repetitions)) + repetitions
    x = _views.expand(x, tuple(range(ndim - x.ndim)))
    if 2 * ndim > MAX_DIMS:  # no room to interleave: one axis at a time, through 3-D views
        for axis, r in enumerate(reps):
            if r != 1:
                merged = _merged(x, axis)
                widened = _views.broadcast_to(_views.expand(merged, (1,)),
                                              (merged._shape[0], r, *merged._shape[1:]))
                x = reshape(widened, (*x._shape[:axis], r * x._shape[axis], *x._shape[axis + 1:]),
                            copy=True)
        return x if any(r != 1 for r in reps) else reshape(x, x._shape, copy=True)
    interleaved = _views.expand(x, tuple(range(0, 2 * ndim, 2)))  # (1, s0, 1, s1, ...)
    shape = tuple(n for r, s in zip(reps, x._shape) for n in (r, s))
    return reshape(_views.broadcast_to(interleaved, shape),
                   tuple(r * s for r, s in zip(reps, x._shape)), copy=True)
