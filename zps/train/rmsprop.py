"""``RMSPropOptimizer`` with TF1's update: epsilon inside the square root, ms starting at one.

``ms = decay * ms + (1 - decay) * g^2``; ``mom = momentum * mom + lr * g / sqrt(ms + epsilon)``;
``var -= mom``. Centered: ``mg = decay * mg + (1 - decay) * g`` and the root is
``sqrt(ms - mg^2 + epsilon)``. Slots: "rms" (ones), "mg" (centered only), "momentum".

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0], name="w")
...     opt = tf.train.RMSPropOptimizer(0.01)
...     step = opt.minimize(tf.reduce_sum(w * w))
...     print(opt.get_slot(w, "rms").op.name, opt.get_slot(w, "momentum").op.name)
w/RMSProp w/RMSProp_1
"""

from zps.framework.graph import convert_to_tensor
from zps.ops import training_ops
from zps.train.optimizer import Optimizer, cast_to


class RMSPropOptimizer(Optimizer):
    """RMSProp (Tieleman & Hinton), optionally centered and with momentum."""

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10, use_locking=False,
                 centered=False, name="RMSProp"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._decay = decay
        self._momentum = momentum
        self._epsilon = epsilon
        self._centered = centered
        self._learning_rate_tensor = self._decay_tensor = None
        self._momentum_tensor = self._epsilon_tensor = None

    def _create_slots(self, var_list):
        for v in var_list:
            self._constant_slot(v, 1, "rms", self._name, init_name="ones")
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self):
        self._learning_rate_tensor = convert_to_tensor(
            self._call_if_callable(self._learning_rate), name="learning_rate")
        self._decay_tensor = convert_to_tensor(self._call_if_callable(self._decay), name="decay")
        self._momentum_tensor = convert_to_tensor(self._call_if_callable(self._momentum),
                                                  name="momentum")
        self._epsilon_tensor = convert_to_tensor(self._call_if_callable(self._epsilon),
                                                 name="epsilon")

    def _slots_and_hyper(self, var):
        slots = [self.get_slot(var, "rms"), self.get_slot(var, "momentum")]
        if self._centered:
            slots.insert(0, self.get_slot(var, "mg"))
        hyper = [cast_to(t, var) for t in (self._learning_rate_tensor, self._decay_tensor,
                                           self._momentum_tensor, self._epsilon_tensor)]
        return slots + hyper

    def _apply_dense(self, grad, var):
        apply = (training_ops.apply_centered_rms_prop if self._centered
                 else training_ops.apply_rms_prop)
        return apply(var, *self._slots_and_hyper(var), grad, use_locking=self._use_locking).op

    def _apply_sparse(self, grad, var):
        apply = (training_ops.sparse_apply_centered_rms_prop if self._centered
                 else training_ops.sparse_apply_rms_prop)
        return apply(var, *self._slots_and_hyper(var), grad.values, grad.indices,
                     use_locking=self._use_locking).op


__all__ = ["RMSPropOptimizer"]
