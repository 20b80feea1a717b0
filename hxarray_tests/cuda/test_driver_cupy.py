"""The CuPy driver cannot run without a GPU, so this checks it against the installed CuPy: every
`cupy.…` name it uses exists, every call passes an argument count and keywords the callee accepts,
and every method or attribute used on a CuPy stream, event, module or kernel object exists. A typo
in driver_cupy.py fails here, not on the first GPU run."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

cupy = pytest.importorskip("cupy")

import hxarray.backends.cuda.driver_cupy as driver_cupy  # noqa: E402
import hxarray.backends.cuda.interop as interop  # noqa: E402

SOURCE = Path(driver_cupy.__file__).read_text()
TREE = ast.parse(SOURCE)
# Every module made of CuPy calls that only a GPU runs, and how many CuPy names it uses at least.
GPU_ONLY = {"driver_cupy": (TREE, 30),
            "interop": (ast.parse(Path(interop.__file__).read_text()), 12)}

# receivers of CuPy objects (driver_cupy's naming rule) -> an object to check them against
RECEIVERS: dict[str, Any] = {
    "cstream": cupy.cuda.Stream.null,  # an instance: `ptr` is set in __init__
    "cevent": cupy.cuda.Event,
    "cmodule": cupy.RawModule,
    "ckernel": cupy.RawKernel,
    "cgraph": cupy.cuda.graph.Graph,
}
# Signatures inspect cannot read (C slots). From CuPy's cupy/_core/raw.pyx and
# cupy/cuda/function.pyx: RawKernel.__call__(grid, block, args, **kwargs) forwards to
# Function.__call__(tuple grid, tuple block, args, size_t shared_mem=0, stream=None,
# bint enable_cooperative_groups=False).
EXPLICIT = {
    "ckernel()": inspect.Signature([
        inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        for n in ("grid", "block", "args")] + [
        inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None)
        for n in ("shared_mem", "stream", "enable_cooperative_groups")]),
}
# cudaDeviceProp keys CuPy's runtime.getDeviceProperties returns (cupy_backends runtime.pyx)
PROPERTY_KEYS = {
    "name", "totalGlobalMem", "sharedMemPerBlock", "regsPerBlock", "warpSize",
    "maxThreadsPerBlock", "maxThreadsDim", "maxGridSize", "clockRate", "totalConstMem", "major",
    "minor", "multiProcessorCount", "memoryClockRate", "memoryBusWidth", "l2CacheSize",
    "maxThreadsPerMultiProcessor", "sharedMemPerMultiprocessor", "regsPerMultiprocessor",
    "sharedMemPerBlockOptin", "maxBlocksPerMultiProcessor",
}
# RawKernel.attributes keys (cupy/_core/raw.pyx, from cuFuncGetAttribute)
ATTRIBUTE_KEYS = {
    "binary_version", "cache_mode_ca", "const_size_bytes", "local_size_bytes",
    "max_dynamic_shared_size_bytes", "max_threads_per_block", "num_regs",
    "preferred_shared_memory_carveout", "ptx_version", "shared_size_bytes",
}


def _chain(node: ast.AST) -> list[str] | None:
    """['cupy', 'cuda', 'runtime', 'malloc'] for the expression cupy.cuda.runtime.malloc."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _split_params(text: str) -> list[str]:
    out, depth, current = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            out.append(current)
            current = ""
        else:
            current += ch
    return [p.strip() for p in out + [current] if p.strip()]


def _doc_signature(obj: Any) -> inspect.Signature:
    """A signature from Cython's embedded one (the docstring's first line)."""
    doc = (obj.__doc__ or "").strip().splitlines()
    m = re.match(r"^[\w.]+\((.*)\)", doc[0]) if doc else None
    if m is None:
        raise AssertionError(f"no signature for {obj!r}")
    params, kind = [], inspect.Parameter.POSITIONAL_OR_KEYWORD
    for raw in _split_params(m.group(1)):
        if raw == "*":
            kind = inspect.Parameter.KEYWORD_ONLY
            continue
        if raw.startswith("**"):
            params.append(inspect.Parameter(raw[2:], inspect.Parameter.VAR_KEYWORD))
            continue
        if raw.startswith("*"):
            params.append(inspect.Parameter(raw[1:], inspect.Parameter.VAR_POSITIONAL))
            kind = inspect.Parameter.KEYWORD_ONLY
            continue
        declared, _, default = raw.partition("=")
        name = declared.split()[-1]
        if name == "self":
            continue
        params.append(inspect.Parameter(name, kind, default=None if default else
                                        inspect.Parameter.empty))
    return inspect.Signature(params)


