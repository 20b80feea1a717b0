"""(f) Writes: every write path refuses a read-only array and touches nothing but its target.

Read-only arrays: broadcast views (`broadcast_to`, `broadcast_arrays`) and views of them (a row,
a strided slice, the transpose, a new axis). Write paths: the in-place operators, `__setitem__`
with every kind of index, numpy's `out=` of every ufunc (and of its reduce, accumulate,
reduceat and outer), `ufunc.at`, every numpy function hxarray implements that takes `out=`,
numpy's in-place functions (copyto, put, place, putmask, fill_diagonal, put_along_axis), DLPack
exports and imports, and `hxarray.cuda.RawKernel` arguments (CUDA devices). A refusal must be a
`ValueError` saying "read-only", with every byte of the view's buffer unchanged. The same paths on
writable targets (fresh arrays and strided views of them) must change no byte of the target's
buffer outside its elements and no other array (the operands, a canary). Writes whose value
overlaps the target (`x[t] = x[s]`, `x[t] += x[s]` on slices of one array) must give numpy's
answer on copies.

`python -m stress.writes DEVICE DTYPES SEED [CASES]` runs the cases for the comma-separated
DTYPES (CASES of them drawn with SEED, or all), and random overlaps drawn with SEED, and prints
the figures as JSON."""

from __future__ import annotations

import inspect
import json
import random
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import hxarray as xp
from hxarray._numpy_protocols import _FUNCTIONS, _WRITES_INTO
from hxarray._ops import COMPARISONS, OPS
from hxarray.hal.device import DeviceType

SHAPE = (3, 4)
LISTED = 20  # problems listed per kind in the report
# Views of a fresh (3, 4) array, made the same way of a numpy array (to find their elements).
WRITABLE_VIEWS: dict[str, Callable[[Any], Any]] = {
    "x": lambda a: a, "x[::2]": lambda a: a[::2], "x[:, 1:3]": lambda a: a[:, 1:3],
    "x[::-1, ::2]": lambda a: a[::-1, ::2], "x.T": lambda a: a.T, "x[1]": lambda a: a[1],
}
# Read-only views of a fresh 4-vector: broadcasts of it, and views of those.
READ_ONLY_VIEWS: dict[str, Callable[[Any], Any]] = {
    "broadcast_to": lambda v: xp.broadcast_to(v, SHAPE),
    "broadcast_arrays": lambda v: xp.broadcast_arrays(v, xp.ones((3, 1), dtype=v.dtype,
                                                                  device=v.device))[0],
    "broadcast row": lambda v: xp.broadcast_to(v, SHAPE)[0],
    "broadcast strided": lambda v: xp.broadcast_to(v, SHAPE)[:, ::2],
    "broadcast transposed": lambda v: xp.broadcast_to(v, SHAPE).T,
    "broadcast new axis": lambda v: xp.broadcast_to(v, SHAPE)[None],
}
_RAW = r"""
extern "C" __global__ void plus_one(const {T}* __restrict__ x, {T}* y, long long n) {{
    for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        y[i] = x[i] + 1;
}}"""
_C_TYPES = {"float64": "double", "int32": "int", "complex64": None, "bool": None}


def _host_bytes(a: Any) -> np.ndarray:
    """The elements of `a` (a fresh, C-contiguous array) as rows of bytes."""
    host = np.ascontiguousarray(np.asarray(a.to_device("cpu")))
    return host.view(np.uint8).reshape(host.size, host.dtype.itemsize).copy()


# -- write paths: each is write(target, operand), operand a writable array of target's shape ----
Write = Callable[[Any, Any], Any]


def _operator_writes() -> dict[str, Write]:
    writes: dict[str, Write] = {}
    for op in OPS.values():
        if op.operator is None or op.arity != 2 or op.operator in COMPARISONS:
            continue
        method = f"__i{op.operator}__"
        writes[f"{method} scalar"] = lambda t, o, m=method: getattr(t, m)(1)
        writes[f"{method} array"] = lambda t, o, m=method: getattr(t, m)(o)
    writes["__imatmul__"] = lambda t, o: t.__imatmul__(xp.eye(t.shape[-1], dtype=t.dtype,
                                                              device=t.device))
    return writes


