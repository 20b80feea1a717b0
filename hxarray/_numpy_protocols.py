"""numpy's protocols on hxarray arrays: `__array_ufunc__` and `__array_function__`, as in CuPy.

A numpy ufunc or function with a namespace equivalent runs the namespace function on the arrays'
device, with numpy's arguments mapped (axis tuples, keepdims, dtype, ddof, `out=` written into an
hxarray array); numpy arrays, lists and numpy scalars among its arguments become hxarray arrays on
that device (zero-copy on the CPU; a host-to-device copy elsewhere). A numpy function without an
equivalent (or with arguments the equivalent lacks, such as `where=`) runs numpy itself on
zero-copy views of CPU arrays; its array and numpy-scalar results come back as hxarray CPU arrays
(sharing numpy's memory), anything else (Python numbers, bools, strings) as numpy returns it. An
array on another device raises TypeError naming `x.to_device("cpu")`: nothing is copied to the
host behind the caller's back. Strict mode refuses ufuncs and runs numpy's own implementation of
array functions (the conversion `np.asarray` makes), as hxarray did before these protocols.

A call in which an instance of a numpy subclass takes part (a masked array, a matrix, a memmap, a
user's subclass) is numpy's, whatever its equivalent: numpy runs it on plain views of the CPU
arrays, so that the subclass's own machinery (`__array_wrap__`, its operators, its own
`__array_ufunc__` or `__array_function__`) gives the answer it gives with ndarrays, and its
subclass results come back as numpy makes them. The array operators take the same route
(`subclass_operator`).
"""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from . import _dtypes as dt
from ._array import Array
from ._indexing import check_writable
from ._modes import is_strict
from ._numpy_conversions import assign_inplace
from ._ops import OPS, REDUCTIONS, SCANS
from ._views import may_overlap

_NoValue = np._NoValue  # numpy's "not given" default


class _Fallback(Exception):
    """An argument the namespace equivalent does not take: numpy runs the call instead."""


# -- writes ----------------------------------------------------------------------------------------

# numpy's functions that write into an argument other than `out=`: the parameter's name
_WRITES_INTO = {np.copyto: "dst", np.put: "a", np.place: "arr", np.putmask: "a",
                np.fill_diagonal: "a", np.put_along_axis: "arr"}


def _refuse_read_only(call: str, targets: Iterable[Any]) -> None:
    """The ValueError of `b += 1` if an hxarray array among `targets` (what `call` would write
    into) is read-only; checked before anything is computed or handed to numpy (whose ufunc.at
    ignores the read-only flag), so nothing is written."""
    for target in targets:
        if target.__class__ is Array and target._readonly:
            check_writable(target, call)


def _outputs(value: Any) -> tuple[Any, ...]:
    """An `out` argument as a tuple of its arrays."""
    return value if isinstance(value, tuple) else () if value is None else (value,)


_SIGNATURES: dict[Callable[..., Any], inspect.Signature | None] = {}


