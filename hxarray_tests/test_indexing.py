"""Indexing (spec: "Indexing") and the indexing functions `take` and `take_along_axis`, against
numpy: basic keys give views of the same buffer, advanced keys give copies, `x[key] = value`
writes exactly where numpy does."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hxarray as xp
from hxarray.hal.stream import current_stream

from .oracle import (
    COMPLEX_FLOATING,
    DTYPES,
    INTEGER,
    ON_EACH_DEVICE,
    VIEWS,
    assert_matches,
    here,
    ids,
    np_dtype,
    sample,
    view_pair,
)

pytestmark = ON_EACH_DEVICE

try:
    import ndindex
except ImportError:  # only the canonical-form test needs it
    ndindex = None

shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)


@st.composite
def basic_cases(draw, base_views: bool = True):
    """(x, data, key): an hxarray array (perhaps a non-contiguous view), its numpy twin and a
    basic key for it."""
    dtype = draw(st.sampled_from(DTYPES))
    if base_views and draw(st.booleans()):
        kind = draw(st.sampled_from(list(VIEWS)))
        shape = draw(hnp.array_shapes(min_dims=2, max_dims=4, min_side=1, max_side=5))
        x, data = view_pair(kind, shape, dtype, seed=draw(st.integers(0, 9)))
    else:
        shape = draw(shapes)
        data = sample(shape, dtype, seed=draw(st.integers(0, 9)))
        x = xp.asarray(data)
    key = draw(hnp.basic_indices(data.shape, min_dims=0, allow_newaxis=True,
                                 allow_ellipsis=True))
    return x, data, key


def _hx_key(key: object) -> object:
    """`key` with its numpy arrays turned into hxarray arrays."""
    if isinstance(key, tuple):
        return tuple(_hx_key(k) for k in key)
    return xp.asarray(key) if isinstance(key, np.ndarray) else key


# -- basic indexing --------------------------------------------------------------------------------


@given(basic_cases())
def test_basic_keys_match_numpy_and_give_views(case):
    x, data, key = case
    result = x[key]
    assert_matches(result, np.asarray(data[key]))
    assert result.buffer is x.buffer


@given(basic_cases(), st.data())
def test_chained_basic_keys(case, draw):
    x, data, key = case
    first, expected = x[key], np.asarray(data[key])
    second = draw.draw(hnp.basic_indices(expected.shape, min_dims=0, allow_newaxis=True))
    assert_matches(first[second], np.asarray(expected[second]))
    assert first[second].buffer is x.buffer


@pytest.mark.skipif(ndindex is None, reason="needs the ndindex package")
@given(basic_cases())
def test_basic_keys_agree_with_their_canonical_form(case):
    x, data, key = case
    index = ndindex.ndindex(key)
    assert x[key].shape == index.newshape(data.shape)
    assert_matches(x[index.expand(data.shape).raw], np.asarray(data[key]))


def test_every_slice_of_short_axes():
    bounds = [None, *range(-8, 9)]
    for n in range(6):
        x, data = xp.arange(n), np.arange(n)
        for start, stop, step in itertools.product(bounds, bounds, [None, -3, -2, -1, 1, 2, 3]):
            key = slice(start, stop, step)
            result = x[key]
            assert result.shape == data[key].shape, key
            np.testing.assert_array_equal(np.asarray(result), data[key], err_msg=str(key))


def test_slices_with_bounds_and_steps_beyond_a_c_integer():
    # Python clamps a slice's bounds and step to the C range; so does the compiled index
    huge = [2**63 - 1, -2**63, 2**70, -2**70, np.int64(2), np.uint8(1)]
    for n in (0, 1, 5):
        x, data = xp.arange(n), np.arange(n)
        for start, stop, step in itertools.product([None, 1, -1, *huge], [None, 3, -2, *huge],
                                                   [None, 2, -1, 2**63 - 1, -2**63, 2**70]):
            key = slice(start, stop, step)
            np.testing.assert_array_equal(np.asarray(x[key]), data[key], err_msg=str(key))
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        xp.arange(3)[::0]
    with pytest.raises(TypeError, match="slice indices must be integers"):
        xp.arange(3)[0.5:]


def test_integer_keys_and_negative_integers():
    data = sample((3, 4, 5), xp.float32)
    x = xp.asarray(data)
    for i, j in itertools.product(range(-3, 3), range(-4, 4)):
        assert_matches(x[i, j], data[i, j])
        assert_matches(x[i, :, j % 5], data[i, :, j % 5])
    assert_matches(x[-1], data[-1])
    assert_matches(x[2, 3, 4], np.asarray(data[2, 3, 4]))  # a 0-D array, not a scalar


@pytest.mark.parametrize("key", [np.int64(1), np.uint8(2), np.int32(-1), xp.asarray(1),
                                 xp.asarray(-2, dtype=xp.int8), xp.asarray(2, dtype=xp.uint64),
                                 np.asarray(1)], ids=repr)
def test_integer_like_keys(key):
    data = np.arange(12).reshape(3, 4)
    x = xp.asarray(data)
    i = int(key)
    assert_matches(x[key], data[i])
    assert_matches(x[key, key], np.asarray(data[i, i]))
    assert_matches(x[1:, key], data[1:, i])
    assert x[key].buffer is x.buffer
    assert_matches(xp.arange(6)[key:], np.arange(6)[i:])


def test_fewer_indices_than_dimensions_fill_with_full_slices():
    data = sample((2, 3, 4), xp.int16)
    x = xp.asarray(data)
    assert_matches(x[1], data[1, :, :])
    assert_matches(x[:, 1], data[:, 1, :])
    assert_matches(x[None, 0], data[None, 0])


def test_ellipsis_and_newaxis():
    data = sample((2, 3, 4, 5), xp.float64)
    x = xp.asarray(data)
    for key in [(...,), (..., 0), (0, ...), (1, ..., 2), (..., None), (None, ..., None, 1),
                (slice(1, None), ..., slice(2, 5)), (0, 1, 2, 3, ...), (None, None),
                (xp.newaxis, 0, xp.newaxis)]:
        assert_matches(x[key], np.asarray(data[key]))


def test_0d_arrays():
    x = xp.asarray(2.5, dtype=xp.float32)
    for key in [(), ..., None, (None, ...), (..., None, None)]:
        result = x[key]
        assert_matches(result, np.asarray(np.float32(2.5))[key])
        assert result.buffer is x.buffer
    with pytest.raises(IndexError):
        x[0]
    with pytest.raises(IndexError):
        x[:]


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0), (2, 0, 4)])
def test_empty_arrays(shape):
    data = np.zeros(shape, dtype=np.int8)
    x = xp.asarray(data)
    for key in [(...,), (slice(None),), (slice(None, None, -1),), (slice(5, 10),), (None,)]:
        assert_matches(x[key], data[key])
    if shape[0]:
        assert_matches(x[-1], data[-1])
    else:
        with pytest.raises(IndexError):
            x[0]


@pytest.mark.parametrize("key", [3, -4, (0, 4), (0, -5), (slice(None), 10)], ids=repr)
def test_out_of_bounds_integers_raise_index_error(key):
    with pytest.raises(IndexError):
        xp.ones((3, 4))[key]


@pytest.mark.parametrize("key,error", [
    ((0, 0, 0), IndexError), ((..., 0, 0, 0), IndexError), ((..., ...), IndexError),
    ((0, ..., 0, ...), IndexError), (slice(None, None, 0), ValueError),
    ((0, slice(2, 1, 0)), ValueError), (1.0, IndexError), ("a", IndexError),
    ((0, 1.5), IndexError), (xp.asarray(1.0), IndexError), (object(), IndexError),
    (slice(1.5, None), TypeError),
], ids=lambda value: "object()" if type(value) is object else repr(value))
def test_bad_keys(key, error):
    with pytest.raises(error):
        xp.ones((3, 4))[key]


# -- boolean masks ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(VIEWS))
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_full_rank_masks(kind, dtype):
    x, data = view_pair(kind, (4, 6), dtype)
    mask = sample(data.shape, xp.bool, seed=7)
    assert_matches(x[xp.asarray(mask)], data[mask])
    assert_matches(x[xp.asarray(np.zeros_like(mask))], data[np.zeros_like(mask)])


@pytest.mark.parametrize("mask_shape", [(3,), (3, 4), (3, 4, 5)])
def test_partial_and_full_masks_replace_leading_dimensions(mask_shape):
    data = sample((3, 4, 5), xp.int64)
    x = xp.asarray(data)
    mask = sample(mask_shape, xp.bool, seed=3)
    assert_matches(x[xp.asarray(mask)], data[mask])
    mask_view = xp.asarray(np.stack([mask, ~mask]))[1]  # a mask that is itself a view
    assert_matches(x[mask_view], data[~mask])


@pytest.mark.parametrize("kind", list(VIEWS))
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_leading_axis_masks_of_views(kind, dtype):
    """Masks of 1024 elements and more (the CPU backend's compress path): a 1-D mask over the
    first axis of any view, and a 2-D one over a 3-D array's first two axes (reshaped when
    C-contiguous)."""
    x, data = view_pair(kind, (2100, 6), dtype)
    mask = sample(data.shape[:1], xp.bool, seed=5)
    assert_matches(x[xp.asarray(mask)], data[mask])
    assert_matches(x[xp.asarray(mask)[::-1]], data[mask[::-1]])
    cube = sample((64, 33, 3), dtype)
    plane = sample((64, 33), xp.bool, seed=6)
    assert_matches(xp.asarray(cube)[xp.asarray(plane)], cube[plane])
    assert_matches(xp.asarray(cube)[::-1][xp.asarray(plane)], cube[::-1][plane])


def test_large_masks():
    a = np.random.default_rng(8).standard_normal(300_001)
    x = xp.asarray(a)
    assert_matches(x[x > 0], a[a > 0])
    assert_matches(x[x > 10], a[a > 10])
    assert_matches(x[x < 10], a[a < 10])


@pytest.mark.parametrize("value", [True, False])
def test_0d_masks(value):
    data = sample((2, 3), xp.float32)
    x = xp.asarray(data)
    assert_matches(x[xp.asarray(value)], data[np.asarray(value)])
    assert_matches(xp.asarray(5)[xp.asarray(value)], np.asarray(5)[np.asarray(value)])


def test_masks_of_empty_arrays():
    data = np.zeros((0, 3))
    assert_matches(xp.asarray(data)[xp.zeros((0, 3), dtype=xp.bool)], data[np.zeros((0, 3), bool)])
    assert_matches(xp.asarray(data)[xp.zeros(0, dtype=xp.bool)], data[np.zeros(0, bool)])


@pytest.mark.parametrize("mask_shape", [(2,), (3, 3), (3, 4, 1), (4,)])
def test_masks_of_the_wrong_shape_raise_index_error(mask_shape):
    with pytest.raises(IndexError):
        xp.ones((3, 4))[xp.ones(mask_shape, dtype=xp.bool)]


@given(hnp.arrays(np.bool_, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4)), st.data())
def test_random_masks(mask, draw):
    extra = draw.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
    data = np.arange(int(np.prod(mask.shape + extra))).reshape(mask.shape + extra)
    assert_matches(xp.asarray(data)[xp.asarray(mask)], data[mask])


# -- integer arrays --------------------------------------------------------------------------------


@pytest.mark.parametrize("index_dtype", INTEGER, ids=ids(INTEGER))
def test_integer_array_indices(index_dtype):
    data = sample((4, 5), xp.float64)
    x = xp.asarray(data)
    rows = np.array([3, 0, 0, 2], dtype=np_dtype(index_dtype))
    cols = np.array([[1], [4]], dtype=np_dtype(index_dtype))
    assert_matches(x[xp.asarray(rows)], data[rows])
    assert_matches(x[xp.asarray(rows), xp.asarray(cols)], data[rows, cols])  # broadcast (2, 4)
    assert_matches(x[xp.asarray(rows), 2], data[rows, 2])
    assert_matches(x[1, xp.asarray(cols)], data[1, cols])
    assert_matches(x[xp.asarray(rows), xp.asarray(1)], data[rows, 1])


def test_integer_arrays_with_negatives_duplicates_and_views():
    x, data = view_pair("flip", (4, 5), xp.int32)
    rows = np.array([-1, -4, 2, 2])
    assert_matches(x[xp.asarray(rows)], data[rows])
    assert_matches(x[xp.asarray(rows), xp.asarray(rows)], data[rows, rows])
    index_view = xp.asarray([0, 9, 1, 9, 2])[::2]
    assert_matches(x[index_view, 0], data[[0, 1, 2], 0])
    empty = np.zeros(0, dtype=np.int64)
    assert_matches(x[xp.asarray(empty)], data[empty])


@st.composite
def integer_array_keys(draw):
    """(data, key): a numpy array and a tuple of integer arrays (broadcasting together, negative
    entries included) and ints for its leading axes."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4))
    count = draw(st.integers(1, len(shape)))
    index_shapes, _ = draw(hnp.mutually_broadcastable_shapes(num_shapes=count, max_dims=3))
    key = []
    for n, index_shape in zip(shape, index_shapes):
        if draw(st.booleans()):
            key.append(draw(st.integers(-n, n - 1)))
        else:
            dtype = draw(st.sampled_from([np.int8, np.int16, np.int32, np.int64]))
            key.append(draw(hnp.arrays(dtype, index_shape, elements=st.integers(-n, n - 1))))
    return np.arange(int(np.prod(shape))).reshape(shape), tuple(key)


