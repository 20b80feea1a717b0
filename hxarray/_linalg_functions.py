"""Linear algebra functions of the main namespace (spec: "Linear Algebra Functions")."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

from . import _dtypes as dt
from . import _views
from ._adapter import adapted
from ._array import Array
from ._checks import check_array, check_dtype, normalize_axis, same_device
from ._manipulation import reshape
from ._modes import UnspecifiedType

__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]


def _operands(function: str, x1: Array, x2: Array) -> tuple[dt.DType, Array, Array]:
    """The promoted dtype and the operands."""
    check_array(x1, function, "x1")
    check_array(x2, function, "x2")
    if x1._dtype is dt.bool and x2._dtype is dt.bool:
        raise UnspecifiedType(f"{function}() requires an array of numeric dtype, got bool")
    x1 = check_dtype(x1, "numeric", function)
    x2 = check_dtype(x2, "numeric", function)
    same_device((x1, x2), function)
    return dt.promote(x1._dtype, x2._dtype), x1, x2


@adapted
def matmul(x1: Array, x2: Array, /) -> Array:
    """The matrix product of x1 and x2, batched over leading axes
    (spec: linear_algebra_functions/matmul)."""
    dtype, y1, y2 = _operands("matmul", x1, x2)
    ndim1, ndim2 = len(x1._shape), len(x2._shape)
    if ndim1 == 0 or ndim2 == 0:
        raise ValueError("matmul(): operands must have at least one dimension; use multiply() "
                         "for scalars")
    inner1 = x1._shape[-1]
    inner2 = x2._shape[-2] if ndim2 > 1 else x2._shape[0]
    if inner1 != inner2:
        raise ValueError(f"matmul(): shapes {x1._shape} and {x2._shape} are not aligned: "
                         f"{inner1} (last axis of x1) != {inner2} (contracted axis of x2)")
    batch = _views.broadcast_shapes(x1._shape[:-2], x2._shape[:-2]) if ndim1 > 2 or ndim2 > 2 \
        else ()
    backend = x1._buffer.device.backend
    # 1-D operands are a row (x1) or a column (x2) whose axis leaves the result again.
    a = _views.expand(y1, (0,)) if ndim1 == 1 else y1
    b = _views.expand(y2, (1,)) if ndim2 == 1 else y2
    if a._dtype is not dtype:
        a = backend.copy(a, dtype)
    if b._dtype is not dtype:
        b = backend.copy(b, dtype)
    if batch:
        a = _views.broadcast_to(a, (*batch, *a._shape[-2:]))
        b = _views.broadcast_to(b, (*batch, *b._shape[-2:]))
    out = backend.empty((*batch, a._shape[-2], b._shape[-1]), dtype, x1._buffer.device)
    backend.matmul(a, b, out)
    dropped = (len(batch),) * (ndim1 == 1) + (len(batch) + 1,) * (ndim2 == 1)
    return _views.squeeze(out, dropped) if dropped else out


def matrix_transpose(x: Array, /) -> Array:
    """x with its last two axes swapped, a view
    (spec: linear_algebra_functions/matrix_transpose)."""
    check_array(x, "matrix_transpose")
    return x.mT


@adapted
def tensordot(x1: Array, x2: Array, /, *,
              axes: int | tuple[Sequence[int], Sequence[int]] = 2) -> Array:
    """Sums of products over the axes `axes` of x1 and x2
    (spec: linear_algebra_functions/tensordot)."""
    _, y1, y2 = _operands("tensordot", x1, x2)
    if isinstance(axes, int) and not isinstance(axes, bool):
        if axes < 0 or axes > min(x1.ndim, x2.ndim):
            raise ValueError(f"tensordot(): axes={axes} must be in [0, {min(x1.ndim, x2.ndim)}]")
        pair = (tuple(range(x1.ndim - axes, x1.ndim)), tuple(range(axes)))
    else:
        try:
            a1, a2 = axes
            pair = (tuple(normalize_axis(operator.index(a), x1.ndim, "tensordot") for a in a1),
                    tuple(normalize_axis(operator.index(a), x2.ndim, "tensordot") for a in a2))
        except (TypeError, ValueError) as exc:
            if isinstance(exc, ValueError) and "axis" in str(exc):
                raise
            raise TypeError(f"tensordot(): axes must be an int or a pair of axis sequences, "
                            f"got {axes!r}") from None
        if len(pair[0]) != len(pair[1]):
            raise ValueError("tensordot(): the two axis sequences must have the same length")
    for a, b in zip(*pair):
        if x1._shape[a] != x2._shape[b]:
            raise ValueError(f"tensordot(): contracted axes have sizes {x1._shape[a]} and "
                             f"{x2._shape[b]}")
    # x1's free axes then its contracted ones, x2's contracted axes then its free ones: the
    # contraction is one matrix product of the two reshaped operands.
    free1 = tuple(i for i in range(x1.ndim) if i not in pair[0])
    free2 = tuple(i for i in range(x2.ndim) if i not in pair[1])
    k = math.prod(x1._shape[i] for i in pair[0])
    shape1 = tuple(x1._shape[i] for i in free1)
    shape2 = tuple(x2._shape[i] for i in free2)
    a = reshape(_views.permute(y1, free1 + pair[0]), (math.prod(shape1), k))
    b = reshape(_views.permute(y2, pair[1] + free2), (k, math.prod(shape2)))
    return reshape(matmul(a, b), shape1 + shape2)


@adapted
def vecdot(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """Sum over `axis` of conj(x1) * x2, after broadcasting x1 and x2 together."""
    from ._elementwise import conj, multiply
    from ._statistical import sum as _sum

    dtype, y1, y2 = _operands("vecdot", x1, x2)
    shape = _views.broadcast_shapes(x1._shape, x2._shape)
    if not shape:
        raise ValueError("vecdot(): operands must have at least one dimension")
    axis = normalize_axis(axis, len(shape), "vecdot")
    rel1, rel2 = axis - len(shape) + x1.ndim, axis - len(shape) + x2.ndim
    if rel1 < 0 or rel2 < 0 or x1._shape[rel1] != x2._shape[rel2]:
        raise ValueError(f"vecdot(): shapes {x1._shape} and {x2._shape} differ on axis {axis}")
    product = multiply(conj(y1) if y1._dtype in dt.COMPLEX_FLOATING else y1, y2)
    return _sum(product, axis=axis, dtype=dtype)
