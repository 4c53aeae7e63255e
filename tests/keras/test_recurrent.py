"""tf.keras' recurrent layers (zps/keras/recurrent.py) against TF's: the expected numbers were
computed by tf_keras 2.21 in graph mode (tf.compat.v1, TF_USE_LEGACY_KERAS=1) with TF 1.15's
v1 layers (tf_keras.src.layers.rnn.lstm_v1.LSTM, gru_v1.GRU: hard_sigmoid, reset_after=False)
for the same weights (``values`` below, loaded with set_weights) and inputs."""

import numpy as np
import pytest

import zps as tf
from zps.testing import gradient_checker

K = tf.keras
L = K.layers


def values(shape, k):
    """Deterministic weights and inputs, the same in the script that made the numbers."""
    n = int(np.prod(shape))
    return (0.5 * np.sin(np.arange(n) * 0.7 + k)).reshape(shape).astype(np.float32)


X = values([2, 4, 3], 1.0)                 # [batch, time, features]
XM = X.copy()                              # masked by Masking(0.): example 0's last step,
XM[0, 3:] = 0                              # example 1's first and two last steps
XM[1, :1] = 0
XM[1, 2:] = 0


def outputs_of(make, x, masking=False):
    """(weight names, outputs) of the layer ``make()`` on ``x`` (after Masking(0.) when
    ``masking``), its weights set to ``values(shape, 2 + i)``."""
    with tf.Graph().as_default():
        inp = K.Input(x.shape[1:])
        layer = make()
        out = layer(L.Masking(0.0)(inp) if masking else inp)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            layer.set_weights([values(w.shape, i + 2.0)
                               for i, w in enumerate(layer.get_weights())])
            fetched = sess.run(out if isinstance(out, list) else [out], {inp: x})
    return [w.name for w in layer.weights], fetched


def assert_outputs(got, expected):
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=2e-6)


TF_KERAS = {   # outputs (then the final states, with return_state) of tf_keras for the cases
    'simple': [
        [[[-0.395822, -0.624324], [0.180704, 0.193465], [-0.612076, -0.610834], [-0.164435,
         -0.276158]], [[-0.088312, -0.193934], [-0.50055, -0.433996], [-0.23257, -0.372415],
         [0.069918, 0.038987]]],
        [[-0.164435, -0.276158], [0.069918, 0.038987]],
    ],
    'lstm': [
        [[[-0.058827, -0.018261], [0.074636, 0.117297], [0.125694, 0.162926], [-0.040693,
         0.051135]], [[0.100024, 0.12701], [0.132585, 0.166216], [-0.039282, 0.052715], [0.08132,
         0.150537]]],
        [[-0.040693, 0.051135], [0.08132, 0.150537]],
        [[-0.075913, 0.089246], [0.123254, 0.262641]],
    ],
    'gru': [
        [[[0.133926, 0.23165], [0.05915, 0.224588], [0.274147, 0.452264], [0.207536, 0.375151]],
         [[0.01662, 0.149266], [0.268437, 0.433489], [0.204109, 0.366461], [0.086618, 0.276604]]],
        [[0.207536, 0.375151], [0.086618, 0.276604]],
    ],
    'gru_reset_after': [
        [[0.0537, 0.273354], [-0.045783, 0.181464]],
        [[0.0537, 0.273354], [-0.045783, 0.181464]],
    ],
    'lstm_backwards': [
        [[[-0.059118, -0.017831], [0.078826, 0.100814], [0.119881, 0.178906], [-0.04941,
         0.046938]], [[0.101117, 0.127187], [-0.047729, 0.03054], [0.08155, 0.122261], [0.12034,
         0.189493]]],
    ],
    'stacked': [
        [[-0.345325, -0.20215, 0.048659], [-0.34036, -0.215518, 0.018665]],
        [[[-0.040693, 0.051135], [0.08132, 0.150537]], [[-0.075913, 0.089246], [0.123254,
         0.262641]]],
        [[-0.345325, -0.20215, 0.048659], [-0.34036, -0.215518, 0.018665]],
    ],
}

