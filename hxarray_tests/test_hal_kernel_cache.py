"""KernelCache: memory hits, disk persistence across instances and processes, key stability."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hxarray.hal import KernelCache
from hxarray.hal.kernel_cache import default_cache_dir


class Compiler:
    """A compile function that counts its calls."""

    def __init__(self, binary: bytes = b"\x7fELF kernel") -> None:
        self.binary = binary
        self.calls = 0

    def __call__(self) -> bytes:
        self.calls += 1
        return self.binary


def _never() -> bytes:
    raise AssertionError("compiled although the binary was cached")


def test_memory_hits_compile_once() -> None:
    cache = KernelCache()
    compile = Compiler()
    key = KernelCache.key("extern \"C\" __global__ void k() {}", "-O3", "sm_80")
    assert cache.get_or_compile(key, compile) == compile.binary
    assert cache.get_or_compile(key, compile) == compile.binary
    assert cache.get_or_compile(key, _never) == compile.binary
    assert (compile.calls, cache.compiles, cache.hits, cache.disk_hits) == (1, 1, 2, 0)


def test_distinct_keys_compile_separately() -> None:
    cache = KernelCache()
    a, b = Compiler(b"A"), Compiler(b"B")
    ka, kb = KernelCache.key("src", "sm_80"), KernelCache.key("src", "sm_90")
    assert cache.get_or_compile(ka, a) == b"A"
    assert cache.get_or_compile(kb, b) == b"B"
    assert cache.get_or_compile(ka, _never) == b"A"
    assert (a.calls, b.calls, cache.compiles) == (1, 1, 2)


def test_key_is_a_stable_digest_of_its_parts() -> None:
    key = KernelCache.key("source", "-O3", "sm_80", "nvrtc 12.4")
    assert key == hashlib.sha256(b"source\0-O3\0sm_80\0nvrtc 12.4\0").hexdigest()
    assert len(key) == 64 and int(key, 16) >= 0
    assert KernelCache.key("ab", "c") != KernelCache.key("a", "bc")  # parts are delimited
    assert KernelCache.key("a") != KernelCache.key("a", "")
    assert KernelCache.key() == hashlib.sha256(b"").hexdigest()
    assert KernelCache.key("é") == hashlib.sha256("é\0".encode()).hexdigest()


def test_key_is_the_same_in_another_process() -> None:
    code = "from hxarray.hal import KernelCache; print(KernelCache.key('k', '-O2', 'sm_75'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1],
                         env={**os.environ, "PYTHONHASHSEED": "123"})
    assert out.stdout.strip() == KernelCache.key("k", "-O2", "sm_75")


def test_disk_persists_across_instances(tmp_path: Path) -> None:
    key = KernelCache.key("kernel", "sm_80")
    compile = Compiler(bytes(range(256)))
    first = KernelCache(tmp_path / "kernels")
    assert first.get_or_compile(key, compile) == compile.binary
    assert (tmp_path / "kernels" / key).read_bytes() == compile.binary
    assert sorted(p.name for p in (tmp_path / "kernels").iterdir()) == [key]  # no temp files left
    second = KernelCache(tmp_path / "kernels")
    assert second.get_or_compile(key, _never) == compile.binary
    assert second.get_or_compile(key, _never) == compile.binary
    assert (compile.calls, second.compiles, second.disk_hits, second.hits) == (1, 0, 1, 1)


def test_clear_forgets_memory_but_keeps_disk(tmp_path: Path) -> None:
    cache = KernelCache(str(tmp_path))
    key = KernelCache.key("k")
    compile = Compiler()
    cache.get_or_compile(key, compile)
    cache.clear()
    assert cache.get_or_compile(key, _never) == compile.binary
    assert (cache.disk_hits, compile.calls) == (1, 1)
    memory_only = KernelCache()
    memory_only.get_or_compile(key, compile)
    memory_only.clear()
    memory_only.get_or_compile(key, compile)
    assert compile.calls == 3


def test_unwritable_directory_only_costs_recompilation(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_bytes(b"")
    key = KernelCache.key("k")
    compile = Compiler()
    assert KernelCache(blocker / "kernels").get_or_compile(key, compile) == compile.binary
    assert KernelCache(blocker / "kernels").get_or_compile(key, compile) == compile.binary
    assert compile.calls == 2


def test_compile_errors_propagate_and_cache_nothing(tmp_path: Path) -> None:
    cache = KernelCache(tmp_path)
    key = KernelCache.key("broken")

    def fails() -> bytes:
        raise RuntimeError("nvrtc: error: expected ';'")

    with pytest.raises(RuntimeError, match="expected ';'"):
        cache.get_or_compile(key, fails)
    assert list(tmp_path.iterdir()) == []
    assert cache.get_or_compile(key, Compiler(b"fixed")) == b"fixed"


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HXARRAY_KERNEL_CACHE", str(tmp_path / "explicit"))
    assert default_cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("HXARRAY_KERNEL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "hxarray" / "kernels"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "hxarray" / "kernels"


def test_concurrent_misses_compile_once(tmp_path: Path) -> None:
    cache = KernelCache(tmp_path)
    n = 8
    barrier = threading.Barrier(n)
    calls: list[str] = []
    results: list[bytes] = []

    def slow_compile(name: str) -> bytes:
        calls.append(name)
        time.sleep(0.05)
        return name.encode()

    def ask(i: int) -> None:
        name = "even" if i % 2 == 0 else "odd"
        barrier.wait(5)
        results.append(cache.get_or_compile(KernelCache.key(name), lambda: slow_compile(name)))

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(calls) == ["even", "odd"]
    assert sorted(results) == [b"even"] * 4 + [b"odd"] * 4
    assert (cache.compiles, cache.hits, cache.disk_hits) == (2, 6, 0)
