"""Neural-network ops (``tf.nn``): activations, softmax, bias_add, losses, moments, dropout,
batch normalization, l2_normalize, top_k, in_top_k and local response normalization.

Each op is one block: registration (shape rule, kernel, gradient rule) next to its wrapper. As in
TF1, an activation's gradient is its own op (``ReluGrad``, ``EluGrad``...) computed from the
activation's output or input, and the softmax cross-entropies are fused: one kernel computes the
loss and its backprop, and the gradient rule reuses that second output.

>>> import numpy as np
>>> import zps as tf
>>> with tf.Graph().as_default():
...     logits = tf.constant([[2.0, 1.0, 0.1]])
...     loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0], logits=logits)
...     print(np.round(tf.Session().run(loss), 4))
[0.417]
"""

import collections
import logging
import numbers

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.constant import constant_value
from zps.framework.graph import convert_to_tensor, get_default_graph, is_symbolic
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape, unknown_shape
from zps.ops import array_ops, math_ops, random_ops
from zps.ops.op_util import broadcast_static, const_axis, make_op, normalize_axis, same_shape

_log = logging.getLogger(__name__)


def _features(x, op_type, arg="features", allow_int=False):
    """``x`` as a tensor of a dtype ``op_type`` accepts (TypeError naming the argument if not)."""
    t = convert_to_tensor(x)
    if not (t.dtype.is_floating or allow_int and t.dtype.is_integer):
        raise TypeError("Value passed to parameter '%s' of %s has DataType %s not in list of "
                        "allowed values: %s (%s)" % (arg, op_type, t.dtype.name,
                                                     "float16, float32, float64"
                                                     + (", integer types" if allow_int else ""),
                                                     t.name))
    return t


def _same_dtype(x, like, op_type, arg):
    """``x`` converted to ``like``'s dtype (Python values), or a TypeError for another tensor."""
    t = convert_to_tensor(x) if is_symbolic(x) else convert_to_tensor(x, dtype=like.dtype)
    if t.dtype != like.dtype:
        raise TypeError("%s: '%s' has dtype %s but the logits have dtype %s (%s vs %s); cast one "
                        "of them with tf.cast" % (op_type, arg, t.dtype.name, like.dtype.name,
                                                  t.name, like.name))
    return t


def _axis_attr(axis, x, op_name):
    """A softmax-like axis as an attr: normalized when the rank is known, else -1 only."""
    axis = const_axis(axis)
    if isinstance(axis, list | tuple):
        raise ValueError("%s takes a single axis, got %r" % (op_name, axis))
    ndims = x.get_shape().ndims
    if ndims is None:
        if axis != -1:
            raise ValueError("%s over axis %d needs %s to have a known rank" % (op_name, axis, x.name))
        return -1
    if ndims == 0:
        raise ValueError("%s needs a tensor of rank >= 1; %s is a scalar" % (op_name, x.name))
    if not -ndims <= axis < ndims:  # TF1's error type for it (not a ValueError)
        raise errors.InvalidArgumentError(
            None, None, "`dim` must be in the range [%d, %d) where %d is the number of dimensions "
            "of %s (%s), got %d" % (-ndims, ndims, ndims, x.name, op_name, axis))
    return normalize_axis(axis, ndims, op_name)[0]


def _deprecated_alias(new_name, new, old_name, old):
    if new is not None and old is not None:
        raise ValueError("Cannot specify both '%s' and '%s'" % (new_name, old_name))
    return new if new is not None else old


def _with_expanded_axis(vec, like, axis):
    """``vec`` (``like`` reduced over ``axis``) reshaped to broadcast against ``like`` (keepdims)."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if any(a < 0 for a in axes):
        raise ValueError("Expanding %s needs the rank of %s to be known" % (vec.name, like.name))
    # ReduceGradShape (math_ops) is exactly this: a reduced tensor back in its keepdims shape.
    return make_op("ReduceGradShape", [vec, array_ops.shape(like)], axis=axes)


def _is_zero(t):
    """Whether ``t`` is known to be all zeros (the filler gradients() gives unused outputs)."""
    if t is None or t.op.type == "ZerosLike":
        return True
    value = constant_value(t)
    return value is not None and not np.any(value)


def _shape_error(op, msg):
    """A build-time shape error in TF1's words, naming the op and its input shapes."""
    return ValueError("%s for '%s' (op type %s) with input shapes: %s"
                      % (msg, op.name, op.type, ", ".join(str(t.get_shape()) for t in op.inputs)))


# -- Relu ----------------------------------------------------------------------------------------
register_op("Relu", shape=same_shape, kernel=lambda ctx, x: ctx.xp.maximum(x, 0),
            grad=lambda op, g: [_relu_grad(g, op.outputs[0])])
# The mask comes from the output (y > 0 iff x > 0) so the input need not be kept alive.
register_op("ReluGrad", shape=same_shape, kernel=lambda ctx, g, y: g * (y > 0),
            grad=lambda op, gg: [_relu_grad(gg, op.inputs[1]), None])


def _relu_grad(g, y):
    return make_op("ReluGrad", [g, y])


def relu(features, name=None):
    """``max(features, 0)``.

    >>> import zps as tf
    >>> tf.Session().run(tf.nn.relu([-1.0, 2.0])).tolist()
    [0.0, 2.0]
    """
    return make_op("Relu", [_features(features, "Relu", allow_int=True)], name=name or "Relu")


def crelu(features, name=None, axis=-1):
    """Concatenated ReLU: ``relu(concat([features, -features], axis))``, twice as deep.

    >>> import zps as tf
    >>> tf.Session().run(tf.nn.crelu([[1.0, -2.0]])).tolist()
    [[1.0, 0.0, 0.0, 2.0]]
    """
    features = _features(features, "CRelu")
    with features.graph.name_scope(name or "CRelu"):
        return relu(array_ops.concat([features, math_ops.negative(features)], axis))


def swish(features, beta=1.0):
    """``features * sigmoid(beta * features)`` (also called SiLU).

    >>> import zps as tf
    >>> round(float(tf.Session().run(tf.nn.swish(1.0))), 6)
    0.731059
    """
    features = _features(features, "swish")
    with features.graph.name_scope("swish"):
        beta = math_ops.cast(convert_to_tensor(beta, name="beta"), features.dtype)
        return features * math_ops.sigmoid(beta * features)


def relu_layer(x, weights, biases, name=None):
    """``relu(matmul(x, weights) + biases)``."""
    x = convert_to_tensor(x)
    with x.graph.name_scope(name or "relu_layer") as scope:
        return make_op("Relu", [bias_add(math_ops.matmul(x, weights), biases)], name=scope)


# -- Relu6 ---------------------------------------------------------------------------------------
register_op("Relu6", shape=same_shape,
            kernel=lambda ctx, x: ctx.xp.minimum(ctx.xp.maximum(x, 0), 6),
            grad=lambda op, g: [make_op("Relu6Grad", [g, op.inputs[0]])])
register_op("Relu6Grad", shape=same_shape, kernel=lambda ctx, g, x: g * ((x > 0) & (x < 6)),
            grad=lambda op, gg: [make_op("Relu6Grad", [gg, op.inputs[1]]), None])


def relu6(features, name=None):
    """``min(max(features, 0), 6)``."""
    return make_op("Relu6", [_features(features, "Relu6", allow_int=True)], name=name or "Relu6")


# -- Elu -----------------------------------------------------------------------------------------
def _elu_kernel(ctx, x):
    xp = ctx.xp
    return xp.maximum(x, 0) + xp.expm1(xp.minimum(x, 0))


register_op("Elu", shape=same_shape, kernel=_elu_kernel,
            grad=lambda op, g: [make_op("EluGrad", [g, op.outputs[0]])])


