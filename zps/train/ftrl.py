"""``FtrlOptimizer``: FTRL-Proximal (McMahan et al., "Ad Click Prediction: a View from the
Trenches", 2013), the usual optimizer of large sparse models on parameter servers.

Per coordinate, with ``p = -learning_rate_power`` (0.5 by default)::

    accum_new = accum + g^2
    linear   += g + 2 * l2_shrinkage * var - (accum_new^p - accum^p) / lr * var
    var       = (clip(linear, -l1, l1) - linear) / (accum_new^p / lr + 2 * l2)   # 0 if |linear| <= l1
    accum     = accum_new

Slots: "accum" (starts at ``initial_accumulator_value``) and "linear" (zeros), as TF1's.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0], name="w")
...     opt = tf.train.FtrlOptimizer(0.1)
...     step = opt.minimize(tf.reduce_sum(w * w))
...     print(opt.get_slot(w, "accum").op.name, opt.get_slot(w, "linear").op.name)
w/Ftrl w/Ftrl_1
"""

from zps.framework.graph import convert_to_tensor
from zps.ops import training_ops
from zps.train.optimizer import Optimizer, cast_to


class FtrlOptimizer(Optimizer):
    """FTRL-Proximal with L1, L2 and L2-shrinkage regularization (TF1's ``FtrlOptimizer``)."""

    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="Ftrl", accum_name=None, linear_name=None,
                 l2_shrinkage_regularization_strength=0.0, beta=None):
        for what, value, ok, rule in (
                ("initial_accumulator_value", initial_accumulator_value,
                 initial_accumulator_value >= 0.0, "positive or zero"),
                ("learning_rate_power", learning_rate_power, learning_rate_power <= 0.0,
                 "negative or zero"),
                ("l1_regularization_strength", l1_regularization_strength,
                 l1_regularization_strength >= 0.0, "positive or zero"),
                ("l2_regularization_strength", l2_regularization_strength,
                 l2_regularization_strength >= 0.0, "positive or zero"),
                ("l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength,
                 l2_shrinkage_regularization_strength >= 0.0, "positive or zero")):
            if not ok:
                raise ValueError("%s %f needs to be %s" % (what, value, rule))
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._learning_rate_power = learning_rate_power
        self._initial_accumulator_value = initial_accumulator_value
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength
        self._beta = 0.0 if beta is None else beta
        self._l2_shrinkage = l2_shrinkage_regularization_strength
        self._accum_name = accum_name
        self._linear_name = linear_name
        self._tensors = None

    def _create_slots(self, var_list):
        for v in var_list:
            self._constant_slot(v, self._initial_accumulator_value, "accum",
                                self._accum_name or self._name)
            self._zeros_slot(v, "linear", self._linear_name or self._name)

    def _prepare(self):
        lr = self._call_if_callable(self._learning_rate)
        # TF1: beta (the paper's) adds beta / (2 * lr) to the L2 strength.
        l2 = self._l2 + self._beta / (2.0 * lr) if self._beta else self._l2
        self._tensors = {
            "lr": convert_to_tensor(lr, name="learning_rate"),
            "l1": convert_to_tensor(self._l1, name="l1"),
            "l2": convert_to_tensor(l2, name="l2"),
            "l2_shrinkage": convert_to_tensor(self._l2_shrinkage, name="l2_shrinkage"),
            "lr_power": convert_to_tensor(self._learning_rate_power, name="lr_power")}

    def _args(self, var):
        t = self._tensors
        return dict(lr=cast_to(t["lr"], var), l1=cast_to(t["l1"], var),
                    l2=cast_to(t["l2"], var), lr_power=cast_to(t["lr_power"], var),
                    l2_shrinkage=cast_to(t["l2_shrinkage"], var) if self._l2_shrinkage else None,
                    use_locking=self._use_locking)

    def _apply_dense(self, grad, var):
        return training_ops.apply_ftrl(var, self.get_slot(var, "accum"),
                                       self.get_slot(var, "linear"), grad, **self._args(var)).op

    def _apply_sparse(self, grad, var):
        return training_ops.sparse_apply_ftrl(
            var, self.get_slot(var, "accum"), self.get_slot(var, "linear"), grad.values,
            grad.indices, **self._args(var)).op


__all__ = ["FtrlOptimizer"]
