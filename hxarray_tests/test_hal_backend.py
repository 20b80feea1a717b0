"""The backend seam: what a backend must implement, and that a backend written against it alone
(the reference backend, device type 'ref') is loaded as a plug-in and gets the rest by default."""

from __future__ import annotations

import numpy as np
import pytest

import hxarray as xp
from hxarray.plugin import Backend, CpuBackend, Device

REF = next((d for d in xp.__array_namespace_info__().devices() if d.type.name == "ref"), None)
needs_ref = pytest.mark.skipif(REF is None, reason="needs the reference backend plug-in "
                               "(pip install -e hxarray_tests/ref_pkg)")

RUNTIME = {"device_count", "capabilities", "allocator", "default_stream", "create_stream",
           "create_event", "dlpack_device"}
PRIMITIVES = {"assign", "elementwise", "reduce", "arg_reduce", "scan", "matmul", "sort",
              "argsort", "searchsorted", "nonzero", "gather", "scatter", "unique"}


def test_a_backend_implements_the_runtime_and_the_primitives_only() -> None:
    assert Backend.__abstractmethods__ == RUNTIME | PRIMITIVES
    assert all(getattr(Backend, name).__doc__ for name in PRIMITIVES)  # each states its contract


@needs_ref
def test_the_reference_backend_is_written_from_scratch_and_loaded_as_a_plug_in() -> None:
    backend = REF.backend
    assert isinstance(backend, Backend) and not isinstance(backend, CpuBackend)
    overridden = {name for name in dir(type(backend))
                  if name in vars(type(backend)) and not name.startswith("_")}
    assert RUNTIME | PRIMITIVES <= overridden
    assert not {"full", "copy", "concat", "isin", "compress", "place", "squared_deviations",
                "from_host", "to_host", "linalg", "fft"} & overridden  # all defaults
    assert type(backend).__module__ == "hxarray_ref"


@needs_ref
def test_optional_primitives_fall_back_to_the_host_and_are_counted() -> None:
    backend = REF.backend
    before = backend.host_fallbacks.copy()
    x = xp.asarray([[2.0, 0.0], [0.0, 4.0]], device=REF)
    inverse = xp.linalg.inv(x)
    spectrum = xp.fft.fft(xp.asarray([1.0 + 0j, 0j], device=REF))
    assert inverse.device == REF and spectrum.device == REF
    np.testing.assert_array_equal(np.asarray(inverse), np.linalg.inv(np.asarray(x)))
    np.testing.assert_array_equal(np.asarray(spectrum), np.fft.fft([1.0 + 0j, 0j]))
    assert backend.host_fallbacks["linalg.inv"] == before["linalg.inv"] + 1
    assert backend.host_fallbacks["fft.fft"] == before["fft.fft"] + 1


def test_the_cpu_backend_computes_everything_itself() -> None:
    backend = Device("cpu").backend
    xp.linalg.inv(xp.eye(2))
    assert not backend.host_fallbacks
