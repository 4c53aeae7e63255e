"""Random ops and TF1's seed rules: normal, truncated normal, uniform, shuffle, multinomial.

Each random op draws from a generator kept in the task's ResourceManager under the op's name, so
repeated ``sess.run`` calls give new values while a seeded graph reproduces the same sequence in a
new session. Seeds follow TF1 (``get_seed``): a graph seed makes every op deterministic, an op seed
alone uses the default graph seed, neither is nondeterministic.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     tf.set_random_seed(1)
...     x = tf.random_uniform([2, 3], minval=-1.0, maxval=1.0)
...     with tf.Session() as sess:
...         a = sess.run(x)
...     with tf.Session() as sess:
...         b = sess.run(x)
>>> x.get_shape().as_list(), bool((a == b).all()), bool((abs(a) <= 1).all())
([2, 3], True, True)
"""

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.constant import constant_value
from zps.framework.graph import Tensor, convert_to_tensor, get_default_graph, is_symbolic
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape
from zps.ops import array_ops, math_ops
from zps.ops.op_util import make_op, same_shape

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1


# -- seeds ---------------------------------------------------------------------------------------
def set_random_seed(seed):
    """Set the graph-level seed of the default graph: its random ops become reproducible.

    >>> import zps as tf
    >>> with tf.Graph().as_default() as g:
    ...     tf.set_random_seed(42)
    ...     print(g.seed)
    42
    """
    get_default_graph().seed = seed


def get_seed(op_seed):
    """The ``(seed, seed2)`` pair for a new random op, by TF1's rules.

    Graph seed set: ``op_seed`` defaults to the graph's last op id, so each op gets its own
    reproducible stream. Only ``op_seed`` set: the graph seed is ``DEFAULT_GRAPH_SEED``. Neither:
    ``(None, None)``, a nondeterministic op.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(get_seed(None), get_seed(7))
    (None, None) (87654321, 7)
    """
    graph = get_default_graph()
    if graph.seed is not None:
        if op_seed is None:
            op_seed = graph.version  # the id of the last op created: distinct per op
        seeds = (int(graph.seed) % _MAXINT32, int(op_seed) % _MAXINT32)
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, int(op_seed) % _MAXINT32)
    else:
        return None, None
    # (0, 0) means "nondeterministic" to the kernels, which a seeded graph must never be.
    return (0, _MAXINT32) if seeds == (0, 0) else seeds


# -- helpers shared by the ops ---------------------------------------------------------------------
def _seed_attrs(seed):
    seed1, seed2 = get_seed(seed)
    return {"seed": seed1 or 0, "seed2": seed2 or 0}


def _generator(ctx, op_name, seed, seed2):
    return ctx.resources.generator(op_name, seed, seed2)


def _shape_tensor(shape):
    """A 1-D int32 tensor from a shape given as a list/tuple/TensorShape (ints or scalar tensors)
    or as a 1-D int tensor."""
    if isinstance(shape, Tensor):
        if not shape.dtype.is_integer:
            raise TypeError("A shape tensor must be int32 or int64, got %s (%s)"
                            % (shape.dtype.name, shape.name))
        return shape
    if isinstance(shape, TensorShape):
        if not shape.is_fully_defined():
            raise ValueError("Cannot draw random values of partially known shape %s: give a fully "
                             "defined shape or a shape tensor" % shape)
        shape = shape.as_list()
    if isinstance(shape, list | tuple) and any(is_symbolic(d) for d in shape):
        dims = [array_ops.reshape(convert_to_tensor(d, dtype=_dtypes.int32), [1]) for d in shape]
        return array_ops.concat(dims, 0, name="shape")
    dims = np.asarray(shape)
    if dims.ndim > 1 or (dims.size and dims.dtype.kind not in "iu"):
        raise ValueError("A shape must be a list of ints or a 1-D int tensor, got %r" % (shape,))
    if (dims < 0).any():
        raise ValueError("Dimensions of a shape must be non-negative, got %s" % dims.tolist())
    return convert_to_tensor(dims.reshape(-1).astype(np.int32), name="shape")


def _random_shape(op):
    return array_ops.shape_from_value(op.inputs[0])


