"""(g) Memory limits: a random sequence of allocations (arrays made by `empty` and `ones`, and
buffers straight from the allocator), frees, `empty_cache` and `set_memory_limit` changes (limits
above and below what is in use, None) on one device. At every step the device's reserved bytes
(live plus cached) must be within the limit, or all live when the limit was set below what was
in use; an allocation must fail, with a MemoryError naming the device and the limit, exactly
when it cannot fit even with the cache freed; a free never raises reserved memory; at the end
the device's memory is back where it started.

`python -m stress.memory DEVICE STEPS SEED` prints the figures as JSON."""

from __future__ import annotations

import gc
import json
import random
import sys
import time
from typing import Any

SIZES = [0, 1, 100, 4096, 1 << 16, 1 << 20, 3 << 20, 8 << 20]  # bytes
LIMITS = [None, 0, 1 << 16, 1 << 20, 4 << 20, 16 << 20, 64 << 20]  # above what is in use
HELD = 128 << 20  # past this many live bytes the walk frees instead (devices have 1 GiB or more)


def main(device_name: str, steps: int, seed: int) -> dict[str, Any]:
    import hxarray as xp
    from hxarray.hal import size_class

    device = xp.Device(device_name)
    allocator = device.backend.allocator(device)
    stream = device.backend.stream(device)
    rng = random.Random(seed)
    gc.collect()
    stream.synchronize()
    base = allocator.stats()["allocated_bytes"]
    limit: int | None = None
    held: list[Any] = []
    counts = {"steps": 0, "allocations": 0, "memory_errors": 0, "frees": 0, "empty_caches": 0,
              "limit_changes": 0, "over_the_limit": 0, "wrong_refusals": 0, "unclean_errors": 0}
    examples: list[str] = []

    def stats() -> dict[str, int]:
        stream.synchronize()
        return allocator.stats()

    def violation(kind: str, text: str) -> None:
        counts[kind] += 1
        examples.append(f"step {counts['steps']}: {text}"[:300])

    def allocate(nbytes: int) -> Any:
        kind = rng.choice(["empty", "ones", "buffer"])
        if kind == "buffer":
            return allocator.allocate(nbytes)
        make = xp.empty if kind == "empty" else xp.ones
        return make(nbytes, dtype=xp.uint8, device=device)

    start = time.perf_counter()
    try:
        for _ in range(steps):
            counts["steps"] += 1
            action = rng.choices(["allocate", "free", "empty_cache", "limit"], [6, 4, 1, 1])[0]
            before = stats()
            if action == "allocate" and before["allocated_bytes"] - base > HELD:
                action = "free"
            if action == "allocate":
                nbytes = rng.choice(SIZES)
                fits = limit is None or before["allocated_bytes"] + size_class(nbytes) <= limit
                try:
                    held.append(allocate(nbytes))
                    counts["allocations"] += 1
                    if not fits:
                        violation("wrong_refusals", f"{nbytes} bytes allowed past {limit}")
                except MemoryError as exc:
                    counts["memory_errors"] += 1
                    if fits:
                        violation("wrong_refusals", f"{nbytes} bytes refused within {limit}")
                    if str(device) not in str(exc) or "memory limit" not in str(exc):
                        violation("unclean_errors", f"MemoryError: {exc}")
                    if stats()["allocated_bytes"] != before["allocated_bytes"]:
                        violation("unclean_errors", "a refused allocation kept memory")
                except Exception as exc:  # noqa: BLE001 - the finding
                    violation("unclean_errors", f"{type(exc).__name__}: {exc}")
            elif action == "free" and held:
                del held[rng.randrange(len(held))]
                counts["frees"] += 1
                if limit is not None and \
                        stats()["reserved_bytes"] > max(limit, before["reserved_bytes"]):
                    violation("over_the_limit", "a free raised reserved memory past the limit")
            elif action == "empty_cache":
                xp.empty_cache(device)
                counts["empty_caches"] += 1
                if stats()["cached_bytes"]:
                    violation("unclean_errors", "memory cached after empty_cache")
            elif action == "limit":
                extra = rng.choice(LIMITS)
                limit = None if extra is None else max(
                    0, before["allocated_bytes"] + rng.choice([-1, 1, 1, 1]) * extra)
                xp.set_memory_limit(limit, device)
                counts["limit_changes"] += 1
            after = stats()
            if limit is not None and after["reserved_bytes"] > limit and after["cached_bytes"]:
                violation("over_the_limit", f"{after['reserved_bytes']} bytes reserved "
                          f"({after['cached_bytes']} cached) under a limit of {limit}")
    finally:
        held.clear()
        gc.collect()
        xp.set_memory_limit(None, device)
        stream.synchronize()
    back = allocator.stats()["allocated_bytes"] == base
    return {"device": device_name, **counts, "memory_back": back, "examples": examples[:8],
            "clean": back and not any(counts[k] for k in (
                "over_the_limit", "wrong_refusals", "unclean_errors")),
            "seconds": round(time.perf_counter() - start, 1)}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))
