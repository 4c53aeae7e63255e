"""Keras's training loop for ``tf.keras.Model`` in graph mode, as TF1's Keras runs it on numpy
arrays: ``compile`` (optimizer, loss, metrics), then ``fit`` / ``evaluate`` / ``predict`` and
the ``*_on_batch`` steps, in ``tf.keras.backend.get_session()``.

* the graph (placeholders for the inputs and targets, the loss, the metrics, the train op) is
  built on first use, in the graph the model was compiled in;
* the loss is the mean of the loss function over the batch (times ``loss_weights``) plus the
  layers' losses: the weights' regularization losses and the activity losses of the model's
  call on the inputs (``call_with_losses``); ``fit`` runs the train op with the layers' update
  ops (batch norm's moving averages) and the learning phase fed 1;
* a batch's values are those before its update; an epoch's (or ``evaluate``'s) loss is the
  mean over batches weighted by batch size, its metrics running means (see ``_Means``);
* models with several inputs and outputs take lists or dicts (by input / output layer name)
  of arrays, a loss (and ``loss_weights``, ``metrics``) per output; the logs then hold the
  output losses and metrics named after the outputs: ``dense_1_loss``, ``dense_1_acc``;
* ``sample_weight`` (``[n]``, or ``[n, time]`` with ``sample_weight_mode="temporal"``) and
  ``class_weight`` (class -> weight, from the targets' argmax or sparse ids; multiplied into
  ``sample_weight``) weight each output's per-example losses (times its mask), reduced as
  Keras's SUM_OVER_BATCH_SIZE: ``sum(loss * weight) / number of losses``; ``weighted_metrics``
  (logged as ``weighted_acc``) are running means weighted likewise, ``metrics`` are not;
* a 1-D target is made ``[n, 1]``, as Keras does; ``callbacks`` are called as
  zps/keras/callbacks.py says; ``fit_generator`` and co. take Python generators and
  ``tf.keras.utils.Sequence``;
* ``fit``/``evaluate``/``predict`` also take a ``tf.data`` dataset of batches (``(x, y)``,
  ``(x, y, sample_weight)``; ``x`` for predict), read in the model's graph through one
  iterator (TF 1.15's rules for ``steps``; the loss of an epoch is the mean over its steps);
* a model compiled in a ``tf.distribute`` strategy's scope runs on its replicas
  (zps/keras/training_distributed.py).

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

import logging

import numpy as np

from zps.framework import dtypes
from zps.framework.graph import get_default_graph
from zps.keras import backend, losses, optimizers
from zps.keras import metrics as keras_metrics
from zps.ops import array_ops, control_flow_ops, math_ops
from zps.ops.layers_impl import _flat

_ACCURACY = ("accuracy", "acc")



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
    if isinstance(name, keras_metrics.Metric):   # stateful: its own running result (_build)
        return name.name, name
    if callable(name):
        return name.__name__, name
    if name in _ACCURACY:   # Keras picks the accuracy that fits the loss and output
        if output.get_shape().as_list()[-1:] == [1] or loss_fn is losses.binary_crossentropy:
            return "acc", binary_accuracy
        if loss_fn is losses.sparse_categorical_crossentropy:
            return "acc", sparse_categorical_accuracy
        return "acc", categorical_accuracy
    fn = _named_metric(name)
    return (fn.name if isinstance(fn, keras_metrics.Metric) else fn.__name__), fn


def _named_metric(name, check_only=False):
    """The metric function or (new) Metric named ``name``; with ``check_only``, a Metric class
    is not made (its instance would take the name "auc" that _build's should have)."""
    try:
        return _METRICS[name] if name in _METRICS else losses.get(name)
    except ValueError:
        pass
    cls = getattr(keras_metrics, name, None) if isinstance(name, str) else None
    if check_only and isinstance(cls, type) and issubclass(cls, keras_metrics.Metric):
        return cls
    try:   # a metric's own name ("AUC": a new stateful metric; "top_k_categorical_accuracy")
        return keras_metrics.get(name)
    except ValueError:
        raise ValueError("Unknown metric function: %r (give a callable, 'accuracy' or one of %s)"
                         % (name, ", ".join(sorted(_METRICS) + ["mae", "mse", "..."]))) from None


# --- compile and the graph it builds ---------------------------------------------------------

class _Output:
    """One output of a compiled model: its tensor, loss function, weight, target placeholder
    and metrics ``[(name, fn)]``."""

    def __init__(self, name, tensor, loss_fn, weight):
        self.name, self.tensor, self.loss_fn, self.weight = name, tensor, loss_fn, weight


class _Compiled:
    """What ``compile`` was given, and the graph built for it (at compile for a model with
    ``Input`` tensors, else on first use)."""

    def __init__(self, graph, optimizer, loss, metrics, loss_weights, sample_weight_mode,
                 weighted_metrics):
        self.graph, self.optimizer = graph, optimizer
        self.loss, self.metrics, self.loss_weights = loss, metrics, loss_weights
        self.sample_weight_mode, self.weighted_metrics = sample_weight_mode, weighted_metrics
        self.built = False
        self.strategy = self.replicas = None   # a strategy's model: training_distributed.py


def compile(model, optimizer, loss=None, metrics=None, loss_weights=None,  # noqa: A001
            sample_weight_mode=None, weighted_metrics=None, **kwargs):
    """Configure training: ``optimizer`` (a name such as ``"adam"``, a Keras or tf.train
    optimizer), ``loss`` (a name or ``fn(y_true, y_pred)``; a list or a dict by output name for
    a model with several outputs), ``metrics`` (names such as ``"accuracy"``, ``"mae"``, or
    callables; a list for every output, or a dict by output name), ``loss_weights`` (a
    number per output: a list or a dict), ``sample_weight_mode`` (None: a weight per example;
    ``"temporal"``: per example and time step, ``[batch, time]``; or one per output) and
    ``weighted_metrics`` (as ``metrics``, averaged with the sample weights; logged as
    ``weighted_acc``). The loss is ``sum(weight * mean(sample_weight * output loss))`` plus
    ``model.losses``."""
    for key, value in kwargs.items():
        if key == "distribute" and value is not None:   # TF 1.15 deprecates it
            raise NotImplementedError("zps's Model.compile does not take `distribute`: create "
                                      "and compile the model in `with strategy.scope():`")
        if value is not None:
            raise NotImplementedError("zps's Model.compile does not support `%s`" % key)
    if loss is None:
        raise ValueError("Model.compile needs a `loss` (a name such as 'mse' or a function)")
    for metric in _flat_metrics(metrics) + _flat_metrics(weighted_metrics):
        if not callable(metric) and metric not in _ACCURACY:
            _named_metric(metric, check_only=True)
    modes = sample_weight_mode.values() if isinstance(sample_weight_mode, dict) else \
        sample_weight_mode if isinstance(sample_weight_mode, list | tuple) else [sample_weight_mode]
    for mode in modes:
        if mode not in (None, *_SAMPLE_WEIGHT_SHAPES):
            raise ValueError('"sample_weight_mode should be None or "temporal". Found: %r (for '
                             "timestep-wise weights of outputs [batch, time, ...], give "
                             '"temporal"; one per output as a list or dict)' % (mode,))
    from zps.keras import training_distributed
    strategy = training_distributed.compile_strategy(model, sample_weight_mode, weighted_metrics)
    graph = model.weights[0].graph if model.built and model.weights else get_default_graph()
    model.optimizer = optimizers.get(optimizer)
    model._compiled = _Compiled(graph, model.optimizer, loss, metrics, loss_weights,
                                sample_weight_mode, weighted_metrics)
    model._compiled.strategy = strategy
    model.stop_training = False
    if model.inputs is not None and model.outputs is not None and model._graph_network():
        with graph.as_default():
            _build(model, model._compiled, None)


def _flat_metrics(metrics):
    if isinstance(metrics, dict):
        metrics = list(metrics.values())
    flat = []
    for m in metrics or []:
        flat.extend(m if isinstance(m, list | tuple) else [m])
    return flat


def _compiled(model, what):
    compiled = getattr(model, "_compiled", None)
    if compiled is None and what == "predicting":
        # TF 1.15 predicts without compile: a graph of the outputs only (no loss, no optimizer),
        # kept apart so that fit and evaluate still ask for compile.
        compiled = getattr(model, "_predict_only", None)
        if compiled is None:
            graph = model.weights[0].graph if model.built and model.weights else \
                get_default_graph()
            compiled = model._predict_only = _Compiled(graph, None, None, None, None, None,
                                                       None)
    if compiled is None:
        raise RuntimeError("You must compile your model before %s: call model.compile(optimizer, "
                           "loss) first." % what)
    return compiled


def _per_output(value, names, what, default):
    """``value`` (one for all, a list in output order or a dict by output name) as a list."""
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(names), key=str)
        if unknown:
            raise ValueError("Unknown entries in %s dictionary: %s. Only expected the following "
                             "keys: %s" % (what, unknown, names))
        missing = [n for n in names if n not in value]
        if missing and default is None:
            raise ValueError("Output %s missing from %s dictionary: give one for every output "
                             "(%s)" % (missing, what, names))
        return [value.get(n, default) for n in names]
    if isinstance(value, list | tuple) and (not what.endswith("metrics") or
                                             any(isinstance(v, list | tuple) for v in value)):
        if len(value) != len(names):
            raise ValueError("When passing a list as %s, it should have one entry per model "
                             "output. The model has %d outputs (%s), but you passed %s=%r"
                             % (what, len(names), names, what, value))
        return list(value)
    return [default if value is None else value] * len(names)


