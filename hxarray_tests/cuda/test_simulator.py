"""Simulator-only behaviour: failure modes reported as KernelError (never a crash or a hang),
check mode, the watchdog, unsupported features, settings, driver selection."""

from __future__ import annotations

import ctypes
import fcntl
import gc
import os
import select
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from hxarray.backends.codegen import compiler
from hxarray.backends.codegen.compiler import (
    CompileError,
    HostCompiler,
    kernel_names,
    unsupported_features,
)
from hxarray.backends.cuda.driver import CUDAUnavailableError, KernelError, Module, load_driver
from hxarray.backends.cuda.sim import SimDriver, settings_from_env
from hxarray.hal.kernel_cache import KernelCache

from .conftest import DeviceArrays, source

Compile = Callable[..., Module]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def checked(kernel_cache: KernelCache) -> SimDriver:
    """Check mode on, a short watchdog."""
    return SimDriver(devices=1, check=True, watchdog=1.0, cache=kernel_cache)


@pytest.fixture
def checked_mem(checked: SimDriver) -> Iterator[DeviceArrays]:
    arrays = DeviceArrays(checked)
    arrays.stream = checked.create_stream(0)
    yield arrays
    checked.stream_synchronize(arrays.stream)
    for index, address in arrays.allocations:
        checked.free(index, address)
    checked.destroy_stream(arrays.stream)


def _run(driver: SimDriver, arrays: DeviceArrays, module: Module, name: str, grid: int,
         block: int, *args: np.generic) -> None:
    driver.launch(module.get_function(name), (grid, 1, 1), (block, 1, 1), args, 0, arrays.stream)
    driver.stream_synchronize(arrays.stream)


def test_divergent_barrier_is_a_kernel_error(checked: SimDriver, checked_mem: DeviceArrays,
                                             compile_kernel: Compile) -> None:
    module = compile_kernel(checked, "failures.cu")
    out = checked_mem.zeros(64 * 4)
    with pytest.raises(KernelError, match=r"kernel 'divergent_barrier' block \(0, 0, 0\) "
                       r"thread \(16, 0, 0\): waits at the __syncthreads\(\) of line 7 while "
                       r"thread \(0, 0, 0\) waits at the one of line 4"):
        _run(checked, checked_mem, module, "divergent_barrier", 1, 64, out)


def test_early_exit_before_a_barrier(sim: SimDriver, checked: SimDriver,
                                     checked_mem: DeviceArrays, sim_mem: DeviceArrays,
                                     compile_kernel: Compile) -> None:
    module = compile_kernel(sim, "failures.cu")
    out = sim_mem.zeros(32 * 4)
    _run(sim, sim_mem, module, "early_exit_barrier", 1, 32, out)  # Volta+: exited = arrived
    np.testing.assert_array_equal(sim_mem.get(out, 32, np.int32), [1] * 16 + [0] * 16)
    strict = checked_mem.zeros(32 * 4)
    with pytest.raises(KernelError, match=r"thread \(16, 0, 0\): returned before a "
                       r"__syncthreads\(\)"):
        _run(checked, checked_mem, compile_kernel(checked, "failures.cu"),
             "early_exit_barrier", 1, 32, strict)


def test_inconsistent_warp_mask(sim: SimDriver, sim_mem: DeviceArrays, compile_kernel: Compile
                                ) -> None:
    module = compile_kernel(sim, "failures.cu")
    out = sim_mem.zeros(32 * 4)
    stream = sim.create_stream(0)
    sim_mem.stream = stream
    with pytest.raises(KernelError, match=r"kernel 'bad_mask' block \(0, 0, 0\) thread "
                       r"\(0, 0, 0\): warp collective with mask 0xffffffff waits for lanes "
                       r"\{16,.*,31\} that never arrive \(lane 16 has exited\)"):
        _run(sim, sim_mem, module, "bad_mask", 1, 32, out)
    sim.destroy_stream(stream)


