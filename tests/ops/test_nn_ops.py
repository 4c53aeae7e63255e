"""tf.nn ops: activations, softmax, bias_add, losses, moments, dropout."""

import logging

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
    GradCase("Softplus",
             lambda z, x, q: tf.nn.weighted_cross_entropy_with_logits(labels=z, logits=x, pos_weight=q),
             [R.uniform(0, 1, (2, 3)), _r(2, 3), np.array(2.5)], name="weighted_cross_entropy"),
    GradCase("Mean", lambda x: tf.nn.moments(x, axes=[0])[1], [_r(4, 3)], name="moments_variance"),
    GradCase("Mean", lambda x: tf.add_n(tf.nn.moments(x, axes=[1, 2], keep_dims=True)), [_r(2, 3, 2)],
             name="moments_keep_dims"),
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
        with pytest.raises(ValueError, match="Invalid axis 2 for softmax of a rank-2 tensor"):
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
        with pytest.raises(TypeError, match="'bias' has dtype float64"):
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
        with pytest.raises(ValueError, match=r"Shape mismatch: The shape of labels \(received \(4\)\)"):
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
