"""hxarray: the Python Array API standard (2025.12) over a hardware abstraction layer.

`import hxarray as xp` gives the standard's namespace; `hxarray.hal` is the device layer beneath.
"""

from __future__ import annotations

import os as _os

# The standard version this namespace presents: 2025.12 unless the environment asks for one of the
# earlier versions it also supports (the mechanism array-api-tests uses).
__array_api_version__ = _os.environ.get("ARRAY_API_TESTS_VERSION", "2025.12")
if __array_api_version__ not in ("2023.12", "2024.12", "2025.12"):
    __array_api_version__ = "2025.12"

from ._dtypes import (  # noqa: E402
    DType, bool, complex64, complex128, float32, float64, int8, int16, int32, int64, uint8,
    uint16, uint32, uint64,
)
from ._array import Array, _install_operators  # noqa: E402
from ._constants import e, inf, nan, newaxis, pi  # noqa: E402
from ._creation import *  # noqa: E402,F403
from ._data_types import *  # noqa: E402,F403
from ._elementwise import *  # noqa: E402,F403
from ._indexing import *  # noqa: E402,F403
from ._linalg_functions import *  # noqa: E402,F403
from ._manipulation import *  # noqa: E402,F403
from ._searching import *  # noqa: E402,F403
from ._sets import *  # noqa: E402,F403
from ._sorting import *  # noqa: E402,F403
from ._statistical import *  # noqa: E402,F403
from ._utility import *  # noqa: E402,F403
from ._info import __array_namespace_info__, empty_cache, memory_stats  # noqa: E402
from .hal import Device, DeviceType, Event, Stream, device_scope  # noqa: E402
from . import fft, hal, linalg  # noqa: E402

_install_operators()
del _install_operators