def test_out_of_bounds_in_check_mode(checked: SimDriver, checked_mem: DeviceArrays,
                                     compile_kernel: Compile) -> None:
    module = compile_kernel(checked, "failures.cu")
    n = 1000
    x = checked_mem.zeros(n * 4)
    with pytest.raises(KernelError, match=r"kernel 'out_of_bounds' block \(0, 0, 0\) thread "
                       r"\(0, 0, 0\): invalid memory access \(SIGSEGV\) at address 0x[0-9a-f]+; "
                       r"that is 0 bytes past the end of the 4000-byte allocation") as info:
        _run(checked, checked_mem, module, "out_of_bounds", 1, 256, x, np.int32(n))
    assert info.value.address == int(x) + 4000
    assert info.value.allocation == (int(x), 4000)
    # the driver keeps working afterwards
    _run(checked, checked_mem, module, "trap_kernel", 1, 2, x)
    np.testing.assert_array_equal(checked_mem.get(x, 2, np.int32), [1, 1])


def test_static_shared_overrun_in_check_mode(checked: SimDriver, checked_mem: DeviceArrays,
                                             compile_kernel: Compile) -> None:
    out = checked_mem.zeros(64 * 4)
    with pytest.raises(KernelError, match=r"kernel 'shared_overrun' block \(0, 0, 0\) thread "
                       r"\(32, 0, 0\): illegal instruction.*fixed-size array"):
        _run(checked, checked_mem, compile_kernel(checked, "failures.cu"), "shared_overrun", 1,
             64, out)


def test_runaway_kernel_is_stopped_by_the_watchdog(checked: SimDriver,
                                                   checked_mem: DeviceArrays,
                                                   compile_kernel: Compile) -> None:
    module = compile_kernel(checked, "failures.cu")
    flag = checked_mem.zeros(4)
    with pytest.raises(KernelError, match=r"'runaway' ran longer than the watchdog's 1 s"):
        _run(checked, checked_mem, module, "runaway", 4, 64, flag)


@pytest.mark.parametrize("kernel, message", [
    ("trap_kernel", r"thread \(3, 0, 0\): __trap\(\) called"),
    ("assert_kernel", r"thread \(5, 0, 0\): assertion 'threadIdx.x != 5' failed"),
])
def test_trap_and_assert(sim: SimDriver, compile_kernel: Compile, kernel: str,
                         message: str) -> None:
    arrays = DeviceArrays(sim)
    arrays.stream = sim.create_stream(0)
    x = arrays.zeros(64 * 4)
    with pytest.raises(KernelError, match=message):
        _run(sim, arrays, compile_kernel(sim, "failures.cu"), kernel, 1, 64, x)
    arrays.free_all()
    sim.destroy_stream(arrays.stream)


def test_integer_division_by_zero(sim: SimDriver, compile_kernel: Compile) -> None:
    arrays = DeviceArrays(sim)
    arrays.stream = sim.create_stream(0)
    x = arrays.put(np.arange(32, dtype=np.int32))
    with pytest.raises(KernelError, match=r"SIGFPE"):
        _run(sim, arrays, compile_kernel(sim, "failures.cu"), "divide", 1, 32, x, np.int32(0))
    arrays.free_all()
    sim.destroy_stream(arrays.stream)


def test_errors_never_take_the_process_down(kernel_cache: KernelCache) -> None:
    """A fault without check mode and a stack overflow, in a child process that must exit 0."""
    code = r'''
import numpy as np
from hxarray.backends.cuda.sim import SimDriver
from hxarray.backends.cuda.driver import KernelError
d = SimDriver()
s = d.create_stream(0)
m = d.compile(0, """
extern "C" __global__ void wild(float* p) { p[threadIdx.x * 1000000000LL] = 1.0f; }
__device__ int deep(int n) {
    volatile char pad[4096];
    pad[0] = n;
    return n ? deep(n - 1) + pad[0] : 0;
}
extern "C" __global__ void recurse(int* out) { out[0] = deep(100000); }
""")
x = d.malloc(0, 64)
for name, args in (("wild", (np.uintp(0),)), ("recurse", (np.uintp(x),))):
    d.launch(m.get_function(name), (1, 1, 1), (4, 1, 1), args, 0, s)
    try:
        d.stream_synchronize(s)
    except KernelError as e:
        print("caught:", e)
    else:
        raise SystemExit("no error")
'''
    out = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code],
                         capture_output=True, text=True, cwd=REPO, timeout=300,
                         env={**os.environ, "HXARRAY_CUDA_SIM_CHECK": "0",
                              "HXARRAY_KERNEL_CACHE": str(kernel_cache.directory)})
    assert out.returncode == 0, out.stderr
    assert "caught: kernel 'wild'" in out.stdout and "SIGSEGV" in out.stdout
    assert "caught: kernel 'recurse'" in out.stdout and "stack overflow" in out.stdout


