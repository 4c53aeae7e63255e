"""Every ``tf.keras.layers`` class gives Keras's ``get_config()`` and
``type(layer).from_config(layer.get_config())`` makes the same layer again.

The expected configs are TF 1.15's (tf_keras 2.21's in graph mode, written out, with TF 1.15's
differences: regularizers as ``L1L2``, ``he_normal`` a ``VarianceScaling``, the v1 recurrent
defaults ``hard_sigmoid``/``implementation=1``; TF 2's ``groups``/``keepdims`` left out).
"""

import numpy as np
import pytest

import zps as tf
from zps.keras import engine

L = tf.keras.layers
GLOROT = {"class_name": "GlorotUniform", "config": {"seed": None, "dtype": "float32"}}
ZEROS = {"class_name": "Zeros", "config": {"dtype": "float32"}}
ONES = {"class_name": "Ones", "config": {"dtype": "float32"}}
ORTHOGONAL = {"class_name": "Orthogonal", "config": {"gain": 1.0, "seed": None, "dtype": "float32"}}
L1 = {"class_name": "L1L2", "config": {"l1": 0.009999999776482582, "l2": 0.0}}
L2 = {"class_name": "L1L2", "config": {"l1": 0.0, "l2": 0.009999999776482582}}
BASE = {"trainable": True, "dtype": None}


def merged(*dicts, **changes):
    return dict({k: v for d in dicts for k, v in d.items()}, **changes)



CONV = dict(BASE, strides=(1, 1), padding="valid", data_format="channels_last",
            dilation_rate=(1, 1), activation="linear", use_bias=True, bias_initializer=ZEROS,
            bias_regularizer=None, activity_regularizer=None, bias_constraint=None)
KERNEL = dict(kernel_initializer=GLOROT, kernel_regularizer=None, kernel_constraint=None)
CELL = dict(BASE, units=3, activation="tanh", use_bias=True, kernel_initializer=GLOROT,
            recurrent_initializer=ORTHOGONAL, bias_initializer=ZEROS, kernel_regularizer=None,
            recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None,
            recurrent_constraint=None, bias_constraint=None, dropout=0.0, recurrent_dropout=0.0)
RNN = dict(BASE, return_sequences=False, return_state=False, go_backwards=False,
           stateful=False, unroll=False, time_major=False)
DENSE = dict(BASE, units=2, activation="linear", use_bias=True, bias_initializer=ZEROS,
             bias_regularizer=None, activity_regularizer=None, bias_constraint=None, **KERNEL)
LSTM2 = merged(RNN, CELL, units=2, recurrent_activation="hard_sigmoid", unit_forget_bias=True,
             implementation=1, activity_regularizer=None)

