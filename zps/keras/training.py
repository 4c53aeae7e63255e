"""Keras's training loop for ``tf.keras.Model`` in graph mode, as TF1's Keras runs it on numpy
arrays: ``compile`` (optimizer, loss, metrics), then ``fit`` / ``evaluate`` / ``predict`` and
the ``*_on_batch`` steps, in ``tf.keras.backend.get_session()``.

* the graph (placeholders for the inputs and targets, the loss, the metrics, the train op) is
  built on first use, in the graph the model was compiled in;
* the loss is the mean of the loss function over the batch (times ``loss_weights``) plus the
  layers' losses (``model.losses``); ``fit`` runs the train op with the layers' update ops
  (batch norm's moving averages) and the learning phase fed 1;
* a loss or metric of an epoch (or of ``evaluate``) is the mean over batches weighted by batch
  size; a batch's values are those before its update;
* a 1-D target is made ``[n, 1]``, as Keras does; models with one output only.

>>> import numpy as np, zps as tf
>>> with tf.Graph().as_default():
...     model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,),
...                                                        kernel_initializer="zeros")])
...     model.compile(tf.keras.optimizers.SGD(0.1), "mse")
...     x, y = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1.0, -1.0])
...     history = model.fit(x, y, epochs=3, verbose=0, shuffle=False)
...     print(sorted(history.history), len(history.history["loss"]), model.evaluate(x, y, verbose=0) < 1.0)
['loss'] 3 True
"""

import numpy as np

from zps.framework import dtypes
from zps.framework.graph import get_default_graph
from zps.keras import backend, losses, optimizers
from zps.ops import array_ops, control_flow_ops, math_ops
from zps.ops.layers_impl import _flat

_ACCURACY = ("accuracy", "acc")


class History:
    """What ``fit`` returns: ``history`` (name -> one value per epoch) and ``epoch``."""

    def __init__(self, model, params):
        self.model, self.params, self.epoch, self.history = model, params, [], {}

    def record(self, epoch, logs):
        self.epoch.append(epoch)
        for name, value in logs.items():
            self.history.setdefault(name, []).append(value)


# --- metrics (one value per example, as Keras's) ---------------------------------------------

def binary_accuracy(y_true, y_pred, threshold=0.5):
    """``mean(y_true == (y_pred > threshold), axis=-1)``."""
    y_pred = math_ops.cast(y_pred > threshold, y_pred.dtype)
    return math_ops.reduce_mean(math_ops.cast(math_ops.equal(y_true, y_pred), dtypes.float32),
                                axis=-1)


def categorical_accuracy(y_true, y_pred):
    """``argmax(y_true) == argmax(y_pred)`` (last axis), as 0.0/1.0."""
    return math_ops.cast(math_ops.equal(math_ops.argmax(y_true, -1),
                                        math_ops.argmax(y_pred, -1)), dtypes.float32)


def sparse_categorical_accuracy(y_true, y_pred):
    """``y_true == argmax(y_pred)`` for integer class ids ``y_true`` (``[n]`` or ``[n, 1]``)."""
    if y_true.get_shape().ndims == y_pred.get_shape().ndims:
        y_true = array_ops.squeeze(y_true, [-1])
    predicted = math_ops.cast(math_ops.argmax(y_pred, -1), y_true.dtype)
    return math_ops.cast(math_ops.equal(y_true, predicted), dtypes.float32)


_METRICS = {"binary_accuracy": binary_accuracy, "categorical_accuracy": categorical_accuracy,
            "sparse_categorical_accuracy": sparse_categorical_accuracy}


def _metric(name, loss_fn, output):
    """(history name, per-example function) of the metric ``name`` (or callable), named as TF1's
    Keras does: ``acc`` for ``"accuracy"``, the function's name for the others (``"mae"`` is
    ``mean_absolute_error``)."""
    if callable(name):
        return name.__name__, name
    if name in _ACCURACY:   # Keras picks the accuracy that fits the loss and output
        if output.get_shape().as_list()[-1:] == [1] or loss_fn is losses.binary_crossentropy:
            return "acc", binary_accuracy
        if loss_fn is losses.sparse_categorical_crossentropy:
            return "acc", sparse_categorical_accuracy
        return "acc", categorical_accuracy
    fn = _named_metric(name)
    return fn.__name__, fn


