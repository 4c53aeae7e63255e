"""tf.metrics: running values over batches against the numbers TensorFlow 2.21's tf.compat.v1
gives for the same program, variables and collections, and bad arguments."""

import numpy as np
import pytest

import zps as tf

# TensorFlow 2.21 printed these for _program(): the values before any update, the update ops
# of three batches, then the values again (accuracy, weighted accuracy, weighted MSE, MAE,
# RMSE, weighted mean).
TF_VALUES = [
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [0.2, 0.145838, 1.792991, 1.167547, 1.283896, 0.713625],
    [0.3, 0.164357, 2.03153, 1.146463, 1.33451, 0.179927],
    [0.4, 0.30773, 1.703027, 1.062785, 1.233505, 0.160738],
    [0.4, 0.30773, 1.703027, 1.062785, 1.233505, 0.160738],
]


def _program():
    labels = tf.placeholder(tf.int64, [None])
    preds = tf.placeholder(tf.int64, [None])
    w = tf.placeholder(tf.float32, [None])
    y = tf.placeholder(tf.float32, [None, 2])
    p = tf.placeholder(tf.float32, [None, 2])
    metrics = [tf.metrics.accuracy(labels, preds),
               tf.metrics.accuracy(labels, preds, weights=w),
               tf.metrics.mean_squared_error(y, p, weights=[[1.0, 0.5]]),
               tf.metrics.mean_absolute_error(y, p),
               tf.metrics.root_mean_squared_error(y, p),
               tf.metrics.mean(p, weights=tf.constant([[0.0, 1.0]]))]
    values, updates = [m[0] for m in metrics], [m[1] for m in metrics]
    feeds = []
    for b in range(3):
        rng = np.random.default_rng(b)
        feeds.append({labels: rng.integers(0, 3, 5), preds: rng.integers(0, 3, 5),
                      w: rng.uniform(0, 1, 5).astype(np.float32),
                      y: rng.standard_normal((4, 2)).astype(np.float32),
                      p: rng.standard_normal((4, 2)).astype(np.float32)})
    return values, updates, feeds


def test_metrics_accumulate_over_batches_as_tensorflows_do():
    with tf.Graph().as_default():
        values, updates, feeds = _program()
        assert sorted(v.op.name for v in tf.local_variables()) == sorted(
            "%s/%s" % (scope, v) for scope in ("accuracy", "accuracy_1", "mean_squared_error",
                                               "mean_absolute_error", "root_mean_squared_error",
                                               "mean") for v in ("count", "total"))
        assert tf.get_collection(tf.GraphKeys.METRIC_VARIABLES) == tf.local_variables()
        assert not tf.trainable_variables() and not tf.global_variables()
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            out = [sess.run(values)] + [sess.run(updates, f) for f in feeds] + [sess.run(values)]
            sess.run(tf.local_variables_initializer())   # a new evaluation starts from zero
            assert sess.run(values) == [0.0] * 6
    np.testing.assert_allclose(out, TF_VALUES, rtol=2e-6, atol=1e-6)


def test_collections_and_bad_arguments():
    with tf.Graph().as_default():
        value, update = tf.metrics.mean([1.0, 2.0], metrics_collections=["m"],
                                        updates_collections=[tf.GraphKeys.UPDATE_OPS])
        assert tf.get_collection("m") == [value]
        assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == [update]
        with pytest.raises(ValueError, match="incompatible"):
            tf.metrics.accuracy([1, 2, 3], [1, 2])
        with pytest.raises(ValueError):
            tf.metrics.mean([1.0, 2.0], weights=[1.0, 2.0, 3.0])
