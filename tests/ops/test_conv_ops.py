"""Convolution and pooling: values against loop-based numpy references and TensorFlow's,
gradients, shapes, errors."""

import importlib.util
import pathlib

import numpy as np
import pytest

import zps as tf
from zps.testing.gradient_checker import GradCase, check_gradients

R = np.random.default_rng(7)


def _r(*shape):
    return R.standard_normal(shape)


def _distinct(*shape):
    """Values at least 0.1 apart, so max-pool windows have no ties (even under finite differences)."""
    return R.permutation(int(np.prod(shape))).reshape(shape) * 0.1


# -- loop-based references (TF1's padding rules, re-derived here on purpose) ---------------------
def _geometry(size, k, stride, padding, dilation=1):
    """(output size, pad before) along one dimension."""
    eff = (k - 1) * dilation + 1
    if padding == "VALID":
        return (size - eff) // stride + 1, 0
    out = -(-size // stride)
    return out, max((out - 1) * stride + eff - size, 0) // 2


def _ref_conv2d(x, w, strides, padding, dilations=(1, 1)):
    n, h, wd, _ = x.shape
    kh, kw, _, co = w.shape
    oh, top = _geometry(h, kh, strides[0], padding, dilations[0])
    ow, left = _geometry(wd, kw, strides[1], padding, dilations[1])
    out = np.zeros((n, oh, ow, co))
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for di in range(kh):
                    for dj in range(kw):
                        r = i * strides[0] + di * dilations[0] - top
                        c = j * strides[1] + dj * dilations[1] - left
                        if 0 <= r < h and 0 <= c < wd:
                            out[b, i, j] += x[b, r, c] @ w[di, dj]
    return out


def _ref_pool(x, ksize, strides, padding, reduce):
    n, h, wd, ch = x.shape
    oh, top = _geometry(h, ksize[0], strides[0], padding)
    ow, left = _geometry(wd, ksize[1], strides[1], padding)
    out = np.zeros((n, oh, ow, ch))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * strides[0] - top, j * strides[1] - left
            window = x[:, max(r0, 0):r0 + ksize[0], max(c0, 0):c0 + ksize[1]]
            out[:, i, j] = reduce(window.reshape(n, -1, ch), axis=1)
    return out


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


# -- forward values ------------------------------------------------------------------------------
CONV_CASES = [  # input shape, filter shape, strides (h, w), padding
    ((2, 5, 5, 3), (3, 3, 3, 4), (1, 1), "SAME"),
    ((2, 5, 5, 3), (3, 3, 3, 4), (1, 1), "VALID"),
    ((1, 6, 7, 2), (3, 2, 2, 3), (2, 2), "SAME"),
    ((1, 6, 7, 2), (3, 2, 2, 3), (2, 2), "VALID"),
    ((2, 7, 6, 1), (2, 2, 1, 2), (2, 1), "SAME"),
    ((1, 4, 4, 2), (4, 4, 2, 1), (2, 2), "SAME"),
    ((1, 8, 8, 2), (1, 1, 2, 3), (2, 2), "VALID"),
]


@pytest.mark.parametrize("xs, ws, strides, padding", CONV_CASES)
def test_conv2d_matches_reference(xs, ws, strides, padding):
    x, w = _r(*xs).astype(np.float32), _r(*ws).astype(np.float32)
    with tf.Graph().as_default():
        y = tf.nn.conv2d(x, w, strides=[1, *strides, 1], padding=padding)
        out = _run(y)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, _ref_conv2d(x, w, strides, padding), rtol=1e-5, atol=1e-5)
    assert list(out.shape) == y.get_shape().as_list()


def test_conv2d_same_puts_the_odd_padding_pixel_after():
    # 4x4 input, 2x2 filter, stride 1: one padding row/column in total, after (TF1's rule).
    x = np.arange(16.0).reshape(1, 4, 4, 1)
    with tf.Graph().as_default():
        out = _run(tf.nn.conv2d(x, np.ones((2, 2, 1, 1)), [1, 1, 1, 1], "SAME"))[0, :, :, 0]
    assert out[0, 0] == 0 + 1 + 4 + 5
    assert out[3, 3] == 15
    assert out[3, 0] == 12 + 13


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_conv2d_dilations(padding):
    x, w = _r(1, 7, 6, 2), _r(2, 3, 2, 2)
    with tf.Graph().as_default():
        out = _run(tf.nn.conv2d(x, w, [1, 1, 1, 1], padding, dilations=[1, 2, 2, 1]))
    np.testing.assert_allclose(out, _ref_conv2d(x, w, (1, 1), padding, (2, 2)), atol=1e-12)


