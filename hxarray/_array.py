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
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _dtypes as dt
from . import _views
from ._compiled import speedups
from ._version import SUPPORTED_API_VERSIONS
from .hal.device import Device

if TYPE_CHECKING:
    from .hal.buffer import MemoryBuffer

__all__ = ["Array"]


if TYPE_CHECKING:  # the operators are installed at import (`_install_operators`)
    from ._operators import ArrayOperators
else:
    ArrayOperators = object


class _ArrayBase(ArrayOperators):
    """The pure-Python twin of `_speedups.ArrayBase`: the fields (the operators are attached to
    Array by `_install_operators`)."""

    __slots__ = ("_buffer", "_dtype", "_shape", "_strides", "_offset", "_handle", "__weakref__")
    _buffer: MemoryBuffer
    _dtype: dt.DType
    _shape: tuple[int, ...]
    _strides: tuple[int, ...]
    _offset: int
    _handle: Any  # the backend's native view, or None


if TYPE_CHECKING:  # type checkers see the pure-Python twin, whose interface both share
    _Base = _ArrayBase
else:
    _Base = _ArrayBase if speedups is None else speedups.ArrayBase
_new = _Base.__new__


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

    @staticmethod
    def _make(buffer: MemoryBuffer, dtype: dt.DType, shape: tuple[int, ...],
              strides: tuple[int, ...], offset: int = 0, handle: Any = None) -> Array:
        x = _new(Array)
        x._buffer = buffer
        x._dtype = dtype
        x._shape = shape
        x._strides = strides
        x._offset = offset
        x._handle = handle
        return x

    @staticmethod
    def _view(base: Array, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> Array:
        return Array._make(base._buffer, base._dtype, shape, strides, offset)

    # -- attributes --------------------------------------------------------------------------------
    @property
    def dtype(self) -> dt.DType:
        return self._dtype

    @property
    def device(self) -> Device:
        return self._buffer.device

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
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
        if self.ndim != 2:
            raise ValueError(f"x.T is defined for 2-D arrays only, got {self.ndim}-D; use "
                             "permute_dims() or x.mT for stacks of matrices")
        return _views.permute(self, (1, 0))

    @property
    def mT(self) -> Array:
        if self.ndim < 2:
            raise ValueError(f"x.mT needs at least 2 dimensions, got {self.ndim}")
        axes = tuple(range(self.ndim - 2)) + (self.ndim - 1, self.ndim - 2)
        return _views.permute(self, axes)

    # -- devices and interchange -------------------------------------------------------------------
    def __array_namespace__(self, /, *, api_version: str | None = None) -> Any:
        if api_version is not None and api_version not in SUPPORTED_API_VERSIONS:
            raise ValueError(f"unsupported Array API version {api_version!r}; supported: "
                             f"{', '.join(SUPPORTED_API_VERSIONS)}")
        import hxarray

        return hxarray

    def to_device(self, device: Device | str, /, *, stream: Any = None) -> Array:
        """A copy of this array on `device` (this array itself if it is already there). The copy
        runs on `stream` (a stream of either device) where given, else on the devices' current
        streams; reading the source waits for its stream."""
        source = self._buffer.device
        if device is source:
            return self
        target = Device(device)
        if target is source:
            return self
        if stream is None:
            return _transfer(self, source, target)
        from .hal.stream import Stream

        if not isinstance(stream, Stream):
            raise TypeError(f"to_device(): stream must be an hxarray Stream or None, got "
                            f"{type(stream).__name__}")
        if stream.device not in (source, target):
            raise ValueError(f"stream {stream!r} belongs to neither {source} nor {target}")
        with stream:
            return _transfer(self, source, target)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._buffer.device.backend.dlpack_device(self._buffer.device)

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: builtins.bool | None = None):
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

    # -- Python scalars ----------------------------------------------------------------------------
    def _scalar(self, kind: str) -> Any:
        if self._shape != ():
            raise TypeError(f"{kind}() needs a 0-D array, got shape {self._shape}; index a "
                            "single element first")
        return self._host()[()].item()

    def __bool__(self) -> builtins.bool:
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

    # -- indexing ----------------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Array:
        from ._indexing import getitem

        return getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        from ._indexing import setitem

        setitem(self, key, value)


def _rebuild(data: Any, dtype: dt.DType, shape: tuple[int, ...], device: Device) -> Array:
    """Unpickle an array: share the pickled memory where it is writable host memory (an
    out-of-band buffer, or protocol 5's in-band bytearray), else copy it."""
    from ._creation import asarray

    return asarray(np.frombuffer(data, dtype=dtype.numpy).reshape(shape), device=device)


def _transfer(x: Array, source: Device, target: Device) -> Array:
    """A copy of `x` on the other device `target`: the backend's own copy between two devices of
    its type, else through host memory."""
    if source.type is target.type:
        return source.backend.copy_to(x, target)
    return target.backend.from_host(source.backend.to_host(x), target)


def _install_operators() -> None:
    """Attach the arithmetic, bitwise and comparison operators, each calling its spec function:
    as Python methods, or behind the compiled slots, which try the CPU fast path first."""
    import dis

    from . import _elementwise as ew
    from ._ops import COMPARISONS, OPS

    operators = {}
    for op in OPS.values():
        stem = op.operator
        if stem is None:
            continue
        if op.arity == 1:
            operators[f"__{stem}__"] = ew.unary_operator(op.name)
            continue
        operators[f"__{stem}__"] = ew.binary_operator(op.name, reflected=False)
        if stem not in COMPARISONS:
            operators[f"__r{stem}__"] = ew.binary_operator(op.name, reflected=True)
            operators[f"__i{stem}__"] = ew.inplace_operator(op.name)
    operators["__matmul__"] = ew.binary_operator("matmul", reflected=False)  # not element-wise
    operators["__rmatmul__"] = ew.binary_operator("matmul", reflected=True)
    operators["__imatmul__"] = ew.inplace_operator("matmul")
    if speedups is None:
        for dunder, method in operators.items():
            setattr(Array, dunder, method)
        return
    from .hal.buffer import MemoryBuffer

    speedups.configure(array_type=Array, buffer_type=MemoryBuffer, general=ew._binary,
                       operations={op.operator: ew.OPERATIONS[op.name] for op in OPS.values()
                                   if op.operator is not None},
                       operators=operators, bool_dtype=dt.bool,
                       int64_dtype=dt.int64, floating_dtypes=dt.FLOATING,
                       binary_op_opcode=dis.opmap.get("BINARY_OP", -1))


del operator
