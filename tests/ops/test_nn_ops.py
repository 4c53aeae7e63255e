"""tf.nn ops: activations, softmax, bias_add, losses, moments, dropout, batch normalization,
l2_normalize, top_k and in_top_k.

tests/fixtures/tf_batch_norm/expected.npz holds what TensorFlow 2.21 computed for fused_ops() in
tests/fixtures/tf_batch_norm/make.py; the other TensorFlow numbers below are written out where
they are used.
"""

import importlib.util
import logging
import pathlib

import numpy as np
import pytest

import zps as tf
from zps.ops import nn_ops
from zps.testing.gradient_checker import GradCase, check_gradients

R = np.random.default_rng(7)


def _r(*shape, scale=1.0):
    return R.standard_normal(shape) * scale


def _away_from(values, kinks, margin=0.05):
    """``values`` nudged so that no element lies within ``margin`` of a kink (finite differences)."""
    v = np.array(values, dtype=np.float64)
    for k in kinks:
        near = np.abs(v - k) < margin
        v[near] = k + np.where(v[near] >= k, margin, -margin) * 2
    return v


def _grad_of(fn):
    """``x -> d sum(fn(x)**2) / dx``: builds the activation's gradient op, for second derivatives."""
    return lambda x: tf.gradients(tf.reduce_sum(tf.square(fn(x))), [x])[0]


def _np_sigmoid(x):
    return np.exp(-np.logaddexp(0, -np.asarray(x, np.float64)))


def _onehot(labels, n):
    return np.eye(n)[labels]


def _probs(*shape):
    p = R.uniform(0.1, 1.0, shape)
    return p / p.sum(axis=-1, keepdims=True)


def _np_log_softmax(x, axis=-1):
    z = x - x.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


_X = _away_from(_r(3, 4, scale=2.0), [0.0, 6.0])
_X6 = _away_from(R.uniform(-2, 8, (3, 4)), [0.0, 6.0])

GRAD_CASES = [
    GradCase("Relu", tf.nn.relu, [_X]),
    GradCase("ReluGrad", _grad_of(tf.nn.relu), [_X]),
    GradCase("Relu6", tf.nn.relu6, [_X6]),
    GradCase("Relu6Grad", _grad_of(tf.nn.relu6), [_X6]),
    GradCase("Elu", tf.nn.elu, [_X]),
    GradCase("EluGrad", _grad_of(tf.nn.elu), [_X]),
    GradCase("Selu", tf.nn.selu, [_X]),
    GradCase("SeluGrad", _grad_of(tf.nn.selu), [_X]),
    GradCase("Softplus", tf.nn.softplus, [_X]),
    GradCase("SoftplusGrad", _grad_of(tf.nn.softplus), [_X]),
    GradCase("Softsign", tf.nn.softsign, [_X]),
    GradCase("SoftsignGrad", _grad_of(tf.nn.softsign), [_X]),
    GradCase("LeakyRelu", tf.nn.leaky_relu, [_X]),
    GradCase("LeakyRelu", lambda x: tf.nn.leaky_relu(x, alpha=1.5), [_X], name="LeakyRelu_alpha>1"),
    GradCase("LeakyReluGrad", _grad_of(lambda x: tf.nn.leaky_relu(x, 0.1)), [_X]),
    GradCase("Softmax", tf.nn.softmax, [_r(3, 4)]),
    GradCase("Softmax", lambda x: tf.nn.softmax(x, axis=0), [_r(3, 4)], name="Softmax_axis0"),
    GradCase("LogSoftmax", tf.nn.log_softmax, [_r(3, 4)]),
    GradCase("LogSoftmax", lambda x: tf.nn.log_softmax(x, axis=1), [_r(2, 3, 2)],
             name="LogSoftmax_axis1"),
    GradCase("BiasAdd", tf.nn.bias_add, [_r(2, 3, 4), _r(4)]),
    GradCase("BiasAdd", lambda v, b: tf.nn.bias_add(v, b, data_format="NCHW"), [_r(2, 3, 2, 2), _r(3)],
             name="BiasAdd_NCHW"),
    GradCase("BiasAddGrad", lambda v, b: tf.gradients(tf.reduce_sum(tf.square(tf.nn.bias_add(v, b))),
                                                      [b])[0], [_r(2, 3), _r(3)]),
    GradCase("BiasAddGrad", lambda v, b: tf.gradients(
        tf.reduce_sum(tf.square(tf.nn.bias_add(v, b, data_format="NCHW"))), [b])[0],
        [_r(2, 3, 2), _r(3)], name="BiasAddGrad_NCHW"),
    GradCase("L2Loss", tf.nn.l2_loss, [_r(3, 2)]),
    GradCase("SigmoidCrossEntropyWithLogits",
             lambda z, x: tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
             [R.uniform(0, 1, (3, 4)), _r(3, 4, scale=3.0)]),
    GradCase("SoftmaxCrossEntropyWithLogits",
             lambda z, x: tf.nn.softmax_cross_entropy_with_logits_v2(labels=z, logits=x),
             [_probs(3, 4), _r(3, 4)], name="SoftmaxXent_v2"),
    GradCase("SoftmaxCrossEntropyWithLogits",
             lambda z, x: tf.nn.softmax_cross_entropy_with_logits(labels=z, logits=x),
             [_probs(3, 4), _r(3, 4)], wrt=[1], name="SoftmaxXent_v1"),
    GradCase("SoftmaxCrossEntropyWithLogits",
             lambda z, x: tf.nn.softmax_cross_entropy_with_logits_v2(labels=z, logits=x, axis=0),
             [_probs(4, 3).T.copy(), _r(3, 4)], name="SoftmaxXent_axis0"),
    GradCase("SoftmaxCrossEntropyWithLogits",
             lambda z, x: tf.gradients(tf.nn.softmax_cross_entropy_with_logits_v2(labels=z, logits=x),
                                       [x])[0],
             [_probs(2, 3), _r(2, 3)], name="SoftmaxXent_second_derivative"),
    GradCase("SparseSoftmaxCrossEntropyWithLogits",
             lambda x, i: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=i, logits=x),
             [_r(4, 3), np.array([0, 2, 1, 2])]),
    GradCase("SparseSoftmaxCrossEntropyWithLogits",
             lambda x, i: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=i, logits=x),
             [_r(2, 3, 4), np.array([[0, 3, 1], [2, 2, 0]], np.int64)], name="SparseXent_rank3"),
    GradCase("SparseSoftmaxCrossEntropyWithLogits",
             lambda x, i: tf.gradients(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=i, logits=x),
                                       [x])[0],
             [_r(3, 4), np.array([3, 0, 1])], name="SparseXent_second_derivative"),
    GradCase("Log1p",
             lambda z, x, q: tf.nn.weighted_cross_entropy_with_logits(labels=z, logits=x, pos_weight=q),
             [R.uniform(0, 1, (2, 3)), _r(2, 3), np.array(2.5)], name="weighted_cross_entropy"),
    GradCase("Mean", lambda x: tf.nn.moments(x, axes=[0])[1], [_r(4, 3)], name="moments_variance"),
    GradCase("Mean", lambda x: tf.add_n(tf.nn.moments(x, axes=[1, 2], keep_dims=True)), [_r(2, 3, 2)],
             name="moments_keep_dims"),
    GradCase("FusedBatchNormV3", lambda x, s, o: tf.nn.fused_batch_norm(x, s, o)[0],
             [_r(2, 3, 2, 3), _r(3), _r(3)], name="FusedBatchNorm_training"),
    GradCase("FusedBatchNormV3",
             lambda x, s, o: tf.nn.fused_batch_norm(x, s, o, epsilon=0.1, data_format="NCHW")[0],
             [_r(2, 3, 2, 2), _r(3), _r(3)], name="FusedBatchNorm_NCHW"),
    GradCase("FusedBatchNormV3",
             lambda x, s, o: tf.nn.fused_batch_norm(x, s, o, mean=[0.5, -1.0], variance=[2.0, 0.5],
                                                    is_training=False)[0],
             [_r(2, 2, 3, 2), _r(2), _r(2)], name="FusedBatchNorm_inference"),
    GradCase("FusedBatchNormV3",
             lambda x, s, o: tf.gradients(tf.reduce_sum(tf.nn.fused_batch_norm(x, s, o)[0] ** 3),
                                          [x])[0],
             [_r(2, 2, 2, 2), _r(2), _r(2)], name="FusedBatchNorm_second_derivative"),
    GradCase("Rsqrt", lambda x, m, v, o, s: tf.nn.batch_normalization(x, m, v, o, s, 0.01),
             [_r(4, 3), _r(3), R.uniform(0.5, 2, 3), _r(3), _r(3)], name="batch_normalization"),
    GradCase("TopKV2", lambda x: tf.nn.top_k(x, 2).values, [_r(3, 5)]),
    GradCase("TopKV2", lambda x: tf.nn.top_k(x, 3).values, [_r(2, 2, 4)], name="TopKV2_rank3"),
    GradCase("Rsqrt", lambda x: tf.nn.l2_normalize(x, axis=1), [_r(3, 4)], name="l2_normalize"),
    GradCase("LRN", lambda x: tf.nn.lrn(x, depth_radius=2, bias=1.5, alpha=0.3, beta=0.75),
             [_r(1, 2, 1, 7)]),
    GradCase("LRN", tf.nn.local_response_normalization, [_r(2, 1, 2, 3)], name="LRN_wide_window"),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient(case):
    check_gradients(case)


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


