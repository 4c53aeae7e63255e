"""Learning-rate schedules driven by the global step.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     step = tf.Variable(20, dtype=tf.int64, trainable=False)
...     lr = tf.train.exponential_decay(0.1, step, decay_steps=10, decay_rate=0.5)
...     with tf.Session() as sess:
...         sess.run(step.initializer)
...         print(round(float(sess.run(lr)), 6))
0.025
"""

import math

from zps.framework import dtypes
from zps.framework.graph import convert_to_tensor, get_default_graph, is_symbolic
from zps.ops import array_ops, math_ops, random_ops


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """``learning_rate * decay_rate ** (global_step / decay_steps)`` (floored if ``staircase``)."""
    return _step_decay("ExponentialDecay", "exponential_decay", learning_rate, global_step, decay_steps,
                       decay_rate, staircase, name, lambda lr, rate, p, scope: math_ops.multiply(
                           lr, math_ops.pow(rate, p), name=scope))


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """``learning_rate * exp(-decay_rate * global_step / decay_steps)`` (floored if
    ``staircase``)."""
    return _step_decay("NaturalExpDecay", "natural_exp_decay", learning_rate, global_step, decay_steps,
                       decay_rate, staircase, name, lambda lr, rate, p, scope: math_ops.multiply(
                           lr, math_ops.exp(-rate * p), name=scope))


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                       name=None):
    """``learning_rate / (1 + decay_rate * global_step / decay_steps)`` (floored if
    ``staircase``)."""
    return _step_decay("InverseTimeDecay", "inverse_time_decay", learning_rate, global_step, decay_steps,
                       decay_rate, staircase, name, lambda lr, rate, p, scope: math_ops.divide(
                           lr, 1.0 + rate * p, name=scope))


def _step_decay(default_name, what, learning_rate, global_step, decay_steps, decay_rate,
                staircase, name, decayed):
    # The schedules of ``p = global_step / decay_steps`` (floored if ``staircase``):
    # ``decayed(lr, decay_rate, p, scope)``, every value in the learning rate's dtype.
    with get_default_graph().name_scope(name or default_name) as scope:
        lr, dtype, step = _step_and_rate(learning_rate, global_step, what)
        p = step / math_ops.cast(decay_steps, dtype)
        if staircase:
            p = math_ops.floor(p)
        return decayed(lr, math_ops.cast(decay_rate, dtype), p, scope)


def _step_and_rate(learning_rate, global_step, what):
    if global_step is None:
        raise ValueError("global_step is required for %s." % what)
    learning_rate = convert_to_tensor(learning_rate, name="learning_rate")
    return learning_rate, learning_rate.dtype, math_ops.cast(global_step, learning_rate.dtype)


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001, power=1.0,
                     cycle=False, name=None):
    """From ``learning_rate`` to ``end_learning_rate`` over ``decay_steps`` along
    ``(1 - step / decay_steps) ** power``, then ``end_learning_rate``; with ``cycle`` the decay
    restarts over the next multiple of ``decay_steps`` (TF1's rule: the multiple is
    ``ceil(step / decay_steps)``, 1 at step 0)."""
    with get_default_graph().name_scope(name or "PolynomialDecay") as scope:
        lr, dtype, step = _step_and_rate(learning_rate, global_step, "polynomial_decay")
        end = math_ops.cast(end_learning_rate, dtype)
        decay_steps = math_ops.cast(decay_steps, dtype)
        if cycle:
            at_zero = math_ops.cast(math_ops.equal(step, 0.0), dtype)
            multiplier = at_zero + (1.0 - at_zero) * math_ops.ceil(step / decay_steps)
            decay_steps = decay_steps * multiplier
        else:
            step = math_ops.minimum(step, decay_steps)
        p = step / decay_steps
        return math_ops.add((lr - end) * math_ops.pow(1.0 - p, math_ops.cast(power, dtype)), end,
                            name=scope)