@given(integer_array_keys())
def test_random_integer_array_keys(case):
    data, key = case
    x = xp.asarray(data)
    assert_matches(x[_hx_key(key)], np.asarray(data[key]))
    x[_hx_key(key)] = -1
    data[key] = -1
    assert_matches(x, data)


def test_integer_array_results_are_copies():
    x = xp.arange(5)
    picked = x[xp.asarray([1, 2])]
    picked[0] = 100
    assert int(x[1]) == 1


def settled(x):
    """x once its device has run the work that made it: a CUDA device reports an index out of
    range at the next synchronising call, as CUDA reports device-side assertions."""
    current_stream(x.device).synchronize()
    return x


@pytest.mark.parametrize("key,error", [
    (xp.asarray([0, 4]), IndexError), (xp.asarray([-5]), IndexError),
    ((xp.asarray([0, 1]), xp.asarray([0, 1, 2])), IndexError),
    (xp.asarray([0.0]), IndexError), (xp.asarray([0j]), IndexError),
], ids=repr)
def test_bad_integer_arrays(key, error):
    key = here(key)
    with pytest.raises(error):
        settled(xp.ones((4, 4))[key])


# -- setitem ---------------------------------------------------------------------------------------


@given(basic_cases(), st.data())
def test_setitem_with_basic_keys(case, draw):
    x, data, key = case
    data = data.copy()  # the twin of x's own memory; both get written
    target_shape = np.asarray(data[key]).shape
    kept = draw.draw(st.integers(0, len(target_shape)))  # value shape: a suffix, some dims 1
    value_shape = tuple(draw.draw(st.sampled_from([n, 1])) for n in target_shape[kept:])
    value = sample(value_shape, x.dtype, seed=4)
    x[key] = xp.asarray(value)
    data[key] = value
    assert_matches(x, data)


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_setitem_python_scalars_for_every_key_kind(dtype):
    scalar = {xp.bool: False}.get(dtype, 1j if dtype in COMPLEX_FLOATING else 7)
    mask = sample((3, 4), xp.bool, seed=1)
    keys = [1, -1, (0, 2), slice(None, None, -2), (..., 1), (None, 1), mask[:, 0], mask,
            np.array([2, 0]), (np.array([0, 1]), np.array([3, 3])), np.asarray(1), ()]
    for key in keys:
        data = sample((3, 4), dtype)
        x = xp.asarray(data)
        x[_hx_key(key)] = scalar
        data[key] = scalar
        assert_matches(x, data)


