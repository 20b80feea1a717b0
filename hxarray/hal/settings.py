"""Every `HXARRAY_*` environment variable, declared once: its name, its parser, the values it
accepts, its default and when hxarray reads it.

A reader calls `SETTING.get()`: an unset or blank variable gives the default; a value the parser
refuses raises `ValueError` naming the variable, the value and the accepted values, at the moment
the setting is read (at import, or at the first use of what it configures), so a bad value
never turns into a hang or a later, unrelated error. `markdown()` renders the table of
docs/hal.md. This module imports nothing from hxarray.
"""

from __future__ import annotations

import math
import os
import platform
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["SETTINGS", "Setting", "markdown"]

T = TypeVar("T")

_KIB, _MIB, _GIB = 1 << 10, 1 << 20, 1 << 30
MAX_BYTES = 1 << 62  # the largest byte count: the largest block an allocator hands out
MAX_SIM_WORKERS = 1024  # OS threads running simulated blocks (each reserves its fiber stacks)
MAX_SIM_STACK = 1 << 20  # bytes per simulated CUDA thread; a worker maps 1024 such stacks
MAX_SIM_DEVICES = 64
MAX_THREADS = 1024  # CPU threads of one operation (a thread costs memory; BLAS takes a C int)
_FLAGS = {"1": True, "true": True, "yes": True, "on": True,
          "0": False, "false": False, "no": False, "off": False}


@dataclass(frozen=True)
class _Parser(Generic[T]):
    """Text -> value; `accepted` says which texts it takes (ValueError for others)."""

    accepted: str
    parse: Callable[[str], T]


def _integer(low: int, high: int, unit: str = "") -> _Parser[int]:
    def parse(text: str) -> int:
        if not re.fullmatch(r"[+-]?[0-9]+", text):
            raise ValueError("not an integer")
        if len(text.lstrip("+-0")) > 30 or not low <= int(text) <= high:
            raise ValueError("out of range")
        return int(text)

    unit = f" {unit}" if unit else ""
    return _Parser(f"an integer from {low} to {high}{unit}", parse)


