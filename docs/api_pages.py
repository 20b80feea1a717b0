"""Writes the API reference's pages (reStructuredText with autodoc directives) from the
namespace's own lists (`__all__` of each chapter module), so that a new function appears in the
reference without editing it. Called by conf.py when the build starts."""

from __future__ import annotations

import importlib
from pathlib import Path

CHAPTERS = [  # (module, title): the standard's chapters, in its order
    ("hxarray._creation", "Creation functions"),
    ("hxarray._data_types", "Data type functions"),
    ("hxarray._elementwise", "Element-wise functions"),
    ("hxarray._indexing", "Indexing functions"),
    ("hxarray._linalg_functions", "Linear algebra functions"),
    ("hxarray._manipulation", "Manipulation functions"),
    ("hxarray._searching", "Searching functions"),
    ("hxarray._sets", "Set functions"),
    ("hxarray._sorting", "Sorting functions"),
    ("hxarray._statistical", "Statistical functions"),
    ("hxarray._utility", "Utility functions"),
    ("hxarray._numpy_functions", "numpy's functions beyond the standard (numpy mode only)"),
    ("hxarray._numpy_statistics", "numpy's statistics beyond the standard (numpy mode only)"),
]
EXTENSIONS = [("hxarray.linalg", "hxarray.linalg"), ("hxarray.fft", "hxarray.fft")]
DEVICES = {
    "Devices and their selection": [
        ("class", "hxarray.Device"), ("class", "hxarray.DeviceType"),
        ("exception", "hxarray.DeviceUnavailableError"), ("function", "hxarray.device_scope"),
        ("function", "hxarray.best_device"), ("function", "hxarray.select_device"),
        ("function", "hxarray.devices_report")],
    "Memory": [
        ("function", "hxarray.memory_stats"), ("function", "hxarray.empty_cache"),
        ("function", "hxarray.memory_scope"), ("class", "hxarray.hal.scope.MemoryScope")],
    "Streams and events": [("class", "hxarray.Stream"), ("class", "hxarray.Event")],
    "Pipelines": [("function", "hxarray.pipeline"), ("function", "hxarray.prefetch")],
    "Fused and graphed functions": [
        ("function", "hxarray.fuse"), ("function", "hxarray.graph"),
        ("exception", "hxarray.CaptureError")],
    "Profiling": [
        ("function", "hxarray.profile"), ("class", "hxarray.profiler.Profile"),
        ("class", "hxarray.profiler.ProfileEvent")],
    "Threads": [("function", "hxarray.get_num_threads"), ("function", "hxarray.threads")],
}
HAL = {
    "Backends": [
        ("class", "hxarray.plugin.Backend"),
        ("class", "hxarray.backends.registry.BackendRegistry")],
    "Writing a backend": [
        ("function", "hxarray.plugin.make_array"), ("function", "hxarray.plugin.numpy_view"),
        ("function", "hxarray.plugin.register_backend"),
        ("function", "hxarray.plugin.check_elementwise")],
    "Memory": [
        ("class", "hxarray.hal.Allocator"), ("class", "hxarray.hal.CachingAllocator"),
        ("class", "hxarray.hal.StreamOrderedAllocator"), ("class", "hxarray.hal.MemoryBuffer"),
        ("function", "hxarray.hal.size_class")],
    "Streams": [
        ("class", "hxarray.hal.HostStream"), ("class", "hxarray.hal.HostEvent"),
        ("function", "hxarray.hal.current_stream")],
    "Compiled kernels": [("class", "hxarray.hal.KernelCache")],
    "Performance estimates": [
        ("function", "hxarray.backends.performance.estimate"),
        ("function", "hxarray.backends.performance.measure"),
        ("function", "hxarray.backends.performance.cache_dir")],
}


def _heading(text: str, mark: str) -> str:
    return f"{text}\n{mark * len(text)}\n"


def _directive(kind: str, target: str) -> str:
    options = "   :members:\n" if kind == "class" else ""
    return f".. auto{kind}:: {target}\n{options}\n"


def _names(module_name: str) -> list[str]:
    module = importlib.import_module(module_name)
    return list(module.__all__)


def namespace() -> str:
    parts = [_heading("The namespace", "="),
             "Every function of the standard, by chapter (spec sections named in each "
             "docstring), and the array object.\n"]
    parts += [_heading("The array object", "-"),
              ".. autoclass:: hxarray.Array()\n   :members:\n   :undoc-members:\n"
              "   :special-members: __array_namespace__, __dlpack__, __dlpack_device__, "
              "__getitem__, __setitem__\n"]
    for module, title in CHAPTERS:
        parts.append(_heading(title, "-"))
        parts += [_directive("function", f"hxarray.{name}") for name in _names(module)]
    for module, title in EXTENSIONS:
        parts.append(_heading(title, "-"))
        parts += [_directive("function", f"{module}.{name}") for name in _names(module)]
    return "\n".join(parts)


def _grouped(title: str, intro: str, groups: dict[str, list[tuple[str, str]]]) -> str:
    parts = [_heading(title, "="), intro]
    for group, entries in groups.items():
        parts.append(_heading(group, "-"))
        parts += [_directive(kind, target) for kind, target in entries]
    return "\n".join(parts)


def write(directory: Path) -> None:
    """Write namespace.rst, devices.rst and hal.rst into `directory` (only when changed, so
    that an unchanged reference is not rebuilt)."""
    pages = {
        "namespace.rst": namespace(),
        "devices.rst": _grouped("Devices, memory, pipelines and profiling",
                                "Beyond the standard: choosing devices, scoped memory, "
                                "overlapped transfers and the profiler.\n", DEVICES),
        "hal.rst": _grouped("The hardware abstraction layer (hxarray.hal)",
                            "What a backend implements and uses (see "
                            ":doc:`../hal`).\n", HAL),
    }
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        path = directory / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
