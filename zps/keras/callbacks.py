"""``tf.keras.callbacks`` as TF 1.15's graph-mode Keras runs them in ``fit`` / ``evaluate`` /
``predict`` (and their ``*_generator`` forms, zps/keras/training.py):

* ``fit`` calls ``on_train_begin``, then per epoch ``on_epoch_begin(epoch)``, per batch
  ``on_train_batch_begin(batch, {"batch", "size"})`` and ``on_train_batch_end(batch, logs)``
  (``on_batch_begin``/``on_batch_end`` by default), the validation pass (``on_test_*``),
  ``on_epoch_end(epoch, logs)`` with the epoch's means and the ``val_*`` values, and
  ``on_train_end``; setting ``model.stop_training = True`` ends training after the batch (or
  epoch) in progress;
* a batch's logs hold its loss and the running means of the metrics since the epoch began
  (Keras's stateful metrics);
* ``fit`` returns ``model.history``, a ``History``; ``verbose`` adds a ``ProgbarLogger``.

Not here: ``RemoteMonitor`` (network). ``TensorBoard`` writes the logs' scalars (and the graph)
with ``tf.summary.FileWriter``; histograms, images and embeddings are refused.

>>> import numpy as np, zps as tf
>>> with tf.Graph().as_default():
...     model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(1,))])
...     model.compile(tf.keras.optimizers.SGD(0.1), "mse")
...     seen = []
...     log = tf.keras.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: seen.append(e))
...     history = model.fit(np.ones((4, 1)), np.ones((4, 1)), epochs=3, verbose=0, callbacks=[log])
...     print(seen, history.epoch)
[0, 1, 2] [0, 1, 2]
"""

import collections
import csv
import os
import time

import numpy as np

from zps.keras import backend
from zps.keras.engine import keras_session as _keras_session


def _get_value(x):
    """The value of a variable (``K.get_value``, in its graph's Keras session) or number."""
    if not hasattr(x, "load"):
        return x
    with x.graph.as_default():
        return backend.get_value(x)


def _set_value(variable, value):
    """``K.set_value`` in the variable's graph."""
    if not hasattr(variable, "load"):
        raise ValueError("Cannot set %r: it is not a variable (a Keras optimizer's learning rate "
                         "is one once its model is compiled; a schedule is not)" % (variable,))
    with variable.graph.as_default():
        backend.set_value(variable, value)


def _learning_rate(model, who):
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or not hasattr(optimizer, "lr"):
        raise ValueError('Optimizer must have a "lr" attribute. (%s works with '
                         "tf.keras.optimizers, not tf.train's)" % who)
    return optimizer.lr


class Callback:
    """The base of callbacks: ``self.model`` and ``self.params`` (``epochs``, ``steps``,
    ``samples``, ``verbose``, ``do_validation``, ``metrics``...) are set by the loop; override
    any ``on_*`` hook (``logs`` is a dict of floats)."""

    def __init__(self):
        self.validation_data = None
        self.model = None
        self.params = None

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self.model = model

    def on_batch_begin(self, batch, logs=None):
        """Called before a training batch (what ``on_train_batch_begin`` calls by default)."""

    def on_batch_end(self, batch, logs=None):
        """Called after a training batch (what ``on_train_batch_end`` calls by default)."""

    def on_epoch_begin(self, epoch, logs=None):
        """Called at the start of epoch ``epoch`` (0-based) of ``fit``."""

    def on_epoch_end(self, epoch, logs=None):
        """Called at the end of an epoch: ``logs`` has its means and the ``val_*`` values."""

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs=logs)

    def on_test_batch_begin(self, batch, logs=None):
        """Called before a batch of ``evaluate`` (or of ``fit``'s validation)."""

    def on_test_batch_end(self, batch, logs=None):
        """Called after a batch of ``evaluate`` (or of ``fit``'s validation)."""

    def on_predict_batch_begin(self, batch, logs=None):
        """Called before a batch of ``predict``."""

    def on_predict_batch_end(self, batch, logs=None):
        """Called after a batch of ``predict`` (``logs["outputs"]``: its outputs)."""

    def on_train_begin(self, logs=None):
        """Called when ``fit`` starts."""

    def on_train_end(self, logs=None):
        """Called when ``fit`` ends."""

    def on_test_begin(self, logs=None):
        """Called when ``evaluate`` (or ``fit``'s validation) starts."""

    def on_test_end(self, logs=None):
        """Called when ``evaluate`` (or ``fit``'s validation) ends."""

    def on_predict_begin(self, logs=None):
        """Called when ``predict`` starts."""

    def on_predict_end(self, logs=None):
        """Called when ``predict`` ends."""


