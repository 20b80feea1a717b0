"""A cache of compiled kernels: in memory per process, and on disk across processes.

Keys are built (`KernelCache.key`) from everything that changes the binary: source, compiler
options, target architecture, compiler identity and version, and for the CUDA simulator the version
of its header. A backend supplies the compile function.

On disk each entry is one file named by a digest of its key (so no key can name a path outside the
directory), holding a header, the key itself, a SHA-256 of the payload and the payload. It is
written to a temporary file and renamed into place, so concurrent processes only ever see whole
entries. An entry that is truncated, garbage, empty or written for another key is discarded and
rebuilt, with one warning per cache. Processes sharing the directory take an advisory lock per
entry while compiling, so each kernel is compiled once. The directory is bounded (`max_bytes`):
after a write the least recently used entries (by modification time, refreshed on every read)
are removed. A directory that cannot be written makes the cache memory-only, with one warning.

The directory may hold files of other programs: hxarray removes only entries it recognises as its
own (their header, and the key their name is the digest of), never by a name pattern alone. It
refuses (PermissionError) a directory that another user owns or can write, since hxarray compiles
against and loads what it finds there.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

from .settings import KERNEL_CACHE, KERNEL_CACHE_SIZE

__all__ = ["KernelCache", "check_directory", "default_cache_dir"]

_MAGIC = b"HXKC1\n"
_SUFFIX = ".hxk"
_ENTRY_NAME = re.compile(r"[0-9a-f]{40}\.hxk")  # what `path_for` names; a header decides


def default_cache_dir() -> Path:
    """`HXARRAY_KERNEL_CACHE` if set, else `$XDG_CACHE_HOME/hxarray/kernels` (or ~/.cache/...)."""
    configured = KERNEL_CACHE.get()
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hxarray" / "kernels"


def check_directory(path: Path) -> None:
    """PermissionError if `path` (or the directory a symbolic link there points to) belongs to
    another user than this one or root, or can be written by others (group or world, without the
    sticky bit), or if the link itself belongs to another user; nothing if it does not exist.
    Root is trusted: it can change anything of this user's anyway."""
    try:
        link = os.lstat(path)
        target = os.stat(path)
    except OSError:
        return  # missing (made by hxarray, then checked again) or unreadable (cannot be used)
    me = os.geteuid()
    shown = str(path) + (f" (a link to {os.path.realpath(path)})"
                         if stat.S_ISLNK(link.st_mode) else "")
    if stat.S_ISLNK(link.st_mode) and link.st_uid not in (me, 0):
        problem = f"is a symbolic link owned by uid {link.st_uid}"
    elif target.st_uid not in (me, 0):
        problem = f"is owned by uid {target.st_uid}"
    elif target.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not target.st_mode & stat.S_ISVTX:
        problem = f"can be written by others (mode {stat.S_IMODE(target.st_mode):o})"
    else:
        return
    raise PermissionError(
        f"the kernel cache directory {shown} {problem}; hxarray loads compiled code from it, so "
        f"it must belong to this user (uid {me}) or root and be writable by no one else (no "
        "group or world write permission unless the sticky bit is set): fix it (chown, "
        "chmod go-w) or choose another directory with HXARRAY_KERNEL_CACHE")


def _sha256(data: bytes) -> bytes:
    import hashlib  # OpenSSL costs 3.5 MB of memory; only compiling backends need it

    return hashlib.sha256(data).digest()


