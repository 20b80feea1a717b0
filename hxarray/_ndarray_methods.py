"""numpy's ndarray methods on hxarray arrays, for code written against ndarrays (dask's chunk
functions call `x.sum(axis=...)`, `x.reshape(...)`, `x.astype(...)`, as CuPy arrays allow).

Not part of the standard, so numpy mode only: in strict mode the attributes are absent
(AttributeError, so numpy's own functions take the path they took before). A method runs
numpy's function of the same name through numpy's protocols (hxarray/_numpy_protocols.py), so it
computes in the namespace on the array's device exactly as `np.sum(x, ...)` does, and falls back
to numpy on CPU views for arguments the namespace lacks.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from types import MethodType
from typing import Any

import numpy as np

from ._modes import is_strict

# numpy's methods that are its function of the same name with the array first
_AS_FUNCTION = ("all", "any", "argmax", "argmin", "argsort", "clip", "conj", "conjugate",
                "cumprod", "cumsum", "diagonal", "dot", "max", "mean", "min", "nonzero", "prod",
                "ravel", "repeat", "round", "searchsorted", "squeeze", "std", "sum", "swapaxes",
                "take", "trace", "var")


class _NumpyModeOnly:
    """A method (or, with `attribute=True`, a property) that exists in numpy mode only."""

    __slots__ = ("function", "attribute")

    def __init__(self, function: Callable[..., Any], attribute: builtins.bool = False) -> None:
        self.function = function
        self.attribute = attribute

    def __get__(self, obj: Any, cls: type | None = None) -> Any:
        if obj is None:
            return self.function
        if is_strict():
            name = self.function.__name__.lstrip("_")
            raise AttributeError(f"'Array' object has no attribute {name!r} in strict mode "
                                 "(numpy's ndarray methods are numpy mode's); use the namespace")
        return self.function(obj) if self.attribute else MethodType(self.function, obj)


def _as_function(name: str) -> Callable[..., Any]:
    function = getattr(np, name)

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return function(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"numpy's ndarray.{name}: np.{name}(x, ...) (numpy mode only)."
    return method


def _shape_args(args: tuple[Any, ...]) -> Any:
    """numpy's `x.reshape(2, 3)` or `x.reshape((2, 3))`; `x.transpose(1, 0)` or `((1, 0))`."""
    if len(args) == 1 and not isinstance(args[0], int):
        return args[0]
    return args


def reshape(self: Any, *shape: Any, order: str = "C", copy: builtins.bool | None = None) -> Any:
    """numpy's ndarray.reshape (numpy mode only)."""
    if not shape:
        raise TypeError("reshape() needs a shape")
    return np.reshape(self, _shape_args(shape), order=order, copy=copy)  # type: ignore[call-overload]


def transpose(self: Any, *axes: Any) -> Any:
    """numpy's ndarray.transpose: no axes reverses them (numpy mode only)."""
    return np.transpose(self, _shape_args(axes) if axes else None)


def astype(self: Any, dtype: Any, order: str = "K", casting: str = "unsafe",
           subok: builtins.bool = True, copy: builtins.bool = True) -> Any:
    """numpy's ndarray.astype: a copy unless `copy=False` and nothing changes (numpy mode only)."""
    import hxarray

    if order not in ("K", "A", "C"):
        raise ValueError(f"astype(): hxarray arrays are C-ordered, got order={order!r}")
    if casting != "unsafe" and not np.can_cast(self.dtype, dtype, casting=casting):  # type: ignore[arg-type]
        raise TypeError(f"Cannot cast array data from {self.dtype.name} to {np.dtype(dtype)} "
                        f"according to the rule {casting!r}")
    return hxarray.astype(self, dtype, copy=builtins.bool(copy))


def copy(self: Any, order: str = "C") -> Any:
    """numpy's ndarray.copy: a copy on the same device (numpy mode only)."""
    return np.copy(self, order=order)  # type: ignore[call-overload]


def flatten(self: Any, order: str = "C") -> Any:
    """numpy's ndarray.flatten: a 1-D copy (numpy mode only)."""
    return np.copy(np.reshape(self, (-1,), order=order))  # type: ignore[call-overload]


def item(self: Any, *args: Any) -> Any:
    """numpy's ndarray.item: one element as a Python scalar (numpy mode only)."""
    return self._host().item(*args)


def tolist(self: Any) -> Any:
    """numpy's ndarray.tolist: nested lists of Python scalars (numpy mode only)."""
    return self._host().tolist()


def fill(self: Any, value: Any) -> None:
    """numpy's ndarray.fill: every element set to the scalar `value`, cast as numpy's assignment
    casts (numpy mode only)."""
    if isinstance(value, np.generic):
        value = value.item()
    self[...] = value


def view(self: Any, dtype: Any = None, type: Any = None) -> Any:
    """numpy's ndarray.view: the same memory seen as `dtype` (no copy). A dtype of another size
    needs the last axis contiguous (or a 0-D array of the same size) and changes its length;
    `type=` (an ndarray subclass) is numpy's alone: TypeError (numpy mode only)."""
    from ._checks import as_dtype

    if type is not None or isinstance(dtype, builtins.type) and issubclass(dtype, np.ndarray):
        raise TypeError("view(): hxarray arrays are not ndarrays; views of another type are "
                        "numpy's (np.asarray(x).view(type))")
    target = self.dtype if dtype is None else as_dtype(dtype, "view")
    old, new = self.dtype.itemsize, target.itemsize
    shape, strides = list(self.shape), list(self._strides)
    if old != new:
        if not shape:
            raise ValueError("Changing the dtype of a 0d array is only supported if the "
                             "itemsize is unchanged")
        if shape[-1] != 1 and strides[-1] != old or shape[-1] * old % new:
            raise ValueError("To change to a dtype of a different size, the last axis must be "
                             "contiguous and its size in bytes divisible by the new itemsize")
        shape[-1] = shape[-1] * old // new
        strides[-1] = new
    align = new // 2 if target.kind == "c" else new  # devices load elements at aligned addresses
    if self._offset % align or any(n > 1 and s % align for n, s in zip(shape, strides)):
        raise ValueError(f"view(): the elements of this view are not aligned for "
                         f"{target.name} (numpy allows unaligned views; hxarray's devices "
                         "do not); view a copy")
    return self._view(self, tuple(shape), tuple(strides), self._offset, target)


def _nbytes(self: Any) -> int:
    """numpy's ndarray.nbytes: size times itemsize (numpy mode only)."""
    return self.size * self.dtype.itemsize


def _itemsize(self: Any) -> int:
    """numpy's ndarray.itemsize: bytes per element (numpy mode only)."""
    return self.dtype.itemsize


def install(cls: type) -> None:
    """Attach the methods to `cls` (hxarray.Array); it must not define any of them already."""
    functions = [_as_function(name) for name in _AS_FUNCTION]
    functions += [reshape, transpose, astype, copy, flatten, item, tolist, fill, view]
    methods: dict[str, Any] = {f.__name__: _NumpyModeOnly(f) for f in functions}
    methods.update(nbytes=_NumpyModeOnly(_nbytes, attribute=True),
                   itemsize=_NumpyModeOnly(_itemsize, attribute=True),
                   # above numpy's 0.0, so that code choosing by priority (dask's tensordot of
                   # an ndarray and an hxarray array) takes hxarray's; numpy ignores it for
                   # arrays with __array_ufunc__
                   __array_priority__=1.0)
    for name, value in methods.items():
        if name in vars(cls):
            raise RuntimeError(f"{cls.__name__}.{name} is already defined")
        setattr(cls, name, value)
