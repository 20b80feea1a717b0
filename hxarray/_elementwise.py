"""Element-wise functions (spec: "Element-wise Functions") and the array operators.

Every function is generated from its declaration in `_ops.py` (the spec's input dtype category
and result dtype rule). The namespace resolves the operation and its signature (cached per name and
input dtypes), the broadcast shape and the backend, then hands the whole call to the backend.
"""

from __future__ import annotations

import array
import builtins
import operator as python_operator
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _dtypes as dt
from ._adapter import adapted
from ._array import Array
from ._fuse import internal, pays
from ._indexing import check_writable
from ._modes import STRICT, UnspecifiedOverflow, UnspecifiedType
from ._observed import fast
from ._ops import BINARY, OPS, UNARY, Op, Signature
from ._utility import any as _any
from ._views import broadcast_shapes

Scalar = bool | int | float | complex
_Array = Array
_ndarray = np.ndarray

# Signatures the standard defines, the same in both modes (a case the standard leaves open raises
# Unspecified, which each function's adapter hands to numpy mode's rules in _numpy_mode).
_resolved: dict[tuple[str, dt.DType, dt.DType], tuple[Op, Signature]] = {}


def _resolve(name: str, d1: dt.DType, d2: dt.DType) -> tuple[Op, Signature]:
    """The operation `name` and its signature on dtypes (d1, d2) (a unary one's: d1), after the
    spec's category check; cached. Where the standard defines none: Unspecified (a TypeError)."""
    op = OPS[name]
    allowed = dt.CATEGORIES[op.category]
    for d in (d1, d2):
        if d not in allowed:
            raise UnspecifiedType("{}() requires {} input, got {}", name, op.category, d.name)
    resolved = _resolved[name, d1, d2] = (op, op.signature(d1, d2) if op.arity == 2 else
                                          op.signature(d1))
    return resolved


def _scalar_fits(value: Scalar, dtype: dt.DType) -> builtins.bool:
    """Whether a Python scalar (exactly a bool, int, float or complex) may meet an array of
    `dtype`: `_dtypes.SCALAR_KINDS`, the spec's rule."""
    return value.__class__ in dt.SCALAR_KINDS[dtype]


def _check_scalar(name: str, value: Any, dtype: dt.DType) -> Scalar:
    """`value` as a plain Python scalar compatible with `dtype`; TypeError/OverflowError if not
    (Unspecified where the standard leaves the case open: a numpy scalar, a scalar of another
    kind, a Python int beyond an integer dtype)."""
    for kind in (builtins.bool, int, float, complex):
        if isinstance(value, kind):
            value = kind(value)
            break
    else:
        message = f"{name}() accepts arrays and Python scalars, got {type(value).__name__}"
        if isinstance(value, np.generic) and value.dtype in dt.FROM_NUMPY:
            raise UnspecifiedType(message)
        raise TypeError(message)
    if not _scalar_fits(value, dtype):
        raise UnspecifiedType("{}(): a Python {} cannot be combined with an array of dtype {}",
                              name, type(value).__name__, dtype.name)
    if value.__class__ is int and dtype in dt.INTEGER:
        low, high = dt.INTEGER_BOUNDS[dtype]
        if not low <= value <= high:
            raise UnspecifiedOverflow(f"{name}(): Python int {value} is out of bounds for "
                                      f"{dtype.name}")
    elif value.__class__ is int and not -(2**63) <= value < 2**63:  # (numpy would make an object)
        try:
            value = float(value)
        except OverflowError:
            raise OverflowError(f"{name}(): Python int of {value.bit_length()} bits is too large "
                                f"for {dtype.name}") from None
    return value


def scalar_operand(name: str, value: Any, dtype: dt.DType) -> tuple[Scalar, dt.DType]:
    """`value` checked as the Python scalar operand of an array of `dtype`, and the dtype of the
    0-D array it stands for: `dtype`, or for a complex scalar with a real floating array the
    complex dtype of the same precision (spec: "Mixing arrays with Python scalars")."""
    if dtype in dt.COMPLEX_OF and isinstance(value, complex):
        dtype = dt.COMPLEX_OF[dtype]
    return _check_scalar(name, value, dtype), dtype


def _backend_of(x: Array) -> Any:
    device = x._buffer.device
    return device._backend or device.backend


