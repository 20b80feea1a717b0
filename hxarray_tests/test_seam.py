"""The seam: what the namespace resolves and hands a backend (`Backend.elementwise` takes the
operation object and its signature; `reduce`, `arg_reduce`, `scan` and `fused_reduce` take the
reduction's object), and the tables derived from `_ops.py`."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import hxarray as xp
from hxarray import _dtypes as dt
from hxarray import plugin
from hxarray._numpy_protocols import _UFUNCS
from hxarray._ops import (
    ARG_REDUCTIONS,
    OPS,
    REDUCTIONS,
    SCANS,
    ArgReduction,
    Op,
    Reduction,
    Scan,
    Signature,
)

REF = xp.Device("ref")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Op, Signature, tuple[Any, ...]]]:
    """Every element-wise primitive call on the reference device: (op, signature, args)."""
    backend = REF.backend
    seen: list[tuple[Op, Signature, tuple[Any, ...]]] = []
    primitive = backend.elementwise

    def recording(op: Op, args: Any, signature: Signature, shape: Any, out: Any = None) -> Any:
        seen.append((op, signature, tuple(args)))
        return primitive(op, args, signature, shape, out)

    monkeypatch.setattr(backend, "elementwise", recording)
    return seen


def _on_ref(values: Any, dtype: dt.DType) -> xp.Array:
    return xp.asarray(values, dtype=dtype, device=REF)


@pytest.mark.strict
@pytest.mark.parametrize(("name", "d1", "d2", "compute", "result"), [
    ("add", dt.int8, dt.int16, dt.int16, dt.int16),
    ("add", dt.uint8, dt.int16, dt.int16, dt.int16),
    ("multiply", dt.float32, dt.complex64, dt.complex64, dt.complex64),
    ("less", dt.int32, dt.int64, dt.int64, dt.bool),
    ("equal", dt.float32, dt.float64, dt.float64, dt.bool),
    ("atan2", dt.float32, dt.float32, dt.float32, dt.float32),
])
def test_binary_signature(calls: list[Any], name: str, d1: dt.DType, d2: dt.DType,
                          compute: dt.DType, result: dt.DType) -> None:
    out = getattr(xp, name)(_on_ref([1, 2], d1), _on_ref([3, 1], d2))
    ((op, signature, _),) = calls
    assert op is OPS[name]
    assert signature == Signature((d1, d2), compute, result)
    expected = getattr(np, OPS[name].ufunc.__name__)(np.array([1, 2], d1.numpy),
                                                     np.array([3, 1], d2.numpy))
    assert out.dtype is result
    np.testing.assert_array_equal(np.asarray(out.to_device("cpu")), expected)


@pytest.mark.strict
def test_scalar_operand_stands_for_the_arrays_dtype(calls: list[Any]) -> None:
    xp.greater(_on_ref([1.0, -2.0], dt.float32), 0)
    xp.multiply(1.5, _on_ref([1.0, 2.0], dt.float64))
    xp.add(_on_ref([1.0], dt.float32), 2j)  # a complex scalar: the complex dtype of float32
    assert [(s.operands, s.compute, s.result) for _, s, _ in calls] == [
        ((dt.float32, dt.float32), dt.float32, dt.bool),
        ((dt.float64, dt.float64), dt.float64, dt.float64),
        ((dt.float32, dt.complex64), dt.complex64, dt.complex64)]
    assert calls[0][2][1] == 0 and calls[0][2][1].__class__ is int  # scalars stay Python's


@pytest.mark.strict
def test_unary_signatures(calls: list[Any]) -> None:
    xp.abs(_on_ref([1 + 1j], dt.complex64))
    xp.isnan(_on_ref([1.0], dt.float64))
    xp.negative(_on_ref([1], dt.int16))
    assert [s for _, s, _ in calls] == [
        Signature((dt.complex64,), dt.complex64, dt.float32),  # computes in complex, real result
        Signature((dt.float64,), dt.float64, dt.bool),
        Signature((dt.int16,), dt.int16, dt.int16)]


@pytest.mark.strict
def test_where_and_clip_are_data_on_their_operations(calls: list[Any]) -> None:
    condition = _on_ref([True, False], dt.bool)
    chosen = xp.where(condition, _on_ref([1, 2], dt.int8), _on_ref([3, 4], dt.int32))
    clipped = xp.clip(_on_ref([1.0, 5.0, 9.0], dt.float32), 2.0, None)
    (where, where_signature, _), (clip, clip_signature, clip_args) = calls
    assert where.selects and not where.chain and where is OPS["where"]
    assert where_signature == Signature((dt.bool, dt.int8, dt.int32), dt.int32, dt.int32)
    assert clip.chain == (OPS["maximum"], OPS["minimum"]) and not clip.selects
    assert clip_signature == Signature((dt.float32, dt.float32, dt.float32), dt.float32,
                                       dt.float32)
    assert clip_args[1:] == (2.0, None)  # a missing bound reaches the backend as None
    np.testing.assert_array_equal(np.asarray(chosen.to_device("cpu")), [1, 4])
    np.testing.assert_array_equal(np.asarray(clipped.to_device("cpu")), [2.0, 5.0, 9.0])


def test_internal_compositions_pass_operations(calls: list[Any]) -> None:
    """The namespace's own compositions (here var, tril, count_nonzero) use the seam the same
    way: an Op object, never a name."""
    x = _on_ref([[1.0, 2.0], [3.0, 5.0]], dt.float64)
    assert float(xp.var(x)) == pytest.approx(np.var([[1.0, 2.0], [3.0, 5.0]]))
    xp.tril(x)
    xp.count_nonzero(x)
    assert calls and all(op.__class__ is Op and isinstance(s, Signature) for op, s, _ in calls)


def test_operations_compare_by_identity() -> None:
    ops = list(OPS.values())
    assert len({hash(op) for op in ops}) == len(ops)
    assert OPS["add"] != Op("add", 2, "numeric", "same", np.add)  # another object, another op
    assert OPS["add"].signature(dt.int8, dt.int8) is OPS["add"].signature(dt.int8, dt.int8)


def test_ufunc_table_is_derived_from_the_numpy_column() -> None:
    """numpy's ufunc of every operation that has one, so `__array_ufunc__` dispatches it."""
    expected = {"add": np.add, "abs": np.absolute, "acos": np.arccos, "pow": np.power,
                "round": np.rint, "bitwise_invert": np.invert, "bitwise_left_shift":
                np.left_shift, "conj": np.conjugate, "atan2": np.arctan2, "tanh": np.tanh,
                "floor_divide": np.floor_divide, "expm1": np.expm1, "sign": np.sign}
    for name, ufunc in expected.items():
        assert OPS[name].ufunc is ufunc
        assert _UFUNCS[ufunc] == name
    for name in ("real", "imag", "where", "clip"):  # numpy has no ufunc of these
        assert OPS[name].ufunc is None
    assert all(op.ufunc is not None for op in OPS.values() if op.category is not None
               and op.name not in ("real", "imag"))


