"""Reduction kernels (`kernels/reduction.cuh`): sum, prod, max, min, all, any, argmax, argmin and
squared_deviations (var's numerator, in one pass), instantiated by (operation, input dtype,
accumulator dtype). An operation is its object from `hxarray._ops` (`REDUCTIONS`,
`ARG_REDUCTIONS`; squared_deviations is this backend's own, below): its functor (`cuda`), the
input dtypes it takes (`inputs`) and its default accumulator (`accumulator`) come from it. The
first call of an operation compiles its instantiations for every input dtype with the default
accumulator at once; other accumulators (an explicit `dtype=`) compile one by one. The second
pass of a split row runs the same instantiation on the partial values, so it costs no
compilation.

On the host: `split` moves the reduced axes last and collapses the kept axes (with out's
strides) and the reduced axes (a row) separately; a `Launch` says the threads per output and
whether rows are split into parts (two passes; the CUDA backend's `launch.reduction_plan` picks
it for a device); `pack` fills the kernel's `ReduceLayout`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ... import _dtypes as dt
from ..._ops import ARG_REDUCTIONS, REDUCTIONS, ArgReduction, computes_in
from . import C_TYPES, OPTIONS, PREAMBLE, struct
from .elementwise import MAX_DIMS, SHAPE, collapse, pack_shape

SOURCE = PREAMBLE + '#include "reduction.cuh"\n'
INDEXED_SIZE = 16  # sizeof(hx::Indexed<T>): an element of at most 8 bytes, then an int64 index

BLOCK = 256  # threads per block at most (HX_REDUCE_BLOCK; fewer for tiny launches)
PER_THREAD = 16  # row elements a thread reads before one more thread is worth its start-up
SERIAL = 64  # row elements a thread folds before a second pass is worth its launch
MAX_PARTS = 1024  # parts per row: bounds the temporary and the second pass
MAX_CHUNK = 2**31 - 1  # row elements per task: the kernel counts them in 32 bits

STRIDES = np.dtype(("<i8", (MAX_DIMS,)))


def c_struct(fields: Sequence[tuple[str, Any]]) -> np.dtype:
    """A numpy structured dtype laid out as the C struct with these (name, format) members in
    order (each aligned to its size, up to 8 bytes; the end padded to 8)."""
    offset, placed = 0, []
    for name, fmt in fields:
        fmt = np.dtype(fmt)
        align = min(8, fmt.base.itemsize if fmt.subdtype else fmt.itemsize or 8)
        offset = -(-offset // align) * align
        placed.append((name, fmt, offset))
        offset += fmt.itemsize
    return struct(placed, -(-offset // 8) * 8)


LAYOUT = c_struct([("kept", SHAPE), ("x_kept", STRIDES), ("out_kept", STRIDES), ("row", SHAPE),
                   ("x_row", STRIDES), ("chunk", "<i8"), ("parts", "<i8"),
                   ("part_stride", "<i8"), ("group", "<i4"), ("from_partials", "<i4"),
                   ("to_partials", "<i4"), ("initial", "<i4")])


# -- instantiations --------------------------------------------------------------------------------
class Folding(Protocol):
    """What the kernels need of an operation: `hxarray._ops.Reduction` and `ArgReduction` are
    such, and so is SQUARED_DEVIATIONS."""

    name: str
    cuda: str
    inputs: tuple[dt.DType, ...]

    def accumulator(self, x: dt.DType) -> dt.DType: ...


@dataclass(frozen=True, eq=False)
class Deviations:
    """var's numerator in one pass (`Backend.squared_deviations`, this backend's own reduction:
    Welford's update), of real floating-point values in their dtype."""

    name: str = "squared_deviations"
    cuda: str = "Deviations"
    inputs: tuple[dt.DType, ...] = dt.REAL_FLOATING

    def accumulator(self, x: dt.DType) -> dt.DType:
        return x


SQUARED_DEVIATIONS = Deviations()
FOLDINGS: tuple[Folding, ...] = (*REDUCTIONS.values(), *ARG_REDUCTIONS.values(),
                                 SQUARED_DEVIATIONS)


def accumulators(op: Folding) -> list[tuple[dt.DType, dt.DType]]:
    """(input, accumulator) pairs of `op`: each input dtype it takes with the operation's default
    accumulator (`op.accumulator`: for sum and prod, `dt.ACCUMULATOR`'s)."""
    return [(d, op.accumulator(d)) for d in op.inputs]


def functor(op: Folding, x: dt.DType, acc: dt.DType) -> str:
    """The functor; a float16 accumulator (or argmax's float16 input) carries a float value
    (`_dtypes.COMPUTES_IN`: numpy's loops accumulate so), rounded once into the result."""
    carried = x if isinstance(op, ArgReduction) else acc
    wide = computes_in(op, carried)
    value = "" if wide is carried else f", {C_TYPES[wide]}"
    if isinstance(op, ArgReduction):
        return f"hx::red::{op.cuda}<{C_TYPES[x]}{value}>"
    return f"hx::red::{op.cuda}<{C_TYPES[x]}, {C_TYPES[acc]}{value}>"


def kernel_name(op: Folding, x: dt.DType, acc: dt.DType) -> str:
    return f"hx::reduce<{functor(op, x, acc)}>"


def batch(op: Folding, x: dt.DType, acc: dt.DType) -> list[str]:
    """What to compile with the kernel of (x, acc): every default instantiation of `op` if
    (x, acc) is one."""
    defaults = accumulators(op)
    return [kernel_name(op, *pair) for pair in (defaults if (x, acc) in defaults else [(x, acc)])]


