"""Initializers: objects ``init(shape, dtype=None, partition_info=None) -> Tensor`` (TF1's).

``get_variable`` calls them with the variable's shape and dtype; they can also be called directly.
Exported under TF1's names (``tf.zeros_initializer``, ``tf.glorot_uniform_initializer`` ...) and in
the ``tf.initializers`` namespace (``tf.initializers.he_normal()`` ...).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     init = tf.constant_initializer([1.0, 2.0])
...     print(tf.Session().run(init([2, 2])).tolist())
[[1.0, 2.0], [2.0, 2.0]]
"""

import math
import types

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework.constant import _check_lossless, constant
from zps.framework.graph import Tensor, numpy_value
from zps.framework.tensor_shape import as_shape
from zps.ops import array_ops, linalg_ops, math_ops, random_ops, variables

# Above this many elements a constant filled with one value is built as a Fill op, so the graph
# (which is serialized to other tasks) stays small, as TF1 keeps its constants compact.
_LARGE_CONSTANT = 1000


def _dims(shape, what):
    """``shape`` (list, tuple, TensorShape) as a list of ints; initializers need a known shape."""
    s = as_shape(shape)
    if not s.is_fully_defined():
        raise ValueError("%s needs a fully defined shape, got %s" % (what, s))
    return s.as_list()


def _assert_float_dtype(dtype):
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError("Expected floating point type, got %s." % dtype.name)
    return dtype


def _compute_fans(shape):
    """(fan_in, fan_out) of a weight shape: ``[in, out]`` for matrices, and for convolution
    kernels ``[..., in_depth, out_depth]`` times the receptive field (product of the leading dims)."""
    if len(shape) < 1:
        fan_in = fan_out = 1
    elif len(shape) == 1:
        fan_in = fan_out = shape[0]
    elif len(shape) == 2:
        fan_in, fan_out = shape
    else:
        receptive_field = int(np.prod(shape[:-2]))
        fan_in = shape[-2] * receptive_field
        fan_out = shape[-1] * receptive_field
    return int(fan_in), int(fan_out)


class Initializer:
    """Base class of initializers: ``__call__(shape, dtype=None, partition_info=None) -> Tensor``."""

    def __call__(self, shape, dtype=None, partition_info=None):
        raise NotImplementedError

    def get_config(self):
        """The constructor arguments as a JSON-serializable dict."""
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class Zeros(Initializer):
    """Tensors of zeros."""

    def __init__(self, dtype=_dtypes.float32):
        self.dtype = _dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return _filled(0, shape, dtype or self.dtype, "zeros_initializer")

    def get_config(self):
        return {"dtype": self.dtype.name}


class Ones(Initializer):
    """Tensors of ones."""

    def __init__(self, dtype=_dtypes.float32):
        self.dtype = _dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return _filled(1, shape, dtype or self.dtype, "ones_initializer")

    def get_config(self):
        return {"dtype": self.dtype.name}


def _filled(value, shape, dtype, what):
    dtype = _dtypes.as_dtype(dtype)
    if isinstance(shape, Tensor):  # a shape only known when the graph runs
        return array_ops.fill(shape, constant(value, dtype=dtype))
    return _constant_of_shape(value, _dims(shape, what), dtype, False, what)


class Constant(Initializer):
    """Tensors holding ``value``, laid out in the requested shape by TF1's rules.

    ``value`` (scalar, list, tuple or ndarray) fills the tensor in row-major order; when it has fewer
    elements than the shape, its last element repeats; more elements is a ValueError.
    ``verify_shape=True`` instead requires ``value``'s shape to equal the requested one.
    """

    def __init__(self, value=0, dtype=_dtypes.float32, verify_shape=False):
        if not (np.isscalar(value) or isinstance(value, list | tuple | np.ndarray)):
            raise TypeError("Invalid type for initial value: %s (expected Python scalar, list or "
                            "tuple of values, or numpy.ndarray)." % type(value))
        self.value = value
        self.dtype = _dtypes.as_dtype(dtype)
        self._verify_shape = verify_shape

    def __call__(self, shape, dtype=None, partition_info=None, verify_shape=None):
        verify = self._verify_shape if verify_shape is None else verify_shape
        return _constant_of_shape(self.value, _dims(shape, "constant_initializer"),
                                  _dtypes.as_dtype(dtype or self.dtype), verify,
                                  "constant_initializer")

    def get_config(self):
        return {"value": self.value, "dtype": self.dtype.name}


def _constant_of_shape(value, dims, dtype, verify_shape, what):
    try:
        arr = numpy_value(value, dtype)
    except (TypeError, ValueError) as e:
        raise TypeError("%s: cannot make a %s tensor from %r: %s" % (what, dtype.name, value, e)) from None
    _check_lossless(value, arr, dtype)
    if verify_shape and arr.shape != tuple(dims):
        raise TypeError("Expected Tensor's shape: %s, got %s." % (tuple(dims), arr.shape))
    size = int(np.prod(dims, dtype=np.int64))
    if arr.size > size:
        raise ValueError("Too many elements provided. Needed at most %d, but received %d (%s of "
                         "shape %s)" % (size, arr.size, what, dims))
    if arr.size == size:
        return constant(arr.reshape(dims), dtype=dtype)
    last = arr.reshape(-1)[-1] if arr.size else numpy_value(0, dtype)[()]
    if arr.size <= 1 and size > _LARGE_CONSTANT:
        return array_ops.fill(dims, constant(last, dtype=dtype))
    flat = np.empty(size, dtype=arr.dtype)
    flat[:arr.size] = arr.reshape(-1)
    flat[arr.size:] = last
    return constant(flat.reshape(dims), dtype=dtype)


