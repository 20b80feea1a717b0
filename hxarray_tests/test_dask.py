"""dask.array over hxarray chunks (hxarray/dask.py): the threaded scheduler, a 2-worker
LocalCluster, the hxarray array backend and chunks on the simulated cuda:0."""

from __future__ import annotations

import os
import pickle

# installed by the test extra: a missing dask fails here, never skips
import dask
import dask.array as da
import distributed
import numpy as np
import pytest

import hxarray as xp
import hxarray.dask as hxd
from hxarray_tests.oracle import assert_matches

RNG = np.random.default_rng(7)
A = RNG.standard_normal((12, 8))
B = RNG.standard_normal((8, 6))


def _close(got, expected, rtol=1e-12):
    assert isinstance(got, xp.Array), type(got)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=rtol, atol=1e-12)


def _workloads(d, e, a, b):
    """(name, dask expression, numpy expected) over d ~ a (12x8) and e ~ b (8x6)."""
    return [
        ("elementwise", da.sin(d) * 2 + d ** 2 - 1, np.sin(a) * 2 + a ** 2 - 1),
        ("ufunc", np.exp(d) / (1 + np.abs(d)), np.exp(a) / (1 + np.abs(a))),
        ("sum", d.sum(), a.sum()),
        ("sum axis keepdims", d.sum(axis=0, keepdims=True), a.sum(axis=0, keepdims=True)),
        ("max axis", d.max(axis=1), a.max(axis=1)),
        ("argmin", d.argmin(axis=0), a.argmin(axis=0)),
        ("mean", d.mean(axis=1), a.mean(axis=1)),
        ("var", d.var(axis=0), a.var(axis=0)),
        ("std ddof", d.std(ddof=1), a.std(ddof=1)),
        ("matmul", d @ e, a @ b),
        ("dot", da.dot(d.T, d), a.T @ a),
        ("tensordot", da.tensordot(d, d, axes=([0], [0])), np.tensordot(a, a, axes=([0], [0]))),
        ("slice", d[1:9:2, ::-3], a[1:9:2, ::-3]),
        ("mask", d[d > 0.5], a[a > 0.5]),
        ("concatenate", da.concatenate([d, d * 2], axis=1), np.concatenate([a, a * 2], axis=1)),
        ("stack", da.stack([d, d + 1]), np.stack([a, a + 1])),
        ("rechunk", d.rechunk((5, 3)) + 0, a),
        ("reshape", d.reshape(96), a.reshape(96)),
        ("transpose", d.transpose() + d.T, a.T * 2),
        ("where", da.where(d > 0, d, -d), np.where(a > 0, a, -a)),
        ("cumsum", d.cumsum(axis=0), a.cumsum(axis=0)),
    ]


def _blocked():
    x, y = xp.asarray(A), xp.asarray(B)
    return x, y, da.from_array(x, chunks=(5, 3)), da.from_array(y, chunks=(3, 4))


def test_from_array_keeps_hxarray_chunks_and_meta():
    x, _, d, _ = _blocked()
    assert isinstance(d._meta, xp.Array) and d.dtype == np.float64
    blocks = d.blocks[0, 0].compute()
    assert isinstance(blocks, xp.Array) and blocks.shape == (5, 3)
    m = d.map_blocks(lambda b: b * 2, meta=xp.empty((0, 0), dtype=xp.float64))
    assert isinstance(m._meta, xp.Array)
    _close(m.compute(scheduler="threads"), A * 2)


def test_operations_on_the_threaded_scheduler():
    x, y, d, e = _blocked()
    before = np.asarray(x).copy()
    with dask.config.set(scheduler="threads"):
        for name, expr, expected in _workloads(d, e, A, B):
            got = expr.compute()
            assert isinstance(got, xp.Array), name
            _close(got, expected) if got.dtype == xp.float64 else assert_matches(got, expected)
    np.testing.assert_array_equal(np.asarray(x), before)  # inputs untouched


def test_blockwise_and_percentile_and_integer_dtypes():
    x = xp.asarray(np.arange(40, dtype=np.int32).reshape(8, 5))
    d = da.from_array(x, chunks=(3, 2))
    out = da.blockwise(lambda u, v: u * v + 1, "ij", d, "ij", d, "ij", dtype=np.int32)
    got = out.compute(scheduler="threads")
    assert_matches(got, np.arange(40, dtype=np.int32).reshape(8, 5) ** 2 + 1)
    assert_matches(d.sum(axis=1).compute(scheduler="threads"),
                   np.arange(40, dtype=np.int32).reshape(8, 5).sum(axis=1))
    p = da.percentile(da.from_array(xp.asarray(A[:, 0]), chunks=4), [25, 50]).compute()
    expected = da.percentile(da.from_array(A[:, 0], chunks=4), [25, 50]).compute()
    _close(p, expected)  # dask's merge of per-chunk percentiles, as on numpy chunks


