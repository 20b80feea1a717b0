"""The compiled speedups: optional, so that an install without a C compiler still works (on the
pure-Python twins, more slowly). Everything else about the package is in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("hxarray._speedups", ["hxarray/_speedups.c"], optional=True,
                             extra_compile_args=["-O2"])])
