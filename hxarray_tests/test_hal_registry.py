"""BackendRegistry: registration, replacement, lazy loading from sources, concurrency and broken
plug-ins. Each test builds its own registry so the process-wide one is left alone."""

from __future__ import annotations

import importlib
import sys
import threading
import time
import warnings
from typing import Any

import numpy as np
import pytest

import hxarray as xp
from hxarray.backends.cpu import CpuBackend
from hxarray.hal import Device, DeviceType, DeviceUnavailableError
from hxarray.hal import device as device_module

# `hxarray.backends.registry` is the instance
registry_module = importlib.import_module("hxarray.backends.registry")
BackendRegistry = registry_module.BackendRegistry


class RegBackend(CpuBackend):
    """The numpy backend under the device type `regtest`."""

    device_type = DeviceType.register("regtest")


class OtherRegBackend(RegBackend):
    pass


class SlowBackend(CpuBackend):
    """Slow to construct, and counts its instances, to expose racy loading."""

    device_type = DeviceType.register("regslow")
    instances = 0

    def __init__(self) -> None:
        time.sleep(0.05)
        type(self).instances += 1
        super().__init__()


class FakeEntryPoint:
    """Stands in for an `importlib.metadata.EntryPoint`."""

    def __init__(self, name: str, load: Any, value: str = "fake_module:Fake") -> None:
        self.name = name
        self.value = value
        self._load = load

    def load(self) -> Any:
        return self._load()


def _raise(exc: Exception) -> Any:
    raise exc


