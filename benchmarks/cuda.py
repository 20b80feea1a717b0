"""`python -m benchmarks.cuda [--quick] [--update-docs]` (`make bench-cuda`): the CUDA figures.

- **The simulator** (always): its own costs (cold compile with and without the precompiled header,
  warm load from the disk cache, launch overhead, a 2^20-element saxpy and a 256x256 GEMM written
  as raw kernels: `hxarray.backends.cuda.sim.bench`), and the same kinds of work through hxarray
  on a simulated `cuda:0`: an element-wise add, a sum, a matmul and a round trip to the device.
- **hxarray's host overhead** (always): host time per call of a few operations on the null
  driver, against the targets (`benchmarks.cuda_host`, in a process of its own).
- **A GPU** (when CuPy sees one): hxarray on `cuda:0` against CuPy's own functions in the same run,
  element-wise bandwidth, sums and float32 random numbers (against cuRAND) from 2^20 to 2^28
  elements, matmul, `to_device` both ways; each
  kernel's achieved share of the device's peak memory bandwidth (the design's targets: at least
  85% for large contiguous element-wise and reduction kernels, at least 0.9x CuPy).

Timings are medians of repeated runs, each synchronised with the device. Writes
benchmarks/results/cuda-latest.{json,md}; `--update-docs` puts the table into docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from . import cuda_host
from .report import update_docs

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DOCS_PAGE = ROOT / "docs" / "performance.md"
START, END = "<!-- cuda:start -->", "<!-- cuda:end -->"


def _median_s(run: Callable[[], Any], sync: Callable[[], None], repeat: int) -> float:
    run()
    sync()  # warm: compile, allocate
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


class Side:
    """One library on the device: its namespace, and how host data gets there and back."""

    def __init__(self, xp: Any, put: Callable[[np.ndarray], Any],
                 get: Callable[[Any], np.ndarray], sync: Callable[[], None]) -> None:
        self.xp, self.put, self.get, self.sync = xp, put, get, sync


def _data(n: int, seed: int = 0, square: bool = False) -> np.ndarray:
    return np.random.default_rng(seed).random((n, n) if square else n, np.float32)


def _fused_chain(side: Side, n: int) -> Callable[[], Any]:
    """hxarray.fuse and cupy.fuse of one chain (a named function: CuPy names its kernel after
    it, and `<lambda>` is no C identifier)."""
    def chain(x: Any, y: Any) -> Any:
        return side.xp.sqrt(x * x + y * y) * 0.5 + 1

    fused, a, b = side.xp.fuse(chain), side.put(_data(n)), side.put(_data(n, 1))
    return lambda: fused(a, b)


def _random(side: Side, n: int) -> Callable[[], Any]:
    """n float32 uniforms on the device: hxarray.random's Philox kernel, CuPy's
    `cupy.random.random` (cuRAND)."""
    if side.xp.__name__ == "cupy":
        return lambda: side.xp.random.random(n, dtype=side.xp.float32)
    generator, device = side.xp.random.default_rng(0), side.put(_data(1)).device
    return lambda: generator.random(n, dtype=side.xp.float32, device=device)


# name -> (setup(side, n) returning the timed callable, default n, bytes moved per element)
CASES: dict[str, tuple[Callable[[Side, int], Callable[[], Any]], int, int]] = {
    "add float32": (lambda s, n: (lambda a, b: lambda: s.xp.add(a, b))(
        s.put(_data(n)), s.put(_data(n, 1))), 1 << 20, 12),
    "sum float32": (lambda s, n: (lambda a: lambda: s.xp.sum(a))(s.put(_data(n))), 1 << 20, 4),
    # hxarray.fuse and cupy.fuse: one kernel each
    "fused chain float32": (lambda s, n: _fused_chain(s, n), 1 << 20, 12),
    "matmul float32": (lambda s, n: (lambda a: lambda: s.xp.matmul(a, a))(
        s.put(_data(n, square=True))), 256, 0),
    "random float32": (_random, 1 << 20, 4),
    "to_device round trip float32": (lambda s, n: (lambda h: lambda: s.get(s.put(h)))(
        _data(n)), 1 << 20, 8),
}


def _hxarray(device_name: str) -> Side:
    import hxarray as xp

    device = xp.Device(device_name)
    return Side(xp, lambda h: xp.asarray(h, device=device),
                lambda x: np.asarray(x.to_device("cpu")),
                lambda: device.backend.synchronize(device))


def simulator(quick: bool) -> dict[str, Any]:
    """The simulator's own figures and hxarray's on a simulated device (in this process: the
    driver must be the simulator before hxarray loads its CUDA backend)."""
    os.environ["HXARRAY_CUDA_DRIVER"] = "sim"
    import hxarray as xp
    from hxarray.backends.cuda.sim import bench

    figures = bench.measure()
    side = _hxarray("cuda:0")
    rows = []
    for name, (setup, n, _) in CASES.items():
        n = n // 2 if quick and name.startswith("matmul") else n
        rows.append({"case": name, "n": n,
                     "median_s": _median_s(setup(side, n), side.sync, 3 if quick else 7)})
    device = xp.Device("cuda:0")
    chain = CASES["fused chain float32"][0](side, 1 << 10)
    before = device.backend.stats(device)["kernel_launches"]
    chain()
    launches = device.backend.stats(device)["kernel_launches"] - before
    return {"raw_kernels_s": figures, "hxarray_on_cuda0": rows, "fused_chain_launches": launches,
            "stats": device.backend.stats(device)}


def host_overhead(quick: bool) -> list[dict[str, Any]]:
    """`benchmarks.cuda_host`'s rows, measured in a process of its own (on the null driver)."""
    command = [sys.executable, "-m", "benchmarks.cuda_host", "--json", *(["--quick"] * quick)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def gpu_process(quick: bool) -> dict[str, Any]:
    """`gpu`, in a process of its own on the CuPy driver (this one's CUDA backend is the
    simulator's once `simulator` has run)."""
    command = [sys.executable, "-m", "benchmarks.cuda", "--gpu-json", *(["--quick"] * quick)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "HXARRAY_CUDA_DRIVER": "cupy"})
    if done.returncode != 0:
        return {"skipped": f"the GPU run failed: {done.stderr[-2000:]}"}
    return json.loads(done.stdout)


