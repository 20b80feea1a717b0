"""Sorting functions (spec: "Sorting Functions").

The order of floating-point values the standard leaves open: NaNs sort after every number
(ascending) and before every number (descending), and -0 equals +0, so argsort keeps the two in
their original order while a value sort may return them in either order.
"""

from __future__ import annotations

import builtins
from typing import Any

from . import _dtypes as dt
from . import _views
from ._adapter import adapted
from ._array import Array
from ._checks import as_bool, check_array, check_ordered, normalize_axis
from ._manipulation import along_rows
from ._numpy_conversions import back_to_bool
from ._ops import OPS

__all__ = ["argsort", "sort"]

_SORT_DIMS = 32  # numpy's sorts take at most 32 dimensions (arrays may have 64)


def sort_by(sorter: Any, name: str, x: Array, axis: int, descending: builtins.bool,
            stable: builtins.bool, indices: builtins.bool) -> Array:
    """sort or argsort (`name`; `indices`: argsort) of x by `sorter`, an object with a backend's
    `sort` and `argsort` (None: x's backend, whose order is the standard's, of real values)."""
    ndim = len(check_array(x, name)._shape)
    values = x if sorter is not None else check_ordered(x, name)
    if ndim == 0:
        raise ValueError(f"{name}(): x must have at least one dimension")
    axis = normalize_axis(axis, ndim, name)
    descending = as_bool(descending, name, "descending")
    stable = as_bool(stable, name, "stable")
    if ndim > _SORT_DIMS:
        return along_rows(x, axis, lambda rows: sort_by(sorter, name, rows, 1, descending, stable,
                                                        indices))
    backend = x._buffer.device.backend
    sorter = sorter or backend
    if not indices:  # equal values are indistinguishable: descending is ascending reversed
        out = backend.empty(x._shape, values._dtype, x._buffer.device)
        sorter.sort(values, axis, stable, out)
        if descending:
            out = _views.flip(out, (axis,))
        return out if values is x else back_to_bool(out, x)  # (sorted as another dtype's view)
    out = backend.empty(x._shape, dt.int64, x._buffer.device)
    if not descending:
        sorter.argsort(values, axis, stable, out)
        return out
    # Stably descending: sort the reversed array ascending, then reverse the permutation and
    # count its indices from the other end, so equal elements keep their original order.
    sorter.argsort(_views.flip(values, (axis,)), axis, stable, out)
    subtract = OPS["subtract"]
    return backend.elementwise(subtract, (x._shape[axis] - 1, _views.flip(out, (axis,))),
                               subtract.signature(dt.int64, dt.int64), x._shape)


@adapted
def sort(x: Array, /, *, axis: int = -1, descending: builtins.bool = False,
         stable: builtins.bool = True) -> Array:
    """x sorted along `axis` (spec: sorting_functions/sort)."""
    return sort_by(None, "sort", x, axis, descending, stable, indices=False)


@adapted
def argsort(x: Array, /, *, axis: int = -1, descending: builtins.bool = False,
            stable: builtins.bool = True) -> Array:
    """Indices (default integer dtype) that sort x along `axis`."""
    return sort_by(None, "argsort", x, axis, descending, stable, indices=True)
