"""numpy's protocols on hxarray arrays: ufuncs and array functions with a namespace equivalent
run it on the arrays' device; the rest run numpy on zero-copy CPU views and wrap the results;
arrays without host memory are never copied to the host behind the caller's back."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import hxarray as xp
from hxarray._numpy_protocols import _UFUNCS
from hxarray.backends.cpu import CpuBackend
from hxarray.hal import Device, DeviceType
from stress import subclasses

from .oracle import assert_matches, sample


def _same(got: Any, want: Any) -> None:
    """An hxarray CPU array (or a tuple of them) with numpy's dtype, shape and values."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert type(got) is xp.Array and got.device == xp.Device("cpu"), type(got)
    want = np.asarray(want)
    assert got.dtype.name == want.dtype.name and got.shape == want.shape, (got, want)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, equal_nan=True)


A = np.linspace(-0.9, 0.9, 12).reshape(3, 4)
B = np.linspace(0.1, 2.0, 12).reshape(3, 4)


@pytest.mark.parametrize("ufunc", sorted(_UFUNCS, key=lambda u: u.__name__),
                         ids=lambda u: u.__name__)
def test_every_mapped_ufunc_matches_numpy(ufunc):
    if ufunc.__name__ in ("matmul", "vecdot"):
        args = (A, B.T) if ufunc.__name__ == "matmul" else (A, B)
    elif ufunc.__name__ in ("left_shift", "right_shift", "bitwise_and", "bitwise_or",
                            "bitwise_xor", "invert", "logical_and", "logical_or", "logical_xor",
                            "logical_not"):
        args = (np.arange(12).reshape(3, 4), np.arange(12).reshape(3, 4) % 3)[:ufunc.nin]
    else:
        args = (A, B)[:ufunc.nin]
    with np.errstate(all="ignore"):
        want = ufunc(*args)
    _same(ufunc(*(xp.asarray(a) for a in args)), want)
    if ufunc.nin == 2:  # one operand a numpy array, in either position
        _same(ufunc(xp.asarray(args[0]), args[1]), want)
        _same(ufunc(args[0], xp.asarray(args[1])), want)


def test_operators_with_numpy_arrays_and_scalars():
    x = xp.asarray(A)
    _same(x + B, A + B)
    _same(B + x, B + A)
    _same(B * x > 0.5, B * A > 0.5)
    _same(np.float32(2) * x, 2 * A)
    y = xp.asarray(A, copy=True)
    buffer = y.buffer
    y += B  # in place, into y's own memory
    assert y.buffer is buffer
    _same(y, A + B)


def test_ufunc_methods_and_arguments():
    x = xp.asarray(A)
    _same(np.add.reduce(x, axis=1), np.add.reduce(A, axis=1))
    _same(np.maximum.reduce(x), np.maximum.reduce(A))
    _same(np.multiply.accumulate(x, axis=1), np.multiply.accumulate(A, axis=1))
    _same(np.add(x, 1, dtype=np.float32), np.add(A, 1, dtype=np.float32))
    out = xp.empty((3, 4))
    assert np.sin(x, out=out) is out
    _same(out, np.sin(A))
    out = xp.empty(4)
    assert np.add.reduce(x, axis=0, out=(out,)) is out
    _same(out, A.sum(axis=0))
    out, want = xp.zeros((3, 4)), np.zeros((3, 4))
    assert np.add(x, 1, where=A > 0, out=out) is out  # numpy's own, into out's CPU view
    _same(out, np.add(A, 1, where=A > 0, out=want))
    _same(np.add.outer(x[0], x[1]), np.add.outer(A[0], A[1]))
    _same(np.exp2(x), np.exp2(A))  # no namespace equivalent
    numpy_out = np.empty((3, 4))
    assert np.exp2(x, out=numpy_out) is numpy_out  # numpy's out= comes back as itself
    np.testing.assert_array_equal(numpy_out, np.exp2(A))


