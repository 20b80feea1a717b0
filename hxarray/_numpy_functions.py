"""numpy's everyday functions beyond the standard (numpy mode only): creation, joining and
splitting, element-wise comparisons, products and einsum, padding, interpolation.

Each function is composed from the standard's functions (so it runs on every device, with no
device-specific code) and follows numpy's signature and semantics; a docstring says where it
differs. The standard has none of these names, so strict mode refuses them (`numpy_only`): a
`TypeError` naming the function. The statistics (nan-reductions, median, quantiles, histograms)
are in `_numpy_statistics`.
"""

from __future__ import annotations

import builtins
import functools
import math
import operator
import string
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from . import _dtypes as dt
from . import _views
from ._array import Array
from ._checks import as_dtype
from ._indexing import check_writable
from ._modes import is_strict
from ._numpy_conversions import assign_inplace

# `hxarray` itself, whose public functions these are composed from (with their hooks): handed
# down by `use_namespace` from hxarray/__init__, which imports this module (linalg does too)
xp: Any = None


def use_namespace(namespace: Any) -> None:
    """Compose these functions from `namespace` (`hxarray`)."""
    global xp
    xp = namespace

__all__ = ["allclose", "array", "array_split", "concatenate", "dot", "einsum", "interp",
           "isclose", "logspace", "pad", "ravel", "split", "swapaxes"]

F = TypeVar("F", bound=Callable[..., Any])


def numpy_only(function: F) -> F:
    """`function` (a numpy function the standard lacks) refusing strict mode with a TypeError
    that names it."""
    name = function.__qualname__
    if function.__module__ == __name__ and name == "norm":
        name = "linalg.norm"

    @functools.wraps(function)
    def numpy_function(*args: Any, **kwargs: Any) -> Any:
        if is_strict():
            raise TypeError(f"hxarray.{name}() is numpy mode only: the Array API standard has no "
                            f"{name.rpartition('.')[2]}(), and strict mode keeps to the "
                            "standard; leave strict mode (hxarray.set_strict(False)) to use it")
        return function(*args, **kwargs)
    return numpy_function  # type: ignore[return-value]


# -- helpers shared with _numpy_statistics ---------------------------------------------------------


def device_of(*values: Any) -> Any:
    """The device of the first hxarray array among `values` (None: the default device)."""
    for value in values:
        if type(value) is Array:
            return value.device
    return None


def as_array(value: Any, device: Any = None) -> Array:
    """An hxarray array of `value` (arrays as they are; numpy arrays, lists and scalars as
    `asarray` makes them, on `device`)."""
    if type(value) is Array:
        return value
    if isinstance(value, np.generic):
        value = np.asarray(value)
    return xp.asarray(value, device=device)


def as_arrays(*values: Any) -> list[Array]:
    """`values` as hxarray arrays, on the device of the first hxarray array among them."""
    device = device_of(*values)
    return [as_array(v, device) for v in values]


def axis_tuple(axis: Any, ndim: int, function: str) -> tuple[int, ...]:
    """numpy's axis argument (None, an int, a tuple or list of ints) as sorted axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    normal = []
    for a in axes:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
        normal.append(a % ndim)
    if len(set(normal)) != len(normal):
        raise ValueError(f"{function}(): repeated axis in {axis!r}")
    return tuple(sorted(normal))


def to_last(x: Array, axes: tuple[int, ...]) -> Array:
    """x with `axes` (normalised) moved to the end and merged into one axis."""
    rest = [i for i in range(x.ndim) if i not in axes]
    x = xp.permute_dims(x, (*rest, *axes))
    return xp.reshape(x, (*(x.shape[:len(rest)]), math.prod(x.shape[len(rest):])))


def kept(result: Array, axes: tuple[int, ...], ndim: int, keepdims: builtins.bool) -> Array:
    """A result reduced over `axes` of an ndim-array, with them back as size 1 if `keepdims`."""
    return xp.expand_dims(result, axis=axes) if keepdims and axes else result


def into(out: Any, result: Array, function: str) -> Array:
    """`result`, or (given `out`, an hxarray array of its shape) written into `out` under numpy's
    "same_kind" casting, and `out`."""
    if out is None:
        return result
    if isinstance(out, tuple) and len(out) == 1:
        out = out[0]
    if type(out) is not Array:
        raise TypeError(f"{function}(): out must be an hxarray array, got {type(out).__name__}")
    if out.shape != result.shape:
        raise ValueError(f"{function}(): out has shape {out.shape}, the result {result.shape}")
    check_writable(out, f"{function}(out=...)")
    return assign_inplace(f"{function}(out=...)", out, result)


def cast_all(arrays: list[Array], dtype: Any, casting: str, function: str) -> list[Array]:
    """`arrays` cast to `dtype` where numpy's `casting` rule allows it (TypeError otherwise)."""
    dtype = as_dtype(dtype, function)
    for x in arrays:
        if not np.can_cast(x.dtype.numpy, dtype.numpy, casting=casting):  # type: ignore[arg-type]
            raise TypeError(f"{function}(): cannot cast array data from {x.dtype.name} to "
                            f"{dtype.name} according to the rule {casting!r}")
    return [xp.astype(x, dtype) for x in arrays]


