"""Creation functions (spec: "Creation Functions")."""

from __future__ import annotations

import builtins
import functools
import math
import numbers
import operator
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from . import _dtypes as dt
from . import _numpy_conversions as numpy_mode
from . import _views
from ._adapter import adapted
from ._array import Array
from ._checks import as_bool, as_copy, as_device, as_dtype, as_int, as_shape, check_array
from ._modes import UnspecifiedType
from ._ops import OPS
from ._version import sequence_result
from .backends.cpu.backend import fastpath
from .hal.device import Device, default_device
from .hal.hooks import observers

_ndarray = np.ndarray

__all__ = ["arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
           "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like"]

F = TypeVar("F", bound=Callable[..., Any])
# the CPU backend's compiled executor's common cases (None where it is not built)
_fresh: Callable[..., Array | None] | None = None if fastpath is None else fastpath.fresh
_arange: Callable[..., Array | None] | None = None if fastpath is None else fastpath.arange
_copied: Callable[..., Array | None] | None = None if fastpath is None else fastpath.copied
_DType, _FLOAT64, _INT64 = dt.DType, dt.float64, dt.int64
_NUMPY_MODE_ONLY = dt.NUMPY_MODE_ONLY  # (strict mode refuses them: `numpy_only`)

_SCALAR_DTYPE = {builtins.bool: dt.bool, int: dt.int64, float: dt.float64, complex: dt.complex128}


# Which dtypes a fill value of each Python kind may fill: bools and ints any (as numpy does), a
# float a floating dtype (numpy mode: also an integer or bool one where the float is a whole
# number), a complex a complex one (no fraction or imaginary part is dropped).
_FITS = {dt.bool: lambda d: True, dt.int64: lambda d: True,
         dt.float64: lambda d: d in dt.FLOATING, dt.complex128: lambda d: d in dt.COMPLEX_FLOATING}


_ARANGE_FITS = 2**60  # arange(n) below this spans less than 2**63 bytes of int64


def _optional_dtype(dtype: Any, function: str) -> dt.DType | None:
    return None if dtype is None else as_dtype(dtype, function)


def _scalar_dtype(value: Any, function: str) -> dt.DType:
    for kind, dtype in _SCALAR_DTYPE.items():
        if isinstance(value, kind):
            return dtype
    raise TypeError(f"{function}(): expected a Python bool, int, float or complex, "
                    f"got {type(value).__name__}")


@adapted
def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None,
            copy: builtins.bool | None = None) -> Array:
    """Convert `obj` to an array. Host data (numpy arrays, DLPack CPU tensors, nested sequences,
    buffer-protocol objects, whose format gives the dtype; bytes are uint8) is copied into device
    memory, except that a writable numpy array of an hxarray dtype becomes a CPU array sharing
    its memory (in about a microsecond, as np.asarray would; `copy=True` copies it), and that
    `copy=False` shares the memory of a numpy array, DLPack CPU tensor or writable buffer, or
    raises ValueError. numpy mode also takes numpy's positional `dtype`: `asarray(obj, float32)`."""
    if type(obj) is _ndarray and dtype is None and copy is None and device is None:
        target = default_device()  # the common case: share a numpy array's memory
        shared = (target._backend or target.backend).adopt(obj)
        if shared is not None and shared._dtype not in _NUMPY_MODE_ONLY:
            return shared
    if type(obj) is Array and dtype is None and device is None:  # the other common cases
        if copy is True:
            if _copied is not None and not observers:  # compiled, for a CPU array
                out = _copied(obj)
                if out is not None:
                    return out
            return obj._buffer.device.backend.copy(obj)
        if copy is None:
            return obj
    dtype = _optional_dtype(dtype, "asarray")
    if copy is not None and copy is not True and copy is not False:
        copy = as_copy(copy, "asarray")
    if dtype is not None and dtype not in dt.COMPLEX_FLOATING and dtype is not dt.bool:
        source = getattr(obj, "dtype", None)  # an hxarray or numpy dtype
        if source in dt.COMPLEX_FLOATING if type(source) is dt.DType else \
                getattr(source, "kind", None) == "c":
            raise TypeError(f"asarray(): converting complex data to {dtype.name} would discard "
                            "the imaginary part; take the real or imaginary part first")
    if type(obj) is Array:
        target = obj._buffer.device if device is None else as_device(device, "asarray")
        moves = target is not obj._buffer.device
        casts = dtype is not None and dtype is not obj._dtype
        if copy is False and (moves or casts):
            raise ValueError("asarray(copy=False): a copy is needed to change "
                             f"{'device' if moves else 'dtype'}")
        result = obj.to_device(target) if moves else obj
        if casts:
            return target.backend.copy(result, dtype)
        if copy and not moves:
            return target.backend.copy(result)
        return result
    target = as_device(device, "asarray")
    host = _numpy_mode_only(_to_host(obj, dtype, copy), "asarray")
    backend = target.backend
    if copy is False or copy is None and isinstance(obj, _ndarray):
        shared = backend.adopt(host)
        if shared is not None:
            return shared
    if copy is False:
        raise ValueError(f"asarray(copy=False): data in host memory cannot be used on "
                         f"{target} without a copy")
    return backend.from_host(host, target)


