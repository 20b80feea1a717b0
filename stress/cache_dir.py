"""(f) A kernel cache directory shared with other programs. Their files and folders (random names,
among them `pch-*` folders and `*.hxk` files, some shaped exactly like hxarray's entries or
headers, links, other modes and times) lie beside hxarray's while processes compile real kernels
and precompiled headers of several hxarray versions, a CPU fuse compiles through
`HXARRAY_KERNEL_CACHE`, and synthetic entries are written, all under a small size bound, so that
entries are evicted and headers pruned all the time. Afterwards everything of the other programs
(names, kinds, modes, sizes, times, contents, link targets, and the files their links point to)
must be as it was; hxarray's entries must fit the bound, at most three of its headers may be
left after a later run alone, and no temporary file or lock. A directory others can write must
be refused, with nothing written there.

`python -m stress.cache_dir PROCESSES ROUNDS FOREIGN SEED` prints the figures as JSON."""

from __future__ import annotations

import hashlib
import json
import os
import random
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MAX_BYTES = 96 * 1024  # about six compiled kernels
KERNEL = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] += %d.0f * %d; }'


def plant(directory: Path, outside: Path, count: int, rng: random.Random) -> list[str]:
    """`count` things of other programs in `directory` (and what their links point to in
    `outside`); their names."""
    from hxarray.backends.codegen import compiler
    from hxarray.hal.kernel_cache import KernelCache

    def word() -> str:
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789-_") for _ in
                       range(rng.randint(1, 12)))

    def hexname(digits: int) -> str:
        return "".join(rng.choice("0123456789abcdef") for _ in range(digits))

    def another_entry() -> bytes:  # whole and intact, but for a key its name is not a digest of
        return KernelCache._encode(KernelCache.key(word()), os.urandom(rng.randint(0, 4000)))

    def folder(path: Path, marker: bytes | None) -> None:
        (path / word()).mkdir(parents=True)
        for _ in range(rng.randint(0, 3)):
            (path / word()).write_bytes(os.urandom(rng.randint(0, 3000)))
        if marker is not None:
            (path / compiler._PCH_MARKER).write_bytes(marker)
            (path / "hxsim.h.gch").write_bytes(os.urandom(2000))

    outside.mkdir()
    makers = [
        lambda p: folder(p, None),  # a user's pch-notes/
        lambda p: folder(p, b"another program's marker\n"),
        lambda p: p.write_bytes(os.urandom(rng.randint(0, 5000))),
        lambda p: p.write_bytes(another_entry()),
    ]
    names: list[str] = []
    while len(names) < count:
        kind = rng.randrange(4)
        name = (f"pch-{word()}", f"pch-{hexname(24)}", f"{hexname(40)}.hxk",
                rng.choice([f"{word()}.hxk", f".tmp-{word()}.hxk", f"{hexname(40)}.lock",
                            word()]))[kind]
        path = directory / name
        if name in names or path.exists():
            continue
        how = rng.randrange(len(makers) + 2)
        if how < len(makers):
            makers[how](path)
        elif how == len(makers):  # a link to an entry of hxarray's shape, or a header's folder
            target = outside / f"target-{len(names)}"
            if rng.random() < 0.5:
                target.write_bytes(another_entry())
            else:
                folder(target, compiler._PCH_MARK)
            path.symlink_to(target)
        else:  # a folder named like an entry (hxarray's marker only behind links: a folder
            folder(path, None)  # that holds it is hxarray's)
        if not path.is_symlink():
            mode = rng.choice([0o400, 0o444, 0o600, 0o644, 0o755, 0o000]) if path.is_file() \
                else rng.choice([0o500, 0o700, 0o755])
            os.chmod(path, mode)
        when = rng.choice([1, 10**9, time.time() - 3600, time.time() + 10**7])  # old, future
        os.utime(path, (when, when), follow_symlinks=False)
        names.append(name)
    return names


def snapshot(root: Path, names: list[str]) -> dict[str, Any]:
    """Kind, mode, size, modification time and content (or link target) of each of `names`
    under `root` and of everything below them, links not followed."""
    found: dict[str, Any] = {}

    def record(path: Path) -> None:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            found[str(path.relative_to(root))] = "missing"
            return
        if stat.S_ISLNK(st.st_mode):
            what: Any = os.readlink(path)
        elif stat.S_ISREG(st.st_mode):
            try:
                what = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                what = "unreadable"
        else:
            what = sorted(os.listdir(path)) if os.access(path, os.R_OK) else "unlistable"
        found[str(path.relative_to(root))] = [st.st_mode, st.st_size, st.st_mtime_ns, what]
        if stat.S_ISDIR(st.st_mode):
            for child in sorted(os.listdir(path)):
                record(path / child)

    for name in names:
        record(root / name)
    return found


