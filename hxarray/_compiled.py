"""The compiled speedups (hxarray/_speedups.c), or None.

Every compiled type has a pure-Python twin with the same behaviour, used when the extension was
not built (no C compiler at install time) or when HXARRAY_PURE_PYTHON=1 is set.
"""

from __future__ import annotations

import os
from types import ModuleType

speedups: ModuleType | None = None
if os.environ.get("HXARRAY_PURE_PYTHON", "0") in ("", "0"):
    try:
        from . import _speedups as speedups
    except ImportError:  # pragma: no cover - installs without a C compiler
        speedups = None