def _to_host(obj: Any, dtype: dt.DType | None, copy: builtins.bool | None) -> np.ndarray:
    """`obj` as a numpy array of an hxarray dtype: with `copy=False` a view of obj's own memory
    (ValueError if there is none), otherwise any conversion numpy makes."""
    if type(obj) is np.ndarray and dtype is None and copy is not False and \
            obj.dtype in dt.FROM_NUMPY:
        return obj  # the common case, which needs none of the checks below
    if isinstance(obj, str) or obj is None:
        raise TypeError(f"asarray(): cannot make an array from {type(obj).__name__}")
    check_unmasked(obj, "asarray")
    if copy is False:
        return _shared_host(obj, dtype)
    if isinstance(obj, (bytes, bytearray)):
        obj = np.frombuffer(obj, dtype=np.uint8)  # numpy would make a one-element bytes array
    elif isinstance(obj, (builtins.bool, int, float, complex)) and dtype is None:
        dtype = _scalar_dtype(obj, "asarray")
    try:
        host = np.asarray(obj, dtype=None if dtype is None else dtype.numpy)
    except OverflowError as exc:
        raise OverflowError(f"asarray(): {exc}; Python ints must fit the dtype") from None
    except (TypeError, ValueError) as exc:  # numpy's conversion errors, named as asarray's
        raise (TypeError if isinstance(exc, TypeError) else ValueError)(
            f"asarray(): cannot convert {type(obj).__name__} to an array: {exc}") from None
    if dtype is None and host.dtype.kind in "uO" and _has_big_int(obj):
        # numpy stores such ints as uint64 or objects; the spec gives them the default int64
        raise OverflowError("asarray(): Python ints must fit in int64, the default integer "
                            "dtype; pass dtype=uint64 for larger ones")
    if host.dtype not in dt.FROM_NUMPY:
        if host.dtype.kind in "iufcb" and not host.dtype.isnative:
            host = host.astype(host.dtype.newbyteorder("="))
        else:  # never a silent change of dtype (longdouble, bfloat16, strings, objects, ...)
            raise TypeError(f"asarray(): cannot make an array from data of numpy dtype "
                            f"{host.dtype} (from {type(obj).__name__}): hxarray has no such "
                            "dtype; convert it with .astype() first")
    return host


def _numpy_mode_only(host: np.ndarray, function: str) -> np.ndarray:
    """`host`, whose dtype is an hxarray dtype, unless it is one strict mode refuses (float16)."""
    dt.numpy_only(dt.FROM_NUMPY[host.dtype], function)
    return host


def check_unmasked(obj: Any, function: str) -> None:
    """ValueError for a numpy masked array with a masked element: an hxarray array carries no
    mask, and the data under a masked element is no value (numpy's np.asarray would pass it on
    as one)."""
    masked = sys.modules.get("numpy.ma")  # not imported: obj is no masked array
    if masked is not None and isinstance(obj, masked.MaskedArray) and \
            obj.dtype.names is None and masked.is_masked(obj):  # (structured: refused later)
        raise ValueError(f"{function}(): a numpy masked array with masked elements cannot "
                         "become an hxarray array, which has no mask; pass a.filled(value) "
                         "(masked elements replaced) or a.data (the data under them)")


