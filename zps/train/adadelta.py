"""``AdadeltaOptimizer`` (Zeiler, "ADADELTA: An Adaptive Learning Rate Method", 2012)::

    accum        = rho * accum + (1 - rho) * g^2
    update       = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * g
    var         -= lr * update
    accum_update = rho * accum_update + (1 - rho) * update^2

Slots "accum" and "accum_update" (zeros), as TF1's.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0], name="w")
...     opt = tf.train.AdadeltaOptimizer(1.0)
...     step = opt.minimize(tf.reduce_sum(w * w))
...     print(opt.get_slot(w, "accum").op.name, opt.get_slot(w, "accum_update").op.name)
w/Adadelta w/Adadelta_1
"""

from zps.framework.graph import convert_to_tensor
from zps.ops import training_ops
from zps.train.optimizer import Optimizer, cast_to


class AdadeltaOptimizer(Optimizer):
    """Adadelta: step sizes from running averages of squared gradients and squared updates."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-8, use_locking=False,
                 name="Adadelta"):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._rho = rho
        self._epsilon = epsilon
        self._tensors = None

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name)

    def _prepare(self):
        self._tensors = [convert_to_tensor(self._call_if_callable(value), name=name)
                         for value, name in ((self._lr, "lr"), (self._rho, "rho"),
                                             (self._epsilon, "epsilon"))]

    def _args(self, var):
        return [self.get_slot(var, "accum"), self.get_slot(var, "accum_update")] + \
            [cast_to(t, var) for t in self._tensors]

    def _apply_dense(self, grad, var):
        return training_ops.apply_adadelta(var, *self._args(var), grad,
                                           use_locking=self._use_locking).op

    def _apply_sparse(self, grad, var):
        return training_ops.sparse_apply_adadelta(var, *self._args(var), grad.values,
                                                  grad.indices, use_locking=self._use_locking).op


__all__ = ["AdadeltaOptimizer"]