def _unary(name: str, x: Array) -> Array:
    if x.__class__ is not _Array:
        raise TypeError(f"{name}() expects an hxarray Array, got {type(x).__name__}")
    d = x._dtype
    op, signature = _resolved.get((name, d, d)) or _resolve(name, d, d)
    return _backend_of(x).elementwise(op, (x,), signature, x._shape)


def _binary(name: str, x1: Any, x2: Any, out: Array | None = None) -> Array:
    if x1.__class__ is _Array:
        if x2.__class__ is _Array:
            d1, d2 = x1._dtype, x2._dtype
            op, signature = _resolved.get((name, d1, d2)) or _resolve(name, d1, d2)
            device = x1._buffer.device
            if x2._buffer.device is not device:
                raise ValueError(f"{name}(): arrays are on different devices ({device} and "
                                 f"{x2._buffer.device}); move one with to_device()")
            s1, s2 = x1._shape, x2._shape
            shape = s1 if s1 == s2 else broadcast_shapes(s1, s2)
            if name == "pow" and signature.result in dt.SIGNED:
                _check_power(x2)
            backend = device._backend or device.backend
            return backend.elementwise(op, (x1, x2), signature, shape, out)
        return _with_scalar(name, x1, x2, False, out)
    if x2.__class__ is _Array:
        return _with_scalar(name, x2, x1, True, out)
    raise TypeError(f"{name}() needs at least one hxarray Array argument, got "
                    f"{type(x1).__name__} and {type(x2).__name__}")


def _with_scalar(name: str, x: Array, scalar: Any, scalar_first: builtins.bool,
                 out: Array | None) -> Array:
    """`name` of the array `x` and a Python scalar (the first operand where `scalar_first`),
    which takes x's dtype (its complex dtype for a complex scalar), as the standard says."""
    d = x._dtype
    ds = dt.COMPLEX_OF[d] if d in dt.COMPLEX_OF and isinstance(scalar, complex) else d
    scalar = _check_scalar(name, scalar, ds)
    d1, d2 = (ds, d) if scalar_first else (d, ds)
    op, signature = _resolved.get((name, d1, d2)) or _resolve(name, d1, d2)
    if name == "pow" and signature.result in dt.SIGNED:
        _check_power(x if scalar_first else scalar)
    args = (scalar, x) if scalar_first else (x, scalar)
    return _backend_of(x).elementwise(op, args, signature, x._shape, out)


def _check_power(exponent: Any) -> None:
    """numpy mode: numpy's ValueError for an integer raised to a negative integer power (the
    standard leaves the result open; strict mode computes 1 / x1**-x2 truncated). A scalar
    exponent that is not negative reads no mode. (Both modes compute a result here, so the
    function asks, not the adapter.)"""
    if type(exponent) is not Array:
        if exponent < 0 and not STRICT.get():
            raise ValueError("Integers to negative integer powers are not allowed.")
    elif not STRICT.get() and exponent._dtype in dt.SIGNED and \
            builtins.bool(_any(OPERATIONS["less"](exponent, 0))):
        raise ValueError("Integers to negative integer powers are not allowed.")


def _python_operator(name: str, inplace: bool) -> Callable[[Any, Any], Any]:
    """Python's operator function of the operation `name` (`operator.add`, `operator.iand`)."""
    stem = "i" * inplace + (OPS[name].operator if name != "matmul" else "matmul")
    return getattr(python_operator, stem, None) or getattr(python_operator, f"{stem}_")


def binary_operator(name: str, reflected: bool, subclass_operator: Callable[..., Any],
                    function: Callable[[Any, Any], Array] | None = None
                    ) -> Callable[[Array, Any], Any]:
    """`x.__op__` / `x.__rop__`, calling `function` (by default the element-wise function
    `name`): NotImplemented for foreign operand types, as Python expects. `subclass_operator`
    is numpy mode's answer for an instance of a numpy subclass (`_numpy_protocols`, above the
    chapters: `_array_methods` hands it down)."""
    function = function or GENERAL[name]
    python = _python_operator(name, False)

    def operator(self: Array, other: Any) -> Any:
        if other.__class__ is not _Array and not isinstance(other, (builtins.bool, int, float,
                                                                    complex)):
            return _foreign(name, python, reflected, self, other, subclass_operator)
        return function(other, self) if reflected else function(self, other)

    return operator


_SYMBOLS = {"multiply": "*", "equal": "==", "not_equal": "!="}


