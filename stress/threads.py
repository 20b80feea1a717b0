"""(c) Threads: several threads run mixed operations at once, each in its own deterministic
sequence (seeded): element-wise and reductions large enough to be split over the thread pool,
sorts, matmul (BLAS), `threads(n)` blocks of varying counts, work on non-default streams. The
digest of every result is kept; then the same sequences run again one thread at a time, and the
digests must be equal. Afterwards the process-wide settings must be as before: the thread count,
the BLAS thread count.

`python -m stress.threads DEVICE THREADS SECONDS` prints the figures as JSON."""

from __future__ import annotations

import hashlib
import json
import random
import sys
import threading
import time
from typing import Any

LARGE = 300_000  # above the compute-bound threshold (2**18): split over the pool


def _blas() -> list[int]:
    from threadpoolctl import threadpool_info

    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


def _digest(value: Any) -> str:
    import numpy as np

    import hxarray as xp

    values = value if isinstance(value, tuple) else (value,)
    h = hashlib.sha256()
    for v in values:
        h.update(np.ascontiguousarray(np.asarray(v.to_device("cpu"))).tobytes()
                 if isinstance(v, xp.Array) else repr(v).encode())
    return h.hexdigest()[:16]


def task(xp: Any, device: Any, rng: random.Random) -> Any:
    """One operation chosen by `rng`, on arrays made from `rng`'s draws."""
    n = rng.choice([50_000, LARGE, 550_000])
    base = xp.arange(n, dtype=xp.float64, device=device) * rng.uniform(0.001, 0.01)
    kind = rng.randrange(9)
    if kind == 0:
        return xp.sin(base) * xp.exp(-base) + base
    if kind == 1:
        return xp.sum(base * base), xp.mean(base), xp.max(xp.cos(base))
    if kind == 2:
        return xp.sort(xp.sin(base * 97.0))
    if kind == 3:
        m = xp.reshape(base[:40_000], (200, 200))
        return m @ xp.matrix_transpose(m)
    if kind == 4:
        return xp.where(xp.sin(base) > 0, base, -base)
    if kind == 5:
        return xp.cumulative_sum(base), xp.argsort(xp.cos(base[:50_000] * 13.0))
    if kind == 6:
        v = base[:100_000]
        return xp.vecdot(v, v), xp.linalg.vector_norm(v)
    if kind == 7:
        x = xp.sin(base)
        x *= 2.0
        x[::3] = 1.0
        return x
    return xp.unique_counts(xp.round(xp.sin(base[:20_000]) * 50))


def sequence(xp: Any, device: Any, seed: int, count: int | None, deadline: float) -> list[str]:
    """Tasks drawn from `seed`, each maybe inside `threads(n)` and on a stream of its own: the
    first `count` (or until `deadline`), as digests."""
    rng = random.Random(seed)
    digests: list[str] = []
    stream = xp.Stream(device)
    while (count is None and time.monotonic() < deadline) or \
            (count is not None and len(digests) < count):
        threads = rng.choice([None, 1, 2, 3, 4])
        on_stream = rng.random() < 0.3
        state = rng.getstate()
        with xp.threads(threads) if threads else _Nothing(), stream if on_stream else _Nothing():
            rng.setstate(state)
            digests.append(_digest(task(xp, device, rng)))
    return digests


class _Nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def main(device_name: str, count: int, seconds: float) -> dict[str, Any]:
    import hxarray as xp

    device = xp.Device(device_name)
    before = (xp.get_num_threads(), _blas())
    results: dict[int, list[str]] = {}
    errors: list[str] = []
    deadline = time.monotonic() + seconds

    def run(k: int) -> None:
        try:
            results[k] = sequence(xp, device, 1000 + k, None, deadline)
        except BaseException as exc:  # noqa: BLE001 - reported
            errors.append(f"thread {k}: {type(exc).__name__}: {exc}")

    start = time.perf_counter()
    workers = [threading.Thread(target=run, args=(k,)) for k in range(count)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    concurrent = time.perf_counter() - start
    mismatches = 0
    for k, digests in results.items():  # the same sequences, one thread at a time
        serial = sequence(xp, device, 1000 + k, len(digests), 0)
        mismatches += sum(a != b for a, b in zip(digests, serial))
    after = (xp.get_num_threads(), _blas())
    return {"device": device_name, "threads": count, "tasks": sum(map(len, results.values())),
            "mismatches": mismatches, "errors": errors[:10], "settings_restored": before == after,
            "blas_threads": after[1], "seconds": round(concurrent, 1),
            "equal": mismatches == 0 and not errors and before == after}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))))
