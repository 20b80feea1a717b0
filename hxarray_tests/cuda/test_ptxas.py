"""ptxas's resource report (make cuda-check) and what it holds the generated kernels to: no stack
frame or spill, 128-bit accesses on the element-wise contiguous path, reductions with at least
two resident blocks per SM; and the generated code's 64-bit-safe grid-stride loop."""

from __future__ import annotations

import pytest

from hxarray.backends import codegen
from hxarray.backends.codegen import elementwise as ew
from hxarray.backends.codegen.compiler import CompileError
from hxarray.backends.cuda import nvrtc, ptxas
from hxarray.hal.kernel_cache import KernelCache

pytestmark = pytest.mark.skipif(not nvrtc.available() or ptxas.find() is None,
                                reason="NVRTC and ptxas (hxarray[cuda-check]) are not installed")

LOCAL_ARRAY = r'''extern "C" __global__ void spill(const int* index, float* out) {
    float table[64];  // written at data-dependent places: it lives on the stack
    for (int i = 0; i < 64; ++i) table[i] = out[i];
    for (int i = 0; i < 64; ++i) table[index[i] & 63] += out[64 + i];
    out[threadIdx.x] = table[index[threadIdx.x] & 63];
}'''


def test_occupancy_follows_the_occupancy_calculator() -> None:
    assert ptxas.occupancy(32, 0, 256) == (8, 1.0)  # 2048 threads: the SM's maximum
    assert ptxas.occupancy(64, 0, 256) == (4, 0.5)  # 64 x 256 x 4 fills 65536 registers
    assert ptxas.occupancy(60, 0, 1024) == (1, 0.5)  # rounded up to 64 per thread
    assert ptxas.occupancy(255, 0, 128) == (2, 0.125)
    assert ptxas.occupancy(16, 100 * 1024, 128) == (2, 0.125)  # shared memory bounds it
    assert ptxas.occupancy(16, 0, 32) == (32, 0.5)  # at most 32 blocks


def test_report_counts_registers_stack_and_wide_accesses() -> None:
    code = r'''extern "C" __global__ void __launch_bounds__(128) copy4(const float4* a, float4* b) {
        b[threadIdx.x] = a[threadIdx.x];
    }'''
    (plain,) = nvrtc.resources(code, "copy4.cu")
    assert plain.name == "copy4" and plain.stack == plain.spill_stores == 0
    assert plain.threads == 128 and plain.wide_accesses == 2 and 0 < plain.registers <= 32
    assert plain.blocks_per_sm == 16 and plain.occupancy == 1.0
    (spilled,) = nvrtc.resources(LOCAL_ARRAY, "spill.cu")
    assert spilled.stack >= 256 and spilled.threads == ptxas.DEFAULT_BLOCK


def test_problems_name_the_rule_broken() -> None:
    (spilled,) = nvrtc.resources(LOCAL_ARRAY, "spill.cu")
    assert ptxas.problems("user/spill.cu", [spilled]) == []  # only the backend's families
    (message, no_vectors) = ptxas.problems("elementwise/spill.cu", [spilled])
    assert "bytes of stack frame" in message and "none allowed" in message
    assert "no 128-bit global access" in no_vectors
    crowded = ptxas.KernelReport("r", 128, 0, 0, 0, 0, 512, 1, 0.25, 0, 1, False)
    (message,) = ptxas.problems("reduction/r.cu", [crowded])
    assert "1 resident block(s) per SM" in message


def test_main_fails_on_a_stack_frame(capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nvrtc, "_providers", [])
    monkeypatch.setattr(codegen, "all_sources", lambda: [("indexing/spill.cu", LOCAL_ARRAY, [],
                                                          [])])
    assert nvrtc.main(["--arch", "sm_90", "--jobs", "1"]) == 1
    captured = capsys.readouterr()
    assert "indexing/spill.cu:" in captured.out and " B stack" in captured.out
    assert "FAIL ptxas: indexing/spill.cu for sm_90" in captured.err
    monkeypatch.setenv("HXARRAY_PTXAS", "/nonexistent/ptxas")
    with pytest.raises(CompileError, match="ptxas"):
        nvrtc.resources(LOCAL_ARRAY, "spill.cu")