def test_a_forked_child_gets_an_error_not_a_hang(sim: SimDriver) -> None:
    module = sim.compile(0, 'extern "C" __global__ void k(int* x) { x[0] = 1; }')
    x = sim.malloc(0, 4)
    stream = sim.create_stream(0)
    sim.launch(module.get_function("k"), 1, 1, (np.uintp(x),), 0, stream)
    sim.stream_synchronize(stream)  # the pool has started
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one launch straight through the runtime (no new threads)
        error = ctypes.create_string_buffer(1024)
        pointer = ctypes.c_uint64(x)
        args = (ctypes.c_void_p * 1)(ctypes.addressof(pointer))
        dims = (ctypes.c_uint * 6)(1, 1, 1, 1, 1, 1)
        status = sim.runtime.hxsim_launch(
            module.get_function("k").info_address, ctypes.addressof(args),
            ctypes.addressof(dims), ctypes.addressof(dims) + 12, 0, 0, 5.0, error, 1024,
            ctypes.byref(ctypes.c_ulonglong()), ctypes.byref(ctypes.c_int()))
        os.write(write, f"{status} {error.value.decode()}".encode())
        os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], 60)
    message = os.read(read, 4096).decode() if ready else "the child hung"
    if not ready:
        os.kill(pid, 9)
    os.waitpid(pid, 0)
    os.close(read)
    sim.free(0, x)
    sim.destroy_stream(stream)
    assert message.startswith("2 ")
    assert "forked after it started" in message


def test_ucontext_fibers(kernel_cache: KernelCache) -> None:
    """The portable fiber switch (other architectures) runs barriers and shuffles correctly."""
    code = r'''
import numpy as np
from pathlib import Path
from hxarray.backends.cuda.sim import SimDriver
d = SimDriver()
s = d.default_stream(0)
m = d.compile(0, Path("hxarray_tests/cuda/kernels/scan.cu").read_text())
x = np.arange(3000, dtype=np.int32) % 7 - 3
px, out = d.malloc(0, x.nbytes), d.malloc(0, x.nbytes)
d.copy_host_to_device(px, x, x.nbytes, s)
d.launch(m.get_function("block_scan"), 3, 1024, (np.uintp(px), np.uintp(out), np.int32(3000)),
         0, s)
got = np.empty_like(x)
d.copy_device_to_host(got, out, x.nbytes, s)
d.stream_synchronize(s)
expected = np.concatenate([np.cumsum(x[i:i + 1024]) for i in range(0, 3000, 1024)])
assert (got == expected).all()
print("ok")
'''
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         timeout=300, env={**os.environ, "HXARRAY_CUDA_SIM_FIBERS": "ucontext",
                                           "HXARRAY_KERNEL_CACHE": str(kernel_cache.directory)})
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_unsupported_features_are_compile_errors(sim: SimDriver) -> None:
    with pytest.raises(CompileError, match=r"line 4: inline PTX assembly \(asm\)"):
        sim.compile(0, source("unsupported.cu"))
    cases = {
        "texture<float, 1> t;": "textures",
        "#include <cooperative_groups.h>": "cooperative groups",
        "__device__ void f() { auto g = cooperative_groups::this_grid(); g.sync(); }":
            "cooperative groups",
        "#include <mma.h>\nusing namespace nvcuda;": "tensor-core",
        "__global__ void c(); __global__ void p() { c<<<1, 1>>>(); }": "dynamic parallelism",
    }
    for code, feature in cases.items():
        assert feature in " ".join(f for _, f in unsupported_features(code)), code
    # comments and strings do not count
    assert unsupported_features('// asm("x")\nconst char* s = "texture<";') == []


