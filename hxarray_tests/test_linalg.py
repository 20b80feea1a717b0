"""The `linalg` extension against numpy as the oracle: values, dtypes, batches, empty and strided
inputs, argument errors and named-tuple results."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.array_api import make_strategies_namespace

import hxarray as xp

from .oracle import ON_EACH_DEVICE

pytestmark = ON_EACH_DEVICE

xps = make_strategies_namespace(xp)

FLOATING = [xp.float32, xp.float64, xp.complex64, xp.complex128]
REAL_OF = {xp.float32: xp.float32, xp.float64: xp.float64, xp.complex64: xp.float32,
           xp.complex128: xp.float64}
COMPLEX_OF = {xp.float32: xp.complex64, xp.float64: xp.complex128, xp.complex64: xp.complex64,
              xp.complex128: xp.complex128}
TOL = {xp.float32: 1e-4, xp.complex64: 1e-4, xp.float64: 1e-11, xp.complex128: 1e-11}
SQUARE = [(4, 4), (2, 3, 4, 4)]
GENERAL = [(5, 3), (3, 5), (2, 3, 4)]
LAYOUTS = ["contiguous", "transposed", "strided"]


# -- helpers -------------------------------------------------------------------------------------


def random(shape, dtype, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if dtype in (xp.complex64, xp.complex128):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype.numpy)


def invertible(shape, dtype, seed=0) -> np.ndarray:
    """Diagonally dominant, so well conditioned."""
    return (random(shape, dtype, seed) + 2 * shape[-1] * np.eye(shape[-1])).astype(dtype.numpy)


def hermitian_pd(shape, dtype, seed=0) -> np.ndarray:
    a = random(shape, dtype, seed)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(
        dtype.numpy)


def layout(a: np.ndarray, kind: str) -> xp.Array:
    """`a` as an hxarray array that is contiguous, a transposed view or a strided view."""
    if kind == "transposed":
        return xp.asarray(np.ascontiguousarray(np.swapaxes(a, -1, -2))).mT
    if kind == "strided":
        wide = np.zeros((*a.shape[:-1], 2 * a.shape[-1]), a.dtype)
        wide[..., ::2] = a
        return xp.asarray(wide)[..., ::2]
    return xp.asarray(a)


def wide(a: np.ndarray) -> np.ndarray:
    """`a` in double precision, for the oracle."""
    return a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)


def close(actual: xp.Array, expected, dtype, factor: float = 1.0) -> None:
    """Values within the dtype's tolerance, scaled to the size of the expected values."""
    expected = np.asarray(expected)
    tol = TOL[dtype] * factor
    scale = float(np.abs(expected).max()) if expected.size else 1.0
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=tol, atol=tol * max(scale, 1))


def adjoint(a: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(a, -1, -2))


class Unchanged:
    """Context manager that asserts the given arrays hold the same values afterwards."""

    def __init__(self, *arrays: xp.Array) -> None:
        self.arrays = arrays
        self.before = [np.array(a, copy=True) for a in arrays]

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> None:
        for a, before in zip(self.arrays, self.before):
            np.testing.assert_array_equal(np.asarray(a), before)


# -- signatures and results ----------------------------------------------------------------------

# name -> (positional-only parameters, keyword-only parameters) as the spec writes them
SIGNATURES = {
    "cholesky": (["x"], ["upper"]), "cross": (["x1", "x2"], ["axis"]), "det": (["x"], []),
    "diagonal": (["x"], ["offset"]), "eig": (["x"], []), "eigh": (["x"], []),
    "eigvals": (["x"], []), "eigvalsh": (["x"], []), "inv": (["x"], []),
    "matmul": (["x1", "x2"], []), "matrix_norm": (["x"], ["keepdims", "ord"]),
    "matrix_power": (["x", "n"], []), "matrix_rank": (["x"], ["rtol"]),
    "matrix_transpose": (["x"], []), "outer": (["x1", "x2"], []), "pinv": (["x"], ["rtol"]),
    "qr": (["x"], ["mode"]), "slogdet": (["x"], []), "solve": (["x1", "x2"], []),
    "svd": (["x"], ["full_matrices"]), "svdvals": (["x"], []),
    "tensordot": (["x1", "x2"], ["axes"]), "trace": (["x"], ["offset", "dtype"]),
    "vecdot": (["x1", "x2"], ["axis"]), "vector_norm": (["x"], ["axis", "keepdims", "ord"]),
}


