"""``LARSOptimizer``: layer-wise adaptive rate scaling (You, Gitman & Ginsburg 2017), TF1's.

Momentum whose learning rate, per variable, is scaled by the trust ratio
``eeta * |w| / (|g| + weight_decay * |w| + epsilon)`` (1 where ``|w|`` or ``|g|`` is 0; norms are
L2 over the whole variable). Variables whose name contains a string of ``skip_list`` keep the
plain rate, and so do sparse gradients (TF1: momentum's sparse update). The slot is "momentum".

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([3.0, 4.0], name="w")
...     opt = tf.contrib.opt.LARSOptimizer(1.0, momentum=0.0, weight_decay=0.0, eeta=0.1)
...     step = opt.minimize(tf.reduce_sum(w))   # |w| = 5, |g| = sqrt(2)
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         sess.run(step)
...         print(sess.run(w).round(4))
[2.6464 3.6464]
"""

from zps.ops import array_ops, linalg_ops, math_ops, training_ops
from zps.train.momentum import MomentumOptimizer


class LARSOptimizer(MomentumOptimizer):
    """Momentum with a per-variable trust ratio scaling the learning rate (dense gradients;
    sparse ones take ``MomentumOptimizer``'s update)."""

    def __init__(self, learning_rate, momentum=0.9, weight_decay=0.0001, eeta=0.001,
                 epsilon=0.0, name="LARSOptimizer", skip_list=None, use_nesterov=False):
        if momentum < 0.0:
            raise ValueError("momentum should be positive: %s" % momentum)
        if weight_decay < 0.0:
            raise ValueError("weight_decay should be positive: %s" % weight_decay)
        super().__init__(learning_rate, momentum, use_locking=False, name=name,
                         use_nesterov=use_nesterov)
        self._weight_decay = weight_decay
        self._eeta = eeta
        self._epsilon = epsilon
        self._skip_list = skip_list

    def compute_lr(self, grad, var):
        """The learning rate of ``var``'s dense update: the base rate times the trust ratio."""
        scaled_lr = self._learning_rate
        if self._skip_list is None or not any(v in var.name for v in self._skip_list):
            w_norm = linalg_ops.norm(var, ord=2)
            g_norm = linalg_ops.norm(grad, ord=2)
            trust_ratio = array_ops.where(
                math_ops.greater(w_norm, 0),
                array_ops.where(math_ops.greater(g_norm, 0),
                                (self._eeta * w_norm
                                 / (g_norm + self._weight_decay * w_norm + self._epsilon)),
                                1.0),
                1.0)
            scaled_lr = self._learning_rate * trust_ratio
        return scaled_lr

    def _apply_dense(self, grad, var):
        return training_ops.apply_momentum(
            var, self.get_slot(var, "momentum"), self.compute_lr(grad, var), grad,
            self._momentum, use_locking=False, use_nesterov=self._use_nesterov).op


__all__ = ["LARSOptimizer"]
