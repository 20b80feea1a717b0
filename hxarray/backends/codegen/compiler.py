"""CUDA C to a loadable shared object with the host C++ compiler, through the CUDA-builtins
header `include/hxsim.h`; used by the CUDA simulator (kernels, `compile`) and by the CPU
backend (its fused loops: plain host functions, `compile_host`).

A kernel's steps: refuse what cannot be simulated (`unsupported_features`), find the kernels to
export (`extern "C"` kernels plus the caller's name expressions), append one registration thunk
per kernel, compile against the precompiled `hxsim.h`, alias every `extern __shared__` name to
one per-block buffer, link. The shared objects go through the kernel cache; the simulator's
runtime (`include/hxsim_runtime.cpp`) is built once the same way. `CompileError` is what every
compiler of CUDA C raises (this one, NVRTC and the CuPy driver).
"""

from __future__ import annotations

import atexit
import ctypes
import fcntl
import functools
import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from ...hal.kernel_cache import KernelCache
from ...hal.settings import CUDA_SIM_CXX, CUDA_SIM_PCH

__all__ = ["CompileError", "HostCompiler", "cupy_include_dirs", "kernel_names",
           "unsupported_features"]

INCLUDE_DIR = Path(__file__).resolve().parent / "include"
HEADER = INCLUDE_DIR / "hxsim.h"
RUNTIME = INCLUDE_DIR / "hxsim_runtime.cpp"
ABI = INCLUDE_DIR / "hxsim_abi.h"
VENDOR_DIR = INCLUDE_DIR / "vendor"  # CuPy's complex headers, for when CuPy is not installed
TRANSLATOR = Path(__file__).resolve()  # this module: how CUDA C becomes the C++ compiled
MAX_DYNAMIC_SHARED = 49152  # HXSIM_MAX_DYNAMIC_SHARED in hxsim_abi.h

# in every precompiled header's directory: hxarray prunes only directories that hold it
_PCH_MARKER = ".hxarray-pch"
_PCH_MARK = b"hxarray precompiled header\n"

BASE_FLAGS = ("-std=c++17", "-fPIC", "-fno-gnu-unique", "-fno-strict-aliasing", "-pthread",
              "-fstack-clash-protection")  # large frames probe the guard page

CHECK_FLAGS = ["-fsanitize=bounds", "-fsanitize-undefined-trap-on-error"]

# (pattern on source without comments and strings, what it is)
_UNSUPPORTED = [
    (r"\basm\b|\b__asm__\b|\b__asm\b", "inline PTX assembly (asm)"),
    (r"\btexture\s*<|\bsurface\s*<|\bcudaTextureObject_t\b|\bcudaSurfaceObject_t\b"
     r"|\btex(1D|2D|3D|Cubemap)\w*\s*(<|\()|\bsurf(1D|2D|3D|Cubemap)\w*\s*(<|\()",
     "textures and surfaces"),
    (r"\bcooperative_groups\b|cooperative_groups\.h|\bthis_grid\s*\(|\bgrid_group\b",
     "cooperative groups / grid-wide synchronisation"),
    (r"\bnvcuda\b|\bwmma\b|\bmma\.h\b|\b__hmma\w*|\b__imma\w*|\bmma_sync\b",
     "tensor-core intrinsics (wmma/mma)"),
    (r"<<<", "dynamic parallelism (a kernel launch inside a kernel)"),
    (r"cuda_fp16\.h|cuda_bf16\.h|\b__half2?\b|\b__nv_bfloat16\b", "half and bfloat16 types"),
]


