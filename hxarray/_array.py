"""The Array object (spec: "Array object"): a strided view over a device's MemoryBuffer.

An array is (buffer, dtype, shape, strides, offset); strides and offset are in bytes. Basic
indexing and the view-producing manipulation functions build new arrays over the same buffer
without involving a backend. `_handle` caches the backend's native view of the array (a numpy
array on the CPU); device-neutral code never looks inside it.
"""

from __future__ import annotations

import builtins
import math
import operator
import pickle
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _dtypes as dt
from . import _views
from ._compiled import speedups
from ._modes import is_strict
from .hal.allocator import MemoryBuffer
from .hal.device import Device

__all__ = ["Array"]


if TYPE_CHECKING:  # the namespace installs these at import (`_array_methods.install`)
    from ._operators import ArrayOperators
else:
    ArrayOperators = object


# compiled (_array.pxd): the constructor of the speedups' array type, for fields checked here
new_array_object: Callable[..., Any]

MAX_DIMS = _MAX_DIMS = 64  # numpy's limit, and so the CPU backend's
_MAX_INDEX = 2**63 - 1
_FIXED = frozenset({"_buffer", "_dtype", "_shape", "_strides", "_offset", "_readonly"})


def _check_layout(dtype: Any, shape: Any, strides: Any, offset: Any) -> None:
    """Check what the fast path relies on: shape and strides tuples of ints (as many strides as
    dimensions, at most MAX_DIMS), dimensions that fit an index and whose non-zero product times
    the itemsize fits in 2**63 - 1 bytes (numpy's rule), strides and offset that fit a C ssize_t.
    (Compiled, `_array.pxd` gives the locals C types.)"""
    if type(shape) is not tuple or type(strides) is not tuple or type(offset) is not int:
        raise TypeError(f"an array's shape and strides are tuples of ints and its offset an int, "
                        f"got {type(shape).__name__}, {type(strides).__name__} and "
                        f"{type(offset).__name__}")
    dims, steps = shape, strides
    ndim = len(dims)
    if ndim > _MAX_DIMS:
        raise ValueError(f"an array would have {ndim} dimensions; hxarray supports at most "
                         f"{MAX_DIMS} (__array_namespace_info__().capabilities()['max "
                         "dimensions'])")
    if len(steps) != ndim:
        raise ValueError(f"{len(steps)} strides for {ndim} dimensions")
    count = 1
    big = False
    for i in range(ndim):
        n = dims[i]
        if type(n) is not int or type(steps[i]) is not int:
            raise TypeError("an array's shape and strides are tuples of ints")
        try:
            size = _ssize(n)
        except OverflowError:
            size = -1
        if size < 0:
            raise ValueError(f"dimension {i} of shape {shape} is negative" if n < 0 else
                             f"dimension {i} of shape {shape} does not fit in an index (at most "
                             "2**63 - 1)")
        if size > 1 and count > _MAX_INDEX // size:
            big = True
        elif size:
            count *= size
    if big or (count > _MAX_INDEX // 16 and count * dtype.itemsize > _MAX_INDEX):
        raise ValueError(f"an array of shape {shape} and itemsize {dtype.itemsize} would span "
                         "more than 2**63 - 1 bytes")
    for i in range(ndim):  # (after the span: its strides would not fit either)
        _ssize(steps[i])
    _ssize(offset)


def _ssize(value: int) -> int:
    """`value` if it fits a C ssize_t, else OverflowError (compiled, the call converts it)."""
    if not -_MAX_INDEX - 1 <= value <= _MAX_INDEX:
        raise OverflowError("Python int too large to convert to C ssize_t")
    return value


class _ArrayBase(ArrayOperators):
    """The pure-Python twin of `_speedups.ArrayBase`: the fields, set once by `_make` or `_view`
    (which check them) and read-only afterwards, except `_handle` (the operators are attached to
    Array by `_array_methods.install`)."""

    __slots__ = ("_buffer", "_dtype", "_shape", "_strides", "_offset", "_handle", "_readonly",
                 "__weakref__")
    _buffer: MemoryBuffer
    _dtype: dt.DType
    _shape: tuple[int, ...]
    _strides: tuple[int, ...]
    _offset: int
    _handle: Any  # the backend's native view, or None
    _readonly: builtins.bool

    def __new__(cls, *args: Any, **kwargs: Any) -> _ArrayBase:
        raise TypeError(f"cannot create '{cls.__name__}' instances; arrays are made by _make")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _FIXED:
            raise AttributeError("readonly attribute")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in _FIXED:
            raise AttributeError("readonly attribute")
        object.__setattr__(self, name, None)  # as a C object member: deleted reads as None


def _new(cls: type, buffer: MemoryBuffer, dtype: dt.DType, shape: tuple[int, ...],
         strides: tuple[int, ...], offset: int, handle: Any, readonly: Any) -> Any:
    """A `cls` (Array or a subclass of it) with these fields, which the caller has checked."""
    if _C_BASE:
        return new_array_object(cls, buffer, dtype, shape, strides, offset, handle,  # noqa: F821
                                readonly)
    x = object.__new__(cls)
    for name, value in (("_buffer", buffer), ("_dtype", dtype), ("_shape", shape),
                        ("_strides", strides), ("_offset", offset), ("_handle", handle),
                        ("_readonly", builtins.bool(readonly))):
        getattr(_ArrayBase, name).__set__(x, value)
    return x


if TYPE_CHECKING:  # type checkers see the pure-Python twin, whose interface both share
    _Base = _ArrayBase
else:
    _Base = _ArrayBase if speedups is None else speedups.ArrayBase
# whether that is the speedups' C type (then this module runs compiled: `_compiled`)
_C_BASE = speedups is not None
_DType = dt.DType


class Array(_Base):
    """An n-dimensional array on one device. Create arrays with the namespace functions
    (`asarray`, `zeros`, ...), not with this class."""

    __slots__ = ()
    # numpy's __array_ufunc__ and __array_function__ are attached by the package
    # (hxarray/_numpy_protocols.py)
    __hash__ = None  # `==` is element-wise, so arrays cannot be dict keys or set members

    def __new__(cls, *args: Any, **kwargs: Any) -> Array:
        raise TypeError("hxarray.Array cannot be constructed directly; use hxarray.asarray(), "
                        "hxarray.empty() or another creation function")

    @classmethod
    def _make(cls, buffer: MemoryBuffer, dtype: dt.DType, shape: tuple[int, ...],
              strides: tuple[int, ...], offset: int = 0, handle: Any = None,
              readonly: builtins.bool = False) -> Array:
        """A new array over `buffer`, its fields checked (`_check_layout`): the fast path reads
        them without checks."""
        if not (isinstance(cls, type) and issubclass(cls, _Base)):
            raise TypeError(f"_make() makes arrays, not {cls!r}")
        if not isinstance(buffer, MemoryBuffer):
            raise TypeError(f"an array's buffer is a MemoryBuffer, got {type(buffer).__name__}")
        if not isinstance(dtype, _DType):
            raise TypeError(f"an array's dtype is an hxarray dtype, got {type(dtype).__name__}")
        _check_layout(dtype, shape, strides, offset)
        return _new(cls, buffer, dtype, shape, strides, offset, handle, readonly)

    @staticmethod
    def _view(base: Array, shape: tuple[int, ...], strides: tuple[int, ...], offset: int,
              dtype: dt.DType | None = None) -> Array:
        """Another view of base's buffer, read-only if base is."""
        if not isinstance(base, Array):
            raise TypeError(f"_view() needs an array to view, got {type(base).__name__}")
        if dtype is None:
            dtype = base._dtype
        elif not isinstance(dtype, _DType):
            raise TypeError(f"an array's dtype is an hxarray dtype, got {type(dtype).__name__}")
        _check_layout(dtype, shape, strides, offset)
        return _new(type(base), base._buffer, dtype, shape, strides, offset, None, base._readonly)

    # -- attributes --------------------------------------------------------------------------------
    @property
    def dtype(self) -> dt.DType:
        """The data type of the elements."""
        return self._dtype

    @property
    def device(self) -> Device:
        """The device the array's memory lives on."""
        return self._buffer.device

    @property
    def shape(self) -> tuple[int, ...]:
        """The length of each axis."""
        return self._shape

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return len(self._shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        n = 1
        for d in self._shape:
            n *= d
        return n

    @property
    def buffer(self) -> MemoryBuffer:
        """The memory this array (and every view of it) lives in."""
        return self._buffer

    @property
    def strides(self) -> tuple[int, ...]:
        """Byte steps between neighbours along each axis (not part of the standard)."""
        return self._strides

    @property
    def offset(self) -> int:
        """Byte offset of the first element within `buffer` (not part of the standard)."""
        return self._offset

    @property
    def T(self) -> Array:
        """The transpose of a 2-D array, a view (x.mT for stacks of matrices)."""
        if self.ndim != 2:
            raise ValueError(f"x.T is defined for 2-D arrays only, got {self.ndim}-D; use "
                             "permute_dims() or x.mT for stacks of matrices")
        return _views.permute(self, (1, 0))

    @property
    def mT(self) -> Array:
        """The transpose of each matrix (the last two axes swapped), a view."""
        if self.ndim < 2:
            raise ValueError(f"x.mT needs at least 2 dimensions, got {self.ndim}")
        axes = tuple(range(self.ndim - 2)) + (self.ndim - 1, self.ndim - 2)
        return _views.permute(self, axes)

    # -- devices and interchange -------------------------------------------------------------------
    def to_device(self, device: Device | str, /, *, stream: Any = None) -> Array:
        """A copy of this array on `device` (this array itself if it is already there). The copy
        runs on `stream` (a stream of either device) where given, else on the devices' current
        streams; reading the source waits for its stream."""
        source = self._buffer.device
        if stream is None:
            if device is source:
                return self
            target = Device(device)
            return self if target is source else _transfer(self, source, target)
        from .hal.stream import Stream

        if not isinstance(stream, Stream):
            raise TypeError(f"to_device(): stream must be an hxarray Stream or None, got "
                            f"{type(stream).__name__}")
        target = Device(device)
        if stream.device not in (source, target):
            raise ValueError(f"stream {stream!r} belongs to neither {source} nor {target}")
        if target is source:
            return self
        with stream:
            return _transfer(self, source, target)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._buffer.device.backend.dlpack_device(self._buffer.device)

    def prefetch(self, device: Device | str) -> Array:
        """Move this array's managed memory (arrays made inside `memory_scope(device,
        managed=True)`) to `device`, or to the host for "cpu", ahead of its use there, queued on
        the current stream; the array itself is returned. A hint: the values and `x.device` do
        not change (`to_device` copies). ValueError for an array outside managed memory."""
        self._buffer.device.backend.prefetch(self, Device(device))
        return self

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: builtins.bool | None = None):
        """A DLPack capsule (spec: array.__dlpack__); a read-only array (a broadcast view) needs
        `max_version` (1, 0) or later, whose capsules carry DLPack's read-only flag."""
        if max_version is not None:
            _check_pair("max_version", max_version)
        if dl_device is not None:
            _check_pair("dl_device", dl_device)
        if copy is not None and copy is not True and copy is not False:
            raise TypeError(f"__dlpack__(): copy must be None or a bool, got {type(copy).__name__}")
        if self._readonly and (max_version is None or max_version < (1, 0)) and not copy:
            raise BufferError("__dlpack__(): a read-only array (a broadcast view) can only be "
                              "exported with max_version=(1, 0) or later, or copy=True")
        return self._buffer.device.backend.dlpack(self, stream=stream, max_version=max_version,
                                                  dl_device=dl_device, copy=copy)

    def __array__(self, dtype: Any = None, copy: builtins.bool | None = None) -> np.ndarray:
        """numpy's conversion protocol; `copy=False` raises ValueError where a copy is needed
        (another device, or a different `dtype`)."""
        if copy is False and dtype is not None and np.dtype(dtype) != self._dtype.numpy:
            raise ValueError(f"converting {self._dtype.name} to numpy dtype {np.dtype(dtype)} "
                             "needs a copy, but copy=False")
        host = self._buffer.device.backend.host_view(self)
        if host is None:
            if copy is False:
                raise ValueError(f"an array on {self.device} cannot be viewed by numpy without a "
                                 "copy; use copy=None or to_device('cpu')")
            host = self._buffer.device.backend.to_host(self)
        elif copy:
            host = host.copy()
        return host if dtype is None else host.astype(dtype, copy=False)

    # -- pickle and copy ---------------------------------------------------------------------------
    def __reduce_ex__(self, protocol: int) -> tuple[Any, ...]:
        """dtype, shape, device and the values in C order: a CPU array's memory goes out-of-band
        under protocol 5 (no copy when it is contiguous); a device array goes through a host
        copy and comes back on its device (which must exist where it is unpickled)."""
        backend = self._buffer.device.backend
        host = backend.host_view(self)
        if host is None:
            host = backend.to_host(self)
        elif not host.flags.c_contiguous:
            host = np.ascontiguousarray(host)
        data = pickle.PickleBuffer(host) if protocol >= 5 else host.tobytes()
        return _rebuild, (data, self._dtype, self._shape, self._buffer.device)

    def __copy__(self) -> Array:
        """A copy on the same device, as numpy's copy.copy makes."""
        return self._buffer.device.backend.copy(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Array:
        return self._buffer.device.backend.copy(self)

    def _host(self) -> np.ndarray:
        """The values as a numpy array (a view on the CPU, a copy elsewhere)."""
        backend = self._buffer.device.backend
        host = backend.host_view(self)
        return backend.to_host(self) if host is None else host

    def __repr__(self) -> str:
        body = np.array2string(self._host(), separator=", ", prefix="Array(")
        shape = f", shape={self._shape}" if self.size == 0 and self.ndim != 1 else ""
        return f"Array({body}{shape}, dtype={self._dtype.name}, device='{self.device}')"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        """A 0-D array formats as its Python scalar (`f"{x:.3f}"`), as numpy's do; an empty
        spec gives `str(x)` for any array."""
        if not spec:
            return str(self)
        if self._shape != ():
            raise TypeError(f"format spec {spec!r} needs a 0-D array, got shape {self._shape}; "
                            "format its elements")
        return format(self._host()[()].item(), spec)

    # -- Python scalars ----------------------------------------------------------------------------
    def _scalar(self, kind: str) -> Any:
        if self._shape != ():
            raise TypeError(f"{kind}() needs a 0-D array, got shape {self._shape}; index a "
                            "single element first")
        return self._host()[()].item()

    def __bool__(self) -> builtins.bool:
        if self._shape != () and self.size == 1 and not is_strict():
            return builtins.bool(self._host().item())  # numpy mode: any one-element array
        return builtins.bool(self._scalar("bool"))

    def __int__(self) -> int:
        if self._dtype in dt.COMPLEX_FLOATING:
            raise TypeError("int() of a complex array is undefined; take .real or abs() first")
        return int(self._scalar("int"))

    def __float__(self) -> float:
        if self._dtype in dt.COMPLEX_FLOATING:
            raise TypeError("float() of a complex array is undefined; take .real or abs() first")
        return float(self._scalar("float"))

    def __complex__(self) -> complex:
        value = self._scalar("complex")
        if self._dtype in dt.REAL_FLOATING and math.isnan(value):
            return complex(value, value)  # the spec maps a real NaN to NaN + NaN j
        return complex(value)

    def __index__(self) -> int:
        if self._dtype not in dt.INTEGER:
            raise TypeError(f"only integer arrays can be used as an index, got {self._dtype.name}")
        return int(self._scalar("index"))

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-D array")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-D array")
        return (self[i] for i in range(self._shape[0]))


def _check_pair(name: str, pair: Any) -> None:
    """`__dlpack__`'s `max_version` and `dl_device`: a pair of ints."""
    if not isinstance(pair, tuple) or len(pair) != 2 or \
            not (isinstance(pair[0], int) and isinstance(pair[1], int)):
        raise TypeError(f"__dlpack__(): {name} must be None or a pair of ints, got {pair!r}")


def _rebuild(data: Any, dtype: dt.DType, shape: tuple[int, ...], device: Device) -> Array:
    """Unpickle an array: share the pickled memory where it is writable host memory (an
    out-of-band buffer, or protocol 5's in-band bytearray) the device can use, else copy it."""
    host = np.frombuffer(data, dtype=dtype.numpy).reshape(shape)
    backend = device.backend
    shared = backend.adopt(host)
    return backend.from_host(host, device) if shared is None else shared


def _transfer(x: Array, source: Device, target: Device) -> Array:
    """A copy of `x` on the other device `target`: the backend's own copy between two devices of
    its type, else through host memory."""
    if source.type is target.type:
        return source.backend.copy_to(x, target)
    return target.backend.from_host(source.backend.to_host(x), target)


del operator