def _dims(shape_value):
    dims = tuple(int(d) for d in np.asarray(shape_value).reshape(-1))
    if any(d < 0 for d in dims):
        raise errors.InvalidArgumentError(
            None, None, "Random op shape must be non-negative, got %s" % list(dims))
    return dims


def _float_draw(draw, dims, dtype):
    # numpy draws float32/float64 natively; float16 is drawn in float32 and rounded.
    np_dtype = dtype.as_numpy_dtype
    if np_dtype in (np.float32, np.float64):
        return draw(dims, dtype=np_dtype)
    return draw(dims, dtype=np.float32).astype(np_dtype)


def _float_dtype(dtype, what):
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError("%s needs a floating point dtype (float16, float32 or float64), got %s"
                         % (what, dtype.name))
    return dtype


def _static_scalar(value):
    """``value`` as a Python float when it is known while the graph is built, else None."""
    if is_symbolic(value):
        v = constant_value(value) if isinstance(value, Tensor) else None  # a Variable varies
    else:
        v = value
    if v is None:
        return None
    v = np.asarray(v)
    return float(v) if v.size == 1 and v.dtype.kind in "iuf" else None


def _scale_and_shift(op_type, inputs, attrs, scale, shift, dtype, name, names):
    """The random op ``op_type`` followed by ``* scale + shift``, the whole named ``name``.

    A multiply by 1 or an add of 0 known while the graph is built is left out (dropout's
    ``random_uniform(shape)`` is then a single op, with no extra passes over its output).
    """
    need_mul = _static_scalar(scale) != 1.0
    need_add = _static_scalar(shift) != 0.0
    out = make_op(op_type, inputs, name=None if need_mul or need_add else name, **attrs)
    if need_mul:
        out = math_ops.multiply(out, convert_to_tensor(scale, dtype=dtype, name=names[0]),
                                name=None if need_add else name)
    if need_add:
        out = math_ops.add(out, convert_to_tensor(shift, dtype=dtype, name=names[1]), name=name)
    return out


# -- RandomStandardNormal ------------------------------------------------------------------------
def _standard_normal_kernel(ctx, shape, dtype, seed, seed2, op_name):
    gen = _generator(ctx, op_name, seed, seed2)
    return ctx.xp.asarray(_float_draw(gen.standard_normal, _dims(shape), dtype))


register_op("RandomStandardNormal", dtype=lambda op: op._attrs["dtype"], shape=_random_shape,
            kernel=_standard_normal_kernel, stateful=True, needs_op_name=True, grad=None)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    """Values drawn from a normal distribution ``N(mean, stddev**2)``.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.random_normal([1000], mean=5.0, stddev=0.1, seed=1)
    ...     v = tf.Session().run(x)
    >>> bool(abs(v.mean() - 5.0) < 0.05)
    True
    """
    dtype = _float_dtype(dtype, "random_normal")
    with get_default_graph().name_scope(name or "random_normal") as scope:
        shape_t = _shape_tensor(shape)
        return _scale_and_shift("RandomStandardNormal", [shape_t], dict(dtype=dtype, **_seed_attrs(seed)),
                                stddev, mean, dtype, scope, names=("stddev", "mean"))


# -- TruncatedNormal -----------------------------------------------------------------------------
def _truncated_draw(gen, dims, dtype):
    # TF1's rule: a standard normal value is kept when |x| < 2, otherwise drawn again.
    x = _float_draw(gen.standard_normal, dims, dtype)
    flat = x.reshape(-1)
    redo = np.flatnonzero(np.abs(flat) >= 2.0)
    while redo.size:
        flat[redo] = _float_draw(gen.standard_normal, (redo.size,), dtype)
        redo = redo[np.abs(flat[redo]) >= 2.0]
    return x


def _truncated_normal_kernel(ctx, shape, dtype, seed, seed2, op_name):
    gen = _generator(ctx, op_name, seed, seed2)
    return ctx.xp.asarray(_truncated_draw(gen, _dims(shape), dtype))


