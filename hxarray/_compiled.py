"""The hand-written speedups (hxarray/_speedups.c: the Array's base type and operator slots), or
None: absent where the extension was not built (no C compiler at install time), with
HXARRAY_PURE_PYTHON=1, or where a module they work with runs from its Python source
(`hxarray.hal.sources`): the HAL's memory types (hal/allocator.py), the Array (_array.py, whose
constructor sets the C fields), or the CPU backend's compiled executor
(backends/cpu/fastpath.py, which the operator slots call). Without them the Array is its Python
source, and so is every namespace function.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .hal import allocator
from .hal.sources import compiled, loads_compiled

FAST_PATH = "hxarray.backends.cpu.fastpath"  # imported by the CPU backend, where `speedups` is

speedups: ModuleType | None = None
if compiled(allocator.__file__) and loads_compiled("hxarray._array") and \
        loads_compiled(FAST_PATH):  # the speedups read the layout of their types
    try:
        speedups = importlib.import_module("hxarray._speedups")
    except ImportError:  # pragma: no cover - installs without a C compiler
        speedups = None
