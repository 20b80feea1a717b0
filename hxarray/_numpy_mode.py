"""numpy mode: what hxarray does, outside strict mode, where the standard leaves a case open.

Every rule follows numpy 2 (NEP 50 promotion, numpy's ufunc loops, numpy's positional forms),
with a few deliberate changes listed in docs/modes.md (numpy scalars are weak, ...). A namespace
function reaches this module only after the standard's own check has failed: its adapter
(`_adapter.adapted`) catches the `Unspecified` the check raised and calls the function's rule
here (`RULES`), or the check itself hands the argument it refused to a conversion here
(`coerce`, `as_dtype`, ...); so nothing here costs anything on the paths both modes share.
Each rule converts the operands to dtypes the standard does define, then calls the namespace
again: a backend never sees a case the standard leaves open. `DIFFERENCES` lists every place the
modes differ, one entry per row of docs/modes.md's table (which a test renders from it).
"""

from __future__ import annotations

import builtins
import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import numpy as np

from . import (
    _checks,
    _creation,
    _data_types,
    _elementwise,
    _indexing,
    _linalg_functions,
    _manipulation,
    _numpy_functions,
    _numpy_statistics,
    _searching,
    _sets,
    _sorting,
    _statistical,
    _utility,
    fft,
    linalg,
)
from . import _dtypes as dt
from ._adapter import use_numpy_mode
from ._array import Array
from ._fuse import internal, pays
from ._modes import STRICT, Unspecified
from ._numpy_conversions import (  # the conversions the chapters' checks call, below them
    FLOATING_ONLY,
    assign_inplace,
    cast,
    python_type,
    reinterpret,
)
from ._ops import OPS

# numpy mode sits on top of the chapters: it imports them, and none of them imports it. Their
# checks call the conversions in `_numpy_conversions`; their adapters (`_adapter.adapted`) reach
# the rules here through `use_numpy_mode`, called at the end of this module.

Scalar = builtins.bool | int | float | complex
F = TypeVar("F", bound=Callable[..., Any])
COMPARISONS = frozenset({"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"})
# Functions that take a Python int beyond an integer array's dtype: comparisons (by value), and
# those numpy computes in floating point (the int converts to the loop's floating dtype).
BY_VALUE = COMPARISONS | {name for name, op in OPS.items()
                          if op.arity == 2 and op.category in FLOATING_ONLY}
ORDERED = frozenset({"less", "less_equal", "greater", "greater_equal", "maximum", "minimum"})
_MIRRORED = {"less": "greater", "less_equal": "greater_equal", "greater": "less",
             "greater_equal": "less_equal", "equal": "equal", "not_equal": "not_equal"}

# -- dtypes ----------------------------------------------------------------------------------------


def result_type(*values: dt.DType | Scalar) -> dt.DType:
    """numpy's result dtype of dtypes and Python scalars (weak, NEP 50). OverflowError where it
    would be numpy's object dtype: a Python int that no integer dtype holds, and no floating
    or complex operand to take it."""
    found = np.result_type(*(v.numpy if type(v) is dt.DType else v for v in values))
    result = dt.FROM_NUMPY.get(found)
    if result is None:
        big = [v for v in values if isinstance(v, int) and not -2**63 <= v < 2**64]
        raise OverflowError(f"Python int {big[0] if big else values} is out of bounds for every "
                            "hxarray integer dtype (int64 and uint64)")
    return result


def promote(d1: dt.DType, d2: dt.DType, error: Exception) -> dt.DType:
    """numpy's promotion of two dtypes the standard does not promote (`error`: strict mode's)."""
    if STRICT.get():
        raise error
    return result_type(d1, d2)


# -- conversions -----------------------------------------------------------------------------------


def to_nonzero(x: Array) -> Array:
    """A uint8 result of a bool operation numpy computes on bools, back as bool (x != 0)."""
    return _elementwise.not_equal(x, 0)


def common(operands: tuple[Any, ...] | list[Any]) -> tuple[dt.DType, tuple[Any, ...]]:
    """numpy's common dtype of arrays and (weak) scalars, and the operands as it: arrays cast,
    scalars (numpy's as the Python scalars they hold) as its Python type."""
    operands = [v.item() if isinstance(v, np.generic) else v for v in operands]
    dtype = result_type(*(v._dtype if type(v) is Array else v for v in operands))
    kind = python_type(dtype)
    return dtype, tuple(cast(v, dtype) if type(v) is Array else kind(v) for v in operands)


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
    computed = [dt.FROM_NUMPY[d] for d in loop if d in dt.FROM_NUMPY]
    if len(computed) < len(loop):  # a loop of a dtype hxarray lacks
        return f"{name}() of {described} computes in a dtype hxarray does not have"
    result = computed.pop()
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
    standard = _elementwise._resolve(name, computed[0], computed[0])[1].result
    return Plan(tuple(computed), python_type(computed[0]),
                None if standard is result else result)


def _plan(name: str, operands: list[Any]) -> Plan:
    types = [v._dtype if type(v) is Array else type(v) for v in operands]
    key = (name, *types)
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = _make_plan(name, tuple(types))
    if isinstance(plan, str):
        raise TypeError(plan)
    return plan