@pytest.mark.parametrize("family", ["elementwise/add.cu", "elementwise/where.cu",
                                    "elementwise/exp.cu", "elementwise/isnan.cu",
                                    "reduction/sum.cu", "reduction/argmax.cu",
                                    "scan/cumulative_sum.cu", "indexing/gather.cu"])
def test_generated_kernels_keep_the_rules(family: str) -> None:
    """A sample of what make cuda-check checks over every source."""
    (name, code, options, expressions), = [s for s in codegen.all_sources() if s[0] == family]
    reports = nvrtc.resources(code, name, options, expressions)
    assert len(reports) == len(expressions)
    assert ptxas.problems(name, reports) == []
    if family == "elementwise/add.cu":
        f32 = next(r for r in reports if "hx::f32, hx::f32, hx::f32, hx::f32, hx::i32" in r.name)
        assert f32.wide_accesses >= 3  # two 128-bit loads and a 128-bit store
    if family.startswith("reduction/"):
        assert all(r.threads == 256 and r.blocks_per_sm >= 2 for r in reports)


def test_grid_stride_loop_never_wraps(kernel_cache: KernelCache) -> None:
    """A copy with a 16-bit index (a small stand-in for int32) over 32000 elements by 4096
    threads: the last stride would pass 32767 and wrap negative; it stops at the end instead,
    so every element is written once and nothing past the end (check mode faults on it)."""
    import numpy as np

    from hxarray.backends.cuda.sim import SimDriver

    checked = SimDriver(devices=1, check=True, watchdog=10.0, cache=kernel_cache)
    name = "hx::map1<hx::ops::k_copy, hx::f32, hx::f32, hx::f32, hx::i16>"
    module = checked.compile(0, ew.source(ew.COPY), codegen.OPTIONS, [name])
    n = 32000
    host = np.arange(n, dtype=np.float32)
    stream = checked.default_stream(0)
    src, dst = checked.malloc(0, host.nbytes), checked.malloc(0, host.nbytes)
    checked.copy_host_to_device(src, host, host.nbytes, stream)
    checked.memset(dst, 0, host.nbytes, stream)
    for kind in (ew.STRIDED, ew.CONTIGUOUS):
        args = [ew.pack_operand(src, (4,)), ew.pack_output(dst, (4,)), ew.pack_shape((n,), kind)]
        checked.launch(module.get_function(name), (16, 1, 1), (256, 1, 1), args, 0, stream)
        out = np.empty_like(host)
        checked.copy_device_to_host(out, dst, out.nbytes, stream)
        checked.stream_synchronize(stream)
        np.testing.assert_array_equal(out, host)


def test_only_libdevice_trig_reduction_may_use_the_stack() -> None:
    """Complex exp calls sincosf, whose large-argument reduction keeps 28 bytes on the stack:
    allowed (and named in the report); the same bytes in a real kernel are not."""
    (name, code, options, _), = [s for s in codegen.all_sources() if s[0] == "elementwise/exp.cu"]
    c64 = "hx::map1<hx::ops::k_exp, hx::c64, hx::c64, hx::c64, hx::i32>"
    (report,) = nvrtc.resources(code, name, options, [c64])
    assert report.trig_reduction and 0 < report.stack <= ptxas.TRIG_REDUCTION_STACK
    assert "trig argument reduction" in report.line() and ptxas.problems(name, [report]) == []
    import dataclasses

    real = "hx::map1<hx::ops::k_exp, hx::f32, hx::f32, hx::f32, hx::i32>"
    (message,) = ptxas.problems(name, [dataclasses.replace(report, trig_reduction=False,
                                                           name=real)])
    assert "bytes of stack frame" in message
