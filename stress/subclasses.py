"""(i) numpy's subclasses: random instances of numpy's ndarray subclasses (masked arrays with random
masks, matrices, memmaps, record and character arrays, and three subclasses of a user's own: one
with `__array_finalize__` and `__array_wrap__`, one with its own `__array_ufunc__`, one with its
own `__array_function__`) meet an hxarray array through every entry point: ufunc calls and
their methods (with the subclass as an input and as `out=`), numpy functions, the array's
operators on either side (in place too), comparisons, and hxarray's own functions (`asarray`,
`__setitem__`, the namespace). Every call runs twice, on fresh inputs: with the hxarray array,
and with a numpy array in its place.

The criterion. Where hxarray's array is in host memory (the CPU), numpy's answer: the same
exception class, or a result of the same type (a numpy subclass's instance for one, an hxarray
array for a plain ndarray or numpy scalar, the hxarray array itself where numpy returns the array
in its place), dtype, shape and values (NaN equal to NaN), the same mask, the same attributes of
a user's subclass, and afterwards the same contents of both inputs; or a TypeError. On a device
without host memory, a TypeError with both inputs unchanged, except that a subclass's own operator
that runs first (`ma + x`: numpy.ma converts x itself with np.array, hxarray's explicit copy) may
give numpy's answer. hxarray's own functions: numpy's answer where there is one, a ValueError for
a masked array with a masked element (never its data as values), or a TypeError.

`python -m stress.subclasses DEVICE CASES SEED` draws CASES cases with SEED and prints the figures
as JSON."""

from __future__ import annotations

import contextlib
import json
import os
import random
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

import hxarray as xp
from hxarray._dtypes import FROM_NUMPY

LISTED = 20  # problems listed in the report
SHAPES = [(), (0,), (3,), (2, 3), (1, 3), (0, 2)]
VALUES = {"float64": [0.0, -0.0, 1.5, -2.0, 3.0, np.nan, np.inf, 0.25],
          "int64": [-3, -1, 0, 1, 2, 5], "bool": [True, False]}


# -- the subclasses --------------------------------------------------------------------------------


class Tagged(np.ndarray):
    """A user's subclass carrying `info` through views (`__array_finalize__`) and ufunc results
    (`__array_wrap__`, which marks them)."""

    info: Any = None

    def __array_finalize__(self, obj: Any) -> None:
        self.info = getattr(obj, "info", None)

    def __array_wrap__(self, array: Any, context: Any = None, return_scalar: bool = False) -> Any:
        result = super().__array_wrap__(array, context, return_scalar)
        if isinstance(result, Tagged):
            result.info = f"wrapped {self.info}"
        return result


def _unwrap(values: Any, kind: type) -> tuple[Any, ...]:
    return tuple(v.view(np.ndarray) if isinstance(v, kind) else v for v in values)


def _rewrap(result: Any, kind: type, via: str) -> Any:
    """`result`'s plain arrays as `kind`, marked with the call that made them."""
    if isinstance(result, tuple):
        return tuple(_rewrap(r, kind, via) for r in result)
    if type(result) is np.ndarray:
        result = result.view(kind)
        result.via = via
    return result


class OwnUfunc(np.ndarray):
    """A user's subclass with its own `__array_ufunc__`, as numpy's documentation writes one: its
    instances (and outputs) unwrapped, ndarray's implementation, results wrapped and marked."""

    via: Any = None

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if "out" in kwargs:
            kwargs["out"] = _unwrap(kwargs["out"], OwnUfunc)
        result = super().__array_ufunc__(ufunc, method, *_unwrap(inputs, OwnUfunc), **kwargs)
        return NotImplemented if result is NotImplemented else \
            _rewrap(result, OwnUfunc, f"{ufunc.__name__}.{method}")


class OwnFunction(np.ndarray):
    """A user's subclass with its own `__array_function__` (NEP 18's pattern): other types
    decline, results wrapped and marked."""

    via: Any = None

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if not all(issubclass(t, np.ndarray) for t in types):
            return NotImplemented
        return _rewrap(super().__array_function__(func, types, args, kwargs), OwnFunction,
                       func.__name__)