def float_dtype(dtype: dt.DType) -> dt.DType:
    """numpy's floating dtype for computing with `dtype`: its own if floating, else float64."""
    return dtype if dtype in dt.FLOATING else dt.float64


# -- creation --------------------------------------------------------------------------------------


@numpy_only
def array(object: Any, dtype: Any = None, *, copy: builtins.bool | None = True,
          order: str | None = "K", ndmin: int = 0, device: Any = None) -> Array:
    """numpy's `array`: a copy of `object` (`copy=None`: only where needed; `copy=False`: never,
    ValueError where one is needed) with at least `ndmin` dimensions (ones prepended). An hxarray
    array stays on its device unless `device=` says otherwise. hxarray arrays are C-ordered:
    `order="F"` raises ValueError."""
    if order not in (None, "K", "A", "C"):
        raise ValueError(f"array(): hxarray arrays are C-ordered, got order={order!r}")
    x = xp.asarray(object, dtype=dtype, copy=copy, device=device)
    if x.ndim < ndmin:
        x = xp.reshape(x, (1,) * (ndmin - x.ndim) + x.shape)
    return x


def _spaced(start: Array, stop: Array, num: int, endpoint: builtins.bool, axis: int,
            work: dt.DType) -> Array:
    """numpy's linspace of array bounds, step for step, in the `work` dtype: the new axis at
    `axis`."""
    div = num - 1 if endpoint else num
    start, stop = xp.astype(start, work), xp.astype(stop, work)
    shape = xp.broadcast_shapes(start.shape, stop.shape)
    start, stop = xp.broadcast_to(start, shape), xp.broadcast_to(stop, shape)
    y = xp.reshape(xp.arange(num, dtype=work, device=start.device), (num,) + (1,) * len(shape))
    delta = stop - start
    if div > 0:
        step = delta / div
        if builtins.bool(xp.any(step == 0)):
            y = (y / div) * delta
        else:
            y = y * step
    else:
        y = y * delta
    y = y + start
    if endpoint and num > 1:
        y = xp.concat([y[:-1], xp.expand_dims(stop, axis=0)], axis=0)
    return xp.moveaxis(y, 0, axis)


@numpy_only
def logspace(start: Any, stop: Any, num: int = 50, endpoint: builtins.bool = True,
             base: Any = 10.0, dtype: Any = None, axis: int = 0, *, device: Any = None) -> Array:
    """numpy's `logspace`: `base ** linspace(start, stop, num)`. Array bounds and bases
    broadcast, the new axis at `axis`, as in numpy; `device=` chooses the device for scalar
    bounds."""
    device = device or device_of(start, stop, base)
    if all(isinstance(v, (int, float)) and not isinstance(v, builtins.bool)
           for v in (start, stop)):
        y = xp.linspace(start, stop, num, endpoint=endpoint, device=device)
        if axis not in (0, -1):
            raise np.exceptions.AxisError(axis, 1)
    else:
        a, b = as_array(start, device), as_array(stop, device)
        work = xp.result_type(a.dtype, b.dtype, 1.0)
        y = _spaced(a, b, num, endpoint, axis, work)
    if type(base) is Array or isinstance(base, (np.ndarray, list, tuple)):
        base = xp.expand_dims(as_array(base, device), axis=axis % y.ndim)
    result = xp.pow(base, y)
    return result if dtype is None else xp.astype(result, as_dtype(dtype, "logspace"))


# -- joining, splitting, axes ----------------------------------------------------------------------


@numpy_only
def concatenate(arrays: Sequence[Any], axis: int | None = 0, out: Any = None, *,
                dtype: Any = None, casting: str = "same_kind") -> Array:
    """numpy's `concatenate`: `concat` with numpy's promotion; `axis=None` joins the flattened
    arrays; `dtype=` casts each first under `casting` (TypeError where it does not allow it);
    `out=` an hxarray array of the result's shape."""
    parts = as_arrays(*arrays)
    if not parts:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        parts, axis = [xp.reshape(p, (-1,)) for p in parts], 0
    if dtype is not None:
        parts = cast_all(parts, dtype, casting, "concatenate")
    return into(out, xp.concat(parts, axis=axis), "concatenate")


