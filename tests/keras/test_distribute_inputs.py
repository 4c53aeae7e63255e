"""tf.data datasets as Keras input (fit/evaluate/predict), on one device and split over the
replicas of a strategy; numbers from TF 2.21's tf_keras v1 loops in graph mode
(TF_USE_LEGACY_KERAS=1), which are TF 1.15's."""

import logging

import numpy as np
import pytest

import zps as tf

K = tf.keras
X = np.arange(24, dtype=np.float32).reshape(8, 3) / 10
Y = np.arange(8, dtype=np.float32).reshape(8, 1) / 4
TF_LOSS = [4.659961223602295, 2.5053588151931763]   # Dense(1), kernel ones, SGD(0.1), mse
TF_KERNEL = [0.657971978187561, 0.6415901780128479, 0.6252084970474243]


def dense_model(strategy=None):
    if strategy is None:
        return _dense()
    with strategy.scope():
        return _dense()


def _dense():
    model = K.Sequential([K.layers.Dense(1, input_shape=(3,), kernel_initializer="ones")])
    model.compile(K.optimizers.SGD(0.1), "mse", metrics=["mae"])
    return model


def batches(size, *arrays):
    return tf.data.Dataset.from_tensor_slices(arrays if len(arrays) > 1 else arrays[0]) \
        .batch(size)


def test_fit_evaluate_predict_on_a_dataset():
    model = dense_model()
    history = model.fit(batches(4, X, Y), epochs=2, verbose=0)
    np.testing.assert_allclose(history.history["loss"], TF_LOSS, rtol=1e-6)
    assert history.params["steps"] == 2
    np.testing.assert_allclose(model.get_weights()[0].ravel(), TF_KERNEL, rtol=1e-6)
    expected = model.evaluate(X, Y, batch_size=4, verbose=0)
    np.testing.assert_allclose(model.evaluate(batches(4, X, Y), verbose=0), expected, rtol=1e-6)
    prediction = model.predict(X)
    np.testing.assert_allclose(model.predict(batches(4, X)), prediction, rtol=1e-6)
    np.testing.assert_allclose(model.predict(batches(4, X, Y)), prediction, rtol=1e-6)   # y unused


def test_a_dataset_epoch_loss_is_the_mean_over_steps():
    # batches of 3, 3 and 2: TF 1.15 averages the loss over the steps, not the examples
    model = dense_model()
    history = model.fit(batches(3, X, Y), epochs=2, verbose=0)
    np.testing.assert_allclose(history.history["loss"], [2.358393053213755, 0.1294632265344262],
                               rtol=1e-6)
    np.testing.assert_allclose(history.history["mean_absolute_error"],
                               [1.3707656860351562, 0.294339656829834], rtol=1e-6)
    np.testing.assert_allclose(model.get_weights()[0].ravel(),
                               [0.4082591235637665, 0.34626665711402893, 0.2842741012573242],
                               rtol=1e-6)
    np.testing.assert_allclose(model.evaluate(batches(3, X, Y), verbose=0),
                               [0.10656954844792683, 0.31270376], rtol=1e-6)
    np.testing.assert_allclose(model.evaluate(batches(3, X, Y), steps=2, verbose=0),
                               [0.15121503, 0.37434372], rtol=1e-6)


def test_sample_weights_from_the_dataset():
    model = dense_model()
    history = model.fit(batches(4, X, Y, np.arange(8, dtype=np.float32)), verbose=0)
    np.testing.assert_allclose(history.history["loss"], [5.107237100601196], rtol=1e-6)
    np.testing.assert_allclose(model.get_weights()[0].ravel(),
                               [-1.226796269416809, -1.381547212600708, -1.5362982749938965],
                               rtol=1e-6)


