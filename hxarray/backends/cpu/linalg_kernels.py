"""numpy kernels for the `linalg` and `fft` extensions, by spec name.

The namespace has checked every argument; a kernel takes numpy views (any strides, stacks in the
leading axes) plus the keyword parameters the namespace resolved, and returns numpy arrays of the
result dtypes the standard names. numpy's `LinAlgError` (a ValueError) reports singular or
indefinite input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def _complex(a: np.ndarray) -> np.ndarray:
    """`a` as the complex dtype of its precision (numpy's eig returns real arrays when it can)."""
    return a.astype(np.result_type(a.dtype, np.complex64), copy=False)


def _eig(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    eigenvalues, eigenvectors = np.linalg.eig(a)
    return _complex(eigenvalues), _complex(eigenvectors)


def _eigvals(a: np.ndarray) -> np.ndarray:
    return _complex(np.linalg.eigvals(a))


# Parameters: cholesky(upper), qr(mode), svd(full_matrices); solve(a, b) with numpy 2's rule that
# only a 1-D b is a vector. numpy keeps float32/complex64 precision in all of them.
LINALG: dict[str, Callable[..., Any]] = {
    **{name: getattr(np.linalg, name) for name in (
        "cholesky", "det", "eigh", "eigvalsh", "inv", "qr", "slogdet", "solve", "svd", "svdvals")},
    "eig": _eig,
    "eigvals": _eigvals,
}

# Parameters: n, axis, norm (1-D transforms) or s, axes, norm (n-D transforms), all resolved to
# concrete values by the namespace. numpy >= 2 keeps float32/complex64 precision.
FFT: dict[str, Callable[..., Any]] = {
    name: getattr(np.fft, name) for name in (
        "fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft")}
