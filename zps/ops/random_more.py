"""More of ``tf.random``: ``categorical``, ``gamma``, ``poisson`` (TF1's ``tf.random_gamma``,
``tf.random_poisson``) and the stateless ops (``stateless_uniform``, ``stateless_normal``,
``stateless_truncated_normal``, ``stateless_categorical``, ``fold_in``, ``split``).

Values come from numpy's generators, not TF's Philox streams (see README, "Where zps
deliberately differs from TF1"): shapes, dtypes, ranges and distributions are TF's, the numbers
are not. A stateless op is a deterministic function of its ``seed`` (a shape-[2] int tensor) and
its shape: the same seed gives the same values on every run, in every session and process
(numpy's ``SeedSequence`` of the seed pair), and no state is kept between runs.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     x = tf.random.stateless_uniform([3], seed=[1, 2])
...     sess = tf.Session()
...     a, b = sess.run(x), sess.run(x)
>>> bool((a == b).all()), a.dtype.name
(True, 'float32')
"""

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape
from zps.ops import array_ops, math_ops, special_math_ops
from zps.ops.op_util import broadcast_static, make_op
from zps.ops.random_ops import (
    _dims,
    _float_draw,
    _float_dtype,
    _generator,
    _multinomial_shape,
    _random_shape,
    _seed_attrs,
    _shape_tensor,
    _truncated_draw,
    categorical_draw,
    multinomial,
)

_MASK64 = (1 << 64) - 1


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """``num_samples`` class ids per row of ``logits`` ([batch, classes]), drawn from
    ``softmax(logits)``: ``tf.multinomial`` under its TF 1.13+ name (``dtype``: int64 default)."""
    return multinomial(logits, num_samples, seed=seed, name=name, output_dtype=dtype)


# -- RandomGamma ---------------------------------------------------------------------------------
def _with_param_shape(op):
    # [shape..., param shape...]
    dims = _random_shape(op)
    param = op.inputs[1].get_shape()
    if dims.ndims is None or param.ndims is None:
        return TensorShape(None)
    return dims.concatenate(param)


def _gamma_kernel(ctx, shape, alpha, seed, seed2, op_name):
    gen = _generator(ctx, op_name, seed, seed2)
    dims = _dims(shape) + tuple(alpha.shape)
    return ctx.xp.asarray(gen.standard_gamma(np.broadcast_to(alpha.astype(np.float64), dims))
                          .astype(alpha.dtype))


def _gamma_grad(op, grad):
    # TF's _RandomGammaGrad: the implicit reparameterization gradient d sample / d alpha
    # = -(dP/da)(a, x) / (dP/dx)(a, x), P the regularized lower incomplete gamma function (dP/da
    # TF's IgammaGradA, zps/ops/special_math_ops.py; dP/dx = x**(a-1) e**-x / Gamma(a)), summed
    # over the sample dimensions.
    num_sample_dims = op.inputs[0].get_shape()[0].value
    if num_sample_dims is None:
        raise ValueError("The gradient of random_gamma needs a shape of known length (op '%s')"
                         % op.name)
    x = op.outputs[0]
    a = array_ops.reshape(op.inputs[1], [1] * num_sample_dims
                          + op.inputs[1].get_shape().as_list()) * array_ops.ones_like(x)
    dp_dx = math_ops.exp((a - 1.0) * math_ops.log(x) - x - special_math_ops.lgamma(a))
    partial = -make_op("IgammaGradA", [a, x]) / dp_dx
    return [None, math_ops.reduce_sum(grad * partial, axis=list(range(num_sample_dims)))]


register_op("RandomGamma", dtype=lambda op: op.inputs[1].dtype, shape=_with_param_shape,
            kernel=_gamma_kernel, stateful=True, needs_op_name=True, grad=_gamma_grad)


def random_gamma(shape, alpha, beta=None, dtype=_dtypes.float32, seed=None, name=None):
    """Gamma(``alpha``, rate ``beta``) samples, ``shape + broadcast(alpha, beta).shape``: for
    each of ``shape``, one sample per parameter pair. Differentiable with respect to ``alpha``
    (implicit reparameterization, as TF) and ``beta``; values are at least the dtype's tiny.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     g = tf.random.gamma([1000], alpha=[1.0, 9.0], beta=2.0, seed=1)
    ...     v = tf.Session().run(g)
    >>> v.shape, [round(float(m), 1) for m in v.mean(axis=0)]   # means alpha / beta
    ((1000, 2), [0.5, 4.5])
    """
    dtype = _float_dtype(dtype, "random_gamma")
    with get_default_graph().name_scope(name or "random_gamma"):
        shape_t = _shape_tensor(shape)
        alpha = convert_to_tensor(alpha, dtype=dtype, name="alpha")
        beta = convert_to_tensor(1.0 if beta is None else beta, dtype=dtype, name="beta")
        broadcast_static(alpha.get_shape(), beta.get_shape())   # refuses incompatible shapes
        alpha_b = alpha + array_ops.zeros_like(beta)
        sample = make_op("RandomGamma", [shape_t, alpha_b], **_seed_attrs(seed)) / beta
        return math_ops.maximum(np.finfo(dtype.as_numpy_dtype).tiny, sample)


