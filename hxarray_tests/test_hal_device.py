"""Device and DeviceType values, capabilities, the default device and device scopes."""

from __future__ import annotations

import contextlib
import os
import pickle
import re
import subprocess
import sys
import threading
from collections.abc import Iterator

import numpy as np
import pytest

import hxarray as xp
from hxarray.backends.registry import registry
from hxarray.hal import device as device_mod
from hxarray.hal.device import (
    Device,
    DeviceType,
    DeviceUnavailableError,
    default_device,
    device_scope,
)

_SIMD_FLAGS = {"sse2", "sse4_1", "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw",
               "avx512_vnni", "amx_tile", "neon", "asimd", "sve"}


def _cuda_usable() -> bool:
    try:
        Device("cuda").backend
    except DeviceUnavailableError:
        return False
    return True


# -- DeviceType ------------------------------------------------------------------------------------
def test_device_type_members_are_interned() -> None:
    assert DeviceType("cpu") is DeviceType.CPU
    assert DeviceType("cuda") is DeviceType.CUDA
    assert DeviceType(DeviceType.CUDA) is DeviceType.CUDA
    assert DeviceType.register("cpu") is DeviceType.CPU
    assert {DeviceType.CPU, DeviceType.CUDA} <= set(DeviceType.members())
    assert repr(DeviceType.CUDA) == "DeviceType('cuda')"
    assert str(DeviceType.CPU) == "cpu"


def test_device_type_register_adds_a_member() -> None:
    member = DeviceType.register("devtest")
    assert DeviceType("devtest") is member
    assert member.name == "devtest"
    assert member in DeviceType.members()


@pytest.mark.parametrize("name", ["Bad", "has-dash", "1abc", "", 3])
def test_device_type_register_rejects_bad_names(name: object) -> None:
    with pytest.raises(ValueError, match="lowercase identifier"):
        DeviceType.register(name)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["gpu", "CPU", None, 3.5])
def test_unknown_device_type_lists_known_types(name: object) -> None:
    with pytest.raises(ValueError) as info:
        DeviceType(name)  # type: ignore[arg-type]
    message = str(info.value)
    assert repr(name) in message
    assert re.search(r"known device types: .*cpu.*cuda", message)


def test_device_type_pickles_to_the_same_member() -> None:
    for member in (DeviceType.CPU, DeviceType.CUDA):
        assert pickle.loads(pickle.dumps(member)) is member


# -- Device ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, index, type_name, expected_index", [
    ("cuda:1", None, "cuda", 1),
    ("cuda", 1, "cuda", 1),
    ("cuda", None, "cuda", 0),
    ("cpu", None, "cpu", 0),
    ("cpu:0", None, "cpu", 0),
    (DeviceType.CUDA, 3, "cuda", 3),
    ("cuda", np.int64(2), "cuda", 2),
])
def test_device_parsing(spec: object, index: object, type_name: str, expected_index: int) -> None:
    device = Device(spec, index)  # type: ignore[arg-type]
    assert device.type is DeviceType(type_name)
    assert device.index == expected_index
    assert type(device.index) is int


def test_devices_are_interned() -> None:
    assert Device("cuda:1") is Device("cuda", 1) is Device(DeviceType.CUDA, 1)
    assert Device("cpu") is Device("cpu:0") is Device("cpu", 0)
    assert Device(Device("cuda:2")) is Device("cuda:2")
    assert Device(Device("cuda:2"), 2) is Device("cuda:2")
    assert Device("cuda:0") is not Device("cuda:1")


def test_device_hash_and_equality() -> None:
    a, b, c = Device("cuda:1"), Device("cuda", 1), Device("cuda:0")
    assert a == b and hash(a) == hash(b)
    assert a != c and Device("cpu") != Device("cuda:0")
    table = {a: "one", c: "zero"}
    assert table[Device("cuda", 1)] == "one"
    assert len({Device("cpu"), Device("cpu:0"), Device("cpu", 0)}) == 1


@pytest.mark.parametrize("device, text", [
    (Device("cuda:1"), "cuda:1"), (Device("cuda"), "cuda:0"), (Device("cpu"), "cpu"),
    (Device("cpu", 2), "cpu:2"),
])
def test_device_repr_and_str(device: Device, text: str) -> None:
    assert str(device) == text
    assert repr(device) == f"Device('{text}')"
    assert Device(str(device)) is device


