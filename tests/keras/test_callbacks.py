"""tf.keras.callbacks in fit / evaluate / predict: the order of the hooks and their logs, History,
EarlyStopping, ModelCheckpoint, the learning-rate callbacks, CSVLogger, TerminateOnNaN and
TensorBoard, against values worked out by hand or taken from TF's Keras (tf_keras in graph mode,
TF_USE_LEGACY_KERAS=1); and the logs of a model with two inputs and two outputs."""

import glob
import os
import re

import numpy as np
import pytest

import zps as tf

K = tf.keras
cbks = K.callbacks



def _data(n=6):
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2) / 10
    return x, x @ np.array([[1.0], [-1.0]], np.float32) + 0.5


def _linear(lr=0.1):
    model = K.Sequential([K.layers.Dense(1, input_shape=(2,), kernel_initializer="zeros")])
    model.compile(K.optimizers.SGD(lr), "mse")
    return model


def _scripted(key, values):
    """A callback that sets logs[key] to values[epoch] at each epoch's end (placed before the
    callback under test, which then sees the scripted value)."""
    def set_value(epoch, logs):
        logs[key] = values[epoch]
    return cbks.LambdaCallback(on_epoch_end=set_value)


class Recorder(cbks.Callback):
    """Records each hook called: (name, [batch or epoch], sorted names in its logs)."""

    def __init__(self):
        super().__init__()
        self.calls = []


def _recording(name):
    def hook(self, *args, logs=None):
        numbered = name.endswith(("_begin", "_end")) and ("batch" in name or "epoch" in name)
        logs = args[-1] if args and isinstance(args[-1], dict) else logs
        self.calls.append((name, *args[:1 if numbered else 0], sorted(logs or {})))
    return hook


for _name in ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
              "on_train_batch_begin", "on_train_batch_end", "on_test_begin", "on_test_end",
              "on_test_batch_begin", "on_test_batch_end", "on_predict_begin", "on_predict_end",
              "on_predict_batch_begin", "on_predict_batch_end"):
    setattr(Recorder, _name, _recording(_name))


def test_the_hooks_of_fit_evaluate_and_predict_in_order():
    x, y = _data(n=5)
    model = _linear()
    recorder = Recorder()
    history = model.fit(x, y, batch_size=3, epochs=1, verbose=0, shuffle=False,
                        validation_data=(x[:2], y[:2]), callbacks=[recorder])
    assert history is model.history and isinstance(history, cbks.History)
    batch, logs = ["batch", "size"], ["batch", "loss", "size"]
    assert recorder.calls == [
        ("on_train_begin", []), ("on_epoch_begin", 0, []),
        ("on_train_batch_begin", 0, batch), ("on_train_batch_end", 0, logs),
        ("on_train_batch_begin", 1, batch), ("on_train_batch_end", 1, logs),
        ("on_test_begin", []), ("on_test_batch_begin", 0, batch),
        ("on_test_batch_end", 0, logs), ("on_test_end", []),
        ("on_epoch_end", 0, ["loss", "val_loss"]), ("on_train_end", [])]
    assert recorder.params["epochs"] == 1 and recorder.params["samples"] == 5
    assert recorder.params["metrics"] == ["loss", "val_loss"] and recorder.model is model
    recorder.calls = []
    model.evaluate(x, y, batch_size=4, verbose=0, callbacks=[recorder])
    model.predict(x, batch_size=5, callbacks=[recorder])
    assert recorder.calls == [
        ("on_test_begin", []), ("on_test_batch_begin", 0, batch), ("on_test_batch_end", 0, logs),
        ("on_test_batch_begin", 1, batch), ("on_test_batch_end", 1, logs), ("on_test_end", []),
        ("on_predict_begin", []), ("on_predict_batch_begin", 0, batch),
        ("on_predict_batch_end", 0, ["batch", "outputs", "size"]), ("on_predict_end", [])]


