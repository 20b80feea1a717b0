"""The `linalg` extension (spec: "Linear Algebra Extension").

Factorisations and solvers check their arguments here and run as `backend.linalg(name, ...)`.
Everything else (norms, rank, powers, pseudo-inverse, products, diagonal, trace) is composed from
other namespace functions, so a backend that provides the factorisations gets it all.

All functions that the standard says "should" take floating-point input require it (TypeError
otherwise). Singular or indefinite input raises a ValueError (numpy's `LinAlgError` on the CPU)
naming the function.
"""

from __future__ import annotations

import builtins
import math
from typing import Any, Literal, NamedTuple

from . import _dtypes as dt
from . import _views
from ._adapter import adapted
from ._array import Array
from ._checks import as_bool, as_int, check_array, check_dtype, normalize_axes, same_device
from ._creation import asarray, eye
from ._data_types import astype, finfo
from ._elementwise import abs, conj, multiply, sqrt
from ._linalg_functions import matmul, matrix_transpose, tensordot, vecdot
from ._manipulation import broadcast_to, expand_dims, reshape, stack
from ._modes import UnspecifiedType
from ._observed import observe_names
from ._searching import count_nonzero, where
from ._statistical import max, min, sum

__all__ = [
    "cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "matmul",
    "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr",
    "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm",
]


class EighResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class EigResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class QRResult(NamedTuple):
    Q: Array
    R: Array


class SlogdetResult(NamedTuple):
    sign: Array
    logabsdet: Array


class SVDResult(NamedTuple):
    U: Array
    S: Array
    Vh: Array



def _matrices(x: Any, function: str, *, square: builtins.bool = False,
              name: str = "x", category: str = "floating-point") -> Array:
    """`x` checked as a floating-point (or `category`) matrix or stack of matrices in the last two
    axes."""
    check_array(x, function, name)
    x = check_dtype(x, category, function)
    if x.ndim < 2:
        raise ValueError(f"{function}(): {name} must have at least 2 dimensions (..., M, N), "
                         f"got shape {x._shape}")
    if square and x._shape[-1] != x._shape[-2]:
        raise ValueError(f"{function}(): {name} must be square in its last two dimensions "
                         f"(..., M, M), got shape {x._shape}")
    return x


