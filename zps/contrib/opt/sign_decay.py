"""TF1's sign decay functions for ``AddSignOptimizer`` and ``PowerSignOptimizer`` (Bello et al.,
ICML 2017): each ``get_*_decay_fn(decay_steps, ...)`` returns ``fn(global_step)``, a float32
scalar that anneals the ``sign(g) * sign(m)`` term from 1 towards 0.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     fn = tf.contrib.opt.get_linear_decay_fn(10)
...     with tf.Session() as sess:
...         print(sess.run(fn(tf.constant(4))))
0.6
"""

import math

from zps.framework.graph import convert_to_tensor
from zps.ops import array_ops, math_ops


def _check_step(global_step, what):
    if global_step is None:
        raise ValueError("global_step is required for %s." % what)


def get_linear_decay_fn(decay_steps):
    """``fn(global_step) = max(0, (decay_steps - global_step) / decay_steps)``."""
    def linear_decay_fn(global_step):
        _check_step(global_step, "linear_decay")
        global_step = math_ops.minimum(global_step, decay_steps)
        remaining_steps = math_ops.to_int32(decay_steps) - math_ops.to_int32(global_step)
        decayed = math_ops.to_float(remaining_steps) / math_ops.to_float(decay_steps)
        return math_ops.maximum(0.0, decayed)
    return linear_decay_fn


def get_cosine_decay_fn(decay_steps, num_periods=0.5, zero_after=None):
    """``fn(global_step) = 0.5 * (1 + cos(2 pi num_periods min(global_step, decay_steps) /
    decay_steps))``, 0 once that fraction reaches ``2 * zero_after`` (if given)."""
    def cosine_decay_fn(global_step):
        _check_step(global_step, "cosine_decay")
        global_step = math_ops.minimum(global_step, decay_steps)
        completed_fraction = math_ops.to_float(global_step) / math_ops.to_float(decay_steps)
        fraction = 2.0 * num_periods * completed_fraction
        decayed = 0.5 * (1.0 + math_ops.cos(convert_to_tensor(math.pi) * fraction))
        if zero_after is not None:
            decayed = array_ops.where(math_ops.greater_equal(fraction, 2 * zero_after), 0.0,
                                      decayed)
        return decayed
    return cosine_decay_fn


def get_restart_decay_fn(decay_steps, num_periods=1, zero_after=None):
    """``fn(global_step) = 0.5 * (1 + cos(pi * (num_periods * step % decay_steps) /
    decay_steps))`` (SGDR's warm restarts, simplified), 0 once ``num_periods * step /
    decay_steps`` reaches ``zero_after`` (if given)."""
    def restart_decay_fn(global_step):
        _check_step(global_step, "cosine_decay")   # sic: TF1's message
        global_step = math_ops.minimum(global_step, decay_steps)
        num = math_ops.mod(num_periods * math_ops.to_float(global_step), decay_steps)
        fraction = num / math_ops.to_float(decay_steps)
        decayed = 0.5 * (1.0 + math_ops.cos(convert_to_tensor(math.pi) * fraction))
        if zero_after is not None:
            tmp = math_ops.to_float(num_periods * global_step) / math_ops.to_float(decay_steps)
            decayed = array_ops.where(math_ops.greater_equal(tmp, zero_after), 0.0, decayed)
        return decayed
    return restart_decay_fn


__all__ = ["get_cosine_decay_fn", "get_linear_decay_fn", "get_restart_decay_fn"]