class CompileError(RuntimeError):
    """A CUDA source did not compile; `log` holds the compiler's output."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log


# what the simulator does with NVRTC's options (the rest of NVRTC's options are refused)
_IGNORED_OPTIONS = re.compile(
    r"^(-arch|--gpu-architecture|-std|--std|--use_fast_math|-use_fast_math|--fmad|-fmad|--ftz|"
    r"-ftz|--prec-div|-prec-div|--prec-sqrt|-prec-sqrt|--extra-device-vectorization|"
    r"-extra-device-vectorization|--restrict|-restrict|--device-as-default-execution-space|"
    r"-default-device|--expt-relaxed-constexpr|-expt-relaxed-constexpr|--dopt|-dopt|-w|"
    r"--disable-warnings|--relocatable-device-code|-rdc|--maxrregcount|-maxrregcount|"
    r"--dlink-time-opt|-dlto|-lineinfo|--generate-line-info|--minimal|-minimal)(=.*)?$")


_MISSING_HEADER = re.compile(r"^([^:\n]*:\d+):\d+: fatal error: ([^:\n]+): No such file or "
                             r"directory", re.M)


def _missing_header_message(where: str, header: str) -> str:
    """One line for a header the compiler did not find: what to install or pass."""
    if header.startswith(("cupy/", "thrust/", "cub/", "cuda/")):
        remedy = "it comes with CuPy: pip install cupy-cuda12x (or hxarray's extra [cuda])"
    else:
        remedy = "pass the folder that holds it as options=('-I', folder)"
    return f"{where}: the CUDA simulator found no header {header!r}; {remedy}"


def cupy_include_dirs() -> list[str]:
    """CuPy's header directories (for `cupy/complex.cuh`), or [] without CuPy."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("cupy")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    base = Path(list(spec.submodule_search_locations)[0]) / "_core" / "include"
    if not base.is_dir():
        return []
    cccl = base / "cupy" / "_cccl"
    return [str(base)] + [str(cccl / d) for d in ("libcudacxx", "thrust", "cub") if
                          (cccl / d).is_dir()]


def strip_comments_and_strings(source: str) -> str:
    """The source with comments and string/char literal contents blanked (newlines kept)."""
    out: list[str] = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif source.startswith("/*", i):
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", source[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def unsupported_features(source: str) -> list[tuple[int, str]]:
    """(line, feature) for every use of something the simulator cannot run."""
    code = strip_comments_and_strings(source)
    found = []
    # #include lines keep their file name visible to the checks
    for include in re.finditer(r"^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]*)[>\"]", source,
                               re.M):
        code = code[:include.start(1)] + include.group(1) + code[include.end(1):]
    for pattern, feature in _UNSUPPORTED:
        m = re.search(pattern, code)
        if m:
            found.append((code.count("\n", 0, m.start()) + 1, feature))
    return sorted(found)


def kernel_names(source: str) -> list[str]:
    """The `extern "C"` non-template `__global__` functions of `source`, in order."""
    code = strip_comments_and_strings(source)
    names = []
    for m in re.finditer(r"\b__global__\b", code):
        before = code[:m.start()].rstrip()
        before = re.sub(r"(\b(static|inline|__forceinline__|__host__|__device__)\s*)+$", "",
                        before).rstrip()
        if not re.search(r'extern\s*"\s*"\s*$', before):
            continue  # C++ linkage (or a template): needs a name expression, as in CuPy
        after = code[m.end():]
        head = re.match(r"\s*(?:(?:void|__launch_bounds__\s*\([^)]*\)|__noinline__|"
                        r"__forceinline__|static|inline)\s*)*(\w+)\s*\(", after)
        if head and head.group(1) not in names:
            names.append(head.group(1))
    return names


_SPECIFIERS = r"static|inline|__forceinline__|__host__|__device__|__noinline__"


def _kernels_not_inline(source: str) -> str:
    """`source` with `inline` and `__forceinline__` next to `__global__` blanked out, and
    `__global__` itself in explicit instantiations (`template __global__ void k<float>(...);`):
    the simulator's `__global__` is `inline` already (a kernel's thunk is its one caller), and
    g++ refuses a repeated `inline` and an inline explicit instantiation."""
    code = strip_comments_and_strings(source)
    out = list(source)
    run = rf"(?:\b(?:{_SPECIFIERS})\b\s*)*"
    for m in re.finditer(rf"(\btemplate\s+(?!<))?{run}\b__global__\b\s*{run}", code):
        words = r"\b(?:inline|__forceinline__|__global__)\b" if m.group(1) else \
            r"\b(?:inline|__forceinline__)\b"
        for word in re.finditer(words, m.group()):
            out[m.start() + word.start():m.start() + word.end()] = " " * len(word.group())
    return "".join(out)