def piecewise_constant(x, boundaries, values, name=None):
    """``values[0]`` while ``x <= boundaries[0]``, ``values[i]`` while ``boundaries[i - 1] < x <=
    boundaries[i]``, and ``values[-1]`` once ``x > boundaries[-1]`` (TF1's; ``x`` is usually the
    global step)."""
    if len(values) != len(boundaries) + 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with get_default_graph().name_scope(name or "PiecewiseConstant") as scope:
        x = convert_to_tensor(x, name="x")
        values = [convert_to_tensor(v) for v in values]
        dtype = values[0].dtype
        for v in values[1:]:
            if v.dtype != dtype:
                raise ValueError("Values must have elements all with the same dtype (%s vs %s)."
                                 % (dtype.name, v.dtype.name))
        if any(v.get_shape().ndims not in (None, 0) for v in values):
            raise ValueError("piecewise_constant's values must be scalars")
        bounds = array_ops.stack([math_ops.cast(b, x.dtype) if is_symbolic(b) else
                                  convert_to_tensor(b, dtype=x.dtype) for b in boundaries])
        index = math_ops.reduce_sum(math_ops.cast(math_ops.greater(x, bounds), dtypes.int32))
        return array_ops.gather(array_ops.stack(values), index, name=scope)


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """``learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) /
    decay_steps)) + alpha)``: half a cosine down to ``alpha * learning_rate``."""
    with get_default_graph().name_scope(name or "CosineDecay") as scope:
        lr, dtype, step = _step_and_rate(learning_rate, global_step, "cosine_decay")
        decay_steps = math_ops.cast(decay_steps, dtype)
        fraction = math_ops.minimum(step, decay_steps) / decay_steps
        cosine = 0.5 * (1.0 + math_ops.cos(math.pi * fraction))
        alpha = math_ops.cast(alpha, dtype)
        return math_ops.multiply(lr, (1.0 - alpha) * cosine + alpha, name=scope)


def cosine_decay_restarts(learning_rate, global_step, first_decay_steps, t_mul=2.0, m_mul=1.0,
                          alpha=0.0, name=None):
    """SGDR (Loshchilov & Hutter): cosine decays over periods of ``first_decay_steps``, each
    ``t_mul`` times longer than the last and restarting at ``m_mul`` times the last peak."""
    with get_default_graph().name_scope(name or "SGDRDecay") as scope:
        lr, dtype, step = _step_and_rate(learning_rate, global_step, "cosine_decay_restarts")
        fraction = step / math_ops.cast(first_decay_steps, dtype)
        if float(t_mul) == 1.0:
            restart = math_ops.floor(fraction)
            fraction = fraction - restart
        else:
            t = math_ops.cast(t_mul, dtype)
            restart = math_ops.floor(math_ops.log(1.0 - fraction * (1.0 - t)) / math_ops.log(t))
            done = (1.0 - math_ops.pow(t, restart)) / (1.0 - t)
            fraction = (fraction - done) / math_ops.pow(t, restart)
        peak = math_ops.pow(math_ops.cast(m_mul, dtype), restart)
        cosine = 0.5 * peak * (1.0 + math_ops.cos(math.pi * fraction))
        alpha = math_ops.cast(alpha, dtype)
        return math_ops.multiply(lr, (1.0 - alpha) * cosine + alpha, name=scope)


def linear_cosine_decay(learning_rate, global_step, decay_steps, num_periods=0.5, alpha=0.0,
                        beta=0.001, name=None):
    """``learning_rate * ((alpha + (decay_steps - s) / decay_steps) * 0.5 * (1 + cos(pi * 2 *
    num_periods * s / decay_steps)) + beta)`` with ``s = min(step, decay_steps)`` (Bello et al.)."""
    return _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta,
                          name or "LinearCosineDecay", "linear_cosine_decay")


def noisy_linear_cosine_decay(learning_rate, global_step, decay_steps, initial_variance=1.0,
                              variance_decay=0.55, num_periods=0.5, alpha=0.0, beta=0.001,
                              name=None):
    """``linear_cosine_decay`` with Gaussian noise on its linear part: ``learning_rate * ((alpha
    + linear + eps) * cosine + beta)``, ``eps`` drawn anew at each evaluation with variance
    ``initial_variance / (1 + s) ** variance_decay`` (``s = min(step, decay_steps)``)."""
    return _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta,
                          name or "NoisyLinearCosineDecay", "noisy_linear_cosine_decay",
                          noise=(initial_variance, variance_decay))


def _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta, name, what,
                   noise=None):
    with get_default_graph().name_scope(name) as scope:
        lr, dtype, step = _step_and_rate(learning_rate, global_step, what)
        decay_steps = math_ops.cast(decay_steps, dtype)
        step = math_ops.minimum(step, decay_steps)
        linear = (decay_steps - step) / decay_steps
        if noise is not None:
            initial_variance, variance_decay = noise
            variance = math_ops.cast(initial_variance, dtype) / math_ops.pow(
                1.0 + step, math_ops.cast(variance_decay, dtype))
            linear = linear + random_ops.random_normal(
                array_ops.shape(linear), stddev=math_ops.sqrt(variance), dtype=dtype)
        fraction = 2.0 * math_ops.cast(num_periods, dtype) * step / decay_steps
        cosine = 0.5 * (1.0 + math_ops.cos(math.pi * fraction))
        decayed = (math_ops.cast(alpha, dtype) + linear) * cosine + math_ops.cast(beta, dtype)
        return math_ops.multiply(lr, decayed, name=scope)


__all__ = ["exponential_decay", "natural_exp_decay", "inverse_time_decay", "polynomial_decay",
           "piecewise_constant", "cosine_decay", "cosine_decay_restarts", "linear_cosine_decay",
           "noisy_linear_cosine_decay"]
