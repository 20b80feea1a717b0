"""hxarray device memory as CuPy arrays, without copies, for the work a GPU hands to CuPy's
libraries (sorting, linear algebra, FFT, cuBLAS products) and for DLPack export. GPU only: a
simulated device's memory is host memory, which CuPy cannot use. Thin on purpose; the names it
uses are checked against the installed CuPy by hxarray_tests/cuda/test_driver_cupy.py."""

from __future__ import annotations

import contextlib
import ctypes
import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import cupy
import numpy as np

from .runtime import CudaStream

if TYPE_CHECKING:
    from ..._array import Array
    from .backend import CudaBackend


def cupy_view(backend: CudaBackend, x: Array) -> Any:
    """A cupy.ndarray over x's memory (same strides), keeping x's buffer alive."""
    memory = cupy.cuda.UnownedMemory(x._buffer.address, x._buffer.nbytes, x._buffer,
                                     x._buffer.device.index)
    pointer = cupy.cuda.MemoryPointer(memory, x._offset)
    return cupy.ndarray(x._shape, x._dtype.numpy, pointer, x._strides)


_DLPACK_IS_COPIED = 1 << 1  # DLPACK_FLAG_BITMASK_IS_COPIED
_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def mark_copied(capsule: Any) -> Any:
    """`capsule` with DLPack's is-copied flag set where it is a versioned one (CuPy's exporter
    sets it only for its copies to the host): the consumer may then write into the memory."""
    if _capsule_is_valid(capsule, b"dltensor_versioned"):
        # DLManagedTensorVersioned: version (two uint32), manager_ctx, deleter, then flags
        flags = ctypes.c_uint64.from_address(_capsule_pointer(capsule, b"dltensor_versioned") + 24)
        flags.value |= _DLPACK_IS_COPIED
    return capsule


@contextlib.contextmanager
def on_stream(backend: CudaBackend, device: Any) -> Iterator[None]:
    """CuPy's work inside the block goes to the device's current hxarray stream, and its
    temporaries (sorting, linalg, FFT and cuBLAS workspaces) come from hxarray's allocator: one
    pool holds the device's cached memory, so freeing it on an out-of-memory error frees all."""
    stream = backend.stream(device)
    assert isinstance(stream, CudaStream) and backend.driver is not None
    with cupy.cuda.Device(device.index), cupy.cuda.ExternalStream(
            backend.driver.stream_ptr(stream.handle), device.index), \
            cupy.cuda.using_allocator(functools.partial(_allocate, backend, device)):
        yield


def _allocate(backend: CudaBackend, device: Any, nbytes: int) -> Any:
    """A CuPy allocation served by hxarray's allocator (the memory scope's, where one is open),
    for the current stream; given back when CuPy drops the pointer."""
    from ..._dtypes import uint8

    holder = backend.empty((nbytes,), uint8, device)
    memory = cupy.cuda.UnownedMemory(holder._buffer.address, nbytes, holder, device.index)
    return cupy.cuda.MemoryPointer(memory, 0)


def run_into(backend: CudaBackend, out: Array, compute: Any, *inputs: Array) -> None:
    """out[...] = compute(*CuPy views of the inputs), on the current stream."""
    with on_stream(backend, out._buffer.device):
        cupy_view(backend, out)[...] = compute(*(cupy_view(backend, a) for a in inputs))


def run(backend: CudaBackend, compute: Any, *inputs: Array) -> Any:
    """compute(*CuPy views of the inputs), its CuPy array results copied into new hxarray
    arrays on the inputs' device (a tuple where compute returns one)."""
    device = inputs[0]._buffer.device
    with on_stream(backend, device):
        result = compute(*(cupy_view(backend, a) for a in inputs))
        results = result if isinstance(result, tuple) else (result,)
        moved = []
        for r in results:
            from ..._dtypes import FROM_NUMPY

            out = backend.empty(r.shape, FROM_NUMPY[r.dtype], device)
            cupy_view(backend, out)[...] = r
            moved.append(out)
    return tuple(moved) if isinstance(result, tuple) else moved[0]


# -- CuPy's library functions with the contracts of hxarray's primitives ---------------------------
def sort(v: Any, axis: int, stable: bool) -> Any:
    return cupy.sort(v, axis=axis)  # NaNs last, as numpy


def argsort(v: Any, axis: int, stable: bool) -> Any:
    return cupy.argsort(v, axis=axis)  # a stable radix or merge sort on the device


def searchsorted(values: Any, keys: Any, side: str) -> Any:
    return cupy.searchsorted(values, keys, side=side)


def unique(v: Any) -> tuple[Any, Any, Any, Any]:
    values, index, inverse, counts = cupy.unique(
        v.ravel(), return_index=True, return_inverse=True, return_counts=True, equal_nan=False)
    return (values, index.astype(cupy.int64), inverse.reshape(v.shape).astype(cupy.int64),
            counts.astype(cupy.int64))


# The linalg functions CuPy provides with numpy's signatures; the rest run on the host.
LINALG = {"cholesky", "det", "eigh", "eigvalsh", "inv", "qr", "slogdet", "solve", "svd"}


def linalg(name: str, *arrays: Any, **params: Any) -> Any:
    """CuPy's `name`, with the forms of the standard CuPy lacks: cholesky's `upper` (the
    conjugate transpose of the lower factor) and solve's broadcasting of the stacks of matrices
    of x1 and a stacked x2 (CuPy's solve takes only equal stacks)."""
    if name == "cholesky":
        lower = cupy.linalg.cholesky(arrays[0])
        return lower.swapaxes(-1, -2).conj() if params.get("upper") else lower
    if name == "solve" and arrays[1].ndim > 1:
        a, b = arrays
        stack = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        arrays = (cupy.broadcast_to(a, stack + a.shape[-2:]),
                  cupy.broadcast_to(b, stack + b.shape[-2:]))
    return getattr(cupy.linalg, name)(*arrays, **params)


def fft(name: str, v: Any, **params: Any) -> Any:
    return getattr(cupy.fft, name)(v, **params)
