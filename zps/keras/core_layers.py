"""The core of ``tf.keras.layers`` (the namespace is zps/keras/layers.py) in graph mode:
tf.layers' layers (zps/ops/layers_impl.py) with Keras's naming, defaults and string arguments
(engine.Layer), and the layers tf.layers lacks (embedding, masking, merging, reshaping,
padding, activations, layer normalization).

Each layer's ``get_config()`` is Keras's (TF 1.15's keys, tuples for sizes, initializers and
regularizers as ``{"class_name", "config"}``, activations by name): the class's
``_config_keys`` read from its attributes (engine.Layer.get_config).

Masks (``Masking``, ``Embedding(mask_zero=True)``) pass through the layers that support them
as TF's Keras (``Dense``, ``Activation``, ``Dropout``, ``BatchNormalization``, merges...) to
the recurrent layers and ``GlobalAveragePooling1D``; other layers drop them.

``Dropout`` and ``BatchNormalization`` called without ``training`` follow the learning phase
(``tf.keras.backend.learning_phase()``: inference unless fed True or fixed by
``set_learning_phase(1)``).

>>> import numpy as np, zps as tf
>>> with tf.Graph().as_default():
...     ids = tf.constant([[3, 1, 0, 0]])
...     x = tf.keras.layers.Embedding(4, 2, mask_zero=True)(ids)
...     y = tf.keras.layers.Dense(3)(x)
...     print(y.shape, tf.Session().run(y._keras_mask))
(1, 4, 3) [[ True  True False False]]
"""

import numpy as np

from zps.framework import dtypes
from zps.framework.tensor_shape import as_shape
from zps.keras import activations, backend
from zps.keras.engine import Layer, _training, converted
from zps.ops import array_ops, array_ops_more, conv_ops, embedding_ops, layers_impl, math_ops, nn_ops
from zps.ops.layers_impl import InputSpec, _ints

# --- tf.layers' layers with Keras's names and defaults ------------------------------------------


def _channels_last(data_format):
    return "channels_last" if data_format is None else data_format


def _floatx(value):
    """``value`` rounded to a float32 as Keras keeps it (its config gives ``float(value)``)."""
    return float(np.float32(value))


def _glorot_kernels(layer, given):
    """Give the kernels Keras's default initializer ("glorot_uniform", in their config too)
    where ``layer`` was made without one (tf.layers' default is None)."""
    for key in layer._config_keys:
        if key.endswith("_initializer") and not key.startswith("bias") and key not in given \
                and getattr(layer, key) is None:
            setattr(layer, key, converted(key, "glorot_uniform"))


class Dense(Layer, layers_impl.Dense):
    """TF's ``tf.keras.layers.Dense``: ``activation(inputs @ kernel + bias)``; variables
    ``<name>/kernel`` [in, units] (Glorot-uniform) and ``<name>/bias`` [units] (zeros)."""

    supports_masking = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _glorot_kernels(self, kwargs)


class _KerasConv:
    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 *args, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, _channels_last(data_format),
                         *args, **kwargs)
        _glorot_kernels(self, kwargs)


class Conv1D(_KerasConv, Layer, layers_impl.Conv1D):
    """TF's ``tf.keras.layers.Conv1D``: kernel [k, in, filters], bias [filters]."""


class Conv2D(_KerasConv, Layer, layers_impl.Conv2D):
    """TF's ``tf.keras.layers.Conv2D`` (NHWC): kernel [kh, kw, in, filters], bias [filters]."""


class Conv3D(_KerasConv, Layer, layers_impl.Conv3D):
    """TF's ``tf.keras.layers.Conv3D`` (NDHWC): kernel [kd, kh, kw, in, filters]."""


class _KerasConvTranspose:
    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None,
                 data_format=None, dilation_rate=1, **kwargs):
        if output_padding is not None or dilation_rate not in (1, (1, 1), (1, 1, 1), [1, 1]):
            raise NotImplementedError("%s: zps does not implement output_padding or "
                                      "dilation_rate != 1" % type(self).__name__)
        super().__init__(filters, kernel_size, strides, padding, _channels_last(data_format),
                         **kwargs)
        _glorot_kernels(self, kwargs)
        self.output_padding = None


