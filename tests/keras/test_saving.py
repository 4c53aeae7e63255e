"""Model configs (get_config / from_config, to_json / model_from_json) and whole-model saving
(Model.save / tf.keras.models.load_model: a directory of JSON and safetensors, no HDF5): the model
made again computes the same outputs, and a loaded compiled model trains on exactly as the saved
one goes on training."""

import json
import os

import numpy as np
import pytest

import zps as tf

K = tf.keras



def _data(n=12, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, 3).astype(np.float32)
    return x, np.tanh(x @ np.array([[1.0], [-2.0], [0.5]], np.float32))


def _sequential(optimizer):
    model = K.Sequential([
        K.layers.Dense(4, activation="tanh", input_shape=(3,),
                       kernel_regularizer=K.regularizers.l2(0.01)),
        K.layers.BatchNormalization(),
        K.layers.Dense(1)])
    model.compile(optimizer, "mse", metrics=["mae"])
    return model


@pytest.mark.parametrize("optimizer", [
    lambda: K.optimizers.Adam(0.01), lambda: K.optimizers.SGD(0.05, momentum=0.9, nesterov=True),
    lambda: K.optimizers.RMSprop(0.01), lambda: K.optimizers.Adagrad(0.1)])
def test_a_loaded_model_trains_on_exactly_as_the_saved_one(tmp_path, optimizer):
    x, y = _data()
    path = str(tmp_path / "model")
    model = _sequential(optimizer())
    model.fit(x, y, batch_size=5, epochs=2, verbose=0, shuffle=False)
    model.save(path)
    on = model.fit(x, y, batch_size=5, epochs=2, verbose=0, shuffle=False).history
    weights = model.get_weights()
    with tf.Graph().as_default():
        loaded = K.models.load_model(path)
        assert type(loaded.optimizer) is type(model.optimizer)
        assert loaded.metrics_names == ["loss", "mean_absolute_error"]
        again = loaded.fit(x, y, batch_size=5, epochs=2, verbose=0, shuffle=False).history
        assert again == on
        for got, want in zip(loaded.get_weights(), weights):
            np.testing.assert_array_equal(got, want)


def test_loss_objects_and_optimizer_arguments_are_restored(tmp_path):
    x, y = _data()
    model = K.Sequential([K.layers.Dense(1, input_shape=(3,))])
    model.compile(K.optimizers.Adagrad(0.1, initial_accumulator_value=0.5),
                  K.losses.MeanSquaredError(), metrics=["mae"])
    model.fit(x, y, epochs=1, verbose=0)
    model.save(str(tmp_path / "model"))
    on = model.fit(x, y, epochs=2, verbose=0, shuffle=False).history
    with tf.Graph().as_default():
        loaded = K.models.load_model(str(tmp_path / "model"))
        assert isinstance(loaded._compiled.loss, K.losses.MeanSquaredError)
        assert loaded.optimizer.get_config()["initial_accumulator_value"] == 0.5
        assert loaded.fit(x, y, epochs=2, verbose=0, shuffle=False).history == on


def test_the_saved_directory(tmp_path):
    x, y = _data()
    model = _sequential(K.optimizers.Adam(0.01))
    model.fit(x, y, epochs=1, verbose=0)
    path = str(tmp_path / "model")
    model.save(path)
    assert sorted(os.listdir(path)) == ["model.json", "weights.safetensors"]
    with open(os.path.join(path, "model.json")) as f:
        document = json.load(f)
    assert document["format"] == "zps-keras-model" and document["version"] == 1
    assert document["model_config"]["class_name"] == "Sequential"
    assert document["training_config"]["loss"] == "mse"
    optimizer = document["training_config"]["optimizer_config"]
    assert optimizer["class_name"] == "Adam"
    assert optimizer["config"]["learning_rate"] == pytest.approx(0.01, rel=1e-7)
    assert optimizer["config"]["beta_1"] == 0.9 and optimizer["config"]["epsilon"] == 1e-7
    # The model's weights, then Adam's iterations and its slots m and v of each trainable weight.
    assert [k.split("/", 2)[2] for k in document["weights"]] == [
        "dense/kernel", "dense/bias", "batch_normalization/gamma", "batch_normalization/beta",
        "dense_1/kernel", "dense_1/bias", "batch_normalization/moving_mean",
        "batch_normalization/moving_variance"]
    assert len(document["optimizer_weights"]) == 1 + 2 * 6
    with pytest.raises(ValueError, match="overwrite=False"):
        model.save(path, overwrite=False)


