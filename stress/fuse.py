"""Fuse: `xp.fuse(f)` and `xp.fuse(f, fallback=True)` against `f` run unfused (docs/fuse.md).

Each case is a random element-wise function of 1 to 3 arguments (float32, float64, int32, int64,
bool arrays, 0-d to 3-d, some empty, some large; Python scalars; the same array twice) built from
the operators, `exp`, `sqrt`, `abs`, `where`, `clip`, `astype`, Python scalars and at most one
reduction (`sum`, `mean`, `max` with `axis` and `keepdims`). Its operands are the arguments,
views of them and of computed values (`.T`, `.mT`, `permute_dims`, `flip`, strided slices,
`broadcast_to` of a slice, `reshape`, `[None]`, `expand_dims`), and values it reads besides its
arguments: module globals (a float, an int, a dtype, a flag choosing a branch), a closure
variable, a module's attribute, a list item, a dict item, a helper function's global, and
(refused by fuse) an object's attribute or the object of a bound method. Between its calls the
part assigns those values anew (0.0 to -0.0, 1 to 1.0 to True, one dtype to another) and draws
new argument values, layouts (contiguous, strided, transposed, offset) and, for some calls,
other shapes of as many dimensions. Numpy mode's functions use any dtypes and operations, strict
mode's one kind of dtype (float or int) and the operations the standard defines on it.

Every call is compared with the function run unfused on the same device: the same dtype and
shape, bit for bit (a NaN's sign aside: counted, not a failure) unless the function reads a
transcendental result (`exp`, `**`), then within `BOUND` ulps; or the same exception class; or,
without `fallback`, the `TypeError` fuse raises for what it documents as not fused (a view, a
value read through an object, a power with an array exponent). Arguments must be unchanged.

`python -m stress.fuse DEVICE CASES SEED` runs CASES functions in numpy mode and CASES in strict
mode, and prints the figures as JSON."""

from __future__ import annotations

import json
import math
import random
import re
import sys
import time
import types
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .differential import _class_differs, ulps

BOUND = 16  # ulps: a transcendental result (each side's library within 4), then * / sqrt of it
CALLS = 6  # calls per case and mode
LISTED = 12  # failures listed per kind
DTYPES = ("float32", "float64", "int32", "int64", "bool")
FLOATS = (0.0, -0.0, 1.5, -2.0, math.nan)  # a captured float's successive values
INTS = (1, 1.0, True, 2, -3)  # a captured number's: one value in three types, then others
FLAGS = (True, False, 1, 0)
DTYPE_NAMES = ("float64", "float32", "int64", "bool", "int32")  # a captured dtype's


# -- expressions -----------------------------------------------------------------------------------
class Node(NamedTuple):
    """A drawn expression: its source, its shape (None for a Python scalar), whether it reads
    a transcendental result, and whether fuse may refuse it."""

    src: str
    shape: tuple[int, ...] | None
    tainted: bool = False
    refusable: bool = False