def output_names(model):
    """The names of the model's outputs (the layers that make them), as Keras names them in
    ``loss`` dicts and in the logs (``dense_1_loss``)."""
    from zps.keras.engine import node_of
    if model.outputs is not None and model._graph_network():
        return [node_of(t).layer.name if node_of(t) is not None else "output_%d" % (i + 1)
                for i, t in enumerate(model.outputs)]
    c = getattr(model, "_compiled", None)
    if c is not None and c.built:
        return [o.name for o in c.outputs]
    return None


def input_names(model):
    """The names of the model's inputs (their InputLayers'), the keys of ``x`` as a dict."""
    from zps.keras.engine import node_of
    return [node_of(t).layer.name for t in model.inputs] if model.inputs else None


def _build(model, c, x):
    """Placeholders, losses, metrics and train op of ``model`` (for inputs like ``x`` when the
    model has no ``Input``); under a strategy, one replica of them per device
    (zps/keras/training_distributed.py)."""
    if c.strategy is not None:
        from zps.keras import training_distributed
        training_distributed.build(model, c)
        return
    if model.inputs is not None and model.outputs is not None and model._graph_network():
        inputs = list(model.inputs)
        c.input_names = input_names(model)
    else:   # a model without an Input: placeholders shaped as the data
        inputs = [array_ops.placeholder(a.dtype.name if a.dtype.kind in "iu" else backend.floatx(),
                                        [None, *a.shape[1:]], name="input_%d" % i)
                  for i, a in enumerate(x)]
        c.input_names = ["input_%d" % (i + 1) for i in range(len(inputs))]
    tensors, call_losses = call_with_losses(model, inputs)
    names = output_names(model) or ["output_%d" % (i + 1) for i in range(len(tensors))]
    c.inputs = inputs
    if c.optimizer is None:   # predict without compile: the outputs only
        _predict_only(c, [_Output(name, tensor, None, 1.0)
                          for name, tensor in zip(names, tensors)])
        return
    c.outputs = _outputs(c, names, tensors)
    _add_metrics(c, c.outputs)
    c.total_loss = c.values[0] = _total_loss(c.outputs, call_losses)
    _learning_rate_variable(c.optimizer)
    # The values a batch reports are those before its update.
    with get_default_graph().control_dependencies(c.values):
        c.train_op = _train_op(model, c.optimizer, c.total_loss, inputs)
    c.built = True


def call_with_losses(model, inputs, replica=False):
    """The outputs of ``model`` called on ``inputs`` (a list) and the losses that go with that
    call, as TF's Keras counts them: the weights' regularization losses and the activity
    losses of this call (not those of other calls of the layers, e.g. on ``model.inputs``).
    In a ``replica`` of a strategy the weights' losses are computed again there, from the
    replica's copies of the weights (TF's are callables, computed where they are used)."""
    from zps.keras.engine import weight_losses
    before = {id(x) for x in model.losses}
    tensors = _flat(model(inputs if len(inputs) > 1 else inputs[0]))
    losses = [x for x in model.losses
              if id(x) not in before or not _reads_placeholders(x)]
    if replica:
        sources = weight_losses(model)
        graph = get_default_graph()
        for i, x in enumerate(losses):
            if id(x) in sources:
                variable, regularizer = sources[id(x)]
                with graph.name_scope(variable.op.name + "/Regularizer"):
                    losses[i] = regularizer(variable)
    return tensors, losses


def _reads_placeholders(tensor):
    """Whether ``tensor`` is computed from a placeholder (a call's inputs)."""
    seen, todo = set(), [tensor.op]
    while todo:
        op = todo.pop()
        if op.type in ("Placeholder", "PlaceholderWithDefault"):
            return True
        for t in op.inputs:
            if id(t.op) not in seen:
                seen.add(id(t.op))
                todo.append(t.op)
    return False


def _predict_only(c, outputs):
    c.outputs, c.stateful, c.names, c.values, c.kinds = outputs, [], [], [], []
    c.built = True


