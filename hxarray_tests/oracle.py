"""Helpers for checking hxarray against numpy, the tests' oracle: dtype lists, sample data that
reaches every awkward value, views that are not C-contiguous, and an exact comparison."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from hypothesis.extra.array_api import make_strategies_namespace

import hxarray as xp
from hxarray.backends.cpu.parallel import Thresholds
from hxarray.plugin import undetermined

from .conftest import DEVICES

xps = make_strategies_namespace(xp)

# Runs every test of a module once per usable device (the `device` fixture in conftest.py).
ON_EACH_DEVICE = pytest.mark.usefixtures("device")
# Runs a test of such a module on the CPU alone: for what only host memory does (numpy views of
# an array, memory shared with numpy without a copy).
CPU_ONLY = pytest.mark.parametrize("device", [xp.Device("cpu")], ids=["cpu"])
# Runs a test of such a module on the CUDA devices alone (the simulator's cuda:0 in `make test`;
# none where CUDA cannot run), each the test's default device as the `device` fixture makes it.
ON_CUDA = pytest.mark.parametrize("device", [d for d in DEVICES if d.type is xp.DeviceType.CUDA],
                                  indirect=True, ids=str)

BOOL = (xp.bool,)
SIGNED = (xp.int8, xp.int16, xp.int32, xp.int64)
UNSIGNED = (xp.uint8, xp.uint16, xp.uint32, xp.uint64)
INTEGER = SIGNED + UNSIGNED
# numpy mode's float16 is in the lists: tests run in numpy mode unless marked `strict` (strict
# mode refuses float16; its tests take STANDARD_* or leave float16 out).
REAL_FLOATING = (xp.float16, xp.float32, xp.float64)
STANDARD_REAL_FLOATING = (xp.float32, xp.float64)
COMPLEX_FLOATING = (xp.complex64, xp.complex128)
FLOATING = REAL_FLOATING + COMPLEX_FLOATING
NUMERIC = INTEGER + FLOATING
REAL = INTEGER + REAL_FLOATING
DTYPES = BOOL + NUMERIC
STANDARD_DTYPES = tuple(d for d in DTYPES if d is not xp.float16)  # strict mode's


def standard(dtypes: tuple[xp.DType, ...]) -> tuple[xp.DType, ...]:
    """The standard's dtypes among `dtypes`: what strict mode's tests take."""
    return tuple(d for d in dtypes if d in STANDARD_DTYPES)


# A second device: the toy plug-in backend (hxarray_tests/plugin_pkg), when it is installed.
TOY = next((d for d in xp.__array_namespace_info__().devices() if d.type.name == "toy"), None)
needs_toy = pytest.mark.skipif(TOY is None, reason="needs the toy backend plug-in "
                               "(pip install -e hxarray_tests/plugin_pkg)")


# What functions whose return type changed in 2025.12 return under the presented version.
SEQUENCE = tuple if xp.__array_api_version__ >= "2025.12" else list


def here(value: object) -> object:
    """`value` with every array in it (also inside tuples) moved to the default device: for
    arrays made when the tests are collected, before a test picks its device."""
    if isinstance(value, tuple):
        return tuple(here(v) for v in value)
    if isinstance(value, xp.Array):
        return value.to_device(xp.__array_namespace_info__().default_device())
    return value


def ids(dtypes: tuple[xp.DType, ...]) -> list[str]:
    return [d.name for d in dtypes]


def np_dtype(dtype: xp.DType) -> np.dtype:
    return np.dtype(dtype.name)


def assert_matches(actual: xp.Array, expected: np.ndarray | object) -> None:
    """`actual` is an hxarray Array equal to `expected` in dtype, shape and every value: NaNs
    (also inside complex numbers) in the same places and zeros with the same sign (a NaN's sign
    is not a value: the standard leaves it open, and devices' NaNs differ in it)."""
    assert type(actual) is xp.Array, f"expected an hxarray Array, got {type(actual).__name__}"
    expected = np.asarray(expected)
    assert actual.dtype.name == expected.dtype.name, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    got = np.asarray(actual)
    np.testing.assert_array_equal(got, expected, strict=True)
    if got.dtype.kind in "fc":
        for part in (np.real, np.imag):
            number = ~np.isnan(part(got))
            np.testing.assert_array_equal(np.signbit(part(got))[number],
                                          np.signbit(part(expected))[number],
                                          err_msg="signs of zeros differ")


# Devices that compute with numpy's own kernels, which the oracle can hold to numpy's bits.
NUMPY_DEVICES = frozenset({"cpu", "toy", "ref"})


def assert_close(got: np.ndarray, expected: np.ndarray, ulps: int, err_msg: str = "") -> None:
    """`got` equals `expected` up to `ulps` units in the last place (of the dtype's precision,
    relative to the larger magnitude) in each finite value; NaNs, infinities and the signs of
    zeros (among values both call zero) exactly alike, part by part for complex numbers."""
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, got.shape)
    for part in (np.real, np.imag) if got.dtype.kind == "c" else (np.asarray,):
        g, e = part(got), part(expected)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(e), err_msg=f"{err_msg}: NaNs")
        finite = np.isfinite(e) & np.isfinite(g)
        np.testing.assert_array_equal(g[~finite & ~np.isnan(e)], e[~finite & ~np.isnan(e)],
                                      err_msg=f"{err_msg}: infinities")
        zeros = finite & (g == 0) & (e == 0)
        np.testing.assert_array_equal(np.signbit(g[zeros]), np.signbit(e[zeros]),
                                      err_msg=f"{err_msg}: signs of zeros")
        eps = np.finfo(g.dtype).eps
        scale = np.maximum(np.abs(g[finite]), np.abs(e[finite])).astype(np.float64)
        tiny = np.finfo(g.dtype).tiny
        error = np.abs(g[finite].astype(np.float64) - e[finite])
        bad = error > ulps * eps * np.maximum(scale, tiny)
        assert not bad.any(), (f"{err_msg}: {bad.sum()} values differ by more than {ulps} ulp, "
                               f"e.g. {g[finite][bad][:3]} against {e[finite][bad][:3]}")


