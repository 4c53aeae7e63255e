"""``tf.keras.backend`` as TF1's graph-mode Keras has it: the learning phase (a bool
``placeholder_with_default(False)`` per graph, or a value fixed by ``set_learning_phase``), the
per-graph counters that name layers (``dense``, ``dense_1``...), ``floatx``/``epsilon`` and a
few aliases of tf ops.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     print(tf.keras.backend.learning_phase().op.name, tf.keras.backend.floatx())
keras_learning_phase float32
"""

import weakref

import numpy as np

from zps.framework import default_session, dtypes
from zps.framework import graph as framework
from zps.ops import (
    array_ops,
    clip_ops,
    control_flow_ops,
    gradients_impl,
    logging_ops,
    math_ops,
    nn_ops,
    random_ops,
    state_ops,
    variables,
)

_FLOATX = ["float32"]
_EPSILON = [1e-7]
_SESSION = [None]    # the session get_session made (TF1 Keras's _SESSION)
_GRAPH_STATE = weakref.WeakKeyDictionary()   # graph -> {"uids": {}, "names": {}, "phase": ...}


def _state():
    return _state_of(framework.get_default_graph())


def _state_of(graph):
    return _GRAPH_STATE.setdefault(graph, {"uids": {}, "names": {}})


def get_uid(prefix=""):
    """1, 2, 3... for each call with ``prefix`` in the default graph."""
    uids = _state()["uids"]
    uids[prefix] = uids.get(prefix, 0) + 1
    return uids[prefix]


def reset_uids():
    """Forget the default graph's name counters."""
    _state()["uids"].clear()
    _state()["names"].clear()


def unique_object_name(name, zero_based=True):
    """``name``, then ``name_1``, ``name_2``... in the default graph (Keras's layer names)."""
    names = _state()["names"]
    count = names.get(name, 0)
    names[name] = count + 1
    if zero_based:
        return name if count == 0 else "%s_%d" % (name, count)
    return "%s_%d" % (name, count + 1)


def learning_phase():
    """The default graph's learning phase: the value ``set_learning_phase`` gave (0 or 1), else
    the bool tensor ``keras_learning_phase`` (False unless fed: inference)."""
    state = _state()
    if "phase" not in state:
        graph = framework.get_default_graph()
        with graph.name_scope(None), graph.control_dependencies(None):
            state["phase"] = array_ops.placeholder_with_default(False, shape=[],
                                                                name="keras_learning_phase")
    return state["phase"]


def set_learning_phase(value):
    """Fix the default graph's learning phase: 0 (inference) or 1 (training)."""
    if value not in (0, 1):
        raise ValueError("Expected learning phase to be 0 or 1, got %r" % (value,))
    _state()["phase"] = value


def clear_session():
    """Reset the default graph (and with it the layer name counters and the learning phase)
    and close the session ``get_session`` made."""
    if _SESSION[0] is not None:
        _SESSION[0].close()
        _SESSION[0] = None
    framework.reset_default_graph()


def get_session():
    """The session Keras runs in (TF1's): the default session if there is one, else a session
    over the default graph made once (or given to ``set_session``, kept until
    ``clear_session``); the graph's variables (and metric variables) not yet initialized are
    initialized in it first."""
    session = default_session.get()
    if session is None:
        session = _SESSION[0]
        if session is None or session.graph is not framework.get_default_graph() or session._closed:
            from zps.client.session import Session
            session = _SESSION[0] = Session(graph=framework.get_default_graph())
    _initialize_variables(session)
    return session


def _initialize_variables(session):
    # Each variable is checked once (as TF's Keras): those a user initialized are left alone.
    graph = session.graph
    checked = session.__dict__.setdefault("_keras_checked", set())
    # Keras's metric variables (local, in METRIC_VARIABLES) are Keras's to initialize too.
    keys = framework.GraphKeys
    new = [v for key in (keys.GLOBAL_VARIABLES, keys.METRIC_VARIABLES)
           for v in graph.get_collection(key) if v.name not in checked]
    if not new:
        return
    with graph.as_default():
        flags = session.run([variables.is_variable_initialized(v) for v in new])
        missing = [v for v, initialized in zip(new, flags) if not initialized]
        if missing:
            session.run(variables.variables_initializer(missing))
    checked.update(v.name for v in new)


def floatx():
    """The default float type's name: ``"float32"``."""
    return _FLOATX[0]


def set_floatx(value):
    """Set the default float type (``"float16"``, ``"float32"`` or ``"float64"``)."""
    if value not in ("float16", "float32", "float64"):
        raise ValueError("Unknown floatx type: %r (give float16, float32 or float64)" % (value,))
    _FLOATX[0] = value