def _outputs(c, names, tensors):
    """The compiled outputs of ``tensors``: each with its loss function and weight, target and
    sample weight placeholders, Keras mask and (weighted) loss."""
    loss_fns = [losses.get(fn) for fn in _per_output(c.loss, names, "loss", None)]
    weights = [float(w) for w in _per_output(c.loss_weights, names, "loss_weights", 1.0)]
    modes = _per_output(c.sample_weight_mode, names, "sample_weight_mode", "samplewise")
    outputs = [_Output(*args) for args in zip(names, tensors, loss_fns, weights)]
    for o, mode in zip(outputs, modes):
        o.target = array_ops.placeholder(o.tensor.dtype, [None] * o.tensor.get_shape().ndims,
                                         name="%s_target" % o.name)
        # TF 1.15: an output's Keras mask weights its per-step losses (the mean still over all
        # of them) and its metrics (means over the unmasked steps).
        o.mask = getattr(o.tensor, "_keras_mask", None)
        if o.mask is not None:
            o.mask = math_ops.cast(o.mask, o.tensor.dtype.base_dtype)
        o.mode, o.sample_weight = _sample_weight_placeholder(o.name, mode)
        # TF 1.15: the sample weights times the mask weight the loss (reduced over all the
        # per-example values: SUM_OVER_BATCH_SIZE) and the weighted metrics.
        o.weights = o.sample_weight if o.mask is None else \
            _fit_rank(math_ops.cast(o.sample_weight, o.mask.dtype), o.mask) * o.mask
        o.loss = _weighted_loss(o.loss_fn(o.target, o.tensor), o.weights)
    return outputs


def _add_metrics(c, outputs):
    """``c.names``, ``c.values``, ``c.kinds`` (the loss first, left None for the caller, then
    the outputs' losses where there are several, then the metrics) and ``c.stateful``."""
    names = [o.name for o in outputs]
    metrics = _per_output(c.metrics, names, "metrics", [])
    weighted_metrics = _per_output(c.weighted_metrics, names, "weighted_metrics", [])
    several = len(outputs) > 1
    c.names, c.values, c.kinds, c.stateful = ["loss"], [None], ["loss"], []
    for o in outputs if several else []:
        c.names.append(o.name + "_loss")
        c.values.append(o.loss)
        c.kinds.append("output_loss")
    for o, given, given_weighted in zip(outputs, metrics, weighted_metrics):
        for weighted, m in [(False, m) for m in _as_metric_list(given)] + \
                [(True, m) for m in _as_metric_list(given_weighted)]:
            name, fn = _metric(m, o.loss_fn, o.tensor)
            name = "weighted_" + name if weighted else name
            c.names.append(o.name + "_" + name if several else name)
            weights = o.weights if weighted else o.mask
            if weights is not None and not isinstance(fn, keras_metrics.Metric):
                fn = _WeightedMean(fn, name)   # Keras's MeanMetricWrapper: sums over the epoch
            if isinstance(fn, keras_metrics.Metric):   # updated by each batch, reset by _run
                c.values.append(fn(o.target, o.tensor, sample_weight=weights))
                c.kinds.append("stateful")
                c.stateful.append(fn)
                continue
            c.values.append(math_ops.reduce_mean(fn(o.target, o.tensor)))
            c.kinds.append("metric")


def _total_loss(outputs, extra_losses):
    """The outputs' losses times their weights, plus ``extra_losses`` (the model's)."""
    total = [o.loss * o.weight for o in outputs]
    loss = math_ops.add_n(total) if len(total) > 1 else total[0]
    if extra_losses:
        loss = loss + math_ops.add_n(list(extra_losses))
    return loss


def _train_op(model, optimizer, loss, inputs):
    """The optimizer's step on ``loss`` with the update ops of the model's call on ``inputs``
    (a model without weights trains nothing)."""
    step = optimizer.minimize(loss, var_list=model.trainable_weights) \
        if model.trainable_weights else control_flow_ops.no_op()
    return control_flow_ops.group(step, *model.get_updates_for(inputs if len(inputs) > 1
                                                               else inputs[0]))


def _as_metric_list(given):
    return list(given) if isinstance(given, list | tuple) else [given]


