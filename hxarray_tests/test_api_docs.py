"""What `help()` and `inspect` show users: every public function of `hxarray`, `hxarray.linalg`
and `hxarray.fft` and every public attribute of the Array has a docstring of its own that speaks
to users, and a signature without object reprs; `dir(hxarray)` has no stray names. `make test`
runs this on the compiled build and on the pure-Python one."""

from __future__ import annotations

import inspect
import types
from typing import Any

import numpy as np
import pytest

import hxarray as xp

# words of the implementation, not of the API
INTERNALS = ("fast path", "fastpath", "ContextVar", "Cython", "speedups", "`fallback`",
             "general path")


def _public() -> list[tuple[str, Any]]:
    found = [(f"hxarray.{name}", getattr(xp, name)) for name in dir(xp)
             if not name.startswith("_")]
    found += [(f"hxarray.{module.__name__.rpartition('.')[2]}.{name}", getattr(module, name))
              for module in (xp.linalg, xp.fft) for name in module.__all__]
    found += [(f"Array.{name}", getattr(xp.Array, name)) for name in dir(xp.Array)
              if not name.startswith("_")]
    return [(name, obj) for name, obj in found
            if callable(obj) or isinstance(obj, property) or name.startswith("Array.")]


def _own_doc(obj: Any) -> str:
    if isinstance(obj, property):
        return obj.__doc__ or ""
    doc = getattr(obj, "__doc__", None) or ""
    if not isinstance(obj, type) and doc == (type(obj).__doc__ or ""):
        return ""  # the class's, not its own
    return doc


@pytest.mark.parametrize(("name", "obj"), _public(), ids=[name for name, _ in _public()])
def test_docstring_of_its_own(name: str, obj: Any) -> None:
    doc = _own_doc(obj)
    assert doc.strip(), f"{name} has no docstring of its own"
    said = [word for word in INTERNALS if word.lower() in doc.lower()]
    assert not said, f"{name}'s docstring speaks of the implementation: {said}"


@pytest.mark.parametrize(("name", "obj"), [(n, o) for n, o in _public() if callable(o)
                                           and not isinstance(o, type)],
                         ids=[n for n, o in _public() if callable(o) and not isinstance(o, type)])
def test_signature_renders(name: str, obj: Any) -> None:
    signature = inspect.signature(obj)
    for parameter in signature.parameters.values():
        if parameter.default is not parameter.empty:
            assert not repr(parameter.default).startswith("<"), \
                f"{name}{signature}: the default of {parameter.name} shows as an object"


def test_where_shows_the_standard_signature() -> None:
    assert str(inspect.signature(xp.where)).startswith("(condition: 'Array', x1: 'Array | Any', "
                                                       "x2: 'Array | Any', /)")
    assert np.asarray(xp.where(xp.asarray([True, False]), 1.0, 2.0)).tolist() == [1.0, 2.0]


def test_dir_lists_the_api() -> None:
    stray = [name for name in dir(xp) if not name.startswith("_")
             and not isinstance(getattr(xp, name), types.ModuleType)
             and getattr(getattr(xp, name), "__module__", "hxarray").partition(".")[0]
             not in ("hxarray", "builtins")]
    assert stray == []
    assert "TYPE_CHECKING" not in dir(xp) and "annotations" not in dir(xp)
