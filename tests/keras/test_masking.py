"""Keras masks in graph mode (``tensor._keras_mask``): Masking, Embedding(mask_zero=True), their
passage through the layers that support them, and their use by the recurrent layers and
GlobalAveragePooling1D; the expected numbers are tf_keras 2.21's (v1 layers, graph mode) for
the same weights, as in test_recurrent.py."""

import numpy as np

import zps as tf
from tests.keras.test_recurrent import XM, assert_outputs, outputs_of, values
from zps.testing import gradient_checker

K = tf.keras
L = K.layers

TF_KERAS = {
    'lstm_masked': [
        [[[-0.058827, -0.018261], [0.074636, 0.117297], [0.125694, 0.162926], [0.125694,
         0.162926]], [[0., 0.], [0.105048, 0.10964], [0.105048, 0.10964], [0.105048, 0.10964]]],
        [[0.125694, 0.162926], [0.105048, 0.10964]],
        [[0.21123, 0.316366], [0.178765, 0.216281]],
    ],
    'gru_masked_last': [
        [[0.274147, 0.452264], [0.278351, 0.401037]],
    ],
    'embedding_gru': [
        [[0.231895, 0.396081], [0.000433, 0.124443]],
    ],
    'embedding_gap': [
        [[0.001582, 0.000999, -0.000054], [0.151559, -0.191036, -0.443784]],
    ],
}
IDS = np.array([[1, 2, 3, 0], [4, 0, 0, 0]], np.int32)   # 0: padding



def test_masked_steps_keep_state_and_repeat_the_output_as_tf_keras():
    # a masked step keeps the state and repeats the last output (zeros before the first one)
    _, got = outputs_of(lambda: L.LSTM(2, return_sequences=True, return_state=True), XM,
                        masking=True)
    assert_outputs(got, TF_KERAS["lstm_masked"])
    _, got = outputs_of(lambda: L.GRU(2), XM, masking=True)
    assert_outputs(got, TF_KERAS["gru_masked_last"])


def test_embedding_mask_zero_feeds_gru_and_average_pooling():
    ids = K.Input((4,), dtype="int32")
    embedding = L.Embedding(5, 3, mask_zero=True)
    e = embedding(ids)
    gru = L.GRU(2)
    y, pooled = gru(e), L.GlobalAveragePooling1D()(e)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        embedding.set_weights([values([5, 3], 7.0)])
        gru.set_weights([values(w.shape, i + 2.0) for i, w in enumerate(gru.get_weights())])
        got, mask, avg = sess.run([y, e._keras_mask, pooled], {ids: IDS})
    np.testing.assert_array_equal(mask, IDS != 0)
    assert_outputs([got, avg], TF_KERAS["embedding_gru"] + TF_KERAS["embedding_gap"])
    table = values([5, 3], 7.0)
    np.testing.assert_allclose(avg[1], table[4], rtol=1e-6)   # the one unmasked step


def test_masking_zeroes_and_masks_the_padded_steps():
    x = tf.placeholder(tf.float32, [2, 4, 3])
    y = L.Masking(mask_value=0.0)(x)
    with tf.Session() as sess:
        out, mask = sess.run([y, y._keras_mask], {x: XM})
    np.testing.assert_array_equal(mask, [[1, 1, 1, 0], [0, 1, 0, 0]])
    np.testing.assert_array_equal(out, XM * mask[:, :, None])
    other = L.Masking(mask_value=2.0)(tf.constant([[[2.0, 2.0], [2.0, 1.0]]]))
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(other._keras_mask), [[False, True]])


def test_the_mask_passes_through_dense_and_stops_at_layers_without_masking():
    x = tf.placeholder(tf.float32, [2, 4, 3])
    masked = L.Masking()(x)
    dense = L.Dense(3)(masked)
    assert dense._keras_mask is masked._keras_mask
    conv = L.Conv1D(2, 2)(masked)
    assert getattr(conv, "_keras_mask", None) is None
    summed = L.Add()([dense, L.Dropout(0.5)(masked)])
    assert summed._keras_mask is not None
    assert getattr(L.LSTM(2)(masked), "_keras_mask", None) is None   # no sequence, no mask
    assert L.LSTM(2, return_sequences=True)(masked)._keras_mask is masked._keras_mask


def test_an_explicit_mask_is_the_masking_layers():
    x = tf.placeholder(tf.float32, [2, 4, 3])
    mask = tf.placeholder(tf.bool, [2, 4])
    lstm = L.LSTM(2, return_sequences=True)
    explicit = lstm(x, mask=mask)
    implied = lstm(L.Masking()(x))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b = sess.run([explicit, implied], {x: XM, mask: (XM != 0).any(-1)})
    np.testing.assert_allclose(a, b)


def test_a_model_replayed_on_new_inputs_masks_them():
    inp = K.Input((4, 3))
    model = K.Model(inp, L.LSTM(2)(L.Masking()(inp)))
    other = tf.placeholder(tf.float32, [None, 4, 3])
    again = model(other)
    cut = tf.placeholder(tf.float32, [None, 2, 3])   # the first two steps only
    shorter = model(cut)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        padded = np.concatenate([XM[:, :2], np.zeros_like(XM[:, 2:])], axis=1)
        a, b = sess.run([again, shorter], {other: padded, cut: XM[:, :2]})
    np.testing.assert_allclose(a, b, rtol=1e-6)   # padding at the end changes nothing


def test_masked_gradients_by_finite_differences():
    x = tf.placeholder(tf.float64, [2, 4, 2])
    mask = tf.placeholder(tf.bool, [2, 4])
    y = L.GRU(2, return_sequences=True)(L.LSTM(3, return_sequences=True)(x, mask=mask),
                                        mask=mask)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with sess.as_default():
            error = gradient_checker.compute_gradient_error(
                x, [2, 4, 2], y, [2, 4, 2], x_init_value=values([2, 4, 2], 4.0).astype(np.float64),
                delta=1e-6, extra_feed_dict={mask: [[1, 1, 0, 1], [0, 1, 1, 0]]})
    assert error < 1e-6
