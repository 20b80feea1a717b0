"""(h) Settings: every `HXARRAY_*` variable hxarray declares (`hxarray.hal.settings.SETTINGS`) set,
one at a time, to good and bad values (blank, spaces, huge, negative, nan and inf, garbage,
unicode, and values of its own), each in a fresh process that then uses what the variable
configures (`PROBES`), in the compiled or the pure-Python mode in turn. A value the declaration
accepts must work; a refused one must end the process with a ValueError (or the
`DeviceUnavailableError`, a ValueError, that quotes it) naming the variable and the value, and
for a declared range the accepted values. Never a hang (a time bound per process), a crash (a
signal), an unrelated error, or a bad value silently accepted.

`python -m stress.settings PER_VARIABLE SEED TIMEOUT` prints the figures as JSON (PER_VARIABLE 0:
every value for every variable)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hxarray.hal.settings import SETTINGS

# The environment of every process: this one's without hxarray's variables, on the simulator.
BASE_ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("HXARRAY_")},
            "HXARRAY_CUDA_DRIVER": "sim"}

_CPU = "import hxarray as xp\nassert float(xp.sum(xp.ones(30))) == 30\n"
_CUDA = ("import hxarray as xp\nx = xp.ones(30, device='cuda:0')\n"
         "assert float(xp.sum(x)) == 30 and abs(float(xp.sum(xp.sin(x))) - 25.244) < 1e-3\n")
_CUDA_INDEX = ("import hxarray as xp\nx = xp.arange(5, device='cuda:0')\n"
               "assert int(xp.take(x, xp.asarray([3], device='cuda:0'))[0]) == 3\n")
_KERNEL_CACHE = ("from hxarray.hal.kernel_cache import KernelCache, default_cache_dir\n"
                 "cache = KernelCache(default_cache_dir())\n"
                 "assert cache.get_or_compile('probe', lambda: b'binary') == b'binary'\n")
# What each variable configures, used: the program its fresh process runs.
PROBES = {
    "HXARRAY_PURE_PYTHON": _CPU, "HXARRAY_STRICT": _CPU, "HXARRAY_NUM_THREADS": _CPU,
    "HXARRAY_DEFAULT_DEVICE": _CPU,
    "HXARRAY_CACHE_DIR": "import hxarray as xp\nfrom hxarray.backends import performance\n"
                         "assert performance.estimate(xp.Device('cpu'))['peak_flops']\n",
    "HXARRAY_KERNEL_CACHE": _KERNEL_CACHE, "HXARRAY_KERNEL_CACHE_SIZE": _KERNEL_CACHE,
    **{name: _CUDA for name in SETTINGS if name.startswith("HXARRAY_CUDA_")},
    "HXARRAY_CUDA_SYNC_CHECKS": _CUDA_INDEX,
    "HXARRAY_PTXAS": "from hxarray.backends.cuda.ptxas import find\nassert find()\n",
}
# Free text: the declaration takes any value, what uses it judges (a device name, a compiler).
FREE_TEXT = {"HXARRAY_DEFAULT_DEVICE", "HXARRAY_CACHE_DIR", "HXARRAY_KERNEL_CACHE",
             "HXARRAY_CUDA_SIM_CXX", "HXARRAY_PTXAS"}
# Values every variable gets.
COMMON = ["", "   ", "\t", "abc", "-1", "0", "1", " 2 ", "1.5", "nan", "inf", "-inf", "1e400",
          "99999999999999999999999", "9" * 5000, "0x10", "1_000", "\u0661\u0662", "\u00e9t\u00e9",
          "\U0001f4a5", "true", "None", "../up", "-0"]
# Values of each variable's own (the good ones it must take, and near misses).
OWN = {
    "HXARRAY_PURE_PYTHON": ["0", "1", "yes", "OFF", "2"],
    "HXARRAY_STRICT": ["0", "1", "on", "False", "strict"],
    "HXARRAY_NUM_THREADS": ["1", "2", "64", "1024", "1025"],
    "HXARRAY_DEFAULT_DEVICE": ["cpu", "cpu:0", " ref ", "ref:0", "cuda:0", "cuda:7", "gpu",
                               "cpu:x", ":", "cpu:-1"],
    "HXARRAY_CACHE_DIR": ["cache", "a b/c", "/", "/proc/none"],
    "HXARRAY_KERNEL_CACHE": ["kernels", "k\u00e9rnels", "/", "/proc/none"],
    "HXARRAY_KERNEL_CACHE_SIZE": ["0", "4096", str(1 << 62), str((1 << 62) + 1)],
    "HXARRAY_CUDA_DRIVER": ["sim", " SIM ", "simulator", "cuda"],
    "HXARRAY_CUDA_SIM_DEVICES": ["1", "3", "64", "65"],
    "HXARRAY_CUDA_SIM_CHECK": ["0", "1", "yes", "2"],
    "HXARRAY_CUDA_SIM_WATCHDOG": ["30", "0.5", "inf", "1e18", "1e10", "0.0001", "nan"],
    "HXARRAY_CUDA_SIM_MEMORY": ["1048576", str(1 << 34), "1048575", str((1 << 62) + 1)],
    "HXARRAY_CUDA_SIM_WORKERS": ["1", "2", "1024", "1025"],
    "HXARRAY_CUDA_SIM_STACK": ["4096", "65536", "1048576", "4095", "1048577"],
    "HXARRAY_CUDA_SIM_FIBERS": ["asm", "ucontext", "UCONTEXT", "threads"],
    "HXARRAY_CUDA_SIM_CXX": ["g++", "no-such-compiler++"],
    "HXARRAY_CUDA_SIM_PCH": ["0", "1", "no", "maybe"],
    "HXARRAY_CUDA_SYNC_CHECKS": ["0", "1", "yes", "2"],
    "HXARRAY_PTXAS": ["ptxas", "/no/such/ptxas"],
}
FAILURES = ("hangs", "crashes", "bad values accepted", "good values failed", "unclear errors")


def accepted(name: str, value: str) -> bool:
    """Whether the declaration of `name` takes `value` (sets the variable for a moment: call it
    before any process starts)."""
    saved = os.environ.get(name)
    os.environ[name] = value
    try:
        SETTINGS[name].get()
        return True
    except ValueError:
        return False
    finally:
        if saved is None:
            del os.environ[name]
        else:
            os.environ[name] = saved


def draw(per_variable: int, seed: int) -> list[tuple[str, str, str, bool]]:
    """(variable, value, mode, accepted) to run: `per_variable` values of each variable (half its
    own, half common ones), or every value when 0; modes alternate between compiled and
    pure-Python."""
    rng = random.Random(seed)
    runs = []
    for name in SETTINGS:
        own, common = OWN[name], COMMON
        if per_variable:
            own = rng.sample(own, min(len(own), (per_variable + 1) // 2))
            common = rng.sample(common, per_variable // 2)
        runs += [(name, value) for value in dict.fromkeys(own + common)]
    return [(name, value, ("compiled", "pure")[i % 2], accepted(name, value))
            for i, (name, value) in enumerate(runs)]


def judge(name: str, value: str, good: bool, returncode: int | None, stderr: str) -> str:
    """The outcome of one process (`good`: the declaration accepts the value): "worked",
    "refused", "no GPU" or one of FAILURES."""
    if returncode is None:
        return "hangs"
    if returncode < 0:
        return "crashes"
    if returncode == 0:
        return "worked" if good else "bad values accepted"
    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    kind = last.partition(":")[0].rpartition(".")[2]
    if good and kind == "DeviceUnavailableError" and "CUDA is unavailable" in last:
        return "no GPU"  # a driver choice (or the default) this machine cannot give
    named = any(f"{name}={text!r}" in last for text in (value, value.strip())) or (
        name == "HXARRAY_DEFAULT_DEVICE" and kind == "DeviceUnavailableError"
        and value.strip() in last)
    if kind not in ("ValueError", "DeviceUnavailableError") or not named:
        return "unclear errors"
    if good and name not in FREE_TEXT:
        return "good values failed"
    if not good and SETTINGS[name].accepted not in last:
        return "unclear errors"
    return "refused"


def _one(name: str, value: str, mode: str, good: bool, timeout: float) -> dict[str, Any]:
    env = {**BASE_ENV, "HXARRAY_PURE_PYTHON": "1" if mode == "pure" else "0", name: value}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as cwd:  # relative paths land here
        try:
            done = subprocess.run([sys.executable, "-c", PROBES[name]], cwd=cwd, env=env,
                                  capture_output=True, text=True, timeout=timeout)
            returncode, stderr = done.returncode, done.stderr
        except subprocess.TimeoutExpired:
            returncode, stderr = None, ""
    outcome = judge(name, value, good, returncode, stderr)
    mode = "set" if name == "HXARRAY_PURE_PYTHON" else mode
    return {"variable": name, "value": value[:40], "mode": mode, "outcome": outcome,
            "seconds": round(time.perf_counter() - start, 2),
            "error": stderr.strip().splitlines()[-1][:300] if stderr.strip() else ""}


def main(per_variable: int, seed: int, timeout: float) -> dict[str, Any]:
    missing = set(SETTINGS) - set(PROBES) | set(SETTINGS) - set(OWN)
    if missing:
        raise SystemExit(f"variables without a probe or values of their own: {sorted(missing)}")
    runs = draw(per_variable, seed)
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda run: _one(*run, timeout), runs))
    tally: dict[str, int] = {"processes": len(results), "variables": len(SETTINGS)}
    for r in results:
        tally[r["outcome"]] = tally.get(r["outcome"], 0) + 1
    return {"tally": tally, "slowest": max((r["seconds"] for r in results), default=0),
            "examples": [r for r in results if r["outcome"] in FAILURES][:20],
            "clean": not any(tally.get(kind) for kind in FAILURES)}


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]))))
