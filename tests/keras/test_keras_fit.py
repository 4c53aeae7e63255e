"""Model.compile / fit / evaluate / predict and the *_on_batch steps: Keras's loop on numpy
arrays, checked against the same computations done by hand in numpy or in a Session."""

import numpy as np
import pytest

import zps as tf

K = tf.keras



def _data(n=40, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, 3).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.25
    return x, y


def _linear(**kwargs):
    return K.Sequential([K.layers.Dense(1, input_shape=(3,), kernel_initializer="zeros",
                                        **kwargs)])


def test_fit_reduces_the_loss_and_records_history():
    x, y = _data()
    model = _linear()
    model.compile(K.optimizers.SGD(0.1), "mse", metrics=["mae"])
    history = model.fit(x, y, batch_size=8, epochs=5, verbose=0, validation_data=(x, y))
    # TF1's Keras names "mae" by its function's name.
    assert sorted(history.history) == ["loss", "mean_absolute_error", "val_loss",
                                       "val_mean_absolute_error"]
    assert history.epoch == [0, 1, 2, 3, 4]
    losses = history.history["loss"]
    assert all(len(v) == 5 for v in history.history.values())
    assert losses[-1] < 0.1 * losses[0]
    # After the last epoch, the validation loss is evaluate's on the same data.
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0),
                               [history.history["val_loss"][-1],
                                history.history["val_mean_absolute_error"][-1]],
                               rtol=1e-6)


def test_fit_equals_tf_keras():
    # TF 2.21's tf_keras in graph mode (TF_USE_LEGACY_KERAS=1) on the same model and data.
    x = (np.arange(21, dtype=np.float32).reshape(7, 3) - 10) / 10
    y = np.array([0.5, -1.0, 2.0, 0.0, 1.0, -0.5, 1.5], np.float32)
    kernel = np.array([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6]], np.float32)
    model = K.Sequential([
        K.layers.Dense(2, activation="relu", input_shape=(3,),
                       kernel_initializer=K.initializers.Constant(kernel),
                       bias_initializer=K.initializers.Constant(0.1)),
        K.layers.Dense(1, kernel_initializer="ones")])
    model.compile(K.optimizers.Adam(0.01), "mse", metrics=["mae"])
    history = model.fit(x, y, batch_size=3, epochs=3, verbose=0, shuffle=False,
                        validation_data=(x, y))
    want = {"loss": [1.0284092596599035, 1.0052851438522339, 1.0013225674629211],
            "mean_absolute_error": [0.8560370206832886, 0.841304361820221, 0.8337423205375671],
            "val_loss": [1.0058270692825317, 0.9984996914863586, 0.9964967966079712],
            "val_mean_absolute_error": [0.8431242108345032, 0.835142195224762,
                                        0.8264623284339905]}
    assert sorted(history.history) == sorted(want)
    for name, values in want.items():
        np.testing.assert_allclose(history.history[name], values, rtol=1e-6, err_msg=name)
    tf_weights = [[[0.060331229120492935, -0.18376147747039795],
                   [0.27538758516311646, 0.41520723700523376],
                   [-0.49965083599090576, 0.6143878698348999]],
                  [0.15913313627243042, 0.10733162611722946],
                  [[1.0536671876907349], [1.0133252143859863]], [0.04504384472966194]]
    for got, value in zip(model.get_weights(), tf_weights):
        np.testing.assert_allclose(got, value, rtol=1e-6)
    np.testing.assert_allclose(model.evaluate(x, y, batch_size=2, verbose=0),
                               [0.9964968, 0.8264624], rtol=1e-6)


def test_a_shuffle_free_epoch_is_plain_minibatch_sgd():
    x, y = _data(n=6)
    model = _linear()
    model.compile(K.optimizers.SGD(0.1), "mse")
    history = model.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False)
    w, b, reported = np.zeros((3, 1)), np.zeros(1), 0.0
    for start in (0, 4):   # batches of 4 and 2; the loss reported is the one before the step
        xb, yb = x[start:start + 4], y[start:start + 4]
        error = xb @ w + b - yb
        reported += np.mean(error ** 2) * len(xb) / 6
        w -= 0.1 * xb.T @ (2 * error) / len(xb)
        b -= 0.1 * np.sum(2 * error, axis=0) / len(xb)
    kernel, bias = model.get_weights()
    np.testing.assert_allclose(kernel, w, rtol=1e-5)
    np.testing.assert_allclose(bias, b, rtol=1e-5)
    np.testing.assert_allclose(history.history["loss"], [reported], rtol=1e-5)


def test_shuffle_false_is_deterministic():
    x, y = _data()
    results = []
    for _ in range(2):
        with tf.Graph().as_default():
            model = K.Sequential([K.layers.Dense(4, input_shape=(3,), activation="tanh",
                                                 kernel_initializer=K.initializers.glorot_uniform(seed=1)),
                                  K.layers.Dense(1, kernel_initializer="ones")])
            model.compile("adam", "mse")
            history = model.fit(x, y, batch_size=7, epochs=3, verbose=0, shuffle=False)
            results.append((history.history["loss"], model.get_weights()))
    assert results[0][0] == results[1][0]
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_array_equal(a, b)


def test_evaluate_is_the_batch_size_weighted_mean():
    x, y = _data(n=7)
    model = _linear(kernel_regularizer=K.regularizers.l2(0.5), bias_initializer="ones")
    model.compile("sgd", "mse", metrics=["mae", "mse"], loss_weights=[2.0])
    session = K.backend.get_session()
    session.run(model.weights[0].assign([[1.0], [2.0], [3.0]]))
    kernel, bias = model.get_weights()
    error = x @ kernel + bias - y
    penalty = 0.5 * np.sum(kernel ** 2)   # the layer's loss, added to the weighted loss
    mse, mae = np.mean(error ** 2), np.mean(np.abs(error))
    got = model.evaluate(x, y, batch_size=3, verbose=0)
    np.testing.assert_allclose(got, [2.0 * mse + penalty, mae, mse], rtol=1e-5)
    np.testing.assert_allclose(model.test_on_batch(x, y), got, rtol=1e-5)


