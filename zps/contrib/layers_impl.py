"""TF1's contrib layers, regularizers, initializers and ``optimize_loss`` (``tf.contrib.layers``,
see zps/contrib/layers.py).

The layers are tf.layers' (zps/ops/layers_impl.py) in a variable scope of contrib's name
(``fully_connected``, ``Conv``, ``BatchNorm`` ...), with contrib's defaults (a relu activation,
Xavier weights) and variable names: ``weights`` and ``biases`` for tf.layers' ``kernel`` and
``bias``, each also a model variable (``tf.GraphKeys.MODEL_VARIABLES``), so checkpoints of TF1
programs restore by name. Regularization losses keep TF1's names too
(``fully_connected/kernel/Regularizer/l2_regularizer``) and go to
``tf.GraphKeys.REGULARIZATION_LOSSES``, which ``tf.losses.get_regularization_loss()`` sums.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     x = tf.placeholder(tf.float32, [None, 3])
...     y = tf.contrib.layers.fully_connected(
...         x, 2, weights_regularizer=tf.contrib.layers.l2_regularizer(0.1))
...     print([v.op.name for v in tf.model_variables()], y.op.name)
...     print([t.op.name for t in tf.losses.get_regularization_losses()])
['fully_connected/weights', 'fully_connected/biases'] fully_connected/Relu
['fully_connected/kernel/Regularizer/l2_regularizer']
"""

import functools
import math
import numbers

from zps.contrib.arg_scope import add_arg_scope
from zps.contrib.variables import model_variable
from zps.framework import dtypes
from zps.framework.graph import GraphKeys, IndexedSlices, convert_to_tensor, get_default_graph, is_symbolic
from zps.ops import (
    array_ops,
    clip_ops,
    control_flow_ops,
    conv_ops,
    embedding_ops,
    init_ops,
    layers_impl,
    math_ops,
    nn_ops,
    partition_ops,
    random_ops,
    summary_ops,
    variable_scope,
)
from zps.train import adagrad, adam, ftrl, gradient_descent, momentum, rmsprop
from zps.train import optimizer as optimizer_

# -- initializers ----------------------------------------------------------------------------------
_MODES = ("FAN_IN", "FAN_OUT", "FAN_AVG")


class _VarianceScaling(init_ops.Initializer):
    """contrib's variance scaling: uniform in ``±sqrt(3 * factor / n)``, or a truncated normal
    of stddev ``sqrt(1.3 * factor / n)`` (not core's ``sqrt(factor / n) / 0.8796``)."""

    def __init__(self, factor, mode, uniform, seed, dtype):
        self.factor, self.mode, self.uniform, self.seed, self.dtype = \
            factor, mode, uniform, seed, dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = dtypes.as_dtype(dtype or self.dtype)
        if not dtype.is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")
        full = partition_info.full_shape if partition_info is not None else shape
        fan_in, fan_out = init_ops._compute_fans(init_ops._dims(full, "variance_scaling"))
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[self.mode]
        if self.uniform:
            limit = math.sqrt(3.0 * self.factor / n)
            return random_ops.random_uniform(shape, -limit, limit, dtype, seed=self.seed)
        stddev = math.sqrt(1.3 * self.factor / n)
        return random_ops.truncated_normal(shape, 0.0, stddev, dtype, seed=self.seed)

    def get_config(self):
        return {"factor": self.factor, "mode": self.mode, "uniform": self.uniform,
                "seed": self.seed, "dtype": self.dtype.name}


def variance_scaling_initializer(factor=2.0, mode="FAN_IN", uniform=False, seed=None,
                                 dtype=dtypes.float32):
    """Random weights of variance ``factor / n``, n the fan in, the fan out or their average
    (``mode`` "FAN_IN", "FAN_OUT", "FAN_AVG"); the default is He et al.'s initialization."""
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError("Cannot create initializer for non-floating point type.")
    if mode not in _MODES:
        raise TypeError("Unknown mode %s [%s]" % (mode, ", ".join(_MODES)))
    return _VarianceScaling(factor, mode, uniform, seed, dtype)


def xavier_initializer(uniform=True, seed=None, dtype=dtypes.float32):
    """Glorot and Bengio's initialization: ``variance_scaling_initializer(1.0, "FAN_AVG",
    uniform)``."""
    return variance_scaling_initializer(1.0, "FAN_AVG", uniform, seed, dtype)


xavier_initializer_conv2d = xavier_initializer
_XAVIER = xavier_initializer()   # contrib's default weights initializer
_ZEROS = init_ops.zeros_initializer()


# -- regularizers ----------------------------------------------------------------------------------
def _checked_scale(scale, what="scale"):
    """False when ``scale`` is 0 (the regularizer is disabled), True otherwise."""
    if isinstance(scale, numbers.Integral):
        raise ValueError("%s cannot be an integer: %s" % (what, scale))
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError("Setting a scale less than 0 on a regularizer: %g" % scale)
        return scale != 0.0
    return True


def _scaled_regularizer(default_name, penalty, scale, scope):
    if not _checked_scale(scale):
        return lambda _: None

    def regularizer(weights):
        with get_default_graph().name_scope(scope or default_name) as name:
            my_scale = convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
            return math_ops.multiply(my_scale, penalty(weights), name=name)
    return regularizer


