"""Array ops: values against numpy, static shapes, folding, indexing, errors and gradients."""

import contextlib
import re

import numpy as np
import pytest

import zps as tf
from zps.framework.constant import constant_value
from zps.testing import fake_cupy
from zps.testing.gradient_checker import GradCase, check_gradients

R = np.random.default_rng(7)


def _r(*shape):
    return R.standard_normal(shape)


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def _shape(t):
    s = t.get_shape()
    return None if s.ndims is None else s.as_list()


X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


# -- forward values against numpy ----------------------------------------------------------------
VALUE_CASES = {
    "transpose_default": (lambda x: tf.transpose(x), X.transpose()),
    "transpose_perm": (lambda x: tf.transpose(x, [1, 0, 2]), X.transpose(1, 0, 2)),
    "transpose_const_perm": (lambda x: tf.transpose(x, tf.constant([2, 0, 1])), X.transpose(2, 0, 1)),
    "expand_dims_0": (lambda x: tf.expand_dims(x, 0), X[None]),
    "expand_dims_neg": (lambda x: tf.expand_dims(x, -1), X[..., None]),
    "expand_dims_mid_neg": (lambda x: tf.expand_dims(x, -2), np.expand_dims(X, -2)),
    "expand_dims_legacy_dim": (lambda x: tf.expand_dims(x, dim=1), X[:, None]),
    "squeeze_all": (lambda x: tf.squeeze(tf.reshape(x, [1, 2, 1, 12, 1])), X.reshape(2, 12)),
    "squeeze_axis": (lambda x: tf.squeeze(tf.reshape(x, [1, 2, 1, 12]), [2]), X.reshape(1, 2, 12)),
    "squeeze_neg_axis": (lambda x: tf.squeeze(tf.reshape(x, [2, 12, 1]), axis=-1), X.reshape(2, 12)),
    "squeeze_legacy": (lambda x: tf.squeeze(tf.reshape(x, [1, 24]), squeeze_dims=[0]), X.reshape(24)),
    "tile": (lambda x: tf.tile(x, [2, 1, 3]), np.tile(X, (2, 1, 3))),
    "tile_zero": (lambda x: tf.tile(x, [1, 0, 1]), np.tile(X, (1, 0, 1))),
    "pad_constant": (lambda x: tf.pad(x, [[1, 0], [0, 2], [1, 1]]),
                     np.pad(X, [(1, 0), (0, 2), (1, 1)])),
    "pad_constant_values": (lambda x: tf.pad(x, [[0, 1], [0, 0], [2, 0]], constant_values=-1.5),
                            np.pad(X, [(0, 1), (0, 0), (2, 0)], constant_values=-1.5)),
    "pad_reflect": (lambda x: tf.pad(x, [[1, 1], [2, 1], [3, 0]], "REFLECT"),
                    np.pad(X, [(1, 1), (2, 1), (3, 0)], mode="reflect")),
    "pad_symmetric": (lambda x: tf.pad(x, [[2, 1], [3, 0], [0, 4]], mode="symmetric"),
                      np.pad(X, [(2, 1), (3, 0), (0, 4)], mode="symmetric")),
    "slice": (lambda x: tf.slice(x, [1, 0, 1], [1, 2, -1]), X[1:2, 0:2, 1:]),
    "slice_empty": (lambda x: tf.slice(x, [0, 3, 0], [2, 0, 4]), X[:, 3:3]),
    "stack_0": (lambda x: tf.stack([x, 2 * x]), np.stack([X, 2 * X])),
    "stack_neg": (lambda x: tf.stack([x, x + 1, x], axis=-1), np.stack([X, X + 1, X], axis=-1)),
    "stack_python": (lambda x: tf.stack([[1, 2], [3, 4]], axis=1), np.array([[1, 3], [2, 4]])),
    "size": (lambda x: tf.size(x), 24),
    "size_int64": (lambda x: tf.size(x, out_type=tf.int64), np.int64(24)),
    "rank": (lambda x: tf.rank(x), 3),
    "shape_n": (lambda x: tf.shape_n([x, x[0]]), [np.array([2, 3, 4]), np.array([3, 4])]),
    "reverse": (lambda x: tf.reverse(x, [0, -1]), X[::-1, :, ::-1]),
    "concat_neg_axis": (lambda x: tf.concat([x, x[:, :, :1]], -1),
                        np.concatenate([X, X[:, :, :1]], -1)),
    "fill": (lambda x: tf.fill([2, 3], 9.0), np.full((2, 3), 9.0, np.float32)),
    "fill_dynamic": (lambda x: tf.fill(tf.shape(x)[1:], 2), np.full((3, 4), 2, np.int32)),
    "zeros_tensorshape": (lambda x: tf.zeros(x.get_shape()), np.zeros((2, 3, 4))),
    "zeros_tuple": (lambda x: tf.zeros((2, 2), dtype=tf.int64), np.zeros((2, 2), np.int64)),
    "ones_tensor": (lambda x: tf.ones(tf.shape(x)), np.ones((2, 3, 4))),
    "ones_list_with_tensor": (lambda x: tf.ones([tf.shape(x)[0], 5]), np.ones((2, 5))),
    "zeros_large": (lambda x: tf.zeros([40, 30]), np.zeros((40, 30))),
    "broadcast_to": (lambda x: tf.broadcast_to(x[0, 0], [2, 4]), np.broadcast_to(X[0, 0], (2, 4))),
    "gather_axis1": (lambda x: tf.gather(x, [2, 0, 2], axis=1), X[:, [2, 0, 2]]),
    "gather_axis_neg_2d_indices": (lambda x: tf.gather(x, [[3, 1], [0, 0]], axis=-1),
                                   np.take(X, [[3, 1], [0, 0]], axis=-1)),
    "boolean_mask": (lambda x: tf.boolean_mask(x, [False, True]), X[[False, True]]),
    "boolean_mask_2d": (lambda x: tf.boolean_mask(x, np.eye(2, 3, dtype=bool)), X[np.eye(2, 3, dtype=bool)]),
    "boolean_mask_axis1": (lambda x: tf.boolean_mask(x, [True, False, True], axis=1), X[:, [0, 2]]),
    "unsorted_segment_sum": (lambda x: tf.unsorted_segment_sum(x, [1, 1], 3),
                             np.stack([np.zeros((3, 4)), X[0] + X[1], np.zeros((3, 4))])),
    "identity_getitem_empty": (lambda x: x[()], X),
}


@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_values_match_numpy(name):
    build, expected = VALUE_CASES[name]
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3, 4])
        y = build(x)
        out = _run(y, {x: X})
        expected = expected if isinstance(expected, list) else [expected]
        out = out if isinstance(out, list) else [out]
        for o, e, t in zip(out, expected, y if isinstance(y, list) else [y]):
            np.testing.assert_array_equal(o, e)
            assert np.asarray(o).dtype == t.dtype.as_numpy_dtype
            assert t.get_shape().is_compatible_with(np.shape(e))


def test_split_and_unstack_values():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3, 4])
        even = tf.split(x, 2, axis=-1)
        sized = tf.split(x, [1, -1], 1)
        one = tf.split(x, 1)
        rows = tf.unstack(x, axis=1)
        sizes_tensor = tf.split(x, tf.constant([3, 1]), axis=2)
        out = _run([even, sized, one, rows, sizes_tensor], {x: X})
    for got, want in zip(out, [np.split(X, 2, -1), np.split(X, [1], 1), [X],
                               [X[:, i] for i in range(3)], np.split(X, [3], 2)]):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    assert [_shape(t) for t in sized] == [[2, 1, 4], [2, 2, 4]]
    assert [_shape(t) for t in rows] == [[2, 4]] * 3


def test_unstack_with_num_and_empty():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2])
        parts = tf.unstack(x, num=3)
        assert tf.unstack(tf.zeros([0, 2])) == []
        out = _run(parts, {x: X.reshape(-1, 2)[:3]})
    np.testing.assert_array_equal(out[2], X.reshape(-1, 2)[2])


