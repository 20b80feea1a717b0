"""Random numbers from Philox4x64-10 (`hxarray.random`): the words and their transforms, one
source for every device.

Each algorithm below (the Philox block, a transform from raw 64-bit words to a value, the log and
cosine the transforms need) is Python written against a small arithmetic interface, `ops`: run on
`NumpyOps` it computes with numpy arrays (the CPU without a compiler, and the values the Backend
base class gives a plug-in device); run on `COps` it writes C (one statement per operation) that
becomes the CUDA kernel and the CPU's compiled loop. Both round every floating-point operation on
its own (`__dadd_rn`, ... in C: no FMA contraction, no device math library), so every device gives
the same bits.

A call fills elements [0, n) of a C-ordered output; element i reads the words of a fixed position of
the stream (`Kind.read`), so values depend on neither threads nor chunks. Word j of a call is lane
`(lane + j) % 4` of the Philox block at counter `counter + (lane + j) // 4` (256-bit arithmetic).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _dtypes as dt

__all__ = ["KINDS", "COps", "Kind", "NumpyOps", "arguments", "evaluate", "philox", "philox_rounds",
           "words"]

MASK64 = (1 << 64) - 1
M32 = 0xFFFFFFFF
# Random123's Philox4x64 multipliers and Weyl key increments (numpy's philox.h).
PHILOX_M = (0xD2E7470EE14C6C93, 0xCA5A826395121157)
PHILOX_W = (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B)
ROUNDS = 10


# -- the arithmetic interface ----------------------------------------------------------------------
class NumpyOps:
    """`ops` over numpy uint64/float64 arrays (operators are numpy's own, which round each
    operation on its own)."""

    @staticmethod
    def mulhi(a: Any, b: Any) -> Any:
        """The high 64 bits of the 128-bit product, from 32-bit halves."""
        a_lo, a_hi = a & M32, a >> 32
        b_lo, b_hi = b & M32, b >> 32
        lh, hl = a_lo * b_hi, a_hi * b_lo
        mid = ((a_lo * b_lo) >> 32) + (lh & M32) + (hl & M32)
        return a_hi * b_hi + (lh >> 32) + (hl >> 32) + (mid >> 32)

    @staticmethod
    def where(c: Any, a: Any, b: Any) -> Any:
        # Python ints stay uint64 (numpy would make them int64)
        return np.where(c, *(np.uint64(v) if isinstance(v, int) else v for v in (a, b)))

    @staticmethod
    def u2f(a: Any) -> Any:
        """An unsigned integer up to 2**53 as float64 (exact)."""
        return np.asarray(a, np.uint64).astype(np.float64)

    @staticmethod
    def i2f(a: Any) -> Any:
        """A two's-complement 64-bit integer of magnitude below 2**51 as float64 (exact)."""
        return np.asarray(a, np.uint64).view(np.int64).astype(np.float64)

    @staticmethod
    def bits(f: Any) -> Any:
        return np.asarray(f, np.float64).view(np.uint64)

    @staticmethod
    def double(u: Any) -> Any:
        return np.asarray(u, np.uint64).view(np.float64)

    @staticmethod
    def sqrt(f: Any) -> Any:
        return np.sqrt(f)


class Sym:
    """A C value of `COps`: a local's name and its type ('u64', 'f64', 'bool')."""

    __slots__ = ("ops", "name", "type")

    def __init__(self, ops: COps, name: str, type: str) -> None:
        self.ops, self.name, self.type = ops, name, type

    def _binary(self, other: Any, op: str, swap: bool = False, result: str | None = None) -> Sym:
        if self.type == VECTOR or getattr(other, "type", None) == VECTOR:
            return self.ops.vector(op, self, other)
        other_name = self.ops.literal(other, self.type)
        left, right = (other_name, self.name) if swap else (self.name, other_name)
        if self.type == "f64" and op in _ROUNDED:
            return self.ops.let("f64", f"{_ROUNDED[op]}({left}, {right})")
        return self.ops.let(result or self.type, f"{left} {op} {right}")

    def __add__(self, o: Any) -> Sym: return self._binary(o, "+")
    def __radd__(self, o: Any) -> Sym: return self._binary(o, "+", True)
    def __sub__(self, o: Any) -> Sym: return self._binary(o, "-")
    def __rsub__(self, o: Any) -> Sym: return self._binary(o, "-", True)
    def __mul__(self, o: Any) -> Sym: return self._binary(o, "*")
    def __rmul__(self, o: Any) -> Sym: return self._binary(o, "*", True)
    def __truediv__(self, o: Any) -> Sym: return self._binary(o, "/")
    def __rtruediv__(self, o: Any) -> Sym: return self._binary(o, "/", True)
    def __and__(self, o: Any) -> Sym: return self._binary(o, "&")
    def __or__(self, o: Any) -> Sym: return self._binary(o, "|")
    def __xor__(self, o: Any) -> Sym: return self._binary(o, "^")
    def __rshift__(self, o: Any) -> Sym: return self._binary(o, ">>")
    def __lshift__(self, o: Any) -> Sym: return self._binary(o, "<<")
    def __neg__(self) -> Sym: return self.ops.let(self.type, f"-{self.name}")
    def __lt__(self, o: Any) -> Sym: return self._binary(o, "<", result="bool")
    def __ge__(self, o: Any) -> Sym: return self._binary(o, ">=", result="bool")
    def __gt__(self, o: Any) -> Sym: return self._binary(o, ">", result="bool")
    def __eq__(self, o: Any) -> Sym: return self._binary(o, "==", result="bool")  # type: ignore[override]

    __hash__ = None  # type: ignore[assignment]


