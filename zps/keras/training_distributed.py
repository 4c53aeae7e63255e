"""Keras's training loop under a ``tf.distribute`` strategy, as TF 1.15's graph-mode Keras runs
it (training_distributed.py, distributed_training_utils.py):

* a model compiled in a strategy's ``scope()`` is distributed with it; its variables must have
  been made in that scope (MirroredVariables...), it must know its inputs (functional, or a
  ``Sequential`` with an ``input_shape``); ``sample_weight_mode``, ``weighted_metrics``,
  ``class_weight``, ``validation_split`` and the ``*_generator`` methods are refused, and a
  learning-rate callback needs a Keras optimizer, with TF's errors;
* each replica has its own placeholders and forward pass; its loss (the mean over its part of
  the batch, plus ``model.losses``) is divided by the number of replicas and its optimizer
  step (a Keras or a tf.train optimizer) adds up the replicas' gradients before one update
  (zps/train/optimizer.py). The loss reported is the sum of the replicas' losses; metrics and
  per-output losses are those of the whole batch (the replicas' outputs concatenated), so
  with equal parts the numbers are those of one device;
* ``batch_size`` is the global batch (32, or the number of samples if smaller, when not
  given); TF 1.15's rebatching gives each replica ``ceil(batch_size / replicas)``
  consecutive examples a step, read from the stream of examples. As TF 1.15 reads numpy
  arrays through a dataset repeated ``epochs`` times, an epoch is ``ceil(samples /
  batch_size)`` steps read on from the last one and only the last batch of the last epoch may
  be short: it is dropped (with TF's warning) if it does not reach every replica.
  ``evaluate`` and ``predict`` need ``samples % batch_size == 0``;
* a ``tf.data`` dataset's batches are split the same way (a batch size that does not divide
  by the number of replicas only where ``batch`` comes last); the loss of an epoch is the
  mean over its steps;
* ``fit``/``evaluate``/``predict`` enter the strategy's scope (in another strategy's scope that
  is TF's "Mixing different tf.distribute.Strategy objects" error); ``train_on_batch`` and co.
  are refused inside the scope, as TF does, and outside it run one step split over the
  replicas;
* a ``ParameterServerStrategy`` over a cluster is refused: TF 1.15 runs Keras on one through
  its distribute coordinator, which zps does not have (use an Estimator with
  ``RunConfig(train_distribute=...)``); without a cluster it trains as on one device.

Not as TF yet: batch normalization's moving statistics are mirrored variables each replica
moves alone (their first copy is read), where TF makes them ON_READ, read as the replicas'
mean.

>>> import numpy as np, zps as tf
>>> with tf.Graph().as_default():
...     strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
...     with strategy.scope():
...         model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(1,),
...                                                            kernel_initializer="zeros")])
...         model.compile(tf.keras.optimizers.SGD(0.5), "mse")
...     history = model.fit(np.ones((4, 1)), np.ones((4, 1)), batch_size=4, verbose=0)
...     print(history.history["loss"], model.get_weights()[0].tolist())
[1.0] [[1.0]]
"""

import numpy as np

from zps.distribute import distribute_lib, input_lib
from zps.framework.constant import constant_value
from zps.framework.graph import get_default_graph
from zps.keras import backend, optimizers, training
from zps.keras import callbacks as callbacks_module
from zps.ops import array_ops, control_flow_ops, math_ops

# --- compile ----------------------------------------------------------------------------------

def compile_strategy(model, sample_weight_mode, weighted_metrics):
    """The strategy ``model.compile`` distributes the model with: that of the scope it is
    called in (in cross-replica context), else None; with TF 1.15's checks."""
    if not (distribute_lib.has_strategy() and distribute_lib.in_cross_replica_context()):
        return None
    strategy = distribute_lib.get_strategy()
    if getattr(strategy.extended, "_cluster_spec", None):
        raise NotImplementedError(
            "zps's Keras does not train on a ParameterServerStrategy over a cluster: TF 1.15 "
            "runs Keras on one through its distribute coordinator, which zps does not have. "
            "Use tf.estimator with RunConfig(train_distribute=strategy), or train the model's "
            "loss with a tf.train optimizer in a MonitoredTrainingSession")
    if sample_weight_mode:
        raise NotImplementedError("sample_weight_mode is not supported with "
                                  "tf.distribute.Strategy.")
    if weighted_metrics:
        raise NotImplementedError("weighted_metrics is not supported with "
                                  "tf.distribute.Strategy.")
    if not model.built or not model.inputs or not model.outputs or not model._graph_network():
        raise ValueError("We currently do not support distribution strategy with a `Sequential` "
                         "model that is created without `input_shape`/`input_dim` set in its "
                         "first layer or a subclassed model.")
    for v in model.weights:
        if not _created_in_scope(strategy, v):
            raise ValueError(
                "Variable (%s) was not created in the distribution strategy scope of (%s). It "
                "is most likely due to not all layers or the model or optimizer being created "
                "outside the distribution strategy scope. Try to make sure your code looks "
                "similar to the following.\nwith strategy.scope():\n  model=_create_model()\n"
                "  model.compile(...)" % (v, strategy))
    return strategy