@dataclass
class Draw:
    """One case's random choices: the subclass, its data and mask, the other operand's data."""

    kind: str
    entry: str
    data: np.ndarray
    mask: Any  # for masked arrays: np.ma.nomask or a bool array
    other: np.ndarray


def _memmap(data: np.ndarray, folder: str) -> np.memmap:
    handle, path = tempfile.mkstemp(dir=folder)
    os.close(handle)
    mapped = np.memmap(path, dtype=data.dtype, mode="w+", shape=data.shape)
    mapped[...] = data
    os.remove(path)  # the mapping stays
    return mapped


def _tagged(data: np.ndarray) -> Tagged:
    tagged = data.view(Tagged)
    tagged.info = "tag"
    return tagged


# each makes a new instance holding a copy of the draw's data
KINDS: dict[str, Callable[[Draw, str], np.ndarray]] = {
    "masked": lambda d, folder: np.ma.masked_array(d.data, mask=d.mask, copy=True),
    "matrix": lambda d, folder: np.asmatrix(d.data.copy()),
    "memmap": lambda d, folder: _memmap(d.data, folder),
    "recarray": lambda d, folder: d.data.copy().view(np.recarray),
    "chararray": lambda d, folder: np.char.array(d.data.astype(str)),
    "tagged": lambda d, folder: _tagged(d.data.copy()),
    "own ufunc": lambda d, folder: d.data.copy().view(OwnUfunc),
    "own function": lambda d, folder: d.data.copy().view(OwnFunction),
}


# -- the entry points: each a call of (s, t), s the subclass's instance, t the other array ---------


@dataclass(frozen=True)
class Entry:
    """An entry point. `own`: hxarray's own function (`reference`: what numpy's side runs instead,
    where the call itself takes no numpy array). `first`: the subclass's own operator runs before
    hxarray is asked."""

    call: Callable[[Any, Any], Any]
    own: bool = False
    first: bool = False
    reference: Callable[[Any, Any], Any] | None = None


def _first(s: Any) -> Any:
    """An index of s's first element along its first axis (the whole 0-d array)."""
    return 0 if np.ndim(s) else ()


def _iadd(a: Any, b: Any) -> Any:
    a += b
    return a


def _imul(a: Any, b: Any) -> Any:
    a *= b
    return a


def _setitem(a: Any, b: Any) -> Any:
    a[...] = b
    return a


