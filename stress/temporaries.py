"""Temporaries: an operator writes its result into an operand only where nothing but the
interpreter's evaluation stack holds that operand (docs/reliability.md, "Temporary elision").

Random operator calls reached through C callables, where an operand has one reference but is
not the interpreter's temporary: a `functools.partial(operator.add, <array made by an
expression>)`, an array's bound `__add__` (a method-wrapper), an `operator.methodcaller`, a
`sorted`/`max` key or `list` consuming an `itertools.starmap` used as another class's operator
method; `operator.add` called directly and through `map`, `functools.reduce`, `sum`,
`itertools.starmap`, sorted keys, list comprehensions, a numpy object array; and plain
expressions where reuse is allowed (`(x * 1.0) + y`). Sizes around and above the elision
threshold (256 KiB), float64, float32 and int64. Every result must equal numpy's for the same
operation, no result may be an array a caller still holds, and no array a caller holds (the
partial's, the bound method's, the items of lists and tuples) may change.

`python -m stress.temporaries DEVICE CASES SEED` prints the figures as JSON."""

from __future__ import annotations

import functools
import itertools
import json
import operator
import random
import sys
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

LISTED = 12  # examples kept per kind of failure
THRESHOLD = 256 * 1024  # ELIDE_MIN_BYTES in hxarray/_speedups.c


class Op(NamedTuple):
    """A binary operator: its symbol, `operator` function and method names."""

    symbol: str
    function: Callable[[Any, Any], Any]
    forward: str
    reflected: str
    integers_only: bool


OPS = [Op("+", operator.add, "__add__", "__radd__", False),
       Op("-", operator.sub, "__sub__", "__rsub__", False),
       Op("*", operator.mul, "__mul__", "__rmul__", False),
       Op("/", operator.truediv, "__truediv__", "__rtruediv__", False),
       Op("//", operator.floordiv, "__floordiv__", "__rfloordiv__", False),
       Op("%", operator.mod, "__mod__", "__rmod__", False),
       Op("&", operator.and_, "__and__", "__rand__", True),
       Op("|", operator.or_, "__or__", "__ror__", True),
       Op("^", operator.xor, "__xor__", "__rxor__", True)]
# `a <op> b` as the interpreter runs it (a BINARY_OP in this frame), per symbol
INFIX: dict[str, Callable[[Any, Any], Any]] = {
    op.symbol: eval(f"lambda a, b: a {op.symbol} b") for op in OPS}  # noqa: S307 - our symbols


class Case:
    """One drawn case: values of a dtype and size, an operator, the arrays it made that a
    caller holds (with the values they must keep), and its results with numpy's answers."""

    def __init__(self, xp: Any, device: Any, dtype: str, n: int, op: Op,
                 rng: random.Random) -> None:
        self.xp, self.device, self.dtype, self.n, self.op = xp, device, dtype, n, op
        self.rng = rng
        self.held: list[tuple[Callable[[], Any], np.ndarray]] = []
        self.results: list[tuple[Any, Any]] = []
        self.operations = 0  # operator calls made

    def values(self) -> np.ndarray:
        """Fresh values, never zero (they divide)."""
        start = self.rng.randint(1, 50)
        v = (np.arange(start, start + self.n) % 97 + 1).astype(self.dtype)
        return v + 0.5 if v.dtype.kind == "f" else v

    def one(self) -> int | float:
        """A Python scalar 1 of the values' kind (a weak scalar: the dtype stays)."""
        return 1 if self.dtype == "int64" else 1.0

    def fresh(self, v: np.ndarray) -> Any:
        """An array of `v`'s values made by an expression (as `xp.ones(n) * 1.0`): nothing
        else references it."""
        return self.xp.asarray(v, device=self.device) * self.one()

    def keep(self, find: Callable[[], Any], v: np.ndarray) -> None:
        """An array a caller holds, found by `find` (through its holder: a reference of this
        case's own would keep its count above one), must keep the values `v`."""
        self.held.append((find, v))

    def other(self) -> tuple[Any, Any]:
        """The other operand, held by this frame: an array or a Python scalar, and its value."""
        if self.rng.random() < 0.25:
            s = self.rng.choice([3, 2]) if self.dtype == "int64" else self.rng.choice([2.5, 3.0])
            return s, s
        v = self.values()
        x = self.xp.asarray(v, device=self.device, copy=True)  # (not `v`'s memory: it is kept)
        self.keep(lambda: x, v)
        return x, v

    def expect(self, result: Any, a: Any, b: Any) -> None:
        """`result` of one operator call must be numpy's `a <op> b` (numpy arrays or Python
        scalars)."""
        with np.errstate(all="ignore"):
            self.record(result, self.op.function(a, b), 1)

    def record(self, result: Any, want: Any, operations: int) -> None:
        """`result`, of `operations` operator calls, must be `want`."""
        self.results.append((result, want))
        self.operations += operations


