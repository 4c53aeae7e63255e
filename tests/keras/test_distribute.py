"""tf.keras under tf.distribute strategies (zps/keras/training_distributed.py): compile in a
strategy's scope, then fit/evaluate/predict split each global batch over the replicas. The
numbers are TF 2.21's tf_keras v1 loops (TF_USE_LEGACY_KERAS=1, graph mode, two logical CPUs,
MirroredStrategy(["/cpu:0", "/cpu:1"]), legacy optimizers), which run TF 1.15's code, or are
derived by hand where said."""

import json
import os

import numpy as np
import pytest

import zps as tf
from zps.distribute import values

K = tf.keras
X = np.arange(24, dtype=np.float32).reshape(8, 3) / 10
Y = np.arange(8, dtype=np.float32).reshape(8, 1) / 4

# TF's numbers for a Dense(1) with kernel ones trained on X, Y: SGD(0.1), mse, metrics mae,
# batch_size 4, 2 epochs, no shuffling (the same as on one device).
TF_LOSS = [4.659961223602295, 2.5053588151931763]
TF_MAE = [1.9488248825073242, 1.5392816066741943]
TF_KERNEL = [0.657971978187561, 0.6415901780128479, 0.6252084970474243]
TF_BIAS = -0.16381728649139404
TF_EVALUATE = [1.9350194931030273, 1.1713927]
TF_PREDICT = [0.025383442640304565, 0.6028146743774414, 1.1802458763122559, 1.7576769590377808,
              2.3351082801818848, 2.912539482116699, 3.4899706840515137, 4.067401885986328]


def mirrored():
    return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


def dense_model(strategy, optimizer=None, metrics=("mae",)):
    with strategy.scope():
        model = K.Sequential([K.layers.Dense(1, input_shape=(3,), kernel_initializer="ones")])
        model.compile(optimizer or K.optimizers.SGD(0.1), "mse", metrics=list(metrics))
    return model


def check_tf_run(model, history):
    np.testing.assert_allclose(history.history["loss"], TF_LOSS, rtol=1e-6)
    np.testing.assert_allclose(history.history["mean_absolute_error"], TF_MAE, rtol=1e-6)
    kernel, bias = model.get_weights()
    np.testing.assert_allclose(kernel.ravel(), TF_KERNEL, rtol=1e-6)
    np.testing.assert_allclose(bias, [TF_BIAS], rtol=1e-6)


def test_mirrored_fit_evaluate_predict_equal_tf():
    strategy = mirrored()
    model = dense_model(strategy)
    assert all(isinstance(w, values.MirroredVariable) for w in model.weights)
    check_tf_run(model, model.fit(X, Y, batch_size=4, epochs=2, verbose=0, shuffle=False))
    np.testing.assert_allclose(model.evaluate(X, Y, batch_size=4, verbose=0), TF_EVALUATE,
                               rtol=1e-6)
    np.testing.assert_allclose(model.predict(X, batch_size=4).ravel(), TF_PREDICT, rtol=1e-6)
    # every replica's copy was updated alike
    session = K.backend.get_session()
    for w in model.weights:
        first, second = session.run(list(w.values))
        np.testing.assert_array_equal(first, second)


def test_one_step_splits_the_batch_and_sums_the_scaled_gradients():
    # By hand: kernel and bias 0, x = 1..4, y = x. Replica 0 takes rows 1, 2 and replica 1 rows
    # 3, 4; each loss is its mean squared error / 2 (2.5 / 2 and 12.5 / 2: 7.5 in all), and
    # the summed gradients are those of the whole batch: dw = -2/4 * sum(x * y) = -15,
    # db = -2/4 * sum(y) = -5, so SGD(0.1) gives w = 1.5, b = 0.5.
    x = np.arange(1, 5, dtype=np.float32).reshape(4, 1)
    with mirrored().scope():
        model = K.Sequential([K.layers.Dense(1, input_shape=(1,), kernel_initializer="zeros")])
        model.compile(K.optimizers.SGD(0.1), "mse")
    history = model.fit(x, x, batch_size=4, verbose=0)
    assert history.history["loss"] == [7.5]
    np.testing.assert_allclose([w.item() for w in model.get_weights()], [1.5, 0.5], rtol=1e-6)
    assert model.predict(x, batch_size=4).ravel().tolist() == [2.0, 3.5, 5.0, 6.5]


def _classifier_data():
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (8, 3)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.randint(0, 3, 8)]
    k1 = rng.uniform(-0.5, 0.5, (3, 4)).astype(np.float32)
    k2 = rng.uniform(-0.5, 0.5, (4, 3)).astype(np.float32)
    return x, y, k1, k2


