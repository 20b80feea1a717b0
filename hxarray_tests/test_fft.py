"""The `fft` extension against numpy.fft as the oracle: values, precision, lengths, axes, norms,
strided inputs, argument errors."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.array_api import make_strategies_namespace

import hxarray as xp

from .oracle import ON_EACH_DEVICE

pytestmark = ON_EACH_DEVICE

xps = make_strategies_namespace(xp)

NORMS = ["backward", "ortho", "forward"]
TOL = {xp.float32: 2e-5, xp.complex64: 2e-5, xp.float64: 1e-12, xp.complex128: 1e-12}
COMPLEX_OF = {xp.float32: xp.complex64, xp.float64: xp.complex128}
REAL_OF = {xp.complex64: xp.float32, xp.complex128: xp.float64}

# name -> (input dtypes, output dtype of each)
ONE_D = {
    "fft": (xp.complex64, xp.complex128), "ifft": (xp.complex64, xp.complex128),
    "rfft": (xp.float32, xp.float64), "irfft": (xp.complex64, xp.complex128),
    "hfft": (xp.complex64, xp.complex128), "ihfft": (xp.float32, xp.float64),
}
N_D = {"fftn": ONE_D["fft"], "ifftn": ONE_D["ifft"], "rfftn": ONE_D["rfft"],
       "irfftn": ONE_D["irfft"]}
REAL_INPUT = {"rfft", "ihfft", "rfftn"}
REAL_OUTPUT = {"irfft", "hfft", "irfftn"}


def random(shape, dtype, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if dtype in (xp.complex64, xp.complex128):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype.numpy)


def wide(a: np.ndarray) -> np.ndarray:
    return a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)


def expected_dtype(name: str, dtype):
    if name in REAL_INPUT:
        return COMPLEX_OF[dtype]
    return REAL_OF[dtype] if name in REAL_OUTPUT else dtype


def close(actual: xp.Array, expected: np.ndarray, dtype) -> None:
    tol = TOL[dtype]
    scale = max(float(np.abs(expected).max()), 1.0) if expected.size else 1.0
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=tol * 10, atol=tol * scale)


def strided(a: np.ndarray) -> xp.Array:
    """`a` as a non-contiguous view (every other element of the last axis)."""
    wide_buffer = np.zeros((*a.shape[:-1], 2 * a.shape[-1]), a.dtype)
    wide_buffer[..., ::2] = a
    return xp.asarray(wide_buffer)[..., ::2]


# -- signatures ----------------------------------------------------------------------------------

TRANSFORMS_1D = sorted(ONE_D)
TRANSFORMS_ND = sorted(N_D)


def test_namespace_has_exactly_the_spec_functions():
    assert sorted(xp.fft.__all__) == sorted([*ONE_D, *N_D, "fftfreq", "rfftfreq", "fftshift",
                                             "ifftshift"])


@pytest.mark.parametrize("name", sorted(xp.fft.__all__))
def test_signature(name):
    params = list(inspect.signature(getattr(xp.fft, name)).parameters.values())
    keywords = {
        **{n: ["n", "axis", "norm"] for n in ONE_D}, **{n: ["s", "axes", "norm"] for n in N_D},
        "fftfreq": ["d", "dtype", "device"], "rfftfreq": ["d", "dtype", "device"],
        "fftshift": ["axes"], "ifftshift": ["axes"],
    }[name]
    assert params[0].kind is params[0].POSITIONAL_ONLY
    assert [p.name for p in params[1:]] == keywords
    assert all(p.kind is p.KEYWORD_ONLY for p in params[1:])
    defaults = {"n": None, "axis": -1, "norm": "backward", "s": None, "axes": None, "d": 1.0,
                "dtype": None, "device": None}
    assert all(p.default == defaults[p.name] for p in params[1:])


# -- one-dimensional transforms ------------------------------------------------------------------


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", TRANSFORMS_1D)
@pytest.mark.parametrize("precision", [0, 1], ids=["single", "double"])
def test_one_dimensional(name, precision, norm):
    dtype = ONE_D[name][precision]
    a = random((3, 6, 5), dtype)
    x = xp.asarray(a)
    before = a.copy()
    oracle = getattr(np.fft, name)
    for axis in (-1, 0, 1):
        for n in (None, 1, 4, 5, 9):
            result = getattr(xp.fft, name)(x, n=n, axis=axis, norm=norm)
            expected = oracle(wide(a), n=n, axis=axis, norm=norm)
            assert result.dtype == expected_dtype(name, dtype)
            assert result.shape == expected.shape
            close(result, expected, dtype)
    np.testing.assert_array_equal(np.asarray(x), before)


@pytest.mark.parametrize("name", TRANSFORMS_1D)
def test_one_dimensional_on_views(name):
    dtype = ONE_D[name][1]
    a = random((4, 6), dtype)
    function, oracle = getattr(xp.fft, name), getattr(np.fft, name)
    close(function(strided(a)), oracle(a), dtype)
    close(function(xp.asarray(np.ascontiguousarray(a.T)).mT, axis=0), oracle(a, axis=0), dtype)
    close(function(xp.asarray(a)[::-2], n=7), oracle(a[::-2], n=7), dtype)


@pytest.mark.parametrize("pair", [("fft", "ifft"), ("rfft", "irfft"), ("ihfft", "hfft")])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [7, 8])
def test_round_trips(pair, norm, n):
    forward, inverse = (getattr(xp.fft, name) for name in pair)
    dtype = ONE_D[pair[0]][1]
    a = random((2, n), dtype)
    back = inverse(forward(xp.asarray(a), norm=norm), n=n, norm=norm)
    close(back, a, dtype)


def test_zero_size_batches():
    x = xp.zeros((0, 4), dtype=xp.complex64)
    assert xp.fft.fft(x).shape == (0, 4)
    assert xp.fft.irfft(x).shape == (0, 6)
    assert xp.fft.fftn(x, s=(8,), axes=(1,)).shape == (0, 8)


# -- n-dimensional transforms --------------------------------------------------------------------

N_D_CASES = [
    (None, None), (None, (0,)), (None, (-1, 0)), ((4, 3), (0, 2)), ((2,), (1,)),
    ((5, -1), (2, 1)), ((-1, -1, 3), (0, 1, 2)), ((3, 5), (-1, -2)),
]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("s, axes", N_D_CASES, ids=str)
@pytest.mark.parametrize("name", TRANSFORMS_ND)
@pytest.mark.parametrize("precision", [0, 1], ids=["single", "double"])
def test_n_dimensional(name, precision, s, axes, norm):
    dtype = N_D[name][precision]
    a = random((3, 4, 6), dtype)
    x = strided(a) if precision else xp.asarray(a)
    before = a.copy()
    result = getattr(xp.fft, name)(x, s=s, axes=axes, norm=norm)
    if s is not None:  # -1 means the default length, which numpy gets wrong for irfftn
        last = len(s) - 1
        s = [(2 * (a.shape[ax] - 1) if i == last and name == "irfftn" else a.shape[ax])
             if n == -1 else n for i, (n, ax) in enumerate(zip(s, axes))]
    expected = getattr(np.fft, name)(wide(a), s=s, axes=axes, norm=norm)
    assert result.dtype == expected_dtype(name, dtype) and result.shape == expected.shape
    close(result, expected, dtype)
    np.testing.assert_array_equal(np.asarray(x), before)


def test_n_dimensional_over_no_axes_is_a_copy():
    x = xp.asarray(random((2, 3), xp.complex128))
    result = xp.fft.fftn(x, axes=())
    assert result.buffer is not x.buffer
    np.testing.assert_array_equal(np.asarray(result), np.asarray(x))
    assert xp.fft.ifftn(xp.asarray(1j)).shape == ()


def test_rfftn_round_trip_with_odd_last_length():
    a = random((4, 5, 7), xp.float64)
    spectrum = xp.fft.rfftn(xp.asarray(a), axes=(0, 2))
    assert spectrum.shape == (4, 5, 4)
    close(xp.fft.irfftn(spectrum, s=(4, 7), axes=(0, 2)), a, xp.float64)


@given(x=xps.arrays(xps.complex_dtypes(), xps.array_shapes(min_dims=1, max_dims=3, max_side=6),
                    elements=st.complex_numbers(max_magnitude=100, allow_nan=False,
                                                allow_infinity=False, width=64)),
       data=st.data())
def test_fft_property(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    n = data.draw(st.none() | st.integers(1, 10), label="n")
    norm = data.draw(st.sampled_from(NORMS), label="norm")
    if n is None and x.shape[axis] == 0:
        return
    result = xp.fft.fft(x, n=n, axis=axis, norm=norm)
    expected = np.fft.fft(wide(np.asarray(x)), n=n, axis=axis, norm=norm)
    assert result.dtype == x.dtype
    close(result, expected, x.dtype)


# -- frequencies and shifts ----------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 5, 8])
@pytest.mark.parametrize("d", [1.0, 0.25, 3])
@pytest.mark.parametrize("dtype", [None, xp.float32, xp.float64], ids=str)
def test_frequencies(n, d, dtype):
    for name in ("fftfreq", "rfftfreq"):
        result = getattr(xp.fft, name)(n, d=d, dtype=dtype, device="cpu")
        assert result.dtype == (dtype or xp.float64) and result.device == xp.Device("cpu")
        close(result, getattr(np.fft, name)(n, d=d), dtype or xp.float64)


@pytest.mark.parametrize("axes", [None, 0, -1, (0, 2), [2, 1]])
@pytest.mark.parametrize("dtype", [xp.float32, xp.complex128], ids=str)
def test_shifts(axes, dtype):
    a = random((4, 5, 3), dtype)
    x = xp.asarray(a)
    shifted = xp.fft.fftshift(x, axes=axes)
    assert shifted.dtype == dtype
    np.testing.assert_array_equal(np.asarray(shifted), np.fft.fftshift(a, axes=axes))
    np.testing.assert_array_equal(np.asarray(xp.fft.ifftshift(x, axes=axes)),
                                  np.fft.ifftshift(a, axes=axes))
    np.testing.assert_array_equal(np.asarray(xp.fft.ifftshift(shifted, axes=axes)), a)
    np.testing.assert_array_equal(np.asarray(xp.fft.fftshift(x.mT)), np.fft.fftshift(a.mT))
    np.testing.assert_array_equal(np.asarray(x), a)


def test_shift_centres_frequency_zero():
    centred = np.asarray(xp.fft.fftshift(xp.fft.fftfreq(7)))
    assert centred[3] == 0 and np.all(np.diff(centred) > 0)


# -- argument errors -----------------------------------------------------------------------------

C = xp.ones((4, 4), dtype=xp.complex128)
R = xp.ones((4, 4))

BAD_TYPE = [
    *[(name, lambda f: f(R)) for name in ("fft", "ifft", "irfft", "hfft")],
    *[(name, lambda f: f(R)) for name in ("fftn", "ifftn", "irfftn")],
    *[(name, lambda f: f(C)) for name in ("rfft", "ihfft", "rfftn")],
    *[(name, lambda f: f(xp.ones(4, dtype=xp.int64))) for name in (
        "fft", "rfft", "fftn", "fftshift", "ifftshift")],
    ("fft", lambda f: f(C, n=2.5)),
    ("fft", lambda f: f(C, n=True)),
    ("fft", lambda f: f(np.ones(4, complex))),
    ("fftn", lambda f: f(C, s=(4.0,), axes=(0,))),
    ("fftn", lambda f: f(C, axes=0)),
    ("fftn", lambda f: f(C, s=4, axes=(0,))),
    ("fftfreq", lambda f: f(4.0)),
    ("fftfreq", lambda f: f(4, dtype=xp.int32)),
    ("rfftfreq", lambda f: f(4, dtype=xp.complex64)),
    ("rfftfreq", lambda f: f(4, d="1")),
]

BAD_VALUE = [
    ("fft", lambda f: f(C, n=0)),
    ("fft", lambda f: f(C, norm="none")),
    ("fft", lambda f: f(xp.ones((0,), dtype=xp.complex64))),
    ("irfft", lambda f: f(xp.ones((1,), dtype=xp.complex64))),
    ("hfft", lambda f: f(C, n=-4)),
    ("fft", lambda f: f(C, axis=2)),
    ("fftn", lambda f: f(C, s=(4, 4))),
    ("fftn", lambda f: f(C, s=(4,), axes=(0, 1))),
    ("fftn", lambda f: f(C, axes=(0, 0))),
    ("fftn", lambda f: f(C, axes=(0, 2))),
    ("ifftn", lambda f: f(C, s=(0,), axes=(1,))),
    ("rfftn", lambda f: f(R, axes=())),
    ("irfftn", lambda f: f(C, norm="ortho ")),
    ("fftfreq", lambda f: f(0)),
    ("rfftfreq", lambda f: f(4, d=0.0)),
    ("fftfreq", lambda f: f(4, device="nowhere")),
    ("fftshift", lambda f: f(R, axes=(2,))),
]


@pytest.mark.strict
@pytest.mark.parametrize("name, call", BAD_TYPE, ids=[n for n, _ in BAD_TYPE])
def test_type_errors(name, call):
    with pytest.raises(TypeError, match=name):
        call(getattr(xp.fft, name))


@pytest.mark.parametrize("name, call", BAD_VALUE, ids=[n for n, _ in BAD_VALUE])
def test_value_errors(name, call):
    with pytest.raises(ValueError, match=name):
        call(getattr(xp.fft, name))
