"""(a) The fuzzer: calls every public function, method, property and operator with invalid and
edge-case arguments drawn by hypothesis, each call in a worker process (`pool.Pool`), and counts
what happened. A call is clean when it returns a usable result, or raises one of the classes the
standard and Python name (TypeError, ValueError, IndexError, OverflowError, MemoryError,
BufferError) with hxarray's (or Python's own) message; it is a failure when it crashes or hangs
its process, raises another class (also later, from queued device work), returns a result that
cannot be read, or changes an input without succeeding.
"""

from __future__ import annotations

import collections
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from .pool import Pool
from .targets import Target, targets
from .values import CONTENTS, DTYPES, EDGE_SCALARS, LAYOUTS, OBJECTS, describe

SHAPES = [(), (0,), (1,), (3,), (4,), (2, 3), (3, 2), (1, 3), (3, 1), (2, 0), (2, 2, 2),
          (3, 1, 2), (2, 3, 4), (2,) * 5]
RARE_SHAPES = [(300_000,), (1,) * 64, (1,) * 62 + (2, 3), (0, 0, 0), (1, 2**16)]
SMALL_INTS = [-3, -2, -1, 0, 1, 2, 3, 5]
EDGE_INTS = [64, 65, -70, 2**31, 2**62, 2**63, -(2**63) - 1, 2**100]
WORDS = ["left", "right", "xy", "ij", "reduced", "complete", "ortho", "backward", "forward",
         "fro", "nuc", "2023.12", "2024.12", "2025.12", "bogus", ""]
KINDS = ["bool", "signed integer", "unsigned integer", "integral", "real floating",
         "complex floating", "numeric", "bogus"]


def _weighted(common: list[Any], rare: list[Any], ratio: int = 6) -> st.SearchStrategy:
    return st.sampled_from(common * ratio + rare)


_shape = _weighted(SHAPES, RARE_SHAPES)
array = st.tuples(st.just("array"), st.sampled_from(DTYPES), _shape, st.sampled_from(LAYOUTS),
                  st.sampled_from(CONTENTS), _weighted(["here"], ["cpu"], 19))
scalar = st.tuples(st.just("scalar"), st.sampled_from(EDGE_SCALARS))
chaos = st.one_of(st.tuples(st.just("obj"), st.sampled_from(OBJECTS)), scalar)
int_value = st.tuples(st.just("scalar"), _weighted(SMALL_INTS, EDGE_INTS, 3))
small_tuple = st.lists(int_value, max_size=4).map(lambda v: ("tuple", v))
dtype = st.one_of(st.tuples(st.just("dtype"), st.sampled_from(DTYPES)),
                  st.just(("scalar", None)),
                  st.tuples(st.just("obj"), st.sampled_from(["np_dtype", "dtype_name", "type"])))
index = st.one_of(int_value, st.just(("scalar", None)), st.just(("obj", "ellipsis")),
                  st.tuples(st.just("slice"), st.sampled_from([None, *SMALL_INTS, *EDGE_INTS]),
                            st.sampled_from([None, *SMALL_INTS, *EDGE_INTS]),
                            st.sampled_from([None, 1, 2, -1, 0, 3, 2**63, -(2**64)])),
                  array, st.tuples(st.just("scalar"), st.sampled_from([1.5, True, "a"])))

ROLE = {
    "array": array,
    "operand": st.one_of(array, array, scalar),
    "arrays": st.lists(array, max_size=4).flatmap(
        lambda v: st.sampled_from([("list", v), ("tuple", v)])),
    "axis": st.one_of(int_value, int_value, small_tuple, st.just(("scalar", None)),
                      st.just(("scalar", 1.0)), st.just(("scalar", True))),
    "axes": st.one_of(small_tuple, int_value, st.just(("scalar", None)),
                      st.lists(small_tuple, min_size=2, max_size=2).map(lambda v: ("tuple", v))),
    "shape": st.one_of(int_value, small_tuple, small_tuple,
                       st.sampled_from([("tuple", [("scalar", 1)] * 70),
                                        ("tuple", [("scalar", 0), ("scalar", 2**62)]),
                                        ("list", [("scalar", 2), ("scalar", 3)]),
                                        ("tuple", [("scalar", 1.5)])])),
    "dtype": dtype,
    "device": st.one_of(st.sampled_from([("obj", "device"), ("obj", "device_name"),
                                         ("obj", "bad_device"), ("scalar", None),
                                         ("scalar", "cpu"), ("scalar", 0)])),
    "flag": st.sampled_from([("scalar", True), ("scalar", False), ("scalar", True),
                             ("scalar", False), ("scalar", None), ("scalar", "yes"),
                             ("scalar", 1), ("obj", "np_bool")]),
    "int": int_value,
    "number": st.one_of(int_value, scalar),
    "shift": st.one_of(int_value, small_tuple),
    "repeats": st.one_of(int_value, array),
    "ord": st.sampled_from([("scalar", v) for v in
                            (1, 2, -1, -2, 0, 3, 1.5, float("inf"), float("-inf"), "fro", "nuc",
                             "bogus", None, float("nan"))]),
    "scalar": scalar,
    "word": st.tuples(st.just("scalar"), st.sampled_from(WORDS)),
    "kind": st.one_of(st.tuples(st.just("scalar"), st.sampled_from(KINDS)), dtype,
                      st.lists(st.tuples(st.just("scalar"), st.sampled_from(KINDS)), max_size=3)
                      .map(lambda v: ("tuple", v))),
    "key": st.one_of(index, index, st.lists(index, min_size=1, max_size=4)
                     .map(lambda v: ("tuple", v)),
                     st.lists(int_value, min_size=1, max_size=3).map(lambda v: ("list", v))),
    "any": st.one_of(array, chaos),
}


