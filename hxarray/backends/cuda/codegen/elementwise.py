"""Element-wise kernels (`kernels/elementwise.cuh`): one source per operation of `hxarray/_ops.py`,
its C expression wrapped in a functor; instantiations by result, compute and operand dtypes and
index width. The first call of an operation compiles every same-dtype instantiation it has at once
(the common case); mixed operand dtypes compile one by one.

Layouts: the host drops size-1 axes and merges axes that every array steps through contiguously,
so most launches see one axis, and marks launches where every array is C-contiguous (the kernel
then indexes by element number) and, of those, launches where every array starts on a 16-byte
boundary (the kernel then moves 128-bit packs: `layout_kind`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .... import _dtypes as dt
from ...._ops import OPS
from . import C_TYPES, OPTIONS, PREAMBLE, struct

MAX_DIMS = 8  # HX_MAX_DIMS in hxarray.cuh
SHAPE = struct([("size", "<i8", 0), ("ndim", "<i4", 8), ("contiguous", "<i4", 12),
                ("extent", ("<i8", (MAX_DIMS,)), 16)], 80)
OPERAND = struct([("data", "<u8", 0), ("strides", ("<i8", (MAX_DIMS,)), 8),
                  ("scalar", ("u1", (16,)), 72)], 88)
OUTPUT = struct([("data", "<u8", 0), ("strides", ("<i8", (MAX_DIMS,)), 8)], 72)
INDEX_TYPES = ("hx::i32", "hx::i64")
STRIDED, CONTIGUOUS, ALIGNED = 0, 1, 2  # Shape::contiguous: HX_STRIDED, ... in elementwise.cuh
VECTOR_BYTES = 16  # HX_VECTOR_BYTES: the widest type moves in accesses of this many bytes
COPY = "copy"  # the functor of `assign`: the operand itself


def functor(name: str) -> str:
    return f"hx::ops::k_{name}"


def source(name: str) -> str:
    """The source holding operation `name`'s kernels (`copy` for assignments, `where`)."""
    if name == "where":
        return PREAMBLE + '#include "elementwise.cuh"\n'
    if name == COPY:
        arity, expression = 1, "a"
    else:
        op = OPS[name]
        arity, expression = op.arity, op.cuda
    params = ", ".join(f"T {v}" for v in "ab"[:arity])
    return (PREAMBLE + '#include "elementwise.cuh"\n'
            f"namespace hx {{ namespace ops {{ struct k_{name} {{\n"
            f"    template <typename T> __device__ static auto apply({params}) "
            f"{{ return {expression}; }}\n}}; }} }}\n")


def kernel_name(name: str, out: dt.DType, compute: dt.DType, operands: Sequence[dt.DType],
                index: str) -> str:
    types = ", ".join(C_TYPES[d] for d in (out, compute, *operands))
    if name == "where":
        return f"hx::select<{types}, {index}>"
    return f"hx::map{len(operands)}<{functor(name)}, {types}, {index}>"


def same_dtype_batch(name: str, compute: dt.DType) -> list[str]:
    """The instantiations compiled together on first use (32-bit indexing): every one of `name`
    whose operands have their compute dtype; for assignments, every cast from `compute`."""
    if name == COPY:
        return [kernel_name(COPY, out, compute, (compute,), INDEX_TYPES[0])
                for out in dt.ALL_DTYPES]
    arity = 2 if name == "where" else OPS[name].arity
    return [kernel_name(name, out, c, (c,) * arity, INDEX_TYPES[0])
            for c, out in signatures(name)]


def signatures(name: str) -> list[tuple[dt.DType, dt.DType]]:
    """(compute dtype, result dtype) pairs the operation takes."""
    if name in (COPY, "where"):
        return [(d, d) for d in dt.ALL_DTYPES]
    op = OPS[name]
    pairs = []
    for d in dt.CATEGORIES[op.category]:
        out = dt.bool if op.result == "bool" else dt.REAL_OF.get(d, d) if op.result == "real" \
            else d
        pairs.append((d, out))
    return sorted(pairs, key=lambda p: dt.ALL_DTYPES.index(p[0]))