ENTRIES: dict[str, Entry] = {
    # ufunc calls, the subclass as input (either side) or out=
    "np.add(s, t)": Entry(lambda s, t: np.add(s, t)),
    "np.add(t, s)": Entry(lambda s, t: np.add(t, s)),
    "np.maximum(t, s)": Entry(lambda s, t: np.maximum(t, s)),
    "np.less(s, t)": Entry(lambda s, t: np.less(s, t)),
    "np.divide(t, s)": Entry(lambda s, t: np.divide(t, s)),
    "np.add(s, t, where=t > 0, out=s)": Entry(lambda s, t: np.add(s, t, where=t > 0, out=s)),
    "np.add(t, t, out=s)": Entry(lambda s, t: np.add(t, t, out=s)),
    "np.negative(t, out=s)": Entry(lambda s, t: np.negative(t, out=s)),
    "np.negative(s, out=t)": Entry(lambda s, t: np.negative(s, out=t)),
    "np.isnan(s, out=t)": Entry(lambda s, t: np.isnan(s, out=t)),
    "np.matmul(s, transpose(t))": Entry(lambda s, t: np.matmul(s, np.transpose(t))),
    "np.exp2(t, out=s)": Entry(lambda s, t: np.exp2(t, out=s)),
    # ufunc methods
    "np.add.reduce(stack([t, t]), axis=0, out=s)": Entry(
        lambda s, t: np.add.reduce(np.stack([t, t]), axis=0, out=s)),
    "np.add.accumulate(t, out=s)": Entry(lambda s, t: np.add.accumulate(t, out=s)),
    "np.add.outer(s, t)": Entry(lambda s, t: np.add.outer(s, t)),
    "np.multiply.outer(t, s)": Entry(lambda s, t: np.multiply.outer(t, s)),
    "np.add.at(s, first, t[first])": Entry(lambda s, t: np.add.at(s, _first(s), t[_first(t)])),
    "np.add.at(t, first, s[first])": Entry(lambda s, t: np.add.at(t, _first(t), s[_first(s)])),
    "np.add.reduceat(t, range(len(t)), axis=0, out=s)": Entry(
        lambda s, t: np.add.reduceat(t, list(range(np.shape(t)[0] if np.ndim(t) else 1)),
                                     axis=0, out=s)),
    "np.maximum.reduceat(s, zeros_like(t))": Entry(
        lambda s, t: np.maximum.reduceat(s, np.zeros_like(t, dtype=np.intp))),
    # numpy functions
    "np.concatenate([s, t])": Entry(lambda s, t: np.concatenate([s, t])),
    "np.concatenate([t, s])": Entry(lambda s, t: np.concatenate([t, s])),
    "np.stack([s, t])": Entry(lambda s, t: np.stack([s, t])),
    "np.where(t > 0, s, t)": Entry(lambda s, t: np.where(t > 0, s, t)),
    "np.where(s, t, 0)": Entry(lambda s, t: np.where(s, t, 0)),
    "np.sum(stack([t, t]), axis=0, out=s)": Entry(
        lambda s, t: np.sum(np.stack([t, t]), axis=0, out=s)),
    "np.mean(stack([t, t]), axis=0, out=s)": Entry(
        lambda s, t: np.mean(np.stack([t, t]), axis=0, out=s)),
    "np.dot(s, t)": Entry(lambda s, t: np.dot(s, t)),
    "np.dot(t, transpose(s))": Entry(lambda s, t: np.dot(t, np.transpose(s))),
    "np.clip(t, s, None)": Entry(lambda s, t: np.clip(t, s, None)),
    "np.clip(s, t, None)": Entry(lambda s, t: np.clip(s, t, None)),
    "np.clip(t, 0, 1, out=s)": Entry(lambda s, t: np.clip(t, 0, 1, out=s)),
    "np.copyto(s, t)": Entry(lambda s, t: np.copyto(s, t)),
    "np.copyto(t, s)": Entry(lambda s, t: np.copyto(t, s)),
    # (at least 1-d: numpy 2.4 itself crashes on cumsum of a 0-d array into a 0-d out=)
    "np.cumsum(atleast_1d(t), axis=-1, out=atleast_1d(s))": Entry(
        lambda s, t: np.cumsum(np.atleast_1d(t), axis=-1, out=np.atleast_1d(s))),
    "np.isclose(s, t)": Entry(lambda s, t: np.isclose(s, t)),
    "np.array_equal(s, t)": Entry(lambda s, t: np.array_equal(s, t)),
    "np.outer(s, t)": Entry(lambda s, t: np.outer(s, t)),
    "np.median(stack([t, t]), axis=0, out=s)": Entry(
        lambda s, t: np.median(np.stack([t, t]), axis=0, out=s)),
    # the operators, the subclass on either side
    "t + s": Entry(lambda s, t: t + s),
    "s + t": Entry(lambda s, t: s + t, first=True),
    "t * s": Entry(lambda s, t: t * s),
    "s * t": Entry(lambda s, t: s * t, first=True),
    "t - s": Entry(lambda s, t: t - s),
    "s / t": Entry(lambda s, t: s / t, first=True),
    "t ** s": Entry(lambda s, t: t ** s),
    "t @ s": Entry(lambda s, t: t @ s),
    "t += s": Entry(lambda s, t: _iadd(t, s)),
    "t *= s": Entry(lambda s, t: _imul(t, s)),
    "s += t": Entry(lambda s, t: _iadd(s, t), first=True),
    "t == s": Entry(lambda s, t: t == s),
    "s == t": Entry(lambda s, t: s == t, first=True),
    "t < s": Entry(lambda s, t: t < s),
    "s >= t": Entry(lambda s, t: s >= t, first=True),
    # hxarray's own functions
    "xp.asarray(s)": Entry(lambda s, t: xp.asarray(s, device=t.device), own=True,
                           reference=lambda s, t: np.asarray(s)),
    # (of one shape: numpy also drops a value's leading 1s, which hxarray, as the standard, won't)
    "t[...] = s": Entry(lambda s, t: _setitem(t, s) if np.shape(s) == np.shape(t) else None,
                        own=True),
    "xp.add(s, t)": Entry(lambda s, t: xp.add(s, t), own=True),
}


