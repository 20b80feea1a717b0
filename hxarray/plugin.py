"""The public surface a backend is written against (docs/hal.md, "Writing a backend").

A third-party backend imports `hxarray` and this module, nothing else of hxarray's: what it
subclasses (`Backend`, `Allocator`), the HAL's parts it builds on (devices, caching allocators,
host streams), how it makes arrays over its memory (`make_array`, `numpy_view`), the operation
tables its primitives receive objects of (`OPS`, `Op`, `Signature` for `elementwise`;
`REDUCTIONS`, `Reduction`, `ARG_REDUCTIONS`, `ArgReduction`, `SCANS`, `Scan` for `reduce`,
`arg_reduce` and `scan`) with numpy's kernels for them (`cast`, `quiet`, `quietly`), how it is
registered (`register_backend`, or the entry-point group `ENTRY_POINT_GROUP`), and the oracle its
tests compare it with (`check_elementwise`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import numpy as np

from . import _dtypes as dt
from ._array import Array
from ._dtypes import DType
from ._numpy_kernels import cast, quiet, quietly
from ._ops import (
    ARG_REDUCTIONS,
    OPS,
    REDUCTIONS,
    SCANS,
    ArgReduction,
    Op,
    Reduction,
    Scan,
    Signature,
)
from ._views import contiguous_strides
from .backends.base import Backend
from .backends.cpu import CpuBackend
from .backends.cpu.allocator import CpuAllocator
from .backends.registry import ENTRY_POINT_GROUP, registry
from .hal import hooks
from .hal.allocator import Allocator, Block, CachingAllocator, MemoryBuffer, StreamOrderedAllocator
from .hal.device import Device, DeviceType, DeviceUnavailableError
from .hal.stream import Event, HostEvent, HostStream, Stream, current_stream

__all__ = [
    "ARG_REDUCTIONS", "ENTRY_POINT_GROUP", "OPS", "REDUCTIONS", "SCANS", "Allocator",
    "ArgReduction", "Array", "Backend", "Block", "CachingAllocator", "CpuAllocator",
    "CpuBackend", "DType", "Device", "DeviceType", "DeviceUnavailableError", "Event",
    "HostEvent", "HostStream", "MemoryBuffer", "Op", "Reduction", "Scan", "Signature", "Stream",
    "StreamOrderedAllocator", "cast", "check_elementwise", "current_stream", "hooks",
    "make_array", "numpy_view", "quiet", "quietly", "register_backend", "undetermined",
]


def register_backend(backend: type[Backend] | Backend, *, replace: bool = False) -> Backend:
    """Register a backend class (instantiated now) or instance for its `device_type`, as an
    installed entry point of `ENTRY_POINT_GROUP` is on first use; ValueError if the type has one
    already, unless `replace`."""
    return registry.register(backend, replace=replace)


def make_array(buffer: MemoryBuffer, dtype: DType, shape: tuple[int, ...],
               strides: tuple[int, ...] | None = None, offset: int = 0, *,
               readonly: bool = False) -> Array:
    """An array over `buffer` (from the backend's allocator, or memory it adopted): `strides` and
    `offset` in bytes, C-contiguous strides by default. The layout is checked (TypeError or
    ValueError); that it stays within the buffer is the caller's promise."""
    if strides is None:
        if shape.__class__ is not tuple or any(n.__class__ is not int for n in shape):
            raise TypeError(f"make_array(): shape must be a tuple of ints, got {shape!r}")
        if not isinstance(dtype, DType):
            raise TypeError(f"make_array(): dtype must be an hxarray dtype, got "
                            f"{type(dtype).__name__}")
        strides = contiguous_strides(shape, dtype.itemsize)
    return Array._make(buffer, dtype, shape, strides, offset, None, readonly)


def numpy_view(x: Array) -> np.ndarray:
    """A numpy array over the elements of `x` in place, for memory the host can address (its raw
    allocator implements `array_interface`; TypeError otherwise). The view keeps the buffer alive
    and is read-only where `x` is (a broadcast view)."""
    view = np.ndarray(x.shape, x.dtype.numpy, buffer=np.asarray(x.buffer), offset=x.offset,
                      strides=x.strides)
    if x._readonly:
        view.flags.writeable = False
    return view


# -- the oracle ------------------------------------------------------------------------------------
# Values that reach the special cases: signed zeros, infinities, NaN, the integers' extremes. Where
# the standard leaves a result undefined or implementation-defined (an integer divided by 0 or
# shifted by a negative or too large count, an integer to a negative power), the second operand
# keeps out of it.
_FLOATS = (0.0, -0.0, 1.0, -1.5, 0.5, 2.0, 3.75, -7.0, 1e-3, 65504.0, np.inf, -np.inf, np.nan)
_COMPLEX_PARTS = (0.0, -0.0, 1.0, -2.5, np.inf, np.nan)
_SIGNED = (0, 1, -1, 2, -3, 7, 100)
_UNSIGNED = (0, 1, 2, 3, 7, 100)
_DIVISORS = (1, 2, 3, 7)  # integer second operands where 0 (and -1 of the minimum) is undefined
_CAREFUL = {"floor_divide", "remainder", "bitwise_left_shift", "bitwise_right_shift", "pow"}


def _samples(dtype: DType, op: Op, position: int) -> np.ndarray:
    """Host values of `dtype` for operand `position` of `op`."""
    kind = dtype.numpy.kind
    if kind == "b":
        values: Any = [False, True]
    elif kind == "f":
        values = _FLOATS
    elif kind == "c":
        values = [complex(r, i) for r, i in itertools.product(_COMPLEX_PARTS, repeat=2)]
    elif position and op.name in _CAREFUL:
        values = _DIVISORS
    else:
        low, high = dt.INTEGER_BOUNDS[dtype]
        values = (*(_SIGNED if kind == "i" else _UNSIGNED), low, high)
    return np.array(values, dtype=dtype.numpy)


def _dtypes_of(op: Op) -> Iterable[tuple[DType, ...]]:
    """The operand dtypes to check `op` on: each dtype of its category, and for binary
    operations a pair with a wider dtype of the same kind (converted on load)."""
    if op.selects:  # where: a bool condition choosing between two operands
        return [(dt.bool, d, d) for d in dt.ALL_DTYPES]
    if op.chain:  # clip: every bound in the operand's dtype
        return [(d,) * op.arity for d in dt.REAL_NUMERIC]
    allowed = [d for d in dt.ALL_DTYPES if d in dt.CATEGORIES[op.category or "all"]]
    operands = [(d,) * op.arity for d in allowed]
    if op.arity == 2:
        wider = {dt.int8: dt.int16, dt.uint8: dt.uint32, dt.float32: dt.float64,
                 dt.complex64: dt.complex128}
        operands += [(d, wider[d]) for d in allowed if wider.get(d) in allowed]
    return operands


def _expected(op: Op, signature: Signature, values: list[Any], shape: tuple[int, ...]
              ) -> np.ndarray:
    """The host kernel's result: each operand converted to the compute dtype first (a `selects`
    condition stays bool), as the element-wise contract says."""
    converted = []
    for i, value in enumerate(values):
        if value is None or isinstance(value, (bool, int, float, complex)) or \
                (op.selects and i == 0):
            converted.append(value)
            continue
        out = np.empty(value.shape, signature.compute.numpy)
        cast(value, out=out)
        converted.append(out)
    result = np.empty(shape, signature.result.numpy)
    quietly(op.numpy)(*converted, out=result)
    return result


def undetermined(op: str, operands: Iterable[Any]) -> np.ndarray | None:
    """Where the direction of element-wise `op`'s result is not determined by its `operands`
    (numpy arrays or scalars, broadcast together), so that devices may rightly differ in it, or
    None where there is no such element. Complex powers x1**x2 = exp(x2 log x1) whose angle,
    Im(x2 log x1), is so large that one rounding of log x1 turns it by more than a radian
    (`(1 - 1.5j) ** 1e308j`), or is NaN (`1j ** infj`: the sign of a zero part then follows a
    NaN's sign, which the standard leaves open and devices differ in). Compare magnitudes there."""
    if op != "pow":
        return None
    x1, x2 = (np.asarray(a) for a in operands)
    if "c" not in (x1.dtype.kind, x2.dtype.kind):
        return None
    with np.errstate(all="ignore"):
        angle = np.abs((x2.astype(np.complex128) * np.log(x1.astype(np.complex128))).imag)
    return ~(angle * np.finfo(np.result_type(x1, x2)).eps <= 1)


def _mismatch(got: np.ndarray, expected: np.ndarray, rtol: float,
              loose: np.ndarray | None = None) -> str | None:
    """Where `got` differs from `expected` (NaN equals NaN; a zero's sign counts), or None;
    where `loose`, only their magnitudes are compared."""
    if got.dtype != expected.dtype or got.shape != expected.shape:
        return f"got dtype {got.dtype} and shape {got.shape}, expected {expected.dtype} and " \
               f"shape {expected.shape}"
    if loose is not None:
        got, expected = np.where(loose, np.abs(got), got), np.where(loose, np.abs(expected),
                                                                     expected)
    if expected.dtype.kind in "fc":
        with np.errstate(all="ignore"):
            scale = rtol * np.abs(expected)  # a complex result: its modulus bounds both parts
            bad = np.zeros(expected.shape, bool)
            for mine, theirs in ((got.real, expected.real), (got.imag, expected.imag)):
                close = (mine == theirs) | (np.isnan(mine) & np.isnan(theirs)) | \
                    (np.abs(mine - theirs) <= scale)
                bad |= ~close | ((theirs == 0) & (np.signbit(mine) != np.signbit(theirs)))
    else:
        bad = got != expected
    if not bad.any():
        return None
    where = tuple(int(i[0]) for i in np.nonzero(bad))
    return f"{int(bad.sum())} of {bad.size} differ, first at {where}: got {got[where]!r}, " \
           f"expected {expected[where]!r}"


def check_elementwise(device: Device | str, operations: Iterable[Op] | None = None, *,
                      rtol: float | None = None) -> int:
    """Compare `device`'s backend's `elementwise` with numpy's kernels (the host reference of
    `OPS`) on every operation (or `operations`), every dtype its category takes and values
    that reach the special cases: operands broadcast against each other, one strided, a Python
    scalar, a missing `clip` bound, and `out=` given or not. Floating-point results may differ
    by `rtol` relatively (default: 4 units in the last place of the result dtype for complex
    results and the compute-bound operations, `Op.heavy`, such as `exp`; else 0, exact); NaN
    must meet NaN and a zero's sign must match. AssertionError listing every mismatch; else
    the number of calls compared."""
    device = Device(device)
    backend = device.backend
    failures: list[str] = []
    calls = 0

    def upload(host: np.ndarray, strided: bool = False) -> Array:
        """`host` on the device; `strided`: as every other element of a buffer twice as long."""
        if not strided:
            return backend.from_host(host, device)
        doubled = backend.from_host(np.repeat(host.reshape(-1), 2), device)
        strides = tuple(2 * s for s in contiguous_strides(host.shape, host.itemsize))
        return make_array(doubled.buffer, doubled.dtype, host.shape, strides, doubled.offset)

    for op in OPS.values() if operations is None else operations:
        for dtypes in _dtypes_of(op):
            signature = op.signature(*dtypes)
            kind = signature.result.numpy.kind
            tolerance = rtol if rtol is not None else 0.0 if kind not in "fc" or \
                kind == "f" and not op.heavy else 4 * float(np.finfo(signature.result.numpy).eps)
            hosts = [_samples(d, op, i) for i, d in enumerate(dtypes)]
            n = max(h.size for h in hosts)
            cases: list[tuple[list[Any], list[bool]]]  # (operands, which are strided views)
            if op.arity == 1:
                cases = [([hosts[0]], [True])]
            elif op.selects:
                condition = (np.arange(n * n).reshape(n, n) % 3 == 0)
                cases = [([condition, np.resize(hosts[1], (n, 1)), np.resize(hosts[2], (1, n))],
                          [False, True, False])]
            elif op.chain:  # clip(x, low, None) and clip(x, None, a scalar high)
                x = np.resize(hosts[0], (n, 1))
                high = hosts[2][2].item()
                cases = [([x, np.resize(hosts[1], (1, n)), None], [True, False, False]),
                         ([x, None, high], [False, False, False])]
            else:  # every pair, and the second operand as a Python scalar
                first = hosts[0].reshape(-1, 1)
                cases = [([first, hosts[1].reshape(1, -1)], [True, False])]
                if dtypes[0] is dtypes[1]:
                    cases.append(([hosts[0], hosts[1][-2].item()], [False, False]))
            for k, (values, strided) in enumerate(cases):
                shape = np.broadcast_shapes(*(v.shape for v in values
                                              if isinstance(v, np.ndarray)))
                args = [upload(v, s) if isinstance(v, np.ndarray) else v
                        for v, s in zip(values, strided)]
                out = backend.empty(shape, signature.result, device) if calls % 2 else None
                label = f"{op.name}{tuple(d.name for d in dtypes)} case {k}"
                try:
                    result = backend.elementwise(op, args, signature, shape, out=out)
                    got = backend.to_host(result)
                except Exception as exc:  # noqa: BLE001 - reported with the others
                    failures.append(f"{label}: raised {type(exc).__name__}: {exc}")
                    continue
                calls += 1
                if out is not None and result is not out:
                    failures.append(f"{label}: returned another array than `out`")
                loose = undetermined(op.name, (np.broadcast_to(v, shape) for v in values))
                problem = _mismatch(got, _expected(op, signature, values, shape), tolerance,
                                    loose)
                if problem is not None:
                    failures.append(f"{label}: {problem}")
    if failures:
        raise AssertionError(f"{device}: {len(failures)} element-wise calls differ from the "
                             "host kernels:\n" + "\n".join(failures))
    return calls