def all_sources() -> Iterator[tuple[str, str, Sequence[str], Sequence[str]]]:
    """Every element-wise source with its same-dtype instantiations (and one of each index width
    and of a cast on load), for NVRTC."""
    names = [n for n, op in OPS.items() if op.cuda is not None and n != "where"]
    for name in [COPY, "where", *names]:
        compute, out = signatures(name)[-1]
        batch = [k for c in (dt.ALL_DTYPES if name == COPY else (compute,))
                 for k in same_dtype_batch(name, c)]
        arity = 1 if name == COPY else 2 if name == "where" else OPS[name].arity
        batch.append(kernel_name(name, out, compute, (dt.int8,) * arity, INDEX_TYPES[1]))
        yield f"elementwise/{name}.cu", source(name), OPTIONS, batch


# -- layouts ---------------------------------------------------------------------------------------
def broadcast_strides(shape: tuple[int, ...], x_shape: tuple[int, ...],
                      x_strides: tuple[int, ...]) -> tuple[int, ...]:
    """x's byte strides seen in the broadcast `shape` (0 along broadcast axes)."""
    lead = len(shape) - len(x_shape)
    return (0,) * lead + tuple(0 if n == 1 and m != 1 else s
                               for n, m, s in zip(x_shape, shape[lead:], x_strides))


def collapse(shape: tuple[int, ...], strides: Sequence[tuple[int, ...]]
             ) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """The same iteration with size-1 axes dropped and neighbouring axes merged wherever every
    array steps from one into the next contiguously."""
    keep = [i for i, n in enumerate(shape) if n != 1]
    dims = [shape[i] for i in keep]
    steps = [[s[i] for i in keep] for s in strides]
    merged_dims: list[int] = []
    merged_steps: list[list[int]] = [[] for _ in strides]
    for k, n in enumerate(dims):
        if merged_dims and all(st[-1] == s[k] * n for st, s in zip(merged_steps, steps)):
            merged_dims[-1] *= n
            for st, s in zip(merged_steps, steps):
                st[-1] = s[k]
        else:
            merged_dims.append(n)
            for st, s in zip(merged_steps, steps):
                st.append(s[k])
    return tuple(merged_dims), [tuple(st) for st in merged_steps]


def layout_kind(contiguous: bool, addresses: Sequence[int]) -> int:
    """How a launch finds its elements: STRIDED, CONTIGUOUS, or ALIGNED where every array is
    contiguous and starts on a VECTOR_BYTES boundary."""
    if not contiguous:
        return STRIDED
    return ALIGNED if all(a % VECTOR_BYTES == 0 for a in addresses) else CONTIGUOUS


def per_thread(kind: int, itemsizes: Sequence[int]) -> int:
    """Elements one thread moves at a time: a pack of VECTOR_BYTES of the widest type where the
    launch is ALIGNED (the kernel's N), else one."""
    return max(1, VECTOR_BYTES // max(itemsizes)) if kind == ALIGNED else 1


def pack_shape(shape: tuple[int, ...], contiguous: int) -> np.void:
    record = np.zeros((), SHAPE)
    record["size"] = int(np.prod(shape, dtype=np.int64)) if shape else 1
    record["ndim"] = len(shape)
    record["contiguous"] = contiguous
    record["extent"][:len(shape)] = shape
    return record[()]


def pack_operand(address: int | None, strides: tuple[int, ...], scalar: Any = None,
                 compute: dt.DType | None = None) -> np.void:
    record = np.zeros((), OPERAND)
    if address is None:
        value = np.asarray(scalar, dtype=compute.numpy).tobytes()
        record["scalar"][:len(value)] = np.frombuffer(value, np.uint8)
    else:
        record["data"] = address
        record["strides"][:len(strides)] = strides
    return record[()]


def pack_output(address: int, strides: tuple[int, ...]) -> np.void:
    record = np.zeros((), OUTPUT)
    record["data"] = address
    record["strides"][:len(strides)] = strides
    return record[()]