class _WeightedMean(keras_metrics.Mean):
    """A metric function's values averaged with weights (the sample weights of
    ``weighted_metrics``, a mask) over an epoch, as TF 1.15's Keras does (MeanMetricWrapper)."""

    def __init__(self, fn, name):
        super().__init__(name=name)
        self._fn = fn

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Add ``fn(y_true, y_pred) * sample_weight`` to the total, the weights to the count."""
        return super().update_state(self._fn(y_true, y_pred), sample_weight)


_SAMPLE_WEIGHT_SHAPES = {"samplewise": [None], "temporal": [None, None]}


def _sample_weight_placeholder(output_name, mode):
    """(mode, the output's sample weights: ones unless fed; ``[batch]``, or ``[batch, time]``
    for ``sample_weight_mode="temporal"``)."""
    mode = "samplewise" if mode is None else mode
    shape = _SAMPLE_WEIGHT_SHAPES[mode]
    ones = np.ones([1] * len(shape), dtype=backend.floatx())
    return mode, array_ops.placeholder_with_default(ones, shape,
                                                    name=output_name + "_sample_weights")


def _fit_rank(weights, values):
    """``weights`` with an axis of 1 added (or a trailing one dropped) to be one rank with
    ``values`` (Keras's squeeze_or_expand_dimensions)."""
    rank, weight_rank = values.get_shape().ndims, weights.get_shape().ndims
    if rank == weight_rank + 1:
        return array_ops.expand_dims(weights, -1)
    if weight_rank == rank + 1:
        return array_ops.squeeze(weights, [-1])
    return weights


def _weighted_loss(losses, weights):
    """``sum(losses * weights) / number of losses`` (Keras's SUM_OVER_BATCH_SIZE); losses of
    a rank still above the weights' are first averaged over their extra axes, as Keras does
    where the weights do not broadcast."""
    weights = _fit_rank(math_ops.cast(weights, losses.dtype), losses)
    rank, weight_rank = losses.get_shape().ndims, weights.get_shape().ndims
    if rank > weight_rank:
        losses = math_ops.reduce_mean(losses, axis=list(range(weight_rank, rank)))
    weighted = losses * weights
    return math_ops.reduce_sum(weighted) / math_ops.cast(array_ops.size(weighted),
                                                         weighted.dtype)


def _learning_rate_variable(optimizer):
    """Make a Keras optimizer's learning rate a variable (``optimizer.lr``), as TF's Keras does,
    so that callbacks can change it between steps."""
    from zps.keras.optimizers import Optimizer
    from zps.ops.variables import Variable
    if not isinstance(optimizer, Optimizer):
        return
    lr = optimizer._hyper["learning_rate"]
    if isinstance(lr, int | float | np.floating):
        graph = get_default_graph()
        with graph.control_dependencies(None), graph.name_scope(optimizer._name):
            optimizer._hyper["learning_rate"] = Variable(float(lr), dtype=dtypes.float32,
                                                         trainable=False, name="learning_rate")


def _as_list(data, names, what):
    """``data`` (an array, a list or a dict by ``names``) as a list of arrays."""
    if isinstance(data, dict):
        missing = [n for n in names if n not in data]
        if missing:
            raise ValueError("No data provided for %s. Need data for each key in: %s"
                             % (missing, names))
        return [np.asarray(data[n]) for n in names]
    arrays = list(data) if isinstance(data, list | tuple) else [data]
    return [np.asarray(a) for a in arrays]


def _check_shape(array, expected, name, what):
    if array.ndim != len(expected) or any(e is not None and e != s
                                          for e, s in zip(expected[1:], array.shape[1:])):
        raise ValueError("Error when checking %s: expected %s to have shape %s but got array "
                         "with shape %s" % (what, name, tuple(expected[1:]), array.shape[1:]))


def _standardize(model, x, y, what, sample_weight=None, class_weight=None):
    """(compiled graph, input arrays, target arrays or None, sample weights: an array or None
    per output) checked against the model."""
    c = _compiled(model, what)
    if not c.built:
        with c.graph.as_default():
            _build(model, c, _as_list(x, None, "x"))
    x = _as_list(x, c.input_names, "x")
    if len(x) != len(c.inputs):
        raise ValueError("Error when checking model input: the model expects %d array(s), got %d"
                         % (len(c.inputs), len(x)))
    for a, p in zip(x, c.inputs):
        _check_shape(a, p.get_shape().as_list(), p.op.name, "input")
    if y is None:
        return c, x, None, None
    y = _as_list(y, [o.name for o in c.outputs], "y")
    if len(y) != len(c.outputs):
        raise ValueError("Error when checking model target: the model expects %d array(s) "
                         "(%s), got %d" % (len(c.outputs), [o.name for o in c.outputs], len(y)))
    for i, (a, o) in enumerate(zip(y, c.outputs)):
        if a.ndim == 1:
            y[i] = a = a[:, None]
        expected = o.tensor.get_shape().as_list()
        if o.loss_fn is losses.sparse_categorical_crossentropy:
            expected = expected[:-1] + [1]
        _check_shape(a, expected, o.tensor.op.name, "target")
    counts = {len(a) for a in x} | {len(a) for a in y}
    if len(counts) != 1:
        raise ValueError("Input arrays should have the same number of samples as target arrays. "
                         "Found %s input samples and %s target samples."
                         % (", ".join(str(len(a)) for a in x), ", ".join(str(len(a)) for a in y)))
    names = [o.name for o in c.outputs]
    weights = [_standardize_weights(*args) for args in zip(
        y, _per_output_weights(sample_weight, names, "sample_weight"),
        _per_output_weights(class_weight, names, "class_weight"), [o.mode for o in c.outputs])]
    return c, x, y, weights


def _per_output_weights(value, names, what):
    """``sample_weight`` or ``class_weight`` as one (or None) per output (Keras's
    standardize_sample_or_class_weights)."""
    if value is None or (isinstance(value, list | tuple) and not value):
        return [None] * len(names)
    if len(names) == 1:
        if isinstance(value, list | tuple) and len(value) == 1:
            return list(value)
        return [value[names[0]] if isinstance(value, dict) and names[0] in value else value]
    if isinstance(value, list | tuple):
        if len(value) != len(names):
            raise ValueError("Provided `%s` was a list of %d elements, but the model has %d "
                             "outputs (%s). You should provide one `%s` array per model output."
                             % (what, len(value), len(names), names, what))
        return list(value)
    if isinstance(value, dict):
        unknown = [k for k in value if k not in names]
        if unknown:
            raise ValueError("Unknown entries in %s dictionary: %s. Only expected following "
                             "keys: %s (the model has several outputs: give a %s per output "
                             "name)" % (what, unknown, names, what))
        return [value.get(n) for n in names]
    raise TypeError("The model has multiple outputs, so `%s` should be either a list or a dict. "
                    "Provided `%s` type not understood: %r" % (what, what, value))


def _standardize_weights(y, sample_weight, class_weight, mode):
    """One output's weights (an array, or None for none): ``sample_weight`` times the weights of
    ``class_weight`` (a dict class -> weight) of ``y``'s classes (Keras's
    standardize_weights)."""
    if isinstance(sample_weight, tuple):   # a generator may give it as a 1-tuple
        sample_weight = sample_weight[0]
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=backend.floatx())
    if mode == "temporal":
        if y.ndim < 3:
            raise ValueError("Found a sample_weight array for an input with shape %s. "
                             "Timestep-wise sample weighting (use of sample_weight_mode="
                             '"temporal") is restricted to outputs that are at least 3D, i.e. '
                             "that have a time dimension." % (y.shape,))
        if sample_weight is not None and sample_weight.ndim != 2:
            raise ValueError("Found a sample_weight array with shape %s. In order to use "
                             "timestep-wise sample weighting, you should pass a 2D "
                             "sample_weight array." % (sample_weight.shape,))
    elif sample_weight is not None and sample_weight.ndim != 1:
        raise ValueError('Found a sample_weight array with shape %s. In order to use timestep-'
                         'wise sample weights, you should specify sample_weight_mode="temporal" '
                         "in compile(). If you just mean to use sample-wise weights, make sure "
                         "your sample_weight array is 1D." % (sample_weight.shape,))
    if sample_weight is not None and y.shape[:sample_weight.ndim] != sample_weight.shape:
        raise ValueError("Found a sample_weight array with shape %s for an input with shape %s. "
                         "sample_weight cannot be broadcast." % (sample_weight.shape, y.shape))
    if class_weight is None:
        return sample_weight
    if not isinstance(class_weight, dict):
        raise TypeError("`class_weight` should be a dict {class index: weight}, got %r"
                        % (class_weight,))
    if y.ndim > 2:
        raise ValueError("`class_weight` not supported for 3+ dimensional targets.")
    classes = np.argmax(y, axis=1) if y.ndim == 2 and y.shape[1] > 1 else y.reshape(len(y))
    missing = {cls.item() for cls in classes} - set(class_weight)
    if missing:
        raise ValueError("`class_weight` must contain all classes in the data. The classes %s "
                         "exist in the data but not in `class_weight`." % missing)
    weights = np.asarray([class_weight[cls.item()] for cls in classes],
                         dtype=backend.floatx())
    return weights if sample_weight is None else weights * sample_weight


def _feed(c, x, y, weights, training, split=None):
    """The feed of a batch (under a strategy: ``split`` examples to each replica)."""
    if c.replicas is not None:
        from zps.keras import training_distributed
        feed = training_distributed.feed(c, x, y, weights, split)
    else:
        feed = dict(zip(c.inputs, x))
        if y is not None:
            feed.update((o.target, a) for o, a in zip(c.outputs, y))
        if weights is not None:
            feed.update((o.sample_weight, w) for o, w in zip(c.outputs, weights)
                        if w is not None)
    phase = backend._state_of(c.graph).get("phase")
    if phase is not None and not isinstance(phase, int):
        feed[phase] = training
    return feed