def test_device_pickles_to_the_interned_value() -> None:
    for device in (Device("cpu"), Device("cuda:1"), Device("cuda", 7)):
        assert pickle.loads(pickle.dumps(device)) is device
    assert pickle.loads(pickle.dumps([Device("cuda:1")] * 2)) == [Device("cuda:1")] * 2


@pytest.mark.parametrize("spec", ["cuda:x", "cuda:", "cuda:1.5", "gpu", "gpu:0", "", "cuda:1:2"])
def test_bad_device_strings_raise_value_error_listing_known_types(spec: str) -> None:
    with pytest.raises(ValueError) as info:
        Device(spec)
    message = str(info.value)
    assert repr(spec) in message or repr(spec.partition(":")[0]) in message
    assert "cuda:1" in message or "known device types: " in message


@pytest.mark.parametrize("spec, index", [("cuda:-1", None), ("cuda", -1), ("cpu", -3)])
def test_negative_device_index_raises_value_error(spec: str, index: int | None) -> None:
    with pytest.raises(ValueError, match="non-negative"):
        Device(spec, index)


def test_conflicting_index_raises_value_error() -> None:
    with pytest.raises(ValueError, match="conflicting index 1"):
        Device(Device("cuda:0"), 1)


@pytest.mark.parametrize("spec, index", [(3, None), (None, None), (1.5, None), (["cpu"], None),
                                         ("cuda", 1.0), ("cuda", "1"), ("cuda", True)])
def test_wrong_types_raise_type_error(spec: object, index: object) -> None:
    with pytest.raises(TypeError, match="device|index"):
        Device(spec, index)  # type: ignore[arg-type]


def test_creating_a_device_value_never_needs_its_backend() -> None:
    device = Device("cuda", 5)
    assert (device.type.name, device.index) == ("cuda", 5)


# -- capabilities and availability -----------------------------------------------------------------
def test_cpu_capabilities_are_plausible() -> None:
    caps = Device("cpu").capabilities()
    assert {"name", "vendor", "total_memory", "free_memory", "compute_units", "simd"} <= set(caps)
    assert isinstance(caps["name"], str) and caps["name"]
    assert isinstance(caps["vendor"], str) and caps["vendor"]
    assert isinstance(caps["total_memory"], int) and caps["total_memory"] >= 64 << 20
    assert isinstance(caps["free_memory"], int)
    assert 0 < caps["free_memory"] <= caps["total_memory"]
    assert 1 <= caps["compute_units"] <= (os.cpu_count() or 1)
    assert isinstance(caps["simd"], list) and set(caps["simd"]) <= _SIMD_FLAGS
    assert caps["memory_alignment"] == 64


def test_cpu_backend_is_the_registered_one() -> None:
    from hxarray.backends.cpu import CpuBackend

    backend = Device("cpu").backend
    assert isinstance(backend, CpuBackend)
    assert backend is registry.get("cpu") is Device("cpu:0").backend
    assert backend.device_count() == 1


def test_cpu_index_beyond_the_device_count_is_unavailable() -> None:
    with pytest.raises(DeviceUnavailableError, match=r"cpu:1 does not exist: .* 1 cpu device"):
        Device("cpu:1").backend
    with pytest.raises(ValueError, match="cpu:1 does not exist"):
        xp.zeros(3, device="cpu:1")


@pytest.mark.skipif(_cuda_usable(), reason="a CUDA device is usable here")
def test_cuda_is_unavailable_with_a_reason() -> None:
    assert issubclass(DeviceUnavailableError, ValueError)
    device = Device("cuda")  # the value itself is fine
    with pytest.raises(DeviceUnavailableError) as info:
        device.backend
    message = str(info.value)
    assert "cuda" in message
    reason = message.partition(":")[2].strip()
    assert len(reason) > 10  # says why, not just "unavailable"
    with pytest.raises(DeviceUnavailableError, match="cuda"):
        device.capabilities()
    with pytest.raises(ValueError, match="cuda"):
        xp.asarray([1.0, 2.0], device="cuda")
    with pytest.raises(ValueError, match="cuda"):
        xp.zeros((2, 2), device=device)


# -- default device and scopes ---------------------------------------------------------------------
@contextlib.contextmanager
def env_default(*devices: Device) -> Iterator[None]:
    """The cached HXARRAY_DEFAULT_DEVICE replaced by `devices` (none: not read yet), in place:
    the compiled fast path holds the list."""
    saved = device_mod._env_default[:]
    device_mod._env_default[:] = devices
    try:
        yield
    finally:
        device_mod._env_default[:] = saved


