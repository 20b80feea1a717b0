"""Manipulation functions (spec: "Manipulation Functions") against numpy, including which results
are views of their input's buffer."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hxarray as xp

from .oracle import (
    DTYPES,
    ON_EACH_DEVICE,
    SEQUENCE,
    VIEWS,
    assert_matches,
    ids,
    np_dtype,
    sample,
    view_pair,
)

pytestmark = ON_EACH_DEVICE


@st.composite
def strided(draw, max_dims: int = 4):
    """(x, data): an hxarray view through a random basic key (negative steps, gaps, new axes),
    perhaps broadcast along a new leading axis, and its numpy twin."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=max_dims, min_side=0, max_side=5))
    dtype = draw(st.sampled_from(DTYPES))
    base = sample(shape, dtype, seed=draw(st.integers(0, 9)))
    key = draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True))
    x, data = xp.asarray(base)[key], np.asarray(base[key])
    if draw(st.booleans()):  # zero strides too
        lead = (draw(st.integers(0, 3)),)
        x, data = xp.broadcast_to(x, lead + x.shape), np.broadcast_to(data, lead + data.shape)
    return x, data


@st.composite
def shapes_of_size(draw, size: int):
    """A shape with `size` elements: its prime factors (or a zero) dealt over 0-4 axes, with
    axes of size 1 mixed in."""
    factors = []
    n, p = size, 2
    while n > 1 and p * p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    if n > 1 or size == 0:
        factors.append(n)
    ndim = draw(st.integers(1 if factors else 0, 4))
    dims = [1] * ndim
    for f in factors:
        dims[draw(st.integers(0, ndim - 1))] *= f
    if size == 0 and ndim:
        dims = [draw(st.integers(0, 3)) if d else 0 for d in dims]
    return tuple(dims)


# -- reshape ---------------------------------------------------------------------------------------


@given(strided(), st.data())
def test_reshape_matches_numpy_and_views_when_numpy_does(case, draw):
    x, data = case
    shape = draw.draw(shapes_of_size(data.size))
    assert_matches(xp.reshape(x, shape), data.reshape(shape))
    try:
        expected = np.reshape(data, shape, copy=False)
    except ValueError:
        with pytest.raises(ValueError):
            xp.reshape(x, shape, copy=False)
    else:
        result = xp.reshape(x, shape, copy=False)
        assert_matches(result, expected)
        assert result.buffer is x.buffer
        assert xp.reshape(x, shape).buffer is x.buffer  # copy=None makes a view when it can
    copied = xp.reshape(x, shape, copy=True)
    assert_matches(copied, data.reshape(shape))
    assert copied.buffer is not x.buffer


@pytest.mark.parametrize("kind", list(VIEWS))
def test_reshape_of_views(kind):
    x, data = view_pair(kind, (4, 8), xp.float32)
    for shape in [(-1,), (2, -1), (data.shape[1], data.shape[0]), (1, *data.shape, 1)]:
        assert_matches(xp.reshape(x, shape), data.reshape(shape))


def test_reshape_copy_false():
    x = xp.reshape(xp.arange(24), (2, 3, 4))
    assert xp.reshape(x[::-1], (2, 12), copy=False).buffer is x.buffer  # merge within rows
    assert xp.reshape(x.mT, (2, 4, 3), copy=False).buffer is x.buffer
    for view, shape in [(x.mT, (2, 12)), (x[:, ::2], (2, 8)), (x[:, 1], (8,))]:
        with pytest.raises(ValueError):
            xp.reshape(view, shape, copy=False)
    assert_matches(x, np.arange(24).reshape(2, 3, 4))


def test_reshape_writes_through_views():
    x = xp.arange(6)
    xp.reshape(x, (2, 3))[1, 0] = 30
    assert int(x[3]) == 30


@pytest.mark.parametrize("shape,error", [
    ((5, -1), ValueError), ((-1, -1), ValueError), ((0, -1), ValueError), ((25,), ValueError),
    ((-2, 12), ValueError), (24, TypeError), ((24.0,), TypeError), ((True, 24), TypeError),
    (None, TypeError),
])
def test_reshape_rejects_bad_shapes(shape, error):
    with pytest.raises(error):
        xp.reshape(xp.arange(24), shape)


