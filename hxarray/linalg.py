"""The `linalg` extension (spec: "Linear Algebra Extension")."""

from __future__ import annotations

from ._linalg_functions import matmul, matrix_transpose, tensordot, vecdot

__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]