def _argument(role: str) -> st.SearchStrategy:
    """Mostly a value of the parameter's kind (edge cases included), a quarter of the time
    anything at all."""
    return st.one_of(ROLE[role], ROLE[role], ROLE[role], chaos)


@st.composite
def calls(draw: st.DrawFn, target: Target) -> dict[str, Any]:
    """A call of `target`: required parameters given (rarely not), optional ones sometimes,
    sometimes an extra argument, an unknown keyword, or a positional one passed by name."""
    args, kwargs = [], {}
    if target.kind in ("method", "property", "getitem", "setitem", "operator"):
        return _operation(draw, target)  # (Python's own protocols decide the rest)
    for name, role, positional, required in target.parameters:
        if required or draw(st.integers(0, 9)) < 4:
            if required and draw(st.integers(0, 39)) == 0:
                continue  # a required argument missing
            value = draw(_argument(role))
            if positional and draw(st.integers(0, 39)) == 0:
                kwargs[name] = value  # by name, where the standard makes it positional-only
            elif positional and not kwargs:
                args.append(value)
            else:
                kwargs[name] = value
    if target.variadic:
        args += draw(st.lists(_argument(target.variadic), max_size=4))
    extra = draw(st.integers(0, 49))
    if extra == 0:
        args.append(draw(chaos))
    elif extra == 1:
        kwargs["bogus_keyword"] = draw(chaos)
    return {"target": target.label, "args": args, "kwargs": kwargs}


def _operation(draw: st.DrawFn, target: Target) -> dict[str, Any]:
    """A method, property, operator or indexing call: always on an array, with its arguments
    (for an operator, either operand may be the array)."""
    args = [draw(array)]
    kwargs = {}
    for name, role, positional, _ in target.parameters[1:]:
        if positional:
            args.append(draw(_argument(role)))
        elif draw(st.integers(0, 9)) < 4:
            kwargs[name] = draw(_argument(role))
    if target.kind == "operator" and len(args) == 2 and draw(st.booleans()):
        args.reverse()  # the array on the right: the reflected operator
    return {"target": target.label, "args": args, "kwargs": kwargs}


def generate(count: int, seed_value: int) -> list[dict[str, Any]]:
    """`count` calls over every target, drawn by hypothesis from a fixed seed."""
    drawn: list[dict[str, Any]] = []
    every = targets()

    @seed(seed_value)
    @settings(max_examples=count, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(every).flatmap(calls))
    def collect(call: dict[str, Any]) -> None:
        drawn.append(call)

    collect()
    return drawn


def run(device: str, mode: str, tasks: list[dict[str, Any]], timeout: float, logs: Path,
        workers: int = 2) -> dict[str, Any]:
    """Run the calls `tasks` on `device` in `mode` ("compiled" or "pure"); the tallies, and up
    to a few examples of every kind of problem."""
    started = time.perf_counter()
    env = {"HXARRAY_PURE_PYTHON": "1" if mode == "pure" else "0", "PYTHONWARNINGS": "default"}
    pool = Pool(workers, [device, "4096"], env, logs, timeout)
    tally: collections.Counter[str] = collections.Counter()
    examples: dict[str, list[str]] = collections.defaultdict(list)
    foreign: collections.Counter[str] = collections.Counter()
    per_target: collections.Counter[str] = collections.Counter()

    def note(kind: str, outcome: Any, detail: str) -> None:
        tally[kind] += 1
        call = outcome.task
        text = (f"{call['target']}({', '.join(describe(a) for a in call['args'])}"
                f"{''.join(f', {k}={describe(v)}' for k, v in call['kwargs'].items())})")
        if len(examples[kind]) < 12:
            examples[kind].append(f"{text} -> {detail}"[:400])

    for outcome in pool.run(tasks):
        result = outcome.result
        per_target[outcome.task["target"]] += 1
        if outcome.hang:
            note("hangs", outcome, f"no answer in {timeout:.0f} s")
            continue
        if outcome.crash is not None:
            note("crashes", outcome, f"exit status {outcome.crash}: {outcome.stderr[-300:]}")
            continue
        if result["outcome"] == "setup":
            tally["setup failures"] += 1
            continue
        tally["calls"] += 1
        if result["changed"]:
            note("changed inputs", outcome, f"inputs {result['changed']} changed; "
                 f"{result.get('class', 'returned')}: {result.get('message', '')}")
        if result.get("deferred"):
            note("deferred errors", outcome, result["deferred"])
        if result["warnings"]:
            note("warnings", outcome, "; ".join(result["warnings"]))
        if result["outcome"] == "unusable":
            note("unusable results", outcome, result["error"])
        elif result["outcome"] == "ok":
            tally["returned"] += 1
        elif not result["accepted"]:
            note("wrong class", outcome, f"{result['class']}: {result['message']}")
        elif result["origin"] == "foreign":
            tally["right class, foreign message"] += 1
            key = f"{result['class']}: {result['message'][:90]}"
            foreign[key] += 1
            if foreign[key] == 1:
                note("foreign messages", outcome, f"{result['class']}: {result['message']}")
        else:
            tally[f"right class, {result['origin']} message"] += 1
    return {"device": device, "mode": mode, "tally": dict(tally), "examples": dict(examples),
            "foreign": foreign.most_common(30), "targets": len(per_target),
            "seconds": round(time.perf_counter() - started, 1)}


FAILURES = ("crashes", "hangs", "changed inputs", "wrong class", "deferred errors",
            "unusable results")
