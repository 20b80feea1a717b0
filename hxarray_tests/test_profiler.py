"""The profiler: operations, primitives, transfers and allocations counted, device timing on an
asynchronous device, the Chrome trace, errors, and nothing left behind when it ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter

import numpy as np
import pytest

import hxarray as xp
from hxarray import _array
from hxarray.hal import Device, hooks, size_class


def _counts(prof: xp.profiler.Profile) -> Counter[tuple[str, str]]:
    return Counter((e.category, e.name) for e in prof.events)


@pytest.mark.parametrize("device", ["cpu", "ref"])
def test_events_are_counted(device: str) -> None:
    a = xp.ones((64, 64), device=device)
    with xp.profile() as prof:
        b = a + 1
        c = xp.matmul(b, b)
        total = xp.sum(xp.exp(c / 1e5))
        host = total.to_device("cpu")
        d = xp.asarray(np.arange(1000.0), device=device, copy=True)  # (without copy, zero-copy)
        d[2:5]
    assert float(host) == pytest.approx(np.exp(np.full((64, 64), 4 * 64 / 1e5)).sum())
    counts = _counts(prof)
    for key in [("operation", "Array.__add__"), ("operation", "matmul"), ("operation", "sum"),
                ("operation", "exp"), ("operation", "Array.__truediv__"),
                ("operation", "Array.to_device"), ("operation", "asarray"),
                ("operation", "Array.__getitem__"), ("primitive", "matmul"),
                ("primitive", "reduce:sum"), ("primitive", "elementwise:exp")]:
        assert counts[key] == 1, (key, counts)
    # a + 1 (numpy mode's sums start from +0 in the reduction itself)
    assert counts["primitive", "elementwise:add"] == 1, counts
    # asarray's copy in; on ref also to_device("cpu")'s copy out, and in on the CPU
    assert counts["transfer", "host to device"] == (2 if device == "ref" else 1)
    assert counts["transfer", "device to host"] == (1 if device == "ref" else 0)
    # b, c, c / 1e5, exp(...), the sum, d and the CPU copy of the sum
    assert counts["allocation", "StreamOrderedAllocator" if device == "ref"
                  else "CachingAllocator"] >= 6
    ops = [e for e in prof.events if e.category == "operation"]
    assert {e.device for e in ops} == {str(Device(device))}
    assert all(e.duration > 0 and e.error is None for e in ops)
    transfer = next(e for e in prof.events if e.name == "host to device" and e.nbytes == 8000)
    summary = {(r["category"], r["name"], r["device"]): r for r in prof.summary()}
    row = summary["transfer", "host to device", str(Device(device))]
    assert row["bytes"] >= transfer.nbytes and row["bandwidth"] > 0
    if device == "ref":  # asynchronous: timed with events on the device's stream
        assert all(e.device_duration is not None and e.device_start is not None for e in ops)
        assert all(e.stream.startswith("HostStream(ref:0)") for e in ops)
    else:
        assert all(e.device_duration is None for e in ops)
    primitive = next(e for e in prof.events if e.name == "elementwise:add")
    assert primitive.depth == 1  # inside the operator
    table = prof.table()
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["category", "name", "device"]
    totals = [r["total"] for r in prof.summary()]
    assert totals == sorted(totals, reverse=True)


def test_chrome_trace_is_valid_json(tmp_path) -> None:
    a = xp.ones(1000, device="ref")
    with xp.profile() as prof:
        for _ in range(3):
            a = xp.sqrt(a * 2.0)
        a.to_device("cpu")
    path = prof.export_chrome_trace(tmp_path / "trace.json")
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    assert trace["displayTimeUnit"] == "ms"
    complete = [e for e in events if e["ph"] == "X"]
    assert all({"name", "ts", "dur", "pid", "tid"} <= set(e) and e["dur"] >= 0
               for e in complete)
    names = Counter(e["name"] for e in complete if e["pid"] == 0)
    assert names["sqrt"] == 3 and names["Array.__mul__"] == 3
    device_side = [e for e in complete if e["pid"] != 0]
    assert any(e["name"] == "elementwise:sqrt" for e in device_side)
    meta = {e["args"]["name"] for e in events if e["ph"] == "M"}
    assert "device ref:0" in meta and "host (hxarray calls)" in meta
    assert any(e["ph"] == "C" and e["name"] == "memory ref:0" for e in events)
    assert any(e["ph"] == "i" and e["cat"] == "allocation" for e in events)


def test_errors_are_recorded_and_raised() -> None:
    with xp.profile() as prof:
        with pytest.raises(TypeError):
            xp.sin("not an array")
    failed = [e for e in prof.events if e.error]
    assert [e.name for e in failed] == ["sin"] and "TypeError" in failed[0].error


def test_nothing_is_replaced_and_the_hook_is_removed() -> None:
    add, add_method = xp.add, vars(_array.Array).get("__add__")
    solve = xp.linalg.solve
    cpu = Device("cpu").backend
    ref = Device("ref").backend
    allocator = cpu.allocator(Device("cpu"))
    own = {name: set(vars(x)) for name, x in (("cpu", cpu), ("ref", ref),
                                               ("allocator", allocator))}
    with xp.profile() as prof:
        xp.ones(3, device="ref") + 1
        assert xp.add is add and xp.linalg.solve is solve
        assert vars(_array.Array).get("__add__") is add_method
        assert {name: set(vars(x)) for name, x in (("cpu", cpu), ("ref", ref),
                                                    ("allocator", allocator))} == own
        assert hooks.observers == [prof._hook]
    assert hooks.observers == []
    assert _counts(prof)["primitive", "elementwise:add"] == 1


def test_one_profile_at_a_time() -> None:
    with xp.profile() as prof:
        with pytest.raises(RuntimeError, match="do not nest"):
            xp.profile().__enter__()
    with pytest.raises(RuntimeError, match="records once"):
        prof.__enter__()


def test_memory_scope_pools_are_recorded() -> None:
    with xp.profile() as prof:
        with xp.memory_scope("cpu"):
            xp.ones(100)
    pools = [e for e in prof.events if e.category == "allocation" and e.name == "ScopePool"]
    assert len(pools) == 1 and pools[0].nbytes == size_class(800)


def test_cuda_kernels_and_compilations() -> None:
    """On the CUDA simulator (in a process of its own, so that the driver loads)."""
    code = """
        import hxarray as xp
        a = xp.ones(1000, device="cuda:0")
        with xp.profile() as prof:
            b = xp.exp(a) + a
            b.to_device("cpu")
        for e in prof.events:
            if e.category in ("kernel", "compile", "transfer"):
                print(e.category, e.name, e.device_duration is not None, e.nbytes)
    """
    env = {**os.environ, "HXARRAY_CUDA_DRIVER": "sim"}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    kernels = [line for line in lines if line.startswith("kernel ")]
    assert len(kernels) == 2 and all(" True " in line for line in kernels)
    assert any("k_exp" in line for line in kernels) and any("k_add" in line for line in kernels)
    assert "transfer device to host True 8000" in lines