def test_functional_model_configs_with_a_shared_layer():
    a, b = K.Input((3,), name="a"), K.Input((3,), name="b")
    shared = K.layers.Dense(2, activation="relu", name="shared")
    merged = K.layers.Concatenate(axis=-1)([shared(a), shared(b)])
    out1 = K.layers.Dense(1, name="out1")(merged)
    out2 = K.layers.Activation("sigmoid", name="out2")(K.layers.Dense(1)(shared(b)))
    model = K.Model([a, b], [out1, out2], name="two")
    config = model.get_config()
    assert config["input_layers"] == [["a", 0, 0], ["b", 0, 0]]
    assert config["output_layers"] == [["out1", 0, 0], ["out2", 0, 0]]
    layer = {entry["name"]: entry for entry in config["layers"]}
    assert layer["shared"]["inbound_nodes"] == [[["a", 0, 0, {}]], [["b", 0, 0, {}]],
                                                [["b", 0, 0, {}]]]
    assert layer["concatenate"]["inbound_nodes"] == [[["shared", 0, 0, {}],
                                                      ["shared", 1, 0, {}]]]
    assert layer["out2"]["config"]["activation"] == "sigmoid"
    assert layer["dense"]["inbound_nodes"] == [[["shared", 2, 0, {}]]]
    x = [np.ones((2, 3), np.float32), np.arange(6, dtype=np.float32).reshape(2, 3)]
    model.compile("sgd", "mse")
    want = model.predict(x)
    values = model.get_weights()
    with tf.Graph().as_default():
        again = K.models.model_from_json(model.to_json())
        assert again.name == "two" and [w.name for w in again.weights] == [
            w.name for w in model.weights]
        again.set_weights(values)
        again.compile("sgd", "mse")
        for got, expected in zip(again.predict(x), want):
            np.testing.assert_array_equal(got, expected)
    with tf.Graph().as_default():
        again = K.Model.from_config(config)
        assert [layer.name for layer in again.layers] == [layer.name for layer in model.layers]


def test_sequential_configs():
    model = K.Sequential([K.layers.Dense(3, input_shape=(2,), kernel_initializer="ones"),
                          K.layers.Dropout(0.5), K.layers.Dense(1, use_bias=False)],
                         name="seq")
    config = model.get_config()
    assert config["name"] == "seq"
    assert [c["class_name"] for c in config["layers"]] == ["Dense", "Dropout", "Dense"]
    assert config["layers"][0]["config"]["batch_input_shape"] == [None, 2]   # JSON's lists
    assert json.loads(model.to_json())["class_name"] == "Sequential"
    with tf.Graph().as_default():
        again = K.Sequential.from_config(config)
        assert [type(layer).__name__ for layer in again.layers] == ["Dense", "Dropout", "Dense"]
        assert again.layers[1].rate == 0.5 and again.layers[2].use_bias is False
        assert again.output_shape == (None, 1)


def test_a_sequential_built_from_data_keeps_its_input_shape(tmp_path):
    x, y = _data()
    model = K.Sequential([K.layers.Dense(2), K.layers.Dense(1)])
    model.compile(K.optimizers.SGD(0.1), "mse")
    model.fit(x, y, epochs=1, verbose=0)
    path = str(tmp_path / "model")
    model.save(path)
    want = model.predict(x)
    with tf.Graph().as_default():
        loaded = K.models.load_model(path)
        np.testing.assert_array_equal(loaded.predict(x), want)


