"""Data types and the type-promotion lattice (spec: "Data Types", "Type Promotion Rules").

Each dtype is a singleton `DType`; equality is identity, so comparisons on the hot path are cheap.
`DType.numpy` is the matching numpy dtype, which backends use to describe memory layouts.
"""

from __future__ import annotations

import numpy as np

from ._modes import UnspecifiedType, is_strict

__all__ = [
    "DType", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128", "result_type_of", "promote",
]

_builtin_bool = bool


class DType:
    """An Array API data type: a name, a kind, a size, and the numpy dtype with the same layout."""

    __slots__ = ("name", "kind", "itemsize", "numpy", "__weakref__")
    name: str
    kind: str  # numpy's character code: "b", "i", "u", "f" or "c"
    itemsize: int
    numpy: np.dtype

    def __init__(self, name: str) -> None:
        if hasattr(self, "name"):
            raise TypeError("a DType is initialised once")
        numpy = np.dtype(name)
        fields = {"name": name, "numpy": numpy, "itemsize": numpy.itemsize, "kind": numpy.kind}
        for field, value in fields.items():
            object.__setattr__(self, field, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"hxarray dtypes are immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"hxarray dtypes are immutable: cannot delete {name!r}")

    def __repr__(self) -> str:
        return f"hxarray.{self.name}"

    def __reduce__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> _builtin_bool:
        """Identity among hxarray dtypes; against a numpy dtype or a scalar or Python type,
        numpy's comparison, so `x.dtype == bool` reads as numpy's does (dask compares its arrays'
        dtypes so); against a name (`x.dtype == "int64"`, `"f8"`), numpy's comparison in numpy
        mode, never equal in strict mode."""
        if type(other) is DType:
            return self is other
        if isinstance(other, str):
            if is_strict():
                return False
            try:
                return _builtin_bool(self.numpy == np.dtype(other))
            except (TypeError, ValueError):  # not a dtype's name (numpy: not equal)
                return False
        if isinstance(other, (np.dtype, type)):
            try:
                return _builtin_bool(self.numpy == other)
            except TypeError:
                return False
        return NotImplemented

    __hash__ = object.__hash__

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype: `np.dtype(hxarray.float64)` reads it (numpy's protocol for objects
        with a dtype)."""
        return self.numpy

    @property
    def type(self) -> type:
        """numpy's scalar type of this dtype (`np.float64`), as `np.dtype(...).type`."""
        return self.numpy.type


bool = DType("bool")
int8 = DType("int8")
int16 = DType("int16")
int32 = DType("int32")
int64 = DType("int64")
uint8 = DType("uint8")
uint16 = DType("uint16")
uint32 = DType("uint32")
uint64 = DType("uint64")
float16 = DType("float16")  # numpy mode's: the standard has no 16-bit float (strict refuses it)
float32 = DType("float32")
float64 = DType("float64")
complex64 = DType("complex64")
complex128 = DType("complex128")

ALL_DTYPES = (bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
              float16, float32, float64, complex64, complex128)
# The dtypes of the standard (`__array_namespace_info__().dtypes()`, strict mode's), as numpy's
# own namespace lists them; float16 is numpy mode's alone.
NUMPY_MODE_ONLY = frozenset({float16})
STANDARD_DTYPES = tuple(d for d in ALL_DTYPES if d not in NUMPY_MODE_ONLY)

SIGNED = (int8, int16, int32, int64)
UNSIGNED = (uint8, uint16, uint32, uint64)
INTEGER = SIGNED + UNSIGNED
REAL_FLOATING = (float16, float32, float64)
COMPLEX_FLOATING = (complex64, complex128)
FLOATING = REAL_FLOATING + COMPLEX_FLOATING
NUMERIC = INTEGER + FLOATING
REAL_NUMERIC = INTEGER + REAL_FLOATING

# The real dtype of a complex one's parts, and the complex dtype of a real floating one.
REAL_OF = {complex64: float32, complex128: float64}
COMPLEX_OF = {float16: complex64, float32: complex64, float64: complex128}
# The default accumulator of sum, prod and the cumulative sums and products (spec: sum, "dtype"):
# the 64-bit integer of an integer's signedness (a bool counts in int64); others accumulate in
# their own dtype.
ACCUMULATOR = {**{d: int64 for d in SIGNED}, **{d: uint64 for d in UNSIGNED}, bool: int64}
# numpy computes float16 in float32: its element-wise loops convert the operands to float32 and
# round each result to float16 once (nextafter aside: `_ops.computes_in`), its reduction loops
# carry a float32 running value, and `mean` sums and divides in float32 (numpy's `_mean`). The
# CUDA kernels (`_ops.computes_in`) and `_statistical._mean` follow; the CPU runs numpy's loops.
COMPUTES_IN = {float16: float32}
INTEGER_BOUNDS = {d: (int(np.iinfo(d.numpy).min), int(np.iinfo(d.numpy).max)) for d in INTEGER}
# Which Python scalars may meet an array of each dtype (spec: "Mixing arrays with Python
# scalars"): bool with bool, int with integer or floating-point, float with floating-point
# (complex included), complex with complex. The namespace's check of a scalar operand
# (`_elementwise._scalar_fits`) reads it.
SCALAR_KINDS: dict[DType, frozenset[type]] = {
    d: frozenset((_builtin_bool,) if d is bool else
                 (int,) if d in INTEGER else
                 (int, float) if d in REAL_FLOATING else (int, float, complex))
    for d in ALL_DTYPES}
# Of those, the ones an operand takes as it is, with no check or conversion beyond a Python int
# lying within int64 (the namespace converts a larger int to a float, and checks an int against
# the bounds of the narrower integer dtypes, `INTEGER_BOUNDS`; a complex scalar with a real
# array changes the result's dtype): what the compiled fast path takes without the namespace
# (`backends/cpu/fastpath._scalar_fits`, as a bit mask).
SCALARS_AS_IS: dict[DType, frozenset[type]] = {
    d: kinds - {int} if d in INTEGER and d is not int64 else kinds
    for d, kinds in SCALAR_KINDS.items()}
BY_NAME = {d.name: d for d in ALL_DTYPES}
FROM_NUMPY = {d.numpy: d for d in ALL_DTYPES}

# Dtype categories used by the elementwise functions' input checks (spec: "Data Type Categories").
CATEGORIES: dict[str, frozenset[DType]] = {
    "bool": frozenset({bool}),
    "integer": frozenset(INTEGER),
    "integer or boolean": frozenset(INTEGER + (bool,)),
    "real-valued floating-point": frozenset(REAL_FLOATING),
    "complex floating-point": frozenset(COMPLEX_FLOATING),
    "floating-point": frozenset(FLOATING),
    "real-valued": frozenset(REAL_NUMERIC),
    "numeric": frozenset(NUMERIC),
    "all": frozenset(ALL_DTYPES),
}

# Kinds accepted by `isdtype` and `__array_namespace_info__().dtypes(kind=...)`.
KINDS: dict[str, tuple[DType, ...]] = {
    "bool": (bool,),
    "signed integer": SIGNED,
    "unsigned integer": UNSIGNED,
    "integral": INTEGER,
    "real floating": REAL_FLOATING,
    "complex floating": COMPLEX_FLOATING,
    "numeric": NUMERIC,
}


def _build_promotion_table() -> dict[tuple[DType, DType], DType]:
    """The spec's lattice: mixed signed/unsigned integers and mixed real/complex floats only."""
    table: dict[tuple[DType, DType], DType] = {(bool, bool): bool}
    signed_of_size = {d.itemsize: d for d in SIGNED}
    for a in INTEGER:
        for b in INTEGER:
            if a.kind == b.kind:
                table[a, b] = a if a.itemsize >= b.itemsize else b
            else:
                s, u = (a, b) if a.kind == "i" else (b, a)
                if s.itemsize > u.itemsize:
                    table[a, b] = s
                elif u.itemsize < 8:
                    table[a, b] = signed_of_size[2 * u.itemsize]
                # int64 with uint64 has no common type in the standard
    # float16 ranks below float32 and joins complex numbers as complex64, as in numpy
    float_rank = {float16: 0, float32: 1, float64: 2, complex64: 1, complex128: 2}
    for a in FLOATING:
        for b in FLOATING:
            rank = max(float_rank[a], float_rank[b])
            cplx = a in COMPLEX_FLOATING or b in COMPLEX_FLOATING
            table[a, b] = (COMPLEX_FLOATING[rank - 1] if cplx else REAL_FLOATING[rank])
    return table


PROMOTION_TABLE = _build_promotion_table()


def numpy_only(dtype: DType, function: str) -> DType:
    """`dtype`, or strict mode's TypeError where it is one the standard lacks (float16): strict
    mode keeps the standard's dtypes (an array made in numpy mode still computes in strict
    mode; strict mode only makes none). The rule of the namespace and of `select_device`."""
    if dtype in NUMPY_MODE_ONLY and is_strict():
        raise TypeError(f"{function}(): {dtype.name} is numpy mode only: the Array API standard "
                        "has no such dtype, and strict mode keeps to the standard's (use "
                        "float32, or numpy mode: hxarray.set_strict(False))")
    return dtype


def promote(a: DType, b: DType) -> DType:
    """The common dtype of two array dtypes; where the standard defines none, Unspecified (a
    TypeError)."""
    try:
        return PROMOTION_TABLE[a, b]
    except KeyError:
        raise UnspecifiedType(
            "no type promotion between {} and {}: the Array API standard does not promote across "
            "kinds (bool, integer, floating-point); cast one operand with astype()", a.name, b.name
        ) from None


def result_type_of(*dtypes: DType) -> DType:
    """Promote any number of dtypes pairwise."""
    if not dtypes:
        raise ValueError("at least one dtype or array is required")
    out = dtypes[0]
    for d in dtypes[1:]:
        out = promote(out, d)
    return out
