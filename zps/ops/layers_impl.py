"""TF1's layers (``tf.layers``, see zps/layers.py): dense, convolutions (1-D to 3-D, transposed,
separable), pooling, dropout, flatten and batch normalization, built from tf.nn ops and
``get_variable``, all on the ``Layer`` base class users subclass (``build``/``call``/
``add_weight``); each functional form is its layer applied once (``conv2d(inputs, ...)`` is
``Conv2D(...).apply(inputs)``, as in TF1). Layers also give ``get_weights``/``set_weights``
(through the default session), ``get_config``/``from_config`` and ``compute_output_shape``, and
take activations by name (``activation="relu"``, the names tf_keras' ``activations.get`` knows).

Each layer call opens a variable scope named ``name`` (by default the layer's kind, made unique:
``dense``, ``dense_1``, ...), so its variables are ``<scope>/kernel`` and ``<scope>/bias`` as
TF1's, checkpoints of TF1 models restore by name, and ``reuse=True`` (or an enclosing reusing
scope) shares them.

>>> import numpy as np, zps as tf
>>> with tf.Graph().as_default():
...     y = tf.layers.dense(tf.ones([2, 3]), 4, kernel_initializer=tf.ones_initializer())
...     sess = tf.Session()
...     _ = sess.run(tf.global_variables_initializer())
...     print([v.op.name for v in tf.trainable_variables()], sess.run(y)[0])
['dense/kernel', 'dense/bias'] [3. 3. 3. 3.]
"""

import contextlib
import inspect
import re

import numpy as np

from zps.framework import default_session, dtypes
from zps.framework.graph import (
    GraphKeys,
    Operation,
    convert_to_tensor,
    get_default_graph,
    is_symbolic,
)
from zps.framework.tensor_shape import as_shape
from zps.ops import (
    array_ops,
    clip_ops,
    conv_ops,
    init_ops,
    math_ops,
    nn_ops,
    state_ops,
    variable_scope,
)
from zps.ops.variables import VariableAggregation, VariableSynchronization

_ZEROS = init_ops.zeros_initializer()   # TF1's default bias initializer
_ONES = init_ops.ones_initializer()


def _variables(name, default, reuse):
    if isinstance(name, variable_scope.VariableScope):   # a scope given by contrib.layers
        return _reentered(name, reuse)
    return variable_scope.variable_scope(name, default_name=default, reuse=reuse)


@contextlib.contextmanager
def _reentered(scope, reuse):
    """Back in the captured variable ``scope`` and its first name scope (not a new ``scope_1/``),
    as TF1's Layer when called again or built in a scope it was given (``_scope``)."""
    with variable_scope.variable_scope(scope, reuse=reuse, auxiliary_name_scope=False) as entered, \
            get_default_graph().name_scope(scope.original_name_scope):
        yield entered


def _check_floating(layer):
    dtype = dtypes.as_dtype(layer.dtype or dtypes.float32)
    if not dtype.is_floating:
        raise TypeError("%s needs floating-point inputs, got %s: cast them first (or give "
                        "the layer a floating-point dtype)" % (layer.name, dtype.name))


def _activity_loss(output, regularizer):
    """``regularizer(output)`` per example (divided by the batch size, as TF1's Layer does), in a
    name scope ``ActivityRegularizer``; None when the regularizer gives None."""
    with get_default_graph().name_scope("ActivityRegularizer"):
        loss = regularizer(output)
        if loss is None:
            return None
        loss = convert_to_tensor(loss)
        return loss / math_ops.cast(array_ops.shape(output)[0], loss.dtype)


def _flat(structure):
    if isinstance(structure, list | tuple):
        return [x for item in structure for x in _flat(item)]
    return [structure]


def _snake_case(name):
    """A class name as TF1 names its layers: ``MaxPooling2D`` -> ``max_pooling2d``."""
    name = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    name = re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()
    return name if name[0] != "_" else "private" + name


def _gelu(x):
    return 0.5 * x * (1.0 + math_ops.erf(x / math_ops.cast(np.sqrt(2.0), x.dtype)))


def _hard_sigmoid(x):
    return clip_ops.clip_by_value(0.2 * x + 0.5, 0.0, 1.0)


def _mish(x):
    return x * math_ops.tanh(nn_ops.softplus(x))


# The activations TF1's layers accept by name (tf_keras's activations.get); "linear" is none.
_ACTIVATIONS = {
    "elu": nn_ops.elu, "exponential": math_ops.exp, "gelu": _gelu, "hard_sigmoid": _hard_sigmoid,
    "leaky_relu": nn_ops.leaky_relu, "linear": None, "log_softmax": nn_ops.log_softmax,
    "mish": _mish, "relu": nn_ops.relu, "relu6": nn_ops.relu6, "selu": nn_ops.selu,
    "sigmoid": math_ops.sigmoid, "softmax": nn_ops.softmax, "softplus": nn_ops.softplus,
    "softsign": nn_ops.softsign, "swish": nn_ops.swish, "silu": nn_ops.swish,
    "tanh": math_ops.tanh}


def _activation_fn(activation):
    """``activation`` (None, a callable or one of _ACTIVATIONS' names) as a callable or None."""
    if activation is None or callable(activation):
        return activation
    if not isinstance(activation, str):
        raise TypeError("Could not interpret activation function identifier: %r (give a "
                        "callable or a name)" % (activation,))
    if activation not in _ACTIVATIONS:
        raise ValueError("Unknown activation function: %r. Give a callable or one of %s"
                         % (activation, ", ".join(sorted(_ACTIVATIONS))))
    return _ACTIVATIONS[activation]


def _serialized(key, value):
    """A constructor argument as TF1's get_config gives it: activations by name ("linear" for
    none), initializers as ``{"class_name", "config"}``; other callables (regularizers,
    constraints, custom activations) as they are, so that ``from_config`` gets them back."""
    if key == "activation":
        if value is None:
            return "linear"
        return next((name for name, fn in _ACTIVATIONS.items() if fn is value), value)
    if isinstance(value, init_ops.Initializer):
        return {"class_name": type(value).__name__, "config": value.get_config()}
    return value


def _deserialized(value):
    if isinstance(value, dict) and set(value) == {"class_name", "config"}:
        cls = getattr(init_ops, value["class_name"], None)
        if not (isinstance(cls, type) and issubclass(cls, init_ops.Initializer)):
            raise ValueError("Unknown initializer: %r (zps knows tf.initializers' classes: "
                             "Zeros, Ones, Constant, GlorotUniform, ...)" % value["class_name"])
        return cls.from_config(value["config"])
    return value