def _broadcast(function: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return _views.broadcast_shapes(*shapes)
    except ValueError as exc:
        raise ValueError(f"{function}(): {exc}") from None


def _operands(function: str, x1: Any, x2: Any, category: str) -> tuple[Array, Array]:
    """Both arrays checked for type, dtype category, device and a common promoted dtype."""
    for name, x in (("x1", x1), ("x2", x2)):
        check_array(x, function, name)
    x1, x2 = check_dtype(x1, category, function), check_dtype(x2, category, function)
    same_device((x1, x2), function)
    try:
        dt.promote(x1._dtype, x2._dtype)
    except UnspecifiedType as exc:
        raise UnspecifiedType(f"{function}(): {exc}") from None
    return x1, x2


def _run(function: str, *arrays: Array, **params: Any) -> Any:
    """`backend.linalg(function, ...)`; the backend's ValueErrors get the function's name."""
    try:
        return arrays[0]._buffer.device.backend.linalg(function, *arrays, **params)
    except ValueError as exc:
        raise type(exc)(f"{function}(): {exc}") from None


def _adjoint(x: Array) -> Array:
    """The conjugate transpose of the last two axes."""
    return matrix_transpose(conj(x) if x._dtype in dt.COMPLEX_FLOATING else x)


# -- factorisations and solvers (backend kernels) ----------------------------------------------


def cholesky(x: Array, /, *, upper: builtins.bool = False) -> Array:
    """Lower (or upper) Cholesky factor. Whether `x` is Hermitian is not checked."""
    upper = as_bool(upper, "cholesky", "upper")
    return _run("cholesky", _matrices(x, "cholesky", square=True), upper=upper)


def det(x: Array, /) -> Array:
    """The determinant of each matrix in x (spec: extensions/linear_algebra_functions, det)."""
    return _run("det", _matrices(x, "det", square=True))


def slogdet(x: Array, /) -> SlogdetResult:
    """The sign and the natural logarithm of the absolute determinant of each matrix in x
    (spec: extensions/linear_algebra_functions, slogdet)."""
    return SlogdetResult(*_run("slogdet", _matrices(x, "slogdet", square=True)))


def inv(x: Array, /) -> Array:
    """The inverse of each matrix in x (spec: extensions/linear_algebra_functions, inv)."""
    return _run("inv", _matrices(x, "inv", square=True))


def eigh(x: Array, /) -> EighResult:
    """Whether `x` is Hermitian is not checked."""
    return EighResult(*_run("eigh", _matrices(x, "eigh", square=True)))


def eigvalsh(x: Array, /) -> Array:
    """Whether `x` is Hermitian is not checked."""
    return _run("eigvalsh", _matrices(x, "eigvalsh", square=True))


def eig(x: Array, /) -> EigResult:
    """Eigenvalues and eigenvectors, complex even for real `x` with real eigenvalues."""
    return EigResult(*_run("eig", _matrices(x, "eig", square=True)))


def eigvals(x: Array, /) -> Array:
    """The eigenvalues of each matrix in x, complex (spec: extensions/linear_algebra_functions,
    eigvals)."""
    return _run("eigvals", _matrices(x, "eigvals", square=True))


@adapted
def qr(x: Array, /, *, mode: Literal["reduced", "complete"] = "reduced") -> QRResult:
    """The QR decomposition of each matrix in x (spec: extensions/linear_algebra_functions, qr)."""
    x = _matrices(x, "qr")
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr(): mode must be 'reduced' or 'complete', got {mode!r}")
    return QRResult(*_run("qr", x, mode=mode))


@adapted
def svd(x: Array, /, *, full_matrices: builtins.bool = True) -> SVDResult:
    """The singular value decomposition of each matrix in x
    (spec: extensions/linear_algebra_functions, svd)."""
    full_matrices = as_bool(full_matrices, "svd", "full_matrices")
    return SVDResult(*_run("svd", _matrices(x, "svd"), full_matrices=full_matrices))


def svdvals(x: Array, /) -> Array:
    """The singular values of each matrix in x, in descending order
    (spec: extensions/linear_algebra_functions, svdvals)."""
    return _run("svdvals", _matrices(x, "svdvals"))


@adapted
def solve(x1: Array, x2: Array, /) -> Array:
    """Solve x1 @ result = x2; a 1-D `x2` is one right-hand side shared by every matrix."""
    x1, x2 = _operands("solve", x1, x2, "floating-point")
    x1 = _matrices(x1, "solve", square=True, name="x1")
    m = x1._shape[-1]
    if x2.ndim == 1:
        rows = x2._shape[0]
    elif x2.ndim >= 2:
        rows = x2._shape[-2]
        _broadcast("solve", x1._shape[:-2], x2._shape[:-2])
    else:
        raise ValueError("solve(): x2 must have shape (M,) or (..., M, K), got a 0-D array")
    if rows != m:
        raise ValueError(f"solve(): x2 of shape {x2._shape} needs {m} rows to match x1 of shape "
                         f"{x1._shape}")
    return _run("solve", x1, x2)


# -- compositions ------------------------------------------------------------------------------


@adapted
def cross(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """Cross product along `axis`, which counts from the end of both arrays (-1 is the last)."""
    x1, x2 = _operands("cross", x1, x2, "numeric")
    axis = as_int(axis, "cross", "axis")
    ndim = builtins.min(x1.ndim, x2.ndim)
    if ndim == 0:
        raise ValueError("cross(): x1 and x2 must have at least one dimension")
    if not -ndim <= axis <= -1:
        raise ValueError(f"cross(): axis must be a negative axis in [-{ndim}, -1] for arrays of "
                         f"shapes {x1._shape} and {x2._shape}, got {axis}")
    if x1._shape[axis] != 3 or x2._shape[axis] != 3:
        raise ValueError(f"cross(): both arrays need size 3 along axis {axis}, got shapes "
                         f"{x1._shape} and {x2._shape}")
    _broadcast("cross", x1._shape, x2._shape)
    after = (slice(None),) * (-1 - axis)
    keys = [(..., i, *after) for i in range(3)]  # (mypy misreads x[(..., *a)] as x[..., *a])
    a = [x1[key] for key in keys]
    b = [x2[key] for key in keys]
    return stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                  a[0] * b[1] - a[1] * b[0]], axis=axis)