# -- one case --------------------------------------------------------------------------------------


def draw(rng: random.Random) -> Draw:
    """A random case: subclass, entry point, shape, dtypes, values, mask."""
    # masked arrays three times as often: the kind with the most to lose (a mask that a wrong
    # route drops silently)
    kind = rng.choices(list(KINDS), [3 if k == "masked" else 1 for k in KINDS])[0]
    entry = rng.choice(list(ENTRIES))
    shape = rng.choice(SHAPES)
    size = int(np.prod(shape))

    def values() -> np.ndarray:
        dtype = rng.choice(list(VALUES))
        return np.array([rng.choice(VALUES[dtype]) for _ in range(size)],
                        dtype=dtype).reshape(shape)

    data = values()
    style = rng.choice(["none", "clear", "random", "all"])
    mask = np.ma.nomask if style == "none" else np.zeros(shape, bool) if style == "clear" else \
        np.ones(shape, bool) if style == "all" else \
        np.array([rng.random() < 0.5 for _ in range(size)], bool).reshape(shape)
    return Draw(kind, entry, data, mask, values())


def _state(value: Any) -> Any:
    """What an array holds, to compare: type, dtype, shape, data, mask and a user's marks."""
    if value.__class__ is xp.Array:
        value = np.asarray(value.to_device("cpu"))
        kind = np.ndarray
    else:
        kind = type(value)
    plain = np.asarray(np.ma.getdata(value))
    mask = np.ma.getmaskarray(value) if isinstance(value, np.ma.MaskedArray) else None
    marks = {k: getattr(value, k, None) for k in ("info", "via")}
    return kind, plain.dtype, plain.shape, plain.copy(), None if mask is None else mask.copy(), \
        marks


def _same_state(a: Any, b: Any) -> bool:
    (ka, da, sa, va, ma, xa), (kb, db, sb, vb, mb, xb) = a, b
    if (ka, da, sa, xa) != (kb, db, sb, xb) or (ma is None) != (mb is None):
        return False
    if ma is not None and not np.array_equal(ma, mb):
        return False
    return np.array_equal(va, vb, equal_nan=va.dtype.kind in "fc")


