"""``tf.keras.Model`` (functional: ``Model(inputs, outputs)``) and ``tf.keras.Sequential`` in
graph mode: containers of Keras layers, callable on tensors like a layer (each call applies
the same layers, so the variables are shared), with ``layers``, ``weights``,
``get_weights``/``set_weights``, ``summary()``, ``save_weights``/``load_weights`` (a
name-based checkpoint, through ``tf.train.Saver``), and configs and whole-model saving
(``get_config``/``from_config``, ``to_json``/``model_from_json``, ``save``/``load_model``:
zps/keras/saving.py, JSON and safetensors, no HDF5).

``compile``/``fit``/``evaluate``/``predict`` (and the ``*_on_batch`` steps) run Keras's
training loop on numpy arrays (zps/keras/training.py). In a ``tf.Session``,
``MonitoredTrainingSession`` or Estimator ``model_fn``, build the loss from ``model(x)`` (plus
``model.losses``) and train it with an optimizer, running ``model.get_updates_for(x)`` with
the train op.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="relu",
...                                                        input_shape=(3,)),
...                                  tf.keras.layers.Dense(1)])
...     y = model(tf.placeholder(tf.float32, [None, 3]))
...     print(y.get_shape().as_list(), [v.name for v in model.trainable_weights])
[None, 1] ['dense/kernel:0', 'dense/bias:0', 'dense_1/kernel:0', 'dense_1/bias:0']
"""

from zps.keras import saving, training
from zps.keras.engine import Input, InputLayer, Layer, call_accepts, node_of
from zps.ops import layers_impl


def _dedup(variables):
    seen, out = set(), []
    for v in variables:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