@pytest.fixture
def fresh_env_default(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """Forget the cached HXARRAY_DEFAULT_DEVICE for one test."""
    with env_default():
        yield monkeypatch


def test_default_device_is_cpu_without_configuration(fresh_env_default: pytest.MonkeyPatch) -> None:
    fresh_env_default.delenv("HXARRAY_DEFAULT_DEVICE", raising=False)
    assert default_device() is Device("cpu")
    assert xp.__array_namespace_info__().default_device() is Device("cpu")
    assert xp.zeros(2).device is Device("cpu")


def test_default_device_from_the_environment(fresh_env_default: pytest.MonkeyPatch) -> None:
    fresh_env_default.setenv("HXARRAY_DEFAULT_DEVICE", " cuda:1 ")
    assert default_device() is Device("cuda:1")
    fresh_env_default.setenv("HXARRAY_DEFAULT_DEVICE", "cpu")
    assert default_device() is Device("cuda:1")  # read once, then cached


@pytest.mark.skipif(_cuda_usable(), reason="a CUDA device is usable here")
def test_unusable_default_device_fails_on_use(fresh_env_default: pytest.MonkeyPatch) -> None:
    fresh_env_default.setenv("HXARRAY_DEFAULT_DEVICE", "cuda")
    assert default_device() is Device("cuda:0")
    with pytest.raises(DeviceUnavailableError, match="cuda"):
        xp.zeros(3)
    assert np.array_equal(np.asarray(xp.zeros(3, device="cpu")), np.zeros(3))


def test_invalid_default_device_names_the_variable(fresh_env_default: pytest.MonkeyPatch) -> None:
    fresh_env_default.setenv("HXARRAY_DEFAULT_DEVICE", "gpu:0")
    with pytest.raises(ValueError, match=r"HXARRAY_DEFAULT_DEVICE='gpu:0'.*known device types"):
        default_device()


def test_default_device_environment_in_a_fresh_process() -> None:
    env = {**os.environ, "HXARRAY_DEFAULT_DEVICE": "cpu:0"}
    code = "import hxarray as xp; print(xp.zeros(2).device, xp.hal.default_device().index)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert out.stdout.split() == ["cpu", "0"]


def test_device_scope_nests_and_restores(fresh_env_default: pytest.MonkeyPatch) -> None:
    fresh_env_default.delenv("HXARRAY_DEFAULT_DEVICE", raising=False)
    seen = []
    with device_scope("cpu:0") as outer:
        assert outer is Device("cpu")
        seen.append(default_device())
        with device_scope(Device("cpu")) as inner:
            seen.append(default_device())
            assert inner is default_device()
        seen.append(default_device())
    assert seen == [Device("cpu")] * 3
    assert default_device() is Device("cpu")


def test_device_scope_overrides_the_environment(fresh_env_default: pytest.MonkeyPatch) -> None:
    fresh_env_default.setenv("HXARRAY_DEFAULT_DEVICE", "cuda:3")
    assert default_device() is Device("cuda:3")
    with device_scope("cpu"):
        assert default_device() is Device("cpu")
        assert xp.ones(2).device is Device("cpu")
    assert default_device() is Device("cuda:3")


@pytest.mark.skipif(_cuda_usable(), reason="a CUDA device is usable here")
def test_device_scope_on_an_unusable_device_fails_at_entry() -> None:
    before = default_device()
    with pytest.raises(DeviceUnavailableError, match="cuda"):
        with device_scope("cuda"):
            pytest.fail("the scope must not be entered")  # pragma: no cover
    assert default_device() is before


def test_device_scope_is_restored_after_an_exception() -> None:
    before = default_device()
    with pytest.raises(KeyError):
        with device_scope("cpu"):
            raise KeyError("boom")
    assert default_device() is before


def test_device_scopes_are_per_thread() -> None:
    with env_default(Device("cuda:2")):
        seen: dict[str, Device] = {}
        entered, checked = threading.Event(), threading.Event()

        def other_thread() -> None:
            entered.wait(5)
            seen["other"] = default_device()  # the main thread's scope does not leak here
            with device_scope("cpu"):
                seen["other scoped"] = default_device()
            checked.set()

        thread = threading.Thread(target=other_thread)
        thread.start()
        with device_scope("cpu"):
            entered.set()
            checked.wait(5)
            seen["main"] = default_device()
        thread.join(5)
        assert seen == {"other": Device("cuda:2"), "other scoped": Device("cpu"),
                        "main": Device("cpu")}
        assert default_device() is Device("cuda:2")