@numpy_only
def ravel(a: Any, order: str = "C") -> Array:
    """numpy's `ravel`: the elements in one dimension, a view where the layout allows. `order`
    "C" (rows first), "F" (columns first), "A" ("F" for an array that is Fortran- and not
    C-contiguous) or "K" (memory order, negative strides read forwards)."""
    x = as_array(a)
    if order == "A":
        order = "F" if _f_contiguous(x) and not _c_contiguous(x) else "C"
    if order == "K":
        axes = sorted(range(x.ndim), key=lambda i: -builtins.abs(x._strides[i]) if x.shape[i] > 1
                      else 0)
        x = xp.permute_dims(x, tuple(axes))
    elif order == "F":
        x = xp.permute_dims(x, tuple(range(x.ndim))[::-1])
    elif order != "C":
        raise ValueError(f"ravel(): order must be one of 'C', 'F', 'A', 'K', got {order!r}")
    return xp.reshape(x, (-1,))


def _c_contiguous(x: Array) -> builtins.bool:
    step = x.dtype.itemsize
    for n, s in zip(reversed(x.shape), reversed(x._strides)):
        if n > 1 and s != step:
            return False
        step *= n
    return True


def _f_contiguous(x: Array) -> builtins.bool:
    step = x.dtype.itemsize
    for n, s in zip(x.shape, x._strides):
        if n > 1 and s != step:
            return False
        step *= n
    return True


@numpy_only
def swapaxes(a: Any, axis1: int, axis2: int) -> Array:
    """numpy's `swapaxes`: a view with the two axes exchanged."""
    x = as_array(a)
    order = list(range(x.ndim))
    i, j = (axis_tuple(v, x.ndim, "swapaxes")[0] for v in (axis1, axis2))
    order[i], order[j] = order[j], order[i]
    return xp.permute_dims(x, tuple(order))


def _split(x: Array, indices_or_sections: Any, axis: int, equal: builtins.bool) -> list[Array]:
    axis = axis_tuple(axis, x.ndim, "array_split")[0]
    total = x.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)) and \
            not isinstance(indices_or_sections, builtins.bool):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extras = divmod(total, sections)
        if equal and extras:
            raise ValueError("array split does not result in an equal division")
        sizes = [0] + extras * [each + 1] + (sections - extras) * [each]
        points = [builtins.sum(sizes[:i + 1]) for i in range(len(sizes))]
    else:
        points = [0, *(operator.index(i) for i in indices_or_sections), total]
    lead = (slice(None),) * axis
    return [x[lead + (slice(start, stop),)] for start, stop in zip(points[:-1], points[1:])]


@numpy_only
def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Array]:
    """numpy's `array_split`: views of `ary` split into `indices_or_sections` parts (the first
    `len % n` one longer) or at the given indices, along `axis`."""
    return _split(as_array(ary), indices_or_sections, axis, False)


@numpy_only
def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Array]:
    """numpy's `split`: as `array_split`, but a number of sections must divide the axis
    (ValueError otherwise)."""
    return _split(as_array(ary), indices_or_sections, axis, True)


# -- comparisons -----------------------------------------------------------------------------------


@numpy_only
def isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: builtins.bool = False) -> Array:
    """numpy's `isclose`: `|a - b| <= atol + rtol * |b|` element-wise (b finite), or `a == b`;
    NaNs close to each other only with `equal_nan`. A 0-D array where numpy gives a numpy bool."""
    x, y = as_arrays(a, b)
    y = xp.astype(y, xp.result_type(y.dtype, 1.0))  # numpy: b as a float, at least
    rtol, atol = (v if type(v) is Array or isinstance(v, (int, float)) else as_array(v, y.device)
                  for v in (rtol, atol))
    close = xp.logical_and(xp.abs(x - y) <= atol + rtol * xp.abs(y), xp.isfinite(y))
    close = xp.logical_or(close, x == y)
    if equal_nan:
        close = xp.logical_or(close, xp.logical_and(xp.isnan(x), xp.isnan(y)))
    return close


@numpy_only
def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: builtins.bool = False) -> builtins.bool:
    """numpy's `allclose`: whether every element of `isclose(a, b, ...)` is true (a Python bool,
    read from the device)."""
    return builtins.bool(xp.all(isclose(a, b, rtol, atol, equal_nan)))


# -- products --------------------------------------------------------------------------------------