# (layer, TF's config without "name")
EXPECTED = [
    (lambda: L.Activation("relu"), dict(BASE, activation="relu")),
    (lambda: L.Add(), BASE),
    (lambda: L.Concatenate(axis=1), dict(BASE, axis=1)),
    (lambda: L.AveragePooling1D(3, strides=1, padding="same"),
     dict(BASE, strides=(1,), pool_size=(3,), padding="same", data_format="channels_last")),
    (lambda: L.MaxPooling2D((3, 2), strides=2),
     dict(BASE, pool_size=(3, 2), padding="valid", strides=(2, 2), data_format="channels_last")),
    (lambda: L.BatchNormalization(axis=1, momentum=0.9, epsilon=1e-5, center=False,
                                  gamma_regularizer="l2", beta_initializer="ones"),
     dict(BASE, axis=1, momentum=0.9, epsilon=1e-05, center=False, scale=True,
          beta_initializer=ONES, gamma_initializer=ONES, moving_mean_initializer=ZEROS,
          moving_variance_initializer=ONES, beta_regularizer=None, gamma_regularizer=L2,
          beta_constraint=None, gamma_constraint=None)),
    (lambda: L.Conv2D(4, (3, 2), strides=2, padding="same", activation="relu", use_bias=False,
                      kernel_initializer="he_normal", kernel_regularizer="l2",
                      bias_regularizer="l1", activity_regularizer="l1_l2"),
     dict(CONV, filters=4, kernel_size=(3, 2), strides=(2, 2), padding="same",
          activation="relu", use_bias=False, kernel_regularizer=L2, bias_regularizer=L1,
          kernel_constraint=None, kernel_initializer={
              "class_name": "VarianceScaling", "config": {
                  "scale": 2.0, "mode": "fan_in", "distribution": "truncated_normal",
                  "seed": None, "dtype": "float32"}},
          activity_regularizer={"class_name": "L1L2", "config": {
              "l1": 0.009999999776482582, "l2": 0.009999999776482582}})),
    (lambda: L.Conv2DTranspose(4, 3),
     merged(CONV, KERNEL, filters=4, kernel_size=(3, 3), output_padding=None)),
    (lambda: L.Conv3DTranspose(4, 3),
     merged({k: v for k, v in CONV.items() if k != "dilation_rate"}, KERNEL, filters=4,
          kernel_size=(3, 3, 3), strides=(1, 1, 1), output_padding=None)),
    (lambda: L.SeparableConv2D(4, 3, depth_multiplier=2, pointwise_regularizer="l2",
                               activation="relu"),
     merged(CONV, KERNEL, filters=4, kernel_size=(3, 3), activation="relu", depth_multiplier=2,
          depthwise_initializer=GLOROT, pointwise_initializer=GLOROT,
          depthwise_regularizer=None, pointwise_regularizer=L2, depthwise_constraint=None,
          pointwise_constraint=None)),
    (lambda: L.DepthwiseConv2D(3, depth_multiplier=2, padding="same",
                               depthwise_regularizer="l2"),
     dict(CONV, kernel_size=(3, 3), padding="same", depth_multiplier=2,
          depthwise_initializer=GLOROT, depthwise_regularizer=L2, depthwise_constraint=None)),
    (lambda: L.Cropping2D(1),
     dict(BASE, cropping=((1, 1), (1, 1)), data_format="channels_last")),
    (lambda: L.Dense(3, activation="softmax", use_bias=False, kernel_initializer="zeros",
                     bias_initializer="ones", kernel_regularizer="l2"),
     dict(BASE, units=3, activation="softmax", use_bias=False, kernel_initializer=ZEROS,
          bias_initializer=ONES, kernel_regularizer=L2, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None)),
    (lambda: L.Dense(2), DENSE),
    (lambda: L.Dense(2, "relu", False), merged(DENSE, activation="relu", use_bias=False)),
    (lambda: L.Conv2D(4, 3), merged(CONV, KERNEL, filters=4, kernel_size=(3, 3))),
    (lambda: L.Dense(2, input_shape=(3,)), dict(DENSE, batch_input_shape=(None, 3),
                                                dtype="float32")),
    (lambda: L.Dropout(0.2, noise_shape=[None, 1], seed=3),
     dict(BASE, rate=0.2, noise_shape=[None, 1], seed=3)),
    (lambda: L.Embedding(10, 4),
     dict(BASE, batch_input_shape=(None, None), dtype="float32", input_dim=10, output_dim=4,
          embeddings_initializer={"class_name": "RandomUniform", "config": {
              "minval": -0.05, "maxval": 0.05, "seed": None, "dtype": "float32"}},
          embeddings_regularizer=None, activity_regularizer=None, embeddings_constraint=None,
          mask_zero=False, input_length=None)),
    (lambda: L.Embedding(10, 4, mask_zero=True, input_length=5, embeddings_initializer="zeros",
                         embeddings_regularizer="l2"),
     dict(BASE, batch_input_shape=(None, 5), dtype="float32", input_dim=10, output_dim=4,
          embeddings_initializer=ZEROS, embeddings_regularizer=L2, activity_regularizer=None,
          embeddings_constraint=None, mask_zero=True, input_length=5)),
    (lambda: L.Flatten(), dict(BASE, data_format="channels_last")),
    (lambda: L.GlobalAveragePooling1D(), dict(BASE, data_format="channels_last")),
    (lambda: L.LayerNormalization(axis=[1, 2], epsilon=1e-5, beta_regularizer="l2",
                                  gamma_regularizer="l1", center=False),
     dict(BASE, axis=[1, 2], epsilon=1e-05, center=False, scale=True, beta_initializer=ZEROS,
          gamma_initializer=ONES, beta_regularizer=L2, gamma_regularizer=L1,
          beta_constraint=None, gamma_constraint=None)),
    (lambda: L.LeakyReLU(), dict(BASE, alpha=0.30000001192092896)),
    (lambda: L.Masking(-1.0), dict(BASE, mask_value=-1.0)),
    (lambda: L.Permute((2, 1)), dict(BASE, dims=(2, 1))),
    (lambda: L.ReLU(max_value=6.0, negative_slope=0.1, threshold=0.5),
     dict(BASE, max_value=6.0, negative_slope=0.10000000149011612, threshold=0.5)),
    (lambda: L.RepeatVector(3), dict(BASE, n=3)),
    (lambda: L.Reshape([-1, 2]), dict(BASE, target_shape=(-1, 2))),
    (lambda: L.Softmax(axis=1), dict(BASE, axis=1)),
    (lambda: L.UpSampling2D(3),
     dict(BASE, size=(3, 3), data_format="channels_last", interpolation="nearest")),
    (lambda: L.ZeroPadding2D(((1, 2), (3, 4))),
     dict(BASE, padding=((1, 2), (3, 4)), data_format="channels_last")),
    (lambda: L.GRUCell(3, reset_after=True, dropout=0.1, kernel_regularizer="l2",
                       activation="relu"),
     dict(CELL, activation="relu", recurrent_activation="hard_sigmoid", kernel_regularizer=L2,
          dropout=0.1, implementation=1, reset_after=True)),
    (lambda: L.LSTM(3, return_sequences=True, return_state=True, go_backwards=True,
                    dropout=0.2, recurrent_dropout=0.1, unit_forget_bias=False,
                    activity_regularizer="l2", recurrent_regularizer="l1"),
     merged(RNN, CELL, return_sequences=True, return_state=True, go_backwards=True,
          recurrent_activation="hard_sigmoid", unit_forget_bias=False,
          recurrent_regularizer=L1, activity_regularizer=L2, dropout=0.2,
          recurrent_dropout=0.1, implementation=1)),
    (lambda: L.RNN(L.SimpleRNNCell(3, name="c")),
     dict(RNN, cell={"class_name": "SimpleRNNCell", "config": dict(CELL, name="c")})),
    (lambda: L.TimeDistributed(L.Dense(2, name="d")),
     dict(BASE, layer={"class_name": "Dense", "config": dict(DENSE, name="d")})),
    (lambda: L.Bidirectional(L.LSTM(2, name="l")),
     dict(BASE, merge_mode="concat", layer={"class_name": "LSTM",
                                            "config": dict(LSTM2, name="l")})),
]


