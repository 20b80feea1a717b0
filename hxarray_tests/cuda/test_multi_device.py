"""Two simulated CUDA devices (HXARRAY_CUDA_SIM_DEVICES=2) in one process: copies between them
see every write their source's stream queued before them and none queued after them, a
reduction and a matmul split over both devices give the one-device answer, and the memory a copy
read can be reused at once. Each case runs in a fresh interpreter, because the simulator reads
its number of devices when it starts; the stream workers sleep at random after each piece of
work, so that the devices' streams interleave in many ways."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

PRELUDE = """
import random, time
import numpy as np
import hxarray as xp
from hxarray.hal.stream import set_worker_hook
random.seed(0)
set_worker_hook(lambda: time.sleep(random.random() * 1e-3))
assert [str(d) for d in xp.__array_namespace_info__().devices()].count("cuda:1") == 1
host = lambda x: np.asarray(x.to_device("cpu"))
"""


def _run(code: str) -> None:
    env = {**os.environ, "HXARRAY_CUDA_DRIVER": "sim", "HXARRAY_CUDA_SIM_DEVICES": "2"}
    done = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_copies_between_devices_follow_both_streams() -> None:
    _run("""
        for trial in range(20):
            s1 = xp.Stream("cuda:1")
            # queued on cuda:0's stream, perhaps still running when the copy is asked for
            x = xp.arange(100_000, dtype=xp.float64, device="cuda:0")
            for _ in range(3):
                x = x * 2.0 + 1.0
            with s1:  # the copy, and work on its result, on another stream of cuda:1
                y = x.to_device("cuda:1")
                # queued on cuda:0's stream once the copy is asked for: they must not reach x
                # before cuda:1's stream has read it
                x *= 0.0
                x -= 7.0
                z = xp.sum(y * 0.5)
                back = (y - 1.0).to_device("cuda:0")
            expected = np.arange(100_000, dtype=np.float64)
            for _ in range(3):
                expected = expected * 2.0 + 1.0
            assert y.device == xp.Device("cuda:1") and back.device == xp.Device("cuda:0")
            np.testing.assert_array_equal(host(y), expected)
            np.testing.assert_array_equal(host(back), expected - 1.0)
            np.testing.assert_array_equal(host(x), np.full(100_000, -7.0))
            assert float(z) == float(np.sum(expected * 0.5)), trial
    """)


def test_a_copied_source_can_be_freed_and_reused_at_once() -> None:
    _run("""
        for trial in range(20):
            x = xp.full((50_000,), float(trial), device="cuda:0")
            y = x.to_device("cuda:1")
            del x  # its block goes back to cuda:0's cache; the next allocation may take it
            xp.full((50_000,), -1.0, device="cuda:0")
            np.testing.assert_array_equal(host(y), np.full(50_000, float(trial)))
            # and the other way: a strided view (copied first) from cuda:1 to cuda:0
            w = xp.reshape(xp.arange(200, dtype=xp.int32, device="cuda:1"), (10, 20))[:, ::3]
            np.testing.assert_array_equal(host(w.to_device("cuda:0")),
                                          np.arange(200, dtype=np.int32).reshape(10, 20)[:, ::3])
    """)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_work_split_over_two_devices_gives_the_one_device_answer(dtype: str) -> None:
    _run(f"""
        rng = np.random.default_rng(1)
        a = rng.standard_normal((256, 96)).astype("{dtype}")
        b = rng.standard_normal((96, 64)).astype("{dtype}")
        halves = [xp.asarray(a[:128], device="cuda:0"), xp.asarray(a[128:], device="cuda:1")]
        weights = [xp.asarray(b, device="cuda:0"), xp.asarray(b, device="cuda:1")]
        products = [xp.matmul(h, w) for h, w in zip(halves, weights)]
        joined = xp.concat([products[0], products[1].to_device("cuda:0")])
        whole = xp.matmul(xp.asarray(a, device="cuda:0"), xp.asarray(b, device="cuda:0"))
        np.testing.assert_array_equal(host(joined), host(whole))
        sums = [xp.sum(h, axis=0) for h in halves]
        total = sums[0] + sums[1].to_device("cuda:0")
        expected = xp.sum(xp.asarray(a[:128], device="cuda:0"), axis=0) + \\
            xp.sum(xp.asarray(a[128:], device="cuda:0"), axis=0)
        np.testing.assert_array_equal(host(total), host(expected))
        try:
            halves[0] + halves[1]
        except ValueError as error:
            assert "different devices" in str(error)
        else:
            raise AssertionError("arrays on two devices were combined")
    """)


def test_a_dask_cluster_with_one_worker_per_device() -> None:
    """hxarray.dask.DeviceCluster: chunks spread over cuda:0 and cuda:1 by the workers that
    compute them, reductions and matmuls checked against numpy, and each worker's allocations
    on its own device alone (chunks that travel between workers land on the receiver's); and a
    worker of another cluster owning cuda:1 by its resource and hxarray.dask's preload."""
    pytest.importorskip("distributed")
    _run("""
        import dask, dask.array as da, distributed
        import hxarray.dask as hxd
        rng = np.random.default_rng(4)
        a, b = rng.standard_normal((600, 40)), rng.standard_normal((40, 30))
        with hxd.DeviceCluster(["cuda:0", "cuda:1"], dashboard_address=None) as cluster, \\
                distributed.Client(cluster) as client:
            owners = client.run(lambda: str(hxd.worker_device()))
            assert sorted(owners.values()) == ["cuda:0", "cuda:1"], owners
            d = hxd.to_device(da.from_array(a, chunks=(50, 40)), "worker").persist()
            e = hxd.to_device(da.from_array(b, chunks=(20, 30)), "worker")
            distributed.wait(d)
            held = client.run(lambda dask_worker: sorted({str(v.device)
                                                          for v in dask_worker.data.values()}))
            assert {owners[w]: held[w] for w in held} == {"cuda:0": ["cuda:0"],
                                                          "cuda:1": ["cuda:1"]}, held
            with dask.config.set({"array.backend": "hxarray", "array.hxarray.device": "worker"}):
                ones = da.ones((8, 6), chunks=(2, 6))
            got = client.compute([d.sum(), d.mean(axis=0), d.std(), d @ e, d.T @ d,
                                  ones.sum(axis=0)], sync=True)
            want = [a.sum(), a.mean(axis=0), a.std(), a @ b, a.T @ a, np.full(6, 8.0)]
            for g, w in zip(got, want):
                assert isinstance(g, xp.Array) and str(g.device) in owners.values(), g.device
                np.testing.assert_allclose(host(g), w, rtol=1e-12, atol=1e-12)
            peaks = client.run(lambda: {name: xp.memory_stats(name)["peak_allocated_bytes"]
                                        for name in ("cuda:0", "cuda:1")})
            for worker, peak in peaks.items():
                assert peak[owners[worker]] > 0 and sum(peak.values()) == peak[owners[worker]], \\
                    peaks
            try:
                cluster.scale(3)
            except ValueError as error:
                assert "one worker per device" in str(error), error
            else:
                raise AssertionError("a DeviceCluster grew past one worker per device")
        # a worker started by other means owns its device by its resource and the preload
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, resources={"cuda:1": 1},
                                      preload=["hxarray.dask"], dashboard_address=None) as other, \
                distributed.Client(other) as client:
            assert list(client.run(lambda: str(hxd.worker_device())).values()) == ["cuda:1"]
            got = client.compute(hxd.to_device(da.from_array(a, chunks=100), "worker").sum(0),
                                 sync=True)
            assert got.device == xp.Device("cuda:1")
            np.testing.assert_allclose(host(got), a.sum(0), rtol=1e-12)
    """)