@pytest.mark.parametrize("kind", list(VIEWS))
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_masked_assignment_of_scalars(kind, dtype):
    """x[mask] = value for a mask of x's leading axes and a scalar or 0-D value (the backend's
    `place`): numpy's values on every view, the mask and the value left unchanged."""
    specials = {xp.bool: [True, False]}.get(dtype, [0, 7] if dtype in INTEGER else
                                             [-0.0, float("nan"), float("-inf"), 2.5])
    if dtype in COMPLEX_FLOATING:
        specials.append(complex(-0.0, float("nan")))
    for axes in (2, 1, 0):  # a full mask, one of the first axis, one of an empty array
        for seed, scalar in enumerate(specials):
            if axes:
                x, data = view_pair(kind, (4, 6), dtype, seed=seed)
            else:
                data = sample((0, 6), dtype)
                x = xp.asarray(data)
            data = data.copy()
            mask = sample(data.shape[:max(axes, 1)], xp.bool, seed=seed)
            hx_mask = xp.asarray(mask)
            x[hx_mask] = scalar
            data[mask] = scalar
            assert_matches(x, data)
            value = xp.asarray(scalar, dtype=dtype)
            x[hx_mask] = value
            assert_matches(x, data)
            assert_matches(hx_mask, mask)
            assert_matches(value, np.asarray(scalar, dtype=np_dtype(dtype)))