def _thunks(names: Sequence[str], expressions: Sequence[str]) -> str:
    lines = ['\n#line 1 "<hxarray simulator thunks>"']
    entries = []
    for i, (label, expr) in enumerate([(n, n) for n in names] + [(e, e) for e in expressions]):
        literal = label.replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f"static constexpr hxsim_kernel_info hxsim_kernel_{i} = "
                     f'hxsim::kernel<&{expr}>::info("{literal}");')
        entries.append(f"&hxsim_kernel_{i}")
    entries.append("nullptr")
    lines.append('extern "C" const hxsim_kernel_info* const hxsim_module_kernels[] = {'
                 + ", ".join(entries) + "};\n")
    return "\n".join(lines)


def _tls_undefined(obj: Path) -> list[str]:
    """Undefined thread-local symbols of an object file: its `extern __shared__` names."""
    out = subprocess.run(["readelf", "-sW", str(obj)], capture_output=True, text=True, check=True)
    names = []
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[3] == "TLS" and parts[6] == "UND":
            names.append(parts[7])
    return names


def _shared_alias_asm(names: Sequence[str]) -> str:
    labels = "".join(f"    .globl {n}\n    .type {n}, @object\n"
                     f"    .size {n}, {MAX_DYNAMIC_SHARED}\n{n}:\n" for n in names)
    return (f'    .section .tbss,"awT",@nobits\n    .p2align 7\n{labels}'
            f"    .zero {MAX_DYNAMIC_SHARED}\n"
            "    .data\n    .globl hxsim_dynamic_shared_bytes\n"
            f"hxsim_dynamic_shared_bytes:\n    .quad {MAX_DYNAMIC_SHARED}\n"
            '    .section .note.GNU-stack,"",@progbits\n')


