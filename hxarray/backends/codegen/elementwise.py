"""Element-wise kernels (`kernels/elementwise.cuh`): one source per operation of `hxarray/_ops.py`,
its C expression wrapped in a functor; instantiations by result, compute and operand dtypes and
index width. The first call of an operation compiles every same-dtype instantiation it has at once
(the common case); mixed operand dtypes compile one by one.

Layouts: the host drops size-1 axes and merges axes that every array steps through contiguously,
so most launches see one axis, and marks launches where every array is C-contiguous (the kernel
then indexes by element number) and, of those, launches where every array starts on a 16-byte
boundary (ALIGNED: the kernel then moves 128-bit packs). `packer` packs the arguments of
one layout: what never changes once, the addresses and scalars per call.
"""

from __future__ import annotations

import struct as struct_module
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ... import _dtypes as dt
from ..._ops import OPS, Op, Signature, computes_in
from . import C_TYPES, OPTIONS, PREAMBLE, splicer, struct

MAX_DIMS = 8  # HX_MAX_DIMS in hxarray.cuh
SHAPE = struct([("size", "<i8", 0), ("ndim", "<i4", 8), ("contiguous", "<i4", 12),
                ("extent", ("<i8", (MAX_DIMS,)), 16)], 80)
OPERAND = struct([("data", "<u8", 0), ("strides", ("<i8", (MAX_DIMS,)), 8),
                  ("scalar", ("u1", (16,)), 72)], 88)
OUTPUT = struct([("data", "<u8", 0), ("strides", ("<i8", (MAX_DIMS,)), 8)], 72)
INDEX_TYPES = ("hx::i32", "hx::i64")
STRIDED, CONTIGUOUS, ALIGNED = 0, 1, 2  # Shape::contiguous: HX_STRIDED, ... in elementwise.cuh
VECTOR_BYTES = 16  # HX_VECTOR_BYTES: the widest type moves in accesses of this many bytes


def _copy_kernel(x: Any, *, out: np.ndarray) -> None:
    np.copyto(out, x, casting="unsafe")


# The operation of `assign`: the operand itself, cast to the output's dtype.
COPY = Op("copy", 1, None, "same", _copy_kernel, cuda="a")


def functor(op: Op) -> str:
    return f"hx::ops::k_{op.name}"


def source(op: Op) -> str:
    """The source holding the operation's kernels (`COPY` for assignments)."""
    if op.selects:
        return PREAMBLE + '#include "elementwise.cuh"\n'
    params = ", ".join(f"T {v}" for v in "ab"[:op.arity])
    return (PREAMBLE + '#include "elementwise.cuh"\n'
            f"namespace hx {{ namespace ops {{ struct k_{op.name} {{\n"
            f"    template <typename T> __device__ static auto apply({params}) "
            f"{{ return {op.cuda}; }}\n}}; }} }}\n")


def kernel_name(op: Op, out: dt.DType, compute: dt.DType, operands: Sequence[dt.DType],
                index: str) -> str:
    """The instantiation for these dtypes (a `selects` operation's: those of the operands it
    chooses between; the condition is bool); it computes in `computes_in`'s dtype (float for
    float16)."""
    types = ", ".join(C_TYPES[d] for d in (out, computes_in(op, compute), *operands))
    if op.selects:
        return f"hx::select<{types}, {index}>"
    return f"hx::map{len(operands)}<{functor(op)}, {types}, {index}>"


def kernel(op: Op, signature: Signature, index: str) -> tuple[str, str, list[str]]:
    """(source, instantiation, what to compile with it) of `op` on `signature` with `index`:
    with 32-bit indexing and operands of the compute dtype, every such instantiation of `op`
    at once (the common case); else the one."""
    operands = signature.operands[1:] if op.selects else signature.operands
    compute = signature.compute
    name = kernel_name(op, signature.result, compute, operands, index)
    same = index == INDEX_TYPES[0] and all(d is compute for d in operands)
    return source(op), name, same_dtype_batch(op, compute) if same else [name]


def same_dtype_batch(op: Op, compute: dt.DType) -> list[str]:
    """The instantiations compiled together on first use (32-bit indexing): every one of `op`
    whose operands have their compute dtype; for assignments, every cast from `compute`."""
    if op is COPY:
        return [kernel_name(COPY, out, compute, (compute,), INDEX_TYPES[0])
                for out in dt.ALL_DTYPES]
    arity = op.arity - op.selects
    return [kernel_name(op, out, c, (c,) * arity, INDEX_TYPES[0]) for c, out in signatures(op)]


