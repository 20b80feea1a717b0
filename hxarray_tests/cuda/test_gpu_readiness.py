"""What only a GPU would show, checked where it can be without one: the CuPy floor against the
oldest supported CuPy's argument rules (the CUDA backend over `driver_cupy.py` on the fake
CuPy), DLPack export ordered on the producing stream; and the same checks on a real GPU, which
skip cleanly here."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

from hxarray import _dtypes as dt
from hxarray._ops import OPS, REDUCTIONS
from hxarray.backends.cuda.backend import CudaBackend
from hxarray.backends.cuda.sim import SimDriver
from hxarray.hal.device import Device, DeviceType
from hxarray.hal.kernel_cache import KernelCache

from .conftest import requires_gpu
from .fake_cupy import cupy_driver_on, refuses, stand_in, supported_floor


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


def test_clock_rates_come_from_device_attributes_where_cuda_13_drops_them(sim: SimDriver
                                                                         ) -> None:
    """CUDA 13 took the clock rates and the memory bus width out of cudaDeviceProp (CuPy's
    property dictionary then lacks them or holds 0): they are read as device attributes, so the
    peaks (and the benchmark's share of peak bandwidth) are not 0."""
    driver = cupy_driver_on(sim)
    fake = stand_in(driver)
    full = fake.cuda.runtime.getDeviceProperties
    fake.cuda.runtime.getDeviceProperties = lambda device: {
        key: value for key, value in {**full(device), "memoryClockRate": 0}.items()
        if key not in ("clockRate", "memoryBusWidth")}
    h100 = {13: 1_980_000, 36: 2_619_000, 37: 5120}  # cudaDevAttr number -> an H100's value
    fake.cuda.runtime.deviceGetAttribute = lambda attribute, device: h100[attribute]
    got = driver.properties(0)
    assert (got.clock_rate_khz, got.memory_clock_rate_khz, got.memory_bus_width) == (
        1_980_000, 2_619_000, 5120)

    def unknown(attribute: int, device: int) -> int:
        raise fake.cuda.runtime.CUDARuntimeError(1, "cudaErrorInvalidValue")

    fake.cuda.runtime.deviceGetAttribute = unknown
    driver._props.clear()  # (read once per device)
    got = driver.properties(0)
    assert (got.clock_rate_khz, got.memory_clock_rate_khz, got.memory_bus_width) == (0, 0, 0)


_DIVIDE = """
template <typename T> __global__ void divide(const T *a, const T *b, T *out) {
    out[threadIdx.x] = a[threadIdx.x] / b[threadIdx.x];
}
"""


def test_kernels_are_compiled_without_cupys_flush_to_zero(sim: SimDriver, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`cupy.RawModule(code=...)` appends -ftz=true to a kernel's options, and NVRTC takes the
    last of two -ftz options: float32 subnormals became 0 on the first H100 run (`all` of 1e-45
    was False). The CuPy driver compiles through CuPy's NVRTC call, which adds no -ftz, with the
    options RawModule would add otherwise (C++17, CuPy's headers), and CuPy loads the binary by
    path, its template names mapped to the lowered ones."""
    cupy = pytest.importorskip("cupy")
    nvrtc = pytest.importorskip("hxarray.backends.cuda.nvrtc")
    compiler = cupy.cuda.compiler
    assert "'-ftz=true'" in inspect.getsource(compiler._compile_with_cache_cuda)
    assert "ftz" not in inspect.getsource(compiler._compile_using_nvrtc_no_warning)
    if nvrtc.available():  # the last -ftz wins (NVRTC here, no GPU needed)
        flushed, _, _ = nvrtc._compile(_DIVIDE, "k.cu", ["-ftz=false", "-ftz=true"],
                                       ["divide<float>"], "compute_90", "PTX")
        kept, _, _ = nvrtc._compile(_DIVIDE, "k.cu", [], ["divide<float>"], "compute_90", "PTX")
        assert b"div.rn.ftz.f32" in flushed and b".ftz" not in kept

    driver = cupy_driver_on(sim)
    driver.compile_route, driver.cache = "nvrtc", KernelCache(tmp_path)
    fake = stand_in(driver)
    calls: list[tuple[tuple[str, ...], object]] = []
    lowered = "_Z6divideIfEvPKT_S2_PS0_"

    def compile_using_nvrtc(source: str, options: tuple[str, ...],
                            name_expressions: object = None) -> tuple[bytes, dict[str, str]]:
        calls.append((options, name_expressions))
        return b"\x7fELF a cubin", {"divide<float>": lowered}

    loaded: list[tuple[str, list[str]]] = []

    class RawModule:  # records what CuPy is asked to load
        def __init__(self, *, path: str) -> None:
            self.asked: list[str] = []
            loaded.append((path, self.asked))

        def get_function(self, name: str) -> object:
            self.asked.append(name)
            return object()

    monkeypatch.setattr(fake.cuda.compiler, "compile_using_nvrtc", compile_using_nvrtc,
                        raising=False)
    monkeypatch.setattr(fake.cuda, "nvrtc", type("nvrtc", (), {
        "getVersion": staticmethod(lambda: (12, 9))}), raising=False)
    monkeypatch.setattr(fake, "__version__", "14.2.0", raising=False)
    monkeypatch.setattr(fake, "RawModule", RawModule, raising=False)
    for _ in range(2):  # the second from the kernel cache
        driver.compile(0, _DIVIDE, ("-DN=1",), ["divide<float>"]).get_function("divide<float>")
    (options, expressions), = calls
    assert options[:2] == ("-std=c++17", "-DN=1") and all(o.startswith("-I") for o in options[2:])
    assert not any("ftz" in o for o in options) and expressions == ("divide<float>",)
    assert [Path(path).read_bytes() for path, _ in loaded] == [b"\x7fELF a cubin"] * 2
    assert [asked for _, asked in loaded] == [[lowered]] * 2


def _cupy_rules_linalg() -> object:
    """numpy standing in for CuPy's linalg with CuPy's own signatures and shape rules
    (cupy/linalg: cholesky(a) takes no `upper`; solve(a, b) takes a stacked b only with a's
    stack, `a.shape[:-1] == b.shape[:-1]`)."""
    def solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if b.ndim > 1 and a.shape[:-1] != b.shape[:-1]:
            raise ValueError("a must have (..., M, M) shape and b must have (..., M, K) "
                             "for multidimensional b")
        return np.linalg.solve(a, b)

    linalg = type("linalg", (), {"cholesky": staticmethod(lambda a: np.linalg.cholesky(a)),
                                 "solve": staticmethod(solve)})
    return type("cupy", (), {"linalg": linalg, "broadcast_to": staticmethod(np.broadcast_to)})


def test_linalg_through_cupy_takes_the_standards_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first run on a GPU failed cholesky(upper=True) (CuPy's takes no `upper`) and solve
    with a stack of right-hand sides other than x1's (CuPy's takes equal stacks only); checked
    against numpy, with CuPy's rules stood in for."""
    interop = pytest.importorskip("hxarray.backends.cuda.interop")
    monkeypatch.setattr(interop, "cupy", _cupy_rules_linalg())
    rng = np.random.default_rng(3)
    m = rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3))
    spd = m @ m.conj().swapaxes(-1, -2) + 3 * np.eye(3)
    for upper in (False, True):
        got = interop.linalg("cholesky", spd, upper=upper)
        np.testing.assert_allclose(got, np.linalg.cholesky(spd, upper=upper), rtol=1e-12)
    a = spd.real
    for b in (rng.standard_normal(3), rng.standard_normal((3, 2)),
              rng.standard_normal((4, 1, 3, 2)), rng.standard_normal((2, 3, 1))):
        np.testing.assert_allclose(interop.linalg("solve", a, b), np.linalg.solve(a, b),
                                   rtol=1e-10)


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
            add = OPS["add"]
            shifted = backend.elementwise(add, (a, 1.5), add.signature(dt.float32, dt.float32),
                                          (1000,))
            total = backend.empty((), dt.float32, device)
            backend.reduce(REDUCTIONS["sum"], shifted, (0,), total)
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
    """50 rounds of cupy.from_dlpack(xp.exp(x)) on 2^28 float32 elements, read on a stream of
    CuPy's own: the consumer's stream waits for the stream that computed the values."""
    import cupy

    import hxarray as xp

    x = xp.ones((2**28,), dtype=xp.float32, device="cuda:0")
    with cupy.cuda.Stream(non_blocking=True):
        for _ in range(50):
            y = cupy.from_dlpack(xp.exp(x))
            ends = cupy.concatenate([y[:1], y[-1:]]).get()
            np.testing.assert_allclose(ends, np.float32(np.e), rtol=1e-6)


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


class _Counted:
    """Counts the launches and host synchronisations of the registered CUDA backend's driver."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import hxarray as xp

        self.driver = xp.Device("cuda:0").backend.driver
        self.launches = self.syncs = 0
        launch, sync = self.driver.launch, self.driver.stream_synchronize

        def counted_launch(*args: object) -> None:
            self.launches += 1
            launch(*args)

        def counted_sync(stream: object) -> None:
            self.syncs += 1
            sync(stream)

        monkeypatch.setattr(self.driver, "launch", counted_launch)
        monkeypatch.setattr(self.driver, "stream_synchronize", counted_sync)

    def reset(self) -> tuple[int, int]:
        counts = self.launches, self.syncs
        self.launches = self.syncs = 0
        return counts


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> _Counted:
    import hxarray as xp

    if "cuda:0" not in [str(d) for d in xp.__array_namespace_info__().devices()]:
        pytest.skip("needs cuda:0 (HXARRAY_CUDA_DRIVER=sim)")
    monkeypatch.delenv("HXARRAY_CUDA_SYNC_CHECKS", raising=False)
    return _Counted(monkeypatch)


def test_integer_indexing_does_not_synchronise(counted: _Counted,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Gather, scatter and take launch without waiting for the device; an index out of range
    is an IndexError at the next synchronising call (or at once with
    HXARRAY_CUDA_SYNC_CHECKS=1); a mask costs one synchronisation (the count sizes the
    result)."""
    import hxarray as xp
    from hxarray.hal.stream import current_stream

    data = np.arange(12.0).reshape(3, 4)
    x = xp.asarray(data, device="cuda:0")
    index = xp.asarray([2, -1, 0], device="cuda:0")
    mask = xp.asarray(data > 4.5, device="cuda:0")
    counted.reset()
    picked = x[index]
    taken = xp.take(x, index, axis=1)
    x[xp.asarray([1], device="cuda:0")] = -1.0
    launches, syncs = counted.reset()
    assert syncs == 0 and launches >= 3
    selected = x[mask]
    assert counted.reset()[1] == 1
    chosen = data > 4.5
    data[1] = -1.0
    np.testing.assert_array_equal(np.asarray(picked.to_device("cpu")),
                                  np.arange(12.0).reshape(3, 4)[[2, -1, 0]])
    np.testing.assert_array_equal(np.asarray(taken.to_device("cpu")),
                                  np.arange(12.0).reshape(3, 4)[:, [2, -1, 0]])
    np.testing.assert_array_equal(np.asarray(selected.to_device("cpu")), data[chosen])
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), data)

    counted.reset()
    bad = x[xp.asarray([0, 3], device="cuda:0")]  # returns; the error waits for a sync
    x[xp.asarray([7], device="cuda:0")] = 5.0  # nothing is written
    assert counted.reset()[1] == 0
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        current_stream("cuda:0").synchronize()
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 3"):
        current_stream("cuda:0").synchronize()  # the next error, at the next synchronisation
    current_stream("cuda:0").synchronize()  # each reported once
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), data)
    del bad

    monkeypatch.setenv("HXARRAY_CUDA_SYNC_CHECKS", "1")
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 1 with size 4"):
        xp.take(x, xp.asarray([7], device="cuda:0"), axis=1)
    monkeypatch.setenv("HXARRAY_CUDA_SYNC_CHECKS", "maybe")
    with pytest.raises(ValueError, match="HXARRAY_CUDA_SYNC_CHECKS='maybe' is invalid"):
        x[index]


