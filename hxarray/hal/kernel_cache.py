"""A cache of compiled kernels: in memory per process, and on disk across processes.

Keys are built from everything that changes the binary (source, compiler options, target
architecture, compiler version); a backend supplies the compile function.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

__all__ = ["KernelCache", "default_cache_dir"]


def default_cache_dir() -> Path:
    """`HXARRAY_KERNEL_CACHE` if set, else `$XDG_CACHE_HOME/hxarray/kernels` (or ~/.cache/...)."""
    configured = os.environ.get("HXARRAY_KERNEL_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hxarray" / "kernels"


class KernelCache:
    """Compiled binaries by key; `directory=None` keeps them in memory only."""

    def __init__(self, directory: Path | str | None = None) -> None:
        self.directory = Path(directory) if directory is not None else None
        self._memory: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self._compiling: dict[str, threading.Lock] = {}  # one per key being built
        self.hits = 0
        self.disk_hits = 0
        self.compiles = 0

    @staticmethod
    def key(*parts: str) -> str:
        import hashlib  # OpenSSL costs 3.5 MB of memory; only compiling backends need it

        digest = hashlib.sha256()
        for part in parts:
            digest.update(part.encode())
            digest.update(b"\0")
        return digest.hexdigest()

    def get_or_compile(self, key: str, compile: Callable[[], bytes]) -> bytes:
        """The binary for `key`, compiling (and storing) it on a miss. Threads asking for the same
        missing key wait for one compilation; different keys compile in parallel."""
        with self._lock:
            binary = self._memory.get(key)
            if binary is not None:
                self.hits += 1
                return binary
            building = self._compiling.setdefault(key, threading.Lock())
        with building:
            with self._lock:
                binary = self._memory.get(key)
                if binary is not None:  # another thread built it meanwhile
                    self.hits += 1
                    return binary
            try:
                binary = self._read_disk(key)
                compiled = binary is None
                if compiled:
                    binary = compile()
                    self._write_disk(key, binary)
                with self._lock:
                    self._memory[key] = binary
                    self.compiles += compiled
                    self.disk_hits += not compiled
            finally:
                with self._lock:
                    self._compiling.pop(key, None)
        return binary

    def clear(self) -> None:
        """Forget the in-memory entries (the disk cache stays)."""
        with self._lock:
            self._memory.clear()

    def _read_disk(self, key: str) -> bytes | None:
        if self.directory is None:
            return None
        try:
            return (self.directory / key).read_bytes()
        except OSError:
            return None

    def _write_disk(self, key: str, binary: bytes) -> None:
        if self.directory is None:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            # write-then-rename so concurrent processes never read a partial file
            fd, tmp = tempfile.mkstemp(dir=self.directory)
            with os.fdopen(fd, "wb") as f:
                f.write(binary)
            os.replace(tmp, self.directory / key)
        except OSError:
            pass  # a read-only or full disk only costs recompilation