# -- the kinds of calls: each makes its operands, runs its operation(s) and records them -------
def _slot_class(name: str, method: str, value: Any) -> Any:
    """An instance of a new class whose operator method `method` is `value` (a C callable)."""
    return type(name, (), {method: value})()


def _scalar(c: Case) -> int | float:
    return 3 if c.dtype == "int64" else 2.5


def _partial(c: Case, function: Callable[[Any, Any], Any]
             ) -> tuple[functools.partial[Any], np.ndarray]:
    """`functools.partial(function, array)`, the array held by the partial alone; its values."""
    v = c.values()
    p = functools.partial(function, c.fresh(v))
    c.keep(lambda: p.args[0], v)
    return p, v


def _partial_namespace(c: Case) -> None:
    """`P() + y` where `P.__add__ = functools.partial(xp.add, array)` (a namespace function)."""
    p, v = _partial(c, c.xp.add)
    y, w = c.other()
    with np.errstate(all="ignore"):
        c.record(_slot_class("P", "__add__", p) + y, v + w, 1)


def _bound(c: Case, method: str) -> tuple[Any, np.ndarray]:
    """`array.method`, a method-wrapper: the array is held by it alone; its values."""
    v = c.values()
    bound = getattr(c.fresh(v), method)
    c.keep(lambda: bound.__self__, v)
    return bound, v


Holder = Callable[[Case, str], tuple[Any, np.ndarray]]  # (case, method name) -> (method, values)


def _partial_method(c: Case, method: str) -> tuple[Any, np.ndarray]:
    """`functools.partial(operator.op, array)`: as either method, `operator.op(array, other)`."""
    return _partial(c, c.op.function)


def _forward(c: Case, holder: Holder) -> None:
    """`X() <op> y` where `X.__op__` is a C callable holding an array: `array <op> y`."""
    method, v = holder(c, c.op.forward)
    y, w = c.other()
    c.expect(INFIX[c.op.symbol](_slot_class("X", c.op.forward, method), y), v, w)


def _reflected(c: Case, holder: Holder, swapped: bool) -> None:
    """`s <op> X()` (a Python scalar on the left) where `X.__rop__` is a C callable holding an
    array: `s <op> array` if `swapped` (a bound `array.__rop__`), else `array <op> s`."""
    method, v = holder(c, c.op.reflected)
    s = _scalar(c)
    got = INFIX[c.op.symbol](s, _slot_class("X", c.op.reflected, method))
    c.expect(got, *((s, v) if swapped else (v, s)))


def _methodcaller(c: Case) -> None:
    """`M() <op> y` where `M.__op__ = operator.methodcaller("__rop__", array)`: y.__rop__(array)
    is `array <op> y`."""
    v = c.values()
    caller = operator.methodcaller(c.op.reflected, c.fresh(v))
    c.keep(lambda: caller.__reduce__()[1][1], v)
    w = c.values()
    y = c.xp.asarray(w, device=c.device, copy=True)
    c.keep(lambda: y, w)
    c.expect(INFIX[c.op.symbol](_slot_class("M", c.op.forward, caller), y), v, w)


def _key_in_slot(c: Case) -> None:
    """`S() <op> [y]` where `S.__op__ = functools.partial(sorted or max, key=functools.partial(
    operator.op, array))`: the key is computed (and dropped) while the operator runs."""
    sort = functools.partial(c.rng.choice([sorted, max]), key=_partial(c, c.op.function)[0])
    y, _ = c.other()
    INFIX[c.op.symbol](_slot_class("S", c.op.forward, sort), [y])
    c.operations += 1


def _sorted_key(c: Case) -> None:
    """`sorted([y], key=functools.partial(operator.op, array))`, the key also called alone."""
    key, v = _partial(c, c.op.function)
    y, w = c.other()
    sorted([y], key=key)
    c.operations += 1
    c.expect(key(y), v, w)


def _pairs(c: Case) -> tuple[list[tuple[Any, Any]], list[tuple[np.ndarray, Any]]]:
    """One to three tuples (array, other operand) a caller holds, and their values."""
    pairs, want = [], []
    for i in range(c.rng.randint(1, 3)):
        v = c.values()
        y, w = c.other()
        pairs.append((c.fresh(v), y))
        c.keep(lambda i=i: pairs[i][0], v)
        want.append((v, w))
    return pairs, want


