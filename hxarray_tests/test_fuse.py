"""hxarray.fuse on every device: fused results against the same function run unfused (bit for
bit where the operations are exact), reductions, broadcasting and layouts, both modes, and the
refusals."""

from __future__ import annotations

import contextlib
import math
import sys
import types
import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import hxarray as xp
from hxarray._modes import is_strict
from hxarray.backends.cpu import fused as cpu_fused
from hxarray.backends.cpu import parallel

from .oracle import CPU_ONLY, ON_EACH_DEVICE, on_the_null_driver, thread_thresholds

pytestmark = ON_EACH_DEVICE

FLOATS = ("float32", "float64")
INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def host(x: xp.Array) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


def same(fused: xp.Array, unfused: xp.Array, exact: bool = True,
         precision: np.dtype | None = None) -> None:
    """Equal dtype and shape; equal bits (-0 included; NaN where NaN, its sign and payload
    aside: the standard leaves them open, and the CPU's compiled loop and numpy propagate
    different NaNs) or, for inexact operations, close: a few units in the last place per
    transcendental function (of `precision`, the least precise floating dtype the computation
    went through: by default the result's), which later steps (a power, say) may magnify."""
    assert fused.dtype == unfused.dtype and fused.shape == unfused.shape
    f, u = host(fused), host(unfused)
    if exact or f.dtype.kind not in "fc":
        if f.dtype.kind in "fc":
            nan = f.dtype.type(np.nan)
            assert np.array_equal(np.isnan(f), np.isnan(u)), (f, u)
            f, u = np.where(np.isnan(f), nan, f), np.where(np.isnan(u), nan, u)
        assert f.tobytes() == u.tobytes(), (f, u)
    else:
        eps = np.finfo(precision or f.dtype).eps
        np.testing.assert_allclose(f, u, rtol=np.sqrt(eps) / 4, atol=0)


def both(function, *args, exact: bool = True) -> xp.Array:
    """The fused result, checked against the unfused one; the inputs stay as they were."""
    before = [host(a).copy() if isinstance(a, xp.Array) else a for a in args]
    expected = function(*args)
    result = xp.fuse(function)(*args)
    same(result, expected, exact)
    for a, b in zip(args, before):
        if isinstance(a, xp.Array):
            assert host(a).tobytes() == b.tobytes()
    return result


def chain(a, b):
    return xp.sqrt(a * a + b * b) * 0.5 + 1


def test_float16_fuses_as_it_computes_unfused():
    """numpy mode's float16: each fused step computes in float32 and rounds to float16, as the
    unfused functions do, so the chain's arithmetic gives the unfused bits (its overflow to
    infinity included) and sin within the float32 library's rounding; a reduction too."""
    rng = np.random.default_rng(4)
    values = (rng.standard_normal((2, 600)) * 30).astype(np.float16)
    values[0, :7] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 65504.0, 2.0**-24]
    a, b = xp.asarray(values[0]), xp.asarray(values[1])
    with np.errstate(all="ignore"):
        both(chain, a, b)
        both(chain, a, 2.5)
        both(chain, a[::3], b[1::3])
        both(lambda x, y: xp.maximum(x, -y) - 0.1 * x, a, b)
        both(lambda x: xp.sin(x) * 3.0 + 1.0, a, exact=False)
        both(lambda x: xp.sum(x * x), b, exact=False)
        assert xp.fuse(chain)(a, b).dtype is xp.float16


@pytest.mark.parametrize("dtype", FLOATS)
def test_the_chain_is_bit_for_bit_the_unfused_chain(dtype):
    rng = np.random.default_rng(0)
    values = rng.standard_normal((2, 1000)).astype(dtype)
    values[0, :6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30]
    a, b = xp.asarray(values[0]), xp.asarray(values[1])
    both(chain, a, b)
    both(chain, a, 2.5)  # a scalar argument
    both(chain, a[:900:3], b[1::3][:300])  # non-contiguous
    both(chain, xp.reshape(a, (10, 100)), xp.reshape(b, (10, 100))[0])  # broadcast
    both(chain, xp.reshape(a, (10, 100)).mT, b[:10])  # transposed, broadcast along the other axis
    both(chain, a[0], b[0])  # 0-D
    both(chain, a[:0], b[:0])  # empty


def test_an_operand_strided_as_the_wider_result_is_not_read_as_dense():
    """float32 every other element has the strides of the float64 result: it is strided all
    the same."""
    x = xp.asarray(np.arange(20, dtype=np.float32))[::2]
    both(lambda a, b: a + b, x, xp.zeros(10))
    both(lambda a, b: xp.sum(a + b), x, xp.zeros(10))


def test_a_large_chain_runs_split_over_threads(monkeypatch):
    monkeypatch.setattr(parallel, "machine_busy", lambda: False)
    n = cpu_fused.ONE_PASS_FROM + 3 * 8192 + 7
    a = xp.asarray(np.random.default_rng(1).random(n))
    b = xp.asarray(np.random.default_rng(2).random(n))
    both(chain, a, b)
    both(lambda x, y: xp.sum(x * y), a, b)
    both(lambda x, y: xp.max(x * y - 0.5), a, b)  # chunk by chunk


