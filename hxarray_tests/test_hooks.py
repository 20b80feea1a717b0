"""The hooks (hal/hooks.py): a third-party observer sees the operations, launches, transfers,
allocations and frees on every device, errors reach `exit`, and installing is checked."""

from __future__ import annotations

import contextlib
import gc
from typing import Any

import numpy as np
import pytest

import hxarray as xp
from hxarray.backends.base import _observed, reruns_after_memory_error
from hxarray.hal import DeviceType, hooks


class Recorder(hooks.Hook):
    """Keeps what it is told."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, str, str, int | None]] = []  # (kind, name, device, nbytes)
        self.exits: list[tuple[int, BaseException | None]] = []
        self.allocations: list[tuple[str, int]] = []
        self.frees: list[tuple[str, int]] = []

    def enter(self, kind: str, name: str, device: Any, detail: Any) -> int:
        self.spans.append((kind, name, str(device), detail.get("nbytes")))  # (no arrays kept)
        return len(self.spans) - 1

    def exit(self, token: int, error: BaseException | None) -> None:
        self.exits.append((token, error))

    def allocated(self, allocator: Any, block: Any) -> None:
        self.allocations.append((str(allocator.device), block.nbytes))

    def freed(self, allocator: Any, block: Any) -> None:
        self.frees.append((str(allocator.device), block.nbytes))

    def named(self, kind: str, device: str) -> list[str]:
        return [name for k, name, d, _ in self.spans if k == kind and d == device]


def test_an_observer_sees_the_primitives_of_small_creations_and_copies(device: xp.Device) -> None:
    """The compiled shortcuts of `arange` and `asarray(copy=True)` step aside while a hook is
    installed, so the backend's primitives are observed on every device."""
    here = str(device)
    a = xp.ones(4, device=device)
    with Recorder() as hook:
        with xp.device_scope(device):
            ints = xp.arange(5)
        floats = xp.arange(0.0, 1.0, 0.25, device=device)
        copy = xp.asarray(a, copy=True)
    np.testing.assert_array_equal(np.asarray(ints.to_device("cpu")), np.arange(5))
    np.testing.assert_array_equal(np.asarray(floats.to_device("cpu")), [0.0, 0.25, 0.5, 0.75])
    np.testing.assert_array_equal(np.asarray(copy.to_device("cpu")), [1.0] * 4)
    assert hook.named("primitive", here).count("arange") == 2
    assert "copy" in hook.named("primitive", here)


def test_an_observer_sees_launches_transfers_and_memory(device: xp.Device) -> None:
    data = np.linspace(-2.0, 2.0, 1000)
    here = str(device)
    with Recorder() as hook:
        a = xp.asarray(data, device=device, copy=True)
        b = xp.exp(a) + a
        result = np.asarray(b.to_device("cpu"))
        del b
        gc.collect()
    np.testing.assert_allclose(result, np.exp(data) + data, rtol=1e-13)  # CUDA exp: ulps
    assert hooks.observers == []
    assert {"asarray", "exp", "Array.__add__", "Array.to_device"} <= \
        set(hook.named("operation", here))
    if device.type is DeviceType.CUDA:  # kernels, each launched once
        kernels = hook.named("kernel", here)
        assert len(kernels) == 2 and any("k_exp" in k for k in kernels) and \
            any("k_add" in k for k in kernels)
    else:  # the host backends' primitives: the CPU's compiled fast path took the general path
        assert {"elementwise:exp", "elementwise:add"} <= set(hook.named("primitive", here))
    assert ("transfer", "host to device", here, data.nbytes) in hook.spans
    if device.type is not DeviceType.CPU:
        assert ("transfer", "device to host", here, data.nbytes) in hook.spans
    # a, exp(a) and the sum, each of at least 8000 bytes; exp(a) freed after the sum
    assert sum(1 for d, n in hook.allocations if d == here and n >= data.nbytes) >= 3
    assert any(d == here and n >= data.nbytes for d, n in hook.frees)
    # every span ended once, without an error, innermost first
    assert sorted(token for token, _ in hook.exits) == list(range(len(hook.spans)))
    assert all(error is None for _, error in hook.exits)


def test_errors_reach_exit_and_the_call_still_raises() -> None:
    with Recorder() as hook:
        with pytest.raises(TypeError):
            xp.sin("not an array")
    (token, error), = hook.exits
    assert hook.spans[token][:2] == ("operation", "sin") and isinstance(error, TypeError)


def test_a_failing_memory_observer_warns_and_the_memory_stays_right() -> None:
    class Failing(hooks.Hook):
        def allocated(self, allocator: Any, block: Any) -> None:
            raise RuntimeError("observer bug")

    before = xp.memory_stats("cpu")["allocated_bytes"]
    with Failing(), pytest.warns(RuntimeWarning, match="observer bug"):
        x = xp.ones(100)
    assert float(xp.sum(x)) == 100.0
    del x
    assert xp.memory_stats("cpu")["allocated_bytes"] == before


def test_install_and_remove_are_checked() -> None:
    hook = hooks.Hook()
    with hook:
        with pytest.raises(ValueError, match="installed already"):
            hooks.install(hook)
    with pytest.raises(ValueError, match="not installed"):
        hooks.remove(hook)
    assert hooks.observers == []


class _Flaky:
    """A stand-in backend whose `copy` runs out of memory `failures` times, then copies."""

    device_type = DeviceType.CPU

    def __init__(self, failures: int) -> None:
        self.failures, self.releases = failures, 0

    def release_memory(self) -> None:
        self.releases += 1


@pytest.mark.parametrize("reruns", [False, True])
@pytest.mark.parametrize("failures", [0, 1, 2])
@pytest.mark.parametrize("observed", [False, True])
def test_a_primitive_reruns_once_after_a_memory_error_if_marked(reruns, failures,
                                                                observed) -> None:
    def copy(self: _Flaky, x: Any) -> Any:
        if self.failures:
            self.failures -= 1
            raise MemoryError("fake: out of memory")
        return x

    class Flaky(_Flaky):
        pass

    Flaky.copy = _observed("copy", reruns_after_memory_error(copy) if reruns else copy)
    backend = Flaky(failures)
    runs = 2 if reruns and failures else 1
    with Recorder() if observed else contextlib.nullcontext() as hook:
        if failures < runs:
            assert backend.copy("x") == "x"
        else:
            with pytest.raises(MemoryError):
                backend.copy("x")
    assert backend.releases == runs - 1
    if observed:  # each run its own span, a failed one ending with its MemoryError
        assert hook.named("primitive", "cpu") == ["copy"] * runs
        errors = [type(error) for _, error in sorted(hook.exits, key=lambda e: e[0])]
        failed = min(failures, runs)
        assert errors == [MemoryError] * failed + [type(None)] * (runs - failed)


@pytest.mark.parametrize("observed", [False, True])
def test_a_rerun_that_cannot_free_memory_raises_with_the_first_error_as_context(observed) -> None:
    def copy(self: _Flaky, x: Any) -> Any:
        raise MemoryError("fake: out of memory")

    class Stuck(_Flaky):
        def release_memory(self) -> None:
            raise MemoryError("fake: nothing to free")

    Stuck.copy = _observed("copy", reruns_after_memory_error(copy))
    with Recorder() if observed else contextlib.nullcontext():
        with pytest.raises(MemoryError, match="nothing to free") as info:
            Stuck(1).copy("x")
    assert "out of memory" in str(info.value.__context__)
