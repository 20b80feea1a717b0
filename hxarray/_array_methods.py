"""The array object's methods that are namespace operations (spec: "Array object"): the
arithmetic, bitwise and comparison operators, indexing and `__array_namespace__`.

`Array` lies below the backends, which make arrays, so it imports none of the namespace chapters
that implement these methods; `install` attaches them to it once, when `hxarray` is imported."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _elementwise as ew
from ._array import Array
from ._compiled import speedups
from ._indexing import getitem, setitem
from ._linalg_functions import matmul
from ._numpy_protocols import numpy_operand, subclass_operator
from ._observed import operation
from ._ops import COMPARISONS, OPS
from ._version import SUPPORTED_API_VERSIONS
from .backends.cpu.backend import fastpath

__all__ = ["install"]

_namespace: Any = None  # `hxarray` itself, handed down by `install`


def array_namespace(self: Array, /, *, api_version: str | None = None) -> Any:
    """`hxarray` itself, which implements every supported version of the standard."""
    if api_version is not None and api_version not in SUPPORTED_API_VERSIONS:
        raise ValueError(f"unsupported Array API version {api_version!r}; supported: "
                         f"{', '.join(SUPPORTED_API_VERSIONS)}")
    return _namespace


def install(namespace: Any) -> None:
    """Attach the arithmetic, bitwise and comparison operators, each calling its spec function:
    as Python methods, or behind the compiled slots, which try the CPU fast path first; these
    and indexing and `to_device` with the hooks' operation point; `__array_namespace__` returns
    `namespace` (`hxarray`, which imports this module and calls this)."""
    global _namespace
    _namespace = namespace
    operators: dict[str, Callable[..., Any]] = {}
    for op in OPS.values():
        stem = op.operator
        if stem is None:
            continue
        if op.arity == 1:
            operators[f"__{stem}__"] = ew.unary_operator(op.name)
            continue
        operators[f"__{stem}__"] = ew.binary_operator(op.name, False, subclass_operator)
        if stem not in COMPARISONS:
            operators[f"__r{stem}__"] = ew.binary_operator(op.name, True, subclass_operator)
            operators[f"__i{stem}__"] = ew.inplace_operator(op.name, subclass_operator,
                                                            numpy_operand)
    # matmul is not element-wise (`_linalg_functions`)
    operators["__matmul__"] = ew.binary_operator("matmul", False, subclass_operator, matmul)
    operators["__rmatmul__"] = ew.binary_operator("matmul", True, subclass_operator, matmul)
    operators["__imatmul__"] = ew.inplace_operator("matmul", subclass_operator, numpy_operand,
                                                   matmul)
    operators = {dunder: operation(f"Array.{dunder}", method)  # the hooks' operation point
                 for dunder, method in operators.items()}
    methods: dict[str, Callable[..., Any]] = {
        "__getitem__": operation("Array.__getitem__", getitem),
        "__setitem__": operation("Array.__setitem__", setitem),
        "to_device": operation("Array.to_device", vars(Array)["to_device"]),
        "__array_namespace__": array_namespace}
    for name, method in methods.items():
        setattr(Array, name, method)
    if speedups is None:
        for dunder, method in operators.items():
            setattr(Array, dunder, method)
        return
    speedups.configure(array_type=Array, functions=fastpath.operations(),
                       operations={op.operator: ew.OPERATIONS[op.name] for op in OPS.values()
                                   if op.operator is not None},
                       operators=operators)