class Model(Layer):
    """TF's ``tf.keras.Model`` in graph mode: ``Model(inputs, outputs)`` over the Keras layer
    calls between ``inputs`` (``tf.keras.Input`` tensors) and ``outputs``; calling the model
    on other tensors applies the same layers to them. A subclass may define ``call`` instead
    (its layers are then those set as attributes).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.keras.Input((3,))
    ...     model = tf.keras.Model(x, tf.keras.layers.Dense(2)(x))
    ...     a, b = model(tf.ones([1, 3])), model(tf.zeros([5, 3]))
    ...     print(model.name, [l.name for l in model.layers], len(model.weights))
    model ['input_1', 'dense'] 2
    """

    def __init__(self, *args, **kwargs):
        inputs = kwargs.pop("inputs", args[0] if args else None)
        outputs = kwargs.pop("outputs", args[1] if len(args) > 1 else None)
        if len(args) > 2:
            raise TypeError("Model takes inputs and outputs (and keyword arguments), got %d "
                            "positional arguments" % len(args))
        super().__init__(**kwargs)
        self._layers, self._network_nodes = [], None
        self.inputs = self.outputs = None
        if inputs is not None or outputs is not None:
            if inputs is None or outputs is None:
                raise ValueError("A functional Model needs both `inputs` and `outputs`")
            self._init_graph_network(inputs, outputs)

    def _init_graph_network(self, inputs, outputs):
        self._nested_inputs, self._nested_outputs = inputs, outputs
        self.inputs = list(layers_impl._flat(inputs))
        self.outputs = list(layers_impl._flat(outputs))
        known = {id(t) for t in self.inputs}
        for t in self.inputs:
            node = node_of(t)
            if node is None or not isinstance(node.layer, InputLayer):
                raise ValueError("Input tensors to a Model must come from `tf.keras.Input`. "
                                 "Received: %s (missing previous layer metadata)" % (t,))
        order, visited = [], set()

        def visit(tensor):
            if id(tensor) in known:
                return
            node = node_of(tensor)
            if node is None or isinstance(node.layer, InputLayer):
                raise ValueError("Graph disconnected: cannot obtain value for tensor %s: it is "
                                 "not computed from the model's inputs %s by Keras layers"
                                 % (tensor.name, [t.name for t in self.inputs]))
            if id(node) in visited:
                return
            visited.add(id(node))
            for x in layers_impl._flat(node.inputs):
                visit(x)
            order.append(node)
        for t in self.outputs:
            visit(t)
        self._network_nodes = order
        layers = [node_of(t).layer for t in self.inputs] + [n.layer for n in order]
        self._layers = [layer for i, layer in enumerate(layers) if layer not in layers[:i]]
        self._output_shape = [tuple(t.get_shape().as_list()) for t in self.outputs]
        if len(self._output_shape) == 1:
            self._output_shape = self._output_shape[0]
        self.built = True

    @property
    def input(self):
        return self._nested_inputs if self.inputs is not None else None

    @property
    def output(self):
        return self._nested_outputs if self.outputs is not None else None

    @property
    def layers(self):
        """The model's layers (for a functional model its InputLayers first), each once."""
        if self._network_nodes is None and not self._layers:   # a subclass: its attributes
            return [v for v in vars(self).values() if isinstance(v, layers_impl.Layer)]
        return list(self._layers)

    def get_layer(self, name=None, index=None):
        """The layer called ``name``, or ``layers[index]``."""
        if index is not None:
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError("No such layer: %s. Existing layers are: %s"
                         % (name, [layer.name for layer in self.layers]))

    def build(self, input_shape):
        self.built = True

    def call(self, inputs, training=None):
        if self._network_nodes is None:
            raise NotImplementedError("A subclassed Model must define `call`; or build a "
                                      "functional one: tf.keras.Model(inputs, outputs)")
        given = layers_impl._flat(inputs)
        if len(given) != len(self.inputs):
            raise ValueError("Model %s expects %d input(s), got %d"
                             % (self.name, len(self.inputs), len(given)))
        mapped = {id(a): b for a, b in zip(self.inputs, given)}

        def new(structure):
            if isinstance(structure, list | tuple):
                return type(structure)(new(x) for x in structure)
            return mapped[id(structure)]
        for node in self._network_nodes:
            kwargs = dict(node.kwargs)
            if training is not None and call_accepts(node.layer, "training"):
                kwargs["training"] = training
            outputs = node.layer(new(node.inputs), *node.args, **kwargs)
            for a, b in zip(layers_impl._flat(node.outputs), layers_impl._flat(outputs)):
                mapped[id(a)] = b
        return new(self._nested_outputs)

    # --- weights, losses, updates: the layers' ------------------------------------------------

    def _sublayers(self):
        return [layer for layer in self.layers if layer is not self]

    @property
    def trainable_weights(self):
        if not self.trainable:
            return []
        return _dedup(self._trainable_weights + [
            v for layer in self._sublayers() for v in layer.trainable_weights])

    @property
    def non_trainable_weights(self):
        own = self._trainable_weights + self._non_trainable_weights if not self.trainable \
            else self._non_trainable_weights
        inner = [v for layer in self._sublayers() for v in
                 (layer.non_trainable_weights if self.trainable else layer.weights)]
        return [v for v in _dedup(own + inner) if not any(v is t for t in self.trainable_weights)]

    @property
    def weights(self):
        return self.trainable_weights + self.non_trainable_weights

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    @property
    def losses(self):
        return self._losses + [x for layer in self._sublayers() for x in layer.losses]

    @property
    def updates(self):
        return self._updates + [x for layer in self._sublayers() for x in layer.updates]

    def count_params(self):
        """The number of scalars in the model's weights."""
        return sum(w.get_shape().num_elements() for w in self.weights)

    # --- summary and checkpoints -----------------------------------------------------------------

    def summary(self, line_length=None, positions=None, print_fn=None):
        """Print a table of the layers (name and class, output shape, parameter count) and the
        totals, in TF 1.x Keras's layout."""
        print_fn = print_fn or print
        line_length = line_length or 65
        positions = positions or [.45, .85, 1.]
        if positions[-1] <= 1:
            positions = [int(line_length * p) for p in positions]

        def row(fields):
            line = ""
            for field, end in zip(fields, positions):
                line = (line + str(field))[:end - 1] + " "
                line += " " * (end - len(line))
            print_fn(line)
        print_fn('Model: "%s"' % self.name)
        print_fn("_" * line_length)
        row(["Layer (type)", "Output Shape", "Param #"])
        print_fn("=" * line_length)
        layers = self._summary_layers()
        for i, layer in enumerate(layers):
            try:   # a subclassed model's layers may be called on anything: TF says "multiple"
                shape = layer.output_shape if self._graph_network() else "multiple"
            except AttributeError:
                shape = "multiple" if layer.built else "(unbuilt)"
            params = layer.count_params() if layer.built else 0
            row(["%s (%s)" % (layer.name, type(layer).__name__), shape, params])
            print_fn(("=" if i == len(layers) - 1 else "_") * line_length)
        trainable = sum(w.get_shape().num_elements() for w in self.trainable_weights)
        total = self.count_params()
        print_fn(f"Total params: {total:,}")
        print_fn(f"Trainable params: {trainable:,}")
        print_fn(f"Non-trainable params: {total - trainable:,}")
        print_fn("_" * line_length)

    def _summary_layers(self):
        return self.layers

    def _graph_network(self):
        """Whether the model's layers are a fixed graph (functional or Sequential)."""
        return type(self).call in (Model.call, Sequential.call)

    def save_weights(self, filepath, overwrite=True, save_format=None):
        """Save the model's weights to a TF checkpoint at ``filepath`` (by variable name,
        through ``tf.train.Saver`` and Keras's session, as TF 1.15's Keras)."""
        from zps.train.saver import Saver
        _check_checkpoint_format(filepath, save_format)
        Saver(var_list=self.weights).save(_session(self, "save_weights"), filepath)

    def load_weights(self, filepath, by_name=False):
        """Restore the model's weights from a checkpoint ``save_weights`` wrote (or any TF
        checkpoint with variables of the same names) through Keras's session."""
        from zps.train.saver import Saver
        _check_checkpoint_format(filepath, None)
        Saver(var_list=self.weights).restore(_session(self, "load_weights"), filepath)

    # --- Keras's training loop (zps/keras/training.py) ------------------------------------------

    compile, fit, evaluate, predict = (training.compile, training.fit, training.evaluate,  # noqa: A003
                                       training.predict)
    train_on_batch, test_on_batch, predict_on_batch = (
        training.train_on_batch, training.test_on_batch, training.predict_on_batch)
    fit_generator, evaluate_generator, predict_generator = (
        training.fit_generator, training.evaluate_generator, training.predict_generator)

    @property
    def metrics_names(self):
        """The names of ``evaluate``'s values: ``["loss", *per-output losses, *metrics]``
        (known once the model is compiled and built)."""
        c = getattr(self, "_compiled", None)
        return list(c.names) if c is not None and c.built else []

    @property
    def output_names(self):
        """The names of the outputs (their layers'), the keys of ``loss`` and ``y`` dicts."""
        return training.output_names(self)

    @property
    def input_names(self):
        """The names of the inputs (their InputLayers'), the keys of an ``x`` dict."""
        return training.input_names(self)

    # --- configs and saving (zps/keras/saving.py) -------------------------------------------------

    def save(self, filepath, overwrite=True, include_optimizer=True, save_format=None):
        """Save the model (config, weights, training config and optimizer state) as a directory
        ``filepath`` of JSON and safetensors (zps/keras/saving.py); zps writes no HDF5."""
        if save_format not in (None, "tf", "zps"):
            raise ValueError("zps's Model.save writes its own format (a directory of JSON and "
                             "safetensors); save_format=%r is not supported" % (save_format,))
        saving.save_model(self, filepath, overwrite, include_optimizer)

    def get_config(self):
        """The model's layers and their connections (TF 1.15's layout), for ``from_config``."""
        return saving.model_config(self)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """The functional model ``get_config`` described (new layers and weights)."""
        return saving.functional_from_config(cls, config, custom_objects)

    def to_json(self, **kwargs):
        """The model's config as a JSON string, for ``tf.keras.models.model_from_json``."""
        return saving.to_json(self, **kwargs)