# (optimizer, TF's loss of 3 epochs, evaluate [loss, acc], last layer's bias after them)
TF_CLASSIFIER = [
    (lambda: K.optimizers.Adam(0.1),
     [1.0567064881324768, 0.8787405788898468, 0.7602580189704895], [0.6925932168960571, 0.75],
     [-0.20478834211826324, 0.30961284041404724, -0.3239801824092865]),
    (lambda: tf.train.AdamOptimizer(0.1),
     [1.056685447692871, 0.8787135183811188, 0.7602344155311584], [0.6925691366195679, 0.75],
     [-0.20484183728694916, 0.3096373677253723, -0.32394272089004517]),
    (lambda: tf.train.MomentumOptimizer(0.1, 0.9),
     [1.1037753820419312, 1.0767848491668701, 1.0380895137786865], [1.0070178508758545, 0.625],
     [0.02708267979323864, 0.11421584337949753, -0.14129853248596191]),
]


@pytest.mark.parametrize("index", range(len(TF_CLASSIFIER)), ids=["keras_adam", "train_adam",
                                                                   "train_momentum"])
def test_keras_and_tf_train_optimizers_equal_tf(index):
    make_optimizer, tf_loss, tf_evaluate, tf_bias = TF_CLASSIFIER[index]
    x, y, k1, k2 = _classifier_data()
    with mirrored().scope():
        model = K.Sequential([
            K.layers.Dense(4, activation="relu", input_shape=(3,),
                           kernel_initializer=K.initializers.Constant(k1)),
            K.layers.Dense(3, activation="softmax", kernel_initializer=K.initializers.Constant(k2))])
        model.compile(make_optimizer(), "categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(x, y, batch_size=4, epochs=3, verbose=0, shuffle=False)
    np.testing.assert_allclose(history.history["loss"], tf_loss, rtol=1e-6)
    np.testing.assert_allclose(model.evaluate(x, y, batch_size=8, verbose=0), tf_evaluate,
                               rtol=1e-6)
    np.testing.assert_allclose(model.get_weights()[3], tf_bias, rtol=1e-5, atol=1e-7)


def test_several_outputs_report_whole_batch_losses_and_metrics():
    with mirrored().scope():
        x = K.Input((3,))
        a = K.layers.Dense(1, kernel_initializer="ones", name="a")(x)
        b = K.layers.Dense(1, kernel_initializer="zeros", name="b")(x)
        model = K.Model(x, [a, b])
        model.compile(K.optimizers.SGD(0.1), "mse", metrics=["mae"], loss_weights=[1.0, 0.5])
    history = model.fit(X, [Y, 2 * Y], batch_size=4, verbose=0, shuffle=False)
    tf_history = {"loss": 6.33150315284729, "a_loss": 4.659961223602295,
                  "b_loss": 3.343083620071411, "a_mean_absolute_error": 1.9488248825073242,
                  "b_mean_absolute_error": 1.5542500019073486}
    assert sorted(history.history) == sorted(tf_history)
    for name, value in tf_history.items():
        np.testing.assert_allclose(history.history[name], [value], rtol=1e-6)
    np.testing.assert_allclose(model.evaluate(X, [Y, 2 * Y], batch_size=4, verbose=0),
                               [5.4740286, 5.432046, 0.08396512, 2.1631944, 0.25571263],
                               rtol=1e-6)


def test_sample_weight_and_validation_data():
    model = dense_model(mirrored())
    history = model.fit(X, Y, batch_size=4, verbose=0, shuffle=False,
                        sample_weight=np.arange(8.0))
    np.testing.assert_allclose(history.history["loss"], [5.107237100601196], rtol=1e-6)
    np.testing.assert_allclose(history.history["mean_absolute_error"], [1.067237377166748],
                               rtol=1e-6)
    np.testing.assert_allclose(model.get_weights()[0].ravel(),
                               [-1.22679603099823, -1.381547212600708, -1.5362982749938965],
                               rtol=1e-6)
    history = model.fit(X, Y, batch_size=4, verbose=0, shuffle=False,
                        validation_data=(X[:4], Y[:4]))
    assert history.history["val_loss"] == pytest.approx(
        [model.evaluate(X[:4], Y[:4], batch_size=4, verbose=0)[0]], rel=1e-6)


def test_short_last_batch_continues_into_the_next_epoch_as_tf():
    # TF 1.15 repeats the arrays `epochs` times before batching them: with 10 samples and
    # batches of 4, epoch 1 is [0-3] [4-7] [8 9 0 1], epoch 2 [2-5] [6-9] (then out of data).
    model = dense_model(mirrored())
    x, y = np.concatenate([X, X[:2]]), np.concatenate([Y, Y[:2]])
    history = model.fit(x, y, batch_size=4, epochs=2, verbose=0, shuffle=False)
    np.testing.assert_allclose(history.history["loss"], [3.470376412073771, 1.62918596342206],
                               rtol=1e-6)
    np.testing.assert_allclose(model.get_weights()[0].ravel(),
                               [0.3156999945640564, 0.2918236553668976, 0.2679474353790283],
                               rtol=1e-6)


def test_train_and_test_on_batch_split_outside_the_scope_only():
    strategy = mirrored()
    model = dense_model(strategy)
    with strategy.scope():
        for call in (lambda: model.train_on_batch(X, Y), lambda: model.test_on_batch(X, Y),
                     lambda: model.predict_on_batch(X)):
            with pytest.raises(NotImplementedError, match="is not supported for models "
                                                          "distributed with tf.distribute"):
                call()
    # outside the scope: one step over the whole batch, 4 examples on each replica
    before = model.test_on_batch(X, Y)   # (mean(((x @ [1, 1, 1]) - y) ** 2): by hand)
    np.testing.assert_allclose(before, [8.848750114440918, 2.575000047683716], rtol=1e-6)
    assert model.train_on_batch(X, Y) == pytest.approx(before)
    np.testing.assert_allclose(model.predict_on_batch(X).ravel(), model.predict(X, batch_size=8)
                               .ravel(), rtol=1e-6)
    # 3 examples: 2 on replica 0, 1 on replica 1 (TF 1.15's rebatching rounds the batch up)
    np.testing.assert_allclose(model.predict_on_batch(X[:3]).ravel(),
                               model.predict(X, batch_size=8).ravel()[:3], rtol=1e-6)


@pytest.mark.parametrize("make", [
    lambda: tf.distribute.OneDeviceStrategy("/cpu:0"),
    lambda: tf.distribute.experimental.CentralStorageStrategy(["/cpu:0", "/cpu:1"]),
    lambda: tf.distribute.experimental.ParameterServerStrategy(),   # no cluster: local
], ids=["one_device", "central_storage", "local_parameter_server"])
def test_other_strategies_train_as_one_device(make):
    strategy = make()
    model = dense_model(strategy)
    check_tf_run(model, model.fit(X, Y, batch_size=4, epochs=2, verbose=0, shuffle=False))
    np.testing.assert_allclose(model.predict(X, batch_size=4).ravel(), TF_PREDICT, rtol=1e-6)


def test_parameter_server_strategy_over_a_cluster_is_refused(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"worker": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]},
        "task": {"type": "worker", "index": 0}}))
    strategy = tf.distribute.experimental.ParameterServerStrategy()
    with strategy.scope():
        model = K.Sequential([K.layers.Dense(1, input_shape=(3,))])
        with pytest.raises(NotImplementedError, match="distribute coordinator"):
            model.compile("sgd", "mse")