def _seconds(low: float) -> _Parser[float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise ValueError("not a number") from None
        if math.isnan(value):
            raise ValueError("not a number")
        if value < low:
            raise ValueError("out of range")
        return value

    return _Parser(f"a number of seconds of at least {low:g}, or inf for no limit", parse)


def _flag() -> _Parser[bool]:
    def parse(text: str) -> bool:
        try:
            return _FLAGS[text.lower()]
        except KeyError:
            raise ValueError("not a flag") from None

    return _Parser("1, true, yes, on or 0, false, no, off (any case)", parse)


def _choice(*choices: str) -> _Parser[str]:
    def parse(text: str) -> str:
        if text.lower() not in choices:
            raise ValueError("not one of the choices")
        return text.lower()

    return _Parser(" or ".join(repr(c) for c in choices), parse)


def _text(accepted: str) -> _Parser[str]:
    return _Parser(accepted, lambda text: text)


def _fibers(text: str) -> str:
    if text.lower() == "asm" and platform.machine() not in ("x86_64", "AMD64"):
        raise ValueError("asm fibers need x86-64")
    return _choice("asm", "ucontext").parse(text)


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One environment variable: `get()` reads and parses it now."""

    name: str
    parser: _Parser[T]
    default: Callable[[], T]
    default_text: str  # the default, as the docs show it
    read: str  # when hxarray reads it
    meaning: str

    @property
    def accepted(self) -> str:
        return self.parser.accepted

    def raw(self) -> str | None:
        """The variable's text, stripped; None when it is unset or blank."""
        text = os.environ.get(self.name, "").strip()
        return text or None

    def get(self) -> T:
        """The parsed value (the default when unset or blank); ValueError naming the variable,
        the value and what is accepted when the parser refuses it."""
        text = self.raw()
        if text is None:
            return self.default()
        try:
            return self.parser.parse(text)
        except (ValueError, OverflowError) as exc:
            raise ValueError(f"{self.name}={os.environ.get(self.name)!r} is invalid ({exc}); "
                             f"expected {self.accepted}") from None


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        os.cpu_count() or 1


SETTINGS: dict[str, Setting[object]] = {}


def _declare(name: str, parser: _Parser[T], default: Callable[[], T], default_text: str,
             read: str, meaning: str) -> Setting[T]:
    setting = Setting(name, parser, default, default_text, read, meaning)
    SETTINGS[name] = setting  # type: ignore[assignment]
    return setting


PURE_PYTHON = _declare(
    "HXARRAY_PURE_PYTHON", _flag(), lambda: False, "0", "at import",
    "run every module from its Python source, no compiled code")
STRICT = _declare(
    "HXARRAY_STRICT", _flag(), lambda: False, "0", "at import",
    "strict mode by default in every thread ([modes](modes.md))")
NUM_THREADS = _declare(
    "HXARRAY_NUM_THREADS", _integer(1, MAX_THREADS), lambda: min(_cpus(), MAX_THREADS),
    "the CPUs this process may use", "at import",
    "threads of one large CPU operation")
DEFAULT_DEVICE = _declare(
    "HXARRAY_DEFAULT_DEVICE", _text("a device (cpu, ref, cuda:1, ...) or best"),
    lambda: "cpu", "cpu", "at the first use of the default device",
    "where new arrays go without a device argument")
CACHE_DIR = _declare(
    "HXARRAY_CACHE_DIR", _text("a directory"), str, "$XDG_CACHE_HOME/hxarray or "
    "~/.cache/hxarray", "at each use", "the cache of measured device speeds")
KERNEL_CACHE = _declare(
    "HXARRAY_KERNEL_CACHE", _text("a directory"), str, "$XDG_CACHE_HOME/hxarray/kernels or "
    "~/.cache/hxarray/kernels", "at the first kernel compile",
    "compiled kernels on disk; a directory of another user (not root), or one others can write, "
    "is refused ([cuda](cuda.md#the-kernel-cache))")
KERNEL_CACHE_SIZE = _declare(
    "HXARRAY_KERNEL_CACHE_SIZE", _integer(0, MAX_BYTES, "bytes"), lambda: _GIB, "1 GiB",
    "when a kernel cache is made", "bound of the kernel cache on disk")
CUDA_DRIVER = _declare(
    "HXARRAY_CUDA_DRIVER", _choice("sim", "cupy", "null"), str, "CuPy when it sees a GPU",
    "at the first use of a CUDA device",
    "`sim` (the CPU simulator), `cupy` (a GPU) or `null` (kernels that do nothing, to measure "
    "host overhead)")
CUDA_SYNC_CHECKS = _declare(
    "HXARRAY_CUDA_SYNC_CHECKS", _flag(), lambda: False, "0", "at each indexing call on CUDA",
    "1: index errors of CUDA kernels raised at once (a host synchronisation per indexing call) "
    "instead of at the next synchronising call ([cuda](cuda.md))")
CUDA_SIM_DEVICES = _declare(
    "HXARRAY_CUDA_SIM_DEVICES", _integer(1, MAX_SIM_DEVICES), lambda: 1, "1",
    "when the simulator starts", "number of simulated devices")
CUDA_SIM_CHECK = _declare(
    "HXARRAY_CUDA_SIM_CHECK", _flag(), lambda: False, "0", "when the simulator starts",
    "check mode: guard pages, bounds checks "
    "([cuda](cuda.md#errors-check-mode-and-the-watchdog))")
CUDA_SIM_WATCHDOG = _declare(
    "HXARRAY_CUDA_SIM_WATCHDOG", _seconds(0.001), lambda: 60.0, "60", "when the simulator starts",
    "seconds a simulated launch may run")
CUDA_SIM_MEMORY = _declare(
    "HXARRAY_CUDA_SIM_MEMORY", _integer(_MIB, MAX_BYTES, "bytes"), lambda: 4 * _GIB, "4 GiB",
    "when the simulator starts", "memory of each simulated device")
CUDA_SIM_WORKERS = _declare(
    "HXARRAY_CUDA_SIM_WORKERS", _integer(1, MAX_SIM_WORKERS),
    lambda: min(os.cpu_count() or 1, MAX_SIM_WORKERS), "cores",
    "when the simulator first starts (fixed for the process)",
    "OS threads running simulated blocks")
CUDA_SIM_STACK = _declare(
    "HXARRAY_CUDA_SIM_STACK", _integer(4 * _KIB, MAX_SIM_STACK, "bytes"), lambda: 16 * _KIB,
    "16384",
    "when the simulator first starts (fixed for the process)",
    "stack of each simulated CUDA thread")
CUDA_SIM_FIBERS = _declare(
    "HXARRAY_CUDA_SIM_FIBERS", _Parser("'asm' (x86-64 only) or 'ucontext'", _fibers),
    lambda: "asm" if platform.machine() in ("x86_64", "AMD64") else "ucontext",
    "asm on x86-64", "when the simulator first starts (fixed for the process)",
    "`ucontext`: the portable fiber switch (10-14x slower)")
CUDA_SIM_CXX = _declare(
    "HXARRAY_CUDA_SIM_CXX", _text("a C++ compiler on PATH, or its path"), str,
    "$CXX, else g++, clang++ or c++", "at the simulator's first compile",
    "the host compiler of simulated kernels")
PTXAS = _declare(
    "HXARRAY_PTXAS", _text("the path of a ptxas executable"), str,
    "the nvidia-cuda-nvcc-cu12 wheel's, else PATH's", "when `make cuda-check` runs ptxas",
    "the ptxas of `make cuda-check`'s register, stack and spill report")
CUDA_SIM_PCH = _declare(
    "HXARRAY_CUDA_SIM_PCH", _flag(), lambda: True, "1", "at the simulator's first compile",
    "0 disables the precompiled header")


def markdown() -> str:
    """The table of every variable, as docs/hal.md shows it."""
    lines = ["| variable | accepted values | default | read | meaning |",
             "| --- | --- | --- | --- | --- |"]
    for s in SETTINGS.values():
        lines.append(f"| `{s.name}` | {s.accepted} | {s.default_text} | {s.read} | "
                     f"{s.meaning} |")
    return "\n".join(lines) + "\n"