@contextlib.contextmanager
def runs_of(function):
    """A list that counts the runs of `function`'s code while the block lasts (a side effect in
    the function itself would be a value its trace reads)."""
    counted: list[int] = []
    code = function.__code__

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is code:
            counted.append(1)

    sys.setprofile(profile)
    try:
        yield counted
    finally:
        sys.setprofile(None)


def test_a_signature_is_traced_once_and_kept():
    def f(x, y):
        return x * y - 1

    fused = xp.fuse(f)
    a = xp.asarray([1.0, 2.0, 3.0])
    with runs_of(f) as calls:
        for n in (3, 5, 7):  # another shape of the same ndim: the same trace
            same(fused(a[:n % 4 or 3], a[:n % 4 or 3]), f(a[:n % 4 or 3], a[:n % 4 or 3]))
        fused(a, a)
        assert len(calls) == 1 + 3  # one trace, and the three unfused calls above
        fused(xp.asarray([1, 2]), xp.asarray([3, 4]))  # another dtype: traced anew
        assert len(calls) == 5


# -- what a fused function reads -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["transpose", "permute_dims", "matrix_transpose", "mT",
                                  "computed transpose", "transposed sum", "broadcast",
                                  "flipped column"])
def test_a_view_of_an_argument_is_another_value(name):
    """A transpose, a broadcast or any restriding of an argument is not the argument: the fused
    function refuses it (TypeError naming the view), and with fallback gives the unfused
    result."""
    function = {
        "transpose": lambda a: a - a.T,
        "permute_dims": lambda a: a - xp.permute_dims(a, (1, 0)),
        "matrix_transpose": lambda a: a - xp.matrix_transpose(a),
        "mT": lambda a: a * 2 + a.mT,
        "computed transpose": lambda a: a - (a * 2).T,
        "transposed sum": lambda a: xp.sum(a.T * 1, axis=0),
        "broadcast": lambda a: a - xp.broadcast_to(a[:, :1], a.shape),
        "flipped column": lambda a: a - xp.flip(a, axis=1),
    }[name]
    a = xp.asarray(np.arange(9.0).reshape(3, 3) ** 2)
    with pytest.raises(TypeError, match="a view"):
        xp.fuse(function)(a)
    same(xp.fuse(function, fallback=True)(a), function(a))