def test_custom_layers_and_functions_by_custom_objects(tmp_path):
    class Scale(K.layers.Layer):
        def __init__(self, factor, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def call(self, inputs):
            return inputs * self.factor

        def compute_output_shape(self, input_shape):
            return input_shape

        def get_config(self):
            return dict(super().get_config(), factor=self.factor)

    def my_loss(y_true, y_pred):
        return tf.reduce_mean(tf.abs(y_true - y_pred), axis=-1)

    x, y = _data()
    model = K.Sequential([K.layers.Dense(1, input_shape=(3,)), Scale(3.0)])
    model.compile(K.optimizers.SGD(0.1), my_loss)
    path = str(tmp_path / "model")
    model.save(path)
    want, kernel = model.evaluate(x, y, verbose=0), model.get_weights()[0]
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"Unknown layer: Scale.*custom_objects"):
            K.models.load_model(path)
    with tf.Graph().as_default():
        loaded = K.models.load_model(path, custom_objects={"Scale": Scale, "my_loss": my_loss})
        assert loaded.layers[1].factor == 3.0
        assert loaded.evaluate(x, y, verbose=0) == want
    with tf.Graph().as_default():
        uncompiled = K.models.load_model(path, custom_objects={"Scale": Scale}, compile=False)
        assert getattr(uncompiled, "_compiled", None) is None
        np.testing.assert_array_equal(uncompiled.get_weights()[0], kernel)


def test_what_cannot_be_saved_says_so(tmp_path, caplog):
    model = K.Sequential([K.layers.Dense(1, input_shape=(3,))])
    with pytest.raises(ValueError, match=r"does not write or read HDF5.*'.*model'"):
        model.save(str(tmp_path / "model.h5"))
    with pytest.raises(ValueError, match="does not write or read HDF5"):
        K.models.load_model(str(tmp_path / "model.h5"))
    with pytest.raises(OSError, match="No model saved"):
        K.models.load_model(str(tmp_path / "nothing"))
    lam = K.Sequential([K.layers.Lambda(lambda t: t * 2, input_shape=(3,))])
    with pytest.raises(ValueError, match="Lambda layer .* does not serialize code"):
        lam.get_config()

    class Sub(K.Model):
        def call(self, inputs):
            return inputs
    with pytest.raises(NotImplementedError, match="subclassed model"):
        Sub().get_config()
    # A tf.train optimizer: saved without training config (TF 1.15 does the same).
    model.compile(tf.train.GradientDescentOptimizer(0.1), "mse")
    model.save(str(tmp_path / "plain"))
    assert "Compile the model again" in caplog.text
    with tf.Graph().as_default():
        assert getattr(K.models.load_model(str(tmp_path / "plain")), "_compiled", None) is None


_LAYERS = {   # input shape, the layer with arguments that are not its defaults
    "Dense": ((4,), lambda: K.layers.Dense(2, activation="relu", use_bias=False)),
    "Embedding": ((4,), lambda: K.layers.Embedding(10, 3)),
    "Activation": ((4,), lambda: K.layers.Activation("tanh")),
    "Reshape": ((4,), lambda: K.layers.Reshape((2, 2))),
    "LayerNormalization": ((4,), lambda: K.layers.LayerNormalization(epsilon=0.5)),
    "LeakyReLU": ((4,), lambda: K.layers.LeakyReLU(0.2)),
    "ReLU": ((4,), lambda: K.layers.ReLU(max_value=0.5)),
    "Softmax": ((2, 2), lambda: K.layers.Softmax(axis=1)),
    "RepeatVector": ((4,), lambda: K.layers.RepeatVector(3)),
    "Permute": ((2, 3), lambda: K.layers.Permute((2, 1))),
    "Conv2D": ((5, 5, 2), lambda: K.layers.Conv2D(3, 2, strides=2, padding="same")),
    "SeparableConv2D": ((5, 5, 2), lambda: K.layers.SeparableConv2D(3, 2, depth_multiplier=2)),
    "Conv2DTranspose": ((4, 4, 2), lambda: K.layers.Conv2DTranspose(3, 2, strides=2)),
    "MaxPooling2D": ((4, 4, 2), lambda: K.layers.MaxPooling2D(2, strides=1)),
    "ZeroPadding2D": ((4, 4, 2), lambda: K.layers.ZeroPadding2D(2)),
    "Cropping2D": ((4, 4, 2), lambda: K.layers.Cropping2D(1)),
    "UpSampling2D": ((4, 4, 2), lambda: K.layers.UpSampling2D(3)),
    "GlobalMaxPooling2D": ((4, 4, 2), lambda: K.layers.GlobalMaxPooling2D()),
    "Flatten": ((4, 4, 2), lambda: K.layers.Flatten()),
    "BatchNormalization": ((4,), lambda: K.layers.BatchNormalization(epsilon=0.5)),
}