def _elu_grad_grad(op, gg):
    g, y = op.inputs
    # d/dy [g * (y + 1) for y < 0] = g where y < 0: ReluGrad(v, -y) is v masked to y < 0.
    return [make_op("EluGrad", [gg, y]), _relu_grad(gg * g, -y)]


# For y <= 0 (x <= 0), dy/dx = exp(x) = y + 1; for y > 0 it is 1.
register_op("EluGrad", shape=same_shape,
            kernel=lambda ctx, g, y: g * (ctx.xp.minimum(y, 0) + 1),
            grad=_elu_grad_grad)


def elu(features, name=None):
    """Exponential linear unit: ``features`` if > 0, else ``exp(features) - 1``."""
    return make_op("Elu", [_features(features, "Elu")], name=name or "Elu")


# -- Selu ----------------------------------------------------------------------------------------
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _selu_kernel(ctx, x):
    xp = ctx.xp
    return (xp.maximum(x, 0) + _SELU_ALPHA * xp.expm1(xp.minimum(x, 0))) * _SELU_SCALE


def _selu_grad_kernel(ctx, g, y):
    # For y < 0, dy/dx = scale * alpha * exp(x) = y + scale * alpha; at 0, TF1's scale.
    return g * ctx.xp.where(y < 0, y + _SELU_SCALE * _SELU_ALPHA, _SELU_SCALE).astype(g.dtype,
                                                                                       copy=False)


def _selu_grad_grad(op, gg):
    g, y = op.inputs
    return [make_op("SeluGrad", [gg, y]), _relu_grad(gg * g, -y)]


register_op("Selu", shape=same_shape, kernel=_selu_kernel,
            grad=lambda op, g: [make_op("SeluGrad", [g, op.outputs[0]])])
register_op("SeluGrad", shape=same_shape, kernel=_selu_grad_kernel, grad=_selu_grad_grad)


def selu(features, name=None):
    """Scaled exponential linear unit (Klambauer et al. 2017)."""
    return make_op("Selu", [_features(features, "Selu")], name=name or "Selu")


# -- Softplus ------------------------------------------------------------------------------------
def _sigmoid(xp, x):
    """Logistic function without overflow: exp(min(x, 0)) / (1 + exp(-|x|))."""
    return xp.exp(xp.minimum(x, 0)) / (1 + xp.exp(-xp.abs(x)))


def _softplus_grad_grad(op, gg):
    g, x = op.inputs
    s = make_op("SoftplusGrad", [array_ops.ones_like(x), x])  # sigmoid(x)
    return [make_op("SoftplusGrad", [gg, x]), gg * g * s * (1.0 - s)]


register_op("Softplus", shape=same_shape, kernel=lambda ctx, x: ctx.xp.logaddexp(x, 0),
            grad=lambda op, g: [make_op("SoftplusGrad", [g, op.inputs[0]])])
register_op("SoftplusGrad", shape=same_shape, kernel=lambda ctx, g, x: g * _sigmoid(ctx.xp, x),
            grad=_softplus_grad_grad)


def softplus(features, name=None):
    """``log(exp(features) + 1)``, computed without overflow."""
    return make_op("Softplus", [_features(features, "Softplus")], name=name or "Softplus")


# -- Softsign ------------------------------------------------------------------------------------
register_op("Softsign", shape=same_shape, kernel=lambda ctx, x: x / (1 + ctx.xp.abs(x)),
            grad=lambda op, g: [make_op("SoftsignGrad", [g, op.inputs[0]])])


def _softsign_grad_grad(op, gg):
    g, x = op.inputs
    d = 1.0 + math_ops.abs(x)
    return [make_op("SoftsignGrad", [gg, x]), -2.0 * gg * g * math_ops.sign(x) / (d * d * d)]


register_op("SoftsignGrad", shape=same_shape,
            kernel=lambda ctx, g, x: g / ctx.xp.square(1 + ctx.xp.abs(x)), grad=_softsign_grad_grad)


def softsign(features, name=None):
    """``features / (abs(features) + 1)``."""
    return make_op("Softsign", [_features(features, "Softsign")], name=name or "Softsign")


# -- LeakyRelu -----------------------------------------------------------------------------------
def _leaky_relu_kernel(ctx, x, alpha):
    # x if x > 0 else alpha * x, for any alpha.
    return ctx.xp.maximum(x, x * alpha) if alpha <= 1 else ctx.xp.minimum(x, x * alpha)


register_op("LeakyRelu", shape=same_shape, kernel=_leaky_relu_kernel,
            grad=lambda op, g: [make_op("LeakyReluGrad", [g, op.inputs[0]],
                                        alpha=op._attrs["alpha"])])
register_op("LeakyReluGrad", shape=same_shape,
            kernel=lambda ctx, g, x, alpha: ctx.xp.where(x > 0, g, g * alpha),
            grad=lambda op, gg: [make_op("LeakyReluGrad", [gg, op.inputs[1]],
                                         alpha=op._attrs["alpha"]), None])


def leaky_relu(features, alpha=0.2, name=None):
    """``features`` if > 0, else ``alpha * features`` (Maas et al. 2013); ``alpha`` a Python float."""
    x = convert_to_tensor(features)
    if x.dtype.is_integer:
        x = math_ops.cast(x, _dtypes.float32)
    x = _features(x, "LeakyRelu")
    a = alpha if isinstance(alpha, numbers.Real) else constant_value(alpha)
    if a is None or np.ndim(a) != 0:
        raise TypeError("leaky_relu needs alpha as a Python float (or a constant scalar), got %r"
                        % (alpha,))
    return make_op("LeakyRelu", [x], name=name or "LeakyRelu", alpha=float(a))


# -- Softmax, LogSoftmax -------------------------------------------------------------------------
def _softmax_kernel(ctx, x, axis):
    e = x - x.max(axis=axis, keepdims=True)
    ctx.xp.exp(e, out=e)
    e /= e.sum(axis=axis, keepdims=True)
    return e


def _softmax_backprop(g, y, axis):
    """The vector-Jacobian product of softmax at output ``y``: ``(g - sum(g * y)) * y``."""
    return (g - math_ops.reduce_sum(g * y, axis=axis, keepdims=True)) * y


register_op("Softmax", shape=same_shape, kernel=_softmax_kernel,
            grad=lambda op, g: [_softmax_backprop(g, op.outputs[0], op._attrs["axis"])])


def _log_softmax_kernel(ctx, x, axis):
    z = x - x.max(axis=axis, keepdims=True)
    z -= ctx.xp.log(ctx.xp.exp(z).sum(axis=axis, keepdims=True))
    return z


def _log_softmax_grad(op, g):
    axis = op._attrs["axis"]
    sm = make_op("Softmax", [op.inputs[0]], axis=axis)
    return [g - math_ops.reduce_sum(g, axis=axis, keepdims=True) * sm]


register_op("LogSoftmax", shape=same_shape, kernel=_log_softmax_kernel, grad=_log_softmax_grad)


def softmax(logits, axis=None, name=None, dim=None):
    """``exp(logits) / sum(exp(logits), axis)``, computed stably (``dim`` is TF1's old name).

    >>> import zps as tf
    >>> tf.Session().run(tf.nn.softmax([0.0, 0.0])).tolist()
    [0.5, 0.5]
    """
    axis = _deprecated_alias("axis", axis, "dim", dim)
    x = _features(logits, "Softmax", "logits")
    return make_op("Softmax", [x], name=name or "Softmax",
                   axis=_axis_attr(-1 if axis is None else axis, x, "softmax"))


def log_softmax(logits, axis=None, name=None, dim=None):
    """``logits - log(sum(exp(logits), axis))``, computed stably (``dim`` is TF1's old name)."""
    axis = _deprecated_alias("axis", axis, "dim", dim)
    x = _features(logits, "LogSoftmax", "logits")
    return make_op("LogSoftmax", [x], name=name or "LogSoftmax",
                   axis=_axis_attr(-1 if axis is None else axis, x, "log_softmax"))