class Conv2DTranspose(_KerasConvTranspose, Layer, layers_impl.Conv2DTranspose):
    """TF's ``tf.keras.layers.Conv2DTranspose``: kernel [kh, kw, filters, in]."""

    _config_keys = layers_impl._Conv._config_keys + ("output_padding",)


class Conv3DTranspose(_KerasConvTranspose, Layer, layers_impl.Conv3DTranspose):
    """TF's ``tf.keras.layers.Conv3DTranspose``: kernel [kd, kh, kw, filters, in]."""

    _config_keys = layers_impl.Conv3DTranspose._config_keys + ("output_padding",)


_SEPARABLE_KEYS = layers_impl._Conv._config_keys + tuple(   # Keras's keep the kernel_* keys
    key for key in layers_impl._SeparableConv._config_keys
    if key not in layers_impl._Conv._config_keys)


class SeparableConv1D(_KerasConv, Layer, layers_impl.SeparableConv1D):
    """TF's ``tf.keras.layers.SeparableConv1D``: depthwise then pointwise kernels."""

    _config_keys = _SEPARABLE_KEYS


class SeparableConv2D(_KerasConv, Layer, layers_impl.SeparableConv2D):
    """TF's ``tf.keras.layers.SeparableConv2D``: ``depthwise_kernel`` [kh, kw, in, multiplier],
    ``pointwise_kernel`` [1, 1, in * multiplier, filters], bias [filters]."""

    _config_keys = _SEPARABLE_KEYS