def _shape_of(template: str, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape `template` (`{x}` standing for an array of `shape`) gives, by numpy's rules;
    None where it raises."""
    try:
        return tuple(eval(template.format(x="x"), {"xp": np, "x": np.zeros(shape)}).shape)
    except Exception:  # noqa: BLE001 - a view this shape cannot take
        return None


def _broadcast(*shapes: tuple[int, ...] | None) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(*(s for s in shapes if s is not None)))
    except ValueError:
        return None


# What a function is made of: in numpy mode anything; in strict mode one kind of dtype and the
# operations the standard defines on it (strict mode refuses the rest, which would leave few
# calls that compute).
VOCABULARY: dict[str | None, dict[str, tuple[Any, ...]]] = {
    None: {"dtypes": DTYPES, "literals": (2, 3, -1, 0.5, 2.5, -0.0, True, 1e3),
           "binary": ("+", "-", "*", "/", "//", "%", "&", "|", "^", "<", "<=", ">", ">=", "==",
                      "!=", "+", "-", "*", "/", "*"),
           "unary": ("-{}", "abs({})", "xp.abs({})", "xp.sqrt({})", "~{}"),
           "transcendental": ("exp", "2", "3", "0.5", "-1", "G_I", "ARRAY"),
           "bounds": (-1, 0, 0.5, 2, 3.5, -0.0), "casts": DTYPES,
           "reductions": ("sum", "mean", "max")},
    "float": {"dtypes": ("float32", "float64"), "literals": (2.0, -1.0, 0.5, 2.5, -0.0, 1e3),
              "binary": ("+", "-", "*", "/", "//", "%", "*", "/", "*"),
              "unary": ("-{}", "abs({})", "xp.abs({})", "xp.sqrt({})"),
              "transcendental": ("exp", "2.0", "0.5", "-1.0"),
              "bounds": (-1.0, 0.0, 0.5, 2.0, 3.5, -0.0), "casts": ("float32", "float64"),
              "reductions": ("sum", "mean", "max")},
    "int": {"dtypes": ("int32", "int64"), "literals": (2, 3, -1, 0, 7),
            "binary": ("+", "-", "*", "//", "%", "&", "|", "^"),
            "unary": ("-{}", "abs({})", "xp.abs({})", "~{}"), "transcendental": ("2", "3"),
            "bounds": (-1, 0, 2, 3, 7), "casts": ("int32", "int64"),
            "reductions": ("sum", "max")},
}


class Draw:
    """Draws a function body over arguments of `shapes`, reading `captures` (their names in
    the source) and at most one reduction, from the vocabulary of `kind`."""

    def __init__(self, rng: random.Random, shapes: list[tuple[int, ...] | None],
                 captures: list[str], kind: str | None) -> None:
        self.rng = rng
        self.words = VOCABULARY[kind]
        self.shapes = shapes
        self.reduction = rng.random() < 0.35
        self.flag = "G_FLAG" in captures
        self.dtype = "G_DT" in captures
        self.helper = "helper" in captures
        self.scalars = [c for c in captures if c not in ("G_FLAG", "G_DT", "helper")]

    def view(self, shape: tuple[int, ...]) -> str:
        """A view's source template (`{x}` for the array) that applies to `shape`."""
        rng, d = self.rng, len(shape)
        kinds = ["[None]", "expand"] + (["flip", "slice", "broadcast", "reshape"] if d else []) \
            + (["mT", "permute"] if d >= 2 else []) + (["T"] if d == 2 else [])
        kind = rng.choice(kinds)
        if kind == "[None]":
            return "{x}[None]"
        if kind == "expand":
            return f"xp.expand_dims({{x}}, axis={rng.randint(-d - 1, d)})"
        if kind == "flip":
            return rng.choice(["xp.flip({x})", f"xp.flip({{x}}, axis={rng.randrange(d)})"])
        if kind == "slice":
            steps = [rng.choice(["::2", "::-1", "1:", ":-1", "1::2", "::-2", ":"]) for _ in shape]
            return "{x}[" + ", ".join(steps) + "]"
        if kind == "broadcast":
            return f"xp.broadcast_to({{x}}[..., :1], {shape})"
        if kind == "reshape":
            size = math.prod(shape)
            return f"xp.reshape({{x}}, {rng.choice([(size,), (1, *shape), shape[::-1]])})"
        if kind == "permute":
            return f"xp.permute_dims({{x}}, {tuple(rng.sample(range(d), d))})"
        return "{x}." + kind

    def leaf(self, compat: tuple[int, ...] | None) -> Node:
        """An argument or a view of one (broadcastable with `compat`), or a Python scalar:
        captured or a literal."""
        rng = self.rng
        for _ in range(8):
            if rng.random() < 0.35:
                break
            i = rng.randrange(len(self.shapes))
            node = Node(f"a{i}", self.shapes[i])
            if node.shape is not None and rng.random() < 0.2:
                node = self.apply_view(node)
            if node.shape is not None and (compat is None or _broadcast(compat, node.shape)
                                           is not None):
                return node
        return self.scalar_node()

    def scalar_node(self) -> Node:
        """A captured value, a Python scalar argument or a literal."""
        if self.scalars and self.rng.random() < 0.7:
            name = self.rng.choice(self.scalars)
            return Node(name, None, refusable=name in ("OBJ.k", "self.k"))
        return Node(repr(self.rng.choice(self.words["literals"])), None)

    def apply_view(self, node: Node) -> Node:
        """A view of `node` (`node` itself where the drawn view does not apply)."""
        assert node.shape is not None
        template = self.view(node.shape)
        shape = _shape_of(template, node.shape)
        if shape is None:
            return node
        src = template.format(x=self.wrap(node))
        return node._replace(src=src, shape=shape, refusable=True)

    def expr(self, depth: int, compat: tuple[int, ...] | None = None,
             exact: bool = False) -> Node:
        """An expression broadcastable with `compat`; `exact` forbids transcendental results
        (where their last bits could change a comparison, a cast to an integer, a sum)."""
        rng = self.rng
        if depth <= 0 or rng.random() < 0.2:
            return self.leaf(compat)
        for _ in range(4):
            node = self.compound(depth, compat, exact)
            if node is not None and (compat is None or node.shape is None or
                                     _broadcast(compat, node.shape) is not None):
                return node
        return self.leaf(compat)

    def compound(self, depth: int, compat: tuple[int, ...] | None, exact: bool) -> Node | None:
        """An operation of drawn operands (None where they do not fit together)."""
        rng = self.rng
        kinds = {"binary": 8, "unary": 3, "where": 2, "clip": 1, "astype": 2, "view": 1}
        if not exact:
            kinds["transcendental"] = 2
        if self.reduction:
            kinds["reduction"] = 2
        if self.flag:
            kinds["flag"] = 1
        if self.helper:
            kinds["helper"] = 1
        kind = rng.choices(list(kinds), list(kinds.values()))[0]
        d = depth - 1
        if kind == "binary":
            # * and / keep a transcendental operand's relative error: they may take one
            symbol = rng.choice(self.words["binary"])
            inner = exact or symbol not in ("*", "/")
            left = self.expr(d, compat, inner)
            right = self.expr(d, left.shape if left.shape is not None else compat, inner)
            if left.shape is None and right.shape is None:
                return None
            return self.combine(f"{self.wrap(left)} {symbol} {self.wrap(right)}", left, right)
        if kind == "unary":
            fmt = rng.choice(self.words["unary"])
            x = self.expr(d, compat, exact or fmt == "~{}")
            return x._replace(src=fmt.format(self.wrap(x))) if x.shape is not None else None
        if kind == "transcendental":
            x = self.expr(d, compat, True)
            if x.shape is None:
                return None
            exponent = rng.choice(self.words["transcendental"])
            if exponent == "exp":
                return x._replace(src=f"xp.exp({x.src})", tainted=True)
            if exponent == "G_I" and "G_I" not in self.scalars:
                exponent = "2"
            if exponent == "ARRAY":  # fuse refuses a signed integer power of an array exponent
                e = self.expr(d, x.shape, True)
                if e.shape is None:
                    return None
                node = self.combine(f"{self.wrap(x)} ** {self.wrap(e)}", x, e)
                return node._replace(tainted=True, refusable=True)
            return x._replace(src=f"{self.wrap(x)} ** {exponent}", tainted=True)
        if kind == "where":
            cond = self.expr(d, compat, True)
            if cond.shape is None:
                return None
            symbol = rng.choice(["<", ">", "==", ">="])
            cond = cond._replace(src=f"{self.wrap(cond)} {symbol} "
                                     f"{rng.choice(self.words['literals'])!r}")
            a = self.expr(d, cond.shape, exact)
            b = self.expr(d, _broadcast(cond.shape, a.shape), exact)
            return self.combine(f"xp.where({cond.src}, {a.src}, {b.src})", cond, a, b)
        if kind == "clip":
            x = self.expr(d, compat, exact)
            if x.shape is None:
                return None
            low, high = sorted(rng.sample(self.words["bounds"], 2))
            bounds = rng.choice([f"{low!r}, {high!r}", f"None, {high!r}", f"{low!r}, None"])
            return x._replace(src=f"xp.clip({x.src}, {bounds})")
        if kind == "astype":
            to = rng.choice(["G_DT"] * self.dtype + [f"xp.{t}" for t in self.words["casts"]])
            x = self.expr(d, compat, exact or to in ("G_DT", "xp.int32", "xp.int64", "xp.bool"))
            return x._replace(src=f"xp.astype({x.src}, {to})") if x.shape is not None else None
        if kind == "view":
            x = self.expr(d, None, exact)
            if x.shape is None or x.src.isidentifier():  # (an argument's views are leaves)
                return None
            return self.apply_view(x)
        if kind == "flag":
            a, b = self.expr(d, compat, exact), self.expr(d, compat, exact)
            if a.shape is None or b.shape is None:
                return None
            return self.combine(f"({a.src} if G_FLAG else {b.src})", a, b)
        if kind == "helper":
            x = self.expr(d, compat, exact)
            return x._replace(src=f"helper({x.src})") if x.shape is not None else None
        return self.reduce(d, exact)

    def reduce(self, depth: int, exact: bool) -> Node | None:
        """sum, mean (of exact values: their order of rounding is fixed) or max, once."""
        rng = self.rng
        name = rng.choice(self.words["reductions"])
        self.reduction = False
        x = self.expr(depth, None, exact or name != "max")
        if x.shape is None:
            return None
        d = len(x.shape)
        axis = rng.choice([None] + ([rng.randrange(-d, d), tuple(sorted(rng.sample(
            range(d), rng.randint(1, d))))] if d else []))
        keepdims = rng.random() < 0.5
        template = f"xp.{name}({{x}}, axis={axis!r}, keepdims={keepdims})"
        shape = _shape_of(template.replace("xp.max", "xp.sum"), x.shape)  # (max of empty)
        return None if shape is None else x._replace(src=template.format(x=x.src), shape=shape)

    def combine(self, src: str, *nodes: Node) -> Node | None:
        shape = _broadcast(*(n.shape for n in nodes))
        if shape is None:
            return None
        return Node(src, shape, any(n.tainted for n in nodes), any(n.refusable for n in nodes))

    @staticmethod
    def wrap(node: Node) -> str:
        """The source as an operand of an operator: in parentheses unless it is a name or a
        call."""
        src = node.src
        if re.fullmatch(r"[\w.]+", src):
            return src
        call = re.match(r"[\w.]+\(", src)
        if call:  # a call, if its parenthesis closes at the end
            depth = 0
            for i, char in enumerate(src[call.end() - 1:], call.end() - 1):
                depth += {"(": 1, ")": -1}.get(char, 0)
                if depth == 0:
                    if i == len(src) - 1:
                        return src
                    break
        return f"({src})"


# -- cases -----------------------------------------------------------------------------------------
# What a function may read besides its arguments, by its name in the source; OBJ.k and self.k are
# read through an object (fuse refuses them).
CAPTURES = ("G_F", "G_I", "G_DT", "G_FLAG", "C", "cfg.k", "params[0]", 'opts["k"]', "helper")
SOURCE = """def make(C):
    def f({params}):
        return {body}
    def set_c(value):
        nonlocal C
        C = value
    return f, set_c
"""


class Case(NamedTuple):
    """A drawn function: its body, its arguments' dtypes and shapes (and which argument is
    another), the successive values of what it reads besides them (and of its Python scalar
    arguments), whether it is fused as a bound method, and what its body holds."""

    body: str
    dtypes: list[str]
    shapes: list[tuple[int, ...] | None]  # None: a Python scalar argument (its values captured)
    resized: list[tuple[int, ...] | None]  # other shapes of as many dimensions, for half the calls
    aliases: dict[int, int]
    captures: dict[str, tuple[Any, ...]]
    bound: bool
    tainted: bool
    single: bool  # a transcendental result may be float32 (then converted)
    refusable: bool
    seed: int


def _base_shape(rng: random.Random) -> tuple[int, ...]:
    r = rng.random()
    if r < 0.08:
        return rng.choice([(0,), (2, 0), (0, 3)])
    if r < 0.14:  # loops split over the thread pool, and releasing the GIL
        return rng.choice([(5000,), (3, 700), (70_000,)])
    n = rng.choice([1, 2, 3, 4])
    square = rng.random() < 0.5
    return tuple(n if square else rng.choice([1, 2, 3, 4]) for _ in range(rng.choice(
        [0, 1, 2, 2, 3])))


def _shapes(rng: random.Random, count: int) -> list[tuple[int, ...]]:
    """The arguments' shapes: the base shape, a suffix of it or with a 1 (broadcast), with a
    doubled axis (for strided views) or reversed (for transposes)."""
    base = _base_shape(rng)
    shapes = []
    for _ in range(count):
        r, s = rng.random(), base
        if s and r < 0.45:
            k = rng.randrange(len(s))
            s = s[k:] if r < 0.2 else s[:k] + ((1,) if r < 0.35 else (2 * s[k],)) + s[k + 1:]
        elif r < 0.55:
            s = s[::-1]
        shapes.append(s)
    return shapes


def draw(rng: random.Random, kind: str | None) -> Case:
    """A case from the vocabulary of `kind`."""
    count = rng.randint(1, 3)
    choices = VOCABULARY[kind]["dtypes"]
    dtype = rng.choice(choices)
    dtypes = [dtype if rng.random() < 0.5 else rng.choice(choices) for _ in range(count)]
    shapes: list[tuple[int, ...] | None] = list(_shapes(rng, count))
    names = rng.sample(CAPTURES, rng.choice([0, 1, 1, 2, 2, 3, 4]))
    for i in range(1, count):  # a Python scalar argument: a constant of the trace
        if rng.random() < 0.15:
            shapes[i] = None
            names.append(f"a{i}")
    aliases = {}  # an argument that is another one (the same array object at every call)
    for i in range(1, count):
        same = [j for j in range(i) if shapes[i] is not None and
                (dtypes[j], shapes[j]) == (dtypes[i], shapes[i])]
        if same and rng.random() < 0.15:
            aliases[i] = rng.choice(same)
    if rng.random() < 0.1:
        names.append("OBJ.k")
    bound = rng.random() < 0.08
    if bound:
        names.append("self.k")
    captures: dict[str, tuple[Any, ...]] = {}
    for name in names:
        captures[name] = {"G_F": FLOATS, "G_I": INTS, "G_DT": DTYPE_NAMES,
                          "G_FLAG": FLAGS}.get(name) or rng.choice([FLOATS, INTS])
    node = Node("a0", shapes[0])
    for _ in range(20):  # a compound body, reading what it captures where it can
        drawn = Draw(rng, shapes, list(captures), kind).compound(rng.randint(1, 3), None,
                                                                 False)
        if drawn is not None and drawn.shape is not None:
            node = drawn
            if not captures or any(name.partition("[")[0] in node.src for name in captures):
                break
    # Each size mapped to another, the same in every argument, so that operands that broadcast
    # together mostly still do: the trace of a signature (dtypes and numbers of dimensions)
    # serves every shape. Often every size to 1, where a view (a transpose, a flip, a strided
    # slice) is all of its array, and another value at the other shape.
    sizes = {n for shape in shapes if shape for n in shape}
    ones = rng.random() < 0.5
    mapping = {n: 1 if ones else rng.choice([3, 1] if n == 1 else [1, n, n + 1, 2 * n] if n < 100
                                            else [n, n + 1]) if n else 0 for n in sizes}
    resized = [None if shape is None else tuple(mapping[n] for n in shape) for shape in shapes]
    # float32 arguments, casts to float32 and (in numpy mode) functions of bools compute in
    # single precision
    single = "float32" in node.src or "G_DT" in node.src or any(
        d in ("float32", "bool") for d in dtypes)
    return Case(node.src, dtypes, shapes, resized, aliases, captures, bound, node.tainted, single,
                node.refusable or bound, rng.randrange(2**32))


class Built:
    """A case's function made anew (its namespace, closure, helper and object), with setters
    of what it reads besides its arguments."""

    def __init__(self, case: Case, xp: Any) -> None:
        self.namespace: dict[str, Any] = {"xp": xp, "cfg": types.ModuleType("cfg"),
                                          "params": [None], "opts": {"k": None}}
        self.helper_space: dict[str, Any] = {}
        exec("def helper(x):\n    return x * H\n", self.helper_space)  # noqa: S102
        self.namespace["helper"] = self.helper_space["helper"]
        self.obj = types.SimpleNamespace(k=None)
        self.namespace["OBJ"] = self.obj
        params = ", ".join(["self"] * case.bound + [f"a{i}" for i in range(len(case.dtypes))])
        self.source = SOURCE.format(params=params, body=case.body)
        exec(compile(self.source, "<stress.fuse case>", "exec"), self.namespace)  # noqa: S102
        f, self.set_c = self.namespace["make"](None)
        self.function = types.MethodType(f, self.obj) if case.bound else f
        self.dtypes = {name: getattr(xp, name) for name in DTYPE_NAMES}
        self.where = {name: 0 for name in case.captures}
        self.scalar_arguments: dict[int, Any] = {}
        self.case = case
        for name in case.captures:
            self.assign(name)

    def assign(self, name: str) -> None:
        """Give `name` its current value."""
        value = self.case.captures[name][self.where[name]]
        if name == "G_DT":
            value = self.dtypes[value]
        if name.startswith("G_"):
            self.namespace[name] = value
        elif name == "C":
            self.set_c(value)
        elif name == "cfg.k":
            self.namespace["cfg"].k = value
        elif name == "params[0]":
            self.namespace["params"][0] = value
        elif name == 'opts["k"]':
            self.namespace["opts"]["k"] = value
        elif name == "helper":
            self.helper_space["H"] = value
        elif name.startswith("a"):  # a Python scalar argument
            self.scalar_arguments[int(name[1:])] = value
        else:  # OBJ.k, self.k
            self.obj.k = value

    def advance(self, rng: random.Random) -> None:
        """The next value of each captured value, each with probability 0.6."""
        for name, values in self.case.captures.items():
            if rng.random() < 0.6:
                self.where[name] = (self.where[name] + 1) % len(values)
                self.assign(name)

    def state(self) -> str:
        return ", ".join(f"{name}={values[self.where[name]]!r}"
                         for name, values in self.case.captures.items())


# -- calls -----------------------------------------------------------------------------------------
def _argument(xp: Any, device: Any, gen: np.random.Generator, dtype: str,
              shape: tuple[int, ...]) -> tuple[Any, Any, str]:
    """An argument of random values, laid out contiguous, strided, transposed or at an offset;
    the array holding it (whose bytes must not change) and the layout's name."""
    values = _values(gen, dtype, shape)
    layout = gen.choice(["contiguous", "contiguous", "strided", "transposed", "offset"]) \
        if shape else "contiguous"
    if layout == "strided":
        big = np.zeros(shape[:-1] + (2 * shape[-1],), dtype)
        big[..., ::2] = values
        base = xp.asarray(big, device=device)
        return base[..., ::2], base, layout
    if layout == "transposed":
        base = xp.asarray(np.ascontiguousarray(values.T), device=device)
        return xp.permute_dims(base, tuple(reversed(range(len(shape))))), base, layout
    if layout == "offset":
        base = xp.asarray(np.concatenate([np.zeros((1,) + shape[1:], dtype), values]),
                          device=device)
        return base[1:], base, layout
    base = xp.asarray(values, device=device)
    return base, base, layout


def _values(gen: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """Random values of `dtype`: small numbers, zeros of both signs, one in ten special (NaN,
    infinities, integer extremes)."""
    if dtype == "bool":
        return gen.random(shape) < 0.5
    if dtype.startswith("int"):
        info = np.iinfo(dtype)
        common = np.array([0, 1, -1, 2, 3, -7, 100, -100], dtype)
        special = np.array([info.max, info.min], dtype)
    else:
        common = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 7.0, 100.0, -0.125], dtype)
        special = np.array([math.nan, math.inf, -math.inf], dtype)
    return np.where(gen.random(shape) < 0.1, gen.choice(special, shape),
                    gen.choice(common, shape))