def value_size(op: Folding, acc: dt.DType) -> int:
    """Bytes of the kernel's Op::Value: a partial result in the temporary of a split row."""
    carried = computes_in(op, acc).itemsize  # (float16's value is a float, but for max, min)
    if op is SQUARED_DEVIATIONS:
        return -(-3 * carried // 8) * 8 + 8  # sizeof(hx::Moments<T>): the count aligned
    return INDEXED_SIZE if isinstance(op, ArgReduction) else carried


def all_sources() -> Iterator[tuple[str, str, Sequence[str], Sequence[str]]]:
    """Each operation's default instantiations, plus accumulators the defaults never use (a
    cast on load between every kind), for NVRTC."""
    extra: dict[Folding, list[tuple[dt.DType, dt.DType]]] = {
        REDUCTIONS["sum"]: [(dt.int8, dt.float64), (dt.float32, dt.complex128),
                            (dt.uint8, dt.int16)],
        REDUCTIONS["prod"]: [(dt.int32, dt.float32), (dt.int64, dt.complex64),
                             (dt.float64, dt.float32)]}
    for op in FOLDINGS:
        names = [kernel_name(op, x, acc) for x, acc in accumulators(op) + extra.get(op, [])]
        yield f"reduction/{op.name}.cu", SOURCE, OPTIONS, names


# -- layouts ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Split:
    """A reduction's iteration: `base` bytes added to x's offset (axes walked backwards where x
    steps backwards), the kept axes (x's and out's byte strides) and the row's axes."""

    base: int
    kept: tuple[int, ...]
    x_kept: tuple[int, ...]
    out_kept: tuple[int, ...]
    row: tuple[int, ...]
    x_row: tuple[int, ...]

    @property
    def outputs(self) -> int:
        return math.prod(self.kept)

    @property
    def length(self) -> int:
        return math.prod(self.row)

    @property
    def fits(self) -> bool:
        """Whether the kernel's layout holds the kept axes and the row's axes."""
        return len(self.kept) <= MAX_DIMS and len(self.row) <= MAX_DIMS

    @property
    def row_inner(self) -> bool:
        """Whether a row's elements lie closer together in memory than neighbouring outputs'
        (then the threads of a group read neighbouring elements)."""
        if not self.x_kept:
            return True
        return bool(self.x_row) and abs(self.x_row[-1]) <= min(abs(s) for s in self.x_kept)


def split(shape: tuple[int, ...], strides: tuple[int, ...], axes: tuple[int, ...],
          out_strides: tuple[int, ...], in_order: bool) -> Split:
    """The iteration of a reduction of (shape, strides) over `axes` into an array with
    `out_strides` (over the kept axes); the kernel takes it if `fits`. Unless `in_order`
    (argmax/argmin: row element r is the C-order index r), the reduced axes are walked forwards
    in memory, widest stride first, so that they merge."""
    kept = [i for i in range(len(shape)) if i not in axes]
    base = 0
    reduced = [(shape[a], strides[a]) for a in axes]
    if not in_order:
        forwards = []
        for n, s in reduced:
            if s < 0 and n > 1:
                base += (n - 1) * s
                s = -s
            forwards.append((n, s))
        reduced = sorted(forwards, key=lambda pair: -pair[1])
    kept_dims, (x_kept, out_kept) = collapse(tuple(shape[i] for i in kept),
                                             [tuple(strides[i] for i in kept), out_strides])
    row_dims, (x_row,) = collapse(tuple(n for n, _ in reduced), [tuple(s for _, s in reduced)])
    return Split(base, kept_dims, x_kept, out_kept, row_dims, x_row)


def contiguous(dims: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """C-contiguous byte strides of `dims`."""
    strides, step = [], itemsize
    for n in reversed(dims):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


# -- launches (planned for a device by cuda/launch.py) ---------------------------------------------
@dataclass(frozen=True)
class Launch:
    """A reduction launch: `group` threads per task, rows split into `parts` of `chunk`
    elements (one task each), blocks of `block` threads, a grid of `grid` blocks."""

    group: int
    parts: int
    chunk: int
    block: int
    grid: int


def pack(split: Split, launch: Launch, *, out_kept: tuple[int, ...] | None = None,
         part_stride: int = 0, from_partials: bool = False, to_partials: bool = False,
         initial: bool = True, positive_zero: bool = False) -> np.void:
    """The kernel's ReduceLayout (`out_kept` replaces split's, for a temporary); `initial`:
    start from the identity (a reduction's first pass; not a scan's part totals), a sum's from
    +0 where `positive_zero`."""
    record = np.zeros((), LAYOUT)
    record["kept"] = pack_shape(split.kept, False)
    record["x_kept"][:len(split.x_kept)] = split.x_kept
    out = split.out_kept if out_kept is None else out_kept
    record["out_kept"][:len(out)] = out
    record["row"] = pack_shape(split.row, False)
    record["x_row"][:len(split.x_row)] = split.x_row
    record["chunk"] = launch.chunk
    record["parts"] = launch.parts
    record["part_stride"] = part_stride
    record["group"] = launch.group
    record["from_partials"] = int(from_partials)
    record["to_partials"] = int(to_partials)
    record["initial"] = (1 + positive_zero) if initial and not from_partials else 0
    return record[()]