def test_namespace_has_exactly_the_spec_functions():
    assert sorted(xp.linalg.__all__) == sorted(SIGNATURES)


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_signature(name):
    params = inspect.signature(getattr(xp.linalg, name)).parameters.values()
    positional, keyword = SIGNATURES[name]
    assert [p.name for p in params if p.kind is p.POSITIONAL_ONLY] == positional
    assert [p.name for p in params if p.kind is p.KEYWORD_ONLY] == keyword
    assert all(p.kind in (p.POSITIONAL_ONLY, p.KEYWORD_ONLY) for p in params)


def test_defaults():
    def default(name, param):
        return inspect.signature(getattr(xp.linalg, name)).parameters[param].default

    assert default("cholesky", "upper") is False
    assert default("qr", "mode") == "reduced"
    assert default("svd", "full_matrices") is True
    assert default("matrix_norm", "ord") == "fro"
    assert default("vector_norm", "ord") == 2
    assert default("matrix_rank", "rtol") is None and default("pinv", "rtol") is None


@pytest.mark.parametrize("name, fields", [
    ("eigh", ("eigenvalues", "eigenvectors")), ("eig", ("eigenvalues", "eigenvectors")),
    ("qr", ("Q", "R")), ("slogdet", ("sign", "logabsdet")), ("svd", ("U", "S", "Vh")),
])
def test_named_tuple_results(name, fields):
    result = getattr(xp.linalg, name)(xp.asarray(hermitian_pd((3, 3), xp.float64)))
    assert type(result) is not tuple and result._fields == fields
    assert type(result).__name__ == {"eigh": "EighResult", "eig": "EigResult", "qr": "QRResult",
                                     "slogdet": "SlogdetResult", "svd": "SVDResult"}[name]
    assert all(getattr(result, f) is result[i] for i, f in enumerate(fields))


def test_reexports_are_the_main_namespace_functions():
    for name in ("matmul", "matrix_transpose", "tensordot", "vecdot"):
        assert getattr(xp.linalg, name) is getattr(xp, name)


# -- functions with unique results, against numpy -----------------------------------------------


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("shape", SQUARE)
@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_square_functions(dtype, shape, kind):
    a = invertible(shape, dtype)
    x = layout(a, kind)
    with Unchanged(x):
        det = xp.linalg.det(x)
        assert det.dtype == dtype and det.shape == shape[:-2]
        close(det, np.linalg.det(wide(a)), dtype)

        sign, logabsdet = xp.linalg.slogdet(x)
        assert sign.dtype == dtype and logabsdet.dtype == REAL_OF[dtype]
        expected_sign, expected_log = np.linalg.slogdet(wide(a))
        close(sign, expected_sign, dtype)
        close(logabsdet, expected_log, dtype)

        inv = xp.linalg.inv(x)
        assert inv.dtype == dtype and inv.shape == shape
        close(inv, np.linalg.inv(wide(a)), dtype)

        for n in (-3, -1, 0, 1, 2, 5):
            power = xp.linalg.matrix_power(x, n)
            assert power.dtype == dtype and power.shape == shape
            close(power, np.linalg.matrix_power(wide(a), n), dtype, factor=10)


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_cholesky(dtype, upper, kind):
    a = hermitian_pd((2, 4, 4), dtype)
    x = layout(a, kind)
    with Unchanged(x):
        factor = xp.linalg.cholesky(x, upper=upper)
    assert factor.dtype == dtype and factor.shape == a.shape
    expected = np.linalg.cholesky(wide(a), upper=upper)
    close(factor, expected, dtype)
    triangle = np.triu if upper else np.tril
    np.testing.assert_array_equal(np.asarray(factor), triangle(np.asarray(factor)))


@pytest.mark.parametrize("dtypes", [(xp.float64, xp.float64), (xp.float32, xp.float32),
                                    (xp.float32, xp.float64), (xp.complex64, xp.float64),
                                    (xp.complex128, xp.complex128)], ids=str)