class DepthwiseConv2D(Layer, layers_impl.Conv2D):
    """TF's ``tf.keras.layers.DepthwiseConv2D``: each input channel convolved with
    ``depth_multiplier`` filters of its own: ``depthwise_kernel`` [kh, kw, in, multiplier],
    bias [in * multiplier]."""

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(1, kernel_size, strides=strides, padding=padding,
                         data_format=_channels_last(data_format), dilation_rate=dilation_rate,
                         activation=activation, use_bias=use_bias,
                         kernel_initializer=depthwise_initializer,
                         bias_initializer=bias_initializer,
                         kernel_regularizer=depthwise_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=depthwise_constraint, bias_constraint=bias_constraint,
                         **kwargs)
        self.depth_multiplier = depth_multiplier

    def build(self, input_shape):
        channels = as_shape(input_shape)[-1].value
        if as_shape(input_shape).ndims != 4:
            raise ValueError("Inputs to `DepthwiseConv2D` should have rank 4. Received input "
                             "shape: %s" % (as_shape(input_shape),))
        if channels is None:
            raise ValueError("The channel dimension of the inputs to `DepthwiseConv2D` should "
                             "be defined. Found `None`.")
        self.input_spec = InputSpec(ndim=4, axes={-1: channels})
        self.depthwise_kernel = self.kernel = self.add_weight(
            "depthwise_kernel", [*self.kernel_size, channels, self.depth_multiplier],
            initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint)
        self.filters = channels * self.depth_multiplier
        if self.use_bias:
            self.bias = self.add_weight("bias", [self.filters], initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    def get_config(self):
        """Keras's: the depthwise_* arguments in place of filters and the kernel_* ones."""
        config = super().get_config()
        config.pop("filters")
        config["depth_multiplier"] = self.depth_multiplier
        for what in ("initializer", "regularizer", "constraint"):
            config["depthwise_" + what] = config.pop("kernel_" + what)
        return config

    def _convolve(self, inputs):
        return conv_ops.depthwise_conv2d(inputs, self.depthwise_kernel, [1, *self.strides, 1],
                                         self.padding.upper(), rate=list(self.dilation_rate))


class _KerasPooling:
    _default_size = None

    def __init__(self, pool_size=None, strides=None, padding="valid", data_format=None,
                 **kwargs):
        pool_size = self._default_size if pool_size is None else pool_size
        super().__init__(pool_size, pool_size if strides is None else strides, padding,
                         _channels_last(data_format), **kwargs)


class MaxPooling1D(_KerasPooling, Layer, layers_impl.MaxPooling1D):
    """TF's ``tf.keras.layers.MaxPooling1D``: pool_size 2, strides = pool_size."""
    _default_size = 2


class AveragePooling1D(_KerasPooling, Layer, layers_impl.AveragePooling1D):
    """TF's ``tf.keras.layers.AveragePooling1D``: pool_size 2, strides = pool_size."""
    _default_size = 2


class MaxPooling2D(_KerasPooling, Layer, layers_impl.MaxPooling2D):
    """TF's ``tf.keras.layers.MaxPooling2D``: pool_size (2, 2), strides = pool_size."""
    _default_size = (2, 2)


class AveragePooling2D(_KerasPooling, Layer, layers_impl.AveragePooling2D):
    """TF's ``tf.keras.layers.AveragePooling2D``: pool_size (2, 2), strides = pool_size."""
    _default_size = (2, 2)


class MaxPooling3D(_KerasPooling, Layer, layers_impl.MaxPooling3D):
    """TF's ``tf.keras.layers.MaxPooling3D``: pool_size (2, 2, 2), strides = pool_size."""
    _default_size = (2, 2, 2)


class AveragePooling3D(_KerasPooling, Layer, layers_impl.AveragePooling3D):
    """TF's ``tf.keras.layers.AveragePooling3D``: pool_size (2, 2, 2), strides = pool_size."""
    _default_size = (2, 2, 2)


class Flatten(Layer, layers_impl.Flatten):
    """TF's ``tf.keras.layers.Flatten``: ``[batch, everything else]``."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(_channels_last(data_format), **kwargs)


class Dropout(Layer, layers_impl.Dropout):
    """TF's ``tf.keras.layers.Dropout``: ``training`` given to the call, else the learning
    phase."""

    supports_masking = True

    def call(self, inputs, training=None):
        return super().call(inputs, training=_training(training))


class BatchNormalization(Layer, layers_impl.BatchNormalization):
    """TF's ``tf.keras.layers.BatchNormalization`` (v1): ``gamma``, ``beta``, ``moving_mean``,
    ``moving_variance``; ``training`` given to the call, else the learning phase. Its update
    ops are in ``layer.updates`` (not in ``tf.GraphKeys.UPDATE_OPS``, as TF's Keras)."""

    supports_masking = True

    def call(self, inputs, training=None):
        return super().call(inputs, training=_training(training))

    def get_config(self):
        config = super().get_config()
        if self.built:   # Keras's axis is the list of non-negative axes once built
            config["axis"] = list(self._axes)
        return config


# --- layers tf.layers lacks ----------------------------------------------------------------------


class _Stateless(Layer):
    """A layer without weights whose output shape is that of its call on a placeholder."""

    def compute_output_shape(self, input_shape):
        shapes = input_shape if isinstance(input_shape, list) else None
        from zps.framework.graph import Graph
        with Graph().as_default():
            if shapes is not None:
                probe = [array_ops.placeholder(self.dtype or "float32", as_shape(s).as_list())
                         for s in shapes]
            else:
                probe = array_ops.placeholder(self.dtype or "float32",
                                              as_shape(input_shape).as_list())
            return self.call(probe).get_shape()


class Embedding(Layer):
    """TF's ``tf.keras.layers.Embedding``: rows of ``embeddings`` [input_dim, output_dim]
    (uniform in [-0.05, 0.05) by default) looked up by integer inputs; output
    ``input_shape + (output_dim,)``. With ``mask_zero`` the ids 0 are padding: the output's
    mask is ``inputs != 0`` (``input_dim`` must then count the 0). As Keras's, its input shape
    is ``(input_length,)`` (``(None,)`` by default): a ``Sequential`` it starts has inputs."""

    _config_keys = ("input_dim", "output_dim", "embeddings_initializer",
                    "embeddings_regularizer", "activity_regularizer", "embeddings_constraint",
                    "mask_zero", "input_length")

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 embeddings_regularizer=None, activity_regularizer=None,
                 embeddings_constraint=None, mask_zero=False, input_length=None, **kwargs):
        if "input_shape" not in kwargs and "batch_input_shape" not in kwargs:   # as Keras's
            kwargs["input_shape"] = tuple(input_length) if isinstance(input_length, list |
                                                                       tuple) else (input_length,)
        super().__init__(activity_regularizer=converted("_regularizer", activity_regularizer),
                         **kwargs)
        self.input_dim, self.output_dim = input_dim, output_dim
        self.embeddings_initializer = converted("_initializer", embeddings_initializer)
        self.embeddings_regularizer = converted("_regularizer", embeddings_regularizer)
        self.embeddings_constraint = converted("_constraint", embeddings_constraint)
        self.input_length, self.mask_zero = input_length, mask_zero
        if self._dtype == "int32" or self._dtype is None:
            self._dtype = backend.floatx()   # the weights' dtype, not the ids'

    def build(self, input_shape):
        self.embeddings = self.add_weight(
            "embeddings", [self.input_dim, self.output_dim],
            initializer=self.embeddings_initializer, regularizer=self.embeddings_regularizer,
            constraint=self.embeddings_constraint)
        self.built = True

    def call(self, inputs):
        if inputs.dtype not in (dtypes.int32, dtypes.int64):
            inputs = math_ops.cast(inputs, dtypes.int32)
        return embedding_ops.embedding_lookup(self.embeddings, inputs)

    def compute_mask(self, inputs, mask=None):
        return math_ops.not_equal(inputs, 0) if self.mask_zero else None

    def compute_output_shape(self, input_shape):
        return as_shape(input_shape).concatenate([self.output_dim])


class Masking(Layer):
    """TF's ``tf.keras.layers.Masking``: the steps whose features all equal ``mask_value`` are
    masked (and zeroed) for the layers after it; the mask is [batch, time]."""

    supports_masking = True
    _config_keys = ("mask_value",)

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = mask_value

    def compute_mask(self, inputs, mask=None):
        return math_ops.reduce_any(math_ops.not_equal(inputs, self.mask_value), axis=-1)

    def call(self, inputs):
        keep = math_ops.reduce_any(math_ops.not_equal(inputs, self.mask_value), axis=-1,
                                   keepdims=True)
        return inputs * math_ops.cast(keep, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return as_shape(input_shape)


class Activation(_Stateless):
    """TF's ``tf.keras.layers.Activation``: ``activation(inputs)``, given by name or callable."""

    supports_masking = True
    _config_keys = ("activation",)

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return as_shape(input_shape)


class LeakyReLU(_Stateless):
    """TF's ``tf.keras.layers.LeakyReLU``: ``x`` if ``x > 0`` else ``alpha * x`` (alpha 0.3)."""

    supports_masking = True
    _config_keys = ("alpha",)

    def __init__(self, alpha=0.3, **kwargs):
        super().__init__(**kwargs)
        self.alpha = _floatx(alpha)

    def call(self, inputs):
        return nn_ops.leaky_relu(inputs, alpha=self.alpha)


class ReLU(_Stateless):
    """TF's ``tf.keras.layers.ReLU``: ``activations.relu`` with ``max_value``,
    ``negative_slope`` and ``threshold``."""

    supports_masking = True
    _config_keys = ("max_value", "negative_slope", "threshold")

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0:
            raise ValueError("max_value of a ReLU layer cannot be negative, got %r" % max_value)
        self.max_value = None if max_value is None else _floatx(max_value)
        self.negative_slope, self.threshold = _floatx(negative_slope), _floatx(threshold)

    def call(self, inputs):
        return activations.relu(inputs, alpha=self.negative_slope, max_value=self.max_value,
                                threshold=self.threshold)


class Softmax(_Stateless):
    """TF's ``tf.keras.layers.Softmax`` along ``axis`` (-1)."""

    supports_masking = True
    _config_keys = ("axis",)

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs):
        return nn_ops.softmax(inputs, axis=self.axis)


class Reshape(_Stateless):
    """TF's ``tf.keras.layers.Reshape``: each example to ``target_shape`` (one -1 allowed)."""

    _config_keys = ("target_shape",)

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(target_shape)

    def call(self, inputs):
        outputs = array_ops.reshape(inputs, array_ops.concat(
            [array_ops.shape(inputs)[:1], list(self.target_shape)], 0))
        rest = inputs.get_shape()[1:]
        target = list(self.target_shape)
        if -1 in target and rest.is_fully_defined():
            known = -int(np.prod(target))
            target[target.index(-1)] = rest.num_elements() // known
        outputs.set_shape([inputs.get_shape()[0].value if inputs.get_shape().ndims else None,
                           *[None if d == -1 else d for d in target]])
        return outputs


class Permute(_Stateless):
    """TF's ``tf.keras.layers.Permute``: the non-batch axes in the order ``dims`` (1-based)."""

    _config_keys = ("dims",)

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError("Invalid permutation `dims` for Permute Layer: %s. The set of "
                             "indices in `dims` must be consecutive and start from 1."
                             % (self.dims,))

    def call(self, inputs):
        return array_ops.transpose(inputs, [0, *self.dims])


class RepeatVector(_Stateless):
    """TF's ``tf.keras.layers.RepeatVector``: [batch, features] -> [batch, n, features]."""

    _config_keys = ("n",)

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        self.n = n
        self.input_spec = InputSpec(ndim=2)

    def call(self, inputs):
        return array_ops.tile(array_ops.expand_dims(inputs, 1), [1, self.n, 1])


class Lambda(_Stateless):
    """TF's ``tf.keras.layers.Lambda``: ``function(inputs, **arguments)`` as a layer (weights
    it makes are not tracked). Its config holds the functions themselves: zps serializes
    no code (``from_config`` works in the same program; models with Lambdas are not saved)."""

    _config_keys = ("function", "mask", "arguments")   # and output_shape (see get_config)

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        self.function, self.arguments = function, dict(arguments or {})
        self._given_output_shape = output_shape
        self.mask = mask

    def get_config(self):
        return dict(super().get_config(), output_shape=self._given_output_shape)

    def compute_mask(self, inputs, mask=None):
        """``mask(inputs, mask)`` when the layer's ``mask`` is a callable, else it (None)."""
        return self.mask(inputs, mask) if callable(self.mask) else self.mask

    def call(self, inputs):
        return self.function(inputs, **self.arguments)

    def compute_output_shape(self, input_shape):
        if self._given_output_shape is None:
            return super().compute_output_shape(input_shape)
        shape = self._given_output_shape
        shape = shape(input_shape) if callable(shape) else \
            [as_shape(input_shape)[0].value, *shape]
        return as_shape(shape)


class _Merge(_Stateless):
    """A layer of a list of tensors of one shape (Add, Multiply...)."""

    def build(self, input_shape):
        if not isinstance(input_shape, list) or len(input_shape) < 2:
            raise ValueError("A merge layer (%s) should be called on a list of at least 2 "
                             "inputs. Got %s inputs." % (type(self).__name__,
                                                         1 if not isinstance(input_shape, list)
                                                         else len(input_shape)))
        self.built = True

    def call(self, inputs):
        outputs = inputs[0]
        for x in inputs[1:]:
            outputs = self._merge(outputs, x)
        return outputs

    def compute_mask(self, inputs, mask=None):
        """The steps masked in no input (Keras's merge of masks), None without masks."""
        given = [m for m in (mask or []) if m is not None]
        if not given:
            return None
        out = given[0]
        for m in given[1:]:
            out = math_ops.logical_and(out, m)
        return out


class Add(_Merge):
    """TF's ``tf.keras.layers.Add``: the sum of the inputs."""
    _merge = staticmethod(math_ops.add)


class Multiply(_Merge):
    """TF's ``tf.keras.layers.Multiply``: the product of the inputs."""
    _merge = staticmethod(math_ops.multiply)


class Maximum(_Merge):
    """TF's ``tf.keras.layers.Maximum``: the element-wise maximum of the inputs."""
    _merge = staticmethod(math_ops.maximum)


class Minimum(_Merge):
    """TF's ``tf.keras.layers.Minimum``: the element-wise minimum of the inputs."""
    _merge = staticmethod(math_ops.minimum)


class Average(_Merge):
    """TF's ``tf.keras.layers.Average``: the mean of the inputs."""

    def call(self, inputs):
        return math_ops.add_n(list(inputs)) / len(inputs)


class Subtract(_Merge):
    """TF's ``tf.keras.layers.Subtract``: ``inputs[0] - inputs[1]`` (exactly two inputs)."""

    def build(self, input_shape):
        if not isinstance(input_shape, list) or len(input_shape) != 2:
            raise ValueError("A `Subtract` layer should be called on exactly 2 inputs")
        self.built = True

    def call(self, inputs):
        return math_ops.subtract(inputs[0], inputs[1])


class Concatenate(_Merge):
    """TF's ``tf.keras.layers.Concatenate``: the inputs joined along ``axis`` (-1)."""

    _config_keys = ("axis",)

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs):
        return array_ops.concat(list(inputs), self.axis)