def signatures(op: Op) -> list[tuple[dt.DType, dt.DType]]:
    """(compute dtype, result dtype) pairs the operation takes."""
    if op is COPY or op.selects:
        return [(d, d) for d in dt.ALL_DTYPES]
    pairs = []
    for d in dt.CATEGORIES[op.category]:
        out = dt.bool if op.result == "bool" else dt.REAL_OF.get(d, d) if op.result == "real" \
            else d
        pairs.append((d, out))
    return sorted(pairs, key=lambda p: dt.ALL_DTYPES.index(p[0]))


def all_sources() -> Iterator[tuple[str, str, Sequence[str], Sequence[str]]]:
    """Every element-wise source with its same-dtype instantiations (and one of each index width
    and of a cast on load), for NVRTC."""
    selects = [op for op in OPS.values() if op.selects]
    others = [op for op in OPS.values() if op.cuda is not None and not op.selects]
    for op in [COPY, *selects, *others]:
        compute, out = signatures(op)[-1]
        batch = [k for c in (dt.ALL_DTYPES if op is COPY else (compute,))
                 for k in same_dtype_batch(op, c)]
        batch.append(kernel_name(op, out, compute, (dt.int8,) * (op.arity - op.selects),
                                 INDEX_TYPES[1]))
        yield f"elementwise/{op.name}.cu", source(op), OPTIONS, batch


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


def packer(dims: tuple[int, ...], steps: Sequence[tuple[int, ...]], kind: int,
           compute: dt.DType, scalars: Sequence[bool]
           ) -> Callable[[Sequence[Any]], list[np.generic]]:
    """The kernel arguments of one layout (`dims`, the output's then each array operand's
    `steps`, its kind: STRIDED, CONTIGUOUS or ALIGNED; which operands are `scalars`) as a
    function of the operands' addresses (a scalar
    operand: its value) followed by the output's: the records of `pack_operand`,
    `pack_output` and `pack_shape`, their fixed bytes packed once here (and the records of
    recent addresses kept)."""
    shape = pack_shape(dims, kind)
    array_steps = iter(steps[1:])
    parts = [splicer(pack_operand(None, (), 0, compute), "scalar", scalar_encoder(compute))
             if scalar else splicer(pack_operand(0, next(array_steps)), "data", _address, memo=True)
             for scalar in scalars]
    parts.append(splicer(pack_output(0, steps[0]), "data", _address, memo=True))

    def pack(values: Sequence[Any]) -> list[np.generic]:
        packed = [part(value) for part, value in zip(parts, values)]
        packed.append(shape)
        return packed

    return pack


def _address(address: int) -> bytes:
    return address.to_bytes(8, "little")


_STRUCT_CODES = {("b", 1): "?", ("i", 1): "b", ("i", 2): "h", ("i", 4): "i", ("i", 8): "q",
                 ("u", 1): "B", ("u", 2): "H", ("u", 4): "I", ("u", 8): "Q", ("f", 2): "e",
                 ("f", 4): "f",
                 ("f", 8): "d", ("c", 8): "ff", ("c", 16): "dd"}
_EXACT_IN_DOUBLE = 2**53


def scalar_encoder(compute: dt.DType) -> Callable[[Any], bytes]:
    """The bytes of a Python scalar as `compute`, as numpy converts it: by `struct` where that
    is the same conversion (a Python number of the dtype's kind, or an int exact in a double
    for floating dtypes, in range), else by numpy, overflow to inf included."""
    code = _STRUCT_CODES[compute.kind, compute.itemsize]
    pack = struct_module.Struct("<" + code).pack
    kind, numpy_dtype = compute.kind, compute.numpy
    fast: tuple[type, ...] = {"b": (bool,), "i": (int, bool), "u": (int, bool),
                              "f": (float, int, bool), "c": (complex, float, int, bool)}[kind]

    def by_numpy(value: Any) -> bytes:
        with np.errstate(all="ignore"):
            return np.asarray(value, dtype=numpy_dtype).tobytes()

    def encode(value: Any) -> bytes:
        cls = value.__class__
        if cls not in fast or (cls is int and kind in "fc" and
                               not -_EXACT_IN_DOUBLE <= value <= _EXACT_IN_DOUBLE):
            return by_numpy(value)
        try:
            return pack(value.real, value.imag) if kind == "c" else pack(value)
        except (OverflowError, struct_module.error):
            return by_numpy(value)

    return encode