def test_lr_scheduler_changes_every_replica_and_needs_a_keras_optimizer():
    model = dense_model(mirrored())
    schedule = K.callbacks.LearningRateScheduler(lambda epoch: 0.1 / (epoch + 1))
    history = model.fit(X, Y, batch_size=4, epochs=3, verbose=0, shuffle=False,
                        callbacks=[schedule])
    weights = model.get_weights()
    with tf.Graph().as_default():   # the same run on one device
        alone = K.Sequential([K.layers.Dense(1, input_shape=(3,), kernel_initializer="ones")])
        alone.compile(K.optimizers.SGD(0.1), "mse", metrics=["mae"])
        expected = alone.fit(X, Y, batch_size=4, epochs=3, verbose=0, shuffle=False,
                             callbacks=[schedule])
        np.testing.assert_allclose(history.history["loss"], expected.history["loss"], rtol=1e-5)
        for got, want in zip(weights, alone.get_weights()):
            np.testing.assert_allclose(got, want, rtol=1e-5)
    assert history.history["lr"] == pytest.approx([0.1, 0.05, 0.1 / 3])
    with tf.Graph().as_default():
        model = dense_model(mirrored(), tf.train.GradientDescentOptimizer(0.1))
        with pytest.raises(ValueError, match="You must specify a Keras Optimizer V2 when "
                                             "using .* callback with DistributionStrategy"):
            model.fit(X, Y, batch_size=4, verbose=0, callbacks=[schedule])