def test_one_hot():
    idx = np.array([[0, 2], [3, -1]])
    eye = np.eye(3, dtype=np.float32)
    with tf.Graph().as_default():
        i = tf.constant(idx)
        default = tf.one_hot(i, 3)
        axis0 = tf.one_hot(i, 3, axis=0)
        on_off = tf.one_hot(i, 3, on_value=5, off_value=-1)
        typed = tf.one_hot([1], tf.constant(2), dtype=tf.int64)
        out = _run([default, axis0, on_off, typed])
    want = np.stack([np.stack([eye[k] if 0 <= k < 3 else np.zeros(3) for k in row]) for row in idx])
    np.testing.assert_array_equal(out[0], want)
    np.testing.assert_array_equal(out[1], np.moveaxis(want, -1, 0))
    np.testing.assert_array_equal(out[2], np.where(want == 1, 5, -1))
    assert out[2].dtype == np.int32 and out[3].dtype == np.int64
    np.testing.assert_array_equal(out[3], [[0, 1]])
    assert _shape(default) == [2, 2, 3] and _shape(axis0) == [3, 2, 2]


def test_where_coordinates_and_select():
    cond = np.array([[True, False, True], [False, False, True]])
    a, b = _r(2, 3), _r(2, 3)
    with tf.Graph().as_default():
        c = tf.placeholder(tf.bool, [None, 3])
        coords = tf.where(c)
        sel = tf.where(c, tf.constant(a), tf.constant(b))
        rows = tf.where(tf.constant([False, True]), tf.constant(a), tf.constant(b))
        scalar = tf.where(tf.constant(True), tf.constant(a), tf.constant(b))
        out = _run([coords, sel, rows, scalar], {c: cond})
    np.testing.assert_array_equal(out[0], np.argwhere(cond))
    assert out[0].dtype == np.int64 and _shape(coords) == [None, 2]
    np.testing.assert_array_equal(out[1], np.where(cond, a, b))
    np.testing.assert_array_equal(out[2], np.stack([b[0], a[1]]))
    np.testing.assert_array_equal(out[3], a)
    assert _shape(sel) == [2, 3]


@pytest.mark.parametrize("args,kwargs,want", [
    ((5,), {}, np.arange(5, dtype=np.int32)),
    ((2, 11, 3), {}, np.arange(2, 11, 3, dtype=np.int32)),
    ((5, 1, -2), {}, np.arange(5, 1, -2, dtype=np.int32)),
    ((1.0, 2.0, 0.25), {}, np.arange(1, 2, 0.25, dtype=np.float32)),
    ((0, 3), {"dtype": tf.float64}, np.arange(3, dtype=np.float64)),
    ((4, 4), {}, np.arange(4, 4, dtype=np.int32)),
    ((np.int64(3),), {}, np.arange(3, dtype=np.int64)),
])
def test_range(args, kwargs, want):
    with tf.Graph().as_default():
        r = tf.range(*args, **kwargs)
        out = _run(r)
        assert _shape(r) == [len(want)]
        np.testing.assert_array_equal(constant_value(r), want)
    np.testing.assert_array_equal(out, want)
    assert out.dtype == want.dtype


def test_range_of_tensors_infers_widest_dtype_and_runs():
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int64, [])
        r = tf.range(1, n)
        f = tf.range(tf.constant(0.5, tf.float64), 3)
        assert r.dtype == tf.int64 and _shape(r) == [None] and f.dtype == tf.float64
        out = _run([r, f], {n: 4})
    np.testing.assert_array_equal(out[0], [1, 2, 3])
    np.testing.assert_array_equal(out[1], [0.5, 1.5, 2.5])


def test_autopacking_lists_holding_tensors():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        packed = tf.convert_to_tensor([[tf.shape(x)[0], 1], [2, tf.shape(x)[1]]])
        assert packed.dtype == tf.int32 and _shape(packed) == [2, 2]
        r = tf.reshape(x, [tf.shape(x)[0], 3, 1])
        out = _run([packed, r], {x: np.zeros((5, 3))})
    np.testing.assert_array_equal(out[0], [[5, 1], [2, 3]])
    assert out[1].shape == (5, 3, 1)


def test_placeholder_with_default_and_identity_and_stop_gradient():
    with tf.Graph().as_default():
        d = tf.placeholder_with_default(tf.constant([1.0, 2.0]), [None])
        out = _run([d, tf.identity(d), tf.stop_gradient(d)])
        assert _shape(d) == [None]
        fed = _run(d, {d: [3.0]})
    np.testing.assert_array_equal(out[0], [1, 2])
    np.testing.assert_array_equal(fed, [3])


# -- Tensor.__getitem__ against numpy indexing ---------------------------------------------------
IDX = np.s_
GETITEM_CASES = [
    IDX[1], IDX[-1], IDX[0, 2], IDX[-2, -1, -4], IDX[:], IDX[1:], IDX[:-1], IDX[::2], IDX[::-1],
    IDX[-1::-2], IDX[3:0:-1, ::-2], IDX[:, 1], IDX[:, :, 3], IDX[..., 1], IDX[1, ...], IDX[..., 1:3],
    IDX[None], IDX[:, None], IDX[..., None], IDX[None, ..., None, 2], IDX[1, None, ::-1],
    IDX[0:100], IDX[-100:2], IDX[5:1], IDX[:, 2:100:3, -1], IDX[..., ::-3], IDX[1:2, ..., 0:1],
    IDX[2, 1:, None, ::-2], IDX[...], IDX[()],
]


@pytest.mark.parametrize("index", GETITEM_CASES, ids=repr)
@pytest.mark.parametrize("static", [True, False], ids=["static", "partial"])
def test_getitem_matches_numpy(index, static):
    v = np.arange(4 * 3 * 5, dtype=np.float32).reshape(4, 3, 5)
    want = v[index]
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [4, 3, 5] if static else [None, 3, None])
        y = x[index]
        out = _run(y, {x: v})
    np.testing.assert_array_equal(out, want)
    if static:
        assert _shape(y) == list(want.shape)
    else:
        assert len(_shape(y)) == want.ndim
        assert y.get_shape().is_compatible_with(want.shape)


def test_getitem_with_tensor_indices_and_unknown_rank():
    v = np.arange(20.0).reshape(4, 5)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64)
        i = tf.placeholder(tf.int32, [])
        j = tf.constant(2, tf.int64)
        parts = [x[i], x[:, i], x[i:, j], x[i::-1, -j], x[1:i + 2], x[tf.constant(1)]]
        assert _shape(parts[0]) is None
        out = _run(parts, {x: v, i: 1})
    for got, want in zip(out, [v[1], v[:, 1], v[1:, 2], v[1::-1, -2], v[1:3], v[1]]):
        np.testing.assert_array_equal(got, want)


def test_getitem_static_shapes_of_partially_known_inputs():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3, 4])
        i = tf.placeholder(tf.int32, [])
        assert _shape(x[0]) == [3, 4]
        assert _shape(x[:, 1]) == [None, 4]
        assert _shape(x[:, ::2, 1:]) == [None, 2, 3]
        assert _shape(x[..., tf.newaxis]) == [None, 3, 4, 1]
        assert _shape(x[i, i:]) == [None, 4]
        assert _shape(x[1:3]) == [None, 3, 4]
        assert tf.newaxis is None


def test_getitem_on_variable_and_shape_vectors():
    with tf.Graph().as_default():
        v = tf.Variable(np.arange(6.0).reshape(2, 3))
        x = tf.placeholder(tf.float32, [None, 7])
        assert constant_value(tf.shape(x)[1]) == 7
        assert constant_value(tf.shape(x)[0]) is None
        assert constant_value(tf.shape(x)[-1:]).tolist() == [7]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(v[1, ::-1]), [5, 4, 3])


def test_getitem_errors():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3])
        with pytest.raises(TypeError, match="valid indices"):
            x[[0, 1]]
        with pytest.raises(TypeError, match="valid indices"):
            x[1.5]
        with pytest.raises(TypeError, match="valid indices"):
            x[tf.constant([0, 1])]
        with pytest.raises(TypeError, match="valid indices"):
            x[True]
        with pytest.raises(ValueError, match="step cannot be zero"):
            x[::0]
        with pytest.raises(ValueError, match="single ellipsis"):
            x[..., 0, ...]
        with pytest.raises(ValueError, match=r"3 entries for a tensor of rank 2 \(shape \(2, 3\)"):
            x[0, 0, 0]
        with pytest.raises(ValueError, match=r"slice index 2 of dimension 0 out of bounds.*\(2, 3\)"):
            x[2]
        y = tf.placeholder(tf.float32, [None, 3])
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"out of range.*\(2, 3\)"):
            _run(y[5], {y: np.zeros((2, 3))})