@pytest.mark.parametrize("name", ["flip", "step", "mT", "transposed result"])
def test_a_view_that_is_the_value_at_one_shape_is_not_at_another(name):
    """Traced where a view covers its whole value in order (one element, 1 x 1), a function is
    traced again for other shapes of the same number of dimensions, where the view is another
    value: the unfused result with fallback, the TypeError without."""
    function, first, then = {
        "flip": (lambda a: xp.flip(a) - a, (1,), (3,)),
        "step": (lambda a: a[::2] * 2.0, (1,), (4,)),
        "mT": (lambda a: a.mT + 1, (1, 1), (1, 3)),
        "transposed result": (lambda a: ((a // -1) ** 3).T, (1, 1), (3, 1)),
    }[name]
    values = [xp.asarray(np.arange(math.prod(s), dtype=np.float64).reshape(s)) for s in (first,
                                                                                        then)]
    fallback = xp.fuse(function, fallback=True)
    for x in (*values, values[0]):
        same(fallback(x), function(x))
    fused = xp.fuse(function)
    same(fused(values[0]), function(values[0]))
    with pytest.raises(TypeError, match="a view"):
        fused(values[1])


def test_a_reductions_keepdims_is_its_result_itself():
    a = xp.asarray(np.arange(6.0).reshape(2, 3))
    both(lambda x: xp.sum(x * 2, axis=1, keepdims=True) + 1, a)
    both(lambda x: x - xp.mean(x, axis=0, keepdims=True), a)


SCALE = 2.0
DTYPE = xp.float32
FLAG = True
CONFIG = types.ModuleType("config")
CONFIG.scale = 2.0
TABLE = [2.0]
SETTINGS = {"scale": 2.0}


def scaled(a):
    return a * SCALE


fused_scaled = xp.fuse(scaled)


def test_a_changed_global_closure_or_attribute_traces_again():
    """Every value a fused function reads besides its arguments (globals, closure variables,
    module and function attributes, items of lists and dicts, what the functions it calls
    read) is the current one at each call, never the one of the first trace."""
    global SCALE, DTYPE, FLAG  # noqa: PLW0603 - the values under test
    x = xp.asarray([1.0, -2.0, 3.5])
    k = 2.0

    def flagged(a):
        return a + 1 if FLAG else a - 1

    def attributed(a):
        return a * attributed.k

    attributed.k = 2.0
    settings = types.SimpleNamespace(xp=xp, k=2.0)  # (array-API code keeps its namespace so)
    functions = {
        "global": lambda a: a * SCALE,
        "closure": lambda a: a * k,
        "astype": lambda a: a.astype(DTYPE) + 1,
        "flag": flagged,
        "module attribute": lambda a: a * CONFIG.scale,
        "list item": lambda a: a * TABLE[0],
        "dict item": lambda a: a * SETTINGS["scale"],
        "helper's global": lambda a: scaled(a) - 1,
        "fused helper's global": lambda a: fused_scaled(a) - 1,
        "function attribute": attributed,
        "object attribute": lambda a: settings.xp.multiply(a, settings.k),
    }
    fused = {name: xp.fuse(f) for name, f in functions.items()}
    for name, f in fused.items():
        same(f(x), functions[name](x))
    saved = SCALE, DTYPE, FLAG
    try:
        SCALE, DTYPE, FLAG, k = 10.0, xp.int64, False, -3.0
        CONFIG.scale, TABLE[0], SETTINGS["scale"], attributed.k = 5.0, 7.0, -0.0, 0.5
        settings.k = 3
        for name, f in fused.items():
            same(f(x), functions[name](x))
            same(f(x), functions[name](x))  # (warm again)
    finally:
        (SCALE, DTYPE, FLAG), CONFIG.scale, TABLE[0], SETTINGS["scale"] = saved, 2.0, 2.0, 2.0


def test_a_value_read_through_an_object_is_refused():
    """An object's attributes (a bound method's `self`, a generator's state) cannot be watched:
    TypeError at the first call, or with fallback the unfused result with current values."""
    class Model:
        def __init__(self):
            self.k = 2.0

        def step(self, a):
            return a * self.k

    model = Model()
    rng = np.random.default_rng(0)
    x = xp.asarray([1.0, 2.0])
    with pytest.raises(TypeError, match="Model"):
        xp.fuse(model.step)(x)
    with pytest.raises(TypeError, match="Generator"):
        xp.fuse(lambda a: a * rng.random())(x)
    fallback = xp.fuse(model.step, fallback=True)
    same(fallback(x), model.step(x))
    model.k = 3.0
    same(fallback(x), x * 3.0)


def test_a_warm_call_is_never_reused_for_another_layout(other_device):
    """A warm call is kept per layout: each array's dtype, shape, strides and device, each
    scalar's type and bits, and the mode. Calls that differ in one of them, taken in turns and
    then again (warm), each give the unfused result, or its error."""
    values = np.random.default_rng(21).standard_normal((4, 6))
    x, f32 = xp.asarray(values), xp.asarray(values.astype(np.float32))
    i64 = xp.asarray((values * 10).astype(np.int64))
    long = xp.asarray(np.random.default_rng(22).standard_normal(2050))
    there = x.to_device(other_device)
    calls = [(x[0], x[1]), (f32[0], x[1]), (i64[0], x[1]), (i64[0], i64[1]),
             (x[:, 0], x[:, 1]), (x[0, :4], x[1, :4]),  # (4,): strided, then contiguous
             (x, x[0]), (x.mT, x[:, 0]), (x[0, 0], x[1, 1]), (x[0, :0], x[1, :0]),
             (long[:1023], long[1:1024]), (long[:1024], long[1:1025]),  # around GIL_FROM
             (long[::2], long[1::2]), (x[0], 2), (x[0], 2.0), (x[0], True), (x[0], 2j),
             (x[0], 0.0), (x[0], -0.0), (i64[0], 2), (i64[0], 2.5), (there[0], there[1]),
             (x[0], there[1])]

    def function(a, b):
        return a * b - 1

    fused = xp.fuse(function)
    for _ in range(2):
        for strict in (False, True):
            with xp.set_strict(strict):
                for args in calls:
                    try:
                        expected = function(*args)
                    except (TypeError, ValueError) as exc:
                        with pytest.raises(type(exc)):
                            fused(*args)
                        continue
                    result = fused(*args)
                    assert result.device == expected.device
                    same(result, expected)


def test_a_warm_call_takes_its_arrays_wherever_they_are():
    """Arguments read in another order than given, scalars before and among them, an argument
    not read, one array only: each warm call (written out for its operands) reads the right
    ones."""
    rng = np.random.default_rng(24)
    x, y, z = (xp.asarray(rng.standard_normal(9)) for _ in range(3))
    for function, args in (
            (lambda a, b: b - a, (x, y)), (lambda s, a: 2 * a + s, (1.5, x)),
            (lambda a, s, b: (s - a) * b, (x, 0.25, y)), (lambda a, b, c: c * c, (x, y, z)),
            (lambda a, b, c: xp.where(c > 0, b, a), (x, y, z)),
            (lambda a, b: xp.sum(b / 3 - a), (x, y))):
        fused = xp.fuse(function)
        for _ in range(3):
            same(fused(*args), function(*args))


@pytest.mark.parametrize("strict", [False, True], ids=["numpy_mode", "strict"])
def test_a_warm_fused_reduction_is_the_unfused_one(strict):
    """Sums (numpy's pairwise order), means and keepdims from their warm calls: bit for bit the
    unfused reduction (and in numpy mode numpy's sum), over no elements, 0-D arrays, NaN, -0.0,
    integers (wrapping), and once the sum is split over threads after its call was made."""
    rng = np.random.default_rng(23)
    floats = rng.standard_normal((2, 1030)) * 1e3
    floats[0, ::7], floats[1, ::11] = np.nan, -0.0
    zeros = np.full((2, 10), -0.0)
    ints = rng.integers(-128, 127, (2, 300), dtype=np.int8)
    operands = [xp.asarray(floats[:, :10]), xp.asarray(floats.astype(np.float32)),
                xp.asarray(floats), xp.asarray(zeros), xp.asarray(zeros[:, :0]),
                xp.asarray(zeros[:, 0]), xp.asarray(ints), xp.asarray(ints.astype(np.uint64)),
                xp.asarray(floats[:, :12].reshape(2, 3, 4))]
    functions = [lambda a, b: xp.sum(a * b), lambda a, b: xp.sum(a - b, keepdims=True),
                 lambda a, b: xp.sum(a * b + 1), lambda a, b: xp.mean(a - b)]
    fused = [xp.fuse(f) for f in functions]
    with xp.set_strict(strict):
        for pair in operands:
            a, b = pair[0], pair[1]
            for function, warm in zip(functions, fused):
                if function is functions[-1] and a.dtype not in (xp.float32, xp.float64):
                    continue
                for _ in range(3):
                    same(warm(a, b), function(a, b))
            if not strict:
                same(fused[0](a, b), xp.asarray(np.sum(host(a) * host(b))))
        a, b = operands[2][0], operands[2][1]  # warm, then split in pieces as unfused
        with xp.threads(2), thread_thresholds(100):
            for function, warm in zip(functions, fused):
                same(warm(a, b), function(a, b))


@CPU_ONLY
def test_a_small_warm_sum_runs_the_pass_prepared_for_it(device, monkeypatch):
    """On the CPU a warm sum (or mean) of dense operands runs the compiled pass prepared for
    its layout, not the general reduction path."""
    x = xp.asarray(np.arange(10.0))
    y = x - 0.5
    functions = [lambda a, b: xp.sum(a * b), lambda a, b: xp.mean(a - b)]
    fused = [xp.fuse(f) for f in functions]
    for f in fused:
        f(x, y)

    def general(*args, **kwargs):
        raise AssertionError("the general path")

    monkeypatch.setattr(type(device.backend), "fused_reduce", general)
    results = [f(x, y) for f in fused]
    monkeypatch.undo()
    for result, function in zip(results, functions):
        same(result, function(x, y))


@CPU_ONLY
def test_the_profiler_sees_a_warm_call_as_before(device):
    """A warm fused call on the CPU is its allocations to the hooks: the result's (and a
    mean's temporary's), no primitive."""
    x = xp.asarray(np.arange(10.0))
    y = x + 1
    fused = [xp.fuse(chain), xp.fuse(lambda a, b: xp.sum(a * b)),
             xp.fuse(lambda a, b: xp.mean(a - b))]
    for f in fused:
        f(x, y)
    for f, allocations in zip(fused, (1, 1, 2)):
        with xp.profile() as profile:
            f(x, y)
        assert [e.category for e in profile.events] == ["allocation"] * allocations


def test_a_warm_call_allocates_where_unfused_calls_do(device):
    """A warm call's result, and a warm mean's temporary, come from the memory scope open
    around the call."""
    x = xp.asarray(np.arange(10.0))
    y = x + 1
    fused = [xp.fuse(chain), xp.fuse(lambda a, b: xp.mean(a - b))]
    for f in fused:
        f(x, y)
    allocations = xp.memory_stats(device)["num_allocs"]
    with xp.memory_scope(device) as scope:
        results = [f(x, y) for f in fused]
    assert scope.allocations >= 2
    assert xp.memory_stats(device)["num_allocs"] == allocations
    same(results[0], chain(x, y))
    same(results[1], xp.mean(x - y))


def test_scalars_equal_in_value_but_not_in_bits_are_other_signatures():
    """0.0 and -0.0 (and complex numbers with -0.0 parts), as arguments or as two constants of
    one function, each give their own result; NaN arguments reuse their plan."""
    a = xp.asarray([1.0, -2.0, 0.0])
    scale = xp.fuse(lambda x, s: x * s)
    for s in (0.0, -0.0, 0.0, complex(0.0, -0.0), complex(-0.0, 0.0), math.nan, math.nan):
        same(scale(a, s), a * s)
    both(lambda x: x * 0.0 + -0.0, a)
    both(lambda x: (x + -0.0) * 0.0, a)
    both(lambda x: xp.where(x > 0, 0.0, -0.0), a)


@pytest.mark.parametrize("dtype", [*FLOATS, *INTEGERS, "bool", "complex64", "complex128"])
def test_every_dtype(dtype):
    rng = np.random.default_rng(3)
    if dtype == "bool":
        values = rng.random((2, 50)) < 0.5
        function = lambda x, y: xp.logical_xor(x, y) | ~x  # noqa: E731
    elif dtype.startswith("complex"):
        values = (rng.standard_normal((2, 50)) + 1j * rng.standard_normal((2, 50))).astype(dtype)
        function = lambda x, y: x * y - xp.conj(x) + 2  # noqa: E731
    elif dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, (2, 50), dtype=dtype, endpoint=True)
        function = lambda x, y: (x * y + 3) ^ (x >> 1) - xp.maximum(x, y) // 7  # noqa: E731
    else:
        values = rng.standard_normal((2, 50)).astype(dtype)
        function = lambda x, y: xp.where(x > y, x - y, y / (x + 1)).astype(xp.int32) + 1  # noqa
    both(function, xp.asarray(values[0]), xp.asarray(values[1]))


def test_casts_and_comparisons():
    a = xp.asarray([-2.7, -0.5, 0.0, 0.5, 1e20, np.nan, np.inf, 255.9])
    both(lambda x: x.astype(xp.int8) + (x > 0).astype(xp.int8), a)
    both(lambda x: xp.astype(x, xp.uint8) * 3, a)
    both(lambda x: xp.clip(x, -1, 1) * 2, a)
    both(lambda x: xp.clip(x, max=0.25), a)


@pytest.mark.parametrize("name", ["sum", "prod", "min", "max", "mean"])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_one_reduction_at_the_end(name, axis):
    a = xp.asarray(np.random.default_rng(4).standard_normal((30, 20)))
    b = xp.asarray(np.random.default_rng(5).standard_normal(20))
    function = getattr(xp, name)
    both(lambda x, y: function(x * y + 1, axis=axis), a, b, exact=False)
    both(lambda x, y: function(x * y, axis=axis, keepdims=True) / 2, a, b, exact=False)


def test_any_all_and_a_reduction_used_after():
    a = xp.asarray(np.random.default_rng(6).standard_normal((40, 30)))
    both(lambda x: xp.any(x > 2.5, axis=1), a)
    both(lambda x: xp.all(xp.abs(x) < 10), a)
    both(lambda x: x - xp.mean(x, axis=0, keepdims=True), a, exact=False)
    both(lambda x: xp.sum(x.astype(xp.int64)), xp.asarray(np.arange(1000, dtype=np.int32)))


def test_numpy_mode_conversions_fuse_as_unfused():
    i = xp.asarray(np.arange(-5, 5, dtype=np.int16))
    u = xp.asarray(np.arange(10, dtype=np.uint32))
    both(lambda x: x + 1.5, i)  # numpy mode: int16 + float -> float64
    both(lambda x, y: x * y - 1, i, u)  # int16 * uint32 -> int64
    both(lambda x: xp.sqrt(x), i, exact=False)  # integers to float64 for sqrt


@pytest.mark.strict
def test_strict_mode_refuses_as_unfused():
    i = xp.asarray(np.arange(5, dtype=np.int16))
    with pytest.raises(TypeError) as unfused:
        i + 1.5
    with pytest.raises(TypeError) as fused:
        xp.fuse(lambda x: x + 1.5)(i)
    assert str(fused.value) == str(unfused.value)
    both(lambda x: x * 2 + 1, i)


def test_what_cannot_be_fused_is_named():
    a = xp.asarray([3.0, 1.0, 2.0])
    with pytest.raises(TypeError, match=r"hxarray.fuse\(sorted_plus\): sort\(\) cannot be "
                                        r"fused.*fallback=True"):
        def sorted_plus(x):
            return xp.sort(x) + 1

        xp.fuse(sorted_plus)(a)
    same(xp.fuse(fallback=True)(sorted_plus)(a), sorted_plus(a))
    other = xp.asarray([1.0, 1.0, 1.0])
    with pytest.raises(TypeError, match="without taking it as an argument"):
        xp.fuse(lambda x: x + other)(a)
    with pytest.raises(TypeError, match="two|second reduction"):
        xp.fuse(lambda x: xp.sum(x) + xp.max(x))(a)
    with pytest.raises(TypeError, match="reading values on the host"):
        xp.fuse(lambda x: x * 2 if float(x[0]) > 0 else x)(a)
    with pytest.raises(TypeError, match="argument of the fused function"):
        def inplace(x):
            x += 1
            return x

        xp.fuse(inplace)(a)
    assert host(a).tolist() == [3.0, 1.0, 2.0]
    with pytest.raises(TypeError, match="positional arguments only"):
        xp.fuse(chain)(a, b=a)
    with pytest.raises(TypeError, match="hxarray arrays and Python scalars"):
        xp.fuse(chain)(a, np.ones(3))
    with pytest.raises(TypeError, match="fallback must be a bool"):
        xp.fuse(chain, fallback=1)
    with pytest.raises(TypeError, match="takes a function"):
        xp.fuse(3)


def test_errors_of_the_function_are_its_own():
    a = xp.asarray([1.0, 2.0])
    with pytest.raises(ValueError):
        xp.fuse(lambda x, y: x + y)(a, xp.asarray([1.0, 2.0, 3.0]))


# -- property: random expressions over random dtypes ----------------------------------------------
_UNARY = ["abs", "negative", "square", "sqrt", "exp", "log1p", "sin", "floor", "sign", "isnan",
          "logical_not", "bitwise_invert", "positive"]
_BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "less", "equal",
           "floor_divide", "remainder", "bitwise_and", "bitwise_xor", "atan2", "hypot", "pow",
           "copysign", "logaddexp"]
_INEXACT = {"exp", "log1p", "sin", "atan2", "hypot", "pow", "logaddexp"}


@st.composite
def expressions(draw):
    """(dtype, program): each instruction applies an operation to earlier values (0 and 1 are
    the arguments) or to a small Python scalar."""
    dtype = draw(st.sampled_from(["float32", "float64", "int32", "int64", "uint8", "bool"]))
    program = []
    for i in range(draw(st.integers(1, 6))):
        if draw(st.booleans()):
            program.append((draw(st.sampled_from(_UNARY)), draw(st.integers(0, i + 1)), None))
        else:
            other = draw(st.one_of(st.integers(0, i + 1).map(lambda k: ("v", k)),
                                   st.sampled_from([("s", 2), ("s", 0.5), ("s", True)])))
            program.append((draw(st.sampled_from(_BINARY)), draw(st.integers(0, i + 1)), other))
    return dtype, program


def _interpret(program):
    """The program as a function; `function.dtypes` collects the dtypes of the values it made,
    and, while `function.measures` (not under fuse's tracing, which cannot read values),
    `function.magnifies` the largest factor by which an operation turned its arguments' relative
    rounding error into its result's: `sin` of x by |x| (the error of x is a part of the period),
    `remainder` and `floor_divide` of x by y by |x / y| (x's error in units of y); and
    `function.nan_sign` whether `copysign` took a sign from a NaN (which the standard leaves
    open: numpy's 0 % 0 is -NaN on x86, the compiled loop's +NaN)."""
    def function(x, y):
        values = [x, y]
        for name, first, other in program:
            operands = [values[first]] if other is None else [
                values[first], values[other[1]] if other[0] == "v" else other[1]]
            if function.measures and values[first].size:
                function.measure(name, *[np.asarray(host(v) if isinstance(v, xp.Array) else v,
                                                    dtype=np.float64) for v in operands])
            values.append(getattr(xp, name)(*operands))
            function.dtypes.add(values[-1].dtype)
        return values[-1]

    def measure(name, x, y=None):
        if name == "copysign":
            function.nan_sign |= bool(np.isnan(y).any())
        elif name in ("sin", "remainder", "floor_divide"):
            magnitude = np.abs(x if name == "sin" else x / y)
            magnitude = magnitude[np.isfinite(magnitude)]
            function.magnifies = max(function.magnifies, float(np.max(magnitude, initial=0)))

    function.dtypes, function.measure = set(), measure
    function.magnifies, function.nan_sign, function.measures = 0.0, False, True
    return function


@given(expressions(), st.integers(0, 2**32 - 1))
def test_random_expressions_fuse_to_the_unfused_result(spec, seed):
    dtype, program = spec
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        data = rng.random((2, 17)) < 0.5
    elif dtype.startswith(("int", "uint")):
        data = rng.integers(0 if dtype == "uint8" else -50, 50, (2, 17)).astype(dtype)
    else:
        data = (rng.standard_normal((2, 17)) * 10).astype(dtype)
    a, b = xp.asarray(data[0]), xp.asarray(data[1])
    function = _interpret(program)
    array_powers = any(name == "pow" and other is not None and other[0] == "v"
                       for name, _, other in program)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = function(a, b)
        except (TypeError, ValueError, OverflowError) as exc:
            expected = exc
        function.measures = False
        try:
            result = xp.fuse(function)(a, b)
        except (TypeError, ValueError, OverflowError) as exc:
            if "reading values on the host" in str(exc):
                # numpy mode checks an integer exponent array's values for negative powers
                # (numpy's ValueError) on the host, which a kernel cannot do
                assert array_powers and not is_strict(), exc
                return
            assert isinstance(expected, Exception) and type(exc) is type(expected), exc
            return
    assert not isinstance(expected, Exception), f"fused returned, unfused raised {expected!r}"
    exact = not any(name in _INEXACT for name, _, _ in program)
    floating = [np.dtype(d.name) for d in function.dtypes if d in (xp.float32, xp.float64)]
    # (numpy mode's exp of a comparison is float32, then added to float64 values)
    precision = min(floating, key=lambda d: d.itemsize, default=None)
    # the sine of a value whose rounding error is a good part of its period, or the remainder of
    # one whose rounding error is a good part of the divisor, is rounding noise
    assume(precision is None or function.magnifies * np.finfo(precision).eps < 1e-3)
    assume(not function.nan_sign)
    same(result, expected, exact, precision)


# -- the blocked numpy evaluation (no compiler) and the CUDA kernel ------------------------------
def test_blocked_numpy_evaluation_without_a_compiler(monkeypatch):
    if xp.asarray(0).device != xp.Device("cpu"):
        pytest.skip("the CPU's evaluation")
    monkeypatch.setattr(cpu_fused, "_loops", {})
    monkeypatch.setattr(cpu_fused, "compiled", lambda expression: None)
    n = 3 * cpu_fused.CHUNK + 5
    a = xp.asarray(np.random.default_rng(7).standard_normal((n, 3)))
    b = xp.asarray(np.random.default_rng(8).standard_normal(3))
    both(lambda x, y: xp.where(x > y, chain(x, y), -x), a, b)
    both(lambda x: xp.sum(x * x), a, exact=False)


def test_on_cuda_a_fused_chain_is_one_launch():
    a = xp.asarray(np.random.default_rng(9).random(1000))
    if a.device.type.name != "cuda":
        pytest.skip("CUDA only")
    backend = a._buffer.device.backend
    state = backend._state(a._buffer.device)
    fused = xp.fuse(chain)
    fused(a, a)
    before = state.launches
    result = fused(a, a)
    assert state.launches == before + 1
    same(result, chain(a, a))


@pytest.mark.parametrize("strict", [False, True], ids=["numpy_mode", "strict"])
@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "any", "all"])
def test_a_fused_reduction_gives_each_mode_its_unfused_answer(name, strict):
    """Negative zeros: numpy mode's sums and means of them are +0 (numpy's), strict mode's -0
    (the standard's additions); the fused reduction (on CUDA one kernel, numpy mode's +0 in it)
    gives each mode's unfused answer, bit for bit, over every axis, with keepdims, float32
    and float64, and on values that are not zeros."""
    function = getattr(xp, name)
    rng = np.random.default_rng(12)
    with xp.set_strict(strict):
        for dtype in ("float32", "float64"):
            negative = xp.asarray(np.full((4, 3), -0.0, dtype))
            for axis in (None, 0, 1, (0, 1)):
                both(lambda x, axis=axis: function(x * 1.0, axis=axis), negative)
                both(lambda x, axis=axis: function(-x, axis=axis, keepdims=True),
                     xp.zeros_like(negative))
            values = xp.asarray(rng.standard_normal((7, 5)).astype(dtype))
            for axis in (None, 0, 1):
                both(lambda x, y, axis=axis: function(x * y + 0.5, axis=axis), values, values[0],
                     exact=name in ("max", "min", "any", "all"))