def epsilon():
    """The fuzz factor of Keras's losses: 1e-7."""
    return _EPSILON[0]


def set_epsilon(value):
    """Set the fuzz factor ``epsilon()`` gives."""
    _EPSILON[0] = value


def image_data_format():
    """``"channels_last"``: the only layout zps's layers take."""
    return "channels_last"


def int_shape(x):
    """The static shape of tensor ``x`` as a tuple of ints and Nones (None for unknown rank)."""
    shape = x.get_shape()
    return None if shape.ndims is None else tuple(shape.as_list())


def ndim(x):
    """The rank of ``x`` (None when unknown)."""
    return x.get_shape().ndims


def _reduction(fn):
    def reduce(x, axis=None, keepdims=False):
        return fn(x, axis=axis, keepdims=keepdims)
    reduce.__doc__ = "``tf.%s(x, axis, keepdims)``." % fn.__name__
    return reduce


mean, sum, max, min = (_reduction(f) for f in (  # noqa: A001 - Keras's names
    math_ops.reduce_mean, math_ops.reduce_sum, math_ops.reduce_max, math_ops.reduce_min))
square, sqrt, exp, log, abs = (math_ops.square, math_ops.sqrt, math_ops.exp,  # noqa: A001
                               math_ops.log, math_ops.abs)
sigmoid, tanh, relu, softmax = math_ops.sigmoid, math_ops.tanh, nn_ops.relu, nn_ops.softmax
cast, reshape, shape, transpose = (math_ops.cast, array_ops.reshape, array_ops.shape,
                                  array_ops.transpose)


def concatenate(tensors, axis=-1):
    """``tf.concat(tensors, axis)``."""
    return array_ops.concat(list(tensors), axis)


def set_session(session):
    """Make ``session`` the one Keras runs in (``get_session`` returns it)."""
    _SESSION[0] = session


def cast_to_floatx(x):
    """``x`` (a numpy array or number) as a numpy array of ``floatx()``."""
    return np.asarray(x, dtype=floatx())


def _dtype(dtype):
    return dtypes.as_dtype(dtype or floatx())


def variable(value, dtype=None, name=None, constraint=None):
    """A variable of ``value`` (``floatx()`` by default), initialized in Keras's session when
    first used there."""
    return variables.Variable(np.asarray(value, _dtype(dtype).as_numpy_dtype), name=name,
                              constraint=constraint)


def constant(value, dtype=None, shape=None, name=None):
    """``tf.constant(value, dtype or floatx(), shape)``."""
    return array_ops.constant(value, dtype=_dtype(dtype), shape=shape, name=name)


def placeholder(shape=None, ndim=None, dtype=None, sparse=False, name=None):
    """A placeholder of ``shape`` (or of rank ``ndim``, every dimension unknown)."""
    if sparse:
        raise NotImplementedError("zps's keras.backend.placeholder does not make sparse "
                                  "placeholders: use tf.sparse_placeholder")
    if shape is None and ndim is not None:
        shape = (None,) * ndim
    return array_ops.placeholder(_dtype(dtype), shape=shape, name=name)


def is_placeholder(x):
    """Whether ``x`` is a placeholder's output."""
    return getattr(getattr(x, "op", None), "type", None) in ("Placeholder",
                                                              "PlaceholderWithDefault")


def dtype(x):
    """The name of ``x``'s dtype (``"float32"``)."""
    return x.dtype.base_dtype.name


def eval(x):  # noqa: A001 - Keras's name
    """The value of ``x`` (a tensor or variable) in Keras's session."""
    return get_session().run(x)


def get_value(x):
    """The value of variable ``x`` (a numpy array)."""
    return get_session().run(x)


def batch_get_value(tensors):
    """The values of ``tensors`` (a list of numpy arrays)."""
    return get_session().run(list(tensors)) if tensors else []


def set_value(x, value):
    """Assign ``value`` (a numpy array) to variable ``x`` in Keras's session."""
    batch_set_value([(x, value)])


def batch_set_value(tuples):
    """Assign each ``(variable, value)`` in Keras's session (the assign ops made once per
    variable, the value fed)."""
    tuples = list(tuples)
    if not tuples:
        return
    session = get_session()
    ops, feed = [], {}
    for x, value in tuples:
        value = np.asarray(value, x.dtype.base_dtype.as_numpy_dtype)
        cached = getattr(x, "_keras_assign", None)
        if cached is None:
            with x.graph.as_default(), x.graph.control_dependencies(None):
                holder = array_ops.placeholder(x.dtype.base_dtype, shape=None)
                cached = (holder, control_flow_ops.group(*[
                    state_ops.assign(v, part, validate_shape=False)
                    for v, part in _copies(x, holder)]))
            x._keras_assign = cached
        feed[cached[0]] = value
        ops.append(cached[1])
    session.run(ops, feed_dict=feed)


