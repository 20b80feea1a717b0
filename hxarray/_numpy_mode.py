"""numpy mode: what hxarray does, outside strict mode, where the standard leaves a case open.

Every rule follows numpy 2 (NEP 50 promotion, numpy's ufunc loops, numpy's positional forms),
with a few deliberate changes listed in docs/modes.md (float32 where numpy gives float16; numpy
scalars are weak). The namespace functions reach this module only after the standard's own checks
have failed (a `NumpyRule` was raised), so nothing here costs anything on the paths both modes
share.
Each rule converts the operands to dtypes the standard does define, then calls the namespace
again: a backend never sees a case the standard leaves open.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import math
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import numpy as np

import hxarray

from . import _dtypes as dt
from ._array import Array
from ._modes import NumpyRule, is_strict
from ._ops import OPS
from ._views import broadcast_shapes

# The namespace functions used below are reached as attributes of the package (`hxarray.astype`,
# `hxarray._elementwise.OPERATIONS`): the namespace modules import this one, so these names are
# looked up when called, not at import.

Scalar = builtins.bool | int | float | complex
F = TypeVar("F", bound=Callable[..., Any])
_FLOATING_ONLY = frozenset({"floating-point", "real-valued floating-point"})
COMPARISONS = frozenset({"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"})
# Functions that take a Python int beyond an integer array's dtype: comparisons (by value), and
# those numpy computes in floating point (the int converts to the loop's floating dtype).
BY_VALUE = COMPARISONS | {name for name, op in OPS.items()
                          if op.arity == 2 and op.category in _FLOATING_ONLY}
ORDERED = frozenset({"less", "less_equal", "greater", "greater_equal", "maximum", "minimum"})
_MIRRORED = {"less": "greater", "less_equal": "greater_equal", "greater": "less",
             "greater_equal": "less_equal", "equal": "equal", "not_equal": "not_equal"}

# -- dtypes ----------------------------------------------------------------------------------------


def dtype_of(value: Any) -> dt.DType | None:
    """The hxarray dtype a numpy dtype, numpy scalar type, dtype string or Python type names
    (non-native byte orders map to the native dtype), or None."""
    if value is None or isinstance(value, Array):
        return None
    try:
        found = np.dtype(value)
    except (TypeError, ValueError):
        return None
    if not found.isnative:
        found = found.newbyteorder("=")
    return dt.FROM_NUMPY.get(found)


def describe_dtype(value: Any) -> str:
    """Why `value` is not an hxarray dtype, for error messages."""
    try:
        found = np.dtype(value)
    except (TypeError, ValueError):
        return f"{value!r} is not a data type"
    return f"numpy dtype {found} has no hxarray equivalent"


def result_type(*values: dt.DType | Scalar) -> dt.DType:
    """numpy's result dtype of dtypes and Python scalars (weak, NEP 50)."""
    found = np.result_type(*(v.numpy if v.__class__ is dt.DType else v for v in values))
    return dt.FROM_NUMPY[found]


def can_cast(source: dt.DType, target: dt.DType) -> builtins.bool:
    """numpy's `can_cast` under its default ("safe") rule."""
    return builtins.bool(np.can_cast(source.numpy, target.numpy))


# -- conversions -----------------------------------------------------------------------------------


def reinterpret(x: Array, dtype: dt.DType) -> Array:
    """The same bytes as another dtype of the same size (bool as uint8 or int8, and back)."""
    return Array._make(x._buffer, dtype, x._shape, x._strides, x._offset)


def cast(x: Array, dtype: dt.DType) -> Array:
    """`x` as `dtype`: itself, a reinterpretation of a bool array as int8/uint8, or a copy."""
    if x._dtype is dtype:
        return x
    if x._dtype is dt.bool and dtype in (dt.int8, dt.uint8):
        return reinterpret(x, dtype)
    return x._buffer.device.backend.copy(x, dtype)


def to_nonzero(x: Array) -> Array:
    """A uint8 result of a bool operation numpy computes on bools, back as bool (x != 0)."""
    return hxarray.not_equal(x, 0)


def python_type(dtype: dt.DType) -> type:
    """The Python scalar type of a dtype's kind."""
    return builtins.bool if dtype is dt.bool else int if dtype in dt.INTEGER else \
        complex if dtype in dt.COMPLEX_FLOATING else float