# sizes around the pairwise summation's boundaries: runs of 8, blocks of 128, halving
SUM_SIZES = (1, 7, 8, 9, 127, 128, 129, 136, 257, 1000, 4099, 65543)


def compiled_sums(monkeypatch) -> list[bool]:
    """Records whether each fused sum of dense operands ran compiled: the compiled pass
    prepared for it (`PreparedSum.of`, by a warm call or `run_sum`), or not."""
    taken: list[bool] = []
    prepare = cpu_fused.PreparedSum.of

    def spy(*args):
        summed = prepare(*args)
        taken.append(summed is not None)
        return summed

    monkeypatch.setattr(cpu_fused.PreparedSum, "of", spy)
    return taken


@CPU_ONLY
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dtype", FLOATS)
def test_a_fused_float_sum_on_the_cpu_is_the_unfused_sum_bit_for_bit(device, monkeypatch, dtype,
                                                                     threads):
    """The compiled sum adds in numpy's pairwise order: at every size around its boundaries,
    with NaN, infinities and zeros of both signs, in both modes (numpy's sums start from +0),
    a mean too (the sum, then its division), on one thread or split (the pieces of a large
    reduction as the unfused one splits it, or a piece's pairwise halves)."""
    monkeypatch.setattr(parallel, "machine_busy", lambda: False)
    monkeypatch.setattr(cpu_fused, "THREADED_FROM", 200)
    taken = compiled_sums(monkeypatch)
    rng = np.random.default_rng(16)
    for n in SUM_SIZES:
        a = (rng.standard_normal(n) * 10.0 ** rng.integers(-4, 4, n)).astype(dtype)
        b = rng.standard_normal(n).astype(dtype)
        special = a.copy()
        special[::5], special[1::7], special[2::13] = -0.0, np.inf, np.nan
        for values in (a, special, np.full(n, -0.0, dtype)):
            x, y = xp.asarray(values), xp.asarray(b)
            for strict, split_from in ((False, 1), (True, 1), (False, 1 << 30), (True, 1 << 30)):
                with xp.set_strict(strict), xp.threads(threads), thread_thresholds(split_from):
                    both(lambda x, y: xp.sum(x * y), x, y)
                    both(lambda x: xp.sum(x * 1.0), x)
                    both(lambda x: xp.mean(x - 0.5), x)
    assert taken and all(taken)


