"""pytest plug-in: marray's tests with hxarray among the namespaces they are parametrized with.

marray's test module parametrizes its tests with a module-level list of namespaces (`xps`: numpy,
array-api-strict and whichever of PyTorch, CuPy and JAX import). This plug-in, loaded with `-p
conformance.marray.plugin`, appends hxarray to that list when the module is collected, and keeps
only the tests of one namespace: HXARRAY_MARRAY_NAMESPACE (`hxarray`, the default, or
`array_api_strict` or `numpy`, run the same way for comparison), chosen by the parameter's value
since marray's test ids number the namespaces. Nothing of marray is changed.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

NAMESPACES = ("hxarray", "array_api_strict", "numpy")


def _selected() -> Any:
    import importlib

    name = os.environ.get("HXARRAY_MARRAY_NAMESPACE", "hxarray")
    if name not in NAMESPACES:
        raise pytest.UsageError(f"HXARRAY_MARRAY_NAMESPACE={name!r}; expected one of "
                                f"{', '.join(NAMESPACES)}")
    return importlib.import_module(name)


def pytest_collectstart(collector: pytest.Collector) -> None:
    if isinstance(collector, pytest.Module) and hasattr(collector.obj, "xps"):
        import hxarray

        if hxarray not in collector.obj.xps:
            collector.obj.xps.append(hxarray)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    selected = _selected()
    keep, drop = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        ours = callspec is not None and callspec.params.get("xp") is selected
        (keep if ours else drop).append(item)
    config.hook.pytest_deselected(items=drop)
    items[:] = keep