def _agrees(got: Any, want: Any, pairs: list[tuple[Any, Any]], first: bool) -> str | None:
    """A difference between hxarray's result and numpy's (None: none), `pairs` the inputs as
    (hxarray's side, numpy's side): an input numpy returns must come back as its counterpart.
    `first`: the subclass's own operator made the result, which hxarray did not see."""
    for ours, theirs in pairs:
        if want is theirs:
            return None if got is ours else f"numpy returned its input, hxarray {type(got)}"
    if isinstance(want, (tuple, list)):
        if type(got) is not type(want) or len(got) != len(want):
            return f"{type(got).__name__} for numpy's {type(want).__name__}"
        for g, w in zip(got, want):
            problem = _agrees(g, w, pairs, first)
            if problem:
                return problem
        return None
    numpys = isinstance(want, (np.ndarray, np.generic))
    if numpys and (type(want) is not np.ndarray and not isinstance(want, np.generic) or
                  want.dtype not in FROM_NUMPY or first and type(got) is type(want)):
        if type(got) is not type(want):
            return f"{type(got).__name__} for numpy's {type(want).__name__}"
    elif numpys:
        if got.__class__ is not xp.Array:
            return f"{type(got).__name__} for numpy's {type(want).__name__} (an hxarray array)"
        want = np.asarray(want)
    elif type(got) is not type(want) or not (got == want or (got != got and want != want)):
        return f"{got!r} for numpy's {want!r}"
    else:
        return None
    return None if _same_state(_state(got), _state(want)) else \
        f"values: {_state(got)[3:5]} for numpy's {_state(want)[3:5]}"


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """numpy's warnings off (np.matrix's deprecation, the values' invalid operations)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


def _run(call: Callable[[Any, Any], Any], s: Any, t: Any) -> tuple[Any, BaseException | None]:
    with _quiet():
        try:
            return call(s, t), None
        except Exception as exc:  # noqa: BLE001 - compared with numpy's
            return None, exc


def check(case: Draw, device: Any, folder: str) -> tuple[str, str | None]:
    """(the outcome, a problem or None) of one case on `device`: "answer" (numpy's), "same
    error", "TypeError" or "refused" (a masked array's ValueError)."""
    entry = ENTRIES[case.entry]
    make = KINDS[case.kind]
    with _quiet():
        s_np, s_hx = make(case, folder), make(case, folder)
    t_np = case.other.copy()
    t_hx = xp.asarray(case.other, device=device, copy=True)
    host = device.backend.host_view(t_hx) is not None
    before = _state(s_hx), _state(t_hx)
    want, numpy_error = _run(entry.reference or entry.call, s_np, t_np)
    got, error = _run(entry.call, s_hx, t_hx)
    label = f"{case.kind} {case.entry} {case.data.dtype}{case.data.shape} " \
            f"t: {case.other.dtype}"
    if entry.own and isinstance(s_hx, np.ma.MaskedArray) and np.ma.is_masked(s_hx):
        if error is None:
            return "wrong", f"{label}: a masked element got through"
        if isinstance(error, ValueError) and "mask" in str(error):
            return "refused", None
    if error is not None:
        unchanged = _same_state(_state(s_hx), before[0]) and _same_state(_state(t_hx), before[1])
        same = numpy_error is not None and type(error) is type(numpy_error)
        if not same and not isinstance(error, TypeError):
            return "wrong", f"{label}: {error!r}, numpy: {numpy_error!r}"
        if not host and not unchanged:
            return "wrong", f"{label}: {error!r}, but an input changed"
        return ("same error" if same else "TypeError"), None
    if not host and not (entry.first or entry.own):
        return "wrong", f"{label}: answered on {device} ({type(got).__name__})"
    if numpy_error is not None:
        return "wrong", f"{label}: returned {type(got).__name__}, numpy raised {numpy_error!r}"
    problem = _agrees(got, want, [(s_hx, s_np), (t_hx, t_np)], entry.first)
    if problem is None and not (_same_state(_state(s_hx), _state(s_np)) and
                                _same_state(_state(t_hx), _state(t_np))):
        problem = "the inputs differ from numpy's afterwards"
    return ("answer", None) if problem is None else ("wrong", f"{label}: {problem}")


def main(device_name: str, count: int, seed: int) -> dict[str, Any]:
    """`count` cases drawn with `seed` on the device: the outcomes' counts and the problems."""
    device = xp.Device(device_name)
    rng = random.Random(seed)
    report: dict[str, Any] = {"device": device_name, "cases": count, "answer": 0,
                              "same error": 0, "TypeError": 0, "refused": 0, "wrong": 0,
                              "problems": []}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(count):
            outcome, problem = check(draw(rng), device, folder)
            report[outcome] += 1
            if problem is not None:
                report["problems"].append(problem)
    report["seconds"] = round(time.perf_counter() - start, 1)
    report["clean"] = report["wrong"] == 0
    report["problems"] = report["problems"][:LISTED]
    return report


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))
