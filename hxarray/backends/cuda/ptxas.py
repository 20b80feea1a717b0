"""ptxas resource reports without a GPU: registers, shared memory, stack, spills and occupancy.

`make cuda-check` compiles every generated source to PTX with NVRTC and assembles it with ptxas
(the `nvidia-cuda-nvcc-cu12` wheel; `HXARRAY_PTXAS` names another) for sm_90 with `-v`; `report`
turns its output into one `KernelReport` per kernel and `problems` names what breaks the rules of
the backend's kernel families: no stack frame or spill in element-wise, reduction, scan and
indexing kernels (but the 28-40 bytes of libdevice's large-argument reduction in sin, cos and
tan, and up to 48 bytes in complex kernels, whose thrust functions keep temporaries there), a
128-bit access in every element-wise kernel that reads memory, and at least two resident blocks
per SM (or a full 1024-thread block at <= 32 registers) for reductions.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...hal.settings import PTXAS

__all__ = ["ARCH", "KernelReport", "SM90", "find", "occupancy", "problems", "report"]

ARCH = "sm_90"
DEFAULT_BLOCK = 256  # launch.BLOCK: the threads a kernel without __launch_bounds__ runs with


@dataclass(frozen=True)
class SMLimits:
    """What one streaming multiprocessor holds (the CUDA occupancy calculator's table)."""

    registers: int
    register_unit: int  # registers are allocated per warp in units of this many
    threads: int
    blocks: int
    shared: int  # bytes per SM usable by blocks
    shared_reserved: int  # bytes the driver reserves per block


SM90 = SMLimits(registers=65536, register_unit=256, threads=2048, blocks=32,
                shared=233472, shared_reserved=1024)


@dataclass(frozen=True)
class KernelReport:
    """ptxas's account of one kernel for ARCH, with the occupancy it allows."""

    name: str  # the name expression (or the mangled name where none was given)
    registers: int
    shared: int  # static shared memory, bytes
    stack: int  # stack frame, bytes
    spill_stores: int
    spill_loads: int
    threads: int  # the block size: __launch_bounds__, else DEFAULT_BLOCK
    blocks_per_sm: int
    occupancy: float  # resident warps / the SM's maximum
    wide_accesses: int  # 128-bit global loads and stores in the PTX
    global_loads: int  # global loads of any width in the PTX
    trig_reduction: bool  # inlines libdevice's large-argument trig reduction (its 2/pi table)

    def line(self) -> str:
        return (f"{self.registers:4d} regs {self.shared:6d} B smem {self.stack:4d} B stack "
                f"{self.spill_stores + self.spill_loads:4d} B spill  {self.threads:4d} threads "
                f"x {self.blocks_per_sm:2d} blocks/SM = {self.occupancy:4.0%}  "
                f"{self.wide_accesses:3d} x 128-bit  {self.name}"
                + ("  (stack: libdevice's trig argument reduction)" if self.stack else ""
                   if self.trig_reduction else ""))


def find() -> str | None:
    """The ptxas executable: `HXARRAY_PTXAS`, the nvidia-cuda-nvcc-cu12 wheel's, or PATH's."""
    configured = PTXAS.get()
    if configured:
        return configured
    try:
        import nvidia.cuda_nvcc as wheel
    except ImportError:
        return shutil.which("ptxas")
    for root in wheel.__path__:
        candidate = Path(root) / "bin" / "ptxas"
        if candidate.is_file():
            return str(candidate)
    return shutil.which("ptxas")


def occupancy(registers: int, shared: int, threads: int, sm: SMLimits = SM90
              ) -> tuple[int, float]:
    """(resident blocks per SM, resident warps / the SM's maximum) of a kernel."""
    warps = -(-threads // 32)
    per_warp = -(-max(registers, 1) * 32 // sm.register_unit) * sm.register_unit
    by_registers = (sm.registers // per_warp) // warps
    by_threads = sm.threads // (warps * 32)
    by_shared = sm.shared // (shared + sm.shared_reserved)
    blocks = min(by_registers, by_threads, by_shared, sm.blocks)
    return blocks, blocks * warps / (sm.threads // 32)


_ENTRY = re.compile(r"\.entry\s+(\S+?)\s*\(")
_LOAD = re.compile(r"\bld\.global\.")
# libdevice's bits of 2/pi, read by its Payne-Hanek reduction (inlined, or called as a function)
_TRIG = re.compile(r"__cudart_i2opi_|__internal_trig_reduction_slowpath")
# The reduction keeps its words in a local array: 7 x 32 bits for float, 5 x 64 bits for double.
TRIG_REDUCTION_STACK = 40
# thrust's complex functions (CuPy's complex.cuh: acos, asin, atan, ...) keep a few temporaries on
# the stack; element-wise kernels of complex dtypes may use this much, without spills.
COMPLEX_MATH_STACK = 48
_COMPLEX = re.compile(r"\bhx::c(?:64|128)\b")
_WIDE = re.compile(r"\b(?:ld|st)\.global(?:\.nc)?(?:\.L1::\w+)?\.(?:v4\.(?:b|u|s|f)32|"
                   r"v2\.(?:b|u|s|f)64)\b")


def _entries(ptx: str) -> dict[str, tuple[int, int, int, bool]]:
    """Each entry's (128-bit global accesses, .maxntid threads or 0, global loads, whether it
    uses the trig reduction) in the PTX."""
    found = {}
    starts = [(m.start(), m.group(1)) for m in _ENTRY.finditer(ptx)]
    for (start, name), (end, _) in zip(starts, [*starts[1:], (len(ptx), "")]):
        body = ptx[start:end]
        bound = re.search(r"\.maxntid\s+(\d+)(?:,\s*(\d+))?(?:,\s*(\d+))?", body)
        threads = 0
        if bound:
            threads = 1
            for group in bound.groups():
                threads *= int(group or 1)
        found[name] = (len(_WIDE.findall(body)), threads, len(_LOAD.findall(body)),
                       _TRIG.search(body) is not None)
    return found


def report(ptx: str, names: Mapping[str, str] | None = None, arch: str = ARCH,
           ptxas: str | None = None) -> tuple[list[KernelReport], str]:
    """(a report per kernel, ptxas's warnings) for `ptx`; `names` maps mangled names to name
    expressions. RuntimeError where ptxas is missing or rejects the PTX."""
    executable = ptxas or find()
    if executable is None:
        raise RuntimeError("ptxas is not installed: pip install nvidia-cuda-nvcc-cu12 "
                           "(hxarray[cuda-check]) or set HXARRAY_PTXAS")
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "kernels.ptx"
        source.write_text(ptx)
        try:
            done = subprocess.run([executable, f"-arch={arch}", "-v", str(source), "-o",
                                   str(Path(scratch) / "kernels.cubin")],
                                  capture_output=True, text=True, check=False)
        except OSError as exc:
            raise RuntimeError(f"ptxas at {executable} cannot run: {exc}") from exc
    if done.returncode:
        raise RuntimeError(f"ptxas rejects the PTX for {arch}:\n{done.stderr.strip()}")
    entries = _entries(ptx)
    names = names or {}
    reports, warnings = [], []
    current, frame = None, (0, 0, 0)
    for line in done.stderr.splitlines():
        if "warning" in line.lower():
            warnings.append(line.strip())
        elif m := re.search(r"Function properties for (\S+)", line):
            current = m.group(1)
        elif m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                            r"(\d+) bytes spill loads", line):
            frame = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        elif current and (m := re.search(r"Used (\d+) registers", line)):
            smem = re.search(r"(\d+) bytes smem", line)
            shared = int(smem.group(1)) if smem else 0
            wide, bound, loads, trig = entries.get(current, (0, 0, 0, False))
            threads = bound or DEFAULT_BLOCK
            blocks, fraction = occupancy(int(m.group(1)), shared, threads)
            reports.append(KernelReport(names.get(current, current), int(m.group(1)), shared,
                                        *frame, threads, blocks, fraction, wide, loads, trig))
            current, frame = None, (0, 0, 0)
    return reports, "\n".join(warnings)


# The families of generated sources (by the name `codegen.all_sources` gives them) held to the
# rules, and the rules.
_NO_LOCAL_MEMORY = ("elementwise/", "reduction/", "scan/", "indexing/", "fused/")


def problems(source: str, reports: Sequence[KernelReport]) -> list[str]:
    """What breaks the rules in the kernels of generated source `source`."""
    found = []
    for r in reports:
        allowed = max(TRIG_REDUCTION_STACK if r.trig_reduction else 0,
                      COMPLEX_MATH_STACK if _COMPLEX.search(r.name) else 0)
        if source.startswith(_NO_LOCAL_MEMORY) and (r.stack > allowed or r.spill_stores or
                                                     r.spill_loads):
            found.append(f"{r.name}: {r.stack} bytes of stack frame, {r.spill_stores} + "
                         f"{r.spill_loads} bytes of spills (none allowed"
                         + (f" but {allowed} for libdevice's and thrust's complex math)"
                            if allowed else ")"))
        if source.startswith("elementwise/") and r.global_loads and not r.wide_accesses:
            found.append(f"{r.name}: no 128-bit global access on the contiguous path")
        if source.startswith("reduction/") and r.blocks_per_sm < 2 and not (
                r.threads >= 1024 and r.registers <= 32):
            found.append(f"{r.name}: {r.blocks_per_sm} resident block(s) per SM at "
                         f"{r.registers} registers x {r.threads} threads (at least 2 needed)")
    return found