def _has_big_int(obj: Any) -> builtins.bool:
    """Whether nested lists and tuples `obj` hold a Python int beyond int64."""
    if type(obj) is int:
        return not -(2**63) <= obj < 2**63
    return isinstance(obj, (list, tuple)) and any(_has_big_int(v) for v in obj)


def _shared_host(obj: Any, dtype: dt.DType | None) -> np.ndarray:
    """The memory of a numpy array, DLPack producer or buffer-protocol object as a numpy view,
    for `asarray(copy=False)`. Read-only memory is refused, since hxarray arrays are writable."""
    if isinstance(obj, np.ndarray):
        host = obj
    elif hasattr(obj, "__dlpack__"):
        host = np.from_dlpack(obj)
    else:
        try:
            host = np.asarray(memoryview(obj))
        except TypeError:
            raise ValueError("asarray(copy=False): only numpy arrays, DLPack producers and "
                             f"buffer-protocol objects can be used without a copy, got "
                             f"{type(obj).__name__}") from None
    if dtype is not None and host.dtype != dtype.numpy:
        raise ValueError(f"asarray(copy=False): a copy is needed to change the dtype from "
                         f"{host.dtype} to {dtype.name}")
    if host.dtype not in dt.FROM_NUMPY:
        raise ValueError(f"asarray(copy=False): numpy dtype {host.dtype} has no hxarray "
                         "equivalent without a conversion")
    if not host.flags.writeable:
        raise ValueError("asarray(copy=False): the memory is read-only and hxarray arrays are "
                         "writable; pass copy=None or copy=True")
    return host


def _filled(function: str, shape: Any, value: Any, dtype: Any, device: Any) -> Array:
    dtype = _optional_dtype(dtype, function) or dt.float64
    target = as_device(device, function)
    return target.backend.full(as_shape(shape, function), value, dtype, target)


def _allocated_first(value: Any) -> Callable[[F], F]:
    """Put the common call of `empty`/`zeros`/`ones` in front of the namespace function, where
    the CPU backend's compiled executor exists (`fastpath`): a plain shape (an int or a tuple
    of ints), an hxarray dtype or none, on the CPU, outside hooks and memory scopes, takes a fresh
    block straight from the CPU's caching allocator (`fastpath.fresh`), left as it is (`value`
    None), cleared with memset (0) or filled by numpy; any other call, and a shape, dtype or
    device the compiled check declines, runs the namespace function (`.fallback`), which judges
    it."""
    def front_of(general: F) -> F:
        if _fresh is None:
            return general

        clear, fill = value == 0, value is not None and value != 0

        def front(shape: Any, *numpy_positional: Any, dtype: Any = None,
                  device: Any = None) -> Array:
            # (type() and module-level names: what compiles to pointer comparisons)
            if not (observers or numpy_positional) and (dtype is None or type(dtype) is _DType
                                                         and dtype not in _NUMPY_MODE_ONLY):
                out = _fresh(shape, _FLOAT64 if dtype is None else dtype, device, clear)
                if out is not None:
                    if fill:
                        out._handle.fill(value)
                    return out
            return general(shape, *numpy_positional, dtype=dtype, device=device)

        functools.update_wrapper(front, general)
        front.fallback = general  # type: ignore[attr-defined]
        # the hooks' operation point is the namespace function's (`_observed.operation`)
        front.observed_as = lambda point: front_of(general.observed_as(point))  # type: ignore
        return front  # type: ignore[return-value]
    return front_of


@_allocated_first(None)
@adapted
def empty(shape: Any, *, dtype: Any = None, device: Any = None) -> Array:
    """An uninitialised array (its memory may hold values of an earlier array)."""
    dtype = _optional_dtype(dtype, "empty") or dt.float64
    target = as_device(device, "empty")
    return target.backend.empty(as_shape(shape, "empty"), dtype, target)


