"""``RegAdagradOptimizer``: Adagrad whose updates can leave the accumulator alone (TF1's).

Inside ``with opt.avoid_updating_slots():`` the updates that ``minimize``/``apply_gradients``
build use the accumulator without adding ``g^2`` to it, so that e.g. a regularization loss
does not decay the learning rate of the main loss:

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0], name="w")
...     opt = tf.contrib.opt.RegAdagradOptimizer(0.1, initial_accumulator_value=1.0)
...     with opt.avoid_updating_slots():
...         step = opt.minimize(tf.reduce_sum(3.0 * w))
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         sess.run(step)
...         print(sess.run([w, opt.get_slot(w, "accumulator")]))
[array([0.7], dtype=float32), array([1.], dtype=float32)]
"""

import contextlib

from zps.ops import training_ops
from zps.train.adagrad import AdagradOptimizer
from zps.train.optimizer import cast_to


class RegAdagradOptimizer(AdagradOptimizer):
    """Adagrad with ``avoid_updating_slots()``: updates that keep the accumulator as it is."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="RegAdagrad"):
        super().__init__(learning_rate, initial_accumulator_value=initial_accumulator_value,
                         use_locking=use_locking, name=name)
        self._should_update_slots = True

    @contextlib.contextmanager
    def avoid_updating_slots(self):
        """Updates built inside this context do not add to the accumulator."""
        old = self._should_update_slots
        self._should_update_slots = False
        try:
            yield
        finally:
            self._should_update_slots = old

    def _apply_dense(self, grad, var):
        return training_ops.apply_adagrad(
            var, self.get_slot(var, "accumulator"), cast_to(self._learning_rate_tensor, var), grad,
            use_locking=self._use_locking, update_slots=self._should_update_slots).op

    def _apply_sparse(self, grad, var):
        return training_ops.sparse_apply_adagrad(
            var, self.get_slot(var, "accumulator"), cast_to(self._learning_rate_tensor, var),
            grad.values, grad.indices, use_locking=self._use_locking,
            update_slots=self._should_update_slots).op


__all__ = ["RegAdagradOptimizer"]