FUNCTIONS = [
    lambda m, a, b: m.sum(a, axis=0),
    lambda m, a, b: m.sum(a, 1, keepdims=True),
    lambda m, a, b: m.prod(a, axis=(0, 1)),
    lambda m, a, b: m.mean(a, axis=(0,)),
    lambda m, a, b: m.mean(a, dtype=np.float32),
    lambda m, a, b: m.std(a, ddof=1),
    lambda m, a, b: m.var(a, axis=1, keepdims=True),
    lambda m, a, b: m.max(a, axis=1),
    lambda m, a, b: m.amin(a),
    lambda m, a, b: m.argmax(a, axis=0),
    lambda m, a, b: m.argmin(a, axis=1, keepdims=True),
    lambda m, a, b: m.cumsum(a),
    lambda m, a, b: m.cumprod(a, axis=1),
    lambda m, a, b: m.cumulative_sum(a, axis=0, include_initial=True),
    lambda m, a, b: m.all(a > 0, axis=1),
    lambda m, a, b: m.any(a > 0.5),
    lambda m, a, b: m.diff(a, 2),
    lambda m, a, b: m.diff(a, axis=0, prepend=0),
    lambda m, a, b: m.concatenate([a, b]),
    lambda m, a, b: m.concatenate([a, b], axis=None),
    lambda m, a, b: m.stack([a, b], axis=-1),
    lambda m, a, b: m.vstack([a, b]),
    lambda m, a, b: m.hstack([a, b]),
    lambda m, a, b: m.column_stack([a[0], b[0]]),
    lambda m, a, b: m.atleast_2d(a[0]),
    lambda m, a, b: m.atleast_3d(a),
    lambda m, a, b: m.where(a > 0, a, 0),
    lambda m, a, b: m.where(a > 0, a, b),
    lambda m, a, b: m.where(a > 0),
    lambda m, a, b: m.nonzero(a > 0),
    lambda m, a, b: m.clip(a, -0.5, 0.5),
    lambda m, a, b: m.clip(a, max=b),
    lambda m, a, b: m.sort(a, axis=0),
    lambda m, a, b: m.sort(a, axis=None),
    lambda m, a, b: m.argsort(a, kind="stable"),
    lambda m, a, b: m.searchsorted(b[0], [0.5, 1.0]),
    lambda m, a, b: m.unique(m.round(a)),
    lambda m, a, b: m.unique(m.round(a * 2), return_counts=True),
    lambda m, a, b: m.unique(m.argmax(a, axis=1), return_inverse=True, return_index=True),
    lambda m, a, b: m.isin(a, b),
    lambda m, a, b: m.take(a, [0, 2], axis=1),
    lambda m, a, b: m.take(a, [[0, 5]]),
    lambda m, a, b: m.take_along_axis(a, m.argsort(a, axis=1), axis=1),
    lambda m, a, b: m.reshape(a, (4, 3)),
    lambda m, a, b: m.reshape(a, -1),
    lambda m, a, b: m.ravel(a),
    lambda m, a, b: m.transpose(a),
    lambda m, a, b: m.swapaxes(a[None], 0, 2),
    lambda m, a, b: m.moveaxis(a[None], 0, -1),
    lambda m, a, b: m.expand_dims(a, (0, 3)),
    lambda m, a, b: m.squeeze(a[None, :, None]),
    lambda m, a, b: m.flip(a),
    lambda m, a, b: m.roll(a, 1),
    lambda m, a, b: m.roll(a, (1, 2), axis=(0, 1)),
    lambda m, a, b: m.repeat(a, 2, axis=0),
    lambda m, a, b: m.tile(a, 2),
    lambda m, a, b: m.broadcast_to(a[0], (2, 4)),
    lambda m, a, b: m.broadcast_arrays(a, b[0]),
    lambda m, a, b: m.tril(a, -1),
    lambda m, a, b: m.triu(a),
    lambda m, a, b: m.zeros_like(a),
    lambda m, a, b: m.ones_like(a, dtype=np.int8),
    lambda m, a, b: m.empty_like(a, shape=(2, 2)).shape and m.full_like(a, 7, shape=(2, 2)),
    lambda m, a, b: m.full_like(a, 0.5),
    lambda m, a, b: m.copy(a),
    lambda m, a, b: m.meshgrid(a[0], b[0]),
    lambda m, a, b: m.round(a, 1),
    lambda m, a, b: m.real(a),
    lambda m, a, b: m.imag(a),
    lambda m, a, b: m.isclose(a, b),
    lambda m, a, b: m.dot(a, b.T),
    lambda m, a, b: m.dot(a[0], b[0]),
    lambda m, a, b: m.vdot(a, b),
    lambda m, a, b: m.inner(a, b),
    lambda m, a, b: m.outer(a[0], b[0]),
    lambda m, a, b: m.tensordot(a, b, axes=([0], [0])),
    lambda m, a, b: m.trace(a),
    lambda m, a, b: m.diagonal(a, 1),
    lambda m, a, b: m.cross(a[:, :3], b[:, :3]),
    lambda m, a, b: m.linalg.norm(a),
    lambda m, a, b: m.linalg.norm(a, axis=1),
    lambda m, a, b: m.linalg.norm(a, ord=1, axis=(0, 1), keepdims=True),
    lambda m, a, b: m.linalg.inv(a[:, :3] @ a[:, :3].T + m.eye(3)),
    lambda m, a, b: m.linalg.solve(a[:, :3] + 2 * m.eye(3), b[:, 0]),
    lambda m, a, b: m.linalg.det(a[:, :3] + m.eye(3)),
    lambda m, a, b: m.linalg.eigvalsh(a[:, :3] @ a[:, :3].T),
    lambda m, a, b: m.linalg.svd(a, compute_uv=False),
    lambda m, a, b: m.linalg.matrix_rank(a),
    lambda m, a, b: m.linalg.pinv(a),
    lambda m, a, b: m.linalg.cholesky(a[:, :3] @ a[:, :3].T + m.eye(3)),
    lambda m, a, b: m.linalg.matrix_power(a[:, :3], 2),
    lambda m, a, b: m.fft.fft(a),
    lambda m, a, b: m.fft.rfftn(a, axes=(0, 1)),
    lambda m, a, b: m.fft.irfft(m.fft.rfft(a), 4),
    lambda m, a, b: m.fft.fftshift(a),
    # no namespace equivalent: numpy's own, on CPU views, wrapped back
    lambda m, a, b: m.median(a, axis=0),
    lambda m, a, b: m.percentile(a, 25),
    lambda m, a, b: m.einsum("ij,ij->i", a, b),
    lambda m, a, b: m.histogram(a, bins=3),
    lambda m, a, b: m.cov(a),
    lambda m, a, b: m.nanmean(a, axis=1),
    lambda m, a, b: m.average(a),
    lambda m, a, b: m.average(a, axis=0, weights=b),
    lambda m, a, b: m.average(a, axis=1, weights=b[0], returned=True),
    lambda m, a, b: m.average(m.round(a * 4), axis=1, keepdims=True),
    lambda m, a, b: m.linalg.lstsq(a.T, b[0], rcond=None)[0],
]