def test_reshape_of_0d_and_empty_arrays():
    assert_matches(xp.reshape(xp.asarray(5), (1, 1)), np.full((1, 1), 5))
    assert_matches(xp.reshape(xp.asarray([5]), ()), np.asarray(5))
    assert_matches(xp.reshape(xp.zeros((0, 3)), (3, 0, 5)), np.zeros((3, 0, 5)))
    assert_matches(xp.reshape(xp.zeros((0, 3)), (-1,)), np.zeros(0))


# -- views: axes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(VIEWS))
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_axis_views(kind, dtype):
    x, data = view_pair(kind, (4, 8), dtype)
    x3, data3 = xp.reshape(x, (2, 2, -1)), data.reshape(2, 2, -1)
    target = (3, 2, 2, data3.shape[2])
    results = [
        (xp.permute_dims(x3, (2, 0, 1)), np.transpose(data3, (2, 0, 1))),
        (xp.permute_dims(x3, (-1, 0, -2)), np.transpose(data3, (2, 0, 1))),
        (xp.moveaxis(x3, 0, -1), np.moveaxis(data3, 0, -1)),
        (xp.moveaxis(x3, (0, 1), (2, 0)), np.moveaxis(data3, (0, 1), (2, 0))),
        (xp.flip(x3), np.flip(data3)),
        (xp.flip(x3, axis=1), np.flip(data3, 1)),
        (xp.flip(x3, axis=(0, -1)), np.flip(data3, (0, -1))),
        (xp.expand_dims(x3, axis=-1), np.expand_dims(data3, -1)),
        (xp.expand_dims(x3, axis=(0, 2, -1)), np.expand_dims(data3, (0, 2, -1))),
        (xp.squeeze(xp.expand_dims(x3, axis=(0, 4)), axis=(0, -1)), data3),
        (xp.broadcast_to(x3[:, :1], target), np.broadcast_to(data3[:, :1], target)),
    ]
    for result, expected in results:
        assert_matches(result, expected)
        assert result.buffer is x3.buffer


@given(strided(), st.data())
def test_random_permutations_and_moves(case, draw):
    x, data = case
    axes = draw.draw(st.permutations(range(data.ndim)))
    assert_matches(xp.permute_dims(x, tuple(axes)), np.transpose(data, axes))
    count = draw.draw(st.integers(0, data.ndim))
    source = tuple(draw.draw(st.permutations(range(data.ndim)))[:count])
    destination = tuple(draw.draw(st.permutations(range(-data.ndim, 0)))[:count])
    assert_matches(xp.moveaxis(x, source, destination), np.moveaxis(data, source, destination))


def test_axes_may_be_numpy_integers():
    x, data = view_pair("step", (4, 6), xp.int8)
    assert_matches(xp.flip(x, axis=np.int64(1)), np.flip(data, 1))
    assert_matches(xp.expand_dims(x, axis=(np.int32(0),)), data[None])
    assert_matches(xp.moveaxis(x, np.uint8(0), -1), data.T)


@pytest.mark.parametrize("shape", [(), (0,), (1, 0, 3)])
def test_axis_functions_on_0d_and_empty(shape):
    data = np.zeros(shape, dtype=np.int8)
    x = xp.asarray(data)
    assert_matches(xp.flip(x), np.flip(data))
    assert_matches(xp.expand_dims(x, axis=0), data[None])
    assert_matches(xp.expand_dims(x, axis=-1), data[..., None])
    assert_matches(xp.permute_dims(x, tuple(reversed(range(x.ndim)))), data.T)


