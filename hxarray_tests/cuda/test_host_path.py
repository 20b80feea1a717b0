"""The CUDA backend's host path: the null driver, the element-wise argument packer (against the
codegen's own records) and the launch plans, which a warm call finds without generating code."""

from __future__ import annotations

import numpy as np
import pytest

from hxarray import _dtypes as dt
from hxarray.backends.codegen import elementwise as ew
from hxarray.backends.cuda.driver import load_driver
from hxarray.backends.cuda.driver_null import NullDriver

from ..oracle import on_the_null_driver


# -- the null driver -----------------------------------------------------------------------------
def test_null_driver_memory_round_trip() -> None:
    driver = NullDriver()
    assert driver.device_count() == 1 and driver.simulated
    free, total = driver.mem_info(0)
    address = driver.malloc(0, 1000)
    assert address % 256 == 0 and driver.mem_info(0)[0] == free - 1000
    data = np.arange(250, dtype=np.int32)
    stream = driver.default_stream(0)
    driver.copy_host_to_device(address, data, data.nbytes, stream)
    back = np.empty_like(data)
    driver.copy_device_to_host(back, address, back.nbytes, stream)
    np.testing.assert_array_equal(back, data)
    driver.free(0, address)
    assert driver.mem_info(0) == (free, total)
    with pytest.raises(ValueError, match="not an allocation"):
        driver.free(0, address)
    with pytest.raises(ValueError, match="cuda:1 does not exist"):
        driver.malloc(1, 8)
    with pytest.raises(MemoryError, match="out of memory on cuda:0"):
        driver.malloc(0, total + 1)


def test_null_driver_kernels_do_nothing() -> None:
    driver = NullDriver()
    function = driver.compile(0, "not even CUDA", (), ("k",)).get_function("k")
    assert function.name == "k" and function.attributes.max_threads_per_block == 1024
    address = driver.malloc(0, 16)
    driver.memset(address, 7, 16, driver.default_stream(0))
    driver.launch(function, (1, 1, 1), (32, 1, 1), [np.uintp(address)], 0,
                  driver.default_stream(0))
    out = np.empty(16, np.uint8)
    driver.copy_device_to_host(out, address, 16, driver.default_stream(0))
    assert (out == 7).all() and driver.launches == 1  # the launch wrote nothing, counted
    event = driver.create_event(0)
    driver.event_record(event, driver.create_stream(0))
    assert driver.event_query(event) and driver.stream_query(driver.create_stream(0))