def worker(directory: str, version: int, rounds: int, seed: int) -> dict[str, Any]:
    """Kernels and a precompiled header of hxarray "version" `version`, and synthetic entries,
    through a cache bounded by MAX_BYTES."""
    from hxarray.backends.codegen.compiler import HostCompiler
    from hxarray.hal.kernel_cache import KernelCache

    rng = random.Random(seed)
    compiler = HostCompiler(KernelCache(directory, max_bytes=MAX_BYTES), pch=True)
    compiler.__dict__["header_version"] = f"stress-{version}"  # another version's header
    done = {"kernels": 0, "entries": 0, "evictions": 0}
    for i in range(rounds):
        compiler.compile(KERNEL % (version, i))
        done["kernels"] += 1
        for _ in range(8):
            cache = KernelCache(directory, max_bytes=MAX_BYTES)
            size = rng.randint(100, 12_000)
            cache.get_or_compile(KernelCache.key(str(rng.randrange(60))), lambda n=size:
                                 os.urandom(n))
            done["entries"] += 1
            done["evictions"] += cache.evictions
    done["evictions"] += compiler.cache.evictions
    return done


def fuse(rounds: int) -> dict[str, Any]:
    """CPU fuses compiled through the cache `HXARRAY_KERNEL_CACHE` names."""
    import hxarray as xp

    def scaled(factor: float) -> Any:
        return lambda a: a * factor + a

    x = xp.linspace(0, 1, 5000)
    for i in range(rounds):
        xp.fuse(scaled(i + 2.0))(x)
    return {"fuses": rounds}


def refused(directory: str) -> dict[str, Any]:
    """The cache and the CPU fuse in a directory others can write: each must refuse it."""
    import hxarray as xp
    from hxarray.hal.kernel_cache import KernelCache

    count = 0
    for attempt in (lambda: KernelCache(directory).get_or_compile("k", lambda: b"binary"),
                    lambda: xp.fuse(lambda a: a * 3 + 1)(xp.ones(5000))):
        try:
            attempt()
        except PermissionError as exc:
            count += directory in str(exc) and "HXARRAY_KERNEL_CACHE" in str(exc)
    return {"refused": count}


def _spawn(*args: Any, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-W", "ignore", "-m", "stress.cache_dir",
                             *map(str, args)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})},
                            cwd=Path(__file__).resolve().parent.parent)


def _answer(process: subprocess.Popen, failures: list[str]) -> dict[str, Any]:
    out = process.communicate()[0]
    if process.returncode != 0:
        failures.append(f"{process.args[5:]} exited with {process.returncode}")
        return {}
    return json.loads(out)


def main(processes: int, rounds: int, foreign: int, seed: int) -> dict[str, Any]:
    from hxarray.hal.kernel_cache import _is_entry

    start = time.perf_counter()
    rng = random.Random(seed)
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="hxarray-stress-") as top:
        root = Path(top)
        directory, outside, shared = root / "cache", root / "outside", root / "shared"
        directory.mkdir(mode=0o700)
        names = plant(directory, outside, foreign, rng)
        before = {**snapshot(directory, names), **snapshot(root, ["outside"])}
        workers = [_spawn("worker", directory, version, rounds, seed * 1000 + version)
                   for version in range(processes - 1)]
        fuse_env = {"HXARRAY_KERNEL_CACHE": str(directory),
                    "HXARRAY_KERNEL_CACHE_SIZE": str(MAX_BYTES)}
        workers.append(_spawn("fuse", max(1, rounds // 3), env=fuse_env))
        results = [_answer(w, failures) for w in workers]
        # headers in use are never pruned: a later run, alone, prunes what they left
        results.append(_answer(_spawn("fuse", 1, env=fuse_env), failures))
        shared.mkdir()
        (shared / "theirs.hxk").write_bytes(b"another program's")
        shared.chmod(0o777)
        refusals = _answer(_spawn("refused", shared, env={"HXARRAY_KERNEL_CACHE": str(shared)}),
                           failures).get("refused", 0)
        after = {**snapshot(directory, names), **snapshot(root, ["outside"])}
        touched = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        ours = sorted(set(os.listdir(directory)) - set(names))
        entries = [n for n in ours if _is_entry(str(directory / n))]
        headers = [n for n in ours if n.startswith("pch-")]
        others = sorted(set(ours) - set(entries) - set(headers))  # temporaries, locks
        entry_bytes = sum((directory / n).stat().st_size for n in entries)
        shared_after = sorted(os.listdir(shared))
        outside_root = sorted(set(os.listdir(root)) - {"cache", "outside", "shared"})
    total = {k: sum(r.get(k, 0) for r in results) for k in
             ("kernels", "entries", "evictions", "fuses")}
    return {"processes": processes, "foreign": len(names), "foreign_paths": len(before), **total,
            "touched": touched[:20], "touched_count": len(touched),
            "entries_left": len(entries), "entry_bytes": entry_bytes, "bound": MAX_BYTES,
            "headers_left": len(headers), "left_over": others, "refused": refusals,
            "shared_after": shared_after, "outside": outside_root, "failures": failures,
            "seconds": round(time.perf_counter() - start, 1),
            "clean": not touched and not failures and entry_bytes <= MAX_BYTES
            and len(headers) <= 3 and not others and refusals == 2
            and shared_after == ["theirs.hxk"] and not outside_root}


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command == "worker":
        print(json.dumps(worker(rest[0], int(rest[1]), int(rest[2]), int(rest[3]))))
    elif command == "fuse":
        print(json.dumps(fuse(int(rest[0]))))
    elif command == "refused":
        print(json.dumps(refused(rest[0])))
    else:
        print(json.dumps(main(int(command), int(rest[0]), int(rest[1]), int(rest[2]))))