register_op("TruncatedNormal", dtype=lambda op: op._attrs["dtype"], shape=_random_shape,
            kernel=_truncated_normal_kernel, stateful=True, needs_op_name=True, grad=None)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    """Normal values with those more than 2 standard deviations from ``mean`` drawn again.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     v = tf.Session().run(tf.truncated_normal([1000], stddev=3.0, seed=1))
    >>> bool(abs(v).max() < 6.0)
    True
    """
    dtype = _float_dtype(dtype, "truncated_normal")
    with get_default_graph().name_scope(name or "truncated_normal") as scope:
        shape_t = _shape_tensor(shape)
        return _scale_and_shift("TruncatedNormal", [shape_t], dict(dtype=dtype, **_seed_attrs(seed)),
                                stddev, mean, dtype, scope, names=("stddev", "mean"))


# -- RandomUniform, RandomUniformInt -------------------------------------------------------------
def _uniform_kernel(ctx, shape, dtype, seed, seed2, op_name):
    gen = _generator(ctx, op_name, seed, seed2)
    return ctx.xp.asarray(_float_draw(gen.random, _dims(shape), dtype))


register_op("RandomUniform", dtype=lambda op: op._attrs["dtype"], shape=_random_shape,
            kernel=_uniform_kernel, stateful=True, needs_op_name=True, grad=None)


def _uniform_int_kernel(ctx, shape, minval, maxval, dtype, seed, seed2, op_name):
    lo, hi = int(minval), int(maxval)
    if lo >= hi:
        raise errors.InvalidArgumentError(None, None, "Need minval < maxval: %d >= %d" % (lo, hi))
    gen = _generator(ctx, op_name, seed, seed2)
    return ctx.xp.asarray(gen.integers(lo, hi, size=_dims(shape), dtype=dtype.as_numpy_dtype))


register_op("RandomUniformInt", dtype=lambda op: op._attrs["dtype"], shape=_random_shape,
            kernel=_uniform_int_kernel, stateful=True, needs_op_name=True, grad=None)

_UNIFORM_DTYPES = (_dtypes.float16, _dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.int64)


def random_uniform(shape, minval=0, maxval=None, dtype=_dtypes.float32, seed=None, name=None):
    """Values drawn uniformly from ``[minval, maxval)`` (``maxval`` defaults to 1 for floats and
    must be given for integer dtypes).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     v = tf.Session().run(tf.random_uniform([100], 0, 10, dtype=tf.int32, seed=3))
    >>> v.dtype.name, bool(v.min() >= 0 and v.max() < 10)
    ('int32', True)
    """
    dtype = _dtypes.as_dtype(dtype)
    if dtype not in _UNIFORM_DTYPES:
        raise ValueError("Invalid dtype %s for random_uniform: use one of %s"
                         % (dtype.name, ", ".join(d.name for d in _UNIFORM_DTYPES)))
    if maxval is None:
        if dtype.is_integer:
            raise ValueError("Must specify maxval for integer dtype %s in random_uniform" % dtype.name)
        maxval = 1
    with get_default_graph().name_scope(name or "random_uniform") as scope:
        shape_t = _shape_tensor(shape)
        if dtype.is_integer:
            lo = convert_to_tensor(minval, dtype=dtype, name="min")
            hi = convert_to_tensor(maxval, dtype=dtype, name="max")
            for what, t in (("minval", lo), ("maxval", hi)):
                if t.get_shape().ndims not in (None, 0):
                    raise ValueError("random_uniform: %s must be a scalar, got shape %s"
                                     % (what, t.get_shape()))
            return make_op("RandomUniformInt", [shape_t, lo, hi], name=scope, dtype=dtype,
                           **_seed_attrs(seed))
        lo, hi = _static_scalar(minval), _static_scalar(maxval)
        if lo is not None and hi is not None:
            scale, shift = hi - lo, lo
        else:
            shift = convert_to_tensor(minval, dtype=dtype, name="min")
            scale = math_ops.subtract(convert_to_tensor(maxval, dtype=dtype, name="max"), shift)
        return _scale_and_shift("RandomUniform", [shape_t], dict(dtype=dtype, **_seed_attrs(seed)),
                                scale, shift, dtype, scope, names=("range", "min"))


# -- RandomShuffle -------------------------------------------------------------------------------
def _shuffle_kernel(ctx, value, seed, seed2, op_name):
    if value.ndim == 0 or value.shape[0] <= 1:
        return value
    perm = _generator(ctx, op_name, seed, seed2).permutation(value.shape[0])
    return value[ctx.xp.asarray(perm)]