def l1_regularizer(scale, scope=None):
    """A regularizer ``weights -> scale * sum(|weights|)``; a scale of 0 disables it.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     loss = tf.contrib.layers.l1_regularizer(0.5)(tf.constant([1.0, -2.0]))
    ...     print(tf.Session().run(loss))
    1.5
    """
    return _scaled_regularizer(
        "l1_regularizer", lambda w: math_ops.reduce_sum(math_ops.abs(w)), scale, scope)


def l2_regularizer(scale, scope=None):
    """A regularizer ``weights -> scale * sum(weights ** 2) / 2`` (``tf.nn.l2_loss``); a scale of
    0 disables it."""
    return _scaled_regularizer("l2_regularizer", nn_ops.l2_loss, scale, scope)


def l1_l2_regularizer(scale_l1=1.0, scale_l2=1.0, scope=None):
    """The sum of an l1 and an l2 regularizer."""
    _checked_scale(scale_l1, "scale_l1")
    _checked_scale(scale_l2, "scale_l2")
    scope = scope or "l1_l2_regularizer"
    if scale_l1 == 0.0:
        return l2_regularizer(scale_l2, scope)
    if scale_l2 == 0.0:
        return l1_regularizer(scale_l1, scope)
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)], scope=scope)


def sum_regularizer(regularizer_list, scope=None):
    """A regularizer adding up the penalties of ``regularizer_list`` (None entries skipped)."""
    regularizer_list = [r for r in regularizer_list if r is not None]
    if not regularizer_list:
        return None

    def sum_reg(weights):
        with get_default_graph().name_scope(scope or "sum_regularizer") as name:
            penalties = [p for p in (r(weights) for r in regularizer_list) if p is not None]
            return math_ops.add_n(penalties, name=name) if penalties else None
    return sum_reg


def apply_regularization(regularizer, weights_list=None):
    """The sum of ``regularizer`` over ``weights_list`` (default: the ``tf.GraphKeys.WEIGHTS``
    collection), also added to ``tf.GraphKeys.REGULARIZATION_LOSSES``."""
    graph = get_default_graph()
    weights_list = weights_list or graph.get_collection("weights")
    if not weights_list:
        raise ValueError("No weights to regularize.")
    with graph.name_scope("get_regularization_penalty") as scope:
        penalties = [regularizer(w) for w in weights_list]
        penalties = [p if p is not None else convert_to_tensor(0.0) for p in penalties]
        for p in penalties:
            if p.get_shape().ndims != 0:
                raise ValueError("regularizer must return a scalar Tensor instead of a Tensor "
                                 "with rank %d." % p.get_shape().ndims)
        summed = math_ops.add_n(penalties, name=scope)
    graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, summed)
    return summed


# -- how contrib's layers name, collect and regularize their variables ----------------------------
def _model_variable_getter(renames=None):
    """A custom getter making each variable a model variable named as contrib names it
    (``renames``: tf.layers' name -> contrib's). Regularizers run under tf.layers' name, as in
    TF1 (whose Layer regularizes a variable by its own name: ``<scope>/kernel/Regularizer/``),
    and only for a variable just created."""
    renames = renames or {}

    def getter(getter, name, *args, regularizer=None, collections=None, **kwargs):
        scope, _, short = name.rpartition("/")
        collections = list(collections or [GraphKeys.GLOBAL_VARIABLES])
        if GraphKeys.MODEL_VARIABLES not in collections:
            collections.append(GraphKeys.MODEL_VARIABLES)
        graph = get_default_graph()
        count = len(graph.get_collection(GraphKeys.MODEL_VARIABLES))
        var = getter("%s/%s" % (scope, renames.get(short, short)) if scope else
                     renames.get(short, short), *args, collections=collections, **kwargs)
        if regularizer is not None and len(graph.get_collection(GraphKeys.MODEL_VARIABLES)) > count:
            variable_scope.add_regularization_loss(var, regularizer, name)
        return var
    return getter


def _add_to_collections(variable, variables_collections, name):
    """TF1's ``variables_collections``: a list of collection names, or a dict by variable kind."""
    if variable is None:
        return
    if isinstance(variables_collections, dict):
        variables_collections = variables_collections.get(name)
    graph = get_default_graph()
    for collection in variables_collections or []:
        if variable not in graph.get_collection(collection):
            graph.add_to_collection(collection, variable)


def _collect_named_outputs(collections, alias, outputs):
    if collections:
        get_default_graph().add_to_collections(collections, outputs)
    return outputs


def _variable(scope, name):
    """The variable ``<scope>/<name>`` made in ``scope``, or None."""
    full = scope.name + "/" + name
    return next((v for v in get_default_graph().get_collection(GraphKeys.MODEL_VARIABLES)
                 if v.op.name == full), None)


_WEIGHTS_AND_BIASES = {"kernel": "weights", "bias": "biases"}   # tf.layers' name -> contrib's


def _weights_layer(build, default_scope, inputs, activation_fn, normalizer_fn, normalizer_params,
                   biases_initializer, reuse, variables_collections, outputs_collections,
                   scope, renames=None):
    """A weights layer of contrib: ``build(inputs, use_bias, scope)`` (tf.layers' dense or conv2d
    in ``scope``), then the normalizer and the activation. ``renames``: tf.layers' variable
    names -> contrib's (each goes to ``variables_collections``' "weights", or "biases")."""
    renames = renames or _WEIGHTS_AND_BIASES
    getter = _model_variable_getter(renames)
    with variable_scope.variable_scope(scope, default_scope, [inputs], reuse=reuse,
                                       custom_getter=getter) as sc:
        inputs = convert_to_tensor(inputs)
        outputs = build(inputs, not normalizer_fn and biases_initializer is not None, sc)
        for name in renames.values():
            _add_to_collections(_variable(sc, name), variables_collections,
                                "biases" if name == "biases" else "weights")
        if normalizer_fn is not None:
            outputs = normalizer_fn(outputs, **(normalizer_params or {}))
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect_named_outputs(outputs_collections, sc.name, outputs)