class InputSpec:
    """What a layer accepts: its inputs' ``dtype``, ``shape``, rank (``ndim``, ``min_ndim``,
    ``max_ndim``) and the sizes of some ``axes`` (a dict axis -> size); checked each call."""

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None,
                 axes=None):
        self.dtype = None if dtype is None else dtypes.as_dtype(dtype).name
        self.shape = None if shape is None else tuple(shape)
        self.ndim = len(shape) if shape is not None else ndim
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.axes = dict(axes or {})

    def __repr__(self):
        spec = [("dtype", self.dtype), ("shape", self.shape), ("ndim", self.ndim),
                ("max_ndim", self.max_ndim), ("min_ndim", self.min_ndim),
                ("axes", self.axes or None)]
        return "InputSpec(%s)" % ", ".join("%s=%r" % kv for kv in spec if kv[1] is not None)

    def check(self, x, index, layer):
        """Raise ValueError unless tensor ``x`` (input ``index`` of ``layer``) fits this spec."""
        shape = x.get_shape()
        ndim = shape.ndims

        def fail(what):
            raise ValueError('Input %d of layer "%s" is incompatible with the layer: %s'
                             % (index, layer, what))
        if self.ndim is not None and ndim != self.ndim:
            fail("expected ndim=%d, found ndim=%s. Full shape received: %s" % (self.ndim, ndim, shape))
        if self.max_ndim is not None and ndim is not None and ndim > self.max_ndim:
            fail("expected max_ndim=%d, found ndim=%d. Full shape received: %s"
                 % (self.max_ndim, ndim, shape))
        if self.min_ndim is not None and ndim is not None and ndim < self.min_ndim:
            fail("expected min_ndim=%d, found ndim=%d. Full shape received: %s"
                 % (self.min_ndim, ndim, shape))
        if self.dtype is not None and x.dtype.base_dtype.name != self.dtype:
            fail("expected dtype=%s, found dtype=%s" % (self.dtype, x.dtype.base_dtype.name))
        if ndim is None:
            return
        for axis, value in self.axes.items():
            if value is not None and shape[axis].value not in (value, None):
                fail("expected axis %d of input shape to have value %d, but received input "
                     "with shape %s" % (axis, value, shape))
        for expected, got in zip(self.shape or (), shape.as_list()):
            if expected is not None and got not in (expected, None):
                fail("expected shape=%s, found shape=%s" % (self.shape, tuple(shape.as_list())))


class Layer:
    """TF1's ``tf.layers.Layer``: the base of layers that own variables, made in ``build`` with
    ``add_weight`` and used in ``call``.

    The first call captures a variable scope named ``name`` (by default the class's name in
    snake case, made unique: ``my_layer``, ``my_layer_1``...), sets ``dtype`` from the first
    input when not given, runs ``build(input_shape)`` there and then ``call(inputs, ...)``;
    later calls re-enter the same scope with reuse, so the layer's variables are shared and its
    ops stay under ``<scope>/``. Weight regularizers' losses (and ``activity_regularizer``'s,
    per example) go to ``losses`` and ``tf.GraphKeys.REGULARIZATION_LOSSES``; ``add_update``'s
    ops to ``updates`` and, after each call, ``tf.GraphKeys.UPDATE_OPS``. A ``call`` taking a
    ``scope`` argument is given the layer's variable scope.

    >>> import zps as tf
    >>> class Scale(tf.layers.Layer):
    ...     def build(self, input_shape):
    ...         self.w = self.add_weight("w", [input_shape[-1].value],
    ...                                  initializer=tf.ones_initializer())
    ...         super().build(input_shape)
    ...     def call(self, inputs):
    ...         return inputs * self.w
    >>> with tf.Graph().as_default():
    ...     layer = Scale()
    ...     a, b = layer(tf.ones([2, 3])), layer(tf.zeros([1, 3]))
    ...     print([v.name for v in layer.variables], a.op.name, b.op.name)
    ['scale/w:0'] scale/mul scale/mul_1
    """

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        scope = kwargs.pop("_scope", None)
        self._reuse = kwargs.pop("_reuse", None)
        self._activity_regularizer = kwargs.pop("activity_regularizer", None)
        for key in kwargs:
            raise TypeError("Keyword argument not understood: %r (%s takes trainable, name, "
                            "dtype, activity_regularizer and its own arguments)"
                            % (key, type(self).__name__))
        self.trainable = trainable
        self.built = False
        self.input_spec = None
        self._dtype = None if dtype is None else dtypes.as_dtype(dtype).base_dtype.name
        self._named = bool(name)
        self._base_name = (name.name if isinstance(name, variable_scope.VariableScope) else
                           name or _snake_case(type(self).__name__))
        self.name = self._base_name
        self._trainable_weights, self._non_trainable_weights = [], []
        self._losses, self._updates = [], []
        self._scope = None
        if scope:
            with _variables(scope, None, None) as captured:
                self._capture(captured)

    def _capture(self, scope):
        self._scope = scope
        if not self._named:
            self.name = scope.name.split("/")[-1]

    def _set_scope(self, scope=None):
        if self._scope is not None:
            return
        if self._reuse:
            entered = variable_scope.variable_scope(scope if scope is not None else
                                                    self._base_name)
        else:
            entered = variable_scope.variable_scope(scope, default_name=self._base_name)
        with entered as captured:
            self._capture(captured)

    def _entered(self):
        """The layer's scope, re-entered (variables and ops); reusing once built."""
        return _reentered(self._scope, True if self.built else self._reuse)

    @property
    def dtype(self):
        """The name of the variables' dtype: given, or the first input's (None until called)."""
        return self._dtype

    @property
    def scope_name(self):
        if self._scope is None:
            raise ValueError('No name available for layer scope because the layer "%s" has not '
                             'been used yet. The scope name is determined the first time the '
                             'layer instance is called. You must therefore call the layer before '
                             'querying `scope_name`.' % self.name)
        return self._scope.name

    def build(self, input_shape):
        """Create the variables (``add_weight``) for inputs of ``input_shape`` (a TensorShape, or
        a list of them for a list of inputs); called once, before the first ``call``."""
        self.built = True

    def call(self, inputs, **kwargs):
        """The layer's computation on ``inputs``; the base layer returns them unchanged."""
        return inputs

    def __call__(self, inputs, *args, **kwargs):
        """``call(inputs, *args, **kwargs)`` in the layer's scope, building it on first use.

        ``scope`` (keyword): the variable scope to capture on the first call instead of one
        named after the layer.
        """
        self._set_scope(kwargs.pop("scope", None))
        graph = get_default_graph()
        with self._entered() as scope:
            inputs = _tensors(inputs)
            flat = _flat(inputs)
            specs = _flat(self.input_spec) if self.input_spec is not None else []
            for i, (x, spec) in enumerate(zip(flat, specs)):
                if spec is not None:
                    spec.check(x, i, self.name)
            if not self.built:
                if self._dtype is None and flat and is_symbolic(flat[0]):
                    self._dtype = flat[0].dtype.base_dtype.name
                shapes = (x.get_shape() for x in flat)
                self.build(next(shapes) if not isinstance(inputs, list | tuple)
                           else [x.get_shape() for x in flat])
                self.built = True
            if "scope" in inspect.signature(self.call).parameters:
                kwargs["scope"] = scope
            outputs = self.call(inputs, *args, **kwargs)
            if self._activity_regularizer is not None:
                self.add_loss([_activity_loss(o, self._activity_regularizer)
                               for o in _flat(outputs)])
        updates = graph.get_collection_ref(GraphKeys.UPDATE_OPS)
        updates.extend(u for u in self._updates if not any(u is x for x in updates))
        return outputs

    def apply(self, inputs, *args, **kwargs):
        """``self(inputs, *args, **kwargs)``."""
        return self(inputs, *args, **kwargs)

    def add_weight(self, name, shape, dtype=None, initializer=None, regularizer=None,
                   trainable=None, constraint=None, use_resource=None, synchronization=None,
                   aggregation=None, partitioner=None):
        """The variable ``<layer scope>/name``, made by ``tf.get_variable`` (or shared once the
        layer is built); ``dtype`` defaults to the layer's, then float32."""
        trainable = (True if trainable is None else trainable) and self.trainable
        dtype = dtypes.as_dtype(dtype or self._dtype or dtypes.float32)
        self._set_scope()
        losses = get_default_graph().get_collection_ref(GraphKeys.REGULARIZATION_LOSSES)
        known = len(losses)
        with self._entered():
            variable = variable_scope.get_variable(
                name, shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
                trainable=trainable, constraint=constraint, use_resource=use_resource,
                synchronization=synchronization, aggregation=aggregation,
                partitioner=partitioner)
        if regularizer is not None:   # the loss get_variable made, when it made the variable
            self._losses.extend(losses[known:])
        (self._trainable_weights if trainable else self._non_trainable_weights).append(variable)
        return variable

    add_variable = add_weight   # TF1's older name

    def add_loss(self, losses, inputs=None):
        """Add loss tensors (or callables giving them) to ``losses`` and to
        ``tf.GraphKeys.REGULARIZATION_LOSSES``."""
        collection = get_default_graph().get_collection_ref(GraphKeys.REGULARIZATION_LOSSES)
        for loss in _flat(losses):
            loss = loss() if callable(loss) else loss
            if loss is None:
                continue
            loss = convert_to_tensor(loss)
            self._losses.append(loss)
            if not any(loss is x for x in collection):
                collection.append(loss)

    def add_update(self, updates, inputs=None):
        """Add update ops (or tensors, or callables giving them) to ``updates``; each call of
        the layer adds its updates to ``tf.GraphKeys.UPDATE_OPS``."""
        for update in _flat(updates):
            update = update() if callable(update) else update
            self._updates.append(update if isinstance(update, Operation) else update.op)

    @property
    def trainable_weights(self):
        return list(self._trainable_weights) if self.trainable else []

    @property
    def non_trainable_weights(self):
        if self.trainable:
            return list(self._non_trainable_weights)
        return self._trainable_weights + self._non_trainable_weights

    @property
    def weights(self):
        """The trainable weights, then the others."""
        return self.trainable_weights + self.non_trainable_weights

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    @property
    def losses(self):
        return list(self._losses)

    @property
    def updates(self):
        return list(self._updates)

    @property
    def activity_regularizer(self):
        return self._activity_regularizer

    def get_weights(self):
        """The values of ``weights`` (numpy arrays, in that order), read through the default
        session (``[]`` while the layer has no weights)."""
        weights = self.weights
        return list(_weights_session(self, "get_weights").run(weights)) if weights else []

    def set_weights(self, weights):
        """Load numpy values into ``weights`` (a list in that order, each of the variable's
        shape) through the default session, adding no op to the graph."""
        params = self.weights
        if len(weights) != len(params):
            raise ValueError('You called `set_weights(weights)` on layer "%s" with a weight list '
                             'of length %d, but the layer was expecting %d weights. Provided '
                             'weights: %s...' % (self.name, len(weights), len(params),
                                                 str(weights)[:50]))
        values = []
        for param, value in zip(params, weights):
            value = np.asarray(value)
            if not param.get_shape().is_compatible_with(value.shape):
                raise ValueError("Layer weight shape %s not compatible with provided weight "
                                 "shape %s" % (tuple(param.get_shape().as_list()), value.shape))
            values.append(value.astype(param.dtype.base_dtype.as_numpy_dtype))
        if params:
            session = _weights_session(self, "set_weights")
            for param, value in zip(params, values):
                param.load(value, session)

    _config_keys = ()   # the constructor arguments get_config gives, besides name/trainable/dtype

    def get_config(self):
        """The layer's constructor arguments as a dict (``from_config`` makes the layer again):
        ``name``, ``trainable``, ``dtype`` and the layer's own (initializers as
        ``{"class_name", "config"}``, activations by name)."""
        own = [p for p in inspect.signature(type(self).__init__).parameters
               if p not in ("self", "trainable", "name", "dtype", "args", "kwargs")]
        if own and type(self).get_config is Layer.get_config and not self._config_keys:
            raise NotImplementedError("Layers with arguments in `__init__` must override "
                                      "`get_config` (%s takes %s)"
                                      % (type(self).__name__, ", ".join(own)))
        config = {"name": self.name, "trainable": self.trainable, "dtype": self.dtype}
        config.update((key, _serialized(key, getattr(self, key))) for key in self._config_keys)
        return config

    @classmethod
    def from_config(cls, config):
        """The layer ``get_config`` described."""
        return cls(**{key: _deserialized(value) for key, value in config.items()})

    def compute_output_shape(self, input_shape):
        """The TensorShape of the outputs for inputs of ``input_shape``."""
        raise NotImplementedError("Please implement the compute_output_shape method on your "
                                  "layer (%s): zps, like TF1 in graph mode, cannot infer it"
                                  % type(self).__name__)

    def count_params(self):
        """The number of scalars in the layer's weights (once built)."""
        if not self.built:
            raise ValueError("You tried to call `count_params` on %s, but the layer isn't built. "
                             "Call the layer (or its `build`) first." % self.name)
        return sum(as_shape(w.get_shape()).num_elements() for w in self.weights)