_ROUNDED = {"+": "__dadd_rn", "-": "__dsub_rn", "*": "__dmul_rn", "/": "__ddiv_rn"}
# Four u64 lanes in one AVX2 register (the CPU's Philox blocks, `kernels/random.cuh`'s `u64x4`): the
# CPU's 64 x 64 -> 128-bit product unit is busy with the scalar blocks while the vector units
# compute these, four blocks at a time, from 32-bit products.
VECTOR = "u64x4"
_VECTOR_OPS = {"*": "v4_mullo", "^": "v4_xor"}


class COps:
    """`ops` that write C: each operation one `const` local in `lines`."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._names = itertools.count()

    def let(self, type: str, expression: str) -> Sym:
        name = f"v{next(self._names)}"
        self.lines.append(f"const {type} {name} = {expression};")  # hxarray.cuh's u64, f64
        return Sym(self, name, type)

    def value(self, name: str, type: str) -> Sym:
        """A value the surrounding C names (a parameter)."""
        return Sym(self, name, type)

    @staticmethod
    def literal(value: Any, type: str) -> str:
        if isinstance(value, Sym):
            return value.name
        if type == "f64" or isinstance(value, float):
            if float(value) != float(value) or abs(float(value)) == float("inf"):
                raise ValueError(f"no C literal for {value}")
            return repr(float(value))  # the shortest text that reads back as the same double
        return f"{int(value) & MASK64:#x}ULL"

    def mulhi(self, a: Sym, b: Any) -> Sym:
        if a.type == VECTOR:
            return self.let(VECTOR, f"v4_mulhi({a.name}, {self.literal(b, 'u64')})")
        return self.let("u64", f"__umul64hi({a.name}, {self.literal(b, 'u64')})")

    def vector(self, op: str, a: Any, b: Any) -> Sym:
        """`a op b` where either is a `VECTOR` (the other may be a u64, used in every lane): the
        operations Philox needs (a product by a constant, exclusive or)."""
        if op not in _VECTOR_OPS:
            raise ValueError(f"no vector {op!r}")
        if not (isinstance(a, Sym) and a.type == VECTOR):
            a, b = b, a
        return self.let(VECTOR, f"{_VECTOR_OPS[op]}({a.name}, {self.literal(b, 'u64')})")

    def where(self, c: Sym, a: Any, b: Any) -> Sym:
        type = a.type if isinstance(a, Sym) else b.type if isinstance(b, Sym) else (
            "f64" if isinstance(a, float) else "u64")
        return self.let(type, f"pick({c.name}, {self.literal(a, type)}, {self.literal(b, type)})")

    def u2f(self, a: Sym) -> Sym:
        return self.let("f64", f"u2f({a.name})")  # codegen/random.py's CONVERSIONS

    def i2f(self, a: Sym) -> Sym:
        return self.let("f64", f"i2f({a.name})")

    def bits(self, f: Sym) -> Sym:
        return self.let("u64", f"u64(__double_as_longlong({f.name}))")

    def double(self, u: Sym) -> Sym:
        return self.let("f64", f"__longlong_as_double(i64({u.name}))")

    def sqrt(self, f: Sym) -> Sym:
        return self.let("f64", f"__dsqrt_rn({f.name})")


# -- the algorithms (one source) -------------------------------------------------------------------
def philox_rounds(ops: Any, counter: Sequence[Any], key: Sequence[Any]) -> Iterator[list[Any]]:
    """Philox4x64-10 of a 256-bit counter (four words, least significant first) and a 128-bit key
    (Random123's philox4x64_R, as numpy's philox.h): the state after each round. Round by round
    so that the CPU's C can interleave independent blocks (`codegen/random.py`)."""
    c = list(counter)
    k0, k1 = key
    for r in range(ROUNDS):
        if r:
            k0, k1 = k0 + PHILOX_W[0], k1 + PHILOX_W[1]
        hi0, lo0 = ops.mulhi(c[0], PHILOX_M[0]), c[0] * PHILOX_M[0]
        hi1, lo1 = ops.mulhi(c[2], PHILOX_M[1]), c[2] * PHILOX_M[1]
        c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0]
        yield c