def test_indexing_with_an_integer_dask_array_of_hxarray_chunks():
    """dask reads numpy's dtype.kind ("i", "u") to take its integer-array path."""
    d = da.from_array(xp.asarray(A), chunks=(3, 2))
    rows = da.from_array(xp.asarray(np.array([7, 0, 3, 3])), chunks=2)
    got = d[rows].compute(scheduler="threads")
    assert isinstance(got, xp.Array)
    assert_matches(got, A[[7, 0, 3, 3]])
    assert_matches(d[:, rows[1:]].compute(scheduler="threads"), A[:, [0, 3, 3]])


def test_least_squares_on_a_tall_skinny_array():
    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((2000, 5)), rng.standard_normal(2000)
    dX = da.from_array(xp.asarray(X), chunks=(250, 5))
    dy = da.from_array(xp.asarray(y), chunks=250)
    gram, rhs = dask.compute(dX.T @ dX, dX.T @ dy, scheduler="threads")
    beta = xp.linalg.solve(gram, rhs)
    _close(beta, np.linalg.solve(X.T @ X, X.T @ y), rtol=1e-10)


def test_the_hxarray_backend():
    with dask.config.set({"array.backend": "hxarray", "scheduler": "threads"}):
        ones = da.ones((7, 5), chunks=(3, 3), dtype=np.float32)
        full = da.full((4,), 2.5, chunks=2)
        ar = da.arange(0, 10, 2, chunks=2)
        rand = da.random.random((6, 6), chunks=3)
        for arr in (ones, full, ar, rand, da.zeros(5, chunks=2), da.empty((2, 2), chunks=1)):
            assert isinstance(arr._meta, xp.Array)
            assert isinstance(arr.compute(), xp.Array)
        assert_matches(ones.compute(), np.ones((7, 5), np.float32))
        assert_matches(full.compute(), np.full(4, 2.5))
        assert_matches(ar.compute(), np.arange(0, 10, 2))
        r = np.asarray(rand.compute())
        assert r.shape == (6, 6) and ((r >= 0) & (r < 1)).all()
        chunk = ones.blocks[0, 0].compute()
        chunk[0, 0] = 9  # a real chunk: the write stays in its element
        assert float(xp.sum(chunk)) == 9 + 8
        with pytest.raises(NotImplementedError, match="default_rng"):
            da.random.default_rng().random(3)
    with dask.config.set({"array.backend": "hxarray", "array.hxarray.device": "nope:0"}):
        with pytest.raises(ValueError):
            da.ones(3).compute()


def test_pickle_is_out_of_band_for_cpu_chunks():
    x = xp.asarray(A)
    buffers = []
    data = pickle.dumps(x, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1 and len(data) < 1000
    assert np.shares_memory(np.asarray(buffers[0].raw()), np.asarray(x))
    frames = distributed.protocol.serialize(x)[1]
    assert sum(len(memoryview(f).cast("B")) for f in frames) < A.nbytes + 2000


def test_thread_rule():
    assert hxd.worker_threads(2, 2, 1) == 1
    assert hxd.worker_threads(16, 2, 2) == 4
    assert hxd.worker_threads(4, 8, 2) == 1


def test_to_device_rejects_bad_input():
    with pytest.raises(TypeError, match="dask array"):
        hxd.to_device(xp.asarray(A), "cpu")
    with pytest.raises(ValueError):
        hxd.to_device(da.from_array(A, chunks=4), "nope:0")


def test_the_worker_device_outside_a_device_cluster():
    """to_device(..., "worker") and the backend's "worker" device: each chunk on the default
    device of the process computing it (here, this one's); device arrays serialised for
    distributed come back on their own device outside a device worker."""
    assert hxd.worker_device() is None
    default = xp.__array_namespace_info__().default_device()
    d = hxd.to_device(da.from_array(A, chunks=(5, 3)), "worker")
    got = d.sum(axis=0).compute(scheduler="threads")
    assert got.device == default
    _close(got, A.sum(axis=0))
    with dask.config.set({"array.backend": "hxarray", "array.hxarray.device": "worker"}):
        ones = da.ones((4, 3), chunks=2)
        rand = da.random.random((4, 3), chunks=2)
    assert ones.compute(scheduler="threads").device == default
    assert rand.compute(scheduler="threads").device == default
    x = xp.asarray(A[:3], dtype=xp.float32)
    back = distributed.protocol.deserialize(*distributed.protocol.serialize(x))
    assert back.device == x.device and back.dtype == xp.float32
    assert_matches(back, A[:3].astype(np.float32))


def test_device_cluster_rejects_bad_input():
    """DeviceCluster checks its devices and worker count before starting any process."""
    with pytest.raises(ValueError, match="cuda:7"):
        hxd.DeviceCluster(["cuda:7"])
    with pytest.raises(ValueError, match="unknown device type 'nope'"):
        hxd.DeviceCluster(["nope:0"])
    with pytest.raises(ValueError, match=r"one worker per device: 1 devices \(cpu\) but "
                                         "n_workers=2"):
        hxd.DeviceCluster(["cpu"], n_workers=2)
    with pytest.raises(ValueError, match="named twice"):
        hxd.DeviceCluster(["cpu", "cpu"])
    with pytest.raises(ValueError, match="own process"):
        hxd.DeviceCluster(["cpu"], processes=False)


def test_a_worker_owning_a_device_is_checked(monkeypatch):
    """A worker owns the device its resources name: one device, which exists and is the
    worker process's default device. Otherwise its preload raises, naming what is wrong, and
    the worker's tasks that would put chunks on its device raise the same."""
    from types import SimpleNamespace

    def worker(**resources):
        return SimpleNamespace(name="w", state=SimpleNamespace(total_resources=resources))

    default = xp.__array_namespace_info__().default_device()
    # this process resolved its default device long ago: the check must not set the variable
    monkeypatch.setenv("HXARRAY_DEFAULT_DEVICE", str(default))
    monkeypatch.setattr(hxd, "_worker_failure", [])
    hxd._take_device(worker(GPU=1))  # no device named: not a device worker
    assert hxd.worker_device() is None and not hxd._worker_failure
    with pytest.raises(ValueError, match="several devices"):
        hxd._take_device(worker(**{"cpu": 1, "ref:0": 1}))
    with pytest.raises(ValueError, match="resource 'cuda:7'"):
        hxd._take_device(worker(**{"cuda:7": 1}))
    other = next(d for d in xp.__array_namespace_info__().devices() if d != default)
    with pytest.raises(ValueError, match=f"HXARRAY_DEFAULT_DEVICE={other}"):
        hxd._take_device(worker(**{str(other): 1}))
    assert hxd.worker_device() is None
    with pytest.raises(ValueError, match=f"does not own a device: .*{other}"):
        hxd.to_device(da.from_array(A, chunks=6), "worker").compute(scheduler="sync")


def test_import_hxarray_does_not_import_dask():
    import subprocess
    import sys

    code = "import sys, hxarray; print('dask' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- a 2-worker LocalCluster -------------------------------------------------------------------


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, memory_limit="1GiB") as cluster:
        with distributed.Client(cluster) as c:
            yield c


