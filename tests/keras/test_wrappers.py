"""tf.keras' layer wrappers (zps/keras/wrappers.py): TimeDistributed and Bidirectional, their
weights' names and outputs against tf_keras 2.21's (v1 layers, graph mode) for the same
weights, as in test_recurrent.py."""

import numpy as np
import pytest

import zps as tf
from tests.keras.test_recurrent import XM, X, assert_outputs, outputs_of

K = tf.keras
L = K.layers

TF_KERAS = {
    'bi_concat_masked': [
        [[[-0.058827, -0.018261, -0.086419, -0.146267], [0.074636, 0.117297, -0.135498, -0.234282],
         [0.125694, 0.162926, -0.102317, -0.160522], [0., 0., 0., 0.]], [[0., 0., 0., 0.],
         [0.105048, 0.10964, -0.101456, -0.158844], [0., 0., 0., 0.], [0., 0., 0., 0.]]],
    ],
    'bi_sum': [
        [[[-0.039338, -0.122873], [-0.069481, -0.079772], [0.076507, 0.137279], [0.128436,
         0.220967]], [[-0.114588, -0.184742], [0.072546, 0.077007], [0.129408, 0.150248],
         [0.096454, 0.177676]]],
    ],
    'bi_mul_last': [
        [[0.002877, -0.007316], [-0.012165, -0.03828]],
    ],
    'bi_ave_masked_last': [
        [[0.019638, 0.008329], [0.001796, -0.024602]],
    ],
    'bi_none_state': [
        [[[-0.395822, -0.624324], [0.180704, 0.193465], [-0.612076, -0.610834], [-0.164435,
         -0.276158]], [[-0.088312, -0.193934], [-0.50055, -0.433996], [-0.23257, -0.372415],
         [0.069918, 0.038987]]],
        [[[0.500666, 0.777607], [0.287894, 0.592259], [0.681902, 0.745213], [0.308553, 0.597757]],
         [[0.296983, 0.599163], [0.692558, 0.764429], [0.367084, 0.655297], [0.062253, 0.17833]]],
        [[-0.164435, -0.276158], [0.069918, 0.038987]],
        [[0.500666, 0.777607], [0.296983, 0.599163]],
    ],
    'td_dense': [
        [[[0.030267, -0.459768], [0.347455, 0.037097], [-0.181924, -0.325492], [0.035558,
         -0.456898]], [[0.345582, 0.038603], [-0.184967, -0.330095], [0.040857, -0.453967],
         [0.343635, 0.040023]]],
    ],
}

BIDIRECTIONAL = {   # case: (layer, masked inputs, the wrapped layer's scope)
    "bi_concat_masked": (lambda: L.Bidirectional(L.LSTM(2, return_sequences=True)), True,
                         "lstm/lstm_cell"),
    "bi_sum": (lambda: L.Bidirectional(L.GRU(2, return_sequences=True), merge_mode="sum"),
               False, "gru/gru_cell"),
    "bi_mul_last": (lambda: L.Bidirectional(L.LSTM(2), merge_mode="mul"), False,
                    "lstm/lstm_cell"),
    "bi_ave_masked_last": (lambda: L.Bidirectional(L.LSTM(2), merge_mode="ave"), True,
                           "lstm/lstm_cell"),
    "bi_none_state": (lambda: L.Bidirectional(L.SimpleRNN(2, return_sequences=True,
                                                          return_state=True), merge_mode=None),
                      False, "simple_rnn/simple_rnn_cell"),
}


@pytest.mark.parametrize("case", sorted(BIDIRECTIONAL))
def test_bidirectional_merge_modes_as_tf_keras(case):
    make, masked, scope = BIDIRECTIONAL[case]
    names, got = outputs_of(make, XM if masked else X, masking=masked)
    assert names == ["bidirectional/%s_%s/%s:0" % (way, scope, w) for way in ("forward",
                     "backward") for w in ("kernel", "recurrent_kernel", "bias")]
    assert_outputs(got, TF_KERAS[case])


def test_time_distributed_dense_as_tf_keras():
    names, got = outputs_of(lambda: L.TimeDistributed(L.Dense(2, activation="tanh")), X)
    assert names == ["time_distributed/kernel:0", "time_distributed/bias:0"]
    assert_outputs(got, TF_KERAS["td_dense"])


def test_shapes_layers_and_errors():
    with tf.Graph().as_default():
        x = K.Input((5, 3))
        bi = L.Bidirectional(L.LSTM(4, return_sequences=True, return_state=True))
        out, h_fw, c_fw, h_bw, c_bw = bi(x)
        assert out.shape.as_list() == [None, 5, 8] and h_bw.shape.as_list() == [None, 4]
        assert (bi.forward_layer.name, bi.backward_layer.name) == ("forward_lstm",
                                                                   "backward_lstm")
        assert bi.backward_layer.go_backwards and not bi.forward_layer.go_backwards
        td = L.TimeDistributed(L.Conv1D(2, 3))
        y = td(tf.placeholder(tf.float32, [None, 4, 6, 1]))
        assert y.shape.as_list() == [None, 4, 4, 2] and td.count_params() == 8
        assert td.compute_output_shape([None, 4, 6, 1]).as_list() == [None, 4, 4, 2]
    with pytest.raises(ValueError, match="Invalid merge mode"):
        L.Bidirectional(L.LSTM(2), merge_mode="max")
    with pytest.raises(ValueError, match="recurrent layer"):
        L.Bidirectional(L.Dense(2))
    with pytest.raises(ValueError, match="at least 3 dimensions"):
        with tf.Graph().as_default():
            L.TimeDistributed(L.Dense(2))(tf.zeros([2, 3]))


def test_bidirectional_trains():
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(8, 4, 2)).astype(np.float32)
    ys = xs[:, :1, :1].reshape(8, 1)   # the first step's first feature: backward must carry it
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 4, 2])
        pred = L.Dense(1)(L.Bidirectional(L.GRU(4))(x))
        loss = tf.reduce_mean(tf.square(pred - ys))
        train = tf.train.AdamOptimizer(0.05).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([loss, train], {x: xs})[0] for _ in range(30)]
    assert losses[-1] < 0.3 * losses[0], losses


def test_configs_nest_the_wrapped_layers_as_keras():
    with tf.Graph().as_default():
        bi = L.Bidirectional(L.GRU(3, reset_after=True), merge_mode="sum")
        config = bi.get_config()
        assert config["layer"]["class_name"] == "GRU" and config["merge_mode"] == "sum"
        again = L.Bidirectional.from_config(config)
        assert again.forward_layer.reset_after and again.merge_mode == "sum"
        assert again(tf.zeros([2, 4, 5])).shape.as_list() == [2, 3]
        td = L.TimeDistributed.from_config(L.TimeDistributed(L.Dense(2)).get_config())
        assert td.layer.units == 2
        stacked = L.RNN([L.LSTMCell(2), L.SimpleRNNCell(4)])
        rnn = L.RNN.from_config(stacked.get_config())
        assert [type(c).__name__ for c in rnn.cell.cells] == ["LSTMCell", "SimpleRNNCell"]
        assert rnn(tf.zeros([2, 4, 5])).shape.as_list() == [2, 4]