def _convert(value: Any, dtype: dt.DType, scalar: type | None) -> Any:
    if type(value) is Array:
        return cast(value, dtype) if dtype is not dt.bool or value._dtype is dt.bool \
            else to_nonzero(value)
    return scalar(value) if scalar is not None else value


def _out_of_range(name: str, x1: Any, x2: Any) -> Array | None:
    """numpy's comparison of an integer array with a Python int beyond its dtype: the same
    answer for every element (None if the int fits)."""
    array, value, op = (x1, x2, name) if type(x1) is Array else (x2, x1, _MIRRORED[name])
    if type(value) is not int or array._dtype not in dt.INTEGER:
        return None
    low, high = dt.INTEGER_BOUNDS[array._dtype]
    if low <= value <= high:
        return None
    above = value > high  # array < value everywhere
    answer = {"equal": False, "not_equal": True, "less": above, "less_equal": above,
              "greater": not above, "greater_equal": not above}[op]
    return _creation.full(array._shape, answer, dtype=dt.bool, device=array._buffer.device)


def _mixed_sign(name: str, x1: Array, x2: Array) -> Array:
    """An exact comparison of int64 with uint64 (numpy 2 has loops for it): negative signed
    values compare below every unsigned one; the rest compare as uint64."""
    operations = _elementwise.OPERATIONS
    signed, op = (x1, name) if x1._dtype is dt.int64 else (x2, _MIRRORED[name])
    negative_answer = op in ("less", "less_equal", "not_equal")
    as_unsigned = cast(signed, dt.uint64)
    pair = (as_unsigned, x2) if signed is x1 else (x1, as_unsigned)
    return _searching.where(operations["less"](signed, 0), negative_answer, operations[name](*pair))


def elementwise(name: str, *operands: Any) -> Array:
    """numpy's `name` of arrays and scalars that the standard's rules do not combine (numpy
    scalars count as the Python scalars they hold)."""
    values = [v.item() if isinstance(v, np.generic) else v for v in operands]
    if name in COMPARISONS:
        constant = _out_of_range(name, *values)
        if constant is not None:
            return constant
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
    result = _elementwise.OPERATIONS[name](*converted)
    if plan.result is not None and result._dtype is not plan.result:
        result = to_nonzero(result) if plan.result is dt.bool else cast(result, plan.result)
    return result


# -- complex numbers in order ----------------------------------------------------------------------
# numpy orders complex numbers lexicographically (real parts, then imaginary parts). Each function
# below composes that order from the namespace's functions of the real and imaginary parts, so it
# holds on every device, in the device's own kernels.


def _parts(v: Any) -> tuple[Any, Any]:
    """The real and imaginary parts of a complex array or a Python complex."""
    if type(v) is Array:
        return _elementwise.real(v), _elementwise.imag(v)
    return v.real, v.imag


def _nan_in(v: Any) -> Any:
    """Where a complex array (or a Python complex) holds a NaN in either part."""
    real, imag = _parts(v)
    if type(v) is Array:
        return _elementwise.logical_or(_elementwise.isnan(real), _elementwise.isnan(imag))
    return real != real or imag != imag


def complex_ordered(name: str, x1: Any, x2: Any) -> Array:
    """numpy's `name` (a comparison, maximum or minimum) of complex operands of one dtype (or
    Python complex scalars). A comparison is decided by the real parts where they differ and no
    imaginary part is NaN, else by the imaginary parts where the real parts are equal; anything
    NaN decides compares False. maximum (minimum) is x1 where x1 holds a NaN or is >= (<=) x2,
    else x2, so NaNs propagate, x1's first."""
    if name in ("maximum", "minimum"):
        keep = _elementwise.logical_or(_nan_in(x1), complex_ordered(
            "greater_equal" if name == "maximum" else "less_equal", x1, x2))
        return _searching.where(keep, x1, x2)
    operations = _elementwise.OPERATIONS
    (real1, imag1), (real2, imag2) = _parts(x1), _parts(x2)
    by_real = operations[name.removesuffix("_equal")](real1, real2)
    imaginary = [_elementwise.logical_not(_elementwise.isnan(v)) for v in (imag1, imag2)
                 if type(v) is Array]
    for valid in imaginary:
        by_real = _elementwise.logical_and(by_real, valid)
    if any(type(v) is not Array and v != v for v in (imag1, imag2)):
        by_real = _elementwise.logical_and(by_real, False)
    by_imag = _elementwise.logical_and(operations["equal"](real1, real2),
                                       operations[name](imag1, imag2))
    return _elementwise.logical_or(by_real, by_imag)