def _named_metric(name):
    try:
        return _METRICS[name] if name in _METRICS else losses.get(name)
    except ValueError:
        raise ValueError("Unknown metric function: %r (give a callable, 'accuracy' or one of %s)"
                         % (name, ", ".join(sorted(_METRICS) + ["mae", "mse", "..."]))) from None


# --- compile and the graph it builds ---------------------------------------------------------

class _Compiled:
    """What ``compile`` was given, and the graph built for it on first use."""

    def __init__(self, graph, optimizer, loss, metrics, loss_weight):
        self.graph, self.optimizer, self.loss_fn = graph, optimizer, loss
        self.metric_names, self.loss_weight = metrics, loss_weight
        self.built = False


def compile(model, optimizer, loss=None, metrics=None, loss_weights=None,  # noqa: A001
            **kwargs):
    """Configure training: ``optimizer`` (a name such as ``"adam"``, a Keras or tf.train
    optimizer), ``loss`` (a name or ``fn(y_true, y_pred)``), ``metrics`` (names such as
    ``"accuracy"``, ``"mae"``, or callables) and ``loss_weights`` (one number, in a list or
    not, for the one output)."""
    for key, value in kwargs.items():
        if value is not None:
            raise NotImplementedError("zps's Model.compile does not support `%s`" % key)
    if loss is None:
        raise ValueError("Model.compile needs a `loss` (a name such as 'mse' or a function)")
    if isinstance(loss, list | tuple | dict):
        raise NotImplementedError("zps's Model.compile takes one loss: models with one output "
                                  "only")
    weight = loss_weights
    if isinstance(weight, list | tuple):
        if len(weight) != 1:
            raise ValueError("loss_weights has %d entries; the model has 1 output" % len(weight))
        weight = weight[0]
    if isinstance(weight, dict):
        raise NotImplementedError("zps's Model.compile takes loss_weights as a list or a number")
    for metric in metrics or []:
        if not callable(metric) and metric not in _ACCURACY:
            _named_metric(metric)
    graph = model.weights[0].graph if model.built and model.weights else get_default_graph()
    model._compiled = _Compiled(graph, optimizers.get(optimizer), losses.get(loss),
                                list(metrics or []), 1.0 if weight is None else float(weight))


def _compiled(model, what):
    compiled = getattr(model, "_compiled", None)
    if compiled is None:
        raise RuntimeError("You must compile your model before %s: call model.compile(optimizer, "
                           "loss) first." % what)
    return compiled


def _build(model, compiled, x):
    """Placeholders, loss, metrics and train op of ``model`` for inputs like ``x``."""
    c = compiled
    if model.inputs is not None and model.outputs is not None and model._graph_network():
        inputs = list(model.inputs)
    else:   # a model without an Input: placeholders shaped as the data
        inputs = [array_ops.placeholder(a.dtype.name if a.dtype.kind in "iu" else backend.floatx(),
                                        [None, *a.shape[1:]], name="input_%d" % i)
                  for i, a in enumerate(x)]
    output = model(inputs if len(inputs) > 1 else inputs[0])
    outputs = _flat(output)
    if len(outputs) != 1:
        raise NotImplementedError("zps's Model.fit trains models with one output; %s has %d"
                                  % (model.name, len(outputs)))
    c.inputs, c.output = inputs, outputs[0]
    rank = c.output.get_shape().ndims
    c.target = array_ops.placeholder(c.output.dtype, [None] * rank, name="%s_target"
                                     % c.output.op.name.split("/")[0])
    loss = math_ops.reduce_mean(c.loss_fn(c.target, c.output)) * c.loss_weight
    if model.losses:
        loss = loss + math_ops.add_n(list(model.losses))
    c.loss = loss
    named = [_metric(m, c.loss_fn, c.output) for m in c.metric_names]
    c.names = ["loss"] + [name for name, _ in named]
    c.values = [loss] + [math_ops.reduce_mean(fn(c.target, c.output)) for _, fn in named]
    # The values a batch reports are those before its update.
    graph = get_default_graph()
    with graph.control_dependencies(c.values):
        step = c.optimizer.minimize(loss, var_list=model.trainable_weights)
        c.train_op = control_flow_ops.group(step, *model.get_updates_for(inputs if len(inputs) > 1
                                                                         else inputs[0]))
    c.built = True


