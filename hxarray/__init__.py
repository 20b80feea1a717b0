"""hxarray: the Python Array API standard (2025.12) over a hardware abstraction layer.

`import hxarray as xp` gives the standard's namespace; `hxarray.hal` is the device layer beneath.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from . import hal  # first: it decides which modules load compiled (hxarray.hal.sources)

# isort: split
from . import cuda, fft, linalg, random
from ._array import Array
from ._constants import e, inf, nan, newaxis, pi
from ._creation import *  # noqa: F403
from ._data_types import *  # noqa: F403
from ._dtypes import (
    DType,
    bool,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ._elementwise import *  # noqa: F403
from ._fuse import fuse
from ._graph import CaptureError, graph

if TYPE_CHECKING:  # the element-wise functions are generated at import; their signatures:
    from ._elementwise_api import *  # noqa: F403
from . import (  # noqa: E402
    _array_methods,
    _creation,
    _data_types,
    _elementwise,
    _indexing,
    _linalg_functions,
    _manipulation,
    _observed,
    _searching,
    _sets,
    _sorting,
    _statistical,
    _utility,
)
from ._indexing import *  # noqa: F403
from ._info import __array_namespace_info__, empty_cache, memory_stats, set_memory_limit
from ._linalg_functions import *  # noqa: F403
from ._manipulation import *  # noqa: F403
from ._modes import set_strict
from ._searching import *  # noqa: F403
from ._sets import *  # noqa: F403
from ._sorting import *  # noqa: F403
from ._statistical import *  # noqa: F403
from ._utility import *  # noqa: F403
from ._version import API_VERSION as __array_api_version__
from .backends.cpu.parallel import get_num_threads, set_num_threads, threads
from .backends.selection import best_device, devices_report, select_device
from .hal import Device, DeviceType, Event, Stream, device_scope
from .hal.device import DeviceUnavailableError
from .hal.scope import memory_scope
from .pipeline import pipeline, prefetch
from .profiler import profile

_array_methods.install(sys.modules[__name__])
_observed.observe_names(globals(), [  # the hooks' operation point, on the functions users call
    name for module in (_creation, _data_types, _elementwise, _indexing, _linalg_functions,
                        _manipulation, _searching, _sets, _sorting, _statistical, _utility)
    for name in module.__all__ if globals().get(name) is getattr(module, name)])
where.__signature__ = _searching.WHERE_SIGNATURE  # type: ignore[attr-defined]  # noqa: F405

# numpy mode, on top of the chapters (it hands its rules to their adapters when imported)
from . import _numpy_mode, _numpy_protocols  # noqa: E402

_numpy_protocols.install(sys.modules[__name__])  # numpy's protocols, calling this namespace

# numpy's functions beyond the standard (numpy mode only; strict mode refuses them): registered
# after the standard's namespace, which they are composed from
from . import _numpy_functions, _numpy_statistics  # noqa: E402
from ._numpy_functions import *  # noqa: E402, F403
from ._numpy_statistics import *  # noqa: E402, F403

_numpy_functions.use_namespace(sys.modules[__name__])
_numpy_statistics.use_namespace(sys.modules[__name__])

_observed.observe_names(globals(), [*_numpy_functions.__all__, *_numpy_statistics.__all__])

from ._ndarray_methods import install as _install_ndarray_methods  # noqa: E402

_install_ndarray_methods(Array)  # numpy's ndarray methods, numpy mode only (x.sum(), x.reshape())
del _install_ndarray_methods

del TYPE_CHECKING, annotations, sys  # not part of the namespace (dir(hxarray))