def common(operands: tuple[Any, ...] | list[Any]) -> tuple[dt.DType, tuple[Any, ...]]:
    """numpy's common dtype of arrays and (weak) scalars, and the operands as it: arrays cast,
    scalars (numpy's as the Python scalars they hold) as its Python type."""
    operands = [v.item() if isinstance(v, np.generic) else v for v in operands]
    dtype = result_type(*(v._dtype if v.__class__ is Array else v for v in operands))
    kind = python_type(dtype)
    return dtype, tuple(cast(v, dtype) if v.__class__ is Array else kind(v) for v in operands)


# -- element-wise functions ------------------------------------------------------------------------

# The numpy ufunc whose type resolution each function follows where it is not the function's own
# (`_ops.Op.ufunc`): real and imag follow absolute (bool stays bool), reciprocal follows sqrt
# (numpy's integer reciprocal is not kept: it gives the default floating dtype, as every
# floating-point function does).
_TYPE_RULES = {"real": np.absolute, "imag": np.absolute, "reciprocal": np.sqrt}


class Plan(NamedTuple):
    """How numpy mode runs one element-wise function on given operand types: the dtype each array
    operand is converted to, the Python type each scalar becomes, and the dtype the result is
    converted to (None: as computed)."""

    operands: tuple[dt.DType, ...]
    scalar: type | None
    result: dt.DType | None
    mixed_sign: builtins.bool = False
    complex_order: builtins.bool = False


_plans: dict[tuple[Any, ...], Plan | str] = {}


def _type_name(t: dt.DType | type) -> str:
    return t.name if isinstance(t, dt.DType) else f"Python {t.__name__}"


def _numpy_type(t: dt.DType | type) -> Any:
    """What numpy's type resolution takes for an operand: the dtype of an array, the weak Python
    int, float and complex (a Python bool ranks lowest anyway, as numpy's bool)."""
    return t.numpy if isinstance(t, dt.DType) else np.dtype(t) if t is builtins.bool else t


def _floating(d: dt.DType | None) -> dt.DType:
    """numpy's loop dtype `d`, float32 where numpy's is float16 (None: hxarray has none)."""
    return dt.float32 if d is None else d


def _make_plan(name: str, types: tuple[dt.DType | type, ...]) -> Plan | str:
    op = OPS[name]
    ufunc = _TYPE_RULES.get(name) or op.ufunc
    assert ufunc is not None  # every operation with a category has one
    described = " and ".join(_type_name(t) for t in types)
    try:
        loop = ufunc.resolve_dtypes((*(_numpy_type(t) for t in types), *(None,) * ufunc.nout))
    except (TypeError, ValueError):
        return f"{name}() is not defined for {described} (numpy has no such loop either)"
    category = op.category
    assert category is not None  # where and clip, the operations without one, plan themselves
    if category == "bool":  # numpy's logical functions take any dtype by its truth value
        return Plan((dt.bool,) * len(types), builtins.bool, None)
    computed = [_floating(dt.FROM_NUMPY.get(d)) for d in loop[:len(types)]]
    result = _floating(dt.FROM_NUMPY.get(loop[len(types)]))
    allowed = dt.CATEGORIES[category]
    if computed[0] is dt.bool and all(c is dt.bool for c in computed) and dt.bool not in allowed:
        # numpy's bool loops (add is or, multiply is and, ...): on uint8, then back to bool
        return Plan((dt.uint8,) * len(types), int, None if result is not dt.bool
                    or op.result == "bool" else dt.bool)
    if len(set(computed)) > 1:
        if name in COMPARISONS and set(computed) == {dt.int64, dt.uint64}:
            return Plan(tuple(computed), int, None, mixed_sign=True)
        return f"{name}() is not defined for {described}"
    if name in ORDERED and computed[0] in dt.COMPLEX_FLOATING:
        return Plan(tuple(computed), complex, None, complex_order=True)
    if computed[0] not in allowed:
        return (f"{name}() does not take {described}, in either mode (numpy's "
                f"{ufunc.__name__} on {computed[0].name} is not provided)")
    standard = hxarray._elementwise._resolve(name, computed[0], computed[0])[1].result
    return Plan(tuple(computed), python_type(computed[0]),
                None if standard is result else result)


def _plan(name: str, operands: list[Any]) -> Plan:
    types = [v._dtype if v.__class__ is Array else type(v) for v in operands]
    key = (name, *types)
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = _make_plan(name, tuple(types))
    if isinstance(plan, str):
        raise TypeError(plan)
    return plan