@pytest.mark.parametrize("call", FUNCTIONS, ids=[f"f{i}" for i in range(len(FUNCTIONS))])
def test_numpy_functions_on_hxarray_arrays_match_numpy(call):
    want = call(np, A, B)
    got = call(np, xp.asarray(A), xp.asarray(B))
    if isinstance(want, (tuple, list)):
        want, got = tuple(want), tuple(got)
    _same(got, want)
    for mixed in (call(np, xp.asarray(A), B), call(np, A, xp.asarray(B))):  # numpy arrays too
        mixed = tuple(mixed) if isinstance(mixed, (tuple, list)) else (mixed,)
        for g, w in zip(mixed, want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, equal_nan=True)


def test_functions_returning_python_values_and_metadata():
    x = xp.asarray(A)
    assert np.allclose(x, A) is True
    assert np.array_equal(x, A) is True and np.array_equal(x, A[:2]) is False
    assert np.count_nonzero(x > 0) == np.count_nonzero(A > 0)
    assert np.shape(x) == (3, 4) and np.ndim(x) == 2 and np.size(x) == 12
    assert np.result_type(x, 1.0) == np.float64
    assert np.iscomplexobj(x) is False and np.isrealobj(x) is True
    assert np.may_share_memory(x, x[0]) and not np.shares_memory(x, xp.asarray(A, copy=True))