def test_strided_slice_function_with_masks():
    v = np.arange(24).reshape(2, 3, 4)
    with tf.Graph().as_default():
        x = tf.constant(v)
        a = tf.strided_slice(x, [0, 1], [0, 3], begin_mask=1, end_mask=1)
        b = tf.strided_slice(x, [1, 0, 0], [0, 0, 0], [1, 1, -1], ellipsis_mask=2, begin_mask=4,
                             shrink_axis_mask=1, end_mask=4)
        out = _run([a, b])
        assert _shape(a) == [2, 2, 4] and _shape(b) == [3, 4]
        np.testing.assert_array_equal(constant_value(a), v[:, 1:3])
    np.testing.assert_array_equal(out[0], v[:, 1:3])
    np.testing.assert_array_equal(out[1], v[1, ..., ::-1])


# -- static shapes with partially known inputs ---------------------------------------------------
def test_static_shapes_of_partially_known_inputs():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3, 4])
        u = tf.placeholder(tf.float32)
        n = tf.placeholder(tf.int32, [])
        assert _shape(tf.reshape(x, [tf.shape(x)[0], -1])) == [None, 12]
        assert _shape(tf.reshape(x, tf.stack([tf.shape(x)[0], 2, -1]))) == [None, 2, 6]
        assert _shape(tf.reshape(x, [-1, 4])) == [None, 4]
        assert _shape(tf.reshape(x, tf.concat([tf.shape(x)[:-1], [2, 2]], 0))) == [None, 3, 2, 2]
        assert _shape(tf.reshape(x, [n, -1])) == [None, None]
        assert _shape(tf.transpose(x)) == [4, 3, None]
        assert _shape(tf.transpose(u, [1, 0])) == [None, None]
        assert _shape(tf.transpose(u)) is None
        assert _shape(tf.expand_dims(x, 1)) == [None, 1, 3, 4]
        assert _shape(tf.squeeze(tf.expand_dims(x, -1), [-1])) == [None, 3, 4]
        assert _shape(tf.squeeze(x)) is None  # the unknown dim may be 1
        assert _shape(tf.tile(x, [2, n, 3])) == [None, None, 12]
        assert _shape(tf.pad(x, [[1, 1], [0, 2], [n, 0]])) == [None, 5, None]
        assert _shape(tf.pad(u, tf.zeros([2, 2], tf.int32))) == [None, None]
        assert _shape(tf.slice(x, [0, 1, n], [-1, -1, 2])) == [None, 2, 2]
        assert _shape(tf.split(x, 2, axis=2)[0]) == [None, 3, 2]
        assert [_shape(t) for t in tf.split(x, [1, -1], axis=0)] == [[1, 3, 4], [None, 3, 4]]
        assert _shape(tf.stack([x, u], axis=1)) == [None, 2, 3, 4]
        assert _shape(tf.unstack(x, axis=-1)[0]) == [None, 3]
        assert _shape(tf.one_hot(tf.placeholder(tf.int32, [None]), n)) == [None, None]
        assert _shape(tf.zeros([tf.shape(x)[0], 5])) == [None, 5]
        assert _shape(tf.fill(tf.shape(x), 1.0)) == [None, 3, 4]
        assert _shape(tf.where(tf.placeholder(tf.bool, [None]), x, x)) == [None, 3, 4]
        assert _shape(tf.range(n)) == [None]
        assert _shape(tf.boolean_mask(x, tf.placeholder(tf.bool, [None, 3]))) == [None, 4]
        assert _shape(tf.concat([x, x], axis=0)) == [None, 3, 4]
        assert _shape(tf.concat([x, u], axis=-1)) == [None, 3, None]


def test_constant_folding_of_shape_arithmetic():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3, 4])
        assert constant_value(tf.size(tf.zeros([2, 3]))) == 6
        assert constant_value(tf.size(x)) is None
        assert constant_value(tf.rank(x)) == 3
        assert constant_value(tf.stack([1, 2])).tolist() == [1, 2]
        assert constant_value(tf.concat([[1], [2, 3]], 0)).tolist() == [1, 2, 3]
        assert constant_value(tf.shape(x)[1:]).tolist() == [3, 4]
        assert constant_value(tf.range(tf.rank(x))).tolist() == [0, 1, 2]
        assert _shape(tf.reduce_sum(x, axis=tf.range(1, tf.rank(x)))) == [None]
        assert constant_value(tf.stack([tf.shape(x)[0], 1])) is None


# -- build-time errors name the op and shapes ----------------------------------------------------
def test_build_time_errors_name_op_and_shapes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        cases = [
            (lambda: tf.transpose(x, [0, 0], name="t"), r"perm \[0, 0\].*\(2, 3\).*'t'"),
            (lambda: tf.squeeze(x, [1], name="sq"), r"squeeze dim\[1\].*got 3.*\(2, 3\).*'sq'"),
            (lambda: tf.expand_dims(x, 4, name="ed"), r"axis 4 is out of range.*\(2, 3\).*'ed'"),
            (lambda: tf.split(x, 2, axis=1, name="sp"), r"\(2, 3\) must be evenly divisible by 2.*'sp'"),
            (lambda: tf.split(x, [1, 1], axis=1, name="sv"), r"\[1, 1\] must add up to.*size 3.*'sv'"),
            (lambda: tf.split(x, [2, 2, -1], axis=1), r"more than the dimension of size 3"),
            (lambda: tf.split(x, [1, -1, -1]), r"at most one -1"),
            (lambda: tf.pad(x, [[1, 1]], name="p"), r"one row per input dimension.*\(2, 3\).*'p'"),
            (lambda: tf.pad(x, [[1, 1], [3, 0]], "REFLECT", name="mp"),
             r"REFLECT paddings must be at most 2 for dimension 1 of size 3.*'mp'"),
            (lambda: tf.pad(x, [[1, -1], [0, 0]]), r"non-negative"),
            (lambda: tf.pad(x, [[0, 0], [0, 0]], mode="WRAP"), r"Unknown padding mode"),
            (lambda: tf.slice(x, [1, 0], [2, -1], name="sl"), r"dimension 0.*\(2, 3\).*'sl'"),
            (lambda: tf.slice(x, [0], [1]), r"rank-2 tensor.*2 begin and size entries"),
            (lambda: tf.stack([x, tf.zeros([3, 2])], name="st"), r"\(2, 3\), \(3, 2\).*'st'"),
            (lambda: tf.stack([x], axis=3), r"Invalid axis 3 for stack"),
            (lambda: tf.unstack(tf.placeholder(tf.float32, [None, 2])), r"Cannot infer num.*\(\?, 2\)"),
            (lambda: tf.unstack(x, num=3), r"Cannot unstack dimension 0 of shape \(2, 3\) into 3"),
            (lambda: tf.one_hot([1], 3, axis=2), r"axis must be -1 or in \[0, 1\]"),
            (lambda: tf.where(tf.zeros([2, 3], tf.bool), x, tf.zeros([3, 2])),
             r"same shape, got \(2, 3\) and \(3, 2\)"),
            (lambda: tf.where(tf.zeros([3], tf.bool), x, x), r"vector condition.*\(3,\).*\(2, 3\)"),
            (lambda: tf.where(tf.zeros([2, 2], tf.bool), x, x), r"condition \(2, 2\), x \(2, 3\)"),
            (lambda: tf.range(0, 5, 0), r"delta != 0"),
            (lambda: tf.range(5, 0), r"start <= limit when delta > 0: 5/0"),
            (lambda: tf.reshape(x, [4, 2], name="rs"), r"6 elements to shape \[4, 2\].*'rs'"),
            (lambda: tf.reshape(x, [-1, -1]), r"Only one dimension"),
            (lambda: tf.reshape(x, [-1, 4]), r"6 elements to shape \[-1, 4\]"),
            (lambda: tf.tile(x, [2]), r"one multiple per dimension.*\(2, 3\)"),
            (lambda: tf.concat([x, tf.zeros([2, 2])], 0), r"Dimension 1 in both shapes must be equal"),
            (lambda: tf.reverse(x, [2]), r"Invalid axis 2 for reverse"),
            (lambda: tf.gather(tf.placeholder(tf.float32), [0], axis=1), r"known rank"),
            (lambda: tf.boolean_mask(x, tf.zeros([3], tf.bool)), r"incompatible"),
        ]
        for build, pattern in cases:
            with pytest.raises(ValueError, match=pattern):
                build()
        with pytest.raises(TypeError, match="integers"):
            tf.reshape(x, [2.0, 3.0])
        with pytest.raises(TypeError, match="must be bool"):
            tf.where(tf.constant([1, 0]), [1, 2], [3, 4])
        with pytest.raises(TypeError, match="same dtype"):
            tf.one_hot([0], 2, on_value=1.0, off_value=0)
        with pytest.raises(TypeError, match="indices must be integers"):
            tf.one_hot([0.5], 2)
        with pytest.raises(TypeError, match="gather indices must be int32 or int64"):
            tf.gather(x, [0.0])
        with pytest.raises(TypeError, match="perm must be known"):
            tf.transpose(x, tf.placeholder(tf.int32, [2]))
        with pytest.raises(ValueError, match="exactly one of axis and dim"):
            tf.expand_dims(x)
        with pytest.raises(ValueError, match="partially known shape"):
            tf.zeros(tf.TensorShape([None, 2]))