def _names_a_target(program: str) -> bool:
    """Whether `program -dumpmachine` prints a target triple and exits, as g++ and clang++ do
    (read at most one short line, and wait at most 10 s: any program may be named)."""
    try:
        proc = subprocess.Popen([program, "-dumpmachine"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError:
        return False
    timer = threading.Timer(10, proc.kill)
    timer.start()
    with proc:  # closes the pipe and waits on leaving
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline(200).decode(errors="replace").strip()
            return re.fullmatch(r"[\w.]+(-[\w.]+)+", line) is not None and proc.wait(10) == 0
        except subprocess.TimeoutExpired:
            return False
        finally:
            timer.cancel()
            proc.kill()


@functools.cache
def _host_cpu() -> str:
    """This machine's CPU model and features (what -march=native compiles for)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        lines = []
    wanted = [line for line in lines if line.startswith(("model name", "flags", "Features"))]
    import platform

    return hashlib.sha256("\n".join([platform.machine(), *dict.fromkeys(wanted)]).encode()
                          ).hexdigest()[:16]


def _made_here(path: Path) -> bool:
    """Whether `path` is a directory (not a link) that `precompiled_header` made."""
    try:
        return stat.S_ISDIR(path.lstat().st_mode) and \
            (path / _PCH_MARKER).read_bytes() == _PCH_MARK
    except OSError:
        return False


def _header_ready(path: Path) -> bool:
    """Whether `path` is hxarray's header directory, with its precompiled header in it."""
    return _made_here(path) and (path / "hxsim.h.gch").exists()


def _marker(path: Path) -> BinaryIO:
    """The marker file of header directory `path`, open for locking (never through a link)."""
    return open(os.open(path / _PCH_MARKER, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb")


class HostCompiler:
    """Compiles CUDA C for the simulator and loads the results; one per process is enough.
    `pch`: whether to use a precompiled header (None: `HXARRAY_CUDA_SIM_PCH`)."""

    def __init__(self, cache: KernelCache, workdir: Path | None = None, *,
                 pch: bool | None = None) -> None:
        self.cache = cache
        self.pch = CUDA_SIM_PCH.get() if pch is None else pch
        self.cxx = self._find_compiler()
        if workdir is None:  # loaded modules stay mapped after their files are removed
            workdir = Path(tempfile.mkdtemp(prefix="hxsim-"))
            atexit.register(shutil.rmtree, workdir, ignore_errors=True)
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._pch: Path | None = None
        self._pch_held: BinaryIO | None = None  # a shared lock on its marker: see _prune_headers
        self._pch_tried = False
        self.includes = cupy_include_dirs() or [str(VENDOR_DIR)]

    @staticmethod
    def _find_compiler() -> str:
        chosen = CUDA_SIM_CXX.get()
        if chosen:
            path = shutil.which(chosen)
            if path is None or not _names_a_target(path):
                what = "a program on PATH" if path is None else "a C++ compiler"
                raise ValueError(f"{CUDA_SIM_CXX.name}={chosen!r} is not {what}; "
                                 f"expected {CUDA_SIM_CXX.accepted}")
            return path
        wanted = os.environ.get("CXX")
        for candidate in ([wanted] if wanted else []) + ["g++", "clang++", "c++"]:
            path = shutil.which(candidate)
            if path:
                return path
        raise CompileError("the CUDA simulator needs a C++ compiler (g++ or clang++) and found "
                           "none on PATH; set HXARRAY_CUDA_SIM_CXX to one")

    @functools.cached_property
    def identity(self) -> str:
        """The compiler's path, version line and target: part of every cache key."""
        version = subprocess.run([self.cxx, "--version"], capture_output=True, text=True)
        target = subprocess.run([self.cxx, "-dumpmachine"], capture_output=True, text=True)
        return f"{self.cxx}|{version.stdout.splitlines()[0] if version.stdout else ''}|" \
               f"{target.stdout.strip()}"

    @functools.cached_property
    def header_version(self) -> str:
        """A digest of the simulator's header, ABI and runtime sources and of this module, whose
        rewriting of the CUDA C is part of every binary (a cached kernel from another version of
        the rewriting is not reused)."""
        digest = hashlib.sha256()
        for path in (HEADER, ABI, RUNTIME, TRANSLATOR):
            digest.update(path.read_bytes())
        return digest.hexdigest()[:16]

    def _run(self, args: list[str], what: str) -> None:
        result = subprocess.run(args, capture_output=True, text=True)
        if result.returncode != 0:
            missing = _MISSING_HEADER.search(result.stderr)
            if missing:
                raise CompileError(_missing_header_message(missing.group(1), missing.group(2)),
                                   log=result.stderr)
            raise CompileError(f"{what} failed ({self.cxx}):\n{result.stderr.strip()}",
                               log=result.stderr)

    # -- the runtime --------------------------------------------------------------------------
    def runtime_library(self, ucontext: bool = False) -> Path:
        """The runtime shared object, built once per compiler and runtime source (cached).
        `ucontext` switches fibers with swapcontext instead of the x86-64 assembly (the only
        way on other architectures; slower)."""
        defines = ["-DHXSIM_USE_UCONTEXT"] if ucontext else []
        key = KernelCache.key("hxsim-runtime", self.header_version, self.identity, *defines)

        def build() -> bytes:
            with tempfile.TemporaryDirectory(dir=self.workdir) as tmp:
                out = Path(tmp) / "runtime.so"
                self._run([self.cxx, *BASE_FLAGS, *defines, "-O2", "-shared",
                           f"-I{INCLUDE_DIR}", str(RUNTIME), "-o", str(out)],
                          "building the simulator runtime")
                return out.read_bytes()

        return self._materialise(key, self.cache.get_or_compile(key, build))

    def _materialise(self, key: str, binary: bytes) -> Path:
        path = self.workdir / f"{key[:32]}.so"
        if not path.exists():
            fd, tmp = tempfile.mkstemp(dir=self.workdir, suffix=".so.tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(binary)
            os.replace(tmp, path)
        return path

    # -- the precompiled header ------------------------------------------------------------------
    def _flags(self, debug: bool) -> list[str]:
        return [*BASE_FLAGS, "-g", "-O0"] if debug else [*BASE_FLAGS, "-O2"]

    def precompiled_header(self) -> Path | None:
        """A directory holding hxsim.h and its .gch for the default flags, built on first use
        under the kernel cache's directory (or the work directory); None if that fails."""
        with self._lock:
            if self._pch_tried:
                return self._pch
            self._pch_tried = True
            if not self.pch:
                return None
            root = self.cache.prepare_directory() or self.workdir
            tag = hashlib.sha256(f"{self.header_version}|{self.identity}".encode()).hexdigest()
            final = root / f"pch-{tag[:24]}"
            if not _header_ready(final):
                try:
                    tmp = Path(tempfile.mkdtemp(dir=root, prefix=".pch-tmp-"))
                    try:
                        (tmp / _PCH_MARKER).write_bytes(_PCH_MARK)
                        for path in (HEADER, ABI):
                            shutil.copy(path, tmp / path.name)
                        self._run([self.cxx, *self._flags(False), f"-I{tmp}", "-x", "c++-header",
                                   str(tmp / "hxsim.h"), "-o", str(tmp / "hxsim.h.gch")],
                                  "precompiling hxsim.h")
                        try:
                            os.rename(tmp, final)
                        except OSError:  # another process won the race
                            pass
                    finally:
                        shutil.rmtree(tmp, ignore_errors=True)
                except (OSError, CompileError):
                    return None
            try:
                self._pch_held = _marker(final)
                fcntl.flock(self._pch_held, fcntl.LOCK_SH)  # (waits while it is being pruned)
            except OSError:
                return None
            self._pch = final if _header_ready(final) else None
            self._prune_headers(root, keep=final)
            return self._pch

    @staticmethod
    def _prune_headers(root: Path, keep: Path, count: int = 3) -> None:
        """Remove all but the `count` most recent precompiled headers (16 MB each) that hxarray
        made (their marker file says so; anything else named pch-* is left alone), except those
        that a live process compiles with (it holds a shared lock on the marker)."""
        try:
            found = sorted((p for p in root.glob("pch-*") if p != keep and _made_here(p)),
                           key=lambda p: p.lstat().st_mtime, reverse=True)
        except OSError:
            return
        for stale in found[count - 1:]:
            try:
                with _marker(stale) as marker:
                    fcntl.flock(marker, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    shutil.rmtree(stale, ignore_errors=True)
            except OSError:  # in use (BlockingIOError), or gone meanwhile
                pass

    # -- kernels --------------------------------------------------------------------------------
    def translate_options(self, options: Sequence[str]) -> tuple[list[str], bool]:
        """NVRTC options to host compiler flags; (flags, debug). Unknown options: ValueError."""
        flags: list[str] = []
        debug = False
        items = list(options)
        i = 0
        while i < len(items):
            opt = items[i]
            if not isinstance(opt, str):
                raise TypeError(f"compile options must be strings, got {type(opt).__name__}")
            if opt in ("-D", "-U", "-I", "--define-macro", "--undefine-macro", "--include-path"):
                if i + 1 >= len(items):
                    raise ValueError(f"option {opt!r} needs a value")
                short = {"--define-macro": "-D", "--undefine-macro": "-U",
                         "--include-path": "-I"}.get(opt, opt)
                flags.append(short + items[i + 1])
                i += 2
                continue
            m = re.match(r"^(-D|-U|-I|--define-macro=|--undefine-macro=|--include-path=)(.+)$",
                         opt)
            if m:
                short = {"--define-macro=": "-D", "--undefine-macro=": "-U",
                         "--include-path=": "-I"}.get(m.group(1), m.group(1))
                flags.append(short + m.group(2))
            elif opt in ("-G", "--device-debug"):
                debug = True
            elif not _IGNORED_OPTIONS.match(opt):
                raise ValueError(f"compile option {opt!r} is not supported by the CUDA simulator "
                                 "(supported: -D, -U, -I, -G, and NVRTC's code-generation "
                                 "options, which it ignores)")
            i += 1
        return flags, debug

    def cache_key(self, source: str, options: Sequence[str], expressions: Sequence[str]) -> str:
        return KernelCache.key("hxsim-module", source, "\0".join(options), "\0".join(expressions),
                               " ".join(BASE_FLAGS), self.header_version, self.identity,
                               *self.includes)

    def compile(self, source: str, options: Sequence[str] = (),
                name_expressions: Sequence[str] = (), check: bool = False) -> tuple[str, bytes]:
        """(cache key, shared object) for `source`; CompileError with the compiler's log.
        `check` adds bounds checks on fixed-size arrays (static __shared__ tiles, locals): an
        index past the end traps."""
        if not isinstance(source, str):
            raise TypeError(f"source must be a str, got {type(source).__name__}")
        problems = unsupported_features(source)
        if problems:
            listing = "; ".join(f"line {line}: {what}" for line, what in problems)
            raise CompileError(f"the CUDA simulator cannot run this source: {listing}. These "
                               "need a real GPU; kernels meant for the simulator must avoid them")
        flags, debug = self.translate_options(options)
        if check:
            flags += CHECK_FLAGS
        expressions = [str(e) for e in name_expressions]
        names = kernel_names(source)
        key = self.cache_key(source, [*flags, f"debug={debug}"], expressions)

        def build() -> bytes:
            return self._build(source, flags, debug, names, expressions)

        return key, self.cache.get_or_compile(key, build)

    def _build(self, source: str, flags: list[str], debug: bool, names: list[str],
               expressions: list[str]) -> bytes:
        pch = None if debug else self.precompiled_header()
        header_dir = pch if pch is not None else INCLUDE_DIR
        with tempfile.TemporaryDirectory(dir=self.workdir) as tmp:
            tmpdir = Path(tmp)
            src = tmpdir / "kernel.cu"
            src.write_text('#line 1 "kernel.cu"\n' + _kernels_not_inline(source)
                           + _thunks(names, expressions))
            obj = tmpdir / "kernel.o"
            includes = [f"-I{header_dir}"] + [f"-isystem{d}" for d in self.includes]
            self._run([self.cxx, *self._flags(debug), *includes, *flags, "-include",
                       str(header_dir / "hxsim.h"), "-x", "c++", "-c", str(src), "-o", str(obj)],
                      "compiling the kernel source for the simulator")
            inputs = [str(obj)]
            shared = [n for n in _tls_undefined(obj) if not n.startswith("hxsim_")]
            if shared:
                asm = tmpdir / "shared.s"
                asm.write_text(_shared_alias_asm(shared))
                inputs.append(str(asm))
            out = tmpdir / "kernel.so"
            self._run([self.cxx, "-shared", "-pthread", *inputs, "-Wl,--wrap=__assert_fail",
                       "-o", str(out)], "linking the kernel module")
            return out.read_bytes()

    def compile_host(self, source: str, options: Sequence[str] = ()) -> tuple[str, bytes]:
        """(cache key, shared object) of plain host C++ written against the CUDA headers (no
        kernels, no runtime; `options` as `compile` takes them): the CPU backend's fused loops.
        Built for this CPU (`-march=native`; the CPU's features are part of the cache key);
        floating-point operations are never contracted into FMAs, so results keep the bits of
        the operations one by one."""
        flags = [*BASE_FLAGS, "-O3", "-march=native", "-ffp-contract=off", "-fno-math-errno",
                 *self.translate_options(options)[0]]
        key = KernelCache.key("hxsim-host", source, " ".join(flags), self.header_version,
                              self.identity, _host_cpu(), *self.includes)

        def build() -> bytes:
            pch = self.precompiled_header()
            header_dir = pch if pch is not None else INCLUDE_DIR
            with tempfile.TemporaryDirectory(dir=self.workdir) as tmp:
                src, out = Path(tmp) / "fused.cpp", Path(tmp) / "fused.so"
                src.write_text(source)
                includes = [f"-I{header_dir}"] + [f"-isystem{d}" for d in self.includes]
                self._run([self.cxx, *flags, *includes, "-include",
                           str(header_dir / "hxsim.h"), "-x", "c++", "-shared", str(src),
                           "-Wl,-z,lazy", "-o", str(out)],
                          "compiling a fused expression for the CPU")
                return out.read_bytes()

        return key, self.cache.get_or_compile(key, build)

    def load_host(self, key: str, binary: bytes) -> ctypes.CDLL:
        """dlopen what `compile_host` built. Bound lazily: the header's assertion hook refers to
        the simulator's runtime, which host code never calls."""
        return ctypes.CDLL(str(self._materialise(key, binary)), mode=os.RTLD_LAZY | os.RTLD_LOCAL)

    def load(self, key: str, binary: bytes) -> ctypes.CDLL:
        """dlopen a compiled module (its hxsim_* references resolve against the runtime)."""
        path = self._materialise(key, binary)
        try:
            return ctypes.CDLL(str(path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
        except OSError as exc:
            raise CompileError(f"the compiled module does not load: {exc} (a __device__ function "
                               "declared but never defined?)") from exc