def philox(ops: Any, counter: Sequence[Any], key: Sequence[Any]) -> list[Any]:
    """Philox4x64-10 of a 256-bit counter and a 128-bit key (`philox_rounds`' last state)."""
    *_, last = philox_rounds(ops, counter, key)
    return last


TWO_53 = 2.0 ** -53
LN2_HI, LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10
LG = (6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
      2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
      1.479819860511658591e-01)  # fdlibm's e_log.c, Lg1..Lg7
SIN = (-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
       2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10)
COS = (4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
       -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11)
TWO_PI = 6.283185307179586


def log(ops: Any, x: Any) -> Any:
    """The natural log of a positive normal double: fdlibm's e_log.c without its special cases
    (x = 2**k (1 + f), 1 + f in [sqrt(2)/2, sqrt(2)), log(1 + f) from s = f / (2 + f))."""
    b = ops.bits(x)
    mantissa = b & ((1 << 52) - 1)
    big = mantissa > 0x6A09E667F3BCC  # 1 + f above sqrt(2): halve it
    m = ops.double(mantissa | ops.where(big, 1022 << 52, 1023 << 52))
    k = ops.u2f((b >> 52) + ops.where(big, 1, 0)) - 1023.0
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (LG[1] + w * (LG[3] + w * LG[5]))
    t2 = z * (LG[0] + w * (LG[2] + w * (LG[4] + w * LG[6])))
    hfsq = 0.5 * f * f
    return k * LN2_HI - ((hfsq - (s * (hfsq + (t2 + t1)) + k * LN2_LO)) - f)


def cos_two_pi(ops: Any, m: Any) -> Any:
    """cos(2 pi m / 2**53) for an integer m below 2**53: the quadrant and the remainder exactly in
    integers, then fdlibm's k_sin.c / k_cos.c polynomials on [-pi/4, pi/4]."""
    q = (m + (1 << 50)) >> 51  # the nearest quarter turn, 0..4
    x = ops.i2f(m - (q << 51)) * TWO_53 * TWO_PI
    z = x * x
    sine = x + z * x * (SIN[0] + z * (SIN[1] + z * (SIN[2] + z * (SIN[3] + z * (
        SIN[4] + z * SIN[5])))))
    r = z * (COS[0] + z * (COS[1] + z * (COS[2] + z * (COS[3] + z * (COS[4] + z * COS[5])))))
    ax = ops.bits(x) & ((1 << 63) - 1)
    # fdlibm's qx: 1 - z/2 split so that the large part is exact (|x| >= 0.3)
    qx = ops.where(ax > 0x3FE9000000000000, 0.28125,
                   ops.double((ax - 0x0020000000000000) & 0xFFFFFFFF00000000))
    qx = ops.where(ax < 0x3FD3333333333333, 0.0, qx)
    cosine = (1.0 - qx) - ((0.5 * z - qx) - z * r)
    quadrant = q & 3
    return ops.where(quadrant == 0, cosine, ops.where(quadrant == 1, -sine, ops.where(
        quadrant == 2, -cosine, sine)))


def unit(ops: Any, w: Any) -> Any:
    """[0, 1) from a word's top 53 bits (numpy's next_double)."""
    return ops.u2f(w >> 11) * TWO_53


Word = Callable[[Any], Any]


def _raw(ops: Any, word: Word, i: Any, p: Sequence[Any]) -> Any:
    return word(i)


def _random(ops: Any, word: Word, i: Any, p: Sequence[Any]) -> Any:
    return unit(ops, word(i))


def _random32(ops: Any, word: Word, i: Any, p: Sequence[Any]) -> Any:
    # numpy's next_uint32 takes the low half of a word, then its high half; next_float its top
    # 24 bits: exact in float64, and the float32 result is exact too
    w = word(i >> 1)
    half = ops.where((i & 1) == 1, w >> 32, w & M32)
    return ops.u2f(half >> 8) * 2.0 ** -24


def _uniform(ops: Any, word: Word, i: Any, p: Sequence[Any]) -> Any:
    # numpy's random_uniform: low + (high - low) * next_double
    return ops.double(p[0]) + ops.double(p[1]) * unit(ops, word(i))