# -- RandomPoissonV2 -----------------------------------------------------------------------------
def _poisson_kernel(ctx, shape, rate, seed, seed2, dtype, op_name):
    gen = _generator(ctx, op_name, seed, seed2)
    dims = _dims(shape) + tuple(rate.shape)
    lam = np.broadcast_to(rate.astype(np.float64), dims)
    if (lam < 0).any():
        raise errors.InvalidArgumentError(None, None, "random_poisson: lam must be >= 0")
    return ctx.xp.asarray(gen.poisson(lam).astype(dtype.as_numpy_dtype))


register_op("RandomPoissonV2", dtype=lambda op: op._attrs["dtype"], shape=_with_param_shape,
            kernel=_poisson_kernel, stateful=True, needs_op_name=True, grad=None)

_POISSON_DTYPES = (_dtypes.float16, _dtypes.float32, _dtypes.float64, _dtypes.int32,
                   _dtypes.int64)


def random_poisson(lam, shape, dtype=_dtypes.float32, seed=None, name=None):
    """Poisson(``lam``) samples, ``shape + lam.shape`` (one per rate for each of ``shape``), of
    ``dtype`` (float or int).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     v = tf.Session().run(tf.random.poisson([2.0, 30.0], [2000], seed=3))
    >>> v.shape, [round(float(m)) for m in v.mean(axis=0)]
    ((2000, 2), [2, 30])
    """
    dtype = _dtypes.as_dtype(dtype)
    if dtype not in _POISSON_DTYPES:
        raise TypeError("random_poisson: dtype must be one of %s, got %s"
                        % (", ".join(d.name for d in _POISSON_DTYPES), dtype.name))
    with get_default_graph().name_scope(name or "random_poisson"):
        shape_t = _shape_tensor(shape)
        lam = convert_to_tensor(lam, name="lam")
        if not (lam.dtype.is_floating or lam.dtype.is_integer):
            raise TypeError("random_poisson: lam must be numeric, got %s" % lam.dtype.name)
        return make_op("RandomPoissonV2", [shape_t, lam], dtype=dtype, **_seed_attrs(seed))


# -- stateless ops ---------------------------------------------------------------------------------
def _seed_generator(seed):
    seed = np.asarray(seed).reshape(-1)
    if seed.shape != (2,):
        raise errors.InvalidArgumentError(None, None, "seed must have shape [2], not %s"
                                          % list(np.asarray(seed).shape))
    return np.random.default_rng([int(s) & _MASK64 for s in seed.tolist()])


def _stateless_float_kernel(draw):
    def kernel(ctx, shape, seed, dtype):
        return ctx.xp.asarray(draw(_seed_generator(seed), _dims(shape), dtype))
    return kernel


def _stateless_int_kernel(ctx, shape, seed, minval, maxval, dtype):
    gen, dims = _seed_generator(seed), _dims(shape)
    lo, hi = int(minval), int(maxval)
    if lo >= hi:
        raise errors.InvalidArgumentError(None, None, "Need minval < maxval: %d >= %d" % (lo, hi))
    return ctx.xp.asarray(gen.integers(lo, hi, size=dims, dtype=dtype.as_numpy_dtype))


def _stateless_full_int_kernel(ctx, shape, seed, dtype):
    info = np.iinfo(dtype.as_numpy_dtype)
    return ctx.xp.asarray(_seed_generator(seed).integers(
        info.min, info.max, size=_dims(shape), dtype=dtype.as_numpy_dtype, endpoint=True))


for _op_type, _kernel in (
        ("StatelessRandomUniform", _stateless_float_kernel(
            lambda gen, dims, dtype: _float_draw(gen.random, dims, dtype))),
        ("StatelessRandomNormal", _stateless_float_kernel(
            lambda gen, dims, dtype: _float_draw(gen.standard_normal, dims, dtype))),
        ("StatelessTruncatedNormal", _stateless_float_kernel(_truncated_draw)),
        ("StatelessRandomUniformInt", _stateless_int_kernel),
        ("StatelessRandomUniformFullInt", _stateless_full_int_kernel)):
    register_op(_op_type, dtype=lambda op: op._attrs["dtype"], shape=_random_shape,
                kernel=_kernel, grad=None)


def _stateless_multinomial_kernel(ctx, logits, num_samples, seed, output_dtype):
    return categorical_draw(ctx.xp, logits, num_samples, _seed_generator(seed), output_dtype)


register_op("StatelessMultinomial", dtype=lambda op: op._attrs["output_dtype"],
            shape=_multinomial_shape, kernel=_stateless_multinomial_kernel,
            grad=None)


def _seed_tensor(seed):
    seed = convert_to_tensor(seed, name="seed")
    if seed.dtype.base_dtype not in (_dtypes.int32, _dtypes.int64):
        raise TypeError("seed must be an int32 or int64 tensor, got %s" % seed.dtype.name)
    if not seed.get_shape().is_compatible_with([2]):
        raise ValueError("seed must have shape [2], not %s" % seed.get_shape())
    return seed


