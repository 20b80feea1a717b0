"""(f) The cross-device differential: every element-wise operation of `hxarray/_ops.py` (unary,
binary, `where`, `clip`) and every cast (`astype`), on every dtype it takes, over a grid of special
values (NaN, ±inf, ±0, subnormals, the largest and smallest normal numbers, values where exp and
square overflow, integer extremes and shift widths, complex numbers made of all of these), on the
CPU, the reference device and cuda:0, in numpy mode and in strict mode.

Each case (an operation and its operand dtypes) runs in several variants: contiguous operands,
strided views, operands broadcast against each other, Python scalars on either side. Every
variant's result on every device is compared with the CPU's result for the same elements
(`compare`): the same dtype and shape, or the same exception class; bit for bit where the
operation is exact; where a device's math library may round differently (`rounded`), within the
operation's bound in units in the last place (`BOUNDS`, documented in docs/reliability.md), and
never a different class of value (NaN, +inf, -inf, +0, -0, positive, negative: a NaN's sign is
not compared).

`python -m stress.differential DEVICES SCALE SEED` (devices comma-separated, the CPU among them)
prints the figures as JSON.
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

from hxarray._ops import OPS
from hxarray.plugin import undetermined

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128")

# -- values ----------------------------------------------------------------------------------------


def _real_values(dtype: np.dtype) -> np.ndarray:
    """Special values of a real floating dtype: zeros, ones, halves, NaN, infinities, the largest
    and smallest normal numbers, subnormals, and the arguments where exp, cosh and square
    overflow."""
    info = np.finfo(dtype)
    overflow = float(np.log(info.max))  # exp overflows just above
    values = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 2.0, 3.0, 0.1, -0.7, math.pi, 10.0,
              -100.0, overflow * 0.999, overflow * 1.001, -overflow * 1.001,
              float(np.sqrt(info.max)) * 1.5, float(info.max), -float(info.max),
              float(info.smallest_normal), -float(info.smallest_normal),
              float(info.smallest_subnormal), -float(info.smallest_subnormal),
              float(info.smallest_normal) / 3, math.inf, -math.inf, math.nan]
    with np.errstate(all="ignore"):
        return np.array(values, dtype)


def _complex_values(dtype: np.dtype, few: bool) -> np.ndarray:
    """Complex numbers whose parts are each of a set of special real values (all pairs)."""
    real = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
    info = np.finfo(real)
    parts = [0.0, -0.0, 1.0, -1.5, -2.0, 0.1, math.inf, math.nan, float(info.max)]
    if not few:
        parts += [0.5, -math.inf, float(info.smallest_subnormal), 3.0, -0.7]
    parts_array = np.array(parts, real)
    out = np.empty((len(parts), len(parts)), dtype)
    out.real, out.imag = parts_array[:, None], parts_array[None, :]
    return out.ravel()


def _integer_values(dtype: np.dtype) -> np.ndarray:
    """Integer extremes and their neighbours, small values, and shift counts around the width."""
    info = np.iinfo(dtype)
    bits = 8 * dtype.itemsize
    values = {info.min, info.min + 1, -100, -7, -2, -1, 0, 1, 2, 3, 7, bits - 1, bits, bits + 1,
              100, info.max - 1, info.max}
    return np.array(sorted(v for v in values if info.min <= v <= info.max), dtype)


def values(dtype: str, few: bool = False) -> np.ndarray:
    """The special values of `dtype` (for binary grids `few` keeps complex grids small)."""
    npd = np.dtype(dtype)
    if npd.kind == "b":
        return np.array([False, True])
    if npd.kind in "iu":
        return _integer_values(npd)
    if npd.kind == "f":
        return _real_values(npd)
    return _complex_values(npd, few)


# -- cases -----------------------------------------------------------------------------------------


class Case(NamedTuple):
    """An operation ("astype" for casts) on operands of `dtypes`; `standard` if the standard
    defines it (it runs in strict mode too)."""

    op: str
    dtypes: tuple[str, ...]
    standard: bool


def _takes(category: str | None, dtype: str) -> bool:
    import hxarray._dtypes as dt

    return category is None or dt.BY_NAME[dtype] in dt.CATEGORIES[category]


def _promotes(d1: str, d2: str) -> bool:
    import hxarray._dtypes as dt

    try:
        dt.promote(dt.BY_NAME[d1], dt.BY_NAME[d2])
    except TypeError:
        return False
    return True


def cases(mixed: int, rng: random.Random) -> list[Case]:
    """Every operation on every dtype (standard or numpy mode's), every cast; with `mixed` > 0,
    also that many pairs of different dtypes per binary operation (drawn by `rng`)."""
    found = []
    for name, op in OPS.items():
        if op.arity == 1:
            found += [Case(name, (d,), _takes(op.category, d)) for d in DTYPES]
        elif op.arity == 2:
            found += [Case(name, (d, d), _takes(op.category, d)) for d in DTYPES]
            pairs = [(a, b) for a in DTYPES for b in DTYPES if a != b]
            for a, b in rng.sample(pairs, min(mixed, len(pairs))):
                standard = _takes(op.category, a) and _takes(op.category, b) and _promotes(a, b)
                found.append(Case(name, (a, b), standard))
    found += [Case("where", ("bool", d, d), True) for d in DTYPES]
    found += [Case("clip", (d, d, d), d not in ("bool", "complex64", "complex128"))
              for d in DTYPES]
    found += [Case("astype", (a, b), not (a.startswith("complex") and not b.startswith("complex")))
              for a in DTYPES for b in DTYPES]
    # numpy mode's dtypes (float16) are no standard case: strict mode makes no such array
    return [c._replace(standard=c.standard and not _numpy_mode_only(c.dtypes)) for c in found]


def _numpy_mode_only(dtypes: tuple[str, ...]) -> bool:
    import hxarray._dtypes as dt

    return any(dt.BY_NAME[d] in dt.NUMPY_MODE_ONLY for d in dtypes)


# -- variants: one case's operands laid out in several ways --------------------------------------


class Variant(NamedTuple):
    """A way to call a case: `make(xp, device)` gives the call's arguments; `index` says which
    elements of the contiguous grid its (flattened) result holds, or None for a result of its
    own (compared with the CPU's result of the same variant)."""

    label: str
    make: Callable[[Any, Any], tuple[Any, ...]]
    index: np.ndarray | None


def grid(case: Case) -> list[np.ndarray]:
    """The contiguous operands of a case: one value list (unary, casts), the cartesian product
    of two (binary), a condition pattern with two lists (where), bounds drawn from the values
    themselves (clip)."""
    op = case.op
    if op in ("astype",) or (op in OPS and OPS[op].arity == 1):
        return [values(case.dtypes[0])]
    if op == "where":
        v = values(case.dtypes[1])
        return [np.arange(v.size) % 3 == 0, v, v[::-1].copy()]
    if op == "clip":
        v = values(case.dtypes[0])
        return [v, np.roll(v, 3), np.roll(v, 7)]
    a, b = values(case.dtypes[0], few=True), values(case.dtypes[1], few=True)
    return [np.repeat(a, b.size), np.tile(b, a.size)]


def _strided(values: np.ndarray) -> Callable[[Any, Any], Any]:
    """A builder of `values` as a strided view (every second element of a larger array)."""
    spread = np.zeros(2 * values.size, values.dtype)
    spread[::2] = values
    return lambda xp, device: xp.asarray(spread, device=device)[::2]


def _scalar_indices(size: int, count: int | None, rng: random.Random) -> list[int]:
    return list(range(size)) if count is None else sorted(rng.sample(range(size),
                                                                      min(count, size)))


def variants(case: Case, operands: list[np.ndarray], scalars: int | None,
             rng: random.Random) -> list[Variant]:
    """The variants of a case: contiguous and strided operands; for binary operations also
    operands broadcast against each other and Python scalars (of `scalars` values, all if None)
    on either side; for where and clip, Python scalars in place of arrays."""
    n = operands[0].size
    every = np.arange(n)

    def arrays(xp: Any, device: Any) -> tuple[Any, ...]:
        return tuple(xp.asarray(v, device=device) for v in operands)

    found = [Variant("contiguous", arrays, every),
             Variant("strided", lambda xp, device: tuple(_strided(v)(xp, device)
                                                         for v in operands), every)]
    binary = case.op in OPS and OPS[case.op].arity == 2
    if binary:
        a, b = values(case.dtypes[0], few=True), values(case.dtypes[1], few=True)
        found.append(Variant("broadcast", lambda xp, device: (
            xp.asarray(a[:, None], device=device), xp.asarray(b[None, :], device=device)),
            every))
        if case.dtypes[0] == case.dtypes[1]:  # a Python scalar stands for the array's dtype
            for j in _scalar_indices(b.size, scalars, rng):
                s = b[j].item()
                found.append(Variant(f"x2 = {s!r}", lambda xp, device, s=s: (
                    xp.asarray(a, device=device), s), np.arange(a.size) * b.size + j))
            for i in _scalar_indices(a.size, scalars, rng):
                s = a[i].item()
                found.append(Variant(f"x1 = {s!r}", lambda xp, device, s=s: (
                    s, xp.asarray(b, device=device)), i * b.size + np.arange(b.size)))
    elif case.op in ("where", "clip"):
        v = operands[1]
        for j in _scalar_indices(v.size, scalars, rng):
            s = v[j].item()
            if case.op == "where":
                label, make = f"x2 = {s!r}", lambda xp, device, s=s: (
                    xp.asarray(operands[0], device=device),
                    xp.asarray(operands[1], device=device), s)
            else:
                label, make = f"min = {s!r}, max = None", lambda xp, device, s=s: (
                    xp.asarray(operands[0], device=device), s, None)
            found.append(Variant(label, make, None))
    return found


def call(case: Case, xp: Any, args: tuple[Any, ...]) -> Any:
    if case.op == "astype":
        return xp.astype(args[0], getattr(xp, case.dtypes[1]))
    if case.op == "clip":
        return xp.clip(args[0], args[1], args[2])
    return getattr(xp, case.op)(*args)


# -- comparison ------------------------------------------------------------------------------------

# What a device's math library may round its own way: the transcendental functions; on complex
# input also abs, sign and sqrt (through hypot). Everything else is exact on every device: integer
# arithmetic, comparisons, min and max, rounding, casts, IEEE's correctly rounded + - * / and sqrt
# of real numbers, and complex + - * / (numpy's formulas and order of operations on every device:
# products fused as numpy's vector loops fuse them on CPUs with FMA, quotients by Smith's method).
ROUNDED_REAL = frozenset({"acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "exp",
                          "expm1", "log", "log1p", "log2", "log10", "sin", "sinh", "tan", "tanh",
                          "atan2", "hypot", "logaddexp", "pow"})
ROUNDED_COMPLEX = ROUNDED_REAL | {"abs", "sign", "sqrt"}

# The largest difference allowed between two devices, in units in the last place: real results
# in ulps of their own precision (the number of floats between the two); complex results in ulps
# of the larger part of the CPU's result (normwise: a small part next to a large one carries the
# large part's absolute error). The real bound covers both sides' libraries: CUDA documents at
# most 4 ulp for each of these functions, numpy's vector loops are within 4 ulp. Complex functions
# compose several real ones; a complex power exp(y log x) turns log's error by |y| |log x|, which
# can reach |y| * 710 with a finite result (`bound`; 1024 where the inputs are not at hand).
REAL_BOUND, COMPLEX_BOUND = 8, 16
BOUNDS = {"abs": 4, "sign": 4, "sqrt": 8, "pow": 1024}  # complex input, where not COMPLEX_BOUND


def rounded(case: Case, result: np.dtype) -> bool:
    """Whether devices may round this case's `result` differently."""
    if case.op not in OPS or result.kind not in "fc":
        return False
    complex_input = any(d.startswith("complex") for d in case.dtypes)
    return case.op in (ROUNDED_COMPLEX if complex_input else ROUNDED_REAL)


def bound(case: Case, inputs: list[np.ndarray] | None = None) -> float | np.ndarray:
    """The largest ulp difference allowed in a rounded case's results; for a complex power whose
    `inputs` are given, each element's: COMPLEX_BOUND + 2 |x2| |log x1| (log's rounding on either
    side, turned by the exponent)."""
    if not any(d.startswith("complex") for d in case.dtypes):
        return REAL_BOUND
    if case.op == "pow" and inputs is not None:
        x1, x2 = (np.asarray(a).astype(np.complex128) for a in inputs)
        with np.errstate(all="ignore"):
            turn = (np.abs(x2) * np.abs(np.log(x1))).ravel()
            return COMPLEX_BOUND + 2 * np.where(np.isfinite(turn), turn, 0.0)
    return BOUNDS.get(case.op, COMPLEX_BOUND)


# Classes of floating-point values: a NaN's sign is not compared; a zero's is, where both values
# are zero (a zero next to a tiny number is a matter of rounding, as a subnormal result can be).
NAN, POS_INF, NEG_INF, FINITE = range(4)


def classes(x: np.ndarray) -> np.ndarray:
    return np.select([np.isnan(x), np.isposinf(x), np.isneginf(x)], [NAN, POS_INF, NEG_INF],
                     FINITE)


def _class_differs(got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Where NaN, infinity and finite differ, or the signs of two zeros."""
    differs = np.zeros(got.shape, bool)
    for g, e in zip(_parts(got), _parts(expected)):
        differs |= (classes(g) != classes(e)) | \
            ((g == 0) & (e == 0) & (np.signbit(g) != np.signbit(e)))
    return differs


def _ordered(x: np.ndarray) -> np.ndarray:
    """Floats as integers in the same order, consecutive floats one apart (±0 both 0)."""
    signed = np.dtype(f"i{x.dtype.itemsize}")
    bits = x.view(signed).astype(np.int64)
    magnitude = bits & np.int64(np.iinfo(signed).max)
    return np.where(bits < 0, -magnitude, magnitude)


@np.errstate(all="ignore")
def ulps(got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """The difference of finite values in units in the last place (see BOUNDS)."""
    if got.dtype.kind == "c":
        real = got.real.dtype
        scale = np.maximum(np.abs(expected.real), np.abs(expected.imag)).astype(real)
        unit = np.spacing(scale).astype(np.float64)
        return np.maximum(np.abs(got.real.astype(np.float64) - expected.real) / unit,
                          np.abs(got.imag.astype(np.float64) - expected.imag) / unit)
    a, b = _ordered(got), _ordered(expected)
    # in integers where both lie on one side of zero (a float64 holds only 53 of their 64 bits)
    return np.where((a < 0) == (b < 0), np.abs(a - b),
                    np.abs(a.astype(np.float64)) + np.abs(b.astype(np.float64))).astype(np.float64)


def _parts(x: np.ndarray) -> list[np.ndarray]:
    return [x.real, x.imag] if x.dtype.kind == "c" else [x]


class Mismatch(NamedTuple):
    kind: str       # "dtype", "shape", "exception", "value", "class", "ulp"
    where: np.ndarray | None  # flat positions in the result that differ
    detail: str


def compare(case: Case, got: Any, expected: Any, inputs: list[np.ndarray] | None = None
            ) -> tuple[Mismatch | None, float]:
    """How `got` (a numpy array, or an exception) differs from `expected`, and the largest ulp
    difference among rounded results (0 where exact); `inputs` (the operands of each element)
    mark results whose direction they do not determine (`undetermined`)."""
    if isinstance(expected, BaseException) or isinstance(got, BaseException):
        same = type(got) is type(expected)
        return (None if same else Mismatch("exception", None,
                                           f"{_describe(got)}, expected {_describe(expected)}"),
                0.0)
    if got.dtype != expected.dtype:
        return Mismatch("dtype", None, f"{got.dtype}, expected {expected.dtype}"), 0.0
    if got.shape != expected.shape:
        return Mismatch("shape", None, f"{got.shape}, expected {expected.shape}"), 0.0
    got, expected = got.ravel(), expected.ravel()
    limit = np.broadcast_to(bound(case, inputs), got.shape)
    loose = None if inputs is None else undetermined(case.op, inputs)
    if loose is None or not loose.any():
        return _compare_values(case, got, expected, limit)
    loose = loose.ravel()
    for part, values in ((loose, np.abs), (~loose, np.asarray)):
        mismatch, worst = _compare_values(case, values(got[part]), values(expected[part]),
                                          limit[part])
        if mismatch is not None:
            return mismatch._replace(where=np.flatnonzero(part)[mismatch.where]), worst
    return None, worst


def _compare_values(case: Case, got: np.ndarray, expected: np.ndarray, limit: np.ndarray
                    ) -> tuple[Mismatch | None, float]:
    """`compare` of two flat arrays of the same dtype, rounded results within `limit` ulp."""
    if got.dtype.kind not in "fc":
        differ = got != expected
        return (Mismatch("value", np.flatnonzero(differ), "values differ") if differ.any()
                else None), 0.0
    wrong_class = _class_differs(got, expected)
    if wrong_class.any():
        return Mismatch("class", np.flatnonzero(wrong_class), "classes of values differ"), 0.0
    finite = np.ones(got.shape, bool)
    for g in _parts(got):
        finite &= np.isfinite(g)
    if not rounded(case, got.dtype):
        differ = np.zeros(got.shape, bool)
        for g, e in zip(_parts(got), _parts(expected)):
            differ |= (g != e) & ~np.isnan(e)
        return (Mismatch("value", np.flatnonzero(differ), "bits differ") if differ.any()
                else None), 0.0
    error = np.where(finite, ulps(got, expected), 0.0)
    worst = float(error.max()) if error.size else 0.0
    over = error > limit
    if over.any():
        first = np.flatnonzero(over)[0]
        return Mismatch("ulp", np.flatnonzero(over),
                        f"{error[first]:.0f} ulp, more than {limit[first]:.0f}"), worst
    return None, worst


def _describe(value: Any) -> str:
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {str(value)[:120]}"
    return f"a {value.dtype} result"


# -- running ---------------------------------------------------------------------------------------


def run_variant(case: Case, variant: Variant, xp: Any, device: Any) -> Any:
    """The variant's result on `device` as a flat numpy array, or the exception it raised."""
    try:
        result = call(case, xp, variant.make(xp, device))
        return np.asarray(result.to_device(xp.Device("cpu"))).ravel()
    except Exception as exc:  # noqa: BLE001 - compared across devices
        return exc


def _inputs(operands: list[np.ndarray], variant: Variant, position: int) -> str:
    """The operands of one element of a variant's result, for reports."""
    if variant.index is None:
        return f"element {position} ({variant.label})"
    at = variant.index[position]
    shown = ", ".join(repr(v[at].item()) for v in operands)
    return f"({shown}) ({variant.label})"


def differential(devices: list[Any], scale: dict[str, Any], seed: int,
                 modes: tuple[bool, ...] = (False, True)) -> Iterator[dict[str, Any]]:
    """Every case in numpy mode (strict False) and, where the standard defines it, strict mode,
    each variant on every device against the CPU's result: one record per (device, mode) with
    its tallies, the worst ulp difference per rounded operation and precision, and up to
    40 mismatches."""
    import hxarray as xp

    rng = random.Random(seed)
    cpu = xp.Device("cpu")
    all_cases = cases(scale["mixed"], rng)
    for strict in modes:
        records = {str(d): {"device": str(d), "strict": strict, "cases": 0, "calls": 0,
                            "exact": 0, "rounded": 0, "raised": 0, "mismatches": {},
                            "by_operation": {}, "worst_ulps": {}, "examples": []}
                   for d in devices}
        with xp.set_strict(strict):
            for case in all_cases:
                if strict and not case.standard:
                    continue
                operands = grid(case)
                found = variants(case, operands, scale["scalars"], rng)
                whole = run_variant(case, found[0], xp, cpu)  # the contiguous grid
                for variant in found:
                    if variant.index is None or isinstance(whole, BaseException):
                        reference = run_variant(case, variant, xp, cpu)
                    else:
                        reference = whole[variant.index]
                    for device in devices:
                        got = run_variant(case, variant, xp, device)
                        _tally(records[str(device)], case, variant, operands, got, reference)
                for device in devices:
                    records[str(device)]["cases"] += 1
        yield from records.values()


def _tally(record: dict[str, Any], case: Case, variant: Variant, operands: list[np.ndarray],
           got: Any, reference: Any) -> None:
    record["calls"] += 1
    inputs = None if variant.index is None else [v[variant.index] for v in operands]
    mismatch, worst = compare(case, got, reference, inputs)
    if isinstance(got, BaseException) and mismatch is None:
        record["raised"] += 1
    elif mismatch is None:
        record["rounded" if rounded(case, got.dtype) else "exact"] += 1
    if not isinstance(got, BaseException) and rounded(case, got.dtype):
        complex_input = next((d for d in case.dtypes if d.startswith("complex")), None)
        key = f"{case.op} {complex_input or got.dtype}"  # (abs of complex64 is float32)
        record["worst_ulps"][key] = max(record["worst_ulps"].get(key, 0.0), worst)
    if mismatch is None:
        return
    record["mismatches"][mismatch.kind] = record["mismatches"].get(mismatch.kind, 0) + 1
    record["by_operation"][case.op] = record["by_operation"].get(case.op, 0) + 1
    if len(record["examples"]) >= 40:
        return
    text = f"{case.op}{case.dtypes} {variant.label}: {mismatch.detail}"
    if mismatch.where is not None and mismatch.where.size:
        at = int(mismatch.where[0])
        text += (f"; e.g. at {_inputs(operands, variant, at)}: {got[at]!r}, expected "
                 f"{reference[at]!r} ({mismatch.where.size} elements)")
    record["examples"].append(text)


def main(device_names: str, mixed: int, scalars: int, seed: int) -> dict[str, Any]:
    import hxarray as xp

    devices = [xp.Device(name) for name in device_names.split(",")]
    start = time.perf_counter()
    records = list(differential(devices, {"mixed": mixed, "scalars": scalars or None}, seed))
    return {"records": records, "seconds": round(time.perf_counter() - start, 1)}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))))
