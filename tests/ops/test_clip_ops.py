"""Clipping functions: values against TF1's formulas in numpy, gradients, None and IndexedSlices."""

import numpy as np
import pytest

import zps as tf


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def _tf1_clip_by_global_norm(arrays, clip_norm):
    """TF1's computation in float32, step by step."""
    f = np.float32
    half = [np.sum(np.square(a)) * f(0.5) for a in arrays]
    norm = np.sqrt(np.sum(half, dtype=np.float32) * f(2.0))
    scale = f(clip_norm) * np.minimum(f(1.0) / norm, f(1.0) / f(clip_norm))
    return [a * scale for a in arrays], norm


A = np.array([[3.0, -4.0], [1.0, 2.0]], np.float32)
B = np.array([12.0, -0.5, 0.25], np.float32)


# -- clip_by_value -------------------------------------------------------------------------------
def test_clip_by_value_values_and_gradient():
    x = np.array([[-2.0, 0.0, 0.5], [1.0, 3.0, -0.25]], np.float32)
    with tf.Graph().as_default():
        t = tf.constant(x)
        y = tf.clip_by_value(t, 0.0, 1.0, name="clipped")
        assert y.op.name == "clipped" and y.get_shape().as_list() == [2, 3]
        g, = tf.gradients(tf.reduce_sum(y * 2.0), [t])
        out, grad = _run([y, g])
    np.testing.assert_array_equal(out, np.clip(x, 0.0, 1.0))
    # Gradient passes where not clipped, elements equal to a bound included.
    np.testing.assert_array_equal(grad, [[0, 2, 2], [2, 0, 0]])


def test_clip_by_value_with_tensor_bounds_broadcast_and_their_gradients():
    x = np.array([[-2.0, 0.5], [5.0, 1.5]], np.float32)
    with tf.Graph().as_default():
        t = tf.constant(x)
        lo = tf.constant([0.0, 1.0])
        hi = tf.constant(2.0)
        y = tf.clip_by_value(t, lo, hi)
        g_lo, g_hi = tf.gradients(tf.reduce_sum(y), [lo, hi])
        out, glo, ghi = _run([y, g_lo, g_hi])
    np.testing.assert_array_equal(out, [[0.0, 1.0], [2.0, 1.5]])
    np.testing.assert_array_equal(glo, [1.0, 1.0])
    assert ghi == 1.0


def test_clip_by_value_rejects_bounds_that_would_broadcast_t():
    with tf.Graph().as_default():
        with pytest.raises(ValueError,
                           match=r"clip_by_value would broadcast Const:0 of shape \(3,\) to shape \(2, 3\)"):
            tf.clip_by_value(tf.constant([1.0, 2.0, 3.0]), tf.zeros([2, 3]), 1.0)


def test_clip_by_value_int_and_indexed_slices():
    with tf.Graph().as_default():
        s = tf.IndexedSlices(tf.constant([[-5.0, 0.5], [7.0, 0.0]]), tf.constant([3, 1]),
                             tf.constant([4, 2]))
        c = tf.clip_by_value(s, -1.0, 1.0)
        assert isinstance(c, tf.IndexedSlices) and c.indices is s.indices
        vals, ints = _run([c.values, tf.clip_by_value(tf.constant([-9, 3, 9]), 0, 5)])
    np.testing.assert_array_equal(vals, [[-1.0, 0.5], [1.0, 0.0]])
    np.testing.assert_array_equal(ints, [0, 3, 5])


# -- clip_by_norm --------------------------------------------------------------------------------
@pytest.mark.parametrize("axes", [None, 0, [1]])
def test_clip_by_norm_values(axes):
    np_axes = tuple(axes) if isinstance(axes, list) else axes
    norm = np.sqrt(np.sum(A * A, axis=np_axes, keepdims=True))
    expected = A * 2.5 / np.maximum(norm, 2.5)
    with tf.Graph().as_default():
        y = tf.clip_by_norm(tf.constant(A), 2.5, axes=axes)
        assert y.get_shape().as_list() == [2, 2]
        np.testing.assert_allclose(_run(y), expected, rtol=1e-6)


def test_clip_by_norm_leaves_small_tensors_alone_and_zero_stays_finite():
    with tf.Graph().as_default():
        small = tf.constant([0.3, 0.4])
        zero = tf.zeros([3])
        y0 = tf.clip_by_norm(zero, 1.0)
        g0, = tf.gradients(tf.reduce_sum(y0), [zero])
        out_small, out_zero, grad_zero = _run([tf.clip_by_norm(small, 1.0), y0, g0])
    np.testing.assert_allclose(out_small, [0.3, 0.4], rtol=1e-6)
    np.testing.assert_array_equal(out_zero, [0, 0, 0])
    np.testing.assert_array_equal(grad_zero, [1, 1, 1])