def _foreign(name: str, python: Callable[[Any, Any], Any], reflected: bool, x: Array,
             other: Any, subclass_operator: Callable[..., Any]) -> Any:
    """An operator's answer for an operand it does not take: numpy's answer for an instance of a
    numpy subclass (numpy mode); otherwise NotImplemented (so that Python asks `other`), except
    where Python's fallbacks would answer wrongly: repeating a sequence for `*` (through a 0-D
    integer array's __index__), and comparing by identity for `==` and `!=` with another
    library's array (asked itself here first)."""
    if other.__class__ is not _ndarray and isinstance(other, _ndarray):  # a numpy subclass's
        result = subclass_operator(python, x, other, reflected=reflected)
        if result is not NotImplemented:  # (strict mode)
            return result
    if name == "multiply" and isinstance(other, (Sequence, array.array)):
        raise TypeError(f"unsupported operand type(s) for *: 'Array' and "
                        f"'{type(other).__name__}': arrays combine with arrays and Python scalars "
                        "only")
    if name in ("equal", "not_equal") and (hasattr(other, "__array__") or
                                           hasattr(other, "__array_namespace__")):
        result = getattr(other, "__eq__" if name == "equal" else "__ne__")(x)
        if result is NotImplemented:
            raise TypeError(f"'{_SYMBOLS[name]}' between an hxarray Array and a "
                            f"{type(other).__module__}.{type(other).__qualname__} is not "
                            "supported; convert it with hxarray.asarray() first")
        return result
    return NotImplemented


def inplace_operator(name: str, subclass_operator: Callable[..., Any],
                     numpy_operand: Callable[[Array, Any], Array | None],
                     matmul: Callable[[Array, Any], Array] | None = None
                     ) -> Callable[[Array, Any], Array]:
    """`x.__iop__`: computes into `x`; the result dtype and shape must be those of `x`. With an
    instance of a numpy subclass (numpy mode): numpy's answer (`subclass_operator`), Python's
    operator on a view of x; a numpy array or scalar is taken as `numpy_operand` converts it
    (both from `_numpy_protocols`, handed down by `_array_methods`). `matmul`: the function of
    `x @= y`."""
    python = _python_operator(name, True)

    def operator(self: Array, other: Any) -> Any:
        if other.__class__ is not _Array and not isinstance(other, (builtins.bool, int, float,
                                                                    complex)):
            if other.__class__ is not _ndarray and isinstance(other, _ndarray):
                result = subclass_operator(python, self, other, inplace=True)
                if result is not NotImplemented:  # (strict mode)
                    return result
            other = numpy_operand(self, other)
            if other is None:
                return NotImplemented
        if self._readonly:
            check_writable(self, f"in-place {name}")
        if matmul is not None:
            result = matmul(self, other)
            if result._dtype is not self._dtype or result._shape != self._shape:
                raise ValueError(f"x @= y would change x from {self._shape} {self._dtype.name} "
                                 f"to {result._shape} {result._dtype.name}")
            _backend_of(self).assign(self, result)
            return self
        if other.__class__ is _Array:
            d2 = other._dtype
        else:
            other, d2 = scalar_operand(name, other, self._dtype)
        dtype = (_resolved.get((name, self._dtype, d2)) or _resolve(name, self._dtype, d2))[1]\
            .result
        if dtype is not self._dtype:
            raise UnspecifiedType(f"in-place {name} would change the dtype of x from "
                                  f"{self._dtype.name} to {dtype.name}")
        if other.__class__ is _Array and other._shape != self._shape and \
                broadcast_shapes(self._shape, other._shape) != self._shape:
            raise ValueError(f"in-place {name}: operand of shape {other._shape} does not "
                             f"broadcast to x's shape {self._shape}")
        _binary(name, self, other, out=self)
        return self

    stem = OPS[name].operator if name != "matmul" else "matmul"
    operator.__name__ = operator.__qualname__ = f"__i{stem}__"
    return adapted(operator, f"Array.__i{stem}__")


def unary_operator(name: str) -> Callable[[Array], Array]:
    def operator(self: Array) -> Array:
        return _unary(name, self)

    return operator


