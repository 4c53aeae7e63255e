"""``AdagradOptimizer``: ``accum += grad^2; var -= lr * grad / sqrt(accum)``.

The slot "accumulator" starts at ``initial_accumulator_value``.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0], name="w")
...     opt = tf.train.AdagradOptimizer(0.1)
...     step = opt.minimize(tf.reduce_sum(w * w))
...     print(opt.get_slot(w, "accumulator").op.name)
w/Adagrad
"""

from zps.framework.graph import convert_to_tensor
from zps.ops import training_ops
from zps.train.optimizer import Optimizer, cast_to


class AdagradOptimizer(Optimizer):
    """Adagrad: per-coordinate learning rates from the sum of squared gradients."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError("initial_accumulator_value must be positive: %s"
                             % initial_accumulator_value)
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value
        self._learning_rate_tensor = None

    def _create_slots(self, var_list):
        for v in var_list:
            self._constant_slot(v, self._initial_accumulator_value, "accumulator", self._name)

    def _prepare(self):
        self._learning_rate_tensor = convert_to_tensor(
            self._call_if_callable(self._learning_rate), name="learning_rate")

    def _apply_dense(self, grad, var):
        return training_ops.apply_adagrad(
            var, self.get_slot(var, "accumulator"), cast_to(self._learning_rate_tensor, var), grad,
            use_locking=self._use_locking).op

    def _apply_sparse(self, grad, var):
        return training_ops.sparse_apply_adagrad(
            var, self.get_slot(var, "accumulator"), cast_to(self._learning_rate_tensor, var),
            grad.values, grad.indices, use_locking=self._use_locking).op


__all__ = ["AdagradOptimizer"]