# -- run-time errors name the op and say what was wrong ------------------------------------------
def test_run_time_errors():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, None], name="x")
        n = tf.placeholder(tf.int32, [])
        m = tf.placeholder(tf.int32, [None])
        v = np.zeros((2, 3), np.float32)
        cases = [
            (tf.squeeze(x, [1], name="sq"), r"squeeze dim\[1\].*\(2, 3\)"),
            (tf.split(x, 2, axis=1, name="sp")[0], r"evenly divide.*size 3"),
            (tf.split(x, [2, 2], axis=1, name="sv")[0], r"must add up.*size 3"),
            (tf.slice(x, [1, 1], [2, 1], name="sl"), r"begin \[1, 1\] and size \[2, 1\].*\(2, 3\)"),
            (tf.tile(x, m, name="tl"), r"2 non-negative multiples.*\(2, 3\), got \[2\]"),
            (tf.pad(x, tf.stack([[n, 0], [0, 0]]), "SYMMETRIC", name="mp"), r"at most 2"),
            (tf.reshape(x, [n, -1], name="rs"), r"6 values"),
            (tf.unstack(x, num=3, name="us")[0], r"Cannot unstack dimension 0 of shape \(2, 3\)"),
            (tf.gather(x, [n], name="ga"), r"indices contains 5, which is not in \[0, 2\)"),
            (tf.range(n, 0, name="rg"), r"Requires start <= limit"),
            (x[n, 0], r"out of range.*\(2, 3\)"),
        ]
        with tf.Session() as sess:
            for t, pattern in cases:
                with pytest.raises(tf.errors.InvalidArgumentError, match=pattern) as info:
                    sess.run(t, {x: v, n: 5, m: [2]})
                assert info.value.op_name == t.op.name
            with pytest.raises(tf.errors.InvalidArgumentError, match="must feed a value"):
                sess.run(x)


# -- gradients -----------------------------------------------------------------------------------
def _grad_of(build):
    """A case builder whose output is d(sum(build(x)**2))/dx, to exercise gradient-only ops."""
    return lambda x: tf.gradients(tf.reduce_sum(tf.square(build(x))), [x])[0]


def _mirror_grad(mode):
    # d/dx of sum(w * pad(x)) contains a MirrorPadGrad; the outer check differentiates it again.
    return lambda x: tf.gradients(tf.reduce_sum(tf.square(tf.pad(x, [[1, 2], [2, 1]], mode))), [x])[0]


GRAD_CASES = [
    GradCase("Transpose", lambda x: tf.transpose(x, [2, 0, 1]), [_r(2, 3, 2)], name="Transpose_perm"),
    GradCase("Transpose", tf.transpose, [_r(2, 3)], name="Transpose_default"),
    GradCase("ExpandDims", lambda x: tf.expand_dims(x, -1), [_r(2, 3)]),
    GradCase("Squeeze", lambda x: tf.squeeze(x, [0, 2]), [_r(1, 3, 1)]),
    GradCase("Tile", lambda x: tf.tile(x, [2, 1, 3]), [_r(2, 2, 1)]),
    GradCase("TileGrad", _grad_of(lambda x: tf.tile(x, [3, 2])), [_r(2, 2)]),
    GradCase("PadV2", lambda x: tf.pad(x, [[1, 0], [2, 1]], constant_values=3.0), [_r(2, 3)]),
    GradCase("MirrorPad", lambda x: tf.pad(x, [[1, 2], [2, 1]], "REFLECT"), [_r(4, 3)],
             name="MirrorPad_reflect"),
    GradCase("MirrorPad", lambda x: tf.pad(x, [[2, 1], [0, 3]], "SYMMETRIC"), [_r(2, 3)],
             name="MirrorPad_symmetric"),
    GradCase("MirrorPadGrad", _mirror_grad("REFLECT"), [_r(3, 3)], name="MirrorPadGrad_reflect"),
    GradCase("MirrorPadGrad", _mirror_grad("SYMMETRIC"), [_r(2, 2)], name="MirrorPadGrad_symmetric"),
    GradCase("Slice", lambda x: tf.slice(x, [1, 0], [2, -1]), [_r(4, 3)]),
    GradCase("Split", lambda x: tf.split(x, 3, axis=1)[1] * tf.split(x, 3, axis=1)[2], [_r(2, 6)]),
    GradCase("Split", lambda x: tf.split(x, 2)[0], [_r(4, 2)], name="Split_unused_output"),
    GradCase("SplitV", lambda x: tf.concat(tf.split(x, [1, -1, 2], axis=-1)[::-1], 1), [_r(2, 5)]),
    GradCase("Pack", lambda a, b: tf.stack([a, b, a], axis=1), [_r(2, 3), _r(2, 3)]),
    GradCase("Unpack", lambda x: tf.unstack(x, axis=1)[0] * tf.unstack(x, axis=1)[2], [_r(2, 3, 2)]),
    GradCase("Select", lambda c, x, y: tf.where(c, x, y),
             [np.array([[True, False], [False, True]]), _r(2, 2), _r(2, 2)]),
    GradCase("Select", lambda c, x, y: tf.where(c, x, y),
             [np.array([False, True, True]), _r(3, 2), _r(3, 2)], name="Select_rows"),
    GradCase("StridedSlice", lambda x: x[1:, ::-2], [_r(3, 4)], name="StridedSlice_slices"),
    GradCase("StridedSlice", lambda x: x[-1, None, ..., 1], [_r(2, 3, 2)], name="StridedSlice_shrink"),
    GradCase("StridedSliceGrad", _grad_of(lambda x: x[::2, 1]), [_r(3, 3)]),
    GradCase("ReverseV2", lambda x: tf.reverse(x, [1]), [_r(2, 3)]),
    GradCase("Gather", lambda p: tf.gather(p, [2, 0, 2], axis=1), [_r(2, 3)], name="Gather_axis1"),
    GradCase("Gather", lambda x: tf.boolean_mask(x, [True, False, True]), [_r(3, 2)],
             name="Gather_boolean_mask"),
    # index 1, 0 twice: the gradients of a repeated slice add up
    GradCase("GatherNd", lambda p: tf.gather_nd(p, [[1, 0], [0, 2], [1, 0]]), [_r(2, 3, 2)]),
    GradCase("GatherNd", lambda p: tf.gather_nd(p, [[[1, 2]], [[0, 0]]]), [_r(2, 3)],
             name="GatherNd_elements"),
    GradCase("ScatterNd", lambda u: tf.scatter_nd([[1], [3], [1]], u, [5, 2]), [_r(3, 2)]),
    GradCase("ScatterNd", lambda u: tf.scatter_nd([[1, 0], [0, 2]], u, [2, 3]), [_r(2)],
             name="ScatterNd_elements"),
    GradCase("SegmentSum", lambda d: tf.segment_sum(d, [0, 0, 2, 2, 3]), [_r(5, 2)]),
    GradCase("SegmentMean", lambda d: tf.segment_mean(d, [0, 0, 2, 2, 2]), [_r(5, 2)]),
    GradCase("SegmentMax", lambda d: tf.segment_max(d, [0, 0, 2, 2, 3]), [_r(5, 2)]),
    GradCase("SegmentMin", lambda d: tf.segment_min(d, [0, 1, 1, 1, 3]), [_r(5, 2)]),
    GradCase("UnsortedSegmentSum", lambda d: tf.unsorted_segment_sum(d, [2, 0, 2, -1, 0], 4),
             [_r(5, 2)]),
    # every segment gets rows: an empty one is the dtype's lowest (highest), beyond finite differences
    GradCase("UnsortedSegmentMax", lambda d: tf.unsorted_segment_max(d, [2, 0, 2, -1, 1], 3),
             [_r(5, 2)]),
    GradCase("UnsortedSegmentMin", lambda d: tf.unsorted_segment_min(d, [[1, 0], [-1, 1]], 2),
             [_r(2, 2, 3)]),
    GradCase("UnsortedSegmentSum", lambda d: tf.unsorted_segment_mean(d, [2, 0, 2, -1, 0], 4),
             [_r(5, 2)], name="UnsortedSegmentSum_mean"),
    GradCase("UnsortedSegmentSum", lambda d: tf.unsorted_segment_sqrt_n(d, [2, 0, 2, 2, 0], 3),
             [_r(5, 2)], name="UnsortedSegmentSum_sqrt_n"),
    GradCase("MatrixBandPart", lambda x: tf.matrix_band_part(x, 1, 0), [_r(2, 3, 4)]),
    GradCase("MatrixDiag", tf.matrix_diag, [_r(2, 3)]),
    GradCase("MatrixDiag", tf.diag, [_r(2, 2)], name="MatrixDiag_diag"),
    GradCase("MatrixDiagPart", tf.matrix_diag_part, [_r(2, 3, 4)]),
    GradCase("MatrixDiagPart", tf.matrix_diag_part, [_r(4, 2)], name="MatrixDiagPart_tall"),
    GradCase("MatrixDiagPart", tf.diag_part, [_r(2, 3, 2, 3)], name="MatrixDiagPart_diag_part"),
    GradCase("BroadcastTo", lambda x, y: tf.add_n(tf.meshgrid(x, y * 2.0)), [_r(3), _r(2)],
             name="BroadcastTo_meshgrid"),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient(case):
    check_gradients(case)


def test_gradients_with_shapes_known_only_at_run_time():
    # Each op only moves entries around, so the gradient of sum(y**2) is 2*y scattered back to
    # where each entry came from, found by applying the numpy version of the op to entry indices.
    v = _r(4, 5)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [None, None])
        n = tf.placeholder(tf.int32, [])
        cases = {
            "slice": (tf.slice(x, [1, n], [2, -1]), lambda a: a[1:3, 2:]),
            "pad": (tf.pad(x, [[n, 0], [0, 1]], constant_values=-1),
                    lambda a: np.pad(a, [(2, 0), (0, 1)], constant_values=-1)),
            "reflect": (tf.pad(x, [[n, 0], [0, 1]], "REFLECT"),
                        lambda a: np.pad(a, [(2, 0), (0, 1)], mode="reflect")),
            "symmetric": (tf.pad(x, [[1, n], [n, 0]], "SYMMETRIC"),
                          lambda a: np.pad(a, [(1, 2), (2, 0)], mode="symmetric")),
            "tile": (tf.tile(x, [n, 1]), lambda a: np.tile(a, (2, 1))),
            "getitem": (x[n:, ::-n], lambda a: a[2:, ::-2]),
            "split": (tf.split(x, [n, -1], axis=1)[1], lambda a: a[:, 2:]),
            "unstack": (tf.unstack(x, num=4)[2], lambda a: a[2]),
            "squeeze": (tf.squeeze(tf.expand_dims(x, 1)), lambda a: a),
            "transpose": (tf.transpose(x), lambda a: a.T),
            "stack": (tf.stack([x, x[::-1]], axis=1), lambda a: np.stack([a, a[::-1]], axis=1)),
            "reverse": (tf.reverse(x, [1]), lambda a: a[:, ::-1]),
            "gather": (tf.gather(x, [n, 0, n], axis=1), lambda a: a[:, [2, 0, 2]]),
        }
        grads = {k: tf.gradients(tf.reduce_sum(y * y), [x])[0] for k, (y, _) in cases.items()}
        got, ys = _run([grads, {k: y for k, (y, _) in cases.items()}], {x: v, n: 2})
    for k, (_, np_op) in cases.items():
        source = np_op(np.arange(v.size).reshape(v.shape))
        expect = np.zeros(v.size)
        inside = source >= 0  # constant padding has no source
        np.add.at(expect, source[inside], 2 * ys[k][inside])
        np.testing.assert_allclose(ys[k], np_op(v), err_msg=k)
        np.testing.assert_allclose(got[k], expect.reshape(v.shape), err_msg=k)