def _session(c):
    with c.graph.as_default():
        return backend.get_session()


def _result(values):
    return values[0] if len(values) == 1 else values


# --- the loop: batches in, callbacks and means out -------------------------------------------

class _Means:
    """The values of an epoch (or evaluation) as TF1's Keras aggregates them: the loss is the
    mean over batches weighted by batch size (unweighted per step for ``evaluate_generator``
    and a validation generator); metrics are
    running means weighted by batch size and per-output losses running means over batches
    (Keras's stateful metrics), reported as they stand after each batch."""

    def __init__(self, kinds, by_steps):
        self.kinds, self.by_steps = kinds, by_steps
        self.totals, self.seen, self.steps = np.zeros(len(kinds)), 0, 0

    def add(self, values, size):
        """Take in a batch's values; its logs' values (the loss of the batch, running means;
        a stateful metric's value is its own running result)."""
        values = np.array(values, dtype=np.float64)
        kinds = np.array(self.kinds)
        weight = np.array([1.0 if k == "output_loss" or (k == "loss" and self.by_steps) else size
                           for k in self.kinds])
        self.totals = np.where(kinds == "stateful", values, self.totals + values * weight)
        self.seen, self.steps = self.seen + size, self.steps + 1
        return [float(v) for v in np.where(kinds == "loss", values, self._means())]

    def _means(self):
        return np.where(np.array(self.kinds) == "stateful", self.totals,
                        self.totals / np.maximum(self._counts(), 1))

    def _counts(self):
        return np.array([self.steps if k == "output_loss" or (k == "loss" and self.by_steps)
                         else self.seen for k in self.kinds], dtype=np.float64)

    def result(self):
        return [float(v) for v in self._means()]


def _array_batches(x, y, weights, batch_size, order=None):
    """(inputs, targets, sample weights) of each batch of the arrays, in ``order`` (or as they
    are)."""
    n = len(x[0])
    for start in range(0, n, batch_size):
        index = slice(start, start + batch_size) if order is None else \
            order[start:start + batch_size]
        yield tuple(None if arrays is None else [None if a is None else a[index] for a in arrays]
                    for arrays in (x, y, weights))


def _run(model, c, batches, mode, callbacks, by_steps=False):
    """Run each batch (``mode``: "train", "test" or "predict") with the callbacks' batch hooks;
    the aggregated values (for predict: the outputs, concatenated)."""
    session = _session(c)
    training = mode == "train"
    fetches = ([c.train_op] if training else []) + (
        [o.tensor for o in c.outputs] if mode == "predict" else c.values)
    means, outputs = _Means(c.kinds, by_steps), []
    if mode != "predict":
        for metric in c.stateful:   # each epoch and evaluation starts them afresh (TF 1.15)
            metric.reset_states()
    for i, (x, y, weights, *split) in enumerate(batches):   # split: under a strategy
        size = len(x[0])
        logs = {"batch": i, "size": size}
        getattr(callbacks, "on_%s_batch_begin" % mode)(i, logs)
        results = session.run(fetches, feed_dict=_feed(c, x, y, weights, training, *split))
        if mode == "predict":
            outputs.append(results)
            logs["outputs"] = results
        else:
            logs.update(zip(c.names, means.add(results[-len(c.values):], size)))
        getattr(callbacks, "on_%s_batch_end" % mode)(i, logs)
        if training and model.stop_training:
            break
    if mode == "predict":
        if not outputs:
            return [np.zeros((0, *o.tensor.get_shape().as_list()[1:])) for o in c.outputs]
        return [np.concatenate(parts) for parts in zip(*outputs)]
    return means.result()


def _callbacks(model, callbacks, params, fit=False):
    from zps.keras import callbacks as cbks
    callbacks = list(callbacks or [])
    if fit:
        model.history = cbks.History()
        callbacks.append(model.history)
        if params.get("verbose"):
            callbacks.append(cbks.ProgbarLogger("steps" if params.get("samples") is None
                                                else "samples"))
    callback_list = cbks.CallbackList(callbacks)
    callback_list.set_model(model)
    callback_list.set_params(params)
    return callback_list


def _fit_loop(model, c, train_batches, epochs, initial_epoch, params, callbacks, validation,
              validation_freq, validation_by_steps, train_by_steps=False):
    """Keras's epoch loop: ``train_batches(epoch)`` gives an epoch's batches, ``validation()``
    (or None) the validation batches (from a generator: ``validation_by_steps``; the loss of a
    dataset's epoch is a mean over steps: ``train_by_steps``)."""
    params = dict(params, epochs=epochs, do_validation=validation is not None,
                  metrics=c.names + (["val_" + n for n in c.names] if validation else []))
    callbacks = _callbacks(model, callbacks, params, fit=True)
    model.stop_training = False
    callbacks.on_train_begin()
    for epoch in range(initial_epoch, epochs):
        callbacks.on_epoch_begin(epoch)
        logs = dict(zip(c.names, _run(model, c, train_batches(epoch), "train", callbacks,
                                      train_by_steps)))
        if validation is not None and not model.stop_training and \
                (epoch + 1) % validation_freq == 0:
            callbacks.on_test_begin()
            val = _run(model, c, validation(), "test", callbacks, validation_by_steps)
            callbacks.on_test_end()
            logs.update(("val_" + name, v) for name, v in zip(c.names, val))
        callbacks.on_epoch_end(epoch, logs)
        if model.stop_training:
            break
    callbacks.on_train_end()
    return model.history


def _refuse(what, **given):
    for name, value in given.items():
        if value is not None:
            raise NotImplementedError("zps's Model.%s does not support `%s`" % (what, name))


def _validation_arrays(model, validation_data):
    """The standardized ``(x_val, y_val)`` or ``(x_val, y_val, val_sample_weight)``."""
    if len(validation_data) not in (2, 3):
        raise ValueError("When passing a `validation_data` argument, it must contain either 2 "
                         "items (x_val, y_val), or 3 items (x_val, y_val, val_sample_weights); "
                         "got %d items" % len(validation_data))
    return _standardize(model, *validation_data[:2], "validation", *validation_data[2:])[1:]


