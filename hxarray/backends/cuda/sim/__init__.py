"""The CUDA simulator: runs unmodified CUDA C on the CPU (see docs/cuda.md)."""

from .driver import SimDriver, settings_from_env

__all__ = ["SimDriver", "settings_from_env"]