# -- layers ----------------------------------------------------------------------------------------
@add_arg_scope
def fully_connected(inputs, num_outputs, activation_fn=nn_ops.relu, normalizer_fn=None,
                    normalizer_params=None, weights_initializer=_XAVIER,
                    weights_regularizer=None,
                    biases_initializer=_ZEROS, biases_regularizer=None,
                    reuse=None, variables_collections=None, outputs_collections=None,
                    trainable=True, scope=None):
    """``activation_fn(normalizer_fn(inputs @ weights + biases))`` (no biases with a
    normalizer), the variables ``<scope>/weights`` and ``<scope>/biases``, the scope
    ``fully_connected`` by default."""
    if not isinstance(num_outputs, int) or isinstance(num_outputs, bool):
        raise ValueError("num_outputs should be int or long, got %s." % (num_outputs,))

    def build(inputs, use_bias, sc):
        return layers_impl.dense(
            inputs, num_outputs, use_bias=use_bias, kernel_initializer=weights_initializer,
            bias_initializer=biases_initializer, kernel_regularizer=weights_regularizer,
            bias_regularizer=biases_regularizer, trainable=trainable, name=sc, reuse=reuse)
    return _weights_layer(build, "fully_connected", inputs, activation_fn, normalizer_fn,
                          normalizer_params, biases_initializer, reuse, variables_collections,
                          outputs_collections, scope)


def _channels_last(data_format, what):
    if data_format not in (None, "NHWC"):
        raise ValueError("%s: zps supports data_format 'NHWC' (channels last) only, got %r"
                         % (what, data_format))


@add_arg_scope
def convolution2d(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None,
                  rate=1, activation_fn=nn_ops.relu, normalizer_fn=None, normalizer_params=None,
                  weights_initializer=_XAVIER, weights_regularizer=None,
                  biases_initializer=_ZEROS, biases_regularizer=None,
                  reuse=None, variables_collections=None, outputs_collections=None,
                  trainable=True, scope=None):
    """A 2-D convolution of NHWC ``inputs`` (``rate``: dilation), then the normalizer and the
    activation; the variables ``<scope>/weights`` and ``<scope>/biases``, the scope ``Conv`` by
    default."""
    _channels_last(data_format, "conv2d")
    ndims = convert_to_tensor(inputs).get_shape().ndims
    if ndims is not None and ndims != 4:
        raise ValueError("Convolution expects input with rank 4, got %d" % ndims)

    def build(inputs, use_bias, sc):
        return layers_impl.conv2d(
            inputs, num_outputs, kernel_size, strides=stride, padding=padding,
            dilation_rate=rate, use_bias=use_bias, kernel_initializer=weights_initializer,
            bias_initializer=biases_initializer, kernel_regularizer=weights_regularizer,
            bias_regularizer=biases_regularizer, trainable=trainable, name=sc, reuse=reuse)
    return _weights_layer(build, "Conv", inputs, activation_fn, normalizer_fn, normalizer_params,
                          biases_initializer, reuse, variables_collections, outputs_collections,
                          scope)


conv2d = convolution2d


def _pool(pool, default_scope, inputs, kernel_size, stride, padding, data_format,
          outputs_collections, scope):
    _channels_last(data_format, default_scope)
    with get_default_graph().name_scope(scope or default_scope) as sc:
        outputs = pool(convert_to_tensor(inputs), kernel_size, stride, padding, name=sc)
        return _collect_named_outputs(outputs_collections, sc, outputs)


@add_arg_scope
def max_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):
    """2-D max pooling of NHWC ``inputs`` (name scope ``MaxPool2D``)."""
    return _pool(layers_impl.max_pooling2d, "MaxPool2D", inputs, kernel_size, stride, padding,
                 data_format, outputs_collections, scope)


@add_arg_scope
def avg_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):
    """2-D average pooling of NHWC ``inputs`` (name scope ``AvgPool2D``)."""
    return _pool(layers_impl.average_pooling2d, "AvgPool2D", inputs, kernel_size, stride,
                 padding, data_format, outputs_collections, scope)


@add_arg_scope
def flatten(inputs, outputs_collections=None, scope=None):
    """``inputs`` as ``[batch, everything else]`` (name scope ``Flatten``)."""
    with get_default_graph().name_scope(scope or "Flatten") as sc:
        outputs = layers_impl.flatten(inputs, name=sc)
        return _collect_named_outputs(outputs_collections, sc, outputs)


@add_arg_scope
def dropout(inputs, keep_prob=0.5, noise_shape=None, is_training=True, outputs_collections=None,
            scope=None, seed=None):
    """Units kept with probability ``keep_prob`` (and scaled by ``1 / keep_prob``) when
    ``is_training`` (a Python bool or a bool tensor); ``inputs`` unchanged otherwise."""
    with variable_scope.variable_scope(scope, "Dropout", [inputs]) as sc:
        outputs = layers_impl.dropout(inputs, rate=1 - keep_prob, noise_shape=noise_shape,
                                      seed=seed, training=is_training,
                                      name=sc.original_name_scope)
        return _collect_named_outputs(outputs_collections, sc.name, outputs)


