"""Every element-wise operation, reduction, arg-reduction and scan, declared once.

One line per operation: its spec name, arity, the spec's input dtype category, how the result
dtype follows from the promoted input dtype, the numpy kernel (a ufunc, or a function of
`_numpy_kernels` where numpy misses the standard), the Python operator it backs, and whether it is
compute-bound (worth threads on mid-size arrays). Everything else is derived from these lines: the
namespace functions and operators (`_elementwise`, `_array`), the CPU backend's kernel map and the
compiled fast path's tables.

Result rules: "same" (the promoted dtype), "bool", "real" (the real dtype of the same precision:
abs, real, imag of complex input). `where` and `clip` are kernels whose namespace functions check
their own arguments (category None); what sets them apart is data on their lines (`selects`,
`chain`), so that a backend never branches on an operation's name.

The namespace resolves each call to an operation and its `Signature` (operand, compute and result
dtypes) once, above the backend seam (`Backend.elementwise`); backends take both as given.

Reductions (`REDUCTIONS`: sum, prod, max, min, all, any), arg-reductions (`ARG_REDUCTIONS`) and
scans (`SCANS`) are objects in the same way, handed to `Backend.reduce`, `arg_reduce`, `scan` and
`fused_reduce`: each carries its numpy kernel, its identity, its default accumulator (the one
accumulator rule, `Reduction.accumulator`, over `_dtypes.ACCUMULATOR`), what sets it apart
(`signed_zero`, `silent`) and its CUDA functor, so that no backend looks one up by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from . import _dtypes as dt
from . import _numpy_kernels as nk


class Signature(NamedTuple):
    """The dtypes one call of an operation resolved to: each operand's (a Python scalar's: the
    dtype of the array it stands for; a missing `clip` bound's: the result's), the dtype the
    operation computes in (the operands' promoted dtype: comparisons compare in it, `abs` of a
    complex number takes it), and the result's."""

    operands: tuple[dt.DType, ...]
    compute: dt.DType
    result: dt.DType


@dataclass(frozen=True, eq=False)
class Op:
    """One element-wise operation (compared and hashed by identity: one object per operation).

    `selects`: the first operand is a bool condition choosing between the others, element by
    element (it is not converted to the compute dtype). `chain`: the operation is its first
    operand combined with each further operand in turn by these binary operations, in the first
    operand's dtype, an operand of None skipped (for backends without a kernel of their own)."""

    name: str
    arity: int
    category: str | None
    result: str
    numpy: Callable[..., Any]
    operator: str | None = None
    heavy: bool = False
    cuda: str | None = None
    selects: bool = False
    chain: tuple[Op, ...] = ()
    _signatures: dict[tuple[dt.DType, ...], Signature] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return f"Op({self.name!r})"

    @property
    def ufunc(self) -> np.ufunc | None:
        """The numpy ufunc this operation is (or its numpy kernel stands in for), if any."""
        kernel = self.numpy
        return kernel if isinstance(kernel, np.ufunc) else getattr(kernel, "ufunc", None)

    def signature(self, *operands: dt.DType) -> Signature:
        """The signature on operands of these dtypes (the caller has checked their categories):
        compute in their promoted dtype (a `chain`'s: the first operand's; a `selects`'s: that
        of the operands it chooses between), the result by the operation's result rule.
        Cached: the same object for the same dtypes."""
        found = self._signatures.get(operands)
        if found is None:
            if self.chain:
                compute = operands[0]
            else:
                compute = dt.result_type_of(*(operands[1:] if self.selects else operands))
            result = dt.bool if self.result == "bool" else dt.REAL_OF.get(compute, compute) \
                if self.result == "real" else compute
            found = self._signatures.setdefault(operands, Signature(operands, compute, result))
        return found


