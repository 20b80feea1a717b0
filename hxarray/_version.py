"""The version of the standard this namespace presents.

2025.12 by default; `ARRAY_API_TESTS_VERSION` (the variable array-api-tests uses) selects one of
the earlier supported versions, whose few observable differences (lists instead of tuples from
`broadcast_arrays`, `meshgrid` and `devices()`) then apply.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

SUPPORTED_API_VERSIONS = ("2023.12", "2024.12", "2025.12")

API_VERSION = os.environ.get("ARRAY_API_TESTS_VERSION", "2025.12")
if API_VERSION not in SUPPORTED_API_VERSIONS:
    API_VERSION = "2025.12"


def sequence_result(items: Iterable[Any]) -> tuple[Any, ...] | list[Any]:
    """A tuple (2025.12) or a list (earlier versions), for functions whose return type changed."""
    return tuple(items) if API_VERSION >= "2025.12" else list(items)