def gpu(quick: bool) -> dict[str, Any]:
    """hxarray against CuPy on a real GPU; {"skipped": why} without one."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return {"skipped": "CuPy reports no GPU"}
    except Exception as exc:  # no CuPy, no driver
        return {"skipped": f"no GPU ({type(exc).__name__}: {exc})"}
    os.environ.setdefault("HXARRAY_CUDA_DRIVER", "cupy")
    import hxarray as xp

    props = xp.cuda.properties("cuda:0")
    # bytes/s; 0 where the driver reports no memory clock or bus width (no share is computed)
    peak = 2 * props.memory_clock_rate_khz * 1e3 * props.memory_bus_width / 8
    ours, theirs = _hxarray("cuda:0"), Side(cupy, cupy.asarray, cupy.asnumpy,
                                            lambda: cupy.cuda.Device().synchronize())
    sizes = [1 << 20, 1 << 24] if quick else [1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28]
    rows = []
    for name, (setup, _, per_element) in CASES.items():
        for n in (sizes if per_element else [1024, 4096]):
            t_ours = _median_s(setup(ours, n), ours.sync, 9)
            t_theirs = _median_s(setup(theirs, n), theirs.sync, 9)
            on_device = per_element and "round trip" not in name and peak > 0 and t_ours > 0
            rows.append({"case": name, "n": n, "hxarray_s": t_ours, "cupy_s": t_theirs,
                         "ratio": t_theirs / t_ours if t_ours > 0 else None,
                         "peak_share": per_element * n / t_ours / peak if on_device else None})
    return {"device": props.name, "peak_bandwidth_GBps": peak / 1e9, "rows": rows}


def markdown(document: dict[str, Any]) -> str:
    sim = document["simulator"]
    lines = ["### The simulator", "", "| figure | value |", "| --- | --- |"]
    for name, value in sim["raw_kernels_s"].items():
        lines.append(f"| {name} | {value * 1e3:.2f} ms |")
    lines += ["", "hxarray on the simulated `cuda:0` (generated kernels):", "",
              "| case | n | median |", "| --- | --- | --- |"]
    for row in sim["hxarray_on_cuda0"]:
        lines.append(f"| {row['case']} | {row['n']:,} | {row['median_s'] * 1e3:.2f} ms |")
    stats = sim["stats"]
    raw = sim["raw_kernels_s"]
    loop = raw["saxpy_per_element_fibers"] / raw["saxpy_per_element"]
    launches = sim["fused_chain_launches"]
    verdict = cuda_host.verdict
    lines += ["", "Targets: an element-wise kernel in loop mode at least 10x faster than the same "
              f"launch with fibers (2^20 elements): {loop:.1f}x, {verdict(loop >= 10)}; a fused "
              f"chain (`hxarray.fuse`) is 1 launch: {launches}, {verdict(launches == 1)}."]
    lines += ["", f"Kernel launches {stats['kernel_launches']}, compilations "
              f"{stats['compilations']}, host fallbacks {stats['host_fallbacks'] or 'none'}.", ""]
    lines += ["### Host overhead", "", "hxarray's own host time per call on the null driver "
              "(kernels that do nothing), warm, medians of interleaved rounds:", "",
              cuda_host.table(document["host_overhead"]), ""]
    real = document["gpu"]
    lines += ["### A GPU", ""]
    if "skipped" in real:
        lines.append(f"Not measured: {real['skipped']}.")
    else:
        peak = real["peak_bandwidth_GBps"]
        bandwidth = f"{peak:.0f} GB/s" if peak else "not reported by the driver"
        lines += [f"{real['device']}, peak memory bandwidth {bandwidth}.", "",
                  "| case | n | hxarray | CuPy | CuPy / hxarray | share of peak |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for r in real["rows"]:
            share = f"{r['peak_share']:.0%}" if r["peak_share"] is not None else ""
            ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else ""
            lines.append(f"| {r['case']} | {r['n']:,} | {r['hxarray_s'] * 1e3:.3f} ms | "
                         f"{r['cupy_s'] * 1e3:.3f} ms | {ratio} | {share} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cuda", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    parser.add_argument("--update-docs", action="store_true",
                        help=f"write the table into {DOCS_PAGE.relative_to(ROOT)}")
    parser.add_argument("--gpu-json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.gpu_json:  # (gpu_process's child)
        print(json.dumps(gpu(args.quick)))
        return
    document = {"host_overhead": host_overhead(args.quick), "simulator": simulator(args.quick),
                "gpu": gpu_process(args.quick)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "cuda-latest.json").write_text(json.dumps(document, indent=1), encoding="utf-8")
    table = markdown(document)
    (RESULTS / "cuda-latest.md").write_text(table, encoding="utf-8")
    if args.update_docs:
        update_docs(DOCS_PAGE, table, (START, END))
    print(table)
    print("written: benchmarks/results/cuda-latest.{json,md}", file=sys.stderr)


if __name__ == "__main__":
    main()
