"""The special cases of the element-wise functions and operators (spec: elementwise_functions/*,
"Special cases"), every bullet hand-encoded below and checked on a grid of awkward values.

Each table line reads `conditions -> result`, one condition per operand (`x` or `x1, x2` for real
input, `a, b` for the real and imaginary parts of complex input) and one result per output part.
Conditions: `NaN` (`+NaN`/`-NaN`: by sign bit), `+inf`/`-inf`/`inf` (either), `+0`/`-0`/`0`,
numbers, `fin`, `+fin`/`-fin` (positive/negative finite), `nzfin` (nonzero finite), `nz` (nonzero,
not NaN), `>N`/`<N`, `int`/`odd`/`half` (integer, odd integer, half-integer values), `any`,
`else` (no other line of the table applies); `!` negates, `&` and `/` combine (and, or), `|c|`
applies `c` to the absolute value, and `=x1`, `-x1`, `sgn=x1`, `sgn!=x1` relate x2 to x1.
Results: the same value names (`0` and `inf` leave the sign open, `NaN` never checks the sign
bit), multiples of `π` (approximate; `±` leaves the sign open), `T`/`F`, an operand (`x1`,
`|x1|`, `-|x1|`, ...), `sinf` (infinity signed by the sign rule), `+sign`/`-sign` (that sign or
NaN), `inf*cos(b)`-style parts of `cis`, `even`, and Python's `py%`/`py//`.

Lines marked "spec:" in comments resolve bullets that contradict each other literally.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from functools import cache
from typing import NamedTuple

import numpy as np
import pytest

import hxarray as xp

from .oracle import COMPLEX_FLOATING, ON_EACH_DEVICE, REAL_FLOATING, ids

pytestmark = ON_EACH_DEVICE

REAL_UNARY = {
    "abs": "NaN -> NaN; -0 -> +0; -inf -> +inf",
    "acos": "NaN -> NaN; >1 -> NaN; <-1 -> NaN; 1 -> +0",
    "acosh": "NaN -> NaN; <1 -> NaN; 1 -> +0; +inf -> +inf",
    "asin": "NaN -> NaN; >1 -> NaN; <-1 -> NaN; +0 -> +0; -0 -> -0",
    "asinh": "NaN -> NaN; +0 -> +0; -0 -> -0; +inf -> +inf; -inf -> -inf",
    "atan": "NaN -> NaN; +0 -> +0; -0 -> -0; +inf -> π/2; -inf -> -π/2",
    "atanh": "NaN -> NaN; <-1 -> NaN; >1 -> NaN; -1 -> -inf; 1 -> +inf; +0 -> +0; -0 -> -0",
    "ceil": "int -> x; +inf -> +inf; -inf -> -inf; +0 -> +0; -0 -> -0; NaN -> NaN",
    "cos": "NaN -> NaN; +0 -> 1; -0 -> 1; +inf -> NaN; -inf -> NaN",
    "cosh": "NaN -> NaN; +0 -> 1; -0 -> 1; +inf -> +inf; -inf -> +inf",
    "exp": "NaN -> NaN; +0 -> 1; -0 -> 1; +inf -> +inf; -inf -> +0",
    "expm1": "NaN -> NaN; +0 -> +0; -0 -> -0; +inf -> +inf; -inf -> -1",
    "floor": "int -> x; +inf -> +inf; -inf -> -inf; +0 -> +0; -0 -> -0; NaN -> NaN",
    "isfinite": "inf -> F; NaN -> F; fin -> T",
    "isinf": "inf -> T; else -> F",
    "isnan": "NaN -> T; else -> F",
    "log": "NaN -> NaN; <0 -> NaN; 0 -> -inf; 1 -> +0; +inf -> +inf",
    "log1p": "NaN -> NaN; <-1 -> NaN; -1 -> -inf; -0 -> -0; +0 -> +0; +inf -> +inf",
    "log2": "NaN -> NaN; <0 -> NaN; 0 -> -inf; 1 -> +0; +inf -> +inf",
    "log10": "NaN -> NaN; <0 -> NaN; 0 -> -inf; 1 -> +0; +inf -> +inf",
    "round": "int -> x; +inf -> +inf; -inf -> -inf; +0 -> +0; -0 -> -0; NaN -> NaN; "
             "half -> even",
    "sign": "<0 -> -1; 0 -> 0; >0 -> 1; NaN -> NaN",
    "signbit": "+0 -> F; -0 -> T; +inf -> F; -inf -> T; +fin -> F; -fin -> T; +NaN -> F; "
               "-NaN -> T",
    "sin": "NaN -> NaN; +0 -> +0; -0 -> -0; inf -> NaN",
    "sinh": "NaN -> NaN; +0 -> +0; -0 -> -0; +inf -> +inf; -inf -> -inf",
    "sqrt": "NaN -> NaN; <0 -> NaN; +0 -> +0; -0 -> -0; +inf -> +inf",
    "tan": "NaN -> NaN; +0 -> +0; -0 -> -0; inf -> NaN",
    "tanh": "NaN -> NaN; +0 -> +0; -0 -> -0; +inf -> 1; -inf -> -1",
    "trunc": "int -> x; +inf -> +inf; -inf -> -inf; +0 -> +0; -0 -> -0; NaN -> NaN",
}

_DIVISION = """
    NaN, any -> NaN; any, NaN -> NaN; inf, inf -> NaN; 0, 0 -> NaN
    +0, >0 -> +0; -0, >0 -> -0; +0, <0 -> -0; -0, <0 -> +0
    >0, +0 -> +inf; >0, -0 -> -inf; <0, +0 -> -inf; <0, -0 -> +inf
    +inf, +fin -> +inf; +inf, -fin -> -inf; -inf, +fin -> -inf; -inf, -fin -> +inf
    +fin, +inf -> +0; +fin, -inf -> -0; -fin, +inf -> -0; -fin, -inf -> +0
    nzfin, nzfin&sgn=x1 -> +sign; nzfin, nzfin&sgn!=x1 -> -sign