# -- activations ---------------------------------------------------------------------------------
_EXTREME = np.array([[-1000.0, -50.0, -1.5, -1e-3, 0.0, 1e-3, 2.0, 7.0, 50.0, 1000.0]], np.float32)


@pytest.mark.parametrize("fn,ref", [
    (tf.nn.relu, lambda x: np.maximum(x, 0)),
    (tf.nn.relu6, lambda x: np.clip(x, 0, 6)),
    (tf.nn.elu, lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0)))),
    (tf.nn.selu, lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772
                                                         * np.expm1(np.minimum(x, 0)))),
    (tf.nn.softplus, lambda x: np.logaddexp(0, x.astype(np.float64))),
    (tf.nn.softsign, lambda x: x / (1 + np.abs(x))),
    (tf.nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x)),
    (lambda x: tf.nn.leaky_relu(x, alpha=3.0), lambda x: np.where(x > 0, x, 3.0 * x)),
], ids=["relu", "relu6", "elu", "selu", "softplus", "softsign", "leaky_relu", "leaky_relu_3"])
def test_activation_values_are_finite_at_extremes(fn, ref):
    with tf.Graph().as_default():
        y = fn(tf.constant(_EXTREME))
        assert y.get_shape().as_list() == [1, 10] and y.dtype == tf.float32
        out = _run(y)
    assert out.dtype == np.float32 and np.all(np.isfinite(out))
    np.testing.assert_allclose(out, ref(_EXTREME), rtol=1e-6, atol=1e-30)


def test_activation_gradients_at_extremes_are_finite():
    with tf.Graph().as_default():
        x = tf.constant(_EXTREME)
        ys = [tf.nn.relu(x), tf.nn.elu(x), tf.nn.selu(x), tf.nn.softplus(x), tf.nn.softsign(x),
              tf.nn.leaky_relu(x), tf.nn.relu6(x)]
        grads = _run([tf.gradients(tf.reduce_sum(y), [x])[0] for y in ys])
    for g in grads:
        assert np.all(np.isfinite(g))
    np.testing.assert_array_equal(grads[0], (_EXTREME > 0).astype(np.float32))
    np.testing.assert_allclose(grads[3], _np_sigmoid(_EXTREME), rtol=1e-6)


def test_relu_keeps_integer_dtype_and_rejects_strings():
    with tf.Graph().as_default():
        y = tf.nn.relu(tf.constant([-2, 3]))
        assert y.dtype == tf.int32
        np.testing.assert_array_equal(_run(y), [0, 3])
        with pytest.raises(TypeError, match="'features' of Elu has DataType int32"):
            tf.nn.elu(tf.constant([1, 2]))


def test_leaky_relu_casts_integers_and_needs_constant_alpha():
    with tf.Graph().as_default():
        y = tf.nn.leaky_relu(tf.constant([-10, 10]), alpha=np.float32(0.5))
        assert y.dtype == tf.float32
        np.testing.assert_array_equal(_run(y), [-5.0, 10.0])
        with pytest.raises(TypeError, match="alpha"):
            tf.nn.leaky_relu([1.0], alpha=tf.placeholder(tf.float32, []))


def test_second_derivative_of_relu_family_is_zero_where_linear():
    with tf.Graph().as_default():
        x = tf.constant([-2.0, 3.0])
        g, = tf.gradients(tf.reduce_sum(tf.nn.relu(x) * x), [x])
        gg, = tf.gradients(tf.reduce_sum(g), [x])
        np.testing.assert_allclose(_run([g, gg]), [[0.0, 6.0], [0.0, 2.0]])