@pytest.mark.parametrize("make, want", EXPECTED)
def test_config_is_keras(make, want):
    with tf.Graph().as_default():
        config = make().get_config()
    config.pop("name")
    assert config == want


def test_config_after_build_has_the_resolved_axes():
    with tf.Graph().as_default():
        x = tf.zeros([2, 3, 4])
        norm, batch = L.LayerNormalization(), L.BatchNormalization()
        norm(x), batch(x)
        assert norm.get_config()["axis"] == [2] and batch.get_config()["axis"] == [2]


def test_bidirectional_config_has_the_backward_layer_when_given():
    with tf.Graph().as_default():
        backward = L.GRU(2, go_backwards=True, name="b")
        config = L.Bidirectional(L.GRU(2), backward_layer=backward).get_config()
        again = L.Bidirectional.from_config(config)
    assert config["backward_layer"]["config"]["name"] == "b"
    assert again.backward_layer.go_backwards and again.backward_layer.units == 2


# --- round trips: every exported layer class, its outputs on the same weights -----------------

def _floats(*shape):
    return np.random.RandomState(0).uniform(-1, 1, shape).astype(np.float32)


def _on(inputs, wrap=None):
    """A case's call: ``wrap(layer)(inputs)`` (cells run in an RNN), inputs as numpy."""
    return inputs, wrap