def _copies(x, value):
    """``(variable, value)`` for each copy of ``x`` (a strategy's variable has one per
    device, all set; those of a SUM-aggregated SyncOnRead variable share ``value``)."""
    from zps.distribute import values
    from zps.ops.variables import VariableAggregation
    if not values.is_distributed_variable(x):
        return [(x, value)]
    copies = list(x.values)
    if isinstance(x, values.SyncOnReadVariable) and x.aggregation == VariableAggregation.SUM:
        value = value / float(len(copies))
    return [(v, value) for v in copies]


def count_params(x):
    """The number of elements of ``x`` (its static shape)."""
    return int(np.prod(x.get_shape().as_list()))


def zeros(shape, dtype=None, name=None):
    """A variable of zeros."""
    return variable(np.zeros(shape), dtype, name)


def ones(shape, dtype=None, name=None):
    """A variable of ones."""
    return variable(np.ones(shape), dtype, name)


def eye(size, dtype=None, name=None):
    """A variable holding the ``size`` x ``size`` identity."""
    return variable(np.eye(size), dtype, name)


def zeros_like(x, dtype=None, name=None):
    """``tf.zeros_like(x, dtype)``."""
    return array_ops.zeros_like(x, dtype=dtype, name=name)


def ones_like(x, dtype=None, name=None):
    """``tf.ones_like(x, dtype)``."""
    return array_ops.ones_like(x, dtype=dtype, name=name)


def update(x, new_x):
    """``tf.assign(x, new_x)``."""
    return state_ops.assign(x, new_x)


def update_add(x, increment):
    """``tf.assign_add(x, increment)``."""
    return state_ops.assign_add(x, increment)


def update_sub(x, decrement):
    """``tf.assign_sub(x, decrement)``."""
    return state_ops.assign_sub(x, decrement)


def moving_average_update(x, value, momentum):
    """``x = x * momentum + value * (1 - momentum)`` (Keras's batch-norm statistics)."""
    return state_ops.assign(x, x * momentum + value * (1.0 - momentum))


def dot(x, y):
    """``x . y``: matmul over the last axis of ``x`` and the second-to-last of ``y``."""
    x_rank, y_rank = ndim(x), ndim(y)
    if x_rank is not None and y_rank is not None and (x_rank > 2 or y_rank > 2):
        return math_ops.tensordot(x, y, [[x_rank - 1], [y_rank - 2]])
    return math_ops.matmul(x, y)


def batch_dot(x, y, axes=None):
    """The dot product of each pair of examples of ``x`` and ``y`` (rank-2 or -3 inputs)."""
    if axes is None:
        axes = [ndim(x) - 1, ndim(y) - 2 if ndim(y) > 2 else ndim(y) - 1]
    if isinstance(axes, int):
        axes = [axes, axes]
    if ndim(x) == 2 and ndim(y) == 2:
        return math_ops.reduce_sum(x * y, axes[0], keepdims=True)
    return math_ops.einsum("bij,bjk->bik", x if axes[0] == 2 else array_ops.transpose(
        x, [0, 2, 1]), y if axes[1] == 1 else array_ops.transpose(y, [0, 2, 1]))


def _axis_op(fn, doc):
    def op(x, axis=None, keepdims=False):
        return fn(x, axis=axis, keepdims=keepdims)
    op.__doc__ = doc
    return op


prod = _axis_op(math_ops.reduce_prod, "``tf.reduce_prod(x, axis, keepdims)``.")
any = _axis_op(lambda x, axis, keepdims: math_ops.reduce_any(  # noqa: A001
    math_ops.cast(x, "bool"), axis=axis, keepdims=keepdims), "Logical or along ``axis``.")
all = _axis_op(lambda x, axis, keepdims: math_ops.reduce_all(  # noqa: A001
    math_ops.cast(x, "bool"), axis=axis, keepdims=keepdims), "Logical and along ``axis``.")


def var(x, axis=None, keepdims=False):
    """The variance of ``x`` along ``axis``."""
    m = math_ops.reduce_mean(x, axis=axis, keepdims=True)
    return math_ops.reduce_mean(math_ops.square(x - m), axis=axis, keepdims=keepdims)


def std(x, axis=None, keepdims=False):
    """The standard deviation of ``x`` along ``axis``."""
    return math_ops.sqrt(var(x, axis, keepdims))