def test_asarray_of_a_cpu_array_is_a_view():
    x = xp.asarray(A, copy=True)
    view = np.asarray(x)
    assert view.__array_interface__["data"][0] == np.asarray(x).__array_interface__["data"][0]
    view[0, 0] = 42.0
    assert float(x[0, 0]) == 42.0


def test_other_array_types_take_precedence():
    class Other:
        def __array_function__(self, func, types, args, kwargs):
            return "other"

        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            return "other"

    assert np.concatenate([xp.asarray(A), Other()]) == "other"
    assert np.add(xp.asarray(A), Other()) == "other"


# -- arrays without host memory --------------------------------------------------------------------


class NoHostBackend(CpuBackend):
    """A device whose memory numpy cannot see (host_view is None), as a GPU's: copies only."""

    device_type = DeviceType.register("nohost")

    def host_view(self, x: xp.Array) -> None:
        return None

    def adopt(self, data: np.ndarray) -> None:
        return None


@pytest.fixture
def nohost(monkeypatch: pytest.MonkeyPatch) -> Device:
    device = Device("nohost")
    monkeypatch.setattr(device, "_backend", NoHostBackend())
    return device


def test_device_arrays_stay_on_their_device(nohost):
    x = xp.asarray(A, device=nohost)
    for result in (np.sin(x), np.add(x, B), x + B, np.sum(x, axis=0), np.concatenate([x, x]),
                   np.where(x > 0, x, 0.0), np.linalg.norm(x)):
        assert type(result) is xp.Array and result.device is nohost
    np.testing.assert_allclose(np.asarray(np.add(x, B)), A + B)


def test_metadata_and_averages_of_device_arrays_stay_on_the_device(nohost):
    x = xp.asarray(A, device=nohost)
    assert np.may_share_memory(x, x[1:]) and np.shares_memory(x[:, ::-1], x)
    assert not np.may_share_memory(x[:1], x[1:]) and not np.may_share_memory(x, A)
    assert not np.may_share_memory(x, xp.asarray(A, device=nohost))
    for args in ({}, {"axis": 0, "weights": B}, {"axis": 1, "weights": B[0], "returned": True}):
        got, want = np.average(x, **args), np.average(A, **args)
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            assert g.device is nohost
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12)
    with pytest.raises(ZeroDivisionError):
        np.average(x, axis=0, weights=np.zeros((3, 4)))


def test_device_arrays_are_never_copied_to_the_host_silently(nohost):
    x = xp.asarray(A, device=nohost)
    for call in (lambda: np.ediff1d(x), lambda: np.exp2(x), lambda: np.gradient(x),
                 lambda: np.add(x, 1, where=A > 0, out=xp.zeros((3, 4), device=nohost))):
        with pytest.raises(TypeError, match=r"to_device\('cpu'\)"):
            call()
    _same(np.ediff1d(x.to_device("cpu")), np.ediff1d(A))  # the explicit move works
    assert np.median(x).device == x.device  # a function hxarray has stays on the device
    assert np.nanmedian(x).device == x.device


# -- strict mode -----------------------------------------------------------------------------------