# -- BiasAdd, BiasAddGrad ------------------------------------------------------------------------
def _channel_axis(data_format, ndims):
    return ndims - 1 if data_format == "NHWC" else 1


def _bias_add_shape(op):
    value, bias = op.inputs[0].get_shape(), op.inputs[1].get_shape()
    if bias.ndims is not None and bias.ndims != 1:
        raise ValueError("Shape must be rank 1 but is rank %d for bias of BiasAdd '%s' with input "
                         "shapes %s, %s" % (bias.ndims, op.name, value, bias))
    if value.ndims is None:
        return unknown_shape()
    if value.ndims < 2:
        raise ValueError("Shape must be at least rank 2 but is rank %d for value of BiasAdd '%s' "
                         "with input shapes %s, %s" % (value.ndims, op.name, value, bias))
    dims = value.as_list()
    c = _channel_axis(op._attrs["data_format"], len(dims))
    b = bias.as_list()[0] if bias.ndims is not None else None
    if dims[c] is not None and b is not None and dims[c] != b:
        raise ValueError("Dimensions must be equal, but are %d and %d for BiasAdd '%s' (%s) with "
                         "input shapes %s, %s" % (dims[c], b, op.name, op._attrs["data_format"],
                                                  value, bias))
    dims[c] = dims[c] if dims[c] is not None else b
    return TensorShape(dims)


def _bias_add_kernel(ctx, value, bias, data_format):
    if data_format == "NCHW":
        bias = bias.reshape((-1,) + (1,) * (value.ndim - 2))
    return value + bias


def _bias_add_grad_kernel(ctx, g, data_format):
    c = _channel_axis(data_format, g.ndim)
    return g.sum(axis=tuple(i for i in range(g.ndim) if i != c))


def _bias_add_grad_shape(op):
    s = op.inputs[0].get_shape()
    if s.ndims is None:
        return unknown_shape(1)
    return TensorShape([s.as_list()[_channel_axis(op._attrs["data_format"], s.ndims)]])


register_op("BiasAdd", shape=_bias_add_shape, kernel=_bias_add_kernel,
            grad=lambda op, g: [g, make_op("BiasAddGrad", [g],
                                           data_format=op._attrs["data_format"])])
# Its gradient broadcasts gg over the channel axis: BiasAdd of zeros does exactly that.
register_op("BiasAddGrad", shape=_bias_add_grad_shape, kernel=_bias_add_grad_kernel,
            grad=lambda op, gg: [make_op("BiasAdd", [array_ops.zeros_like(op.inputs[0]), gg],
                                         data_format=op._attrs["data_format"])])


def bias_add(value, bias, data_format=None, name=None):
    """``value + bias`` with ``bias`` (1-D) added along the channel axis: the last one for "NHWC"
    (the default), axis 1 for "NCHW".

    >>> import zps as tf
    >>> tf.Session().run(tf.nn.bias_add([[1.0, 2.0]], [10.0, 20.0])).tolist()
    [[11.0, 22.0]]
    """
    data_format = data_format or "NHWC"
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("bias_add: data_format must be 'NHWC' or 'NCHW', got %r" % (data_format,))
    v = convert_to_tensor(value)
    try:
        b = _same_dtype(bias, v, "BiasAdd", "bias")
    except TypeError as e:  # TF1 converts bias to value's dtype: a ValueError there
        raise ValueError(str(e)) from None
    return make_op("BiasAdd", [v, b], name=name or "BiasAdd", data_format=data_format)


def xw_plus_b(x, weights, biases, name=None):
    """``matmul(x, weights) + biases`` (a dense layer without activation)."""
    x = convert_to_tensor(x)
    with x.graph.name_scope(name or "xw_plus_b") as scope:
        return bias_add(math_ops.matmul(x, weights), biases, name=scope)


# -- L2Loss --------------------------------------------------------------------------------------
def _l2_loss_kernel(ctx, t):
    flat = t.reshape(-1)
    return ctx.xp.asarray(ctx.xp.dot(flat, flat) / 2, dtype=t.dtype)


register_op("L2Loss", shape=lambda op: TensorShape([]), kernel=_l2_loss_kernel,
            grad=lambda op, g: [g * op.inputs[0]])


def zero_fraction(value, name=None):
    """The fraction of ``value``'s elements that are zero (False for bool), a float32 scalar
    (NaN for an empty ``value``): e.g. the sparsity of a ReLU's activations.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.nn.zero_fraction([[0.0, 1.0], [0.0, 0.0]])))
    0.75
    """
    with get_default_graph().name_scope(name or "zero_fraction"):
        value = convert_to_tensor(value, name="value")
        size = array_ops.size(value, out_type=_dtypes.int64)
        # over the flattened value: a scalar count even when value's rank is unknown
        nonzero = math_ops.count_nonzero(array_ops.reshape(value, [-1]), dtype=_dtypes.int64)
        zeros = size - nonzero
        fraction = math_ops.cast(zeros, _dtypes.float32) / math_ops.cast(size, _dtypes.float32)
        return array_ops.identity(fraction, name="fraction")


def l2_loss(t, name=None):
    """``sum(t ** 2) / 2`` (half the squared L2 norm, without the square root)."""
    return make_op("L2Loss", [_features(t, "L2Loss", "t")], name=name or "L2Loss")


# -- cross entropies -----------------------------------------------------------------------------
def _ensure_xent_args(name, sentinel, labels, logits):
    # TF1 makes these functions keyword-only: positional (logits, labels) calls were a common bug.
    if sentinel is not None:
        raise ValueError("Only call `%s` with named arguments (labels=..., logits=..., ...)" % name)
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided to `%s`." % name)


def _merged_shapes(op, what):
    a, b = op.inputs[0].get_shape(), op.inputs[1].get_shape()
    try:
        return a.merge_with(b)
    except ValueError:
        raise ValueError("logits and labels must have the same shape (%s vs %s) for %s '%s'"
                         % (a, b, what, op.name)) from None


# SigmoidCrossEntropyWithLogits(logits, labels): TF1's stable formula in one kernel.
def _sigmoid_xent_kernel(ctx, x, z):
    xp = ctx.xp
    out = xp.maximum(x, 0) - x * z
    out += xp.log1p(xp.exp(-xp.abs(x)))  # added last, so that tiny losses survive (TF1's order)
    return out


def _sigmoid_xent_grad(op, g):
    x, z = op.inputs
    # d/dx = sigmoid(x) - z, where g * sigmoid(x) is the softplus gradient SoftplusGrad(g, x).
    return [make_op("SoftplusGrad", [g, x]) - g * z, -g * x]


register_op("SigmoidCrossEntropyWithLogits", shape=lambda op: _merged_shapes(op, "sigmoid xent"),
            kernel=_sigmoid_xent_kernel, grad=_sigmoid_xent_grad, broadcast=True)


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """Elementwise logistic loss ``max(x, 0) - x * z + log(1 + exp(-abs(x)))`` of logits ``x`` and
    labels ``z`` (same shape; call with named arguments only).

    >>> import zps as tf
    >>> loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=[1.0], logits=[0.0])
    >>> round(float(tf.Session().run(loss)[0]), 4)
    0.6931
    """
    _ensure_xent_args("sigmoid_cross_entropy_with_logits", _sentinel, labels, logits)
    x = _features(logits, "sigmoid_cross_entropy_with_logits", "logits")
    z = _same_dtype(labels, x, "sigmoid_cross_entropy_with_logits", "labels")
    return make_op("SigmoidCrossEntropyWithLogits", [x, z], name=name or "logistic_loss")


