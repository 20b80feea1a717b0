"""What only a GPU would show, checked where it can be without one: the CuPy floor against the
oldest supported CuPy's argument rules (the CUDA backend over `driver_cupy.py` on the fake
CuPy), DLPack export ordered on the producing stream; and the same checks on a real GPU, which
skip cleanly here."""

from __future__ import annotations

import numpy as np
import pytest

from hxarray import _dtypes as dt
from hxarray.backends.cuda.backend import CudaBackend
from hxarray.backends.cuda.sim import SimDriver
from hxarray.hal.device import Device, DeviceType

from .conftest import requires_gpu
from .fake_cupy import cupy_driver_on, refuses, supported_floor


def _backend_on(driver: object) -> CudaBackend:
    """A CUDA backend of its own over `driver` (the registered one keeps its driver)."""
    backend = CudaBackend()
    backend.driver, backend._reason = driver, None  # type: ignore[assignment]
    return backend


def test_the_floor_is_what_the_launches_need() -> None:
    """Every CUDA layout argument is a numpy.void struct of 72 bytes or more: CuPy 13 refuses
    them, 14.0 asserts against them, the floor in pyproject takes them."""
    record = np.zeros((), np.dtype([("x", "<i8", (9,))]))[()]
    assert refuses((13, 6), record) and refuses((14, 0), record)
    assert refuses(supported_floor(), record) is None
    assert refuses((13, 6), np.float32(1)) is None


@pytest.mark.parametrize("version", [None, (14, 0), (13, 6)], ids=["floor", "14.0", "13.6"])
def test_backend_launches_fit_the_oldest_supported_cupy(sim: SimDriver,
                                                        version: tuple[int, int] | None) -> None:
    """Element-wise, reduction and indexing launches through driver_cupy.py, over a CuPy that
    takes kernel arguments as the floor does (and as older CuPys do, which must refuse)."""
    backend = _backend_on(cupy_driver_on(sim, version))
    device = Device(DeviceType.CUDA, 0)
    host = np.arange(1000, dtype=np.float32)
    with backend.default_stream(device):
        a = backend.from_host(host, device)

        def work() -> tuple[np.ndarray, np.ndarray]:
            shifted = backend.elementwise("add", (a, 1.5), dt.float32, (1000,))
            total = backend.empty((), dt.float32, device)
            backend.reduce("sum", shifted, (0,), total)
            picked = backend.empty((3,), dt.float32, device)
            backend.gather(shifted, 0, [backend.from_host(np.array([5, -1, 0]), device)],
                           picked)
            return backend.to_host(total), backend.to_host(picked)

        if version is not None:
            with pytest.raises(TypeError, match="numpy.void"):
                work()
            return
        total, picked = work()
    np.testing.assert_allclose(total, np.sum(host + 1.5, dtype=np.float64), rtol=1e-6)
    np.testing.assert_array_equal(picked, (host + 1.5)[[5, -1, 0]])


# -- on a real GPU (skipped without one) -----------------------------------------------------------
@requires_gpu
def test_dlpack_export_is_ordered_after_the_producer() -> None:
    """50 rounds of torch.from_dlpack(xp.exp(x)) on 2^28 float32 elements: the consumer's
    stream waits for the stream that computed the values."""
    torch = pytest.importorskip("torch")
    import hxarray as xp

    x = xp.ones((2**28,), dtype=xp.float32, device="cuda:0")
    for _ in range(50):
        y = torch.from_dlpack(xp.exp(x))
        assert float(y[-1]) == pytest.approx(np.e, rel=1e-6)
        assert float(y[0]) == pytest.approx(np.e, rel=1e-6)


@requires_gpu
def test_int8_sum_over_2_31_elements() -> None:
    """2^31 int8 elements: past the 32-bit index range (64-bit index math, no wrap)."""
    import hxarray as xp

    x = xp.ones((2**31,), dtype=xp.int8, device="cuda:0")
    assert int(xp.sum(x)) == 2**31
    x[-1] = 3
    assert int(xp.sum(x, dtype=xp.int64)) == 2**31 + 2


def test_dlpack_export_runs_on_the_producing_stream(sim: SimDriver,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """CuPy's exporter orders the consumer's stream after CuPy's current stream: the export
    must run with the hxarray stream that produced the data current (interop.on_stream)."""
    from hxarray.backends.cuda import interop

    backend = _backend_on(cupy_driver_on(sim))
    device = Device(DeviceType.CUDA, 0)
    current: list[object] = []
    seen: list[tuple[object, object]] = []

    class Exported:
        def __dlpack__(self, **kwargs: object) -> str:
            seen.append((current[-1] if current else None, kwargs["stream"]))
            return "capsule"

    class OnStream:
        def __init__(self, owner: CudaBackend, where: Device) -> None:
            self.stream = owner.stream(where)

        def __enter__(self) -> None:
            current.append(self.stream)

        def __exit__(self, *exc: object) -> None:
            current.pop()

    monkeypatch.setattr(interop, "on_stream", OnStream)
    monkeypatch.setattr(interop, "cupy_view", lambda owner, x: Exported())
    producer = backend.create_stream(device)
    with producer:
        x = backend.from_host(np.ones(4, np.float32), device)
        capsule = backend.dlpack(x, stream=7, max_version=(1, 0), dl_device=None, copy=None)
    assert capsule == "capsule" and seen == [(producer, 7)] and current == []