@add_arg_scope
def batch_norm(inputs, decay=0.999, center=True, scale=False, epsilon=0.001, activation_fn=None,
               param_initializers=None, param_regularizers=None,
               updates_collections=GraphKeys.UPDATE_OPS, is_training=True, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True,
               batch_weights=None, fused=None, data_format="NHWC",
               zero_debias_moving_mean=False, scope=None, renorm=False, renorm_clipping=None,
               renorm_decay=0.99, adjustment=None):
    """Batch normalization (tf.layers' BatchNormalization, with contrib's defaults: no ``gamma``
    unless ``scale``, ``decay`` 0.999) over all axes but the channels (last for NHWC, 1 for NCHW).

    The variables are ``<scope>/beta``, ``<scope>/gamma``, ``<scope>/moving_mean`` and
    ``<scope>/moving_variance``, the scope ``BatchNorm`` by default. In training the moving
    statistics' update ops go to ``updates_collections``; with None they run with the outputs.
    As TF1 (its fused kernel), 2-D inputs are normalized as ``[batch, 1, 1, channels]`` unless
    ``fused=False``: the variance feeding ``moving_variance`` is then Bessel-corrected.
    """
    for what, value in [("batch_weights", batch_weights), ("zero_debias_moving_mean",
                                                            zero_debias_moving_mean)]:
        if value:
            raise NotImplementedError("batch_norm: zps does not implement %s (got %r); leave it "
                                      "at its default" % (what, value))
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    inputs = convert_to_tensor(inputs)
    shape = inputs.get_shape()
    if shape.ndims is None:
        raise ValueError("Inputs %s has undefined rank." % inputs.name)
    initializers = dict(param_initializers or {})
    regularizers = dict(param_regularizers or {})
    with variable_scope.variable_scope(scope, "BatchNorm", [inputs], reuse=reuse,
                                       custom_getter=_model_variable_getter()) as sc:
        axis = 1 if data_format == "NCHW" else -1
        as_4d = shape.ndims == 2 and fused is not False and not renorm and adjustment is None
        if as_4d:   # TF1's _fused_batch_norm: the fused kernel on [batch, 1, 1, channels]
            channels = shape[-1].value
            if channels is None:
                raise ValueError("`C` dimension must be known but is None")
            x = array_ops.reshape(inputs, [-1, channels, 1, 1] if axis == 1 else
                                  [-1, 1, 1, channels])
        else:
            x = inputs
        layer = layers_impl.BatchNormalization(
            axis=axis, momentum=decay, epsilon=epsilon, center=center, scale=scale,
            beta_initializer=initializers.get("beta", init_ops.zeros_initializer()),
            gamma_initializer=initializers.get("gamma", init_ops.ones_initializer()),
            moving_mean_initializer=initializers.get("moving_mean", init_ops.zeros_initializer()),
            moving_variance_initializer=initializers.get("moving_variance",
                                                         init_ops.ones_initializer()),
            beta_regularizer=regularizers.get("beta"), gamma_regularizer=regularizers.get("gamma"),
            renorm=renorm, renorm_clipping=renorm_clipping, renorm_momentum=renorm_decay,
            fused=True if as_4d else fused, trainable=trainable, adjustment=adjustment, name=sc,
            _scope=sc, _reuse=reuse)
        outputs = layer.apply(x, training=is_training)
        if as_4d:
            outputs = array_ops.reshape(outputs, array_ops.shape(inputs))
            outputs.set_shape(shape)
        outputs = _route_updates(layer.updates, updates_collections, outputs)
        for kind in ("moving_mean", "moving_variance", "beta", "gamma"):
            _add_to_collections(getattr(layer, kind), variables_collections, kind)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect_named_outputs(outputs_collections, sc.name, outputs)


def _data_format(data_format):
    """'channels_first' / 'channels_last' for TF1's 'NCHW' / 'NHWC'."""
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    return "channels_first" if data_format == "NCHW" else "channels_last"


@add_arg_scope
def convolution2d_transpose(inputs, num_outputs, kernel_size, stride=1, padding="SAME",
                            data_format="NHWC", activation_fn=nn_ops.relu, normalizer_fn=None,
                            normalizer_params=None, weights_initializer=_XAVIER,
                            weights_regularizer=None, biases_initializer=_ZEROS,
                            biases_regularizer=None, reuse=None, variables_collections=None,
                            outputs_collections=None, trainable=True, scope=None):
    """A 2-D transposed convolution (tf.layers' conv2d_transpose), then the normalizer and the
    activation; the variables ``<scope>/weights`` (``[h, w, num_outputs, in]``) and
    ``<scope>/biases``, the scope ``Conv2d_transpose`` by default."""
    df = _data_format(data_format)

    def build(inputs, use_bias, sc):
        return layers_impl.conv2d_transpose(
            inputs, num_outputs, kernel_size, strides=stride, padding=padding, data_format=df,
            use_bias=use_bias, kernel_initializer=weights_initializer,
            bias_initializer=biases_initializer, kernel_regularizer=weights_regularizer,
            bias_regularizer=biases_regularizer, trainable=trainable, name=sc, reuse=reuse)
    return _weights_layer(build, "Conv2d_transpose", inputs, activation_fn, normalizer_fn,
                          normalizer_params, biases_initializer, reuse, variables_collections,
                          outputs_collections, scope)