def test_conv2d_nchw_and_int_strides():
    x, w = _r(2, 3, 6, 5), _r(3, 3, 3, 2)
    nhwc = x.transpose(0, 2, 3, 1)
    with tf.Graph().as_default():
        y = tf.nn.conv2d(x, w, strides=2, padding="SAME", data_format="NCHW")
        assert y.get_shape().as_list() == [2, 2, 3, 3]
        out = _run(y)
    np.testing.assert_allclose(out, _ref_conv2d(nhwc, w, (2, 2), "SAME").transpose(0, 3, 1, 2),
                               atol=1e-12)


def test_conv2d_explicit_padding():
    x, w = _r(1, 4, 5, 2), _r(3, 2, 2, 1)
    padded = np.pad(x, ((0, 0), (2, 0), (1, 3), (0, 0)))
    with tf.Graph().as_default():
        y = tf.nn.conv2d(x, w, [1, 1, 2, 1], padding=[[0, 0], [2, 0], [1, 3], [0, 0]])
        assert y.get_shape().as_list() == [1, 4, 4, 1]
        out = _run(y)
    np.testing.assert_allclose(out, _ref_conv2d(padded, w, (1, 2), "VALID"), atol=1e-12)


def test_conv2d_large_batch_is_chunked_with_the_same_result(monkeypatch):
    from zps.ops import conv_ops
    monkeypatch.setattr(conv_ops, "_IM2COL_CHUNK_BYTES", 1000)
    x, w = _r(5, 6, 6, 2), _r(3, 3, 2, 3)
    dy = _r(5, 3, 3, 3)
    with tf.Graph().as_default():
        out, dx, dw = _run([tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME"),
                            tf.nn.conv2d_backprop_input([5, 6, 6, 2], w, dy, [1, 2, 2, 1], "SAME"),
                            tf.nn.conv2d_backprop_filter(x, [3, 3, 2, 3], dy, [1, 2, 2, 1], "SAME")])
    np.testing.assert_allclose(out, _ref_conv2d(x, w, (2, 2), "SAME"), atol=1e-12)
    # The backprop ops are the adjoints of conv2d: <conv(x, w), dy> = <x, dx> = <w, dw>.
    np.testing.assert_allclose(np.sum(out * dy), np.sum(x * dx))
    np.testing.assert_allclose(np.sum(out * dy), np.sum(w * dw))


