"""Estimated peak compute (FLOP/s per dtype) and memory bandwidth of a device.

A backend that can read them from the device's properties says so in `Backend.performance`
(CUDA on a GPU: SM count, clock and cores per SM, memory clock and bus width). Where they cannot be
read (the CPU, the CUDA simulator, the reference backend) they are measured once through the
device's own primitives, a matrix product per floating-point dtype and a large copy, and cached
on disk (`performance.json` under `cache_dir()`), keyed by everything that changes the answer.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _dtypes as dt
from .._version import API_VERSION
from ..hal.device import Device, device_scope
from ..hal.settings import CACHE_DIR

if TYPE_CHECKING:
    from .base import Backend

__all__ = ["PEAK_DTYPES", "cache_dir", "estimate", "measure"]

PEAK_DTYPES = ("float32", "float64", "complex64", "complex128")
# complex products are counted in real FLOP/s, at the rate of the real dtype of their precision
# (as a BLAS's zgemm runs at about dgemm's rate): measured for the real dtypes only
_REAL_OF = {"complex64": "float32", "complex128": "float64"}
_CACHE_FILE = "performance.json"
_FORMAT = 1

_lock = threading.Lock()
_estimates: weakref.WeakKeyDictionary[Backend, dict[Device, dict[str, Any]]] = \
    weakref.WeakKeyDictionary()


def cache_dir() -> Path:
    """hxarray's cache directory: `HXARRAY_CACHE_DIR`, else `$XDG_CACHE_HOME/hxarray`, else
    `~/.cache/hxarray`."""
    explicit = CACHE_DIR.get()
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hxarray"


def estimate(device: Device, backend: Backend | None = None) -> dict[str, Any]:
    """`peak_flops` (dtype name -> FLOP/s), `memory_bandwidth` (bytes/s) and
    `performance_source` ("properties", "measured" or "measured, cached") of `device` (run by
    `backend`, by default its registered one); computed once per process and backend."""
    backend = backend or device.backend
    known = _estimates.get(backend, {}).get(device)
    if known is not None:
        return known
    with _lock:
        per_device = _estimates.setdefault(backend, {})
        known = per_device.get(device)
        if known is None:
            known = per_device[device] = _estimate(device, backend)
    return known


def _estimate(device: Device, backend: Backend) -> dict[str, Any]:
    declared = backend.performance(device)
    if declared is not None:
        return {**declared, "performance_source": "properties"}
    key = _key(device, backend)
    cached = _read_cache().get(key)
    if cached is not None:
        return {**cached, "performance_source": "measured, cached"}
    measured = measure(device, backend)
    _write_cache(key, measured)
    return {**measured, "performance_source": "measured"}


def _key(device: Device, backend: Backend) -> str:
    """What the measurement depends on: the backend, the device and the software that runs it."""
    import numpy as np

    caps = backend.capabilities(device)
    kind = type(backend)
    parts = [f"v{_FORMAT}", f"{kind.__module__}.{kind.__qualname__}", str(device),
             str(caps.get("name")), str(caps.get("compute_units")), str(caps.get("total_memory")),
             f"numpy {np.__version__}", f"api {API_VERSION}", f"cpus {os.cpu_count()}"]
    return " | ".join(parts)


def _read_cache() -> dict[str, Any]:
    try:
        document = json.loads((cache_dir() / _CACHE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return document if isinstance(document, dict) else {}


def _write_cache(key: str, value: dict[str, Any]) -> None:
    """Add `key` to the cache file (a temporary file renamed into place: concurrent processes
    read whole files only); an unwritable directory keeps the estimate in memory only."""
    directory = cache_dir()
    temporary = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        document = _read_cache()
        document[key] = value
        # an unpredictable name made exclusively (O_EXCL): nothing planted there is followed
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{_CACHE_FILE}.")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(document, indent=1))
        os.replace(temporary, directory / _CACHE_FILE)
        temporary = None
    except OSError:
        pass
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _best_time(run: Any, synchronize: Any, repeat: int) -> float:
    """The shortest of `repeat` timings of `run()` (after one warm-up call), each waited for."""
    run()
    synchronize()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def measure(device: Device, backend: Backend | None = None, *, seconds: float = 0.02,
            max_n: int = 1024) -> dict[str, Any]:
    """Measure `device` through its backend's primitives: for float32 and float64 an n x n
    matrix product (n doubled from 64 until the fastest of three products takes `seconds`, at
    most `max_n`; the peak is the best rate of any size), and a copy of 32 MiB for the
    bandwidth (bytes read plus bytes written per second). The fastest run is the one least
    disturbed by other work on the machine; a busy machine still gives low figures (delete the
    cache file to measure again). Complex dtypes get their real dtype's rate. About a second on
    a CPU."""
    backend = backend or device.backend

    def synchronize() -> None:
        backend.synchronize(device)

    flops: dict[str, float] = {}
    with device_scope(device):
        for name in ("float32", "float64"):
            dtype = dt.FROM_NUMPY[_numpy_dtype(name)]
            n, best = 64, 0.0
            while True:
                a = backend.full((n, n), 1, dtype, device)
                out = backend.empty((n, n), dtype, device)

                def product(a: Any = a, out: Any = out) -> None:
                    backend.matmul(a, a, out)
                elapsed = _best_time(product, synchronize, 3)
                best = max(best, 2 * n ** 3 / max(elapsed, 1e-9))
                if elapsed >= seconds or n >= max_n:
                    break
                n *= 2
            flops[name] = best
        flops.update((name, flops[real]) for name, real in _REAL_OF.items())
        nbytes = 32 << 20
        source = backend.full((nbytes // 8,), 1, dt.float64, device)
        target = backend.empty((nbytes // 8,), dt.float64, device)
        elapsed = _best_time(lambda: backend.assign(target, source), synchronize, 8)
    return {"peak_flops": flops, "memory_bandwidth": 2 * nbytes / max(elapsed, 1e-9)}


def _numpy_dtype(name: str) -> Any:
    import numpy as np

    return np.dtype(name)