def test_history_and_batch_logs_are_the_losses_before_each_step():
    x, y = _data(n=5)
    model = _linear()
    batches = []
    log = cbks.LambdaCallback(on_batch_end=lambda batch, logs: batches.append(dict(logs)))
    history = model.fit(x, y, batch_size=3, epochs=2, verbose=0, shuffle=False, callbacks=[log],
                        validation_data=(x, y))
    w, b, want = np.zeros((2, 1)), np.zeros(1), []
    for _ in range(2):
        for start in (0, 3):
            xb, yb = x[start:start + 3], y[start:start + 3]
            error = xb @ w + b - yb
            want.append(np.mean(error ** 2))
            w, b = w - 0.1 * xb.T @ (2 * error) / len(xb), b - 0.1 * np.sum(2 * error) / len(xb)
    assert [(d["batch"], d["size"]) for d in batches] == [(0, 3), (1, 2)] * 2
    np.testing.assert_allclose([d["loss"] for d in batches], want, rtol=1e-5)
    np.testing.assert_allclose(history.history["loss"],
                               [(3 * want[0] + 2 * want[1]) / 5, (3 * want[2] + 2 * want[3]) / 5],
                               rtol=1e-5)
    assert history.history["val_loss"][-1] == model.evaluate(x, y, batch_size=3, verbose=0)


def test_logs_of_two_inputs_and_two_outputs_equal_tf_keras():
    # tf_keras 2.21, graph mode, the same model, data and initial weights (SGD(0.1)).
    rng = np.random.RandomState(0)
    x1, x2 = rng.randn(10, 3).astype("f"), rng.randn(10, 2).astype("f")
    ya, yb = rng.randn(10, 1).astype("f"), rng.randint(0, 2, (10, 1)).astype("f")
    a, b = K.Input((3,), name="a"), K.Input((2,), name="b")
    hidden = K.layers.Dense(4, activation="relu", kernel_initializer=K.initializers.Constant(0.3))
    h = K.layers.Concatenate()([hidden(a), b])
    out1 = K.layers.Dense(1, name="reg", kernel_initializer="ones")(h)
    out2 = K.layers.Dense(1, activation="sigmoid", name="cls",
                          kernel_initializer=K.initializers.Constant(-0.2))(h)
    model = K.Model([a, b], [out1, out2])
    model.compile(K.optimizers.SGD(0.1), {"reg": "mse", "cls": "binary_crossentropy"},
                  loss_weights={"reg": 1.0, "cls": 0.5}, metrics={"cls": ["accuracy"]})
    assert model.metrics_names == ["loss", "reg_loss", "cls_loss", "cls_acc"]
    batches = []
    log = cbks.LambdaCallback(on_batch_end=lambda batch, logs: batches.append(dict(logs)))
    history = model.fit({"a": x1, "b": x2}, {"reg": ya, "cls": yb}, batch_size=4, epochs=2,
                        verbose=0, shuffle=False, callbacks=[log],
                        validation_data=([x1, x2], [ya, yb]))
    # A batch's loss is its own; the output losses and metrics are running means.
    want = [[16.7183837890625, 16.228275299072266, 0.9802186489105225, 0.25],
            [2.961982011795044, 9.389509201049805, 0.9013472199440002, 0.125],
            [0.5582943558692932, 6.347694396972656, 0.7970507740974426, 0.3]]
    for got, values in zip(batches, want):
        np.testing.assert_allclose([got[k] for k in model.metrics_names], values, rtol=1e-6)
    want = {"loss": [7.983805191516876, 1.1879276394844056],
            "reg_loss": [6.347694396972656, 0.6997708678245544],
            "cls_loss": [0.7970507740974426, 0.6982870697975159], "cls_acc": [0.3, 0.3],
            "val_loss": [1.3885481357574463, 0.6533538103103638], "val_cls_acc": [0.3, 0.4]}
    for name, values in want.items():
        np.testing.assert_allclose(history.history[name], values, rtol=1e-6, err_msg=name)
    # tf_keras's val_<output>_loss in fit differ from its evaluate's (a quirk of its metric
    # state); zps's are evaluate's values on the validation data.
    np.testing.assert_allclose(model.evaluate([x1, x2], [ya, yb], batch_size=4, verbose=0),
                               [0.6533538, 0.2521291, 0.6828017, 0.4], rtol=1e-6)
    assert [history.history["val_" + k][-1] for k in model.metrics_names] == \
        model.evaluate([x1, x2], [ya, yb], batch_size=4, verbose=0)
    predictions = model.predict({"a": x1, "b": x2})
    assert [p.shape for p in predictions] == [(10, 1), (10, 1)]

    def batches():   # the batches of 4, 4 and 2 again, from a generator
        while True:
            for part in (slice(0, 4), slice(4, 8), slice(8, 10)):
                yield [x1[part], x2[part]], [ya[part], yb[part]]
    # evaluate_generator's loss is the mean over steps; fit_generator's is weighted by batch size.
    np.testing.assert_allclose(model.evaluate_generator(batches(), steps=3),
                               [0.59353, 0.2521291, 0.6828017, 0.4], rtol=1e-6)
    history = model.fit_generator(batches(), steps_per_epoch=3, epochs=1, verbose=0)
    want = {"loss": [0.6387434601783752], "reg_loss": [0.2511402666568756],
            "cls_loss": [0.6852928996086121], "cls_acc": [0.4]}
    for name, values in want.items():
        np.testing.assert_allclose(history.history[name], values, rtol=1e-6, err_msg=name)