conv2d_transpose = convolution2d_transpose


def _pair(value, what):
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2:
        raise ValueError("%s must be an int or a list of 2 ints, got %r" % (what, value))
    return pair


@add_arg_scope
def separable_convolution2d(inputs, num_outputs, kernel_size, depth_multiplier=1, stride=1,
                            padding="SAME", data_format="NHWC", rate=1, activation_fn=nn_ops.relu,
                            normalizer_fn=None, normalizer_params=None,
                            weights_initializer=_XAVIER, pointwise_initializer=None,
                            weights_regularizer=None, biases_initializer=_ZEROS,
                            biases_regularizer=None, reuse=None, variables_collections=None,
                            outputs_collections=None, trainable=True, scope=None):
    """A depthwise convolution (variable ``depthwise_weights``) and, when ``num_outputs`` is not
    None, a pointwise one mixing the channels (``pointwise_weights``); then the biases, the
    normalizer and the activation. The scope is ``SeparableConv2d`` by default."""
    df = _data_format(data_format)
    pointwise_initializer = pointwise_initializer or weights_initializer

    def build(inputs, use_bias, sc):
        if num_outputs is not None:
            return layers_impl.separable_conv2d(
                inputs, num_outputs, kernel_size, strides=stride, padding=padding,
                data_format=df, dilation_rate=_pair(rate, "rate"),
                depth_multiplier=depth_multiplier, use_bias=use_bias,
                depthwise_initializer=weights_initializer,
                pointwise_initializer=pointwise_initializer, bias_initializer=biases_initializer,
                depthwise_regularizer=weights_regularizer,
                pointwise_regularizer=weights_regularizer, bias_regularizer=biases_regularizer,
                trainable=trainable, name=sc, reuse=reuse)
        channels_axis = 1 if df == "channels_first" else -1
        channels = inputs.get_shape().with_rank(4)[channels_axis].value
        if channels is None:
            raise ValueError("separable_conv2d: the channels of inputs must be known, got "
                             "shape %s" % inputs.get_shape())
        kernel_h, kernel_w = _pair(kernel_size, "kernel_size")
        stride_h, stride_w = _pair(stride, "stride")
        weights = variable_scope.get_variable(
            "depthwise_kernel", [kernel_h, kernel_w, channels, depth_multiplier],
            dtype=inputs.dtype.base_dtype, initializer=weights_initializer,
            regularizer=weights_regularizer, trainable=trainable)
        outputs = conv_ops.depthwise_conv2d(
            inputs, weights, [1, 1, stride_h, stride_w] if df == "channels_first"
            else [1, stride_h, stride_w, 1], padding, rate=_pair(rate, "rate"),
            data_format=data_format)
        if use_bias:
            biases = variable_scope.get_variable(
                "bias", [channels * depth_multiplier], dtype=inputs.dtype.base_dtype,
                initializer=biases_initializer, regularizer=biases_regularizer,
                trainable=trainable)
            outputs = nn_ops.bias_add(outputs, biases, data_format=data_format)
        return outputs
    return _weights_layer(build, "SeparableConv2d", inputs, activation_fn, normalizer_fn,
                          normalizer_params, biases_initializer, reuse, variables_collections,
                          outputs_collections, scope,
                          renames={"depthwise_kernel": "depthwise_weights",
                                   "pointwise_kernel": "pointwise_weights", "bias": "biases"})


separable_conv2d = separable_convolution2d


@add_arg_scope
def bias_add(inputs, activation_fn=None, initializer=_ZEROS, regularizer=None, reuse=None,
             variables_collections=None, outputs_collections=None, trainable=True,
             data_format="NHWC", scope=None):
    """``inputs`` plus the model variable ``<scope>/biases`` (one per channel: the last axis, or
    axis 1 for NCHW), then ``activation_fn``; the scope ``BiasAdd`` by default."""
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    with variable_scope.variable_scope(scope, "BiasAdd", [inputs], reuse=reuse) as sc:
        inputs = convert_to_tensor(inputs)
        shape = inputs.get_shape()
        if shape.ndims is None:
            raise ValueError("Dims of shape must be known but is None")
        if shape.ndims != 4 and data_format == "NCHW":
            raise ValueError("Data format NCHW only supports 4D Tensor")
        channels = shape[1 if data_format == "NCHW" else -1].value
        if channels is None:
            raise ValueError("`C` dimension must be known but is None")
        biases = model_variable("biases", shape=[channels], dtype=inputs.dtype.base_dtype,
                                initializer=initializer, regularizer=regularizer,
                                collections=_collections_of(variables_collections, "biases"),
                                trainable=trainable)
        outputs = nn_ops.bias_add(inputs, biases, data_format=data_format)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect_named_outputs(outputs_collections, sc.name, outputs)


def _collections_of(variables_collections, name):
    """TF1's get_variable_collections: a dict picks by variable kind."""
    if isinstance(variables_collections, dict):
        return variables_collections.get(name)
    return variables_collections