def test_load_driver_names_null(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HXARRAY_CUDA_DRIVER", "null")
    assert isinstance(load_driver(), NullDriver)
    monkeypatch.setenv("HXARRAY_CUDA_DRIVER", "nul")
    with pytest.raises(ValueError, match="HXARRAY_CUDA_DRIVER='nul'.*'null'"):
        load_driver()


def test_operations_on_the_null_driver() -> None:
    """In a process of its own (the driver is chosen when the CUDA backend loads): operations
    give arrays of the right shape and dtype, launch as many kernels as the driver counts, and a
    warm call compiles nothing and plans nothing new."""
    code = """
        import numpy as np
        import hxarray as xp
        device = xp.Device("cuda:0")
        backend = device.backend
        state = backend._state(device)
        a = xp.asarray(np.ones((32, 32), np.float32), device=device)
        np.testing.assert_array_equal(np.asarray(a.to_device("cpu")), 1)  # copies copy
        # (call, launches): sums from +0 in numpy mode in the reduction itself; a sum over a
        # short column is one pass; mean a sum and a division; var and std one pass over the
        # data, then a division (and a square root); where a comparison and a selection
        calls = [(lambda: a + a, 1), (lambda: a * 2, 1), (lambda: xp.sum(a), 1),
                 (lambda: xp.sum(a, axis=0), 1), (lambda: xp.mean(a), 2),
                 (lambda: xp.mean(a, axis=1), 2), (lambda: xp.var(a), 2),
                 (lambda: xp.std(a, axis=0), 3), (lambda: xp.where(a > 0, a, 0.0), 2),
                 (lambda: xp.clip(a, 0.5, None), 1)]
        for call, _ in calls:
            call()
        stats = backend.stats(device)
        kernels, plans = len(state.kernels), len(state.plans)
        results = []
        for call, launches in calls:
            before = backend.driver.launches
            results.append(call())
            assert backend.driver.launches - before == launches, (call, launches)
        after = backend.stats(device)
        assert after["compilations"] == stats["compilations"]
        assert (len(state.kernels), len(state.plans)) == (kernels, plans)
        assert after["kernel_launches"] - stats["kernel_launches"] == sum(n for _, n in calls)
        assert [(r.shape, r.dtype) for r in results] == [
            ((32, 32), xp.float32), ((32, 32), xp.float32), ((), xp.float32),
            ((32,), xp.float32), ((), xp.float32), ((32,), xp.float32), ((), xp.float32),
            ((32,), xp.float32), ((32, 32), xp.float32), ((32, 32), xp.float32)]
        print("ok")
    """
    on_the_null_driver(code)


# -- the argument packer ----------------------------------------------------------------------
SCALARS = [0, 1, -1, 127, -128, 255, 2**31 - 1, -(2**31), 2**53, 2**60, -(2**63), 2**64 - 1,
           True, False, 0.0, -0.0, 1.5, -2.25, 1e-45, 3.4028235e38, 3.5e38, 1e300, float("inf"),
           float("-inf"), 1 + 2j, complex(-0.0, 3.5), complex(1e300, -1e300)]


def _numpy_bytes(value: object, dtype: dt.DType) -> bytes | None:
    with np.errstate(all="ignore"):
        try:
            return np.asarray(value, dtype=dtype.numpy).tobytes()
        except (OverflowError, TypeError, ValueError):
            return None


@pytest.mark.parametrize("dtype", dt.ALL_DTYPES, ids=lambda d: d.name)
def test_scalar_encoder_converts_as_numpy_does(dtype: dt.DType) -> None:
    encode = ew.scalar_encoder(dtype)
    for value in [*SCALARS, float("nan"), np.float32(2.5)]:
        expected = _numpy_bytes(value, dtype)
        if expected is None:  # numpy refuses it too (the namespace never passes it)
            with pytest.raises((OverflowError, TypeError, ValueError)):
                encode(value)
            continue
        if isinstance(value, float) and value != value:  # NaN: any NaN of the dtype
            got = np.frombuffer(encode(value), dtype.numpy)
            assert np.isnan(got).all() if dtype in dt.FLOATING else got.tobytes() == expected
            continue
        assert encode(value) == expected, (value, dtype)


@pytest.mark.parametrize("contiguous", [True, False])
def test_packer_matches_the_codegen_records(contiguous: bool) -> None:
    """The packer's records are byte for byte pack_operand's, pack_output's and pack_shape's."""
    dims = (6, 7) if not contiguous else (42,)
    steps = [(56, 8), (0, 8), (8, 48)] if not contiguous else [(8,), (8,)]
    scalars = [False, True, False] if not contiguous else [False, True]
    pack = ew.packer(dims, steps, contiguous, dt.float64, scalars)
    for addresses in [(4096, 8192, 12288), (2**40 + 256, 2**47, 2**48 - 256)]:
        values: list[object] = []
        expected = []
        array_steps = iter(steps[1:])
        address = iter(addresses)
        for scalar in scalars:
            if scalar:
                values.append(-2.5)
                expected.append(ew.pack_operand(None, (), -2.5, dt.float64))
            else:
                values.append(next(address))
                expected.append(ew.pack_operand(values[-1], next(array_steps)))
        values.append(next(address))
        expected.append(ew.pack_output(values[-1], steps[0]))
        expected.append(ew.pack_shape(dims, contiguous))
        packed = pack(values)
        assert [p.dtype for p in packed] == [e.dtype for e in expected]
        assert [p.tobytes() for p in packed] == [e.tobytes() for e in expected]
