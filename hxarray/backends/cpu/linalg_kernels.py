"""numpy kernels for the `linalg` and `fft` extensions, by spec name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

LINALG: dict[str, Callable[..., Any]] = {}
FFT: dict[str, Callable[..., Any]] = {}