@add_arg_scope
def layer_norm(inputs, center=True, scale=True, activation_fn=None, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True,
               begin_norm_axis=1, begin_params_axis=-1, scope=None):
    """Layer normalization: ``inputs`` normalized over the axes ``begin_norm_axis..`` (mean 0,
    variance 1, epsilon 1e-12), then ``* gamma + beta`` (model variables of the shape of the axes
    ``begin_params_axis..``); the scope ``LayerNorm`` by default."""
    with variable_scope.variable_scope(scope, "LayerNorm", [inputs], reuse=reuse) as sc:
        inputs = convert_to_tensor(inputs)
        shape = inputs.get_shape()
        rank = shape.ndims
        if rank is None:
            raise ValueError("Inputs %s has undefined rank." % inputs.name)
        if begin_norm_axis < 0:
            begin_norm_axis += rank
        if begin_params_axis >= rank or begin_norm_axis >= rank:
            raise ValueError("begin_params_axis (%d) and begin_norm_axis (%d) must be < "
                             "rank(inputs) (%d)" % (begin_params_axis, begin_norm_axis, rank))
        params_shape = shape[begin_params_axis:]
        if not params_shape.is_fully_defined():
            raise ValueError("Inputs %s: shape(inputs)[%s:] is not fully defined: %s"
                             % (inputs.name, begin_params_axis, shape))
        dtype = inputs.dtype.base_dtype
        beta = gamma = None
        if center:
            beta = model_variable("beta", shape=params_shape, dtype=dtype,
                                  initializer=init_ops.zeros_initializer(),
                                  collections=_collections_of(variables_collections, "beta"),
                                  trainable=trainable)
        if scale:
            gamma = model_variable("gamma", shape=params_shape, dtype=dtype,
                                   initializer=init_ops.ones_initializer(),
                                   collections=_collections_of(variables_collections, "gamma"),
                                   trainable=trainable)
        mean, variance = nn_ops.moments(inputs, list(range(begin_norm_axis, rank)),
                                        keep_dims=True)
        outputs = nn_ops.batch_normalization(inputs, mean, variance, offset=beta, scale=gamma,
                                             variance_epsilon=1e-12 if dtype != dtypes.float16
                                             else 1e-3)
        outputs.set_shape(shape)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect_named_outputs(outputs_collections, sc.name, outputs)


def softmax(logits, scope=None):
    """Softmax over the last axis of N-D ``logits`` (N > 1; the last dimension known)."""
    with variable_scope.variable_scope(scope, "softmax", [logits]):
        logits = convert_to_tensor(logits)
        shape = logits.get_shape()
        if shape.ndims is not None and shape.ndims < 2:
            raise ValueError("softmax: logits must have rank >= 2, got shape %s" % shape)
        classes = shape[-1].value if shape.ndims is not None else None
        if classes is None:
            raise ValueError("softmax: the last dimension of logits must be known, got shape %s"
                             % shape)
        predictions = array_ops.reshape(nn_ops.softmax(array_ops.reshape(logits, [-1, classes])),
                                        array_ops.shape(logits))
        predictions.set_shape(shape)
        return predictions


def unit_norm(inputs, dim, epsilon=1e-7, scope=None):
    """``inputs / sqrt(epsilon + sum(inputs**2, dim))`` along the axis ``dim`` (0 <= dim <
    rank)."""
    with variable_scope.variable_scope(scope, "UnitNorm", [inputs]):
        inputs = convert_to_tensor(inputs)
        rank = inputs.get_shape().ndims
        if rank is None:
            raise ValueError("The input rank must be known.")
        if dim < 0 or dim >= rank:
            raise ValueError("dim must be positive but smaller than the input rank.")
        lengths = math_ops.sqrt(epsilon + math_ops.reduce_sum(math_ops.square(inputs), dim,
                                                              keepdims=True))
        return math_ops.div(inputs, lengths)


def _route_updates(updates, updates_collections, outputs):
    """The moving-statistics updates of a batch_norm (which tf.layers put in UPDATE_OPS) moved to
    ``updates_collections``, or, when it is None, run with ``outputs``."""
    if not updates or updates_collections == GraphKeys.UPDATE_OPS:
        return outputs
    graph = get_default_graph()
    pending = graph.get_collection_ref(GraphKeys.UPDATE_OPS)
    pending[:] = [op for op in pending if op not in updates]
    if updates_collections is None:
        return control_flow_ops.with_dependencies(updates, outputs)
    names = [updates_collections] if isinstance(updates_collections, str) else updates_collections
    for update in updates:
        graph.add_to_collections(names, update)
    return outputs


@add_arg_scope
def one_hot_encoding(labels, num_classes, on_value=1.0, off_value=0.0, outputs_collections=None,
                     scope=None):
    """``labels`` as one-hot vectors of ``num_classes`` (name scope ``OneHotEncoding``)."""
    with get_default_graph().name_scope(scope or "OneHotEncoding") as sc:
        labels = convert_to_tensor(labels)
        if labels.dtype == dtypes.int32:
            labels = math_ops.cast(labels, dtypes.int64)
        outputs = array_ops.one_hot(labels, num_classes, on_value=on_value, off_value=off_value)
        return _collect_named_outputs(outputs_collections, sc, outputs)


