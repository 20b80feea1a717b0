"""pytest plug-in: SciPy's array-API tests, with hxarray among the backends they test.

SciPy's conftest (`scipy/conftest.py`) parametrizes its `xp` fixture with the array libraries it
knows (numpy, array-api-strict, torch, ...) and reads its `skip_xp_backends` / `xfail_xp_backends`
markers against the set of known backend names. This plug-in, loaded with `-p
conformance.scipy.plugin`, adds hxarray to both when that conftest is registered (before its
fixtures are parsed): a test marked `np_only` skips hxarray as it skips every non-numpy backend,
and `cpu_only` skips it when hxarray's default device (HXARRAY_DEFAULT_DEVICE) is not the CPU.
Nothing of SciPy is changed or skipped otherwise; select the hxarray cases with `-k hxarray`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # before scipy is imported

NAMESPACE = "hxarray"


@pytest.hookimpl(tryfirst=True)
def pytest_plugin_registered(plugin: Any, plugin_name: str) -> None:
    if not plugin_name or Path(plugin_name).parts[-2:] != ("scipy", "conftest.py"):
        return
    import hxarray

    fixture = plugin.xp
    if not hasattr(fixture, "_get_wrapped_function"):
        raise RuntimeError("conformance.scipy.plugin needs pytest >= 8.4 (fixture definitions "
                           "with _get_wrapped_function)")
    plugin.xp_known_backends.add(NAMESPACE)
    if str(hxarray.__array_namespace_info__().default_device()) != "cpu":
        plugin.xp_skip_cpu_only_backends.add(NAMESPACE)
    params = [*plugin.xp_available_backends,
              pytest.param(hxarray, id=NAMESPACE, marks=pytest.mark.array_api_backends)]
    plugin.xp = pytest.fixture(params=params)(fixture._get_wrapped_function())