@pytest.mark.parametrize("shapes", [
    ((4, 4), (4,)), ((2, 3, 4, 4), (4,)), ((4, 4), (4, 2)), ((2, 1, 4, 4), (3, 4, 5)),
    ((4, 4), (2, 4, 3)), ((3, 3), (3, 0)),
])
def test_solve(dtypes, shapes):
    a = invertible(shapes[0], dtypes[0])
    b = random(shapes[1], dtypes[1], seed=1)
    x1, x2 = xp.asarray(a), xp.asarray(b)
    with Unchanged(x1, x2):
        result = xp.linalg.solve(x1, x2)
    dtype = xp.result_type(*dtypes)
    expected = np.linalg.solve(wide(a), wide(b))
    assert result.dtype == dtype and result.shape == expected.shape
    close(result, expected, dtype)


def test_solve_on_views():
    a, b = invertible((3, 4, 4), xp.float64), random((4, 3), xp.float64)
    result = xp.linalg.solve(layout(a, "transposed"), layout(b, "strided"))
    close(result, np.linalg.solve(a, b), xp.float64)


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("shape", GENERAL + SQUARE)
@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_singular_value_functions(dtype, shape, kind):
    a = random(shape, dtype)
    x = layout(a, kind)
    expected_s = np.linalg.svdvals(wide(a))
    with Unchanged(x):
        s = xp.linalg.svdvals(x)
        assert s.dtype == REAL_OF[dtype] and s.shape == expected_s.shape
        close(s, expected_s, dtype)

        pinv = xp.linalg.pinv(x)
        assert pinv.dtype == dtype and pinv.shape == (*shape[:-2], shape[-1], shape[-2])
        close(pinv, np.linalg.pinv(wide(a)), dtype, factor=10)

        rank = xp.linalg.matrix_rank(x)
        assert rank.dtype == xp.int64 and rank.shape == shape[:-2]
        np.testing.assert_array_equal(np.asarray(rank), np.linalg.matrix_rank(wide(a)))

        for ord in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
            for keepdims in (False, True):
                norm = xp.linalg.matrix_norm(x, ord=ord, keepdims=keepdims)
                expected = np.linalg.matrix_norm(wide(a), ord=ord, keepdims=keepdims)
                assert norm.dtype == REAL_OF[dtype] and norm.shape == expected.shape
                close(norm, expected, dtype)


@pytest.mark.parametrize("rtol", [0.5, 0.0, "array"])
def test_rtol(rtol):
    # singular values 4, 2, 1 (times a random orthogonal basis) in each matrix of a stack of 2
    q = np.linalg.qr(random((2, 3, 3), xp.float64))[0]
    a = q @ np.diag([4.0, 2.0, 1.0]) @ np.swapaxes(q, -1, -2)
    if rtol == "array":
        rtol, rtol_np = xp.asarray([0.3, 0.6], dtype=xp.float32), np.array([0.3, 0.6])
    else:
        rtol_np = rtol
    x = xp.asarray(a)
    np.testing.assert_array_equal(np.asarray(xp.linalg.matrix_rank(x, rtol=rtol)),
                                  np.linalg.matrix_rank(a, rtol=rtol_np))
    close(xp.linalg.pinv(x, rtol=rtol), np.linalg.pinv(a, rtol=rtol_np), xp.float64)


def test_matrix_rank_of_rank_deficient_matrices():
    a = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    assert int(xp.linalg.matrix_rank(xp.asarray(a))) == 1
    assert int(xp.linalg.matrix_rank(xp.zeros((3, 4)))) == 0
    close(xp.linalg.pinv(xp.asarray(a)), np.linalg.pinv(a.astype(np.float64)), xp.float32)


def test_matrix_power_of_one_returns_a_new_array():
    x = xp.asarray(invertible((3, 3), xp.float64))
    power = xp.linalg.matrix_power(x, 1)
    assert power is not x and power.buffer is not x.buffer
    close(power, np.asarray(x), xp.float64)


