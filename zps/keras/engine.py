"""The base of ``tf.keras`` layers in graph mode, on tf.layers' ``Layer`` (zps/ops/layers_impl.py):

* names are given when a layer is made, from the class name in snake case, made unique per
  graph (``dense``, ``dense_1``...), and its variables are ``<name>/kernel:0`` ... as TF's;
* initializers and regularizers may be given by name (``kernel_initializer="he_normal"``);
* ``get_config()`` gives Keras's config: ``name``, ``trainable``, ``dtype``
  (``batch_input_shape`` where given) and each of the class's ``_config_keys``, the layer's
  attribute of that name as Keras serializes it (``serialized``), so that
  ``type(layer).from_config(layer.get_config())`` makes the same layer again;
* ``input_shape``/``batch_input_shape``/``input_dim`` are kept for ``Sequential``;
* as TF's Keras (and unlike tf.layers), the layer's losses and update ops stay in
  ``layer.losses`` / ``layer.updates``; they are not added to ``tf.GraphKeys``' collections:
  add ``model.losses`` to your loss and run ``model.get_updates_for(x)`` with your train op;
* each call is recorded (inputs -> outputs), so that ``tf.keras.Model(inputs, outputs)`` can
  apply the same layers to other tensors;
* Keras masks ride on tensors (``tensor._keras_mask``, a bool [batch, time]): a call given no
  ``mask`` gets its inputs' masks when ``call`` takes one, and its outputs are marked with
  ``compute_mask(inputs, mask)`` (the input mask where the layer ``supports_masking``).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     x = tf.keras.Input((3,))
...     dense = tf.keras.layers.Dense(2, activation="relu")
...     y = dense(x)
...     print(x.op.name, dense.name, [v.name for v in dense.weights], y.op.name)
input_1 dense ['dense/kernel:0', 'dense/bias:0'] dense/Relu
>>> with tf.Graph().as_default():
...     config = tf.keras.layers.Dense(2, kernel_regularizer="l2").get_config()
...     again = tf.keras.layers.Dense.from_config(config)
...     print(config["activation"], config["kernel_regularizer"], again.get_config() == config)
linear {'class_name': 'L1L2', 'config': {'l1': 0.0, 'l2': 0.009999999776482582}} True
"""

import inspect

from zps.framework import dtypes
from zps.framework.graph import GraphKeys, get_default_graph
from zps.framework.tensor_shape import as_shape
from zps.keras import activations, backend, initializers, regularizers
from zps.ops import array_ops, layers_impl


def converted(key, value):
    """A layer argument named ``key`` as tf.layers takes it: initializers and regularizers
    given by name made objects; constraints must be callables."""
    if key.endswith("_initializer"):
        return initializers.get(value)
    if key.endswith("_regularizer"):
        return regularizers.get(value)
    if key.endswith("_constraint") and value is not None and not callable(value):
        raise ValueError("Could not interpret constraint identifier: %r (give a callable)"
                         % (value,))
    return value


def serialized(key, value):
    """A layer argument named ``key`` as Keras's ``get_config`` gives it (``converted`` takes
    it back): activations by name ("linear" for none); initializers, regularizers and
    constraints as ``{"class_name", "config"}``; functions of the user's as they are."""
    if key.endswith("activation"):
        try:
            return activations.serialize(activations.get(value))
        except ValueError:   # not one of Keras's: from_config gets the function back
            return value
    if key.endswith(("_initializer", "_regularizer", "_constraint")) and \
            hasattr(value, "get_config"):
        return {"class_name": type(value).__name__, "config": value.get_config()}
    return value


class Node:
    """One call of a layer: ``layer(inputs, *args, **kwargs) -> outputs``."""

    def __init__(self, layer, inputs, args, kwargs, outputs):
        self.layer, self.inputs, self.args, self.kwargs = layer, inputs, args, kwargs
        self.outputs, self.updates = outputs, []


