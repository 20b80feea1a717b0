"""The toy backend plug-in (hxarray_tests/plugin_pkg), found through the `hxarray.backends` entry
point: its device, its arrays and their memory, and moving data between it and the CPU."""

from __future__ import annotations

import gc
import os
import pickle
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest

import hxarray as xp
from hxarray.backends.registry import BackendRegistry
from hxarray.hal import Device, DeviceType, DeviceUnavailableError, current_stream

if not any(ep.name == "toy" for ep in entry_points(group="hxarray.backends")):
    pytest.skip("the toy backend plug-in is not installed; run "
                "`pip install -e hxarray_tests/plugin_pkg` (make test does)",
                allow_module_level=True)

from hxarray_toy import ToyAllocator, ToyBackend  # noqa: E402

TOY = Device("toy")
ROOT = Path(__file__).resolve().parents[1]


def _toy_backend() -> ToyBackend:
    backend = TOY.backend
    assert isinstance(backend, ToyBackend)
    return backend


def test_toy_device_is_discovered() -> None:
    assert TOY is Device("toy:0") is Device(DeviceType("toy"), 0)
    assert str(TOY) == "toy:0" and repr(TOY) == "Device('toy:0')"
    backend = _toy_backend()
    assert backend.device_type is DeviceType("toy") and backend.device_count() == 1
    assert pickle.loads(pickle.dumps(TOY)) is TOY


def test_discovery_through_real_entry_points() -> None:
    (ep,) = [ep for ep in entry_points(group="hxarray.backends") if ep.name == "toy"]
    assert ep.value == "hxarray_toy:ToyBackend"
    reg = BackendRegistry()
    backend = reg.get("toy")
    assert type(backend) is ToyBackend and backend is not TOY.backend
    assert {"cpu", "toy"} <= set(reg.available_types())
    assert {Device("cpu"), TOY} <= set(reg.devices())


def test_fresh_process_resolves_the_plugin_type() -> None:
    code = ("import pickle, sys, hxarray as xp; d = pickle.loads(bytes.fromhex(sys.argv[1])); "
            "print(d, xp.zeros(2).device, xp.asarray([1, 2]).device)")
    env = {**os.environ, "HXARRAY_DEFAULT_DEVICE": "toy"}
    out = subprocess.run([sys.executable, "-c", code, pickle.dumps(TOY).hex()], env=env,
                         capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split() == ["toy:0", "toy:0", "toy:0"]


def test_namespace_info_lists_toy_devices() -> None:
    devices = xp.__array_namespace_info__().devices()
    assert TOY in devices and Device("cpu") in devices
    assert Device("toy:1") not in devices


def test_second_toy_device_does_not_exist() -> None:
    with pytest.raises(DeviceUnavailableError, match=r"toy:1 does not exist: .* 1 toy device"):
        xp.zeros(3, device="toy:1")


def test_capabilities() -> None:
    caps = TOY.capabilities()
    assert (caps["name"], caps["vendor"], caps["total_memory"]) == \
        ("toy device", "hxarray tests", 1 << 30)
    assert 0 < caps["free_memory"] <= caps["total_memory"]
    assert caps["compute_units"] >= 1 and isinstance(caps["simd"], list)


def test_asarray_on_toy_uses_the_toy_allocator() -> None:
    backend = _toy_backend()
    raw = backend.raw_allocator
    assert isinstance(raw, ToyAllocator) and raw.device is TOY
    gc.collect()  # arrays other tests left to the collector go now, not during this test
    xp.empty_cache("toy")
    cpu_before, toy_before = xp.memory_stats("cpu"), xp.memory_stats("toy")
    mallocs = raw.mallocs
    data = np.arange(100, dtype=np.float32)
    x = xp.asarray(data, device="toy")
    assert x.device is TOY and x._buffer.device is TOY
    assert x._buffer.allocator is backend.allocator(TOY) and x._buffer.allocator.raw is raw
    assert raw.mallocs == mallocs + 1
    toy_after = xp.memory_stats("toy")
    assert toy_after["allocated_bytes"] - toy_before["allocated_bytes"] == 448  # 400 -> class 448
    assert xp.memory_stats("cpu")["num_allocs"] == cpu_before["num_allocs"]
    assert np.array_equal(np.asarray(x), data)
    del x
    gc.collect()
    assert xp.memory_stats("toy")["allocated_bytes"] == toy_before["allocated_bytes"]
    frees = raw.frees
    xp.empty_cache("toy")
    assert raw.frees > frees and xp.memory_stats("toy")["cached_bytes"] == 0


def test_creation_functions_on_toy() -> None:
    cases = [
        (xp.zeros((2, 3), device="toy"), np.zeros((2, 3))),
        (xp.ones(4, dtype=xp.int32, device=TOY), np.ones(4, np.int32)),
        (xp.full((2, 2), 7.5, device="toy"), np.full((2, 2), 7.5)),
        (xp.arange(0, 10, 3, device="toy"), np.arange(0, 10, 3)),
        (xp.linspace(0, 1, 5, device="toy"), np.linspace(0, 1, 5)),
        (xp.eye(3, device="toy"), np.eye(3)),
        (xp.zeros_like(xp.asarray([1, 2], device="toy")), np.zeros(2, np.int64)),
    ]
    for x, expected in cases:
        assert x.device is TOY and x._buffer.allocator is _toy_backend().allocator(TOY)
        assert x.dtype == xp.asarray(expected).dtype
        assert np.array_equal(np.asarray(x), expected)


def test_arithmetic_on_toy_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((5, 3))
    x, y = xp.asarray(a, device="toy"), xp.asarray(b, device="toy")
    results = {
        "add": (x + 2.0 * x, a + 2.0 * a),
        "exp": (xp.exp(x), np.exp(a)),
        "matmul": (x @ y, a @ b),
        "sum": (xp.sum(x, axis=0), np.sum(a, axis=0)),
        "max": (xp.max(y), np.max(b)),
        "sort": (xp.sort(x, axis=1), np.sort(a, axis=1)),
        "where": (xp.where(x > 0, x, 0.0), np.where(a > 0, a, 0.0)),
        "view": (x[1:3, ::2].mT, a[1:3, ::2].T),
        "concat": (xp.concat([x, x], axis=0), np.concatenate([a, a], axis=0)),
    }
    for name, (got, expected) in results.items():
        assert got.device is TOY, name
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-12, err_msg=name)


