"""The layers import in one direction (docs/hal.md, "Layers"), read from the source with `ast`:
every import a module runs (at module level or inside a function) names its own layer or one
below. Imports under `if TYPE_CHECKING:` only name types for annotations: they never run, so
they order nothing and close no cycle. Within the namespace, the imports that run when a module
loads (its module-level statements, class bodies included; not function bodies, which run when
called) form no cycle, and numpy mode sits on top of the chapters. No backend imports another,
not even for types: what the CPU and CUDA backends share lies below both
(`hxarray.backends.codegen`). The plug-ins in hxarray_tests import only `hxarray` and
`hxarray.plugin`."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "hxarray"

BACKENDS = ("hxarray.backends.cpu", "hxarray.backends.cuda")
# Bottom to top; a module belongs to the layer of its longest listed prefix (packages include
# their submodules); everything not listed is the namespace, the top layer.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("hal", ("hxarray.hal",)),
    ("shared data", ("hxarray._dtypes", "hxarray._layout", "hxarray._ops",
                     "hxarray._numpy_kernels", "hxarray._modes", "hxarray._version",
                     "hxarray._constants", "hxarray._compiled", "hxarray._speedups",
                     "hxarray._forwarding")),
    ("arrays", ("hxarray._array", "hxarray._views")),
    ("backend layer", ("hxarray.backends", "hxarray.backends.base", "hxarray.backends.registry",
                       "hxarray.backends.fusion", "hxarray.backends.selection",
                       "hxarray.backends.performance")),
    ("shared code generation", ("hxarray.backends.codegen",)),
    ("backends", BACKENDS),
    ("namespace", ("hxarray",)),
]
PUBLIC = {"hxarray", "hxarray.plugin"}  # what a plug-in may import
PLUGINS = [ROOT / "hxarray_tests" / "ref_pkg" / "hxarray_ref",
           ROOT / "hxarray_tests" / "plugin_pkg" / "hxarray_toy"]


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(package: Path) -> dict[str, Path]:
    return {_module_name(path, package.parent): path for path in sorted(package.rglob("*.py"))}


MODULES = _modules(PACKAGE)


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or \
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _run_time_imports(name: str, path: Path, load_time: bool = False,
                      types: bool = False) -> list[tuple[str, int]]:
    """(imported module, line) of every import in the module that can run (with `types`, those
    under `if TYPE_CHECKING:` too), resolved to the module named (`from . import x` names the
    submodule x where there is one); with `load_time`, only those that run when the module is
    imported (not inside a function)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST) -> None:
        if load_time and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for child in [*getattr(node, "decorator_list", []), *_defaults(node)]:
                visit(child)  # decorators and defaults run when the function is defined
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not types:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                found.append((submodule if submodule in MODULES else source, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _defaults(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.expr]:
    return [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]


def _layer(module: str) -> int:
    best, rank = -1, len(LAYERS) - 1
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), i
    return rank


def _edges() -> list[tuple[str, str, int]]:
    return [(name, target, line) for name, path in MODULES.items()
            for target, line in _run_time_imports(name, path)
            if target.split(".")[0] == "hxarray"]


def test_the_layers_cover_the_package() -> None:
    """Every listed prefix names modules that exist (a rename cannot empty a layer silently)."""
    for _, prefixes in LAYERS:
        for prefix in prefixes:
            assert any(m == prefix or m.startswith(prefix + ".") for m in MODULES) or \
                prefix == "hxarray._speedups", prefix  # the C extension has no Python source
    assert _layer("hxarray.hal.device") == 0 and _layer("hxarray.backends.cpu.backend") == 5
    assert _layer("hxarray.backends.base") == 3 and _layer("hxarray._elementwise") == 6
    assert _layer("hxarray.backends.codegen.compiler") == 4


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = [f"{module}:{line} imports {target} ({LAYERS[_layer(target)][0]}, above "
              f"{LAYERS[_layer(module)][0]})"
              for module, target, line in _edges()
              if _layer(target) > _layer(module)]
    assert not upward, "\n".join(upward)


def _backend(module: str) -> str | None:
    return next((b for b in BACKENDS if module == b or module.startswith(b + ".")), None)


def test_no_backend_imports_another() -> None:
    """The CPU and CUDA backends are siblings: neither imports the other, at run time or for
    types. What both use (the operations' C, the kernel templates, the host compiler and
    `CompileError`) lies below them in `hxarray.backends.codegen`; the CUDA backend reaches the
    CPU backend for its host fallbacks through the registry (`Device("cpu").backend`)."""
    crossing, seen = [], set()
    for name, path in MODULES.items():
        own = _backend(name)
        if own is None:
            continue
        seen.add(own)
        for target, line in _run_time_imports(name, path, types=True):
            other = _backend(target)
            if other is not None and other != own:
                crossing.append(f"{name}:{line} imports {target}")
    assert seen == set(BACKENDS), seen
    assert not crossing, "\n".join(crossing)


def test_the_hal_imports_nothing_above_it() -> None:
    """Stated on its own, since it is what lets the HAL be read, tested and reused alone: the
    HAL's run-time imports stay in the HAL, so no import cycle passes through it."""
    leaving = sorted({f"{module} imports {target}" for module, target, _ in _edges()
                      if _layer(module) == 0 and _layer(target) != 0})
    assert not leaving, "\n".join(leaving)


def test_the_hal_loads_and_works_without_the_rest_of_hxarray() -> None:
    """In a fresh interpreter, with hxarray's `__init__` kept from running (an empty package
    module stands in for it), every HAL module imports and loads no module above the HAL: a
    device is a value, a host stream runs work, and a device's backend is refused with the
    reason (no registry: the backend layer installs it)."""
    code = f"""
import importlib, pkgutil, sys, types
package = types.ModuleType("hxarray")
package.__path__ = [{str(PACKAGE)!r}]
sys.modules["hxarray"] = package
import hxarray.hal
for info in pkgutil.iter_modules(hxarray.hal.__path__):
    importlib.import_module("hxarray.hal." + info.name)
from hxarray.hal import Device, DeviceUnavailableError, HostStream
device = Device("cpu:0")
assert device is Device("cpu") and str(device) == "cpu"
stream = HostStream(device)
done = []
stream.submit(done.append, 42)
stream.synchronize()
assert done == [42], done
try:
    device.backend
except DeviceUnavailableError as exc:
    assert "no backend registry is installed" in str(exc), exc
else:
    raise AssertionError("a backend without a registry")
print(" ".join(sorted(m for m in sys.modules if m.startswith("hxarray."))))
"""
    env = {key: value for key, value in os.environ.items() if key != "HXARRAY_DEFAULT_DEVICE"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    loaded = set(result.stdout.split())
    assert {"hxarray.hal.device", "hxarray.hal.allocator", "hxarray.hal.scope"} <= loaded
    above = {m for m in loaded if _layer(m) != 0}
    assert not above, above


@pytest.mark.parametrize("package", PLUGINS, ids=lambda p: p.name)
def test_the_plugins_import_only_the_public_surface(package: Path) -> None:
    private = []
    for name, path in _modules(package).items():
        for target, line in _run_time_imports(name, path):
            if target.split(".")[0] == "hxarray" and target not in PUBLIC:
                private.append(f"{name}:{line} imports {target}")
    assert not private, "\n".join(private)
    assert _modules(package), package


# Imports of numpy mode or the package from below it that remain, each inside a function, each
# with its reason; the list only shrinks.
DEFERRED_UPWARD: set[tuple[str, str]] = set()

NAMESPACE = sorted(m for m in MODULES if _layer(m) == len(LAYERS) - 1)


def _load_time_graph() -> dict[str, list[str]]:
    """Each namespace module (`hxarray` is the package's `__init__`) -> the namespace modules its
    load-time imports name."""
    return {name: sorted({target for target, _ in _run_time_imports(name, MODULES[name], True)
                          if target in MODULES and _layer(target) == len(LAYERS) - 1
                          and target != name})
            for name in NAMESPACE}


def _a_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """One cycle of `graph` (its modules in order, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in graph[node]:
            if state.get(target) == 1:
                return [*path[path.index(target):], target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        state[node] = 2
        path.pop()
        return None

    for node in graph:
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _a_cycle({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == ["a", "b", "c", "a"]
    assert _a_cycle({"a": ["b", "c"], "b": ["c"], "c": []}) is None


def test_the_namespace_loads_without_an_import_cycle() -> None:
    """No namespace module's load-time imports lead back to it: each module loads after every
    module it needs, whichever is imported first (`import hxarray._checks` works as well as
    `import hxarray`), and none is seen half-initialised."""
    cycle = _a_cycle(_load_time_graph())
    assert cycle is None, "an import cycle at load time: " + " -> ".join(cycle or [])


def _imported_at_load(module: str) -> set[str]:
    """The namespace modules that loading `module` loads (itself included)."""
    graph, seen, todo = _load_time_graph(), set(), [module]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph[name])
    return seen


def test_numpy_mode_is_on_top_of_the_chapters() -> None:
    """numpy mode (`_numpy_mode`, `_numpy_protocols`) imports the chapters; nothing it loads
    imports it or the package `hxarray` back, at load time or inside a function: the chapters'
    checks call `_numpy_conversions`, their adapters get numpy mode's rules from
    `_numpy_mode` (`_adapter.use_numpy_mode`), and the package hands itself down to what calls
    the public namespace (`_numpy_protocols.install`, `_array_methods.install`)."""
    below = _imported_at_load("hxarray._numpy_mode") - {"hxarray._numpy_mode"}
    assert {"hxarray._checks", "hxarray._adapter", "hxarray._elementwise",
            "hxarray._creation", "hxarray.linalg"} <= below
    up = {"hxarray", "hxarray._numpy_mode", "hxarray._numpy_protocols"}
    back = sorted(f"{module}:{line} imports {target}" for module in below
                  for target, line in _run_time_imports(module, MODULES[module])
                  if target in up and (module, target) not in DEFERRED_UPWARD)
    assert not back, "\n".join(back)