def argmax(x, axis=-1):
    """``tf.argmax(x, axis)``."""
    return math_ops.argmax(x, axis)


def argmin(x, axis=-1):
    """``tf.argmin(x, axis)``."""
    return math_ops.argmin(x, axis)


def clip(x, min_value, max_value):
    """``x`` limited to ``[min_value, max_value]``."""
    if max_value is not None and min_value is not None and max_value < min_value:
        max_value = min_value
    return clip_ops.clip_by_value(x, min_value, max_value)


def expand_dims(x, axis=-1):
    """``tf.expand_dims(x, axis)``."""
    return array_ops.expand_dims(x, axis)


def squeeze(x, axis):
    """``tf.squeeze(x, [axis])``."""
    return array_ops.squeeze(x, [axis])


def stack(x, axis=0):
    """``tf.stack(x, axis)``."""
    return array_ops.stack(x, axis=axis)


def flatten(x):
    """``x`` as one axis."""
    return array_ops.reshape(x, [-1])


def batch_flatten(x):
    """``x`` as ``[batch, everything else]``."""
    return array_ops.reshape(x, array_ops.stack([-1, math_ops.reduce_prod(
        array_ops.shape(x)[1:])]))


def permute_dimensions(x, pattern):
    """``tf.transpose(x, pattern)``."""
    return array_ops.transpose(x, perm=pattern)


def tile(x, n):
    """``tf.tile(x, n)`` (an int ``n`` for rank 1)."""
    return array_ops.tile(x, [n] if isinstance(n, int) else n)


def repeat_elements(x, rep, axis):
    """Each slice of ``x`` along ``axis`` repeated ``rep`` times (``np.repeat``)."""
    shape = x.get_shape().as_list()
    slices = array_ops.split(x, shape[axis], axis=axis)
    return array_ops.concat([s for s in slices for _ in range(rep)], axis)


def gather(reference, indices):
    """``tf.gather(reference, indices)``."""
    return array_ops.gather(reference, indices)


def one_hot(indices, num_classes):
    """``tf.one_hot(indices, num_classes)``."""
    return array_ops.one_hot(indices, depth=num_classes, axis=-1)


def switch(condition, then_expression, else_expression):
    """``then_expression`` where ``condition`` else ``else_expression`` (tensors or callables;
    a scalar condition picks one with ``tf.cond``)."""
    if callable(then_expression) or callable(else_expression) or ndim(condition) == 0:
        then_fn = then_expression if callable(then_expression) else lambda: then_expression
        else_fn = else_expression if callable(else_expression) else lambda: else_expression
        return control_flow_ops.cond(math_ops.cast(condition, "bool"), then_fn, else_fn)
    return array_ops.where(condition, then_expression, else_expression)


def in_train_phase(x, alt, training=None):
    """``x`` in the training phase (``training`` or ``learning_phase()``), else ``alt``."""
    training = learning_phase() if training is None else training
    if isinstance(training, int | bool):
        chosen = x if training else alt
        return chosen() if callable(chosen) else chosen
    return switch(training, x, alt)


def in_test_phase(x, alt, training=None):
    """``in_train_phase(alt, x, training)``."""
    return in_train_phase(alt, x, training)


def dropout(x, level, noise_shape=None, seed=None):
    """``x`` with a fraction ``level`` of its elements zeroed, the rest scaled up."""
    return nn_ops.dropout(x, rate=level, noise_shape=noise_shape, seed=seed)


def l2_normalize(x, axis=None):
    """``tf.nn.l2_normalize(x, axis)``."""
    return nn_ops.l2_normalize(x, axis)


def bias_add(x, bias, data_format=None):
    """``tf.nn.bias_add(x, bias)``."""
    return nn_ops.bias_add(x, bias)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """A tensor of normal values."""
    return random_ops.random_normal(shape, mean, stddev, _dtype(dtype), seed)


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """A tensor of uniform values in ``[minval, maxval)``."""
    return random_ops.random_uniform(shape, minval, maxval, _dtype(dtype), seed)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """A tensor of truncated normal values."""
    return random_ops.truncated_normal(shape, mean, stddev, _dtype(dtype), seed)


def gradients(loss, variables_):
    """``tf.gradients(loss, variables)``."""
    return gradients_impl.gradients(loss, variables_)


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Keras's categorical cross-entropy of ``target`` and ``output`` (one value per example)."""
    from zps.keras import losses
    if axis not in (-1, ndim(output) - 1):
        raise NotImplementedError("zps's keras.backend.categorical_crossentropy takes the last "
                                  "axis only")
    return losses.categorical_crossentropy(target, output, from_logits)


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Keras's sparse categorical cross-entropy (integer ``target``)."""
    from zps.keras import losses
    return losses.sparse_categorical_crossentropy(target, output, from_logits, axis)