@pytest.mark.strict
def test_strict_mode_keeps_the_old_behaviour():
    x = xp.asarray(A)
    with pytest.raises(TypeError, match="does not support ufuncs"):
        np.sin(x)
    with pytest.raises(TypeError):
        x + B
    with pytest.raises(TypeError, match="does not support ufuncs"):
        np.sum(x)  # numpy's implementation reaches np.add.reduce, as before
    mean = np.mean(x)  # numpy's implementation, on np.asarray(x), as before
    assert type(mean) is np.float64 and mean == A.mean()
    assert_matches(xp.asarray(np.concatenate([x, x])), np.concatenate([A, A]))


def test_results_of_integer_data_keep_numpys_dtypes():
    a = sample((3, 4), xp.int32) % 7
    x = xp.asarray(a)
    _same(np.sum(x, axis=1), np.sum(a, axis=1))
    _same(np.mean(x), np.mean(a))
    _same(x / 2, a / 2)
    _same(np.sqrt(x), np.sqrt(a))


# -- numpy's subclasses ----------------------------------------------------------------------------
# A call in which a numpy subclass's instance takes part is numpy's, on plain views of the CPU
# arrays: numpy's answer with ndarrays in place of hxarray arrays (stress/subclasses.py's cases
# and criterion; its entry points: ufuncs and their methods, numpy functions, the operators,
# comparisons, hxarray's own functions).

def _subclass_draws(kind: str, entry: str) -> list[subclasses.Draw]:
    """Fixed cases: 0-d, empty, 1-d and 2-d; float data with NaN and infinity and a mask with
    masked elements, and integer data without a mask, against float and integer operands."""
    draws = []
    for shape in [(), (0,), (3,), (2, 3)]:
        floats = np.resize(np.array([1.5, np.nan, -2.0, 0.0, np.inf, 0.25]), shape)
        ints, others = np.resize(np.arange(-2, 4), shape), np.resize(np.arange(5, 0, -1), shape)
        mask = np.resize(np.array([False, True, False]), shape)
        other = np.resize(np.array([2.0, -1.0, np.nan, 4.0]), shape)
        draws += [subclasses.Draw(kind, entry, floats, mask, other),
                  subclasses.Draw(kind, entry, ints, np.ma.nomask, others),
                  subclasses.Draw(kind, entry, floats, np.ma.nomask, ints)]
    return draws


@pytest.mark.parametrize("entry", list(subclasses.ENTRIES))
def test_numpy_subclasses_get_numpys_answer(entry, tmp_path):
    """Every subclass through `entry` on the CPU: numpy's answer (type, mask, dtype, values, the
    inputs afterwards) or numpy's exception; hxarray's own functions may refuse (TypeError, or
    ValueError for masked elements)."""
    cpu = xp.Device("cpu")
    problems = []
    for kind in subclasses.KINDS:
        for case in _subclass_draws(kind, entry):
            outcome, problem = subclasses.check(case, cpu, str(tmp_path))
            if problem is not None or (outcome == "TypeError" and
                                       not subclasses.ENTRIES[entry].own):
                problems.append(problem or f"{kind} {case.data.dtype}{case.data.shape}: "
                                           "TypeError where numpy answers")
    assert not problems, "\n".join(problems)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix
def test_masked_arrays_keep_their_masks():
    ma = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    x, a = xp.asarray([10.0, 20.0, 30.0]), np.array([10.0, 20.0, 30.0])
    for call in (lambda m, v: np.add(m, v), lambda m, v: np.maximum(v, m),
                 lambda m, v: m + v, lambda m, v: v + m, lambda m, v: v < m,
                 lambda m, v: np.add.outer(v, m)[0], lambda m, v: np.stack([m, v])):
        got, want = call(ma, x), call(ma, a)
        assert type(got) is type(want)
        np.testing.assert_array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want))
        np.testing.assert_array_equal(np.ma.getdata(got), np.ma.getdata(want))
    assert type(np.add(ma, x)) is np.ma.MaskedArray and np.add(ma, x).mask.tolist() == \
        [False, True, False]
    m = np.asmatrix([[1.0, 2.0], [3.0, 4.0]])
    y = xp.asarray([[0.0, 1.0], [1.0, 0.0]])
    for got in (m * y, y * m, np.dot(m, y), np.add(m, y)):
        assert type(got) is np.matrix
    np.testing.assert_array_equal(m * y, m @ np.asarray(y))  # a matrix's * is its product