@_allocated_first(0)
@adapted
def zeros(shape: Any, *, dtype: Any = None, device: Any = None) -> Array:
    """An array of `shape` filled with zeros (spec: creation_functions/zeros)."""
    return _filled("zeros", shape, 0, dtype, device)


@_allocated_first(1)
@adapted
def ones(shape: Any, *, dtype: Any = None, device: Any = None) -> Array:
    """An array of `shape` filled with ones (spec: creation_functions/ones)."""
    return _filled("ones", shape, 1, dtype, device)


@adapted
def full(shape: Any, fill_value: builtins.bool | int | float | complex, *, dtype: Any = None,
         device: Any = None) -> Array:
    """An array of `shape` filled with `fill_value` (spec: creation_functions/full)."""
    return _full("full", shape, fill_value, dtype, device)


def _full(function: str, shape: Any, fill_value: Any, dtype: Any, device: Any) -> Array:
    """full() and full_like(): the fill value a Python scalar (or a 0-D array, or a numpy
    scalar) of a kind the dtype holds."""
    if type(fill_value) is Array:
        if fill_value.ndim != 0:
            raise ValueError(f"{function}(): fill_value must be a scalar or a 0-D array")
        fill_value = fill_value._host()[()].item()
    elif isinstance(fill_value, np.generic):
        fill_value = fill_value.item()
    kind = _scalar_dtype(fill_value, function)  # (TypeError for a str, None, ...)
    dtype = _optional_dtype(dtype, function) or kind
    if not _FITS[kind](dtype):
        fill_value, kind = numpy_mode.fill_value(fill_value, kind, dtype, TypeError(
            f"{function}(): a {type(fill_value).__name__} fill_value does not fit dtype "
            f"{dtype.name}"), function)
    if dtype in dt.INTEGER and isinstance(fill_value, int):
        low, high = dt.INTEGER_BOUNDS[dtype]
        if not low <= fill_value <= high:
            raise OverflowError(f"{function}(): fill_value {fill_value} is out of bounds for "
                                f"{dtype.name}")
    elif dtype is dt.bool:
        fill_value = builtins.bool(fill_value)
    elif dtype in dt.FLOATING and type(fill_value) is int:
        try:  # now, not in a device's queued work
            fill_value = float(fill_value)
        except OverflowError:
            raise OverflowError(f"{function}(): fill_value of {fill_value.bit_length()} bits is "
                                f"too large for {dtype.name}") from None
    target = as_device(device, function)
    return target.backend.full(as_shape(shape, function), fill_value, dtype, target)


def _like(x: Any, dtype: Any, device: Any, function: str) -> tuple[tuple[int, ...], dt.DType,
                                                                     Device]:
    check_array(x, function)
    dtype = _optional_dtype(dtype, function) or x._dtype
    target = x._buffer.device if device is None else as_device(device, function)
    return x._shape, dtype, target


@adapted
def empty_like(x: Array, /, *, dtype: Any = None, device: Any = None) -> Array:
    """An uninitialised array of x's shape, with x's dtype and device unless given
    (spec: creation_functions/empty_like)."""
    shape, dtype, target = _like(x, dtype, device, "empty_like")
    return target.backend.empty(shape, dtype, target)


@adapted
def zeros_like(x: Array, /, *, dtype: Any = None, device: Any = None) -> Array:
    """An array of zeros of x's shape, with x's dtype and device unless given
    (spec: creation_functions/zeros_like)."""
    shape, dtype, target = _like(x, dtype, device, "zeros_like")
    return target.backend.full(shape, 0, dtype, target)


@adapted
def ones_like(x: Array, /, *, dtype: Any = None, device: Any = None) -> Array:
    """An array of ones of x's shape, with x's dtype and device unless given
    (spec: creation_functions/ones_like)."""
    shape, dtype, target = _like(x, dtype, device, "ones_like")
    return target.backend.full(shape, 1, dtype, target)