# What a device's own math library rounds its own way: transcendental functions, and complex
# products and quotients (several roundings each). Elsewhere results are exact on every device.
ROUNDED = {"acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "exp", "expm1",
           "log", "log1p", "log2", "log10", "sin", "sinh", "tan", "tanh", "atan2", "hypot",
           "logaddexp", "pow"}
ROUNDED_COMPLEX = ROUNDED | {"abs", "divide", "multiply", "reciprocal", "sign", "sqrt", "square"}
# pow's rounding error grows with the exponent (x**y = exp(y log x)): implementations differ more.
ULPS = {"pow": 1024}


def rounded_by_the_device(name: str, result: xp.Array, operands: tuple[object, ...]) -> bool:
    """Whether the element-wise operation `name` on `operands` (numpy arrays or scalars) is one
    whose `result` a device that is not numpy-based rounds its own way."""
    if result.device.type.name in NUMPY_DEVICES or result.dtype not in FLOATING:
        return False
    complex_args = any(np.asarray(a).dtype.kind == "c" for a in operands)
    return name in (ROUNDED_COMPLEX if complex_args else ROUNDED)


def assert_elementwise(name: str, result: xp.Array, expected: np.ndarray,
                       operands: tuple[object, ...], keep: np.ndarray | None = None) -> None:
    """`result` of the element-wise operation `name` on `operands` is `expected` (where `keep`):
    exactly, or, where the device's math library rounds (`rounded_by_the_device`), to within a
    few units in the last place for finite operands. (A device's library meets infinities and
    NaNs as the standard's special cases say, which test_special_cases.py checks, not always as
    numpy's vectorised loops happen to.)"""
    got = np.asarray(result)
    assert got.shape == expected.shape, (name, got.shape, expected.shape)
    loose = undetermined(name, (np.broadcast_to(a, got.shape) for a in operands))
    if loose is not None:  # (directions the operands do not determine: magnitudes)
        got, expected = (np.where(loose, np.abs(v), v) for v in (got, expected))
    rounded = rounded_by_the_device(name, result, operands)
    if rounded:
        finite = np.logical_and.reduce([np.isfinite(np.broadcast_to(a, got.shape))
                                        for a in operands])
        keep = finite if keep is None else keep & finite
    if keep is not None:
        got, expected = got[keep], expected[keep]
    if rounded:
        assert_close(got, expected, ulps=ULPS.get(name, 8), err_msg=name)
        return
    np.testing.assert_array_equal(got, expected, err_msg=name, strict=True)
    if got.dtype.kind in "fc":  # (a NaN's sign is not a value, as in assert_matches)
        for part in (np.real, np.imag):
            number = ~np.isnan(part(expected))
            np.testing.assert_array_equal(np.signbit(part(got))[number],
                                          np.signbit(part(expected))[number],
                                          err_msg=f"{name}: signs of zeros differ")


