"""hxarray.graph on every device: replays against the function run eagerly (bit for bit: a replay
runs the same primitives on the same dtypes), after the inputs change, for every kind of
operation a graph records, with the capture errors, new arrays per call, threads, hooks and the
memory a deleted graph gives back."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

import hxarray as xp
from hxarray.backends.recording import Recorder
from hxarray.hal.hooks import Hook

from .oracle import ON_CUDA, ON_EACH_DEVICE

pytestmark = ON_EACH_DEVICE

DTYPES = ("bool", "int8", "uint16", "int32", "int64", "float16", "float32", "float64", "complex64",
          "complex128")


def host(x: xp.Array) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


def same(replayed, eager) -> None:
    """Equal structure, dtypes, shapes and bits (NaN where NaN)."""
    if isinstance(eager, (tuple, list)):
        assert type(replayed) is type(eager) and len(replayed) == len(eager)
        for r, e in zip(replayed, eager):
            same(r, e)
        return
    if not isinstance(eager, xp.Array):
        assert replayed == eager
        return
    assert replayed.dtype == eager.dtype and replayed.shape == eager.shape
    assert replayed.device == eager.device
    np.testing.assert_array_equal(host(replayed), host(eager))


def values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> xp.Array:
    if dtype == "bool":
        data = rng.random(shape) < 0.5
    elif dtype.startswith(("int", "uint")):
        data = rng.integers(0, 50, shape).astype(dtype)
    elif dtype.startswith("complex"):
        data = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    else:
        data = rng.standard_normal(shape).astype(dtype)
    return xp.asarray(data)


def check(function, *calls) -> None:
    """`graph(function)` of each argument tuple in `calls`, in order, against `function`."""
    graphed = xp.graph(function)
    for args in calls:
        same(graphed(*args), function(*args))


def arithmetic(a, b):
    for _ in range(5):
        a = a * b
        a = a + b
    return a


@pytest.mark.parametrize("dtype", DTYPES)
def test_arithmetic_replays_as_eager(device, dtype):
    rng = np.random.default_rng(0)
    if dtype == "bool":
        function = lambda a, b: (a & b) | ~a ^ b  # noqa: E731
    else:
        function = arithmetic
    a, b = values(rng, (7, 5), dtype), values(rng, (7, 5), dtype)
    c, d = values(rng, (7, 5), dtype), values(rng, (7, 5), dtype)
    check(function, (a, b), (c, d), (a, b))


def test_every_kind_of_operation_replays(device):
    rng = np.random.default_rng(1)

    def mixed(x, w, scale):
        y = xp.exp(-x) * scale + xp.arange(x.shape[1], dtype=x.dtype)
        y = xp.where(y > 1.0, y, xp.zeros_like(y))
        total = xp.sum(y, axis=0, keepdims=True) + xp.mean(x)
        stacked = xp.concat([y[:2], x[-1:]], axis=0)
        product = x @ w
        ordered = xp.sort(x, axis=1)
        index = xp.argmax(x, axis=1)
        cumulative = xp.cumulative_sum(x, axis=0)
        cast = xp.astype(y[::2, 1:], xp.float32)
        y[0, :] = 5.0
        return (y, total, stacked, product, ordered, index, cumulative, cast,
                xp.max(x), xp.linalg.vector_norm(x), 3)

    x, w = values(rng, (6, 4), "float64"), values(rng, (4, 3), "float64")
    x2, w2 = values(rng, (6, 4), "float64"), values(rng, (4, 3), "float64")
    check(mixed, (x, w, 0.5), (x2, w2, 0.5), (x2, w2, 2.0))


def test_strided_and_broadcast_arguments(device):
    rng = np.random.default_rng(2)
    base = values(rng, (8, 8), "float32")
    row = values(rng, (8,), "float32")
    graphed = xp.graph(lambda a, r: a * r - 1)
    for a in (base[::2, ::3], base.T, base[1:, :]):
        same(graphed(a, row[: a.shape[1]]), a * row[: a.shape[1]] - 1)


def test_signatures_and_modes_capture_apart(device):
    rng = np.random.default_rng(3)
    graphed = xp.graph(lambda a, s: a * s)
    a = values(rng, (5,), "float64")
    same(graphed(a, 2.0), a * 2.0)
    same(graphed(a, -0.0), a * -0.0)  # another scalar: another capture
    same(graphed(a[:3], 2.0), a[:3] * 2.0)  # another shape
    same(graphed(xp.astype(a, xp.float32), 2.0), xp.astype(a, xp.float32) * 2.0)
    i = xp.asarray([1, 2, 3])
    same(graphed(i, 2), i * 2)
    with xp.set_strict(True):
        with pytest.raises(TypeError):
            graphed(i, 2.5)  # strict mode refuses the float with an int array, as eagerly
    same(graphed(i, 2.5), i * 2.5)  # numpy mode takes it


def test_each_call_returns_new_arrays(device):
    graphed = xp.graph(lambda a: (a + 1, a))
    a = xp.asarray([1.0, 2.0])
    first, passed = graphed(a)
    second, _ = graphed(xp.asarray([10.0, 20.0]))
    np.testing.assert_array_equal(host(first), [2.0, 3.0])  # unchanged by the second call
    np.testing.assert_array_equal(host(second), [11.0, 21.0])
    assert passed is not a
    np.testing.assert_array_equal(host(passed), host(a))
    first[0] = 100.0  # a result is the caller's: writing it changes no later call
    np.testing.assert_array_equal(host(graphed(a)[0]), [2.0, 3.0])


def test_arrays_read_from_outside_are_read_at_each_replay(device):
    weights = xp.asarray([1.0, 2.0, 3.0])
    graphed = xp.graph(lambda a: a * weights)
    a = xp.ones(3)
    same(graphed(a), a * weights)
    weights[0] = 7.0
    np.testing.assert_array_equal(host(graphed(a)), [7.0, 2.0, 3.0])


def test_empty_and_zero_dimensional(device):
    check(lambda a, b: a * b + 1, (xp.ones((0, 3)), xp.ones((0, 3))),
          (xp.asarray(2.0), xp.asarray(3.0)))
    check(lambda: xp.ones(3) * 2, ())


def test_nan_inf_and_signed_zero(device):
    a = xp.asarray([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0])
    check(lambda x: (x * -1.0, x / 0.0, xp.maximum(x, 0.0), xp.sum(x)), (a,))


def test_fused_functions_replay_inside_a_graph(device):
    magnitude = xp.fuse(lambda a, b: xp.sqrt(a * a + b * b))
    total = xp.fuse(lambda a: xp.sum(a * 2))
    rng = np.random.default_rng(4)
    a, b = values(rng, (50,), "float64"), values(rng, (50,), "float64")
    magnitude(a, b), total(a)  # their calls cached before the capture
    check(lambda x, y: magnitude(x, y) + total(x), (a, b), (b, a))


def test_graphs_nest(device):
    inner = xp.graph(lambda a: a * 3)
    inner(xp.ones(4))  # captured on its own first
    outer = xp.graph(lambda a: inner(a) + inner(a + 1))
    rng = np.random.default_rng(5)
    for _ in range(2):
        a = values(rng, (4,), "float64")
        same(outer(a), a * 3 + (a + 1) * 3)


@pytest.mark.parametrize("what, function", [
    ("on the host", lambda a: a * 2 if float(a[0]) > 0 else a),
    ("on the host", lambda a: a * bool(xp.all(a > 0))),
    ("on the host", lambda a: xp.asarray(np.asarray(a) + 1)),
    ("depends on the values", lambda a: a[a > 0]),
    ("depends on the values", lambda a: xp.nonzero(a)[0]),
    ("depends on the values", lambda a: xp.unique_values(a)),
    ("random numbers", lambda a: a + xp.random.default_rng(0).random(a.shape)),
    ("writes into its array argument 0", lambda a: a.__iadd__(1)),
    ("writes into its array argument 0", lambda a: a.__setitem__(0, 1.0)),
])
def test_what_a_graph_cannot_capture_raises(device, what, function):
    graphed = xp.graph(function)
    with pytest.raises(xp.CaptureError, match=what):
        graphed(xp.asarray([1.0, -2.0, 3.0]))
    assert not isinstance(device._backend, Recorder)
    a = xp.ones(3)  # the device works as before, its fast path too
    np.testing.assert_array_equal(host(a + a), [2.0, 2.0, 2.0])


def test_bad_arguments(device, other_device):
    graphed = xp.graph(lambda *args: args[0])
    with pytest.raises(TypeError, match="positional arguments only"):
        graphed(xp.ones(2), scale=2)
    with pytest.raises(TypeError, match="arrays and Python scalars, got list"):
        graphed([1, 2])
    with pytest.raises(ValueError, match="different devices"):
        graphed(xp.ones(2), xp.ones(2, device=other_device))
    with pytest.raises(TypeError, match="returns arrays, Python scalars"):
        xp.graph(lambda a: {"a": a})(xp.ones(2))
    with pytest.raises(TypeError, match="takes a function"):
        xp.graph(3)


def test_errors_of_the_function_are_its_own(device):
    calls = []

    def failing(a):
        calls.append(1)
        return a + xp.ones(5)  # shapes (3,) and (5,) do not broadcast

    graphed = xp.graph(failing)
    for _ in range(2):  # nothing captured: each call runs the function again
        with pytest.raises(ValueError):
            graphed(xp.ones(3))
    assert len(calls) == 2


def test_threads_replay_one_graph(device):
    graphed = xp.graph(arithmetic)
    rng = np.random.default_rng(6)
    inputs = [(values(rng, (64,), "float64"), values(rng, (64,), "float64")) for _ in range(8)]
    expected = [host(arithmetic(a, b)) for a, b in inputs]
    graphed(*inputs[0])
    failures = []

    def work(k: int) -> None:
        for _ in range(20):
            result = host(graphed(*inputs[k]))
            if not np.array_equal(result, expected[k]):
                failures.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


def test_threads_capture_in_turn(device):
    """Graphs first called from several threads at once capture one after the other."""
    rng = np.random.default_rng(9)
    inputs = [(values(rng, (32,), "float64"), values(rng, (32,), "float64")) for _ in range(6)]
    graphs = [xp.graph(arithmetic) for _ in inputs]
    results: dict[int, np.ndarray] = {}
    barrier = threading.Barrier(len(inputs))

    def work(k: int) -> None:
        barrier.wait()
        results[k] = host(graphs[k](*inputs[k]))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == len(inputs)
    assert not isinstance(device._backend, Recorder)  # every capture gave the device back
    for k, (a, b) in enumerate(inputs):
        np.testing.assert_array_equal(results[k], host(arithmetic(a, b)))
        same(graphs[k](a, b), arithmetic(a, b))


def test_other_threads_are_not_recorded(device):
    """A thread computing on the device while a graph captures runs its own work, which the
    graph does not replay."""
    outside = []
    started = threading.Event()

    def capture_while_another_thread_computes(a):
        worker = threading.Thread(target=lambda: outside.append(host(xp.ones(3) * 5)))
        worker.start()
        worker.join()
        started.set()
        return a * 2

    graphed = xp.graph(capture_while_another_thread_computes)
    same(graphed(xp.ones(3)), xp.ones(3) * 2)
    assert started.is_set()
    np.testing.assert_array_equal(outside[0], [5.0, 5.0, 5.0])


def test_replays_are_observed_by_hooks(device):
    class Names(Hook):
        def __init__(self):
            self.names = []

        def enter(self, kind, name, device, detail):
            if kind == "operation":
                self.names.append(name)

    def double(a):
        return a * 2

    graphed = xp.graph(double)
    a = xp.ones(3)
    graphed(a)
    with Names() as hook:
        graphed(a)
    assert hook.names == ["graph(test_replays_are_observed_by_hooks.<locals>.double)"]
    # (a replay does not run the namespace: multiply is not observed)


def test_a_deleted_graph_gives_its_memory_back(device):
    graphed = xp.graph(arithmetic)
    graphed(xp.ones(1000), xp.ones(1000))
    buffers = [weakref.ref(call.args[4]._buffer) for captured in graphed._captured.values()
               for call in captured.calls if call.primitive == "elementwise"]
    assert buffers
    del graphed
    gc.collect()
    assert all(buffer() is None for buffer in buffers)


def test_temporaries_share_memory(device):
    """A replay reuses the memory of temporaries no later operation reads, as an eager run
    does: twenty operations run in at most two buffers besides the arguments and the result."""
    graphed = xp.graph(arithmetic)
    a, b = xp.ones(1000), xp.full(1000, 0.5)
    same(graphed(a, b), arithmetic(a, b))
    captured, = graphed._captured.values()
    kept = {id(x._buffer) for x in (*captured.inputs, captured.results)}
    buffers = {id(x._buffer) for call in captured.calls if call.primitive == "elementwise"
               for x in (call.args[4], *call.args[1]) if isinstance(x, xp.Array)} - kept
    assert len(buffers) <= 2


def test_shared_memory_keeps_views_and_results_apart(device):
    rng = np.random.default_rng(8)

    def views(a):
        t = a * 2  # returned: its memory is the result's
        s = a + 1
        shifted = s[1:] + s[:-1]  # two views of s: its memory is not taken over
        halves = t[::2] * t[1::2]
        u = shifted * 3  # shifted's memory, computed in place
        w = xp.where(u > 0, u, -u) * 1  # where writes out before reading u
        low = xp.zeros_like(t) + 0.25
        clipped = xp.clip(t, low, None) * 1  # clip writes out before reading low
        return w, t, halves[:2], clipped

    for _ in range(2):
        check(views, (values(rng, (10,), "float64"),))


def test_large_arrays_replay_as_eager(device):
    rng = np.random.default_rng(7)
    a, b = values(rng, (300_000,), "float64"), values(rng, (300_000,), "float64")
    check(lambda x, y: xp.sum(x * y + 1.0), (a, b), (b, a))



@ON_CUDA
def test_runs_of_launches_replay_as_captured_graphs(device, monkeypatch):
    """On CUDA each run of consecutive kernel launches is captured once by the driver
    (`Driver.capture`: a CUDA graph through CuPy) and queued by `launch_graph` at each replay;
    a reduction between two runs stays a call of its own."""
    driver = device.backend.driver
    captured, queued = [], []
    capture, launch_graph = driver.capture, driver.launch_graph
    monkeypatch.setattr(driver, "capture", lambda index, launches: (
        captured.append(len(launches)), capture(index, launches))[1])
    monkeypatch.setattr(driver, "launch_graph", lambda graph, stream: (
        queued.append(graph), launch_graph(graph, stream))[1])

    def function(a, b):
        c = xp.exp(a) * b
        return c - xp.sum(c) / 3

    graphed = xp.graph(function)
    rng = np.random.default_rng(3)
    a, b = (values(rng, (4, 5), "float32") for _ in range(2))
    same(graphed(a, b), function(a, b))
    assert len(captured) == 2 and captured[0] >= 2 and not queued
    for _ in range(2):
        a, b = (values(rng, (4, 5), "float32") for _ in range(2))
        same(graphed(a, b), function(a, b))
    assert len(queued) == 4


@ON_CUDA
def test_launches_the_driver_cannot_capture_are_queued_one_by_one(device, monkeypatch):
    def refuse(index, launches):
        raise RuntimeError("cudaErrorStreamCaptureUnsupported")

    monkeypatch.setattr(device.backend.driver, "capture", refuse)
    graphed = xp.graph(arithmetic)
    rng = np.random.default_rng(4)
    a, b = (values(rng, (30,), "float64") for _ in range(2))
    with pytest.warns(RuntimeWarning, match="could not capture 10 kernel launches into a "
                                            "CUDA graph.*StreamCaptureUnsupported"):
        same(graphed(a, b), arithmetic(a, b))
    a = values(rng, (30,), "float64")
    same(graphed(a, b), arithmetic(a, b))