def test_kernel_names_found_in_source() -> None:
    code = '''extern "C" __global__ void a(int* x) {}
    extern "C" __global__ void __launch_bounds__(128) b() {}
    template <class T> __global__ void t(T* x) {}
    __global__ void cxx() {}
    // extern "C" __global__ void commented() {}
    extern "C" {
    }
    extern "C" static __global__ void c() {}'''
    assert kernel_names(code) == ["a", "b", "c"]


def test_driver_checks_argument_sizes(sim: SimDriver, sim_mem: DeviceArrays) -> None:
    module = sim.compile(0, source("elementwise.cu"))
    saxpy = module.get_function("saxpy")
    assert [p.kind for p in saxpy.params] == ["float", "pointer", "pointer", "signed"]
    x = sim_mem.zeros(16)
    with pytest.raises(TypeError, match="takes 4 arguments, 2 given"):
        sim.launch(saxpy, 1, 1, (np.float32(1), x), 0, sim_mem.stream)
    with pytest.raises(TypeError, match="argument 3 is 8 bytes.*got int32"):
        sim.launch(saxpy, 1, 1, (np.float32(1), x, x, np.int32(4)), 0, sim_mem.stream)


def test_launches_leave_no_cyclic_garbage(sim: SimDriver, sim_mem: DeviceArrays) -> None:
    # a ctypes array type made per launch became cyclic garbage (the leak loop counts cycles)
    module = sim.compile(0, source("elementwise.cu"))
    saxpy = module.get_function("saxpy")
    x, y = sim_mem.zeros(64), sim_mem.zeros(64)
    # (only ctypes objects are counted: other threads of the process, such as an earlier test's
    # stream workers, may leave garbage of their own meanwhile)
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(3):
            sim.launch(saxpy, 1, 16, (np.float32(2), x, y, np.int64(16)), 0, sim_mem.stream)
            sim.stream_synchronize(sim_mem.stream)
        gc.collect()
        made = [o for o in gc.garbage
                if type(o).__module__ == "_ctypes" or isinstance(o, ctypes.Array)
                or (isinstance(o, type) and issubclass(o, ctypes.Array))]
        assert made == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def test_options(sim: SimDriver) -> None:
    code = 'extern "C" __global__ void k(int* x) { x[0] = VALUE; }'
    assert sim.compile(0, code, ["-DVALUE=3", "--use_fast_math", "-arch=sm_80"])
    with pytest.raises(ValueError, match="--frobnicate.*not supported"):
        sim.compile(0, code, ["--frobnicate"])
    with pytest.raises(TypeError, match="sequences of strings"):
        sim.compile(0, code, "-DVALUE=1")


def test_host_memory_checks(sim: SimDriver, sim_mem: DeviceArrays) -> None:
    x = sim_mem.empty(64)
    with pytest.raises(ValueError, match="past the end of the 64-byte allocation"):
        sim.copy_host_to_device(x + 32, np.zeros(64, np.uint8), 64, sim_mem.stream)
    with pytest.raises(ValueError, match="outside every allocation"):
        sim.memset(12345, 0, 4, sim_mem.stream)
    with pytest.raises(ValueError, match="read-only"):
        sim.copy_device_to_host(np.zeros(64, np.uint8)[::1].view().setflags(write=False) or
                                np.frombuffer(bytes(64), np.uint8), x, 64, sim_mem.stream)
    with pytest.raises(ValueError, match="C-contiguous"):
        sim.copy_host_to_device(x, np.zeros(128, np.uint8)[::2], 64, sim_mem.stream)
    with pytest.raises(ValueError, match="not an allocation of cuda:1"):
        sim.free(1, x)
    with pytest.raises(MemoryError, match=r"cuda:0 \(simulated\) is out of memory: "
                       r"\d+ bytes requested"):
        sim.malloc(0, sim.memory + 1)


def test_simulated_device_properties(sim: SimDriver) -> None:
    props = sim.properties(1)
    assert props.simulated and props.name == "hxarray CUDA simulator"
    assert props.multiprocessor_count == (os.cpu_count() or 1)
    assert sim.device_count() == 2 and sim.simulated


