"""A GPU's peak FLOP/s per dtype and memory bandwidth, from its properties (the figures NVIDIA's
data sheets multiply out: SMs x clock x FMA units per SM x 2, and memory clock x 2 (double data
rate) x bus width)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .driver import DeviceProperties

# FP32 FMA units per SM by compute capability (CUDA C Programming Guide, "Arithmetic
# Instructions"); later architectures keep 128.
_FP32_PER_SM = {(6, 0): 64, (6, 1): 128, (7, 0): 64, (7, 2): 64, (7, 5): 64, (8, 0): 64,
                (8, 6): 128, (8, 7): 128, (8, 9): 128, (9, 0): 128}
# FP64 throughput relative to FP32: the data-centre parts (GP100, GV100, GA100, GH100) run it at
# half rate; Turing at 1/32, the others at 1/64 (ibid.).
_FP64_RATIO = {(6, 0): 1 / 2, (7, 0): 1 / 2, (8, 0): 1 / 2, (9, 0): 1 / 2, (7, 5): 1 / 32}


def from_properties(p: DeviceProperties) -> dict[str, Any]:
    """`peak_flops` (dtype name -> FLOP/s; complex dtypes in real FLOP/s, at the rate of their
    real part) and `memory_bandwidth` (bytes/s) of the GPU with properties `p`."""
    cc = (p.compute_capability[0], p.compute_capability[1])
    fp32_units = _FP32_PER_SM.get(cc, 128 if cc >= (8, 6) else 64)
    fp32 = 2.0 * fp32_units * p.multiprocessor_count * p.clock_rate_khz * 1e3
    fp64 = fp32 * _FP64_RATIO.get(cc, 1 / 64)
    bandwidth = 2.0 * p.memory_clock_rate_khz * 1e3 * p.memory_bus_width / 8
    return {"peak_flops": {"float32": fp32, "float64": fp64, "complex64": fp32,
                           "complex128": fp64},
            "memory_bandwidth": bandwidth}
