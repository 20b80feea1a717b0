"""(e) Processes sharing one kernel cache directory (`hxarray.hal.KernelCache`, used only through
`KernelCache(directory).get_or_compile(key, compile)`), while another process corrupts its files
(truncates them, overwrites bytes, empties them, replaces them with garbage, deletes them). One
writer runs under a tiny file-size limit, so its writes fail. Keys include ones shaped like
paths ('../escape', absolute paths). Every call must return exactly the bytes its compile
function makes for that key; afterwards no temporary file may be left and nothing may exist
outside the directory.

`python -m stress.kernel_cache PROCESSES CALLS` prints the figures as JSON."""

from __future__ import annotations

import hashlib
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

KEYS = [f"kernel-{i}" for i in range(40)] + [
    "../escape", "../../escape-too", "/tmp/absolute-escape", "a/b/c", "nul\0byte", "é" * 200,
    "x" * 5000, "", ".", "..", "~", "CON"]


def payload(key: str) -> bytes:
    """The binary `key` compiles to: its digest, repeated a key-dependent number of times."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
    return digest * (1 + digest[0] % 97)


def worker(directory: str, seed: int, calls: int, fsize_limit: int) -> dict[str, Any]:
    """`calls` lookups of random keys, each through a fresh KernelCache (so that the disk is
    read every time)."""
    from hxarray.hal.kernel_cache import KernelCache

    if fsize_limit:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past it fail with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize_limit, fsize_limit))
    rng = random.Random(seed)
    counts = {"calls": 0, "wrong": 0, "errors": 0, "compiles": 0, "disk_hits": 0,
              "warnings": 0, "refused_non_bytes": 0}
    examples: list[str] = []
    for _ in range(calls):
        key = rng.choice(KEYS)
        cache = KernelCache(directory)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                if rng.random() < 0.02:  # a compile function that does not make bytes
                    try:
                        cache.get_or_compile(key + "#bad", lambda: "not bytes")
                    except TypeError:
                        counts["refused_non_bytes"] += 1
                    continue
                got = cache.get_or_compile(key, lambda k=key: payload(k))
            except Exception as exc:  # noqa: BLE001 - the finding
                counts["errors"] += 1
                examples.append(f"{key[:40]!r}: {type(exc).__name__}: {exc}"[:300])
                continue
            finally:
                counts["warnings"] += len(caught)
        counts["calls"] += 1
        counts["compiles"] += cache.compiles
        counts["disk_hits"] += cache.disk_hits
        if got != payload(key):
            counts["wrong"] += 1
            examples.append(f"{key[:40]!r}: {len(got)} bytes, expected {len(payload(key))}")
    return {**counts, "examples": examples[:5]}


def _reopen(path: str, flags: int) -> Any:
    """`path` opened for writing only if it still exists: the name came from a listing, and a
    writer may have renamed its temporary file away since (creating it again would leave a
    temporary file that no cache ever made)."""
    return os.fdopen(os.open(path, os.O_WRONLY | flags), "wb")


def corrupt(directory: str, seed: int, stop: str) -> dict[str, Any]:
    """Damage random files of the directory until the file `stop` exists; never creates one."""
    rng = random.Random(seed)
    done = 0
    while not os.path.exists(stop):
        try:
            names = os.listdir(directory)
        except OSError:
            names = []
        if not names:
            time.sleep(0.001)
            continue
        path = os.path.join(directory, rng.choice(names))
        how = rng.randrange(6)
        try:
            if how == 0:
                os.truncate(path, rng.randrange(max(1, os.path.getsize(path))))
            elif how == 1:
                with open(path, "r+b") as f:
                    size = os.path.getsize(path)
                    f.seek(rng.randrange(max(1, size)))
                    f.write(os.urandom(rng.randrange(1, 16)))
            elif how == 2:
                _reopen(path, os.O_TRUNC).close()
            elif how == 3:
                with _reopen(path, os.O_TRUNC) as f:
                    f.write(os.urandom(rng.randrange(1, 4096)))
            elif how == 4:
                with _reopen(path, os.O_APPEND) as f:
                    f.write(b"junk")
            else:
                os.unlink(path)
            done += 1
        except OSError:
            pass  # renamed or removed meanwhile
        time.sleep(rng.random() * 0.002)
    return {"corruptions": done}


def _spawn(*args: Any) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "stress.kernel_cache", *map(str, args)],
                            stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parent.parent)


def main(processes: int, calls: int) -> dict[str, Any]:
    start = time.perf_counter()
    escapes = [k for k in KEYS if k.startswith("/") and not os.path.exists(k)]
    with tempfile.TemporaryDirectory(prefix="hxarray-stress-") as root:
        directory = os.path.join(root, "cache")
        stop = os.path.join(root, "stop")
        injector = _spawn("corrupt", directory, 99, stop)
        workers = [_spawn("worker", directory, seed, calls, 4096 if seed == 0 else 0)
                   for seed in range(processes)]
        results = [json.loads(w.communicate()[0] or "{}") for w in workers]
        statuses = [w.returncode for w in workers]
        Path(stop).touch()
        injected = json.loads(injector.communicate()[0] or "{}")
        verify = _spawn("worker", directory, 12345, 200, 0)  # nothing corrupts it any more
        check = json.loads(verify.communicate()[0] or "{}")
        left = sorted(n for n in os.listdir(directory) if "tmp" in n) \
            if os.path.isdir(directory) else []
        outside = sorted(set(os.listdir(root)) - {"cache", "stop"})
        for escape in escapes:  # absolute keys must not have become files
            if os.path.exists(escape):
                outside.append(escape)
                os.unlink(escape)
    total = {k: sum(r.get(k, 0) for r in results) for k in
             ("calls", "wrong", "errors", "compiles", "disk_hits", "warnings",
              "refused_non_bytes")}
    examples = [e for r in results for e in r.get("examples", [])][:8]
    return {"processes": processes, **total, "corruptions": injected.get("corruptions", 0),
            "crashed_processes": sum(s != 0 for s in statuses),
            "wrong_after": check.get("wrong", -1), "errors_after": check.get("errors", -1),
            "temporary_files_left": left, "files_outside": outside, "examples": examples,
            "seconds": round(time.perf_counter() - start, 1),
            "clean": total["wrong"] == 0 and total["errors"] == 0 and not left and not outside
            and check.get("wrong") == 0 and check.get("errors") == 0
            and not any(statuses)}


if __name__ == "__main__":
    if sys.argv[1] == "worker":
        print(json.dumps(worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
                                int(sys.argv[5]))))
    elif sys.argv[1] == "corrupt":
        print(json.dumps(corrupt(sys.argv[2], int(sys.argv[3]), sys.argv[4])))
    else:
        print(json.dumps(main(int(sys.argv[1]), int(sys.argv[2]))))
