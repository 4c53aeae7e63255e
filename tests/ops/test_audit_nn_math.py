"""Regressions from an audit of the nn, conv, math, array, loss and image ops against TensorFlow
2.21 (tf.compat.v1, graph mode): each test pins what TensorFlow computed or raised for the same
graph (its numbers written in here; TensorFlow itself is never imported).
"""

import numpy as np
import pytest

import zps as tf
from zps.testing.gradient_checker import GradCase, check_gradients


def _run(fetches):
    with tf.Session() as sess:
        return sess.run(fetches)


def _close(actual, expected, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(actual, np.asarray(expected, np.float32), rtol=rtol, atol=atol)


# -- gradients at the kinks ----------------------------------------------------------------------
def test_selu_gradient_at_zero_is_scale():
    with tf.Graph().as_default():
        x = tf.constant([-1.0, 0.0, 1.0])
        g = tf.gradients(tf.nn.selu(x), x)[0]
        _close(_run(g), [0.6467685699462891, 1.0507010221481323, 1.0507010221481323])


def test_weighted_cross_entropy_values_and_gradient_at_zero():
    with tf.Graph().as_default():
        logits = tf.constant([0.0, 100.0, -100.0, 2.0])
        loss = tf.nn.weighted_cross_entropy_with_logits(
            labels=tf.constant([0.5, 1.0, 0.0, 0.3]), logits=logits, pos_weight=2.5)
        value, grad = _run([loss, tf.gradients(loss, logits)[0]])
    _close(value, [1.2130075693130493, 0.0, 0.0, 1.584045648574829])
    _close(grad, [0.5, 0.0, 0.0, 0.5271557569503784])   # 1 - z at logits 0, as TF1's


def test_einsum_of_everything_into_a_scalar_has_a_gradient():
    with tf.Graph().as_default():
        x = tf.constant(np.arange(6.0).reshape(2, 3))
        y = tf.einsum("ij->", x)
        value, grad = _run([y, tf.gradients(y, x)[0]])
    assert value == 15.0
    np.testing.assert_array_equal(grad, np.ones((2, 3)))


# -- reductions over nothing ---------------------------------------------------------------------
def test_reductions_over_empty_tensors():
    with tf.Graph().as_default():
        lse = [tf.reduce_logsumexp(tf.zeros([0])), tf.reduce_logsumexp(tf.zeros([2, 0]), 1)]
        mean = [tf.reduce_mean(tf.zeros([0], tf.int32)),
                tf.reduce_mean(tf.zeros([2, 0], tf.int32), 1)]
        (a, b), (c, d) = _run([lse, mean])
    assert a == -np.inf and b.tolist() == [-np.inf, -np.inf]
    assert c == 0 and d.tolist() == [0, 0] and d.dtype == np.int32


def test_a_full_reduction_of_unknown_rank_is_a_scalar():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32)
        assert tf.reduce_sum(x).get_shape().as_list() == []
        assert tf.reduce_sum(x, keepdims=True).get_shape().ndims is None
        loss = tf.losses.mean_squared_error(tf.ones([4, 3]), tf.zeros([4, 3]), weights=x)
        assert loss.get_shape().as_list() == []


# -- dtypes and errors ---------------------------------------------------------------------------
def test_string_zeros_are_empty_strings():
    with tf.Graph().as_default():
        a, b = _run([tf.zeros([2], tf.string), tf.zeros_like(tf.constant(["a"]))])
    assert a.tolist() == [b"", b""] and b.tolist() == [b""]


@pytest.mark.parametrize("build", [
    lambda: tf.concat([tf.ones([2]), tf.ones([2], tf.float64)], 0),
    lambda: tf.concat([tf.constant([1, 2]), tf.ones([2])], 0),
    lambda: tf.stack([tf.ones([2]), tf.ones([2], tf.float64)]),
], ids=["concat_f32_f64", "concat_i32_f32", "stack_f32_f64"])
def test_joining_mixed_dtypes_is_a_type_error(build):
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="don't all match"):
            build()