_HOOKS = [name for name in vars(Callback) if name.startswith("on_")]


class CallbackList:
    """Callbacks called in order: each ``on_*`` hook calls that hook of every callback."""

    def __init__(self, callbacks=None):
        self.callbacks = list(callbacks or [])
        for callback in self.callbacks:
            if not isinstance(callback, Callback):
                raise TypeError("callbacks must be tf.keras.callbacks.Callback instances, got %r"
                                % (callback,))

    def append(self, callback):
        self.callbacks.append(callback)

    def set_params(self, params):
        for callback in self.callbacks:
            callback.set_params(params)

    def set_model(self, model):
        for callback in self.callbacks:
            callback.set_model(model)

    def __iter__(self):
        return iter(self.callbacks)


def _dispatch(hook):
    def call(self, *args, **kwargs):
        for callback in self.callbacks:
            getattr(callback, hook)(*args, **kwargs)
    call.__name__ = hook
    call.__doc__ = "Each callback's ``%s``." % hook
    return call


for _hook in _HOOKS:
    setattr(CallbackList, _hook, _dispatch(_hook))


class BaseLogger(Callback):
    """Averages the batches' values of ``params["metrics"]`` (weighted by batch size) into the
    epoch's logs, the running metrics (``stateful_metrics``) taken from the last batch."""

    def __init__(self, stateful_metrics=None):
        super().__init__()
        self.stateful_metrics = set(stateful_metrics or [])

    def on_epoch_begin(self, epoch, logs=None):
        self.seen, self.totals = 0, {}

    def on_batch_end(self, batch, logs=None):
        logs = logs or {}
        size = logs.get("size", 0)
        self.seen += size
        for key, value in logs.items():
            if key in self.stateful_metrics:
                self.totals[key] = value
            elif key not in ("batch", "size"):
                self.totals[key] = self.totals.get(key, 0) + value * size

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        for key in self.params.get("metrics", []):
            if key in self.totals:
                logs[key] = self.totals[key] if key in self.stateful_metrics \
                    else self.totals[key] / self.seen


class History(Callback):
    """What ``fit`` returns (``model.history``): ``history`` (name -> one value per epoch)
    and ``epoch`` (the epochs' numbers)."""

    def __init__(self):
        super().__init__()
        self.epoch, self.history = [], {}

    def on_train_begin(self, logs=None):
        self.epoch, self.history = [], {}

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)


class ProgbarLogger(Callback):
    """Prints each epoch's logs: ``Epoch 1/3`` then ``n/n [====...] - 0s 52us/sample - loss:
    0.1234`` (``verbose=1``, what ``fit(verbose=1)`` adds) or ``n/n - 0s - loss: 0.1234`` (2),
    once per epoch (TF's non-interactive output)."""

    def __init__(self, count_mode="samples", stateful_metrics=None):
        super().__init__()
        if count_mode not in ("samples", "steps"):
            raise ValueError("Unknown `count_mode`: %r (give 'samples' or 'steps')"
                             % (count_mode,))
        self.use_steps = count_mode == "steps"

    def on_train_begin(self, logs=None):
        self.verbose, self.epochs = self.params["verbose"], self.params["epochs"]

    def on_epoch_begin(self, epoch, logs=None):
        if self.verbose:
            print("Epoch %d/%d" % (epoch + 1, self.epochs))
        self.seen, self.start = 0, time.time()

    def on_batch_end(self, batch, logs=None):
        self.seen += 1 if self.use_steps else (logs or {}).get("size", 0)

    def on_epoch_end(self, epoch, logs=None):
        if not self.verbose:
            return
        target = self.params.get("steps") if self.use_steps else self.params.get("samples")
        target = target or self.seen
        values = " - ".join("%s: %.4f" % (k, v) for k, v in (logs or {}).items()
                            if k in self.params.get("metrics", logs))
        elapsed = time.time() - self.start
        line = "%d/%d" % (self.seen, target)
        if self.verbose == 1:   # the bar, full, and the time per sample (or step)
            per = elapsed / max(self.seen, 1)
            unit = "%.0fs" % per if per >= 1 else "%.0fms" % (per * 1e3) if per >= 1e-3 \
                else "%.0fus" % (per * 1e6)
            line += " [%s] - %ds %s/%s" % ("=" * 30, elapsed, unit,
                                            "step" if self.use_steps else "sample")
        else:
            line += " - %ds" % elapsed
        print(line + " - " + values)