def _convert(value: Any, dtype: dt.DType, scalar: type | None) -> Any:
    if value.__class__ is Array:
        return cast(value, dtype) if dtype is not dt.bool or value._dtype is dt.bool \
            else to_nonzero(value)
    return scalar(value) if scalar is not None else value


def _out_of_range(name: str, x1: Any, x2: Any) -> Array | None:
    """numpy's comparison of an integer array with a Python int beyond its dtype: the same
    answer for every element (None if the int fits)."""
    array, value, op = (x1, x2, name) if x1.__class__ is Array else (x2, x1, _MIRRORED[name])
    if value.__class__ is not int or array._dtype not in dt.INTEGER:
        return None
    low, high = dt.INTEGER_BOUNDS[array._dtype]
    if low <= value <= high:
        return None
    above = value > high  # array < value everywhere
    answer = {"equal": False, "not_equal": True, "less": above, "less_equal": above,
              "greater": not above, "greater_equal": not above}[op]
    return hxarray.full(array._shape, answer, dtype=dt.bool, device=array._buffer.device)


def _mixed_sign(name: str, x1: Array, x2: Array) -> Array:
    """An exact comparison of int64 with uint64 (numpy 2 has loops for it): negative signed
    values compare below every unsigned one; the rest compare as uint64."""
    operations = hxarray._elementwise.OPERATIONS
    signed, op = (x1, name) if x1._dtype is dt.int64 else (x2, _MIRRORED[name])
    negative_answer = op in ("less", "less_equal", "not_equal")
    as_unsigned = cast(signed, dt.uint64)
    pair = (as_unsigned, x2) if signed is x1 else (x1, as_unsigned)
    return hxarray.where(operations["less"](signed, 0), negative_answer, operations[name](*pair))


def elementwise(name: str, *operands: Any) -> Array:
    """numpy's `name` of arrays and scalars that the standard's rules do not combine (numpy
    scalars count as the Python scalars they hold)."""
    values = [v.item() if isinstance(v, np.generic) else v for v in operands]
    if name in COMPARISONS:
        constant = _out_of_range(name, *values)
        if constant is not None:
            return constant
    from ._fuse import internal, pays

    if pays(values):  # the conversions and the operation as one kernel
        return internal(("numpy mode", name), functools.partial(_converted, name))(*values)
    return _converted(name, *values)


def _converted(name: str, *values: Any) -> Array:
    """`name` of the values converted as numpy converts them, the result converted back."""
    plan = _plan(name, list(values))
    try:
        converted = [_convert(v, d, plan.scalar) for v, d in zip(values, plan.operands)]
    except OverflowError:  # a Python int beyond float64 (numpy's OverflowError too)
        raise OverflowError(f"{name}(): a Python int is too large for {plan.operands[0].name}, "
                            "the dtype numpy computes in") from None
    if plan.mixed_sign:
        return _mixed_sign(name, *converted)
    if plan.complex_order:
        return complex_ordered(name, *converted)
    result = hxarray._elementwise.OPERATIONS[name](*converted)
    if plan.result is not None and result._dtype is not plan.result:
        result = to_nonzero(result) if plan.result is dt.bool else cast(result, plan.result)
    return result


def check_power(exponent: Any) -> None:
    """numpy mode: numpy's ValueError for an integer raised to a negative integer power (the
    standard leaves the result open; strict mode computes 1 / x1**-x2 truncated)."""
    if is_strict():
        return
    if exponent.__class__ is Array:
        negative = exponent._dtype in dt.SIGNED and \
            builtins.bool(hxarray.any(hxarray.less(exponent, 0)))
    else:
        negative = exponent < 0
    if negative:
        raise ValueError("Integers to negative integer powers are not allowed.")


def assign_inplace(name: str, x: Array, result: Array) -> Array:
    """`x <op>= y` under numpy's in-place rule: the result is cast back to x's dtype where numpy's
    "same_kind" casting allows it."""
    if not np.can_cast(result._dtype.numpy, x._dtype.numpy, "same_kind"):
        raise TypeError(f"in-place {name}: cannot cast the {result._dtype.name} result back to "
                        f"x's {x._dtype.name} (numpy's 'same_kind' rule)")
    if broadcast_shapes(x._shape, result._shape) != x._shape:
        raise ValueError(f"in-place {name}: a result of shape {result._shape} does not broadcast "
                         f"to x's shape {x._shape}")
    x._buffer.device.backend.assign(x, result)
    return x