@numpy_only
def dot(a: Any, b: Any, out: Any = None) -> Array:
    """numpy's `dot`: scalars multiply, vectors give their inner product (not conjugated),
    matrices their product, and N-D arrays sum over a's last axis and b's second-to-last."""
    x, y = as_arrays(a, b)
    if x.ndim == 0 or y.ndim == 0:
        result = x * y
    elif y.ndim <= 2:
        result = xp.matmul(x, y)
    else:
        result = xp.tensordot(x, y, axes=((x.ndim - 1,), (y.ndim - 2,)))
    return into(out, result, "dot")


_LETTERS = string.ascii_letters


def _einsum_parse(subscripts: str, operands: list[Array]) -> tuple[list[str], str]:
    """Each operand's labels and the output's, with `...` expanded to letters of their own."""
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum(): {len(terms)} operand subscripts for {len(operands)} "
                         "operands")
    for char in subscripts:
        if char not in _LETTERS and char not in ".,->":
            raise ValueError(f"einsum(): invalid subscript {char!r} (letters only)")
    used = set(inputs) & set(_LETTERS)
    spare = [c for c in _LETTERS if c not in used]
    ellipsis_ndim = 0
    for term, x in zip(terms, operands):
        if "..." in term:
            ellipsis_ndim = builtins.max(ellipsis_ndim, x.ndim - (len(term) - 3))
    if ellipsis_ndim > len(spare):
        raise ValueError("einsum(): too many dimensions for the subscripts")
    broadcast = "".join(spare[:ellipsis_ndim])
    labels = []
    for term, x in zip(terms, operands):
        if term.count("...") > 1 or term.replace("...", "").count(".") or \
                ("..." not in term and len(term) != x.ndim) or \
                ("..." in term and len(term) - 3 > x.ndim):
            raise ValueError(f"einsum(): subscripts {term!r} do not match an operand of "
                             f"{x.ndim} dimensions")
        if "..." in term:
            n = x.ndim - (len(term) - 3)
            term = term.replace("...", broadcast[ellipsis_ndim - n:] if n else "")
        labels.append(term)
    if arrow:
        if output.count("...") > 1 or output.replace("...", "").count("."):
            raise ValueError(f"einsum(): invalid output subscripts {output!r}")
        output = output.replace("...", broadcast)
        if len(set(output)) != len(output):
            raise ValueError(f"einsum(): output subscripts {output!r} repeat a label")
        for c in output:
            if not any(c in term for term in labels):
                raise ValueError(f"einsum(): output label {c!r} is in no operand")
    else:
        counts = {c: builtins.sum(term.count(c) for term in labels) for c in "".join(labels)}
        output = broadcast + "".join(sorted((c for c, n in counts.items() if n == 1
                                             and c not in broadcast), key=_LETTERS.index))
    return labels, output


def _einsum_diagonal(x: Array, labels: str) -> tuple[Array, str]:
    """x with repeated labels taken along their diagonal (a view), each label once."""
    while len(set(labels)) != len(labels):
        c = next(c for c in labels if labels.count(c) > 1)
        i = labels.index(c)
        j = labels.index(c, i + 1)
        if x.shape[i] != x.shape[j]:
            raise ValueError(f"einsum(): label {c!r} repeated with sizes {x.shape[i]} and "
                             f"{x.shape[j]}")
        shape = [n for k, n in enumerate(x.shape) if k != j]
        strides = [s for k, s in enumerate(x._strides) if k != j]
        strides[i] = x._strides[i] + x._strides[j]
        x = x._view(x, tuple(shape), tuple(strides), x._offset)
        labels = labels[:j] + labels[j + 1:]
    return x, labels


def _einsum_sum(x: Array, labels: str, drop: set[str]) -> tuple[Array, str]:
    """x summed over the labels in `drop`, in its own dtype (bool: whether any is true)."""
    axes = tuple(i for i, c in enumerate(labels) if c in drop)
    if not axes:
        return x, labels
    if x.dtype is dt.bool:
        x = xp.any(x, axis=axes)
    else:
        x = xp.sum(x, axis=axes, dtype=x.dtype)
    return x, "".join(c for c in labels if c not in drop)