def test_conv2d_transpose_is_the_adjoint_of_conv2d():
    x, w, y = _r(2, 5, 4, 3), _r(3, 3, 3, 2), _r(2, 3, 2, 2)
    with tf.Graph().as_default():
        t = tf.nn.conv2d_transpose(y, w, output_shape=[2, 5, 4, 3], strides=[1, 2, 2, 1])
        assert t.get_shape().as_list() == [2, 5, 4, 3]
        conv_x, t_y = _run([tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME"), t])
    np.testing.assert_allclose(np.sum(conv_x * y), np.sum(x * t_y))


POOL_CASES = [  # input shape, ksize (h, w), strides (h, w), padding
    ((2, 4, 4, 3), (2, 2), (2, 2), "VALID"),
    ((2, 5, 5, 3), (2, 2), (2, 2), "SAME"),
    ((1, 5, 6, 2), (3, 3), (2, 2), "SAME"),
    ((1, 5, 6, 2), (3, 3), (1, 1), "SAME"),
    ((1, 7, 5, 1), (3, 2), (2, 1), "VALID"),
]


@pytest.mark.parametrize("xs, ksize, strides, padding", POOL_CASES)
def test_pooling_matches_reference(xs, ksize, strides, padding):
    x = _r(*xs).astype(np.float32)
    with tf.Graph().as_default():
        mx = tf.nn.max_pool(x, [1, *ksize, 1], [1, *strides, 1], padding)
        av = tf.nn.avg_pool(x, [1, *ksize, 1], [1, *strides, 1], padding)
        mx_out, av_out = _run([mx, av])
    assert mx_out.dtype == av_out.dtype == np.float32
    np.testing.assert_array_equal(mx_out, _ref_pool(x, ksize, strides, padding, np.max))
    np.testing.assert_allclose(av_out, _ref_pool(x, ksize, strides, padding, np.mean), rtol=1e-6)
    assert list(mx_out.shape) == mx.get_shape().as_list() == av.get_shape().as_list()


def test_avg_pool_same_divides_by_the_real_pixels_only():
    with tf.Graph().as_default():
        out = _run(tf.nn.avg_pool(np.ones((1, 3, 3, 1)), [1, 3, 3, 1], [1, 1, 1, 1], "SAME"))
    np.testing.assert_array_equal(out, np.ones((1, 3, 3, 1)))


def test_pooling_nchw():
    x = _r(2, 3, 5, 4)
    nhwc = x.transpose(0, 2, 3, 1)
    with tf.Graph().as_default():
        mx = tf.nn.max_pool(x, [1, 1, 2, 2], [1, 1, 2, 2], "SAME", data_format="NCHW")
        av = tf.nn.avg_pool2d(x, 3, 2, "SAME", data_format="NCHW")
        assert mx.get_shape().as_list() == [2, 3, 3, 2]
        mx_out, av_out = _run([mx, av])
    np.testing.assert_array_equal(mx_out, _ref_pool(nhwc, (2, 2), (2, 2), "SAME", np.max)
                                  .transpose(0, 3, 1, 2))
    np.testing.assert_allclose(av_out, _ref_pool(nhwc, (3, 3), (2, 2), "SAME", np.mean)
                               .transpose(0, 3, 1, 2))


def test_max_pool_gradient_goes_to_the_first_maximum_of_a_window():
    x = np.array([[1.0, 3.0, 3.0],
                  [3.0, 2.0, 3.0],
                  [0.0, 3.0, 1.0]]).reshape(1, 3, 3, 1)
    with tf.Graph().as_default():
        xt = tf.constant(x)
        y = tf.nn.max_pool(xt, [1, 2, 2, 1], [1, 1, 1, 1], "VALID")
        dx, = tf.gradients(y, [xt])
        out = _run(dx)[0, :, :, 0]
    # Windows at (0,0), (0,1), (1,0), (1,1): first maxima at (0,1), (0,1), (1,0), (1,2).
    np.testing.assert_array_equal(out, [[0, 2, 0], [1, 0, 1], [0, 0, 0]])


# -- gradients -----------------------------------------------------------------------------------
def _mp(x, padding="SAME", data_format="NHWC"):
    k = [1, 3, 3, 1] if data_format == "NHWC" else [1, 1, 3, 3]
    s = [1, 2, 2, 1] if data_format == "NHWC" else [1, 1, 2, 2]
    return tf.nn.max_pool(x, k, s, padding, data_format=data_format)


def _ap(x, padding="SAME"):
    return tf.nn.avg_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], padding)