class RandomUniform(Initializer):
    """Values drawn uniformly from ``[minval, maxval)`` (see ``random_uniform``)."""

    def __init__(self, minval=0, maxval=None, seed=None, dtype=_dtypes.float32):
        self.minval = minval
        self.maxval = maxval
        self.seed = seed
        self.dtype = _dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_uniform(shape, self.minval, self.maxval, dtype or self.dtype,
                                         seed=self.seed)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed,
                "dtype": self.dtype.name}


class RandomNormal(Initializer):
    """Values drawn from ``N(mean, stddev**2)``."""

    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=_dtypes.float32):
        self.mean = mean
        self.stddev = stddev
        self.seed = seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_normal(shape, self.mean, self.stddev, dtype or self.dtype,
                                        seed=self.seed)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed,
                "dtype": self.dtype.name}


class TruncatedNormal(RandomNormal):
    """Normal values with those beyond 2 standard deviations from the mean drawn again."""

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.truncated_normal(shape, self.mean, self.stddev, dtype or self.dtype,
                                           seed=self.seed)


class UniformUnitScaling(Initializer):
    """Uniform in ``±factor * sqrt(3 / input_size)``, input_size the product of all dims but the
    last (deprecated in TF1 in favour of ``variance_scaling_initializer(distribution="uniform")``)."""

    def __init__(self, factor=1.0, seed=None, dtype=_dtypes.float32):
        self.factor = factor
        self.seed = seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        scale_shape = _dims(partition_info.full_shape if partition_info is not None else shape,
                            "uniform_unit_scaling_initializer")
        input_size = max(float(np.prod(scale_shape[:-1])), 1.0)
        limit = math.sqrt(3 / input_size) * self.factor
        return random_ops.random_uniform(shape, -limit, limit, dtype or self.dtype, seed=self.seed)

    def get_config(self):
        return {"factor": self.factor, "seed": self.seed, "dtype": self.dtype.name}


# scipy.stats.truncnorm.std(a=-2, b=2, loc=0., scale=1.): the stddev of a standard normal cut at
# ±2, which truncated_normal values are divided by so their variance is the one asked for.
_TRUNCATED_STDDEV = 0.87962566103423978


