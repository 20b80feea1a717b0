"""pytest plug-in: scikit-learn's array-API tests, with hxarray among the namespaces they test.

scikit-learn parametrizes its array-API tests with `yield_namespace_device_dtype_combinations`,
`yield_mixed_namespace_input_permutations` (mixed inputs) and, for estimators, the
`check_array_api_*` checks built from them. This plug-in, loaded with `-p
conformance.sklearn.plugin` before scikit-learn's test modules are collected, wraps those
generators so that they also yield hxarray: on the CPU in float64 and float32, on every other
device hxarray can use (e.g. `cuda:0`; or the devices HXARRAY_SKLEARN_DEVICES lists), and mixed
with numpy and array-api-strict inputs. Nothing
of scikit-learn is changed or skipped; select the hxarray cases with `-k hxarray`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # before scipy and scikit-learn are imported

import sklearn.utils._array_api as array_api  # noqa: E402

NAMESPACE = "hxarray"
_namespaces = array_api.yield_namespaces
_combinations = array_api.yield_namespace_device_dtype_combinations
_mixed = array_api.yield_mixed_namespace_input_permutations


def devices() -> list[str]:
    """The hxarray devices to test: HXARRAY_SKLEARN_DEVICES (comma-separated) if set, else the
    CPU and every other device that works here (the test-only toy and ref devices left out)."""
    chosen = os.environ.get("HXARRAY_SKLEARN_DEVICES", "").strip()
    if chosen:
        return [d.strip() for d in chosen.split(",") if d.strip()]
    import hxarray

    found = ["cpu"]
    for device in hxarray.__array_namespace_info__().devices():
        if str(device) != "cpu" and device.type.name not in ("toy", "ref"):
            found.append(str(device))
    return found


def yield_namespaces(include_numpy_namespaces: bool = True) -> Iterator[str]:
    yield from _namespaces(include_numpy_namespaces)
    yield NAMESPACE


def yield_namespace_device_dtype_combinations(
        include_numpy_namespaces: bool = True) -> Iterator[tuple[str, Any, Any]]:
    for combination in _combinations(include_numpy_namespaces):
        if combination[0] != NAMESPACE:  # the original yields it as (hxarray, None, None)
            yield combination
    for device in devices():
        for dtype in ("float64", "float32"):
            yield NAMESPACE, device, dtype


def yield_mixed_namespace_input_permutations() -> Iterator[tuple[Any, Any, str]]:
    yield from _mixed()
    pair = array_api.NamespaceAndDevice
    for device in devices():
        yield pair("numpy", None), pair(NAMESPACE, device), f"numpy to hxarray {device}"
        yield pair(NAMESPACE, device), pair("numpy", None), f"hxarray {device} to numpy"
        yield pair("array_api_strict", "device1"), pair(NAMESPACE, device), \
            f"array_api_strict to hxarray {device}"
        if device != "cpu":
            yield pair(NAMESPACE, "cpu"), pair(NAMESPACE, device), \
                f"hxarray cpu to hxarray {device}"


array_api.yield_namespaces = yield_namespaces
array_api.yield_namespace_device_dtype_combinations = yield_namespace_device_dtype_combinations
array_api.yield_mixed_namespace_input_permutations = yield_mixed_namespace_input_permutations