def binary_crossentropy(target, output, from_logits=False):
    """Keras's elementwise binary cross-entropy (no mean over the last axis)."""
    output = framework.convert_to_tensor(output)
    target = math_ops.cast(target, output.dtype)
    if from_logits:
        return nn_ops.sigmoid_cross_entropy_with_logits(labels=target, logits=output)
    eps = epsilon()
    output = clip_ops.clip_by_value(output, eps, 1.0 - eps)
    bce = target * math_ops.log(output + eps)
    bce += (1.0 - target) * math_ops.log(1.0 - output + eps)
    return -bce


def function(inputs, outputs, updates=None, name=None, **kwargs):
    """A callable ``f(values) -> outputs' values``: runs ``outputs`` (and ``updates``) in
    Keras's session with ``inputs`` fed ``values``."""
    inputs, updates = list(inputs), list(updates or [])
    single = not isinstance(outputs, list | tuple)
    fetches = [outputs] if single else list(outputs)

    def run(values):
        feed = dict(zip(inputs, values))
        results = get_session().run(fetches + updates, feed_dict=feed)[:len(fetches)]
        return results[0] if single else results
    return run


def name_scope(name):
    """``tf.name_scope(name)`` in the default graph."""
    return framework.get_default_graph().name_scope(name)


def stop_gradient(variables_):
    """``tf.stop_gradient`` of a tensor or of each tensor of a list."""
    if isinstance(variables_, list | tuple):
        return [array_ops.stop_gradient(v) for v in variables_]
    return array_ops.stop_gradient(variables_)


def print_tensor(x, message=""):
    """``x``, printing ``message`` and its value when evaluated."""
    return logging_ops.Print(x, [x], message)


identity, pow, sign, round, equal, not_equal = (  # noqa: A001
    array_ops.identity, math_ops.pow, math_ops.sign, math_ops.round, math_ops.equal,
    math_ops.not_equal)
greater, greater_equal, less, less_equal = (math_ops.greater, math_ops.greater_equal,
                                            math_ops.less, math_ops.less_equal)
maximum, minimum, sin, cos = math_ops.maximum, math_ops.minimum, math_ops.sin, math_ops.cos
elu, softplus, softsign, cumsum, cumprod = (nn_ops.elu, nn_ops.softplus, nn_ops.softsign,
                                            math_ops.cumsum, math_ops.cumprod)


def hard_sigmoid(x):
    """``clip(0.2 * x + 0.5, 0, 1)``."""
    return clip_ops.clip_by_value(0.2 * x + 0.5, 0.0, 1.0)


def in_top_k(predictions, targets, k):
    """``tf.nn.in_top_k(predictions, targets, k)``."""
    return nn_ops.in_top_k(predictions, targets, k)


__all__ = ["abs", "all", "any", "argmax", "argmin", "batch_dot", "batch_flatten",
           "batch_get_value", "batch_set_value", "bias_add", "binary_crossentropy", "cast",
           "cast_to_floatx", "categorical_crossentropy", "clear_session", "clip", "concatenate",
           "constant", "cos", "count_params", "cumprod", "cumsum", "dot", "dropout", "dtype",
           "elu", "epsilon", "equal", "eval", "exp", "expand_dims", "eye", "flatten", "floatx",
           "function", "gather", "get_session", "get_uid", "get_value", "gradients", "greater",
           "greater_equal", "hard_sigmoid", "identity", "image_data_format", "in_test_phase",
           "in_top_k", "in_train_phase", "int_shape", "is_placeholder", "l2_normalize",
           "learning_phase", "less", "less_equal", "log", "max", "maximum", "mean", "min",
           "minimum", "moving_average_update", "name_scope", "ndim", "not_equal", "one_hot",
           "ones", "ones_like", "permute_dimensions", "placeholder", "pow", "print_tensor", "prod",
           "random_normal", "random_uniform", "relu", "repeat_elements", "reset_uids", "reshape",
           "round", "set_epsilon", "set_floatx", "set_learning_phase", "set_session", "set_value",
           "shape", "sigmoid", "sign", "sin", "softmax", "softplus", "softsign",
           "sparse_categorical_crossentropy", "sqrt", "square", "squeeze", "stack", "std",
           "stop_gradient", "sum", "switch", "tanh", "tile", "transpose", "truncated_normal",
           "unique_object_name", "update", "update_add", "update_sub", "var", "variable", "zeros",
           "zeros_like"]