def complex_arg_extremum(name: str, x: Array, axis: int | None,
                         keepdims: builtins.bool) -> Array:
    """numpy's argmax (argmin) of a complex array (the reduced extent is not empty): the index
    of the first element holding a NaN, else the first of the lexicographic maximum (minimum)."""
    values, along = (_manipulation.reshape(x, (-1,)), 0) if axis is None else (x, axis)
    extremum, beyond = (_statistical.max, -math.inf) if name == "argmax" else \
        (_statistical.min, math.inf)
    real, imag = _parts(values)
    nan = _elementwise.logical_or(_elementwise.isnan(real), _elementwise.isnan(imag))
    real = _searching.where(nan, beyond, real)
    best = _elementwise.logical_and(
        _elementwise.equal(real, extremum(real, axis=along, keepdims=True)),
        _elementwise.logical_not(nan))
    imag = _searching.where(best, imag, beyond)
    best = _elementwise.logical_and(
        best, _elementwise.equal(imag, extremum(imag, axis=along, keepdims=True)))
    index = _searching.where(_utility.any(nan, axis=along), _searching.argmax(nan, axis=along),
                             _searching.argmax(best, axis=along))
    if not keepdims:
        return index
    return _manipulation.reshape(index, (1,) * x.ndim) if axis is None else \
        _manipulation.expand_dims(index, axis=axis)


def complex_extremum(name: str, x: Array, axes: tuple[int, ...],
                     keepdims: builtins.bool) -> Array:
    """numpy's max (min) of a complex array over the normalised, non-empty `axes`: the element
    complex_arg_extremum picks, over the reduced axes flattened in order."""
    kept = [a for a in range(x.ndim) if a not in axes]
    shape = tuple(x._shape[a] for a in kept)
    rows = _manipulation.reshape(_manipulation.permute_dims(x, (*kept, *axes)),
                                 (*shape, math.prod(x._shape[a] for a in axes)))
    index = complex_arg_extremum("argmax" if name == "max" else "argmin", rows, -1, True)
    picked = _indexing.take_along_axis(rows, index, axis=-1)
    return _manipulation.reshape(
        picked, tuple(1 if a in axes else n for a, n in enumerate(x._shape)) if keepdims else shape)


def complex_argsort(x: Array, axis: int) -> Array:
    """The stable ascending permutation of a complex array along `axis` in numpy's order:
    numbers lexicographically, then those with a NaN imaginary part (by real part), a NaN real
    part (by imaginary part), both: stable sorts by imaginary part, real part, then NaN group."""
    real, imag = _parts(x)
    order = _sorting.argsort(imag, axis=axis, stable=True)
    for key in (real, _elementwise.add(_elementwise.multiply(_elementwise.isnan(real), 2),
                                       _elementwise.isnan(imag))):
        order = _indexing.take_along_axis(order, _sorting.argsort(
            _indexing.take_along_axis(key, order, axis=axis), axis=axis, stable=True), axis=axis)
    return order


class ComplexSorter:
    """Sorts complex arrays in numpy's order, with a backend's `sort` and `argsort` signature."""

    @staticmethod
    def argsort(x: Array, axis: int, stable: builtins.bool, out: Array) -> None:
        x._buffer.device.backend.assign(out, complex_argsort(x, axis))

    @staticmethod
    def sort(x: Array, axis: int, stable: builtins.bool, out: Array) -> None:
        x._buffer.device.backend.assign(
            out, _indexing.take_along_axis(x, complex_argsort(x, axis), axis=axis))


def _complex_extremum(name: str) -> Callable[..., Array]:
    """The rule of max or min (`name`) of a complex array: numpy's order."""
    def rule(x: Array, /, *, axis: Any = None, keepdims: Any = False) -> Array:
        axes = _statistical.extremum_axes(name, x, axis)
        return complex_extremum(name, x, axes, _checks.as_bool(keepdims, name, "keepdims"))

    return rule


def _complex_arg_extremum(name: str) -> Callable[..., Array]:
    """The rule of argmax or argmin (`name`) of a complex array: numpy's order."""
    def rule(x: Array, /, *, axis: Any = None, keepdims: Any = False) -> Array:
        keepdims = _checks.as_bool(keepdims, name, "keepdims")
        return complex_arg_extremum(name, x, _searching.arg_extremum_axis(name, x, axis),
                                    keepdims)

    return rule


def _complex_sort(name: str) -> Callable[..., Array]:
    """The rule of sort or argsort (`name`) of a complex array: numpy's order."""
    def rule(x: Array, /, *, axis: Any = -1, descending: Any = False, stable: Any = True
             ) -> Array:
        return _sorting.sort_by(ComplexSorter, name, x, axis, descending, stable,
                                        name == "argsort")

    return rule


def complex_clip(x: Array, low: Any, high: Any) -> Array:
    """numpy's clip where x or a bound is complex: minimum(maximum(x, low), high) in numpy's
    order, in the common dtype (NEP 50)."""
    given = [v for v in (x, low, high) if v is not None]
    _, (result, *bounds) = common(given)
    if low is None and high is None:
        return _creation.asarray(result, copy=True)
    if low is not None:
        result = complex_ordered("maximum", result, bounds.pop(0))
    if high is not None:
        result = complex_ordered("minimum", result, bounds.pop(0))
    return result


# -- other functions' inputs -----------------------------------------------------------------------


# -- numpy's positional forms ----------------------------------------------------------------------

