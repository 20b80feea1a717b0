"""Fused element-wise expressions: what `hxarray.fuse` hands a backend.

An `Expression` is a straight-line program of element-wise steps over its operands (arrays, or
Python scalars already checked against the dtypes), in the order the unfused function ran them.
Each step is one primitive call the namespace made, with the result dtype it chose and the dtype
the backend computes in, so a backend that fuses computes exactly what the unfused calls would.
A backend runs one with `Backend.fused` (`fused_call` for a fused function's repeated calls,
`fused_reduce` when a reduction consumes it); the defaults run the steps one by one through
`elementwise` and `copy`.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import _dtypes as dt
from .._ops import Op, Signature
from .._views import broadcast_shapes

if TYPE_CHECKING:
    from .._array import Array
    from .base import Backend

__all__ = ["ASTYPE", "ARRAY", "SCALAR", "Expression", "Step", "operands_of", "reduced_dtype",
           "run_unfused", "scalar_key"]

ARRAY = "array"  # an operand: the array passed at this position
SCALAR = "scalar"  # an operand: the Python scalar passed at this position
ASTYPE = "astype"  # a cast of one value (args: (value,)) to the step's dtype


class Step(NamedTuple):
    """One value of an expression: an operand (`ARRAY`, `SCALAR`), an operation of `_ops` (its
    `Op` object) or a cast (`ASTYPE`) of earlier steps `args`. `dtype` is its dtype; `compute`
    the dtype its arguments are converted to before the operation (for a scalar operand: the
    dtype it is stored in; for a cast: the source dtype)."""

    op: Op | str
    args: tuple[int, ...]
    dtype: dt.DType
    compute: dt.DType


class Expression(NamedTuple):
    """Steps in order, operands first (step k < `operands` is operand k); the result is the
    last step. Equal expressions compile to the same kernel (operand values are not part of it)."""

    steps: tuple[Step, ...]
    operands: int

    @property
    def dtype(self) -> dt.DType:
        return self.steps[-1].dtype


def reduced_dtype(after: Expression) -> dt.DType:
    """The dtype of a reduction's results, the array operand of the expression `after` them."""
    return next(s.dtype for s in after.steps[:after.operands] if s.op == ARRAY)


def scalar_key(value: bool | int | float | complex) -> tuple[type, Any]:
    """A key that tells apart every scalar operand value: its type, and a float's or complex
    number's bytes (0.0 apart from -0.0, each NaN payload apart)."""
    kind = value.__class__
    if kind is float:  # (the common case first: a float's bytes alone)
        return kind, _DOUBLE(value)
    if isinstance(value, (float, complex)):
        return kind, _DOUBLES(value.real, value.imag)
    return kind, value


_DOUBLE, _DOUBLES = struct.Struct("<d").pack, struct.Struct("<dd").pack


def operands_of(scalars: Sequence[Any], arrays: Sequence[Array]) -> list[Any]:
    """Every operand: `arrays`, in order, at the places of `scalars` that hold None."""
    given = iter(arrays)
    return [next(given) if v is None else v for v in scalars]


def run_unfused(backend: Backend, expression: Expression, operands: Sequence[Array | Any],
                out: Array) -> None:
    """out = the expression, one primitive call per step (any backend)."""
    values: list[Any] = list(operands)
    for step in expression.steps[expression.operands:]:
        args = [values[i] for i in step.args]
        if not isinstance(step.op, Op):  # ASTYPE: the one other kind of step after the operands
            source = args[0]
            values.append(backend.copy(source, step.dtype) if hasattr(source, "_shape") else
                          backend.full((), source, step.dtype, out._buffer.device))
            continue
        shape = broadcast_shapes(*(a._shape for a in args if hasattr(a, "_shape")))
        signature = Signature(tuple(expression.steps[i].dtype for i in step.args), step.compute,
                              step.dtype)
        values.append(backend.elementwise(step.op, args, signature, shape))
    backend.assign(out, values[-1])