def weighted_cross_entropy_with_logits(labels=None, logits=None, pos_weight=None, name=None,
                                       targets=None):
    """The logistic loss with positive examples weighted by ``pos_weight``:
    ``(1 - z) * x + (1 + (pos_weight - 1) * z) * log(1 + exp(-x))`` (``targets``: TF1's old name).
    """
    labels = _deprecated_alias("labels", labels, "targets", targets)
    if labels is None or logits is None or pos_weight is None:
        raise ValueError("weighted_cross_entropy_with_logits needs labels, logits and pos_weight")
    x = _features(logits, "weighted_cross_entropy_with_logits", "logits")
    with x.graph.name_scope(name or "logistic_loss") as scope:
        z = _same_dtype(labels, x, "weighted_cross_entropy_with_logits", "labels")
        q = _same_dtype(pos_weight, x, "weighted_cross_entropy_with_logits", "pos_weight")
        try:
            z.get_shape().merge_with(x.get_shape())
        except ValueError:
            raise ValueError("logits and labels must have the same shape (%s vs %s)"
                             % (x.get_shape(), z.get_shape())) from None
        log_weight = 1.0 + (q - 1.0) * z
        # log(1 + exp(-x)) written as TF1 writes it, so that the gradient at x = 0 is TF1's too
        # (abs and relu have slope 0 there: the gradient is 1 - z).
        log1p_exp = math_ops.log1p(math_ops.exp(-math_ops.abs(x))) + relu(-x)
        return math_ops.add((1.0 - z) * x, log_weight * log1p_exp, name=scope)


# SoftmaxCrossEntropyWithLogits(logits, labels) -> (loss, backprop): fused as in TF1.
def _softmax_xent_shape(op):
    s = _merged_shapes(op, "softmax_cross_entropy_with_logits")
    if s.ndims is None:
        return [unknown_shape(), s]
    dims = s.as_list()
    return [TensorShape(dims[:op._attrs["axis"]] + dims[op._attrs["axis"] + 1:]), s]


def _softmax_xent_kernel(ctx, logits, labels, axis):
    xp = ctx.xp
    z = logits - logits.max(axis=axis, keepdims=True)
    e = xp.exp(z)
    s = e.sum(axis=axis, keepdims=True)
    # loss = sum(labels * (log(s) - z)); backprop = softmax - labels.
    z -= xp.log(s)
    z *= labels
    loss = -z.sum(axis=axis)
    e /= s
    e -= labels
    return loss, e


def _softmax_xent_grad(op, grad_loss, grad_backprop):
    logits = op.inputs[0]
    axis = op._attrs["axis"]
    g = _with_expanded_axis(grad_loss, logits, axis)
    grad_logits = g * op.outputs[1]
    grad_labels = g * -log_softmax(logits, axis=axis)
    if not _is_zero(grad_backprop):  # a second derivative: backprop = softmax(logits) - labels
        grad_logits += _softmax_backprop(grad_backprop, softmax(logits, axis=axis), axis)
        grad_labels -= grad_backprop
    return [grad_logits, grad_labels]


register_op("SoftmaxCrossEntropyWithLogits", shape=_softmax_xent_shape, kernel=_softmax_xent_kernel,
            grad=_softmax_xent_grad, num_outputs=2)


def _xent_logits(logits, what):
    x = _features(logits, what, "logits")
    if x.get_shape().ndims is None:
        raise ValueError("%s needs logits of known rank; %s has an unknown shape (give its "
                         "placeholder a shape such as [None, num_classes])" % (what, x.name))
    if x.get_shape().ndims == 0:
        raise ValueError("Logits cannot be scalars - received shape %s (%s)." % (x.get_shape(), what))
    return x


def _broadcast_xent_args(x, z):
    """Logits and labels of known, different but broadcastable shapes (TF1's kernel broadcasts
    them: one row of labels for a batch of logits) broadcast to their common shape."""
    xs, zs = x.get_shape(), z.get_shape()
    if not (xs.is_fully_defined() and zs.is_fully_defined()) or xs == zs:
        return x, z
    try:
        common = broadcast_static(xs, zs)
    except ValueError:
        return x, z  # the op's shape rule reports the mismatch
    return tuple(t if t.get_shape() == common else array_ops.broadcast_to(t, common.as_list())
                 for t in (x, z))


def softmax_cross_entropy_with_logits_v2(_sentinel=None, labels=None, logits=None, dim=-1,
                                         name=None, axis=None):
    """``-sum(labels * log_softmax(logits), axis)`` for a probability distribution ``labels`` of
    the same shape; gradients flow into both ``logits`` and ``labels``."""
    _ensure_xent_args("softmax_cross_entropy_with_logits_v2", _sentinel, labels, logits)
    axis = _deprecated_alias("axis", axis, "dim", dim if dim != -1 else None)
    x = _xent_logits(logits, "softmax_cross_entropy_with_logits")
    z = convert_to_tensor(labels) if is_symbolic(labels) else convert_to_tensor(labels, dtype=x.dtype)
    if z.dtype != x.dtype:
        z = math_ops.cast(z, x.dtype)  # TF1 casts the labels to the logits' type
    x, z = _broadcast_xent_args(x, z)
    axis = _axis_attr(-1 if axis is None else axis, x, "softmax_cross_entropy_with_logits")
    return make_op("SoftmaxCrossEntropyWithLogits", [x, z],
                   name=name or "softmax_cross_entropy_with_logits", axis=axis)[0]