@add_arg_scope
def embed_sequence(ids, vocab_size=None, embed_dim=None, unique=False, initializer=None,
                   regularizer=None, trainable=True, scope=None, reuse=None):
    """The rows of the ``[vocab_size, embed_dim]`` model variable ``<scope>/embeddings`` (scope
    ``EmbedSequence`` by default) picked by ``ids``: ``[batch, length] -> [batch, length,
    embed_dim]``; with ``unique``, each distinct id is looked up once."""
    if not (reuse or (vocab_size and embed_dim)):
        raise ValueError("Must specify vocab size and embedding dimension when not reusing. Got "
                         "vocab_size=%s and embed_dim=%s" % (vocab_size, embed_dim))
    with variable_scope.variable_scope(scope, "EmbedSequence", [ids], reuse=reuse,
                                       custom_getter=_model_variable_getter()):
        shape = None if vocab_size is None or embed_dim is None else [vocab_size, embed_dim]
        embeddings = variable_scope.get_variable("embeddings", shape=shape,
                                                 initializer=initializer,
                                                 regularizer=regularizer, trainable=trainable)
        if unique:
            return _embedding_lookup_unique(embeddings, ids)
        return embedding_ops.embedding_lookup(embeddings, ids)


def _embedding_lookup_unique(params, ids):
    """``embedding_lookup(params, ids)``, reading each distinct id's row once (TF1 contrib's
    embedding_lookup_unique)."""
    ids = convert_to_tensor(ids)
    shape = array_ops.shape(ids)
    unique_ids, idx = partition_ops.unique(array_ops.reshape(ids, [-1]))
    rows = embedding_ops.embedding_lookup(params, unique_ids)
    embeds = array_ops.reshape(array_ops.gather(rows, idx),
                               array_ops.concat([shape, array_ops.shape(rows)[1:]], 0))
    embeds.set_shape(ids.get_shape().concatenate(rows.get_shape()[1:]))
    return embeds


def _layer_name(layer, default):
    if hasattr(layer, "__name__"):
        return layer.__name__
    if isinstance(layer, functools.partial):
        return layer.func.__name__
    return default


def repeat(inputs, repetitions, layer, *args, **kwargs):
    """``layer`` applied ``repetitions`` times, each in its own scope (``Repeat/<layer>_1``,
    ``Repeat/<layer>_2`` ...)."""
    scope = kwargs.pop("scope", None)
    with variable_scope.variable_scope(scope, "Repeat", [inputs]):
        outputs = convert_to_tensor(inputs)
        scope = scope or _layer_name(layer, "repeat")
        for i in range(repetitions):
            kwargs["scope"] = "%s_%d" % (scope, i + 1)
            outputs = layer(outputs, *args, **kwargs)
        return outputs


def stack(inputs, layer, stack_args, **kwargs):
    """``layer`` applied once per entry of ``stack_args`` (its arguments), each in its own scope
    (``Stack/<layer>_1`` ...): ``stack(x, fully_connected, [32, 64])``."""
    scope = kwargs.pop("scope", None)
    if not isinstance(stack_args, list | tuple):
        raise ValueError("stack_args need to be a list or tuple")
    with variable_scope.variable_scope(scope, "Stack", [inputs]):
        outputs = convert_to_tensor(inputs)
        scope = scope or _layer_name(layer, "stack")
        for i, layer_args in enumerate(stack_args):
            kwargs["scope"] = "%s_%d" % (scope, i + 1)
            if not isinstance(layer_args, list | tuple):
                layer_args = [layer_args]
            outputs = layer(outputs, *layer_args, **kwargs)
        return outputs


# -- optimize_loss ---------------------------------------------------------------------------------
OPTIMIZER_CLS_NAMES = {
    "Adagrad": adagrad.AdagradOptimizer,
    "Adam": adam.AdamOptimizer,
    "Ftrl": ftrl.FtrlOptimizer,
    "Momentum": functools.partial(momentum.MomentumOptimizer, momentum=0.9),
    "RMSProp": rmsprop.RMSPropOptimizer,
    "SGD": gradient_descent.GradientDescentOptimizer,
}
OPTIMIZER_SUMMARIES = ["learning_rate", "loss", "gradients", "gradient_norm",
                       "global_gradient_norm"]


def _learning_rate(learning_rate):
    if learning_rate is None or (is_symbolic(learning_rate) and
                                 learning_rate.get_shape().ndims == 0):
        return learning_rate
    if isinstance(learning_rate, float):
        if learning_rate < 0.0:
            raise ValueError("Invalid learning_rate %s." % learning_rate)
        return variable_scope.get_variable(
            "learning_rate", [], trainable=False,
            initializer=init_ops.constant_initializer(learning_rate))
    raise ValueError("Learning rate should be 0d Tensor or float. Got %s of type %s"
                     % (learning_rate, type(learning_rate)))


def _optimizer(optimizer, lr, learning_rate):
    if isinstance(optimizer, str):
        if lr is None:
            raise ValueError("Learning rate is None, but should be specified if optimizer is "
                             "string (%s)." % optimizer)
        if optimizer not in OPTIMIZER_CLS_NAMES:
            raise ValueError("Optimizer name should be one of [%s], you provided %s."
                             % (", ".join(OPTIMIZER_CLS_NAMES), optimizer))
        return OPTIMIZER_CLS_NAMES[optimizer](learning_rate=lr)
    if isinstance(optimizer, type) and issubclass(optimizer, optimizer_.Optimizer):
        if lr is None:
            raise ValueError("Learning rate is None, but should be specified if optimizer is "
                             "class (%s)." % optimizer)
        return optimizer(learning_rate=lr)
    if isinstance(optimizer, optimizer_.Optimizer):
        return optimizer
    if callable(optimizer):
        opt = optimizer(lr) if learning_rate is not None else optimizer()
        if not isinstance(opt, optimizer_.Optimizer):
            raise ValueError("Unrecognized optimizer: function should return subclass of "
                             "Optimizer. Got %s." % opt)
        return opt
    raise ValueError("Unrecognized optimizer: should be string, subclass of Optimizer, instance "
                     "of subclass of Optimizer or function with one argument. Got %s."
                     % optimizer)