HEAVY = True
OPS: dict[str, Op] = {op.name: op for op in (
    # name                arity  category                      result  numpy kernel      operator    heavy  CUDA C
    Op("abs",                 1, "numeric",                    "real", np.absolute,      "abs",      False, "ops::abs(a)"),
    Op("acos",                1, "floating-point",             "same", np.arccos,        None,       HEAVY, "ops::acos(a)"),
    Op("acosh",               1, "floating-point",             "same", np.arccosh,       None,       HEAVY, "ops::acosh(a)"),
    Op("asin",                1, "floating-point",             "same", np.arcsin,        None,       HEAVY, "ops::asin(a)"),
    Op("asinh",               1, "floating-point",             "same", np.arcsinh,       None,       HEAVY, "ops::asinh(a)"),
    Op("atan",                1, "floating-point",             "same", np.arctan,        None,       HEAVY, "ops::atan(a)"),
    Op("atanh",               1, "floating-point",             "same", np.arctanh,       None,       HEAVY, "ops::atanh(a)"),
    Op("bitwise_invert",      1, "integer or boolean",         "same", np.invert,        "invert",   False, "ops::bitwise_invert(a)"),
    Op("ceil",                1, "real-valued",                "same", np.ceil,          None,       False, "ops::ceil(a)"),
    Op("conj",                1, "numeric",                    "same", np.conjugate,     None,       False, "ops::conj(a)"),
    Op("cos",                 1, "floating-point",             "same", np.cos,           None,       HEAVY, "ops::cos(a)"),
    Op("cosh",                1, "floating-point",             "same", np.cosh,          None,       HEAVY, "ops::cosh(a)"),
    Op("exp",                 1, "floating-point",             "same", np.exp,           None,       HEAVY, "ops::exp(a)"),
    Op("expm1",               1, "floating-point",             "same", nk.expm1,         None,       HEAVY, "ops::expm1(a)"),
    Op("floor",               1, "real-valued",                "same", np.floor,         None,       False, "ops::floor(a)"),
    Op("imag",                1, "numeric",                    "real", nk.imag,          None,       False, "ops::imag(a)"),
    Op("isfinite",            1, "numeric",                    "bool", np.isfinite,      None,       False, "ops::isfinite(a)"),
    Op("isinf",               1, "numeric",                    "bool", np.isinf,         None,       False, "ops::isinf(a)"),
    Op("isnan",               1, "numeric",                    "bool", np.isnan,         None,       False, "ops::isnan(a)"),
    Op("log",                 1, "floating-point",             "same", np.log,           None,       HEAVY, "ops::log(a)"),
    Op("log1p",               1, "floating-point",             "same", nk.log1p,         None,       HEAVY, "ops::log1p(a)"),
    Op("log2",                1, "floating-point",             "same", np.log2,          None,       HEAVY, "ops::log2(a)"),
    Op("log10",               1, "floating-point",             "same", np.log10,         None,       HEAVY, "ops::log10(a)"),
    Op("logical_not",         1, "bool",                       "bool", np.logical_not,   None,       False, "ops::logical_not(a)"),
    Op("negative",            1, "numeric",                    "same", np.negative,      "neg",      False, "ops::negative(a)"),
    Op("positive",            1, "numeric",                    "same", np.positive,      "pos",      False, "ops::positive(a)"),
    Op("real",                1, "numeric",                    "real", nk.real,          None,       False, "ops::real(a)"),
    Op("reciprocal",          1, "floating-point",             "same", nk.reciprocal,    None,       False, "ops::reciprocal(a)"),
    Op("round",               1, "numeric",                    "same", nk.round,         None,       False, "ops::round(a)"),
    Op("sign",                1, "numeric",                    "same", nk.sign,          None,       False, "ops::sign(a)"),
    Op("signbit",             1, "real-valued floating-point", "bool", np.signbit,       None,       False, "ops::signbit(a)"),
    Op("sin",                 1, "floating-point",             "same", np.sin,           None,       HEAVY, "ops::sin(a)"),
    Op("sinh",                1, "floating-point",             "same", np.sinh,          None,       HEAVY, "ops::sinh(a)"),
    Op("sqrt",                1, "floating-point",             "same", np.sqrt,          None,       False, "ops::sqrt(a)"),
    Op("square",              1, "numeric",                    "same", np.square,        None,       False, "ops::square(a)"),
    Op("tan",                 1, "floating-point",             "same", nk.tan,           None,       HEAVY, "ops::tan(a)"),
    Op("tanh",                1, "floating-point",             "same", nk.tanh,          None,       HEAVY, "ops::tanh(a)"),
    Op("trunc",               1, "real-valued",                "same", np.trunc,         None,       False, "ops::trunc(a)"),
    Op("add",                 2, "numeric",                    "same", np.add,           "add",      False, "ops::add(a, b)"),
    Op("atan2",               2, "real-valued floating-point", "same", np.arctan2,       None,       HEAVY, "ops::atan2(a, b)"),
    Op("bitwise_and",         2, "integer or boolean",         "same", np.bitwise_and,   "and",      False, "ops::bitwise_and(a, b)"),
    Op("bitwise_left_shift",  2, "integer",                    "same", np.left_shift,    "lshift",   False, "ops::bitwise_left_shift(a, b)"),
    Op("bitwise_or",          2, "integer or boolean",         "same", np.bitwise_or,    "or",       False, "ops::bitwise_or(a, b)"),
    Op("bitwise_right_shift", 2, "integer",                    "same", np.right_shift,   "rshift",   False, "ops::bitwise_right_shift(a, b)"),
    Op("bitwise_xor",         2, "integer or boolean",         "same", np.bitwise_xor,   "xor",      False, "ops::bitwise_xor(a, b)"),
    Op("copysign",            2, "real-valued floating-point", "same", np.copysign,      None,       False, "ops::copysign(a, b)"),
    Op("divide",              2, "floating-point",             "same", np.divide,        "truediv",  False, "ops::divide(a, b)"),
    Op("equal",               2, "all",                        "bool", np.equal,         "eq",       False, "ops::equal(a, b)"),
    Op("floor_divide",        2, "real-valued",                "same", nk.floor_divide,  "floordiv", False, "ops::floor_divide(a, b)"),
    Op("greater",             2, "real-valued",                "bool", np.greater,       "gt",       False, "ops::greater(a, b)"),
    Op("greater_equal",       2, "real-valued",                "bool", np.greater_equal, "ge",       False, "ops::greater_equal(a, b)"),
    Op("hypot",               2, "real-valued floating-point", "same", np.hypot,         None,       HEAVY, "ops::hypot(a, b)"),
    Op("less",                2, "real-valued",                "bool", np.less,          "lt",       False, "ops::less(a, b)"),
    Op("less_equal",          2, "real-valued",                "bool", np.less_equal,    "le",       False, "ops::less_equal(a, b)"),
    Op("logaddexp",           2, "real-valued floating-point", "same", np.logaddexp,     None,       HEAVY, "ops::logaddexp(a, b)"),
    Op("logical_and",         2, "bool",                       "bool", np.logical_and,   None,       False, "ops::logical_and(a, b)"),
    Op("logical_or",          2, "bool",                       "bool", np.logical_or,    None,       False, "ops::logical_or(a, b)"),
    Op("logical_xor",         2, "bool",                       "bool", np.logical_xor,   None,       False, "ops::logical_xor(a, b)"),
    Op("maximum",             2, "real-valued",                "same", np.maximum,       None,       False, "ops::maximum(a, b)"),
    Op("minimum",             2, "real-valued",                "same", np.minimum,       None,       False, "ops::minimum(a, b)"),
    Op("multiply",            2, "numeric",                    "same", np.multiply,      "mul",      False, "ops::multiply(a, b)"),
    Op("nextafter",           2, "real-valued floating-point", "same", nk.nextafter,     None,       False, "ops::nextafter(a, b)"),
    Op("not_equal",           2, "all",                        "bool", np.not_equal,     "ne",       False, "ops::not_equal(a, b)"),
    Op("pow",                 2, "numeric",                    "same", nk.pow,           "pow",      HEAVY, "ops::pow(a, b)"),
    Op("remainder",           2, "real-valued",                "same", np.remainder,     "mod",      False, "ops::remainder(a, b)"),
    Op("subtract",            2, "numeric",                    "same", np.subtract,      "sub",      False, "ops::subtract(a, b)"),
    Op("where",               3, None,                         "same", nk.where,         None,       False, "c ? a : b",
       selects=True),
)}
OPS["clip"] = Op("clip", 3, None, "same", nk.clip, chain=(OPS["maximum"], OPS["minimum"]))

