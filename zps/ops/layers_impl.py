"""TF1's functional layers (``tf.layers``, see zps/layers.py): dense, conv2d, pooling, dropout,
flatten, built from tf.nn ops and ``get_variable``.

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

from zps.framework import dtypes
from zps.framework.graph import GraphKeys, convert_to_tensor, get_default_graph, is_symbolic
from zps.ops import array_ops, conv_ops, init_ops, math_ops, nn_ops, variable_scope

_ZEROS = init_ops.zeros_initializer()   # TF1's default bias initializer


def _variables(name, default, reuse):
    return variable_scope.variable_scope(name, default_name=default, reuse=reuse)


def _weights(name, shape, dtype, initializer, regularizer, trainable, constraint=None):
    return variable_scope.get_variable(name, shape, dtype=dtype, initializer=initializer,
                                       regularizer=regularizer, trainable=trainable,
                                       constraint=constraint)


def _float_input(inputs, what):
    inputs = convert_to_tensor(inputs)
    if not inputs.dtype.is_floating:
        raise TypeError("%s needs floating-point inputs, got %s (%s): cast them first"
                        % (what, inputs.dtype.name, inputs.name))
    return inputs


def _activity(outputs, activation, activity_regularizer):
    if activation is not None:
        outputs = activation(outputs)
    if activity_regularizer is not None:
        loss = activity_regularizer(outputs)
        if loss is not None:
            get_default_graph().add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
    return outputs


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=_ZEROS, kernel_regularizer=None,
          bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
          bias_constraint=None, trainable=True, name=None, reuse=None):
    """``activation(inputs @ kernel + bias)`` over the last axis of ``inputs`` (any rank >= 2);
    the kernel is Glorot-uniform initialized unless ``kernel_initializer`` says otherwise."""
    inputs = _float_input(inputs, "dense")
    shape = inputs.get_shape()
    if shape.ndims is not None and shape.ndims < 2:
        raise ValueError("Input 0 of layer dense is incompatible with the layer: expected "
                         "min_ndim=2, found ndim=%d. Full shape received: %s" % (shape.ndims,
                                                                                 shape))
    last = shape[-1].value if shape.ndims is not None else None
    if last is None:
        raise ValueError("The last dimension of the inputs to `Dense` should be defined. Found "
                         "`None`.")
    with _variables(name, "dense", reuse):
        kernel = _weights("kernel", [last, units], inputs.dtype,
                          kernel_initializer or init_ops.glorot_uniform_initializer(),
                          kernel_regularizer, trainable, kernel_constraint)
        if shape.ndims == 2:
            outputs = math_ops.matmul(inputs, kernel)
        else:   # contract the last axis: [..., last] -> [-1, last] @ kernel -> [..., units]
            flat = array_ops.reshape(inputs, [-1, last])
            outputs = array_ops.reshape(
                math_ops.matmul(flat, kernel),
                array_ops.concat([array_ops.shape(inputs)[:-1], [units]], 0))
            outputs.set_shape(shape[:-1].concatenate([units]))
        if use_bias:
            bias = _weights("bias", [units], inputs.dtype, bias_initializer, bias_regularizer,
                            trainable, bias_constraint)
            outputs = nn_ops.bias_add(outputs, bias)
        return _activity(outputs, activation, activity_regularizer)


def _pair(value, what):
    if isinstance(value, int):
        return (value, value)
    value = tuple(value)
    if len(value) != 2 or not all(isinstance(v, int) for v in value):
        raise ValueError("%s must be an int or a pair of ints, got %r" % (what, value))
    return value


def _padding(padding):
    if padding.lower() not in ("valid", "same"):
        raise ValueError("padding must be 'valid' or 'same', got %r" % padding)
    return padding.upper()


def _nhwc(data_format, what):
    if data_format != "channels_last":
        raise ValueError("%s: only data_format='channels_last' (NHWC) is supported, got %r"
                         % (what, data_format))


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1), activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=_ZEROS,
           kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
           kernel_constraint=None, bias_constraint=None, trainable=True, name=None, reuse=None):
    """A 2-D convolution of NHWC ``inputs`` with ``filters`` output channels (kernel
    ``[kh, kw, in, filters]``), then the bias and ``activation``."""
    inputs = _float_input(inputs, "conv2d")
    _nhwc(data_format, "conv2d")
    shape = inputs.get_shape()
    if shape.ndims is not None and shape.ndims != 4:
        raise ValueError("Input 0 of layer conv2d is incompatible with the layer: expected "
                         "ndim=4, found ndim=%d. Full shape received: %s" % (shape.ndims, shape))
    channels = shape[-1].value if shape.ndims is not None else None
    if channels is None:
        raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(strides, "strides")
    dh, dw = _pair(dilation_rate, "dilation_rate")
    with _variables(name, "conv2d", reuse):
        kernel = _weights("kernel", [kh, kw, channels, filters], inputs.dtype,
                          kernel_initializer or init_ops.glorot_uniform_initializer(),
                          kernel_regularizer, trainable, kernel_constraint)
        outputs = conv_ops.conv2d(inputs, kernel, strides=[1, sh, sw, 1],
                                  padding=_padding(padding), dilations=[1, dh, dw, 1])
        if use_bias:
            bias = _weights("bias", [filters], inputs.dtype, bias_initializer, bias_regularizer,
                            trainable, bias_constraint)
            outputs = nn_ops.bias_add(outputs, bias)
        return _activity(outputs, activation, activity_regularizer)


def _pooling(pool, kind, inputs, pool_size, strides, padding, data_format, name):
    _nhwc(data_format, kind)
    ph, pw = _pair(pool_size, "pool_size")
    sh, sw = _pair(strides, "strides")
    with get_default_graph().name_scope(name or kind):
        return pool(inputs, ksize=[1, ph, pw, 1], strides=[1, sh, sw, 1],
                    padding=_padding(padding))


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """2-D max pooling of NHWC ``inputs``."""
    return _pooling(conv_ops.max_pool, "max_pooling2d", inputs, pool_size, strides, padding,
                    data_format, name)


def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None):
    """2-D average pooling of NHWC ``inputs``."""
    return _pooling(conv_ops.avg_pool, "average_pooling2d", inputs, pool_size, strides, padding,
                    data_format, name)


def flatten(inputs, name=None, data_format="channels_last"):
    """``inputs`` as ``[batch, everything else]``."""
    _nhwc(data_format, "flatten")
    inputs = convert_to_tensor(inputs)
    with get_default_graph().name_scope(name or "flatten"):
        shape = inputs.get_shape()
        if shape.ndims is not None and shape[1:].is_fully_defined() and \
                shape[1:].num_elements() > 0:
            return array_ops.reshape(inputs, [-1, shape[1:].num_elements()])
        # Trailing dimensions known only at run time: the batch size comes from the input.
        return array_ops.reshape(inputs, array_ops.stack([array_ops.shape(inputs)[0], -1]))


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """Units dropped with probability ``rate`` (the others scaled by ``1 / (1 - rate)``) when
    ``training`` (a Python bool or a bool tensor); ``inputs`` unchanged otherwise."""
    if not 0 <= rate < 1:
        raise ValueError("rate must be in [0, 1), got %r" % (rate,))
    with get_default_graph().name_scope(name or "dropout"):
        inputs = convert_to_tensor(inputs)
        if not is_symbolic(training):
            if not training or rate == 0:
                return array_ops.identity(inputs)
            return nn_ops.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed)
        training = convert_to_tensor(training)
        if training.dtype != dtypes.bool:
            raise TypeError("training must be a Python bool or a bool tensor, got %s"
                            % training.dtype.name)
        dropped = nn_ops.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed)
        return array_ops.where(array_ops.fill(array_ops.shape(inputs), training), dropped,
                               inputs)


__all__ = ["dense", "conv2d", "max_pooling2d", "average_pooling2d", "flatten", "dropout"]