@pytest.mark.parametrize("call,error", [
    (lambda x: xp.permute_dims(x, (0, 0, 1)), ValueError),
    (lambda x: xp.permute_dims(x, (0, 1)), ValueError),
    (lambda x: xp.permute_dims(x, (0, 1, 3)), IndexError),
    (lambda x: xp.moveaxis(x, (0, 0), (1, 2)), ValueError),
    (lambda x: xp.moveaxis(x, (0, 1), (1,)), ValueError),
    (lambda x: xp.moveaxis(x, 3, 0), IndexError),
    (lambda x: xp.flip(x, axis=3), IndexError),
    (lambda x: xp.flip(x, axis=(0, -3)), ValueError),
    (lambda x: xp.expand_dims(x, axis=4), IndexError),
    (lambda x: xp.expand_dims(x, axis=-5), IndexError),
    (lambda x: xp.expand_dims(x, axis=(0, 0)), ValueError),
    (lambda x: xp.expand_dims(x, axis=(1, -4)), ValueError),
    (lambda x: xp.squeeze(x, axis=1), ValueError),
    (lambda x: xp.squeeze(x, axis=(0, 0)), ValueError),
    (lambda x: xp.squeeze(x, axis=3), IndexError),
    (lambda x: xp.broadcast_to(x, (3, 4)), ValueError),
    (lambda x: xp.broadcast_to(x, (2, 3, 5)), ValueError),
    (lambda x: xp.broadcast_to(x, (-1, 3, 4)), ValueError),
    (lambda x: xp.permute_dims(np.ones((2, 3, 4)), (0, 1, 2)), TypeError),
    (lambda x: xp.flip(x, axis=True), TypeError),
    (lambda x: xp.expand_dims(x, axis=1.0), TypeError),
    (lambda x: xp.squeeze(x, axis=[0]), TypeError),
    (lambda x: xp.moveaxis(x, "0", 1), TypeError),
])
def test_axis_functions_reject_bad_axes(call, error):
    x = xp.reshape(xp.arange(12), (1, 3, 4))
    with pytest.raises(error):
        call(x)
    assert_matches(x, np.arange(12).reshape(1, 3, 4))


# -- broadcasting ----------------------------------------------------------------------------------


@given(hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=4, min_side=0))
def test_broadcast_shapes_and_arrays(shapes):
    input_shapes, result_shape = shapes
    assert xp.broadcast_shapes(*input_shapes) == result_shape
    data = [sample(s, xp.int16, seed=i) for i, s in enumerate(input_shapes)]
    arrays = [xp.asarray(d) for d in data]
    result = xp.broadcast_arrays(*arrays)
    assert type(result) is SEQUENCE
    for r, e, a in zip(result, np.broadcast_arrays(*data), arrays):
        assert_matches(r, e)
        assert r.buffer is a.buffer


def test_broadcast_edge_cases():
    assert xp.broadcast_arrays() == SEQUENCE()
    assert xp.broadcast_shapes() == ()
    assert xp.broadcast_shapes((0,), (1,)) == (0,)
    assert xp.broadcast_shapes((2, 1), (3,)) == (2, 3)
    x = xp.arange(3)
    assert_matches(xp.broadcast_arrays(x)[0], np.arange(3))
    with pytest.raises(ValueError):
        xp.broadcast_shapes((2,), (3,))
    with pytest.raises(ValueError):
        xp.broadcast_arrays(x, xp.ones(4))
    with pytest.raises(TypeError):
        xp.broadcast_shapes([2], (2,))
    with pytest.raises(TypeError):
        xp.broadcast_arrays(x, np.ones(3))


# -- joining and splitting -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_concat_and_stack(dtype):
    parts = [view_pair(kind, (4, 6), dtype, seed=i) for i, kind in enumerate(VIEWS)]
    same = [p for p in parts if p[1].shape == parts[0][1].shape]
    arrays, datas = [p[0] for p in same], [p[1] for p in same]
    for axis in (0, 1, -1, None):
        assert_matches(xp.concat(arrays, axis=axis), np.concatenate(datas, axis=axis))
    for axis in (0, 1, 2, -1, -3):
        assert_matches(xp.stack(arrays, axis=axis), np.stack(datas, axis=axis))
    assert_matches(xp.concat(tuple(arrays)), np.concatenate(datas))
    assert_matches(xp.stack([arrays[0]]), datas[0][None])