# -- decompositions without unique results: check their defining properties -----------------------


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_eigh(dtype, kind):
    a = hermitian_pd((2, 5, 5), dtype)
    x = layout(a, kind)
    with Unchanged(x):
        w, v = xp.linalg.eigh(x)
        values = xp.linalg.eigvalsh(x)
    assert w.dtype == values.dtype == REAL_OF[dtype] and v.dtype == dtype
    assert w.shape == values.shape == (2, 5) and v.shape == (2, 5, 5)
    expected = np.linalg.eigvalsh(wide(a))
    close(w, expected, dtype)
    close(values, expected, dtype)
    v, w = np.asarray(v), np.asarray(w)
    close(adjoint(v) @ v, np.broadcast_to(np.eye(5), v.shape), dtype)
    close(v @ (w[..., None] * adjoint(v)), wide(a), dtype)


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_eig(dtype, kind):
    a = random((3, 4, 4), dtype, seed=3)  # real random matrices have complex eigenvalues
    x = layout(a, kind)
    with Unchanged(x):
        w, v = xp.linalg.eig(x)
        values = xp.linalg.eigvals(x)
    assert w.dtype == v.dtype == values.dtype == COMPLEX_OF[dtype]
    assert w.shape == values.shape == (3, 4) and v.shape == (3, 4, 4)
    expected = np.sort_complex(np.linalg.eigvals(wide(a)))
    close(np.sort_complex(np.asarray(w)), expected, dtype, factor=10)
    close(np.sort_complex(np.asarray(values)), expected, dtype, factor=10)
    v, w = np.asarray(v), np.asarray(w)
    close(wide(a) @ v, v * w[..., None, :], dtype, factor=10)


def test_eig_of_real_eigenvalues_is_complex():
    w, v = xp.linalg.eig(xp.eye(3, dtype=xp.float32))
    assert w.dtype == v.dtype == xp.complex64
    np.testing.assert_array_equal(np.asarray(w), np.ones(3))


@pytest.mark.parametrize("mode", ["reduced", "complete"])
@pytest.mark.parametrize("shape", GENERAL + SQUARE)
@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_qr(dtype, shape, mode):
    a = random(shape, dtype)
    x = layout(a, "transposed")
    with Unchanged(x):
        q, r = xp.linalg.qr(x, mode=mode)
    *batch, m, n = shape
    k = m if mode == "complete" else min(m, n)
    assert q.dtype == r.dtype == dtype
    assert q.shape == (*batch, m, k) and r.shape == (*batch, k, n)
    q, r = np.asarray(q), np.asarray(r)
    np.testing.assert_array_equal(r, np.triu(r))
    close(adjoint(q) @ q, np.broadcast_to(np.eye(k), (*batch, k, k)), dtype)
    close(q @ r, wide(a), dtype)


@pytest.mark.parametrize("full_matrices", [True, False])
@pytest.mark.parametrize("shape", GENERAL + SQUARE)
@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_svd(dtype, shape, full_matrices):
    a = random(shape, dtype)
    x = layout(a, "strided")
    with Unchanged(x):
        u, s, vh = xp.linalg.svd(x, full_matrices=full_matrices)
    *batch, m, n = shape
    k = min(m, n)
    assert u.dtype == vh.dtype == dtype and s.dtype == REAL_OF[dtype]
    assert s.shape == (*batch, k)
    assert u.shape == (*batch, m, m if full_matrices else k)
    assert vh.shape == (*batch, n if full_matrices else k, n)
    u, s, vh = np.asarray(u), np.asarray(s), np.asarray(vh)
    assert np.all(s[..., :-1] >= s[..., 1:])
    close(s, np.linalg.svdvals(wide(a)), dtype)
    close(adjoint(u) @ u, np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2),
          dtype)
    close((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], wide(a), dtype)


# -- norms ---------------------------------------------------------------------------------------

VECTOR_ORDS = [2, 1, 0, -1, -2, math.inf, -math.inf, 3, 0.5, -2.5]


@pytest.mark.parametrize("ord", VECTOR_ORDS)
@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_vector_norm(dtype, ord):
    a = random((3, 4, 5), dtype)
    a[0, 0, :2] = 0  # zeros matter for ord <= 0
    x = layout(a, "transposed")
    with Unchanged(x):
        for axis in (None, -1, 0, (0, 2), (2, 0, 1)):
            for keepdims in (False, True):
                norm = xp.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
                with np.errstate(divide="ignore"):
                    expected = np.linalg.vector_norm(wide(a), axis=axis, keepdims=keepdims,
                                                     ord=ord)
                assert norm.dtype == REAL_OF[dtype] and norm.shape == expected.shape
                close(norm, expected, dtype, factor=10)


