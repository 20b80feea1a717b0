"""The compiled kernels of one CUDA device: the sources the generators in `backends/codegen`
make, compiled through the device's driver (which caches binaries in memory and on disk through
the HAL's kernel cache), their functions kept by (source, name)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..codegen import OPTIONS

if TYPE_CHECKING:
    from .driver import Driver, Function

__all__ = ["Library"]


class Library:
    """The compiled kernels of one device. `function(source, name, batch)` compiles `source` once
    (exporting every instantiation in `batch`, which names `name` too) and returns the kernel."""

    def __init__(self, driver: Driver, index: int) -> None:
        self.driver = driver
        self.index = index
        self._functions: dict[tuple[str, str], Function] = {}
        self._lock = threading.Lock()
        self.compilations = 0
        self.hits = 0

    def function(self, source: str, name: str, batch: Sequence[str] = ()) -> Function:
        key = (source, name)
        found = self._functions.get(key)
        if found is not None:
            self.hits += 1
            return found
        names = tuple(batch) if name in batch else (*batch, name)
        module = self.driver.compile(self.index, source, OPTIONS, names)
        with self._lock:
            self.compilations += 1
            for exported in names:
                self._functions.setdefault((source, exported), module.get_function(exported))
            return self._functions[key]