def _created_in_scope(strategy, v):
    if strategy.extended.variable_created_in_scope(v):
        return True
    # The one-replica strategies of zps (OneDevice, a local ParameterServerStrategy) make
    # plain variables, which do not record their strategy: those cannot be told apart.
    return strategy.num_replicas_in_sync == 1 and \
        getattr(v, "_distribute_strategy", None) is None


# --- the graph: one replica per device ----------------------------------------------------------

def build(model, c):
    """Each replica's placeholders, outputs, loss and optimizer step (``c.replicas``); the
    whole batch's outputs, loss and metrics (``c.outputs``, ``c.values``); ``c.train_op``
    runs every replica's step."""
    strategy = c.strategy
    c.inputs, c.input_names = list(model.inputs), training.input_names(model)
    names = training.output_names(model)
    backend.learning_phase()   # one for the graph, made outside the replicas' name scopes
    parts = [None] * strategy.num_replicas_in_sync
    with strategy.scope():
        if c.optimizer is not None:
            training._learning_rate_variable(c.optimizer)
        # (the replicas' arguments would be copied for each: ``parts`` is passed by closure)
        steps = strategy.extended.call_for_each_replica(
            lambda: _replica(model, c, names, parts))
        c.train_op = control_flow_ops.group(*strategy.experimental_local_results(steps))
    c.replicas = parts
    c.built = True


def _replica(model, c, names, parts):
    """One replica's part of the graph (in its replica context); its optimizer step."""
    ctx = distribute_lib.get_replica_context()
    inputs = [array_ops.placeholder(p.dtype, p.get_shape(), name=p.op.name)
              for p in model.inputs]
    tensors, losses = training.call_with_losses(model, inputs, replica=True)
    part = parts[ctx.replica_id_in_sync_group] = {"inputs": inputs}
    if c.optimizer is None:
        part["outputs"] = [training._Output(n, t, None, 1.0) for n, t in zip(names, tensors)]
    else:
        part["outputs"] = training._outputs(c, names, tensors)
        # TF 1.15 scales each replica's loss for the sum of the replicas' gradients.
        part["loss"] = training._total_loss(part["outputs"], losses) / float(
            ctx.num_replicas_in_sync)
    values = ctx.merge_call(lambda strategy: _whole_batch(c, parts))
    if c.optimizer is None:
        return control_flow_ops.no_op()
    with get_default_graph().control_dependencies(values):   # values before the update
        return training._train_op(model, c.optimizer, part["loss"], inputs)


def _whole_batch(c, parts):
    """(Cross-replica) the outputs of the whole batch and the values a step reports."""
    n = len(parts)
    outputs = []
    for i, first in enumerate(parts[0]["outputs"]):
        ours = [p["outputs"][i] for p in parts]
        o = training._Output(first.name, _concat([x.tensor for x in ours]), first.loss_fn,
                             first.weight)
        outputs.append(o)
        if c.optimizer is None:
            continue
        o.mode, o.target = first.mode, _concat([x.target for x in ours])
        o.mask = None if first.mask is None else _concat([x.mask for x in ours])
        o.weights = None if first.mask is None else _concat([x.weights for x in ours])
        o.loss = math_ops.add_n([x.loss for x in ours]) / float(n)
    if c.optimizer is None:
        training._predict_only(c, outputs)
        return []
    c.outputs = outputs
    training._add_metrics(c, outputs)
    c.total_loss = c.values[0] = math_ops.add_n([p["loss"] for p in parts])
    return list(c.values)


def _concat(tensors):
    return tensors[0] if len(tensors) == 1 else array_ops.concat(tensors, 0)