class TerminateOnNaN(Callback):
    """Stops training when a batch's loss is NaN or infinite."""

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and (np.isnan(loss) or np.isinf(loss)):
            print("Batch %d: Invalid loss, terminating training" % batch)
            self.model.stop_training = True


def _better(mode, monitor, what):
    """np.less or np.greater for ``mode`` ("auto": greater for accuracies, as TF1.15)."""
    if mode not in ("auto", "min", "max"):
        print("%s mode %s is unknown, fallback to auto mode." % (what, mode))
        mode = "auto"
    if mode == "max" or (mode == "auto" and ("acc" in monitor or monitor.startswith("fmeasure"))):
        return np.greater
    return np.less


class ModelCheckpoint(Callback):
    """Save the model (``model.save``, or ``save_weights`` with ``save_weights_only``) after
    every ``period`` epochs, to ``filepath.format(epoch=epoch + 1, **logs)`` (e.g.
    ``"w.{epoch:02d}-{val_loss:.2f}"``); with ``save_best_only``, only when ``monitor``
    improved (``mode``: "min", "max" or "auto")."""

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch", period=1,
                 load_weights_on_restart=False):
        super().__init__()
        if save_freq != "epoch":
            raise NotImplementedError("zps's ModelCheckpoint saves per epoch only "
                                      "(save_freq='epoch', with `period`)")
        if load_weights_on_restart:
            raise NotImplementedError("zps's ModelCheckpoint does not implement "
                                      "load_weights_on_restart: call model.load_weights first")
        self.filepath, self.monitor, self.verbose = str(filepath), monitor, verbose
        self.save_best_only, self.save_weights_only = save_best_only, save_weights_only
        self.period, self.epochs_since_last_save = period, 0
        self.monitor_op = _better(mode, monitor, "ModelCheckpoint")
        self.best = np.inf if self.monitor_op is np.less else -np.inf

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        self.epochs_since_last_save += 1
        if self.epochs_since_last_save < self.period:
            return
        self.epochs_since_last_save = 0
        try:
            filepath = self.filepath.format(epoch=epoch + 1, **logs)
        except KeyError as e:
            raise KeyError("Failed to format ModelCheckpoint's filepath %r: the epoch's logs have "
                           "no %s (they have %s)" % (self.filepath, e, sorted(logs))) from None
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None:
                print("Can save best model only with %s available, skipping." % self.monitor)
                return
            if not self.monitor_op(current, self.best):
                if self.verbose > 0:
                    print("\nEpoch %05d: %s did not improve from %0.5f"
                          % (epoch + 1, self.monitor, self.best))
                return
            if self.verbose > 0:
                print("\nEpoch %05d: %s improved from %0.5f to %0.5f, saving model to %s"
                      % (epoch + 1, self.monitor, self.best, current, filepath))
            self.best = current
        elif self.verbose > 0:
            print("\nEpoch %05d: saving model to %s" % (epoch + 1, filepath))
        if self.save_weights_only:   # in the session fit runs in
            with _keras_session(self.model).as_default():
                self.model.save_weights(filepath, overwrite=True)
        else:
            self.model.save(filepath, overwrite=True)


class EarlyStopping(Callback):
    """Stop training when ``monitor`` has not improved by more than ``min_delta`` for
    ``patience`` epochs (improved on ``baseline`` if given); ``restore_best_weights`` sets the
    weights of the best epoch back when it stops."""

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False):
        super().__init__()
        self.monitor, self.patience, self.verbose = monitor, patience, verbose
        self.baseline, self.restore_best_weights = baseline, restore_best_weights
        self.wait, self.stopped_epoch, self.best_weights = 0, 0, None
        self.monitor_op = _better(mode, monitor, "EarlyStopping")
        self.min_delta = abs(min_delta) * (1 if self.monitor_op is np.greater else -1)

    def on_train_begin(self, logs=None):
        self.wait, self.stopped_epoch = 0, 0
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def on_epoch_end(self, epoch, logs=None):
        current = (logs or {}).get(self.monitor)
        if current is None:
            print("Early stopping conditioned on metric `%s` which is not available. Available "
                  "metrics are: %s" % (self.monitor, ",".join(logs or {})))
            return
        if self.monitor_op(current - self.min_delta, self.best):
            self.best, self.wait = current, 0
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            return
        self.wait += 1
        if self.wait >= self.patience:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                if self.verbose > 0:
                    print("Restoring model weights from the end of the best epoch.")
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print("Epoch %05d: early stopping" % (self.stopped_epoch + 1))