def test_vector_norm_of_empty_axes_and_vectors():
    x = xp.asarray(random((2, 3), xp.float64))
    close(xp.linalg.vector_norm(x, axis=()), np.abs(np.asarray(x)), xp.float64)
    empty = xp.zeros((0, 3))
    assert xp.linalg.vector_norm(empty, axis=0).shape == (3,)
    np.testing.assert_array_equal(np.asarray(xp.linalg.vector_norm(empty, axis=0)), 0)
    with pytest.raises(ValueError, match="vector_norm"):
        xp.linalg.vector_norm(empty, axis=0, ord=math.inf)


@given(x=xps.arrays(xps.floating_dtypes(), xps.array_shapes(min_dims=1, max_dims=3),
                    elements={"min_value": -1e3, "max_value": 1e3, "allow_nan": False}),
       data=st.data())
def test_vector_norm_property(x, data):
    axis = data.draw(st.none() | xps.valid_tuple_axes(x.ndim, min_size=1), label="axis")
    ord = data.draw(st.sampled_from(VECTOR_ORDS) | st.integers(-4, 4), label="ord")
    norm = xp.linalg.vector_norm(x, axis=axis, ord=ord)
    with np.errstate(all="ignore"):
        expected = np.linalg.vector_norm(wide(np.asarray(x)), axis=axis, ord=ord)
    assert norm.dtype == REAL_OF[x.dtype] and norm.shape == expected.shape
    close(norm, expected, x.dtype, factor=100)


# -- diagonal, trace, cross, outer ---------------------------------------------------------------


@pytest.mark.parametrize("offset", [-3, -1, 0, 1, 2, 10])
@pytest.mark.parametrize("shape", [
    (3, 4), (2, 4, 3), (3, 0), (0, 3, 3),
])
def test_diagonal_and_trace(shape, offset):
    a = np.arange(math.prod(shape), dtype=np.int32).reshape(shape)
    x = xp.asarray(a)
    d = xp.linalg.diagonal(x, offset=offset)
    assert d.dtype == xp.int32 and d.buffer is x.buffer
    np.testing.assert_array_equal(np.asarray(d), np.diagonal(a, offset, -2, -1))
    t = xp.linalg.trace(x, offset=offset)
    assert t.dtype == xp.int64 and t.shape == shape[:-2]
    np.testing.assert_array_equal(np.asarray(t), np.trace(a, offset, -2, -1))
    tv = xp.linalg.trace(x.mT, offset=offset)
    np.testing.assert_array_equal(np.asarray(tv), np.trace(a, offset, -1, -2))


@pytest.mark.parametrize("dtype, expected", [
    (xp.int8, xp.int64), (xp.int64, xp.int64), (xp.uint8, xp.uint64), (xp.uint64, xp.uint64),
    (xp.float32, xp.float32), (xp.complex64, xp.complex64), (xp.float64, xp.float64),
], ids=str)
def test_trace_dtype(dtype, expected):
    x = xp.ones((2, 3, 3), dtype=dtype)
    assert xp.linalg.trace(x).dtype == expected
    wider = xp.complex128 if dtype == xp.complex64 else xp.float64
    assert xp.linalg.trace(x, dtype=wider).dtype == wider
    np.testing.assert_array_equal(np.asarray(xp.linalg.trace(x)), [3, 3])


@given(x=xps.arrays(xps.numeric_dtypes(), xps.array_shapes(min_dims=2, max_dims=4, max_side=4)),
       offset=st.integers(-5, 5))
def test_trace_property(x, offset):
    expected = np.trace(np.asarray(x), offset, -2, -1, dtype=xp.linalg.trace(x).dtype.numpy)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(np.asarray(xp.linalg.trace(x, offset=offset)), expected,
                                   rtol=1e-5)


