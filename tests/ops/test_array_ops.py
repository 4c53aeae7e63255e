"""Array ops: values against numpy, static shapes, folding, indexing, errors and gradients."""

import numpy as np
import pytest

import zps as tf
from zps.framework.constant import constant_value
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
            (lambda: tf.where(tf.zeros([3], tf.bool), x, x), r"vector condition.*\(3\).*\(2, 3\)"),
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