def test_stop_training_from_a_batch_ends_the_epoch_and_training():
    x, y = _data(n=6)
    model = _linear()

    def stop(batch, logs):
        if batch == 1:
            model.stop_training = True
    seen = []
    history = model.fit(x, y, batch_size=2, epochs=5, verbose=0, callbacks=[
        cbks.LambdaCallback(on_batch_end=stop),
        cbks.LambdaCallback(on_batch_begin=lambda batch, logs: seen.append(batch))])
    assert seen == [0, 1] and history.epoch == [0]


@pytest.mark.parametrize("kwargs, values, stopped, best", [
    # val_loss 1.0, 0.9 (best), 0.95, 0.91: two epochs without improvement -> stop at epoch 3
    (dict(patience=2), [1.0, 0.9, 0.95, 0.91, 0.5, 0.4], 3, 0.9),
    # 0.9 improves on 1.0 by less than min_delta: the best stays 1.0 and epoch 2 stops it
    (dict(patience=2, min_delta=0.2), [1.0, 0.9, 0.95, 0.91, 0.5, 0.4], 2, 1.0),
    # nothing beats the baseline 0.5
    (dict(patience=3, baseline=0.5), [1.0, 0.9, 0.8, 0.7, 0.6, 0.55], 2, 0.5),
    # "acc" in the monitor's name: higher is better in mode "auto"
    (dict(monitor="val_acc", patience=1), [0.5, 0.6, 0.6, 0.7, 0.8, 0.9], 2, 0.6),
    (dict(patience=1, mode="max"), [0.5, 0.6, 0.4, 0.7, 0.8, 0.9], 2, 0.6),
])
def test_early_stopping_at_the_epoch_its_rule_gives(kwargs, values, stopped, best):
    x, y = _data()
    model = _linear()
    stop = cbks.EarlyStopping(**kwargs)
    history = model.fit(x, y, epochs=6, verbose=0, callbacks=[
        _scripted(kwargs.get("monitor", "val_loss"), values), stop])
    assert history.epoch == list(range(stopped + 1))
    assert stop.stopped_epoch == stopped and stop.best == best


def test_early_stopping_restores_the_best_weights(capsys):
    x, y = _data()
    model = _linear()
    weights = []
    keep = cbks.LambdaCallback(on_epoch_end=lambda epoch, logs: weights.append(
        model.get_weights()))
    model.fit(x, y, epochs=6, verbose=0, callbacks=[
        keep, _scripted("loss", [3.0, 1.0, 2.0, 2.0, 0.0, 0.0]),
        cbks.EarlyStopping("loss", patience=2, restore_best_weights=True, verbose=1)])
    assert len(weights) == 4
    for got, want in zip(model.get_weights(), weights[1]):
        np.testing.assert_array_equal(got, want)
    assert capsys.readouterr().out == ("Restoring model weights from the end of the best epoch.\n"
                                       "Epoch 00004: early stopping\n")


