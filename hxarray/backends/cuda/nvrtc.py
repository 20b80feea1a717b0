"""NVRTC verification without a GPU: compile CUDA sources with NVIDIA's real compiler.

Uses `cuda.bindings.nvrtc` (the `cuda-bindings` package with the `nvidia-cuda-nvrtc-cu12` wheel),
which needs no driver. Sources come from registered providers: callables that yield
`(name, source, options, name_expressions)`; the CUDA backend registers its generated kernels with
`register_source_provider`. `python -m hxarray.backends.cuda.nvrtc [DIR ...]` (`make cuda-check`)
compiles every provided source and every `*.cu` under the given directories for sm_80 and sm_90 and
fails on any error or warning; for sm_90 it goes through PTX and ptxas, prints every kernel's
registers, shared memory, stack, spills and occupancy, and fails where `ptxas.problems` finds a
kernel of the backend's families breaking their rules (a stack frame, a spill, ...).

A `.cu` file may carry its options and template instantiations in comments:
`// nvrtc-options: -DTILE=16` and `// name-expressions: scale<float>, scale<double>`.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import multiprocessing
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from ...hal.kernel_cache import KernelCache
from ..codegen.compiler import CompileError, cupy_include_dirs
from . import ptxas

__all__ = ["ARCHITECTURES", "Source", "available", "compile_source", "iter_sources",
           "register_source_provider", "resources", "sources_in", "verify", "version"]

ARCHITECTURES = ("sm_80", "sm_90")
Source = tuple[str, str, Sequence[str], Sequence[str]]  # name, code, options, name expressions
_providers: list[Callable[[], Iterable[Source]]] = []


def register_source_provider(provider: Callable[[], Iterable[Source]]) -> None:
    """Add a callable yielding (name, source, options, name_expressions) to `make cuda-check`."""
    if not callable(provider):
        raise TypeError(f"a source provider is a callable, got {type(provider).__name__}")
    _providers.append(provider)


def iter_sources() -> Iterator[Source]:
    """Every source of every registered provider."""
    for provider in list(_providers):
        yield from provider()


def _comment_list(code: str, tag: str) -> list[str]:
    m = re.search(rf"^\s*//\s*{tag}:(.*)$", code, re.M)
    if not m:
        return []
    if tag == "nvrtc-options":
        return m.group(1).split()
    return [x.strip() for x in re.split(r",(?![^<]*>)", m.group(1)) if x.strip()]


def sources_in(directory: Path | str) -> list[Source]:
    """The `*.cu` files under `directory` with the options and name expressions in their
    comments."""
    out: list[Source] = []
    for path in sorted(Path(directory).rglob("*.cu")):
        code = path.read_text()
        out.append((str(path), code, _comment_list(code, "nvrtc-options"),
                    _comment_list(code, "name-expressions")))
    return out


def available() -> bool:
    """Whether NVRTC can be loaded here."""
    try:
        version()
    except (ImportError, RuntimeError, OSError):
        return False
    return True


def _nvrtc():  # noqa: ANN202 - the module of cuda-bindings
    from cuda.bindings import nvrtc

    return nvrtc


def _check(result: tuple, what: str) -> tuple:
    nvrtc = _nvrtc()
    status = result[0]
    if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"NVRTC {what} failed: {status}")
    return result[1:]


def version() -> tuple[int, int]:
    """NVRTC's (major, minor)."""
    major, minor = _check(_nvrtc().nvrtcVersion(), "version")
    return int(major), int(minor)


def _compile(code: str, name: str, options: Sequence[str], name_expressions: Sequence[str],
             arch: str, output: str) -> tuple[bytes, str, dict[str, str]]:
    """(NVRTC's `output`, "CUBIN" or "PTX"; its log; mangled name -> name expression) for
    `code` compiled for `arch` (a real architecture, or compute_NN for PTX)."""
    nvrtc = _nvrtc()
    (program,) = _check(nvrtc.nvrtcCreateProgram(code.encode(), name.encode(), 0, [], []),
                        "create program")
    try:
        for expr in name_expressions:
            _check(nvrtc.nvrtcAddNameExpression(program, expr.encode()), "add name expression")
        flags = [f"--gpu-architecture={arch}", "-std=c++17", *options]
        flags += [f"-I{d}" for d in cupy_include_dirs()]
        encoded = [f.encode() for f in flags]
        status = nvrtc.nvrtcCompileProgram(program, len(encoded), encoded)[0]
        (size,) = _check(nvrtc.nvrtcGetProgramLogSize(program), "log size")
        log_buffer = b" " * size
        _check(nvrtc.nvrtcGetProgramLog(program, log_buffer), "log")
        log = log_buffer.rstrip(b"\0 ").decode(errors="replace").strip()
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CompileError(f"NVRTC rejects {name} for {arch}:\n{log}", log=log)
        (size,) = _check(getattr(nvrtc, f"nvrtcGet{output}Size")(program), f"{output} size")
        binary = b" " * size
        _check(getattr(nvrtc, f"nvrtcGet{output}")(program, binary), output)
        lowered = {}
        for expr in name_expressions:
            (mangled,) = _check(nvrtc.nvrtcGetLoweredName(program, expr.encode()), "lowered name")
            lowered[mangled.decode()] = expr
        return binary, log, lowered
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def compile_source(code: str, name: str = "kernel.cu", options: Sequence[str] = (),
                   name_expressions: Sequence[str] = (), arch: str = "sm_80") -> tuple[bytes, str]:
    """(cubin, log) for `code` with CuPy's include paths. CompileError on an error."""
    cubin, log, _ = _compile(code, name, options, name_expressions, arch, "CUBIN")
    return cubin, log