GRAD_CASES = [
    GradCase("Conv2D", lambda x, w: tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"),
             [_r(2, 4, 5, 2), _r(3, 3, 2, 3)], name="Conv2D_same"),
    GradCase("Conv2D", lambda x, w: tf.nn.conv2d(x, w, [1, 2, 2, 1], "VALID"),
             [_r(1, 5, 6, 2), _r(2, 3, 2, 2)], name="Conv2D_valid_stride2"),
    GradCase("Conv2D", lambda x, w: tf.nn.conv2d(x, w, [1, 1, 2, 2], "SAME", data_format="NCHW"),
             [_r(1, 2, 5, 4), _r(3, 2, 2, 2)], name="Conv2D_nchw"),
    GradCase("Conv2D", lambda x, w: tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", dilations=[1, 2, 2, 1]),
             [_r(1, 5, 5, 1), _r(2, 2, 1, 2)], name="Conv2D_dilated"),
    GradCase("Conv2D", lambda x, w: tf.nn.conv2d(x, w, 1, [[0, 0], [1, 0], [0, 2], [0, 0]]),
             [_r(1, 3, 3, 1), _r(2, 2, 1, 2)], name="Conv2D_explicit"),
    GradCase("Conv2DBackpropInput",
             lambda w, dy: tf.nn.conv2d_backprop_input([1, 5, 5, 2], w, dy, [1, 2, 2, 1], "SAME"),
             [_r(3, 3, 2, 3), _r(1, 3, 3, 3)]),
    GradCase("Conv2DBackpropFilter",
             lambda x, dy: tf.nn.conv2d_backprop_filter(x, [3, 3, 2, 3], dy, [1, 2, 2, 1], "SAME"),
             [_r(1, 5, 5, 2), _r(1, 3, 3, 3)]),
    GradCase("MaxPool", _mp, [_distinct(2, 5, 5, 2)], name="MaxPool_same"),
    GradCase("MaxPool", lambda x: _mp(x, "VALID", "NCHW"), [_distinct(1, 2, 6, 5)],
             name="MaxPool_valid_nchw"),
    GradCase("MaxPoolGrad", lambda x, g: tf.gradients(_mp(x), [x], grad_ys=[g])[0],
             [_distinct(1, 5, 4, 2), _r(1, 3, 2, 2)]),
    GradCase("MaxPoolGradGrad",
             lambda x, g: tf.gradients(tf.reduce_sum(tf.square(tf.gradients(_mp(x), [x],
                                                                             grad_ys=[g])[0])),
                                       [g])[0],
             [_distinct(1, 5, 4, 2), _r(1, 3, 2, 2)]),
    GradCase("AvgPool", _ap, [_r(2, 5, 5, 2)], name="AvgPool_same"),
    GradCase("AvgPool", lambda x: _ap(x, "VALID"), [_r(1, 6, 5, 2)], name="AvgPool_valid"),
    GradCase("AvgPoolGrad", lambda x, g: tf.gradients(_ap(x), [x], grad_ys=[g])[0],
             [_r(1, 5, 4, 2), _r(1, 3, 2, 2)], wrt=[1]),
    GradCase("Conv3D", lambda x, w: tf.nn.conv3d(x, w, [1, 2, 1, 2, 1], "SAME"),
             [_r(1, 3, 2, 3, 2), _r(2, 2, 2, 2, 2)]),
    GradCase("Conv3D", lambda x, w: tf.nn.conv3d(x, w, 1, "VALID", data_format="NCDHW"),
             [_r(1, 2, 3, 2, 3), _r(2, 1, 2, 2, 1)], name="Conv3D_ncdhw"),
    GradCase("Conv3DBackpropInputV2",
             lambda w, dy: tf.nn.conv3d_transpose(dy, w, [1, 3, 3, 2, 2], [1, 2, 2, 1, 1]),
             [_r(2, 2, 2, 2, 2), _r(1, 2, 2, 2, 2)]),
    GradCase("Conv3DBackpropFilterV2",
             lambda x, dy: tf.nn.conv3d_backprop_filter_v2(x, [2, 2, 1, 2, 2], dy,
                                                           [1, 2, 2, 1, 1], "SAME"),
             [_r(1, 3, 3, 2, 2), _r(1, 2, 2, 2, 2)]),
    GradCase("DepthwiseConv2dNative",
             lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME"),
             [_r(1, 4, 5, 2), _r(3, 2, 2, 2)], name="DepthwiseConv2dNative_same"),
    GradCase("DepthwiseConv2dNative",
             lambda x, w: tf.nn.depthwise_conv2d_native(x, w, 1, "VALID", data_format="NCHW",
                                                        dilations=[1, 1, 2, 1]),
             [_r(1, 2, 4, 4), _r(2, 2, 2, 1)], name="DepthwiseConv2dNative_nchw_dilated"),
    GradCase("DepthwiseConv2dNativeBackpropInput",
             lambda w, dy: tf.nn.depthwise_conv2d_native_backprop_input(
                 [1, 4, 4, 2], w, dy, [1, 2, 2, 1], "SAME"),
             [_r(3, 3, 2, 2), _r(1, 2, 2, 4)]),
    GradCase("DepthwiseConv2dNativeBackpropFilter",
             lambda x, dy: tf.nn.depthwise_conv2d_native_backprop_filter(
                 x, [3, 3, 2, 2], dy, [1, 2, 2, 1], "SAME"),
             [_r(1, 4, 4, 2), _r(1, 2, 2, 4)]),
    GradCase("MaxPool3D", lambda x: tf.nn.max_pool3d(x, 2, [1, 1, 2, 2, 1], "SAME"),
             [_distinct(1, 2, 3, 3, 2)]),
    GradCase("MaxPool3DGrad",
             lambda x, g: tf.gradients(tf.nn.max_pool3d(x, 2, 2, "SAME"), [x], grad_ys=[g])[0],
             [_distinct(1, 3, 3, 2, 1), _r(1, 2, 2, 1, 1)]),
    GradCase("MaxPool3DGradGrad",
             lambda x, g: tf.gradients(tf.reduce_sum(tf.square(tf.gradients(
                 tf.nn.max_pool3d(x, 2, 2, "SAME"), [x], grad_ys=[g])[0])), [g])[0],
             [_distinct(1, 3, 3, 2, 1), _r(1, 2, 2, 1, 1)]),
    GradCase("AvgPool3D", lambda x: tf.nn.avg_pool3d(x, [1, 2, 3, 2, 1], 2, "SAME"),
             [_r(1, 3, 4, 3, 2)]),
    # input values 0.1 apart and filter values 0.01 apart (8 of them): no two sums tie
    GradCase("Dilation2D", lambda x, f: tf.nn.dilation2d(x, f, [1, 2, 1, 1], [1, 1, 2, 1], "SAME"),
             [_distinct(1, 4, 5, 2), R.permutation(8).reshape(2, 2, 2) * 0.01]),
    GradCase("AvgPool3DGrad",
             lambda x, g: tf.gradients(tf.nn.avg_pool3d(x, 2, 2, "SAME"), [x], grad_ys=[g])[0],
             [_r(1, 3, 3, 2, 1), _r(1, 2, 2, 1, 1)], wrt=[1]),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient(case):
    check_gradients(case)


def test_gradients_with_unknown_batch_size():
    x_val, w_val = _r(3, 6, 6, 2).astype(np.float32), _r(3, 3, 2, 4).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 6, 6, 2])
        w = tf.constant(w_val)
        h = tf.nn.avg_pool(tf.nn.max_pool(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"),
                                          [1, 2, 2, 1], [1, 2, 2, 1], "VALID"),
                           [1, 2, 2, 1], [1, 1, 1, 1], "SAME")
        assert h.get_shape().as_list() == [None, 3, 3, 4]
        dx, dw = tf.gradients(tf.reduce_sum(h), [x, w])
        assert dx.get_shape().as_list() == [None, 6, 6, 2]
        assert dw.get_shape().as_list() == [3, 3, 2, 4]
        dx_val, dw_val = _run([dx, dw], {x: x_val})
    assert dx_val.shape == x_val.shape and dw_val.shape == w_val.shape