def fit(model, x=None, y=None, batch_size=None, epochs=1, verbose=1, callbacks=None,
        validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
        sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
        validation_freq=1, **kwargs):
    """Train on numpy arrays ``x``, ``y`` (arrays, lists or dicts by input / output name) for
    ``epochs - initial_epoch`` epochs of batches of ``batch_size`` (32), shuffled each epoch
    unless ``shuffle=False``; ``validation_data`` ``(x_val, y_val)`` or ``(x_val, y_val,
    val_sample_weight)`` (or the last ``validation_split`` of the data) is evaluated after every
    ``validation_freq`` epochs. ``sample_weight`` (an array per output: ``[n]``, or ``[n,
    time]`` for ``sample_weight_mode="temporal"``) and ``class_weight`` (a dict class ->
    weight per output) weight the examples' losses. ``callbacks`` are called as
    zps/keras/callbacks.py says. Returns ``model.history``, a ``History``:
    ``history.history["loss"]``, metrics, ``val_*``.

    ``x`` may be a ``tf.data`` dataset of ``(x, y)`` or ``(x, y, sample_weight)`` batches
    (``y``, ``batch_size`` and ``validation_split`` not given): ``steps_per_epoch`` of them an
    epoch, all of them (started again each epoch) when None; ``validation_data`` may be one
    too (``validation_steps``). A model compiled in a ``tf.distribute`` strategy's scope
    trains on its replicas (zps/keras/training_distributed.py)."""
    _refuse("fit", **kwargs)
    if shuffle not in (True, False):
        raise NotImplementedError("zps's Model.fit takes shuffle=True or False, not %r"
                                  % (shuffle,))
    c = _compiled(model, "training")
    if c.strategy is not None:
        from zps.keras import training_distributed
        return training_distributed.fit(
            model, c, x, y, batch_size, epochs, verbose, callbacks, validation_split,
            validation_data, shuffle, class_weight, sample_weight, initial_epoch,
            steps_per_epoch, validation_steps, validation_freq)
    if _is_dataset(x):
        _no_batch_size(x, batch_size)
        return _fit_dataset(model, c, x, y, epochs, verbose, callbacks, validation_split,
                            validation_data, class_weight, sample_weight, initial_epoch,
                            steps_per_epoch, validation_steps, validation_freq)
    _refuse("fit", steps_per_epoch=steps_per_epoch)
    if validation_steps is not None and not _is_dataset(validation_data):
        raise ValueError("`validation_steps` is for a dataset given as `validation_data`; "
                         "validation arrays are read in batches of `batch_size`")
    if y is None:
        raise ValueError("Model.fit needs targets `y` (numpy arrays); for a generator or a "
                         "tf.keras.utils.Sequence, call fit_generator")
    c, x, y, w = _standardize(model, x, y, "training", sample_weight, class_weight)
    batch_size = batch_size or 32
    if validation_split and validation_data is None:
        split = int(len(y[0]) * (1.0 - validation_split))
        validation_data = ([a[split:] for a in x], [a[split:] for a in y],
                           [None if a is None else a[split:] for a in w])
        x, y = [a[:split] for a in x], [a[:split] for a in y]
        w = [None if a is None else a[:split] for a in w]
        x_val, y_val, w_val = validation_data
    elif validation_data is not None and not _is_dataset(validation_data):
        x_val, y_val, w_val = _validation_arrays(model, validation_data)

    def validation():
        return _array_batches(x_val, y_val, w_val, batch_size)

    def epoch_batches(epoch):
        order = np.random.permutation(len(y[0])) if shuffle else None
        return _array_batches(x, y, w, batch_size, order)
    params = {"batch_size": batch_size, "samples": len(y[0]), "verbose": verbose,
              "steps": None}
    by_steps = _is_dataset(validation_data)
    if by_steps:
        validation = _validation_dataset(model, c, validation_data, validation_steps)
    return _fit_loop(model, c, epoch_batches, epochs, initial_epoch, params, callbacks,
                     validation if validation_data is not None else None, validation_freq,
                     validation_by_steps=by_steps)


def _validation_dataset(model, c, dataset, steps):
    """The batches of a validation dataset, read from its start each time (as TF 1.15)."""
    steps = _dataset_steps(dataset, steps, "validation_steps")
    return _DatasetBatches(model, c, dataset, "validation", steps, restart=True)


def _fit_dataset(model, c, x, y, epochs, verbose, callbacks, validation_split,
                 validation_data, class_weight, sample_weight, initial_epoch, steps_per_epoch,
                 validation_steps, validation_freq):
    """``fit`` on a ``tf.data`` dataset of ``(x, y)`` or ``(x, y, sample_weight)`` batches:
    ``steps_per_epoch`` of them an epoch (all of them, the dataset started again each epoch,
    when not given); the loss of an epoch is the mean over its steps (TF 1.15)."""
    _check_dataset_arguments(x, y, sample_weight, validation_split)
    steps = _dataset_steps(x, steps_per_epoch, "steps_per_epoch")
    train = _DatasetBatches(model, c, x, "training", steps, restart=steps_per_epoch is None,
                            class_weight=class_weight)
    validation, by_steps = None, False
    if _is_dataset(validation_data):
        validation, by_steps = _validation_dataset(model, c, validation_data,
                                                   validation_steps), True
    elif validation_data is not None:
        x_val, y_val, w_val = _validation_arrays(model, validation_data)

        def validation():
            return _array_batches(x_val, y_val, w_val, 32)
    params = {"batch_size": None, "samples": None, "verbose": verbose, "steps": steps}
    return _fit_loop(model, c, train, epochs, initial_epoch, params, callbacks, validation,
                     validation_freq, validation_by_steps=by_steps, train_by_steps=True)


def evaluate(model, x=None, y=None, batch_size=None, verbose=1, sample_weight=None, steps=None,
             callbacks=None, **kwargs):
    """The loss (and metrics, as a list ``[loss, *metrics]``: ``model.metrics_names``) on
    ``x``, ``y`` (examples weighted by ``sample_weight``; or a ``tf.data`` dataset of ``(x,
    y)`` or ``(x, y, w)`` batches, ``steps`` of them, all when None), in the inference phase,
    aggregated over batches as ``fit`` does (a dataset's loss: the mean over steps)."""
    _refuse("evaluate", **kwargs)
    c = _compiled(model, "evaluating")
    if c.strategy is not None:
        from zps.keras import training_distributed
        return training_distributed.evaluate(model, c, x, y, batch_size, verbose, sample_weight,
                                             steps, callbacks)
    if _is_dataset(x):
        _check_dataset_arguments(x, y, sample_weight)
        _no_batch_size(x, batch_size)
        steps = _dataset_steps(x, steps, "steps")
        return _evaluate_batches(model, c, _DatasetBatches(model, c, x, "evaluating", steps,
                                                           restart=True)(),
                                 {"steps": steps, "samples": None, "verbose": verbose},
                                 callbacks, by_steps=True)
    _refuse("evaluate", steps=steps)
    c, x, y, w = _standardize(model, x, y, "evaluating", sample_weight)
    batch_size = batch_size or 32
    return _evaluate_batches(model, c, _array_batches(x, y, w, batch_size),
                             {"batch_size": batch_size, "samples": len(x[0]),
                              "verbose": verbose, "steps": None}, callbacks)