@CPU_ONLY
@pytest.mark.parametrize("dtype", INTEGERS)
def test_a_fused_integer_sum_on_the_cpu_wraps_as_unfused(device, monkeypatch, dtype):
    monkeypatch.setattr(parallel, "machine_busy", lambda: False)
    monkeypatch.setattr(cpu_fused, "THREADED_FROM", 200)
    taken = compiled_sums(monkeypatch)
    info = np.iinfo(dtype)
    a = np.random.default_rng(17).integers(info.min, info.max, 5003, dtype, endpoint=True)
    for threads, split_from in ((1, 1), (2, 1 << 30), (3, 1)):
        with xp.threads(threads), thread_thresholds(split_from):
            for x in (xp.asarray(a), xp.asarray(a[:1])):
                both(lambda x: xp.sum(x * 3), x)
                both(lambda x: xp.sum(x > 0), x)
    assert taken and all(taken)


def test_a_fused_sum_of_other_layouts_or_dtypes_runs_as_before(monkeypatch):
    """Broadcast or strided operands, complex values, a float sum into another dtype: the
    expression into a temporary, then the reduction (the same values)."""
    taken = compiled_sums(monkeypatch)
    a = xp.asarray(np.random.default_rng(18).standard_normal((30, 20)))
    both(lambda x, y: xp.sum(x * y), a, a[0], exact=False)
    both(lambda x: xp.sum(x * 2), a.mT, exact=False)
    both(lambda x: xp.sum(x * 1j), a, exact=False)
    both(lambda x: xp.sum(x * 2, dtype=xp.float32), a, exact=False)
    assert not any(taken)