# -- complex numbers in order ----------------------------------------------------------------------
# numpy orders complex numbers lexicographically (real parts, then imaginary parts). Each function
# below composes that order from the namespace's functions of the real and imaginary parts, so it
# holds on every device, in the device's own kernels.


def _parts(v: Any) -> tuple[Any, Any]:
    """The real and imaginary parts of a complex array or a Python complex."""
    if v.__class__ is Array:
        return hxarray.real(v), hxarray.imag(v)
    return v.real, v.imag


def _nan_in(v: Any) -> Any:
    """Where a complex array (or a Python complex) holds a NaN in either part."""
    real, imag = _parts(v)
    if v.__class__ is Array:
        return hxarray.logical_or(hxarray.isnan(real), hxarray.isnan(imag))
    return real != real or imag != imag


def complex_ordered(name: str, x1: Any, x2: Any) -> Array:
    """numpy's `name` (a comparison, maximum or minimum) of complex operands of one dtype (or
    Python complex scalars). A comparison is decided by the real parts where they differ and no
    imaginary part is NaN, else by the imaginary parts where the real parts are equal; anything
    NaN decides compares False. maximum (minimum) is x1 where x1 holds a NaN or is >= (<=) x2,
    else x2, so NaNs propagate, x1's first."""
    if name in ("maximum", "minimum"):
        keep = hxarray.logical_or(_nan_in(x1), complex_ordered(
            "greater_equal" if name == "maximum" else "less_equal", x1, x2))
        return hxarray.where(keep, x1, x2)
    operations = hxarray._elementwise.OPERATIONS
    (real1, imag1), (real2, imag2) = _parts(x1), _parts(x2)
    by_real = operations[name.removesuffix("_equal")](real1, real2)
    imaginary = [hxarray.logical_not(hxarray.isnan(v)) for v in (imag1, imag2)
                 if v.__class__ is Array]
    for valid in imaginary:
        by_real = hxarray.logical_and(by_real, valid)
    if any(v.__class__ is not Array and v != v for v in (imag1, imag2)):
        by_real = hxarray.logical_and(by_real, False)
    by_imag = hxarray.logical_and(operations["equal"](real1, real2),
                                  operations[name](imag1, imag2))
    return hxarray.logical_or(by_real, by_imag)


def complex_arg_extremum(name: str, x: Array, axis: int | None,
                         keepdims: builtins.bool) -> Array:
    """numpy's argmax (argmin) of a complex array (the reduced extent is not empty): the index
    of the first element holding a NaN, else the first of the lexicographic maximum (minimum)."""
    values, along = (hxarray.reshape(x, (-1,)), 0) if axis is None else (x, axis)
    extremum, beyond = (hxarray.max, -math.inf) if name == "argmax" else (hxarray.min, math.inf)
    real, imag = _parts(values)
    nan = hxarray.logical_or(hxarray.isnan(real), hxarray.isnan(imag))
    real = hxarray.where(nan, beyond, real)
    best = hxarray.logical_and(hxarray.equal(real, extremum(real, axis=along, keepdims=True)),
                               hxarray.logical_not(nan))
    imag = hxarray.where(best, imag, beyond)
    best = hxarray.logical_and(best, hxarray.equal(imag, extremum(imag, axis=along,
                                                                     keepdims=True)))
    index = hxarray.where(hxarray.any(nan, axis=along), hxarray.argmax(nan, axis=along),
                          hxarray.argmax(best, axis=along))
    if not keepdims:
        return index
    return hxarray.reshape(index, (1,) * x.ndim) if axis is None else \
        hxarray.expand_dims(index, axis=axis)


def complex_extremum(name: str, x: Array, axes: tuple[int, ...],
                     keepdims: builtins.bool) -> Array:
    """numpy's max (min) of a complex array over the normalised, non-empty `axes`: the element
    complex_arg_extremum picks, over the reduced axes flattened in order."""
    kept = [a for a in range(x.ndim) if a not in axes]
    shape = tuple(x._shape[a] for a in kept)
    rows = hxarray.reshape(hxarray.permute_dims(x, (*kept, *axes)),
                           (*shape, math.prod(x._shape[a] for a in axes)))
    index = complex_arg_extremum("argmax" if name == "max" else "argmin", rows, -1, True)
    picked = hxarray.take_along_axis(rows, index, axis=-1)
    return hxarray.reshape(picked, tuple(1 if a in axes else n for a, n in enumerate(x._shape))
                           if keepdims else shape)