class Layer(layers_impl.Layer):
    """TF's ``tf.keras.layers.Layer`` in graph mode (see the module docstring): subclass it with
    ``build``/``call``/``add_weight`` as tf.layers' ``Layer``."""

    def __init__(self, *args, **kwargs):
        batch_shape = kwargs.pop("batch_input_shape", None)
        input_shape = kwargs.pop("input_shape", None)
        batch_size = kwargs.pop("batch_size", None)
        input_dim = kwargs.pop("input_dim", None)
        for ignored in ("dynamic", "autocast"):
            kwargs.pop(ignored, None)
        if kwargs.pop("weights", None) is not None:
            raise NotImplementedError("the `weights=` argument of Keras layers is not supported "
                                      "by zps: call layer.set_weights(...) in a session after "
                                      "the layer is built")
        if input_shape is None and input_dim is not None:
            input_shape = (input_dim,)
        if batch_shape is None and input_shape is not None:
            batch_shape = (batch_size, *tuple(input_shape))
        self._batch_input_shape = None if batch_shape is None else tuple(batch_shape)
        for key, value in list(kwargs.items()):
            kwargs[key] = converted(key, value)
        if not kwargs.get("name"):
            kwargs["name"] = backend.unique_object_name(
                layers_impl._snake_case(type(self).__name__))
        if kwargs.get("dtype") is None and self._batch_input_shape is not None:
            kwargs["dtype"] = backend.floatx()
        super().__init__(*args, **kwargs)
        self._nodes = []
        self._output_shape = None
        self._weight_losses = {}   # id(regularization loss) -> (variable, regularizer)

    supports_masking = False   # whether the input mask passes through (compute_mask)

    def __call__(self, inputs, *args, **kwargs):
        if isinstance(inputs, list | tuple) and not inputs:
            raise ValueError("%s was called on an empty list of inputs" % self.name)
        for argument in ("training", "mask"):   # Keras passes them only to calls that take them
            if argument in kwargs and not call_accepts(self, argument):
                del kwargs[argument]
        input_mask = kwargs.get("mask", _input_mask(inputs))
        call_kwargs = dict(kwargs)   # the node keeps the given ones: a replay finds its own mask
        if input_mask is not None and "mask" not in kwargs and call_accepts(self, "mask"):
            call_kwargs["mask"] = input_mask
        known = {id(u) for u in self.updates}
        outputs = super().__call__(inputs, *args, **call_kwargs)
        if self.supports_masking or type(self).compute_mask is not Layer.compute_mask:
            _set_masks(outputs, self.compute_mask(inputs, input_mask), inputs)
        self._uncollect(get_default_graph())
        flat = layers_impl._flat(outputs)
        node = Node(self, inputs, args, kwargs, outputs)
        node.updates = [u for u in self.updates if id(u) not in known]
        self._nodes.append(node)
        history = _history()
        for tensor in flat:
            history[tensor] = node
        shapes = [tuple(t.get_shape().as_list()) if t.get_shape().ndims is not None else None
                  for t in flat]
        self._output_shape = shapes[0] if not isinstance(outputs, list | tuple) else shapes
        return outputs

    def add_weight(self, name, shape, dtype=None, initializer=None, regularizer=None, *args,
                   **kwargs):
        """tf.layers' ``add_weight``, remembering which variable and regularizer made each
        regularization loss (``weight_losses``)."""
        known = len(self._losses)
        variable = super().add_weight(name, shape, dtype, initializer, regularizer, *args,
                                      **kwargs)
        for loss in self._losses[known:]:
            self._weight_losses[id(loss)] = (variable, regularizer)
        return variable

    def compute_mask(self, inputs, mask=None):
        """The mask of the outputs (a bool tensor [batch, time], or None) for inputs masked by
        ``mask``: ``mask`` itself where the layer ``supports_masking``, else None."""
        return mask if self.supports_masking else None

    def _uncollect(self, graph):
        """Take this layer's losses and updates out of the graph's collections (tf.layers' base
        puts them there; TF's Keras keeps them on the layer)."""
        for key, own in ((GraphKeys.UPDATE_OPS, self._updates),
                         (GraphKeys.REGULARIZATION_LOSSES, self._losses)):
            collection = graph.get_collection_ref(key)
            collection[:] = [x for x in collection if not any(x is y for y in own)]

    def get_updates_for(self, inputs):
        """The update ops made by the calls of this layer (or model) on ``inputs`` (a tensor
        or a list of them): ``updates`` has those of every call, the one a ``Sequential`` makes
        on its ``Input`` placeholder included, as in TF's Keras."""
        given = [id(x) for x in layers_impl._flat(inputs)]
        return [u for node in self._nodes
                if [id(x) for x in layers_impl._flat(node.inputs)] == given for u in node.updates]

    def get_weights(self):
        """The values of ``weights`` (numpy arrays), read in ``tf.keras.backend.get_session()``
        (the default session, else Keras's own), as TF's Keras does."""
        with keras_session(self).as_default():
            return super().get_weights()

    def set_weights(self, weights):
        """Load numpy values into ``weights`` in ``tf.keras.backend.get_session()``."""
        with keras_session(self).as_default():
            super().set_weights(weights)

    @property
    def output_shape(self):
        """The shape of the last call's output (a tuple, Nones for unknown sizes)."""
        if self._output_shape is None:
            raise AttributeError("The layer %s has never been called and thus has no defined "
                                 "output shape." % self.name)
        return self._output_shape

    def compute_output_shape(self, input_shape):
        """The TensorShape of the outputs for inputs of ``input_shape``."""
        return super().compute_output_shape(input_shape)

    def get_config(self):
        """Keras's config of the layer (see the module docstring): the arguments that make
        it again with ``from_config``."""
        config = super().get_config()
        config.update((key, serialized(key, getattr(self, key))) for key in self._config_keys)
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = self._batch_input_shape
        return config

    @classmethod
    def from_config(cls, config):
        """The layer ``get_config`` described (its serialized arguments are taken back by
        the constructor, as Keras's)."""
        return cls(**config)


