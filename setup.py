"""The compiled parts, both optional: an install without a C compiler (or, outside pip's build
isolation, without Cython) still works, on the Python source alone and more slowly.

- `COMPILED`: modules that Cython compiles from their own Python source, unchanged: the same
  source that `HXARRAY_PURE_PYTHON=1` runs interpreted (`hxarray/hal/sources.py` loads it there).
  A `.pxd` beside a module declares C types for it (the HAL's block, buffer and allocator; the
  reductions' fast path, which reads an array's fields through `hxarray/_speedups.h`).
- `hxarray/_speedups.c`: hand-written C (docs/hal.md, "Compiled twins"), which reads the
  layout of the HAL's compiled types from the headers Cython generates for them.

Everything else about the package is in pyproject.toml."""

import os

from setuptools import Extension, setup

# The HAL's memory types and the namespace and CPU-backend modules on every small call's path.
COMPILED = [
    "hxarray/hal/allocator.py", "hxarray/hal/device.py",
    "hxarray/_adapter.py", "hxarray/_array.py", "hxarray/_array_methods.py", "hxarray/_checks.py",
    "hxarray/_creation.py", "hxarray/_data_types.py", "hxarray/_dtypes.py", "hxarray/_indexing.py",
    "hxarray/_layout.py", "hxarray/_manipulation.py",
    "hxarray/_modes.py", "hxarray/_numpy_mode.py", "hxarray/_observed.py",
    "hxarray/_searching.py", "hxarray/_sorting.py", "hxarray/_statistical.py",
    "hxarray/_utility.py", "hxarray/_views.py", "hxarray/backends/cpu/backend.py",
    "hxarray/backends/cpu/fastpath.py",
    "hxarray/backends/cpu/kernels.py", "hxarray/backends/registry.py",
]

# Python's semantics, unchanged: annotations are not C types, nothing is inferred as one.
DIRECTIVES = {"language_level": 3, "binding": True, "annotation_typing": False,
              "infer_types": False}


def _compiled() -> list[Extension]:
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("hxarray: Cython is not installed; its modules will run on the Python source")
        return []
    modules = [Extension(path[:-3].replace("/", "."), [path], optional=True,
                         include_dirs=["hxarray"]) for path in COMPILED]
    return cythonize(modules, compiler_directives=DIRECTIVES, build_dir="build/cython",
                     nthreads=os.cpu_count() or 1, quiet=True)


compiled = _compiled()  # first: it writes the headers _speedups.c includes
setup(ext_modules=[*compiled] + ([Extension(
          "hxarray._speedups", ["hxarray/_speedups.c"], optional=True, extra_compile_args=["-O2"],
          include_dirs=["build/cython/hxarray", "build/cython/hxarray/hal",
                        "build/cython/hxarray/backends/cpu"])] if compiled else []),
      options={"build_ext": {"parallel": os.cpu_count() or 1}})