def _check_checkpoint_format(filepath, save_format):
    if save_format not in (None, "tf") or str(filepath).endswith((".h5", ".hdf5", ".keras")):
        raise ValueError("zps's tf.keras saves weights as TF checkpoints only (no HDF5): give a "
                         "checkpoint prefix such as '/tmp/model/weights' instead of %r"
                         % (str(filepath),))


def _session(model, what):
    # TF 1.15's Keras saves and loads weights in its session (backend.get_session(): the
    # default session, else Keras's own, as fit/evaluate/predict use).
    del model, what
    from zps.keras import backend
    return backend.get_session()


class Sequential(Model):
    """TF's ``tf.keras.Sequential``: the layers applied one after the other. When the first
    layer has an ``input_shape`` (or is an ``InputLayer``), the model is built at once on an
    ``Input`` (variables ``dense/kernel``...); otherwise on its first call, in a scope named
    after the model (``sequential/dense/kernel``...), as TF's Keras does.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    ...     _ = model(tf.ones([1, 3]))
    ...     print(model.name, [v.name for v in model.weights])
    sequential ['sequential/dense/kernel:0', 'sequential/dense/bias:0']
    """

    def __init__(self, layers=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self._input_layer = None
        for layer in layers or []:
            self.add(layer)

    def add(self, layer):
        """Append ``layer``; in a model with a known input, apply it at once."""
        if not isinstance(layer, layers_impl.Layer):
            raise TypeError("The added layer must be an instance of class Layer. Found: %r"
                            % (layer,))
        if isinstance(layer, InputLayer):
            if self._layers:
                raise ValueError("An InputLayer can only be the first layer of a Sequential")
            self._input_layer = layer
            self.inputs, self.outputs = [layer.output], [layer.output]
            return
        if self.outputs is None and not self._layers and \
                getattr(layer, "_batch_input_shape", None) is not None:
            x = Input(batch_shape=layer._batch_input_shape, dtype=layer.dtype,
                      name=layer.name + "_input")
            self._input_layer = node_of(x).layer
            self.inputs, self.outputs = [x], [x]
        self._layers.append(layer)
        if self.outputs is not None:
            self.outputs = [layer(self.outputs[0])]
            self.built = True

    @property
    def layers(self):
        return list(self._layers)

    def pop(self):
        """Remove the last layer (from a model not yet built only)."""
        if not self._layers:
            raise TypeError("There are no layers in the model.")
        if self.built:
            raise NotImplementedError("zps's Sequential.pop works before the model is built "
                                      "only")
        self._layers.pop()

    @property
    def input(self):
        return self.inputs[0] if self.inputs else None

    @property
    def output(self):
        return self.outputs[-1] if self.outputs else None

    @property
    def output_shape(self):
        if self.outputs:
            return tuple(self.outputs[0].get_shape().as_list())
        return super().output_shape

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """The Sequential model ``get_config`` described (new layers and weights)."""
        return saving.sequential_from_config(cls, config, custom_objects)

    def call(self, inputs, training=None):
        x = inputs
        for layer in self._layers:
            kwargs = {}
            if training is not None and call_accepts(layer, "training"):
                kwargs["training"] = training
            x = layer(x, **kwargs)
        return x


load_model, save_model = saving.load_model, saving.save_model
model_from_json = saving.model_from_json

__all__ = ["Model", "Sequential", "load_model", "model_from_json", "save_model"]