# -- softmax -------------------------------------------------------------------------------------
def test_softmax_and_log_softmax_are_stable():
    x = np.array([[1000.0, 0.0, -1000.0], [1.0, 2.0, 3.0]], np.float32)
    with tf.Graph().as_default():
        sm, lsm = _run([tf.nn.softmax(x), tf.nn.log_softmax(x)])
    assert np.all(np.isfinite(sm)) and np.all(np.isfinite(lsm))
    np.testing.assert_allclose(lsm, _np_log_softmax(x.astype(np.float64)), rtol=1e-6)
    np.testing.assert_allclose(sm, np.exp(_np_log_softmax(x.astype(np.float64))), rtol=1e-6, atol=1e-30)
    np.testing.assert_allclose(sm.sum(axis=1), [1.0, 1.0], rtol=1e-6)


def test_softmax_axis_dim_and_shapes():
    x = _r(2, 3, 4).astype(np.float32)
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None, 3, 4])
        outs = [tf.nn.softmax(p, axis=1), tf.nn.softmax(p, dim=0), tf.nn.log_softmax(p, axis=-2),
                tf.nn.softmax(p)]
        for o in outs:
            assert o.get_shape().as_list() == [None, 3, 4]
        vals = _run(outs, {p: x})
    np.testing.assert_allclose(vals[0], np.exp(_np_log_softmax(x, 1)), rtol=1e-5)
    np.testing.assert_allclose(vals[1], np.exp(_np_log_softmax(x, 0)), rtol=1e-5)
    np.testing.assert_allclose(vals[2], _np_log_softmax(x, 1), rtol=1e-5)
    np.testing.assert_allclose(vals[3], np.exp(_np_log_softmax(x, -1)), rtol=1e-5)


def test_softmax_errors():
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"range \[-2, 2\)"):  # as TF1
            tf.nn.softmax(tf.zeros([2, 3]), axis=2)
        with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dim'"):
            tf.nn.softmax(tf.zeros([2, 3]), axis=1, dim=1)
        with pytest.raises(TypeError, match="'logits' of Softmax has DataType int32"):
            tf.nn.softmax([1, 2])
        with pytest.raises(ValueError, match="known rank"):
            tf.nn.softmax(tf.placeholder(tf.float32), axis=0)
        with pytest.raises(ValueError, match="rank >= 1"):
            tf.nn.softmax(tf.constant(1.0))
        # unknown rank, default axis: fine
        p = tf.placeholder(tf.float32)
        np.testing.assert_allclose(_run(tf.nn.softmax(p), {p: [0.0, 0.0]}), [0.5, 0.5])


# -- bias_add, l2_loss ---------------------------------------------------------------------------
def test_bias_add_nhwc_and_nchw():
    v = _r(2, 3, 4, 5).astype(np.float32)
    with tf.Graph().as_default():
        b_last, b_chan = _r(5).astype(np.float32), _r(3).astype(np.float32)
        y1 = tf.nn.bias_add(v, b_last)
        y2 = tf.nn.bias_add(v, b_chan, data_format="NCHW")
        bl, bc = tf.constant(b_last), tf.constant(b_chan)
        g1, = tf.gradients(tf.reduce_sum(tf.nn.bias_add(v, bl) * 2.0), [bl])
        g2, = tf.gradients(tf.reduce_sum(tf.nn.bias_add(v, bc, data_format="NCHW") * 2.0), [bc])
        assert y2.get_shape().as_list() == [2, 3, 4, 5] and g2.get_shape().as_list() == [3]
        o1, o2, og1, og2 = _run([y1, y2, g1, g2])
    np.testing.assert_allclose(o1, v + b_last, rtol=1e-6)
    np.testing.assert_allclose(o2, v + b_chan[:, None, None], rtol=1e-6)
    np.testing.assert_allclose(og1, np.full(5, 2.0 * 24))
    np.testing.assert_allclose(og2, np.full(3, 2.0 * 40))


def test_bias_add_static_shape_and_errors():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None, None])
        assert tf.nn.bias_add(p, tf.zeros([7])).get_shape().as_list() == [None, 7]
        with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 4 for BiasAdd"):
            tf.nn.bias_add(tf.zeros([2, 3]), tf.zeros([4]))
        with pytest.raises(ValueError, match="at least rank 2 but is rank 1"):
            tf.nn.bias_add(tf.zeros([3]), tf.zeros([3]))
        with pytest.raises(ValueError, match="rank 1 but is rank 2 for bias"):
            tf.nn.bias_add(tf.zeros([2, 3]), tf.zeros([1, 3]))
        with pytest.raises(ValueError, match="data_format must be 'NHWC' or 'NCHW'"):
            tf.nn.bias_add(tf.zeros([2, 3]), tf.zeros([3]), data_format="NDHWC")
        with pytest.raises(ValueError, match="'bias' has dtype float64"):  # as TF1
            tf.nn.bias_add(tf.zeros([2, 3]), tf.zeros([3], dtype=tf.float64))


def test_xw_plus_b():
    x, w, b = _r(2, 3), _r(3, 4), _r(4)
    with tf.Graph().as_default():
        y = tf.nn.xw_plus_b(x, w, b)
        assert y.op.type == "BiasAdd" and y.op.name == "xw_plus_b"
        np.testing.assert_allclose(_run(y), x @ w + b, rtol=1e-10)


def test_l2_loss():
    t = _r(3, 4).astype(np.float32)
    with tf.Graph().as_default():
        loss = tf.nn.l2_loss(t[:, ::2])  # a non-contiguous input
        assert loss.get_shape().as_list() == [] and loss.dtype == tf.float32
        np.testing.assert_allclose(_run(loss), (t[:, ::2] ** 2).sum() / 2, rtol=1e-5)


# -- cross entropies -----------------------------------------------------------------------------
def _np_sigmoid_xent(z, x):
    return np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))


def test_sigmoid_cross_entropy_matches_tf1_formula_and_is_stable():
    x = np.array([-1000.0, -100.0, -1.0, 0.0, 1.0, 100.0, 1000.0], np.float32)
    z = np.array([0.0, 1.0, 0.3, 1.0, 0.5, 1.0, 0.0], np.float32)
    with tf.Graph().as_default():
        xt = tf.constant(x)
        loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=xt)
        assert loss.op.name == "logistic_loss" and loss.get_shape().as_list() == [7]
        grad, = tf.gradients(tf.reduce_sum(loss), [xt])
        out, g = _run([loss, grad])
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(g))
    np.testing.assert_allclose(out, _np_sigmoid_xent(z, x), rtol=1e-6)
    assert out[5] > 0  # log1p(exp(-100)) survives: it is added after max(x, 0) - x * z
    np.testing.assert_allclose(g, _np_sigmoid(x) - z, rtol=1e-6, atol=1e-30)