# -- static shapes -------------------------------------------------------------------------------
def test_static_shapes_with_unknown_dims():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, None, 9, 3])
        assert tf.nn.conv2d(x, tf.zeros([3, 3, 3, 8]), [1, 2, 2, 1], "SAME").get_shape().as_list() \
            == [None, None, 5, 8]
        assert tf.nn.conv2d(x, tf.zeros([3, 3, 3, 8]), [1, 2, 2, 1], "VALID").get_shape().as_list() \
            == [None, None, 4, 8]
        assert tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID").get_shape().as_list() \
            == [None, None, 4, 3]
        unknown = tf.placeholder(tf.float32)
        assert tf.nn.conv2d(unknown, tf.zeros([3, 3, 3, 8]), [1, 1, 1, 1], "SAME") \
            .get_shape().as_list() == [None, None, None, 8]
        assert tf.nn.avg_pool(unknown, [1, 2, 2, 1], [1, 2, 2, 1], "SAME").get_shape().ndims == 4
        nchw = tf.placeholder(tf.float32, [4, 3, 10, 7])
        assert tf.nn.conv2d(nchw, tf.zeros([3, 2, 3, 6]), [1, 1, 3, 2], "VALID", data_format="NCHW") \
            .get_shape().as_list() == [4, 6, 3, 3]


