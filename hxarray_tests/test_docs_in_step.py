"""The documentation names only what exists: every `make` target a page (or a README) names is one
of the Makefile's, and every `HXARRAY_*` environment variable is declared in hxarray/hal/settings.py
(or read by the test suite)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hxarray.hal.settings import SETTINGS

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(p for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md"),
                           *(ROOT / "conformance").glob("**/README.md"),
                           *(ROOT / "benchmarks").glob("**/README.md")] if p.is_file())


def _targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][\w.-]*)\s*:(?!=)", makefile, re.M))


def _test_variables() -> set[str]:
    sources = "".join(p.read_text() for p in (ROOT / "hxarray_tests").glob("**/*.py"))
    return set(re.findall(r"[\"'](HXARRAY_TEST_\w+)[\"']", sources))


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_make_targets_exist(page: Path) -> None:
    text = page.read_text()
    # `make X` in inline code, and commands in code blocks
    named = set(re.findall(r"`make ([a-z][\w.-]*)", text))
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S):
        named |= set(re.findall(r"^\s*(?:[A-Z_]+=\S+\s+)*make ([a-z][\w.-]*)", block, re.M))
    missing = sorted(named - _targets())
    assert not missing, f"{page.name} names make targets the Makefile lacks: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_environment_variables_exist(page: Path) -> None:
    known = set(SETTINGS) | _test_variables()
    missing = []
    for name in set(re.findall(r"HXARRAY_\w+", page.read_text())):
        if name.endswith("_"):  # a prefix (`HXARRAY_CUDA_SIM_*`)
            if not any(k.startswith(name) for k in known):
                missing.append(name)
        elif name not in known:
            missing.append(name)
    assert not missing, f"{page.name} names environment variables hxarray does not read: " \
                        f"{sorted(missing)}"


def test_the_pages_are_found() -> None:
    assert ROOT / "README.md" in PAGES and ROOT / "docs" / "getting-started.md" in PAGES
    assert {"run", "test", "docs-check"} <= _targets()