@pytest.mark.parametrize("build, error, message", [
    (lambda: tf.concat([tf.constant(1), tf.constant(2)], 0), ValueError, "concatenate scalars"),
    (lambda: tf.concat([], 0), ValueError, "at least one value"),
    (lambda: tf.broadcast_to(tf.ones([2, 3]), [3, 3]), ValueError, "Cannot broadcast"),
    (lambda: tf.fill([-1], 1.0), ValueError, "must be >= 0"),
    (lambda: tf.nn.avg_pool(tf.ones([1, 4, 4, 1], tf.int32), [1, 2, 2, 1], [1, 2, 2, 1], "SAME"),
     TypeError, "int32 not in list"),
    (lambda: tf.nn.softmax(tf.ones([2, 3]), axis=2), tf.errors.InvalidArgumentError, "range"),
    (lambda: tf.nn.log_softmax(tf.ones([2, 3]), axis=-3), tf.errors.InvalidArgumentError, "range"),
    (lambda: tf.nn.bias_add(tf.ones([2, 3]), tf.ones([3], tf.float64)), ValueError, "float64"),
    (lambda: tf.image.resize_bilinear(tf.ones([1, 2, 2, 1]), [3, 3], align_corners=True,
                                      half_pixel_centers=True),
     tf.errors.InvalidArgumentError, "align_corners must be False"),
], ids=["concat_scalars", "concat_nothing", "broadcast_to", "fill", "avg_pool_int",
        "softmax_axis", "log_softmax_axis", "bias_add_dtype", "resize_corners_and_centers"])
def test_errors_of_tf1s_type_when_the_graph_is_built(build, error, message):
    with tf.Graph().as_default():
        with pytest.raises(error, match=message):
            build()


# -- shapes --------------------------------------------------------------------------------------
def test_transpose_takes_negative_perm_entries():
    with tf.Graph().as_default():
        y = tf.transpose(tf.zeros([2, 3, 4]), [-1, 0, 1])
        assert y.get_shape().as_list() == [4, 2, 3] and _run(y).shape == (4, 2, 3)


def test_reshape_infers_minus_one_beside_a_zero_from_the_non_zero_dimensions():
    with tf.Graph().as_default():
        a = tf.reshape(tf.zeros([0, 3]), [0, -1])
        b = tf.reshape(tf.zeros([2, 0, 3]), [-1, 0])
        assert a.get_shape().as_list() == [0, None]   # as TF1: known at run time only
        assert [v.shape for v in _run([a, b])] == [(0, 3), (6, 0)]


def test_gradients_keep_static_shapes():
    with tf.Graph().as_default():
        x = tf.zeros([2, 3, 4])
        along_1 = tf.gradients(tf.gather(x, 1, axis=1), x)[0]
        rows = tf.gradients(tf.gather(x, [1, 1]), x)[0]
        sliced = tf.gradients(tf.slice(x, [1, 0, 1], [-1, 2, -1]), x)[0]
        crop = tf.gradients(tf.image.crop_to_bounding_box(x, 0, 1, 2, 2), x)[0]
        assert along_1.get_shape().as_list() == [2, 3, 4]
        assert rows.values.get_shape().as_list() == [2, 3, 4]
        assert sliced.get_shape().as_list() == [2, 3, 4]
        assert crop.get_shape().as_list() == [2, 3, 4]


def test_resize_preserving_aspect_ratio_has_a_static_shape():
    with tf.Graph().as_default():
        y = tf.image.resize_images(tf.zeros([2, 4, 6, 3]), [8, 8], preserve_aspect_ratio=True)
        assert y.get_shape().as_list() == [2, 5, 8, 3] and _run(y).shape == (2, 5, 8, 3)