class KernelCache:
    """Compiled binaries by key; `directory=None` keeps them in memory only.

    `max_bytes` bounds the disk entries (default `HXARRAY_KERNEL_CACHE_SIZE` or 1 GiB)."""

    def __init__(self, directory: Path | str | None = None, max_bytes: int | None = None) -> None:
        self.directory = Path(directory) if directory is not None else None
        if max_bytes is None:
            max_bytes = KERNEL_CACHE_SIZE.get()
        if not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValueError(f"max_bytes must be an int >= 0, got {max_bytes!r}")
        self.max_bytes = max_bytes
        self._memory: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self._compiling: dict[str, threading.Lock] = {}  # one per key being built
        self._warned_corrupt = False
        self._warned_unwritable = False
        self.hits = 0
        self.disk_hits = 0
        self.compiles = 0
        self.corrupt = 0
        self.evictions = 0

    @staticmethod
    def key(*parts: str) -> str:
        import hashlib

        digest = hashlib.sha256()
        for part in parts:
            digest.update(part.encode())
            digest.update(b"\0")
        return digest.hexdigest()

    def path_for(self, key: str) -> Path | None:
        """The file of `key`'s disk entry (a digest of the key, inside the directory)."""
        if self.directory is None:
            return None
        return self.directory / (_sha256(key.encode()).hex()[:40] + _SUFFIX)

    def prepare_directory(self) -> Path | None:
        """The disk directory, made (mode 0o700) where missing and checked (`check_directory`:
        PermissionError for one that is not this user's alone); None for a memory-only cache or
        a directory that cannot be made (then memory-only, with one warning)."""
        directory = self.directory
        if directory is None:
            return None
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            self._unwritable(exc)
            return None
        check_directory(directory)  # after mkdir: someone else may have made it meanwhile
        return directory

    def get_or_compile(self, key: str, compile: Callable[[], bytes]) -> bytes:
        """The binary for `key`, compiling (and storing) it on a miss. Threads asking for the same
        missing key wait for one compilation; different keys compile in parallel. A compile
        function that returns something other than bytes raises TypeError and stores nothing."""
        if not isinstance(key, str):
            raise TypeError(f"a kernel cache key is a str, got {type(key).__name__}")
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
                self.prepare_directory()
                binary = self._read_disk(key)
                compiled = binary is None
                if binary is None:
                    with self._across_processes(key):
                        binary = self._read_disk(key)  # another process may have built it
                        compiled = binary is None
                        if binary is None:
                            binary = self._compiled(compile)
                            self._write_disk(key, binary)
                with self._lock:
                    self._memory[key] = binary
                    self.compiles += compiled
                    self.disk_hits += not compiled
            finally:
                with self._lock:
                    self._compiling.pop(key, None)
        return binary

    @staticmethod
    def _compiled(compile: Callable[[], bytes]) -> bytes:
        binary = compile()
        if isinstance(binary, (bytearray, memoryview)):
            binary = bytes(binary)
        if not isinstance(binary, bytes):
            raise TypeError(f"the compile function returned {type(binary).__name__}, "
                            "expected bytes")
        return binary

    @contextlib.contextmanager
    def _across_processes(self, key: str) -> Iterator[None]:
        """Hold an advisory lock on `key`'s entry, so that processes sharing the directory (test
        workers, a cluster's workers) compile a kernel once; nothing where locks are not
        available (memory-only caches, an unwritable directory, no fcntl)."""
        path = self.path_for(key)
        lock = path.with_suffix(".lock") if path is not None else None
        try:
            import fcntl

            # never through a link: the lock is made where the entry goes, or not at all
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600) \
                if lock is not None else None
        except (ImportError, OSError):
            fd = None
        if fd is None:
            yield
            return
        assert lock is not None  # (a descriptor is opened only on the lock file)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                # Removed while held: whoever locks it (or a new file) next reads the entry first.
                with contextlib.suppress(OSError):
                    lock.unlink()
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def clear(self) -> None:
        """Forget the in-memory entries (the disk cache stays)."""
        with self._lock:
            self._memory.clear()

    # -- disk -------------------------------------------------------------------------------------
    @staticmethod
    def _encode(key: str, binary: bytes) -> bytes:
        k = key.encode()
        return b"".join([_MAGIC, len(k).to_bytes(4, "little"), k, len(binary).to_bytes(8, "little"),
                         _sha256(binary), binary])

    @staticmethod
    def _decode(key: str, data: bytes) -> bytes | None:
        """The payload if `data` is a whole, intact entry for `key`, else None."""
        k = key.encode()
        head = len(_MAGIC)
        if data[:head] != _MAGIC or len(data) < head + 4:
            return None
        klen = int.from_bytes(data[head:head + 4], "little")
        at = head + 4
        if data[at:at + klen] != k or klen != len(k):
            return None
        at += klen
        size = int.from_bytes(data[at:at + 8], "little")
        digest = data[at + 8:at + 40]
        payload = data[at + 40:]
        if len(payload) != size or len(digest) != 32 or _sha256(payload) != digest:
            return None
        return payload

    def _read_disk(self, key: str) -> bytes | None:
        path = self.path_for(key)
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except OSError:
            return None
        payload = self._decode(key, data)
        if payload is None:
            with self._lock:
                self.corrupt += 1
                warn = not self._warned_corrupt
                self._warned_corrupt = True
            if warn:
                warnings.warn(f"kernel cache entry {path} is corrupt or belongs to another key "
                              f"({len(data)} bytes); it is discarded and rebuilt (further corrupt "
                              "entries of this cache are rebuilt silently)", RuntimeWarning,
                              stacklevel=3)
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # most recently used
        return payload

    def _write_disk(self, key: str, binary: bytes) -> None:
        path = self.path_for(key)
        if path is None:
            return
        tmp = None
        try:
            # write-then-rename so concurrent processes never read a partial file; mkstemp makes
            # an unpredictable name exclusively (O_EXCL), so nothing planted there is written
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=_SUFFIX)
            with os.fdopen(fd, "wb") as f:
                f.write(self._encode(key, binary))
            os.replace(tmp, path)
            tmp = None
        except OSError as exc:
            self._unwritable(exc)
            return
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        self._evict(keep=path)

    def _unwritable(self, exc: OSError) -> None:
        with self._lock:
            warn = not self._warned_unwritable
            self._warned_unwritable = True
            directory, self.directory = self.directory, None
        if warn:
            warnings.warn(f"kernel cache directory {directory} cannot be written ({exc}); "
                          "compiled kernels are kept in memory only", RuntimeWarning,
                          stacklevel=4)

    def _evict(self, keep: Path) -> None:
        """Remove least recently used entries until this cache's entries fit in max_bytes."""
        if self.directory is None:
            return
        entries = []
        try:
            with os.scandir(self.directory) as it:
                for entry in it:
                    if _ENTRY_NAME.fullmatch(entry.name):
                        with contextlib.suppress(OSError):
                            st = entry.stat(follow_symlinks=False)
                            if stat.S_ISREG(st.st_mode):
                                entries.append((st.st_mtime_ns, st.st_size, entry.path))
        except OSError:
            return
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            if path == str(keep):
                continue
            if not _is_entry(path):
                total -= size  # another program's file: neither counted nor removed
                continue
            with contextlib.suppress(OSError):
                os.unlink(path)
                total -= size
                with self._lock:
                    self.evictions += 1


def _is_entry(path: str) -> bool:
    """Whether the file at `path` begins with an entry's header and holds the key whose digest
    names it (what `KernelCache._write_disk` writes, in this version or an earlier one)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        head = os.read(fd, len(_MAGIC) + 4)
        if len(head) < len(_MAGIC) + 4 or not head.startswith(_MAGIC):
            return False
        length = int.from_bytes(head[len(_MAGIC):], "little")
        key = os.read(fd, min(length, os.fstat(fd).st_size))
    except OSError:  # a directory, or gone meanwhile
        return False
    finally:
        os.close(fd)
    return len(key) == length and _sha256(key).hex()[:40] + _SUFFIX == os.path.basename(path)
