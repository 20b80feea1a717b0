"""What the fuzzer calls: every public function of the namespace, `linalg`, `fft` and the
inspection object, every Array method, property and operator, and hxarray's own settings; with
the role of each parameter (what kind of value it takes), from which the fuzzer draws arguments.
"""

from __future__ import annotations

import inspect
import operator
from dataclasses import dataclass
from typing import Any

# The role of a parameter, by its name; anything else takes "any".
ROLES = {
    "x": "array", "x1": "operand", "x2": "operand", "condition": "array", "indices": "array",
    "obj": "any", "arrays": "arrays", "arrays_and_dtypes": "operand", "shapes": "shape",
    "axis": "axis", "axes": "axes", "source": "axis", "destination": "axis", "shape": "shape",
    "repetitions": "shape", "s": "shape", "dtype": "dtype", "device": "device",
    "keepdims": "flag", "descending": "flag", "stable": "flag", "copy": "flag",
    "endpoint": "flag", "include_initial": "flag", "invert": "flag", "upper": "flag",
    "full_matrices": "flag", "n": "int", "k": "int", "num": "int", "n_rows": "int",
    "n_cols": "int", "offset": "int", "shift": "shift", "repeats": "repeats",
    "correction": "number", "ord": "ord", "rtol": "number", "d": "number",
    "fill_value": "scalar", "start": "number", "stop": "number", "step": "number",
    "min": "operand", "max": "operand", "side": "word", "sorter": "array", "indexing": "word",
    "mode": "word", "norm": "word", "prepend": "array", "append": "array", "from_": "dtype",
    "to": "dtype", "type": "dtype", "kind": "kind", "count": "int", "nbytes": "int",
    "api_version": "word", "stream": "any", "max_version": "any", "dl_device": "any",
    "key": "key", "value": "operand", "other": "operand", "self": "array",
}

BINARY_OPERATORS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_",
                    "or_", "xor", "lshift", "rshift", "eq", "ne", "lt", "le", "gt", "ge")
INPLACE_OPERATORS = ("iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow",
                     "imatmul", "iand", "ior", "ixor", "ilshift", "irshift")
UNARY_OPERATORS = ("neg", "pos", "abs", "invert")
METHODS = {  # Array methods, by the roles of their arguments after self
    "to_device": ["device"], "__array_namespace__": [], "__dlpack__": [],
    "__dlpack_device__": [], "__array__": [], "__bool__": [], "__int__": [], "__float__": [],
    "__complex__": [], "__index__": [], "__len__": [], "__repr__": [], "__iter__": []}
METHOD_KEYWORDS = {"to_device": ["stream"], "__array_namespace__": ["api_version"],
                   "__dlpack__": ["stream", "max_version", "dl_device", "copy"],
                   "__array__": ["dtype", "copy"]}
PROPERTIES = ("T", "mT", "shape", "ndim", "size", "dtype", "device")
INFO = ("capabilities", "default_device", "devices", "default_dtypes", "dtypes")
SETTINGS = ("threads", "device_scope", "Stream", "set_memory_limit", "memory_stats",
            "empty_cache", "get_num_threads", "set_num_threads", "set_strict", "memory_scope",
            "profile")
SKIPPED = {"Array", "DType", "Device", "DeviceType", "Event",  # types, not functions
           "DeviceUnavailableError", "CaptureError",
           # take a function: no role gives one (hxarray_tests/test_fuse.py, test_graph.py)
           "fuse", "graph"}


@dataclass(frozen=True)
class Target:
    """One callable: its kind (namespace, linalg, fft, info, method, property, operator,
    setting), its name, and its parameters as (name, role, positional, required)."""

    kind: str
    name: str
    parameters: tuple[tuple[str, str, bool, bool], ...]
    variadic: str | None = None  # the role of *args, if it has them

    @property
    def label(self) -> str:
        prefix = {"namespace": "", "setting": "", "linalg": "linalg.", "fft": "fft.",
                  "info": "info.", "method": "x.", "property": "x.", "operator": "operator.",
                  "getitem": "", "setitem": ""}[self.kind]
        return prefix + self.name

    @property
    def mutates_self(self) -> bool:
        """Whether a successful call may change its first argument."""
        return self.kind == "setitem" or (self.kind == "operator" and
                                          self.name in INPLACE_OPERATORS)


def _from_signature(kind: str, name: str, function: Any) -> Target:
    parameters, variadic = [], None
    for p in inspect.signature(function).parameters.values():
        role = ROLES.get(p.name, "any")
        if p.kind is p.VAR_POSITIONAL:
            variadic = "array" if p.name == "arrays" else role
            continue
        if p.kind is p.VAR_KEYWORD:
            continue
        positional = p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        parameters.append((p.name, role, positional, p.default is p.empty))
    return Target(kind, name, tuple(parameters), variadic)


def targets() -> list[Target]:
    """Every target, in a fixed order."""
    import hxarray as xp

    found = []
    for name in sorted(n for n in dir(xp) if not n.startswith("_")):
        value = getattr(xp, name)
        if not callable(value) or name in SKIPPED or isinstance(value, xp.DType):
            continue
        kind = "setting" if name in SETTINGS else "namespace"
        found.append(_from_signature(kind, name, value))
    for module, kind in ((xp.linalg, "linalg"), (xp.fft, "fft")):
        found += [_from_signature(kind, n, getattr(module, n)) for n in module.__all__]
    info = xp.__array_namespace_info__()
    found += [_from_signature("info", n, getattr(info, n)) for n in INFO]
    for name, roles in METHODS.items():
        parameters = [("self", "array", True, True)] + [
            (f"arg{i}", role, True, True) for i, role in enumerate(roles)] + [
            (k, ROLES[k], False, False) for k in METHOD_KEYWORDS.get(name, ())]
        found.append(Target("method", name, tuple(parameters)))
    found += [Target("property", n, (("self", "array", True, True),)) for n in PROPERTIES]
    for name in BINARY_OPERATORS + INPLACE_OPERATORS:
        found.append(Target("operator", name, (("a", "operand", True, True),
                                               ("b", "operand", True, True))))
    found += [Target("operator", n, (("a", "array", True, True),)) for n in UNARY_OPERATORS]
    found.append(Target("getitem", "__getitem__", (("self", "array", True, True),
                                                   ("key", "key", True, True))))
    found.append(Target("setitem", "__setitem__", (("self", "array", True, True),
                                                   ("key", "key", True, True),
                                                   ("value", "operand", True, True))))
    return found


def call(target: Target, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Call `target` with the built arguments; context managers are entered and left around a
    small operation, iterators are run to their end."""
    import hxarray as xp

    kind, name = target.kind, target.name
    if kind in ("namespace", "setting"):
        function = getattr(xp, name)
        if name in ("threads", "device_scope", "Stream"):
            with function(*args, **kwargs):
                return xp.sum(xp.ones(5))
        return function(*args, **kwargs)
    if kind == "linalg":
        return getattr(xp.linalg, name)(*args, **kwargs)
    if kind == "fft":
        return getattr(xp.fft, name)(*args, **kwargs)
    if kind == "info":
        return getattr(xp.__array_namespace_info__(), name)(*args, **kwargs)
    if kind == "property":
        return getattr(args[0], name)
    if kind == "method":
        if name == "__iter__":
            return list(args[0])
        return getattr(args[0], name)(*args[1:], **kwargs)
    if kind == "operator":
        return getattr(operator, name)(*args)
    if kind == "getitem":
        return args[0][args[1]]
    if kind == "setitem":
        args[0][args[1]] = args[2]
        return None
    raise ValueError(f"unknown target kind {kind!r}")