# -- softmax cross-entropy broadcasts its labels -------------------------------------------------
def test_softmax_cross_entropy_broadcasts_one_row_of_labels():
    with tf.Graph().as_default():
        logits = tf.constant([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
        labels = tf.constant([[0.2, 0.8, 0.0]])
        loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
        g_labels = tf.gradients(loss, labels)[0]   # TF 2.21 fails here; the sum of the rows
        value, g = _run([loss, g_labels])
    _close(value, [1.6076059341430664, 2.9413113594055176])
    assert g.shape == (1, 3)


# -- gather with batch_dims ----------------------------------------------------------------------
X234 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def test_gather_with_batch_dims():
    with tf.Graph().as_default():
        x = tf.constant(X234)
        a = tf.gather(x, [[2, 0], [1, 1]], axis=1, batch_dims=1)
        b = tf.gather(x, [[3, 0, 1], [2, 2, 0]], axis=2, batch_dims=1)
        c = tf.gather(x, [[3, 0, 1], [2, 2, 0]], axis=-1, batch_dims=-1)
        g = tf.gradients(b * np.arange(1, 19, dtype=np.float32).reshape(2, 3, 3), x)[0]
        assert a.get_shape().as_list() == [2, 2, 4] and b.get_shape().as_list() == [2, 3, 3]
        a, b, c, g = _run([a, b, c, g])
    np.testing.assert_array_equal(a, [[[8, 9, 10, 11], [0, 1, 2, 3]],
                                      [[16, 17, 18, 19], [16, 17, 18, 19]]])
    expected_b = [[[3, 0, 1], [7, 4, 5], [11, 8, 9]], [[14, 14, 12], [18, 18, 16], [22, 22, 20]]]
    np.testing.assert_array_equal(b, expected_b)
    np.testing.assert_array_equal(c, expected_b)
    np.testing.assert_array_equal(g, [[[2, 3, 0, 1], [5, 6, 0, 4], [8, 9, 0, 7]],
                                      [[12, 0, 21, 0], [15, 0, 27, 0], [18, 0, 33, 0]]])


def test_gather_nd_with_batch_dims():
    with tf.Graph().as_default():
        x = tf.constant(X234)
        y = tf.gather_nd(x, [[[1, 3], [0, 0]], [[2, 1], [2, 1]]], batch_dims=1)
        g = tf.gradients(y * [[1.0, 2.0], [3.0, 4.0]], x)[0]
        assert y.get_shape().as_list() == [2, 2]
        y, g = _run([y, g])
    np.testing.assert_array_equal(y, [[7, 0], [21, 21]])
    expected = np.zeros((2, 3, 4))
    expected[0, 0, 0], expected[0, 1, 3], expected[1, 2, 1] = 2, 1, 7
    np.testing.assert_array_equal(g, expected)


def test_batch_gather_checks_its_indices():
    with tf.Graph().as_default():
        x = tf.constant(X234)
        with pytest.raises(ValueError, match="must equal indices.shape"):
            tf.gather(x, [[1], [2], [0]], axis=1, batch_dims=1)
        with pytest.raises(ValueError, match="less than or equal to axis"):
            tf.gather(x, [[1], [2]], axis=0, batch_dims=1)
        y = tf.gather(x, [[1, 3], [2, 2]], axis=1, batch_dims=1)   # 3 is past the 3 rows
        with pytest.raises(tf.errors.InvalidArgumentError):
            _run(y)


# -- image resizing ------------------------------------------------------------------------------
IMAGE = np.arange(12, dtype=np.float32).reshape(1, 3, 4, 1)
GRAD_WEIGHTS = np.arange(1, 16, dtype=np.float32).reshape(1, 5, 3, 1)


def _resized(fn, **kwargs):
    with tf.Graph().as_default():
        x = tf.constant(IMAGE)
        y = fn(x, [5, 3], **kwargs)
        return [v[0, :, :, 0] for v in _run([y, tf.gradients(y * GRAD_WEIGHTS, x)[0]])]


def test_resize_bilinear_with_half_pixel_centers():
    value, grad = _resized(tf.image.resize_bilinear, half_pixel_centers=True)
    _close(value, [[0.1666666865348816, 1.5, 2.8333334922790527],
                   [1.7666666507720947, 3.1000001430511475, 4.433333396911621],
                   [4.166666507720947, 5.5, 6.833333492279053],
                   [6.566667556762695, 7.90000057220459, 9.2333345413208],
                   [8.166666984558105, 9.5, 10.833333969116211]])
    _close(grad, [[2.8333332538604736, 3.066666603088379, 3.599998950958252, 5.500000953674316],
                  [10.499998092651367, 9.299999237060547, 9.899996757507324, 13.500000953674316],
                  [15.833333969116211, 13.466668128967285, 13.999998092651367, 18.5000057220459]],
           rtol=1e-5, atol=5e-5)


def test_resize_nearest_neighbor_with_half_pixel_centers():
    value, grad = _resized(tf.image.resize_nearest_neighbor, half_pixel_centers=True)
    np.testing.assert_array_equal(value, [[0, 2, 3], [0, 2, 3], [4, 6, 7], [8, 10, 11],
                                          [8, 10, 11]])
    np.testing.assert_array_equal(grad, [[5, 0, 7, 9], [7, 0, 8, 9], [23, 0, 25, 27]])


@pytest.mark.parametrize("method, align_corners, size, expected", [
    ("BICUBIC", False, [2, 6], [[0.0, 0.5744267702102661, 1.3700991868972778, 2.0,
                                 2.7410120964050293, 3.1111109256744385],
                                [6.375, 6.949426651000977, 7.74509859085083, 8.375,
                                 9.116012573242188, 9.486111640930176]]),
    ("BICUBIC", True, [2, 6], [[0.0, 0.503601610660553, 1.248199224472046, 1.751800775527954,
                                2.4963982105255127, 3.0],
                               [8.0, 8.50360107421875, 9.248199462890625, 9.751800537109375,
                                10.496397972106934, 11.0]]),
    ("AREA", False, [2, 3], [[1.5833334922790527, 2.8333334922790527, 4.0833330154418945],
                             [6.9166669845581055, 8.166666984558105, 9.416666030883789]]),
    ("AREA", True, [2, 3], [[2.3333334922790527, 3.6666667461395264, 5.0],
                            [8.333333969116211, 9.666666984558105, 11.0]]),
])
def test_resize_images_bicubic_and_area(method, align_corners, size, expected):
    with tf.Graph().as_default():
        y = tf.image.resize_images(IMAGE, size, getattr(tf.image.ResizeMethod, method),
                                   align_corners=align_corners)
        by_name = tf.image.resize_images(IMAGE, size, method.lower(), align_corners=align_corners)
        a, b = _run([y, by_name])
    _close(a[0, :, :, 0], expected)
    np.testing.assert_array_equal(a, b)


# -- tf.nn.convolution ---------------------------------------------------------------------------
def test_convolution_dispatches_with_strides_and_dilation_rate():
    with tf.Graph().as_default():
        x = tf.constant(np.arange(50, dtype=np.float32).reshape(1, 5, 5, 2) / 10)
        w = tf.constant(np.arange(36, dtype=np.float32).reshape(3, 3, 2, 2) / 10 - 1)
        dilated = tf.nn.convolution(x, w, "VALID", dilation_rate=[2, 2])
        strided = tf.nn.convolution(x, w, "SAME", strides=[2, 2])
        a, b = _run([dilated, strided])
        with pytest.raises(ValueError, match="in conjunction with dilation_rate"):
            tf.nn.convolution(x, w, "SAME", strides=[2, 2], dilation_rate=[2, 2])
    _close(a[0], [[[61.68000411987305, 66.09000396728516]]], rtol=1e-5, atol=1e-4)
    _close(b[0, :, :, 0], [[10.40000057220459, 19.1200008392334, 13.600000381469727],
                           [33.12000274658203, 46.31999969482422, 26.400001525878906],
                           [11.360000610351562, 9.039999961853027, -0.8000009059906006]],
           rtol=1e-5, atol=1e-4)


# Finite differences of the half-pixel resizes and of a batch gather (float32 kernels: a large
# step is exact enough for these linear maps).
_F32 = dict(dtype=np.float32, delta=1e-2, rtol=1e-3, atol=1e-3)
R = np.random.default_rng(5)
GRAD_CASES = [
    GradCase("ResizeBilinear",
             lambda x: tf.image.resize_bilinear(x, [5, 7], half_pixel_centers=True),
             [R.standard_normal((1, 3, 4, 2))], name="ResizeBilinear_half_pixel_centers", **_F32),
    GradCase("ResizeNearestNeighbor",
             lambda x: tf.image.resize_nearest_neighbor(x, [2, 3], half_pixel_centers=True),
             [R.standard_normal((1, 5, 4, 2))], name="ResizeNearestNeighbor_half_pixel_centers"),
    GradCase("GatherNd", lambda x: tf.gather(x, [[2, 0], [1, 1]], axis=1, batch_dims=1),
             [R.standard_normal((2, 3, 4))], name="gather_batch_dims"),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient(case):
    check_gradients(case)