def test_weighted_cross_entropy():
    x, z = _r(3, 4, scale=5.0), R.uniform(0, 1, (3, 4))
    with tf.Graph().as_default():
        loss = tf.nn.weighted_cross_entropy_with_logits(labels=z, logits=x, pos_weight=3.0)
        old = tf.nn.weighted_cross_entropy_with_logits(targets=z, logits=x, pos_weight=3.0)
        assert loss.op.name == "logistic_loss"
        a, b = _run([loss, old])
    ref = (1 - z) * x + (1 + 2.0 * z) * (np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0))
    np.testing.assert_allclose(a, ref, rtol=1e-10)
    np.testing.assert_allclose(b, ref, rtol=1e-10)


def test_xent_functions_are_keyword_only():
    with tf.Graph().as_default():
        logits, labels = tf.zeros([2, 3]), tf.zeros([2, 3])
        for fn in (tf.nn.sigmoid_cross_entropy_with_logits, tf.nn.softmax_cross_entropy_with_logits,
                   tf.nn.softmax_cross_entropy_with_logits_v2,
                   tf.nn.sparse_softmax_cross_entropy_with_logits):
            with pytest.raises(ValueError, match=r"Only call `%s` with named arguments \(labels=..., "
                                                 r"logits=..., ...\)" % fn.__name__):
                fn(logits, labels)
            with pytest.raises(ValueError, match="Both labels and logits must be provided"):
                fn(logits=logits)


def test_sigmoid_cross_entropy_shape_mismatch():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"logits and labels must have the same shape \(\(2, 3\) "
                                             r"vs \(3, 2\)\)"):
            tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.zeros([3, 2]), logits=tf.zeros([2, 3]))


def test_softmax_cross_entropy_values_and_label_gradients():
    x = np.array([[1000.0, 0.0, -1000.0], [1.0, 2.0, 3.0]], np.float32)
    z = np.array([[0.2, 0.3, 0.5], [0.0, 1.0, 0.0]], np.float32)
    with tf.Graph().as_default():
        xt, zt = tf.constant(x), tf.constant(z)
        v2 = tf.nn.softmax_cross_entropy_with_logits_v2(labels=zt, logits=xt)
        v1 = tf.nn.softmax_cross_entropy_with_logits(labels=zt, logits=xt)
        assert v2.get_shape().as_list() == [2] and v1.get_shape().as_list() == [2]
        assert tf.gradients(v1, [zt]) == [None]
        gz, gx = tf.gradients(v2, [zt, xt])
        loss2, loss1, gz, gx = _run([v2, v1, gz, gx])
    lsm = _np_log_softmax(x.astype(np.float64))
    ref = -(z * lsm).sum(axis=1)
    assert np.all(np.isfinite(loss2))
    np.testing.assert_allclose(loss2, ref, rtol=1e-6)
    np.testing.assert_allclose(loss1, ref, rtol=1e-6)
    np.testing.assert_allclose(gz, -lsm, rtol=1e-6)
    np.testing.assert_allclose(gx, np.exp(lsm) - z, rtol=1e-6, atol=1e-7)


def test_softmax_cross_entropy_v1_logs_deprecation_once(caplog, monkeypatch):
    monkeypatch.setattr(nn_ops, "_XENT_DEPRECATION_LOGGED", [])
    with tf.Graph().as_default(), caplog.at_level(logging.WARNING, logger="zps.ops.nn_ops"):
        tf.nn.softmax_cross_entropy_with_logits(labels=tf.zeros([1, 2]), logits=tf.zeros([1, 2]))
        tf.nn.softmax_cross_entropy_with_logits(labels=tf.zeros([1, 2]), logits=tf.zeros([1, 2]))
    msgs = [r.getMessage() for r in caplog.records if "deprecated" in r.getMessage()]
    assert len(msgs) == 1 and "softmax_cross_entropy_with_logits_v2" in msgs[0]


def test_softmax_cross_entropy_axis_and_label_cast():
    x = _r(3, 2, 4).astype(np.float32)
    z = _probs(2, 4, 3).transpose(2, 0, 1)  # a distribution over axis 0, float64 values
    with tf.Graph().as_default():
        loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.constant(z), logits=x, axis=0)
        assert loss.get_shape().as_list() == [2, 4] and loss.dtype == tf.float32
        out = _run(loss)
    np.testing.assert_allclose(out, -(z * _np_log_softmax(x.astype(np.float64), 0)).sum(0), rtol=1e-5)


def test_softmax_cross_entropy_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="logits and labels must have the same shape"):
            tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.zeros([2, 4]), logits=tf.zeros([2, 3]))
        with pytest.raises(ValueError, match="known rank"):
            tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.placeholder(tf.float32),
                                                       logits=tf.placeholder(tf.float32))
        with pytest.raises(ValueError, match="Logits cannot be scalars"):
            tf.nn.softmax_cross_entropy_with_logits_v2(labels=1.0, logits=1.0)


def test_sparse_softmax_cross_entropy_values_and_gradient():
    x = np.array([[1000.0, 0.0, -1000.0], [1.0, 2.0, 3.0], [-1e4, -1e4, 1e4]], np.float32)
    labels = np.array([2, 0, 0])
    with tf.Graph().as_default():
        xt = tf.constant(x)
        lt = tf.placeholder(tf.int64, [None])
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=lt, logits=xt)
        assert loss.get_shape().as_list() == [3]
        grad, = tf.gradients(tf.reduce_mean(loss), [xt])
        out, g = _run([loss, grad], {lt: labels})
    lsm = _np_log_softmax(x.astype(np.float64))
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(g))
    np.testing.assert_allclose(out, -lsm[np.arange(3), labels], rtol=1e-6)
    np.testing.assert_allclose(g, (np.exp(lsm) - _onehot(labels, 3)) / 3, rtol=1e-6, atol=1e-8)


def test_sparse_softmax_cross_entropy_higher_rank_and_static_shapes():
    x = _r(2, 3, 5).astype(np.float32)
    labels = R.integers(0, 5, (2, 3)).astype(np.int32)
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None, 3, 5])
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.placeholder_with_default(
            labels, [2, None]), logits=p)
        assert loss.get_shape().as_list() == [2, 3] and loss.dtype == tf.float32
        out = _run(loss, {p: x})
    lsm = _np_log_softmax(x.astype(np.float64))
    np.testing.assert_allclose(out, -np.take_along_axis(lsm, labels[..., None], -1)[..., 0], rtol=1e-5)


