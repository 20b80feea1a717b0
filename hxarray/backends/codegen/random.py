"""Random-number kernels (`kernels/random.cuh`): the C of `backends/philox.py`'s Philox block
and transforms (written by its `COps`), as one CUDA kernel per transform and dtype, and as the
CPU's compiled loop."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence

from ... import _dtypes as dt
from ..philox import KINDS, COps, Kind, philox
from . import C_TYPES, OPTIONS, PREAMBLE

__all__ = ["RUN", "all_sources", "cuda_source", "host_source", "kernel_name"]

RUN = 4  # HX_RNG_RUN: consecutive elements a CUDA thread fills per step

SOURCE_HEAD = PREAMBLE + '#include "hxarray.cuh"\n'


def _philox_c() -> str:
    ops = COps()
    out = philox(ops, [ops.value(f"c{d}", "u64") for d in range(4)],
                 [ops.value("k0", "u64"), ops.value("k1", "u64")])
    body = "\n    ".join(ops.lines)
    stores = " ".join(f"out[{d}] = {v.name};" for d, v in enumerate(out))
    return (f"__device__ __forceinline__ void philox(u64 c0, u64 c1, u64 c2, u64 c3, u64 k0, "
            f"u64 k1, u64* out) {{\n    {body}\n    {stores}\n}}\n")


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
    return (f"{SOURCE_HEAD}namespace hx {{\nnamespace rng {{\n{_philox_c()}"
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
    """C++ for the CPU: `hx_random(out, begin, end, k0, k1, c0, c1, c2, c3, lane, p0, p1)` fills
    elements [begin, end)."""
    return (f"{_generated(kind, dtype)}extern \"C\" void hx_random(void* out, long long begin, "
            f"long long end, const hx::u64* args) {{\n"
            f"    hx::rng::fill_range<hx::rng::{struct_name(kind, dtype)}>(out, begin, end, "
            f"args);\n}}\n")


def all_sources() -> Iterator[tuple[str, str, Sequence[str], Sequence[str]]]:
    """Every kind's kernel in each of its dtypes, for NVRTC."""
    for kind in KINDS.values():
        for dtype in kind.dtypes:
            yield (f"random/{struct_name(kind, dtype)}.cu", cuda_source(kind, dtype), OPTIONS,
                   [kernel_name(kind, dtype)])