def test_save_weights_save_and_load_model(tmp_path):
    strategy = mirrored()
    model = dense_model(strategy, K.optimizers.Adam(0.1))
    model.fit(X, Y, batch_size=4, epochs=2, verbose=0, shuffle=False)
    prediction = model.predict(X, batch_size=4)
    with K.backend.get_session().as_default():
        model.save_weights(str(tmp_path / "weights"))
    model.save(str(tmp_path / "model"))
    model.set_weights([np.zeros((3, 1), np.float32), np.zeros(1, np.float32)])
    np.testing.assert_array_equal(model.predict(X, batch_size=4), np.zeros((8, 1)))   # both
    with K.backend.get_session().as_default():
        model.load_weights(str(tmp_path / "weights"))
    np.testing.assert_array_equal(model.predict(X, batch_size=4), prediction)
    next_epoch = model.fit(X, Y, batch_size=4, verbose=0, shuffle=False).history["loss"]
    assert os.path.isdir(tmp_path / "model")
    with tf.Graph().as_default():   # loaded without a strategy: plain variables
        plain = K.models.load_model(str(tmp_path / "model"))
        assert not values.is_distributed_variable(plain.weights[0])
        np.testing.assert_allclose(plain.predict(X), prediction, rtol=1e-6)
    with tf.Graph().as_default():   # loaded in a scope: distributed, optimizer state and all
        again = mirrored()
        with again.scope():
            loaded = K.models.load_model(str(tmp_path / "model"))
        assert isinstance(loaded.weights[0], values.MirroredVariable)
        np.testing.assert_allclose(loaded.predict(X, batch_size=4), prediction, rtol=1e-6)
        history = loaded.fit(X, Y, batch_size=4, verbose=0, shuffle=False)
        np.testing.assert_allclose(history.history["loss"], next_epoch, rtol=1e-6)


def test_compile_errors_as_tf():
    strategy = mirrored()
    outside = K.Sequential([K.layers.Dense(1, input_shape=(3,))])
    with strategy.scope():
        with pytest.raises(ValueError, match=r"Variable \(.*dense/kernel.*\) was not created in "
                                             "the distribution strategy scope"):
            outside.compile("sgd", "mse")
        unbuilt = K.Sequential([K.layers.Dense(1)])
        with pytest.raises(ValueError, match="created without `input_shape`/`input_dim` set in "
                                             "its first layer or a subclassed model"):
            unbuilt.compile("sgd", "mse")
        model = K.Sequential([K.layers.Dense(1, input_shape=(3,))])
        with pytest.raises(NotImplementedError, match="sample_weight_mode is not supported "
                                                      "with tf.distribute.Strategy"):
            model.compile("sgd", "mse", sample_weight_mode="temporal")
        with pytest.raises(NotImplementedError, match="weighted_metrics is not supported"):
            model.compile("sgd", "mse", weighted_metrics=["mae"])


def test_fit_evaluate_predict_errors_as_tf():
    strategy = mirrored()
    model = dense_model(strategy)
    # (batch_size 3 is no error: TF 1.15's rebatching reads 2 a replica, see test_audit.py)
    with pytest.raises(ValueError, match="The number of samples 6 is not divisible by batch "
                                         "size 4"):
        model.evaluate(X[:6], Y[:6], batch_size=4, verbose=0)
    with pytest.raises(ValueError, match="The number of samples 6 is not divisible by batch "
                                         "size 4"):
        model.predict(X[:6], batch_size=4)
    with pytest.raises(ValueError, match="validation_split argument is not supported with "
                                         "distribution strategies"):
        model.fit(X, Y, batch_size=4, verbose=0, validation_split=0.5)
    with pytest.raises(NotImplementedError, match="`class_weight` is currently not supported "
                                                  "when using tf.distribute.Strategy"):
        model.fit(X, Y, batch_size=4, verbose=0, class_weight={0: 1.0})
    with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
        with pytest.raises(RuntimeError, match="Mixing different tf.distribute.Strategy "
                                               "objects"):
            model.fit(X, Y, batch_size=4, verbose=0)
    assert model.get_weights()[0].ravel().tolist() == [1.0, 1.0, 1.0]   # nothing trained


def test_default_batch_is_the_samples_up_to_32():
    # TF: min(samples, 32) when batch_size is not given: here one batch of 8 (4 a replica)
    model = dense_model(mirrored())
    history = model.fit(X, Y, verbose=0, shuffle=False)
    assert history.params["steps"] == 1
    np.testing.assert_allclose(history.history["loss"], [8.848750114440918], rtol=1e-6)