def _functional(layer_class, doc):
    def merge(inputs, **kwargs):
        return layer_class(**kwargs)(inputs)
    merge.__name__ = layer_class.__name__.lower()
    merge.__doc__ = doc
    return merge


add = _functional(Add, "``Add(**kwargs)(inputs)``.")
subtract = _functional(Subtract, "``Subtract(**kwargs)(inputs)``.")
multiply = _functional(Multiply, "``Multiply(**kwargs)(inputs)``.")
average = _functional(Average, "``Average(**kwargs)(inputs)``.")
maximum = _functional(Maximum, "``Maximum(**kwargs)(inputs)``.")
minimum = _functional(Minimum, "``Minimum(**kwargs)(inputs)``.")


def concatenate(inputs, axis=-1, **kwargs):
    """``Concatenate(axis, **kwargs)(inputs)``."""
    return Concatenate(axis=axis, **kwargs)(inputs)


def _pairs(value, what):
    """Keras's 2-D padding/cropping argument: an int, 2 ints or 2 pairs -> ((t, b), (l, r))."""
    if isinstance(value, int):
        return ((value, value), (value, value))
    value = tuple(value)
    if len(value) == 2 and all(isinstance(v, int) for v in value):
        return ((value[0], value[0]), (value[1], value[1]))
    if len(value) == 2 and all(len(tuple(v)) == 2 for v in value):
        return tuple(tuple(v) for v in value)
    raise ValueError("`%s` should be an int, a tuple of 2 ints or a tuple of 2 tuples of 2 "
                     "ints. Received: %r" % (what, value))