class VarianceScaling(Initializer):
    """Random values whose variance is ``scale / n``, n the fan_in, fan_out or their average.

    distribution "truncated_normal" (or "normal", as in TF1): truncated normal with stddev
    ``sqrt(scale / n) / 0.8796...``; "untruncated_normal": normal with stddev ``sqrt(scale / n)``;
    "uniform": uniform in ``±sqrt(3 * scale / n)``. For convolution kernels the fans include the
    receptive field (the product of the spatial dims).
    """

    _MODES = ("fan_in", "fan_out", "fan_avg")
    _DISTRIBUTIONS = ("normal", "uniform", "truncated_normal", "untruncated_normal")

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 dtype=_dtypes.float32):
        if scale <= 0.0:
            raise ValueError("`scale` must be positive float, got %r." % (scale,))
        if mode not in self._MODES:
            raise ValueError("Invalid `mode` argument: %r (use one of %s)" % (mode, ", ".join(self._MODES)))
        distribution = distribution.lower()
        if distribution not in self._DISTRIBUTIONS:
            raise ValueError("Invalid `distribution` argument: %r (use one of %s)"
                             % (distribution, ", ".join(self._DISTRIBUTIONS)))
        self.scale = scale
        self.mode = mode
        self.distribution = distribution
        self.seed = seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = _assert_float_dtype(dtype or self.dtype)
        what = type(self).__name__
        scale_shape = _dims(partition_info.full_shape if partition_info is not None else shape, what)
        fan_in, fan_out = _compute_fans(scale_shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution in ("normal", "truncated_normal"):
            stddev = math.sqrt(scale) / _TRUNCATED_STDDEV
            return random_ops.truncated_normal(shape, 0.0, stddev, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(shape, 0.0, math.sqrt(scale), dtype, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(shape, -limit, limit, dtype, seed=self.seed)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed, "dtype": self.dtype.name}


class GlorotUniform(VarianceScaling):
    """Uniform in ``±sqrt(6 / (fan_in + fan_out))`` (Glorot & Bengio, 2010)."""

    def __init__(self, seed=None, dtype=_dtypes.float32):
        super().__init__(scale=1.0, mode="fan_avg", distribution="uniform", seed=seed, dtype=dtype)

    def get_config(self):
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotNormal(VarianceScaling):
    """Truncated normal with stddev ``sqrt(2 / (fan_in + fan_out))`` (Glorot & Bengio, 2010)."""

    def __init__(self, seed=None, dtype=_dtypes.float32):
        super().__init__(scale=1.0, mode="fan_avg", distribution="truncated_normal", seed=seed,
                         dtype=dtype)

    def get_config(self):
        return {"seed": self.seed, "dtype": self.dtype.name}


class Identity(Initializer):
    """``gain`` times the identity matrix (2-D shapes only)."""

    def __init__(self, gain=1.0, dtype=_dtypes.float32):
        self.gain = gain
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        full = _dims(partition_info.full_shape if partition_info is not None else shape,
                     "identity initializer")
        if len(full) != 2:
            raise ValueError("Identity matrix initializer can only be used for 2D matrices, got "
                             "shape %s." % full)
        dtype = _assert_float_dtype(dtype or self.dtype)
        return constant(self.gain * np.eye(*full), dtype=dtype)

    def get_config(self):
        return {"gain": self.gain, "dtype": self.dtype.name}


class Orthogonal(Initializer):
    """``gain`` times a random orthogonal matrix (Saxe et al., 2014): the Q of the QR
    decomposition of a standard normal matrix, its columns' signs those of R's diagonal.

    A shape of rank > 2 is made as the matrix ``[product of all dims but the last, last]`` then
    reshaped; with fewer rows than columns the rows are the orthonormal ones.

    >>> import numpy as np, zps as tf
    >>> with tf.Graph().as_default():
    ...     w = tf.Session().run(tf.orthogonal_initializer(gain=2.0, seed=1)([5, 3]))
    ...     print(np.allclose(w.T @ w, 4 * np.eye(3), atol=1e-5))
    True
    """

    def __init__(self, gain=1.0, seed=None, dtype=_dtypes.float32):
        self.gain = gain
        self.seed = seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = _assert_float_dtype(dtype or self.dtype)
        dims = _dims(shape, "orthogonal_initializer")
        if len(dims) < 2:
            raise ValueError("The tensor to initialize, specified by argument `shape` must be at "
                             "least two-dimensional. Received shape=%s" % dims)
        rows, cols = int(np.prod(dims[:-1])), dims[-1]
        a = random_ops.random_normal([max(rows, cols), min(rows, cols)], dtype=dtype,
                                     seed=self.seed)
        q, r = linalg_ops.qr(a)
        q = q * math_ops.sign(array_ops.diag_part(r))   # unique Q: R's diagonal made positive
        if rows < cols:
            q = array_ops.transpose(q)
        return self.gain * array_ops.reshape(q, dims)

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed, "dtype": self.dtype.name}


def lecun_normal(seed=None):
    """Truncated normal with stddev ``sqrt(1 / fan_in)``."""
    return VarianceScaling(scale=1.0, mode="fan_in", distribution="truncated_normal", seed=seed)


def lecun_uniform(seed=None):
    """Uniform in ``±sqrt(3 / fan_in)``."""
    return VarianceScaling(scale=1.0, mode="fan_in", distribution="uniform", seed=seed)


def he_normal(seed=None):
    """Truncated normal with stddev ``sqrt(2 / fan_in)`` (He et al., 2015)."""
    return VarianceScaling(scale=2.0, mode="fan_in", distribution="truncated_normal", seed=seed)


def he_uniform(seed=None):
    """Uniform in ``±sqrt(6 / fan_in)`` (He et al., 2015)."""
    return VarianceScaling(scale=2.0, mode="fan_in", distribution="uniform", seed=seed)


# TF1's top-level names.
zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_uniform_initializer = RandomUniform
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
uniform_unit_scaling_initializer = UniformUnitScaling
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal
orthogonal_initializer = Orthogonal

# ``tf.initializers``: TF1's namespace module of initializers (and variable-initializer ops).
initializers = types.ModuleType("zps.initializers", "TF1's tf.initializers namespace.")
initializers.__dict__.update(
    zeros=Zeros, ones=Ones, constant=Constant, random_uniform=RandomUniform,
    random_normal=RandomNormal, truncated_normal=TruncatedNormal,
    uniform_unit_scaling=UniformUnitScaling, variance_scaling=VarianceScaling,
    glorot_uniform=GlorotUniform, glorot_normal=GlorotNormal, identity=Identity,
    orthogonal=Orthogonal,
    lecun_normal=lecun_normal, lecun_uniform=lecun_uniform, he_normal=he_normal,
    he_uniform=he_uniform, global_variables=variables.global_variables_initializer,
    local_variables=variables.local_variables_initializer,
    variables=variables.variables_initializer)

__all__ = [
    "zeros_initializer",
    "ones_initializer",
    "constant_initializer",
    "random_uniform_initializer",
    "random_normal_initializer",
    "truncated_normal_initializer",
    "uniform_unit_scaling_initializer",
    "variance_scaling_initializer",
    "glorot_uniform_initializer",
    "glorot_normal_initializer",
    "orthogonal_initializer",
    "initializers",
]