def test_non_differentiable_ops_give_no_gradient():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3])
        y = (tf.cast(tf.size(x), tf.float32) + tf.cast(tf.rank(x), tf.float32)
             + tf.reduce_sum(tf.one_hot(tf.cast(x[0], tf.int32), 3))
             + tf.reduce_sum(tf.cast(tf.where(x > 0), tf.float32)) + tf.reduce_sum(tf.range(3.0)))
        assert tf.gradients(y, [x]) == [None]


def test_second_derivative_through_getitem_and_stack():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [3])
        y = tf.reduce_sum(tf.stack([x[0] * x[1], x[2] ** 3]))
        g, = tf.gradients(y, [x])
        h = [tf.gradients(g[i], [x])[0] for i in range(3)]
        out = _run(h, {x: [1.0, 2.0, 3.0]})
    np.testing.assert_allclose(out, [[0, 1, 0], [1, 0, 0], [0, 0, 18]])


@pytest.mark.parametrize("distinct, total", [(4088, 4096), (4096, 4096), (64, 4096), (3, 5)])
def test_unsorted_segment_sum_of_rows_matches_add_at(distinct, total):
    """Both row-summing strategies (mostly distinct ids: place and add the repeats; many repeats:
    sorted reduceat) give numpy's add.at (up to summation order), negative ids dropped as in TF1."""
    rng = np.random.default_rng(distinct)
    ids = np.concatenate([rng.permutation(distinct), rng.integers(-1, distinct, total - distinct)])
    rng.shuffle(ids)
    values = rng.standard_normal((total, 16)).astype(np.float32)
    expected = np.zeros((distinct, 16), np.float32)
    keep = ids >= 0
    np.add.at(expected, ids[keep], values[keep])
    with tf.Graph().as_default():
        got = tf.Session().run(tf.unsorted_segment_sum(values, ids, distinct))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)   # float32 sum order


@pytest.mark.parametrize("segments", [4088, 4096, 1 << 20])
def test_unsorted_segment_sum_of_mostly_distinct_rows_sums_in_input_order(segments):
    """Non-negative, mostly distinct ids (a deduplicated lookup's gradient) are counted instead of
    sorted; each repeated id's rows are summed in input order, so the result is add.at's exactly.
    With far more segments than rows, the sort path does it (the same exact result)."""
    rng = np.random.default_rng(segments)
    ids = np.concatenate([rng.permutation(4088), rng.integers(0, 4088, 8)])
    rng.shuffle(ids)
    values = rng.standard_normal((ids.size, 16)).astype(np.float32)
    expected = np.zeros((segments, 16), np.float32)
    np.add.at(expected, ids, values)
    with tf.Graph().as_default():
        got = tf.Session().run(tf.unsorted_segment_sum(values, ids, segments))
    np.testing.assert_array_equal(got, expected)


# -- gather_nd, scatter_nd, segment reductions, sequence_mask, matrix ops, meshgrid, lin_space ---
# The expected values, shapes and messages below came from TensorFlow 2.21
# (tensorflow.compat.v1 with v2 behaviour disabled; lin_space from gen_math_ops, TF1's LinSpace op).
P = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
D = np.array([[1, 2], [3, -4], [5, 6], [-7, 8], [9, 1]], np.float32)
M = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
LO32, HI32 = float(np.finfo(np.float32).min), float(np.finfo(np.float32).max)
I64 = np.iinfo(np.int64)


def _f32(v):
    return np.array(v, np.float32)