def _arrays(data, what):
    arrays = list(data) if isinstance(data, list | tuple) else [data]
    return [np.asarray(a) for a in arrays]


def _standardize(model, x, y, what):
    """(compiled graph, input arrays, target array) checked against the model."""
    c = _compiled(model, what)
    x = _arrays(x, "x")
    with c.graph.as_default():
        if not c.built:
            _build(model, c, x)
    if len(x) != len(c.inputs):
        raise ValueError("Error when checking model input: the model expects %d array(s), got %d"
                         % (len(c.inputs), len(x)))
    for a, p in zip(x, c.inputs):
        expected = p.get_shape().as_list()
        if a.ndim != len(expected) or any(e is not None and e != s
                                          for e, s in zip(expected[1:], a.shape[1:])):
            raise ValueError("Error when checking input: expected %s to have shape %s but got "
                             "array with shape %s" % (p.op.name, tuple(expected[1:]),
                                                      a.shape[1:]))
    if y is None:
        return c, x, None
    y = np.asarray(y)
    if y.ndim == 1:
        y = y[:, None]
    expected = c.output.get_shape().as_list()
    sparse = c.loss_fn is losses.sparse_categorical_crossentropy
    wanted = expected[:-1] + [1] if sparse else expected
    if y.ndim != len(wanted) or any(e is not None and e != s
                                    for e, s in zip(wanted[1:], y.shape[1:])):
        raise ValueError("Error when checking target: expected %s to have shape %s but got "
                         "array with shape %s" % (c.output.op.name, tuple(wanted[1:]),
                                                  y.shape[1:]))
    counts = {len(a) for a in x} | {len(y)}
    if len(counts) != 1:
        raise ValueError("Input arrays should have the same number of samples as target arrays. "
                         "Found %s input samples and %d target samples."
                         % (", ".join(str(len(a)) for a in x), len(y)))
    return c, x, y


def _feed(c, x, y, index, training):
    feed = {p: a[index] for p, a in zip(c.inputs, x)}
    if y is not None:
        feed[c.target] = y[index]
    phase = backend._state_of(c.graph).get("phase")
    if phase is not None and not isinstance(phase, int):
        feed[phase] = training
    return feed


def _session(c):
    with c.graph.as_default():
        return backend.get_session()


def _run_batches(c, fetches, x, y, batch_size, training, order=None):
    """Run ``fetches`` on each batch; the batch-size-weighted means of the results."""
    n = len(x[0])
    order = np.arange(n) if order is None else order
    session = _session(c)
    totals = np.zeros(len(c.values))
    for start in range(0, n, batch_size):
        index = order[start:start + batch_size]
        values = session.run(fetches, feed_dict=_feed(c, x, y, index, training))
        totals += np.array(values[-len(c.values):], dtype=np.float64) * len(index)
    return [float(v) for v in totals / max(n, 1)]


def _result(values):
    return values[0] if len(values) == 1 else values