def test_steps_per_epoch_reads_on_and_validation_starts_again():
    model = dense_model()
    history = model.fit(batches(4, X, Y).repeat(), epochs=2, steps_per_epoch=3, verbose=0,
                        validation_data=batches(4, X, Y))
    tf_history = {"loss": [3.8252615928649902, 1.6699999074141185],
                  "mean_absolute_error": [1.7678627967834473, 1.1609386205673218],
                  "val_loss": [1.7898404598236084, 1.3769049644470215],
                  "val_mean_absolute_error": [1.2448594570159912, 1.1065003871917725]}
    assert sorted(history.history) == sorted(tf_history)
    for name, value in tf_history.items():
        np.testing.assert_allclose(history.history[name], value, rtol=1e-6)


def test_running_out_with_steps_given_stops_training(caplog):
    model = dense_model()
    with caplog.at_level(logging.WARNING, logger="zps"):
        history = model.fit(batches(4, X, Y), epochs=3, steps_per_epoch=3, verbose=0)
    assert len(history.history["loss"]) == 1 and model.stop_training
    assert "Your dataset ran out of data; interrupting training" in caplog.text


def test_dataset_argument_errors_as_tf():
    model = dense_model()
    ds = batches(4, X, Y)
    with pytest.raises(ValueError, match="you should not specify a target"):
        model.fit(ds, Y, verbose=0)
    with pytest.raises(ValueError, match="`sample_weight` argument is not supported when input "
                                         "`x` is a dataset"):
        model.fit(ds, sample_weight=np.ones(8), verbose=0)
    with pytest.raises(ValueError, match="`validation_split` argument is not supported when "
                                         "input `x` is a dataset"):
        model.fit(ds, validation_split=0.5, verbose=0)
    for call in (lambda: model.fit(ds, batch_size=4, verbose=0),
                 lambda: model.evaluate(ds, batch_size=4, verbose=0),
                 lambda: model.predict(ds, batch_size=4)):
        with pytest.raises(ValueError, match="The `batch_size` argument must not be specified "
                                             "for the given input type"):
            call()
    with pytest.raises(ValueError, match="When passing an infinitely repeating dataset, you "
                                         "must specify the `steps_per_epoch` argument"):
        model.fit(ds.repeat(), verbose=0)
    with pytest.raises(ValueError, match="inputs only; training and evaluating need"):
        model.fit(batches(4, X), verbose=0)
    with pytest.raises(ValueError, match="Please provide model inputs as a list or tuple of 2 "
                                         "or 3 elements"):
        model.fit(tf.data.Dataset.from_tensor_slices((X, Y, Y, Y)).batch(4), verbose=0)


def test_datasets_split_over_replicas():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    model = dense_model(strategy)
    history = model.fit(batches(4, X, Y), epochs=2, verbose=0)
    np.testing.assert_allclose(history.history["loss"], TF_LOSS, rtol=1e-6)
    np.testing.assert_allclose(model.get_weights()[0].ravel(), TF_KERNEL, rtol=1e-6)
    np.testing.assert_allclose(model.evaluate(batches(4, X, Y), verbose=0),
                               [1.9350194931030273, 1.1713927], rtol=1e-6)
    np.testing.assert_allclose(model.predict(batches(4, X)).ravel()[[0, 7]],
                               [0.025383442640304565, 4.067401885986328], rtol=1e-6)
    with pytest.raises(ValueError, match="Batch size 3 cannot be sharded evenly across "
                                         "replicas 2"):
        model.fit(batches(3, X, Y).repeat(), steps_per_epoch=2, verbose=0)
    with pytest.raises(ValueError, match="Unable to get batched dataset from the input dataset"):
        model.fit(batches(4, X, Y).unbatch(), steps_per_epoch=2, verbose=0)


def test_a_short_last_batch_is_dropped_where_a_replica_gets_nothing():
    # 10 examples in batches of 4: per replica 2, 2 | 2, 2 | 2 and then none: TF's iterator
    # runs out there, so the epoch is the first 2 steps (here the one of TF_LOSS[0])
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    model = dense_model(strategy)
    x, y = np.concatenate([X, X[:2]]), np.concatenate([Y, Y[:2]])
    history = model.fit(batches(4, x, y), verbose=0)
    np.testing.assert_allclose(history.history["loss"], TF_LOSS[:1], rtol=1e-6)