@adapted
def full_like(x: Array, /, fill_value: builtins.bool | int | float | complex, *,
              dtype: Any = None, device: Any = None) -> Array:
    """An array of x's shape filled with `fill_value`, with x's dtype and device unless given
    (spec: creation_functions/full_like)."""
    shape, dtype, target = _like(x, dtype, device, "full_like")
    return _full("full_like", shape, fill_value, dtype, target)


def _number(value: Any, function: str, name: str, allow_complex: builtins.bool = False,
            allow_array: builtins.bool = False) -> Any:
    """`value` as a Python int (anything with `__index__`), float or, if allowed, complex; a
    0-D array as its Python scalar where `allow_array` (elsewhere a case the standard leaves
    open: Unspecified)."""
    if type(value) is int or type(value) is float:
        return value
    if type(value) is Array and value.ndim == 0:
        if allow_array:
            return value._host()[()].item()
        raise UnspecifiedType("{}(): {} must be an int or a float, got a 0-D array", function,
                              name)
    try:
        return operator.index(value)
    except TypeError:
        pass
    if isinstance(value, numbers.Real):
        return float(value)
    if allow_complex and isinstance(value, numbers.Complex):
        return complex(value)
    kinds = "an int, a float or a complex" if allow_complex else "an int or a float"
    raise TypeError(f"{function}(): {name} must be {kinds}, got {type(value).__name__}")


@adapted
def arange(start: int | float, /, stop: int | float | None = None, step: int | float = 1, *,
           dtype: Any = None, device: Any = None) -> Array:
    """Evenly spaced values from `start` up to, not including, `stop`
    (spec: creation_functions/arange)."""
    if stop is None:
        if (type(start) is int or type(start) is float) and 0 < start < _ARANGE_FITS and \
                type(step) is int and step == 1 and dtype is None and device is None:
            # the common cases, `arange(n)` and `arange(x)` (a positive finite float), which need
            # no other check
            integers = type(start) is int
            dtype = _INT64 if integers else _FLOAT64
            if _arange is not None and not observers:  # compiled, for small n on the CPU
                # (the float case's start and step as floats: the same values, converted once;
                # None: the default device)
                out = _arange(0, 1, start, dtype, None) if integers else \
                    _arange(0.0, 1.0, math.ceil(start), dtype, None)
                if out is not None:
                    return out
            target = default_device()
            return (target._backend or target.backend).arange(0, start, 1, dtype, target)
        start, stop = 0, start
    integers = type(start) is type(stop) is type(step) is int
    if not integers:
        start, stop, step = (_number(start, "arange", "start"), _number(stop, "arange", "stop"),
                             _number(step, "arange", "step"))
        integers = type(start) is type(stop) is type(step) is int
    if step == 0:
        raise ValueError("arange(): step must not be zero")
    dtype = dt.int64 if dtype is None and integers else \
        _optional_dtype(dtype, "arange") or (dt.int64 if integers else dt.float64)
    length: float
    if integers:  # (all three are ints, which the class test does not tell type checkers)
        values = range(start, stop, step)  # type: ignore[arg-type]
        bounds = dt.INTEGER_BOUNDS.get(dtype)
        if bounds is not None and values and not (bounds[0] <= values[0] <= bounds[1] and
                                                  bounds[0] <= values[-1] <= bounds[1]):
            raise OverflowError(f"arange(): the values from {values[0]} to {values[-1]} do not "
                                f"fit {dtype.name} ({bounds[0]} to {bounds[1]})")
        length = len(values)
    else:
        length = (stop - start) / step
        if length != length:
            raise ValueError(f"arange(): no length for start={start}, stop={stop}, step={step}")
    if length * dtype.itemsize > 2**63 - 1:  # (also an infinite length)
        raise ValueError(f"arange(): {length} values of {dtype.name} would span more than "
                         "2**63 - 1 bytes")
    target = default_device() if device is None else as_device(device, "arange")
    if length <= 0:
        return target.backend.empty((0,), dtype, target)
    if _arange is not None and not observers:  # compiled, for small lengths on the CPU
        out = _arange(start, step, length if integers else math.ceil(length), dtype, target)
        if out is not None:
            return out
    return target.backend.arange(start, stop, step, dtype, target)


