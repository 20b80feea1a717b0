"""The simulator where CuPy is not installed (`make run`'s environment): hxarray's kernels compile
against the copy of CuPy's complex headers that comes with hxarray and give the bits they give with
CuPy's own; a kernel of the user's that includes a missing header fails in one line that says
what to install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = r'''
import json, sys
if sys.argv[1] == "hidden":
    sys.modules["cupy"] = None  # as if CuPy were not installed
import numpy as np
import hxarray as xp
from hxarray import cuda
from hxarray.backends.codegen.compiler import CompileError, cupy_include_dirs

z = np.array([0.5 + 2j, -3 + 0.25j, 1e-30 + 1e-30j, -0.0 - 7j, 4 - 1j])
results = {"cupy_headers": bool(cupy_include_dirs())}
for dtype in (xp.complex64, xp.complex128):
    x = xp.asarray(z, dtype=dtype, device="cuda:0")
    for name in ("exp", "log", "sqrt", "sin", "tanh", "acos"):
        y = getattr(xp, name)(x).to_device("cpu")
        results[f"{name}-{dtype.name}"] = np.asarray(y).tobytes().hex()
a = xp.arange(10.0, device="cuda:0")
results["sum"] = float(xp.sum(a * a + 1))
errors = []
for header in ("cupy/carray.cuh", "my_header.h"):
    try:
        kernel = cuda.RawKernel(f'#include <{header}>\nextern "C" __global__ void k() {{}}', "k")
        kernel((1,), (1,), ())
    except CompileError as exc:
        errors.append(str(exc))
results["errors"] = errors
print(json.dumps(results))
'''


def _run(mode: str, cache: Path) -> dict[str, object]:
    env = {**os.environ, "HXARRAY_CUDA_DRIVER": "sim", "HXARRAY_KERNEL_CACHE": str(cache)}
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def hidden(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    return _run("hidden", tmp_path_factory.mktemp("kernels"))


def test_the_simulator_needs_no_cupy(hidden: dict[str, object]) -> None:
    assert hidden["cupy_headers"] is False
    assert hidden["sum"] == float(np.sum(np.arange(10.0) ** 2 + 1))
    z = np.array([0.5 + 2j, -3 + 0.25j, 1e-30 + 1e-30j, -0.0 - 7j, 4 - 1j])
    for dtype in (np.complex64, np.complex128):
        for name, expected in (("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt),
                               ("sin", np.sin), ("tanh", np.tanh), ("acos", np.arccos)):
            got = np.frombuffer(bytes.fromhex(str(hidden[f"{name}-{np.dtype(dtype).name}"])),
                                dtype=dtype)
            np.testing.assert_allclose(got, expected(z.astype(dtype)),
                                       rtol=4 * float(np.finfo(dtype).eps), err_msg=name)


def test_a_missing_header_is_one_line_naming_the_remedy(hidden: dict[str, object]) -> None:
    cupy_error, own_error = hidden["errors"]  # type: ignore[misc]
    assert "\n" not in cupy_error and "\n" not in own_error
    assert "'cupy/carray.cuh'" in cupy_error and "pip install cupy" in cupy_error
    assert "'my_header.h'" in own_error and "-I" in own_error


def test_the_same_bits_as_with_cupys_headers(hidden: dict[str, object],
                                             tmp_path: Path) -> None:
    pytest.importorskip("cupy")
    with_cupy = _run("cupy", tmp_path)
    assert with_cupy["cupy_headers"] is True
    for key, value in hidden.items():
        if key not in ("cupy_headers", "errors"):
            assert with_cupy[key] == value, key


def test_the_copy_is_cupys() -> None:
    """The headers that come with hxarray are the installed CuPy's, but for the namespace
    macros."""
    from hxarray.backends.codegen.compiler import VENDOR_DIR, cupy_include_dirs

    dirs = cupy_include_dirs()
    if not dirs:
        pytest.skip("CuPy is not installed")
    ours = sorted(p.relative_to(VENDOR_DIR) for p in (VENDOR_DIR / "cupy").rglob("*.h*"))
    assert ours
    for path in ours:
        if path.name != "namespace.h":
            assert (VENDOR_DIR / path).read_bytes() == (Path(dirs[0]) / path).read_bytes(), path