def test_model_checkpoint_names_and_save_best_only(tmp_path):
    x, y = _data()
    model = _linear()
    pattern = str(tmp_path / "w.{epoch:02d}-{val_loss:.2f}")
    history = model.fit(x, y, epochs=3, verbose=0, validation_data=(x, y), callbacks=[
        cbks.ModelCheckpoint(pattern, save_weights_only=True)])
    want = sorted("w.%02d-%.2f.index" % (epoch + 1, loss)
                  for epoch, loss in enumerate(history.history["val_loss"]))
    assert sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / "*.index"))) == want
    # save_best_only: saved when the monitor improves; period: every other epoch.
    best = str(tmp_path / "best-{epoch}")
    model.fit(x, y, epochs=5, verbose=0, callbacks=[
        _scripted("val_loss", [1.0, 2.0, 0.5, 0.7, 0.4]),
        cbks.ModelCheckpoint(best, save_best_only=True, save_weights_only=True),
        cbks.ModelCheckpoint(str(tmp_path / "every2-{epoch}"), period=2)])
    assert sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / "best-*.index"))) == \
        ["best-1.index", "best-3.index", "best-5.index"]
    assert sorted(os.listdir(tmp_path / "every2-2")) == ["model.json", "weights.safetensors"]
    assert sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / "every2-*"))) == \
        ["every2-2", "every2-4"]
    # The weights saved at the last epoch are the model's.
    saved = tf.train.load_checkpoint(str(tmp_path / "best-5"))
    np.testing.assert_array_equal(saved.get_tensor("dense/kernel"), model.get_weights()[0])


def test_model_checkpoint_says_which_log_is_missing(tmp_path):
    model = _linear()
    with pytest.raises(KeyError, match=r"no 'val_loss'.*\['loss'\]"):
        model.fit(*_data(), verbose=0, callbacks=[
            cbks.ModelCheckpoint(str(tmp_path / "{val_loss}"))])


def test_learning_rate_scheduler_sets_the_optimizers_variable():
    x, y = _data(n=4)
    model = _linear(lr=0.5)
    history = model.fit(x, y, batch_size=4, epochs=3, verbose=0, shuffle=False, callbacks=[
        cbks.LearningRateScheduler(lambda epoch: 0.1 * 0.5 ** epoch)])
    w, b = np.zeros((2, 1)), np.zeros(1)
    for epoch in range(3):   # one batch an epoch, at that epoch's rate
        error = x @ w + b - y
        lr = 0.1 * 0.5 ** epoch
        w, b = w - lr * x.T @ (2 * error) / 4, b - lr * np.sum(2 * error) / 4
    np.testing.assert_allclose(model.get_weights()[0], w, rtol=1e-5)
    np.testing.assert_allclose(model.get_weights()[1], b, rtol=1e-5)
    np.testing.assert_allclose(history.history["lr"], [0.1, 0.05, 0.025], rtol=1e-7)
    assert model.optimizer.lr.name == "SGD/learning_rate:0"
    # schedule(epoch, lr): the current rate is given.
    history = model.fit(x, y, epochs=2, verbose=0, callbacks=[
        cbks.LearningRateScheduler(lambda epoch, lr: lr * 2.0)])
    np.testing.assert_allclose(history.history["lr"], [0.05, 0.1], rtol=1e-6)
    with pytest.raises(ValueError, match="should be float"):
        model.fit(x, y, verbose=0, callbacks=[cbks.LearningRateScheduler(lambda e: "fast")])


def test_reduce_lr_on_plateau():
    x, y = _data()
    model = _linear(lr=0.1)
    history = model.fit(x, y, epochs=7, verbose=0, callbacks=[
        _scripted("val_loss", [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5]),
        cbks.ReduceLROnPlateau(factor=0.5, patience=2, cooldown=1, min_lr=0.02)])
    # An epoch's "lr" is the rate it ran with. Epochs 1, 2 do not improve: the rate halves
    # after epoch 2 (the cooldown then holds epoch 3, which improves anyway); epochs 4, 5 do
    # not: halved after 5.
    np.testing.assert_allclose(history.history["lr"], [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025],
                               rtol=1e-6)
    history = model.fit(x, y, epochs=3, verbose=0, callbacks=[
        _scripted("val_loss", [1.0, 1.0, 1.0]),
        cbks.ReduceLROnPlateau(factor=0.5, patience=1, min_lr=0.02)])
    np.testing.assert_allclose(history.history["lr"], [0.025, 0.025, 0.02], rtol=1e-6)
    with pytest.raises(ValueError, match="factor >= 1.0"):
        cbks.ReduceLROnPlateau(factor=1.5)


def test_csv_logger(tmp_path):
    x, y = _data()
    model = _linear()
    path = str(tmp_path / "log.csv")
    history = model.fit(x, y, epochs=2, verbose=0, validation_data=(x, y),
                        callbacks=[cbks.CSVLogger(path)])
    rows = ["%d,%r,%r" % (e, history.history["loss"][e], history.history["val_loss"][e])
            for e in range(2)]
    with open(path) as f:
        assert f.read().splitlines() == ["epoch,loss,val_loss", *rows]
    model.fit(x, y, epochs=1, verbose=0, validation_data=(x, y),
              callbacks=[cbks.CSVLogger(path, separator=";", append=True)])
    with open(path) as f:
        lines = f.read().splitlines()
    assert len(lines) == 4 and lines[3].startswith("0;")