def test_sparse_softmax_cross_entropy_build_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"Rank mismatch: Rank of labels \(received 2\) should "
                                             r"equal rank of logits minus 1 \(received 2\)"):
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.zeros([2, 3], tf.int32),
                                                           logits=tf.zeros([2, 3]))
        with pytest.raises(ValueError, match=r"Shape mismatch: The shape of labels \(received \(4,\)\)"):
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.zeros([4], tf.int32),
                                                           logits=tf.zeros([2, 3]))
        with pytest.raises(TypeError, match="labels must be int32 or int64 class ids, got float32"):
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.zeros([2]),
                                                           logits=tf.zeros([2, 3]))


@pytest.mark.parametrize("bad", [3, -1])
def test_sparse_softmax_cross_entropy_out_of_range_label_fails_at_run_time(bad):
    with tf.Graph().as_default():
        labels = tf.placeholder(tf.int32, [2])
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=tf.zeros([2, 3]))
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"Received a label value of %d which is outside the valid range "
                                     r"of \[0, 3\)" % bad) as info:
                sess.run(loss, {labels: [0, bad]})
    assert info.value.op_name == "SparseSoftmaxCrossEntropyWithLogits"


# -- moments -------------------------------------------------------------------------------------
def test_moments():
    x = _r(4, 3, 2).astype(np.float32)
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None, 3, 2])
        m, v = tf.nn.moments(p, axes=[0, 2])
        mk, vk = tf.nn.moments(p, axes=[0, 2], keep_dims=True)
        assert m.get_shape().as_list() == [3] and v.get_shape().as_list() == [3]
        assert mk.get_shape().as_list() == [1, 3, 1]
        assert m.op.name == "moments/mean" and v.op.name == "moments/variance"
        m, v, mk, vk = _run([m, v, mk, vk], {p: x})
    np.testing.assert_allclose(m, x.mean(axis=(0, 2)), rtol=1e-5)
    np.testing.assert_allclose(v, x.var(axis=(0, 2)), rtol=1e-5)
    np.testing.assert_allclose(mk, x.mean(axis=(0, 2), keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(vk, x.var(axis=(0, 2), keepdims=True), rtol=1e-5)


def test_moments_float16_is_computed_in_float32():
    x = (np.arange(6, dtype=np.float16) * 10).reshape(2, 3)
    with tf.Graph().as_default():
        m, v = tf.nn.moments(tf.constant(x), axes=[1])
        assert m.dtype == tf.float16 and v.dtype == tf.float16
        m, v = _run([m, v])
    np.testing.assert_allclose(v.astype(np.float64), x.astype(np.float64).var(axis=1), rtol=1e-3)


# -- dropout -------------------------------------------------------------------------------------
def test_dropout_mask_values_and_statistics():
    x = np.full((200, 500), 3.0, np.float32)
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        y = tf.nn.dropout(tf.constant(x), keep_prob=0.7, seed=2)
        assert y.get_shape().as_list() == [200, 500] and y.op.name == "dropout/mul"
        with tf.Session() as sess:
            a, b = sess.run(y), sess.run(y)
        with tf.Session() as sess:
            a2 = sess.run(y)
    mask = a / 3.0
    np.testing.assert_allclose(np.unique(mask), [0.0, 1 / 0.7], rtol=1e-6)
    assert abs((mask > 0).mean() - 0.7) < 0.01
    assert abs(a.mean() - 3.0) < 0.03  # the expected value is preserved
    assert not np.array_equal(a, b)  # each run draws a new mask
    np.testing.assert_array_equal(a, a2)  # the seeded graph replays it in a new session


def test_dropout_gradient_is_the_scaled_mask():
    x = R.standard_normal((50, 40)).astype(np.float32)
    with tf.Graph().as_default():
        xt = tf.constant(x)
        y = tf.nn.dropout(xt, keep_prob=0.5, seed=3)
        g, = tf.gradients(tf.reduce_sum(y * 2.0), [xt])
        yv, gv = _run([y, g])
    kept = yv != 0
    np.testing.assert_allclose(yv[kept], x[kept] * 2.0, rtol=1e-6)
    np.testing.assert_allclose(gv, np.where(kept, 4.0, 0.0), rtol=1e-6)


def test_dropout_keep_prob_placeholder_rate_and_noise_shape():
    x = np.ones((64, 8), np.float32)
    with tf.Graph().as_default():
        keep = tf.placeholder(tf.float32, [])
        y = tf.nn.dropout(x, keep_prob=keep, seed=4)
        rows = tf.nn.dropout(x, keep_prob=0.5, noise_shape=[64, 1], seed=5)
        by_rate = tf.nn.dropout(x, rate=0.75, seed=6)
        with tf.Session() as sess:
            half = sess.run(y, {keep: 0.5})
            full = sess.run(y, {keep: 1.0})
            r, q = sess.run([rows, by_rate])
    assert set(np.unique(half).tolist()) == {0.0, 2.0}
    np.testing.assert_array_equal(full, x)  # keep_prob fed 1.0: the identity
    assert all(len(set(row.tolist())) == 1 for row in r)  # whole rows kept or dropped
    assert set(np.unique(q).tolist()) <= {0.0, 4.0} and 0.1 < (q > 0).mean() < 0.4


def test_dropout_keep_prob_one_returns_x_and_errors():
    with tf.Graph().as_default():
        x = tf.zeros([2, 3])
        assert tf.nn.dropout(x, keep_prob=1.0) is x
        assert tf.nn.dropout(x, keep_prob=tf.constant(1.0)) is x
        assert tf.nn.dropout(x, rate=0.0) is x
        with pytest.raises(ValueError, match=r"keep_prob must be a scalar tensor or a float in the "
                                             r"range \(0, 1\], got 0"):
            tf.nn.dropout(x, keep_prob=0.0)
        with pytest.raises(ValueError, match=r"rate must be a scalar tensor or a float in the range "
                                             r"\[0, 1\), got 1"):
            tf.nn.dropout(x, rate=1.0)
        with pytest.raises(ValueError, match="Cannot specify both 'keep_prob' and 'rate'"):
            tf.nn.dropout(x, keep_prob=0.5, rate=0.5)
        with pytest.raises(ValueError, match="You must provide keep_prob"):
            tf.nn.dropout(x)
        with pytest.raises(ValueError, match="x has to be a floating point tensor.*int32"):
            tf.nn.dropout(tf.zeros([2], tf.int32), keep_prob=0.5)
        with pytest.raises(ValueError, match="keep_prob must be a scalar, got shape"):
            tf.nn.dropout(x, keep_prob=tf.constant([0.5, 0.5]))


def test_sigmoid_and_tanh_are_exported():
    assert tf.nn.sigmoid is tf.sigmoid and tf.nn.tanh is tf.tanh
    with tf.Graph().as_default():
        out = _run([tf.nn.sigmoid([0.0, -1000.0]), tf.nn.tanh([0.0, 1000.0])])
    np.testing.assert_allclose(out, [[0.5, 0.0], [0.0, 1.0]])


# -- batch normalization -------------------------------------------------------------------------
def _tf_batch_norm_fixture():
    here = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "tf_batch_norm"
    spec = importlib.util.spec_from_file_location("tf_batch_norm_make", here / "make.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    return make, np.load(here / "expected.npz")


def test_fused_batch_norm_matches_tensorflow():
    make, expected = _tf_batch_norm_fixture()
    with tf.Graph().as_default():
        got = _run(make.fused_ops(tf))
    for i, value in enumerate(got):
        want = expected["fused_%d" % i]
        assert value.shape == want.shape and value.dtype == want.dtype, i
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-5, err_msg="output %d" % i)


def test_fused_batch_norm_reports_the_unbiased_variance_but_normalizes_with_the_biased():
    x = _r(3, 2, 2, 2).astype(np.float32)
    with tf.Graph().as_default():
        y, mean, var = tf.nn.fused_batch_norm(x, [1.0, 1.0], [0.0, 0.0], epsilon=0.0)
        one = tf.nn.fused_batch_norm(x[:1, :1, :1], [2.0, 2.0], [0.5, 0.5])
        assert y.op.type == "FusedBatchNormV3" and y.op.name == "FusedBatchNormV3"
        y, mean, var, one = _run([y, mean, var, one])
    np.testing.assert_allclose(mean, x.mean((0, 1, 2)), rtol=1e-5)
    np.testing.assert_allclose(var, x.var((0, 1, 2), ddof=1), rtol=1e-5)
    np.testing.assert_allclose(y, (x - x.mean((0, 1, 2))) / x.std((0, 1, 2)), rtol=1e-4, atol=1e-5)
    # One value per channel: variance 0 (TF1 divides by max(n - 1, 1)), y = offset.
    np.testing.assert_array_equal(one[2], [0.0, 0.0])
    np.testing.assert_array_equal(one[0], np.full((1, 1, 1, 2), 0.5, np.float32))


def test_fused_batch_norm_shapes_and_dtypes():
    with tf.Graph().as_default():
        y, m, v = tf.nn.fused_batch_norm(tf.placeholder(tf.float32, [None, None, None, 4]),
                                         tf.placeholder(tf.float32), tf.zeros([4]))
        assert [t.get_shape().as_list() for t in (y, m, v)] == [[None, None, None, 4], [4], [4]]
        y, m, v = tf.nn.fused_batch_norm(tf.placeholder(tf.float32), tf.ones([3]), tf.zeros([3]),
                                         data_format="NCHW")
        assert y.get_shape().as_list() == [None, 3, None, None]
        x = tf.constant(_r(2, 2, 1, 3), tf.float16)
        y, m, v = tf.nn.fused_batch_norm(x, [1.0, 1.0, 1.0], [0.0, 0.0, 0.0])
        assert (y.dtype, m.dtype, v.dtype) == (tf.float16, tf.float32, tf.float32)
        y = _run(y)
    assert y.dtype == np.float16 and np.all(np.isfinite(y))


def test_fused_batch_norm_errors():
    with tf.Graph().as_default():
        x = tf.zeros([2, 3, 2, 4])
        s = tf.ones([4])
        with pytest.raises(ValueError, match="Both `mean` and `variance` must be a 1D tensor when "
                                             "`is_training` is False"):
            tf.nn.fused_batch_norm(x, s, s, is_training=False)
        with pytest.raises(ValueError, match="Shape must be rank 4 but is rank 3 for "
                                             "'FusedBatchNormV3'"):
            tf.nn.fused_batch_norm(tf.zeros([3, 2, 4]), s, s)
        with pytest.raises(ValueError, match="Dimensions must be equal, but are 4 and 3"):
            tf.nn.fused_batch_norm(x, tf.ones([3]), s)
        with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 4"):
            tf.nn.fused_batch_norm(x, s, s, data_format="NCHW")
        with pytest.raises(ValueError, match="Dimensions must be equal, but are 4 and 2"):
            tf.nn.fused_batch_norm(x, s, s, mean=tf.zeros([2]), variance=s, is_training=False)
        with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
            tf.nn.fused_batch_norm(x, tf.ones([2, 2]), s)
        with pytest.raises(ValueError, match="data_format must be 'NHWC' or 'NCHW'"):
            tf.nn.fused_batch_norm(x, s, s, data_format="NDHWC")
        with pytest.raises(TypeError, match="'offset' has dtype float64 but a float32 x needs "
                                            "float32 parameters"):
            tf.nn.fused_batch_norm(x, s, tf.zeros([4], tf.float64))
        with pytest.raises(TypeError, match="'x' of FusedBatchNormV3 has DataType int32"):
            tf.nn.fused_batch_norm(tf.zeros([1, 1, 1, 4], tf.int32), s, s)


def test_batch_normalization_is_tf1s_formula():
    x, m, v, o, s = _r(4, 3), _r(3), R.uniform(0.5, 2, 3), _r(3), _r(3)
    with tf.Graph().as_default():
        y = tf.nn.batch_normalization(tf.constant(x), m, v, o, s, 0.01)
        bare = tf.nn.batch_normalization(tf.constant(x, tf.float32), m[0], v[0], None, None, 0.01)
        assert y.op.name.startswith("batchnorm/") and bare.dtype == tf.float32
        y, bare = _run([y, bare])
    np.testing.assert_allclose(y, (x - m) / np.sqrt(v + 0.01) * s + o, rtol=1e-10)
    np.testing.assert_allclose(bare, (x - m[0]) / np.sqrt(v[0] + 0.01), rtol=1e-5)


# -- l2_normalize --------------------------------------------------------------------------------
def test_l2_normalize():
    x = np.array([[3.0, 4.0], [0.0, 0.0]], np.float32)
    with tf.Graph().as_default():
        rows = tf.nn.l2_normalize(x, axis=1)
        cols = tf.nn.l2_normalize(x, 0, epsilon=0.5)
        old = tf.nn.l2_normalize(x, dim=1)
        everything = tf.nn.l2_normalize(x)
        assert rows.op.type == "Mul" and rows.op.name == "l2_normalize"
        with pytest.raises(ValueError, match="Cannot specify both"):
            tf.nn.l2_normalize(x, axis=1, dim=1)
        out = _run([rows, cols, old, everything])
    # TensorFlow 2.21: [[0.6, 0.8], [0, 0]] and, with epsilon 0.5 along axis 0, [[1, 1], [0, 0]].
    np.testing.assert_allclose(out[0], [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)
    np.testing.assert_allclose(out[1], [[1.0, 1.0], [0.0, 0.0]], rtol=1e-6)
    np.testing.assert_allclose(out[2], out[0])
    np.testing.assert_allclose(out[3], x / 5.0, rtol=1e-6)


# -- top_k, in_top_k -----------------------------------------------------------------------------
def test_top_k_values_indices_and_ties():
    a = np.array([[1.0, 3.0, 3.0, 2.0, 3.0], [5.0, -1.0, 1.0, -np.inf, 0.0]], np.float32)
    with tf.Graph().as_default():
        values, indices = tf.nn.top_k(a, 3)
        assert values.op.type == "TopKV2" and values.op.name == "TopKV2"
        assert (values.dtype, indices.dtype) == (tf.float32, tf.int32)
        assert values.get_shape().as_list() == [2, 3] and indices.get_shape().as_list() == [2, 3]
        everything = tf.nn.top_k(a, 5, sorted=False)
        ints = tf.nn.top_k(tf.constant([[3, 1, 3]]), 2)
        first = tf.nn.top_k(tf.constant([[2, 7, 7]], tf.int64))
        none = tf.nn.top_k(a, 0)
        out = _run([values, indices, everything, ints, first, none])
    # TensorFlow 2.21's values and indices: equal values in index order.
    np.testing.assert_array_equal(out[0], [[3.0, 3.0, 3.0], [5.0, 1.0, 0.0]])
    np.testing.assert_array_equal(out[1], [[1, 2, 4], [0, 2, 4]])
    np.testing.assert_array_equal(out[2].indices, [[1, 2, 4, 3, 0], [0, 2, 4, 1, 3]])
    np.testing.assert_array_equal(out[3].values, [[3, 3]])
    np.testing.assert_array_equal(out[3].indices, [[0, 2]])
    assert out[4].values.dtype == np.int64 and out[4].indices.tolist() == [[1]]
    assert out[5].values.shape == (2, 0)


def test_top_k_static_shapes():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None, 5])
        assert tf.nn.top_k(p).values.get_shape().as_list() == [None, 1]
        k = tf.placeholder(tf.int32, [])
        assert tf.nn.top_k(p, k).indices.get_shape().as_list() == [None, None]
        assert tf.nn.top_k(tf.placeholder(tf.float32), 2).values.get_shape().ndims is None
        values, indices = tf.nn.top_k(p, k)
        v, i = _run([values, indices], {p: np.arange(10.0).reshape(2, 5), k: 2})
    np.testing.assert_array_equal(v, [[4.0, 3.0], [9.0, 8.0]])
    np.testing.assert_array_equal(i, [[4, 3], [4, 3]])


def test_top_k_errors():
    a = np.zeros((2, 5), np.float32)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="input must have last dimension >= k = 6 but is 5"):
            tf.nn.top_k(a, 6)
        with pytest.raises(ValueError, match="must be non-negative but is -1"):
            tf.nn.top_k(a, -1)
        with pytest.raises(ValueError, match="Shape must be at least rank 1 but is rank 0"):
            tf.nn.top_k(1.0, 1)
        with pytest.raises(ValueError, match="Input must be scalar but has rank 1"):
            tf.nn.top_k(a, [1, 2])
        with pytest.raises(TypeError, match="'input' of TopKV2 has DataType bool"):
            tf.nn.top_k([True, False], 1)
        with pytest.raises(TypeError, match="'k' of TopKV2 has DataType float32"):
            tf.nn.top_k(a, tf.constant(2.0))
        p, k = tf.placeholder(tf.float32, [None, 5]), tf.placeholder(tf.int32, [])
        values = tf.nn.top_k(p, k).values
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="input must have at least k columns. Had 5, needed 6"):
                sess.run(values, {p: a, k: 6})
            with pytest.raises(tf.errors.InvalidArgumentError, match="Need k >= 0, got -1"):
                sess.run(values, {p: a, k: -1})