# The ufuncs whose float16 loop in numpy is float16's own, not float32's rounded: nextafter (the
# neighbouring float16), maximum and minimum (the first operand among equals: maximum(0, -0) is
# 0, where float32's loops give the second). Their reductions (max, min) follow.
_OWN_FLOAT16_LOOP = frozenset({np.nextafter, np.maximum, np.minimum})


def computes_in(op: Any, dtype: dt.DType) -> dt.DType:
    """The dtype a kernel computes `op` (an `Op`, a `Reduction` or another folding) in for the
    compute dtype `dtype`: float32 for float16 (`_dtypes.COMPUTES_IN`), except where numpy's
    loop is float16's own, and for casts and selections (`where`), which compute nothing (an
    `Op` without a category) and convert each value once."""
    if getattr(op, "category", True) is None or getattr(op, "ufunc", None) in _OWN_FLOAT16_LOOP:
        return dtype
    return dt.COMPUTES_IN.get(dtype, dtype)


# The element-wise functions of the namespace, by arity.
UNARY = {name: op for name, op in OPS.items() if op.arity == 1}
BINARY = {name: op for name, op in OPS.items() if op.arity == 2}
COMPARISONS = frozenset(op.operator for op in BINARY.values() if op.result == "bool"
                        and op.operator is not None)  # no reflected or in-place forms