def test_masked_assignment_casts_0d_values_and_reads_them_before_writing():
    data = sample((3, 4), xp.float32)
    x = xp.asarray(data)
    mask = sample((3, 4), xp.bool, seed=2)
    x[xp.asarray(mask)] = xp.asarray(1.25, dtype=xp.float64)  # cast to x's dtype
    data[mask] = np.float64(1.25)
    assert_matches(x, data)
    first = data[0, 0]
    x[xp.asarray(mask)] = x[0, 0]  # a value in x itself: read before x is written
    data[mask] = first
    assert_matches(x, data)
    flags = xp.asarray(mask)
    flags[flags] = False  # the mask is x itself
    assert_matches(flags, np.zeros_like(mask))
    rows = xp.asarray(sample((5,), xp.bool, seed=3))
    expected = np.asarray(rows).copy()
    expected[expected[::-1].copy()] = True
    rows[rows[::-1]] = True  # a mask overlapping x in another order
    assert_matches(rows, expected)


def test_setitem_broadcast_arrays_for_advanced_keys():
    data = np.zeros((3, 4), dtype=np.int16)
    x = xp.asarray(data)
    mask = np.array([True, False, True])
    x[xp.asarray(mask)] = xp.asarray([1, 2, 3, 4], dtype=xp.int16)
    data[mask] = [1, 2, 3, 4]
    rows = np.array([0, 2])
    x[xp.asarray(rows), 1:3] = xp.asarray([[7], [8]], dtype=xp.int16)
    data[rows, 1:3] = [[7], [8]]
    x[xp.asarray(1), xp.asarray([0, 3])] = xp.asarray(-1, dtype=xp.int8)
    data[1, [0, 3]] = -1
    assert_matches(x, data)