class LearningRateScheduler(Callback):
    """Set the optimizer's learning rate to ``schedule(epoch, lr)`` (or ``schedule(epoch)``)
    at the start of each epoch; the epoch's logs get ``lr``."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):
        variable = _learning_rate(self.model, "LearningRateScheduler")
        try:
            lr = self.schedule(epoch, float(_get_value(variable)))
        except TypeError:   # TF1.15: a schedule of the epoch only
            lr = self.schedule(epoch)
        if not isinstance(lr, float | np.float32 | np.float64):
            raise ValueError('The output of the "schedule" function should be float.')
        _set_value(variable, lr)
        if self.verbose > 0:
            print("\nEpoch %05d: LearningRateScheduler reducing learning rate to %s."
                  % (epoch + 1, lr))

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = float(_get_value(self.model.optimizer.lr))


class ReduceLROnPlateau(Callback):
    """Multiply the learning rate by ``factor`` (down to ``min_lr``) when ``monitor`` has not
    improved by ``min_delta`` for ``patience`` epochs, then wait ``cooldown`` epochs."""

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto",
                 min_delta=1e-4, cooldown=0, min_lr=0, **kwargs):
        super().__init__()
        if "epsilon" in kwargs:
            min_delta = kwargs.pop("epsilon")
        for key in kwargs:
            raise TypeError("ReduceLROnPlateau got an unexpected keyword argument %r" % key)
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau does not support a factor >= 1.0.")
        self.monitor, self.factor, self.min_lr, self.min_delta = monitor, factor, min_lr, min_delta
        self.patience, self.verbose, self.cooldown, self.mode = patience, verbose, cooldown, mode
        self._reset()

    def _reset(self):
        if self.mode not in ("auto", "min", "max"):
            print("Learning Rate Plateau Reducing mode %s is unknown, fallback to auto mode."
                  % self.mode)
            self.mode = "auto"
        if self.mode == "min" or (self.mode == "auto" and "acc" not in self.monitor):
            self.monitor_op = lambda a, b: np.less(a, b - self.min_delta)
            self.best = np.inf
        else:
            self.monitor_op = lambda a, b: np.greater(a, b + self.min_delta)
            self.best = -np.inf
        self.cooldown_counter, self.wait = 0, 0

    def on_train_begin(self, logs=None):
        self._reset()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        variable = _learning_rate(self.model, "ReduceLROnPlateau")
        logs["lr"] = float(_get_value(variable))
        current = logs.get(self.monitor)
        if current is None:
            print("Reduce LR on plateau conditioned on metric `%s` which is not available. "
                  "Available metrics are: %s" % (self.monitor, ",".join(logs)))
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self.monitor_op(current, self.best):
            self.best, self.wait = current, 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                old_lr = float(_get_value(variable))
                if old_lr > self.min_lr:
                    new_lr = max(old_lr * self.factor, self.min_lr)
                    _set_value(variable, new_lr)
                    if self.verbose > 0:
                        print("\nEpoch %05d: ReduceLROnPlateau reducing learning rate to %s."
                              % (epoch + 1, new_lr))
                    self.cooldown_counter, self.wait = self.cooldown, 0


class CSVLogger(Callback):
    """Write each epoch's logs to the CSV file ``filename``: a header ``epoch,<sorted log
    names>`` then one row per epoch (``append`` adds to an existing file)."""

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename, self.sep, self.append = str(filename), separator, append
        self.writer, self.keys, self.csv_file = None, None, None

    def on_train_begin(self, logs=None):
        self.append_header = True
        if self.append and os.path.exists(self.filename):
            with open(self.filename) as f:
                self.append_header = not bool(len(f.readline()))
        self.csv_file = open(self.filename, "a" if self.append else "w", newline="")  # noqa: SIM115 - open until on_train_end

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
        if self.model.stop_training:   # a last epoch may lack some values
            logs = {k: logs.get(k, "NA") for k in self.keys}
        if self.writer is None:
            self.writer = csv.DictWriter(self.csv_file, ["epoch", *self.keys],
                                         delimiter=self.sep, lineterminator="\r\n")
            if self.append_header:
                self.writer.writeheader()
        row = collections.OrderedDict(epoch=epoch)
        row.update((key, logs[key]) for key in self.keys)
        self.writer.writerow(row)
        self.csv_file.flush()

    def on_train_end(self, logs=None):
        self.csv_file.close()
        self.writer = None


class LambdaCallback(Callback):
    """A callback of the functions given: ``on_epoch_begin(epoch, logs)``,
    ``on_epoch_end(epoch, logs)``, ``on_batch_begin(batch, logs)``, ``on_batch_end(batch,
    logs)``, ``on_train_begin(logs)``, ``on_train_end(logs)`` (and any other ``on_*``)."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_batch_begin=None,
                 on_batch_end=None, on_train_begin=None, on_train_end=None, **kwargs):
        super().__init__()
        given = dict(on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end,
                     on_batch_begin=on_batch_begin, on_batch_end=on_batch_end,
                     on_train_begin=on_train_begin, on_train_end=on_train_end, **kwargs)
        for name, fn in given.items():
            if name not in _HOOKS:
                raise TypeError("LambdaCallback got an unknown hook %r (hooks: %s)"
                                % (name, ", ".join(_HOOKS)))
            if fn is not None:
                setattr(self, name, fn)


