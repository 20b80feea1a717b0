"""Indexing: `x[key]`, `x[key] = value` (spec: "Indexing") and the indexing functions `take` and
`take_along_axis` (spec: "Indexing Functions").

Basic keys (ints, slices, ellipsis, None) produce views without a backend; keys holding integer or
boolean arrays are advanced indexing, which the backend performs with numpy's semantics.
"""

from __future__ import annotations

import builtins
import numbers
import operator
from typing import Any

import numpy as np

from . import _dtypes as dt
from . import _numpy_conversions as numpy_mode
from ._adapter import adapted
from ._array import Array
from ._checks import check_array, normalize_axis, same_device
from ._layout import basic_index
from ._modes import UnspecifiedType
from ._views import broadcast_shapes, broadcast_to, may_overlap, permute, same_view, view
from .hal.stream import DeferredIndexError, calling

__all__ = ["take", "take_along_axis"]

_BASIC_TYPES = (int, slice, type(None), type(Ellipsis))
_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}  # a value may go into the same or higher


def _as_tuple(key: Any) -> tuple[Any, ...]:
    return key if isinstance(key, tuple) else (key,)


def _basic_key(key: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """`key` with every integer-like entry (numpy integers, 0-D integer arrays: anything with
    `__index__` except bool) as an int, or None if `key` needs advanced indexing."""
    for k in key:
        if k.__class__ is builtins.bool or not isinstance(k, _BASIC_TYPES):
            break
    else:
        return key  # the common case: only ints, slices, None and Ellipsis
    converted = []
    for k in key:
        if k.__class__ is builtins.bool:
            return None
        if not isinstance(k, _BASIC_TYPES):
            if k.__class__ is Array and (k._shape != () or k._dtype not in dt.INTEGER):
                return None
            try:
                k = operator.index(k)
            except TypeError:
                return None
        converted.append(k)
    return tuple(converted)


def basic_view(x: Array, key: tuple[Any, ...]) -> Array:
    """The view `x[key]` for a key of ints, slices, None and at most one Ellipsis."""
    shape, strides, offset = basic_index(x._shape, x._strides, x._offset, key)
    return view(x, shape, strides, offset)


def _advanced_key(x: Array, key: tuple[Any, ...]) -> tuple[Any, ...]:
    """Validate an advanced key, turning lists and numpy arrays into arrays on x's device."""
    from ._creation import asarray

    out = []
    for k in key:
        if isinstance(k, (list, np.ndarray)):
            k = asarray(k, device=x._buffer.device)
        if k.__class__ is Array:
            if k._dtype is not dt.bool and k._dtype not in dt.INTEGER:
                raise IndexError(f"array indices must be integer or boolean, got {k._dtype.name}")
            if k._buffer.device is not x._buffer.device:
                raise ValueError(f"index array is on {k.device}, the indexed array on {x.device}")
        elif not isinstance(k, _BASIC_TYPES) and k.__class__ is not builtins.bool:
            try:
                k = operator.index(k)
            except TypeError:
                raise IndexError(f"invalid index of type {type(k).__name__}: expected int, "
                                 "slice, None, Ellipsis, or an integer or boolean array") from None
        out.append(k)
    return tuple(out)


def _is_mask(x: Array, key: Any) -> bool:
    """Whether `key` is the common mask: a boolean array of x's leading dimensions (at least
    one) on x's device, which `compress` and `place` take directly."""
    return key.__class__ is Array and key._dtype is dt.bool and key._shape != () and \
        key._shape == x._shape[:len(key._shape)] and key._buffer.device is x._buffer.device


def getitem(x: Array, key: Any) -> Array:
    if _is_mask(x, key):
        return x._buffer.device.backend.compress(x, key)
    key = _as_tuple(key)
    basic = _basic_key(key)
    if basic is not None:
        return basic_view(x, basic)
    source, axis, indices = _gather_plan(x, _advanced_key(x, key))
    backend = x._buffer.device.backend
    shape = _gathered_shape(source, axis, indices)
    out = backend.empty(shape, x._dtype, x._buffer.device)
    if 0 not in shape:
        _indexed(backend.gather, "__getitem__", source, axis, indices, out)
    return out


def _indexed(primitive: Any, function: str, *args: Any) -> None:
    """backend.gather or backend.scatter, its IndexError (an index out of range) naming the
    function, as do the errors a device finds after the call returned (`hal.stream.calling`)."""
    token = calling.set(function)
    try:
        primitive(*args)
    except DeferredIndexError:
        raise  # an earlier call's, named after it
    except IndexError as exc:
        raise IndexError(f"{function}: {exc}") from None
    finally:
        calling.reset(token)


def _gathered_shape(source: Array, axis: int, indices: tuple[Array, ...]) -> tuple[int, ...]:
    return (*source._shape[:axis], *indices[0]._shape, *source._shape[axis + len(indices):])


def _gather_plan(x: Array, key: tuple[Any, ...]) -> tuple[Array, int, tuple[Array, ...]]:
    """An advanced key (numpy's semantics) as (view, axis, index arrays) with
    x[key] == gather(view, axis, index arrays): the basic part of the key applied as a view,
    boolean arrays turned into the integer arrays of their non-zero positions, integers into 0-D
    index arrays, all index arrays broadcast together. When the indexed axes are not adjacent,
    numpy puts the broadcast axes first: the view then has them in front (axis 0)."""
    from ._creation import asarray

    device = x._buffer.device
    backend = device.backend
    consumed = sum(k.ndim if k.__class__ is Array and k._dtype is dt.bool else
                   0 if k is None or k is Ellipsis or k.__class__ is builtins.bool else 1
                   for k in key)
    if consumed > x.ndim:
        raise IndexError(f"too many indices: {consumed} given for an array with {x.ndim} "
                         "dimension(s)")
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    basic: list[Any] = []  # the key's basic part, array positions kept as full slices
    placed: list[tuple[int, Array]] = []  # (axis of the view, index array)
    axis = view_axis = 0
    for k in key:
        if k is Ellipsis:
            for _ in range(x.ndim - consumed):
                basic.append(slice(None))
            axis += x.ndim - consumed
            view_axis += x.ndim - consumed
        elif k is None:
            basic.append(None)
            view_axis += 1
        elif k.__class__ is slice:
            basic.append(k)
            axis += 1
            view_axis += 1
        elif k.__class__ is builtins.bool or k.__class__ is Array and k._dtype is dt.bool \
                and k.ndim == 0:  # a new axis of length 1 (True) or 0 (False)
            basic.append(None)
            chosen = [0] if builtins.bool(k) else []
            placed.append((view_axis, asarray(chosen, dtype=dt.int64, device=device)))
            view_axis += 1
        elif k.__class__ is Array and k._dtype is dt.bool:
            covered = x._shape[axis:axis + k.ndim]
            if any(m not in (n, 0) for m, n in zip(k._shape, covered)):  # (0 selects nothing)
                raise IndexError(f"boolean index of shape {k._shape} does not match the "
                                 f"indexed dimensions {covered} of an array of shape {x._shape}")
            for position in backend.nonzero(k):
                basic.append(slice(None))
                placed.append((view_axis, position))
                axis += 1
                view_axis += 1
        else:
            if k.__class__ is not Array:
                n = x._shape[axis]
                if not -n <= k < n:
                    raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")
                k = backend.full((), k, dt.int64, device)
            basic.append(slice(None))
            placed.append((view_axis, k))
            axis += 1
            view_axis += 1
    view = basic_view(x, tuple(basic))
    try:
        shape = broadcast_shapes(*(index._shape for _, index in placed))
    except ValueError:
        raise IndexError(f"index arrays of shapes {[i._shape for _, i in placed]} cannot be "
                         "broadcast together") from None
    indices = tuple(broadcast_to(index, shape) for _, index in placed)
    axes = [a for a, _ in placed]
    if axes == list(range(axes[0], axes[0] + len(axes))):
        return view, axes[0], indices
    rest = [a for a in range(view.ndim) if a not in axes]
    return permute(view, (*axes, *rest)), 0, indices


def _check_value(x: Array, value: Any) -> Any:
    """`value` ready to store in `x`: a checked Python scalar or an array on x's device whose
    dtype is of x's kind (a narrower or wider dtype of the same kind is cast, as in numpy; complex
    values never go into a real array, as that would drop their imaginary parts). numpy mode
    casts values of other kinds as numpy does (1.7 stored in an integer array is 1)."""
    if value.__class__ is not Array:
        if isinstance(value, np.generic):
            value = value.item()  # a numpy scalar stands for the Python scalar it holds
        if isinstance(value, (builtins.bool, int, float, complex)):
            from ._elementwise import _check_scalar

            if isinstance(value, complex) and x._dtype not in dt.COMPLEX_FLOATING:
                raise TypeError(f"__setitem__: cannot store a Python complex in a "
                                f"{x._dtype.name} array")
            try:
                return _check_scalar("__setitem__", value, x._dtype)
            except UnspecifiedType as error:  # a scalar of another kind
                return numpy_mode.stored(value, x._dtype, error)
        if isinstance(value, numbers.Number) or isinstance(value, (str, bytes)) or value is None:
            raise TypeError(f"__setitem__: a value is an array or a Python bool, int, float or "
                            f"complex, got {type(value).__name__}")
        from ._creation import asarray

        host = np.asarray(value)  # nested sequences (numpy's conversion) hold values of one kind
        if host.dtype.kind not in _KIND_RANK or \
                _KIND_RANK[host.dtype.kind] > _KIND_RANK[x._dtype.numpy.kind]:
            raise TypeError(f"__setitem__: cannot store {host.dtype} values (from "
                            f"{type(value).__name__}) in a {x._dtype.name} array")
        return asarray(value, dtype=x._dtype, device=x._buffer.device)
    if value._buffer.device is not x._buffer.device:
        raise ValueError(f"__setitem__: value is on {value.device}, the array on {x.device}")
    if value._dtype is not x._dtype and (
            (x._dtype, value._dtype) not in dt.PROMOTION_TABLE
            or value._dtype in dt.COMPLEX_FLOATING and x._dtype not in dt.COMPLEX_FLOATING):
        message = (f"__setitem__: cannot store {value._dtype.name} values in a "
                   f"{x._dtype.name} array")
        if value._dtype in dt.COMPLEX_FLOATING and x._dtype not in dt.COMPLEX_FLOATING:
            raise TypeError(message)
        return numpy_mode.stored(value, x._dtype, UnspecifiedType(message))
    return value


def check_writable(x: Array, what: str) -> None:
    """ValueError if `x` is read-only (a broadcast view, or a view of one)."""
    if x._readonly:
        raise ValueError(f"{what}: the array is read-only: it is a broadcast view (broadcast_to, "
                         "broadcast_arrays) or a view of one, whose elements share memory; "
                         "write to a copy (hxarray.asarray(x, copy=True)) instead")


def _unaliased(value: Any, target: Array) -> Any:
    """`value`, or a copy of it where it may share memory with `target` other than as the same
    view: a write reads each value once, as if the value had been copied first (x[::2] = x[:5]
    on every device; backends may assume that a source and its destination do not overlap)."""
    if value.__class__ is not Array or value._buffer is not target._buffer or \
            same_view(value, target) or not may_overlap(value, target):
        return value
    return value._buffer.device.backend.copy(value)


def setitem(x: Array, key: Any, value: Any) -> None:
    check_writable(x, "__setitem__")
    value = _check_value(x, value)
    backend = x._buffer.device.backend
    if _is_mask(x, key) and (value.__class__ is not Array or value._shape == ()):
        if value.__class__ is Array:
            value = _unaliased(value, x) if value._dtype is x._dtype else \
                backend.copy(value, x._dtype)
        backend.place(x, _unaliased(key, x), value)
        return
    key = _as_tuple(key)
    basic = _basic_key(key)
    if basic is not None:
        target = basic_view(x, basic)
        if value.__class__ is Array and value._shape != target._shape and \
                broadcast_shapes(value._shape, target._shape) != target._shape:
            raise ValueError(f"__setitem__: value of shape {value._shape} does not broadcast to "
                             f"the selection's shape {target._shape}")
        backend.assign(target, _unaliased(value, target))
        return
    target, axis, indices = _gather_plan(x, _advanced_key(x, key))
    shape = _gathered_shape(target, axis, indices)
    indices = tuple(_unaliased(index, target) for index in indices)
    if value.__class__ is not Array:
        value = backend.full((), value, x._dtype, x._buffer.device)
    elif value._dtype is not x._dtype:
        value = backend.copy(value, x._dtype)
    else:
        value = _unaliased(value, target)
    try:
        value = broadcast_to(value, shape)
    except ValueError:
        raise ValueError(f"__setitem__: value of shape {value._shape} does not broadcast to the "
                         f"selection's shape {shape}") from None
    if 0 not in shape:
        _indexed(backend.scatter, "__setitem__", target, axis, indices, value)


@adapted
def take(x: Array, indices: Array, /, *, axis: int | None = None) -> Array:
    """The elements of x at `indices` along `axis` (spec: indexing_functions/take)."""
    check_array(x, "take")
    check_array(indices, "take", "indices")
    if indices._dtype not in dt.INTEGER:
        raise TypeError(f"take(): indices must be an integer array, got {indices._dtype.name}")
    if indices.ndim != 1:
        raise ValueError(f"take(): indices must be 1-D, got {indices.ndim}-D")
    same_device((x, indices), "take")
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take(): axis is required unless x is 1-D, got {x.ndim}-D")
        axis = 0
    axis = normalize_axis(axis, x.ndim, "take")
    return _gather("take", x, axis, (indices,))


def _gather(function: str, x: Array, axis: int, indices: tuple[Array, ...]) -> Array:
    """A new array: gather(x, axis, indices) into its result shape, for `function`."""
    backend = x._buffer.device.backend
    shape = _gathered_shape(x, axis, indices)
    out = backend.empty(shape, x._dtype, x._buffer.device)
    if 0 not in shape:
        _indexed(backend.gather, function, x, axis, indices, out)
    return out


@adapted
def take_along_axis(x: Array, indices: Array, /, *, axis: int = -1) -> Array:
    """The elements of x at `indices`, matched along every axis but `axis`
    (spec: indexing_functions/take_along_axis)."""
    check_array(x, "take_along_axis")
    check_array(indices, "take_along_axis", "indices")
    if indices._dtype not in dt.INTEGER:
        raise TypeError("take_along_axis(): indices must be an integer array, got "
                        f"{indices._dtype.name}")
    if indices.ndim != x.ndim:
        raise ValueError(f"take_along_axis(): indices must have x's {x.ndim} dimensions, got "
                         f"{indices.ndim}")
    same_device((x, indices), "take_along_axis")
    axis = normalize_axis(axis, x.ndim, "take_along_axis")
    x_rest = x._shape[:axis] + x._shape[axis + 1:]
    indices_rest = indices._shape[:axis] + indices._shape[axis + 1:]
    try:
        rest = broadcast_shapes(x_rest, indices_rest)
    except ValueError:
        raise ValueError(f"take_along_axis(): indices of shape {indices._shape} do not "
                         f"broadcast with x of shape {x._shape} off axis {axis}") from None
    # One index array per axis: `indices` along `axis`, 0, 1, 2, ... along every other one.
    shape = (*rest[:axis], indices._shape[axis], *rest[axis:])
    backend = x._buffer.device.backend
    device = x._buffer.device
    per_axis = []
    for a, n in enumerate(x._shape):
        if a == axis:
            per_axis.append(broadcast_to(indices, shape))
            continue
        positions = backend.arange(0, n, 1, dt.int64, device)
        placed = view(positions, tuple(n if b == a else 1 for b in range(x.ndim)),
                      tuple(positions._strides[0] if b == a else 0 for b in range(x.ndim)),
                      positions._offset)
        per_axis.append(broadcast_to(placed, shape))
    return _gather("take_along_axis", x, 0, tuple(per_axis))
