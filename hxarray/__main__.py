"""`python -m hxarray {demo,info}`: a short showcase, and what this machine offers."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import hxarray as xp
from hxarray._progress import progress
from hxarray.backends.cuda.backend import CudaBackend
from hxarray.backends.performance import PEAK_DTYPES
from hxarray.backends.registry import registry
from hxarray.hal import Device


def _human(nbytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if nbytes < 1024 or unit == "TiB":
            return f"{nbytes:.1f} {unit}" if unit != "B" else f"{nbytes:.0f} B"
        nbytes /= 1024
    return ""


def _flops(value: float) -> str:
    for unit, scale in (("TFLOP/s", 1e12), ("GFLOP/s", 1e9), ("MFLOP/s", 1e6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g} FLOP/s"


def _describe(entry: dict[str, Any]) -> list[str]:
    """The lines `info` prints for one device of `devices_report()`."""
    device = Device(entry["device"])
    caps = device.capabilities()
    features = caps.get("simd") or caps.get("features") or []
    peaks = entry["peak_flops"]
    lines = [f"{entry['device']:8s} {entry['name']} ({entry['vendor']}), priority "
             f"{entry['priority']}, {entry['compute_units']} compute units, "
             f"{_human(entry['free_memory'])} free of {_human(entry['total_memory'])}"]
    if peaks:
        lines.append("peak " + ", ".join(f"{_flops(peaks[k])} {k}" for k in PEAK_DTYPES
                                         if k in peaks)
                     + f"; memory {entry['memory_bandwidth'] / 1e9:.3g} GB/s"
                     + f" ({entry['performance_source']})")
    if features:
        lines.append(f"features: {' '.join(features)}")
    backend = device.backend
    if "compute_capability" in caps and isinstance(backend, CudaBackend):
        stats = backend.stats(device)
        lines.append(f"compute capability {caps['compute_capability']}, "
                     f"{caps['max_threads_per_block']} threads per block, warp "
                     f"{caps['warp_size']}, {_human(caps['shared_memory_per_block'])} shared "
                     "memory per block" + (", simulated on the CPU" if caps.get("simulated")
                                           else ""))
        lines.append(f"{stats['kernel_launches']} kernel launches, {stats['compilations']} "
                     f"compilations, host fallbacks: {stats['host_fallbacks'] or 'none'}")
    return lines


def _timed(fn: Callable[[], Any], device: Device | None = None,
           repeat: int = 5) -> tuple[Any, float]:
    """The result of `fn` and its best wall time in milliseconds (after one warm-up call),
    waiting for `device`'s work to finish inside each timing."""
    result = fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        if device is not None:
            device.backend.synchronize(device)
        best = min(best, time.perf_counter() - start)
    return result, best * 1e3


def info(as_json: bool = False) -> None:
    """Print `xp.devices_report()`: for people, or as JSON (`as_json`)."""
    for device in progress(registry.devices(), "measuring devices", unit="device"):
        device.capabilities()  # the first time on a machine, peaks are measured (seconds)
    report = xp.devices_report()
    if as_json:
        print(json.dumps({"hxarray": _version(), "array_api": xp.__array_api_version__,
                          "numpy": np.__version__, **report}, indent=1))
        return
    print(f"hxarray {_version()}, Array API {xp.__array_api_version__}; numpy {np.__version__}")
    print(f"default device: {report['default_device']}; best device: {report['best_device']}")
    print("devices:")
    for entry in report["devices"]:
        first, *rest = _describe(entry)
        print("  " + first)
        for line in rest:
            print("           " + line)
    for name, reason in report["unavailable"].items():
        print(f"  {name:8s} not available: {reason}")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hxarray")
    except PackageNotFoundError:
        return "(source tree)"


def demo(device: Device | None = None) -> None:
    info()
    device = device or xp.best_device()
    print(f"\nworkload on {device}:")
    rng = np.random.default_rng(0)
    n = 1_000_000
    a_host, b_host = rng.standard_normal(n), rng.standard_normal(n)
    m_host = rng.standard_normal((512, 512))
    a = xp.asarray(a_host, device=device)
    b = xp.asarray(b_host, device=device)
    m = xp.asarray(m_host, device=device)

    cases = [
        ("sqrt(a*a + b*b) * 0.5 + 1", lambda: xp.sqrt(a * a + b * b) * 0.5 + 1,
         lambda: np.sqrt(a_host * a_host + b_host * b_host) * 0.5 + 1),
        ("sum(exp(a) * sin(b))", lambda: xp.sum(xp.exp(a) * xp.sin(b)),
         lambda: np.sum(np.exp(a_host) * np.sin(b_host))),
        ("sort(a)", lambda: xp.sort(a), lambda: np.sort(a_host)),
        ("m @ m.T (512x512)", lambda: m @ m.T, lambda: m_host @ m_host.T),
        ("mean(a[a > 0])", lambda: xp.mean(a[a > 0]), lambda: np.mean(a_host[a_host > 0])),
    ]
    rows = [f"  {'operation':28s} {'hxarray':>10s} {'numpy':>10s}   check"]
    for label, ours, theirs in progress(cases, "workload", unit="case"):
        result, t_ours = _timed(ours, device)
        expected, t_numpy = _timed(theirs)
        got = np.asarray(result.to_device("cpu"))
        ok = np.allclose(got, expected, rtol=1e-10, atol=1e-8)
        rows.append(f"  {label:28s} {t_ours:8.2f}ms {t_numpy:8.2f}ms   "
                    f"{'ok' if ok else 'MISMATCH'}")
    print("\n".join(rows))
    stats = xp.memory_stats(device)
    print(f"\nallocator on {device}: {_human(stats['allocated_bytes'])} in use, "
          f"{_human(stats['reserved_bytes'])} reserved, "
          f"peak {_human(stats['peak_allocated_bytes'])}, "
          f"{stats['cache_hits']} of {stats['num_allocs']} allocations served from the cache")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m hxarray", description=__doc__)
    parser.add_argument("command", choices=("demo", "info"), nargs="?", default="demo")
    parser.add_argument("--device", type=Device, help="run the demo on this device, e.g. cpu")
    parser.add_argument("--json", action="store_true", help="info: print JSON, for machines")
    args = parser.parse_args(argv)
    if args.command == "info":
        info(as_json=args.json)
    else:
        demo(args.device)


if __name__ == "__main__":
    main()