@adapted
def linspace(start: int | float | complex, stop: int | float | complex, /, num: int, *,
             dtype: Any = None, device: Any = None, endpoint: builtins.bool = True) -> Array:
    """`num` evenly spaced values from `start` to `stop`, `stop` included unless
    `endpoint=False` (spec: creation_functions/linspace)."""
    if dtype is None and (type(start) is Array or type(stop) is Array):
        dtype = numpy_mode.linspace_dtype(start, stop)
    start = _number(start, "linspace", "start", allow_complex=True, allow_array=True)
    stop = _number(stop, "linspace", "stop", allow_complex=True, allow_array=True)
    num = as_int(num, "linspace", "num")
    endpoint = as_bool(endpoint, "linspace", "endpoint")
    if num < 0:
        raise ValueError(f"linspace(): num must be non-negative, got {num}")
    is_complex = isinstance(start, complex) or isinstance(stop, complex)
    dtype = _optional_dtype(dtype, "linspace") or (dt.complex128 if is_complex else dt.float64)
    if is_complex and dtype not in dt.COMPLEX_FLOATING:
        raise TypeError(f"linspace(): complex bounds need a complex dtype, got {dtype.name}")
    target = as_device(device, "linspace")
    return _spaced(start, stop, num, dtype, target, endpoint,
                   dt.complex128 if is_complex else dt.float64)


def _spaced(start: Any, stop: Any, num: int, dtype: dt.DType, device: Device,
            endpoint: builtins.bool, work: dt.DType) -> Array:
    """numpy's linspace, step for step, in the `work` dtype (so every device gives numpy's
    values): 0, 1, ... times the step (or divided by the count, then times the span, where the
    step underflows to 0), plus start; the last value is stop exactly; then cast."""
    backend = device.backend
    y = backend.arange(0, num, 1, work, device)
    div = num - 1 if endpoint else num
    with np.errstate(all="ignore"):
        delta = np.subtract(stop, start, dtype=work.numpy)
        step = delta / div if div > 0 else None
    if step is not None and step == 0:  # the step underflows: divide by the count first
        _in_place(backend, "divide", y, div)
    factor = delta if step is None or step == 0 else step
    _in_place(backend, "multiply", y, factor.item())
    _in_place(backend, "add", y, start)
    if endpoint and num > 1:
        backend.assign(_views.slice_axis(y, 0, num - 1, num), stop)
    if dtype in dt.INTEGER:
        _in_place(backend, "floor", y)
    return y if dtype is work else backend.copy(y, dtype)


def _in_place(backend: Any, name: str, y: Array, *scalars: Any) -> None:
    """y = name(y, *scalars) in y's dtype, through the backend's element-wise primitive."""
    op = OPS[name]
    backend.elementwise(op, (y, *scalars), op.signature(*(y._dtype,) * (1 + len(scalars))),
                        y._shape, out=y)



@adapted
def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None,
        device: Any = None) -> Array:
    """A 2-D array with ones on the k-th diagonal and zeros elsewhere
    (spec: creation_functions/eye)."""
    n_rows = as_int(n_rows, "eye", "n_rows")
    n_cols = n_rows if n_cols is None else as_int(n_cols, "eye", "n_cols")
    out = _filled("eye", (n_rows, n_cols), 0, dtype, device)
    diagonal = _views.diagonal(out, as_int(k, "eye", "k"))
    if diagonal.size:
        out._buffer.device.backend.assign(diagonal, 1)
    return out