def fit(model, x=None, y=None, batch_size=None, epochs=1, verbose=1, callbacks=None,
        validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
        sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
        **kwargs):
    """Train on numpy arrays ``x``, ``y`` for ``epochs - initial_epoch`` epochs of batches of
    ``batch_size`` (32), shuffled each epoch unless ``shuffle=False``; ``validation_data``
    ``(x_val, y_val)`` (or the last ``validation_split`` of the data) is evaluated after each
    epoch. Returns a ``History``: ``history.history["loss"]``, metrics, ``val_*``."""
    for name, value in (("callbacks", callbacks), ("class_weight", class_weight),
                        ("sample_weight", sample_weight), ("steps_per_epoch", steps_per_epoch),
                        ("validation_steps", validation_steps), *kwargs.items()):
        if value is not None:
            raise NotImplementedError("zps's Model.fit does not support `%s`" % name)
    if shuffle not in (True, False):
        raise NotImplementedError("zps's Model.fit takes shuffle=True or False, not %r"
                                  % (shuffle,))
    if y is None:
        raise ValueError("Model.fit needs targets `y` (numpy arrays)")
    c, x, y = _standardize(model, x, y, "training")
    batch_size = batch_size or 32
    if validation_split and validation_data is None:
        split = int(len(y) * (1.0 - validation_split))
        validation_data = ([a[split:] for a in x], y[split:])
        x, y = [a[:split] for a in x], y[:split]
    if validation_data is not None:
        if len(validation_data) != 2:
            raise NotImplementedError("zps's Model.fit takes validation_data as (x_val, y_val)")
        _, x_val, y_val = _standardize(model, *validation_data, "validation")
    history = History(model, {"batch_size": batch_size, "epochs": epochs,
                              "samples": len(y), "verbose": verbose})
    for epoch in range(initial_epoch, epochs):
        order = np.random.permutation(len(y)) if shuffle else None
        values = _run_batches(c, [c.train_op] + c.values, x, y, batch_size, True, order)
        logs = dict(zip(c.names, values))
        if validation_data is not None:
            val = _run_batches(c, c.values, x_val, y_val, batch_size, False)
            logs.update(("val_" + name, v) for name, v in zip(c.names, val))
        history.record(epoch, logs)
        if verbose:
            print("Epoch %d/%d" % (epoch + 1, epochs))
            print("%d/%d - " % (len(y), len(y)) +
                  " - ".join("%s: %.4f" % item for item in logs.items()))
    return history


def evaluate(model, x=None, y=None, batch_size=None, verbose=1, sample_weight=None, steps=None,
             **kwargs):
    """The loss (and metrics, as a list ``[loss, *metrics]``) on ``x``, ``y``: the means over
    batches weighted by batch size, in the inference phase."""
    for name, value in (("sample_weight", sample_weight), ("steps", steps), *kwargs.items()):
        if value is not None:
            raise NotImplementedError("zps's Model.evaluate does not support `%s`" % name)
    c, x, y = _standardize(model, x, y, "evaluating")
    return _result(_run_batches(c, c.values, x, y, batch_size or 32, False))


def predict(model, x, batch_size=None, verbose=0, steps=None, **kwargs):
    """The model's output for ``x``, computed in batches (inference phase)."""
    for name, value in (("steps", steps), *kwargs.items()):
        if value is not None:
            raise NotImplementedError("zps's Model.predict does not support `%s`" % name)
    c, x, _ = _standardize(model, x, None, "predicting")
    session, batch_size = _session(c), batch_size or 32
    parts = [session.run(c.output, feed_dict=_feed(c, x, None, slice(i, i + batch_size), False))
             for i in range(0, len(x[0]), batch_size)]
    return np.concatenate(parts) if parts else np.zeros((0, *c.output.get_shape().as_list()[1:]))


def train_on_batch(model, x, y, **kwargs):
    """One training step on the whole of ``x``, ``y``: the loss (and metrics) before it."""
    for name, value in kwargs.items():
        if value is not None:
            raise NotImplementedError("zps's Model.train_on_batch does not support `%s`" % name)
    c, x, y = _standardize(model, x, y, "training")
    return _result(_run_batches(c, [c.train_op] + c.values, x, y, len(y) or 1, True))


def test_on_batch(model, x, y, **kwargs):
    """The loss (and metrics) on the whole of ``x``, ``y``, in the inference phase."""
    for name, value in kwargs.items():
        if value is not None:
            raise NotImplementedError("zps's Model.test_on_batch does not support `%s`" % name)
    c, x, y = _standardize(model, x, y, "evaluating")
    return _result(_run_batches(c, c.values, x, y, len(y) or 1, False))


def predict_on_batch(model, x):
    """The model's output for the whole of ``x`` in one run."""
    c, x, _ = _standardize(model, x, None, "predicting")
    return _session(c).run(c.output, feed_dict=_feed(c, x, None, slice(None), False))


__all__ = ["History", "compile", "evaluate", "fit", "predict", "predict_on_batch",
           "test_on_batch", "train_on_batch"]