class ZeroPadding2D(_Stateless):
    """TF's ``tf.keras.layers.ZeroPadding2D``: zero rows and columns around NHWC images."""

    _config_keys = ("padding", "data_format")

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = _channels_last(data_format)
        layers_impl._nhwc(self.data_format, "ZeroPadding2D")
        self.padding = _pairs(padding, "padding")
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        return array_ops.pad(inputs, [[0, 0], list(self.padding[0]), list(self.padding[1]),
                                      [0, 0]])


class Cropping2D(_Stateless):
    """TF's ``tf.keras.layers.Cropping2D``: rows and columns cut off NHWC images."""

    _config_keys = ("cropping", "data_format")

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = _channels_last(data_format)
        layers_impl._nhwc(self.data_format, "Cropping2D")
        self.cropping = _pairs(cropping, "cropping")
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        (top, bottom), (left, right) = self.cropping
        return inputs[:, top:(-bottom or None), left:(-right or None), :]


class UpSampling2D(_Stateless):
    """TF's ``tf.keras.layers.UpSampling2D``: each row and column repeated ``size`` times
    (nearest-neighbour)."""

    _config_keys = ("size", "data_format", "interpolation")

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(**kwargs)
        self.data_format = _channels_last(data_format)
        layers_impl._nhwc(self.data_format, "UpSampling2D")
        if interpolation != "nearest":
            raise NotImplementedError("UpSampling2D: zps implements interpolation='nearest' "
                                      "only, got %r" % (interpolation,))
        self.size, self.interpolation = _ints(size, 2, "size"), interpolation
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        rows = array_ops_more.repeat(inputs, self.size[0], axis=1)
        return array_ops_more.repeat(rows, self.size[1], axis=2)