CASES = {
    "simple": (lambda: L.SimpleRNN(2, return_sequences=True, return_state=True),
               "simple_rnn/simple_rnn_cell"),
    "lstm": (lambda: L.LSTM(2, return_sequences=True, return_state=True), "lstm/lstm_cell"),
    "gru": (lambda: L.GRU(2, return_sequences=True, return_state=True), "gru/gru_cell"),
    "gru_reset_after": (lambda: L.GRU(2, reset_after=True, recurrent_activation="sigmoid",
                                      return_state=True), "gru/gru_cell"),
    "lstm_backwards": (lambda: L.LSTM(2, return_sequences=True, go_backwards=True),
                       "lstm/lstm_cell"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_outputs_and_states_as_tf_keras(case):
    make, scope = CASES[case]
    names, got = outputs_of(make, X)
    assert names == [scope + "/kernel:0", scope + "/recurrent_kernel:0", scope + "/bias:0"]
    assert_outputs(got, TF_KERAS[case])


def test_stacked_cells_as_tf_keras():
    names, got = outputs_of(lambda: L.RNN([L.LSTMCell(2), L.GRUCell(3)], return_state=True), X)
    assert names == ["rnn/stacked_rnn_cells/%s/%s:0" % (cell, w) for cell in ("lstm_cell",
                     "gru_cell") for w in ("kernel", "recurrent_kernel", "bias")]
    output, (h, c), h_gru = got   # the states grouped by cell, as Keras's
    expected = TF_KERAS["stacked"]
    assert_outputs([output, h, c, h_gru], [expected[0], *expected[1], expected[2]])


def test_tf_1_15_defaults():
    lstm, gru = L.LSTM(2), L.GRU(3)
    assert lstm.recurrent_activation is K.activations.hard_sigmoid
    assert gru.recurrent_activation is K.activations.hard_sigmoid
    assert (lstm.unit_forget_bias, gru.reset_after, lstm.units, gru.units) == (True, False, 2, 3)
    x = tf.placeholder(tf.float32, [None, 4, 5])
    lstm(x), gru(x)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        kernel, recurrent, bias = lstm.get_weights()
        _, gru_recurrent, gru_bias = gru.get_weights()
    assert kernel.shape == (5, 8) and recurrent.shape == (2, 8) and gru_bias.shape == (9,)
    np.testing.assert_array_equal(bias, [0, 0, 1, 1, 0, 0, 0, 0])   # the forget gate's ones
    np.testing.assert_allclose(recurrent @ recurrent.T, np.eye(2), atol=1e-5)   # orthogonal
    np.testing.assert_allclose(gru_recurrent @ gru_recurrent.T, np.eye(3), atol=1e-5)
    assert np.abs(kernel).max() <= np.sqrt(6 / (5 + 8))   # Glorot-uniform's limit


def hard_sigmoid(x):
    return np.clip(0.2 * x + 0.5, 0, 1)


def numpy_lstm(x, kernel, recurrent, bias, h, c):
    """Keras's LSTM in numpy: gates i, f, c, o."""
    outputs = []
    for t in range(x.shape[1]):
        z = x[:, t] @ kernel + h @ recurrent + bias
        i, f, g, o = np.split(z, 4, axis=1)
        c = hard_sigmoid(f) * c + hard_sigmoid(i) * np.tanh(g)
        h = hard_sigmoid(o) * np.tanh(c)
        outputs.append(h)
    return np.stack(outputs, 1), h, c


def test_initial_state_and_time_major_as_numpy():
    x = tf.placeholder(tf.float32, [2, 4, 3])
    h0, c0 = values([2, 2], 5.0), values([2, 2], 6.0)
    lstm = L.LSTM(2, return_sequences=True, return_state=True)
    seq, h, c = lstm(x, initial_state=[tf.constant(h0), tf.constant(c0)])
    major = L.LSTM(2, return_sequences=True, time_major=True)
    seq_major = major(tf.transpose(x, [1, 0, 2]))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        weights = [values(w.shape, i + 2.0) for i, w in enumerate(lstm.get_weights())]
        lstm.set_weights(weights)
        major.set_weights(weights)
        got = sess.run([seq, h, c, seq_major], {x: X})
    want_seq, want_h, want_c = numpy_lstm(X, *weights, h0, c0)
    assert_outputs(got[:3], [want_seq, want_h, want_c])
    np.testing.assert_allclose(got[3], numpy_lstm(X, *weights, np.zeros((2, 2)),
                                                  np.zeros((2, 2)))[0].transpose(1, 0, 2),
                               rtol=1e-5, atol=1e-6)


def test_one_cell_step_is_a_one_step_sequence():
    x = tf.constant(X[:, :1])
    cell = L.LSTMCell(2)
    h0 = tf.zeros([2, 2])
    out, (h, c) = cell(x[:, 0], [h0, h0])
    layer = L.LSTM(2)
    whole = layer(x)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        weights = [values(w.shape, i + 2.0) for i, w in enumerate(cell.get_weights())]
        cell.set_weights(weights)
        layer.set_weights(weights)
        a, b, state = sess.run([out, whole, h])
    np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_allclose(a, state)
    assert [w.name for w in cell.weights] == ["lstm_cell/kernel:0", "lstm_cell/recurrent_kernel:0",
                                              "lstm_cell/bias:0"]


def test_dropout_only_in_training():
    x = tf.placeholder(tf.float32, [2, 4, 3])
    plain = L.LSTM(2, return_sequences=True)
    dropped = L.LSTM(2, return_sequences=True, dropout=0.5, recurrent_dropout=0.5)
    a, b, b_train = plain(x), dropped(x), dropped(x, training=True)
    phase = K.backend.learning_phase()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        weights = [values(w.shape, i + 2.0) for i, w in enumerate(plain.get_weights())]
        plain.set_weights(weights)
        dropped.set_weights(weights)
        ref = sess.run(a, {x: X})
        inference = sess.run(b, {x: X})
        by_phase = sess.run(b, {x: X, phase: True})
        trained = sess.run(b_train, {x: X})
    np.testing.assert_allclose(inference, ref, rtol=1e-6)
    assert not np.allclose(by_phase, ref) and not np.allclose(trained, ref)


def test_stateful_is_refused_with_a_clear_error():
    with pytest.raises(NotImplementedError, match="stateful=True"):
        L.LSTM(2, stateful=True)


def test_shapes_in_a_sequential_model():
    model = K.Sequential([L.GRU(3, return_sequences=True, input_shape=(4, 2)),
                          L.SimpleRNN(5), L.Dense(1)])
    assert model.output_shape == (None, 1)
    assert model.layers[0].output_shape == (None, 4, 3)
    assert L.LSTM(3, return_state=True).compute_output_shape([None, 4, 2])[2].as_list() == \
        [None, 3]


def test_a_small_lstm_learns_with_adam():
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(16, 5, 2)).astype(np.float32)
    ys = xs[:, :, :1].sum(axis=1)   # the sum of the first feature over the steps
    x = tf.placeholder(tf.float32, [None, 5, 2])
    y = tf.placeholder(tf.float32, [None, 1])
    pred = L.Dense(1)(L.LSTM(8)(x))
    loss = tf.reduce_mean(tf.square(pred - y))
    train = tf.train.AdamOptimizer(0.05).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        losses = [sess.run([loss, train], {x: xs, y: ys})[0] for _ in range(40)]
    assert losses[-1] < 0.3 * losses[0], losses


def test_gradients_by_finite_differences():
    x = tf.placeholder(tf.float64, [2, 3, 2])
    y = L.GRU(2, return_sequences=True, reset_after=True)(L.SimpleRNN(3, return_sequences=True)(
        L.LSTM(2, return_sequences=True)(x)))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with sess.as_default():
            error = gradient_checker.compute_gradient_error(
                x, [2, 3, 2], y, [2, 3, 2], x_init_value=values([2, 3, 2], 3.0).astype(np.float64),
                delta=1e-6)
    assert error < 1e-6


def test_initial_state_given_in_the_inputs_list():
    x = tf.constant(X)
    h0, c0 = tf.constant(values([2, 2], 5.0)), tf.constant(values([2, 2], 6.0))
    lstm = L.LSTM(2)
    a, b = lstm([x, h0, c0]), lstm(x, initial_state=[h0, c0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(*sess.run([a, b]))
    with pytest.raises(ValueError, match="expects 2 initial state"):
        lstm(x, initial_state=[h0])
