"""Typing: the package is marked typed, and the stubs of what it generates at import (element-wise
functions, array operators) match hxarray/_ops.py (`python -m hxarray._stubgen` rewrites them)."""

from __future__ import annotations

from pathlib import Path

import hxarray as xp
from hxarray import _elementwise, _stubgen

PACKAGE = Path(xp.__file__).parent


def test_marked_typed() -> None:
    assert (PACKAGE / "py.typed").is_file()


def test_stubs_match_the_declarations() -> None:
    for name, render in _stubgen.STUBS.items():
        assert (PACKAGE / name).read_text(encoding="utf-8") == render(), \
            f"{name} is stale: run python -m hxarray._stubgen"


def test_every_generated_function_has_a_signature() -> None:
    stub = (PACKAGE / "_elementwise_api.pyi").read_text(encoding="utf-8")
    declared = {line.split("(")[0][4:] for line in stub.splitlines() if line.startswith("def ")}
    assert declared == set(_elementwise.__all__) - _stubgen.STATIC