# numpy's positional order of the keyword-only parameters each function also takes positionally
# (after the standard's positional parameters); an "out" must be None. The standard passes these
# parameters by keyword, so no standard call changes meaning.
POSITIONAL: dict[str, tuple[str, ...]] = {
    "sum": ("axis", "dtype", "out", "keepdims"), "prod": ("axis", "dtype", "out", "keepdims"),
    "max": ("axis", "out", "keepdims"), "min": ("axis", "out", "keepdims"),
    "all": ("axis", "out", "keepdims"), "any": ("axis", "out", "keepdims"),
    **dict.fromkeys(("mean", "var", "std", "count_nonzero", "sort", "argsort", "flip", "roll",
                     "repeat", "take_along_axis"), ("axis",)),
    **dict.fromkeys(("argmax", "argmin", "concat", "stack", "take"), ("axis", "out")),
    "diff": ("n", "axis", "prepend", "append"),
    "searchsorted": ("side", "sorter"),
    "tensordot": ("axes",),
    **dict.fromkeys(("asarray", "zeros", "ones", "empty", "full", "zeros_like", "ones_like",
                     "empty_like", "full_like"), ("dtype",)),
    "eye": ("k", "dtype"),
    "arange": ("dtype",),
    "linspace": ("endpoint",),
    **dict.fromkeys(("fft.fft", "fft.ifft", "fft.rfft", "fft.irfft", "fft.hfft", "fft.ihfft"),
                    ("n", "axis", "norm")),
    **dict.fromkeys(("fft.fftn", "fft.ifftn", "fft.rfftn", "fft.irfftn"), ("s", "axes", "norm")),
    **dict.fromkeys(("fft.fftfreq", "fft.rfftfreq"), ("d",)),
    **dict.fromkeys(("fft.fftshift", "fft.ifftshift"), ("axes",)),
    "linalg.svd": ("full_matrices",),
    "linalg.qr": ("mode",),
}