@adapted
def outer(x1: Array, x2: Array, /) -> Array:
    """The outer product of the 1-D x1 and x2 (spec: extensions/linear_algebra_functions, outer)."""
    x1, x2 = _operands("outer", x1, x2, "numeric")
    for name, x in (("x1", x1), ("x2", x2)):
        if x.ndim != 1:
            raise ValueError(f"outer(): {name} must be 1-D, got shape {x._shape}")
    return multiply(expand_dims(x1, axis=1), expand_dims(x2, axis=0))


def _diagonal(x: Array, offset: Any, function: str) -> Array:
    if x.ndim < 2:
        raise ValueError(f"{function}(): x must have at least 2 dimensions, got shape {x._shape}")
    return _views.diagonal(x, as_int(offset, function, "offset"))


def diagonal(x: Array, /, *, offset: int = 0) -> Array:
    """The diagonal as a view of `x` (writing to it writes to `x`)."""
    return _diagonal(check_array(x, "diagonal"), offset, "diagonal")


def trace(x: Array, /, *, offset: int = 0, dtype: Any = None) -> Array:
    """The sum of each matrix's diagonal `offset`
    (spec: extensions/linear_algebra_functions, trace)."""
    check_array(x, "trace")
    x = check_dtype(x, "numeric", "trace")
    return sum(_diagonal(x, offset, "trace"), axis=-1, dtype=dtype)


@adapted
def matrix_power(x: Array, n: int, /) -> Array:
    """x to the power n by repeated squaring; a negative n inverts x first."""
    return power(x, n, "floating-point")


def power(x: Array, n: int, category: str) -> Array:
    """matrix_power of a matrix of dtype `category` ("all": integer and bool matrices stay exact
    for n >= 0, numpy mode's rule)."""
    n = as_int(n, "matrix_power", "n")
    if n >= 0 and category != "all" and x.__class__ is Array and x._dtype not in dt.FLOATING:
        raise UnspecifiedType(f"matrix_power() requires an array of {category} dtype, got "
                              f"{x._dtype.name}")
    x = _matrices(x, "matrix_power", square=True, category=category if n >= 0 else
                  "floating-point")
    if n == 0:
        identity = eye(x._shape[-1], dtype=x._dtype, device=x._buffer.device)
        return asarray(broadcast_to(identity, x._shape), copy=True)
    base = inv(x) if n < 0 else x
    n = builtins.abs(n)
    result: Array | None = None
    while True:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if not n:
            break
        base = matmul(base, base)
    assert result is not None  # n >= 1 here
    return asarray(result, copy=True) if result is x else result


def _cutoff(function: str, x: Array, s: Array, rtol: float | Array | None) -> Array:
    """rtol times the largest singular value, shaped (..., 1) to compare with `s` (..., K)."""
    *batch, m, n = x._shape
    if rtol is None:
        rtol = builtins.max(m, n) * finfo(x._dtype).eps
    elif rtol.__class__ is Array:
        rtol = check_dtype(rtol, "real-valued floating-point", function)
        same_device((x, rtol), function)
        if _broadcast(function, rtol._shape, tuple(batch)) != tuple(batch):
            raise ValueError(f"{function}(): rtol of shape {rtol._shape} does not broadcast to "
                             f"the stack shape {tuple(batch)} of x")
        rtol = expand_dims(rtol, axis=-1)
    elif isinstance(rtol, (int, float)) and not isinstance(rtol, builtins.bool):
        rtol = float(rtol)
    else:
        raise TypeError(f"{function}(): rtol must be a float, a real floating-point array or "
                        f"None, got {type(rtol).__name__}")
    return rtol * s[..., :1]  # singular values come sorted in descending order