def _evaluate_batches(model, c, batches, params, callbacks, by_steps=False):
    """``evaluate``'s values over ``batches``, with the test callbacks."""
    callbacks = _callbacks(model, callbacks, dict(params, metrics=list(c.names)))
    callbacks.on_test_begin()
    values = _run(model, c, batches, "test", callbacks, by_steps)
    callbacks.on_test_end()
    return _result(values)


def predict(model, x, batch_size=None, verbose=0, steps=None, callbacks=None, **kwargs):
    """The model's output for ``x`` (a list of arrays for several outputs; or a ``tf.data``
    dataset of input batches, ``steps`` of them, all when None), computed in batches in the
    inference phase."""
    _refuse("predict", **kwargs)
    c = _compiled(model, "predicting")
    if c.strategy is not None:
        from zps.keras import training_distributed
        return training_distributed.predict(model, c, x, batch_size, verbose, steps, callbacks)
    if _is_dataset(x):
        _no_batch_size(x, batch_size)
        steps = _dataset_steps(x, steps, "steps")
        return _predict_batches(model, c, _DatasetBatches(model, c, x, "predicting", steps,
                                                          restart=True, targets=False)(),
                                {"steps": steps, "samples": None, "verbose": verbose},
                                callbacks)
    _refuse("predict", steps=steps)
    c, x, _, _ = _standardize(model, x, None, "predicting")
    batch_size = batch_size or 32
    return _predict_batches(model, c, _array_batches(x, None, None, batch_size),
                            {"batch_size": batch_size, "samples": len(x[0]),
                             "verbose": verbose, "steps": None}, callbacks)


def _predict_batches(model, c, batches, params, callbacks):
    """``predict``'s outputs over ``batches``, with the predict callbacks."""
    callbacks = _callbacks(model, callbacks, params)
    callbacks.on_predict_begin()
    outputs = _run(model, c, batches, "predict", callbacks)
    callbacks.on_predict_end()
    return _result(outputs)


def train_on_batch(model, x, y, sample_weight=None, class_weight=None, reset_metrics=True):
    """One training step on the whole of ``x``, ``y`` (weighted as ``fit``'s): the loss (and
    metrics) before it; stateful metrics start afresh at the next call unless
    ``reset_metrics=False``."""
    c, x, y, w = _standardize(model, x, y, "training", sample_weight, class_weight)
    return _result(_step(c, x, y, w, "train", reset_metrics))


def test_on_batch(model, x, y, sample_weight=None, reset_metrics=True):
    """The loss (and metrics) on the whole of ``x``, ``y`` (weighted by ``sample_weight``), in
    the inference phase."""
    c, x, y, w = _standardize(model, x, y, "evaluating", sample_weight)
    return _result(_step(c, x, y, w, "test", reset_metrics))


def predict_on_batch(model, x):
    """The model's output for the whole of ``x`` in one run."""
    c, x, _, _ = _standardize(model, x, None, "predicting")
    return _result(_step(c, x, None, None, "predict"))


def _step(c, x, y, weights, mode, reset_metrics=True):
    split = ()
    if c.replicas is not None:
        from zps.keras import training_distributed
        split = (training_distributed.on_batch_split(c, "%s_on_batch" % mode, x),)
    fetches = ([c.train_op] if mode == "train" else []) + (
        [o.tensor for o in c.outputs] if mode == "predict" else c.values)
    results = _session(c).run(fetches, feed_dict=_feed(c, x, y, weights, mode == "train",
                                                       *split))
    results = results[1:] if mode == "train" else results
    if mode != "predict" and reset_metrics:   # as TF 1.15's train_on_batch / test_on_batch
        for metric in c.stateful:
            metric.reset_states()
    return results if mode == "predict" else [float(v) for v in results]


# --- generators and tf.keras.utils.Sequence --------------------------------------------------

def _generator_compiled(model, what, method):
    c = _compiled(model, what)
    if c.strategy is not None:   # as TF 1.15
        raise NotImplementedError("`%s` is not supported for models compiled with "
                                  "tf.distribute.Strategy." % method)
    return c


def _generator_batches(model, generator, steps, what, shuffle=False, targets=True,
                       class_weight=None):
    """The (inputs, targets, sample weights) of ``steps`` items of a generator, or of a
    Sequence's batches (``steps`` None: all of them; shuffled if ``shuffle``)."""
    from zps.keras.utils import Sequence
    if isinstance(generator, Sequence):
        count = len(generator) if steps is None else min(steps, len(generator))
        order = np.random.permutation(len(generator))[:count] if shuffle else range(count)
        items = (generator[int(i)] for i in order)
    else:
        if steps is None:
            raise ValueError("`steps` (steps_per_epoch, validation_steps) is needed with a "
                             "Python generator: how many batches make an epoch")
        if not hasattr(generator, "__next__"):
            generator = iter(generator)
        items = (next(generator) for _ in range(steps))
    for item in items:
        if not isinstance(item, tuple):
            item = (item,)
        if len(item) not in (1, 2, 3) or (targets and len(item) == 1):
            raise ValueError("Output of generator should be a tuple (x, y) or (x, y, "
                             "sample_weight)%s; got %d items" % ("" if targets else " or x",
                                                                 len(item)))
        yield _standardized_item(model, item, what, targets, class_weight)


def _standardized_item(model, item, what, targets=True, class_weight=None):
    """(inputs, targets, sample weights) of an item ``(x,)``, ``(x, y)`` or ``(x, y, w)`` of a
    generator or dataset, checked against the model (``targets=False``: x only)."""
    if not targets:
        return _standardize(model, item[0], None, what)[1:]
    return _standardize(model, *item[:2], what, *item[2:], class_weight=class_weight)[1:]


# --- tf.data datasets --------------------------------------------------------------------------

def _is_dataset(x):
    from zps.data.dataset import Dataset
    return isinstance(x, Dataset)


def _check_dataset_arguments(x, y, sample_weight, validation_split=0.0):
    """TF's errors for arguments a dataset ``x`` brings itself (validate_dataset_input)."""
    if y is not None:
        raise ValueError("You passed a dataset or dataset iterator (%s) as input `x` to your "
                         "model. In that case, you should not specify a target (`y`) argument, "
                         "since the dataset or dataset iterator generates both input data and "
                         "target data. Received: %s" % (x, y))
    if sample_weight is not None:
        raise ValueError("`sample_weight` argument is not supported when input `x` is a dataset "
                         "or a dataset iterator. Instead, you can provide sample_weight as the "
                         "third element of your dataset, i.e. (inputs, targets, sample_weight). "
                         "Received: x=%s, sample_weight=%s" % (x, sample_weight))
    if validation_split:
        raise ValueError("`validation_split` argument is not supported when input `x` is a "
                         "dataset or a dataset iterator. Received: x=%s, validation_split=%f"
                         % (x, validation_split))


def _no_batch_size(x, batch_size):
    """TF's error for a ``batch_size`` given with a dataset, which batches itself."""
    if batch_size is not None:
        raise ValueError("The `batch_size` argument must not be specified for the given input "
                         "type. Received input: %s, batch_size: %s" % (x, batch_size))


