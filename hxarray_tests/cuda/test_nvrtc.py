"""NVRTC verification (make cuda-check) and the signature parser of the typed launch layer."""

from __future__ import annotations

from pathlib import Path

import pytest

from hxarray.backends import codegen
from hxarray.backends.codegen.compiler import CompileError
from hxarray.backends.cuda import nvrtc
from hxarray.backends.cuda.driver import ParamInfo
from hxarray.backends.cuda.raw import parse_params, to_kernel_args
from hxarray.hal.kernel_cache import KernelCache

from .conftest import KERNELS

pytestmark = pytest.mark.skipif(not nvrtc.available(), reason="NVRTC (hxarray[cuda-check]) "
                                "is not installed")


def test_version_and_a_cubin() -> None:
    major, minor = nvrtc.version()
    assert major >= 12
    cubin, log = nvrtc.compile_source('extern "C" __global__ void k(float* x) { x[0] = 1; }',
                                      arch="sm_90")
    assert cubin[:4] == b"\x7fELF" and log == ""


def test_errors_and_warnings_fail(tmp_path: Path) -> None:
    with pytest.raises(CompileError, match=r"(?s)NVRTC rejects bad.cu for sm_80:.*undefined"):
        nvrtc.verify('extern "C" __global__ void k(int* x) { x[0] = nope; }', "bad.cu")
    warns = 'extern "C" __global__ void k(int* x) { int unused = 1; x[0] = 2; }'
    with pytest.raises(CompileError, match="NVRTC warns about warn.cu"):
        nvrtc.verify(warns, "warn.cu", archs=("sm_80",))
    cache = KernelCache(tmp_path)
    good = 'extern "C" __global__ void k(int* x) { x[0] = 1; }'
    nvrtc.verify(good, "good.cu", cache=cache)
    nvrtc.verify(good, "good.cu", cache=cache)
    assert (cache.compiles, cache.hits) == (2, 2)  # one per architecture, then cached


def test_templates_are_checked_through_name_expressions() -> None:
    code = "template <class T> __global__ void k(T* x) { x[0] = T(1) / x[1].missing; }"
    nvrtc.verify(code, "t.cu")  # never instantiated: NVRTC only parses it
    with pytest.raises(CompileError, match="missing"):
        nvrtc.verify(code, "t.cu", name_expressions=["k<float>"])


def test_sources_in_reads_options_and_expressions(tmp_path: Path) -> None:
    (tmp_path / "a.cu").write_text("// nvrtc-options: -DA=1 -DB=2\n"
                                   "// name-expressions: f<float, 2>, g<int>\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.cu").write_text("")
    found = nvrtc.sources_in(tmp_path)
    assert [(Path(n).name, o, e) for n, _, o, e in found] == [
        ("a.cu", ["-DA=1", "-DB=2"], ["f<float, 2>", "g<int>"]), ("b.cu", [], [])]


def test_registered_providers_and_main(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nvrtc, "_providers", [])
    monkeypatch.setattr(codegen, "all_sources", list)  # the backend's own: make cuda-check
    with pytest.raises(TypeError, match="callable"):
        nvrtc.register_source_provider("not callable")  # type: ignore[arg-type]
    nvrtc.register_source_provider(lambda: [
        ("gen.cu", 'extern "C" __global__ void g(float* x) { x[0] = VALUE; }', ["-DVALUE=2"],
         [])])
    assert [name for name, *_ in nvrtc.iter_sources()] == ["gen.cu"]
    assert nvrtc.main(["--arch", "sm_80"]) == 0
    assert "1 sources x 1 architectures (sm_80) = 1 compilations, 0 failed" in \
        capsys.readouterr().out
    (tmp_path / "broken.cu").write_text('extern "C" __global__ void b() { oops; }')
    assert nvrtc.main([str(tmp_path), "--arch", "sm_80"]) == 1
    assert "FAIL NVRTC rejects" in capsys.readouterr().err


def test_every_test_kernel_passes_nvrtc_for_both_architectures(kernel_cache: KernelCache
                                                               ) -> None:
    """What `make cuda-check` runs, with the session's cache."""
    sources = nvrtc.sources_in(KERNELS)
    assert len(sources) >= 14
    for name, code, options, expressions in sources:
        nvrtc.verify(code, name, options, expressions, cache=kernel_cache)


def test_parse_params_from_declarations() -> None:
    code = '''
    extern "C" __global__ void a(const float* __restrict__ x, int n, unsigned long long m,
                                 double d, bool flag, complex<float> z, size_t s) {}
    extern "C" __global__ void b() {}
    extern "C" __global__ void c(MyStruct s) {}
    // extern "C" __global__ void commented(float x) {}
    '''
    assert parse_params(code, "a") == (
        ParamInfo(8, 8, "pointer"), ParamInfo(4, 4, "signed"), ParamInfo(8, 8, "unsigned"),
        ParamInfo(8, 8, "float"), ParamInfo(1, 1, "bool"), ParamInfo(8, 8, "other"),
        ParamInfo(8, 8, "unsigned"))
    assert parse_params(code, "b") == ()
    assert parse_params(code, "c") is None  # unknown type: no checking rather than a guess
    assert parse_params(code, "commented") is None


def test_to_kernel_args() -> None:
    import numpy as np

    params = (ParamInfo(8, 8, "pointer"), ParamInfo(2, 2, "unsigned"), ParamInfo(8, 8, "float"),
              ParamInfo(1, 1, "bool"))
    typed = to_kernel_args(params, [4096, 7, 1, True])
    assert [a.dtype for a in typed] == [np.uintp, np.uint16, np.float64, np.bool_]
    with pytest.raises(OverflowError, match="does not fit.*uint16"):
        to_kernel_args(params, [0, -1, 1.0, True])
    with pytest.raises(TypeError, match="2-byte unsigned parameter, got numpy.int16"):
        to_kernel_args(params, [0, np.int16(1), 1.0, True])
    with pytest.raises(TypeError, match="bool parameter"):
        to_kernel_args(params, [0, 1, 1.0, "yes"])

    class Foreign:
        __cuda_array_interface__ = {"data": (12345, False), "shape": (1,), "typestr": "<f4"}

    assert to_kernel_args(params, [Foreign(), 1, 2.0, False])[0] == 12345
    assert to_kernel_args(None, [np.int8(1)])[0] == 1
    with pytest.raises(TypeError, match="parameter types are unknown"):
        to_kernel_args(None, [1])
    with pytest.raises(TypeError, match="tuple or list"):
        to_kernel_args(params, np.zeros(4))
