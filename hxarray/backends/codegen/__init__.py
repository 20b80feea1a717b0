"""CUDA C generation, shared by the backends: kernel templates (`kernels/*.cuh`) instantiated per
operation and dtypes, and the host compiler that builds CUDA C for the CPU (`compiler`).

Each kernel family (element-wise, reduction, scan, GEMM, indexing, random) is a template in
`kernels/`; a family's generator names the instantiation a call needs and the source that holds
it. The CUDA backend compiles those sources for a device (`backends/cuda/library.py`: through
NVRTC or the simulator); the CPU backend compiles the host loops the same operation sources make
(`fused.host_source`, `random.host_source`) with `compiler.HostCompiler`. `make cuda-check`
compiles every source a generator can produce with NVRTC (`all_sources`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ... import _dtypes as dt

__all__ = ["C_TYPES", "KERNEL_DIR", "OPTIONS", "PREAMBLE", "all_sources"]

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
# No contraction of a * b + c into one fused multiply-add: each operation rounds on its own, as
# numpy's loops, the CPU backend and the simulator compute, so every device gives the same bits
# (element-wise kernels are bound by memory; a GPU's floating-point products go to cuBLAS).
OPTIONS = (f"-I{KERNEL_DIR}", "--fmad=false")

# The C++ type of each dtype (hxarray.cuh's typedefs).
C_TYPES: dict[dt.DType, str] = {
    dt.bool: "bool", dt.int8: "hx::i8", dt.int16: "hx::i16", dt.int32: "hx::i32",
    dt.int64: "hx::i64", dt.uint8: "hx::u8", dt.uint16: "hx::u16", dt.uint32: "hx::u32",
    dt.uint64: "hx::u64", dt.float16: "hx::f16", dt.float32: "hx::f32", dt.float64: "hx::f64",
    dt.complex64: "hx::c64", dt.complex128: "hx::c128",
}


def _headers_digest() -> str:
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(KERNEL_DIR.glob("*.cuh")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


# The first line of every generated source: compiled binaries are cached by source text, so the
# headers' contents must be part of it.
PREAMBLE = f"// hxarray CUDA kernels, headers {_headers_digest()}\n"


def all_sources() -> Iterator[tuple[str, str, Sequence[str], Sequence[str]]]:
    """(name, source, options, name expressions) of every kernel the generators can produce, for
    `make cuda-check`."""
    from . import elementwise, fused, gemm, indexing, random, reduction, scan

    yield from elementwise.all_sources()
    yield from fused.all_sources()
    yield from reduction.all_sources()
    yield from scan.all_sources()
    yield from gemm.all_sources()
    yield from indexing.all_sources()
    yield from random.all_sources()


def struct(fields: Sequence[tuple[str, Any, int]], itemsize: int) -> Any:
    """A numpy structured dtype laid out as a C struct: (name, format, byte offset) fields."""
    import numpy as np

    return np.dtype({"names": [f[0] for f in fields], "formats": [f[1] for f in fields],
                     "offsets": [f[2] for f in fields], "itemsize": itemsize})


_MEMO_SIZE = 8  # records a memoising splicer keeps (all forgotten at once when full)


def splicer(template: Any, field: str, encode: Callable[[Any], bytes],
            memo: bool = False) -> Callable[[Any], Any]:
    """Records like `template` (a numpy structured scalar) but for `field`, whose leading bytes
    are `encode(value)`: the other bytes are taken from the template once, so that each record
    costs one join of bytes. With `memo` (for values that encode alike exactly when they are
    equal, such as addresses), the last records made are kept by value and handed out again:
    records are read-only, and a caching allocator gives the same addresses again and again."""
    import numpy as np

    dtype = template.dtype
    raw = template.tobytes()
    offset = dtype.fields[field][1]
    head = raw[:offset]
    frombuffer = np.frombuffer

    def pack(value: Any) -> Any:
        data = encode(value)
        return frombuffer(head + data + raw[offset + len(data):], dtype)[0]

    if not memo:
        return pack
    made: dict[Any, Any] = {}

    def recall(value: Any) -> Any:
        record = made.get(value)
        if record is None:
            if len(made) >= _MEMO_SIZE:
                made.clear()
            record = made[value] = pack(value)
        return record

    return recall