def _weights_session(layer, what):
    session = default_session.get()
    if session is None:
        raise ValueError("%s of layer %s reads or writes its variables through the default "
                         "session, and there is none: call it inside `with tf.Session() as "
                         "sess:` (or `with sess.as_default():`)" % (what, layer.name))
    return session


def _tensors(inputs):
    """``inputs`` (a tensor, or a list or tuple of them) with values made tensors."""
    if isinstance(inputs, list | tuple):
        return type(inputs)(_tensors(x) for x in inputs)
    return inputs if is_symbolic(inputs) else convert_to_tensor(inputs)


class Dense(Layer):
    """TF1's ``tf.layers.Dense``: ``activation(inputs @ kernel + bias)`` over the last axis of
    ``inputs`` (any rank >= 2); the kernel is Glorot-uniform initialized unless
    ``kernel_initializer`` says otherwise; the variables ``<scope>/kernel`` and
    ``<scope>/bias``, the scope ``dense``, ``dense_1``...

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     layer = tf.layers.Dense(4, activation=tf.nn.relu)
    ...     y = layer(tf.ones([2, 3]))
    ...     print(y.get_shape().as_list(), [v.name for v in layer.trainable_weights])
    [2, 4] ['dense/kernel:0', 'dense/bias:0']
    """

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=_ZEROS, kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        if not isinstance(units, int) or isinstance(units, bool) or units <= 0:
            raise ValueError("Received an invalid value for `units`, expected a positive "
                             "integer. Received: units=%r" % (units,))
        self.units = units
        self.activation = _activation_fn(activation)
        self.use_bias = use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.kernel = self.bias = None
        self.input_spec = InputSpec(min_ndim=2)

    _config_keys = ("units", "activation", "use_bias", "kernel_initializer", "bias_initializer",
                    "kernel_regularizer", "bias_regularizer", "activity_regularizer",
                    "kernel_constraint", "bias_constraint")

    def build(self, input_shape):
        _check_floating(self)
        last = as_shape(input_shape)[-1].value
        if last is None:
            raise ValueError("The last dimension of the inputs to `Dense` should be defined. "
                             "Found `None`.")
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last})
        self.kernel = self.add_weight(
            "kernel", [last, self.units], initializer=self.kernel_initializer or
            init_ops.glorot_uniform_initializer(), regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_weight("bias", [self.units], initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    def call(self, inputs):
        shape = inputs.get_shape()
        if shape.ndims == 2:
            outputs = math_ops.matmul(inputs, self.kernel)
        else:   # contract the last axis: [..., last] -> [-1, last] @ kernel -> [..., units]
            last = self.kernel.get_shape()[0].value
            outputs = array_ops.reshape(
                math_ops.matmul(array_ops.reshape(inputs, [-1, last]), self.kernel),
                array_ops.concat([array_ops.shape(inputs)[:-1], [self.units]], 0))
            if shape.ndims is not None:
                outputs.set_shape(shape[:-1].concatenate([self.units]))
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias)
        return outputs if self.activation is None else self.activation(outputs)

    def compute_output_shape(self, input_shape):
        shape = as_shape(input_shape).with_rank_at_least(2)
        if shape[-1].value is None:
            raise ValueError("The last dimension of the input shape of a Dense layer should be "
                             "defined. Found None. Received: input_shape=%s" % (shape,))
        return shape[:-1].concatenate([self.units])


def _applied(layer_class, inputs, name, reuse, *args, **kwargs):
    """TF1's functional layers: ``layer_class(*args, **kwargs).apply(inputs)``, ``name`` the
    variable scope itself (not made unique, so ``reuse=True`` or a reusing scope shares it)."""
    return layer_class(*args, name=name, _scope=name, _reuse=reuse, **kwargs).apply(inputs)


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=_ZEROS, kernel_regularizer=None,
          bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
          bias_constraint=None, trainable=True, name=None, reuse=None):
    """``Dense(units, ...)(inputs)``: ``name`` is the variable scope itself (not made unique, so
    ``reuse=True`` or an enclosing reusing scope shares the variables)."""
    return _applied(Dense, inputs, name, reuse, units, activation=activation, use_bias=use_bias,
                    kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                    kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                    activity_regularizer=activity_regularizer,
                    kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                    trainable=trainable)