def _host(xp: Any, x: Any) -> np.ndarray:
    return np.asarray(x.to_device(xp.Device("cpu")))


def _call(function: Callable[..., Any], args: list[Any]) -> Any:
    try:
        return function(*args)
    except Exception as exc:  # noqa: BLE001 - compared with the unfused call
        return exc


def _refusal(result: Any) -> bool:
    return isinstance(result, TypeError) and str(result).startswith("hxarray.fuse(")


def compare(xp: Any, got: Any, want: Any, case: Case) -> tuple[str, int, float]:
    """How `got` (an array or an exception) stands against `want`, the unfused call's: "exact",
    "close" (within BOUND ulps, for a transcendental result: of float32 where it may have been
    computed in single precision), "same exception", or the kind of difference; and the NaNs of
    another sign, the largest ulp difference."""
    if isinstance(want, Exception) or isinstance(got, Exception):
        if type(got) is type(want):
            return "same exception", 0, 0.0
        return ("raised" if isinstance(got, Exception) else "returned where unfused raised"), \
            0, 0.0
    if not hasattr(got, "to_device"):
        return f"returned {type(got).__name__}", 0, 0.0
    if got.dtype != want.dtype or got.shape != want.shape:
        return "dtype or shape", 0, 0.0
    g, w = _host(xp, got).ravel(), _host(xp, want).ravel()
    if g.dtype.kind != "f":
        return ("exact" if np.array_equal(g, w) else "value"), 0, 0.0
    nan_signs = int((np.isnan(g) & np.isnan(w) & (np.signbit(g) != np.signbit(w))).sum())
    if _class_differs(g, w).any():  # NaN, infinities, the signs of zeros
        return "value", nan_signs, 0.0
    if case.tainted:
        if case.single:
            g, w = g.astype(np.float32), w.astype(np.float32)
        error = np.where(np.isfinite(w), ulps(g, w), 0.0)
        worst = float(error.max()) if error.size else 0.0
        return ("close" if worst <= BOUND else "ulps"), nan_signs, worst
    return ("exact" if not ((g != w) & ~np.isnan(w)).any() else "value"), nan_signs, 0.0