@pytest.mark.parametrize("shapes, axis", [
    (((3,), (3,)), -1), (((4, 3), (3,)), -1), (((2, 1, 3), (4, 3)), -1), (((3, 5), (3, 5)), -2),
    (((2, 3, 1), (1, 3, 4)), -2), (((0, 3), (1, 3)), -1),
])
@pytest.mark.parametrize("dtypes", [(xp.int64, xp.int64), (xp.int8, xp.int16),
                                    (xp.float32, xp.float64), (xp.complex128, xp.float64)],
                         ids=str)
def test_cross(shapes, axis, dtypes):
    a = (random(shapes[0], xp.float64) * 10).astype(dtypes[0].numpy)
    b = (random(shapes[1], xp.float64, seed=1) * 10).astype(dtypes[1].numpy)
    x1, x2 = xp.asarray(a), xp.asarray(b)
    with Unchanged(x1, x2):
        result = xp.linalg.cross(x1, x2, axis=axis)
    expected = np.cross(a, b, axis=axis)
    assert result.dtype == xp.result_type(*dtypes) and result.shape == expected.shape
    np.testing.assert_allclose(np.asarray(result), expected, rtol=1e-6)


@pytest.mark.parametrize("dtypes", [(xp.int32, xp.int32), (xp.uint8, xp.int8),
                                    (xp.float32, xp.complex128)], ids=str)
@pytest.mark.parametrize("sizes", [(3, 4), (1, 5), (0, 2)])
def test_outer(dtypes, sizes):
    a = np.arange(1, sizes[0] + 1).astype(dtypes[0].numpy)
    b = np.arange(2, sizes[1] + 2).astype(dtypes[1].numpy)
    result = xp.linalg.outer(xp.asarray(a), xp.asarray(b)[::-1])
    assert result.dtype == xp.result_type(*dtypes) and result.shape == sizes
    np.testing.assert_array_equal(np.asarray(result), np.outer(a, b[::-1]))


# -- empty stacks and empty matrices -------------------------------------------------------------


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3)])
def test_empty_square(shape):
    x = xp.zeros(shape, dtype=xp.float32)
    a = np.zeros(shape, np.float32)
    for name in ("det", "inv", "eigvalsh", "eigvals", "svdvals", "cholesky"):
        result = getattr(xp.linalg, name)(x)
        expected = getattr(np.linalg, name)(a)
        assert result.shape == expected.shape, name
    assert xp.linalg.matrix_power(x, 0).shape == shape
    assert xp.linalg.matrix_power(x, 3).shape == shape
    assert xp.linalg.matrix_rank(x).shape == shape[:-2]
    assert xp.linalg.trace(x).shape == shape[:-2]
    for result in (*xp.linalg.eigh(x), *xp.linalg.eig(x), *xp.linalg.slogdet(x)):
        assert result.shape[:len(shape) - 2] == shape[:-2]


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 3)])
def test_empty_matrices(shape):
    x = xp.zeros(shape)
    pinv = xp.linalg.pinv(x)
    assert pinv.shape == (*shape[:-2], shape[-1], shape[-2])
    np.testing.assert_array_equal(np.asarray(pinv), 0)
    np.testing.assert_array_equal(np.asarray(xp.linalg.matrix_rank(x)), 0)
    np.testing.assert_array_equal(np.asarray(xp.linalg.matrix_norm(x)), 0)
    np.testing.assert_array_equal(np.asarray(xp.linalg.matrix_norm(x, ord="nuc")), 0)
    q, r = xp.linalg.qr(x)
    u, s, vh = xp.linalg.svd(x, full_matrices=False)
    assert q.shape[-1] == r.shape[-2] == s.shape[-1] == u.shape[-1] == vh.shape[-2] == 0
    with pytest.raises(ValueError, match="matrix_norm"):
        xp.linalg.matrix_norm(x, ord=2)


# -- argument errors -----------------------------------------------------------------------------

# The operands of the cases below, made in the test (on its device).
def square() -> xp.Array:
    return xp.ones((3, 3))


def ints() -> xp.Array:
    return xp.ones((3, 3), dtype=xp.int64)


def row() -> xp.Array:
    return xp.ones((2, 3))


def vec() -> xp.Array:
    return xp.ones((3,))