def test_clip_by_norm_gradient_matches_finite_differences():
    from zps.testing.gradient_checker import GradCase, check_gradients
    check_gradients(GradCase("Sqrt", lambda x: tf.clip_by_norm(x, 1.0), [np.array([0.6, -0.9, 1.2])]))


def test_clip_by_norm_indexed_slices():
    with tf.Graph().as_default():
        s = tf.IndexedSlices(tf.constant([[3.0, 4.0]]), tf.constant([2]), tf.constant([5, 2]))
        c = tf.clip_by_norm(s, 1.0)
        assert isinstance(c, tf.IndexedSlices) and c.indices is s.indices
        np.testing.assert_allclose(_run(c.values), [[0.6, 0.8]], rtol=1e-6)


# -- global_norm and clip_by_global_norm ---------------------------------------------------------
def test_global_norm():
    with tf.Graph().as_default():
        s = tf.IndexedSlices(tf.constant(B), tf.constant([0, 1, 2]))
        n = tf.global_norm([tf.constant(A), None, s], name="gn")
        assert n.op.name == "gn" and n.get_shape().as_list() == []
        out = _run(n)
    np.testing.assert_allclose(out, np.sqrt(np.sum(A * A) + np.sum(B * B)), rtol=1e-6)


def test_global_norm_errors():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="t_list should be a sequence"):
            tf.global_norm(tf.constant([1.0]))
        with pytest.raises(TypeError, match="t_list should be a sequence"):
            tf.clip_by_global_norm("abc", 1.0)


@pytest.mark.parametrize("clip_norm", [5.0, 1000.0])
def test_clip_by_global_norm_exact_values(clip_norm):
    expected, expected_norm = _tf1_clip_by_global_norm([A, B], clip_norm)
    with tf.Graph().as_default():
        clipped, norm = tf.clip_by_global_norm([tf.constant(A), None, tf.constant(B)], clip_norm)
        assert clipped[1] is None and len(clipped) == 3
        assert [c.get_shape().as_list() for c in (clipped[0], clipped[2])] == [[2, 2], [3]]
        a, b, n = _run([clipped[0], clipped[2], norm])
    assert n == expected_norm
    np.testing.assert_array_equal(a, expected[0])
    np.testing.assert_array_equal(b, expected[1])


def test_clip_by_global_norm_indexed_slices_and_use_norm():
    with tf.Graph().as_default():
        s = tf.IndexedSlices(tf.constant([[3.0, 4.0]]), tf.constant([1]), tf.constant([3, 2]))
        clipped, norm = tf.clip_by_global_norm([s, tf.constant([10.0])], 2.0, use_norm=20.0)
        assert isinstance(clipped[0], tf.IndexedSlices)
        assert clipped[0].indices is s.indices and clipped[0].dense_shape is s.dense_shape
        values, dense, n = _run([clipped[0].values, clipped[1], norm])
    assert n == 20.0
    np.testing.assert_allclose(values, [[0.3, 0.4]], rtol=1e-6)
    np.testing.assert_allclose(dense, [1.0], rtol=1e-6)


def test_clip_by_global_norm_of_non_finite_norm_is_nan():
    with tf.Graph().as_default():
        clipped, _ = tf.clip_by_global_norm([tf.constant([1.0, 2.0])], 1.0, use_norm=np.inf)
        with np.errstate(invalid="ignore"):  # inf - inf = NaN is how TF1 poisons the scale
            out = _run(clipped[0])
    assert np.isnan(out).all()


def test_clip_by_global_norm_of_zero_gradients_is_zero():
    with tf.Graph().as_default():
        clipped, norm = tf.clip_by_global_norm([tf.zeros([2]), tf.zeros([1])], 1.0)
        with np.errstate(divide="ignore"):  # 1 / 0 = inf is part of TF1's formula
            out = _run(clipped + [norm])
    np.testing.assert_array_equal(out[0], [0, 0])
    assert out[2] == 0.0


def test_clip_by_global_norm_gradient_flows_to_inputs():
    with tf.Graph().as_default():
        x = tf.constant([3.0, 4.0])
        clipped, _ = tf.clip_by_global_norm([x], 1.0)
        g, = tf.gradients(tf.reduce_sum(clipped[0]), [x])
        out = _run(g)
    # d/dx sum(x / |x|) = (1 - x * sum(x) / |x|^2) / |x|
    expected = (1 - np.array([3.0, 4.0]) * 7.0 / 25.0) / 5.0
    np.testing.assert_allclose(out, expected, rtol=1e-5)