def test_kernel_checks_shapes_unknown_when_the_graph_was_built():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32)
        y = tf.nn.conv2d(x, tf.zeros([3, 3, 2, 1]), [1, 1, 1, 1], "VALID")
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"in_channels \(2\)"):
                sess.run(y, {x: np.zeros((1, 4, 4, 3), np.float32)})
            with pytest.raises(tf.errors.InvalidArgumentError, match="subtracting 3 from 2"):
                sess.run(y, {x: np.zeros((1, 2, 4, 2), np.float32)})


# -- errors --------------------------------------------------------------------------------------
def test_rank_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"rank 4 but is rank 3 for Conv2D .*input"):
            tf.nn.conv2d(tf.zeros([5, 5, 1]), tf.zeros([3, 3, 1, 1]), [1, 1, 1, 1], "SAME")
        with pytest.raises(ValueError, match=r"rank 4 but is rank 2 for Conv2D .*filter"):
            tf.nn.conv2d(tf.zeros([1, 5, 5, 1]), tf.zeros([3, 3]), [1, 1, 1, 1], "SAME")
        with pytest.raises(ValueError, match="rank 4 but is rank 2 for MaxPool"):
            tf.nn.max_pool(tf.zeros([5, 5]), [1, 2, 2, 1], [1, 2, 2, 1], "SAME")


def test_channel_mismatch_names_both_shapes():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"Depth of input \(3\).*in_channels \(2\).*"
                                             r"\(1, 5, 5, 3\).*\(3, 3, 2, 4\)"):
            tf.nn.conv2d(tf.zeros([1, 5, 5, 3]), tf.zeros([3, 3, 2, 4]), [1, 1, 1, 1], "SAME")


def test_bad_padding_strides_and_data_format():
    x, w = np.zeros((1, 5, 5, 1), np.float32), np.zeros((3, 3, 1, 1), np.float32)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="padding must be 'SAME' or 'VALID'.*'FULL'"):
            tf.nn.conv2d(x, w, [1, 1, 1, 1], "FULL")
        with pytest.raises(ValueError, match="MaxPool: padding must be 'SAME' or 'VALID', got"):
            tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], [[0, 0], [1, 1], [1, 1], [0, 0]])
        with pytest.raises(ValueError, match=r"strides must be 1 in the batch and channel.*\[2, 1, 1, 1\]"):
            tf.nn.conv2d(x, w, [2, 1, 1, 1], "SAME")
        with pytest.raises(ValueError, match=r"AvgPool: ksize must be 1 in the batch and channel"):
            tf.nn.avg_pool(x, [1, 2, 2, 2], [1, 1, 1, 1], "SAME")
        with pytest.raises(ValueError, match="strides must be an int or a list of 1, 2 or 4 ints"):
            tf.nn.conv2d(x, w, [1, 1, 1], "SAME")
        with pytest.raises(ValueError, match="strides must be given"):
            tf.nn.conv2d(x, w, padding="SAME")
        with pytest.raises(ValueError, match="data_format must be 'NHWC' or 'NCHW', got 'NWHC'"):
            tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", data_format="NWHC")
        with pytest.raises(ValueError, match="explicit padding must be \\[0, 0\\] in the batch"):
            tf.nn.conv2d(x, w, 1, [[1, 0], [1, 1], [1, 1], [0, 0]])


def test_window_larger_than_valid_input():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"subtracting 5 from 4: .* for Conv2D 'Conv2D'"):
            tf.nn.conv2d(tf.zeros([1, 4, 8, 1]), tf.zeros([5, 5, 1, 1]), [1, 1, 1, 1], "VALID")
        with pytest.raises(ValueError, match="subtracting 3 from 2: .* for AvgPool"):
            tf.nn.avg_pool(tf.zeros([1, 2, 2, 1]), [1, 3, 3, 1], [1, 1, 1, 1], "VALID")