def _global_norm(pairs):
    return clip_ops.global_norm([g for g, _ in pairs])


def optimize_loss(loss, global_step, learning_rate, optimizer, gradient_noise_scale=None,
                  gradient_multipliers=None, clip_gradients=None, learning_rate_decay_fn=None,
                  update_ops=None, variables=None, name=None, summaries=None,
                  colocate_gradients_with_ops=False, increment_global_step=True):
    """A training op for ``loss``: ``loss``'s value after one step of ``optimizer`` (a name of
    ``OPTIMIZER_CLS_NAMES``, an Optimizer class, instance, or a function of the learning rate)
    on ``variables`` (default: the trainable ones), the update ops run first, the gradients
    optionally clipped by global norm (``clip_gradients``: a float, or a function of the
    (gradient, variable) pairs). ``summaries`` (default: loss, learning rate, global gradient
    norm) are written as summaries; also "gradients" (histograms) and "gradient_norm".

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     w = tf.Variable(3.0)
    ...     step = tf.train.get_or_create_global_step()
    ...     train = tf.contrib.layers.optimize_loss(tf.square(w), step, 0.25, "SGD",
    ...                                             summaries=[])
    ...     sess = tf.Session()
    ...     _ = sess.run(tf.global_variables_initializer())
    ...     print(sess.run(train), sess.run(w), sess.run(step))
    9.0 1.5 1
    """
    if gradient_noise_scale is not None or gradient_multipliers is not None:
        raise NotImplementedError("optimize_loss: zps does not implement gradient_noise_scale "
                                  "or gradient_multipliers; leave them None")
    loss = convert_to_tensor(loss)
    if loss.get_shape().ndims not in (0, None):
        raise ValueError("Expected scalar shape for %s, saw shape: %s."
                         % (loss.name, loss.get_shape()))
    graph = get_default_graph()
    summaries = ["loss", "learning_rate", "global_gradient_norm"] if summaries is None \
        else summaries
    with variable_scope.variable_scope(name, "OptimizeLoss", [loss, global_step]):
        update_ops = graph.get_collection(GraphKeys.UPDATE_OPS) if update_ops is None \
            else update_ops
        if update_ops:
            loss = control_flow_ops.with_dependencies(list(update_ops), loss)
        lr = _learning_rate(learning_rate)
        if lr is not None and learning_rate_decay_fn is not None:
            if global_step is None:
                raise ValueError("global_step is required for learning_rate_decay_fn.")
            lr = learning_rate_decay_fn(lr, global_step)
        if lr is not None and "learning_rate" in summaries:
            summary_ops.scalar("learning_rate", lr)
        opt = _optimizer(optimizer, lr, learning_rate)
        pairs = opt.compute_gradients(
            loss, variables if variables is not None else
            graph.get_collection(GraphKeys.TRAINABLE_VARIABLES),
            colocate_gradients_with_ops=colocate_gradients_with_ops)
        norms = "global_gradient_norm" in summaries or "gradient_norm" in summaries
        if norms:
            summary_ops.scalar("global_norm/gradient_norm", _global_norm(pairs))
        if isinstance(clip_gradients, float):
            clipped, _ = clip_ops.clip_by_global_norm([g for g, _ in pairs], clip_gradients)
            pairs = list(zip(clipped, [v for _, v in pairs]))
        elif callable(clip_gradients):
            pairs = clip_gradients(pairs)
        elif clip_gradients is not None:
            raise ValueError("Unknown type %s for clip_gradients" % type(clip_gradients))
        if "loss" in summaries:
            summary_ops.scalar("loss", loss)
        for gradient, variable in pairs:
            values = gradient.values if isinstance(gradient, IndexedSlices) else gradient
            if values is not None:
                var_name = variable.name.replace(":", "_")
                if "gradients" in summaries:
                    summary_ops.histogram("gradients/%s" % var_name, values)
                if "gradient_norm" in summaries:
                    summary_ops.scalar("gradient_norm/%s" % var_name,
                                       clip_ops.global_norm([values]))
        if clip_gradients is not None and norms:
            summary_ops.scalar("global_norm/clipped_gradient_norm", _global_norm(pairs))
        train = opt.apply_gradients(pairs, global_step=global_step if increment_global_step
                                    else None, name="train")
        return control_flow_ops.with_dependencies([train], loss)


__all__ = [
    "fully_connected", "convolution2d", "conv2d", "max_pool2d", "avg_pool2d", "flatten",
    "dropout", "batch_norm", "bias_add", "convolution2d_transpose", "conv2d_transpose",
    "separable_convolution2d", "separable_conv2d", "layer_norm", "softmax", "unit_norm",
    "one_hot_encoding", "embed_sequence", "repeat", "stack",
    "l1_regularizer", "l2_regularizer", "l1_l2_regularizer", "sum_regularizer",
    "apply_regularization", "xavier_initializer", "xavier_initializer_conv2d",
    "variance_scaling_initializer", "optimize_loss", "OPTIMIZER_CLS_NAMES",
    "OPTIMIZER_SUMMARIES",
]