def test_top_k_gradient_goes_to_the_chosen_positions():
    x = np.array([[1.0, 3.0, 3.0, 2.0], [4.0, 0.0, -1.0, 2.0]])
    with tf.Graph().as_default():
        xt = tf.constant(x)
        values = tf.nn.top_k(xt, 2).values
        g, = tf.gradients(tf.reduce_sum(values * [[1.0, 10.0], [100.0, 1000.0]]), [xt])
        # TensorFlow 2.21's gradient:
        np.testing.assert_array_equal(_run(g), [[0.0, 1.0, 10.0, 0.0], [100.0, 0.0, 0.0, 1000.0]])


_PREDICTIONS = np.array([[0.1, 0.3, 0.3, 0.2], [0.5, np.nan, 0.1, 0.1], [np.inf, 1, 2, 3],
                         [0.1, 0.2, 0.2, 0.2]], np.float32)


def test_in_top_k_ties_count_as_in_and_non_finite_rows_as_out():
    with tf.Graph().as_default():
        results = [tf.nn.in_top_k(_PREDICTIONS, [2, 0, 0, 1], k) for k in (1, 2, 3, 0)]
        assert results[0].op.type == "InTopKV2" and results[0].op.name == "in_top_k/InTopKV2"
        assert results[0].dtype == tf.bool and results[0].get_shape().as_list() == [4]
        targets = tf.placeholder(tf.int64, [None])
        out_of_range = tf.nn.in_top_k(_PREDICTIONS, targets, 1)
        assert out_of_range.get_shape().as_list() == [4]
        out = _run(results + [out_of_range], {targets: [4, 0, -1, 1]})
    # TensorFlow 2.21's answers.
    for row in out[:3]:
        np.testing.assert_array_equal(row, [True, False, False, True])
    np.testing.assert_array_equal(out[3], [False] * 4)
    np.testing.assert_array_equal(out[4], [False, False, False, True])