def meshgrid(*arrays: Array, indexing: str = "xy") -> tuple[Array, ...] | list[Array]:
    """Copies, not views; a list under versions before 2025.12."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid(): indexing must be 'xy' or 'ij', got {indexing!r}")
    for a in arrays:
        check_array(a, "meshgrid", "each input")
        if a.ndim != 1:
            raise ValueError(f"meshgrid(): inputs must be 1-D, got shape {a._shape}")
    if not arrays:
        return sequence_result(())
    from ._checks import same_device

    same_device(arrays, "meshgrid")
    if len({a._dtype for a in arrays}) > 1:
        raise TypeError("meshgrid(): all inputs must have the same dtype")
    sizes = [a._shape[0] for a in arrays]
    if indexing == "xy" and len(arrays) > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    shape = tuple(sizes)
    outputs = []
    for i, a in enumerate(arrays):
        axis = i
        if indexing == "xy" and len(arrays) > 1 and i < 2:
            axis = 1 - i
        expanded = _views.view(a, tuple(n if j == axis else 1 for j, n in enumerate(shape)),
                               tuple(a._strides[0] if j == axis else 0 for j in range(len(shape))),
                               a._offset)
        outputs.append(a._buffer.device.backend.copy(_views.broadcast_to(expanded, shape)))
    return sequence_result(outputs)


def _triangle(name: str, x: Array, k: int) -> Array:
    """x where column - row <= k (tril) or >= k (triu) in the last two axes, else 0."""
    check_array(x, name)
    if x.ndim < 2:
        raise ValueError(f"{name}(): x must have at least 2 dimensions, got {x.ndim}")
    rows, cols = x._shape[-2:]
    k = builtins.max(builtins.min(as_int(k, name, "k"), cols), -rows)  # keeps it in int64
    device = x._buffer.device
    backend = device.backend
    row = _views.expand(backend.arange(0, rows, 1, dt.int64, device), (1,))
    col = _views.expand(backend.arange(0, cols, 1, dt.int64, device), (0,))
    subtract, where = OPS["subtract"], OPS["where"]
    compare = OPS["less_equal" if name == "tril" else "greater_equal"]
    offset = backend.elementwise(subtract, (col, row), subtract.signature(dt.int64, dt.int64),
                                 (rows, cols))
    keep = backend.elementwise(compare, (offset, k), compare.signature(dt.int64, dt.int64),
                               (rows, cols))
    zero = False if x._dtype is dt.bool else 0
    return backend.elementwise(where, (_views.broadcast_to(keep, x._shape), x, zero),
                               where.signature(dt.bool, x._dtype, x._dtype), x._shape)


def tril(x: Array, /, *, k: int = 0) -> Array:
    """x with the elements above its k-th diagonal set to zero (spec: creation_functions/tril)."""
    return _triangle("tril", x, k)


def triu(x: Array, /, *, k: int = 0) -> Array:
    """x with the elements below its k-th diagonal set to zero (spec: creation_functions/triu)."""
    return _triangle("triu", x, k)


def from_dlpack(x: Any, /, *, device: Any = None, copy: builtins.bool | None = None) -> Array:
    """An array sharing (or, with `copy=True`, another device or read-only memory, copying) the
    memory of any DLPack producer of host memory; without `device` it lands on the CPU."""
    copy = as_copy(copy, "from_dlpack")
    if type(x) is Array:
        return asarray(x, device=device, copy=copy)
    if not hasattr(x, "__dlpack__") or not hasattr(x, "__dlpack_device__"):
        raise TypeError(f"from_dlpack(): {type(x).__name__} does not implement __dlpack__ "
                        "and __dlpack_device__")
    check_unmasked(x, "from_dlpack")
    target = Device("cpu") if device is None else as_device(device, "from_dlpack")
    kind, _ = x.__dlpack_device__()
    if kind not in (1, 3):  # kDLCPU, kDLCUDAHost
        raise BufferError(f"from_dlpack(): producer memory on DLPack device type {kind} is not "
                          "host memory; this build imports host memory only")
    host = np.from_dlpack(x, copy=copy)
    if host.dtype in dt.FROM_NUMPY:
        _numpy_mode_only(host, "from_dlpack")
    shareable = host.flags.writeable and host.dtype in dt.FROM_NUMPY
    shared = target.backend.adopt(host) if copy is not True and shareable else None
    if shared is not None:
        return shared
    if copy is False:
        raise ValueError(f"from_dlpack(copy=False): this {host.dtype} "
                         f"{'read-only ' if not host.flags.writeable else ''}memory cannot be "
                         f"used on {target} without a copy")
    return target.backend.from_host(_to_host(host, None, True), target)