SEQ, IMG, VOL, VEC = _floats(2, 5, 3), _floats(2, 6, 6, 3), _floats(2, 4, 4, 4, 2), _floats(2, 3)
IN_RNN = lambda cell: L.RNN(cell, return_sequences=True)  # noqa: E731
CASES = {   # class name -> (layer, (inputs, wrap)); inputs None: config only (nothing to call)
    "Activation": (lambda: L.Activation("tanh"), _on(VEC)),
    "Add": (lambda: L.Add(), _on([VEC, VEC * 2])),
    "Average": (lambda: L.Average(), _on([VEC, VEC * 2])),
    "Maximum": (lambda: L.Maximum(), _on([VEC, -VEC])),
    "Minimum": (lambda: L.Minimum(), _on([VEC, -VEC])),
    "Multiply": (lambda: L.Multiply(), _on([VEC, VEC + 1])),
    "Subtract": (lambda: L.Subtract(), _on([VEC, VEC * 3])),
    "Concatenate": (lambda: L.Concatenate(axis=0), _on([VEC, VEC * 2])),
    "AveragePooling1D": (lambda: L.AveragePooling1D(3, strides=1, padding="same"), _on(SEQ)),
    "AveragePooling2D": (lambda: L.AveragePooling2D(3, strides=2), _on(IMG)),
    "AveragePooling3D": (lambda: L.AveragePooling3D(), _on(VOL)),
    "MaxPooling1D": (lambda: L.MaxPooling1D(2, padding="same"), _on(SEQ)),
    "MaxPooling2D": (lambda: L.MaxPooling2D((3, 2), strides=1), _on(IMG)),
    "MaxPooling3D": (lambda: L.MaxPooling3D(strides=1), _on(VOL)),
    "BatchNormalization": (lambda: L.BatchNormalization(momentum=0.9, center=False,
                                                        gamma_regularizer="l2"), _on(IMG)),
    "Conv1D": (lambda: L.Conv1D(4, 2, dilation_rate=2, activation="relu",
                                kernel_regularizer="l1"), _on(SEQ)),
    "Conv2D": (lambda: L.Conv2D(4, (3, 2), strides=2, padding="same", use_bias=False,
                                kernel_initializer="he_normal",
                                activity_regularizer="l2"), _on(IMG)),
    "Conv3D": (lambda: L.Conv3D(2, 2, bias_initializer="ones"), _on(VOL)),
    "Conv2DTranspose": (lambda: L.Conv2DTranspose(2, 3, strides=2, padding="same",
                                                  activation="sigmoid"), _on(IMG)),
    "Conv3DTranspose": (lambda: L.Conv3DTranspose(2, 2, strides=2), _on(VOL)),
    "SeparableConv1D": (lambda: L.SeparableConv1D(4, 3, depth_multiplier=2), _on(SEQ)),
    "SeparableConv2D": (lambda: L.SeparableConv2D(4, 3, pointwise_regularizer="l2",
                                                  activation="elu"), _on(IMG)),
    "DepthwiseConv2D": (lambda: L.DepthwiseConv2D(3, depth_multiplier=2, padding="same",
                                                  depthwise_regularizer="l2"), _on(IMG)),
    "Cropping2D": (lambda: L.Cropping2D(((1, 2), (0, 1))), _on(IMG)),
    "ZeroPadding2D": (lambda: L.ZeroPadding2D(((1, 2), (0, 1))), _on(IMG)),
    "UpSampling2D": (lambda: L.UpSampling2D((2, 3)), _on(IMG)),
    "Dense": (lambda: L.Dense(3, activation="softmax", kernel_regularizer="l2",
                              bias_initializer="ones"), _on(VEC)),
    "Dropout": (lambda: L.Dropout(0.5, seed=1), _on(VEC)),
    "Embedding": (lambda: L.Embedding(6, 3, mask_zero=True, input_length=4,
                                      embeddings_regularizer="l2"),
                  _on(np.array([[1, 5, 0, 0], [2, 3, 4, 0]], np.int32))),
    "Flatten": (lambda: L.Flatten(), _on(IMG)),
    "GlobalAveragePooling1D": (lambda: L.GlobalAveragePooling1D(), _on(SEQ)),
    "GlobalAveragePooling2D": (lambda: L.GlobalAveragePooling2D(), _on(IMG)),
    "GlobalMaxPooling1D": (lambda: L.GlobalMaxPooling1D(), _on(SEQ)),
    "GlobalMaxPooling2D": (lambda: L.GlobalMaxPooling2D(), _on(IMG)),
    "LayerNormalization": (lambda: L.LayerNormalization(axis=[1, 2], epsilon=0.1,
                                                        beta_regularizer="l2",
                                                        gamma_regularizer="l1",
                                                        beta_initializer="ones"), _on(SEQ)),
    "Lambda": (lambda: L.Lambda(lambda x, k: x * k, arguments={"k": 3.0}), _on(VEC)),
    "LeakyReLU": (lambda: L.LeakyReLU(0.2), _on(VEC)),
    "ReLU": (lambda: L.ReLU(max_value=0.5, negative_slope=0.1, threshold=-0.2), _on(VEC)),
    "Softmax": (lambda: L.Softmax(axis=0), _on(VEC)),
    "Masking": (lambda: L.Masking(SEQ[0, 1, 0]), _on(SEQ)),
    "Permute": (lambda: L.Permute((2, 1)), _on(SEQ)),
    "RepeatVector": (lambda: L.RepeatVector(4), _on(VEC)),
    "Reshape": (lambda: L.Reshape((-1, 5)), _on(SEQ)),
    "SimpleRNNCell": (lambda: L.SimpleRNNCell(3, activation="relu"), _on(SEQ, IN_RNN)),
    "LSTMCell": (lambda: L.LSTMCell(2, unit_forget_bias=False, recurrent_regularizer="l2"),
                 _on(SEQ, IN_RNN)),
    "GRUCell": (lambda: L.GRUCell(2, reset_after=True, recurrent_activation="sigmoid"),
                _on(SEQ, IN_RNN)),
    "StackedRNNCells": (lambda: L.StackedRNNCells([L.LSTMCell(3), L.GRUCell(2)]),
                        _on(SEQ, IN_RNN)),
    "RNN": (lambda: L.RNN([L.SimpleRNNCell(2), L.LSTMCell(3)], return_state=True), _on(SEQ)),
    "SimpleRNN": (lambda: L.SimpleRNN(3, go_backwards=True, use_bias=False), _on(SEQ)),
    "LSTM": (lambda: L.LSTM(3, return_sequences=True, activity_regularizer="l2",
                            kernel_regularizer="l1"), _on(SEQ)),
    "GRU": (lambda: L.GRU(2, return_state=True, reset_after=True), _on(SEQ)),
    "TimeDistributed": (lambda: L.TimeDistributed(L.Dense(2, activation="relu")), _on(SEQ)),
    "Bidirectional": (lambda: L.Bidirectional(L.LSTM(2, return_sequences=True),
                                              merge_mode="sum"), _on(SEQ)),
    "Wrapper": (lambda: L.Wrapper(L.Dense(2)), _on(None)),
    "InputLayer": (lambda: L.InputLayer((3,), dtype="int32"), _on(None)),
    "Layer": (lambda: L.Layer(trainable=False, dtype="float64"), _on(None)),
}