_XENT_DEPRECATION_LOGGED = []


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1,
                                      name=None, axis=None):
    """TF1's original softmax cross-entropy: as ``_v2`` but no gradient flows into ``labels``
    (deprecated in TF1 in favour of ``softmax_cross_entropy_with_logits_v2``)."""
    if not _XENT_DEPRECATION_LOGGED:
        _XENT_DEPRECATION_LOGGED.append(True)
        _log.warning("softmax_cross_entropy_with_logits (from zps.nn) is deprecated and will be "
                     "removed in a future version.\nInstructions for updating:\n\nFuture major "
                     "versions of TensorFlow will allow gradients to flow\ninto the labels input on "
                     "backprop by default.\n\nSee `tf.nn.softmax_cross_entropy_with_logits_v2`.\n")
    _ensure_xent_args("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    x = convert_to_tensor(logits)
    with x.graph.name_scope(name or "softmax_cross_entropy_with_logits_sg") as scope:
        labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
        return softmax_cross_entropy_with_logits_v2(labels=labels, logits=x, dim=dim, name=scope,
                                                    axis=axis)


# SparseSoftmaxCrossEntropyWithLogits(logits, labels) -> (loss, backprop)
def _sparse_xent_shape(op):
    logits, labels = op.inputs[0].get_shape(), op.inputs[1].get_shape()
    if logits.ndims is None:
        return [labels, logits]
    loss = logits[:-1]
    if labels.ndims is not None:
        if labels.ndims != logits.ndims - 1:
            raise ValueError("Rank mismatch: Rank of labels (received %d) should equal rank of "
                             "logits minus 1 (received %d) for '%s'." % (labels.ndims, logits.ndims,
                                                                        op.name))
        if not labels.is_compatible_with(loss):
            raise ValueError("Shape mismatch: The shape of labels (received %s) should equal the "
                             "shape of logits except for the last dimension (received %s) for '%s'."
                             % (labels, logits, op.name))
        loss = loss.merge_with(labels)
    return [loss, logits]


def _sparse_xent_kernel(ctx, logits, labels):
    xp = ctx.xp
    classes = logits.shape[-1]
    # The labels are a host input on a GPU too (cupy_kernels.HOST_INPUTS): checked here without
    # a device sync, then copied to the device (on the host, asarray is free).
    flat_labels = labels.reshape(-1)
    if flat_labels.size and (flat_labels.min() < 0 or flat_labels.max() >= classes):
        bad = flat_labels[(flat_labels < 0) | (flat_labels >= classes)][0]
        raise errors.InvalidArgumentError(
            None, None, "Received a label value of %d which is outside the valid range of [0, %d). "
            " Label values: %s" % (bad, classes, " ".join(str(int(v)) for v in flat_labels[:100])))
    flat_labels = xp.asarray(flat_labels)
    z = logits.reshape(-1, classes)
    z = z - z.max(axis=1, keepdims=True)
    e = xp.exp(z)
    s = e.sum(axis=1, keepdims=True)
    rows = xp.arange(flat_labels.size)
    loss = xp.log(s[:, 0]) - z[rows, flat_labels]
    e /= s
    e[rows, flat_labels] -= 1
    return loss.reshape(labels.shape), e.reshape(logits.shape)


def _sparse_xent_grad(op, grad_loss, grad_backprop):
    logits = op.inputs[0]
    axis = logits.get_shape().ndims - 1
    grad = _with_expanded_axis(grad_loss, logits, axis) * op.outputs[1]
    if not _is_zero(grad_backprop):  # a second derivative: backprop = softmax(logits) - onehot
        grad += _softmax_backprop(grad_backprop, softmax(logits), axis)
    return [grad, None]


register_op("SparseSoftmaxCrossEntropyWithLogits", shape=_sparse_xent_shape,
            kernel=_sparse_xent_kernel, grad=_sparse_xent_grad, num_outputs=2)


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                             name=None):
    """``-log_softmax(logits)[..., labels]``: the cross-entropy of logits of shape ``[..., C]``
    against integer class ids ``labels`` of shape ``[...]`` in ``[0, C)`` (checked when run)."""
    _ensure_xent_args("sparse_softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    x = _xent_logits(logits, "sparse_softmax_cross_entropy_with_logits")
    ids = convert_to_tensor(labels)
    if ids.dtype not in (_dtypes.int32, _dtypes.int64):
        raise TypeError("sparse_softmax_cross_entropy_with_logits: labels must be int32 or int64 "
                        "class ids, got %s (%s)" % (ids.dtype.name, ids.name))
    return make_op("SparseSoftmaxCrossEntropyWithLogits", [x, ids],
                   name=name or "SparseSoftmaxCrossEntropyWithLogits")[0]


# -- moments -------------------------------------------------------------------------------------
def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """``(mean, variance)`` of ``x`` over ``axes`` (``shift`` is accepted and unused, as in TF1).

    >>> import zps as tf
    >>> mean, var = tf.nn.moments(tf.constant([1.0, 2.0, 3.0, 4.0]), axes=[0])
    >>> [float(v) for v in tf.Session().run([mean, var])]
    [2.5, 1.25]
    """
    keep = bool(_deprecated_alias("keepdims", keepdims, "keep_dims", keep_dims))
    t = convert_to_tensor(x)
    axes = normalize_axis(const_axis(axes), t.get_shape().ndims, "moments")
    with t.graph.name_scope(name or "moments"):
        y = math_ops.cast(t, _dtypes.float32) if t.dtype == _dtypes.float16 else t
        mean = math_ops.reduce_mean(y, axes, keepdims=keep, name="mean")
        centre = mean if keep else _with_expanded_axis(mean, y, axes)
        # The variance's gradient does not flow through the mean (TF1's stop_gradient).
        variance = math_ops.reduce_mean(math_ops.square(y - array_ops.stop_gradient(centre)), axes,
                                        keepdims=keep, name="variance")
        if t.dtype == _dtypes.float16:
            return math_ops.cast(mean, _dtypes.float16), math_ops.cast(variance, _dtypes.float16)
        return mean, variance


def sufficient_statistics(x, axes, shift=None, keep_dims=None, name=None, keepdims=None):
    """``(count, sum(x - shift), sum((x - shift)^2), shift)`` over ``axes`` (no shift: of ``x``);
    ``count`` (the number of elements reduced, in ``x``'s dtype) is a constant when the shape
    along ``axes`` is known. :func:`normalize_moments` turns them into a mean and variance.

    >>> import zps as tf
    >>> count, m_ss, v_ss, _ = tf.nn.sufficient_statistics(tf.constant([[1.0, 2.0], [3.0, 4.0]]), [0])
    >>> [v.tolist() for v in tf.Session().run([count, m_ss, v_ss])]
    [2.0, [4.0, 6.0], [10.0, 20.0]]
    """
    keep = bool(_deprecated_alias("keepdims", keepdims, "keep_dims", keep_dims))
    x = convert_to_tensor(x)
    axes = list(const_axis(axes)) if isinstance(const_axis(axes), list | tuple) else [axes]
    with x.graph.name_scope(name or "sufficient_statistics"):
        shape = x.get_shape()
        if shape.ndims is not None and all(shape[d].value is not None for d in axes):
            counts = convert_to_tensor(float(np.prod([shape[d].value for d in axes])),
                                       dtype=x.dtype)
        else:   # known when run: the product of the reduced dimensions
            rank = array_ops.rank(x)
            dims = array_ops.gather(math_ops.cast(array_ops.shape(x), x.dtype),
                                    [a + rank if a < 0 else a for a in axes])
            counts = math_ops.reduce_prod(dims, name="count")
        if shift is not None:
            shift = convert_to_tensor(shift, dtype=x.dtype)
            m_ss, v_ss = math_ops.subtract(x, shift), math_ops.squared_difference(x, shift)
        else:
            m_ss, v_ss = x, math_ops.square(x)
        return (counts, math_ops.reduce_sum(m_ss, axes, keepdims=keep, name="mean_ss"),
                math_ops.reduce_sum(v_ss, axes, keepdims=keep, name="var_ss"), shift)


def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    """``(mean, variance)`` from :func:`sufficient_statistics`' count and sums (``shift`` None
    if they were taken without one).

    >>> import zps as tf
    >>> mean, var = tf.nn.normalize_moments(2.0, [4.0, 6.0], [10.0, 20.0], None)
    >>> [v.tolist() for v in tf.Session().run([mean, var])]
    [[2.0, 3.0], [1.0, 1.0]]
    """
    with get_default_graph().name_scope(name or "normalize"):
        divisor = math_ops.reciprocal(counts, name="divisor")
        shifted_mean = math_ops.multiply(mean_ss, divisor,
                                         name="shifted_mean" if shift is not None else "mean")
        mean = math_ops.add(shifted_mean, shift, name="mean") if shift is not None else shifted_mean
        variance = math_ops.subtract(math_ops.multiply(variance_ss, divisor),
                                     math_ops.square(shifted_mean), name="variance")
        return mean, variance


def weighted_moments(x, axes, frequency_weights, name=None, keep_dims=None, keepdims=None):
    """``(mean, variance)`` of ``x`` over ``axes``, each element counted ``frequency_weights``
    times (weights broadcast against ``x``).

    >>> import zps as tf
    >>> mean, var = tf.nn.weighted_moments(tf.constant([1.0, 3.0]), [0], [3.0, 1.0])
    >>> [float(v) for v in tf.Session().run([mean, var])]
    [1.5, 0.75]
    """
    keep = bool(_deprecated_alias("keepdims", keepdims, "keep_dims", keep_dims))
    x = convert_to_tensor(x)
    axes = list(const_axis(axes)) if isinstance(const_axis(axes), list | tuple) else [axes]
    with x.graph.name_scope(name or "weighted_moments"):
        y = math_ops.cast(x, _dtypes.float32) if x.dtype == _dtypes.float16 else x
        weights = math_ops.cast(convert_to_tensor(frequency_weights), y.dtype)
        # keepdims throughout, so the mean broadcasts against x; the weights broadcast to x's
        # shape before they are summed (they need only be broadcast-compatible with it).
        weighted_sum = math_ops.reduce_sum(weights * y, axes, keepdims=True,
                                           name="weighted_input_sum")
        sum_of_weights = math_ops.reduce_sum(weights + array_ops.zeros_like(y), axes,
                                             keepdims=True, name="sum_of_weights")
        divisor = math_ops.reciprocal(sum_of_weights, name="inv_weight_sum")
        mean = math_ops.multiply(weighted_sum, divisor)
        variance = math_ops.multiply(
            math_ops.reduce_sum(weights * math_ops.squared_difference(y, mean), axes,
                                keepdims=True, name="weighted_distsq"), divisor)
        if not keep:
            mean, variance = array_ops.squeeze(mean, axis=axes), array_ops.squeeze(variance,
                                                                                   axis=axes)
        if x.dtype == _dtypes.float16:
            return math_ops.cast(mean, _dtypes.float16), math_ops.cast(variance, _dtypes.float16)
        return mean, variance


# -- dropout -------------------------------------------------------------------------------------
def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """TF1's dropout: each element of ``x`` is kept with probability ``keep_prob`` and scaled by
    ``1 / keep_prob``, else zeroed: ``x / keep_prob * floor(keep_prob + uniform[0, 1))``.

    ``keep_prob`` may be a tensor (e.g. a placeholder fed 1.0 at evaluation); ``rate`` is the
    newer spelling of ``1 - keep_prob``. Only dimensions where ``noise_shape`` equals ``x``'s
    shape draw independent decisions (``noise_shape=[batch, 1]`` drops whole rows).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     y = tf.nn.dropout(tf.ones([1000]), keep_prob=0.5, seed=1)
    ...     v = tf.Session().run(y)
    >>> sorted(set(v.tolist())), bool(0.4 < (v > 0).mean() < 0.6)
    ([0.0, 2.0], True)
    """
    if keep_prob is not None and rate is not None:
        raise ValueError("Cannot specify both 'keep_prob' and 'rate' in dropout (rate = 1 - keep_prob)")
    if keep_prob is None and rate is None:
        raise ValueError("You must provide keep_prob (or rate = 1 - keep_prob) to dropout.")
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise ValueError("x has to be a floating point tensor since it's going to be scaled. Got a "
                         "%s tensor instead (%s)." % (x.dtype.name, x.name))
    if keep_prob is None:
        if isinstance(rate, numbers.Real):
            if not 0 <= rate < 1:
                raise ValueError("rate must be a scalar tensor or a float in the range [0, 1), got %g"
                                 % rate)
            keep_prob = 1.0 - rate
    elif isinstance(keep_prob, numbers.Real) and not 0 < keep_prob <= 1:
        raise ValueError("keep_prob must be a scalar tensor or a float in the range (0, 1], got %g"
                         % keep_prob)
    if isinstance(keep_prob, numbers.Real) and keep_prob == 1:
        return x  # nothing is dropped: no random op at all
    with x.graph.name_scope(name or "dropout"):
        if keep_prob is None:
            keep_prob = math_ops.subtract(1.0, convert_to_tensor(rate, dtype=x.dtype, name="rate"))
        keep = convert_to_tensor(keep_prob, dtype=x.dtype, name="keep_prob")
        if keep.get_shape().ndims not in (None, 0):
            raise ValueError("keep_prob must be a scalar, got shape %s (%s)" % (keep.get_shape(),
                                                                               keep.name))
        known = constant_value(keep)
        if known is not None and known == 1:
            return x
        noise = random_ops.random_uniform(_noise_shape(x, noise_shape), seed=seed, dtype=x.dtype)
        # keep + U[0, 1) is >= 1 (floor 1) with probability keep, else in [keep, 1) (floor 0).
        ret = math_ops.divide(x, keep) * math_ops.floor(keep + noise)
        ret.set_shape(x.get_shape())
        return ret


def _noise_shape(x, noise_shape):
    if noise_shape is None:
        return array_ops.shape(x)
    if isinstance(noise_shape, list | tuple | TensorShape) and x.get_shape().ndims == len(noise_shape):
        # TF1 fills the unknown dims of a static noise_shape from x's static shape.
        dims = noise_shape.as_list() if isinstance(noise_shape, TensorShape) else list(noise_shape)
        return [d if d is not None else x.get_shape().as_list()[i] for i, d in enumerate(dims)]
    return noise_shape


# -- batch normalization -------------------------------------------------------------------------
def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """``scale * (x - mean) / sqrt(variance + variance_epsilon) + offset`` (all broadcasting;
    ``offset`` and ``scale`` may be None), computed as TF1 does: ``x * inv + (offset - mean *
    inv)`` with ``inv = scale * rsqrt(variance + variance_epsilon)``.

    >>> import zps as tf
    >>> y = tf.nn.batch_normalization([1.0, 3.0], 2.0, 1.0, None, None, 0.0)
    >>> tf.Session().run(y).tolist()
    [-1.0, 1.0]
    """
    x = convert_to_tensor(x)
    with x.graph.name_scope(name or "batchnorm"):
        inv = math_ops.rsqrt(convert_to_tensor(variance) + variance_epsilon)
        if scale is not None:
            inv *= scale
        mean = convert_to_tensor(mean)
        shift = offset - mean * inv if offset is not None else -mean * inv
        return x * math_ops.cast(inv, x.dtype) + math_ops.cast(shift, x.dtype)


# FusedBatchNormV3(x, scale, offset, mean, variance) -> (y, batch_mean, batch_variance,
# reserve_space_1, reserve_space_2): the 4-D batch norm of one kernel. Training normalizes with
# the batch's biased variance but reports the unbiased one (TF1's kernel, for the moving
# averages); inference uses ``mean``/``variance`` and passes them through. The reserve outputs
# (the mean used and 1 / sqrt(variance used + epsilon)) serve the gradient.
def _bn_axes(data_format):
    """(channel axis, reduction axes) of a 4-D input."""
    return (3, (0, 1, 2)) if data_format == "NHWC" else (1, (0, 2, 3))


def _fused_batch_norm_shape(op):
    x = op.inputs[0].get_shape()
    if x.ndims not in (None, 4):
        raise _shape_error(op, "Shape must be rank 4 but is rank %d" % x.ndims)
    dims = x.as_list() if x.ndims is not None else [None] * 4
    c = _bn_axes(op._attrs["data_format"])[0]
    # In training the mean and variance inputs are unused (TF1 passes empty ones).
    for t in op.inputs[1:3] if op._attrs["is_training"] else op.inputs[1:]:
        s = t.get_shape()
        if s.ndims is None:
            continue
        if s.ndims != 1:
            raise _shape_error(op, "Shape must be rank 1 but is rank %d" % s.ndims)
        n = s.as_list()[0]
        if dims[c] is not None and n is not None and dims[c] != n:
            raise _shape_error(op, "Dimensions must be equal, but are %d and %d" % (dims[c], n))
        dims[c] = dims[c] if dims[c] is not None else n
    return [TensorShape(dims)] + [TensorShape([dims[c]])] * 4


def _fused_batch_norm_kernel(ctx, x, scale, offset, mean, variance, epsilon, data_format,
                             is_training):
    xp = ctx.xp
    c, axes = _bn_axes(data_format)
    channel = [1, 1, 1, 1]
    channel[c] = -1
    xf = x.astype(scale.dtype, copy=False)   # float16 inputs are normalized in float32
    if is_training:
        mean = xf.mean(axis=axes)
        centred = xf - mean.reshape(channel)
        var = xp.square(centred).mean(axis=axes)
        n = x.size // max(mean.size, 1)
        reported = var * (n / max(n - 1, 1))
    else:
        centred = xf - mean.reshape(channel)
        var = reported = variance
    inv = 1 / xp.sqrt(var + epsilon)
    y = centred * (inv * scale).reshape(channel) + offset.reshape(channel)
    return y.astype(x.dtype, copy=False), mean, reported, mean, inv


def _fused_batch_norm_grad(op, g, _g_mean, _g_variance, g_saved_mean, g_saved_inv):
    # As TF1: only y's gradient flows back (none from batch_mean/batch_variance), and none into
    # the mean and variance inputs of inference. The reserve outputs' gradients (only ever
    # nonzero in a second derivative) flow into x.
    x, scale = op.inputs[0], op.inputs[1]
    mean, inv = op.outputs[3], op.outputs[4]
    data_format = op._attrs["data_format"]
    axes = list(_bn_axes(data_format)[1])

    def channel(v):
        return v if data_format == "NHWC" else array_ops.reshape(v, [-1, 1, 1])

    u = scale.dtype
    g = math_ops.cast(g, u)
    xhat = (math_ops.cast(x, u) - channel(mean)) * channel(inv)
    g_offset = math_ops.reduce_sum(g, axes)
    g_scale = math_ops.reduce_sum(g * xhat, axes)
    if not op._attrs["is_training"]:
        return [math_ops.cast(g * channel(scale * inv), x.dtype), g_scale, g_offset, None, None]
    n = math_ops.cast(array_ops.size(x), u) / math_ops.cast(array_ops.size(mean), u)
    gx = channel(scale * inv) * (g - channel(g_offset / n) - xhat * channel(g_scale / n))
    if not _is_zero(g_saved_mean):
        gx += channel(g_saved_mean / n)
    if not _is_zero(g_saved_inv):   # d inv / dx = -inv^3 (x - mean) / n = -inv^2 xhat / n
        gx -= xhat * channel(g_saved_inv * inv * inv / n)
    return [math_ops.cast(gx, x.dtype), g_scale, g_offset, None, None]


register_op("FusedBatchNormV3", shape=_fused_batch_norm_shape, kernel=_fused_batch_norm_kernel,
            dtype=lambda op: [op.inputs[0].dtype] + [op.inputs[1].dtype] * 4,
            grad=_fused_batch_norm_grad, num_outputs=5)


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001, data_format="NHWC",
                     is_training=True, name=None):
    """Batch normalization of a 4-D ``x`` over all but its channel axis (the last for "NHWC",
    axis 1 for "NCHW") in one op: ``(y, batch_mean, batch_variance)``.

    Training (``is_training=True``) normalizes with the batch's mean and biased variance and
    returns them, the variance Bessel-corrected (``* n / (n - 1)``, as TF1's kernel does);
    inference normalizes with ``mean`` and ``variance`` and returns them. ``scale``, ``offset``,
    ``mean`` and ``variance`` are per-channel vectors: float32 for float16/float32 ``x``, float64
    for float64 ``x`` (which TF1's kernel does not take).

    >>> import numpy as np, zps as tf
    >>> x = np.array([1.0, 3.0], np.float32).reshape(2, 1, 1, 1)
    >>> y, m, v = tf.nn.fused_batch_norm(x, [1.0], [0.0], epsilon=0.0)
    >>> [a.ravel().tolist() for a in tf.Session().run([y, m, v])]
    [[-1.0, 1.0], [2.0], [2.0]]
    """
    if not is_training and (mean is None or variance is None):
        raise ValueError("Both `mean` and `variance` must be a 1D tensor when `is_training` is "
                         "False. Received: `mean` %r and `variance` %r" % (mean, variance))
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("fused_batch_norm: data_format must be 'NHWC' or 'NCHW' (4-D inputs), "
                         "got %r" % (data_format,))
    x = _features(x, "FusedBatchNormV3", "x")
    u = _dtypes.float64 if x.dtype == _dtypes.float64 else _dtypes.float32
    params = []
    for arg, value in [("scale", scale), ("offset", offset), ("mean", mean),
                       ("variance", variance)]:
        t = convert_to_tensor(value if value is not None else [], dtype=None if is_symbolic(value)
                              else u)
        if t.dtype != u:
            raise TypeError("fused_batch_norm: '%s' has dtype %s but a %s x needs %s parameters "
                            "(%s); cast it with tf.cast" % (arg, t.dtype.name, x.dtype.name,
                                                           u.name, t.name))
        params.append(t)
    y, batch_mean, batch_variance = make_op(
        "FusedBatchNormV3", [x] + params, name=name or "FusedBatchNormV3", epsilon=float(epsilon),
        data_format=data_format, is_training=bool(is_training))[:3]
    return y, batch_mean, batch_variance


