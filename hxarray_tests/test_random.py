"""`hxarray.random` against numpy's Philox as the oracle (raw words, random, uniform, choice with
p, state, jumped, advance), scipy.stats for the distributions that are hxarray's own (integers,
normal, exponential), and bit identity across devices, threads and split requests."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

import hxarray as xp
from hxarray.backends import philox as rng

from .oracle import CPU_ONLY, ON_CUDA, ON_EACH_DEVICE

pytestmark = ON_EACH_DEVICE

SEEDS = [0, 42, 2**70 + 5, [1, 2, 3]]
N = 100_000


def host(x: xp.Array) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


def numpy_generator(seed) -> np.random.Generator:
    return np.random.Generator(np.random.Philox(seed))


def same_state(a: dict, b: dict) -> bool:
    return (a["bit_generator"] == b["bit_generator"] and
            all(np.array_equal(a["state"][k], b["state"][k]) for k in ("counter", "key")) and
            np.array_equal(a["buffer"], b["buffer"]) and
            all(a[k] == b[k] for k in ("buffer_pos", "has_uint32", "uinteger")))


# -- known answers: numpy's Philox ----------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_raw_words_and_state_are_numpys(seed):
    ours, theirs = xp.random.Philox(seed), np.random.Philox(seed)
    assert same_state(ours.state, theirs.state)
    for n in (1, 3, 4, 9, 0, 1000):
        assert np.array_equal(host(ours.random_raw(n)), theirs.random_raw(n))
        assert same_state(ours.state, theirs.state)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_is_numpys_in_both_dtypes(seed):
    ours, theirs = xp.random.default_rng(seed), numpy_generator(seed)
    # odd float32 counts leave numpy's half word buffered; raw words pass it by
    for dtype, n in [("float64", 5), ("float32", 3), ("float32", 4), ("float64", 2),
                     ("float32", 1), ("float32", 7), ("float64", 1000), ("float32", 1001)]:
        got = host(ours.random(n, dtype=getattr(xp, dtype)))
        assert got.dtype == np.dtype(dtype)
        assert np.array_equal(got, theirs.random(n, dtype=dtype)), (dtype, n)
        assert same_state(ours.bit_generator.state, theirs.bit_generator.state)
    assert np.array_equal(host(ours.bit_generator.random_raw(3)),
                          theirs.bit_generator.random_raw(3))
    assert float(ours.random()) == theirs.random()


def test_uniform_and_choice_with_p_are_numpys():
    ours, theirs = xp.random.default_rng(7), numpy_generator(7)
    assert np.array_equal(host(ours.uniform(-2.5, 10.0, (20, 3))),
                          theirs.uniform(-2.5, 10.0, (20, 3)))
    p = [0.1, 0.2, 0.05, 0.65]
    assert np.array_equal(host(ours.choice(4, 50, p=p)), theirs.choice(4, 50, p=p))


def test_jumped_advance_and_state_round_trip():
    ours, theirs = xp.random.Philox(3), np.random.Philox(3)
    ours.random_raw(5), theirs.random_raw(5)
    assert np.array_equal(host(ours.jumped(2).random_raw(7)), theirs.jumped(2).random_raw(7))
    generator = xp.random.default_rng(3).jumped()
    assert np.array_equal(host(generator.random(6)),
                          np.random.Generator(np.random.Philox(3).jumped()).random(6))
    ours.advance(2**64 + 3), theirs.advance(2**64 + 3)
    assert same_state(ours.state, theirs.state)
    assert np.array_equal(host(ours.random_raw(6)), theirs.random_raw(6))
    theirs.random_raw(2)
    ours.state = theirs.state
    assert np.array_equal(host(ours.random_raw(9)), theirs.random_raw(9))
    copy = xp.random.Philox(0)
    copy.state = ours.state
    assert np.array_equal(host(copy.random_raw(4)), host(ours.random_raw(4)))


def test_spawn_follows_the_seed_sequence():
    children = xp.random.default_rng(5).spawn(2)
    theirs = np.random.Generator(np.random.Philox(5)).spawn(2)
    for a, b in zip(children, theirs):
        assert np.array_equal(host(a.random(4)), b.random(4))


# -- one source, every device, any split ---------------------------------------------------------
DRAWS = {
    "raw": lambda g, n: g.bit_generator.random_raw(n),
    "random64": lambda g, n: g.random(n),
    "random32": lambda g, n: g.random(n, dtype=xp.float32),
    "uniform32": lambda g, n: g.uniform(-1, 3, n, dtype=xp.float32),
    "integers": lambda g, n: g.integers(-5, 1_000_003, n),
    "integers_u8": lambda g, n: g.integers(0, 200, n, dtype=xp.uint8),
    "normal64": lambda g, n: g.normal(1.5, 2.0, n),
    "normal32": lambda g, n: g.standard_normal(n, dtype=xp.float32),
    "exponential": lambda g, n: g.exponential(3.0, n),
}


@pytest.mark.parametrize("name", DRAWS)
def test_same_bits_on_every_device_and_split(name, device):
    draw = DRAWS[name]
    n = 3001
    whole = host(draw(xp.random.default_rng(11), n))
    with xp.device_scope(xp.Device("cpu")):
        reference = host(draw(xp.random.default_rng(11), n))
    assert whole.tobytes() == reference.tobytes()
    g = xp.random.default_rng(11)
    parts = [host(draw(g, k)) for k in (1, 1500, 0, 1500)]
    assert np.concatenate(parts).tobytes() == whole.tobytes()


@ON_CUDA
@pytest.mark.parametrize("name", DRAWS)
def test_one_kernel_launch_per_draw_on_cuda(name, device):
    """On CUDA a draw is one generated kernel: the words and the transform in one launch."""
    draw, g = DRAWS[name], xp.random.default_rng(5)
    draw(g, 2000)  # (compiled and loaded before counting)
    before = device.backend.stats(device)["kernel_launches"]
    draw(g, 4000)
    assert device.backend.stats(device)["kernel_launches"] - before == 1


@CPU_ONLY
@pytest.mark.parametrize("name", DRAWS)
def test_compiled_loop_numpy_and_threads_agree(name, device, monkeypatch):
    """The CPU's compiled loop over threads gives the numpy implementation's bits."""
    from hxarray.backends.cpu import parallel

    monkeypatch.setattr(parallel, "machine_busy", lambda: False)  # split even on a busy CI
    draw = DRAWS[name]
    n = 300_001
    with xp.device_scope(xp.Device("cpu")):
        with xp.threads(1):
            one = host(draw(xp.random.default_rng(2), n))
        with xp.threads(4):
            four = host(draw(xp.random.default_rng(2), n))
    assert one.tobytes() == four.tobytes()
    g = xp.random.default_rng(2)
    kind, params = _kind_of(name, g)
    if kind is not None:
        expected = rng.evaluate(rng.KINDS[kind], one.dtype, g.bit_generator._key, 4, 0, n,
                                params)
        assert expected.tobytes() == one.tobytes()


@CPU_ONLY
@pytest.mark.parametrize("name", ["random32", "integers", "normal64"])
def test_cpu_without_a_compiler_gives_the_same_bits(name, monkeypatch, device):
    """The CPU's numpy evaluation (no C++ compiler), chunked over threads, is the compiled
    loop bit for bit."""
    from hxarray.backends.cpu import fused

    draw, n = DRAWS[name], 300_001
    with xp.device_scope(xp.Device("cpu")), xp.threads(2):
        compiled = host(draw(xp.random.default_rng(6), n))
        monkeypatch.setattr(fused, "random_loop", lambda kind, dtype: None)
        interpreted = host(draw(xp.random.default_rng(6), n))
    assert compiled.tobytes() == interpreted.tobytes()


def _kind_of(name, g):
    bits = xp.random._bits
    return {"raw": ("raw", (0, 0)), "random64": ("random", (0, 0)),
            "random32": ("random32", (0, 0)), "uniform32": ("uniform", (bits(-1.0), bits(4.0))),
            "integers": ("integers", (-5 & rng.MASK64, 1_000_008)),
            "integers_u8": ("integers", (0, 200)),
            "normal64": ("normal", (bits(1.5), bits(2.0))),
            "normal32": ("normal", (bits(0.0), bits(1.0))),
            "exponential": ("exponential", (0, bits(3.0)))}[name]


# -- distributions ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_continuous_distributions(dtype, device):
    g = xp.random.default_rng(123)
    dt = getattr(xp, dtype)
    cases = [(g.random(N, dtype=dt), "uniform", ()),
             (g.uniform(2.0, 5.0, N, dtype=dt), "uniform", (2.0, 3.0)),
             (g.standard_normal(N, dtype=dt), "norm", ()),
             (g.normal(-1.0, 0.5, N, dtype=dt), "norm", (-1.0, 0.5)),
             (g.exponential(2.0, N, dtype=dt), "expon", (0.0, 2.0))]
    for values, distribution, args in cases:
        v = host(values)
        assert v.dtype == np.dtype(dtype)
        cdf = getattr(scipy.stats, distribution)(*args).cdf  # (scipy 1.18's names take no args)
        assert scipy.stats.kstest(v, cdf).pvalue > 1e-3, distribution
    # the tails of Box-Muller: |z| > 4 about as often as for a normal
    z = host(g.standard_normal(N))
    assert abs(np.mean(np.abs(z) > 3) - 2 * scipy.stats.norm.sf(3)) < 0.0012


@pytest.mark.parametrize("low,high,dtype", [(0, 7, "int64"), (-3, 1_000_003, "int64"),
                                            (-128, 128, "int8"), (0, 65535, "uint16"),
                                            (10, 2**40 + 10, "int64")])
def test_integers_are_uniform(low, high, dtype, device):
    g = xp.random.default_rng(99)
    v = host(g.integers(low, high, N, dtype=getattr(xp, dtype))).astype(np.int64)
    assert v.min() >= low and v.max() < high
    bins = min(high - low, 64)
    counts = np.bincount((v - low) * bins // (high - low), minlength=bins)
    assert scipy.stats.chisquare(counts).pvalue > 1e-3


def test_integers_over_the_whole_int64_range(device):
    g = xp.random.default_rng(5)
    v = host(g.integers(-2**63, 2**63, N))
    top = (v.view(np.uint64) >> np.uint64(58)).astype(np.int64)
    assert scipy.stats.chisquare(np.bincount(top, minlength=64)).pvalue > 1e-3
    assert (v < 0).any() and (v > 0).any()
    u = host(g.integers(0, 2**64, 1000, dtype=xp.uint64))
    assert u.max() > 2**63
    assert host(g.integers(5, 5, 10, endpoint=True)).tolist() == [5] * 10


def test_permutation_shuffle_and_choice(device):
    g = xp.random.default_rng(8)
    p = host(g.permutation(1000))
    assert sorted(p.tolist()) == list(range(1000)) and p.tolist() != list(range(1000))
    x = xp.reshape(xp.arange(12, dtype=xp.float64), (6, 2))
    shuffled = host(g.permutation(x))
    assert sorted(shuffled[:, 0].tolist()) == list(range(0, 12, 2))
    assert np.array_equal(shuffled[:, 1], shuffled[:, 0] + 1)
    y = xp.arange(50)
    g.shuffle(y)
    assert sorted(host(y).tolist()) == list(range(50))
    picked = host(g.choice(10, 6, replace=False))
    assert len(set(picked.tolist())) == 6
    weighted = host(g.choice(4, 3, replace=False, p=[0.5, 0.0, 0.25, 0.25]))
    assert 1 not in weighted.tolist() and len(set(weighted.tolist())) == 3
    counts = np.bincount(host(g.choice(3, N, p=[0.2, 0.3, 0.5])), minlength=3)
    assert scipy.stats.chisquare(counts, [0.2 * N, 0.3 * N, 0.5 * N]).pvalue > 1e-3
    rows = host(g.choice(x, 4))
    assert rows.shape == (4, 2) and np.array_equal(rows[:, 1], rows[:, 0] + 1)
    # the orders of 3 elements are equally likely
    orders = [tuple(host(g.permutation(3)).tolist()) for _ in range(600)]
    counts = np.unique(np.array(orders), axis=0, return_counts=True)[1]
    assert len(counts) == 6 and scipy.stats.chisquare(counts).pvalue > 1e-3


def test_module_functions_follow_seed(device):
    xp.random.seed(4)
    a = host(xp.random.random(5))
    b = [host(f()) for f in (lambda: xp.random.rand(2, 3), lambda: xp.random.randn(4),
                             lambda: xp.random.normal(0, 1, 3), lambda: xp.random.uniform(size=2),
                             lambda: xp.random.integers(9, size=3),
                             lambda: xp.random.randint(2, 9, 3), lambda: xp.random.choice(5, 3),
                             lambda: xp.random.permutation(5))]
    xp.random.seed(4)
    assert np.array_equal(host(xp.random.random(5)), a)
    assert np.array_equal(a, numpy_generator(4).random(5))
    assert b[0].shape == (2, 3) and b[1].shape == (4,)
    z = xp.arange(5)
    xp.random.shuffle(z)
    assert sorted(host(z).tolist()) == list(range(5))


def test_stress_draws_agree_with_the_numpy_evaluation(device):
    """A bounded run of stress/random_streams.py on the device."""
    from stress import random_streams

    assert random_streams.main(str(device), 20, 1)["mismatches"] == 0


def test_bad_arguments(device):
    g = xp.random.default_rng(0)
    with pytest.raises(ValueError, match="size"):
        g.random(-1)
    with pytest.raises(ValueError, match="size"):
        g.normal(size=(2, -3))
    with pytest.raises(ValueError, match="low >= high"):
        g.integers(5, 5)
    with pytest.raises(ValueError, match="high is out of bounds"):
        g.integers(0, 300, dtype=xp.uint8)
    with pytest.raises(ValueError, match="p do not sum to 1"):
        g.choice(3, p=[0.5, 0.6, 0.1])
    with pytest.raises(ValueError, match="p are not non-negative"):
        g.choice(3, p=[1.5, -0.5, 0.0])
    with pytest.raises(ValueError, match="a and p"):
        g.choice(3, p=[0.5, 0.5])
    with pytest.raises(ValueError, match="larger sample"):
        g.choice(3, 4, replace=False)
    with pytest.raises(ValueError, match="fewer non-zero"):
        g.choice(3, 2, replace=False, p=[1.0, 0.0, 0.0])
    with pytest.raises(TypeError, match="seed"):
        xp.random.default_rng(1.5)
    with pytest.raises(TypeError, match="seed"):
        xp.random.default_rng("abc")
    with pytest.raises(ValueError, match="scale"):
        g.normal(0, -1)
    with pytest.raises(ValueError, match="scale"):
        g.exponential(-1)
    with pytest.raises(TypeError, match="dtype"):
        g.random(3, dtype=xp.int32)
    with pytest.raises(TypeError, match="dtype"):
        g.integers(0, 3, dtype=xp.float64)
    with pytest.raises(ValueError, match="x is read-only"):
        g.shuffle(xp.broadcast_to(xp.arange(3), (2, 3)))  # a broadcast view is read-only


@CPU_ONLY
def test_dask_values_do_not_depend_on_chunks(device):
    dask_random = pytest.importorskip("hxarray.dask").random
    for method, args in [("random", ()), ("integers", (-7, 1000)), ("normal", (1.0, 2.0)),
                         ("exponential", (0.5,)), ("uniform", (-1.0, 1.0))]:
        expected = host(getattr(xp.random.default_rng(3), method)(*args, (37, 11)))
        for chunks in [(37, 11), (5, 4), (16, 11), (1, 3)]:
            lazy = getattr(dask_random.default_rng(3), method)(*args, (37, 11), chunks=chunks)
            assert host(lazy.compute()).tobytes() == expected.tobytes(), (method, chunks)
    with pytest.raises(TypeError, match="uniform"):
        dask_random.default_rng(0).random(3, dtype=xp.float32)