def test_concat_of_different_lengths_and_empty_arrays():
    a, b, c = sample((2, 3), xp.float64), sample((0, 3), xp.float64), sample((4, 3), xp.float64)
    assert_matches(xp.concat([xp.asarray(v) for v in (a, b, c)]), np.concatenate([a, b, c]))
    assert_matches(xp.concat([xp.asarray(a).mT, xp.asarray(c).mT], axis=1),
                   np.concatenate([a.T, c.T], axis=1))
    assert_matches(xp.concat([xp.asarray(1), xp.asarray([2, 3])], axis=None), np.arange(1, 4))


@pytest.mark.parametrize("dtypes,expected", [
    ((xp.int8, xp.uint8), xp.int16), ((xp.float32, xp.complex64, xp.float64), xp.complex128),
    ((xp.uint16, xp.uint64), xp.uint64), ((xp.bool, xp.bool), xp.bool),
])
def test_concat_and_stack_promote(dtypes, expected):
    arrays = [xp.ones(2, dtype=d) for d in dtypes]
    assert_matches(xp.concat(arrays), np.ones(2 * len(dtypes), dtype=np_dtype(expected)))
    assert_matches(xp.stack(arrays), np.ones((len(dtypes), 2), dtype=np_dtype(expected)))


def test_concat_and_stack_copy():
    x = xp.arange(3)
    for result in (xp.concat([x]), xp.stack([x])):
        assert result.buffer is not x.buffer


@pytest.mark.strict
@pytest.mark.parametrize("call,error", [
    (lambda: xp.concat([]), ValueError),
    (lambda: xp.concat([xp.asarray(1), xp.asarray(2)]), ValueError),
    (lambda: xp.concat([xp.ones((2, 3)), xp.ones((2, 4))]), ValueError),
    (lambda: xp.concat([xp.ones((2, 3)), xp.ones(3)]), ValueError),
    (lambda: xp.concat([xp.ones(2), xp.ones(2, dtype=xp.int64)]), TypeError),
    (lambda: xp.concat([xp.ones(2, dtype=xp.int64), xp.ones(2, dtype=xp.uint64)]), TypeError),
    (lambda: xp.concat([xp.ones(2)], axis=1), IndexError),
    (lambda: xp.concat([xp.ones(2), np.ones(2)]), TypeError),
    (lambda: xp.stack([]), ValueError),
    (lambda: xp.stack([xp.ones(2), xp.ones(3)]), ValueError),
    (lambda: xp.stack([xp.ones(2), xp.ones(2, dtype=xp.bool)]), TypeError),
    (lambda: xp.stack([xp.ones(2)], axis=2), IndexError),
    (lambda: xp.stack([xp.ones(2)], axis=-3), IndexError),
])
def test_concat_and_stack_reject_bad_inputs(call, error):
    with pytest.raises(error):
        call()


@pytest.mark.parametrize("kind", list(VIEWS))
@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_unstack(kind, axis):
    x, data = view_pair(kind, (4, 6), xp.complex64)
    result = xp.unstack(x, axis=axis)
    expected = [np.take(data, i, axis=axis) for i in range(data.shape[axis])]
    assert type(result) is tuple and len(result) == len(expected)
    for r, e in zip(result, expected):
        assert_matches(r, e)
        assert r.buffer is x.buffer


def test_unstack_edge_cases():
    assert xp.unstack(xp.zeros((0, 3))) == ()
    parts = xp.unstack(xp.zeros((2, 0)))
    assert len(parts) == 2 and parts[0].shape == (0,)
    with pytest.raises(ValueError):
        xp.unstack(xp.asarray(1))
    with pytest.raises(IndexError):
        xp.unstack(xp.ones((2, 3)), axis=2)


# -- roll, repeat, tile ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(VIEWS))
@pytest.mark.parametrize("shift,axis", [
    (1, None), (-25, None), (0, None), (2, 0), (-1, -1), (7, 1), ((1, 2), (0, 1)),
    ((1, -3), (1, 1)), (3, (0, 1)), ((1,), None),
])
def test_roll(kind, shift, axis):
    x, data = view_pair(kind, (4, 6), xp.int32)
    result = xp.roll(x, shift, axis=axis)
    assert_matches(result, np.roll(data, shift, axis=axis))
    assert result.buffer is not x.buffer


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_roll_dtypes_and_edge_cases(dtype):
    data = sample((3, 2), dtype)
    assert_matches(xp.roll(xp.asarray(data), 1, axis=0), np.roll(data, 1, axis=0))
    assert_matches(xp.roll(xp.zeros(0, dtype=dtype), 3), np.zeros(0, dtype=np_dtype(dtype)))
    scalar = sample((), dtype)
    assert_matches(xp.roll(xp.asarray(scalar), 1), np.roll(scalar, 1))