_NOT_SCALARS = ("batch", "size", "num_steps")


class TensorBoard(Callback):
    """Write the epoch's logs as scalars (tags ``loss``, ``val_loss``...; step: the epoch) to
    an event file in ``log_dir`` with ``tf.summary.FileWriter``, and the graph
    (``write_graph``); ``update_freq="batch"`` (or a number of samples) also writes the
    batches' logs as ``batch_loss``... (step: the batches seen)."""

    def __init__(self, log_dir="./logs", histogram_freq=0, batch_size=32, write_graph=True,
                 write_grads=False, write_images=False, embeddings_freq=0,
                 embeddings_layer_names=None, embeddings_metadata=None, embeddings_data=None,
                 update_freq="epoch", profile_batch=2):
        super().__init__()
        for name, value in (("histogram_freq", histogram_freq), ("write_grads", write_grads),
                            ("write_images", write_images), ("embeddings_freq", embeddings_freq)):
            if value:
                raise NotImplementedError("zps's TensorBoard callback writes scalars and the "
                                          "graph only: `%s` is not supported" % name)
        self.log_dir, self.write_graph, self.writer = str(log_dir), write_graph, None
        self.update_freq = 1 if update_freq == "batch" else update_freq
        self._samples_seen = self._samples_seen_at_last_write = self._total_batches_seen = 0

    def set_model(self, model):
        from zps.summary import FileWriter
        super().set_model(model)
        if self.writer is None:
            graph = _keras_session(model).graph if self.write_graph else None
            self.writer = FileWriter(self.log_dir, graph)

    def _write(self, step, logs):
        from zps.summary import Summary
        values = [Summary.Value(tag=name, simple_value=float(value))
                  for name, value in logs.items() if name not in _NOT_SCALARS]
        self.writer.add_summary(Summary(value=values), step)
        self.writer.flush()

    def on_batch_end(self, batch, logs=None):
        if self.update_freq == "epoch":
            return
        logs = logs or {}
        self._samples_seen += logs.get("size", 1)
        if self._samples_seen - self._samples_seen_at_last_write >= self.update_freq:
            self._write(self._total_batches_seen, {"batch_" + k: v for k, v in logs.items()
                                                   if k not in _NOT_SCALARS})
            self._samples_seen_at_last_write = self._samples_seen
        self._total_batches_seen += 1

    def on_epoch_end(self, epoch, logs=None):
        step = epoch if self.update_freq == "epoch" else self._samples_seen
        self._write(step, logs or {})

    def on_train_end(self, logs=None):
        self.writer.close()
        self.writer = None


__all__ = ["BaseLogger", "CSVLogger", "Callback", "CallbackList", "EarlyStopping", "History",
           "LambdaCallback", "LearningRateScheduler", "ModelCheckpoint", "ProgbarLogger",
           "ReduceLROnPlateau", "TensorBoard", "TerminateOnNaN"]
