"""KernelCache: memory hits, disk persistence across instances and processes, key stability,
corrupt entries, temporary files, path safety, LRU bound, unwritable directories."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

from hxarray.hal import KernelCache
from hxarray.hal.kernel_cache import check_directory, default_cache_dir


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
    entry = first.path_for(key)
    assert entry is not None and entry.parent == tmp_path / "kernels"
    data = entry.read_bytes()
    assert data.endswith(compile.binary) and key.encode() in data  # the entry carries its key
    assert data[-len(compile.binary) - 32:-len(compile.binary)] == \
        hashlib.sha256(compile.binary).digest()  # and a checksum of the payload
    assert [p.name for p in (tmp_path / "kernels").iterdir()] == [entry.name]  # no temp files
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
    cache = KernelCache(blocker / "kernels")
    with pytest.warns(RuntimeWarning, match="cannot be written.*memory only") as record:
        assert cache.get_or_compile(key, compile) == compile.binary
        assert cache.get_or_compile(KernelCache.key("other"), compile) == compile.binary
    assert len(record) == 1  # one warning, then memory only
    assert cache.directory is None
    assert cache.get_or_compile(key, _never) == compile.binary
    with pytest.warns(RuntimeWarning, match="cannot be written"):
        assert KernelCache(blocker / "kernels").get_or_compile(key, compile) == compile.binary
    assert compile.calls == 3


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


def _entry(cache: KernelCache, key: str) -> Path:
    path = cache.path_for(key)
    assert path is not None
    return path


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "flipped", "other key"])
def test_corrupt_entries_are_rebuilt_with_one_warning(tmp_path: Path, damage: str) -> None:
    key, other = KernelCache.key("k"), KernelCache.key("other")
    good = Compiler(b"\x7fELF" + bytes(range(200)))
    KernelCache(tmp_path).get_or_compile(key, good)
    KernelCache(tmp_path).get_or_compile(other, Compiler(b"other binary"))
    path = _entry(KernelCache(tmp_path), key)
    data = path.read_bytes()
    damaged = {"truncated": data[:-7], "garbage": os.urandom(len(data)), "empty": b"",
               "flipped": data[:-1] + bytes([data[-1] ^ 1]),
               "other key": _entry(KernelCache(tmp_path), other).read_bytes()}[damage]
    path.write_bytes(damaged)
    cache = KernelCache(tmp_path)
    rebuilt = Compiler(good.binary)
    with pytest.warns(RuntimeWarning, match="corrupt or belongs to another key") as record:
        assert cache.get_or_compile(key, rebuilt) == good.binary
    assert len(record) == 1 and rebuilt.calls == 1 and cache.corrupt == 1
    assert KernelCache(tmp_path).get_or_compile(key, _never) == good.binary  # the rebuilt entry


def test_many_corrupt_entries_warn_once(tmp_path: Path) -> None:
    keys = [KernelCache.key(str(i)) for i in range(4)]
    for k in keys:
        KernelCache(tmp_path).get_or_compile(k, Compiler())
        _entry(KernelCache(tmp_path), k).write_bytes(b"junk")
    cache = KernelCache(tmp_path)
    with pytest.warns(RuntimeWarning) as record:
        for k in keys:
            cache.get_or_compile(k, Compiler())
    assert len(record) == 1 and cache.corrupt == 4


def test_failed_write_leaves_no_temporary_file(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    def full_disk(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    cache = KernelCache(tmp_path)
    with pytest.warns(RuntimeWarning, match="No space left"):
        assert cache.get_or_compile(KernelCache.key("k"), Compiler(b"bin")) == b"bin"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("result", [None, "text", 42, [b"a"]])
def test_compile_returning_non_bytes_is_a_type_error(tmp_path: Path, result: object) -> None:
    cache = KernelCache(tmp_path)
    with pytest.raises(TypeError, match="expected bytes"):
        cache.get_or_compile(KernelCache.key("k"), lambda: result)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []
    assert cache.get_or_compile(KernelCache.key("k"), Compiler(b"ok")) == b"ok"
    assert cache.get_or_compile("k2", lambda: bytearray(b"ba")) == b"ba"


@pytest.mark.parametrize("key", ["../escape", "/tmp/absolute", "a/b/c", "..", "", "x" * 5000,
                                 "nul\0byte"])
def test_keys_never_escape_the_directory(tmp_path: Path, key: str) -> None:
    directory = tmp_path / "cache"
    cache = KernelCache(directory)
    assert cache.get_or_compile(key, Compiler(b"payload")) == b"payload"
    assert [p.parent for p in tmp_path.rglob("*") if p.is_file()] == [directory]
    assert KernelCache(directory).get_or_compile(key, _never) == b"payload"


def test_disk_is_bounded_with_lru_eviction(tmp_path: Path) -> None:
    payload = bytes(1000)
    cache = KernelCache(tmp_path, max_bytes=3500)  # three entries of ~1.1 kB fit
    keys = [KernelCache.key(str(i)) for i in range(3)]
    for i, k in enumerate(keys):
        cache.get_or_compile(k, Compiler(payload))
        os.utime(_entry(cache, k), ns=(10**18 + i, 10**18 + i))  # distinct ages
    assert KernelCache(tmp_path).get_or_compile(keys[0], _never) == payload  # refreshes keys[0]
    cache.get_or_compile(KernelCache.key("new"), Compiler(payload))
    remaining = {p.name for p in tmp_path.iterdir()}
    assert _entry(cache, keys[1]).name not in remaining  # the least recently used went
    assert {_entry(cache, k).name for k in (keys[0], keys[2])} <= remaining
    assert cache.evictions == 1
    assert sum(p.stat().st_size for p in tmp_path.iterdir()) <= 3500


def test_max_bytes_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        KernelCache(max_bytes=-1)
    monkeypatch.setenv("HXARRAY_KERNEL_CACHE_SIZE", "lots")
    with pytest.raises(ValueError, match="HXARRAY_KERNEL_CACHE_SIZE"):
        KernelCache()
    monkeypatch.setenv("HXARRAY_KERNEL_CACHE_SIZE", "123")
    assert KernelCache().max_bytes == 123


def test_concurrent_processes_share_entries(tmp_path: Path) -> None:
    code = ("import sys; from hxarray.hal import KernelCache\n"
            "c = KernelCache(sys.argv[1])\n"
            "for i in range(30):\n"
            "    k = KernelCache.key(str(i % 5))\n"
            "    assert c.get_or_compile(k, lambda: (str(i % 5) * 5000).encode()) == "
            "(str(i % 5) * 5000).encode()\n"
            "    c.clear()\n")
    with warnings.catch_warnings():
        procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)],
                                  cwd=Path(__file__).resolve().parents[1]) for _ in range(3)]
        assert [p.wait(60) for p in procs] == [0, 0, 0]
    assert len(list(tmp_path.iterdir())) == 5  # whole entries only, no temp files


def test_processes_sharing_the_directory_compile_a_kernel_once(tmp_path: Path) -> None:
    log = tmp_path / "compilations.log"
    code = ("import sys, time; from hxarray.hal import KernelCache\n"
            "def build():\n"
            "    with open(sys.argv[2], 'a') as f: f.write('compiled\\n')\n"
            "    time.sleep(0.5)\n"
            "    return b'binary'\n"
            "assert KernelCache(sys.argv[1]).get_or_compile('kernel', build) == b'binary'\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "cache"), str(log)],
                              cwd=Path(__file__).resolve().parents[1]) for _ in range(3)]
    assert [p.wait(60) for p in procs] == [0, 0, 0]
    assert log.read_text() == "compiled\n"
    assert [p.suffix for p in (tmp_path / "cache").iterdir()] == [".hxk"]  # no lock left


# -- a directory shared with other programs, and one that is not hxarray's alone -----------------
def _foreign_files(directory: Path, outside: Path) -> dict[str, bytes]:
    """Files another program might keep beside the entries, old enough to be evicted first:
    random bytes under the names entries have, another key's entry under a name it does not
    have, and links to an entry outside."""
    directory.mkdir(parents=True, exist_ok=True)
    copied = KernelCache._encode(KernelCache.key("theirs"), b"their binary")
    files = {"notes.hxk": os.urandom(3000), "a" * 40 + ".hxk": os.urandom(3000),
             "0123456789" * 4 + ".hxk": copied, "b" * 40 + ".lock": b"their lock"}
    for name, data in files.items():
        (directory / name).write_bytes(data)
    (directory / "folder.hxk").mkdir()
    outside.write_bytes(copied)
    (directory / ("c" * 40 + ".hxk")).symlink_to(outside)
    for path in directory.iterdir():
        os.utime(path, ns=(10**9, 10**9), follow_symlinks=False)  # older than any entry
    return files


def test_eviction_removes_only_the_caches_own_entries(tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    files = _foreign_files(directory, tmp_path / "elsewhere.hxk")
    ours = [KernelCache.key(str(i)) for i in range(8)]
    earlier = KernelCache(directory)  # an earlier process (or version) left entries behind
    for key in ours[:4]:
        earlier.get_or_compile(key, Compiler(bytes(1000)))
    cache = KernelCache(directory, max_bytes=3500)  # three entries of ~1.1 kB fit
    for key in ours[4:]:
        cache.get_or_compile(key, Compiler(bytes(1000)))
    for name, data in files.items():
        assert (directory / name).read_bytes() == data, name
    assert (directory / "folder.hxk").is_dir()
    assert (directory / ("c" * 40 + ".hxk")).is_symlink() and (tmp_path / "elsewhere.hxk").exists()
    left = [k for k in ours if _entry(cache, k).exists()]
    assert left == ours[5:] and cache.evictions == 5  # the stale ones went, theirs stayed
    assert sum(_entry(cache, k).stat().st_size for k in left) <= 3500


def test_a_lock_file_is_never_made_through_a_link(tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    directory.mkdir()
    key = KernelCache.key("k")
    victim = tmp_path / "victim"
    _entry(KernelCache(directory), key).with_suffix(".lock").symlink_to(victim)
    assert KernelCache(directory).get_or_compile(key, Compiler(b"bin")) == b"bin"
    assert not victim.exists()


def test_a_directory_it_makes_is_private(tmp_path: Path) -> None:
    directory = tmp_path / "new" / "kernels"
    mask = os.umask(0o002)  # a umask that leaves new directories group-writable
    try:
        KernelCache(directory).get_or_compile(KernelCache.key("k"), Compiler())
    finally:
        os.umask(mask)
    assert directory.stat().st_mode & 0o777 == 0o700
    assert KernelCache(directory).get_or_compile(KernelCache.key("k"), _never) == b"\x7fELF kernel"


def _refused(directory: Path, *words: str) -> None:
    """A PermissionError naming `directory`, what is wrong (`words`) and how to choose another
    directory; nothing written there."""
    before = sorted(os.listdir(directory))
    with pytest.raises(PermissionError) as info:
        KernelCache(directory).get_or_compile(KernelCache.key("k"), _never)
    for word in (str(directory), *words, "HXARRAY_KERNEL_CACHE"):
        assert word in str(info.value), (word, str(info.value))
    assert sorted(os.listdir(directory)) == before


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o775, 0o722, 0o702])
def test_a_directory_others_can_write_is_refused(tmp_path: Path, mode: int) -> None:
    directory = tmp_path / "shared"
    directory.mkdir()
    directory.chmod(mode)
    _refused(directory, f"can be written by others (mode {mode:o})")


@pytest.mark.parametrize("mode", [0o755, 0o700, 0o1777, 0o1770])
def test_a_directory_of_ones_own_is_used(tmp_path: Path, mode: int) -> None:
    directory = tmp_path / "mine"
    directory.mkdir()
    directory.chmod(mode)  # others may read it; the sticky bit keeps them off its entries
    assert KernelCache(directory).get_or_compile(KernelCache.key("k"), Compiler(b"b")) == b"b"
    assert KernelCache(directory).get_or_compile(KernelCache.key("k"), _never) == b"b"


def test_a_directory_of_another_user_is_refused(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "theirs"
    directory.mkdir(mode=0o700)
    if os.geteuid() == 0:
        os.chown(directory, 12345, 12345)
        owner, me = 12345, 0
    else:  # only root can give a directory away: be another user instead
        owner, me = os.geteuid(), os.geteuid() + 1
        monkeypatch.setattr(os, "geteuid", lambda: me)
    _refused(directory, f"is owned by uid {owner}", f"(uid {me}) or root")


def test_a_directory_of_root_is_trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Root can change anything of the user's anyway: its directories are not refused."""
    top = os.stat("/")
    if top.st_uid != 0 or top.st_mode & 0o022:
        pytest.skip("/ is not root's alone on this machine")
    monkeypatch.setattr(os, "geteuid", lambda: 12345)
    check_directory(Path("/"))


def test_a_link_to_a_refused_directory_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    link = tmp_path / "link"
    link.symlink_to(shared)
    _refused(link, f"(a link to {shared})", "can be written by others (mode 777)")


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a link to another user needs root")
def test_a_link_of_another_user_is_refused(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(mine)
    os.lchown(link, 12345, 12345)
    _refused(link, "a symbolic link owned by uid 12345")