def test_predict_equals_the_model_run_in_a_session():
    x, _ = _data(n=10)
    model = K.Sequential([K.layers.Dense(2, input_shape=(3,), activation="relu"),
                          K.layers.Dense(4)])
    model.compile("rmsprop", "mse")
    got = model.predict(x, batch_size=3)
    want = K.backend.get_session().run(model(tf.constant(x)))
    assert got.shape == (10, 4)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(model.predict_on_batch(x), want, rtol=1e-6)


def test_fit_runs_batch_norm_updates_in_the_training_phase():
    x, y = _data()
    model = K.Sequential([K.layers.BatchNormalization(momentum=0.0, input_shape=(3,)),
                          K.layers.Dense(1)])
    model.compile(K.optimizers.SGD(0.0), "mse")
    model.fit(x[:8], y[:8], batch_size=8, epochs=1, verbose=0)
    bn = model.layers[0]
    moving_mean = K.backend.get_session().run(bn.moving_mean)
    np.testing.assert_allclose(moving_mean, x[:8].mean(axis=0), rtol=1e-5)
    # predict is in the inference phase: it normalizes with the moving statistics.
    gamma, beta, mean, var = K.backend.get_session().run(
        [bn.gamma, bn.beta, bn.moving_mean, bn.moving_variance])
    kernel, bias = model.layers[1].get_weights()
    want = ((x - mean) / np.sqrt(var + bn.epsilon) * gamma + beta) @ kernel + bias
    np.testing.assert_allclose(model.predict(x), want, rtol=1e-4, atol=1e-5)


def test_classification_metrics():
    rng = np.random.RandomState(1)
    x = rng.randn(60, 4).astype(np.float32)
    labels = np.argmax(x[:, :3], axis=1)
    model = K.Sequential([K.layers.Dense(3, input_shape=(4,), activation="softmax")])
    model.compile(K.optimizers.Adam(0.05), "sparse_categorical_crossentropy",
                  metrics=["accuracy", "sparse_categorical_accuracy"])
    history = model.fit(x, labels, batch_size=10, epochs=20, verbose=0)
    assert history.history["acc"] == history.history["sparse_categorical_accuracy"]   # TF1's name
    assert history.history["acc"][-1] > 0.8
    probabilities = model.predict(x)
    accuracy = np.mean(np.argmax(probabilities, axis=1) == labels)
    loss = -np.mean(np.log(probabilities[np.arange(60), labels]))
    np.testing.assert_allclose(model.evaluate(x, labels, verbose=0), [loss, accuracy, accuracy],
                               rtol=1e-5)
    onehot = K.Sequential([K.layers.Dense(3, input_shape=(4,), activation="softmax")])
    onehot.compile("adam", "categorical_crossentropy", metrics=["accuracy"])
    _, acc = onehot.evaluate(x, np.eye(3)[labels], verbose=0)
    assert acc == pytest.approx(np.mean(np.argmax(onehot.predict(x), axis=1) == labels), rel=1e-6)


def test_train_on_batch_and_a_tf_train_optimizer():
    x, y = _data(n=4)
    model = _linear()
    model.compile(tf.train.GradientDescentOptimizer(0.1), "mse")
    before = model.train_on_batch(x, y)
    np.testing.assert_allclose(before, np.mean(y ** 2), rtol=1e-6)
    assert model.train_on_batch(x, y) < before


def test_fit_in_a_users_session_keeps_its_variables():
    x, y = _data()
    model = _linear()
    model.compile(K.optimizers.SGD(0.0), "mse")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(model.weights[1].assign([7.0]))
        model.fit(x, y, epochs=1, verbose=0)
        assert sess.run(model.weights[1]) == 7.0


def test_a_model_without_input_shape_is_built_from_the_data():
    x, y = _data()
    model = K.Sequential([K.layers.Dense(1)])
    model.compile("sgd", "mse")
    history = model.fit(x, y, epochs=2, verbose=0, validation_split=0.25)
    assert sorted(history.history) == ["loss", "val_loss"]
    assert model.predict(x).shape == (40, 1)


def test_errors_say_what_to_do():
    x, y = _data()
    model = _linear()
    for call in (lambda: model.fit(x, y), lambda: model.evaluate(x, y)):
        with pytest.raises(RuntimeError, match="compile your model before"):
            call()
    # TF 1.15 predicts without compile (e.g. after load_weights).
    kernel, bias = model.get_weights()
    np.testing.assert_allclose(model.predict(x), x @ kernel + bias, rtol=1e-6)
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match=r"Error when checking target: expected .* shape \(1,\) "
                                         r"but got array with shape \(2,\)"):
        model.fit(x, np.zeros((40, 2)), verbose=0)
    with pytest.raises(ValueError, match=r"Error when checking input: .*shape \(3,\).*\(2,\)"):
        model.fit(x[:, :2], y, verbose=0)
    with pytest.raises(ValueError, match="40 input samples and 39 target samples"):
        model.fit(x, y[:39], verbose=0)
    with pytest.raises(NotImplementedError, match="steps_per_epoch"):
        model.fit(x, y, steps_per_epoch=3, verbose=0)
    with pytest.raises(ValueError, match="Unknown metric function"):
        model.compile("sgd", "mse", metrics=["auc"])