def weight_losses(layer, seen=None):
    """id(regularization loss) -> (variable, regularizer) for the weights of ``layer`` and of
    the layers in it (a model's, a wrapper's, an RNN's cell): TF's Keras computes these losses
    again where they are used (under a strategy, each replica's from its copy of the weight)."""
    seen = set() if seen is None else seen
    seen.add(id(layer))
    found = dict(getattr(layer, "_weight_losses", {}))
    for value in vars(layer).values():
        for inner in value if isinstance(value, list | tuple) else [value]:
            if isinstance(inner, layers_impl.Layer) and id(inner) not in seen:
                found.update(weight_losses(inner, seen))
    return found


def keras_session(layer):
    """``tf.keras.backend.get_session()`` for the graph of ``layer``'s weights."""
    weights = layer.weights
    graph = weights[0].graph if weights else get_default_graph()
    with graph.as_default():
        return backend.get_session()


def _input_mask(inputs):
    """The Keras masks (``_keras_mask``) of ``inputs``: one, a list, or None if all are None."""
    masks = [getattr(x, "_keras_mask", None) for x in layers_impl._flat(inputs)]
    if all(m is None for m in masks):
        return None
    return masks if isinstance(inputs, list | tuple) else masks[0]


def _set_masks(outputs, masks, inputs):
    """Mark ``outputs`` with their masks (``tensor._keras_mask``, as TF's Keras), but not an
    input returned as it is (its mask is its maker's)."""
    flat = layers_impl._flat(outputs)
    masks = masks if isinstance(masks, list | tuple) else [masks] * len(flat)
    given = {id(x) for x in layers_impl._flat(inputs)}
    for tensor, mask in zip(flat, masks):
        if id(tensor) not in given:
            tensor._keras_mask = mask


def _history():
    """tensor -> the Node that made it, for the default graph."""
    return backend._state().setdefault("history", {})


def node_of(tensor):
    """The keras Node that made ``tensor`` (None for other tensors)."""
    return _history().get(tensor)


def _training(training):
    """``training`` given to a call, or the learning phase when None (a bool or a bool tensor)."""
    if training is None:
        training = backend.learning_phase()
    return bool(training) if isinstance(training, int) else training


class InputLayer(Layer):
    """A placeholder (``input_1``, ``input_2``... of ``batch_input_shape``) as a layer: the
    start of a functional ``tf.keras.Model`` or of a ``Sequential``."""

    def __init__(self, input_shape=None, batch_size=None, dtype=None, input_tensor=None,
                 sparse=False, name=None, **kwargs):
        batch_shape = kwargs.pop("batch_input_shape", None)
        if sparse:
            raise NotImplementedError("sparse Keras inputs are not supported by zps")
        if not name:
            name = "input_%d" % backend.get_uid("input")
        if batch_shape is None and input_shape is not None:
            batch_shape = (batch_size, *tuple(input_shape))
        super().__init__(name=name, dtype=dtype or backend.floatx(), **kwargs)
        if input_tensor is None:
            if batch_shape is None:
                raise ValueError("An InputLayer needs an `input_shape`, a `batch_input_shape` "
                                 "or an `input_tensor`")
            input_tensor = array_ops.placeholder(dtypes.as_dtype(self.dtype), list(batch_shape),
                                                 name=name)
        self._batch_input_shape = tuple(input_tensor.get_shape().as_list())
        self.built = True
        self.output = input_tensor
        node = Node(self, [], (), {}, input_tensor)
        self._nodes.append(node)
        _history()[input_tensor] = node
        self._output_shape = self._batch_input_shape

    def get_config(self):
        return {"batch_input_shape": self._batch_input_shape, "dtype": self.dtype,
                "sparse": False, "name": self.name}


def Input(shape=None, batch_size=None, name=None, dtype=None, sparse=False, tensor=None,  # noqa: N802
          batch_shape=None, **kwargs):
    """A placeholder ``[batch_size] + shape`` (``input_1``, ``input_2``...) to build a
    functional ``tf.keras.Model`` on (TF's ``tf.keras.Input``)."""
    for key in kwargs:
        raise TypeError("Input() got an unexpected keyword argument %r" % key)
    if shape is None and batch_shape is None and tensor is None:
        raise ValueError("Please provide to Input either a `shape` or a `batch_shape` argument. "
                         "Note that `shape` does not include the batch dimension.")
    if batch_shape is None and shape is not None:
        batch_shape = (batch_size, *tuple(shape))
    return InputLayer(batch_input_shape=batch_shape, dtype=dtype, input_tensor=tensor,
                      sparse=sparse, name=name).output


def call_accepts(layer, argument):
    """Whether ``layer.call`` takes ``argument`` (``training``, ``mask``)."""
    params = inspect.signature(layer.call).parameters
    return argument in params or any(p.kind == p.VAR_KEYWORD for p in params.values())


def shape_tuple(shape):
    shape = as_shape(shape)
    return None if shape.ndims is None else tuple(shape.as_list())