class _GlobalPooling(_Stateless):
    _reduce, _rank = None, None
    _config_keys = ("data_format",)

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = _channels_last(data_format)
        layers_impl._nhwc(self.data_format, type(self).__name__)
        self.input_spec = InputSpec(ndim=self._rank + 2)

    def call(self, inputs):
        return self._reduce(inputs, axis=list(range(1, self._rank + 1)))


class GlobalAveragePooling1D(_GlobalPooling):
    """TF's ``tf.keras.layers.GlobalAveragePooling1D``: the mean over the steps (over the
    unmasked steps when the inputs are masked)."""
    _reduce, _rank = staticmethod(math_ops.reduce_mean), 1

    def call(self, inputs, mask=None):
        if mask is None:
            return super().call(inputs)
        weights = array_ops.expand_dims(math_ops.cast(mask, inputs.dtype), 2)
        return math_ops.reduce_sum(inputs * weights, axis=1) / math_ops.reduce_sum(weights,
                                                                                   axis=1)

    def compute_mask(self, inputs, mask=None):
        return None


class GlobalAveragePooling2D(_GlobalPooling):
    """TF's ``tf.keras.layers.GlobalAveragePooling2D``: the mean over height and width."""
    _reduce, _rank = staticmethod(math_ops.reduce_mean), 2