# -- reductions, arg-reductions and scans ----------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Reduction:
    """One reduction (compared and hashed by identity: one object per operation).

    `ufunc`: numpy's ufunc whose `reduce` it is. `identity`: the result over no elements (None:
    there is none, and the namespace refuses an empty selection). `result`: the rule of the dtype
    it accumulates in and returns by default ("accumulator": `dt.ACCUMULATOR`'s, the standard's
    for sum and prod; "bool"; "same": the input's), see `accumulator`. `signed_zero`: a
    floating-point result starts from -0, or from +0 where the call says `positive_zero`
    (`Backend.reduce`). `silent`: it never raises a floating-point warning. `cuda`: its functor
    in the CUDA kernels (`hx::red::<cuda>`). `inputs`: the dtypes the namespace reduces with it
    (the CUDA backend compiles them together)."""

    name: str
    ufunc: np.ufunc
    identity: bool | int | None
    result: str
    cuda: str
    inputs: tuple[dt.DType, ...]
    signed_zero: bool = False
    silent: bool = False

    def __repr__(self) -> str:
        return f"Reduction({self.name!r})"

    @property
    def accumulates(self) -> bool:
        """Whether it computes in its result's dtype (sum, prod: an explicit `dtype=` too)."""
        return self.result == "accumulator"

    def accumulator(self, x: dt.DType) -> dt.DType:
        """The dtype it reduces `x` into by default (spec: sum, "dtype"): integers in the 64-bit
        integer of their signedness, a bool in int64, others in their own dtype."""
        if self.result == "accumulator":
            return dt.ACCUMULATOR.get(x, x)
        return dt.bool if self.result == "bool" else x


@dataclass(frozen=True, eq=False)
class ArgReduction:
    """argmax or argmin: the first index of the extremum (a NaN counts as one). `numpy`: numpy's
    function of it; `cuda`: its functor in the CUDA kernels; `inputs`: the dtypes it takes."""

    name: str
    numpy: Callable[..., Any]
    cuda: str
    inputs: tuple[dt.DType, ...] = dt.REAL_NUMERIC

    def __repr__(self) -> str:
        return f"ArgReduction({self.name!r})"

    def accumulator(self, x: dt.DType) -> dt.DType:
        """It compares values in their own dtype."""
        return x


@dataclass(frozen=True, eq=False)
class Scan:
    """A cumulative reduction along one axis: `folds`'s operation applied in order, each partial
    result kept; `numpy`: numpy's function of it. It accumulates as `folds` does."""

    name: str
    numpy: Callable[..., Any]
    folds: Reduction

    def __repr__(self) -> str:
        return f"Scan({self.name!r})"

    @property
    def initial(self) -> bool | int:
        """What `include_initial` puts first: the identity of the reduction it folds with."""
        identity = self.folds.identity
        assert identity is not None, f"{self.name} folds with a reduction without an identity"
        return identity


REDUCTIONS: dict[str, Reduction] = {r.name: r for r in (
    # name      ufunc             identity  result         CUDA   inputs
    Reduction("sum",  np.add,         0,     "accumulator", "Sum",  (dt.bool, *dt.NUMERIC),
              signed_zero=True),
    Reduction("prod", np.multiply,    1,     "accumulator", "Prod", dt.NUMERIC),
    Reduction("max",  np.maximum,     None,  "same",        "Max",  dt.REAL_NUMERIC, silent=True),
    Reduction("min",  np.minimum,     None,  "same",        "Min",  dt.REAL_NUMERIC, silent=True),
    Reduction("all",  np.logical_and, True,  "bool",        "All",  dt.ALL_DTYPES, silent=True),
    Reduction("any",  np.logical_or,  False, "bool",        "Any",  dt.ALL_DTYPES, silent=True),
)}
ARG_REDUCTIONS: dict[str, ArgReduction] = {r.name: r for r in (
    ArgReduction("argmax", np.argmax, "ArgMax"),
    ArgReduction("argmin", np.argmin, "ArgMin"),
)}
SCANS: dict[str, Scan] = {s.name: s for s in (
    Scan("cumulative_sum", np.cumsum, REDUCTIONS["sum"]),
    Scan("cumulative_prod", np.cumprod, REDUCTIONS["prod"]),
)}