def test_terminate_on_nan(capsys):
    x, y = _data()
    y[4] = np.nan
    model = _linear()
    history = model.fit(x, y, batch_size=2, epochs=3, verbose=0, shuffle=False,
                        callbacks=[cbks.TerminateOnNaN()])
    assert history.epoch == [0]
    assert capsys.readouterr().out == "Batch 2: Invalid loss, terminating training\n"


def test_tensorboard_writes_the_epochs_scalars_and_the_graph(tmp_path):
    x, y = _data()
    model = _linear()
    history = model.fit(x, y, epochs=2, verbose=0, validation_data=(x, y),
                        callbacks=[cbks.TensorBoard(str(tmp_path))])
    (path,) = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    events = list(tf.train.summary_iterator(path))
    assert any(e.HasField("graph_def") for e in events)
    scalars = {(v.tag, e.step): v.simple_value for e in events for v in e.summary.value}
    assert scalars == {(name, epoch): pytest.approx(values[epoch], rel=1e-6)
                       for name, values in history.history.items() for epoch in range(2)}
    with pytest.raises(NotImplementedError, match="histogram_freq"):
        cbks.TensorBoard(str(tmp_path), histogram_freq=1)


def test_tensorboard_per_batch(tmp_path):
    x, y = _data()
    model = _linear()
    batches = []
    model.fit(x, y, batch_size=4, epochs=2, verbose=0, shuffle=False, callbacks=[
        cbks.TensorBoard(str(tmp_path), update_freq="batch", write_graph=False),
        cbks.LambdaCallback(on_batch_end=lambda batch, logs: batches.append(logs["loss"]))])
    (path,) = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    events = list(tf.train.summary_iterator(path))
    assert not any(e.HasField("graph_def") for e in events)
    scalars = [(v.tag, e.step, v.simple_value) for e in events for v in e.summary.value]
    assert [s[:2] for s in scalars] == [("batch_loss", 0), ("batch_loss", 1), ("loss", 6),
                                        ("batch_loss", 2), ("batch_loss", 3), ("loss", 12)]
    np.testing.assert_allclose([s[2] for s in scalars if s[0] == "batch_loss"], batches,
                               rtol=1e-6)


def test_base_logger_averages_the_batches_as_the_loop_does():
    x, y = _data(n=5)
    model = _linear()
    history = model.fit(x, y, batch_size=2, epochs=2, verbose=0, shuffle=False,
                        callbacks=[cbks.BaseLogger()])
    with tf.Graph().as_default():
        again = _linear().fit(x, y, batch_size=2, epochs=2, verbose=0, shuffle=False)
    np.testing.assert_allclose(history.history["loss"], again.history["loss"], rtol=1e-6)


def test_verbose_prints_each_epochs_logs(capsys):
    x, y = _data()
    model = _linear()
    history = model.fit(x, y, epochs=2, verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2"
    assert lines[3] == "6/6 - 0s - loss: %.4f" % history.history["loss"][1]
    history = model.fit(x, y, epochs=1, verbose=1, validation_data=(x, y))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Epoch 1/1"
    assert re.fullmatch(r"6/6 \[=+\] - 0s \d+[mu]s/sample - loss: %.4f - val_loss: %.4f"
                        % (history.history["loss"][0], history.history["val_loss"][0]), lines[1])


def test_callback_errors():
    with pytest.raises(TypeError, match="Callback instances"):
        _linear().fit(*_data(), verbose=0, callbacks=[lambda: None])
    with pytest.raises(TypeError, match="unknown hook 'on_epoch_ending'"):
        cbks.LambdaCallback(on_epoch_ending=print)
    model = K.Sequential([K.layers.Dense(1, input_shape=(2,))])
    model.compile(tf.train.GradientDescentOptimizer(0.1), "mse")
    with pytest.raises(ValueError, match='must have a "lr" attribute'):
        model.fit(*_data(), verbose=0, callbacks=[cbks.LearningRateScheduler(lambda e: 0.1)])