def _function(name: str) -> Callable[..., Array]:
    """The namespace function of the element-wise function `name`."""
    if name in UNARY:
        general = partial(_unary, name)

        def function(x: Array, /) -> Array:
            return general(x)
    else:
        general = partial(_binary, name)

        def function(x1: Array | Scalar, x2: Array | Scalar, /) -> Array:
            return general(x1, x2)

    general = GENERAL[name] = adapted(general, name)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Element-wise {name} (spec: elementwise_functions/{name})."
    plans = {}  # the compiled executor's: operands of one dtype
    for d in dt.ALL_DTYPES:
        if name == "pow" and d in dt.SIGNED:  # numpy mode's rule (check_power) needs _binary
            continue
        try:
            plans[d] = _resolve(name, d, d)
        except TypeError:
            continue
    return fast(function, plans, general, arity=1 if name in UNARY else 2)


if TYPE_CHECKING:  # generated below; their signatures, for type checkers:
    from ._elementwise_api import *  # noqa: F403

# The general path of each element-wise function, by name: the standard's (_unary, _binary) with
# numpy mode's adapter (the operators use them too); and the namespace's element-wise functions.
GENERAL: dict[str, Callable[..., Array]] = {}
OPERATIONS: dict[str, Callable[..., Array]] = {name: _function(name) for name in (*UNARY, *BINARY)}
globals().update((name, f) for name, f in OPERATIONS.items() if name != "round")


def round(x: Array, /) -> Array:
    """Round to the nearest integer, halves to even (spec: elementwise_functions/round)."""
    return OPERATIONS["round"](x)


_CLIP = OPS["clip"]


@adapted
def clip(x: Array, /, min: Array | Scalar | None = None,
         max: Array | Scalar | None = None) -> Array:
    """Clamp to [min, max]. The result has x's dtype and the broadcast shape of x and the bounds;
    integer bounds beyond x's dtype are clamped to its range first."""
    if x.__class__ is not _Array:
        raise TypeError(f"clip() expects an hxarray Array, got {type(x).__name__}")
    if x._dtype not in dt.REAL_NUMERIC:  # bool or complex
        raise UnspecifiedType(f"clip() requires real-valued input, got {x._dtype.name}")
    bounds = []
    shapes = [x._shape]
    for label, bound in (("min", min), ("max", max)):
        if bound is not None and bound.__class__ is not _Array:
            if bound.__class__ is int and x._dtype in dt.INTEGER:
                low, high = dt.INTEGER_BOUNDS[x._dtype]
                bound = builtins.min(builtins.max(bound, low), high)
            bound = _check_scalar("clip", bound, x._dtype)
        elif bound is not None:
            if bound._buffer.device is not x._buffer.device:
                raise ValueError(f"clip(): {label} is on {bound.device}, x on {x.device}")
            if bound._dtype is dt.bool or bound._dtype in dt.COMPLEX_FLOATING or \
                    (bound._dtype in dt.FLOATING) != (x._dtype in dt.FLOATING):
                raise UnspecifiedType(f"clip(): {label} of dtype {bound._dtype.name} does not "
                                      f"match x of dtype {x._dtype.name}")
            shapes.append(bound._shape)
        bounds.append(bound)
    shape = broadcast_shapes(*shapes)
    if pays([x, *bounds]):  # one pass instead of a copy, then maximum, then minimum
        given = [b for b in bounds if b is not None]
        return internal(("clip", min is None, max is None), partial(_clip_bounds, min is None,
                                                                     max is None))(x, *given)
    return _clip(x, *bounds, shape)


def _clip_bounds(no_min: builtins.bool, no_max: builtins.bool, x: Array, *given: Any) -> Array:
    """clip(x, ...) with the bounds that are not None."""
    bounds = list(given)
    low = None if no_min else bounds.pop(0)
    high = None if no_max else bounds.pop(0)
    return _clip(x, low, high, broadcast_shapes(*(v._shape for v in (x, *given)
                                                  if v.__class__ is _Array)))


def _clip(x: Array, low: Array | Scalar | None, high: Array | Scalar | None,
          shape: tuple[int, ...]) -> Array:
    """The backend's clip of x (bounds checked, None where missing) over `shape`."""
    signature = _CLIP.signature(x._dtype, low._dtype if low.__class__ is _Array else x._dtype,
                                high._dtype if high.__class__ is _Array else x._dtype)
    return _backend_of(x).elementwise(_CLIP, (x, low, high), signature, shape)


__all__ = [*UNARY, *BINARY, "clip"]