register_op("RandomShuffle", shape=same_shape, kernel=_shuffle_kernel, stateful=True,
            needs_op_name=True, grad=None)


def random_shuffle(value, seed=None, name=None):
    """``value`` with its first dimension randomly permuted.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     v = tf.Session().run(tf.random_shuffle([1, 2, 3, 4], seed=5))
    >>> sorted(v.tolist())
    [1, 2, 3, 4]
    """
    value = convert_to_tensor(value, name="value")
    return make_op("RandomShuffle", [value], name=name or "RandomShuffle", **_seed_attrs(seed))


# -- Multinomial ---------------------------------------------------------------------------------
def _multinomial_shape(op):
    logits = op.inputs[0].get_shape()
    if logits.ndims is not None and logits.ndims != 2:
        raise ValueError("multinomial: logits must be 2-D [batch_size, num_classes], got shape %s "
                         "(op '%s')" % (logits, op.name))
    n = constant_value(op.inputs[1])
    batch = logits.as_list()[0] if logits.ndims == 2 else None
    return TensorShape([batch, None if n is None else int(n)])


def _multinomial_kernel(ctx, logits, num_samples, seed, seed2, output_dtype, op_name):
    return categorical_draw(ctx.xp, logits, num_samples, _generator(ctx, op_name, seed, seed2),
                            output_dtype)


def categorical_draw(xp, logits, num_samples, gen, output_dtype):
    """``num_samples`` class ids per row of the 2-D ``logits``, drawn with the numpy Generator
    ``gen`` (shared by Multinomial and StatelessMultinomial)."""
    n = int(num_samples)
    if logits.ndim != 2 or logits.shape[1] == 0 or n < 0:
        raise errors.InvalidArgumentError(
            None, None, "multinomial needs 2-D logits with at least one class and num_samples >= 0, "
            "got logits of shape %s and num_samples %d" % (list(logits.shape), n))
    batch, classes = logits.shape
    # Sample by inverting the unnormalized CDF of softmax(logits) row by row.
    z = logits.astype(np.float64)
    cdf = xp.cumsum(xp.exp(z - z.max(axis=1, keepdims=True)), axis=1)
    u = xp.asarray(gen.random((batch, n))) * cdf[:, -1:]
    out = xp.empty((batch, n), dtype=output_dtype.as_numpy_dtype)
    for i in range(batch):
        out[i] = xp.searchsorted(cdf[i], u[i], side="right")
    return xp.minimum(out, classes - 1, out=out)


register_op("Multinomial", dtype=lambda op: op._attrs["output_dtype"], shape=_multinomial_shape,
            kernel=_multinomial_kernel, stateful=True, needs_op_name=True, grad=None)


def multinomial(logits, num_samples, seed=None, name=None, output_dtype=None):
    """``num_samples`` class indices per row, drawn from ``softmax(logits)`` ([batch, num_samples]).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     s = tf.multinomial([[0.0, -1e9, 0.0]], 50, seed=2)
    ...     v = tf.Session().run(s)
    >>> v.shape, v.dtype.name, 1 in v
    ((1, 50), 'int64', False)
    """
    output_dtype = _dtypes.as_dtype(output_dtype or _dtypes.int64)
    if output_dtype not in (_dtypes.int32, _dtypes.int64):
        raise ValueError("multinomial: output_dtype must be int32 or int64, got %s" % output_dtype.name)
    with get_default_graph().name_scope(name or "multinomial") as scope:
        logits = convert_to_tensor(logits, name="logits")
        if not logits.dtype.is_floating:
            raise TypeError("multinomial: logits must be floating point, got %s" % logits.dtype.name)
        num_samples = convert_to_tensor(num_samples, dtype=_dtypes.int32, name="num_samples")
        return make_op("Multinomial", [logits, num_samples], name=scope, output_dtype=output_dtype,
                       **_seed_attrs(seed))


__all__ = [
    "set_random_seed",
    "get_seed",
    "random_normal",
    "truncated_normal",
    "random_uniform",
    "random_shuffle",
    "multinomial",
]
