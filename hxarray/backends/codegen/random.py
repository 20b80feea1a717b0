"""Random-number kernels (`kernels/random.cuh`): the C of `backends/philox.py`'s Philox block
and transforms (written by its `COps`), as one CUDA kernel per transform and dtype, and as the
CPU's compiled loop."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence

from ... import _dtypes as dt
from ..philox import KINDS, ROUNDS, VECTOR, COps, Kind, philox, philox_rounds
from . import C_TYPES, OPTIONS, PREAMBLE

__all__ = ["RUN", "all_sources", "cuda_source", "host_source", "kernel_name"]

RUN = 4  # HX_RNG_RUN: consecutive elements a CUDA thread fills per step

SOURCE_HEAD = PREAMBLE + '#include "hxarray.cuh"\n'


# The integer-to-double conversions of the transforms (`COps.u2f`, `COps.i2f`), exact for their
# operands (up to 2**53; magnitude below 2**51). On the CPU from the bits of a double with the
# integer in its mantissa: AVX2 has no vector conversion of 64-bit integers, and without one the
# compiler leaves the whole transform loop scalar. The same values as the plain conversions.
CONVERSIONS = """#ifdef HX_RNG_HOST
// (hi 2**32 + 2**84 - 2**84 - 2**52) + (lo + 2**52): both exact, one rounding (none up to 2**53)
static inline f64 u2f(u64 a) {
    return (__longlong_as_double(i64(0x4530000000000000ULL | (a >> 32)))
            - 19342813118337666422669312.0)
        + __longlong_as_double(i64(0x4330000000000000ULL | (a & 0xFFFFFFFFULL)));
}
// 1.5 2**52 + a in the mantissa's range (|a| < 2**51), minus 1.5 2**52
static inline f64 i2f(u64 a) {
    return __longlong_as_double(i64(0x4338000000000000ULL + a)) - 6755399441055744.0;
}
// c ? a : b as a mask of bits, so that no branch stops the compiler vectorising the transform
static inline u64 pick(bool c, u64 a, u64 b) {
    const u64 m = 0 - u64(c);
    return (a & m) | (b & ~m);
}
static inline f64 pick(bool c, f64 a, f64 b) {
    return __longlong_as_double(i64(pick(c, u64(__double_as_longlong(a)),
                                         u64(__double_as_longlong(b)))));
}
#else
__device__ __forceinline__ u64 pick(bool c, u64 a, u64 b) { return c ? a : b; }
__device__ __forceinline__ f64 pick(bool c, f64 a, f64 b) { return c ? a : b; }
__device__ __forceinline__ f64 u2f(u64 a) { return f64(a); }
__device__ __forceinline__ f64 i2f(u64 a) { return f64(i64(a)); }
#endif
"""


def _philox_c() -> str:
    ops = COps()
    out = philox(ops, [ops.value(f"c{d}", "u64") for d in range(4)],
                 [ops.value("k0", "u64"), ops.value("k1", "u64")])
    body = "\n    ".join(ops.lines)
    stores = " ".join(f"out[{d}] = {v.name};" for d, v in enumerate(out))
    return (f"__device__ __forceinline__ void philox(u64 c0, u64 c1, u64 c2, u64 c3, u64 k0, "
            f"u64 k1, u64* out) {{\n    {body}\n    {stores}\n}}\n")


SCALAR_BLOCKS = 3  # the scalar blocks of one `philox_mix` (3 and 1 measured best of 1..6 and 1..2)
VECTORS = 1  # its vectors of four blocks


def _philox_mix_c() -> str:
    """The CPU's `philox_mix(c, k0, k1, out)`: SCALAR_BLOCKS + 4 VECTORS independent blocks
    (counters c[4 b + d], words to out[4 b + d]), the scalar ones on the 128-bit product unit and
    the others in AVX2 lanes, their rounds interleaved so that both kinds of unit work at once."""
    ops = COps()
    key = [ops.value("k0", "u64"), ops.value("k1", "u64")]
    states = [philox_rounds(ops, [ops.value(f"c[{4 * b + d}]", "u64") for d in range(4)], key)
              for b in range(SCALAR_BLOCKS)]
    for v in range(VECTORS):
        first = SCALAR_BLOCKS + 4 * v
        states.append(philox_rounds(ops, [ops.let(VECTOR, "v4_set(" + ", ".join(
            f"c[{4 * (first + j) + d}]" for j in range(4)) + ")") for d in range(4)], key))
    for _ in range(ROUNDS):
        last = [next(state) for state in states]
    body = "\n    ".join(ops.lines)
    stores = [f"out[{4 * b + d}] = {w.name};" for b in range(SCALAR_BLOCKS)
              for d, w in enumerate(last[b])]
    stores += [f"v4_store_blocks(out + {4 * (SCALAR_BLOCKS + 4 * v)}, "
               + ", ".join(w.name for w in last[SCALAR_BLOCKS + v]) + ");"
               for v in range(VECTORS)]
    return (f"static inline void philox_mix(const u64* c, u64 k0, u64 k1, u64* out) {{\n"
            f"    {body}\n    {' '.join(stores)}\n}}\n")


def _element(kind: Kind, dtype: dt.DType) -> str:
    """The struct `hx::rng::<kind>_<dtype>`: `at(word, i, p0, p1)`, element i's value."""
    ops = COps()
    value = kind.read(ops, lambda j: ops.let("u64", f"word({j.name})"), ops.value("i", "u64"),
                      [ops.value("p0", "u64"), ops.value("p1", "u64")])
    body = "\n        ".join(ops.lines)
    t = C_TYPES[dtype]
    return (f"struct {struct_name(kind, dtype)} {{\n    typedef {t} T;\n"
            f"    static const u64 per = {kind.per}, shared = {kind.shared};  // words, elements\n"
            f"    template <typename W> __device__ static T at(W& word, u64 i, u64 p0, u64 p1) {{\n"
            f"        {body}\n        return T({value.name});\n    }}\n}};\n")