def _exported_layer_classes():
    return sorted({obj.__name__ for obj in vars(L).values()
                   if isinstance(obj, type) and issubclass(obj, engine.Layer)
                   and obj.__name__ in {getattr(L, n).__name__ for n in L.__all__}})


def test_every_exported_layer_class_has_a_round_trip_case():
    missing = set(_exported_layer_classes()) - set(CASES)
    assert not missing, "add a round-trip case for %s" % sorted(missing)


def _built(make, inputs, wrap, weights=None, config=None):
    """The layer (``make()`` or from ``config``), its outputs and regularization losses on
    ``inputs``, in a graph of its own; ``weights`` loaded first when given."""
    with tf.Graph().as_default(), tf.Session() as sess:
        layer = make() if config is None else type(make()).from_config(config)
        if inputs is None:
            return layer, layer.get_config(), None, None, None
        tensors = ([tf.constant(x) for x in inputs] if isinstance(inputs, list)
                   else tf.constant(inputs))
        outer = wrap(layer) if wrap else layer
        outputs = outer(tensors)
        sess.run(tf.global_variables_initializer())
        if weights is not None:
            outer.set_weights(weights)
        values = sess.run([outputs, outer.losses])
        return layer, layer.get_config(), outer.get_weights(), values[0], values[1]


def _flat(values):
    if isinstance(values, list | tuple):
        return [v for value in values for v in _flat(value)]
    return [values]


@pytest.mark.parametrize("name", sorted(CASES))
def test_from_config_makes_the_same_layer(name):
    make, (inputs, wrap) = CASES[name]
    layer, config, weights, outputs, losses = _built(make, inputs, wrap)
    again, again_config, _, again_outputs, again_losses = _built(make, inputs, wrap, weights,
                                                                 config)
    assert type(again) is type(layer) and again_config == config
    if inputs is not None:
        for got, want in zip(_flat(again_outputs), _flat(outputs), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(again_losses, losses, rtol=1e-6)
    if name == "LayerNormalization":   # its regularizers were lost once
        assert len(losses) == 2 and min(losses) > 0