def test_accumulator_rule_is_shared() -> None:
    from hxarray.backends.codegen import reduction, scan

    for op in (REDUCTIONS["sum"], REDUCTIONS["prod"]):
        for x, acc in reduction.accumulators(op):
            assert acc is op.accumulator(x) is dt.ACCUMULATOR.get(x, x)
    assert scan.batch(SCANS["cumulative_sum"], dt.int8, dt.int64, True) == [
        scan.kernel_name(SCANS["cumulative_sum"], x, REDUCTIONS["sum"].accumulator(x), True)
        for x in dt.NUMERIC]
    for d in dt.NUMERIC:
        assert xp.sum(xp.ones(2, dtype=d)).dtype is REDUCTIONS["sum"].accumulator(d)
        assert xp.cumulative_prod(xp.ones(2, dtype=d)).dtype is dt.ACCUMULATOR.get(d, d)
    assert REDUCTIONS["any"].accumulator(dt.float32) is dt.bool
    assert REDUCTIONS["max"].accumulator(dt.int8) is dt.int8


@pytest.fixture
def folds(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """Every reduce, arg_reduce and scan primitive call on the reference device: (primitive,
    the operation it received)."""
    backend = REF.backend
    seen: list[tuple[str, Any]] = []

    def recorder(primitive: str) -> Any:
        method = getattr(backend, primitive)

        def recording(op: Any, *args: Any, **kwargs: Any) -> Any:
            seen.append((primitive, op))
            return method(op, *args, **kwargs)

        return recording

    for primitive in ("reduce", "arg_reduce", "scan"):
        monkeypatch.setattr(backend, primitive, recorder(primitive))
    return seen


def test_reductions_cross_the_seam_as_objects(folds: list[tuple[str, Any]]) -> None:
    x = _on_ref([[1.0, 2.0], [3.0, 5.0]], dt.float64)
    for name in ("sum", "prod", "max", "min", "mean", "var", "std"):
        getattr(xp, name)(x, axis=0)
    xp.all(x)
    xp.any(x)
    xp.count_nonzero(x)
    xp.argmax(x)
    xp.argmin(x, axis=1)
    xp.cumulative_sum(x, axis=0)
    xp.cumulative_prod(x, axis=1, include_initial=True)
    r, a, s = REDUCTIONS, ARG_REDUCTIONS, SCANS
    assert folds == [("reduce", r["sum"]), ("reduce", r["prod"]), ("reduce", r["max"]),
                     ("reduce", r["min"]), ("reduce", r["sum"]),  # mean: a sum, then divide
                     ("reduce", r["sum"]), ("reduce", r["sum"]),  # var: two passes by default
                     ("reduce", r["sum"]), ("reduce", r["sum"]),  # std
                     ("reduce", r["all"]), ("reduce", r["any"]), ("reduce", r["sum"]),
                     ("arg_reduce", a["argmax"]), ("arg_reduce", a["argmin"]),
                     ("scan", s["cumulative_sum"]), ("scan", s["cumulative_prod"])]


def test_reduction_tables() -> None:
    """One object per operation, with the data backends read instead of names; exported on the
    plug-in surface."""
    assert {op.name for op in REDUCTIONS.values()} == {"sum", "prod", "max", "min", "all", "any"}
    assert all(op.__class__ is Reduction for op in REDUCTIONS.values())
    assert all(op.__class__ is ArgReduction for op in ARG_REDUCTIONS.values())
    assert all(op.__class__ is Scan for op in SCANS.values())
    assert {name: op.identity for name, op in REDUCTIONS.items()} == {
        "sum": 0, "prod": 1, "max": None, "min": None, "all": True, "any": False}
    assert [op.name for op in REDUCTIONS.values() if op.signed_zero] == ["sum"]
    assert {op.name for op in REDUCTIONS.values() if op.silent} == {"max", "min", "all", "any"}
    assert SCANS["cumulative_sum"].folds is REDUCTIONS["sum"]
    assert SCANS["cumulative_prod"].folds is REDUCTIONS["prod"]
    assert REDUCTIONS["sum"].ufunc is np.add and ARG_REDUCTIONS["argmax"].numpy is np.argmax
    assert plugin.REDUCTIONS is REDUCTIONS and plugin.ARG_REDUCTIONS is ARG_REDUCTIONS
    assert plugin.SCANS is SCANS
    assert (plugin.Reduction, plugin.ArgReduction, plugin.Scan) == (Reduction, ArgReduction,
                                                                     Scan)