BAD_DTYPE = [
    *[(name, lambda f: f(ints())) for name in (
        "cholesky", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "matrix_norm",
        "matrix_rank", "pinv", "qr", "slogdet", "svd", "svdvals", "vector_norm")],
    ("matrix_power", lambda f: f(ints(), 2)),
    ("solve", lambda f: f(square(), xp.ones(3, dtype=xp.int32))),
    ("cross", lambda f: f(xp.ones(3, dtype=xp.bool), vec())),
    ("cross", lambda f: f(xp.ones(3, dtype=xp.int8), vec())),
    ("outer", lambda f: f(xp.ones(3, dtype=xp.int8), vec())),
    ("outer", lambda f: f(xp.ones(3, dtype=xp.bool), vec())),
    ("trace", lambda f: f(xp.ones((2, 2), dtype=xp.bool))),
    ("matrix_rank", lambda f: f(square(), rtol=xp.ones((), dtype=xp.int32))),
    ("pinv", lambda f: f(square(), rtol="big")),
    ("matrix_power", lambda f: f(square(), 2.0)),
    ("diagonal", lambda f: f(square(), offset=1.5)),
    ("cross", lambda f: f(vec(), vec(), axis=1.0)),
    ("vector_norm", lambda f: f(square(), ord="fro")),
    ("det", lambda f: f(np.ones((2, 2)))),
    ("solve", lambda f: f(square(), [1.0, 2.0, 3.0])),
]

BAD_VALUE = [
    *[(name, lambda f: f(vec())) for name in (
        "cholesky", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv",
        "matrix_norm", "matrix_rank", "pinv", "qr", "slogdet", "svd", "svdvals", "trace")],
    *[(name, lambda f: f(row())) for name in (
        "cholesky", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "slogdet")],
    ("matrix_power", lambda f: f(row(), 2)),
    ("solve", lambda f: f(row(), vec())),
    ("solve", lambda f: f(square(), xp.ones(2))),
    ("solve", lambda f: f(square(), xp.ones((3, 2, 1)))),
    ("solve", lambda f: f(xp.ones((2, 3, 3)), xp.ones((3, 3, 1)))),
    ("solve", lambda f: f(square(), xp.ones(()))),
    ("qr", lambda f: f(square(), mode="r")),
    ("matrix_norm", lambda f: f(square(), ord=3)),
    ("matrix_norm", lambda f: f(square(), ord="inf")),
    ("vector_norm", lambda f: f(square(), ord=math.nan)),
    ("vector_norm", lambda f: f(square(), axis=(0, 0))),
    ("vector_norm", lambda f: f(square(), axis=2)),
    ("matrix_rank", lambda f: f(xp.ones((2, 3, 3)), rtol=xp.ones(3))),
    ("cross", lambda f: f(xp.ones(4), xp.ones(4))),
    ("cross", lambda f: f(xp.ones((3, 2)), xp.ones((3, 2)))),
    ("cross", lambda f: f(vec(), vec(), axis=0)),
    ("cross", lambda f: f(vec(), vec(), axis=-2)),
    ("cross", lambda f: f(xp.ones(()), vec())),
    ("cross", lambda f: f(xp.ones((2, 3)), xp.ones((4, 3)))),
    ("outer", lambda f: f(square(), vec())),
]


@pytest.mark.strict
@pytest.mark.parametrize("name, call", BAD_DTYPE, ids=[n for n, _ in BAD_DTYPE])
def test_type_errors(name, call):
    with pytest.raises(TypeError, match=name):
        call(getattr(xp.linalg, name))


@pytest.mark.parametrize("name, call", BAD_VALUE, ids=[n for n, _ in BAD_VALUE])
def test_value_errors(name, call):
    with pytest.raises(ValueError, match=name):
        call(getattr(xp.linalg, name))


@pytest.mark.parametrize("name, x", [
    ("inv", xp.zeros((2, 2))), ("solve", xp.zeros((2, 2))), ("cholesky", -xp.eye(2)),
    ("matrix_power", xp.zeros((2, 2))),
])
def test_singular_input_raises_value_error(name, x):
    args = {"solve": (x, xp.ones(2)), "matrix_power": (x, -1)}.get(name, (x,))
    with pytest.raises(ValueError, match=r"\(\): "):
        getattr(xp.linalg, name)(*args)