def test_setitem_through_views_and_overlap():
    x = xp.reshape(xp.arange(12.0), (3, 4))
    data = np.arange(12.0).reshape(3, 4)
    x.mT[::2] = xp.asarray([-1.0, -2.0, -3.0])
    data.mT[::2] = [-1.0, -2.0, -3.0]
    x[1:, :] = x[:-1, :]  # overlapping source and destination
    data[1:, :] = data[:-1, :].copy()
    assert_matches(x, data)
    y, expected = xp.arange(6), np.arange(6)
    y[1:] = y[:-1]
    expected[1:] = expected[:-1].copy()
    assert_matches(y, expected)


def test_setitem_casts_within_a_kind():
    x = xp.zeros(3, dtype=xp.float32)
    x[:] = xp.asarray([1.5, 2.5, 3.5], dtype=xp.float64)
    x[0] = 2
    assert_matches(x, np.array([2.0, 2.5, 3.5], dtype=np.float32))
    c = xp.zeros(2, dtype=xp.complex128)
    c[:] = xp.asarray([1.0, -2.0], dtype=xp.float32)
    c[1] = 1.5
    assert_matches(c, np.array([1.0, 1.5], dtype=np.complex128))


@pytest.mark.strict
@pytest.mark.parametrize("dtype,key,value,error", [
    (xp.int32, 0, 1.5, TypeError), (xp.int32, 0, True, TypeError), (xp.bool, 0, 1, TypeError),
    (xp.float64, 0, 1j, TypeError), (xp.uint8, 0, 256, OverflowError),
    (xp.uint8, 0, -1, OverflowError), (xp.int32, 0, "1", TypeError), (xp.int32, 0, None, TypeError),
    (xp.int32, slice(None), xp.ones(3), TypeError),
    (xp.float64, slice(None), xp.asarray([1j, 2j, 3j, 4j]), TypeError),
    (xp.int32, 0, xp.ones(3, dtype=xp.int32), ValueError),
    (xp.int32, slice(None), xp.ones((2, 4), dtype=xp.int32), ValueError),
    (xp.int32, 4, 1, IndexError), (xp.int32, (0, 0), 1, IndexError),
    (xp.int32, (..., ...), 1, IndexError), (xp.int32, slice(None, None, 0), 1, ValueError),
    (xp.int32, xp.asarray([0, 9]), 1, IndexError), (xp.int32, xp.asarray([1.0]), 1, IndexError),
    (xp.int32, xp.asarray([True]), 1, IndexError),
], ids=repr)
def test_failed_setitem_leaves_x_unchanged(dtype, key, value, error):
    data = sample((4,), dtype)
    x = xp.asarray(data)
    key, value = here(key), here(value)
    with pytest.raises(error):
        x[key] = value
        settled(x)
    assert_matches(x, data)