def test_on_cuda_a_fused_reduction_is_one_kernel():
    """On the simulated device: one launch where the reduction's rows are not split (numpy
    mode's +0 and mean's division included), the reduction's own two passes where they are;
    the values the unfused function's."""
    a = xp.asarray(np.random.default_rng(13).standard_normal((64, 32)))
    if a.device.type.name != "cuda":
        pytest.skip("CUDA only")
    state = a._buffer.device.backend._state(a._buffer.device)
    ints = xp.asarray(np.random.default_rng(14).integers(-100, 100, (64, 32), dtype=np.int32))
    tall = xp.asarray(np.random.default_rng(15).standard_normal((8192, 4)))  # long columns
    for function, x, launches in (
            (lambda x: xp.sum(x * x), a, 1), (lambda x: xp.mean(x + 1), a, 1),
            (lambda x: xp.max(xp.abs(x), axis=1), a, 1),
            (lambda x: xp.sum(x * 2, axis=0) * 0.5, tall, 2),  # split rows: the second pass
            (lambda x: xp.sum(x - 1, axis=1), a.mT, 1),  # strided: elements by coordinates
            (lambda x: xp.sum(x * 3), ints, 1),  # int32 accumulated in int64
            (lambda x: xp.prod((x % 3 + 1).astype(xp.uint8), axis=1), ints, 1),
            (lambda x: xp.any(x > 99, axis=1), ints, 1)):
        fused = xp.fuse(function)
        fused(x)
        before = state.launches
        result = fused(x)
        assert state.launches - before == launches
        same(result, function(x), exact=x.dtype == xp.int32)


