"""tf.keras.losses, activations and regularizers: per-example values against TF 2.21's
(tf_keras, graph mode) numbers written in."""

import numpy as np
import pytest

import zps as tf

K = tf.keras
Y_TRUE = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], np.float32)
Y_PRED = np.array([[0.2, 0.7, 0.1], [0.5, 0.3, 0.2]], np.float32)
LOGITS = np.array([[1.0, 2.0, -1.0], [0.5, -0.3, 2.0]], np.float32)

# name: (loss of (Y_TRUE, Y_PRED or LOGITS), TF's per-example values)
TF_VALUES = {
    "mse": (lambda: K.losses.mse(Y_TRUE, Y_PRED), [0.046667, 0.126667]),
    "mae": (lambda: K.losses.mae(Y_TRUE, Y_PRED), [0.2, 0.333333]),
    "cce": (lambda: K.losses.categorical_crossentropy(Y_TRUE, Y_PRED), [0.356675, 0.693147]),
    "cce_logits": (lambda: K.losses.categorical_crossentropy(Y_TRUE, LOGITS, from_logits=True),
                   [0.349012, 1.780196]),
    "scce": (lambda: K.losses.sparse_categorical_crossentropy(np.array([1, 0]), Y_PRED),
             [0.356675, 0.693147]),
    "scce_logits": (lambda: K.losses.sparse_categorical_crossentropy(
        np.array([[1], [0]]), LOGITS, from_logits=True), [0.349012, 1.780196]),
    "bce": (lambda: K.losses.binary_crossentropy(Y_TRUE, Y_PRED), [0.228393, 0.424322]),
    "bce_logits": (lambda: K.losses.binary_crossentropy(Y_TRUE, LOGITS, from_logits=True),
                   [0.584484, 1.051787]),
    "hinge": (lambda: K.losses.hinge(Y_TRUE, LOGITS), [0.666667, 1.4]),
    "squared_hinge": (lambda: K.losses.squared_hinge(Y_TRUE, LOGITS), [1.333333, 3.246667]),
    "kld": (lambda: K.losses.kld(Y_TRUE, Y_PRED), [0.356672, 0.693144]),
    "cosine_similarity": (lambda: K.losses.cosine_similarity(Y_TRUE, Y_PRED),
                          [-0.952579, -0.811107]),
    "huber": (lambda: K.losses.huber(Y_TRUE, LOGITS), [0.5, 0.556667]),   # TF's mean: 0.528333
    "msle": (lambda: K.losses.msle(Y_TRUE, Y_PRED), [0.022913, 0.061612]),
    "mape": (lambda: K.losses.mape(Y_TRUE + 1, Y_PRED), [78.333328, 75.0]),
    "poisson": (lambda: K.losses.poisson(Y_TRUE, Y_PRED), [0.452225, 0.564382]),
}


@pytest.mark.parametrize("name", sorted(TF_VALUES))
def test_losses_per_example_as_tf(name):
    fn, want = TF_VALUES[name]
    with tf.Graph().as_default():
        got = tf.Session().run(fn())
    assert got.shape == (2,)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_loss_lookup_by_name():
    assert K.losses.get("mse") is K.losses.mean_squared_error
    assert K.losses.get("categorical_crossentropy") is K.losses.categorical_crossentropy
    with pytest.raises(ValueError, match="Unknown loss function: 'msee'"):
        K.losses.get("msee")


def test_activations_and_regularizers_as_tf():
    with tf.Graph().as_default():
        a = K.activations
        got = tf.Session().run([
            a.hard_sigmoid(tf.constant([-3.0, 0.5, 3.0])), a.elu(tf.constant([-1.0, 2.0]), 0.5),
            a.get("softplus")(tf.constant([0.0])), a.get(None)(tf.constant([-2.0])),
            a.relu(tf.constant([-1.0, 0.2, 0.7, 3.0]), alpha=0.1, max_value=1.0, threshold=0.5),
            K.regularizers.l1_l2()(tf.constant([1.0, -2.0])),
            K.regularizers.get("l1")(tf.constant([1.0, -2.0]))])
    np.testing.assert_allclose(got[0], [0.0, 0.6, 1.0], rtol=1e-6)
    np.testing.assert_allclose(got[1], [-0.31606, 2.0], rtol=1e-5)
    np.testing.assert_allclose(got[2], [np.log(2.0)], rtol=1e-6)
    np.testing.assert_array_equal(got[3], [-2.0])
    np.testing.assert_allclose(got[4], [-0.15, -0.03, 0.7, 1.0], rtol=1e-6)
    np.testing.assert_allclose(got[5], 0.08, rtol=1e-6)
    np.testing.assert_allclose(got[6], 0.03, rtol=1e-6)
    assert K.regularizers.l2().get_config() == {"l1": 0.0, "l2": 0.009999999776482582}
    assert K.activations.serialize(K.activations.relu) == "relu"
    for name in ("relu", "sigmoid", "softmax", "tanh", "elu", "selu", "softplus", "softsign",
                 "linear", "hard_sigmoid", "exponential"):
        assert callable(K.activations.get(name))
