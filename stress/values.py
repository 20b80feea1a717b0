"""Arguments as recipes: small picklable tuples that the parent draws (with hypothesis) and a
worker turns into objects on its device. A recipe is ("array", dtype, shape, layout, content,
where), ("scalar", value), ("obj", name), ("tuple" | "list", [recipes]) or ("slice", a, b, c).
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex64", "complex128")
LAYOUTS = ("c", "c", "c", "reversed", "transposed", "strided", "offset", "broadcast")
CONTENTS = ("range", "range", "special", "zeros", "random")

# Python scalars that sit on the edges: signs, zeros, bounds, huge and non-finite values.
EDGE_SCALARS: tuple[Any, ...] = (
    0, 1, -1, 2, 7, 2**31, 2**63 - 1, 2**63, -(2**63) - 1, 2**64, 2**100, -(2**100), 10**400,
    0.0, -0.0, 0.5, 1.5, -2.5, 1e308, 5e-324, math.inf, -math.inf, math.nan,
    True, False, 1j, complex(math.nan, 1.0), complex(math.inf, -math.inf))

# Objects that no parameter of the standard takes (or takes only some of).
OBJECTS = ("None", "str", "bytes", "list", "nested_list", "ragged_list", "dict", "set", "object",
           "fraction", "decimal", "np_array", "np_scalar_int", "np_scalar_float", "np_bool",
           "np_object_array", "slice", "ellipsis", "function", "xp_dtype", "np_dtype",
           "dtype_name", "device", "device_name", "bad_device", "type", "generator", "range",
           "memoryview", "nan_list", "other_device_array", "stream", "exception")


def build(recipe: Any, device: Any) -> Any:
    """The object a recipe stands for, on `device` (an hxarray Device)."""
    kind = recipe[0]
    if kind == "array":
        return _array(*recipe[1:], device=device)
    if kind == "scalar":
        return recipe[1]
    if kind == "obj":
        return _object(recipe[1], device)
    if kind == "tuple":
        return tuple(build(r, device) for r in recipe[1])
    if kind == "list":
        return [build(r, device) for r in recipe[1]]
    if kind == "slice":
        return slice(*recipe[1:])
    if kind == "dtype":
        import hxarray as xp

        return getattr(xp, recipe[1])
    raise ValueError(f"unknown recipe {recipe!r}")


def _values(dtype: np.dtype, size: int, content: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if content == "zeros":
        return np.zeros(size, dtype)
    if dtype.kind == "b":
        return rng.random(size) < 0.5 if content != "range" else np.arange(size) % 2 == 1
    if content == "special":
        if dtype.kind in "fc":
            pool = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.5,
                             np.finfo(dtype).max, np.finfo(dtype).tiny], dtype)
            if dtype.kind == "c":
                pool = pool + 1j * pool[::-1]
        else:
            info = np.iinfo(dtype)
            pool = np.array([info.min, info.max, 0, 1, info.max - 1], dtype)
        return pool[np.arange(size) % pool.size]
    if content == "random":
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            return rng.integers(info.min, info.max, size, dtype=dtype, endpoint=True)
        values = rng.standard_normal(size) * 10
        return (values + 1j * rng.standard_normal(size)).astype(dtype) if dtype.kind == "c" \
            else values.astype(dtype)
    return (np.arange(size) % 11 - 3 * (dtype.kind != "u")).astype(dtype)


def _array(dtype: str, shape: tuple[int, ...], layout: str, content: str, where: str,
           device: Any) -> Any:
    import hxarray as xp

    npd = np.dtype(dtype)
    target = device if where == "here" else xp.Device("cpu")
    if layout == "broadcast" and shape:  # a read-only view, one row repeated
        row = _values(npd, shape[-1], content, len(shape))
        return xp.broadcast_to(xp.asarray(row, device=target), shape)
    if layout == "strided" and shape:
        big = _values(npd, math.prod(shape) * 2, content, 7).reshape(*shape[:-1], 2 * shape[-1])
        return xp.asarray(big, device=target)[..., ::2]
    if layout == "offset" and shape:
        flat = _values(npd, math.prod(shape) + 1, content, 3)
        return xp.reshape(xp.asarray(flat, device=target)[1:], shape)
    host = _values(npd, math.prod(shape), content, 11).reshape(shape)
    x = xp.asarray(host, device=target)
    if layout == "reversed" and shape:
        return xp.flip(x)
    if layout == "transposed" and len(shape) >= 2:
        return xp.matrix_transpose(xp.asarray(np.swapaxes(host, -1, -2).copy(), device=target))
    return x


def _object(name: str, device: Any) -> Any:
    import hxarray as xp

    if name.startswith("scalar_"):
        return EDGE_SCALARS[int(name[7:])]
    objects = {
        "None": None, "str": "abc", "bytes": b"\x01\x02", "list": [1, 2, 3],
        "nested_list": [[1.0, 2.0], [3.0, 4.0]], "ragged_list": [[1], [2, 3]], "dict": {"a": 1},
        "set": {1, 2}, "fraction": Fraction(7, 2), "decimal": Decimal("9.99"),
        "np_array": np.arange(6.0).reshape(2, 3), "np_scalar_int": np.int64(3),
        "np_scalar_float": np.float32(2.5), "np_bool": np.True_,
        "np_object_array": np.array([1, "a"], dtype=object), "slice": slice(None, None, 2),
        "ellipsis": Ellipsis, "function": len, "xp_dtype": xp.float32,
        "np_dtype": np.dtype("float64"), "dtype_name": "float64", "device": device,
        "device_name": str(device), "bad_device": "nowhere:7", "type": float,
        "range": range(3), "memoryview": memoryview(b"abcd"), "nan_list": [math.nan, 1.0],
        "exception": ValueError("not an argument"),
    }
    if name in objects:
        return objects[name]
    if name == "object":
        return object()
    if name == "generator":
        return (i for i in range(3))
    if name == "other_device_array":
        others = [d for d in xp.__array_namespace_info__().devices() if d is not device]
        return xp.ones(3, device=others[0] if others else device)
    if name == "stream":
        return xp.Stream(device)
    raise ValueError(f"unknown object {name!r}")


def describe(recipe: Any) -> str:
    """A short text for a recipe (for reports)."""
    kind = recipe[0]
    if kind == "array":
        dtype, shape, layout, content, where = recipe[1:]
        extra = "" if layout == "c" else f" {layout}"
        extra += "" if content == "range" else f" {content}"
        extra += "" if where == "here" else " on cpu"
        return f"{dtype}{list(shape)}{extra}"
    if kind == "scalar":
        return repr(recipe[1])
    if kind == "obj":
        name = recipe[1]
        return repr(EDGE_SCALARS[int(name[7:])]) if name.startswith("scalar_") else f"<{name}>"
    if kind in ("tuple", "list"):
        inner = ", ".join(describe(r) for r in recipe[1])
        return f"({inner},)" if kind == "tuple" else f"[{inner}]"
    if kind == "slice":
        return ":".join("" if v is None else repr(v) for v in recipe[1:])
    if kind == "dtype":
        return f"xp.{recipe[1]}"
    return repr(recipe)