def _einsum_pair(x: Array, xl: str, y: Array, yl: str, keep: set[str],
                 sizes: dict[str, int]) -> tuple[Array, str]:
    """The product of two operands summed over their shared labels that are not in `keep`, as a
    batched matrix product."""
    shared = [c for c in xl if c in yl]
    batch = [c for c in shared if c in keep]
    contract = [c for c in shared if c not in keep]
    x_free = [c for c in xl if c not in yl]
    y_free = [c for c in yl if c not in xl]
    # broadcast size-1 axes of shared labels to the other operand's size
    x = xp.broadcast_to(x, tuple(sizes[c] if c in yl else n for c, n in zip(xl, x.shape)))
    y = xp.broadcast_to(y, tuple(sizes[c] if c in xl else n for c, n in zip(yl, y.shape)))
    x = xp.permute_dims(x, tuple(xl.index(c) for c in (*batch, *x_free, *contract)))
    y = xp.permute_dims(y, tuple(yl.index(c) for c in (*batch, *contract, *y_free)))
    nb, nx, nc, ny = (math.prod(sizes[c] for c in group)
                      for group in (batch, x_free, contract, y_free))
    product = xp.matmul(xp.reshape(x, (nb, nx, nc)), xp.reshape(y, (nb, nc, ny)))
    labels = "".join((*batch, *x_free, *y_free))
    return xp.reshape(product, tuple(sizes[c] for c in labels)), labels


@numpy_only
def einsum(*operands: Any, out: Any = None, dtype: Any = None, order: str = "K",
           casting: str = "safe", optimize: Any = False) -> Array:
    """numpy's `einsum`: Einstein summation, in the subscript form
    (`einsum("ij,jk->ik", a, b)`) or the interleaved one (`einsum(a, [0, 1], b, [1, 2])`), with
    `...` for broadcast dimensions and repeated labels for diagonals. Computed left to right as
    diagonal views, sums and batched matrix products (`optimize` is accepted and changes
    nothing, nor does `order`); sums of floating-point values round as those functions do, not
    always as numpy's einsum."""
    if not operands:
        raise ValueError("einsum(): no operands")
    if isinstance(operands[0], str):
        subscripts, arrays = operands[0], list(operands[1:])
    else:
        subscripts, arrays = _interleaved(list(operands))
    xs = as_arrays(*arrays)
    if dtype is not None:
        xs = cast_all(xs, dtype, casting, "einsum")
    elif len(xs) > 1:
        common = xp.result_type(*xs)
        xs = [xp.astype(x, common) for x in xs]
    labels, output = _einsum_parse(subscripts, xs)
    sizes: dict[str, int] = {}
    terms = []
    for x, term in zip(xs, labels):
        x, term = _einsum_diagonal(x, term)
        for c, n in zip(term, x.shape):
            if sizes.get(c, 1) != 1 and n not in (1, sizes[c]):
                raise ValueError(f"einsum(): label {c!r} has sizes {sizes[c]} and {n}")
            if n != 1 or c not in sizes:
                sizes[c] = n
        terms.append((x, term))
    # sum away each operand's labels that nothing else needs
    for k, (x, term) in enumerate(terms):
        elsewhere = set(output).union(*(t for j, (_, t) in enumerate(terms) if j != k))
        terms[k] = _einsum_sum(x, term, {c for c in term if c not in elsewhere})
    x, term = terms[0]
    for k in range(1, len(terms)):
        y, yterm = terms[k]
        keep = set(output).union(*(t for _, t in terms[k + 1:]))
        x, term = _einsum_pair(x, term, y, yterm, keep, sizes)
    x, term = _einsum_sum(x, term, {c for c in term if c not in output})
    x = xp.permute_dims(x, tuple(term.index(c) for c in output))
    return into(out, xp.broadcast_to(x, tuple(sizes[c] for c in output)), "einsum")


