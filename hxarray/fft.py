"""The `fft` extension (spec: "Fourier Transform Functions")."""

from __future__ import annotations

__all__: list[str] = []