def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HXARRAY_CUDA_SIM_DEVICES", "3")
    monkeypatch.setenv("HXARRAY_CUDA_SIM_CHECK", "1")
    monkeypatch.setenv("HXARRAY_CUDA_SIM_WATCHDOG", "2.5")
    settings = settings_from_env()
    assert (settings["devices"], settings["check"], settings["watchdog"]) == (3, True, 2.5)
    monkeypatch.setenv("HXARRAY_CUDA_SIM_DEVICES", "zero")
    with pytest.raises(ValueError, match="HXARRAY_CUDA_SIM_DEVICES='zero' is invalid"):
        settings_from_env()
    monkeypatch.setenv("HXARRAY_CUDA_SIM_DEVICES", "0")
    with pytest.raises(ValueError, match="an integer from 1 to 64"):
        settings_from_env()
    monkeypatch.setenv("HXARRAY_CUDA_SIM_DEVICES", "1")
    monkeypatch.setenv("HXARRAY_CUDA_SIM_FIBERS", "threads")
    with pytest.raises(ValueError, match="HXARRAY_CUDA_SIM_FIBERS='threads'"):
        settings_from_env()


def test_constructor_arguments(kernel_cache: KernelCache) -> None:
    with pytest.raises(ValueError, match="at least 1 device"):
        SimDriver(devices=0, cache=kernel_cache)
    with pytest.raises(ValueError, match="watchdog"):
        SimDriver(watchdog=0, cache=kernel_cache)
    with pytest.raises(ValueError, match="memory"):
        SimDriver(memory=-1, cache=kernel_cache)
    small = SimDriver(memory=1000, cache=kernel_cache)
    assert small.mem_info(0) == (1000, 1000)
    with pytest.raises(MemoryError, match="1001 bytes requested, 1000 of 1000 free"):
        small.malloc(0, 1001)


def test_a_kernel_cached_by_another_version_of_the_translator_is_not_reused(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kernel_cache: KernelCache) -> None:
    """The cache key of a simulated kernel covers the rewriting of CUDA C into C++ (compiler.py),
    not only the header and runtime: after an upgrade that changes the rewriting, the same source
    compiles afresh."""
    code = "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] += 1.0f; }"

    def key() -> str:
        host = HostCompiler(kernel_cache, tmp_path / "work", pch=False)
        return host.cache_key(code, (), ())

    translator = tmp_path / "compiler.py"
    translator.write_bytes(compiler.TRANSLATOR.read_bytes())
    monkeypatch.setattr(compiler, "TRANSLATOR", translator)
    before = key()
    assert key() == before  # (the same translator, the same key)
    translator.write_bytes(translator.read_bytes() + b"\n# another rewriting\n")
    assert key() != before


def test_load_driver(monkeypatch: pytest.MonkeyPatch, kernel_cache: KernelCache) -> None:
    monkeypatch.setenv("HXARRAY_KERNEL_CACHE", str(kernel_cache.directory))
    monkeypatch.setenv("HXARRAY_CUDA_DRIVER", "sim")
    monkeypatch.setenv("HXARRAY_CUDA_SIM_DEVICES", "2")
    driver = load_driver()
    assert driver.simulated and driver.device_count() == 2
    monkeypatch.setenv("HXARRAY_CUDA_DRIVER", "opencl")
    with pytest.raises(ValueError, match="HXARRAY_CUDA_DRIVER='opencl' is invalid"):
        load_driver()
    monkeypatch.delenv("HXARRAY_CUDA_DRIVER")
    try:
        import cupy

        has_gpu = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        has_gpu = False
    if has_gpu:
        assert not load_driver().simulated
    else:
        with pytest.raises(CUDAUnavailableError, match="CUDA is unavailable: .*"
                           "HXARRAY_CUDA_DRIVER=sim"):
            load_driver()


def test_precompiled_header_is_built(sim: SimDriver) -> None:
    pch = sim.compiler.precompiled_header()
    assert pch is not None and (pch / "hxsim.h.gch").stat().st_size > 0


def _tree(root: Path) -> dict[str, bytes | str]:
    """Every path below `root` (links not followed): a file's bytes, a link's target."""
    found: dict[str, bytes | str] = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(top) / name
            key = str(path.relative_to(root))
            found[key] = os.readlink(path) if path.is_symlink() else \
                "dir" if path.is_dir() else path.read_bytes()
    return found