def _ints(value, n, what):
    """``value`` (an int or ``n`` ints) as a tuple of ``n`` ints."""
    if isinstance(value, int):
        return (value,) * n
    value = tuple(value)
    if len(value) != n or not all(isinstance(v, int) for v in value):
        raise ValueError("The `%s` argument must be a tuple of %d integers. Received: %r"
                         % (what, n, value))
    return value


def _padding(padding):
    if padding.lower() not in ("valid", "same"):
        raise ValueError("padding must be 'valid' or 'same', got %r" % padding)
    return padding.upper()


def _nhwc(data_format, what):
    if data_format != "channels_last":
        raise ValueError("%s: only data_format='channels_last' (NHWC) is supported, got %r"
                         % (what, data_format))


def _conv_size(size, k, padding, stride, dilation=1):
    """Keras's conv_output_length: the output size of a convolution or pooling."""
    if size is None:
        return None
    k = (k - 1) * dilation + 1
    return (size - (k - 1 if padding == "valid" else 0) + stride - 1) // stride


def _transposed_size(size, k, stride, padding):
    """Keras's deconv_output_length: the output size of a transposed convolution."""
    if size is None:
        return None
    return size * stride + (max(k - stride, 0) if padding.lower() == "valid" else 0)


class _Conv(Layer):
    """A convolution layer object over ``_rank`` spatial dimensions of channels-last inputs:
    the kernel (made by ``_build_kernels``), then the bias and the activation. TF1's
    ``tf.layers.Conv2D`` etc.; ``tf.layers.conv2d(...)`` is ``Conv2D(...).apply(inputs)``."""

    _rank = None
    _config_keys = ("filters", "kernel_size", "strides", "padding", "data_format",
                    "dilation_rate", "activation", "use_bias", "kernel_initializer",
                    "bias_initializer", "kernel_regularizer", "bias_regularizer",
                    "activity_regularizer", "kernel_constraint", "bias_constraint")

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=_ZEROS, kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        _nhwc(data_format, _snake_case(type(self).__name__))
        if not isinstance(filters, int) or isinstance(filters, bool) or filters <= 0:
            raise ValueError("Invalid value for argument `filters`. Expected a strictly positive "
                             "value. Received filters=%r." % (filters,))
        rank = self._rank
        self.filters = filters
        self.kernel_size = _ints(kernel_size, rank, "kernel_size")
        self.strides = _ints(strides, rank, "strides")
        self.padding = _padding(padding).lower()
        self.data_format = data_format
        self.dilation_rate = _ints(dilation_rate, rank, "dilation_rate")
        self.activation = _activation_fn(activation)
        self.use_bias = use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.kernel = self.bias = None

    def build(self, input_shape):
        shape = as_shape(input_shape)
        kind = _snake_case(type(self).__name__)
        _check_floating(self)
        if shape.ndims is not None and shape.ndims != self._rank + 2:
            raise ValueError("Input 0 of layer %s is incompatible with the layer: expected "
                             "ndim=%d, found ndim=%d. Full shape received: %s"
                             % (kind, self._rank + 2, shape.ndims, shape))
        channels = shape[-1].value if shape.ndims is not None else None
        if channels is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found "
                             "`None`.")
        self.input_spec = InputSpec(ndim=self._rank + 2, axes={-1: channels})
        self._build_kernels(channels)
        if self.use_bias:
            self.bias = self.add_weight("bias", [self.filters], initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    def _build_kernels(self, channels):
        self.kernel = self.add_weight(
            "kernel", [*self.kernel_size, channels, self.filters],
            initializer=self.kernel_initializer or init_ops.glorot_uniform_initializer(),
            regularizer=self.kernel_regularizer, constraint=self.kernel_constraint)

    def call(self, inputs):
        outputs = self._convolve(inputs)
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias)
        return outputs if self.activation is None else self.activation(outputs)

    def _convolve(self, inputs):
        padding = self.padding.upper()
        if self._rank == 1:
            return conv_ops.conv1d(inputs, self.kernel, self.strides[0], padding,
                                   dilations=self.dilation_rate[0])
        conv = conv_ops.conv2d if self._rank == 2 else conv_ops.conv3d
        return conv(inputs, self.kernel, strides=[1, *self.strides, 1], padding=padding,
                    dilations=[1, *self.dilation_rate, 1])

    def _spatial_sizes(self, sizes):
        return [_conv_size(n, k, self.padding, s, d) for n, k, s, d in
                zip(sizes, self.kernel_size, self.strides, self.dilation_rate)]

    def compute_output_shape(self, input_shape):
        shape = as_shape(input_shape).with_rank(self._rank + 2)
        return as_shape([shape[0].value, *self._spatial_sizes([d.value for d in shape[1:-1]]),
                         self.filters])


class Conv1D(_Conv):
    """TF1's ``tf.layers.Conv1D``: a 1-D convolution of [batch, width, in] inputs with
    ``filters`` output channels (``kernel`` [k, in, filters]), then ``bias`` and
    ``activation``."""
    _rank = 1


class Conv2D(_Conv):
    """TF1's ``tf.layers.Conv2D``: a 2-D convolution of NHWC inputs with ``filters`` output
    channels (``kernel`` [kh, kw, in, filters]), then ``bias`` and ``activation``.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     layer = tf.layers.Conv2D(4, 3, padding="same", activation="relu")
    ...     y = layer(tf.zeros([1, 5, 5, 2]))
    ...     print(y.op.name, [v.name for v in layer.weights], layer.compute_output_shape([1, 9, 9, 2]))
    conv2d/Relu ['conv2d/kernel:0', 'conv2d/bias:0'] (1, 9, 9, 4)
    """
    _rank = 2


class Conv3D(_Conv):
    """TF1's ``tf.layers.Conv3D``: a 3-D convolution of NDHWC inputs with ``filters`` output
    channels (``kernel`` [kd, kh, kw, in, filters]), then ``bias`` and ``activation``."""
    _rank = 3


class _ConvTranspose(_Conv):
    """The transpose of a convolution (a "deconvolution"): ``kernel`` [k..., filters, in];
    "valid" gives ``in * stride + max(k - stride, 0)`` outputs per dimension, "same"
    ``in * stride``."""

    _config_keys = tuple(k for k in _Conv._config_keys if k != "dilation_rate")

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=_ZEROS, kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         trainable=trainable, name=name, **kwargs)

    def _build_kernels(self, channels):
        self.kernel = self.add_weight(
            "kernel", [*self.kernel_size, self.filters, channels],
            initializer=self.kernel_initializer or init_ops.glorot_uniform_initializer(),
            regularizer=self.kernel_regularizer, constraint=self.kernel_constraint)

    def _spatial_sizes(self, sizes):
        return [_transposed_size(n, k, s, self.padding)
                for n, k, s in zip(sizes, self.kernel_size, self.strides)]

    def _convolve(self, inputs):
        shape = inputs.get_shape()
        static = self._spatial_sizes([d.value for d in shape[1:-1]])
        dims = array_ops.shape(inputs) if None in static or shape[0].value is None else None
        sizes = static if None not in static else [   # spatial sizes known when run
            dims[i + 1] * s + (max(k - s, 0) if self.padding == "valid" else 0)
            for i, (k, s) in enumerate(zip(self.kernel_size, self.strides))]
        output_shape = [shape[0].value if shape[0].value is not None else dims[0], *sizes,
                        self.filters]
        if any(is_symbolic(d) for d in output_shape):
            output_shape = array_ops.stack(output_shape)
        conv = conv_ops.conv2d_transpose if self._rank == 2 else conv_ops.conv3d_transpose
        outputs = conv(inputs, self.kernel, output_shape, [1, *self.strides, 1],
                       self.padding.upper())
        outputs.set_shape([shape[0].value, *static, self.filters])
        return outputs