def _without_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make CUDA unusable, whatever this machine has: no driver named, and CuPy does not
    import."""
    monkeypatch.delenv("HXARRAY_CUDA_DRIVER", raising=False)
    monkeypatch.setitem(sys.modules, "cupy", None)


@pytest.fixture
def reg(monkeypatch: pytest.MonkeyPatch) -> BackendRegistry:
    """A fresh registry that sees no installed plug-ins, on a machine where CUDA cannot run."""
    monkeypatch.setattr(registry_module, "entry_points", lambda group: [])
    _without_cuda(monkeypatch)
    return BackendRegistry()


# -- registration ----------------------------------------------------------------------------------
def test_register_a_class_or_an_instance(reg: BackendRegistry) -> None:
    instance = reg.register(RegBackend)
    assert type(instance) is RegBackend and reg.get("regtest") is instance
    assert reg.get(DeviceType("regtest")) is instance
    other = OtherRegBackend()
    assert reg.register(other, replace=True) is other
    assert reg.get("regtest") is other
    assert "regtest" in reg.available_types()
    assert Device("regtest") in reg.devices()


def test_duplicate_registration_needs_replace(reg: BackendRegistry) -> None:
    first = reg.register(RegBackend)
    with pytest.raises(ValueError, match="'regtest' is already registered.*replace=True"):
        reg.register(OtherRegBackend)
    assert reg.get("regtest") is first
    second = reg.register(OtherRegBackend, replace=True)
    assert reg.get("regtest") is second is not first


@pytest.mark.parametrize("thing", [object(), int, "hxarray.backends.cpu:CpuBackend"])
def test_register_rejects_non_backends(reg: BackendRegistry, thing: Any) -> None:
    with pytest.raises(TypeError, match="Backend subclass or instance"):
        reg.register(thing)


def test_builtin_cpu_backend_loads_lazily(reg: BackendRegistry) -> None:
    assert reg._backends == {}
    backend = reg.get("cpu")
    assert isinstance(backend, CpuBackend) and backend is reg.get(DeviceType.CPU)
    assert backend is not Device("cpu").backend  # a fresh registry builds its own
    assert reg.available_types() == ["cpu"]
    assert reg.devices() == [Device("cpu")]


def test_unknown_type_error_lists_usable_types(reg: BackendRegistry) -> None:
    DeviceType.register("regnothing")
    with pytest.raises(DeviceUnavailableError) as info:
        reg.get("regnothing")
    message = str(info.value)
    assert "'regnothing' cannot be used: no backend is registered for it" in message
    assert "usable device types: cpu" in message
    with pytest.raises(ValueError, match="unknown device type 'regmissing'"):
        reg.get("regmissing")


def test_cuda_that_cannot_run_says_why(reg: BackendRegistry) -> None:
    with pytest.raises(DeviceUnavailableError,
                       match=r"cuda:0 is not available: .*HXARRAY_CUDA_DRIVER"):
        reg.backend_for(Device("cuda:0"))
    assert "cuda" not in reg.available_types()
    assert "HXARRAY_CUDA_DRIVER" in reg.unavailable()["cuda"]  # the reason, recorded


def test_backend_for_checks_the_index(reg: BackendRegistry) -> None:
    reg.register(RegBackend)
    assert reg.backend_for(Device("regtest:0")) is reg.get("regtest")
    with pytest.raises(DeviceUnavailableError, match="regtest:3 does not exist.*1 regtest"):
        reg.backend_for(Device("regtest:3"))


def test_unavailable_backend_is_reported(reg: BackendRegistry) -> None:
    class Unplugged(CpuBackend):
        device_type = DeviceType.register("regunplugged")

        def unavailable_reason(self) -> str:
            return "the toy cable is unplugged"

    reg.register(Unplugged)
    with pytest.raises(DeviceUnavailableError, match="regunplugged:0 is not available: the toy"):
        reg.backend_for(Device("regunplugged"))
    assert "regunplugged" not in reg.available_types()


def test_register_resets_cached_device_backends(monkeypatch: pytest.MonkeyPatch,
                                                reg: BackendRegistry) -> None:
    monkeypatch.setattr(device_module, "_registry", [reg])  # the one the HAL asks
    device = Device("regtest")
    monkeypatch.setattr(device, "_backend", None)
    first = reg.register(RegBackend)
    assert device.backend is first
    second = reg.register(OtherRegBackend, replace=True)
    assert device.backend is second
    x = xp.asarray([1.0, 2.0, 3.0], device=device)
    assert x.device is device
    assert np.array_equal(np.asarray(x * 2), [2.0, 4.0, 6.0])
    assert x._buffer.allocator is second.allocator(device)


# -- lazy loading, concurrency ---------------------------------------------------------------------
def test_concurrent_lookups_share_one_instance(monkeypatch: pytest.MonkeyPatch,
                                               reg: BackendRegistry) -> None:
    SlowBackend.instances = 0
    reg._sources["regslow"] = FakeEntryPoint("regslow", lambda: SlowBackend)
    monkeypatch.setattr(device_module, "_registry", [reg])
    device = Device("regslow")
    monkeypatch.setattr(device, "_backend", None)
    n = 12
    barrier = threading.Barrier(n)
    found: list[Any] = [None] * n

    def look(i: int) -> None:
        barrier.wait(5)
        if i % 3 == 0:
            found[i] = reg.get("regslow")
        elif i % 3 == 1:
            found[i] = device.backend
        else:
            reg.available_types()
            found[i] = reg.get(DeviceType("regslow"))

    threads = [threading.Thread(target=look, args=(i,)) for i in range(n)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
    assert [str(w.message) for w in caught] == []  # no load raced another into a failure
    assert SlowBackend.instances == 1
    assert all(b is found[0] for b in found) and isinstance(found[0], SlowBackend)


def test_string_sources_are_imported(reg: BackendRegistry) -> None:
    reg._sources["regtest"] = f"{__name__}:RegBackend"
    assert type(reg.get("regtest")) is RegBackend


# -- broken plug-ins -------------------------------------------------------------------------------
def test_broken_plugin_warns_once_and_is_unavailable(reg: BackendRegistry) -> None:
    DeviceType.register("regbroken")
    reg._sources["regbroken"] = FakeEntryPoint(
        "regbroken", lambda: _raise(ImportError("No module named 'toyz'")))
    with pytest.warns(RuntimeWarning, match="loading backend 'regbroken' failed: ImportError"):
        with pytest.raises(DeviceUnavailableError) as info:
            reg.get("regbroken")
    message = str(info.value)
    assert "'regbroken' cannot be used: loading backend 'regbroken' failed" in message
    assert "No module named 'toyz'" in message and "usable device types: cpu" in message
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        with pytest.raises(DeviceUnavailableError, match="toyz"):
            reg.get("regbroken")
        assert reg.available_types() == ["cpu"]
    assert reg.get("cpu") is reg.get("cpu")  # everything else still works


def test_plugin_whose_constructor_fails(reg: BackendRegistry) -> None:
    class Exploding(CpuBackend):
        device_type = DeviceType.register("regexplode")

        def __init__(self) -> None:
            raise RuntimeError("no toy hardware found")

    reg._sources["regexplode"] = FakeEntryPoint("regexplode", lambda: Exploding)
    with pytest.warns(RuntimeWarning, match="RuntimeError: no toy hardware found"):
        assert reg.available_types() == ["cpu"]
    with pytest.raises(DeviceUnavailableError, match="no toy hardware found"):
        reg.get("regexplode")


def test_plugin_that_is_not_a_backend(reg: BackendRegistry) -> None:
    DeviceType.register("regnotbackend")
    reg._sources["regnotbackend"] = FakeEntryPoint("regnotbackend", lambda: dict)
    with pytest.warns(RuntimeWarning, match="TypeError: expected a Backend"):
        with pytest.raises(DeviceUnavailableError, match="regnotbackend"):
            reg.get("regnotbackend")


def test_plugin_for_another_device_type(reg: BackendRegistry) -> None:
    DeviceType.register("regwrongtype")
    reg._sources["regwrongtype"] = FakeEntryPoint("regwrongtype", lambda: RegBackend)
    with pytest.warns(RuntimeWarning, match="backend for 'regtest', not for 'regwrongtype'"):
        with pytest.raises(DeviceUnavailableError, match="regwrongtype"):
            reg.get("regwrongtype")
    with pytest.raises(DeviceUnavailableError, match="no backend is registered"):
        reg.get("regtest")  # nothing was registered under the wrong name


def test_discovery_reads_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def fake_entry_points(group: str) -> list[FakeEntryPoint]:
        calls.append(group)
        return [FakeEntryPoint("regdiscover", lambda: Discovered),
                FakeEntryPoint("Bad-Name", lambda: RegBackend, "bad_module:Bad"),
                FakeEntryPoint("cpu", lambda: _raise(AssertionError("builtin shadowed")))]

    class Discovered(CpuBackend):
        device_type = DeviceType.register("regdiscover")

    monkeypatch.setattr(registry_module, "entry_points", fake_entry_points)
    _without_cuda(monkeypatch)
    reg = BackendRegistry()
    with pytest.warns(RuntimeWarning, match="ignoring hxarray backend entry point 'bad_module"):
        reg.discover()
    reg.discover()  # only once
    assert calls == ["hxarray.backends"]
    assert type(reg.get("regdiscover")) is Discovered
    assert isinstance(reg.get("cpu"), CpuBackend)  # built-ins win over same-named entry points
    assert reg.available_types() == ["cpu", "regdiscover"]
    assert reg.devices() == [Device("cpu"), Device("regdiscover")]