def _integers(ops: Any, word: Word, i: Any, p: Sequence[Any]) -> Any:
    """low + floor(W * range / 2**128) for the 128-bit W of two words (range 0 meaning 2**64):
    the top 64 bits of a 192-bit product, bias below range / 2**128."""
    high, low = word(i << 1), word((i << 1) + 1)
    r = p[1]
    product = high * r
    total = product + ops.mulhi(low, r)
    value = ops.mulhi(high, r) + ops.where(total < product, 1, 0)
    return p[0] + ops.where(r == 0, high, value)


def _normal(ops: Any, word: Word, i: Any, p: Sequence[Any]) -> Any:
    """Box-Muller on two words: sqrt(-2 log u1) cos(2 pi u2), u1 in (0, 1]; loc + scale z."""
    u1 = ops.u2f((word(i << 1) >> 11) + 1) * TWO_53
    z = ops.sqrt(-2.0 * log(ops, u1)) * cos_two_pi(ops, word((i << 1) + 1) >> 11)
    return ops.double(p[0]) + ops.double(p[1]) * z


def _exponential(ops: Any, word: Word, i: Any, p: Sequence[Any]) -> Any:
    """-scale log(1 - u), 1 - u in (0, 1] (exact)."""
    return ops.double(p[1]) * -log(ops, 1.0 - unit(ops, word(i)))


@dataclass(frozen=True)
class Kind:
    """A transform: its C name, `read(ops, word, i, params)` (element i's value, reading words at
    fixed positions: `per` words for each `shared` elements), its value's type ('u64': cast to
    the output's integer dtype, 'f64': rounded to the output's float dtype) and its dtypes."""

    name: str
    read: Callable[[Any, Word, Any, Sequence[Any]], Any]
    per: int
    shared: int
    value: str
    dtypes: tuple[dt.DType, ...]

    def words(self, n: int) -> int:
        """The words n elements consume."""
        return -(-n * self.per // self.shared)

    def first(self, i: int) -> int:
        """The first word element i reads."""
        return i * self.per // self.shared


_INTS = (dt.int8, dt.int16, dt.int32, dt.int64, dt.uint8, dt.uint16, dt.uint32, dt.uint64)
_FLOATS = (dt.float32, dt.float64)
KINDS = {k.name: k for k in (
    Kind("raw", _raw, 1, 1, "u64", (dt.uint64,)),
    Kind("random", _random, 1, 1, "f64", (dt.float64,)),
    Kind("random32", _random32, 1, 2, "f64", (dt.float32,)),
    Kind("uniform", _uniform, 1, 1, "f64", _FLOATS),
    Kind("integers", _integers, 2, 1, "u64", _INTS),
    Kind("normal", _normal, 2, 1, "f64", _FLOATS),
    Kind("exponential", _exponential, 1, 1, "f64", _FLOATS),
)}


# -- numpy ----------------------------------------------------------------------------------------
def words(key: Sequence[int], position: int, count: int) -> np.ndarray:
    """`count` words of the stream of `key` from word `position` (4 x counter + lane)."""
    if count == 0:
        return np.zeros(0, np.uint64)
    first, last = position >> 2, (position + count - 1) >> 2
    block = np.arange(last - first + 1, dtype=np.uint64)
    counter = []
    carry = block
    start = first & ((1 << 256) - 1)
    for d in range(4):  # counter + block in 256-bit arithmetic: each limb carries into the next
        limb = np.uint64((start >> (64 * d)) & MASK64)
        value = limb + carry
        carry = (value < limb).astype(np.uint64)
        counter.append(value)
    # the key as arrays: numpy wraps array sums silently (it warns for scalars)
    out = philox(NumpyOps, counter, [np.full(1, k, np.uint64) for k in key])
    lanes = np.stack(out, axis=1).reshape(-1)
    lane = position & 3
    return lanes[lane:lane + count]


def evaluate(kind: Kind, dtype: np.dtype, key: Sequence[int], position: int, begin: int,
             end: int, params: Sequence[int]) -> np.ndarray:
    """Elements [begin, end) of a call of `kind` from word `position`, in `dtype`."""
    if begin >= end:
        return np.zeros(0, dtype)
    first = kind.first(begin)
    stream = words(key, position + first, kind.words(end) - first)
    offset = np.uint64(first)

    def word(j: Any) -> Any:
        return stream[(j - offset).astype(np.intp)]

    i = np.arange(begin, end, dtype=np.uint64)
    value = kind.read(NumpyOps, word, i, [np.uint64(p & MASK64) for p in params])
    return np.asarray(value).astype(dtype)


def arguments(key: Sequence[int], position: int, params: Sequence[int]) -> list[int]:
    """The nine words a kernel reads: the key, the counter's four limbs, the lane, the
    params."""
    counter = (position >> 2) & ((1 << 256) - 1)
    return [*key, *((counter >> (64 * d)) & MASK64 for d in range(4)), position & 3,
            *(p & MASK64 for p in params)]