def feed(c, x, y, weights, split):
    """Each replica's part of a batch, ``split`` examples each (the last may have fewer)."""
    result = {}
    split = len(x[0]) if split is None else split   # (one replica)
    for r, part in enumerate(c.replicas):
        rows = slice(r * split, (r + 1) * split)
        result.update(zip(part["inputs"], (a[rows] for a in x)))
        if y is not None:
            result.update((o.target, a[rows]) for o, a in zip(part["outputs"], y))
        if weights is not None:
            result.update((o.sample_weight, w[rows]) for o, w in zip(part["outputs"], weights)
                          if w is not None)
    return result


# --- batches ----------------------------------------------------------------------------------

def _global_batch(samples, batch_size, allow_partial):
    """(batch size, steps) of numpy input (TF 1.15's get_input_params in graph mode)."""
    batch_size = min(samples, 32) if batch_size is None else batch_size
    if allow_partial:
        return batch_size, -(-samples // batch_size)
    if samples % batch_size:
        raise ValueError("The number of samples %s is not divisible by batch size %s."
                         % (samples, batch_size))
    return batch_size, samples // batch_size


def _replica_batch(strategy, batch_size):
    """The examples each replica takes from a batch of ``batch_size``: TF 1.15's rebatching
    makes it ``ceil(batch_size / replicas)``, and a step reads that many for each replica
    from the stream of examples."""
    return -(-batch_size // strategy.num_replicas_in_sync)


def _split(batches, split, replicas, model=None):
    """``batches`` (x, y, weights) with the examples each replica takes (``split``), up to one
    that does not reach every replica: TF's end of input (which, with ``model``, stops
    training with TF's warning, as when steps were given)."""
    for x, y, weights in batches:
        if len(x[0]) <= (replicas - 1) * split:
            if model is not None:
                training._ran_out(model)
            return
        yield x, y, weights, split


class _Stream:
    """TF 1.15's numpy input under a strategy: the examples of ``epochs`` epochs (each in a
    new order if ``shuffle``) one after the other, in batches of ``batch_size``, each call
    the next ``steps`` of them."""

    def __init__(self, arrays, batch_size, steps, epochs, shuffle):
        self.arrays, self.batch_size, self.steps = arrays, batch_size, steps
        samples = len(arrays[0][0])
        self.order = iter(np.concatenate([np.zeros(0, int)] + [
            np.random.permutation(samples) if shuffle else np.arange(samples)
            for _ in range(epochs)]))

    def __call__(self, epoch=None):
        for _ in range(self.steps):
            index = np.fromiter((i for _, i in zip(range(self.batch_size), self.order)), int)
            if not len(index):
                return
            yield tuple(None if arrays is None else [None if a is None else a[index]
                                                     for a in arrays]
                        for arrays in self.arrays)


def _dataset_batches(model, c, dataset, what, steps, restart, targets=True):
    """``fn(epoch)`` -> a dataset's batches, each split among the replicas (TF's
    _split_dataset_batch: its last ``batch`` must divide by the number of replicas)."""
    n = c.strategy.num_replicas_in_sync
    if n == 1:
        return training._DatasetBatches(model, c, dataset, what, steps, restart, targets)
    input_lib.split_dataset_batch(dataset, n)   # TF's errors
    split = _replica_batch(c.strategy, int(constant_value(
        input_lib._batch_of(dataset)._tensors[0])))
    # The replicas read the stream of examples in batches of ceil(batch_size / n), n a step.
    reader = training._DatasetBatches(model, c, dataset.unbatch().batch(split * n), what,
                                      steps, restart, targets)
    return lambda epoch=None: _split(reader(epoch), split, n, None if restart else model)


# --- fit, evaluate, predict -------------------------------------------------------------------

def fit(model, c, x, y, batch_size, epochs, verbose, callbacks, validation_split,
        validation_data, shuffle, class_weight, sample_weight, initial_epoch, steps_per_epoch,
        validation_steps, validation_freq):
    """``Model.fit`` under the model's strategy (see the module docstring)."""
    strategy = c.strategy
    n = strategy.num_replicas_in_sync
    _check_callbacks(callbacks, model.optimizer)
    with strategy.scope():
        if class_weight:
            raise NotImplementedError("`class_weight` is currently not supported when using "
                                      "tf.distribute.Strategy.")
        if training._is_dataset(x):
            training._check_dataset_arguments(x, y, sample_weight, validation_split)
            training._no_batch_size(x, batch_size)
            steps = training._dataset_steps(x, steps_per_epoch, "steps_per_epoch")
            train = _dataset_batches(model, c, x, "training", steps,
                                     restart=steps_per_epoch is None)
        else:
            training._refuse("fit", steps_per_epoch=steps_per_epoch)
            _, x, y, w = training._standardize(model, x, y, "training", sample_weight)
            batch_size, steps = _global_batch(len(x[0]), batch_size, True)
            split = _replica_batch(strategy, batch_size)
            stream = _Stream((x, y, w), split * n, steps, epochs, shuffle)

            def train(epoch):
                return _split(stream(epoch), split, n, model)
        validation = None
        if validation_data is not None:
            validation = _validation(model, c, validation_data, batch_size, validation_steps)
        elif validation_split:
            raise ValueError("validation_split argument is not supported with distribution "
                             "strategies.")
        params = {"batch_size": batch_size, "samples": None, "verbose": verbose,
                  "steps": steps}
        return training._fit_loop(model, c, train, epochs, initial_epoch, params, callbacks,
                                  validation, validation_freq, validation_by_steps=True,
                                  train_by_steps=True)


def _check_callbacks(callbacks, optimizer):
    """TF's error for callbacks that change the learning rate of a tf.train optimizer."""
    changes_lr = callbacks_module.LearningRateScheduler | callbacks_module.ReduceLROnPlateau
    for callback in callbacks or []:
        if isinstance(callback, changes_lr) and not isinstance(optimizer, optimizers.Optimizer):
            raise ValueError("You must specify a Keras Optimizer V2 when using %s callback with "
                             "DistributionStrategy." % (callback,))


def _validation(model, c, data, batch_size, steps):
    """``fn()`` -> the batches of ``fit``'s ``validation_data``, split among the replicas."""
    if training._is_dataset(data):
        steps = training._dataset_steps(data, steps, "validation_steps")
        return _dataset_batches(model, c, data, "validation", steps, restart=True)
    x, y, w = training._validation_arrays(model, data)
    batch_size, _ = _global_batch(len(x[0]), batch_size, False)
    split = _replica_batch(c.strategy, batch_size)
    n = c.strategy.num_replicas_in_sync
    return lambda: _split(training._array_batches(x, y, w, split * n), split, n)


def evaluate(model, c, x, y, batch_size, verbose, sample_weight, steps, callbacks):
    """``Model.evaluate`` under the model's strategy."""
    with c.strategy.scope():
        if training._is_dataset(x):
            training._check_dataset_arguments(x, y, sample_weight)
            training._no_batch_size(x, batch_size)
            steps = training._dataset_steps(x, steps, "steps")
            batches = _dataset_batches(model, c, x, "evaluating", steps, restart=True)()
        else:
            training._refuse("evaluate", steps=steps)
            _, x, y, w = training._standardize(model, x, y, "evaluating", sample_weight)
            batches, batch_size, steps = _array_input(c, x, y, w, batch_size)
        return training._evaluate_batches(model, c, batches, {
            "batch_size": batch_size, "samples": None, "verbose": verbose, "steps": steps},
            callbacks, by_steps=True)


def predict(model, c, x, batch_size, verbose, steps, callbacks):
    """``Model.predict`` under the model's strategy."""
    with c.strategy.scope():
        if training._is_dataset(x):
            training._no_batch_size(x, batch_size)
            steps = training._dataset_steps(x, steps, "steps")
            batches = _dataset_batches(model, c, x, "predicting", steps, restart=True,
                                       targets=False)()
        else:
            training._refuse("predict", steps=steps)
            _, x, _, _ = training._standardize(model, x, None, "predicting")
            batches, batch_size, steps = _array_input(c, x, None, None, batch_size)
        return training._predict_batches(model, c, batches, {
            "batch_size": batch_size, "samples": None, "verbose": verbose, "steps": steps},
            callbacks)


def _array_input(c, x, y, w, batch_size):
    """(batches, batch size, steps) of evaluate's or predict's arrays."""
    batch_size, steps = _global_batch(len(x[0]), batch_size, False)
    split = _replica_batch(c.strategy, batch_size)
    n = c.strategy.num_replicas_in_sync
    batches = _split(training._array_batches(x, y, w, split * n), split, n)
    return batches, batch_size, steps


def on_batch_split(c, what, x):
    """The examples each replica takes in ``train_on_batch`` and co.: TF refuses them in the
    strategy's scope; outside it the batch must divide among the replicas."""
    if distribute_lib.in_cross_replica_context():
        raise NotImplementedError("`%s` is not supported for models distributed with "
                                  "tf.distribute.Strategy." % what)
    return _replica_batch(c.strategy, len(x[0]))
