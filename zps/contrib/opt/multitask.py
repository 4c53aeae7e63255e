"""``MultitaskOptimizerWrapper``: all-zero gradients leave an optimizer's state alone (TF1's).

With a multitask loss, a task masked out of a batch gives its variables an all-zero gradient,
which would still move a stateful optimizer (decay Adam's moments, push momentum on). The
wrapper makes each variable's update a ``tf.cond`` that skips it when the gradient is all
zeros; everything else is the wrapped optimizer's. ``clip_gradients_by_global_norm`` is
``tf.clip_by_global_norm`` with the all-zero gradients left out of the norm.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0], name="w")
...     opt = tf.contrib.opt.MultitaskOptimizerWrapper(tf.train.MomentumOptimizer(0.1, 0.9))
...     step = opt.apply_gradients([(tf.constant([0.0]), w)])
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         sess.run(step)
...         print(sess.run(w), sess.run(opt.get_slot(w, "momentum")))
[1.] [0.]
"""

import types

from zps.framework.graph import IndexedSlices
from zps.ops import array_ops, clip_ops, control_flow_ops, math_ops
from zps.train.optimizer import Optimizer


def _is_all_zeros(grad):
    values = grad.values if isinstance(grad, IndexedSlices) else grad
    return math_ops.equal(math_ops.count_nonzero(values), 0)


def _get_wrapper(fn, opt):
    def wrapper(self, grad, *args, **kwargs):
        return control_flow_ops.cond(_is_all_zeros(grad), control_flow_ops.no_op,
                                     lambda: fn(grad, *args, **kwargs))
    return types.MethodType(wrapper, opt)


class MultitaskOptimizerWrapper:
    """Wraps the optimizer ``opt`` (in place) so that all-zero gradients update nothing."""

    def __init__(self, opt):
        if not isinstance(opt, Optimizer):
            raise TypeError("Supplied optimizer must be an instance of tf.train.Optimizer")
        self._opt = opt
        for name in ("_apply_dense", "_resource_apply_dense", "_apply_sparse",
                     "_resource_apply_sparse"):
            setattr(self._opt, name, _get_wrapper(getattr(self._opt, name), self._opt))

    def __getattr__(self, name):
        return getattr(self._opt, name)


def clip_gradients_by_global_norm(gradients_variables, clip_norm=20.):
    """Clip the gradients of ``(gradient, variable)`` pairs by their global norm, all-zero
    gradients left out of the norm; returns ``(pairs, global_norm)``."""
    gradients, variables = zip(*gradients_variables)

    def _replace_nonexisting_grad(grad):
        if grad is None:
            return grad
        values = grad.values if isinstance(grad, IndexedSlices) else grad
        return control_flow_ops.cond(_is_all_zeros(values),
                                     lambda: array_ops.zeros([], dtype=values.dtype),
                                     lambda: values)

    fixed_global_norm = clip_ops.global_norm([_replace_nonexisting_grad(g) for g in gradients])
    gradients, _ = clip_ops.clip_by_global_norm(gradients, clip_norm, use_norm=fixed_global_norm)
    return list(zip(gradients, variables)), fixed_global_norm


__all__ = ["MultitaskOptimizerWrapper", "clip_gradients_by_global_norm"]