def test_in_top_k_errors():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="'predictions' of InTopKV2 has DataType float64"):
            tf.nn.in_top_k(tf.constant(_PREDICTIONS, tf.float64), [0, 0, 0, 0], 1)
        with pytest.raises(TypeError, match="'targets' of InTopKV2 has DataType float32"):
            tf.nn.in_top_k(_PREDICTIONS, [1.0] * 4, 1)
        with pytest.raises(ValueError, match="Dimensions must be equal, but are 4 and 2"):
            tf.nn.in_top_k(_PREDICTIONS, [1, 2], 1)
        with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 1"):
            tf.nn.in_top_k(_PREDICTIONS[0], [1], 1)


# -- local response normalization ----------------------------------------------------------------
def test_lrn_matches_tensorflow():
    # TensorFlow 2.21's outputs and gradient for this input.
    x = np.array([[[[0.18905339, -0.5227485, -0.41306356, -2.4414673, 1.7997074, 1.1441659,
                     -0.32542282]],
                   [[0.7738066, 0.28121066, -0.5538228, 0.97756743, -0.31055656, -0.3288239,
                     -0.79214674]]]], np.float32)
    with tf.Graph().as_default():
        xt = tf.constant(x)
        y = tf.nn.lrn(xt, depth_radius=2, bias=1.5, alpha=0.3, beta=0.75)
        default = tf.nn.local_response_normalization(xt)
        assert y.op.type == "LRN" and y.op.name == "LRN" and y.get_shape().as_list() == [1, 2, 1, 7]
        g, = tf.gradients(tf.reduce_sum(y * np.arange(14.0, dtype=np.float32).reshape(x.shape)),
                          [xt])
        with pytest.raises(ValueError, match="Shape must be rank 4 but is rank 2"):
            tf.nn.lrn(tf.zeros([2, 3]))
        y, default, g = _run([y, default, g])
    np.testing.assert_allclose(y.ravel(), [
        0.13022074, -0.20731042, -0.13587704, -0.7545432, 0.5606223, 0.35933316, -0.14658105,
        0.49890333, 0.16224122, -0.31623143, 0.58928233, -0.17624299, -0.1928991, -0.52071226],
        rtol=1e-5)
    np.testing.assert_allclose(default.ravel(), [
        0.05460129, -0.1503147, -0.11877514, -0.7020364, 0.5175003, 0.32900137, -0.0937129,
        0.436352, 0.14478706, -0.285147, 0.5033206, -0.1598964, -0.16930172, -0.4446682],
        rtol=1e-5)
    np.testing.assert_allclose(g.ravel(), [
        0.01038856, 0.2565885, 0.6353033, 1.2149858, 1.2308753, 1.5288775, 2.783637,
        4.0882325, 4.081353, 5.963941, 5.927642, 5.6466627, 6.6081314, 6.436382], rtol=1e-5)