def test_keys_and_values_on_another_device_are_refused(other_device):
    x = xp.arange(6.0)
    index, mask = xp.asarray([0, 1], device=other_device), xp.asarray(True, device=other_device)
    for call in (lambda: x[index], lambda: x[mask], lambda: x.__setitem__(index, 1.0),
                 lambda: x.__setitem__(0, xp.asarray(1.0, device=other_device)),
                 lambda: xp.take(x, index), lambda: xp.take_along_axis(x, index)):
        with pytest.raises(ValueError):
            call()
    assert_matches(x, np.arange(6.0))
    on_toy = x.to_device(other_device)
    on_toy[index] = -1.0
    assert_matches(on_toy[1:4], np.array([-1.0, 2.0, 3.0]))
    assert on_toy[index].device == other_device and xp.take(on_toy, index).device == other_device


# -- take, take_along_axis -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(VIEWS))
@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_take(kind, dtype):
    x, data = view_pair(kind, (4, 6), dtype)
    indices = np.array([0, -1, 1, 1])
    for axis in (0, 1, -1, -2):
        assert_matches(xp.take(x, xp.asarray(indices), axis=axis), np.take(data, indices, axis))
    assert_matches(xp.take(x, xp.asarray([], dtype=xp.int64), axis=1), data[:, :0])


@pytest.mark.parametrize("index_dtype", INTEGER, ids=ids(INTEGER))
def test_take_1d_without_axis(index_dtype):
    data = sample((7,), xp.float32)
    indices = np.array([6, 0, 3], dtype=np_dtype(index_dtype))
    assert_matches(xp.take(xp.asarray(data), xp.asarray(indices)), data[indices])


@pytest.mark.parametrize("args,kwargs,error", [
    ((xp.ones((2, 3)), xp.asarray([0])), {}, ValueError),  # axis is required for n-D
    ((xp.ones(3), xp.asarray([[0]])), {}, ValueError),  # indices must be 1-D
    ((xp.ones(3), xp.asarray(0)), {}, ValueError),
    ((xp.ones(3), xp.asarray([0.0])), {}, TypeError),
    ((xp.ones(3), [0]), {}, TypeError), ((np.ones(3), xp.asarray([0])), {}, TypeError),
    ((xp.ones(3), xp.asarray([3])), {}, IndexError),
    ((xp.ones((2, 3)), xp.asarray([0])), {"axis": 2}, IndexError),
])
def test_take_rejects_bad_arguments(args, kwargs, error):
    with pytest.raises(error):
        settled(xp.take(*args, **kwargs))


@pytest.mark.parametrize("kind", list(VIEWS))
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_take_along_axis(kind, axis):
    x, data = view_pair(kind, (4, 6), xp.int64)
    shape = list(data.shape)
    shape[axis] = 5
    rng = np.random.default_rng(0)
    indices = rng.integers(-data.shape[axis], data.shape[axis], size=shape)
    assert_matches(xp.take_along_axis(x, xp.asarray(indices), axis=axis),
                   np.take_along_axis(data, indices, axis))


def test_take_along_axis_broadcasts_and_sorts():
    data = sample((3, 4), xp.float64)
    clean = np.nan_to_num(data)
    order = np.argsort(clean, axis=1)
    assert_matches(xp.take_along_axis(xp.asarray(clean), xp.asarray(order)), np.sort(clean, 1))
    first = np.zeros((1, 2), dtype=np.int64)
    assert_matches(xp.take_along_axis(xp.asarray(data), xp.asarray(first), axis=1),
                   np.take_along_axis(data, first, 1))
    assert_matches(xp.take_along_axis(xp.asarray(data), xp.zeros((3, 0), dtype=xp.int64)),
                   data[:, :0])


@pytest.mark.parametrize("indices,kwargs,error", [
    (xp.zeros(3, dtype=xp.int64), {}, ValueError),  # ranks differ
    (xp.zeros((2, 1), dtype=xp.int64), {"axis": 1}, ValueError),  # 2 vs 3 off the axis
    (xp.zeros((3, 1)), {}, TypeError),
    (xp.zeros((3, 1), dtype=xp.int64), {"axis": 2}, IndexError),
    (xp.full((3, 1), 4, dtype=xp.int64), {}, IndexError),
])
def test_take_along_axis_rejects_bad_arguments(indices, kwargs, error):
    indices = here(indices)
    with pytest.raises(error):
        settled(xp.take_along_axis(xp.ones((3, 4)), indices, **kwargs))
