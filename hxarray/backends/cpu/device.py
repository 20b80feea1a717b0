"""What the CPU is: read from the operating system, once."""

from __future__ import annotations

import os
import platform
from functools import lru_cache
from typing import Any

_SIMD_FLAGS = ("sse2", "sse4_1", "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw",
               "avx512_vnni", "amx_tile", "neon", "asimd", "sve")


def _meminfo() -> dict[str, int]:
    info = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, rest = line.partition(":")
                info[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return info


@lru_cache(maxsize=1)
def _static_info() -> dict[str, Any]:
    name, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "Hardware") and name in ("", platform.machine()):
                    name = value.strip()
                elif key in ("flags", "Features"):
                    flags.update(value.split())
    except OSError:
        pass
    vendor = "unknown"
    for known in ("Intel", "AMD", "ARM", "Apple", "Ampere", "IBM"):
        if known.lower() in name.lower():
            vendor = known
    return {
        "name": name,
        "vendor": vendor,
        "architecture": platform.machine(),
        "simd": [f for f in _SIMD_FLAGS if f in flags],
    }


def cpu_capabilities() -> dict[str, Any]:
    """Name, vendor, memory, cores and SIMD features of this machine."""
    mem = _meminfo()
    total = mem.get("MemTotal") or os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    free = mem.get("MemAvailable") or os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        **_static_info(),
        "total_memory": total,
        "free_memory": free,
        "compute_units": cores,
        "logical_cpus": os.cpu_count(),
        "memory_alignment": 64,
        "host_accessible": True,
    }