def _keys(t: Any) -> dict[str, Any]:
    """Index keys of every kind for a target of t's shape."""
    d = t.device
    keys: dict[str, Any] = {"()": (), "...": Ellipsis, "0": 0, "-1": -1,
                            "::2": slice(None, None, 2), "None": None, "True": True,
                            "list [0]": [0],
                            "numpy int array": np.array([0]),
                            "0-d int array": xp.asarray(0, device=d),
                            "int array": xp.asarray([0, -1], device=d),
                            "bool mask": xp.ones(t.shape, dtype=xp.bool, device=d)}
    if t.ndim >= 2:
        keys.update({"(slice, 1)": (slice(None), 1), "(..., 0)": (Ellipsis, 0),
                     "(int array, int array)": (xp.asarray([0, 1], device=d),
                                                xp.asarray([1, 0], device=d)),
                     "(int array, slice)": (xp.asarray([0], device=d), slice(1, None))})
    return keys


def _value(operand: Any, key: Any) -> Any:
    """operand[key]: a value of the selection's shape (the operand itself where the key does not
    select from it: a read-only target refuses before it looks at the value)."""
    try:
        return operand[key]
    except IndexError:
        return operand


def _setitem_writes(t: Any) -> dict[str, Write]:
    writes: dict[str, Write] = {}
    for name, key in _keys(t).items():
        writes[f"x[{name}] = scalar"] = lambda t, o, k=key: t.__setitem__(k, 1)
        writes[f"x[{name}] = array"] = lambda t, o, k=key: t.__setitem__(k, _value(o, k))
    return writes


def _ufuncs() -> list[np.ufunc]:
    found = {getattr(np, n) for n in dir(np) if isinstance(getattr(np, n, None), np.ufunc)}
    return sorted(found, key=lambda u: u.__name__)


def _ufunc_writes() -> dict[str, Write]:
    writes: dict[str, Write] = {}
    for u in _ufuncs():
        if u.nout == 1:
            writes[f"np.{u.__name__}(out=)"] = lambda t, o, u=u: u(*[o] * u.nin, out=t)
        else:
            writes[f"np.{u.__name__}(out=(x, y))"] = lambda t, o, u=u: u(
                *[o] * u.nin, out=(t, *(xp.empty_like(t) for _ in range(u.nout - 1))))
        if u.signature is not None:  # a generalized ufunc: numpy has no methods for it
            continue
        if u.nin == 2 and u.nout == 1:
            name = u.__name__
            writes[f"np.{name}.reduce"] = lambda t, o, u=u: u.reduce(
                xp.stack([o, o]), axis=0, out=t)
            writes[f"np.{name}.accumulate"] = lambda t, o, u=u: u.accumulate(o, axis=0, out=t)
            writes[f"np.{name}.reduceat"] = lambda t, o, u=u: u.reduceat(
                o, list(range(t.shape[0])), axis=0, out=t)
            writes[f"np.{name}.outer"] = lambda t, o, u=u: u.outer(
                o[(0,) * (o.ndim - 1)][:t.shape[0]] if t.ndim == 1 else o[:, 0], o[0], out=t)
            writes[f"np.{name}.at"] = lambda t, o, u=u: u.at(t, 0, 1)
        elif u.nin == 1 and u.nout == 1:
            writes[f"np.{u.__name__}.at"] = lambda t, o, u=u: u.at(t, 0)
    return writes


