"""``GradientDescentOptimizer``: ``var -= learning_rate * grad``.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([3.0], name="w")
...     step = tf.train.GradientDescentOptimizer(0.5).minimize(tf.reduce_sum(w * w))
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         sess.run(step)
...         print(sess.run(w))
[0.]
"""

from zps.framework.graph import convert_to_tensor
from zps.ops import training_ops
from zps.train.optimizer import Optimizer, cast_to


class GradientDescentOptimizer(Optimizer):
    """Plain gradient descent; sparse gradients update only their rows (TF1's scatter_sub)."""

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._learning_rate_tensor = None

    def _prepare(self):
        lr = self._call_if_callable(self._learning_rate)
        self._learning_rate_tensor = convert_to_tensor(lr, name="learning_rate")

    def _apply_dense(self, grad, var):
        return training_ops.apply_gradient_descent(
            var, cast_to(self._learning_rate_tensor, var), grad,
            use_locking=self._use_locking).op

    def _apply_sparse(self, grad, var):
        return training_ops.sparse_apply_gradient_descent(
            var, cast_to(self._learning_rate_tensor, var), grad.values, grad.indices,
            use_locking=self._use_locking).op


__all__ = ["GradientDescentOptimizer"]
