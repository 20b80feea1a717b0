"""The type stubs of what hxarray generates at import: the element-wise functions (from the
declarations in `_ops.py`) and the array's operators and indexing. Type checkers read the
stubs; nothing imports them at run time. `python -m hxarray._stubgen` rewrites them; a test
checks that they match `_ops.py`."""

from __future__ import annotations

from pathlib import Path

from ._ops import COMPARISONS, OPS

HERE = Path(__file__).resolve().parent
HEADER = ('"""{what}, for type checkers: generated from hxarray/_ops.py by\n'
          '`python -m hxarray._stubgen`."""\n\n{imports}from ._array import Array\n\n'
          '_Scalar = bool | int | float | complex\n')
STATIC = {"round", "clip", "where"}  # defined in Python source, seen by type checkers as they are


def elementwise() -> str:
    """The stub of the namespace's generated element-wise functions."""
    lines = [HEADER.format(what="The element-wise functions' signatures", imports=""), ""]
    for op in OPS.values():
        if op.name in STATIC:
            continue
        if op.arity == 1:
            lines.append(f"def {op.name}(x: Array, /) -> Array: ...")
        else:
            lines.append(f"def {op.name}(x1: Array | _Scalar, x2: Array | _Scalar, /) "
                         "-> Array: ...")
    return "\n".join(lines) + "\n"


def operators() -> str:
    """The stub of the array's methods that the namespace installs (`_array_methods.install`):
    the operators, indexing and `__array_namespace__`."""
    lines = [HEADER.format(what="The array's operators and indexing",
                           imports="from typing import Any\n\n"), "", "class ArrayOperators:"]
    for op in OPS.values():
        stem = op.operator
        if stem is None:
            continue
        if op.arity == 1:
            lines.append(f"    def __{stem}__(self) -> Array: ...")
        elif stem in ("eq", "ne"):  # object's take any other and return bool
            lines.append(f"    def __{stem}__(self, other: object, /) -> Array: ...  "
                         "# type: ignore[override]")
        elif stem in COMPARISONS:
            lines.append(f"    def __{stem}__(self, other: Array | _Scalar, /) -> Array: ...")
        else:
            for prefix in ("", "r", "i"):
                lines.append(f"    def __{prefix}{stem}__(self, other: Array | _Scalar, /) "
                             "-> Array: ...")
    for prefix in ("", "r", "i"):
        lines.append(f"    def __{prefix}matmul__(self, other: Array, /) -> Array: ...")
    lines += ["    def __getitem__(self, key: Any, /) -> Array: ...",
              "    def __setitem__(self, key: Any, value: Any, /) -> None: ...",
              "    def __array_namespace__(self, /, *, api_version: str | None = None) -> Any: ..."]
    return "\n".join(lines) + "\n"


STUBS = {"_elementwise_api.pyi": elementwise, "_operators.pyi": operators}


def main() -> None:
    for name, render in STUBS.items():
        (HERE / name).write_text(render(), encoding="utf-8")


if __name__ == "__main__":
    main()