TF_VALUE_CASES = {
    "gather_nd_tuples": (lambda: tf.gather_nd(P, [[1, 2], [0, 0]]),
                         _f32([[20, 21, 22, 23], [0, 1, 2, 3]])),
    "gather_nd_full_index": (lambda: tf.gather_nd(P, [[[1, 2, 3]], [[0, 1, 0]]]), _f32([[23], [4]])),
    "gather_nd_depth0": (lambda: tf.gather_nd(P[0], np.zeros((2, 0), np.int32)), np.stack([P[0], P[0]])),
    "gather_nd_vector_index": (lambda: tf.gather_nd(P, [1, 0]), _f32([12, 13, 14, 15])),
    "gather_nd_int64": (lambda: tf.gather_nd(np.arange(6).reshape(3, 2), tf.constant([[1], [0]], tf.int64)),
                        np.array([[2, 3], [0, 1]], np.int64)),
    "scatter_nd_duplicates_add": (lambda: tf.scatter_nd([[1], [3], [1]], [1.0, 2.0, 3.0], [5]),
                                  _f32([0, 4, 0, 2, 0])),
    "scatter_nd_slices": (lambda: tf.scatter_nd([[1, 0], [0, 2]], [[1.0, 2.0], [3.0, 4.0]], [2, 3, 2]),
                          _f32([[[0, 0], [0, 0], [3, 4]], [[1, 2], [0, 0], [0, 0]]])),
    "scatter_nd_int64": (lambda: tf.scatter_nd(tf.constant([[0], [2]], tf.int64), [5, 6], [3]),
                         np.array([5, 0, 6], np.int32)),
    "segment_sum": (lambda: tf.segment_sum(D, [0, 0, 2, 2, 3]), _f32([[4, -2], [0, 0], [-2, 14], [9, 1]])),
    "segment_mean": (lambda: tf.segment_mean(D, [0, 0, 2, 2, 3]), _f32([[2, -1], [0, 0], [-1, 7], [9, 1]])),
    "segment_max": (lambda: tf.segment_max(D, [0, 0, 2, 2, 3]), _f32([[3, 2], [0, 0], [5, 8], [9, 1]])),
    "segment_min": (lambda: tf.segment_min(D, [0, 0, 2, 2, 3]), _f32([[1, -4], [0, 0], [-7, 6], [9, 1]])),
    "segment_sum_int64_ids": (lambda: tf.segment_sum(D, tf.constant([0, 0, 1, 1, 1], tf.int64)),
                              _f32([[4, -2], [7, 15]])),
    "segment_mean_int_truncates": (lambda: tf.segment_mean(np.array([-3, -4, 5, 7, -7]), [0, 0, 1, 1, 1]),
                                   np.array([-3, 1], np.int64)),
    "segment_max_int": (lambda: tf.segment_max(np.arange(5), [0, 0, 2, 2, 2]), np.array([1, 0, 4])),
    "segment_sum_empty": (lambda: tf.segment_sum(np.zeros((0, 2), np.float32), np.zeros(0, np.int32)),
                          np.zeros((0, 2), np.float32)),
    "unsorted_segment_sum_negative_ids": (lambda: tf.unsorted_segment_sum(D, [3, 0, 3, -1, 0], 5),
                                          _f32([[12, -3], [0, 0], [0, 0], [6, 8], [0, 0]])),
    "unsorted_segment_max": (lambda: tf.unsorted_segment_max(D, [3, 0, 3, -1, 0], 5),
                             _f32([[9, 1], [LO32, LO32], [LO32, LO32], [5, 6], [LO32, LO32]])),
    "unsorted_segment_min": (lambda: tf.unsorted_segment_min(D, [3, 0, 3, -1, 0], 5),
                             _f32([[3, -4], [HI32, HI32], [HI32, HI32], [1, 2], [HI32, HI32]])),
    "unsorted_segment_mean": (lambda: tf.unsorted_segment_mean(D, [3, 0, 3, -1, 0], 5),
                              _f32([[6, -1.5], [0, 0], [0, 0], [3, 4], [0, 0]])),
    "unsorted_segment_sqrt_n": (lambda: tf.unsorted_segment_sqrt_n(D, [3, 0, 3, -1, 0], 5),
                                _f32([[8.485281944274902, -2.1213204860687256], [0, 0], [0, 0],
                                      [4.242640972137451, 5.656854152679443], [0, 0]])),
    "unsorted_segment_max_int64": (lambda: tf.unsorted_segment_max(np.arange(5), [3, 0, 3, -1, 0], 5),
                                   np.array([4, I64.min, I64.min, 2, I64.min], np.int64)),
    "unsorted_segment_min_2d_ids": (
        lambda: tf.unsorted_segment_min(P[0], [[1, 0, 1, 0], [-1, 1, 0, 2], [2, 2, 2, 2]], 4),
        _f32([1, 0, 7, HI32])),
    "unsorted_segment_mean_int": (lambda: tf.unsorted_segment_mean(np.arange(5), [0, 1, 0, 1, 1], 2),
                                  np.array([1.0, 2.6666666666666665])),
    "sequence_mask": (lambda: tf.sequence_mask([1, 3, 0], 4),
                      np.array([[1, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0]], bool)),
    "sequence_mask_default_maxlen": (lambda: tf.sequence_mask([1, 3, 2]),
                                     np.array([[1, 0, 0], [1, 1, 1], [1, 1, 0]], bool)),
    "sequence_mask_2d_float": (lambda: tf.sequence_mask([[1, 3], [2, 0]], 3, dtype=tf.float32),
                               _f32([[[1, 0, 0], [1, 1, 1]], [[1, 1, 0], [0, 0, 0]]])),
    "sequence_mask_int64": (lambda: tf.sequence_mask(tf.constant([1, 3], tf.int64), 3, dtype=tf.int32),
                            np.array([[1, 0, 0], [1, 1, 1]], np.int32)),
    "sequence_mask_float_lengths": (lambda: tf.sequence_mask([1.5, 2.0], 3),
                                    np.array([[1, 0, 0], [1, 1, 0]], bool)),
    "band_part_lower": (lambda: tf.matrix_band_part(M, 1, 0),
                        _f32([[1, 0, 0, 0], [5, 6, 0, 0], [0, 10, 11, 0]])),
    "band_part_upper_band": (lambda: tf.matrix_band_part(M, -1, 1),
                             _f32([[1, 2, 0, 0], [5, 6, 7, 0], [9, 10, 11, 12]])),
    "band_part_upper_triangle": (lambda: tf.matrix_band_part(M, 0, -1),
                                 _f32([[1, 2, 3, 4], [0, 6, 7, 8], [0, 0, 11, 12]])),
    "band_part_batch": (lambda: tf.matrix_band_part(np.stack([M, -M]), 1, 2),
                        _f32([[[1, 2, 3, 0], [5, 6, 7, 8], [0, 10, 11, 12]],
                              [[-1, -2, -3, 0], [-5, -6, -7, -8], [0, -10, -11, -12]]])),
    "band_part_int64_counts": (
        lambda: tf.matrix_band_part(M, tf.constant(2, tf.int64), tf.constant(0, tf.int64)),
        _f32([[1, 0, 0, 0], [5, 6, 0, 0], [9, 10, 11, 0]])),
    "matrix_diag": (lambda: tf.matrix_diag([[1.0, 2.0], [3.0, 4.0]]),
                    _f32([[[1, 0], [0, 2]], [[3, 0], [0, 4]]])),
    "matrix_diag_int": (lambda: tf.matrix_diag([1, 2, 3]),
                        np.array([[1, 0, 0], [0, 2, 0], [0, 0, 3]], np.int32)),
    "matrix_diag_part_wide": (lambda: tf.matrix_diag_part(M), _f32([1, 6, 11])),
    "matrix_diag_part_tall_batch": (lambda: tf.matrix_diag_part(np.stack([M.T, -M.T])),
                                    _f32([[1, 6, 11], [-1, -6, -11]])),
    "diag": (lambda: tf.diag([1.0, 2.0, 3.0]), _f32([[1, 0, 0], [0, 2, 0], [0, 0, 3]])),
    "diag_2d": (lambda: tf.diag([[1, 2], [3, 4]]),
                np.array([[[[1, 0], [0, 0]], [[0, 2], [0, 0]]], [[[0, 0], [3, 0]], [[0, 0], [0, 4]]]],
                         np.int32)),
    "diag_part": (lambda: tf.diag_part(np.arange(16, dtype=np.float32).reshape(4, 4)), _f32([0, 5, 10, 15])),
    "diag_part_4d": (lambda: tf.diag_part(np.arange(36.0).reshape(2, 3, 2, 3)),
                     np.array([[0.0, 7.0, 14.0], [21.0, 28.0, 35.0]])),
    "meshgrid_xy": (lambda: tf.meshgrid([1, 2, 3], [4, 5]),
                    [np.array([[1, 2, 3], [1, 2, 3]], np.int32), np.array([[4, 4, 4], [5, 5, 5]], np.int32)]),
    "meshgrid_ij": (lambda: tf.meshgrid([1, 2, 3], [4, 5], indexing="ij"),
                    [np.array([[1, 1], [2, 2], [3, 3]], np.int32),
                     np.array([[4, 5], [4, 5], [4, 5]], np.int32)]),
    # TF agreed with numpy's meshgrid on these (grids of shape [3, 2, 4] and [2, 3, 4])
    "meshgrid_xy_3d": (lambda: tf.meshgrid([1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0]),
                       list(np.meshgrid(_f32([1, 2]), _f32([3, 4, 5]), _f32([6, 7, 8, 9])))),
    "meshgrid_ij_3d": (lambda: tf.meshgrid([1, 2], [3, 4, 5], [6, 7, 8, 9], indexing="ij"),
                       list(np.meshgrid(*(np.array(v, np.int32) for v in ([1, 2], [3, 4, 5], [6, 7, 8, 9])),
                                        indexing="ij"))),
    "meshgrid_one": (lambda: tf.meshgrid([1.0, 2.0]), [_f32([1, 2])]),
    "lin_space": (lambda: tf.lin_space(0.0, 1.0, 5), _f32([0, 0.25, 0.5, 0.75, 1])),
    "lin_space_one": (lambda: tf.lin_space(3.0, 7.0, 1), _f32([3])),
    # start + i * step in float32, the last entry exactly stop: TF's rounding, bit for bit
    "lin_space_inexact": (lambda: tf.lin_space(0.1, 0.7, 7),
                          _f32([0.10000000149011612, 0.19999998807907104, 0.29999998211860657,
                                0.3999999761581421, 0.4999999701976776, 0.5999999642372131,
                                0.699999988079071])),
    "lin_space_float64": (lambda: tf.lin_space(np.float64(0.1), np.float64(0.7), 7),
                          np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])),
    "lin_space_down": (lambda: tf.lin_space(5.0, -5.0, 3), _f32([5, 0, -5])),
    "lin_space_int64_num": (lambda: tf.linspace(-1.0, 2.0, tf.constant(4, tf.int64)), _f32([-1, 0, 1, 2])),
}