def resources(code: str, name: str = "kernel.cu", options: Sequence[str] = (),
              name_expressions: Sequence[str] = ()) -> list[ptxas.KernelReport]:
    """ptxas's report of every kernel of `code` for ptxas.ARCH (PTX from NVRTC, assembled by
    ptxas). CompileError on any error or warning of either."""
    virtual = ptxas.ARCH.replace("sm_", "compute_")
    ptx, log, lowered = _compile(code, name, options, name_expressions, virtual, "PTX")
    if log:
        raise CompileError(f"NVRTC warns about {name} for {virtual}:\n{log}", log=log)
    try:
        reports, warnings = ptxas.report(ptx.rstrip(b"\0 ").decode(), lowered)
    except RuntimeError as exc:
        raise CompileError(f"{name}: {exc}", log=str(exc)) from exc
    if warnings:
        raise CompileError(f"ptxas warns about {name} for {ptxas.ARCH}:\n{warnings}",
                           log=warnings)
    return reports


def verify(code: str, name: str = "kernel.cu", options: Sequence[str] = (),
           name_expressions: Sequence[str] = (), archs: Sequence[str] = ARCHITECTURES,
           cache: KernelCache | None = None) -> None:
    """Compile for each architecture; CompileError on any error or warning. With a cache, a
    source that passed once is not compiled again."""
    major, minor = version()
    for arch in archs:
        def build(arch: str = arch) -> bytes:
            cubin, log = compile_source(code, name, options, name_expressions, arch)
            if log:
                raise CompileError(f"NVRTC warns about {name} for {arch}:\n{log}", log=log)
            return cubin

        if cache is None:
            build()
        else:
            key = KernelCache.key("nvrtc", code, "\0".join(options), "\0".join(name_expressions),
                                  arch, f"{major}.{minor}", *cupy_include_dirs())
            cache.get_or_compile(key, build)


def _check_source(source: Source, archs: Sequence[str]) -> tuple[str | None, list[str]]:
    """(why NVRTC or ptxas rejects `source` for one of `archs`, or None; the report lines of its
    kernels). ptxas.ARCH is checked through PTX and ptxas: its resources are held to the rules of
    `ptxas.problems`."""
    name, code, options, expressions = source
    lines: list[str] = []
    try:
        verify(code, name, options, expressions, [a for a in archs if a != ptxas.ARCH])
        if ptxas.ARCH in archs:
            reports = resources(code, name, options, expressions)
            lines = [f"{name}: {r.line()}" for r in reports]
            broken = ptxas.problems(name, reports)
            if broken:
                return f"ptxas: {name} for {ptxas.ARCH}:\n  " + "\n  ".join(broken), lines
    except CompileError as exc:
        return str(exc), lines
    return None, lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hxarray.backends.cuda.nvrtc",
                                     description="Compile every CUDA source of the project with "
                                     "NVRTC for sm_80 and sm_90; fail on any error or warning.")
    parser.add_argument("directories", nargs="*", help="also compile every *.cu under these")
    parser.add_argument("--arch", action="append", help="architectures (default sm_80, sm_90)")
    parser.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1,
                        help="compiler processes (default: one per CPU)")
    ns = parser.parse_args(argv)
    if ns.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {ns.jobs}")
    archs = tuple(ns.arch or ARCHITECTURES)
    try:
        major, minor = version()
    except (ImportError, RuntimeError, OSError) as exc:
        print(f"NVRTC is not available ({exc}); install hxarray[cuda-check]", file=sys.stderr)
        return 2
    if ptxas.ARCH in archs and ptxas.find() is None:
        print("ptxas is not available; install hxarray[cuda-check] (nvidia-cuda-nvcc-cu12) or "
              "set HXARRAY_PTXAS", file=sys.stderr)
        return 2
    from .. import codegen

    sources = [*codegen.all_sources(), *iter_sources()]  # the backend's kernels, then plug-ins'
    for directory in ns.directories:
        sources += sources_in(directory)
    failures = 0
    start = time.perf_counter()
    check = functools.partial(_check_source, archs=archs)
    kernels = 0
    with contextlib.ExitStack() as stack:
        run: Callable[..., Iterator[tuple[str | None, list[str]]]] = map
        if ns.jobs > 1 and len(sources) > 1:  # NVRTC holds the GIL: processes, not threads
            run = stack.enter_context(ProcessPoolExecutor(
                min(ns.jobs, len(sources)), mp_context=multiprocessing.get_context("spawn"))).map
        for failure, lines in run(check, sources):
            kernels += len(lines)
            for line in lines:
                print(line)
            if failure is not None:
                failures += 1
                print(f"FAIL {failure}", file=sys.stderr)
    elapsed = time.perf_counter() - start
    print(f"NVRTC {major}.{minor}: {len(sources)} sources x {len(archs)} architectures "
          f"({', '.join(archs)}) = {len(sources) * len(archs)} compilations, {failures} failed, "
          f"{elapsed:.1f} s" + (f"; ptxas: {kernels} kernels for {ptxas.ARCH} (registers, shared "
                                f"memory, stack, spills, occupancy above)" if kernels else ""))
    return 1 if failures or not sources else 0


if __name__ == "__main__":
    sys.exit(main())