def _function_targets(func: Callable[..., Any], args: tuple[Any, ...],
                      kwargs: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    """What numpy's `func` writes into, by parameter (`out`, and the destination of copyto,
    put, ...), found from its signature only where an argument is a read-only hxarray array."""
    given = (*args, *kwargs.values(), *_outputs(kwargs.get("out")))
    if not any(v.__class__ is Array and v._readonly for v in given):
        return {}
    if func not in _SIGNATURES:
        try:
            _SIGNATURES[func] = inspect.signature(func)
        except (TypeError, ValueError):
            _SIGNATURES[func] = None
    signature = _SIGNATURES[func]
    try:
        bound = signature.bind(*args, **kwargs).arguments if signature is not None else {}
    except TypeError:  # numpy raises its own TypeError for the call
        return {}
    return {name: _outputs(bound.get(name)) for name in ("out", _WRITES_INTO.get(func))
            if name is not None}


# -- conversions -----------------------------------------------------------------------------------


def _find_device(values: Any) -> Any:
    """The device of the first hxarray array in `values` (nested lists, tuples and dicts)."""
    stack = [values]
    while stack:
        value = stack.pop()
        if value.__class__ is Array:
            return value._buffer.device
        if isinstance(value, (list, tuple)):
            stack.extend(reversed(value))
        elif isinstance(value, dict):
            stack.extend(reversed(list(value.values())))
    return None


def _hx(value: Any, device: Any) -> Any:
    """An array argument as an hxarray array on `device`; None stays None."""
    if value is None or value.__class__ is Array:
        return value
    return _xp().asarray(value, device=device)


def as_operand(value: Any, device: Any) -> Any:
    """A ufunc operand: arrays as for `_hx`, Python and numpy scalars as (weak) Python scalars."""
    if isinstance(value, np.generic):
        return value.item() if value.dtype in dt.FROM_NUMPY else value
    if isinstance(value, (builtins.bool, int, float, complex)):
        return value
    return _hx(value, device)


def numpy_operand(x: Array, other: Any) -> Array | None:
    """A numpy array or scalar as the operand of an in-place operator on `x` (numpy mode), or
    None where the operator declines it (strict mode; anything else)."""
    if is_strict() or not isinstance(other, (np.ndarray, np.generic)):
        return None
    return as_operand(other, x._buffer.device)


def _nested(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """`value` with `leaf` applied to everything but lists, tuples (named too) and dicts, which
    are rebuilt around the results."""
    if isinstance(value, list):
        return [_nested(v, leaf) for v in value]
    if isinstance(value, tuple):
        items = [_nested(v, leaf) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, dict):
        return {k: _nested(v, leaf) for k, v in value.items()}
    return leaf(value)


def _to_numpy(value: Any, name: str, subclass: type | None = None) -> Any:
    """`value` with every hxarray array replaced by a zero-copy numpy view (CPU memory only)."""
    why = "has no hxarray equivalent" if subclass is None else \
        f"with a {subclass.__module__}.{subclass.__qualname__} argument is numpy's to compute"

    def view(v: Any) -> Any:
        if v.__class__ is not Array:
            return v
        host = v._buffer.device.backend.host_view(v)
        if host is None:
            raise TypeError(f"numpy.{name} {why}, and an array on {v.device} is not in host "
                            "memory; move it with x.to_device('cpu') first (hxarray never "
                            "copies it silently)")
        return host
    return _nested(value, view)


def _from_numpy(value: Any, outs: list[tuple[Any, Any]]) -> Any:
    """numpy's result with plain arrays (and numpy scalars) of hxarray dtypes as hxarray CPU
    arrays; an `out=` argument, given as (the caller's, what numpy was handed), comes back as
    the caller's where numpy returns it (or, for an hxarray array, a view of its memory and
    shape). Instances of numpy's subclasses stay as numpy made them: converting one would drop
    what it carries (a mask)."""
    def wrap(v: Any) -> Any:
        if v.__class__ is np.ndarray:
            for given, handed in outs:
                if v is handed or given.__class__ is Array and v.base is not None and \
                        v.shape == given.shape and np.shares_memory(v, handed):
                    return given
        elif isinstance(v, np.ndarray):
            return v
        if isinstance(v, (np.ndarray, np.generic)) and v.dtype in dt.FROM_NUMPY:
            return _xp().asarray(np.asarray(v))
        return v
    return _nested(value, wrap)


def _fallback(function: Callable[..., Any], name: str, args: tuple[Any, ...],
              kwargs: dict[str, Any], subclass: type | None = None) -> Any:
    """numpy's own `function` on views of the (CPU) arrays, results wrapped back; `subclass`,
    the numpy subclass that sent the call here, if one did."""
    handed = _to_numpy(kwargs, name, subclass)
    outs = list(zip(_outputs(kwargs.get("out")), _outputs(handed.get("out"))))
    return _from_numpy(function(*_to_numpy(args, name, subclass), **handed), outs)


def subclass_operator(function: Callable[[Any, Any], Any], x: Array, other: Any, *,
                      reflected: builtins.bool = False, inplace: builtins.bool = False) -> Any:
    """`x <op> other` (`other <op> x` where `reflected`) with `function` Python's operator
    (`operator.add`, `operator.iadd`), `other` an instance of a numpy subclass: the operator on a
    plain view of x, numpy's answer with an ndarray in x's place. NotImplemented in strict
    mode, which leaves numpy's arrays to Python's protocol."""
    if is_strict():
        return NotImplemented
    stem = function.__name__.rstrip("_")
    if inplace:
        _refuse_read_only(f"in-place {stem[1:]}", (x,))
    view = _to_numpy(x, f"ndarray.__{'r' * reflected}{stem}__", other.__class__)
    result = function(other, view) if reflected else function(view, other)
    return _from_numpy(result, [(x, view)] if inplace else [])


def _assign_out(result: Any, out: Any) -> Any:
    """Write `result` into the hxarray array `out` (numpy's "same_kind" casting) and return it."""
    if isinstance(out, tuple):
        if len(out) != 1:
            raise _Fallback
        out = out[0]
    if out is None:
        return result
    if out.__class__ is not Array:
        raise _Fallback
    return assign_inplace("out=", out, result)


# -- ufuncs ----------------------------------------------------------------------------------------

def _ufunc_table() -> dict[np.ufunc, str]:
    """numpy's ufunc -> the namespace's element-wise function (`_ops.Op.ufunc`)."""
    table = {op.ufunc: name for name, op in OPS.items()
             if op.category is not None and op.ufunc is not None}
    table[np.matmul] = "matmul"
    if isinstance(getattr(np, "vecdot", None), np.ufunc):
        table[np.vecdot] = "vecdot"
    return table


_UFUNCS = _ufunc_table()
# ufunc.reduce and ufunc.accumulate with a namespace equivalent, from the operation tables
_REDUCE = {r.ufunc: r.name for r in REDUCTIONS.values()}
_ACCUMULATE = {s.folds.ufunc: s.name for s in SCANS.values()}
_IGNORED = {"casting": "same_kind", "order": "K", "subok": True}  # numpy's defaults, no effect


def _call_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
    device = _find_device((inputs, kwargs.get("out")))
    out = kwargs.pop("out", None)
    dtype = kwargs.pop("dtype", None)
    for key, default in _IGNORED.items():
        if kwargs.pop(key, default) != default:
            raise _Fallback
    if method == "__call__":
        name = _UFUNCS.get(ufunc)
        if name is None or kwargs:  # where=, signature=, axes=, ...
            raise _Fallback
        operands = [as_operand(v, device) for v in inputs]
        if dtype is not None:
            operands = [_xp().astype(v, dtype) if v.__class__ is Array else v
                        for v in operands]
        function = getattr(_xp(), name)
        return _assign_out(function(*operands), out)
    table = _REDUCE if method == "reduce" else _ACCUMULATE if method == "accumulate" else {}
    name = table.get(ufunc)
    if name is None or len(inputs) != 1 or set(kwargs) - {"axis", "keepdims"}:
        raise _Fallback
    x = _hx(inputs[0], device)
    axis = kwargs.get("axis", 0)
    if method == "accumulate":
        return _assign_out(getattr(_xp(), name)(x, axis=axis, dtype=dtype), out)
    extra = {"dtype": dtype} if dtype is not None else {}
    result = getattr(_xp(), name)(x, axis=axis, keepdims=kwargs.get("keepdims", False),
                                    **extra)
    return _assign_out(result, out)


def array_ufunc(self: Array, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """numpy's `__array_ufunc__`: the namespace's function, or numpy's on CPU views."""
    if is_strict():
        raise TypeError("operand 'Array' does not support ufuncs (__array_ufunc__=None): hxarray "
                        "runs numpy ufuncs only outside strict mode; use the hxarray namespace "
                        "or np.asarray(x)")
    outs = kwargs.get("out") or ()
    subclass = None
    for value in (*inputs, *outs):
        kind = value.__class__
        if kind is Array or kind is np.ndarray:
            continue
        if isinstance(value, np.ndarray):
            subclass = subclass or kind
        elif hasattr(value, "__array_ufunc__") and not isinstance(value, np.generic):
            return NotImplemented  # another library's array: let it (or numpy) decide
    call = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
    _refuse_read_only(f"numpy.{call}(out=...)", outs)
    if method == "at":  # ufunc.at(a, indices, ...) writes into `a`
        _refuse_read_only(f"numpy.{call}", inputs[:1])
    if subclass is None:
        try:
            return _call_ufunc(ufunc, method, inputs, dict(kwargs))
        except _Fallback:
            pass
    return _fallback(getattr(ufunc, method), call, inputs, kwargs, subclass)


# -- array functions -------------------------------------------------------------------------------

_FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {}


def _implements(*functions: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register an adapter, called as `adapter(dev, *args, **kwargs)` with numpy's arguments;
    it raises _Fallback for arguments the namespace lacks."""
    def register(adapter: Callable[..., Any]) -> Callable[..., Any]:
        for function in functions:
            if function is not None:
                _FUNCTIONS[function] = adapter
        return adapter
    return register


def _given(value: Any) -> builtins.bool:
    return value is not _NoValue


def _plain(*values: Any) -> None:
    """_Fallback unless every numpy-only argument in `values` has its default (None/_NoValue)."""
    if any(v is not None and v is not _NoValue for v in values):
        raise _Fallback


def _keepdims(value: Any) -> builtins.bool:
    return builtins.bool(value) if _given(value) else False


def _axis(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


_public: Any = None  # `hxarray` itself, handed down by `install` (hxarray/__init__)


def _xp() -> Any:
    """The public namespace, whose functions numpy's protocols call (with their hooks)."""
    return _public


def install(namespace: Any) -> None:
    """numpy's protocols on `Array`, calling the functions of `namespace` (`hxarray`, which
    imports this module and calls this once the namespace is complete)."""
    global _public
    _public = namespace
    Array.__array_ufunc__ = array_ufunc  # type: ignore[attr-defined]
    Array.__array_function__ = array_function  # type: ignore[attr-defined]


def _reduction(name: str, with_dtype: builtins.bool) -> Callable[..., Any]:
    def adapter(dev: Any, a: Any, axis: Any = None, *rest: Any, out: Any = None,
                keepdims: Any = _NoValue, initial: Any = _NoValue, where: Any = _NoValue,
                dtype: Any = None) -> Any:
        if rest:  # numpy's positional dtype (sum, prod), out, keepdims
            names = ("dtype", "out", "keepdims") if with_dtype else ("out", "keepdims")
            given = dict(zip(names, rest))
            dtype, out = given.get("dtype", dtype), given.get("out", out)
            keepdims = given.get("keepdims", keepdims)
        _plain(initial, where)
        x = _hx(a, dev)
        kwargs = {"axis": _axis(axis), "keepdims": _keepdims(keepdims)}
        if dtype is not None:
            if with_dtype:
                kwargs["dtype"] = dtype
            else:
                x = _xp().astype(x, dtype)
        return _assign_out(getattr(_xp(), name)(x, **kwargs), out)
    return adapter


for _name, _functions, _with_dtype in (
        ("sum", (np.sum,), True), ("prod", (np.prod,), True),
        ("max", (np.max, getattr(np, "amax", None)), False),
        ("min", (np.min, getattr(np, "amin", None)), False),
        ("all", (np.all,), False), ("any", (np.any,), False)):
    _implements(*_functions)(_reduction(_name, _with_dtype))


@_implements(np.mean)
def _mean(dev: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
          keepdims: Any = _NoValue, *, where: Any = _NoValue) -> Any:
    _plain(where)
    x = _hx(a, dev)
    if dtype is not None:
        x = _xp().astype(x, dtype)
    return _assign_out(_xp().mean(x, axis=_axis(axis), keepdims=_keepdims(keepdims)), out)


def _spread(name: str) -> Callable[..., Any]:
    def adapter(dev: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                ddof: Any = 0, keepdims: Any = _NoValue, *, where: Any = _NoValue,
                mean: Any = _NoValue, correction: Any = _NoValue) -> Any:
        _plain(where, mean)
        x = _hx(a, dev)
        if dtype is not None:
            x = _xp().astype(x, dtype)
        correction = correction if _given(correction) else ddof
        return _assign_out(getattr(_xp(), name)(x, axis=_axis(axis), correction=correction,
                                                keepdims=_keepdims(keepdims)), out)
    return adapter


_implements(np.var)(_spread("var"))
_implements(np.std)(_spread("std"))


def _arg_extremum(name: str) -> Callable[..., Any]:
    def adapter(dev: Any, a: Any, axis: Any = None, out: Any = None, *,
                keepdims: Any = _NoValue) -> Any:
        return _assign_out(getattr(_xp(), name)(_hx(a, dev), axis=axis,
                                                keepdims=_keepdims(keepdims)), out)
    return adapter


_implements(np.argmax)(_arg_extremum("argmax"))
_implements(np.argmin)(_arg_extremum("argmin"))


def _cumulative(name: str, flatten: builtins.bool) -> Callable[..., Any]:
    def adapter(dev: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                include_initial: builtins.bool = False) -> Any:
        x = _hx(a, dev)
        if axis is None and (flatten or x.ndim == 1):
            x, axis = _xp().reshape(x, (-1,)), 0
        return _assign_out(getattr(_xp(), name)(x, axis=axis, dtype=dtype,
                                                include_initial=include_initial), out)
    return adapter


_implements(np.cumsum)(_cumulative("cumulative_sum", True))
_implements(np.cumprod)(_cumulative("cumulative_prod", True))
_implements(getattr(np, "cumulative_sum", None))(_cumulative("cumulative_sum", False))
_implements(getattr(np, "cumulative_prod", None))(_cumulative("cumulative_prod", False))


@_implements(np.count_nonzero)
def _count_nonzero(dev: Any, a: Any, axis: Any = None, *, keepdims: Any = False) -> Any:
    x = _hx(a, dev)
    result = _xp().count_nonzero(x, axis=_axis(axis), keepdims=builtins.bool(keepdims))
    return int(result) if axis is None and not keepdims else result  # numpy: a Python int


@_implements(np.diff)
def _diff(dev: Any, a: Any, n: int = 1, axis: int = -1, prepend: Any = _NoValue,
          append: Any = _NoValue) -> Any:
    x = _hx(a, dev)
    extra = {}
    for key, value in (("prepend", prepend), ("append", append)):
        if _given(value):
            value = _hx(value, dev)
            if value.ndim == 0:  # numpy broadcasts a scalar along the axis
                shape = list(x.shape)
                shape[axis] = 1
                value = _xp().broadcast_to(value, tuple(shape))
            extra[key] = value
    return _xp().diff(x, axis=axis, n=n, **extra)


# -- creation --------------------------------------------------------------------------------------


def _like(name: str, filled: builtins.bool) -> Callable[..., Any]:
    """numpy's *_like(prototype, [fill_value,] dtype, order, subok, shape, *, device)."""
    def adapter(dev: Any, prototype: Any, *args: Any, **kwargs: Any) -> Any:
        names = ("fill_value",) * filled + ("dtype", "order", "subok", "shape")
        given = {**dict(zip(names, args)), **kwargs}
        if given.pop("order", "K") not in ("K", "C", "A") or given.pop("device", None) \
                not in (None, "cpu"):
            raise _Fallback
        given.pop("subok", None)
        x = _hx(prototype, dev)
        dtype = given.get("dtype")
        dtype = x.dtype if dtype is None else dtype
        shape = given.get("shape")
        shape = x.shape if shape is None else (shape,) if isinstance(shape, int) else \
            tuple(shape)
        xp = _xp()
        if filled:
            fill = given["fill_value"]
            fill = fill.item() if isinstance(fill, np.generic) else fill
            return xp.full(shape, fill, dtype=dtype, device=x.device)
        return getattr(xp, name)(shape, dtype=dtype, device=x.device)
    return adapter


_implements(np.empty_like)(_like("empty", False))
_implements(np.zeros_like)(_like("zeros", False))
_implements(np.ones_like)(_like("ones", False))
_implements(np.full_like)(_like("full", True))


@_implements(np.copy)
def _copy(dev: Any, a: Any, order: str = "K", subok: builtins.bool = False) -> Any:
    return _xp().asarray(_hx(a, dev), copy=True)


_implements(np.tril)(lambda dev, m, k=0: _xp().tril(_hx(m, dev), k=k))
_implements(np.triu)(lambda dev, m, k=0: _xp().triu(_hx(m, dev), k=k))


@_implements(np.meshgrid)
def _meshgrid(dev: Any, *xi: Any, copy: builtins.bool = True, sparse: builtins.bool = False,
              indexing: str = "xy") -> Any:
    if sparse:
        raise _Fallback
    return _xp().meshgrid(*(_hx(x, dev) for x in xi), indexing=indexing)


# -- manipulation ----------------------------------------------------------------------------------


def _parts(dev: Any, arrays: Any, dtype: Any) -> list[Array]:
    parts = [_hx(a, dev) for a in arrays]
    return parts if dtype is None else [_xp().astype(p, dtype) for p in parts]


@_implements(np.concatenate, getattr(np, "concat", None))
def _concatenate(dev: Any, arrays: Any, axis: Any = 0, out: Any = None, *, dtype: Any = None,
                 casting: str = "same_kind") -> Any:
    return _assign_out(_xp().concat(_parts(dev, arrays, dtype), axis=axis), out)


@_implements(np.stack)
def _stack(dev: Any, arrays: Any, axis: int = 0, out: Any = None, *, dtype: Any = None,
           casting: str = "same_kind") -> Any:
    return _assign_out(_xp().stack(_parts(dev, arrays, dtype), axis=axis), out)


_AT_LEAST = {  # numpy's new shape for an array of fewer dimensions, by its ndim
    1: {0: lambda s: (1,)},
    2: {0: lambda s: (1, 1), 1: lambda s: (1, *s)},
    3: {0: lambda s: (1, 1, 1), 1: lambda s: (1, *s, 1), 2: lambda s: (*s, 1)},
}


def _at_least(ndim: int) -> Callable[..., Any]:
    def adapter(dev: Any, *arys: Any) -> Any:
        results = []
        for a in arys:
            x = _hx(a, dev)
            if x.ndim < ndim:
                x = _xp().reshape(x, _AT_LEAST[ndim][x.ndim](x.shape))
            results.append(x)
        return results[0] if len(results) == 1 else tuple(results)
    return adapter


_implements(np.atleast_1d)(_at_least(1))
_implements(np.atleast_2d)(_at_least(2))
_implements(np.atleast_3d)(_at_least(3))


@_implements(np.vstack, getattr(np, "row_stack", None))
def _vstack(dev: Any, tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    return _concatenate(dev, [_at_least(2)(dev, a) for a in tup], 0, dtype=dtype)


@_implements(np.hstack)
def _hstack(dev: Any, tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    parts = [_at_least(1)(dev, a) for a in tup]
    return _concatenate(dev, parts, 0 if parts and parts[0].ndim == 1 else 1, dtype=dtype)


@_implements(np.column_stack)
def _column_stack(dev: Any, tup: Any) -> Any:
    parts = []
    for a in tup:
        x = _hx(a, dev)
        parts.append(_xp().reshape(x, (-1, 1)) if x.ndim < 2 else x)
    return _xp().concat(parts, axis=1)


@_implements(np.expand_dims)
def _expand_dims(dev: Any, a: Any, axis: Any) -> Any:
    return _xp().expand_dims(_hx(a, dev), axis=_axis(axis))


@_implements(np.squeeze)
def _squeeze(dev: Any, a: Any, axis: Any = None) -> Any:
    x = _hx(a, dev)
    if axis is None:
        axis = tuple(i for i, n in enumerate(x.shape) if n == 1)
    return _xp().squeeze(x, axis=_axis(axis))


@_implements(np.flip)
def _flip(dev: Any, m: Any, axis: Any = None) -> Any:
    return _xp().flip(_hx(m, dev), axis=_axis(axis))


@_implements(np.moveaxis)
def _moveaxis(dev: Any, a: Any, source: Any, destination: Any) -> Any:
    return _xp().moveaxis(_hx(a, dev), _axis(source), _axis(destination))


@_implements(np.transpose, getattr(np, "permute_dims", None))
def _transpose(dev: Any, a: Any, axes: Any = None) -> Any:
    x = _hx(a, dev)
    axes = tuple(range(x.ndim))[::-1] if axes is None else tuple(axes)
    return _xp().permute_dims(x, axes)


@_implements(np.swapaxes)
def _swapaxes(dev: Any, a: Any, axis1: int, axis2: int) -> Any:
    x = _hx(a, dev)
    order = list(range(x.ndim))
    order[axis1], order[axis2] = order[axis2], order[axis1]
    return _xp().permute_dims(x, tuple(order))


@_implements(getattr(np, "matrix_transpose", None))
def _matrix_transpose(dev: Any, x: Any) -> Any:
    return _xp().matrix_transpose(_hx(x, dev))


@_implements(np.reshape)
def _reshape(dev: Any, a: Any, /, shape: Any = None, order: str = "C", *, newshape: Any = None,
             copy: Any = None) -> Any:
    if order != "C":
        raise _Fallback
    shape = newshape if shape is None else shape
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return _xp().reshape(_hx(a, dev), shape, copy=copy)


@_implements(np.ravel)
def _ravel(dev: Any, a: Any, order: str = "C") -> Any:
    return _xp().ravel(_hx(a, dev), order)


@_implements(np.roll)
def _roll(dev: Any, a: Any, shift: Any, axis: Any = None) -> Any:
    return _xp().roll(_hx(a, dev), _axis(shift), axis=_axis(axis))


@_implements(np.repeat)
def _repeat(dev: Any, a: Any, repeats: Any, axis: Any = None) -> Any:
    if not isinstance(repeats, int):
        repeats = _hx(repeats, dev)
    return _xp().repeat(_hx(a, dev), repeats, axis=axis)


@_implements(np.tile)
def _tile(dev: Any, A: Any, reps: Any) -> Any:
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    return _xp().tile(_hx(A, dev), reps)


@_implements(getattr(np, "unstack", None))
def _unstack(dev: Any, x: Any, /, *, axis: int = 0) -> Any:
    return _xp().unstack(_hx(x, dev), axis=axis)


@_implements(np.broadcast_to)
def _broadcast_to(dev: Any, array: Any, shape: Any, subok: builtins.bool = False) -> Any:
    return _xp().broadcast_to(_hx(array, dev), (shape,) if isinstance(shape, int)
                              else tuple(shape))


@_implements(np.broadcast_arrays)
def _broadcast_arrays(dev: Any, *args: Any, subok: builtins.bool = False) -> Any:
    return tuple(_xp().broadcast_arrays(*(_hx(a, dev) for a in args)))


# -- searching, sorting, sets ----------------------------------------------------------------------


@_implements(np.where)
def _where(dev: Any, condition: Any, x: Any = _NoValue, y: Any = _NoValue, /) -> Any:
    if not _given(x) and not _given(y):
        return _xp().nonzero(_hx(condition, dev))
    operands = [v if isinstance(v, (builtins.bool, int, float, complex)) else as_operand(v, dev)
                for v in (x, y)]
    return _xp().where(_hx(condition, dev), *operands)


@_implements(np.nonzero)
def _nonzero(dev: Any, a: Any) -> Any:
    return _xp().nonzero(_hx(a, dev))


@_implements(np.searchsorted)
def _searchsorted(dev: Any, a: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
    return _xp().searchsorted(_hx(a, dev), as_operand(v, dev), side=side,
                              sorter=_hx(sorter, dev))


def _sorting(name: str) -> Callable[..., Any]:
    def adapter(dev: Any, a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *,
                stable: Any = None) -> Any:
        _plain(order)
        x = _hx(a, dev)
        if axis is None:
            x, axis = _xp().reshape(x, (-1,)), -1
        return getattr(_xp(), name)(x, axis=axis, stable=builtins.bool(stable) or
                                    kind == "stable")
    return adapter


_implements(np.sort)(_sorting("sort"))
_implements(np.argsort)(_sorting("argsort"))


@_implements(np.unique)
def _unique(dev: Any, ar: Any, return_index: builtins.bool = False,
            return_inverse: builtins.bool = False, return_counts: builtins.bool = False,
            axis: Any = None, *, equal_nan: builtins.bool = True,
            sorted: builtins.bool = True) -> Any:
    x = _hx(ar, dev)
    if axis is not None or (equal_nan and x.dtype in dt.FLOATING):
        raise _Fallback  # numpy merges NaNs by default; the standard keeps them apart
    values, indices, inverse, counts = _xp().unique_all(x)
    extra = [r for r, wanted in ((indices, return_index), (inverse, return_inverse),
                                 (counts, return_counts)) if wanted]
    return (values, *extra) if extra else values


for _name in ("unique_values", "unique_counts", "unique_inverse", "unique_all"):
    _implements(getattr(np, _name, None))(
        (lambda name: lambda dev, x: getattr(_xp(), name)(_hx(x, dev)))(_name))


@_implements(np.isin)
def _isin(dev: Any, element: Any, test_elements: Any, assume_unique: builtins.bool = False,
          invert: builtins.bool = False, *, kind: Any = None) -> Any:
    return _xp().isin(as_operand(element, dev), as_operand(test_elements, dev),
                      invert=builtins.bool(invert))


@_implements(np.clip)
def _clip(dev: Any, a: Any, a_min: Any = _NoValue, a_max: Any = _NoValue, out: Any = None, *,
          min: Any = _NoValue, max: Any = _NoValue, **kwargs: Any) -> Any:
    if kwargs:
        raise _Fallback
    low = a_min if _given(a_min) else min if _given(min) else None
    high = a_max if _given(a_max) else max if _given(max) else None
    return _assign_out(_xp().clip(_hx(a, dev), as_operand(low, dev),
                                  as_operand(high, dev)), out)


@_implements(np.take)
def _take(dev: Any, a: Any, indices: Any, axis: Any = None, out: Any = None,
          mode: str = "raise") -> Any:
    if mode != "raise":
        raise _Fallback
    x, idx = _hx(a, dev), _hx(indices, dev)
    if axis is None:
        x, axis = _xp().reshape(x, (-1,)), 0
    if idx.ndim != 1:
        flat = _xp().take(x, _xp().reshape(idx, (-1,)), axis=axis)
        axis = axis % x.ndim
        shape = (*x.shape[:axis], *idx.shape, *x.shape[axis + 1:])
        return _assign_out(_xp().reshape(flat, shape), out)
    return _assign_out(_xp().take(x, idx, axis=axis), out)


@_implements(np.take_along_axis)
def _take_along_axis(dev: Any, arr: Any, indices: Any, axis: Any = -1) -> Any:
    x = _hx(arr, dev)
    if axis is None:
        x, axis = _xp().reshape(x, (-1,)), 0
    return _xp().take_along_axis(x, _hx(indices, dev), axis=axis)


# -- element-wise functions that are not ufuncs ----------------------------------------------------


@_implements(np.round, getattr(np, "around", None))
def _round(dev: Any, a: Any, decimals: int = 0, out: Any = None) -> Any:
    x = _hx(a, dev)
    if decimals == 0:
        return _assign_out(_xp().round(x), out)
    scale = 10.0 ** decimals  # numpy's own method: scale, round half to even, scale back
    return _assign_out(_xp().round(x * scale) / scale, out)


@_implements(np.real)
def _real(dev: Any, val: Any) -> Any:
    x = _hx(val, dev)
    return _xp().real(x) if x.dtype in dt.COMPLEX_FLOATING else x


@_implements(np.imag)
def _imag(dev: Any, val: Any) -> Any:
    x = _hx(val, dev)
    return _xp().imag(x) if x.dtype in dt.COMPLEX_FLOATING else _xp().zeros_like(x)


@_implements(np.array_equal)
def _array_equal(dev: Any, a1: Any, a2: Any, equal_nan: builtins.bool = False
                 ) -> builtins.bool:
    x, y = _hx(a1, dev), _hx(a2, dev)
    if x.shape != y.shape:
        return False
    same = x == y
    if equal_nan and x.dtype in dt.FLOATING:
        same = _xp().logical_or(same, _xp().logical_and(_xp().isnan(x), _xp().isnan(y)))
    return builtins.bool(_xp().all(same))


# -- properties that need no data ------------------------------------------------------------------


@_implements(np.shape)
def _shape(dev: Any, a: Any) -> tuple[int, ...]:
    return _hx(a, dev).shape


@_implements(np.ndim)
def _ndim(dev: Any, a: Any) -> int:
    return _hx(a, dev).ndim


@_implements(np.size)
def _size(dev: Any, a: Any, axis: Any = None) -> int:
    x = _hx(a, dev)
    return x.size if axis is None else x.shape[axis]


@_implements(np.result_type)
def _result_type(dev: Any, *arrays_and_dtypes: Any) -> np.dtype:
    return np.result_type(*(v.dtype.numpy if v.__class__ is Array else v
                            for v in arrays_and_dtypes))


@_implements(np.iscomplexobj)
def _iscomplexobj(dev: Any, x: Any) -> builtins.bool:
    return x.dtype in dt.COMPLEX_FLOATING if x.__class__ is Array else np.iscomplexobj(x)


@_implements(np.isrealobj)
def _isrealobj(dev: Any, x: Any) -> builtins.bool:
    return not _iscomplexobj(dev, x)


@_implements(np.may_share_memory, np.shares_memory)
def _shares_memory(dev: Any, a: Any, b: Any, max_work: Any = None) -> builtins.bool:
    """On the host numpy's own answer; an array without host memory shares memory only with an
    array of the same buffer whose bytes overlap (never with a numpy array)."""
    host = [v for v in (a, b) if v.__class__ is Array and
            v._buffer.device.backend.host_view(v) is not None]
    if len(host) + sum(v.__class__ is not Array for v in (a, b)) == 2:
        raise _Fallback  # all in host memory: numpy decides, exactly
    if a.__class__ is not Array or b.__class__ is not Array:
        return False
    return may_overlap(a, b)  # may share; the same bound answers shares_memory


# -- linear algebra and fft ------------------------------------------------------------------------


@_implements(np.vdot)
def _vdot(dev: Any, a: Any, b: Any, /) -> Any:
    x, y = (_xp().reshape(_hx(v, dev), (-1,)) for v in (a, b))
    return _xp().vecdot(x, y)


@_implements(np.inner)
def _inner(dev: Any, a: Any, b: Any, /) -> Any:
    x, y = as_operand(a, dev), as_operand(b, dev)
    if x.__class__ is not Array or y.__class__ is not Array or x.ndim == 0 or y.ndim == 0:
        return x * y
    return _xp().tensordot(x, y, axes=([-1], [-1]))


@_implements(np.outer, np.linalg.outer)
def _outer(dev: Any, a: Any, b: Any, out: Any = None) -> Any:
    x, y = (_xp().reshape(_hx(v, dev), (-1,)) for v in (a, b))
    return _assign_out(_xp().linalg.outer(x, y), out)


@_implements(np.tensordot, getattr(np.linalg, "tensordot", None))
def _tensordot(dev: Any, a: Any, b: Any, axes: Any = 2) -> Any:
    if not isinstance(axes, int):
        axes = tuple((tuple(v) if isinstance(v, (list, tuple)) else (v,)) for v in axes)
    return _xp().tensordot(_hx(a, dev), _hx(b, dev), axes=axes)


def _two_axes(x: Array, axis1: int, axis2: int) -> Array:
    """x with axes axis1, axis2 moved to the end (numpy's trace and diagonal take any two)."""
    axis1, axis2 = axis1 % x.ndim, axis2 % x.ndim
    rest = [i for i in range(x.ndim) if i not in (axis1, axis2)]
    return _xp().permute_dims(x, (*rest, axis1, axis2))


@_implements(np.trace)
def _trace(dev: Any, a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1,
           dtype: Any = None, out: Any = None) -> Any:
    x = _two_axes(_hx(a, dev), axis1, axis2)
    return _assign_out(_xp().linalg.trace(x, offset=offset, dtype=dtype), out)


@_implements(np.diagonal)
def _diagonal(dev: Any, a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    return _xp().linalg.diagonal(_two_axes(_hx(a, dev), axis1, axis2), offset=offset)


@_implements(np.cross)
def _cross(dev: Any, a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
           axis: Any = None) -> Any:
    if axis is not None:
        axisa = axisb = axisc = axis
    x = _xp().moveaxis(_hx(a, dev), axisa, -1)
    y = _xp().moveaxis(_hx(b, dev), axisb, -1)
    if x.shape[-1] != 3 or y.shape[-1] != 3:
        raise _Fallback  # numpy's 2-vectors
    return _xp().moveaxis(_xp().linalg.cross(x, y), -1, axisc)


def _linalg(name: str, *params: str) -> Callable[..., Any]:
    """A numpy.linalg function whose numpy-only parameters `params` must keep their defaults."""
    def adapter(dev: Any, a: Any, *args: Any, **kwargs: Any) -> Any:
        xp = _xp()
        function = getattr(xp.linalg, name)
        for key in params:
            if kwargs.pop(key, None) not in (None, False, "L"):
                raise _Fallback
        arrays = [_hx(a, dev), *(_hx(v, dev) for v in args)]
        return function(*arrays, **kwargs)
    return adapter


for _name in ("cholesky", "det", "eig", "eigvals", "inv", "slogdet", "solve", "svdvals",
              "matrix_transpose", "vecdot"):
    _implements(getattr(np.linalg, _name, None))(_linalg(_name))
_implements(np.linalg.eigh)(_linalg("eigh", "UPLO"))
_implements(np.linalg.eigvalsh)(_linalg("eigvalsh", "UPLO"))
_implements(np.linalg.qr)(lambda dev, a, mode="reduced": _xp().linalg.qr(_hx(a, dev),
                                                                              mode=mode))
_implements(np.linalg.matrix_power)(
    lambda dev, a, n: _xp().linalg.matrix_power(_hx(a, dev), n))


@_implements(np.linalg.svd)
def _svd(dev: Any, a: Any, full_matrices: builtins.bool = True,
         compute_uv: builtins.bool = True, hermitian: builtins.bool = False) -> Any:
    if hermitian:
        raise _Fallback
    x = _hx(a, dev)
    if not compute_uv:
        return _xp().linalg.svdvals(x)
    return _xp().linalg.svd(x, full_matrices=full_matrices)


@_implements(np.linalg.pinv)
def _pinv(dev: Any, a: Any, rcond: Any = None, hermitian: builtins.bool = False, *,
          rtol: Any = _NoValue) -> Any:
    if hermitian:
        raise _Fallback
    tolerance = rtol if _given(rtol) else rcond
    return _xp().linalg.pinv(_hx(a, dev), rtol=as_operand(tolerance, dev))


@_implements(np.linalg.matrix_rank)
def _matrix_rank(dev: Any, A: Any, tol: Any = None, hermitian: builtins.bool = False, *,
                 rtol: Any = None) -> Any:
    _plain(tol)
    if hermitian:
        raise _Fallback
    x = _hx(A, dev)
    if x.ndim < 2:
        return _xp().astype(_xp().any(x != 0), dt.int64)
    return _xp().linalg.matrix_rank(x, rtol=as_operand(rtol, dev))


@_implements(getattr(np.linalg, "vector_norm", None))
def _vector_norm(dev: Any, x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False,
                 ord: Any = 2) -> Any:
    return _xp().linalg.vector_norm(_hx(x, dev), axis=_axis(axis), keepdims=keepdims,
                                    ord=ord)


@_implements(getattr(np.linalg, "matrix_norm", None))
def _matrix_norm(dev: Any, x: Any, /, *, keepdims: builtins.bool = False,
                 ord: Any = "fro") -> Any:
    return _xp().linalg.matrix_norm(_hx(x, dev), keepdims=keepdims, ord=ord)


def _fft(name: str) -> Callable[..., Any]:
    def adapter(dev: Any, a: Any, n: Any = None, axis: int = -1, norm: Any = None,
                out: Any = None) -> Any:
        return _assign_out(getattr(_xp().fft, name)(_hx(a, dev), n=n, axis=axis,
                                                    norm=norm or "backward"), out)
    return adapter


def _fftn(name: str) -> Callable[..., Any]:
    def adapter(dev: Any, a: Any, s: Any = None, axes: Any = None, norm: Any = None,
                out: Any = None) -> Any:
        return _assign_out(getattr(_xp().fft, name)(
            _hx(a, dev), s=None if s is None else tuple(s),
            axes=None if axes is None else tuple(axes), norm=norm or "backward"), out)
    return adapter


for _name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
    _implements(getattr(np.fft, _name))(_fft(_name))
for _name in ("fftn", "ifftn", "rfftn", "irfftn"):
    _implements(getattr(np.fft, _name))(_fftn(_name))
_implements(np.fft.fftshift)(lambda dev, x, axes=None: _xp().fft.fftshift(
    _hx(x, dev), axes=_axis(axes)))
_implements(np.fft.ifftshift)(lambda dev, x, axes=None: _xp().fft.ifftshift(
    _hx(x, dev), axes=_axis(axes)))


# numpy's functions that are the namespace's numpy-mode functions (hxarray/_numpy_functions.py,
# _numpy_statistics.py), which take numpy's signatures: called as they are; arguments they do not
# take (`where=`, `initial=`, quantiles' `weights=`) leave the call to numpy
_SIGNATURES_OF: dict[str, inspect.Signature] = {}


def _namespace(name: str) -> Callable[..., Any]:
    def adapter(dev: Any, *args: Any, **kwargs: Any) -> Any:
        owner, _, attribute = name.rpartition(".")
        function = getattr(getattr(_xp(), owner) if owner else _xp(), attribute)
        if name not in _SIGNATURES_OF:
            _SIGNATURES_OF[name] = inspect.signature(function)
        try:
            bound = _SIGNATURES_OF[name].bind(*args, **kwargs)
        except TypeError:
            raise _Fallback from None
        if bound.arguments.get("weights") is not None and name in ("quantile", "percentile"):
            raise _Fallback
        if bound.arguments.get("out") is not None and \
                _outputs(bound.arguments["out"])[0].__class__ is not Array:
            raise _Fallback
        if dev is not None and args and args[0].__class__ is not Array and \
                name not in ("einsum", "concatenate"):
            args = (_hx(args[0], dev), *args[1:]) if isinstance(args[0], np.ndarray) else args
        return function(*args, **kwargs)
    return adapter


for _name in ("allclose", "array_split", "average", "bincount", "corrcoef", "cov", "dot",
              "einsum", "histogram", "histogram_bin_edges", "interp", "isclose", "logspace",
              "median", "nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax",
              "nanmean", "nanmedian", "nanmin", "nanpercentile", "nanprod", "nanquantile",
              "nanstd", "nansum", "nanvar", "pad", "percentile", "quantile", "split",
              "linalg.norm"):
    _owner, _, _attribute = _name.rpartition(".")
    _implements(getattr(getattr(np, _owner) if _owner else np, _attribute))(_namespace(_name))


def array_function(self: Array, func: Callable[..., Any], types: tuple[type, ...],
                   args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """numpy's `__array_function__`: the namespace's equivalent, or numpy's own function on CPU
    views (strict mode: numpy's implementation, as before)."""
    if is_strict():
        return func._implementation(*args, **kwargs)  # type: ignore[attr-defined]
    subclass = None
    for kind in types:
        if kind is Array or kind is np.ndarray:
            continue
        if issubclass(kind, np.ndarray):
            subclass = kind
        elif not issubclass(kind, Array):
            return NotImplemented  # another library's array takes part
    for name, targets in _function_targets(func, args, kwargs).items():
        _refuse_read_only(f"numpy.{func.__name__}({name}=...)", targets)
    adapter = _FUNCTIONS.get(func)
    if adapter is not None and subclass is None:
        try:
            return adapter(_find_device((args, kwargs)), *args, **kwargs)
        except _Fallback:
            pass
    return _fallback(func, func.__name__, args, kwargs, subclass)


__all__ = ["array_function", "array_ufunc", "subclass_operator"]
