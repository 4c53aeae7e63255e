"""compile's use of output masks and of stateful ``tf.keras.metrics`` (TF 1.15's Keras): a
masked output's per-step losses are weighted by its mask (the mean still over every step), its
metrics averaged over the unmasked steps; a Metric instance (or a stateful metric's name) reports
its own running result, started afresh by each epoch and each evaluation."""

import numpy as np
import pytest

import zps as tf

X = np.array([[1, 2, 3, 0, 0], [4, 5, 0, 0, 0], [6, 7, 8, 9, 1]])
Y = np.linspace(-1.0, 1.0, 15, dtype=np.float32).reshape(3, 5, 1)
MASK = (X != 0).astype(np.float32)


def _masked_model():
    return tf.keras.Sequential([
        tf.keras.layers.Embedding(10, 3, mask_zero=True, input_length=5),
        tf.keras.layers.LSTM(4, return_sequences=True),
        tf.keras.layers.TimeDistributed(tf.keras.layers.Dense(1))])


@pytest.mark.timeout(60)
def test_masked_output_weights_the_loss_and_the_metrics():
    with tf.Graph().as_default():
        model = _masked_model()
        model.compile("sgd", "mse", metrics=["mae"])
        loss, mae = model.evaluate(X, Y, batch_size=3, verbose=0)
        pred = model.predict(X)
        per_step = ((pred - Y) ** 2).mean(axis=-1)          # [batch, time]
        np.testing.assert_allclose(loss, (per_step * MASK).mean(), rtol=1e-6)
        abs_err = np.abs(pred - Y).mean(axis=-1)
        np.testing.assert_allclose(mae, (abs_err * MASK).sum() / MASK.sum(), rtol=1e-6)
        # The masked steps' targets do not matter at all.
        y2 = np.where(MASK[..., None] > 0, Y, 100.0)
        np.testing.assert_allclose(model.evaluate(X, y2, batch_size=3, verbose=0), [loss, mae],
                                   rtol=1e-6)


@pytest.mark.timeout(60)
def test_stateful_metrics_report_their_running_result_and_restart_each_evaluation():
    x = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(6, 2)
    y = np.array([[1.0], [0.0], [1.0], [0.0], [0.0], [1.0]], np.float32)
    with tf.Graph().as_default():
        model = tf.keras.Sequential([tf.keras.layers.Dense(1, activation="sigmoid",
                                                           input_shape=(2,))])
        model.compile("sgd", "mse", metrics=[tf.keras.metrics.MeanAbsoluteError(name="mae_m"),
                                             "AUC"])
        assert model.metrics_names == ["loss", "mae_m", "auc"]
        for _ in range(2):   # each evaluation counts its own batches only
            loss, mae, auc = model.evaluate(x, y, batch_size=2, verbose=0)
            pred = model.predict(x)
            np.testing.assert_allclose(mae, np.abs(pred - y).mean(), rtol=1e-6)
            np.testing.assert_allclose(loss, ((pred - y) ** 2).mean(), rtol=1e-6)
            assert 0.0 <= auc <= 1.0
            # A step of training in between: its batch must not count in the next evaluation.
            model.fit(x, y, batch_size=6, epochs=1, verbose=0)
        loss, mae, auc = model.evaluate(x, y, batch_size=2, verbose=0)
        pred = model.predict(x)
        # The AUC of the whole data: a plain Metric run over it at once.
        with tf.Session() as sess:
            metric = tf.keras.metrics.AUC()
            value = metric(tf.constant(y), tf.constant(pred))
            sess.run(tf.local_variables_initializer())
            np.testing.assert_allclose(auc, sess.run(value), rtol=1e-6)
        history = model.fit(x, y, batch_size=6, epochs=2, verbose=0).history
        assert len(history["mae_m"]) == 2 and len(history["auc"]) == 2
