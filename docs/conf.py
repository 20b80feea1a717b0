"""Sphinx configuration of the documentation site (`make docs`: HTML in docs/_build/html, every
warning an error). The source directory is the repository's root, so that the pages (the
Markdown files beside this one, through MyST) link to conformance/README.md as they do on a
forge; only docs/ and that file are read. The API reference is generated from the docstrings at
build time (docs/_generated, not committed)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import api_pages  # noqa: E402

project = "hxarray"
author = "the hxarray developers"
copyright = "the hxarray developers"
release = version = "0.1"

extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "docs/index"
include_patterns = ["docs/**", "conformance/README.md", "conformance/sklearn/README.md",
                    "conformance/scipy/README.md", "conformance/marray/README.md"]
exclude_patterns = ["docs/_build/**", "docs/_root/**"]
html_extra_path = ["_root"]  # index.html at the site's root: a redirect to docs/index.html
# A trailing "*" in the index's toctree takes in pages added later (say, by another branch)
# without editing the index; it matches nothing when every page is listed.
suppress_warnings = ["toc.empty_glob"]

myst_heading_anchors = 3  # links such as hal.md#compiled-twins
myst_enable_extensions = ["colon_fence"]

autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
add_module_names = False

html_theme = "pydata_sphinx_theme"
html_title = "hxarray"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_sidebars = {"docs/index": []}


def setup(app):  # noqa: ANN001, ANN201 - Sphinx's hook
    app.connect("builder-inited", lambda app: api_pages.write(HERE / "_generated"))