def complex_argsort(x: Array, axis: int) -> Array:
    """The stable ascending permutation of a complex array along `axis` in numpy's order:
    numbers lexicographically, then those with a NaN imaginary part (by real part), a NaN real
    part (by imaginary part), both: stable sorts by imaginary part, real part, then NaN group."""
    real, imag = _parts(x)
    order = hxarray.argsort(imag, axis=axis, stable=True)
    for key in (real, hxarray.add(hxarray.multiply(hxarray.isnan(real), 2),
                                  hxarray.isnan(imag))):
        order = hxarray.take_along_axis(order, hxarray.argsort(
            hxarray.take_along_axis(key, order, axis=axis), axis=axis, stable=True), axis=axis)
    return order


class ComplexSorter:
    """Sorts complex arrays in numpy's order, with a backend's `sort` and `argsort` signature."""

    @staticmethod
    def argsort(x: Array, axis: int, stable: builtins.bool, out: Array) -> None:
        x._buffer.device.backend.assign(out, complex_argsort(x, axis))

    @staticmethod
    def sort(x: Array, axis: int, stable: builtins.bool, out: Array) -> None:
        x._buffer.device.backend.assign(
            out, hxarray.take_along_axis(x, complex_argsort(x, axis), axis=axis))


def complex_clip(x: Array, low: Any, high: Any) -> Array:
    """numpy's clip where x or a bound is complex: minimum(maximum(x, low), high) in numpy's
    order, in the common dtype (NEP 50)."""
    given = [v for v in (x, low, high) if v is not None]
    _, (result, *bounds) = common(given)
    if low is None and high is None:
        return hxarray.asarray(result, copy=True)
    if low is not None:
        result = complex_ordered("maximum", result, bounds.pop(0))
    if high is not None:
        result = complex_ordered("minimum", result, bounds.pop(0))
    return result


# -- other functions' inputs -----------------------------------------------------------------------


def coerce(x: Array, category: str, function: str) -> Array:
    """`x` as numpy takes it where the standard's dtype `category` excludes its dtype: integer and
    bool arrays become float64 for floating-point functions (the complex dtype of their precision
    for complex ones), bool arrays are int8 (zero-copy) for numeric ones; anything else raises the
    standard's TypeError."""
    exact = x._dtype in dt.INTEGER or x._dtype is dt.bool
    if category in _FLOATING_ONLY and exact:
        return cast(x, dt.float64)
    if category == "complex floating-point" and (exact or x._dtype in dt.REAL_FLOATING):
        return cast(x, dt.COMPLEX_OF.get(x._dtype, dt.complex128))
    if x._dtype is dt.bool and category in ("numeric", "real-valued"):
        return reinterpret(x, dt.int8)
    raise TypeError(f"{function}() requires an array of {category} dtype, got {x._dtype.name}")


def back_to_bool(result: Array, x: Array) -> Array:
    """A result computed on the int8 view of bool input `x` (max, min, sort), as bool again."""
    return reinterpret(result, dt.bool) if x._dtype is dt.bool else result


# -- numpy's positional forms ----------------------------------------------------------------------


def numpy_keywords(function: str, args: tuple[Any, ...], names: tuple[str, ...],
                   kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments numpy's positional form `args` stands for: `names` are numpy's
    parameters in its order (an "out" must be None), `kwargs` those given by keyword."""
    if len(args) > len(names):
        raise TypeError(f"{function}() takes at most {len(names)} positional arguments after the "
                        f"standard's (numpy's: {', '.join(names)}), got {len(args)}")
    kwargs = dict(kwargs)
    for name, value in zip(names, args):
        if name == "out":
            if value is not None:
                raise TypeError(f"{function}(): out= is not supported; use the result")
        elif name in kwargs:
            raise TypeError(f"{function}() got multiple values for argument {name!r}")
        else:
            kwargs[name] = value
    return kwargs


def numpy_positional(*names: str) -> Callable[[F], F]:
    """Decorator: numpy mode also takes numpy's positional form of the keyword-only parameters
    `names` (numpy's order after the standard's positional parameters, e.g. `sum(x, 0)` for
    `sum(x, axis=0)`); no standard call changes meaning, as the standard passes them by keyword.
    Strict mode refuses them with Python's own TypeError."""
    def decorate(function: F) -> F:
        parameters = inspect.signature(function).parameters.values()
        positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                         for p in parameters)
        label = function.__name__

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if len(args) > positional and not is_strict():
                kwargs = numpy_keywords(label, args[positional:], names, kwargs)
                args = args[:positional]
            return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


__all__ = ["NumpyRule"]