@pytest.mark.parametrize("device", ["/cpu:0", "/gpu:0"])
@pytest.mark.parametrize("name", sorted(TF_VALUE_CASES))
def test_values_match_tensorflow(name, device, monkeypatch):
    """Values and dtypes as TensorFlow's, on the CPU and on a GPU (the stand-in cupy)."""
    build, expected = TF_VALUE_CASES[name]
    expected = expected if isinstance(expected, list) else [expected]
    with contextlib.ExitStack() as stack:
        if device != "/cpu:0":
            monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
            stack.enter_context(fake_cupy.installed(num_gpus=1))
        with tf.Graph().as_default():
            with tf.device(device):
                y = build()
            out = _run(y)
    ys, out = (y, out) if isinstance(y, list) else ([y], [out])
    assert len(out) == len(expected)
    for t, o, e in zip(ys, out, expected):
        assert type(o) is np.ndarray and o.dtype == e.dtype, (o.dtype, e.dtype)
        np.testing.assert_array_equal(o, e)
        assert t.get_shape().is_compatible_with(e.shape)


def test_static_shapes_of_the_nd_segment_and_matrix_ops():
    ph = tf.placeholder
    with tf.Graph().as_default():
        n = ph(tf.int32, [])
        x3 = ph(tf.float32, [None, 3])
        u = ph(tf.float32)
        ids = ph(tf.int32, [None])
        cases = [
            (tf.gather_nd(x3, ph(tf.int32, [5, None, 1])), [5, None, 3]),
            (tf.gather_nd(x3, ph(tf.int32, [5, None])), None),
            (tf.gather_nd(u, ph(tf.int32, [5, 2])), None),
            (tf.gather_nd(P, [[1, 2], [0, 0]]), [2, 4]),
            (tf.scatter_nd(ph(tf.int32, [None, 1]), x3, ph(tf.int32, [2])), [None, None]),
            (tf.scatter_nd(ph(tf.int32, [None, 1]), x3, tf.stack([n, 3])), [None, 3]),
            (tf.scatter_nd([[1]], [2.0], [4]), [4]),
            (tf.segment_sum(x3, ids), [None, 3]),
            (tf.segment_max(x3, [0, 0]), [None, 3]),
            (tf.segment_mean(u, [0, 0]), None),
            (tf.unsorted_segment_max(x3, ids, 7), [7, 3]),
            (tf.unsorted_segment_mean(x3, ids, 7), [7, 3]),
            (tf.unsorted_segment_min(x3, ids, n), [None, 3]),
            (tf.sequence_mask(ids, 5), [None, 5]),
            (tf.sequence_mask(ids), [None, None]),
            (tf.sequence_mask(ph(tf.int32), 4), None),
            (tf.matrix_band_part(ph(tf.float32, [None, 2, None]), 1, 0), [None, 2, None]),
            (tf.matrix_diag(x3), [None, 3, 3]),
            (tf.matrix_diag(u), None),
            (tf.matrix_diag_part(ph(tf.float32, [5, None, 3])), [5, None]),
            (tf.matrix_diag_part(ph(tf.float32, [5, 4, 3])), [5, 3]),
            (tf.matrix_diag_part(ph(tf.float32, [5, 2, None])), [5, None]),
            (tf.diag(ph(tf.float32, [None, 2])), [None, 2, None, 2]),
            (tf.diag_part(ph(tf.float32, [None, 3, 2, None])), [2, 3]),
            (tf.diag_part(x3), [3]),
            (tf.lin_space(0.0, 1.0, n), [None]),
            (tf.lin_space(0.0, 1.0, 5), [5]),
        ]
        for t, want in cases:
            assert _shape(t) == want, (t.name, _shape(t), want)
        vectors = ph(tf.float32, [None]), ph(tf.float32, [3])
        assert [_shape(t) for t in tf.meshgrid(*vectors)] == [[3, None]] * 2
        assert [_shape(t) for t in tf.meshgrid(*vectors, indexing="ij")] == [[None, 3]] * 2
        assert tf.meshgrid() == []


