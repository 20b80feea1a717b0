"""Choosing devices: priorities, requirements met and rejected with reasons, the fallback past a
broken or unavailable plug-in, the report, and `python -m hxarray info`. Each registry test builds
its own registry, so the process-wide one is left alone."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

import hxarray as xp
from hxarray.backends.cpu import CpuBackend
from hxarray.backends.registry import BackendRegistry
from hxarray.backends.selection import best_device, devices_report, select_device
from hxarray.hal import Device, DeviceType, DeviceUnavailableError

registry_module = importlib.import_module("hxarray.backends.registry")
GB = 10**9


def _peaks(float64: float) -> dict[str, Any]:
    return {"peak_flops": {"float32": 2 * float64, "float64": float64,
                           "complex64": 2 * float64, "complex128": float64},
            "memory_bandwidth": 1e11}


class HostLike(CpuBackend):
    """The numpy backend with declared figures (so nothing is measured)."""

    free = 16 * GB
    vendor = "Acme"
    float64 = 1e11

    def capabilities(self, device: Device) -> dict[str, Any]:
        return {**super().capabilities(device), "vendor": self.vendor,
                "total_memory": 2 * self.free, "free_memory": self.free}

    def performance(self, device: Device) -> dict[str, Any]:
        return _peaks(self.float64)


class Fast(HostLike):
    device_type = DeviceType.register("selfast")
    priority = 20
    free = 4 * GB
    vendor = "Vector"
    float64 = 5e12


class Roomy(HostLike):
    device_type = DeviceType.register("selroomy")
    priority = 5
    free = 64 * GB


class Absent(HostLike):
    device_type = DeviceType.register("selabsent")
    priority = 100

    def unavailable_reason(self) -> str:
        return "no such card in this machine"


class CpuWithPeaks(HostLike):
    device_type = DeviceType.CPU


class FakeEntryPoint:
    def __init__(self, name: str, load: Any) -> None:
        self.name, self.value, self._load = name, f"fake:{name}", load

    def load(self) -> Any:
        return self._load()


def _broken() -> Any:
    raise ImportError("libvendor.so: cannot open shared object file")


@pytest.fixture
def reg(monkeypatch: pytest.MonkeyPatch) -> BackendRegistry:
    """CPU, two plug-ins that load, one that reports itself unavailable and one that fails to
    import: a registry of its own."""
    DeviceType.register("selbroken")
    points = [FakeEntryPoint("selfast", lambda: Fast), FakeEntryPoint("selroomy", lambda: Roomy),
              FakeEntryPoint("selabsent", lambda: Absent),
              FakeEntryPoint("selbroken", _broken)]
    monkeypatch.setattr(registry_module, "entry_points", lambda group: points)
    registry = BackendRegistry()
    registry._sources.pop("cuda")  # CUDA's availability depends on the machine
    registry.register(CpuWithPeaks(), replace=True)
    return registry


def test_best_device_is_the_highest_priority_usable_one(reg: BackendRegistry) -> None:
    with pytest.warns(RuntimeWarning, match="selbroken"):
        assert best_device(reg) is Device("selfast")
    assert "selabsent" not in reg.available_types()  # priority 100, but unavailable


def test_requirements_met(reg: BackendRegistry) -> None:
    with pytest.warns(RuntimeWarning):
        reg.available_types()
    assert select_device(min_memory_gb=10, registry=reg) is Device("selroomy")
    assert select_device(min_memory_gb=20, registry=reg) is Device("selroomy")
    assert select_device(min_tflops=1, registry=reg) is Device("selfast")
    assert select_device(min_tflops=0.15, dtype=xp.float32, registry=reg) is Device("selfast")
    assert select_device(dtype="float16", registry=reg) is Device("selfast")  # numpy mode's
    assert select_device(vendor="acme", registry=reg) is Device("selroomy")  # priority 5 > 0
    # a preference ranks first without being required
    assert select_device(prefer="cpu", registry=reg) is Device("cpu")
    assert select_device(prefer=["selabsent", "selroomy"], registry=reg) is Device("selroomy")
    assert select_device(prefer="cpu:0", min_tflops=1, registry=reg) is Device("selfast")


def test_ties_broken_by_free_memory(reg: BackendRegistry, monkeypatch) -> None:
    with pytest.warns(RuntimeWarning):
        reg.available_types()
    monkeypatch.setattr(Roomy, "priority", 20)
    assert select_device(registry=reg) is Device("selroomy")  # same priority, more memory


def test_requirements_rejected_with_every_reason(reg: BackendRegistry) -> None:
    with pytest.warns(RuntimeWarning):
        reg.available_types()
    with pytest.raises(DeviceUnavailableError) as info:
        select_device(min_memory_gb=100, min_tflops=10, vendor="Vector", registry=reg)
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert "min_memory_gb=100" in message and "min_tflops=10" in message
    assert "selfast:0: 4 GB free, 100 GB required; 5 float64 TFLOP/s, 10 required" in message
    assert "selroomy:0: 64 GB free, 100 GB required; 0.1 float64 TFLOP/s, 10 required; " \
           "vendor is 'Acme', not 'Vector'" in message
    assert "cpu: 16 GB free" in message
    assert "selabsent (device type): no such card in this machine" in message
    assert "selbroken (device type): loading backend 'selbroken' failed: ImportError: " \
           "libvendor.so" in message


def test_bad_arguments(reg: BackendRegistry) -> None:
    with pytest.raises(TypeError, match="prefer"):
        select_device(prefer=[3], registry=reg)
    for unknown in ("bfloat16", "float128", 3):
        with pytest.raises(ValueError, match="unknown dtype .*takes an hxarray dtype or its name"):
            select_device(dtype=unknown, registry=reg)
    with xp.set_strict(True), pytest.raises(TypeError, match="float16 is numpy mode only"):
        select_device(dtype="float16", registry=reg)  # (numpy mode's dtype: a known one there)
    for bad in [False, 0, "cpu"]:
        for call in (select_device, best_device, devices_report):
            with pytest.raises(TypeError, match=r"registry must be a BackendRegistry, got "):
                call(registry=bad)
    assert best_device(registry=None) == best_device()  # None: the installed backends
    with pytest.raises(TypeError, match=r"vendor must be a str or None, got int"):
        select_device(vendor=-1, registry=reg)
    for name in ("min_memory_gb", "min_tflops"):
        for bad in [True, "1", [1]]:
            with pytest.raises(TypeError, match=rf"{name} must be a real number or None, got "):
                select_device(**{name: bad}, registry=reg)


def test_report(reg: BackendRegistry) -> None:
    with pytest.warns(RuntimeWarning):
        report = devices_report(reg)
    assert json.loads(json.dumps(report)) == report
    assert [e["device"] for e in report["devices"]] == ["selfast:0", "selroomy:0", "cpu"]
    fast = report["devices"][0]
    assert fast["priority"] == 20 and fast["free_memory"] == 4 * GB
    assert fast["peak_flops"]["float64"] == 5e12 and fast["performance_source"] == "properties"
    assert report["by_vendor"] == {"Vector": ["selfast:0"], "Acme": ["selroomy:0", "cpu"]}
    assert report["by_type"]["cpu"] == ["cpu"] and report["best_device"] == "selfast:0"
    assert report["unavailable"]["selabsent"] == "no such card in this machine"
    assert "ImportError" in report["unavailable"]["selbroken"]


def test_measured_capabilities_of_every_usable_device() -> None:
    """Devices without readable figures are measured (once, then cached)."""
    for device in xp.__array_namespace_info__().devices():
        caps = device.capabilities()
        assert set(caps["peak_flops"]) == {"float32", "float64", "complex64", "complex128"}
        assert all(v > 0 for v in caps["peak_flops"].values())
        assert caps["memory_bandwidth"] > 0
        assert caps["performance_source"] in ("properties", "measured", "measured, cached")


def test_measured_figures_are_written_through_an_unpredictable_new_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache file's temporary name cannot be guessed, and a link planted under the name
    it once had is not followed."""
    from hxarray.backends import performance

    monkeypatch.setenv("HXARRAY_CACHE_DIR", str(tmp_path))
    victim = tmp_path.parent / f"{tmp_path.name}-victim"
    planted = tmp_path / f".performance.json.{os.getpid()}.{threading.get_ident()}"
    planted.symlink_to(victim)
    renamed: list[str] = []
    replace = os.replace

    def watched(src: str, dst: str) -> None:
        assert not os.path.islink(src)
        renamed.append(os.path.basename(src))
        replace(src, dst)

    monkeypatch.setattr(os, "replace", watched)
    performance._write_cache("one", {"memory_bandwidth": 1.0})
    performance._write_cache("two", {"memory_bandwidth": 2.0})
    assert not victim.exists() and planted.is_symlink()
    assert len(set(renamed)) == 2 and planted.name not in renamed
    assert json.loads((tmp_path / "performance.json").read_text()) == {
        "one": {"memory_bandwidth": 1.0}, "two": {"memory_bandwidth": 2.0}}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([planted.name, "performance.json"])