"""

REAL_BINARY = {
    "add": """
        NaN, any -> NaN; any, NaN -> NaN; +inf, -inf -> NaN; -inf, +inf -> NaN
        +inf, +inf -> +inf; -inf, -inf -> -inf
        +inf, fin -> +inf; -inf, fin -> -inf; fin, +inf -> +inf; fin, -inf -> -inf
        -0, -0 -> -0; -0, +0 -> +0; +0, -0 -> +0; +0, +0 -> +0
        0, nzfin -> x2; nzfin, 0 -> x1; nzfin, -x1 -> +0
    """,
    "atan2": """
        NaN, any -> NaN; any, NaN -> NaN
        >0, +0 -> π/2; >0, -0 -> π/2
        +0, >0 -> +0; +0, +0 -> +0; +0, -0 -> π; +0, <0 -> π
        -0, >0 -> -0; -0, +0 -> -0; -0, -0 -> -π; -0, <0 -> -π
        <0, +0 -> -π/2; <0, -0 -> -π/2
        +fin, +inf -> +0; +fin, -inf -> π; -fin, +inf -> -0; -fin, -inf -> -π
        +inf, fin -> π/2; -inf, fin -> -π/2
        +inf, +inf -> π/4; +inf, -inf -> 3π/4; -inf, +inf -> -π/4; -inf, -inf -> -3π/4
    """,
    "copysign": """
        !NaN, <0 -> -|x1|; !NaN, -0 -> -|x1|; !NaN, +0 -> |x1|; !NaN, >0 -> |x1|
        !NaN, -NaN -> -|x1|; !NaN, +NaN -> |x1|
        NaN, <0 -> -NaN; NaN, -0 -> -NaN; NaN, +0 -> +NaN; NaN, >0 -> +NaN
        NaN, -NaN -> -NaN; NaN, +NaN -> +NaN
    """,
    "divide": _DIVISION,
    "equal": """
        NaN, any -> F; any, NaN -> F; +inf, +inf -> T; -inf, -inf -> T
        -0, 0 -> T; +0, 0 -> T; fin, fin&=x1 -> T; else -> F
    """,
    # The preferred floor(x1 / x2) results, not Python's NaN and -1.0; finite quotients as in
    # Python (rounded down from the exact quotient).
    "floor_divide": _DIVISION + "nzfin, nzfin -> py//",
    "hypot": """
        inf, any -> +inf; any, inf -> +inf; 0, any -> |x2|; any, 0 -> |x1|
        fin/NaN, NaN -> NaN; NaN, fin/NaN -> NaN
    """,
    "logaddexp": "NaN, any -> NaN; any, NaN -> NaN; +inf, !NaN -> +inf; !NaN, +inf -> +inf",
    "maximum": "NaN, any -> NaN; any, NaN -> NaN",
    "minimum": "NaN, any -> NaN; any, NaN -> NaN",
    "multiply": """
        NaN, any -> NaN; any, NaN -> NaN; inf, 0 -> NaN; 0, inf -> NaN
        any, sgn=x1 -> +sign; any, sgn!=x1 -> -sign
        inf, inf -> sinf; inf, nzfin -> sinf; nzfin, inf -> sinf
    """,
    "nextafter": "NaN, any -> NaN; any, NaN -> NaN; -0, +0 -> +0; +0, -0 -> -0",
    "not_equal": """
        NaN, any -> T; any, NaN -> T; +inf, -inf -> T; -inf, +inf -> T
        fin, fin&!=x1 -> T; else -> F
        # spec: "the remaining cases" cannot include an infinity against a finite number
        inf, fin -> T; fin, inf -> T
    """,
    "pow": """
        !1, NaN -> NaN; any, +0 -> 1; any, -0 -> 1; NaN, !0 -> NaN
        |>1|, +inf -> +inf; |>1|, -inf -> +0; |1|, +inf -> 1; |1|, -inf -> 1; 1, !NaN -> 1
        |<1|, +inf -> +0; |<1|, -inf -> +inf; +inf, >0 -> +inf; +inf, <0 -> +0
        -inf, >0&odd -> -inf; -inf, >0&!odd -> +inf; -inf, <0&odd -> -0; -inf, <0&!odd -> +0
        +0, >0 -> +0; +0, <0 -> +inf
        -0, >0&odd -> -0; -0, >0&!odd -> +0; -0, <0&odd -> -inf; -0, <0&!odd -> +inf
        <0&fin, fin&!int -> NaN
    """,
    "remainder": """
        NaN, any -> NaN; any, NaN -> NaN; inf, inf -> NaN; 0, 0 -> NaN
        +0, >0 -> +0; -0, >0 -> +0; +0, <0 -> -0; -0, <0 -> -0
        >0, 0 -> NaN; <0, 0 -> NaN; inf, fin -> NaN
        +fin, +inf -> x1; +fin, -inf -> x2; -fin, +inf -> x2; -fin, -inf -> x1
        else -> py%
    """,
}

COMPLEX_UNARY = {
    "abs": """
        inf, any -> +inf; any, inf -> +inf; 0, any -> |b|; any, 0 -> |a|
        NaN, fin -> NaN; fin, NaN -> NaN; NaN, NaN -> NaN
    """,
    "acos": """
        0, +0 -> π/2, -0; 0, NaN -> π/2, NaN; fin, +inf -> π/2, -inf; nzfin, NaN -> NaN, NaN
        -inf, +fin -> π, -inf; +inf, +fin -> +0, -inf
        -inf, +inf -> 3π/4, -inf; +inf, +inf -> π/4, -inf; inf, NaN -> NaN, inf
        NaN, fin -> NaN, NaN; NaN, +inf -> NaN, -inf; NaN, NaN -> NaN, NaN
    """,
    "acosh": """
        0, +0 -> +0, π/2; fin, +inf -> +inf, π/2; nzfin, NaN -> NaN, NaN; +0, NaN -> NaN, ±π/2
        -inf, +fin -> +inf, π; +inf, +fin -> +inf, +0
        -inf, +inf -> +inf, 3π/4; +inf, +inf -> +inf, π/4; inf, NaN -> +inf, NaN
        NaN, fin -> NaN, NaN; NaN, +inf -> +inf, NaN; NaN, NaN -> NaN, NaN
    """,
    "asinh": """
        +0, +0 -> +0, +0; +fin, +inf -> +inf, π/2; fin, NaN -> NaN, NaN
        +inf, +fin -> +inf, +0; +inf, +inf -> +inf, π/4
        NaN, +0 -> NaN, +0; NaN, nzfin -> NaN, NaN; NaN, +inf -> inf, NaN; NaN, NaN -> NaN, NaN
    """,
    "atanh": """
        +0, +0 -> +0, +0; +0, NaN -> +0, NaN; 1, +0 -> +inf, +0
        +fin, +inf -> +0, π/2; nzfin, NaN -> NaN, NaN
        +inf, +fin -> +0, π/2; +inf, +inf -> +0, π/2; +inf, NaN -> +0, NaN
        NaN, fin -> NaN, NaN; NaN, +inf -> 0, π/2; NaN, NaN -> NaN, NaN
    """,
    "cosh": """
        +0, +0 -> 1, +0; +0, +inf -> NaN, 0; +0, NaN -> NaN, 0
        nzfin, +inf -> NaN, NaN; nzfin, NaN -> NaN, NaN
        +inf, +0 -> +inf, +0; +inf, nzfin -> inf*cos(b), inf*sin(b)
        +inf, +inf -> inf, NaN; +inf, NaN -> +inf, NaN
        NaN, 0 -> NaN, 0; NaN, nzfin -> NaN, NaN; NaN, NaN -> NaN, NaN
    """,
    "exp": """
        0, +0 -> 1, +0; fin, +inf -> NaN, NaN; fin, NaN -> NaN, NaN; +inf, +0 -> +inf, +0
        -inf, fin -> 0*cos(b), 0*sin(b); +inf, nzfin -> inf*cos(b), inf*sin(b)
        -inf, +inf -> 0, 0; +inf, +inf -> inf, NaN; -inf, NaN -> 0, 0; +inf, NaN -> inf, NaN
        NaN, +0 -> NaN, +0; NaN, !0 -> NaN, NaN; NaN, NaN -> NaN, NaN
    """,
    "expm1": """
        0, +0 -> 0, +0; fin, +inf -> NaN, NaN; fin, NaN -> NaN, NaN; +inf, +0 -> +inf, +0
        -inf, fin -> -1, 0*sin(b); +inf, nzfin -> inf*cos(b), inf*sin(b)
        -inf, +inf -> -1, 0; +inf, +inf -> inf, NaN; -inf, NaN -> -1, 0; +inf, NaN -> inf, NaN
        NaN, +0 -> NaN, +0; NaN, !0 -> NaN, NaN; NaN, NaN -> NaN, NaN
    """,
    "isfinite": "NaN, any -> F; any, NaN -> F; inf, any -> F; any, inf -> F; fin, fin -> T",
    "isinf": "inf, any -> T; fin/NaN, inf -> T; else -> F",
    "isnan": "NaN, any -> T; any, NaN -> T; else -> F",
    "log": """
        -0, +0 -> -inf, π; +0, +0 -> -inf, +0; fin, +inf -> +inf, π/2; fin, NaN -> NaN, NaN
        -inf, +fin -> +inf, π; +inf, +fin -> +inf, +0
        -inf, +inf -> +inf, 3π/4; +inf, +inf -> +inf, π/4; inf, NaN -> +inf, NaN
        NaN, fin -> NaN, NaN; NaN, +inf -> +inf, NaN; NaN, NaN -> NaN, NaN
    """,
    "log1p": """
        -1, +0 -> -inf, +0; fin, +inf -> +inf, π/2; fin, NaN -> NaN, NaN
        -inf, +fin -> +inf, π; +inf, +fin -> +inf, +0
        -inf, +inf -> +inf, 3π/4; +inf, +inf -> +inf, π/4; inf, NaN -> +inf, NaN
        NaN, fin -> NaN, NaN; NaN, +inf -> +inf, NaN; NaN, NaN -> NaN, NaN
    """,
    # spec: a NaN with b = any value gives NaN + NaN j except where b is infinite (sqrt(z) is
    # +inf + inf j for every a then, conj-symmetrically), as in C99.
    "sign": "0, 0 -> 0, 0; NaN, any -> NaN, NaN; any, NaN -> NaN, NaN",
    "sinh": """
        +0, +0 -> +0, +0; +0, +inf -> 0, NaN; +0, NaN -> 0, NaN
        +fin, +inf -> NaN, NaN; +fin, NaN -> NaN, NaN
        +inf, +0 -> +inf, +0; +inf, +fin -> inf*cos(b), inf*sin(b)
        +inf, +inf -> inf, NaN; +inf, NaN -> inf, NaN
        NaN, +0 -> NaN, +0; NaN, nzfin -> NaN, NaN; NaN, NaN -> NaN, NaN
    """,
    "sqrt": """
        0, +0 -> +0, +0; any, +inf -> +inf, +inf; fin, NaN -> NaN, NaN
        -inf, +fin -> +0, +inf; +inf, +fin -> +inf, +0
        -inf, NaN -> NaN, inf; +inf, NaN -> +inf, NaN; NaN, !inf -> NaN, NaN
    """,
    "tanh": """
        +0, +0 -> +0, +0; nzfin, +inf -> NaN, NaN; +0, +inf -> +0, NaN
        nzfin, NaN -> NaN, NaN; +0, NaN -> +0, NaN
        +inf, +fin -> 1, +0; +inf, +inf -> 1, 0; +inf, NaN -> 1, 0
        NaN, +0 -> NaN, +0; NaN, nz -> NaN, NaN; NaN, NaN -> NaN, NaN
    """,
}


# -- the table language ----------------------------------------------------------------------------
class Case(NamedTuple):
    function: str
    dtype: xp.DType
    conditions: tuple[str, ...]
    results: tuple[str, ...]

    def __str__(self) -> str:
        text = f"{self.function}-{self.dtype.name}-{','.join(self.conditions)}->" \
               f"{','.join(self.results)}"
        return text.replace("π", "pi")


def _parse(function: str, table: str, dtypes: tuple[xp.DType, ...]) -> list[Case]:
    cases = []
    for line in re.split(r"[;\n]", re.sub(r"#.*", "", table)):
        if line.strip():
            left, right = line.split("->")
            for dtype in dtypes:
                cases.append(Case(function, dtype, tuple(s.strip() for s in left.split(",")),
                                  tuple(s.strip() for s in right.split(","))))
    return cases


def _integer(v: np.ndarray) -> np.ndarray:
    return np.isfinite(v) & (v == np.floor(v))


def _atom(token: str, v: np.ndarray, other: np.ndarray | None) -> np.ndarray:
    """The points where `v` satisfies one condition atom."""
    if token.startswith("!"):
        return ~_atom(token[1:], v, other)
    if token.startswith("|"):
        return _atom(token[1:-1], np.abs(v), other)
    if token[0] in "+-" and token[1:] in ("NaN", "0", "inf"):
        return (np.signbit(v) == (token[0] == "-")) & _atom(token[1:], v, other)
    named = {
        "any": lambda: np.ones(v.shape, bool), "NaN": lambda: np.isnan(v),
        "inf": lambda: np.isinf(v), "0": lambda: v == 0, "fin": lambda: np.isfinite(v),
        "+fin": lambda: np.isfinite(v) & (v > 0), "-fin": lambda: np.isfinite(v) & (v < 0),
        "nzfin": lambda: np.isfinite(v) & (v != 0), "nz": lambda: (v != 0) & ~np.isnan(v),
        "int": lambda: _integer(v), "odd": lambda: _integer(v) & (np.fmod(v, 2) != 0),
        "half": lambda: np.isfinite(v) & (v - np.floor(v) == 0.5),
        "=x1": lambda: v == other, "!=x1": lambda: v != other, "-x1": lambda: v == -other,
        "sgn=x1": lambda: np.signbit(v) == np.signbit(other),
        "sgn!=x1": lambda: np.signbit(v) != np.signbit(other),
    }
    if token in named:
        return named[token]()
    if token[0] in "<>":
        return (v > float(token[1:])) if token[0] == ">" else (v < float(token[1:]))
    return v == float(token)


def _condition(token: str, v: np.ndarray, other: np.ndarray | None = None) -> np.ndarray:
    """`/` separates alternatives, `&` conjunctions (tighter)."""
    mask = np.zeros(v.shape, bool)
    with np.errstate(all="ignore"):
        for alternative in token.split("/"):
            part = np.ones(v.shape, bool)
            for atom in alternative.split("&"):
                part &= _atom(atom, v, other)
            mask |= part
    return mask


_PI = re.compile(r"^(±|-)?(\d*)π(?:/(\d+))?$")


def _approx(got: np.ndarray, value: float | np.ndarray, dtype: xp.DType) -> np.ndarray:
    rtol = 1e-6 if dtype in (xp.float32, xp.complex64) else 1e-13
    return np.isclose(got, value, rtol=rtol, atol=0)


def _same(got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Exactly equal, NaN matching NaN and zeros matching in sign; complex numbers by parts."""
    if got.dtype.kind == "c" or expected.dtype.kind == "c":
        return _same(got.real, expected.real) & _same(got.imag, expected.imag)
    if got.dtype.kind != "f":
        return got == expected
    return (np.isnan(got) & np.isnan(expected)) | (
        (got == expected) & (np.signbit(got) == np.signbit(expected)))