def test_build_time_errors_of_the_nd_segment_and_matrix_ops():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [4, 3, 2])
        cases = [
            (lambda: tf.gather_nd(P, [[1, 0, 0, 0]]), r"indices.shape\[-1\] must be <= params.rank.*"
                                                      r"\(1, 4\).*\(2, 3, 4\)"),
            (lambda: tf.gather_nd(P, 1), r"rank at least 1, got a scalar"),
            (lambda: tf.scatter_nd([[0], [1]], [1, 2], [4, 2]),
             r"indices \(2, 1\), updates \(2,\), shape \(4, 2\)"),
            (lambda: tf.scatter_nd([7], [1.0], [5]), r"indices \(1,\), updates \(1,\), shape \(5,\)"),
            (lambda: tf.segment_sum(D, [[0, 0, 1, 1, 1]]), r"must be a vector, got shape \(1, 5\)"),
            (lambda: tf.segment_sum(5.0, [0]), r"rank at least 1, got a scalar"),
            (lambda: tf.unsorted_segment_max(D, [0, 1], 2), r"\(2,\) must match the first dim.*\(5, 2\)"),
            (lambda: tf.sequence_mask([1, 2], -1), r"Requires start <= limit when delta > 0: 0/-1"),
            (lambda: tf.sequence_mask([1, 2], [3]), r"`maxlen` must be scalar"),
            (lambda: tf.matrix_diag(5.0), r"rank at least 1, got a scalar"),
            (lambda: tf.matrix_diag_part(np.arange(3.0)), r"rank at least 2, got shape \(3,\)"),
            (lambda: tf.diag(5.0), r"rank at least 1, got a scalar"),
            (lambda: tf.diag_part(np.zeros((3, 4))), r"shape s \+ s, got \(3, 4\)"),
            (lambda: tf.diag_part(x), r"even and non-zero rank.*\(4, 3, 2\)"),
            (lambda: tf.diag_part(5.0), r"even and non-zero rank"),
            (lambda: tf.meshgrid([1, 2], [3], indexing="xx"), r"must be either 'xy' or 'ij', got 'xx'"),
            (lambda: tf.lin_space(0.0, 1.0, 0), r"Requires num > 0: 0"),
            (lambda: tf.lin_space([0.0], 1.0, 3), r"start must be a scalar"),
        ]
        for build, pattern in cases:
            with pytest.raises(ValueError, match=pattern):
                build()
        type_errors = [
            (lambda: tf.gather_nd(P, [1.0]), r"gather_nd indices must be int32 or int64, got float32"),
            (lambda: tf.scatter_nd([[0.5]], [1.0], [2]), r"scatter_nd indices must be int32 or int64"),
            (lambda: tf.scatter_nd([[0], [1]], [1, 2], tf.constant([4], tf.int64)),
             r"Input 'shape' of 'ScatterNd' Op has type int64 that does not match type int32"),
            (lambda: tf.segment_sum(D, [0.0] * 5), r"segment_ids must be int32 or int64"),
            (lambda: tf.unsorted_segment_sqrt_n(np.arange(5), [0, 1, 0, 1, 1], 2), r"int64"),
            (lambda: tf.meshgrid([1, 2, 3], [4.0, 5.0]), r"one dtype, got int32, float32"),
            (lambda: tf.meshgrid([1], bad=1), r"unexpected keyword argument 'bad'"),
            (lambda: tf.lin_space(0, 1, 5), r"start must be float32 or float64, got int32"),
            (lambda: tf.lin_space(0.0, 1.0, 3.0), r"num must be int32 or int64, got float32"),
            (lambda: tf.lin_space(tf.constant(0.0, tf.float64), tf.constant(1.0), 3),
             r"Input 'stop' of 'LinSpace' Op has type float32 that does not match type float64"),
        ]
        for build, pattern in type_errors:
            with pytest.raises(TypeError, match=pattern):
                build()


def test_run_time_errors_of_the_nd_segment_and_matrix_ops():
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [])
        ids = tf.placeholder(tf.int32, [None])
        cases = [
            (tf.gather_nd(P, [[2, 0]]), r"^indices\[0\] = \[2, 0\] does not index into param shape "
                                        r"\[2,3,4\]$"),
            (tf.gather_nd(P, [[1, 0], [0, -1]]), r"^indices\[1\] = \[0, -1\] does not index into param"),
            (tf.gather_nd(P, [[[1, 0], [0, 0]], [[0, 1], [1, 9]]]), r"^indices\[1,1\] = \[1, 9\] does not"),
            (tf.gather_nd(P, [2, 0]), r"^indices = \[2, 0\] does not index into param shape \[2,3,4\]$"),
            (tf.scatter_nd([[5]], [1.0], [5]), r"^indices\[0\] = \[5\] does not index into shape \[5\]$"),
            (tf.scatter_nd([[-1]], [1.0], [5]), r"^indices\[0\] = \[-1\] does not index into shape \[5\]$"),
            (tf.scatter_nd([[1, 2], [0, 7]], [1.0, 2.0], [5, 3]), r"^indices\[1\] = \[0, 7\] does not index "
                                                                 r"into shape \[5,3\]$"),
            (tf.scatter_nd([[0], [1]], [1, 2], tf.stack([n - 2])),
             r"^Indices and updates specified for empty output shape$"),
            (tf.scatter_nd([[0]], [1.0], tf.stack([n - 3])), r"^Dimension -1 must be >= 0"),
            (tf.scatter_nd([[0, 1, 2]], [1], [4, 2]), r"indices \[1, 3\], updates \[1\], shape \[4, 2\]"),
            (tf.segment_sum(D, [0, 1, 0, 2, 3]), r"^segment ids are not increasing$"),
            (tf.segment_max(np.arange(4.0), [0, -1, 1, 1]), r"^segment ids are not increasing$"),
            (tf.segment_sum(D, [-1, 0, 0, 2, 3]), r"^Segment id -1 out of range \[0, 4\), possibly because "
                                                  r"'segment_ids' input is not sorted.$"),
            (tf.segment_mean(D, ids), r"^segment_ids should be the same size as dimension 0 of input"),
            (tf.unsorted_segment_max(D, [3, 0, 3, 9, 0], 5), r"^segment_ids\[3\] = 9 is out of range "
                                                             r"\[0, 5\)$"),
            (tf.unsorted_segment_sum(D, [3, 0, 3, 9, 0], 5), r"^segment_ids\[3\] = 9 is out of range "
                                                             r"\[0, 5\)$"),
            (tf.unsorted_segment_min(np.zeros((2, 3)), [[1, 0, 1], [-1, 5, 0]], n),
             r"^segment_ids\[1,1\] = 5 is out of range \[0, 2\)$"),
            (tf.matrix_band_part(M, n + 3, 0), r"^num_lower must be negative or less or equal to number of "
                                               r"rows \(3\) got: 5$"),
            (tf.matrix_band_part(M, 0, n + 3), r"^num_upper must be negative or less or equal to number of "
                                               r"columns \(4\) got: 5$"),
            (tf.matrix_band_part(np.arange(3.0), 1, 0), r"^input must be at least 2-dim, received shape: "
                                                        r"\[3\]$"),
            (tf.matrix_band_part(M, [1], 0), r"^num_lower must be scalar, got shape \[1\]$"),
            (tf.lin_space(0.0, 1.0, n - 2), r"^Requires num > 0: 0$"),
        ]
        with tf.Session() as sess:
            for t, pattern in cases:
                with pytest.raises(tf.errors.InvalidArgumentError) as info:
                    sess.run(t, {n: 2, ids: [0, 0, 1]})
                assert re.search(pattern, info.value.message), (t.op.name, info.value.message)
                assert info.value.op_name == t.op.name


def test_segment_max_min_gradients_split_ties_as_tensorflow():
    """The gradient of a max (min) goes to the entries equal to it, split evenly among ties;
    negative ids get none. The numbers are TensorFlow's for d(sum(w * y))/d data, w = 1, 2, ..."""
    data = np.array([[1.0, 5.0], [5.0, 2.0], [5.0, 5.0], [0.0, 1.0]])

    def grad(build):
        x = tf.constant(data)
        y = build(x)
        w = tf.reshape(tf.cast(tf.range(1, 1 + tf.size(y)), y.dtype), tf.shape(y))
        return tf.gradients(tf.reduce_sum(y * w), [x])[0]

    with tf.Graph().as_default():
        got = _run([grad(lambda x: tf.segment_max(x, [0, 0, 0, 1])),
                    grad(lambda x: tf.segment_min(x, [0, 0, 1, 1])),
                    grad(lambda x: tf.unsorted_segment_max(x, [1, 1, -1, 1], 3)),
                    grad(lambda x: tf.unsorted_segment_min(x, [2, 0, 2, 0], 3)),
                    grad(lambda x: tf.segment_mean(x, [0, 0, 0, 2])),
                    grad(lambda x: tf.unsorted_segment_mean(x, [0, -1, 0, 2], 3)),
                    grad(lambda x: tf.unsorted_segment_sqrt_n(x, [0, -1, 0, 2], 3)),
                    grad(lambda x: tf.gather_nd(x, [[1, 0], [3, 1], [1, 0]])),
                    grad(lambda x: tf.scatter_nd([[1], [3], [1]], x[:3], [5, 2])),
                    grad(lambda x: tf.matrix_diag_part(x))])
    third, r2 = 1 / 3, 0.7071067811865475
    want = [[[0, 1], [0.5, 0], [0.5, 1], [3, 4]],
            [[1, 0], [0, 2], [0, 0], [3, 4]],
            [[0, 4], [3, 0], [0, 0], [0, 0]],
            [[5, 3], [0, 0], [0, 3], [1, 2]],
            [[third, 2 * third], [third, 2 * third], [third, 2 * third], [5, 6]],
            [[0.5, 1], [0, 0], [0.5, 1], [5, 6]],
            [[r2, 2 * r2], [0, 0], [r2, 2 * r2], [5, 6]],
            [[0, 0], [4, 0], [0, 0], [0, 2]],
            [[3, 4], [7, 8], [3, 4], [0, 0]],
            [[1, 0], [0, 2], [0, 0], [0, 0]]]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-15)