class Record:
    """The figures of numpy mode or strict mode."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.counts = {"cases": 0, "calls": 0, "unfused raised": 0, "nan signs": 0}
        self.fused = {"exact": 0, "close": 0, "same exception": 0, "refused": 0}
        self.fallback = {"exact": 0, "close": 0, "same exception": 0}
        self.failures: dict[str, int] = {}
        self.worst_ulps = 0.0
        self.examples: list[str] = []

    def fail(self, kind: str, text: str) -> None:
        self.failures[kind] = self.failures.get(kind, 0) + 1
        if sum(e.startswith(kind) for e in self.examples) < LISTED:
            self.examples.append(f"{kind}: {text}"[:1500])

    def json(self) -> dict[str, Any]:
        return {"strict": self.strict, **self.counts, "fused": self.fused,
                "fallback": self.fallback, "failures": self.failures,
                "worst_ulps": self.worst_ulps, "examples": self.examples}


def _arguments(xp: Any, device: Any, case: Case, built: Built, gen: np.random.Generator,
               shapes: list[tuple[int, ...] | None]) -> list[tuple[Any, Any, str]]:
    """One call's arguments of `shapes`: (the argument, the array holding it or None, its
    layout)."""
    made: list[tuple[Any, Any, str]] = []
    for i, (dtype, shape) in enumerate(zip(case.dtypes, shapes)):
        if shape is None:
            made.append((built.scalar_arguments[i], None, "Python scalar"))
        elif i in case.aliases:
            made.append(made[case.aliases[i]][:2] + (f"a{case.aliases[i]} again",))
        else:
            made.append(_argument(xp, device, gen, dtype, shape))
    return made


def _describe(xp: Any, case: Case, built: Built, strict: bool, call: int,
              made: list[tuple[Any, Any, str]], shapes: list[tuple[int, ...] | None],
              result: Any, want: Any) -> str:
    """A failure's call: the function, what it read, its arguments, both results."""
    arguments = "; ".join(
        f"a{i}: {a!r}" if s is None else
        f"a{i}: {layout} {d}{s} {np.array2string(_host(xp, a).ravel()[:12])}"
        for i, ((a, _, layout), d, s) in enumerate(zip(made, case.dtypes, shapes)))
    shown, wanted = (f"{r.dtype}{r.shape} {np.array2string(_host(xp, r).ravel()[:12])}"
                     if hasattr(r, "to_device") else repr(r)[:200] for r in (result, want))
    return (f"{'strict' if strict else 'numpy mode'}, call {call}: f = {case.body!r} "
            f"({built.state()}{', bound method' * case.bound}); {arguments}; got {shown}, "
            f"unfused {wanted}")