def _result(token: str, got: np.ndarray, ops: dict[str, np.ndarray],
            dtype: xp.DType) -> np.ndarray:
    """The points where the part `got` of the result is `token`."""
    if token in ("T", "F"):
        return got == (token == "T")
    if token in ("NaN", "+NaN", "-NaN"):
        return np.isnan(got) & (True if token == "NaN" else np.signbit(got) == (token[0] == "-"))
    if token in ("0", "inf"):
        return np.abs(got) == float(token)
    if (match := _PI.match(token)) is not None:
        sign, numerator, denominator = match.groups()
        value = math.pi * int(numerator or 1) / int(denominator or 1)
        if sign == "±":
            return _approx(np.abs(got), value, dtype)
        return _approx(got, -value if sign == "-" else value, dtype)
    if (match := re.match(r"^(0|inf)\*(cos|sin)\(b\)$", token)) is not None:
        part = getattr(np, match[2])(ops["b"].astype(np.float64))
        return _same(got, np.copysign(float(match[1]), part).astype(got.dtype))
    x1, x2 = ops.get("x1", ops.get("x")), ops.get("x2")
    derived = {
        "x": lambda: x1, "x1": lambda: x1, "x2": lambda: x2, "|x1|": lambda: np.abs(x1),
        "-|x1|": lambda: -np.abs(x1), "|x2|": lambda: np.abs(x2),
        "|a|": lambda: np.abs(ops.get("a")), "|b|": lambda: np.abs(ops.get("b")),
        "sinf": lambda: np.where(np.signbit(x1) ^ np.signbit(x2), -np.inf, np.inf),
        "py%": lambda: _python(operator.mod, x1, x2),
        "py//": lambda: _python(operator.floordiv, x1, x2),
    }
    if token in derived:
        return _same(got, np.asarray(derived[token](), dtype=got.dtype))
    if token in ("+sign", "-sign"):
        return np.isnan(got) | (np.signbit(got) == (token[0] == "-"))
    if token == "even":
        low = np.floor(np.where(np.isfinite(x1), x1, 0))
        return got == np.where(np.fmod(low, 2) == 0, low, low + 1)
    return _same(got, np.full(got.shape, float(token), dtype=got.dtype))


