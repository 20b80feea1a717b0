"""(f) Pipelines: random `xp.pipeline` runs (depth 1 to 3, results to "cpu", left on the device
with None or the device itself; stages that return their input, a view, a reshape, a new array
or a tuple of them; single and paired batches of random sizes and dtypes) while every stream
worker sleeps a random while after each piece of work (`hxarray.hal.stream.set_worker_hook`), so
that uploads, computes and downloads interleave in ever different orders. Every result must
equal numpy's for its own batch when the pipeline is done, and still after the next pipeline
has run (no result may change after it was yielded).

`python -m stress.pipelines DEVICE RUNS SEED` prints the figures as JSON."""

from __future__ import annotations

import json
import random
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

# name -> (the stage on hxarray arrays, the same on numpy arrays); paired batches get two
# arguments. Results are an array or a tuple of arrays.
STAGES: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {}


def _stages(xp: Any) -> None:
    STAGES.update({
        "input": (lambda x: x, lambda x: x),
        "view": (lambda x: x[1:], lambda x: x[1:]),
        "strided view": (lambda x: x[::2], lambda x: x[::2]),
        "reshape": (lambda x: xp.reshape(x, (2, -1)), lambda x: x.reshape(2, -1)),
        "new array": (lambda x: x * 2 + 1, lambda x: x * 2 + 1),
        "tuple": (lambda x: (x[::3], x, x + 1), lambda x: (x[::3], x, x + 1)),
        "pair": (lambda x, y: (y, x - y), lambda x, y: (y, x - y)),
    })


class Delays:
    """The worker hook: sleep up to `most` seconds (half of the time not at all), drawn from a
    seeded generator shared by the workers."""

    def __init__(self, seed: int, most: float) -> None:
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.most = most
        self.calls = 0

    def __call__(self) -> None:
        with self.lock:
            self.calls += 1
            pause = self.rng.random() * self.most if self.rng.random() < 0.5 else 0.0
        if pause:
            time.sleep(pause)


def _batches(rng: random.Random, stage: str) -> list[Any]:
    count = rng.randint(1, 9)
    dtype = rng.choice([np.float32, np.float64, np.int32, np.int64])
    n = 2 * rng.choice([1, 7, 1000, 40_000])
    batches = [(np.arange(n) % 251 + 1000 * i).astype(dtype) for i in range(count)]
    if stage == "pair":
        return [(b, b[::-1].copy()) for b in batches]
    return batches


def _as_tuple(result: Any) -> tuple[Any, ...]:
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def _matches(result: Any, expected: Any) -> bool:
    got, want = _as_tuple(result), _as_tuple(expected)
    return len(got) == len(want) and all(
        np.array_equal(np.asarray(g.to_device("cpu")), w) and g.shape == w.shape
        for g, w in zip(got, want))


def main(device_name: str, runs: int, seed: int) -> dict[str, Any]:
    import hxarray as xp
    from hxarray.hal.stream import set_worker_hook

    _stages(xp)
    device = xp.Device(device_name)
    rng = random.Random(seed)
    delays = Delays(seed, 0.002)
    counts = {"pipelines": 0, "results": 0, "wrong": 0, "changed_later": 0, "errors": 0}
    wrong_by_out = {"cpu": 0, "None": 0, "device": 0}
    by_case: dict[str, int] = {}
    examples: list[str] = []
    previous: list[tuple[Any, Any, str]] = []  # the last pipeline's results, checked again
    start = time.perf_counter()
    set_worker_hook(delays)
    try:
        for _ in range(runs):
            stage = rng.choice(list(STAGES))
            depth = rng.randint(1, 3)
            out = rng.choice(["cpu", None, device])
            where = "device" if out is device else str(out)
            case = f"{stage}, depth {depth}, out={where}"
            batches = _batches(rng, stage)
            on_device, on_host = STAGES[stage]
            counts["pipelines"] += 1
            by_case[stage] = by_case.get(stage, 0) + 1
            try:
                results = list(xp.pipeline(batches, on_device, device=device, depth=depth,
                                           out=out))
                for kept, want, label in previous:  # a later pipeline changed nothing
                    if not _matches(kept, want):
                        counts["changed_later"] += 1
                        examples.append(f"changed by a later pipeline: {label}")
                previous = []
                for i, (result, batch) in enumerate(zip(results, batches, strict=True)):
                    want = on_host(*batch) if isinstance(batch, tuple) else on_host(batch)
                    counts["results"] += 1
                    if _matches(result, want):
                        previous.append((result, want, f"batch {i}: {case}"))
                    else:
                        counts["wrong"] += 1
                        wrong_by_out[where] += 1
                        examples.append(f"batch {i} of {len(batches)} wrong: {case}")
            except Exception as exc:  # noqa: BLE001 - the finding
                counts["errors"] += 1
                examples.append(f"{case}: {type(exc).__name__}: {exc}"[:300])
    finally:
        set_worker_hook(None)
    return {"device": device_name, "runs": runs, **counts, "wrong_by_out": wrong_by_out,
            "cases": by_case,
            "delays": delays.calls, "examples": examples[:8],
            "clean": not (counts["wrong"] or counts["changed_later"] or counts["errors"]),
            "seconds": round(time.perf_counter() - start, 1)}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))
