"""Settings: every `HXARRAY_*` variable is parsed in one place (`hxarray.hal.settings`), a bad
value is a ValueError naming the variable, the value and the accepted values, never a hang or a
late unrelated failure; and the simulator's check mode faults at the first byte past an array."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hxarray.hal import settings
from hxarray.hal.kernel_cache import KernelCache

ROOT = Path(__file__).resolve().parent.parent

SUM = "import hxarray as xp; print(float(xp.sum(xp.ones(30, device='cuda:0'))))"


def _run(code: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter on the simulator with `env` added (a hang fails the test)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT,
                          env={**os.environ, "HXARRAY_CUDA_DRIVER": "sim", **env})


def _refused(done: subprocess.CompletedProcess[str], name: str, value: str) -> None:
    """The run failed with a ValueError naming the variable, the value and what is accepted."""
    accepted = settings.SETTINGS[name].accepted
    assert done.returncode != 0, done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert "Error" in last and f"{name}={value!r}" in last and accepted in last, done.stderr


# -- the reproducers ----------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["inf", "1e18", "1e10", "Infinity"])
def test_watchdog_inf_or_huge_is_no_limit(value: str) -> None:
    done = _run(SUM, HXARRAY_CUDA_SIM_WATCHDOG=value)
    assert done.returncode == 0 and done.stdout.strip() == "30.0", done.stderr


def test_watchdog_nan_names_the_variable() -> None:
    _refused(_run(SUM, HXARRAY_CUDA_SIM_WATCHDOG="nan"), "HXARRAY_CUDA_SIM_WATCHDOG", "nan")


def test_huge_worker_count_is_refused_not_a_hang() -> None:
    value = "99999999999999999999999"
    done = _run(SUM, timeout=60, HXARRAY_CUDA_SIM_WORKERS=value)
    _refused(done, "HXARRAY_CUDA_SIM_WORKERS", value)
    assert f"1 to {settings.MAX_SIM_WORKERS}" in done.stderr


def test_huge_stack_and_negative_cache_size_name_the_variable() -> None:
    value = "99999999999999999999999"
    done = _run(SUM, HXARRAY_CUDA_SIM_STACK=value)
    _refused(done, "HXARRAY_CUDA_SIM_STACK", value)
    assert f"4096 to {settings.MAX_SIM_STACK} bytes" in done.stderr
    _refused(_run(SUM, HXARRAY_KERNEL_CACHE_SIZE="-1"), "HXARRAY_KERNEL_CACHE_SIZE", "-1")


POKE = """
import numpy as np
import hxarray as xp
from hxarray import cuda
from hxarray.backends.cuda.driver import KernelError

poke = cuda.RawKernel(r'''
extern "C" __global__ void poke(float* x, long long i) { x[i] = 42.0f; }''', "poke")
spare = xp.zeros(1024, dtype=xp.float32, device="cuda:0")
del spare  # a cached 4096-byte block that the next array must not get
x = xp.zeros(1000, dtype=xp.float32, device="cuda:0")
poke((1,), (1,), (x, 999))
assert float(x[999]) == 42.0
poke((1,), (1,), (x, 1000))
try:
    np.asarray(x.to_device("cpu"))
except KernelError as exc:
    print(exc.allocation[1], exc.address - exc.allocation[0])