# -- l2_normalize --------------------------------------------------------------------------------
def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """``x / sqrt(max(sum(x ** 2, axis), epsilon))`` (``dim``: TF1's old name of ``axis``).

    >>> import zps as tf
    >>> tf.Session().run(tf.nn.l2_normalize([3.0, 4.0], 0)).tolist()
    [0.6000000238418579, 0.800000011920929]
    """
    axis = _deprecated_alias("axis", axis, "dim", dim)
    x = convert_to_tensor(x)
    with x.graph.name_scope(name or "l2_normalize") as scope:
        square_sum = math_ops.reduce_sum(math_ops.square(x), axis, keepdims=True)
        x_inv_norm = math_ops.rsqrt(math_ops.maximum(square_sum, epsilon))
        return math_ops.multiply(x, x_inv_norm, name=scope)


# -- TopKV2, InTopKV2 ----------------------------------------------------------------------------
TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


def _top_k_shape(op):
    x, k_shape = op.inputs[0].get_shape(), op.inputs[1].get_shape()
    if k_shape.ndims not in (None, 0):
        raise _shape_error(op, "Input must be scalar but has rank %d" % k_shape.ndims)
    if x.ndims is None:
        return [unknown_shape(), unknown_shape()]
    if x.ndims == 0:
        raise _shape_error(op, "Shape must be at least rank 1 but is rank 0")
    k = constant_value(op.inputs[1])
    if k is not None:
        k = int(k)
        if k < 0:
            raise _shape_error(op, "Dimension size, given by scalar input 1, must be non-negative "
                                   "but is %d" % k)
        last = x.as_list()[-1]
        if last is not None and last < k:
            raise _shape_error(op, "input must have last dimension >= k = %d but is %d" % (k, last))
    out = TensorShape(x.as_list()[:-1] + [k])
    return [out, out]


