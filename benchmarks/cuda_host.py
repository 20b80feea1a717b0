"""`python -m benchmarks.cuda_host [--quick] [--json]`: hxarray's own host time per operation on
`cuda:0`, against the targets.

Measured on the null driver (`HXARRAY_CUDA_DRIVER=null`: compiling, launching and synchronising
cost nothing), so a call's time is hxarray's host work alone: argument checks, dtype resolution,
allocation, kernel lookup, argument packing. Warm (every kernel looked up and every layout planned
once before timing), 32x32 float32 operands. Times are the calling thread's CPU time
(`time.thread_time`: what the host spends, not the time the thread waits for a core on a busy
machine), in interleaved rounds (each round times every case once, over many calls); each figure
is the median of the rounds; `make bench-cuda` runs it in a process of its own
(the driver is chosen when hxarray loads its CUDA backend).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

# (expression, target in microseconds per call)
TARGETS_US: dict[str, float] = {
    "a + b": 10, "a + 1.5": 10, "xp.sum(a)": 10, "xp.sum(a, axis=0)": 10,
    "xp.where(a > 0, a, b)": 20, "xp.std(a)": 30,
}


def measure(quick: bool) -> list[dict[str, Any]]:
    """One row per case: median host time per call, the launches per call, the target."""
    os.environ["HXARRAY_CUDA_DRIVER"] = "null"
    import numpy as np

    import hxarray as xp

    device = xp.Device("cuda:0")
    backend = device.backend
    if type(backend.driver).__name__ != "NullDriver":
        raise RuntimeError("the CUDA backend loaded another driver before the null one: run "
                           "this benchmark in a process of its own")
    rng = np.random.default_rng(0)
    a = xp.asarray(rng.random((32, 32), np.float32), device=device)
    b = xp.asarray(rng.random((32, 32), np.float32), device=device)
    calls: dict[str, Callable[[], Any]] = {
        expression: eval(f"lambda: {expression}", {"xp": xp, "a": a, "b": b})
        for expression in TARGETS_US}
    launches = {}
    for expression, call in calls.items():
        call()  # compile (nothing, here), plan the layouts
        before = backend.stats(device)["kernel_launches"]
        call()
        launches[expression] = backend.stats(device)["kernel_launches"] - before
    rounds, per_round = (7, 300) if quick else (21, 1000)
    times: dict[str, list[float]] = {expression: [] for expression in calls}
    for _ in range(rounds):
        for expression, call in calls.items():
            start = time.thread_time()
            for _ in range(per_round):
                call()
            times[expression].append((time.thread_time() - start) / per_round)
    return [{"case": expression, "host_us": statistics.median(times[expression]) * 1e6,
             "launches": launches[expression], "target_us": target,
             "met": statistics.median(times[expression]) * 1e6 <= target}
            for expression, target in TARGETS_US.items()]


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| operation (32x32 float32, cuda:0) | host time per call | launches | target |",
             "| --- | --- | --- | --- |"]
    for row in rows:
        verdict = "met" if row["met"] else "**not met**"
        lines.append(f"| `{row['case']}` | {row['host_us']:.1f} µs | {row['launches']} | "
                     f"<= {row['target_us']:g} µs, {verdict} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    rows = measure(args.quick)
    print(json.dumps(rows) if args.json else table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
