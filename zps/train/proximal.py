"""``ProximalGradientDescentOptimizer`` and ``ProximalAdagradOptimizer``: FOBOS (Duchi and
Singer, "Efficient Learning using Forward-Backward Splitting", 2009), a gradient step followed by
the proximal step of the L1 and L2 penalties, which sets small weights exactly to zero::

    prox = var - step * g
    var  = sign(prox) * max(|prox| - step * l1, 0) / (1 + step * l2)

``step`` is the learning rate (gradient descent) or ``lr / sqrt(accum)`` after
``accum += g^2`` (Adagrad; slot "accumulator", starting at ``initial_accumulator_value``).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0, 0.5], name="w")
...     opt = tf.train.ProximalGradientDescentOptimizer(0.5, l1_regularization_strength=0.5)
...     step = opt.minimize(tf.reduce_sum(w))
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         sess.run(step)
...         print(sess.run(w))
[0.25 0.  ]
"""

from zps.framework.graph import convert_to_tensor
from zps.ops import training_ops
from zps.train.optimizer import Optimizer, cast_to


class _ProximalOptimizer(Optimizer):
    """The hyperparameters both proximal optimizers share: learning rate, l1, l2."""

    def __init__(self, learning_rate, l1, l2, use_locking, name):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._l1_regularization_strength = l1
        self._l2_regularization_strength = l2
        self._tensors = None

    def _prepare(self):
        self._tensors = [
            convert_to_tensor(self._call_if_callable(self._learning_rate), name="learning_rate"),
            convert_to_tensor(self._l1_regularization_strength, name="l1_regularization_strength"),
            convert_to_tensor(self._l2_regularization_strength, name="l2_regularization_strength")]

    def _hyper(self, var):
        return [cast_to(t, var) for t in self._tensors]


class ProximalGradientDescentOptimizer(_ProximalOptimizer):
    """Gradient descent with L1/L2 regularization applied as a proximal step (FOBOS)."""

    def __init__(self, learning_rate, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, use_locking=False,
                 name="ProximalGradientDescent"):
        super().__init__(learning_rate, l1_regularization_strength, l2_regularization_strength,
                         use_locking, name)

    def _apply_dense(self, grad, var):
        return training_ops.apply_proximal_gradient_descent(
            var, *self._hyper(var), grad, use_locking=self._use_locking).op

    def _apply_sparse(self, grad, var):
        return training_ops.sparse_apply_proximal_gradient_descent(
            var, *self._hyper(var), grad.values, grad.indices, use_locking=self._use_locking).op


class ProximalAdagradOptimizer(_ProximalOptimizer):
    """Adagrad's per-coordinate rates with L1/L2 regularization as a proximal step (FOBOS)."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="ProximalAdagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError("initial_accumulator_value must be positive: %s"
                             % initial_accumulator_value)
        super().__init__(learning_rate, l1_regularization_strength, l2_regularization_strength,
                         use_locking, name)
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, var_list):
        for v in var_list:
            self._constant_slot(v, self._initial_accumulator_value, "accumulator", self._name)

    def _apply_dense(self, grad, var):
        return training_ops.apply_proximal_adagrad(
            var, self.get_slot(var, "accumulator"), *self._hyper(var), grad,
            use_locking=self._use_locking).op

    def _apply_sparse(self, grad, var):
        return training_ops.sparse_apply_proximal_adagrad(
            var, self.get_slot(var, "accumulator"), *self._hyper(var), grad.values, grad.indices,
            use_locking=self._use_locking).op


__all__ = ["ProximalGradientDescentOptimizer", "ProximalAdagradOptimizer"]