def test_to_device_copies_between_cpu_and_toy() -> None:
    data = np.arange(6.0).reshape(2, 3)
    cpu = xp.asarray(data)
    toy = cpu.to_device("toy")
    assert toy.device is TOY and cpu.device is Device("cpu")
    assert np.array_equal(np.asarray(toy), data)
    back = toy.to_device(Device("cpu"))
    assert back.device is Device("cpu") and np.array_equal(np.asarray(back), data)
    assert toy.to_device("toy:0") is toy
    toy[0, 0] = -1.0  # the copies do not share memory
    back[1, 1] = -2.0
    assert np.asarray(cpu).tolist() == data.tolist()
    assert np.asarray(toy).tolist() == [[-1.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    moved = xp.asarray(cpu, device="toy")
    assert moved.device is TOY and np.array_equal(np.asarray(moved), data)
    with pytest.raises(ValueError, match="copy"):
        xp.asarray(cpu, device="toy", copy=False)


def test_mixing_devices_raises_value_error() -> None:
    cpu, toy = xp.asarray([1.0, 2.0]), xp.asarray([3.0, 4.0], device="toy")
    with pytest.raises(ValueError, match="device"):
        cpu + toy
    with pytest.raises(ValueError, match="device"):
        xp.multiply(toy, cpu)
    with pytest.raises(ValueError, match="device"):
        xp.concat([cpu, toy])
    with pytest.raises(ValueError, match="device"):
        xp.matmul(cpu, toy)
    assert np.array_equal(np.asarray(cpu + toy.to_device("cpu")), [4.0, 6.0])


def test_device_scope_and_streams_on_toy() -> None:
    with xp.device_scope("toy"):
        x = xp.ones(3)
        stream, event = xp.Stream(), xp.Event()
        assert current_stream() is _toy_backend().default_stream(TOY)
        assert current_stream().device is TOY
    assert x.device is TOY and np.array_equal(np.asarray(x), np.ones(3))
    assert stream.device is TOY and event.device is TOY
    log: list[int] = []
    stream.submit(log.append, 1)
    stream.record_event(event)
    event.synchronize()
    assert log == [1]
    with stream:
        assert current_stream(TOY) is stream
        assert current_stream("cpu") is not stream


def test_toy_arrays_are_host_memory_for_numpy_and_dlpack() -> None:
    x = xp.asarray([1.0, 2.0, 3.0], device="toy")
    assert x.__dlpack_device__() == (1, 0)
    host = np.from_dlpack(x)
    assert np.shares_memory(host, np.asarray(x))
    assert np.array_equal(host, [1.0, 2.0, 3.0])
    copied = xp.from_dlpack(x, device="toy", copy=True)
    assert copied.device is TOY and np.array_equal(np.asarray(copied), host)
