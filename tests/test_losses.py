"""tf.losses: every loss and reduction against the numbers TensorFlow 2.21's tf.compat.v1 gives
for the same program, the LOSSES collection, training through a loss, and bad arguments."""

import numpy as np
import pytest

import zps as tf

# TensorFlow 2.21 (tf.compat.v1.losses) printed these for the program in _losses() below.
TF_VALUES = [3.917444, 1.586628, 4.042444, 0.5, 0.5, 3.0, 0.0, 0.541667, 0.164252, 0.35, 0.717872,
             [[1.0, 1.0], [0.5, 0.5], [2.0, 3.0]], 0.133333]


def _losses():
    y = tf.constant([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    z = tf.constant([[2.0, -1.0], [0.5, 0.5], [-1.0, 3.0]])
    w = tf.constant([1.0, 0.0, 2.0])
    R = tf.losses.Reduction
    per_row = [[1.0], [2.0], [0.0]]
    return [
        tf.losses.softmax_cross_entropy(y, z, weights=w, label_smoothing=0.1),
        tf.losses.softmax_cross_entropy(y, z),
        tf.losses.sparse_softmax_cross_entropy([0, 1, 0], z, weights=w),
        tf.losses.mean_squared_error(y, z, reduction=R.MEAN, weights=per_row),
        tf.losses.mean_squared_error(y, z, reduction=R.SUM_OVER_BATCH_SIZE, weights=per_row),
        tf.losses.mean_squared_error(y, z, reduction=R.SUM, weights=per_row),
        tf.losses.mean_squared_error(y, z, weights=0.0),   # no weight left: 0, not nan
        tf.losses.huber_loss(y, z, delta=0.5),
        tf.losses.log_loss([1.0, 0.0], [0.9, 0.2]),
        tf.losses.hinge_loss([1.0, 0.0], [0.3, -2.0]),
        tf.losses.sigmoid_cross_entropy(y, z, label_smoothing=0.2, weights=[[1.0, 0.5]]),
        tf.losses.absolute_difference(y, z, reduction=R.NONE),
        tf.losses.cosine_distance(y, tf.constant([[0.6, 0.8], [0.0, 1.0], [1.0, 0.0]]), axis=1),
    ]


def test_every_loss_and_reduction_gives_tensorflows_numbers():
    with tf.Graph().as_default():
        losses = _losses()
        assert tf.losses.get_losses() == losses   # each added to GraphKeys.LOSSES
        with tf.Session() as sess:
            values = sess.run(losses)
    for got, want in zip(values, TF_VALUES):
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


def test_total_loss_adds_regularization_and_trains():
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(8, 1)
    y = 3.0 * x + 0.5
    with tf.Graph().as_default():
        w = tf.get_variable("w", [1, 1], initializer=tf.zeros_initializer(),
                            regularizer=lambda v: 0.01 * tf.reduce_sum(tf.square(v)))
        b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
        tf.losses.mean_squared_error(y, tf.matmul(x, w) + b)
        total = tf.losses.get_total_loss()
        assert total.op.name == "total_loss"
        no_reg = tf.losses.get_total_loss(add_regularization_losses=False, name="data_loss")
        reg = tf.losses.get_regularization_loss()
        train = tf.train.GradientDescentOptimizer(0.5).minimize(total)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(300):
                sess.run(train)
            t, d, r, wv = sess.run([total, no_reg, reg, w])
    np.testing.assert_allclose(t, d + r, rtol=1e-6)
    np.testing.assert_allclose(r, 0.01 * wv[0, 0] ** 2, rtol=1e-5)
    assert 2.8 < wv[0, 0] < 3.0   # pulled slightly toward 0 by the regularizer


def test_loss_collection_none_and_get_total_loss_without_losses():
    with tf.Graph().as_default():
        tf.losses.absolute_difference([1.0], [2.0], loss_collection=None)
        assert tf.losses.get_losses() == []
        with pytest.raises(ValueError, match="No losses to sum"):
            tf.losses.get_total_loss()
        assert tf.Session().run(tf.losses.get_regularization_loss()) == 0.0


def test_sparse_labels_and_weights_of_shape_n_1_are_squeezed():
    # TensorFlow 2.21's tf.compat.v1.losses printed these for the same program.
    with tf.Graph().as_default():
        logits = tf.constant([[0.8, 0.3], [0.4, 0.6], [0.2, 0.9]])
        labels = [[0], [1], [1]]
        losses = [
            tf.losses.sparse_softmax_cross_entropy(labels, logits),
            tf.losses.sparse_softmax_cross_entropy(labels, logits, weights=[1.0, 0.0, 2.0]),
            tf.losses.sparse_softmax_cross_entropy(labels, logits, weights=[[1.0], [0.0], [2.0]]),
            tf.losses.sparse_softmax_cross_entropy(labels, logits, weights=2),
            tf.losses.sparse_softmax_cross_entropy(labels, logits,
                                                   reduction=tf.losses.Reduction.NONE),
        ]
        assert losses[-1].get_shape().as_list() == [3]
        values = tf.Session().run(losses)
    for got, want in zip(values, [0.49180064, 0.6402246, 0.6402246, 0.98360128,
                                  [0.474077, 0.59813887, 0.40318608]]):
        np.testing.assert_allclose(got, want, rtol=2e-6)


def test_bad_arguments_say_what_is_wrong():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Invalid Reduction Key bogus"):
            tf.losses.mean_squared_error([1.0], [1.0], reduction="bogus")
        with pytest.raises(ValueError, match="weights can not be broadcast to values"):
            tf.losses.mean_squared_error([[1.0, 2.0]], [[1.0, 2.0]], weights=[1.0, 2.0, 3.0])
        with pytest.raises(ValueError, match="incompatible"):
            tf.losses.mean_squared_error([1.0, 2.0], [1.0, 2.0, 3.0])
        with pytest.raises(ValueError, match="You must specify 'axis'"):
            tf.losses.cosine_distance([1.0], [1.0])
