"""`hxarray.plugin`, the surface a backend is written against: arrays over buffers, the numpy view,
the oracle (`check_elementwise`) on every device and against a wrong kernel, and the minimal
plug-in of docs/hal.md, run as written."""

from __future__ import annotations

import gc
import re
import subprocess
import sys
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hxarray as xp
from hxarray import plugin
from hxarray.backends.registry import BackendRegistry
from hxarray.hal import device as device_module

ROOT = Path(__file__).resolve().parents[1]
CPU = xp.Device("cpu")


def test_check_elementwise_on_every_device(device: xp.Device) -> None:
    """Each registered device's element-wise primitive agrees with numpy's kernels on every
    operation, dtype and special value (`check_elementwise` raises, listing any difference)."""
    calls = plugin.check_elementwise(device)
    assert calls >= 2 * len(plugin.OPS)  # every operation, on several dtypes


class WrongBackend(plugin.CpuBackend):
    """The CPU backend with three faults: float64 `add` one unit in the last place high,
    `negative` loses the sign of zero, and `multiply` computes in its first operand's dtype."""

    device_type = plugin.DeviceType.register("wrongkernels")
    priority = -30

    def elementwise(self, op: plugin.Op, args: Any, signature: plugin.Signature, shape: Any,
                    out: Any = None) -> Any:
        if op is plugin.OPS["multiply"] and signature.operands[0] is not signature.compute and \
                signature.compute.numpy.kind in "iu":
            first = signature.operands[0]
            narrow = plugin.Signature((first, first), first, first)
            return self.copy(super().elementwise(op, [args[0], self.copy(args[1], first)],
                                                 narrow, shape), signature.result)
        result = super().elementwise(op, args, signature, shape, out)
        view = plugin.numpy_view(result)
        if op is plugin.OPS["add"] and signature.result is xp.float64:
            view[...] = np.nextafter(view, np.inf)
        if op is plugin.OPS["negative"] and signature.result.numpy.kind == "f":
            view[view == 0] = 0.0
        return result


def test_check_elementwise_finds_wrong_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = BackendRegistry()
    registry.register(WrongBackend)
    monkeypatch.setattr(device_module, "_registry", [registry])
    monkeypatch.setattr(xp.Device("wrongkernels"), "_backend", None)
    with pytest.raises(AssertionError) as found:
        plugin.check_elementwise("wrongkernels")
    report = str(found.value)
    failed = set(re.findall(r"^(\w+\([^)]*\))", report, re.MULTILINE))
    assert failed == {"add('float64', 'float64')", "add('float32', 'float64')",
                      "negative('float16',)", "negative('float32',)",
                      "negative('float64',)", "multiply('int8', 'int16')",
                      "multiply('uint8', 'uint32')"}, report
    assert "-0.0" in report  # the report shows the values that differ
    assert plugin.check_elementwise(CPU, [plugin.OPS["add"]]) > 0  # the CPU's own stays right


def test_make_array_views_a_buffer() -> None:
    data = np.arange(12, dtype=np.float32)
    base = xp.asarray(data.copy())
    every_third = plugin.make_array(base.buffer, xp.float32, (2, 2), (24, 12), 4)
    np.testing.assert_array_equal(np.asarray(every_third), data[1::3][:4].reshape(2, 2))
    assert every_third.buffer is base.buffer and every_third.device == CPU
    fresh = plugin.make_array(base.buffer, xp.float32, (3, 4))  # C-contiguous by default
    assert fresh.strides == (16, 4) and fresh.offset == 0
    with pytest.raises(TypeError, match="shape must be a tuple of ints, got \\[3, 4\\]"):
        plugin.make_array(base.buffer, xp.float32, [3, 4])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tuples of ints"):
        plugin.make_array(base.buffer, xp.float32, (3, 4.0), (16, 4))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="dtype must be an hxarray dtype, got str"):
        plugin.make_array(base.buffer, "float32", (3,))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="2 strides for 1 dimensions"):
        plugin.make_array(base.buffer, xp.float32, (3,), (4, 4))
    with pytest.raises(TypeError, match="MemoryBuffer"):
        plugin.make_array(data, xp.float32, (3,))  # type: ignore[arg-type]


def test_numpy_view_shares_memory_and_keeps_it_alive() -> None:
    x = xp.asarray([1.0, 2.0, 3.0])
    view = plugin.numpy_view(x[::2])
    view[1] = 30.0
    assert float(x[2]) == 30.0
    buffer = weakref.ref(x.buffer)
    del x
    gc.collect()
    assert buffer() is not None  # the view holds it: its block is not handed out again
    np.testing.assert_array_equal(view, [1.0, 30.0])
    del view
    gc.collect()
    assert buffer() is None
    broadcast = plugin.numpy_view(xp.broadcast_to(xp.asarray([1, 2]), (3, 2)))
    assert not broadcast.flags.writeable and broadcast.shape == (3, 2)
    np.testing.assert_array_equal(broadcast, [[1, 2]] * 3)


@pytest.mark.skipif(not any(d.type.name == "cuda" for d in xp.__array_namespace_info__().devices()),
                    reason="needs a CUDA device (the simulator: HXARRAY_CUDA_DRIVER=sim)")
def test_numpy_view_refuses_device_memory() -> None:
    with pytest.raises(TypeError, match="not host-accessible"):
        plugin.numpy_view(xp.ones(3, device="cuda:0"))


def test_the_minimal_plugin_of_the_docs_runs() -> None:
    text = (ROOT / "docs" / "hal.md").read_text(encoding="utf-8")
    section = text[text.index("### A minimal plug-in"):]
    code = section[section.index("```python\n") + 10:section.index("```\n", 10)]
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=ROOT, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    expected = [line.split("# ")[-1] for line in code.splitlines() if line.startswith("print(")]
    assert result.stdout.splitlines() == expected