def _signature(obj: Any, method: bool = False) -> inspect.Signature:
    target = obj
    if inspect.isclass(obj):
        try:
            return _doc_signature(obj)  # Cython classes document their constructor
        except AssertionError:
            target = obj.__init__
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        sig = _doc_signature(target)
    params = list(sig.parameters.values())
    if params and params[0].name == "self":
        sig = sig.replace(parameters=params[1:])
    return sig


def _bind(sig: inspect.Signature, call: ast.Call, what: str) -> None:
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None
                                                                  for k in call.keywords):
        return
    try:
        sig.bind(*[None] * len(call.args), **{k.arg: None for k in call.keywords})
    except TypeError as exc:
        raise AssertionError(f"line {call.lineno}: {what}{sig} cannot take "
                             f"{len(call.args)} positional and {[k.arg for k in call.keywords]} "
                             f"keyword arguments: {exc}") from None


def _resolve(parts: list[str], line: int) -> Any:
    obj: Any = cupy
    for i, name in enumerate(parts[1:], 1):
        assert hasattr(obj, name), f"line {line}: {'.'.join(parts[:i + 1])} does not exist"
        obj = getattr(obj, name)
    return obj


@pytest.mark.parametrize("module", sorted(GPU_ONLY))
def test_every_cupy_name_exists_and_every_call_fits(module: str) -> None:
    tree, at_least = GPU_ONLY[module]
    calls = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    checked = 0
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        parts = _chain(node)
        if not parts or parts[0] != "cupy":
            continue
        obj = _resolve(parts, node.lineno)
        checked += 1
        if id(node) in calls and callable(obj):
            _bind(_signature(obj), calls[id(node)], ".".join(parts))
    assert checked >= at_least  # the module really is made of CuPy calls


def test_methods_on_cupy_objects_exist_and_fit() -> None:
    calls = {id(n.func): n for n in ast.walk(TREE) if isinstance(n, ast.Call)}
    seen: set[str] = set()
    for node in ast.walk(TREE):
        if isinstance(node, ast.Call):
            callee = node.func
            name = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", "")
            if name == "ckernel":
                _bind(EXPLICIT["ckernel()"], node, "RawKernel.__call__")
                seen.add("ckernel()")
        if not isinstance(node, ast.Attribute):
            continue
        receiver = node.value
        rname = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id",
                                                                                  "")
        if rname not in RECEIVERS or isinstance(node.ctx, ast.Store):
            continue
        target = RECEIVERS[rname]
        assert hasattr(target, node.attr), \
            f"line {node.lineno}: {rname}.{node.attr} does not exist on {target!r}"
        seen.add(f"{rname}.{node.attr}")
        if id(node) in calls:
            _bind(_signature(getattr(type(target) if not inspect.isclass(target) else target,
                                     node.attr)), calls[id(node)], f"{rname}.{node.attr}")
    assert {"cstream.synchronize", "cstream.ptr", "cstream.done", "cstream.wait_event",
            "cevent.record", "cevent.synchronize", "cevent.done", "cmodule.get_function",
            "cmodule.compile", "ckernel.attributes", "ckernel()", "cstream.begin_capture",
            "cstream.end_capture", "cgraph.launch"} <= seen


def test_dictionary_keys_are_cupys() -> None:
    for node in ast.walk(TREE):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
                isinstance(node.slice, ast.Constant):
            keys = {"p": PROPERTY_KEYS, "a": ATTRIBUTE_KEYS}.get(node.value.id)
            if keys is not None:
                assert node.slice.value in keys, f"line {node.lineno}: unknown key " \
                                                 f"{node.slice.value!r}"


def test_the_check_catches_typos() -> None:
    """The checks above fail on the mistakes they exist for."""
    bad = ast.parse("cupy.cuda.runtime.memcpyAsync(1, 2, 3, 4)").body[0].value  # 5 needed
    with pytest.raises(AssertionError, match="cannot take 4 positional"):
        _bind(_signature(cupy.cuda.runtime.memcpyAsync), bad, "memcpyAsync")
    with pytest.raises(AssertionError, match="memcpyAsynk does not exist"):
        _resolve(["cupy", "cuda", "runtime", "memcpyAsynk"], 1)
    kw = ast.parse("f(code='', optionz=())").body[0].value
    with pytest.raises(AssertionError, match="optionz"):
        _bind(_signature(cupy.RawModule), kw, "RawModule")