def test_outputs_and_in_place_operators_with_subclasses():
    ma = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    x = xp.asarray([10.0, 20.0, 30.0])
    buffer = x.buffer
    x += ma  # numpy's answer with an ndarray in x's place: into x, the mask not kept
    assert type(x) is xp.Array and x.buffer is buffer
    _same(x, np.array([11.0, 22.0, 33.0]))
    out = xp.zeros(3)
    assert np.add(ma, 1.0, out=out) is out
    target = np.ma.masked_array(np.zeros(3), mask=[1, 0, 0])
    result = np.add(x, x, out=target)  # a masked out= stays the masked array numpy writes
    assert result is target
    np.testing.assert_array_equal(target.data, [22.0, 44.0, 66.0])
    read_only = xp.broadcast_to(xp.asarray(1.0), (3,))
    for write in (lambda: read_only.__iadd__(ma), lambda: np.add(ma, 1.0, out=read_only)):
        with pytest.raises(ValueError, match="read-only"):
            write()


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix
def test_masked_arrays_with_masked_elements_never_become_hxarray_arrays():
    ma = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    x = xp.zeros(3)
    for convert in (lambda: xp.asarray(ma), lambda: xp.asarray(ma, copy=False),
                    lambda: xp.asarray(ma, dtype=xp.float32), lambda: xp.from_dlpack(ma),
                    lambda: x.__setitem__(slice(None), ma), lambda: x[np.ma.masked_array(
                        [True, False, True], mask=[1, 0, 0])],
                    lambda: list(xp.pipeline([ma], lambda a: a)),
                    lambda: list(xp.prefetch([(x, ma)], "cpu"))):
        with pytest.raises(ValueError, match=r"masked.*a\.filled\(value\)"):
            convert()
    _same(x, np.zeros(3))
    clear = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 0, 0])  # nothing masked: its data
    _same(xp.asarray(clear), clear.data)
    _same(xp.asarray(np.ma.masked_array([1.0, 2.0])), np.array([1.0, 2.0]))
    for other in (np.asmatrix([[1.0, 2.0]]), np.arange(3.0).view(np.recarray)):
        _same(xp.asarray(other), np.asarray(other))  # as numpy's asarray converts them


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix
def test_subclasses_with_arrays_without_host_memory_raise(nohost):
    x = xp.asarray(A, device=nohost)
    ma = np.ma.masked_array(B, mask=B > 1)
    m = np.asmatrix(B)
    for call in (lambda: np.add(ma, x), lambda: np.add(x, m), lambda: np.add.outer(x, ma),
                 lambda: np.concatenate([x, ma]), lambda: np.sum(x, axis=0, out=ma[0]),
                 lambda: x + ma, lambda: m * x, lambda: x * m, lambda: x == m,
                 lambda: x.__iadd__(m), lambda: np.copyto(ma, x)):
        with pytest.raises(TypeError, match=r"numpy\.(ma\.MaskedArray|matrix).*to_device"):
            call()
    _same(x.to_device("cpu"), A)  # nothing written either way
    np.testing.assert_array_equal(ma.data, B)
    np.testing.assert_array_equal(ma.mask, B > 1)


@pytest.mark.strict
def test_strict_mode_refuses_ufuncs_with_subclasses_too():
    ma = np.ma.masked_array([1.0, 2.0], mask=[0, 1])
    with pytest.raises(TypeError, match="does not support ufuncs"):
        np.add(ma, xp.asarray([1.0, 2.0]))


def test_subclass_stress_part_is_clean():
    report = subclasses.main("cpu", 300, 0)
    assert report["clean"], report["problems"]