@requires_gpu
def test_cupy_temporaries_come_from_hxarrays_pool() -> None:
    """Sorting, FFT and cuBLAS through CuPy take their workspaces from hxarray's allocator:
    CuPy's own pool stays empty, so hxarray's cache is the only one to free on OOM."""
    import cupy

    import hxarray as xp

    pool = cupy.get_default_memory_pool()
    pool.free_all_blocks()
    before = pool.total_bytes()
    x = xp.asarray(np.random.default_rng(0).random((512, 512)), device="cuda:0")
    np.testing.assert_allclose(np.asarray(xp.sort(x, axis=1).to_device("cpu")),
                               np.sort(np.asarray(x.to_device("cpu")), axis=1))
    xp.fft.fft(x)
    x @ x
    xp.Device("cuda:0").backend.synchronize(xp.Device("cuda:0"))
    assert pool.total_bytes() == before


def test_host_copies_both_ways_go_through_page_locked_staging(counted: _Counted,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """to_device both ways, and the backend's own small reads (a mask's count), copy through
    buffers from the driver's host_alloc (page-locked on a GPU: a DMA), never into or out of
    the caller's arrays; the values arrive."""
    import hxarray as xp

    driver = counted.driver
    staged: list[np.ndarray] = []
    copied: list[tuple[str, object]] = []
    host_alloc = driver.host_alloc
    to_device, to_host = driver.copy_host_to_device, driver.copy_device_to_host

    def staging(nbytes: int) -> np.ndarray:
        staged.append(host_alloc(nbytes))
        return staged[-1]

    def copy_in(dst: int, src: np.ndarray, nbytes: int, stream: object) -> None:
        copied.append(("in", src))
        to_device(dst, src, nbytes, stream)

    def copy_out(dst: np.ndarray, src: int, nbytes: int, stream: object) -> None:
        copied.append(("out", dst))
        to_host(dst, src, nbytes, stream)

    monkeypatch.setattr(driver, "host_alloc", staging)
    monkeypatch.setattr(driver, "copy_host_to_device", copy_in)
    monkeypatch.setattr(driver, "copy_device_to_host", copy_out)
    data = np.arange(24.0).reshape(4, 6)
    x = xp.asarray(data, device="cuda:0")
    back = np.asarray(x.to_device("cpu"))
    picked = np.asarray(x[x > 10.5].to_device("cpu"))
    np.testing.assert_array_equal(back, data)
    np.testing.assert_array_equal(picked, data[data > 10.5])
    assert {direction for direction, _ in copied} == {"in", "out"}
    assert len(copied) >= 4  # in; out; the mask's count; the selection out
    assert all(any(buffer is s for s in staged) for _, buffer in copied)
