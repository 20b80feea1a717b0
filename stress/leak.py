"""(b) The leak loop: many iterations of mixed operations (creation, element-wise, reductions,
indexing and assignment, manipulation, sorting, sets, linear algebra, moves between devices)
and of calls that raise, with the garbage collector off, so that any reference cycle or lost
block stays visible. Flat means: the device's `allocated_bytes` back to its starting value
(exactly) after every checkpoint's iterations, and RSS no higher at the end than after the first
tenth, within a small allowance (numpy's and Python's own caches settle early).

`python -m stress.leak DEVICE ITERATIONS` prints the figures as JSON."""

from __future__ import annotations

import gc
import json
import sys
import time
from typing import Any

RSS_ALLOWANCE = 4 << 20  # bytes RSS may still grow after the first tenth


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _failing(xp: Any, x: Any) -> list[Any]:
    """Calls that raise (each is one expected exception)."""
    return [lambda: x + "a", lambda: xp.sum(x, axis=5), lambda: x[10**6],
            lambda: xp.reshape(x, (7, 7)), lambda: xp.asarray(x, dtype="bogus"),
            lambda: xp.broadcast_to(x, (3, 5))[0, 0].__setitem__((), 1.0),
            lambda: xp.empty((0, 2**63)), lambda: xp.sin(xp.asarray([1, 2])),
            lambda: xp.sort(x, descending="no"), lambda: xp.matmul(x, xp.ones((3, 3)))]


def iteration(xp: Any, device: Any, i: int) -> int:
    """One round of mixed work on `device`; the number of exceptions it caught."""
    x = xp.arange(20, dtype=xp.float64, device=device) / 7.0
    m = xp.reshape(x, (4, 5))
    y = xp.sin(x) * 2.0 + xp.cos(x) - x ** 2
    y += 1.0
    z = xp.where(y > 0, y, -y)
    stats = [xp.sum(m, axis=0), xp.mean(m), xp.max(m, axis=1), xp.argmax(z), xp.std(x)]
    m2 = m @ xp.matrix_transpose(m)
    picked = z[z > 1.0], z[xp.asarray([1, 3, 5])], m[1:3, ::-1], xp.take(x, xp.asarray([0, 2]))
    m[0, :] = xp.zeros(5, device=device)
    m[xp.asarray([1, 2])] = 3.0
    pieces = xp.concat([x, y]), xp.stack([x, z]), xp.flip(m), xp.roll(x, 3), xp.tile(x, (2,))
    ordered = xp.sort(z), xp.argsort(z), xp.unique_values(xp.round(z)), xp.cumulative_sum(x)
    found = xp.searchsorted(ordered[0], z), xp.isin(x, y), xp.nonzero(z > 1)
    moved = x.to_device("cpu").to_device(device)
    inverse = xp.linalg.inv(m2[:2, :2] + xp.eye(2, device=device) * 5)
    _ = (stats, picked, pieces, found, moved, inverse, xp.astype(x, xp.float32),
         xp.linspace(0, 1, 9, device=device), xp.full((3,), 7, device=device),
         xp.zeros_like(m), xp.broadcast_arrays(x, xp.ones((2, 20), device=device)))
    caught = 0
    for call in _failing(xp, x):
        try:
            call()
        except (TypeError, ValueError, IndexError, OverflowError, MemoryError):
            caught += 1
    if i % 50 == 0:
        with xp.Stream(device):
            _ = xp.sum(xp.ones(1000, device=device))
    return caught


def main(device_name: str, iterations: int) -> dict[str, Any]:
    import hxarray as xp

    device = xp.Device(device_name)
    with xp.device_scope(device):
        return _loop(xp, device, iterations)


def _loop(xp: Any, device: Any, iterations: int) -> dict[str, Any]:
    allocator = device.backend.allocator(device)
    for i in range(max(10, iterations // 100)):  # warm up: caches, lazy imports
        iteration(xp, device, i)
    device.backend.synchronize(device)
    gc.collect()
    gc.disable()
    base_stats = allocator.stats()
    base_cpu = xp.memory_stats("cpu")["allocated_bytes"]
    checkpoints, caught, start = [], 0, time.perf_counter()
    for i in range(iterations):
        caught += iteration(xp, device, i)
        if (i + 1) % max(1, iterations // 10) == 0:
            device.backend.synchronize(device)
            stats = allocator.stats()
            checkpoints.append({"iteration": i + 1, "rss": rss(),
                                "objects": gc.get_count()[0],
                                "allocated": stats["allocated_bytes"] - base_stats[
                                    "allocated_bytes"],
                                "cpu_allocated": xp.memory_stats("cpu")["allocated_bytes"] -
                                base_cpu})
    cycles = gc.collect()  # objects only the collector could free: reference cycles
    gc.enable()
    stats = allocator.stats()
    growth = checkpoints[-1]["rss"] - checkpoints[0]["rss"]
    flat = all(c["allocated"] == 0 and c["cpu_allocated"] == 0 for c in checkpoints) and \
        growth <= RSS_ALLOWANCE and cycles == 0
    return {"device": str(device), "iterations": iterations, "exceptions": caught,
            "allocations": stats["num_allocs"] - base_stats["num_allocs"],
            "checkpoints": checkpoints, "rss_growth": growth, "cycles": cycles, "flat": flat,
            "seconds": round(time.perf_counter() - start, 1)}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]))))