"""


def test_check_mode_faults_at_the_first_byte_past_an_array() -> None:
    done = _run(POKE, HXARRAY_CUDA_SIM_CHECK="1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["4000", "4000"]  # a 4000-byte allocation, faulting at byte 4000


# -- one place, every variable -------------------------------------------------------------------
def test_no_module_reads_an_hxarray_variable_but_settings() -> None:
    reader = re.compile(r"""(environ(\.get)?\s*[\[(]|getenv\()\s*["']HXARRAY_""")
    found = [f"{path.relative_to(ROOT)}:{number}"
             for path in (ROOT / "hxarray").rglob("*.py") if path.name != "settings.py"
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if reader.search(line)]
    assert found == []


def test_the_docs_table_is_the_declarations() -> None:
    assert settings.markdown() in (ROOT / "docs" / "hal.md").read_text()


BAD = ["abc", "-1", "1e400x", "nan", "\u0661\u0662x", "1 2", "99999999999999999999999",
       "9" * 5000]


@pytest.mark.parametrize("name", sorted(settings.SETTINGS))
def test_every_setting_defaults_when_blank_and_names_itself_when_refused(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    setting = settings.SETTINGS[name]
    for blank in ("", "   ", "\t"):
        monkeypatch.setenv(name, blank)
        assert setting.get() == setting.default()
    for value in BAD:
        monkeypatch.setenv(name, value)
        try:
            parsed = setting.get()
        except ValueError as exc:
            assert str(exc).startswith(f"{name}={value!r} is invalid (")
            assert str(exc).endswith(f"; expected {setting.accepted}")
        else:  # free text (paths, device names, compilers), or a huge watchdog (no limit)
            huge = name == "HXARRAY_CUDA_SIM_WATCHDOG" and parsed == float(value) >= 1e23
            assert huge or (parsed == value.strip() and "integer" not in setting.accepted)


@pytest.mark.parametrize(("name", "value", "parsed"), [
    ("HXARRAY_CUDA_SIM_WATCHDOG", " inf ", float("inf")),
    ("HXARRAY_CUDA_SIM_WATCHDOG", "2.5", 2.5),
    ("HXARRAY_CUDA_SIM_WORKERS", "+16", 16),
    ("HXARRAY_CUDA_SIM_WORKERS", str(settings.MAX_SIM_WORKERS), settings.MAX_SIM_WORKERS),
    ("HXARRAY_CUDA_SIM_STACK", "4096", 4096),
    ("HXARRAY_CUDA_SIM_CHECK", "On", True),
    ("HXARRAY_STRICT", "no", False),
    ("HXARRAY_CUDA_DRIVER", "SIM", "sim"),
    ("HXARRAY_KERNEL_CACHE_SIZE", "0", 0),
])
def test_good_values(name: str, value: str, parsed: object,
                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(name, value)
    assert settings.SETTINGS[name].get() == parsed


@pytest.mark.parametrize(("name", "value"), [
    ("HXARRAY_CUDA_SIM_WATCHDOG", "0"), ("HXARRAY_CUDA_SIM_WATCHDOG", "-inf"),
    ("HXARRAY_CUDA_SIM_WORKERS", "0"), ("HXARRAY_CUDA_SIM_WORKERS", "1025"),
    ("HXARRAY_CUDA_SIM_STACK", "4095"), ("HXARRAY_CUDA_SIM_STACK", str((1 << 20) + 1)),
    ("HXARRAY_CUDA_SIM_MEMORY", "1000"), ("HXARRAY_CUDA_SIM_DEVICES", "65"),
    ("HXARRAY_CUDA_SIM_CHECK", "2"), ("HXARRAY_PURE_PYTHON", "yes please"),
    ("HXARRAY_CUDA_SIM_FIBERS", "threads"), ("HXARRAY_NUM_THREADS", "1.5"),
])
def test_values_out_of_range(name: str, value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=re.escape(f"{name}={value!r} is invalid")):
        settings.SETTINGS[name].get()


def test_kernel_cache_size_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HXARRAY_KERNEL_CACHE_SIZE", "-1")
    with pytest.raises(ValueError, match="HXARRAY_KERNEL_CACHE_SIZE='-1'"):
        KernelCache(None)
    monkeypatch.setenv("HXARRAY_KERNEL_CACHE_SIZE", "4096")
    assert KernelCache(None).max_bytes == 4096


def test_a_missing_compiler_names_the_variable() -> None:
    done = _run(SUM, HXARRAY_CUDA_SIM_CXX="no-such-compiler++")
    _refused(done, "HXARRAY_CUDA_SIM_CXX", "no-such-compiler++")