def test_backprop_shape_mismatches():
    with tf.Graph().as_default():
        w, dy = tf.zeros([3, 3, 2, 4]), tf.zeros([1, 3, 3, 4])
        with pytest.raises(ValueError, match=r"computed output height and out_backprop's height "
                                             r"must match for Conv2DBackpropInput .* 4 and 3"):
            tf.nn.conv2d_transpose(dy, w, [1, 8, 6, 2], [1, 2, 2, 1])
        with pytest.raises(ValueError, match="input depth and the filter's in_channels must match"):
            tf.nn.conv2d_transpose(dy, w, [1, 6, 6, 3], [1, 2, 2, 1])
        with pytest.raises(ValueError, match="filter's out_channels and the out_backprop depth"):
            tf.nn.conv2d_backprop_filter(tf.zeros([1, 6, 6, 2]), [3, 3, 2, 5], dy, [1, 2, 2, 1], "SAME")
        x = tf.placeholder(tf.float32, [1, None, None, 2])
        dy_any = tf.placeholder(tf.float32)
        dx = tf.nn.conv2d_backprop_input(tf.shape(x), w, dy_any, [1, 2, 2, 1], "SAME")
        assert dx.get_shape().as_list() == [1, None, None, 2]
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"out_backprop has shape "
                                                                     r"\(1, 2, 2, 4\)"):
                sess.run(dx, {x: np.zeros((1, 6, 6, 2)), dy_any: np.zeros((1, 2, 2, 4))})


def test_dtype_mismatch_and_filter_arguments():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="Input .filter. of .Conv2D. Op has type float64 .* type float32"):
            tf.nn.conv2d(tf.zeros([1, 4, 4, 1]), tf.zeros([2, 2, 1, 1], tf.float64), 1, "SAME")
        with pytest.raises(ValueError, match="exactly one of filter and filters"):
            tf.nn.conv2d(tf.zeros([1, 4, 4, 1]), strides=1, padding="SAME")
        y = tf.nn.conv2d(tf.zeros([1, 4, 4, 1]), filters=tf.zeros([2, 2, 1, 1]), strides=1,
                         padding="SAME")
        assert y.get_shape().as_list() == [1, 4, 4, 1]


# -- 1-D, 3-D, depthwise, separable and atrous convolutions, 1-D and 3-D pooling ----------------
# tests/fixtures/tf_conv/expected.npz: what TensorFlow 2.21 computed for nn_programs() of
# tests/fixtures/tf_conv/make.py (outputs and the gradients of a weighted sum of each).
def _tf_conv_fixture():
    path = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "tf_conv" / "make.py"
    spec = importlib.util.spec_from_file_location("make_tf_conv", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, np.load(path.parent / "expected.npz")


TF_CONV, TF_CONV_VALUES = _tf_conv_fixture()
with tf.Graph().as_default():
    _NN_PROGRAMS = sorted(TF_CONV.nn_programs(tf))


@pytest.mark.parametrize("name", _NN_PROGRAMS)
def test_convolutions_and_pooling_match_tensorflow(name):
    with tf.Graph().as_default():
        y, inputs = TF_CONV.nn_programs(tf)[name]
        direction = tf.constant(TF_CONV._r(99, *y.get_shape().as_list()))
        values = _run([y] + tf.gradients(tf.reduce_sum(y * direction), inputs))
    for i, got in enumerate(values):
        expected = TF_CONV_VALUES["nn/%s/%d" % (name, i)]
        assert got.shape == expected.shape, (name, i)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, err_msg="%s %d" % (name, i))


def test_channels_first_3d_and_1d_match_channels_last():
    x, w = _r(1, 4, 5, 3, 2), _r(2, 2, 3, 2, 3)
    to_first = (0, 4, 1, 2, 3)
    with tf.Graph().as_default():
        last = [tf.nn.conv3d(x, w, [1, 2, 1, 2, 1], "SAME"),
                tf.nn.max_pool3d(x, 2, [1, 1, 2, 1, 1], "SAME"),
                tf.nn.avg_pool3d(x, 3, 1, "SAME"),
                tf.nn.conv1d(x[0, 0], w[0, 0], 1, "SAME")]
        first = [tf.nn.conv3d(x.transpose(to_first), w, [1, 1, 2, 1, 2], "SAME",
                              data_format="NCDHW"),
                 tf.nn.max_pool3d(x.transpose(to_first), 2, [1, 1, 1, 2, 1], "SAME",
                                  data_format="NCDHW"),
                 tf.nn.avg_pool3d(x.transpose(to_first), 3, 1, "SAME", data_format="NCDHW"),
                 tf.nn.conv1d(x[0, 0].transpose(0, 2, 1), w[0, 0], 1, "SAME", data_format="NCW")]
        assert first[0].get_shape().as_list() == [1, 3, 2, 5, 2]
        last_v, first_v = _run([last, first])
    for a, b in zip(last_v[:3], first_v[:3]):
        np.testing.assert_allclose(b, a.transpose(to_first), atol=1e-12)
    np.testing.assert_allclose(first_v[3], last_v[3].transpose(0, 2, 1), atol=1e-12)