@CPU_ONLY
def test_fused_launches_on_the_null_driver(device):
    """In a process of its own on the null driver (which counts launches): a warm fused chain
    and fused reductions are one launch each, compiling nothing more, where the unfused
    numpy-mode sum of a product is two (the product, the reduction)."""
    code = """
        import numpy as np
        import hxarray as xp
        device = xp.Device("cuda:0")
        backend = device.backend
        a = xp.asarray(np.ones((32, 32), np.float32), device=device)
        calls = [xp.fuse(lambda x, y: xp.sqrt(x * x + y * y) * 0.5 + 1),
                 xp.fuse(lambda x, y: xp.sum(x * y)), xp.fuse(lambda x, y: xp.mean(x - y)),
                 xp.fuse(lambda x, y: xp.max(x + y, axis=1)),
                 xp.fuse(lambda x, y: xp.all(x < y))]
        for call in calls:
            call(a, a)
        for call in calls:
            stats = backend.stats(device)
            call(a, a)
            after = backend.stats(device)
            assert after["compilations"] == stats["compilations"]
            assert after["kernel_launches"] - stats["kernel_launches"] == 1, call
        with xp.set_strict(True):
            calls[1](a, a)
            stats = backend.stats(device)
            calls[1](a, a)
            assert backend.stats(device)["kernel_launches"] - stats["kernel_launches"] == 1
        stats = backend.stats(device)
        xp.sum(a * a)
        assert backend.stats(device)["kernel_launches"] - stats["kernel_launches"] == 2
        print("ok")
    """
    on_the_null_driver(code)


