"""fit_generator / evaluate_generator / predict_generator over Python generators and
tf.keras.utils.Sequence, checked against the same batches given as arrays; and
tf.keras.utils' to_categorical and normalize."""

import numpy as np
import pytest

import zps as tf

K = tf.keras



def _data(n=10):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3) / 10 - 1
    return x, np.sin(x @ np.array([[1.0], [-1.0], [0.5]], np.float32))


def _model():
    model = K.Sequential([K.layers.Dense(3, activation="tanh", input_shape=(3,),
                                         kernel_initializer=K.initializers.Constant(0.1)),
                          K.layers.Dense(1, kernel_initializer="ones")])
    model.compile(K.optimizers.Adam(0.05), "mse", metrics=["mae"])
    return model


class Batches(K.utils.Sequence):
    """The data in batches of 4 (the last one smaller); counts the epochs' ends."""

    def __init__(self, x, y, with_targets=True):
        self.x, self.y, self.with_targets, self.ends, self.asked = x, y, with_targets, 0, []

    def __len__(self):
        return (len(self.x) + 3) // 4

    def __getitem__(self, index):
        self.asked.append(index)
        part = slice(4 * index, 4 * index + 4)
        return (self.x[part], self.y[part]) if self.with_targets else self.x[part]

    def on_epoch_end(self):
        self.ends += 1


def _generator(x, y, forever=True):
    while True:
        for start in range(0, len(x), 4):
            yield x[start:start + 4], y[start:start + 4]
        if not forever:
            return


def _fit_twice(fit):
    """The history and weights of a fresh model trained by ``fit(model)``."""
    with tf.Graph().as_default():
        model = _model()
        history = fit(model)
        return history.history, model.get_weights(), model


@pytest.mark.parametrize("source", ["generator", "sequence"])
def test_fit_generator_equals_fit_on_the_same_batches(source):
    x, y = _data()
    want, weights, _ = _fit_twice(lambda m: m.fit(x, y, batch_size=4, epochs=3, verbose=0,
                                                  shuffle=False, validation_data=(x, y)))
    sequence = Batches(x, y)
    data = _generator(x, y) if source == "generator" else sequence
    steps = 3 if source == "generator" else None
    got, got_weights, model = _fit_twice(lambda m: m.fit_generator(
        data, steps_per_epoch=steps, epochs=3, verbose=0, shuffle=False,
        validation_data=(x, y)))
    for name in ("loss", "mean_absolute_error"):
        assert got[name] == want[name]
    for a, b in zip(got_weights, weights):
        np.testing.assert_array_equal(a, b)
    # Validation arrays are evaluated in batches of 32, as evaluate does by default.
    with model.optimizer.iterations.graph.as_default():
        assert [got["val_loss"][-1], got["val_mean_absolute_error"][-1]] == \
            model.evaluate(x, y, verbose=0)
    if source == "sequence":
        assert sequence.ends == 3 and sequence.asked == [0, 1, 2] * 3


def test_a_sequence_is_shuffled_batch_by_batch():
    x, y = _data()
    sequence = Batches(x, y)
    model = _model()
    np.random.seed(3)
    model.fit_generator(sequence, epochs=2, verbose=0)
    np.random.seed(3)
    orders = [list(np.random.permutation(3)) for _ in range(2)]
    assert sequence.asked == orders[0] + orders[1]


def test_evaluate_and_predict_generators():
    x, y = _data()
    model = _model()
    model.fit(x, y, epochs=1, verbose=0)
    # The loss is the mean over the steps, the metrics are weighted by batch size.
    losses = [model.test_on_batch(x[s:s + 4], y[s:s + 4]) for s in (0, 4, 8)]
    loss, mae = model.evaluate_generator(_generator(x, y), steps=3)
    np.testing.assert_allclose(loss, np.mean([v[0] for v in losses]), rtol=1e-6)
    np.testing.assert_allclose(mae, model.evaluate(x, y, verbose=0)[1], rtol=1e-6)
    assert model.evaluate_generator(Batches(x, y)) == [loss, mae]
    want = model.predict(x)
    np.testing.assert_array_equal(model.predict_generator(Batches(x, y, with_targets=False)),
                                  want)
    np.testing.assert_array_equal(model.predict_generator(_generator(x, y), steps=3), want)
    # A finite generator that stops early: the batches it gave.
    with pytest.raises(RuntimeError):
        model.predict_generator(_generator(x, y, forever=False), steps=4)


def test_validation_from_a_generator_is_evaluate_generators():
    x, y = _data()
    model = _model()
    history = model.fit_generator(_generator(x, y), steps_per_epoch=3, epochs=1, verbose=0,
                                  validation_data=_generator(x, y), validation_steps=3)
    assert [history.history["val_loss"][0], history.history["val_mean_absolute_error"][0]] == \
        model.evaluate_generator(_generator(x, y), steps=3)


def test_generator_errors():
    x, y = _data()
    model = _model()
    with pytest.raises(ValueError, match="Please specify `steps_per_epoch`"):
        model.fit_generator(_generator(x, y), verbose=0)
    with pytest.raises(ValueError, match=r"tuple \(x, y\)"):
        model.fit_generator(iter([x]), steps_per_epoch=1, verbose=0)
    with pytest.raises(ValueError, match="`steps`"):
        model.evaluate_generator(_generator(x, y))
    with pytest.raises(ValueError, match="call fit_generator"):
        model.fit(Batches(x, y), verbose=0)


def test_to_categorical_and_normalize():
    np.testing.assert_array_equal(K.utils.to_categorical([[1], [0], [2]]),
                                  np.eye(3, dtype=np.float32)[[1, 0, 2]])
    got = K.utils.to_categorical(np.array([[0, 1], [1, 1]]), num_classes=2, dtype="int32")
    assert got.shape == (2, 2, 2) and got.dtype == np.int32
    np.testing.assert_array_equal(got[0], [[1, 0], [0, 1]])
    np.testing.assert_allclose(K.utils.normalize(np.array([[3.0, 4.0], [0.0, 0.0]])),
                               [[0.6, 0.8], [0.0, 0.0]])
    np.testing.assert_allclose(K.utils.normalize(np.array([[1.0, -3.0]]), order=1),
                               [[0.25, -0.75]])
