"""`python -m benchmarks.cuda_host [--quick] [--json]`: hxarray's own host time and kernel launches
per operation on `cuda:0`, against the targets.

Measured on the null driver (`HXARRAY_CUDA_DRIVER=null`: compiling, launching and synchronising
cost nothing), so a call's time is hxarray's host work alone: argument checks, dtype resolution,
allocation, kernel lookup, argument packing. Warm (every kernel looked up and every layout planned
once before timing), 32x32 float32 operands. Times are the calling thread's CPU time
(`time.thread_time`: what the host spends, not the time the thread waits for a core on a busy
machine), in interleaved rounds (each round times every case once, over many calls); each figure
is the median of the rounds; launches are counted by the null driver. `make bench-cuda` runs it
in a process of its own (the driver is chosen when hxarray loads its CUDA backend).
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

# expression -> (target host time in microseconds per call, target launches per call); None:
# no target
TARGETS: dict[str, tuple[float | None, int | None]] = {
    "a + b": (10, 1), "a + 1.5": (10, 1), "xp.sum(a)": (10, 1), "xp.sum(a, axis=0)": (10, 1),
    "xp.mean(a)": (None, 2), "xp.where(a > 0, a, b)": (20, None), "xp.std(a)": (30, 3),
    # twenty element-wise operations (x = x * y + 0.5, ten times), eagerly and replayed by
    # hxarray.graph: host time per operation (and a replay at least 3x faster than eager)
    "twenty(a, b)": (None, 20), "graphed(a, b)": (1.5, 23),  # (+ 2 arguments in, 1 result out)
}
PER_OPERATION = {"twenty(a, b)": 20, "graphed(a, b)": 20}  # calls timed per operation


def twenty(x: Any, y: Any) -> Any:
    for _ in range(10):
        x = x * y + 0.5
    return x


def measure(quick: bool) -> list[dict[str, Any]]:
    """One row per case: median host time per call, the launches per call, the targets and
    whether each is met (None: no target)."""
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
    names = {"xp": xp, "a": a, "b": b, "twenty": twenty, "graphed": xp.graph(twenty)}
    calls: dict[str, Callable[[], Any]] = {
        expression: eval(f"lambda: {expression}", names) for expression in TARGETS}
    launches = {}
    for expression, call in calls.items():
        call()  # compile (nothing, here), plan the layouts
        before = backend.driver.launches
        call()
        launches[expression] = backend.driver.launches - before
    rounds, per_round = (7, 300) if quick else (21, 1000)
    times: dict[str, list[float]] = {expression: [] for expression in calls}
    for _ in range(rounds):
        for expression, call in calls.items():
            start = time.thread_time()
            for _ in range(per_round):
                call()
            times[expression].append((time.thread_time() - start) / per_round)
    rows = []
    for expression, (target_us, target_launches) in TARGETS.items():
        host_us = statistics.median(times[expression]) * 1e6 / PER_OPERATION.get(expression, 1)
        case = f"{expression}, per operation" if expression in PER_OPERATION else expression
        rows.append({"case": case, "host_us": host_us, "launches": launches[expression],
                     "target_us": target_us, "target_launches": target_launches,
                     "host_met": None if target_us is None else host_us <= target_us,
                     "launches_met": None if target_launches is None else
                     launches[expression] <= target_launches})
    return rows


def verdict(met: bool) -> str:
    """A target's verdict as the CUDA report writes it: "met", or "not met" in bold."""
    return "met" if met else "**not met**"


def _judged(value: str, target: float | None, unit: str, met: bool | None) -> str:
    if met is None:
        return f"{value} (no target)"
    return f"{value} (<= {target:g}{unit}: {verdict(met)})"


def table(rows: list[dict[str, Any]]) -> str:
    """The targets table: each figure with its target, judged."""
    lines = ["| operation (32x32 float32, cuda:0) | host time per call | kernel launches |",
             "| --- | --- | --- |"]
    for row in rows:
        host = _judged(f"{row['host_us']:.1f} µs", row["target_us"], " µs", row["host_met"])
        launches = _judged(str(row["launches"]), row["target_launches"], "",
                           row["launches_met"])
        lines.append(f"| `{row['case']}` | {host} | {launches} |")
    per_operation = {row["case"]: row["host_us"] for row in rows if "per operation" in row["case"]}
    eager, graphed = per_operation.get("twenty(a, b), per operation"), \
        per_operation.get("graphed(a, b), per operation")
    judged = [met for row in rows for met in (row["host_met"], row["launches_met"])
              if met is not None]
    if eager and graphed:
        faster = eager / graphed
        judged.append(faster >= 3)
        lines += ["", f"`hxarray.graph` replays the twenty operations {faster:.1f}x faster than "
                      f"they run eagerly (>= 3x: {verdict(faster >= 3)})."]
    lines += ["", f"Targets met: {sum(judged)} of {len(judged)}."]
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