def test_a_fused_function_keeps_its_name():
    fused = xp.fuse(chain)
    assert fused.__name__ == "chain" and "chain" in repr(fused)
    assert math.isclose(float(host(fused(xp.asarray(3.0), 4.0))), 3.5)


def test_hxarray_fuses_its_own_clip_and_numpy_mode_conversions():
    """From FUSE_FROM elements clip and numpy mode's conversions run fused where the backend
    compiles expressions: the same values as numpy's."""
    from hxarray._fuse import FUSE_FROM

    rng = np.random.default_rng(10)
    data = rng.standard_normal(FUSE_FROM + 5)
    data[:4] = [np.nan, -0.0, np.inf, -np.inf]
    x = xp.asarray(data)
    for low, high in ((-0.5, 0.5), (None, 0.1), (-0.2, None)):
        got = host(xp.clip(x, low, high))
        assert got.tobytes() == np.clip(data, low, high).tobytes()
    bound = xp.asarray(np.full(data.size, 0.25, np.float32))
    assert host(xp.clip(x, max=bound)).tobytes() == np.minimum(data, np.float32(0.25)).tobytes()
    ints = rng.integers(-300, 300, FUSE_FROM + 5).astype(np.int16)
    i = xp.asarray(ints)
    assert host(i + 1.5).tobytes() == (ints + 1.5).tobytes()
    assert host(i * xp.asarray(ints.astype(np.uint32))).tobytes() == \
        (ints * ints.astype(np.uint32)).tobytes()
    big = xp.asarray(ints.astype(np.int64))
    unsigned = xp.asarray(np.abs(ints).astype(np.uint64))
    assert host(big < unsigned).tolist() == (ints.astype(np.int64) < np.abs(ints).astype(
        np.uint64)).tolist()