def _starmap_in_slot(c: Case) -> None:
    """`L() + itertools.starmap(operator.op, pairs)` where `L.__add__ = list`: the pairs' items,
    held by a caller's tuples, are the operands."""
    pairs, want = _pairs(c)
    got = _slot_class("L", "__add__", list) + itertools.starmap(c.op.function, pairs)
    for result, (v, w) in zip(got, want):
        c.expect(result, v, w)


def _starmap(c: Case) -> None:
    """`list(itertools.starmap(operator.op, pairs))` over tuples a caller holds."""
    pairs, want = _pairs(c)
    for result, (v, w) in zip(list(itertools.starmap(c.op.function, pairs)), want):
        c.expect(result, v, w)


def _operator_call(c: Case) -> None:
    """`operator.op(x * 1, y)`: a temporary, but passed to a call."""
    v = c.values()
    y, w = c.other()
    c.expect(c.op.function(c.fresh(v), y), v, w)


def _items(c: Case, count: int) -> tuple[list[Any], list[np.ndarray]]:
    """`count` arrays in a list a caller holds, and their values."""
    vs = [c.values() for _ in range(count)]
    items = [c.fresh(v) for v in vs]
    for i, v in enumerate(vs):
        c.keep(lambda i=i: items[i], v)
    return items, vs


def _map(c: Case) -> None:
    """`list(map(operator.op, xs, ys))` over a held list, and over a generator of fresh
    arrays (which may be reused)."""
    xs, vs = _items(c, c.rng.randint(1, 3))
    others = [c.other() for _ in vs]
    ys = [y for y, _ in others]
    for got, v, (_, w) in zip(list(map(c.op.function, xs, ys)), vs, others):
        c.expect(got, v, w)
    for got, v, (_, w) in zip(list(map(c.op.function, (c.fresh(v) for v in vs), ys)), vs,
                              others):
        c.expect(got, v, w)


def _reduce(c: Case, in_slot: bool) -> None:
    """`functools.reduce(operator.op, items)` over a held list (the accumulated results are its
    own and may be reused), called directly or as `R() <op> items` with `R.__op__ =
    functools.partial(functools.reduce, operator.op)`."""
    items, vs = _items(c, c.rng.randint(2, 4))
    if in_slot:
        r = _slot_class("R", c.op.forward, functools.partial(functools.reduce, c.op.function))
        got = INFIX[c.op.symbol](r, items)
    else:
        got = functools.reduce(c.op.function, items)
    with np.errstate(all="ignore"):
        c.record(got, functools.reduce(c.op.function, vs), len(vs) - 1)


def _sum(c: Case) -> None:
    """`sum(items, start)` over a held list, and `S() + start` with `S.__add__ =
    functools.partial(sum, items)`: sum(items, start)."""
    items, vs = _items(c, c.rng.randint(1, 3))
    start, w = c.other()
    with np.errstate(all="ignore"):
        want = sum(vs, w)
    c.record(sum(items, start), want, len(items))
    c.record(_slot_class("S", "__add__", functools.partial(sum, items)) + start, want,
             len(items))


def _comprehension(c: Case) -> None:
    """`[x <op> y for x in xs]` (held items) and `[(x * 1) <op> y for x in xs]` (temporaries,
    which may be reused)."""
    xs, vs = _items(c, c.rng.randint(1, 3))
    y, w = c.other()
    infix, one = INFIX[c.op.symbol], c.one()
    for got, v in zip([infix(x, y) for x in xs], vs):
        c.expect(got, v, w)
    for got, v in zip([infix(x * one, y) for x in xs], vs):
        c.expect(got, v, w)
    c.operations += len(xs)  # the products


def _object_array(c: Case) -> None:
    """`a <op> s` for a numpy object array `a` holding arrays: numpy's loop calls the operator
    on elements it holds."""
    vs = [c.values() for _ in range(c.rng.randint(1, 2))]
    a = np.empty(len(vs), dtype=object)
    for i, v in enumerate(vs):
        a[i] = c.fresh(v)  # held by the object array alone
        c.keep(lambda i=i: a[i], v)
    s = _scalar(c)
    for got, v in zip(INFIX[c.op.symbol](a, s), vs):
        c.expect(got, v, s)