def _top_k_kernel(ctx, x, k, sorted):  # noqa: A002 - TF1's attr; the output is sorted either way
    xp = ctx.xp
    k, n = int(k), x.shape[-1]
    if k < 0:
        raise errors.InvalidArgumentError(None, None, "Need k >= 0, got %d" % k)
    if n < k:
        raise errors.InvalidArgumentError(
            None, None, "input must have at least k columns. Had %d, needed %d" % (n, k))
    # Descending with ties to the lower index: a stable ascending sort of the reversed rows,
    # read backwards (negating would overflow integers).
    order = xp.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1][..., :k]
    indices = n - 1 - order
    return xp.take_along_axis(x, indices, axis=-1), indices.astype(np.int32)


def _top_k_grad(op, g, _g_indices):
    # TF1's rule: g scattered into the positions the indices name (row r's index i is element
    # r * n + i of the flattened input), zeros elsewhere.
    x, indices = op.inputs[0], op.outputs[1]
    x_shape, i_shape = array_ops.shape(x), array_ops.shape(indices)
    rows = math_ops.reduce_prod(i_shape[:-1])
    offsets = array_ops.expand_dims(array_ops.range(rows) * x_shape[-1], 1)
    flat = array_ops.reshape(array_ops.reshape(indices, array_ops.stack([rows, i_shape[-1]]))
                             + offsets, [-1])
    scattered = array_ops.unsorted_segment_sum(array_ops.reshape(g, [-1]), flat,
                                               array_ops.size(x))
    return [array_ops.reshape(scattered, x_shape), None]


