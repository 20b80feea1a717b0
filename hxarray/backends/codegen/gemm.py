"""Matrix products (`kernels/gemm.cuh`): one tiled kernel instantiated per dtype, every dtype in
one source compiled at once (a program that multiplies matrices of one dtype usually multiplies
others). Layouts stay run-time values: the host collapses the batch axes and passes every
operand's byte strides, so transposed, strided and broadcast operands need no copies.

On a GPU, float32/float64/complex64/complex128 products go to cuBLAS through CuPy instead
(`CUBLAS`); this kernel runs the rest, and everything on the simulator.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from ... import _dtypes as dt
from . import C_TYPES, OPTIONS, PREAMBLE, struct
from . import elementwise as ew

SOURCE = PREAMBLE + '#include "gemm.cuh"\n'
TILE_M = TILE_N = 64  # HX_GEMM_BM, HX_GEMM_BN
THREADS = 256  # HX_GEMM_THREADS
MAX_GRID_YZ = 65535  # the kernel loops over tiles and batches beyond the grid
CUBLAS = frozenset({dt.float32, dt.float64, dt.complex64, dt.complex128})

_STRIDES = ("<i8", (ew.MAX_DIMS,))
LAYOUT = struct([("batch", ew.SHAPE, 0), ("a_batch", _STRIDES, 80), ("b_batch", _STRIDES, 144),
                 ("out_batch", _STRIDES, 208), ("m", "<i8", 272), ("n", "<i8", 280),
                 ("k", "<i8", 288), ("a_row", "<i8", 296), ("a_col", "<i8", 304),
                 ("b_row", "<i8", 312), ("b_col", "<i8", 320), ("out_row", "<i8", 328),
                 ("out_col", "<i8", 336)], 344)


def kernel_name(dtype: dt.DType) -> str:
    """The instantiation; float16's sums its products in float (`_dtypes.COMPUTES_IN`)."""
    wide = dt.COMPUTES_IN.get(dtype)
    return f"hx::gemm<{C_TYPES[dtype]}{'' if wide is None else ', ' + C_TYPES[wide]}>"


def batch() -> list[str]:
    """Every instantiation: compiled together at the first product."""
    return [kernel_name(d) for d in dt.ALL_DTYPES]


def all_sources() -> Iterator[tuple[str, str, Sequence[str], Sequence[str]]]:
    yield "gemm.cu", SOURCE, OPTIONS, batch()


def pack_layout(batch_dims: tuple[int, ...], batch_steps: Sequence[tuple[int, ...]],
                m: int, n: int, k: int, a: tuple[int, int], b: tuple[int, int],
                out: tuple[int, int]) -> np.void:
    """The GemmLayout struct: batch axes with each operand's strides (a, b, out), the sizes and
    each operand's (row, column) byte strides."""
    record = np.zeros((), LAYOUT)
    record["batch"] = ew.pack_shape(batch_dims, False)
    for name, steps in zip(("a_batch", "b_batch", "out_batch"), batch_steps):
        record[name][:len(steps)] = steps
    record["m"], record["n"], record["k"] = m, n, k
    record["a_row"], record["a_col"] = a
    record["b_row"], record["b_col"] = b
    record["out_row"], record["out_col"] = out
    return record[()]


def grid(m: int, n: int, batches: int, max_x: int) -> tuple[int, int, int]:
    """Blocks: one per 64x64 output tile and product, capped at the grid's limits."""
    return (max(1, min(-(-n // TILE_N), max_x)), max(1, min(-(-m // TILE_M), MAX_GRID_YZ)),
            max(1, min(batches, MAX_GRID_YZ)))