def test_generators_are_refused_as_tf():
    model = dense_model(mirrored())
    for method in ("fit_generator", "evaluate_generator", "predict_generator"):
        with pytest.raises(NotImplementedError, match="`%s` is not supported for models "
                                                      "compiled with tf.distribute" % method):
            getattr(model, method)(iter([(X, Y)]), steps=1) if method != "fit_generator" \
                else model.fit_generator(iter([(X, Y)]), steps_per_epoch=1)


@pytest.mark.parametrize("make", [lambda: K.optimizers.SGD(0.1),
                                  lambda: tf.train.GradientDescentOptimizer(0.1)],
                         ids=["keras", "tf_train"])
def test_an_optimizer_made_outside_the_scope_is_fine(make):
    # TF refuses layers' variables made outside the scope, not the optimizer (its variables
    # are made when the model is compiled or trained, in the scope)
    optimizer = make()
    model = dense_model(mirrored(), optimizer)
    history = model.fit(X, Y, batch_size=4, verbose=0, shuffle=False)
    np.testing.assert_allclose(history.history["loss"], TF_LOSS[:1], rtol=1e-6)
    # by hand (numpy): two SGD steps on the mean squared error of rows 0-3, then 4-7
    w, b = np.ones((3, 1)), 0.0
    for rows in (slice(0, 4), slice(4, 8)):
        error = X[rows] @ w + b - Y[rows]
        w, b = w - 0.1 * 2 * X[rows].T @ error / 4, b - 0.1 * 2 * error.mean()
    kernel, bias = model.get_weights()
    np.testing.assert_allclose(kernel, w, rtol=1e-5)
    np.testing.assert_allclose(bias, [b], rtol=1e-5)


def test_batch_normalization_trains_on_each_replicas_statistics():
    # Each replica normalizes with its own half batch, as TF's (different from one device).
    # (TF reads the moving statistics as the mean of the replicas' copies; zps's are not
    # ON_READ yet, see the module docstring of zps/keras/training_distributed.py.)
    with mirrored().scope():
        model = K.Sequential([K.layers.Dense(2, input_shape=(3,), kernel_initializer="ones"),
                              K.layers.BatchNormalization(),
                              K.layers.Dense(1, kernel_initializer="ones")])
        model.compile(K.optimizers.SGD(0.1), "mse")
    history = model.fit(X, Y, batch_size=4, verbose=0, shuffle=False)
    np.testing.assert_allclose(history.history["loss"], [2.8257811069488525], rtol=1e-6)
    kernel, bias, gamma, beta, kernel_1, bias_1 = K.backend.batch_get_value(
        model.trainable_weights)
    np.testing.assert_allclose(kernel.ravel(), [0.9993041, 0.9993041, 0.9993042, 0.9993042,
                                                0.9993042, 0.9993042], rtol=1e-6)
    np.testing.assert_allclose(bias, [6.258488e-08] * 2, rtol=1e-4)
    np.testing.assert_allclose(gamma, [0.54447144] * 2, rtol=1e-6)
    np.testing.assert_allclose(beta, [0.22620475] * 2, rtol=1e-6)
    np.testing.assert_allclose(kernel_1.ravel(), [0.5625609] * 2, rtol=1e-6)
    np.testing.assert_allclose(bias_1, [0.31619284], rtol=1e-6)


def test_regularization_losses_per_replica_equal_tf():
    # The kernel's L2 loss is taken from each replica's copy of the kernel (TF's callable
    # losses), the activity loss from each replica's own outputs; once each in the total.
    def regularized():
        model = K.Sequential([K.layers.Dense(1, input_shape=(3,), kernel_initializer="ones",
                                             kernel_regularizer="l2",
                                             activity_regularizer="l2")])
        model.compile(K.optimizers.SGD(0.1), "mse")
        return model
    with mirrored().scope():
        model = regularized()
    history = model.fit(X, Y, batch_size=4, verbose=0, shuffle=False)
    tf_kernel = [-0.07524669170379639, -0.15373337268829346, -0.23221999406814575]
    np.testing.assert_allclose(history.history["loss"], [4.712824106216431], rtol=1e-6)
    np.testing.assert_allclose(model.get_weights()[0].ravel(), tf_kernel, rtol=1e-5)
    with tf.Graph().as_default():   # on one device: TF's numbers too
        alone = regularized()
        history = alone.fit(X, Y, batch_size=4, verbose=0, shuffle=False)
        np.testing.assert_allclose(history.history["loss"], [4.712824106216431], rtol=1e-6)
        np.testing.assert_allclose(alone.get_weights()[0].ravel(), tf_kernel, rtol=1e-5)
