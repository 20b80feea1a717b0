"""Every element-wise operation, declared once.

One line per operation: its spec name, arity, the spec's input dtype category, how the result
dtype follows from the promoted input dtype, the numpy kernel (a ufunc, or a function of
`_numpy_kernels` where numpy misses the standard), the Python operator it backs, and whether it is
compute-bound (worth threads on mid-size arrays). Everything else is derived from these lines: the
namespace functions and operators (`_elementwise`, `_array`), the CPU backend's kernel map and the
compiled fast path's tables.

Result rules: "same" (the promoted dtype), "bool", "real" (the real dtype of the same precision:
abs, real, imag of complex input). `where` and `clip` are kernels whose namespace functions check
their own arguments (category None).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from . import _numpy_kernels as nk


class Op(NamedTuple):
    name: str
    arity: int
    category: str | None
    result: str
    numpy: Callable[..., Any]
    operator: str | None = None
    heavy: bool = False


HEAVY = True
OPS: dict[str, Op] = {op.name: op for op in (
    # name              arity category                      result numpy kernel      operator
    Op("abs",                1, "numeric",                    "real", np.absolute,     "abs"),
    Op("acos",               1, "floating-point",             "same", np.arccos,       None, HEAVY),
    Op("acosh",              1, "floating-point",             "same", np.arccosh,      None, HEAVY),
    Op("asin",               1, "floating-point",             "same", np.arcsin,       None, HEAVY),
    Op("asinh",              1, "floating-point",             "same", np.arcsinh,      None, HEAVY),
    Op("atan",               1, "floating-point",             "same", np.arctan,       None, HEAVY),
    Op("atanh",              1, "floating-point",             "same", np.arctanh,      None, HEAVY),
    Op("bitwise_invert",     1, "integer or boolean",         "same", np.invert,       "invert"),
    Op("ceil",               1, "real-valued",                "same", np.ceil),
    Op("conj",               1, "numeric",                    "same", np.conjugate),
    Op("cos",                1, "floating-point",             "same", np.cos,          None, HEAVY),
    Op("cosh",               1, "floating-point",             "same", np.cosh,         None, HEAVY),
    Op("exp",                1, "floating-point",             "same", np.exp,          None, HEAVY),
    Op("expm1",              1, "floating-point",             "same", nk.expm1,        None, HEAVY),
    Op("floor",              1, "real-valued",                "same", np.floor),
    Op("imag",               1, "numeric",                    "real", nk.imag),
    Op("isfinite",           1, "numeric",                    "bool", np.isfinite),
    Op("isinf",              1, "numeric",                    "bool", np.isinf),
    Op("isnan",              1, "numeric",                    "bool", np.isnan),
    Op("log",                1, "floating-point",             "same", np.log,          None, HEAVY),
    Op("log1p",              1, "floating-point",             "same", nk.log1p,        None, HEAVY),
    Op("log2",               1, "floating-point",             "same", np.log2,         None, HEAVY),
    Op("log10",              1, "floating-point",             "same", np.log10,        None, HEAVY),
    Op("logical_not",        1, "bool",                       "bool", np.logical_not),
    Op("negative",           1, "numeric",                    "same", np.negative,     "neg"),
    Op("positive",           1, "numeric",                    "same", np.positive,     "pos"),
    Op("real",               1, "numeric",                    "real", nk.real),
    Op("reciprocal",         1, "floating-point",             "same", nk.reciprocal),
    Op("round",              1, "numeric",                    "same", nk.round),
    Op("sign",               1, "numeric",                    "same", nk.sign),
    Op("signbit",            1, "real-valued floating-point", "bool", np.signbit),
    Op("sin",                1, "floating-point",             "same", np.sin,          None, HEAVY),
    Op("sinh",               1, "floating-point",             "same", np.sinh,         None, HEAVY),
    Op("sqrt",               1, "floating-point",             "same", np.sqrt),
    Op("square",             1, "numeric",                    "same", np.square),
    Op("tan",                1, "floating-point",             "same", nk.tan,          None, HEAVY),
    Op("tanh",               1, "floating-point",             "same", nk.tanh,         None, HEAVY),
    Op("trunc",              1, "real-valued",                "same", np.trunc),
    Op("add",                2, "numeric",                    "same", np.add,          "add"),
    Op("atan2",              2, "real-valued floating-point", "same", np.arctan2,      None, HEAVY),
    Op("bitwise_and",        2, "integer or boolean",         "same", np.bitwise_and,  "and"),
    Op("bitwise_left_shift", 2, "integer",                    "same", np.left_shift,   "lshift"),
    Op("bitwise_or",         2, "integer or boolean",         "same", np.bitwise_or,   "or"),
    Op("bitwise_right_shift",2, "integer",                   "same", np.right_shift,  "rshift"),
    Op("bitwise_xor",        2, "integer or boolean",         "same", np.bitwise_xor,  "xor"),
    Op("copysign",           2, "real-valued floating-point", "same", np.copysign),
    Op("divide",             2, "floating-point",             "same", np.divide,       "truediv"),
    Op("equal",              2, "all",                        "bool", np.equal,        "eq"),
    Op("floor_divide",       2, "real-valued",                "same", nk.floor_divide, "floordiv"),
    Op("greater",            2, "real-valued",                "bool", np.greater,      "gt"),
    Op("greater_equal",      2, "real-valued",                "bool", np.greater_equal, "ge"),
    Op("hypot",              2, "real-valued floating-point", "same", np.hypot,        None, HEAVY),
    Op("less",               2, "real-valued",                "bool", np.less,         "lt"),
    Op("less_equal",         2, "real-valued",                "bool", np.less_equal,   "le"),
    Op("logaddexp",          2, "real-valued floating-point", "same", np.logaddexp,    None, HEAVY),
    Op("logical_and",        2, "bool",                       "bool", np.logical_and),
    Op("logical_or",         2, "bool",                       "bool", np.logical_or),
    Op("logical_xor",        2, "bool",                       "bool", np.logical_xor),
    Op("maximum",            2, "real-valued",                "same", np.maximum),
    Op("minimum",            2, "real-valued",                "same", np.minimum),
    Op("multiply",           2, "numeric",                    "same", np.multiply,     "mul"),
    Op("nextafter",          2, "real-valued floating-point", "same", np.nextafter),
    Op("not_equal",          2, "all",                        "bool", np.not_equal,    "ne"),
    Op("pow",                2, "numeric",                    "same", nk.pow, "pow", HEAVY),
    Op("remainder",          2, "real-valued",                "same", np.remainder,    "mod"),
    Op("subtract",           2, "numeric",                    "same", np.subtract,     "sub"),
    Op("where",              3, None,                         "same", nk.where),
    Op("clip",               3, None,                         "same", nk.clip),
)}

# The element-wise functions of the namespace, by arity.
UNARY = {name: op for name, op in OPS.items() if op.arity == 1}
BINARY = {name: op for name, op in OPS.items() if op.arity == 2}
COMPARISONS = frozenset(op.operator for op in BINARY.values() if op.result == "bool"
                        and op.operator is not None)  # no reflected or in-place forms