def test_operations_on_a_local_cluster(client):
    x, y, d, e = _blocked()
    before = np.asarray(x).copy()
    names, exprs, expected = zip(*_workloads(d, e, A, B))
    results = client.compute(list(exprs), sync=True)
    for name, got, want in zip(names, results, expected):
        assert isinstance(got, xp.Array), name
        _close(got, want) if got.dtype == xp.float64 else assert_matches(got, want)
    np.testing.assert_array_equal(np.asarray(x), before)


def test_random_numbers_on_a_local_cluster_are_the_unchunked_stream(client):
    """hxarray.dask.random's chunks, computed by two worker processes, hold the values one
    unchunked draw gives: each chunk starts at its own place in the stream."""
    for method, args in [("random", ()), ("standard_normal", ()), ("integers", (-7, 1000))]:
        lazy = getattr(hxd.random.default_rng(3), method)(*args, (37, 11), chunks=(5, 4))
        got = client.compute(lazy, sync=True)
        want = getattr(xp.random.default_rng(3), method)(*args, (37, 11))
        assert isinstance(got, xp.Array), method
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), method


def test_least_squares_and_thread_rule_on_a_local_cluster(client):
    rng = np.random.default_rng(5)
    X, y = rng.standard_normal((4000, 6)), rng.standard_normal(4000)
    dX = da.from_array(xp.asarray(X), chunks=(500, 6))
    dy = da.from_array(xp.asarray(y), chunks=500)
    gram, rhs = client.compute([dX.T @ dX, dX.T @ dy], sync=True)
    _close(xp.linalg.solve(gram, rhs), np.linalg.solve(X.T @ X, X.T @ y), rtol=1e-10)
    cores = len(os.sched_getaffinity(0))
    threads = client.run(xp.get_num_threads)
    if "HXARRAY_NUM_THREADS" not in os.environ:
        assert set(threads.values()) == {hxd.worker_threads(cores, 2, 1)}


# -- chunks on the simulated cuda:0 ----------------------------------------------------------


@pytest.fixture(scope="module")
def cuda():
    try:
        return xp.empty(0, device="cuda:0").device
    except (ValueError, RuntimeError) as error:
        pytest.skip(f"no cuda:0 ({error}); make test runs these with HXARRAY_CUDA_DRIVER=sim")


def test_chunks_on_cuda(cuda):
    d = hxd.to_device(da.from_array(A, chunks=(5, 4)), cuda)
    assert isinstance(d._meta, xp.Array) and d._meta.device == cuda
    moved = da.from_array(xp.asarray(A), chunks=(6, 4)).map_blocks(
        lambda b: b.to_device("cuda:0"))
    with dask.config.set(scheduler="threads"):
        total, scaled, col = dask.compute(d.sum(axis=0), (d * 2 + moved), d.mean(axis=1))
    for got, want in ((total, A.sum(axis=0)), (scaled, A * 3), (col, A.mean(axis=1))):
        assert isinstance(got, xp.Array) and got.device == cuda
        _close(got.to_device("cpu"), want)
    with dask.config.set({"array.backend": "hxarray", "array.hxarray.device": "cuda:0"}):
        ones = da.ones((4, 4), chunks=2).compute(scheduler="threads")
    assert ones.device == cuda and float(xp.sum(ones)) == 16
