"""tf.layers: outputs against TensorFlow's for the same program, variable names, reuse,
regularizers and dropout.

tests/fixtures/tf_layers.npz holds what TensorFlow 2.21's tf.compat.v1.layers (with tf_keras)
computed for the program in _program() below.
"""

import pathlib

import numpy as np
import pytest

import zps as tf

TF_OUTPUTS = np.load(pathlib.Path(__file__).resolve().parent / "fixtures" / "tf_layers.npz")


def _program():
    x = np.random.default_rng(3).standard_normal((2, 5, 5, 3)).astype(np.float32)
    xi = tf.constant(x)
    c = tf.layers.conv2d(xi, 4, 3, strides=(1, 2), padding="same", activation=tf.nn.relu,
                         kernel_initializer=tf.constant_initializer(
                             np.linspace(-1, 1, 108).reshape(3, 3, 3, 4)),
                         bias_initializer=tf.constant_initializer(0.1))
    p = tf.layers.max_pooling2d(c, 2, 2, padding="same")
    a = tf.layers.average_pooling2d(c, (2, 1), (1, 1))
    f = tf.layers.flatten(p)
    d = tf.layers.dense(f, 3, kernel_initializer=tf.constant_initializer(
        np.linspace(-0.5, 0.5, f.get_shape().as_list()[1] * 3).reshape(-1, 3)))
    d3 = tf.layers.dense(tf.constant(x[:, :, :, :2].reshape(2, 25, 2)), 2, use_bias=False,
                         kernel_initializer=tf.constant_initializer([[1.0, 2.0], [3.0, -1.0]]),
                         name="seq")
    return [c, p, a, f, d, d3]


def test_layers_compute_what_tensorflow_computes():
    with tf.Graph().as_default():
        outputs = _program()
        assert sorted(v.op.name for v in tf.global_variables()) == [
            "conv2d/bias", "conv2d/kernel", "dense/bias", "dense/kernel", "seq/kernel"]
        assert [o.get_shape().as_list() for o in outputs] == [
            [2, 5, 3, 4], [2, 3, 2, 4], [2, 4, 3, 4], [2, 24], [2, 3], [2, 25, 2]]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = sess.run(outputs)
    for got, name in zip(values, TF_OUTPUTS.files):
        np.testing.assert_allclose(got, TF_OUTPUTS[name], rtol=1e-6, atol=1e-6)


def test_names_are_unique_and_reuse_shares_variables():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        h = tf.layers.dense(x, 4, activation=tf.nn.relu)
        tf.layers.dense(h, 2)
        with tf.variable_scope("tower"):
            shared = tf.layers.dense(x, 4, name="fc")
        with tf.variable_scope("tower", reuse=True):
            again = tf.layers.dense(x, 4, name="fc")
        names = [v.op.name for v in tf.trainable_variables()]
        assert names == ["dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias",
                         "tower/fc/kernel", "tower/fc/bias"]
        assert h.op.type == "Relu" and h.op.name.startswith("dense/")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            a, b = sess.run([shared, again], {x: np.ones((2, 3), np.float32)})
        np.testing.assert_array_equal(a, b)


def test_regularizers_land_in_the_regularization_losses():
    with tf.Graph().as_default():
        tf.layers.dense(tf.ones([2, 3]), 2, kernel_initializer=tf.ones_initializer(),
                        kernel_regularizer=lambda w: 0.5 * tf.reduce_sum(w),
                        activity_regularizer=lambda y: tf.reduce_mean(y))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = sess.run(tf.losses.get_regularization_losses())
    assert sorted(values) == [3.0, 3.0]   # 0.5 * 6 ones; the outputs' mean (3 each)


def test_dropout_only_while_training():
    x = np.ones((200, 50), np.float32)
    with tf.Graph().as_default():
        training = tf.placeholder(tf.bool, [])
        fixed = tf.layers.dropout(x, rate=0.4, training=False)
        switched = tf.layers.dropout(x, rate=0.4, training=training)
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(fixed), x)
            np.testing.assert_array_equal(sess.run(switched, {training: False}), x)
            out = sess.run(switched, {training: True})
    kept = out != 0
    assert 0.55 < kept.mean() < 0.65
    np.testing.assert_allclose(out[kept], 1 / 0.6, rtol=1e-6)


def test_bad_inputs_say_what_is_wrong():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="expected min_ndim=2, found ndim=1"):
            tf.layers.dense(tf.ones([3]), 2)
        with pytest.raises(ValueError, match="last dimension of the inputs to `Dense` should be "
                                             "defined"):
            tf.layers.dense(tf.placeholder(tf.float32, [None, None]), 2)
        with pytest.raises(TypeError, match="floating-point inputs, got int32"):
            tf.layers.dense(tf.ones([2, 2], tf.int32), 2)
        with pytest.raises(ValueError, match="expected ndim=4"):
            tf.layers.conv2d(tf.ones([2, 3, 3]), 2, 1)
        with pytest.raises(ValueError, match="channels_last"):
            tf.layers.conv2d(tf.ones([1, 3, 3, 2]), 2, 1, data_format="channels_first")
        with pytest.raises(ValueError, match="padding must be 'valid' or 'same'"):
            tf.layers.max_pooling2d(tf.ones([1, 4, 4, 1]), 2, 2, padding="full")
        with pytest.raises(ValueError, match=r"rate must be in \[0, 1\)"):
            tf.layers.dropout(tf.ones([2]), rate=1.0)


@pytest.mark.parametrize("shape, static", [([None, 2, 3], [None, 6]), ([4, 2, 3], [4, 6]),
                                           ([None, None, 3], [None, None]), (None, None)])
def test_flatten_keeps_the_batch_whatever_is_known_statically(shape, static):
    x = np.arange(24.0, dtype=np.float32).reshape(4, 2, 3)
    with tf.Graph().as_default():
        ph = tf.placeholder(tf.float32, shape)
        flat = tf.layers.flatten(ph)
        assert flat.get_shape().as_list() == static if static else flat.get_shape().ndims == 2
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(flat, {ph: x}), x.reshape(4, 6))