def _stateless_float(op_type, what, shape, seed, scale, shift, dtype, name):
    dtype = _float_dtype(dtype, what)
    with get_default_graph().name_scope(name or what):
        out = make_op(op_type, [_shape_tensor(shape), _seed_tensor(seed)], dtype=dtype)
        return out * convert_to_tensor(scale, dtype=dtype) + convert_to_tensor(shift, dtype=dtype)


def stateless_random_uniform(shape, seed, minval=0, maxval=None, dtype=_dtypes.float32,
                             name=None):
    """Uniform values in ``[minval, maxval)`` (``maxval`` defaults to 1 for floats), a
    deterministic function of ``seed`` (shape [2]). Integer dtypes need ``maxval``, or
    ``minval=None, maxval=None`` for the dtype's full range."""
    dtype = _dtypes.as_dtype(dtype)
    if dtype.is_integer:
        with get_default_graph().name_scope(name or "stateless_random_uniform"):
            shape_t, seed = _shape_tensor(shape), _seed_tensor(seed)
            if minval is None and maxval is None:
                return make_op("StatelessRandomUniformFullInt", [shape_t, seed], dtype=dtype)
            if minval is None or maxval is None:
                raise ValueError("Must specify maxval (and minval) for integer dtype %s in "
                                 "stateless_random_uniform, or neither for the full range"
                                 % dtype.name)
            return make_op("StatelessRandomUniformInt",
                           [shape_t, seed, convert_to_tensor(minval, dtype=dtype, name="min"),
                            convert_to_tensor(maxval, dtype=dtype, name="max")], dtype=dtype)
    minval = 0 if minval is None else minval
    maxval = 1 if maxval is None else maxval
    with get_default_graph().name_scope(name or "stateless_random_uniform"):
        lo = convert_to_tensor(minval, dtype=_float_dtype(dtype, "stateless_random_uniform"),
                               name="min")
        hi = convert_to_tensor(maxval, dtype=dtype, name="max")
        return _stateless_float("StatelessRandomUniform", "stateless_random_uniform", shape,
                                seed, hi - lo, lo, dtype, None)


def stateless_random_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_dtypes.float32,
                            name=None):
    """Normal ``N(mean, stddev**2)`` values, a deterministic function of ``seed`` (shape [2]).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     a = tf.random.stateless_normal([4], seed=[7, 8])
    ...     b = tf.random.stateless_normal([4], seed=[7, 8])
    ...     c = tf.random.stateless_normal([4], seed=[7, 9])
    ...     va, vb, vc = tf.Session().run([a, b, c])
    >>> bool((va == vb).all()), bool((va == vc).any())
    (True, False)
    """
    return _stateless_float("StatelessRandomNormal", "stateless_random_normal", shape, seed,
                            stddev, mean, dtype, name)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_dtypes.float32,
                               name=None):
    """Normal values with those more than 2 standard deviations from ``mean`` drawn again, a
    deterministic function of ``seed`` (shape [2])."""
    return _stateless_float("StatelessTruncatedNormal", "stateless_truncated_normal", shape, seed,
                            stddev, mean, dtype, name)


def stateless_categorical(logits, num_samples, seed, dtype=_dtypes.int64, name=None):
    """``num_samples`` class ids per row of ``logits`` ([batch, classes]) drawn from
    ``softmax(logits)``, a deterministic function of ``seed`` (shape [2])."""
    dtype = _dtypes.as_dtype(dtype)
    if dtype not in (_dtypes.int32, _dtypes.int64):
        raise ValueError("stateless_categorical: dtype must be int32 or int64, got %s"
                         % dtype.name)
    with get_default_graph().name_scope(name or "stateless_categorical"):
        logits = convert_to_tensor(logits, name="logits")
        if not logits.dtype.is_floating:
            raise TypeError("stateless_categorical: logits must be floating point, got %s"
                            % logits.dtype.name)
        num_samples = convert_to_tensor(num_samples, dtype=_dtypes.int32, name="num_samples")
        return make_op("StatelessMultinomial", [logits, num_samples, _seed_tensor(seed)],
                       output_dtype=dtype)


def split(seed, num=2):
    """``num`` new seeds ([num, 2], the seed's dtype) derived deterministically from ``seed``
    for the stateless ops."""
    seed = _seed_tensor(seed)
    return stateless_random_uniform([num, 2], seed, minval=None, maxval=None, dtype=seed.dtype)


def fold_in(seed, data):
    """A new seed derived deterministically from ``seed`` and the integer ``data``:
    ``[a number drawn from seed, data]`` (TF's construction)."""
    seed = _seed_tensor(seed)
    data = convert_to_tensor(data, dtype=seed.dtype, name="data")
    first = stateless_random_uniform([], seed, minval=None, maxval=None, dtype=seed.dtype)
    return array_ops.stack([first, data])


__all__ = ["categorical", "random_gamma", "random_poisson", "stateless_random_uniform",
           "stateless_random_normal", "stateless_truncated_normal", "stateless_categorical",
           "split", "fold_in"]