class Conv2DTranspose(_ConvTranspose):
    """TF1's ``tf.layers.Conv2DTranspose``: the transpose of a 2-D convolution of NHWC inputs
    (``kernel`` [kh, kw, filters, in]).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     layer = tf.layers.Conv2DTranspose(4, 3, strides=2, padding="same")
    ...     a, b = layer(tf.zeros([1, 5, 5, 2])), layer(tf.ones([1, 5, 5, 2]))
    ...     print(a.get_shape().as_list(), [v.op.name for v in layer.variables])
    [1, 10, 10, 4] ['conv2d_transpose/kernel', 'conv2d_transpose/bias']
    """
    _rank = 2


class Conv3DTranspose(_ConvTranspose):
    """TF1's ``tf.layers.Conv3DTranspose``: the transpose of a 3-D convolution of NDHWC inputs
    (``kernel`` [kd, kh, kw, filters, in])."""
    _rank = 3


class _SeparableConv(_Conv):
    """A depthwise convolution (``depthwise_kernel`` [k..., in, depth_multiplier]) then a
    pointwise one (``pointwise_kernel`` [1..., in * depth_multiplier, filters]), the bias and
    the activation."""

    _config_keys = tuple(k for k in _Conv._config_keys if k not in (
        "kernel_initializer", "kernel_regularizer", "kernel_constraint")) + (
        "depth_multiplier", "depthwise_initializer", "pointwise_initializer",
        "depthwise_regularizer", "pointwise_regularizer", "depthwise_constraint",
        "pointwise_constraint")

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, depth_multiplier=1,
                 activation=None, use_bias=True, depthwise_initializer=None,
                 pointwise_initializer=None, bias_initializer=_ZEROS, depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 trainable=True, name=None, **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         activation=activation, use_bias=use_bias,
                         bias_initializer=bias_initializer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         bias_constraint=bias_constraint, trainable=trainable, name=name,
                         **kwargs)
        self.depth_multiplier = depth_multiplier
        self.depthwise_initializer = depthwise_initializer
        self.pointwise_initializer = pointwise_initializer
        self.depthwise_regularizer = depthwise_regularizer
        self.pointwise_regularizer = pointwise_regularizer
        self.depthwise_constraint = depthwise_constraint
        self.pointwise_constraint = pointwise_constraint
        self.depthwise_kernel = self.pointwise_kernel = None

    def _build_kernels(self, channels):
        glorot = init_ops.glorot_uniform_initializer
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", [*self.kernel_size, channels, self.depth_multiplier],
            initializer=self.depthwise_initializer or glorot(),
            regularizer=self.depthwise_regularizer, constraint=self.depthwise_constraint)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", [1] * self._rank + [channels * self.depth_multiplier,
                                                    self.filters],
            initializer=self.pointwise_initializer or glorot(),
            regularizer=self.pointwise_regularizer, constraint=self.pointwise_constraint)


class SeparableConv1D(_SeparableConv):
    """TF1's ``tf.layers.SeparableConv1D``: a depthwise 1-D convolution then a pointwise one, as
    a separable 2-D convolution of the inputs with a height of 1 (as TF1)."""
    _rank = 1

    def call(self, inputs):
        outputs = conv_ops.separable_conv2d(
            array_ops.expand_dims(inputs, 1), array_ops.expand_dims(self.depthwise_kernel, 0),
            array_ops.expand_dims(self.pointwise_kernel, 0), [1, *self.strides * 2, 1],
            self.padding.upper(), rate=[1, self.dilation_rate[0]])
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias)
        outputs = array_ops.squeeze(outputs, [1])
        return outputs if self.activation is None else self.activation(outputs)


class SeparableConv2D(_SeparableConv):
    """TF1's ``tf.layers.SeparableConv2D``: a depthwise 2-D convolution of NHWC inputs
    (``depthwise_kernel`` [kh, kw, in, depth_multiplier]) then a 1x1 one (``pointwise_kernel``
    [1, 1, in * depth_multiplier, filters]), the bias and the activation."""
    _rank = 2

    def _convolve(self, inputs):
        return conv_ops.separable_conv2d(inputs, self.depthwise_kernel, self.pointwise_kernel,
                                         [1, *self.strides, 1], self.padding.upper(),
                                         rate=list(self.dilation_rate))


def conv1d(inputs, filters, kernel_size, strides=1, padding="valid", data_format="channels_last",
           dilation_rate=1, activation=None, use_bias=True, kernel_initializer=None,
           bias_initializer=_ZEROS, kernel_regularizer=None, bias_regularizer=None,
           activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
           trainable=True, name=None, reuse=None):
    """``Conv1D(filters, kernel_size, ...).apply(inputs)``."""
    return _applied(Conv1D, inputs, name, reuse, filters, kernel_size, strides=strides,
                    padding=padding, data_format=data_format, dilation_rate=dilation_rate,
                    activation=activation, use_bias=use_bias,
                    kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                    kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                    activity_regularizer=activity_regularizer,
                    kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                    trainable=trainable)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1), activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=_ZEROS,
           kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
           kernel_constraint=None, bias_constraint=None, trainable=True, name=None, reuse=None):
    """``Conv2D(filters, kernel_size, ...).apply(inputs)``."""
    return _applied(Conv2D, inputs, name, reuse, filters, kernel_size, strides=strides,
                    padding=padding, data_format=data_format, dilation_rate=dilation_rate,
                    activation=activation, use_bias=use_bias,
                    kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                    kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                    activity_regularizer=activity_regularizer,
                    kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                    trainable=trainable)