@pytest.mark.parametrize("name", sorted(_LAYERS))
def test_a_layer_made_from_its_config_computes_the_same(name):
    shape, make = _LAYERS[name]
    dtype = "int32" if name == "Embedding" else None
    x = (np.random.RandomState(0).rand(2, *shape) * 9).astype(dtype or np.float32)

    def run(layer, weights=None):
        inputs = K.Input(shape, dtype=dtype)
        model = K.Model(inputs, layer(inputs))
        model.compile("sgd", "mse")
        if weights is not None:
            model.set_weights(weights)
        return model.predict(x), model.get_weights()
    layer = make()
    want, weights = run(layer)
    config = json.loads(json.dumps(K.saving.layer_config(layer)))
    with tf.Graph().as_default():
        got, _ = run(K.saving.layer_from_config(config), weights)
    np.testing.assert_array_equal(got, want)


def test_wrapped_recurrent_and_depthwise_layers_save_and_load(tmp_path):
    # Bidirectional / TimeDistributed / RNN(cell) nest their layer's config; DepthwiseConv2D's
    # config names depthwise_* (Keras's), so that from_config rebuilds it.
    x = np.array([[1, 2, 3, 0, 0], [4, 5, 6, 7, 8]])
    with tf.Graph().as_default():
        model = tf.keras.Sequential([
            tf.keras.layers.Embedding(10, 4, mask_zero=True, input_length=5),
            tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(3, return_sequences=True)),
            tf.keras.layers.TimeDistributed(tf.keras.layers.Dense(2)),
            tf.keras.layers.RNN(tf.keras.layers.GRUCell(2)),
            tf.keras.layers.Dense(1)])
        model.compile("adam", "mse")
        model.fit(x, np.array([[0.5], [1.0]]), epochs=2, verbose=0)
        before = model.predict(x)
        model.save(str(tmp_path / "rnn"))
    with tf.Graph().as_default():
        loaded = tf.keras.models.load_model(str(tmp_path / "rnn"))
        assert [type(layer).__name__ for layer in loaded.layers] == [
            "Embedding", "Bidirectional", "TimeDistributed", "RNN", "Dense"]
        np.testing.assert_array_equal(loaded.predict(x), before)
    images = np.arange(2 * 5 * 5 * 2, dtype=np.float32).reshape(2, 5, 5, 2) / 100
    with tf.Graph().as_default():
        model = tf.keras.Sequential([tf.keras.layers.DepthwiseConv2D(
            3, depth_multiplier=2, depthwise_initializer="ones", input_shape=(5, 5, 2))])
        model.compile("sgd", "mse")
        before = model.predict(images)
        config = model.layers[0].get_config()
        assert config["depth_multiplier"] == 2 and "filters" not in config
        assert config["depthwise_initializer"]["class_name"] == "Ones"
        model.save(str(tmp_path / "dw"))
    with tf.Graph().as_default():
        loaded = tf.keras.models.load_model(str(tmp_path / "dw"))
        assert loaded.layers[0].depth_multiplier == 2
        np.testing.assert_array_equal(loaded.predict(images), before)


def test_the_training_config_keeps_sample_weight_mode_and_weighted_metrics(tmp_path):
    x = np.arange(24, dtype=np.float32).reshape(2, 4, 3) / 24
    y = np.ones((2, 4, 1), np.float32)
    weights = np.array([[1.0, 1.0, 0.0, 0.5], [1.0, 0.0, 0.0, 1.0]], np.float32)
    with tf.Graph().as_default():
        model = tf.keras.Sequential([tf.keras.layers.TimeDistributed(
            tf.keras.layers.Dense(1), input_shape=(4, 3))])
        model.compile("sgd", "mse", sample_weight_mode="temporal", weighted_metrics=["mae"])
        before = model.evaluate(x, y, sample_weight=weights, verbose=0)
        names = model.metrics_names
        model.save(str(tmp_path / "m"))
    with tf.Graph().as_default():
        loaded = tf.keras.models.load_model(str(tmp_path / "m"))
        assert loaded.metrics_names == names == ["loss", "weighted_mean_absolute_error"]
        np.testing.assert_allclose(loaded.evaluate(x, y, sample_weight=weights, verbose=0),
                                   before, rtol=1e-6)