def numpy_keywords(function: str, standard: int, args: tuple[Any, ...], kwargs: dict[str, Any]
                   ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call `function(*args, **kwargs)` with numpy's positional form of its keyword-only
    parameters (the arguments after the `standard` positional ones) given as keywords; unchanged
    where `function` has no such form (Python's own TypeError then says what is wrong)."""
    names = POSITIONAL.get(function)
    if names is None:
        return args, kwargs
    args, extra = args[:standard], args[standard:]
    if len(extra) > len(names):
        raise TypeError(f"{function}() takes at most {len(names)} positional arguments after the "
                        f"standard's (numpy's: {', '.join(names)}), got {len(extra)}")
    kwargs = dict(kwargs)
    for name, value in zip(names, extra):
        if name == "out":
            if value is not None:
                raise TypeError(f"{function}(): out= is not supported; use the result")
        elif name in kwargs:
            raise TypeError(f"{function}() got multiple values for argument {name!r}")
        else:
            kwargs[name] = value
    return args, kwargs


# -- the rules: numpy mode's version of a function, for the calls the standard leaves open ---------


def apply(function: str, case: Unspecified, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """numpy mode's answer to `function(*args, **kwargs)`, which raised `case`: the function's
    rule (`RULES`); where it has none, `case` itself (strict mode's error: numpy has no rule)."""
    rule = RULES.get(function)
    if rule is None:
        raise case
    if isinstance(case, OverflowError) and function not in _BY_VALUE_FUNCTIONS:
        raise OverflowError(str(case)) from None  # arithmetic: numpy raises too
    return rule(*args, **kwargs)


def _inplace(name: str) -> Callable[[Array, Any], Array]:
    """`x <op>= y`: numpy's result, cast back to x's dtype ("same_kind")."""
    def rule(x: Array, other: Any) -> Array:
        return assign_inplace(name, x, elementwise(name, x, other))

    return rule


def clip(x: Array, min: Any = None, max: Any = None) -> Array:
    """numpy's clip of a bool or complex x, or with bounds of another kind: x and the bounds in
    their common dtype (NEP 50), booleans as 0 and 1, complex numbers in numpy's order."""
    if any(v._dtype in dt.COMPLEX_FLOATING if type(v) is Array else isinstance(v, complex)
           for v in (x, min, max)):
        return complex_clip(x, min, max)
    given = [v for v in (min, max) if v is not None]
    dtype, (x, *given) = common((x, *given))
    if dtype is dt.bool:  # booleans clip as 0 and 1
        x = cast(x, dt.uint8)
        given = [cast(v, dt.uint8) if type(v) is Array else int(v) for v in given]
    low = given.pop(0) if min is not None else None
    result = _elementwise.clip(x, low, given[0] if max is not None else None)
    return reinterpret(result, dt.bool) if dtype is dt.bool else result


def where(condition: Array, *values: Any) -> Array | tuple[Array, ...]:
    """numpy's where: `where(c)` is `nonzero(c)`; any condition by its truth value; x1 and x2 in
    their common dtype (NEP 50), two scalars too."""
    if not values or values[0] is _searching._MISSING:  # (x2 alone missing: standard's TypeError)
        return _searching.nonzero(condition)
    if condition._dtype is not dt.bool:
        condition = _data_types.astype(condition, dt.bool)
    dtype, (x1, x2) = common(values)
    if type(x1) is not Array and type(x2) is not Array:
        x1 = condition._buffer.device.backend.full((), x1, dtype, condition._buffer.device)
    return _searching.where(condition, x1, x2)


_CHAPTERS = (_creation, _data_types, _elementwise, _indexing, _linalg_functions, _manipulation,
             _searching, _sets, _sorting, _statistical, _utility)


@functools.cache
def _namespace(name: str) -> Callable[..., Any]:
    """The namespace function `name` ("concat", "linalg.solve") from its module: linalg's or
    fft's, or the last chapter that exports it (as `hxarray/__init__` imports them)."""
    module, _, function = name.rpartition(".")
    if module:
        return getattr({"linalg": linalg, "fft": fft}[module], function)
    return next(getattr(chapter, name) for chapter in reversed(_CHAPTERS)
                if name in chapter.__all__)


def _promoted(name: str) -> Callable[..., Array]:
    """The rule of a function of two operands that the standard does not promote across kinds:
    both in numpy's common dtype (NEP 50), then the function."""
    def rule(x1: Any, x2: Any, /, **kwargs: Any) -> Array:
        return _namespace(name)(*common((x1, x2))[1], **kwargs)

    return rule


def _sequence_promoted(name: str) -> Callable[..., Array]:
    """The rule of concat and stack: the arrays in numpy's common dtype, then the function."""
    def rule(arrays: Any, /, **kwargs: Any) -> Array:
        return _namespace(name)(common(list(arrays))[1], **kwargs)

    return rule


def _products(name: str) -> Callable[..., Array]:
    """The rule of matmul, tensordot and vecdot: two bool arrays give bool (whether any term is
    true, counted in int64); operands of other kinds are promoted as numpy promotes them."""
    def rule(x1: Array, x2: Array, /, **kwargs: Any) -> Array:
        function = _namespace(name)
        if x1._dtype is dt.bool and x2._dtype is dt.bool:
            return to_nonzero(function(cast(x1, dt.int64), cast(x2, dt.int64), **kwargs))
        return function(*common((x1, x2))[1], **kwargs)

    return rule


def arange(start: Any, /, stop: Any = None, step: Any = 1, **kwargs: Any) -> Array:
    """numpy's arange of 0-D array bounds: their values."""
    return _creation.arange(*(v._host()[()].item() if type(v) is Array and v.ndim == 0 else v
                            for v in (start, stop, step)), **kwargs)


def diff(x: Array, /, *, axis: Any = -1, n: Any = 1, prepend: Any = None, append: Any = None
         ) -> Array:
    """numpy's diff of a bool array ("not equal" of neighbours), and with prepend/append of
    another kind: x and them in numpy's common dtype (NEP 50)."""
    given = [v for v in (prepend, append) if type(v) is Array]
    if given:
        dtype = result_type(x._dtype, *(v._dtype for v in given))
        x, prepend, append = (v if type(v) is not Array else cast(v, dtype)
                              for v in (x, prepend, append))
    return _utility.differences(x, axis, n, prepend, append)


def result_type_rule(*arrays_and_dtypes: Any) -> dt.DType:
    """numpy's result_type (NEP 50) of arrays, dtypes and Python scalars, scalars alone too."""
    return result_type(*(v if isinstance(v, (builtins.bool, int, float, complex)) else
                         _data_types.result_type(v) for v in arrays_and_dtypes))


# Every rule, by the function it adapts (the name `_adapter.adapted` gives it).
_INPLACE = {f"Array.__i{op.operator}__": name for name, op in OPS.items()
            if op.arity == 2 and op.operator is not None and op.result != "bool"}
RULES: dict[str, Callable[..., Any]] = {
    **{name: functools.partial(elementwise, name) for name, op in OPS.items()
       if op.arity == 2 or op.arity == 1 and op.category != "integer or boolean"},
    **{method: _inplace(name) for method, name in _INPLACE.items()},
    "clip": clip,
    "where": where,
    "searchsorted": _promoted("searchsorted"),
    "isin": _promoted("isin"),
    "concat": _sequence_promoted("concat"),
    "stack": _sequence_promoted("stack"),
    "matmul": _products("matmul"),
    "tensordot": _products("tensordot"),
    "vecdot": _products("vecdot"),
    **{f"linalg.{name}": _promoted(f"linalg.{name}") for name in ("cross", "outer")},
    "result_type": result_type_rule,
    "arange": arange,
    **{name: _complex_extremum(name) for name in ("max", "min")},
    **{name: _complex_arg_extremum(name) for name in ("argmax", "argmin")},
    **{name: _complex_sort(name) for name in ("sort", "argsort")},
    "diff": diff,
    "linalg.matrix_power": lambda x, n, /: linalg.power(x, n, "all"),
    "fft.fftshift": lambda x, /, *, axes=None: fft._shift("fftshift", x, axes, 1, True),
    "fft.ifftshift": lambda x, /, *, axes=None: fft._shift("ifftshift", x, axes, -1,
                                                                   True),
}
# The functions that take a Python int beyond an integer array's dtype: comparisons (by value),
# and those numpy computes in floating point (the int converts to the loop's floating dtype).
_BY_VALUE_FUNCTIONS = BY_VALUE | {method for method, name in _INPLACE.items() if name in BY_VALUE}


# Groups of functions the registry names.
_BINARY_OPS = [name for name, op in OPS.items() if op.arity == 2]
BINARY_FUNCTIONS = (*_BINARY_OPS, *(f"Array.__{op.operator}__" for op in OPS.values()
                                    if op.arity == 2 and op.operator is not None))
FLOATING_FUNCTIONS = tuple(name for name, op in OPS.items()
                           if op.arity in (1, 2) and op.category in FLOATING_ONLY)
FLOATING_BINARY = tuple(name for name in FLOATING_FUNCTIONS if OPS[name].arity == 2)
INPLACE_OPERATORS = tuple(_INPLACE)
LINALG_AND_FFT = ("linalg.cholesky", "linalg.det", "linalg.eigh", "linalg.eigvalsh", "linalg.inv",
                  "linalg.matrix_norm", "linalg.pinv", "linalg.qr", "linalg.slogdet",
                  "linalg.solve", "linalg.svd", "linalg.svdvals", "linalg.vector_norm",
                  "fft.fft", "fft.ifft", "fft.fftn", "fft.ifftn", "fft.rfft", "fft.rfftn",
                  "fft.hfft", "fft.ihfft")
DTYPE_FUNCTIONS = ("asarray", "empty", "zeros", "ones", "full", "empty_like", "zeros_like",
                   "ones_like", "full_like", "arange", "linspace", "eye", "sum", "prod",
                   "cumulative_sum", "cumulative_prod")


# -- the registry: every place where the two modes differ -----------------------------------------


class Difference(NamedTuple):
    """One place where numpy mode differs from strict mode: the case (markdown, as docs/modes.md's
    table states it), what strict mode does, what numpy mode does, and the functions it adapts
    (namespace names: "sum", "linalg.solve", "Array.__iadd__")."""

    case: str
    strict: str
    numpy: str
    functions: tuple[str, ...]


DIFFERENCES: tuple[Difference, ...] = (
    Difference('promotion across kinds between arrays: `int32 + float32`, `bool + int8`, '
               '`int64 + uint64`, ...',
               '`TypeError: no type promotion between ...`',
               "numpy's `promote_types` (NEP 50): `float64`, `int8`, `float64`, ...",
               BINARY_FUNCTIONS),
    Difference('a Python scalar of another kind: `int_array + 1.5`, `bool_array + 1`, '
               '`int_array & True`, `int_array + 1j`',
               '`TypeError: ... cannot be combined with an array of dtype ...`',
               "numpy's weak scalars (NEP 50): `float64`, `int64`, the array's dtype, "
               '`complex128`',
               BINARY_FUNCTIONS),
    Difference('numpy scalars that are not Python scalars (`np.float32(2)`, `np.int64(3)`, '
               '`np.bool_`)',
               '`TypeError` (as for any non-scalar)',
               'taken as the Python scalar they hold (weak); see *deviations from numpy* below',
               (*BINARY_FUNCTIONS, "clip", "where", "searchsorted", "isin")),
    Difference('comparisons with a Python int beyond the dtype (`uint8_array < 300`, `== -1`)',
               '`OverflowError`',
               "numpy's answer by value (all `True` or all `False`); arithmetic still raises "
               '`OverflowError`, as in numpy',
               tuple(sorted(COMPARISONS))),
    Difference("a Python int beyond an integer array's dtype in `/` and the other "
               'floating-point functions (`int8_array / 200`, `atan2(x, -300)`)',
               '`OverflowError`',
               "computed in `float64`, as numpy (an int beyond `float64`'s range: "
               '`OverflowError`)',
               FLOATING_BINARY),
    Difference('integers to negative integer powers (`int_array ** -1`, an exponent array '
               'with a negative element)',
               '`1 / x1**-x2` truncated (`0`; `±1` for `±1`): the standard leaves it open',
               "numpy's `ValueError: Integers to negative integer powers are not allowed.`, "
               'before anything is computed',
               ("pow", "Array.__pow__", "Array.__rpow__", "Array.__ipow__")),
    Difference('comparing `int64` with `uint64` arrays',
               '`TypeError`',
               'exact, as numpy 2 (negative values below every unsigned one)',
               tuple(sorted(COMPARISONS))),
    Difference('floating-point functions of integer or bool arrays: `/`, `sin`, `exp`, `log`, '
               '`sqrt`, `atan2`, `hypot`, `logaddexp`, `copysign`, `nextafter`, `signbit`, ...',
               '`TypeError: ... requires floating-point input`',
               "numpy's dtype: `float64` for 32/64-bit integers, `float32` for 16-bit ones, "
               '`float16` for 8-bit integers and bools; true division `float64`, as numpy',
               FLOATING_FUNCTIONS),
    Difference('`reciprocal` of integers',
               '`TypeError`',
               '`1 / x` in the dtype `sqrt` gives (numpy keeps an integer reciprocal: see '
               'deviations)',
               ("reciprocal",)),
    Difference('bool arrays in `add`, `multiply`, `maximum`, `minimum`, `abs`, `floor`, '
               '`ceil`, `trunc`, `real`, `imag`, `isnan`, `isinf`, `isfinite`',
               '`TypeError`',
               "numpy's bool loops: `bool` results (`add` is or, `multiply` is and)",
               ("add", "multiply", "maximum", "minimum", "abs", "floor", "ceil", "trunc", "real",
                "imag", "isnan", "isinf", "isfinite")),
    Difference('bool arrays in `pow`, `floor_divide`, `remainder`, `square`, `conj`, shifts; '
               '`round`',
               '`TypeError`',
               'as numpy: `int8`; `round` gives `float16`',
               ("pow", "floor_divide", "remainder", "square", "conj", "bitwise_left_shift",
                "bitwise_right_shift", "round")),
    Difference('bool arrays in `subtract`, `negative`, `positive`, `sign`',
               '`TypeError`',
               '`TypeError`, as numpy',
               ("subtract", "negative", "positive", "sign")),
    Difference('`logical_and`/`or`/`xor`/`not` of non-bool arrays',
               '`TypeError`',
               'by truth value, as numpy',
               ("logical_and", "logical_or", "logical_xor", "logical_not")),
    Difference('ordering complex numbers: `<`, `<=`, `>`, `>=` (and `less`, ...), `maximum`, '
               '`minimum`, `max`, `min`, `argmax`, `argmin`, `sort`, `argsort`, `clip` of '
               'complex arrays or with complex bounds',
               '`TypeError`',
               "numpy's order: by real part, then imaginary part. NaNs as numpy has them: a "
               'comparison that a NaN decides is `False`; `maximum`/`minimum` and '
               '`max`/`min`/`argmax`/`argmin` return the first element holding a NaN; `sort` '
               'puts numbers first, then `R + nan j`, `nan + R j`, `nan + nan j`; `clip` is '
               '`minimum(maximum(x, low), high)` in that order. On every device, composed '
               "from the device's kernels for real numbers",
               (*sorted(ORDERED), "max", "min", "argmax", "argmin", "sort", "argsort", "clip")),
    Difference('`sum` and `mean` of floating-point zeros that are all `-0`',
               "`-0`, as the standard's successive additions give",
               "`+0`, as numpy's sums (which start from `+0`) give",
               ("sum", "mean")),
    Difference('`bool()` of an array of one element and more than zero dimensions (`bool(x < '
               '2)` for `x` of shape `(1,)`)',
               '`TypeError: bool() needs a 0-D array`',
               'its truth value, as numpy',
               ("Array.__bool__",)),
    Difference('`result_type` of Python scalars alone: `result_type(1.0, 2.0)`',
               '`TypeError` (the standard asks for an array or a dtype)',
               "numpy's (`float64`)",
               ("result_type",)),
    Difference("0-D arrays as `arange`'s bounds: `arange(1, xp.asarray(4.0))`",
               '`TypeError`',
               'their values, as numpy',
               ("arange",)),
    Difference('the default dtype of `linspace` with 0-D array bounds',
               "the standard's default floating dtype",
               "numpy's: the bounds' (a `float32` bound gives `float32`)",
               ("linspace",)),
    Difference('a float fill value for an integer or bool dtype: `full((2,), 2.0, dtype=int8)`',
               '`TypeError`',
               'the integer it equals (which fills a bool array as an int does: nonzero is '
               "`True`), as numpy's cast; a fraction raises `TypeError` and NaN or an "
               'infinity `ValueError` (see deviations)',
               ("full", "full_like")),
    Difference('in-place operators whose result dtype differs: `x_f32 += x_f64`, `x_int += 1.5`',
               '`TypeError: in-place ... would change the dtype`',
               'numpy\'s "same_kind" cast back: the first works, the second raises `TypeError`',
               INPLACE_OPERATORS),
    Difference('`sum`, `prod`, `cumulative_sum`, `cumulative_prod` of bool',
               '`TypeError`',
               '`int64`, as numpy',
               ("sum", "prod", "cumulative_sum", "cumulative_prod")),
    Difference('`max`, `min`, `argmax`, `argmin`, `sort`, `argsort`, `searchsorted` of bool',
               '`TypeError`',
               'as numpy (computed on a zero-copy int8 view)',
               ("max", "min", "argmax", "argmin", "sort", "argsort", "searchsorted")),
    Difference('`mean`, `var`, `std` of integer or bool arrays',
               '`TypeError`',
               '`float64`, as numpy',
               ("mean", "var", "std")),
    Difference('`diff` of bool arrays',
               '`TypeError`',
               'numpy\'s "not equal" of neighbours, `bool`',
               ("diff",)),
    Difference('`matmul`, `tensordot`, `vecdot`, `@` of two bool arrays',
               '`TypeError`',
               '`bool`: whether any term is true (counted in `int64`, exact)',
               ("matmul", "tensordot", "vecdot", "Array.__matmul__")),
    Difference('`linalg` functions of integer or bool matrices; `fft` of integer or real '
               'input to complex transforms',
               '`TypeError`',
               '`float64` / `complex128` (`complex64` from `float32`), as numpy',
               LINALG_AND_FFT),
    Difference('`linalg.matrix_power` of an integer or bool matrix, `n >= 0`',
               '`TypeError`',
               'stays integer / bool, as numpy',
               ("linalg.matrix_power",)),
    Difference('`fft.fftshift`, `fft.ifftshift` of any dtype',
               '`TypeError` for non-floating input',
               'any dtype, as numpy',
               ("fft.fftshift", "fft.ifftshift")),
    Difference('functions of several arrays with kinds the standard does not promote: '
               '`concat`, `stack`, `where`, `clip`, `isin`, `searchsorted`, `diff` '
               '(`prepend`/`append`), `matmul`, `tensordot`, `vecdot`, `linalg.solve`, '
               '`linalg.cross`, `linalg.outer`',
               '`TypeError`',
               "numpy's promotion (NEP 50), operands cast first",
               ("concat", "stack", "where", "clip", "isin", "searchsorted", "diff", "matmul",
                "tensordot", "vecdot", "linalg.solve", "linalg.cross", "linalg.outer")),
    Difference('`where` with a non-bool condition, with two scalars, or with one argument',
               '`TypeError`',
               "truth value; numpy's result dtype of the scalars; `where(c)` is `nonzero(c)`",
               ("where",)),
    Difference('`clip` with bounds of another kind (`clip(int_array, 0.5)`), or of a bool array',
               '`TypeError`',
               "numpy's promotion (`float64`); bounds of the same kind keep x's dtype in both "
               'modes, as the standard says',
               ("clip",)),
    Difference('`x[key] = value` with a value of another kind (`int_array[0] = 1.7`)',
               '`TypeError`',
               "numpy's cast (`1`); complex into a real array raises in both modes",
               ("Array.__setitem__",)),
    Difference('`result_type` of dtypes (and scalars) of different kinds',
               '`TypeError`',
               "numpy's `result_type` (NEP 50)",
               ("result_type",)),
    Difference('`can_cast` across kinds (`int32` to `float64`)',
               '`False` (the promotion lattice only)',
               'numpy\'s "safe" casting (`True`)',
               ("can_cast",)),
    Difference('numpy dtypes, their scalar types, names and Python types as `dtype=` '
               '(`np.float32`, `np.dtype("f4")`, `"float32"`, `float`) in every function '
               'taking a dtype, `astype`, `isdtype`, `finfo`, `iinfo`, `result_type`, '
               '`can_cast`',
               '`TypeError: dtype must be an hxarray dtype`',
               'the hxarray dtype with that layout (non-native byte orders map to the native '
               'one; a dtype hxarray lacks, such as `longdouble`, raises `TypeError`)',
               ("astype", "isdtype", "finfo", "iinfo", "result_type", "can_cast",
                *DTYPE_FUNCTIONS)),
    Difference('`float16` (`hxarray.float16`, `np.float16`, numpy arrays and DLPack tensors '
               'of it)',
               '`TypeError: ... float16 is numpy mode only` wherever a dtype or data enters '
               '(`dtype=`, `astype`, `asarray`, `from_dlpack`, `finfo`, ...); not among '
               "`__array_namespace_info__().dtypes()` in either mode, as numpy's",
               "a dtype like any other, with numpy's promotion and values (computed in "
               '`float32` and rounded once, where numpy does so)',
               ("astype", "isdtype", "finfo", "result_type", "can_cast", "from_dlpack",
                *DTYPE_FUNCTIONS)),
    Difference("numpy's positional forms of keyword-only parameters (below)",
               "Python's own `TypeError: ... takes 1 positional argument but 2 were given`",
               'taken, as numpy takes them',
               tuple(POSITIONAL)),
    Difference('numpy ufuncs on hxarray arrays (`np.sin(x)`, `np_array + x`, `np.add.reduce(x)`)',
               "`TypeError: operand 'Array' does not support ufuncs` (as before)",
               "the namespace's function, an hxarray array on x's device ([numpy.md](numpy.md))",
               ("Array.__array_ufunc__",)),
    Difference('numpy functions on hxarray arrays (`np.sum(x)`, `np.concatenate`, '
               '`np.median`, ...)',
               "numpy's own implementation on `np.asarray(x)`, as before (so `np.sum`, which "
               'reaches a ufunc, raises)',
               "the namespace's equivalent, or numpy on zero-copy CPU views, results as "
               'hxarray arrays ([numpy.md](numpy.md))',
               ("Array.__array_function__",)),
    Difference('`x += numpy_array`, `x + numpy_array`',
               '`TypeError`',
               'in place into `x`; an hxarray array',
               (*INPLACE_OPERATORS, "Array.__array_ufunc__")),
    Difference("numpy's functions beyond the standard (`median`, `einsum`, `isclose`, ...), "
               '`x.fill(v)`, `x.view(dtype)`, `x.dtype == "int64"`',
               '`TypeError: hxarray.median() is numpy mode only`; the methods do not exist; a '
               'dtype is not equal to its name',
               "numpy's function on every device ([numpy.md](numpy.md#functions-beyond-the-"
               'standard))',
               (*_numpy_functions.__all__, *_numpy_statistics.__all__, "linalg.norm",
                "Array.fill", "Array.view")),
)


def markdown() -> str:
    """docs/modes.md's table of every place the modes differ, from DIFFERENCES."""
    rows = ["| case | strict mode | numpy mode (default) |", "|---|---|---|"]
    rows += [f"| {d.case} | {d.strict} | {d.numpy} |" for d in DIFFERENCES]
    return "\n".join(rows) + "\n"


use_numpy_mode(apply, numpy_keywords)  # the chapters' adapters consult numpy mode from here on