def _function_writes() -> dict[str, Write]:
    """Every numpy function hxarray implements with an `out` parameter: its required
    positional arguments are the operand; whole (out=x) and along axis 0 (out=x[0])."""
    writes: dict[str, Write] = {}
    for function in sorted(_FUNCTIONS, key=lambda f: f.__name__):
        try:
            params = inspect.signature(function).parameters
        except (TypeError, ValueError):
            continue
        if "out" not in params:
            continue
        required = sum(1 for p in params.values() if p.default is inspect.Parameter.empty
                       and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
        name = f"{function.__module__.replace('numpy', 'np', 1)}.{function.__name__}"
        writes[f"{name}(out=x)"] = lambda t, o, f=function, n=required: f(*[o] * n, out=t)
        if "axis" in params:
            writes[f"{name}(axis=0, out=x[0])"] = lambda t, o, f=function, n=required: f(
                *[o] * n, axis=0, out=t[0] if t.ndim > 1 else t)
    return writes


def _in_place_function_writes() -> dict[str, Write]:
    assert set(_WRITES_INTO) == {np.copyto, np.put, np.place, np.putmask, np.fill_diagonal,
                                 np.put_along_axis}  # each has a write below
    return {
        "np.copyto": lambda t, o: np.copyto(t, o),
        "np.put": lambda t, o: np.put(t, [0], 1),
        "np.place": lambda t, o: np.place(t, np.ones(t.shape, bool), [1]),
        "np.putmask": lambda t, o: np.putmask(t, np.ones(t.shape, bool), 1),
        "np.fill_diagonal": lambda t, o: np.fill_diagonal(t, 1),
        "np.put_along_axis": lambda t, o: np.put_along_axis(
            t, np.zeros((*t.shape[:-1], 1), np.intp), 1, t.ndim - 1),
    }


def _dlpack_writes() -> dict[str, Write]:
    def export(t: Any, o: Any) -> None:
        try:
            host = np.from_dlpack(t)
        except BufferError:  # memory that is not host memory: a copy or nothing
            host = np.from_dlpack(t, device="cpu", copy=True)
        host[...] = 1  # ValueError where the capsule says read-only

    def reimport(t: Any, o: Any) -> None:
        xp.from_dlpack(t)[...] = 1

    return {"np.from_dlpack(x) then write": export, "xp.from_dlpack(x) then write": reimport}


def _raw_kernel_writes(device: Any, dtype: str) -> dict[str, Write]:
    """y = x + 1 by a kernel taking (const T* x, T* y, n): the target as y (its first element
    alone where it is not contiguous)."""
    if device.type is not DeviceType.CUDA or _C_TYPES[dtype] is None:
        return {}
    from hxarray import cuda

    kernel = cuda.RawKernel(_RAW.format(T=_C_TYPES[dtype]), "plus_one", device=device)

    def write(t: Any, o: Any) -> None:
        contiguous = t.strides == xp.empty(t.shape, dtype=t.dtype, device=device).strides
        count = t.size if contiguous else min(t.size, 1)  # n contiguous elements from t's first
        kernel((1,), (32,), (xp.asarray(o, copy=True), t, count))

    return {"RawKernel(y=x)": write}


# -- the checks -------------------------------------------------------------------------------


def _refusal(device: Any, dtype: str, view: str, write: Write) -> str | None:
    """A problem with writing into a read-only view, or None if it was refused cleanly."""
    base = xp.asarray(np.arange(4).astype(dtype), device=device)
    r = READ_ONLY_VIEWS[view](base)
    operand = xp.asarray(np.ones(r.shape, dtype), device=device)
    before, operand_before = _host_bytes(base), _host_bytes(xp.asarray(operand, copy=True))
    try:
        write(r, operand)
        problem = "not refused"
    except ValueError as exc:
        problem = None if "read-only" in str(exc) else f"ValueError without 'read-only': {exc}"
    except Exception as exc:  # noqa: BLE001 - reported
        problem = f"{type(exc).__name__}, not ValueError: {str(exc)[:160]}"
    if not np.array_equal(_host_bytes(base), before):
        problem = f"{problem or 'refused'}; the read-only memory changed"
    if not np.array_equal(_host_bytes(operand), operand_before):
        problem = f"{problem or 'refused'}; the operand changed"
    return problem


def _allowed(device: Any, dtype: str, view: str, write: Write) -> tuple[bool, str | None]:
    """(whether the write succeeded, a problem or None): a write into a writable view changes no
    byte outside the view's elements, nor the operand, nor a canary array."""
    values = (np.arange(12) % 5).astype(dtype).reshape(SHAPE)
    base = xp.asarray(values, device=device, copy=True)
    t = WRITABLE_VIEWS[view](base)
    inside = WRITABLE_VIEWS[view](np.arange(base.size).reshape(SHAPE)).ravel()
    operand = xp.asarray(np.ones(t.shape, dtype), device=device)
    canary = xp.asarray(values, device=device, copy=True)
    before = [_host_bytes(a) for a in (base, operand, canary)]
    try:
        write(t, operand)
        wrote = True
    except Exception:  # noqa: BLE001 - a write that does not apply to this target is no write
        wrote = False
    outside = np.ones(base.size, bool)
    outside[inside] = False
    after = [_host_bytes(a) for a in (base, operand, canary)]
    problems = []
    if not np.array_equal(after[0][outside], before[0][outside]):
        problems.append("bytes outside the target changed")
    if not wrote and not np.array_equal(after[0], before[0]):
        problems.append("a failed write changed the target")
    for name, old, new in (("operand", before[1], after[1]), ("canary", before[2], after[2])):
        if not np.array_equal(old, new):
            problems.append(f"the {name} changed")
    return wrote, "; ".join(problems) or None


def _overlap(device: Any, rng: random.Random) -> str | None:
    """x[t] = x[s] or x[t] += x[s] on random same-length slices of one 12-vector, against numpy
    on copies; a problem or None."""
    n = 12
    while True:
        target = slice(rng.randrange(n), rng.randrange(n + 1), rng.choice([1, 2, 3, -1, -2, -3]))
        length = len(range(*target.indices(n)))
        step = rng.choice([1, 2, 3, -1, -2, -3])
        span = (length - 1) * abs(step)
        if length and span < n:
            break
    first = rng.randrange(span, n) if step < 0 else rng.randrange(0, n - span)
    source = slice(first, first + length * step if first + length * step >= 0 else None, step)
    values = np.arange(n, dtype=np.float64) * 3 % 7
    expected = values.copy()
    x = xp.asarray(values, device=device, copy=True)
    if rng.random() < 0.5:
        x[target] = x[source]
        expected[target] = values[source].copy()
        text = f"x[{target}] = x[{source}]"
    else:
        view = x[target]
        view += x[source]
        expected[target] += values[source].copy()
        text = f"x[{target}] += x[{source}]"
    got = np.asarray(x.to_device("cpu"))
    return None if np.array_equal(got, expected) else f"{text}: {got.tolist()}, expected " \
                                                      f"{expected.tolist()}"


def _paths(device: Any, dtype: str) -> dict[str, Write]:
    """Every write path but setitem's (whose keys depend on the target's shape)."""
    return {**_operator_writes(), **_ufunc_writes(), **_function_writes(),
            **_in_place_function_writes(), **_dlpack_writes(), **_raw_kernel_writes(device, dtype)}


def cases(paths: dict[str, dict[str, Write]], device: Any) -> list[tuple[str, str, str, str]]:
    """Every (kind, dtype, view, path) to check, for `paths` by dtype: refusals on every
    read-only view, allowed writes on every writable view."""
    found = []
    for dtype, fixed in paths.items():
        every = [*fixed, *_setitem_writes(xp.zeros(SHAPE, dtype=dtype, device=device))]
        for view in READ_ONLY_VIEWS:
            found += [("refusal", dtype, view, p) for p in every]
        for view in WRITABLE_VIEWS:
            found += [("allowed", dtype, view, p) for p in every]
    return found


def _write_for(fixed: dict[str, Write], path: str, t: Any) -> Write | None:
    """The write `path` for target `t`, or None where it does not apply (a setitem key of more
    dimensions than `t` has)."""
    return fixed[path] if path in fixed else _setitem_writes(t).get(path)


def main(device_name: str, dtypes: list[str], seed: int, count: int = 0) -> dict[str, Any]:
    import warnings

    warnings.simplefilter("ignore")  # numpy's warnings for the values of unusual ufuncs
    device = xp.Device(device_name)
    rng = random.Random(seed)
    paths = {dtype: _paths(device, dtype) for dtype in dtypes}
    every = cases(paths, device)
    chosen = every if count == 0 or count >= len(every) else rng.sample(every, count)
    start = time.perf_counter()
    report: dict[str, Any] = {"device": device_name, "cases": len(chosen), "of": len(every),
                              "refusals": 0, "allowed": 0, "wrote": 0, "overlaps": 0,
                              "not_refused": [], "wrong_class": [], "changed": [],
                              "outside_target": [], "overlap_wrong": []}
    for kind, dtype, view, path in chosen:
        if kind == "refusal":
            probe = READ_ONLY_VIEWS[view](xp.zeros(4, dtype=dtype, device=device))
            write = _write_for(paths[dtype], path, probe)
            if write is None:
                continue
            problem = _refusal(device, dtype, view, write)
            report["refusals"] += 1
            if problem is not None:
                bucket = "changed" if "changed" in problem else "not_refused" \
                    if problem == "not refused" else "wrong_class"
                report[bucket].append(f"{dtype} {view}: {path}: {problem}")
        else:
            probe = WRITABLE_VIEWS[view](xp.zeros(SHAPE, dtype=dtype, device=device))
            write = _write_for(paths[dtype], path, probe)
            if write is None:
                continue
            wrote, problem = _allowed(device, dtype, view, write)
            report["allowed"] += 1
            report["wrote"] += wrote
            if problem is not None:
                report["outside_target"].append(f"{dtype} {view}: {path}: {problem}")
    for _ in range(max(20, len(chosen) // 10)):
        report["overlaps"] += 1
        problem = _overlap(device, rng)
        if problem is not None:
            report["overlap_wrong"].append(problem)
    report["seconds"] = round(time.perf_counter() - start, 1)
    report["clean"] = not any(report[k] for k in ("not_refused", "wrong_class", "changed",
                                                  "outside_target", "overlap_wrong"))
    for k in ("not_refused", "wrong_class", "changed", "outside_target", "overlap_wrong"):
        report[f"{k}_count"] = len(report[k])
        report[k] = report[k][:LISTED]
    return report


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]),
                          int(sys.argv[4]) if len(sys.argv) > 4 else 0)))