register_op("TopKV2", shape=_top_k_shape, kernel=_top_k_kernel, num_outputs=2,
            dtype=lambda op: [op.inputs[0].dtype, _dtypes.int32], grad=_top_k_grad)


def top_k(input, k=1, sorted=True, name=None):  # noqa: A002 - TF1's argument names
    """The ``k`` largest entries of each last-axis row of ``input`` and their int32 indices, as
    ``(values, indices)``, largest first; equal values come in index order.

    >>> import zps as tf
    >>> values, indices = tf.nn.top_k([[1.0, 3.0, 3.0, 2.0]], k=2)
    >>> [a.tolist() for a in tf.Session().run([values, indices])]
    [[[3.0, 3.0]], [[1, 2]]]
    """
    x = convert_to_tensor(input)
    if not (x.dtype.is_floating or x.dtype.is_integer):
        raise TypeError("Value passed to parameter 'input' of TopKV2 has DataType %s not in list "
                        "of allowed values: float and integer types (%s)" % (x.dtype.name, x.name))
    k = convert_to_tensor(k) if is_symbolic(k) else convert_to_tensor(k, dtype=_dtypes.int32)
    if k.dtype != _dtypes.int32:
        raise TypeError("Value passed to parameter 'k' of TopKV2 has DataType %s not in list of "
                        "allowed values: int32 (%s)" % (k.dtype.name, k.name))
    return TopKV2(*make_op("TopKV2", [x, k], name=name or "TopKV2", sorted=bool(sorted)))


def _in_top_k_shape(op):
    p, t = op.inputs[0].get_shape(), op.inputs[1].get_shape()
    if p.ndims not in (None, 2):
        raise _shape_error(op, "Shape must be rank 2 but is rank %d" % p.ndims)
    if t.ndims not in (None, 1):
        raise _shape_error(op, "Shape must be rank 1 but is rank %d" % t.ndims)
    batch = p[0] if p.ndims is not None else None
    target = t[0] if t.ndims is not None else None
    if batch is None or target is None:
        return TensorShape([batch if batch is not None else target])
    if not batch.is_compatible_with(target):
        raise _shape_error(op, "Dimensions must be equal, but are %d and %d" % (batch.value,
                                                                               target.value))
    return TensorShape([batch.merge_with(target)])


def _in_top_k_kernel(ctx, predictions, targets, k):
    xp = ctx.xp
    classes = predictions.shape[1]
    valid = (targets >= 0) & (targets < classes)
    if not classes:
        return valid
    target_pred = xp.take_along_axis(predictions, xp.where(valid, targets, 0)[:, None], axis=1)
    # TF1: in if fewer than k classes score strictly higher; a row with a non-finite score is out.
    higher = (predictions > target_pred).sum(axis=1)
    return valid & xp.isfinite(predictions).all(axis=1) & (higher < int(k))


register_op("InTopKV2", shape=_in_top_k_shape, kernel=_in_top_k_kernel, grad=None,
            dtype=lambda op: _dtypes.bool)


def in_top_k(predictions, targets, k, name=None):
    """Whether each ``targets[i]`` is among the ``k`` classes of highest ``predictions[i]``
    (bool ``[batch]``): fewer than ``k`` classes score strictly higher, so a tie with the k-th
    counts as in; a row with a non-finite prediction, or an out-of-range target, is False.

    >>> import zps as tf
    >>> tf.Session().run(tf.nn.in_top_k([[0.1, 0.3, 0.3, 0.2]], [2], 1)).tolist()
    [True]
    """
    with get_default_graph().name_scope(name or "in_top_k"):
        p = convert_to_tensor(predictions) if is_symbolic(predictions) else \
            convert_to_tensor(predictions, dtype=_dtypes.float32)
        if p.dtype != _dtypes.float32:
            raise TypeError("Value passed to parameter 'predictions' of InTopKV2 has DataType %s "
                            "not in list of allowed values: float32 (%s)" % (p.dtype.name, p.name))
        t = convert_to_tensor(targets)
        if t.dtype not in (_dtypes.int32, _dtypes.int64):
            raise TypeError("Value passed to parameter 'targets' of InTopKV2 has DataType %s not "
                            "in list of allowed values: int32, int64 (%s)" % (t.dtype.name, t.name))
        k = convert_to_tensor(k, dtype=t.dtype)
        return make_op("InTopKV2", [p, t, k], name="InTopKV2")


# -- LRN -----------------------------------------------------------------------------------------
def _lrn_window_sum(v, depth_radius):
    """Each channel's sum of ``v`` over the channels within ``depth_radius`` of it (last axis)."""
    out = v.copy()
    for k in range(1, min(depth_radius, v.shape[-1] - 1) + 1):
        out[..., k:] += v[..., :-k]
        out[..., :-k] += v[..., k:]
    return out


def _lrn_kernel(ctx, x, depth_radius, bias, alpha, beta):
    return x * (bias + alpha * _lrn_window_sum(x * x, depth_radius)) ** -beta


def _lrn_grad_kernel(ctx, g, x, y, depth_radius, bias, alpha, beta):
    # dy_j/dx_i = [i == j] s_i^-beta - 2 alpha beta x_i y_j / s_j over the window, s the scale.
    s = bias + alpha * _lrn_window_sum(x * x, depth_radius)
    return g * s ** -beta - (2 * alpha * beta) * x * _lrn_window_sum(g * y / s, depth_radius)


def _lrn_attrs(op):
    return {k: op._attrs[k] for k in ("depth_radius", "bias", "alpha", "beta")}


def _lrn_shape(op):
    s = op.inputs[0].get_shape()
    if s.ndims not in (None, 4):
        raise _shape_error(op, "Shape must be rank 4 but is rank %d" % s.ndims)
    return s


register_op("LRN", shape=_lrn_shape, kernel=_lrn_kernel,
            grad=lambda op, g: [make_op("LRNGrad", [g, op.inputs[0], op.outputs[0]],
                                        **_lrn_attrs(op))])
# As in TF1, LRNGrad has no gradient of its own.
register_op("LRNGrad", shape=lambda op: op.inputs[1].get_shape(), kernel=_lrn_grad_kernel)


def local_response_normalization(input, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5,  # noqa: A002
                                 name=None):
    """Local response normalization of a 4-D ``input`` across its last axis (Krizhevsky et al.
    2012): ``input / (bias + alpha * sum(input ** 2 over channels d - depth_radius .. d +
    depth_radius)) ** beta``.

    >>> import numpy as np, zps as tf
    >>> y = tf.nn.lrn(np.full((1, 1, 1, 2), 2.0, np.float32), depth_radius=1, alpha=0.125, beta=1.0)
    >>> tf.Session().run(y).ravel().tolist()
    [1.0, 1.0]
    """
    x = _features(input, "LRN", "input")
    return make_op("LRN", [x], name=name or "LRN", depth_radius=int(depth_radius),
                   bias=float(bias), alpha=float(alpha), beta=float(beta))


lrn = local_response_normalization


sigmoid = math_ops.sigmoid
tanh = math_ops.tanh

__all__ = [
    "relu",
    "crelu",
    "swish",
    "relu_layer",
    "relu6",
    "elu",
    "selu",
    "softplus",
    "softsign",
    "leaky_relu",
    "softmax",
    "log_softmax",
    "bias_add",
    "xw_plus_b",
    "l2_loss",
    "zero_fraction",
    "sigmoid_cross_entropy_with_logits",
    "weighted_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2",
    "sparse_softmax_cross_entropy_with_logits",
    "moments",
    "sufficient_statistics",
    "normalize_moments",
    "weighted_moments",
    "dropout",
    "batch_normalization",
    "fused_batch_norm",
    "l2_normalize",
    "top_k",
    "in_top_k",
    "local_response_normalization",
    "lrn",
    "sigmoid",
    "tanh",
]