def _python(op: Callable[[float, float], float], x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """`op` on Python floats, point by point (NaN where Python raises)."""
    def safe(a: float, b: float) -> float:
        try:
            return op(a, b)
        except (ZeroDivisionError, ValueError):
            return math.nan
    return np.array([safe(float(a), float(b)) for a, b in zip(x1, x2)])


# -- the grid of awkward values --------------------------------------------------------------------
REAL_POOL = [math.nan, -math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5,
             -1.5, 2.0, -2.0, 2.5, -2.5, 3.0, -3.0, 1e20, -1e20]
PART_POOL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5]


def _real_pool(dtype: xp.DType, pool: list[float] = REAL_POOL) -> np.ndarray:
    with np.errstate(over="ignore"):  # (float16: 1e20 is infinity, on purpose)
        values = np.array(pool, dtype=np.dtype(dtype.name))
    values[1] = np.copysign(values[1], -1.0) if pool is REAL_POOL else values[1]
    return values


def _complex(re_: np.ndarray, im: np.ndarray, dtype: xp.DType) -> np.ndarray:
    z = np.empty(re_.shape, dtype=np.dtype(dtype.name))
    z.real, z.imag = re_, im
    return z


def _real_of(dtype: xp.DType) -> xp.DType:
    return xp.float32 if dtype in (xp.float32, xp.complex64) else xp.float64