def numpy_from_dlpack(x: xp.Array, **options: object) -> np.ndarray:
    """`np.from_dlpack(x, **options)` where x is in host memory (the CPU's, the simulated GPU's),
    which numpy takes in place; for x in a GPU's memory, checks that numpy refuses it (its
    BufferError; RuntimeError before numpy 2.1) and returns the host copy the exporter makes
    when asked for kDLCPU, as a user would ask."""
    if x.__dlpack_device__()[0] == 1:  # kDLCPU
        return np.from_dlpack(x, **options)
    with pytest.raises((BufferError, RuntimeError), match="device"):
        np.from_dlpack(x)
    return np.from_dlpack(x, device="cpu", copy=True)


def sample(shape: tuple[int, ...], dtype: xp.DType, seed: int = 0) -> np.ndarray:
    """A numpy array of `shape` whose values cycle through the dtype's extremes, zeros of both
    signs, NaN and infinities (floats), mixed with random values."""
    rng = np.random.default_rng(seed)
    npd = np_dtype(dtype)
    size = int(np.prod(shape))
    if dtype is xp.bool:
        return rng.integers(0, 2, size).astype(bool).reshape(shape)
    if dtype in INTEGER:
        info = np.iinfo(npd)
        special = np.array([0, 1, info.min, info.max, info.max // 2], dtype=npd)
        values = rng.integers(info.min, info.max, size, dtype=npd, endpoint=True)
    else:
        real = npd if dtype in REAL_FLOATING else np.float32 if dtype is xp.complex64 else \
            np.float64
        special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.5, -2.5,
                            np.finfo(real).max, np.finfo(real).smallest_normal], dtype=real)
        values = rng.standard_normal(size).astype(real) * 100
        if dtype in COMPLEX_FLOATING:
            special = _complex(special, np.roll(special, 3), npd)
            values = _complex(values, rng.standard_normal(size).astype(real), npd)
    values = values.astype(npd)
    values[: min(size, len(special))] = special[: min(size, len(special))]
    return rng.permutation(values).reshape(shape)


def _complex(real: np.ndarray, imag: np.ndarray, dtype: np.dtype) -> np.ndarray:
    out = np.empty(real.shape, dtype=dtype)
    out.real, out.imag = real, imag
    return out


def pair(data: np.ndarray) -> tuple[xp.Array, np.ndarray]:
    """An hxarray copy of `data` next to `data` itself."""
    return xp.asarray(data, copy=True), data


# Views that are not C-contiguous, as keys applying to both libraries (ndim >= 2).
VIEWS: dict[str, Callable[[object], object]] = {
    "contiguous": lambda a: a,
    "step": lambda a: a[::2],
    "flip": lambda a: a[::-1, ::-1],
    "mT": lambda a: a.mT,
    "offset_step": lambda a: a[1:, ::-2],
}


def view_pairs(data: np.ndarray) -> list[tuple[xp.Array, np.ndarray]]:
    """Every view kind of an hxarray copy of 2-D `data`, next to the same view of `data`."""
    base = xp.asarray(data, copy=True)
    return [(view(base), view(data)) for view in VIEWS.values()]


def view_pair(kind: str, shape: tuple[int, ...], dtype: xp.DType, seed: int = 0
              ) -> tuple[xp.Array, np.ndarray]:
    """The view `kind` of a fresh hxarray array and of its numpy twin; the hxarray one shares its
    base's buffer."""
    data = sample(shape, dtype, seed)
    base = xp.asarray(data, copy=True)
    view = VIEWS[kind](base)
    assert view.buffer is base.buffer
    return view, VIEWS[kind](data)


@contextlib.contextmanager
def thread_thresholds(count: int) -> Iterator[None]:
    """CPU operations from `count` elements on split over threads, inside the block."""
    backend = xp.Device("cpu").backend
    saved = backend.thresholds
    backend.set_thresholds(Thresholds(count, count, count, count))
    try:
        yield
    finally:
        backend.set_thresholds(saved)


def on_the_null_driver(code: str) -> None:
    """Runs `code` (indented as in a test) in a Python process of its own with
    HXARRAY_CUDA_DRIVER=null (the driver is chosen when the CUDA backend loads); it must print
    "ok"."""
    env = {**os.environ, "HXARRAY_CUDA_DRIVER": "null"}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