def _dataset_steps(dataset, steps, steps_name):
    """The steps of an epoch on ``dataset``: ``steps`` if given, else its cardinality (None if
    unknown: until it runs out), with TF's error for an infinite dataset
    (infer_steps_for_dataset, which TF 1.15's Keras calls when no steps are given)."""
    from zps.data import experimental
    if steps is not None:
        return steps
    size = experimental._cardinality(dataset)
    if size == experimental.INFINITE_CARDINALITY:
        raise ValueError("When passing an infinitely repeating dataset, you must specify the "
                         "`%s` argument." % (steps_name,))
    return size if size >= 0 else None


class _DatasetBatches:
    """The batches of a ``tf.data`` dataset as TF 1.15's Keras reads them, through one
    iterator in the model's graph: ``steps`` a call (all of them when None), the iterator
    started again for each call when the steps were not given (else it goes on where the last
    call stopped; running out then stops training, as TF does)."""

    def __init__(self, model, c, dataset, what, steps, restart, targets=True, class_weight=None):
        self.model, self.c, self.what, self.steps = model, c, what, steps
        self.restart, self.targets, self.class_weight = restart, targets, class_weight
        with c.graph.as_default():
            iterator = dataset.make_initializable_iterator()
            self.initializer, self.next = iterator.initializer, iterator.get_next()
        self.started = False

    def __call__(self, epoch=None):
        from zps.framework.errors import OutOfRangeError
        session = _session(self.c)
        if self.restart or not self.started:
            session.run(self.initializer)
            self.started = True
        step = 0
        while self.steps is None or step < self.steps:
            try:
                element = session.run(self.next)
            except OutOfRangeError:
                if not self.restart:
                    _ran_out(self.model)
                return
            yield _standardized_item(self.model, _dataset_item(element, self.targets),
                                     self.what, self.targets, self.class_weight)
            step += 1


def _ran_out(model):
    """TF's end of a dataset that gives fewer batches than the steps asked: training stops,
    with TF's warning."""
    model.stop_training = True
    logging.getLogger("zps").warning(
        "Your dataset ran out of data; interrupting training. Make sure that your dataset can "
        "generate at least `steps_per_epoch * epochs` batches. You may need to use the repeat() "
        "function when building your dataset.")


def _dataset_item(element, targets):
    """A dataset element as ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``: a tuple of 2 or
    3 is (inputs, targets[, weights]), anything else the inputs (unpack_iterator_input)."""
    if isinstance(element, tuple | list):
        if len(element) not in (2, 3):
            raise ValueError("Please provide model inputs as a list or tuple of 2 or 3 elements: "
                             "(input, target) or (input, target, sample_weights) Received %s"
                             % (element,))
        return tuple(element) if targets else (element[0],)
    if targets:
        raise ValueError("The dataset's elements are the inputs only; training and evaluating "
                         "need (inputs, targets) or (inputs, targets, sample_weights) tuples: "
                         "e.g. tf.data.Dataset.zip((x_dataset, y_dataset)).batch(32)")
    return (element,)


def fit_generator(model, generator, steps_per_epoch=None, epochs=1, verbose=1, callbacks=None,
                  validation_data=None, validation_steps=None, validation_freq=1,
                  class_weight=None, max_queue_size=10, workers=1, use_multiprocessing=False,
                  shuffle=True, initial_epoch=0):
    """Train on the ``(x, y)`` or ``(x, y, sample_weight)`` batches of a Python generator
    (``steps_per_epoch`` of them an epoch) or of a ``tf.keras.utils.Sequence`` (all of them, in
    a shuffled order unless ``shuffle=False``; ``on_epoch_end`` after each epoch), weighted by
    ``class_weight`` too if given; ``validation_data``: arrays ``(x, y)`` or ``(x, y, w)`` (in
    batches of 32), a generator (``validation_steps``) or a Sequence. The batches are read in
    this thread (``workers`` and the queue are not used). The values are aggregated as
    ``fit``'s; those of a validation generator as ``evaluate_generator``'s."""
    from zps.keras.utils import Sequence
    c = _generator_compiled(model, "training", "fit_generator")
    if steps_per_epoch is None and not isinstance(generator, Sequence):
        raise ValueError("`steps_per_epoch=None` is only valid for a generator based on the "
                         "`tf.keras.utils.Sequence` class. Please specify `steps_per_epoch` or "
                         "use the `tf.keras.utils.Sequence` class.")

    def epoch_batches(epoch):
        yield from _generator_batches(model, generator, steps_per_epoch, "training",
                                      shuffle=shuffle, class_weight=class_weight)
        if isinstance(generator, Sequence):
            generator.on_epoch_end()
    validation, arrays = None, False
    if validation_data is not None:
        arrays = isinstance(validation_data, tuple) and len(validation_data) in (2, 3) and \
            not isinstance(validation_data[0], Sequence)
        if arrays:
            x_val, y_val, w_val = _validation_arrays(model, validation_data)

            def validation():
                return _array_batches(x_val, y_val, w_val, 32)
        else:
            def validation():
                return _generator_batches(model, validation_data, validation_steps,
                                          "validation")
    steps = steps_per_epoch if steps_per_epoch is not None else len(generator)
    params = {"steps": steps, "samples": None, "verbose": verbose, "batch_size": None}
    return _fit_loop(model, c, epoch_batches, epochs, initial_epoch, params, callbacks,
                     validation, validation_freq, validation_by_steps=not arrays)


def evaluate_generator(model, generator, steps=None, callbacks=None, max_queue_size=10,
                       workers=1, use_multiprocessing=False, verbose=0):
    """``evaluate`` over the ``(x, y)`` or ``(x, y, sample_weight)`` batches of a generator
    (``steps`` of them) or of a Sequence; the loss is the mean over steps, metrics weighted by
    batch size (as TF 1.15)."""
    c = _generator_compiled(model, "evaluating", "evaluate_generator")
    return _evaluate_batches(model, c, _generator_batches(model, generator, steps, "evaluating"),
                             {"steps": steps, "samples": None, "verbose": verbose}, callbacks,
                             by_steps=True)


def predict_generator(model, generator, steps=None, callbacks=None, max_queue_size=10,
                      workers=1, use_multiprocessing=False, verbose=0):
    """``predict`` over the batches (``x``, ``(x, y)`` or ``(x, y, w)``) of a generator or of a
    Sequence."""
    c = _generator_compiled(model, "predicting", "predict_generator")
    return _predict_batches(model, c, _generator_batches(model, generator, steps, "predicting",
                                                         targets=False),
                            {"steps": steps, "samples": None, "verbose": verbose}, callbacks)


__all__ = ["compile", "evaluate", "evaluate_generator", "fit", "fit_generator", "input_names",
           "output_names", "predict", "predict_generator", "predict_on_batch", "test_on_batch",
           "train_on_batch"]