def _plain(c: Case) -> None:
    """Expressions where reuse is allowed: `x <op> y` of held arrays, `(x * 1) <op> y`,
    `y <op> (x * 1)`, `(x * 1) <op> (y * 1)`, `((x * 1) <op> y) <op> z`."""
    infix, one, f = INFIX[c.op.symbol], c.one(), c.op.function
    (x, y, z), (v, w, u) = _items(c, 3)
    c.expect(infix(x, y), v, w)
    c.expect(infix(x * one, y), v, w)
    c.expect(infix(y, x * one), w, v)
    c.expect(infix(x * one, y * one), v, w)
    with np.errstate(all="ignore"):
        c.record(infix(infix(x * one, y), z), f(f(v, w), u), 3)
    c.operations += 4  # the other products


KINDS: dict[str, Callable[[Case], None]] = {
    "partial as __op__": functools.partial(_forward, holder=_partial_method),
    "partial as __rop__": functools.partial(_reflected, holder=_partial_method, swapped=False),
    "partial of xp.add as __add__": _partial_namespace,
    "bound method as __op__": functools.partial(_forward, holder=_bound),
    "bound method as __rop__": functools.partial(_reflected, holder=_bound, swapped=True),
    "methodcaller as __op__": _methodcaller,
    "sorted/max key in __op__": _key_in_slot,
    "list of a starmap in __add__": _starmap_in_slot,
    "reduce in __op__": functools.partial(_reduce, in_slot=True),
    "sum and partial(sum) in __add__": _sum,
    "operator call": _operator_call,
    "map": _map,
    "reduce": functools.partial(_reduce, in_slot=False),
    "starmap": _starmap,
    "sorted key": _sorted_key,
    "comprehension": _comprehension,
    "numpy object array": _object_array,
    "plain expressions": _plain,
}


def _sizes(dtype: str, rng: random.Random) -> int:
    """Around the threshold (in elements of `dtype`), or anywhere from 1 to 300,000."""
    at = THRESHOLD // np.dtype(dtype).itemsize
    if rng.random() < 0.5:
        return rng.choice([1, 1000, at - 1, at, at + 1, 2 * at, 3 * at])
    return rng.randint(1, 300_000)


def _host(x: Any) -> Any:
    return np.asarray(x.to_device("cpu")) if hasattr(x, "to_device") else x


def _same(got: Any, want: Any) -> bool:
    got, want = _host(got), np.asarray(want)
    return isinstance(got, np.ndarray) and got.dtype == want.dtype and \
        got.shape == want.shape and np.array_equal(got, want, equal_nan=want.dtype.kind == "f")


def main(device_name: str, cases: int, seed: int) -> dict[str, Any]:
    import warnings

    import hxarray as xp

    warnings.simplefilter("ignore")  # numpy's warnings for the values of unusual operations
    device = xp.Device(device_name)
    rng = random.Random(seed)
    tally = {kind: {"cases": 0, "operations": 0, "wrong": 0, "held changed": 0,
                    "result is a held array": 0, "errors": 0} for kind in KINDS}
    examples: dict[str, list[str]] = {}
    start = time.perf_counter()

    def found(kind: str, what: str, text: str) -> None:
        tally[kind][what] += 1
        listed = examples.setdefault(what, [])
        if len(listed) < LISTED:
            listed.append(f"{kind}: {text}")

    for _ in range(cases):
        kind = rng.choice(list(KINDS))
        dtype = rng.choice(["float64", "float32", "int64"])
        op = rng.choice([op for op in OPS if dtype == "int64" or not op.integers_only])
        n = _sizes(dtype, rng)
        case = Case(xp, device, dtype, n, op, rng)
        label = f"{op.symbol} {dtype} n={n}"
        tally[kind]["cases"] += 1
        try:
            KINDS[kind](case)
        except Exception as exc:  # noqa: BLE001 - the finding
            found(kind, "errors", f"{label}: {type(exc).__name__}: {exc}"[:300])
            continue
        held = [(find(), v) for find, v in case.held]
        tally[kind]["operations"] += case.operations
        for got, want in case.results:
            if not _same(got, want):
                found(kind, "wrong", label)
            if any(got is x for x, _ in held):
                found(kind, "result is a held array", label)
        for x, v in held:
            if not _same(x, v):
                found(kind, "held changed", label)
    failures = {what: sum(t[what] for t in tally.values())
                for what in ("wrong", "held changed", "result is a held array", "errors")}
    return {"device": device_name, "cases": cases, "by_kind": tally, **failures,
            "operations": sum(t["operations"] for t in tally.values()),
            "examples": examples, "clean": not any(failures.values()),
            "seconds": round(time.perf_counter() - start, 1)}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))