def test_only_hxarrays_own_precompiled_headers_are_pruned(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    for name in ("pch-notes", "pch-2023-backup", "pch-" + "0" * 24, "pch-empty"):
        (root / name / "sub").mkdir(parents=True)
        (root / name / "sub" / "notes.txt").write_text(f"{name}: mine, not hxarray's")
    (root / ("pch-" + "0" * 24) / "hxsim.h.gch").write_bytes(b"no marker: not hxarray's")
    (root / "pch-file").write_text("a file")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / compiler._PCH_MARKER).write_bytes(compiler._PCH_MARK)
    (root / "pch-link").symlink_to(outside)  # a link is never hxarray's directory
    names = {p.name for p in root.iterdir()}
    for name in names:
        os.utime(root / name, (1, 1), follow_symlinks=False)  # the oldest of all
    theirs = _tree(root)
    for i in range(5):  # earlier headers of hxarray's, oldest first
        stale = root / f"pch-stale{i}"
        stale.mkdir()
        (stale / compiler._PCH_MARKER).write_bytes(compiler._PCH_MARK)
        (stale / "hxsim.h.gch").write_bytes(b"gch")
        os.utime(stale, (10**6 + i, 10**6 + i))
    with open(root / "pch-stale1" / compiler._PCH_MARKER, "rb") as in_use:
        fcntl.flock(in_use, fcntl.LOCK_SH)  # as a process compiling with it holds it
        host = HostCompiler(KernelCache(root), tmp_path / "work", pch=True)
        pch = host.precompiled_header()
    assert pch is not None and compiler._made_here(pch)
    assert {k: v for k, v in _tree(root).items() if k.split(os.sep)[0] in names} == theirs
    assert (outside / compiler._PCH_MARKER).exists()
    assert sorted(p.name for p in root.glob("pch-stale*")) == \
        ["pch-stale1", "pch-stale3", "pch-stale4"]