@pytest.mark.parametrize("shift,axis,error", [
    (1.5, None, TypeError), ((1, 2), None, ValueError), ((1, 2), 0, ValueError),
    (1, 2, IndexError), (1, (0, 5), IndexError), ("1", None, TypeError),
])
def test_roll_rejects_bad_arguments(shift, axis, error):
    with pytest.raises(error):
        xp.roll(xp.ones((2, 3)), shift, axis=axis)


@pytest.mark.parametrize("kind", list(VIEWS))
@pytest.mark.parametrize("repeats,axis", [
    (2, None), (0, 1), (3, -1), ([1, 0, 2], 0), ([2], 1), (2, 0),
])
def test_repeat(kind, repeats, axis):
    x, data = view_pair(kind, (3, 6), xp.float64)
    if isinstance(repeats, list) and len(repeats) > 1:
        repeats = repeats[: data.shape[axis]] + [1] * (data.shape[axis] - len(repeats))
    expected = np.repeat(data, repeats, axis=axis)
    hx_repeats = xp.asarray(repeats) if isinstance(repeats, list) else repeats
    assert_matches(xp.repeat(x, hx_repeats, axis=axis), expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_repeat_dtypes_and_edge_cases(dtype):
    data = sample((2, 2), dtype)
    assert_matches(xp.repeat(xp.asarray(data), xp.asarray([0, 3], dtype=xp.uint8), axis=1),
                   np.repeat(data, [0, 3], axis=1))
    scalar = sample((), dtype)
    assert_matches(xp.repeat(xp.asarray(scalar), 3), np.repeat(scalar, 3))
    assert_matches(xp.repeat(xp.asarray(data), xp.asarray(2)), np.repeat(data, 2))


@pytest.mark.parametrize("repeats,axis,error", [
    (-1, None, ValueError), (xp.asarray([-1, 1]), 0, ValueError), (2.0, None, TypeError),
    (xp.asarray([1.0]), None, TypeError), (xp.asarray([[1]]), None, ValueError),
    (xp.asarray([1, 2, 3]), 0, ValueError), (1, 2, IndexError),
])
def test_repeat_rejects_bad_arguments(repeats, axis, error):
    with pytest.raises(error):
        xp.repeat(xp.ones((2, 3)), repeats, axis=axis)


@pytest.mark.parametrize("kind", list(VIEWS))
@pytest.mark.parametrize("repetitions", [(), (2,), (1, 1), (2, 3), (0, 2), (2, 1, 2), [3, 1]])
def test_tile(kind, repetitions):
    x, data = view_pair(kind, (3, 4), xp.uint16)
    assert_matches(xp.tile(x, repetitions), np.tile(data, repetitions))


def test_tile_edge_cases_and_errors():
    assert_matches(xp.tile(xp.asarray(5), (2, 3)), np.tile(5, (2, 3)))
    assert_matches(xp.tile(xp.zeros((0, 2)), (2, 2)), np.zeros((0, 4)))
    for repetitions, error in [((-1,), ValueError), (2, TypeError), ((1.5,), TypeError),
                               ((True,), TypeError)]:
        with pytest.raises(error):
            xp.tile(xp.ones(2), repetitions)


def test_functions_of_several_arrays_need_one_device(other_device):
    x, other = xp.ones(2), xp.ones(2, device=other_device)
    for call in (lambda: xp.concat([x, other]), lambda: xp.stack([x, other]),
                 lambda: xp.repeat(x, xp.asarray([1, 2], device=other_device))):
        with pytest.raises(ValueError):
            call()
    for result in (xp.reshape(other, (1, 2)), xp.flip(other), xp.roll(other, 1),
                   xp.concat([other, other]), xp.tile(other, (2,))):
        assert result.device == other_device