def conv3d(inputs, filters, kernel_size, strides=(1, 1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1, 1), activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=_ZEROS, kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    """``Conv3D(filters, kernel_size, ...).apply(inputs)``."""
    return _applied(Conv3D, inputs, name, reuse, filters, kernel_size, strides=strides,
                    padding=padding, data_format=data_format, dilation_rate=dilation_rate,
                    activation=activation, use_bias=use_bias,
                    kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                    kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                    activity_regularizer=activity_regularizer,
                    kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                    trainable=trainable)


def conv2d_transpose(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
                     data_format="channels_last", activation=None, use_bias=True,
                     kernel_initializer=None, bias_initializer=_ZEROS, kernel_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                     bias_constraint=None, trainable=True, name=None, reuse=None):
    """``Conv2DTranspose(filters, kernel_size, ...).apply(inputs)``."""
    return _applied(Conv2DTranspose, inputs, name, reuse, filters, kernel_size, strides=strides,
                    padding=padding, data_format=data_format, activation=activation,
                    use_bias=use_bias, kernel_initializer=kernel_initializer,
                    bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                    bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                    kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                    trainable=trainable)


def conv3d_transpose(inputs, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                     data_format="channels_last", activation=None, use_bias=True,
                     kernel_initializer=None, bias_initializer=_ZEROS, kernel_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                     bias_constraint=None, trainable=True, name=None, reuse=None):
    """``Conv3DTranspose(filters, kernel_size, ...).apply(inputs)``."""
    return _applied(Conv3DTranspose, inputs, name, reuse, filters, kernel_size, strides=strides,
                    padding=padding, data_format=data_format, activation=activation,
                    use_bias=use_bias, kernel_initializer=kernel_initializer,
                    bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                    bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                    kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                    trainable=trainable)


def separable_conv1d(inputs, filters, kernel_size, strides=1, padding="valid",
                     data_format="channels_last", dilation_rate=1, depth_multiplier=1,
                     activation=None, use_bias=True, depthwise_initializer=None,
                     pointwise_initializer=None, bias_initializer=_ZEROS,
                     depthwise_regularizer=None, pointwise_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None, depthwise_constraint=None,
                     pointwise_constraint=None, bias_constraint=None, trainable=True, name=None,
                     reuse=None):
    """``SeparableConv1D(filters, kernel_size, ...).apply(inputs)``."""
    return _applied(SeparableConv1D, inputs, name, reuse, filters, kernel_size, strides=strides,
                    padding=padding, data_format=data_format, dilation_rate=dilation_rate,
                    depth_multiplier=depth_multiplier, activation=activation, use_bias=use_bias,
                    depthwise_initializer=depthwise_initializer,
                    pointwise_initializer=pointwise_initializer,
                    bias_initializer=bias_initializer,
                    depthwise_regularizer=depthwise_regularizer,
                    pointwise_regularizer=pointwise_regularizer,
                    bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                    depthwise_constraint=depthwise_constraint,
                    pointwise_constraint=pointwise_constraint, bias_constraint=bias_constraint,
                    trainable=trainable)


def separable_conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
                     data_format="channels_last", dilation_rate=(1, 1), depth_multiplier=1,
                     activation=None, use_bias=True, depthwise_initializer=None,
                     pointwise_initializer=None, bias_initializer=_ZEROS,
                     depthwise_regularizer=None, pointwise_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None, depthwise_constraint=None,
                     pointwise_constraint=None, bias_constraint=None, trainable=True, name=None,
                     reuse=None):
    """``SeparableConv2D(filters, kernel_size, ...).apply(inputs)``."""
    return _applied(SeparableConv2D, inputs, name, reuse, filters, kernel_size, strides=strides,
                    padding=padding, data_format=data_format, dilation_rate=dilation_rate,
                    depth_multiplier=depth_multiplier, activation=activation, use_bias=use_bias,
                    depthwise_initializer=depthwise_initializer,
                    pointwise_initializer=pointwise_initializer,
                    bias_initializer=bias_initializer,
                    depthwise_regularizer=depthwise_regularizer,
                    pointwise_regularizer=pointwise_regularizer,
                    bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                    depthwise_constraint=depthwise_constraint,
                    pointwise_constraint=pointwise_constraint, bias_constraint=bias_constraint,
                    trainable=trainable)


def _pool(pool, rank, inputs, size, strides, padding):
    if rank == 1:
        return pool(inputs, size[0], strides[0], padding)
    return pool(inputs, ksize=[1, *size, 1], strides=[1, *strides, 1], padding=padding)


def _pooling(pool, kind, rank, inputs, pool_size, strides, padding, data_format, name):
    _nhwc(data_format, kind)
    size, strides = _ints(pool_size, rank, "pool_size"), _ints(strides, rank, "strides")
    with get_default_graph().name_scope(name or kind):
        return _pool(pool, rank, inputs, size, strides, _padding(padding))


def max_pooling1d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """1-D max pooling of [batch, width, channels] ``inputs``."""
    return _pooling(conv_ops.max_pool1d, "max_pooling1d", 1, inputs, pool_size, strides, padding,
                    data_format, name)


def average_pooling1d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None):
    """1-D average pooling of [batch, width, channels] ``inputs``."""
    return _pooling(conv_ops.avg_pool1d, "average_pooling1d", 1, inputs, pool_size, strides,
                    padding, data_format, name)


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """2-D max pooling of NHWC ``inputs``."""
    return _pooling(conv_ops.max_pool, "max_pooling2d", 2, inputs, pool_size, strides, padding,
                    data_format, name)


def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None):
    """2-D average pooling of NHWC ``inputs``."""
    return _pooling(conv_ops.avg_pool, "average_pooling2d", 2, inputs, pool_size, strides,
                    padding, data_format, name)


def max_pooling3d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """3-D max pooling of NDHWC ``inputs``."""
    return _pooling(conv_ops.max_pool3d, "max_pooling3d", 3, inputs, pool_size, strides, padding,
                    data_format, name)


def average_pooling3d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None):
    """3-D average pooling of NDHWC ``inputs``."""
    return _pooling(conv_ops.avg_pool3d, "average_pooling3d", 3, inputs, pool_size, strides,
                    padding, data_format, name)

def _flattened(inputs):
    shape = inputs.get_shape()
    if shape.ndims is not None and shape[1:].is_fully_defined() and shape[1:].num_elements() > 0:
        return array_ops.reshape(inputs, [-1, shape[1:].num_elements()])
    # Trailing dimensions known only at run time: the batch size comes from the input.
    return array_ops.reshape(inputs, array_ops.stack([array_ops.shape(inputs)[0], -1]))


def flatten(inputs, name=None, data_format="channels_last"):
    """``inputs`` as ``[batch, everything else]``."""
    _nhwc(data_format, "flatten")
    inputs = convert_to_tensor(inputs)
    with get_default_graph().name_scope(name or "flatten"):
        return _flattened(inputs)


def _check_rate(rate):
    if not 0 <= rate < 1:
        raise ValueError("rate must be in [0, 1), got %r" % (rate,))


def _dropped(inputs, rate, noise_shape, seed, training):
    if not is_symbolic(training):
        if not training or rate == 0:
            return array_ops.identity(inputs)
        return nn_ops.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed)
    training = convert_to_tensor(training)
    if training.dtype != dtypes.bool:
        raise TypeError("training must be a Python bool or a bool tensor, got %s"
                        % training.dtype.name)
    dropped = nn_ops.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed)
    return array_ops.where(array_ops.fill(array_ops.shape(inputs), training), dropped, inputs)


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """Units dropped with probability ``rate`` (the others scaled by ``1 / (1 - rate)``) when
    ``training`` (a Python bool or a bool tensor); ``inputs`` unchanged otherwise."""
    _check_rate(rate)
    with get_default_graph().name_scope(name or "dropout"):
        return _dropped(convert_to_tensor(inputs), rate, noise_shape, seed, training)