class GlobalMaxPooling1D(_GlobalPooling):
    """TF's ``tf.keras.layers.GlobalMaxPooling1D``: the maximum over the steps."""
    _reduce, _rank = staticmethod(math_ops.reduce_max), 1


class GlobalMaxPooling2D(_GlobalPooling):
    """TF's ``tf.keras.layers.GlobalMaxPooling2D``: the maximum over height and width."""
    _reduce, _rank = staticmethod(math_ops.reduce_max), 2


GlobalAvgPool1D, GlobalAvgPool2D = GlobalAveragePooling1D, GlobalAveragePooling2D
GlobalMaxPool1D, GlobalMaxPool2D = GlobalMaxPooling1D, GlobalMaxPooling2D
MaxPool1D, MaxPool2D, MaxPool3D = MaxPooling1D, MaxPooling2D, MaxPooling3D
AvgPool1D, AvgPool2D, AvgPool3D = AveragePooling1D, AveragePooling2D, AveragePooling3D
Convolution1D, Convolution2D, Convolution3D = Conv1D, Conv2D, Conv3D


class LayerNormalization(Layer):
    """TF's ``tf.keras.layers.LayerNormalization``: ``gamma * (x - mean) / sqrt(var + epsilon)
    + beta``, the moments over ``axis`` (-1) of each example; ``gamma``/``beta`` of the
    normalized axes' shape."""

    supports_masking = True
    _config_keys = ("axis", "epsilon", "center", "scale", "beta_initializer",
                    "gamma_initializer", "beta_regularizer", "gamma_regularizer",
                    "beta_constraint", "gamma_constraint")

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None, **kwargs):
        super().__init__(**kwargs)
        args = locals()
        for key in self._config_keys[4:]:
            setattr(self, key, converted(key, args[key]))
        self.axis = list(axis) if isinstance(axis, list | tuple) else axis
        self.epsilon, self.center, self.scale = epsilon, center, scale
        self.gamma = self.beta = None

    def build(self, input_shape):
        shape = as_shape(input_shape)
        layers_impl._check_floating(self)
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        self.axis = [a % shape.ndims for a in axes]   # Keras's config once built
        self._axes = sorted(self.axis)
        param_shape = [shape[a].value for a in self._axes]
        if self.scale:
            self.gamma = self.add_weight("gamma", param_shape,
                                         initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint)
        if self.center:
            self.beta = self.add_weight("beta", param_shape, initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint)
        self.built = True

    def call(self, inputs):
        ndims = inputs.get_shape().ndims
        mean, variance = nn_ops.moments(inputs, self._axes, keep_dims=True)
        broadcast = [inputs.get_shape()[i].value if i in self._axes else 1 for i in range(ndims)]

        def param(v):
            return None if v is None else array_ops.reshape(v, broadcast)
        return nn_ops.batch_normalization(inputs, mean, variance, param(self.beta),
                                          param(self.gamma), self.epsilon)

    def compute_output_shape(self, input_shape):
        return as_shape(input_shape)

