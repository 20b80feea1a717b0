"""A pytest plugin for the conformance runner: where the default device's backend keeps counters
(`backend.stats(device)`: the CUDA backend's kernel launches, compilations and host fallbacks by
operation), which test files made which host fallbacks, so a run shows which chapters ran as
kernels. The runner loads it (`-p conformance.counters`) for hxarray and merges the file it writes
(`HXARRAY_CONFORMANCE_COUNTERS`) into the JSON report."""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_by_file: defaultdict[str, Counter[str]] = defaultdict(Counter)


def _stats() -> tuple[Any, dict[str, Any] | None]:
    import hxarray

    device = hxarray.__array_namespace_info__().default_device()
    backend = device.backend
    return device, backend.stats(device) if hasattr(backend, "stats") else None


def _fallbacks() -> Counter[str]:
    stats = _stats()[1]
    return Counter(stats["host_fallbacks"]) if stats else Counter()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    before = _fallbacks()
    yield
    made = _fallbacks() - before
    if made:
        _by_file[item.location[0]].update(made)


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get("HXARRAY_CONFORMANCE_COUNTERS")
    device, stats = _stats()
    if path and stats is not None:
        Path(path).write_text(json.dumps({
            "device": str(device), "stats": stats,
            "host_fallbacks_by_file": {f: dict(c) for f, c in sorted(_by_file.items())}},
            indent=1, default=str))
