"""The CPU backend: numpy computes on views of 64-byte-aligned host buffers."""

from .backend import CpuBackend

__all__ = ["CpuBackend"]
