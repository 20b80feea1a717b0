"""(g) hxarray.random across devices: random draws of every transform and dtype
(`hxarray.backends.philox.KINDS`), with random keys, stream positions (the 256-bit counter near
its wrap and every lane among them), lengths and split points, each filled on every device through
its `random_bits` primitive, whole and in two parts, and compared bit for bit with the numpy
evaluation of the same source.

`python -m stress.random_streams DEVICES DRAWS SEED` (devices comma-separated) prints the figures
as JSON.
"""

from __future__ import annotations

import json
import random
import sys
import time
from typing import Any

import numpy as np

DOUBLE = {"uniform": (-3.5, 7.25), "normal": (1.5, 0.25), "exponential": (0.0, 2.0)}


def _params(kind: str, dtype: Any, rng: random.Random) -> tuple[int, int]:
    """The transform's two words: a range for integers, doubles' bits for the float ones."""
    if kind == "integers":
        info = np.iinfo(dtype)
        low = rng.randint(int(info.min), int(info.max))
        return low & (2**64 - 1), rng.randint(1, int(info.max) - low + 1) & (2**64 - 1)
    if kind in DOUBLE:
        first, second = (int(np.float64(v).view(np.uint64)) for v in DOUBLE[kind])
        return first, second
    return 0, 0


def main(device_names: str, draws: int, seed: int) -> dict[str, Any]:
    import hxarray as xp
    from hxarray import _views
    from hxarray.backends.philox import KINDS, evaluate

    rng = random.Random(seed)
    devices = [xp.Device(name) for name in device_names.split(",")]
    mismatches: list[str] = []
    start = time.perf_counter()
    for _ in range(draws):
        kind = rng.choice(list(KINDS.values()))
        dtype = rng.choice(kind.dtypes)
        key = (rng.getrandbits(64), rng.getrandbits(64))
        position = rng.choice([rng.getrandbits(20), 2**258 - rng.randint(1, 64),
                               rng.getrandbits(258)])
        n = rng.choice([1, 2, 3, 4, 5, rng.randint(6, 3000)])
        split = rng.randint(0, n)
        params = _params(kind.name, dtype.numpy, rng)
        expected = evaluate(kind, dtype.numpy, key, position, 0, n, params).tobytes()
        for device in devices:
            backend = device.backend
            whole = backend.empty((n,), dtype, device)
            backend.random_bits(kind.name, key, position, whole, params)
            parts = backend.empty((n,), dtype, device)
            for a, b in ((0, split), (split, n)):
                if b > a:
                    backend.random_bits(kind.name, key, (position + kind.first(a)) % 2**258,
                                        _views.slice_axis(parts, 0, a, b), params)
            for label, got in (("whole", whole), ("split", parts)):
                if kind.name == "random32" and label == "split" and split % 2:
                    continue  # an odd split shares a word between the parts (numpy's halves)
                if np.asarray(got.to_device("cpu")).tobytes() != expected:
                    mismatches.append(f"{device} {label} {kind.name} {dtype} n={n} "
                                      f"position={position} key={key} split={split}")
    return {"draws": draws, "devices": device_names, "mismatches": len(mismatches),
            "examples": mismatches[:5], "seconds": round(time.perf_counter() - start, 1)}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))