def _interleaved(items: list[Any]) -> tuple[str, list[Any]]:
    """numpy's interleaved einsum arguments (op, sublist, op, sublist, ..., [output sublist]) as
    subscripts and operands."""
    def letters(sublist: Any) -> str:
        out = []
        for v in sublist:
            if v is Ellipsis:
                out.append("...")
            else:
                v = operator.index(v)
                if not 0 <= v < len(_LETTERS):
                    raise ValueError(f"einsum(): sublist label {v} is not in [0, 52)")
                out.append(_LETTERS[v])
        return "".join(out)
    arrays = items[0::2][:len(items) // 2]
    terms = [letters(s) for s in items[1::2]]
    output = letters(items[-1]) if len(items) % 2 else None
    return ",".join(terms) + ("" if output is None else "->" + output), arrays


# -- padding ---------------------------------------------------------------------------------------


def _pairs(value: Any, ndim: int, name: str) -> list[tuple[Any, Any]]:
    """numpy's per-axis (before, after) pairs from a scalar, a pair or one pair per axis."""
    if type(value) is Array:
        value = np.asarray(value)
    a = np.asarray(value, dtype=object)
    if a.ndim == 0:
        return [(value, value)] * ndim
    if a.ndim == 1 and a.shape[0] in (1, 2):
        return [(a[0], a[-1])] * ndim
    if a.shape == (1, 2):
        return [(a[0, 0], a[0, 1])] * ndim
    if a.shape == (ndim, 1):
        return [(a[i, 0], a[i, 0]) for i in range(ndim)]
    if a.shape == (ndim, 2):
        return [(a[i, 0], a[i, 1]) for i in range(ndim)]
    raise ValueError(f"pad(): {name} of shape {a.shape} does not fit an array of {ndim} "
                     "dimensions")


def _at(x: Array, axis: int, start: int | None, stop: int | None, step: int | None = None
        ) -> Array:
    return x[(slice(None),) * axis + (slice(start, stop, step),)]


def _filled(x: Array, axis: int, width: int, value: Any) -> Array:
    shape = list(x.shape)
    shape[axis] = width
    if type(value) is Array:
        return xp.broadcast_to(xp.astype(value, x.dtype), tuple(shape))
    return xp.full(tuple(shape), value, dtype=x.dtype, device=x.device)


def _cast_value(value: Any, dtype: dt.DType) -> Any:
    """A pad value as numpy's unsafe cast into `dtype` would store it (as a 0-D array)."""
    return xp.asarray(np.asarray(value).astype(dtype.numpy))


def _reflect(x: Array, axis: int, before: int, after: int, odd: builtins.bool,
             include_edge: builtins.bool) -> Array:
    """numpy's reflect/symmetric padding of one axis, chunk by chunk as numpy makes it."""
    period = x.shape[axis]
    cur = x
    while before > 0 or after > 0:
        length = cur.shape[axis]
        if include_edge:
            old = length // period * period
            edge = 1
        else:
            old = (length - 1) // (period - 1) * (period - 1) + 1 - 1
            edge = 0
        parts = []
        if before > 0:
            n = builtins.min(old, before)
            chunk = xp.flip(_at(cur, axis, 1 - edge, n - edge + 1), axis=axis)
            if odd:
                chunk = 2 * _at(cur, axis, 0, 1) - chunk
            parts.append(chunk)
            before -= n
        parts.append(cur)
        if after > 0:
            n = builtins.min(old, after)
            chunk = xp.flip(_at(cur, axis, length - n - 1 + edge, length - 1 + edge), axis=axis)
            if odd:
                chunk = 2 * _at(cur, axis, length - 1, length) - chunk
            parts.append(chunk)
            after -= n
        cur = xp.concat(parts, axis=axis) if len(parts) > 1 else cur
    return cur


def _stat(x: Array, axis: int, length: Any, side: str, mode: str) -> Array:
    """The statistic `mode` of the first (or last) `length` elements along `axis`, as numpy's
    pad takes it (rounded back for integer dtypes)."""
    n = x.shape[axis]
    length = n if length is None else operator.index(length)
    if length < 0:
        raise ValueError("pad(): stat_length must be non-negative")
    length = builtins.min(builtins.max(length, 1), n)
    part = _at(x, axis, 0, length) if side == "before" else _at(x, axis, n - length, n)
    if mode == "maximum":
        return xp.max(part, axis=axis, keepdims=True)
    if mode == "minimum":
        return xp.min(part, axis=axis, keepdims=True)
    from ._numpy_statistics import _median
    value = xp.mean(part, axis=axis, keepdims=True) if mode == "mean" else \
        _median(part, axis, True)
    if x.dtype in dt.INTEGER or x.dtype is dt.bool:
        value = xp.astype(xp.round(value), x.dtype)
    return xp.astype(value, x.dtype)


def _ramp(x: Array, axis: int, width: int, end: Any, side: str) -> Array:
    """numpy's linear ramp of `width` values from `end` towards x's edge (the edge excluded)."""
    n = x.shape[axis]
    edge = _at(x, axis, 0, 1) if side == "before" else _at(x, axis, n - 1, n)
    edge = xp.squeeze(edge, axis=axis)
    start = xp.asarray(end, device=x.device)
    work = xp.result_type(start.dtype if type(end) is Array else end, x.dtype, float(width))
    if work not in dt.FLOATING:
        work = dt.float64
    y = _spaced(start, edge, width, False, axis, work)
    if x.dtype in dt.INTEGER:
        y = xp.floor(y)
    y = xp.astype(y, x.dtype)
    return y if side == "before" else xp.flip(y, axis=axis)


_MODES = ("constant", "edge", "linear_ramp", "maximum", "mean", "median", "minimum", "reflect",
          "symmetric", "wrap", "empty")


@numpy_only
def pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Array:
    """numpy's `pad` with its modes "constant" (`constant_values`), "edge", "linear_ramp"
    (`end_values`), "maximum", "minimum", "mean", "median" (`stat_length`), "reflect",
    "symmetric" (`reflect_type` "even" or "odd"), "wrap" and "empty" (zeros here). A function as
    `mode` is numpy's own protocol of writing into the array: not supported (TypeError)."""
    x = as_array(array)
    if callable(mode) or mode not in _MODES:
        raise (TypeError if callable(mode) else ValueError)(
            f"pad(): mode {mode!r} is not supported; use one of {', '.join(_MODES)}")
    allowed = {"constant": {"constant_values"}, "linear_ramp": {"end_values"},
               "maximum": {"stat_length"}, "minimum": {"stat_length"}, "mean": {"stat_length"},
               "median": {"stat_length"}, "reflect": {"reflect_type"},
               "symmetric": {"reflect_type"}}.get(mode, set())
    if set(kwargs) - allowed:
        raise ValueError(f"pad(): unsupported keyword arguments for mode {mode!r}: "
                         f"{sorted(set(kwargs) - allowed)}")
    widths = [(operator.index(b), operator.index(a))
              for b, a in _pairs(np.asarray(pad_width).round().astype(np.intp)
                                 if not isinstance(pad_width, int) else pad_width, x.ndim,
                                 "pad_width")]
    if any(b < 0 or a < 0 for b, a in widths):
        raise ValueError("index can't contain negative values")
    if mode not in ("constant", "empty"):
        for axis, (b, a) in enumerate(widths):
            if x.shape[axis] == 0 and (b or a):
                raise ValueError(f"can't extend empty axis {axis} using modes other than "
                                 "'constant' or 'empty'")
    values = _pairs(kwargs.get("constant_values" if mode == "constant" else "end_values", 0),
                    x.ndim, "values")
    stats = _pairs(kwargs.get("stat_length"), x.ndim, "stat_length")
    odd = kwargs.get("reflect_type", "even") == "odd"
    if kwargs.get("reflect_type", "even") not in ("even", "odd"):
        raise ValueError("pad(): reflect_type must be 'even' or 'odd'")
    for axis, (before, after) in enumerate(widths):
        if not before and not after:
            continue
        n = x.shape[axis]
        if mode in ("constant", "empty"):
            low, high = values[axis] if mode == "constant" else (0, 0)
            x = xp.concat([_filled(x, axis, before, _cast_value(low, x.dtype)), x,
                           _filled(x, axis, after, _cast_value(high, x.dtype))], axis=axis)
        elif mode == "edge" or (mode == "reflect" and n == 1):
            x = xp.concat([_filled(x, axis, before, _at(x, axis, 0, 1)), x,
                           _filled(x, axis, after, _at(x, axis, n - 1, n))], axis=axis)
        elif mode == "wrap":
            index = xp.arange(-before, n + after, device=x.device) % n
            x = xp.take(x, index, axis=axis)
        elif mode in ("reflect", "symmetric"):
            x = _reflect(x, axis, before, after, odd, mode == "symmetric")
        elif mode == "linear_ramp":
            low, high = values[axis]
            x = xp.concat([_ramp(x, axis, before, low, "before"), x,
                           _ramp(x, axis, after, high, "after")], axis=axis)
        else:
            low, high = stats[axis]
            x = xp.concat([_filled(x, axis, before, _stat(x, axis, low, "before", mode)), x,
                           _filled(x, axis, after, _stat(x, axis, high, "after", mode))],
                          axis=axis)
    return x if x is not as_array(array) else xp.asarray(x, copy=True)


# -- interpolation ---------------------------------------------------------------------------------


@numpy_only
def interp(x: Any, xp_: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Array:
    """numpy's `interp`: the piecewise-linear interpolant through (`xp_`, `fp`) at `x`, in float64
    (complex128 for complex `fp`); `left`/`right` outside (default: the end values); `period`
    for periodic data. `xp_` must be increasing (not checked, as in numpy)."""
    a, b, f = as_arrays(x, xp_, fp)
    if b.ndim != 1 or f.ndim != 1:
        raise ValueError("interp(): xp and fp must be 1-D sequences")
    if b.shape[0] != f.shape[0]:
        raise ValueError("fp and xp are not of the same length.")
    if b.shape[0] == 0:
        raise ValueError("array of sample points is empty")
    work = dt.complex128 if f.dtype in dt.COMPLEX_FLOATING else dt.float64
    shape = a.shape
    a = xp.reshape(xp.astype(a, dt.float64), (-1,))
    b, f = xp.astype(b, dt.float64), xp.astype(f, work)
    return xp.reshape(_interp(a, b, f, left, right, period, work), shape)


def _interp(a: Array, b: Array, f: Array, left: Any, right: Any, period: Any,
            work: dt.DType) -> Array:
    if period is not None:
        if period == 0:
            raise ValueError("period must be a non-zero value")
        period = builtins.abs(period)
        left = right = None
        a, b = a % period, b % period
        order = xp.argsort(b)
        b, f = xp.take(b, order), xp.take(f, order)
        b = xp.concat([b[-1:] - period, b, b[0:1] + period])
        f = xp.concat([f[-1:], f, f[0:1]])
    n = b.shape[0]
    last = f[n - 1]
    low = f[0] if left is None else xp.astype(as_array(left, a.device), work)
    high = last if right is None else xp.astype(as_array(right, a.device), work)
    if n == 1:  # numpy's case of one sample point (a NaN x gives its value)
        return xp.where(a < b[0], low, xp.where(a > b[0], high, f[0]))
    j = xp.searchsorted(b, a, side="right") - 1
    lo = xp.clip(j, 0, n - 2)
    x0, x1 = xp.take(b, lo), xp.take(b, lo + 1)
    y0, y1 = xp.take(f, lo), xp.take(f, lo + 1)
    if work is dt.complex128:  # numpy's complex loop: part by part, times 1 / dx
        inverse = 1.0 / (x1 - x0)
        result = _complex(*(_line((p1 - p0) * inverse, a, x0, x1, p0, p1)
                            for p0, p1 in ((xp.real(y0), xp.real(y1)),
                                           (xp.imag(y0), xp.imag(y1)))))
    else:
        result = _line((y1 - y0) / (x1 - x0), a, x0, x1, y0, y1)
    result = xp.where(x0 == a, y0, result)  # on a sample point: its value exactly
    result = xp.where(j >= n - 1, last, result)
    result = xp.where(a > b[n - 1], high, result)
    result = xp.where(a < b[0], low, result)
    return xp.where(xp.isnan(a), xp.astype(a, work), result)


def _line(slope: Array, a: Array, x0: Array, x1: Array, y0: Array, y1: Array) -> Array:
    """numpy's interpolation between (x0, y0) and (x1, y1) at a: from the left point, else (NaN)
    from the right one, else (NaN, a flat segment) the value."""
    result = slope * (a - x0) + y0
    result = xp.where(xp.isnan(result), slope * (a - x1) + y1, result)
    return xp.where(xp.logical_and(xp.isnan(result), y0 == y1), y0, result)


def _complex(real: Array, imag: Array) -> Array:
    """real + imag * 1j with both parts kept exactly (NaNs and infinities included)."""
    out = xp.zeros(real.shape, dtype=dt.complex128, device=real.device)
    re_view, im_view = _views.parts(out)  # real views of the complex memory
    re_view[...] = real
    im_view[...] = imag
    return out


# -- linear algebra --------------------------------------------------------------------------------


@numpy_only
def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: builtins.bool = False) -> Array:
    """numpy's `linalg.norm`: without `axis`, the 2-norm of the flattened array (`ord=None`) or,
    for 1-D and 2-D input, the vector or matrix norm `ord`; an int `axis` gives vector norms, a
    pair of axes matrix norms ("fro", "nuc", inf, -inf, 1, -1, 2, -2). Integer input is
    computed in float64."""
    a = as_array(x)
    if a.dtype not in dt.FLOATING:
        a = xp.astype(a, dt.float64)
    if axis is None:
        if ord is not None and a.ndim not in (1, 2):
            raise ValueError("Improper number of dimensions to norm.")
        if ord is None or a.ndim == 1:
            if isinstance(ord, str):
                raise ValueError(f"Invalid norm order '{ord}' for vectors")
            result = xp.linalg.vector_norm(a, ord=2 if ord is None else ord)
            return xp.reshape(result, (1,) * a.ndim) if keepdims else result
        axes: tuple[int, ...] = (0, 1)
    else:
        axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
        axes = tuple(operator.index(v) for v in axes)
    if len(axes) == 1:
        if isinstance(ord, str):
            raise ValueError(f"Invalid norm order '{ord}' for vectors")
        return xp.linalg.vector_norm(a, axis=axes[0], keepdims=keepdims,
                                     ord=2 if ord is None else ord)
    if len(axes) != 2:
        raise ValueError("Improper number of dimensions to norm.")
    first, second = (v % a.ndim for v in axes)
    if first == second:
        raise ValueError("Duplicate axes given.")
    rest = [i for i in range(a.ndim) if i not in (first, second)]
    result = xp.linalg.matrix_norm(xp.permute_dims(a, (*rest, first, second)),
                                   ord="fro" if ord is None else ord)
    if keepdims:
        result = xp.expand_dims(result, axis=tuple(sorted((first, second))))
    return result
