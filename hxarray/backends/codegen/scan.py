"""Scan kernels (`kernels/scan.cuh`): cumulative_sum and cumulative_prod (`hxarray._ops.SCANS`)
along one axis, with the functor and instantiations (input dtype, accumulator dtype) of the
reduction each folds with (`Scan.folds`: Sum, Prod); the first use of either kernel of an
operation compiles it for every input dtype with its default accumulator.

A `Launch` runs one thread per row (numpy's exact sequence of operations: short rows, or enough
rows to fill the device), blocks scanning tiles of a row (rows inner in memory), or threads
scanning parts of rows (rows outer), a long row split into parts whose totals a first pass (the
reduce kernel) computes (the CUDA backend's `launch.scan_plan` picks it for a device); `pack`
fills the kernel's `ScanLayout`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ... import _dtypes as dt
from ..._ops import SCANS, Scan
from . import OPTIONS, PREAMBLE
from . import reduction as rd
from .elementwise import SHAPE, pack_shape

SOURCE = PREAMBLE + '#include "scan.cuh"\n'
MAX_BLOCK = 256  # HX_SCAN_BLOCK: the most threads per block of scan_parts
SHORT_ROW = 64  # rows up to this long are scanned by one thread each
MAX_PARTS = 256  # a part's carry combines the earlier parts' totals one by one

LAYOUT = rd.c_struct([("rows", SHAPE), ("x_rows", rd.STRIDES), ("out_rows", rd.STRIDES),
                      ("length", "<i8"), ("x_step", "<i8"), ("out_step", "<i8"),
                      ("chunk", "<i8"), ("parts", "<i8"), ("totals", "<u8")])


def items(acc: dt.DType) -> int:
    """Consecutive elements per thread of scan_parts accumulating in `acc` (scan.cuh's
    scan_items): 16, fewer for wide values (a tile stages at most 16 KiB)."""
    return 16 if acc.itemsize <= 4 else 64 // acc.itemsize


def kernel_name(op: Scan, x: dt.DType, acc: dt.DType, sequential: bool) -> str:
    """scan_rows (`sequential`: a thread per row or part) or scan_parts (a block per part)."""
    kernel = "scan_rows" if sequential else "scan_parts"
    return f"hx::{kernel}<{rd.functor(op.folds, x, acc)}>"


def batch(op: Scan, x: dt.DType, acc: dt.DType, sequential: bool) -> list[str]:
    """What to compile with a kernel of (x, acc): that kernel of every default instantiation of
    `op` if (x, acc) is one (booleans, which the namespace refuses, left out). Each kernel
    compiles on first use: small arrays, as in most calls, never need scan_parts."""
    defaults = [pair for pair in rd.accumulators(op.folds) if pair[0] is not dt.bool]
    return [kernel_name(op, *pair, sequential)
            for pair in (defaults if (x, acc) in defaults else [(x, acc)])]


def all_sources() -> Iterator[tuple[str, str, Sequence[str], Sequence[str]]]:
    """Each operation's default instantiations and one with a cast on load, for NVRTC."""
    for op, extra in ((SCANS["cumulative_sum"], (dt.int8, dt.float32)),
                      (SCANS["cumulative_prod"], (dt.float32, dt.complex128))):
        names = [k for sequential in (True, False) for k in (
            *batch(op, dt.float64, dt.float64, sequential),
            kernel_name(op, *extra, sequential))]
        yield f"scan/{op.name}.cu", SOURCE, OPTIONS, names


@dataclass(frozen=True)
class Launch:
    """A scan launch: `sequential` (scan_rows: a thread per part of a row) or not (scan_parts:
    a block per part), rows split into `parts` of `chunk` elements, blocks of `block` threads,
    a grid of `grid` blocks."""

    sequential: bool
    parts: int
    chunk: int
    block: int
    grid: int


def pack(rows: tuple[int, ...], x_rows: tuple[int, ...], out_rows: tuple[int, ...], length: int,
         x_step: int, out_step: int, launch: Launch, totals: int = 0) -> np.void:
    """The kernel's ScanLayout; `totals` is the address of the parts' totals."""
    record = np.zeros((), LAYOUT)
    record["rows"] = pack_shape(rows, False)
    record["x_rows"][:len(x_rows)] = x_rows
    record["out_rows"][:len(out_rows)] = out_rows
    record["length"] = length
    record["x_step"] = x_step
    record["out_step"] = out_step
    record["chunk"] = launch.chunk
    record["parts"] = launch.parts
    record["totals"] = totals
    return record[()]
