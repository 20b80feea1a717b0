"""Peak resident memory of the expression chain `sqrt(a*a + b*b) * 0.5 + 1`, one fresh process
per library, because `ru_maxrss` only ever grows within a process.

`python -m benchmarks.memory LIBRARY SIZE` (LIBRARY: numpy or hxarray) prints one JSON object.
The inputs are filled in place (`Generator.standard_normal(out=...)`), so building them leaves no
larger peak behind than the inputs themselves; the chain then runs `REPEAT` times, as in a loop.

On Linux a new process starts with the peak RSS of the process that spawned it (`execve` keeps the
old address space's high-water mark), so run these before the parent grows, and `measure` refuses a
result whose starting peak already reaches the inputs' peak.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

REPEAT = 3
LIBRARIES = ("numpy", "hxarray")


def _max_rss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # Linux reports KiB


def _chain_peak(library: str, size: int) -> dict[str, Any]:
    """Run the chain in this process; peak RSS at the start, before the chain and after it, and
    hxarray's allocator peaks."""
    at_start = _max_rss_bytes()
    rng = np.random.default_rng(0)
    if library == "numpy":
        xp: Any = np
        a, b = np.empty(size), np.empty(size)
        rng.standard_normal(out=a)
        rng.standard_normal(out=b)
    else:
        import hxarray as xp

        a, b = xp.empty(size), xp.empty(size)
        rng.standard_normal(out=np.asarray(a))  # a writable view of hxarray's buffer
        rng.standard_normal(out=np.asarray(b))
    before = _max_rss_bytes()
    for _ in range(REPEAT):
        result = xp.sqrt(a * a + b * b) * 0.5 + 1
        del result
    report: dict[str, Any] = {"library": library, "size": size, "repeat": REPEAT,
                              "peak_rss_at_start": at_start, "peak_rss_before_chain": before,
                              "peak_rss": _max_rss_bytes()}
    if library == "hxarray":
        stats = xp.memory_stats()
        report["allocator_peak_allocated"] = stats["peak_allocated_bytes"]
        report["allocator_peak_reserved"] = stats["peak_reserved_bytes"]
    return report


def measure(library: str, size: int) -> dict[str, Any]:
    """`_chain_peak` in a fresh interpreter (so the peak is this library's alone); RuntimeError
    with the child's last error line if it fails."""
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-m", "benchmarks.memory", library, str(size)],
                          cwd=root, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        error = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise RuntimeError(f"peak RSS of the chain with {library} not measured: {error}")
    report: dict[str, Any] = json.loads(done.stdout)
    if report["peak_rss_at_start"] >= report["peak_rss_before_chain"]:
        raise RuntimeError(f"peak RSS of the chain with {library} not measured: the process "
                           "inherited a larger peak from its parent")
    return report


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] not in LIBRARIES or not args[1].isdigit():
        sys.exit(f"usage: python -m benchmarks.memory {{{','.join(LIBRARIES)}}} SIZE")
    print(json.dumps(_chain_peak(args[0], int(args[1]))))


if __name__ == "__main__":
    main()