def test_gpu_peaks_from_properties() -> None:
    from hxarray.backends.cuda.driver import DeviceProperties
    from hxarray.backends.cuda.peaks import from_properties

    a100 = DeviceProperties(
        name="A100", compute_capability=(8, 0), multiprocessor_count=108,
        max_threads_per_block=1024, max_threads_per_multiprocessor=2048,
        max_block_dims=(1024, 1024, 64), max_grid_dims=(2**31 - 1, 65535, 65535), warp_size=32,
        shared_memory_per_block=49152, shared_memory_per_multiprocessor=167936,
        registers_per_block=65536, registers_per_multiprocessor=65536, total_memory=40 << 30,
        clock_rate_khz=1410000, memory_clock_rate_khz=1215000, memory_bus_width=5120,
        l2_cache_size=40 << 20, simulated=False)
    peaks = from_properties(a100)
    assert peaks["peak_flops"]["float32"] == pytest.approx(19.5e12, rel=0.01)  # data sheet
    assert peaks["peak_flops"]["float64"] == pytest.approx(9.7e12, rel=0.01)
    assert peaks["memory_bandwidth"] == pytest.approx(1.555e12, rel=0.01)


PLUGIN = """
from hxarray.plugin import CpuBackend, DeviceType

class Fancy(CpuBackend):
    device_type = DeviceType.register("fancy")
    priority = 50

    def performance(self, device):
        return {"peak_flops": {"float64": 1e12}, "memory_bandwidth": 1e12}
"""


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory that installs two plug-ins through real entry points: 'fancy' (priority 50)
    and 'broken' (its module does not import)."""
    root = tmp_path_factory.mktemp("plugins")
    (root / "fancy_backend.py").write_text(PLUGIN)
    (root / "broken_backend.py").write_text("import a_module_that_does_not_exist\n")
    info = root / "hxarray_test_plugins-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hxarray-test-plugins\n"
                                   "Version: 1.0\n")
    (info / "entry_points.txt").write_text("[hxarray.backends]\nfancy = fancy_backend:Fancy\n"
                                           "broken = broken_backend:Broken\n")
    return root


def _run(code: str, plugin_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "HXARRAY_DEFAULT_DEVICE"}
    environment.update(PYTHONPATH=str(plugin_path), **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=environment,
                          capture_output=True, text=True, timeout=120)


def test_fresh_process_skips_a_broken_plugin(plugin_path: Path) -> None:
    done = _run("""
        import hxarray as xp
        print(xp.ones(2).device, xp.best_device())
        report = xp.devices_report()
        print(report["unavailable"]["broken"])
        print(xp.select_device(prefer="broken"))
        """, plugin_path)
    assert done.returncode == 0, done.stderr
    default, best, reason, preferred = done.stdout.splitlines()[0].split() + \
        done.stdout.splitlines()[1:]
    assert (default, best) == ("cpu", "fancy:0")  # numpy-style code stays on the CPU
    assert "ModuleNotFoundError" in reason and "a_module_that_does_not_exist" in reason
    assert preferred == "fancy:0"  # the preferred type is broken: the next best
    assert "loading backend 'broken' failed" in done.stderr  # one RuntimeWarning, no crash


def test_default_device_best(plugin_path: Path) -> None:
    done = _run("import hxarray as xp; print(xp.ones(2).device)", plugin_path,
                HXARRAY_DEFAULT_DEVICE="best")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "fancy:0"


def test_info_command(plugin_path: Path) -> None:
    done = _run("from hxarray.__main__ import main; main(['info', '--json'])", plugin_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["best_device"] == "fancy:0" and "broken" in report["unavailable"]
    assert report["devices"][0]["device"] == "fancy:0"
    text = _run("from hxarray.__main__ import main; main(['info'])", plugin_path).stdout
    assert "best device: fancy:0" in text and "broken   not available: loading backend" in text
