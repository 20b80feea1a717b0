"""Figures of the CUDA simulator, for the benchmark suite's `cuda-sim` group.

`python -m hxarray.backends.cuda.sim.bench` prints them; `measure()` returns them as a dict
(seconds). Each figure is the median of several runs:

- `compile_pch`, `compile_no_pch`: a cold compile (and link) of a small kernel source, with and
  without the precompiled header (the header itself is built beforehand);
- `warm_load`: loading that kernel from the disk cache in a fresh process;
- `launch_queued`, `launch_sync`: an empty 1-thread kernel, launched back to back / launched and
  synchronised each time;
- `saxpy_device_grid`, `saxpy_per_element`: y = a*x + y on 2^20 float32 with a grid-stride kernel,
  with a grid sized to the device (SMs x 2048 threads) and with one thread per element (the
  module runs in loop mode); `saxpy_per_element_fibers`: the same launch with every thread a
  fiber, as kernels with barriers run;
- `gemm_256`: a 16x16-tiled shared-memory GEMM of 256x256 float32 matrices.

The kernels' figures are per launch, of 5 launched back to back and synchronised once: a
synchronisation lets the simulator's threads go idle, and waking an idle CPU costs up to about a
millisecond on a virtual machine, as much as a whole loop-mode saxpy.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ....hal.kernel_cache import KernelCache
from ....hal.settings import CUDA_SIM_WORKERS
from ...codegen.compiler import HostCompiler
from .driver import SimDriver

SAXPY = r'''
extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float* __restrict__ y,
                                 long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}
extern "C" __global__ void empty() {}
'''

GEMM = r'''
#define T 16
extern "C" __global__ void gemm(const float* A, const float* B, float* C, int m, int n, int k) {
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < k; t += T) {
        As[threadIdx.y][threadIdx.x] = (row < m && t + threadIdx.x < k) ?
            A[row * k + t + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (col < n && t + threadIdx.y < k) ?
            B[(t + threadIdx.y) * n + col] : 0.0f;
        __syncthreads();
        for (int j = 0; j < T; j++) acc = fmaf(As[threadIdx.y][j], Bs[j][threadIdx.x], acc);
        __syncthreads();
    }
    if (row < m && col < n) C[row * n + col] = acc;
}
'''


def _median(run: Callable[[], float], repeat: int) -> float:
    return statistics.median(run() for _ in range(repeat))


def _compile_times(pch: bool, repeat: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        compiler = HostCompiler(KernelCache(None), Path(tmp), pch=pch)
        compiler.precompiled_header()

        def once() -> float:
            source = GEMM + f"\n// {time.perf_counter_ns()}\n"  # a new key each time
            start = time.perf_counter()
            compiler.compile(source)
            return time.perf_counter() - start

        return _median(once, repeat)


def _warm_load(directory: str, repeat: int) -> float:
    code = ("import sys, time\n"
            "from hxarray.hal.kernel_cache import KernelCache\n"
            "from hxarray.backends.cuda.sim import SimDriver\n"
            "from hxarray.backends.cuda.sim.bench import GEMM\n"
            "d = SimDriver(cache=KernelCache(sys.argv[1]))\n"
            "t = time.perf_counter(); d.compile(0, GEMM); print(time.perf_counter() - t)\n")
    run = [sys.executable, "-c", code, directory]
    subprocess.run(run, check=True, capture_output=True)  # fills the cache
    return _median(lambda: float(subprocess.run(run, check=True, capture_output=True,
                                                 text=True).stdout), repeat)


def measure(repeat: int = 5) -> dict[str, float]:
    """The figures listed in the module docstring, in seconds."""
    figures: dict[str, float] = {}
    figures["compile_pch"] = _compile_times(True, repeat)
    figures["compile_no_pch"] = _compile_times(False, repeat)
    with tempfile.TemporaryDirectory() as cache_dir:
        figures["warm_load"] = _warm_load(cache_dir, repeat)
        driver = SimDriver(cache=KernelCache(cache_dir))
        stream = driver.default_stream(0)
        module = driver.compile(0, SAXPY)
        empty = module.get_function("empty")

        def launches(sync: bool, count: int = 500) -> float:
            start = time.perf_counter()
            for _ in range(count):
                driver.launch(empty, (1, 1, 1), (1, 1, 1), (), 0, stream)
                if sync:
                    driver.stream_synchronize(stream)
            driver.stream_synchronize(stream)
            return (time.perf_counter() - start) / count

        launches(True, 50)
        figures["launch_queued"] = _median(lambda: launches(False), repeat)
        figures["launch_sync"] = _median(lambda: launches(True), repeat)

        n = 1 << 20
        x = np.random.default_rng(0).random(n, dtype=np.float32)
        px, py = driver.malloc(0, x.nbytes), driver.malloc(0, x.nbytes)
        driver.copy_host_to_device(px, x, x.nbytes, stream)
        driver.copy_host_to_device(py, x, x.nbytes, stream)
        saxpy = module.get_function("saxpy")
        args = (np.float32(2), np.uintp(px), np.uintp(py), np.int64(n))

        def timed(function: object, grid: object, block: object, arguments: tuple,
                  count: int = 5) -> float:
            start = time.perf_counter()
            for _ in range(count):
                driver.launch(function, grid, block, arguments, 0,  # type: ignore[arg-type]
                              stream)
            driver.stream_synchronize(stream)
            return (time.perf_counter() - start) / count

        device_grid = driver.properties(0).multiprocessor_count * 2048 // 256
        figures["saxpy_device_grid"] = _median(lambda: timed(saxpy, device_grid, 256, args),
                                               repeat)
        figures["saxpy_per_element"] = _median(lambda: timed(saxpy, n // 256, 256, args), repeat)
        module.loop = False  # the fiber mode, for comparison
        figures["saxpy_per_element_fibers"] = _median(lambda: timed(saxpy, n // 256, 256, args),
                                                      repeat)
        module.loop = True

        gemm = driver.compile(0, GEMM).get_function("gemm")
        a = np.random.default_rng(1).random((256, 256), dtype=np.float32)
        pa, pc = driver.malloc(0, a.nbytes), driver.malloc(0, a.nbytes)
        driver.copy_host_to_device(pa, a, a.nbytes, stream)
        gemm_args = (np.uintp(pa), np.uintp(pa), np.uintp(pc), np.int32(256), np.int32(256),
                     np.int32(256))
        figures["gemm_256"] = _median(lambda: timed(gemm, (16, 16, 1), (16, 16, 1), gemm_args),
                                      repeat)
        out = np.empty_like(a)
        driver.copy_device_to_host(out, pc, out.nbytes, stream)
        driver.stream_synchronize(stream)
        if not np.allclose(out, a @ a, rtol=1e-4, atol=1e-3):
            raise AssertionError("the simulated GEMM disagrees with numpy")
        for address in (px, py, pa, pc):
            driver.free(0, address)
    return figures


def main() -> None:
    figures = measure()
    workers = CUDA_SIM_WORKERS.get()
    print(f"CUDA simulator ({workers} workers, medians)")
    for name, seconds in figures.items():
        value = f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"
        print(f"  {name:<20} {value}")


if __name__ == "__main__":
    main()