class Flatten(Layer):
    """TF1's ``tf.layers.Flatten``: :func:`flatten` as a layer object."""

    def __init__(self, data_format="channels_last", name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        _nhwc(data_format, "Flatten")
        self.data_format = data_format
        self.input_spec = InputSpec(min_ndim=1)

    _config_keys = ("data_format",)

    def call(self, inputs):
        return _flattened(inputs)

    def compute_output_shape(self, input_shape):
        shape = as_shape(input_shape).with_rank_at_least(1)
        rest = shape[1:]
        return as_shape([shape[0].value, rest.num_elements() if rest.is_fully_defined()
                         else None])


class Dropout(Layer):
    """TF1's ``tf.layers.Dropout``: :func:`dropout` as a layer object, ``training`` given to
    each call.

    >>> import numpy as np, zps as tf
    >>> with tf.Graph().as_default():
    ...     layer = tf.layers.Dropout(0.5)
    ...     x = tf.ones([1000])
    ...     kept = tf.Session().run(layer(x, training=True))
    ...     print(sorted(set(kept.tolist())), 400 < np.count_nonzero(kept) < 600)
    [0.0, 2.0] True
    """

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        _check_rate(rate)
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed

    _config_keys = ("rate", "noise_shape", "seed")

    def call(self, inputs, training=False):
        return _dropped(inputs, self.rate, self.noise_shape, self.seed, training)

    def compute_output_shape(self, input_shape):
        return as_shape(input_shape)


class _Pooling(Layer):
    """A pooling layer object (TF1's ``tf.layers.MaxPooling2D`` ...) over ``_rank`` spatial
    dimensions of channels-last inputs."""

    _pool, _rank = None, None   # e.g. staticmethod(conv_ops.max_pool), 2

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if strides is None:
            raise ValueError("Argument `strides` must not be None.")
        _nhwc(data_format, type(self).__name__)
        self.pool_size = _ints(pool_size, self._rank, "pool_size")
        self.strides = _ints(strides, self._rank, "strides")
        self.padding = _padding(padding).lower()
        self.data_format = data_format
        self.input_spec = InputSpec(ndim=self._rank + 2)

    _config_keys = ("pool_size", "padding", "strides", "data_format")

    def call(self, inputs):
        return _pool(self._pool, self._rank, inputs, self.pool_size, self.strides,
                     self.padding.upper())

    def compute_output_shape(self, input_shape):
        shape = as_shape(input_shape).with_rank(self._rank + 2)
        return as_shape([shape[0].value] + [_conv_size(d.value, k, self.padding, s) for d, k, s
                                            in zip(shape[1:-1], self.pool_size, self.strides)]
                        + [shape[-1].value])


class MaxPooling1D(_Pooling):
    """TF1's ``tf.layers.MaxPooling1D``: :func:`max_pooling1d` as a layer object."""
    _pool, _rank = staticmethod(conv_ops.max_pool1d), 1


class AveragePooling1D(_Pooling):
    """TF1's ``tf.layers.AveragePooling1D``: :func:`average_pooling1d` as a layer object."""
    _pool, _rank = staticmethod(conv_ops.avg_pool1d), 1


class MaxPooling2D(_Pooling):
    """TF1's ``tf.layers.MaxPooling2D``: :func:`max_pooling2d` as a layer object.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     layer = tf.layers.MaxPooling2D(2, 2, padding="same")
    ...     y = layer(tf.zeros([1, 5, 5, 3]))
    ...     print(y.get_shape().as_list(), y.op.name, layer.pool_size, layer.padding)
    [1, 3, 3, 3] max_pooling2d/MaxPool (2, 2) same
    """
    _pool, _rank = staticmethod(conv_ops.max_pool), 2


class AveragePooling2D(_Pooling):
    """TF1's ``tf.layers.AveragePooling2D``: :func:`average_pooling2d` as a layer object."""
    _pool, _rank = staticmethod(conv_ops.avg_pool), 2


class MaxPooling3D(_Pooling):
    """TF1's ``tf.layers.MaxPooling3D``: :func:`max_pooling3d` as a layer object."""
    _pool, _rank = staticmethod(conv_ops.max_pool3d), 3


class AveragePooling3D(_Pooling):
    """TF1's ``tf.layers.AveragePooling3D``: :func:`average_pooling3d` as a layer object."""
    _pool, _rank = staticmethod(conv_ops.avg_pool3d), 3

class BatchNormalization(Layer):
    """TF1's batch normalization layer (Ioffe and Szegedy, 2015): ``gamma * (x - mean) /
    sqrt(variance + epsilon) + beta`` along ``axis`` (an int or a list of ints).

    In training (``training`` True, or a bool tensor that is true when run) ``mean`` and
    ``variance`` are the batch's (biased) moments over the other axes, and each call adds two ops
    to ``updates`` and ``tf.GraphKeys.UPDATE_OPS`` that move ``moving_mean`` and
    ``moving_variance`` towards them: ``moving -= (moving - batch) * (1 - momentum)``. Run them
    with the training step (``with tf.control_dependencies(tf.get_collection(
    tf.GraphKeys.UPDATE_OPS)): ...``). In inference the moving statistics are used and left
    unchanged.

    The variables are ``<scope>/gamma`` and ``<scope>/beta`` (trainable, when ``scale`` and
    ``center``) and ``<scope>/moving_mean`` and ``<scope>/moving_variance`` (global only), the
    scope named ``name`` or ``batch_normalization``, ``batch_normalization_1``... As in TF1, a
    4-D input normalized along axis 1 or 3 (float16/float32) goes through
    ``tf.nn.fused_batch_norm`` (unless ``fused=False``), whose batch variance feeding the moving
    average is Bessel-corrected. zps does not implement ``renorm``, ``virtual_batch_size`` or
    ``adjustment``.

    >>> import numpy as np, zps as tf
    >>> with tf.Graph().as_default():
    ...     layer = tf.layers.BatchNormalization(epsilon=0.0)
    ...     y = layer(tf.constant([[1.0], [3.0]]), training=True)
    ...     sess = tf.Session()
    ...     _ = sess.run(tf.global_variables_initializer())
    ...     print(sess.run(y).ravel(), [v.op.name for v in layer.variables])
    [-1.  1.] ['batch_normalization/gamma', 'batch_normalization/beta', \
'batch_normalization/moving_mean', 'batch_normalization/moving_variance']
    """

    _config_keys = ("axis", "momentum", "epsilon", "center", "scale", "beta_initializer",
                    "gamma_initializer", "moving_mean_initializer", "moving_variance_initializer",
                    "beta_regularizer", "gamma_regularizer", "beta_constraint",
                    "gamma_constraint")

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer=_ZEROS, gamma_initializer=_ONES,
                 moving_mean_initializer=_ZEROS, moving_variance_initializer=_ONES,
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                 fused=None, trainable=True, virtual_batch_size=None, adjustment=None, name=None,
                 **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        for what, value in [("renorm", renorm), ("virtual_batch_size", virtual_batch_size),
                            ("adjustment", adjustment)]:
            if value:
                raise NotImplementedError("batch_normalization: zps does not implement %s (got "
                                          "%r); leave it at its default" % (what, value))
        self.axis = list(axis) if isinstance(axis, list | tuple) else axis
        self.momentum = momentum
        self.epsilon = epsilon
        self.center = center
        self.scale = scale
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer
        self.moving_mean_initializer = moving_mean_initializer
        self.moving_variance_initializer = moving_variance_initializer
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint
        self.fused = fused
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def get_config(self):
        config = super().get_config()
        if self.fused is not None:   # not in TF1's config; kept so that from_config keeps it
            config["fused"] = self.fused
        return config

    def build(self, input_shape):
        shape = as_shape(input_shape)
        _check_floating(self)
        if shape.ndims is None:
            raise ValueError("Input has undefined rank: batch_normalization needs the rank of its "
                             "inputs (give their placeholder a shape)")
        axes = self._axes = _normalized_axes(self.axis, shape)
        dtype = dtypes.as_dtype(self.dtype)
        param_dtype = dtypes.float32 if dtype == dtypes.float16 else dtype
        self._param_shape = param_shape = (
            [shape[axes[0]].value] if len(axes) == 1 else
            [shape[i].value if i in axes else 1 for i in range(shape.ndims)])
        self._fused = self.fused is not False and shape.ndims == 4 and axes in ([1], [3]) and \
            dtype != dtypes.float64
        self.input_spec = InputSpec(ndim=shape.ndims, axes={a: shape[a].value for a in axes})
        if self.scale:
            self.gamma = self.add_weight("gamma", param_shape, param_dtype,
                                         self.gamma_initializer, self.gamma_regularizer,
                                         constraint=self.gamma_constraint)
        if self.center:
            self.beta = self.add_weight("beta", param_shape, param_dtype, self.beta_initializer,
                                        self.beta_regularizer, constraint=self.beta_constraint)
        # TF 1.15: ON_READ with MEAN aggregation, so that under a tf.distribute strategy each
        # replica moves its own copy towards its batch's moments, and a cross-replica read (a
        # checkpoint) is the copies' mean.
        moving = dict(trainable=False, synchronization=VariableSynchronization.ON_READ,
                      aggregation=VariableAggregation.MEAN)
        self.moving_mean = self.add_weight("moving_mean", param_shape, param_dtype,
                                           self.moving_mean_initializer, **moving)
        self.moving_variance = self.add_weight("moving_variance", param_shape, param_dtype,
                                               self.moving_variance_initializer, **moving)
        self.built = True

    def call(self, inputs, training=False):
        if not is_symbolic(training) and not training:
            return self._normalize(inputs, False)[0]
        if is_symbolic(training):
            training = convert_to_tensor(training)
            if training.dtype != dtypes.bool:
                raise TypeError("training must be a Python bool or a bool tensor, got %s"
                                % training.dtype.name)
        outputs, mean, variance = self._normalize(inputs, training)
        # With a bool tensor the update ops leave the moving statistics unchanged in inference:
        # TF1's fused layer makes the momentum 1 there (and so computes the decay in float32),
        # its other path skips the update; either way, the same bits as TF1.
        if not is_symbolic(training):
            decay = 1.0 - self.momentum
        elif self._fused:
            decay = math_ops.subtract(1.0, array_ops.where(training, self.momentum, 1.0))
        else:
            decay = array_ops.where(training, 1.0 - self.momentum, 0.0)
        self.add_update([_assign_moving_average(var, value, decay) for var, value in
                         [(self.moving_mean, mean), (self.moving_variance, variance)]])
        return outputs

    def _normalize(self, inputs, training):
        """``(outputs, mean, variance)``: ``training`` False, True or a bool tensor choosing
        between the batch's statistics and the moving ones."""
        ndims, axes, param_shape = inputs.get_shape().ndims, self._axes, self._param_shape
        if self._fused:
            def fused_batch_norm(is_training):
                ones = array_ops.ones(param_shape, self.moving_mean.dtype)
                return nn_ops.fused_batch_norm(
                    inputs, self.gamma if self.scale else ones,
                    self.beta if self.center else array_ops.zeros_like(ones),
                    self.moving_mean, self.moving_variance, self.epsilon,
                    "NCHW" if axes == [1] else "NHWC", is_training)
            if not is_symbolic(training):
                return fused_batch_norm(training)
            return [array_ops.where(training, a, b)
                    for a, b in zip(fused_batch_norm(True), fused_batch_norm(False))]

        # TF1's other path: tf.nn.moments, then tf.nn.batch_normalization (float16 in float32).
        x = math_ops.cast(inputs, dtypes.float32) if inputs.dtype == dtypes.float16 else inputs
        reduction = [i for i in range(ndims) if i not in axes]
        moving = [convert_to_tensor(self.moving_mean), convert_to_tensor(self.moving_variance)]
        if training is False:
            mean, variance = moving
        else:
            mean, variance = nn_ops.moments(x, reduction, keep_dims=len(axes) > 1)
            if is_symbolic(training):
                mean, variance = (array_ops.where(training, a, b)
                                  for a, b in zip((mean, variance), moving))

        def channel(v):   # a single axis other than the last: the parameters as [1, C, 1, ...]
            if v is None or len(axes) > 1 or axes[0] == ndims - 1:
                return v
            return array_ops.reshape(v, [param_shape[0] if i == axes[0] else 1
                                         for i in range(ndims)])

        outputs = nn_ops.batch_normalization(x, channel(mean), channel(variance),
                                             channel(self.beta), channel(self.gamma),
                                             self.epsilon)
        if inputs.dtype == dtypes.float16:
            outputs = math_ops.cast(outputs, dtypes.float16)
        outputs.set_shape(inputs.get_shape())
        return outputs, mean, variance

    def compute_output_shape(self, input_shape):
        return as_shape(input_shape)


def _normalized_axes(axis, shape):
    """``axis`` of batch_normalization as a sorted list of non-negative axes, each of known size."""
    ndims = shape.ndims
    axes = axis if isinstance(axis, list | tuple) else [axis]
    if not axes or any(not -ndims <= a < ndims for a in axes) or \
            len({a % ndims for a in axes}) != len(axes):
        raise ValueError("Invalid value for `axis` argument of batch_normalization. Expected 0 <= "
                         "axis < inputs.rank (with inputs.rank=%d). Received: axis=%r"
                         % (ndims, axis))
    axes = sorted(a % ndims for a in axes)
    if any(shape[a].value is None for a in axes):
        raise ValueError("Input has undefined `axis` dimension. Received input with shape %s "
                         "and axis=%s" % (shape, tuple(axes)))
    return axes


def _assign_moving_average(variable, value, decay, scope=None):
    """``variable -= (variable - value) * decay``: TF1's update op (AssignMovingAvg), in a new
    AssignMovingAvg name scope or the given ``scope`` (a scope string ending in '/', re-entered;
    the op takes its name)."""
    graph = get_default_graph()
    with graph.colocate_with(variable.op), graph.name_scope(scope or "AssignMovingAvg") as scope:
        decay = decay if is_symbolic(decay) else convert_to_tensor(decay, name="decay")
        if decay.dtype != variable.dtype.base_dtype:   # float32, as TF1 makes it, then cast
            decay = math_ops.cast(decay, variable.dtype.base_dtype)
        delta = (variable - math_ops.cast(value, variable.dtype.base_dtype)) * decay
        update = state_ops.assign_sub(variable, delta, name=scope)
        # (a tf.distribute variable updated in cross-replica context: an op for every copy)
        return getattr(update, "op", update)


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        beta_initializer=_ZEROS, gamma_initializer=_ONES,
                        moving_mean_initializer=_ZEROS, moving_variance_initializer=_ONES,
                        beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                        gamma_constraint=None, training=False, trainable=True, name=None,
                        reuse=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                        fused=None, virtual_batch_size=None, adjustment=None):
    """TF1's functional batch normalization: ``BatchNormalization(...)(inputs, training)``.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.placeholder(tf.float32, [None, 3])
    ...     y = tf.layers.batch_normalization(x, training=True)
    ...     print([op.name for op in tf.get_collection(tf.GraphKeys.UPDATE_OPS)])
    ['batch_normalization/AssignMovingAvg', 'batch_normalization/AssignMovingAvg_1']
    """
    layer = BatchNormalization(
        axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
        beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
        moving_mean_initializer=moving_mean_initializer,
        moving_variance_initializer=moving_variance_initializer,
        beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
        beta_constraint=beta_constraint, gamma_constraint=gamma_constraint, renorm=renorm,
        renorm_clipping=renorm_clipping, renorm_momentum=renorm_momentum, fused=fused,
        trainable=trainable, virtual_batch_size=virtual_batch_size, adjustment=adjustment,
        name=name, _scope=name, _reuse=reuse)
    return layer.apply(inputs, training=training)


__all__ = ["Layer", "InputSpec", "Dense", "Dropout", "Flatten", "MaxPooling1D", "MaxPooling2D",
           "MaxPooling3D", "AveragePooling1D", "AveragePooling2D", "AveragePooling3D",
           "dense", "conv1d", "conv2d", "conv3d", "conv2d_transpose", "conv3d_transpose",
           "separable_conv1d", "separable_conv2d", "Conv1D", "Conv2D", "Conv3D",
           "Conv2DTranspose", "Conv3DTranspose", "SeparableConv1D", "SeparableConv2D",
           "max_pooling1d", "average_pooling1d", "max_pooling2d", "average_pooling2d",
           "max_pooling3d", "average_pooling3d", "flatten", "dropout", "batch_normalization",
           "BatchNormalization"]
