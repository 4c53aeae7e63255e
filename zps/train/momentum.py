"""``MomentumOptimizer``: ``accum = momentum * accum + grad; var -= lr * accum``.

With ``use_nesterov=True``: ``var -= lr * (grad + momentum * accum)``. The slot is "momentum".

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0], name="w")
...     opt = tf.train.MomentumOptimizer(0.1, momentum=0.9)
...     step = opt.minimize(tf.reduce_sum(w * w))
...     print(opt.get_slot(w, "momentum").op.name)
w/Momentum
"""

from zps.framework.graph import convert_to_tensor
from zps.ops import training_ops
from zps.train.optimizer import Optimizer, cast_to


class MomentumOptimizer(Optimizer):
    """Gradient descent with momentum (optionally Nesterov's)."""

    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov
        self._learning_rate_tensor = None
        self._momentum_tensor = None

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self):
        self._learning_rate_tensor = convert_to_tensor(
            self._call_if_callable(self._learning_rate), name="learning_rate")
        self._momentum_tensor = convert_to_tensor(self._call_if_callable(self._momentum),
                                                  name="momentum")

    def _apply_dense(self, grad, var):
        return training_ops.apply_momentum(
            var, self.get_slot(var, "momentum"), cast_to(self._learning_rate_tensor, var), grad,
            cast_to(self._momentum_tensor, var), use_locking=self._use_locking,
            use_nesterov=self._use_nesterov).op

    def _apply_sparse(self, grad, var):
        return training_ops.sparse_apply_momentum(
            var, self.get_slot(var, "momentum"), cast_to(self._learning_rate_tensor, var),
            grad.values, grad.indices, cast_to(self._momentum_tensor, var),
            use_locking=self._use_locking, use_nesterov=self._use_nesterov).op


__all__ = ["MomentumOptimizer"]