@cache
def _operands(dtype: xp.DType, arity: int) -> tuple[np.ndarray, ...]:
    """Every combination of pool values: (x,) or (x1, x2) for real dtypes, (a, b) for complex."""
    if dtype in REAL_FLOATING:
        pool = _real_pool(dtype)
    else:
        pool = np.array(PART_POOL, dtype=np.dtype(_real_of(dtype).name))
        arity = 2
    if arity == 1:
        return (pool,)
    return np.repeat(pool, len(pool)), np.tile(pool, len(pool))


def _inputs(dtype: xp.DType, arity: int) -> tuple[xp.Array, ...]:
    operands = _operands(dtype, arity)
    if dtype in COMPLEX_FLOATING:
        return (xp.asarray(_complex(*operands, dtype)),)
    return tuple(xp.asarray(o) for o in operands)


def _evaluate(function: str, dtype: xp.DType) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The grid's operands by name and hxarray's results there, on the default device."""
    return _evaluate_on(function, dtype, xp.__array_namespace_info__().default_device())


@cache
def _evaluate_on(function: str, dtype: xp.DType,
                 device: xp.Device) -> tuple[dict[str, np.ndarray], np.ndarray]:
    arity = 2 if function in REAL_BINARY else 1
    operands = _operands(dtype, arity)
    names = ("a", "b") if dtype in COMPLEX_FLOATING else ("x",) if arity == 1 else ("x1", "x2")
    return dict(zip(names, operands)), np.asarray(getattr(xp, function)(*_inputs(dtype, arity)))


def _all_cases() -> list[Case]:
    cases = []
    for tables, dtypes in ((REAL_UNARY, REAL_FLOATING), (REAL_BINARY, REAL_FLOATING),
                           (COMPLEX_UNARY, COMPLEX_FLOATING)):
        for function, table in tables.items():
            cases += _parse(function, table, dtypes)
    return cases


CASES = _all_cases()


def _applies(case: Case, ops: dict[str, np.ndarray]) -> np.ndarray:
    values = list(ops.values())
    if case.conditions == ("else",):
        others = [c for c in CASES if c.function == case.function and c.dtype is case.dtype
                  and c.conditions != ("else",)]
        return ~np.logical_or.reduce([_applies(c, ops) for c in others])
    mask = _condition(case.conditions[0], values[0])
    if len(case.conditions) == 2:
        mask &= _condition(case.conditions[1], values[1], values[0])
    return mask


@pytest.mark.parametrize("case", CASES, ids=str)
def test_special_case(case):
    ops, got = _evaluate(case.function, case.dtype)
    where = _applies(case, ops)
    assert where.any(), f"no point of the grid satisfies {case}"
    with np.errstate(all="ignore"):
        if len(case.results) == 2:
            holds = _result(case.results[0], got.real, ops, case.dtype) & \
                _result(case.results[1], got.imag, ops, case.dtype)
        else:
            holds = _result(case.results[0], got, ops, case.dtype)
    failing = where & ~holds
    inputs = [tuple(float(v[i]) for v in ops.values()) for i in np.flatnonzero(failing)]
    assert not failing.any(), f"{case}: at {inputs[:6]} got {got[failing][:6]}"


UNARY_GRIDS = [(f, d) for f in REAL_UNARY for d in REAL_FLOATING] + \
    [(f, d) for f in COMPLEX_UNARY for d in COMPLEX_FLOATING]


@pytest.mark.parametrize(("function", "dtype"), UNARY_GRIDS,
                         ids=[f"{f}-{d.name}" for f, d in UNARY_GRIDS])
def test_0d_inputs_give_the_same_special_values(function, dtype):
    """Each point of the grid alone, as a 0-D array (the kernels' fix-ups index their input)."""
    ops, got = _evaluate(function, dtype)
    (grid,) = _inputs(dtype, 1)
    for i in range(grid.shape[0]):
        single = np.asarray(getattr(xp, function)(grid[i]))
        assert single.shape == () and _same(single, got[i]), (function, grid[i], single, got[i])


# -- symmetries and "as if implemented as" identities ----------------------------------------------
def _matches(got: np.ndarray, expected: np.ndarray, dtype: xp.DType,
             free: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Per point: NaN where NaN is expected, zeros and infinities exactly (sign included, unless
    `free` marks the sign of that part as unspecified), other values approximately; complex
    numbers part by part."""
    if np.iscomplexobj(got) or np.iscomplexobj(expected):
        free = free or (None, None)
        return _matches(got.real, expected.real, dtype, free[0]) & \
            _matches(got.imag, expected.imag, dtype, free[1])
    if free is not None:
        got, expected = np.where(free, np.abs(got), got), np.where(free, np.abs(expected),
                                                                   expected)
    exact = (expected == 0) | np.isinf(expected)
    return np.where(np.isnan(expected), np.isnan(got),
                    np.where(exact, _same(got, expected), _approx(got, expected, dtype)))


def _times_j(z: np.ndarray, power: int) -> np.ndarray:
    """z * 1j (power 1) or z * -1j (power -1), exactly as the spec's multiplication table."""
    return _complex(-power * z.imag, power * z.real, xp.complex128 if z.dtype.itemsize == 16
                    else xp.complex64)


def _call(function: str, *args: np.ndarray) -> np.ndarray:
    return np.asarray(getattr(xp, function)(*(xp.asarray(a) for a in args)))


def _grid(dtype: xp.DType, arity: int = 1) -> tuple[np.ndarray, ...]:
    """The grid as numpy arrays of `dtype` (complex: every pair of awkward parts)."""
    if dtype in REAL_FLOATING:
        return _operands(dtype, arity)
    z = _complex(*_operands(dtype, 1), dtype)
    return (z,) if arity == 1 else (np.repeat(z, len(z)), np.tile(z, len(z)))


CONJUGATE_SYMMETRIC = ("acos", "acosh", "asinh", "atanh", "cosh", "exp", "expm1", "log", "log1p",
                       "sinh", "sqrt", "tanh")
ODD = ("asinh", "atanh", "sinh", "tanh")
EVEN = ("cosh",)


def _sign_free(function: str, dtype: xp.DType, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where the table of `function` leaves the sign of the real / imaginary part of the result
    open, at z or at its mirror images (the tables list one quadrant only)."""
    free = (np.zeros(z.shape, bool), np.zeros(z.shape, bool))
    mirrors = [z, np.conj(z)] + ([-z, -np.conj(z)] if function in ODD + EVEN else [])
    for case in CASES:
        if case.function == function and case.dtype is dtype:
            for w in mirrors:
                where = _applies(case, {"a": w.real, "b": w.imag})
                for part, token in zip(free, case.results):
                    part |= where & ((token in ("0", "inf")) | token.startswith("±"))
    return free


@pytest.mark.parametrize("dtype", COMPLEX_FLOATING, ids=ids(COMPLEX_FLOATING))
@pytest.mark.parametrize("function", CONJUGATE_SYMMETRIC)
def test_conjugate_symmetry(function, dtype):
    """f(conj(z)) == conj(f(z)) (points with a NaN part are left out: conj cannot be seen)."""
    (z,) = _grid(dtype)
    z = z[~np.isnan(z.real) & ~np.isnan(z.imag)]
    ok = _matches(_call(function, np.conj(z)), np.conj(_call(function, z)), dtype,
                  _sign_free(function, dtype, z))
    assert ok.all(), f"{function} at {z[~ok]}"


@pytest.mark.parametrize("dtype", REAL_FLOATING + COMPLEX_FLOATING,
                         ids=ids(REAL_FLOATING + COMPLEX_FLOATING))
@pytest.mark.parametrize("function", ODD + EVEN)
def test_odd_and_even_symmetry(function, dtype):
    """f(-x) == -f(x) for the odd functions, f(-x) == f(x) for the even ones."""
    (x,) = _grid(dtype)
    x = x[~np.isnan(x.real) & ~np.isnan(x.imag)]
    result = _call(function, x)
    free = _sign_free(function, dtype, x) if dtype in COMPLEX_FLOATING else None
    ok = _matches(_call(function, -x), -result if function in ODD else result, dtype, free)
    assert ok.all(), f"{function} at {x[~ok]}"


# function -> (hyperbolic function, power of j multiplying the result) for f(z) = j**p g(z j)
THROUGH_HYPERBOLIC = {"asin": ("asinh", -1), "atan": ("atanh", -1), "cos": ("cosh", 0),
                      "sin": ("sinh", -1), "tan": ("tanh", -1)}


@pytest.mark.parametrize("dtype", COMPLEX_FLOATING, ids=ids(COMPLEX_FLOATING))
@pytest.mark.parametrize("function", list(THROUGH_HYPERBOLIC))
def test_complex_functions_defined_through_hyperbolic_ones(function, dtype):
    """asin(z) == -1j * asinh(z * 1j) and so on, signs left open where the hyperbolic
    function's table leaves them open."""
    base, power = THROUGH_HYPERBOLIC[function]
    (z,) = _grid(dtype)
    w = _times_j(z, 1)
    expected, free = _call(base, w), _sign_free(base, dtype, w)
    if power:
        expected, free = _times_j(expected, power), free[::-1]
    got = _call(function, z)
    ok = _matches(got, expected, dtype, free)
    assert ok.all(), f"{function} at {z[~ok]}: {got[~ok]} instead of {expected[~ok]}"


def _log_base(base: float) -> Callable[[np.ndarray], np.ndarray]:
    def identity(z: np.ndarray) -> np.ndarray:
        w = _call("log", z)
        return _complex(w.real / w.real.dtype.type(math.log(base)),
                        w.imag / w.imag.dtype.type(math.log(base)), xp.asarray(z).dtype)
    return identity


# function -> its definition for complex input in the spec's special-case sentence
COMPLEX_IDENTITIES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "log2": _log_base(2.0),
    "log10": _log_base(10.0),
    "square": lambda z: _call("multiply", z, z),
    "reciprocal": lambda z: np.asarray(xp.divide(1.0, xp.asarray(z))),
    "round": lambda z: _complex(_call("round", z.real), _call("round", z.imag),
                                xp.asarray(z).dtype),
}


@pytest.mark.parametrize("dtype", COMPLEX_FLOATING, ids=ids(COMPLEX_FLOATING))
@pytest.mark.parametrize("function", list(COMPLEX_IDENTITIES))
def test_complex_functions_defined_through_others(function, dtype):
    """log2 and log10 are log over a constant, square is z * z, reciprocal is 1.0 / z and
    rounding acts on each part."""
    (z,) = _grid(dtype)
    ok = _matches(_call(function, z), COMPLEX_IDENTITIES[function](z), dtype)
    assert ok.all(), f"{function} at {z[~ok]}: {_call(function, z)[~ok]}"


@pytest.mark.parametrize("dtype", REAL_FLOATING, ids=ids(REAL_FLOATING))
def test_real_functions_defined_through_others(dtype):
    """reciprocal is 1.0 / x, square is x * x, subtract is x1 + (-x2)."""
    (x,) = _grid(dtype)
    assert _same(_call("reciprocal", x), np.asarray(xp.divide(1.0, xp.asarray(x)))).all()
    assert _same(_call("square", x), _call("multiply", x, x)).all()
    x1, x2 = _grid(dtype, 2)
    assert _same(_call("subtract", x1, x2), _call("add", x1, -x2)).all()


@pytest.mark.parametrize("dtype", COMPLEX_FLOATING, ids=ids(COMPLEX_FLOATING))
def test_complex_addition_is_by_parts(dtype):
    """Real special cases apply to the real and imaginary sums separately; x1 - x2 is
    x1 + (-x2)."""
    z1, z2 = _grid(dtype, 2)
    total = _call("add", z1, z2)
    assert _same(total.real, _call("add", z1.real, z2.real)).all()
    assert _same(total.imag, _call("add", z1.imag, z2.imag)).all()
    difference = _call("subtract", z1, z2)
    assert _same(difference.real, _call("add", z1.real, -z2.real)).all()
    assert _same(difference.imag, _call("add", z1.imag, -z2.imag)).all()


@pytest.mark.parametrize("dtype", COMPLEX_FLOATING, ids=ids(COMPLEX_FLOATING))
def test_complex_comparisons_are_by_parts(dtype):
    z1, z2 = _grid(dtype, 2)
    same = (z1.real == z2.real) & (z1.imag == z2.imag)
    assert (_call("equal", z1, z2) == same).all()
    assert (_call("not_equal", z1, z2) == ~same).all()


@pytest.mark.parametrize("dtype", COMPLEX_FLOATING, ids=ids(COMPLEX_FLOATING))
@pytest.mark.parametrize("function", ["multiply", "divide"])
def test_complex_product_and_quotient_of_nans(function, dtype):
    nan = np.full(3, complex(math.nan, math.nan), dtype=np.dtype(dtype.name))
    result = _call(function, nan, nan)
    assert np.isnan(result.real).all() and np.isnan(result.imag).all()


@pytest.mark.parametrize("dtype", COMPLEX_FLOATING, ids=ids(COMPLEX_FLOATING))
def test_complex_sign_of_finite_numbers_is_z_over_abs(dtype):
    (z,) = _grid(dtype)
    z = z[np.isfinite(z) & (z != 0)]
    magnitude = np.abs(z)
    expected = _complex(z.real / magnitude, z.imag / magnitude, dtype)
    assert _matches(_call("sign", z), expected, dtype).all()


@pytest.mark.parametrize("dtype", REAL_FLOATING, ids=ids(REAL_FLOATING))
def test_clip_propagates_nan(dtype):
    (x,) = _grid(dtype)
    assert np.isnan(np.asarray(xp.clip(xp.asarray(x), math.nan, 1.0))).all()
    assert np.isnan(np.asarray(xp.clip(xp.asarray(x), -1.0, math.nan))).all()
    result = np.asarray(xp.clip(xp.asarray(x), -1.0, 1.0))
    assert (np.isnan(result) == np.isnan(x)).all()


# -- operators -------------------------------------------------------------------------------------
OPERATORS = {
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "truediv",
    "floor_divide": "floordiv", "remainder": "mod", "pow": "pow", "equal": "eq",
    "not_equal": "ne", "less": "lt", "less_equal": "le", "greater": "gt", "greater_equal": "ge",
}
INPLACE = ("add", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow")
COMPLEX_OPERATORS = ("add", "subtract", "multiply", "divide", "pow", "equal", "not_equal")
OPERATOR_CASES = [(f, d) for f in OPERATORS for d in REAL_FLOATING] + \
    [(f, d) for f in COMPLEX_OPERATORS for d in COMPLEX_FLOATING]


@pytest.mark.parametrize(("function", "dtype"), OPERATOR_CASES,
                         ids=[f"{f}-{d.name}" for f, d in OPERATOR_CASES])
def test_operators_have_the_functions_special_cases(function, dtype):
    """x1 op x2, x1 op= x2 and both scalar forms give the function's results exactly."""
    op = getattr(operator, OPERATORS[function])
    x1, x2 = (xp.asarray(g) for g in _grid(dtype, 2))
    expected = np.asarray(getattr(xp, function)(x1, x2))
    assert _same(np.asarray(op(x1, x2)), expected).all()
    if function in INPLACE:
        inplace = getattr(operator, f"i{OPERATORS[function]}")
        target = xp.asarray(x1, copy=True)
        assert inplace(target, x2) is target
        assert _same(np.asarray(target), expected).all()
        target = xp.asarray(x1, copy=True)  # the output is also the right operand
        assert _same(np.asarray(inplace(target, target)),
                     np.asarray(getattr(xp, function)(x1, x1))).all()
    (x,) = _grid(dtype)
    array = xp.asarray(x)
    for scalar in x.tolist():
        zero_d = xp.asarray(scalar, dtype=dtype)
        assert _same(np.asarray(op(array, scalar)),
                     np.asarray(getattr(xp, function)(array, zero_d))).all(), scalar
        assert _same(np.asarray(op(scalar, array)),
                     np.asarray(getattr(xp, function)(zero_d, array))).all(), scalar


@pytest.mark.parametrize("dtype", REAL_FLOATING + COMPLEX_FLOATING,
                         ids=ids(REAL_FLOATING + COMPLEX_FLOATING))
def test_unary_operators_have_the_functions_special_cases(dtype):
    (x,) = _grid(dtype)
    array = xp.asarray(x)
    for op, function in ((operator.neg, "negative"), (operator.pos, "positive"),
                         (abs, "abs")):
        assert _same(np.asarray(op(array)), np.asarray(getattr(xp, function)(array))).all()
    assert _same(np.asarray(-array), -x).all() and _same(np.asarray(+array), x).all()