def test_unsafe_kernel_cache_is_refused_by_the_simulator_and_the_cpu_fuse(
        tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    code = ("import sys, hxarray as xp\n"
            "try:\n"
            "    xp.ones(3, device=xp.Device('cuda:0')) if sys.argv[1] == 'sim' else \\\n"
            "        xp.fuse(lambda a: a * 2 + 1)(xp.ones(5000))\n"
            "except Exception as e:\n"
            "    print(type(e).__name__, e)\n")
    for how, raised in (("sim", "DeviceUnavailableError"), ("fuse", "PermissionError")):
        out = subprocess.run([sys.executable, "-W", "ignore", "-c", code, how],
                             capture_output=True, text=True, cwd=REPO, timeout=300,
                             env={**os.environ, "HXARRAY_CUDA_DRIVER": "sim",
                                  "HXARRAY_KERNEL_CACHE": str(shared)})
        assert out.stdout.startswith(raised), (how, out.stdout, out.stderr)
        assert f"kernel cache directory {shared} can be written by others" in out.stdout
    assert list(shared.iterdir()) == []


@pytest.mark.slow
def test_the_benchmark_figures_are_measured() -> None:
    from hxarray.backends.cuda.sim.bench import measure

    figures = measure(repeat=1)  # checks its GEMM against numpy itself
    assert set(figures) == {"compile_pch", "compile_no_pch", "warm_load", "launch_queued",
                            "launch_sync", "saxpy_device_grid", "saxpy_per_element", "gemm_256"}
    assert all(0 < seconds < 60 for seconds in figures.values())


LOOP_KERNELS = r'''
extern "C" __global__ void index2d(int* out) {
    int t = threadIdx.y * blockDim.x + threadIdx.x, b = blockIdx.y * gridDim.x + blockIdx.x;
    out[b * blockDim.x * blockDim.y + t] = b * 1000 + threadIdx.y * 100 + threadIdx.x;
}
extern "C" __global__ void trap7(int* x) {
    if (blockIdx.x == 1 && threadIdx.x == 7) __trap();
    x[threadIdx.x] = 1;
}
'''


@pytest.mark.parametrize("body, loop", [
    ("out[threadIdx.x] = 1;", True),
    ("__syncthreads(); out[threadIdx.x] = 1;", False),
    ("out[threadIdx.x] = __shfl_down_sync(0xffffffffu, int(threadIdx.x), 1);", False),
    ("out[threadIdx.x] = __ballot_sync(0xffffffffu, 1);", False),
    ("__shared__ int tile[32]; tile[threadIdx.x] = 1; out[threadIdx.x] = tile[0];", False),
    ("extern __shared__ int dyn[]; dyn[threadIdx.x] = 1; out[threadIdx.x] = dyn[0];", False),
])
def test_loop_mode_is_read_from_the_compiled_module(sim: SimDriver, body: str,
                                                    loop: bool) -> None:
    module = sim.compile(0, f'extern "C" __global__ void k(int* out) {{ {body} }}')
    assert module.loop is loop


def test_loop_mode_runs_every_thread_with_its_indices(sim: SimDriver) -> None:
    module = sim.compile(0, LOOP_KERNELS)
    assert module.loop
    arrays = DeviceArrays(sim)
    arrays.stream = sim.create_stream(0)
    out = arrays.zeros(6 * 32 * 4)
    sim.launch(module.get_function("index2d"), (3, 2, 1), (8, 4, 1), (out,), 0, arrays.stream)
    sim.stream_synchronize(arrays.stream)
    b, y, x = np.meshgrid(np.arange(6), np.arange(4), np.arange(8), indexing="ij")
    expected = (b * 1000 + y * 100 + x).ravel()
    assert np.array_equal(arrays.get(out, 6 * 32, np.int32), expected)
    with pytest.raises(KernelError, match=r"block \(1, 0, 0\) thread \(7, 0, 0\): __trap"):
        _run(sim, arrays, module, "trap7", 2, 32, arrays.zeros(32 * 4))
    arrays.free_all()
    sim.destroy_stream(arrays.stream)


THREAD_KERNELS = r'''
extern "C" __global__ void each(int* out, int base, float scale) {
    int t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    int b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    int* row = out + 4 * (b * blockDim.x * blockDim.y * blockDim.z + t);
    base += t;  // a by-value parameter: the next thread starts from the caller's value again
    scale *= 2.0f;
    row[0] = threadIdx.x; row[1] = threadIdx.y * 10 + threadIdx.z * 100; row[2] = base;
    row[3] = int(scale);
}
extern "C" __global__ inline void declared_inline(int* out) { out[threadIdx.x] = 1; }
extern "C" __forceinline__ __global__ void declared_forceinline(int* out) { out[threadIdx.x] = 2; }
template <int V> __global__ void fill(int* out) { out[threadIdx.x] = V; }
template __global__ void fill<3>(int*);  // an explicit instantiation
'''


@pytest.mark.parametrize("loop", [True, False], ids=["loop", "fibers"])
def test_every_thread_gets_its_indices_and_the_launch_arguments(sim: SimDriver,
                                                                loop: bool) -> None:
    module = sim.compile(0, THREAD_KERNELS, name_expressions=["fill<3>"])
    assert module.loop
    module.loop = loop
    arrays = DeviceArrays(sim)
    grid, block = (2, 3, 1), (5, 3, 2)  # 30 threads: a block is not a whole warp
    threads = 6 * 30
    out = arrays.zeros(threads * 4 * 4)
    sim.launch(module.get_function("each"), grid, block, (out, np.int32(7), np.float32(1.5)), 0,
               arrays.stream)
    sim.stream_synchronize(arrays.stream)
    got = arrays.get(out, (threads, 4), np.int32)
    z, y, x = np.meshgrid(np.arange(2), np.arange(3), np.arange(5), indexing="ij")
    t = np.arange(30)
    one_block = np.stack([x.ravel(), y.ravel() * 10 + z.ravel() * 100, 7 + t, np.full(30, 3)], 1)
    assert np.array_equal(got, np.tile(one_block, (6, 1)))
    for name, value in [("declared_inline", 1), ("declared_forceinline", 2), ("fill<3>", 3)]:
        small = arrays.zeros(32 * 4)
        _run(sim, arrays, module, name, 1, 32, small)
        assert np.array_equal(arrays.get(small, 32, np.int32), np.full(32, value))
    arrays.free_all()