def test_depthwise_output_channel_order_and_shapes():
    # Output channel c * multiplier + m is input channel c filtered by filter m.
    x = _r(1, 4, 4, 2)
    w = _r(3, 3, 2, 3)
    with tf.Graph().as_default():
        y = tf.nn.depthwise_conv2d_native(x, w, [1, 1, 1, 1], "SAME")
        assert y.get_shape().as_list() == [1, 4, 4, 6]
        nchw = tf.nn.depthwise_conv2d_native(x.transpose(0, 3, 1, 2), w, [1, 1, 1, 1], "SAME",
                                             data_format="NCHW")
        out, out_nchw = _run([y, nchw])
    for c in range(2):
        for m in range(3):
            ref = _ref_conv2d(x[..., c:c + 1], w[:, :, c:c + 1, m:m + 1], (1, 1), "SAME")
            np.testing.assert_allclose(out[..., c * 3 + m], ref[..., 0], atol=1e-12)
    np.testing.assert_allclose(out_nchw, out.transpose(0, 3, 1, 2), atol=1e-12)


def test_new_convolution_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="data_format must be 'NDHWC' or 'NCDHW', got 'NHWC'"):
            tf.nn.conv3d(tf.zeros([1, 4, 4, 4, 1]), tf.zeros([2, 2, 2, 1, 1]), 1, "SAME",
                         data_format="NHWC")
        with pytest.raises(ValueError, match=r"rank 5 but is rank 4 for Conv3D .*filter"):
            tf.nn.conv3d(tf.zeros([1, 4, 4, 4, 1]), tf.zeros([2, 2, 1, 1]), 1, "SAME")
        with pytest.raises(ValueError, match=r"Depth of input \(3\) must match the filter's "
                                             r"in_channels \(2\) for DepthwiseConv2dNative.*"
                                             r"channel_multiplier"):
            tf.nn.depthwise_conv2d(tf.zeros([1, 4, 4, 3]), tf.zeros([2, 2, 2, 1]), [1, 1, 1, 1],
                                   "SAME")
        with pytest.raises(ValueError, match="strides > 1 not supported in conjunction with rate"):
            tf.nn.depthwise_conv2d(tf.zeros([1, 4, 4, 3]), tf.zeros([2, 2, 3, 1]), [1, 2, 2, 1],
                                   "SAME", rate=2)
        with pytest.raises(ValueError, match="pointwise_filter must be .1, 1,"):
            tf.nn.separable_conv2d(tf.zeros([1, 4, 4, 3]), tf.zeros([2, 2, 3, 1]),
                                   tf.zeros([2, 2, 3, 4]), [1, 1, 1, 1], "SAME")
        with pytest.raises(ValueError, match='data_format must be "NWC" or "NCW"'):
            tf.nn.conv1d(tf.zeros([1, 4, 3]), tf.zeros([2, 3, 1]), 1, "SAME", data_format="NHC")
        with pytest.raises(ValueError, match="atrous_conv2d: rate must be a positive int"):
            tf.nn.atrous_conv2d(tf.zeros([1, 4, 4, 3]), tf.zeros([2, 2, 3, 1]), 0, "SAME")
        with pytest.raises(ValueError, match="strides must be an int or a list of 1, 3 or 5 ints"):
            tf.nn.max_pool3d(tf.zeros([1, 4, 4, 4, 1]), 2, [2, 2], "SAME")
        with pytest.raises(ValueError, match="must describe a rank-5 shape"):
            tf.nn.conv3d_transpose(tf.zeros([1, 2, 2, 2, 1]), tf.zeros([2, 2, 2, 1, 1]),
                                   [1, 4, 4, 1], 2)