# -- crelu, swish, relu_layer, sufficient statistics and weighted moments ---------------------
# TensorFlow 2.21's tf.compat.v1.nn printed these for the inputs below.
_X = np.array([[1.5, -2.0, 0.25], [-0.5, 3.0, -1.25]], np.float32)


def test_activation_extras_match_tensorflow():
    with tf.Graph().as_default():
        x = tf.constant(_X)
        sw = tf.nn.swish(x)
        crelu = tf.nn.crelu(x)
        layer = tf.nn.relu_layer(x, [[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]], [0.1, -0.2])
        assert [crelu.op.name, layer.op.name] == ["CRelu/Relu", "relu_layer"]
        out = tf.Session().run([crelu, tf.nn.crelu(x, axis=0), sw, tf.gradients(sw, x)[0],
                                layer])
    np.testing.assert_array_equal(out[0], [[1.5, 0, 0.25, 0, 2, 0], [0, 3, 0, 0.5, 0, 1.25]])
    np.testing.assert_array_equal(out[1], [[1.5, 0, 0.25], [0, 3, 0], [0, 2, 0], [0.5, 0, 1.25]])
    np.testing.assert_allclose(out[2], [[1.2263618, -0.23840584, 0.14054413],
                                        [-0.18877034, 2.8577223, -0.27837518]], rtol=1e-6)
    np.testing.assert_allclose(out[3], [[1.0412941, -0.09078425, 0.62371004],
                                        [0.26003882, 1.0881041, 0.00631915]], atol=1e-6)
    np.testing.assert_allclose(out[4], [[0, 0], [6.7875, 0]], rtol=1e-6)


def test_sufficient_statistics_and_normalize_moments_match_tensorflow():
    with tf.Graph().as_default():
        x = tf.constant(_X)
        unknown = tf.placeholder(tf.float32, [None, 3])
        counts, _, _, shift = tf.nn.sufficient_statistics(x, [0, 1])
        assert counts.op.type == "Const" and shift is None
        out = tf.Session().run(
            [tf.nn.sufficient_statistics(x, [0, 1])[:3],
             tf.nn.sufficient_statistics(x, [1], shift=0.5, keep_dims=True)[:3],
             tf.nn.sufficient_statistics(unknown, [0])[:3],
             tf.nn.normalize_moments(*tf.nn.sufficient_statistics(x, [0])[:3], None),
             tf.nn.normalize_moments(*tf.nn.sufficient_statistics(x, [1], shift=0.5))],
            {unknown: _X})
    expected = [(6.0, 1.0, 17.125),
                (3.0, [[-1.75], [-0.25]], [[7.3125], [10.3125]]),
                (2.0, [1.0, 1.0, -1.0], [2.5, 13.0, 1.625]),
                ([0.5, 0.5, -0.5], [1.0, 6.25, 0.5625]),
                ([-0.08333337, 0.41666666], [2.097222, 3.4305556])]
    for got, want in zip(out, expected):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6)
            assert np.shape(g) == np.shape(w)


def test_weighted_moments_match_tensorflow():
    with tf.Graph().as_default():
        x = tf.constant(_X)
        out = tf.Session().run([tf.nn.weighted_moments(x, [1], [[1.0, 2.0, 0.5]]),
                                tf.nn.weighted_moments(x, [0, 1], [[1.0], [3.0]], keep_dims=True),
                                tf.nn.weighted_moments(tf.cast(x, tf.float16), 0, [[1.0], [3.0]])])
    np.testing.assert_allclose(out[0][0], [-0.6785714, 1.3928572], rtol=1e-6)
    np.testing.assert_allclose(out[0][1], [2.4770408, 3.4974487], rtol=1e-6)
    np.testing.assert_allclose(out[1], [[[0.29166666]], [[3.144097]]], rtol=1e-6)
    assert out[2][0].dtype == np.float16


def test_zero_fraction():
    with tf.Graph().as_default():
        ints = tf.placeholder(tf.int32)
        fractions = [tf.nn.zero_fraction([[0.0, 1.0], [0.0, 0.0]]), tf.nn.zero_fraction(ints),
                     tf.nn.zero_fraction([True, False, False]), tf.nn.zero_fraction(tf.zeros([0]))]
        assert fractions[0].name == "zero_fraction/fraction:0"
        assert [(f.dtype, f.get_shape().as_list()) for f in fractions] == [(tf.float32, [])] * 4
        with tf.Session() as sess:
            got = sess.run(fractions, {ints: [[0, 3, 0], [5, 0, 0]]})
    assert got[:3] == [0.75, np.float32(4 / 6), np.float32(2 / 3)] and np.isnan(got[3])
