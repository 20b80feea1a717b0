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