def matrix_rank(x: Array, /, *, rtol: float | Array | None = None) -> Array:
    """The rank of each matrix in x: its singular values above `rtol` times the largest
    (spec: extensions/linear_algebra_functions, matrix_rank)."""
    x = _matrices(x, "matrix_rank")
    s = svdvals(x)
    return count_nonzero(s > _cutoff("matrix_rank", x, s, rtol), axis=-1)


def pinv(x: Array, /, *, rtol: float | Array | None = None) -> Array:
    """The Moore-Penrose pseudo-inverse of each matrix in x; singular values up to `rtol` times the
    largest count as zero (spec: extensions/linear_algebra_functions, pinv)."""
    x = _matrices(x, "pinv")
    u, s, vh = svd(x, full_matrices=False)
    s_inv = where(s > _cutoff("pinv", x, s, rtol), 1 / s, 0.0)
    return matmul(_adjoint(vh) * expand_dims(s_inv, axis=-2), _adjoint(u))


def vector_norm(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
                keepdims: builtins.bool = False, ord: float = 2) -> Array:
    """The ord-norm over `axis` (all axes of a tuple together), computed as the formulas in the
    spec's table; ord=inf/-inf over an empty axis raises ValueError."""
    check_array(x, "vector_norm")
    x = check_dtype(x, "floating-point", "vector_norm")
    axes = normalize_axes(axis, x.ndim, "vector_norm")
    keepdims = as_bool(keepdims, "vector_norm", "keepdims")
    if isinstance(ord, builtins.bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"vector_norm(): ord must be an int or a float, got {ord!r}")
    if math.isnan(ord):
        raise ValueError("vector_norm(): ord must not be nan")
    a = abs(x)
    reduce: dict[str, Any] = {"axis": axes, "keepdims": keepdims}
    if math.isinf(ord):
        if any(x._shape[i] == 0 for i in axes):
            raise ValueError(f"vector_norm(): ord={ord} is undefined over an empty axis "
                             f"(x has shape {x._shape})")
        return (max if ord > 0 else min)(a, **reduce)
    if ord == 0:
        return astype(count_nonzero(x, **reduce), a._dtype)
    if ord == 1:
        return sum(a, **reduce)
    if ord == 2:
        return sqrt(sum(a * a, **reduce))
    return sum(a ** ord, **reduce) ** (1 / ord)


_MATRIX_ORDS = (1, -1, 2, -2, math.inf, -math.inf)


def matrix_norm(x: Array, /, *, keepdims: builtins.bool = False,
                ord: float | Literal["fro", "nuc"] | None = "fro") -> Array:
    """The ord-norm of each matrix; the orders other than 'fro' and 'nuc' raise ValueError for
    matrices with no elements."""
    x = _matrices(x, "matrix_norm")
    keepdims = as_bool(keepdims, "matrix_norm", "keepdims")
    if ord == "fro":
        result = vector_norm(x, axis=(-2, -1))
    elif ord == "nuc":
        result = sum(svdvals(x), axis=-1)
    elif not isinstance(ord, str) and ord in _MATRIX_ORDS:
        if 0 in x._shape[-2:]:
            raise ValueError(f"matrix_norm(): ord={ord} is undefined for empty matrices "
                             f"(x has shape {x._shape})")
        if builtins.abs(ord) == 2:
            values = svdvals(x)
        else:  # the largest/smallest absolute column (ord=±1) or row (ord=±inf) sum
            values = sum(abs(x), axis=-2 if builtins.abs(ord) == 1 else -1)
        result = (max if ord > 0 else min)(values, axis=-1)
    else:
        raise ValueError(f"matrix_norm(): ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, "
                         f"got {ord!r}")
    return reshape(result, (*result._shape, 1, 1)) if keepdims else result


observe_names(globals(), __all__, "linalg.")  # the hooks' operation point


# numpy's `linalg.norm` (not the standard's; numpy mode only), composed of the two norms above
from ._numpy_functions import norm  # noqa: E402, F401