def run_case(xp: Any, device: Any, case: Case, record: Record, strict: bool) -> None:
    """A case's calls: the function unfused, fused and fused with fallback, compared."""
    built = Built(case, xp)
    fused, fallback = xp.fuse(built.function), xp.fuse(built.function, fallback=True)
    rng = random.Random(case.seed)
    gen = np.random.default_rng(case.seed)
    record.counts["cases"] += 1
    for call in range(CALLS):
        if call:
            built.advance(rng)
        shapes = case.resized if rng.random() < 0.5 else case.shapes
        made = _arguments(xp, device, case, built, gen, shapes)
        args = [a for a, _, _ in made]
        before = [None if base is None else _host(xp, base).tobytes() for _, base, _ in made]
        want = _call(built.function, args)
        record.counts["calls"] += 1
        record.counts["unfused raised"] += isinstance(want, Exception)
        for name, function, tally in (("fused", fused, record.fused),
                                      ("fallback", fallback, record.fallback)):
            got = _call(function, args)
            verdict, nan_signs, worst = compare(xp, got, want, case)
            record.counts["nan signs"] += nan_signs
            record.worst_ulps = max(record.worst_ulps, worst)
            if verdict in tally:
                tally[verdict] += 1
            elif function is fused and _refusal(got) and case.refusable:
                tally["refused"] += 1
            else:
                record.fail(f"{name} {verdict}", _describe(xp, case, built, strict, call, made,
                                                           shapes, got, want))
            for (_, base, _), old in zip(made, before):
                if base is not None and _host(xp, base).tobytes() != old:
                    record.fail("input changed", _describe(xp, case, built, strict, call, made,
                                                           shapes, got, want))


def main(device_name: str, cases: int, seed: int) -> dict[str, Any]:
    import hxarray as xp

    warnings.simplefilter("ignore")  # numpy's warnings for the values of unusual operations
    device = xp.Device(device_name)
    rng = random.Random(seed)
    start = time.perf_counter()
    records = []
    for strict in (False, True):
        drawn = [draw(rng, rng.choice(["float", "float", "int"]) if strict else None)
                 for _ in range(cases)]
        record = Record(strict)
        began = time.perf_counter()
        with xp.set_strict(strict):
            for case in drawn:
                run_case(xp, device, case, record, strict)
        records.append({**record.json(), "seconds": round(time.perf_counter() - began, 1)})
    return {"device": device_name, "cases": cases, "records": records,
            "clean": not any(r["failures"] for r in records),
            "seconds": round(time.perf_counter() - start, 1)}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))