def struct_name(kind: Kind, dtype: dt.DType) -> str:
    return f"{kind.name}_{dtype.name}"


def _generated(kind: Kind, dtype: dt.DType) -> str:
    return (f"{SOURCE_HEAD}namespace hx {{\nnamespace rng {{\n{CONVERSIONS}{_philox_c()}"
            f"{_element(kind, dtype)}}}  // namespace rng\n}}  // namespace hx\n"
            '#include "random.cuh"\n')


@functools.cache
def cuda_source(kind: Kind, dtype: dt.DType) -> str:
    """The kernel `hx::rng::fill<hx::rng::<kind>_<dtype>>`."""
    return _generated(kind, dtype)


def kernel_name(kind: Kind, dtype: dt.DType) -> str:
    return f"hx::rng::fill<hx::rng::{struct_name(kind, dtype)}>"


@functools.cache
def host_source(kind: Kind, dtype: dt.DType) -> str:
    """C++ for the CPU: `hx_random(a)` fills elements [a[1], a[2]) of the output at address a[0]
    from a[3:12] (k0, k1, c0, c1, c2, c3, lane, p0, p1): one argument of packed bytes, which
    ctypes passes as it is (`fused.random_loop`)."""
    # HX_RNG_HOST: random.cuh's CPU loop (which NVRTC never sees)
    generated = (PREAMBLE + "#define HX_RNG_HOST 1\n"
                 f"#define HX_RNG_MIX {SCALAR_BLOCKS + 4 * VECTORS}\n"
                 f"{_generated(kind, dtype)[len(PREAMBLE):]}namespace hx {{\nnamespace rng {{\n"
                 f"{_philox_mix_c()}}}  // namespace rng\n}}  // namespace hx\n")
    return (f"{generated}extern \"C\" void hx_random(const long long* a) {{\n"
            f"    hx::rng::fill_range<hx::rng::{struct_name(kind, dtype)}>("
            f"reinterpret_cast<void*>(a[0]), a[1], a[2], reinterpret_cast<const hx::u64*>(a + 3));"
            f"\n}}\n")


def all_sources() -> Iterator[tuple[str, str, Sequence[str], Sequence[str]]]:
    """Every kind's kernel in each of its dtypes, for NVRTC."""
    for kind in KINDS.values():
        for dtype in kind.dtypes:
            yield (f"random/{struct_name(kind, dtype)}.cu", cuda_source(kind, dtype), OPTIONS,
                   [kernel_name(kind, dtype)])
